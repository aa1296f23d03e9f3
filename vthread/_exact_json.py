"""JSON text read exactly as ``json.loads`` reads it, by orjson where that gives the same.

orjson (``pip install vthread[fast]``) parses several times faster than the standard module
and agrees with it on every value but one: an integer beyond 64 bits, which orjson rounds to
a float. Such an integer needs 19 or more digits in a row, so text without such a run is
given to orjson, and everything orjson rejects (``NaN``, lone surrogates, ...) to ``json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final

import numpy as np

try:
    import orjson
except ImportError:  # pragma: no cover - exercised only without the optional dependency
    fast_loads: Callable[[bytes], Any] | None = None
else:
    fast_loads = orjson.loads

__all__ = ["fast_loads", "loads_exactly", "loads_without_digit_limit", "long_digit_lines",
           "suspect_lines"]


def loads_exactly(text: bytes, long_digits: bool | None = None) -> Any:
    """``json.loads(text)``'s value (and its errors), by orjson when that is the same.
    ``long_digits``: whether ``text`` holds a run of 19 digits, when the caller has looked
    for such runs over many texts at once (see :func:`suspect_lines`); None looks here."""
    if long_digits is None:
        long_digits = bool(long_digit_lines([text]))
    if fast_loads is not None and not long_digits:
        try:
            return fast_loads(text)
        except ValueError:
            pass  # orjson rejects it: the standard module decides
    return loads_without_digit_limit(text)


def loads_without_digit_limit(text: bytes | str) -> Any:
    """``json.loads(text)``, but an integer of more digits than Python converts (4,300) is
    read as the infinity ``JSON.parse`` reads it as (past the doubles, it compares as null
    does) rather than failing the line; its digits are never converted, which would cost
    time quadratic in their number."""
    try:
        return json.loads(text)
    except ValueError as error:
        if "integer string conversion" not in str(error):
            raise
    return json.loads(text, parse_int=_int_or_infinity)


def _int_or_infinity(digits: str) -> int | float:
    try:
        return int(digits)
    except ValueError:  # past the digit limit (at least 640 digits): past the doubles too
        return -math.inf if digits.startswith("-") else math.inf


def suspect_lines(lines: list[bytes]) -> frozenset[int]:
    """Indexes of the ``lines`` orjson could read otherwise than json (see
    :func:`long_digit_lines`); none without orjson, which is then never asked."""
    return long_digit_lines(lines) if fast_loads is not None else frozenset()


_ALL_HIGH: Final = np.uint64(0xF0F0F0F0F0F0F0F0)
_ALL_LOW: Final = np.uint64(0x0F0F0F0F0F0F0F0F)
_ALL_3: Final = np.uint64(0x3030303030303030)
_ALL_6: Final = np.uint64(0x0606060606060606)
_DIGITS: Final = frozenset(b"0123456789")
_LONG_RUN: Final = 19


def long_digit_lines(lines: list[bytes]) -> frozenset[int]:
    """Indexes of the lines holding 19 or more ASCII digits in a row.

    Only such a line can hold an integer beyond 64 bits, which orjson would round to a float.
    A run of 19 (indeed of 15) covers a whole aligned 8-byte word, so the search tests words,
    eight bytes per NumPy lane (a byte is a digit when its high nibble is 3 and its low nibble
    plus 6 does not carry), and measures runs only around the rare all-digit words.
    """
    joined = b"\n".join(lines)
    words = np.frombuffer(joined, np.uint64, len(joined) // 8)
    digits = (words & _ALL_HIGH) == _ALL_3
    digits &= ((words & _ALL_LOW) + _ALL_6) & _ALL_HIGH == 0
    candidates = np.flatnonzero(digits)
    if not candidates.size:
        return frozenset()
    ends = np.cumsum([len(line) + 1 for line in lines])
    found: set[int] = set()
    reached = 0  # the end of the last run measured
    for word in candidates.tolist():
        start = end = word * 8
        if start < reached:
            continue
        while start > 0 and joined[start - 1] in _DIGITS:
            start -= 1
        while end < len(joined) and joined[end] in _DIGITS:
            end += 1
        reached = end
        if end - start >= _LONG_RUN:
            found.add(int(np.searchsorted(ends, start, side="right")))
    return frozenset(found)
