"""``scan_arrow`` against ``vthread.scan`` on the same runs, as one pytest-benchmark group.

Group ``scan-arrow``, on the session's generated threads (see ``conftest.py``):

* ``scan_arrow`` on a table whose ``messages`` column holds each run as JSON text (the
  core reads the column's buffer), with the format named and detected;
* ``json.loads`` of every row plus ``vthread.scan``: what a caller without ``scan_arrow``
  would do with the same column.

(The workload cannot be a ``list<struct>`` column: its messages mix value types in one field,
an object in one run and a string in another, which Arrow cannot type.)

Each benchmark asserts that its verdicts equal ``vthread.scan``'s, so a wrong answer fails
the run and a slow one never does. The committed figures (10,000 runs, against the CLI and
on Ray) come from ``benchmarks/arrow_report.py``::

    python -m pytest benchmarks/test_bench_arrow.py --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, TypeVar

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import vthread
from benchmarks.conftest import Answers, Thread

pa = pytest.importorskip("pyarrow", reason="scan_arrow needs pyarrow (pip install vthread[arrow])")

ROUNDS: Final = 5
_T = TypeVar("_T")


def timed(benchmark: BenchmarkFixture, run: Callable[[], _T]) -> _T:
    """``benchmark.pedantic`` with a type: one call per round, :data:`ROUNDS` rounds."""
    result: _T = benchmark.pedantic(run, rounds=ROUNDS)  # type: ignore[no-untyped-call]
    return result


@pytest.fixture(scope="module")
def json_table(bench_threads: list[Thread]) -> Any:
    """The runs as a table of JSON text, one compact array per row."""
    texts = [json.dumps(thread, separators=(",", ":")) for thread in bench_threads]
    return pa.table({"messages": pa.array(texts, pa.string())})


def _verdicts(table: Any) -> list[str | None]:
    names: list[str | None] = table.column("verdict").to_pylist()
    return names


def _expected(answers: Answers, threads: list[Thread]) -> list[str | None]:
    expected: list[str | None] = answers.get("scan-names", lambda: vthread.scan(threads).names)
    return expected


@pytest.mark.benchmark(group="scan-arrow")
@pytest.mark.parametrize("format_", ["native", "auto"])
def test_scan_arrow_json_column(benchmark: BenchmarkFixture, json_table: Any,
                                bench_threads: list[Thread], answers: Answers,
                                format_: str) -> None:
    """scan_arrow on JSON text: the core reads the column's buffer."""
    got = timed(benchmark, lambda: _verdicts(vthread.scan_arrow(json_table, format=format_)))
    assert got == _expected(answers, bench_threads)


@pytest.mark.benchmark(group="scan-arrow")
def test_json_loads_then_scan(benchmark: BenchmarkFixture, json_table: Any,
                              bench_threads: list[Thread], answers: Answers) -> None:
    """The baseline: every row parsed with json.loads, then vthread.scan."""
    column = json_table.column("messages")
    got = timed(benchmark, lambda: vthread.scan(
        [json.loads(text) for text in column.to_pylist()]).names)
    assert got == _expected(answers, bench_threads)
