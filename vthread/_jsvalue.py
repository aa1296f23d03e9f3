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
from typing import Any, Final, cast

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

#: Encoding of a value ``JSON.stringify`` would throw on (a ``set``, ``bytes``, any non-JSON
#: object, a reference back into a cycle, nesting too deep). Such values compare equal to each
#: other and to nothing else: ``!`` never starts a JSON text. It replaces the offending part
#: only, so a tool call with a cyclic result still has its name: see docs/how-it-works.md.
UNSERIALIZABLE: Final = "!"

#: Deepest nesting encoded before a value counts as unserializable; V8's recursive
#: ``JSON.stringify`` overflows its stack a little beyond this on default settings.
MAX_DEPTH: Final = 10_000

_ARRAY_INDEX_LIMIT: Final = 4_294_967_294
_SAFE_INTEGER: Final = 2**53
_quote = json.JSONEncoder(ensure_ascii=True).encode  # lone surrogates escape distinctly
_plain_json = json.JSONEncoder(
    ensure_ascii=True, separators=(",", ":"), allow_nan=False
).encode

# The fast path trusts json's own text only when it is already the canonical text: no
# integral float (json writes "5.0", JavaScript's double is 5), no integer of 16 digits
# outside strings (beyond 2**53 JavaScript rounds it; NaN and the infinities already raise),
# and no key that looks like an array index. Other floats are written by json as by
# _number, with repr's shortest round-trip digits. Splitting on '"' finds what is outside
# strings at C speed unless a string holds an escaped quote, which then takes the slow
# path. Every test over-approximates, which costs only speed.
_LONG_INTEGER: Final = re.compile(r"[0-9]{16}")
_INTEGRAL_FLOAT: Final = re.compile(r"\.0(?![0-9])")
_INDEX_LIKE_KEY: Final = re.compile(r'"[0-9]+":')


def _is_array_index(key: str) -> bool:
    return (
        key.isascii()
        and key.isdigit()
        and (key == "0" or key[0] != "0")
        and int(key) <= _ARRAY_INDEX_LIMIT
    )


def _key_text(key: object) -> str | None:
    """A mapping key as a JavaScript property name (json's coercion of non-str keys), or
    None for a key no JSON object can have."""
    if isinstance(key, str):
        return str.__str__(key)  # content, not a subclass's __str__
    if key is None:
        return "null"
    if key is True:
        return "true"
    if key is False:
        return "false"
    if isinstance(key, int):
        return str(int(key))
    if isinstance(key, float):
        return repr(float(key))
    return None


def js_items(mapping: Mapping[Any, Any]) -> list[tuple[str | None, Any]]:
    """Items in the order JavaScript enumerates them: array indices ascending, then the rest.

    A key no JSON object can have comes back as None, in insertion order with the rest.
    """
    indices: list[tuple[int, str, Any]] = []
    others: list[tuple[str | None, Any]] = []
    for key, value in mapping.items():
        name = _key_text(key)
        if name is not None and name[:1].isdigit() and _is_array_index(name):
            indices.append((int(name), name, value))
        else:
            others.append((name, value))
    if not indices:
        return others
    indices.sort(key=lambda item: item[0])
    return [(name, value) for _, name, value in indices] + others


def _number(value: float | int) -> str:
    """JSON text of a number as JavaScript holds it: a double, NaN and infinities as null."""
    if isinstance(value, int):
        if -_SAFE_INTEGER < value < _SAFE_INTEGER:
            return str(int(value))
        try:
            value = float(value)
        except OverflowError:
            return "null"  # parses to Infinity, which JSON.stringify writes as null
    number = float(value)
    if number != number or number in (math.inf, -math.inf):
        return "null"
    if number.is_integer() and -_SAFE_INTEGER < number < _SAFE_INTEGER:
        return str(int(number))  # 1.0 and -0.0 are 1 and 0 to JavaScript
    return repr(number)


def _scalar(value: Any, out: list[str]) -> bool:
    """Append the encoding of a non-container; False when ``value`` is a container."""
    if isinstance(value, str):
        out.append(_quote(str.__str__(value)))  # content, not a subclass's __str__
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, (int, float)):
        out.append(_number(value))
    elif isinstance(value, (Mapping, list, tuple)):
        return False
    else:
        out.append(UNSERIALIZABLE)
    return True


def _encode(value: Any) -> str:
    """Compact JSON of the value as JavaScript sees it; iterative, so depth is bounded by
    MAX_DEPTH rather than by Python's stack. What cannot be encoded writes the marker in its
    place and the walk goes on."""
    out: list[str] = []
    stack: list[tuple[Iterator[Any], int, bool]] = []
    active: set[int] = set()
    current: Any = value
    while True:
        first = False
        if not _scalar(current, out):
            ident = id(current)
            if ident in active or len(stack) >= MAX_DEPTH:
                out.append(UNSERIALIZABLE)
            else:
                first = True
                active.add(ident)
                if isinstance(current, Mapping):
                    out.append("{")
                    stack.append((iter(js_items(current)), ident, True))
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
            first = False
        if not first:
            out.append(",")
        if is_object:
            key, current = cast("tuple[str | None, Any]", element)
            out.append(UNSERIALIZABLE + ":" if key is None else _quote(key) + ":")
        else:
            current = element


_DONE: Final = object()


def canonical(value: Any) -> str:
    """A text that is equal for two values exactly when their ``JSON.stringify`` texts are.

    It is the compact JSON of the value as JavaScript holds it: numbers as doubles (``1`` and
    ``1.0`` alike, ``-0.0`` as ``0``, NaN and infinities as ``null``), object keys in
    JavaScript's order, strings escaped to ASCII (so lone surrogates stay distinct and a
    surrogate pair equals its code point). Where ``JSON.stringify`` would throw (a cycle, a
    ``set``, ``bytes``, nesting deeper than 10,000) the part that cannot be encoded is written
    as :data:`UNSERIALIZABLE` and the rest as usual; it never raises. O(size of value); plain
    JSON data takes a fast path through the C encoder.

    >>> canonical({"b": 1, "1": 2.0}) == canonical({"1": 2, "b": 1.0})
    True
    """
    return canonical_from_json(value, plain_json(value))


def plain_json(value: Any) -> str | None:
    """Python's own compact JSON of ``value`` (C speed), None when it cannot write it."""
    try:
        return _plain_json(value)
    except (TypeError, ValueError, RecursionError):
        return None


def canonical_from_json(value: Any, text: str | None) -> str:
    """:func:`canonical`, given ``text = plain_json(value)`` already computed."""
    if text is not None and '\\"' not in text:
        outside = "".join(text.split('"')[0::2])
        if not (
            _INTEGRAL_FLOAT.search(outside)
            or _LONG_INTEGER.search(outside)
            or _INDEX_LIKE_KEY.search(text)
        ):
            return text
    return _encode(value)


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as JavaScript's ``.length``. O(n)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_tail(text: str, units: int) -> str:
    """``text.slice(-units)`` with JavaScript's UTF-16 indexing. O(units), whatever the length.

    A cut through a surrogate pair leaves the lone low surrogate, as JavaScript would.
    """
    if len(text) <= units // 2:
        return text
    # The last `units` code points hold at least `units` UTF-16 units: encode only those.
    window = text[-units:]
    if window.isascii():
        return window
    encoded = window.encode("utf-16-le", "surrogatepass")
    if len(encoded) <= 2 * units:
        return window
    return encoded[-2 * units :].decode("utf-16-le", "surrogatepass")


# "[0-9]+(?:\.[0-9]*)?", not the equal "[0-9]+\.?[0-9]*": two adjacent runs of digits split a
# long digit string every possible way before a fullmatch fails (20,000 digits took 8 s).
_DECIMAL_LITERAL: Final = re.compile(
    r"[+-]?(?:Infinity|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
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
        if isinstance(element, (bool, Mapping)):
            return math.nan
        return _js_to_string_number(element, depth + 1)
    return math.nan  # "[object Object]" and anything else


def js_ge_zero(value: Any) -> bool:
    """JavaScript's ``value >= 0`` (``null``, booleans, numeric strings, ``[7]`` all qualify)."""
    number = _js_to_string_number(value)
    return number >= 0
