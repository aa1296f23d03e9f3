"""Hostile input to the public functions (issue #12): callbacks that change the thread,
numbers of other types, sequences of other types."""

from __future__ import annotations

import contextlib
import datetime
import importlib
import json
import math
import re
import sys
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, overload

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    HOSTILE_VALUES,
    anthropic_messages,
    mini_swe_agent_messages,
    openai_messages,
    responses_items,
    swe_agent_messages,
)

import vthread
from vthread import _core, adapters
from vthread import _reference as ref
from vthread._jsvalue import MAX_DEPTH, UNSERIALIZABLE, canonical
from vthread._messages import token_total, usage_tokens
from vthread._options import cycle_options
from vthread.anywhere import find_loops, find_loops_reference

_CALL = {"type": "activity", "text": "", "meta": {"activity": {
    "type": "request", "function": {"name": "ls", "arguments": {"path": "."}}}}}
_DONE = {"type": "activity", "text": "", "meta": {"activity": {
    "type": "response", "function": {"name": "ls", "arguments": {"path": "."}, "result": "a"}}}}


# ------------------------------------------------------------------ a thread changed mid-call


def test_build_thread_reads_a_snapshot_when_the_estimator_appends() -> None:
    """An estimator appending to the caller's list ends, answered as on the list untouched."""
    thread: list[dict[str, Any]] = [{"text": "a" * n} for n in range(1, 6)]
    untouched = vthread.build_thread(list(thread), max_tokens=9, estimate=lambda m: 2)

    def growing(message: Any) -> float:
        thread.append({"text": "more"})
        return 2

    got = vthread.build_thread(thread, max_tokens=9, estimate=growing)
    assert got == untouched
    assert len(thread) == 10  # called once per message of the snapshot


def test_build_thread_reads_a_snapshot_when_the_trim_function_clears() -> None:
    """A trim function that empties the caller's list changes nothing the call answers."""
    thread = [{"text": "x", "usage": {"tokens": 5}} for _ in range(4)]
    untouched = vthread.build_thread(
        list(thread), max_tokens=12, inclusive=lambda m, room: {**m, "usage": {"tokens": 1}})

    def clearing(message: Any, room: float) -> Any:
        thread.clear()
        return {**message, "usage": {"tokens": 1}}

    assert vthread.build_thread(thread, max_tokens=12, inclusive=clearing) == untouched


# ------------------------------------------------------------------- sequences of every kind


class _Thread(Sequence[Any]):
    """A sequence that is neither list nor tuple, and whose ``__getitem__`` takes no slice."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if not isinstance(index, int):
            raise TypeError("sequence index must be integer, not 'slice'")
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)


_CONTAINERS: dict[str, Callable[[list[Any]], Any]] = {
    "list": list, "tuple": tuple, "deque": deque, "custom Sequence": _Thread,
}
_THREAD_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "build_thread": lambda t: vthread.build_thread(t, max_tokens=5, estimate=lambda m: 1),
    "describe_thread_cycle": vthread.describe_thread_cycle,
    "has_repeated_activity_tail": vthread.has_repeated_activity_tail,
    "has_repeated_result_run": vthread.has_repeated_result_run,
    "has_repeated_suffix": vthread.has_repeated_suffix,
    "is_thread_cyclic": vthread.is_thread_cyclic,
    "scan": lambda t: vthread.scan([t]).record(0),
    "scan (two threads)": lambda t: vthread.scan([t, [_CALL]]).names,
}
_THREADS = {
    "activity tail": [_CALL, _DONE] * 4,
    "result run": [_DONE, {"type": "reasoning", "text": "hm"}] * 3,
    "suffix": [{"type": "user", "text": "a"}, {"type": "bot", "text": "b",
                                               "usage": {"tokens": 3}}] * 3,
    "text run": [{"type": "bot", "text": "Checking now. " * 10}],
    "progress": [{"type": "user", "text": str(n)} for n in range(6)],
}


@pytest.mark.parametrize("thread", sorted(_THREADS))
@pytest.mark.parametrize("container", sorted(_CONTAINERS))
@pytest.mark.parametrize("function", sorted(_THREAD_FUNCTIONS))
def test_every_function_takes_every_sequence(function: str, container: str, thread: str) -> None:
    """Each public function of a thread answers a deque or custom sequence as its list."""
    messages = _THREADS[thread]
    expected = _THREAD_FUNCTIONS[function](list(messages))
    assert _THREAD_FUNCTIONS[function](_CONTAINERS[container](messages)) == expected


@pytest.mark.parametrize("function", sorted(_THREAD_FUNCTIONS))
@pytest.mark.parametrize("thread", [iter([_CALL]), {"type": "user"}, "text", b"xy", 3, None])
def test_every_function_refuses_what_is_no_sequence(function: str, thread: Any) -> None:
    """A generator, a mapping, a string or a number is a TypeError everywhere."""
    with pytest.raises(TypeError, match="must be a sequence"):
        _THREAD_FUNCTIONS[function](thread)


# ----------------------------------------------------------------- numbers of every type


@pytest.mark.parametrize("figure", [np.int64(10), np.float32(10), np.float64(10), np.uint8(10),
                                    Decimal(10), Decimal("10.0"), Fraction(20, 2)],
                         ids=repr)
def test_an_estimate_of_any_real_type_counts(figure: Any) -> None:
    """An estimator answering a NumPy scalar, Decimal or Fraction counts its value."""
    got = vthread.build_thread([{"text": "a"}, {"text": "b"}], max_tokens=100,
                               estimate=lambda m: figure)
    assert got.tokens == 20.0
    twin = ref.build_thread([{"text": "a"}, {"text": "b"}], max_tokens=100,
                            estimate=lambda m: figure)
    assert (got.messages, got.tokens) == (twin.messages, twin.tokens)


@pytest.mark.parametrize("figure", [np.int64(10), np.float32(10), Decimal(10), Fraction(10)],
                         ids=repr)
def test_usage_tokens_of_any_real_type_count(figure: Any) -> None:
    """``usage.tokens = np.int64(10)`` is the message's own figure, not a missing one."""
    def never(message: Any) -> float:
        raise AssertionError("the estimator was asked about a message with a usage")

    got = vthread.build_thread([{"text": "a", "usage": {"tokens": figure}}], max_tokens=100,
                               estimate=never)
    assert got.tokens == 10.0


def _nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def _holding_itself() -> list[Any]:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    return cyclic


@pytest.mark.parametrize(("figure", "own"), [
    (_nested(7, 65), True), (_nested(7, 5_000), True), (_nested("-1", 100), False),
    (_nested(None, 200), True), (_nested({}, 70), False), (_holding_itself(), True),
    (_nested([1, 2], 80), False), ([np.True_], False)],
    ids=["65", "5000", "minus", "null", "object", "cycle", "pair", "numpy-true"])
def test_usage_tokens_nested_in_arrays_are_compared_as_javascript_does(figure: Any,
                                                                       own: bool) -> None:
    """JavaScript's ``tokens >= 0`` reads an array of one element as that element's text,
    however deep (``[[...[7]...]]`` is 7, an array holding itself the empty text, 0): such a
    figure is the message's own and, being no number, counts 0, the estimator not asked
    (past 64 levels it was read as NaN and the estimator asked). The reference agrees."""
    message = {"text": "a", "usage": {"tokens": figure}}
    got = vthread.build_thread([message], max_tokens=100, estimate=lambda m: 5)
    assert got.tokens == (0.0 if own else 5.0)
    twin = ref.build_thread([message], max_tokens=100, estimate=lambda m: 5)
    assert twin.tokens == got.tokens


@pytest.mark.parametrize("figure", [None, float("nan"), float("inf"), -1, np.float64("nan"),
                                    Decimal("NaN"), Decimal("sNaN"), Decimal("-Infinity"),
                                    True, np.bool_(True), Decimal("1e400"), "10", [10],
                                    {"tokens": 10}], ids=repr)
def test_an_estimate_that_is_no_count_counts_zero(figure: Any) -> None:
    """None, NaN, infinities, negatives, booleans and JSON values that are no numbers count
    0, as before (the recorded corpus pins the last; a usage is warned of, below)."""
    with (pytest.warns(UserWarning, match="usage mapping") if isinstance(figure, dict)
          else contextlib.nullcontext()):
        got = vthread.build_thread([{"text": "a"}], max_tokens=100, estimate=lambda m: figure)
    assert got.tokens == 0.0


@pytest.mark.parametrize("answer", [{"tokens": 50}, {"tokens": "50", "other": 1}],
                         ids=repr)
def test_an_estimate_that_is_a_usage_counts_zero_with_a_warning(answer: Any) -> None:
    """An estimator answering with a usage (as production's estimators do, so a harness
    ported from them would) counts 0 as before, and says so, once for the thread: a budget
    of such answers silently held every message (a tester's 1,000 messages under 100
    tokens)."""
    thread = [{"type": "user", "text": f"m{index}"} for index in range(1000)]
    for build in (vthread.build_thread, ref.build_thread):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("default")
            got = build(thread, max_tokens=100, estimate=lambda m: answer)
        assert (len(got.messages), got.tokens) == (1000, 0.0)
        assert [str(warning.message) for warning in said] == [
            "estimate returned a usage mapping ({'tokens': ...}), which counts 0 tokens: an "
            "estimate is the figure itself (return its 'tokens')"]
    for other in ({"count": 50}, [50], "50", None):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert vthread.build_thread(thread[:3], max_tokens=100,
                                        estimate=lambda m, given=other: given).tokens == 0.0


@pytest.mark.parametrize("figure", [b"10", object(), 1 + 2j, np.array([10]), {10},
                                    datetime.date(2024, 1, 1)], ids=repr)
def test_an_estimate_that_is_no_number_is_a_type_error(figure: Any) -> None:
    """Any other object is a TypeError naming the message, where it used to count 0."""
    thread = [{"text": "a", "usage": {"tokens": 1}}, {"text": "b"}]
    for build in (vthread.build_thread, ref.build_thread):
        with pytest.raises(TypeError, match=r"estimate\(messages\[1\]\) returned"):
            build(thread, max_tokens=100, estimate=lambda m: figure)


def test_an_estimators_own_error_propagates() -> None:
    """The estimator's exception reaches the caller unchanged."""
    with pytest.raises(ZeroDivisionError):
        vthread.build_thread([{"text": "a"}], max_tokens=9, estimate=lambda m: 1 / 0)


_TOKEN_VALUES = st.one_of(
    st.sampled_from([None, True, False, "3", [1], {"n": 1}, np.bool_(True), 2**64, 2**53 + 1,
                     np.int64(2**53 + 1), np.uint64(2**64 - 1), Decimal("sNaN"), -0.0]),
    st.integers(-3, 2**63 - 1).map(np.int64),
    st.floats(width=32).map(np.float32),
    st.floats(),
    st.integers(-5, 2**70),
    st.decimals(allow_nan=True),
    st.fractions(max_denominator=4),
)


@given(st.lists(_TOKEN_VALUES, min_size=1, max_size=6))
def test_core_reads_usage_tokens_as_python_does(figures: list[Any]) -> None:
    """The core's reading of ``usage.tokens`` (a scan's loop tokens) is Python's."""
    thread = [{"type": "user", "text": "a", "usage": {"tokens": f}} for f in figures]
    python = [f for f in map(usage_tokens, thread) if f is not None]
    core = _core.loop_tokens(thread, 0)
    alone = token_total(python) if python else math.nan
    assert core is None or core == alone or (math.isnan(core) and math.isnan(alone))
    if all(type(f) is float or (type(f) in (int, bool) and -(2**63) <= f < 2**63)
           for f in figures):
        assert core is not None  # only values Python reads otherwise are left to it
    looped = [{"type": "u", "text": "x"}] * 2 + thread + thread
    tokens = vthread.scan([looped], min_pattern_length=len(thread)).loop_tokens[0]
    expected = token_total(python + python) if python else math.nan
    assert tokens == expected or (math.isnan(tokens) and math.isnan(expected))


# ------------------------------------------------------------ values without a JSON form


class _Point:
    def __init__(self, x: int) -> None:
        self.x = x

    def __repr__(self) -> str:
        return f"_Point({self.x})"


_DISTINCT_PAIRS = [
    (np.int64(1), np.int64(2)), (np.float32(1.5), np.float32(2.5)), (np.bool_(True), False),
    (Decimal(1), Decimal(2)), (Decimal("NaN"), Decimal(0)),
    (datetime.datetime(2024, 1, 1), datetime.datetime(2024, 1, 2)),
    (datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)),
    (np.array([1, 2]), np.array([1, 3])), (Fraction(1, 3), Fraction(1, 7)),
    (np.array(["a"], dtype=object), np.array(["b"], dtype=object)),
    # A value of no JSON form is "[unserializable]" (below), equal to no JSON value.
    (b"a", "a"), ({1}, [1]), (object(), None), ({(1, 2): 1}, {"(1, 2)": 1}),
]
_UNSERIALIZABLE = [
    b"a", b"b", bytearray(b"a"), {1}, {2}, frozenset({1}), object(), object(), _Point(1),
    _Point(2), 1 + 2j, np.array([1 + 2j]), {(1, 2): 1}, {(1, 3): 1}, {b"k": 1}, {b"j": 1},
    {"a": [{"b": {1}}]},
]
_EQUAL_PAIRS = [
    (np.int64(1), 1.0), (np.float32(0.5), 0.5), (np.bool_(True), True), (Decimal("2.50"), 2.5),
    (Fraction(1, 2), 0.5), (datetime.datetime(2024, 1, 2, 3, 4, 5, 6789),
                            "2024-01-02T03:04:05.006Z"),
    (datetime.datetime(2024, 1, 2, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     datetime.datetime(2024, 1, 2, 3)),
    (datetime.date(2024, 1, 2), "2024-01-02T00:00:00.000Z"), (np.array([[1], [2]]), [[1], [2]]),
    ({2, 1}, {1.0, 2}), (np.uint64(2**64 - 1), 2**64), (_Point(1), _Point(1)),
    (np.array(["a", [1]], dtype=object), ["a", [1]]),
]


def _alternating(left: Any, right: Any) -> list[dict[str, Any]]:
    ask = {"type": "bot", "text": "b"}
    return [{"type": "user", "text": "a", "meta": {"v": left}}, ask,
            {"type": "user", "text": "a", "meta": {"v": right}}, ask]


@pytest.mark.parametrize(("left", "right"), _DISTINCT_PAIRS, ids=repr)
def test_distinct_values_without_a_json_form_differ(left: Any, right: Any) -> None:
    """``A B A' B`` is no repeated suffix when A and A' hold different non-JSON values."""
    thread = _alternating(left, right)
    assert not vthread.has_repeated_suffix(thread)
    assert vthread.scan([thread]).names == [None]
    assert not ref.has_repeated_suffix(thread, cycle_options())
    assert vthread.fingerprint(left) != vthread.fingerprint(right)


@pytest.mark.parametrize("left", _UNSERIALIZABLE, ids=repr)
@pytest.mark.parametrize("right", [b"z", {3}, object(), {"cycle": None}], ids=repr)
def test_values_without_a_json_form_are_all_one_value(left: Any, right: Any) -> None:
    """A value holding one of no JSON form (a set, bytes, any other object, a key such as a
    tuple), however deep, encodes as "[unserializable]" whole, as a cycle does and as
    production compares it: any two compare equal, in the engine, the scan and the
    reference, and share a fingerprint (they were told apart by their type and repr)."""
    if right == {"cycle": None}:
        right["cycle"] = right
    thread = _alternating(left, right)
    assert vthread.has_repeated_suffix(thread)
    assert vthread.scan([thread]).names == ["repeated_suffix"]
    assert ref.has_repeated_suffix(thread, cycle_options())
    assert vthread.fingerprint(left) == vthread.fingerprint(right)
    assert vthread.fingerprint(left) != vthread.fingerprint("[unserializable]")


@pytest.mark.parametrize("depth", [2, 12])
def test_a_value_of_no_json_form_shadowed_by_a_key_is_not_encoded(depth: int) -> None:
    """A set under the key 1 of a mapping whose later key "1" names the same property is
    not encoded (JavaScript keeps the last), so the mapping is not "[unserializable]",
    below the core's screen depth as above it: the engine, the scan and the reference
    agree (past the screen's depth the core's walk read the shadowed value)."""
    def nested(value: Any) -> Any:
        for _ in range(depth):
            value = {"k": value}
        return value

    def result(value: Any) -> dict[str, Any]:
        return {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {"name": "ls", "arguments": {}, "result": value}}}}

    shadowed, plain = nested({1: {1}, "1": 2}), nested({"1": 2})
    thread = [result(shadowed), result(plain), result(shadowed)]
    assert vthread.describe_thread_cycle(thread) == "repeated_result_run"
    assert vthread.scan([thread]).names == ["repeated_result_run"]
    assert ref.describe_thread_cycle(thread, cycle_options()) == "repeated_result_run"
    assert vthread.fingerprint(shadowed) == vthread.fingerprint(plain)


@pytest.mark.parametrize(("left", "right"), _EQUAL_PAIRS, ids=repr)
def test_values_equal_to_their_stand_ins_compare_equal(left: Any, right: Any) -> None:
    """A NumPy scalar, Decimal or date equals the JSON value it stands for."""
    thread = _alternating(left, right)
    assert vthread.has_repeated_suffix(thread)
    assert vthread.scan([thread]).names == ["repeated_suffix"]
    assert ref.has_repeated_suffix(thread, cycle_options())
    assert vthread.fingerprint(left) == vthread.fingerprint(right)


@pytest.mark.parametrize(("left", "right"), _DISTINCT_PAIRS + _EQUAL_PAIRS, ids=repr)
def test_colliding_screens_change_no_answer(left: Any, right: Any) -> None:
    """With every screen colliding, equal and distinct values still get their answers."""
    thread = _alternating(left, right)
    expected = (vthread.has_repeated_suffix(thread), vthread.scan([thread]).names)
    _core._set_screen_bits(1)
    try:
        assert (vthread.has_repeated_suffix(thread), vthread.scan([thread]).names) == expected
    finally:
        _core._set_screen_bits(64)


def _holding_a_cycle(ident: int, depth: int) -> dict[str, Any]:
    """An object that differs by ``ident`` and holds, ``depth`` objects down, a reference
    back to itself."""
    top: dict[str, Any] = {"id": ident}
    inner = top
    for _ in range(depth):
        inner["down"] = inner = {"x": ident}
    inner["back"] = top
    return top


def _nested_past_the_limit(ident: int) -> list[Any]:
    value: list[Any] = [ident]
    for _ in range(MAX_DEPTH + 1):
        value = [value]
    return value


_UNENCODABLE_KINDS: list[Callable[[int], Any]] = [
    lambda ident: _holding_a_cycle(ident, 0), lambda ident: _holding_a_cycle(ident, 3),
    lambda ident: _holding_a_cycle(ident, 12), _nested_past_the_limit]
"""Values ``JSON.stringify`` throws on, each kind made distinct by an id outside what fails:
a cycle at the top, within and below the screens' depth, and nesting past the limit."""
_KIND_IDS = ["cycle", "cycle3", "cycle12", "deep"]


@pytest.mark.parametrize("make", _UNENCODABLE_KINDS, ids=_KIND_IDS)
def test_a_value_javascript_cannot_serialise_is_the_marker_whole(
        make: Callable[[int], Any]) -> None:
    """``JSON.stringify`` throws on the whole value, so the production code compares it by
    its fallback text: every such value is the marker, by both encoders, whatever else it
    holds, with one fingerprint and one screen."""
    value, other = make(1), _holding_a_cycle(2, 0)
    for whole in (value, {"wrapped": value}, [1, value]):
        assert canonical(whole) == _core.canonical(whole).decode() == UNSERIALIZABLE
    assert vthread.fingerprint(value) == vthread.fingerprint(other)
    assert _core.screen(value) == _core.screen(other)


def test_depth_counts_alike_through_stand_ins_and_a_raised_recursion_limit() -> None:
    """Two ways a value could pass the depth limit unseen, found by a reviewer: a NumPy array
    (encoded as its nested list) below the screens' depth, whose screen was an ordinary one;
    and Python's own JSON writer, bounded by the recursion limit, which a program may raise
    past the limit."""
    deep_array: Any = np.zeros((1,) * 8)
    for _ in range(MAX_DEPTH - 5):
        deep_array = [deep_array]
    assert canonical(deep_array) == _core.canonical(deep_array).decode() == UNSERIALIZABLE
    assert _core.screen(deep_array) == _core.screen(_holding_a_cycle(0, 0))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(4 * MAX_DEPTH)
    try:
        deep_list = _nested_past_the_limit(1)
        assert canonical(deep_list) == UNSERIALIZABLE
        at_the_limit = deep_list[0][0]  # MAX_DEPTH lists deep: encoded in full
        assert canonical(at_the_limit) == _core.canonical(at_the_limit).decode()
        assert canonical(at_the_limit) != UNSERIALIZABLE
    finally:
        sys.setrecursionlimit(limit)


def _read_call(result: Any, step: int) -> list[dict[str, Any]]:
    function = {"name": "read", "arguments": {"path": "a.py"}}
    return [{"type": "activity", "text": f"call {step}",  # no suffix repeats
             "meta": {"activity": {"type": "request", "function": function}}},
            {"type": "activity", "text": "",
             "meta": {"activity": {"type": "response",
                                   "function": {**function, "result": result}}}},
            {"type": "reasoning", "text": f"step {step}"}]


@pytest.mark.parametrize("make", _UNENCODABLE_KINDS, ids=_KIND_IDS)
def test_values_javascript_cannot_serialise_compare_equal_in_every_check(
        make: Callable[[int], Any]) -> None:
    """Metas, or tool results, that each hold a cycle (or nest too deep) and differ
    elsewhere are equal: a suffix, a result run and an activity tail of them loop (the
    same call answered differently each time would be progress), in the engine, the bulk
    scan and the reference alike, whatever the screens."""
    suffix = _alternating(make(1), make(2))
    results = [m for step in range(3) for m in _read_call(make(step), step)]
    tail = [m for step in range(6) for m in _read_call(make(step), step)
            if m["type"] == "activity"]
    for thread, verdict in ((suffix, "repeated_suffix"), (results, "repeated_result_run"),
                            (tail, "repeated_activity_tail")):
        assert vthread.describe_thread_cycle(thread) == verdict
        assert vthread.scan([thread]).names == [verdict]
        assert ref.describe_thread_cycle(thread, ref.cycle()) == verdict
        _core._set_screen_bits(1)
        try:
            assert vthread.scan([thread]).names == [verdict]
        finally:
            _core._set_screen_bits(64)


@pytest.mark.parametrize("make", _UNENCODABLE_KINDS, ids=_KIND_IDS)
def test_a_meta_javascript_cannot_serialise_leaves_type_and_text_compared(
        make: Callable[[int], Any]) -> None:
    """A message is compared field by field: metas that are all the marker leave the texts
    to tell the messages apart, in the core, the Python paths (a lone surrogate sends a
    thread to them), the reference and the loops found anywhere (a review found the
    Python keys encoding (type, text, meta) as one value, which the marker took whole)."""
    head = [{"type": "bot", "text": text, "meta": make(i)} for i, text in enumerate("abcd")]
    for thread in (head, [{**m, "text": m["text"] + "\ud800"} for m in head]):
        assert vthread.describe_thread_cycle(thread) is None
        assert vthread.scan([thread]).names == [None]
        assert ref.describe_thread_cycle(thread, ref.cycle()) is None
        assert find_loops([thread]) == find_loops_reference([thread]) == [[]]
    loop = [{"type": "bot", "text": text, "meta": make(9)} for text in "xyxyxy"]
    for suffix in ("", "\ud800"):  # the core's reading, then Python's
        thread = head + [{**m, "text": m["text"] + suffix} for m in loop]
        record = vthread.scan([thread]).record(0)
        assert (record["verdict"], record["loop_start"], record["period"],
                record["repetitions"]) == ("repeated_suffix", 4, 2, 3), record
        assert find_loops([thread]) == find_loops_reference([thread])


@pytest.mark.parametrize(("value", "text"), [
    (datetime.datetime(2024, 5, 6, 7, 8, 9, 999999), "2024-05-06T07:08:09.999Z"),
    (datetime.datetime(2024, 5, 6, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))),
     "2024-05-06T05:00:00.000Z"),
    (datetime.date(1969, 12, 31), "1969-12-31T00:00:00.000Z"),
    (datetime.datetime(1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
     "0000-12-31T23:00:00.000Z"),
    (datetime.datetime(9999, 12, 31, 23, tzinfo=datetime.timezone(-datetime.timedelta(hours=2))),
     "+010000-01-01T01:00:00.000Z"),
    (datetime.datetime(2000, 2, 29, 23, 59, 59, 999), "2000-02-29T23:59:59.000Z"),
])
def test_dates_are_written_as_javascripts_to_json(value: Any, text: str) -> None:
    """Dates as ``Date.prototype.toJSON``: UTC, milliseconds cut, JavaScript's years."""
    assert canonical(value) == _core.canonical(value).decode() == json.dumps(text)


class _UnreadableDate(datetime.datetime):
    """A datetime whose offset cannot be read (its own code raises)."""

    def utcoffset(self) -> datetime.timedelta | None:
        raise ValueError("no offset")


class _NotATime(datetime.datetime):
    """A datetime equal to nothing, itself included, whose offset cannot be read: as
    pandas' ``NaT`` is."""

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = datetime.datetime.__hash__

    def utcoffset(self) -> datetime.timedelta | None:
        raise ValueError("NaTType does not support utcoffset")


def _not_a_time() -> list[Any]:
    """pandas' ``NaT`` where pandas is installed, and a datetime that behaves as it does."""
    found: list[Any] = [_NotATime(2024, 5, 6)]
    with contextlib.suppress(ImportError):
        import pandas as pd

        found.append(pd.NaT)
    return found


@pytest.mark.parametrize("value", [*_not_a_time(), _UnreadableDate(2024, 5, 6)],
                         ids=lambda value: type(value).__name__)
def test_a_date_that_is_no_instant_never_raises(value: Any) -> None:
    """A datetime equal to nothing (pandas' NaT) is null, as JavaScript's Invalid Date's
    toJSON is, and a date whose offset raises is compared by its type and repr: the cycle
    functions and scan answer (NaT anywhere in a message raised ValueError from all of them,
    a tester's find), the engine, the core and the reference alike."""
    no_instant = value != value
    assert canonical(value) == _core.canonical(value).decode()
    assert (canonical(value) == "null") is no_instant
    assert canonical(value).startswith("!") is not no_instant
    thread = [{"type": "bot", "text": "x", "meta": {"at": value}}] * 4
    assert vthread.describe_thread_cycle(thread) == "repeated_suffix"
    assert vthread.scan([thread]).names == ["repeated_suffix"]
    assert ref.describe_thread_cycle(thread, cycle_options()) == "repeated_suffix"
    assert vthread.fingerprint(value) != vthread.fingerprint(datetime.datetime(2024, 5, 6))


@settings(max_examples=200, deadline=None)
@given(HOSTILE_VALUES)
def test_core_encodes_hostile_values_as_the_python_twin(value: Any) -> None:
    """The compiled encoding and fingerprint of any value are the Python twin's."""
    text = canonical(value)
    assert _core.canonical(value).decode("ascii") == text
    assert vthread.fingerprint(value) == xxhash.xxh3_64_intdigest(text.encode("ascii"))


def test_a_type_that_compares_elementwise_is_no_type() -> None:
    """A NumPy array as ``type`` is no kind of message, for the engine and the reference
    (the reference's ``==`` on it raised: found by tests/test_fuzz_values.py)."""
    thread = [{"type": "activity", "meta": {"activity": None}}, {}, {"type": np.array([1, 2])}]
    assert vthread.describe_thread_cycle(thread) is None
    assert ref.describe_thread_cycle(thread, cycle_options()) is None


def test_min_messages_of_any_real_type() -> None:
    """``min_messages`` and ``max_tokens`` of NumPy or Decimal type read as their numbers."""
    thread = [{"text": "a", "usage": {"tokens": 5}}] * 3
    for keywords in ({"max_tokens": np.int64(5), "min_messages": Decimal(2)},
                     {"max_tokens": Decimal("5.0"), "min_messages": Decimal("sNaN")}):
        got = vthread.build_thread(thread, **keywords)
        twin = ref.build_thread(thread, **keywords)
        assert (got.messages, got.tokens) == (twin.messages, twin.tokens)


@pytest.mark.parametrize("value", [{10**5000: 1}, {"1" * 8000: 1}, {-(10**4400): [1]},
                                   {"v": 10**5000}], ids=["huge int key", "long digit key",
                                                          "negative huge key", "huge value"])
def test_keys_beyond_pythons_digit_limit_are_encoded(value: Any) -> None:
    """A key of more than 4,300 digits is encoded, not a ValueError from ``str(int)``."""
    text = canonical(value)
    assert _core.canonical(value).decode("ascii") == text
    assert vthread.fingerprint(value) == xxhash.xxh3_64_intdigest(text.encode("ascii"))
    thread = _alternating(value, value)
    assert vthread.has_repeated_suffix(thread) and ref.has_repeated_suffix(
        thread, cycle_options())


class _GrowsItsOwner(Mapping[str, Any]):
    """A mapping whose iteration adds a member to the dict holding it."""

    def __init__(self, owner: dict[str, Any]) -> None:
        self.owner = owner

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        self.owner[f"late{len(self.owner)}"] = 1
        return iter(())

    def __len__(self) -> int:
        return 0


def _grown_owner() -> dict[str, Any]:
    owner: dict[str, Any] = {}
    owner["a"] = _GrowsItsOwner(owner)
    owner["b"] = 2
    return owner


def test_a_dict_changed_while_the_core_encodes_it_is_encoded_as_it_was_reached() -> None:
    """A dict whose value, when read, grows that dict is encoded with the members it had when
    the encoding reached it, as the reference's encoding (`_jsvalue`) and `json` copy them
    first (it was a RuntimeError, where the reference answered)."""
    assert _core.canonical(_grown_owner()) == b'{"a":{},"b":2}'
    assert _core.canonical(_grown_owner()).decode() == ref.canonical(_grown_owner())
    assert vthread.fingerprint(_grown_owner()) == vthread.fingerprint({"a": {}, "b": 2})


class _GrowsItsOwnerWhenShown:
    """A value of no JSON type whose text (read to encode and screen it) adds a member to
    the dict holding it."""

    def __init__(self, owner: dict[str, Any]) -> None:
        self.owner = owner

    def __repr__(self) -> str:
        self.owner[f"late{len(self.owner)}"] = 1
        return "Grows()"


def _response_growing_its_arguments() -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    arguments["a"] = _GrowsItsOwnerWhenShown(arguments)
    arguments["b"] = 2
    return {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": "ls", "arguments": arguments,
                                         "result": "x"}}}}


@pytest.mark.parametrize("shape", ["one result", "a text, then one result", "three results"])
def test_a_dict_changed_while_screened_is_judged_as_the_reference_judges_it(
        shape: str) -> None:
    """Screens read a dict's members as the encoder does, copied first: a value whose text
    grows its dict changes no verdict (one result was a RuntimeError, where the reference
    answers; three, an error from the exact comparison)."""

    def thread() -> list[Any]:
        if shape == "one result":
            return [_response_growing_its_arguments()]
        if shape == "a text, then one result":
            return [{"type": "user", "text": "a"}, _response_growing_its_arguments()]
        return [_response_growing_its_arguments() for _ in range(3)]

    expected = ref.describe_thread_cycle(thread(), ref.cycle())
    assert expected == (None if shape != "three results" else "repeated_result_run")
    assert vthread.describe_thread_cycle(thread()) == expected
    assert vthread.scan([thread()]).names == [expected]


class _ClearsWhenCompared(str):
    """A message key whose comparison empties the thread it is in (a caller's own code run
    while the scan reads the thread)."""

    thread: list[Any] | None = None

    def __hash__(self) -> int:
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        if _ClearsWhenCompared.thread is not None:
            _ClearsWhenCompared.thread.clear()
        return str.__eq__(self, other)


@pytest.mark.parametrize("keywords", [{}, {"anywhere": True}, {"format": "auto"},
                                      {"mask_volatile": True}])
def test_a_thread_changed_while_scanned_is_judged_as_it_was(keywords: dict[str, Any]) -> None:
    """A thread emptied by its own key's __eq__ while the core reads it is judged, and its
    loop attributed, as it was when the scan began (it was a ZeroDivisionError or IndexError
    from deep inside the loop's attribution, then a ValueError naming the thread)."""
    request = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": "f", "arguments": {"q": 1}}}}}

    def looping() -> list[dict[Any, Any]]:
        thread = [{"type": "user", "text": "hi"}] + [dict(request) for _ in range(6)]
        for message in thread:
            message[_ClearsWhenCompared("text")] = message.pop("text")
        return thread

    calm = vthread.scan([[{"type": "user", "text": "x"}], looping()], **keywords)
    assert calm.names == [None, "repeated_suffix"]
    hostile = looping()
    _ClearsWhenCompared.thread = hostile
    try:
        changed = vthread.scan([[{"type": "user", "text": "x"}], hostile], **keywords)
    finally:
        _ClearsWhenCompared.thread = None
    assert hostile == []
    assert [changed.record(row) for row in range(2)] == [calm.record(row) for row in range(2)]


def test_a_thread_replaced_while_scanned_is_judged_as_it_was() -> None:
    """A mapping message whose reading replaces every message of the caller's list (as
    another Python thread might between the core's reading and the loop's attribution):
    the record is the loop of the thread as it was, not the excerpt of messages that never
    repeated with a count of one copy."""
    pair = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "yo"}]
    thread: list[Any] = []

    class Replaces(Mapping[str, Any]):
        def __init__(self, message: dict[str, Any]) -> None:
            self.message, self.fired = message, False

        def __getitem__(self, key: str) -> Any:
            if not self.fired:
                self.fired = True
                thread[:] = [{"type": "user", "text": f"other {i}"} for i in range(6)]
            return self.message[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self.message)

        def __len__(self) -> int:
            return len(self.message)

    for keywords in ({}, {"anywhere": True}):
        thread[:] = [dict(m) for m in pair * 3]
        thread[-1] = Replaces(thread[-1])
        record = vthread.scan([thread], **keywords).record(0)
        assert thread[0]["text"] == "other 0"
        assert (record["verdict"], record["period"], record["repetitions"],
                record["excerpt"]) == ("repeated_suffix", 2, 3, "user: hi | bot: yo")


@pytest.mark.parametrize("run_object", [False, True])
def test_a_chat_thread_extended_while_scanned_keeps_its_length_as_read(
        monkeypatch: pytest.MonkeyPatch, run_object: bool) -> None:
    """With a format given, a record's message count is the thread's as it was translated,
    not as the caller's list holds it once the scan is done (another Python thread, standing
    in here as the scan's end, appended to it)."""
    scan_module = importlib.import_module("vthread.scan")  # vthread.scan is the function
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}] * 3
    thread: Any = {"id": "r1", "messages": chat} if run_object else chat
    scanned = scan_module._scan_paused

    def then_extended(*arguments: Any, **keywords: Any) -> Any:
        result = scanned(*arguments, **keywords)
        chat.extend([{"role": "user", "content": "more"}] * 10)
        return result

    monkeypatch.setattr(scan_module, "_scan_paused", then_extended)
    record = vthread.scan([thread], format="openai").record(0)
    assert len(chat) == 16
    assert (record["messages"], record["loop_messages"], record["id"]) == (
        6, 6, "r1" if run_object else None)


@pytest.mark.parametrize("anywhere", [False, True])
@pytest.mark.parametrize("format", ["openai", "auto"])
def test_a_chat_thread_cleared_by_its_own_message_keeps_its_length_as_read(
        format: str, anywhere: bool) -> None:
    """With a format given, a message whose reading clears the caller's list (its ``get``
    runs the caller's code during the translation): the record's message count is of the
    thread as it was read, as its loop is (it was the list's afterwards, 0: "8 loop
    messages in a 0-message thread"; a tester's case)."""
    thread: list[Any] = []

    class Clears(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            thread.clear()
            return dict.get(self, key, default)

    user = {"role": "user", "content": "status?"}
    bot = {"role": "assistant", "content": "Running."}
    thread += [user, bot] * 3 + [Clears(user), bot]
    record = vthread.scan([thread], format=format, anywhere=anywhere).record(0)
    assert thread == []
    assert (record["verdict"], record["loop_messages"], record["messages"]) == (
        "repeated_suffix", 8, 8)


@pytest.mark.parametrize("bad", [5, None, iter([])])
@pytest.mark.parametrize("format", ["native", "auto"])
def test_a_thread_that_is_no_sequence_is_named_with_any_format(bad: Any, format: str) -> None:
    """format="auto" finding native threads names the bad one as format="native" does (a
    count of every thread's messages, taken before the core read them, raised "object of
    type 'int' has no len()")."""
    with pytest.raises(TypeError, match=r"^thread 1: messages must be a sequence of mappings"):
        vthread.scan([[{"type": "user", "text": "hi"}], bad], format=format)


class _SaysOther(str):
    """A string whose own ``__str__`` says something else than it holds."""

    def __str__(self) -> str:
        return "other"


def _response(name: str, kind: str = "response") -> dict[str, Any]:
    return {"type": "activity", "text": "", "meta": {"activity": {
        "type": kind, "function": {"name": name, "arguments": {"q": 1}, "result": "r"}}}}


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        # Contents differ; each __str__ says "other": no run.
        ([_SaysOther("f"), _SaysOther("g"), _SaysOther("h")], None),
        # Contents agree, one written as a subclass: a run.
        ([_SaysOther("f"), "f", "f"], "repeated_result_run"),
    ],
)
def test_tool_names_compare_by_content_not_by_their_str(names: list[str],
                                                         expected: str | None) -> None:
    """A tool's name or an activity's kind that is a ``str`` subclass is read by what it holds
    (JavaScript compares content), in the engine, ``scan`` and the reference alike, and the
    excerpt shows that content: the reference once read ``str(name)``, the subclass's own
    ``__str__``, and found a run of different tools, or missed one of the same tool."""
    thread: list[dict[str, Any]] = [{"type": "user", "text": "q"}]
    for turn, name in enumerate(names):
        thread += [_response(name), {"type": "bot", "text": str(turn)}]
    thread.pop()
    assert vthread.describe_thread_cycle(thread) == expected
    assert ref.describe_thread_cycle(thread, ref.cycle()) == expected
    found = vthread.scan([thread])
    assert found.names == [expected]
    kinds = [_response("f", _SaysOther("response")) for _ in range(3)]
    looping = [{"type": "user", "text": "q"}, *kinds]
    record = vthread.scan([looping]).record(0)
    assert ref.describe_thread_cycle(looping, ref.cycle()) == record["verdict"]
    assert record["excerpt"] is not None and record["excerpt"].startswith("f(")


def _nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@pytest.mark.parametrize(("depth", "equal"), [(1_000, False), (4_000, False), (5_000, True),
                                              (10_000, True)])
def test_nesting_past_where_node_throws_compares_as_the_marker(depth: int,
                                                               equal: bool) -> None:
    """Node 20's ``JSON.stringify`` throws on arrays or objects nested past about 4,170
    levels (4,184 from the top of its stack, measured: ``node -e`` nesting ``[v]`` until it
    throws), so two metas nested 5,000 or 10,000 deep compare as the one fallback text,
    whatever their leaves; 4,000 deep they are told apart by their leaves. The limit was
    10,000, and metas 5,000 deep were unequal where production found them equal."""
    thread = [{"type": "u", "meta": _nested(depth, 1)}, {"type": "u", "meta": _nested(depth, 2)}]
    expected = "repeated_suffix" if equal else None
    assert vthread.describe_thread_cycle(thread, min_pattern_length=1) == expected
    assert vthread.scan([thread], min_pattern_length=1).record(0)["verdict"] == expected


@pytest.mark.parametrize("key", ["messages", "traj", "history"])
@pytest.mark.parametrize("format", ["native", "openai", "auto"])
def test_a_run_whose_messages_are_null_is_named_alike_in_every_format(
        key: str, format: str) -> None:
    """A run object holding null under its messages key is a run with no thread, in the
    native format as in the others (the native scan called it "a dict without them", a
    TypeError, as if the key were missing); a mapping without the keys stays a TypeError."""
    said = f'not a thread: "{key}" is a null, not an array'
    with pytest.raises(ValueError, match=f"^thread 0: {said}$"):
        vthread.scan([{key: None}], format=format)
    with pytest.raises(ValueError, match=f"^{said}$"):
        vthread.describe_thread_cycle({key: None}, format=format)
    if format == "native":
        with pytest.raises(TypeError, match=r"without them$"):
            vthread.scan([{"steps": None}], format=format)


class _AlwaysEqual(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


class _NeverEqual(str):
    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


class _Unhashable(str):
    def __hash__(self) -> int:
        raise RuntimeError("no hash")


@pytest.mark.parametrize("kind", [_AlwaysEqual, _NeverEqual, _Unhashable])
def test_build_thread_reads_a_str_subclass_type_by_its_content(kind: type[str]) -> None:
    """``build_thread``'s system messages and ``start_on`` read a message's ``type`` by its
    content, as the cycle functions do (a subclass whose ``__eq__`` said yes to everything
    made every message a system message, one saying no kept nothing after them; a type
    whose hash raises made every cycle function raise it), the engine and the reference
    alike."""
    def thread(make: Callable[[str], str]) -> list[dict[str, Any]]:
        return ([{"type": make("system"), "text": "s"}]
                + [{"type": make(t), "text": f"{t}{i}"}
                   for i, t in enumerate(["user", "bot", "user", "bot", "user"])])

    plain, odd = thread(str), thread(kind)
    for keywords in ({"keep_system": True}, {"start_on": "user"},
                     {"keep_system": True, "start_on": "user"}):
        want = vthread.build_thread(plain, max_tokens=4, estimate=lambda m: 1, **keywords)
        got = vthread.build_thread(odd, max_tokens=4, estimate=lambda m: 1, **keywords)
        assert [m["text"] for m in got.messages] == [m["text"] for m in want.messages]
        assert got.tokens == want.tokens
        reference = ref.shaped_build(odd, max_tokens=4, estimate=lambda m: 1, **keywords)
        assert [m["text"] for m in reference.messages] == [m["text"] for m in want.messages]
    calls = [{"type": kind("function_call"), "call_id": "c", "name": "f"}] * 4
    with pytest.warns(UserWarning, match="OpenAI Responses items"):
        assert vthread.describe_thread_cycle(calls) == "repeated_suffix"


class _LyingString(str):
    """A string whose own methods lie about it: every search finds nothing, it has no length,
    strips to nothing and reads as empty."""

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:
        return False

    def find(self, *args: Any) -> int:
        return -1

    def rfind(self, *args: Any) -> int:
        return -1

    def startswith(self, *args: Any) -> bool:
        return False

    def strip(self, *args: Any) -> str:
        return ""

    def isascii(self) -> bool:
        return True

    __hash__ = str.__hash__


def _strings_made(value: Any, kind: type[str]) -> Any:
    """``value`` with every string in it (dict keys aside) made a ``kind`` of its content."""
    if isinstance(value, str):
        return kind(value)
    if isinstance(value, dict):
        return {key: _strings_made(item, kind) for key, item in value.items()}
    if isinstance(value, list):
        return [_strings_made(item, kind) for item in value]
    return value


_CHAT_MESSAGES = {"openai": openai_messages(), "anthropic": anthropic_messages(),
                  "responses": responses_items(), "mini-swe-agent": mini_swe_agent_messages(),
                  "swe-agent": swe_agent_messages()}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(_CHAT_MESSAGES)), st.data(),
       st.sampled_from([_AlwaysEqual, _NeverEqual, _Unhashable, _LyingString]))
def test_translated_strings_are_read_by_their_content(format_: str, data: st.DataObject,
                                                      kind: type[str]) -> None:
    """Chat messages whose strings (roles, types, names, ids, texts) are ``str`` subclasses
    with their own ``__eq__``, ``__hash__`` or string methods are detected and translated as
    the same messages with plain strings: the adapters compared them with ``==``, ``in`` and
    ``find``, so a hash that raises made ``format="auto"`` raise it in every function, and
    a subclass saying yes to everything made every message an assistant's."""
    messages = data.draw(st.lists(_CHAT_MESSAGES[format_], max_size=8))
    odd = _strings_made(messages, kind)
    assert adapters.format_evidence(odd) == adapters.format_evidence(messages)
    try:
        want = adapters.to_native(messages, format_)
    except ValueError as error:
        with pytest.raises(ValueError, match=f"^{re.escape(str(error))}$"):
            adapters.to_native(odd, format_)
        return
    assert json.dumps(adapters.to_native(odd, format_)) == json.dumps(want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (vthread.describe_thread_cycle(odd, format=format_)
                == vthread.describe_thread_cycle(messages, format=format_))
        assert vthread.scan([odd], format=format_).record(0) == vthread.scan(
            [messages], format=format_).record(0)
        kept = [json.dumps(vthread.build_thread(given, max_tokens=5, estimate=lambda m: 1,
                                                format=format_, pair_safe=True).messages)
                for given in (messages, odd)]
    assert kept[0] == kept[1]


class _LoudFloat(float):
    """A float whose own conversions lie: it holds 5.0, says 7.0."""

    def __float__(self) -> float:
        return 7.0


class _LoudInt(int):
    """An int whose own conversions lie: it holds 5, says 100."""

    def __int__(self) -> int:
        return 100

    def __index__(self) -> int:
        return 100

    def __float__(self) -> float:
        return 100.0


class _TolistIsSelf(np.ndarray):  # type: ignore[type-arg]
    def tolist(self) -> Any:
        return self


def _impostors() -> list[Any]:
    """Objects that claim another type through ``__class__`` (a mock "spec"ed as it), or
    whose conversion to JSON gives themselves back."""
    from unittest import mock

    return [mock.Mock(spec=float), mock.Mock(spec=int), mock.Mock(spec=str),
            mock.Mock(spec=bool), mock.Mock(spec=list), mock.MagicMock(spec=float),
            mock.MagicMock(spec=int), np.arange(3).view(_TolistIsSelf), np.array(b"ab")]


@pytest.mark.parametrize("position", range(9))
def test_an_object_claiming_a_json_type_is_read_by_its_own(position: int) -> None:
    """A value whose ``__class__`` claims float or int (``Mock(spec=float)``), or a NumPy
    array whose ``tolist`` is itself, is encoded by what it is, the core as its Python twin,
    and every function answers as the reference: the core asked for its stand-in, got the
    object back as a number, and asked again until the process died (SIGSEGV)."""
    value = _impostors()[position]
    assert _core.canonical(value).decode() == canonical(value)
    response = {"type": "activity", "text": "", "meta": {"activity": {"type": "response",
                "function": {"name": "ls", "result": value}}}}
    noted = {"type": "bot", "text": "x", "meta": {"note": value}}
    for thread in ([response] * 3, [noted] * 4, [_CALL, response] * 3):
        expected = ref.describe_thread_cycle(thread, cycle_options())
        assert vthread.describe_thread_cycle(thread) == expected
        assert vthread.scan([thread]).names == [expected]
        assert find_loops([thread]) == find_loops_reference([thread])


def test_number_subclasses_are_the_numbers_they_hold() -> None:
    """A float or int subclass whose ``__float__``, ``__int__`` or ``__index__`` says another
    number is the number it holds (as json writes it and the core reads it) in the canonical
    encoding, the heuristics and the token figures of scan, the reference and build_thread:
    the Python twin asked the subclass and the two disagreed."""
    assert canonical(_LoudFloat(5.0)) == _core.canonical(_LoudFloat(5.0)).decode() == "5"
    assert canonical(_LoudInt(5)) == _core.canonical(_LoudInt(5)).decode() == "5"
    results = [{"type": "activity", "text": "", "meta": {"activity": {"type": "response",
               "function": {"name": "ls", "result": result}}}}
               for result in (_LoudFloat(5.0), 7, 7)]
    assert ref.describe_thread_cycle(results, cycle_options()) is None
    assert vthread.describe_thread_cycle(results) is None
    priced = {"type": "bot", "text": "x", "usage": {"tokens": _LoudInt(5)}}
    record = vthread.scan([[priced, priced]], min_pattern_length=1).record(0)
    assert record["loop_tokens"] == 10.0
    assert ref.attribute([priced, priced], cycle_options(min_pattern_length=1)).loop_tokens == 10
    assert vthread.build_thread([priced], max_tokens=50).tokens == 5.0


def test_an_int_subclass_beyond_64_bits_is_the_number_it_holds() -> None:
    """An int subclass too large for 64 bits is the number it holds, not what its own
    ``__int__`` or ``__float__`` says, in the core's encoding and screens as in the Python
    twin's: the core converted it through them, so 2**70 compared equal to 100."""
    for held in (2**70, -(2**70), 10**400):
        assert _core.canonical(_LoudInt(held)).decode() == canonical(_LoudInt(held)) == (
            canonical(held))
        assert vthread.fingerprint(_LoudInt(held)) != vthread.fingerprint(100)
        results = [{"type": "activity", "text": "", "meta": {"activity": {"type": "response",
                   "function": {"name": "ls", "result": result}}}}
                   for result in (100, 100, _LoudInt(held))]
        noted = [{"type": "bot", "text": "x", "meta": {"n": n}}
                 for n in (100, 100, 100, _LoudInt(held))]
        for thread in (results, noted):
            # Were it 100, the thread would loop.
            told = [json.loads(json.dumps(m).replace(str(held), "100")) for m in thread]
            assert ref.describe_thread_cycle(told, cycle_options(min_pattern_length=1))
            assert ref.describe_thread_cycle(thread, cycle_options(min_pattern_length=1)) is None
            assert vthread.describe_thread_cycle(thread, min_pattern_length=1) is None
            assert vthread.scan([thread], min_pattern_length=1).names == [None]


def _responses_emptied_on_second_text_lookup() -> list[dict[str, Any]]:
    """Three identical settled tool results, then a message whose ``text`` key takes the
    responses' ``meta`` away the second time it is looked up: after the core read the
    thread (and found the result run), before its record was made."""
    thread: list[dict[str, Any]] = [{"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": "ls", "arguments": {"p": 1},
                                         "result": "same"}}}} for _ in range(3)]

    class Key(str):
        calls = 0

        def __hash__(self) -> int:
            return str.__hash__(self)

        def __eq__(self, other: object) -> bool:
            Key.calls += 1
            if Key.calls == 2:
                for message in thread[:3]:
                    message.pop("meta")
            return str.__eq__(self, other)

    last: dict[str, Any] = {"type": "user"}
    last[Key("text")] = "hi"
    return [*thread, last]


@pytest.mark.parametrize("anywhere", [False, True])
def test_messages_changed_after_the_core_read_them_get_an_answer(anywhere: bool) -> None:
    """A looping thread whose messages change after the core read them, before its loop's
    record is made (another Python thread editing them), gets the answer of the state scan
    then finds: the record's reading of the changed messages raised AssertionError from
    deep inside, naming no thread."""
    thread = _responses_emptied_on_second_text_lookup()
    healthy = [{"type": "user", "text": str(n)} for n in range(3)]
    got = vthread.scan([healthy, thread], anywhere=anywhere)
    assert got == vthread.scan([healthy, thread], anywhere=anywhere)  # the state it found
    assert got.names == [None, None]


def test_a_loop_whose_record_fails_again_names_its_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop whose record fails otherwise each time its thread is read again (its messages
    changing with every read) is a RuntimeError naming the thread, with the record's error
    as its cause; one that fails the same way again (a mapping's own method that raises, a
    fault) is that error as it came, not one blaming an edit; MemoryError is never
    retried."""
    scan_module = sys.modules["vthread.scan"]
    calls: list[int] = []

    def failing(result: Any, columns: Any, rows: Sequence[int], threads: Any) -> None:
        if rows:  # (called for every batch, with the rows that loop)
            calls.append(len(rows))
            raise AssertionError(f"the result run fired without a settled response {len(calls)}")

    monkeypatch.setattr(scan_module, "attribute_threads", failing)
    looping = [{"type": "bot", "text": "same"}] * 4
    healthy = [{"type": "user", "text": str(n)} for n in range(3)]
    with pytest.raises(RuntimeError, match=r"^thread 2: the record of its loop could not be "
                       r"made .*AssertionError: the result run fired") as raised:
        vthread.scan([healthy, healthy, looping, healthy])
    assert isinstance(raised.value.__cause__, AssertionError)
    assert vthread.scan([healthy, healthy]).names == [None, None]  # no loop: no record

    class OwnError(Exception):
        pass

    for error, tries in ((OwnError("closed"), 2), (MemoryError(), 1)):
        def the_same(result: Any, columns: Any, rows: Sequence[int], threads: Any,
                     error: BaseException = error) -> None:
            if rows:
                calls.append(len(rows))
                raise error

        monkeypatch.setattr(scan_module, "attribute_threads", the_same)
        calls.clear()
        with pytest.raises(type(error)) as came:
            vthread.scan([healthy, looping, healthy])
        assert came.value is error and len(calls) == tries


def _legacy_str(text: str) -> object:
    """A str made as Python 3.11's deprecated ``PyUnicode_FromUnicode(NULL, n)`` makes it:
    not "ready" (its canonical storage not made yet) until something asks for it."""
    import ctypes

    make = ctypes.pythonapi.PyUnicode_FromUnicode
    make.restype, make.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_ssize_t]
    units = ctypes.pythonapi.PyUnicode_AsUnicode
    units.restype, units.argtypes = ctypes.c_void_p, [ctypes.py_object]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        made = make(None, len(text))
        buffer = (ctypes.c_wchar * len(text)).from_address(units(made))
    for position, char in enumerate(text):
        buffer[position] = char
    return made


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 removed PyUnicode_FromUnicode: "
                    "every str is ready there")
@pytest.mark.parametrize("text", ["first answer", "é answer", "😀 answer"])
def test_a_str_not_yet_ready_is_read_by_its_content(text: str) -> None:
    """A str whose storage CPython 3.11 has not made yet (made by a deprecated C API, from
    ctypes or an old extension) is read by its content: the core read its storage unmade, a
    null pointer, so every such text read as empty and any two compared equal."""
    assert _core.canonical(_legacy_str(text)).decode() == canonical(text)
    assert vthread.fingerprint(_legacy_str(text)) == vthread.fingerprint(text)
    thread = [{"type": "bot", "text": _legacy_str(text)},
              {"type": "bot", "text": _legacy_str("another")}]
    assert vthread.describe_thread_cycle(thread, min_pattern_length=1) is None
    assert vthread.scan([thread], min_pattern_length=1).names == [None]
    guard = vthread.Guard(max_repeats=2, min_chars=0)
    assert not guard.push(_legacy_str(text + " "))  # type: ignore[arg-type]


def _legacy_str_of_codes(codes: list[int]) -> object:
    """A not-ready str (as :func:`_legacy_str`) holding ``codes`` as they are, even past
    U+10FFFF, which CPython then cannot make ready (ValueError)."""
    import ctypes

    make = ctypes.pythonapi.PyUnicode_FromUnicode
    make.restype, make.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_ssize_t]
    units = ctypes.pythonapi.PyUnicode_AsUnicode
    units.restype, units.argtypes = ctypes.POINTER(ctypes.c_uint32), [ctypes.py_object]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        made = make(None, len(codes))
        buffer = units(made)
    for position, code in enumerate(codes):
        buffer[position] = code
    return made


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 removed PyUnicode_FromUnicode")
def test_a_str_that_cannot_be_made_ready_is_its_error() -> None:
    """A str CPython cannot make ready (a code point past U+10FFFF, put there through
    ctypes) is CPython's ValueError wherever the core meets it, never a text read as empty:
    it read as "", six such texts compared equal, and the error left pending surfaced later
    as a SystemError of some unrelated call (or, replaced by another, not at all)."""
    def bad(n: int = 0) -> object:
        return _legacy_str_of_codes([0x41, 0x110000 + n])

    said = "not in range"
    calls: list[Callable[[], object]] = [
        lambda: _core.canonical({"t": bad(), "n": 2**70}),
        lambda: _core.canonical({bad(): 1}),
        lambda: vthread.fingerprint({"t": bad(), "n": 2**70}),
        lambda: vthread.describe_thread_cycle(
            [{"type": "m", "text": "x", "meta": {"a": bad(n), "n": 2**70}} for n in range(6)]),
        lambda: vthread.scan([[{"type": "m", "text": bad(), "meta": {"n": 2**70}}] * 4]),
        lambda: vthread.scan([[{"type": bad(), "text": "x"}] * 4]),
        lambda: vthread.Guard().push(bad()),  # type: ignore[arg-type]
        lambda: vthread.scan_texts([bad()]),  # type: ignore[list-item]
        lambda: vthread.has_repeated_text_runs([bad()]),  # type: ignore[list-item]
        lambda: vthread.masked_thread([{"type": "m", "text": bad()}]),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=said):
            call()
    assert vthread.fingerprint("A") != vthread.fingerprint("")  # nothing left pending


class _ReadsAsEmpty(dict):  # type: ignore[type-arg]
    """A dict whose own ``[]`` finds nothing: its ``get`` (dict.get) finds what it holds."""

    def __getitem__(self, key: Any) -> Any:
        raise KeyError(key)


def _missing_threads() -> list[list[Any]]:
    """Threads of mappings that answer a missing key by inventing (and keeping) one."""
    from collections import Counter, defaultdict

    usage: defaultdict[str, int] = defaultdict(int, {"prompt_tokens": 40})
    priced = {"type": "user", "text": "hi", "usage": usage}
    invented = defaultdict(lambda: "x", {"type": "bot"})
    counted = Counter({"type": 1})
    odd = _ReadsAsEmpty({"type": "bot", "text": "x"})
    return [[priced, priced], [invented, {"type": "bot", "text": "x", "meta": "x"}],
            [invented, invented, invented], [counted, counted], [odd, odd, odd],
            [_CALL, odd, _CALL, odd]]


@pytest.mark.parametrize("position", range(6))
def test_mappings_that_invent_missing_keys_are_read_by_get(position: int) -> None:
    """A message (or its usage) that is a defaultdict, a Counter or a dict whose own ``[]``
    differs is read by its ``get``, as the reference reads it, and is left as it was given:
    the core asked ``[]``, so a defaultdict gained "tokens": 0, "text" and "meta" keys from
    being scanned, and scan answered repeated_suffix where the reference said None."""
    thread = _missing_threads()[position]
    before = [(type(m), dict(m), {k: dict(v) if isinstance(v, dict) else v for k, v in m.items()})
              for m in thread]
    options = cycle_options(min_pattern_length=1)
    expected = ref.describe_thread_cycle(thread, options)
    assert vthread.describe_thread_cycle(thread, min_pattern_length=1) == expected
    result = vthread.scan([thread], min_pattern_length=1)
    assert result.names == [expected]
    tokens = ref.attribute(thread, options).loop_tokens
    record_tokens = result.record(0)["loop_tokens"]
    assert (record_tokens is None and (tokens is None or math.isnan(tokens))) or (
        record_tokens == tokens)
    vthread.build_thread(thread, max_tokens=100, estimate=lambda m: 1)
    vthread.fingerprint(thread)
    vthread.scan([thread], anywhere=True, mask_volatile=True)
    after = [(type(m), dict(m), {k: dict(v) if isinstance(v, dict) else v for k, v in m.items()})
             for m in thread]
    assert after == before


class _FieldsMapping(Mapping[str, Any]):
    """A message that is a plain ``Mapping`` (no dict) over ``fields``: the base of the odd
    mappings below, each changing one part of the protocol."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


class _ReplacesItsThread(_FieldsMapping):
    """A message whose reading replaces every message of the thread holding it."""

    def __init__(self, fields: dict[str, Any], thread: list[Any]) -> None:
        super().__init__(fields)
        self.thread = thread

    def __getitem__(self, key: str) -> Any:
        self.thread[:] = [{"type": "user", "text": "new"}]
        return self.fields[key]


@pytest.mark.parametrize("format_", ["native", "auto"])
@pytest.mark.parametrize("position", [0, 1])
def test_a_thread_is_read_as_it_was_at_the_call(format_: str, position: int) -> None:
    """A message that rewrites its own thread when read, first or second in it, leaves the
    answer that of the four messages held at the call, with the native format and with
    format="auto": chat detection and format detection read it before the core took its
    copy, so scan answered for the one message left (None, 1 message)."""
    def thread() -> list[Any]:
        held: list[Any] = [{"type": "user", "text": "a"}, {"type": "bot", "text": "b"}] * 2
        held[position] = _ReplacesItsThread(dict(held[position]), held)
        return held

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = vthread.scan([thread()], format=format_)
        assert result.names == ["repeated_suffix"] and result.messages.tolist() == [4]
        assert vthread.describe_thread_cycle(thread(), format=format_) == "repeated_suffix"


def test_a_retried_failure_is_told_by_the_tools_name_by_content() -> None:
    """Between two copies of a failing call, a response of the same tool with another result
    is progress, whatever the name's own ``__eq__`` says: a name saying it equals nothing
    made the other calls another tool's, and progress a loop of retries."""
    def call(name: str) -> dict[str, Any]:
        return {"type": "activity", "text": "", "meta": {"activity": {
            "type": "request", "function": {"name": name, "arguments": {"x": 1}}}}}

    def response(name: str, result: str) -> dict[str, Any]:
        return {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {"name": name, "arguments": {"x": 1},
                                             "result": result}}}}

    def thread(name: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"type": "user", "text": "go"}]
        for i in range(3):
            messages += [call("ls"), response("ls", "Error: boom"),
                         {"type": "bot", "text": f"thinking {i}"}, call(name),
                         response(name, f"other {i}"), {"type": "bot", "text": f"hmm {i}"}]
        return messages

    plain = find_loops([thread("ls")])
    assert plain == find_loops_reference([thread("ls")]) == [[]]
    assert find_loops([thread(_NeverEqual("ls"))]) == plain
    assert find_loops_reference([thread(_NeverEqual("ls"))]) == plain


class _ListedItems(_FieldsMapping):
    """A mapping whose ``items()`` gives its members as given: ``[key, value]`` lists, or
    members of another length."""

    def __init__(self, fields: dict[str, Any], members: list[Any]) -> None:
        super().__init__(fields)
        self.members = members

    def items(self) -> Any:
        return self.members


@pytest.mark.parametrize("members", [[["a", 1]], [("a", 1, 2)], [("a",)], [5], []])
def test_mapping_members_unpack_as_python_unpacks_them(members: list[Any]) -> None:
    """A meta whose ``items()`` yields ``[key, value]`` lists is encoded as Python's twin
    encodes it (``for key, value in items()``), and members that do not unpack raise
    Python's own error in both: the core asked for exact tuples ("'list' object is not an
    instance of 'tuple'", where the reference answered repeated_suffix)."""
    value = _ListedItems({"a": 1}, members)
    try:
        expected = canonical(value)
    except (TypeError, ValueError) as error:
        # The same error; its text as Python 3.11-3.13 word it (3.14 adds the count got).
        said = str(error).split(" (")[0]
        with pytest.raises(type(error), match=f"^{re.escape(said)}"):
            _core.canonical(value)
        return
    assert _core.canonical(value).decode() == expected
    thread = [{"type": "user", "text": "hi"}] + [{"type": "bot", "text": "x", "meta": value}] * 2
    answer = ref.describe_thread_cycle(thread, cycle_options(min_pattern_length=1))
    assert vthread.scan([[], thread], min_pattern_length=1).names == [None, answer]


class _NoLength(str):
    def __len__(self) -> int:
        return 0


class _SlicesElsewhere(str):
    def __getitem__(self, index: Any) -> str:
        return "Zzz. Yyy."


@pytest.mark.parametrize("kind", [_NoLength, _SlicesElsewhere, _LyingString])
def test_a_runaway_text_is_read_by_its_content(kind: type[str]) -> None:
    """A text that is a ``str`` subclass whose ``__len__``, slicing or string methods lie is
    judged a runaway (or not) by its content everywhere, as the core reads it: the reference
    and has_repeated_text_run asked the subclass (no runaway), scan's excerpt and signature
    came from its slicing, and the reference guard saw an empty push."""
    runaway = "Intro. " + "Let me check. " * 10
    plain = [{"type": "bot", "text": runaway}]
    odd = [{"type": "bot", "text": kind(runaway)}]
    assert ref.describe_thread_cycle(odd, cycle_options()) == "repeated_message_text_run"
    assert vthread.describe_thread_cycle(odd) == "repeated_message_text_run"
    assert vthread.has_repeated_text_run(kind(runaway))
    assert vthread.scan([odd]).record(0) == vthread.scan([plain]).record(0)
    words = "Let me check the file. " * 8
    assert vthread.Guard().push(kind(words)) and ref.guard().push(kind(words))


class _GetWithoutDefault(_FieldsMapping):
    """A mapping whose own ``get`` takes a key alone."""

    def get(self, key: str) -> Any:  # type: ignore[override]
        return self.fields.get(key)


def test_odd_keys_and_mappings_are_read_as_the_reference_reads_them() -> None:
    """A mapping key that claims to be a str (a mock), a message's ``type`` that does, and a
    message whose ``get`` takes no default are read by the engine as by the reference (the
    reference raised on the key, build_thread on the type, and the core, asking ``get``
    with a default, raised a TypeError on the mapping)."""
    from unittest import mock

    key = mock.Mock(spec=str)
    assert canonical({key: 1}) == _core.canonical({key: 1}).decode()
    thread = [{"type": "user", "text": "hi"}] + [{"type": "bot", "text": "x",
                                                   "meta": {key: 1}}] * 3
    assert vthread.describe_thread_cycle(thread) == ref.describe_thread_cycle(
        thread, cycle_options())
    typed = [{"type": mock.Mock(spec=str), "text": "a", "usage": {"tokens": 1}}] * 2
    assert len(vthread.build_thread(typed, max_tokens=5, keep_system=True).messages) == 2
    assert len(vthread.build_thread(typed, max_tokens=5, start_on="user").messages) == 0
    odd = [_GetWithoutDefault({"type": "bot", "text": "x"})] * 4
    assert vthread.describe_thread_cycle(odd) == ref.describe_thread_cycle(
        odd, cycle_options()) == "repeated_suffix"


class _BadPairs(dict[str, Any]):
    """A meta whose items are not pairs: encoding it raises the caller's own ValueError."""

    def items(self) -> Any:
        return [("a", 1, 2)]


class _TextRaises(dict[str, Any]):
    """A message whose ``get("text")`` raises."""

    def get(self, key: str, default: Any = None) -> Any:
        if key == "text":
            raise KeyError("text")
        return super().get(key, default)


@pytest.mark.parametrize("call", ["scan", "scan anywhere", "scan jobs=2", "describe"])
@pytest.mark.parametrize("odd", ["pairs", "get raises", "mock"])
def test_an_error_a_message_raises_is_noted_with_its_thread_and_index(
        call: str, odd: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception a message's own objects raise while they are read (a meta whose items
    are no pairs, a ``get`` that raises, a ``Mock(spec=dict)``) propagates as raised, with a
    note naming the thread and message, as the core's own errors name them (testers: the
    error named neither, in a batch of thousands)."""
    from unittest import mock

    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES", 0)
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES_ANYWHERE", 0)
    fine = {"type": "user", "text": "a"}
    bad: Any = {"pairs": {"type": "user", "text": "a", "meta": _BadPairs(a=1)},
                "get raises": _TextRaises(type="user", text="a"),
                "mock": {"type": "user", "text": "a", "meta": mock.Mock(spec=dict)}}[odd]
    raised = {"pairs": ValueError, "get raises": KeyError, "mock": TypeError}[odd]
    # (equal type and text around it: the meta is read, which only a candidate loop needs)
    bot = {"type": "bot", "text": "b"}
    thread = [fine, bot, bad, bot, bad, bot]
    batch = [[fine]] * 7 + [thread] + [[fine]] * 3
    with pytest.raises(raised) as error:
        if call == "describe":
            vthread.describe_thread_cycle(thread)
        else:
            vthread.scan(batch, anywhere=call == "scan anywhere",
                         jobs=2 if call == "scan jobs=2" else 1)
    where = "messages[2]" if call == "describe" else "thread 7, messages[2]"
    assert error.value.__notes__ == [f"while reading {where}"]


@pytest.mark.parametrize("call", ["describe_thread_cycle", "is_thread_cyclic",
                                  "has_repeated_suffix", "has_repeated_activity_tail",
                                  "has_repeated_result_run"])
def test_a_single_calls_note_names_the_message_and_no_thread(call: str) -> None:
    """An error a message's own code raises as a single thread is read: the note names the
    message alone, as ``describe_thread_cycle``'s does (the single heuristics, reading a
    batch of one, named "thread 0, messages[2]", a thread the caller never passed; a
    tester's case)."""

    class Raises(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            raise ValueError("x")

    thread = [{"type": "bot", "text": "A"}] * 2 + [Raises()]
    with pytest.raises(ValueError, match=r"^x") as error:
        getattr(vthread, call)(thread)
    assert error.value.__notes__ == ["while reading messages[2]"]


class _GetRaises(dict[str, Any]):
    """A native message whose every ``get`` raises."""

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("get raises")


@pytest.mark.parametrize("call", ["scan", "describe", "is_thread_cyclic"])
@pytest.mark.parametrize("length", [2, 30])
def test_an_error_the_first_message_raises_is_noted_too(call: str, length: int) -> None:
    """The first message is read in Python before the core (is the thread chat?): an
    exception its own objects raise there gains the core's note all the same (testers: it
    had none, where messages[1] and on had theirs). The later messages are native: the
    note names the first, found by reading each again."""
    fine = {"type": "user", "text": "a"}
    thread = [_GetRaises(fine)] + [fine, {"type": "bot", "text": "b"}] * (length // 2)
    with pytest.raises(RuntimeError, match="get raises") as error:
        if call == "scan":
            vthread.scan([[fine], [fine], thread])
        else:
            getattr(vthread, {"describe": "describe_thread_cycle"}.get(call, call))(thread)
    where = "thread 2, messages[0]" if call == "scan" else "messages[0]"
    assert error.value.__notes__ == [f"while reading {where}"]


class _KeysRaise(Mapping[str, Any]):
    """A message whose reading of the given keys raises."""

    def __init__(self, fields: dict[str, Any], raising: set[str]) -> None:
        self.fields, self.raising = fields, raising

    def __getitem__(self, key: str) -> Any:
        if key in self.raising:
            raise ValueError(f"bad key {key}")
        return self.fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


def test_an_error_a_later_message_raises_in_the_chat_screen_names_no_wrong_message() -> None:
    """A thread whose first message is no native one is read further to tell whose it is:
    an exception a later message raises there names the thread alone, never a message that
    did not raise it (the reviewer's: messages[2] raised, messages[1] was named)."""
    thread = [{"type": "human", "content": "hi"},
              _KeysRaise({"type": "ai", "content": "x"}, {"text"}),
              _KeysRaise({"type": "ai", "content": "y"}, {"type"})]
    with pytest.raises(ValueError, match="bad key") as error:
        vthread.scan([[{"type": "user", "text": "a"}], thread])
    assert error.value.__notes__ == ["while reading thread 1"]
    with pytest.raises(ValueError, match="bad key") as error:
        vthread.describe_thread_cycle(thread)
    assert getattr(error.value, "__notes__", None) is None


class _RaisesWhenRead(dict[str, Any]):
    """A chat message whose every read raises (a mapping of the caller's own)."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def get(self, key: str, default: Any = None) -> Any:
        raise RuntimeError("boom")


@pytest.mark.parametrize("format_", ["openai", "anthropic", "auto"])
def test_an_error_a_chat_message_raises_is_noted_with_its_thread(format_: str) -> None:
    """An exception a chat message's own object raises as a format's adapter reads it
    propagates as raised, with a note naming the thread and format (it named nothing: the
    core notes only what it reads of native threads); one thread given to
    describe_thread_cycle is "the messages"."""
    chat = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}]
    bad = [chat[0], _RaisesWhenRead(role="assistant", content="ok")]
    with pytest.raises(RuntimeError, match="boom") as error:
        vthread.scan([chat, chat, bad], format=format_)
    told = "openai" if format_ == "auto" else format_
    assert error.value.__notes__ == [  # (auto: raised as the format is told)
        'while telling the format of thread 2 (format="auto")' if format_ == "auto"
        else f"while reading thread 2 in {told} format"]
    with pytest.raises(RuntimeError, match="boom") as error:
        vthread.describe_thread_cycle(bad, format=told)
    assert error.value.__notes__ == [f"while reading the messages in {told} format"]


class _GetSaysOtherwise(dict[str, Any]):
    """A mapping whose ``get`` gives ``"X"`` for every key in ``odd`` (``[]`` and ``in`` as a
    dict's)."""

    odd: frozenset[str] = frozenset()

    def get(self, key: str, default: Any = None) -> Any:
        return "X" if key in self.odd else super().get(key, default)


class _ItemSaysOtherwise(dict[str, Any]):
    """A mapping whose ``[]`` gives ``"X"``, and ``in`` says present, for every key in
    ``odd`` (``get`` as a dict's)."""

    odd: frozenset[str] = frozenset()

    def __getitem__(self, key: str) -> Any:
        return "X" if key in self.odd else super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        return key in self.odd or super().__contains__(key)


@pytest.mark.parametrize("kind", [_GetSaysOtherwise, _ItemSaysOtherwise])
@pytest.mark.parametrize("field", ["meta", "payloads"])
def test_a_mapping_whose_get_and_items_disagree_is_read_by_get_everywhere(
        kind: type[dict[str, Any]], field: str) -> None:
    """A message (or tool function) whose ``get`` and ``[]``/``in`` give different values is
    read one way, with ``get``, by the core, its Python twins and the reference alike: the
    reference read ``meta`` (and a function's payloads) with ``in`` and ``[]``, and called
    ``repeated_suffix`` no loop where the engine found one (a tester's)."""
    odd = type("Odd", (kind,), {"odd": frozenset(
        {"meta"} if field == "meta" else {"arguments", "result"})})
    bot = {"type": "bot", "text": "b"}
    if field == "meta":
        thread = [odd(type="u", text="a", meta=i) for i in range(3)]
        thread = [message for first in thread for message in (first, bot)]
    else:
        def call(i: int) -> dict[str, Any]:
            function = odd(name="ls", arguments={"n": i}, result=f"r{i}")
            return {"type": "activity", "text": "",
                    "meta": {"activity": {"type": "response", "function": function}}}
        thread = [call(i) for i in range(6)]
    expected = ref.describe_thread_cycle(thread, ref.cycle())
    # (read by get, the odd values are equal and loop; by [], they differ)
    assert expected == (None if kind is _ItemSaysOtherwise else
                        "repeated_suffix" if field == "meta" else "repeated_result_run")
    assert vthread.describe_thread_cycle(thread) == expected
    assert vthread.scan([thread]).names == [expected]
    assert vthread.is_thread_cyclic(thread) == ref.is_thread_cyclic(thread, ref.cycle())


class _NameText(str):
    """A str subclass: a tool name read by Python for the loop's excerpt, not by the core."""


def test_a_tool_function_whose_get_takes_no_default_is_read_everywhere() -> None:
    """A tool function that is a mapping whose own ``get`` takes a key alone (a tool name a
    str subclass, so that the loop's excerpt is written in Python): every reader takes its
    payloads as the core does (the excerpt's reader asked ``get`` with a default and
    raised TypeError, in scan and scan anywhere; a reviewer's)."""
    def call() -> dict[str, Any]:
        function = _GetWithoutDefault({"name": _NameText("ls"), "arguments": {"p": "."},
                                       "result": "a.txt"})
        return {"type": "activity", "text": "",
                "meta": {"activity": {"type": "response", "function": function}}}

    thread = [call() for _ in range(6)]
    expected = ref.describe_thread_cycle(thread, ref.cycle())
    assert expected == "repeated_suffix"
    assert vthread.scan([thread]).names == [expected]
    assert "ls" in vthread.scan([thread]).excerpt[0]
    anywhere = vthread.scan([thread], anywhere=True)
    assert anywhere.loops is not None
    assert len(anywhere.loops[0]) == len(find_loops_reference([thread])[0])


class _InterruptedOnRereading(dict[str, Any]):
    """A message whose ``get("text")`` raises RuntimeError the first time and Ctrl-C's
    KeyboardInterrupt the next."""

    calls = 0

    def get(self, key: str, default: Any = None) -> Any:
        if key == "text":
            type(self).calls += 1
            raise RuntimeError("first") if type(self).calls == 1 else KeyboardInterrupt
        return super().get(key, default)


def test_a_ctrl_c_while_an_errors_place_is_found_is_not_lost() -> None:
    """Finding where an error was raised reads the messages' fields again; a Ctrl-C raised
    meanwhile ends the call as a Ctrl-C (it was swallowed, the first error raised in its
    place; a reviewer's)."""
    _InterruptedOnRereading.calls = 0
    with pytest.raises(KeyboardInterrupt):
        vthread.scan([[_InterruptedOnRereading(type="user", text="a")]])
    assert _InterruptedOnRereading.calls == 2


class _ClaimsTooMany(Sequence[Any]):
    """A sequence whose ``__len__`` claims far more messages than it holds (one)."""

    def __len__(self) -> int:
        return 10**18

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if not isinstance(index, int) or index >= 1:
            raise IndexError(index)
        return {"type": "user", "text": "x"}


@pytest.mark.parametrize("call", ["scan", "describe_thread_cycle", "build_thread",
                                  "masked_thread"])
def test_a_sequence_claiming_more_messages_than_memory_holds_says_so(call: str) -> None:
    """A thread whose ``__len__`` claims 10**18 messages: copying it ran out of memory with a
    bare MemoryError (a tester's case); now it says what the sequence claimed, and ``scan``
    which thread it was."""
    said = r"^a _ClaimsTooMany whose len\(\) is 1,000,000,000,000,000,000: more messages"
    with pytest.raises(MemoryError, match=said) as raised:
        if call == "scan":
            vthread.scan([[{"type": "user", "text": "a"}], _ClaimsTooMany()])
        elif call == "describe_thread_cycle":
            vthread.describe_thread_cycle(_ClaimsTooMany())
        elif call == "build_thread":
            vthread.build_thread(_ClaimsTooMany(), max_tokens=5)
        else:
            vthread.masked_thread(_ClaimsTooMany())
    if call == "scan":
        assert raised.value.__notes__ == ["while reading thread 1"]


class _RunsOutReading(Sequence[Any]):
    """A sequence of three messages whose reading runs out of memory."""

    def __len__(self) -> int:
        return 3

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        raise MemoryError("reading it")


def test_a_sequence_whose_reading_runs_out_of_memory_keeps_its_error() -> None:
    """Only a ``__len__`` claiming more messages than any memory holds is named: the
    MemoryError of an honest sequence is its own (the reviewer's case)."""
    with pytest.raises(MemoryError, match=r"^reading it$"):
        vthread.describe_thread_cycle(_RunsOutReading())
