"""The core looks message fields up with the messages' own key objects while a call lasts
(`adopted_keys` in src/node.rs). A key object is only ever an exact `str` spelling the
field, so no answer may change: not with keys made anew per message, not when calls
overlap on two threads, not when a message's own code calls the core again mid-call."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import vthread
from benchmarks.workload import generate_threads


def _fresh_keys(value: Any) -> Any:
    """``value`` with every dict key a new `str` object (as a parser without a key cache
    makes them): no two messages share a key object."""
    if isinstance(value, dict):
        return {"".join(list(key)): _fresh_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh_keys(item) for item in value]
    return value


def _interned_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {sys.intern(key): _interned_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_interned_keys(item) for item in value]
    return value


THREADS = generate_threads(120, seed=23)
EXPECTED = [vthread.describe_thread_cycle(thread) for thread in THREADS]


def test_answers_are_the_same_whichever_objects_spell_the_keys() -> None:
    assert any(EXPECTED) and not all(EXPECTED)
    for rekeyed in (_fresh_keys(THREADS), _interned_keys(THREADS)):
        assert [vthread.describe_thread_cycle(thread) for thread in rekeyed] == EXPECTED
        assert vthread.scan(rekeyed).names == EXPECTED
        assert vthread.scan(rekeyed, anywhere=True).names == vthread.scan(
            THREADS, anywhere=True).names


class _SlowMessage(Mapping[str, Any]):
    """A message whose lookups let the GIL go: another thread's call into the core runs in
    the middle of this one's."""

    def __init__(self, message: dict[str, Any]) -> None:
        self._message = message

    def __getitem__(self, key: str) -> Any:
        time.sleep(0)
        return self._message[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._message)

    def __len__(self) -> int:
        return len(self._message)


def test_calls_overlapping_on_two_threads_answer_as_alone() -> None:
    slow = [[_SlowMessage(message) for message in thread] for thread in THREADS[:40]]
    fresh = _fresh_keys(THREADS)
    answers: dict[str, list[Any]] = {}
    errors: list[BaseException] = []

    def run(name: str, threads: list[Any]) -> None:
        try:
            got: list[Any] = []
            for _ in range(3):
                got = vthread.scan(threads).names
                got += [vthread.describe_thread_cycle(thread) for thread in threads]
            answers[name] = got
        except BaseException as error:  # reported below, on the test's own thread
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=run, args=("slow", slow)),
                   threading.Thread(target=run, args=("fresh", fresh))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert answers["slow"] == EXPECTED[:40] * 2
    assert answers["fresh"] == EXPECTED * 2


class _CallsTheCore(Mapping[str, Any]):
    """A message whose lookups describe another thread first: a call into the core made
    while the core is reading this message."""

    def __init__(self, message: dict[str, Any], inner: list[Any]) -> None:
        self._message = message
        self._inner = inner
        self.answers: list[str | None] = []

    def __getitem__(self, key: str) -> Any:
        self.answers.append(vthread.describe_thread_cycle(self._inner))
        return self._message[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._message)

    def __len__(self) -> int:
        return len(self._message)


def test_a_call_made_from_a_message_mid_call_answers_as_alone() -> None:
    looping = next(row for row, verdict in enumerate(EXPECTED) if verdict)
    progressing = next(row for row, verdict in enumerate(EXPECTED) if verdict is None)
    inner = _fresh_keys(THREADS[looping])
    for row in (looping, progressing):
        outer = _fresh_keys(THREADS[row])
        outer[-1] = _CallsTheCore(outer[-1], inner)
        assert vthread.describe_thread_cycle(outer) == EXPECTED[row]
        assert vthread.scan([outer, THREADS[looping]]).names == [EXPECTED[row],
                                                                  EXPECTED[looping]]
        assert outer[-1].answers
        assert set(outer[-1].answers) == {EXPECTED[looping]}
