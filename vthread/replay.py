"""Bulk replay of recorded outputs: where would a guard have stopped each text?

:func:`scan_texts` answers, for many finished texts at once, what a :class:`~vthread.guard.Guard`
fed each text one character at a time would do: ``None``, or the :class:`GuardTrip` with the
offset just past the word that tripped it and the :class:`~vthread.guard.GuardReason`. It is
the bulk twin of the streaming guard (``Guard.push`` on one stream / ``scan_texts`` on many),
and :func:`has_repeated_text_runs` is the bulk twin of
:func:`vthread.textrun.has_repeated_text_run`.

How it is vectorised
    Each text is split once (one regex pass) and normalised per batch; every kept word of
    every text gets an exact integer id (interning: equal words, equal ids, nothing else),
    and the words of all texts are laid end to end in NumPy arrays. Then, with array
    operations only:

    * n-gram keys: a polynomial hash (``uint64``, wrapping) of each ``ngram`` ids; sorted
      stably, an n-gram occurring ``max_repeats`` times within the window shows as sorted
      positions ``s`` and ``s - (max_repeats - 1)`` with equal keys whose first position is
      still inside the window (the guard's count at that word).
    * window statistics for every word at once: the distinct words, the words seen once and
      the distinct line-leading words of a window are sums of intervals (a word occurrence
      counts for the windows that hold it but not its previous occurrence), so difference
      arrays and one ``cumsum`` give them for all positions; newlines are prefix sums.

    Only the first positions that pass every test are confirmed in Python, on the ids
    themselves: a hash collision can only merge two n-grams' counts, which makes a count too
    high, never too low, so the candidates are a superset of the trips and the exact
    confirmation removes any false one. A collision cannot change an answer.

Cost: O(total characters) string work plus O(W log W) array work for W words in all, and
O(window * ngram) per confirmed trip.

>>> trips = scan_texts(["fine text here", "again and " * 6], ngram=2, max_repeats=3)
>>> trips[0] is None, trips[1].offset, trips[1].reason.phrase
(True, 29, 'again and')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Final

import numpy as np
import numpy.typing as npt

from vthread._jsvalue import JS_WHITESPACE, JS_WHITESPACE_CLASS, utf16_tail
from vthread._options import GuardOptions, guard_options, text_run_options
from vthread.guard import GuardReason, join_pairs, normalize

__all__ = ["GuardTrip", "has_repeated_text_runs", "scan_texts"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Odd 64-bit multiplier of the n-gram hash (any odd constant works; collisions are
#: confirmed away, see the module docstring).
_HASH_MULTIPLIER: Final = np.uint64(0x9E3779B97F4A7C15)
_EXEMPT_BELOW_RATIO: Final = 0.5
_EXEMPT_NEWLINES: Final = 2
_EXEMPT_HAPAX: Final = 0.1
_EXEMPT_LEADING: Final = 3
_TAIL_UNITS: Final = 4000

_WS_SPLIT: Final = re.compile("(" + JS_WHITESPACE_CLASS + "+)")
_ASCII_DROP_BYTES: Final = bytes(c for c in range(128) if not chr(c).isalnum() and c != 32)


@dataclass(frozen=True, slots=True)
class GuardTrip:
    """Where and why a guard fed the text character by character would trip.

    ``offset`` is the index in the text (Python ``str``) just past the word that tripped
    the guard, ``offset_utf16`` the same position in UTF-16 code units (JavaScript's
    index).
    """

    offset: int
    offset_utf16: int
    reason: GuardReason


@dataclass(slots=True)
class _Text:
    """One text's split, kept for the few texts that need offsets or a confirmation."""

    text: str
    parts: list[str]  # word, whitespace, word, ..., trailing partial word
    kept: list[int]  # index among the completed words of each kept word

    def ends(self) -> IntArray:
        """Index just past each kept word (where its completing whitespace starts)."""
        lengths = np.fromiter(map(len, self.parts), np.int64, len(self.parts))
        completed: IntArray = np.cumsum(lengths)[0:-1:2]
        result: IntArray = completed[np.asarray(self.kept, dtype=np.int64)]
        return result

    def utf16(self, index: IntArray) -> IntArray:
        """UTF-16 length of ``text[:i]`` for each ``i`` in ``index``."""
        if self.text.isascii():
            return index
        points = np.frombuffer(self.text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
        astral = np.concatenate(([0], np.cumsum(points > 0xFFFF)))
        result: IntArray = index + astral[index]
        return result


def _split(text: str) -> tuple[list[str], list[str], list[str]]:
    """(parts, completed words, their normal forms) of one text."""
    parts = _WS_SPLIT.split(text)
    words = parts[:-1:2]
    if not words:
        return parts, words, []
    if text.isascii():
        joined = " ".join(words).lower().encode().translate(None, _ASCII_DROP_BYTES)
        return parts, words, joined.decode().split(" ")
    return parts, words, list(map(normalize, words))


def _newlines_before(parts: list[str], kept: list[int]) -> IntArray:
    """Newlines in the whitespace between each kept word and the kept word before it."""
    spaces = parts[1::2]
    counts = np.fromiter(map(str.count, spaces, repeat("\n", len(spaces))), np.int64,
                         len(spaces))
    cumulative = np.concatenate(([0], np.cumsum(counts)))
    at = np.asarray(kept, dtype=np.int64)
    before = np.concatenate(([0], at[:-1]))
    result: IntArray = cumulative[at] - cumulative[before]
    return result


def _intervals(starts: IntArray, stops: IntArray, size: int) -> IntArray:
    """How many of the intervals ``[starts[i], stops[i]]`` (empty when start > stop) hold
    each position ``0 .. size - 1``."""
    keep = starts <= stops
    diff = np.bincount(starts[keep], minlength=size + 1)
    diff -= np.bincount(stops[keep] + 1, minlength=size + 1)
    result: IntArray = np.cumsum(diff[:size])
    return result


def _neighbours(
    ids: IntArray, positions: IntArray, first: IntArray
) -> tuple[IntArray, IntArray]:
    """For each of ``positions`` (ascending, with their ``ids`` and their texts' ``first``
    positions), the previous and the next of these positions with the same id in the same
    text: -1, or a number past every text, when there is none."""
    size = len(ids)
    order = np.argsort(ids, kind="stable")
    same = ids[order[1:]] == ids[order[:-1]]
    previous = np.full(size, -1, dtype=np.int64)
    following = np.full(size, np.iinfo(np.int64).max // 4, dtype=np.int64)
    previous[order[1:][same]] = positions[order[:-1][same]]
    following[order[:-1][same]] = positions[order[1:][same]]
    previous[previous < first] = -1
    return previous, following


def _first_in_window(
    positions: IntArray, previous: IntArray, last: IntArray, window: int
) -> tuple[IntArray, IntArray]:
    """The words ``j`` whose window an occurrence opens for its word: ``[start, stop]``.

    Occurrence ``i`` is in the window of word ``j`` (``max(first, j - window) .. j``) for
    ``i <= j <= i + window``; its previous occurrence has left that window once
    ``j > previous + window``.
    """
    start = np.where(previous >= 0, np.maximum(positions, previous + window + 1), positions)
    stop = np.minimum(positions + window, last)
    return start, stop


def scan_texts(
    texts: Iterable[object],
    *,
    ngram: float | None = None,
    window: float | None = None,
    max_repeats: float | None = None,
    max_unique_ratio: float | None = None,
    min_chars: float | None = None,
) -> list[GuardTrip | None]:
    """For each text, where a :class:`~vthread.guard.Guard` fed it one character at a time
    would trip, or None. A text that is not a ``str`` never trips.

    The keywords are the guard's. With ``min_chars`` the guard counts the characters it
    has been fed, so a word can only trip once the characters up to and including the
    whitespace that completes it reach ``min_chars``. O(characters + W log W) for W words.
    """
    options = guard_options(ngram, window, max_repeats, max_unique_ratio, min_chars)
    items = list(texts)
    results: list[GuardTrip | None] = [None] * len(items)
    split: list[_Text | None] = []
    normals: list[str] = []
    lengths: list[int] = []
    newline_parts: list[tuple[int, IntArray]] = []
    for text in items:
        if not isinstance(text, str) or not text:
            split.append(None)
            lengths.append(0)
            continue
        parts, _, word_normals = _split(text)
        kept = list(compress(range(len(word_normals)), word_normals))
        split.append(_Text(text, parts, kept))
        if kept and "\n" in text:
            newline_parts.append((len(normals), _newlines_before(parts, kept)))
        normals.extend(filter(None, word_normals))
        lengths.append(len(kept))
    total = len(normals)
    if total == 0:
        return results
    index = dict(zip(dict.fromkeys(normals), range(total), strict=False))
    ids = np.fromiter(map(index.__getitem__, normals), np.int64, total)
    counts = np.asarray(lengths, dtype=np.int64)
    text_of = np.repeat(np.arange(len(items), dtype=np.int64), counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    first = starts[text_of]
    last = first + counts[text_of] - 1
    newlines = np.zeros(total, dtype=np.int64)
    for at, values in newline_parts:
        newlines[at : at + len(values)] = values
    candidates = _candidates(ids, first, last, newlines, options)
    owners = text_of[candidates]
    cuts = np.flatnonzero(np.diff(owners)) + 1
    for group in np.split(candidates, cuts) if len(candidates) else []:
        item = int(text_of[group[0]])
        entry = split[item]
        assert entry is not None
        results[item] = _first_trip(entry, group - first[group], ids, normals, options,
                                    int(first[group[0]]))
    return results


def _candidates(
    ids: IntArray, first: IntArray, last: IntArray, newlines: IntArray, options: GuardOptions
) -> IntArray:
    """Positions where every test but the exact count and ``min_chars`` passes, in order.

    The hashed n-gram count is at least the real one, so no trip is missed.
    """
    total = len(ids)
    ngram, window = options.ngram, options.window
    positions = np.arange(total, dtype=np.int64)
    window_start = np.maximum(first, positions - window)
    size = positions - window_start + 1
    ends = positions[positions - first >= ngram - 1]
    if len(ends) == 0:
        return ends
    # Polynomial hash of the ngram ids ending at each position (uint64 arithmetic wraps).
    keys = np.zeros(len(ends), dtype=np.uint64)
    values = (ids + 1).astype(np.uint64)
    for k in range(ngram - 1, -1, -1):
        keys = keys * _HASH_MULTIPLIER + values[ends - k]
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    sorted_ends = ends[order]
    repeats = options.max_repeats
    if len(ends) < repeats:
        return positions[:0]
    here = sorted_ends[repeats - 1 :]
    earlier = sorted_ends[: len(sorted_ends) - repeats + 1]
    lowest_end = window_start[here] + ngram - 1
    counted = (sorted_keys[repeats - 1 :] == sorted_keys[: len(sorted_keys) - repeats + 1]) & (
        earlier >= lowest_end
    )
    possible = np.zeros(total, dtype=np.bool_)
    possible[here[counted]] = True
    if not possible.any():
        return positions[:0]
    previous, following = _neighbours(ids, positions, first)
    start, stop = _first_in_window(positions, previous, last, window)
    distinct = _intervals(start, stop, total)
    unique_ratio = distinct / size
    ok = possible & (unique_ratio <= options.max_unique_ratio)
    if options.max_unique_ratio < _EXEMPT_BELOW_RATIO and ok.any():
        hapax = _intervals(start, np.minimum(stop, following - 1), total)
        hapax_ratio = hapax / size
        cumulative = np.concatenate(([0], np.cumsum(newlines)))
        in_window = cumulative[positions + 1] - cumulative[window_start]
        leads = np.flatnonzero(newlines > 0)
        lead_previous, _ = _neighbours(ids[leads], leads, first[leads])
        lead_start, lead_stop = _first_in_window(leads, lead_previous, last[leads], window)
        leading = _intervals(lead_start, lead_stop, total)
        exempt = (in_window >= _EXEMPT_NEWLINES) & (
            (hapax_ratio >= _EXEMPT_HAPAX) | (leading >= _EXEMPT_LEADING)
        )
        ok &= ~exempt
    result: IntArray = np.flatnonzero(ok)
    return result


def _first_trip(
    entry: _Text,
    local: IntArray,
    ids: IntArray,
    normals: Sequence[str],
    options: GuardOptions,
    first: int,
) -> GuardTrip | None:
    """The first of one text's candidate words (local indices, ascending) that really trips.

    ``min_chars`` is monotone along the text (the characters fed only grow), so it cuts the
    candidates at one point; each remaining candidate is confirmed on the exact ids.
    """
    ends = entry.ends()
    if options.min_chars:
        fed = entry.utf16(ends[local] + 1)  # the completing whitespace is fed too
        local = local[fed >= options.min_chars]
    ngram, window = options.ngram, options.window
    rows = np.lib.stride_tricks.sliding_window_view(ids, ngram)
    for at in local.tolist():
        position = first + at
        window_start = max(first, position - window)
        span = rows[window_start : position - ngram + 2]
        count = int(np.count_nonzero((span == rows[position - ngram + 1]).all(axis=1)))
        if count < options.max_repeats:
            continue  # a hash collision made this candidate; the exact count says no
        size = position - window_start + 1
        _, frequency = np.unique(ids[window_start : position + 1], return_counts=True)
        words = entry.parts[0:-1:2]
        spelled = [words[i] for i in entry.kept[at - ngram + 1 : at + 1]]
        end = int(ends[at])
        reason = GuardReason(
            phrase=" ".join(normals[position - ngram + 1 : position + 1]),
            count=count,
            text=join_pairs(" ".join(spelled)),
            unique_ratio=len(frequency) / size,
            hapax_ratio=int(np.count_nonzero(frequency == 1)) / size,
        )
        offset16 = int(entry.utf16(np.asarray([end], dtype=np.int64))[0])
        return GuardTrip(offset=end, offset_utf16=offset16, reason=reason)
    return None


# ------------------------------------------------------------------------------ text runs

_SEPARATOR_CHARS: Final = ".!?\n"
_NOT_WORDLIKE: Final = re.compile(
    "[^a-z0-9" + re.escape(JS_WHITESPACE + _SEPARATOR_CHARS) + "]+"
)
_SPACES_NOT_NEWLINE: Final = re.compile(
    "[" + re.escape(JS_WHITESPACE.replace("\n", "")) + "]+"
)
_UNIT: Final = re.compile(r"[^.!?\n ](?:[^.!?\n]*[^.!?\n ])?")


def _units(text: str) -> list[str]:
    """The normalised units of the text's last 4000 UTF-16 units (see ``textrun``).

    The whole tail is lower-cased and cleaned at once instead of unit by unit: the cleaning
    never touches a separator, so splitting before or after it gives the same units.
    """
    tail = utf16_tail(text[-_TAIL_UNITS:], _TAIL_UNITS)
    cleaned = _SPACES_NOT_NEWLINE.sub(" ", _NOT_WORDLIKE.sub(" ", tail.lower()))
    return _UNIT.findall(cleaned)


def has_repeated_text_runs(
    texts: Iterable[object],
    *,
    min_units: float | None = None,
    window: float | None = None,
    max_unique_ratio: float | None = None,
) -> npt.NDArray[np.bool_]:
    """:func:`vthread.textrun.has_repeated_text_run` for many texts: a boolean array.

    Each text costs O(min(len(text), 4000)): only its last 4000 UTF-16 units are read.

    >>> has_repeated_text_runs(["Again. " * 9, "One. Two. Three.", None]).tolist()
    [True, False, False]
    """
    options = text_run_options(min_units, window, max_unique_ratio)
    items = texts if isinstance(texts, Sequence) else list(texts)
    result = np.zeros(len(items), dtype=np.bool_)
    for index, text in enumerate(items):
        if not isinstance(text, str) or not text:
            continue
        units = _units(text)
        if len(units) < options.min_units:
            continue
        recent = units[-options.window :]
        result[index] = len(set(recent)) <= len(recent) * options.max_unique_ratio
    return result
