"""JavaScript value semantics that the production implementation relies on.

The production library compares values by their ``JSON.stringify`` text, measures strings in
UTF-16 code units and splits on JavaScript's ``\\s``. Python differs on all three (``1 != 1.0``
as text, key order, ``len("🎉") == 1``, ``"\\x1c".isspace()``), so every place that needs the
JavaScript answer goes through this module.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import json
import math
import numbers
import re
import sys
from collections.abc import Collection, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    import pickle

    from typing_extensions import TypeIs


def numpy_if_imported() -> ModuleType | None:
    """NumPy if some module has imported it: only then can a value be one of its types (this
    module is imported by the guard, which does without NumPy)."""
    return sys.modules.get("numpy")


def _boolean(value: object) -> bool:
    """Whether ``value`` is a boolean, Python's or NumPy's (a boolean to JavaScript, never a
    number, although Python's ``bool`` is an ``int``)."""
    np = numpy_if_imported()
    return isinstance(value, bool) or (np is not None and isinstance(value, np.bool_))


__all__ = [
    "JS_WHITESPACE",
    "UNSERIALIZABLE",
    "Opaque",
    "canonical",
    "is_string",
    "js_double",
    "js_ge_zero",
    "js_string",
    "js_string_to_number",
    "opaque",
    "real_number",
    "stand_in",
    "text_in",
    "unicode_text",
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

#: Encoding of a value ``JSON.stringify`` throws on: one holding a reference back into a
#: cycle, or nesting too deep. The whole value is the marker (the production code compares
#: such values by its fallback text, ``"[unserializable]"``), so all of them compare equal to
#: each other and to nothing else: ``!`` never starts a JSON text. A value of a message is
#: encoded on its own (``type``, ``text``, ``meta``; a tool call's name, arguments and
#: result), so a cyclic result leaves its call's name as it is. A value holding a Python value
#: JSON has no form for (a ``set``, ``bytes``, any other object: its :class:`Opaque`
#: stand-in) is the marker whole too, as the production library compares it ("[unserializable]").
UNSERIALIZABLE: Final = "!"

#: Deepest nesting encoded before a value counts as unserializable, as ``JSON.stringify``
#: throws (a RangeError the production code catches) when its recursion runs out of stack.
#: Node 20 (where the production code runs) throws past 4,184 levels when called from the
#: top of its stack and a little sooner from deeper (4,164 from 50 frames down), the same
#: for arrays and objects; 4,160 stands for a call from within a program. A value nested
#: within those few levels of the limit may go either way in production too.
MAX_DEPTH: Final = 4_160

_ARRAY_INDEX_LIMIT: Final = 4_294_967_294
_SAFE_INTEGER: Final = 2**53
_quote = json.JSONEncoder(ensure_ascii=True).encode  # lone surrogates escape distinctly
_plain_json = json.JSONEncoder(
    ensure_ascii=True, separators=(",", ":"), allow_nan=False
).encode

# The fast path trusts json's own text only when it is already the canonical text: no
# integral float (json writes "5.0", JavaScript's double is 5), no integer of 16 digits
# outside strings (beyond 2**53 JavaScript rounds it; NaN and the infinities already raise),
# no key that looks like an array index, and no two keys that may be one property name to
# JavaScript (see _COERCIBLE_KEY, _SURROGATE_KEY). Other floats are written by json as by
# _number, with repr's shortest round-trip digits. Splitting on '"' finds what is outside
# strings at C speed unless a string holds an escaped quote, which then takes the slow
# path. Every test over-approximates, which costs only speed. And no object of the text may
# name a key twice: a dict can hold two keys json writes alike (str subclasses whose own
# __eq__ tells them apart, or a dict subclass whose items() repeats a key), which JavaScript
# reads as one property, as the walk merges them (_keys_unrepeated).
_LONG_INTEGER: Final = re.compile(r"[0-9]{16}")
_INTEGRAL_FLOAT: Final = re.compile(r"\.0(?![0-9])")
# A key that may be an array index, or the name json gave a key that is no str (an int, a
# finite float, true, false, null), which another key of the same object may also be
# ({1: 0, "1": 1}). A NaN or infinite float key never reaches this test: allow_nan=False
# makes json raise, and the walk names it. One character class rather than alternatives,
# for speed: it also takes a few other keys, which costs only speed.
_COERCIBLE_KEY: Final = re.compile(r'"[-0-9tfn][-+.0-9eruals]*":')
# A key holding a surrogate escape: an astral character and its surrogate pair held as two
# code points are written alike, and are one property to JavaScript.
# Atomic and possessive, so a long string of many such escapes is read once: O(n).
_SURROGATE_KEY: Final = re.compile(r'"(?>[^"]*?\\u[dD][89a-fA-F])[^"]*+":')


class Opaque:
    """A Python value JSON has no form for, as its type and value: ``module.qualname:repr``,
    or for a ``set``/``frozenset`` its type and its elements' sorted canonical texts. The
    encoders (:func:`canonical`, the core's) make the whole value holding one the marker
    (:data:`UNSERIALIZABLE`), as production compares it; the text is what ``scan_arrow``
    writes for such a value in a table's cell, which it reads as JSON."""

    __slots__ = ("encoded",)

    def __init__(self, text: str) -> None:
        self.encoded: Final = UNSERIALIZABLE + _quote(text)

    def __repr__(self) -> str:
        return f"Opaque({self.encoded[1:]})"


def _type_tag(value: object) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def opaque(value: object) -> Opaque:
    """``value`` by its type and value (see :class:`Opaque`). A ``repr`` that raises is
    replaced by the object's identity, which still tells it from every other live object."""
    if isinstance(value, (set, frozenset)):
        return Opaque(_type_tag(value) + "{" + ",".join(sorted(map(canonical, value))) + "}")
    try:
        np = numpy_if_imported()
        if np is not None and isinstance(value, np.ndarray):
            with np.printoptions(threshold=sys.maxsize):  # every element, not "..."
                text = repr(value)
        else:
            text = repr(value)
    except Exception:
        text = f"<unrepresentable at {id(value):#x}>"
    return Opaque(f"{_type_tag(value)}:{str.__str__(text)}")


def js_double(number: int | float) -> float:
    """The double JavaScript holds for a real number: an integer past the doubles is an
    infinity (``JSON.parse`` reads its text so), where Python's ``float`` raises.

    >>> js_double(7), js_double(-(10**400))
    (7.0, -inf)
    """
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def is_string(value: object) -> TypeIs[str]:
    """Whether ``value`` is a ``str`` (or subclass) by its type, as the compiled core tells
    one, not by a ``__class__`` it claims (``isinstance`` believes a mock "spec"ed as a
    ``str``, whose content ``str.__str__`` then cannot read).

    >>> from unittest import mock
    >>> is_string("a"), is_string(mock.Mock(spec=str)), isinstance(mock.Mock(spec=str), str)
    (True, False, True)
    """
    return issubclass(type(value), str)


ABSENT_FIELD: Final = object()
"""What :func:`field` gives for a field a mapping does not hold (absent is not ``None``)."""


def field(mapping: Mapping[Any, Any], name: str) -> Any:
    """``mapping``'s field ``name``, read as the core reads a field: with the mapping's own
    ``get`` (a dict subclass's ``dict.get``, which never calls ``__missing__``), or, for a
    ``get`` of its own that takes no default, with ``[]`` (a ``KeyError`` meaning absent);
    :data:`ABSENT_FIELD` when absent. The readers that tell an absent field from ``null``
    use it, and the others ``get(name)``, so that a mapping whose ``get`` and ``[]``
    disagree is read one way everywhere."""
    try:
        return mapping.get(name, ABSENT_FIELD)
    except TypeError:
        try:
            return mapping[name]
        except KeyError:
            return ABSENT_FIELD


def text_in(value: object, names: Collection[str]) -> bool:
    """Whether ``value`` is a string, by its content, that is one of ``names``: a list or
    object (unhashable) is none of them where ``in`` would raise, and a ``str`` subclass's
    own ``__eq__`` or ``__hash__`` is never asked.

    >>> text_in("user", ("user", "bot")), text_in(["user"], frozenset({"user"}))
    (True, False)
    """
    if type(value) is str:
        return value in names
    return is_string(value) and str.__str__(value) in names


def real_number(value: object) -> int | float | None:
    """``value`` as a Python number when it is a real number of any type (``int``, ``float``,
    NumPy's integers and floats, ``Decimal``, ``Fraction``, any ``numbers.Real``), else None.

    Booleans (Python's and NumPy's) are not numbers here, as JavaScript's ``true`` is not
    ``1``. Integers stay exact (JavaScript's rounding to a double is the encoder's); a value
    too large for a double is an infinity; a ``Decimal`` NaN, signalling or not, is NaN.

    >>> import numpy as np
    >>> real_number(np.int64(7)), real_number(decimal.Decimal("2.5")), real_number(True)
    (7, 2.5, None)
    """
    kind = type(value)
    if kind is float or kind is int:
        return cast("int | float", value)  # the usual cases, by exact class
    if _boolean(value):
        return None
    # A subclass of int or float is the number it holds, as json and the compiled core read
    # it: not what its own __int__, __index__ or __float__ says. By its type, not
    # isinstance, which believes an object's __class__ (a mock "spec"ed as a float is no
    # float, and reading it as one gave the core that object back for ever).
    if issubclass(kind, int):
        return int.__int__(cast("int", value))
    if issubclass(kind, float):
        return float.__float__(cast("float", value))
    np = numpy_if_imported()
    if np is not None and isinstance(value, np.integer):
        return int(value)
    if not isinstance(value, (numbers.Real, decimal.Decimal)):
        return None
    if isinstance(value, decimal.Decimal) and value.is_nan():
        return math.nan
    try:
        return float(value)
    except OverflowError:  # a Fraction beyond the doubles
        return math.inf if cast("Any", value) > 0 else -math.inf
    except (TypeError, ValueError, ArithmeticError):
        return None  # a Real whose float() is broken: compared as an opaque value


_EPOCH: Final = datetime.datetime(1970, 1, 1)
_MICROSECOND: Final = datetime.timedelta(microseconds=1)


def js_date_text(value: datetime.date) -> str:
    """JavaScript's ``Date.prototype.toJSON`` of the instant: ``YYYY-MM-DDTHH:MM:SS.sssZ``.

    A naive datetime is read as UTC, an aware one converted to UTC; a ``date`` is its
    midnight in UTC; microseconds are cut to milliseconds (a JavaScript Date holds no
    finer). Years 0 and 10000, which an offset can reach, are written as JavaScript does
    (``0000``, ``+010000``).

    >>> js_date_text(datetime.datetime(2024, 5, 6, 7, 8, 9, 123456))
    '2024-05-06T07:08:09.123Z'
    """
    if isinstance(value, datetime.datetime):
        offset = value.utcoffset() or datetime.timedelta(0)
        naive = value.replace(tzinfo=None)
    else:
        offset = datetime.timedelta(0)
        naive = datetime.datetime(value.year, value.month, value.day)
    micros = (naive - _EPOCH) // _MICROSECOND - offset // _MICROSECOND
    millis = micros // 1000
    days, in_day = divmod(millis, 86_400_000)
    year, month, day = _civil_from_days(days)
    seconds, milli = divmod(in_day, 1000)
    sign = "" if 0 <= year <= 9999 else "+" if year > 0 else "-"
    year_text = f"{sign}{abs(year):0{6 if sign else 4}d}"
    return (
        f"{year_text}-{month:02d}-{day:02d}T{seconds // 3600:02d}:{seconds // 60 % 60:02d}"
        f":{seconds % 60:02d}.{milli:03d}Z"
    )


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) ``days`` after 1970-01-01 (H. Hinnant)."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524
                   - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    year = year_of_era + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


_EXACT_JSON: Final = frozenset({list, str, int, float, bool, type(None)})
"""The exact types a stand-in may be: the compiled core refuses any other (a stand-in is
read as a JSON value, and one that is none would be stood in for again, without end)."""


def stand_in(value: object) -> Any:
    """The JSON value a Python value without a JSON form is compared as (see the table in
    docs/api.md, "How values are compared"): a real number as that number, a NumPy boolean
    as a boolean, a ``datetime``/``date`` as ``Date.toJSON``'s text, a NumPy array of
    booleans, numbers, strings or objects as its nested list, anything else as an
    :class:`Opaque` value (which the encoders read as "no JSON form": the whole value
    holding it is the marker; ``scan_arrow`` writes its text).

    Called only for values that are not ``str``, ``None``, ``bool``, ``int``, ``float``,
    ``list``, ``tuple`` or mappings; the compiled core calls it for the same values.

    >>> import numpy as np
    >>> stand_in(np.float32(0.5)), stand_in(np.bool_(True)), stand_in(b"x")
    (0.5, True, Opaque("builtins.bytes:b'x'"))
    """
    if _boolean(value):
        return bool(value)
    number = real_number(value)
    if number is not None:
        return number
    if isinstance(value, datetime.date):
        try:
            if value != value:
                # pandas' NaT (a datetime equal to nothing, itself included): no instant, as
                # JavaScript's Invalid Date, whose toJSON is null.
                return None
            return js_date_text(value)
        except Exception:
            # A date whose offset or fields cannot be read (a subclass's own code raised):
            # compared by what it is, as any other value without a JSON form.
            return opaque(value)
    np = numpy_if_imported()
    # (an object array is how pandas and pyarrow hand out a cell of strings or lists: read
    # as its list, its elements each compared as they are, not as one of no JSON form)
    if np is not None and isinstance(value, np.ndarray) and value.dtype.kind in "biufUSO":
        listed = value.tolist()
        if type(listed) in _EXACT_JSON:  # (a 0-d array's is a scalar, bytes for dtype S)
            return listed
    return opaque(value)


def _is_array_index(key: str) -> bool:
    return (
        len(key) <= 10  # int() of a longer digit string may exceed Python's digit limit
        and key.isascii()
        and key.isdigit()
        and (key == "0" or key[0] != "0")
        and int(key) <= _ARRAY_INDEX_LIMIT
    )


def int_text(value: int) -> str:
    """The decimal text of an ``int``'s value (of a subclass too, as ``json`` writes it: never
    through the subclass's own ``__int__``), beyond Python's 4,300-digit limit on converting
    an int to text too (``Decimal`` converts an int exactly and prints it without the limit).

    >>> len(int_text(10**5000))
    5001
    """
    number = int.__index__(value)
    if -_SAFE_INTEGER < number < _SAFE_INTEGER:
        return str(number)
    return str(decimal.Decimal(number))


def _key_text(key: object) -> str | None:
    """A mapping key as a JavaScript property name (json's coercion of non-str keys), or
    None for a key no JSON object can have."""
    if is_string(key):
        return str.__str__(key)  # content, not a subclass's __str__
    if key is None:
        return "null"
    if key is True:
        return "true"
    if key is False:
        return "false"
    if issubclass(type(key), int):  # by type, as the core reads a key (not a __class__)
        return int_text(cast("int", key))
    if issubclass(type(key), float):
        # Its value, as json reads it, not a subclass's own.
        number = float.__float__(cast("float", key))
        if math.isfinite(number):
            return repr(number)
        return "NaN" if number != number else "Infinity" if number > 0 else "-Infinity"
    return None


def property_name(key: object) -> str | None:
    """A mapping key as the JavaScript property name ``JSON.parse`` makes of what
    ``json.dumps`` writes of it, in the one Python form of its string (:func:`js_string`):
    ``1`` and ``"1"``, ``True`` and ``"true"``, a surrogate pair and its astral character are
    one name. None for a key no JSON object can have.

    >>> property_name(1) == property_name("1"), property_name(True), property_name((1,))
    (True, 'true', None)
    """
    name = _key_text(key)
    return None if name is None else js_string(name)


def js_items(mapping: Mapping[Any, Any]) -> list[tuple[str | Opaque, Any]]:
    """Items in the order JavaScript enumerates them: array indices ascending, then the rest;
    keys that are one property name to JavaScript as one item (the first one's place, the
    last one's value, as ``JSON.parse`` keeps a repeated key).

    A key no JSON object can have comes back as its :func:`opaque` value, in insertion
    order with the rest.
    """
    # Keyed by property name: keys that are one name to JavaScript (1 and "1", a surrogate
    # pair and its astral character) are one member, at the first one's place with the last
    # one's value, as JSON.parse reads the object json.dumps writes of the mapping. An
    # Opaque hashes by identity: each such key is a member of its own.
    members: dict[str | Opaque, Any] = {}
    for key, value in mapping.items():
        name = property_name(key)
        members[opaque(key) if name is None else name] = value
    indices: list[tuple[int, str, Any]] = []
    others: list[tuple[str | Opaque, Any]] = []
    for member, value in members.items():
        if isinstance(member, str) and member[:1].isdigit() and _is_array_index(member):
            indices.append((int(member), member, value))
        else:
            others.append((member, value))
    if not indices:
        return others
    indices.sort(key=lambda item: item[0])
    return [(name, value) for _, name, value in indices] + others


def _number(value: float | int) -> str:
    """JSON text of a number as JavaScript holds it: a double, NaN and infinities as null."""
    kind = type(value)
    if kind is not int and kind is not float:
        # A subclass is the number it holds (as json and the core write it), not what its
        # own __int__ or __float__ says.
        value = (int.__int__(cast("int", value)) if issubclass(kind, int)
                 else float.__float__(value))
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
    """Append the encoding of a non-container; False when ``value`` is a container. Strings
    and numbers are told by their type, never by a ``__class__`` an object claims."""
    if issubclass(type(value), str):
        out.append(_quote(str.__str__(value)))  # content, not a subclass's __str__
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif issubclass(type(value), (int, float)):
        out.append(_number(value))
    elif isinstance(value, (Mapping, list, tuple)):
        return False
    else:
        raise AssertionError(f"{value!r} has no JSON form: stand_in it first")
    return True


def has_json_form(value: object) -> bool:
    return value is None or issubclass(type(value), (str, int, float, list, tuple)) or (
        isinstance(value, Mapping))


_PLAINLY_UNENCODABLE: Final = (set, frozenset, bytes, bytearray)
"""Values of no JSON form told by their type alone, as the core's ``plainly_unencodable``."""


def _encode(value: Any) -> str:
    """Compact JSON of the value as JavaScript sees it; iterative, so depth is bounded by
    MAX_DEPTH rather than by Python's stack. A value holding a reference back into a cycle,
    or nesting deeper than MAX_DEPTH, is the marker whole."""
    out: list[str] = []
    stack: list[tuple[Iterator[Any], int, bool]] = []
    active: set[int] = set()
    current: Any = value
    while True:
        first = False
        if not has_json_form(current):
            if isinstance(current, _PLAINLY_UNENCODABLE):
                return UNSERIALIZABLE  # (told without the opaque text stand_in would write)
            current = stand_in(current)
            if isinstance(current, Opaque):
                return UNSERIALIZABLE  # no JSON form: "[unserializable]" whole, as production
        if not _scalar(current, out):
            ident = id(current)
            if ident in active or len(stack) >= MAX_DEPTH:
                return UNSERIALIZABLE  # JSON.stringify throws on the whole value
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
            key, current = cast("tuple[str | Opaque, Any]", element)
            if isinstance(key, Opaque):
                return UNSERIALIZABLE  # a key no JSON object can have: no JSON form
            out.append(_quote(key) + ":")
        else:
            current = element


_DONE: Final = object()


def canonical(value: Any) -> str:
    """A text that is equal for two values exactly when their ``JSON.stringify`` texts are.

    It is the compact JSON of the value as JavaScript holds it: numbers as doubles (``1`` and
    ``1.0`` alike, ``-0.0`` as ``0``, NaN and infinities as ``null``), object keys in
    JavaScript's order, strings escaped to ASCII (so lone surrogates stay distinct and a
    surrogate pair equals its code point). Where ``JSON.stringify`` would throw (a cycle,
    nesting deeper than :data:`MAX_DEPTH`) the whole value is :data:`UNSERIALIZABLE`, and so
    it is for a value holding one of no JSON form (a ``set``, ``bytes``, any other object, a
    key such as a tuple: production's "[unserializable]"); a number of
    another type (NumPy's, ``Decimal``), a NumPy array and a date are written as their
    :func:`stand_in` (the number, the nested list, ``Date.toJSON``'s text). It never raises
    on account of the value's shape (only a mapping whose ``items()`` raises, or the like,
    propagates).
    O(size of value); plain JSON data takes a fast path through the C encoder.

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
    if text is not None and text.count("[") + text.count("{") > MAX_DEPTH:
        # Possibly nested past MAX_DEPTH (json's own limit is the recursion limit, which a
        # program may raise): the walk that counts the depth decides.
        return _encode(value)
    if text is not None and '\\"' not in text:
        outside = "".join(text.split('"')[0::2])
        if not (
            _INTEGRAL_FLOAT.search(outside)
            or _LONG_INTEGER.search(outside)
            or _COERCIBLE_KEY.search(text)
            or ("\\ud" in text and _SURROGATE_KEY.search(text))
        ) and ("{" not in outside or _keys_unrepeated(value, text)):
            return text
    return _encode(value)


class _RepeatedKeyError(Exception):
    """An object of a JSON text names one key twice."""


def _no_repeated_key(pairs: list[tuple[str, Any]]) -> None:
    if len(pairs) > 1 and len(dict(pairs)) != len(pairs):
        raise _RepeatedKeyError
    # None: the check needs no value read back, and building none is cheaper.


_check_keys = json.JSONDecoder(object_pairs_hook=_no_repeated_key).decode


class _NotExactError(Exception):
    """A value holds an object of no exact built-in type."""


@functools.cache
def _exact_only_pickler() -> type[pickle.Pickler]:
    """A pickler that refuses every object of no exact built-in type: the C pickler writes
    an exact ``dict``, ``list``, ``tuple``, ``str``, ``int``, ``float``, ``bool`` or None
    itself and asks ``reducer_override`` of any other object, a subclass of those included,
    whatever else it is (a subclass exporting a buffer, which marshal writes as bytes).
    Made at first use: ``vthread guard`` loads this module and never pickles."""
    import pickle

    class ExactOnly(pickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            raise _NotExactError

    return ExactOnly


_picklers: Any = None  # a threading.local: one pickler (and its sink) a thread, made once


def _of_exact_builtins(value: Any) -> bool:
    """Whether ``value`` and all it holds are of exact built-in types (no subclass), told at
    C speed. False too for a value nested deeper than the pickler goes."""
    global _picklers
    if _picklers is None:
        import threading

        _picklers = threading.local()
    made: tuple[io.BytesIO, pickle.Pickler] | None = getattr(_picklers, "made", None)
    if made is None:
        sink = io.BytesIO()
        made = _picklers.made = (sink, _exact_only_pickler()(sink, protocol=5))
    sink, pickler = made
    pickler.clear_memo()
    try:
        pickler.dump(value)
    except (_NotExactError, RecursionError):
        return False
    finally:
        sink.seek(0)
        sink.truncate()
    return True


def _keys_unrepeated(value: Any, text: str) -> bool:
    """Whether no object of ``text``, the JSON of ``value``, names a key twice."""
    if _of_exact_builtins(value):
        # Every dict is an exact dict, whose exact str keys differ; keys json may coerce
        # alike were screened by _COERCIBLE_KEY.
        return True
    try:
        _check_keys(text)
    except (_RepeatedKeyError, RecursionError):  # RecursionError: deeper than json reads here
        return False
    return True


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def names_are_distinct(value: Any, text: str) -> bool:
    """Whether each dict of ``value``, which json wrote as ``text`` (ASCII or not), has
    keys that are distinct property names to JavaScript, told without a walk in Python: no
    key json named from a number, true, false or null (nor any key that looks so, see
    _COERCIBLE_KEY), no surrogate anywhere (a pair and its astral character are one name),
    so that a key's name is its text, and no object of the text naming a key twice. A False
    may be needless (it costs a walk); a True never is."""
    return not (_COERCIBLE_KEY.search(text) or "\\ud" in text or _SURROGATE.search(text)
                ) and _keys_unrepeated(value, text)


def is_text(value: object, text: str) -> bool:
    r"""Whether ``value`` is a string JavaScript's ``===`` calls equal to ``text``: compared
    by content (a ``str`` subclass's own ``__eq__`` is never asked, as the cycle functions
    never ask it), a surrogate pair equal to its astral character.

    >>> class Odd(str):
    ...     def __eq__(self, other): return True
    ...     __hash__ = str.__hash__
    >>> is_text(Odd("user"), "system"), is_text("\ud83c\udf89", "\U0001f389"), is_text(1, "1")
    (False, True, False)
    """
    if not is_string(value):
        return False
    if str.__eq__(value, text) is True:
        return True
    # The same characters written otherwise only where a surrogate pair may be, which an
    # ASCII value holds none of (nor can equal a text holding one).
    return not value.isascii() and js_string(str.__str__(value)) == js_string(
        str.__str__(text))


def js_string(text: str) -> str:
    r"""``text`` as the one Python form of its JavaScript string: each surrogate pair held as
    two code points made the astral character it stands for (a lone surrogate kept), so that
    two strings JavaScript calls equal are equal, hash alike and key one dict entry.

    ``text`` itself when it holds no surrogate, which two cheap scans tell (C speed).

    >>> js_string("\ud83c\udf89") == "\U0001f389", js_string("ok")
    (True, 'ok')
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as JavaScript's ``.length``. O(n)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_tail(text: str, units: int) -> str:
    """``text.slice(-units)`` with JavaScript's UTF-16 indexing. O(units), whatever the length.

    A cut through a surrogate pair leaves the lone low surrogate, as JavaScript would. A
    ``str`` subclass is read by its content (its own ``__len__`` or slicing may lie).
    """
    if type(text) is not str:
        text = str.__str__(text)
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


def unicode_text(text: str) -> str:
    r"""``text`` as Unicode text a UTF-8 file or an Arrow string holds: a surrogate pair its
    astral character, a lone surrogate U+FFFD.

    >>> unicode_text("a\ud800b"), unicode_text("\ud83c\udf89") == "\U0001f389"
    ('a�b', True)
    """
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


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
        try:
            return float(int(body[2:], {"x": 16, "o": 8, "b": 2}[body[1].lower()]))
        except OverflowError:  # (past the doubles: JavaScript's Infinity, as float("1e400"))
            return math.inf
    return math.nan


def _js_to_string_number(value: Any) -> float:
    """``Number(value)`` for the values JSON can hold, via ToPrimitive as JavaScript does;
    a real number of another type (NumPy's, ``Decimal``) as the number it is. An array of
    one element is that element's text however deeply nested (``[[...[7]...]]`` is 7: a
    cap of 64 levels read deeper ones as NaN), walked iteratively; an array holding itself
    is the empty text, as ``Array.prototype.join`` writes a cycle (0)."""
    seen: set[int] = set()
    while True:
        if value is None:
            return 0.0
        if _boolean(value):
            return 1.0 if value else 0.0
        number = real_number(value)
        if number is not None:
            return js_double(number)
        if is_string(value):
            return js_string_to_number(str.__str__(value))
        if not isinstance(value, (list, tuple)):
            return math.nan  # "[object Object]" and anything else
        # Array.prototype.toString joins with ","; any two elements make the text non-numeric.
        if len(value) == 0 or id(value) in seen:
            return 0.0
        if len(value) > 1:
            return math.nan
        seen.add(id(value))
        (element,) = value
        if element is None:
            return 0.0
        if _boolean(element) or isinstance(element, Mapping):
            return math.nan  # "true", "[object Object]"
        value = element


def js_ge_zero(value: Any) -> bool:
    """JavaScript's ``value >= 0`` (``null``, booleans, numeric strings, ``[7]`` all qualify)."""
    number = _js_to_string_number(value)
    return number >= 0
