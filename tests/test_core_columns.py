"""The core's columns behind scan and the single-thread heuristics, across the boundary."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import cycle_keywords, threads

import vthread
from tests.peak_memory import PEAK_KIB, needs_proc
from vthread import _core
from vthread import _reference as ref
from vthread._options import cycle_options
from vthread.scan import least_rotation


@pytest.fixture
def colliding_screens() -> Iterator[None]:
    """Every suffix screen, and every exact key's fingerprint, narrowed to one bit: almost
    all messages collide, and only their canonical bytes tell them apart."""
    _core._set_screen_bits(1)
    try:
        yield
    finally:
        _core._set_screen_bits(64)


@settings(max_examples=300, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(threads(max_size=20), max_size=6), cycle_keywords())
def test_colliding_screens_change_no_answer(colliding_screens: None,
                                            batch: list[list[dict[str, Any]]],
                                            keywords: dict[str, Any]) -> None:
    """With screens and exact fingerprints forced to collide, scan still gives the
    reference's answers: a collision costs time, never an answer."""
    result = vthread.scan(batch, **keywords)
    options = cycle_options(**keywords)
    for row, thread in enumerate(batch):
        expected = ref.attribute(thread, options)
        assert int(result.codes[row]) == expected.code
        assert int(result.period[row]) == expected.period
        assert int(result.repetitions[row]) == expected.repetitions
        assert vthread.has_repeated_suffix(thread, **keywords) == ref.has_repeated_suffix(
            thread, options)


def test_colliding_screens_alone_do_not_make_a_loop(colliding_screens: None) -> None:
    """Distinct messages whose screens collide are still distinct."""
    thread = [{"type": "user", "text": f"question {i}"} for i in range(40)]
    assert vthread.scan([thread]).names == [None]
    assert vthread.describe_thread_cycle(thread) is None


class _OwnHash(str):
    """A str whose hash is not its content's."""

    def __hash__(self) -> int:
        return id(self)


class _NoHash(str):
    """A str that refuses to be hashed."""

    def __hash__(self) -> int:
        raise RuntimeError("no hashing here")


@pytest.mark.parametrize("kind", [_OwnHash, _NoHash])
def test_answers_never_depend_on_python_hashing(kind: type[str]) -> None:
    """Equal strings are equal whatever their __hash__ does: scan and describe agree, and
    neither asks for a hash."""
    thread = [
        {"type": "user", "text": "A"},
        {"type": "bot", "text": kind("y")},
        {"type": "user", "text": "A"},
        {"type": "bot", "text": kind("y")},
    ]
    assert vthread.describe_thread_cycle(thread) == "repeated_suffix"
    assert vthread.scan([thread]).names == ["repeated_suffix"]


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        ([[{"type": "user"}], "not a thread"], "thread 1: messages must be a sequence"),
        ([[{"type": "user"}, 7]], "thread 0: messages[1] must be a mapping, got int"),
        ([({"type": "user"}, None)], "thread 0: messages[1] must be a mapping, got NoneType"),
    ],
)
def test_errors_name_thread_and_message(batch: list[Any], message: str) -> None:
    """A bad thread or message is a TypeError naming where it is."""
    with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        vthread.scan(batch)


def test_single_thread_errors_name_the_message() -> None:
    """The single-thread calls name the message index alone."""
    with pytest.raises(TypeError, match=r"^messages\[2\] must be a mapping, got list$"):
        vthread.describe_thread_cycle([{}, {}, []])


def test_infinite_thread_options_are_clamped_not_overflowing() -> None:
    """Huge counts are legal options: they clamp and nothing is allocated for them."""
    thread = [{"type": "user", "text": "a"}] * 6
    assert vthread.scan([thread], min_result_repetitions=1e30, min_repetitions=1e30).names == [
        None
    ]
    assert math.isnan(vthread.scan([thread], min_repetitions=1e30).loop_tokens[0])


@given(st.lists(st.integers(0, 3), min_size=1, max_size=30))
def test_least_rotation_is_the_least_of_all_rotations(items: list[int]) -> None:
    """Booth's algorithm finds the rotation the quadratic definition finds."""
    start = least_rotation(items)
    assert items[start:] + items[:start] == min(
        items[i:] + items[:i] for i in range(len(items))
    )


@needs_proc
def test_a_thread_repeating_large_messages_keeps_one_copy_of_each() -> None:
    """The exact pass keeps a message's canonical bytes only while no earlier message read
    equals it: a loop of two 200 KB messages, 2,000 long (400 MB of text), is confirmed in
    a few MB, not in a copy of every message (measured in a fresh process: its peak RSS)."""
    import subprocess
    import sys

    program = (
        "import vthread\n"
        "thread = [{'type': 'bot', 'text': 'x' * 200_000 + str(i % 2)} for i in range(2_000)]\n"
        f"before = {PEAK_KIB}\n"
        "assert vthread.has_repeated_suffix(thread)\n"
        "assert vthread.describe_thread_cycle(thread) == 'repeated_suffix'\n"
        f"print({PEAK_KIB} - before)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          check=True, timeout=300)
    grown_kb = int(done.stdout)
    assert grown_kb < 50_000, grown_kb
