"""Bulk replay of recorded outputs: where would a guard have stopped each text?

:func:`scan_texts` answers, for many finished texts at once, what a :class:`~vthread.guard.Guard`
fed each text one character at a time would do: ``None``, or the :class:`GuardTrip` with the
offset just past the word that tripped it and the :class:`~vthread.guard.GuardReason`. It is
the bulk twin of the streaming guard (``Guard.push`` on one stream / ``scan_texts`` on many),
and :func:`has_repeated_text_runs` is the bulk twin of
:func:`vthread.textrun.has_repeated_text_run`.

How it is vectorised
    ASCII texts are laid end to end in one ``uint8`` array (a few MB at a time): word
    boundaries, normalisation (a lower-case table and an ``[a-z0-9]`` mask) and a 64-bit
    polynomial hash of each normalised word are array operations, with no Python string per
    word. Other texts are split with one regex pass and their normalised words hashed with
    Python's string hash. Then, for all words of all texts at once:

    * n-gram keys: a polynomial (``uint64``, wrapping) of the ``ngram`` word hashes; sorted
      with their positions, an n-gram seen ``max_repeats`` times within the window shows as
      sorted entries ``s`` and ``s - (max_repeats - 1)`` with equal keys whose earlier
      position is still inside the window (the guard's count at that word);
    * window statistics for every word: distinct words, words seen once and distinct
      line-leading words of a window are sums of intervals (an occurrence counts for the
      windows that hold it but not its previous occurrence), so difference arrays and one
      ``cumsum`` give them for every position; newlines are prefix sums.

Hash collisions cannot change an answer
    A collision merges two words (or two n-grams) into one. That can only raise an n-gram
    count, lower the distinct words, lower the words seen once and lower the distinct
    line-leading words; each of those only makes a word more likely to pass the tests (the
    enumeration exemption, which removes trips, needs *more* hapax or leading words). So
    the positions that pass with hashes are a superset of the real trips. The first of them
    in a text is then re-checked on the text's real normalised words (exact count, ratios
    and exemption, O(window * ngram)); a false one is skipped and the next one checked.

Cost: O(total characters) array and string work plus O(W log W) for W words in all; Python
work per text is constant except for non-ASCII texts (one split) and tripping texts (one
exact re-check).

>>> trips = scan_texts(["fine text here", "again and " * 6], ngram=2, max_repeats=3)
>>> trips[0] is None, trips[1].offset, trips[1].reason.phrase
(True, 29, 'again and')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Final

import numpy as np
import numpy.typing as npt

from vthread import _core
from vthread._jsvalue import JS_WHITESPACE_CLASS
from vthread._options import GuardOptions, guard_options, text_run_options
from vthread.guard import GuardReason, join_pairs, normalize
from vthread.textrun import TAIL_UNITS

__all__ = ["GuardTrip", "has_repeated_text_runs", "scan_texts"]

IntArray = npt.NDArray[np.int64]
UintArray = npt.NDArray[np.uint64]

#: Odd 64-bit multipliers of the word and n-gram hashes (collisions are re-checked away),
#: and the word multiplier's inverse modulo 2**64.
_WORD_MULTIPLIER: Final = 0x9E3779B97F4A7C15
_WORD_INVERSE: Final = pow(_WORD_MULTIPLIER, -1, 1 << 64)
_NGRAM_MULTIPLIER: Final = np.uint64(0xC2B2AE3D27D4EB4F)
#: Characters of ASCII text normalised at once; bounds the batch's memory.
_BATCH_CHARS: Final = 1 << 20
_EXEMPT_BELOW_RATIO: Final = 0.5
_EXEMPT_NEWLINES: Final = 2
_EXEMPT_HAPAX: Final = 0.1
_EXEMPT_LEADING: Final = 3

_WS_SPLIT: Final = re.compile("(" + JS_WHITESPACE_CLASS + "+)")
_ASCII_SPACES: Final = " \t\n\v\f\r"  # JavaScript's whitespace within ASCII
#: ASCII bytes that normalisation deletes, the space excepted (words joined by spaces).
_ASCII_DROP: Final = bytes(c for c in range(128) if not chr(c).isalnum() and c != 32)
#: The same, whitespace excepted, and the table that lower-cases ASCII letters.
_ASCII_DROP_KEEP_SPACE: Final = bytes(
    c for c in range(128) if not chr(c).isalnum() and chr(c) not in _ASCII_SPACES
)
_ASCII_LOWER: Final = bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123)))
_IS_SPACE: Final = np.zeros(256, dtype=np.bool_)
_IS_SPACE[list(_ASCII_SPACES.encode())] = True


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


@dataclass(frozen=True, slots=True)
class _Words:
    """The kept (non-empty, completed) words of some texts, in text order."""

    hashes: UintArray
    text: IntArray  # index of the word's text in the batch
    newlines: IntArray  # newlines since the previous kept word (or the text's start)


@dataclass(frozen=True, slots=True)
class _Split:
    """One text's exact words: for non-ASCII texts and for re-checking candidates."""

    words: list[str]  # the kept words as written
    normals: list[str]
    end: IntArray  # index just past each kept word
    newlines: IntArray


def _split(text: str) -> _Split:
    """Split and normalise one text as the guard does (one regex pass)."""
    parts = _WS_SPLIT.split(text)
    words = parts[:-1:2]
    if text.isascii():
        joined = " ".join(words).lower().encode().translate(None, _ASCII_DROP)
        normals = joined.decode().split(" ") if words else []
    else:
        normals = list(map(normalize, words))
    kept = np.fromiter(compress(range(len(words)), normals), np.int64)
    lengths = np.fromiter(map(len, parts), np.int64, len(parts))
    ends = np.cumsum(lengths)[0:-1:2][kept] if len(kept) else kept
    spaces = parts[1::2]
    if "\n" in text and len(kept):
        counts = np.fromiter(map(str.count, spaces, repeat("\n", len(spaces))), np.int64,
                             len(spaces))
        cumulative = np.concatenate(([0], np.cumsum(counts)))
        newlines = cumulative[kept] - cumulative[np.concatenate(([0], kept[:-1]))]
    else:
        newlines = np.zeros(len(kept), dtype=np.int64)
    return _Split(
        words=[words[i] for i in kept.tolist()],
        normals=list(filter(None, normals)),
        end=ends,
        newlines=newlines,
    )


def _utf16(text: str, index: IntArray) -> IntArray:
    """UTF-16 length of ``text[:i]`` for each ``i`` in ``index``."""
    if text.isascii():
        return index
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    astral = np.concatenate(([0], np.cumsum(points > 0xFFFF)))
    result: IntArray = index + astral[index]
    return result


def _python_words(text: str, item: int) -> _Words:
    """The words of a non-ASCII text, hashed with Python's string hash."""
    split = _split(text)
    hashes = np.fromiter(map(hash, split.normals), np.int64, len(split.normals))
    return _Words(
        hashes=hashes.view(np.uint64),
        text=np.full(len(hashes), item, dtype=np.int64),
        newlines=split.newlines,
    )


def _completed(text: str) -> str:
    """``text`` without its trailing partial word (nothing completes it)."""
    cut = max(map(text.rfind, _ASCII_SPACES))
    return text[: cut + 1]


def _ascii_words(texts: list[str], items: list[int]) -> _Words:
    """The words of ASCII texts, normalised in C and hashed with array operations.

    ``bytes.translate`` lower-cases each text and deletes what normalisation deletes,
    keeping whitespace, so a word that normalises to nothing disappears and the kept words
    remain in order, each still followed by its completing whitespace (the texts' partial
    last words are cut off first). Word hashes are polynomials of the normalised bytes,
    from prefix sums: ``(H[end] - H[start]) * P**-start`` (``uint64``, wrapping).
    """
    completed = [_completed(t) for t in texts]
    normal_texts = [t.encode().translate(_ASCII_LOWER, _ASCII_DROP_KEEP_SPACE)
                    for t in completed]
    sizes = np.fromiter(map(len, normal_texts), np.int64, len(texts))
    offsets = np.concatenate(([0], np.cumsum(sizes + 1)))  # texts joined by one "\n"
    data = np.frombuffer(b"\n".join(normal_texts) + b"\n", dtype=np.uint8)
    # Every word is completed, so words and the whitespace right after them pair up: a
    # word ends at a whitespace byte that follows a non-whitespace one, and begins after
    # the whitespace byte before that.
    spaces = np.flatnonzero(_IS_SPACE[data])
    gap = np.empty(len(spaces), dtype=np.int64)
    gap[0] = spaces[0] + 1
    gap[1:] = spaces[1:] - spaces[:-1]
    rank = np.flatnonzero(gap > 1)  # whitespace bytes that end a word
    ends = spaces[rank]
    begins = ends - gap[rank] + 1
    owner = np.searchsorted(offsets, begins, side="right") - 1
    powers, inverse = _powers(len(data))
    prefix = np.zeros(len(data) + 1, dtype=np.uint64)
    np.cumsum(data * powers, out=prefix[1:])
    hashes: UintArray = (prefix[ends] - prefix[begins]) * inverse[begins]
    # Newlines before word j: the "\n" among the whitespace bytes ranked from the one that
    # ended word j - 1 (or the first of its text) up to the one that ends word j.
    breaks = np.concatenate(([0], np.cumsum(data[spaces] == 10)))
    since = np.empty(len(rank), dtype=np.int64)
    if len(rank):
        since[1:] = rank[:-1]
        first_of_text = np.ones(len(rank), dtype=np.bool_)
        first_of_text[1:] = owner[1:] != owner[:-1]
        since[first_of_text] = np.searchsorted(spaces, offsets[owner[first_of_text]])
    return _Words(
        hashes=hashes,
        text=np.asarray(items, dtype=np.int64)[owner],
        newlines=breaks[rank] - breaks[since],
    )


def _kept_ends(text: str) -> IntArray:
    """Index just past each kept word of one text (where its completing whitespace is)."""
    if not text.isascii():
        return _split(text).end
    completed = _completed(text)
    normal = completed.encode().translate(_ASCII_LOWER, _ASCII_DROP_KEEP_SPACE)
    if not normal:
        return np.zeros(0, dtype=np.int64)
    spaces = np.flatnonzero(_IS_SPACE[np.frombuffer(normal, dtype=np.uint8)])
    gap = np.empty(len(spaces), dtype=np.int64)
    gap[0] = spaces[0] + 1
    gap[1:] = spaces[1:] - spaces[:-1]
    # Whitespace is never deleted: the k-th whitespace byte after normalisation is the k-th
    # before it.
    original = np.frombuffer(completed.encode(), dtype=np.uint8)
    result: IntArray = np.flatnonzero(_IS_SPACE[original])[gap > 1]
    return result


_POWER_TABLES: list[UintArray] = []


def _powers(size: int) -> tuple[UintArray, UintArray]:
    """``P**t`` and ``P**-t`` modulo 2**64 for ``t < size``; built once per process, up to
    ``_BATCH_CHARS`` plus the longest text (16 MB at most for the defaults)."""
    if _POWER_TABLES and len(_POWER_TABLES[0]) >= size:
        return _POWER_TABLES[0][:size], _POWER_TABLES[1][:size]
    length = max(size, min(_BATCH_CHARS + 1, 1 << 16))
    ones = np.ones(1, dtype=np.uint64)
    tables: list[UintArray] = [
        np.concatenate((ones, np.cumprod(np.full(length - 1, m, dtype=np.uint64)))).astype(
            np.uint64, copy=False
        )
        for m in (_WORD_MULTIPLIER, _WORD_INVERSE)
    ]
    if length <= _BATCH_CHARS + 1:  # a text longer than a batch gets tables of its own
        _POWER_TABLES[:] = tables
    return tables[0][:size], tables[1][:size]


def _words_of(items: list[object]) -> _Words:
    """The kept words of every text, in order: ASCII texts in C-level batches."""
    pieces: list[_Words] = []
    batch: list[str] = []
    batch_items: list[int] = []
    size = 0
    for item, text in enumerate(items):
        if not isinstance(text, str) or not text:
            continue
        ascii_text = text.isascii()
        if batch and (not ascii_text or size + len(text) > _BATCH_CHARS):
            pieces.append(_ascii_words(batch, batch_items))
            batch, batch_items, size = [], [], 0
        if ascii_text:
            batch.append(text)
            batch_items.append(item)
            size += len(text)
        else:
            pieces.append(_python_words(text, item))
    if batch:
        pieces.append(_ascii_words(batch, batch_items))
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return _Words(empty.view(np.uint64), empty, empty)
    if len(pieces) == 1:
        return pieces[0]
    return _Words(*(np.concatenate([getattr(p, f) for p in pieces])
                    for f in ("hashes", "text", "newlines")))


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
    words = _words_of(items)
    total = len(words.hashes)
    if total == 0:
        return results
    counts = np.bincount(words.text, minlength=len(items))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    first = starts[words.text]
    last = first + counts[words.text] - 1
    candidates = _candidates(words, first, last, options)
    owners = words.text[candidates]
    cuts = np.flatnonzero(np.diff(owners)) + 1
    for group in np.split(candidates, cuts) if len(candidates) else []:
        item = int(words.text[group[0]])
        text = items[item]
        assert isinstance(text, str)
        local = group - first[group]
        ends = _kept_ends(text)
        assert len(ends) == counts[item], "the vectorised split and the exact split disagree"
        if options.min_chars:
            # The characters fed only grow along the text, so min_chars cuts the candidates
            # once; the whitespace completing a word is fed before the word is judged.
            local = local[_utf16(text, ends[local]) + 1 >= options.min_chars]
        results[item] = _first_trip(text, ends, local.tolist(), options)
    return results


def _sorted_with_positions(keys: UintArray, total: int) -> tuple[UintArray, IntArray]:
    """``keys`` sorted, each with its index, ties by index: one ``np.sort`` of packed
    words (the keys' low bits give way to the index, which only merges more keys)."""
    bits = max(1, int(total).bit_length())
    mask = np.uint64((1 << bits) - 1)
    packed = np.sort(
        ((keys >> np.uint64(bits)) << np.uint64(bits))
        | np.arange(len(keys), dtype=np.uint64)
    )
    return packed >> np.uint64(bits), (packed & mask).astype(np.int64)


def _intervals(starts: IntArray, stops: IntArray, size: int) -> IntArray:
    """How many intervals ``[starts[i], stops[i]]`` (empty when start > stop) hold each
    position ``0 .. size - 1``."""
    keep = starts <= stops
    diff = np.bincount(starts[keep], minlength=size + 1)
    diff -= np.bincount(stops[keep] + 1, minlength=size + 1)
    result: IntArray = np.cumsum(diff[:size])
    return result


def _neighbours(
    keys: UintArray, positions: IntArray, first: IntArray
) -> tuple[IntArray, IntArray]:
    """For each of ``positions`` (with their word ``keys`` and their texts' ``first``
    positions), the previous and the next of these positions with the same key in the same
    text: -1, or a number past every text, when there is none."""
    size = len(keys)
    sorted_keys, order = _sorted_with_positions(keys, size)
    same = sorted_keys[1:] == sorted_keys[:-1]
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


def _candidates(
    words: _Words, first: IntArray, last: IntArray, options: GuardOptions
) -> IntArray:
    """Positions where every test passes on hashed words (``min_chars`` aside), in order.

    A superset of the real trips: see the module docstring.
    """
    hashes = words.hashes
    total = len(hashes)
    ngram, window, repeats = options.ngram, options.window, options.max_repeats
    positions = np.arange(total, dtype=np.int64)
    window_start = np.maximum(first, positions - window)
    size = positions - window_start + 1
    ends = positions[positions - first >= ngram - 1]
    if len(ends) < repeats:
        return positions[:0]
    # Keys of the n-grams ending at every position from ngram - 1 on (contiguous slices;
    # those that straddle two texts are then left out).
    rolling = hashes[: total - ngram + 1].copy()
    for k in range(1, ngram):
        rolling *= _NGRAM_MULTIPLIER
        rolling += hashes[k : total - ngram + 1 + k]
    keys = rolling[ends - (ngram - 1)]
    sorted_keys, order = _sorted_with_positions(keys, len(ends))
    sorted_ends = ends[order]
    here = sorted_ends[repeats - 1 :]
    earlier = sorted_ends[: len(sorted_ends) - repeats + 1]
    counted = (sorted_keys[repeats - 1 :] == sorted_keys[: len(sorted_keys) - repeats + 1]) & (
        earlier >= window_start[here] + ngram - 1
    )
    if not counted.any():
        return positions[:0]
    # Only texts with a repeated n-gram can trip: the window statistics are computed for
    # their words alone, renumbered from 0.
    hits = here[counted]
    begin, end = np.unique(first[hits]), np.unique(last[hits] + 1)  # the chosen texts
    lengths = end - begin
    # Words dropped before each kept word; kept word i is word i + shift[i].
    shift = np.repeat(begin - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    keep = shift + np.arange(len(shift), dtype=np.int64)
    possible = np.zeros(total, dtype=np.bool_)
    possible[hits] = True
    possible = possible[keep]
    hashes, newlines = hashes[keep], words.newlines[keep]
    total = len(keep)
    positions = np.arange(total, dtype=np.int64)
    first, last = first[keep] - shift, last[keep] - shift
    window_start, size = window_start[keep] - shift, size[keep]
    previous, following = _neighbours(hashes, positions, first)
    start, stop = _first_in_window(positions, previous, last, window)
    distinct = _intervals(start, stop, total)
    ok = possible & (distinct / size <= options.max_unique_ratio)
    if options.max_unique_ratio < _EXEMPT_BELOW_RATIO and ok.any():
        hapax = _intervals(start, np.minimum(stop, following - 1), total)
        cumulative = np.concatenate(([0], np.cumsum(newlines)))
        in_window = cumulative[positions + 1] - cumulative[window_start]
        leads = np.flatnonzero(newlines > 0)
        lead_previous, _ = _neighbours(hashes[leads], leads, first[leads])
        lead_start, lead_stop = _first_in_window(leads, lead_previous, last[leads], window)
        leading = _intervals(lead_start, lead_stop, total)
        exempt = (in_window >= _EXEMPT_NEWLINES) & (
            (hapax / size >= _EXEMPT_HAPAX) | (leading >= _EXEMPT_LEADING)
        )
        ok &= ~exempt
    result: IntArray = keep[ok]
    return result


def _first_trip(
    text: str, ends: IntArray, local: list[int], options: GuardOptions
) -> GuardTrip | None:
    """The first of one text's candidate words (indices among its kept words, ascending;
    ``ends[k]`` is where kept word k ends) that trips the guard on the real words, or None.

    Only the candidate's window is split again: from the end of the kept word before the
    window (so that its first word's newlines count from there, as in the guard) to the
    candidate. O(window * ngram) per candidate.
    """
    ngram, window = options.ngram, options.window
    for at in local:
        start = max(0, at - window)
        origin = int(ends[start - 1]) if start else 0
        split = _split(text[origin : int(ends[at]) + 1])
        normals, newlines = split.normals, split.newlines.tolist()
        size = at - start + 1
        assert len(normals) == size, "the vectorised split and the exact split disagree"
        phrase = normals[-ngram:]
        count = sum(1 for p in range(size - ngram + 1) if normals[p : p + ngram] == phrase)
        if count < options.max_repeats:
            continue  # a hash collision made this candidate
        frequency = Counter(normals)
        unique_ratio = len(frequency) / size
        if unique_ratio > options.max_unique_ratio:
            continue
        hapax_ratio = sum(1 for c in frequency.values() if c == 1) / size
        if (
            options.max_unique_ratio < _EXEMPT_BELOW_RATIO
            and sum(newlines) >= _EXEMPT_NEWLINES
            and (
                hapax_ratio >= _EXEMPT_HAPAX
                or len({n for n, nl in zip(normals, newlines, strict=True) if nl})
                >= _EXEMPT_LEADING
            )
        ):
            continue
        end = int(ends[at])
        reason = GuardReason(
            phrase=" ".join(phrase),
            count=count,
            text=join_pairs(" ".join(split.words[-ngram:])),
            unique_ratio=unique_ratio,
            hapax_ratio=hapax_ratio,
        )
        offset16 = int(_utf16(text, np.asarray([end], dtype=np.int64))[0])
        return GuardTrip(offset=end, offset_utf16=offset16, reason=reason)
    return None


# ------------------------------------------------------------------------------ text runs


def has_repeated_text_runs(
    texts: Iterable[object],
    *,
    min_units: float | None = None,
    window: float | None = None,
    max_unique_ratio: float | None = None,
) -> npt.NDArray[np.bool_]:
    """:func:`vthread.textrun.has_repeated_text_run` for many texts: a boolean array.

    ``texts`` is any iterable; a single ``str`` is a ``TypeError`` (it would be read as its
    characters). The compiled core reads each text's storage in place, with the GIL released
    and on every core (``src/textrun.rs``); each text costs O(min(len(text), 4000)): only its
    last 4000 UTF-16 units are read.

    >>> has_repeated_text_runs(["Again. " * 9, "One. Two. Three.", None]).tolist()
    [True, False, False]
    """
    options = text_run_options(min_units, window, max_unique_ratio)
    # A tail of TAIL_UNITS UTF-16 units holds fewer than TAIL_UNITS units, so larger counts
    # answer as TAIL_UNITS does; clamped, they fit the core's machine words.
    return _core.has_repeated_text_runs(
        texts,
        min(options.min_units, TAIL_UNITS),
        min(options.window, TAIL_UNITS),
        options.max_unique_ratio,
    )
