"""The ``vthread`` command's entry point: its arguments, and the command they name.

Kept apart from :mod:`vthread.cli` (the scan) so that ``vthread guard``, ``vthread
--help`` and ``vthread --version`` start without NumPy or the scan's modules: a guard
started for each stream an agent harness opens pays about a third of the time it did.
``vthread scan`` imports :mod:`vthread.cli` once its arguments are read.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from functools import cache
from typing import IO, Any, BinaryIO, Final, TypeVar, cast

from vthread.adapters import FORMATS

__all__ = ["main"]

USAGE_EXIT: Final = 2
LOOP_EXIT: Final = 1
BROKEN_PIPE_EXIT: Final = 141  # as vthread guard, and as a shell reports cat killed by SIGPIPE
INTERRUPTED_EXIT: Final = 130
TERMINATED_EXIT: Final = 143  # 128 + SIGTERM, as a shell reports a process it killed
IO_EXIT: Final = 74  # EX_IOERR in sysexits.h
INTERNAL_EXIT: Final = 70  # EX_SOFTWARE in sysexits.h
MEMORY_EXIT: Final = 71  # EX_OSERR in sysexits.h: the system could not give the memory asked
GZIP_MAGIC: Final = b"\x1f\x8b"  # the first bytes of a gzip member
DATA_EXIT: Final = 65  # EX_DATAERR in sysexits.h: --fail-on-error, and a record is an error
EXIT_STATUS_HELP: Final = """\
exit status:
  0    the run completed; bad lines (and a broken .gz stream) are error records
  1    --fail-on-loop and some thread loops, or --fail-on-loop-share and more than
       that share of the threads scanned loop (and not 65)
  65   --fail-on-error and some record is an error, a trajectory file under a
       directory was left out unread, or no thread was scanned (before 1: with
       --fail-on-loop too, a loop found does not hide what went unchecked)
  2    usage error, an input that is not there, a lone input that cannot be read
       (one of several is an error record), output that is an input, or with
       --strict the first bad line
  70   internal error (a bug: the traceback is on standard error; please report it);
       a bug met on one run makes that run an error record, the rest are scanned
  71   out of memory (a line that cannot be held in the memory the process may
       use, or a stream's line or a document's run longer than a quarter of it: a
       JSONL file's line, and a line too large to scan, is an error record); the
       records before it are written, and so is the --summary FILE
  74   the records or the --summary FILE could not be written (disk full, a path
       that cannot be created, standard output closed); the message says which
  130  interrupted (Ctrl-C)
  141  standard output closed early (vthread scan big.jsonl | head), quietly
  143  terminated (SIGTERM, as timeout, Slurm and Kubernetes stop a job); as for
       130, the records so far are written and so is the --summary FILE (timeout
       itself exits 124 unless given --preserve-status)
"""


def input_label(name: str) -> str:
    """How records and messages name an input: ``<stdin>`` for standard input (``-``)."""
    return "<stdin>" if name == "-" else name

def named_again(files: Iterable[str], identities: Mapping[str, tuple[int, int]] | None = None
                ) -> Iterator[tuple[str, str]]:
    """Each of ``files`` that is a file read before, under this name or another (the same
    device and inode): (its name, the name it was first given by). Standard input and a
    file that cannot be stated are none (each says what it is when read); ``identities``:
    the (device, inode) of files stated already."""
    first: dict[tuple[int, int], str] = {}
    for name in files:
        if name == "-":
            continue
        identity = (identities or {}).get(name)
        if identity is None:
            try:
                status = os.stat(name)
            except OSError:
                continue
            identity = (status.st_dev, status.st_ino)
        if identity in first:
            yield name, first[identity]
        else:
            first[identity] = name


def main(argv: list[str] | None = None) -> int:
    """Run the ``vthread`` command with ``argv`` (default ``sys.argv[1:]``); the exit status.

    An exception that escapes is a bug: its traceback goes to standard error and the status
    is 70, so that 1 keeps meaning "a thread loops" (``--fail-on-loop``) and nothing else.
    Without ``argv`` the process is taken to be the command's own, and NumPy's OpenBLAS is
    kept to one thread (``OPENBLAS_NUM_THREADS=1``) unless the environment says otherwise.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if argv is None:
        # This process is the command (the script, python -m vthread), not a caller's: NumPy's
        # OpenBLAS starts a thread per CPU as it loads, about 0.1 s of CPU and 30 ms before
        # the first byte is read, for linear algebra vthread never does. A setting of the
        # user's own is kept.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _plug_closed_descriptors()
    try:
        return _main(args, own_process=argv is None)
    except KeyboardInterrupt:
        # Ctrl-C before the command handles it itself (the scan's modules and NumPy still
        # loading, about 0.3 s): one line and status 130, as during the scan, not a traceback.
        if argv is None:
            _ignore_stops()
        say("vthread: interrupted")
        return INTERRUPTED_EXIT
    except Exception:
        import traceback

        say("vthread: internal error (a bug; please report it with this traceback)\n"
            + traceback.format_exc(), end="", lines=True)
        return INTERNAL_EXIT


def _ignore_stops() -> None:
    """Ignore Ctrl-C and SIGTERM: the process is ending, its exit status decided."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


def _plug_closed_descriptors() -> None:
    """Open /dev/null on standard descriptors the shell closed (``2>&-``), leaving
    ``sys.stdout``/``sys.stderr`` None as Python set them.

    Otherwise the next file opened takes the lowest free descriptor: ``-o out.jsonl`` with
    stderr closed would become descriptor 2, and whatever writes to it below Python (a
    panic message from the core) would land among the records.
    """
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if null != descriptor:
                os.dup2(null, descriptor)
                os.close(null)


def _main(args: list[str], own_process: bool = False) -> int:
    if args[:1] == ["guard"]:
        return _guard(args[1:])
    if args[:1] == ["report"]:
        from vthread._cli_report import run_report

        return run_report(args[1:], sys.stderr if sys.stderr is not None else io.StringIO(),
                          own_process=own_process)
    parser = _parser()
    if args and args[0].startswith("-") and args[0] not in ("-h", "--help", "--version"):
        say(_misplaced_option(args[0], parser), lines=True)
        return USAGE_EXIT
    try:
        scan_parser = _subcommand(parser, "scan")
        assert scan_parser is not None
        options, unknown = parser.parse_known_args(numbers_joined(args, scan_parser))
        if unknown:
            # Said with the command's own usage (the top-level usage named no option).
            command = _subcommand(parser, options.command) or parser
            command.error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exit_:  # argparse exits on --help, --version and usage errors
        return exit_.code if isinstance(exit_.code, int) else USAGE_EXIT
    if options.command != "scan":
        parser.print_usage(sys.stderr)
        say("vthread: error: name a command: scan (loops in trajectory files), guard (a "
            "token stream) or report (an HTML page); vthread COMMAND --help says more")
        return USAGE_EXIT
    from vthread.cli import scan_command  # NumPy and the scan, only for a scan

    return scan_command(options, own_process=own_process)


def _subcommand(parser: argparse.ArgumentParser, name: str | None
                ) -> argparse.ArgumentParser | None:
    """The parser of the command ``name`` (``scan``), if there is one."""
    for action in parser._actions:  # argparse keeps its subcommands' parsers only here
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            return cast(argparse.ArgumentParser, action.choices[name])
    return None


def _guard(argv: list[str]) -> int:
    import importlib

    try:
        module = importlib.import_module("vthread._cli_guard")
    except ModuleNotFoundError as error:
        if error.name != "vthread._cli_guard":
            raise
        say("vthread guard: not available in this installation")
        return USAGE_EXIT
    return int(module.main(argv))


class _VersionAction(argparse.Action):
    """``--version``, with the installed version looked up only when asked for: reading the
    package metadata costs about 30 ms, a twentieth of a whole scan of 10,000 threads."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        import vthread

        # Standard output, where argparse's own "version" action writes.
        print(f"vthread {vthread.__version__}", file=sys.stdout)
        parser.exit()


def numbers_joined(args: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``args`` with each of ``parser``'s numeric options (those whose value is shown as
    ``N`` or ``X``), or an abbreviation argparse takes for one, joined to a value that starts with a
    minus (``--min-repetitions -inf`` as ``--min-repetitions=-inf``): argparse takes only
    plain negative numbers for values, and read ``-inf`` or ``-1e3`` as an unknown option,
    leaving the option "expected one argument"."""
    numeric: set[str] = set()
    words: list[str] = []
    for action in parser._actions:  # argparse keeps a parser's options only here
        words.extend(action.option_strings)
        if action.metavar in ("N", "X"):
            numeric.update(action.option_strings)
    joined: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            joined.extend(args[index:])
            break
        value = args[index + 1] if index + 1 < len(args) else ""
        if (_option_named(word, words) in numeric and value.startswith("-")
                and _is_number(value)):
            joined.append(f"{word}={args[index + 1]}")
            index += 2
            continue
        joined.append(word)
        index += 1
    return joined


def _option_named(word: str, words: list[str]) -> str | None:
    """The option ``word`` names: itself, or the one long option it abbreviates."""
    if word in words:
        return word
    if word.startswith("--") and len(word) > 2:
        matches = [name for name in words if name.startswith(word)]
        if len(matches) == 1:
            return matches[0]
    return None


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vthread",
        description="Tell which agent conversations are stuck in a loop, how, and what it cost.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("guard", help="guard a token stream against runaway repetition "
                        "(see vthread guard --help)", add_help=False)
    commands.add_parser("report", help="write a self-contained HTML report of the runs "
                        "(see vthread report --help)", add_help=False)
    scan_ = commands.add_parser(
        "scan",
        help="scan trajectory files (JSONL, JSON documents, Inspect logs, Parquet) for "
        "looping runs",
        description="Scan trajectory files and write one JSON record per run (per line of a "
        "JSONL file, per run of a JSON document, per sample of an Inspect log, per row of a "
        "Parquet file) to stdout or --output, and a summary to stderr. With no FILE, reads "
        "standard input when it is not a terminal (a pipe, a file, /dev/null); --sample "
        "scans the sample set bundled with vthread.",
        epilog=EXIT_STATUS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan_.add_argument("files", nargs="*", metavar="FILE",
                       help="JSONL file, optionally gzip-compressed; a JSON document (.json, "
                       ".traj), Inspect log (.eval) or Parquet file; a directory for the "
                       "trajectory files under it; - for standard input")
    scan_.add_argument("--sample", action="store_true",
                       help="scan the sample set bundled with vthread (no FILE)")
    scan_.add_argument("--format", choices=(*FORMATS, "auto"), default=None,
                       help="message format of the threads (default, or auto: detected per "
                       "file from its first threads, past plain chats from the first that "
                       "shows one, as format='auto' in Python)")
    scan_.add_argument("--messages-key", metavar="KEY", type=key_argument,
                       help="the key of each run object that holds its messages (default: "
                       "messages, traj or history, the first present)")
    scan_.add_argument("--id-key", metavar="KEY", type=key_argument,
                       help="the key of each run object that holds its id (default: id, "
                       "instance_id or task_id/trial)")
    scan_.add_argument("-o", "--output", metavar="PATH",
                       help="write the records to PATH instead of standard output "
                       "(gzip-compressed when PATH ends .gz; a Parquet table when it ends "
                       ".parquet or .pq; else JSON Lines, .json too, with a note; - is "
                       "standard output)")
    thresholds = scan_.add_argument_group(
        "loop thresholds", "For each, a value below its floor is the floor, a fraction rounds\n"
        "down, and nan or inf is the default, as the production code reads them.")
    for flag, meaning in (
        ("--min-repetitions", "copies of the pattern needed (default 2; at least 1, and 1 "
         "makes every thread of --min-pattern-length messages or more a loop)"),
        ("--min-pattern-length", "shortest repeating block looked for, in messages (default "
         "2, at least 1; a record's period is the loop's own smallest, which can be 1)"),
        ("--max-pattern-length", "longest repeating pattern (default: length / repetitions; "
         "at least --min-pattern-length)"),
        ("--min-result-repetitions", "identical tool results in a row needed (default 3, at "
         "least 2)"),
    ):
        thresholds.add_argument(flag, type=count_argument, metavar="N", help=meaning)
    scan_.add_argument("-j", "--jobs", type=jobs_argument, default=1, metavar="N",
                       help="workers (default 1; 0 = one per CPU): threads of the core, for "
                       "every format (--mask-volatile and --anywhere too; worker processes "
                       "for a file whose first chunk only Python reads). "
                       "Capped at the CPUs this process may use and at the chunks there "
                       "are to share out")
    scan_.add_argument("-q", "--quiet", action="store_true",
                       help="no summary and no progress line on stderr (warnings and "
                       "notes on how a file is read remain)")
    scan_.add_argument("--strict", action="store_true",
                       help="stop at the first bad line (exit status 2)")
    scan_.add_argument("--fail-on-loop", action="store_true",
                       help="exit with status 1 when any thread loops (for CI gates); a bad "
                       "line is no loop: add --fail-on-error (status 65) or --strict (status "
                       "2) to fail on one")
    scan_.add_argument("--fail-on-loop-share", type=share_argument, metavar="SHARE",
                       help="exit with status 1 when more than SHARE of the threads scanned "
                       "loop: a fraction (0.05) or a percentage (5%%); 0 fails on any loop, "
                       "as --fail-on-loop does (give one of the two). For CI gates over "
                       "datasets where some run nearly always loops")
    scan_.add_argument("--fail-on-error", action="store_true",
                       help="exit with status 65 when any record is an error (a bad line, a "
                       "file that cannot be read among several), a trajectory file under a "
                       "directory was left out unread (compressed as vthread does not read, a "
                       "dangling link, a FIFO) or no thread was scanned at all, after every "
                       "record is written (for CI gates that must not pass having checked "
                       "nothing); with --fail-on-loop too, 65 comes before 1")
    scan_.add_argument("--only-loops", action="store_true",
                       help="write only the records of threads that loop, and error records "
                       "(so no failure goes unseen); the summary still counts every line")
    scan_.add_argument("--mask-volatile", action="store_true",
                       help="compare messages with timestamps, UUIDs, long hex ids and "
                       "durations masked, so polling that only sees the clock change is "
                       "seen to loop (off: the production answers exactly)")
    scan_.add_argument("--anywhere", action="store_true",
                       help="report every loop of each run wherever it lies, of blocks of "
                       "any length (a 'loops' list per record; the record's fields describe "
                       "the costliest), not only a loop the run ends in; its rules are its "
                       "own, so the four pattern and repetition options are refused with it")
    scan_.add_argument("--summary", metavar="FILE", dest="summary_file",
                       help="also write the summary as JSON to FILE (for dashboards; "
                       "written also when the scan ends early, saying \"completed\": false)")
    return parser


def key_argument(text: str) -> str:
    """A ``--messages-key`` or ``--id-key`` value: a JSON object's key, so Unicode text (an
    argument's bytes that are no UTF-8 reach Python as lone surrogates, which no JSON key
    read from UTF-8 bytes holds)."""
    if not is_utf8(text):
        # argparse prefixes the option's name: "argument --messages-key: ..."
        raise argparse.ArgumentTypeError(
            f"expected UTF-8 text (a key of the runs' JSON), got {text!r}")
    return text


def is_utf8(text: str) -> bool:
    """Whether ``text`` is Unicode text UTF-8 can hold: no lone surrogate (which is how
    Python holds a command line's or a file name's bytes that are no UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_WHOLE_NUMBER: Final = re.compile(r"[+-]?[0-9]+")
_DECIMAL: Final = re.compile(r"(?:[0-9]{1,100}\.?[0-9]{0,100}|\.[0-9]{1,100})"
                             r"(?:[eE][+-]?[0-9]{1,3})?")
"""A number of ``share_argument``: no sign, no NaN nor infinity, and of a bounded size (an
exponent of eight digits held the CPU for seconds, made exact)."""
_NUMBER: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                            r"|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def count_argument(text: str) -> float:
    """A count option's value (``vthread scan``'s cycle options, ``vthread guard``'s): any
    number, as the library's count options take one (a fraction rounds down; NaN or an
    infinity means the default, an option that is not a finite number being unset). A
    whole number stays an int, exact past a double's precision."""
    if _WHOLE_NUMBER.fullmatch(text.strip()):
        return _whole_number(text, "a number")
    return number_argument(text)


def number_argument(text: str) -> float:
    """A number option's value: written in ASCII digits, spaces around allowed. ``1_000``
    and other scripts' digits, which ``float()`` and ``int()`` take, are refused: read as
    numbers they would pass a typo (``1_0`` for 10) or text no user meant as one."""
    if not _NUMBER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"expected a number, got {_shown(text)}")
    return float(text)


def share_argument(text: str) -> Fraction:
    """A share option's value (``--fail-on-loop-share``): a fraction from 0 to 1 (``0.05``)
    or a percentage from 0% to 100% (``5%``), in ASCII digits, held exactly (a share of
    threads compared as a float would fail a gate at exactly its share, or pass one
    over it, by a rounding)."""
    written = text.strip()
    percent = written.endswith("%")
    number = written.removesuffix("%").strip()
    expected = "a share: a fraction from 0 to 1 (0.05) or a percentage (5%)"
    if not _DECIMAL.fullmatch(number):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {_shown(text)}")
    share = Fraction(number) / (100 if percent else 1)
    if share > 1:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {_shown(text)} (more "
                                         "than all of them)")
    return share


def jobs_argument(text: str) -> int:
    """A ``--jobs`` value: a whole number in ASCII digits, 0 for one per CPU (both commands
    take it; more than the CPUs there are is capped where the workers start)."""
    expected = "a whole number >= 1 (or 0 for one per CPU)"
    count = _whole_number(text, "a whole number") if _WHOLE_NUMBER.fullmatch(text.strip()) else -1
    if count < 0:
        # argparse prefixes the option's name: "argument -j/--jobs: expected ..."
        raise argparse.ArgumentTypeError(f"expected {expected}, got {_shown(text)}")
    return count


def _whole_number(text: str, expected: str) -> int:
    """A whole number's value; one too long for ``int()`` (Python reads at most 4,300
    digits) is a usage error in the option's terms, not a message naming this function."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {expected} of at most 4300 digits, got {_shown(text)}") from None


def _shown(text: str) -> str:
    """An option's value as a message quotes it: cut past 40 characters, so a pasted
    mistake does not flood the terminal."""
    if len(text) <= 40:
        return repr(text)
    return f"{text[:40]!r}... ({len(text):,} characters)"


def _misplaced_option(option: str, parser: argparse.ArgumentParser) -> str:
    """The message for an option given before the command (``vthread --formt x``)."""
    import difflib

    scan = _subcommand(parser, "scan")
    assert scan is not None, "the parser has a scan command"
    scan_options = [flag for action in scan._actions
                    for flag in action.option_strings if flag.startswith("--")]
    name = option.split("=", 1)[0]
    close = difflib.get_close_matches(name, scan_options, n=1, cutoff=0.75)
    hint = f"; did you mean 'vthread scan {close[0]}'?" if close else ""
    return (f"vthread: error: unknown option {name!r} before the command (options go after "
            f"it: vthread scan [options] [FILE ...]){hint}\n"
            f"  see 'vthread scan --help' and 'vthread guard --help'")


_BIDI_AND_SEPARATORS: Final = "\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""Characters that reorder or break what a terminal shows without being control characters:
the bidirectional marks, embeddings, overrides and isolates (a name holding U+202E shows
its end reversed, ``gpj.exe`` as ``exe.jpg``), and the line and paragraph separators."""

_UNSHOWN: Final = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
"""Control characters but a newline and a tab: written as escapes in messages (a file's
name, a run's id, holding an escape sequence would reach the terminal as a command to it:
recolouring, moving the cursor, rewriting what was said); and
:data:`_BIDI_AND_SEPARATORS`."""

_UNSHOWN_IN_A_LINE: Final = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
""":data:`_UNSHOWN` and the newline: what is escaped in a one-line message, where a newline
can only have come from what it quotes (a file named ``a\nb.jsonl``), and would make one
message read as two."""


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def input_written_over(output: str, names: Iterable[str]) -> str | None:
    """Which of the inputs ``names`` (files, ``-`` for standard input) writing ``output``
    would destroy: the same regular file, under another name, through a link, or the file
    standard input is redirected from (``< runs.jsonl``); None for none (nor for an output
    that is no regular file: /dev/null, a terminal, a pipe). Standard input is said
    ``standard input``."""
    try:
        target = os.stat(output)
    except OSError:
        return None  # no such file yet (or none we may look at): it is no input
    if not stat.S_ISREG(target.st_mode):
        return None
    for name in names:
        try:
            if name == "-":
                if sys.stdin is None:
                    continue
                source = os.fstat(sys.stdin.fileno())
            else:
                source = os.stat(name)
        except (OSError, ValueError, AttributeError):
            continue  # standard input that is no file descriptor (under tests, say)
        if os.path.samestat(source, target):
            return "standard input" if name == "-" else name
    return None


def shown(message: str, lines: bool = True) -> str:
    """``message`` as said on a terminal: its control characters but newlines and tabs
    written as ``\\xNN`` (:data:`_UNSHOWN`); its newlines too unless it has ``lines``, but a
    final one, which ends the one line."""
    if lines:
        return _UNSHOWN.sub(_escaped, message)
    body = message.removesuffix("\n")
    return _UNSHOWN_IN_A_LINE.sub(_escaped, body) + message[len(body):]


def say(message: str, end: str = "\n", *, lines: bool = False) -> None:
    """Write a message to standard error, if there is one that works; its control
    characters but tabs written as ``\\xNN`` (:data:`_UNSHOWN_IN_A_LINE`), newlines too
    unless the message is one of ``lines`` (a table, a traceback): a message is one line.

    Never ``print(file=sys.stderr)``: with standard error closed, ``sys.stderr`` is None and
    print would write the message among the records on standard output. A standard error
    that fails is given up (pointed at /dev/null): messages are not worth a failed run.
    """
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(shown(message, lines) + end)
        stream.flush()
    except (OSError, ValueError):
        give_up(stream)


def give_up(stream: IO[Any]) -> None:
    """A stream of messages that failed (standard error, or what writes to it) is given up:
    ``sys.stderr`` None when it is that, and its descriptor pointed at /dev/null
    (:func:`point_at_null`)."""
    if stream is sys.stderr:
        sys.stderr = None
    point_at_null(stream)


def write_through(out: io.FileIO, data: bytes) -> None:
    """``data`` written whole to an unbuffered output (standard output under ``python -u``
    or ``PYTHONUNBUFFERED``, whose ``buffer`` is the raw file): its ``write`` makes one
    system call, which a signal cuts short on a full pipe, and returns how much it wrote
    (measured: 65,536 of 106,917 bytes, the rest never written); this loop writes the
    rest."""
    view = memoryview(data)
    while view:
        written = out.write(view)
        if written is None:  # a non-blocking descriptor, full: wait until it takes more
            import select

            select.select([], [out], [])
            continue
        view = view[written:]


def write_all(out: IO[bytes], data: bytes, flush: bool = True) -> None:
    """``data`` written whole to ``out`` (and flushed, with ``flush``), waiting while a
    non-blocking descriptor under it is full: an unbuffered output by :func:`write_through`;
    a buffered one raises ``BlockingIOError`` having taken part of the data (measured: 65,536
    bytes of a 3 MB stream, the rest lost and the status 74, as for a full disk), and is
    given the rest when it takes more."""
    if isinstance(out, io.FileIO):
        write_through(out, data)
        return
    view = memoryview(data)
    while True:
        try:
            if view:
                out.write(view)
                view = view[len(view):]
            if flush:
                out.flush()
            return
        except BlockingIOError as error:
            view = view[error.characters_written:]
            import select

            select.select([], [out], [])


def is_fifo(path: str) -> bool:
    """Whether ``path`` names a FIFO (through a link); False when it names nothing."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def open_fifo(path: str) -> BinaryIO:
    """The FIFO ``path`` opened for writing, or an OSError saying no process reads it.

    A plain open would wait until a reader comes, and in ``open`` neither Ctrl-C nor
    SIGTERM ends the wait (the scan hung until killed). A non-blocking open fails at once
    (ENXIO) when none reads; once open, the writes block again as a pipe's do. (Opening it
    only to look, then closing it, would end the reader's input: it is kept.)"""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "it is a FIFO no process reads") from None
        raise
    os.set_blocking(descriptor, True)
    return open(descriptor, "wb")


def may_wait_for_a_reader(output: str | None) -> bool:
    """Whether writing to ``output`` (a path; None or ``-``: standard output) may wait on a
    reader: a pipe, a FIFO, a socket or a terminal (paused with Ctrl-S), not a file."""
    terminal = False
    try:
        if output is None or output == "-":
            if sys.stdout is None:
                return False
            mode = os.fstat(sys.stdout.fileno()).st_mode
            terminal = sys.stdout.isatty()
        else:
            mode = os.stat(output).st_mode
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or terminal


def unwritable(path: str) -> str | None:
    """Why the file ``path`` cannot be written (made, or replaced), or None: asked before
    the work (``vthread scan --summary``, ``vthread report -o``), not after it; the file
    itself is not made until it is written."""
    if os.path.isdir(path):
        return "it is a directory"
    if os.path.exists(path):
        return None if os.access(path, os.W_OK) else "permission denied"
    # The folder named, and the one a dangling link names (where the file would be made).
    for folder in dict.fromkeys((os.path.dirname(path) or ".",
                                 os.path.dirname(os.path.realpath(path)))):
        if not os.path.isdir(folder):
            if os.path.exists(folder):  # (a file named as a folder: -o runs.jsonl/out.jsonl)
                return f"{folder} is not a directory"
            return f"no such directory {folder}"
        if not os.access(folder, os.W_OK):
            return f"the directory {folder} is not writable"
    return None


def write_replacing(path: str, data: bytes) -> None:
    """Write ``data`` as the file at ``path`` whole or not at all: a file a reader may open
    while it is written (a dashboard polling the ``--summary`` file, the report's page) is
    written beside it and renamed over it, so that it is never read in part; a symbolic
    link to it is followed and kept, and its permissions and (as far as this process may
    set them) its owner and group are kept.

    Written through instead: a path naming this process's own standard output or error
    (``/dev/stdout`` into a file the shell opened, which a rename would have taken from it
    with all else written there); what is no regular file (a pipe, ``>(cmd)``, a FIFO:
    :func:`open_fifo`); a file with other hard links, which a new file would part from;
    and a file nothing can be made beside (a folder this process may not write in) or
    renamed over (a file bind-mounted into a container: EBUSY).

    Raises the OSError of a write that fails (a full disk, ``ulimit -f``), after removing
    what it wrote and, when the data could not be written, the file there was: an earlier
    run's summary left in place would be read as this run's (it was left cut off, which no
    reader could parse)."""
    try:
        status: os.stat_result | None = os.stat(path)  # (a link's target: /dev/stdout's)
    except FileNotFoundError:
        status = None
    if status is not None:
        stream = own_stream(status)
        if stream is not None:
            stream.flush()
            write_through(io.FileIO(stream.fileno(), "wb", closefd=False), data)
            return
        if not stat.S_ISREG(status.st_mode):
            with open_fifo(path) if stat.S_ISFIFO(status.st_mode) else open(path, "wb") as out:
                out.write(data)
            return
        if status.st_nlink > 1:
            _written_in_place(path, data)
            return
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.partial")
    try:
        # A new file's mode is open()'s (0o666 less the umask); one replacing a file is
        # readable by its owner alone until it has that file's owner, group and mode, set
        # before the data (the mode last: a change of owner clears set-user-ID).
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o666 if status is None else 0o600)
    except OSError:
        _written_in_place(path, data)
        return
    renamed = False
    try:
        with os.fdopen(handle, "wb") as out:
            if status is not None:
                with contextlib.suppress(OSError):
                    os.fchown(out.fileno(), status.st_uid, status.st_gid)
                with contextlib.suppress(OSError):
                    os.fchmod(out.fileno(), stat.S_IMODE(status.st_mode))
            try:
                out.write(data)
                out.flush()
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(target)  # (the earlier run's: see above)
                raise
        try:
            os.replace(temporary, target)
            renamed = True
        except OSError:
            pass
    finally:
        if not renamed:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    if not renamed:
        _written_in_place(path, data)


def own_stream(status: os.stat_result) -> IO[Any] | None:
    """This process's standard output or error when it is the file ``status`` is of (a path
    such as ``/dev/stdout`` naming it), else None: written through, not replaced."""
    for stream in (sys.stdout, sys.stderr):
        descriptor = _descriptor(stream)
        if descriptor is not None and os.path.samestat(status, os.fstat(descriptor)):
            return stream
    return None


def _descriptor(stream: IO[Any] | None) -> int | None:
    """The descriptor under a standard stream, or None (closed, or none)."""
    try:
        return None if stream is None else stream.fileno()
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _written_in_place(path: str, data: bytes) -> None:
    """``data`` written over the file at ``path`` itself. A write that fails empties and
    removes it, so that neither its name nor another hard link to it holds a cut-off file;
    a file that cannot even be opened is left as it was."""
    with open(path, "wb") as out:
        try:
            out.write(data)
            out.flush()
        except BaseException:
            with contextlib.suppress(OSError, ValueError):
                out.truncate(0)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise


def silence_stdout(out: IO[bytes]) -> None:
    """After standard output (``out``, its buffer) failed, point its descriptor at
    /dev/null, so that the interpreter's final flush of what is still buffered cannot fail
    again (and turn the exit status into 120)."""
    if out is not getattr(sys.stdout, "buffer", None):
        return
    sys.stdout = None
    point_at_null(out)


def point_at_null(stream: IO[Any]) -> None:
    """Point the descriptor under a stream that failed at /dev/null, so that nothing written
    later (the interpreter's final flush, a panic message) fails or lands elsewhere; a
    stream with no descriptor is left as it is."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass


_Read = TypeVar("_Read", int, bytes)


class BlockingInput(io.RawIOBase):
    """A descriptor read as a blocking one, whatever its flags: a parent (Node.js, a
    terminal tool) may hand over a non-blocking standard input, whose read raises
    ``BlockingIOError`` while the producer is still thinking (and, through a
    ``BufferedReader``, returns ``b""``, which reads as the end of the input). Waits with
    ``select`` instead. The descriptor stays the caller's: closing this leaves it open."""

    def __init__(self, descriptor: int) -> None:
        super().__init__()
        self.descriptor = descriptor

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.descriptor

    def readinto(self, buffer: Any) -> int:
        return self._waiting(lambda: os.readv(self.descriptor, [buffer]))

    def read_some(self, size: int) -> bytes:
        """Up to ``size`` bytes, as they come (``b""`` at the end of the input)."""
        return self._waiting(lambda: os.read(self.descriptor, size))

    def _waiting(self, read: Callable[[], _Read]) -> _Read:
        """``read()``, waited for while the descriptor has nothing yet."""
        import select

        while True:
            try:
                return read()
            except BlockingIOError:
                select.select([self.descriptor], [], [])


@cache
def memory_limit() -> int:
    """The memory this process may have, in bytes: the machine's, or its control group's
    limit when one is set and lower (a container's), or its own address-space or data limit
    when lower still (``ulimit -v``, ``ulimit -d``: a line of 2 GB held under a 4 GB
    ``ulimit -v`` ended the scan out of memory, where a quarter of the machine's 24 GB let
    it be read); 64 GiB when none can be told."""
    found = []
    with contextlib.suppress(ValueError, OSError, AttributeError):
        found.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError), open(limit, "rb") as text:
            found.append(int(text.read(64).strip()))  # ("max" when unlimited: a ValueError)
    with contextlib.suppress(ImportError, ValueError, OSError, AttributeError):
        import resource  # (POSIX only)

        for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            soft, _ = resource.getrlimit(which)
            if soft != resource.RLIM_INFINITY:
                found.append(soft)
    return min((size for size in found if size > 0), default=64 << 30)


def require_regular(name: str, why: str) -> None:
    """OSError unless ``name`` is a regular file (``why``: what needs one), asked without
    opening it: a file a library opens by its name (pyarrow, inspect_ai), which would wait
    in ``open`` for a FIFO's writer for ever, deaf to SIGTERM."""
    if not stat.S_ISREG(os.stat(name).st_mode):
        raise OSError(errno.EINVAL, f"not a regular file: {why}, so it must be a regular "
                      "file, not a FIFO, a socket or a device", name)


def opened_regular(name: str) -> io.BufferedReader:
    """``name`` opened for reading when it is a regular file, else OSError. The open does
    not block (O_NONBLOCK: a FIFO opens at once instead of waiting for a writer), and the
    check is made of the descriptor opened, so no rename in between can slip past it."""
    descriptor = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (replaced by something else since "
                          "its directory was listed?)", name)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return open(descriptor, "rb")


def blocking_stdin(stdin: io.BufferedReader) -> io.BufferedReader:
    """``stdin`` itself, unless it is the process's own standard input and its descriptor
    does not block: then the descriptor read through :class:`BlockingInput` (a stream that
    replaced it, such as one replaying bytes read ahead, is kept: it reads its own way)."""
    own: object = getattr(sys.__stdin__, "buffer", None)
    if own is None or stdin is not own:
        return stdin
    try:
        descriptor = stdin.fileno()
        # (a file never makes a read wait, whatever its flags: it keeps its tell())
        if os.get_blocking(descriptor) or stat.S_ISREG(os.fstat(descriptor).st_mode):
            return stdin
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return stdin
    return io.BufferedReader(BlockingInput(descriptor))
