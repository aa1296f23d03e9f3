"""The bulk text-run check in the core against its pure-Python twin, as pytest-benchmark groups.

* ``text-runs-recorded``: 10,000 recorded-like outputs of 200-6,000 characters, about one in
  six ending in a loop (:func:`benchmarks.streams.recorded_outputs`):
  ``vthread.has_repeated_text_runs`` in one call (the core: GIL released, every core) against
  ``vthread.textrun.has_repeated_text_run`` called on each text (the twin, regexes);
* ``text-runs-scan``: the texts ``vthread.scan``'s text-run pass reads on the benchmark
  workload (:mod:`benchmarks.workload`, ``VTHREAD_BENCH_THREADS`` threads), the same pair.

Each benchmark asserts that both sides give the same answers, so a wrong answer fails and a
slow one never does. Run, for the ratios (pytest-benchmark prints each statistic's ratio to
the fastest in parentheses)::

    python -m pytest benchmarks/test_bench_text_runs.py --benchmark-columns=min,median,rounds

``RAYON_NUM_THREADS=1`` in the environment keeps the core on one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.conftest import Thread
from benchmarks.streams import recorded_outputs
from vthread._heuristics import read_columns
from vthread._options import cycle_options
from vthread.replay import has_repeated_text_runs
from vthread.textrun import has_repeated_text_run

OUTPUTS: Final = 10_000
_T = TypeVar("_T")


def timed(benchmark: BenchmarkFixture, run: Callable[[], _T], rounds: int) -> _T:
    """``benchmark.pedantic`` with a type: one call per round, ``rounds`` rounds."""
    result: _T = benchmark.pedantic(run, rounds=rounds)  # type: ignore[no-untyped-call]
    return result


def each(texts: list[Any]) -> list[bool]:
    """The twin, text by text."""
    return [has_repeated_text_run(text) for text in texts]


@pytest.fixture(scope="module")
def outputs() -> list[str]:
    return recorded_outputs(OUTPUTS)


@pytest.fixture(scope="module")
def scan_texts(bench_threads: list[Thread]) -> list[Any]:
    """The texts scan's text-run pass hands the core (the last five spoken messages' texts)."""
    return read_columns(bench_threads, cycle_options()).texts


@pytest.fixture(scope="module")
def expected(outputs: list[str]) -> list[bool]:
    answers = each(outputs)
    assert any(answers) and not all(answers)
    return answers


@pytest.mark.benchmark(group="text-runs-recorded")
def test_recorded_core(
    benchmark: BenchmarkFixture, outputs: list[str], expected: list[bool]
) -> None:
    got = timed(benchmark, lambda: has_repeated_text_runs(outputs), 20)
    assert got.tolist() == expected


@pytest.mark.benchmark(group="text-runs-recorded")
def test_recorded_twin(
    benchmark: BenchmarkFixture, outputs: list[str], expected: list[bool]
) -> None:
    assert timed(benchmark, lambda: each(outputs), 3) == expected


@pytest.mark.benchmark(group="text-runs-scan")
def test_scan_texts_core(benchmark: BenchmarkFixture, scan_texts: list[Any]) -> None:
    got = timed(benchmark, lambda: has_repeated_text_runs(scan_texts), 20)
    assert got.tolist() == each(scan_texts)


@pytest.mark.benchmark(group="text-runs-scan")
def test_scan_texts_twin(benchmark: BenchmarkFixture, scan_texts: list[Any]) -> None:
    got = timed(benchmark, lambda: each(scan_texts), 3)
    assert got == has_repeated_text_runs(scan_texts).tolist()
