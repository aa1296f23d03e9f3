"""The guard engine against the scalar reference guard, as pytest-benchmark groups.

* ``guard-stream``: a 2 MB healthy stream (:func:`benchmarks.streams.realistic_stream`) pushed
  in 4-character chunks, as tokens arrive;
* ``guard-whole``: the same stream pushed at once;
* ``guard-scan-1mb``: ``vthread.scan_texts`` on one 1 MB healthy text against a reference
  guard fed it whole;
* ``guard-replay``: 1,000 recorded-like outputs (about one in six ending in a loop),
  ``vthread.scan_texts`` in one call against a reference guard fed each text whole.

Each benchmark asserts its answers (no trip on the healthy stream; the same trips as the
reference on the outputs), so a wrong answer fails and a slow one never does. The committed
figures come from ``benchmarks/guard_report.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from benchmarks.streams import chunks, realistic_stream, recorded_outputs, reference_trips
from vthread import _reference as ref
from vthread.guard import Guard
from vthread.replay import scan_texts

OUTPUTS: Final = 1_000
_T = TypeVar("_T")


def timed(benchmark: BenchmarkFixture, run: Callable[[], _T], rounds: int) -> _T:
    """``benchmark.pedantic`` with a type: one call per round, ``rounds`` rounds."""
    result: _T = benchmark.pedantic(run, rounds=rounds)  # type: ignore[no-untyped-call]
    return result


@pytest.fixture(scope="module")
def stream() -> str:
    return realistic_stream()


@pytest.fixture(scope="module")
def pieces(stream: str) -> list[str]:
    return chunks(stream)


@pytest.fixture(scope="module")
def outputs() -> list[str]:
    return recorded_outputs(OUTPUTS)


def push_all(guard: Guard | ref.ReferenceGuard, pushes: list[str]) -> bool:
    return any(guard.push(chunk) for chunk in pushes)


@pytest.mark.benchmark(group="guard-stream")
def test_stream_engine(benchmark: BenchmarkFixture, pieces: list[str]) -> None:
    assert not timed(benchmark, lambda: push_all(Guard(), pieces), 3)


@pytest.mark.benchmark(group="guard-stream")
def test_stream_reference(benchmark: BenchmarkFixture, pieces: list[str]) -> None:
    assert not timed(benchmark, lambda: push_all(ref.guard(), pieces), 1)


@pytest.mark.benchmark(group="guard-whole")
def test_whole_engine(benchmark: BenchmarkFixture, stream: str) -> None:
    assert not timed(benchmark, lambda: Guard().push(stream), 3)


@pytest.mark.benchmark(group="guard-whole")
def test_whole_reference(benchmark: BenchmarkFixture, stream: str) -> None:
    assert not timed(benchmark, lambda: ref.guard().push(stream), 1)


@pytest.mark.benchmark(group="guard-replay")
def test_replay_engine(benchmark: BenchmarkFixture, outputs: list[str]) -> None:
    trips = timed(benchmark, lambda: scan_texts(outputs), 3)
    expected = reference_trips(outputs)
    assert [t is None for t in trips] == [r is None for r in expected]
    assert [t.reason.phrase for t in trips if t] == [r.phrase for r in expected if r]


@pytest.mark.benchmark(group="guard-replay")
def test_replay_reference(benchmark: BenchmarkFixture, outputs: list[str]) -> None:
    reasons = timed(benchmark, lambda: reference_trips(outputs), 1)
    assert any(reasons) and not all(reasons)


@pytest.fixture(scope="module")
def one_mb() -> str:
    return realistic_stream(1_000_000, seed=7)


@pytest.mark.benchmark(group="guard-scan-1mb")
def test_scan_1mb_engine(benchmark: BenchmarkFixture, one_mb: str) -> None:
    assert timed(benchmark, lambda: scan_texts([one_mb]), 5) == [None]


@pytest.mark.benchmark(group="guard-scan-1mb")
def test_scan_1mb_reference(benchmark: BenchmarkFixture, one_mb: str) -> None:
    assert not timed(benchmark, lambda: ref.guard().push(one_mb), 1)
