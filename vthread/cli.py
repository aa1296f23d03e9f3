"""The ``vthread`` command: ``vthread scan`` for trajectory files, ``vthread guard`` for streams.

``vthread scan [FILE ...]`` reads JSONL, one thread per line — a JSON array of messages, or a
run object with its messages under ``messages``, ``traj`` or ``history`` and its id under
``id``, ``instance_id`` or ``task_id``/``trial`` (:mod:`vthread.documents`; other keys are
ignored) — and writes one JSON line per input line, in input order::

    {"id": "t42", "file": "runs.jsonl", "line": 1, "verdict": "repeated_suffix",
     "loop_start": 12, "period": 2, "repetitions": 5, "loop_messages": 10,
     "loop_tokens": 1234.0, "signature": "5ce85b8097e11323",
     "excerpt": "bot: Let me look. | read_file({\"path\":\"a.py\"}) -> ...", "messages": 22}

(:meth:`vthread.ScanResult.record` has the same fields but ``file`` and ``line``).

A line that is not a thread becomes ``{"id", "file", "line", "error": <reason>}`` (``id`` the
run's when the line is a run object naming one, else null): not valid JSON (with the parser's
message), not an array or an object with ``messages``, a message that is not an object (with
its index), or what the ``--format`` adapter rejected. A blank line is an error record too
(``"blank line"``), so records out = lines in, always; ``--strict`` makes the first bad line
fatal instead. A ``.json`` or ``.traj`` file (optionally ``.gz``) is one JSON document
instead, a list of runs or one run; each run is then a "line" (``line`` is its position). An
array of runs is split into its runs' bytes by the core as its blocks are read (the document
is never held whole, nor made into Python objects; a run only Python's ``json`` reads is
read by Python); one that breaks (cut short, not valid JSON from some run on) gives a record
for each whole run before the break, then one error record saying at which line and column
it breaks. Any other document is parsed whole (a pretty-printed one that does not parse is
one error record). A directory FILE
stands for the trajectory files under it, at any depth, in sorted path order: those ending
``.jsonl``, ``.ndjson``, ``.json``, ``.traj``, ``.eval``, ``.parquet`` or ``.pq`` (the text
ones optionally ``.gz``), hidden ones, dangling links, FIFOs and the files the run writes
aside (the links and FIFOs said on stderr); one of them that cannot be read, or whose
format cannot be told, gets one error record and the others are still read. Each file's
message format is detected from its first threads with messages (up to
``DETECT_THREADS``; :func:`vthread.adapters.common_format`); threads in
different formats, or none in a known one, are a fatal error naming their lines. When they
are all plain chats (which fit every chat format), the first thread further on, in that
chunk or a later one, to show a chat format settles it from its chunk on (:func:`_settled`;
a later thread in another format is warned of, not fatal). ``--format``
overrides (with a warning on stderr when the first threads are plainly in another format).
Messages in another format than native are first translated by :mod:`vthread.adapters`; the
record still counts the file's own messages: ``messages`` is the run's message count,
``loop_start`` the file's message holding the loop's first translated message,
``loop_messages`` and a repeated block's ``period`` count the file's messages (see
:func:`vthread.documents.in_source_messages`). An Inspect AI log (``.eval``, or a ``.json``
document with Inspect's header) is read by :mod:`vthread.inspect_log`, each sample a run of
native messages; a sample it cannot read, or one missing from a finished evaluation's
``.eval`` log, is an error record in its place. A Parquet file (``.parquet``) holds a run a row
(:mod:`vthread._cli_parquet`); ``-o X.parquet`` writes the records as Parquet. A summary table
goes to stderr at the end (``--quiet`` drops it), and a progress bar (tqdm) while running,
only when stderr is a terminal and the records go to a file or a pipe, never to that terminal.
With no FILE, standard input is read when it is a pipe or a file (as JSONL, or as a JSON
document when its first line is only ``[`` or ``{``, as a pretty-printed one's is, or opens an
array whose first element is a run); ``--sample`` (or a
bare ``vthread scan`` at a terminal, which says so) scans the bundled sample. An ``--output``
that is one of the inputs is refused before anything is opened for writing. A ``.gz`` that
breaks off gives every line that decompressed its record, then one error record saying where
and why (see :class:`GzipStream`).

How it stays fast and bounded. Files are read in binary blocks and cut into lines at
``\\n``; complete lines are gathered into chunks of at most ``CHUNK_LINES`` lines or about
``CHUNK_BYTES`` bytes, and each chunk is parsed, judged and written before the next is read,
so memory depends on the chunk size, not the input size. Past a file's first chunk, a chunk
is the lines of one read, left where they lie: the core finds them and reads them in place
(:class:`_LineBlock`), with no ``bytes`` object per line.

A chunk of native-format lines goes to the compiled core whole: each line is parsed into a
tape (no Python object per message) and read into the heuristics' columns with the GIL
released; with ``--jobs N`` (N > 1) N threads each take whole chunks, the core's part of
each with the GIL released. A chunk of OpenAI chat, Anthropic messages or OpenAI Responses
runs goes the same way, each line translated by the core into the native line
:mod:`vthread.adapters` would make of it, with the source message of each native message. A
looping line's record (its span as a person counts it, signature, excerpt and tokens) is
read by the core from the line's bytes too (a translated one from its native line). The tape
takes only plain JSON it reads exactly as ``json.loads(line_bytes)`` does; a line it
declines (invalid UTF-8, a byte-order mark, ``NaN``/``Infinity``, a lone surrogate, a
repeated or escaped key, an integer with 19 digits in a row, an id Python writes
differently, a line that is no thread) or that the translation declines (a run the adapter
refuses, a numeric call id, a tool result only ``json.loads`` reads) is read by Python
instead, alone (a chunk the core mostly declines, whole), the records byte for byte the same
either way; ``--messages-key`` and ``--id-key`` are followed by the core too, and so are
mini-swe-agent and SWE-agent runs (their text actions read as :mod:`vthread.adapters` reads
them) and ``--mask-volatile`` (each thread's masked copy written as a native line,
:mod:`vthread.volatile`'s rules in ``src/masking.rs``). With ``--anywhere`` the core makes
each message's screens from the line's bytes and Python parses only the lines whose screens
repeat, to confirm their loops and write their records; output is in input order always.

Python's reading uses ``orjson`` when it is installed (``pip install vthread[fast]``) and the
standard ``json`` module otherwise, and the answer is the standard module's either way: each
line means what ``json.loads(line_bytes)`` makes of it. orjson rejects some lines the standard
module accepts (lone surrogate escapes, ``NaN``/``Infinity``, out-of-range floats, a byte-order
mark, surrogates encoded in UTF-8) and those are re-parsed with ``json``; it silently turns
integers beyond 64 bits into floats, so a line holding a run of 19 or more digits anywhere is
parsed with ``json`` directly. One known difference remains: a line nested 1,000 to 1,024 levels
deep parses with orjson but exhausts the standard module's recursion limit.

Every record, and the ``--summary`` file, is strict JSON: an id that is not a string, a finite
number, a boolean or null (an array, an object, ``NaN``, an infinity) is written as a string
holding its compact JSON text, cut at 256 characters (:mod:`vthread._records`), and a token
total past the largest double is null. The ``--summary`` file is written however the scan
ends: one cut short (a fatal error, ``--strict``'s first bad line, Ctrl-C, a failed write)
says ``"completed": false`` and why (``"failure"``), its figures those of what was read, so a
dashboard never reads a stale summary; ``"unit"`` says what ``"lines"`` counts (``line``,
``run``, ``row``, or ``record`` for inputs of more than one kind). ``--jobs`` is capped at
the CPUs this process may use and at the chunks there are (:func:`_worker_count`).

Exit status: the table ``vthread scan --help`` prints
(:data:`vthread._cli_main.EXIT_STATUS_HELP`): 0 when the run completed (bad lines included),
1 with ``--fail-on-loop`` when a thread loops and for nothing else, and the ``sysexits.h``
statuses for the rest. A closed or failing standard error loses the messages, not the run.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import contextvars
import io
import json
import math
import os
import re
import stat
import sys
import time
import zlib
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from functools import partial
from itertools import accumulate, chain, repeat
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    BinaryIO,
    Final,
    Literal,
    NamedTuple,
    TextIO,
    TypeVar,
    cast,
    overload,
)

import numpy as np
import numpy.typing as npt

from vthread import _core
from vthread._cli_main import (
    BROKEN_PIPE_EXIT,
    DATA_EXIT,
    GZIP_MAGIC,
    INTERNAL_EXIT,
    INTERRUPTED_EXIT,
    IO_EXIT,
    LOOP_EXIT,
    MEMORY_EXIT,
    TERMINATED_EXIT,
    USAGE_EXIT,
    blocking_stdin,
    input_label,
    input_written_over,
    is_fifo,
    is_utf8,
    main,
    memory_limit,
    named_again,
    open_fifo,
    opened_regular,
    own_stream,
    require_regular,
    say,
    shown,
    silence_stdout,
    unwritable,
    write_all,
    write_replacing,
)
from vthread._cli_parquet import NEEDS_PYARROW, is_parquet, parquet_available
from vthread._cli_signals import (
    STOP_SIGNALS,
    StopSignals,
    TerminatedError,
    signals_held,
)
from vthread._exact_json import (
    ASKED_FROM,
    loads_exactly,
    loads_without_digit_limit,
    suspect_lines,
)
from vthread._heuristics import core_options, written_lines
from vthread._messages import (
    NO_PRICED_LOOP,
    counted_figure,
    figure_text,
    loops_priced,
    token_total,
    unpriced_loops,
)
from vthread._options import CycleOptions, cycle_options, set_with_anywhere
from vthread._options import usable_cpus as _usable_cpus
from vthread._records import json_text, record_id, strict_dumps
from vthread.documents import (
    BLANK_CELL,
    DETECT_THREADS,
    TOO_DEEP,
    chat_like,
    declared_apart,
    in_source_messages,
    only_declared,
    recounted_spans,
    unread_reason,
)
from vthread.scan import (
    HEURISTIC_NAMES,
    LineUnreadError,
    ScanResult,
    collector_paused,
    loop_as_json,
    scan_of_lines,
    scan_validated,
    tokens_between,
    written_span_tokens,
)
from vthread.volatile import masked_native

if TYPE_CHECKING:
    # Only --jobs N above 1 needs the module (and the logging it loads, 5-7 ms of a start).
    from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["main", "scan_command"]

CHUNK_LINES: Final = 4096
"""Most lines parsed and scanned together (one :func:`vthread.scan` call per chunk)."""
CHUNK_BYTES: Final = 4 << 20
"""About the most input bytes per chunk; a chunk the core declines takes several times this
in memory as Python objects.

Measured on the 90 MB benchmark set with the core reading (5 alternating runs each, wall
seconds, median): 1, 2, 4 and 8 MiB chunks took 0.727, 0.715, 0.695 and 0.729 s with
``--jobs 1`` and 0.490, 0.477, 0.468 and 0.507 s with ``--jobs 2``. With two jobs the core
reads a chunk while Python finishes the one before, so the first chunk's reading and the
last one's finishing do not overlap: smaller chunks shorten both, smaller still pay each
call's fixed cost. (Before the core, through Python objects, 8 MiB had beaten 1 MiB.) The
peak memory depends on the chunk size only.
"""
JOIN_BELOW_LINES: Final = 256
"""A chunk of fewer lines than this and of at most ``JOIN_BYTES`` (most often a small file's
whole) is read by the core together with the small chunks after it, up to ``CHUNK_LINES``
lines or ``CHUNK_BYTES`` bytes: each chunk's fixed cost (the verdict arrays' set-up, about
0.2 ms, and the core's call) was most of the scan of a file of a few lines."""
JOIN_BYTES: Final = 1 << 20
"""Most bytes of a chunk read with others: a larger one gains nothing from it, and is not
held while the next file is read."""
READ_BYTES: Final = 1 << 20
"""Size of each binary read."""
LONGEST_LINE: int | None = None
"""The most bytes one line may take as it is read; None: a quarter of the memory this
process may have (:func:`line_limit`)."""
SAMPLE: Final = Path(__file__).parent / "samples" / "threads.jsonl"
"""The thread set ``vthread scan`` reads when given no FILE."""
PROGRESS_INTERVAL: Final = 0.2
"""Seconds between progress-line updates."""
DETECT_BYTES: Final = 32 << 20
"""About the most bytes of threads the detection parses: each is parsed again when read."""
WARN_LINE_BYTES: Final = 4 << 20
"""The longest line the warnings about a file's first threads look at (a format or keys
given that they do not fit): a warning is not worth parsing a run of a million messages in
Python (a 37 MB one took 5 s and 430 MB), which the scan itself reads in the core."""
_JSON_SPACE: Final = re.compile(r"[ \t\n\r]*")  # the whitespace json allows between values
_GZIP_HEADER: Final = GZIP_MAGIC + b"\x08"  # the magic and deflate, the one method defined
_CUT_SHORT: Final = "the file ends in the middle of a gzip member (cut short)"
_Kind = Literal["lines", "runs", "inspect"]  # a file's chunks: lines, a document's runs, or
# an Inspect log's samples (as native runs)
_CoreFormat = Literal["native", "openai", "anthropic", "responses", "mini-swe-agent",
                      "swe-agent"]
_CORE_FORMATS: Final[tuple[_CoreFormat, ...]] = (  # the formats the core reads: every one
    "native", "openai", "anthropic", "responses", "mini-swe-agent", "swe-agent")
_INT_EXACT: Final = 2**53


# ---------------------------------------------------------------------------- scan command


def _worker_count(requested: int, work: int | None = None) -> int:
    """The workers worth starting for ``--jobs requested`` (0: one per CPU): no more than
    the usable CPUs, nor than the pieces of ``work`` when known; at least 1.

    More workers than CPUs only take turns, and more than pieces of work sit idle (a
    ``--jobs 1000`` on an 11-line file once forked a thousand processes).
    """
    cpus = _usable_cpus()
    count = min(requested, cpus) if requested > 0 else cpus
    if work is not None:
        count = min(count, work)
    return max(1, count)



@dataclass(slots=True)
class _Stats:
    """Counts behind the summary table, summed over chunks."""

    lines: int = 0
    errors: int = 0
    verdicts: list[int] = field(default_factory=lambda: [0] * (len(HEURISTIC_NAMES) + 1))
    messages: int = 0
    loop_messages: int = 0
    tokens: float = 0.0
    tokens_known: bool = False
    loop_tokens: float = 0.0
    # Loops none of whose messages carries usage.tokens: their cost is unknown, not 0.
    loops_without_tokens: int = 0
    # With --anywhere: every loop of every run (the figures above count each run's costliest
    # loop, as for the default scan), their messages, known tokens and the loops without
    # tokens; None without.
    anywhere: tuple[int, int, float, int] | None = None
    # Error records that stand for no line (sample) of the input: what an Inspect log of an
    # unfinished evaluation lacks (its samples were counted with it: "4 samples" of 3).
    notes: int = 0
    # Runs read in a format of their own, not their file's detected one (a declared
    # mini-swe-agent run, a SWE-agent run showing its actions), by (file, that format): the
    # summary leaves out those in the format their file is named by (:func:`_read_as_own`).
    read_as_own: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, other: _Stats) -> None:
        self.lines += other.lines
        self.notes += other.notes
        self.errors += other.errors
        self.verdicts = [a + b for a, b in zip(self.verdicts, other.verdicts, strict=True)]
        self.messages += other.messages
        self.loop_messages += other.loop_messages
        self.tokens += other.tokens
        self.tokens_known = self.tokens_known or other.tokens_known
        self.loop_tokens += other.loop_tokens
        self.loops_without_tokens += other.loops_without_tokens
        for key, count in other.read_as_own.items():
            self.read_as_own[key] = self.read_as_own.get(key, 0) + count
        if other.anywhere is not None:
            mine = self.anywhere or (0, 0, 0.0, 0)
            self.anywhere = (mine[0] + other.anywhere[0], mine[1] + other.anywhere[1],
                             mine[2] + other.anywhere[2], mine[3] + other.anywhere[3])

    @property
    def wasted_tokens_known(self) -> bool:
        """Whether the costliest loops' tokens are a figure (:func:`loops_priced`, of runs
        some message of which carries usage.tokens)."""
        return self.tokens_known and loops_priced(self.loops, self.loops_without_tokens)

    @property
    def anywhere_tokens_known(self) -> bool:
        """Whether the tokens of every loop found anywhere are a figure, as above."""
        return (self.tokens_known and self.anywhere is not None
                and loops_priced(self.anywhere[0], self.anywhere[3]))

    @property
    def loops(self) -> int:
        return sum(self.verdicts[1:])


@dataclass(frozen=True, slots=True)
class _Task:
    """One chunk of raw lines and what to do with them (picklable, for worker processes)."""

    label: str
    first_line: int
    lines: Sequence[bytes]
    format: str
    options: dict[str, float | None]
    strict: bool
    # The total of every message's tokens is read only for the summary: --quiet skips it.
    count_tokens: bool = True
    # Worker threads the core reads the chunk's lines on (native format; the GIL released).
    threads: int = 1
    # Where a run object keeps its messages and its id (None: the known keys).
    messages_key: str | None = None
    id_key: str | None = None
    # Set (with no lines) for the error record of a gzip stream that broke off: the reason.
    broken: str | None = None
    # With ``broken``: the number of records it stands for, one a line (or row) from
    # ``first_line`` on, each an error saying ``broken`` (a Parquet row group that cannot be
    # read: a record per row, as for bad lines); 0 for the one record of a stream's break.
    broken_lines: int = 0
    # With ``broken``: its record stands for no line of the input (it says what an Inspect
    # log lacks), so the summary counts it as no line, no error: a note.
    broken_is_note: bool = False
    # Compare messages with their volatile values masked.
    mask_volatile: bool = False
    # Report every loop of each run, not only one it ends in.
    anywhere: bool = False
    # What each of the lines is in its file: a JSONL line, a document's run, a Parquet row.
    unit: str = "line"
    # The chunk was cut where its writer paused (a pipe): its records are written before
    # more is read, even when other chunks are in flight (--jobs N).
    paused: bool = False
    # Set (with no lines) where the line at ``first_line`` did not fit the memory the
    # process may use as it was read: the scan ends there.
    too_large: bool = False
    # With too_large, when the line was longer than the most one line may take (the
    # limit, in bytes), not a line the memory ran out on.
    line_limit: int | None = None
    # The file's warning that its lines are not in the --format given named the misfits
    # among its lines up to this one: the chunks' warnings of chat read as native leave
    # them out (one misread, one warning).
    named_through: int = 0
    # The ids of lines whose own text holds none (by line number): a Parquet row whose
    # messages cell is no JSON is its cell alone, its id in the row's id column.
    cell_ids: dict[int, Any] | None = None
    # Set for small chunks read together (see _small_chunks_joined): the chunks, whose lines
    # ``lines`` holds one after another, each with its own file, first line and warnings.
    parts: tuple[_Task, ...] | None = None
    # The tapes format detection made of the chunk's first lines, for the core's scan of
    # them to take instead of parsing those lines again (a pickled copy holds none).
    detected: _core.KeptTapes | None = None
    # The file's format was detected, not given: a run declaring itself a mini-swe-agent
    # run is read as one, a run showing SWE-agent's actions as SWE-agent's
    # (documents.run_reading_format), where a given format is read as given.
    declared_wins: bool = False


@dataclass(frozen=True, slots=True)
class _Done:
    """A scanned chunk: its output records, its counts, and the fatal error under --strict."""

    output: bytes
    stats: _Stats
    fatal: str | None
    # Said on stderr as the chunk's records are written.
    warnings: tuple[str, ...] = ()
    # Where a line (a document's run, a row) larger than the memory the process may use
    # lies: the records are those of the chunk's lines before it, and the scan ends there.
    out_of_memory: str | None = None
    # With out_of_memory, the most one line may take when the line was longer than that.
    line_limit: int | None = None
    # The chunks it stands for (several read together: see _small_chunks_joined), each of
    # which moved the progress bar's reading on when it was read.
    chunks: int = 1
    # Looping lines that look like chat read as native, a _Misread per file (of the chunks
    # read together), said on stderr once per file (see _MisreadWarnings).
    misread: tuple[_Misread, ...] = ()
    # The first run the engine raised on (a bug: its line is an error record, and the
    # others are scanned): where, and the traceback, said once; the scan then ends with 70.
    internal: str | None = None


@dataclass(frozen=True, slots=True)
class _Misread:
    """Looping lines of a file (``label``) that look like chat but are read as native: the
    line numbers with the format each looks like (see :func:`_chat_read_as_native`)."""

    label: str
    unit: str
    found: tuple[tuple[int, Any], ...]


class _MisreadWarnings:
    """The warnings of looping lines that look like chat read as native, one per file (it
    was one per chunk: a long file said it dozens of times): a file's first chunk that has
    some is said as it is written; those of its later chunks are tallied and said once,
    after the last record (:meth:`rest`), the first few of each format by number."""

    def __init__(self) -> None:
        # A file given twice is read twice, each reading with its own warnings: a reading is
        # (its file, how many readings of it came before), a new one begun where the lines
        # found go back to an earlier number (records, and so these, come in input order).
        self._readings: dict[str, tuple[int, int]] = {}  # file: (its reading, last line)
        self._said: set[tuple[str, int]] = set()
        # per reading said already: (unit, the first few lines of each format, their totals)
        self._later: dict[tuple[str, int],
                          tuple[str, list[tuple[int, Any]], dict[Any, int]]] = {}

    def _reading(self, found: _Misread) -> tuple[str, int]:
        reading, last = self._readings.get(found.label, (0, 0))
        if found.found[0][0] <= last:
            reading += 1
        self._readings[found.label] = (reading, found.found[-1][0])
        return found.label, reading

    def said_now(self, misread: Iterable[_Misread]) -> list[str]:
        """The warnings to say as a chunk's records are written."""
        from vthread.documents import misfit_lines, misread_warning, tally_misfits

        now = []
        for found in misread:
            reading = self._reading(found)
            if reading not in self._said:
                self._said.add(reading)
                now.append(f"{found.label}: warning: " + misread_warning(
                    misfit_lines(found.found, found.unit), len(found.found),
                    (format_ for _, format_ in found.found), ("with", "--format"),
                    ", the file's format (found from its first lines, or given)"))
                continue
            _, first, totals = self._later.setdefault(reading, (found.unit, [], {}))
            tally_misfits(found.found, first, totals)
        return now

    def rest(self) -> list[str]:
        """The warnings of the lines tallied after each file's first warning."""
        from vthread.documents import misfit_lines

        return [f"{label}: warning: also {misfit_lines(first, unit, totals=totals)} but "
                f"{'is' if sum(totals.values()) == 1 else 'are'} read as native (as said "
                "above of its earlier lines)"
                for (label, _), (unit, first, totals) in self._later.items()]



_R = TypeVar("_R")


_KEEP_TAPES: Final[contextvars.ContextVar[bool]] = contextvars.ContextVar(
    "vthread_scan_keeps_tapes", default=False)
"""Whether format detection keeps its parse of a long line for the scan that follows
(:func:`vthread._core.line_format_evidence`): only inside :func:`scan_command`, which lets
a tape no scan took go at its end; never for a caller of :func:`_tasks` that does not scan
(``vthread report``'s look at a file's kinds of messages)."""


class _FatalError(Exception):
    """An input or output problem that ends the run with status 2."""


class _OutOfMemoryError(MemoryError):
    """A line (a document's run, a row) larger than the memory the process may use, at the
    place given (``args[0]``), or longer than the most one line may take (``args[1]``, the
    limit in bytes, else None)."""


def scan_command(options: argparse.Namespace, own_process: bool = False) -> int:
    """Run ``vthread scan`` with its parsed ``options``; the exit status. ``own_process``:
    the process is the command's own (it ends when this returns), and Ctrl-C or SIGTERM
    from then on is ignored, rather than given back to a caller's handlers."""
    # When the run started, for --summary: before the inputs are listed, which can take a
    # while (a directory of many files), not when the scan of them begins.
    options.started_at = time.time()
    # Ctrl-C and SIGTERM are caught from the start, not only once the scan runs: listing a
    # directory of many files (and reading each one's first bytes) can take a while, and a
    # job stopped then still says so and leaves its --summary.
    stop_signals = StopSignals()
    STOP_SIGNALS.append(stop_signals)
    keeping = _KEEP_TAPES.set(True)
    try:
        return _scan_stopping_on_signals(options, stop_signals)
    except (KeyboardInterrupt, TerminatedError) as stop:
        # Before the scan: the scan's own stops are handled in it (which then gives the
        # handlers back, so that its summary is never written over by this one's).
        code, message = _stopped_by(stop)
        say(f"vthread scan: {message}")
        _early_summary(options, message, code)
        return code
    finally:
        STOP_SIGNALS.remove(stop_signals)
        stop_signals.close(ignore=own_process)
        # A parse format detection kept for a scan that never took it (that line read by
        # Python, the run stopped) goes with the run, not with the process.
        _KEEP_TAPES.reset(keeping)
        _core.release_kept_tape()


def _stopped_by(stop: BaseException) -> tuple[int, str]:
    """The exit status and message of a run stopped by Ctrl-C or SIGTERM."""
    if isinstance(stop, KeyboardInterrupt):
        return INTERRUPTED_EXIT, "interrupted"
    return TERMINATED_EXIT, "terminated (SIGTERM)"


def _early_summary(options: argparse.Namespace, reason: str, status: int) -> None:
    """``--summary``'s file for a run that ended before its scan (nothing scanned, and why):
    a summary left by an earlier run must not stand for this one."""
    inputs = _named_inputs(options)
    if options.summary_file and not _destroys_a_listed_input(options.summary_file, inputs):
        with contextlib.suppress(_FatalError):
            _check_not_an_input(options.summary_file, inputs, "the --summary file")
            _check_overwrite(options.summary_file, "the --summary file")
            _write_summary(options.summary_file, _summary_json(
                _Stats(), _what_was_scanned(inputs), 0.0, [], set(), reason,
                run=_run_settings(options, status)))


def _named_inputs(options: argparse.Namespace) -> list[str]:
    """The inputs the options name, as :func:`_inputs` reads them but without listing a
    directory or saying anything: the FILE arguments, else the sample or standard input (an
    early summary must not be written over either: standard input redirected from the very
    file it names was overwritten with the summary of a run that refused to do so)."""
    if options.files:
        return list(options.files)
    if options.sample or _is_tty(sys.stdin):
        return [str(SAMPLE)]
    return ["-"]


def _options_refused(options: argparse.Namespace, cycle: dict[str, float | None]
                     ) -> int | None:
    """The exit status of options refused before any input is listed (said on stderr, and
    no summary written: the summary file may be what is refused), or None; ``-o -`` and
    ``--format auto`` are made what they stand for."""
    if options.format == "auto":
        options.format = None  # detected per file, the default
    for flag, path in (("-o", options.output), ("--summary", options.summary_file)):
        if path == "":
            # (an unset variable in a script, "-o $OUT": the records went to standard
            # output, and the summary nowhere, with exit status 0)
            say(f"vthread scan: {flag}: an empty path names no file"
                + (" (- is standard output)" if flag == "-o" else ""))
            return USAGE_EXIT
    if options.output == "-":
        options.output = None  # "-o -": standard output, as for the inputs
    if options.summary_file == "-":
        # Not a file named "-" left in the working directory: the table is on stderr already.
        say("vthread scan: --summary takes a file path; the summary table is written on "
            "standard error already (without --quiet)")
        return USAGE_EXIT
    if options.fail_on_loop and options.fail_on_loop_share is not None:
        say("vthread scan: --fail-on-loop fails on any loop, which --fail-on-loop-share 0 "
            "does too: give one of the two")
        return USAGE_EXIT
    refused = set_with_anywhere(options.anywhere, **cycle)
    if refused is not None:
        # Looking anywhere has rules of its own: the option would change nothing.
        say(f"vthread scan: --{refused.replace('_', '-')} does not apply with --anywhere, "
            "which judges loops by rules of its own (see vthread.anywhere); leave it out")
        return USAGE_EXIT
    if options.summary_file:
        # Said without the early summary the other refusals leave: it would be written over
        # the very file it names.
        try:
            _check_summary_apart(options.summary_file, options.output)
        except _FatalError as error:
            say(f"vthread scan: {error}")
            return USAGE_EXIT
    return None


def _opened_output(options: argparse.Namespace, files: list[str]
                   ) -> tuple[BinaryIO, _Progress | None] | int:
    """Where the records go, opened, and the progress bar (None: none shown); or the exit
    status of an output that cannot be written (said, and the early summary left where
    it can be)."""
    # Progress only where it cannot land among the records: stderr a terminal, and the
    # records going to a file or a pipe rather than to (possibly) that same terminal.
    show_progress = (not options.quiet and _is_tty(sys.stderr)
                     and (bool(options.output) or not _is_tty(sys.stdout)))
    progress = _Progress(sys.stderr, files) if show_progress else None
    why = unwritable(options.summary_file) if options.summary_file else None
    if why is not None:
        # Said before the scan, not after it: its records would be written and its figures
        # lost (and first: the early summary of a failure below could not be written).
        say(f"vthread scan: cannot write {options.summary_file}: {why}")
        return IO_EXIT
    if not options.output and sys.stdout is None:
        say("vthread scan: cannot write the records: standard output is closed")
        _early_summary(options, "cannot write the records: standard output is closed",
                       IO_EXIT)
        return IO_EXIT
    try:
        out = _output(options.output, anywhere=options.anywhere)
    except OSError as error:
        if progress is not None:
            progress.clear()
        said = f"cannot write {options.output}: {error.strerror or error}"
        say(f"vthread scan: {said}")
        _early_summary(options, said, IO_EXIT)
        return IO_EXIT
    if options.output and options.output.lower().removesuffix(".gz").endswith(".json"):
        # (json.load of the file failed with "Extra data" and no word of why)
        say(f"vthread scan: note: {options.output} holds JSON Lines, a record a line, as a "
            ".jsonl file does: read it with pandas.read_json(path, lines=True), jq or "
            "vthread report, not json.load")
    return out, progress


def _out_of_memory_said(error: MemoryError, written: int, units: set[str]) -> str:
    """Why a scan ended out of memory, ``written`` lines' records written: a line (a run of
    a document) that cannot be held in the memory the process may use, or longer than the
    most one line may take (an :class:`_OutOfMemoryError`), or the input as a whole."""
    unit = _unit(units)  # (lines, a document's runs, a log's samples, rows)
    if not isinstance(error, _OutOfMemoryError):
        return (f"out of memory after {written:,} {unit}s: the input is larger than the "
                "memory the process may use (ulimit -v, strict overcommit); the records of "
                f"those {unit}s are written, the rest's are not")
    before = (f"the record of the {written:,} {unit} before it is" if written == 1
              else f"the records of the {written:,} {unit}s before it are")
    where, limit = error.args
    why = ("it does not fit the memory the process may use (ulimit -v, strict overcommit), "
           "or the process is out of it" if limit is None else
           f"it is longer than {limit:,} bytes, the most one line (a document's run, or a "
           "document read from a stream) may take (a quarter of the memory this process "
           "may have: a line that never ends, such as /dev/zero's, must not take all of "
           "it)")
    return f"out of memory at {where}: {why}; {before} written, its own and the rest's are not"


def _cycle_options(options: argparse.Namespace) -> dict[str, float | None]:
    """The production heuristics' options the scan was given."""
    return {
        "min_repetitions": options.min_repetitions,
        "min_pattern_length": options.min_pattern_length,
        "max_pattern_length": options.max_pattern_length,
        "min_result_repetitions": options.min_result_repetitions,
    }


def _scan_stopping_on_signals(options: argparse.Namespace, stop_signals: StopSignals) -> int:
    cycle = _cycle_options(options)
    refused = _options_refused(options, cycle)
    if refused is not None:
        return refused
    jobs = _worker_count(options.jobs)
    passed_over: list[_LeftOut] = []  # paths under an input directory not read
    # Per directory, the files passed over for their names though named like trajectories.
    passed_over_by_name: list[tuple[str, dict[str, int]]] = []
    # Directories among several inputs with no trajectory file under them, and why: each is
    # an error record.
    empty_directories: dict[str, str] = {}
    try:
        inputs = _inputs(options, passed_over, passed_over_by_name, empty_directories)
        if inputs is None:
            return USAGE_EXIT
        files, listed, walked = inputs
        for name in files:
            # An input named that is not there (a typo) ends the scan before any output
            # (status 2), and so does a lone one that cannot be read. One of several that is
            # there but cannot be read (a file of a directory, gone or changed since the
            # listing, or one of many named, as a shell glob names them, without permission
            # to read it) is its own error record when read, and the others are still read.
            if name not in walked and not (name in listed and os.path.exists(name)):
                _check_readable(name)
        if options.output and is_parquet(options.output) and not parquet_available():
            # (first: without pyarrow, Parquet records left by an earlier run cannot be told
            # from runs)
            raise _FatalError(f"cannot write {options.output}: {NEEDS_PYARROW}")
        for what, written in _written_by(options):
            if written:
                _check_not_an_input(written, files, what)
                _check_overwrite(written, what)
    except _FatalError as error:
        say(f"vthread scan: {error}")
        _early_summary(options, str(error), USAGE_EXIT)
        return USAGE_EXIT
    opened = _opened_output(options, files)
    if isinstance(opened, int):
        return opened
    out, progress = opened
    stats = _Stats(anywhere=(0, 0, 0.0, 0) if options.anywhere else None)
    started = time.perf_counter()
    log = _ReadLog()
    units: set[str] = set()  # what the inputs' lines are: JSONL lines, runs, Parquet rows
    if files and all(map(is_parquet, files)):
        units.add("row")  # (an empty Parquet file has no task to say so: "0 lines from")
    first_errors: list[dict[str, Any]] = []  # the summary's first error records
    failure: tuple[int, str] | None = None  # the exit status and message of a scan cut short
    # Standard input from a pipe is scanned as its lines come, and each chunk's records are
    # written at once, for whoever reads them as they come.
    streaming = (files == ["-"] and sys.stdin is not None
                 and _is_live(cast(io.BufferedReader, sys.stdin.buffer)))
    results: Generator[_Done, None, None] | None = None
    misread_warnings = _MisreadWarnings()
    internal: str | None = None  # the first bug the engine met (_Done.internal)
    try:
        # Native, OpenAI, Anthropic and Responses lines are read by the core here: with
        # --jobs N, N threads each take whole chunks (one core thread per chunk). The other
        # formats (and the options only Python reads) are read by Python, N worker
        # processes at a time.
        tasks = _noting_units(
            _tasks(files, _Reading(
                options.format, cycle, options.strict,
                count_tokens=not options.quiet or bool(options.summary_file),
                messages_key=options.messages_key, id_key=options.id_key,
                mask_volatile=options.mask_volatile,
                # With more jobs, a line's parse by its scan runs on a worker beside the
                # detection's on this thread: holding the latter's tapes for it saves no
                # time there, and cost this thread memory traffic (the scan of 500 files of
                # 20 runs with --jobs 2 took 0.42 s without, 0.47 s with:
                # docs/performance.md, session 35).
                hold_tapes=jobs == 1),
                _Listing(listed, walked, empty_directories), log, progress),
            units)
        if options.anywhere:
            tasks = (replace(task, anywhere=True) for task in tasks)
        first = next(tasks, None)
        in_core = first is None or first.format == "native" or _core_may_read(first)
        if first is not None:
            # Small chunks read together, but not from standard input (a pipe's chunk waits
            # for no more to come), nor under --strict (a scan that stops at a bad line reads
            # no file ahead of it, so its summary names only files it reached). The first
            # chunk alone: whether the core declines it decides where the rest go.
            joined = in_core and "-" not in files and not options.strict
            tasks = chain([first], _small_chunks_joined(tasks) if joined else tasks)
        results = _scanned(_run_in_core if in_core else _run, tasks, jobs)
        for done in results:
            # Counted before it is written: a write the reader cuts short (`| head`) has
            # delivered some of the chunk's records, which the summary must not leave out.
            # Counted and written with a stop held back until both are done: one between
            # them left a chunk counted and not written.
            with stop_signals.held_for_a_write(options.output):
                stats.add(done.stats)
                _write(out, _loops_only(done.output) if options.only_loops else done.output,
                       flush=streaming)
            if done.stats.errors and len(first_errors) < FIRST_ERRORS:
                first_errors += _error_records(done.output, FIRST_ERRORS - len(first_errors))
            if progress is not None:
                progress.chunk_done(stats.lines, done.chunks)
            for warning in (*done.warnings, *misread_warnings.said_now(done.misread)):
                say(f"vthread scan: {warning}")
            if done.internal is not None and internal is None:
                internal = done.internal
                where, _, trace = internal.partition("\n")
                say(f"vthread scan: {where}: internal error (a bug; please report it with "
                    f"this traceback); the run is an error record, and the scan goes on\n"
                    f"{trace}", end="", lines=True)
            if done.fatal is not None:
                raise _FatalError(done.fatal)
            if done.out_of_memory is not None:
                raise _OutOfMemoryError(done.out_of_memory, done.line_limit)
        _close(out, options.output, progress)
        # Every record is written: Ctrl-C or SIGTERM from now on changes nothing (it made a
        # finished scan exit 130 with its summary saying "completed": true).
        stop_signals.settle()
    except _FatalError as error:
        _close_quietly(out, options.output, progress)
        failure = (USAGE_EXIT, str(error))
    except BrokenPipeError:
        # The reader went away (`vthread scan big.jsonl | head`): end quietly, as vthread
        # guard and cat do.
        if progress is not None:
            progress.clear()
        silence_stdout(out)
        failure = (BROKEN_PIPE_EXIT, "the reader of the records went away (broken pipe)")
    except _WriteError as error:
        # A full disk, a device that refuses, a file system gone read-only: the records are
        # incomplete, which is neither a loop (1) nor a usage error (2).
        _close_quietly(out, options.output, progress)
        silence_stdout(out)
        failure = (IO_EXIT, f"cannot write {options.output or 'standard output'}: {error}")
    except (KeyboardInterrupt, TerminatedError) as stop:
        _close_quietly(out, options.output, progress)
        failure = _stopped_by(stop)
    except MemoryError as error:
        # A line (a run of a document) larger than the memory the process may use, or the
        # input as a whole: the records of the lines before it are written, and the summary
        # says where it stopped.
        _close_quietly(out, options.output, progress)
        failure = (MEMORY_EXIT, _out_of_memory_said(error, stats.lines, units))
    finally:
        # The scan's end is decided (a stop, a failure, every record written): a signal from
        # now on (a second Ctrl-C) is ignored until the command has ended, its summary
        # written, rather than a traceback or a summary of nothing written over this one.
        stop_signals.settle()
        if results is not None:
            # The chunks still running are waited for here, a second Ctrl-C ignored: the
            # pool was shut down when the generator was collected, after the handlers were
            # given back, and a Ctrl-C then was a traceback ("Exception ignored in").
            results.close()
        # Said whenever records it tallies were written, the scan ended early or not.
        for warning in misread_warnings.rest():
            say(f"vthread scan: {warning}")
    seconds = time.perf_counter() - started
    what = _what_was_scanned([name for name in files if name not in empty_directories])
    if empty_directories:
        # (a directory with no trajectory file under it is an input, not a file)
        count = len(empty_directories)
        what += f" and {count:,} director{'y' if count == 1 else 'ies'} holding none"
    if len(files) > 1 and log.held_none:
        _held_none_said(log.held_none)
    if failure is None and stats.lines == stats.errors:
        _none_scanned_said(stats.lines, _unit(units), options.fail_on_error)
    if failure is not None:
        code, message = failure
        if code != BROKEN_PIPE_EXIT:
            say(f"vthread scan: {message}")
    elif not options.quiet:
        say(_summary(stats, what, seconds, detected=log.detected, units=units,
                     cut_short=len(log.cut_short)), end="", lines=True)
    status = (failure[0] if failure is not None else INTERNAL_EXIT if internal is not None
              else _gate_status(options, stats, passed_over))
    if options.summary_file:
        # Written whatever ended the scan, so that a dashboard never reads a stale summary:
        # one cut short says so ("completed": false) and why.
        summary = _summary_json(stats, what, seconds, log.detected, units,
                                None if failure is None else failure[1], log.cut_short,
                                passed_over, passed_over_by_name, log.held_none,
                                run=_run_settings(options, status), first_errors=first_errors)
        if not _write_summary(options.summary_file, summary):
            return IO_EXIT if failure is None else failure[0]
    return status


def _held_none_said(held_none: list[str]) -> None:
    """Said when inputs among several held no run: an agent that crashed before writing its
    trajectory left an empty file, which no record stands for (it went by unseen)."""
    shown = ", ".join(held_none[:3]) + (f", and {len(held_none) - 3:,} more"
                                        if len(held_none) > 3 else "")
    say(f"vthread scan: note: {len(held_none):,} input"
        f"{' holds' if len(held_none) == 1 else 's hold'} no run: {shown}")


def _none_scanned_said(lines: int, unit: str, fail_on_error: bool) -> None:
    """Said when a scan that ran to its end scanned no thread, its ``lines`` all error
    records (a CI gate reading the exit status alone passed having checked nothing)."""
    why = ("the input held none" if not lines
           else f"its one {unit} is an error record" if lines == 1
           else f"its {lines:,} {unit}s are error records")
    say(f"vthread scan: warning: no thread was scanned: {why}"
        + ("" if fail_on_error else FAIL_ON_ERROR_ADVICE))


def _gate_status(options: argparse.Namespace, stats: _Stats,
                 passed_over: list[_LeftOut]) -> int:
    """The exit status of a scan that ran to its end, as ``--fail-on-loop`` and
    ``--fail-on-error`` gate it (a trajectory file left out unread said when it alone
    fails the gate)."""
    scanned = stats.lines - stats.errors
    # A trajectory file left out (compressed as vthread does not read, a dangling link) went
    # unchecked as surely as a file that cannot be read, which is an error record.
    unread = len({_entry(left.file) for left in passed_over if left.unread_trajectory})
    if options.fail_on_error and unread and not (stats.errors or stats.notes or scanned == 0):
        what = ("trajectory file" if all(not left.why.startswith(_UNLISTED)
                                         for left in passed_over) else "path")
        say(f"vthread scan: --fail-on-error: {unread:,} {what}"
            f"{' was' if unread == 1 else 's were'} left out unread (said above)")
    # (a note: an Inspect log lacking samples its evaluation never ran or never logged)
    if options.fail_on_error and (stats.errors or stats.notes or scanned == 0 or unread):
        # Before a loop's status: in a nightly scan of thousands of runs some run nearly
        # always loops, and 1 then hid the runs that went unchecked.
        return DATA_EXIT
    share = options.fail_on_loop_share
    if share is not None:
        # (a share of the threads scanned, error records none of them; held exactly)
        found = Fraction(stats.loops, scanned) if scanned else Fraction(0)
        if found > share:
            given, seen = _shares_shown(share, found)
            say(f"vthread scan: --fail-on-loop-share {given}: {stats.loops:,} of the "
                f"{scanned:,} threads scanned loop ({seen})")
            return LOOP_EXIT
        return 0
    return LOOP_EXIT if options.fail_on_loop and stats.loops else 0


def _shares_shown(share: Fraction, found: Fraction) -> tuple[str, str]:
    """Two shares as percentages, to two decimals where they have them (5%, 7.25%), or to as
    many more as tell them apart (5% and 5.0005%, not 5% and 5%: a gate failed at a share
    shown equal to its own read as wrong), each rounded exactly (no float's digits)."""
    def percent(value: Fraction, places: int) -> str:
        scaled = round(value * 100 * 10**places)  # (exact: a Fraction rounds to an int)
        whole, part = divmod(scaled, 10**places)
        return f"{whole}.{part:0{places}d}".rstrip("0").rstrip(".") + "%"

    places = 2
    while percent(share, places) == percent(found, places) and places < 1200:
        places += 1  # (found > share: some number tells them apart; a share has < 1,200)
    return percent(share, places), percent(found, places)


def _run_settings(options: argparse.Namespace, status: int) -> dict[str, object]:
    """What a dashboard needs to tell one scan's summary from another's: the exit status
    the run ends with (the gate's answer), the vthread version, when it started (UTC, as
    :func:`scan_command` noted it before listing the inputs), and the options that shape
    the records (the loop thresholds as the scan applied them)."""
    from datetime import UTC, datetime

    import vthread

    applied = cycle_options(min_repetitions=options.min_repetitions,
                            min_pattern_length=options.min_pattern_length,
                            max_pattern_length=options.max_pattern_length,
                            min_result_repetitions=options.min_result_repetitions)
    return {
        "exit_status": status,
        "version": vthread.__version__,
        "started": datetime.fromtimestamp(options.started_at, UTC).isoformat(
            timespec="seconds"),
        "options": {
            "format": options.format or "auto",
            "messages_key": options.messages_key,
            "id_key": options.id_key,
            **({} if options.anywhere else asdict(applied)),
            "mask_volatile": options.mask_volatile,
            "anywhere": options.anywhere,
            "only_loops": options.only_loops,
            "strict": options.strict,
            "fail_on_loop": options.fail_on_loop,
            "fail_on_loop_share": (None if options.fail_on_loop_share is None
                                   else float(options.fail_on_loop_share)),
            "fail_on_error": options.fail_on_error,
        },
    }


FAIL_ON_ERROR_ADVICE: Final = " (--fail-on-error makes that exit status 65)"
"""Said after a scan's warning that no thread was scanned (``vthread report``, which has no
such option, leaves it out of the scan's words it passes on)."""


def _write_summary(path: str, summary: dict[str, object]) -> bool:
    """Write ``--summary``'s file; False (said on stderr) when it cannot be written."""
    text = json.dumps(summary, indent=2, allow_nan=False) + "\n"
    try:
        write_replacing(path, text.encode("utf-8"))
    except OSError as error:
        say(f"vthread scan: cannot write {path}: {error.strerror or error}")
        return False
    return True


def _worker_started() -> None:
    """A worker process's first step: SIGTERM as by default, and Ctrl-C stopping the chunk
    being scanned (:func:`_worker_interrupted`), not the scan's handlers it was forked
    with."""
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, _worker_interrupted)


_WORKING = False
"""In a worker process, whether it is scanning a chunk (:func:`_scan_chunk_in_worker`)."""


def _worker_interrupted(signum: int, frame: object) -> None:
    """Ctrl-C in a worker process (a terminal's reaches every process of the scan): the
    chunk being scanned stops, as the scan does; an idle worker waiting for work goes on
    waiting, to be ended by its pool as the scan stops (it raised there, and printed a
    traceback of its wait that read as vthread's bug)."""
    if _WORKING:
        raise KeyboardInterrupt


def _scan_chunk_in_worker(task: _Task) -> _Done:
    """:func:`_scan_chunk` in a worker process, Ctrl-C stopping it meanwhile."""
    global _WORKING
    _WORKING = True
    try:
        return _scan_chunk(task)
    finally:
        _WORKING = False


def _noting_units(tasks: Iterator[_Task], units: set[str]) -> Iterator[_Task]:
    """``tasks``, each adding to ``units`` what its lines are (:attr:`_Task.unit`): a task of
    lines, or the error record of a run or row that broke (a document cut in its first run
    is runs, not lines: its summary said "1 line"); a file's own error says nothing of what
    its lines are."""
    for task in tasks:
        if task.lines or (task.broken is not None and task.unit != "file"):
            units.add(task.unit)
        yield task


class _WriteError(Exception):
    """Writing the records failed (not a broken pipe); the message is the system's."""


FIRST_ERRORS: Final = 10
"""Error records the summary lists (``first_errors``), the first of the scan."""


def _error_records(output: bytes, most: int) -> list[dict[str, Any]]:
    """The first ``most`` error records among a chunk's records (``output``), each as the
    summary lists it: its ``file``, ``line``, ``id`` and ``error`` (the record that ends an
    Inspect log lacking samples stands for no line, and is listed under ``cut_short``)."""
    from vthread.inspect_log import is_lacking_note

    found: list[dict[str, Any]] = []
    for line in output.split(b"\n"):
        # An error record's own key, after its id and file (written in that order); within
        # a string, the quotes would be escaped, so no other record holds these bytes.
        if b',"error":' not in line:
            continue
        record = json.loads(line)
        if "error" in record and not is_lacking_note(record):
            found.append({key: record.get(key) for key in ("file", "line", "id", "error")})
            if len(found) >= most:
                break
    return found


def _write(out: BinaryIO, data: bytes, flush: bool = False) -> None:
    """Write records to ``out``; ``flush``: at once (records of a stream read as it comes).
    Ctrl-C or SIGTERM meanwhile takes effect once the records are written, so that the
    output never ends in part of one, but for a write to a reader that stopped reading
    (a full pipe), which a stop waits for only so long
    (:data:`vthread._cli_signals.STOP_WAITS_FOR_A_WRITE`, set by the scan's
    :meth:`StopSignals.held` around it)."""
    try:
        with signals_held():
            write_all(out, data, flush)
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _WriteError(error.strerror or str(error)) from error


def _loops_only(output: bytes) -> bytes:
    """The records of ``output`` (one JSON object a line) but those of progressing threads.

    A progressing thread's record holds ``"verdict":null``; inside a JSON string every quote
    is escaped, so that text can only be the key itself. Error records have no verdict and
    stay.
    """
    kept = [line for line in output.split(b"\n") if line and b'"verdict":null' not in line]
    return b"".join(line + b"\n" for line in kept)


def _every_loop(loops: list[list[dict[str, Any]]] | None
                ) -> tuple[int, int, float, int] | None:
    """(loops, their messages, their known tokens, the loops without tokens) of every run's
    loops found anywhere; None when the scan did not look anywhere. A run's loops never
    overlap in the messages scanned, but restated in a translated file's own messages two
    may share one (a turn whose text ends one loop and whose tool call begins the next):
    it is counted once, as its tokens are (``vthread.anywhere.counted_spans``)."""
    if loops is None:
        return None
    every = [loop for found in loops for loop in found]
    tokens = [loop["loop_tokens"] for loop in every if loop["loop_tokens"] is not None]
    return (len(every), sum(map(_messages_covered, loops)),
            token_total(tokens) if tokens else 0.0, len(every) - len(tokens))


def _messages_covered(loops: list[dict[str, Any]]) -> int:
    """How many of a run's messages its loops span, one spanned by two counted once."""
    covered = reached = 0
    for start, end in sorted((loop["loop_start"], loop["loop_start"] + loop["loop_messages"])
                             for loop in loops):
        covered += max(0, end - max(start, reached))
        reached = max(reached, end)
    return covered


def _summary_json(stats: _Stats, scanned: str, seconds: float,
                  detected: list[tuple[str, str]], units: set[str],
                  failure: str | None = None,
                  cut_short: list[tuple[str, str]] | None = None,
                  left_out: list[_LeftOut] | None = None,
                  passed_over_by_name: list[tuple[str, dict[str, int]]] | None = None,
                  held_none: list[str] | None = None,
                  run: dict[str, object] | None = None,
                  first_errors: list[dict[str, Any]] | None = None,
                  ) -> dict[str, object]:
    """The summary table's figures as a JSON-ready mapping (``--summary FILE``); ``failure``:
    why the scan ended before its end (the figures are then those of what it read);
    ``cut_short``: the inputs not read to their end, and why; ``left_out``: the paths under
    an input directory not read (a FIFO, a link to a directory), and why;
    ``passed_over_by_name``: for each input directory, the number of its files passed over
    for their names though named like trajectory files, by ending, commonest first
    (:func:`_by_ending`); ``held_none``: the
    inputs read to their end that held no run (empty files); ``run``: the exit status,
    version and options (:func:`_run_settings`), first."""
    threads = stats.lines - stats.errors
    return {
        **(run or {}),
        "scanned": scanned,
        "completed": failure is None,
        "failure": failure,
        "seconds": round(seconds, 3),
        "lines": stats.lines,
        "unit": _unit(units),
        "threads": threads,
        "errors": stats.errors,
        # (where to look first: the count alone sent a CI job's reader to the records)
        "first_errors": first_errors or [],
        "progressing": stats.verdicts[0],
        "loops": stats.loops,
        "loops_by_heuristic": {name: stats.verdicts[code]
                               for code, name in enumerate(HEURISTIC_NAMES, 1)},
        "messages": stats.messages,
        "wasted_messages": stats.loop_messages,
        # A total past the largest double is no number JSON can hold: null, as when unknown.
        "tokens": _finite(stats.tokens) if stats.tokens_known else None,
        "wasted_tokens": _finite(stats.loop_tokens) if stats.wasted_tokens_known else None,
        "loops_without_tokens": stats.loops_without_tokens,
        # --anywhere: every loop, where the figures above count each run's costliest one.
        **({} if stats.anywhere is None else {"loops_anywhere": {
            "loops": stats.anywhere[0], "messages": stats.anywhere[1],
            "tokens": _finite(stats.anywhere[2]) if stats.anywhere_tokens_known else None}}),
        "formats_detected": [{"file": label, "format": name} for label, name in detected],
        # (a dashboard summing runs by the file's format alone counted a declared run or a
        # SWE-agent run under another's name)
        "read_as_their_own": _read_as_own(stats, detected),
        "cut_short": [{"file": label, "why": why} for label, why in cut_short or []],
        "left_out": [{"file": left.file, "why": left.why} for left in left_out or []],
        # (said on stderr only, a dashboard never saw the runs.jsonlines files left unread)
        "passed_over_by_name": [
            {"directory": directory, "files": sum(endings.values()), "endings": endings}
            for directory, endings in passed_over_by_name or []],
        # (no record stands for an empty file: a run that crashed before it wrote one)
        "held_no_run": list(held_none or []),
    }


def _walked_once(files: list[str], found_in_walks: set[int],
                 identities: dict[str, tuple[int, int]], passed_over: list[_LeftOut]
                 ) -> list[str]:
    """``files`` with each file found under the directories given read once: a link (or a
    hard link) to a file found there too, which was read, written and counted once for
    each path (a results tree linking each run from a second folder), is left out, said on
    stderr and added to ``passed_over`` (the summary's ``left_out``), and so is a file found
    again because its directory is given twice (or within another given). The path that
    goes through no symbolic link is the one read. Files named as FILE arguments are read as
    often as named (:func:`_say_files_named_twice`); ``found_in_walks``: the places in
    ``files`` of the files found under directories."""
    first: dict[tuple[int, int], int] = {}  # identity -> index in kept
    kept: list[str] = []
    again: list[_LeftOut] = []
    said: set[tuple[str, str]] = set()
    for place, name in enumerate(files):
        identity = identities.get(name) if place in found_in_walks else None
        if identity is None:
            kept.append(name)
            continue
        if identity not in first:
            first[identity] = len(kept)
            kept.append(name)
            continue
        earlier = kept[first[identity]]
        if os.path.abspath(name) == os.path.abspath(earlier):  # (d and ./d)
            why = ("found again, its directory given twice or within another given: read "
                   "once")
        else:
            if _through_a_link(earlier) and not _through_a_link(name):
                kept[first[identity]], name, earlier = name, earlier, name
            why = f"the same file as {earlier} (a link to it, or it to this): read once"
        if (name, why) not in said:  # (a path found a third time says nothing new)
            said.add((name, why))
            again.append(_LeftOut(name, why, unread_trajectory=False))
    for left in again[:3]:
        say(f"vthread scan: {left.file}: left out: {left.why}")
    if len(again) > 3:
        more = len(again) - 3
        say(f"vthread scan: and {more:,} more file{'' if more == 1 else 's'} found again "
            "under the directories given (links, or a directory given twice), each read "
            "once (--summary FILE lists them)")
    passed_over.extend(again)
    return kept


def _through_a_link(path: str) -> bool:
    """Whether ``path`` or a folder on it is a symbolic link (``runs-latest/a.jsonl``, a link
    to a night's folder, as well as a link to the file itself)."""
    return os.path.realpath(path) != os.path.abspath(path)


def _say_files_named_twice(files: list[str], identities: dict[str, tuple[int, int]]) -> None:
    """Warn of a file read more than once (named twice, or by name and through a directory
    given too, or by two paths to it): its records are written, and counted, once each
    time, as asked, and a tally that counts runs would count its runs twice. ``identities``:
    the (device, inode) of the files a directory's walk found (stated there already)."""
    for name, first in named_again(files, identities):
        again = "given again" if first == name else f"{first} again"
        say(f"vthread scan: warning: {name} is {again}: its records are written and "
            "counted once for each time it is given")


def _looks_like_a_trajectory(name: str) -> bool:
    """Whether a file name vthread does not read still names a trajectory file, most
    likely: one of its endings says JSON or a trajectory (``runs.jsonlines``,
    ``runs.jsonl.gzip``, ``run.traj.json5``), or it has none and its name says so
    (``traj_17``). Said when passed over, where the logs, notes and code beside the runs
    (``scan.log``, ``trajectory_viewer.py``) are passed over in silence."""
    stem, *endings = name.lower().lstrip(".").split(".")
    if name.endswith("~") or (endings and endings[-1] in _LEFTOVER_ENDINGS):
        return False  # an editor's or a tool's leftover (runs.jsonl.swp, runs.json.lock)
    return any(ending.startswith(("json", "traj")) for ending in endings) or (
        not endings and ("json" in stem or "traj" in stem))


_LEFTOVER_ENDINGS: Final = frozenset({"bak", "swp", "swo", "lock", "tmp", "orig", "old"})
"""Endings of the copies editors and tools leave beside a file, never a trajectory."""


def _note_passed_over(name: str, left_out: list[_LeftOut], unread_names: dict[str, str],
                      noted: set[tuple[str, str]], passed_over: list[_LeftOut],
                      passed_over_by_name: list[tuple[str, dict[str, int]]] | None,
                      say_them: bool = True) -> None:
    """Say (``say_them``) and keep for the summary what the walk of the input ``name`` left
    out and passed over for its name, but what an earlier input's walk did (``noted``,
    kept up to date): a directory given twice, or within another given, counted and said
    each such file once for each walk."""
    fresh = []
    for left in sorted(left_out):
        key = (_entry(left.file), left.why)
        if key not in noted:
            noted.add(key)
            fresh.append(left)
    unread = {}
    for path, ending in unread_names.items():
        key = (_entry(path), "")
        if key not in noted:
            noted.add(key)
            unread[path] = ending
    if say_them:
        for path, why, _ in fresh:
            say(f"vthread scan: {path}: left out: {why}")
        if unread:
            # (runs saved as runs.jsonlines went unread in silence)
            say(f"vthread scan: {name}: {_unread_names_said(unread)}")
    passed_over.extend(fresh)
    if unread and passed_over_by_name is not None:
        passed_over_by_name.append((name, _by_ending(unread)))


def _entry(path: str) -> str:
    """The directory entry ``path`` names, however its folder was reached (its folder's real
    path and its own name): the same entry found by two walks is one, and two links to one
    target (two names for /dev/null) are two (the second went unsaid, from either list)."""
    folder, name = os.path.split(path)
    return os.path.join(os.path.realpath(folder or "."), name)


def _by_ending(unread_names: dict[str, str]) -> dict[str, int]:
    """The files of ``unread_names`` (path -> ending) counted by ending, commonest first."""
    counts: dict[str, int] = {}
    for ending in unread_names.values():
        counts[ending] = counts.get(ending, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _unread_names_said(unread_names: dict[str, str]) -> str:
    """What to say of the files under a directory passed over for their names, though
    they look like trajectory files (``unread_names``: path -> ending): how many, by ending
    (the five commonest), and how to read one."""
    count = len(unread_names)
    commonest = list(_by_ending(unread_names).items())
    endings = ", ".join(f"{ending} {number:,}" for ending, number in commonest[:5])
    more = f", and {len(commonest) - 5:,} more endings" if len(commonest) > 5 else ""
    files = ("1 file named like a trajectory file" if count == 1
             else f"{count:,} files named like trajectory files")
    return (f"passed over {files} ({endings}{more}): a directory stands for the files "
            f"ending {_READ_ENDINGS} (the text ones optionally .gz); name a file to read it "
            "whatever its name")


def _named_as_an_input(name: str) -> bool:
    """Whether ``name`` ends as the files a directory FILE stands for do."""
    lower = name.lower()
    return (lower.removesuffix(".gz").endswith(_TRAJECTORY_SUFFIXES)
            or lower.endswith(_WHOLE_FILE_SUFFIXES))


def _swallowed_file(options: argparse.Namespace) -> str | None:
    """With no FILE given: what to say when the value of a key option names a file named
    as inputs are, which was most likely the FILE, taken as the key (``--id-key runs.json``,
    the key forgotten); None otherwise."""
    for flag, key in (("--id-key", options.id_key), ("--messages-key", options.messages_key)):
        # (a file named as inputs are: a directory, or a file of another name, may well
        # share its name with a key, as a "messages" directory does)
        if key is not None and _named_as_an_input(key) and os.path.isfile(key):
            return (f"no FILE given, and {flag} {key} names a file: give the key first, then "
                    f"the FILE ({flag} KEY {key})")
    return None


def _unit(units: set[str]) -> str:
    """What the inputs' lines are, in one word: ``line`` (JSONL), ``run`` (a JSON
    document's), ``sample`` (an Inspect log's), ``row`` (Parquet), or ``record`` for inputs
    of more than one."""
    return next(iter(units)) if len(units) == 1 else "line" if not units else "record"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _inputs(options: argparse.Namespace, passed_over: list[_LeftOut] | None = None,
            passed_over_by_name: list[tuple[str, dict[str, int]]] | None = None,
            empty_directories: dict[str, str] | None = None,
            ) -> tuple[list[str], frozenset[str], frozenset[str]] | None:
    """The files to read, those of them read one at a time (found in a directory FILE, or one
    of several inputs: see :func:`_tasks`), and those found in a directory FILE: the FILE
    arguments as
    given, a directory by the files under it (the records and summary this run writes left
    out); with none, standard input when it is a pipe or a file, else (or with --sample) the
    bundled sample. None after a usage error. The paths under a directory left out (not
    regular files, links to directories) are said, and added to ``passed_over`` with why;
    the files passed over for their names though named like trajectory files are said, and
    counted by ending in ``passed_over_by_name`` for each directory. A directory of several
    inputs with no trajectory file under it is among the files, and why it has none in
    ``empty_directories`` (its error record: :func:`_tasks`); a lone one is an error."""
    if passed_over is None:
        passed_over = []
    if options.sample:
        if options.files:
            say("vthread scan: error: --sample takes no FILE")
            return None
        return [str(SAMPLE)], frozenset(), frozenset()
    if options.files.count("-") > 1:
        # Standard input is read once: a second "-" would stand for nothing, silently.
        say("vthread scan: error: - (standard input) is given more than once")
        return None
    if options.files:
        if "" in options.files:
            # (Path("") is the working directory, which an empty argument never meant)
            raise _FatalError("an empty FILE argument names no file")
        written = _identities(_written_by(options))
        files: list[str] = []
        listed: set[str] = set()
        walked: set[str] = set()
        identities: dict[str, tuple[int, int]] = {}  # of the files found under directories
        found_in_walks: set[int] = set()  # the places in files of those (not named too)
        noted: set[tuple[str, str]] = set()  # paths left out or passed over, and why
        for name in options.files:
            overwritten: list[str] = []
            left_out: list[_LeftOut] = []
            unread_names: dict[str, str] = {}
            try:
                found = _files_under(name, written, overwritten, left_out, identities,
                                     unread_names)
            except _FatalError as error:
                if len(options.files) == 1 or not os.path.isdir(name):
                    raise
                # One of several inputs, a directory with no trajectory file under it (a
                # nightly run's folder left empty): its error record, as for a file of
                # several that cannot be read, and the others still read; what it holds is
                # in the summary, said by the record.
                if empty_directories is not None:
                    empty_directories[name] = str(error).removeprefix(f"{name}: ")
                _note_passed_over(name, left_out, unread_names, noted, passed_over,
                                  passed_over_by_name, say_them=False)
                files.append(name)
                continue
            _note_passed_over(name, left_out, unread_names, noted, passed_over,
                              passed_over_by_name)
            _check_only_records_overwritten(name, overwritten, written)
            if found != [name]:
                found = _without_records(found)
                if not found:
                    why = "is a directory holding only vthread scan's records, no trajectory file"
                    if len(options.files) == 1 or empty_directories is None:
                        # (a person who meant to read them back: vthread report refused the
                        # directory with no hint of how)
                        raise _FatalError(f"{name}: {why} (vthread report reads a records file "
                                          "named as such: vthread report FILE -o PAGE)")
                    empty_directories[name] = why
                    files.append(name)
                    continue
                listed.update(found)
                walked.update(found)
                found_in_walks.update(range(len(files), len(files) + len(found)))
            files += found
        files = _walked_once(files, found_in_walks, identities, passed_over)
        if len(files) > 1:
            # Many files (a directory, a shell glob of thousands): one that cannot be read
            # is its own error record, said, and the others are still read.
            listed.update(name for name in files if name != "-")
            _say_files_named_twice(files, identities)
        return files, frozenset(listed), frozenset(walked)
    swallowed = _swallowed_file(options)
    if swallowed is not None and (sys.stdin is None or _is_tty(sys.stdin)):
        say(f"vthread scan: error: {swallowed}")
        return None
    if swallowed is not None:
        say(f"vthread scan: warning: {swallowed}; reading standard input")
    if sys.stdin is None:
        # A job started with standard input closed (<&-) that named no FILE: an
        # error, not the sample's records passed off as its own.
        raise _FatalError("no FILE and there is no standard input (it is closed): name a "
                          "FILE, or - for standard input (--sample scans the bundled sample)")
    if not _is_tty(sys.stdin):
        return ["-"], frozenset(), frozenset()
    # Nothing piped in: a person at a terminal who typed `vthread scan` to see what it does.
    say("vthread scan: no FILE and standard input is a terminal: scanning the bundled "
        "sample (vthread scan --sample)")
    return [str(SAMPLE)], frozenset(), frozenset()


def _without_records(found: list[str]) -> list[str]:
    """The files found in a directory but those holding ``vthread scan``'s own records (an
    earlier run's ``-o``, left beside the trajectories: each record would be an error
    record), its summary, a harness's SWE-bench predictions, or the files Inspect AI's
    eval_set writes beside its logs (no runs either), each said on stderr as it is passed
    over."""
    from vthread._cli_report import (
        holds_predictions,
        holds_records,
        holds_summary,
        inspect_bookkeeping,
    )

    kept = []
    for name in found:
        if holds_records(name, throughout=True):
            say(f"vthread scan: {name}: passed over: it holds vthread scan's records")
        elif holds_summary(name):
            say(f"vthread scan: {name}: passed over: it holds vthread scan's summary")
        elif holds_predictions(name):
            # (mini-swe-agent's preds.json, SWE-agent's all_preds.jsonl: each prediction was
            # an error record, failing --fail-on-error every night, one with a run's id)
            say(f"vthread scan: {name}: passed over: it holds SWE-bench predictions "
                "(instance_id and model_patch), not runs")
        elif (bookkeeping := inspect_bookkeeping(name)) is not None:
            # (each was an error record, an eval set's directory failing --fail-on-error)
            say(f"vthread scan: {name}: passed over: it is {bookkeeping}, not runs")
        else:
            kept.append(name)
    return kept


def _written_by(options: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The files the run writes, each as a message names it: the records' and the summary's
    (None where not asked for)."""
    return [("the output", options.output), ("the --summary file", options.summary_file)]


_Written = dict[tuple[int, int], tuple[str, str]]
"""The files this run writes that exist: (device, inode) -> (what it is, as a message names
it: "the output", "the --summary file"; its path as given)."""


def _identities(named: list[tuple[str, str | None]]) -> _Written:
    """Each of ``named`` ((what it is, path or None)) that is an existing file, by (device,
    inode)."""
    found: _Written = {}
    for what, path in named:
        if path is None:
            continue
        with contextlib.suppress(OSError):
            status = os.stat(path)
            found.setdefault((status.st_dev, status.st_ino), (what, path))
    return found


_TRAJECTORY_SUFFIXES: Final = (".jsonl", ".ndjson", ".json", ".traj")
"""Endings (before an optional ``.gz``) of the text files a directory FILE stands for."""
_WHOLE_FILE_SUFFIXES: Final = (".eval", ".parquet", ".pq")
"""Endings of the other files it stands for (Inspect logs, Parquet), never gzipped."""
_READ_ENDINGS: Final = ", ".join((*_TRAJECTORY_SUFFIXES, *_WHOLE_FILE_SUFFIXES))
"""Those endings as the messages about a directory list them."""

class _LeftOut(NamedTuple):
    """A path under a directory FILE that was not read, and why. ``unread_trajectory``: it
    is a trajectory file by its name (compressed in a way vthread does not read, a dangling
    link, a FIFO), so that ``--fail-on-error`` fails a gate that did not check it; a link to
    a directory, or a file removed meanwhile, is not."""

    file: str
    why: str
    unread_trajectory: bool


class _Compression(NamedTuple):
    compressor: str
    magic: bytes  # the bytes a file compressed by it begins with
    command: str  # what decompresses it to standard output
    piped: str | None = None  # what decompresses it read from a pipe, when not the command


_UNREAD_COMPRESSIONS: Final = {  # by the name ending a compressed file has
    ".bz2": _Compression("bzip2", b"BZh", "bzcat"),
    ".xz": _Compression("xz", b"\xfd7zXZ\x00", "xzcat"),
    ".zst": _Compression("zstd", b"\x28\xb5\x2f\xfd", "zstdcat"),
    ".lz4": _Compression("lz4", b"\x04\x22\x4d\x18", "lz4cat"),
    ".7z": _Compression("7-Zip", b"7z\xbc\xaf\x27\x1c", "7z e -so"),
    ".zstd": _Compression("zstd", b"\x28\xb5\x2f\xfd", "zstdcat"),
    ".lzma": _Compression("lzma", b"\x5d\x00\x00", "xzcat --format=lzma"),
    ".z": _Compression("compress", b"\x1f\x9d", "uncompress -c"),
    ".zip": _Compression("zip", b"PK\x03\x04", "unzip -p", "funzip"),
    ".br": _Compression("brotli", b"", "brotli -dc"),  # no magic: told by its name alone
}
"""Compressions vthread does not read (gzip alone is read), known by a file's first bytes
and, under a directory, by a trajectory file's name ending in them (``runs.jsonl.zst``)."""


def _unread_compression(head: bytes) -> _Compression | None:
    """The compression vthread does not read that a file beginning with ``head`` has, else
    None. A bzip2 stream's magic is checked with its level digit and first block's magic,
    so that no text is taken for one."""
    for compression in _UNREAD_COMPRESSIONS.values():
        if compression.magic and head.startswith(compression.magic) and (
                compression.compressor != "bzip2" or (
                head[3:4].isdigit() and head[4:10] == b"1AY&SY")) and (
                compression.compressor != "lzma" or _lzma_dictionary(head)):
            return compression
    return None


def _lzma_dictionary(head: bytes) -> bool:
    """Whether an lzma header's dictionary size (bytes 1-4, little-endian) is one xz and
    lzma write, a power of two from 4 KiB to 1 GiB, so that three bytes (``]`` and two
    NULs, a damaged line's start) are not taken for one."""
    size = int.from_bytes(head[1:5], "little")
    return len(head) >= 5 and 1 << 12 <= size <= 1 << 30 and size & (size - 1) == 0


def _compression_named(name: str) -> _Compression | None:
    """The compression vthread does not read that a trajectory file named ``name`` has by
    its name (``runs.jsonl.zst``), else None."""
    lower = name.lower()
    return next((compression for ending, compression in _UNREAD_COMPRESSIONS.items()
                 if lower.endswith(ending)
                 and lower[: -len(ending)].removesuffix(".gz").endswith(
                     (*_TRAJECTORY_SUFFIXES, *_WHOLE_FILE_SUFFIXES))),
                None)


def _gzipped_whole_file(name: str) -> bool:
    """Whether ``name`` is an Inspect log or a Parquet file gzipped (``log.eval.gz``), which
    vthread reads only as it was written."""
    lower = name.lower()
    return lower.endswith(".gz") and lower[:-3].endswith(_WHOLE_FILE_SUFFIXES)


def _unread_compression_said(name: str, compression: _Compression, twice: bool = False
                             ) -> str:
    """Why ``name`` (a FILE argument, ``-`` for standard input) is not read, and what to do.
    ``twice``: it is gzip, and what it decompresses to is compressed again."""
    command = compression.command
    if twice:
        inner = compression.piped or command
        how = (f"... | gzip -dc | {inner} | vthread scan -" if name == "-"
               else f"gzip -dc {name} | {inner} | vthread scan -")
        return (f"{input_label(name)}: gzip of data compressed again with "
                f"{compression.compressor}, which vthread does not read (a gzip stream is "
                f"read once): decompress it first ({how})")
    how = (f"... | {compression.piped or command} | vthread scan -" if name == "-"
           else f"{command} {name} | vthread scan -")
    inspect = (" (an Inspect log, .eval, is a zip: save it to a file named .eval, which "
               "vthread reads)" if compression.compressor == "zip" else "")
    return (f"{input_label(name)}: compressed with {compression.compressor}, "
            f"which vthread does not read (gzip alone is): decompress it first ({how})"
            f"{inspect}")


def _check_only_records_overwritten(directory: str, overwritten: list[str],
                                    written: _Written) -> None:
    """Refuse to write the records or the summary over a file found under an input directory
    unless it is empty or holds an earlier run's records or summary (``-o runs/records.jsonl``
    or ``--summary runs/summary.json`` run again): any other file there is a trajectory this
    run was asked to read, which writing would destroy unread (it was left out of the scan
    and written over, silently)."""
    if not overwritten:
        return  # the usual case, without importing the report module (and hashlib) at start
    from vthread._cli_report import earlier_output_problem

    given = {os.path.normpath(name) for _, name in written.values()}
    # (the file found by the name it was given first: its other names are links to it)
    for path in sorted(overwritten, key=lambda path: os.path.normpath(path) not in given):
        # (every line, as the directory's listing tells the records it passes over)
        problem = earlier_output_problem(path, throughout=True)
        if problem is not None:
            raise _FatalError(f"{_written_as(path, written)} is a file under the input "
                              f"{directory} that holds neither records nor a summary of "
                              f"vthread scan (it {problem}); writing it would destroy it "
                              "(choose another path)")


def _written_as(path: str, written: _Written) -> str:
    """How a message names the written file found at ``path`` under an input directory: as
    the option that names it, by the path given, and by ``path`` too where that is another
    name for it (a link, a relative path): "the --summary file s.json (there as ./l.json)"."""
    with contextlib.suppress(OSError):
        status = os.stat(path)
        what, given = written.get((status.st_dev, status.st_ino), ("the output", path))
        if os.path.normpath(given) == os.path.normpath(path):
            return f"{what} {given}"
        return f"{what} {given} (there as {path})"
    return f"the output {path}"


def _destroys_a_listed_input(path: str, names: list[str]) -> bool:
    """Whether writing ``path`` would destroy a file under one of the input directories
    ``names`` (see :func:`_check_only_records_overwritten`)."""
    written = _identities([("the --summary file", path)])
    for name in names:
        overwritten: list[str] = []
        with contextlib.suppress(_FatalError):
            _files_under(name, written, overwritten)
        try:
            _check_only_records_overwritten(name, overwritten, written)
        except _FatalError:
            return True
    return False


_UNLISTED: Final = "a directory that "
"""How a subdirectory left out because it cannot be listed is said, before why."""


def trajectory_files(name: str) -> list[str]:
    """The files an input FILE stands for, as the scan lists them: itself, or a directory's
    trajectory files (a directory holding none: itself, whose reading then says so)."""
    try:
        return _files_under(name, {})
    except _FatalError:
        return [name]


def runs_read_again(files: list[str], format_: str | None, messages_key: str | None,
                    id_key: str | None
                    ) -> Iterator[tuple[str, int, Callable[[], _ReadAgain | None]]]:
    """Each line (run) of ``files`` as ``(file, line, read)``, for a reader of a few runs
    again (``vthread report``'s timelines): ``read()`` gives the run's native messages and
    the source message of each (None when native), read as the scan reads them, or None
    for a line that is no thread or too large for the memory left. Each file must still be
    a regular file, and is read on its own; an input that changed since it was scanned
    (gone, unreadable, in another format) ends the runs."""
    reading = _Reading(format_, {}, strict=False, count_tokens=False,
                       messages_key=messages_key, id_key=id_key)
    every = frozenset(files)
    try:
        for task in _tasks(files, reading, _Listing(listed=every, walked=every)):
            if task.broken is None:
                for index, line in enumerate(task.lines):
                    yield task.label, task.first_line + index, partial(_read_again, task, line)
    except (_FatalError, OSError):
        return


_ReadAgain = tuple[list[dict[str, Any]], list[int] | None]
"""A run read again (:func:`runs_read_again`): its native messages, and the source message
of each (None when native)."""


def _read_again(task: _Task, line: bytes) -> _ReadAgain | None:
    try:
        read = _read_thread(line, True, task.format, task.messages_key, task.id_key,
                            declared_wins=task.declared_wins)
    except MemoryError:
        return None
    return None if isinstance(read, _Bad) else (read[1], read[2])


def _files_under(name: str, written: _Written,
                 overwritten: list[str] | None = None,
                 left_out: list[_LeftOut] | None = None,
                 identities: dict[str, tuple[int, int]] | None = None,
                 unread_names: dict[str, str] | None = None) -> list[str]:
    """``[name]``, or for a directory the trajectory files under it at any depth, in sorted
    path order: hidden files and directories (names beginning with "."), anything that is no
    regular file (a dangling link, a FIFO: appended with why to ``left_out``, for the caller
    to say), and the files this run writes (``written``: (device, inode) pairs; an earlier
    run's records left in the directory, appended to ``overwritten`` for the caller to
    check) left out; links to directories not followed, so a link cycle cannot loop. A
    directory holding none is a fatal error naming it, not a silent empty scan. The
    (device, inode) of each file found goes into ``identities`` when given, and the files
    passed over for their names go into ``unread_names`` (path -> ending)."""
    if name == "-" or not Path(name).is_dir():
        return [name]
    found = []

    def unlisted(error: OSError) -> None:
        # A directory that cannot be listed holds files that would go unread: an error, as
        # a file that cannot be read is (it was passed over in silence, exit status 0). One
        # under the input is left out, said, and fails --fail-on-error, as an unread file
        # under it is (a root-owned lost+found at a mount's root made the whole input one
        # error); one removed meanwhile (a harness's clean-up) held nothing to read.
        where = error.filename if error.filename is not None else name
        if isinstance(error, (FileNotFoundError, NotADirectoryError)):
            if left_out is not None:
                left_out.append(_LeftOut(where, "removed while the directory was listed",
                                         unread_trajectory=False))
            return
        why = f"cannot be listed: {error.strerror or error}"
        if left_out is not None and os.path.normpath(where) != os.path.normpath(name):
            left_out.append(_LeftOut(where, f"{_UNLISTED}{why}; the files under it are "
                                     "not read", unread_trajectory=True))
            return
        raise _FatalError(f"{where}: {why}")

    for root, directories, files in os.walk(name, onerror=unlisted):
        directories[:] = [d for d in directories if not d.startswith(".")]
        if left_out is not None:
            left_out.extend(
                _LeftOut(os.path.join(root, d), "a link to a directory, not followed (name "
                         "the directory itself to scan it)", unread_trajectory=False)
                for d in directories if os.path.islink(os.path.join(root, d)))
        for file in files:
            if file.startswith("."):
                continue
            if _gzipped_whole_file(file) and left_out is not None:
                # (read as a text file it was a record per line of gzip's bytes, each
                # "not UTF-8": never named as an input, it was passed over in silence)
                left_out.append(_LeftOut(
                    os.path.join(root, file), "compressed with gzip, which vthread reads "
                    "for JSONL and JSON files only: decompress it first (gunzip -k)",
                    unread_trajectory=True))
                continue
            if not _named_as_an_input(file):
                compressed = _compression_named(file)
                if compressed is not None and left_out is not None:
                    # (a trajectory file by its name, passed over in silence)
                    left_out.append(_LeftOut(
                        os.path.join(root, file), f"compressed with {compressed.compressor}, "
                        f"which vthread does not read: decompress it first "
                        f"({compressed.command})", unread_trajectory=True))
                elif unread_names is not None and _looks_like_a_trajectory(file):
                    ending = os.path.splitext(file)[1].lower() or "no ending"
                    unread_names[os.path.join(root, file)] = ending
                continue
            path = os.path.join(root, file)
            try:
                status = os.stat(path)  # through a link: a dangling one raises
            except OSError as error:
                if left_out is not None:
                    try:
                        os.lstat(path)
                    except FileNotFoundError:
                        # Gone since the listing (a harness's clean-up): nothing to read.
                        left_out.append(_LeftOut(path, "removed while the directory was "
                                                 "listed", unread_trajectory=False))
                        continue
                    except OSError:
                        pass
                    left_out.append(_LeftOut(path, "cannot be read: "
                                             f"{error.strerror or error} (a dangling link?)",
                                             unread_trajectory=True))
                continue
            if not stat.S_ISREG(status.st_mode):
                if left_out is not None:
                    # A FIFO would wait for a writer, and a device is no trajectory.
                    left_out.append(_LeftOut(path, "not a regular file (a FIFO, a socket, a "
                                             "device)", unread_trajectory=True))
                continue
            if (status.st_dev, status.st_ino) not in written:
                found.append(path)
                if identities is not None:
                    identities[path] = (status.st_dev, status.st_ino)
            elif overwritten is not None:
                overwritten.append(path)
    if not found and overwritten:
        # Only the files this run writes: a trajectory among them is refused as such first.
        _check_only_records_overwritten(name, overwritten, written)
    if not found:
        # (the listing's own lines are said only once it returns: said here, with it)
        passed = f"; {_unread_names_said(unread_names)}" if unread_names else ""
        unread = [left for left in left_out or [] if left.unread_trajectory]
        if unread:
            shown = "; ".join(f"{left.file} is left out: {left.why}" for left in unread[:5])
            more = f"; and {len(unread) - 5:,} more" if len(unread) > 5 else ""
            raise _FatalError(f"{name}: is a directory with no trajectory file vthread can "
                              f"read under it: {shown}{more}{passed}")
        if passed:
            raise _FatalError(f"{name}: is a directory with no trajectory file under it"
                              f"{passed}")
        raise _FatalError(f"{name}: is a directory with no trajectory file under it "
                          f"(files ending {_READ_ENDINGS}, the text ones optionally .gz)")
    return sorted(found)


def _what_was_scanned(files: list[str]) -> str:
    """The summary's name for the input: the file, standard input, the sample, or a count."""
    if len(files) != 1:
        return f"{len(files)} files"
    name = files[0]
    if name == "-":
        return "standard input"
    if name == str(SAMPLE):
        return f"the bundled sample ({name})"
    return name


def _check_not_an_input(output: str, files: list[str], what: str = "the output") -> None:
    """Refuse an output path (``what``: "the output", "the --summary file") that is one of
    the inputs (the same file, a symbolic or a hard link to it): opening it for writing
    would empty the input before it is read."""
    label = input_written_over(output, files)
    if label is not None:
        raise _FatalError(f"{what} {output} is the input {label}; writing it would "
                          f"destroy the input before it is read (choose another path)")


def overwrite_refusal(output: str, what: str) -> str | None:
    """Why writing the output path ``output`` (``what``: "the output", "the --summary file")
    is refused, or None: it is a file that holds what vthread does not write there
    (:func:`vthread._cli_report.earlier_output_problem`), most likely runs given where the
    option's path was due (``--summary runs.json a.jsonl`` wrote over a published run set:
    a tester's case). An earlier run's records, summary or page is written over; this
    process's own standard output or error (``-o /dev/stdout``) is written through, what
    else it holds kept."""
    try:
        status = os.stat(output)
    except OSError:
        return None  # (not there; or out of reach, which writing it then says)
    if not stat.S_ISREG(status.st_mode) or status.st_size == 0 or own_stream(status):
        return None  # (the usual case, without importing the report module at start)
    from vthread._cli_report import earlier_output_problem

    problem = earlier_output_problem(output)
    if problem is None:
        return None
    return (f"{what} {output} exists and {problem}: vthread writes over no such file. Runs "
            "given where the option's path was due? Give them as a FILE, and the option a "
            "new path; a file that is yours to lose, remove it first")


def _check_overwrite(output: str, what: str) -> None:
    """Refuse to write an output over what vthread did not write (:func:`overwrite_refusal`)."""
    refusal = overwrite_refusal(output, what)
    if refusal is not None:
        raise _FatalError(refusal)


def _check_summary_apart(summary: str, output: str | None) -> None:
    """Refuse a ``--summary`` file that is the ``--output`` file (the same path, or a link
    to it), or, with no ``--output``, the file standard output was sent to
    (``--summary out.txt > out.txt``): the summary, written last, would replace every
    record."""
    same = output is not None and os.path.realpath(summary) == os.path.realpath(output)
    try:
        target = os.stat(summary)
    except OSError:
        target = None  # not made yet: only the paths can tell
    if target is not None:
        if not stat.S_ISREG(target.st_mode):
            return  # /dev/null, a pipe: nothing there to lose
        with contextlib.suppress(OSError, ValueError, AttributeError):
            # (AttributeError, ValueError: no standard output, or one with no descriptor)
            records = os.stat(output) if output is not None else os.fstat(
                sys.stdout.fileno())
            same = same or (records.st_dev, records.st_ino) == (target.st_dev, target.st_ino)
    if same:
        where = f"the --output file {output}" if output is not None else (
            "the file standard output goes to")
        raise _FatalError(f"the --summary file {summary} is {where}; the summary would "
                          "replace the records (choose another path)")


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _output(path: str | None, *, anywhere: bool = False) -> BinaryIO:
    """Where the records go: standard output, or a file (a gzip file for a path ending
    ``.gz``, as the inputs are read; a Parquet file of records) made at the first record
    (:class:`_PendingOutput`). An ``OSError`` when the file could not be written."""
    if not path:
        return sys.stdout.buffer
    if is_fifo(path):
        fifo = open_fifo(path)  # now: a reader waiting is given its records as they come
        return cast(BinaryIO, _PendingOutput(lambda: _open_output(path, anywhere, fifo),
                                             held=fifo))
    why = unwritable(path)
    if why is not None:
        raise OSError(why)
    return cast(BinaryIO, _PendingOutput(lambda: _open_output(path, anywhere)))


def _open_output(path: str, anywhere: bool, opened: BinaryIO | None = None) -> BinaryIO:
    """The records' file at ``path``, as its name says: Parquet, gzip or JSONL. ``opened``:
    the FIFO at ``path`` already open (:func:`vthread._cli_main.open_fifo`), written through
    (its owner closes it); only the Parquet writer opens the path again itself."""
    if is_parquet(path):
        from vthread._cli_parquet import ParquetRecords

        return cast(BinaryIO, ParquetRecords(path, anywhere=anywhere))
    if path.lower().endswith(".gz"):
        import gzip

        # Level 6, gzip's own default: level 9 costs several times the time for a few
        # percent; no timestamp in the header, so the same records written to the same
        # path make the same bytes.
        if opened is not None:
            return cast(BinaryIO, gzip.GzipFile(fileobj=opened, mode="wb", compresslevel=6,
                                                mtime=0))
        return cast(BinaryIO, gzip.GzipFile(path, "wb", compresslevel=6, mtime=0))
    return opened if opened is not None else open(path, "wb")


class _PendingOutput:
    """An ``--output`` file made (or emptied) at the first record written to it, or when a
    finished scan closes it: a scan that fails before any record (a format conflict, an
    unreadable input, Ctrl-C) leaves a file already at the path as it was."""

    def __init__(self, make: Callable[[], BinaryIO], held: BinaryIO | None = None) -> None:
        self._make = make
        self._file: BinaryIO | None = None
        self._held = held  # a FIFO opened at the start, closed with the records' file

    def _opened(self) -> BinaryIO:
        if self._file is None:
            self._file = self._make()
        return self._file

    def write(self, data: bytes) -> int:
        return self._opened().write(data) if data else 0

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """The scan finished: the file holds its records (none makes an empty file)."""
        try:
            self._opened().close()
        finally:
            if self._held is not None:
                self._held.close()

    def abandon(self) -> None:
        """The scan failed: the records written so far are kept; none, no file is made."""
        try:
            if self._file is not None:
                self._file.close()
        finally:
            if self._held is not None:
                self._held.close()


def _close(out: BinaryIO, path: str | None, progress: _Progress | None,
           finished: bool = True) -> None:
    """Flush the records (close an --output file; of a scan not ``finished``, one made only
    if a record was written); a failure is a :class:`_WriteError`."""
    if progress is not None:
        progress.clear()
    try:
        if isinstance(out, _PendingOutput) and not finished:
            out.abandon()
        elif path:
            out.close()
        else:
            out.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _WriteError(error.strerror or str(error)) from error


def _close_quietly(out: BinaryIO, path: str | None, progress: _Progress | None) -> None:
    """:func:`_close` on the way out of a run that already failed: a second failure adds
    nothing to the message given."""
    try:
        _close(out, path, progress, finished=False)
    except (OSError, _WriteError):
        if path:
            with contextlib.suppress(OSError):
                # Closed already by the failed close (its buffer dropped).
                out.abandon() if isinstance(out, _PendingOutput) else out.close()


def _check_readable(name: str) -> None:
    if name == "-":
        if sys.stdin is None:
            raise _FatalError("-: there is no standard input")
        return
    try:
        status = os.stat(name)
    except OSError as error:
        if name == str(SAMPLE):
            raise _FatalError(f"the bundled sample {name} is missing from this "
                              "installation") from None
        # (a link cycle is no missing file: "too many levels of symbolic links")
        why = ("no such file" if isinstance(error, FileNotFoundError)
               else (error.strerror or str(error)).lower())
        raise _FatalError(f"{name}: {why}") from None
    if stat.S_ISDIR(status.st_mode):
        raise _FatalError(f"{name}: is a directory")
    if not os.access(name, os.R_OK):
        raise _FatalError(f"{name}: permission denied")


# --------------------------------------------------------------------------- reading input


class _Progress:
    """tqdm's bar on stderr: the share of the input read (when every size is known) and the
    lines done.

    The bar moves only when a chunk's records have been written, to the input offset that
    chunk was read to. Offsets are taken when a chunk is cut, while its file is still open,
    and queued: with --jobs the reading runs ahead of the writing, and by the time a chunk's
    records are out its file may be closed (asking a closed file where it is crashed the
    hand-written display this replaces).
    """

    def __init__(self, stream: TextIO, files: list[str]) -> None:
        # tqdm is imported here only: `import vthread` and runs without a terminal never load it.
        from tqdm import tqdm

        # No monitor thread: with --jobs the other formats fork worker processes, and a
        # process that forks is best left without threads it did not need.
        tqdm.monitor_interval = 0
        sizes = [_progress_size(f) for f in files]
        self.by_bytes = None not in sizes
        total = sum(size or 0 for size in sizes)
        self.bar = tqdm(
            total=total if self.by_bytes else None, file=stream, desc="vthread scan",
            unit="B" if self.by_bytes else " lines", unit_scale=True,
            unit_divisor=1024 if self.by_bytes else 1000, leave=False,
            mininterval=PROGRESS_INTERVAL, dynamic_ncols=True,
        )
        self.read_to: deque[int] = deque()  # input offset each chunk handed out was read to

    def chunk_read(self, offset: int) -> None:
        """A chunk was cut with the input read up to ``offset`` (over all files)."""
        self.read_to.append(offset)

    def chunk_done(self, lines: int, chunks: int = 1) -> None:
        """The oldest ``chunks`` chunks' records are written; ``lines`` in all so far."""
        offset = self.bar.n
        for _ in range(chunks):
            offset = self.read_to.popleft() if self.read_to else offset
        done = offset if self.by_bytes else lines
        if self.by_bytes:
            self.bar.set_postfix_str(f"{lines:,} lines", refresh=False)
        self.bar.update(max(0, done - self.bar.n))

    def clear(self) -> None:
        self.bar.close()


class GzipStream:
    """The decompressed bytes of a gzip file (one or more members), as far as they decompress.

    ``gzip.GzipFile`` loses what it decoded in the read that meets a broken stream (junk after
    the last member, a file cut short), so whole megabytes of good lines vanished with it.
    This reader hands out every byte that decompresses, then ends; ``broken`` then says where
    and why the stream broke. Zero bytes between or after members are skipped, as ``gzip``
    and ``zcat`` do.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.decoder: Any = None  # the current member's zlib decoder; None between members
        self.input = b""  # compressed bytes read but not yet decoded
        self.offset = 0  # the file offset of self.input's first byte
        self.broken: str | None = None
        self.dropped = 0  # bytes of an incomplete last line dropped (set by _chunks)
        self.ended = False
        self.ahead = b""  # decompressed bytes read by :meth:`head`, handed out first

    def head(self) -> bytes:
        """The first decompressed bytes (a block), read now and handed out again by the next
        :meth:`read`."""
        if not self.ahead:
            self.ahead = self.read()
        return self.ahead

    def read(self, size: int = READ_BYTES) -> bytes:
        """Up to about ``size`` decompressed bytes; b"" at the end (clean or broken)."""
        if self.ahead:
            ahead, self.ahead = self.ahead, b""
            return ahead
        while not self.ended:
            if self.decoder is None:  # between members: zero padding, a member, or junk
                while True:
                    # Zeros are dropped as they are read (stripping all that was read again
                    # at every read made long padding quadratic: 64 MB of zeros took 42 s).
                    stripped = self.input.lstrip(b"\0")
                    self.offset += len(self.input) - len(stripped)
                    self.input = stripped
                    if len(self.input) >= 2 or not self._fill():
                        break
                if not self.input:
                    self.ended = True  # a clean end
                    break
                if not self.input.startswith(GZIP_MAGIC):
                    self._break(_CUT_SHORT if self.input == GZIP_MAGIC[:1]
                                else "junk after the last gzip member")
                    break
                self.decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
            if not self.input and not self._fill():
                # The file ends inside a member: what the decoder still holds, then the break.
                data = self.decoder.flush()
                if not self.decoder.eof:
                    self._break(_CUT_SHORT)
                self.decoder = None
                if data:
                    return cast(bytes, data)
                continue
            before = self.decoder.copy()  # zlib keeps nothing it decoded in a call that fails
            try:
                data = self.decoder.decompress(self.input, max(size, 1))
            except zlib.error as error:
                data = self._decoded_before_fault(before)
                self._break(f"corrupt gzip data ({error})")
                return data
            rest = self.decoder.unconsumed_tail or self.decoder.unused_data
            self.offset += len(self.input) - len(rest)
            self.input = rest
            if self.decoder.eof:
                self.decoder = None
            if data:
                return cast(bytes, data)
        return b""

    def _decoded_before_fault(self, decoder: Any) -> bytes:
        """What ``decoder`` (the state before a call that failed) decodes of ``self.input``
        before the byte it fails at, which :attr:`offset` is then moved to: fed in pieces,
        each on a copy, a failing piece tried again in smaller ones down to single bytes.
        Without this a member whose checksum is wrong lost every line decoded in the call
        that met it (up to a megabyte), and a small file all of its lines."""
        decoded = []
        try:
            # Output the decoder holds from the read before (the rest of a match cut at the
            # read's size), which a failing piece would take down with it.
            trial = decoder.copy()
            decoded.append(trial.decompress(b""))
            decoder = trial
        except zlib.error:
            pass
        position, step = 0, 4096
        while position < len(self.input):
            trial = decoder.copy()
            try:
                decoded.append(trial.decompress(self.input[position : position + step]))
            except zlib.error:
                if step == 1:
                    break
                step //= 16
                continue
            decoder = trial
            position += step
        self.offset += min(position, len(self.input))
        return b"".join(decoded)

    def _fill(self) -> bool:
        """Read more compressed bytes; False at the end of the file."""
        more = self.raw.read(READ_BYTES)
        self.input += more
        return bool(more)

    def _break(self, why: str) -> None:
        self.broken = f"gzip stream broken at byte {self.offset:,} of the file: {why}"
        self.ended = True


def _progress_size(name: str) -> int | None:
    """A FILE argument's size in bytes as the progress bar counts it: None for standard
    input (``-`` names no file, even where a file of that name exists), 0 for a path that
    cannot be looked at now (removed since it was checked, or ``file/``): such a file gets
    its own error when it is read, and its size only moves a bar."""
    if name == "-":
        return None
    try:
        status = os.stat(name)
    except (OSError, ValueError):
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0  # (a directory: its error)


def _regular_size(raw: BinaryIO) -> int | None:
    """The size of the opened file ``raw`` when it is a regular file (not a pipe or a
    device), else None; asked of the descriptor, so that a file renamed meanwhile (log
    rotation) is not confused with the one now under its name."""
    try:
        status = os.fstat(raw.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def open_input(name: str, regular_only: bool = False
          ) -> tuple[BinaryIO | GzipStream, Callable[[], int],
                     Callable[[], int | None], int | None]:
    """(decompressed stream, position in the raw file, close, the raw file's size when it
    is a regular file) for a FILE argument; close returns the file's size as it closes it
    (None for standard input and anything not a regular file). ``regular_only``: anything
    but a regular file raises OSError, found without waiting (a file of a directory,
    replaced by a FIFO after the directory was listed, would wait for a writer forever)."""
    # sys.stdin is touched only for "-" (under CI there may be none); a file is closed by close()
    raw = (blocking_stdin(cast(io.BufferedReader, sys.stdin.buffer)) if name == "-"
           else opened_regular(name) if regular_only
           else open(name, "rb"))  # noqa: SIM115

    def position() -> int:
        try:
            return raw.tell()
        except (OSError, ValueError):
            return 0

    def close() -> int | None:
        if name == "-":
            return None
        size_now = _regular_size(raw)
        raw.close()
        return size_now

    size = None if name == "-" else _regular_size(raw)
    head = raw.peek(10)[:10] if hasattr(raw, "peek") else b""
    if _is_gzip(head[:3], name):
        stream = GzipStream(raw)
        inner = stream.head()[:10]
        compression = (_Compression("gzip", GZIP_MAGIC, "gzip -dc") if _is_gzip(inner[:3], "")
                       else _unread_compression(inner))
        if compression is not None:
            # Compressed twice (gzip of a .gz, or of an .xz): read as text, the inner stream's
            # bytes were split at every newline byte, each piece an error record.
            if name != "-":
                raw.close()
            raise _FatalError(_unread_compression_said(name, compression, twice=True))
        return stream, position, close, size
    compression = _unread_compression(head)
    if compression is None and name != "-":
        named = _compression_named(os.path.basename(name))
        if named is not None and not named.magic:  # known by its name alone (brotli)
            compression = named
    if compression is not None and not _is_eval_log(name):
        if name != "-":
            raw.close()
        raise _FatalError(_unread_compression_said(name, compression))
    if name == "-" and _is_live(raw):
        return cast(BinaryIO, _LiveStream(raw)), position, close, size
    return raw, position, close, size


def _is_live(raw: io.BufferedReader) -> bool:
    """Whether standard input is a stream that may pause (a pipe, a terminal, a socket), not
    a file: one whose file descriptor ``select`` can watch."""
    try:
        return not stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False  # no file descriptor (a test's in-memory stream)


class _LiveStream:
    """Standard input from a pipe, read as its data comes: each read returns what is there
    (blocking only while nothing is), and :meth:`idle` says when the writer has paused, so
    that lines already read are scanned and their records written then, not held until a
    chunk fills or the stream ends (``tail -f log.jsonl | vthread scan -``, an agent
    harness writing a run at a time, a scan stopped by SIGTERM)."""

    IDLE_SECONDS: Final = 0.05
    """How long the writer must be silent before the lines read are scanned: short enough
    for a person watching, long enough that a fast writer (``cat``) never makes small
    chunks."""

    def __init__(self, raw: io.BufferedReader) -> None:
        self.raw = raw

    def read(self, size: int = -1) -> bytes:
        return self.raw.read1(size if size > 0 else READ_BYTES)

    def idle(self) -> bool:
        """Whether no data has come within :attr:`IDLE_SECONDS` (the last read took every byte
        buffered, so only the file descriptor can hold more)."""
        import select

        try:
            ready, _, _ = select.select([self.raw], [], [], self.IDLE_SECONDS)
        except (OSError, ValueError):
            return False
        return not ready


def _is_gzip(head: bytes, name: str) -> bool:
    """Whether a stream whose first bytes are ``head`` (up to 3) is gzip: it begins with the
    whole gzip header (magic and method), or it is named ``.gz`` and stops inside it (a
    file cut short). A JSONL file whose first line merely begins with byte 0x1f, or 0x1f
    0x8b, is text, and each of its lines gets its record."""
    if head.startswith(_GZIP_HEADER):
        return True
    return name.lower().endswith(".gz") and bool(head) and _GZIP_HEADER.startswith(head)


class _Transcoded:
    """A JSONL stream written in UTF-16 or UTF-32 (as JSON may be, with or without a
    byte-order mark: :func:`json.detect_encoding`), read as the UTF-8 it stands for, so that
    it splits into its lines at its newlines (split at the byte 0x0A, each line of a UTF-16
    file was cut one byte off, an error record for every line but the first and one for
    the trailing NUL). A lone surrogate passes through (as a JSON escape would) for the
    line's reader to judge. Bytes that are no text in the encoding end the stream as a
    broken gzip stream ends: every line before them is read, and :attr:`broken` says where
    (the error record after them; the line they are in, :attr:`dropped`, is not read)."""

    def __init__(self, source: _Replayed, encoding: str) -> None:
        import codecs

        self.source = source
        self.encoding = encoding
        self.decoder = codecs.getincrementaldecoder(encoding)("surrogatepass")
        self.consumed = 0  # bytes of the source decoded so far
        self.ended = False
        self.broken: str | None = None
        self.dropped = 0  # bytes of the incomplete line the break cut short

    def idle(self) -> bool:
        """Whether the stream's writer has paused (:meth:`_LiveStream.idle`) with no part of
        a character held back."""
        return not self.decoder.getstate()[0] and self.source.idle()

    def read(self, size: int = READ_BYTES) -> bytes:
        while not self.ended:
            block = self.source.read(size)
            try:
                text = self.decoder.decode(block, final=not block)
            except UnicodeDecodeError as error:
                # The decoder holds what it had of the last read (its state's bytes): what
                # precedes the fault in this block is text, and is handed out.
                held = len(self.decoder.getstate()[0])
                text = self.decoder.decode(block[:max(error.start - held, 0)])
                self.broken = (f"not {self.encoding.upper()} text: {error.reason} at byte "
                               f"{self.consumed + error.start - held:,} of the file (it "
                               f"opens as {self.encoding.upper()} and is read as such)")
                self.ended = True
                return text.encode("utf-8", "surrogatepass")
            self.consumed += len(block)
            self.ended = not block
            if text:
                return text.encode("utf-8", "surrogatepass")
        return b""


# A Parquet file opens with these bytes, then binary page headers (a byte below 0x09 among
# the next few: no JSONL line that happens to start with the word is taken for one).
_PARQUET_OPENING: Final = re.compile(rb"PAR1[^\n]{0,59}?[\x00-\x08]")
"""How Parquet bytes open: its mark, then binary bytes before any newline (a JSONL file
whose first line is ``PAR1`` and whose next holds a NUL is lines: it was refused)."""


def _opens_as_parquet(head: bytes) -> bool:
    """Whether a stream opening with ``head`` holds Parquet data (:data:`_PARQUET_OPENING`)."""
    return _PARQUET_OPENING.match(head) is not None


class _ParquetAsTextError(ValueError):
    """Parquet bytes where text was to be read: standard input, a file not named .parquet."""


def _transcoder_of(sniffed: _Replayed | _DocumentRuns) -> _Transcoded | None:
    """The :class:`_Transcoded` stream under what :func:`_sniffed_document` made, if any."""
    stream = sniffed.stream if isinstance(sniffed, _DocumentRuns) else sniffed
    rest = stream.rest if isinstance(stream, _Replayed) else stream
    return rest if isinstance(rest, _Transcoded) else None


def _text_encoding(head: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding a stream opening with ``head`` is written in (JSON's
    rule, :func:`json.detect_encoding`) when its first characters in it open JSON text:
    spaces, then a bracket, or spaces alone across the whole head; the first four of them
    ASCII. A file of NUL bytes, or
    of UTF-8 lines one of which merely holds a NUL among its first bytes (``\n\x00``, read
    as UTF-16, was the one character ``\n``: one record for two lines), stays bytes, each
    line its record. None for UTF-8, or for too few bytes to tell."""
    encoding = json.detect_encoding(head[:4]) if len(head) >= 2 else "utf-8"
    if encoding.startswith("utf-8"):
        return None
    opening = head[:_ENCODING_HEAD].decode(encoding, "ignore").lstrip("\ufeff")
    text = opening.lstrip(" \t\r\n")
    spaces_alone = not text and len(head) >= _ENCODING_HEAD
    # The first four characters ASCII (bytes read as UTF-16 by mistake make CJK of two
    # letters), no more: é in the first id is the text's own.
    return (encoding if opening[:4].isascii() and (text[:1] in ("[", "{") or spaces_alone)
            else None)


class _Replayed:
    """A stream whose first blocks were read ahead: those blocks (never joined: a first run
    of 150 MB is not copied again), then the rest of the stream."""

    def __init__(self, first: bytes | list[bytes],
                 rest: BinaryIO | GzipStream | _Transcoded) -> None:
        self.ahead = deque([first] if isinstance(first, bytes) else first)
        self.rest = rest

    def read(self, size: int = -1) -> bytes:
        while self.ahead:
            block = self.ahead.popleft()
            if block:
                return block
        return self.rest.read(size)

    def idle(self) -> bool:
        """Whether the stream's writer has paused (:meth:`_LiveStream.idle`)."""
        return (not self.ahead and isinstance(self.rest, _LiveStream | _Transcoded)
                and self.rest.idle())


class _DocumentRuns:
    """A JSON document read from its stream. An array of runs (its first element opens runs:
    :func:`vthread.documents.opens_runs`) is split by the core as its blocks arrive
    (:class:`_core.DocumentSplitter`), each run's text its line, so no Python object is made
    of the document and memory stays flat in its size; any other document is read whole.

    Each run is what ``json.loads`` makes of its text, so the records are those of the
    document read whole (a run the core declines, NaN or a lone surrogate, is read by Python).
    A document that breaks (cut short, not valid JSON from some run on, data after it) keeps
    the runs before the break, and :attr:`broken` then says where it breaks: nothing after a
    break is trusted to be split where its runs are, nor read."""

    def __init__(self, stream: BinaryIO | GzipStream | _Replayed,
                 messages_key: str | None) -> None:
        self.stream = stream
        self.messages_key = messages_key
        self.splitter = _core.DocumentSplitter(messages_key)
        self.head: list[bytes] = []  # the blocks read before the first run was found
        self.first: tuple[list[bytes], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None = None
        self.runs = 0  # runs handed out
        self.is_runs: bool | None = None  # whether it is an array of runs, once known
        # Where the document breaks, after its runs have been read (the error record after
        # theirs); None when it is whole.
        self.broken: str | None = None
        # Whether ``broken`` says what an Inspect log lacks: its record stands for no run.
        self.broken_is_note = False
        # Whether ``broken`` says the document is empty: read to its end, not cut short.
        self.empty = False
        self.ended = False  # the stream has been read to its end

    def start(self) -> bool:
        """Read until the first run is found: whether the document is an array of runs."""
        if self.is_runs is None:
            self.is_runs = self._find_first()
        return self.is_runs

    def _find_first(self) -> bool:
        held = 0
        while block := self.stream.read(READ_BYTES):
            self.head.append(block)
            held += len(block)
            _check_held(held)  # (a first run that never ends)
            if len(self.head) == 1 and b"\0" in block[:4]:
                return False  # UTF-16 or UTF-32 text: read whole, as json reads it
            found = self.splitter.feed(block)
            if found is None:
                return False
            if found[0]:
                self.first = found
                return self._opens_runs(found[0][0], bool(found[1][0]))
            if self.splitter.done:
                # Data after an array of no element (`[]` and then JSONL lines on standard
                # input): no array of runs, and nothing more is read to know it, so that a
                # stream that never ends is still read line by line.
                return False
        self.ended = True
        stop, closed, tail = self.splitter.finish()
        if tail is not None:
            # The document ends in its first element: a run when that element is whole, only
            # the closing bracket missing (else reading it whole says where it breaks).
            text, place = tail
            assert stop is not None  # an array that ends in an element is cut short
            if self._whole(text, place, 0, stop[1]) and self._opens_runs(text, False):
                self.first = ([text], np.array([True]), np.array(place, np.int64))
                _, (_, line, column) = stop
                self.broken = _break(line, column, "after run 1",
                                     "the document ends before its closing bracket")
                return True
            self.broken = None  # read whole, its one error record says where it breaks
            return False
        return closed and stop is None  # [] holds no runs; anything else is read whole

    def _opens_runs(self, text: bytes, read_by_core: bool) -> bool:
        if read_by_core:
            return True  # the core found it a run (it declines a plain element that is none)
        from vthread.documents import opens_runs

        try:
            return opens_runs(_element_value(text), self.messages_key)
        except RecursionError:
            # Too deep for json, but if JSON, a run of its own (as a deep JSONL line is):
            # whether it opens runs needs no more than whether it is an array, or an
            # object's keys.
            shallow = _shallow(text)
            return shallow is not None and opens_runs(shallow, self.messages_key)
        except ValueError:
            return False

    def whole(self) -> bytes:
        """The document's bytes, read to its end (once :meth:`start` found it no runs)."""
        parts = self.head
        if not self.ended:
            stream = self.stream
            source = stream.rest if isinstance(stream, _Replayed) else stream
            # (a file's first bytes, replayed, are in the head, and the rest is the file's)
            ahead = isinstance(stream, _Replayed) and bool(stream.ahead)
            # A file is as large as it is (JSONL named .json, runs one after another as jq
            # writes them: many runs, read whole); a pipe, a device, a gzip stream have no
            # size of their own, and must not take all the memory (a document that never
            # ends). (Asking a file for at most the limit made CPython reserve all of it
            # first: a MemoryError under ulimit -v for a document of 200 bytes.)
            sized = isinstance(source, io.BufferedReader) and _regular_size(source) is not None
            if sized and len(parts) == 1 and not ahead:
                return parts[0] + source.read()  # the rest at once
            held = sum(map(len, parts))
            while part := self.stream.read(READ_BYTES):
                parts.append(part)
                held += len(part)
                if not sized:
                    _check_held(held)
        return b"".join(parts)

    def runs_text(self) -> Iterator[bytes]:
        """Each run's text, in order; then :attr:`broken` is set when the document breaks."""
        if self.first is None:
            return  # [] holds no runs
        found, self.first, self.head = self.first, None, []
        since_run = 0  # bytes fed since the last block that ended a run
        while True:
            texts, plain, places = found
            places = places.reshape(-1, 3)
            whole = len(texts)
            for index in np.flatnonzero(~plain).tolist():
                # An element the core declines is read by Python when scanned; one that is
                # not JSON at all is where the document breaks.
                if not self._whole(texts[index], places[index].tolist(), self.runs + index):
                    whole = index
                    break
            yield from texts[:whole]
            self.runs += whole
            if whole < len(texts) or self.splitter.done or self.ended:
                break
            block = self.stream.read(READ_BYTES)
            if not block:
                self.ended = True
                break
            # The bytes fed since the last run ended bound the run the splitter holds: a
            # run that never ends must not take all the memory.
            since_run = len(block) + (since_run if not texts else 0)
            _check_held(since_run)
            fed = self.splitter.feed(block)
            if fed is None:  # the splitter declines only before the first run
                break
            found = fed
        if self.broken is None:
            last = self._finish()
            if last is not None:
                yield last

    def _finish(self) -> bytes | None:
        """After the last block: where the document breaks, and the run it ends in when that
        run is whole (only the closing bracket missing)."""
        stop, _, tail = self.splitter.finish()
        if stop is None:
            return None
        why, (_, line, column) = stop
        if why == "after":
            self.broken = _break(line, column, "after its closing bracket", "Extra data")
        elif why == "empty":
            self.broken = _break(line, column, f"in run {self.runs + 1}", "Expecting value")
        elif tail is None or self._whole(*tail, self.runs, stop[1]):
            if tail is not None:
                self.runs += 1
            self.broken = _break(line, column, f"after run {self.runs}",
                                 "the document ends before its closing bracket")
            return None if tail is None else tail[0]
        return None

    def _whole(self, text: bytes, place: Any, runs: int, end: Any = None) -> bool:
        """Whether the element ``text`` at ``place`` (offset, line, column) is JSON Python
        reads; when it is not, :attr:`broken` says where it breaks, after ``runs`` runs.
        ``end``: the place of the document's end, for the element it ends in (whose trailing
        space the split left out): a break at the element's end is there."""
        try:
            _element_value(text)
        except RecursionError:
            if _core.python_reads_json(text):
                # JSON nested past what Python's json reads: the run is an error record of
                # its own, as such a JSONL line is, and the split goes on past it.
                return True
            # Nor is it JSON: no telling where its structure ends, so the document is not
            # read past it.
            _, line, column = place
            self.broken = _break(line, column, f"in run {runs + 1}",
                                 "nested too deeply to read, and not JSON")
            return False
        except ValueError as error:
            if isinstance(error, json.JSONDecodeError):
                at = len(error.doc[:error.pos].encode("utf-8", "surrogatepass"))
                reason = error.msg
            elif isinstance(error, UnicodeDecodeError):
                at, reason = error.start, f"not UTF-8 ({error.reason})"
            else:
                at, reason = 0, str(error)
            # The element the document ends in, broken at its end or in a string left open:
            # the document is cut short (a .traj copied while still being written).
            cut = end is not None and (at >= len(text)
                                       or reason == "Unterminated string starting at")
            if end is not None and at >= len(text):
                _, line, column = end
            else:
                _, line, column = place
                before = text[:at]
                # Characters as json counts them: its text is the UTF-8 decoded with
                # surrogatepass, so an encoded surrogate is one character, not three.
                if (newlines := before.count(b"\n")):
                    line += newlines
                    column = len(before[before.rfind(b"\n") + 1:].decode("utf-8",
                                                                          "surrogatepass")) + 1
                else:
                    column += len(before.decode("utf-8", "surrogatepass"))
            where = f"in run {runs + 1}" + (", which the document ends inside: cut short?"
                                            if cut else "")
            self.broken = _break(line, column, where, reason)
            return False
        return True


def _element_value(text: bytes) -> Any:
    """An element of a document as Python's ``json`` reads it there: the document's UTF-8
    (``json.loads`` of the element's bytes alone would guess UTF-16 from a NUL byte, and pass
    a byte-order mark)."""
    return loads_without_digit_limit(text.decode("utf-8", "surrogatepass"))


def _break(line: int, column: int, where: str, reason: str) -> str:
    """The error record of a document that breaks at ``line`` and ``column`` (``where``: in
    which run, or after which), for ``reason``."""
    return (f"not valid JSON: {reason}: line {line} column {column} of the document, {where}; "
            "the document is not read past there")


_ENCODING_HEAD: Final = 20
"""Bytes read before a stream's encoding is judged (unless a line or the stream ends first):
a pipe's or a gzip member's first read may hold one byte, or a byte-order mark alone."""


def _opened_as_text(stream: BinaryIO | GzipStream
                    ) -> tuple[bytes, BinaryIO | GzipStream | _Transcoded]:
    """The first bytes of ``stream`` (a read, and more while fewer than
    :data:`_ENCODING_HEAD` have come) and the stream the rest is read from: the UTF-8 of
    a stream written in UTF-16 or UTF-32 (:class:`_Transcoded`), both from its start, else
    the stream itself. Parquet bytes are refused (:class:`_ParquetAsTextError`)."""
    first = stream.read(READ_BYTES)
    parts = [first]
    while (len(first) < _ENCODING_HEAD and b"\n" not in first
           and (more := stream.read(READ_BYTES))):
        parts.append(more)
        first = b"".join(parts)
    if _opens_as_parquet(first):
        raise _ParquetAsTextError("it holds Parquet data (it opens with PAR1), which is read "
                                  "only from a file named .parquet (its footer, at its end, "
                                  "says where its rows are): save it to such a file")
    encoding = _text_encoding(first)
    if encoding is None:
        return first, stream
    transcoded = _Transcoded(_Replayed(first, stream), encoding)
    return transcoded.read(READ_BYTES), transcoded


def _sniffed_document(stream: BinaryIO | GzipStream, messages_key: str | None,
                      empty_is_runs: bool = True, ends: bool = False
                      ) -> _Replayed | _DocumentRuns:
    """Standard input, or a file not named as a document, as lines, or as the JSON document
    it is (as ``cat runs.json | vthread scan -`` pipes one, or a download saved without its
    ``.json``): pretty-printed (its first line is only
    ``[`` or ``{``: no JSONL line can be), or an array whose first element is a run (a run
    holding messages is no message, so no JSONL thread is one; a line of runs is read as the
    document it is, a block at a time). A document is read as a ``.json`` file is, not a line
    at a time (one error record per line of the document, or one thread of runs).
    ``empty_is_runs``: whether a first line ``[]`` is a document of no runs (standard input,
    where ``cat`` of an empty download pipes one) rather than a JSONL line of an empty
    thread (a file named as JSONL). ``ends``: the stream is a regular file's, which ends: a
    first line opening an array (not of arrays: a document's runs) whose first element is
    longer than the most one line may take is read as lines (its line then dropped, an
    error record, and the lines after it read), not the end of the scan it is on a
    stream."""
    first, text = _opened_as_text(stream)
    # A read of a pipe returns what has come, and one of a gzip file may end with a member:
    # read on until the first line is whole (or a read's worth of it has come), as the sniff
    # reads that line.
    parts = [first]
    while (b"\n" not in first.lstrip() and len(first) < READ_BYTES
           and (more := text.read(READ_BYTES))):
        parts.append(more)
        first = b"".join(parts)
    line, rest = _opening_line(first)
    # Whether a list of threads follows the first line (:func:`_jsonl_after`) is told by the
    # next line's opening: read on while it has begun and not yet said (a read that ends
    # just after its "[" read the file as JSONL, or as a document, by where it ended).
    while (_UNDECIDED_OPENING.fullmatch(rest.lstrip(b" \t\r\n")) and len(first) < 2 * READ_BYTES
           and (more := text.read(READ_BYTES))):
        parts.append(more)
        first = b"".join(parts)
        line, rest = _opening_line(first)
    if line in (b"[", b"{"):
        return _DocumentRuns(_Replayed(first, text), messages_key)
    if not line.startswith(b"[") or (_BARE_THREADS.match(line) and _jsonl_after(line, rest)):
        return _Replayed(first, text)
    document = _DocumentRuns(_Replayed(first, text), messages_key)
    # Read only until its first element is whole: a message makes the line a JSONL thread.
    try:
        opens_runs = document.start()
    except _LineTooLongError:
        if not ends or _BARE_THREADS.match(line):
            raise  # (a line opening an array of arrays is a document's runs, never a thread)
        return _Replayed(document.head, text)
    if opens_runs and (_holds_messages(document.first[0][0], messages_key)
                       if document.first is not None else empty_is_runs):
        return document
    return _Replayed(document.head, text)


_BARE_THREADS: Final = re.compile(rb"\[[ \t\r]*\[")
"""A line opening an array of arrays (threads' bare messages, as a document's runs)."""
_NEXT_BARE_THREADS: Final = re.compile(rb"(?:\xef\xbb\xbf)?\[[ \t\r\n]*\[")
"""A value after the first line opening an array of arrays (pretty-printed too), a byte-order
mark before it (``cat`` of files written with one)."""
_UNDECIDED_OPENING: Final = re.compile(
    rb"\xef(?:\xbb\xbf?)?|(?:\xef\xbb\xbf)?\[[ \t\r\n]*")
"""What follows the first line when it may yet open an array of arrays and has not said so:
a byte-order mark cut short, or "[" and spaces alone."""


def _jsonl_after(line: bytes, rest: bytes) -> bool:
    """Whether a first line that is a whole JSON value alone has more lines after it (as far
    as they have been read): JSONL, whose first line is an array of threads, not a document,
    which would end at that line and take the lines after it for data after its closing
    bracket, one error record for them all (as JSONL, the first line is one error record and
    the others are read). A document written a run a line (``[[...],`` first) is no JSON
    value alone, and lines that are each a list of threads (``cat`` of such documents) are
    one document of lists, as a ``.json`` file's are: the next line opening an array of
    arrays is no JSONL thread either (as JSONL, no line was read: the format of a file of
    such lines cannot be told)."""
    if not rest.strip():
        return False
    if _NEXT_BARE_THREADS.match(rest.lstrip(b" \t\r\n")):
        return False
    return _reads_as_json(line, bool(suspect_lines([line])))


def _holds_messages(text: bytes, messages_key: str | None) -> bool:
    """Whether the first element of a file's one-line array holds messages (under
    ``messages_key``, when given) or is a run's bare messages (an array): only then is a file
    named as JSONL read as a document of runs. This is stricter than a ``.json`` file's test
    (:func:`vthread.documents.opens_runs`, which takes an object that is no message, or a
    scalar, for a run): a JSONL thread whose messages have no ``type`` stays a thread."""
    from vthread.documents import run_messages

    value = _parse_alone(text)
    if _too_deep(value):
        value = _shallow(text)
    if isinstance(value, list):
        # A run's bare messages (as json.dumps of a list of threads writes them; an empty
        # run too): no message of a JSONL thread is a list.
        return True
    return isinstance(value, dict) and run_messages(value, messages_key) is not None


def _reads_as_json(line: bytes, suspect: bool) -> bool:
    """Whether ``line`` is JSON: Python's json reads it, or would but for its depth (the
    core's syntax walk says so)."""
    value = _parse(line, suspect)
    return not isinstance(value, _Bad) or (_too_deep(value) and _core.python_reads_json(
        line.removeprefix(_UTF8_MARK)))  # (which json passes over)


def _too_deep(value: Any) -> bool:
    """Whether :func:`_parse` gave up on a text for its depth alone (it may be JSON)."""
    return isinstance(value, _Bad) and value.reason.startswith(TOO_DEEP)


def _shallow(text: bytes) -> Any:
    """A JSON text too deep for Python's json, as far as telling runs from messages needs:
    ``[]`` for an array, an object of its top-level keys (each ``True``) for an object, None
    for anything else or no JSON."""
    top = _top_level(text)
    if top is None:
        return None
    opening, members = top
    if opening == b"{":
        return dict.fromkeys((_element_value(key) for key, _ in members), True)
    return [] if opening == b"[" else None


def _top_level(text: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
    """A JSON text's opening byte and its top-level object's members (each (key, value)
    text; none when it is no object), read by the core's syntax walk however deep the text
    is (a byte-order mark before it passed over, as json passes it over); None when it is
    no JSON."""
    text = text.removeprefix(_UTF8_MARK)
    members = _core.json_top_members(text)
    if members is None:
        return None
    return text.lstrip(b" \t\r\n")[:1], members


class _LineBlock(Sequence[bytes]):
    """A chunk's lines as one read of the file holds them: ``head`` (when not None, a line
    begun in an earlier read and ended in this one, assembled), then the lines
    ``data[starts[i]:ends[i]]``. The core reads them where they lie (``scan_lines`` with its
    ``block``), so a chunk costs no Python object per line; a line is copied out of the read
    only when Python reads it (its loop attributed, its error record made, its format told).
    Pickled (to a worker process) as the plain list of its lines: a read shared by several
    chunks of short lines is not sent with each."""

    __slots__ = ("data", "ends", "head", "starts")

    def __init__(self, head: bytes | None, data: bytes, starts: npt.NDArray[np.int64],
                 ends: npt.NDArray[np.int64]) -> None:
        self.head = head
        self.data = data
        self.starts = starts
        self.ends = ends

    def __len__(self) -> int:
        return len(self.starts) + (self.head is not None)

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        if isinstance(index, slice):
            return [self[row] for row in range(*index.indices(len(self)))]
        start, end = self._bounds(index)
        return self.data[start:end] if start >= 0 else cast(bytes, self.head)

    def __iter__(self) -> Iterator[bytes]:
        if self.head is not None:
            yield self.head
        data = self.data
        for start, end in zip(self.starts.tolist(), self.ends.tolist(), strict=True):
            yield data[start:end]

    def view(self, index: int) -> bytes | memoryview:
        """Line ``index`` where it lies, not copied: a read-only view of the read (the same
        memory the core's tape of it was parsed in), or the head line."""
        start, end = self._bounds(index)
        return memoryview(self.data)[start:end] if start >= 0 else cast(bytes, self.head)

    def core_rows(self) -> tuple[list[bytes], tuple[bytes, npt.NDArray[np.int64],
                                                    npt.NDArray[np.int64]]]:
        """The rows as ``_core.scan_lines`` takes them: its ``lines`` and its ``block``."""
        return ([] if self.head is None else [self.head]), (self.data, self.starts, self.ends)

    def _bounds(self, index: int) -> tuple[int, int]:
        """Where line ``index`` lies in the read; (-1, -1) for the head line."""
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("line index out of range")
        if self.head is not None:
            if index == 0:
                return -1, -1
            index -= 1
        return int(self.starts[index]), int(self.ends[index])

    def __reduce__(self) -> tuple[type[list[bytes]], tuple[list[bytes]]]:
        return list, (list(self),)


class _PausedBatch(list[bytes]):
    """A chunk's lines cut where the stream's writer paused (see :class:`_LiveStream`)."""


class _TooLarge(list[bytes]):
    """No lines: the next line did not fit the memory the process may use as it was read
    (the lines before it are the chunk before this), or was longer than ``line_limit``
    bytes, the most one line may take (:func:`line_limit`)."""

    def __init__(self, line_limit: int | None = None) -> None:
        super().__init__()
        self.line_limit = line_limit

    @classmethod
    def after(cls, error: MemoryError) -> _TooLarge:
        """The marker of the line a reading stopped at with ``error``."""
        return cls(error.args[0] if isinstance(error, _LineTooLongError) else None)


class _LineTooLongError(MemoryError):
    """A line longer than the most one line may take (``args[0]``, in bytes), as read."""


def line_limit() -> int:
    """The most bytes one line may take as it is read (:data:`LONGEST_LINE`, by default a
    quarter of the memory this process may have: the machine's, or its container's memory
    limit when lower). A line is held whole to be parsed, and its parse takes about as
    much again, so a longer one could not be scanned anyway; without a limit, a line that
    never ends (``vthread scan /dev/zero``) took memory until the kernel killed the process
    (or a ``ulimit -v`` ended it)."""
    if LONGEST_LINE is not None:
        return LONGEST_LINE
    return memory_limit() // 4


class _OverlongLine(list[bytes]):
    """No lines: in their place, a line of a file longer than the most one line may take
    (``line_limit``), ``length`` bytes, read to its end and dropped; its error record comes
    between the records of the lines around it."""

    def __init__(self, line_limit: int, length: int) -> None:
        super().__init__()
        self.line_limit = line_limit
        self.length = length


def _past_line_limit(held: int, skip: bool) -> int | None:
    """The most one line may take, when the ``held`` bytes of a line being assembled are
    more than it (checked as each read that ends no line is added: a line ending in the
    read that passes the limit is read), and ``skip``: the rest of the line is to be
    dropped (:func:`_rest_dropped`); None while they are within it. Past it, without
    ``skip``, :class:`_LineTooLongError`."""
    if held <= READ_BYTES or held <= (limit := line_limit()):
        return None
    if not skip:
        raise _LineTooLongError(limit)
    return limit


def _rest_dropped(stream: BinaryIO | GzipStream | _Replayed, held: int, limit: int
                  ) -> tuple[_OverlongLine | None, bytes]:
    """The rest of a line past ``limit``, ``held`` bytes of it read already (and let go),
    read from ``stream`` and dropped, a read at a time, nothing more held: its marker, and
    what the read that ended it held after it. The marker is None for the incomplete last
    line of a stream that broke off: the stream's own error record stands for it, as for a
    shorter such line (:func:`_last_line`)."""
    length = held
    while block := stream.read(READ_BYTES):
        end = block.find(b"\n")
        if end >= 0:
            return _OverlongLine(limit, length + end), block[end + 1:]
        length += len(block)
    if _broke_off_in(stream, length):
        return None, b""
    return _OverlongLine(limit, length), b""


def _overlong_said(line: _OverlongLine) -> str:
    """Why a line dropped as longer than the most one line may take has no verdict."""
    return (f"the line is {line.length:,} bytes, longer than {line.line_limit:,}, the most "
            "one line may take (a quarter of the memory this process may have): it was not "
            "read")


def _check_held(size: int) -> None:
    """Raise :class:`_LineTooLongError` when ``size`` bytes of one line (a line being
    assembled, a document's run, a document read from a stream) are more than the most one
    line may take."""
    _past_line_limit(size, skip=False)


class _UnreadableRun(list[bytes]):
    """No lines: in their place, a run of the file its reader could not read (an Inspect
    log's sample), its id (None when unknown) and why; its error record comes between the
    records of the runs around it."""

    def __init__(self, ident: str | None, reason: str) -> None:
        super().__init__()
        self.ident = ident
        self.reason = reason


def _listed(lines: Sequence[bytes]) -> list[bytes]:
    """``lines`` as a list (a :class:`_LineBlock`'s lines copied out of its read)."""
    return lines if isinstance(lines, list) else list(lines)


def _core_rows(lines: Sequence[bytes]) -> tuple[
        list[bytes], tuple[bytes, npt.NDArray[np.int64], npt.NDArray[np.int64]] | None]:
    """``lines`` as the core's chunk readers take them (``lines`` and ``block``): a read
    handed over whole, its lines read where they lie; other lines as a list."""
    return lines.core_rows() if isinstance(lines, _LineBlock) else (_listed(lines), None)


def _chunks(stream: BinaryIO | GzipStream | _Replayed, skip_overlong: bool = False
            ) -> Iterator[Sequence[bytes]]:
    """Complete lines (without ``\\n``) in chunks of at most CHUNK_LINES, ~CHUNK_BYTES bytes.
    ``skip_overlong`` (a regular file's stream, which ends): a line longer than the most one
    line may take is read to its end and dropped, an :class:`_OverlongLine` in its place,
    and the lines after it are read; otherwise it ends the reading (:class:`_TooLarge`), as
    a stream's may never end.

    A line longer than a read is assembled as its parts arrive, in one growing buffer that
    becomes the line without a copy (``BytesIO.getvalue``): a line of hundreds of megabytes
    is held once, not once in parts and again joined.
    A last line without a final newline is a line; the empty string after a final newline
    is not, nor is the incomplete last line of a broken gzip stream (its error record, made
    by :func:`_tasks`, stands for it).

    A stream that is not live (a file, a gzip file) is read, after its first chunk, a chunk's
    worth at a time, each read cut into its lines where they lie (:class:`_LineBlock`, the
    newlines found by the core): no ``bytes`` object is made per line. The first chunk is
    made as a live stream's are, a line at a time, so that what a file's first lines
    decide (its format, the warnings on them) is decided on the same lines either way.
    """
    batch: list[bytes] = []
    try:
        yield from _chunks_read(stream, batch, in_blocks=not _live(stream),
                                skip_overlong=skip_overlong)
    except MemoryError as error:
        # A line larger than the memory the process may use (or than the most one line may
        # take), as it was assembled: the lines before it are scanned and written, and the
        # scan ends there.
        if batch:
            yield batch
        yield _TooLarge.after(error)


def _live(stream: BinaryIO | GzipStream | _Replayed) -> bool:
    """Whether ``stream`` is read a line at a time to the end: a pipe read as its data comes
    (its lines are scanned whenever its writer pauses), or a UTF-16 or UTF-32 stream read
    through its transcoding (pipe or file: rare enough not to be worth a second path)."""
    if isinstance(stream, _Replayed):
        return isinstance(stream.rest, _LiveStream | _Transcoded)
    return isinstance(stream, _LiveStream)


def _chunks_read(stream: BinaryIO | GzipStream | _Replayed, batch: list[bytes],
                 in_blocks: bool = False, skip_overlong: bool = False
                 ) -> Iterator[Sequence[bytes]]:
    """:func:`_chunks`, with the lines not yet yielded in ``batch`` (``batch`` is cleared,
    never replaced, so that the caller holds them if reading fails); ``in_blocks``: the
    rest read in blocks once the first chunk is yielded."""
    pending = io.BytesIO()  # the parts of a line that has not ended yet
    size = 0
    # A pipe's lines are scanned whenever its writer pauses (:class:`_LiveStream`).
    idle = stream.idle if isinstance(stream, _Replayed | _LiveStream) else None
    yielded = False
    carried = b""  # what a read held after the end of a line dropped
    while block := carried or stream.read(READ_BYTES):
        carried = b""
        lines = block.split(b"\n")
        if len(lines) == 1:
            pending.write(block)
            limit = _past_line_limit(pending.tell(), skip_overlong)
            if limit is not None:
                held, pending = pending.tell(), io.BytesIO()  # (let go before the rest)
                if batch:  # (their scan need not wait for the rest to be read)
                    chunk = batch[:]
                    batch.clear()
                    size = 0
                    yield chunk
                marker, carried = _rest_dropped(stream, held, limit)
                if marker is not None:
                    yield marker
            continue
        if pending.tell():
            pending.write(lines[0])
            lines[0] = pending.getvalue()
            pending = io.BytesIO()
        tail = lines.pop()
        if tail:
            pending.write(tail)
        batch.extend(lines)
        size += len(block)
        # Each chunk is taken out of ``batch`` before it is yielded, so that a line is never
        # both yielded and still held there when reading fails.
        if len(batch) >= CHUNK_LINES:  # short lines: a read holds several chunks
            while len(batch) >= CHUNK_LINES:
                chunk = batch[:CHUNK_LINES]
                del batch[:CHUNK_LINES]
                yielded = True
                yield chunk
            size = sum(map(len, batch))
        if size >= CHUNK_BYTES:
            chunk = batch[:]
            batch.clear()
            size = 0
            yielded = True
            yield chunk
        elif batch and idle is not None and idle():
            chunk = _PausedBatch(batch)
            batch.clear()
            size = 0
            yielded = True
            yield chunk
        if in_blocks and yielded:
            if batch:
                chunk = batch[:]
                batch.clear()
                yield chunk
            yield from _chunks_of_reads(stream, pending, skip_overlong)
            return
    last = _last_line(stream, pending)
    if last is not None:
        batch.append(last)
    if batch:
        chunk = batch[:]
        batch.clear()
        yield chunk


def _chunks_of_reads(stream: BinaryIO | GzipStream | _Replayed, pending: io.BytesIO,
                     skip_overlong: bool = False) -> Iterator[Sequence[bytes]]:
    """The rest of :func:`_chunks` of a stream that is not live, ``pending`` holding the
    start of a line read before: each read of ``CHUNK_BYTES`` cut into its lines where they
    lie, at most ``CHUNK_LINES`` a chunk (:class:`_LineBlock`); a line that began in an
    earlier read is assembled, and is the head of the chunk it ends in."""
    carried = b""  # what a read held after the end of a line dropped
    while block := carried or stream.read(CHUNK_BYTES):
        carried = b""
        at = 0  # where the next line of the read starts
        head = None
        if pending.tell():
            first = block.find(b"\n")
            if first < 0:
                pending.write(block)
                limit = _past_line_limit(pending.tell(), skip_overlong)
                if limit is not None:
                    held, pending = pending.tell(), io.BytesIO()  # (let go before the rest)
                    marker, carried = _rest_dropped(stream, held, limit)
                    if marker is not None:
                        yield marker
                continue
            pending.write(memoryview(block)[:first])
            head = pending.getvalue()
            pending = io.BytesIO()
            at = first + 1
            if CHUNK_LINES <= 1:  # no room beside it
                yield [head]
                head = None
        while len(ends := _core.line_ends(block, at, CHUNK_LINES - (head is not None))):
            starts = np.empty_like(ends)
            starts[0] = at
            starts[1:] = ends[:-1] + 1
            yield _LineBlock(head, block, starts, ends)
            head = None
            at = int(ends[-1]) + 1
        if head is not None:
            yield [head]
        if at < len(block):
            pending.write(memoryview(block)[at:])
    last = _last_line(stream, pending)
    if last is not None:
        yield [last]


def _last_line(stream: BinaryIO | GzipStream | _Replayed, pending: io.BytesIO) -> bytes | None:
    """The stream's last line, ``pending`` at its end (one without a final newline); None
    when there is none, or when it is the incomplete line of a stream that broke off (its
    length then set as the stream's ``dropped``)."""
    if not pending.tell() or _broke_off_in(stream, pending.tell()):
        return None
    return pending.getvalue()


def _broke_off_in(stream: BinaryIO | GzipStream | _Replayed, length: int) -> bool:
    """Whether ``stream`` broke off (a gzip or a transcoded stream cut short) inside its
    last line, ``length`` bytes of which had come: that length set as its ``dropped``, the
    stream's own error record standing for the line."""
    source = stream.rest if isinstance(stream, _Replayed) else stream
    if isinstance(source, GzipStream | _Transcoded) and source.broken is not None:
        source.dropped = length
        return True
    return False


@dataclass(frozen=True, slots=True)
class _Reading:
    """How every file of a scan is read, and what each of its tasks carries (see
    :class:`_Task`). ``format``: the ``--format`` given (None: each file's detected from its
    first threads with messages). ``hold_tapes``: the parse format detection makes of each
    of a file's first lines is held for the scan of its chunk (:attr:`_Task.detected`)."""

    format: str | None
    cycle: dict[str, float | None]
    strict: bool
    count_tokens: bool
    threads: int = 1
    messages_key: str | None = None
    id_key: str | None = None
    mask_volatile: bool = False
    hold_tapes: bool = False


@dataclass(frozen=True, slots=True)
class _Listing:
    """What the inputs were found to be (:func:`_inputs`). ``listed``: the files of several
    inputs, each of which, if it cannot be read or its format cannot be told, ends with an
    error record while the scan goes on (any other such file ends the scan). ``walked``:
    the files found in a directory FILE, each a regular file when listed, which must still
    be one when opened (see :func:`open_input`). ``empty_directories``: the directories among
    the inputs with no trajectory file under them, each an error record saying why."""

    listed: frozenset[str] = frozenset()
    walked: frozenset[str] = frozenset()
    empty_directories: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _ReadLog:
    """What reading the files learned, for the summary (each list appended to as found).
    ``detected``: (file, format) of each file whose format was detected. ``cut_short``:
    (file, why) of each file not read to its end (a gzip stream that breaks off, a document
    that breaks), said on stderr besides its error record. ``held_none``: each file read to
    its end that held no line or run (an empty file, a document of no run), which no record
    stands for."""

    detected: list[tuple[str, str]] = field(default_factory=list)
    cut_short: list[tuple[str, str]] = field(default_factory=list)
    held_none: list[str] = field(default_factory=list)


def _tasks(files: list[str], reading: _Reading, listing: _Listing = _Listing(),
           log: _ReadLog | None = None, progress: _Progress | None = None,
           done_bytes: int = 0) -> Iterator[_Task]:
    """The files' chunks as tasks, read as ``reading`` says. A JSON document (``.json``,
    ``.traj``) becomes one line per run it holds. ``listing``: what the inputs are; ``log``
    (None: nothing is noted) what reading them learns. ``done_bytes``: the size of the files
    read before these (the progress bar's offset)."""
    format_, cycle, strict, count_tokens, threads = (
        reading.format, reading.cycle, reading.strict, reading.count_tokens, reading.threads)
    messages_key, id_key = reading.messages_key, reading.id_key
    detected, cut_short, held_none = ((None, None, None) if log is None else
                                      (log.detected, log.cut_short, log.held_none))
    for name in files:
        label = input_label(name)
        why = listing.empty_directories.get(name)
        if why is not None:
            if not strict:  # (--strict makes its record the fatal error that says it)
                say(f"vthread scan: {name}: {why}")
            yield _Task(name, 1, [], "native", cycle, strict, count_tokens, threads,
                        messages_key, id_key, broken=why, unit="file")
            continue
        if name in listing.listed:
            # The same tasks, one file at a time, so that its fatal error ends only it.
            yield from _kept_going(
                _tasks([name], reading, _Listing(walked=listing.walked), log, progress,
                       done_bytes),
                label, reading, cut_short)
            done_bytes += _progress_size(name) or 0
            continue
        if is_parquet(name):
            yield from _parquet_tasks(name, reading, log, progress, done_bytes)
            done_bytes += _progress_size(name) or 0
            continue
        try:
            if _is_eval_log(name):
                # (inspect_ai opens the log by its name, again and again)
                require_regular(name, "an Inspect .eval log is a zip archive, read from its "
                                "end")
            stream, position, close, size_at_open = open_input(name,
                                                          regular_only=name in listing.walked)
        except OSError as error:
            raise _FatalError(f"{label}: cannot read: {error.strerror or error}") from error
        line = 1
        file_format = format_
        keys = (messages_key, id_key)
        kind: _Kind = "lines"
        # What the file's records stand for (lines, a document's runs, a log's samples): a
        # guess by its name until it has been opened as what it is.
        unit = "run" if _is_document(name) else "line"
        document: _DocumentRuns | None = None
        transcoded: _Transcoded | None = None
        chunks: Iterator[Sequence[bytes]]
        unfinished: list[str] = []  # what a .eval log of an unfinished evaluation lacks
        opened = False  # (see the MemoryError below)
        try:
            if _is_eval_log(name):
                chunks, kind = _inspect_chunks(label, name, unfinished.append), "inspect"
            elif _is_document(name):
                first, text = _opened_as_text(stream)
                document = _DocumentRuns(_Replayed(first, text), messages_key)
                transcoded = _transcoder_of(document)
                chunks, kind = _document_chunks(document, messages_key, id_key, label)
            else:
                # Standard input, or a file not named as a document: JSONL, unless it opens as
                # a document does (a line that is only a bracket, or an array of runs), which
                # no JSONL file does: read as JSONL, such a file was an error record for
                # every line of its runs.
                sniffed = _sniffed_document(stream, messages_key, empty_is_runs=name == "-",
                                            ends=size_at_open is not None)
                transcoded = _transcoder_of(sniffed)
                if isinstance(sniffed, _DocumentRuns):
                    document = sniffed
                    chunks, kind = _document_chunks(document, messages_key, id_key, label)
                    if name != "-":
                        say(f"vthread scan: {label}: read as a JSON document, a record per "
                            "run (it opens as one, not as JSONL)")
                else:
                    # (a regular file ends: a line past the limit is dropped, the rest read)
                    chunks = _chunks(sniffed, skip_overlong=size_at_open is not None)
            opened = True
            # What the file's records stand for: lines, a document's runs, a log's samples.
            unit = "line" if kind == "lines" else "sample" if kind == "inspect" else "run"
            if kind == "inspect":
                # An Inspect log's samples are read as the chat messages they map through,
                # one per message of the log (so records count the log's messages), whatever
                # --format says.
                file_format, keys = "openai", (None, None)
                if detected is not None:
                    detected.append((label, "inspect"))
            named_through = 0  # (see _Task.named_through)
            settling = _Settling()
            last: Sequence[bytes] = ()  # (the last chunk, for its last line)
            for lines in chunks:
                if progress is not None:
                    progress.chunk_read(done_bytes + position())
                if isinstance(lines, _TooLarge):
                    yield _Task(label, line, [], file_format or "native", cycle, strict,
                                count_tokens, unit=unit, too_large=True,
                                line_limit=lines.line_limit)
                    return
                if isinstance(lines, _OverlongLine):
                    lines = _UnreadableRun(None, _overlong_said(lines))
                    if not strict:  # (--strict makes its record the fatal error that says it)
                        say(f"vthread scan: warning: {label}:{line}: {lines.reason}; its "
                            "record is an error, and the scan goes on")
                if isinstance(lines, _UnreadableRun):
                    # An error record for it, as for a bad line, and the runs after it read
                    # (the file's last line, if it is, is none to be told cut short).
                    last = ()
                    yield _Task(label, line, [], file_format or "native", cycle, strict,
                                count_tokens, threads, broken=lines.reason, broken_lines=1,
                                unit=unit, cell_ids={line: lines.ident})
                    line += 1
                    continue
                # (only a file's own lines are kept tapes of: a read's are copied out)
                tapes = (_core.KeptTapes() if reading.hold_tapes and file_format is None
                         and type(lines) is list else None)
                if file_format is None:
                    file_format, shown, settling.start = _detect(
                        label, lines, messages_key, unit, tapes,
                        transcoded=transcoded is not None)
                    if detected is not None and shown is not None:
                        settling.detected_at = len(detected)
                        detected.append((label, shown))
                elif line == 1 and kind != "inspect":
                    # A format given for the file: said once if its first threads are in
                    # another (the records are made as asked).
                    misread = _misread_warning(label, lines, file_format, messages_key, unit)
                    if misread is not None:
                        say(f"vthread scan: {misread[0]}")
                        named_through = misread[1]
                settled = settling.look(label, lines, line, messages_key, unit, detected)
                file_format = settled or file_format
                if line == 1 and kind != "inspect" and (messages_key or id_key):
                    # A key given for the file: said once if none of its first runs has it.
                    for warning in _key_warnings(label, lines, messages_key, id_key, unit):
                        say(f"vthread scan: {warning}")
                yield _Task(label, line, lines, file_format, cycle, strict, count_tokens,
                            threads, *keys, mask_volatile=reading.mask_volatile, unit=unit,
                            paused=isinstance(lines, _PausedBatch),
                            named_through=named_through, detected=tapes or None,
                            declared_wins=format_ is None and kind != "inspect")
                line += len(lines)
                last = lines
        except MemoryError as error:
            # A document whose first run, or whose whole (read as one value), is longer
            # than the most one line may take, or a file's first line that does not fit the
            # memory the process may use as the file is opened (a JSONL file whose line 1
            # opens as a document does is split as one to tell): it ends the scan at its
            # place, as such a line does. Past the opening, a MemoryError is no line's.
            if opened and not isinstance(error, _LineTooLongError):
                raise
            yield _Task(label, line, [], file_format or "native", cycle, strict, count_tokens,
                        unit=unit, too_large=True,
                        line_limit=_TooLarge.after(error).line_limit)
            return
        except (OSError, EOFError, zlib.error, _ParquetAsTextError) as error:
            raise _FatalError(f"{label}: cannot read: {error}") from error
        finally:
            read_to = position()
            size_at_close = close()
        # (the size it had when opened: it may have been removed or renamed since)
        done_bytes += size_at_open or 0
        # One error record after every line or run read whole, when the file was not read to
        # its end: where and why its gzip stream broke off, and where its document breaks
        # (a document cut short with its gzip stream is one defect, one record).
        reasons = []
        for broken in (stream, transcoded):
            if isinstance(broken, GzipStream | _Transcoded) and broken.broken is not None:
                reasons.append(broken.broken)
                if broken.dropped:
                    made = "decompressed" if isinstance(broken, GzipStream) else "read"
                    reasons.append(f"line {line} is incomplete ({broken.dropped:,} bytes "
                                   f"{made})")
        notes = list(unfinished)  # (what an Inspect log lacks, not a sample of it)
        if document is not None and document.broken is not None:
            reasons.append(document.broken)
            if document.broken_is_note:
                notes.append(document.broken)
        reasons.extend(unfinished)
        if kind != "inspect" and size_at_open is not None and read_to < size_at_open and (
                not reasons or (size_at_close is not None and read_to >= size_at_close)):
            # (an Inspect log is read by its own reader.) Read to its end but short of the
            # size it had: cut short while read (log rotation by copytruncate, a job
            # rewriting it), the lines past where it now ends were not read, and the scan
            # says so, first: a document or gzip stream that breaks off where the file now
            # ends is broken by the shrinking, not as it was written.
            reasons.insert(0, f"the file shrank while it was read: {size_at_open:,} bytes "
                              f"when opened, read to its end at byte {read_to:,}")
        if (kind == "lines" and not reasons and len(last) and cut_short is not None
                and _last_line_cut(last[-1])):
            # A JSONL file still being written (or copied so) ends inside its last line: that
            # line's error record says "cut short?", and the summary lists the file as one
            # cut short, as it lists a document or a gzip stream cut so (it listed none).
            why = f"line {line - 1} ends inside its value: cut short, or still being written"
            if line > 2:  # (a file of that line alone was warned of as cut short)
                say(f"vthread scan: {label}: note: {why}")
            cut_short.append((label, why))
        if reasons:
            why = "; ".join(reasons)
            if not strict:  # (--strict makes its record the fatal error that says it)
                say(f"vthread scan: {label}: {why}")
            if cut_short is not None and not (document is not None and document.empty
                                              and len(reasons) == 1):
                # (an empty document was read to its end: its error record says it)
                cut_short.append((label, why))
            if progress is not None:
                progress.chunk_read(done_bytes)
            yield _Task(label, line, [], file_format or "native", cycle, strict, count_tokens,
                        threads, messages_key, id_key, broken=why, unit=unit,
                        cell_ids=_named_break(label, line, id_key),
                        broken_is_note=len(notes) == len(reasons))
        elif line == 1 and held_none is not None:
            held_none.append(label)  # (no record stands for it)


def _kept_going(tasks: Iterator[_Task], label: str, reading: _Reading,
                cut_short: list[tuple[str, str]] | None = None) -> Iterator[_Task]:
    """``tasks`` of one file, a fatal error reading it (it cannot be opened, a gzip breaks in
    a way the stream cannot say, its threads are in no format or in several) made one error
    record after the lines read before it, as a gzip that breaks off gets: the file's records
    are kept and the other files of a directory are still read. The file is then one not
    read to its end: said on stderr and appended to ``cut_short``, as such a gzip is, so
    that the lines after the error are never passed over in silence. ``--strict`` keeps
    the error fatal."""
    next_line = 1
    try:
        for task in tasks:
            next_line = task.first_line + len(task.lines)
            yield task
    except _FatalError as error:
        why = str(error).removeprefix(f"{label}: ")
        if not reading.strict:  # (--strict makes its record the fatal error that says it)
            # (a file refused before its first chunk, as one of two formats, is no file
            # cut short: none of its runs has a record)
            read = "none of it is read" if next_line == 1 else "not read past there"
            say(f"vthread scan: {label}: {why}; {read}")
        if cut_short is not None:
            cut_short.append((label, why))
        # (unit "file": the error is the file's, and under --strict is said with its name
        # alone, never as if it were its first line's)
        yield _Task(label, next_line, [], "native", reading.cycle, reading.strict,
                    reading.count_tokens, reading.threads, reading.messages_key,
                    reading.id_key, broken=why, unit="file")


def _parquet_tasks(name: str, reading: _Reading, log: _ReadLog | None,
                   progress: _Progress | None, done_bytes: int) -> Iterator[_Task]:
    """A Parquet file's rows as tasks of JSONL lines (:mod:`vthread._cli_parquet`): each
    line holds the row's id and messages under the keys the pipeline reads by default; a
    file of no row is listed in the log's ``held_none``, as an empty JSONL file is."""
    from vthread._cli_parquet import UnreadableRows, parquet_lines
    from vthread._cli_report import holds_records

    format_, cycle, strict, count_tokens, threads = (
        reading.format, reading.cycle, reading.strict, reading.count_tokens, reading.threads)
    messages_key, id_key = reading.messages_key, reading.id_key
    detected, held_none = (None, None) if log is None else (log.detected, log.held_none)

    size = _progress_size(name) or 0
    if messages_key is None and holds_records(name):
        # A scan's own output given back as input: its "messages" column is the counts.
        say(f"vthread scan: {name}: warning: it holds vthread scan's records, not runs; "
            f"each row is an error record (vthread report {name} reads them back)")
    line = 1
    file_format = format_
    settling = _Settling()
    try:
        for lines, share, cell_ids in parquet_lines(name, messages_key, id_key, CHUNK_LINES):
            if progress is not None:
                progress.chunk_read(done_bytes + int(share * size))
            if isinstance(lines, UnreadableRows):
                # A row group pyarrow cannot read: an error record per row of it, as for a
                # bad line (a chunk's worth at a time: a group may hold a million rows),
                # and the row groups after it are read. Its rows' ids, where they could be
                # read, by their rows' number in the file.
                ids = {line + row: json.loads(ident) for row, ident in cell_ids.items()}
                for first in range(0, lines.rows, CHUNK_LINES):
                    rows = min(CHUNK_LINES, lines.rows - first)
                    yield _Task(name, line, [], file_format or "native", cycle, strict,
                                count_tokens, threads, broken=lines.reason,
                                broken_lines=rows, unit="row",
                                cell_ids={number: ids[number]
                                          for number in range(line, line + rows)
                                          if number in ids} or None)
                    line += rows
                continue
            if file_format is None:
                file_format, shown, settling.start = _detect(name, lines, None, "row")
                if detected is not None and shown is not None:
                    settling.detected_at = len(detected)
                    detected.append((name, shown))
            file_format = settling.look(name, lines, line, None, "row", detected) or file_format
            yield _Task(name, line, lines, file_format, cycle, strict, count_tokens, threads,
                        mask_volatile=reading.mask_volatile, unit="row",
                        declared_wins=format_ is None,
                        cell_ids={line + row: json.loads(ident)
                                  for row, ident in cell_ids.items()} or None)
            line += len(lines)
        if line == 1 and held_none is not None:
            held_none.append(name)  # (no record stands for it)
    except MemoryError as error:
        # Row `line`, read alone once its batch did not fit (parquet_lines), does not fit
        # either: named, as a JSONL line is, the records of the rows before it written.
        raise _OutOfMemoryError(f"{name}: row {line}", None) from error
    except (OSError, ValueError) as error:  # pyarrow's errors are ValueErrors and OSErrors
        # (an OSError of the system says its own words, without the errno and the name)
        why = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise _FatalError(f"{name}: cannot read: {why}") from error


def _is_eval_log(name: str) -> bool:
    """Whether the file is an Inspect AI log in Inspect's own format (judged by its name)."""
    from vthread.inspect_log import EVAL_SUFFIX

    return name != "-" and name.lower().endswith(EVAL_SUFFIX)


def _is_document(name: str) -> bool:
    """Whether the file holds one JSON document (judged by its name) rather than JSONL."""
    from vthread.documents import DOCUMENT_SUFFIXES

    base = name.lower().removesuffix(".gz")
    return name != "-" and base.endswith(DOCUMENT_SUFFIXES)


def _document_chunks(document: _DocumentRuns, messages_key: str | None, id_key: str | None,
                     label: str) -> tuple[Iterator[Sequence[bytes]], _Kind]:
    """A JSON document's runs as JSONL lines, in chunks, and what they are (where an array of
    runs breaks is ``document.broken`` once they have been read). An Inspect log's samples
    are its runs, as native threads. A file that is not one JSON document is read as JSONL
    (JSONL files are often named ``.json``), unless it is plainly a pretty-printed document,
    which gets one error record saying where it breaks."""
    from vthread.documents import runs_of
    from vthread.inspect_log import is_inspect_log

    if document.start():
        return _batched(document.runs_text()), "runs"
    data = document.whole()
    if not data.strip(b" \t\r\n"):
        # A document file holds a document: an empty one (a download that never started)
        # is one error record, not a scan of nothing.
        document.broken = "not valid JSON: the document is empty" + (
            f" ({len(data):,} bytes of whitespace)" if data else "")
        document.empty = True
        return iter([]), "runs"
    value = _parse(data, bool(suspect_lines([data])), "document")
    if isinstance(value, _Bad):
        first, rest = _opening_line(data)
        # A minified document (one line) cut inside its first run: the core's split finds
        # no run to start from, yet it is the document cut short it looks like, not JSONL.
        minified = first[:1] in (b"[", b"{") and not rest.strip(b" \t\r\n")
        pretty = first in (b"[", b"{")
        values, where = _leading_values(data) if pretty or minified else ([], None)
        # Whole values one after another, the first pretty-printed (no JSONL line is only a
        # bracket), are each a document, whether later ones are pretty-printed or on a line
        # each (`jq -c` output appended to a pretty-printed run), and so are they when only
        # the last line breaks (a file cut short as it was written).
        if (pretty and values and (where is None or where[0] >= _last_filled_line(data))) or (
                (pretty or minified) and not any(map(_holds_a_thread, rest.split(b"\n")))):
            # A pretty-printed document (no JSONL line is only a bracket, and no line of it
            # is a thread alone), or a minified one, that does not parse: the runs of the
            # whole values it begins with (pretty-printed runs one after another, as `jq
            # '.[]'` writes them, or a run followed by junk), then one error record saying
            # where it breaks, not an error for each of its lines; the document is one not
            # read to its end (said, and counted in the summary, as a document split where
            # it breaks is).
            if not values:
                document.broken = f"{value.reason}; the document is not read past there"
                return iter([]), "runs"
            if len(values) == 1:  # (one trajectory, then junk: named as when whole)
                values = [_named_trajectory(values[0], label, id_key)]
            runs = [run for whole in values for run in runs_of(whole, messages_key)]
            if where is not None:
                line, column, reason = where
                document.broken = _break(line, column, f"after run {len(runs)}", reason)
            return _batched(map(_run_line, runs)), "runs"
        # (read whole, it ends: a line past the limit is dropped, the rest read)
        return _chunks(io.BytesIO(data), skip_overlong=True), "lines"
    if is_inspect_log(value):
        def lacking(why: str) -> None:
            # (said, and an error record, once its samples are read; a log lacking samples
            # and holding samples that ended in an error is told both, said together)
            document.broken = why if document.broken is None else f"{document.broken}; {why}"
            document.broken_is_note = True

        return _inspect_chunks(label, io.BytesIO(data), lacking), "inspect"
    return _batched(_run_line(run) for run in runs_of(
        _named_trajectory(value, label, id_key), messages_key)), "runs"


_TRAJECTORY_NAME_SUFFIXES: Final = (".traj", ".traj.gz", ".traj.json", ".traj.json.gz")
"""Endings of a file holding one agent trajectory named by the instance it ran on: SWE-agent
writes ``<instance>.traj``, mini-swe-agent ``<instance>/<instance>.traj.json``."""


def _named_break(label: str, line: int, id_key: str | None) -> dict[int, Any] | None:
    """The id of the error record of a trajectory file named by its instance
    (:func:`_named_trajectory`) that breaks before its run is read whole (empty, cut short
    while written, a gzip stream broken): its name, by the record's ``line``, so that the
    run that crashed or is still being written is joined to its instance (its id was null);
    None for any other file or break."""
    if line != 1 or id_key is not None or label == "<stdin>":
        return None
    instance = _instance_named(label)
    return None if instance is None else {line: instance}


def _instance_named(label: str) -> str | None:
    """The instance a trajectory file is named by (its name without one of
    :data:`_TRAJECTORY_NAME_SUFFIXES`), or None for a file otherwise named."""
    name = Path(label).name
    suffix = next((s for s in _TRAJECTORY_NAME_SUFFIXES if name.lower().endswith(s)), None)
    return None if suffix is None else name[:-len(suffix)]


def _named_trajectory(value: Any, label: str, id_key: str | None) -> Any:
    """A trajectory (one run in a ``.traj`` or ``.traj.json`` file) with no id of its own,
    given its file's name without that ending as its ``id``: SWE-agent and mini-swe-agent
    name each trajectory by the instance it ran on (``astropy__astropy-12907.traj``,
    ``astropy__astropy-12907.traj.json``), which is what an evaluation joins results on.
    Any other value as it is, and any value at all with ``id_key`` (--id-key): then only
    that key is read (the name stood in for a missing one, and a warning of the
    key missing listed an ``"id"`` the file does not hold)."""
    from vthread.documents import run_id

    instance = _instance_named(label)
    if instance is None or id_key is not None or type(value) is not dict or (
            run_id(value) is not None or "task_id" in value):
        return value
    return {**value, "id": instance}


def _opening_line(data: bytes) -> tuple[bytes, bytes]:
    """The first line of ``data`` with text, stripped (a UTF-8 byte order mark and blank
    lines before it aside: a document may open with either), and what follows it."""
    first, _, rest = data.removeprefix(codecs.BOM_UTF8).lstrip().partition(b"\n")
    return first.strip(), rest


def _leading_values(data: bytes) -> tuple[list[Any], tuple[int, int, str] | None]:
    """The whole JSON values ``data`` begins with, one after another (whitespace, and a
    byte-order mark before any, between; each read as ``json`` reads a document), and where
    the first that is not one breaks: its line, column and ``json``'s reason; None when
    every one is whole."""
    data = data.removeprefix(codecs.BOM_UTF8)
    undecodable: UnicodeDecodeError | None = None
    try:
        text = data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as error:  # a cut inside a character, or bytes of no UTF-8
        undecodable = error
        text = data[:error.start].decode("utf-8", "surrogatepass")
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at = 0
    while True:
        spaces = _JSON_SPACE.match(text, at)  # (matched in place: no copy of the rest)
        assert spaces is not None  # "*" matches, if only nothing
        at = spaces.end()
        if text.startswith("\ufeff", at):
            # A byte-order mark before a later value too: `cat a.traj b.traj` of files an
            # editor saved with one (json reads it before the first value alone).
            at += 1
            continue
        if at == len(text):
            if undecodable is None:
                return values, None
            line = text.count("\n") + 1
            return values, (line, len(text) - text.rfind("\n"),
                            f"not UTF-8 ({undecodable.reason})")
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as error:
            return values, (error.lineno, error.colno, error.msg)
        except RecursionError:
            line = text.count("\n", 0, at) + 1
            return values, (line, at - text.rfind("\n", 0, at), "nested too deeply to read")
        values.append(value)


def _last_filled_line(data: bytes) -> int:
    """The number of the last line of ``data`` that holds anything but whitespace."""
    return data.rstrip(b" \t\r\n").count(b"\n") + 1


def _holds_a_thread(line: bytes) -> bool:
    """Whether a line of a file that does not parse whole could be a JSONL thread: a
    non-empty list or object alone. A pretty-printed document's lines never are (a line
    holding only a key, a number, a bracket, or an empty ``{}`` or ``[]``), and the test of
    its first and last byte spares parsing each of them."""
    line = line.strip()
    if line[:1] + line[-1:] not in (b"[]", b"{}"):
        return False
    value = _parse(line, True)
    return isinstance(value, (list, dict)) and bool(value)


def _batched(lines: Iterable[bytes | _UnreadableRun]) -> Iterator[list[bytes]]:
    """``lines`` in chunks of at most CHUNK_LINES lines and about CHUNK_BYTES bytes; where
    the next line does not fit the memory the process may use as it is read (a document's
    long run), the lines before it, then :class:`_TooLarge`. An :class:`_UnreadableRun`
    among them is a chunk of its own, after the lines before it."""
    batch: list[bytes] = []
    size = 0
    try:
        for line in lines:
            if isinstance(line, _UnreadableRun):
                if batch:
                    chunk = batch
                    batch, size = [], 0
                    yield chunk
                yield line
                continue
            batch.append(line)
            size += len(line)
            if len(batch) >= CHUNK_LINES or size >= CHUNK_BYTES:
                chunk = batch
                batch, size = [], 0
                yield chunk
    except MemoryError as error:
        if batch:
            yield batch
        yield _TooLarge.after(error)
        return
    if batch:
        yield batch


def _run_line(run: Any) -> bytes:
    """One run of a JSON document as a JSONL line that reads back as the same value."""
    try:
        return json.dumps(run).encode("ascii")
    except RecursionError:
        # Nested past what json.dumps recurses through (orjson read it, 1,024 levels deep):
        # written without recursion; reading the line back then reports the depth.
        return json_text(run, ensure_ascii=True).encode("ascii")


def _inspect_chunks(label: str, source: str | BinaryIO, lacking: Callable[[str], object]
                    ) -> Iterator[list[bytes]]:
    """An Inspect AI log's samples as JSONL lines ``{"id", "messages"}`` of OpenAI chat messages
    (one per message of the sample), in chunks; a sample inspect_ai cannot read, or one
    missing from a finished evaluation's ``.eval`` log, an :class:`_UnreadableRun` in its
    place (its error record: records out = samples in); a fatal error when inspect_ai is
    missing or cannot read the log's header, or the file cannot be read. What the log of an
    evaluation that did not finish lacks is told to ``lacking`` once its samples are read:
    the log is one cut short, said with an error record after its samples' records."""
    from vthread.inspect_log import UnreadableSample, read_inspect_samples, unreadable_reason

    samples = (_UnreadableRun(sample.ident, sample.reason)
               if isinstance(sample, UnreadableSample)
               else json.dumps({"id": sample[0], "messages": sample[1]}).encode("ascii")
               for sample in read_inspect_samples(source, lacking))
    try:
        yield from _batched(samples)
    except ImportError as error:
        raise _FatalError(f"{label}: {error}") from error
    except Exception as error:  # whatever inspect_ai raises on a log it cannot read
        raise _FatalError(f"{label}: cannot read the Inspect AI log: "
                          f"{unreadable_reason(error)}") from error


def _scan_output(line: bytes) -> str | None:
    """Which of ``vthread scan``'s own outputs ``line`` is, given back as input:
    ``"records"`` (one of its records: :func:`vthread._cli_report.is_record`),
    ``"summary"`` (its ``--summary``: :func:`vthread._cli_report.is_summary`), or None."""
    from vthread._cli_report import is_record, is_summary

    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return "records" if is_record(value) else "summary" if is_summary(value) else None


def _detect(label: str, lines: Sequence[bytes], messages_key: str | None, unit: str,
            keep_into: _core.KeptTapes | None = None, *, transcoded: bool = False
            ) -> tuple[str, str | None, int | None]:
    """The format every thread among the first ``DETECT_THREADS`` with messages of ``lines``
    fits (:func:`vthread.adapters.common_format`), the format to name for the file, None
    when no thread told it (native is the format of lines with no thread to judge by, but
    it was not detected; runs declaring mini-swe-agent, and plain chats, name
    mini-swe-agent), and, when they are all plain chats or such runs (so the format is
    OpenAI's by default, not shown), the index of the line from which to look on for one
    that shows it (:func:`_settled`); a fatal
    error naming the ``unit``s (line or run numbers) when they disagree, or when none is in
    a known format but one has messages. ``keep_into``: where to hold the tapes made of
    the lines judged, for the chunk's scan (:func:`_format_evidence`); ``transcoded``: the
    file is written in UTF-16 or UTF-32 (its records, if it holds them, are not read back
    as they are)."""
    from vthread.adapters import agreed_format

    evidence, unknown = _format_evidence(lines, messages_key, keep_into=keep_into)
    nothing_told = not evidence and unknown is None and bool(lines)
    # (nothing to judge by: a scan's own output given back is looked for)
    output = _scan_output(lines[0]) if nothing_told else None
    if (nothing_told and len(lines) == 1
            and re.search(rb"[\]}]\s*\r\s*[\[{]", lines[0][:WARN_LINE_BYTES])):
        # Values one after another with a carriage return alone between them (no JSON
        # value holds that): one line holding every run, however long it is.
        say(f"vthread scan: {label}: warning: its lines seem to end in a carriage return "
            "alone (\\r), so that it reads as one line holding them all, an error "
            "record; JSONL lines end in \\n (tr '\\r' '\\n' < FILE converts it)")
    elif nothing_told and not any(map(_may_be_json, lines[:8])):
        # Nothing to judge by, and not even JSON (a README, a log, a CSV passed by mistake):
        # each line will be an error record; said once, so that a wrong file is not taken
        # for a scan of bad runs.
        looked = min(len(lines), 8)
        if all(map(_cut_short, lines[:looked])):
            # (a run's line cut off as the file was copied, or still being written, was
            # "not JSON ... (is it a trajectory file?)")
            which = (f"its first {unit} ends" if looked == 1
                     else f"each of its first {looked} {unit}s ends")
            say(f"vthread scan: {label}: warning: {which} inside its JSON value; each such "
                f"{unit} is an error record (is the file cut short, or still being "
                "written?)")
        else:
            which = (f"its first {unit} is not" if looked == 1
                     else f"none of its first {looked} {unit}s is")
            say(f"vthread scan: {label}: warning: {which} JSON; each {unit} is an error "
                "record (is it a trajectory file?)")
    elif output == "records":
        # A scan's own output given back as input: every line would be an error record.
        back = (f"vthread report reads records written in UTF-8: convert "
                f"{'them' if label == '<stdin>' else 'the file'} (iconv) to read them back"
                if transcoded  # (UTF-16 or UTF-32, as a shell wrote it)
                else "saved to a file, vthread report FILE reads them back"
                if label == "<stdin>" else f"vthread report {label} reads them back")
        say(f"vthread scan: {label}: warning: it holds vthread scan's records, not runs; "
            f"each {unit} is an error record ({back})")
    elif output == "summary" and len(lines) == 1:
        # (an earlier scan's --summary named as input: its run was said to hold "messages"
        # as a number, with no word of what the file is)
        say(f"vthread scan: {label}: warning: it is vthread scan's --summary, not runs; its "
            f"{unit} is an error record (vthread report reads the records a scan writes with "
            "-o)")
    # (evidence is numbered from 1)
    apart = declared_apart(evidence, lambda number: _reads_as_its_own(
        lines[number - 1], messages_key))
    try:
        agreed = agreed_format(apart, unknown, unit, "its threads", "give --format",
                               _shapes_apart(lines, unknown, messages_key) if not apart
                               else "")
    except ValueError as error:
        raise _FatalError(f"{label}: {error}") from None
    plain_only = bool(apart) and not any(decisive for _, _, decisive in apart)
    shown = ("mini-swe-agent" if only_declared(evidence, apart) else agreed) if apart else None
    # (evidence is numbered from 1: the last one's number is the index of the line after it)
    return agreed, shown, apart[-1][0] if plain_only else None


def _shapes_apart(lines: Sequence[bytes], unknown: int | None, messages_key: str | None
                  ) -> str:
    """:func:`vthread.documents.why_no_format` of line number ``unknown`` (from 1), the first
    in no format, for the error saying so; "" when there is none."""
    from vthread.documents import why_no_format

    if unknown is None or len(lines[unknown - 1]) > DETECT_BYTES:
        # (a line that long is not parsed again only to say what its messages lack: a 30 MB
        # line of 10 million empty objects took 13 s and 1.1 GB more to be told of)
        return ""
    try:
        return why_no_format(_parse(lines[unknown - 1], suspect=False), messages_key)
    except MemoryError:
        return ""


@dataclass
class _Settling:
    """A file's format while its threads so far were all plain chats (read as OpenAI's by
    default, not shown): where in the next chunk to look on for one that shows a format, and
    the first line of those chunks, so read, in a shape that reads otherwise in each chat
    format (:func:`_first_read_otherwise`); once one has, its evidence and how many threads
    after it are still to be looked at for another format (the chunk that settled it may end
    first)."""

    start: int | None = None  # (None: not looking on)
    settler: tuple[int, Any, bool] | None = None
    window_left: int = 0
    detected_at: int = -1  # the file's entry in the ``detected`` formats
    read_otherwise: dict[str, int] = field(default_factory=dict)

    def look(self, label: str, lines: Sequence[bytes], first_line: int,
             messages_key: str | None, unit: str, detected: list[tuple[str, str]] | None
             ) -> str | None:
        """The format the chunk ``lines`` (its first line numbered ``first_line``) settles,
        the file's entry in ``detected`` replaced by it; None when it settles none
        (:func:`_settled`), the rest of a window looked at (:func:`_window_rest`)."""
        if self.start is not None:
            from vthread._core import line_marks

            # A read's lines are marked where they lie; a line is copied out only to judge it.
            listed, block = _core_rows(lines)
            marks = line_marks(listed, messages_key, block=block)
            window = _settled(label, lines, marks, self.start, first_line, messages_key,
                              unit, self.read_otherwise)
            if not window:
                # Read as OpenAI's, this chunk's plain chats are not read again.
                _first_read_otherwise(lines, marks, first_line, messages_key,
                                      self.read_otherwise)
                self.start = 0
                return None
            self.start = None
            self.settler, self.window_left = window[0], DETECT_THREADS - len(window)
            settled = str(window[0][1])
            if detected is not None and self.detected_at >= 0:
                detected[self.detected_at] = (label, settled)
            return settled
        if self.settler is not None and self.window_left > 0:
            self.window_left = _window_rest(label, lines, first_line, self.settler,
                                            self.window_left, messages_key, unit)
        return None


def _settled(label: str, lines: Sequence[bytes], marks: bytes, start: int, first_line: int,
             messages_key: str | None, unit: str, read_otherwise: dict[str, int]
             ) -> list[tuple[int, Any, bool]]:
    """The :func:`vthread.documents.first_settling` window of ``lines`` from index ``start``
    on, for a file whose threads so far were all plain chats, read as OpenAI's by default:
    its first thread's format, the first decisively in a chat format, is the file's; empty
    when no line settles it. Said on stderr: the threads after it, up to ``DETECT_THREADS``
    of the chunk (the rest in the next chunks: :func:`_window_rest`), and the native ones
    before it (past the first threads, which were all plain chats), plainly in another
    format (read in the settled one, as a ``--format`` given is); and, when a plain chat of
    the chunks before this one (``first_line``), read as OpenAI's, reads otherwise in the
    settled format (``read_otherwise``: the first line of each format), that they were not
    read again. O(total bytes of the lines): a file of plain chats is looked through to its
    end, each line by its ``marks`` (:func:`vthread._core.line_marks`, about 1.2 us a 3 KB
    line; the few they do not pass over are judged by the core, about 4 us)."""
    from vthread.documents import first_settling, natives_noted, settled_warning

    natives: list[tuple[int, Any, bool]] = []
    window = first_settling(natives_noted(
        _judged_after(lines, marks, start, first_line, messages_key), natives),
        DETECT_THREADS)
    if not window:
        return window
    settled_format: str = window[0][1]
    warning = settled_warning([window[0], *natives, *window[1:]], unit)
    if warning is not None:
        say(f"vthread scan: {label}: warning: {warning}")
    differs = _PLAIN_READS_DIFFERENTLY.get(settled_format)
    otherwise = read_otherwise.get(settled_format)
    if first_line > 1 and differs is not None and otherwise is not None:
        say(f"vthread scan: {label}: warning: no thread of {unit}s 1 to {first_line - 1} "
            f"showed a format (plain chats: read as openai), and {unit} {window[0][0]} "
            f"is {settled_format}, the format the rest is read in; {unit} {otherwise} is "
            f"the first of them that reads differently as {settled_format}, as a plain chat "
            f"with {differs} does; those {unit}s were not read again (--format "
            f"{settled_format} reads them all so)")
    return window


_READ_OTHERWISE_BITS: Final = {"anthropic": 1, "responses": 2, "mini-swe-agent": 4}
"""The bit :func:`vthread._core.plain_reads_otherwise` sets for each chat format."""
_MAY_READ_OTHERWISE: Final = bytes(
    bool(mark & _core.MAY_READ_OTHERWISE and not mark & _core.DECLARES_MINI_SWE_AGENT)
    for mark in range(256))
"""A :func:`vthread._core.line_marks` byte as 1 for a line that may read otherwise, 0 for
one that surely does not, or whose run declares itself a mini-swe-agent run (read as one
whatever the format: no plain chat) (``bytes.translate``'s table)."""


def _first_read_otherwise(lines: Sequence[bytes], marks: bytes, first_line: int,
                          messages_key: str | None, read_otherwise: dict[str, int]) -> None:
    """Into ``read_otherwise``, for each chat format it has no line for yet, the number of
    the first of ``lines`` (numbered from ``first_line``) that is a plain chat reading
    otherwise in that format than as OpenAI's (:func:`vthread._core.plain_reads_otherwise`;
    a line the core leaves to Python is read by the adapters, :func:`_python_reads_otherwise`).
    Only lines ``marks`` says may be are read, and none once every format has one: a file of
    plain chats with text content costs no parse."""
    from vthread._core import plain_reads_otherwise

    if len(read_otherwise) == len(_READ_OTHERWISE_BITS):
        return
    may = marks.translate(_MAY_READ_OTHERWISE)
    index = -1
    while (index := may.find(1, index + 1)) != -1:
        found = plain_reads_otherwise(lines[index], messages_key)
        if found is None:
            found = _python_reads_otherwise(lines[index], messages_key)
        for format_, bit in _READ_OTHERWISE_BITS.items():
            if found & bit and format_ not in read_otherwise:
                read_otherwise[format_] = first_line + index
        if len(read_otherwise) == len(_READ_OTHERWISE_BITS):
            return


def _python_reads_otherwise(line: bytes, messages_key: str | None) -> int:
    """:func:`vthread._core.plain_reads_otherwise` of a line the core leaves to Python (a
    number too long for it, a lone surrogate, content it does not read): the bits of the
    chat formats in which the adapters read the plain chat it holds otherwise than as
    OpenAI's, its messages read both ways (an error is a reading); 0 for a line that is no
    plain chat (:func:`vthread.adapters.format_evidence` not ``("openai", False)``) or too
    large to hold, whose scan says so."""
    from vthread.documents import native_messages, run_format_evidence, run_messages

    def reading(messages: Any, format_: str) -> Any:
        try:
            return native_messages(messages, format_)
        except (TypeError, ValueError) as error:
            return type(error)

    try:
        value = _parse_alone(line)
        if isinstance(value, _Bad) or run_format_evidence(value, messages_key) != (
                "openai", False):
            return 0
        messages = run_messages(value, messages_key) if isinstance(value, dict) else value
        as_openai = reading(messages, "openai")
        return sum(bit for format_, bit in _READ_OTHERWISE_BITS.items()
                   if reading(messages, format_) != as_openai)
    except (MemoryError, RecursionError):
        return 0


def _window_rest(label: str, lines: Sequence[bytes], first_line: int,
                 settler: tuple[int, Any, bool], left: int, messages_key: str | None,
                 unit: str) -> int:
    """The rest of the window after a settling thread (``settler``) in an earlier chunk:
    the first ``left`` threads with messages of ``lines`` (the first numbered
    ``first_line``), warned of on stderr when plainly in another format than the settled
    one, as those of the settling chunk are (:func:`vthread.documents.settled_warning`);
    how many are still to be looked at. O(the lines looked at)."""
    from vthread.documents import evidence_of, settled_warning

    # (a run declaring mini-swe-agent, or showing SWE-agent's actions, is read so whatever
    # the settled format: judged by none, as in the settling chunk)
    found, _ = evidence_of(range(len(lines)), left, lambda index: _line_evidence(
        lines[index], messages_key, _is_itself(lines, index), undeclared=True))
    window = [settler, *((first_line + index, *evidence) for index, *evidence in found)]
    warning = settled_warning(window, unit)
    if warning is not None:
        say(f"vthread scan: {label}: warning: {warning}")
    return left - (len(window) - 1)


_PLAIN_READS_DIFFERENTLY: Final = {
    "anthropic": ("content of several parts (one block a message), of parts other than "
                  '"text", "image" and "document" blocks, or an object, or an assistant\'s '
                  "reasoning or refusal"),
    "responses": ('an assistant\'s reasoning or refusal, or a message with a "type" (but '
                  '"message", or its role\'s with no text)'),
    "mini-swe-agent": "an assistant's text holding one ```bash block (a command)",
}
"""What makes a plain chat (:func:`vthread.adapters.format_evidence`: not decisive) read
otherwise in each chat format than as OpenAI's, its reading by default (SWE-agent's reads
every plain chat as OpenAI's does)."""


def _judged_after(lines: Sequence[bytes], marks: bytes, start: int, first_line: int,
                  messages_key: str | None) -> Iterator[tuple[int, tuple[Any, bool] | None]]:
    """:func:`vthread.documents.judged_until_settled` of ``lines`` from index ``start`` on,
    by line number (a run declaring itself a mini-swe-agent run, or showing SWE-agent's
    actions, judged by none: :func:`vthread.documents.run_format_evidence`'s
    ``undeclared``), each passed over by its
    ``marks`` (:func:`vthread._core.line_marks`: neither a line that may settle a chat
    format nor one that may be native) or judged by :func:`_line_evidence`. (A native thread with a
    ``role`` key anywhere, in a message's ``meta`` say, is passed over as a plain chat is:
    the marks tell no more; a text or type ``"role"`` is no key.)"""
    from vthread.documents import judged_past_the_first, judged_until_settled

    return judged_until_settled(
        ((first_line + index, index) for index in range(start, len(lines))),
        lambda index: judged_past_the_first(marks[index]),
        lambda index: _line_evidence(lines[index], messages_key, _is_itself(lines, index),
                                     undeclared=True))


def _is_itself(lines: Sequence[bytes], index: int) -> bool:
    """Whether ``lines[index]`` is the line's own ``bytes``, not a copy out of a read (a
    parse kept of a copy would be found by no later parse of the line: it lies elsewhere)."""
    return not isinstance(lines, _LineBlock) or (lines.head is not None and index == 0)




def _line_evidence(line: bytes, messages_key: str | None, keep: bool = True, *,
                   undeclared: bool = False) -> tuple[Any, bool] | None:
    """:func:`vthread.documents.line_format_evidence` of one line, Python parsing what the
    core leaves as :func:`_parse` does; None for a line too large to hold (its scan
    reports it, in place). ``keep``: whether its parse may be kept for the scan's (not
    for a line copied out of a read: see :func:`_is_itself`); ``undeclared``: None for a
    run declaring itself a mini-swe-agent run or showing SWE-agent's actions (past the
    first threads)."""
    from vthread.documents import line_format_evidence_keeping

    try:
        return line_format_evidence_keeping(
            line, messages_key, _parse_alone,
            keep_tape=keep and _KEEP_TAPES.get(),  # the chunk, scanned next, takes it
            undeclared=undeclared)
    except MemoryError:
        return None


def _last_line_cut(line: bytes) -> bool:
    """Whether a file's last line is JSON cut inside its value (:func:`_cut_short`), looked
    at only when it does not end as a whole run's line does (``}``, ``]``): a parse of every
    file's last line would cost a directory of many small files a parse each."""
    return line.rstrip(b" \t\r\n")[-1:] not in (b"}", b"]", b"") and _cut_short(line)


def _cut_short(line: bytes) -> bool:
    """Whether the line is JSON that ends inside its value (cut short), as ``json`` reads
    it (:func:`vthread.documents.ends_inside_a_value`)."""
    from vthread.documents import ends_inside_a_value

    if len(line) > WARN_LINE_BYTES:
        return False
    try:
        json.loads(line)
    except ValueError as error:
        return ends_inside_a_value(error)
    except RecursionError:
        return False
    return False


def _reads_as_its_own(line: bytes, messages_key: str | None) -> bool:
    """Whether the line's run, whose format evidence is decisively mini-swe-agent's or
    SWE-agent's, is read as its own whatever the file's detected chat format
    (:func:`vthread.documents.reads_as_its_own`): a declaration its line's end shows (as
    mini-swe-agent writes it) with no parse, else its evidence past the first threads is
    none, as the core tells it (Python parsing what the core leaves)."""
    from vthread.documents import line_format_evidence

    if _core.line_marks([line], messages_key)[0] & _core.DECLARES_MINI_SWE_AGENT:
        return True
    try:
        return line_format_evidence(line, messages_key, _parse_alone, undeclared=True) is None
    except MemoryError:
        return False  # (its scan reports the line, in place)


def _may_be_json(line: bytes) -> bool:
    """Whether ``line`` is JSON Python reads (a blank line is not), or too long to look at
    for a warning (``WARN_LINE_BYTES``)."""
    if len(line) > WARN_LINE_BYTES:
        return True
    return bool(line.strip()) and _reads_as_json(line, True)


def _format_evidence(lines: Sequence[bytes], messages_key: str | None,
                     longest: int | None = None, keep_into: _core.KeptTapes | None = None
                     ) -> tuple[list[tuple[int, Any, bool]], int | None]:
    """What the first ``DETECT_THREADS`` threads with messages of ``lines`` say of their
    format: (number, format, decisive) each (:func:`vthread.documents.run_format_evidence`),
    and the number of the first thread in no known format (None when there is none); lines
    over ``longest`` bytes, when given, are passed over. ``keep_into``: where the core holds
    its parse of each line judged (but a long one, kept by itself), for the scan of
    ``lines``, which are then the ``bytes`` that scan reads."""
    from vthread.documents import line_format_evidence_keeping

    evidence: list[tuple[int, Any, bool]] = []
    unknown: int | None = None  # the first thread in no known format
    examined = 0  # bytes of the threads examined
    for index, line in enumerate(lines):
        if len(evidence) == DETECT_THREADS or examined > DETECT_BYTES:
            break
        if longest is not None and len(line) > longest:
            continue
        # (the core judges the bytes; Python parses only what it leaves)
        try:
            found = line_format_evidence_keeping(
                line, messages_key, _parse_alone,
                keep_tape=_KEEP_TAPES.get(), keep_into=keep_into)  # the scan takes its parse
        except MemoryError:
            continue  # a line too large to hold says nothing: its scan reports it, in place
        if found is None:
            continue
        if found[0] is None:
            # Read as any format, such a thread is an error record; it is fatal only when no
            # thread shows a format.
            unknown = index + 1 if unknown is None else unknown
            continue
        evidence.append((index + 1, *found))
        examined += len(line)
    return evidence, unknown


def _key_warnings(label: str, lines: Sequence[bytes], messages_key: str | None,
                  id_key: str | None, unit: str) -> list[str]:
    """Warnings for ``--messages-key`` or ``--id-key`` given and held by none of the run
    objects among the first ``DETECT_THREADS`` lines of a file (read up to ``DETECT_BYTES``,
    none over ``WARN_LINE_BYTES``): every run would be an error record, or every id null,
    with no word of why."""
    runs: list[dict[str, Any]] = []
    examined = 0
    for line in lines[:DETECT_THREADS]:
        if examined > DETECT_BYTES:
            break
        if len(line) > WARN_LINE_BYTES:
            continue
        examined += len(line)
        value = _parse_alone(line)
        if type(value) is dict:
            runs.append(value)
    if not runs:
        return []
    keys = ", ".join(json.dumps(key) for key in list(runs[0])[:12])
    first = f"the first has {keys}" if keys else "the first is empty"
    warnings = []
    for flag, key, outcome in (("--messages-key", messages_key, "each is an error record"),
                               ("--id-key", id_key, "their ids are null")):
        if key is not None and not any(key in run for run in runs):
            which = (f"its first {unit} has no" if len(runs) == 1
                     else f"none of its first {len(runs):,} {unit}s has")
            warnings.append(f"{label}: {which} {json.dumps(key)} ({flag}): {outcome}; {first}")
    return warnings


def _misread_warning(label: str, lines: Sequence[bytes], given: str, messages_key: str | None,
                     unit: str) -> tuple[str, int] | None:
    """A warning when ``--format given`` does not fit the first threads of a file: some are
    plainly in another format (a plain chat fits every chat format, not native; lines over
    ``WARN_LINE_BYTES`` are not looked at). The records are still made as asked; a thread
    read in the wrong format can look like a loop (chat messages read as native are all
    messages of no type, equal to one another). With the warning, the number of the last
    line it looked at: it names every misfit up to there."""
    from vthread.documents import misfit_kind, misfit_phrase, misfits

    evidence, unknown = _format_evidence(lines, messages_key, WARN_LINE_BYTES)
    found = misfits(evidence, given)
    if given == "native" and unknown is not None:
        # Lines in no format among the first: those of another library's messages, or of
        # runs, which read as native are alike (each is parsed: this is rare).
        told = {number for number, _, _ in evidence}
        last = min(len(lines), max(evidence[-1][0] if evidence else 0,
                                   unknown + DETECT_THREADS - 1))
        found = sorted([*found, *(
            (number, misfit) for number in range(unknown, last + 1)
            if number not in told and len(lines[number - 1]) <= WARN_LINE_BYTES
            and (misfit := misfit_kind(_parse(lines[number - 1], suspect=True),
                                       messages_key)) is not None)])
    if not found:
        return None
    examined = max(found[-1][0], evidence[-1][0] if evidence else 0)
    # The lines named through: not past a line too long to look at here (its loop is the
    # later warnings' to name; it was named by none).
    skipped = next((number for number in range(1, examined + 1)
                    if len(lines[number - 1]) > WARN_LINE_BYTES), None)
    return (f"{label}: warning: --format {given} was given, but "
            f"{misfit_phrase(found, examined, unit, given)}, and "
            f"{'is' if len(found) == 1 else 'each is'} an error where it holds what only its "
            "own format holds, else may be read wrongly"), \
        examined if skipped is None else skipped - 1


def _run_in_core(tasks: Iterable[_Task], jobs: int) -> Generator[_Done, None, None]:
    """The results of chunks the core reads (native, OpenAI, Anthropic, Responses), in
    order, in this process. With jobs > 1, ``jobs`` threads each take a whole chunk (the
    core's reading and attribution with the GIL released, then Python's verdict arrays and
    records), at most ``2 * jobs`` chunks in flight; a file whose first chunk the core
    declines goes to ``jobs`` worker processes instead (:func:`_run`)."""
    if jobs <= 1:
        yield from map(_scan_chunk, tasks)
        return
    from concurrent.futures import ThreadPoolExecutor

    tasks = iter(tasks)
    window: deque[tuple[_Task, Future[_Done | None]]] = deque()
    declined_first: list[_Task] = []
    # One pause for every thread: each pausing and restoring the collector on its own would
    # switch it back on while another thread is still in a chunk.
    with collector_paused(), ThreadPoolExecutor(jobs, thread_name_prefix="vthread-core") as pool:
        try:
            yield from _chunks_in_order(pool, tasks, jobs, window, declined_first)
        finally:
            # A fatal record, an error or a closed output ends the run: chunks not started
            # are dropped rather than scanned for nothing (the pool waits for running ones).
            for _, queued in window:
                queued.cancel()
    if declined_first:
        # The core declined the file's first chunk (values only Python reads, such as
        # numeric call ids, or NaN, throughout): the file goes to worker processes, as the
        # formats only Python reads do, rather than to Python in this one process chunk
        # after chunk.
        yield from _run(chain(declined_first, tasks), jobs)


def _scanned(run: Callable[[Iterable[_Task], int], Iterator[_Done]], tasks: Iterable[_Task],
             jobs: int) -> Generator[_Done, None, None]:
    """``run``'s results of ``tasks``; an error reading the next task (a file that cannot be
    read ends the scan) is raised once the chunks read before it are scanned and written,
    as one job writes them (with several, the chunks in flight were dropped). A stop
    (Ctrl-C, SIGTERM) is no error: it goes through at once."""
    failed: list[Exception] = []
    yield from run(_until_failure(iter(tasks), failed), jobs)
    if failed:
        raise failed[0]


def _until_failure(tasks: Iterator[_Task], failed: list[Exception]) -> Iterator[_Task]:
    """``tasks`` up to an error reading the next, which is put in ``failed``."""
    try:
        yield from tasks
    except Exception as error:
        failed.append(error)


def _chunks_in_order(pool: ThreadPoolExecutor, tasks: Iterator[_Task], jobs: int,
                     window: deque[tuple[_Task, Future[_Done | None]]],
                     declined_first: list[_Task]) -> Iterator[_Done]:
    """The chunks' results in input order, at most ``2 * jobs`` in flight (in ``window``);
    when the core declines the file's first chunk, stops with the tasks taken so far in
    ``declined_first``."""
    first = True
    for task in chain(tasks, [None]):
        if task is not None:
            with signals_held():  # never inside the pool's lock: see _result
                window.append((task, pool.submit(_chunk_in_core, task, first)))
            first = False
            if len(window) < 2 * jobs and not task.paused:
                continue
        # Every chunk in flight is waited for when the input has ended or its writer paused
        # (its records are written now, not when more comes); else only the oldest.
        drain = task is None or task.paused
        while window and (drain or len(window) >= 2 * jobs):
            oldest, future = window.popleft()
            done = _result(future)
            if done is None:  # the core declines the file's first chunk
                declined_first.append(oldest)
                while window:
                    queued, queued_future = window.popleft()
                    queued_future.cancel()
                    declined_first.append(queued)
                return
            yield done


def _result(future: Future[_R]) -> _R:
    """``future``'s result; Ctrl-C or SIGTERM meanwhile takes effect once it has come. Raised
    inside the future's lock (``with self._condition``), KeyboardInterrupt could leave the
    lock held: the pool's thread that finished the chunk then waited for it forever, and the
    scan, shutting the pool down, for that thread (a double Ctrl-C hung it). No later:
    the pool's shutdown waits for the oldest chunk, running, all the same."""
    with signals_held():
        return future.result()


def _chunk_in_core(task: _Task, first: bool) -> _Done | None:
    """One chunk's result, read by the core (Python's way where the core declines it); None
    for a file's ``first`` chunk the core declines, which sends the file elsewhere."""
    if task.too_large:
        return _too_large(task)
    if task.parts is not None:
        return _joined_in_core(task) or _merged(
            cast(_Done, _chunk_in_core(part, False)) for part in task.parts)
    raw = None
    try:
        raw = _read_in_core(task)
        if raw is None and first:
            return None
        done = _scan_chunk_in_core(task, raw) if raw is not None else None
        return done if done is not None else _scan_chunk_in_python(task)
    except MemoryError:
        # Left first: the error's frames, and all they hold, go before the retry; so do the
        # core's columns and the tapes it kept for the looping lines' attribution.
        raw = None
    return _line_by_line(task)


def _run(tasks: Iterable[_Task], jobs: int) -> Generator[_Done, None, None]:
    """Each task's result, in order; with jobs > 1 from a pool, at most 2 * jobs in flight.

    The pool has one process per chunk up to ``jobs``: the first ``jobs`` chunks are read
    before it is made, so a short input is scanned here, with no process started at all; so
    is a pipe whose writer paused before that many came (its records are due then, and the
    next chunk may be long in coming).
    """
    tasks = iter(tasks)
    first: list[_Task] = []
    for task in tasks if jobs > 1 else ():
        first.append(task)
        if len(first) >= jobs or task.paused:
            break
    workers = _worker_count(jobs, len(first))
    if workers <= 1:
        yield from map(_scan_chunk, chain(first, tasks))
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    context = multiprocessing.get_context(method)
    try:
        made = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_started)
    except OSError as error:  # its queues and locks could not be made: no process started
        _say_unstarted(error)
        yield from map(_scan_chunk, chain(first, tasks))
        return
    with made as pool:
        window: deque[tuple[_Task, Future[_Done]]] = deque()
        pending = chain(first, tasks)  # one iterator: a fallback goes on where it stopped
        unsent: list[_Task] = []  # the task being handed to the pool
        try:
            for task in pending:
                unsent[:] = [task]
                try:
                    # A submit may fork the workers: a signal meanwhile would leave one
                    # forked and unknown to the pool, waited for forever.
                    with signals_held():
                        submitted = pool.submit(_scan_chunk_in_worker, task)
                except OSError as error:
                    # The workers could not all start (no file descriptors or processes
                    # left: `ulimit -n`). Those that did are ended, or the process would
                    # wait for them at its exit for ever; the chunks are scanned here, the
                    # ones handed to the pool again, in order.
                    _end_started_workers()
                    _say_unstarted(error)
                    yield from _scanned_here(window, unsent, pending)
                    return
                window.append((task, submitted))
                unsent.clear()
                if len(window) >= 2 * workers:
                    yield _oldest(window)
                while task.paused and window:  # the writer paused: its records now
                    yield _oldest(window)
            while window:
                yield _oldest(window)
        except BrokenProcessPool:
            # A worker ended without answering (killed for memory, or by a signal): the pool
            # is broken, and every chunk it has not answered is scanned here, in order, and
            # the rest after them, rather than the scan ending in a traceback with its
            # records cut short and no summary.
            say("vthread scan: warning: a worker process ended without answering (killed "
                "for memory or by a signal); its chunks and the rest are scanned in this "
                "process")
            yield from _scanned_here(window, unsent, pending)
        finally:
            for _, future in window:
                future.cancel()


def _scanned_here(window: deque[tuple[_Task, Future[_Done]]], unsent: list[_Task],
                  pending: Iterator[_Task]) -> Iterator[_Done]:
    """When the pool can take no more: the chunks it has not answered (``window``'s, in
    order, then ``unsent``, the one being handed to it) and the rest (``pending``), scanned
    in this process; ``window`` is emptied (nothing is left in it to cancel)."""
    unanswered = [task for task, _ in window]
    window.clear()
    return map(_scan_chunk, chain(unanswered, unsent, pending))


def _oldest(window: deque[tuple[_Task, Future[_Done]]]) -> _Done:
    """The result of the oldest chunk in ``window``, then let go of; left in place when the
    pool broke before answering it (:class:`BrokenProcessPool` raised), to be scanned again."""
    done = _result(window[0][1])
    window.popleft()
    return done


def _say_unstarted(error: OSError) -> None:
    say(f"vthread scan: warning: worker processes could not start ({error.strerror or error}); "
        "scanning in this process")


def _end_started_workers() -> None:
    """Kill and reap this process's worker processes (a pool that failed to start them all
    leaves the others waiting for work that never comes)."""
    import multiprocessing

    for child in multiprocessing.active_children():
        child.kill()
        child.join()


# ---------------------------------------------------------------------- one chunk, any process


class _Bad:
    """Why a line is not a thread, and the id of the run it holds when it holds one (a run
    object without usable messages still names itself: its record carries that id)."""

    __slots__ = ("ident", "reason")

    def __init__(self, reason: str, ident: Any = None) -> None:
        self.reason = reason
        self.ident = ident


def _scan_chunk(task: _Task) -> _Done:
    """Parse, validate, scan and format one chunk: the whole per-line pipeline.

    The cyclic garbage collector is paused meanwhile: parsed JSON holds no cycles, and a chunk
    allocates so many objects that the collector would otherwise traverse them again and
    again (it tripled the parse time when measured).
    """
    if task.parts is not None:
        with collector_paused():
            done = _joined_in_core(task)
        return done or _merged(map(_scan_chunk, task.parts))
    with collector_paused():
        try:
            return _scan_chunk_unpaused(task)
        except MemoryError:
            pass  # left first: the error's frames, and all they hold, go before the retry
        return _line_by_line(task)


def _small_chunks_joined(tasks: Iterator[_Task]) -> Iterator[_Task]:
    """``tasks``, consecutive small chunks the core reads alike made one (their ``parts``):
    a directory of small files is read by the core in calls of thousands of lines, not one
    call per file. Any other chunk, and any chunk whose writer paused, goes as it is."""
    pending: list[_Task] = []
    lines = size = 0
    while True:
        try:
            task = next(tasks, None)
        except Exception:
            # (a file that cannot be read ends the scan: the chunks before it are scanned)
            if pending:
                yield _joined(pending)
            raise
        # The chunk's bytes when it is to be read with others, else None.
        more = sum(map(len, task.lines)) if task is not None and _joinable(task) else None
        if more is not None and more > JOIN_BYTES:
            more = None
        if (task is not None and more is not None and pending
                and _join_key(task) == _join_key(pending[0])
                and lines + len(task.lines) <= CHUNK_LINES and size + more <= CHUNK_BYTES):
            pending.append(task)
            lines += len(task.lines)
            size += more
            continue
        if pending:
            yield _joined(pending)
            pending = []
        if task is None:
            return
        if more is not None:
            pending, lines, size = [task], len(task.lines), more
        else:
            yield task


def _joinable(task: _Task) -> bool:
    """Whether the chunk is one of few plain lines the core reads, to be read with others
    when it holds at most ``JOIN_BYTES`` (a chunk that stands for an error, a too large line
    or a paused writer goes alone)."""
    return (type(task.lines) is list and 0 < len(task.lines) < JOIN_BELOW_LINES
            and _core_may_read(task) and not task.paused
            and task.cell_ids is None and task.parts is None)


def _join_key(task: _Task) -> tuple[Any, ...]:
    """What chunks read together share: everything but their file, lines and warnings (the
    format may differ from file to file; the rest is the run's, and checked all the same,
    so that a chunk is never read under another's options)."""
    return (task.format, tuple(task.options.items()), task.strict, task.count_tokens,
            task.threads, task.messages_key, task.id_key, task.mask_volatile,
            task.declared_wins)


def _joined(parts: list[_Task]) -> _Task:
    if len(parts) == 1:
        return parts[0]
    lines = [line for part in parts for line in part.lines]
    # (each part keeps its own named_through, which its warnings use)
    return replace(parts[0], lines=lines, named_through=0, parts=tuple(parts))


def _joined_in_core(task: _Task) -> _Done | None:
    """The result of chunks read together, read by the core at once; None when any of
    their lines is Python's to read (each chunk is then read alone, as it would be)."""
    try:
        return _scan_chunk_in_core(task)
    except MemoryError:
        return None  # each chunk alone, a chunk that still does not fit a line at a time


def _merged(results: Iterable[_Done]) -> _Done:
    """The results of chunks read one after another as one, up to the first that ends the
    scan (a fatal error, a line too large): no record of a chunk after it."""
    parts: list[_Done] = []
    for done in results:
        parts.append(done)
        if done.fatal is not None or done.out_of_memory is not None:
            break
    stats = _Stats()
    for part in parts:
        stats.add(part.stats)
    return _Done(b"".join(part.output for part in parts), stats, parts[-1].fatal,
                 tuple(warning for part in parts for warning in part.warnings),
                 parts[-1].out_of_memory, parts[-1].line_limit,
                 chunks=sum(part.chunks for part in parts),
                 misread=tuple(found for part in parts for found in part.misread),
                 internal=_first_internal(parts))


def _first_internal(parts: list[_Done]) -> str | None:
    """The first bug the engine met among ``parts`` (``_Done.internal``), if any."""
    return next((part.internal for part in parts if part.internal is not None), None)


def _too_large(task: _Task) -> _Done:
    """The result of a line that did not fit the memory the process may use."""
    return _Done(b"", _Stats(), None, out_of_memory=_where(task, task.first_line),
                 line_limit=task.line_limit)


def _line_by_line(task: _Task) -> _Done:
    """A chunk that ran out of memory, scanned again a line at a time: a large line that
    does not fit alone (its scan, not its bytes, which are held already) is an error record
    saying so, and the lines after it are scanned; a smaller one ends the scan there (the
    process is out of memory as a whole: every line would be such a record), the records of
    the lines before it written. A chunk holds thousands of lines, and one too large must
    not take the others' records with it, nor end the scan (a tester's 250 MB line under a
    1.5 GB ``ulimit -v`` ended it with 71, where a longer line, past the most one line may
    take, was dropped and the scan went on)."""
    if len(task.lines) <= 1:
        return _unfit(task, 0)
    parts: list[_Done] = []
    for index, line in enumerate(task.lines):
        fits = True
        try:
            parts.append(_scan_chunk_unpaused(replace(task, lines=[line],
                                                      first_line=task.first_line + index)))
        except MemoryError:
            fits = False  # (its record made outside: the error's frames go first)
        if not fits:
            parts.append(_unfit(task, index))
        if parts[-1].fatal is not None or parts[-1].out_of_memory is not None:
            break
    stats = _Stats()
    for part in parts:
        stats.add(part.stats)
    last = parts[-1]
    warnings = tuple(dict.fromkeys(warning for part in parts for warning in part.warnings))
    return _Done(b"".join(part.output for part in parts), stats, last.fatal, warnings,
                 last.out_of_memory, misread=tuple(found for part in parts
                                                   for found in part.misread),
                 internal=_first_internal(parts))


LARGE_LINE: Final = 1 << 20
"""The bytes from which a line whose scan does not fit the memory is too large to scan, an
error record of its own; a shorter one's failure is the process's, out of memory as a
whole, and ends the scan."""


def _unfit(task: _Task, index: int) -> _Done:
    """The error record of the chunk's line ``index``, whose scan did not fit the memory the
    process may use (under ``--strict``, the fatal error); for a line shorter than
    :data:`LARGE_LINE`, the end of the scan at its place."""
    size = len(task.lines[index]) if index < len(task.lines) else 0
    if size < LARGE_LINE:
        return _too_large(replace(task, first_line=task.first_line + index))
    why = (f"the {task.unit} ({size:,} bytes) is too large to scan in the memory the process "
           "may use (ulimit -v, strict overcommit): it was not read")
    done = _broken_stream(replace(task, lines=[], first_line=task.first_line + index,
                                  broken_lines=1, broken=why))
    if task.strict:
        return done
    return replace(done, warnings=(f"warning: {_where(task, task.first_line + index)}: {why}; "
                                   "its record is an error, and the scan goes on",))


def _scan_chunk_unpaused(task: _Task) -> _Done:
    if task.too_large:
        return _too_large(task)
    if _core_may_read(task):
        done = _scan_chunk_in_core(task)
        if done is not None:
            return done
    return _scan_chunk_in_python(task)


def _core_may_read(task: _Task) -> bool:
    """Whether the core may read the chunk: native lines, or OpenAI, Anthropic or Responses
    runs (which it translates as :mod:`vthread.adapters` does), compared as they are or with
    volatile values masked (as :func:`vthread.masked_thread` masks them), looking at the
    end of each thread or anywhere in it, under keys the core can name (a key that is no
    UTF-8 text, from a command line's undecodable bytes, is Python's)."""
    return (task.format in _CORE_FORMATS and task.broken is None
            and _utf8(task.messages_key) and _utf8(task.id_key))


def _utf8(key: str | None) -> bool:
    return key is None or is_utf8(key)


def _read_in_core(task: _Task) -> dict[str, Any] | None:
    """The core's columns of a chunk (the GIL released while it reads), or None when some
    line needs Python's ``json`` or its adapters."""
    if not _core_may_read(task):
        return None
    options = cycle_options(**task.options)
    if task.anywhere:
        from vthread.anywhere import core_text_run  # imported by the runs that look anywhere
    # A read of the file is handed over whole, its lines read where they lie.
    lines, block = _core_rows(task.lines)
    detected = [part.detected for part in task.parts or (task,) if part.detected is not None]
    raw = _core.scan_lines(lines, core_options(options), task.count_tokens, task.threads,
                           format=cast(_CoreFormat, task.format),
                           messages_key=task.messages_key, id_key=task.id_key,
                           mask_volatile=task.mask_volatile,
                           anywhere=core_text_run() if task.anywhere else None, block=block,
                           detected=detected or None, declared_wins=task.declared_wins)
    # A chunk the core mostly declines is Python's whole (and a file that begins with one
    # goes to worker processes: see _run_in_core).
    return None if 2 * len(raw["declined"]) > len(task.lines) else raw


def _scan_chunk_in_core(task: _Task, raw: dict[str, Any] | None = None) -> _Done | None:
    """The chunk read, parsed (OpenAI, Anthropic and Responses runs translated) and judged by
    the compiled core, no message made into a Python object. A line that needs Python's ``json``
    or adapters (a bad line, an id or number only Python writes exactly, anything the tape
    or the translation declines) is read the Python way alone, with the consecutive lines
    declined with it, so the output never depends on which path read a line. None sends the
    whole chunk the Python way: an option only Python applies, a chunk the core mostly
    declines, or a declined line under ``--strict``. ``raw`` is the core's reading when it
    was made ahead (see :func:`_run_in_core`).

    Only the looping lines are parsed again in Python (a translated or masked line as the
    native line the core made of it), for what their records say of the loop (its signature
    and token cost) and was computed that way before the core existed; a translated line's
    loop is then restated in the file's own messages.
    """
    options = cycle_options(**task.options)
    if raw is None:
        raw = _read_in_core(task)
    if raw is None:
        return None
    declined = raw["declined"].tolist()
    if declined and task.strict:
        # Which line is fatal, and what went before it, is Python's to say (chunks read
        # together are then read alone, each as it would be).
        return None
    try:
        result = (_anywhere_in_core(task, raw) if task.anywhere
                  else _verdicts_in_core(task, raw, options))
    except _ChunkForPythonError:
        return None  # the Python way turns the failing thread into an error record
    counts = raw["message_counts"].tolist()
    codes = result.codes
    loops = codes > 0
    figures = raw["figures"]
    if raw["figures_odd"]:
        counted = [f for f in figures.tolist() if 0 <= f < math.inf]
        tokens = token_total(counted) if counted else None
    else:
        tokens = _token_sum(figures.tolist())
    stats = _Stats(
        lines=len(counts),
        errors=0,
        verdicts=np.bincount(codes, minlength=len(HEURISTIC_NAMES) + 1).tolist(),
        messages=sum(counts),
        loop_messages=int(result.loop_messages[loops].sum()),
        tokens=tokens or 0.0,
        tokens_known=tokens is not None,
        loop_tokens=_nan_sum(result.loop_tokens[loops]),
        loops_without_tokens=int(np.isnan(result.loop_tokens[loops]).sum()),
        anywhere=_every_loop(result.loops),
        read_as_own=_read_as_own_in_core(task, raw["read_as_own"]),
    )
    ids, verdicts = raw["id_texts"], _verdict_texts(result)
    assert len(ids) == len(verdicts) == len(counts) == len(task.lines)
    # Looping lines that may be chat: the core's whose first message has a role or a call
    # id (a declined line's row is an empty thread, neither looping nor chat), then those
    # Python finds among the declined ones.
    maybe_chat = np.flatnonzero(loops & raw["chat_first"]).tolist()
    # Each declined line holds an empty thread in the core's rows: its record and counts
    # are Python's, read a run of consecutive lines (of one chunk) at a time.
    stats.lines -= len(declined)
    stats.verdicts[0] -= len(declined)
    runs = list(_consecutive(declined))
    records: list[str] = []
    misread_lines: list[_Misread] = []
    start = 0
    for part in task.parts or (task,):  # the chunks read together, or the chunk
        end = start + len(part.lines)
        written = _records(part, ids[start:end], verdicts[start:end], counts[start:end])
        chat = _chat_read_as_native(part, [row - start for row in maybe_chat
                                           if start <= row < end])
        for first, last in runs:
            first, last = max(first, start) - start, min(last, end) - start
            if first >= last:
                continue
            done, misread = _read_chunk_in_python(replace(
                part, first_line=part.first_line + first, lines=part.lines[first:last]))
            stats.add(done.stats)
            chat += misread
            python = done.output.decode("ascii").split("\n")[:-1]
            assert len(python) == last - first, "Python wrote other than a record a line"
            written[first:last] = python
        records += written
        misread_lines += _chat_misread(part, sorted(chat))
        start = end
    records.append("")
    return _Done("\n".join(records).encode("ascii"), stats, None, misread=tuple(misread_lines),
                 chunks=len(task.parts) if task.parts is not None else 1)


def _records(task: _Task, ids: list[str], verdicts: list[str], counts: list[int]
             ) -> list[str]:
    """The records of the chunk's lines, from their id and verdict texts and counts of
    messages."""
    file_text = _dumps(task.label)
    first = task.first_line
    return [f'{{"id":{ident},"file":{file_text},"line":{first + row},{verdict},'
            f'"messages":{count}}}'
            for row, (ident, verdict, count) in enumerate(zip(ids, verdicts, counts,
                                                               strict=True))]


def _chat_read_as_native(task: _Task, candidates: list[int]) -> list[tuple[int, Any]]:
    """(line number, format) of the lines of a chunk read as native that were found to loop
    but hold messages of another format: read as native, chat messages are alike, so such
    a line's loop is false. Detection weighs only a file's first lines, so a chat line
    further on in a native file was read as native with no word (and a mixed file is
    common when datasets are concatenated). ``candidates``: the offsets in the chunk of
    looping lines whose first message may be chat (it has a ``role`` or a ``call_id``, as
    the core or :func:`vthread.documents.chat_like` tells), each parsed here for its
    format: no cost to a native file's scan."""
    if task.format != "native" or not candidates:
        return []
    from vthread.documents import misread_as_native

    found: list[tuple[int, Any]] = []
    for row in candidates:
        misfit = misread_as_native(task.lines[row], task.messages_key,
                                   partial(_parse, suspect=True))
        if misfit is not None:
            found.append((task.first_line + row, misfit))
    return found


def _chat_misread(task: _Task, found: list[tuple[int, Any]]) -> tuple[_Misread, ...]:
    """The lines :func:`_chat_read_as_native` found in the chunk, if any, but those the
    file's --format warning named."""
    found = [(line, format_) for line, format_ in found if line > task.named_through]
    return (_Misread(task.label, task.unit, tuple(found)),) if found else ()


class _ChunkForPythonError(Exception):
    """The chunk the core read is Python's to read after all: a looping line's attribution
    failed, or a line the core read is no thread to Python (the Python way then says why in
    the line's record)."""


def _verdicts_in_core(task: _Task, raw: dict[str, Any], options: CycleOptions) -> ScanResult:
    """The chunk's verdicts from the core's columns, each looping line's loop attributed
    (its record's fields), a translated line's loop restated in the file's own messages."""
    try:
        # A looping line of a read is attributed where it lies, from the tape kept of it.
        line_of = (task.lines.view if isinstance(task.lines, _LineBlock)
                   else task.lines.__getitem__)
        result = scan_of_lines(raw, options, line_of, task.messages_key, task.id_key)
    except LineUnreadError as error:  # a looping thread Python's reading may call an error
        raise _ChunkForPythonError from error
    if task.format != "native" and raw.get("native") is not None:
        # A native line masked is its own source: Python's reading restates nothing there.
        _restated_in_source(result, raw, np.concatenate([[0], np.cumsum(raw["lengths"])]))
    return result


def _restated_in_source(result: ScanResult, raw: dict[str, Any],
                        starts: npt.NDArray[np.int64]) -> None:
    """Each looping row's loops restated in the file's own messages (the core translated
    the chunk's lines): row ``row``'s native messages are ``starts[row]`` to
    ``starts[row + 1]`` among them, and so are their source messages among ``raw``'s
    ``sources``."""
    bounds = starts.tolist()
    looping = np.flatnonzero(result.codes).tolist()
    sources = [raw["sources"][bounds[row] : bounds[row + 1]].tolist() for row in looping]
    # The spans whose tokens the restating asks for, read from the lines at once.
    wanted = [(at, *span) for at, row in enumerate(looping)
              for span in recounted_spans(result, row, sources[at])]
    totals: dict[tuple[int, int, int], float] = {}
    if wanted:
        # Only the lines of rows recounted are taken out of the chunk's written lines.
        rows = sorted({at for at, _, _ in wanted})
        lines = written_lines(raw, [looping[at] for at in rows], views=True) or []
        index = {at: position for position, at in enumerate(rows)}
        totals = dict(zip(wanted, written_span_tokens(
            lines, [(index[at], first, end) for at, first, end in wanted]), strict=True))
    for at, row in enumerate(looping):
        in_source_messages(result, row, sources[at], partial(_read_total, totals, at))


def _read_total(totals: dict[tuple[int, int, int], float], at: int, first: int,
                end: int) -> float:
    """The tokens of translated messages ``first`` to ``end - 1`` of looping row ``at``,
    read beforehand (``_restated_in_source``)."""
    return totals[at, first, end]


def _anywhere_in_core(task: _Task, raw: dict[str, Any]) -> ScanResult:
    """Every loop of each of the chunk's threads (``--anywhere``) from the core's screens of
    its lines; a line is parsed in Python only when its screens repeat, to confirm the loop
    and write its record (a translated or masked line as the native line the core made of
    it), and a translated line's loops are then restated in the file's own messages."""
    from vthread.scan import scan_anywhere_of_lines

    written = written_lines(raw, range(len(task.lines)))
    # A line as written is read under the chunk's keys; one the core wrote, the native.
    keys = (task.messages_key, task.id_key) if written is None else (None, None)

    def read(line: bytes, long_digits: bool) -> list[dict[str, Any]]:
        item = _read_thread(line, long_digits, "native", *keys)
        if isinstance(item, _Bad):
            raise ValueError(f"a line the core read is no thread to Python: {item.reason}")
        return item[1]

    screens = raw["anywhere"]
    lines = task.lines if written is None else written
    result = scan_anywhere_of_lines(screens, lines.__getitem__, read, *keys)
    if result is None:
        raise _ChunkForPythonError  # a thread Python's reading may call an error (as above)
    if written is not None and task.format != "native":
        _restated_in_source(result, raw, screens["offsets"])
    return result


def _consecutive(rows: list[int]) -> Iterator[tuple[int, int]]:
    """The runs of consecutive numbers in ascending ``rows``, as (first, last + 1).

    >>> list(_consecutive([2, 3, 4, 9, 11, 12])), list(_consecutive([]))
    ([(2, 5), (9, 10), (11, 13)], [])
    """
    if not rows:
        return
    start = previous = rows[0]
    for row in rows[1:]:
        if row != previous + 1:
            yield start, previous + 1
            start = row
        previous = row
    yield start, previous + 1


def _where(task: _Task, number: int) -> str:
    """Where a record's input is, for a message: ``FILE:LINE`` for a JSONL line (as compilers
    and grep write it), ``FILE: run N`` for a document's run, ``FILE: sample N`` for an
    Inspect log's sample, ``FILE: row N`` for a row."""
    return (f"{task.label}:{number}" if task.unit == "line"
            else f"{task.label}: {task.unit} {number}")


def _broken_stream(task: _Task) -> _Done:
    """The one error record of a gzip stream that broke off after line ``first_line - 1``;
    or, with ``broken_lines``, one error record per line it stands for (with its id from
    ``cell_ids``, else null)."""
    assert task.broken is not None
    if task.broken_lines:
        # Lines (rows) that could not be read: each is a bad line, and under --strict the
        # first of them is fatal, as the first bad line is.
        if task.strict:
            return _Done(b"", _Stats(), f"{_where(task, task.first_line)}: {task.broken}")
        tail = f',"error":{_dumps(task.broken)}}}\n'
        file_text = _dumps(task.label)
        ids = task.cell_ids or {}  # (an unreadable run's id, when its reader knows it)
        output = "".join(
            f'{{"id":{record_id(ids.get(number))},"file":{file_text},"line":{number}{tail}'
            for number in range(task.first_line, task.first_line + task.broken_lines))
        return _Done(output.encode("ascii"),
                     _Stats(lines=task.broken_lines, errors=task.broken_lines), None)
    if task.strict:
        # A document's break says in or after which run it is, and a file's fatal error
        # where it was found: only a JSONL stream's break needs its line put before it.
        says_where = task.unit != "line" or task.broken.startswith(("line ", "run ", "row "))
        where = task.label if says_where else _where(task, task.first_line)
        return _Done(b"", _Stats(), f"{where}: {task.broken}")
    ident = (task.cell_ids or {}).get(task.first_line)  # (a trajectory file's name)
    record = _dumps({"id": ident, "file": task.label, "line": task.first_line,
                     "error": task.broken})
    counts = _Stats(notes=1) if task.broken_is_note else _Stats(lines=1, errors=1)
    return _Done(f"{record}\n".encode("ascii"), counts, None)


def _scan_chunk_in_python(task: _Task) -> _Done:
    done, misread = _read_chunk_in_python(task)
    return replace(done, misread=_chat_misread(task, misread))


def _read_chunk_in_python(task: _Task) -> tuple[_Done, list[tuple[int, Any]]]:
    """The chunk's records and counts, read the Python way, and the looping lines in it
    that look like chat read as native (:func:`_chat_read_as_native`), not yet said."""
    if task.broken is not None:
        return _broken_stream(task), []
    # Each line is parsed, checked and its usages gathered in one go, while its objects are
    # still in the CPU cache; walking the chunk again afterwards cost more than the parse.
    lines = _listed(task.lines)
    suspect = suspect_lines(lines)
    items: list[tuple[Any, int] | _Bad] = []  # (id, message count) or why the line is bad
    threads: list[list[dict[str, Any]]] = []
    # Per thread, the source message of each translated one (None: native, the identity).
    sources: list[list[int] | None] = []
    figures: list[Any] = []
    read_as_own: dict[str, int] = {}
    fatal = None
    for index, line in enumerate(lines):
        item = _read_thread(line, index in suspect, task.format, task.messages_key,
                            task.id_key, "cell" if task.unit == "row" else task.unit,
                            declared_wins=task.declared_wins, read_as_own=read_as_own)
        if isinstance(item, _Bad):
            if item.reason == _BLANK and task.unit == "row":
                # A Parquet row's line is its messages cell's text when it holds the run.
                item = _Bad(BLANK_CELL)
            if item.ident is None and task.cell_ids is not None:
                item = _Bad(item.reason, task.cell_ids.get(task.first_line + index))
            if task.strict:
                fatal = f"{_where(task, task.first_line + index)}: {item.reason}"
                break
            items.append(item)
            continue
        ident, thread, origins = item
        # Every source message yields a translated one, so the last source index counts them.
        items.append((ident, origins[-1] + 1 if origins else len(thread)))
        threads.append(thread)
        sources.append(origins)
    result, failed, bug = _scan_threads(
        [masked_native(t) for t in threads] if task.mask_volatile else threads,
        {**task.options, "anywhere": True} if task.anywhere else task.options)
    for row, origins in enumerate(sources):
        if origins is not None and row not in failed:
            in_source_messages(result, row, origins, tokens_between(threads[row]))
    # The looping lines whose first message may be chat (see _chat_read_as_native).
    thread_lines = [index for index, entry in enumerate(items) if not isinstance(entry, _Bad)]
    chat = [thread_lines[row] for row in np.flatnonzero(result.codes > 0).tolist()
            if row not in failed and threads[row] and chat_like(threads[row][0])]
    counts = [entry[1] for entry in items if not isinstance(entry, _Bad)]
    if failed:
        threads = [t for row, t in enumerate(threads) if row not in failed]
        counts = [c for row, c in enumerate(counts) if row not in failed]
    figures = _usage_figures(threads) if task.count_tokens else []
    scanned = np.ones(len(result), bool)
    scanned[list(failed)] = False
    codes = result.codes[scanned]
    loops = codes > 0
    tokens = _token_sum(figures)
    stats = _Stats(
        lines=len(items),
        errors=len(items) - len(threads),
        verdicts=np.bincount(codes, minlength=len(HEURISTIC_NAMES) + 1).tolist(),
        messages=sum(counts),
        loop_messages=int(result.loop_messages[scanned][loops].sum()),
        tokens=tokens or 0.0,
        tokens_known=tokens is not None,
        loop_tokens=_nan_sum(result.loop_tokens[scanned][loops]),
        loops_without_tokens=int(np.isnan(result.loop_tokens[scanned][loops]).sum()),
        anywhere=_every_loop(None if result.loops is None else [
            found for row, found in enumerate(result.loops) if scanned[row]]),
        read_as_own={(task.label, format_): count for format_, count in read_as_own.items()},
    )
    verdicts = _verdict_texts(result)
    records: list[str] = []
    row = 0
    label = task.label
    file_text = _dumps(label)
    for index, entry in enumerate(items):
        line_number = task.first_line + index
        if isinstance(entry, _Bad):
            records.append(f'{{"id":{record_id(entry.ident)},"file":{file_text},'
                           f'"line":{line_number},"error":{_dumps(entry.reason)}}}')
        elif row in failed:
            records.append(f'{{"id":{record_id(entry[0])},"file":{file_text},'
                           f'"line":{line_number},"error":{_dumps(failed[row])}}}')
            row += 1
        else:
            # The same text json.dumps would write for the record, key for key, built from
            # per-chunk pieces: formatting 10,000 records one dict at a time cost more than
            # parsing them.
            records.append(f'{{"id":{record_id(entry[0])},"file":{file_text},'
                           f'"line":{line_number},{verdicts[row]},"messages":{entry[1]}}}')
            row += 1
    records.append("")
    internal = None
    if bug is not None:
        row, trace = bug
        internal = f"{_where(task, task.first_line + thread_lines[row])}\n{trace}"
    return (_Done("\n".join(records).encode("ascii"), stats, fatal, internal=internal),
            _chat_read_as_native(task, chat))


def _verdict_texts(result: ScanResult) -> list[str]:
    """Per row, the record's fields from "verdict" to "excerpt" as compact JSON text."""
    names = [_dumps(name) for name in HEURISTIC_NAMES]
    tokens = result.loop_tokens.tolist()
    texts = [
        f'"verdict":{names[code - 1]},"loop_start":{start},"period":{period},'
        f'"repetitions":{copies},"loop_messages":{spent},'
        f'"loop_tokens":{_dumps(cost) if math.isfinite(cost) else "null"},'
        f'"signature":"{signature:016x}","excerpt":{_dumps(excerpt)}'
        if code else
        f'"verdict":null,"loop_start":{start},"period":{period},"repetitions":{copies},'
        f'"loop_messages":{spent},"loop_tokens":null,"signature":null,"excerpt":null'
        for code, start, period, copies, spent, cost, signature, excerpt in zip(
            result.codes.tolist(), result.loop_start.tolist(), result.period.tolist(),
            result.repetitions.tolist(), result.loop_messages.tolist(), tokens,
            result.signature.tolist(), result.excerpt, strict=True)
    ]
    if result.loops is not None:
        texts = [f'{text},"loops":{_dumps([loop_as_json(loop) for loop in loops])}'
                 for text, loops in zip(texts, result.loops, strict=True)]
    return texts


def _usage_figures(threads: list[list[dict[str, Any]]]) -> list[Any]:
    """Every message's ``usage.tokens`` (where usage is an object), read at C speed."""
    # filter(None, ...) drops absent and null usages at C speed; a usage of another truthy
    # kind makes dict.get raise, and the chunk's usages are then sorted one by one.
    usages = list(filter(None, map(dict.get, chain.from_iterable(threads), repeat("usage"))))
    try:
        return list(map(dict.get, usages, repeat("tokens")))
    except TypeError:
        return [u.get("tokens") for u in usages if type(u) is dict]


def _dumps(record: Any) -> str:
    # The standard encoder, ASCII-escaped, so the output does not depend on orjson being
    # installed and lone surrogates in an id survive; strict (no NaN or Infinity), so every
    # record is JSON any parser reads. An input id goes through record_id instead.
    return strict_dumps(record)


def _read_thread(
    line: bytes, suspect: bool, format_: str, messages_key: str | None = None,
    id_key: str | None = None, text_name: str = "line", *, declared_wins: bool = False,
    read_as_own: dict[str, int] | None = None,
) -> tuple[Any, list[Any], list[int] | None] | _Bad:
    """(id, native messages, the source message of each or None when the line is native)
    of one line, or why it is not a thread (``text_name``: what the line is, as
    :func:`_parse` takes it; ``declared_wins``, ``read_as_own``: as
    :func:`vthread.documents.read_run`). A MemoryError, before any of it is read, when the
    memory its reading takes cannot be had (:func:`_room_to_read_in_python`)."""
    if len(line) >= ASKED_FROM and not _room_to_read_in_python(line):
        raise MemoryError(f"not enough memory to read a {text_name} of {len(line):,} bytes")
    value = _parse(line, suspect, text_name)
    if isinstance(value, _Bad):
        return _too_deep_said(value, line, id_key) if _too_deep(value) else value
    return _thread(value, format_, messages_key, id_key, declared_wins, text_name, read_as_own)


PYTHON_READING_BYTES_PER_BYTE: Final = 5
"""The memory Python's reading of a line takes for each of its bytes (see the next)."""
PYTHON_READING_BYTES_PER_VALUE: Final = 256
"""The memory Python's reading of a line takes (its parse, its translation from a chat
format, the core's columns of it): so much for each byte of the line (its strings, copied
as they are parsed and translated) and for each value it holds (its objects; the values
counted by the commas and opening brackets outside strings,
:func:`vthread._core.json_separators`). Each measured alone in a fresh process, the reading
of a tau-bench run of 65 MB took 5.2 times its size, one of 180,000 short OpenAI messages
(39 MB) 8.1 times, one of tiny messages 19 times; this asks 1.36-1.6 times that. A share
of the bytes alone asked too little of runs of short messages or too much of runs of long
texts, and commas inside strings (a CSV a tool returned) counted as values asked 9.8 GB of
a line Python read in 0.1 GB."""


def _room_to_read_in_python(line: bytes) -> bool:
    """Whether the memory Python's reading of ``line`` takes can be had now (asked of the
    core: address space only, given back at once). Run out of part-way, the reading failed
    anywhere: in the interpreter (a ``SystemError`` with no exception set, under Python
    3.11), or in the core's own allocations after it, whose failure aborts the process; so a
    line of 325 MB under ``ulimit -v 1500000`` ended the scan with a traceback and no record,
    or SIGABRT, where the records before it and exit 71 were due."""
    strings = len(line) * PYTHON_READING_BYTES_PER_BYTE
    most_values = len(line) // 2  # (a value and its comma take two bytes at least)
    if _core.room_for(strings + most_values * PYTHON_READING_BYTES_PER_VALUE):
        return True  # (no need to count them)
    return _core.room_for(strings + _core.json_separators(line) * PYTHON_READING_BYTES_PER_VALUE)


def _too_deep_said(bad: _Bad, line: bytes, id_key: str | None) -> _Bad:
    """The error record of a line too deep for Python's json: with the run's id when it is
    JSON (read from its top-level members, each read alone: an id is seldom deep); saying
    it is no JSON when it is not (both were "nested too deeply to read", with no id)."""
    from vthread.documents import run_id

    top = _top_level(line)
    if top is None:
        return _Bad("not valid JSON, and nested too deeply for json to say where it breaks")
    opening, members = top
    if opening != b"{":
        return bad
    shallow: dict[str, Any] = {}
    for key, value in members:
        try:
            shallow[_element_value(key)] = _element_value(value)
        except (ValueError, RecursionError):
            continue  # (a deep value: no id)
    return _Bad(bad.reason, run_id(shallow, id_key))


_BLANK: Final = "blank line"
_UTF8_MARK: Final = b"\xef\xbb\xbf"


def _parse(line: bytes, suspect: bool, text_name: str = "line") -> Any:
    """The line's JSON value as ``json.loads(line)`` makes it, or a :class:`_Bad`;
    ``suspect``: the line holds a 19-digit run (:func:`vthread._exact_json.suspect_lines`);
    ``text_name``: what the line is where its error names a place in it (a Parquet row's
    line is its messages cell when the cell is no JSON value, a document's text the
    document)."""
    # (a byte-order mark opening a line is passed over, as json.loads passes it over)
    if not line.removeprefix(_UTF8_MARK).strip(b" \t\r\n"):
        return _Bad(_BLANK)
    try:
        return loads_exactly(line, suspect)
    except (ValueError, RecursionError) as error:
        return _Bad(unread_reason(line, error, text_name))


def _parse_alone(line: bytes) -> Any:
    """:func:`_parse` of a line read on its own: its 19-digit runs looked for in it alone,
    only now that Python parses it (the core reads most lines)."""
    return _parse(line, bool(suspect_lines([line])))


_RUNS_GIVEN_AS: Final = {"line": "a line of its own (jq -c '.[]')", "cell": "a row of its own",
                         "run": "an element of the document's list",
                         "sample": "a sample of its own"}
"""How each run of a batch read where one run belongs is to be given, by what it was."""


def _thread(
    value: Any, format_: str, messages_key: str | None = None, id_key: str | None = None,
    declared_wins: bool = False, text_name: str = "line",
    read_as_own: dict[str, int] | None = None,
) -> tuple[Any, list[dict[str, Any]], list[int] | None] | _Bad:
    """(id, native messages, their source messages or None) of a parsed line, or why it is
    not a thread (``read_as_own``: as :func:`vthread.documents.read_run`)."""
    from vthread.documents import read_run, run_id, runs_for_messages, runs_given_for_messages

    if runs_for_messages(value, messages_key):
        # A batch of runs where one run belongs (jq -c writing a list a line): read as
        # native, its runs were one run's alike messages, a false loop or none, and each
        # run went unchecked with no word; read as chat, "message 0 has no role".
        given = _RUNS_GIVEN_AS.get(text_name, f"a {text_name} of its own")
        return _Bad(runs_given_for_messages(given),
                    run_id(value, id_key) if type(value) is dict else None)
    found = read_run(value, format_, messages_key, id_key, declared_wins, read_as_own)
    if not isinstance(found, str):
        return found
    return _Bad(found, run_id(value, id_key) if type(value) is dict else None)


def _scan_threads(
    threads: list[list[dict[str, Any]]], options: dict[str, Any]
) -> tuple[ScanResult, dict[int, str], tuple[int, str] | None]:
    """One :func:`scan` call, the rows it could not answer (none unless the engine raises),
    and the first of those rows with its traceback.

    Should the engine raise, the chunk is scanned thread by thread so that the one thread it
    fails on becomes an error record (with a placeholder row) instead of sinking the batch;
    being a bug, it is also said with its traceback, and ends the scan with 70 once every
    record is written (a record alone passed a CI gate with 0). A MemoryError is no such
    failure: it goes on to the reading of the chunk a line at a time, and ends the scan at
    the line that does not fit (status 71; with ``--anywhere``, a run too large for the
    memory left was an "internal error" record, and status 0).
    """
    try:
        # Every message was checked to be an object when its line was read.
        return scan_validated(threads, **options), {}, None
    except MemoryError:
        raise
    except Exception:
        pass
    parts: list[ScanResult] = []
    failed: dict[int, str] = {}
    first: tuple[int, str] | None = None
    for row, thread in enumerate(threads):
        try:
            parts.append(scan_validated([thread], **options))
        except MemoryError:
            raise
        except Exception as error:
            failed[row] = f"internal error: {type(error).__name__}: {error}"
            if first is None:
                import traceback

                first = (row, "".join(traceback.format_exception(error)))
            parts.append(scan_validated([[]], **options))
    return ScanResult.concatenate(parts), failed, first


def _token_sum(figures: list[Any]) -> float | None:
    """Sum of the ``usage.tokens`` figures that count, None when none does.

    A figure counts when it is a finite number >= 0 as JavaScript reads it (an integer past
    2**53 as the nearest double: the rule of ``loop_tokens``). NumPy sums the common case;
    unusual figures go one by one.
    """
    if not figures:
        return None
    if set(map(type, figures)) <= {int, float}:
        try:
            values = np.array(figures, np.float64)
        except OverflowError:  # an integer past the largest double: one by one, below
            values = np.array([math.inf])
        if np.abs(values).max() <= _INT_EXACT:
            counted = values[(values >= 0) & (values < math.inf)]
            return float(counted.sum()) if counted.size else None
    exact = [figure for figure in map(counted_figure, figures) if figure is not None]
    return token_total(exact) if exact else None


# -------------------------------------------------------------------------------- summary


def _read_as_own(stats: _Stats, detected: list[tuple[str, str]]) -> dict[str, int]:
    """How many runs were read in a format of their own, by format, but those in the format
    their file is named by (``detected``'s last word on it): a file of declared
    mini-swe-agent runs is named so, though read as OpenAI's chats, and its runs are in
    its format."""
    named = dict(detected)
    counts: dict[str, int] = {}
    for (label, format_), count in stats.read_as_own.items():
        if named.get(label) != format_:
            counts[format_] = counts.get(format_, 0) + count
    return dict(sorted(counts.items()))


def _read_as_own_in_core(task: _Task, read: list[tuple[int, str]]) -> dict[tuple[str, str], int]:
    """:attr:`_Stats.read_as_own` of the lines the core read in a format of their own
    (``read``: each line's place in the chunk and its format), each counted for the file of
    the chunk read together it lies in."""
    counts: dict[tuple[str, str], int] = {}
    if not read:
        return counts
    parts = task.parts or (task,)
    ends = list(accumulate(len(part.lines) for part in parts))
    for offset, format_ in read:
        key = (parts[bisect_right(ends, offset)].label, format_)
        counts[key] = counts.get(key, 0) + 1
    return counts


def _formats_row(detected: list[tuple[str, str]]) -> str:
    """The detected formats, as "format  openai (detected; 2 files: a, b)"."""
    by_format: dict[str, list[str]] = {}
    for label, format_ in detected:
        by_format.setdefault(format_, []).append(label)
    parts = []
    for format_, labels in by_format.items():
        named = ", ".join(shown(label, lines=False) for label in labels[:3]) + (
            ", ..." if len(labels) > 3 else "")
        count = f"{len(labels)} files: " if len(labels) > 1 else ""
        parts.append(f"{format_} (detected; {count}{named})")
    return f"  {'format':<28}{'; '.join(parts)}"


def _nan_sum(figures: Any) -> float:
    """The sum of a float array's figures but its NaNs (no figure); infinite, unsaid, past
    the largest double (NumPy warned on stderr, under -q too)."""
    with np.errstate(over="ignore"):
        return float(np.nansum(figures))


def _summary(stats: _Stats, scanned: str, seconds: float, *,
             detected: list[tuple[str, str]] | None = None,
             units: set[str] | None = None, cut_short: int = 0) -> str:
    threads = stats.lines - stats.errors
    rate = stats.lines / seconds if seconds > 0 else 0.0
    unit = _unit(units or set())
    own = _read_as_own(stats, detected or [])

    def share(part: float, whole: float) -> str:
        # No share of nothing, nor of a token total past the largest double (inf / inf).
        return f"{part / whole:7.1%}" if whole and math.isfinite(whole) else "      -"

    rows = [
        f"vthread scan: {stats.lines:,} {unit}{'' if stats.lines == 1 else 's'} from "
        f"{shown(scanned, lines=False)} in {seconds:.2f} s ({rate:,.0f} {unit}s/s)",
        *([_formats_row(detected)] if detected else []),
        f"  {'threads':<28}{threads:>14,}",
        f"  {'errors':<28}{stats.errors:>14,}",
        *([f"  {'inputs cut short':<28}{cut_short:>14,}  (said above; their records end "
           "with the error)"] if cut_short else []),
        *([f"  {'read as their own':<28}{sum(own.values()):>14,}  ("
           + ", ".join(f"{format_} {count:,}" for format_, count in own.items())
           + ": as they declare or show, not as their file's format)"] if own else []),
        f"  {'progressing':<28}{stats.verdicts[0]:>14,}{share(stats.verdicts[0], threads)}",
        f"  {'loops':<28}{stats.loops:>14,}{share(stats.loops, threads)}",
    ]
    for code, name in enumerate(HEURISTIC_NAMES, 1):
        count = stats.verdicts[code]
        rows.append(f"    {name:<26}{count:>14,}{share(count, threads)}")
    rows.append(f"  {'wasted messages':<28}{stats.loop_messages:>14,}"
                f"{share(stats.loop_messages, stats.messages)} of {stats.messages:,}")
    if stats.tokens_known and not stats.wasted_tokens_known:
        # No loop's cost is recorded: a total of 0 would read as "no waste" (as the report's
        # card says it too).
        rows.append(f"  {'wasted tokens':<28}{'n/a':>14}  ({NO_PRICED_LOOP})")
    elif stats.tokens_known:
        unknown = stats.loops_without_tokens
        rows.append(f"  {'wasted tokens':<28}{figure_text(stats.loop_tokens):>14}"
                    f"{share(stats.loop_tokens, stats.tokens)} of {figure_text(stats.tokens)}"
                    + (f" ({unpriced_loops(unknown)})" if unknown else ""))
    else:
        rows.append(f"  {'wasted tokens':<28}{'n/a':>14}  (no message carries usage.tokens)")
    if stats.anywhere is not None:
        found, spent, cost, _ = stats.anywhere
        runs = "run" if stats.loops == 1 else "runs"
        rows.append(f"  {'loops found anywhere':<28}{found:>14,}  in {stats.loops:,} {runs}: "
                    f"{spent:,} messages" + (f", {figure_text(cost)} tokens"
                                             if stats.anywhere_tokens_known else "")
                    + " (the figures above count each run's costliest loop)")
    return "\n".join(rows) + "\n"
