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
import numpy.typing as npt

try:
    import orjson
except ImportError:  # pragma: no cover - exercised only without the optional dependency
    fast_loads: Callable[[bytes], Any] | None = None
else:
    fast_loads = orjson.loads

__all__ = ["fast_loads", "loads_exactly", "loads_without_digit_limit", "long_digit_lines",
           "suspect_lines"]


#: The longest text orjson reads: where an allocation fails, orjson ends the process with a
#: segmentation fault (a 300 MB line under ``ulimit -v 450000``), while json raises
#: MemoryError, which ``vthread scan`` reports, naming the line, after writing the records
#: before it. Lines this long are few; json reads them about three times slower.
FAST_LONGEST: Final = 32 << 20


def loads_exactly(text: bytes, long_digits: bool | None = None) -> Any:
    """``json.loads(text)``'s value (and its errors), by orjson when that is the same.
    ``long_digits``: whether ``text`` holds a run of 19 digits, when the caller has looked
    for such runs over many texts at once (see :func:`suspect_lines`); None looks here."""
    if long_digits is None:
        long_digits = bool(long_digit_lines([text]))
    if (fast_loads is not None and not long_digits and len(text) <= FAST_LONGEST
            and _room_to_read(len(text))):
        try:
            return fast_loads(text)
        except ValueError:
            pass  # orjson rejects it: the standard module decides
        except SystemError as error:
            # orjson out of memory returns a value with a MemoryError set, which Python
            # reports as a SystemError caused by it (a 30 MB line under ``ulimit -v
            # 1000000``): the standard module reads it again, and raises MemoryError if
            # memory is still short. Any other SystemError is orjson's bug, raised.
            if not isinstance(error.__cause__, MemoryError):
                raise
    return loads_without_digit_limit(text)


#: Texts shorter than this are read without asking for memory first: given to orjson here,
#: and read by Python in ``vthread scan`` (:func:`vthread.cli._room_to_read_in_python`).
ASKED_FROM: Final = 1 << 20

#: The memory orjson may take reading a text, in bytes per byte of it, with a margin: a text
#: of tiny values (``[{},{},...]``) makes a Python object of 64 bytes or more of each 3.
OBJECT_BYTES_PER_BYTE: Final = 32


def _room_to_read(size: int) -> bool:
    """Whether orjson may read a text of ``size`` bytes: short, or the memory its objects
    may take can be had now (a 26 MB line under ``ulimit -v 500000`` ended the process with
    orjson's segmentation fault; ``json`` raises MemoryError, which ``vthread scan`` reports
    naming the line)."""
    if size < ASKED_FROM:
        return True
    from vthread import _core

    return _core.room_for(size * OBJECT_BYTES_PER_BYTE)


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


#: Lines longer than this are searched a slice of this many bytes at a time, so that a line of
#: hundreds of megabytes needs no array (nor a joined copy) of its size.
_SLICE: Final = 1 << 20


def long_digit_lines(lines: list[bytes]) -> frozenset[int]:
    """Indexes of the lines holding 19 or more ASCII digits in a row.

    Only such a line can hold an integer beyond 64 bits, which orjson would round to a float.
    A run of 19 (indeed of 15) covers a whole aligned 8-byte word, so the search tests words,
    eight bytes per NumPy lane (a byte is a digit when its high nibble is 3 and its low nibble
    plus 6 does not carry), and measures runs only around the rare all-digit words, each at
    most 19 digits far: a line's first long run settles it.
    """
    if all(len(line) <= _SLICE for line in lines):
        return _long_digit_lines_joined(lines)
    short = [index for index, line in enumerate(lines) if len(line) <= _SLICE]
    found = {short[index] for index in _long_digit_lines_joined([lines[i] for i in short])}
    found.update(index for index, line in enumerate(lines)
                 if len(line) > _SLICE and _holds_long_digit_run(line))
    return frozenset(found)


def _digit_words(data: bytes, count: int, offset: int = 0) -> npt.NDArray[np.intp]:
    """Indexes of the all-digit 8-byte words among ``count`` words of ``data`` from byte
    ``offset``."""
    words = np.frombuffer(data, np.uint64, count, offset)
    digits = (words & _ALL_HIGH) == _ALL_3
    digits &= ((words & _ALL_LOW) + _ALL_6) & _ALL_HIGH == 0
    return np.flatnonzero(digits)


def _run_reaches(data: bytes, at: int) -> tuple[bool, int]:
    """Whether the run of digits holding byte ``at`` is 19 or more long, and where the
    search ended (never more than 19 bytes either side)."""
    start = end = at
    while start > 0 and at - start < _LONG_RUN and data[start - 1] in _DIGITS:
        start -= 1
    while end < len(data) and end - start < _LONG_RUN and data[end] in _DIGITS:
        end += 1
    return end - start >= _LONG_RUN, end


def _long_digit_lines_joined(lines: list[bytes]) -> frozenset[int]:
    """:func:`long_digit_lines` of short lines, searched joined: one NumPy pass."""
    joined = b"\n".join(lines)
    candidates = _digit_words(joined, len(joined) // 8)
    if not candidates.size:
        return frozenset()
    ends = np.cumsum([len(line) + 1 for line in lines])
    found: set[int] = set()
    reached = 0  # where the last search ended, or the end of the last line found
    for word in candidates.tolist():
        if word * 8 < reached:
            continue
        long, reached = _run_reaches(joined, word * 8)
        if long:
            line = int(np.searchsorted(ends, word * 8, side="right"))
            found.add(line)
            reached = int(ends[line])
    return frozenset(found)


def _holds_long_digit_run(line: bytes) -> bool:
    """Whether one long line holds 19 or more digits in a row, a slice at a time."""
    for offset in range(0, len(line), _SLICE):
        count = min(_SLICE, len(line) - offset) // 8
        for word in _digit_words(line, count, offset).tolist():
            if _run_reaches(line, offset + word * 8)[0]:
                return True
    return False
