"""The public API's contract beyond the recorded cases: errors, inputs left intact, edges."""

from __future__ import annotations

import copy
import importlib
import math
import os
import signal
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest

import vthread
from tests.deadline import ends_within
from vthread import _jsvalue
from vthread import _reference as ref
from vthread._options import cycle_options

HEURISTICS = [vthread.has_repeated_suffix, vthread.has_repeated_activity_tail,
              vthread.has_repeated_result_run, vthread.is_thread_cyclic,
              vthread.describe_thread_cycle]


def activity(kind: str, name: str, **function: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "",
            "meta": {"activity": {"type": kind, "function": {"name": name, **function}}}}


@pytest.mark.parametrize("heuristic", HEURISTICS)
@pytest.mark.parametrize("bad", ["not a thread", {"type": "user"}, 42, None])
def test_thread_that_is_not_a_sequence_is_a_type_error(heuristic: Any, bad: Any) -> None:
    """A thread must be a sequence of messages; a str, a mapping or a number is refused."""
    with pytest.raises(TypeError, match="sequence"):
        heuristic(bad)


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_a_mapping_holding_no_messages_is_said_to_be_no_run_object(heuristic: Any) -> None:
    """A mapping given as a thread that holds no messages: the error says where a run
    object holds them, as scan's does (it said only "got dict")."""
    with pytest.raises(TypeError, match=r'^messages must be a sequence of mappings \(or a run '
                                        r'object holding them under "messages", "traj" or '
                                        r'"history"\), got a dict without them$'):
        heuristic({"id": 7, "msgs": [{"type": "user", "text": "hi"}]})


@pytest.mark.parametrize("heuristic", HEURISTICS)
def test_message_that_is_not_a_mapping_names_its_index(heuristic: Any) -> None:
    """The error names the index of the offending message."""
    with pytest.raises(TypeError, match=r"messages\[2\]"):
        heuristic([{"type": "user"}, {"type": "bot"}, "oops"])


class _CallersError(TypeError):
    """A TypeError of the caller's own, raised by its mapping while it is read."""


class _FailingMeta(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def items(self) -> Any:
        raise _CallersError("the caller's mapping failed")


@pytest.mark.parametrize("heuristic", [*HEURISTICS, lambda thread: vthread.scan([thread])])
def test_a_type_error_of_the_callers_code_goes_on_as_raised(heuristic: Any) -> None:
    """A TypeError that the caller's own code raises while a thread is read reaches the
    caller as it was raised (its class, its traceback into that code), from every entry
    point: the one-thread checks made it a bare TypeError without its traceback."""
    thread = [{"type": "bot", "text": "r", "meta": _FailingMeta()}] * 4
    with pytest.raises(_CallersError, match="the caller's mapping failed") as caught:
        heuristic(thread)
    assert caught.value.__suppress_context__ is False
    assert any(entry.name == "items" for entry in caught.traceback)


def test_scan_error_names_thread_and_message() -> None:
    """In a batch, the error names the thread and the message."""
    good = [{"type": "user", "text": "hi"}]
    with pytest.raises(TypeError, match=r"thread 1: messages\[1\]"):
        vthread.scan([good, [good[0], ["not", "a", "message"]]])
    with pytest.raises(TypeError, match=r"thread 0"):
        vthread.scan(["a string is not a thread"])


@pytest.mark.parametrize("value", ["3", True, [2], {"n": 2}])
def test_option_that_is_not_a_number_is_unset_and_named(value: Any) -> None:
    """Strings, booleans and containers count as unset, as production's Number.isFinite
    reads them, with a warning naming the option (they were a TypeError)."""
    thread = [{"type": "user", "text": "a"}, {"type": "bot", "text": "b"}] * 2
    with pytest.warns(UserWarning, match="option min_repetitions="):
        assert vthread.has_repeated_suffix(thread, min_repetitions=value)
    with pytest.warns(UserWarning, match="option ngram="):
        assert vthread.Guard(ngram=value).options == vthread.Guard().options


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_option_means_default(value: float) -> None:
    """NaN and the infinities fall back to the default, as production does for infinity."""
    assert cycle_options(min_repetitions=value) == cycle_options()
    thread = [{"type": "user", "text": "a"}, {"type": "bot", "text": "b"}] * 2
    assert vthread.has_repeated_suffix(thread, min_repetitions=value)


def test_build_thread_without_estimate_names_the_message() -> None:
    """A message that needs an estimate when none was given is a ValueError with its index."""
    thread = [{"text": "a", "usage": {"tokens": 3}}, {"text": "b"}]
    with pytest.raises(ValueError, match=r"messages\[1\]"):
        vthread.build_thread(thread, max_tokens=10)


@pytest.mark.parametrize("build", [vthread.build_thread, ref.build_thread])
@pytest.mark.parametrize("figure", ["0x" + "f" * 300, "0b" + "1" * 1_100, "0o" + "7" * 400,
                                    " 0X" + "F" * 257 + "\u3000", "1" + "0" * 400])
def test_a_numeric_string_past_the_doubles_is_infinity(build: Any, figure: str) -> None:
    """A token figure written as a number past the doubles, in any radix JavaScript reads,
    is Infinity (``tokens >= 0`` holds, and a figure not finite counts as 0); a hex, octal or
    binary one raised OverflowError (a fidelity reviewer's find)."""
    assert _jsvalue.js_string_to_number(figure) == math.inf
    thread = [{"text": "a", "usage": {"tokens": figure}}, {"text": "b", "usage": {"tokens": 3}}]
    built = build(thread, max_tokens=10, estimate=lambda message: 100)
    assert built.tokens == 3.0 and [m["text"] for m in built.messages] == ["a", "b"]


def test_an_estimate_that_is_no_function_is_named_where_it_is_needed() -> None:
    """estimate=5: a TypeError naming the option and the message that needed it (it was
    Python's own "'int' object is not callable"); unasked for, it changes nothing, as in
    production, which calls it only for a message without its own usage."""
    thread = [{"text": "a", "usage": {"tokens": 3}}, {"text": "b"}]
    with pytest.raises(TypeError, match=r"^estimate must be a function of a message, got "
                                        r"int \(needed for messages\[1\]"):
        vthread.build_thread(thread, max_tokens=10, estimate=5)  # type: ignore[arg-type]
    own = thread[:1]
    assert (vthread.build_thread(own, max_tokens=10, estimate=5)  # type: ignore[arg-type]
            == vthread.build_thread(own, max_tokens=10))


def test_estimator_exception_propagates_unchanged() -> None:
    """The estimator's own exception reaches the caller, not a wrapper."""

    class EstimatorDownError(Exception):
        pass

    def estimate(message: Any) -> float:
        raise EstimatorDownError("tokenizer offline")

    with pytest.raises(EstimatorDownError, match="tokenizer offline"):
        vthread.build_thread([{"text": "a"}], max_tokens=10, estimate=estimate)


def test_trim_without_usage_is_a_value_error() -> None:
    """A trim function must return a message carrying its usage."""
    thread = [{"text": "old", "usage": {"tokens": 60}}, {"text": "new", "usage": {"tokens": 50}}]
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        vthread.build_thread(thread, max_tokens=100, inclusive=lambda m, room: {"text": "x"})


@pytest.mark.parametrize("build", [vthread.build_thread, ref.build_thread])
def test_trim_that_returns_no_message_is_a_type_error(build: Any) -> None:
    """A trim function that returns a string (or anything but a mapping or None) is told so,
    not that its result lacks a usage (a new user's find)."""
    thread = [{"text": "old", "usage": {"tokens": 60}}, {"text": "new", "usage": {"tokens": 50}}]
    with pytest.raises(TypeError, match=r"trim function returned str 'x' for messages\[0\], "
                                        r"not a message or None"):
        build(thread, max_tokens=100, inclusive=lambda m, room: "x")
    with pytest.raises(TypeError, match=r"trim function returned numpy.bool "):
        build(thread, max_tokens=100, inclusive=lambda m, room: np.True_)


def test_numpy_booleans_are_inclusive_flags() -> None:
    """inclusive=np.True_ keeps the straddling message as True does (it was refused)."""
    thread = [{"text": "old", "usage": {"tokens": 60}}, {"text": "new", "usage": {"tokens": 50}}]
    for value in (True, False):
        assert (vthread.build_thread(thread, max_tokens=100, inclusive=np.bool_(value))
                == vthread.build_thread(thread, max_tokens=100, inclusive=value))
    assert len(vthread.build_thread(thread, max_tokens=100, inclusive=np.True_).messages) == 2


def test_build_thread_leaves_input_untouched_and_copies() -> None:
    """Returned messages are copies; the caller's list and dicts are unchanged."""
    thread = [{"text": "a", "meta": {"k": [1, 2]}}, {"text": "b", "usage": {"tokens": 2}}]
    before = copy.deepcopy(thread)
    result = vthread.build_thread(thread, max_tokens=10, estimate=lambda m: 1)
    assert thread == before
    assert all(out is not original for out, original in zip(result.messages, thread,
                                                              strict=True))
    assert result.to_dict()["usage"] == {"tokens": 3.0}


def test_cyclic_and_odd_values_do_not_crash() -> None:
    """Cycles, sets, bytes and very deep nesting are compared, never raised on."""
    cyclic: dict[str, Any] = {"id": 1}
    cyclic["self"] = cyclic
    deep: list[Any] = []
    node = deep
    for _ in range(20_000):
        node.append([])
        node = node[0]
    odd = [{"type": "user", "text": "x", "meta": value}
           for value in (cyclic, {1, 2}, b"bytes", deep, object())]
    thread = odd + odd
    assert vthread.describe_thread_cycle(thread) == ref.describe_thread_cycle(
        thread, cycle_options())
    assert vthread.scan([thread, odd]).names == [
        ref.describe_thread_cycle(t, cycle_options()) for t in (thread, odd)]
    twin: dict[str, Any] = {"id": 1.0}
    twin["self"] = twin
    assert vthread.fingerprint(cyclic) == vthread.fingerprint(twin)
    # A value holding one of no JSON form (a set) is "[unserializable]", as a cycle is.
    assert vthread.fingerprint(cyclic) == vthread.fingerprint({"id": 2, "self": {1}})
    assert vthread.describe_thread_cycle(odd[:2] * 2) == "repeated_suffix"  # cycle, set


def test_heuristics_do_not_mutate_messages() -> None:
    """Checking a thread leaves every message as it was."""
    call = activity("request", "ls", arguments={"path": "."})
    answer = activity("response", "ls", arguments={"path": "."}, result="a b")
    thread = [call, answer] * 5
    before = copy.deepcopy(thread)
    for heuristic in HEURISTICS:
        heuristic(thread)
    vthread.scan([thread])
    assert thread == before


def test_long_identical_thread_is_one_message_repeated() -> None:
    """10,000 identical messages: one message repeated 10,000 times from the first, as a
    person counts it (the heuristic itself tries blocks of two)."""
    thread = [{"type": "bot", "text": "same"}] * 10_000
    result = vthread.scan([thread])
    assert result.names == ["repeated_suffix"]
    assert (int(result.loop_start[0]), int(result.period[0]),
            int(result.repetitions[0])) == (0, 1, 10_000)


def forked_always(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``vthread.scan(..., jobs=2)`` forks for any batch, on any machine: the list it gives
    gets a 1 for each scan that forked."""
    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES", 0)
    monkeypatch.setattr(scan_module, "usable_cpus", lambda: 2)  # on any machine
    split: list[int] = []
    parallel = scan_module._scan_parallel
    monkeypatch.setattr(scan_module, "_scan_parallel",
                        lambda *args: split.append(1) or parallel(*args))
    return split


def test_scan_jobs_gives_the_identical_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes answer exactly as one (the small batch is split all the same)."""
    split = forked_always(monkeypatch)
    call = activity("request", "ls", arguments={"path": "."})
    answer = activity("response", "ls", arguments={"path": "."}, result="a b")
    threads = [[call, answer] * (i % 6) + [{"type": "bot", "text": f"t{i}"}] for i in range(60)]
    one, two = vthread.scan(threads), vthread.scan(threads, jobs=2)
    assert split == [1]
    assert one.names == two.names
    assert one.record(5) == two.record(5)
    assert (one.codes == two.codes).all() and (one.signature == two.signature).all()


@pytest.mark.parametrize("anywhere", [False, True])
def test_a_split_scans_error_names_the_thread_in_the_callers_batch(
        anywhere: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad thread in a batch split over processes was named by its place in its worker's
    rows (thread 3 for thread 59; found by a tester): it is named as one process names it."""
    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES", 0)
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES_ANYWHERE", 0)
    threads: list[list[Any]] = [[{"type": "bot", "text": f"t{i}"}] * 3 for i in range(59)]
    threads.append([{"type": "bot", "text": "x"}, 1])
    with pytest.raises(TypeError) as one:
        vthread.scan(threads, anywhere=anywhere)
    with pytest.raises(TypeError) as two:
        vthread.scan(threads, jobs=2, anywhere=anywhere)
    assert str(two.value) == str(one.value)
    assert str(one.value).startswith("thread 59: messages[1] must be a mapping")


def test_an_error_raised_in_the_caller_during_a_split_scan_is_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception raised in the calling process while the workers run (a timeout's
    SIGALRM handler) propagates: it was taken for a worker's error and the batch scanned
    again (found by a reviewer)."""
    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES", 0)
    batch = scan_module._scan_batch

    def slow(*args: Any) -> Any:
        time.sleep(3)  # in the workers (forked with this in place)
        return batch(*args)

    monkeypatch.setattr(scan_module, "_scan_batch", slow)

    def timed_out(signum: int, frame: Any) -> None:
        raise TimeoutError("the caller's own deadline")

    previous = signal.signal(signal.SIGALRM, timed_out)
    threads = [[{"type": "bot", "text": f"t{i}"}] * 3 for i in range(8)]
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(TimeoutError, match="the caller's own deadline"):
            vthread.scan(threads, jobs=2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 3  # not scanned again after the workers


class _EndsItsProcess(Mapping[str, Any]):
    """A message that, read in a forked worker, ends that process (os._exit, as a
    segmentation fault or the kernel's out-of-memory killer would), or raises SystemExit."""

    def __init__(self, caller: int, how: str) -> None:
        self.caller, self.how = caller, how

    def __getitem__(self, key: str) -> Any:
        if os.getpid() != self.caller:
            if self.how == "exit":
                os._exit(3)
            raise SystemExit(3)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@pytest.mark.parametrize("anywhere", [False, True])
def test_a_worker_that_dies_is_an_error_not_a_wait(anywhere: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker process that ends without answering (killed, or ended by an object it read)
    makes scan(jobs=2) raise at once, saying so: the pool waited for its answer for ever (a
    tester's run was still waiting when killed at 40 s). A SystemExit raised in a worker is
    the caller's to see, as with jobs=1 (it hung too)."""
    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES", 0)
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES_ANYWHERE", 0)
    monkeypatch.setattr(scan_module, "usable_cpus", lambda: 2)
    threads: list[list[Any]] = [[{"type": "bot", "text": f"t{i}"}] * 3 for i in range(40)]
    threads[30] = [{"type": "bot", "text": "x"}, _EndsItsProcess(os.getpid(), "exit")]

    # (a regression would hang the run)
    with ends_within(60, "a worker that had died"), pytest.raises(
            vthread.WorkerDiedError, match=r"^scan\(jobs=2\): a worker process ended without "
            r"answering \(exit status 3"):
        vthread.scan(threads, jobs=2, anywhere=anywhere)
    # Raised in both processes: the caller sees the SystemExit, as with jobs=1.
    threads[30] = [{"type": "bot", "text": "x"}, _EndsItsProcess(-1, "raise")]
    with pytest.raises(SystemExit):
        vthread.scan(threads, jobs=2, anywhere=anywhere)
    # Raised in a worker, read here as the empty mapping it is in this process: the batch
    # is scanned again here and answers as jobs=1 does.
    threads[30] = [{"type": "bot", "text": "x"}, _EndsItsProcess(os.getpid(), "raise")]
    two = vthread.scan(threads, jobs=2, anywhere=anywhere)
    assert two.names == vthread.scan(threads, anywhere=anywhere).names
    assert two.record(30) == vthread.scan(threads, anywhere=anywhere).record(30)


def test_jobs_past_the_cpus_start_a_worker_per_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """scan(jobs=12) on a machine of 2 usable CPUs starts 2 workers, as ``vthread scan
    --jobs`` does (it forked 12, each copying the pages it read), and one CPU scans in this
    process."""
    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES", 0)
    started: list[int] = []
    parallel = scan_module._scan_parallel
    monkeypatch.setattr(scan_module, "_scan_parallel",
                        lambda threads, options, jobs, *rest: started.append(jobs) or parallel(
                            threads, options, jobs, *rest))
    threads = [[{"type": "bot", "text": f"t{i % 7}"}] * 3 for i in range(60)]
    for cpus, expected in ((2, [2]), (1, [])):
        started.clear()
        monkeypatch.setattr(scan_module, "usable_cpus", lambda cpus=cpus: cpus)
        assert vthread.scan(threads, jobs=12).names == vthread.scan(threads).names
        assert started == expected


def test_small_batch_is_not_split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below PARALLEL_MIN_MESSAGES, jobs=2 scans in this process: a pool would cost more."""
    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "_scan_parallel", lambda *args: pytest.fail("forked"))
    threads = [[{"type": "bot", "text": f"t{i}"}] * 3 for i in range(40)]
    assert vthread.scan(threads, jobs=2).names == vthread.scan(threads).names


def test_scan_rejects_bad_jobs() -> None:
    """jobs must be a positive integer."""
    with pytest.raises(ValueError, match="jobs must be a positive integer, got 0"):
        vthread.scan([], jobs=0)
    with pytest.raises(ValueError, match="jobs must be a positive integer, got -1"):
        vthread.scan([], jobs=np.int8(-1))
    thread = [{"type": "user", "text": "hi"}]
    assert vthread.scan([thread], jobs=np.int64(2)).names == [None]  # any integer type


def test_the_public_functions_type_hints_resolve_at_run_time() -> None:
    """typing.get_type_hints of every public function (what pydantic's validate_call,
    beartype and typer read) resolves; scan_arrow's names pyarrow's Table, which resolves
    once pyarrow is imported."""
    import typing

    for name in vthread.__all__:
        value = getattr(vthread, name)
        if callable(value) and not isinstance(value, type) and typing.get_origin(value) is None:
            # (a type alias, vthread.Verdict, is no function)
            if name == "scan_arrow":
                pyarrow = pytest.importorskip("pyarrow")
                typing.get_type_hints(value, {**sys.modules["vthread.arrow"].__dict__,
                                              "pa": pyarrow})
                continue
            typing.get_type_hints(value)


def test_a_nan_budget_keeps_every_message_as_production_and_says_so() -> None:
    """build_thread's max_tokens has no default: None is a TypeError; NaN keeps every
    message, as production's comparisons with NaN do, with a RuntimeWarning (a budget
    computed from a missing figure would otherwise send a whole thread unremarked)."""
    thread = [{"text": f"m{i}", "usage": {"tokens": 10}} for i in range(5)]
    with pytest.warns(RuntimeWarning, match="max_tokens is NaN"):
        kept = vthread.build_thread(thread, max_tokens=math.nan)
    assert len(kept.messages) == 5
    with pytest.raises(TypeError, match="max_tokens must be a number, got None"):
        vthread.build_thread(thread, max_tokens=None)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(vthread.build_thread(thread, max_tokens=math.inf).messages) == 5
        assert len(vthread.build_thread(thread, max_tokens=25).messages) == 2


def test_a_numpy_array_for_a_thread_is_told_what_to_do() -> None:
    """pandas reads a Parquet list column as NumPy arrays: the error says so and names the
    way that reads such a file (scan_arrow), from every entry point, in one wording."""
    from vthread._messages import NDARRAY_HINT

    thread = np.array([{"type": "user", "text": "hi"}], dtype=object)
    for call in (lambda: vthread.scan([thread]), lambda: vthread.scan([thread], format="auto"),
                 lambda: vthread.scan([thread], format="openai"),
                 lambda: vthread.describe_thread_cycle(thread)):  # type: ignore[arg-type]
        with pytest.raises(TypeError) as raised:
            call()
        assert str(raised.value).endswith("got ndarray" + NDARRAY_HINT)
    with pytest.raises(TypeError) as raised:
        vthread.scan(["a string"])  # type: ignore[list-item]
    assert "scan_arrow" not in str(raised.value)


def test_numpy_booleans_are_flags() -> None:
    """NumPy's boolean is as plain a yes or no as bool (it was refused as "must be a bool,
    got bool": NumPy 2 names its type bool; a new user's find)."""
    thread = [{"type": "user", "text": "hi"}] + [{"type": "bot", "text": "at 12:00:01"},
                                                 {"type": "bot", "text": "at 12:00:02"}] * 2
    for value in (True, False):
        assert (vthread.scan([thread], mask_volatile=np.bool_(value)).names
                == vthread.scan([thread], mask_volatile=value).names)
        assert (vthread.scan([thread], anywhere=np.bool_(value)).names
                == vthread.scan([thread], anywhere=value).names)
    assert vthread.scan([thread], mask_volatile=np.bool_(True)).names == ["repeated_suffix"]


@pytest.mark.parametrize(("keywords", "said"), [
    ({"jobs": "2"}, "jobs must be a positive integer, got str"),
    ({"jobs": None}, "jobs must be a positive integer, got NoneType"),
    ({"jobs": 2.0}, "jobs must be a positive integer, got float"),
    ({"anywhere": "no"}, "anywhere must be a bool, got str"),
    ({"anywhere": 1}, "anywhere must be a bool, got int"),
    ({"mask_volatile": None}, "mask_volatile must be a bool, got NoneType"),
    ({"mask_volatile": np.int64(1)}, "mask_volatile must be a bool, got numpy.int64"),
    ({"format": None}, "format must be a str ('auto' or one of native, openai"),
])
def test_an_option_of_the_wrong_type_is_a_type_error_naming_it(keywords: dict[str, Any],
                                                                said: str) -> None:
    """Options that are no number, flag or name are a TypeError naming the option, also for
    an empty batch: the string "no" was read as anywhere=True, jobs="2" was a ValueError
    and format=None a ValueError listing the formats."""
    thread = [{"type": "user", "text": "hi"}]
    for threads in ([], [thread]):
        with pytest.raises(TypeError) as raised:
            vthread.scan(threads, **keywords)
        assert str(raised.value).startswith(said)
    if "format" in keywords:
        with pytest.raises(TypeError, match="format must be a str"):
            vthread.describe_thread_cycle(thread, **keywords)
        with pytest.raises(TypeError, match="format must be a str"):
            vthread.build_thread(thread, max_tokens=10, **keywords)


def test_loop_signature_is_the_same_whatever_the_phase() -> None:
    """The same loop entered at a different message has the same signature."""
    a, b, c = ({"type": "bot", "text": t} for t in "abc")
    result = vthread.scan([[a, b, c] * 2, [b, c, a] * 2, [a, c, b] * 2])
    assert result.signature[0] == result.signature[1] != result.signature[2]


def test_utf16_tail_is_javascript_slice_and_bounded() -> None:
    """text.slice(-n) in UTF-16 units, also when a pair is cut, without reading the head."""
    from vthread._jsvalue import utf16_tail

    assert utf16_tail("ab🎉", 1).encode("utf-16-le", "surrogatepass") == "\udf89".encode(
        "utf-16-le", "surrogatepass")
    assert utf16_tail("ab🎉", 3) == "b🎉"
    assert utf16_tail("é" * 10, 4) == "éééé"
    huge = "x" * 5_000_000 + "é.🎉"
    assert utf16_tail(huge, 4) == "é.🎉"


def test_scan_accepts_an_iterable_of_threads() -> None:
    """A generator of threads is read once and answered like the list."""
    hello = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "hello"}]
    threads = [hello, hello * 2]
    assert vthread.scan(t for t in threads).names == vthread.scan(threads).names


def test_screens_do_not_depend_on_what_was_read_with_them() -> None:
    """A message read alongside a non-plain text (here a surrogate pair) is screened as when
    read alone: the engine reads messages in several passes, and equal messages screened
    differently would hide a loop."""
    bare = {"type": None, "usage": {"tokens": 0}}
    call = {"type": "activity", "text": "",
            "meta": {"activity": {"type": "request", "function": {"name": "read"}}}}
    odd = [dict(bare), call, {"type": None, "text": "\ud83c\udf89"}, call]
    loop = [dict(bare) for _ in range(4)]
    assert vthread.scan([odd, loop]).names == [None, "repeated_suffix"]
    assert vthread.scan([loop]).names == ["repeated_suffix"]


@pytest.mark.parametrize("bulk", [True, False])
def test_surrogate_pair_equals_its_code_point(bulk: bool) -> None:
    """JavaScript compares UTF-16 code units: "\\ud83c\\udf89" (two code points in Python)
    is the string "🎉", so a block written once each way still repeats."""
    user = {"type": "user", "text": "x"}
    thread = [user, {"type": "bot", "text": "\U0001F389"},
              user, {"type": "bot", "text": "\ud83c\udf89"}]
    want = ref.describe_thread_cycle(thread, ref.cycle())
    assert want == "repeated_suffix"
    got = vthread.scan([thread]).names[0] if bulk else vthread.describe_thread_cycle(thread)
    assert got == want


@pytest.mark.parametrize("anywhere", [False, True])
def test_a_result_equals_its_copies_and_differs_from_another(anywhere: bool) -> None:
    """== compares every field (arrays element by element, NaN equal to NaN: a thread with
    no usage has NaN tokens); a result is no dict key (its arrays can change)."""
    import copy
    import pickle

    pair = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "yo"}]
    result = vthread.scan([pair * 3, pair], anywhere=anywhere)
    assert np.isnan(result.loop_tokens[0])
    assert result == pickle.loads(pickle.dumps(result)) == copy.deepcopy(result)
    assert result != vthread.scan([pair * 3, pair * 2], anywhere=anywhere)
    assert result != vthread.scan([pair * 3, pair], anywhere=not anywhere)
    assert result != result.record(0)
    with pytest.raises(TypeError, match="unhashable"):
        hash(result)
    # A run's id that is a NaN: its copy's is another NaN, which Python calls unequal (the
    # result was unequal to its pickled copy: a tester's case); another id differs.
    runs = [{"id": float("nan"), "messages": pair}, {"id": "b", "messages": pair}]
    named = vthread.scan(runs, anywhere=anywhere)
    assert named == pickle.loads(pickle.dumps(named)) == copy.deepcopy(named)
    assert named != vthread.scan([runs[0], {"id": "c", "messages": pair}], anywhere=anywhere)


@pytest.mark.parametrize("stops", ["in the header", "in the answer", "after an answer"])
def test_a_worker_that_dies_in_the_middle_of_an_answer_is_an_error_not_a_wait(
        stops: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that ends part-way through sending an answer (killed while writing it: the
    pipe holds a length and some bytes of the answer, or a whole answer and then part of
    the next) makes scan(jobs=2) raise WorkerDiedError at once: no wait for the rest, no
    answer read from half of one."""
    import struct

    scan_module = importlib.import_module("vthread.scan")
    monkeypatch.setattr(scan_module, "PARALLEL_MIN_MESSAGES", 0)
    monkeypatch.setattr(scan_module, "usable_cpus", lambda: 2)
    real = scan_module._scan_worker

    def half_sent(tasks: Any, results: Any, options: Any, anywhere: bool) -> None:
        if tasks[0][0] == 1:  # the second worker; the first answers in full
            if stops == "after an answer":
                position, begin, end = tasks[0]
                results.send((position, scan_module._scan_rows((begin, end, options,
                                                                anywhere))))
            frame = struct.pack("!i", 1 << 16) + b"\x80\x05" * 8
            os.write(results.fileno(), frame[:2] if stops == "in the header" else frame)
            os._exit(9)
        real(tasks, results, options, anywhere)

    monkeypatch.setattr(scan_module, "_scan_worker", half_sent)
    threads = [[{"type": "bot", "text": f"t{i}"}] * 3 for i in range(40)]

    # (a regression would hang the run)
    with ends_within(60, "the rest of an answer"), pytest.raises(vthread.WorkerDiedError,
                                                                  match=r"exit status 9"):
        vthread.scan(threads, jobs=2)
