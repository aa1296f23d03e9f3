"""``vthread guard``: pass a live token stream through, and cut it off when it starts to loop.

Reads standard input (or FILE) as it arrives (``os.read``, so a slow producer is copied
through at once), copies every byte to standard output and feeds the bytes to a
:class:`vthread.guard.Guard` (``push_bytes``: the core decodes and splits them, no Python
string is made). When the guard trips, the output stops just past the word that tripped it,
one JSON line on standard error says why, and the exit status is 3::

    some-llm-cli ... | vthread guard --max-repeats 5 | tee out.txt
    vthread guard recorded_output.txt > /dev/null || echo "it loops"

UTF-8 split anywhere across reads, including inside a character, decodes as one stream;
bytes that are not UTF-8 pass through unchanged (they reach the guard as lone surrogates,
as Python's ``surrogateescape`` reads them, which are not letters). Memory stays flat
whatever the input: the guard's window plus one read. Exit status: 0 at the end of the
input, 3 when the guard trips, 2 for bad options or an unreadable FILE or standard input, 74
when standard output cannot be written (closed, a full disk: EX_IOERR), 141 when standard
output is closed early by its reader (as ``cat`` killed by SIGPIPE), 130 on Ctrl-C. A
closed or failing standard error only loses the messages.

Also runs on its own: ``python -m vthread._cli_guard [options]``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, BinaryIO, Final, NoReturn, TextIO

from vthread._cli_main import (
    BROKEN_PIPE_EXIT,
    INTERRUPTED_EXIT,
    IO_EXIT,
    USAGE_EXIT,
    BlockingInput,
    count_argument,
    number_argument,
    numbers_joined,
    point_at_null,
    shown,
    write_all,
)
from vthread.guard import Guard

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["EXIT_TRIPPED", "run_guard"]

EXIT_OK: Final = 0
EXIT_TRIPPED: Final = 3
#: Largest read; a pipe returns whatever is there sooner, so small pieces flow at once.
READ_SIZE: Final = 1 << 16
#: Largest read from a FILE (it is all there: fewer, larger reads).
FILE_READ_SIZE: Final = 1 << 20


EXIT_STATUS_HELP: Final = """\
exit status:
  0    the input ended without the guard tripping
  3    the guard tripped (the reason as one JSON line on standard error)
  2    bad options or an unreadable FILE or standard input
  70   internal error (a bug: the traceback is on standard error; please report it)
  74   standard output could not be written (closed, disk full)
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM, as cat is)
  141  standard output closed early by its reader (as cat killed by SIGPIPE)
"""


class _StopParsingError(Exception):
    """argparse wants to stop (help shown, or a usage error reported)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that writes to the streams it was given and never exits itself."""

    def __init__(self, stdout: BinaryIO, stderr: TextIO) -> None:
        super().__init__(
            prog="vthread guard",
            # Raw text (for the exit-status table), so the lines are broken here.
            description="Copy standard input (or FILE) to standard output; stop when the\n"
            "text starts repeating itself (exit 3, reason as JSON on standard error).",
            epilog="Options not given keep the guard's defaults; out-of-range values are\n"
            "clamped as the library does, fractions round down, and nan or inf means\n"
            "the default.\n\n" + EXIT_STATUS_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self._stdout = stdout
        self._stderr = stderr

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        try:
            self._stdout.write(self.format_help().encode())
            self._stdout.flush()
        except OSError:
            pass  # nowhere to show it (argparse's own print_help does the same)

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if message:
            _say(self._stderr, message, lines=True)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            _say(self._stderr, message, lines=True)
        raise _StopParsingError(status)


def _parser(stdout: BinaryIO, stderr: TextIO) -> _Parser:
    parser = _Parser(stdout, stderr)
    parser.add_argument("file", nargs="?", default="-", metavar="FILE",
                        help="read this file instead of standard input ('-' or none: "
                        "standard input)")
    parser.add_argument("--ngram", type=count_argument, metavar="N",
                        help="words per repeated phrase (default 4, at least 2)")
    parser.add_argument("--window", type=count_argument, metavar="N",
                        help="words the guard looks back over (default max(ngram, 48), at least "
                        "ngram)")
    parser.add_argument("--max-repeats", type=count_argument, metavar="N",
                        help="repeats of one phrase that trip the guard (default 4, at least 2)")
    parser.add_argument("--max-unique-ratio", type=number_argument, metavar="X",
                        help="trip only when distinct/total words in the window is at most "
                        "this (default 0.4, clamped to [0, 1]; nan or inf: the default)")
    parser.add_argument("--min-chars", type=count_argument, metavar="N",
                        help="never trip before this many characters (UTF-16 units, "
                        "counted up to the word judged, however the input is read; "
                        "default 0)")
    return parser


def _reader(stdin: BinaryIO) -> Callable[[], bytes]:
    """A function returning the next bytes available on ``stdin`` (b"" at the end)."""
    try:
        descriptor = stdin.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        read1 = getattr(stdin, "read1", None)
        if callable(read1):
            return lambda: bytes(read1(READ_SIZE))
        return lambda: stdin.read(READ_SIZE)
    return partial(BlockingInput(descriptor).read_some, READ_SIZE)


def _say(stderr: TextIO, message: str, lines: bool = False) -> None:
    """Write to standard error; one that is closed or fails only loses the message. A
    message not of ``lines`` (argparse's usage is) is one line: a newline before its end
    came from what it quotes, a FILE's name, and is escaped as its control characters are
    (a FILE's name may hold a terminal's escapes)."""
    try:
        stderr.write(shown(message, lines))
        stderr.flush()
    except (OSError, ValueError):
        pass


def run_guard(
    argv: Sequence[str], stdin: BinaryIO | None, stdout: BinaryIO | None, stderr: TextIO
) -> int:
    """Run ``vthread guard`` with ``argv`` (the words after ``guard``); the exit status.

    ``stdout`` None is a closed standard output: the options are still checked (and
    ``--help`` exits 0, shown nowhere), then the run stops with status 74. ``stdin`` None
    is a closed standard input: status 2 when the stream is to come from it (it read as an
    empty stream, status 0).
    Memory stays flat on an endless stream: the guard's window plus one read.
    """
    try:
        parser = _parser(stdout if stdout is not None else io.BytesIO(), stderr)
        args = parser.parse_args(numbers_joined(list(argv), parser))
    except _StopParsingError as stop:
        return stop.status
    if stdout is None:
        _say(stderr, "vthread guard: cannot write standard output: it is closed\n")
        return IO_EXIT
    try:
        guard = Guard(
            ngram=args.ngram,
            window=args.window,
            max_repeats=args.max_repeats,
            max_unique_ratio=args.max_unique_ratio,
            min_chars=args.min_chars,
        )
    except ValueError as error:
        _say(stderr, f"vthread guard: error: {error}\n")
        return USAGE_EXIT
    if args.file == "-":
        if stdin is None:
            _say(stderr, "vthread guard: error: there is no standard input (it is closed)\n")
            return USAGE_EXIT
        if _reads_its_output(stdin, stdout, stderr, "the file standard input is read from"):
            return USAGE_EXIT
        try:
            return _copy(_reader(stdin), guard, stdout, stderr)
        except OSError as error:  # reading; _copy handles writing
            _say(stderr, "vthread guard: error: cannot read standard input: "
                         f"{error.strerror or error}\n")
            return USAGE_EXIT
    try:
        with open(args.file, "rb", buffering=0) as source:
            if _reads_its_output(source, stdout, stderr, f"{args.file}, the input"):
                return USAGE_EXIT
            read = partial(BlockingInput(source.fileno()).read_some, FILE_READ_SIZE)
            return _copy(read, guard, stdout, stderr)
    except IsADirectoryError:
        _say(stderr, f"vthread guard: error: {args.file} is a directory\n")
        return USAGE_EXIT
    except OSError as error:
        _say(stderr, f"vthread guard: error: cannot read {args.file}: "
                     f"{error.strerror or error}\n")
        return USAGE_EXIT


def _reads_its_output(source: BinaryIO | io.FileIO, stdout: BinaryIO, stderr: TextIO,
                      named: str) -> bool:
    """Whether ``stdout`` writes to the regular file ``source`` reads (``vthread guard FILE
    >> FILE``: the guard read its own output back, forever, and filled the disk), said on
    ``stderr`` with the input ``named``; a pipe, a terminal, /dev/null and a stream with no
    descriptor never do."""
    import os
    import stat

    try:
        read = os.fstat(source.fileno())
        written = os.fstat(stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
    if not (stat.S_ISREG(read.st_mode) and os.path.samestat(read, written)):
        return False
    _say(stderr, f"vthread guard: error: standard output goes to {named}; reading it would "
                 "read the output back, without end (write it elsewhere)\n")
    return True


def _copy(read: Callable[[], bytes], guard: Guard, stdout: BinaryIO, stderr: TextIO) -> int:
    """Copy what ``read`` returns to ``stdout`` through ``guard``; the exit status."""
    try:
        while True:
            data = read()
            if not data:
                return EXIT_OK
            # min_chars counted up to the word judged: the answer is the bytes', not the
            # reads' (a file read whole and a slow pipe trip at the same word).
            trip = guard.push_bytes(data, min_chars_per_character=True)
            if trip is not None:
                through, offset_chars = trip
                _write(stdout, data[:through])
                _report(guard, offset_chars, stderr)
                return EXIT_TRIPPED
            _write(stdout, data)
    except BrokenPipeError:
        point_at_null(stdout)
        return BROKEN_PIPE_EXIT
    except _WriteError as error:
        point_at_null(stdout)
        _say(stderr, f"vthread guard: cannot write standard output: {error}\n")
        return IO_EXIT
    except KeyboardInterrupt:
        return INTERRUPTED_EXIT


class _WriteError(Exception):
    """Writing standard output failed (not a broken pipe); the message is the system's."""


def _write(stdout: BinaryIO, data: bytes) -> None:
    try:
        # (whole, waiting on a non-blocking output: one write call took 65,536 bytes of a
        # stream, the rest lost, and under PYTHONUNBUFFERED the status said success)
        write_all(stdout, data)
    except BrokenPipeError:
        raise
    except OSError as error:
        raise _WriteError(error.strerror or str(error)) from error


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _report(guard: Guard, offset: int, stderr: TextIO) -> None:
    """The trip as one JSON line: the reason's fields and the offset in characters."""
    reason = guard.reason
    assert reason is not None
    line = {"tripped": True, **reason.to_dict(), "offset_chars": offset}
    for key in ("phrase", "text"):
        # Bytes that were no UTF-8 are lone surrogates in the reason (the guard reads them
        # as surrogateescape does); written out, each is U+FFFD, so the line is UTF-8 text
        # any JSON reader takes, not escapes only Python's accepts.
        line[key] = _LONE_SURROGATE.sub("\ufffd", str(line[key]))
    _say(stderr, json.dumps(line, allow_nan=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``vthread guard`` and ``python -m vthread._cli_guard``: :func:`run_guard`
    of ``argv`` (the command line's by default) on the process's standard streams."""
    stdin = sys.stdin.buffer if sys.stdin is not None else None
    # A closed standard error swallows the guard's messages; a closed standard input or
    # output is refused (it is where the stream comes from or goes) by run_guard itself.
    stderr = sys.stderr if sys.stderr is not None else io.StringIO()
    stdout = sys.stdout.buffer if sys.stdout is not None else None
    return run_guard(sys.argv[1:] if argv is None else argv, stdin, stdout, stderr)


if __name__ == "__main__":
    raise SystemExit(main())
