"""``vthread scan --anywhere`` read by the compiled core: each line's message screens made from
its bytes (translated or masked as the plain scan reads it), only the lines whose screens
repeat parsed by Python to confirm and describe their loops. A chunk read that way writes,
byte for byte, what Python's reading of every line writes, and so does a whole file."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from cli_chunks import assert_same_done as _same
from cli_chunks import chunk_task, read_wholly_by_the_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    anthropic_messages,
    anywhere_threads,
    openai_messages,
    responses_items,
    runs,
)

from benchmarks.workload import generate_threads, to_anthropic, to_openai
from vthread import cli

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
REALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"


def _line(thread: Any, ident: Any, wrapped: bool) -> bytes:
    value = {"id": ident, "messages": thread} if wrapped else thread
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


@SETTINGS
@given(st.lists(anywhere_threads(), min_size=1, max_size=6), st.booleans(), st.booleans())
def test_core_chunk_equals_python_chunk(drawn: list[list[dict[str, Any]]], masked: bool,
                                        count_tokens: bool) -> None:
    """Threads with blocks repeated anywhere, as they are or masked: whenever the core takes
    the chunk, it writes what Python's reading writes."""
    lines = [_line(t, f"r{i}", i % 2 == 0) for i, t in enumerate(drawn)]
    task = chunk_task(lines, count_tokens=count_tokens, mask_volatile=masked, anywhere=True)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


@SETTINGS
@given(st.lists(anywhere_threads(), min_size=1, max_size=6))
def test_core_chunk_equals_python_chunk_when_screens_collide(
        drawn: list[list[dict[str, Any]]]) -> None:
    """With screens cut to 2 bits (equal screens everywhere), every run the screens offer is
    confirmed on the core's exact key numbers of the line: the records are still Python's
    (a collision costs time, never an answer)."""
    from vthread import _core

    lines = [_line(t, f"r{i}", True) for i, t in enumerate(drawn)]
    task = chunk_task(lines, anywhere=True)
    expected = cli._scan_chunk_in_python(task)
    _core._set_screen_bits(2)
    try:
        done = cli._scan_chunk_in_core(task)
    finally:
        _core._set_screen_bits(64)
    if done is not None:
        _same(done, expected)


def _lines_python_reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The lines the CLI makes whole into Python objects from now on (each
    ``cli._read_thread``), as a list that grows as they are read."""
    parsed: list[bytes] = []
    read_thread = cli._read_thread

    def counted(line: bytes, *rest: Any, **keywords: Any) -> Any:
        parsed.append(line)
        return read_thread(line, *rest, **keywords)

    monkeypatch.setattr(cli, "_read_thread", counted)
    return parsed


MESSAGES = {"openai": openai_messages(), "anthropic": anthropic_messages(),
            "responses": responses_items()}


@SETTINGS
@given(st.sampled_from(sorted(MESSAGES)), st.booleans(), st.data())
def test_translated_chunks_alike(format_: str, masked: bool, data: st.DataObject) -> None:
    """Runs in the other formats, translated in the core: their loops are restated in the
    file's own messages as Python's reading restates them."""
    lines = [json.dumps(run).encode() for run in data.draw(
        st.lists(runs(MESSAGES[format_]), min_size=1, max_size=4))]
    task = chunk_task(lines, format_, mask_volatile=masked, anywhere=True)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


@pytest.mark.parametrize("format_", ["native", "openai", "anthropic"])
@pytest.mark.parametrize("masked", [False, True])
def test_generated_chunks_are_read_by_the_core(format_: str, masked: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's threads in each format: no line declined, the records Python's, and
    no line made whole into Python objects (a looping line's messages are read one by one,
    and only where a rule needs them)."""
    convert = {"native": lambda t: t, "openai": to_openai, "anthropic": to_anthropic}[format_]
    lines = [json.dumps({"id": f"t{i}", "messages": convert(t)}).encode()
             for i, t in enumerate(generate_threads(400, seed=11))]
    task = chunk_task(lines, format_, mask_volatile=masked, anywhere=True)
    parsed = _lines_python_reads(monkeypatch)
    raw = cli._read_in_core(task)
    assert raw is not None and not len(raw["declined"])
    done = cli._scan_chunk_in_core(task, raw)
    assert done is not None
    by_core = len(parsed)
    _same(done, cli._scan_chunk_in_python(task))
    assert done.output.count(b'"loops":[{') > 20
    assert by_core == 0


def test_declined_lines_are_pythons_and_the_rest_the_cores() -> None:
    """A NaN and a lone surrogate send their lines to Python; a bad line is an error record;
    the chunk's other lines stay the core's, and every record is what Python alone writes."""
    loop = [{"type": "bot", "text": "again"}] * 3
    lines = [_line(loop, "a", True),
             b'{"id": "b", "messages": [{"type": "bot", "text": NaN}, '
             b'{"type": "bot", "text": NaN}, {"type": "bot", "text": NaN}]}',
             b'{"id": "c", "messages": [{"type": "bot", "text": "\\ud800"}]}',
             b'{"id": "d", "messages": 5}',
             _line([*loop, {"type": "user", "text": "stop"}], "e", True)]
    # Lines enough that the core keeps the chunk (it leaves one it mostly declines to Python).
    lines += [_line([{"type": "bot", "text": f"step {i}"}], i, True) for i in range(12)]
    task = chunk_task(lines, anywhere=True)
    raw = cli._read_in_core(task)
    assert raw is not None and raw["declined"].tolist() == [1, 2, 3]
    done = cli._scan_chunk_in_core(task, raw)
    assert done is not None
    _same(done, cli._scan_chunk_in_python(task))
    records = [json.loads(line) for line in done.output.splitlines()]
    assert [r["verdict"] for r in records[:5] if "error" not in r] == [
        "repeated_suffix", "repeated_suffix", None, "repeated_suffix"]
    assert records[3]["error"]


def test_a_confirmation_that_fails_sends_the_chunk_to_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a line the core read not parse in Python (never seen: a disagreement of the
    two readers), the chunk is Python's, whose records then say what is wrong. The line is
    one Python must read: a failing call retried (a block repeated is confirmed and
    recorded by the core from the line itself, never parsed in Python)."""
    failing = {"type": "activity", "text": "", "meta": {"activity": {"type": "response",
               "function": {"name": "book", "arguments": {"seat": 1}, "result": "Error"}}}}
    lines = [_line([failing, {"type": "bot", "text": "Let me try."}] * 3, "a", True)]
    task = chunk_task(lines, anywhere=True)

    def refuses(line: bytes, *rest: Any, **keywords: Any) -> Any:
        return cli._Bad("not valid JSON: refused")

    def fails(text: bytes, *rest: Any) -> Any:
        raise ValueError("refused")

    monkeypatch.setattr(cli, "_read_thread", refuses)
    # (the line's messages are read one by one, each from its own text)
    monkeypatch.setattr(importlib.import_module("vthread._exact_json"), "loads_exactly", fails)
    assert cli._scan_chunk_in_core(task) is None


def test_a_fault_in_the_cores_columns_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a thread's confirmation or attribution, Python's work on its messages, sends a
    chunk to Python when it fails; a fault in reading the core's columns is raised, not
    papered over by Python's reading."""
    lines = [_line([{"type": "bot", "text": "again"}] * 3, "a", True)]

    def broken(*args: Any) -> Any:
        raise RuntimeError("a fault in the verdict arrays")

    monkeypatch.setattr(importlib.import_module("vthread.scan"), "verdicts", broken)
    with pytest.raises(RuntimeError, match="verdict arrays"):
        cli._scan_chunk_in_core(chunk_task(lines))


def test_the_common_chunk_on_several_threads_is_read_wholly() -> None:
    """A chunk of 700 lines, read in three parts on three threads, parts stitched in order."""
    lines = [_line(t, f"t{i}", True) for i, t in enumerate(generate_threads(700, seed=3))]
    read_wholly_by_the_core(chunk_task(lines, threads=3, anywhere=True))


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs (../shared/realdata) "
                    "are not beside this checkout")
@pytest.mark.parametrize("name", ["mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz",
                                  "tau-bench_gpt-4o-airline.json"])
def test_published_runs_alike_from_the_command_line(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The published runs in their own formats, scanned --anywhere end to end: the same
    records and summary whether the core reads the lines or Python reads every one."""
    outputs = []
    by_core: list[int] = []
    anywhere_in_core = cli._anywhere_in_core

    def counted(task: Any, raw: Any) -> Any:
        by_core.append(len(task.lines))
        return anywhere_in_core(task, raw)

    monkeypatch.setattr(cli, "_anywhere_in_core", counted)
    for core in (True, False):
        if not core:
            assert sum(by_core) > 100  # the lines were the core's to read
            monkeypatch.setattr(cli, "_core_may_read", lambda task: False)
        out, summary = tmp_path / f"{core}.jsonl", tmp_path / f"{core}.json"
        code = cli.main(["scan", str(REALDATA / name), "--anywhere", "-q", "-o", str(out),
                         "--summary", str(summary)])
        assert code == 0
        totals = json.loads(summary.read_text())
        totals.pop("seconds", None), totals.pop("started", None)  # (the clock's)
        outputs.append((out.read_bytes(), totals))
    assert outputs[0] == outputs[1]
    assert outputs[0][0].count(b'"loops":[{') >= 4  # tau-bench's 4, mini-swe-agent's 9


@pytest.mark.parametrize("shape", ["block", "replies", "long block"])
def test_a_looping_line_is_confirmed_and_recorded_without_being_parsed_in_python(
        shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --anywhere, a line whose blocks repeat (short or long periods), or whose replies
    differ only in their numbers, is confirmed and recorded by the core from the line
    itself: Python never parses it (a 1M-message line took 4x the memory of its own
    scan as Python objects), and the records are those Python's reading writes."""
    said = [{"type": "bot", "text": f"step {i}"} for i in range(40)]
    call = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": "ls", "arguments": {"p": "."}}}}}
    thread = {"block": [{"type": "user", "text": "go"}] + said[:3] * 5,
              "replies": [call] + [item for n in range(5) for item in (
                  {"type": "bot", "text": f"Let me look ({n})."},
                  {"type": "user", "text": f"found {n} files"})],
              "long block": said * 3}[shape]
    lines = [_line(thread, "a", True), _line(said, "b", True)]
    task = chunk_task(lines, anywhere=True)
    expected = cli._scan_chunk_in_python(task)
    assert b'"verdict":null' not in expected.output.split(b"\n")[0]  # the line loops
    parsed = _lines_python_reads(monkeypatch)
    done = read_wholly_by_the_core(task)
    parsed.clear()  # (the Python reading the helper compares with parses every line)
    done = cli._scan_chunk_in_core(task)
    assert done is not None and parsed == []
    _same(done, expected)
