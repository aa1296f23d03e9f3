"""Option resolution: a value that is not a finite number counts as unset, for every option.

The option rules: None, NaN and ±infinity all mean "use the default"; an infinite
``max_pattern_length`` is no cap at all, not a cap at ``min_pattern_length``. The same rule
holds for the text-run (§5) and guard (§6) options, whose ratios also fall back to the
default when not finite. Each check compares the answer for the non-finite value with the
answer for ``None``, on the engine, on ``scan`` and on the scalar reference.
"""

from __future__ import annotations

import decimal
import fractions
import math
from typing import Any, Final

import numpy as np
import pytest
import reference_api

import vthread
from vthread import _reference as ref
from vthread._options import cycle_options, guard_options, text_run_options

NON_FINITE: Final = [math.inf, -math.inf, math.nan, 10**400]  # 10**400 overflows a double
NON_FINITE_IDS: Final = ["inf", "-inf", "nan", "10**400"]
CYCLE_OPTIONS: Final = ["min_repetitions", "min_pattern_length", "max_pattern_length",
                        "min_result_repetitions"]
TEXT_RUN_OPTIONS: Final = ["min_units", "window", "max_unique_ratio"]
GUARD_OPTIONS: Final = ["ngram", "window", "max_repeats", "max_unique_ratio", "min_chars"]


def _activity(kind: str, name: str, **function: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "",
            "meta": {"activity": {"type": kind, "function": {"name": name, **function}}}}


BLOCK: Final = [{"type": "user", "text": "status?"}, {"type": "bot", "text": "checking"},
                {"type": "tool", "text": "running"}]
THREE_BLOCK_LOOP: Final = [{"type": "user", "text": "deploy"}, *BLOCK, *BLOCK]
"""Two copies of a three-message block: a loop only when patterns of 3 may be tried."""
_ASK = _activity("request", "ls", arguments={"p": "."})
_SAME = _activity("response", "ls", arguments={"p": "."}, result="a b")
SAMPLES: Final = {
    "three-block loop": THREE_BLOCK_LOOP,
    "two-block loop": [{"type": "user", "text": "go"}, *BLOCK[:2] * 3],
    "four-block loop": [*BLOCK, {"type": "bot", "text": "again"}] * 2,
    "activity tail": [_ASK, _SAME] * 4,
    "result run": [m for i in range(4) for m in ({"type": "reasoning", "text": f"try {i}"},
                                                   _SAME)],
    "two results": [{"type": "reasoning", "text": "a"}, _SAME, {"type": "reasoning",
                                                                 "text": "b"}, _SAME],
    "text run": [{"type": "bot", "text": "Checking now. " * 10}],
    "progressing": [{"type": "user", "text": f"step {i}"} for i in range(9)],
}


@pytest.mark.parametrize("value", NON_FINITE, ids=NON_FINITE_IDS)
@pytest.mark.parametrize("option", CYCLE_OPTIONS)
def test_non_finite_cycle_option_resolves_as_unset(option: str, value: float) -> None:
    """A non-finite cycle option resolves exactly as the option left unset, alone or beside
    other options."""
    assert cycle_options(**{option: value}) == cycle_options(**{option: None})
    others = {"min_repetitions": 3, "min_pattern_length": 1, "max_pattern_length": 4,
              "min_result_repetitions": 4}
    assert cycle_options(**{**others, option: value}) == cycle_options(
        **{**others, option: None})


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, None])
def test_infinite_max_pattern_length_is_no_cap(value: float | None) -> None:
    """Two copies of a 3-message block are a loop when max_pattern_length is not finite."""
    assert cycle_options(max_pattern_length=value).max_pattern_length is None
    thread = THREE_BLOCK_LOOP
    assert vthread.has_repeated_suffix(thread, max_pattern_length=value)
    assert vthread.is_thread_cyclic(thread, max_pattern_length=value)
    assert vthread.describe_thread_cycle(thread, max_pattern_length=value) == "repeated_suffix"
    result = vthread.scan([thread], max_pattern_length=value)
    assert result.names == ["repeated_suffix"]
    assert (int(result.loop_start[0]), int(result.period[0]), int(result.repetitions[0])) == (
        1, 3, 2)
    assert reference_api.has_repeated_suffix(thread, max_pattern_length=value)
    assert reference_api.describe_thread_cycle(
        thread, max_pattern_length=value) == "repeated_suffix"


def test_finite_max_pattern_length_still_caps() -> None:
    """The cap itself is untouched: a finite maximum below the period hides the loop."""
    assert not vthread.has_repeated_suffix(THREE_BLOCK_LOOP, max_pattern_length=2)
    assert vthread.describe_thread_cycle(THREE_BLOCK_LOOP, max_pattern_length=2) is None
    assert vthread.has_repeated_suffix(THREE_BLOCK_LOOP, max_pattern_length=3)


@pytest.mark.parametrize("value", NON_FINITE, ids=NON_FINITE_IDS)
@pytest.mark.parametrize("option", CYCLE_OPTIONS)
@pytest.mark.parametrize("sample", list(SAMPLES))
def test_non_finite_cycle_option_answers_as_unset(option: str, value: float,
                                                  sample: str) -> None:
    """Every single-thread heuristic, scan and the reference answer a non-finite option
    exactly as they answer the option left unset."""
    thread = SAMPLES[sample]
    given, unset = {option: value}, {option: None}
    for name in ("has_repeated_suffix", "has_repeated_activity_tail",
                 "has_repeated_result_run", "is_thread_cyclic", "describe_thread_cycle"):
        assert getattr(vthread, name)(thread, **given) == getattr(vthread, name)(
            thread, **unset), name
        assert getattr(reference_api, name)(thread, **given) == getattr(vthread, name)(
            thread, **unset), name
    assert vthread.scan([thread], **given).record(0) == vthread.scan([thread], **unset).record(0)
    assert ref.attribute(thread, cycle_options(**given)) == ref.attribute(
        thread, cycle_options(**unset))


@pytest.mark.parametrize("value", NON_FINITE, ids=NON_FINITE_IDS)
@pytest.mark.parametrize("option", TEXT_RUN_OPTIONS)
def test_non_finite_text_run_option_resolves_as_unset(option: str, value: float) -> None:
    """The text-run options follow the same rule (the ratio: outside (0, 1] is the default)."""
    assert text_run_options(**{option: value}) == text_run_options(**{option: None})
    text = "Checking now. " * 10
    assert vthread.has_repeated_text_run(text, **{option: value}) == (
        vthread.has_repeated_text_run(text, **{option: None}))


@pytest.mark.parametrize("value", NON_FINITE, ids=NON_FINITE_IDS)
@pytest.mark.parametrize("option", GUARD_OPTIONS)
def test_non_finite_guard_option_resolves_as_unset(option: str, value: float) -> None:
    """The guard options follow the same rule; the ratio is not clamped from infinity to 1."""
    assert guard_options(**{option: value}) == guard_options(**{option: None})
    stream = "let me check the file again " * 12
    guard, unset = vthread.Guard(**{option: value}), vthread.Guard(**{option: None})
    assert guard.push(stream) == unset.push(stream)
    assert guard.reason == unset.reason


def test_default_options_resolve_as_the_general_rule() -> None:
    """The cached defaults are exactly what resolving the defaults step by step gives."""
    from vthread._options import DEFAULT_MIN_UNITS, cycle_options, text_run_options

    assert cycle_options() == cycle_options(2, 2, float("nan"), 3)
    assert text_run_options() == text_run_options(DEFAULT_MIN_UNITS, float("inf"), 2.0)


@pytest.mark.parametrize("value", [np.int64(3), np.float32(3.0), decimal.Decimal(3),
                                   fractions.Fraction(3)])
def test_options_take_real_numbers_of_any_type(value: Any) -> None:
    """A NumPy scalar, Decimal or Fraction option answers as the int 3 does, everywhere."""
    thread = [{"type": "user", "text": "go"}] + [{"type": "bot", "text": "same"}] * 6
    assert vthread.describe_thread_cycle(thread, min_repetitions=value) == (
        vthread.describe_thread_cycle(thread, min_repetitions=3))
    assert vthread.scan([thread], min_repetitions=value).record(0) == (
        vthread.scan([thread], min_repetitions=3).record(0))
    assert vthread.has_repeated_text_run("a. " * 20, min_units=value) == (
        vthread.has_repeated_text_run("a. " * 20, min_units=3))
    assert vthread.Guard(ngram=value).options == vthread.Guard(ngram=3).options


@pytest.mark.parametrize("value", [True, False, "3", "0.7", b"3", [3], {"n": 3}])
def test_an_option_that_is_no_number_counts_as_unset_with_a_warning(value: Any) -> None:
    """An option that is no number (a boolean, a numeric string, any other object) counts
    as unset, as production's Number.isFinite reads it (the recorded answers to
    minRepetitions: true and maxUniqueRatio: "0.7"), for every option of the cycle
    functions, scan, the text run and the guard; a UserWarning names the option at the
    caller's line (it was a TypeError, where production answered)."""
    ab = [{"type": "user", "text": "A"}, {"type": "bot", "text": "B"}] * 2
    for option in ("min_repetitions", "min_pattern_length", "max_pattern_length",
                   "min_result_repetitions"):
        with pytest.warns(UserWarning, match=f"^option {option}=.* is not a number") as said:
            got = vthread.describe_thread_cycle(ab, **{option: value})
        assert got == vthread.describe_thread_cycle(ab)
        assert said[0].filename == __file__
        with pytest.warns(UserWarning, match=f"option {option}="):
            assert vthread.scan([ab], **{option: value}).names == vthread.scan([ab]).names
    text = "Let me check. " * 10
    for option in ("min_units", "window", "max_unique_ratio"):
        with pytest.warns(UserWarning, match=f"option {option}="):
            assert vthread.has_repeated_text_run(text, **{option: value}) is True
    for option in ("ngram", "window", "max_repeats", "max_unique_ratio", "min_chars"):
        with pytest.warns(UserWarning, match=f"option {option}=") as said:
            guard = vthread.Guard(**{option: value})
        assert guard.options == vthread.Guard().options and len(said) == 1


def test_an_option_whose_repr_raises_is_still_named() -> None:
    """The warning names the option even when the value cannot be shown."""

    class Opaque:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    with pytest.warns(UserWarning, match="option min_repetitions=a Opaque is not a number"):
        assert vthread.describe_thread_cycle([], min_repetitions=Opaque()) is None


def test_an_option_that_is_no_number_is_warned_of_once_a_call() -> None:
    """One warning a call, however often the call resolves its options again (scan with
    anywhere checked them twice; scan_arrow once more for each slice of its table)."""
    import json
    import warnings

    import pyarrow as pa

    ab = [{"type": "user", "text": "A"}, {"type": "bot", "text": "B"}] * 2
    table = pa.table({"messages": [json.dumps(ab)] * 3})
    for call in (lambda: vthread.scan([ab], anywhere=True, min_repetitions="3"),
                 lambda: vthread.scan_arrow(table, min_repetitions="3"),
                 lambda: vthread.scan_arrow(table, anywhere=True, min_repetitions="3")):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            call()
        assert [str(w.message)[:33] for w in said] == ["option min_repetitions='3' is not"]
