"""build_thread's opt-in shapes: keep_system, pair_safe, start_on, against a twin that
tries every start, and the properties a chat API needs of the result."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vthread
from vthread import _reference as ref
from vthread._messages import tool_pairs

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _call(name: str, call_id: str | None = None) -> dict[str, Any]:
    activity: dict[str, Any] = {"type": "request", "function": {"name": name}}
    if call_id is not None:
        activity["id"] = call_id
    return {"type": "activity", "text": "", "meta": {"activity": activity}}


def _reply(name: str, call_id: str | None = None) -> dict[str, Any]:
    activity: dict[str, Any] = {"type": "response", "function": {"name": name, "result": "ok"}}
    if call_id is not None:
        activity["id"] = call_id
    return {"type": "activity", "text": "", "meta": {"activity": activity}}


MESSAGES = st.one_of(
    st.sampled_from([{"type": "system", "text": "rules"}, {"type": "user", "text": "ask"},
                     {"type": "bot", "text": "answer"}, {"type": "reasoning", "text": "hm"}]),
    st.builds(_call, st.sampled_from(["ls", "cat"]), st.sampled_from([None, "a", "b"])),
    st.builds(_reply, st.sampled_from(["ls", "cat"]), st.sampled_from([None, "a", "b"])),
)


@st.composite
def priced(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A thread whose messages sometimes carry a usage and sometimes leave it to estimate."""
    thread = draw(st.lists(MESSAGES, max_size=14))
    out = []
    for message in thread:
        if draw(st.booleans()):
            message = {**message, "usage": {"tokens": draw(st.sampled_from([0, 1, 3, 5, 8]))}}
        out.append(message)
    return out


def _estimate(message: Any) -> float:
    return len(str(message.get("text", ""))) % 5 + 1


KEYWORDS = st.fixed_dictionaries({
    "max_tokens": st.sampled_from([0, 4, 9, 15, 30, math.inf]),
    "min_messages": st.sampled_from([0, 1, 2, 3.5, None]),
    "inclusive": st.sampled_from([False, True, "trim"]),
    "keep_system": st.booleans(),
    "pair_safe": st.booleans(),
    "start_on": st.sampled_from([None, "user", "bot"]),
    "keep_first": st.sampled_from([0, 0, 1, 2, 5]),
})


def _trim(message: dict[str, Any], room: float) -> dict[str, Any]:
    return {**message, "text": "…", "usage": {"tokens": room / 2}}


def _odd_trim(message: dict[str, Any], room: float) -> dict[str, Any] | None:
    """A trim function whose figures are no plain count: negative, NaN, a string, over the
    room (each counted as the general rule counts it, the last capped); and one that drops
    some messages."""
    odd: list[Any] = [-3, math.nan, "12", room * 2, None]
    figure = odd[int(room) % 5]
    return None if figure is None else {**message, "text": "…", "usage": {"tokens": figure}}


def _results_trim(message: dict[str, Any], room: float) -> dict[str, Any] | None:
    """A harness's trim function: it cuts tool output and drops anything else."""
    if message.get("meta", {}).get("activity", {}).get("type") != "response":
        return None
    return {**message, "text": "…", "usage": {"tokens": room}}


def _call_both(thread: list[dict[str, Any]], keywords: dict[str, Any]) -> tuple[Any, Any]:
    keywords = {**keywords, "estimate": _estimate}
    if keywords["inclusive"] == "trim":
        keywords["inclusive"] = _trim
    elif keywords["inclusive"] == "odd trim":
        keywords["inclusive"] = _odd_trim
    elif keywords["inclusive"] == "results trim":
        keywords["inclusive"] = _results_trim
    outcomes = []
    for build in (vthread.build_thread, ref.shaped_build):
        try:
            outcomes.append(build(thread, **keywords))
        except ValueError as error:
            outcomes.append(("error", " cost " in str(error)))
    return outcomes[0], outcomes[1]


@SETTINGS
@given(priced(), KEYWORDS)
def test_equals_the_twin_that_tries_every_start(thread: list[dict[str, Any]],
                                                keywords: dict[str, Any]) -> None:
    """Same messages, same total, same error, for every combination of the options."""
    _assert_the_twins_agree(thread, keywords)


def _assert_the_twins_agree(thread: list[dict[str, Any]], keywords: dict[str, Any]) -> None:
    got, want = _call_both(thread, keywords)
    if isinstance(want, tuple):
        assert got == want
        return
    assert got.messages == want.messages
    assert got.tokens == want.tokens


@st.composite
def ending_in_a_large_result(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A thread whose newest tool result (perhaps with a message or two after it) is large,
    its call just before it or a few messages earlier: the result a harness trims."""
    thread = draw(priced())
    name, call_id = draw(st.sampled_from(["ls", "cat"])), draw(st.sampled_from([None, "a"]))
    between = draw(st.lists(MESSAGES, max_size=2))
    after = draw(st.lists(MESSAGES, max_size=2))
    large = {**_reply(name, call_id), "usage": {"tokens": draw(st.sampled_from([20, 40, 90]))}}
    return [*thread, _call(name, call_id), *between, large, *after]


@SETTINGS
@given(ending_in_a_large_result(), KEYWORDS)
def test_a_trimmed_result_is_kept_with_its_call_as_the_twin_keeps_it(
        thread: list[dict[str, Any]], keywords: dict[str, Any]) -> None:
    """pair_safe or start_on with a trim function: the message that overflows is trimmed
    with the room left by the messages from the last allowed start before it (its call),
    as the twin that walks and tries every start does it."""
    _assert_the_twins_agree(thread, {**keywords, "inclusive": "trim"})


def test_pair_safe_keeps_a_trimmed_tool_result_with_its_call() -> None:
    """The usual reason to trim: the newest tool result alone is over the budget. With
    pair_safe it is trimmed to the room its call leaves and kept with it (production's trim
    got the whole room, and the trimmed result, whose call was cut, was then dropped: the
    result was empty). In a chat format too; a trim function that drops it drops both."""
    call, reply = _call("cat", "a"), {**_reply("cat", "a"), "usage": {"tokens": 500}}
    thread = [{"type": "user", "text": "read it", "usage": {"tokens": 5}},
              {**call, "usage": {"tokens": 5}}, reply]
    rooms: list[float] = []

    def trim(message: dict[str, Any], room: float) -> dict[str, Any] | None:
        rooms.append(room)
        return {**message, "text": "…", "usage": {"tokens": room}}

    got = vthread.build_thread(thread, max_tokens=100, inclusive=trim, pair_safe=True)
    assert rooms == [95.0]
    assert got.messages == [{**call, "usage": {"tokens": 5.0}},
                            {**reply, "text": "…", "usage": {"tokens": 95.0}}]
    assert got.tokens == 100.0
    assert vthread.build_thread(thread, max_tokens=100, inclusive=lambda m, room: None,
                                pair_safe=True).messages == []
    free = [{**thread[0], "usage": {"tokens": 0}}, *thread[1:]]  # kept too, costing nothing
    got = vthread.build_thread(free, max_tokens=100, inclusive=trim, pair_safe=True)
    assert [m["text"] for m in got.messages] == ["read it", "", "…"] and got.tokens == 100.0
    chat = [{"role": "user", "content": "read it"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "cat", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x" * 4000}]

    def trim_chat(message: dict[str, Any], room: float) -> dict[str, Any]:
        return {**message, "content": "x…", "usage": {"tokens": room}}

    got = vthread.build_thread(chat, max_tokens=100, inclusive=trim_chat, pair_safe=True,
                               format="openai", estimate=lambda m: len(str(m)) / 4)
    assert got.messages == [chat[1], {**chat[2], "content": "x…"}]


@st.composite
def ending_in_parallel_results(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A thread ending in a turn of parallel tool calls whose results are large or small
    (perhaps with a message between or after them): results that share the room left."""
    thread = draw(priced())
    names = draw(st.lists(st.sampled_from(["ls", "cat"]), min_size=2, max_size=4))
    ids = draw(st.sampled_from([None, "x"]))
    calls = [_call(name, None if ids is None else f"{ids}{k}") for k, name in enumerate(names)]
    order = draw(st.permutations(range(len(names))))
    replies = [{**_reply(names[k], None if ids is None else f"{ids}{k}"),
                "usage": {"tokens": draw(st.sampled_from([0, 2, 7, 20, 40, 90]))}}
               for k in order]
    between = draw(st.lists(MESSAGES, max_size=1))
    after = draw(st.lists(MESSAGES, max_size=1))
    return [*thread, *calls, *between, *replies, *after]


@SETTINGS
@given(ending_in_parallel_results(), KEYWORDS)
def test_parallel_results_share_the_room_as_the_twin_shares_it(
        thread: list[dict[str, Any]], keywords: dict[str, Any]) -> None:
    """The results of one turn of parallel calls, trimmed together: each given an equal share
    of the room left, smallest first, as the twin gives it by walking each result alone;
    with a trim function whose figures are odd too."""
    _assert_the_twins_agree(thread, {**keywords, "inclusive": "trim"})
    _assert_the_twins_agree(thread, {**keywords, "inclusive": "odd trim"})
    _assert_the_twins_agree(thread, {**keywords, "inclusive": "results trim"})


def test_parallel_tool_results_each_too_large_are_each_trimmed() -> None:
    """Three parallel calls, each result alone over the budget: each is trimmed to an equal
    share of the room the calls leave, and the turn is kept (each result had been kept
    whole but the last, and with no room left for it the whole turn was dropped). A small
    result is kept whole and what it leaves is shared by the others; a trim function that
    drops one drops the turn."""
    calls = [{**_call(name, f"c{k}"), "usage": {"tokens": 2}}
             for k, name in enumerate(["ls", "cat", "ls"])]
    replies = [{**_reply(name, f"c{k}"), "usage": {"tokens": tokens}}
               for k, (name, tokens) in enumerate([("ls", 500), ("cat", 800), ("ls", 600)])]
    thread = [{"type": "user", "text": "look", "usage": {"tokens": 4}}, *calls, *replies]
    rooms: list[tuple[str, float]] = []

    def trim(message: dict[str, Any], room: float) -> dict[str, Any] | None:
        rooms.append((message["meta"]["activity"]["id"], room))
        return {**message, "text": "…", "usage": {"tokens": room}}

    got = vthread.build_thread(thread, max_tokens=96, inclusive=trim, pair_safe=True)
    assert rooms == [("c0", 30.0), ("c2", 30.0), ("c1", 30.0)]  # smallest first
    assert got.messages == [*({**c, "usage": {"tokens": 2.0}} for c in calls),
                            *({**r, "text": "…", "usage": {"tokens": 30.0}} for r in replies)]
    assert got.tokens == 96.0
    rooms.clear()
    small = [replies[0], {**replies[1], "usage": {"tokens": 10}}, replies[2]]
    got = vthread.build_thread([*thread[:4], *small], max_tokens=96, inclusive=trim,
                               pair_safe=True)
    assert rooms == [("c0", 40.0), ("c2", 40.0)]  # the 10 of c1 kept whole: 80 left for two
    assert [m["usage"]["tokens"] for m in got.messages] == [2.0, 2.0, 2.0, 40.0, 10.0, 40.0]
    assert got.tokens == 96.0
    assert vthread.build_thread(thread, max_tokens=96, pair_safe=True,
                                inclusive=lambda m, room: None).messages == []


def _turn(costs: list[int], call_cost: int = 2) -> list[dict[str, Any]]:
    calls = [{**_call("cat", f"c{k}"), "usage": {"tokens": call_cost}} for k in range(len(costs))]
    replies = [{**_reply("cat", f"c{k}"), "usage": {"tokens": tokens}}
               for k, tokens in enumerate(costs)]
    return [{"type": "user", "text": "look", "usage": {"tokens": 4}}, *calls, *replies]


def _room_trim(message: dict[str, Any], room: float) -> dict[str, Any]:
    return {**message, "text": "…", "usage": {"tokens": room}}


def test_a_turns_results_share_the_room_whichever_order_they_came_in() -> None:
    """A result newer than the one that overflows shares the room too: the same turn gives
    the same shares whatever order its results came in (a small newer result kept whole
    took the room, and the turn was dropped)."""
    shares = set()
    for costs in ([90, 500, 800], [500, 800, 90], [800, 90, 500], [500, 800, 85]):
        got = vthread.build_thread(_turn(costs), max_tokens=96, inclusive=_room_trim,
                                   pair_safe=True)
        assert got.tokens == 96.0
        shares.add(tuple(m["usage"]["tokens"] for m in got.messages))
    assert shares == {(2.0, 2.0, 2.0, 30.0, 30.0, 30.0)}


def test_earlier_steps_results_are_not_trimmed_with_a_later_message() -> None:
    """Only the results of the overflowing message's own turn share its room: the results of
    earlier, sequential steps kept with it stay whole, with start_on and pair_safe alike."""
    thread = [{"type": "user", "text": "q", "usage": {"tokens": 4}},
              {**_call("cat", "a"), "usage": {"tokens": 2}},
              {**_reply("cat", "a"), "usage": {"tokens": 40}},
              {**_call("cat", "b"), "usage": {"tokens": 2}},
              {**_reply("cat", "b"), "usage": {"tokens": 40}},
              {"type": "bot", "text": "answer", "usage": {"tokens": 1000}}]
    for shape in ({"start_on": "user"}, {"start_on": "user", "pair_safe": True}):
        got = vthread.build_thread(thread, max_tokens=100, inclusive=_room_trim, **shape)
        assert [m["usage"]["tokens"] for m in got.messages] == [4.0, 2.0, 40.0, 2.0, 40.0,
                                                                12.0]
    # The second step two parallel calls: their results share what the first step leaves.
    thread[4:] = [{**_call("cat", "c"), "usage": {"tokens": 2}},
                  {**_reply("cat", "b"), "usage": {"tokens": 500}},
                  {**_reply("cat", "c"), "usage": {"tokens": 1000}}]
    got = vthread.build_thread(thread, max_tokens=100, inclusive=_room_trim, pair_safe=True,
                               start_on="user")
    assert [m["usage"]["tokens"] for m in got.messages] == [4.0, 2.0, 40.0, 2.0, 2.0, 25.0,
                                                            25.0]


def test_a_call_that_overflows_is_kept_whole_and_its_results_trimmed() -> None:
    """When the newest results fit but their call does not, the call is kept whole and its
    results trimmed to make room, so a trim function that cuts only tool output keeps the
    turn (it was given the call, returned None, and call and results were dropped: a budget
    a little larger kept less). In OpenAI's chat format too."""
    calls = [{**_call("cat", f"c{k}"), "text": "reading", "usage": {"tokens": 10}}
             for k in range(2)]
    replies = [{**_reply("cat", f"c{k}"), "usage": {"tokens": 40}} for k in range(2)]
    thread = [{"type": "user", "text": "look", "usage": {"tokens": 4}}, *calls, *replies]
    for budget in (90, 84, 70, 21):
        got = vthread.build_thread(thread, max_tokens=budget, inclusive=_results_trim,
                                   pair_safe=True)
        share = min(40.0, (budget - 20) / 2)
        assert [m["usage"]["tokens"] for m in got.messages][-4:] == [10.0, 10.0, share, share]
        assert got.tokens <= budget
    assert vthread.build_thread(thread, max_tokens=20, inclusive=_results_trim,
                                pair_safe=True).messages == []  # the calls alone fill it
    chat = [{"role": "user", "content": "Summarise the log."},
            {"role": "assistant", "content": "Reading it.", "tool_calls": [
                {"id": "a", "type": "function",
                 "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "INFO all good\n" * 400}]

    def chat_trim(message: dict[str, Any], room: float) -> dict[str, Any] | None:
        if message["role"] != "tool":
            return None
        return {**message, "content": "INFO…", "usage": {"tokens": room}}

    def estimate(message: Any) -> float:
        return 1500.0 if message["role"] == "tool" else 50.0

    for budget in (120, 1540, 1549):
        got = vthread.build_thread(chat, max_tokens=budget, estimate=estimate, inclusive=chat_trim,
                                   pair_safe=True, format="openai")
        assert got.messages == [chat[1], {**chat[2], "content": "INFO…"}]
        assert got.tokens == budget


def test_what_a_turns_sharing_leaves_alone() -> None:
    """The room is shared only among the results of calls made together, and only when a
    result overflows: a call that overflows with no room once kept whole is trimmed
    alone, its results kept whole (with room, the results are trimmed: the test above); a
    result that came back late (a background call's) shares with no step between; figures
    that are fractions are shared in fractions (3.25 fits a share of 3.33, and is kept);
    and when the trim function drops another result, the overflowing one is trimmed alone
    (with a floor, the turn was kept whole past the budget)."""
    user = {"type": "user", "text": "q", "usage": {"tokens": 1}}

    def call(name: str, tokens: float) -> dict[str, Any]:
        return {**_call("cat", name), "usage": {"tokens": tokens}}

    def reply(name: str, tokens: float, text: str = "") -> dict[str, Any]:
        return {**_reply("cat", name), "text": text, "usage": {"tokens": tokens}}

    def kept(thread: list[dict[str, Any]], trim: Any = _room_trim, **options: Any
             ) -> list[float]:
        got = vthread.build_thread(thread, inclusive=trim, pair_safe=True, **options)
        return [m["usage"]["tokens"] for m in got.messages]

    assert kept([user, call("a", 60), call("b", 1), reply("a", 20), reply("b", 20)],
                max_tokens=50) == [9.0, 1.0, 20.0, 20.0]
    background = [call("bg", 1), call("a", 1), reply("a", 20),
                  {"type": "bot", "text": "", "usage": {"tokens": 1}},
                  call("b", 1), reply("b", 40), reply("bg", 500)]  # a was called with bg
    assert kept(background, max_tokens=100) == [1.0, 1.0, 20.0, 1.0, 1.0, 40.0, 36.0]
    assert kept([call("c", 1), call("d", 1), call("e", 1), reply("c", 3.25), reply("d", 3.25),
                 reply("e", 500)], max_tokens=13) == [1.0, 1.0, 1.0, 3.25, 3.25, 3.5]

    def drop_one(message: dict[str, Any], room: float) -> dict[str, Any] | None:
        return None if message["text"] == "drop" else _room_trim(message, room)

    assert kept([call("a", 40), call("b", 1), reply("b", 10, "drop"), reply("a", 1)],
                drop_one, max_tokens=20, min_messages=1) == [8.0, 1.0, 10.0, 1.0]


@pytest.mark.parametrize(("results", "call_cost", "max_tokens"),
                         [(6, 0, 52), (7, 1, 45), (3, 0, 10), (5, 0, 3)])
def test_whole_figures_trimmed_to_their_shares_stay_within_the_budget(
        results: int, call_cost: int, max_tokens: int) -> None:
    """Shares are whole numbers when the room is (but the last, which gets what is left), so
    whole figures trimmed to them add up to the budget exactly (52 / 6 each added up to
    52.00000000000001); a room smaller than the count is shared in fractions."""
    got = vthread.build_thread(_turn([1000] * results, call_cost)[1:], max_tokens=max_tokens,
                               inclusive=_room_trim, pair_safe=True)
    shares = [m["usage"]["tokens"] for m in got.messages[results:]]
    assert len(shares) == results and max(shares) - min(shares) <= 1
    assert got.tokens <= max_tokens
    if max_tokens - results * call_cost >= results:
        assert all(float(share).is_integer() for share in shares)
        assert got.tokens == max_tokens and sum(shares) == max_tokens - results * call_cost


def test_parallel_tool_results_share_the_room_in_openai_chat() -> None:
    """The same turn as an OpenAI chat: one assistant message with three tool calls, three
    tool messages, each kept trimmed with no usage added."""
    thread: list[dict[str, Any]] = [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
            for k in range(3)]},
        *({"role": "tool", "tool_call_id": f"c{k}", "content": "x" * 4000} for k in range(3)),
    ]
    rooms: list[float] = []

    def trim(message: dict[str, Any], room: float) -> dict[str, Any]:
        rooms.append(room)
        return {**message, "content": "x…", "usage": {"tokens": room}}

    def estimate(message: Any) -> float:
        return 10.0 if message.get("role") == "assistant" else 1000.0

    got = vthread.build_thread(thread, max_tokens=100, inclusive=trim, pair_safe=True,
                               format="openai", estimate=estimate)
    assert rooms == [30.0, 30.0, 30.0]
    assert got.messages == [thread[1], *({**m, "content": "x…"} for m in thread[2:])]
    assert got.tokens == 100.0


@SETTINGS
@given(priced(), KEYWORDS)
def test_the_result_is_what_a_chat_api_accepts(thread: list[dict[str, Any]],
                                               keywords: dict[str, Any]) -> None:
    """System prompt kept, a suffix of the rest, no pair split, no orphan first, the type
    asked first, within budget when no floor or overflow rule keeps more, and the longest
    such suffix."""
    keywords = {**keywords, "inclusive": False, "min_messages": 0, "keep_first": 0}
    try:
        got = vthread.build_thread(thread, estimate=_estimate, **keywords)
    except ValueError:
        return
    costs = [m["usage"]["tokens"] for m in vthread.build_thread(
        thread, max_tokens=math.inf, estimate=_estimate).messages]
    head = 0
    while keywords["keep_system"] and head < len(thread) and thread[head]["type"] == "system":
        head += 1
    kept = [{k: v for k, v in m.items() if k != "usage"} for m in got.messages]
    plain = [{k: v for k, v in m.items() if k != "usage"} for m in thread]
    assert kept[:head] == plain[:head]
    rest = plain[head:]
    start = len(rest) - (len(kept) - head)
    assert kept[head:] == rest[start:]
    pairs, orphans = tool_pairs(rest)

    def allowed(k: int) -> bool:
        if k == len(rest):
            return True
        if keywords["pair_safe"] and (k in orphans or any(r < k <= s for r, s in pairs)):
            return False
        return keywords["start_on"] is None or rest[k]["type"] == keywords["start_on"]

    assert allowed(start)
    budget = keywords["max_tokens"] - sum(costs[:head])
    assert sum(costs[head + start:]) <= budget
    if keywords["pair_safe"] or keywords["start_on"] is not None:
        # The longest allowed suffix that fits (production alone stops as soon as the budget
        # is spent, before messages that cost nothing).
        for longer in range(start):
            if allowed(longer):
                assert sum(costs[head + longer:]) > budget


def test_a_budget_of_twelve_keeps_no_orphan_reply() -> None:
    """The case a new user met: production returns [response, bot]; pair_safe drops the
    reply whose call was cut, or keeps the pair when the budget allows it."""
    thread = [{"type": "system", "text": "rules", "usage": {"tokens": 4}},
              {"type": "user", "text": "list", "usage": {"tokens": 3}},
              {**_call("ls"), "usage": {"tokens": 5}},
              {**_reply("ls"), "usage": {"tokens": 6}},
              {"type": "bot", "text": "done", "usage": {"tokens": 6}}]
    types = [m["type"] for m in vthread.build_thread(thread, max_tokens=12).messages]
    assert types == ["activity", "bot"]  # production's answer, unchanged by default
    safe = vthread.build_thread(thread, max_tokens=12, pair_safe=True)
    assert [m["text"] for m in safe.messages] == ["done"] and safe.tokens == 6
    whole = vthread.build_thread(thread, max_tokens=21, pair_safe=True, keep_system=True)
    assert [m["type"] for m in whole.messages] == ["system", "activity", "activity", "bot"]
    assert whole.tokens == 4 + 5 + 6 + 6


def test_keep_system_counts_it_first_and_says_by_how_much_it_is_over() -> None:
    """The system prompt is kept whatever the rest costs; alone over budget is an error."""
    thread = [{"type": "system", "text": "a", "usage": {"tokens": 10}},
              {"type": "system", "text": "b", "usage": {"tokens": 5}},
              {"type": "user", "text": "q", "usage": {"tokens": 20}},
              {"type": "bot", "text": "r", "usage": {"tokens": 4}}]
    got = vthread.build_thread(thread, max_tokens=20, keep_system=True)
    assert [m["text"] for m in got.messages] == ["a", "b", "r"] and got.tokens == 19
    with pytest.raises(ValueError, match=r"2 leading system messages alone cost 15 tokens, "
                                         r"5 more than max_tokens=10"):
        vthread.build_thread(thread, max_tokens=10, keep_system=True)


def test_start_on_user_and_the_floor_counts_pairs_whole() -> None:
    """start_on drops messages before the first user turn kept; min_messages extends back
    to keep a pair whole."""
    thread = [{"type": "user", "text": "q1", "usage": {"tokens": 1}},
              {"type": "bot", "text": "a1", "usage": {"tokens": 1}},
              {**_call("ls", "c1"), "usage": {"tokens": 1}},
              {**_reply("ls", "c1"), "usage": {"tokens": 1}}]
    got = vthread.build_thread(thread, max_tokens=3, start_on="user")
    assert got.messages == []
    floor = vthread.build_thread(thread, max_tokens=0, min_messages=1, pair_safe=True)
    assert [m["meta"]["activity"]["type"] for m in floor.messages] == ["request", "response"]


def test_pairs_match_by_id_then_name_then_order() -> None:
    """Parallel calls answered out of order pair by id; without ids, by name, then order."""
    thread = [_call("ls", "a"), _call("cat", "b"), _reply("cat", "b"), _reply("ls", "a"),
              _call("ls"), _call("cat"), _reply("cat"), _reply("ls"), _reply("grep")]
    assert tool_pairs(thread) == ([(1, 2), (0, 3), (5, 6), (4, 7)], [8])


def test_a_reply_whose_id_no_call_carries_takes_no_other_calls_place() -> None:
    """A reply with an id pairs only with the call of that id, or with a call that carries
    none: a stray reply (its call compacted away) paired with the pending call by order,
    and that call's own reply was then an orphan, kept without it (a tester's)."""
    thread = [_call("ls", "b"), _reply("cat", "a"), {"type": "user", "text": "u"},
              _reply("ls", "b")]
    assert tool_pairs(thread) == ([(0, 3)], [1])
    # A reply with an id still pairs with a call that carries none, by name, then order.
    assert tool_pairs([_call("ls"), _call("cat"), _reply("cat", "x"), _reply("ls", "y")]) == (
        [(1, 2), (0, 3)], [])
    # And a reply with none pairs among every call, as before.
    assert tool_pairs([_call("ls", "b"), _reply("ls")]) == ([(0, 1)], [])


def test_pair_safe_never_keeps_a_tool_result_without_its_call_in_any_chat_format() -> None:
    """In OpenAI, Anthropic and Responses chats a stray tool result (an id no call in the
    thread has) never takes another call's place: at every budget, each kept result's call
    is kept (OpenAI and Anthropic refuse a request holding a result without its call)."""
    openai = [{"role": "assistant", "content": None, "tool_calls": [
                  {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
              {"role": "tool", "tool_call_id": "a", "content": "r"},
              {"role": "user", "content": "u"},
              {"role": "tool", "tool_call_id": "b", "content": "r"}]
    anthropic = [{"role": "assistant", "content": [
                     {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
                 {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
                 {"role": "assistant", "content": "u"},
                 {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": "b", "content": "r"}]}]
    responses = [{"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"},
                 {"type": "function_call_output", "call_id": "a", "output": "r"},
                 {"type": "message", "role": "user", "content": "u"},
                 {"type": "function_call_output", "call_id": "b", "output": "r"}]

    def calls(message: dict[str, Any]) -> set[str]:
        found = {call["id"] for call in message.get("tool_calls") or []}
        found |= {block["id"] for block in message.get("content") or []
                  if isinstance(block, dict) and block.get("type") == "tool_use"}
        return found | ({message["call_id"]} if message.get("type") == "function_call" else set())

    def results(message: dict[str, Any]) -> set[str]:
        found = {message["tool_call_id"]} if "tool_call_id" in message else set()
        found |= {block["tool_use_id"] for block in message.get("content") or []
                  if isinstance(block, dict) and block.get("type") == "tool_result"}
        return found | ({message["call_id"]} if message.get("type") == "function_call_output"
                        else set())

    for format_, thread in (("openai", openai), ("anthropic", anthropic),
                            ("responses", responses)):
        for budget in range(1, 6):
            kept = vthread.build_thread(thread, max_tokens=budget, estimate=lambda m: 1,
                                        pair_safe=True, format=format_).messages
            made = set().union(*map(calls, kept)) if kept else set()
            answered = set().union(*map(results, kept)) if kept else set()
            assert "b" not in answered or "b" in made, (format_, budget, kept)
        whole = vthread.build_thread(thread, max_tokens=10, estimate=lambda m: 1,
                                     pair_safe=True, format=format_).messages
        assert len(whole) == 4  # (all fit: the stray result stays where it is)


def test_numeric_call_ids_pair_as_the_numbers_javascript_holds() -> None:
    """A whole-number id pairs as the double it is in JavaScript: 1.0 answers 1 (a float id
    was no id at all), 2**53 + 1 answers 2**53, and neither answers the string "1"."""
    thread = [_call("ls", "1"), _call("ls"), _call("ls"), _call("ls"),
              _reply("ls"), _reply("ls"), _reply("ls"), _reply("ls")]
    thread[1]["meta"]["activity"]["id"] = 1
    thread[2]["meta"]["activity"]["id"] = 2**53
    thread[4]["meta"]["activity"]["id"] = 2**53 + 1
    thread[5]["meta"]["activity"]["id"] = 1.0
    thread[6]["meta"]["activity"]["id"] = "1"
    assert tool_pairs(thread) == ([(2, 4), (1, 5), (0, 6), (3, 7)], [])
    # An int subclass is its value, whatever its own __float__ says (as canonical reads it).
    thread[1]["meta"]["activity"]["id"] = _IntSayingOtherwise(1)
    assert tool_pairs(thread) == ([(2, 4), (1, 5), (0, 6), (3, 7)], [])


class _IntSayingOtherwise(int):
    """An int whose own float conversion says another number."""

    def __float__(self) -> float:
        return 7.0


@pytest.mark.parametrize(("keyword", "value"), [("keep_system", 1), ("pair_safe", "yes"),
                                                 ("start_on", 3)])
def test_bad_option_types_are_type_errors(keyword: str, value: Any) -> None:
    """Each new keyword names itself when given the wrong type."""
    with pytest.raises(TypeError, match=keyword):
        vthread.build_thread([], max_tokens=1, **{keyword: value})


ODD_TOKENS = st.one_of(st.integers(-2**70, 2**70), st.floats(), st.booleans(), st.none(),
                       st.sampled_from(["5", "", [7], {}, -0.0]))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"usage": st.fixed_dictionaries({"tokens": ODD_TOKENS})}),
    st.fixed_dictionaries({"usage": ODD_TOKENS}),
    st.just({"text": "no usage"})), max_size=8))
def test_core_costs_equal_the_general_rule(thread: list[dict[str, Any]]) -> None:
    """Where the core reads a figure it is the general rule's; what it leaves undecided
    (NaN) is exactly what the general rule must decide."""
    from vthread import _core
    from vthread._messages import own_tokens, token_figure

    read = _core.own_token_costs(thread)
    assert read is not None
    figures, undecided = read
    for index, message in enumerate(thread):
        if index in undecided:
            assert math.isnan(figures[index])
            continue
        has_own, raw = own_tokens(message)
        assert has_own and token_figure(raw) == figures[index]
    assert _core.own_token_costs([*thread, 1]) is None
    assert _core.own_token_costs(tuple(thread)) is None


COSTS = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 3.0, 7.0, 1e308]),
                  st.floats(0, 50, allow_nan=False))
LIMITS = st.one_of(st.sampled_from([0.0, 1.0, 4.0, 10.0, math.inf, -math.inf, math.nan]),
                   st.floats(-5, 60, allow_nan=False))
FLOORS = st.sampled_from([0.0, 1.0, 2.0, 3.5, 7.0, math.inf, math.nan])


@settings(max_examples=600, deadline=None)
@given(st.lists(COSTS, max_size=12), LIMITS, FLOORS, st.integers(0, 3))
def test_core_selection_equals_the_python_walk(costs: list[float], limit: float,
                                                floor: float, first: int) -> None:
    """The core's walk and copies (the common shape) equal the Python walk they replace,
    message for message and to the last bit of the total; the input is left as it was."""
    import numpy as np

    from vthread import _core
    from vthread.build import _MessageView, _newest_fitting

    first = min(first, len(costs))
    thread = [{"type": "user", "text": str(i), **({"usage": "old"} if i % 2 else {})}
              for i in range(len(costs))]
    before = [dict(m) for m in thread]
    fast = _core.newest_fitting(thread, np.array(costs, dtype=np.float64), first, limit,
                                floor)
    slow = _newest_fitting(thread, costs, first, limit, floor, False,
                           _MessageView(thread, "native"))
    assert fast[0] == slow[0]
    assert [list(m) for m in fast[0]] == [list(m) for m in slow[0]]  # key order too
    assert fast[1] == slow[1] or (math.isnan(fast[1]) and math.isnan(slow[1]))
    assert thread == before


def test_system_messages_past_the_largest_double_are_said_so() -> None:
    """Two system messages of 1e308 tokens each sum past the largest double: the error says
    so (it said "alone cost inf tokens, inf more than", found by a tester)."""
    thread = [{"type": "system", "text": "a", "usage": {"tokens": 1e308}},
              {"type": "system", "text": "b", "usage": {"tokens": 1e308}},
              {"type": "user", "text": "q", "usage": {"tokens": 2}}]
    with pytest.raises(ValueError) as raised:
        vthread.build_thread(thread, max_tokens=3405, keep_system=True)
    assert str(raised.value) == ("the 2 leading system messages alone cost over 1.8e308 tokens "
                                 "(more than a double holds), more than max_tokens=3405")


@pytest.mark.parametrize("keywords", [{"start_on": "bot"}, {"pair_safe": True},
                                      {"keep_system": True, "start_on": "bot"}])
@pytest.mark.parametrize("max_tokens", [math.inf, 10**400, 1e308])
def test_the_reference_costs_every_message_whatever_the_total(
        keywords: dict[str, Any], max_tokens: float) -> None:
    """Costs whose total overflows to infinity, and a budget past the doubles, are shaped by
    the reference as by the engine: the reference costed the thread through production's
    selection under no limit, which stops where the total reaches infinity (it kept no
    message where the engine kept three), and read a budget of 10**400 with float() (an
    OverflowError)."""
    thread = [{"type": "bot", "text": "a", "usage": {"tokens": 1}},
              {"type": "user", "text": "c", "usage": {"tokens": 1e308}},
              {"type": "user", "text": "b", "usage": {"tokens": 1e308}}]
    engine = vthread.build_thread(thread, max_tokens=max_tokens, **keywords)
    reference = ref.shaped_build(thread, max_tokens=max_tokens, **keywords)
    assert [m["text"] for m in engine.messages] == [m["text"] for m in reference.messages]
    assert engine.tokens == reference.tokens
    floored = vthread.build_thread(thread, max_tokens=2, min_messages=10**400, **keywords)
    assert [m["text"] for m in floored.messages] == [m["text"] for m in ref.shaped_build(
        thread, max_tokens=2, min_messages=10**400, **keywords).messages]


@pytest.mark.parametrize("pair_safe", [False, True])
def test_a_list_changed_while_it_is_read_is_answered_as_it_was_at_the_call(
        pair_safe: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The messages are copied before the core costs them: another Python thread changing
    the caller's list between the costing and the copy made costs of another length
    (IndexError; a tester's). Here the change comes as the core's costing returns."""
    from vthread import _core

    thread = [{"type": "bot", "text": str(i % 2)} for i in range(50)]
    real = _core.own_token_costs

    def costing_then_changed(messages: Any, decide: Any = None) -> Any:
        read = real(messages, decide)
        thread.append({"type": "bot", "text": "late"})  # the caller's list, not the copy
        return read

    monkeypatch.setattr(_core, "own_token_costs", costing_then_changed)
    result = vthread.build_thread(thread, max_tokens=10, estimate=lambda m: 1,
                                  pair_safe=pair_safe)
    assert [m["text"] for m in result.messages] == ["0", "1"] * 5


@pytest.mark.parametrize("plain", [True, False])
def test_a_message_after_an_estimator_call_is_costed_after_it(plain: bool) -> None:
    """Messages are costed oldest first, each in its turn, as production's map costs them: a
    figure the estimator changes while costing an earlier message is read as changed. The
    core read every plain figure before any estimator call, so the change went unseen (a
    tester's). ``plain``: a list of dicts (the core's path), else a tuple (Python's)."""

    def thread() -> list[dict[str, Any]]:
        return [{"type": "user", "text": "a"},
                {"type": "bot", "text": "b", "usage": {"tokens": 5}},
                {"type": "bot", "text": "c"},
                {"type": "bot", "text": "d", "usage": {"tokens": 5}}]

    def build(builder: Any) -> tuple[list[str], float]:
        messages = thread()
        calls: list[str] = []

        def estimate(message: dict[str, Any]) -> float:
            calls.append(message["text"])
            later = messages[1] if message["text"] == "a" else messages[3]
            later["usage"]["tokens"] = 500  # a later message's own figure, changed
            return 1

        given = messages if plain else tuple(messages)
        result = builder(given, max_tokens=100, estimate=estimate)
        assert calls == ["a", "c"]
        return [m["text"] for m in result.messages], result.tokens

    expected = build(ref.build_thread)
    assert expected == ([], 0.0)  # the newest message costs 500, over the budget
    assert build(vthread.build_thread) == expected


@SETTINGS
@given(priced(), KEYWORDS)
def test_the_messages_kept_first_open_the_result_and_split_no_pair(
        thread: list[dict[str, Any]], keywords: dict[str, Any]) -> None:
    """keep_first: the result opens with the thread's first messages (the system ones
    keep_system keeps, then keep_first more, reaching on with pair_safe to the reply of a
    call among them), as given; the rest is a suffix of what follows them."""
    keywords = {**keywords, "inclusive": False}
    try:
        got = vthread.build_thread(thread, estimate=_estimate, **keywords)
    except ValueError as error:
        assert " cost " in str(error)
        return
    plain = [{k: v for k, v in m.items() if k != "usage"} for m in thread]
    kept = [{k: v for k, v in m.items() if k != "usage"} for m in got.messages]
    system = 0
    while keywords["keep_system"] and system < len(thread) and thread[system]["type"] == "system":
        system += 1
    first = min(system + keywords["keep_first"], len(thread))
    assert kept[:first] == plain[:first]
    head = first
    if keywords["pair_safe"]:
        while head < len(kept) and head < len(plain) and kept[head] == plain[head] and any(
                system + r < head <= system + s for r, s in tool_pairs(plain[system:])[0]):
            head += 1
        assert not any(system + r < head <= system + s
                       for r, s in tool_pairs(plain[system:])[0]), "a pair split at the pin"
    rest = kept[head:]
    assert rest == plain[len(plain) - len(rest):]


def test_keep_first_pins_the_task_while_the_middle_is_dropped() -> None:
    """The task statement stays, the newest turns fill the rest of the budget, the middle
    goes; a call pinned keeps its reply (pair_safe); too large a pin is said."""
    thread = [{"type": "system", "text": "rules", "usage": {"tokens": 3}},
              {"type": "user", "text": "the task", "usage": {"tokens": 5}},
              *[{"type": "bot", "text": f"step {i}", "usage": {"tokens": 4}} for i in range(10)]]
    got = vthread.build_thread(thread, max_tokens=20, keep_system=True, keep_first=1)
    assert [m["text"] for m in got.messages] == ["rules", "the task", "step 7", "step 8",
                                                  "step 9"]
    assert got.tokens == 20
    pinned_call = [{"type": "user", "text": "go", "usage": {"tokens": 1}},
                   {**_call("ls", "a"), "usage": {"tokens": 1}},
                   {**_reply("ls", "a"), "usage": {"tokens": 1}},
                   *[{"type": "bot", "text": "x", "usage": {"tokens": 5}}] * 4]
    got = vthread.build_thread(pinned_call, max_tokens=9, keep_first=2, pair_safe=True)
    assert got.messages[:3] == [{**m, "usage": {"tokens": 1.0}} for m in pinned_call[:3]]
    assert len(got.messages) == 4
    with pytest.raises(ValueError, match=r"the 2 messages kept first \(1 system, 1 by "
                                         r"keep_first=1\) alone cost 8 tokens, 1 more than"):
        vthread.build_thread(thread, max_tokens=7, keep_system=True, keep_first=1)
    for bad, error in ((-1, ValueError), (1.0, TypeError), (True, TypeError)):
        with pytest.raises(error, match="keep_first must be a non-negative integer"):
            vthread.build_thread(thread, max_tokens=20, keep_first=bad)


SHAPED = st.fixed_dictionaries({
    "max_tokens": st.sampled_from([0, 4, 9, 15, 30]),
    "keep_system": st.booleans(),
    "pair_safe": st.booleans(),
    "start_on": st.sampled_from([None, "user", "bot"]),
    "keep_first": st.sampled_from([0, 1, 2]),
}).filter(lambda k: k["keep_system"] or k["pair_safe"] or k["start_on"] is not None
          or k["keep_first"])


@SETTINGS
@given(priced(), SHAPED)
def test_a_shaped_build_with_a_trim_function_stays_within_its_budget(
        thread: list[dict[str, Any]], keywords: dict[str, Any]) -> None:
    """With any opt-in shape and a trim function (and no floor), the result never costs more
    than max_tokens: a message with no room left is dropped, where production keeps it whole
    (a 100,000-token paste kept on a budget of 100 once the newer messages filled it
    exactly). The trim function is called only with room > 0, once at most, but for the tool
    results a pair_safe turn trims with it."""
    rooms: list[float] = []

    def trim(message: dict[str, Any], room: float) -> dict[str, Any]:
        rooms.append(room)
        return _trim(message, room)

    try:
        got = vthread.build_thread(thread, estimate=_estimate, inclusive=trim, **keywords)
    except ValueError as error:
        assert " cost " in str(error)
        return
    assert got.tokens <= keywords["max_tokens"]
    replies = sum(m.get("meta", {}).get("activity", {}).get("type") == "response"
                  for m in thread)
    assert len(rooms) <= 1 + (replies if keywords["pair_safe"] else 0)
    assert all(room > 0 for room in rooms)


def test_a_message_with_no_room_left_is_dropped_in_a_shaped_build() -> None:
    """The newer messages fill the budget exactly: production's trim rule keeps the next
    message whole (room 0), and so does a build without shapes; with a shape it is dropped,
    and with one unit of room it is trimmed into it."""
    thread = [{"type": "system", "text": "rules", "usage": {"tokens": 10}},
              {"type": "user", "text": "a paste", "usage": {"tokens": 100_000}},
              {"type": "bot", "text": "read", "usage": {"tokens": 40}},
              {"type": "bot", "text": "done", "usage": {"tokens": 50}}]
    rooms: list[float] = []

    def trim(message: dict[str, Any], room: float) -> dict[str, Any]:
        rooms.append(room)
        return {**message, "text": "…", "usage": {"tokens": room}}

    assert vthread.build_thread(thread, max_tokens=90, inclusive=trim).tokens == 100_090
    got = vthread.build_thread(thread, max_tokens=100, inclusive=trim, keep_system=True)
    assert [m["text"] for m in got.messages] == ["rules", "read", "done"]
    assert (got.tokens, rooms) == (100.0, [])
    got = vthread.build_thread(thread, max_tokens=101, inclusive=trim, keep_system=True)
    assert [m["text"] for m in got.messages] == ["rules", "…", "read", "done"]
    assert (got.tokens, rooms) == (101.0, [1.0])
    got = vthread.build_thread(thread[1:], max_tokens=0, inclusive=trim, keep_first=0,
                               pair_safe=True)
    assert (got.messages, got.tokens) == ([], 0.0)


def test_a_pinned_task_of_the_start_on_type_lets_the_rest_start_anywhere() -> None:
    """start_on="user" with the task pinned: the pinned user turn opens the kept part, so
    the agent's newest steps after it are kept (a run with no user turn after its task kept
    nothing after it); a pinned message of another type leaves start_on to the rest."""
    steps = []
    for i in range(30):
        steps += [{**_call("ls", f"c{i}"), "usage": {"tokens": 50}},
                  {**_reply("ls", f"c{i}"), "usage": {"tokens": 50}}]
    thread = [{"type": "system", "text": "rules", "usage": {"tokens": 10}},
              {"type": "user", "text": "the task", "usage": {"tokens": 10}}, *steps]
    keywords: dict[str, Any] = {"max_tokens": 1020, "keep_system": True, "pair_safe": True,
                                "start_on": "user"}
    assert len(vthread.build_thread(thread, **keywords).messages) == 1
    got = vthread.build_thread(thread, keep_first=1, **keywords)
    assert got.messages[:2] == [{**m, "usage": {"tokens": 10.0}} for m in thread[:2]]
    assert got.messages[2:] == [{**m, "usage": {"tokens": 50.0}} for m in steps[-20:]]
    with_bot = [thread[0], {"type": "bot", "text": "hello", "usage": {"tokens": 10}}, *thread[1:]]
    got = vthread.build_thread(with_bot, keep_first=1, **keywords)
    assert [m.get("text") for m in got.messages] == ["rules", "hello"]


def test_the_messages_kept_first_are_counted_by_what_kept_them() -> None:
    """The error of messages kept first over the budget counts the system ones, the pinned
    ones and those the pinned calls' replies reached on to apart (it said "102 by
    keep_first=2" of two pinned messages and the replies they reached)."""
    def priced(message: dict[str, Any]) -> dict[str, Any]:
        return {**message, "usage": {"tokens": 10}}

    thread = [priced({"type": "system", "text": "rules"}), priced({"type": "user", "text": "t"}),
              priced(_call("ls")), priced({"type": "bot", "text": "b"}), priced(_reply("ls")),
              priced({"type": "user", "text": "more"})]
    with pytest.raises(ValueError) as error:
        vthread.build_thread(thread, max_tokens=20, keep_system=True, keep_first=2,
                             pair_safe=True)
    assert str(error.value) == (
        "the 5 messages kept first (1 system, 2 by keep_first=2, 2 more up to the replies of "
        "the tool calls among them (pair_safe)) alone cost 50 tokens, 30 more than "
        "max_tokens=20")
    with pytest.raises(ValueError, match=r"the 3 messages kept first \(1 system, 2 by "
                                         r"keep_first=2\) alone cost 30 tokens"):
        vthread.build_thread(thread, max_tokens=20, keep_system=True, keep_first=2)
    with pytest.raises(ValueError, match=r"the 2 messages kept first \(keep_first=2\)"):
        vthread.build_thread(thread[1:], max_tokens=10, keep_first=2)
    with pytest.raises(ValueError, match=r"the 6 messages kept first \(1 system, 5 by "
                                         r"keep_first=9\)"):
        vthread.build_thread(thread, max_tokens=10, keep_system=True, keep_first=9)


def test_a_start_on_no_message_has_is_warned_of() -> None:
    """A ``start_on`` that is the type of no native message after the system and pinned
    ones (a typo: ``"usr"``) keeps nothing but those, as production does, and says so,
    naming the types there (testers: an empty request, silently, where a chat format's typo
    is a ValueError); one a later message has, or an empty thread, says nothing."""
    import warnings

    thread = [{"type": "system", "text": "s", "usage": {"tokens": 1}},
              {"type": "user", "text": "a", "usage": {"tokens": 1}},
              {"type": "bot", "text": "b", "usage": {"tokens": 1}}]
    with pytest.warns(UserWarning, match=r"start_on='usr' is the type of no message after "
                      r"the system and pinned ones.*'bot', 'system', 'user'") as said:
        kept = vthread.build_thread(thread, max_tokens=30, start_on="usr").messages
    assert said[0].filename == __file__ and kept == []
    # (the only message of the type is the system one, kept apart: no start either)
    with pytest.warns(UserWarning, match="start_on='system'"):
        kept = vthread.build_thread(thread, max_tokens=30, start_on="system",
                                    keep_system=True).messages
    assert [m["type"] for m in kept] == ["system"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [m["type"] for m in vthread.build_thread(
            thread, max_tokens=30, start_on="user").messages] == ["user", "bot"]
        assert vthread.build_thread([], max_tokens=30, start_on="usr").messages == []


def test_a_shape_that_leaves_nothing_though_messages_fit_is_warned_of() -> None:
    """When the newest messages fit the budget but ``start_on`` or ``pair_safe`` allows no
    start among them, nothing is kept (after the system and pinned ones) and that is said,
    naming the nearest allowed start and what its suffix costs (a tester's case: a harness
    sent an empty request, silently); a budget no message fits at all, or a shape that
    keeps something, says nothing."""
    import warnings

    def priced(message: dict[str, Any], tokens: int) -> dict[str, Any]:
        return {**message, "usage": {"tokens": tokens}}

    thread = [priced({"type": "system", "text": "s"}, 5), priced({"type": "user", "text": "a"}, 50),
              priced({"type": "bot", "text": "b"}, 10), priced({"type": "bot", "text": "c"}, 10)]
    with pytest.warns(UserWarning) as said:
        kept = vthread.build_thread(thread[1:], max_tokens=30, start_on="user").messages
    assert kept == [] and said[0].filename == __file__
    assert str(said[0].message) == (
        "nothing is kept: the newest 2 messages fit the budget, but start_on='user' allows no "
        "start among them; the nearest that may, messages[0], begins one of 70 tokens, with "
        "30 to spend")
    with pytest.warns(UserWarning, match=r"^nothing is kept after the system and pinned "
                      r"messages: .* messages\[1\], begins one of 70 tokens, with 25 to"):
        kept = vthread.build_thread(thread, max_tokens=30, start_on="user",
                                    keep_system=True).messages
    assert [m["type"] for m in kept] == ["system"]
    # A reply whose call does not fit: pair_safe alone, and with start_on.
    paired = [priced({"type": "user", "text": "q"}, 5), priced(_call("ls"), 50),
              priced(_reply("ls"), 10)]
    with pytest.warns(UserWarning, match=r"^nothing is kept: the newest 1 message fit the "
                      r"budget, but pair_safe allows no start among them; the nearest that "
                      r"may, messages\[1\], begins one of 60 tokens"):
        assert vthread.build_thread(paired, max_tokens=30, pair_safe=True).messages == []
    with pytest.warns(UserWarning, match=r"start_on='user' and pair_safe allow no start "
                      r"among them; the nearest that may, messages\[0\]"):
        vthread.build_thread(paired, max_tokens=30, pair_safe=True, start_on="user")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vthread.build_thread(thread[1:], max_tokens=5, start_on="user").messages == []
        assert len(vthread.build_thread(thread[1:], max_tokens=80, start_on="user")
                   .messages) == 3
        assert len(vthread.build_thread(paired, max_tokens=80, pair_safe=True).messages) == 3


@pytest.mark.parametrize(("budget", "rooms"), [(7, [1, 2]), (6, [1, 1]), (5, [0.5, 0.5]),
                                               (4.5, [0.25, 0.25])])
def test_the_trim_function_is_given_a_whole_room_as_an_int(
        budget: float, rooms: list[float]) -> None:
    """The room a trim function is given is an ``int`` when it is a whole number of tokens
    (``text[:room * 4]`` must work: testers' chat trimmer raised TypeError on 56.0), a float
    share when the room holds less than a token for each result sharing it."""
    def request(i: int) -> dict[str, Any]:
        return {"type": "activity", "text": "", "usage": {"tokens": 2}, "meta": {"activity": {
            "type": "request", "id": f"c{i}", "function": {"name": "read", "arguments": {
                "i": i}}}}}

    def response(i: int, tokens: int) -> dict[str, Any]:
        return {"type": "activity", "text": "", "usage": {"tokens": tokens}, "meta": {
            "activity": {"type": "response", "id": f"c{i}", "function": {
                "name": "read", "arguments": {"i": i}, "result": "x" * tokens}}}}

    given: list[Any] = []

    def trim(message: dict[str, Any], room: float) -> dict[str, Any]:
        given.append(room)
        return {**message, "usage": {"tokens": room}}

    vthread.build_thread([request(0), request(1), response(0, 500), response(1, 800)],
                         max_tokens=budget, pair_safe=True, inclusive=trim)
    assert given == rooms
    assert [type(room) for room in given] == [type(room) for room in rooms]
