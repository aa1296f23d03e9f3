"""Assemble the newest messages that fit a model's context window."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Literal

from vthread import _core
from vthread._jsvalue import is_string, is_text, js_string, real_number
from vthread._messages import (
    activity_call_id,
    check_messages,
    estimate_figure,
    no_payload,
    own_tokens,
    parse_activity,
    token_figure,
    tool_pairs,
)
from vthread._options import (
    flag,
    integer_option,
    is_numpy_bool,
    shown,
    type_name,
    user_stacklevel,
)
from vthread.documents import chat_like, native_messages, warn_if_chat

__all__ = ["BuildResult", "build_thread"]


Estimate = Callable[[Any], Any]
"""Token count of a message: a number; None, NaN, infinities and negatives count as 0."""

Trim = Callable[[Any, float], "Mapping[str, Any] | Literal[False] | None"]
"""Trim a message to ``room`` tokens: the trimmed message (a native one with its usage, a
chat one as the API has it), or None to drop. Its message is typed ``Any``, so that a
function typed on the harness's own message type (a ``TypedDict``) is one."""


@dataclass(frozen=True, slots=True)
class BuildResult:
    """The assembled thread, oldest first, each message a shallow copy carrying its usage
    (nested values, such as ``meta``, are the caller's own objects)."""

    messages: list[dict[str, Any]]
    tokens: float

    def to_dict(self) -> dict[str, Any]:
        """The production shape: ``{"messages": [...], "usage": {"tokens": n}}``."""
        return {"messages": self.messages, "usage": {"tokens": self.tokens}}


def build_thread(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: float,
    estimate: Estimate | None = None,
    min_messages: float | None = 0,
    inclusive: bool | Trim | None = False,
    keep_system: bool = False,
    pair_safe: bool = False,
    start_on: str | None = None,
    format: str = "native",
    keep_first: int = 0,
) -> BuildResult:
    """The largest suffix of ``messages`` that fits ``max_tokens``, newest messages first.

    A message's cost is its own ``usage.tokens`` when JavaScript's ``tokens >= 0`` holds for
    it, else ``estimate(message)``; a figure that is not a finite number >= 0 counts as 0.
    The newest ``|min_messages|`` messages are kept whatever they cost. The message that
    would overflow the budget is dropped, or with ``inclusive=True`` kept whole, or with a
    trim function replaced by its trimmed copy (capped at the room left). The caller's
    messages are never mutated, and ``messages`` (any sequence) is read once, into a
    snapshot taken at the call, as production's copy is: an estimator or trim function that
    changes the caller's sequence changes nothing this call sees. O(n) plus n estimator
    calls.

    Four opt-in keywords shape the result the way chat APIs and harnesses need (all off by
    default, where the answer is exactly production's): the three below and ``keep_first``.

    * ``keep_system=True``: the leading system messages are always kept and counted first;
      the rest of the thread fits the budget left. A ``ValueError`` says by how much they
      alone exceed ``max_tokens``.
    * ``pair_safe=True``: a tool response is kept only with its request, and a request whose
      response is kept stays with it (pairs as :func:`vthread._messages.tool_pairs` matches
      them: by call id where the messages carry one, by order otherwise). The result never
      starts with a reply whose call was cut; ``min_messages`` counts pairs whole.
    * ``start_on="user"`` (or any type): the kept messages after the system ones begin at a
      message of that type, as APIs that require a user turn first expect.

    ``keep_first=N`` keeps the first ``N`` messages after the system ones ``keep_system``
    keeps (after none without it) and counts them first, as system messages are: a harness
    pins the task statement while the middle of a long run is dropped. With ``pair_safe``, a
    tool call among them keeps its reply (the pinned messages reach on to it). The rest fits
    the budget left, shaped as asked; a ``ValueError`` says by how much the kept messages
    alone exceed ``max_tokens``. A pinned first message of the ``start_on`` type opens the
    kept part, and ``start_on`` leaves the rest free.

    With ``pair_safe`` or ``start_on``, the result is the longest suffix within the budget
    that starts where they allow (production's own when it kept a straddling message that
    may start it), or longer when ``min_messages`` asks for more. When the newest messages
    fit but none of them may start it, nothing past the system and pinned messages is kept,
    and a ``UserWarning`` names the nearest allowed start and what it would cost. With a
    trim function and any of the opt-in keywords, the message that overflows is trimmed with
    the room left once the messages from the last allowed start before it are kept (a large
    tool result is kept trimmed with its call; with ``pair_safe`` the results of the calls
    made with its own share that room with it, each given an equal share of what is left,
    smallest first, and a call that overflows while its results fit is kept whole, its
    results trimmed), and one with no room left is dropped, not kept whole as production
    keeps it. O(n), with a sort of the results trimmed together.

    ``format`` names the messages' format as for :func:`vthread.scan`: ``"native"`` (the
    default; chat messages passed as native ones are warned about, since their system
    messages, types and tool pairs would not be seen), a chat format of
    :data:`vthread.adapters.FORMATS` (``"openai"``, ``"anthropic"``, ``"responses"``, ...),
    or ``"auto"``.
    In a chat format the messages are chosen as their native translation is read: a
    ``system`` (or ``developer``) message is a system message, ``start_on`` names the
    translated type (``"user"``; an Anthropic user turn holding only tool results is not
    one), and a tool call and its result (OpenAI ``tool_calls`` and ``tool`` messages,
    Anthropic ``tool_use`` and ``tool_result`` blocks) are a pair; the result holds copies
    of the caller's own messages, with no ``usage`` added (an API would refuse the key): a
    trim function is given the message with the usage it was counted at and returns the
    trimmed message as the API has it; it costs the ``usage.tokens`` the trim function set,
    else ``estimate`` of it (as the result holds it), else the room, and the result holds
    the caller's own ``usage`` as it was, or none.

    >>> thread = [{"text": "old", "usage": {"tokens": 60}},
    ...           {"text": "new", "usage": {"tokens": 50}}]
    >>> build_thread(thread, max_tokens=100).to_dict()
    {'messages': [{'text': 'new', 'usage': {'tokens': 50.0}}], 'usage': {'tokens': 50.0}}
    """
    # A list of plain dicts is read by the core, which checks every message is one; other
    # sequences (and a list holding anything else) are checked here, naming a bad message.
    # The list is read as it is at the call, copied first: costed and then copied, another
    # Python thread changing it between the two gave costs of another length (IndexError).
    if type(messages) is list:
        thread = list(messages)
        read = _core.own_token_costs(thread)
        if read is None:
            thread = check_messages(thread)
    else:
        read = None
        thread = check_messages(messages)
    view = _MessageView(thread, format, estimate)
    flag("keep_system", keep_system)
    view.pair_safe = flag("pair_safe", pair_safe)
    if start_on is not None and not isinstance(start_on, str):
        raise TypeError(f"start_on must be a message type (a str) or None, got "
                        f"{type(start_on).__name__}")
    if start_on is not None:
        view.check_start_on(start_on)
    pinned = integer_option("keep_first", keep_first, 0)
    limit = _number("max_tokens", max_tokens)
    if limit != limit:
        import warnings

        # Production compares every sum with NaN, which is never over it: the whole thread
        # is kept. That answer stands; a budget computed from a missing figure is said.
        warnings.warn("max_tokens is NaN: no sum is over it, so every message is kept (as "
                      "production keeps them); was the budget computed from a missing "
                      "figure?", RuntimeWarning, stacklevel=2)
    floor = abs(_number("min_messages", min_messages)) if min_messages is not None else 0.0
    if is_numpy_bool(inclusive):
        inclusive = flag("inclusive", inclusive)
    if not (inclusive is None or isinstance(inclusive, bool) or callable(inclusive)):
        raise TypeError(f"inclusive must be a bool or a trim function, got {shown(inclusive)}")

    # Every message is costed up front, oldest first, as production does: an estimator
    # sees each message exactly once, whichever of them end up in the thread, and a message
    # after it is read after that call (an estimator may change its figure). The core
    # reads the plain figures of a list of dicts in one pass; when it leaves some (no plain
    # figure >= 0), it reads them all again, calling _cost for those in their turn. Only the
    # kept messages are copied (when taken): the answer is the same, and most of a long
    # thread is not kept.
    translated = view.own_costs()
    if translated is not None:
        # A chat message's tokens are those its translation carries, as vthread scan counts
        # them; the estimator is asked only for the others.
        costs = [_cost(message, index, estimate) if cost is None else cost
                 for index, (message, cost) in enumerate(zip(thread, translated, strict=True))]
    elif read is None:
        costs = [_cost(message, index, estimate) for index, message in enumerate(thread)]
    else:
        figures, undecided = read
        if undecided:
            # Read again, each message the core cannot cost decided by the general rule in
            # its turn: the estimator is called there, and the messages after it are read
            # after the call, as production's map reads them.
            again = _core.own_token_costs(thread, partial(_cost, estimate=estimate))
            assert again is not None  # the same list of dicts
            figures = again[0]
        if format == "native" and not (keep_system or pair_safe or start_on is not None
                                       or pinned) and (
                inclusive is False or inclusive is None):
            # The common shape, walked and copied in the core (the twin is below).
            taken, total = _core.newest_fitting(thread, figures, 0, limit, floor)
            return BuildResult(taken, total)
        costs = figures.tolist()

    system = view.leading_system() if keep_system else 0
    head = _pinned_end(view, system, pinned, pair_safe)
    head_total = 0.0
    for tokens in costs[:head]:
        head_total += tokens
    if head and head_total > limit:
        # (a sum past the largest double is infinite: said so, not as "inf tokens")
        cost = (f"{head_total:g} tokens, {head_total - limit:g} more"
                if head_total < math.inf else "over 1.8e308 tokens (more than a double holds), "
                "more")
        # (with pair_safe the pinned messages reach on to their calls' replies: counted
        # apart, as "102 by keep_first=2" read as a miscount)
        by_pin = min(pinned, head - system)
        reached = head - system - by_pin
        parts = [f"{system} system"] if system else []
        parts.append(f"{by_pin} by keep_first={pinned}" if system or reached
                     else f"keep_first={pinned}")
        if reached > 0:
            parts.append(f"{reached} more up to the replies of the tool calls among them "
                         "(pair_safe)")
        what = (f"leading system message{'s' if head != 1 else ''}" if head == system
                else f"message{'s' if head != 1 else ''} kept first ({', '.join(parts)})")
        raise ValueError(f"the {head} {what} alone cost {cost} than max_tokens={limit:g}")
    if start_on is not None and head > system and view.starts(system, start_on):
        # A pinned message of that type opens the kept part: the rest may start anywhere
        # (a run with no user turn after its task kept nothing after it).
        start_on = None
    if start_on is not None:
        view.warn_if_no_start(start_on, head)
    shaped = keep_system or pinned > 0 or pair_safe or start_on is not None
    # With a shape asked for, a message to trim is trimmed with the room left once the
    # messages it needs before it are kept (its tool call), and one with no room left is
    # dropped, not kept whole as production keeps it: see _trimmed_with_its_start.
    deferred: list[tuple[int, float]] | None = (
        [] if callable(inclusive) and shaped else None)
    taken, total = _newest_fitting(thread, costs, head, limit - head_total, floor, inclusive,
                                   view, deferred)
    if deferred is not None or pair_safe or start_on is not None:
        allowed = _allowed_starts(view, head, len(thread) - head, pair_safe, start_on)
        if deferred:
            assert callable(inclusive)
            index, _ = deferred[0]
            kept = _trimmed_with_its_start(thread, costs, head, allowed, index,
                                           limit - head_total, floor, inclusive, view,
                                           pair_safe)
            if kept is not None:
                start, end, block, block_tokens = kept
                # Summed newest first, as production adds: the messages after the trimmed
                # one's turn, then the turn and those kept before it.
                total = _added_newest_first(_added_newest_first(0.0, costs[end:]),
                                            block_tokens)
                return _with_head(thread, costs, head, head_total,
                                  block + taken[end - index - 1:], total, view)
    if pair_safe or start_on is not None:
        first = len(thread) - len(taken)
        start = head + _allowed_start(costs[head:], allowed, limit - head_total,
                                      first - head, floor,
                                      bool(inclusive) and deferred is None)
        if start != first:
            taken = [view.copy(thread[i], costs[i]) for i in range(start, len(thread))]
            total = _added_newest_first(0.0, costs[start:])
        if start == len(thread) > first:
            _warn_no_start_fits(costs, head, first, allowed, limit - head_total, pair_safe,
                                start_on)
    return _with_head(thread, costs, head, head_total, taken, total, view)


def _warn_no_start_fits(costs: list[float], head: int, first: int, allowed: list[bool],
                        room: float, pair_safe: bool, start_on: str | None) -> None:
    """Warns that nothing past the ``head`` is kept although the newest messages from
    ``first`` on fit the ``room``: none of them starts where ``pair_safe`` and ``start_on``
    allow (a harness would otherwise send a thread of its system messages alone, in
    silence). The nearest allowed start is named with what its suffix costs. A ``start_on``
    that is no message's type at all was warned of already (``warn_if_no_start``)."""
    earlier = next((k for k in range(first - head - 1, -1, -1) if allowed[k]), None)
    if earlier is None and start_on is not None:
        return
    import warnings

    shapes = ([f"start_on={start_on!r}"] if start_on is not None else []) + (
        ["pair_safe"] if pair_safe else [])
    asked = f"{' and '.join(shapes)} allow{'s' if len(shapes) == 1 else ''}"
    fitting = len(costs) - first
    nearest = ("no earlier message may start it either" if earlier is None else
               f"the nearest that may, messages[{head + earlier}], begins one of "
               f"{_added_newest_first(0.0, costs[head + earlier:]):g} tokens, "
               f"with {room:g} to spend")
    warnings.warn(
        f"nothing is kept{' after the system and pinned messages' if head else ''}: the "
        f"newest {fitting} message{'s' if fitting != 1 else ''} fit the budget, but "
        f"{asked} no start among them; {nearest}", stacklevel=user_stacklevel())


def _pinned_end(view: _MessageView, system: int, pinned: int, pair_safe: bool) -> int:
    """Where the messages kept first end: the ``system`` ones, then ``pinned`` more (at most
    the thread), reaching on, with ``pair_safe``, to the reply of every call among them (a
    pair split there would leave a reply the kept messages cannot start with, or a call whose
    reply was dropped). O(n)."""
    end = min(system + pinned, view.length)
    if not pinned or not pair_safe or end == view.length:
        return end
    pairs, _ = view.tool_pairs(system)
    for request, response in sorted(pairs):  # by request: each may reach on further
        if system + request < end <= system + response:
            end = system + response + 1
    return end


def _with_head(thread: list[Mapping[str, Any]], costs: list[float], head: int,
                 head_total: float, taken: list[dict[str, Any]], total: float,
                 view: _MessageView) -> BuildResult:
    """The result: the ``head`` messages kept first (system, pinned), then ``taken``."""
    if head:
        return BuildResult([view.copy(thread[i], costs[i]) for i in range(head)] + taken,
                           head_total + total)
    return BuildResult(taken, total)


def _added_newest_first(total: float, costs: Sequence[float]) -> float:
    """``total`` plus ``costs`` added newest (last) first, as production sums a thread."""
    for tokens in reversed(costs):
        total += tokens
    return total


def _trimmed_with_its_start(
    thread: list[Mapping[str, Any]], costs: list[float], head: int, allowed: list[bool],
    index: int, limit: float, floor: float, trim: Trim, view: _MessageView, pair_safe: bool,
) -> tuple[int, int, list[dict[str, Any]], list[float]] | None:
    """With an opt-in shape, the message ``thread[index]`` that would overflow the budget
    (``limit``, after the messages kept first), trimmed together with the messages from the
    last allowed start at or before it (its tool call, for a tool result; the user turn
    before it, for ``start_on``; and earlier ones back to an allowed start while they cost
    nothing): those are kept whole, and the trim function is given the room left after
    them and the newer messages.

    With ``pair_safe``, when it is a tool result, the results of the calls made with its
    own (no result came back between them: a turn of parallel calls), older or newer than
    it, share that room with it, but for those the ``floor`` keeps whole: taken smallest
    first, each is given an equal share of the room still left (a whole number of tokens
    when the room and their figures are whole and it holds a token for each, else a
    fraction), kept whole when it fits its share and
    trimmed to it otherwise, so that what a small one leaves goes to the larger ones,
    whichever order they came in. When it is no result (a call, the model's text before
    its calls), it is kept whole and the results of the calls made about it share the
    room left. When that leaves no room, or the trim function drops one of the results,
    they are kept whole and the message alone is trimmed.

    The result: where the kept messages start and where the turn ends, the messages from
    the one to the other (the trimmed ones in their places) and the tokens of each; or None
    when no start allows it, no room is left, or the trim function drops the message.
    Production trims with the whole room and the shape then dropped the trimmed message,
    when it could not start the result: a tool result too large for the budget was lost
    with its call, the usual reason to trim."""
    allowed_at = next((k for k in range(index - head, -1, -1) if allowed[k]), None)
    if allowed_at is None:
        return None
    # Older messages that cost nothing are kept too, back to the earliest allowed start
    # they reach: the longest suffix, as without a trim.
    k = allowed_at
    while k > 0 and costs[head + k - 1] == 0:
        k -= 1
        if allowed[k]:
            allowed_at = k
    start = head + allowed_at
    if pair_safe:
        results = view.tool_results(head)
        shared = _results_of_its_calls(view, head, results, index, len(thread), floor)
        if shared:
            try:
                return _trimmed_turn(thread, costs, start, index, shared, index not in results,
                                     limit, trim, view)
            except _NotSharedError:
                # No room with the message kept whole, or the trim function dropped one of
                # the results: the message alone is trimmed, the results kept whole.
                pass
    return _trimmed_turn(thread, costs, start, index, frozenset(), False, limit, trim, view)


def _results_of_its_calls(view: _MessageView, head: int, results: frozenset[int], index: int,
                          n: int, floor: float) -> frozenset[int]:
    """The results to trim with ``thread[index]``: when it is a tool result, those of the
    calls made with its own (no result came back between them: a turn of parallel calls),
    older or newer than it; when it is no result, those of the calls made about it (its own,
    when it is a call), all newer than it. Not it, nor those the ``floor`` keeps whole.
    O(n)."""
    pairs, _ = view.tool_pairs(head)
    at = index
    if index in results:
        request = next((head + call for call, reply in pairs if head + reply == index), None)
        if request is None:
            return frozenset()  # a result no call made
        at = request
    earlier = max((k for k in results if k < at), default=-1)
    later = min((k for k in results if k > at), default=n)
    return frozenset(head + reply for call, reply in pairs
                     if earlier < head + call < later and head + reply in results
                     and head + reply != index and not n - (head + reply) <= floor)


class _NotSharedError(Exception):
    """:func:`_trimmed_turn` could not share the room: the message kept whole leaves none, or
    the trim function dropped one of the results."""


def _trimmed_turn(
    thread: list[Mapping[str, Any]], costs: list[float], start: int, index: int,
    shared: frozenset[int], whole: bool, limit: float, trim: Trim, view: _MessageView,
) -> tuple[int, int, list[dict[str, Any]], list[float]] | None:
    """``thread[index]`` trimmed, or kept whole when it fits its share (always kept
    ``whole`` when it is no result), with the messages from ``start`` kept whole and the
    ``shared`` results sharing the room with it (see
    :func:`_trimmed_with_its_start`): ``start``, the end of the messages given, they and
    the tokens of each; None when no room is left or the trim function drops
    ``thread[index]``; :class:`_NotSharedError` raised, with ``shared`` results, when the
    room cannot be shared among them."""
    end = max([*shared, index]) + 1
    room = limit - _added_newest_first(0.0, costs[end:])
    for k in range(end - 1, start - 1, -1):  # the whole messages' cost, newest first
        if (k != index or whole) and k not in shared:
            room -= costs[k]
    if not room > 0:
        if whole:
            raise _NotSharedError
        return None
    tokens = costs[start:end]
    trimmed: dict[int, dict[str, Any]] = {}
    waiting = sorted([*shared] if whole else [*shared, index], key=lambda k: (costs[k], k))
    figures_whole = room.is_integer() and all(costs[k].is_integer() for k in waiting)
    for position, k in enumerate(waiting):
        share = _share(room, len(waiting) - position, figures_whole)
        # (thread[index] may fit its share when a newer result is larger: that one is
        # trimmed instead)
        if costs[k] > share:
            cut = view.trimmed(trim, k, costs[k], share)
            if cut is None:
                if k != index:
                    raise _NotSharedError
                return None
            trimmed[k], tokens[k - start] = cut
        room -= tokens[k - start]
    block = [trimmed[k] if k in trimmed else view.copy(thread[k], costs[k])
             for k in range(start, end)]
    return start, end, block, tokens


def _share(room: float, count: int, whole: bool) -> float:
    """An equal share of ``room`` among ``count``: a whole number of tokens when the room
    and the figures shared are ``whole`` and the share at least 1 (the last, ``count == 1``,
    gets what is left), so that whole figures trimmed to their shares add up to the room
    exactly."""
    share = room / count
    if count > 1 and share >= 1 and whole:
        return float(math.floor(share))
    return share


_TRANSLATED_TYPES: Final = frozenset({"system", "user", "bot", "reasoning", "activity"})
"""The types chat messages translate to (``vthread.adapters``)."""
_CHAT_ROLES: Final = frozenset({"assistant", "tool", "developer", "function"})
"""Roles of chat messages that are no translated type (``start_on`` matches them as roles)."""

_UNSEEN = ("lose their system messages, turns and tool pairs (no native \"type\" tells "
           "them)")
"""What reading chat messages as native ones costs a build (for the warning)."""


def _priced(message: Mapping[str, Any], tokens: float) -> dict[str, Any]:
    """The copy of ``message`` the result holds: its usage the tokens it was counted at."""
    return {**message, "usage": {"tokens": tokens}}


def _as_given(message: Mapping[str, Any], tokens: float) -> dict[str, Any]:
    """The copy of a chat message the result holds: the caller's message as it is."""
    return dict(message)


def _unpriced(trimmed: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """A trim function's chat message as the result holds it: with the caller's own usage
    as it was when its message carried one, else with none (the usage the trim was shown or
    returned says a cost to the build, and an API would refuse the key)."""
    if "usage" in given:
        return {**trimmed, "usage": given["usage"]}
    return {key: value for key, value in trimmed.items() if key != "usage"}


def _trimmed_chat(trim: Trim, given: Mapping[str, Any], tokens: float, room: float,
                  index: int, estimate: Estimate | None) -> tuple[dict[str, Any], float] | None:
    """A chat message (``given``, counted at ``tokens``) trimmed to ``room``, as the result
    holds it (:func:`_unpriced`), and its cost, at most ``room``: the ``usage.tokens`` the
    trim function returned when it set one, else ``estimate`` of the trimmed message (a
    trim function writes an API's message, which has no such key: built anew, or a copy
    keeping the usage it was shown, which says the cost before trimming), else the room.
    None when the trim function drops it."""
    result = _trim_result(trim(_priced(given, tokens), _room_given(room)), index)
    if result is None:
        return None
    trimmed = _unpriced(result, given)
    usage = result.get("usage")
    # A usage equal to the one shown (kept by a copy, deep or shallow) says the cost before
    # trimming; another (a figure set, in place too) is the trim function's.
    if (isinstance(usage, Mapping) and "tokens" in usage
            and not (len(usage) == 1 and usage["tokens"] == tokens)):
        figure = token_figure(usage["tokens"])
    elif estimate is not None:
        figure = _estimated(trimmed, index, estimate, "to cost its trimmed message")
    else:
        figure = room
    if figure > room:
        _warn_overshoot(index, figure, room)
    return trimmed, min(figure, room)


def _warn_overshoot(index: int, tokens: float, room: float) -> None:
    """Say that the trim function's copy of chat message ``messages[index]`` costs
    ``tokens`` (the figure it set, or ``estimate`` of it), over the ``room`` it was given,
    and is counted at the room: the result's tokens then understate the thread, and a
    harness that sends it overflows the window it fitted (a trim function that returns the
    message unchanged, say). A native message's usage is capped as production caps it,
    without a word (production's own suite does it on purpose)."""
    import warnings

    warnings.warn(
        f"the trim function's copy of messages[{index}] costs {tokens:g} tokens, more than "
        f"the room of {room:g} it was given; it is counted at {room:g}, so the result's "
        f"tokens understate the thread: cut it to the room", UserWarning,
        stacklevel=user_stacklevel())


class _MessageView:
    """What the selection reads of each message of ``thread``: its type (a system message,
    a ``start_on`` type) and the tool pairs, read from the messages themselves when native,
    or from their native translation (each source message's first translated message, the
    pairs of the translation mapped to their source messages) in a chat format."""

    def __init__(self, thread: list[Mapping[str, Any]], format: str,
                 estimate: Estimate | None = None) -> None:
        self._thread = thread
        self._format = format
        self._roles: list[Any] | None = None  # (see _chat_roles)
        self._estimate = estimate
        self.pair_safe = False  # (set by build_thread: a trimmed message must keep its calls)
        self.copy: Callable[[Mapping[str, Any], float], dict[str, Any]] = _priced
        self._types: list[Any] | None = None
        self._native: list[dict[str, Any]] = []
        self._sources: list[int] = []
        self._call_ids: dict[int, Any] = {}  # the chat's call ids, by native message
        self._chat_pairs: tuple[list[tuple[int, int]], set[int]] | None = None
        self._chat_results: frozenset[int] = frozenset()  # read with _chat_pairs
        # native messages' tool_pairs, by the first message read (their lists not changed)
        self._native_pairs: dict[int, tuple[list[tuple[int, int]], list[int]]] = {}
        if format == "native":
            if thread and chat_like(thread[0]):
                warn_if_chat([thread], stacklevel=3, one=True, what=_UNSEEN)
            return
        from vthread.adapters import recording_call_ids

        call_ids: dict[int, Any] = {}
        with recording_call_ids(call_ids):
            native, sources = native_messages(thread, format)
        if sources is None:  # "auto" or "native" ("native" is above), the messages native
            return
        self._native, self._sources, self._call_ids = native, sources, call_ids
        types: list[Any] = [None] * len(thread)
        for native, source in zip(reversed(self._native), reversed(self._sources),
                                  strict=True):
            types[source] = native.get("type")  # the first of the source's, read last
        self._types = types
        self.copy = _as_given

    def trimmed(self, trim: Trim, index: int, tokens: float, room: float
                ) -> tuple[dict[str, Any], float] | None:
        """Message ``index`` (counted at ``tokens``) trimmed by ``trim`` to ``room``, as the
        result holds it, and its tokens; None when the trim function drops it. A native
        message as production trims it (:func:`_trim`); a chat message by
        :func:`_trimmed_chat`."""
        given = self._thread[index]
        if self.copy is _priced:
            cut = _trim(trim, _priced(given, tokens), room, index)
        else:
            cut = _trimmed_chat(trim, given, tokens, room, index, self._estimate)
        if cut is not None and self.pair_safe:
            self._check_calls_kept(given, cut[0], index)
        return cut

    def _check_calls_kept(self, given: Mapping[str, Any], trimmed: Mapping[str, Any],
                          index: int) -> None:
        """With ``pair_safe``, a ``ValueError`` when the trim function's copy of message
        ``index`` does not hold the tool calls and results it held (kind and call id of each,
        as the pairing reads them): a trim function that rebuilt an assistant message from
        its text dropped its calls, and the result held their replies without them, a
        request a chat API refuses."""
        before, after = self._tool_marks(given, index), self._tool_marks(trimmed, index)
        # (as multisets: a trim that reorders a turn's parallel results keeps every pair)
        if sorted(map(repr, before)) != sorted(map(repr, after)):
            def said(marks: list[tuple[Any, ...]]) -> str:
                return ", ".join(" ".join(str(part) for part in mark if part is not None)
                                 for mark in marks) or "none"

            raise ValueError(
                f"the trim function's copy of messages[{index}] holds other tool calls or "
                f"results than the message ({said(after)}, not {said(before)}); with "
                f"pair_safe=True a trimmed message must keep them (cut its text, not its "
                f"calls), or its pair is broken")

    def _tool_marks(self, message: Mapping[str, Any], index: int) -> list[tuple[Any, ...]]:
        """The tool calls and results ``message`` holds, as the pairing reads them: the
        kind (request, response) and call id of each (a chat message's from its native
        translation, read alone; a Responses item's own type and ``call_id`` too)."""
        if self.copy is _priced:
            activity = parse_activity(message, no_payload)
            if activity is None or activity.kind not in ("request", "response"):
                return []
            return [(activity.kind, activity_call_id(message))]
        from vthread.adapters import recording_call_ids

        call_ids: dict[int, Any] = {}
        try:
            with recording_call_ids(call_ids):
                native, _ = native_messages([message], self._format)
        except (TypeError, ValueError) as error:
            raise type(error)(f"the trim function's copy of messages[{index}]: "
                              f"{str(error).removeprefix('message 0: ')}") from None
        marks: list[tuple[Any, ...]] = []
        for position, translated in enumerate(native):
            activity = parse_activity(translated, no_payload)
            if activity is not None and activity.kind in ("request", "response"):
                marks.append((activity.kind, call_ids.get(position)))
        if _responses_type(message) is not None and "call_id" in message:
            marks.append((message.get("type"), message.get("call_id")))
        return marks

    def type_of(self, index: int) -> Any:
        if self._types is None:
            return self._thread[index].get("type")
        return self._types[index]

    def starts(self, index: int, start_on: str) -> bool:
        """Whether message ``index`` is one ``start_on`` names: its type; in a chat format
        also a role of the messages' own (``"assistant"``, ``"tool"``) that is no native
        type (``"user"`` stays the translated type: a user turn holding only tool results
        is a reply, not a user turn)."""
        if self._types is not None and start_on not in _TRANSLATED_TYPES:
            return is_text(self._chat_roles()[index], start_on)
        return is_text(self.type_of(index), start_on)

    def _chat_roles(self) -> list[Any]:
        """Each chat message's role (:func:`vthread.adapters.chat_role`: a LangChain
        message's is its type's, a Responses call's the assistant's; read by their own
        field alone, such messages matched no role, the result empty), read once, when a
        ``start_on`` names a role."""
        if self._roles is None:
            from vthread.adapters import chat_role, detect_format

            format_ = (detect_format(self._thread) or "openai" if self._format == "auto"
                       else self._format)
            self._roles = [chat_role(message, format_) for message in self._thread]
        return self._roles

    def check_start_on(self, start_on: str) -> None:
        """A ``start_on`` no chat message can ever match (a chat format's result would be
        empty, silently) is a ``ValueError`` naming those it can."""
        if self._types is None:
            return
        if start_on not in _TRANSLATED_TYPES | _CHAT_ROLES:
            from vthread.adapters import LANGCHAIN_ROLES

            names = ", ".join(sorted(_TRANSLATED_TYPES | _CHAT_ROLES))
            role = LANGCHAIN_ROLES.get(start_on)
            raise ValueError(f"start_on={start_on!r} matches no chat message; it is a "
                             f"translated type or a role: {names}"
                             + (f" (LangChain's {start_on!r} messages are {role!r})"
                                if role is not None and role != start_on else ""))

    def warn_if_no_start(self, start_on: str, head: int) -> None:
        """A ``start_on`` that is the type of no native message past the ``head`` (the
        system and pinned messages; a typo, ``"usr"``: native types are free) is warned of,
        the types there named: the result then keeps only the head. O(n)."""
        if self._types is not None or head >= self.length or any(
                self.starts(index, start_on) for index in range(head, self.length)):
            return
        import warnings

        types = sorted({str.__str__(kind) for kind in map(self.type_of, range(self.length))
                        if is_string(kind)})
        shown_types = ", ".join(repr(kind) for kind in types[:8])
        warnings.warn(
            f"start_on={start_on!r} is the type of no message after the system and pinned "
            f"ones, so none is kept but those (the types here: {shown_types or 'none'}"
            f"{', ...' if len(types) > 8 else ''})", stacklevel=user_stacklevel())

    def own_costs(self) -> list[float | None] | None:
        """Per source message of a chat format, the tokens its translation carries (the
        figures ``vthread scan`` reads: an OpenAI ``usage``'s completion tokens, a recorded
        response's), None where it carries none; None for native messages."""
        if self._types is None:
            return None
        costs: list[float | None] = [None] * len(self._thread)
        for message, source in zip(self._native, self._sources, strict=True):
            if message.get("usage") is None:
                continue
            has_own, raw = own_tokens(message)
            if has_own:
                costs[source] = (costs[source] or 0.0) + token_figure(raw)
        return costs

    @property
    def length(self) -> int:
        return len(self._thread)

    def leading_system(self) -> int:
        """How many messages at the start of the thread are system messages."""
        count = 0
        while count < len(self._thread) and is_text(self.type_of(count), "system"):
            count += 1
        return count

    def tool_pairs(self, first: int) -> tuple[list[tuple[int, int]], list[int]]:
        """:func:`vthread._messages.tool_pairs` of ``thread[first:]``, in its indices; in a
        chat format also the Responses items of built-in tools (a ``computer_call`` and its
        ``computer_call_output``, by call id: :func:`_other_tool_items`) and each reasoning
        item with the item after it, and each call from the reasoning that made it."""
        if self._types is None:
            # Read once for each first (the kept part's allowed starts, and the results a
            # trim shares the room among, read the same pairs).
            found = self._native_pairs.get(first)
            if found is None:
                found = self._native_pairs[first] = tool_pairs(self._thread[first:])
            return found
        if self._chat_pairs is None:
            self._chat_pairs = self._all_chat_pairs()
        pairs, orphans = self._chat_pairs
        return ([(a - first, b - first) for a, b in pairs if a >= first],
                sorted(o - first for o in orphans if o >= first))

    def tool_results(self, first: int) -> frozenset[int]:
        """The tool results at or after ``first``, in the thread's indices: the replies of
        the tool pairs :meth:`tool_pairs` reads and those no call made (in a chat format
        the source messages holding them), not the item after a reasoning item."""
        if self._types is None:
            pairs, orphans = self.tool_pairs(first)
            return frozenset([*(first + reply for _, reply in pairs),
                              *(first + orphan for orphan in orphans)])
        if self._chat_pairs is None:
            self._chat_pairs = self._all_chat_pairs()
        return frozenset(reply for reply in self._chat_results if reply >= first)

    def _all_chat_pairs(self) -> tuple[list[tuple[int, int]], set[int]]:
        """The pairs of the whole chat thread, each from the reasoning its call needs, and
        the replies no call made, in source indices: read once, whatever ``first`` each
        caller asks for (the pinned messages' end, then the kept part's)."""
        pairs, orphans = tool_pairs(self._native, self._call_ids)
        sources = self._sources
        kinds = [_responses_type(item) for item in self._thread]
        other_pairs, other_orphans = _other_tool_items(self._thread, kinds)
        reasoned = _reasoning_before(self._thread, kinds)
        every = [*((sources[a], sources[b]) for a, b in pairs), *other_pairs,
                 *_reasoning_pairs(self._thread, kinds)]
        self._chat_results = frozenset([*(sources[b] for _, b in pairs),
                                        *(b for _, b in other_pairs),
                                        *(sources[o] for o in orphans), *other_orphans])
        return ([(reasoned[a], b) for a, b in every],
                {sources[o] for o in orphans} | other_orphans)


def _responses_type(item: Mapping[str, Any]) -> str | None:
    """A Responses item's ``type`` (a str), else None: chat messages carry none."""
    return _by_content(item.get("type"))


def _by_content(value: Any) -> str | None:
    """A string as the plain ``str`` of its content (a subclass's own ``__eq__`` and
    ``__hash__`` are not asked: it is compared and keyed as JavaScript compares strings),
    else None."""
    return js_string(str.__str__(value)) if isinstance(value, str) else None


def _reasoning_before(thread: Sequence[Mapping[str, Any]], kinds: Sequence[str | None]
                      ) -> list[int]:
    """Per item, where the model's output that holds it begins to need keeping with it: the
    first of the run of ``reasoning`` items nearest before it in the same output (the items
    a model's one reply is made of: reasoning, assistant messages, tool calls), else the
    item itself. A Responses call is sent with the reasoning that made it, even with an
    assistant message (a preamble) between them: the API refuses it without. O(n)."""
    reasoned = list(range(len(thread)))
    nearest: int | None = None  # the nearest reasoning run's first item in this output
    previous_reasoning = False
    for index, (item, kind) in enumerate(zip(thread, kinds, strict=True)):
        if kind == "reasoning" and "role" not in item:
            if not previous_reasoning:
                nearest = index
            previous_reasoning = True
        else:
            previous_reasoning = False
            if not _model_output(item, kind):
                nearest = None
        if nearest is not None:
            reasoned[index] = nearest
    return reasoned


def _model_output(item: Mapping[str, Any], kind: str | None) -> bool:
    """Whether a Responses item (of type ``kind``) is part of a model's reply: an assistant
    message (of type ``message``, or of none, as the API takes one), or a tool call."""
    if is_text(item.get("role"), "assistant"):
        return kind is None or kind == "message"
    return kind is not None and kind.endswith("_call") and "role" not in item


def _reasoning_pairs(thread: Sequence[Mapping[str, Any]], kinds: Sequence[str | None]
                     ) -> list[tuple[int, int]]:
    """(first reasoning item of a run, the model's item right after the run): the API
    refuses a reasoning item sent without the item it was followed by, so the two are kept
    together as a call and its result are. O(n)."""
    pairs = []
    first: int | None = None
    for index, (item, kind) in enumerate(zip(thread, kinds, strict=True)):
        if kind == "reasoning" and "role" not in item:
            first = index if first is None else first
            continue
        if first is not None and _model_output(item, kind):
            pairs.append((first, index))
        first = None
    return pairs


def _other_tool_items(thread: Sequence[Mapping[str, Any]], kinds: Sequence[str | None]
                      ) -> tuple[list[tuple[int, int]], set[int]]:
    """The Responses items of built-in tools (``computer_call`` and
    ``computer_call_output``, ``local_shell_call`` and its output, ...), whose call ids the
    translation does not record: (call, output) pairs by tool and call id (an output's
    ``id`` where it has no ``call_id``, as :func:`vthread.adapters.built_in_call_id` reads
    it), and the outputs no call before them made. O(n)."""
    from vthread.adapters import built_in_call_id, built_in_tool

    pairs: list[tuple[int, int]] = []
    orphans: set[int] = set()
    waiting: dict[tuple[str, Any], deque[int]] = {}
    for index, (item, kind) in enumerate(zip(thread, kinds, strict=True)):
        built_in = None if kind is None or "role" in item else built_in_tool(kind)
        if built_in is None:
            continue
        tool, answers = built_in
        call_id = _by_content(built_in_call_id(item, answers))
        if call_id is None:
            continue
        if not answers:
            waiting.setdefault((tool, call_id), deque()).append(index)
        else:
            calls = waiting.get((tool, call_id))
            if calls:
                pairs.append((calls.popleft(), index))
            else:
                orphans.add(index)
    return pairs, orphans


def _cost(message: Mapping[str, Any], index: int, estimate: Estimate | None) -> float:
    """A message's cost by the general rule: its own usage.tokens when JavaScript's
    ``tokens >= 0`` holds, else the estimator's figure."""
    # No usage at all (the usual reason to be here) needs no JavaScript comparison.
    has_own, raw = own_tokens(message) if message.get("usage") is not None else (False, None)
    if not has_own:
        if estimate is None:
            raise ValueError(
                f"messages[{index}] carries no usage.tokens >= 0 and no estimate was given"
            )
        return _estimated(message, index, estimate)
    return token_figure(raw)


def _estimated(message: Mapping[str, Any], index: int, estimate: Estimate,
               needing: str = "which carries no usage.tokens >= 0") -> float:
    """``estimate``'s figure for ``messages[index]`` (``needing``: why it is asked, for the
    error of an estimate that is no function)."""
    if not callable(estimate):
        # Checked where it is first needed, as production calls it: a thread whose every
        # message carries its usage never asks for it.
        raise TypeError(f"estimate must be a function of a message, got "
                        f"{type(estimate).__name__} (needed for messages[{index}], "
                        f"{needing})")
    return estimate_figure(estimate(message), index)


def _newest_fitting(
    thread: Sequence[Mapping[str, Any]],
    costs: list[float],
    first: int,
    limit: float,
    floor: float,
    inclusive: bool | Trim | None,
    view: _MessageView,
    deferred: list[tuple[int, float]] | None = None,
) -> tuple[list[dict[str, Any]], float]:
    """Production's selection over ``thread[first:]`` (each message costing ``costs`` at its
    index): the newest messages within ``limit`` (see build_thread), as ``view`` copies
    and trims them. With ``deferred`` (a list), the message
    a trim function would be given is not trimmed: its (index, room) is appended there, for
    the caller to trim with the room its shape leaves (with no room left too: it is
    dropped, where production keeps it whole, unless the other results of its turn make
    room), and the messages after it are returned."""
    # The walk only finds where the kept suffix starts; the kept messages are copied after.
    n = len(thread)
    start = n  # the kept suffix is thread[start:], plus a trimmed message before it
    trimmed: dict[str, Any] | None = None
    total = 0.0
    for index in range(n - 1, first - 1, -1):
        tokens = costs[index]
        within_floor = n - index <= floor  # the messages taken so far, this one included
        if total + tokens > limit and not within_floor:
            if inclusive is True or (inclusive and not callable(inclusive)):
                start = index
                total += tokens
            elif callable(inclusive):
                room = limit - total
                if deferred is not None:
                    # (with no room left, dropped unless its turn's results make room)
                    deferred.append((index, room))
                elif room > 0:
                    # The trim function sees the message with the tokens it was counted at,
                    # in every format (see _MessageView.trimmed).
                    cut = view.trimmed(inclusive, index, tokens, room)
                    if cut is not None:
                        trimmed = cut[0]
                        total += cut[1]
                else:
                    start = index
                    total += tokens
            break
        start = index
        total += tokens
        if total >= limit and not within_floor and not inclusive:
            break
    taken = [view.copy(thread[index], costs[index]) for index in range(start, n)]
    if trimmed is not None:
        taken.insert(0, trimmed)
    return taken, total


def _allowed_starts(view: _MessageView, head: int, n: int, pair_safe: bool,
                    start_on: str | None) -> list[bool]:
    """``allowed[k]``: whether the kept suffix of the ``n`` messages after the ``head`` kept
    first (system, pinned) may begin at their ``k``-th (``k = n``: nothing kept), as pairs and
    ``start_on`` allow. O(n)."""
    allowed = [True] * (n + 1)
    if pair_safe:
        pairs, orphans = view.tool_pairs(head)
        allowed = _unsplit(pairs, n)
        for orphan in orphans:
            allowed[orphan] = False
    if start_on is not None:
        for k in range(n):
            allowed[k] = allowed[k] and view.starts(head + k, start_on)
    return allowed


def _unsplit(pairs: list[tuple[int, int]], n: int) -> list[bool]:
    """``unsplit[k]`` for ``k`` in ``0..n``: whether a start at the ``k``-th of ``n``
    messages splits none of the tool ``pairs`` (a start inside (request, response] splits
    the pair). O(n + pairs)."""
    inside = [0] * (n + 2)
    for request, response in pairs:
        inside[request + 1] += 1
        inside[response + 1] -= 1
    unsplit = [True] * (n + 1)
    depth = 0
    for k in range(n + 1):
        depth += inside[k]
        unsplit[k] = depth == 0
    return unsplit


def _allowed_start(costs: Sequence[float], allowed: list[bool], budget: float, chosen: int,
                   floor: float, inclusive: bool) -> int:
    """Where the kept suffix of the messages after the system ones begins (an index among
    them, ``costs`` theirs) once pairs and ``start_on`` are respected (``allowed``).

    The earliest allowed start whose suffix fits ``budget`` (fits as production judges it:
    its cost is not above the budget); production's own start ``chosen`` when it kept a
    straddling message whole (``inclusive``) and may begin there; and, when
    ``min_messages`` keeps more, the last allowed start at or before the floor's. O(n)."""
    n = len(costs)
    start = n
    suffix = 0.0
    for k in range(n - 1, -1, -1):  # newest first, as production adds
        suffix += costs[k]
        if suffix > budget:
            break
        if allowed[k]:
            start = k
    if inclusive and chosen < start and allowed[chosen]:
        start = chosen
    kept = int(min(floor, n)) if floor >= 1 else 0  # NaN and fractions below 1 keep none
    if kept > n - start:
        earlier = next((k for k in range(n - kept, -1, -1) if allowed[k]), None)
        if earlier is not None:
            start = min(start, earlier)
    return start


def _trim_result(result: object, index: int) -> Mapping[str, Any] | None:
    """A trim function's answer for ``messages[index]``: the message, or None when it
    drops it (None or False); anything else a ``TypeError``."""
    if result is None or result is False:
        return None
    if not isinstance(result, Mapping):
        raise TypeError(
            f"the trim function returned {type_name(result)} {shown(result)} for "
            f"messages[{index}], not a message or None"
        )
    return result


def _room_given(room: float) -> float:
    """The room as a trim function is given it: an ``int`` when it is a whole number of
    tokens (the figures are floats here; ``text[:room * 4]`` must work, as with the
    figures a caller wrote), else the float (a share of less than a token each, or the room
    an estimator's fractional figures leave)."""
    return int(room) if room.is_integer() else room


def _trim(
    trim: Trim, message: dict[str, Any], room: float, index: int
) -> tuple[dict[str, Any], float] | None:
    """A native message trimmed as production trims it: the usage returned counted, capped
    at ``room``."""
    result = _trim_result(trim(message, _room_given(room)), index)
    if result is None:
        return None
    if result.get("usage") is None:
        raise ValueError(
            f"the trim function returned no usage for messages[{index}]: {shown(result)}"
        )
    usage = result["usage"]
    tokens = token_figure(usage.get("tokens") if isinstance(usage, Mapping) else None)
    if tokens > room:
        # A trimmer that overshoots cannot blow the budget: production caps it (its own
        # suite does so on purpose: no word of it here).
        return {**result, "usage": {"tokens": room}}, room
    return dict(result), tokens


def _number(name: str, value: object) -> float:
    if type(value) is float:
        return value  # the usual case, checked by class
    number = real_number(value)  # a NumPy scalar or Decimal is as good as an int or float
    if number is None:
        raise TypeError(f"{name} must be a number, got {shown(value)}")
    try:
        return float(number)
    except OverflowError:
        return float("inf") if number > 0 else float("-inf")
