"""The NumPy engine against the scalar reference, on random threads and options."""

from __future__ import annotations

import json
import math
from types import MappingProxyType
from typing import Any

import pytest
import reference_api
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from strategies import JSON_VALUES, cycle_keywords, threads

import vthread
from vthread import _jsvalue
from vthread import _reference as ref
from vthread._messages import ABSENT, Activity
from vthread._options import cycle_options

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
HEURISTICS = ["has_repeated_suffix", "has_repeated_activity_tail", "has_repeated_result_run",
              "is_thread_cyclic", "describe_thread_cycle"]


@SETTINGS
@given(threads(), cycle_keywords())
def test_each_heuristic_equals_reference(thread: list[dict[str, Any]],
                                         keywords: dict[str, Any]) -> None:
    """Every single-thread heuristic answers as the reference does."""
    for name in HEURISTICS:
        assert getattr(vthread, name)(thread, **keywords) == getattr(reference_api, name)(
            thread, **keywords), name


@SETTINGS
@given(st.lists(threads(max_size=20), max_size=8), cycle_keywords())
def test_scan_equals_reference_attribution(batch: list[list[dict[str, Any]]],
                                           keywords: dict[str, Any]) -> None:
    """scan() gives, thread for thread, the reference's verdict and attribution."""
    result = vthread.scan(batch, **keywords)
    options = cycle_options(**keywords)
    assert result.names == [vthread.describe_thread_cycle(t, **keywords) for t in batch]
    for row, thread in enumerate(batch):
        expected = ref.attribute(thread, options)
        assert int(result.codes[row]) == expected.code
        assert int(result.loop_start[row]) == expected.loop_start
        assert int(result.period[row]) == expected.period
        assert int(result.repetitions[row]) == expected.repetitions
        assert int(result.loop_messages[row]) == (
            expected.loop_messages if expected.code else 0)
        tokens = float(result.loop_tokens[row])
        assert (math.isnan(tokens) and math.isnan(expected.loop_tokens)) or (
            tokens == expected.loop_tokens)


@SETTINGS
@given(threads(), st.sampled_from([0, 1, 2.5, 10, 1e9]), st.sampled_from([None, 0, 1, 2, -3]),
       st.sampled_from([False, True, "half", "same", "drop"]))
def test_build_thread_equals_reference(thread: list[dict[str, Any]], budget: float,
                                       floor: int | None, mode: str | bool) -> None:
    """build_thread keeps the same messages, usages and total as the reference."""
    trims = {"half": lambda m, room: {**m, "usage": {"tokens": room / 2}},
             "same": lambda m, room: m, "drop": lambda m, room: None}
    inclusive = trims[mode] if isinstance(mode, str) else mode
    kwargs: dict[str, Any] = {"max_tokens": budget, "estimate": lambda m: len(str(m)) % 7,
                              "min_messages": floor, "inclusive": inclusive}
    before = _jsvalue.canonical(thread)
    got = vthread.build_thread(thread, **kwargs)
    want = ref.build_thread(thread, **kwargs)
    assert _jsvalue.canonical(got.messages) == _jsvalue.canonical(want.messages)
    assert got.tokens == want.tokens
    assert _jsvalue.canonical(thread) == before


@settings(max_examples=2000, deadline=None)
@given(JSON_VALUES)
def test_canonical_fast_path_equals_slow_encoder(value: Any) -> None:
    """The C-encoder fast path and the walking encoder write the same text."""
    assert _jsvalue.canonical(value) == _jsvalue._encode(value)


@settings(max_examples=2000, deadline=None)
@given(JSON_VALUES, JSON_VALUES)
def test_canonical_equality_is_javascript_equality(left: Any, right: Any) -> None:
    """Two values share a canonical text exactly when their JavaScript values are equal."""
    assert (_jsvalue.canonical(left) == _jsvalue.canonical(right)) == (
        _js_value(left) == _js_value(right))


def _js_value(value: Any) -> Any:
    """An independent model of JSON.stringify's view: numbers as doubles, keys ordered."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return ("s", value) if isinstance(value, str) else value
    if isinstance(value, (int, float)):
        number = float(value)
        if math.isnan(number) or math.isinf(number):
            return None
        return ("n", number + 0.0)
    if isinstance(value, list):
        return ("a", tuple(_js_value(v) for v in value))
    index_keys = sorted((k for k in value if k.isdigit() and (k == "0" or k[0] != "0")),
                        key=int)
    others = [k for k in value if k not in index_keys]
    return ("o", tuple((k, _js_value(value[k])) for k in index_keys + others))


def _read_only(value: Any) -> Any:
    """The same JSON value as read-only mappings and tuples, which no C-level fast path of
    the engine (``dict.get`` over many dicts at once) accepts."""
    if isinstance(value, dict):
        return MappingProxyType({k: _read_only(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_read_only(v) for v in value)
    return value


@SETTINGS
@given(st.lists(threads(max_size=20), max_size=6), cycle_keywords())
def test_other_mappings_and_sequences_answer_alike(batch: list[list[dict[str, Any]]],
                                                   keywords: dict[str, Any]) -> None:
    """Threads of other Mapping and Sequence types take the engine's slow paths and still
    answer as the reference does on the plain dicts."""
    odd = [tuple(_read_only(m) for m in thread) for thread in batch]
    options = cycle_options(**keywords)
    want = [ref.describe_thread_cycle(thread, options) for thread in batch]
    assert vthread.scan(odd, **keywords).names == want
    assert [vthread.describe_thread_cycle(thread, **keywords) for thread in odd] == want


_SIGNATURES = st.builds(
    Activity,
    kind=st.sampled_from(["request", "response", "notice"]),
    name=st.sampled_from(["read", "ls"]),
    arguments=st.sampled_from([ABSENT, "1", "2", "3", "4", "5"]),
    result=st.sampled_from([ABSENT, '"a"', '"b"', '"c"', '"d"', '"e"']),
)


@st.composite
def activity_tails(draw: st.DrawFn) -> list[Activity]:
    """A run of parsed activities drawn mostly from a small pool, so that it often collapses."""
    pool = draw(st.lists(_SIGNATURES, min_size=1, max_size=6))
    return draw(st.lists(st.one_of(st.sampled_from(pool), _SIGNATURES), min_size=8,
                         max_size=24))


def _engine_tail_collapsed(tail: list[Activity]) -> bool:
    """The engine's decision on a tail: the activities written out as messages and read back
    through the core's columns and the NumPy tail check."""
    messages = []
    for activity in tail:
        function: dict[str, Any] = {"name": activity.name}
        if activity.arguments != ABSENT:
            function["arguments"] = json.loads(activity.arguments)
        if activity.result != ABSENT:
            function["result"] = json.loads(activity.result)
        messages.append({"type": "activity", "text": "",
                         "meta": {"activity": {"type": activity.kind, "function": function}}})
    return vthread.has_repeated_activity_tail(messages)


@settings(max_examples=1000, deadline=None)
@given(activity_tails())
def test_engine_tail_decision_equals_reference(tail: list[Activity]) -> None:
    """The engine's activity-tail decision is its own code and answers as the reference's."""
    assert _engine_tail_collapsed(tail) == ref.tail_collapsed(tail)


def test_tail_decision_examples_reach_both_verdicts() -> None:
    """The strategy above is not vacuous: it yields collapsed and progressing tails alike."""
    for verdict in (True, False):
        find(activity_tails(), lambda tail, want=verdict: ref.tail_collapsed(tail) is want)


def _ask(arguments: str = "1") -> Activity:
    return Activity("request", "read", arguments, ABSENT)


def _answer(result: str, name: str = "read") -> Activity:
    """A response; named "ls" it answers no "read" request, so it never shows progress."""
    return Activity("response", name, ABSENT, f'"{result}"')


def _other(result: str) -> Activity:
    return _answer(result, "ls")


TAIL_BOUNDARIES = {
    # Each tail turns on one condition of the heuristics' rules, so that a slip in either
    # implementation on that condition shows here even when random tails rarely reach it.
    "4 requests with arguments, 4 results": ([_ask(), _other("a")] * 4, True),
    "3 requests with arguments": ([_ask(), _other("a")] * 3 + [_ask(ABSENT), _other("a")],
                                  False),
    "3 responses with results": ([_ask(), _other("a")] * 3
                                 + [_ask(), Activity("response", "ls", ABSENT, ABSENT)], False),
    "signatures exactly half the tail": (
        [_ask("1"), _other("a"), _ask("2"), _other("a"), _ask("1"), _other("b"), _ask("1"),
         _other("a")], True),
    "signatures one over half": (
        [_ask("1"), _other("a"), _ask("2"), _other("a"), _ask("3"), _other("b"), _ask("1"),
         _other("a"), _other("a")], False),
    "no arguments repeat": (
        [_ask("1"), _answer("a"), _ask("2"), _answer("a"), _ask("3"), _answer("a"), _ask("4"),
         _answer("a"), _answer("a"), _answer("a")], False),
    "arguments repeat once": (
        [_ask("1"), _answer("a"), _ask("2"), _answer("a"), _ask("3"), _answer("a"), _ask("1"),
         _answer("a"), _answer("a"), _answer("a")], True),
    "no results repeat": (
        [_ask(), _other("a"), _ask(), _other("b"), _ask(), _other("c"), _ask(), _other("d"),
         _ask(), _ask()], False),
    "results repeat once": (
        [_ask(), _other("a"), _ask(), _other("b"), _ask(), _other("c"), _ask(), _other("a"),
         _ask(), _ask()], True),
    "answered 3 times, all different": (
        [_ask(), _answer("a"), _ask(), _answer("b"), _ask(), _answer("c"), _ask(), _ask(),
         _other("a"), _ask()], False),
    "answered 3 times, one answer repeated": (
        [_ask(), _answer("a"), _ask(), _answer("b"), _ask(), _answer("a"), _ask(), _ask(),
         _other("a"), _ask()], True),
    "answered twice, both different": (
        [_ask(), _answer("a"), _ask(), _answer("b"), _ask(), _ask(), _ask(), _other("a"),
         _other("a"), _other("b")], True),
    "different answers from another tool are no progress": (
        [_ask(), _other("a"), _ask(), _other("b"), _ask(), _other("c"), _other("a"),
         _other("a"), _ask()], True),
}


@pytest.mark.parametrize("case", list(TAIL_BOUNDARIES))
def test_tail_decision_boundaries(case: str) -> None:
    """Engine and reference agree with the rule on a tail at the edge of each condition."""
    tail, collapsed = TAIL_BOUNDARIES[case]
    assert ref.tail_collapsed(tail) is collapsed
    assert _engine_tail_collapsed(tail) is collapsed
