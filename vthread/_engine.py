"""The NumPy engine behind the cycle heuristics: one batch of threads, read lazily.

Messages are addressed by one flat index across the batch (per-thread offsets in
``starts``), but nothing is read from a message until a heuristic needs it. Each heuristic
knows how far back it can look: the suffix check's first comparison needs the texts of each
thread's second half, the activity tail its last eight types, the result run the types of
its messages back to the third settled tool response, the text run the last five. Each is
answered for all threads at once on 64-bit *screens* (CPython's cached string hashes of
type, text and tool name) held in flat NumPy arrays, filled in as they are read. A screen can
only merge messages, never separate two the reference calls equal (non-string values are
screened by their canonical text), so it never hides a loop; every loop the screens suggest
is confirmed on the canonical encodings of the real values (meta included), so a hash
collision can never invent one.

Why lazily: reading one field of one parsed message costs a few hundred nanoseconds of
pointer chasing, the same order as the whole reference step, so the messages not read are
the time saved. Python code runs per thread or per candidate, not per message.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from itertools import chain, filterfalse, islice, repeat
from operator import getitem
from typing import Any, Final, TypeGuard, cast

import numpy as np
import numpy.typing as npt

# "ref" names the shared message rules, no longer the scalar reference: the alias keeps the
# body of this file unchanged while it is being rewritten elsewhere; rename it on merge.
from vthread import _messages as ref
from vthread._jsvalue import canonical, canonical_from_json, plain_json
from vthread._options import CycleOptions, text_run_options
from vthread.replay import has_repeated_text_runs
from vthread.textrun import may_hold_units, runaway_units, text_units

SUFFIX: Final = 1
ACTIVITY_TAIL: Final = 2
RESULT_RUN: Final = 3
TEXT_RUN: Final = 4

_MISSING: Final = object()
# dict.get as a plain two-argument callable, for C-level map() over many dicts at once.
_get: Final = cast("Callable[[Any, str], Any]", dict.get)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# What a message's type is, as far as the heuristics care; _UNREAD until it is read.
_UNREAD: Final = 0
_ACTIVITY: Final = 1
_REASONING: Final = 2
_OTHER: Final = 3
_KIND_CODES: Final = {"activity": _ACTIVITY, "reasoning": _REASONING}
# Odd 64-bit multipliers (as int64) that spread the kind and name hashes before the XOR.
_MIX_KIND: Final = np.int64(0x9E3779B97F4A7C15 - 2**64)
_MIX_NAME: Final = np.int64(0xC2B2AE3D27D4EB4F - 2**64)
# Steps of the suffix check that compare only texts and type codes (see Batch.suffix).
_TEXT_ONLY_STEPS: Final = 3

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _field(objects: Sequence[Any], key: str) -> list[Any]:
    """``obj.get(key)`` for each object, ``_MISSING`` for an object that is not a mapping."""
    try:
        return list(map(dict.get, objects, repeat(key)))
    except TypeError:
        return [o.get(key) if isinstance(o, Mapping) else _MISSING for o in objects]


def _plain_strings(values: Sequence[Any]) -> bool:
    """True when every value is None or a str whose Python identity is its JS identity."""
    try:
        wide = list(filterfalse(str.isascii, values))  # TypeError unless all are str
    except TypeError:
        if not set(map(type, values)) <= {str, type(None)}:
            return False
        wide = [v for v in values if v is not None and not v.isascii()]
    if not set(map(type, wide)) <= {str}:
        return False
    try:
        "".join(wide).encode("utf-8")  # one C pass; strict UTF-8 refuses any surrogate
    except UnicodeEncodeError:
        return False
    return True


def _plain_equal(left: Any, right: Any) -> bool:
    """Reference equality of two type or text values, on canonical text unless plain str."""
    if type(left) is str and type(right) is str:
        if left == right:
            return True
        if left.isascii() or right.isascii() or not (
            _SURROGATE.search(left) or _SURROGATE.search(right)
        ):
            return False
    elif left is None and right is None:
        return True
    return canonical(left) == canonical(right)


def _screen_part(value: Any) -> Any:
    """A hashable stand-in equal for equal JSON values: the value itself when it is a plain
    string or None, so that a screen does not depend on what else was read with it."""
    if isinstance(value, str):
        if value.isascii() or not _SURROGATE.search(value):
            return str(value)
        # JavaScript sees UTF-16 code units: a surrogate pair is the code point it encodes.
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if value is _MISSING or value is None:
        return value
    text = canonical(value)
    # A tuple never equals a str, so no cross-talk; NaN and the infinities are null.
    return None if text == "null" else ("~", text)


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, answered without the ABC machinery for a dict."""
    return type(value) is dict or isinstance(value, Mapping)


def _all_distinct(values: Iterable[Any]) -> bool:
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            return False
        seen.add(value)
    return True


def _invariant(value: Any) -> Any:
    """A cheap shallow stand-in for a payload: equal whenever the canonical texts are equal.

    Plain strings stand for themselves, numbers for their double (NaN, infinities and
    integers beyond 2**53 join null), mappings with string keys for the set of their keys
    with shallow values, sequences for their length; anything else for its kind only.
    """
    if type(value) is str:
        return _screen_part(value)
    if _is_mapping(value):
        items = value.items()
        if all(type(k) is str for k in value):
            return frozenset((k, _shallow(v)) for k, v in items)
        return "{"  # a coerced key ({1: x} is {"1": x}) cannot be told apart cheaply
    return _shallow(value)


def _shallow(value: Any) -> Any:
    if type(value) is str:
        return _screen_part(value)
    if value is True or value is False:
        return value
    if type(value) is float or type(value) is int:
        number = float(value) if abs(value) < 2**53 else math.inf
        return number if math.isfinite(number) else None
    if value is None or value is _MISSING:
        return value
    if type(value) is list or isinstance(value, (list, tuple)):
        return ("[", len(value))
    return "{" if _is_mapping(value) else "?"


def check_threads(threads: object) -> list[Sequence[Any]]:
    """The batch as a list of threads; a ``TypeError`` names the bad thread and message.

    Every message is checked here, once, because the heuristics read only the messages they
    need and would otherwise let a bad one through unnoticed.
    """
    if isinstance(threads, (str, bytes, Mapping)) or not isinstance(threads, Iterable):
        raise TypeError(f"threads must be a sequence of threads, got {type(threads).__name__}")
    batch = list(threads)  # a generator of threads is read once, here
    if set(map(type, batch)) <= {list, tuple} and set(
        map(type, chain.from_iterable(batch))
    ) <= {dict}:
        return batch
    validate_messages(batch)
    return batch


def validate_messages(batch: list[Any]) -> None:
    """Raise the ``TypeError`` naming the first thread or message that is not well shaped."""
    for index, thread in enumerate(batch):
        try:
            ref.check_messages(thread)
        except TypeError as error:
            raise TypeError(f"thread {index}: {error}") from None


def _screens(values: list[Any]) -> npt.NDArray[np.int64]:
    """One hash per value, equal for values the reference calls equal."""
    if _plain_strings(values):
        return np.fromiter(map(hash, values), np.int64, len(values))
    return np.fromiter((hash(_screen_part(v)) for v in values), np.int64, len(values))


def _kind_codes(kinds: list[Any]) -> npt.NDArray[np.int8]:
    """ACTIVITY, REASONING or OTHER per ``type`` value, by Python equality as the reference."""
    try:
        return np.fromiter(map(_KIND_CODES.get, kinds, repeat(_OTHER)), np.int8, len(kinds))
    except TypeError:  # an unhashable type value: compare one by one
        return np.fromiter(
            (_ACTIVITY if k == "activity" else _REASONING if k == "reasoning" else _OTHER
             for k in kinds),
            np.int8,
            len(kinds),
        )


def _ranges(firsts: IntArray, stops: IntArray) -> IntArray:
    """The concatenated ``arange(first, stop)`` of each pair, in order."""
    spans = stops - firsts
    offsets = np.cumsum(spans) - spans
    return np.repeat(firsts - offsets, spans) + np.arange(int(spans.sum()), dtype=np.int64)


def _newest_first(firsts: IntArray, stops: IntArray) -> IntArray:
    """The concatenated ``arange(stop - 1, first - 1, -1)`` of each pair, in order."""
    spans = stops - firsts
    offsets = np.cumsum(spans) - spans
    return np.repeat(stops - 1 + offsets, spans) - np.arange(int(spans.sum()), dtype=np.int64)


class Batch:
    """A batch of threads, addressed by flat message index, with per-message screens that
    are read lazily: only the messages a heuristic can look at are ever touched."""

    def __init__(self, threads: object, *, checked: bool = False) -> None:
        """``checked``: ``threads`` is a list that :func:`check_threads` already passed."""
        self.threads = cast("list[Sequence[Any]]", threads) if checked else check_threads(threads)
        lengths = np.fromiter(map(len, self.threads), np.int64, len(self.threads))
        self.lengths: IntArray = lengths
        self.starts: IntArray = np.zeros(len(self.threads) + 1, np.int64)
        np.cumsum(lengths, out=self.starts[1:])
        self._bounds: list[int] = self.starts.tolist()
        self._size = self._bounds[-1]
        self._json_meta: dict[int, Any] = {}
        self._canonical: dict[int, str] = {}
        self._lite: dict[int, tuple[str, str, Mapping[str, Any]] | None] = {}
        self._parsed: dict[int, ref.Activity | None] = {}
        self._shallow: dict[int, tuple[Any, Any]] = {}
        self._units: dict[int, list[str]] = {}

    def __len__(self) -> int:
        return len(self.threads)

    # Per flat message: what has been read of it so far (0 in a screen means unread only
    # together with the matching flag). Made on first use: the single-thread paths that a
    # harness calls every turn never touch them.

    @cached_property
    def _text_screen(self) -> npt.NDArray[np.int64]:
        return np.zeros(self._size, np.int64)

    @cached_property
    def _text_read(self) -> BoolArray:
        return np.zeros(self._size, bool)

    @cached_property
    def _kind(self) -> npt.NDArray[np.int8]:
        """Type code per message, _UNREAD until the type is read."""
        return np.zeros(self._size, np.int8)

    @cached_property
    def _kind_screen(self) -> npt.NDArray[np.int64]:
        return np.zeros(self._size, np.int64)

    @cached_property
    def _kind_screened(self) -> BoolArray:
        return np.zeros(self._size, bool)

    @cached_property
    def _name_screen(self) -> npt.NDArray[np.int64]:
        """Screen of each tool call's (type, name); 0 for anything not typed "activity"."""
        return np.zeros(self._size, np.int64)

    @cached_property
    def _name_read(self) -> BoolArray:
        return np.zeros(self._size, bool)

    # ------------------------------------------------------------------ message access

    def message(self, index: int) -> Mapping[str, Any]:
        """The message at flat ``index``."""
        thread = bisect_right(self._bounds, index) - 1
        return self.threads[thread][index - self._bounds[thread]]  # type: ignore[no-any-return]

    def _messages(self, positions: IntArray) -> list[Any]:
        """The messages at the given flat indices, fetched at C speed."""
        owners = np.searchsorted(self.starts, positions, side="right") - 1
        local = positions - self.starts[owners]
        return list(map(getitem, map(self.threads.__getitem__, owners.tolist()), local.tolist()))

    def _range_messages(self, threads: IntArray, firsts: IntArray, stops: IntArray) -> list[Any]:
        """The messages of ``threads[i][firsts[i]:stops[i]]`` (thread-local bounds), in order."""
        return list(chain.from_iterable(map(
            getitem,
            map(self.threads.__getitem__, threads.tolist()),
            map(slice, firsts.tolist(), stops.tolist()),
        )))

    # ------------------------------------------------------------------------- screens

    def _read_texts(self, positions: IntArray, messages: list[Any] | None = None) -> None:
        """Screen the ``text`` of unread messages at ``positions`` (unique)."""
        if messages is None:
            messages = self._messages(positions)
        self._text_screen[positions] = _screens(_field(messages, "text"))
        self._text_read[positions] = True

    def _ensure_texts(self, positions: IntArray) -> None:
        need = positions[~self._text_read[positions]]
        if need.size:
            self._read_texts(np.unique(need))

    def _ensure_kinds(self, positions: IntArray, *, distinct: bool = False) -> None:
        """Read the type code of unread messages at ``positions`` (``distinct``: the caller
        promises no position twice, which saves sorting them)."""
        need = positions[self._kind[positions] == _UNREAD]
        if need.size:
            if not distinct:
                need = np.unique(need)
            self._kind[need] = _kind_codes(_field(self._messages(need), "type"))

    def _ensure_kind_screens(self, positions: IntArray) -> None:
        need = positions[~self._kind_screened[positions]]
        if need.size:
            need = np.unique(need)
            self._kind_screen[need] = _screens(_field(self._messages(need), "type"))
            self._kind_screened[need] = True

    def _ensure_names(self, positions: IntArray) -> None:
        self._ensure_kinds(positions)
        need = positions[(self._kind[positions] == _ACTIVITY) & ~self._name_read[positions]]
        if need.size:
            need = np.unique(need)
            self._name_screen[need] = _name_screens(self._messages(need))
            self._name_read[need] = True

    def screens(self, positions: IntArray) -> npt.NDArray[np.int64]:
        """The 64-bit screens of the messages at ``positions``: equal for messages the
        reference calls equal.

        A screen hashes (type, text) and, for a tool call, (activity type, function name):
        strings that are their own JavaScript identity hash as they are (CPython caches the
        hash on the string), anything else by its canonical text. The rest of meta is left
        out on purpose: reading it costs a walk of the value, and confirmation compares it.
        """
        self._ensure_texts(positions)
        self._ensure_kind_screens(positions)
        self._ensure_names(positions)
        # Wrapping multiplications keep the three hashes from cancelling each other.
        return (
            self._text_screen[positions]
            ^ (self._kind_screen[positions] * _MIX_KIND)
            ^ (self._name_screen[positions] * _MIX_NAME)
        )

    def same(self, first: int, second: int) -> bool:
        """Whether the reference calls messages ``first`` and ``second`` equal.

        Cheap proofs come first: equal plain strings, different tool-call names (a name is a
        string, so it is in the canonical text whatever else the meta holds), identical
        objects, equal JSON text from the C encoder. Only what they cannot settle is
        compared on canonical encodings.
        """
        if first == second:
            return True
        left, right = self.message(first), self.message(second)
        if left is right:
            return True
        if not (_plain_equal(left.get("type"), right.get("type"))
                and _plain_equal(left.get("text"), right.get("text"))):
            return False
        if ("meta" in left) != ("meta" in right):
            return False
        if "meta" not in left:
            return True
        lite_left, lite_right = self.lite(first), self.lite(second)
        if (lite_left is None) != (lite_right is None):
            return False  # a well-formed activity's meta never equals a malformed one's
        if lite_left is not None and lite_right is not None and (
            _screen_part(lite_left[0]) != _screen_part(lite_right[0])
            or _screen_part(lite_left[1]) != _screen_part(lite_right[1])
            or self.payloads(first) != self.payloads(second)
        ):
            return False
        if left["meta"] is right["meta"]:
            return True
        text_left, text_right = self._json(first), self._json(second)
        if text_left is not None and text_left == text_right:
            return True
        return self._canonical_meta(first) == self._canonical_meta(second)

    def _json(self, index: int) -> str | None:
        """The C encoder's text of message ``index``'s meta, None when it cannot encode it."""
        found = self._json_meta.get(index, _MISSING)
        if found is _MISSING:
            found = plain_json(self.message(index)["meta"])
            self._json_meta[index] = found
        return cast("str | None", found)

    def _canonical_meta(self, index: int) -> str:
        found = self._canonical.get(index)
        if found is None:
            found = canonical_from_json(self.message(index)["meta"], self._json(index))
            self._canonical[index] = found
        return found

    # ----------------------------------------------------------------- repeated suffix

    def suffix(self, options: CycleOptions, rows: IntArray | None = None) -> IntArray:
        """Per thread, the shortest repeating period (0 when the suffix does not repeat).

        Every (thread, period) pair starts as a candidate. Step ``k`` compares message
        ``end - 1 - k`` with the one a period earlier, for all surviving pairs at once; a
        pair that survives ``(reps - 1) * period`` steps is confirmed on real values. The
        first step needs the texts of each thread's second half (the messages a period can
        reach back to) and drops nearly every pair; later steps read only what survives.
        """
        count = len(self.threads)
        period = np.zeros(count, np.int64)
        reps = options.min_repetitions
        low = options.min_pattern_length
        high = self.lengths // reps
        if options.max_pattern_length is not None:
            high = np.minimum(high, options.max_pattern_length)
        eligible = (self.lengths >= low * reps) & (high >= low)
        if rows is not None:
            mask = np.zeros(count, bool)
            mask[rows] = True
            eligible &= mask
        if reps == 1:
            period[eligible] = low  # one copy of the last `low` messages is always there
            return period
        threads = np.flatnonzero(eligible)
        if threads.size == 0:
            return period
        ends = self.starts[threads + 1]
        reach = high[threads] + 1  # the last message and every message a period back
        self._screen_texts(threads, self.lengths[threads] - reach, self.lengths[threads])
        spans = high[threads] - low + 1
        pair_thread = np.repeat(threads, spans)
        first = np.repeat(np.cumsum(spans) - spans, spans)
        pair_period = low + np.arange(pair_thread.size, dtype=np.int64) - first
        pair_end = np.repeat(ends, spans)
        pair_need = (reps - 1) * pair_period
        step = 0
        while pair_thread.size:
            done = pair_need == step
            if done.any():
                finished = self._screened_blocks(pair_end[done], pair_period[done], step)
                for thread, length in zip(pair_thread[done][finished].tolist(),
                                          pair_period[done][finished].tolist(), strict=True):
                    if period[thread] == 0 and self._confirm_suffix(thread, length, reps):
                        period[thread] = length
                keep = ~done & (period[pair_thread] == 0)
                pair_thread, pair_period = pair_thread[keep], pair_period[keep]
                pair_end, pair_need = pair_end[keep], pair_need[keep]
            if not pair_thread.size:
                break
            position = pair_end - 1 - step
            earlier = position - pair_period
            if step < _TEXT_ONLY_STEPS:
                # Texts and types were read with the window: comparing them costs nothing,
                # and it leaves few pairs for the tool names, which cost four reads each.
                # (``position`` lies in the window read above; ``earlier`` may not.)
                self._ensure_texts(earlier)
                self._ensure_kinds(earlier)
                same = (self._text_screen[position] == self._text_screen[earlier]) & (
                    self._kind[position] == self._kind[earlier]
                )
            else:
                screens = self.screens(np.concatenate([position, earlier]))
                same = screens[: position.size] == screens[position.size :]
            pair_thread, pair_period = pair_thread[same], pair_period[same]
            pair_end, pair_need = pair_end[same], pair_need[same]
            step += 1
        return period

    def suffix_of(self, thread: int, options: CycleOptions) -> int:
        """:meth:`suffix` for one thread, period by period, without arrays: what a harness
        that checks one thread per turn pays. A period is confirmed only when the last two
        messages agree with the two a period back on text, type and tool name."""
        start, end = self._bounds[thread], self._bounds[thread + 1]
        size = end - start
        reps = options.min_repetitions
        low, high = options.pattern_range(size)
        if size < low * reps or high < low:
            return 0
        if reps == 1:
            return low
        messages = self.threads[thread]
        text = messages[size - 1].get("text")
        lengths: Iterable[int] = range(low, high + 1)
        if type(text) is str and text.isascii():
            # Only an identical string can equal an ASCII one in JavaScript, so plain ==
            # on the raw texts picks the candidate periods without building any key.
            lengths = [p for p in lengths if messages[size - 1 - p].get("text") == text]
        keys: dict[int, tuple[Any, ...]] = {}
        last = self._suffix_key(end - 1, keys)
        # A period p needs message end-1 to equal end-1-p and, when the block spans two
        # messages or more, end-2 to equal end-2-p: both are checked on keys first.
        second = self._suffix_key(end - 2, keys) if size >= 2 else None
        for length in lengths:
            if self._suffix_key(end - 1 - length, keys) != last:
                continue
            if (reps - 1) * length >= 2 and self._suffix_key(end - 2 - length, keys) != second:
                continue
            if self._confirm_suffix(thread, length, reps):
                return length
        return 0

    def _suffix_key(self, index: int, keys: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
        """A stand-in of message ``index`` equal for messages the reference calls equal:
        its text and type, and for a message typed "activity" its tool call's (type, name)
        (None when malformed), kept in ``keys``."""
        found = keys.get(index)
        if found is None:
            message = self.message(index)
            kind = message.get("type")
            found = (_screen_part(message.get("text")), _screen_part(kind))
            if kind == "activity":
                lite = self.lite(index)
                found += (None if lite is None
                          else (_screen_part(lite[0]), _screen_part(lite[1])),)
            keys[index] = found
        return found

    def _screened_blocks(self, ends: IntArray, periods: IntArray, depth: int) -> BoolArray:
        """For pairs whose last ``depth`` messages matched a period back on texts and types:
        which also match on full screens (tool names included), all pairs at once."""
        if depth > _TEXT_ONLY_STEPS:
            return np.ones(ends.size, bool)  # the deeper steps compared full screens already
        back = np.arange(depth, dtype=np.int64)
        position = (ends[:, None] - 1 - back[None, :]).ravel()
        screens = self.screens(np.concatenate([position, position - np.repeat(periods, depth)]))
        same = screens[: position.size] == screens[position.size :]
        return same.reshape(ends.size, depth).all(axis=1)  # type: ignore[no-any-return]

    def _screen_texts(self, threads: IntArray, firsts: IntArray, stops: IntArray) -> None:
        """Screen the texts and read the types of ``threads[i][firsts[i]:stops[i]]``,
        gathered slice by slice."""
        offsets = self.starts[threads]
        positions = _ranges(offsets + firsts, offsets + stops)
        if self._text_read[positions].any() or self._kind[positions].any():
            self._ensure_texts(positions)
            self._ensure_kinds(positions)
        else:
            messages = self._range_messages(threads, firsts, stops)
            self._read_texts(positions, messages)
            # The types ride along: the other heuristics read them near the end of the thread.
            self._kind[positions] = _kind_codes(_field(messages, "type"))

    def _confirm_suffix(self, thread: int, length: int, reps: int) -> bool:
        end = self._bounds[thread + 1]
        same = self.same
        return all(
            same(end - 1 - k, end - 1 - k - length) for k in range((reps - 1) * length)
        )

    def suffix_repetitions(self, thread: int, length: int) -> int:
        """How many back-to-back copies of the last ``length`` messages end the thread."""
        start, end = self._bounds[thread], self._bounds[thread + 1]
        copies = 1
        while end - (copies + 1) * length >= start and all(
            self.same(end - 1 - k, end - 1 - k - copies * length)
            for k in range(length)
        ):
            copies += 1
        return copies

    # ------------------------------------------------------------------- activities

    def _typed_tails(self, threads: IntArray, depth: int) -> IntArray:
        """The threads whose last ``depth`` messages are all typed "activity"."""
        threads = threads[self.lengths[threads] >= depth]
        ends = self.starts[threads + 1]
        for back in range(1, depth + 1):  # one message further back per round
            if not threads.size:
                break
            position = ends - back
            self._ensure_kinds(position, distinct=True)
            typed = self._kind[position] == _ACTIVITY
            threads, ends = threads[typed], ends[typed]
        return threads

    def activity_tail(self, rows: IntArray | None = None) -> IntArray:
        """Per thread, where the looping activity tail starts (-1 when there is none).

        A tail needs at least 8 messages typed "activity" at the end of the thread, which
        the arrays find for all threads at once; only those tails are parsed.
        """
        found = np.full(len(self.threads), -1, np.int64)
        threads = np.arange(len(self.threads)) if rows is None else np.asarray(rows, np.int64)
        threads = self._typed_tails(threads, ref.ACTIVITY_TAIL_MIN_LENGTH)
        if not threads.size:
            return found
        run_starts = self._typed_run_starts(threads, ref.ACTIVITY_TAIL_MIN_LENGTH)
        ends = self.starts[threads + 1]
        self._read_lite(_ranges(run_starts, ends))
        lite = self._lite
        for thread, first, end in zip(threads.tolist(), run_starts.tolist(), ends.tolist(),
                                      strict=True):
            begin = end
            while begin > first and lite[begin - 1] is not None:
                begin -= 1
            if self._tail_collapsed(begin, end):
                found[thread] = begin
        return found

    def _typed_run_starts(self, threads: IntArray, known: int) -> IntArray:
        """Where each thread's trailing run of messages typed "activity" begins, given that
        its last ``known`` messages are typed so; read back in rounds of doubling width."""
        found = np.empty(threads.size, np.int64)
        rows = np.arange(threads.size)
        depth, width = known, known
        while rows.size:
            heads = self.starts[threads[rows]]
            ends = self.starts[threads[rows] + 1] - depth
            firsts = np.maximum(heads, ends - width)
            spans = ends - firsts
            positions = _newest_first(firsts, ends)
            self._ensure_kinds(positions, distinct=True)
            # Per row, the first message (newest first) that is not typed "activity".
            index = np.where(self._kind[positions] != _ACTIVITY,
                             np.arange(positions.size), positions.size)
            offsets = np.cumsum(spans) - spans
            nonempty = spans > 0
            first_break = np.full(rows.size, positions.size)
            if positions.size:
                first_break[nonempty] = np.minimum.reduceat(index, offsets[nonempty])
            broken = first_break < positions.size
            found[rows[broken]] = positions[first_break[broken]] + 1
            exhausted = ~broken & (firsts == heads)
            found[rows[exhausted]] = heads[exhausted]
            rows = rows[~broken & ~exhausted]
            depth, width = depth + width, 2 * width
        return found

    def _read_lite(self, positions: IntArray) -> None:
        """:meth:`lite` for many messages typed "activity" at once, read at C speed when
        they are plain dicts and strings (one by one otherwise)."""
        need = [p for p in positions.tolist() if p not in self._lite]
        if not need:
            return
        messages = self._messages(np.asarray(need, np.int64))
        metas = _field(messages, "meta")
        activities = _field(metas, "activity")
        kinds = _field(activities, "type")
        functions = _field(activities, "function")
        names = _field(functions, "name")
        if (
            set(map(type, metas)) | set(map(type, activities)) | set(map(type, functions))
            <= {dict}
            and set(map(type, kinds)) | set(map(type, names)) <= {str}
        ):
            self._lite.update(zip(need, zip(kinds, names, functions, strict=True), strict=True))
        else:
            for position in need:
                self.lite(position)

    def activity_tail_of(self, thread: int) -> bool:
        """:meth:`activity_tail` for one thread, walking back from its end."""
        messages = self.threads[thread]
        least = ref.ACTIVITY_TAIL_MIN_LENGTH
        if len(messages) < least or any(
            m.get("type") != "activity" for m in messages[-least:]
        ):
            return False  # most threads: the last eight types already say no
        return self._tail_collapsed(self.tail_start(thread), self._bounds[thread + 1])

    def _tail_collapsed(self, begin: int, end: int) -> bool:
        if end - begin < ref.ACTIVITY_TAIL_MIN_LENGTH or not self.may_collapse(begin, end):
            return False
        tail = [self.parsed(i) for i in range(begin, end)]
        return tail_collapsed([a for a in tail if a is not None])

    def lite(self, index: int) -> tuple[str, str, Mapping[str, Any]] | None:
        """(type, name, function) of a well-formed activity, or None; reads no payload."""
        found = self._lite.get(index, _MISSING)
        if found is _MISSING:
            found = None
            message = self.message(index)
            if message.get("type") == "activity":
                meta = message.get("meta")
                activity = meta.get("activity") if _is_mapping(meta) else None
                if _is_mapping(activity):
                    function = activity.get("function")
                    kind = activity.get("type")
                    if _is_mapping(function) and isinstance(kind, str):
                        name = function.get("name")
                        if isinstance(name, str):
                            found = (kind, name, function)
            self._lite[index] = found
        return found  # type: ignore[return-value]

    def payloads(self, index: int) -> tuple[Any, Any]:
        """Shallow invariants of a well-formed activity's (arguments, result), absent parts
        as a marker: equal whenever the canonical payloads are equal (see _invariant).
        Kept per message, since one message is compared with many."""
        found = self._shallow.get(index)
        if found is None:
            lite = self.lite(index)
            function: Mapping[str, Any] = lite[2] if lite is not None else {}
            found = (_invariant(function.get("arguments", _MISSING)),
                     _invariant(function.get("result", _MISSING)))
            self._shallow[index] = found
        return found

    def parsed(self, index: int) -> ref.Activity | None:
        """Message ``index`` as a well-formed activity with canonical payloads, or None."""
        found = self._parsed.get(index, _MISSING)
        if found is _MISSING:
            found = ref.parse_activity(self.message(index)) if self.lite(index) else None
            self._parsed[index] = found
        return found  # type: ignore[return-value]

    def tail_start(self, thread: int) -> int:
        """Where the thread's trailing run of well-formed activities begins."""
        start, index = self._bounds[thread], self._bounds[thread + 1]
        while index > start and self.lite(index - 1) is not None:
            index -= 1
        return index

    def may_collapse(self, begin: int, end: int) -> bool:
        """The tail conditions checked on shallow invariants instead of canonical payloads.

        Values the reference calls equal have equal invariants, so every count of distinct
        invariants is a lower bound of the reference's count and every repeat the reference
        sees is a repeat here: a tail rejected here is rejected by the reference too. The
        checks run cheapest first.
        """
        entries = [(i, p) for i in range(begin, end) if (p := self.lite(i)) is not None]
        requests = [i for i, (k, _, f) in entries if k == "request" and "arguments" in f]
        responses = [i for i, (k, _, f) in entries if k == "response" and "result" in f]
        least = ref.ACTIVITY_TAIL_MIN_WITH_PAYLOAD
        if len(requests) < least or len(responses) < least:
            return False
        kinds = [_screen_part(k) for _, (k, _, _) in entries]
        names = [_screen_part(n) for _, (_, n, _) in entries]
        pairs = set(zip(kinds, names, strict=True))
        if len(set(names)) == len(names) or 2 * len(pairs) > len(entries):
            return False
        payloads = self.payloads
        if _all_distinct(payloads(i)[0] for i in requests):
            return False
        if _all_distinct(payloads(i)[1] for i in responses):
            return False
        signatures = set(zip(kinds, names, (payloads(i) for i, _ in entries), strict=True))
        return 2 * len(signatures) <= len(entries)

    def distinct_signatures(self, begin: int, end: int) -> int:
        """Distinct (type, name, arguments, result) among the activities in [begin, end)."""
        parsed = (self.parsed(i) for i in range(begin, end))
        return len({(a.kind, a.name, a.arguments, a.result) for a in parsed if a is not None})

    # ------------------------------------------------------------------- result runs

    def result_run_of(self, thread: int, options: CycleOptions) -> bool:
        """:meth:`result_run` for one thread, walking back over its settled responses."""
        needed = options.min_result_repetitions
        run = list(islice(self._settled_back(thread), needed))
        return len(run) == needed and self._same_results(run)

    def result_run(self, options: CycleOptions, rows: IntArray | None = None) -> BoolArray:
        """Per thread, whether its newest settled tool results are identical.

        Threads are walked back from their ends in rounds of doubling depth, all at once:
        each round reads the types of one more stretch of messages and the call names of the
        tool responses among them, and a thread leaves as soon as it holds enough settled
        responses (or runs out of messages). Most threads leave in the first round.
        """
        needed = options.min_result_repetitions
        count = len(self.threads)
        fired = np.zeros(count, bool)
        threads = np.arange(count) if rows is None else np.asarray(rows, np.int64)
        threads = threads[self.lengths[threads] >= needed]
        newest: dict[int, list[int]] = {}
        names: dict[int, set[int]] = {}  # screens of the names in each run so far
        depth, width = 0, 2 * needed + 2
        while threads.size:
            ends = self.starts[threads + 1] - depth
            firsts = np.maximum(self.starts[threads], ends - width)
            positions = _newest_first(firsts, ends)
            owners = np.repeat(threads, ends - firsts)
            self._ensure_kinds(positions, distinct=True)
            typed = self._kind[positions] == _ACTIVITY
            positions, owners = positions[typed], owners[typed]
            settled, name_keys = self._settled(positions)
            for thread, position, key in zip(owners[settled].tolist(),
                                             positions[settled].tolist(),
                                             name_keys[settled].tolist(), strict=True):
                run = newest.setdefault(thread, [])
                if len(run) < needed:
                    run.append(position)
                    names.setdefault(thread, set()).add(key)
            more = np.fromiter(
                (len(newest.get(t, ())) < needed for t in threads.tolist()), bool, threads.size
            )
            threads = threads[more & (firsts > self.starts[threads])]
            depth, width = depth + width, 2 * width
        for thread, run in newest.items():
            if len(run) == needed and len(names[thread]) == 1:
                fired[thread] = self._same_results(run)
        return fired

    def _settled(self, positions: IntArray) -> tuple[BoolArray, IntArray]:
        """Which of the messages at ``positions`` (typed "activity") are settled responses:
        well formed, of type "response", with a ``result``, and a name not starting with
        "_" - the responses :func:`has_repeated_result_run` compares - and a screen of each
        settled one's name (0 for the others)."""
        if not positions.size:
            return np.zeros(0, bool), np.zeros(0, np.int64)
        messages = self._messages(positions)
        activities = _field(_field(messages, "meta"), "activity")
        kinds = _field(activities, "type")
        size = len(messages)
        # Requests are half of all tool messages: their functions are never read.
        responses = [i for i, kind in enumerate(kinds) if kind == "response"]
        functions = _field([activities[i] for i in responses], "function")
        names = _field(functions, "name")
        flags = np.zeros(size, bool)
        try:
            # The common case, every function a dict and every name a str, runs at C speed.
            if not set(map(type, names)) <= {str}:
                raise TypeError
            found = np.fromiter(map(dict.__contains__, functions, repeat("result")), bool,
                                len(responses))
            found &= ~np.fromiter(map(str.startswith, names, repeat("_")), bool, len(responses))
        except TypeError:
            found = np.fromiter(
                (
                    isinstance(kinds[i], str) and isinstance(n, str) and _is_mapping(f)
                    and "result" in f and not n.startswith("_")
                    for i, n, f in zip(responses, names, functions, strict=True)
                ),
                bool,
                len(responses),
            )
        flags[np.asarray(responses, np.int64)] = found
        names_at = dict(zip(responses, names, strict=True))
        keys = np.zeros(size, np.int64)
        chosen = np.flatnonzero(flags)
        keys[chosen] = _screens([names_at[i] for i in chosen.tolist()])
        return flags, keys

    def _same_results(self, positions: list[int]) -> bool:
        lite = [self.lite(i) for i in positions]
        if len({_screen_part(entry[1]) for entry in lite if entry is not None}) != 1:
            return False
        if len({self.payloads(i) for i in positions}) > 1:
            return False  # the invariants differ, so the canonical payloads do too
        run = [self.parsed(i) for i in positions]
        return len({(a.name, a.arguments, a.result) for a in run if a is not None}) == 1

    def _settled_back(self, thread: int) -> Iterator[int]:
        """The thread's settled responses, newest first."""
        for position in range(self._bounds[thread + 1] - 1, self._bounds[thread] - 1, -1):
            lite = self.lite(position)
            if (
                lite is not None
                and lite[0] == "response"
                and "result" in lite[2]
                and not lite[1].startswith("_")
            ):
                yield position

    def result_run_span(self, thread: int) -> tuple[int, int, int]:
        """(loop_start, period, repetitions) of a thread whose result run fired.

        The run is extended back over settled responses while (name, arguments, result)
        stays the same, as :func:`vthread._reference.result_run_span` defines it.
        """
        positions: list[int] = []
        signature: tuple[str, str, str] | None = None
        for position in self._settled_back(thread):
            if signature is not None and self.lite(position)[1] != signature[0]:  # type: ignore[index]
                break
            activity = self.parsed(position)
            assert activity is not None
            current = (activity.name, activity.arguments, activity.result)
            if signature is None:
                signature = current
            elif current != signature:
                break
            positions.append(position)
        offset = self._bounds[thread]
        first = positions[-1]
        begin = first
        before = self.lite(first - 1) if first > offset else None
        if (
            before is not None
            and before[0] == "request"
            and signature is not None
            and before[1] == signature[0]
        ):
            begin = first - 1
        spacing = (positions[0] - positions[-1]) / (len(positions) - 1)
        return begin - offset, max(1, round(spacing)), len(positions)

    def newest_settled(self, thread: int) -> ref.Activity:
        """The newest settled response of a thread whose result run fired."""
        activity = self.parsed(next(self._settled_back(thread)))
        assert activity is not None
        return activity

    # -------------------------------------------------------------------- text runs

    def text_run(self, rows: IntArray | None = None) -> IntArray:
        """Per thread, the first of its last five messages with a runaway text (-1: none)."""
        found = np.full(len(self.threads), -1, np.int64)
        threads = np.arange(len(self.threads)) if rows is None else np.asarray(rows, np.int64)
        if threads.size == 0:
            return found
        ends = self.starts[threads + 1]
        firsts = np.maximum(self.starts[threads], ends - ref.THREAD_TEXT_RUN_MESSAGES)
        positions = _ranges(firsts, ends)
        owners = np.repeat(threads, ends - firsts)
        self._ensure_kinds(positions)
        spoken = self._kind[positions] == _OTHER
        positions, owners = positions[spoken], owners[spoken]
        options = text_run_options()
        texts = _field(self._messages(positions), "text")
        # A text needs min_units - 1 separators to hold min_units units: most candidates are
        # rejected by counting, and the rest go through the bulk twin in one call.
        candidates = [
            (thread, position, text)
            for thread, position, text in zip(owners.tolist(), positions.tolist(), texts,
                                              strict=True)
            if may_hold_units(text, options.min_units)
        ]
        fired = has_repeated_text_runs(
            [text for _, _, text in candidates],
            min_units=options.min_units,
            window=options.window,
            max_unique_ratio=options.max_unique_ratio,
        )
        for (thread, position, _), hit in zip(candidates, fired.tolist(), strict=True):
            if hit and found[thread] < 0:
                found[thread] = position - self._bounds[thread]
        return found

    def text_run_of(self, thread: int) -> bool:
        """:meth:`text_run` for one thread, text by text."""
        return bool(self.text_run_messages(thread))

    def text_run_messages(self, thread: int) -> list[int]:
        """Offsets (within the thread) of its last five messages that carry a runaway text."""
        messages = self.threads[thread]
        offset = self._bounds[thread]
        start = max(0, len(messages) - ref.THREAD_TEXT_RUN_MESSAGES)
        options = text_run_options()
        return [
            index
            for index in range(start, len(messages))
            if messages[index].get("type") not in ("reasoning", "activity")
            and may_hold_units(messages[index].get("text"), options.min_units)
            and runaway_units(self.units(offset + index), options)
        ]

    def units(self, index: int) -> list[str]:
        """The text units of message ``index`` (a string text), split once and kept: loop
        attribution asks for them again (repetitions, signature)."""
        found = self._units.get(index)
        if found is None:
            found = text_units(self.message(index)["text"])
            self._units[index] = found
        return found


def _name_screens(messages: list[Any]) -> npt.NDArray[np.int64]:
    """Hash of (activity type, function name) for each message, read at C speed.

    Missing parts hash as a constant; a part that is not a plain string hashes by its
    canonical text, so messages the reference calls equal always share a screen.
    """
    try:
        # One lazy pass per level keeps each dict's reads together in the cache.
        activities: Any = list(
            map(_get, map(_get, messages, repeat("meta")), repeat("activity"))
        )
        kinds = list(map(_get, activities, repeat("type")))
        names = list(map(_get, map(_get, activities, repeat("function")), repeat("name")))
    except TypeError:
        activities = _field(_field(messages, "meta"), "activity")
        kinds = _field(activities, "type")
        names = _field(_field(activities, "function"), "name")
    if _plain_strings(kinds) and _plain_strings(names):
        rows: Any = zip(kinds, names, strict=True)
    else:
        rows = [(_screen_part(k), _screen_part(n)) for k, n in zip(kinds, names, strict=True)]
    return np.fromiter(map(hash, rows), np.int64, len(messages))


def tail_collapsed(tail: Sequence[ref.Activity]) -> bool:
    """Whether a trailing run of activities re-treads a small set of calls (SPEC.md §4,
    repeated_activity_tail); the caller has checked that the run is long enough.

    The engine's own statement of the rule, kept apart from
    :func:`vthread._reference.tail_collapsed` so that the property tests hold two
    implementations to each other: one pass gathers every count, then each condition is
    read off the counts. O(len(tail)).
    """
    arguments: Counter[str] = Counter()  # requests that carry arguments
    results: Counter[str] = Counter()  # responses that carry a result
    names: set[str] = set()
    answers: dict[tuple[str, str], list[str]] = {}  # (name, arguments) -> results in order
    previous: ref.Activity | None = None
    for activity in tail:
        names.add(activity.name)
        if activity.kind == "request" and activity.arguments != ref.ABSENT:
            arguments[activity.arguments] += 1
        if activity.kind == "response":
            if activity.result != ref.ABSENT:
                results[activity.result] += 1
            if previous is not None and previous.kind == "request" and (
                previous.name == activity.name
            ):
                answers.setdefault((previous.name, previous.arguments), []).append(
                    activity.result
                )
        previous = activity
    calls, answered = arguments.total(), results.total()
    if min(calls, answered) < ref.ACTIVITY_TAIL_MIN_WITH_PAYLOAD:
        return False
    # Activity is a frozen dataclass of (kind, name, arguments, result): the set holds the
    # distinct signatures.
    if 2 * len(set(tail)) > len(tail):
        return False
    if len(names) == len(tail) or len(arguments) == calls or len(results) == answered:
        return False  # no name, no arguments or no result repeats
    return not any(
        len(given) >= ref.PROGRESS_MIN_ANSWERS and len(set(given)) == len(given)
        for given in answers.values()
    )
