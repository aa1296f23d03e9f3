"""The core reading a file's first chunks while ``vthread scan --jobs N`` imports the scan.

A scan's process spends its first few tenths of a second importing NumPy and the modules that
judge the threads, on one core, before the scan reads a byte; the core's reading of JSONL
lines (the most of a scan's work) needs neither and releases the GIL. So, with more than one
job, the command's front starts one thread that cuts the file into chunks as the scan will
(:func:`vthread._cli_lines.chunked_lines`) and has the core read them, while the main thread
imports. The scan then takes each reading for its chunk instead of reading the chunk again.

A reading is handed over only for a chunk with the same first line, the same lines (compared
byte for byte) and the same core arguments (:func:`vthread._core_call.core_call`, made the
same way by both). What the head start guesses (that the file is JSONL, its format native
unless ``--format`` names one the core reads) can therefore only cost the second core some
time, never change a record: a chunk whose lines or arguments differ is read by the scan as
if there were no head start, and so is every chunk after the first the head start had not
begun when the scan took its first reading (it stops there: the scan's own workers have the
cores from then on).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Final, cast

from vthread import _core
from vthread._cli_lines import (
    CHUNK_BYTES,
    CHUNK_LINES,
    READ_BYTES,
    chunked_lines,
    worker_count,
)
from vthread._core_call import CORE_FORMATS, CoreCall, CoreFormat, core_call

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["HeadStart", "counts_tokens", "cycle_of", "guessed_call", "head_start_for"]

MOST_BYTES_AHEAD: Final = 8 * CHUNK_BYTES
"""The most bytes of lines the head start reads before the scan takes over: a bound on the
memory it holds (the chunks' lines and columns) whatever the file, and more than the imports
leave it time to read (about 8 chunks of 4 MiB in 0.2 s on the benchmark machine)."""
_NOT_LINES: Final = (b"\x1f\x8b", b"PAR1")  # a gzip stream, a Parquet file: no JSONL to cut


def cycle_of(options: argparse.Namespace) -> dict[str, float | None]:
    """The cycle options of ``vthread scan``'s parsed arguments."""
    return {
        "min_repetitions": options.min_repetitions,
        "min_pattern_length": options.min_pattern_length,
        "max_pattern_length": options.max_pattern_length,
        "min_result_repetitions": options.min_result_repetitions,
    }


def counts_tokens(options: argparse.Namespace) -> bool:
    """Whether the scan totals every message's tokens: only for the summary (on stderr, or
    ``--summary``), which ``--quiet`` without ``--summary`` drops."""
    return not options.quiet or bool(options.summary_file)


class _Reading:
    """One chunk the head start cut: its lines, and the core's reading once ``done``."""

    __slots__ = ("done", "lines", "raw")

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.raw: dict[str, Any] | None = None  # None: the core raised (the scan reads it)
        self.done = threading.Event()


class HeadStart:
    """The core's readings of the first chunks of the file at ``path``, made on a thread of
    their own with ``call`` (the core's arguments), until :meth:`take` or :meth:`close`."""

    def __init__(self, path: str, call: CoreCall, most_bytes: int = MOST_BYTES_AHEAD) -> None:
        self.path = path
        self.call = call
        self.most_bytes = most_bytes
        self.taken = 0  # readings handed over (for tests and benchmarks)
        self._readings: dict[int, _Reading] = {}  # by the line number of each one's first
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # Not a daemon: a daemon thread still in the core when the interpreter exits would
        # be ended inside Rust code. It stops between chunks once told to.
        self._thread = threading.Thread(target=self._read, name="vthread-head-start")
        self._thread.start()

    def _read(self) -> None:
        # The scan opens and reads the file itself and says what is wrong with it: a head
        # start that fails, or stops where it may hold no more (_FarEnoughError), only saves
        # less time.
        with contextlib.suppress(Exception), open(self.path, "rb") as file:
            read = _at_most(partial(file.read, READ_BYTES), self.most_bytes)
            self._read_chunks(chunked_lines(read, CHUNK_LINES, CHUNK_BYTES))

    def _read_chunks(self, chunks: Iterator[list[bytes]]) -> None:
        line = 1
        for lines in chunks:
            with self._lock:
                if self._stop.is_set():
                    return
                reading = self._readings[line] = _Reading(lines)
            try:
                reading.raw = _core.scan_lines(lines, *self.call)
            finally:
                reading.done.set()
            line += len(lines)

    def take(self, first_line: int, lines: list[bytes], call: CoreCall
             ) -> dict[str, Any] | None:
        """The core's reading of the chunk of ``lines`` beginning at ``first_line``, when
        the head start made it with ``call`` (waiting for it if it is being made); else
        None. The head start reads nothing more once the scan takes a chunk."""
        self._stop.set()
        with self._lock:
            reading = self._readings.pop(first_line, None)
        if reading is None or call != self.call or reading.lines != lines:
            return None
        reading.done.wait()
        if reading.raw is not None:
            with self._lock:
                self.taken += 1
        return reading.raw

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the head start has stopped reading (the file read to its end, as far
        as it may hold, or told to stop); whether it has within ``timeout`` seconds."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        """Stop reading ahead, wait for the chunk being read, and drop what was not taken."""
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._readings.clear()


class _FarEnoughError(Exception):
    """The head start has read as many bytes as it may hold."""


def _at_most(read: Callable[[], bytes], most_bytes: int) -> Callable[[], bytes]:
    """``read``, raising :class:`_FarEnoughError` once ``most_bytes`` have been read: the
    chunk being cut then (a line longer than the whole allowance among them) is never
    yielded, so the head start's memory stays bounded whatever the file's lines."""
    total = 0

    def read_block() -> bytes:
        nonlocal total
        if total >= most_bytes:
            raise _FarEnoughError
        block = read()
        total += len(block)
        return block

    return read_block


def head_start_for(options: argparse.Namespace) -> HeadStart | None:
    """A head start for ``vthread scan`` with parsed ``options``, or None where it cannot
    save time: one job (or one usable CPU), the scan's modules already imported (a caller's
    process, where the scan starts at once), an input that is not one regular file of lines
    (standard input, several files, a directory, gzip, Parquet, a JSON document by name),
    ``--anywhere``, a format or option only Python reads."""
    if "numpy" in sys.modules or worker_count(options.jobs) < 2:
        return None
    call = guessed_call(options)
    if call is None:
        return None
    path = cast(str, options.files[0])
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as file:
            if file.read(4).startswith(_NOT_LINES):
                return None
    except (OSError, ValueError):
        return None  # the scan says what is wrong with it
    return HeadStart(path, call)


def guessed_call(options: argparse.Namespace) -> CoreCall | None:
    """The core's arguments for the chunks of the one JSONL file ``vthread scan`` is given in
    ``options``, guessing a file whose format is to be detected native; None where no
    guess is made."""
    if len(options.files) != 1 or options.anywhere or options.sample:
        return None
    path = cast(str, options.files[0])
    if path == "-" or path.lower().endswith((".json", ".traj", ".eval", ".gz", ".parquet",
                                             ".pq")):
        return None
    fmt = options.format if options.format not in (None, "auto") else "native"
    if fmt not in CORE_FORMATS:
        return None
    try:
        return core_call(cycle_of(options), counts_tokens(options), 1, cast(CoreFormat, fmt),
                         options.messages_key, options.id_key, options.mask_volatile, None)
    except (TypeError, ValueError):
        return None  # an option the scan refuses, saying why
