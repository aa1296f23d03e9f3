"""JavaScript value semantics that the production implementation relies on.

The production library compares values by their ``JSON.stringify`` text, measures strings in
UTF-16 code units and splits on JavaScript's ``\\s``. Python differs on all three (``1 != 1.0``
as text, key order, ``len("🎉") == 1``, ``"\\x1c".isspace()``), so every place that needs the
JavaScript answer goes through this module.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = [
    "JS_WHITESPACE",
    "UNSERIALIZABLE",
    "canonical",
    "js_ge_zero",
    "js_string_to_number",
    "utf16_len",
    "utf16_tail",
]

#: JavaScript's ``\s``: WhiteSpace plus LineTerminator. Python's ``str.isspace`` also accepts
#: U+001C-U+001F and U+0085, which JavaScript does not.
JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
JS_WHITESPACE_CLASS: Final = "[" + re.escape(JS_WHITESPACE) + "]"

#: Encoding of a value ``JSON.stringify`` would throw on (a cycle, a ``set``, ``bytes``, nesting
#: too deep). The reference turns such a value into a fixed marker, so all of them compare
#: equal to each other and to nothing else. ``!`` never starts another encoding.
UNSERIALIZABLE: Final = "!"

#: Deepest nesting encoded before a value counts as unserializable; V8's recursive
#: ``JSON.stringify`` overflows its stack a little beyond this on default settings.
MAX_DEPTH: Final = 10_000

_ARRAY_INDEX_LIMIT: Final = 4_294_967_294
_quote = json.JSONEncoder(ensure_ascii=True).encode  # lone surrogates escape distinctly


class _Unserializable(Exception):
    """Raised inside the encoder; never escapes this module."""


def _is_array_index(key: str) -> bool:
    return (
        key.isascii()
        and key.isdigit()
        and (key == "0" or key[0] != "0")
        and int(key) <= _ARRAY_INDEX_LIMIT
    )


def js_key_order(mapping: Mapping[Any, Any]) -> list[str]:
    """Keys in the order JavaScript enumerates them: array indices ascending, then the rest.

    Raises ``_Unserializable`` for a key that is not a ``str`` (JavaScript has none).
    """
    keys = list(mapping)
    indices: list[str] = []
    others: list[str] = []
    for key in keys:
        if type(key) is not str and not isinstance(key, str):
            raise _Unserializable
        if key[:1].isdigit() and _is_array_index(key):
            indices.append(key)
        else:
            others.append(key)
    if not indices:
        return others
    indices.sort(key=int)
    return indices + others


def _number(value: float | int) -> str:
    if type(value) is int or (isinstance(value, int) and not isinstance(value, bool)):
        try:
            value = float(value)  # JavaScript holds every number as a double
        except OverflowError:
            return "z"  # parses to Infinity, which JSON.stringify writes as null
    if value != value or value in (math.inf, -math.inf):
        return "z"
    if value == 0:
        return "n0"  # -0 and 0 both stringify as 0
    return "n" + repr(float(value))


def _scalar(value: Any, out: list[str]) -> bool:
    """Append the encoding of a non-container; False when ``value`` is a container."""
    if isinstance(value, str):
        out.append(_quote(str(value)))
    elif value is None:
        out.append("z")
    elif value is True:
        out.append("t")
    elif value is False:
        out.append("f")
    elif isinstance(value, (int, float)):
        out.append(_number(value))
    elif isinstance(value, (Mapping, list, tuple)):
        return False
    else:
        raise _Unserializable
    return True


def _encode(value: Any) -> str:
    """Iterative, so that deep nesting is bounded by MAX_DEPTH rather than Python's stack.

    Grammar: ``[`` (``,`` value)* ``]`` and ``{`` (``,`` key ``:`` value)* ``}``; every
    scalar is self-delimiting, so equal encodings mean equal values.
    """
    out: list[str] = []
    stack: list[tuple[Iterator[Any], int, bool]] = []
    active: set[int] = set()
    current: Any = value
    while True:
        if not _scalar(current, out):
            ident = id(current)
            if ident in active or len(stack) >= MAX_DEPTH:
                raise _Unserializable
            active.add(ident)
            if isinstance(current, Mapping):
                out.append("{")
                pairs = [(key, current[key]) for key in js_key_order(current)]
                stack.append((iter(pairs), ident, True))
            else:
                out.append("[")
                stack.append((iter(current), ident, False))
        while True:
            if not stack:
                return "".join(out)
            items, ident, is_object = stack[-1]
            element = next(items, _DONE)
            if element is not _DONE:
                break
            stack.pop()
            active.discard(ident)
            out.append("}" if is_object else "]")
        if is_object:
            key, current = element
            out.append("," + _quote(key) + ":")
        else:
            current = element
            out.append(",")


_DONE: Final = object()


def canonical(value: Any) -> str:
    """A text that is equal for two values exactly when their ``JSON.stringify`` texts are.

    Numbers compare as doubles (``1 == 1.0``, ``-0.0 == 0``, NaN and infinities as ``null``),
    object keys in JavaScript order, strings by content (lone surrogates included). A value
    that cannot be encoded gives :data:`UNSERIALIZABLE` instead of raising. O(size of value).

    >>> canonical({"b": 1, "1": 2.0}) == canonical({"1": 2, "b": 1.0})
    True
    """
    try:
        return _encode(value)
    except (_Unserializable, RecursionError, TypeError, ValueError):
        return UNSERIALIZABLE


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as JavaScript's ``.length``. O(n)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_tail(text: str, units: int) -> str:
    """``text.slice(-units)`` with JavaScript's UTF-16 indexing.

    A cut through a surrogate pair leaves the lone low surrogate, as JavaScript would.
    """
    if len(text) <= units // 2 or text.isascii():
        return text[-units:] if len(text) > units else text
    encoded = text.encode("utf-16-le", "surrogatepass")
    if len(encoded) <= 2 * units:
        return text
    return encoded[-2 * units :].decode("utf-16-le", "surrogatepass")


_DECIMAL_LITERAL: Final = re.compile(
    r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
)
_RADIX_LITERAL: Final = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


def js_string_to_number(text: str) -> float:
    """JavaScript's ``Number(text)`` for a string: NaN where JavaScript gives NaN."""
    body = text.strip(JS_WHITESPACE)
    if not body:
        return 0.0
    if _DECIMAL_LITERAL.fullmatch(body):
        sign = -1.0 if body[0] == "-" else 1.0
        if body.lstrip("+-") == "Infinity":
            return sign * math.inf
        return float(body)
    if _RADIX_LITERAL.fullmatch(body):
        return float(int(body[2:], {"x": 16, "o": 8, "b": 2}[body[1].lower()]))
    return math.nan


def _js_to_string_number(value: Any, depth: int = 0) -> float:
    """``Number(value)`` for the values JSON can hold, via ToPrimitive as JavaScript does."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        return js_string_to_number(value)
    if isinstance(value, (list, tuple)) and depth < 64:
        # Array.prototype.toString joins with ","; any two elements make the text non-numeric.
        if len(value) == 0:
            return 0.0
        if len(value) > 1:
            return math.nan
        (element,) = value
        if element is None:
            return 0.0
        if isinstance(element, bool) or isinstance(element, Mapping):
            return math.nan
        return _js_to_string_number(element, depth + 1)
    return math.nan  # "[object Object]" and anything else


def js_ge_zero(value: Any) -> bool:
    """JavaScript's ``value >= 0`` (``null``, booleans, numeric strings, ``[7]`` all qualify)."""
    number = _js_to_string_number(value)
    return number >= 0
