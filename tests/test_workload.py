"""The benchmark workload generator: deterministic, sized as planned, loops detected as planted."""

from __future__ import annotations

import collections
import gzip
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmarks/ is a source folder, not part of the installed package
    sys.path.insert(0, str(ROOT))

from benchmarks import workload  # noqa: E402
from benchmarks.workload import LOOP_KINDS, MAX_MESSAGES, MIN_MESSAGES  # noqa: E402
from vthread import _reference as ref  # noqa: E402
from vthread._options import cycle_options  # noqa: E402

SAMPLES = ROOT / "vthread" / "samples"
CONFUSION_THREADS = 400


@pytest.fixture(scope="module")
def planted() -> list[workload.PlantedThread]:
    return workload.generate_planted(CONFUSION_THREADS, seed=0)


def _activity(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    if message.get("type") != "activity":
        return None
    activity = message["meta"]["activity"]
    assert isinstance(activity, Mapping)
    return activity


def test_same_seed_same_threads() -> None:
    """A seed always gives the same threads, and thread i does not depend on the count."""
    first = workload.generate_threads(25, seed=3)
    assert first == workload.generate_threads(25, seed=3)
    assert first[:10] == workload.generate_threads(10, seed=3)
    assert first != workload.generate_threads(25, seed=4)


def test_jsonl_is_byte_identical(tmp_path: Path) -> None:
    """Two runs write the same bytes, compressed or not."""
    threads = workload.generate_threads(20, seed=5)
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        for name in ("t.jsonl", "t.jsonl.gz"):
            workload.write_jsonl(tmp_path / run / name, threads)
    for name in ("t.jsonl", "t.jsonl.gz"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_sizes_in_range(planted: list[workload.PlantedThread]) -> None:
    """10-120 messages a thread, mean near 65, starting with the user, mostly with usage."""
    lengths = [len(t.messages) for t in planted]
    assert min(lengths) >= MIN_MESSAGES
    assert max(lengths) <= MAX_MESSAGES
    assert 58 <= sum(lengths) / len(lengths) <= 72
    assert all(t.messages[0]["type"] == "user" for t in planted)
    messages = [m for t in planted for m in t.messages]
    with_usage = [m for m in messages if "usage" in m]
    assert 0.75 < len(with_usage) / len(messages) < 0.95
    assert all(isinstance(m["usage"]["tokens"], int) and m["usage"]["tokens"] > 0
               for m in with_usage)
    kinds = collections.Counter(m["type"] for m in messages)
    assert set(kinds) == {"user", "bot", "reasoning", "activity"}
    assert 0.2 < kinds["activity"] / len(messages) < 0.5


def test_bytes_per_message_match_the_workload(planted: list[workload.PlantedThread]) -> None:
    """About 138 bytes of compact JSON a message (production workload: 652,855 in 90 MB)."""
    size = sum(len(json.dumps(t.messages, ensure_ascii=False, separators=(",", ":")).encode())
               for t in planted)
    per_message = size / sum(len(t.messages) for t in planted)
    assert 120 <= per_message <= 160


def test_tool_calls_are_answered(planted: list[workload.PlantedThread]) -> None:
    """Each response answers an open request of the same name and arguments; none is left open."""
    for thread in planted:
        open_calls: list[tuple[str, str]] = []
        for message in thread.messages:
            activity = _activity(message)
            if activity is None:
                assert isinstance(message["text"], str) and message["text"]
                continue
            function = activity["function"]
            key = (function["name"], json.dumps(function["arguments"], sort_keys=True))
            if activity["type"] == "request":
                assert "result" not in function
                open_calls.append(key)
            else:
                assert activity["type"] == "response" and "result" in function
                open_calls.remove(key)
        assert open_calls == []


def test_loops_are_detected_as_planted(planted: list[workload.PlantedThread]) -> None:
    """The reference names exactly the planted kind on every thread, healthy ones included."""
    options = cycle_options()
    confusion = collections.Counter(
        (t.planted, ref.describe_thread_cycle(t.messages, options)) for t in planted
    )
    mismatches = {pair: n for pair, n in confusion.items() if pair[0] != pair[1]}
    assert mismatches == {}
    shares = collections.Counter(t.planted for t in planted)
    assert 0.10 <= 1 - shares[None] / len(planted) <= 0.20
    assert all(shares[kind] >= 8 for kind in LOOP_KINDS)


@pytest.fixture(scope="module")
def all_loops() -> list[workload.PlantedThread]:
    return workload.generate_planted(300, seed=11, loop_share=1.0)


@pytest.mark.parametrize("kind", LOOP_KINDS)
def test_every_kind_fits_the_shortest_thread(
    kind: workload.LoopKind, all_loops: list[workload.PlantedThread]
) -> None:
    """A loop of each kind is planted and detected even in threads of the minimum length."""
    options = cycle_options()
    threads = [t for t in all_loops if t.planted == kind]
    assert len(threads) > 40
    for thread in threads:
        assert ref.describe_thread_cycle(thread.messages, options) == kind
    short = min(len(t.messages) for t in threads)
    assert short <= 20


def test_no_loops_when_share_is_zero() -> None:
    """loop_share=0 gives only healthy threads, look-alike endings included."""
    options = cycle_options()
    threads = workload.generate_planted(150, seed=9, loop_share=0.0)
    assert all(t.planted is None for t in threads)
    assert all(ref.describe_thread_cycle(t.messages, options) is None for t in threads)


def test_lookalikes_are_present(planted: list[workload.PlantedThread]) -> None:
    """Healthy threads carry progressing polls, empty results and internal calls."""
    names = collections.Counter(
        a["function"]["name"] for t in planted if t.planted is None
        for a in filter(None, map(_activity, t.messages))
    )
    assert names["get_job_status"] > 0
    assert names["_heartbeat"] > 0


def test_openai_format_is_well_formed(planted: list[workload.PlantedThread]) -> None:
    """Roles are valid, every tool call is answered once, arguments are JSON text."""
    for thread in planted[:120]:
        messages = workload.to_openai(thread.messages)
        assert workload.to_openai(thread.messages) == messages
        calls: dict[str, dict[str, Any]] = {}
        answered: set[str] = set()
        requests = [a for a in map(_activity, thread.messages) if a and a["type"] == "request"]
        for message in messages:
            role = message["role"]
            assert role in {"user", "assistant", "tool"}
            if role == "user":
                assert isinstance(message["content"], str)
            elif role == "assistant":
                assert set(message) <= {"role", "content", "reasoning_content", "tool_calls"}
                assert message["content"] is not None or "tool_calls" in message \
                    or "reasoning_content" in message
                for call in message.get("tool_calls", []):
                    assert call["type"] == "function" and call["id"].startswith("call_")
                    assert call["id"] not in calls
                    assert isinstance(json.loads(call["function"]["arguments"]), dict)
                    calls[call["id"]] = call
            else:
                assert message["tool_call_id"] in calls
                assert message["tool_call_id"] not in answered
                assert isinstance(message["content"], str)
                answered.add(message["tool_call_id"])
        assert answered == set(calls)
        arguments = [json.loads(calls[c]["function"]["arguments"]) for c in calls]
        assert arguments == [r["function"]["arguments"] for r in requests]


def test_anthropic_format_is_well_formed(planted: list[workload.PlantedThread]) -> None:
    """Roles alternate from the user; each tool_use is answered in the next user message."""
    block_types = {"user": {"text", "tool_result"}, "assistant": {"text", "thinking", "tool_use"}}
    for thread in planted[:120]:
        messages = workload.to_anthropic(thread.messages)
        assert workload.to_anthropic(thread.messages) == messages
        assert [m["role"] for m in messages] == [
            ("user", "assistant")[i % 2] for i in range(len(messages))
        ]
        pending: set[str] = set()
        for message in messages:
            content = message["content"]
            if isinstance(content, str):
                assert message["role"] == "user" and content and not pending
                continue
            types = [block["type"] for block in content]
            assert set(types) <= block_types[message["role"]]
            if message["role"] == "user":
                answers = {b["tool_use_id"] for b in content if b["type"] == "tool_result"}
                assert answers == pending
                assert types == sorted(types, key=lambda t: t != "tool_result")
                pending = set()
            else:
                assert not pending
                pending = {b["id"] for b in content if b["type"] == "tool_use"}
                assert all(isinstance(b["input"], dict) for b in content
                           if b["type"] == "tool_use")
        assert not pending


def test_write_jsonl_round_trip(tmp_path: Path) -> None:
    """Lines carry ids and messages (or bare arrays); .gz is gzip."""
    threads = workload.generate_threads(7, seed=2)
    size = workload.write_jsonl(tmp_path / "t.jsonl", threads)
    text = (tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert len(text.encode()) == size
    records = [json.loads(line) for line in text.splitlines()]
    assert [r["id"] for r in records] == [f"t{i:06d}" for i in range(1, 8)]
    assert [r["messages"] for r in records] == threads
    workload.write_jsonl(tmp_path / "t.jsonl.gz", threads, with_ids=False)
    with gzip.open(tmp_path / "t.jsonl.gz", "rt", encoding="utf-8") as handle:
        assert [json.loads(line) for line in handle] == threads


def test_cli_writes_the_threads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI writes --count lines and reports messages and planted loops."""
    out = tmp_path / "threads.jsonl"
    assert workload.main(["--count", "12", "--out", str(out), "--seed", "4"]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["messages"] for line in lines] == \
        workload.generate_threads(12, seed=4)
    assert "planted loops" in capsys.readouterr().err
    assert workload.main(["--count", "3", "--out", str(out), "--format", "openai"]) == 0
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["messages"] == workload.to_openai(workload.generate_threads(1)[0])


def test_bundled_samples_are_current(tmp_path: Path) -> None:
    """vthread/samples/ holds exactly what the generator writes, and stays small."""
    workload.write_samples(tmp_path)
    for name in ("threads.jsonl", "openai.jsonl", "anthropic.jsonl"):
        assert (SAMPLES / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert (SAMPLES / "threads.jsonl").stat().st_size < 3_000_000
    native = {json.loads(line)["id"]: json.loads(line)["messages"]
              for line in (SAMPLES / "threads.jsonl").read_text(encoding="utf-8").splitlines()}
    openai = [json.loads(line) for line in
              (SAMPLES / "openai.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(native) == workload.SAMPLE_THREADS and len(openai) == 30
    assert all(workload.to_openai(native[r["id"]]) == r["messages"] for r in openai)
