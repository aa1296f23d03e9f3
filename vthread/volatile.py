"""Loops that differ only in volatile values: a poll answered "running" with a new timestamp.

An agent polling a background job gets a different answer every time only because the
answer carries the clock: no heuristic sees the loop, because no two results are equal.
:func:`masked_thread` copies a thread with the values that change by themselves masked, so
the heuristics compare what the agent did and saw rather than when. It is opt-in
(``mask_volatile=True`` on the cycle functions and :func:`vthread.scan`, ``--mask-volatile``
on the command line); without it every answer is exactly the production one.

What is masked, in every string of a message's ``text`` and ``meta`` (tool arguments and
results included), each pattern replaced by its placeholder:

============  =========================================================  =============
placeholder   matches                                                    example
============  =========================================================  =============
``<uuid>``    a UUID                                                     ``0f8e…-…``
``<time>``    an ISO 8601 date-time, or a time of day ``h:mm:ss[.f]``    ``12:04:59.3``
``<epoch>``   a Unix time in seconds, ms, µs or ns (1 followed by 9,      ``1764556800``
              12, 15 or 18 digits)
``<hex>``     a run of 12 or more hex digits holding a digit (ids,        ``9f86d081884c``
              hashes)
``<elapsed>`` a duration: a number with a time unit (``ms``, ``s``,       ``3.2s``, ``2m30s``,
              ``sec``, ``min``, ``h``, ...), or compound ``2m30s``, not   ``12 seconds``
              right after ``[`` or ``;`` (terminal colour codes)
============  =========================================================  =============

and the value (a string or a number) of any object key that names a time: ``time``,
``timestamp``, ``datetime``, ``elapsed``, ``duration``, ``uptime``, ``created``,
``updated``, ``started``, ``finished``, ``ended``, or a key ending in ``_at``, ``_time``,
``_ms``, ``_ns``, ``_us``, ``_sec`` or ``_seconds`` (case-insensitive), becomes
``<volatile>``. Counts, sizes, line numbers and other numbers are kept: a thread whose
numbers really change still progresses, but for those that look like a clock or an id
(10, 13, 16 or 19 digits opening with ``1``, as a size of 1-2 GB in bytes does; 12 digits
or more, as ``<hex>``; a number with a time unit). The value of a key named ``date`` is
kept too: a date is what an agent
searches or books for (tau-bench's ``search_direct_flight(date=...)``), and one searched day
after day is progress, not a clock. A value of another Python type is masked as the JSON
value it is compared as: a tuple or NumPy array as its array (copied as a list; one of
numbers kept as it is), a ``datetime`` as its text (a clock reading, midnight or not), a
NumPy or ``Decimal`` number as its number; a ``date`` alone is kept, as a key named
``date`` is, but under a time-naming key.

Every pattern is linear in the text (no quantified group can match the same characters two
ways), so a hostile text cannot make masking slow.

The texts are masked by the compiled core (``src/volatile.rs``), which evaluates the same
pattern the way :mod:`re` does; :func:`mask_text_by_pattern` is the plain twin, the pattern
below run by :mod:`re`, and a property test holds the two equal.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from vthread import _core
from vthread._jsvalue import (
    ABSENT_FIELD,
    field,
    has_json_form,
    is_string,
    numpy_if_imported,
    real_number,
    stand_in,
)
from vthread._messages import copied
from vthread._options import flag

__all__ = ["mask_text", "masked_thread", "volatile_masked"]

VOLATILE: Final = "<volatile>"
"""What the value of a time-naming key becomes."""

_UNITS: Final = r"(?:ns|us|µs|ms|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)"
# One pass over the text: at each word start that could begin a value (a hex character), the
# first alternative that matches wins; the named group names the placeholder. Every
# alternative is linear: no unbounded repeat holds another (a compound duration has at most
# four parts, "1h2m3s4ms"), and no two adjacent repeats can match the same characters.
_VOLATILE_VALUE: Final = re.compile(
    r"\b(?=[0-9a-fA-F])(?:"
    r"(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"|(?P<time>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
    r"(?:Z|[+-]\d{2}:?\d{2})?(?!\w)|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b)"
    r"|(?P<epoch>1\d{9}(?:\d{3}){0,3}(?:\.\d+)?\b)"
    # Not after "[" or ";": "\x1b[0m" and "\x1b[38;21m" are terminal colours, not minutes.
    r"|(?<![\[;])(?P<elapsed>\d+(?:\.\d+)?(?:h|m|s|ms)(?:\d+(?:\.\d+)?(?:h|m|s|ms)){1,3}\b"
    r"|\d+(?:\.\d+)? ?" + _UNITS + r"\b)"
    r"|(?P<hex>[0-9a-fA-F]{12,}\b))"
)
_VOLATILE_KEYS: Final = frozenset({
    "time", "timestamp", "datetime", "elapsed", "duration", "uptime", "created",
    "updated", "started", "finished", "ended",
})
_VOLATILE_SUFFIXES: Final = ("_at", "_time", "_ms", "_ns", "_us", "_sec", "_seconds")


def _placeholder(match: re.Match[str]) -> str:
    kind = match.lastgroup
    # A hex run without a digit is a word made of a-f letters ("acceded"), not an id.
    if kind == "hex" and not any(c.isdigit() for c in match.group()):
        return match.group()
    return f"<{kind}>"


def mask_text(text: str) -> str:
    """``text`` with its timestamps, UUIDs, Unix times, long hex ids and durations masked,
    in one left-to-right pass. O(len(text)).

    >>> mask_text("job 3f2a9c1e7b6d40aa running since 2026-12-01T02:50:38Z (12.5s)")
    'job <hex> running since <time> (<elapsed>)'
    """
    return _core.mask_text(text)


def mask_text_by_pattern(text: str) -> str:
    """:func:`mask_text` by :mod:`re` itself: the pattern the core's matcher must agree with."""
    return _VOLATILE_VALUE.sub(_placeholder, text)


def _volatile_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    folded = key.lower()
    return folded in _VOLATILE_KEYS or folded.endswith(_VOLATILE_SUFFIXES)


def _compared_as(value: Any) -> Any:
    """What masking reads ``value`` as: the value itself where JSON has a form for it, else
    the JSON value it is compared as (:func:`vthread._jsvalue.stand_in`): a NumPy or
    ``Decimal`` number as its number, a NumPy array as its list, a ``datetime`` as its
    ``Date.toJSON`` text. Kept as they are: a ``date`` without a time of day, which is what
    an agent searches or books for (as a key named ``date`` is kept: its text, written as
    midnight, would read as a clock), and a NumPy array of numbers or booleans, in which
    nothing is masked (an array's elements are under no key), so it is not copied element
    by element (an embedding of 1,536 floats in each message made masking 14 times
    slower)."""
    if has_json_form(value) or (
            isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)):
        return value
    np = numpy_if_imported()
    if np is not None and isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value
    return stand_in(value)


def _leaf(value: Any, compared_as: Any, under_volatile_key: bool,
          mask: Callable[[str], str]) -> Any:
    """The masked copy of a value that is no container (``compared_as`` is what it is read
    as, :func:`_compared_as`): a string masked, or :data:`VOLATILE` under a time-naming key
    as a number or date there is (a date compared as null, pandas' ``NaT``, is kept, as
    None is); anything else kept as it is."""
    if is_string(compared_as):
        return VOLATILE if under_volatile_key else mask(compared_as)
    if under_volatile_key and compared_as is not None and (
            isinstance(value, datetime.date) or real_number(compared_as) is not None):
        return VOLATILE
    return value


def _masked_value(value: Any, under_volatile_key: bool = False,
                  mask: Callable[[str], str] = mask_text) -> Any:
    """A copy of ``value`` with every string masked and every time-named key's value made
    :data:`VOLATILE`. Objects (any mapping) and arrays (a list, or a tuple or NumPy array,
    compared as JSON arrays and copied as lists) are copied, iteratively, so nesting of any
    depth is fine and a container reached twice (or inside itself) is copied once: the copy
    has the same shape, cycles included. Other values are kept as they are, but for those
    read as a string or number (:func:`_compared_as`)."""
    copies: dict[int, Any] = {}
    keep_alive: list[Any] = []  # ids stay unique only while their objects live
    pending: list[tuple[Any, Any]] = []

    def copy_of(original: Any, volatile: bool) -> Any:
        source = _compared_as(original)
        if not isinstance(source, (Mapping, list, tuple)):
            return _leaf(original, source, volatile, mask)
        found = copies.get(id(original))
        if found is None:
            found = {} if isinstance(source, Mapping) else [None] * len(source)
            copies[id(original)] = found
            keep_alive.append(original)
            pending.append((source, found))
        return found

    root = copy_of(value, under_volatile_key)
    while pending:
        source, target = pending.pop()
        if isinstance(source, Mapping):
            for key, child in source.items():
                target[key] = copy_of(child, _volatile_key(key))
        else:
            for index, child in enumerate(source):
                target[index] = copy_of(child, False)
    return root


def masked_thread(messages: Sequence[Any]) -> list[Any]:
    """A copy of ``messages`` whose ``text`` and ``meta`` have volatile values masked (see
    the module docstring); other fields (``type``, ``usage``, ...) are kept, and anything
    that is not a mapping is passed through for the caller's checks to name. The input is
    not modified. O(total size).

    The core copies the messages a JSON parser makes (dicts, lists and plain values) and
    hands any other to :func:`_masked_message`; :func:`masked_thread_by_python` is the plain
    twin, held equal by a property test.

    >>> poll = {"type": "bot", "text": "still running at 12:00:01", "usage": {"tokens": 3}}
    >>> masked_thread([poll])
    [{'type': 'bot', 'text': 'still running at <time>', 'usage': {'tokens': 3}}]
    """
    masked = masked_native(messages)
    if masked:
        from vthread.documents import warn_if_chat

        # (chat and LangChain messages hold their text under "content", which is not masked:
        # returned unchanged in silence, they looked masked; told as vthread.scan tells them,
        # across the thread)
        warn_if_chat([masked], stacklevel=2, one=True,
                     what="are returned unmasked (masked_thread masks native messages' text "
                          "and meta)",
                     advice="translate them first (vthread.adapters.to_native), or pass "
                            "mask_volatile=True with their format= to the function reading "
                            "them")
    return masked


def masked_native(messages: Sequence[Any]) -> list[Any]:
    """:func:`masked_thread` as vthread's own readers call it, on messages read as native
    (chat messages read so are warned of by those readers, once: no warning of its own)."""
    _check_thread(messages)
    if type(messages) is not list and type(messages) is not tuple:
        messages = copied(messages)  # what iterating it gives, once
    return _core.masked_thread(messages, _masked_message)


def masked_thread_by_python(messages: Sequence[Any]) -> list[Any]:
    """:func:`masked_thread` made in Python alone (texts masked by :mod:`re`)."""
    _check_thread(messages)
    return [_masked_message(message, mask_text_by_pattern) for message in messages]


def _check_thread(messages: object) -> None:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a sequence of messages, got {type(messages).__name__}")


def _masked_message(message: Any, mask: Callable[[str], str] = mask_text) -> Any:
    """One message of :func:`masked_thread`: a mapping copied with its text and meta masked,
    anything else as it is."""
    if not isinstance(message, Mapping):
        return message
    copy = dict(message)
    if type(message) is not dict:
        # The fields the readers read, as they read them (with the mapping's own get), so
        # that a mapping whose get and storage disagree is judged alike masked or not (its
        # copy held what its storage held, and a thread looping by its get did not loop).
        for name in _READ_FIELDS:
            value = field(message, name)
            if value is ABSENT_FIELD:
                copy.pop(name, None)
            else:
                copy[name] = value
    if is_string(copy.get("text")):
        copy["text"] = mask(copy["text"])
    if "meta" in copy:
        copy["meta"] = _masked_value(copy["meta"], mask=mask)
    return copy


_READ_FIELDS: Final = ("type", "text", "meta", "usage")
"""A message's fields the checks read (:func:`vthread._jsvalue.field`)."""


def volatile_masked(messages: Any, mask_volatile: bool) -> Any:
    """``masked_thread(messages)`` when ``mask_volatile`` is True and ``messages`` is a
    sequence, else ``messages`` untouched (a bad thread is then named by the usual checks);
    a ``mask_volatile`` that is not a bool is a TypeError."""
    if (not flag("mask_volatile", mask_volatile)
            or isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence)):
        return messages
    return masked_native(messages)
