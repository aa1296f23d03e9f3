"""The NumPy engine behind the cycle heuristics: one batch of threads, flattened.

All messages of all threads sit in one flat list with per-thread offsets. Every message gets
a 64-bit *screen* fingerprint of its (type, text, meta present) from CPython's cached string
hash, and the suffix check runs as array comparisons of screens across every thread and
every candidate period at once. A screen can only merge messages, never separate two the
reference calls equal (non-string values are screened by their canonical text), so it
never hides a loop; every loop the screens suggest is then confirmed on the canonical
encodings of the real values (meta included), so a hash collision can never invent one.
The activity checks read tool calls through the same flat arrays and confirm on canonical
encodings of arguments and results.

Per batch of N messages the passes over messages run at C speed (``map``/``zip``/NumPy); Python
code runs per candidate, not per message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain, filterfalse, islice, repeat
from operator import eq
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from vthread import _reference as ref
from vthread._jsvalue import canonical, canonical_from_json, plain_json
from vthread._options import CycleOptions, text_run_options
from vthread.replay import has_repeated_text_runs
from vthread.textrun import may_hold_units, runaway

SUFFIX: Final = 1
ACTIVITY_TAIL: Final = 2
RESULT_RUN: Final = 3
TEXT_RUN: Final = 4

_MISSING: Final = object()
# dict.get as a plain two-argument callable, for C-level map() over many dicts at once.
_get: Final = cast("Callable[[Any, str], Any]", dict.get)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_NO_PAIR: Final = np.empty(0, np.int64)

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
    """A hashable stand-in equal for equal JSON values (the value itself when it is plain)."""
    if type(value) is str and (value.isascii() or not _SURROGATE.search(value)):
        return value
    if value is _MISSING:
        return value
    return ("~", canonical(value))  # a tuple never equals a str, so no cross-talk


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
    if isinstance(value, Mapping):
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
    if isinstance(value, (list, tuple)):
        return ("[", len(value))
    return "{" if isinstance(value, Mapping) else "?"


def check_threads(threads: object) -> list[Sequence[Any]]:
    """The batch as a list of threads; a ``TypeError`` names the bad thread and message."""
    if isinstance(threads, (str, bytes, Mapping)) or not isinstance(threads, Iterable):
        raise TypeError(f"threads must be a sequence of threads, got {type(threads).__name__}")
    batch = list(threads)  # a generator of threads is read once, here
    if set(map(type, batch)) <= {list, tuple}:
        return batch  # messages are checked as their fields are read (see Batch)
    validate_messages(batch)
    return batch


def validate_messages(batch: list[Any]) -> None:
    """Raise the ``TypeError`` naming the first thread or message that is not well shaped."""
    for index, thread in enumerate(batch):
        try:
            ref.check_messages(thread)
        except TypeError as error:
            raise TypeError(f"thread {index}: {error}") from None


class Batch:
    """A batch of threads, flattened, with the per-message arrays the heuristics read."""

    def __init__(self, threads: object) -> None:
        self.threads = check_threads(threads)
        self.flat: list[Mapping[str, Any]] = list(chain.from_iterable(self.threads))
        lengths = np.fromiter(map(len, self.threads), np.int64, len(self.threads))
        self.lengths: IntArray = lengths
        self.starts: IntArray = np.zeros(len(self.threads) + 1, np.int64)
        np.cumsum(lengths, out=self.starts[1:])
        flat: Any = self.flat
        try:
            self.kinds: list[Any] = list(map(dict.get, flat, repeat("type")))
        except TypeError:
            validate_messages(self.threads)  # raises for anything that is not a mapping
            self.kinds = [m.get("type") for m in flat]
        self.texts: list[Any] = _field(flat, "text")
        self._screen: npt.NDArray[np.int64] | None = None
        self._activities: _Activities | None = None
        self._json_meta: dict[int, Any] = {}
        self._canonical: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.threads)

    # ------------------------------------------------------------------- fingerprints

    @property
    def screen(self) -> npt.NDArray[np.int64]:
        """One 64-bit screen per message: equal for messages the reference calls equal.

        It hashes (type, text) and, for a tool call, (activity type, function name): strings
        that are their own JavaScript identity hash as they are (CPython caches the hash on
        the string), anything else by its canonical text. The rest of meta is left out on
        purpose: reading it costs a walk of the value, and confirmation compares it anyway.
        """
        if self._screen is None:
            if _plain_strings(self.kinds) and _plain_strings(self.texts):
                rows: Any = zip(self.kinds, self.texts, strict=True)
            else:
                rows = [
                    (_screen_part(k), _screen_part(t))
                    for k, t in zip(self.kinds, self.texts, strict=True)
                ]
            screen = np.fromiter(map(hash, rows), np.int64, len(self.flat))
            # Wrapping multiplication keeps the two hashes from cancelling each other.
            with np.errstate(over="ignore"):
                screen ^= self.activities.name_screens * np.int64(0x9E3779B97F4A7C15 - 2**64)
            self._screen = screen
        return self._screen

    def same(self, first: int, second: int) -> bool:
        """Whether the reference calls messages ``first`` and ``second`` equal.

        Cheap proofs come first: equal plain strings, different tool-call names (a name is a
        string, so it is in the canonical text whatever else the meta holds), identical
        objects, equal JSON text from the C encoder. Only what they cannot settle is
        compared on canonical encodings.
        """
        if first == second:
            return True
        kinds, texts = self.kinds, self.texts
        if not (_plain_equal(kinds[first], kinds[second])
                and _plain_equal(texts[first], texts[second])):
            return False
        left, right = self.flat[first], self.flat[second]
        if ("meta" in left) != ("meta" in right):
            return False
        if "meta" not in left:
            return True
        names = self.activities.name_screens
        if names[first] != names[second]:
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
            found = plain_json(self.flat[index]["meta"])
            self._json_meta[index] = found
        return cast("str | None", found)

    def _canonical_meta(self, index: int) -> str:
        found = self._canonical.get(index)
        if found is None:
            found = canonical_from_json(self.flat[index]["meta"], self._json(index))
            self._canonical[index] = found
        return found

    # ----------------------------------------------------------------- repeated suffix

    def suffix(self, options: CycleOptions, rows: IntArray | None = None) -> IntArray:
        """Per thread, the shortest repeating period (0 when the suffix does not repeat)."""
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
        spans = high[threads] - low + 1
        pair_thread = np.repeat(threads, spans)
        first = np.repeat(np.cumsum(spans) - spans, spans)
        pair_period = low + np.arange(pair_thread.size, dtype=np.int64) - first
        pair_end = self.starts[pair_thread + 1]
        pair_need = (reps - 1) * pair_period
        screen = self.screen
        step = 0
        while pair_thread.size:
            done = pair_need == step
            if done.any():
                for thread, length in zip(pair_thread[done], pair_period[done], strict=True):
                    if period[thread] == 0 and self._confirm_suffix(int(thread), int(length),
                                                                    reps):
                        period[thread] = length
                keep = ~done & (period[pair_thread] == 0)
                pair_thread, pair_period = pair_thread[keep], pair_period[keep]
                pair_end, pair_need = pair_end[keep], pair_need[keep]
            if not pair_thread.size:
                break
            position = pair_end - 1 - step
            same = screen[position] == screen[position - pair_period]
            pair_thread, pair_period = pair_thread[same], pair_period[same]
            pair_end, pair_need = pair_end[same], pair_need[same]
            step += 1
        return period

    def _confirm_suffix(self, thread: int, length: int, reps: int) -> bool:
        end = int(self.starts[thread + 1])
        same = self.same
        return all(
            same(end - 1 - k, end - 1 - k - length) for k in range((reps - 1) * length)
        )

    def suffix_repetitions(self, thread: int, length: int) -> int:
        """How many back-to-back copies of the last ``length`` messages end the thread."""
        start, end = int(self.starts[thread]), int(self.starts[thread + 1])
        copies = 1
        while end - (copies + 1) * length >= start and all(
            self.same(end - 1 - k, end - 1 - k - copies * length)
            for k in range(length)
        ):
            copies += 1
        return copies

    # ------------------------------------------------------------------- activities

    @property
    def activities(self) -> _Activities:
        if self._activities is None:
            self._activities = _Activities(self)
        return self._activities

    def activity_tail(self, rows: IntArray | None = None) -> IntArray:
        """Per thread, where the looping activity tail starts (-1 when there is none).

        A tail needs at least 8 messages typed "activity" at the end of the thread, which
        the arrays find for all threads at once; only those tails are parsed.
        """
        acts = self.activities
        found = np.full(len(self.threads), -1, np.int64)
        ends = self.starts[1:]
        candidates = np.flatnonzero(ends - acts.typed_run_start() >= ref.ACTIVITY_TAIL_MIN_LENGTH)
        if rows is not None:
            candidates = np.intersect1d(candidates, rows)
        for thread in candidates.tolist():
            end = int(ends[thread])
            begin = acts.tail_start(thread)
            if end - begin < ref.ACTIVITY_TAIL_MIN_LENGTH:
                continue
            if not acts.may_collapse(begin, end):
                continue
            tail = [acts.parsed(i) for i in range(begin, end)]
            if ref.tail_collapsed([a for a in tail if a is not None]):
                found[thread] = begin
        return found

    def activity_tail_of(self, thread: int) -> bool:
        """:meth:`activity_tail` for one thread, walking back from its end: no array set-up,
        so a harness checking one thread per turn pays only for the tail it reads."""
        acts = self.activities
        end = int(self.starts[thread + 1])
        begin = acts.tail_start(thread)
        if end - begin < ref.ACTIVITY_TAIL_MIN_LENGTH or not acts.may_collapse(begin, end):
            return False
        tail = [acts.parsed(i) for i in range(begin, end)]
        return ref.tail_collapsed([a for a in tail if a is not None])

    def result_run_of(self, thread: int, options: CycleOptions) -> bool:
        """:meth:`result_run` for one thread, walking back over its settled responses."""
        return self._result_run_walk(thread, options.min_result_repetitions)

    def result_run(self, options: CycleOptions, rows: IntArray | None = None) -> BoolArray:
        """Per thread, whether its newest settled tool results are identical.

        Only each thread's last few "activity" messages are read, through the C-level field
        accessors; a thread whose window holds too few settled responses is walked further
        back one message at a time.
        """
        needed = options.min_result_repetitions
        count = len(self.threads)
        fired = np.zeros(count, bool)
        threads = np.arange(count) if rows is None else np.asarray(rows, np.int64)
        acts = self.activities
        typed_per_thread = np.bincount(acts.owner, minlength=count)
        threads = threads[typed_per_thread[threads] >= needed]
        if threads.size == 0 or needed > _RESULT_WINDOW_LIMIT:
            for thread in threads.tolist():
                fired[thread] = self._result_run_walk(thread, needed)
            return fired
        window = min(2 * needed + 2, _RESULT_WINDOW_LIMIT)
        last = np.cumsum(typed_per_thread) - 1
        depth = np.minimum(typed_per_thread[threads], window)
        owner = np.repeat(threads, depth)
        back = np.arange(owner.size) - np.repeat(np.cumsum(depth) - depth, depth)
        picked = acts.typed_index[np.repeat(last[threads], depth) - back]  # newest first
        settled, name_keys = acts.settled(picked)
        # Rank the settled responses within each thread, newest first.
        running = np.cumsum(settled)
        before = np.repeat(running[np.cumsum(depth) - depth] - settled[np.cumsum(depth) - depth],
                           depth)
        rank = running - before
        chosen = settled & (rank <= needed)
        enough = np.bincount(owner[chosen], minlength=count) >= needed
        short = threads[~enough[threads] & (typed_per_thread[threads] > window)]
        for thread in short.tolist():
            fired[thread] = self._result_run_walk(thread, needed)
        first_key = np.zeros(count, np.int64)
        first_key[owner[chosen & (rank == 1)]] = name_keys[chosen & (rank == 1)]
        differs = np.zeros(count, bool)
        np.logical_or.at(differs, owner[chosen], name_keys[chosen] != first_key[owner[chosen]])
        candidates = np.flatnonzero(enough & ~differs)
        positions = picked[chosen]
        position_owner = owner[chosen]
        firsts = np.searchsorted(position_owner, candidates, side="left")
        for thread, first in zip(candidates.tolist(), firsts.tolist(), strict=True):
            fired[thread] = self._same_results(positions[first : first + needed].tolist())
        return fired

    def _same_results(self, positions: list[int]) -> bool:
        acts = self.activities
        functions = [acts.lite(i)[2] for i in positions]  # type: ignore[index]
        shallow = {(_invariant(f.get("arguments", _MISSING)), _invariant(f["result"]))
                   for f in functions}
        if len(shallow) > 1:
            return False  # the invariants differ, so the canonical payloads do too
        run = [acts.parsed(i) for i in positions]
        return len({(a.name, a.arguments, a.result) for a in run if a is not None}) == 1

    def _settled_back(self, thread: int) -> Iterator[int]:
        """The thread's settled responses, newest first, found without reading payloads."""
        acts = self.activities
        first, last = np.searchsorted(acts.owner, [thread, thread + 1])
        for position in acts.typed_index[first:last][::-1].tolist():
            lite = acts.lite(position)
            if (
                lite is not None
                and lite[0] == "response"
                and "result" in lite[2]
                and not lite[1].startswith("_")
            ):
                yield position

    def _result_run_walk(self, thread: int, needed: int) -> bool:
        newest = list(islice(self._settled_back(thread), needed))
        if len(newest) < needed:
            return False
        names = {self.activities.lite(i)[1] for i in newest}  # type: ignore[index]
        return len(names) == 1 and self._same_results(newest)

    def result_run_span(self, thread: int) -> tuple[int, int, int]:
        """(loop_start, period, repetitions) of a thread whose result run fired.

        The run is extended back over settled responses while (name, arguments, result)
        stays the same, as :func:`vthread._reference.result_run_span` defines it.
        """
        acts = self.activities
        positions: list[int] = []
        signature: tuple[str, str, str] | None = None
        for position in self._settled_back(thread):
            if signature is not None and acts.lite(position)[1] != signature[0]:  # type: ignore[index]
                break
            activity = acts.parsed(position)
            assert activity is not None
            current = (activity.name, activity.arguments, activity.result)
            if signature is None:
                signature = current
            elif current != signature:
                break
            positions.append(position)
        offset = int(self.starts[thread])
        first = positions[-1]
        begin = first
        before = acts.lite(first - 1) if first > offset else None
        if (
            before is not None
            and before[0] == "request"
            and signature is not None
            and before[1] == signature[0]
        ):
            begin = first - 1
        spacing = (positions[0] - positions[-1]) / (len(positions) - 1)
        return begin - offset, max(1, round(spacing)), len(positions)

    # -------------------------------------------------------------------- text runs

    def text_run(self, rows: IntArray | None = None) -> IntArray:
        """Per thread, the first of its last five messages with a runaway text (-1: none)."""
        found = np.full(len(self.threads), -1, np.int64)
        threads = np.arange(len(self.threads)) if rows is None else np.asarray(rows, np.int64)
        if threads.size == 0:
            return found
        ends = self.starts[threads + 1]
        firsts = np.maximum(self.starts[threads], ends - ref.THREAD_TEXT_RUN_MESSAGES)
        spans = ends - firsts
        owner = np.repeat(threads, spans)
        index = np.repeat(firsts - np.cumsum(spans) + spans, spans) + np.arange(owner.size)
        options = text_run_options()
        kinds, texts = self.kinds, self.texts
        # A text needs min_units - 1 separators to hold min_units units: most candidates are
        # rejected by counting, and the rest go through the bulk twin in one call.
        candidates = [
            (thread, position)
            for thread, position in zip(owner.tolist(), index.tolist(), strict=True)
            if kinds[position] not in ("reasoning", "activity")
            and may_hold_units(texts[position], options.min_units)
        ]
        fired = has_repeated_text_runs(
            [texts[position] for _, position in candidates],
            min_units=options.min_units,
            window=options.window,
            max_unique_ratio=options.max_unique_ratio,
        )
        for (thread, position), hit in zip(candidates, fired.tolist(), strict=True):
            if hit and found[thread] < 0:
                found[thread] = position - self.starts[thread]
        return found

    def text_run_messages(self, thread: int) -> list[int]:
        """Offsets (within the thread) of its last five messages that carry a runaway text."""
        start, end = int(self.starts[thread]), int(self.starts[thread + 1])
        options = text_run_options()
        return [
            index - start
            for index in range(max(start, end - ref.THREAD_TEXT_RUN_MESSAGES), end)
            if self.kinds[index] not in ("reasoning", "activity")
            and runaway(self.texts[index], options)
        ]


def _collapsed(tail: list[ref.Activity]) -> bool:
    """The reference's activity-tail test, applied only to the tails the arrays selected."""
    return ref.tail_collapsed(tail)


_RESULT_WINDOW_LIMIT: Final = 64


class _Activities:
    """Tool calls of a batch, read lazily: which messages are typed "activity", and the
    parts of those that a heuristic asks about."""

    def __init__(self, batch: Batch) -> None:
        # The batch's arrays, not the batch: a reference back would make a cycle that keeps
        # every parsed thread alive until the cyclic collector runs.
        self.flat = batch.flat
        self.starts = batch.starts
        self.lengths = batch.lengths
        self.thread_count = len(batch.threads)
        flat_size = len(batch.flat)
        typed = np.fromiter(map(eq, batch.kinds, repeat("activity")), bool, flat_size)
        self.typed = typed
        self.typed_index: IntArray = np.flatnonzero(typed)
        self.owner: IntArray = np.searchsorted(batch.starts, self.typed_index, side="right") - 1
        self._name_screen_array: npt.NDArray[np.int64] | None = None
        self._parsed: dict[int, ref.Activity | None] = {}
        self._lite: dict[int, tuple[str, str, Mapping[str, Any]] | None] = {}

    def lite(self, index: int) -> tuple[str, str, Mapping[str, Any]] | None:
        """(type, name, function) of a well-formed activity, or None; reads no payload."""
        found = self._lite.get(index, _MISSING)
        if found is _MISSING:
            found = None
            if self.typed[index]:
                meta = self.flat[index].get("meta")
                activity = meta.get("activity") if isinstance(meta, Mapping) else None
                if isinstance(activity, Mapping):
                    function = activity.get("function")
                    kind = activity.get("type")
                    if isinstance(function, Mapping) and isinstance(kind, str):
                        name = function.get("name")
                        if isinstance(name, str):
                            found = (kind, name, function)
            self._lite[index] = found
        return found  # type: ignore[return-value]

    def parsed(self, index: int) -> ref.Activity | None:
        """Message ``index`` as a well-formed activity with canonical payloads, or None."""
        found = self._parsed.get(index, _MISSING)
        if found is _MISSING:
            found = ref.parse_activity(self.flat[index]) if self.lite(index) else None
            self._parsed[index] = found
        return found  # type: ignore[return-value]

    @property
    def name_screens(self) -> npt.NDArray[np.int64]:
        """Per message, hash of its (activity type, function name); 0 for non-activities."""
        if self._name_screen_array is None:
            screens = np.zeros(len(self.flat), np.int64)
            screens[self.typed_index] = self._name_screens(self.typed_index)
            self._name_screen_array = screens
        return self._name_screen_array

    def _name_screens(self, positions: IntArray) -> npt.NDArray[np.int64]:
        """Hash of (activity type, function name) for each message, read at C speed.

        Missing parts hash as a constant; a part that is not a plain string hashes by its
        canonical text, so messages the reference calls equal always share a screen.
        """
        messages: Any = list(map(self.flat.__getitem__, positions.tolist()))
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

    def settled(self, positions: IntArray) -> tuple[BoolArray, IntArray]:
        """For the given messages: which are settled responses, and a hash of their name.

        A settled response is a well-formed response with a ``result`` whose name does not
        start with "_" - the responses :func:`has_repeated_result_run` compares.
        """
        messages = [self.flat[i] for i in positions.tolist()]
        activities = _field(_field(messages, "meta"), "activity")
        functions = _field(activities, "function")
        kinds = _field(activities, "type")
        names = _field(functions, "name")
        size = len(messages)
        try:
            # The common case, every picked message well formed, runs at C speed.
            if not set(map(type, kinds)) | set(map(type, names)) <= {str}:
                raise TypeError
            flags = np.fromiter(map(eq, kinds, repeat("response")), bool, size)
            flags &= np.fromiter(map(dict.__contains__, functions, repeat("result")), bool, size)
            flags &= ~np.fromiter(map(str.startswith, names, repeat("_")), bool, size)
        except TypeError:
            flags = np.fromiter(
                (
                    isinstance(k, str) and k == "response" and isinstance(n, str)
                    and isinstance(f, Mapping) and "result" in f and not n.startswith("_")
                    for k, n, f in zip(kinds, names, functions, strict=True)
                ),
                bool,
                size,
            )
        keys = np.zeros(size, np.int64)
        chosen = np.flatnonzero(flags)
        keys[chosen] = np.fromiter(
            (hash(_screen_part(names[i])) for i in chosen.tolist()), np.int64, chosen.size
        )
        return flags, keys

    def may_collapse(self, begin: int, end: int) -> bool:
        """The tail conditions checked on shallow invariants instead of canonical payloads.

        Values the reference calls equal have equal invariants, so every count of distinct
        invariants is a lower bound of the reference's count and every repeat the reference
        sees is a repeat here: a tail rejected here is rejected by the reference too. The
        checks run cheapest first.
        """
        lite = [p for p in map(self.lite, range(begin, end)) if p is not None]
        requests = [f for k, _, f in lite if k == "request" and "arguments" in f]
        responses = [f for k, _, f in lite if k == "response" and "result" in f]
        least = ref.ACTIVITY_TAIL_MIN_WITH_PAYLOAD
        if len(requests) < least or len(responses) < least:
            return False
        kinds = [_screen_part(k) for k, _, _ in lite]
        names = [_screen_part(n) for _, n, _ in lite]
        pairs = set(zip(kinds, names, strict=True))
        if len(set(names)) == len(names) or 2 * len(pairs) > len(lite):
            return False
        if _all_distinct(_invariant(f["arguments"]) for f in requests):
            return False
        if _all_distinct(_invariant(f["result"]) for f in responses):
            return False
        signatures = {
            (kind, name, _invariant(f.get("arguments", _MISSING)),
             _invariant(f.get("result", _MISSING)))
            for kind, name, (_, _, f) in zip(kinds, names, lite, strict=True)
        }
        return 2 * len(signatures) <= len(lite)

    def typed_run_start(self) -> IntArray:
        """Per thread, where its trailing run of "activity"-typed messages begins."""
        flat_size = len(self.flat)
        # A trailing -1 lets every thread start, even an empty last one, index the array.
        breaks = np.full(flat_size + 1, -1, np.int64)
        breaks[:flat_size][~self.typed] = np.flatnonzero(~self.typed)
        starts = self.starts
        last_break = np.full(self.thread_count, -1, np.int64)
        nonempty = self.lengths > 0
        if self.thread_count:
            reduced = np.maximum.reduceat(breaks, starts[:-1])
            last_break[nonempty] = reduced[nonempty]
        return np.where(last_break >= starts[:-1], last_break + 1, starts[:-1])

    def tail_start(self, thread: int) -> int:
        """Where the thread's trailing run of well-formed activities begins."""
        start, index = int(self.starts[thread]), int(self.starts[thread + 1])
        while index > start and self.lite(index - 1) is not None:
            index -= 1
        return index

    def distinct_signatures(self, begin: int, end: int) -> int:
        """Distinct (type, name, arguments, result) among the activities in [begin, end)."""
        parsed = (self.parsed(i) for i in range(begin, end))
        return len({(a.kind, a.name, a.arguments, a.result) for a in parsed if a is not None})
