"""plan_continuation with a conversation history: fitted by build_thread into the room the
chosen mode leaves over, with build_thread's keywords; nothing changes without one."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_build_shapes import priced

from vthread import _reference
from vthread.continuation import plan_continuation


def _estimate(message: Any) -> float:
    return len(str(message.get("text", ""))) / 4 + 4


SHAPES = st.fixed_dictionaries({
    "keep_system": st.booleans(),
    "pair_safe": st.booleans(),
    "start_on": st.sampled_from([None, "user", "bot"]),
})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=priced(), shapes=SHAPES, draft_size=st.integers(10, 3000),
       context_tokens=st.integers(300, 2000))
def test_history_fills_the_spare_room_as_the_twin_fits_it(
        history: list[dict[str, Any]], shapes: dict[str, Any], draft_size: int,
        context_tokens: int) -> None:
    """The mode is the one chosen without the history; the history kept is what the
    independent twin of build_thread keeps in the spare room; the token sums add up."""
    draft = "<p>dog</p>\n" * (draft_size // 11)
    bare = plan_continuation(draft, "a page", context_tokens=context_tokens,
                             estimate=_estimate)
    try:
        plan = plan_continuation(draft, "a page", context_tokens=context_tokens,
                                 estimate=_estimate, history=history, **shapes)
    except ValueError as error:
        assert shapes["keep_system"] and "history:" in str(error)
        assert f"leaves {bare.reply_room - bare.needed:,} tokens" in str(error)
        with pytest.raises(ValueError):
            _reference.shaped_build(history, max_tokens=bare.reply_room - bare.needed,
                                    estimate=_estimate, **shapes)
        return
    assert plan.mode == bare.mode
    if bare.mode == "refuse" or not history:
        assert plan == bare
        return
    spare = bare.reply_room - bare.needed
    twin = _reference.shaped_build(history, max_tokens=spare, estimate=_estimate, **shapes)
    assert list(plan.messages[1:-1]) == twin.messages
    assert plan.messages[0] == bare.messages[0] and plan.messages[-1] == bare.messages[-1]
    tokens = math.ceil(twin.tokens)
    assert plan.prompt_tokens == bare.prompt_tokens + tokens
    assert plan.prompt_tokens + plan.reply_room == context_tokens
    assert plan.reply_room >= plan.needed == bare.needed
    assert history == [dict(m) for m in history]  # the caller's messages untouched


def test_the_harness_system_prompt_and_pairs_survive() -> None:
    """A long agent conversation: keep_system keeps its system prompt, pair_safe starts the
    kept part on no orphaned tool reply, start_on="user" on a user turn."""
    call = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "id": "c1", "function": {"name": "ls"}}}}
    reply = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "id": "c1", "function": {"name": "ls", "result": "x" * 40}}}}
    history = [{"type": "system", "text": "You are a careful web developer."}]
    for turn in range(150):
        history += [{"type": "user", "text": f"step {turn} " * 10}, call, reply,
                    {"type": "bot", "text": "done " * 10}]
    draft = "<p>dog</p>\n" * 1000
    plan = plan_continuation(draft, "a dog site", context_tokens=4096, estimate=_estimate,
                             history=history, keep_system=True, pair_safe=True,
                             start_on="user")
    assert plan.mode == "tail"
    kept = plan.messages[1:-1]
    assert kept[0]["text"] == history[0]["text"]
    assert kept[1]["type"] == "user"
    assert 1 < len(kept) < len(history)
    assert "history: those kept first and the newest, " in plan.explanation
    plain = plan_continuation(draft, "a dog site", context_tokens=4096, estimate=_estimate,
                              history=history)
    assert plain.messages[1]["type"] != "system"  # without keep_system it is cut
    assert "history: the newest, " in plain.explanation
    # keep_system with no system message kept keeps none first, and says so.
    no_system = plan_continuation(draft, "a dog site", context_tokens=4096, estimate=_estimate,
                                  history=history[1:], keep_system=True)
    assert "history: the newest, " in no_system.explanation


def test_keep_system_too_large_for_the_room_says_so() -> None:
    """A system prompt larger than the room left is an error naming both figures."""
    history = [{"type": "system", "text": "rule " * 4000}, {"type": "user", "text": "go"}]
    with pytest.raises(ValueError, match=r"history: .* leaves [\d,]+ tokens of room"):
        plan_continuation("<p>" * 100, "a page", context_tokens=4096, estimate=_estimate,
                          history=history, keep_system=True)


def _openai_history(calls: int) -> list[dict[str, Any]]:
    """A harness's OpenAI conversation: its system prompt, the task, then tool calls each
    answered, and a last reply."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You build web pages. " * 20},
        {"role": "user", "content": "a dog site"}]
    for turn in range(calls):
        history += [{"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"c{turn}", "type": "function",
                         "function": {"name": "read", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{turn}", "content": f"file {turn} " * 20}]
    return [*history, {"role": "assistant", "content": "<p>..."}]


def _chat_estimate(message: Any) -> float:
    return len(str(message.get("content"))) / 4 + 4


@pytest.mark.parametrize("format", ["openai", "auto"])
@pytest.mark.parametrize("context_tokens", [1400, 1800, 2200, 5000])
def test_a_chat_history_is_fitted_in_its_format(format: str, context_tokens: int) -> None:
    """An OpenAI history with format="openai" (or "auto"): fitted as build_thread fits it in
    that format (the system prompt and the pinned task kept, no tool reply without its
    call), the planner's own messages written as chat messages and estimated as such, so
    that every message of the plan can be sent as it is. Without a format, the history was
    read as native messages (all alike): the task dropped, the kept part opening on an
    orphaned tool reply, planner and chat messages mixed; format= was a TypeError."""
    from vthread import build_thread

    history = _openai_history(40)
    draft = "<p>dog</p>\n" * 1000
    seen: list[Any] = []

    def estimate(message: Any) -> float:
        seen.append(message)
        return _chat_estimate(message)

    plan = plan_continuation(draft, "a dog site", context_tokens=context_tokens,
                             estimate=estimate, history=history, keep_system=True,
                             pair_safe=True, keep_first=1, format=format)
    assert plan.mode == "tail"
    assert all("role" in message and "type" not in message for message in seen)
    assert all(set(message) >= {"role", "content"} for message in plan.messages)
    first, *kept, last = plan.messages
    assert (first["role"], last["role"]) == ("system", "user")
    assert "Continue from exactly where it stops." in last["content"]
    assert kept[:2] == history[:2]
    bare = plan_continuation(draft, "a dog site", context_tokens=context_tokens,
                             estimate=_chat_estimate, format="openai")
    fitted = build_thread(history, max_tokens=bare.reply_room - bare.needed,
                          estimate=_chat_estimate, keep_system=True, pair_safe=True,
                          keep_first=1, format="openai")
    assert kept == fitted.messages
    calls = {call["id"] for message in kept for call in message.get("tool_calls") or ()}
    replies = {message["tool_call_id"] for message in kept if message["role"] == "tool"}
    assert calls == replies and (context_tokens == 5000) == (len(kept) == len(history))
    assert plan.prompt_tokens == bare.prompt_tokens + math.ceil(fitted.tokens)
    assert plan.explanation.endswith(
        f"history: those kept first and the newest, {len(kept):,} of {len(history):,} "
        f"messages ({math.ceil(fitted.tokens):,} tokens), fit the "
        f"{bare.reply_room - bare.needed:,} tokens left over")


def test_the_format_shapes_the_planner_messages_with_no_history() -> None:
    """Given a chat format, or "auto" (a chat harness's word), and no history, the
    planner's messages are chat messages (a rewrite plan's too); native (the default)
    keeps vthread's own; a format that is none is a ValueError naming it."""
    for format in ("anthropic", "auto"):
        openai = plan_continuation("<p>" * 30, "a page", context_tokens=4096,
                                   estimate=_chat_estimate, format=format)
        assert openai.mode == "rewrite"
        assert [message["role"] for message in openai.messages] == ["system", "user"]
    native = plan_continuation("<p>" * 30, "a page", context_tokens=4096, estimate=_estimate)
    assert [message["type"] for message in native.messages] == ["system", "user"]
    assert [message["text"] for message in native.messages] == [
        message["content"] for message in openai.messages]
    with pytest.raises(ValueError, match="'opneai'"):
        plan_continuation("<p>", "a page", context_tokens=4096, estimate=_estimate,
                          format="opneai")


@pytest.mark.parametrize("format", ["native", "openai", "anthropic", "responses"])
def test_auto_plans_as_the_history_s_own_format_translating_it_once(
        format: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """format="auto" gives the plan the history's own format gives, and the history is
    translated once (it was translated to tell its format, then again to fit it); the
    format told is the one vthread.scan's detection tells of a batch of that thread."""
    from benchmarks.workload import generate_threads, to_anthropic, to_openai, to_responses
    from vthread import adapters
    from vthread.documents import native_threads, thread_format

    encode = {"native": list, "openai": to_openai, "anthropic": to_anthropic,
              "responses": to_responses}[format]
    translations: list[tuple[str, int]] = []  # (format, messages) of each translation
    translate = adapters.to_native_with_sources

    def counted(messages: Any, format_: Any) -> Any:
        translations.append((format_, len(messages)))
        return translate(messages, format_)

    for thread in generate_threads(6, seed=5):
        history: list[Any] = encode(thread)  # type: ignore[operator]
        assert thread_format(history) == format
        detected, sources = native_threads([history], "auto")
        assert (sources is None) == (format == "native")
        assert detected == native_threads([history], format)[0]
        keywords: dict[str, Any] = {
            "context_tokens": 3000, "history": history, "keep_system": True,
            "pair_safe": True,
            "estimate": _estimate if format == "native" else _chat_estimate}
        named = plan_continuation("<p>dog</p>\n" * 400, "a page", format=format, **keywords)
        translations.clear()
        monkeypatch.setattr(adapters, "to_native_with_sources", counted)
        auto = plan_continuation("<p>dog</p>\n" * 400, "a page", format="auto", **keywords)
        monkeypatch.undo()
        assert auto == named
        # (keep_system reads the first message's translation apart: one message)
        whole = [t for t in translations if t[1] > 1]
        assert whole == ([] if format == "native" else [(format, len(history))])


@pytest.mark.parametrize("history", [[], ()])
def test_auto_with_an_empty_history_writes_chat_messages(history: Any) -> None:
    """format="auto" with no history yet (a chat harness's first turn, or the one after a
    reset) plans as a chat's: the planner's messages are {"role", "content"}, estimated as
    such, as with the history's own chat format (they were native ones, which the API
    refuses and a chat estimator could not read: KeyError)."""
    draft = "<html>\n" + "<p>dog</p>\n" * 1500 + "<h2>Dach"
    keywords: dict[str, Any] = {"context_tokens": 4096, "estimate": _chat_estimate,
                                "history": history}
    auto = plan_continuation(draft, "a dog site", format="auto", **keywords)
    assert auto == plan_continuation(draft, "a dog site", format="openai", **keywords)
    assert [sorted(message) for message in auto.messages] == [["content", "role"]] * 2


def test_a_history_error_says_the_room_only_when_the_room_was_short() -> None:
    """An error of the history's own (a message the format cannot read) is named as the
    history's, without the room (it said "the rewrite plan leaves 869 tokens of room for
    it", as if room were the trouble); kept-first messages over the room say it; an
    estimate that is no number of a history message is told as the history's."""
    bad = [{"role": "user", "content": "x"}, {"role": "user", "content": 5}]
    with pytest.raises(ValueError) as error:
        plan_continuation("<p>", "r", context_tokens=1000, estimate=lambda m: 1, history=bad,
                          format="openai")
    assert str(error.value).startswith("history: ") and "room" not in str(error.value)
    pinned = [{"type": "system", "text": "s" * 40_000}, {"type": "user", "text": "task"}]
    with pytest.raises(ValueError, match=r"^history: .* tokens of room for it\)$"):
        plan_continuation("<p>", "r", context_tokens=1000, history=pinned, keep_system=True,
                          estimate=lambda m: len(m["text"]) / 4)
    with pytest.raises(TypeError) as wrong:
        plan_continuation("<p>", "r", context_tokens=100_000,
                          history=[{"type": "user", "text": "hist"}],
                          estimate=lambda m: b"x" if m.get("text") == "hist" else 1)
    assert "returned bytes" in str(wrong.value)
    assert wrong.value.__notes__ == ["while fitting history= (messages[i] is history[i])"]


@pytest.mark.parametrize("options", [
    {"keep_first": -1}, {"keep_first": 1.5}, {"pair_safe": "no"}, {"keep_system": 1},
    {"start_on": 5}, {"start_on": "usr", "format": "openai"}])
@pytest.mark.parametrize("context_tokens", [4096, 20])
def test_history_options_are_checked_with_no_history(options: dict[str, Any],
                                                     context_tokens: int) -> None:
    """A bad history option is the same error with an empty history as with one, and
    whatever the plan (a refusal too): a harness's first turn has no history, and the
    option failed only on a later turn, mid-run."""
    def raised(history: list[dict[str, Any]]) -> tuple[type[Exception], str]:
        with pytest.raises((TypeError, ValueError)) as caught:
            plan_continuation("<html>x", "req", context_tokens=context_tokens,
                              estimate=_estimate, history=history, **options)
        return type(caught.value), str(caught.value)

    history = ([{"role": "user", "content": "hi"}] if "format" in options
               else [{"type": "user", "text": "hi"}])
    assert raised([]) == raised(history)
