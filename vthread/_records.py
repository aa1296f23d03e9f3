"""How ``vthread scan`` writes JSON: strict JSON only, and an id of any shape in bounded form.

Every record and the ``--summary`` file are strict JSON (RFC 8259): no ``NaN``, ``Infinity``
or ``-Infinity``, which Python's ``json`` writes by default and strict parsers reject. A
record's ``"id"`` is the input's id as JSON writes it when that id is a string, a finite
number, a boolean or null. Any other id (an array, an object, ``NaN``, an infinity, such as
``1e400`` and ``10**400`` read as in JavaScript) is written as a *string*: its compact JSON
text, cut to its first :data:`ID_TEXT_LIMIT` characters followed by ``...`` when longer.
That text is made without recursion, so an id nested a thousand levels deep costs the
same as a flat one and never exhausts Python's recursion limit.

>>> record_id("t1"), record_id(7), record_id([1, {"a": None}]), record_id(float("nan"))
('"t1"', '7', '"[1,{\\\\"a\\\\":null}]"', '"NaN"')
>>> record_id(10**400), record_id([-(10**5000)])  # past the doubles: infinities
('"Infinity"', '"[-Infinity]"')
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any, Final

from vthread._jsvalue import js_double

__all__ = ["ID_TEXT_LIMIT", "json_text", "record_id", "strict_dumps"]

ID_TEXT_LIMIT: Final = 256
"""Most characters of an id written as its JSON text (before the ``...`` that marks a cut)."""
_CUT: Final = "..."


class _Raw(str):
    """A piece of JSON text (punctuation, a key) among the values still to be written."""

    __slots__ = ()


_COMMA: Final = _Raw(",")
_CLOSE_ARRAY: Final = _Raw("]")
_CLOSE_OBJECT: Final = _Raw("}")
_DONE: Final = object()


def strict_dumps(value: Any) -> str:
    """``value`` as compact, ASCII-only, strict JSON (``ValueError`` on a NaN or infinity)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def record_id(value: Any) -> str:
    """The JSON text of a record's ``"id"`` field for the input id ``value``. O(limit)."""
    kind = type(value)
    if kind is int:
        double = js_double(value)
        if math.isfinite(double):
            return str(value)
        value, kind = double, float  # past the doubles: the infinity JSON.parse reads
    if value is None or kind is str or kind is bool:
        return strict_dumps(value)
    if kind is float and math.isfinite(value):
        return strict_dumps(value)
    text = json_text(value, ID_TEXT_LIMIT)
    return strict_dumps(text)


def json_text(value: Any, limit: int | None = None, *, ensure_ascii: bool = False) -> str:
    """Compact JSON text of ``value`` as ``json.dumps(value, separators=(",", ":"))`` writes
    it (``NaN`` and the infinities included; an integer past the doubles as the infinity
    ``JSON.parse`` reads it as), without recursion; cut to ``limit`` characters
    plus ``...`` when longer. O(length written): a huge container is read only as far as
    the limit."""
    parts: list[str] = []
    size = 0
    for piece in _pieces(value, ensure_ascii):
        parts.append(piece)
        size += len(piece)
        if limit is not None and size > limit:
            return "".join(parts)[:limit] + _CUT
    return "".join(parts)


def _pieces(value: Any, ensure_ascii: bool) -> Iterator[str]:
    """The JSON text of ``value`` piece by piece; open containers wait on an explicit stack."""
    stack: list[Iterator[Any]] = [iter((value,))]
    while stack:
        item: Any = next(stack[-1], _DONE)
        kind = type(item)
        if item is _DONE:
            stack.pop()
        elif kind is _Raw:
            yield item
        elif kind is list or kind is tuple:
            yield "["
            stack.append(_array_items(item))
        elif kind is dict:
            yield "{"
            stack.append(_object_items(item, ensure_ascii))
        elif kind is int:
            double = js_double(item)  # an integer past the doubles: an infinity
            yield json.dumps(item if math.isfinite(double) else double)
        elif item is None or kind is bool or kind is float or kind is str:
            yield json.dumps(item, ensure_ascii=ensure_ascii)
        else:  # not a JSON value (parsed JSON holds none): its repr, as a string
            yield json.dumps(repr(item), ensure_ascii=ensure_ascii)


def _array_items(items: list[Any] | tuple[Any, ...]) -> Iterator[Any]:
    for index, item in enumerate(items):
        if index:
            yield _COMMA
        yield item
    yield _CLOSE_ARRAY


def _object_items(members: dict[Any, Any], ensure_ascii: bool) -> Iterator[Any]:
    for index, (key, item) in enumerate(members.items()):
        name = key if type(key) is str else str(key)
        yield _Raw(("," if index else "") + json.dumps(name, ensure_ascii=ensure_ascii) + ":")
        yield item
    yield _CLOSE_OBJECT
