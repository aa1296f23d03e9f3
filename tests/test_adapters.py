"""Format adapters: realistic OpenAI and Anthropic conversations become native messages."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.workload import generate_threads, to_anthropic, to_openai
from tests.test_cli import records, run
from vthread import _core, _reference
from vthread._options import cycle_options
from vthread.adapters import detect_format, from_anthropic, from_openai, to_native


def request(name: str, arguments: Any = ..., **extra: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if arguments is not ...:
        function["arguments"] = arguments
    activity = {"type": "request", "function": function, **extra}
    return {"type": "activity", "text": "", "meta": {"activity": activity}}


def response(name: str, arguments: Any = ..., result: Any = None, **extra: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if arguments is not ...:
        function["arguments"] = arguments
    function["result"] = result
    activity = {"type": "response", "function": function, **extra}
    return {"type": "activity", "text": "", "meta": {"activity": activity}}


def verdict(messages: list[dict[str, Any]]) -> str | None:
    return _reference.describe_thread_cycle(messages, cycle_options())


# ------------------------------------------------------------------------------------ OpenAI

OPENAI_SESSION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent. Use the tools to inspect the repo."},
    {"role": "user", "content": "Why does `make test` fail on CI but not locally?"},
    {
        "role": "assistant",
        "content": None,
        "reasoning_content": "Check the CI config and the Makefile first.",
        "tool_calls": [
            {"id": "call_Xk2", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": ".ci/run"}'}},
            {"id": "call_9aB", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "Makefile"}'}},
        ],
        "usage": {"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876},
    },
    {"role": "tool", "tool_call_id": "call_Xk2", "content": "#!/bin/sh\nmake test PY=3.11\n"},
    {"role": "tool", "tool_call_id": "call_9aB",
     "content": '{"lines": 42, "targets": ["test", "lint"]}'},
    {"role": "assistant",
     "content": [{"type": "text", "text": "CI pins Python 3.11;"},
                 {"type": "text", "text": "your machine runs 3.12."}],
     "usage": {"prompt_tokens": 990, "completion_tokens": 21, "total_tokens": 1011}},
]


def test_openai_realistic_session() -> None:
    """A tool-using session maps message by message, calls and results paired by id."""
    assert from_openai(OPENAI_SESSION) == [
        {"type": "system",
         "text": "You are a coding agent. Use the tools to inspect the repo."},
        {"type": "user", "text": "Why does `make test` fail on CI but not locally?"},
        {"type": "reasoning", "text": "Check the CI config and the Makefile first.",
         "usage": {"tokens": 64}},
        request("read_file", {"path": ".ci/run"}),
        request("read_file", {"path": "Makefile"}),
        response("read_file", {"path": ".ci/run"}, "#!/bin/sh\nmake test PY=3.11\n"),
        response("read_file", {"path": "Makefile"}, {"lines": 42, "targets": ["test", "lint"]}),
        {"type": "bot", "text": "CI pins Python 3.11;\nyour machine runs 3.12.",
         "usage": {"tokens": 21}},
    ]


def test_openai_results_answer_their_own_call_out_of_order() -> None:
    """Results are matched by tool_call_id, not by position."""
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "grep", "arguments": "{}"}},
            {"id": "b", "type": "function",
             "function": {"name": "ls", "arguments": '{"dir": "src"}'}}]},
        {"role": "tool", "tool_call_id": "b", "content": '["main.py"]'},
        {"role": "tool", "tool_call_id": "a", "content": "no match"},
    ]
    assert from_openai(messages) == [
        {"type": "bot", "text": "Looking."},
        request("grep", {}),
        request("ls", {"dir": "src"}),
        response("ls", {"dir": "src"}, ["main.py"]),
        response("grep", {}, "no match"),
    ]


def test_openai_unknown_tool_call_id() -> None:
    """A result whose call is unknown keeps its own name, or "", and carries no arguments."""
    messages: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "call_missing", "content": "ok"},
        {"role": "tool", "tool_call_id": "call_gone", "name": "deploy", "content": "done"},
        {"role": "tool", "content": "3"},
    ]
    assert from_openai(messages) == [
        response("", result="ok"), response("deploy", result="done"), response("", result=3),
    ]


def test_openai_malformed_arguments_kept_as_text() -> None:
    """Arguments that are not valid JSON stay the raw string; absent ones stay absent."""
    messages: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "1", "type": "function",
         "function": {"name": "run", "arguments": '{"cmd": "ls -la'}},
        {"id": "2", "type": "function", "function": {"name": "run", "arguments": ""}},
        {"id": "3", "type": "function", "function": {"name": "now"}},
        {"id": "4", "type": "function", "function": {"name": "sum", "arguments": "[1, 2]"}},
        {"id": "5", "type": "function", "function": {"name": "echo", "arguments": {"a": 1}}},
    ]}]
    assert from_openai(messages) == [
        request("run", '{"cmd": "ls -la'), request("run", ""), request("now"),
        request("sum", [1, 2]), request("echo", {"a": 1}),
    ]


def test_openai_system_developer_and_unknown_roles() -> None:
    """system and developer become system messages; an unknown role keeps its name."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be terse."},
        {"role": "developer", "content": [{"type": "text", "text": "No markdown."}]},
        {"role": "critic", "content": "Too long."},
    ]
    assert from_openai(messages) == [
        {"type": "system", "text": "Be terse."},
        {"type": "system", "text": "No markdown."},
        {"type": "critic", "text": "Too long."},
    ]


def test_openai_empty_content() -> None:
    """Null or empty content never drops a message; a tool-call turn adds no empty text."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": "", "tool_calls": []},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "x", "content": ""},
        {"role": "assistant", "content": [], "refusal": "I can't help with that."},
    ]
    assert from_openai(messages) == [
        {"type": "user", "text": ""},
        {"type": "bot", "text": ""},
        {"type": "bot", "text": ""},
        request("ping", {}),
        response("ping", {}, ""),
        {"type": "bot", "text": "I can't help with that."},
    ]


def test_openai_image_parts_are_carried() -> None:
    """Image, audio and file parts are no text; a message carries them in ``meta.media`` (so
    two messages with different images differ), and an image-only message is an empty text
    carrying its image."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    linked = {"type": "image_url", "image_url": {"url": "https://example.com/a.png",
                                                 "detail": "high"}}
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [
            {"type": "text", "text": "What is wrong in this screenshot?"}, image]},
        {"role": "user", "content": [linked]},
        {"role": "user", "content": [audio, "and this?"]},
        {"role": "user", "content": [{"type": None, "text": "a part of no type is ignored"}]},
    ]
    assert from_openai(messages) == [
        {"type": "user", "text": "What is wrong in this screenshot?", "meta": {"media": [image]}},
        {"type": "user", "text": "", "meta": {"media": [linked]}},
        {"type": "user", "text": "and this?", "meta": {"media": [audio]}},
        {"type": "user", "text": ""},
    ]


def test_screenshots_are_results_that_differ(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A computer-use agent scrolling through different screenshots is progressing: a tool
    result holding an image is its parts as given, so different images are different results
    (they were all the empty text, a repeated_result_run); the same screenshot every time is
    still a loop. In every format, in process and from the file's bytes."""
    import vthread

    def step(index: int, data: str) -> list[dict[str, Any]]:
        call = {"type": "tool_use", "id": f"t{index}", "name": "computer",
                "input": {"action": "scroll", "scroll_direction": "down"}}
        shot = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": data}}
        return [{"role": "assistant", "content": [{"type": "text", "text": "Scrolling."}, call]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{index}",
                                              "content": [shot]}]}]

    def openai_step(index: int, data: str) -> list[dict[str, Any]]:
        call = {"id": f"c{index}", "type": "function",
                "function": {"name": "computer", "arguments": '{"action": "scroll"}'}}
        return [{"role": "assistant", "content": "Scrolling.", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"c{index}", "content": [
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}]}]

    for make, format_ in ((step, "anthropic"), (openai_step, "openai")):
        opening = [{"role": "user", "content": "Find the Submit button"}]
        moving = opening + [m for i, d in enumerate("ABCD") for m in make(i, d * 12)]
        stuck = opening + [m for i in range(4) for m in make(i, "A" * 12)]
        result = vthread.scan([moving, stuck], format=format_)
        assert [result.record(i)["verdict"] for i in range(2)] == [None, "repeated_suffix"]
        assert vthread.describe_thread_cycle(moving, format=format_) is None
        path = tmp_path / f"{format_}.jsonl"
        path.write_text(json.dumps(moving) + "\n" + json.dumps(stuck) + "\n")
        code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
        assert code == 0
        assert [{**r, "file": None} for r in records(out)] == [
            {**result.record(i), "file": None, "line": i + 1} for i in range(2)]


def test_openai_reasoning_field_and_refusal() -> None:
    """``reasoning`` (OpenRouter's name) works like ``reasoning_content``; empty is skipped."""
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "reasoning": "Two steps.", "content": "Done."},
        {"role": "assistant", "reasoning_content": "", "content": "Again."},
        {"role": "assistant", "reasoning": {"summary": "not a string"}, "content": "Fine."},
    ]
    assert from_openai(messages) == [
        {"type": "reasoning", "text": "Two steps."}, {"type": "bot", "text": "Done."},
        {"type": "bot", "text": "Again."}, {"type": "bot", "text": "Fine."},
    ]


def test_openai_legacy_function_call() -> None:
    """function_call / role function pair by name, the latest call's arguments repeated."""
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": None,
         "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        {"role": "function", "name": "get_weather", "content": '{"temp": -3}'},
        {"role": "function", "name": "never_called", "content": "?"},
    ]
    assert from_openai(messages) == [
        request("get_weather", {"city": "Oslo"}),
        response("get_weather", {"city": "Oslo"}, {"temp": -3}),
        response("never_called", result="?"),
    ]


def test_openai_usage_fields() -> None:
    """usage.tokens wins, then completion_tokens; other usages are not carried."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "a", "usage": {"tokens": 5, "completion_tokens": 9}},
        {"role": "assistant", "content": "b", "usage": {"completion_tokens": 7.5}},
        {"role": "assistant", "content": "c", "usage": {"prompt_tokens": 100}},
        {"role": "assistant", "content": "d", "usage": {"completion_tokens": True}},
        {"role": "assistant", "content": "e", "usage": None},
    ]
    assert [m.get("usage") for m in from_openai(messages)] == [
        {"tokens": 5}, {"tokens": 7.5}, None, None, None,
    ]


@pytest.mark.parametrize("kind", ["int32", "int64", "uint16", "float32", "Decimal", "Fraction"])
def test_usage_figures_of_any_numeric_type_are_kept(kind: str) -> None:
    """A token figure that is a NumPy integer or float, a Decimal or a Fraction (a thread
    built from pandas or NumPy) is carried in every format, as a native usage.tokens of that
    type counts: they were dropped, and the loop's wasted tokens read as unknown."""
    import decimal
    import fractions

    import numpy as np

    import vthread

    figure = {"Decimal": decimal.Decimal(4), "Fraction": fractions.Fraction(4)}.get(
        kind) or getattr(np, kind)(4)
    openai = [{"role": "user", "content": "a"},
              {"role": "assistant", "content": "b", "usage": {"completion_tokens": figure}}] * 3
    anthropic = [{"role": "user", "content": "a"},
                 {"role": "assistant", "content": "b", "usage": {"output_tokens": figure}}] * 3
    recorded = [{"role": "user", "content": "a"},
                {"role": "assistant", "content": "b",
                 "extra": {"response": {"usage": {"completion_tokens": figure}}}}] * 3
    for thread, format_ in ((openai, "openai"), (anthropic, "anthropic"), (recorded, "openai")):
        assert to_native(thread, format_)[1]["usage"] == {"tokens": figure}
        assert vthread.scan([thread], format=format_).record(0)["loop_tokens"] == 12.0


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "user", "content": "hi"}, "hello"], r"message 1 is not an object \(a string\)"),
        ([{"content": "no role"}], "message 0 has no role"),
        ([{"role": 3, "content": "x"}], "message 0: role must be a string"),
        ([{"role": "user", "content": 42}],
         "message 0: content must be a string, a list of parts or null, not a number"),
        ([{"role": "assistant", "tool_calls": "ls"}], "message 0: tool_calls must be a list"),
        ([{"role": "assistant", "tool_calls": [7]}], r"message 0: tool_calls\[0\] is not"),
        ([{"role": "assistant", "tool_calls": [{"id": "1", "function": {"arguments": "{}"}}]}],
         "function name must be a string"),
        ({"role": "user"}, "must be a list of messages"),
        ("[]", "must be a list of messages"),
    ],
)
def test_openai_bad_input(messages: Any, message: str) -> None:
    """Bad input is a ValueError that names the message index."""
    with pytest.raises(ValueError, match=message):
        from_openai(messages)


def test_openai_looping_agent_is_named() -> None:
    """A recorded agent re-running one failing command is found stuck after conversion."""
    turn: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Let me run the tests again.", "tool_calls": [
            {"id": "call", "type": "function",
             "function": {"name": "shell", "arguments": '{"cmd": "pytest -x"}'}}]},
        {"role": "tool", "tool_call_id": "call",
         "content": "E   ModuleNotFoundError: No module named 'vthread'"},
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Make the tests pass."}]
    for index in range(4):
        step = copy.deepcopy(turn)
        step[0]["tool_calls"][0]["id"] = step[1]["tool_call_id"] = f"call_{index}"
        messages += step
    assert verdict(from_openai(messages)) == "repeated_suffix"


# --------------------------------------------------------------------------------- Anthropic

ANTHROPIC_SESSION: list[dict[str, Any]] = [
    {"role": "user", "content": "The deploy script hangs. Can you look?"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Read deploy.sh, then the logs.", "signature": "EqQBCg=="},
        {"type": "text", "text": "I'll read the script first."},
        {"type": "tool_use", "id": "toolu_01A", "name": "read_file",
         "input": {"path": "deploy.sh"}},
        {"type": "tool_use", "id": "toolu_01B", "name": "tail_log",
         "input": {"file": "deploy.log", "lines": 20}},
    ], "usage": {"input_tokens": 1200, "output_tokens": 88}},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "#!/bin/sh\nssh $HOST"},
        {"type": "tool_result", "tool_use_id": "toolu_01B", "is_error": True,
         "content": [{"type": "text", "text": "permission denied:"},
                     {"type": "text", "text": "deploy.log"}]},
        {"type": "text", "text": "Also, it started after the key rotation."},
    ]},
    {"role": "assistant", "content": [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"},
        {"type": "text", "text": "The script waits for an SSH host-key prompt."},
    ]},
]


def test_anthropic_realistic_session() -> None:
    """Blocks map one by one, in order; results repeat their call's name and input."""
    assert from_anthropic(ANTHROPIC_SESSION) == [
        {"type": "user", "text": "The deploy script hangs. Can you look?"},
        {"type": "reasoning", "text": "Read deploy.sh, then the logs.", "usage": {"tokens": 88}},
        {"type": "bot", "text": "I'll read the script first."},
        request("read_file", {"path": "deploy.sh"}),
        request("tail_log", {"file": "deploy.log", "lines": 20}),
        response("read_file", {"path": "deploy.sh"}, "#!/bin/sh\nssh $HOST"),
        response("tail_log", {"file": "deploy.log", "lines": 20},
                 "permission denied:\ndeploy.log", is_error=True),
        {"type": "user", "text": "Also, it started after the key rotation."},
        {"type": "reasoning", "text": ""},
        {"type": "bot", "text": "The script waits for an SSH host-key prompt."},
    ]


def test_anthropic_unknown_tool_use_id_and_json_results() -> None:
    """An unknown id gives name "" and no arguments; JSON text results are parsed."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_nope", "content": '{"rows": 0}'},
        {"type": "tool_result", "tool_use_id": "toolu_nope"},
        {"type": "tool_result", "tool_use_id": ["unhashable"], "content": "x"},
    ]}]
    assert from_anthropic(messages) == [
        response("", result={"rows": 0}), response("", result=""), response("", result="x"),
    ]


def test_anthropic_images_and_empty_content() -> None:
    """Image and document blocks are carried in ``meta.media`` by their message's first
    native message (an image-only message: an empty text message carrying it); an empty
    message is an empty text message."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}}
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                               "data": "..."}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [image, {"type": "text", "text": "Transcribe this."},
                                     document, {"type": "text", "text": "And this."}]},
        {"role": "assistant", "content": []},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": [{"type": "image", "source": {}}]},
        {"role": "user", "content": ["plain string block"]},
        {"role": "user", "content": [{"type": "citations_delta"}]},
    ]
    assert from_anthropic(messages) == [
        {"type": "user", "text": "Transcribe this.", "meta": {"media": [image, document]}},
        {"type": "user", "text": "And this."},
        {"type": "bot", "text": ""},
        {"type": "bot", "text": ""},
        {"type": "user", "text": "", "meta": {"media": [{"type": "image", "source": {}}]}},
        {"type": "user", "text": "plain string block"},
        {"type": "user", "text": ""},  # (a block no table names: nothing read)
    ]


def test_an_anthropic_block_typed_by_a_list_or_object_is_ignored() -> None:
    """A block whose type is a list or an object names no block, as the table says of
    blocks it does not name (the test for an image raised TypeError on it)."""
    image = {"type": "image", "source": {}}
    for kind in (["image"], {"type": "image"}):
        messages = [{"role": "user", "content": [{"type": kind}, image, "a"]}]
        assert from_anthropic(messages) == [
            {"type": "user", "text": "a", "meta": {"media": [image]}}]


def test_an_image_beside_a_message_never_starts_a_loop_of_its_own() -> None:
    """The same screenshot beside the task and beside every result (a reviewer's case): the
    loop is the calls and results from message 1, not a block beginning at the task's image
    (which, as a native message of its own, took the task prompt into the loop)."""
    import vthread

    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "SAME"}}
    thread: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "go"}, image]}]
    for turn in range(6):
        thread.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{turn}", "name": "computer",
             "input": {"action": "screenshot"}}]})
        thread.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{turn}", "content": "ok"}, image]})
    for anywhere in (False, True):
        record = vthread.scan([thread], format="anthropic", anywhere=anywhere).record(0)
        assert (record["loop_start"], record["loop_messages"], record["period"]) == (1, 12, 2)


def test_anthropic_tool_use_without_input() -> None:
    """A tool_use without input is a request without arguments, and so is its result."""
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "now"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": "12:00"}]},
    ]
    assert from_anthropic(messages) == [request("now"), response("now", result="12:00")]


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([{"role": "user", "content": "a"}, None], "message 1 is not an object"),
        ([{"content": "a"}], "message 0 has no role"),
        ([{"role": "user", "content": 5}], "message 0: content must be"),
        ([{"role": "user", "content": [3]}], r"message 0: content\[0\] is not an object"),
        ([{"role": "assistant", "content": [{"type": "tool_use", "id": "x"}]}],
         "tool_use name must be a string"),
        ([{"role": "user", "content": [{"type": "tool_result", "content": 5}]}],
         "content must be a string"),
    ],
)
def test_anthropic_bad_input(messages: Any, message: str) -> None:
    """Bad input is a ValueError that names the message index."""
    with pytest.raises(ValueError, match=message):
        from_anthropic(messages)


ANTHROPIC_TURN: list[dict[str, Any]] = [
    {"role": "assistant", "content": [{"type": "text", "text": "Reading."},
                                      {"type": "tool_use", "id": "u1", "name": "cat",
                                       "input": {"path": "a"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1",
                                  "content": "x"}]}]
OPENAI_TURN: list[dict[str, Any]] = [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "x"}]


@pytest.mark.parametrize(("messages", "format_", "message"), [
    (ANTHROPIC_TURN, "openai", "message 0 holds a tool_use block, which only Anthropic's"),
    (ANTHROPIC_TURN[1:], "openai", "message 0 holds a tool_result block"),
    ([{"role": "assistant", "content": [{"type": "tool_result", "content": "t"}]}],
     "swe-agent", "message 0 holds a tool_result block"),
    (ANTHROPIC_TURN, "mini-swe-agent", "message 0 holds a tool_use block"),
    (OPENAI_TURN, "anthropic", "message 0 has a 'tool_calls' key, which only OpenAI's"),
    (OPENAI_TURN[1:], "anthropic", "message 0 has a 'tool_call_id' key"),
    ([{"role": "tool", "content": "x"}], "anthropic", "message 0 has role 'tool'"),
    ([{"role": "developer", "content": "x"}], "anthropic", "message 0 has role 'developer'"),
    (OPENAI_TURN, "responses", "item 0 has a 'tool_calls' key"),
    ([{"role": "function", "name": "f", "content": "x"}], "responses",
     "item 0 has role 'function'"),
])
def test_another_formats_messages_are_refused_not_misread(
        messages: list[dict[str, Any]], format_: str, message: str) -> None:
    """A message only another chat format holds (Anthropic's tool blocks read as OpenAI's,
    OpenAI's tool calls and results read as Anthropic's or as Responses messages) is a
    ValueError naming it and the format it is in: read on, the calls were media or lost,
    the results plain text, and loops missed or made up (a run of another format in a
    file, a harness passing the wrong provider's name)."""
    with pytest.raises(ValueError, match=message) as raised:
        to_native(messages, format_)  # type: ignore[arg-type]
    assert "is the thread in format" in str(raised.value)
    assert _core.translate_line(json.dumps(messages).encode(), format_) is None  # Python says


def test_what_holds_no_sign_of_another_format_is_read() -> None:
    """A thinking block in OpenAI-shaped content is Mistral's reasoning (its text a list of
    parts), not an Anthropic run; OpenAI keys written null or empty on Anthropic messages (a
    logger writing every field) hold no call. Both are read, by the core and by Python."""
    mistral = [{"role": "user", "content": "fix it"},
               {"role": "assistant", "content": [
                   {"type": "thinking", "thinking": [{"type": "text", "text": "list files"}]},
                   {"type": "text", "text": ""}],
                "tool_calls": [{"id": "c1", "type": "function",
                                "function": {"name": "ls", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "a.py"}]
    logged = [{**message, "tool_calls": None, "function_call": None, "tool_call_ids": []}
              for message in ANTHROPIC_TURN]
    for messages, format_ in ((mistral, "openai"), (logged, "anthropic")):
        native = to_native(messages, format_)  # type: ignore[arg-type]
        assert any(m.get("meta", {}).get("activity", {}).get("type") == "response"
                   for m in native)
        assert _core.translate_line(json.dumps(messages).encode(), format_) is not None


def test_a_developer_message_is_a_responses_message() -> None:
    """The Responses API has a developer role (OpenAI chat's too): not refused there."""
    assert to_native([{"role": "developer", "content": "Be brief."}], "responses") == [
        {"type": "system", "text": "Be brief."}]


def test_a_built_in_tool_s_responses_items_are_its_calls_and_results() -> None:
    """A built-in tool's call (``*_call``) is a request of the tool, its fields but type, id,
    call id and status the arguments; its output (``*_call_output``) the response with its
    call's arguments, its fields the result; another item of the API a message of its type
    holding its fields in ``meta.item``; a type of no item, its type alone (each was an empty
    message of its type, so that two different actions compared equal). The compiled core
    reads a built-in tool's items alike and leaves a run holding another item to Python."""
    checks = [{"id": "cu_sc_1", "code": "malicious_instructions", "message": "Check."}]
    items = [
        {"type": "computer_call", "id": "cu_1", "call_id": "c1", "status": "completed",
         "action": {"type": "click", "x": 1, "y": 2}, "pending_safety_checks": checks},
        {"type": "computer_call_output", "call_id": "c1", "id": "cuo_1",
         "acknowledged_safety_checks": checks,
         "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}},
        {"type": "shell_call_output", "call_id": "unknown", "output": [{"stdout": "ok"}]},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_1",
         "action": {"type": "exec", "command": ["ls"]}},
        {"type": "local_shell_call_output", "id": "call_1", "output": "a.py"},  # (no call_id)
        {"type": "tool_search_call", "id": "ts_1", "call_id": "c2", "arguments": {"q": "w"}},
        {"type": "tool_search_output", "id": "tso_1", "call_id": "c2", "tools": []},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "gh", "name": "search",
         "arguments": "{}", "output": "[]", "approval_request_id": "mcpr_1"},
        {"type": "web_search_call", "id": "ws", "status": "completed",
         "action": {"type": "search", "query": "vthread"}},
        {"type": "mcp_list_tools", "id": "ml", "server_label": "git", "tools": []},
        {"type": "item_reference", "id": "msg_1"},
        {"type": "no_item_of_the_api", "id": "x", "text": "?"},
    ]
    click = {"action": {"type": "click", "x": 1, "y": 2}}
    ls = {"action": {"type": "exec", "command": ["ls"]}}
    assert to_native(items, "responses") == [
        request("computer", click),  # (safety checks, with ids of their own, left out)
        response("computer", click, {"output": items[1]["output"]}),
        response("shell", result={"output": [{"stdout": "ok"}]}),
        request("local_shell", ls),
        response("local_shell", ls, {"output": "a.py"}),  # (its call found by its id)
        request("tool_search", {"arguments": {"q": "w"}}),
        response("tool_search", {"arguments": {"q": "w"}}, {"tools": []}),
        request("mcp", {"server_label": "gh", "name": "search", "arguments": "{}",
                        "output": "[]"}),  # (its approval request's id left out)
        request("web_search", {"action": {"type": "search", "query": "vthread"}}),
        {"type": "mcp_list_tools", "text": "", "meta": {"item": {"server_label": "git",
                                                                 "tools": []}}},
        {"type": "item_reference", "text": ""},
        {"type": "no_item_of_the_api", "text": ""},
    ]
    # The compiled core reads a built-in tool's items alike; another item of the API (its
    # fields kept in meta.item) it leaves to Python.
    line = json.dumps({"messages": items}).encode()
    assert _core.translate_line(line, "responses") is None
    tools = items[:8]
    translated = _core.translate_line(json.dumps({"messages": tools}).encode(), "responses")
    assert translated is not None
    assert json.loads(translated[0])["messages"] == to_native(tools, "responses")


def test_anthropic_server_and_mcp_tools_are_calls_and_results() -> None:
    """A server tool's (``server_tool_use``, answered by a ``*_tool_result`` block) and an
    MCP server's (``mcp_tool_use``, ``mcp_tool_result``) calls and results are requests and
    responses, as ``tool_use`` and ``tool_result`` are (they were dropped: a turn of web
    searches was an empty text); such a block tells a chat Anthropic's."""
    found = [{"type": "web_search_result", "url": "https://a", "title": "a"}]
    messages = [{"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "a"}},
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": found},
        {"type": "mcp_tool_use", "id": "m1", "name": "log", "server_name": "git",
         "input": {"n": 1}},
        {"type": "mcp_tool_result", "tool_use_id": "m1", "is_error": True,
         "content": [{"type": "text", "text": "no repository"}]}]}]
    assert from_anthropic(messages) == [
        request("web_search", {"query": "a"}),
        response("web_search", {"query": "a"}, found),
        request("log", {"n": 1}),
        response("log", {"n": 1}, "no repository", is_error=True),
    ]
    assert detect_format(messages) == "anthropic"
    translated = _core.translate_line(json.dumps(messages).encode(), "anthropic")
    assert translated is not None  # the compiled core reads them alike
    assert json.loads(translated[0])["messages"] == from_anthropic(messages)
    # Read as OpenAI's, such a turn is refused, as one holding a tool_use block is (its calls
    # were filed under meta.media), by the core too (it leaves the line to Python to say so).
    for block in messages[0]["content"][::2]:
        turn = [{"role": "assistant", "content": [block]}]
        with pytest.raises(ValueError, match=f"holds a {block['type']} block, which only "
                                             "Anthropic's messages hold"):
            to_native(turn, "openai")
        assert _core.translate_line(json.dumps(turn).encode(), "openai") is None


# ---------------------------------------------------------------------------- both / native


@pytest.mark.parametrize(("convert", "session"),
                         [(from_openai, OPENAI_SESSION), (from_anthropic, ANTHROPIC_SESSION)])
def test_input_never_mutated(convert: Any, session: list[dict[str, Any]]) -> None:
    """The caller's messages are left exactly as they were, even when the output is edited."""
    before = copy.deepcopy(session)
    out = convert(session)
    assert session == before
    for message in out:
        message.setdefault("meta", {})["seen"] = True
    assert session == before


def test_to_native_dispatch() -> None:
    """to_native picks the adapter; native input is checked and copied; a bad format raises."""
    assert to_native(OPENAI_SESSION, "openai") == from_openai(OPENAI_SESSION)
    assert to_native(ANTHROPIC_SESSION, "anthropic") == from_anthropic(ANTHROPIC_SESSION)
    native = [{"type": "user", "text": "hi"}]
    copied = to_native(native, "native")
    assert copied == native
    assert copied is not native
    with pytest.raises(ValueError, match="message 0 is not an object"):
        to_native(["hi"], "native")  # type: ignore[list-item]
    with pytest.raises(ValueError, match="unknown format"):
        to_native(native, "gemini")  # type: ignore[arg-type]


def _without_usage(thread: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "usage"} for m in thread]


@pytest.mark.parametrize(("encode", "decode"),
                         [(to_openai, from_openai), (to_anthropic, from_anthropic)])
def test_generated_threads_round_trip(encode: Any, decode: Any) -> None:
    """Generated threads written in a provider format come back as they were (usage aside)."""
    for thread in generate_threads(120, seed=11):
        back = decode(json.loads(json.dumps(encode(thread))))
        assert back == _without_usage(thread)
        assert verdict(back) == verdict(_without_usage(thread))


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=6,
)
_openai_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "function", "other"])},
    optional={
        "content": st.none() | st.text(max_size=8) | st.lists(
            st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]),
                                   "text": st.text(max_size=5)}), max_size=3),
        "tool_call_id": st.sampled_from(["a", "b", "c"]),
        "name": st.text(max_size=3),
        "reasoning_content": st.text(max_size=5),
        "tool_calls": st.lists(st.fixed_dictionaries({
            "id": st.sampled_from(["a", "b", "c"]),
            "function": st.fixed_dictionaries(
                {"name": st.text(max_size=3)},
                optional={"arguments": st.text(max_size=6) | _json}),
        }), max_size=3),
        "usage": st.fixed_dictionaries({}, optional={"completion_tokens": st.integers(0, 99)}),
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_openai_message, max_size=8))
def test_openai_any_well_formed_input(messages: list[dict[str, Any]]) -> None:
    """Any well-formed input converts without mutation, each message yielding at least one."""
    before = copy.deepcopy(messages)
    out = from_openai(messages)
    assert messages == before
    assert len(out) >= len(messages)
    assert all(isinstance(m.get("type"), str) for m in out)
    verdict(out)  # the reference accepts whatever the adapter makes


def test_an_sdk_object_given_for_a_dict_is_named_with_what_to_pass() -> None:
    """A content block or a message that is an SDK's pydantic object (``{"role":
    "assistant", "content": response.content}``, as Anthropic's tool-use guide writes) is
    named by its class, with the ``model_dump()`` to pass instead (it was "content[0] is not
    an object", of what is an object to its writer); a plain value keeps its JSON name."""
    class ToolUseBlock:
        def model_dump(self) -> dict[str, Any]:
            return {"type": "tool_use", "id": "t1", "name": "f", "input": {}}

    hint = (r"is not an object \(a ToolUseBlock\) \(a pydantic model, an SDK's object: pass "
            r"its model_dump\(\)\)")
    reply = {"role": "assistant", "content": [ToolUseBlock()]}
    with pytest.raises(ValueError, match=r"^message 0: content\[0\] " + hint):
        to_native([reply], "anthropic")
    with pytest.raises(TypeError, match=r"^message 1 " + hint):
        to_native([{"role": "user", "content": "hi"}, ToolUseBlock()], "openai")
    calls = {"role": "assistant", "tool_calls": [ToolUseBlock()]}
    with pytest.raises(ValueError, match=r"^message 0: tool_calls\[0\] " + hint):
        to_native([calls], "openai")
    with pytest.raises(ValueError, match=r"^message 0: content\[0\] is not an object "
                                         r"\(a number\)$"):
        to_native([{"role": "user", "content": [3]}], "anthropic")
    # Wherever a thread's messages are checked, by Python or by the core, with any format.
    import vthread

    said = r"messages\[1\] must be a mapping, got ToolUseBlock \(a pydantic model, an SDK's"
    thread = [{"role": "user", "content": "hi"}, ToolUseBlock()]
    for call in (lambda: vthread.scan([thread]), lambda: vthread.scan([thread], format="auto"),
                 lambda: vthread.describe_thread_cycle(thread),
                 lambda: vthread.describe_thread_cycle(thread, format="auto"),
                 lambda: vthread.build_thread(thread, max_tokens=100, format="openai")):
        with pytest.raises(TypeError, match=said):
            call()


def test_chat_messages_in_no_one_format_say_where_they_part_ways() -> None:
    """Chat messages holding a block only Anthropic's hold and a role or key only OpenAI's
    have are in no one format, and the error names the two messages and what reads them: a
    thinking block beside tool_calls (LangChain's convert_to_openai_messages of a Claude
    turn) is read as OpenAI's; tool_use beside a tool message is to be split (the error
    listed the formats expected, each of which the messages seemed to fit)."""
    import vthread

    claude_turn = [{"role": "user", "content": "q"},
                   {"role": "assistant", "tool_calls": [
                       {"id": "c1", "type": "function",
                        "function": {"name": "f", "arguments": "{}"}}],
                    "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "res"}]
    with pytest.raises(ValueError, match=re.escape(
            '(messages[1] holds a thinking block, as Anthropic\'s messages do; messages[1] '
            'has "tool_calls", as OpenAI\'s do: format openai reads them')):
        vthread.describe_thread_cycle(claude_turn, format="auto")
    assert to_native(claude_turn, "openai")[1]["meta"]["media"] == claude_turn[1]["content"]
    mixed = [{"role": "assistant", "content": [
                 {"type": "tool_use", "id": "a", "name": "f", "input": {}}]},
             {"role": "tool", "tool_call_id": "a", "content": "res"}]
    with pytest.raises(ValueError, match=re.escape(
            '(messages[0] holds a tool_use block, as Anthropic\'s messages do; messages[1] '
            'has the role "tool", as OpenAI\'s do: the calls of one format are lost read as '
            "the other's: split them)")):
        vthread.describe_thread_cycle(mixed, format="auto")
