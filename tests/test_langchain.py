"""LangChain's messages (``format="langchain"``): each of its three dict forms read alike,
mapped as the adapters' table says, told from native and chat messages (the core's
detection is held to Python's by ``test_format_evidence``), and warned about when read as
native."""

from __future__ import annotations

import copy
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import langchain_messages

import vthread
from benchmarks.workload import generate_threads, to_langchain, to_openai
from tests.test_cli import records, run
from vthread.adapters import detect_format, from_langchain, to_native

AGENT_RUN: list[dict[str, Any]] = [
    {"type": "system", "content": "Be brief."},
    {"type": "human", "content": [{"type": "text", "text": "Is job 7 done?"},
                                  {"type": "image", "url": "https://a.example/7.png"}]},
    {"type": "ai", "content": [{"type": "reasoning", "reasoning": "Ask the job system."},
                               {"type": "text", "text": "Checking."},
                               {"type": "tool_call", "name": "status", "args": {"job": 7},
                                "id": "c0"}],
     "tool_calls": [{"name": "status", "args": {"job": 7}, "id": "c0", "type": "tool_call"}],
     "invalid_tool_calls": [{"name": None, "args": '{"job": ', "id": "c1",
                             "error": "unterminated", "type": "invalid_tool_call"}],
     "usage_metadata": {"input_tokens": 90, "output_tokens": 12, "total_tokens": 102}},
    {"type": "tool", "content": '{"state": "pending"}', "tool_call_id": "c0",
     "status": "error"},
    {"type": "AIMessageChunk", "content": "Still pending.",
     "response_metadata": {"token_usage": {"completion_tokens": 4}}},
    {"type": "chat", "role": "critic", "content": "Stop polling."},
]


def _request(name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": name, "arguments": arguments}}}}


def test_messages_map_as_the_table_says() -> None:
    """Each kind of message, its content blocks, calls, results and usage where LangChain
    keeps them, against the native messages written out by hand."""
    assert from_langchain(AGENT_RUN) == [
        {"type": "system", "text": "Be brief."},
        {"type": "user", "text": "Is job 7 done?",
         "meta": {"media": [{"type": "image", "url": "https://a.example/7.png"}]}},
        {"type": "reasoning", "text": "Ask the job system.", "usage": {"tokens": 12}},
        {"type": "bot", "text": "Checking."},
        _request("status", {"job": 7}),
        _request("", '{"job": '),  # (a call the model wrote unreadably: its raw text)
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "is_error": True,
            "function": {"name": "status", "arguments": {"job": 7},
                         "result": {"state": "pending"}}}}},
        {"type": "bot", "text": "Still pending.", "usage": {"tokens": 4}},
        {"type": "critic", "text": "Stop polling."},
    ]
    assert detect_format(AGENT_RUN[:5]) == "langchain"
    # What providers write besides: Gemini's legacy function_call beside the same call in
    # tool_calls, OpenAI's function_call and a server tool's blocks in the content (ids of
    # their own each time), OpenAI's reasoning item: read once, dropped, read.
    gemini = {"type": "ai", "content": "", "tool_calls": [
        {"name": "status", "args": {"job": 7}, "id": "c9"}], "additional_kwargs": {
        "function_call": {"name": "status", "arguments": '{"job": 7}'}}}
    blocks = {"type": "ai", "content": [
        {"type": "function_call", "name": "status", "arguments": "{}", "call_id": "c8"},
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": 1}},
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []},
        {"type": "text", "text": "Done."}], "tool_calls": [],
        "additional_kwargs": {"reasoning": {"type": "reasoning", "id": "rs_1", "summary": [
            {"type": "summary_text", "text": "Look."}]}}}
    legacy = {"type": "ai", "content": "", "additional_kwargs": {
        "function_call": {"name": "ls", "arguments": "{}"}}}
    remove = {"type": "remove", "content": "", "id": "m1"}
    assert from_langchain([gemini, blocks, legacy, remove]) == [
        _request("status", {"job": 7}), {"type": "reasoning", "text": "Look."},
        {"type": "bot", "text": "Done."}, _request("ls", {}), {"type": "remove", "text": ""}]
    assert detect_format([AGENT_RUN[0], remove]) == "langchain"
    # A call the model wrote unreadably, and Gemini's legacy copy of it: read once.
    unreadable = {"type": "ai", "content": "", "tool_calls": [], "invalid_tool_calls": [
        {"name": "ls", "args": "{bad", "id": "x"}], "additional_kwargs": {
        "function_call": {"name": "ls", "arguments": "{bad"}}}
    assert from_langchain([unreadable]) == [_request("ls", "{bad")]


def test_every_langchain_type_is_told_alike_by_python_and_the_core() -> None:
    """Each type of :data:`LANGCHAIN_TYPES` tells a thread is LangChain's in Python and in
    the core (whose list is its own), and the message types are the adapter's."""
    from vthread import _core, _langchain, adapters

    assert adapters._LANGCHAIN_KINDS | set(adapters._LANGCHAIN_CHUNKS) == \
        _langchain.LANGCHAIN_MESSAGE_TYPES
    for kind in sorted(adapters.LANGCHAIN_TYPES):
        thread = [{"type": kind, "content": "x"}]
        assert adapters.format_evidence(thread) == ("langchain", True), kind
        assert _core.line_format_evidence(json.dumps(thread).encode(), None) == (
            True, ("langchain", True)), kind
    # A "chat" message carries a role of its own beside its type (ChatMessage's fields): a
    # thread holding one is LangChain's, in Python and in the core (it was told no format,
    # and read only when the format was named); a role on another type is no LangChain
    # message's.
    assert AGENT_RUN[-1]["type"] == "chat" and "role" in AGENT_RUN[-1]
    for thread in (AGENT_RUN, [AGENT_RUN[-1]], [dict(AGENT_RUN[-1], type="ChatMessageChunk")]):
        assert detect_format(thread) == "langchain"
        assert adapters.langchain_s(thread)
        assert _core.line_format_evidence(json.dumps(thread).encode(), None) == (
            True, ("langchain", True))
    roled = [{"type": "human", "role": "user", "content": "x"}]
    assert detect_format(roled) != "langchain" and not adapters.langchain_s(roled)
    assert _core.line_format_evidence(json.dumps(roled).encode(), None)[1][0] != "langchain"


CLASSES = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage",
           "system": "SystemMessage", "function": "FunctionMessage", "chat": "ChatMessage",
           "AIMessageChunk": "AIMessageChunk"}


def _forms(message: Any) -> list[Any]:
    """``message`` in each of LangChain's dict forms (``dumpd``'s with and without the
    type among its fields, which its class then names)."""
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        return [message]
    kind = message["type"]
    forms = [message, {"type": kind, "data": message},
             {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "X"],
              "kwargs": message}]
    if kind in CLASSES:
        forms.append({"lc": 1, "type": "constructor", "id": ["langchain", CLASSES[kind]],
                      "kwargs": {k: v for k, v in message.items() if k != "type"}})
    return forms


def _native_or_error(messages: Any) -> Any:
    try:
        return to_native(messages, "langchain")
    except (TypeError, ValueError) as error:
        return type(error), str(error)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(langchain_messages(forms=False), max_size=6),
       st.randoms(use_true_random=False))
def test_the_three_dict_forms_read_alike_and_nothing_is_mutated(
        plain: list[Any], random: Any) -> None:
    """A thread whose messages are each in any of the three forms reads as the thread of
    their fields (the same native messages, or the same error); the input is untouched."""
    expected = _native_or_error(plain)
    mixed = [random.choice(_forms(m)) for m in plain]
    before = copy.deepcopy(mixed)
    assert _native_or_error(mixed) == expected
    assert mixed == before or mixed != mixed  # (NaN is unequal to itself)


def test_generated_runs_read_as_their_native_and_openai_forms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workload's runs as LangChain messages: detected, and read as the same runs in
    OpenAI's chat format are (verdicts, loops in source messages, excerpts), through the
    API and the command line."""
    threads = generate_threads(200, seed=5)
    langchain = [to_langchain(thread) for thread in threads]
    openai = [to_openai(thread) for thread in threads]
    assert {detect_format(t) for t in langchain if t} == {"langchain"}
    for name, runs in (("lc", langchain), ("oa", openai)):
        (tmp_path / f"{name}.jsonl").write_text(
            "".join(json.dumps({"id": i, "messages": r}) + "\n" for i, r in enumerate(runs)))
    code, out, err = run(["scan", str(tmp_path / "lc.jsonl")], monkeypatch)
    assert code == 0 and "langchain (detected" in err
    _, expected, _ = run(["scan", str(tmp_path / "oa.jsonl"), "-q"], monkeypatch)
    drop = ("file",)
    got = [{k: v for k, v in r.items() if k not in drop} for r in records(out)]
    assert got == [{k: v for k, v in r.items() if k not in drop} for r in records(expected)]
    assert sum(r["verdict"] is not None for r in got) > 10
    _, given_out, _ = run(["scan", str(tmp_path / "lc.jsonl"), "-q", "--format", "langchain",
                           "--jobs", "2"], monkeypatch)
    assert given_out == out.split(b"\n", 0)[0] or records(given_out) == records(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = vthread.scan(langchain, format="auto")
    assert result.names == [r["verdict"] for r in got]
    assert [vthread.describe_thread_cycle(t, format="langchain") for t in langchain[:50]] == \
        result.names[:50]


def test_read_as_native_they_are_warned_about(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Passed as native (the API's default) or read so by --format native, LangChain's
    messages are all alike and every run a loop: the warning names them and the format to
    pass, in every dict form (``messages_to_dict``'s was read in silence)."""
    run_ = [message for i in range(3) for message in (
        {"type": "human", "content": f"Is job {i} done?"},
        {"type": "ai", "content": f"Job {i} is done.", "tool_calls": []})]
    for form in (run_, [{"type": m["type"], "data": m} for m in run_]):
        with pytest.warns(UserWarning, match="messages are LangChain's: read as native ones, "
                                             'they are alike .*pass format="auto"'):
            assert vthread.describe_thread_cycle(form) == "repeated_suffix"
        assert vthread.describe_thread_cycle(form, format="auto") is None
    path = tmp_path / "lc.jsonl"
    path.write_text("".join(json.dumps(run_) + "\n" for _ in range(3)))
    code, out, err = run(["scan", str(path), "-q", "--format", "native"], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == ["repeated_suffix"] * 3
    assert "--format native was given, but lines 1, 2, 3 of the first 3 look like " \
        "langchain" in err


def test_bad_messages_are_named() -> None:
    """What is wrong, and in which message."""
    for messages, error in (
            ([{"content": "x"}], "message 0 has no type"),
            ([{"type": "human", "content": "x"}, {"type": 3, "content": "y"}],
             "message 1: type must be a string"),
            ([{"type": "ai", "content": "", "tool_calls": {"name": "ls"}}],
             "message 0: tool_calls must be a list"),
            ([{"type": "ai", "content": "", "tool_calls": [{"args": {}}]}],
             "message 0: tool_calls[0] name must be a string"),
            ([{"type": "human", "content": 3}], "message 0: content must be a string"),
            ([{"type": "chat", "content": "x"}], "message 0 has no role"),
            # Another format's typed messages (read so, every one would be an empty text)
            ([{"type": "user", "text": "x"}], "message 0: type 'user' is no LangChain "
                                              "message's (is the thread in another format?)"),
            # Another object LangChain serialised, or a serialisation without its fields
            ([{"lc": 1, "type": "constructor", "id": ["langchain", "Document"],
               "kwargs": {"page_content": "x"}}],
             'message 0: a Document serialised by LangChain ("type": "constructor"), not a '
             "message"),
            ([{"lc": 1, "type": "constructor", "id": ["x", "AIMessage"], "kwargs": None}],
             "message 0: an AIMessage serialised"),
            ([{"lc": 1, "type": "constructor", "id": []}], "message 0: an object serialised")):
        with pytest.raises(ValueError, match=re.escape(error)):
            from_langchain(messages)
    with pytest.raises(TypeError, match="message 0 is not an object"):
        from_langchain(["hi"])  # type: ignore[list-item]


def test_a_plain_chat_and_langchain_s_messages_are_different_formats() -> None:
    """A plain chat fits every chat format, but not LangChain's typed messages: a batch of
    both is named as two formats, not read as LangChain's (the chat would be an error)."""
    batch = [[{"role": "user", "content": "hi"}], [{"type": "human", "content": "hi"}]]
    with pytest.raises(ValueError, match=r"different formats \(langchain at thread 1; "
                                         r"openai at thread 0\)"):
        vthread.scan(batch, format="auto")


class _Message:
    """A LangChain message object as a harness holds it (a pydantic model's surface: a
    string ``type`` and ``model_dump()``)."""

    type = "ai"

    def __init__(self, content: str, tool_calls: list[dict[str, Any]] | None = None) -> None:
        self.content, self.tool_calls = content, tool_calls or []

    def model_dump(self) -> dict[str, Any]:
        return {"type": self.type, "content": self.content, "tool_calls": self.tool_calls}


class _Human(_Message):
    type = "human"


def test_a_harness_s_message_objects_are_read_as_their_fields() -> None:
    """A LangGraph harness's ``state["messages"]`` (message objects, not dicts) read with
    ``format="langchain"`` as their ``model_dump()``; elsewhere they are an error that says
    so, in Python's checks and the core's alike."""
    polling = [_Human("Is job 7 done?"), *(
        _Message("", [{"name": "status", "args": {"job": 7}, "id": f"c{i}"}])
        for i in range(4))]
    dumped = [message.model_dump() for message in polling]
    assert to_native(polling, "langchain") == to_native(dumped, "langchain")
    assert vthread.describe_thread_cycle(polling, format="langchain") == "repeated_suffix"
    assert vthread.scan([polling], format="langchain").names == ["repeated_suffix"]
    hint = (" (a LangChain message object: pass each one's model_dump(); "
            'describe_thread_cycle and scan read the objects with format="langchain")')
    with pytest.raises(TypeError, match=re.escape(f"messages[0] must be a mapping, got "
                                                  f"_Human{hint}")):
        vthread.describe_thread_cycle(polling)  # (Python's check)
    with pytest.raises(TypeError, match=re.escape(f"thread 0: messages[0] must be a mapping, "
                                                  f"got _Human{hint}")):
        vthread.scan([polling])  # (the core's)
    with pytest.raises(TypeError, match=re.escape("got _Human" + hint)):
        vthread.build_thread(polling, max_tokens=100, format="langchain")
    # A run object holding them, read in a chat format: named too.
    for format_ in ("openai", "native"):
        with pytest.raises((TypeError, ValueError), match=re.escape(hint)):
            vthread.scan([{"messages": polling}], format=format_)
    # An object of another library (a pydantic model of native fields, whose type is no
    # LangChain message's): named with the model's own hint, by Python and by the core.
    class Native:
        type = "user"

        def model_dump(self) -> dict[str, Any]:
            return {"type": self.type, "text": "hi"}

    model = re.escape(" (a pydantic model, an SDK's object: pass its model_dump())") + "$"
    for odd in (Native(),):
        with pytest.raises(TypeError, match=r"^messages\[0\] must be a mapping, got Native"
                                            + model):
            vthread.describe_thread_cycle([odd])
        with pytest.raises(TypeError, match=r"must be a mapping, got Native" + model):
            vthread.scan([[odd]])
    # Another object is named as ever, with no such hint, one whose attributes raise too.
    class Raising:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError(name)

    for odd in (object(), Raising()):
        name = type(odd).__name__
        with pytest.raises(TypeError, match=rf"^messages\[0\] must be a mapping, got {name}$"):
            vthread.describe_thread_cycle([odd])
        with pytest.raises(TypeError, match=rf"^thread 0: messages\[0\] must be a mapping, "
                                            rf"got {name}$"):
            vthread.scan([[odd]])


def test_calls_kept_where_langchain_kept_them_before_tool_calls_are_read() -> None:
    """An ``ai`` message written before LangChain had ``tool_calls`` keeps the provider's
    calls in ``additional_kwargs.tool_calls`` (OpenAI's shape), which LangChain's loader
    reads as its calls when the message has none of its own: read so in each dict form, the
    three reads of different files are no loop (their calls were lost, each reply answering
    a call of no name, and the turns alike: a false loop). A call with no ``function`` is
    passed over, as the loader passes it over; the message's own calls win, and so do they
    over the legacy ``function_call``."""
    def ai(index: int, path: str) -> dict[str, Any]:
        return {"type": "ai", "content": "", "additional_kwargs": {"tool_calls": [
            {"id": f"c{index}", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": path})}},
            {"id": "x", "type": "custom"}]}}

    fields = [{"type": "human", "content": "Read a.py, b.py and c.py."}]
    for index, path in enumerate(["a.py", "b.py", "c.py", "d.py"]):
        fields += [ai(index, path), {"type": "tool", "content": "ok",
                                     "tool_call_id": f"c{index}"}]
    native = from_langchain(fields)
    assert [m["meta"]["activity"]["function"] for m in native[1:3]] == [
        {"name": "read_file", "arguments": {"path": "a.py"}},
        {"name": "read_file", "arguments": {"path": "a.py"}, "result": "ok"}]
    wrapped = [{"type": message["type"], "data": message} for message in fields]
    for form in (fields, wrapped):
        assert from_langchain(form) == native
        assert vthread.describe_thread_cycle(form, format="auto") is None
        assert vthread.scan([form], format="auto").record(0)["verdict"] is None
    # The same calls written alike loop, as their own tool_calls would.
    alike = [fields[0]] + [dict(m, **({"additional_kwargs": ai(0, "a.py")["additional_kwargs"]}
                                      if m["type"] == "ai" else {"tool_call_id": "c0"}))
                           for m in fields[1:]]
    assert vthread.describe_thread_cycle(alike, format="langchain") is not None
    own = {"type": "ai", "content": "", "tool_calls": [
        {"name": "ls", "args": {}, "id": "c9", "type": "tool_call"}],
        "additional_kwargs": {**ai(9, "z")["additional_kwargs"],
                              "function_call": {"name": "old", "arguments": "{}"}}}
    assert [m["meta"]["activity"]["function"]["name"] for m in from_langchain([own])] == ["ls"]
    legacy = {"type": "ai", "content": "", "additional_kwargs": {
        "tool_calls": [{"id": "c8", "type": "function",
                        "function": {"name": "grep", "arguments": "{}"}}],
        "function_call": {"name": "grep", "arguments": "{}"}}}
    assert len(from_langchain([legacy])) == 1


def test_bedrock_reasoning_blocks_are_reasoning() -> None:
    """Bedrock Converse's ``reasoning_content`` block (its text under
    ``reasoning_content.text``, as ``ChatBedrockConverse`` writes it) is a reasoning message,
    as LangChain's own ``content_blocks`` reads it: turns whose reasoning differs are told
    apart (the block was dropped, and such turns with the same text a false loop)."""
    def turn(plan: str) -> dict[str, Any]:
        return {"type": "ai", "content": [
            {"type": "reasoning_content",
             "reasoning_content": {"text": plan, "signature": "s"}},
            {"type": "text", "text": "Working."}]}

    assert from_langchain([turn("plan A")]) == [{"type": "reasoning", "text": "plan A"},
                                                {"type": "bot", "text": "Working."}]
    thread = [{"type": "human", "content": "Go."}] + [turn(f"plan {n}") for n in "ABCDEF"]
    assert vthread.describe_thread_cycle(thread, format="langchain") is None
    assert vthread.describe_thread_cycle(thread[:1] + [turn("plan A")] * 6,
                                         format="langchain") is not None
