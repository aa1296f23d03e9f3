"""``describe_thread_cycle`` keeps one call's buffers for the next (a harness asks after
every turn): each call answers as the reference does, whatever the calls before it read,
raised, or held that was too large to keep, and a call made while another is reading (by a
message's own code) answers for its own thread and leaves the outer call's answer intact."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import reference_api
from hypothesis import given
from hypothesis import strategies as st

import vthread
from tests.strategies import cycle_keywords, threads


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


@given(st.lists(st.tuples(threads(max_size=40), cycle_keywords(), _BETWEEN),
                min_size=1, max_size=6))
def test_each_call_answers_as_the_reference(calls: list[Any]) -> None:
    for thread, keywords, between in calls:
        assert vthread.describe_thread_cycle(thread, **keywords) == \
            reference_api.describe_thread_cycle(thread, **keywords)
        if between == "raising":
            # An error part way through: the buffers are left half written.
            broken = [*thread, _Raising("type"), *thread]
            with pytest.raises(LookupError):
                vthread.describe_thread_cycle(broken)
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


@given(threads(max_size=30), threads(max_size=30))
def test_a_call_inside_another_answers_for_its_own_thread(outer: list[Any],
                                                          inner: list[Any]) -> None:
    answers: list[Any] = []
    asking = [*outer, _Reentrant({"type": "bot", "text": "hi"}, inner, answers)]
    plain = [*outer, {"type": "bot", "text": "hi"}]
    assert vthread.describe_thread_cycle(asking) == reference_api.describe_thread_cycle(plain)
    assert answers
    assert set(answers) == {reference_api.describe_thread_cycle(inner)}
