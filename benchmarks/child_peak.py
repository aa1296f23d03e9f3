"""Run a command in a child process and read that child's own peak memory and CPU time.

``os.wait4``'s ``ru_maxrss`` of a child that this process forks is not the child's own
figure: the forked copy shares this process's pages until it executes, and Linux carries
that high-water mark across the ``exec``, so a command smaller than the benchmark script
that starts it reads as the script's size (``cli_memory`` once reported 81.2 MB for both of
its runs, the script's own peak). ``/usr/bin/time`` forks from a process of a few MB, so its
``%M`` is the command's.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

TIME_PROGRAM: Final = "/usr/bin/time"


@dataclass(frozen=True)
class ChildRun:
    """What one child process did: its exit status (128 + the signal when one ended it),
    peak resident set in KiB, CPU seconds (user + system, with its threads), wall seconds,
    and what it wrote to stderr when asked to keep it."""

    exit_status: int
    peak_kib: int
    cpu_s: float
    wall_s: float
    stderr: str


def run_child(command: list[str], *, env: Mapping[str, str] | None = None,
              preexec_fn: Callable[[], None] | None = None,
              keep_stderr: bool = False) -> ChildRun:
    """Run ``command`` under ``/usr/bin/time`` and return its :class:`ChildRun`.
    ``preexec_fn`` runs in the child before ``/usr/bin/time`` starts, so a resource limit it
    sets applies to the command too (limits are inherited)."""
    if not Path(TIME_PROGRAM).exists():
        raise SystemExit(f"{TIME_PROGRAM} is needed to measure a child's own peak memory "
                         "(Debian: apt-get install time)")
    with tempfile.NamedTemporaryFile("r", suffix=".time") as figures:
        started = time.perf_counter()
        done = subprocess.run([TIME_PROGRAM, "-f", "%M %U %S", "-o", figures.name, *command],
                              env=None if env is None else dict(env), preexec_fn=preexec_fn,
                              stderr=subprocess.PIPE if keep_stderr else None, check=False)
        wall = time.perf_counter() - started
        # The last line holds the figures; a line before it may say how the command ended.
        peak_kib, user, system = Path(figures.name).read_text().split()[-3:]
    return ChildRun(exit_status=done.returncode, peak_kib=int(peak_kib),
                    cpu_s=float(user) + float(system), wall_s=wall,
                    stderr=done.stderr.decode(errors="replace") if keep_stderr else "")

