"""Stable 64-bit fingerprints: xxh3 of the canonical (JavaScript-equal) encoding.

Two values get the same fingerprint when the production implementation would call them
equal (``1`` and ``1.0``, reordered array-index keys, a surrogate pair and its code point).
Unlike CPython's ``hash``, the value is the same in every process and on every machine, so
fingerprints can be stored, compared across runs and used to group loops across threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import xxhash

from vthread import _core
from vthread._jsvalue import ABSENT_FIELD, field

__all__ = ["fingerprint", "message_fingerprint"]

_ABSENT_META: Final = b"-"  # never a JSON text, so "no meta" differs from every meta


def fingerprint(value: Any) -> int:
    """The unsigned 64-bit xxh3 fingerprint of ``value``'s canonical encoding. O(size).

    Made by the compiled core, equal to ``xxh3_64(canonical(value))`` (property-tested).

    >>> fingerprint({"b": 1, "1": 2.0}) == fingerprint({"1": 2, "b": 1})
    True
    """
    return _core.fingerprint(value)


def message_fingerprint(message: Mapping[str, Any]) -> int:
    """Fingerprint of a message as the suffix heuristic compares it: (type, text, meta).

    An absent type or text counts as null; an absent meta differs from a null one. The
    canonical texts are written by the compiled core, equal to ``_jsvalue.canonical``'s
    (property-tested). A chat message (a ``role`` and no ``type`` or ``text``) is warned
    of: it has none of the three, so every such message has one fingerprint.

    >>> message_fingerprint({"type": "bot", "text": "hi"}) == message_fingerprint(
    ...     {"text": "hi", "type": "bot", "usage": {"tokens": 3}})
    True
    """
    if not isinstance(message, Mapping):
        raise TypeError(f"message must be a mapping, got {type(message).__name__}")
    # (a dict's keys asked, no mapping's own code run; a native message's: one lookup)
    if type(message) is dict and "role" in message and "type" not in message and (
            "text" not in message):
        import warnings

        warnings.warn(
            'the message has a "role" and no "type" or "text" (a chat message): its '
            "fingerprint is of its type, text and meta alone, so it is every such "
            "message's; translate them with vthread.adapters.to_native(messages, format) "
            "first", stacklevel=2)
    return message_print(message)


def message_print(message: Mapping[str, Any]) -> int:
    """:func:`message_fingerprint` of a native message, as the engine takes it (no check,
    no warning: its messages are native, or warned of once for their thread)."""
    return xxhash.xxh3_64_intdigest(message_key(message))


def message_key(message: Mapping[str, Any]) -> bytes:
    """The bytes the suffix heuristic compares a message by: :func:`exact_key` of its type,
    text and meta (equal exactly when the messages are equal)."""
    return exact_key(message.get("type"), message.get("text"), message)


def exact_key(kind: Any, text: Any, message: Mapping[str, Any]) -> bytes:
    """(``kind``, ``text``, ``message``'s meta or its absence), each part encoded on its own
    (a meta holding a cycle is the marker while the type and text stay themselves) and
    joined by NUL, which no canonical text holds; an absent meta is ``-``, which none is."""
    meta = field(message, "meta")
    meta = _ABSENT_META if meta is ABSENT_FIELD else _core.canonical(meta)
    return b"\x00".join((_core.canonical(kind), _core.canonical(text), meta))
