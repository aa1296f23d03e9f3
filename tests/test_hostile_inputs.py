"""Hostile input to the public functions (issue #12): callbacks that change the thread,
numbers of other types, sequences of other types."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import pytest

import vthread

_CALL = {"type": "activity", "text": "", "meta": {"activity": {
    "type": "request", "function": {"name": "ls", "arguments": {"path": "."}}}}}
_DONE = {"type": "activity", "text": "", "meta": {"activity": {
    "type": "response", "function": {"name": "ls", "arguments": {"path": "."}, "result": "a"}}}}


# ------------------------------------------------------------------ a thread changed mid-call


def test_build_thread_reads_a_snapshot_when_the_estimator_appends() -> None:
    """An estimator appending to the caller's list ends, answered as on the list untouched."""
    thread: list[dict[str, Any]] = [{"text": "a" * n} for n in range(1, 6)]
    untouched = vthread.build_thread(list(thread), max_tokens=9, estimate=lambda m: 2)

    def growing(message: Any) -> float:
        thread.append({"text": "more"})
        return 2

    got = vthread.build_thread(thread, max_tokens=9, estimate=growing)
    assert got == untouched
    assert len(thread) == 10  # called once per message of the snapshot


def test_build_thread_reads_a_snapshot_when_the_trim_function_clears() -> None:
    """A trim function that empties the caller's list changes nothing the call answers."""
    thread = [{"text": "x", "usage": {"tokens": 5}} for _ in range(4)]
    untouched = vthread.build_thread(
        list(thread), max_tokens=12, inclusive=lambda m, room: {**m, "usage": {"tokens": 1}})

    def clearing(message: Any, room: float) -> Any:
        thread.clear()
        return {**message, "usage": {"tokens": 1}}

    assert vthread.build_thread(thread, max_tokens=12, inclusive=clearing) == untouched


# ------------------------------------------------------------------- sequences of every kind


class _Thread(Sequence[Any]):
    """A sequence that is neither list nor tuple, and whose ``__getitem__`` takes no slice."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if not isinstance(index, int):
            raise TypeError("sequence index must be integer, not 'slice'")
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)


_CONTAINERS: dict[str, Callable[[list[Any]], Any]] = {
    "list": list, "tuple": tuple, "deque": deque, "custom Sequence": _Thread,
}
_THREAD_FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "build_thread": lambda t: vthread.build_thread(t, max_tokens=5, estimate=lambda m: 1),
    "describe_thread_cycle": vthread.describe_thread_cycle,
    "has_repeated_activity_tail": vthread.has_repeated_activity_tail,
    "has_repeated_result_run": vthread.has_repeated_result_run,
    "has_repeated_suffix": vthread.has_repeated_suffix,
    "is_thread_cyclic": vthread.is_thread_cyclic,
    "scan": lambda t: vthread.scan([t]).record(0),
    "scan (two threads)": lambda t: vthread.scan([t, [_CALL]]).names,
}
_THREADS = {
    "activity tail": [_CALL, _DONE] * 4,
    "result run": [_DONE, {"type": "reasoning", "text": "hm"}] * 3,
    "suffix": [{"type": "user", "text": "a"}, {"type": "bot", "text": "b",
                                               "usage": {"tokens": 3}}] * 3,
    "text run": [{"type": "bot", "text": "Checking now. " * 10}],
    "progress": [{"type": "user", "text": str(n)} for n in range(6)],
}


@pytest.mark.parametrize("thread", sorted(_THREADS))
@pytest.mark.parametrize("container", sorted(_CONTAINERS))
@pytest.mark.parametrize("function", sorted(_THREAD_FUNCTIONS))
def test_every_function_takes_every_sequence(function: str, container: str, thread: str) -> None:
    """Each public function of a thread answers a deque or custom sequence as its list."""
    messages = _THREADS[thread]
    expected = _THREAD_FUNCTIONS[function](list(messages))
    assert _THREAD_FUNCTIONS[function](_CONTAINERS[container](messages)) == expected


@pytest.mark.parametrize("function", sorted(_THREAD_FUNCTIONS))
@pytest.mark.parametrize("thread", [iter([_CALL]), {"type": "user"}, "text", b"xy", 3, None])
def test_every_function_refuses_what_is_no_sequence(function: str, thread: Any) -> None:
    """A generator, a mapping, a string or a number is a TypeError everywhere."""
    with pytest.raises(TypeError, match="must be a sequence"):
        _THREAD_FUNCTIONS[function](thread)
