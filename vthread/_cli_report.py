"""``vthread report FILE... -o report.html``: a dataset's runs as one self-contained page.

Each FILE is either anything ``vthread scan`` reads (trajectories in any detected format,
``.gz``, documents, Parquet, Inspect logs), scanned by ``vthread scan`` itself, in this
process, into a temporary file of records with its ``--summary`` beside it, or a scan's
own output, read back as it is: JSONL (optionally ``.gz``) whose first line is a record (an
object with ``file``, ``line`` and ``verdict`` or ``error``), or Parquet with those columns
(``-o X.parquet``). Records written with ``--only-loops`` lack the progressing runs, so the
figures count fewer runs: a records file without a progressing run draws a warning. The
records are gathered by :class:`vthread.report.ReportData` and the page written by
:func:`vthread.report.render_report`.

Exit status, as ``vthread scan``'s: 0 when the page was written (bad lines are counted as
errors in it), 2 on a usage error, an unreadable input, a records file with a line that is
no record (named by file and line) or an output that is one of the inputs, 74 when the page
cannot be written (a missing folder, no permission, a full disk); the scan's own status
(130 on Ctrl-C, 70 on an internal error) when it did not complete.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import os
import re
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, TextIO, cast

from vthread import _core
from vthread._cli_main import (
    BROKEN_PIPE_EXIT,
    GZIP_MAGIC,
    INTERNAL_EXIT,
    INTERRUPTED_EXIT,
    IO_EXIT,
    TERMINATED_EXIT,
    USAGE_EXIT,
    blocking_stdin,
    give_up,
    input_label,
    input_written_over,
    jobs_argument,
    key_argument,
    named_again,
    numbers_joined,
    opened_regular,
    shown,
    silence_stdout,
    unwritable,
    write_replacing,
    write_through,
)
from vthread._cli_parquet import is_parquet, parquet_source, read_errors
from vthread.adapters import FORMATS
from vthread.report import (
    RecordError,
    ReportData,
    WrittenNumber,
    field_of_a_run,
    message_kinds,
    record_problem,
    render_report,
)

if TYPE_CHECKING:
    from vthread._cli_signals import StopSignals

__all__ = ["run_report"]

SNIFF_BYTES: Final = 64 << 10
"""Bytes read to tell a records file from trajectories: a record line is far shorter."""
MESSAGE_KINDS_PER_RUN: Final = 2_000
"""Longest run whose messages' kinds colour its timeline (one character each in the page)."""
MESSAGE_KINDS_BUDGET: Final = 2_000_000
"""Most message kinds in one page, about as many bytes (at 100,000 runs, 2 MB)."""
_NOT_RECORDS_SUFFIXES: Final = (".traj", ".eval")
_RECORD_COLUMNS: Final = frozenset({"file", "line", "verdict", "error"})


class _ReportError(Exception):
    """A problem that ends the command with ``status`` (the message names file and line)."""

    def __init__(self, message: str, status: int = USAGE_EXIT) -> None:
        super().__init__(message)
        self.status = status


def run_report(argv: Sequence[str], stderr: TextIO, own_process: bool = False) -> int:
    """Run ``vthread report`` with ``argv`` (the words after ``report``); the exit status.
    Ctrl-C and SIGTERM end it as exceptions (the scan's own handling of them,
    :class:`vthread._cli_signals.StopSignals`, from its start to its end: outside the scan SIGTERM
    killed the process, leaving the scan's temporary folder of records behind and saying
    nothing), except while the page is written to a file, which they wait for; once the
    status is decided they change nothing (``own_process``: the process is the command's
    own, and they are ignored from then on, as ``vthread scan`` ignores them)."""
    from vthread._cli_signals import StopSignals, TerminatedError

    stdin = sys.stdin  # replaced while standard input is read (``_stdin_holds_records``)
    messages = _Shown(stderr)
    stops = StopSignals()
    try:
        status = _run_report(argv, cast(TextIO, messages), stops)
    except TerminatedError:
        stops.settle()
        messages.write("vthread report: terminated\n")
        return TERMINATED_EXIT
    finally:
        stops.close(ignore=own_process)
        sys.stdin = stdin
    return status


class _Shown(io.TextIOBase):
    """A text stream that writes to ``stream`` what :func:`shown` makes of each text: the
    report's messages name files and runs, whose control characters must not reach the
    terminal as commands. Each text written is one message ending in its newline; a newline
    before that came from what it quotes (a file named ``a\\nb.jsonl``) and is escaped too.
    A stream that fails is given up, as :func:`vthread._cli_main.say` gives up standard
    error: messages are not worth the page (``2>/dev/full`` ended the report with 70 and
    no page)."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is not None:
            try:
                self.stream.write(shown(text, lines=False))
                self.stream.flush()
            except (OSError, ValueError):
                self._give_up()
        return len(text)

    def flush(self) -> None:
        if self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self._give_up()

    def _give_up(self) -> None:
        stream, self.stream = self.stream, None
        assert stream is not None
        give_up(stream)


class _Warned(io.TextIOBase):
    """A text stream that writes to ``stream`` and keeps each warning written, the report's
    own (``vthread report: warning: WHAT``) and the scan's of a file (``vthread report:
    FILE: warning: WHAT``), as ``WHAT`` and ``FILE: WHAT``, once each, for the page to show.
    The inputs the scan left out or did not read whole reach the page from its summary
    (:func:`_scan_into`), not from what it said of them."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self.warnings: list[str] = []

    def write(self, text: str) -> int:
        said = text.removeprefix("vthread report: ").rstrip("\n")
        if said != text.rstrip("\n") and (said.startswith("warning: ") or ": warning: " in said):
            self.keep(said.removeprefix("warning: ").replace(": warning: ", ": ", 1))
        return self.stream.write(text)

    def keep(self, warning: str) -> None:
        """Show ``warning`` on the page (once)."""
        if warning not in self.warnings:
            self.warnings.append(warning)

    def flush(self) -> None:
        self.stream.flush()


def _run_report(argv: Sequence[str], shown: TextIO, stops: StopSignals) -> int:
    warned = _Warned(shown)
    stderr = cast(TextIO, warned)
    parser = _parser()
    try:
        options = parser.parse_args(numbers_joined(list(argv), parser))
    except SystemExit as exit_:  # --help and usage errors
        return exit_.code if isinstance(exit_.code, int) else USAGE_EXIT
    if options.format == "auto":
        options.format = None  # detected per file, as vthread scan's default
    written = "standard output" if options.output == "-" else options.output
    try:
        for name in options.files:
            _check_readable_twice(name)
        _check_output(options.output, options.files)
        data = ReportData()
        if options.files.count("-") > 1:
            # Standard input is read once (and told records or runs once, before the scan).
            raise _ReportError("- (standard input) is given more than once", USAGE_EXIT)
        records_in = {name for name in options.files
                      if (_stdin_holds_records() if name == "-" else holds_records(name))}
        to_scan = [name for name in options.files if name not in records_in]
        _warn_of_records_read_twice(options.files, records_in, stderr)
        if not to_scan:
            _warn_of_scan_options(options, stderr)
        # The scan's status: 0, or 70 when it met a bug on a run, whose record is an error
        # (the page is made, and then the report ends with it).
        scanned = 0
        if to_scan:
            scanned, paged = _scan_into(data, to_scan, options, warned)
            if not paged:
                return scanned
        for name in options.files:
            if name not in to_scan:
                progressing, loops, lines = data.progressing, data.loops, data.lines
                notes = len(data.notes)
                _read_records(data, name, stderr)
                for file, what in data.notes[notes:]:  # (as the scan said each, FILE first)
                    stderr.write(f"vthread report: {file}: warning: {what}\n")
                data.tokens = None  # records hold no run's total tokens
                label, read = input_label(name), data.lines - lines
                if data.progressing == progressing and data.loops == loops:
                    # (as the scan of the runs says it: its records were none but errors)
                    none = ("it holds no record" if not read
                            else f"its {read:,} record{'s are' if read > 1 else ' is an'} "
                            f"error{'s' if read > 1 else ''}")
                    stderr.write(f"vthread report: warning: {label}: no thread was scanned: "
                                 f"{none}\n")
                elif data.progressing == progressing:
                    stderr.write(f"vthread report: warning: {label} holds no progressing run "
                                 f"(written with --only-loops, or every run loops); the "
                                 f"figures count only the runs it holds\n")
        title = options.title or f"vthread report: {_what(options.files)}"
        warnings = warned.warnings
        if data.summary()["threads"]:
            # (the scan of the runs found none, and said so; the records read give the page
            # its runs)
            warnings = [w for w in warnings if not w.startswith("no thread was scanned")]
        page = render_report(data, title=title, sources=[input_label(name) for name in
                                                         options.files], warnings=warnings)
        try:
            # Lone surrogates (ids Python read from JSON escapes) cannot be UTF-8: "?".
            # The page is written whole before a signal takes effect, but to a reader that
            # may stall (standard output, a FIFO) only for as long as a scan's write waits.
            with stops.held_for_a_write(options.output):
                _write_page(options.output, page.encode("utf-8", "replace"))
        except BrokenPipeError:
            # The reader of standard output went away (| head): end quietly, as scan does.
            if sys.stdout is not None:
                silence_stdout(sys.stdout.buffer)
            return BROKEN_PIPE_EXIT
        except OSError as error:
            why = error.strerror or error
            raise _ReportError(f"cannot write {written}: {why}", IO_EXIT) from None
    except _ReportError as error:
        stderr.write(f"vthread report: {error}\n")
        return error.status
    except KeyboardInterrupt:
        stops.settle()
        stderr.write("vthread report: interrupted\n")
        return INTERRUPTED_EXIT
    stops.settle()  # (the page is written: a signal now changes nothing)
    summary = data.summary()
    runs = summary["threads"]
    errors = f", {summary['errors']:,} not read (error records)" if summary["errors"] else ""
    stderr.write(f"vthread report: {runs:,} run{'' if runs == 1 else 's'}, "
                 f"{summary['loops']:,} with a loop{errors}: wrote {written}\n")
    return scanned


def _warn_of_scan_options(options: argparse.Namespace, stderr: TextIO) -> None:
    """Say that the options of reading runs change nothing when every input holds records
    (they were passed over without a word: a user expecting --format to apply)."""
    given = [flag for flag, value in (("--format", options.format),
                                      ("--messages-key", options.messages_key),
                                      ("--id-key", options.id_key),
                                      ("--mask-volatile", options.mask_volatile or None),
                                      ("--jobs", options.jobs)) if value is not None]
    if given:
        stderr.write(f"vthread report: warning: {', '.join(given)} "
                     f"{'applies' if len(given) == 1 else 'apply'} to runs scanned, and every "
                     "input holds a scan's records: read back as they are\n")


def _warn_of_records_read_twice(files: Sequence[str], records_in: set[str],
                                stderr: TextIO) -> None:
    """Say which records file is given more than once, by any name (its runs are counted
    each time, as a scan counts a trajectory file given twice, in the words it says so)."""
    for name, _ in named_again(name for name in files if name in records_in):
        stderr.write(f"vthread report: warning: {name} is given again: its records are "
                     "counted once for each time it is given\n")


def _write_page(output: str, page: bytes) -> None:
    """Write the page to ``output``; ``-`` is standard output, as for vthread scan -o."""
    if output != "-":
        write_replacing(output, page)
        return
    if sys.stdout is None:
        raise OSError("standard output is closed")
    sys.stdout.flush()
    out = sys.stdout.buffer
    if isinstance(out, io.FileIO):
        write_through(out, page)  # unbuffered (-u): one write call may take only part
    else:
        out.write(page)
    out.flush()


_EXIT_STATUS_HELP: Final = """\
exit status:
  0    the page was written; bad lines of the runs are counted in it
  2    usage error, an input that is not there or cannot be read, a records file
       with a line that is no record or is longer than a line may take (FILE:LINE),
       output that is an input
  70   internal error (a bug: the traceback is on standard error; please report it)
  71   out of memory, as for vthread scan
  74   the page could not be written (a missing folder, no permission, a full disk)
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM)
  141  standard output closed early by its reader (-o - | head)
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vthread report",
        # (wrapped here: the exit statuses' table below needs the raw description format)
        description="Scan trajectory files (anything vthread scan reads), or read a scan's "
        "records (JSONL or Parquet),\nand write one self-contained HTML page: headline "
        "figures, loops by kind, the most repeated loops,\nand a sortable table of the "
        "looping runs.",
        epilog=_EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="trajectory file as vthread scan takes it, or vthread scan's "
                        "output (JSONL, .gz, or Parquet); - for standard input")
    parser.add_argument("-o", "--output", metavar="PATH", required=True,
                        help="the HTML file to write (- for standard output)")
    parser.add_argument("--title", help="the page's title (default: names the inputs)")
    parser.add_argument("--format", choices=(*FORMATS, "auto"),
                        help="message format, as for vthread scan")
    parser.add_argument("--messages-key", metavar="KEY", type=key_argument,
                        help="as for vthread scan")
    parser.add_argument("--id-key", metavar="KEY", type=key_argument, help="as for vthread scan")
    parser.add_argument("--mask-volatile", action="store_true", help="as for vthread scan")
    # (checked here, so that a bad value is said even when only records are read)
    parser.add_argument("-j", "--jobs", type=jobs_argument, metavar="N",
                        help="as for vthread scan")
    return parser


def _what(inputs: Sequence[str]) -> str:
    """The inputs as the page's default title names them: each as given (a folder stands
    for the files under it, so a count of the names would count it as one file), the
    first alone and how many more when they make a long title."""
    named = ", ".join(map(input_label, inputs))
    if len(inputs) == 1 or len(named) <= _TITLE_NAMES:
        return named
    return f"{input_label(inputs[0])} and {len(inputs) - 1:,} more inputs"


_TITLE_NAMES: Final = 80
"""Characters of input names the default title holds before it counts the rest."""


def _check_output(output: str, files: Sequence[str]) -> None:
    """Refuse an output that is an input, named or found under an input directory (it would
    be written over), or that cannot be written (:func:`unwritable`), before a long scan
    rather than after it."""
    if output == "-":
        return  # standard output
    if output == "":
        raise _ReportError("-o: an empty path names no file (- is standard output)",
                           USAGE_EXIT)
    from vthread.cli import overwrite_refusal, trajectory_files

    for name in files:
        if name == "-":
            # Standard input redirected from the output file (< runs.jsonl): writing the
            # page would empty the file before it is read.
            if input_written_over(output, ["-"]) is not None:
                raise _ReportError(f"the output {output} is the input standard input; "
                                   "writing it would destroy the input (choose another path)")
            continue
        for found in trajectory_files(name):
            with contextlib.suppress(OSError):
                if os.path.samefile(output, found):
                    where = "" if found == name else f" under the input {name}"
                    raise _ReportError(f"the output {output} is the input {found}{where}; "
                                       "writing it would destroy the input (choose another "
                                       "path)")
    refusal = overwrite_refusal(output, "the output")
    if refusal is not None:
        # (vthread report -o runs.jsonl records.jsonl: the page written over the runs)
        raise _ReportError(refusal, USAGE_EXIT)
    why = unwritable(output)
    if why is not None:
        raise _ReportError(f"cannot write {output}: {why}", IO_EXIT)


def _check_readable_twice(name: str) -> None:
    """Refuse a pipe or a FIFO named as an input (``<(cmd)``, ``mkfifo``): the report reads
    the start of each named input to tell records from runs, then reads it again, and a
    pipe gives its bytes once (the report came out empty, or waited forever on a FIFO whose
    writer had gone). Standard input (``-``) is read once (its first bytes replayed, see
    ``_stdin_holds_records``)."""
    if name == "-":
        return
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return  # missing or unreadable: said where it is read, as for any file
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        raise _ReportError(f"{name} is a pipe, not a file: vthread report reads each input "
                           "more than once (to tell records from runs, then for them), and a "
                           "pipe gives its bytes once; save it to a file first (vthread scan "
                           "-o FILE writes records to one)")


def holds_records(name: str, *, throughout: bool = False) -> bool:
    """Whether the file is ``vthread scan``'s JSONL output: its first line is a record (and,
    ``throughout``, every whole line of its first bytes: a file a scan would pass over or
    write over must not be runs behind one record line)."""
    base = name.lower().removesuffix(".gz")
    if name == "-" or base.endswith(_NOT_RECORDS_SUFFIXES):
        return False
    if is_parquet(name):
        return _parquet_holds_records(name)
    try:
        # (not blocking on a FIFO: one put in a directory's file's place since it was listed)
        with opened_regular(name) as raw:
            start = b""
            for size in _FIRST_READS:
                start += raw.read(size - len(start))
                if _first_line_is_no_record(start):
                    return False
                if len(start) < size:
                    break  # the whole file
    except OSError:
        return False  # the scan reports what is wrong with it
    return _head_holds_records(name, throughout)


_FIRST_READS: Final = (16 << 10, SNIFF_BYTES)
"""The bytes of a file read in turn to tell it from a records file by its first line alone
(:func:`_first_line_is_no_record`) before its whole head is read: a JSONL run's line is
most often a few kilobytes, and a read of 16 KiB costs about half one of 64 KiB."""


def _head_holds_records(name: str, throughout: bool, *, every_line: bool = False) -> bool:
    """:func:`holds_records` of a text file, told from its whole head (:func:`_head_of`);
    with ``every_line``, every whole line of the head is a record, not only the first."""
    try:
        with opened_regular(name) as raw:
            head, text, ended = _head_of(raw.read, _RAW_HEAD_BYTES,
                                         _PAST_FIRST_LINE if throughout or every_line else 0)
    except OSError:
        return False  # the scan reports what is wrong with it
    # Decompressed as far as the bytes go: a gzip file cut short (still being written) is
    # told by the lines before its cut, as standard input is.
    whole = ended and not head.startswith(GZIP_MAGIC)
    if not _first_line_is_record(text, whole):
        return not throughout and not every_line and _first_record_damaged(text, whole)
    if every_line and not throughout:
        return _lines_are_records(text)
    if not throughout:
        return True
    # A file a scan would pass over or write over: every line of it, not only of its head
    # (records followed by runs appended later are runs, to be scanned and not destroyed).
    return _lines_are_records(text) and _every_line_is_a_record(name)


_WHOLE_FILE_READ: Final = 1 << 20
"""Bytes read (or decompressed) at a time to look at every line of a records file."""


def _every_line_is_a_record(name: str) -> bool:
    """Whether every line with text of the whole file is a record: the file read as the
    scan opens it (:func:`vthread.cli.open_input`: gzip decompressed member after member, as far
    as it decompresses), a byte-order mark passed over at its start only, a last line
    without its newline that is not JSON left out, as :func:`_lines_are_records` leaves it.
    A line longer than :data:`_FIRST_LINE_BYTES` is no record's, so memory stays bounded by
    that."""
    from vthread.cli import open_input

    pending = b""
    started = False
    try:
        # (a regular file only, opened without waiting: one its head was read from may have
        # become a FIFO since)
        stream, _, close, _ = open_input(name, regular_only=True)
        try:
            while block := stream.read(_WHOLE_FILE_READ):
                data = pending + block
                if not started:
                    if len(data) < len(codecs.BOM_UTF8):
                        pending = data  # (a mark is looked for in the stream's first bytes)
                        continue
                    data = data.removeprefix(codecs.BOM_UTF8)
                    started = True
                *lines, pending = data.split(b"\n")
                if not _all_records(lines):
                    return False
                if len(pending) > _FIRST_LINE_BYTES:
                    return False
        finally:
            close()
    except OSError:
        return False  # the scan reports what is wrong with it
    return not pending.strip() or _line_is_record(pending) is not False


def _all_records(lines: list[bytes]) -> bool:
    """Whether every line with text of ``lines`` is a record (:func:`_line_is_record`), each
    parsed by orjson where that gives json's value (a line holding no 19-digit run, which
    orjson could round, and that orjson reads at all: it refuses all else json reads
    otherwise, lone surrogates, NaN, bytes that are no UTF-8), else as the records reader
    parses it. A records file of 50 MB took 1.8 s to read line by line through json."""
    from vthread._exact_json import FAST_LONGEST, fast_loads, suspect_lines

    suspects = suspect_lines(lines)
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        if fast_loads is not None and index not in suspects and len(line) <= FAST_LONGEST:
            try:
                value = fast_loads(line)
            except ValueError:
                pass  # json decides, below
            else:
                if not is_record(value):
                    return False
                continue
        if _line_is_record(line) is not True:
            return False
    return True


_SUMMARY_KEYS: Final = frozenset({"scanned", "completed", "lines", "unit", "threads", "loops"})
"""Keys every ``vthread scan --summary`` file holds."""


def holds_summary(name: str) -> bool:
    """Whether the file is an earlier ``vthread scan --summary`` (a small JSON object with
    the summary's keys)."""
    if not name.lower().endswith(".json"):
        return False
    # a summary is a few kilobytes; a document of runs may be gigabytes
    return is_summary(small_json_document(name, 1 << 20))


def earlier_output_problem(name: str, *, throughout: bool = False) -> str | None:
    """What the file ``name`` holds that vthread does not write there, said after "it", or
    None when writing over it loses nothing else: it is not there, or no regular file (a
    pipe, ``/dev/null``: nothing held), or it holds nothing (no byte, whitespace alone, a
    gzip of nothing: a night without a loop), or a scan's records (every whole line of its
    head one, whatever its name; ``throughout``, every line of it), a scan's Parquet
    records, a scan's summary (whatever its name) or a report's page. Told from its first
    bytes, but for a summary's (read whole when it is at most :data:`_SUMMARY_BYTES` and
    does not open as vthread writes one) and for records read ``throughout``."""
    try:
        status = os.stat(name)
    except OSError:
        return None  # (not there; or out of reach, which writing it then says)
    if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
        return None
    try:
        with opened_regular(name) as raw:
            head = raw.read(_RAW_HEAD_BYTES)
            if head.startswith(_PARQUET_MAGIC):
                raw.seek(-len(_PARQUET_MAGIC), os.SEEK_END)
                return _parquet_output_problem(name, raw.read() == _PARQUET_MAGIC)
    except OSError as error:
        return f"cannot be read to tell ({error.strerror or error})"
    # (gzip decompressed as far as its bytes go: a scan killed as it wrote it left it cut)
    text = _decompressed(head, _PAST_FIRST_LINE + 1)
    if len(head) == status.st_size and len(text) <= _PAST_FIRST_LINE and not text.strip():
        return None
    if head.startswith(_PAGE_OPENING) or head.startswith(_SUMMARY_OPENING):
        return None
    if _head_holds_records(name, throughout, every_line=True):
        return None
    if (head.lstrip().startswith(b"{") and status.st_size <= _SUMMARY_BYTES
            and is_summary(small_json_document(name, _SUMMARY_BYTES))):
        return None
    return "is not a scan's records, summary or a report's page, as its first lines show"


def _parquet_output_problem(name: str, footed: bool) -> str | None:
    """:func:`earlier_output_problem` of a Parquet file (``footed``: it ends as one does)."""
    if not footed:
        return ("is a Parquet file cut short, without its footer (a scan killed as it wrote "
                "it?), which cannot tell whose rows it holds")
    try:
        import pyarrow  # noqa: F401
    except ModuleNotFoundError:
        return "is a Parquet file, which without pyarrow cannot be told from one of runs"
    if _parquet_holds_records(name):
        return None
    return "is a Parquet file without the columns of a scan's records"


_PAGE_OPENING: Final = b"<!DOCTYPE html>"
"""The first bytes of every page ``vthread report`` writes."""
_SUMMARY_OPENING: Final = b'{\n  "exit_status": '
"""The first bytes of every ``--summary`` file ``vthread scan`` writes (one of older
versions, or written again by another program, is read whole)."""
_PARQUET_MAGIC: Final = b"PAR1"
"""The first and the last bytes of a Parquet file."""
_SUMMARY_BYTES: Final = 64 << 20
"""The largest ``--summary`` file not opening as :data:`_SUMMARY_OPENING` that is told
apart from runs by reading it whole."""


def is_summary(value: object) -> bool:
    """Whether a JSON value is a ``vthread scan --summary``: an object with the summary's
    keys, its ``messages`` a count (a run holds its messages in an array)."""
    return (isinstance(value, dict) and value.keys() >= _SUMMARY_KEYS
            and not isinstance(value.get("messages"), list))


def small_json_document(name: str, limit: int, opening: re.Pattern[bytes] | None = None
                        ) -> object:
    """The JSON value of the file ``name`` when it is a regular file of at most ``limit``
    bytes (and, with ``opening``, its first :data:`_PREDICTIONS_HEAD` bytes match it, read
    before the size is looked at), else None: the small files told apart from runs by their
    content (a summary, predictions, an eval set's bookkeeping) are read whole, a document
    of runs is not. A file that cannot be read or parsed is None (its scan says what is
    wrong)."""
    try:
        with opened_regular(name) as stream:
            head = b""
            if opening is not None:
                head = stream.read(_PREDICTIONS_HEAD + 1)
                if not opening.match(head):
                    return None
            if os.fstat(stream.fileno()).st_size > limit:
                return None
            return json.loads(head + stream.read())
    except (OSError, ValueError, RecursionError):
        return None


def holds_predictions(name: str) -> bool:
    """Whether the file holds SWE-bench predictions, not runs: the ``preds.json``
    mini-swe-agent writes beside its trajectories (an object of instance id -> prediction,
    or a list of predictions) or SWE-agent's ``all_preds.jsonl`` (a prediction a line), each
    prediction an object with ``instance_id`` and ``model_patch`` and no messages
    (:func:`is_prediction`). Only a file opening as predictions do (a prediction's key first
    in the first object) is read further: a JSON document (``.json``) of at most
    :data:`_PREDICTIONS_BYTES` whole, JSONL (``.jsonl``) by every whole line of its first
    :data:`_PREDICTIONS_HEAD` bytes. A file that cannot be read is not (its scan says what
    is wrong)."""
    lowered = name.lower()
    if lowered.endswith(".json"):
        # First the opening (a prediction's key first in the first one): a directory of run
        # documents is not parsed twice to tell, only these files are.
        value = small_json_document(name, _PREDICTIONS_BYTES, _OPENS_PREDICTIONS)
        listed = list(value.values()) if isinstance(value, dict) else value
        return isinstance(listed, list) and bool(listed) and all(map(is_prediction, listed))
    if not lowered.endswith(".jsonl"):
        return False
    try:
        with opened_regular(name) as stream:
            head = stream.read(_PREDICTIONS_HEAD + 1)
            if not _OPENS_A_PREDICTION.match(head):
                return False
            lines = head.splitlines()
            if len(head) > _PREDICTIONS_HEAD:
                lines = lines[:-1]  # (the last may be cut by the read)
            lines = [line for line in lines if line.strip()]
            return bool(lines) and all(is_prediction(json.loads(line)) for line in lines)
    except (OSError, ValueError, RecursionError):
        return False


def inspect_bookkeeping(name: str) -> str | None:
    """What the file is when it is one of the files Inspect AI's ``eval_set`` writes beside
    its logs, not runs, else None: ``logs.json`` (the manifest of the set's logs: an
    object of log file name -> log header, no samples) or ``eval-set.json`` (the set's
    id and tasks). Told by the name, then the content (a document of at most
    :data:`_PREDICTIONS_BYTES`, read whole); a file that cannot be read is neither (its
    scan says what is wrong)."""
    base = os.path.basename(name).lower()
    if base not in ("logs.json", "eval-set.json"):
        return None
    from vthread.inspect_log import bookkeeping_of

    return bookkeeping_of(small_json_document(name, _PREDICTIONS_BYTES), base)


_PREDICTION_KEY: Final = rb'\{\s*"(?:model_name_or_path|instance_id|model_patch)"'
_OPENS_A_PREDICTION: Final = re.compile(rb"\s*" + _PREDICTION_KEY)
"""How a JSONL file of predictions opens: an object whose first key is a prediction's."""
_OPENS_PREDICTIONS: Final = re.compile(
    rb'\s*(?:\{\s*"(?:[^"\\]|\\.)*"\s*:\s*|\[\s*)' + _PREDICTION_KEY)
"""How a JSON document of predictions opens: an object whose first member, or a list whose
first element, is an object whose first key is a prediction's."""


_PREDICTIONS_BYTES: Final = 64 << 20
"""The largest JSON document read whole to tell it holds predictions (500 SWE-bench Verified
predictions are about 3 MB)."""
_PREDICTIONS_HEAD: Final = 256 << 10
"""The bytes of a JSONL file whose whole lines tell it holds predictions."""


def is_prediction(value: object) -> bool:
    """Whether a JSON value is a SWE-bench prediction (``instance_id``, ``model_patch``, and
    usually ``model_name_or_path``), not a run: it holds no messages under any key a run is
    read by.

    >>> is_prediction({"instance_id": "a__b-1", "model_patch": "diff", "model_name_or_path": "m"})
    True
    >>> is_prediction({"instance_id": "a__b-1", "model_patch": "", "messages": []})
    False
    """
    from vthread.documents import MESSAGES_KEYS

    return (isinstance(value, dict) and "instance_id" in value and "model_patch" in value
            and not any(key in value for key in MESSAGES_KEYS))


def is_record(value: object) -> bool:
    """Whether a JSON value is one of ``vthread scan``'s records
    (:func:`vthread.report.record_problem` says the rule)."""
    return record_problem(value) is None


_RAW_HEAD_BYTES: Final = 4 * SNIFF_BYTES
"""Bytes of a file read at first to tell records from runs."""
_FIRST_LINE_BYTES: Final = 8 << 20
"""Most text of a stream's first line read to tell records from runs: a record's line is
short but for its run's id, which it repeats whole (the records of a run named with 300,000
characters were read as runs); a first line longer than this is taken for a run's (a JSON
document's first line may be all of it), whose scan reads it anyway."""
_PAST_FIRST_LINE: Final = SNIFF_BYTES
"""Text of a file read past its first line, for the lines after it to be looked at too (a
records line followed by runs is no records file)."""


def _head_of(read: Callable[[int], bytes], first: int, after: int = 0
             ) -> tuple[bytes, bytes, bool]:
    """(first bytes, their text, whether the stream ended there) of a stream: ``first`` bytes
    asked of ``read`` (a pipe's ``read1`` gives what has come), then more until their text
    (:func:`_text_of`) holds a whole line with text and ``after`` bytes past it, or
    :data:`_FIRST_LINE_BYTES` of text and ``after`` with no whole line, or the stream
    ends. Past :data:`SNIFF_BYTES` of text each read asks for as much as is held and the
    text is looked at when the bytes have doubled, so that a long first line costs time
    linear in its size (while the text is shorter, after every read: a pipe's first record
    may come alone)."""
    head = bytearray()
    look_at = 0  # (the size of the bytes at which the text is next looked at)
    text, ended = b"", False
    while True:
        more = read(max(first, len(head)))
        if not more:
            ended = True
            break
        head += more
        if len(head) < look_at:
            continue
        text = _text_of(bytes(head), after)
        end = _whole_line_end(text)
        if ((end and len(text) >= end + after) or len(text) >= _FIRST_LINE_BYTES + after
                or len(head) >= 4 * (_FIRST_LINE_BYTES + after)):
            break
        look_at = 0 if len(text) < SNIFF_BYTES else 2 * len(head)
    data = bytes(head)
    return data, _text_of(data, after) if ended else text, ended


def _text_of(head: bytes, after: int = 0) -> bytes:
    """The text of a stream's first bytes, decompressed when gzipped, as far as they go: at
    least :data:`SNIFF_BYTES` of it, or all there is, and as far as ``after`` bytes past its
    first whole line with text, to at most :data:`_FIRST_LINE_BYTES` and ``after`` (gzip
    text is decompressed again to four times as much while it holds too little: linear in
    the text returned). Past its first line and ``after`` the text is cut at
    :data:`_RAW_HEAD_BYTES`, as much as was ever looked at."""
    most = _FIRST_LINE_BYTES + after
    limit = SNIFF_BYTES
    while True:
        text = _decompressed(head, limit)
        end = _whole_line_end(text)
        if (end and len(text) >= end + after) or len(text) < limit or limit >= most:
            break
        limit = min(4 * limit, most)
    if end:
        return text[: max(_RAW_HEAD_BYTES, end + after)]
    return text[:most]


def _whole_line_end(text: bytes) -> int:
    """Where the first line with text that a newline ends, ends (after its newline); 0 when
    there is none. O(len(text)). A byte-order mark opening the text is no text (the reader
    passes it over, as :func:`_first_line` does: a mark alone on the first line ended the
    head before the line after it was whole)."""
    start = len(codecs.BOM_UTF8) if text.startswith(codecs.BOM_UTF8) else 0
    while (end := text.find(b"\n", start)) >= 0:
        if text[start:end].strip():
            return end + 1
        start = end + 1
    return 0


def _stdin_holds_records() -> bool:
    """Whether standard input is ``vthread scan``'s records (``vthread scan ... | vthread
    report -``), told as a file is by its first line: its first bytes are read (to its first
    whole line, :data:`_FIRST_LINE_BYTES` of text or its end: :func:`_head_of`) and
    ``sys.stdin`` replaced by a reader that gives them again, so that the records, or
    the scan of runs, read it from its start."""
    stdin = sys.stdin
    buffer = getattr(stdin, "buffer", None)
    if buffer is None:
        return False
    buffer = blocking_stdin(buffer)
    read = getattr(buffer, "read1", buffer.read)  # what has come, not a whole block
    held = bytearray()  # (what was read, replayed whatever happens)

    def kept(size: int) -> bytes:
        more: bytes = read(size)
        held.extend(more)
        return more

    try:
        _, text, ended = _head_of(kept, SNIFF_BYTES)
    except (OSError, ValueError):
        return False  # the scan of it says what is wrong
    finally:
        sys.stdin = io.TextIOWrapper(io.BufferedReader(_Replaying(bytes(held), buffer)),
                                     encoding=getattr(stdin, "encoding", None) or "utf-8")
    return _first_line_is_record(text, ended) or _first_record_damaged(text, ended)


def _decompressed(head: bytes, limit: int) -> bytes:
    """The first bytes of a stream as text: decompressed, as far as they go and to at most
    ``limit`` bytes, when they open a gzip member."""
    if not head.startswith(GZIP_MAGIC):
        return head
    text = b""
    try:
        # Member after member, as gzip.open reads them (shards joined by cat; an empty
        # member first, as --only-loops writes for a shard without loops).
        while head and len(text) < limit:
            member = zlib.decompressobj(16 + zlib.MAX_WBITS)
            text += member.decompress(head, limit - len(text))
            if not member.eof:
                break
            head = member.unused_data
    except zlib.error:
        pass
    return text


def _first_line_is_record(head: bytes, ended: bool) -> bool:
    """Whether the first line with text of ``head``, a stream's first bytes (all of them when
    ``ended``), is a record; a line the head cuts short is none."""
    first = _first_line(head, ended)
    return _may_be_record(first) and _line_is_record(first) is True


def _first_record_damaged(head: bytes, ended: bool) -> bool:
    """Whether the first line with text of a stream's head is no record but shaped as one
    (an object naming a ``file`` and a ``line``, no field of a run's) and the next line
    with text is one: records whose first line was damaged (a verdict edited, a line
    number written as text). ``vthread report`` reads them as records, so that the first
    line's fault is said; read as runs, each line was an error record, and the page of
    none was written."""
    text = head.removeprefix(codecs.BOM_UTF8)
    first = _first_line_with_text(text, ended)
    if not first or not _may_be_record(first):
        return False
    second = _first_line_with_text(text[text.index(first) + len(first):], ended)
    if _line_is_record(second) is not True:
        return False
    try:
        value = _record_of(first)
    except ValueError:
        return False
    return (isinstance(value, dict) and "file" in value and "line" in value
            and field_of_a_run(value) is None)


def _first_line_is_no_record(start: bytes) -> bool:
    """Whether a file's first bytes already show that its first line is no record: they
    hold that line whole, and it cannot be one (:func:`_may_be_record`). A directory of runs
    is told from records a small read each, not the first 256 KiB of every file.

    Why it agrees with the whole head's reading: the text of a longer head is the text of
    these bytes and more (or, for a gzip file broken further on, none at all), so a line
    these bytes hold whole is its first line with text too (or it has none: no record)."""
    first = _first_line(_decompressed(start, SNIFF_BYTES), False)
    return bool(first) and not _may_be_record(first)


def _first_line(head: bytes, ended: bool) -> bytes:
    """The first line with text of a stream's first bytes, past a byte-order mark opening
    it (:func:`_first_line_with_text`)."""
    return _first_line_with_text(head.removeprefix(codecs.BOM_UTF8), ended)


def _first_line_with_text(text: bytes, ended: bool) -> bytes:
    """The first line of ``text`` that holds more than whitespace, or ``b""``; a last line
    without its newline counts only when ``ended``. Found a line at a time, not by splitting
    the whole of ``text`` (a stream's head, up to a megabyte)."""
    start = 0
    while True:
        end = text.find(b"\n", start)
        if end < 0:
            last = text[start:]
            return last if ended and last.strip() else b""
        if text[start:end].strip():
            return text[start:end]
        start = end + 1


def _may_be_record(line: bytes) -> bool:
    """False for a line that cannot be a record, told without parsing it: a record names its
    file and line, so the line holds the keys ``"file"`` and ``"line"`` as written, unless a
    ``\\u`` escape writes a letter of one (a directory of runs is told from records at the
    cost of a search, not of a parse of each file's first run). Searched by the core
    (:func:`vthread._core.may_be_record`); :func:`_may_be_record_plainly` is its twin."""
    return _core.may_be_record(line)


def _may_be_record_plainly(line: bytes) -> bool:
    """:func:`_may_be_record` by Python's own searches."""
    return b"\\u" in line or (b'"file"' in line and b'"line"' in line)


def _lines_are_records(head: bytes) -> bool:
    """Whether every line with text of ``head`` is a record. A last line without its newline
    that is not JSON is left out: the head cut it short, or a scan killed while writing (or
    still writing) the file did; one that is JSON is a whole line, and counts."""
    # A byte-order mark only opens the stream, as the reader passes one over only there.
    *whole, last = head.removeprefix(codecs.BOM_UTF8).split(b"\n")
    return (all(_line_is_record(line) is True for line in whole if line.strip())
            and (not last.strip() or _line_is_record(last) is not False))


def _line_is_record(line: bytes) -> bool | None:
    """Whether a line of a stream's first bytes is a record (:func:`is_record`), read as the
    records are (:func:`_record_of`: UTF-8, so not the UTF-16 ``json.loads`` of bytes would
    also take); None when it holds no JSON."""
    try:
        return is_record(_record_of(line))
    except ValueError:
        return None


class _Replaying(io.RawIOBase):
    """A stream's first bytes, read ahead, then the rest of the stream."""

    def __init__(self, head: bytes, rest: Any) -> None:
        super().__init__()
        self.head = head
        self.rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        if self.head:
            count = min(len(target), len(self.head))
            target[:count] = self.head[:count]
            self.head = self.head[count:]
            return count
        more = getattr(self.rest, "read1", self.rest.read)(len(target))
        target[:len(more)] = more
        return len(more)

    def fileno(self) -> int:
        return int(self.rest.fileno())


class _Decompressed(io.RawIOBase):
    """A gzip file's bytes as ``vthread scan`` decompresses them (:class:`vthread.cli.GzipStream`:
    member after member, as far as they go), as a raw stream for a reader of
    lines: a file that breaks off (cut short, junk after the last member, a corrupt member)
    ends there, and ``broken`` says where and why. One reader for both commands: the report
    refused records a scan read (junk after the last member was fatal to the report alone)."""

    def __init__(self, raw: BinaryIO) -> None:
        from vthread.cli import GzipStream

        super().__init__()
        self.stream = GzipStream(raw)
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        if not self.pending:
            self.pending = self.stream.read(len(target))
        count = min(len(target), len(self.pending))
        target[:count] = self.pending[:count]
        self.pending = self.pending[count:]
        return count

    @property
    def broken(self) -> str | None:
        return self.stream.broken


class _RecordLines:
    """The lines of a records file as bytes, a byte-order mark before the first passed
    over; ``broken``: where and why a gzip stream broke off, once read to there (None for
    a whole one, or a file that is no gzip file)."""

    def __init__(self, stream: BinaryIO, gzipped: bool) -> None:
        self.source = _Decompressed(stream) if gzipped else None
        self.lines = _without_mark(_bounded_lines(
            io.BufferedReader(self.source, _WHOLE_FILE_READ) if self.source is not None
            else stream))

    def __iter__(self) -> Iterator[bytes]:
        return self.lines

    @property
    def broken(self) -> str | None:
        return None if self.source is None else self.source.broken


@contextlib.contextmanager
def _record_lines(name: str) -> Iterator[_RecordLines]:
    """The lines of a records file, or of standard input (``-``, the replaying one, left
    open), as bytes, gzip decompressed; a byte-order mark before the first passed over, as
    vthread scan does (Windows tools write one). Read as bytes, so that a line's number and
    a bad byte's place in it are the line's own (a text reader's read-ahead put a bad
    byte's error 49 lines early, its place counted from the start of a block)."""
    if name == "-":
        buffer = sys.stdin.buffer
        yield _RecordLines(buffer, isinstance(buffer, io.BufferedReader)
                           and buffer.peek(2)[:2] == GZIP_MAGIC)
        return
    with open(name, "rb") as raw:
        yield _RecordLines(raw, raw.peek(2)[:2] == GZIP_MAGIC)


class _RecordLineTooLongError(Exception):
    """A line of a records file longer than the most one line may take."""


def _bounded_lines(stream: BinaryIO | io.BufferedReader) -> Iterator[bytes]:
    """The lines of ``stream``, each read to at most :func:`_longest_record_line`: a longer
    one raises :class:`_RecordLineTooLongError` when reached, its start alone read (a line
    of gigabytes was read whole, and ended the report out of memory with a traceback)."""
    most = _longest_record_line()
    while line := stream.readline(most + 1):
        if len(line) > most:
            raise _RecordLineTooLongError
        yield line


def _longest_record_line() -> int:
    """The most bytes a records file's line may take: the most a line the scan reads may
    (:func:`vthread.cli.line_limit`; a record is short but for its run's id, which the scan
    writes whole)."""
    from vthread.cli import line_limit

    return line_limit()


def _without_mark(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``lines`` with a UTF-8 byte-order mark before the first left out."""
    iterator = iter(lines)
    first = next(iterator, None)
    if first is None:
        return
    yield first.removeprefix(codecs.BOM_UTF8)
    yield from iterator


class _CutCharacterError(ValueError):
    """A line whose bytes end inside a UTF-8 character (cut there, when no newline ends
    it)."""


def _record_of(line: bytes) -> Any:
    """The JSON value of a records file's line, or a ValueError saying why there is none in
    a person's terms: the place of a byte that is no UTF-8, a value nested too deeply, a
    number with more digits than Python reads. A record's id that is a float is a
    :class:`vthread.report.WrittenNumber`, holding its text."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        # (a line ending inside a character is cut there: a file cut while written)
        kind = _CutCharacterError if error.reason == "unexpected end of data" else ValueError
        raise kind(f"not UTF-8 text: byte {error.start + 1} of the line "
                   f"({error.reason})") from None
    try:
        record = json.loads(text)
        if isinstance(record, dict) and type(record.get("id")) is float:
            # Read again keeping each float's text, so that the id is shown as written
            # (1e400 was shown as "Infinity"): rare, so other records pay nothing for it.
            record = json.loads(text, parse_float=WrittenNumber, parse_constant=WrittenNumber)
        return record
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
    except ValueError as error:
        if "int_max_str_digits" in str(error):
            raise ValueError(f"a number of more than {sys.get_int_max_str_digits()} digits, "
                             "which no record holds") from None
        raise


def _parquet_holds_records(name: str) -> bool:
    """Whether a Parquet file has the columns of ``vthread scan -o X.parquet``'s records,
    its ``messages`` (when it has one) the integer count a record writes, not the runs'
    messages, and no column but ``id`` and ``loops`` nested (a graded run's trajectory, a
    list, makes its table runs, as for JSONL: :func:`is_record`). No when it cannot be read:
    the scan says why."""
    try:
        import pyarrow as arrow
        import pyarrow.parquet as parquet

        schema = parquet.read_schema(parquet_source(name))
    except Exception:  # no pyarrow, or not a Parquet file: whatever pyarrow raises
        return False
    if not frozenset(schema.names) >= _RECORD_COLUMNS:
        return False
    if any(arrow.types.is_nested(field.type) for field in schema
           if field.name not in ("id", "loops")):
        return False
    if "messages" not in schema.names:
        return True
    at = schema.get_field_index("messages")  # -1 when two columns have the name
    return at >= 0 and bool(arrow.types.is_integer(schema.field(at).type))


def _read_parquet_records(data: ReportData, name: str) -> None:
    """Add every row of ``vthread scan -o X.parquet``'s output (error null: no error; an
    error's row, its verdict null)."""
    import pyarrow.parquet as parquet

    number = 0
    try:
        for batch in parquet.ParquetFile(parquet_source(name)).iter_batches():
            for row in batch.to_pylist():
                number += 1
                # (a row holds every column: null stands for the field a record lacks)
                row.pop("error" if row.get("error") is None else "verdict", None)
                try:
                    data.add(row)
                except RecordError as error:
                    raise _ReportError(f"{name}: row {number}: {error}") from None
    except read_errors() as error:
        raise _ReportError(f"{name}: cannot read: {error}") from error


def _read_records(data: ReportData, name: str, stderr: TextIO) -> None:
    """Add every record of a records file; a line that is none is fatal (file:line), but
    for a last line cut short (no newline ends it: a file still being written or copied),
    said on ``stderr`` and counted as a bad line (the run it stood for is not read, as a
    scan counts a run's line cut short)."""
    if is_parquet(name):
        _read_parquet_records(data, name)
        return
    number = 0
    label = input_label(name)
    try:
        with _record_lines(name) as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    record = _record_of(line)
                    if not isinstance(record, dict):
                        raise RecordError("not a vthread scan record (not a JSON object)")
                    data.add(record)
                except (ValueError, RecordError) as error:  # RecordError is a ValueError
                    if not line.endswith(b"\n") and isinstance(
                            error, json.JSONDecodeError | _CutCharacterError):
                        why = (lines.broken or "the last line is cut short (a file still "
                               "being written?)")
                        stderr.write(f"vthread report: warning: {label}:{number}: {why}: "
                                     "counted as a bad line\n")
                        data.add({"file": label, "line": number, "error": "cut short"})
                        return
                    raise _ReportError(f"{label}:{number}: {error}") from None
            if lines.broken:  # (broken off at the end of a line)
                stderr.write(f"vthread report: warning: {label}: {lines.broken}: the records "
                             f"of its {number:,} whole lines are read\n")
    except _RecordLineTooLongError:
        raise _ReportError(f"{label}:{number + 1}: the line is longer than "
                           f"{_longest_record_line():,} bytes, the most one line may take (a "
                           "quarter of the memory this process may have)") from None
    except (OSError, zlib.error, UnicodeDecodeError) as error:
        where = f"{label}:{number + 1}" if number else label
        raise _ReportError(f"{where}: cannot read: {error}") from error


class _ScanMessages(io.TextIOBase):
    """The scan's standard error as the report's messages, each line passed on to
    ``warned`` as soon as it is whole ("vthread scan:" said as "vthread report:", and the
    scan's advice to pass --fail-on-error, which the report does not take, left out): they
    were held until the scan ended, so a long scan's warnings came at its end, or never
    when it was killed. The scan escapes each message's own control characters."""

    def __init__(self, warned: _Warned, advice: str) -> None:
        super().__init__()
        self.warned = warned
        self.advice = advice
        self.partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        *whole, self.partial = (self.partial + text).split("\n")
        for line in whole:
            self._pass_on(line + "\n")
        return len(text)

    def end(self) -> None:
        """Pass on a last line no newline ended, as a line."""
        if self.partial:
            self._pass_on(self.partial + "\n")
            self.partial = ""

    def _pass_on(self, message: str) -> None:
        self.warned.write(message.replace("vthread scan:", "vthread report:")
                          .replace(self.advice, ""))


def _scan_into(data: ReportData, files: list[str], options: argparse.Namespace,
               warned: _Warned) -> tuple[int, bool]:
    """Scan ``files`` with ``vthread scan`` (this process) and add its records: its status,
    and whether a page is made of them (the scan completed: with status 0, or with 70 when
    it met a bug on a run, whose record is an error and whose traceback it said).

    The scan writes its records and ``--summary`` to a temporary folder, so memory stays
    that of the scan plus the looping runs' columns. Its messages reach standard error
    through ``warned`` as the report's; the inputs its summary lists as left out or cut
    short are kept there for the page (a page of a partial dataset looked whole while
    --fail-on-error failed the same inputs).
    """
    from vthread import cli

    with tempfile.TemporaryDirectory(prefix="vthread-report-") as folder:
        records, summary = Path(folder, "records.jsonl"), Path(folder, "summary.json")
        argv = ["scan", "--quiet", "--output", str(records), "--summary", str(summary)]
        for flag, value in (("--format", options.format), ("--messages-key",
                            options.messages_key), ("--id-key", options.id_key),
                            ("--jobs", options.jobs)):
            if value is not None:
                argv.append(f"{flag}={value}")  # (a key may start with "-")
        if options.mask_volatile:
            argv.append("--mask-volatile")
        said = _ScanMessages(warned, cli.FAIL_ON_ERROR_ADVICE)
        try:
            with contextlib.redirect_stderr(said):
                status = cli.main([*argv, "--", *files])
        finally:
            said.end()
        # (written whatever ended the scan, but for a summary that could not be written: 74)
        figures = (json.loads(summary.read_text(encoding="utf-8")) if summary.exists()
                   else {})
        if status and not (status == INTERNAL_EXIT and figures.get("completed") is True):
            return status, False
        looping: dict[tuple[str, int], int] = {}  # (file, line) of a looping run: its row
        for line in _lines(records):
            record = json.loads(line)
            data.add(record)
            if record.get("verdict") is not None:
                looping[(record["file"], record["line"])] = data.loops - 1
        data.tokens = figures["tokens"]
        for left in figures["left_out"]:
            warned.keep(shown(f"{left['file']}: left out: {left['why']}", lines=False))
        for short in figures["cut_short"]:
            warned.keep(shown(f"{short['file']}: {short['why']}", lines=False))
    if looping:
        _add_message_kinds(data, files, looping, options)
    return status, True


def _add_message_kinds(data: ReportData, files: list[str], looping: dict[tuple[str, int], int],
                       options: argparse.Namespace) -> None:
    """Each looping run's message kinds, for its timeline: the inputs read a second time
    through ``vthread scan``'s own chunking and run reading, only looping lines parsed.

    Bounded: at most ``MESSAGE_KINDS_PER_RUN`` messages a run and ``MESSAGE_KINDS_BUDGET``
    in all (later runs get none and a plain strip). Standard input cannot be read twice.
    """
    if "-" in files:
        return
    budget = MESSAGE_KINDS_BUDGET
    # The scan said what it had to of these files once: this second reading says nothing
    # (it said each again, as "vthread scan:", found by a tester).
    with open(os.devnull, "w") as nothing, contextlib.redirect_stderr(nothing):
        _read_message_kinds(data, files, looping, options, budget)


def _read_message_kinds(data: ReportData, files: list[str], looping: dict[tuple[str, int], int],
                        options: argparse.Namespace, budget: int) -> None:
    """:func:`_add_message_kinds`' reading of the inputs."""
    from vthread.cli import runs_read_again, trajectory_files

    # A directory stands for the files under it, as the scan read them (records left there
    # were passed over by the scan and hold no looping run's messages). Each file must
    # still be a regular file, opened without waiting (one replaced by a FIFO since the scan
    # would wait for a writer for ever), and is read on its own: one that cannot be read
    # leaves only its runs plain, and an input changed since the scan its strips plain.
    files = [found for name in files for found in trajectory_files(name)]
    for file, number, read in runs_read_again(files, options.format, options.messages_key,
                                              options.id_key):
        row = looping.get((file, number))
        if row is None or data.run_messages[row] > MESSAGE_KINDS_PER_RUN:
            continue
        if budget < data.run_messages[row]:
            return
        run = read()  # (the strip is an extra: a run too large for it goes plain)
        if run is None:
            continue
        kinds = message_kinds(*run, data.run_messages[row])
        data.message_kinds[row] = kinds
        budget -= len(kinds)


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8") as stream:
        yield from stream


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_report(sys.argv[1:], sys.stderr))
