"""Loops anywhere in a run: the fast path against its brute-force twin, and through scan and
the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import anywhere_threads, long_block_threads
from tests.test_attribution import MEDIA_RESULTS, as_surrogate_pairs, media_loop
from vthread import _core, scan
from vthread import anywhere as anywhere_module
from vthread._options import text_run_options
from vthread.anywhere import (
    MAX_PERIOD,
    RUNAWAY_UNIQUE_RATIO,
    Loop,
    _judged,
    _kept,
    _kept_plainly,
    _RoleCounts,
    core_text_run,
    find_loops,
    find_loops_reference,
    prose,
)
from vthread.scan import ScanResult
from vthread.textrun import runaway

REALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": name, "arguments": arguments}}}}


def answer(name: str, result: Any, **arguments: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": name, "arguments": arguments,
                                         "result": result}}}}


def said(text: str, kind: str = "bot") -> dict[str, Any]:
    return {"type": kind, "text": text}


@settings(max_examples=300, deadline=None)
@given(st.lists(anywhere_threads(), max_size=4))
def test_fast_path_equals_the_reference(threads: list[list[dict[str, Any]]]) -> None:
    """find_loops equals its brute-force twin, batch or one thread at a time."""
    expected = find_loops_reference(threads)
    assert find_loops(threads) == expected
    assert [find_loops([t])[0] for t in threads] == expected


class _Text(str):
    """A str subclass: its values are Python's to read (the core declines them)."""


class _CaseBlind(str):
    """A str subclass whose own ``==`` ignores case: roles are read by characters, as
    JavaScript compares strings, never by this."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.lower() == other.lower()

    __hash__ = str.__hash__


ODD_TOUCHES = st.sampled_from([
    ("usage", {"tokens": 2**70}), ("usage", {"tokens": 1e308}), ("usage", {"tokens": 7}),
    ("text", _Text("again")), ("meta", {"at": _Text("x")}), ("text", "\ud800 lone"),
    ("type", _CaseBlind("USER")), ("type", _CaseBlind("user")), ("type", _Text("user")),
])


@settings(max_examples=300, deadline=None)
@given(st.lists(anywhere_threads(), max_size=4), st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 39), ODD_TOUCHES), max_size=4))
def test_the_cores_loop_records_are_pythons(threads: list[list[dict[str, Any]]],
                                            touches: list[tuple[int, int, Any]]) -> None:
    """The records of loops found anywhere, their signatures, excerpts and token totals made
    by the core (loop_records_of), equal those made in Python (loop_records), loop for loop:
    also where a value is Python's to read (a str subclass, a token figure past 64 bits) and
    the core leaves the loop to Python."""
    from vthread.anywhere import loop_records, loop_records_of
    from vthread.scan import _core_canonical

    for thread_index, message_index, (field, value) in touches:
        if thread_index < len(threads) and message_index < len(threads[thread_index]):
            message = dict(threads[thread_index][message_index])
            message[field] = value
            threads[thread_index][message_index] = message
    found = find_loops(threads)
    assert found == find_loops_reference(threads)
    expected = [loop_records(thread, loops, _core_canonical)
                for thread, loops in zip(threads, found, strict=True)]
    assert loop_records_of(threads, found, _core_canonical) == expected


@pytest.mark.parametrize(("result", "shown"), MEDIA_RESULTS)
def test_media_in_a_loop_found_anywhere_read_alike_both_ways(result: Any,
                                                             shown: str) -> None:
    """A loop whose tool answers hold media inline: the core's record (none declined) and
    Python's show them as their type and size."""
    from vthread.anywhere import loop_records, loop_records_of
    from vthread.scan import _core_canonical

    threads = [media_loop(result)]
    found = find_loops(threads)
    made = loop_records_of(threads, found, _core_canonical)
    assert made == [loop_records(threads[0], found[0], _core_canonical)]
    assert [record["excerpt"] for record in made[0]] == [f"shot({{}}) -> {shown}"]
    flat = found[0]
    parts = _core.anywhere_loop_parts(threads, [0] * len(flat), [loop.start for loop in flat],
                                      [loop.end for loop in flat],
                                      [loop.period for loop in flat],
                                      [loop.kind for loop in flat])
    assert parts["declined"].tolist() == []


def test_the_core_makes_the_records_of_every_loop_but_runaway_texts() -> None:
    """On the benchmark's threads (plain dicts and strings), the core declines only the
    runaway texts' loops, which Python makes: the twin test above would pass were the core
    to decline everything."""
    from benchmarks.workload import generate_threads

    threads = generate_threads(300, seed=4)
    found = find_loops(threads)
    flat = [(row, loop) for row, loops in enumerate(found) for loop in loops]
    assert len({loop.kind for _, loop in flat}) >= 3
    made = _core.anywhere_loop_parts(threads, [row for row, _ in flat],
                                     [loop.start for _, loop in flat],
                                     [loop.end for _, loop in flat],
                                     [loop.period for _, loop in flat],
                                     [loop.kind for _, loop in flat])
    declined = made["declined"].tolist()
    assert [index for index, (_, loop) in enumerate(flat) if loop.kind == 4] == declined
    assert all(isinstance(excerpt, str) for index, excerpt in enumerate(made["excerpts"])
               if index not in declined)


TURNS = st.sampled_from([
    said("Let me try."), said("Again."), said("found 2 actions", "user"),
    said("found 13 actions", "user"), said("found two actions", "user"), said("ok", "user"),
    call("book", seat=1), answer("book", "Error: full", seat=1),
    answer("book", "\tERROR", seat=2), answer("book", "booked", seat=1),
    answer("calc", 3, e="1 + 2")])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(TURNS, max_size=30), max_size=3))
def test_fast_path_equals_the_reference_on_rejections_and_retries(
        threads: list[list[dict[str, Any]]]) -> None:
    """Dense in the two later rules' material (replies differing in a number, failing and
    succeeding calls of one tool): find_loops still equals its twin."""
    assert find_loops(threads) == find_loops_reference(threads)


@settings(max_examples=100, deadline=None)
@given(st.lists(anywhere_threads(), max_size=3))
def test_screen_collisions_change_no_answer(threads: list[list[dict[str, Any]]]) -> None:
    """With screens cut to 2 bits the exact confirmation still gives the reference's loops."""
    _core._set_screen_bits(2)
    try:
        assert find_loops(threads) == find_loops_reference(threads)
    finally:
        _core._set_screen_bits(64)


@pytest.mark.parametrize("bits", [0, 1, 64])
def test_a_screen_run_whose_roles_differ_is_still_confirmed(bits: int) -> None:
    """Screens cut to nothing make one run of the whole thread, its first block a user's
    message: its roles do not repeat, so the exact pass still reads it and finds the calls'
    loop after it (a filter on the first block's roles alone would have dropped it)."""
    thread = [said("go", "user"), said("hm"), call("ls"), call("ls"), call("ls")]
    _core._set_screen_bits(bits)
    try:
        assert find_loops([thread]) == find_loops_reference([thread]) == [
            [Loop(2, 5, 1, 3, 1)]]
    finally:
        _core._set_screen_bits(64)


PREFIXES = st.sampled_from(["", " ", "\t\n", "\x1c", "\x85", "\u3000", "\u2028", "\u180e",
                            "\x00", "x"])
HEADS = st.sampled_from(["Error", "error: x", "ERROR", "Exception", "Traceback", "tr", "e",
                         "<returncode>1</returncode>", "<RETURNCODE>2", "<returncode>0<",
                         "<returncode>0", "<returncode>", "<returncode", "<return", "ok",
                         "\u0130rror", "K", "É", "\U0001f389", "\ud800", ""])


@settings(max_examples=400, deadline=None)
@given(PREFIXES, HEADS, st.sampled_from([None, True, False, 1, "yes", "absent"]),
       st.booleans())
def test_the_cores_may_fail_is_a_superset_of_failed(prefix: str, head: str, flag: Any,
                                                      as_text: bool) -> None:
    """Every response :func:`failed` calls failed, the core flags as one that may have (so
    its prefilter drops none), whatever whitespace, case or flag."""
    from vthread.anywhere import failed

    result: Any = prefix + head if as_text else {"text": prefix + head}
    message = answer("book", result)
    if flag != "absent":
        message["meta"]["activity"]["is_error"] = flag
    may_fail = _core.message_screens([[message]], core_text_run())["may_fail"]
    if failed(message):
        assert may_fail.tolist() == [True]


LOOPS = st.builds(
    lambda start, length, period, repetitions, kind: Loop(
        start, start + length, period, repetitions, kind),
    st.integers(0, 60), st.integers(1, 30), st.integers(1, MAX_PERIOD), st.integers(2, 9),
    st.integers(1, 4))


@settings(max_examples=500, deadline=None)
@given(st.lists(LOOPS, max_size=40))
def test_loops_kept_by_marks_are_those_kept_by_comparison(loops: list[Loop]) -> None:
    """Overlapping candidates (the same span twice, nested, touching, disjoint) are kept as
    the plain comparison of each with every loop kept keeps them."""
    assert _kept(loops) == _kept_plainly(loops)


def test_many_small_loops_along_one_run() -> None:
    """Twenty thousand short loops along one run, each overlapped by a shorter candidate of
    another kind: the longer ones are kept (this took minutes when each candidate was
    compared with every loop kept; its growth is `benchmarks.anywhere_growth`'s)."""
    loops = [Loop(3 * i, 3 * i + 3, 1, 3, 1) for i in range(20_000)]
    loops += [Loop(3 * i + 1, 3 * i + 3, 1, 2, 2) for i in range(20_000)]
    kept = _kept(loops)
    assert kept == loops[:20_000]


def test_a_loop_that_ended_before_the_run_did() -> None:
    """A failing call retried with the same error, then a handoff: found, though the run
    ends healthy for the production heuristics."""
    failing = [call("book", seat="1A"), answer("book", "Error: no seat", seat="1A"),
               said("Let me retry.")]
    thread = [said("Book me a seat", "user"), *failing * 3,
              call("transfer_to_human"), answer("transfer_to_human", "ok"),
              said("A colleague will help.")]
    result = scan([thread], anywhere=True)
    assert scan([thread]).names == [None]
    assert result.loops is not None
    [loop] = result.loops[0]
    assert (loop["verdict"], loop["loop_start"], loop["loop_messages"]) == (
        "repeated_suffix", 1, 9)
    assert loop["repetitions"] == 3
    assert result.record(0)["loop_start"] == 1


def test_thoughts_and_think_calls_between_retries_do_not_hide_them() -> None:
    """Each retry worded anew (free text, a think call) is still the same action."""
    thread = [said("go", "user")]
    for attempt in range(3):
        thread += [said(f"Attempt {attempt}"), call("book", seat="1A"),
                   answer("book", "Error", seat="1A"), call("think", thought=str(attempt)),
                   answer("think", "", thought=str(attempt))]
    [[loop]] = find_loops([thread])
    assert loop.repetitions == 3


def test_progress_is_no_loop() -> None:
    """Polling whose answer changes, and a command rerun after edits, are progress."""
    polling = [m for i in range(6) for m in (call("status", job=1),
                                             answer("status", f"{i}% done", job=1))]
    edits = [m for i in range(4) for m in (
        call("bash", command=f"sed -i 's/{i}/x/' a.py"),
        answer("bash", "", command=f"sed -i 's/{i}/x/' a.py"),
        call("bash", command="pytest"), answer("bash", "1 failed", command="pytest"))]
    assert find_loops([polling, edits]) == [[], []]


def test_runaway_text_anywhere_but_not_written_out_code() -> None:
    """A runaway message early in the run is found; repeated lines of code are not."""
    runaway = said("Let me check the flag. I will check it now. " * 200)
    code = said("Here is the fix:\n```python\n" + "x = 1\n" * 200 + "```\nDone.")
    thread = [said("hi", "user"), runaway, *[said(f"step {i}") for i in range(8)], code]
    # 91: how often "let me check the flag" occurs in the 4,000 code units read
    assert find_loops([thread]) == [[Loop(1, 2, 1, 91, 4)]]


@pytest.mark.parametrize("before", range(94, 101))
def test_a_runaway_texts_excerpt_counts_a_surrogate_pair_as_its_character(before: int) -> None:
    """The excerpt of a runaway text is cut at 100 characters; an astral character written
    as its surrogate pair (two code points, as a Python caller may build it) is one there,
    as it is when the same thread is read from JSON bytes."""
    sentence = "abc " * (before // 4) + "x" * (before % 4) + "\U0001f389 tail. "
    thread = [said("go", "user"), said(sentence * 30), *[said(f"step {i}") for i in range(8)]]
    astral = scan([thread], anywhere=True).record(0)
    assert astral["loops"][0]["verdict"] == "repeated_message_text_run"
    pairs = as_surrogate_pairs(thread)
    assert scan([pairs], anywhere=True).record(0) == astral
    assert scan([json.loads(json.dumps(pairs))], anywhere=True).record(0) == astral


PROSE_PIECES = st.sampled_from(["`", "``", "```", "ok. ", "Let me check. ", "x = 1\n", "é. ",
                                "🎉. ", "\n", " ", "a", "Done."])


@settings(max_examples=400, deadline=None)
@given(st.lists(PROSE_PIECES, max_size=60), st.integers(1, 12))
def test_the_cores_runaway_prose_is_pythons(pieces: list[str], copies: int) -> None:
    """The core's text rule (fenced blocks left out, then the text-run check), from a Python
    str and from a line's bytes, answers as ``runaway(prose(text))`` does."""
    text = "".join(pieces) * copies
    expected = runaway(prose(text), text_run_options(max_unique_ratio=RUNAWAY_UNIQUE_RATIO))
    thread = [{"type": "bot", "text": text}]
    from_objects = _core.message_screens([thread], core_text_run())["text_rows"].tolist()
    line = json.dumps(thread, ensure_ascii=False).encode()
    raw = _core.scan_lines([line], (2, 2, None, 3), False, 1,
                           anywhere=core_text_run())
    from_bytes = raw["anywhere"]["text_rows"].tolist()
    assert from_objects == from_bytes == ([0] if expected else [])


def test_environment_repetition_is_not_the_agent_looping() -> None:
    """The same user message three times with no agent turn between is no loop; answered
    by agent turns each time (a format rejection retried) it is."""
    rejection = said("Please give exactly one action.", "user")
    assert find_loops([[rejection] * 4]) == [[]]
    retried = [m for i in range(3) for m in (said(f"Try {i}"), rejection)]
    [[loop]] = find_loops([retried])
    assert (loop.kind, loop.repetitions) == (3, 3)


def test_rejections_differing_only_in_numbers_are_one_rejection() -> None:
    """A rejection saying "found 2 actions", then 3, then 5, to three agent turns in a row is
    a loop; replies differing in words, or two of them, are not."""
    def rejected(counts: list[str]) -> list[dict[str, Any]]:
        return [m for i, n in enumerate(counts) for m in (
            said(f"Attempt {i}"), said(f"Please give ONE action, found {n} actions.", "user"))]
    [[loop]] = find_loops([rejected(["2", "3", "5"])])
    assert (loop.start, loop.end, loop.repetitions, loop.kind) == (1, 6, 3, 3)
    # One rejection across runs, whatever counts each saw: one signature (it split the
    # published runs' rejections by their counts, a tester's case), the core's and Python's.
    runs = [rejected(["2", "3", "5"]), rejected(["4", "4", "12"])]
    records = scan(runs, anywhere=True).loops
    signatures = {record["signature"] for loops in records for record in loops}
    assert len(signatures) == 1
    by_python = {anywhere_module.loop_records(run, found, _core.canonical)[0]["signature"]
                 for run, found in zip(runs, find_loops(runs), strict=True)}
    assert by_python == signatures
    worded = [m for i, word in enumerate(["two", "three", "five"]) for m in (
        said(f"Attempt {i}"), said(f"Please give ONE action, found {word} actions.", "user"))]
    assert find_loops([worded, rejected(["2", "3"])]) == [[], []]


def test_failing_call_retried_with_other_actions_between() -> None:
    """The same call getting the same error three times, a calculation, an empty search and
    a customer's correction between: a loop (tau-bench's retried booking), though no block
    repeats back to back. It starts at the first copy's call (it started at its error, one
    message late, the call's tokens left out: a tester's case), its period the copies'
    spacing, and its signature and excerpt show the call and its error alone, not what lay
    between the retries (which changes)."""
    thread = [said("Book it", "user")]
    for attempt in range(3):
        thread += [call("book", seat="1A"), answer("book", "Error: payment does not add up",
                                                   seat="1A"),
                   call("calculate", e=f"{attempt} + 1"),
                   answer("calculate", attempt + 1, e=f"{attempt} + 1"),
                   said(f"Sorry, attempt {attempt} failed."), said(f"No, {attempt}!", "user")]
    [[loop]] = find_loops([thread])
    assert (loop.start, loop.end, loop.period, loop.repetitions, loop.kind) == (1, 15, 6, 3, 2)
    assert (loop.block, loop.shown_from) == (1, 1)  # (its first error alone)
    assert find_loops_reference([thread]) == [[loop]]
    priced = [{**m, "usage": {"tokens": 10 ** index}} for index, m in enumerate(thread)]
    [record] = scan([priced], anywhere=True).loops[0]
    assert record["loop_tokens"] == sum(10 ** index for index in range(1, 15))
    assert record["excerpt"] == 'book({"seat":"1A"}) -> Error: payment does not add up'
    assert (record["loop_start"], record["period"], record["loop_messages"]) == (1, 6, 14)
    other = thread[:1] + [said("Let me see.")] + [m if index % 6 != 5 else said("Why?", "user")
                                                   for index, m in enumerate(thread[1:], 1)]
    [again] = scan([other], anywhere=True).loops[0]
    assert again["signature"] == record["signature"]


@pytest.mark.parametrize(("result", "is_error"), [
    ("Error: seat taken", True), ("ERROR", True), ("  exception raised", True),
    ("Traceback (most recent call last):", True), ("error", True),
    ("errors are fine: none found", False), ("Exceptional fares apply", False),
    ("Tracebacks: 0", False), ("error_count=0", False), ("error-free: all pass", False),
    ("Error-free", False), ("error.", True), ("EXCEPTION\n", True)])
def test_an_error_is_told_by_its_whole_first_word(result: str, is_error: bool) -> None:
    """A result starting with "errors", "Exceptional" or "error_count" is no error (any
    text starting with the letters was: a tester's case), so three identical calls
    getting it are no failing call retried; the word alone, in any case, is one."""
    from vthread.anywhere import failed

    retried = [m for attempt in range(3) for m in (
        call("book", seat="1A"), answer("book", result, seat="1A"),
        call("calculate", e=f"{attempt} + 1"), answer("calculate", attempt + 1),
        said(f"Attempt {attempt} done.", "user"))]
    assert failed(answer("book", result)) is is_error
    loops = find_loops([retried])[0]
    assert [(loop.kind, loop.repetitions) for loop in loops] == ([(2, 3)] if is_error else [])
    assert find_loops_reference([retried]) == [loops]


def test_another_argument_list_failing_the_same_way_does_not_break_the_retries() -> None:
    """A call of the same tool with other arguments and the same error between two copies
    changes nothing (tau-bench 13/0's alternating flight lists)."""
    same = [call("update", f=[1, 2]), answer("update", "Error: flight 1 full", f=[1, 2])]
    other = [call("update", f=[1, 3]), answer("update", "Error: flight 1 full", f=[1, 3])]
    [[loop]] = find_loops([same + other + same + same])
    assert (loop.start, loop.end, loop.repetitions) == (0, 8, 3)


def test_edits_before_a_rerun_and_successes_are_progress() -> None:
    """The same failing command rerun after an edit of the same tool (another result), a
    success repeated, and retries further apart than MAX_PERIOD actions are no loop."""
    rerun = [call("bash", command="pytest"),
             answer("bash", "<returncode>1</returncode>\nFAILED", command="pytest")]
    edited = [m for i in range(3) for m in (
        *rerun, call("bash", command=f"sed -i s/{i}// a.py"),
        answer("bash", "<returncode>0</returncode>", command=f"sed -i s/{i}// a.py"))]
    succeeded = [m for i in range(3) for m in (
        call("get", id=1), answer("get", "ok", id=1), call("calc", n=i), answer("calc", i, n=i))]
    # Looks at other things each time: the copies are not one block repeated.
    spaced = [m for copy in range(3) for m in (
        call("book"), answer("book", "Error: full"),
        *[x for i in range(copy, copy + MAX_PERIOD // 2)
          for x in (call("look", n=i), answer("look", i, n=i))])]
    assert find_loops([edited, succeeded, spaced]) == [[], [], []]
    assert find_loops_reference([edited, succeeded, spaced]) == [[], [], []]
    flagged = [dict(m) for m in spaced]
    flagged[1] = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "is_error": True, "function": {"name": "book", "arguments": {},
                                                           "result": "full"}}}}
    retried = [m for i in range(3) for m in (*flagged[:2], call("look", n=i),
                                             answer("look", i, n=i))]
    assert find_loops([retried]) == [[Loop(0, 10, 4, 3, 2, block=1, shown_from=1)]]


def test_two_step_cycle_twice_and_one_step_twice() -> None:
    """A cycle of two actions seen twice in full loops; one action seen twice does not."""
    a = [call("a"), answer("a", 1)]
    b = [call("b"), answer("b", 2)]
    assert find_loops([a + b + a + b])[0] == [Loop(0, 8, 4, 2, 1)]
    assert find_loops([a + a]) == [[]]


def test_longest_period_searched() -> None:
    """A block of MAX_PERIOD messages repeated is found anywhere, and so is a longer one,
    over its whole run of copies, from its first message."""
    def block(size: int) -> list[dict[str, Any]]:
        return [call("step", n=i) for i in range(size)]
    assert find_loops([block(MAX_PERIOD) * 2])[0] == [Loop(0, 2 * MAX_PERIOD, MAX_PERIOD,
                                                           2, 1)]
    long = block(MAX_PERIOD + 6)
    size = len(long)
    assert find_loops([long * 2])[0] == [Loop(0, 2 * size, size, 2, 1)]
    # Left in the middle: the agent moved on after the copies.
    assert find_loops([long * 2 + [said("done")]])[0] == [Loop(0, 2 * size, size, 2, 1)]
    moved_on = [said("intro", "user"), *long, *long, said("done"), said("go on", "user")]
    assert find_loops([moved_on])[0] == [Loop(1, 1 + 2 * size, size, 2, 1)]
    assert find_loops([long * 3 + [call("other")]])[0] == [Loop(0, 3 * size, size, 3, 1)]
    # Part of a copy after the whole ones: the run goes on through it.
    assert find_loops([long * 3 + long[:5]])[0] == [Loop(0, 3 * size, size, 3, 1)]
    # The run of copies goes back to where the copies start, in part or whole.
    assert find_loops([long[3:] + long * 2])[0] == [Loop(0, 2 * size, size, 2, 1)]
    # Two long loops, each found where it is.
    other = [call("other", n=i) for i in range(MAX_PERIOD + 2)]
    both = long * 2 + [said("next", "user")] + other * 2
    assert find_loops([both])[0] == [Loop(0, 2 * size, size, 2, 1),
                                      Loop(2 * size + 1, len(both), len(other), 2, 1)]
    assert find_loops([both]) == find_loops_reference([both])


def test_a_long_block_that_is_not_the_agents_loop() -> None:
    """A long block is judged as a short one is: environment messages alone are no loop,
    and a block holding one action needs three copies."""
    replies = [said(f"note {n}", "user") for n in range(MAX_PERIOD + 5)]
    assert find_loops([replies * 2]) == find_loops_reference([replies * 2]) == [[]]
    one_call = [call("ls"), *replies]
    assert find_loops([one_call * 2]) == [[]]
    assert find_loops([one_call * 3])[0] == [Loop(0, 3 * len(one_call), len(one_call), 3, 1)]


def test_a_long_block_of_a_shorter_one_repeated_is_the_shorter_ones() -> None:
    """A block that is itself a shorter block repeated is reported by the shorter block,
    however long: one call repeated 200 times is one loop of period 1, not 100 of others."""
    thread = [said("go", "user")] + [call("ls")] * 200 + [said("done")]
    assert find_loops([thread])[0] == [Loop(1, 201, 1, 200, 1)]
    five = [call(f"s{i}") for i in range(MAX_PERIOD + 1)]
    assert find_loops([five * 6]) == find_loops_reference([five * 6])
    assert find_loops([five * 6])[0] == [Loop(0, 6 * len(five), len(five), 6, 1)]


@settings(max_examples=200, deadline=None)
@given(st.lists(long_block_threads(), max_size=3))
def test_long_blocks_equal_the_reference(threads: list[list[dict[str, Any]]]) -> None:
    """Blocks longer than MAX_PERIOD anywhere: the fast path (the core's runs of the
    screens) equals the twin trying every period and start on exact keys, with full screens
    and with screens cut to 2 bits (screens collide everywhere, so runs of exact keys hide
    behind shorter runs of screens and are found again over the keys)."""
    expected = find_loops_reference(threads)
    assert find_loops(threads) == expected
    _core._set_screen_bits(2)
    try:
        assert find_loops(threads) == expected
    finally:
        _core._set_screen_bits(64)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(long_block_threads(), anywhere_threads()), max_size=3))
def test_threads_judged_on_numbered_keys_equal_the_reference(
        threads: list[list[dict[str, Any]]]) -> None:
    """A thread whose long runs hold many positions per message is judged on its exact keys,
    numbered once each: with that bound at nothing (every thread with a long run goes that
    way), the loops are still the reference's."""
    expected = find_loops_reference(threads)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(anywhere_module, "_CONFIRMED_PER_MESSAGE", 0)
        patch.setattr(anywhere_module, "_CONFIRMED_PER_THREAD", 0)
        assert find_loops(threads) == expected


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 3, 4]), min_size=2, max_size=60), st.data())
def test_runs_judged_by_role_counts_as_by_their_roles(roles_drawn: list[int],
                                                      data: st.DataObject) -> None:
    """:meth:`_RoleCounts.judged` (O(1) a run, from counts of each role before each
    position) judges every run as :func:`_judged` does reading its roles, for both kinds,
    over a sequence that is every batch row or some of them (the actions)."""
    roles = np.array(roles_drawn, np.int8)
    rows = np.flatnonzero(data.draw(st.lists(st.booleans(), min_size=roles.size,
                                             max_size=roles.size)) | (roles == 4))
    if rows.size < 2:
        rows = np.arange(roles.size, dtype=np.int64)
    counts = _RoleCounts(rows, roles)
    period = data.draw(st.integers(1, rows.size // 2))
    first = data.draw(st.integers(0, rows.size - 2 * period))
    stop = data.draw(st.integers(period, rows.size - first - period))
    offset = data.draw(st.integers(0, int(rows[first])))
    for kind in (1, 2):
        assert counts.judged(kind, first, stop, period, offset) == _judged(
            kind, 0, stop, period, rows[first:], roles, offset)


def _chat_prefix() -> list[dict[str, Any]]:
    """A short healthy thread: every text distinct, in its letters (not only its numbers)."""
    words = [chr(97 + i % 26) + chr(97 + i // 26) for i in range(40)]
    return [said(f"question {word}", "user") if i % 2 == 0 else said(f"answer {word}")
            for i, word in enumerate(words)]


def test_a_loop_that_skipped_once_is_found_in_linear_time() -> None:
    """A 25-message cycle whose middle copy skips one message has a long run at every period
    of 24 modulo 25 around the skip (n² / 50 positions in all): the thread is judged on its
    keys numbered once, and its loops are the reference's (growth is measured by
    ``benchmarks.anywhere_growth``, shape ``loop_that_skipped_once``)."""
    from benchmarks.shapes import loop_that_skipped_once

    numbered: list[int] = []
    exactly = anywhere_module._long_block_loops_exactly

    def spied(kind: int, thread: int, *rest: Any) -> list[Loop]:
        numbered.append(thread)
        return exactly(kind, thread, *rest)

    with pytest.MonkeyPatch.context() as patch:  # at the real bounds: 2,000²/50 > 8·2,000 + 4,096
        patch.setattr(anywhere_module, "_long_block_loops_exactly", spied)
        found = find_loops([_chat_prefix(), loop_that_skipped_once(2_000)])
    assert numbered == [1]  # the second thread, its messages (all the agent's: no actions)
    assert found == [[], [Loop(49, 1997, 974, 2, 1)]]
    thread = loop_that_skipped_once(300)
    expected = find_loops_reference([thread])
    assert expected[0] == [Loop(49, 297, 124, 2, 1)]
    assert find_loops([thread]) == expected
    with pytest.MonkeyPatch.context() as patch:  # as a longer thread is (n² / 50 > 8n + 4096)
        patch.setattr(anywhere_module, "_CONFIRMED_PER_MESSAGE", 0)
        patch.setattr(anywhere_module, "_CONFIRMED_PER_THREAD", 0)
        assert find_loops([thread]) == expected


@pytest.mark.parametrize("bounds", [[1, 0], [0, 5], [-1, 2]])
def test_long_runs_names_a_bad_bound(bounds: list[int]) -> None:
    with pytest.raises(ValueError, match=r"bounds\[\d\]"):
        _core.long_runs(np.zeros(4, np.uint64), np.array(bounds, np.int64), 1)


def test_defaults_unchanged_and_results_concatenate() -> None:
    """anywhere=False returns no loops; concatenation keeps per-thread loops in order, and
    refuses parts of scans that looked differently (one part's loops were dropped)."""
    loop = [said("go", "user"), *[call("ls"), answer("ls", "a")] * 3, said("done")]
    plain = scan([loop])
    assert plain.loops is None and "loops" not in plain.record(0)
    parts = [scan([loop], anywhere=True), scan([[said("hi")]], anywhere=True)]
    joined = ScanResult.concatenate(parts)
    assert joined.loops is not None and len(joined.loops[0]) == 1 and joined.loops[1] == []
    assert ScanResult.concatenate([plain, plain]).loops is None
    for mixed, said_ in (([plain, parts[0]], "part 1 is of a scan with anywhere=True, part 0"),
                         ([parts[0], plain], "part 0 is of a scan with anywhere=True, part 1")):
        with pytest.raises(ValueError, match=said_):
            ScanResult.concatenate(mixed)
    # A part with no rows loses nothing and takes the others' side.
    empty_anywhere, empty_plain = scan([], anywhere=True), scan([])
    assert ScanResult.concatenate([empty_anywhere, plain]).loops is None
    assert ScanResult.concatenate([empty_plain, *parts]).loops == joined.loops
    assert ScanResult.concatenate([empty_anywhere]).loops == []
    # Any iterable of results, read once (a generator was read twice: "zip() argument 2 is
    # longer than argument 1"); a part that is no result is named (an AttributeError).
    assert ScanResult.concatenate(part for part in parts).loops == joined.loops
    with pytest.raises(TypeError, match=r"^part 1 must be a ScanResult, got int"):
        ScanResult.concatenate([plain, 5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="got one ScanResult: pass \\[result\\]"):
        ScanResult.concatenate(plain)


@pytest.mark.parametrize("option", ["min_repetitions", "min_pattern_length",
                                    "max_pattern_length", "min_result_repetitions"])
def test_cycle_options_are_refused_with_anywhere(option: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Looking anywhere judges loops by rules of its own: a cycle option given with it would
    change nothing, so the call, the Arrow scan and the command refuse it by name rather
    than ignore it without a word (a new user set --min-repetitions 1000000 with --anywhere
    and got the same loops). Left unset, or without anywhere, the option is taken."""
    from tests.test_cli import run

    loop = [said("go", "user"), *[call("ls"), answer("ls", "a")] * 3]
    with pytest.raises(ValueError, match=f"^{option} does not apply with anywhere=True"):
        scan([loop], anywhere=True, **{option: 3})
    for unset in (None, math.nan, math.inf, -math.inf):  # the defaults, as cycle_options reads
        assert scan([loop], anywhere=True, **{option: unset}).names == scan(
            [loop], anywhere=True).names
    assert scan([loop], **{option: 3}).names is not None
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(loop) + "\n")
    flag = "--" + option.replace("_", "-")
    code, out, said_ = run(["scan", str(path), "--anywhere", flag, "3"], monkeypatch)
    assert code == 2 and out == b"" and f"{flag} does not apply with --anywhere" in said_
    assert run(["scan", str(path), flag, "3"], monkeypatch)[0] == 0
    assert run(["scan", str(path), "--anywhere", flag, "nan"], monkeypatch)[0] == 0
    pyarrow = pytest.importorskip("pyarrow")
    from vthread.arrow import scan_arrow

    table = pyarrow.table({"messages": [json.dumps(loop)]})
    with pytest.raises(ValueError, match=f"^{option} does not apply"):
        scan_arrow(table, anywhere=True, **{option: 3})


def test_masked_volatile_values_compose() -> None:
    """Polling that differs only in a timestamp loops with mask_volatile, not without."""
    thread = [said("wait", "user")]
    for second in range(4):
        thread += [call("status"), answer("status", f"pending at 2024-05-01T10:00:0{second}Z")]
    assert scan([thread], anywhere=True).loops == [[]]
    masked = scan([thread], anywhere=True, mask_volatile=True)
    assert masked.loops is not None and masked.loops[0][0]["repetitions"] == 4


@pytest.mark.parametrize("read_by_python", [False, True])
def test_token_totals_past_the_largest_double(tmp_path: Path, read_by_python: bool) -> None:
    """A loop whose tokens sum past the largest double: infinity in Python (as the plain
    scan's total is), null in every JSON record, the loop's and the row's; whether the core
    or Python reads the line. (The sum raised OverflowError, an internal error per line.)"""
    from vthread import cli

    costly = {**call("f", q=1), "usage": {"tokens": 1e308}}
    found = scan([[costly] * 4], anywhere=True)
    assert found.loops is not None and found.loops[0][0]["loop_tokens"] == float("inf")
    assert found.loop_tokens[0] == float("inf") == scan([[costly] * 4]).loop_tokens[0]
    # record() is strict JSON, the loops' totals as the row's.
    assert json.loads(json.dumps(found.record(0), allow_nan=False))["loops"][0][
        "loop_tokens"] is None
    line = json.dumps([costly] * 4)
    if read_by_python:
        line = line.replace('"q": 1', '"q": 1, "nan": NaN')  # a line the core declines
    path = tmp_path / "costly.jsonl"
    path.write_text(line + "\n")
    out = tmp_path / "out.jsonl"
    assert cli.main(["scan", str(path), "--anywhere", "-q", "-o", str(out)]) == 0
    (record,) = [json.loads(text) for text in out.read_text().splitlines()]
    assert record["verdict"] == "repeated_suffix" and record["loop_tokens"] is None
    assert [loop["loop_tokens"] for loop in record["loops"]] == [None]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_summary_counts_every_loop_found_anywhere(tmp_path: Path, jobs: str) -> None:
    """--summary with --anywhere: ``loops_anywhere`` sums every loop of every record (the
    other figures count each run's costliest loop, as without it); absent without it."""
    from vthread import cli

    costly = {**call("ls"), "usage": {"tokens": 5}}
    twice = [said("go", "user"), *[costly] * 3, said("next", "user"), said("hm"),
             *[call("cat", path="a")] * 3, said("done")]
    # The third line holds a NaN: read by Python, its loops counted there as the core's are.
    lines = [json.dumps(thread) for thread in (
        twice, [said("hi", "user")], [*twice, {**said("bye"), "meta": {"x": math.nan}}])]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    argv = ["scan", str(path), "-q", "-j", jobs, "-o", str(out), "--summary", str(summary)]
    assert cli.main([*argv, "--anywhere"]) == 0
    every = [loop for line in out.read_text().splitlines()
             for loop in json.loads(line)["loops"]]
    said_ = json.loads(summary.read_text())
    assert said_["loops"] == 2 and len(every) == 4
    assert said_["loops_anywhere"] == {
        "loops": 4, "messages": sum(loop["loop_messages"] for loop in every),
        "tokens": sum(loop["loop_tokens"] or 0 for loop in every)}
    assert said_["loops_anywhere"]["tokens"] == 30
    assert cli.main(argv) == 0
    assert "loops_anywhere" not in json.loads(summary.read_text())


def test_cli_reports_loops_in_source_messages(tmp_path: Path) -> None:
    """vthread scan --anywhere on OpenAI chat: each loop in the file's own message indices."""
    from vthread import cli

    retry = [{"role": "assistant", "content": None, "tool_calls": [
                 {"id": "c", "type": "function",
                  "function": {"name": "book", "arguments": "{\"seat\": \"1A\"}"}}]},
             {"role": "tool", "tool_call_id": "c", "content": "Error: no seat"}]
    messages = [{"role": "user", "content": "book"}, *retry * 3,
                {"role": "assistant", "content": "Sorry, I cannot."},
                {"role": "user", "content": "ok"}, {"role": "assistant", "content": "Bye."}]
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "r1", "messages": messages}) + "\n")
    out = tmp_path / "out.jsonl"
    assert cli.main(["scan", "--anywhere", "-q", "--format", "openai", str(path),
                     "-o", str(out)]) == 0
    record = json.loads(out.read_text())
    assert [(x["loop_start"], x["loop_messages"], x["period"]) for x in record["loops"]] == [
        (1, 6, 2)]
    assert record["loop_start"] == 1 and record["verdict"] == "repeated_suffix"


def test_cli_finds_a_long_block_anywhere(tmp_path: Path) -> None:
    """A run ending in a block of MAX_PERIOD + 6 calls twice: the default scan and
    --anywhere both report it, from the file's bytes, with the same span; a run that moved
    on after it does not loop at its end, and --anywhere still finds it where it is, as it
    finds it in the same threads in process."""
    from vthread import cli

    block = [call("step", n=i) for i in range(MAX_PERIOD + 6)]
    ends = [said("go", "user"), *block * 2]
    moved_on = [*ends, said("next", "user"), call("other")]
    threads = [ends, moved_on] * 20
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "messages": thread}) + "\n"
                            for i, thread in enumerate(threads)))
    records = {}
    for flags in ([], ["--anywhere"]):
        out = tmp_path / "out.jsonl"
        assert cli.main(["scan", "-q", *flags, str(path), "-o", str(out)]) == 0
        records[bool(flags)] = [json.loads(line) for line in out.read_text().splitlines()]
    in_process = scan(threads, anywhere=True)
    for index, (default, anywhere) in enumerate(zip(records[False], records[True],
                                                    strict=True)):
        assert anywhere["verdict"] == "repeated_suffix"
        assert anywhere["loop_start"] == 1
        assert anywhere["loops"][0]["period"] == len(block)
        assert anywhere["loops"] == in_process.record(index)["loops"]
        assert default["verdict"] == ("repeated_suffix" if index % 2 == 0 else None)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs (../shared/realdata) "
                    "are not beside this checkout")
def test_published_runaway_and_no_op_edits_found() -> None:
    """sympy-15976 of the mini-swe-agent runs: a no-op sed run four times, and a 159k-character
    runaway message, both found where they are (source message indices)."""
    from benchmarks.anywhere_eval import anywhere_spans
    from benchmarks.realdata import runs

    run = next(r for r in runs() if r.run_id == "sympy__sympy-15976")
    spans = anywhere_spans(run)
    assert (70, 71) in spans
    assert any(start >= 40 and end <= 50 for start, end in spans)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs (../shared/realdata) "
                    "are not beside this checkout")
def test_published_retried_booking_and_format_rejections_found() -> None:
    """tau-bench 11/2 (a booking retried with the same error, a calculation between) and
    django-11299 of the mini-swe-agent runs (8 format rejections in a row, their counts
    differing) are found; tau-bench 3/0 (each retry pays with another gift card) is not."""
    from benchmarks.anywhere_eval import anywhere_spans
    from benchmarks.realdata import runs

    wanted = {"11/2", "django__django-11299", "3/0"}
    spans = {r.run_id: anywhere_spans(r) for r in runs() if r.run_id in wanted}
    assert spans["11/2"] == [(14, 26)]  # (from the call: the label's span)
    assert spans["django__django-11299"] == [(63, 78)]
    assert spans["3/0"] == []


def test_parquet_records_carry_the_loops(tmp_path: Path) -> None:
    """-o X.parquet with --anywhere writes a ``loops`` column of structs; without, none."""
    parquet = pytest.importorskip("pyarrow.parquet")
    from vthread import cli

    thread = [said("go", "user"), *[call("ls"), answer("ls", "a")] * 3, said("done")]
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "r1", "messages": thread}) + "\n")
    for flags, expected in ((["--anywhere"], True), ([], False)):
        out = tmp_path / f"out{len(flags)}.parquet"
        assert cli.main(["scan", *flags, "-q", str(path), "-o", str(out)]) == 0
        table = parquet.read_table(out)
        assert ("loops" in table.column_names) is expected
        if expected:
            [[loop]] = table.column("loops").to_pylist()
            assert (loop["loop_start"], loop["repetitions"]) == (1, 3)


def _numbered(keys: list[Any]) -> list[int]:
    """Keys numbered in order of first appearance (the obvious way)."""
    numbers: dict[Any, int] = {}
    return [numbers.setdefault(key, len(numbers)) for key in keys]


_KEYED_TEXTS = st.sampled_from(["found 2 actions", "found 13 actions", "found 2 action",
                                "a1b22", "a7b1", "\u0661 \u0662", "0", "00", "", "x\x1f9"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(anywhere_threads(), st.lists(
    st.builds(lambda kind, text: {"type": kind, "text": text},
              st.sampled_from(["user", "bot"]), _KEYED_TEXTS), max_size=12)), max_size=3))
def test_the_cores_key_numbers_of_a_line_are_its_keys_numbered(
        threads: list[list[dict[str, Any]]]) -> None:
    """The core's numbering of a native line's exact keys (and of its number-blind reply
    keys), which ``vthread scan --anywhere`` confirms a looping line's runs with, is the
    obvious numbering of :func:`message_key` (:func:`reply_key`) over the messages Python
    reads from the line: equal numbers exactly for equal keys. A line the core does not read
    (NaN, an infinity, a lone surrogate) is None, its keys then Python's."""
    from vthread.anywhere import reply_key
    from vthread.fingerprint import message_key

    for thread in threads:
        line = json.dumps({"id": 0, "messages": thread}).encode()
        messages = json.loads(line)["messages"]
        for folded, key in ((False, message_key), (True, reply_key)):
            numbers = _core.line_key_numbers([line], digits_folded=folded)
            if numbers is None:
                assert _core.tape_reads([line]) == [False], line
                continue
            spans = _core.line_message_spans([line])
            assert spans is not None and [
                json.loads(line[start:end]) for start, end in spans.reshape(-1, 2).tolist()
            ] == messages
            assert numbers.tolist() == _numbered([key(message) for message in messages])
        # under a messages key, and from a read-only view of the line
        keyed = json.dumps({"task": 1, "steps": thread}).encode()
        assert _core.line_key_numbers([keyed], "steps", "task") is None or np.array_equal(
            _core.line_key_numbers([memoryview(keyed)], "steps", "task"),
            _core.line_key_numbers([line]))


def test_the_core_makes_loop_records_from_lines_as_from_threads() -> None:
    """:func:`_core.anywhere_loop_parts_of_lines` (the records of a looping line made from the
    line itself) equals :func:`_core.anywhere_loop_parts` of the same threads as objects, on
    the benchmark's threads, every loop kind among them; the loops of a line the core does
    not read are declined."""
    from benchmarks.workload import generate_threads

    threads = generate_threads(300, seed=4)
    found = find_loops(threads)
    flat = [(row, loop) for row, loops in enumerate(found) for loop in loops]
    assert len({loop.kind for _, loop in flat}) >= 3
    rows = sorted({row for row, _ in flat})
    position = {row: index for index, row in enumerate(rows)}
    spans = ([position[row] for row, _ in flat], [loop.start for _, loop in flat],
             [loop.end for _, loop in flat], [loop.period for _, loop in flat],
             [loop.kind for _, loop in flat])
    lines = [json.dumps({"id": row, "messages": threads[row]}).encode() for row in rows]
    from_lines = _core.anywhere_loop_parts_of_lines(lines, *spans)
    from_threads = _core.anywhere_loop_parts([threads[row] for row in rows], *spans)
    for field in ("signature", "loop_tokens", "declined"):
        assert np.array_equal(from_lines[field], from_threads[field], equal_nan=True), field
    assert from_lines["excerpts"] == from_threads["excerpts"]
    broken = [line.replace(b'"messages": [', b'"messages": [NaN, ', 1) for line in lines]
    unread = _core.anywhere_loop_parts_of_lines(broken, *spans)
    assert unread["declined"].tolist() == list(range(len(flat)))


def test_the_core_refuses_loops_of_lines_out_of_order_or_past_the_batch() -> None:
    """The three calls that read spans of a batch by owner (the records of loops found
    anywhere from threads or from lines, the token totals of spans of lines) refuse an
    owner past the batch and owners out of order, naming what was wrong, rather than read
    a line's spans apart or index past the batch."""
    thread = [{"type": "text", "text": "a"}, {"type": "text", "text": "a"}]
    lines = [json.dumps({"messages": thread}).encode()] * 2
    calls = {
        "threads": lambda owners: _core.anywhere_loop_parts([thread, thread], owners, [0, 0],
                                                            [2, 2], [1, 1], [1, 1]),
        "lines": lambda owners: _core.anywhere_loop_parts_of_lines(lines, owners, [0, 0],
                                                                   [2, 2], [1, 1], [1, 1]),
        "tokens": lambda owners: _core.span_tokens_of_lines(lines, owners, [0, 0], [2, 2]),
    }
    for name, call in calls.items():
        made = call([0, 1])
        assert len(made if name == "tokens" else made["signature"]) == 2, name
        with pytest.raises(ValueError, match="owners must come in order"):
            call([1, 0])
        with pytest.raises(ValueError, match="owner 2 of a batch of 2"):
            call([0, 2])


def test_a_reply_run_counts_only_copies_each_answering_a_turn_of_its_own() -> None:
    """The same reply to three agent turns in a row: a reply said twice to one turn counts
    once, in whatever place of the run, and the run goes on (every gap was judged by the
    first: four replies to one turn were a loop, and a reply said twice before three
    answered turns hid them, a tester's cases; then the run was cut at a reply said twice
    in its middle, the reviewer's). A block of replies is a loop only when each answers a
    turn of its own. The fast path and its twin agree."""
    def replied(turns: list[int]) -> list[dict[str, Any]]:
        return [said("task", "user"), *[m for turn, times in enumerate(turns) for m in (
            said(f"turn {turn}"), *[said("X", "user")] * times)]]

    cases = {(1, 3): [], (2, 1, 1): [(2, 8, 3)], (1, 1, 2, 1, 1, 1): [(2, 14, 6)],
             (1, 2, 1, 1): [(2, 10, 4)]}
    for turns, expected in cases.items():
        found = find_loops([replied(list(turns))])
        assert found == find_loops_reference([replied(list(turns))])
        assert [(loop.start, loop.end, loop.repetitions) for loop in found[0]] == expected, turns
        assert all(loop.kind == 3 for loop in found[0])
    pairs = [said("task", "user"), *[m for turn in range(3) for m in (
        said(f"a{turn}"), said("X", "user"), said(f"b{turn}"), said("Y", "user"))]]
    assert [(loop.start, loop.kind) for loop in find_loops([pairs])[0]] == [(2, 3)]
    doubled = [said("task", "user"), *[m for turn in range(3) for m in (
        said(f"a{turn}"), said("X", "user"), said("X", "user"))]]
    assert find_loops([doubled]) == find_loops_reference([doubled])
    assert [loop.repetitions for loop in find_loops([doubled])[0]] == [3]


def test_an_action_loop_s_signature_is_its_actions_alone() -> None:
    """An action loop's and a reply run's signature and excerpt are made of the actions
    they compared: the agent's reasoning and words between the copies, and their spacing,
    change neither (a tester's cases: each changed the signature, and the excerpt showed
    reasoning); the core's and Python's agree."""
    poll, pending = call("get", id=1), answer("get", "pending", id=1)

    def actions(between: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
        return [said("t", "user"), *[m for gap in between for m in (poll, pending, *gap)]]

    runs = [actions([[said("a", "reasoning")], [said("b", "reasoning")], []]),
            actions([[said("x", "reasoning")], [said("y", "reasoning")], []]),
            actions([[], [said(str(i)) for i in range(6)], []]),
            actions([[said("1")], [said("2")], []])]
    records = [loops[0] for loops in scan(runs, anywhere=True).loops]
    assert {r["signature"] for r in records} == {records[0]["signature"]}
    assert {r["excerpt"] for r in records} == {'get({"id":1}) -> pending'}
    by_python = [anywhere_module.loop_records(run, found, _core.canonical)[0]
                 for run, found in zip(runs, find_loops(runs), strict=True)]
    assert [(r["signature"], r["excerpt"]) for r in by_python] == [
        (r["signature"], r["excerpt"]) for r in records]
    replies = [said("t", "user"), *[m for i in range(3) for m in (
        said(f"try {i}"), said(f"found {i + 2} actions", "user"), said(f"r{i}", "reasoning"))]]
    [reply] = scan([replies], anywhere=True).loops[0]
    assert reply["excerpt"] == "user: found 2 actions"


def test_a_runaway_text_s_signature_is_its_prose_s() -> None:
    """A runaway text's signature and excerpt are made of the prose that was judged, its
    fenced code left out, as the check leaves it out (the code beside it changed the
    signature, and the excerpt began inside the code; a tester's case)."""
    run = "Let me check the file. " * 12
    texts = [f"Here:\n```\n{code}\n{code}\n```\n{run}" for code in ("x = 1", "y = 2")]
    records = [loops[0] for loops in scan([[said("go", "user"), said(text)]
                                           for text in texts], anywhere=True).loops]
    assert records[0]["signature"] == records[1]["signature"]
    assert records[0]["excerpt"].startswith("Let me check the file.")


def test_a_failing_call_retried_among_parallel_calls_starts_at_its_own_call() -> None:
    """Parallel calls of one tool, both failing the same way, retried: the loop starts at
    the call whose error repeats, told by its arguments (the other call's were taken for
    it, by its name, one message late); in a chat format its period is the copies'
    spacing there too."""
    book_x, book_y = call("book", f="X"), call("book", f="Y")
    failed_x = answer("book", "Error: seat taken", f="X")
    failed_y = answer("book", "Error: seat taken", f="Y")
    thread = [said("go", "user")]
    for index in range(3):
        thread += [book_x, book_y, failed_x, failed_y, call("search", q=index),
                   answer("search", f"flights {index}", q=index)]
    [[loop]] = find_loops([thread])
    assert (loop.start, loop.period, loop.repetitions) == (1, 6, 3)
    assert find_loops_reference([thread]) == [[loop]]
    # Its signature and excerpt are its own error's, whatever the other call's arguments
    # (they showed the other call, and changed with it: the second reviewer's case).
    [record] = scan([thread], anywhere=True).loops[0]
    assert record["excerpt"] == 'book({"f":"X"}) -> Error: seat taken'
    other = [call("book", f="Z") if m is book_y else
             answer("book", "Error: seat taken", f="Z") if m is failed_y else m
             for m in thread]
    [again] = scan([other], anywhere=True).loops[0]
    assert again["signature"] == record["signature"]
    retried = [said("go", "user")]
    for index in range(3):
        retried += [call("book", f="X"), answer("book", "Error: seat taken", f="X"),
                    said(f"Sorry {index}"), said(f"try again {index}", "user")]
    chat = [{"role": "user", "content": "go"}]
    for index in range(3):
        chat += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": f"c{index}", "type": "function",
                      "function": {"name": "book", "arguments": '{"f": "X"}'}}]},
                 {"role": "tool", "tool_call_id": f"c{index}", "content": "Error: seat taken"},
                 {"role": "assistant", "content": f"Sorry {index}"},
                 {"role": "user", "content": f"try again {index}"}]
    [native] = scan([retried], anywhere=True).loops[0]
    [translated] = scan([chat], format="openai", anywhere=True).loops[0]
    assert native["period"] == translated["period"] == 4
