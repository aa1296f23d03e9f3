"""Hostile thread shapes: single threads of ``n`` messages built to break linear growth.

Why it exists: the cycle engine decides the repeated suffix with a Z-function over cheap
*screens* (type, text, whether meta is present), then over *exact* ids (canonical bytes,
interned per thread) only for the periods the screens let through, under a budget of
comparisons; the activity tail and the result run intern payloads by canonical bytes; the
CLI parses one JSONL line per thread. Each shape here aims at one of those steps: screens
that are all equal (every period survives to the exact pass), exact keys that agree for a
long way before they differ, a period of half the thread, tails whose every message is a
well-formed tool call, a result run as long as the thread, integers the CLI must re-parse
with the standard library. ``benchmarks/growth_report.py`` times them at growing ``n`` and
``benchmarks/test_bench_growth.py`` checks them at small ``n``.

Each :class:`Shape` carries the verdict it is built to get (``expected``); the growth report
and the tests also hold the engine against the scalar reference wherever the reference
finishes in seconds. Messages are fresh dicts, as ``json.loads`` makes them (no object is
shared between two messages, so no cache keyed on identity can help).

Cost: O(n) per shape, a few hundred milliseconds for a million messages.

>>> [len(SHAPES[name].make(10)) for name in ("healthy", "long_period", "meta_only")]
[10, 10, 10]
>>> SHAPES["long_period"].expected
'repeated_suffix'
"""

from __future__ import annotations

import inspect
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

Message = dict[str, Any]
Thread = list[Message]

__all__ = ["ANYWHERE_SHAPES", "SHAPES", "Shape", "Thread"]

_SHORT_BLOCK: Final = 8
"""Messages per copy in ``near_period_short``."""
_DEPTH: Final = 32
"""Nesting of ``deep_meta``'s meta: deep enough that every exact key costs a walk, far below
the encoder's depth limit (4,160), past which a value would encode as unserializable."""
_BIG: Final = 1_700_000_000_000_000_000
"""A nanosecond timestamp: 19 digits, so a JSONL line holding it may hold an integer beyond
64 bits as far as the CLI's digit scan can tell, and is parsed by the standard module."""
_BIG_STEP: Final = 1_000
"""Spacing of ``big_integers``' timestamps: integers beyond 2**53 compare as doubles (as in
JavaScript), and near 1.7e18 consecutive doubles are 256 apart, so a step of 1 would make runs of
256 equal messages (a loop)."""


def _activity(kind: str, name: str, arguments: Any, result: Any = None) -> Message:
    function: dict[str, Any] = {"name": name, "arguments": arguments}
    if kind == "response":
        function["result"] = result
    return {"type": "activity", "text": "",
            "meta": {"activity": {"type": kind, "function": function}}}


def _chat(count: int, start: int = 0) -> Thread:
    """``count`` alternating user/bot messages with distinct texts (numbered from ``start``)."""
    return [
        {"type": "user", "text": f"question {i}: what about part {i}?"} if i % 2 == 0
        else {"type": "bot", "text": f"answer {i}: part {i} is done"}
        for i in range(start, start + count)
    ]


def healthy(n: int) -> Thread:
    """Alternating user/bot messages, every text distinct: the baseline shape.

    Every screen differs from its neighbours, so the Z pass stops at once for every period and
    no exact key is ever encoded; the tail holds no activity. What any shape costs beyond
    this is the cost of its hostility.
    """
    return _chat(n)


def all_equal(n: int) -> Thread:
    """One message ``n`` times: a loop of period 2 from the first message on.

    The shortest period holds at once, then the copies are counted over the whole thread
    (exact keys for all ``n`` messages), and ``scan`` sums the loop's usage over all of them.
    """
    return [{"type": "bot", "text": "Let me check the configuration again.",
             "usage": {"tokens": 9}} for _ in range(n)]


def meta_only(n: int) -> Thread:
    """Messages that differ only in ``meta``: ``{"type": "activity", "text": "", "meta":
    {"i": i}}``.

    Every screen is equal, so every period from 2 to n/2 survives the screened Z pass and
    goes to the exact pass; none holds. Not a well-formed activity (no ``meta.activity``), so
    the tail is empty. This is the shape that took 14.6 s at 80k messages before the Z pass.
    """
    return [{"type": "activity", "text": "", "meta": {"i": i}} for i in range(n)]


def changing_arguments(n: int) -> Thread:
    """Request/response pairs of one tool whose arguments change every call: an ordinary
    long agent run (a file read after another).

    Screens are all equal (type "activity", empty text, meta present) so every period reaches
    the exact pass; the whole thread is a well-formed activity tail, so every payload is
    interned and the tail's signatures are counted by sorting ``n`` rows.
    """
    thread: Thread = []
    for i in range(n // 2):
        arguments = {"path": f"src/module_{i}.py"}
        thread.append(_activity("request", "read_file", arguments))
        thread.append(_activity("response", "read_file", dict(arguments),
                                f"contents of module {i}"))
    return thread + _chat(n % 2)


def long_period(n: int) -> Thread:
    """A block of n/2 distinct messages, twice: a loop whose period is half the thread.

    The screened Z pass finds the single period n/2 at the end of the range; the exact pass
    confirms it over n/2 comparisons; ``scan`` then fingerprints the block and finds its
    least rotation (Booth's algorithm in Python, O(period)) for the loop's signature.
    """
    half = n // 2
    return _chat(n - 2 * half) + _chat(half) + _chat(half)


def near_period(n: int) -> Thread:
    """A block of n/2 messages, twice, with the oldest message of the last copy changed in
    ``meta`` only: no loop, but it looks like one to the screens.

    Screens agree over the whole period n/2, so it survives; the exact pass then matches
    n/2 - 1 messages before the difference: the most exact work a single period can cost.
    """
    half = n // 2
    block = [dict(m, meta={"v": 1}) for m in _chat(half)]
    copy = [dict(m, meta={"v": 1}) for m in _chat(half)]
    if copy:
        copy[0]["meta"] = {"v": 2}
    return _chat(n - 2 * half) + block + copy


def near_period_short(n: int) -> Thread:
    """A block of 8 messages repeated n/8 times, the oldest message of the last copy changed
    in ``meta`` only: no loop.

    Every multiple of 8 up to n/2 survives the screens (n/16 periods) and each fails in the
    exact pass only after 7 matches: many survivors, each costing a little, against the
    comparison budget.
    """
    copies, rest = divmod(n, _SHORT_BLOCK)
    thread = _chat(rest, start=_SHORT_BLOCK)
    for _ in range(copies):
        thread += [dict(m, meta={"v": 1}) for m in _chat(_SHORT_BLOCK)]
    if copies:
        thread[n - _SHORT_BLOCK]["meta"] = {"v": 2}
    return thread


def tool_loop_then_recovery(n: int) -> Thread:
    """A tool loop (one call and its identical result, n/4 times), broken by a call that
    gets a new answer, then n/2 messages of ordinary chat.

    The loop is over, so nothing fires: the result run must stop at the recovery's answer,
    and the tail is empty; but every check walks past the chat into the old loop's region.
    """
    loop = n // 4
    thread: Thread = []
    for _ in range(loop):
        thread.append(_activity("request", "run_tests", {"target": "all"}))
        thread.append(_activity("response", "run_tests", {"target": "all"}, "3 failed"))
    thread.append(_activity("request", "edit_file", {"path": "src/app.py"}))
    thread.append(_activity("response", "edit_file", {"path": "src/app.py"}, "saved"))
    return thread + _chat(n - len(thread))


def deep_meta(n: int) -> Thread:
    """Equal type and text, meta nested 32 levels deep with the only difference at the
    bottom: long runs of equal screens whose exact keys each cost a walk of the nesting.

    Every period survives the screens, as in ``meta_only``, but each exact key is ~32
    containers deep: the cost per message is larger, not the growth.
    """
    thread: Thread = []
    for i in range(n):
        meta: Any = {"leaf": i}
        for level in range(_DEPTH - 1):
            meta = {"level": level, "inner": meta}
        thread.append({"type": "bot", "text": "working", "meta": meta})
    return thread


def polling_tail(n: int) -> Thread:
    """A tail of n well-formed activities: a ``list_dir`` call with the same answer, and a
    ``check_status`` poll whose answers all differ, alternating.

    Every count of the activity tail passes (few signatures, names, arguments and results
    repeat) up to the last test: the poll makes progress, so the ``_progressing`` grouping
    runs over n/2 request/response pairs and spares the thread. Screens are all equal.
    """
    thread: Thread = []
    for i in range(n // 4):
        thread.append(_activity("request", "check_status", {}))
        thread.append(_activity("response", "check_status", {}, f"progress {i}"))
        thread.append(_activity("request", "list_dir", {"path": "."}))
        thread.append(_activity("response", "list_dir", {"path": "."}, "a.py b.py"))
    return _chat(n - len(thread)) + thread


def long_result_run(n: int) -> Thread:
    """Distinct reasoning between identical tool results, n/2 times: a result run as long
    as the thread.

    The suffix and the tail cannot fire (the reasoning differs; an activity tail of one),
    so the run is walked back to the first message, interning every result on the way.
    """
    thread: Thread = _chat(n % 2)
    for i in range(n // 2):
        thread.append({"type": "reasoning", "text": f"maybe the cache, attempt {i}"})
        thread.append(_activity("response", "read_file", {"path": "config.yaml"}, "port: 80"))
    return thread


def large_newest(n: int) -> Thread:
    """Tool results that differ only in their result, the newest one's a list as long as the
    thread (of objects with an index key, which the tape orders by encoding).

    Every message shares a screen, so the newest is compared exactly with every candidate
    period's message: walked again at each comparison (as once it was), it made the pass
    grow with the square of the thread.
    """
    thread: Thread = [_activity("response", "ls", {"i": i}, f"ok {i}") for i in range(n - 1)]
    big = [{"0": j, "path": f"f{j}"} for j in range(n)]
    return [*thread, _activity("response", "ls", {"i": n}, big)]


def _square_free(n: int) -> list[int]:
    """The first ``n`` letters of a ternary square-free word: the first differences of the
    Thue-Morse sequence (OEIS A029883), shifted to 0, 1, 2."""
    return [(i + 1).bit_count() % 2 - i.bit_count() % 2 + 1 for i in range(n)]


def square_free_meta(n: int) -> Thread:
    """Equal screens, and exact keys that follow a square-free word over three values.

    No block repeats back to back, so nothing fires, yet the exact keys of many periods
    agree for a few messages before they differ: trying the surviving periods one by one
    costs about 1.7n comparisons (counted at 1k and 25k messages), just under the exact
    pass's linear budget of 2n, where ``meta_only``'s survivors each fail at once.
    """
    return [{"type": "activity", "text": "", "meta": {"v": v}} for v in _square_free(n)]


def ruler_meta(n: int) -> Thread:
    """Equal screens, and exact keys that follow the ruler sequence (1 2 1 3 1 2 1 4 ...,
    one more than the 2-adic valuation) read from the newest message back.

    The ruler sequence is square-free, so nothing fires; but at every period p the exact
    keys agree for 2**v(p) - 1 messages (p - 1 at powers of two), about n log n / 4
    comparisons in all when the surviving periods are tried one by one: more than the exact
    pass's linear budget (2n), so it must fall back to its exact Z pass to stay linear.
    """
    return [{"type": "activity", "text": "", "meta": {"v": ((i + 1) & -(i + 1)).bit_length()}}
            for i in reversed(range(n))]


def big_integers(n: int) -> Thread:
    """Messages holding a 19-digit integer each (a nanosecond timestamp), distinct as doubles.

    Aimed at the CLI: a line with a run of 19 digits may hold an integer orjson would round,
    so the CLI scans the line's digit runs (one per message) and parses the line with the
    standard ``json`` module instead. For the engine it is ``meta_only`` with larger keys.
    """
    return [{"type": "log", "text": "tick", "meta": {"ts": _BIG + _BIG_STEP * i}}
            for i in range(n)]


@dataclass(frozen=True, slots=True)
class Shape:
    """A generator of one hostile shape and the verdict it is built to get."""

    name: str
    make: Callable[[int], Thread]
    expected: str | None

    @property
    def doc(self) -> str:
        """The generator's docstring, as one paragraph: what the shape stresses."""
        return " ".join((inspect.getdoc(self.make) or "").split())


SHAPES: Final[dict[str, Shape]] = {
    shape.name: shape
    for shape in (
        Shape("healthy", healthy, None),
        Shape("all_equal", all_equal, "repeated_suffix"),
        Shape("meta_only", meta_only, None),
        Shape("changing_arguments", changing_arguments, None),
        Shape("long_period", long_period, "repeated_suffix"),
        Shape("near_period", near_period, None),
        Shape("near_period_short", near_period_short, None),
        Shape("tool_loop_then_recovery", tool_loop_then_recovery, None),
        Shape("deep_meta", deep_meta, None),
        Shape("polling_tail", polling_tail, None),
        Shape("long_result_run", long_result_run, "repeated_result_run"),
        Shape("square_free_meta", square_free_meta, None),
        Shape("ruler_meta", ruler_meta, None),
        Shape("big_integers", big_integers, None),
        Shape("large_newest", large_newest, None),
    )
}
"""Every shape by name, ``healthy`` (the baseline) first."""


def many_small_loops(n: int) -> Thread:
    """Agent messages whose text is one of three (empty, "x", "x x"), drawn at random: a
    short loop wherever three equal texts fall together, thousands along one run.

    Aimed at looking anywhere (``scan(..., anywhere=True)``): the candidates overlap one
    another everywhere, and each must be checked against the loops already kept; comparing
    it with every kept loop made this shape quadratic (320,000 messages: 319 s).
    """
    draw = random.Random(1)
    return [{"type": "bot", "text": "x " * draw.randrange(3)} for _ in range(n)]


def runaway_everywhere(n: int) -> Thread:
    """Agent messages each of whose prose is a runaway run of one sentence (numbered, so no
    two messages are equal): a text loop at every message.

    Aimed at looking anywhere: every message is a loop of its own, found by the core's
    runaway check, counted and described in Python.
    """
    return [{"type": "bot", "text": "Let me try that again. " * 50 + str(i)} for i in range(n)]


def retries_everywhere(n: int) -> Thread:
    """One failing tool call retried three times, then the next tool's: ``n / 6`` loops of
    failing calls retried, back to back.

    Aimed at looking anywhere's failing-retry pass (one sort of the tool responses, then
    each group's chain read in Python) and at the block pass (each retried pair is also a
    repeated block).
    """
    thread: Thread = []
    for i in range(n // 6):
        arguments = {"path": f"src/module_{i}.py"}
        for _ in range(3):
            thread.append(_activity("request", f"tool_{i}", arguments))
            thread.append(_activity("response", f"tool_{i}", dict(arguments),
                                    f"Error: module {i} not found"))
    return thread + _chat(n % 6)


def long_block_throughout(n: int) -> Thread:
    """A block of 30 distinct calls repeated from the first message to the last: one loop
    whose block is longer than looking anywhere's MAX_PERIOD.

    Aimed at the search for long blocks at the end: every multiple of 30 up to n / 2 is a
    candidate period, the shortest is confirmed, and its run of copies goes back to the
    first message (exact keys for the whole thread).
    """
    block = [_activity("request", "step", {"n": i}) for i in range(30)]
    return (block * (n // 30 + 1))[:n]


def one_reply_throughout(n: int) -> Thread:
    """The same user message ``n`` times: every period is a candidate at the end, and the
    block of environment messages alone is no loop of the agent's.

    Aimed at the search for long blocks at the end: ``n / 2`` candidates, the shortest
    confirmed and judged, the rest never looked at.
    """
    return [{"type": "user", "text": "continue"} for _ in range(n)]


def loop_that_skipped_once(n: int) -> Thread:
    """A cycle of 25 agent messages repeated from first to last, one copy in the middle
    skipping one message: an ordinary stuck agent that once did something a little else.

    Aimed at the search for long blocks: around the skip, every period of 24 modulo 25 (49,
    74, ... up to n / 2) repeats twice, so the runs hold n² / 50 positions in all; confirming
    each along its length was quadratic (100,000 messages: 16 s; 400,000: 229 s).
    """
    cycle = [{"type": "bot", "text": f"step {chr(97 + i // 26)}{chr(97 + i % 26)} of the cycle"}
             for i in range(25)]
    half = n // 2 - (n // 2) % 25
    thread = [cycle[i % 25] for i in range(half)] + cycle[:23] + cycle[24:]
    return thread + [cycle[i % 25] for i in range(n - len(thread))]


ANYWHERE_SHAPES: Final[dict[str, Callable[[int], Thread]]] = {
    make.__name__: make
    for make in (healthy, changing_arguments, many_small_loops, runaway_everywhere,
                 retries_everywhere, long_block_throughout, one_reply_throughout,
                 loop_that_skipped_once)
}
"""Shapes that stress looking anywhere (``healthy`` and ``changing_arguments`` as baselines:
no loop, and a long ordinary run)."""
