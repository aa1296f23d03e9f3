"""Assemble the newest messages that fit a model's context window."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from vthread._jsvalue import real_number
from vthread._messages import check_messages, estimate_figure, own_tokens, token_figure

__all__ = ["BuildResult", "build_thread"]

Estimate = Callable[[Mapping[str, Any]], Any]
"""Token count of a message: a number; None, NaN, infinities and negatives count as 0."""

Trim = Callable[[dict[str, Any], float], "Mapping[str, Any] | Literal[False] | None"]
"""Trim a message to ``room`` tokens: the trimmed message (with a usage), or None to drop."""


@dataclass(frozen=True, slots=True)
class BuildResult:
    """The assembled thread, oldest first, each message a copy carrying its usage."""

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

    >>> thread = [{"text": "old", "usage": {"tokens": 60}},
    ...           {"text": "new", "usage": {"tokens": 50}}]
    >>> build_thread(thread, max_tokens=100).to_dict()
    {'messages': [{'text': 'new', 'usage': {'tokens': 50.0}}], 'usage': {'tokens': 50.0}}
    """
    thread = check_messages(messages)
    limit = _number("max_tokens", max_tokens)
    floor = abs(_number("min_messages", min_messages)) if min_messages is not None else 0.0
    if not (inclusive is None or isinstance(inclusive, bool) or callable(inclusive)):
        raise TypeError(f"inclusive must be a bool or a trim function, got {_shown(inclusive)}")

    # Every message is costed up front, oldest first, as production does: an estimator
    # sees each message exactly once, whichever of them end up in the thread.
    costed: list[tuple[dict[str, Any], float]] = []
    for index, message in enumerate(thread):
        has_own, raw = own_tokens(message)
        if not has_own:
            if estimate is None:
                raise ValueError(
                    f"messages[{index}] carries no usage.tokens >= 0 and no estimate was given"
                )
            tokens = estimate_figure(estimate(message), index)
        else:
            tokens = token_figure(raw)
        costed.append(({**message, "usage": {"tokens": tokens}}, tokens))

    taken: list[dict[str, Any]] = []
    total = 0.0
    for index in range(len(costed) - 1, -1, -1):
        message, tokens = costed[index]
        within_floor = len(taken) + 1 <= floor
        if total + tokens > limit and not within_floor:
            if inclusive is True or (inclusive and not callable(inclusive)):
                taken.append(message)
                total += tokens
            elif callable(inclusive):
                room = limit - total
                if room > 0:
                    trimmed = _trim(inclusive, message, room, index)
                    if trimmed is not None:
                        taken.append(trimmed[0])
                        total += trimmed[1]
                else:
                    taken.append(message)
                    total += tokens
            break
        taken.append(message)
        total += tokens
        if total >= limit and not within_floor and not inclusive:
            break
    taken.reverse()
    return BuildResult(taken, total)


def _trim(
    trim: Trim, message: dict[str, Any], room: float, index: int
) -> tuple[dict[str, Any], float] | None:
    result = trim(message, room)
    if result is None or result is False:
        return None
    if not isinstance(result, Mapping) or result.get("usage") is None:
        raise ValueError(
            f"the trim function returned no usage for messages[{index}]: {_shown(result)}"
        )
    usage = result["usage"]
    tokens = token_figure(usage.get("tokens") if isinstance(usage, Mapping) else None)
    if tokens > room:
        # A trimmer that overshoots cannot blow the budget: production caps it.
        return {**result, "usage": {"tokens": room}}, room
    return dict(result), tokens


def _number(name: str, value: object) -> float:
    number = real_number(value)  # a NumPy scalar or Decimal is as good as an int or float
    if number is None:
        raise TypeError(f"{name} must be a number, got {_shown(value)}")
    try:
        return float(number)
    except OverflowError:
        return float("inf") if number > 0 else float("-inf")


def _shown(value: object) -> str:
    """``repr(value)`` for an error message, or its type where its ``repr`` raises (the
    error the caller needs is ours, not the value's)."""
    try:
        return repr(value)
    except Exception:
        return f"a {type(value).__name__}"
