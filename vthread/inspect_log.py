"""Inspect AI evaluation logs: each sample of a log one thread of native messages.

Inspect (``inspect_ai``) writes a run of a task as a log, ``.eval`` (a zip archive) or
``.json`` (one JSON document): the evaluation's header and its samples, each sample holding
its conversation (``messages``), its model calls (``events``) and its ``model_usage``. The
log is read with inspect_ai's own reader, so every log version Inspect can read is read,
attachments resolved; inspect_ai is an optional dependency (``pip install 'vthread[inspect]'``),
imported only here and only when a log is read. A ``.eval`` log's samples are read a batch
at a time, and one by one where a batch fails; a ``.json`` log is read whole, or, when Inspect
refuses it whole, each sample as a log of its own. So a sample Inspect cannot read, or one a
``.eval`` log lacks while its header says the evaluation succeeded (and did not stop that
sample early), is an :class:`UnreadableSample` in its place (:func:`read_inspect_samples`)
while the others are still read.

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
message has its ``id``); a sample without such events has its ``model_usage`` output tokens
spread evenly over its assistant messages, so that its total is still right.

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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from vthread.adapters import from_openai

__all__ = ["INSTALL_HINT", "UnreadableSample", "chat_of", "is_inspect_log", "read_inspect_chats",
           "read_inspect_log", "read_inspect_samples", "thread_of"]

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


def read_inspect_log(source: str | Path | IO[bytes]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(id, native messages) of each sample of the Inspect log at ``source``: a path (``.eval``
    or ``.json``), or a binary stream holding a ``.json`` log. Samples are read one at a time
    from a ``.eval`` log (a ``.json`` one is parsed whole). Raises :class:`ImportError` saying
    what to install when inspect_ai is not installed, and :class:`ValueError` naming the
    first sample that cannot be read (:class:`UnreadableSample`), after the samples before
    it; whatever inspect_ai raises on a log whose header it cannot read passes through."""
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


def read_inspect_samples(source: str | Path | IO[bytes]) -> Iterator[_Read]:
    """:func:`read_inspect_chats` that reads on past a sample it cannot read: (id, chat
    messages) of each sample, or an :class:`UnreadableSample` in the place of one
    inspect_ai cannot read (a ``.eval`` member that is no JSON, a sample that does not
    validate), one :func:`chat_of` refuses, or one a ``.eval`` log lacks while its header
    says the evaluation succeeded and did not stop it early (an interrupted evaluation's
    missing samples are not yielded: it never ran them; a ``.json`` log's samples are
    those its document holds). Raises as :func:`read_inspect_log` does when the log itself
    (its header) cannot be read, and on an error of the file or the installation (OSError,
    ImportError). O(size of the log); a ``.eval`` log's samples are held up to 64 or 16 MB
    of their JSON at a time, a ``.json`` log whole."""
    try:
        import inspect_ai.log  # noqa: F401  (the error that says what to install, first)
    except ImportError as error:
        raise ImportError(f"reading an Inspect AI log needs inspect_ai: {INSTALL_HINT}") from error
    if isinstance(source, (str, Path)) and str(source).lower().endswith(EVAL_SUFFIX):
        yield from _eval_samples(source)
    elif isinstance(source, (str, Path)):
        yield from _json_samples(Path(source).read_bytes())
    else:
        yield from _json_samples(source.read())


def _eval_samples(path: str | Path) -> Iterator[_Read]:
    """The samples of a ``.eval`` log, in the order of its header's sample ids and epochs
    (as :func:`inspect_ai.log.read_eval_log_samples` reads them), in batches
    (:func:`_batches`: one reading of the archive's directory for each; read one at a time,
    each read it again, and 2,000 samples took 8.1 CPU s against 0.75), a batch that fails
    read again one sample at a time so that each bad one is named."""
    from inspect_ai.log import read_eval_log

    header = read_eval_log(path, header_only=True)
    sample_ids = header.eval.dataset.sample_ids
    if sample_ids is None:
        raise ValueError("the log's header lists no sample ids (reading the log whole and "
                         "writing it again with inspect_ai adds them)")
    # A finished evaluation holds every sample its header lists but those it stopped early;
    # an interrupted one (status "started", "error", "cancelled") or one with invalidated
    # samples, only those it ran.
    complete = header.status == "success" and not header.invalidated
    # (getattr: an inspect_ai before early stopping has no such field)
    early = getattr(header.results, "early_stopping", None)
    stopped = {(str(stop.id), stop.epoch) for stop in getattr(early, "early_stops", None) or []}
    wanted = [(sample_id, epoch) for sample_id in sample_ids
              for epoch in range(1, (header.eval.config.epochs or 1) + 1)]
    for batch in _batches(path, wanted):
        samples = _eval_batch(path, batch)
        for (sample_id, epoch), sample in zip(batch, samples, strict=True):
            if isinstance(sample, _Missing):
                if complete and (str(sample_id), epoch) not in stopped:
                    named = _sample_name({"id": sample_id, "epoch": epoch})
                    yield UnreadableSample(_thread_id(sample_id, epoch), f"{named} is missing from "
                                           "the log, whose header says the evaluation "
                                           "succeeded")
                continue
            yield sample if isinstance(sample, UnreadableSample) else _chat_or_why(sample)


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


def _eval_batch(path: str | Path, batch: list[tuple[Any, int]]) -> list[Any]:
    """The samples ``batch`` names ((id, epoch) each) of the ``.eval`` log at ``path``, in
    its order: inspect_ai's sample, a :class:`_Missing`, or an :class:`UnreadableSample`
    saying why. An error of the file or the installation (OSError, ImportError) is the
    log's, not a sample's, and passes through."""
    import inspect_ai.log as inspect_log

    together = getattr(inspect_log, "read_eval_log_samples_by_id", None)  # (0.3.130 on)
    if together is not None:
        try:
            return list(together(path, batch, concurrency=1, resolve_attachments=True))
        except (OSError, ImportError, MemoryError):
            raise
        except Exception:  # a sample in it that cannot be read, or is missing: one at a time
            pass
    found: list[Any] = []
    for sample_id, epoch in batch:
        try:
            found.append(inspect_log.read_eval_log_sample(path, id=sample_id, epoch=epoch,
                                                          resolve_attachments=True))
        except IndexError:  # (inspect_ai's answer for a sample the log does not hold)
            found.append(_Missing())
        except (OSError, ImportError, MemoryError):
            raise
        except Exception as error:  # whatever inspect_ai raises on the sample's member
            named = _sample_name({"id": sample_id, "epoch": epoch})
            found.append(UnreadableSample(_thread_id(sample_id, epoch),
                                          f"{named} cannot be read: {_problem(error)}"))
    return found


def _json_samples(data: bytes) -> Iterator[_Read]:
    """The samples of a ``.json`` log, in the document's order: read whole by inspect_ai
    when it can; else (inspect_ai validates a document whole, so that one invalid sample
    loses them all) :func:`_json_samples_alone`."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(io.BytesIO(data), resolve_attachments=True, format="json")
    except (OSError, ImportError, MemoryError):  # (the file's or the installation's)
        raise
    except Exception:  # (said by the sample, or the header, it is about)
        yield from _json_samples_alone(data)
        return
    for sample in log.samples or []:
        yield _chat_or_why(sample)


def _json_samples_alone(data: bytes) -> Iterator[_Read]:
    """The samples of a ``.json`` log inspect_ai cannot read whole, in the document's
    order: the header is read first as a log without samples, then each sample as a log of
    its own with the least of that header inspect_ai needs (its reading, attachments
    resolved, ids kept as written; each sample's JSON written again, O(size of the sample),
    about a third more time than reading the log whole). The header's list of sample ids
    and its results, O(samples) each, are left out of the samples' logs."""
    from inspect_ai.log import read_eval_log
    from pydantic_core import from_json

    document = from_json(data)  # (as inspect_ai parses a log: NaN and Infinity allowed)
    if not isinstance(document, dict):
        raise ValueError(f"the log is not a JSON object, but {_kind(document)}")
    samples = document.pop("samples", None) or []
    read_eval_log(io.BytesIO(json.dumps(document).encode()), format="json")  # its header
    if not isinstance(samples, list):
        raise ValueError(f"the log's samples are not a list, but {_kind(samples)}")
    spec = document["eval"]  # (an object naming a dataset: the header was read)
    header = {"version": document.get("version", 2),
              "eval": {**spec, "dataset": {**spec["dataset"], "sample_ids": None}}}
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
            continue
        (sample,) = log.samples or []
        yield _chat_or_why(sample)


def _chat_or_why(sample: Any) -> _Read:
    """(id, chat messages) of a sample read by inspect_ai, or why :func:`chat_of` refuses
    it."""
    fields = sample.model_dump(mode="json", include=_SAMPLE_FIELDS, exclude_none=True)
    try:
        return chat_of(fields, _call_tokens(sample.events, _sample_name(fields)))
    except ValueError as error:
        return UnreadableSample(_thread_id(fields.get("id"), fields.get("epoch", 1)), str(error))


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


def _sample_name(sample: Mapping[str, Any]) -> str:
    """How an error names a sample: ``sample 'stuck' epoch 1`` (its id's repr tells a
    numeric id from text)."""
    return f"sample {sample.get('id')!r} epoch {sample.get('epoch', 1)}"


def thread_of(
    sample: Mapping[str, Any], call_tokens: Mapping[str, Any] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """(id, native messages) of a sample, given as Inspect writes it in a ``.json`` log
    (``model_dump`` of an ``EvalSample``), and the output tokens of its model calls by
    message id, read from the sample's ``events`` when not given (mapping in the module
    docstring). Raises :class:`ValueError` naming the sample and the message on what
    inspect_ai would not have written (see :func:`chat_of`). O(size of the messages and
    events)."""
    ident, chat = chat_of(sample, call_tokens)
    try:
        return ident, from_openai(chat)
    except ValueError as error:  # (its reasons name the message, not the sample)
        raise ValueError(f"{_sample_name(sample)}: {error}") from error


def chat_of(
    sample: Mapping[str, Any], call_tokens: Mapping[str, Any] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """(id, OpenAI chat messages, one per message of the sample) of a sample: what
    :func:`thread_of` translates. Raises :class:`ValueError` naming the sample, and the
    message or event, when its messages are not a list of objects, a tool call is not an
    object, a message id is neither text nor an integer, or an ``output_tokens`` figure is
    not a number."""
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
    if not any(ids[i] in tokens for i in assistants):
        tokens = _spread(sample.get("model_usage"), [ids[i] for i in assistants], named)
    for i in assistants:
        figure = tokens.get(ids[i])
        if figure is not None:
            chat[i]["usage"] = {"completion_tokens": figure}
    return _thread_id(sample.get("id"), sample.get("epoch", 1)), chat


def _spread(model_usage: Any, assistant_ids: list[str | int | None], named: str
            ) -> dict[Any, Any]:
    """The sample's output tokens shared evenly by its assistant messages, by message id."""
    if not isinstance(model_usage, Mapping) or not assistant_ids:
        return {}
    total = sum(_figure(usage.get("output_tokens"), f"{named}: model_usage {model!r}") or 0
                for model, usage in model_usage.items() if isinstance(usage, Mapping))
    return {ident: total / len(assistant_ids) for ident in assistant_ids} if total else {}


def _chat_message(message: Any, where: str) -> dict[str, Any]:
    """An Inspect message as the OpenAI chat message that maps to the same native messages;
    :class:`ValueError` from ``where`` when it, or one of its tool calls, is no object."""
    if not isinstance(message, Mapping):
        raise ValueError(f"{where} is not an object, but {_kind(message)}")
    role = message.get("role")
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
