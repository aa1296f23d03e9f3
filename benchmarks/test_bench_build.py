"""build_thread against its scalar reference, as pytest-benchmark groups.

* ``build-own-usage``: every message carries its own ``usage.tokens`` (no estimator call);
* ``build-estimator``: the workload as generated, messages without usage costed by a
  callback.

Both at a 200-token budget over the session's workload (``VTHREAD_BENCH_THREADS``). Each
benchmark checks the answers equal the reference's, so a wrong answer fails and a slow one
never does. ``python -m benchmarks.build_report`` writes the committed figures.
"""

from __future__ import annotations

from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import vthread
from benchmarks.build_report import estimate
from benchmarks.conftest import Thread
from vthread import _reference

BUDGET = 200


@pytest.fixture(scope="module")
def priced(bench_threads: list[Thread]) -> list[Any]:
    return [[m if isinstance(m.get("usage"), dict) else {**m, "usage": {"tokens": estimate(m)}}
             for m in thread] for thread in bench_threads]


def _run(benchmark: BenchmarkFixture, threads: list[Any], build: Any) -> None:
    want = [_reference.build_thread(t, max_tokens=BUDGET, estimate=estimate) for t in threads]
    got = [build(t, max_tokens=BUDGET, estimate=estimate) for t in threads]
    assert [(r.messages, r.tokens) for r in got] == [(r.messages, r.tokens) for r in want]
    del want, got

    def each() -> None:  # results dropped as built (see benchmarks/build_report.py)
        for thread in threads:
            build(thread, max_tokens=BUDGET, estimate=estimate)

    benchmark.pedantic(each, rounds=5)  # type: ignore[no-untyped-call]


@pytest.mark.benchmark(group="build-own-usage")
def test_build_own_usage_engine(benchmark: BenchmarkFixture, priced: list[Any]) -> None:
    """The engine: the core reads the figures, only kept messages are copied."""
    _run(benchmark, priced, vthread.build_thread)


@pytest.mark.benchmark(group="build-own-usage")
def test_build_own_usage_reference(benchmark: BenchmarkFixture, priced: list[Any]) -> None:
    """The scalar reference, message by message."""
    _run(benchmark, priced, _reference.build_thread)


@pytest.mark.benchmark(group="build-estimator")
def test_build_estimator_engine(benchmark: BenchmarkFixture,
                                bench_threads: list[Thread]) -> None:
    """The engine with a Python estimator for the messages without usage."""
    _run(benchmark, bench_threads, vthread.build_thread)


@pytest.mark.benchmark(group="build-estimator")
def test_build_estimator_reference(benchmark: BenchmarkFixture,
                                   bench_threads: list[Thread]) -> None:
    """The reference with the same estimator."""
    _run(benchmark, bench_threads, _reference.build_thread)
