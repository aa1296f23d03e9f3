"""Inspect AI evaluation logs: each sample of a log one thread of native messages.

Inspect (``inspect_ai``) writes a run of a task as a log, ``.eval`` (a zip archive) or
``.json`` (one JSON document): the evaluation's header and its samples, each sample holding
its conversation (``messages``), its model calls (``events``) and its ``model_usage``. The
log is read with inspect_ai's own reader, so every log version Inspect can read is read,
attachments resolved; inspect_ai is an optional dependency (``pip install 'vthread[inspect]'``),
imported only here and only when a log is read. A ``.eval`` log's samples are read a batch
at a time, and one by one where a batch fails; a ``.json`` log is read whole, or, when Inspect
refuses it whole, each sample as a log of its own (a ``.eval`` log whose header lists no
sample ids is read whole, or each of its sample members alone when that fails). So a sample
Inspect cannot read, or one a log lacks while its header says the evaluation succeeded (and
did not stop that sample early), is an :class:`UnreadableSample` in its place
(:func:`read_inspect_samples`) while the others are still read.

A sample's messages map as OpenAI chat messages do (:func:`vthread.adapters.from_openai`), with
Inspect's shapes:

==========================================  ==================================================
Inspect message                             native messages
==========================================  ==================================================
``system`` / ``user``                       ``{"type": "system" | "user", "text": ...}``, the
                                            text parts of a content list joined by ``\\n``
``assistant`` ``reasoning`` content parts   ``{"type": "reasoning", "text": ...}`` (their
                                            ``reasoning`` texts, a redacted one's ``summary``)
``assistant`` text                          ``{"type": "bot", "text": ...}`` when non-empty
``assistant`` ``tool_calls[i]``             activity request: ``name`` = ``function``,
``{id, function, arguments}``               ``arguments`` as recorded (an object)
``tool`` ``{tool_call_id, function,         activity response with the call's name and
content, error}``                           arguments; ``result`` = the content parsed as JSON
                                            when it is JSON text, else the text (the error's
                                            ``message`` when there is no content)
==========================================  ==================================================

The thread's id is ``"<sample id>/<epoch>"``. An assistant message's tokens are the
``output_tokens`` of the model call that produced it (the ``model`` event whose output
message has its ``id``); a sample without such events has the ``model_usage`` output tokens
of the model that wrote it (the evaluation's) shared by its assistant messages, whole tokens
each, so that its total is still right (:func:`chat_of`). A log of an evaluation that did not
finish lacks the samples it never ran, and one run with ``log_samples=False`` all of them:
said once they are read (:func:`read_inspect_samples`).

>>> thread_of({"id": 3, "epoch": 1, "messages": [
...     {"role": "assistant", "id": "m1", "content": "",
...      "tool_calls": [{"id": "c1", "function": "ls", "arguments": {}}]},
...     {"role": "tool", "tool_call_id": "c1", "function": "ls", "content": "a.py"}]},
...     {"m1": 12})  # doctest: +NORMALIZE_WHITESPACE
('3/1', [{'type': 'activity', 'text': '', 'meta': {'activity': {'type': 'request',
  'function': {'name': 'ls', 'arguments': {}}}}, 'usage': {'tokens': 12}},
 {'type': 'activity', 'text': '', 'meta': {'activity': {'type': 'response',
  'function': {'name': 'ls', 'arguments': {}, 'result': 'a.py'}}}}])
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any, Final

from vthread.adapters import from_openai

__all__ = ["INSTALL_HINT", "UnreadableLogError", "UnreadableSample", "chat_of", "is_inspect_log",
           "read_inspect_chats", "read_inspect_log", "read_inspect_samples", "thread_of"]

INSTALL_HINT: Final = "pip install 'vthread[inspect]'"
"""How to get the reader this module needs."""
EVAL_SUFFIX: Final = ".eval"
"""The file name ending of Inspect's own log format (a zip archive)."""
# The parts of a sample read here: dumping the rest (events, store, attachments) would cost
# more than the messages themselves.
_SAMPLE_FIELDS: Final = frozenset({"id", "epoch", "messages", "model_usage"})
# How much of a value an error message quotes (a sample's whole message may be the value).
_QUOTED_CHARS: Final = 80


@dataclass(frozen=True, slots=True)
class UnreadableSample:
    """A sample of a log that cannot be read, in its place among the samples
    :func:`read_inspect_samples` yields: its thread id (``"<sample id>/<epoch>"``, None when
    the sample names no id), and why, naming the sample."""

    ident: str | None
    reason: str


class UnreadableLogError(ValueError):
    """A file inspect_ai cannot read as a log (no JSON, no whole zip archive, no Inspect
    log, a header that does not validate), said in a person's words; inspect_ai's or the
    parser's own exception is its ``__cause__``."""


def unreadable_reason(error: Exception) -> str:
    """What inspect_ai's (or its parser's) ``error`` on a file it cannot read as a log means
    to a person: its zip reader's words for a file that is no zip archive ("EOCD not found":
    the archive's end record is missing) say so; a header that does not validate is named
    by its first problem's place (:func:`_problem`), as a sample's is."""
    import zipfile

    from pydantic import ValidationError

    if isinstance(error, UnreadableLogError):
        return str(error)
    if isinstance(error, zipfile.BadZipFile) or "EOCD" in str(error):
        return (f"it is not a whole zip archive, which an .eval log is (cut short while "
                f"written or copied, or another kind of file): {error}")
    if isinstance(error, KeyError) and error.args and isinstance(error.args[0], str):
        # (a zip archive's missing member: inspect_ai's own KeyError says only its name)
        return (f"it has no member {error.args[0]!r}, which an .eval log holds (a zip "
                "archive of another kind, or a log damaged or written by another program)")
    if isinstance(error, ValidationError):
        return f"its header is not an Inspect log's: {_problem(error)}"
    if isinstance(error, UnicodeDecodeError):
        return f"it is not UTF-8 text, which a .json log is: {error}"
    if isinstance(error, json.JSONDecodeError):
        return f"it is not one JSON document, which a .json log is: {error}"
    return str(error)


def _log_read(read: Callable[[], Any]) -> Any:
    """``read()`` (inspect_ai's or the parser's reading of a log as a whole: its header, its
    document), an exception of a file that is no log it reads raised as an
    :class:`UnreadableLogError` (pydantic's text, over several lines, on a SWE-agent trajectory;
    a ``UnicodeDecodeError`` on a Parquet file); the file's, the installation's and the
    memory's errors as they are."""
    try:
        return read()
    except (OSError, ImportError, MemoryError, UnreadableLogError):
        raise
    except Exception as error:
        raise UnreadableLogError(unreadable_reason(error)) from error


# A sample as read: (id, chat messages), or why it cannot be.
_Read = tuple[str, list[dict[str, Any]]] | UnreadableSample


def is_inspect_log(document: Any) -> bool:
    """Whether a parsed JSON document is an Inspect log: an object with a ``version`` and an
    ``eval`` header naming its ``task`` and ``model``. O(1).

    >>> is_inspect_log({"version": 2, "eval": {"task": "t", "model": "m"}, "samples": []})
    True
    """
    header = document.get("eval") if isinstance(document, Mapping) else None
    return (isinstance(header, Mapping) and "version" in document and "task" in header
            and "model" in header)


def bookkeeping_of(document: Any, name: str | None = None) -> str | None:
    """What a parsed JSON document is when it is one of the files Inspect AI's ``eval_set``
    writes beside its logs (not runs), else None: the manifest of the set's logs
    (``logs.json``: an object of log file name -> log header, no samples) or the set's
    file (``eval-set.json``: its id and tasks); ``name``, the file's name without its
    folder, when told, must be that file's. O(size of the document).

    >>> bookkeeping_of({"eval_set_id": "x", "tasks": []})
    "Inspect AI's eval-set file (the set's id and tasks)"
    """
    if not isinstance(document, dict) or not document:
        return None
    if name in (None, "eval-set.json") and "eval_set_id" in document and isinstance(
            document.get("tasks"), list):
        return "Inspect AI's eval-set file (the set's id and tasks)"
    if name in (None, "logs.json") and all(
            is_inspect_log(header) and "samples" not in header for header in document.values()):
        return "Inspect AI's manifest of an eval set's logs (their headers, no samples)"
    return None


def read_inspect_log(source: str | Path | IO[bytes]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(id, native messages) of each sample of the Inspect log at ``source``: a path (``.eval``
    or ``.json``), or a binary stream holding a ``.json`` log. Samples are read one at a time
    from a ``.eval`` log (a ``.json`` one is parsed whole). Raises :class:`ImportError` saying
    what to install when inspect_ai is not installed, and :class:`ValueError` naming the
    first sample that cannot be read (:class:`UnreadableSample`), after the samples before
    it; an :class:`UnreadableLogError` (a ValueError) saying why in one line on a file that is
    no log inspect_ai reads (no JSON, no whole zip archive, a header that does not
    validate)."""
    for ident, chat in read_inspect_chats(source):
        yield ident, from_openai(chat)


def read_inspect_chats(
    source: str | Path | IO[bytes],
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """:func:`read_inspect_log` before the last step: each sample's messages as the OpenAI
    chat messages that map to its native ones, one for one with the sample's own, so a
    scan can count loops in the log's messages."""
    for sample in read_inspect_samples(source):
        if isinstance(sample, UnreadableSample):
            raise ValueError(sample.reason)
        yield sample


def read_inspect_samples(source: str | Path | IO[bytes],
                         lacking: Callable[[str], object] | None = None) -> Iterator[_Read]:
    """:func:`read_inspect_chats` that reads on past a sample it cannot read: (id, chat
    messages) of each sample, or an :class:`UnreadableSample` in the place of one
    inspect_ai cannot read (a ``.eval`` member that is no JSON, a sample that does not
    validate), one :func:`chat_of` refuses, or one a log lacks while its header says the
    evaluation succeeded and did not stop it early (in its place in a ``.eval`` log, after
    the samples a ``.json`` one holds; an interrupted evaluation's missing samples are not
    yielded: it never ran them). Raises as :func:`read_inspect_log` does when the log itself
    (its header) cannot be read, and on an error of the file or the installation (OSError,
    ImportError). O(size of the log); a ``.eval`` log's samples are held up to 64 or 16 MB
    of their JSON at a time, a ``.json`` log whole.

    A log whose evaluation did not finish (its status ``started``: still running, or
    killed; ``error``; ``cancelled``) and lacks samples its header lists, or that its
    evaluation was told not to write (``log_samples=False``), is said, once its
    samples are read: ``lacking(why)`` when given (``vthread scan`` lists the log among
    those cut short, with an error record), else a :class:`UserWarning`: a scan of it
    checked only the samples it ran. So is a log holding samples that ended in an error
    (inspect_ai's ``sample.error``: a model that could not be reached, a tool that raised),
    whose runs stop where the error stopped them."""
    try:
        import inspect_ai.log  # noqa: F401  (the error that says what to install, first)
    except ImportError as error:
        raise ImportError(f"reading an Inspect AI log needs inspect_ai: {INSTALL_HINT}") from error
    notes = _Notes(lacking if lacking is not None else _warn_lacking)
    if isinstance(source, (str, Path)) and str(source).lower().endswith(EVAL_SUFFIX):
        yield from _eval_samples(source, notes)
    elif isinstance(source, (str, Path)):
        yield from _json_samples(Path(source).read_bytes(), notes)
    else:
        yield from _json_samples(source.read(), notes)
    notes.say_errored()


class _Notes:
    """What is said of a log once its samples are read: what it lacks (``lacking(why)``,
    :func:`_lacking`), and the samples that ended in an error, which it holds (often with
    only the messages before the error: an evaluation whose model could not be reached
    holds each sample's input alone, which checked as a progressing run)."""

    def __init__(self, lacking: Callable[[str], object]) -> None:
        self.lacking = lacking
        self.errors = 0
        self.first: tuple[str, Any] | None = None

    def errored(self, sample: str, message: Any) -> None:
        """Note that ``sample`` (its name) ended in an error saying ``message``."""
        self.errors += 1
        if self.first is None:
            self.first = (sample, message)

    def say_errored(self) -> None:
        """Tell ``lacking`` of the samples noted that ended in an error, if any."""
        if self.first is None:
            return
        sample, message = self.first
        said = ""
        if isinstance(message, str) and message.strip():
            line = message.strip().splitlines()[0]
            said = f": {line[:_QUOTED_CHARS]}{'...' if len(line) > _QUOTED_CHARS else ''}"
        first = "it" if self.errors == 1 else "the first"
        self.lacking(f"holds {self.errors:,} sample{'s' if self.errors > 1 else ''} that "
                     f"ended in an error ({first}, {sample}{said}): their runs stop where "
                     "the error stopped them, and are checked as far as they went")


def _warn_lacking(why: str) -> None:
    """Warn that a log lacks samples, pointing at the caller's line that read it: the
    first frame outside this module (the generators between differ by the log's kind)."""
    import sys
    import warnings

    level = 1
    reading: FrameType | None = sys._getframe(0)
    while reading is not None and reading.f_code.co_filename == __file__:
        level, reading = level + 1, reading.f_back
    warnings.warn(f"the Inspect AI log {why}", UserWarning, stacklevel=level)


_UNFINISHED: Final = {"started": "still running, or stopped before it finished",
                      "error": "it ended in an error", "cancelled": "it was cancelled"}
"""Why an evaluation of each unfinished status lacks samples, as said of its log."""


def _early_stops(results: Any) -> set[tuple[Any, Any]]:
    """The key (:func:`_sample_key`) of each sample an early-stopping manager stopped, from a
    log's results (inspect_ai's object, or as a ``.json`` log writes it; an inspect_ai
    before early stopping has no such field)."""
    stops = _field(_field(results, "early_stopping"), "early_stops")
    if not isinstance(stops, Sequence) or isinstance(stops, (str, bytes)):
        return set()
    return {_sample_key(_field(stop, "id"), _field(stop, "epoch")) for stop in stops}


_LACKING_NOTE: Final = re.compile(
    r"holds (?:(?:none|[0-9,]+) of the [0-9,]+ samples its header lists:|[0-9,]+ samples? "
    r"that ended in an error) [^\n]*")
"""The form of every note said of a log once its samples are read: what :func:`_unfinished`
writes (a test holds the two together), and what :meth:`_Notes.say_errored` writes of
samples that ended in an error (their names keep the first's: "lacking")."""


def is_lacking_note(record: Mapping[str, Any]) -> bool:
    """Whether a ``vthread scan`` record is the one that ends an Inspect log lacking
    samples, or holding samples that ended in an error (:data:`_LACKING_NOTE`): it stands
    for no sample (the scan's summary counts it as no line and no error), and a reader of
    the records counts it so too (``vthread report``). Its id is
    null and it holds no field but ``file``, ``line`` and ``error`` (a Parquet row's others
    null)."""
    error = record.get("error")
    return (isinstance(error, str) and _LACKING_NOTE.fullmatch(error) is not None
            and all(value is None for key, value in record.items()
                    if key not in ("file", "line", "error")))  # (a Parquet row's nulls)


def _unfinished(status: Any, held: int, listed: int | None, log_samples: Any = True
                ) -> str | None:
    """What a log lacks, said of it (``held`` samples of the ``listed`` its header lists,
    sample ids times epochs, those it holds and those it names missing), or None: no sample
    lacking. A finished evaluation lacks samples only when it was told not to log them
    (``log_samples``: its config's) or the log was cut after it was written."""
    if listed is None or held >= listed:
        return None
    if log_samples is False:
        why = "its evaluation ran with log_samples=False, which writes none to the log"
    elif status == "success":
        why = "its header says the evaluation succeeded, which writes them all"
    else:
        unfinished = _UNFINISHED.get(status, f"its status is {status!r}")
        why = f"its evaluation did not finish ({unfinished})"
    if not held:
        return f"holds none of the {listed:,} samples its header lists: {why}; they go unchecked"
    return (f"holds {held:,} of the {listed:,} samples its header lists: {why}; the others "
            f"are not in it, and go unchecked")


def _missing(wanted: Sequence[tuple[Any, Any]], held: set[tuple[Any, Any]],
             stopped: set[tuple[Any, Any]]) -> Iterator[UnreadableSample]:
    """An error naming each sample of ``wanted`` ((id, epoch) each, as the header lists
    them) that a finished evaluation's log does not hold (``held``, ``stopped`` early: the
    key of each, :func:`_sample_key`), in the header's order."""
    for sample_id, epoch in wanted:
        key = _sample_key(sample_id, epoch)
        if key not in held and key not in stopped:
            yield _said_missing(sample_id, epoch)


def _said_missing(sample_id: Any, epoch: Any) -> UnreadableSample:
    """The error of a sample a finished evaluation's log lacks."""
    named = _sample_name({"id": sample_id, "epoch": epoch})
    return UnreadableSample(_thread_id(sample_id, epoch), f"{named} is missing from the log, "
                            "whose header says the evaluation succeeded")


def _wanted(sample_ids: Any, epochs: Any) -> list[tuple[Any, int]]:
    """(id, epoch) of every sample a header lists to be run, in its order (none when it
    lists no ids)."""
    if not isinstance(sample_ids, list):
        return []
    return [(sample_id, epoch) for sample_id in sample_ids
            for epoch in range(1, _epoch_count(epochs) + 1)]


def _epoch_count(epochs: Any) -> int:
    """How many epochs a config's ``epochs`` runs: 1 unless it is a positive integer."""
    return epochs if _whole(epochs) is not None and epochs > 0 else 1


def _listed(sample_ids: Any, samples: Any, epochs: Any, stopped: set[tuple[Any, Any]],
            config: Any = None) -> int | None:
    """How many samples a header lists to be run: its sample ids (the ids chosen, limits
    applied) times its epochs, less those stopped early; without ids, its count of the
    dataset's samples as its ``config`` (inspect_ai's or a ``.json`` log's) ``limit``
    slices them (the first n, or a range, as Python slices). None when it says neither, or
    chose samples by ``sample_id`` (patterns matched against ids it does not list)."""
    if isinstance(sample_ids, list):
        count = len(sample_ids)
    else:
        dataset, limit = _whole(samples), _field(config, "limit")
        if dataset is None or _field(config, "sample_id") is not None:
            return None
        count = dataset
        if _whole(limit) is not None:
            count = len(range(count)[:limit])
        elif limit is not None:
            ends = list(limit) if isinstance(limit, Sequence) and not isinstance(limit, str) else []
            if len(ends) != 2 or _whole(ends[0]) is None or _whole(ends[1]) is None:
                return None
            count = len(range(count)[ends[0]:ends[1]])
    return count * _epoch_count(epochs) - len(stopped)


def _whole(value: Any) -> int | None:
    """``value`` when it is an integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _eval_samples(path: str | Path, notes: _Notes) -> Iterator[_Read]:
    """The samples of a ``.eval`` log, in the order of its header's sample ids and epochs
    (as :func:`inspect_ai.log.read_eval_log_samples` reads them), in batches
    (:func:`_batches`: one reading of the archive's directory for each; read one at a time,
    each read it again, and 2,000 samples took 8.1 CPU s against 0.75), a batch that fails
    read again one sample at a time so that each bad one is named."""
    from inspect_ai.log import read_eval_log

    header = _log_read(lambda: read_eval_log(path, header_only=True))
    config = header.eval.config
    sample_ids = header.eval.dataset.sample_ids
    stopped = _early_stops(header.results)
    if sample_ids is None:
        # An inspect_ai before sample ids were written: read whole, as inspect_ai reads it,
        # held in memory at once; where one sample fails that read, each read alone.
        try:
            log = read_eval_log(path, resolve_attachments=True)
        except (OSError, ImportError, MemoryError):  # (the file's or the installation's)
            raise
        except Exception:  # (a sample inspect_ai cannot read: said by the sample)
            yield from _archived_samples(path, header, notes)
            return
        yield from _log_samples(log, None, notes)
        return
    # A finished evaluation holds every sample its header lists but those it stopped early
    # (or all of them when it was told not to log them); an interrupted one (status
    # "started", "error", "cancelled") or one with invalidated samples, only those it ran.
    complete = (header.status == "success" and not header.invalidated
                and config.log_samples is not False)
    # (held: those read, and those said missing in their places, which _lacking then
    # does not name again)
    held: list[tuple[Any, Any]] = []
    wanted = _wanted(sample_ids, config.epochs)
    keys = {_sample_key(sample_id, epoch) for sample_id, epoch in wanted}
    # (elsewhere: samples read from a listed sample's member that are another, unlisted)
    elsewhere: list[_Read] = []
    for (sample_id, epoch), own, sample in _members_read(path, wanted, header.eval.model,
                                                         notes):
        key = _sample_key(sample_id, epoch)
        if own not in (None, key) and not isinstance(sample, _Missing):
            # The member of id 1 is the member of id "1" too (samples/1_epoch_1.json), the
            # later of the two written over the earlier: the sample it holds is read in its
            # own turn, or after those listed when the header does not list it.
            if own not in keys:
                elsewhere.append(sample)
            sample = _Missing()
        if isinstance(sample, _Missing):
            if not complete or key in stopped:
                continue
            sample = _said_missing(sample_id, epoch)
        held.append(key)
        yield sample
    # Samples the archive holds that its header does not list (a sample added to the log
    # after its header was written: inspect_ai reading the log whole reads them), after;
    # its members are named by their ids as text.
    yield from elsewhere
    listed = {(str(sample_id), epoch) for sample_id, epoch in wanted}
    unlisted = [member for member in _archived_members(path) if member not in listed]
    for _, _, sample in _members_read(path, unlisted, header.eval.model, notes):
        if not isinstance(sample, _Missing):
            yield sample
    yield from _lacking(header, held, notes.lacking)


def _members_read(path: str | Path, wanted: list[tuple[Any, int]], model: str | None,
                  notes: _Notes
                  ) -> Iterator[tuple[tuple[Any, int], tuple[Any, Any] | None, _Read | _Missing]]:
    """Each of ``wanted`` ((id, epoch) each) with the key (:func:`_sample_key`) of the sample
    its member holds, None where none was read, and that sample of the ``.eval`` log at
    ``path``, read in batches (:func:`_batches`, :func:`_eval_batch`): (id, chat messages)
    (``model``: the evaluation's), an :class:`UnreadableSample`, or a :class:`_Missing`.
    The key is the sample's own, which may not be the one asked for: a member is named by
    the id's text, which the ids ``1`` and ``"1"`` share."""
    for batch in _batches(path, wanted):
        for member, sample in zip(batch, _eval_batch(path, batch), strict=True):
            if isinstance(sample, (UnreadableSample, _Missing)):
                yield member, None, sample
            else:
                yield (member, _sample_key(sample.id, sample.epoch),
                       _chat_or_why(sample, model, notes))


def _lacking(log: Any, held: list[tuple[Any, Any]], lacking: Callable[[str], object]
             ) -> Iterator[UnreadableSample]:
    """After the samples of a log (inspect_ai's ``EvalLog`` or header, or a ``.json`` log's
    document: the header's fields read alike), ``held`` (the key of each it holds,
    :func:`_sample_key`): an error naming each sample its header lists that it lacks though its
    evaluation finished, then what else it lacks told to ``lacking`` (:func:`_unfinished`:
    an unfinished evaluation's samples, never run, and those it was told not to log, have
    no records of their own). A finished log with invalidated samples may leave them out,
    and is not said to lack them. ``log`` must be
    the header as written: inspect_ai reading a log whole lists the ids of the samples it
    found where the header lists none. A sample held twice (a requeued one) counts once."""
    spec = _field(log, "eval")
    dataset, config = _field(spec, "dataset"), _field(spec, "config")
    status, log_samples = _field(log, "status"), _field(config, "log_samples")
    sample_ids, epochs = _field(dataset, "sample_ids"), _field(config, "epochs")
    stopped = _early_stops(_field(log, "results"))
    wanted = _wanted(sample_ids, epochs)  # (none without ids: which it lacks is not named)
    named: list[UnreadableSample] = []
    if status == "success" and log_samples is not False:
        if _field(log, "invalidated"):
            return  # (invalidated samples may be left out)
        named = list(_missing(wanted, set(held), stopped))
        yield from named
    if isinstance(sample_ids, list):  # (a sample the header does not list is no part of it)
        listed = {_sample_key(sample_id, epoch) for sample_id, epoch in wanted}
        held = [pair for pair in held if pair in listed]
    why = _unfinished(status, len(set(held)) + len(named),
                      _listed(sample_ids, _field(dataset, "samples"), epochs, stopped, config),
                      log_samples)
    if why is not None:
        lacking(why)


def _archived_members(path: str | Path) -> list[tuple[str, int]]:
    """(id as text, epoch) of each sample member (``samples/<id>_epoch_<n>.json``) of the
    ``.eval`` archive at ``path``, once each, in the order of their epochs and ids, as
    inspect_ai sorts a log read whole; none when it cannot be listed (a path only
    inspect_ai's file systems open). O(members)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            names = dict.fromkeys(name for name in archive.namelist()
                                  if name.startswith("samples/") and name.endswith(".json"))
    except (OSError, ValueError, zipfile.BadZipFile):  # (not a local zip: inspect_ai's to say)
        return []
    members: list[tuple[str, int]] = []
    for name in names:
        sample_id, _, epoch = name.removeprefix("samples/").removesuffix(".json").rpartition(
            "_epoch_")
        if sample_id and epoch.isdecimal():
            members.append((sample_id, int(epoch)))
    members.sort(key=lambda member: (member[1], member[0].zfill(20) if member[0].isdecimal()
                                     else member[0]))
    return members


def _archived_samples(path: str | Path, header: Any, notes: _Notes
                      ) -> Iterator[_Read]:
    """The samples of a ``.eval`` log whose header lists no sample ids, each member of
    its ``samples/`` read alone (in the order of their epochs and ids, as inspect_ai sorts
    a log read whole), so that one inspect_ai cannot read is named in its place and the
    others are still read; then what the log lacks, told to ``notes``."""
    held: list[tuple[Any, Any]] = []
    for member, own, sample in _members_read(path, _archived_members(path), header.eval.model,
                                             notes):
        if not isinstance(sample, _Missing):  # (listed by the archive: never missing)
            held.append(own if own is not None else member)
            yield sample
    yield from _lacking(header, held, notes.lacking)


_EVAL_BATCH: Final = 64
"""Most samples of a ``.eval`` log read together (held in memory at once)."""
_EVAL_BATCH_BYTES: Final = 16 << 20
"""Most bytes of JSON (as the archive lists its members' sizes) in one batch of samples: a
batch of 64 samples of 5 MB each held 448 MB where one at a time held 124 MB."""


def _batches(path: str | Path, wanted: list[tuple[Any, int]]
             ) -> Iterator[list[tuple[Any, int]]]:
    """``wanted`` (sample id, epoch) in batches of at most :data:`_EVAL_BATCH` samples and
    :data:`_EVAL_BATCH_BYTES` of their members' JSON (a larger sample alone), by the sizes
    the archive's directory lists; one sample a batch where it cannot be listed (a path
    only inspect_ai's file systems open). O(samples + members)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            sizes = {info.filename: info.file_size for info in archive.infolist()}
    except (OSError, ValueError, zipfile.BadZipFile):  # (not a local zip: inspect_ai's to say)
        sizes = None
    batch: list[tuple[Any, int]] = []
    held = 0
    for sample_id, epoch in wanted:
        size = (_EVAL_BATCH_BYTES if sizes is None
                else sizes.get(f"samples/{sample_id}_epoch_{epoch}.json", 0))
        if batch and (len(batch) >= _EVAL_BATCH or held + size > _EVAL_BATCH_BYTES):
            yield batch
            batch, held = [], 0
        batch.append((sample_id, epoch))
        held += size
    if batch:
        yield batch


class _Missing:
    """A sample a ``.eval`` log does not hold."""


def _eval_batch(path: str | Path, batch: list[tuple[Any, int]]) -> Iterator[Any]:
    """The samples ``batch`` names ((id, epoch) each) of the ``.eval`` log at ``path``, in
    its order: inspect_ai's sample, a :class:`_Missing`, or an :class:`UnreadableSample`
    saying why. An error of the file or the installation (OSError, ImportError) is the
    log's, not a sample's, and passes through; so does running out of memory on a sample
    read alone, after the samples before it (a batch that ran out is read one at a time,
    so that one sample too large for the memory loses no other's record)."""
    import inspect_ai.log as inspect_log

    together = getattr(inspect_log, "read_eval_log_samples_by_id", None)  # (0.3.130 on)
    if together is not None:
        try:
            samples = list(together(path, batch, concurrency=1, resolve_attachments=True))
        except (OSError, ImportError):
            raise
        except Exception:
            # A sample in it that cannot be read, or is missing, or the batch too large for
            # the memory (a MemoryError, its memory given back): one at a time.
            samples = None
        if samples is not None:
            yield from samples
            return
    for sample_id, epoch in batch:
        # (read in the try, given out after it: nothing its reader does is taken for the
        # sample's failure)
        sample: Any
        try:
            sample = inspect_log.read_eval_log_sample(path, id=sample_id, epoch=epoch,
                                                      resolve_attachments=True)
        except IndexError:  # (inspect_ai's answer for a sample the log does not hold)
            sample = _Missing()
        except (OSError, ImportError, MemoryError):
            raise
        except Exception as error:  # whatever inspect_ai raises on the sample's member
            named = _sample_name({"id": sample_id, "epoch": epoch})
            sample = UnreadableSample(_thread_id(sample_id, epoch),
                                      f"{named} cannot be read: {_problem(error)}")
        yield sample


def _json_samples(data: bytes, notes: _Notes) -> Iterator[_Read]:
    """The samples of a ``.json`` log, in the document's order: read whole by inspect_ai
    when it can; else (inspect_ai validates a document whole, so that one invalid sample
    loses them all) :func:`_json_samples_alone`."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(io.BytesIO(data), resolve_attachments=True, format="json")
    except (OSError, ImportError, MemoryError):  # (the file's or the installation's)
        raise
    except Exception:  # (said by the sample, or the header, it is about)
        yield from _json_samples_alone(data, notes)
        return
    written = _WRITES_SAMPLE_IDS.search(data)
    yield from _log_samples(log, log.eval.dataset.sample_ids
                            if written is not None and written.group(1) == b"[" else None,
                            notes)


_WRITES_SAMPLE_IDS: Final = re.compile(rb'"sample_ids"\s*:\s*(null|\[)')
"""How a ``.json`` log's header writes its sample ids, first in the document (its ``eval``
header is written before its samples; in a string the quotes would be escaped): a list,
or null (none: so is a header that names none)."""


def _log_samples(log: Any, sample_ids: list[Any] | None, notes: _Notes
                 ) -> Iterator[_Read]:
    """The samples of a log inspect_ai read whole, then what it lacks (:func:`_lacking`) by
    its header with the ``sample_ids`` it was written with (inspect_ai reading a log whole
    lists the ids of the samples it found where the header lists none)."""
    for sample in log.samples or []:
        yield _chat_or_why(sample, log.eval.model, notes)
    spec = log.eval
    header = {"status": log.status, "invalidated": log.invalidated, "results": log.results,
              "eval": {"dataset": {"sample_ids": sample_ids, "samples": spec.dataset.samples},
                       "config": spec.config}}
    yield from _lacking(header, [_sample_key(sample.id, sample.epoch)
                                 for sample in log.samples or []], notes.lacking)


def _json_samples_alone(data: bytes, notes: _Notes) -> Iterator[_Read]:
    """The samples of a ``.json`` log inspect_ai cannot read whole, in the document's
    order: the header is read first as a log without samples, then each sample as a log of
    its own with the least of that header inspect_ai needs (its reading, attachments
    resolved, ids kept as written; each sample's JSON written again, O(size of the sample),
    about a third more time than reading the log whole). The header's list of sample ids
    and its results, O(samples) each, are left out of the samples' logs."""
    from inspect_ai.log import read_eval_log
    from pydantic_core import from_json

    try:
        document = from_json(data)  # (as inspect_ai parses a log: NaN and Infinity allowed)
    except ValueError:
        # A lone surrogate's escape (\udcff: valid JSON, which Python's json reads and a
        # writer of mended text leaves) is refused by pydantic's parser: read by json, the
        # one sample holding it is then refused alone, with its own error record (it cost
        # the whole log).
        document = _log_read(lambda: json.loads(data))
    if not isinstance(document, dict):
        raise UnreadableLogError(f"the log is not a JSON object, but {_kind(document)}")
    samples = document.pop("samples", None) or []
    _log_read(lambda: read_eval_log(io.BytesIO(json.dumps(document).encode()),
                                    format="json"))  # its header
    if not isinstance(samples, list):
        raise UnreadableLogError(f"the log's samples are not a list, but {_kind(samples)}")
    spec = document["eval"]  # (an object naming a dataset: the header was read)
    header = {"version": document.get("version", 2),
              "eval": {**spec, "dataset": {**spec["dataset"], "sample_ids": None}}}
    held: list[tuple[Any, Any]] = []
    invalid: list[tuple[Any, Any]] = []  # (id, epoch) as written, of each refused
    for position, raw in enumerate(samples):
        fields = raw if isinstance(raw, dict) else {}
        sample_id, epoch = fields.get("id"), fields.get("epoch", 1)
        ident = None if sample_id is None else _thread_id(sample_id, epoch)
        named = (f"sample {position + 1} of the log" if sample_id is None
                 else _sample_name(fields))
        alone = json.dumps({**header, "samples": [raw]}).encode()
        try:
            log = read_eval_log(io.BytesIO(alone), resolve_attachments=True, format="json")
        except (OSError, ImportError, MemoryError):  # (the file's or the installation's)
            raise
        except Exception as error:  # a sample that does not validate, by pydantic's reason
            yield UnreadableSample(ident, f"{named} is not a valid Inspect sample: "
                                          f"{_problem(error, 'samples.0.')}")
            invalid.append((sample_id, epoch))
            continue
        (sample,) = log.samples or []
        held.append(_sample_key(sample.id, sample.epoch))
        yield _chat_or_why(sample, log.eval.model, notes)
    wanted = _wanted(_field(_field(spec, "dataset"), "sample_ids"),
                     _field(_field(spec, "config"), "epochs"))
    yield from _lacking(document, held + _stood_for(wanted, held, invalid), notes.lacking)


def _stood_for(wanted: list[tuple[Any, int]], held: list[tuple[Any, Any]],
               invalid: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The key (:func:`_sample_key`) each ``invalid`` sample (refused, with its own error record;
    its id and epoch as written) is counted as held under: the header's ``wanted`` sample
    no read sample holds with its id and epoch, else the first with its id (an epoch
    written as text), else, for an id written as null (or none), the first left; else its
    own, as written (a header listing no ids, or an id it does not list: which it lacks is
    then still said). So a refused sample is not said missing too, a second record for one
    sample (found by a tester). O(wanted * invalid), the invalid few."""
    taken = set(held)
    left = [pair for pair in (_sample_key(sample_id, epoch) for sample_id, epoch in wanted)
            if pair not in taken]
    stood: list[tuple[Any, Any]] = []
    for sample_id, epoch in invalid:
        written = _sample_key(sample_id, epoch if epoch is not None else 1)
        match = next((pair for pair in left if pair == written), None)
        if match is None:
            match = next((pair for pair in left if pair[0] == written[0]), None)
        if match is None and sample_id is None and left:
            match = left[0]
        if match is None:
            stood.append(written)
            continue
        left.remove(match)
        stood.append(match)
    return stood


def _chat_or_why(sample: Any, model: str | None, notes: _Notes) -> _Read:
    """(id, chat messages) of a sample read by inspect_ai, or why :func:`chat_of` refuses
    it (``model``: the evaluation's, whose usage is the agent's); a sample that ended in an
    error is told to ``notes``."""
    error = getattr(sample, "error", None)
    if error is not None:
        notes.errored(_sample_name({"id": sample.id, "epoch": sample.epoch}),
                      getattr(error, "message", None))
    try:
        return chat_of(sample, model=model)
    except ValueError as error:
        return UnreadableSample(_thread_id(sample.id, sample.epoch), str(error))


def _problem(error: Exception, within: str = "") -> str:
    """An exception inspect_ai raised as one line: a pydantic validation error as the place
    of its first problem (``within`` left off), what that place should be and what it is,
    and how many other places have problems (pydantic says each place once per alternative
    a value may take, over several lines)."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return f"{type(error).__name__}: {error}"  # (the type says what broke: JSON, zip)
    problems = error.errors(include_url=False)
    # (a place that is ``within`` itself, the sample as a whole, is left as "")
    places = [(_place(problem["loc"]) + ".").removeprefix(within).removesuffix(".")
              for problem in problems]
    first = places[0]
    said = list(dict.fromkeys(problem["msg"] for problem, place
                              in zip(problems, places, strict=True) if place == first))
    prefix = "Input should be "
    if len(said) > 1 and all(text.startswith(prefix) for text in said):
        said = [prefix + " or ".join(text.removeprefix(prefix) for text in said)]
    others = len(set(places)) - 1
    return (f"{first or 'the sample'}: {'; '.join(said)} (it is "
            f"{_quoted(problems[0].get('input'))})"
            + (f"; and problems in {others} other place{'s' * (others > 1)}" if others else ""))


def _place(location: Sequence[int | str]) -> str:
    """A pydantic error's location as a dotted path, without the names of the validators
    it went through (``function-wrap[_wrap()]``), which are no place in the document."""
    return ".".join(str(part) for part in location
                    if not (isinstance(part, str) and "[" in part))


def _quoted(value: Any) -> str:
    """A value as an error message quotes it: its repr, cut at ``_QUOTED_CHARS``."""
    text = repr(value)
    return text if len(text) <= _QUOTED_CHARS else f"{text[:_QUOTED_CHARS]}..."


def _kind(value: Any) -> str:
    """What a JSON value is, for an error message: ``a str``, ``an int``."""
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _call_tokens(events: Sequence[Any], named: str) -> dict[Any, Any]:
    """The output tokens of each model call, by the id of the message it produced; the
    events as inspect_ai's objects or as a ``.json`` log writes them. Raises
    :class:`ValueError` saying where, starting with ``named``, on events that are not
    a list, or a call whose choices are not a list or whose figure is not a number."""
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise ValueError(f"{named}: events are not a list, but {_kind(events)}")
    tokens: dict[Any, Any] = {}
    for index, event in enumerate(events):
        if _field(event, "event") != "model":
            continue
        output = _field(event, "output")
        choices, usage = _field(output, "choices"), _field(output, "usage")
        if not choices or usage is None:
            continue
        if not isinstance(choices, Sequence) or isinstance(choices, (str, bytes)):
            raise ValueError(f"{named}: event {index}: the output's choices are not a list, "
                             f"but {_kind(choices)}")
        message_id = _field(_field(choices[0], "message"), "id")
        if message_id is not None:
            tokens[_key(message_id, f"{named}: event {index}: the output message's id")] = (
                _figure(_field(usage, "output_tokens"), f"{named}: event {index}"))
    return tokens


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _figure(value: Any, where: str) -> float | None:
    """An ``output_tokens`` figure, a number or None; :class:`ValueError` from ``where``
    otherwise (a figure written as text would otherwise be added as text)."""
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    raise ValueError(f"{where}: output_tokens is not a number, but {_kind(value)} "
                     f"({_quoted(value)})")


def _key(value: Any, what: str) -> str | int | None:
    """A message id, by which tokens are looked up: text, an integer or None (inspect_ai
    writes text); :class:`ValueError` saying ``what`` it is otherwise (a list or an object
    is no key, and ``true`` would be taken for ``1``)."""
    if value is None or isinstance(value, str) or (isinstance(value, int)
                                                    and not isinstance(value, bool)):
        return value
    raise ValueError(f"{what} is not text, but {_kind(value)}")


def _thread_id(sample_id: Any, epoch: Any) -> str:
    """A sample's thread id: ``"<sample id>/<epoch>"``."""
    return f"{sample_id}/{epoch}"


def _sample_key(sample_id: Any, epoch: Any) -> tuple[Any, Any]:
    """How a sample is told from the others, by its id and epoch each as a hashable value
    of its own kind: text and an integer as they are (Inspect holds sample ``"1"`` and
    sample ``1`` as two: their text alone made them one, a present sample said missing or
    one member read twice), anything else (a refused sample's, as written: ``true``, ``1.0``,
    a list) as its kind and repr, equal to no text, integer or other kind's value."""
    return _keyed(sample_id), _keyed(epoch)


def _keyed(value: Any) -> Any:
    if isinstance(value, str) or _whole(value) is not None:
        return value
    return type(value).__name__, repr(value)


def _sample_name(sample: Mapping[str, Any]) -> str:
    """How an error names a sample: ``sample 'stuck' epoch 1`` (its id's repr tells a
    numeric id from text)."""
    return f"sample {sample.get('id')!r} epoch {sample.get('epoch', 1)}"


def thread_of(
    sample: Mapping[str, Any] | Any, call_tokens: Mapping[str, Any] | None = None,
    model: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """(id, native messages) of a sample, given as Inspect writes it in a ``.json`` log
    (``model_dump`` of an ``EvalSample``) or as the ``EvalSample`` itself, and the output
    tokens of its model calls by message id, read from the sample's ``events`` when not
    given (mapping in the module docstring; ``model`` as for :func:`chat_of`). Raises
    :class:`ValueError` naming the sample and the message on what inspect_ai would not have
    written (see :func:`chat_of`). O(size of the messages and events)."""
    ident, chat = chat_of(sample, call_tokens, model)
    try:
        return ident, from_openai(chat)
    except ValueError as error:  # (its reasons name the message, not the sample)
        fields = sample if isinstance(sample, Mapping) else {
            "id": getattr(sample, "id", None), "epoch": getattr(sample, "epoch", 1)}
        raise ValueError(f"{_sample_name(fields)}: {error}") from error


def chat_of(
    sample: Mapping[str, Any] | Any, call_tokens: Mapping[str, Any] | None = None,
    model: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """(id, OpenAI chat messages, one per message of the sample) of a sample, as Inspect
    writes it in a ``.json`` log or as inspect_ai's own ``EvalSample`` (what ``eval()``
    returns in ``log.samples``): what :func:`thread_of` translates. An assistant message's
    usage is its model call's output tokens (by message id, from ``call_tokens`` or the
    sample's ``events``); a sample with no such call has the output tokens of the model
    that wrote its messages spread over them (``model``: the evaluation's, the log
    header's ``eval.model``; see :func:`_agent_tokens`). Raises :class:`ValueError` naming
    the sample, and the message or event, when its messages are not a list of objects, a
    role is none Inspect writes, a tool call is not an object, a message id is neither text
    nor an integer, or an ``output_tokens`` figure is not a number; :class:`TypeError` for
    a sample that is neither a mapping nor an ``EvalSample``."""
    if not isinstance(sample, Mapping):
        if not hasattr(sample, "model_dump") or not hasattr(sample, "messages"):
            raise TypeError(f"a sample is a mapping (as a .json log writes it) or an "
                            f"inspect_ai EvalSample, got {type(sample).__name__}")
        fields = sample.model_dump(mode="json", include=_SAMPLE_FIELDS, exclude_none=True)
        if call_tokens is None:
            call_tokens = _call_tokens(getattr(sample, "events", None) or [],
                                       _sample_name(fields))
        sample = fields
    named = _sample_name(sample)
    messages = sample.get("messages") or []
    if not isinstance(messages, list):
        raise ValueError(f"{named}: its messages are not a list, but {_kind(messages)}")
    chat = [_chat_message(message, f"{named}: message {index}")
            for index, message in enumerate(messages)]
    ids = [_key(message.get("id"), f"{named}: message {index}: its id")
           for index, message in enumerate(messages)]
    assistants = [i for i, message in enumerate(chat) if message["role"] == "assistant"]
    tokens: Mapping[Any, Any] = (call_tokens if call_tokens is not None
                                 else _call_tokens(sample.get("events") or [], named))
    if any(ids[i] in tokens for i in assistants):
        figures = [tokens.get(ids[i]) for i in assistants]
    else:
        spent = _agent_tokens(sample.get("model_usage"), model,
                              [messages[i].get("model") for i in assistants], named)
        figures = _spread(spent, len(assistants))
    for i, figure in zip(assistants, figures, strict=True):
        if figure is not None:
            chat[i]["usage"] = {"completion_tokens": figure}
    return _thread_id(sample.get("id"), sample.get("epoch", 1)), chat


def _agent_tokens(model_usage: Any, model: str | None, written_by: list[Any], named: str
                  ) -> float | None:
    """The output tokens, from a sample's ``model_usage``, of the model that wrote its
    assistant messages: the evaluation's own ``model`` where the usage lists it; else the
    one model it lists; else those named by the messages' own ``model`` (as written, or
    without the provider a usage key leads with: ``openai/gpt-4o`` for ``gpt-4o``). None
    when no model is told so: a scorer's or a judge's tokens (``model_graded_qa``) are no
    part of the agent's, and a loop's cost is then unknown rather than theirs."""
    if not isinstance(model_usage, Mapping):
        return None
    usages = {name: usage for name, usage in model_usage.items() if isinstance(usage, Mapping)}
    if model is not None and model in usages:
        chosen = [model]
    elif len(usages) == 1:
        chosen = list(usages)
    else:
        written = {name for name in written_by if isinstance(name, str)}
        chosen = [name for name in usages
                  if name in written or str(name).partition("/")[2] in written]
    figures = [_figure(usages[name].get("output_tokens"), f"{named}: model_usage {name!r}")
               for name in chosen]
    counted = [figure for figure in figures if figure is not None]
    return sum(counted) if counted else None


def _spread(total: float | None, count: int) -> list[Any]:
    """``total`` output tokens shared by ``count`` assistant messages, in order: whole
    tokens each (the first ones one more where they do not divide evenly), so that every
    figure is a count and their sum is the total; a total that is no whole number shared
    evenly; None each when there is no total, or it is no positive finite number (a
    negative one would give counts that sum to it, the first of them 0)."""
    if total is None or not count or not 0 < total < math.inf:
        return [None] * count
    if isinstance(total, float) and not total.is_integer():
        return [total / count] * count
    share, over = divmod(int(total), count)
    return [share + (index < over) for index in range(count)]


_ROLES: Final = ("system", "user", "assistant", "tool")
"""The roles of inspect_ai's chat messages."""


def _shown_role(role: Any) -> str:
    """A role as an error names it: text quoted and cut, null as JSON writes it, anything
    else by its kind."""
    return repr(role[:40]) if isinstance(role, str) else "null" if role is None else _kind(role)


def _chat_message(message: Any, where: str) -> dict[str, Any]:
    """An Inspect message as the OpenAI chat message that maps to the same native messages;
    :class:`ValueError` from ``where`` when it, or one of its tool calls, is no object, or
    its role is none Inspect writes (a log's file, read by inspect_ai, is refused so)."""
    if not isinstance(message, Mapping):
        raise ValueError(f"{where} is not an object, but {_kind(message)}")
    role = message.get("role")
    if not (isinstance(role, str) and role in _ROLES):
        shown = _shown_role(role) if "role" in message else "missing"
        raise ValueError(f"{where}: its role is {shown}, not one Inspect writes "
                         f"({', '.join(_ROLES)})")
    content = message.get("content")
    chat: dict[str, Any] = {"role": role, "content": content}
    if isinstance(content, list):
        chat["content"] = [part for part in content
                           if not (isinstance(part, Mapping) and part.get("type") == "reasoning")]
        reasoning = [_reasoning_text(part) for part in content
                     if isinstance(part, Mapping) and part.get("type") == "reasoning"]
        if any(reasoning):
            chat["reasoning_content"] = "\n".join(reasoning)
    calls = message.get("tool_calls")
    if role == "assistant" and calls:
        if not isinstance(calls, list):
            raise ValueError(f"{where}: its tool_calls are not a list, but {_kind(calls)}")
        for index, call in enumerate(calls):
            if not isinstance(call, Mapping):
                raise ValueError(f"{where}: tool call {index} is not an object, but "
                                 f"{_kind(call)}")
        chat["tool_calls"] = [
            {"id": call.get("id"), "type": "function",
             "function": {"name": call.get("function"), "arguments": call.get("arguments", {})}}
            for call in calls]
    elif role == "tool":
        chat["tool_call_id"] = message.get("tool_call_id")
        chat["name"] = message.get("function")
        error = message.get("error")
        if not content and isinstance(error, Mapping):
            chat["content"] = error.get("message", "")
    return chat


def _reasoning_text(part: Mapping[str, Any]) -> str:
    text = part.get("summary") if part.get("redacted") else part.get("reasoning")
    return text if isinstance(text, str) else ""
