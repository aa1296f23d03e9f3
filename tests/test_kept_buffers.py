"""``describe_thread_cycle`` keeps one call's buffers for the next (a harness asks after
every turn): each call answers as the reference does, whatever the calls before it read,
raised, or held that was too large to keep, and a call made while another is reading (by a
message's own code) answers for its own thread and leaves the outer call's answer intact."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import reference_api
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vthread
from tests.strategies import cycle_keywords, threads
from vthread import _core

_SLOW_DRAWS = settings(deadline=None,
                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class _Raising(Mapping[str, Any]):
    """A message whose ``get`` of one field raises, part way through a thread's reading."""

    def __init__(self, field: str) -> None:
        self.field = field

    def __getitem__(self, key: str) -> Any:
        if key == self.field:
            raise LookupError(f"no {key} here")
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _long(size: int) -> list[dict[str, Any]]:
    """A repeated block whose messages' encodings outgrow what a call keeps (1 MiB)."""
    return [{"type": "bot", "text": "x" * size}, {"type": "user", "text": "again"}] * 3


_BETWEEN = st.sampled_from(["none", "raising", "long", "many"])


@_SLOW_DRAWS
@given(st.lists(st.tuples(threads(max_size=40), cycle_keywords(), _BETWEEN),
                min_size=1, max_size=6))
def test_each_call_answers_as_the_reference(calls: list[Any]) -> None:
    for thread, keywords, between in calls:
        assert vthread.describe_thread_cycle(thread, **keywords) == \
            reference_api.describe_thread_cycle(thread, **keywords)
        if between == "raising":
            # An error part way through, the buffers left half written: at the last
            # message, which the activity tail reads after the suffix pass has run, and in
            # the middle, which some threads' checks never reach.
            with pytest.raises(LookupError):
                vthread.describe_thread_cycle([*thread, _Raising("type")], **keywords)
            with contextlib.suppress(LookupError):
                vthread.describe_thread_cycle([*thread, _Raising("type"), *thread], **keywords)
        elif between == "long":
            assert vthread.describe_thread_cycle(_long(600_000)) == "repeated_suffix"
        elif between == "many":
            many = [{"type": "bot", "text": str(number)} for number in range(70_000)]
            assert vthread.describe_thread_cycle(many) is None


class _Reentrant(Mapping[str, Any]):
    """A message whose reading describes another thread (a callback a harness wrote)."""

    def __init__(self, fields: dict[str, Any], other: list[Any], answers: list[Any]) -> None:
        self.fields = fields
        self.other = other
        self.answers = answers

    def __getitem__(self, key: str) -> Any:
        if key == "type":
            self.answers.append(vthread.describe_thread_cycle(self.other))
        return self.fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


@_SLOW_DRAWS
@given(threads(max_size=30), threads(max_size=30))
def test_a_call_inside_another_answers_for_its_own_thread(outer: list[Any],
                                                          inner: list[Any]) -> None:
    answers: list[Any] = []
    asking = [*outer, _Reentrant({"type": "bot", "text": "hi"}, inner, answers)]
    plain = [*outer, {"type": "bot", "text": "hi"}]
    assert vthread.describe_thread_cycle(asking) == reference_api.describe_thread_cycle(plain)
    assert answers
    assert set(answers) == {reference_api.describe_thread_cycle(inner)}


def _many(count: int) -> list[dict[str, Any]]:
    return [{"type": "bot", "text": str(number)} for number in range(count)]


def test_a_call_s_buffers_are_kept_for_the_next_up_to_a_bound() -> None:
    """What the calls above rely on is there at all: a short thread's buffers are kept (and
    used: the next short call keeps no more than the first), a long thread's let go."""
    def kept_after(thread: list[Any]) -> int | None:
        vthread.describe_thread_cycle(thread)
        return _core.kept_buffer_bytes()

    short = kept_after(_many(60))
    assert short is not None and 0 < short <= _core.most_kept_buffer_bytes()
    assert kept_after(_many(60)) == short
    assert kept_after(_many(70_000)) is None
    assert kept_after(_long(600_000)) is None
    assert kept_after(_many(60)) is not None
    # A call made inside another's reading keeps its own only once the outer call is done
    # with its: one set is kept after both.
    answers: list[Any] = []
    vthread.describe_thread_cycle([*_many(5), _Reentrant({"type": "bot"}, _many(3), answers)])
    assert set(answers) == {None} and _core.kept_buffer_bytes() is not None
    # Each OS thread keeps its own.
    seen: list[int | None] = []
    worker = threading.Thread(target=lambda: seen.append(_core.kept_buffer_bytes()))
    worker.start()
    worker.join()
    assert seen == [None]
