"""The engine against the scalar reference, one pytest-benchmark group per public function.

Each group times the same work both ways on the session's generated threads (see
``conftest.py``): a call per thread over the whole batch, or one bulk call for ``scan``. Each
benchmark then asserts that its answers equal the other side's, so a wrong answer fails the
run and a slow one never does. The figures in ``docs/performance.md`` come from
``benchmarks/scan_report.py``; this suite is for comparing a change against the last run
(``pytest benchmarks/ --benchmark-autosave`` then ``--benchmark-compare``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeVar

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import vthread
from benchmarks.conftest import Answers, Thread, estimate_tokens
from vthread import _reference as ref
from vthread._options import cycle_options, text_run_options

_T = TypeVar("_T")
Side = Literal["engine", "reference"]

SIDES: Final[tuple[Side, ...]] = ("engine", "reference")
BUILD_MAX_TOKENS: Final = 2_000
"""A budget most generated threads overflow, so the newest-first cut is exercised."""

# The reference is called with options resolved on every call, as the public functions do.
CYCLE: Final[dict[str, dict[Side, Callable[[Thread], object]]]] = {
    "describe_thread_cycle": {
        "engine": vthread.describe_thread_cycle,
        "reference": lambda t: ref.describe_thread_cycle(t, cycle_options()),
    },
    "is_thread_cyclic": {
        "engine": vthread.is_thread_cyclic,
        "reference": lambda t: ref.is_thread_cyclic(t, cycle_options()),
    },
    "has_repeated_suffix": {
        "engine": vthread.has_repeated_suffix,
        "reference": lambda t: ref.has_repeated_suffix(t, cycle_options()),
    },
    "has_repeated_activity_tail": {
        "engine": vthread.has_repeated_activity_tail,
        "reference": lambda t: ref.has_repeated_activity_tail(t, cycle_options()),
    },
    "has_repeated_result_run": {
        "engine": vthread.has_repeated_result_run,
        "reference": lambda t: ref.has_repeated_result_run(t, cycle_options()),
    },
}


def _other(side: Side) -> Side:
    return "reference" if side == "engine" else "engine"


def _each(function: Callable[[Any], _T], items: Sequence[Any]) -> list[_T]:
    return [function(item) for item in items]


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("name", sorted(CYCLE))
def test_cycle_per_thread(
    benchmark: BenchmarkFixture, answers: Answers, bench_threads: list[Thread],
    name: str, side: Side,
) -> None:
    """One call per thread over the batch; answers equal the other side's."""
    benchmark.group = name
    got = benchmark(_each, CYCLE[name][side], bench_threads)
    other = CYCLE[name][_other(side)]
    assert got == answers.get((name, _other(side)), lambda: _each(other, bench_threads))


def _reference_names(threads: Sequence[Thread]) -> list[str | None]:
    return [ref.describe_thread_cycle(t, cycle_options()) for t in threads]


@pytest.mark.parametrize(
    ("variant", "run"),
    [
        pytest.param("scan", lambda threads: vthread.scan(threads).names, id="scan"),
        pytest.param("scan jobs=2", lambda threads: vthread.scan(threads, jobs=2).names,
                     id="scan-jobs2"),
        pytest.param("reference loop", _reference_names, id="reference-loop"),
    ],
)
def test_scan_batch(
    benchmark: BenchmarkFixture, answers: Answers, bench_threads: list[Thread],
    variant: str, run: Callable[[list[Thread]], list[str | None]],
) -> None:
    """The whole batch in one call, against the reference called per thread."""
    benchmark.group = "scan"
    benchmark.extra_info["variant"] = variant
    got = benchmark(run, bench_threads)
    expected = answers.get(
        ("describe_thread_cycle", "reference"),
        lambda: _each(CYCLE["describe_thread_cycle"]["reference"], bench_threads),
    )
    assert got == expected


BuildAnswer = tuple[list[dict[str, Any]], float]


def _build_engine(thread: Thread) -> BuildAnswer:
    built = vthread.build_thread(thread, max_tokens=BUILD_MAX_TOKENS, estimate=estimate_tokens)
    return built.messages, built.tokens


def _build_reference(thread: Thread) -> BuildAnswer:
    built = ref.build_thread(thread, max_tokens=BUILD_MAX_TOKENS, estimate=estimate_tokens)
    return built.messages, built.tokens


BUILD: Final[dict[Side, Callable[[Thread], BuildAnswer]]] = {
    "engine": _build_engine,
    "reference": _build_reference,
}


@pytest.mark.parametrize("side", SIDES)
def test_build_thread(
    benchmark: BenchmarkFixture, answers: Answers, bench_threads: list[Thread], side: Side
) -> None:
    """Fit each thread to a token budget (estimator for messages without usage)."""
    benchmark.group = "build_thread"
    got = benchmark(_each, BUILD[side], bench_threads)
    other = BUILD[_other(side)]
    assert got == answers.get(("build_thread", _other(side)), lambda: _each(other, bench_threads))


TEXT_RUN: Final[dict[Side, Callable[[str], bool]]] = {
    "engine": vthread.has_repeated_text_run,
    "reference": lambda text: ref.has_repeated_text_run(text, text_run_options()),
}


@pytest.mark.parametrize("side", SIDES)
def test_has_repeated_text_run(
    benchmark: BenchmarkFixture, answers: Answers, bench_texts: list[str], side: Side
) -> None:
    """Long texts (each thread's texts joined, plus megabyte pathological inputs)."""
    benchmark.group = "has_repeated_text_run"
    got = benchmark(_each, TEXT_RUN[side], bench_texts)
    other = TEXT_RUN[_other(side)]
    assert got == answers.get(("text_run", _other(side)), lambda: _each(other, bench_texts))
    assert any(got) and not all(got)
