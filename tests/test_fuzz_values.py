"""Fuzzing every public function with hostile Python values (issue #12).

NumPy scalars and arrays, ``Decimal``, dates, bytes, sets, custom objects, cycles, huge
integers, NaN and infinities, subclasses of the JSON types, sequences of every kind and
messages that are no mappings go into every callable of ``vthread.__all__``. Each call must
answer (the answer equal to the scalar reference's where there is one, the bulk call's equal
to the loop) or raise ``TypeError`` / ``ValueError`` with a message that says where; any
other exception, or a call that runs past :data:`HANG_S`, fails.

The budget is short by default; ``VTHREAD_FUZZ_EXAMPLES=5000`` runs a long one (see
docs/fuzzing.md, "Python values").
"""

from __future__ import annotations

import math
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

import numpy as np
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    HOSTILE_LEAVES,
    HOSTILE_VALUES,
    JSON_VALUES,
    KINDS,
    OPTION_VALUES,
    TEXTS,
    DictSub,
    StrSub,
    activities,
)

import vthread
from vthread import _reference as ref
from vthread._jsvalue import canonical
from vthread._options import cycle_options, text_run_options

EXAMPLES: Final = int(os.environ.get("VTHREAD_FUZZ_EXAMPLES", "30"))
"""Examples per test: 30 in CI (about a second each), thousands for a long run."""
HANG_S: Final = 20.0
"""A call that takes longer than this is a hang (the inputs here are a few values long)."""

FUZZ: Final = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)

# Words an error message must contain one of: it names the argument, message or option.
_WHERE: Final = ("messages", "thread", "text", "option", "estimate", "trim", "inclusive",
                 "max_tokens", "min_messages", "jobs", "message", "window", "ngram", "chunk",
                 "data")


class _Sequence(Sequence[Any]):
    """A sequence that is neither list nor tuple and cannot slice."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, int):
            raise TypeError("sequence index must be integer, not 'slice'")
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)


class _Mapping(Mapping[str, Any]):
    """A mapping that is no dict."""

    def __init__(self, items: dict[str, Any]) -> None:
        self._items = items

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


class _Hang(BaseException):
    """Raised in a call that outlived HANG_S (a BaseException: no handler swallows it)."""


@contextmanager
def _no_hang() -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise _Hang(f"a call took more than {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("answer", value) or ("error", exception class), failing on any other exception."""
    try:
        with _no_hang():
            return "answer", call()
    except (TypeError, ValueError) as error:
        text = str(error)
        assert any(word in text for word in _WHERE), f"the error does not say where: {text!r}"
        return "error", type(error)


def _twin(call: Callable[[], Any]) -> tuple[str, Any]:
    """The reference's outcome: it checks fewer arguments, so any exception is a refusal."""
    try:
        return "answer", call()
    except Exception as error:
        return "error", type(error)


def _agree(got: tuple[str, Any], expected: tuple[str, Any]) -> None:
    """An answer of the engine is the reference's answer."""
    if got[0] == "answer":
        assert expected == got


HOSTILE_FIELD = st.one_of(HOSTILE_LEAVES, HOSTILE_VALUES)


@st.composite
def hostile_messages(draw: st.DrawFn) -> Any:
    """A message whose fields hold hostile values, a mapping of another type, or no
    mapping at all."""
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(HOSTILE_LEAVES)
    if shape <= 2:
        message = dict(draw(activities()))
        function = message["meta"]["activity"]
        if isinstance(function, dict) and isinstance(function.get("function"), dict):
            for field in ("arguments", "result"):
                if draw(st.booleans()):
                    function["function"][field] = draw(HOSTILE_FIELD)
    else:
        message = {}
        for field, values in (("type", KINDS), ("text", TEXTS)):
            if draw(st.integers(0, 3)):
                message[field] = draw(st.one_of(values, HOSTILE_LEAVES))
        if draw(st.booleans()):
            message["meta"] = draw(st.one_of(JSON_VALUES, HOSTILE_FIELD))
        if draw(st.booleans()):
            message["usage"] = {"tokens": draw(HOSTILE_LEAVES)}
    wrap = draw(st.integers(0, 5))
    if wrap == 0:
        return DictSub(message)
    if wrap == 1:
        return _Mapping(message)
    return message


@st.composite
def hostile_threads(draw: st.DrawFn) -> Any:
    """A thread as a list, tuple, deque, custom sequence, generator or no sequence at all;
    often a repeated block, so the loop paths run too."""
    messages = draw(st.lists(hostile_messages(), max_size=6))
    if messages and draw(st.booleans()):
        messages = messages * draw(st.integers(2, 3))
    container = draw(st.integers(0, 9))
    if container == 0:
        return draw(HOSTILE_LEAVES)
    if container == 1:
        return iter(messages)
    kinds: list[Callable[[list[Any]], Any]] = [list, tuple, deque, _Sequence]
    return kinds[container % len(kinds)](messages)


HOSTILE_OPTIONS = st.one_of(OPTION_VALUES, st.sampled_from(
    [np.int64(3), np.float32(2.5), "3", True, 2**100, -(2**100), [2], 1j]))


@st.composite
def cycle_keywords(draw: st.DrawFn) -> dict[str, Any]:
    names = ["min_repetitions", "min_pattern_length", "max_pattern_length",
             "min_result_repetitions"]
    return {name: draw(HOSTILE_OPTIONS) for name in names if draw(st.integers(0, 3)) == 0}


_CYCLE_FUNCTIONS = ["describe_thread_cycle", "has_repeated_activity_tail",
                    "has_repeated_result_run", "has_repeated_suffix", "is_thread_cyclic"]


@FUZZ
@given(thread=hostile_threads(), keywords=cycle_keywords(),
       name=st.sampled_from(_CYCLE_FUNCTIONS))
def test_cycle_functions_answer_as_the_reference_or_refuse(
    thread: Any, keywords: dict[str, Any], name: str
) -> None:
    """A cycle heuristic answers as the reference does, or both refuse alike."""
    if isinstance(thread, Iterator):
        thread = list(thread)  # the reference reads the same thread again
        got = _outcome(lambda: getattr(vthread, name)(iter(thread), **keywords))
        assert got[0] == "error"
        return
    got = _outcome(lambda: getattr(vthread, name)(thread, **keywords))
    options = _twin(lambda: cycle_options(**keywords))
    if options[0] == "answer":
        _agree(got, _twin(lambda: getattr(ref, name)(thread, options[1])))


@FUZZ
@given(threads=st.lists(hostile_threads(), max_size=3), keywords=cycle_keywords())
def test_scan_is_describe_thread_cycle_per_thread(
    threads: list[Any], keywords: dict[str, Any]
) -> None:
    """``scan`` answers each thread as ``describe_thread_cycle`` does, or refuses."""
    threads = [list(t) if isinstance(t, Iterator) else t for t in threads]
    got = _outcome(lambda: vthread.scan(threads, **keywords))
    each = [_outcome(lambda t=t: vthread.describe_thread_cycle(t, **keywords))
            for t in threads]
    if got[0] == "answer":
        assert got[1].names == [answer for _, answer in each]
        assert all(not (tokens < 0) for tokens in got[1].loop_tokens.tolist())
    else:
        assert any(kind == "error" for kind, _ in each) or not threads


class _Estimator:
    """An estimator answering hostile values in turn, from the first again after reset()."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0

    def __call__(self, message: Any) -> Any:
        self.calls += 1
        return self.answers[self.calls % len(self.answers)]

    def reset(self) -> None:
        self.calls = 0


def estimators() -> st.SearchStrategy[_Estimator]:
    return st.lists(HOSTILE_LEAVES, min_size=1, max_size=4).map(_Estimator)


@FUZZ
@given(thread=hostile_threads(), estimate=estimators(),
       max_tokens=st.one_of(st.sampled_from([0, 1, 5, 1e9, math.inf, -1, math.nan]),
                            HOSTILE_LEAVES),
       min_messages=st.one_of(st.sampled_from([None, 0, 1, 3, -2]), HOSTILE_LEAVES),
       inclusive=st.sampled_from([False, True, None, "trim", "bad trim", 3]))
def test_build_thread_answers_as_the_reference_or_refuses(
    thread: Any, estimate: _Estimator, max_tokens: Any, min_messages: Any,
    inclusive: Any,
) -> None:
    """``build_thread`` answers as the reference does, or both refuse alike."""
    if inclusive == "trim":
        inclusive = lambda message, room: {**message, "usage": {"tokens": room / 2}}  # noqa: E731
    elif inclusive == "bad trim":
        inclusive = lambda message, room: {"text": "no usage"}  # noqa: E731
    if isinstance(thread, Iterator):
        thread = list(thread)
    keywords = {"max_tokens": max_tokens, "estimate": estimate, "min_messages": min_messages,
                "inclusive": inclusive}
    got = _outcome(lambda: vthread.build_thread(thread, **keywords))
    if got[0] == "answer":
        estimate.reset()
        expected = _twin(lambda: ref.build_thread(thread, **keywords))
        assert expected[0] == "answer"
        assert (got[1].messages, got[1].tokens) == (expected[1].messages, expected[1].tokens)


@FUZZ
@given(value=st.one_of(HOSTILE_VALUES, hostile_messages()))
def test_fingerprints_are_the_canonical_texts(value: Any) -> None:
    """``fingerprint`` is xxh3 of the Python twin's canonical text, whatever the value."""
    got = _outcome(lambda: vthread.fingerprint(value))
    assert got == ("answer", xxhash.xxh3_64_intdigest(canonical(value).encode("ascii")))
    message = _outcome(lambda: vthread.message_fingerprint(value))
    if isinstance(value, Mapping):
        assert message[0] == "answer"
    else:
        assert message == ("error", TypeError)


TEXT_LIKE = st.one_of(TEXTS, HOSTILE_LEAVES, st.text(max_size=40).map(StrSub),
                      st.text(alphabet="ab. \n", max_size=200))
TEXT_OPTIONS = st.fixed_dictionaries({}, optional={
    "min_units": HOSTILE_OPTIONS, "window": HOSTILE_OPTIONS, "max_unique_ratio": HOSTILE_OPTIONS})


@FUZZ
@given(texts=st.one_of(st.lists(TEXT_LIKE, max_size=4), HOSTILE_LEAVES), options=TEXT_OPTIONS)
def test_text_runs_answer_as_the_reference_or_refuse(texts: Any, options: dict[str, Any]) -> None:
    """``has_repeated_text_run`` is the reference's; the bulk call is the loop."""
    bulk = _outcome(lambda: vthread.has_repeated_text_runs(texts, **options))
    if not isinstance(texts, list):
        return
    each = [_outcome(lambda t=t: vthread.has_repeated_text_run(t, **options)) for t in texts]
    resolved = _twin(lambda: text_run_options(**options))
    for text, got in zip(texts, each, strict=True):
        if resolved[0] == "answer":
            _agree(got, _twin(lambda t=text: ref.has_repeated_text_run(t, resolved[1])))
    if bulk[0] == "answer":
        assert bulk[1].tolist() == [answer for _, answer in each]


GUARD_OPTIONS = st.fixed_dictionaries({}, optional={
    name: HOSTILE_OPTIONS for name in ("ngram", "window", "max_repeats", "max_unique_ratio",
                                       "min_chars")})


@FUZZ
@pytest.mark.filterwarnings("ignore:Guard.push ignores:UserWarning")  # (no str is drawn too)
@given(chunks=st.lists(TEXT_LIKE, max_size=6), options=GUARD_OPTIONS)
def test_guard_and_scan_texts_answer_or_refuse(chunks: list[Any], options: dict[str, Any]) -> None:
    """A Guard fed hostile chunks answers as the reference guard; scan_texts answers."""
    guard = _outcome(lambda: vthread.Guard(**options))
    twin = _twin(lambda: ref.guard(**options))
    if guard[0] == "answer":
        assert twin[0] == "answer"
        for chunk in chunks:
            _agree(_outcome(lambda c=chunk: guard[1].push(c)),
                   _twin(lambda c=chunk: twin[1].push(c)))
    _outcome(lambda: vthread.scan_texts(chunks, **options))


@FUZZ
@given(thread=hostile_threads(), name=st.sampled_from(_CYCLE_FUNCTIONS))
def test_masked_threads_answer_as_the_plain_call_on_the_copy(thread: Any, name: str) -> None:
    """mask_volatile=True answers as the plain call on masked_thread's copy, or refuses."""
    if isinstance(thread, Iterator):
        return
    masked = _outcome(lambda: vthread.masked_thread(thread))
    got = _outcome(lambda: getattr(vthread, name)(thread, mask_volatile=True))
    if masked[0] == "answer" and got[0] == "answer":
        assert got == _outcome(lambda: getattr(vthread, name)(masked[1]))


@FUZZ
@given(value=st.one_of(HOSTILE_VALUES, st.lists(hostile_messages(), max_size=3)))
def test_scan_arrow_refuses_what_is_not_a_table(value: Any) -> None:
    """Anything but an Arrow table (or exporter) is a TypeError naming what it needs."""
    got = _outcome(lambda: vthread.scan_arrow(value))
    assert got == ("error", TypeError)


def test_every_public_callable_is_fuzzed() -> None:
    """Each callable of ``vthread.__all__`` is driven by a test above (result types and
    errors are built only by the library)."""
    fuzzed = {*_CYCLE_FUNCTIONS, "scan", "build_thread", "fingerprint", "message_fingerprint",
              "has_repeated_text_run", "has_repeated_text_runs", "Guard", "scan_texts",
              "masked_thread", "scan_arrow"}
    results = {"BuildResult", "GuardReason", "GuardTrip", "ScanResult", "HEURISTIC_NAMES",
               "WorkerDiedError", "Verdict"}
    assert set(vthread.__all__) == fuzzed | results


@pytest.mark.parametrize("value", [np.int64(1), float("nan")])
def test_the_hang_guard_lets_quick_calls_through(value: Any) -> None:
    """The timer set by each call is cleared after it."""
    assert _outcome(lambda: vthread.fingerprint(value))[0] == "answer"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
