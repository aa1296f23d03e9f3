"""The public API as a user's code calls it, checked by ``mypy --strict`` in CI (``.ci/run``):
what the documentation says each function takes must type-check. Nothing here runs."""

# ruff: noqa: F841  (each annotated assignment is a check of what a function returns)

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal, TypedDict

import numpy as np
import numpy.typing as npt

import vthread

runs: list[dict[str, Any]] = json.loads('[{"id": "r1", "messages": []}]')
chats: list[list[dict[str, Any]]] = [[{"role": "user", "content": "hi"}]]


def threads() -> Iterator[list[dict[str, Any]]]:
    yield [{"type": "user", "text": "hi"}]


class ChatMessage(TypedDict):
    """A harness's own type of its messages."""

    role: Literal["user", "assistant", "tool"]
    content: str


def trim(message: ChatMessage, room: float) -> ChatMessage | None:
    """A trim function typed on the harness's messages."""
    return {"role": message["role"], "content": message["content"][: int(room) * 4]}


def estimate(message: ChatMessage) -> int:
    return len(message["content"]) // 4 + 1


def calls() -> None:
    """Never run: mypy reads it."""
    # Run objects and lists of messages, in a list or a generator, in any format.
    found = vthread.scan(runs, format="auto")
    names: list[str | None] = found.names
    codes: npt.NDArray[np.int8] = found.codes
    from_chats = vthread.scan(chats, format="openai", jobs=2, anywhere=True, mask_volatile=True)
    from_tuples = vthread.scan([tuple(chat) for chat in chats], format="openai")
    from_generator = vthread.scan(threads())
    both = vthread.ScanResult.concatenate([found, from_tuples])
    record: dict[str, Any] = found.record(0)

    # One thread at a time: its messages, or a run object with a format.
    verdict: str | None = vthread.describe_thread_cycle(runs[0], format="auto")
    verdict = vthread.describe_thread_cycle(chats[0], format="openai")
    stuck: bool = vthread.is_thread_cyclic(runs[0], format="auto")
    stuck = vthread.has_repeated_suffix(chats[0], min_repetitions=2, format="openai")
    stuck = vthread.has_repeated_activity_tail(runs[0], format="auto")
    stuck = vthread.has_repeated_result_run(runs[0], format="auto")

    built = vthread.build_thread(chats[0], max_tokens=1000, estimate=lambda message: 10,
                                 format="openai", pair_safe=True)
    kept: list[dict[str, Any]] = built.messages

    guard = vthread.Guard()
    tripped: bool = guard.push("token ")
    print_: int = vthread.fingerprint({"a": 1})
    masked: list[Any] = vthread.masked_thread(threads().__next__())

    # A harness's typed messages, trim and estimate; a format held in a variable; a verdict
    # compared as one of its names.
    history: list[ChatMessage] = [{"role": "user", "content": "hi"}]
    fitted = vthread.build_thread(history, max_tokens=100, estimate=estimate, inclusive=trim,
                                  format="openai")
    format_: str = "openai"
    native: list[dict[str, Any]] = vthread.adapters.to_native(history, format_)
    named: vthread.Verdict | None = vthread.describe_thread_cycle(history, format=format_)
    if named == "repeated_suffix":
        pass
