"""Hostile thread shapes at two sizes, one pytest-benchmark group per shape.

Each shape of :mod:`benchmarks.shapes` is one thread, timed through ``vthread.scan``,
``vthread.describe_thread_cycle`` and the CLI in process, at :data:`GROWTH_SIZES` (4x apart),
so that ``--benchmark-compare`` shows a change in how any shape's cost grows. Every benchmark
asserts that its answer is the scalar reference's and the verdict the shape is built to get:
a wrong answer fails the run, a slow one never does. The growth bounds themselves (25k to 1M
messages, 4x the messages at most 6x the time) are checked by
``python -m benchmarks.growth_report``, whose sizes are too large for this suite.

A fixed number of rounds (:data:`ROUNDS`) keeps the 80-odd benchmarks within seconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

import vthread
from benchmarks.conftest import Answers
from benchmarks.shapes import ANYWHERE_SHAPES, SHAPES, Thread
from vthread import _reference as ref
from vthread import cli as vthread_cli
from vthread._options import cycle_options
from vthread.anywhere import LOOP_KINDS, find_loops_reference

GROWTH_SIZES: Final = (1_000, 4_000)
"""Small enough for the quadratic reference (under 0.1 s a shape at 4,000 messages)."""
ROUNDS: Final = 5

ENGINE: Final[dict[str, Callable[[Thread], str | None]]] = {
    "scan": lambda thread: vthread.scan([thread]).names[0],
    "describe_thread_cycle": vthread.describe_thread_cycle,
}


def _thread(answers: Answers, shape: str, size: int) -> Thread:
    return answers.get(("shape", shape, size), lambda: SHAPES[shape].make(size))  # type: ignore[no-any-return]


def _expected(answers: Answers, shape: str, size: int) -> str | None:
    """The reference's verdict, which must also be the one the shape is built to get."""
    thread = _thread(answers, shape, size)
    verdict = answers.get(("shape reference", shape, size),
                          lambda: ref.describe_thread_cycle(thread, cycle_options()))
    assert verdict == SHAPES[shape].expected
    return verdict  # type: ignore[no-any-return]


@pytest.mark.parametrize("size", GROWTH_SIZES)
@pytest.mark.parametrize("function", sorted(ENGINE))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_growth(
    benchmark: BenchmarkFixture, answers: Answers, shape: str, function: str, size: int
) -> None:
    """One thread of the shape through the engine; the answer is the reference's."""
    benchmark.group = f"growth: {shape}"
    benchmark.extra_info["messages"] = size
    thread = _thread(answers, shape, size)
    # pedantic: a fixed number of rounds (pytest-benchmark leaves it unannotated).
    got = benchmark.pedantic(  # type: ignore[no-untyped-call]
        ENGINE[function], args=(thread,), rounds=ROUNDS, warmup_rounds=1)
    assert got == _expected(answers, shape, size)


@pytest.mark.parametrize("size", GROWTH_SIZES)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_growth_cli(
    benchmark: BenchmarkFixture, answers: Answers, tmp_path: Path, shape: str, size: int
) -> None:
    """``vthread scan FILE -q`` in process on a one-line JSONL file holding the thread."""
    benchmark.group = f"growth: {shape}"
    benchmark.extra_info["messages"] = size
    path = tmp_path / "thread.jsonl"
    path.write_text(json.dumps(_thread(answers, shape, size)) + "\n")
    status = benchmark.pedantic(  # type: ignore[no-untyped-call]
        vthread_cli.main, args=(["scan", str(path), "--quiet", "--output", os.devnull],),
        rounds=ROUNDS, warmup_rounds=1)
    assert status == 0
    out = tmp_path / "out.jsonl"
    assert vthread_cli.main(["scan", str(path), "--quiet", "--output", str(out)]) == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["verdict"] == _expected(answers, shape, size)
    assert record["messages"] == size


@pytest.mark.parametrize("size", GROWTH_SIZES)
@pytest.mark.parametrize("shape", list(ANYWHERE_SHAPES))
def test_growth_anywhere(benchmark: BenchmarkFixture, shape: str, size: int) -> None:
    """``scan([thread], anywhere=True)`` on a shape that stresses looking anywhere; at the
    smaller size its loops are the plain twin's (quadratic, so not at the larger). The
    growth bound at 20k to 320k messages is ``python -m benchmarks.anywhere_growth``'s."""
    benchmark.group = f"growth anywhere: {shape}"
    benchmark.extra_info["messages"] = size
    thread = ANYWHERE_SHAPES[shape](size)
    result = benchmark.pedantic(  # type: ignore[no-untyped-call]
        vthread.scan, args=([thread],), kwargs={"anywhere": True}, rounds=ROUNDS,
        warmup_rounds=1)
    assert result.loops is not None
    if size == GROWTH_SIZES[0]:
        found = sorted((r["loop_start"], r["loop_messages"], r["period"], r["repetitions"],
                        r["verdict"]) for r in result.loops[0])
        assert found == sorted(
            (loop.start, loop.end - loop.start, loop.period, loop.repetitions,
             LOOP_KINDS[loop.kind - 1]) for loop in find_loops_reference([thread])[0])
