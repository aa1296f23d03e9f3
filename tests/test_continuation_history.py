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
