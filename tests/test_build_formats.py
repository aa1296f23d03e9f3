"""build_thread over chat messages (format=): chosen as their translation reads, returned as
the caller's own messages."""

from __future__ import annotations

import json
import warnings
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vthread
from benchmarks.workload import (
    generate_threads,
    to_anthropic,
    to_langchain,
    to_openai,
    to_responses,
)

WORKLOAD = [to_openai(thread) for thread in generate_threads(40, seed=8)]


def _estimate(message: Any) -> float:
    return len(json.dumps(message)) % 40 + 1


def _openai_start(thread: list[dict[str, Any]], budget: float, keep_system: bool,
                  pair_safe: bool, start_on: str | None) -> tuple[int, int | None]:
    """The twin, read from the OpenAI messages themselves: (leading system messages kept,
    start of the kept suffix, None when the system messages alone are over the budget),
    trying every start."""
    head = 0
    while keep_system and head < len(thread) and thread[head]["role"] in ("system",
                                                                          "developer"):
        head += 1
    budget -= sum(_estimate(m) for m in thread[:head])
    if budget < 0:
        return head, None
    calls: dict[str, int] = {}
    pairs = []
    orphans = set()  # replies whose call is not in the thread (cut off before it)
    for index, message in enumerate(thread):
        for call in message.get("tool_calls") or []:
            calls[call["id"]] = index
        if message["role"] == "tool":
            if message["tool_call_id"] in calls:
                pairs.append((calls[message["tool_call_id"]], index))
            else:
                orphans.add(index)

    def allowed(k: int) -> bool:
        if k == len(thread):
            return True
        if pair_safe and (k in orphans or any(a < k <= b for a, b in pairs)):
            return False
        return start_on is None or thread[k]["role"] == start_on

    fitting = [k for k in range(head, len(thread) + 1)  # len(thread): nothing kept fits
               if allowed(k) and sum(_estimate(m) for m in thread[k:]) <= budget]
    return head, min(fitting)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(WORKLOAD), st.one_of(st.just(1), st.integers(0, 400)),  # 1: below
       st.booleans(), st.booleans(),                       # the system message's 2 tokens
       st.sampled_from([None, "user"]), st.integers(0, 30))
def test_openai_messages_are_chosen_as_the_chat_reads(
        thread: list[dict[str, Any]], budget: int, keep_system: bool, pair_safe: bool,
        start_on: str | None, cut: int) -> None:
    """Equal to the twin that reads roles and tool_call ids itself: system messages kept
    first, no call split from its reply, the suffix starting at a user turn; the result is
    copies of the caller's messages, no usage added, the caller's untouched."""
    thread = thread[cut:]
    if keep_system:
        thread = [{"role": "system", "content": "Be brief."}, *thread]
    before = json.dumps(thread)
    head, start = _openai_start(thread, budget, keep_system, pair_safe, start_on)
    if start is None:
        with pytest.raises(ValueError, match="leading system message"):
            vthread.build_thread(thread, max_tokens=budget, estimate=_estimate,
                                 keep_system=keep_system, format="openai")
        return
    # An OpenAI user message is a native "user" turn (start_on names the translated type).
    got = vthread.build_thread(thread, max_tokens=budget, estimate=_estimate,
                               keep_system=keep_system, pair_safe=pair_safe,
                               start_on=start_on, format="openai")
    assert got.messages == thread[:head] + thread[start:]
    assert got.tokens == sum(_estimate(m) for m in got.messages)
    assert all("usage" not in m for m in got.messages)
    assert json.dumps(thread) == before


def test_anthropic_tool_results_are_replies_not_user_turns() -> None:
    """An Anthropic user turn holding only tool results is a reply: the kept messages never
    start at it (with pair_safe, or start_on="user"), where read as native they would."""
    run = [{"role": "user", "content": "hi"},
           {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls",
                                              "input": {}}]},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                         "content": "a"}]},
           {"role": "assistant", "content": "done"}]
    keywords: dict[str, Any] = {"max_tokens": 25, "estimate": lambda m: 10}
    assert vthread.build_thread(run, pair_safe=True, format="anthropic",
                                **keywords).messages == run[3:]
    assert vthread.build_thread(run, pair_safe=True, format="auto",
                                **keywords).messages == run[3:]
    assert vthread.build_thread(run, start_on="user", format="anthropic",
                                max_tokens=35, estimate=lambda m: 10).messages == []
    assert vthread.build_thread(run, start_on="user", format="anthropic",
                                max_tokens=40, estimate=lambda m: 10).messages == run
    with pytest.warns(UserWarning,
                      match="they lose their system messages, turns and tool pairs") as caught:
        as_native = vthread.build_thread(run, pair_safe=True, **keywords)
    assert [w.filename for w in caught] == [__file__]
    assert [m["role"] for m in as_native.messages] == ["user", "assistant"]  # the orphan


def test_chat_system_messages_are_kept_and_native_ones_unchanged() -> None:
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"}, {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "4"}]
    got = vthread.build_thread(chat, max_tokens=25, estimate=lambda m: 10, keep_system=True,
                               format="openai")
    assert got.messages == [chat[0], chat[4]] and got.tokens == 20
    native = [{"type": "system", "text": "S"}, {"type": "user", "text": "q"}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (vthread.build_thread(native, max_tokens=25, estimate=lambda m: 10,
                                     keep_system=True, format="auto")
                == vthread.build_thread(native, max_tokens=25, estimate=lambda m: 10,
                                        keep_system=True))
    with pytest.raises(ValueError, match=r"^openai format: message 0: content must be"):
        vthread.build_thread([{"role": "user", "content": 7}], max_tokens=5,
                             estimate=lambda m: 1, format="openai")
    with pytest.raises(ValueError, match="format must be 'auto' or one of native"):
        vthread.build_thread(chat, max_tokens=5, estimate=lambda m: 1, format="xml")
    anthropic = to_anthropic(generate_threads(1, seed=2)[0])
    assert vthread.build_thread(anthropic, max_tokens=10**9, estimate=lambda m: 1,
                                format="anthropic").messages == anthropic


def test_a_trimmed_chat_message_keeps_no_usage() -> None:
    """inclusive=trim on chat messages: the trim function gets the message with the tokens it
    was counted at, returns its trimmed copy with its usage (as for native ones), and the
    result holds that copy without it; the total counts it."""
    chat = [{"role": "user", "content": "a long question " * 5},
            {"role": "assistant", "content": "the answer"}]
    seen: list[Any] = []

    def trim(message: dict[str, Any], room: float) -> dict[str, Any]:
        seen.append(message)
        return {**message, "content": "a long…", "usage": {"tokens": room}}

    got = vthread.build_thread(chat, max_tokens=15, estimate=lambda m: 10, inclusive=trim,
                               format="openai")
    assert seen == [{**chat[0], "usage": {"tokens": 10.0}}]
    assert got.messages == [{"role": "user", "content": "a long…"}, chat[1]]
    assert got.tokens == 15


def _tool_turns(format_: str, turns: int, size: int) -> list[dict[str, Any]]:
    """A task, then ``turns`` tool calls each answered by a result of ``size`` characters."""
    chat: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    for i in range(turns):
        if format_ == "openai":
            chat += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{i}", "type": "function",
                          "function": {"name": "cat", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": "y" * size}]
        else:
            chat += [{"role": "assistant", "content": [
                         {"type": "tool_use", "id": f"c{i}", "name": "cat", "input": {}}]},
                     {"role": "user", "content": [
                         {"type": "tool_result", "tool_use_id": f"c{i}", "content": "y" * size}]}]
    return chat


def _chat_text(message: Any) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(block.get("content", "") for block in content)
    return content or ""


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
@pytest.mark.parametrize("pair_safe", [False, True])
def test_a_chat_message_trimmed_as_an_api_writes_it_costs_its_estimate(
        format_: str, pair_safe: bool) -> None:
    """A trim function that writes the trimmed message as the API has it, built anew without
    vthread's usage, or copied with the usage it was shown (the cost before trimming): the
    trimmed message costs what the estimator says of it (capped at the room), as any chat
    message without its own tokens does; it was a ValueError ("returned no usage"), or the
    whole room. The result holds no usage the caller's message had not."""
    chat = _tool_turns(format_, 3, 400)

    def estimate(message: Any) -> float:
        assert "usage" not in message  # (the trimmed message as the result holds it)
        return len(_chat_text(message)) / 4 + 5

    def anew(message: dict[str, Any], room: float) -> dict[str, Any]:
        keep = int(room * 4) - 40
        if format_ == "openai":
            return {"role": "tool", "tool_call_id": message["tool_call_id"],
                    "content": message["content"][:keep]}
        block = message["content"][0]
        return {"role": "user", "content": [{**block, "content": block["content"][:keep]}]}

    def copied(message: dict[str, Any], room: float) -> dict[str, Any]:
        return {**anew(message, room), "usage": message["usage"]}

    for trim in (anew, copied):
        got = vthread.build_thread(chat, max_tokens=150, estimate=estimate, format=format_,
                                   pair_safe=pair_safe, inclusive=trim)
        assert all("usage" not in message for message in got.messages)
        trimmed = [m for m in got.messages if 0 < len(_chat_text(m)) < 400]
        assert len(trimmed) == 1
        assert got.tokens == sum(len(_chat_text(m)) / 4 + 5 for m in got.messages) <= 150


def test_a_trimmed_chat_message_s_usage_is_told_by_its_value() -> None:
    """Whether a trim function set the trimmed message's cost is told by the usage's value,
    not by which object holds it: a deep copy keeping the usage it was shown costs its
    estimate, as a shallow one does (it cost the whole room), and a figure set in the very
    usage it was shown is its cost (it was taken for the shown one). An estimate that is no
    function says it was needed for the trimmed message."""
    import copy

    chat = [{"role": "user", "content": "x" * 100}, {"role": "assistant", "content": "y" * 100},
            {"role": "user", "content": "z" * 10}]

    def estimate(message: Any) -> float:
        return len(message["content"])

    def shallow(message: dict[str, Any], room: float) -> dict[str, Any]:
        return {**message, "content": message["content"][:20]}

    def deep(message: dict[str, Any], room: float) -> dict[str, Any]:
        message = copy.deepcopy(message)
        message["content"] = message["content"][:20]
        return message

    def set_in_place(message: dict[str, Any], room: float) -> dict[str, Any]:
        message["content"] = message["content"][:20]
        message["usage"]["tokens"] = 7
        return message

    for trim, tokens in ((shallow, 130), (deep, 130), (set_in_place, 117)):
        got = vthread.build_thread(chat, max_tokens=150, estimate=estimate, inclusive=trim,
                                   format="openai")
        assert got.tokens == tokens, trim.__name__
        assert [len(m["content"]) for m in got.messages] == [20, 100, 10]
        assert all("usage" not in m for m in got.messages)
    own = [{**m, "usage": {"tokens": 100}} for m in chat]
    with pytest.raises(TypeError, match=r"needed for messages\[1\], to cost its trimmed "):
        vthread.build_thread(own, max_tokens=150, estimate=5,  # type: ignore[arg-type]
                             inclusive=shallow, format="openai")


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_a_trimmed_chat_message_keeps_the_callers_own_usage(format_: str) -> None:
    """A chat message carrying its own usage (a provider's, as recorded), trimmed: the result
    holds that usage as it was, whatever the trim function returned under the key (it held
    vthread's {"tokens": n} in its place); a figure the trim function set is its cost, a
    trimmed message without one and no estimate costs the room."""
    own = ({"prompt_tokens": 5000, "completion_tokens": 100} if format_ == "openai"
           else {"input_tokens": 5000, "output_tokens": 100})
    chat = [{"role": "user", "content": "task"},
            {"role": "assistant", "content": "x" * 400, "usage": own},
            {"role": "user", "content": "more"}]

    def copied(message: dict[str, Any], room: float) -> dict[str, Any]:
        return {**message, "content": message["content"][:10]}

    def stated(message: dict[str, Any], room: float) -> dict[str, Any]:
        return {"role": "assistant", "content": "x", "usage": {"tokens": 7}}

    for trim, estimate, tokens in ((copied, lambda m: 5, 5 + 5), (stated, lambda m: 5, 7 + 5),
                                   (copied, None, 50)):
        if estimate is None:  # (each message then carries its own figure)
            chat[0]["usage"] = chat[2]["usage"] = {"tokens": 5}
        got = vthread.build_thread(chat, max_tokens=50, estimate=estimate, format=format_,
                                   inclusive=trim)
        assert [m.get("usage") for m in got.messages] == [own, chat[2].get("usage")]
        assert got.tokens == tokens and got.messages[0]["content"] in ("x" * 10, "x")
    assert chat[1]["usage"] is own and own.get("tokens") is None  # (nothing written in)


def test_a_built_in_tool_s_output_is_kept_with_its_call_however_it_names_it() -> None:
    """pair_safe keeps a built-in tool's output with its call: a local shell's output,
    which names its call by its ``id`` (no ``call_id``), and a tool search's output, whose
    type ends in ``_output`` alone (each was kept without its call at some budget)."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "go"}]
    for i in range(3):
        items += [{"type": "local_shell_call", "id": f"lsh_{i}", "call_id": f"c{i}",
                   "action": {"type": "exec", "command": ["ls", str(i)]}},
                  {"type": "local_shell_call_output", "id": f"c{i}", "output": "x" * 50},
                  {"type": "tool_search_call", "id": f"ts_{i}", "call_id": f"t{i}",
                   "arguments": {"q": str(i)}},
                  {"type": "tool_search_output", "id": f"tso_{i}", "call_id": f"t{i}",
                   "tools": [{"name": "y" * 40}]}]
    calls = {"local_shell_call_output": "local_shell_call",
             "tool_search_output": "tool_search_call"}
    for budget in range(0, 400, 3):
        kept = vthread.build_thread(items, max_tokens=budget, format="responses",
                                    pair_safe=True,
                                    estimate=lambda m: len(json.dumps(m)) / 8).messages
        for position, message in enumerate(kept):
            if message["type"] in calls:
                assert position > 0 and kept[position - 1]["type"] == calls[message["type"]], (
                    budget, [m["type"] for m in kept])


def test_chat_roles_recorded_tokens_and_reasoning_are_read_as_the_chat_means_them() -> None:
    """In a chat format, start_on may name a role ("assistant"), and one no chat message
    can match is an error, not an empty result; a message's tokens are those vthread scan
    reads from its translation (an OpenAI usage's completion tokens), the estimate only for
    the rest; a Responses call is kept with the reasoning item that made it."""
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": "a",
             "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}}]
    got = vthread.build_thread(chat, max_tokens=100, estimate=lambda m: 1, format="openai",
                               start_on="assistant")
    assert got.messages == [chat[2]] and got.tokens == 7
    assert vthread.build_thread(chat, max_tokens=100, estimate=lambda m: 1,
                                format="openai").tokens == 9
    with pytest.raises(ValueError, match="start_on='human' matches no chat message"):
        vthread.build_thread(chat, max_tokens=100, estimate=lambda m: 1, format="openai",
                             start_on="human")
    items = [{"type": "message", "role": "system", "content": "sys"},
             {"role": "user", "content": "q"},
             {"type": "reasoning", "id": "rs_1", "summary": []},
             {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
              "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "x"},
             {"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "done"}]}]
    for budget, kept in ((4, [items[0], items[5]]), (5, [items[0], *items[2:]])):
        assert vthread.build_thread(items, max_tokens=budget, estimate=lambda m: 1,
                                    format="responses", pair_safe=True,
                                    keep_system=True).messages == kept


_LANGCHAIN_TYPE = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}


@pytest.mark.parametrize("start_on", ["assistant", "tool", "user", "bot", "system"])
def test_a_role_names_the_same_messages_in_every_chat_format(start_on: str) -> None:
    """start_on naming a role ("assistant", "tool") keeps the messages in LangChain's forms
    (a message's role its type's), given or detected, that it keeps of the same conversation
    in OpenAI chat; in Responses items (a call's role the assistant's, an output's the
    tool's) the kept part opens at the first item of that role. Read by their own "role"
    alone, LangChain's messages and Responses calls matched no role: the result was empty,
    with no error."""
    from vthread.adapters import chat_role

    for thread in generate_threads(12, seed=8):
        chat = [{key: value for key, value in message.items() if key != "usage"}
                for message in to_openai(thread)]
        langchain = to_langchain(thread)
        wrapped = [{"type": message["type"], "data": message} for message in langchain]
        for budget in (5, 20, 10**6):
            expected = vthread.build_thread(chat, max_tokens=budget, estimate=lambda m: 1,
                                            start_on=start_on, format="openai").messages
            types = [_LANGCHAIN_TYPE[message["role"]] for message in expected]
            for messages, format_ in ((langchain, "langchain"), (langchain, "auto"),
                                      (wrapped, "langchain")):
                got = vthread.build_thread(messages, max_tokens=budget, estimate=lambda m: 1,
                                           start_on=start_on, format=format_).messages
                assert [m["type"] for m in got] == types, (start_on, budget, format_)
        if any(message["role"] == start_on for message in chat):
            assert expected, start_on  # (a kept part, which was empty for LangChain's)
            items = to_responses(thread)
            first = next(index for index, item in enumerate(items)
                         if chat_role(item, "responses") == start_on)
            for format_ in ("responses", "auto"):
                assert vthread.build_thread(items, max_tokens=10**6, estimate=lambda m: 1,
                                            start_on=start_on, format=format_
                                            ).messages == items[first:], format_


def test_keep_first_pins_chat_messages_and_a_pinned_call_keeps_its_reply() -> None:
    """keep_first counts the chat's own messages after its system ones; with pair_safe a
    pinned assistant call keeps the tool message that answers it."""
    chat = [{"role": "system", "content": "rules"},
            {"role": "user", "content": "the task"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a b c"},
            *[{"role": "assistant", "content": f"step {i}"} for i in range(6)]]
    got = vthread.build_thread(chat, max_tokens=5, estimate=lambda m: 1, format="openai",
                               keep_system=True, keep_first=1)
    assert got.messages == [chat[0], chat[1], *chat[-3:]] and got.tokens == 5
    got = vthread.build_thread(chat, max_tokens=6, estimate=lambda m: 1, format="openai",
                               keep_system=True, keep_first=2, pair_safe=True)
    assert got.messages == [*chat[:4], *chat[-2:]] and got.tokens == 6


def test_a_responses_call_keeps_its_reasoning_past_a_preamble_and_other_tools_pair() -> None:
    """Responses items: a function call is kept with the reasoning item nearest before it in
    the model's output, even with an assistant message (a preamble) between them (a start
    at the preamble or the call sent the call without its reasoning, which the API
    refuses); a computer_call or local_shell_call pairs with its output by call id (the
    output was kept without its call)."""
    items = [{"type": "message", "role": "user", "content": "task"},
             {"type": "reasoning", "id": "rs_1", "summary": []},
             {"type": "message", "id": "msg_1", "role": "assistant",
              "content": [{"type": "output_text", "text": "I'll check."}]},
             {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
              "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    for budget, kept in ((2, []), (3, []), (4, items[1:]), (5, items)):
        got = vthread.build_thread(items, max_tokens=budget, estimate=lambda m: 1,
                                   format="responses", pair_safe=True)
        assert got.messages == kept, budget
    # A preamble with no "type", as the API takes one, is a preamble too.
    untyped = [*items[:2], {"role": "assistant", "content": "I'll check."}, *items[3:]]
    for budget, kept in ((3, []), (4, untyped[1:])):
        got = vthread.build_thread(untyped, max_tokens=budget, estimate=lambda m: 1,
                                   format="responses", pair_safe=True)
        assert got.messages == kept, budget
    # A pinned reasoning item keeps the item it was followed by (the API refuses it alone).
    asked = [items[0], items[1], {**items[2], "id": "plan"},
             {"type": "message", "role": "user", "content": "more"},
             {"type": "message", "role": "user", "content": "go"}]
    for budget, kept in ((3, asked[:3]), (4, [*asked[:3], asked[4]])):
        got = vthread.build_thread(asked, max_tokens=budget, estimate=lambda m: 1,
                                   format="responses", pair_safe=True, keep_first=2)
        assert got.messages == kept, budget
    for kind in ("computer_call", "local_shell_call"):
        tools = [{"type": "message", "role": "user", "content": "go"},
                 {"type": kind, "id": "x1", "call_id": "k1", "action": {}},
                 {"type": f"{kind}_output", "call_id": "k1", "output": "done"},
                 {"type": "message", "role": "assistant",
                  "content": [{"type": "output_text", "text": "ok"}]}]
        for budget, kept in ((2, tools[3:]), (3, tools[1:])):
            got = vthread.build_thread(tools, max_tokens=budget, estimate=lambda m: 1,
                                       format="responses", pair_safe=True)
            assert got.messages == kept, (kind, budget)


@pytest.mark.parametrize("format_", ["anthropic", "responses"])
def test_openai_messages_under_another_providers_name_are_refused(format_: str) -> None:
    """OpenAI chat messages passed with the wrong provider's name are a ValueError naming the
    key that gives them away: read as Anthropic's (or Responses items), the tool result was
    kept without its call under pair_safe, silently."""
    chat = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "r", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "A" * 200},
            {"role": "assistant", "content": "done"}]
    with pytest.raises(ValueError, match=f"{format_} format: .* 1 has a 'tool_calls' key"):
        vthread.build_thread(chat, max_tokens=100, estimate=lambda m: 10.0, format=format_,
                             pair_safe=True)


@pytest.mark.parametrize("format", ["native", "openai"])
def test_a_run_object_is_refused_with_the_key_of_its_messages(format: str) -> None:
    """A run object given where its messages go (a JSONL line's object, a SWE-agent
    history's) is a TypeError naming the key to pass them by; the cycle functions take run
    objects, build_thread, whose result is messages, does not."""
    for key in ("messages", "history"):
        run = {"id": "r1", key: [{"role": "user", "content": "hi"}]}
        with pytest.raises(TypeError, match=rf"got dict \(a run object: pass its messages, "
                                            rf"run\['{key}'\]\)"):
            vthread.build_thread(run, max_tokens=10, estimate=lambda message: 1, format=format)
    with pytest.raises(TypeError, match=r"got dict$"):
        vthread.build_thread({"role": "user"}, max_tokens=10, estimate=lambda message: 1)


_CALLS_THEN_RESULT: Final = {
    "openai": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": "Let me think. " * 200, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "result " * 10},
        {"role": "user", "content": "go on"}],
    "anthropic": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me think. " * 200},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "result " * 10}]},
        {"role": "assistant", "content": "done"}],
    "native": [
        {"type": "user", "text": "task"},
        {"type": "activity", "text": "Let me think. " * 200, "meta": {"activity": {
            "type": "request", "id": "a", "function": {"name": "read", "arguments": {}}}}},
        {"type": "activity", "text": "result " * 10, "meta": {"activity": {
            "type": "response", "id": "a", "function": {"name": "read", "result": "r"}}}},
        {"type": "user", "text": "go on"}],
}


def _text_only(message: dict[str, Any], room: float) -> dict[str, Any]:
    """A text trimmer that rebuilds the message from its text, dropping its tool calls."""
    if "role" not in message:
        return {"type": "bot", "text": message["text"][:int(room)], "usage": {"tokens": room}}
    content = message["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return {"role": message["role"], "content": text[:int(room)]}


def _text_cut(message: dict[str, Any], room: float) -> dict[str, Any]:
    """A text trimmer that cuts the text and keeps the rest of the message."""
    if "role" not in message:
        return {**message, "text": message["text"][:int(room)], "usage": {"tokens": room}}
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": content[:int(room)]}
    return {**message, "content": [{**content[0], "text": content[0]["text"][:int(room)]},
                                   *content[1:]]}


@pytest.mark.parametrize("format_", sorted(_CALLS_THEN_RESULT))
def test_a_trim_that_drops_a_messages_calls_is_refused_with_pair_safe(format_: str) -> None:
    """With pair_safe, a trim function's copy of a call message that lost its calls (a text
    trimmer rebuilding the message) is a ValueError naming the message: its reply was kept
    without its call, a request a chat API refuses. A trim that cuts the text alone keeps
    the call with its reply; without pair_safe the copy is taken as it is."""
    thread = _CALLS_THEN_RESULT[format_]

    def estimate(message: dict[str, Any]) -> float:
        return len(json.dumps(message)) // 4

    keywords: dict[str, Any] = {"max_tokens": 150, "estimate": estimate, "format": format_}
    with pytest.raises(ValueError, match=r"copy of messages\[1\] holds other tool calls"):
        vthread.build_thread(thread, pair_safe=True, inclusive=_text_only, **keywords)
    kept = vthread.build_thread(thread, pair_safe=True, inclusive=_text_cut, **keywords)
    assert len(kept.messages) == 3
    assert [{k: v for k, v in m.items() if k != "usage"} for m in kept.messages[1:]] == [
        {k: v for k, v in m.items() if k != "usage"} for m in thread[2:]]
    assert {k: v for k, v in kept.messages[0].items() if k not in ("content", "text", "usage")
            } == {k: v for k, v in thread[1].items() if k not in ("content", "text")}
    loose = vthread.build_thread(thread, inclusive=_text_only, **keywords)
    assert len(loose.messages) == 3
    assert set(loose.messages[0]) in ({"role", "content"}, {"type", "text", "usage"})
    assert loose.messages[0].get("type", "bot") == "bot"


@pytest.mark.parametrize("format_", ["native", "openai"])
def test_a_trim_over_its_room_is_warned_of(format_: str) -> None:
    """A trim function whose copy of a chat message costs more than the room it was given
    (one that returns the message unchanged) is warned of at the caller's line, naming the
    message: it is counted at the room, so the result's tokens understate the thread (a
    10,000-token message was counted at 149 in silence). A native message's usage is
    capped as production caps it, in silence (production's own suite does it on purpose);
    a trim that cuts to the room draws no word."""
    text = "B" * 40_000
    big = ({"type": "activity", "text": text} if format_ == "native"
           else {"role": "tool", "tool_call_id": "c", "content": text})
    thread = [big, {"type": "user", "text": "q" * 200} if format_ == "native"
              else {"role": "user", "content": "q" * 200}]

    def estimate(message: dict[str, Any]) -> float:
        return len(message.get("text", message.get("content", ""))) // 4

    def cut(message: dict[str, Any], room: float) -> dict[str, Any]:
        key = "text" if format_ == "native" else "content"
        return {**message, key: message[key][:int(room) * 4], "usage": {"tokens": room}}

    keywords: dict[str, Any] = {"max_tokens": 200, "estimate": estimate, "format": format_}
    if format_ == "native":
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            kept = vthread.build_thread(thread, inclusive=lambda m, room: m, **keywords)
    else:
        with pytest.warns(UserWarning, match=r"copy of messages\[0\] costs 10000 tokens, "
                                             r"more than the room of 150") as said:
            kept = vthread.build_thread(thread, inclusive=lambda m, room: m, **keywords)
        assert said[0].filename == __file__
    assert kept.tokens == 200
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vthread.build_thread(thread, inclusive=cut, **keywords).tokens == 200


def test_a_trim_that_reorders_parallel_results_keeps_its_pairs() -> None:
    """A trim function that cuts a turn's parallel tool results and writes them in another
    order keeps every pair: it is taken, not refused (the check compared the calls and
    results in order)."""
    thread = [{"role": "user", "content": "task"},
              {"role": "assistant", "content": [
                  {"type": "tool_use", "id": "t1", "name": "a", "input": {}},
                  {"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
              {"role": "user", "content": [
                  {"type": "tool_result", "tool_use_id": "t1", "content": "x" * 2000},
                  {"type": "tool_result", "tool_use_id": "t2", "content": "y" * 2000}]}]

    def reversed_cut(message: dict[str, Any], room: float) -> dict[str, Any]:
        blocks = [{**block, "content": block["content"][:10]}
                  for block in reversed(message["content"])]
        return {"role": message["role"], "content": blocks}

    kept = vthread.build_thread(thread, max_tokens=300, format="anthropic", pair_safe=True,
                                inclusive=reversed_cut,
                                estimate=lambda m: len(json.dumps(m)) // 4)
    assert [m["role"] for m in kept.messages] == ["assistant", "user"]
    assert [b["tool_use_id"] for b in kept.messages[1]["content"]] == ["t2", "t1"]
