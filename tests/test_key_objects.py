"""Which objects spell a message's keys never changes an answer: keys made anew per message
(a parser without a key cache), interned ones, one object shared per key (orjson's cache,
`json`'s memo), `str` subclasses with their own hash or equality (found as `dict.get`
finds them, as the reference reads them); nor do calls overlapping on two threads, or a
call a message's own code makes mid-call. (A speed-up that looked fields up with the
messages' own key objects broke the `str`-subclass case and was withdrawn.)"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import vthread
from benchmarks.workload import generate_threads
from vthread import _reference


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


class _WrappedMessage(Mapping[str, Any]):
    """A message read through a mapping of its own, which its subclasses make do something
    while a field is looked up."""

    def __init__(self, message: dict[str, Any]) -> None:
        self._message = message

    def __getitem__(self, key: str) -> Any:
        return self._message[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._message)

    def __len__(self) -> int:
        return len(self._message)


class _SlowMessage(_WrappedMessage):
    """A message whose lookups let the GIL go: another thread's call into the core runs in
    the middle of this one's."""

    def __getitem__(self, key: str) -> Any:
        time.sleep(0)
        return super().__getitem__(key)


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


class _CallsTheCore(_WrappedMessage):
    """A message whose lookups describe another thread first: a call into the core made
    while the core is reading this message."""

    def __init__(self, message: dict[str, Any], inner: list[Any]) -> None:
        super().__init__(message)
        self._inner = inner
        self.answers: list[str | None] = []

    def __getitem__(self, key: str) -> Any:
        self.answers.append(vthread.describe_thread_cycle(self._inner))
        return super().__getitem__(key)


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


class _ZeroHash(str):
    """A key found as `str` equality finds it, in a dict's slow lookup path (every key with
    a zero hash collides)."""

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


_INTERNED_TYPE = sys.intern("type")


class _IsTheInternedName(str):
    """A key equal only to the interned name itself: found by `message.get("type")`, as the
    reference looks fields up, and by no other object spelling "type"."""

    def __eq__(self, other: object) -> bool:
        return other is _INTERNED_TYPE

    __hash__ = str.__hash__


def test_str_subclass_keys_are_found_as_dict_get_finds_them() -> None:
    colliding: list[dict[Any, Any]] = []
    for turn in range(4):
        colliding += [{"type": f"u{turn}", "text": "same"}, {_ZeroHash("type"): "x", "text": "z"}]
    by_identity = [{_IsTheInternedName("type"): f"u{turn}", "text": "same"} for turn in range(6)]
    options = _reference.cycle()
    for thread in (colliding, by_identity):
        expected = _reference.describe_thread_cycle(thread, options)
        assert expected is None
        assert vthread.describe_thread_cycle(thread) == expected
        # Another thread's ordinary keys read first, in the same call.
        assert vthread.scan([_fresh_keys(THREADS[0]), thread]).names == [EXPECTED[0], expected]
