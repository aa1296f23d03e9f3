"""Recorded runs: where each harness keeps a run's messages and its id.

A JSONL line or a whole JSON document holds runs in one of three shapes: a list of messages
(one run), an object holding one run, or a list of such objects. Harnesses name the parts
differently, and these functions find them:

===============================  =====================  ====================================
harness                          messages               id
===============================  =====================  ====================================
vthread, most JSONL exports      ``messages``           ``id``
tau-bench (``.json``)            ``traj``               ``task_id`` and ``trial``, written
                                                        ``"<task_id>/<trial>"``
SWE-agent (``.traj``)            ``history``            none in the file (``vthread scan``
                                                        names it by its file)
mini-swe-agent (``.traj.json``)  ``messages``           ``instance_id``
===============================  =====================  ====================================

:func:`run_format` reads the format a run declares (mini-swe-agent's ``trajectory_format``).

The first key of :data:`MESSAGES_KEYS` an object holds is its messages; ``messages_key``
names another (and then only that one is looked at), for formats not listed. The id is
``id_key``'s value when given, else the first of ``id``, ``instance_id``, ``task_id`` (with
``trial`` when present and not null, each part as JSON writes it) the object
holds, else None.

>>> run = {"task_id": 3, "trial": 1, "traj": [{"role": "user", "content": "hi"}]}
>>> run_messages(run), run_id(run)
([{'role': 'user', 'content': 'hi'}], '3/1')
"""

from __future__ import annotations

import json
import math
import re
import reprlib
import shlex
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Final

from vthread._heuristics import RESULT_RUN, SUFFIX
from vthread._jsvalue import canonical, is_string
from vthread._langchain import langchain_object_hint
from vthread._messages import MESSAGES_KEYS, check_messages, ndarray_hint
from vthread._options import say_warning
from vthread.adapters import (
    OPENAI_KEYS,
    OPENAI_ONLY_ROLES,
    POSITIONS_SHOWN,
    RESPONSES_MARKS,
    another_library_s,
    json_type,
    langchain_s,
    positions_named,
)

if TYPE_CHECKING:
    from vthread import _core
    from vthread.scan import ScanResult

__all__ = [
    "ANOTHER_LIBRARY",
    "BLANK_CELL",
    "DECLARED_COLUMN",
    "DOCUMENT_SUFFIXES",
    "MESSAGES_KEYS",
    "PASS_A_FORMAT",
    "RUNS_FOR_MESSAGES",
    "TOO_DEEP",
    "NotAThreadError",
    "chat_like",
    "checked_format",
    "evidence_of",
    "first_chat_like",
    "first_settling",
    "holds_run_messages",
    "in_source_messages",
    "judged_until_settled",
    "line_format_evidence",
    "messages_column",
    "misfit_kind",
    "misfit_lines",
    "misfit_phrase",
    "misfits",
    "misread_as_native",
    "native_messages",
    "native_misfit",
    "native_threads",
    "not_an_array",
    "opens_runs",
    "read_cell",
    "read_run",
    "recounted_spans",
    "run_format",
    "run_format_evidence",
    "run_id",
    "run_messages",
    "runs_for_messages",
    "runs_given_for_messages",
    "runs_of",
    "settled_format",
    "settled_warning",
    "settles",
    "tally_misfits",
    "thread_format",
    "translated_span",
    "unread_reason",
    "warn_if_chat",
    "why_no_format",
    "with_declaration",
]

DOCUMENT_SUFFIXES: Final = (".json", ".traj")
"""File name endings (before an optional ``.gz``) of files holding one JSON document."""
_ID_KEYS: Final = ("id", "instance_id")
_ABSENT: Final = object()


def messages_column(names: Sequence[str], messages_key: str | None, where: str,
                    naming: str) -> str:
    """The column of a table with columns ``names`` holding its runs: ``messages_key`` when
    given, else the first of :data:`MESSAGES_KEYS` there is (a published dataset of
    SWE-agent runs keeps them in ``history``). A ValueError naming the columns there are
    otherwise; ``where`` is what holds them ("the file", "the table"), ``naming`` how the
    caller names another column ("--messages-key", "messages=").

    >>> messages_column(["instance_id", "history"], None, "the table", "messages=")
    'history'
    """
    if messages_key is not None:
        if not is_string(messages_key):
            raise TypeError(f"column names are strings, got {type(messages_key).__name__}")
        if messages_key not in names:
            raise ValueError(f"no column {messages_key!r}; {where} has {', '.join(names)}")
        return one_column(names, messages_key, where)
    for key in MESSAGES_KEYS:
        if key in names:
            return one_column(names, key, where)
    raise ValueError(f"no messages column ({', '.join(MESSAGES_KEYS)}); {where} has "
                     f"{', '.join(names)}; name it with {naming}")


def one_column(names: Sequence[str], name: str, where: str) -> str:
    """``name``, a column of ``where`` read by name: a ValueError when two columns have it
    (which one to read cannot be told; pyarrow raised a KeyError deep in the reading)."""
    count = list(names).count(name)
    if count > 1:
        raise ValueError(f"{where} has {count} columns named {name!r}: which to read cannot "
                         "be told (rename one)")
    return name


def _messages_keys(messages_key: str | None) -> tuple[str, ...]:
    """The keys a run may hold its messages under: the one given, else the known ones."""
    return (messages_key,) if messages_key is not None else MESSAGES_KEYS


def run_messages(run: Mapping[str, Any], messages_key: str | None = None) -> Any:
    """The value holding ``run``'s messages, or :data:`None` when it holds none of the keys.

    >>> run_messages({"history": []}), run_messages({"history": []}, "steps")
    ([], None)
    """
    keys = _messages_keys(messages_key)
    for key in keys:
        value = run.get(key, _ABSENT)
        if value is not _ABSENT:
            return value
    return None


def holds_run_messages(run: Mapping[str, Any], messages_key: str | None = None) -> bool:
    """Whether ``run`` has a key its messages may be under, whatever it holds there (a run
    whose ``"messages"`` is null is a run, and no thread: :func:`run_messages` gives None
    for it as for a mapping without the keys).

    >>> holds_run_messages({"messages": None}), holds_run_messages({"steps": []})
    (True, False)
    """
    return any(key in run for key in _messages_keys(messages_key))


def run_id(run: Mapping[str, Any], id_key: str | None = None) -> Any:
    """``run``'s id: ``id_key``'s value, else the first known id key's, else None.

    >>> run_id({"instance_id": "astropy-12907"}), run_id({"id": 7}, "name")
    ('astropy-12907', None)
    """
    if id_key is not None:
        return run.get(id_key)
    for key in _ID_KEYS:
        if key in run:
            return run[key]
    if "task_id" in run:
        task, trial = run["task_id"], run.get("trial")
        return task if trial is None else f"{_id_part(task)}/{_id_part(trial)}"
    return None


def _id_part(value: Any) -> str:
    """A part of a joined id as the file wrote it: a string's text, an integer's digits (all
    of them: ``9007199254740993``, which a double would round), a number with a fraction or
    an exponent as JavaScript writes it (``1`` for ``1.0``, ``10000000000000000`` for
    ``1e16``, ``1e-7``), anything else its JSON text in JavaScript's form (``true``,
    ``null``), where Python's ``str()`` wrote ``True``, ``None`` and ``1.0``: ids the file
    does not hold. (An integer of more digits than Python converts is read as the infinity
    ``JSON.parse`` reads, written ``null``.)"""
    if is_string(value):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return int.__repr__(value)
        except ValueError:  # more digits than Python converts
            return canonical(value)
    if type(value) is float and math.isfinite(value):
        return js_number_text(value)
    return canonical(value)


def js_number_text(value: float) -> str:
    """A finite double as JavaScript's ``String(value)`` writes it: the shortest digits that
    read back as it, in plain notation from 1e-6 up to 1e21, in exponent notation outside.

    >>> [js_number_text(x) for x in (1.0, 1e16, 1e21, 1e-6, 1e-7, -1.5, 123.25e-9)]
    ['1', '10000000000000000', '1e+21', '0.000001', '1e-7', '-1.5', '1.2325e-7']
    """
    if value == 0:
        return "0"
    if value < 0:
        return "-" + js_number_text(-value)
    _, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)  # (a finite value's)
    written = "".join(map(str, digit_tuple))
    point = len(written) + exponent  # the value is 0.<digits> times 10 to this
    digits = written.strip("0")
    point -= len(written) - len(written.lstrip("0"))
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    mantissa = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{mantissa}e{'+' if point > 0 else '-'}{abs(point - 1)}"


DECLARED_COLUMN: Final = "trajectory_format"
"""The key of a run's declared format, as mini-swe-agent's run objects hold it; a table's
column of that name declares each row's format (:func:`with_declaration`)."""


def with_declaration(messages: Any, declared: Any) -> Any:
    """A table row's messages cell (parsed) as the run object ``vthread scan X.parquet``
    reads for it when the table has a :data:`DECLARED_COLUMN` (``declared``: that row's
    value): an array of messages with a string beside it is read as a run declaring it
    (:func:`run_format`); anything else stays as it is (a run object cell declares its own
    format; a cell that is no array has no messages to declare a format of).

    >>> with_declaration([], "mini-swe-agent-1")
    {'trajectory_format': 'mini-swe-agent-1', 'messages': []}
    >>> with_declaration({"messages": []}, "mini-swe-agent-1")
    {'messages': []}
    """
    if type(messages) is not list or not isinstance(declared, str):
        return messages
    return {DECLARED_COLUMN: declared, "messages": messages}


def run_format(run: Mapping[str, Any]) -> str | None:
    """The message format a run declares, or None: mini-swe-agent writes
    ``"trajectory_format": "mini-swe-agent-1"``, whose tool calls are text that the messages
    alone do not tell from a chat.

    >>> run_format({"trajectory_format": "mini-swe-agent-1"}), run_format({"messages": []})
    ('mini-swe-agent', None)
    """
    declared = run.get(DECLARED_COLUMN)
    if is_string(declared) and declared.startswith("mini-swe-agent"):
        return "mini-swe-agent"
    return None


def run_reading_format(value: Any, messages: Sequence[Any], format_: str) -> str:
    """The format a run (``value``, a run object or its list of ``messages``) of a batch
    whose chat format ``format_`` was detected, not given, is read in: mini-swe-agent's for a
    run object declaring itself one (:func:`declares_mini_swe_agent`), SWE-agent's for a run
    whose messages show SWE-agent's format by an assistant turn's ``action``
    (:func:`vthread.adapters.shows_swe_agent_actions`), wherever it lies in the batch (read
    as OpenAI chat its commands were text and its loop went unseen); ``format_`` otherwise.
    The twin of the core's ``adapters::run_reading_format``.

    >>> run_reading_format([], [{"role": "assistant", "content": "ls", "action": "ls"}],
    ...                    "openai")
    'swe-agent'
    """
    from vthread.adapters import shows_swe_agent_actions

    if declares_mini_swe_agent(value):
        return "mini-swe-agent"
    if format_ != "swe-agent" and shows_swe_agent_actions(messages):
        return "swe-agent"
    return format_


def declares_mini_swe_agent(value: Any) -> bool:
    """Whether ``value`` is a run object declaring itself a mini-swe-agent run
    (:func:`run_format`); the twin of the core's ``adapters::declares_mini_swe_agent``."""
    return isinstance(value, Mapping) and run_format(value) == "mini-swe-agent"


def runs_of(document: Any, messages_key: str | None = None) -> list[Any]:
    """The runs a JSON document holds, each an object or a list of messages.

    A list is a list of runs when its first item opens one (:func:`opens_runs`), else the
    messages of one run; any other value is one run. O(1) besides the list copy.

    >>> runs_of([{"traj": []}, {"traj": []}]), runs_of([{"role": "user"}])
    ([{'traj': []}, {'traj': []}], [[{'role': 'user'}]])
    """
    if isinstance(document, list) and (not document or opens_runs(document[0], messages_key)):
        return list(document)
    return [document]


def opens_runs(first: Any, messages_key: str | None = None) -> bool:
    """Whether a list whose first item is ``first`` is a list of runs rather than one run's
    messages: ``first`` is a list (a run's bare messages, as no message is a list), a string,
    number, boolean or null (no message of any format is one, so the list is no run's
    messages either way: read as runs, the runs after it keep their records), or an object
    holding one of :data:`MESSAGES_KEYS` (``messages_key``, when given) whatever it holds
    there, or an object that is no message of any format (none of ``role``, ``type``,
    ``text``, ``content``). The runs that hold no messages are then error records, as JSONL
    lines are.

    >>> opens_runs({"steps": []}, "steps"), opens_runs({"id": 1}), opens_runs([]), opens_runs(5)
    (True, True, True, True)
    >>> opens_runs({"messages": None}), opens_runs({"text": "hi"}), opens_runs({"role": "user"})
    (True, False, False)
    """
    if not isinstance(first, Mapping):
        return True
    keys = _messages_keys(messages_key)
    return any(key in first for key in keys) or not any(key in first for key in _MESSAGE_KEYS)


_MESSAGE_KEYS: Final = ("role", "type", "text", "content")
"""Keys that make an object a message in some format (a native message may lack its type)."""


def read_run(
    value: Any, format_: str, messages_key: str | None = None, id_key: str | None = None,
    declared_wins: bool = False, read_as_own: dict[str, int] | None = None,
) -> tuple[Any, list[dict[str, Any]], list[int] | None] | str:
    """(id, native messages, the source message of each or None when ``value`` is native)
    of one parsed run (a list of messages or an object holding them), or why it is not one.
    With ``declared_wins`` (``format_`` is a chat format detected, not given), the run is
    read in :func:`run_reading_format`'s format: a run object declaring itself a
    mini-swe-agent run as one, a run showing SWE-agent's actions as SWE-agent's (the chat
    format of a batch's other runs would read their text actions as text); such a run read,
    its format is counted in ``read_as_own`` when given.

    >>> read_run({"id": "r1", "messages": [{"type": "user", "text": "hi"}]}, "native")
    ('r1', [{'type': 'user', 'text': 'hi'}], None)
    >>> read_run(7, "native")
    'not a thread: a number, not an array of messages or an object with "messages"'
    """
    kind = type(value)
    if kind is list:
        ident, messages = None, value
    elif kind is dict:
        keys = _messages_keys(messages_key)
        key = next((k for k in keys if k in value), None)
        if key is None:
            from vthread.inspect_log import bookkeeping_of

            if (bookkeeping := bookkeeping_of(value)) is not None:
                # (eval-set.json named beside the logs was said to hold "a run" under tasks)
                return (f"not a thread: it is {bookkeeping}, not runs (a scan of their "
                        f"directory passes it over)")
            return (f"not a thread: an object without {_key_list(keys)}"
                    f"{_held_arrays(value, messages_key)}")
        ident, messages = run_id(value, id_key), value[key]
        if type(messages) is not list:
            return not_an_array(key, messages)
    else:
        return (f'not a thread: {json_type(value)}, not an array of messages or an object '
                f'with "messages"')
    if format_ != "native":
        from vthread.adapters import to_native_with_sources

        read_as = run_reading_format(value, messages, format_) if declared_wins else format_
        try:
            found = (ident, *to_native_with_sources(messages, read_as))  # type: ignore[arg-type]
        except ValueError as error:
            return f"{read_as} format: {error}"
        if read_as != format_ and read_as_own is not None:
            read_as_own[read_as] = read_as_own.get(read_as, 0) + 1
        return found
    if messages and set(map(type, messages)) != {dict}:
        index = next(i for i, m in enumerate(messages) if type(m) is not dict)
        return (f"message {index} is not an object ({json_type(messages[index])})"
                f"{langchain_object_hint(messages[index])}")
    return ident, messages, None


TOO_DEEP: Final = "nested too deeply to read"
"""How the reason for a text Python's json gave up on for its depth alone begins."""


def unread_reason(text: bytes, error: ValueError | RecursionError, text_name: str = "line"
                  ) -> str:
    """Why ``text`` is no JSON, from the ``error`` ``json.loads(text)`` raised: one wording
    wherever such text is read, ``text_name`` saying what the text is (``"line"`` of JSONL,
    ``"cell"`` of a table's messages column, ``"document"``) where a place in it is named.
    O(1).

    >>> unread_reason(b"[1,,", ValueError("Expecting value: line 1 column 4 (char 3)"))
    'not valid JSON: Expecting value: line 1 column 4 (char 3)'
    >>> unread_reason(b"[\\x00\\x00\\x00", ValueError("..."), "cell")[:52]
    'not valid JSON: a NUL byte at byte 2 of the cell, wh'

    JSON that ends before its value does (a file cut short, or still being written) says so:

    >>> try:
    ...     json.loads(b'{"id": 1, "messages": [')
    ... except ValueError as error:
    ...     unread_reason(b'{"id": 1, "messages": [', error)
    'not valid JSON: Expecting value: line 1 column 24 (char 23) (it ends inside its value: \
cut short?)'

    A line that only opens a value is a pretty-printed value's first line:

    >>> try:
    ...     json.loads(b"{")
    ... except ValueError as error:
    ...     unread_reason(b"{", error)[-70:]
    'several lines? JSONL holds each value on one line, as jq -c writes it)'
    """
    if isinstance(error, RecursionError):
        # Valid JSON, perhaps: nested past what Python's json reads.
        return f"{TOO_DEEP} ({error})"
    if 0 in text[:4] and not json.detect_encoding(text).startswith("utf-8"):
        # json.loads takes a NUL among the first bytes for UTF-16 or UTF-32 text, and its
        # message then speaks of a codec or of the garbled text: say what is there.
        return (f"not valid JSON: a NUL byte at byte {text.index(0) + 1} of the {text_name}, "
                f"which json reads as UTF-16 or UTF-32 text ({error})")
    if ends_inside_a_value(error):
        opening = text.removeprefix(b"\xef\xbb\xbf").strip(b" \t\r\n")
        if text_name == "line" and opening in (b"{", b"["):
            # A value pretty-printed over lines (`cat run.json >> runs.jsonl`): its first
            # line opens it alone, which no writer cut short at a random byte leaves.
            return (f"not valid JSON: {error} (a lone {opening.decode()!r} on its line: a "
                    "value pretty-printed over several lines? JSONL holds each value on one "
                    "line, as jq -c writes it)")
        return f"not valid JSON: {error} (it ends inside its value: cut short?)"
    if isinstance(error, json.JSONDecodeError) and error.msg == "Extra data":
        before = error.doc[:error.pos]
        if "\r" in before[len(before.rstrip(" \t\r")):]:
            # Runs one after another with a carriage return alone between them: a file
            # whose lines end in \r alone (old Mac line ends) is one line of JSONL.
            return (f"not valid JSON: {error} (a carriage return alone ends a value before "
                    "it: do the file's lines end in \\r alone? JSONL lines end in \\n)")
        if (text_name == "line" and error.doc[error.pos:error.pos + 1] in ("{", "[")
                and error.doc.lstrip(" \t\r\n\ufeff")[:1] in ("{", "[")):
            # Two runs on one line: `cat a.jsonl b.jsonl` where a.jsonl's last line had no
            # newline joins it to b.jsonl's first. (A run after a number or a string is a
            # prefix written before it, as `cat -n` or a log's timestamp, not a join.)
            return (f"not valid JSON: {error} (a second value begins there: two lines "
                    "joined, as cat joins a file whose last line has no newline to the "
                    "next? JSONL holds one value a line)")
    return f"not valid JSON: {error}"


def ends_inside_a_value(error: ValueError) -> bool:
    """Whether ``json`` gave up on an object or array that was still open where the text
    ended (or on a string never closed, or a literal, number or escape the text ends
    inside: ``tru``, ``-``, ``1.``, ``\\u00``): JSON cut short, not JSON written wrong.

    >>> def cut(text):
    ...     try:
    ...         json.loads(text)
    ...     except ValueError as error:
    ...         return ends_inside_a_value(error)
    >>> cut('{"done": fals'), cut('[1e+'), cut('["\\\\u00'), cut('{"done": flase}')
    (True, True, True, False)
    >>> cut('[1 .'), cut('{"a": 1 e'), cut('["a" .')  # written wrong, not cut
    (False, False, False)
    """
    if not isinstance(error, json.JSONDecodeError):
        return False
    text = error.doc.rstrip(" \t\r\n")
    if not text.lstrip(" \t\r\n\ufeff").startswith(("{", "[")):
        return False
    if error.pos >= len(text) or error.msg == "Unterminated string starting at":
        return True
    # json names the place the cut token starts at (a number's, after its digits): the text
    # from there on is then only the start of one.
    pattern = _CUT_TOKENS.get(error.msg)
    if pattern is None or pattern.fullmatch(text, error.pos) is None:
        return False
    # (a fraction or an exponent is cut only right after a number's digits: `[1 .` is wrong)
    return error.msg != "Expecting ',' delimiter" or text[error.pos - 1] in "0123456789"


_CUT_TOKENS: Final = {
    "Expecting value": re.compile(r"-|t(?:r(?:u)?)?|f(?:a(?:l(?:s)?)?)?|n(?:u(?:l)?)?"),
    "Expecting ',' delimiter": re.compile(r"\.|[eE][+-]?"),  # a number's fraction or exponent
    "Invalid \\uXXXX escape": re.compile(r"u[0-9a-fA-F]{0,3}"),
}
"""By ``json``'s message, what the text from the place it names to its end is when it ends
inside a token: a literal, a number after its sign, point or exponent mark, an escape."""


def not_an_array(key: str, messages: Any) -> str:
    """Why a run object whose ``key`` holds ``messages``, not an array, is no run.

    >>> not_an_array("messages", None)
    'not a thread: "messages" is a null, not an array'
    """
    return f'not a thread: "{key}" is {json_type(messages)}, not an array'


BLANK_CELL: Final = "blank cell: the row's messages are empty text"
"""Why a table's row (Parquet, Arrow) whose messages cell is empty or blank text is no run."""


def read_cell(
    value: Any, format_: str, declared_wins: bool = False,
) -> tuple[Any, list[dict[str, Any]], list[int] | None] | str:
    """:func:`read_run` of the value of a table's messages cell (None for a null cell), or
    why it is no run, worded as ``vthread scan X.parquet`` words it and ``vthread.scan_arrow``
    after it: the command reads each row as the line ``{"id": ..., "messages": cell}`` (a
    run object cell as itself), so a cell that is neither an array nor an object (a null
    cell among them) is named as that line's ``"messages"``; ``declared_wins`` as
    :func:`read_run` takes it. O(the run's messages).

    >>> read_cell(42, "native")
    'not a thread: "messages" is a number, not an array'
    """
    if runs_for_messages(value):
        # A batch of runs in one cell: an error, as vthread scan's record of such a row (read
        # as native, its runs were one run's alike messages, a false loop or none).
        return runs_given_for_messages("a row of its own")
    if type(value) is list or type(value) is dict:
        return read_run(value, format_, declared_wins=declared_wins)
    return not_an_array("messages", value)


def _held_arrays(run: Mapping[str, Any], messages_key: str | None) -> str:
    """What an object with no messages holds that may be runs or messages, as a hint: the
    first of its keys whose value is an array opening with an object, and how to read it:
    runs (objects holding messages under ``messages_key`` or a known key, or no message of
    any format: :func:`opens_runs`) as JSONL of them, which ``jq`` writes; messages by
    ``--messages-key``. An object whose every member (three or more) is a thread (its first
    message with a ``role``, ``text`` or ``content``), or every one a run object, is runs
    keyed by their ids: ``jq`` writes them a line each with their
    keys as ids (naming one member's key as the messages read one run of them all)."""
    keyed = _runs_keyed_by_id(run, messages_key)
    if keyed:
        return keyed
    for key, value in run.items():
        if type(value) is list and value and type(value[0]) is dict and type(key) is str:
            quoted = json.dumps(key)
            inner = value[0]
            count = len(value)
            objects = f"{count:,} object{'' if count == 1 else 's'}"
            if opens_runs(inner, messages_key):
                path = f".{key}" if key.isidentifier() and key.isascii() else f".[{quoted}]"
                may_be = "a run" if count == 1 else "runs"
                return (f"; it holds an array {quoted} of {objects} that may be {may_be}: "
                        f"`jq -c {shlex.quote(path + '[]')}` writes them a line each")
            return (f"; it holds an array {quoted} of {objects}: if they are its messages, "
                    f"give --messages-key {shlex.quote(key)}")
    return ""


def _runs_keyed_by_id(run: Mapping[str, Any], messages_key: str | None) -> str:
    """The hint of :func:`_held_arrays` for an object of runs keyed by their ids, "" when
    it is none."""
    # (three or more, each plainly a thread or a run: a run's own members, its "tools" and
    # "conversation", or a trace's "inputs" and "outputs", are no runs keyed by id)
    if len(run) < 3 or not all(type(key) is str for key in run):
        return ""
    values = list(run.values())
    if all(type(value) is list and value and type(value[0]) is dict
           and any(key in value[0] for key in ("role", "text", "content")) for value in values):
        program = "to_entries[] | {id: .key, messages: .value}"
        what = "a thread (a list of messages)"
    elif all(type(value) is dict and run_messages(value, messages_key) is not None
             for value in values):
        program = "to_entries[] | {id: .key} + .value"
        what = "a run"
    else:
        return ""
    keys = list(run)
    first = ", ".join(json.dumps(key) for key in keys[:2])
    hint = (f"; its {len(run):,} members ({first}{', ...' if len(run) > 2 else ''}) are each "
            f"{what}, keyed by its id: `jq -c {shlex.quote(program)}` writes them a run a line")
    if what.startswith("a thread"):
        hint += (" (or, if one member holds the run's messages, give --messages-key "
                 f"{shlex.quote(keys[0])})")
    return hint


def _key_list(keys: tuple[str, ...]) -> str:
    quoted = [json.dumps(key) for key in keys]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


DETECT_THREADS: Final = 64
"""Most threads with messages that ``format="auto"`` judges the batch's format by, when one of
them shows its format (:func:`first_settling` looks further when they are all plain chats)."""

CHAT_FORMATS: Final = frozenset({"openai", "anthropic", "responses", "mini-swe-agent",
                                 "swe-agent"})
"""The formats a plain chat (roles and text only) fits: a thread decisively in one of them
settles the format of a batch whose first threads were all plain chats."""


def native_threads(threads: Sequence[Any], format_: str, *, one: bool = False
                   ) -> tuple[Sequence[Any], list[list[int] | None] | None]:
    """``threads``, each the messages of one run in ``format_`` or a run object holding them
    (as a JSONL line holds one: ``{"messages": [...]}``, a ``traj`` or ``history``, a declared
    ``trajectory_format``), as native threads, with the source message of each native
    message (for :func:`in_source_messages`; None for a thread read as it is). ``format_`` is
    one of :data:`vthread.adapters.FORMATS`, or ``"auto"``: the format the first
    :data:`DETECT_THREADS` threads with messages agree on, as ``vthread scan`` detects a
    file's (a mini-swe-agent run is known by its run object's ``trajectory_format``), or
    when they are all plain chats, that of the first further on to show one; a run object
    declaring itself a mini-swe-agent run in a batch found in another chat format is read
    as one, and a run showing SWE-agent's actions as SWE-agent's (:func:`run_reading_format`),
    as a given format is not overruled. Native
    lists of messages are returned as they are, with None for all. A thread that cannot be
    read in the format, or a batch whose format cannot be told, is a ``ValueError`` naming
    the thread; what the caller's own value raises as it is read gets a note naming the
    thread (the messages, with ``one``: a batch of the one thread a caller passed).
    O(total messages).

    >>> native_threads([[{"role": "user", "content": "hi"}]], "auto")
    ([[{'type': 'user', 'text': 'hi'}]], [[0]])
    """
    from vthread.adapters import MessageTypeError, to_native_with_sources

    detected = checked_format(format_) == "auto"
    if detected:
        # The threads detection reads, as they are at the call: a message that is no exact
        # dict runs the caller's code when read, which may change the thread under it.
        threads = [held(thread) if index < DETECT_THREADS else thread
                   for index, thread in enumerate(threads)]
        reading = [0]
        try:
            format_ = _batch_format(threads, reading)
        except Exception as error:  # (as below, for the caller's own value raising)
            read = "the messages" if one else f"thread {reading[0]}"
            _note_unnamed(error, f"while telling the format of {read} (format=\"auto\")")
            raise
    if format_ == "native" and not any(isinstance(t, Mapping) for t in threads):
        return threads, None
    native: list[Any] = []
    sources: list[list[int] | None] = []
    index = 0
    try:
        for index, thread in enumerate(threads):
            if isinstance(thread, Mapping):
                # (a detected chat format yields to a run's own declaration; a given one not)
                found = read_run(_as_parsed_run(thread), format_, declared_wins=detected)
                if is_string(found):
                    if format_ == "native":
                        # The list threads before it are checked by the core, later: the first
                        # bad thread is named, not this one.
                        earlier = first_thread_error(threads[:index])
                        if earlier is not None:
                            raise earlier
                    raise _unreadable_run(index, thread, found, format_)
                native.append(found[1])
                sources.append(found[2])
                continue
            if isinstance(thread, (str, bytes)) or not isinstance(thread, Sequence):
                earlier = first_thread_error(threads[:index]) if format_ == "native" else None
                raise earlier if earlier is not None else _not_a_thread(index, thread)
            if format_ == "native":
                native.append(thread)
                sources.append(None)
                continue
            as_read = held(thread)
            # (as a run object's, above: a detected chat format yields to SWE-agent's actions)
            read_as = run_reading_format(as_read, as_read, format_) if detected else format_
            try:
                messages, origins = to_native_with_sources(as_read, read_as)  # type: ignore[arg-type]
            except ValueError as error:  # (a MessageTypeError keeps its class: a TypeError too)
                kind = MessageTypeError if isinstance(error, MessageTypeError) else ValueError
                raise kind(f"thread {index}: {read_as} format: {error}") from None
            native.append(messages)
            sources.append(origins)
    except Exception as error:
        _note_unnamed(error, f"while reading {'the messages' if one else f'thread {index}'} "
                             f"in {format_} format")
        raise
    return native, sources


def _note_unnamed(error: Exception, note: str) -> None:
    """Add ``note`` to an error the caller's own value raised as it was read, which names
    no thread, as the core's reading of native threads notes one; the errors made here
    begin by naming theirs, and are left as they are."""
    try:
        named = str(error).startswith("thread ")
    except Exception:  # (a caller's exception whose __str__ raises)
        named = False
    if not named:
        error.add_note(note)


def held(thread: Any) -> Any:
    """A list or tuple thread as it is now (a copy), for Python to read message by message
    while the caller's own list may change under it; anything else as it is."""
    return list(thread) if type(thread) is list or type(thread) is tuple else thread


def checked_format(format_: object) -> str:
    """``format_`` as given when it names a format (``"auto"`` or one of
    :data:`vthread.adapters.FORMATS`): a TypeError when it is no string, else a ValueError
    listing the formats."""
    from vthread.adapters import FORMATS

    if not is_string(format_):
        raise TypeError(f"format must be a str ('auto' or one of {', '.join(FORMATS)}), got "
                        f"{type(format_).__name__}")
    if format_ != "auto" and format_ not in FORMATS:
        raise ValueError(f"format must be 'auto' or one of {', '.join(FORMATS)}, "
                         f"got {format_!r}")
    return format_


class NotAThreadError(TypeError, ValueError):
    """A thread given in Python that is not one: a run object whose messages are no array
    or hold a value that is no message. A ``TypeError``, as a list thread holding a value
    that is no mapping is, and a ``ValueError``, as these were first raised."""


def _unreadable_run(index: int, run: Mapping[str, Any], why: str, format_: str
                    ) -> ValueError:
    """The error of a run object ``read_run`` found no run (``why``): a ``ValueError`` when
    its messages are not in ``format_``, else a :class:`NotAThreadError` (with pandas' hint
    when the messages are a NumPy array)."""
    if why.startswith(f"{format_} format:"):
        return ValueError(f"{thread_label(index, run)}: {why}")
    key = next((k for k in MESSAGES_KEYS if k in run), None)
    hint = "" if key is None else ndarray_hint(run[key])
    return NotAThreadError(f"{thread_label(index, run)}: {why}{hint}")


_SHOWN_ID: Final = reprlib.Repr()  # (its limits are keywords only from Python 3.12 on)
_SHOWN_ID.maxstring = _SHOWN_ID.maxother = 60


def thread_label(index: int, thread: object) -> str:
    """How an error names a batch's thread: its position, and a run object's id when it
    holds one (``thread 7 (id 'django__django-11099')``): an evaluation team knows its
    runs by their ids. The id is shown shortened, and a run whose id cannot be read (a
    mapping that raises) is named by its position alone."""
    if isinstance(thread, Mapping):
        try:
            ident = run_id(thread)
        except Exception:
            ident = None
        if ident is not None:
            return f"thread {index} (id {_SHOWN_ID.repr(ident)})"
    return f"thread {index}"


def holding_no_messages(run: Mapping[Any, Any]) -> str:
    """What is wrong with a mapping given as a thread that holds no messages."""
    return ("messages must be a sequence of mappings (or a run object holding them under "
            f"\"messages\", \"traj\" or \"history\"), got a {type(run).__name__} without them")


def first_thread_error(threads: Sequence[Any]) -> Exception | None:
    """The error of the first of ``threads`` that is no native thread (a sequence of
    mappings, or a run object holding one), as scanning them would raise it; None when all
    are threads. Read on the way to raising another thread's error, so that the first bad
    thread of a batch is the one named. O(total messages)."""
    for index, thread in enumerate(threads):
        if isinstance(thread, Mapping):
            if not holds_run_messages(thread):
                return NotAThreadError(f"{thread_label(index, thread)}: "
                                       f"{holding_no_messages(thread)}")
            found = read_run(_as_parsed_run(thread), "native")
            if is_string(found):
                return _unreadable_run(index, thread, found, "native")
            continue
        if isinstance(thread, (str, bytes)) or not isinstance(thread, Sequence):
            return _not_a_thread(index, thread)
        try:
            check_messages(thread)
        except TypeError as error:
            return TypeError(f"thread {index}: {error}")
    return None


def _not_a_thread(index: int, thread: object) -> TypeError:
    return TypeError(f"thread {index}: a thread is a sequence of messages or a run object, "
                     f"got {type(thread).__name__}{ndarray_hint(thread)}")


def _as_parsed_run(run: Mapping[str, Any]) -> dict[str, Any]:
    """A run object given in Python as ``json.loads`` would have made it, for
    :func:`read_run`: a ``dict``, its messages (under the first known key it holds) a
    ``list`` of ``dict`` where they are another sequence of other mappings (a ``UserDict``, a
    tuple). The caller's objects are not changed; messages that are no mapping stay, for
    ``read_run`` to name."""
    parsed = dict(run)
    key = next((k for k in MESSAGES_KEYS if k in parsed), None)
    if key is None:
        return parsed
    messages = parsed[key]
    if (isinstance(messages, Sequence) and not isinstance(messages, (str, bytes, bytearray))
            and (type(messages) is not list or any(type(m) is not dict for m in messages))):
        parsed[key] = [dict(m) if isinstance(m, Mapping) and type(m) is not dict else m
                       for m in messages]
    return parsed


def thread_format(messages: Sequence[Any]) -> str:
    """The format ``format="auto"`` reads one thread's messages in, ``"native"`` among them
    (:func:`native_threads`' detection of a batch of one), without translating them: a
    caller that goes on to read them in a chat format names it, so that they are translated
    once. O(messages looked at)."""
    return _batch_format([held(messages)])


def _batch_format(threads: Sequence[Sequence[Any]], reading: list[int] | None = None) -> str:
    """The format the first threads with messages agree on (``vthread scan``'s detection),
    or, when they are all plain chats, the one the first thread further on to show a chat
    format shows (:func:`first_settling`; a warning names the threads after it, among
    :data:`DETECT_THREADS`, plainly in another). O(messages looked at): a batch of plain
    chats is looked through to its end by :func:`_may_settle`, a few dictionary lookups a
    message (10,000 chats of 13 messages: about 50 ms, a tenth of translating them).
    ``reading[0]``, when given, is kept at the position of the thread being judged (what an
    error the caller's own value raises is noted with)."""
    from vthread.adapters import agreed_format, shapes_apart

    reading = [0] if reading is None else reading
    values = (_judged_value(thread) for thread in _positions_noted(threads, reading))
    evidence, unknown = evidence_of(values, DETECT_THREADS)
    detail = ""
    if not evidence and unknown is not None:
        # A thread whose messages are in no format because one is no message at all: that
        # is what to say, not that the format cannot be told.
        thread = threads[unknown]
        if not isinstance(thread, Mapping) and (isinstance(thread, (str, bytes))
                                                or not isinstance(thread, Sequence)):
            raise _not_a_thread(unknown, thread)
        messages = run_messages(thread) if isinstance(thread, Mapping) else thread
        if isinstance(messages, Sequence) and not isinstance(messages, (str, bytes)):
            try:
                check_messages(messages)
            except TypeError as error:
                raise TypeError(f"{thread_label(unknown, thread)}: {error}") from None
            detail = shapes_apart(messages)  # (which of its messages part ways)
    evidence = declared_apart(
        evidence, lambda position: reads_as_its_own(_judged_value(threads[position])))
    found = agreed_format(evidence, unknown, "thread", "the threads", "pass format=", detail)
    # (stacklevel: this function, native_threads, scan, then scan's caller)
    return settled_format(found, evidence, partial(_judged_after, threads, reading=reading),
                          DETECT_THREADS, "thread", 'format="auto"', stacklevel=4)


def _positions_noted(threads: Sequence[Any], reading: list[int], start: int = 0
                     ) -> Iterator[Any]:
    """``threads`` from ``start`` on, ``reading[0]`` set to each one's position as it is
    handed out."""
    for position in range(start, len(threads)):
        reading[0] = position
        yield threads[position]


def declared_apart(evidence: list[tuple[int, Any, bool]],
                   read_as_its_own: Callable[[int], bool]) -> list[tuple[int, Any, bool]]:
    """``evidence`` (position, format, decisive) without the runs read in their own format
    whatever a detected chat format (``read_as_its_own(position)``, asked only of runs
    decisively mini-swe-agent's or SWE-agent's: :func:`reads_as_its_own`): a detected chat
    format reads such a run as it declares or shows wherever it lies (:func:`read_run`'s
    ``declared_wins``), so it settles the batch's format no more than it disagrees with it.
    A run declaring mini-swe-agent always stands apart; a run showing SWE-agent's actions
    only beside a run showing another chat format (OpenAI runs beside SWE-agent runs made
    the batch one of two formats, refused): among plain chats and declared runs alone,
    SWE-agent runs make the batch SWE-agent's, which reads every chat format's plain chats
    and OpenAI's tool calls as OpenAI's does, with no run judged again (each would be, read
    as OpenAI chat). Where no run left shows a format, those standing apart stand as plain
    chats (``(position, "openai", False)``): the batch then takes its format from the first
    run further on to show one (:func:`settled_format`, where runs read as their own are
    judged by none: :func:`run_format_evidence`), and is read as OpenAI's chats until one
    does (another harness's runs after them were read as mini-swe-agent runs, their loops
    missed). Beside native threads, which are read as they are, such a run still
    disagrees. O(len(evidence)) and a ``read_as_its_own`` call such a run.

    >>> declared_apart([(0, "openai", True), (1, "mini-swe-agent", True)], lambda _: True)
    [(0, 'openai', True)]
    >>> declared_apart([(0, "mini-swe-agent", True), (1, "openai", False)], lambda _: True)
    [(0, 'openai', False), (1, 'openai', False)]
    >>> declared_apart([(0, "native", True), (1, "mini-swe-agent", True)], lambda _: True)
    [(0, 'native', True), (1, 'mini-swe-agent', True)]
    >>> declared_apart([(0, "swe-agent", True), (1, "openai", False)], lambda _: True)
    [(0, 'swe-agent', True), (1, 'openai', False)]
    >>> declared_apart([(0, "swe-agent", True), (1, "langchain", True)], lambda _: True)
    [(1, 'langchain', True)]
    """
    if any(decisive and format_ == "native" for _, format_, decisive in evidence):
        return evidence

    def standing(items: list[tuple[int, Any, bool]], kind: str) -> set[int]:
        return {position for position, format_, decisive in items
                if format_ == kind and decisive and read_as_its_own(position)}

    apart = standing(evidence, "mini-swe-agent")
    rest = [item for item in evidence if item[0] not in apart]
    if any(decisive and format_ != "swe-agent" for _, format_, decisive in rest):
        apart |= standing(rest, "swe-agent")
        rest = [item for item in rest if item[0] not in apart]
    if any(decisive for _, _, decisive in rest):
        return rest  # (the runs left decide; those apart, as plain chats, would disagree
        # with a format no plain chat fits, LangChain's)
    return [(position, "openai", False) if position in apart else (position, format_, decisive)
            for position, format_, decisive in evidence]


def only_declared(before: Sequence[tuple[int, Any, bool]],
                  after: Sequence[tuple[int, Any, bool]]) -> bool:
    """Whether :func:`declared_apart` made ``after`` of ``before`` by standing runs declaring
    mini-swe-agent as plain chats, and no run shows a format then: the batch's runs so far
    are mini-swe-agent runs (and plain chats), which is the format to name for it while no
    run further on shows another (SWE-agent runs stand apart only beside a run showing
    another format)."""
    return before != after and not any(decisive for _, _, decisive in after)


def reads_as_its_own(value: Any, messages_key: str | None = None) -> bool:
    """Whether a parsed run (a run object or its list of messages, as
    :func:`run_format_evidence` reads it) whose evidence is decisively mini-swe-agent's or
    SWE-agent's is read in its own format whatever chat format its batch was found in
    (:func:`run_reading_format`): it declares mini-swe-agent, or shows SWE-agent's actions,
    and so says nothing past a batch's first threads."""
    return run_format_evidence(value, messages_key, undeclared=True) is None


def settled_format(found: str, evidence: Sequence[tuple[int, Any, bool]],
                   later: Callable[[int], Iterable[tuple[int, tuple[Any, bool] | None]]],
                   most: int, unit: str, option: str, stacklevel: int) -> str:
    """``found``, the format a batch's first threads (their ``evidence``) agree on; or, when
    they are all plain chats, the format of the first thread further on to show one
    (:func:`first_settling` of ``later(position after the last of them)``), with a warning
    (``option``: what is said to have chosen it; ``stacklevel`` counts from the caller)
    naming the ``unit``s after it, among ``most``, plainly in another, and the native ones
    before it (:func:`natives_noted`: ``later`` must judge them), as ``vthread scan`` warns
    of a file's lines. O(what ``later`` reads)."""
    if not evidence or any(decisive for _, _, decisive in evidence):
        return found
    natives: list[tuple[int, Any, bool]] = []
    window = first_settling(natives_noted(later(evidence[-1][0] + 1), natives), most)
    if not window:
        return found
    warning = settled_warning([window[0], *natives, *window[1:]], unit)
    if warning is not None:
        import warnings

        warnings.warn(f"{option}: {warning}", stacklevel=stacklevel + 1)
    settled: str = window[0][1]
    return settled


def natives_noted(judged: Iterable[tuple[int, tuple[Any, bool] | None]],
                  natives: list[tuple[int, Any, bool]]
                  ) -> Iterator[tuple[int, tuple[Any, bool] | None]]:
    """``judged`` as it is, the evidence of each native thread before the first that
    settles a chat format appended to ``natives``: read in the format that thread settles
    (its batch is), it is plainly misread, as a native one after it is. O(1) a thread."""
    settled = False
    for number, found in judged:
        settled = settled or settles(found)
        if not settled and found is not None and found[0] == "native":
            natives.append((number, *found))
        yield number, found


def _judged_after(threads: Sequence[Any], start: int, reading: list[int] | None = None
                  ) -> Iterator[tuple[int, tuple[Any, bool] | None]]:
    """:func:`judged_until_settled` of ``threads`` from ``start`` on, by position (a run
    declaring itself a mini-swe-agent run, or showing SWE-agent's actions, judged by none:
    :func:`run_format_evidence`'s ``undeclared``; ``reading`` as :func:`_batch_format`
    keeps it)."""
    noted = _positions_noted(threads, [0] if reading is None else reading, start)
    return judged_until_settled(
        ((position, _judged_value(thread)) for position, thread in enumerate(noted, start)),
        _may_settle, partial(run_format_evidence, undeclared=True))


def judged_past_the_first(mark: int) -> bool:
    """Whether a line (or a table's row) past a batch's first threads, with this
    :func:`vthread._core.line_marks` byte, is judged (:func:`judged_until_settled`'s
    ``may_settle``): it may settle a chat format or be native, and its run does not surely
    declare itself a mini-swe-agent run (judged by none: passed over with no parse)."""
    return mark in _judged_marks()


@cache
def _judged_marks() -> frozenset[int]:
    from vthread import _core

    return frozenset(mark for mark in range(256)
                     if mark & (_core.MAY_SETTLE | _core.MAY_BE_NATIVE)
                     and not mark & _core.DECLARES_MINI_SWE_AGENT)


def judged_until_settled(
    items: Iterable[tuple[int, Any]], may_settle: Callable[[Any], bool],
    judged: Callable[[Any], tuple[Any, bool] | None],
) -> Iterator[tuple[int, tuple[Any, bool] | None]]:
    """(position, ``judged(item)``) of ``items`` ((position, item) each, read lazily), for
    :func:`first_settling`: up to the first that settles the format (:func:`settles`), only
    the items ``may_settle`` keeps (a quick test that passes over only those that surely do
    not); every one after it (the warning's window counts them all)."""
    settled = False
    for position, item in items:
        if not settled and not may_settle(item):
            continue
        found = judged(item)
        settled = settled or settles(found)
        yield position, found


_SETTLING_KEYS: Final = frozenset({"type", "action", *OPENAI_KEYS})
"""The message keys one of which a run decisively in a chat format holds, unless a role,
its content or the run's declaration shows the format (see :func:`_may_settle`)."""


def _may_settle(value: Any) -> bool:
    """Whether a parsed run (as :func:`run_format_evidence` reads it) may settle a chat
    format: False only when it surely does not, so that a batch of plain chats is looked
    through at a few dictionary lookups a message, not the evidence's several passes (about
    a quarter of its cost). Python's twin of :func:`vthread._core.may_settle`, which reads
    JSON text.

    Why it is safe: :func:`vthread.adapters.format_evidence` settles a chat format only on
    a message with a ``type`` (Responses items), an OpenAI-only role or key, an ``action``
    (SWE-agent), content that is no string (Anthropic's blocks, and text parts that may
    hold a call), text holding a ``<function=`` call or opening with ``<returncode>``; or
    on the run's ``trajectory_format``. A message that is no ``dict``, or a run that is no
    list of them, is passed on to the evidence."""
    if type(value) is dict:
        if "trajectory_format" in value:
            return True
        value = run_messages(value)
    if type(value) is not list:
        return True
    for message in value:
        if type(message) is not dict or not _SETTLING_KEYS.isdisjoint(message):
            return True
        role = message.get("role")
        # (a str subclass by its content: its own __hash__ and __eq__ decide nothing)
        if is_string(role) and str.__str__(role) in OPENAI_ONLY_ROLES:
            return True
        content = message.get("content")
        if content is not None and (type(content) is not str or "<function=" in content
                                    or content.startswith("<returncode>")):
            return True
    return False


def _judged_value(thread: Any) -> Any:
    """A batch's thread as :func:`run_format_evidence` reads a parsed run."""
    if isinstance(thread, Mapping):
        return _as_parsed_run(thread)
    return list(thread) if isinstance(thread, Sequence) else thread


def evidence_of(values: Iterable[Any], most: int,
                judged: Callable[[Any], tuple[Any, bool] | None] | None = None,
                ) -> tuple[list[tuple[int, Any, bool]], int | None]:
    """What the first of ``values`` (parsed runs, read lazily; or anything ``judged`` reads
    as :func:`run_format_evidence` reads a run) say of their format, as
    :func:`vthread.adapters.agreed_format` weighs it: (position, format, decisive) of each of
    the first ``most`` with messages in a known format, and the position of the first with
    messages in none (None when there is none)."""
    evidence: list[tuple[int, Any, bool]] = []
    unknown: int | None = None
    for position, value in enumerate(values):
        if len(evidence) >= most:
            break
        found = run_format_evidence(value) if judged is None else judged(value)
        if found is not None and found[0] is None:
            unknown = position if unknown is None else unknown
        elif found is not None:
            evidence.append((position, *found))
    return evidence, unknown


def first_settling(judged: Iterable[tuple[int, tuple[Any, bool] | None]], most: int
                   ) -> list[tuple[int, Any, bool]]:
    """Past a batch's first threads, all plain chats: the evidence (position, format,
    decisive) of the first thread of ``judged`` (position and :func:`run_format_evidence`
    of each, read lazily) that is decisively in a chat format, then of the threads with
    messages after it, ``most`` in all; empty when no thread is. The first's format is the
    batch's (a plain chat reads alike in every chat format but in a few shapes: see
    docs/formats.md), and :func:`misfits` of the rest against it are what to warn of.
    O(threads judged).

    >>> first_settling([(64, ("openai", False)), (65, ("anthropic", True)),
    ...                 (66, ("openai", True))], 64)
    [(65, 'anthropic', True), (66, 'openai', True)]
    """
    window: list[tuple[int, Any, bool]] = []
    for position, found in judged:
        if found is None or found[0] is None:
            continue
        if window or settles(found):
            window.append((position, *found))
            if len(window) >= most:
                break
    return window


def settles(found: tuple[Any, bool] | None) -> bool:
    """Whether a thread's :func:`run_format_evidence` settles the format of a batch whose
    first threads were plain chats: it is decisively in a chat format (a native thread is
    not: a plain chat fits no native reading)."""
    return found is not None and found[1] and found[0] in CHAT_FORMATS


def settled_warning(window: Sequence[tuple[int, Any, bool]], unit: str) -> str | None:
    """What to say of the threads of a :func:`first_settling` window that are plainly in
    another format than its first, the one the batch is read in; None when none is."""
    found = misfits(window[1:], window[0][1])
    if not found:
        return None
    settled = window[0][1]
    one = len(found) == 1
    return (f"{unit} {window[0][0]}, the first after plain chats to show a format, is "
            f"{settled}, the format the rest is read in, but {misfit_lines(found, unit)}: "
            f"{'it is' if one else 'they are'} read as {settled}: an error where "
            f"{'it holds' if one else 'one holds'} what only its own format holds, else "
            "maybe read wrongly")


def line_format_evidence(line: bytes, messages_key: str | None = None,
                         parse: Callable[[bytes], Any] = json.loads, *,
                         undeclared: bool = False) -> tuple[Any, bool] | None:
    """:func:`run_format_evidence` of one line's JSON text (a JSONL line, an Arrow row),
    judged by the compiled core from its bytes, so that a long run's messages are never built
    in Python (an 800,000-message run took 2.1 s and 428 MB); Python reads what the core
    leaves (a NaN, a lone surrogate, text that is not JSON) with ``parse``. With
    ``undeclared``, None for a run declaring itself a mini-swe-agent run or showing
    SWE-agent's actions (:func:`run_format_evidence`'s ``undeclared``), told by the core
    with no parse in Python."""
    return line_format_evidence_keeping(line, messages_key, parse, keep_tape=False,
                                        undeclared=undeclared)


def line_format_evidence_keeping(line: bytes, messages_key: str | None,
                                 parse: Callable[[bytes], Any], *, keep_tape: bool,
                                 keep_into: _core.KeptTapes | None = None,
                                 undeclared: bool = False) -> tuple[Any, bool] | None:
    """:func:`line_format_evidence`; with ``keep_tape``, the core keeps its parse of a long
    line for the scan of the same ``bytes`` that follows (``vthread scan`` only, which lets
    it go at the end of its run: :func:`vthread._core.line_format_evidence`); with
    ``keep_into``, that of a shorter line is held there, for the scan of its chunk."""
    from vthread import _core

    read, found = _core.line_format_evidence(line, messages_key, keep_tape, keep_into,
                                             undeclared)
    if read:
        return found
    try:
        value = parse(line)
    except (ValueError, RecursionError):
        return None
    return run_format_evidence(value, messages_key, undeclared=undeclared)


def misfits(evidence: Iterable[tuple[int, Any, bool]], given: str) -> list[tuple[int, Any]]:
    """(position, format) of the runs of ``evidence`` (:func:`evidence_of`) that are plainly
    not in the ``given`` format: in another one decisively, or, read as native, in any
    other (a plain chat fits every chat format, but not native).

    >>> misfits([(0, "openai", False), (1, "anthropic", True)], "openai")
    [(1, 'anthropic')]
    """
    return [(position, found) for position, found, decisive in evidence
            if found != given and (decisive or given == "native")]


ANOTHER_LIBRARY: Final = 'another library\'s messages (a "content" and no "text")'
"""What a warning says a thread looks like whose messages are :func:`another_library_s`."""


def why_no_format(value: Any, messages_key: str | None = None) -> str:
    """:func:`vthread.adapters.shapes_apart` of the messages of ``value`` (a parsed run: its
    messages, or a run object holding them), the first thread in no format, for the error
    saying so; "" when it holds no list of messages."""
    from vthread.adapters import shapes_apart

    messages = _messages_of(value, messages_key)
    return shapes_apart(messages) if isinstance(messages, list) else ""


def native_misfit(value: Any, messages_key: str | None = None) -> bool:
    """Whether a parsed run in no format (its :func:`run_format_evidence` None) is plainly no
    native run either: its messages are :func:`another_library_s`, which read as native
    are alike (a warning names it among those read so, with :data:`ANOTHER_LIBRARY`)."""
    messages = _messages_of(value, messages_key)
    return isinstance(messages, list) and another_library_s(messages)


RUNS_FOR_MESSAGES: Final = "runs (objects holding their own list of messages)"
"""What a run whose messages are :func:`runs_for_messages` holds, as its error record says."""


def runs_for_messages(value: Any, messages_key: str | None = None) -> bool:
    """Whether a parsed run's messages are runs themselves: its first message has no
    ``type`` and no ``role`` and holds a list under a messages key (a JSONL line holding a
    list of runs, as ``jq -c`` writes a batch). Read as native, such messages are alike and
    the line a false loop (its runs unread)."""
    messages = _messages_of(value, messages_key)
    return (isinstance(messages, list) and bool(messages)
            and _is_run_object(messages[0], messages_key))


def runs_given_for_messages(given: str) -> str:
    """Why a run (a line, a row, a document's element) whose messages are runs is no run,
    ``given`` saying how each run is to be given instead ("a row of its own").

    >>> runs_given_for_messages("a row of its own")[:40]
    'its messages are runs (objects holding t'
    """
    return f"its messages are {RUNS_FOR_MESSAGES}, not messages: give each run as {given}"


def _is_run_object(message: Any, messages_key: str | None = None) -> bool:
    """Whether a message is plainly a run: no ``type``, ``role`` nor ``text``, a list of
    messages under a run's messages key (``messages_key``, else :data:`MESSAGES_KEYS`, as the core's
    screen of a line's first message looks for them)."""
    return (isinstance(message, Mapping) and "type" not in message and "role" not in message
            and "text" not in message  # (as the core's screen: no text)
            and any(isinstance(message.get(key), list)
                    for key in _messages_keys(messages_key)))


def misread_as_native(line: bytes, messages_key: str | None = None,
                      parse: Callable[[bytes], Any] = json.loads) -> Any:
    """What a line (or an Arrow row's text) read as native plainly is instead, for a warning
    naming it: its format, or :data:`ANOTHER_LIBRARY`; None when it may be native. Parsed
    (with ``parse`` where the core leaves it): asked only of a looping line whose first
    message the core's screen marked (``chat_first``)."""
    return _misread(line_format_evidence(line, messages_key, parse), lambda: parse(line),
                    messages_key)


def misread_value(value: Any, messages_key: str | None = None) -> Any:
    """:func:`misread_as_native` of a parsed run (a row Python read)."""
    return _misread(run_format_evidence(value, messages_key), lambda: value, messages_key)


def _misread(evidence: tuple[Any, bool] | None, value: Callable[[], Any],
             messages_key: str | None) -> Any:
    """What a run of this format ``evidence`` plainly is read as native: its format, else
    (in no format) :func:`misfit_kind` of its ``value``, made only then."""
    if evidence is None or evidence[0] == "native":
        return None
    return evidence[0] if evidence[0] is not None else misfit_kind(value(), messages_key)


_NATIVE_OR_CHAT: Final = ('give them as native ({"type", "text"}) or chat ({"role", '
                          '"content"}) messages')
"""What to do with messages no format reads (another library's)."""


def misfit_advice(kinds: Iterable[Any]) -> str:
    """What a warning of units (lines, rows) read as native adds for those no format reads
    (:func:`misfit_kind`'s), "" for formats: their own format is the advice given."""
    if ANOTHER_LIBRARY in set(kinds):
        return f"; no format reads another library's messages: {_NATIVE_OR_CHAT}"
    return ""


def misread_warning(named: str, count: int, kinds: Iterable[Any], remedy: tuple[str, str],
                    reading: str = "") -> str:
    """A warning of ``count`` looping units (lines, rows) read as native that plainly are
    not native runs, ``named`` by :func:`misfit_lines`, as ``vthread scan`` and
    ``scan_arrow`` say it: ``reading`` what reading them as native was, ``remedy`` (verb,
    noun) how to name their format ("with", "--format")."""
    one = count == 1
    its = "its" if one else "their"
    verb, noun = remedy
    return (f"{named} but {'is' if one else 'are'} read as native{reading}: read so, {its} "
            f"messages are alike and {'its loop' if one else 'their loops'} may be false; "
            f"scan {'it' if one else 'them'} apart, or {verb} {its} {noun}"
            + misfit_advice(kinds))


def tally_misfits(found: Iterable[tuple[int, Any]], shown: list[tuple[int, Any]],
                  totals: dict[Any, int]) -> None:
    """Count ``found`` (unit, kind) into ``totals`` by kind, keeping the first
    :data:`vthread.adapters.POSITIONS_SHOWN` of each kind in ``shown`` (for
    :func:`misfit_lines`, which names them by number and counts the rest)."""
    for number, kind in found:
        if totals.get(kind, 0) < POSITIONS_SHOWN:
            shown.append((number, kind))
        totals[kind] = totals.get(kind, 0) + 1


def misfit_kind(value: Any, messages_key: str | None = None) -> str | None:
    """What a parsed run in no format (its :func:`run_format_evidence` None) plainly is, read
    as native: :data:`ANOTHER_LIBRARY` (:func:`native_misfit`), or None when it may be
    native. (A run whose messages are runs, :func:`runs_for_messages`, is no unit read as
    native: ``vthread scan`` and ``scan_arrow`` make it an error record saying so.)"""
    return ANOTHER_LIBRARY if native_misfit(value, messages_key) else None


def _messages_of(value: Any, messages_key: str | None) -> Any:
    """A parsed run's messages: those a run object holds, else the value itself."""
    return run_messages(value, messages_key) if isinstance(value, Mapping) else value


def misfit_phrase(found: Sequence[tuple[int, Any]], examined: int, unit: str, given: str
                  ) -> str:
    """How a warning names the :func:`misfits` among the first ``examined`` ``unit``s (line,
    row) and the format ``given`` they are read in: "rows 0, 1 and 3 more of the first 16
    look like openai; they are read as native" ("it is" for one)."""
    subject = "it is" if len(found) == 1 else "they are"
    return (f"{misfit_lines(found, unit, among=f' of the first {examined}')}; "
            f"{subject} read as {given}")


def misfit_lines(found: Sequence[tuple[int, Any]], unit: str, among: str = "",
                 totals: Mapping[Any, int] | None = None) -> str:
    """How a warning names ``unit``s (lines, rows, runs) by number that look like another
    format than they are read as, ``among`` some, each format with its own: "lines 71, 90
    and 3 more look like openai, line 95 like native" (every one was said to look like the
    first's format). ``totals``: how many there are of each format, when ``found`` holds
    only the first few of each."""
    by_format: dict[Any, list[int]] = {}
    for number, format_ in found:
        by_format.setdefault(format_, []).append(number)
    said: list[str] = []
    for format_, numbers in by_format.items():
        total = len(numbers) if totals is None else totals[format_]
        named = positions_named(numbers, total)
        units, look = (unit, "looks") if total == 1 else (f"{unit}s", "look")
        said.append(f"{units} {named}{among} {look} like {format_}" if not said
                    else f"{units} {named} like {format_}")
    return ", ".join(said)


def native_messages(messages: Any, format_: str) -> tuple[Any, list[int] | None]:
    """One thread's messages (or run object) as native messages, with the source message of
    each (None when read as they are), as :func:`native_threads` reads a batch's; its errors
    name the message, not a thread."""
    try:
        (native,), found = native_threads([messages], format_, one=True)
    except (TypeError, ValueError) as error:
        raise type(error)(str(error).removeprefix("thread 0: ")) from None
    return native, None if found is None else found[0]


def chat_like(message: Any) -> bool:
    """Whether a first message may show its thread is not native: it has a ``role``, which
    no native message has (OpenAI's and Anthropic's messages, a Responses ``message``
    item), it is a Responses tool item (a ``function_call``, a ``computer_call``, an
    output, with a ``call_id``; a ``web_search_call``, with none), or it holds a
    ``content`` (or the ``data`` or ``kwargs`` LangChain's other dict forms wrap a message's
    fields in) and no ``text`` (a LangChain message, ``{"type": "human", "content": ...}``,
    or another library's: the thread is one when none of its messages has a ``text``,
    which :func:`warn_if_chat` confirms)."""
    return (type(message) is dict or isinstance(message, Mapping)) and (
        "role" in message or _responses_tool(message)
        or (_wraps_fields(message) and "text" not in message))


def _wraps_fields(message: Mapping[str, Any]) -> bool:
    """Whether a message holds a ``content``, or the ``data`` or ``kwargs`` LangChain's other
    dict forms wrap a message's fields in, or a run's messages (a run given for a message)
    (asked before its ``text``: a native message's keys are then asked of nothing else,
    whose own ``__eq__`` could change the thread)."""
    # (each key asked alone, the last three MESSAGES_KEYS: a generator over the keys cost
    # a per-turn call 0.3 us)
    return ("content" in message or "data" in message or "kwargs" in message
            or "messages" in message or "traj" in message or "history" in message)


def _responses_tool(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is a Responses tool's item: of a type of ``RESPONSES_MARKS``,
    with a ``call_id`` or without a ``text`` (a ``web_search_call`` has no call id). Its
    type is looked at first: a native message's other keys are never asked (a key's own
    ``__eq__`` would run, which may change the thread before it is read)."""
    kind = message.get("type")
    # (by content, the marks being ASCII: a str subclass's own hash is not asked)
    if not is_string(kind) or str.__str__(kind) not in RESPONSES_MARKS:
        return False
    return "call_id" in message or "text" not in message


_LOOKS_LIKE_A_LOOP: Final = ('are alike (no native "type", "text" or "meta" tells them apart), '
                             "so such a thread looks like a loop")


PASS_A_FORMAT: Final = 'pass format="auto" (or the format\'s name) to translate them'
"""What to do about chat messages read as native when the caller gave no format."""
DETECTED_NATIVE: Final = ("format=\"auto\" read the batch as native, as its first threads "
                          "are: scan these apart, or pass their format's name")
"""The same when ``format="auto"`` found the batch native by its other threads."""


def warn_if_chat(threads: Sequence[Any], stacklevel: int, one: bool = False,
                 what: str = _LOOKS_LIKE_A_LOOP, advice: str = PASS_A_FORMAT,
                 rows: Iterable[int] | None = None) -> None:
    """Warn when one of the first :data:`DETECT_THREADS` threads (or of ``rows``), to be
    read as native messages, is chat (:func:`chat_like`): by default, that its messages are
    alike to the heuristics, so it looks like a loop; ``what``: what reading them as native
    costs the caller instead (a clause after "read as native ones, they"); ``advice``: what
    to do about it. ``one``: the threads are one caller's thread (the warning says "the
    messages"). O(1) per thread, but O(messages) for one whose first message holds a
    ``content`` and no ``text`` (whether any other holds a ``text``)."""
    for index in range(min(len(threads), DETECT_THREADS)) if rows is None else rows:
        thread = threads[index]
        try:
            found = _chat_found(thread, "the messages" if one else f"thread {index}'s messages",
                                one)
        except Exception as error:
            _note_unreadable(error, thread, None if one else index)
            raise
        if found is None:
            continue
        what_they_are, advice = found[0], found[1] or advice
        say_warning(f"{what_they_are}: read as native ones, they {what}; {advice}",
                    UserWarning, stacklevel + 1)
        return


def _chat_found(thread: Any, whose: str, one: bool) -> tuple[str, str | None] | None:
    """What :func:`warn_if_chat` says of ``thread`` (its messages called ``whose``) and
    advice of its own (None: the caller's), or None for a thread that may be native."""
    if not (isinstance(thread, Sequence) and thread and isinstance(thread[0], Mapping)):
        return None
    first = thread[0]
    # The tests of chat_like, each with its words (the thread's messages looked at only
    # past the first's screen, O(1) for every other thread).
    if "role" in first:
        return f'{whose} have a "role" (chat messages)', None
    if _responses_tool(first):
        marked = ' with a "call_id"' if "call_id" in first else ""
        # (the type's own text: a str subclass's __format__ is not run)
        kind = str.__str__(first["type"])
        return f'{whose} are OpenAI Responses items ("{kind}"{marked})', None
    if not (_wraps_fields(first) and "text" not in first):
        return None  # (a native first message: the usual case, told by one screen)
    if langchain_s(thread):
        return f"{whose} are LangChain's", None
    if _is_run_object(first):
        return (f"{whose} are runs ({'the first' if one else 'its first'} "
                "holds its own messages and no \"type\")", "pass each run as a thread of its own")
    if "content" in first and another_library_s(thread):
        # (no format reads them: the advice is to give them in one)
        return (f'{whose} have a "content" and no "text" (no native '
                "messages: another library's, such as LangChain's?)", _NATIVE_OR_CHAT)
    return None


def first_chat_like(thread: Sequence[Any]) -> bool:
    """:func:`chat_like` of a single call's thread's first message, an error its own
    objects raise noted as the core notes one (:func:`_note_unreadable`)."""
    try:
        return chat_like(thread[0])
    except Exception as error:
        _note_unreadable(error, thread, None)
        raise


def _note_unreadable(error: Exception, thread: Sequence[Any], index: int | None) -> None:
    """Note on ``error``, raised by a message's own objects while ``thread`` was looked at
    for chat messages (:func:`chat_like` of its first, and for some, reads of the others),
    where, as the core notes an error raised as it reads a thread: ``while reading thread
    7, messages[0]`` when the first message's own reading raises again (found by reading it
    again, on this error path only; an exception that is no ``Exception``, a Ctrl-C, raised
    then propagates in the error's place), else ``while reading thread 7`` (``index``: the
    thread's in its batch; None: a single call's, ``messages[0]`` or no note)."""
    try:
        chat_like(thread[0])
        first = False
    except Exception:
        first = True
    place = [] if index is None else [f"thread {index}"]
    if first:
        place.append("messages[0]")
    if place:
        error.add_note(f"while reading {', '.join(place)}")


def in_source_messages(result: ScanResult, row: int, sources: list[int],
                       tokens_of: Callable[[int, int], float]) -> None:
    """Row ``row``'s loop restated in the source file's messages, given the source message
    of each translated one: ``loop_start`` is the source message holding the loop's first
    translated message, ``loop_messages`` counts source messages from there to the end, and
    a period that counts messages (a repeated suffix's block, a result run's spacing) counts
    the source messages of one repetition. ``loop_tokens`` counts the usage of those source
    messages, the first one's riding on the first message it yields, which may come before
    the loop's first: ``tokens_of(first, end)`` sums the usage of translated messages
    ``first`` to ``end - 1`` (NaN when none carries one), asked only for the spans
    :func:`recounted_spans` names. Repetitions, and an activity tail's period (a number of
    distinct calls), are unchanged. A scan that looked anywhere has each of the row's loops
    restated so (``vthread.anywhere.records_in_source``), the row's fields then those of
    the costliest."""
    if result.loops is not None:
        from vthread.anywhere import LOOP_KINDS, records_in_source
        from vthread.scan import set_row

        records_in_source(result.loops[row], sources, tokens_of)
        if result.loops[row]:
            set_row(result, row, result.loops[row][0], LOOP_KINDS)
        return
    code = int(result.codes[row])
    if not code:
        return
    for counted in recounted_spans(result, row, sources):
        result.loop_tokens[row] = tokens_of(*counted)
    start = sources[int(result.loop_start[row])]
    spanned = sources[-1] + 1 - start
    result.loop_start[row] = start
    result.loop_messages[row] = spanned
    if code == SUFFIX:
        result.period[row] = sources[-1] + 1 - sources[len(sources) - int(result.period[row])]
    elif code == RESULT_RUN:
        result.period[row] = max(1, round(spanned / int(result.repetitions[row])))


def translated_span(sources: Sequence[int], start: int, end: int) -> tuple[int, int]:
    """The translated messages of the source messages holding translated messages ``start``
    to ``end - 1`` (``sources[i]`` being translated message ``i``'s source, in order): a
    loop restated in source messages counts their usage, and a source message's usage
    rides on the first message it yields, which may lie before the loop's first."""
    return (bisect_left(sources, sources[start], 0, start),
            bisect_right(sources, sources[end - 1], end - 1))


def recounted_spans(result: ScanResult, row: int, sources: list[int]) -> list[tuple[int, int]]:
    """The spans of translated messages whose tokens :func:`in_source_messages` asks for
    in restating row ``row`` (its loop's, or its loops', where the source messages they
    span hold translated messages before or after them): a caller that reads them from
    the messages' bytes reads them all at once."""
    if result.loops is not None:
        from vthread.anywhere import recounted_loops

        return [span for span in recounted_loops(result.loops[row], sources) if span]
    if not result.codes[row]:
        return []
    first = int(result.loop_start[row])
    counted = translated_span(sources, first, len(sources))
    return [counted] if counted[0] != first else []


def run_format_evidence(value: Any, messages_key: str | None = None, *,
                        undeclared: bool = False) -> tuple[Any, bool] | None:
    """What one parsed run says of its file's format, as detection weighs it: ``(format,
    decisive)`` (:func:`vthread.adapters.format_evidence`, or the format the run declares),
    ``(None, True)`` when it has messages in no known format, and None when it has no
    messages to judge by. With ``undeclared`` (past a batch's first threads), None for a
    run declaring itself a mini-swe-agent run or showing SWE-agent's actions: it is read so
    whatever the batch's detected format (:func:`run_reading_format`), so it neither
    settles that format nor misfits it (as :func:`declared_apart` stands a declared run as
    a plain chat among the first threads); the twin of the core's
    ``adapters::undeclared_format_evidence``.

    >>> run_format_evidence({"messages": [{"role": "user", "content": "hi"}]})
    ('openai', False)
    """
    from vthread.adapters import assistant_acts, format_evidence

    declared = run_format(value) if isinstance(value, dict) else None
    if declared is not None:
        return None if undeclared else (declared, True)
    listed = run_messages(value, messages_key) if isinstance(value, dict) else value
    if not isinstance(listed, list) or not listed:
        return None
    found = format_evidence(listed)
    if undeclared and found[0] == "swe-agent" and assistant_acts(listed):
        return None
    return found
