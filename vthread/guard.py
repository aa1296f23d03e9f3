"""The repetition guard: watch a token stream and stop it when it starts to loop.

:class:`Guard` answers, chunk by chunk, whether a model's output has fallen into a loop: the
same ``ngram``-word phrase ``max_repeats`` times within the last ``window`` words while the
window's vocabulary is poor (distinct words / words <= ``max_unique_ratio``), except when the
window looks like an enumeration or a table (several lines, and many words seen once or
several distinct line-leading words). SPEC.md §6 is the contract;
:class:`vthread._reference.ReferenceGuard` is the plain re-derivation that the property tests
hold this engine against.

The window
    A ring of the last ``window`` kept words: ``collections.deque`` with
    ``maxlen=window + 1`` for the normalised words and for the words as written, and a
    sparse ring of ``(sequence number, newlines)`` for the few words that follow a newline.
    It briefly holds ``window + 1`` words while the newest is judged, as the contract
    requires.

Counting mode: O(1) per word
    Each normalised word in the window has an entry ``[occurrences, id, line-leading
    occurrences]``; phrase counts live in a dictionary keyed by the phrase's word ids, with a
    FIFO ring of the keys in window order, so a word costs one update for itself and the
    phrase it ends, and the same two in reverse for the word that leaves. Running totals of
    distinct words, hapax words, newlines and distinct line-leading words make both ratios
    O(1). Nothing is re-joined or recounted.

Exact keys: a collision cannot happen
    Ids are small integers, unique among the words currently in the window: they are handed
    out from a free list and returned when a word's last occurrence leaves, so
    ``0 <= id <= window``. A phrase key packs its ``ngram`` ids into one integer, ``b`` bits
    each (``b = window.bit_length()``), rolled as ``((key << b) | id) & mask``. Every id in a
    stored key belongs to a word still in the window (a phrase leaves the counts when its
    first word leaves, before any of its ids can be reused), so two keys are equal exactly
    when the phrases are equal. No hash is involved. With the defaults a key is a 24-bit
    int; in general it has ``ngram * b`` bits, a constant for given options.

Quiet mode: most words cost a few C-level operations
    A word can only trip the guard when the window's distinct words are at most
    ``max_unique_ratio * (window + 1)``, and one word lowers the distinct count by at most one
    (one word leaves per word). So with ``d`` distinct words, the next
    ``safe = d - ratio * (window + 1) - 1`` words (rounded down) cannot trip. While ``safe``
    is large the guard keeps only the ring: it holds that many words' worth of pushes
    unsplit, then splits, normalises and appends them in one batch (for ASCII one
    ``bytes.translate`` over the batch, then ``deque.extend``) and recounts ``d`` from the
    ring (``len(set(window))``, O(window), at most once per
    ``safe >= max(2, (window + 1) // 16)`` words). When ``safe`` falls below that, the
    counting structures are rebuilt from the ring (O(window)) and every word is counted;
    they are dropped again once ``safe`` has doubled, so rebuilds are O(1) per word
    amortised. Every push answers exactly as in counting mode.

Memory
    O(window) for the ring and the tables, at most ``_MAX_HELD`` held pushes, plus the
    current partial word: text without whitespace must be kept until whitespace completes it,
    because the word may end up in :attr:`GuardReason.text`. A partial word longer than
    ``_SHORT_PARTIAL`` characters is kept as O(log n) pieces, each under half the size of the
    one before, so a whitespace-free stream costs O(n log n) time and O(n) memory for that one
    word, and nothing more. Normal forms computed one word at a time (non-ASCII words, words
    that span pushes) are cached per process, at most ``_CACHE_LIMIT`` of them.

>>> guard = Guard(ngram=3, window=12, max_repeats=3)
>>> any(guard.push(chunk) for chunk in ["I will ", "try again. "] * 5)
True
>>> guard.reason.phrase, guard.reason.count
('i will try', 3)
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import deque
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Final

import numpy as np

from vthread._jsvalue import JS_WHITESPACE_CLASS, utf16_len
from vthread._options import GuardOptions, guard_options

__all__ = ["Guard", "GuardReason"]

#: Pushes a guard may hold unsplit at most.
_MAX_HELD: Final = 1 << 14
#: Budget units of one possibly completed word; a push costs one unit plus this per word.
_WORD_COST: Final = 256
#: Longest partial word kept as a plain string before it is kept in pieces.
_SHORT_PARTIAL: Final = 4096
#: Normalised spellings cached per process; the cache is dropped when it grows past this.
_CACHE_LIMIT: Final = 1 << 16
#: Longest word worth caching.
_CACHE_WORD: Final = 64
#: The enumeration exemption (SPEC §6): applies below this ratio, from this many newlines,
#: with this hapax share or this many distinct line-leading words.
_EXEMPT_BELOW_RATIO: Final = 0.5
_EXEMPT_NEWLINES: Final = 2
_EXEMPT_HAPAX: Final = 0.1
_EXEMPT_LEADING: Final = 3
#: After a trip every push goes straight to the answer.
_TRIPPED_ROOM: Final = -(1 << 62)
#: Batches with more words than this find their kept words with NumPy, not a loop.
_VECTOR_BATCH: Final = 256

_WS_SPLIT: Final = re.compile("(" + JS_WHITESPACE_CLASS + "+)")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_ASCII_DROP: Final = str.maketrans(
    "", "", "".join(chr(c) for c in range(128) if not chr(c).isalnum())
)
#: ASCII bytes that normalisation deletes, the space excepted: lower-casing words joined by
#: spaces and deleting these normalises every word in place, and the spaces stay.
_ASCII_DROP_BYTES: Final = bytes(c for c in range(128) if not chr(c).isalnum() and c != 32)
_NORMAL: dict[str, str] = {}


def join_pairs(text: str) -> str:
    """``text`` with each high+low surrogate pair made one code point, as UTF-16 reads it.

    O(len(text)); returns ``text`` itself when it holds no surrogate.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def normalize(word: str) -> str:
    """The guard's form of a word: lower-cased, only Unicode letters and numbers kept.

    Equal to ``_reference.normalize_word(join_surrogates(word))``. Cached per process (the
    cache is bounded), so a word seen before costs one dictionary lookup; O(len(word)) else.

    >>> normalize("Don't!"), normalize("ÉTÉ-2024")
    ('dont', 'été2024')
    """
    cached = _NORMAL.get(word)
    if cached is not None:
        return cached
    if word.isascii():
        lower = word.lower()
        normal = lower if lower.isalnum() else lower.translate(_ASCII_DROP)
    else:
        category = unicodedata.category
        normal = "".join([c for c in join_pairs(word).lower() if category(c)[0] in "LN"])
    if len(word) <= _CACHE_WORD:
        if len(_NORMAL) >= _CACHE_LIMIT:
            _NORMAL.clear()
        _NORMAL[word] = normal
    return normal


def _kept_with_lines(
    words: list[str], normals: list[str], after: list[int], pending: int
) -> tuple[list[str], list[str], list[tuple[int, int]], int]:
    """The kept words of a large batch, with their newline records, in C and NumPy.

    Returns (normal forms, spellings, [(index among kept, newlines before it)], newlines
    pending after the last kept word). With ``total[i]`` the newlines seen before word i
    (pending ones included), a kept word has ``total[i] - total[p]`` newlines before it,
    p the kept word before it: those after p and after every skipped word in between.
    """
    kept = np.fromiter(compress(range(len(words)), normals), np.int64)
    if not len(kept):
        return [], [], [], pending + sum(after)
    total = np.concatenate(([pending], np.cumsum(after, dtype=np.int64) + pending))
    before = total[kept] - np.concatenate(([0], total[kept[:-1]]))
    marked = np.flatnonzero(before)
    lines = list(zip(marked.tolist(), before[marked].tolist(), strict=True))
    rest = int(total[-1] - total[kept[-1]])
    return list(filter(None, normals)), list(compress(words, normals)), lines, rest


@dataclass(frozen=True, slots=True)
class GuardReason:
    """Why a guard tripped: the repeated phrase, its count, and the window's ratios.

    ``phrase`` is the normalised words joined by one space, ``text`` the same words as they
    were written; ``unique_ratio`` is distinct words / words in the window and
    ``hapax_ratio`` words seen once / words in the window, both at the tripping word.
    """

    phrase: str
    count: int
    text: str
    unique_ratio: float
    hapax_ratio: float

    def to_dict(self) -> dict[str, str | int | float]:
        """The reason as a JSON-ready mapping with snake_case keys."""
        return {
            "phrase": self.phrase,
            "count": self.count,
            "text": self.text,
            "unique_ratio": self.unique_ratio,
            "hapax_ratio": self.hapax_ratio,
        }


# Indices into a counting-mode entry (a list, the cheapest mutable record in CPython).
_COUNT: Final = 0
_ID: Final = 1
_LEADING: Final = 2


class Guard:
    """Watches a stream of text chunks and trips when the output starts to loop.

    Keyword options (``None`` = default; numbers floored and clamped as SPEC §6 says; a
    non-number is a ``TypeError``): ``ngram`` (4), ``window`` (max(ngram, 48)),
    ``max_repeats`` (4), ``max_unique_ratio`` (0.4), ``min_chars`` (0).

    :meth:`push` costs O(len(chunk)) plus O(1) per completed word, amortised; memory is
    O(window) plus the current partial word (see the module docstring).

    >>> guard = Guard()
    >>> guard.push("All good so far. "), guard.reason
    (False, None)
    """

    __slots__ = (
        "_buf",
        "_counting",
        "_distinct",
        "_free",
        "_hapax",
        "_held",
        "_hold",
        "_key",
        "_keys",
        "_leading",
        "_lines",
        "_long",
        "_mask",
        "_newlines",
        "_next_id",
        "_normals",
        "_options",
        "_pending",
        "_phrases",
        "_quiet_min",
        "_reason",
        "_room",
        "_safe_words",
        "_seq",
        "_shift",
        "_table",
        "_threshold",
        "_total",
        "_trip_offset",
        "_words",
    )

    def __init__(
        self,
        *,
        ngram: float | None = None,
        window: float | None = None,
        max_repeats: float | None = None,
        max_unique_ratio: float | None = None,
        min_chars: float | None = None,
    ) -> None:
        options = guard_options(ngram, window, max_repeats, max_unique_ratio, min_chars)
        self._options: GuardOptions = options
        capacity = options.window + 1
        # Distinct words at or below this may trip (ratio <= max_unique_ratio at any size).
        self._threshold = options.max_unique_ratio * capacity
        self._quiet_min = max(2, capacity // 16)
        self._shift = max(1, options.window.bit_length())
        self._mask = (1 << (self._shift * options.ngram)) - 1
        self._normals: deque[str] = deque(maxlen=capacity)
        self._words: deque[str] = deque(maxlen=capacity)
        # (sequence number, newlines before it) of the window's words that follow newlines.
        self._lines: deque[tuple[int, int]] = deque()
        self._seq = 0  # kept words so far; the window holds [_seq - len(window), _seq)
        self._counting = True
        self._table: dict[str, list[int]] = {}
        self._free: list[int] = []
        self._next_id = 0
        self._phrases: dict[int, int] = {}
        self._keys: deque[int] = deque()  # keys of the window's phrases, oldest first
        self._key = 0
        self._distinct = 0
        self._hapax = 0
        self._newlines = 0
        self._leading = 0
        self._pending = 0  # newlines seen since the last kept word
        self._total = 0  # UTF-16 units of the pushes split so far
        self._buf = ""  # the partial word (its tail when _long holds pieces)
        self._long: list[str] = []  # head of a long partial word, in halving pieces
        self._held: list[str] = []  # pushes not yet split; they cannot trip
        self._hold = self._held.append
        self._room = 0  # budget of further pushes that may be held
        self._safe_words = 0  # words that cannot trip, as of the last batch
        self._reason: GuardReason | None = None
        self._trip_offset = -1  # index in the tripping push just past the tripping word

    @property
    def options(self) -> GuardOptions:
        """The resolved options."""
        return self._options

    @property
    def reason(self) -> GuardReason | None:
        """``None`` until the guard trips, then why it tripped (the first trip's reason)."""
        return self._reason

    def push(self, text: object) -> bool:
        """Feed the next chunk; True once the stream has tripped the guard (and ever after).

        A chunk that is not a ``str``, or is empty, changes nothing. Amortised O(len(text))
        plus O(1) per word it completes.
        """
        if isinstance(text, str) and text:
            self._hold(text)
            # A chunk completes at most one word per whitespace character. Printable text
            # holds no JavaScript whitespace but " "; otherwise each whitespace character
            # that completes a word follows a non-whitespace one: at most (len + 1) // 2.
            if text.isprintable():
                if " " in text:
                    room = self._room - (text.count(" ") * _WORD_COST + 1)
                else:
                    room = self._room - 1
            else:
                room = self._room - (((len(text) + 1) >> 1) * _WORD_COST + 1)
            self._room = room
            if room >= 0:
                return False
            return self._flush()
        return self._reason is not None

    # --------------------------------------------------------------------- splitting

    def _flush(self) -> bool:
        """Split the held pushes into words and feed them; True when the last push trips."""
        held = self._held
        if self._reason is not None:
            held.clear()
            return True
        last = held[-1]
        text = "".join(held) if len(held) > 1 else last
        held.clear()
        ascii_text = text.isascii()
        self._total += len(text) if ascii_text else utf16_len(text)
        plain = ascii_text and text.isprintable()
        parts = text.split(" ") if plain else _WS_SPLIT.split(text)
        if len(parts) == 1:
            self._extend_partial(text)
            self._settle()
            return False
        after: list[int] | None = None
        if ascii_text:
            # Normalise the whole batch at once: ASCII lower-casing and deletion work per
            # character, so the batch splits into the words' normal forms, in step.
            if plain:
                words = parts[:-1]
                joined = text  # the words, each followed by one space, then the tail
            else:
                words = parts[:-1:2]
                joined = " ".join(words)
            normal_text = joined.lower().encode().translate(None, _ASCII_DROP_BYTES).decode()
            normals = normal_text.split(" ")[: len(words)]
        else:
            words = parts[:-1:2]
            try:
                normals = list(map(_NORMAL.__getitem__, words))
            except KeyError:
                normals = list(map(normalize, words))
        if not plain and "\n" in text:
            spaces = parts[1::2]
            after = list(map(str.count, spaces, repeat("\n", len(spaces))))
        if self._long or self._buf:
            words[0] = "".join(self._long) + self._buf + words[0]
            normals[0] = normalize(words[0])
            self._long.clear()
            self._buf = ""
        tail = parts[-1]
        if tail:
            if len(tail) <= _SHORT_PARTIAL:
                self._buf = tail
            else:
                self._extend_partial(tail)
        tripped = self._feed(words, normals, after)
        if tripped < 0:
            self._settle()
            return False
        end = sum(map(len, parts[: 2 * tripped + 1]))
        if plain:
            end = sum(map(len, parts[: tripped + 1])) + tripped
        self._trip_offset = end - (len(text) - len(last))
        self._room = _TRIPPED_ROOM
        self._buf = ""
        self._long.clear()
        return True

    def _extend_partial(self, text: str) -> None:
        """Append whitespace-free ``text`` to the partial word, amortised O(len(text))."""
        if not text:
            return
        if not self._long and len(self._buf) + len(text) <= _SHORT_PARTIAL:
            self._buf += text
            return
        pieces = self._long
        pieces.append(self._buf + text)
        self._buf = ""
        # Each piece stays under half of the one before it: O(log n) pieces, and each
        # character is copied O(log n) times in all.
        while len(pieces) > 1 and 2 * len(pieces[-1]) >= len(pieces[-2]):
            top = pieces.pop()
            pieces[-1] += top

    def _safe(self) -> int:
        """How many more kept words provably cannot trip the guard (SPEC: the ratio test)."""
        distinct = self._distinct if self._counting else len(set(self._normals))
        slack = distinct - self._threshold
        # One word of margin against rounding at the ratio's boundary.
        return int(slack) - 1 if slack >= 2 else 0

    def _settle(self) -> None:
        """Choose the mode and the budget of pushes that may be held, after a batch."""
        slack = (
            self._distinct if self._counting else len(set(self._normals))
        ) - self._threshold
        safe = int(slack) - 1 if slack >= 2 else 0  # as _safe(), inlined: once per batch
        if self._counting and safe >= 2 * self._quiet_min:
            self._leave_counting()
        self._safe_words = safe
        self._room = min(safe * _WORD_COST, _MAX_HELD)

    def _leave_counting(self) -> None:
        """Drop the counting structures: the window is diverse enough again."""
        self._counting = False
        self._table.clear()
        self._phrases.clear()
        self._keys.clear()
        self._free.clear()

    # ------------------------------------------------------------------------- words

    def _feed(self, words: list[str], normals: list[str], after: list[int] | None) -> int:
        """Feed completed words; the index in ``words`` of the word that trips, or -1.

        ``normals[i]`` is ``normalize(words[i])``; ``after[i]`` the number of newlines in the
        whitespace after ``words[i]`` (None: no newlines at all).
        """
        pending = self._pending
        # Newlines before kept words, sparse: (index among the kept words, newlines).
        lines: list[tuple[int, int]] = []
        if after is None:
            if "" in normals:
                kept_normals = list(filter(None, normals))
                kept_words = list(compress(words, normals))
            else:
                kept_normals, kept_words = normals, words
            if kept_normals and pending:
                lines.append((0, pending))
                pending = 0
        elif "" not in normals:
            # Every word kept: word j follows the whitespace after word j - 1.
            kept_normals, kept_words = normals, words
            if pending:
                lines.append((0, pending))
            lines.extend((i + 1, after[i]) for i in compress(range(len(after) - 1), after))
            pending = after[-1]
        elif len(words) > _VECTOR_BATCH:
            kept_normals, kept_words, lines, pending = _kept_with_lines(
                words, normals, after, pending
            )
        else:
            kept_normals, kept_words = [], []
            for normal, word, newlines in zip(normals, words, after, strict=True):
                if normal:
                    if pending:
                        lines.append((len(kept_normals), pending))
                    kept_normals.append(normal)
                    kept_words.append(word)
                    pending = newlines
                else:
                    pending += newlines
        self._pending = pending
        count = len(kept_normals)
        if not count:
            return -1
        start = 0
        line = 0  # the first entry of `lines` not yet in the ring
        safe = self._safe_words  # as settled after the last batch; no word came since
        while True:
            if self._counting:
                tripped, start = self._count(kept_normals, kept_words, lines, start)
                if tripped >= 0:
                    break
                if start == count:
                    return -1
                self._leave_counting()  # the window is diverse again: back to quiet mode
                while line < len(lines) and lines[line][0] < start:
                    line += 1
                safe = self._safe()
            if safe < self._quiet_min:
                self._enter_counting()
                continue
            stop = count if start + safe >= count else start + safe
            ring_normals = self._normals
            base = self._seq - start
            if start == 0 and stop == count:
                ring_normals.extend(kept_normals)
                self._words.extend(kept_words)
            else:
                ring_normals.extend(kept_normals[start:stop])
                self._words.extend(kept_words[start:stop])
            if line < len(lines) and lines[line][0] < stop:
                upto = line + 1
                while upto < len(lines) and lines[upto][0] < stop:
                    upto += 1
                self._lines.extend([(base + i, nl) for i, nl in lines[line:upto]])
                line = upto
            self._seq += stop - start
            if len(ring_normals) > self._options.window:  # maxlen left window + 1
                ring_normals.popleft()
                self._words.popleft()
            ring_lines = self._lines
            if ring_lines:
                oldest = self._seq - len(ring_normals)
                while ring_lines and ring_lines[0][0] < oldest:
                    ring_lines.popleft()
            start = stop
            if start == count:
                return -1
            safe = self._safe()
        seen = -1
        for index, normal in enumerate(normals):
            if normal:
                seen += 1
                if seen == tripped:
                    return index
        raise AssertionError("tripping word not found")  # pragma: no cover

    def _window_newlines(self) -> list[int]:
        """Newlines before each word of the window, oldest first. O(window)."""
        size = len(self._normals)
        oldest = self._seq - size
        newlines = [0] * size
        for seq, nl in self._lines:
            newlines[seq - oldest] = nl
        return newlines

    def _enter_counting(self) -> None:
        """Rebuild the counting structures from the ring. O(window)."""
        self._counting = True
        table = self._table
        table.clear()
        self._free.clear()
        newlines = 0
        for normal, nl in zip(self._normals, self._window_newlines(), strict=True):
            entry = table.get(normal)
            if entry is None:
                entry = table[normal] = [0, len(table), 0]
            entry[_COUNT] += 1
            if nl:
                entry[_LEADING] += 1
                newlines += nl
        self._next_id = len(table)
        self._distinct = len(table)
        self._hapax = sum(1 for e in table.values() if e[_COUNT] == 1)
        self._leading = sum(1 for e in table.values() if e[_LEADING])
        self._newlines = newlines
        ngram = self._options.ngram
        shift = self._shift
        mask = self._mask
        phrases = self._phrases
        phrases.clear()
        keys = self._keys
        keys.clear()
        key = 0
        for size, normal in enumerate(self._normals, 1):
            key = ((key << shift) | table[normal][_ID]) & mask
            if size >= ngram:
                keys.append(key)
                phrases[key] = phrases.get(key, 0) + 1
        self._key = key

    def _count(
        self, normals: list[str], words: list[str], lines: list[tuple[int, int]], start: int
    ) -> tuple[int, int]:
        """Counting mode from ``normals[start]`` on: (the index of the word that trips or
        -1, the index to go on from). Stops early, without a trip, once the window is
        diverse enough to leave counting mode (safe >= 2 * quiet_min).

        ``lines`` holds (index, newlines before it) for the words that follow newlines.
        """
        options = self._options
        ngram = options.ngram
        window = options.window
        max_repeats = options.max_repeats
        ratio = options.max_unique_ratio
        shift = self._shift
        mask = self._mask
        enough = self._total >= options.min_chars
        exemptable = ratio < _EXEMPT_BELOW_RATIO
        table = self._table
        table_get = table.get
        free = self._free
        phrases = self._phrases
        phrases_get = phrases.get
        keys = self._keys
        ring_normals = self._normals
        ring_words = self._words
        ring_lines = self._lines
        size = len(ring_normals)
        seq = self._seq
        key = self._key
        distinct = self._distinct
        hapax = self._hapax
        newlines = self._newlines
        leading = self._leading
        next_id = self._next_id
        line_at = iter([*(line for line in lines if line[0] >= start), (-1, 0)])
        next_line, next_nl = next(line_at)
        tripped = -1
        # Distinct words from which _safe() reaches 2 * quiet_min: time to go quiet again.
        leave = math.ceil(self._threshold + 2 * self._quiet_min + 1)
        index = start
        for index in range(start, len(normals)):
            normal = normals[index]
            entry = table_get(normal)
            if entry is None:
                if free:
                    ident = free.pop()
                else:
                    ident = next_id
                    next_id += 1
                entry = table[normal] = [1, ident, 0]
                distinct += 1
                hapax += 1
            else:
                count = entry[_COUNT] + 1
                entry[_COUNT] = count
                if count == 2:
                    hapax -= 1
            if index == next_line:
                ring_lines.append((seq, next_nl))
                newlines += next_nl
                if not entry[_LEADING]:
                    leading += 1
                entry[_LEADING] += 1
                next_line, next_nl = next(line_at)
            ring_normals.append(normal)
            ring_words.append(words[index])
            seq += 1
            key = ((key << shift) | entry[_ID]) & mask
            size += 1
            if size >= ngram:
                repeats = phrases_get(key, 0) + 1
                phrases[key] = repeats
                keys.append(key)
                if repeats >= max_repeats and enough:
                    unique_ratio = distinct / size
                    if unique_ratio <= ratio:
                        hapax_ratio = hapax / size
                        if not (
                            exemptable
                            and newlines >= _EXEMPT_NEWLINES
                            and (hapax_ratio >= _EXEMPT_HAPAX or leading >= _EXEMPT_LEADING)
                        ):
                            self._trip(repeats, unique_ratio, hapax_ratio)
                            tripped = index
                            break
            if size > window:
                gone = ring_normals.popleft()
                ring_words.popleft()
                old_key = keys.popleft()
                repeats = phrases[old_key] - 1
                if repeats:
                    phrases[old_key] = repeats
                else:
                    del phrases[old_key]
                entry = table[gone]
                count = entry[_COUNT] - 1
                if count:
                    entry[_COUNT] = count
                    if count == 1:
                        hapax += 1
                else:
                    del table[gone]
                    free.append(entry[_ID])
                    distinct -= 1
                    hapax -= 1
                if ring_lines and ring_lines[0][0] == seq - size:
                    newlines -= ring_lines.popleft()[1]
                    entry[_LEADING] -= 1
                    if not entry[_LEADING]:
                        leading -= 1
                size -= 1
            if distinct >= leave:
                break
        else:
            index = len(normals) - 1
        self._seq = seq
        self._key = key
        self._distinct = distinct
        self._hapax = hapax
        self._newlines = newlines
        self._leading = leading
        self._next_id = next_id
        return tripped, index + 1

    def _trip(self, count: int, unique_ratio: float, hapax_ratio: float) -> None:
        """Record the reason for a trip at the newest word."""
        ngram = self._options.ngram
        normals = list(self._normals)[-ngram:]
        words = list(self._words)[-ngram:]
        self._reason = GuardReason(
            phrase=" ".join(normals),
            count=count,
            text=join_pairs(" ".join(words)),
            unique_ratio=unique_ratio,
            hapax_ratio=hapax_ratio,
        )

    # ---------------------------------------------------------------------- checking

    def _check(self) -> None:
        """Assert every internal invariant against a recomputation from the ring. O(window).

        Checks that the held pushes fit the budget of words that cannot trip; in counting
        mode, that every count, id, key and total equals its recomputation from the ring.
        """
        options = self._options
        normals = list(self._normals)
        words = list(self._words)
        nls = self._window_newlines()
        size = len(normals)
        assert len(words) == size
        seqs = [seq for seq, _ in self._lines]
        assert seqs == sorted(set(seqs))
        assert all(self._seq - size <= seq < self._seq for seq in seqs)
        assert size <= options.window + (1 if self._reason is not None else 0)
        assert all(
            normal == normalize(word) != "" for normal, word in zip(normals, words, strict=True)
        )
        assert all(nl > 0 for _, nl in self._lines)
        partial = "".join(self._long) + self._buf
        assert not _WS_SPLIT.search(partial)
        assert len(self._long) <= max(1, len(partial)).bit_length() + 1
        if self._reason is not None:
            return
        # Held pushes: at most `safe` words can complete in them, so they cannot trip.
        bound = sum(
            text.count(" ") if text.isprintable() else (len(text) + 1) // 2
            for text in self._held
        )
        held_cost = len(self._held) + bound * _WORD_COST
        assert len(self._held) <= _MAX_HELD
        if self._held:
            assert held_cost <= min(self._safe() * _WORD_COST, _MAX_HELD)
            assert bound <= self._safe()
        if not self._counting:
            assert not self._table and not self._phrases and not self._keys
            return
        frequency: dict[str, int] = {}
        leading: dict[str, int] = {}
        for normal, nl in zip(normals, nls, strict=True):
            frequency[normal] = frequency.get(normal, 0) + 1
            if nl:
                leading[normal] = leading.get(normal, 0) + 1
        table = self._table
        assert set(frequency) == set(table)
        for normal, entry in table.items():
            assert entry[_COUNT] == frequency[normal]
            assert entry[_LEADING] == leading.get(normal, 0)
        ids = [entry[_ID] for entry in table.values()]
        assert len(set(ids)) == len(ids)
        assert all(0 <= ident <= options.window for ident in ids)
        assert not set(ids) & set(self._free)
        assert self._next_id == len(ids) + len(self._free)
        assert self._distinct == len(frequency)
        assert self._hapax == sum(1 for c in frequency.values() if c == 1)
        assert self._newlines == sum(nls)
        assert self._leading == len(leading)
        ngram = options.ngram
        expected_keys = []
        for start in range(size - ngram + 1):
            key = 0
            for normal in normals[start : start + ngram]:
                key = (key << self._shift) | table[normal][_ID]
            expected_keys.append(key)
        assert list(self._keys) == expected_keys
        phrases: dict[int, int] = {}
        for key in expected_keys:
            phrases[key] = phrases.get(key, 0) + 1
        assert phrases == self._phrases
        if size:
            key = 0
            for normal in normals[-ngram:]:
                key = (key << self._shift) | table[normal][_ID]
            assert self._key & ((1 << (self._shift * min(size, ngram))) - 1) == key
