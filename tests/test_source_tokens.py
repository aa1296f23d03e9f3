"""A loop found in translated messages and restated in its file's own messages counts the
usage of those messages: a source message's usage rides on the first native message it
yields, so a loop that begins at a later one of them (a turn's tool call after its text)
still counts the turn's usage, on every path that restates loops (the CLI with the core and
with Python, ``--anywhere``, ``vthread.scan(format=...)``, ``scan_arrow``). Loops found
anywhere that share a source message (a turn whose text ends one and whose call begins the
next) count its usage once, in the loop holding its text. The expected figures are read off
the source messages themselves."""
from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchmarks.realdata import REALDATA, runs
from benchmarks.workload import generate_threads, to_anthropic, to_openai, to_responses
from tests.test_cli import records, run, write_jsonl
from vthread import cli
from vthread._messages import usage_tokens
from vthread.adapters import to_native_with_sources
from vthread.anywhere import counted_spans
from vthread.documents import translated_span
from vthread.scan import scan

ENCODERS: dict[str, Callable[[Sequence[dict[str, Any]]], list[dict[str, Any]]]] = {
    "openai": to_openai, "anthropic": to_anthropic, "responses": to_responses,
}
SPLITTING = {"openai", "anthropic"}
"""The formats whose one message may yield several native ones (a Responses item yields
one): in these the loops the rule is about must occur."""
LOOP_FIELDS = ("verdict", "loop_start", "period", "repetitions", "loop_messages",
               "loop_tokens", "signature", "excerpt")


def with_usage(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each source message given its own usage figure (distinct, so a sum names its span)."""
    return [{**message, "usage": {"tokens": 1000 + 7 * index}}
            for index, message in enumerate(messages)]


def source_runs(format_: str) -> list[list[dict[str, Any]]]:
    """Realistic runs in ``format_``, most looping, every message carrying a usage."""
    return [with_usage(ENCODERS[format_](thread))
            for thread in generate_threads(60, seed=11, loop_share=0.8)]


def given_usage(run_messages: list[dict[str, Any]]) -> list[float]:
    """Each source message's usage figure as the test gave it (0 for none)."""
    return [float(m.get("usage", {}).get("tokens", 0)) for m in run_messages]


def cost(loop: dict[str, Any]) -> tuple[float, int]:
    tokens = loop["loop_tokens"]
    return (-1.0 if tokens is None else tokens, loop["loop_messages"])


def check_record(record: dict[str, Any], usage: list[float]) -> int:
    """The record's tokens against ``usage`` (each source message's figure); how many loops
    it holds. A loop sharing no message with another counts exactly the usage of the source
    messages it spans; loops found anywhere count, together, each message they span once;
    they come costliest first, the record's own fields being the first's."""
    if "loops" not in record:
        if not record["verdict"]:
            return 0
        start, count = record["loop_start"], record["loop_messages"]
        assert record["loop_tokens"] == sum(usage[start : start + count]), record
        return 1
    loops = record["loops"]
    spans = [(loop["loop_start"], loop["loop_start"] + loop["loop_messages"]) for loop in loops]
    for loop, (start, end) in zip(loops, spans, strict=True):
        spanned = sum(usage[start:end])
        shares = sum(other[0] < end and start < other[1] for other in spans) > 1
        assert (loop["loop_tokens"] or 0.0) <= spanned if shares else (
            (loop["loop_tokens"] or 0.0) == spanned), (record.get("id"), loop)
    covered = set().union(*(range(start, end) for start, end in spans))
    assert sum(loop["loop_tokens"] or 0.0 for loop in loops) == sum(usage[i] for i in covered)
    assert [cost(loop) for loop in loops] == sorted(map(cost, loops), reverse=True)
    if loops:
        assert {k: record[k] for k in LOOP_FIELDS} == {k: loops[0][k] for k in LOOP_FIELDS}
    return len(loops)


def check_summary(summary: dict[str, Any], got: list[dict[str, Any]]) -> None:
    """The summary's sums are those of the records: no message or token counted twice."""
    rows = [r["loop_tokens"] for r in got if r.get("verdict") and r["loop_tokens"] is not None]
    # (null when no looping run's messages carry a usage, 0 when only others of them do)
    assert (summary["wasted_tokens"] or 0.0) == sum(rows)
    if "loops_anywhere" in summary:
        every = [loop for r in got for loop in r.get("loops") or ()]
        assert summary["loops_anywhere"]["tokens"] == sum(
            loop["loop_tokens"] or 0.0 for loop in every)
        assert summary["loops_anywhere"]["messages"] == sum(
            len(set().union(*(range(loop["loop_start"], loop["loop_start"] + loop["loop_messages"])
                              for loop in r.get("loops") or ()))) for r in got)


def split_starts(runs_given: list[list[dict[str, Any]]], format_: str, anywhere: bool) -> int:
    """How many loops of the runs' native messages begin at a native message after the
    first its source message yields (the loops the rule is about): the test asks for
    enough of them to prove something."""
    count = 0
    for run_messages in runs_given:
        native, sources = to_native_with_sources(run_messages, format_)  # type: ignore[arg-type]
        record = scan([native], anywhere=anywhere).record(0)
        for loop in record.get("loops") or ([record] if record["verdict"] else []):
            start = loop["loop_start"]
            count += start > 0 and sources[start - 1] == sources[start]
    return count


def scan_file(path: Path, monkeypatch: pytest.MonkeyPatch, by_core: bool, *args: str
              ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``vthread scan PATH ARGS -q`` with the core or with Python: records and summary."""
    if not by_core:
        monkeypatch.setattr(cli, "_core_may_read", lambda task: False)
    summary = path.with_name("summary.json")
    code, out, _ = run(["scan", str(path), "-q", "--summary", str(summary), *args], monkeypatch)
    assert code == 0
    return records(out), json.loads(summary.read_text())


@pytest.mark.parametrize("anywhere", [False, True])
@pytest.mark.parametrize("by_core", [True, False])
@pytest.mark.parametrize("format_", sorted(ENCODERS))
def test_cli_counts_the_usage_of_the_source_messages_a_loop_spans(
        format_: str, by_core: bool, anywhere: bool, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    given = source_runs(format_)
    path = write_jsonl(tmp_path / "runs.jsonl",
                       [{"id": i, "messages": r} for i, r in enumerate(given)])
    got, summary = scan_file(path, monkeypatch, by_core, "--format", format_,
                             *(["--anywhere"] if anywhere else []))
    assert sum(check_record(r, given_usage(m)) for r, m in zip(got, given, strict=True)) >= 20
    check_summary(summary, got)
    assert split_starts(given, format_, anywhere) >= (5 if format_ in SPLITTING else 0)


@pytest.mark.parametrize("anywhere", [False, True])
@pytest.mark.parametrize("format_", sorted(ENCODERS))
def test_scan_counts_the_usage_of_the_source_messages_a_loop_spans(
        format_: str, anywhere: bool) -> None:
    given = source_runs(format_)
    result = scan(given, format=format_, anywhere=anywhere)  # type: ignore[arg-type]
    got = [result.record(row) for row in range(len(given))]
    assert sum(check_record(r, given_usage(m)) for r, m in zip(got, given, strict=True)) >= 20
    assert split_starts(given, format_, anywhere) >= (5 if format_ in SPLITTING else 0)


@pytest.mark.parametrize("anywhere", [False, True])
def test_scan_arrow_counts_the_usage_of_the_source_messages_a_loop_spans(
        anywhere: bool) -> None:
    pa = pytest.importorskip("pyarrow", reason="scan_arrow needs pyarrow")
    from vthread import arrow

    given = source_runs("openai")
    table = pa.table({"messages": [json.dumps(r) for r in given]})
    got = arrow.scan_arrow(table, format="openai", anywhere=anywhere).to_pylist()
    assert sum(check_record(r, given_usage(m)) for r, m in zip(got, given, strict=True)) >= 20


def turn(step: int, text: str, tokens: int | None, result: str = "same"
         ) -> list[dict[str, Any]]:
    """An OpenAI assistant turn (text, then an ``ls`` call; ``tokens`` its usage) and the
    call's result."""
    call = {"id": f"c{step}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    said: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": [call]}
    if tokens is not None:
        said["usage"] = {"completion_tokens": tokens}
    return [said, {"role": "tool", "tool_call_id": f"c{step}", "content": result}]


@pytest.mark.parametrize("by_core", [True, False])
def test_loops_sharing_a_turn_count_its_usage_once(
        by_core: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runaway text ending one loop and its turn's call beginning the next: both loops
    span the turn, whose usage is counted in the text's loop alone; a loop whose only usage
    is that of the turn it begins in counts it (it was null)."""
    runaway = " ".join(["I will check the directory again."] * 40)
    shared = [{"role": "user", "content": "go"}, *turn(0, runaway, 100),
              *(m for step in range(1, 4) for m in turn(step, f"step {step}", 100))]
    first_only = [{"role": "user", "content": "go"}, *turn(0, "look", 50),
                  *(m for step in range(1, 4) for m in turn(step, f"step {step}", None))]
    path = write_jsonl(tmp_path / "runs.jsonl", [{"id": "shared", "messages": shared},
                                                 {"id": "first", "messages": first_only}])
    got, summary = scan_file(path, monkeypatch, by_core, "--format", "openai", "--anywhere")
    usage = [[float(m.get("usage", {}).get("completion_tokens", 0)) for m in run_messages]
             for run_messages in (shared, first_only)]
    spans = [(loop["loop_start"], loop["loop_messages"]) for loop in got[0]["loops"]]
    assert len(spans) == 2 and spans[0][0] == spans[1][0] == 1  # both span turn 0
    for record, figures in zip(got, usage, strict=True):
        check_record(record, figures)
    assert got[1]["loop_tokens"] == 50.0
    check_summary(summary, got)


def test_a_recount_that_makes_another_loop_the_costliest_reorders_the_loops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The usage of the turns that begin two loops decides which is the costliest: the
    loops are ordered, and the record's fields taken, after the recount."""
    messages = [{"role": "user", "content": "go"},
                *(m for step, tokens in enumerate((1000, 1, 1))
                  for m in turn(step, f"try {step}", tokens, "ls says same")),
                {"role": "assistant", "content": "Moving on to something else entirely."},
                {"role": "user", "content": "ok, continue"}]
    for step in range(3, 6):
        messages += turn(step, f"read {step}", 100, "cat says same")
        messages[-2]["tool_calls"][0]["function"]["name"] = "cat"
    path = write_jsonl(tmp_path / "runs.jsonl", [{"id": "order", "messages": messages}])
    got, _ = scan_file(path, monkeypatch, True, "--format", "openai", "--anywhere")
    usage = [float(m.get("usage", {}).get("completion_tokens", 0)) for m in messages]
    [record] = got
    assert check_record(record, usage) == 2
    assert record["loop_start"] == 1 and record["loop_tokens"] >= 1000  # the ls loop


@pytest.mark.skipif(REALDATA is None, reason="the published runs are not beside this checkout")
@pytest.mark.parametrize("anywhere", [False, True])
def test_published_mini_swe_agent_loops_count_their_turns_usage(
        anywhere: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The published mini-swe-agent runs, whose turns' usage rides on their text: each
    source message's usage is the figure on the first native message it yields."""
    assert REALDATA is not None
    name = "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz"
    published = [r for r in runs() if r.file == name]
    path = tmp_path / "runs.jsonl"
    path.write_bytes(gzip.decompress((REALDATA / name).read_bytes()))
    got, summary = scan_file(path, monkeypatch, True, *(["--anywhere"] if anywhere else []))
    assert [r["id"] for r in got] == [r.run_id for r in published]
    split = 0
    for record, published_run in zip(got, published, strict=True):
        sources = published_run.sources
        usage = [0.0] * len(published_run.source)
        for index, message in enumerate(published_run.native):
            if index == 0 or sources[index - 1] != sources[index]:
                usage[sources[index]] = float(usage_tokens(message) or 0)
        check_record(record, usage)
        split += sum(translated_span(sources, s, len(sources))[0] != s
                     for s in range(len(sources)) if usage[sources[s]])
    assert split  # the runs hold turns that yield several native messages
    check_summary(summary, got)


def test_translated_span_reaches_every_message_of_the_end_source_messages() -> None:
    """Translated messages 2 to 3 lie in source messages 1 and 2, which yield 1 to 5."""
    sources = [0, 1, 1, 2, 2, 2, 3]
    assert translated_span(sources, 2, 4) == (1, 6)
    assert translated_span(sources, 1, 7) == (1, 7)
    assert translated_span(sources, 0, 1) == (0, 1)


def test_counted_spans_leave_a_shared_source_message_to_the_loop_holding_its_first() -> None:
    """Loops [1, 2) and [2, 7) both lie in source message 1 (translated 1 to 2): the first
    holds its first message; the second reaches back no further than the first's end, and
    forward to its last source message's end; a loop after a gap reaches back over it."""
    sources = [0, 1, 1, 2, 2, 3, 3, 3, 4, 4]
    assert counted_spans([(1, 2), (2, 7)], sources) == [(1, 2), (2, 8)]
    assert counted_spans([(2, 7), (1, 2)], sources) == [(2, 8), (1, 2)]
    assert counted_spans([(4, 5), (9, 10)], sources) == [(3, 5), (8, 10)]
    assert counted_spans([(3, 5), (6, 7)], sources) == [(3, 5), (5, 8)]
    # Two loops in one source message with a gap between: what each counts is disjoint.
    assert counted_spans([(5, 6), (7, 8)], [0, 1, 1, 2, 2, 3, 3, 3, 3, 4]) == [(5, 7), (7, 9)]


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("format_", sorted(ENCODERS))
def test_lines_without_usage_are_not_read_and_answer_as_if_read(format_: str,
                                                                masked: bool) -> None:
    """The lines the core writes of a translated file (masked too), runs with and without
    usage: the recount that passes over a line holding no "usage" gives every span what
    reading each line gives (its twin)."""
    import math
    import random

    from vthread import _core
    from vthread._heuristics import core_options, written_lines
    from vthread._options import cycle_options
    from vthread.scan import written_span_tokens

    given = source_runs(format_)
    runs_given = [r if index % 2 else [{k: v for k, v in m.items() if k != "usage"} for m in r]
                  for index, r in enumerate(given)]
    lines = [json.dumps({"id": i, "messages": r}).encode() for i, r in enumerate(runs_given)]
    raw = _core.scan_lines(lines, core_options(cycle_options()), False, 1, format=format_,
                           mask_volatile=masked)
    written = written_lines(raw, range(len(lines)))
    assert written is not None
    pick = random.Random(7)
    spans = []
    for at, count in enumerate(raw["lengths"].tolist()):
        for _ in range(4):
            first = pick.randrange(count)
            spans.append((at, first, pick.randrange(first, count) + 1))
    fast = written_span_tokens(written, spans)
    read = written_span_tokens(written, spans, passing_over=False)
    assert [None if math.isnan(t) else t for t in fast] == [
        None if math.isnan(t) else t for t in read]
    assert sum(not math.isnan(t) for t in fast) >= 20  # spans with usage were read
    assert sum(b'"usage"' not in line for line in written) >= 20  # lines passed over
