"""A loop found in translated messages and restated in its file's own messages counts the
usage of those messages: a source message's usage rides on the first native message it
yields, so a loop that begins at a later one of them (a turn's tool call after its text)
still counts the turn's usage, on every path that restates loops (the CLI with the core and
with Python, ``--anywhere``, ``vthread.scan(format=...)``, ``scan_arrow``). The expected
figure is read off the source messages themselves: the sum of the usages of the messages a
record says it spans."""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchmarks.workload import generate_threads, to_anthropic, to_openai, to_responses
from tests.test_cli import records, run, write_jsonl
from vthread import cli
from vthread.adapters import to_native_with_sources
from vthread.anywhere import translated_span
from vthread.scan import scan

ENCODERS: dict[str, Callable[[Sequence[dict[str, Any]]], list[dict[str, Any]]]] = {
    "openai": to_openai, "anthropic": to_anthropic, "responses": to_responses,
}
SPLITTING = {"openai", "anthropic"}
"""The formats whose one message may yield several native ones (a Responses item yields
one): in these the loops the rule is about must occur."""


def with_usage(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each source message given its own usage figure (distinct, so a sum names its span)."""
    return [{**message, "usage": {"tokens": 1000 + 7 * index}}
            for index, message in enumerate(messages)]


def source_runs(format_: str) -> list[list[dict[str, Any]]]:
    """Realistic runs in ``format_``, most looping, every message carrying a usage."""
    return [with_usage(ENCODERS[format_](thread))
            for thread in generate_threads(60, seed=11, loop_share=0.8)]


def source_tokens(run_messages: list[dict[str, Any]], start: int, count: int) -> float:
    """The usage of source messages ``start`` to ``start + count - 1``, read off them."""
    return float(sum(m["usage"]["tokens"] for m in run_messages[start : start + count]))


def check_record(record: dict[str, Any], run_messages: list[dict[str, Any]]) -> int:
    """The record's (and each of its loops') tokens are those of the source messages it
    spans; how many loops it holds."""
    loops = record.get("loops") or ([record] if record["verdict"] else [])
    for loop in loops:
        expected = source_tokens(run_messages, loop["loop_start"], loop["loop_messages"])
        assert loop["loop_tokens"] == expected, (record.get("id"), loop)
    return len(loops)


def split_starts(runs: list[list[dict[str, Any]]], format_: str, anywhere: bool) -> int:
    """How many loops of the runs' native messages begin at a native message after the
    first its source message yields (the loops the rule is about): the test asks for
    enough of them to prove something."""
    count = 0
    for run_messages in runs:
        native, sources = to_native_with_sources(run_messages, format_)  # type: ignore[arg-type]
        record = scan([native], anywhere=anywhere).record(0)
        for loop in record.get("loops") or ([record] if record["verdict"] else []):
            start = loop["loop_start"]
            count += start > 0 and sources[start - 1] == sources[start]
    return count


@pytest.mark.parametrize("anywhere", [False, True])
@pytest.mark.parametrize("by_core", [True, False])
@pytest.mark.parametrize("format_", sorted(ENCODERS))
def test_cli_counts_the_usage_of_the_source_messages_a_loop_spans(
        format_: str, by_core: bool, anywhere: bool, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = source_runs(format_)
    path = write_jsonl(tmp_path / "runs.jsonl",
                       [{"id": i, "messages": r} for i, r in enumerate(runs)])
    if not by_core:
        monkeypatch.setattr(cli, "_core_may_read", lambda task: False)
    code, out, _ = run(["scan", str(path), "--format", format_, "-q",
                        *(["--anywhere"] if anywhere else [])], monkeypatch)
    assert code == 0
    got = records(out)
    assert sum(check_record(r, m) for r, m in zip(got, runs, strict=True)) >= 20
    assert split_starts(runs, format_, anywhere) >= (5 if format_ in SPLITTING else 0)


@pytest.mark.parametrize("anywhere", [False, True])
@pytest.mark.parametrize("format_", sorted(ENCODERS))
def test_scan_counts_the_usage_of_the_source_messages_a_loop_spans(
        format_: str, anywhere: bool) -> None:
    runs = source_runs(format_)
    result = scan(runs, format=format_, anywhere=anywhere)  # type: ignore[arg-type]
    got = [result.record(row) for row in range(len(runs))]
    assert sum(check_record(r, m) for r, m in zip(got, runs, strict=True)) >= 20
    assert split_starts(runs, format_, anywhere) >= (5 if format_ in SPLITTING else 0)


@pytest.mark.parametrize("anywhere", [False, True])
def test_scan_arrow_counts_the_usage_of_the_source_messages_a_loop_spans(
        anywhere: bool) -> None:
    pa = pytest.importorskip("pyarrow", reason="scan_arrow needs pyarrow")
    from vthread import arrow

    runs = source_runs("openai")
    table = pa.table({"messages": [json.dumps(r) for r in runs]})
    got = arrow.scan_arrow(table, format="openai", anywhere=anywhere).to_pylist()
    assert sum(check_record(r, m) for r, m in zip(got, runs, strict=True)) >= 20


def test_translated_span_reaches_every_message_of_the_end_source_messages() -> None:
    """Translated messages 2 to 3 lie in source messages 1 and 2, which yield 1 to 5."""
    sources = [0, 1, 1, 2, 2, 2, 3]
    assert translated_span(sources, 2, 4) == (1, 6)
    assert translated_span(sources, 1, 7) == (1, 7)
    assert translated_span(sources, 0, 1) == (0, 1)


@pytest.mark.parametrize("by_core", [True, False])
def test_a_figure_past_64_bits_in_the_turn_a_loop_begins_in_is_counted(
        by_core: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A usage the core leaves to Python (an integer past 64 bits) on the turn whose tool
    call begins the loop: Python reads the line the core wrote to count it."""
    def turn(step: int) -> list[dict[str, Any]]:
        call = {"id": f"c{step}", "type": "function",
                "function": {"name": "ls", "arguments": "{}"}}
        return [{"role": "assistant", "content": f"step {step}", "tool_calls": [call],
                 "usage": {"completion_tokens": 2**70 + step}},
                {"role": "tool", "tool_call_id": f"c{step}", "content": "same"}]

    messages = [{"role": "user", "content": "go"}, *(m for s in range(4) for m in turn(s))]
    path = write_jsonl(tmp_path / "run.jsonl", [{"messages": messages}])
    if not by_core:
        monkeypatch.setattr(cli, "_core_may_read", lambda task: False)
    code, out, _ = run(["scan", str(path), "--format", "openai", "-q"], monkeypatch)
    [record] = records(out)
    assert code == 0 and record["loop_start"] == 1 and record["loop_messages"] == 8
    assert record["loop_tokens"] == 4 * float(2**70)
