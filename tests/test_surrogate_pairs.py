"""A string whose surrogate pairs are held as two code points each ("\\ud83c\\udf89") is the
same JavaScript string as the one holding the astral characters ("\\U0001f389"), and as the
thread's JSON line reads: tool names, kinds and call ids compare so in the engine, the
reference, the adapters and build_thread alike (found by differential testing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import vthread
from vthread import _reference, describe_thread_cycle, scan
from vthread._jsvalue import js_string
from vthread._messages import tool_pairs
from vthread._options import cycle_options

PAIR = "\ud83c\udf89"  # a surrogate pair held as two code points
EMOJI = "\U0001f389"  # the same JavaScript string
PAIR2, EMOJI2 = "\ud83d\ude00", "\U0001f600"


def activity(kind: str, name: str, text: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "arguments": {}}
    if kind == "response":
        function["result"] = "r"
    return {"type": "activity", "text": text,
            "meta": {"activity": {"type": kind, "function": function}}}


def as_json(thread: Any) -> Any:
    """The thread as JavaScript holds it: JSON joins the surrogate pairs."""
    return json.loads(json.dumps(thread))


def test_js_string_joins_pairs_only() -> None:
    assert js_string(PAIR) == EMOJI
    assert js_string("a" + PAIR + "\ud800") == "a" + EMOJI + "\ud800"  # a lone one stays
    text = "plain text"
    assert js_string(text) is text


def test_reference_result_run_reads_a_pair_as_its_character() -> None:
    thread = [{"type": "user", "text": "go"},
              activity("response", EMOJI), {"type": "bot", "text": "1"},
              activity("response", PAIR), {"type": "bot", "text": "2"},
              activity("response", EMOJI), {"type": "bot", "text": "3"}]
    js = _reference.describe_thread_cycle(as_json(thread), cycle_options())
    assert js == "repeated_result_run"
    assert describe_thread_cycle(thread) == js
    assert scan([thread]).names == [js]
    assert _reference.describe_thread_cycle(thread, cycle_options()) == js


def test_reference_activity_tail_reads_a_pair_as_its_character() -> None:
    thread: list[dict[str, Any]] = []
    for index, name in enumerate([EMOJI, PAIR, EMOJI2, PAIR2]):
        thread += [activity("request", name, str(2 * index)),
                   activity("response", name, str(2 * index + 1))]
    js = _reference.describe_thread_cycle(as_json(thread), cycle_options())
    assert js == "repeated_activity_tail"
    assert describe_thread_cycle(thread) == js
    assert _reference.describe_thread_cycle(thread, cycle_options()) == js
    assert _reference.attribute(thread, cycle_options()) == _reference.attribute(
        as_json(thread), cycle_options())
    assert scan([thread]).record(0) == scan([as_json(thread)]).record(0)


def test_reference_loop_start_takes_the_request_named_by_a_pair() -> None:
    thread = [{"type": "user", "text": "go"}, activity("request", PAIR),
              activity("response", EMOJI), {"type": "bot", "text": "a"},
              activity("request", EMOJI), activity("response", EMOJI), {"type": "bot", "text": "b"},
              activity("request", EMOJI), activity("response", EMOJI), {"type": "bot", "text": "c"}]
    assert scan([thread]).record(0)["loop_start"] == 1
    assert _reference.attribute(as_json(thread), cycle_options()).loop_start == 1
    assert _reference.attribute(thread, cycle_options()).loop_start == 1


# ------------------------------------------------------------------------ tool pairs, build


def _costed(kind: str, name: str, call_id: str | None = None) -> dict[str, Any]:
    message = activity(kind, name)
    if call_id is not None:
        message["meta"]["activity"]["id"] = call_id
    message["usage"] = {"tokens": 1}
    return message


def test_tool_pairs_match_a_pair_and_its_character() -> None:
    by_name = [_costed("request", PAIR), _costed("request", EMOJI), _costed("response", EMOJI)]
    assert tool_pairs(by_name) == tool_pairs(as_json(by_name)) == ([(0, 2)], [])
    by_id = [_costed("request", "ls", EMOJI), _costed("request", "ls", "b"),
             _costed("response", "ls", "b"), _costed("response", "ls", PAIR)]
    assert tool_pairs(by_id) == tool_pairs(as_json(by_id)) == ([(1, 2), (0, 3)], [])


def test_pair_safe_builds_agree_with_the_json_form() -> None:
    thread = [_costed("request", PAIR), _costed("request", EMOJI), _costed("response", EMOJI)]
    line = as_json(thread)
    assert len(vthread.build_thread(line, max_tokens=2, pair_safe=True).messages) == 0
    assert len(vthread.build_thread(thread, max_tokens=2, pair_safe=True).messages) == 0
    assert len(_reference.shaped_build(line, max_tokens=2, pair_safe=True).messages) == 0
    assert len(_reference.shaped_build(thread, max_tokens=2, pair_safe=True).messages) == 0


# ------------------------------------------------------------------------------- adapters


def _chat_runs(call: str, reply: str) -> dict[str, list[dict[str, Any]]]:
    openai: list[dict[str, Any]] = [{"role": "user", "content": "find it"}]
    anthropic: list[dict[str, Any]] = [{"role": "user", "content": "find it"}]
    responses: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "find it"}]
    for index in range(3):
        said = f"still pending {index}"
        # The last reply names its call by the other form of the id.
        answer = reply if index == 2 else call
        openai += [{"role": "assistant", "content": None, "tool_calls": [
                       {"id": call, "type": "function",
                        "function": {"name": "get", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": answer, "content": "pending"},
                   {"role": "assistant", "content": said}]
        anthropic += [{"role": "assistant", "content": [
                          {"type": "tool_use", "id": call, "name": "get", "input": {}}]},
                      {"role": "user", "content": [
                          {"type": "tool_result", "tool_use_id": answer, "content": "pending"}]},
                      {"role": "assistant", "content": [{"type": "text", "text": said}]}]
        responses += [{"type": "function_call", "call_id": call, "name": "get", "arguments": "{}"},
                      {"type": "function_call_output", "call_id": answer, "output": "pending"},
                      {"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": said}]}]
    return {"openai": openai, "anthropic": anthropic, "responses": responses}


@pytest.mark.parametrize(("call", "reply"), [(EMOJI, PAIR), (PAIR, EMOJI)])
def test_a_call_id_held_as_a_pair_finds_its_call(tmp_path: Path, call: str, reply: str) -> None:
    for format_, run in _chat_runs(call, reply).items():
        line = json.dumps(run)
        path = tmp_path / f"{format_}.jsonl"
        path.write_text(line + "\n")
        done = subprocess.run([sys.executable, "-m", "vthread", "scan", str(path), "-q",
                               "--format", format_], capture_output=True, check=True)
        cli = json.loads(done.stdout)["verdict"]
        assert cli == "repeated_result_run", format_
        assert scan([json.loads(line)], format=format_).names == [cli], format_
        assert scan([run], format=format_).names == [cli], format_
        assert describe_thread_cycle(run, format=format_) == cli, format_


def test_a_legacy_function_reply_named_by_a_pair_finds_its_call() -> None:
    from vthread.adapters import from_openai

    run = [{"role": "assistant", "content": None,
            "function_call": {"name": EMOJI, "arguments": '{"a": 1}'}},
           {"role": "function", "name": PAIR, "content": "done"}]
    reply = from_openai(run)[1]["meta"]["activity"]["function"]
    assert reply["arguments"] == {"a": 1}
    joined = from_openai(as_json(run))[1]["meta"]["activity"]["function"]
    assert {**reply, "name": js_string(reply["name"])} == joined
