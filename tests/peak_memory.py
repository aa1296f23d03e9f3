"""The peak memory of a test's own child process, for tests that bound what a call costs."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

#: Python source for the process's peak RSS in KiB: the high-water mark of its own memory
#: (``VmHWM``). Not ``getrusage``'s ``ru_maxrss``: a child started by ``fork`` and ``exec``
#: inherits its parent's, so growth below the size of the test process (hundreds of MB
#: under pytest) went unseen.
PEAK_KIB: Final = ("int(next(line.split()[1] for line in open('/proc/self/status') "
                   "if line.startswith('VmHWM:')))")

needs_proc: Final = pytest.mark.skipif(not Path("/proc/self/status").exists(),
                                       reason="reads a process's peak memory in /proc")
