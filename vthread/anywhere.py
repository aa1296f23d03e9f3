"""Loops anywhere in a run: every stretch where the agent repeated itself, not only the end.

The production heuristics answer "is the agent stuck now?" and read only the end of a thread.
An evaluation of finished runs asks where agents looped, for how long and at what cost,
wherever in the run. :func:`find_loops` answers that for a batch of threads, and
``scan(..., anywhere=True)`` reports its answer per thread.

A loop is one of (each named after the production heuristic whose repetition it extends):

``repeated_suffix``
    a block of messages repeated back to back, anywhere (a tandem repeat of whole
    messages: the agent's words, its calls and their results alike), of any length;
``repeated_activity_tail``
    the same, over the thread's *actions* only (tool calls, their results and user or
    environment replies; the agent's free text and reasoning skipped), so a call retried
    with the same arguments and the same result is a loop however the agent words its
    thoughts in between; and a *failing call retried*: the same call getting the same error
    three times, each copy at most :data:`MAX_PERIOD` actions after the one before, other
    tools' calls and user messages between allowed but no call of the same tool getting
    another result (which would be progress: an edit before a rerun, a poll that moved);
    it runs from the first copy's call (told by its tool and arguments) to the last copy's
    error, its period the copies' mean spacing, its signature and excerpt its first error
    alone, with the call's tool and arguments (an action loop's, its actions alone);
``repeated_result_run``
    the same reply (a user or environment message, no tool call in between) to three agent
    turns in a row (a reply said twice to one turn counts once), its numbers aside (a
    rejection saying "found 2 actions", then "found 3 actions" is one rejection, and has
    one signature): a format rejection retried, a customer asked the same thing again;
``repeated_message_text_run``
    one agent message whose prose is a runaway run of repeated sentences (the production
    text-run check, applied to every agent message instead of the last five, with fenced
    code blocks left out, since written-out code repeats lines by nature, and at most a
    quarter of the units distinct, see :data:`RUNAWAY_UNIQUE_RATIO`).

A block holding one action (a tool call, or an agent turn for a reply) must be seen three
times in a row; a block of two or more actions twice in full. A block of environment
messages alone is never the agent's loop. Where loops overlap the longest is kept (then the
shortest period), so a loop is reported once, by its smallest repeating block.

Cost: one pass of the compiled core over the messages (a 64-bit *screen* per message: equal
messages always have equal screens; a user message gets a second one, blind to numbers; each
agent message's :func:`prose` checked for a runaway as it is read), then for each period
``p`` up to :data:`MAX_PERIOD` one NumPy comparison of the whole batch with itself shifted
by ``p``: O(total messages x MAX_PERIOD), vectorised across threads; longer blocks from the
core's runs of each thread's screens (``vthread._core.long_runs``, by the runs theorem); the
number-blind replies by one more comparison, the failing retries by one sort of the tool
responses' screens. Every repeat the screens accept is confirmed message by message on exact
canonical keys (the keys the suffix heuristic compares, or the number-blind
:func:`reply_key`), so a screen collision can cost time but never change an answer.
:func:`find_loops_reference` is the slow, obviously-correct twin the property tests hold
this to.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt
import xxhash

from vthread import _core
from vthread._attribution import joined, paired, rendered
from vthread._jsvalue import ABSENT_FIELD, field, is_string, is_text
from vthread._messages import token_total, usage_tokens
from vthread._on_demand import OnDemand
from vthread._options import text_run_options
from vthread.documents import translated_span
from vthread.fingerprint import exact_key, message_key, message_print
from vthread.scan import HEURISTIC_NAMES
from vthread.textrun import repeated_text_start, runaway, text_units

__all__ = [
    "LOOP_KINDS",
    "MAX_PERIOD",
    "LineSource",
    "Loop",
    "core_text_run",
    "counted_spans",
    "find_loops",
    "find_loops_in",
    "find_loops_reference",
    "loop_records",
    "loop_records_of",
    "loops_in_source",
    "plain_runs",
    "records_in_source",
    "recounted_loops",
    "threads_on_demand",
]

MAX_PERIOD: Final = 24
"""The longest repeating block searched anywhere, in messages (or actions, for action
blocks): three tool calls with their results and the agent's words between them: each period up to
it is one NumPy pass over the batch. Longer blocks are found by the core's runs."""

LOOP_KINDS: Final = HEURISTIC_NAMES
"""Loop kinds, coded 1 to 4: a loop is named after the production heuristic whose
repetition it extends, so records and summaries keep one vocabulary."""

BLOCK: Final = 1
ACTIONS: Final = 2
REPLIES: Final = 3
TEXT: Final = 4

# Message roles as the core writes them (src/anywhere.rs).
_OTHER: Final = 0
_AGENT: Final = 1
_REQUEST: Final = 2
_RESPONSE: Final = 3
_USER: Final = 4

RUNAWAY_UNIQUE_RATIO: Final = 0.25
"""At most this share of a message's last 64 sentence units may be distinct for its text to
count as runaway: the production check allows half, but it reads five messages at the end of
a run, where this reads every agent message of it, and careful step-by-step reasoning
("Case 1: ... Correct. Case 2: ... Correct.") repeats a third of its units by nature. A
degenerate message cycles a few sentences (its share is near 0.1)."""
_THINK: Final = "think"
"""A tool that only records the agent's thought (tau-bench's, Anthropic's "think" tool): read
as reasoning, so thoughts worded anew between identical retries do not hide them."""
_ONE_ACTION_COPIES: Final = 3
_SEVERAL_ACTIONS_COPIES: Final = 2
_CONFIRMED_PER_MESSAGE: Final = 8
_CONFIRMED_PER_THREAD: Final = 4096
"""A thread whose long runs of screens hold more positions than this many per message (plus
this many) is judged on exact keys numbered once each (:func:`_long_block_loops`) rather
than by confirming each run along its length: cheaper past that, and linear."""
_FENCED: Final = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_NUMBERS: Final = re.compile(r"[0-9]+")
_NUMBER_BYTES: Final = re.compile(rb"[0-9]+")
_ERROR: Final = re.compile(r"\s*(?:(?:error|exception|traceback)(?![\w-])|<returncode>(?!0<))",
                           re.IGNORECASE)
"""A tool result that fails, as the published formats write it: tau-bench's "Error: ...",
a Python traceback, mini-swe-agent's non-zero return code (Anthropic's ``is_error`` flag is
read from the meta). The word whole: "errors are fine", "Exceptional fares" or "error-free"
is no error."""


@dataclass(frozen=True, slots=True, order=True)
class Loop:
    """One loop of a thread: messages ``[start, end)`` hold ``repetitions`` copies of a block
    of ``period`` messages (for an action block, the messages from one copy's first action
    to the next copy's); ``kind`` codes :data:`LOOP_KINDS` from 1. ``block``, when not 0,
    is how many messages from ``start`` make the copy its signature and excerpt show
    (:func:`_compared` picks the actions among them) where that is not the period: an
    action loop's or reply run's first copy up to the second. ``shown_from`` is where that
    copy starts, past ``start``, when not there: a failing call retried shows its first
    error alone (its tool, arguments and result), not its call with whatever lies between
    them (parallel calls of the same tool made its signature depend on theirs)."""

    start: int
    end: int
    period: int
    repetitions: int
    kind: int
    block: int = 0
    shown_from: int = 0

    @property
    def shown(self) -> int:
        """The messages from ``start + shown_from`` its signature and excerpt are made of."""
        return self.block or self.period


Key = bytes


def reply_key(message: Mapping[str, Any]) -> Key:
    """:func:`message_key` with every run of digits in the text read as one: replies equal
    under it differ only in their numbers (a count, a line number, an id)."""
    text = message.get("text")
    return exact_key(message.get("type"),
                     _NUMBERS.sub("0", text) if is_string(text) else text, message)


def failed(message: Mapping[str, Any]) -> bool:
    """Whether a tool response's result is an error (see :data:`_ERROR`)."""
    meta = message.get("meta")
    activity = meta.get("activity") if isinstance(meta, Mapping) else None
    if not isinstance(activity, Mapping):
        return False
    function = activity.get("function")
    result = function.get("result") if isinstance(function, Mapping) else None
    return activity.get("is_error") is True or (
        is_string(result) and _ERROR.match(result) is not None)


def call_result(message: Mapping[str, Any]) -> tuple[Key, Key]:
    """A tool response's (tool name, result), each as its exact key: a response of the same
    tool with another result between two retries is progress. The name by its value, as
    JavaScript compares it (a ``str`` subclass's own ``__eq__`` saying no made every other
    call of the tool a different one, and a retried failure a loop)."""
    function = _function_of(message)
    if function is None:
        return _core.canonical([None]), _core.canonical([None])
    return _core.canonical([function.get("name")]), _core.canonical([function.get("result")])


def _function_of(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A tool call's or response's ``meta.activity.function``, or None."""
    meta = message.get("meta")
    activity = meta.get("activity") if isinstance(meta, Mapping) else None
    function = activity.get("function") if isinstance(activity, Mapping) else None
    return function if isinstance(function, Mapping) else None


# --------------------------------------------------------------------------- the fast path


def find_loops(threads: list[Any]) -> list[list[Loop]]:
    """Every loop of every thread (see the module docstring), each thread's in message order.

    O(total messages x MAX_PERIOD) array work plus the exact confirmation of what repeats.

    >>> call = {"type": "activity", "text": "", "meta": {"activity": {"type": "request",
    ...         "function": {"name": "ls", "arguments": {}}}}}
    >>> find_loops([[{"type": "user", "text": "go"}, call, call, call,
    ...              {"type": "bot", "text": "done"}]])
    [[Loop(start=1, end=4, period=1, repetitions=3, kind=1, block=0, shown_from=0)]]
    """
    raw = _core.message_screens(threads, core_text_run(), keep_read=True)
    return find_loops_in(raw, raw["threads"])


def core_text_run() -> tuple[int, int, float]:
    """The text-run options (min_units, window, max_unique_ratio) the core checks each agent
    message's prose with as it screens the messages: the defaults, with at most
    :data:`RUNAWAY_UNIQUE_RATIO` of the units distinct."""
    options = text_run_options(max_unique_ratio=RUNAWAY_UNIQUE_RATIO)
    return options.min_units, options.window, options.max_unique_ratio


def find_loops_in(raw: Mapping[str, Any], threads: Sequence[Sequence[Mapping[str, Any]]],
                  lines: LineSource | None = None) -> list[list[Loop]]:
    """:func:`find_loops` given the core's screens of the threads (``raw``: what
    :func:`vthread._core.message_screens` makes of them, or ``vthread._core.scan_lines``
    of their lines, with :func:`core_text_run`). ``threads[i]`` is read only for a thread
    whose screens repeat or whose prose runs away, to confirm the loop exactly and count a
    runaway's copies, so it may parse its thread when asked. ``lines``: the threads' native
    JSON lines (the CLI's), from which the core numbers a looping thread's exact keys and
    reply keys (:func:`vthread._core.line_key_numbers`): ``threads[i]`` is then read only by
    the rules still written in Python (a retried failure, a runaway text), message by
    message when it is :func:`threads_on_demand`'s."""
    offsets: npt.NDArray[np.int64] = raw["offsets"]
    screens: npt.NDArray[np.uint64] = raw["screens"]
    roles: npt.NDArray[np.int8] = raw["roles"]
    count = offsets.size - 1
    owner = np.repeat(np.arange(count, dtype=np.int64), np.diff(offsets))
    keys = _Keys(threads, offsets, lines)
    found: list[list[Loop]] = [[] for _ in range(count)]

    every = np.arange(screens.size, dtype=np.int64)
    for kind, rows in ((BLOCK, every), (ACTIONS, np.flatnonzero(_is_action(roles)))):
        sequence = screens[rows]
        collided: set[int] = set()  # threads where equal screens held unequal messages
        for thread, first, last, period in _screen_runs(sequence, owner[rows]):
            run = rows[first : last + period]
            if not _may_hold_a_loop(kind, run, period, roles):
                continue  # its messages are never read: most such threads are never parsed
            found[thread] += _confirmed(kind, thread, run, period, roles,
                                        int(offsets[thread]), keys, collided)
        for thread, loop in _long_block_loops(kind, rows, sequence, roles, offsets, keys,
                                              collided):
            found[thread].append(loop)

    actions = np.flatnonzero(_is_action(roles))
    replies: npt.NDArray[np.uint64] = raw["reply_screens"]
    for thread, loop in _number_blind_replies(threads, actions, replies, roles, owner, offsets,
                                              lines):
        found[thread].append(loop)
    may_fail: npt.NDArray[np.bool_] = raw["may_fail"]
    for thread, loop in _retried_failures(threads, keys, screens, roles, may_fail, owner,
                                          offsets):
        found[thread].append(loop)

    # Agent messages whose prose runs away, found by the core as it read them (the text-run
    # check of `prose`, with `core_text_run`'s options).
    text_rows: npt.NDArray[np.int64] = raw["text_rows"]
    for row in text_rows.tolist():
        thread = int(owner[row])
        start = row - int(offsets[thread])
        copies = _text_copies(field(threads[thread][start], "text"))  # (read as the core reads it)
        found[thread].append(Loop(start, start + 1, 1, copies, TEXT))
    return [_kept(loops) for loops in found]


Thread = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class LineSource:
    """Threads as their native JSON lines (``line_of(row)``), read under ``messages_key``
    and ``id_key`` as :func:`vthread._core.scan_lines` read them: what the core reads a
    looping line's keys and loop records from (:func:`find_loops_in`,
    :func:`loop_records_of`)."""

    line_of: Callable[[int], bytes | memoryview]
    messages_key: str | None = None
    id_key: str | None = None

    def key_numbers(self, row: int, length: int, *, digits_folded: bool = False
                    ) -> npt.NDArray[np.int64] | None:
        """The core's numbering of the keys of row ``row``'s ``length`` messages (exact keys,
        or with ``digits_folded`` :func:`reply_key`'s: :func:`vthread._core.line_key_numbers`);
        None when the core does not read the line, or reads another count of messages."""
        numbers = _core.line_key_numbers([self.line_of(row)], self.messages_key, self.id_key,
                                         digits_folded=digits_folded)
        return numbers if numbers is not None and numbers.size == length else None


def threads_on_demand(count: int, line_of: Callable[[int], bytes],
                      read: Callable[[bytes, bool], Thread],
                      lines: LineSource | None = None) -> Sequence[Thread]:
    """``count`` threads, row ``row``'s made from its JSON line ``line_of(row)`` only when first
    asked for: what :func:`find_loops_in` is given for lines the core screened, so that only
    the lines that may loop are copied out and made into Python objects. ``read(line,
    long_digits)`` makes a line's thread (``long_digits``: whether the line holds 19 digits in
    a row, see :func:`vthread._exact_json.suspect_lines`, looked for in that line only: a
    chunk's few candidate lines, not all of its lines); it raises for a line it cannot.
    ``lines`` (the same lines, as the core read them): a thread is then its messages each
    made only when read, from its own JSON text (:func:`_messages_of_line`), for the core
    says where each lies; ``read`` makes a line the core does not read."""
    from vthread._exact_json import suspect_lines

    def made(row: int) -> Thread:
        line = line_of(row)
        if lines is not None:
            spans = _core.line_message_spans([line], lines.messages_key, lines.id_key)
            if spans is not None:
                return _messages_of_line(line, spans.reshape(-1, 2))
        return read(line, bool(suspect_lines([line])))

    return OnDemand(count, made)


def _messages_of_line(line: bytes | memoryview, spans: npt.NDArray[np.int64]
                      ) -> Sequence[Mapping[str, Any]]:
    """A line's messages, message ``i`` made from its own JSON text (``line[spans[i][0]:
    spans[i][1]]``) when first read, as ``json.loads`` makes it (exactly, as the line's
    reading does: :func:`vthread._exact_json.loads_exactly`): the same object the line read
    whole holds there, for a JSON value reads alike alone. A long looping line is read in
    Python only where a rule needs its messages (a retried failure, a runaway text), not
    made whole into Python objects (a 1M-message line took 4x the memory of its scan)."""
    from vthread._exact_json import loads_exactly, suspect_lines

    view = memoryview(line)
    long_digits: list[bool] = []  # whether the line holds 19 digits in a row, once looked

    def made(index: int) -> Mapping[str, Any]:
        if not long_digits:
            long_digits.append(bool(suspect_lines([cast(bytes, line)])))
        start, end = spans[index].tolist()
        message = loads_exactly(bytes(view[start:end]), long_digits[0])
        if not isinstance(message, Mapping):
            raise ValueError(f"message {index} of a line the core read is no mapping")
        return message

    return OnDemand(len(spans), made)


def _is_action(roles: npt.NDArray[np.int8]) -> npt.NDArray[np.bool_]:
    actions: npt.NDArray[np.bool_] = (roles == _REQUEST) | (roles == _RESPONSE) | (roles == _USER)
    return actions


def _screen_runs(
    screens: npt.NDArray[np.uint64], owner: npt.NDArray[np.int64]
) -> list[tuple[int, int, int, int]]:
    """(thread, first, last, period): positions ``first..last-1`` of the sequence equal, by
    screen, the position ``period`` later within the same thread, for at least one whole
    block (``last - first >= period``), maximal; every period up to MAX_PERIOD."""
    runs = []
    for period in range(1, MAX_PERIOD + 1):
        if screens.size <= period:
            break
        equal = (screens[:-period] == screens[period:]) & (owner[:-period] == owner[period:])
        edges = np.diff(equal.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts = np.flatnonzero(edges == 1)
        stops = np.flatnonzero(edges == -1)
        long_enough = stops - starts >= period
        for first, last in zip(starts[long_enough].tolist(), stops[long_enough].tolist(),
                               strict=True):
            runs.append((int(owner[first]), first, last, period))
    return runs


def _long_block_loops(kind: int, rows: npt.NDArray[np.int64], sequence: npt.NDArray[np.uint64],
                      roles: npt.NDArray[np.int8], offsets: npt.NDArray[np.int64], keys: _Keys,
                      collided: set[int]) -> list[tuple[int, Loop]]:
    """The loops of blocks longer than MAX_PERIOD repeated back to back anywhere: the runs
    of each thread's screens (``sequence``, the screens of ``rows``) whose block repeats no
    shorter one (``vthread._core.long_runs``), each confirmed on exact keys and judged as any
    run is. A run of exact keys always lies in a run of their screens, but collided screens
    may repeat with a shorter period than the keys do, hiding it; so a thread in which equal
    screens held unequal messages (``collided``, from the shorter periods' runs and from
    these) has its long runs found again over its exact keys: a collision costs time, never
    an answer."""
    bounds = np.searchsorted(rows, offsets)
    groups, periods, starts, stops = _core.long_runs(sequence, bounds, MAX_PERIOD + 1)
    # A thread whose runs hold many times its own length (a loop that skipped a message once
    # has a run at every period around the skip: n²/period positions in all) is judged on
    # its exact keys, numbered once each, in time linear in its length.
    covered = np.bincount(groups, weights=stops - starts, minlength=offsets.size - 1)
    heavy = set(np.flatnonzero(covered > _CONFIRMED_PER_MESSAGE * np.diff(bounds)
                               + _CONFIRMED_PER_THREAD).tolist())
    loops: dict[int, list[Loop]] = {}
    for thread, period, start, stop in zip(groups.tolist(), periods.tolist(), starts.tolist(),
                                           stops.tolist(), strict=True):
        if thread in heavy:
            continue
        run = rows[start:stop]
        if not _may_hold_a_loop(kind, run, period, roles):
            continue  # a thread of one user message repeated a million times walks no key
        loops.setdefault(thread, []).extend(
            _confirmed(kind, thread, run, period, roles, int(offsets[thread]), keys, collided))
    if collided or heavy:
        counts = _RoleCounts(rows, roles)
        for thread in sorted(collided | heavy):
            loops[thread] = _long_block_loops_exactly(kind, thread, rows, int(bounds[thread]),
                                                      int(bounds[thread + 1]), counts,
                                                      int(offsets[thread]), keys)
    return [(thread, loop) for thread, kept in loops.items() for loop in kept]


def _confirmed(kind: int, thread: int, run: npt.NDArray[np.int64], period: int,
               roles: npt.NDArray[np.int8], offset: int, keys: _Keys,
               collided: set[int]) -> list[Loop]:
    """The loops of a run of positions equal by screen to the one ``period`` later (``run``:
    batch rows of ``thread``, whose first row is ``offset``), confirmed on exact keys and
    judged; ``thread`` is added to ``collided`` when the keys do not confirm the whole run
    (equal screens held unequal messages)."""
    exact = keys.exact_runs(thread, run, period)
    if exact != [(0, run.size - period)]:
        collided.add(thread)
    loops = []
    for begin, stop in exact:
        loop = _judged(kind, begin, stop, period, run, roles, offset)
        if loop is not None:
            loops.append(loop)
    return loops


def _long_block_loops_exactly(kind: int, thread: int, rows: npt.NDArray[np.int64], low: int,
                              high: int, counts: _RoleCounts, offset: int,
                              keys: _Keys) -> list[Loop]:
    """:func:`_long_block_loops` of one thread (``rows[low:high]``), over its messages' exact
    keys numbered in order of first appearance (equal numbers for equal keys only), each
    run judged in O(1) (:meth:`_RoleCounts.judged`): linear in the thread's length, however
    long its runs are in all."""
    numbered = keys.numbers(thread, rows[low:high]).astype(np.uint64)
    _, periods, starts, stops = _core.long_runs(numbered, np.array([0, high - low], np.int64),
                                                MAX_PERIOD + 1)
    loops = []
    for period, start, stop in zip(periods.tolist(), starts.tolist(), stops.tolist(),
                                   strict=True):
        loop = counts.judged(kind, low + start, stop - start - period, period, offset)
        if loop is not None:
            loops.append(loop)
    return loops


class _RoleCounts:
    """How many requests, agent messages and user messages lie before each position of a
    kind's sequence of batch rows (and agent messages before each batch row), so that a run
    is judged in O(1) whatever its length: :meth:`judged` is :func:`_judged`'s twin."""

    def __init__(self, rows: npt.NDArray[np.int64], roles: npt.NDArray[np.int8]) -> None:
        def before(flags: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
            return np.concatenate(([0], np.cumsum(flags, dtype=np.int64)))

        self._rows = rows
        sequence = roles[rows]
        self._requests = before(sequence == _REQUEST)
        self._agents = before(sequence == _AGENT)
        self._users = before(sequence == _USER)
        self._agents_in_batch = before(roles == _AGENT)

    def judged(self, kind: int, first: int, stop: int, period: int,
               offset: int) -> Loop | None:
        """``_judged(kind, 0, stop, period, rows[first:], roles, offset)``."""
        end = first + period  # the first block: positions first..end - 1
        requests = int(self._requests[end] - self._requests[first])
        copies = (stop + period) // period
        if kind == BLOCK:
            actions = requests + int(self._agents[end] - self._agents[first])
        elif requests:
            actions = requests
        elif int(self._users[end] - self._users[first]) == period:
            agents, rows = self._agents_in_batch, self._rows
            kind, actions = REPLIES, 1
            repetitions = _turns_answered([
                bool(agents[int(rows[position + 1])] > agents[int(rows[position]) + 1])
                for position in range(first, first + copies * period - 1)], period)
        else:
            actions = 0
        if actions == 0:
            return None
        if kind != REPLIES:
            repetitions = copies
        if repetitions < (_ONE_ACTION_COPIES if actions == 1 else _SEVERAL_ACTIONS_COPIES):
            return None
        return _loop_of_copies(self._rows, first, copies, period, kind, offset, repetitions)


class _Keys:
    """Messages' exact keys (:func:`message_key`) as numbers, equal exactly when the keys
    are, each computed once and only for messages a screen run holds. A row's number is
    held in an array and each distinct key once, so a long thread's keys take 8 bytes a
    message: holding every key (each message's own bytes, in a dict by row) took about
    150 bytes a message, most of ``vthread scan --anywhere``'s memory past the thread."""

    def __init__(self, threads: Sequence[Sequence[Mapping[str, Any]]],
                 offsets: npt.NDArray[np.int64], lines: LineSource | None = None) -> None:
        self._threads = threads
        self._offsets = offsets
        self._lines = lines
        self._numbers = np.full(int(offsets[-1]), -1, np.int64)  # -1: not yet computed
        self._known: dict[Key, int] = {}
        self._asked: set[int] = set()  # threads whose line the core was asked to number

    def numbers(self, thread: int, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The key numbers of ``rows`` (distinct batch rows of ``thread``). A thread's
        numbers all come from one source, the core's numbering of its line or Python's of
        its messages (numbers are compared within a thread only)."""
        if self._lines is not None and thread not in self._asked:
            self._asked.add(thread)
            begin, end = int(self._offsets[thread]), int(self._offsets[thread + 1])
            numbered = self._lines.key_numbers(thread, end - begin)
            if numbered is not None:
                self._numbers[begin:end] = numbered
        got = self._numbers[rows]
        missing = np.flatnonzero(got < 0)
        if missing.size:
            messages = self._threads[thread]
            offset = int(self._offsets[thread])
            known = self._known
            made = np.array([known.setdefault(message_key(messages[row - offset]), len(known))
                             for row in rows[missing].tolist()], np.int64)
            self._numbers[rows[missing]] = made
            got[missing] = made
        return got

    def key(self, thread: int, row: int) -> int:
        """The key number of one row."""
        return int(self.numbers(thread, np.array([row], np.int64))[0])

    def exact_runs(self, thread: int, run: npt.NDArray[np.int64],
                   period: int) -> list[tuple[int, int]]:
        """The maximal ``[begin, stop)`` of ``run``'s positions equal, by exact key, to the
        position ``period`` later, at least one block long."""
        numbers = self.numbers(thread, run)
        same = numbers[:-period] == numbers[period:]
        edges = np.diff(same.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
        begins, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        whole = stops - begins >= period
        return list(zip(begins[whole].tolist(), stops[whole].tolist(), strict=True))


def _number_blind_replies(
    threads: Sequence[Sequence[Mapping[str, Any]]], actions: npt.NDArray[np.int64],
    replies: npt.NDArray[np.uint64],
    roles: npt.NDArray[np.int8], owner: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64],
    lines: LineSource | None = None,
) -> list[tuple[int, Loop]]:
    """Replies to three or more agent turns in a row equal but for their numbers
    (:func:`reply_key`): consecutive user messages of the actions whose number-blind screens
    (``replies``, from the core) agree are found by one comparison, and only those are
    keyed to confirm: in Python, or by the core from the thread's line (``lines``: its
    reply keys numbered, :func:`vthread._core.line_key_numbers`), a thread's all one way."""
    users = roles[actions] == _USER
    same = (owner[actions[:-1]] == owner[actions[1:]]) & (
        replies[actions[:-1]] == replies[actions[1:]])
    adjacent = np.flatnonzero(users[:-1] & users[1:] & same).tolist()
    cache: dict[int, Key | int] = {}
    numbered: dict[int, npt.NDArray[np.int64] | None] = {}  # by thread: the core's numbers

    def key(position: int) -> Key | int:
        row = int(actions[position])
        if row not in cache:
            thread = int(owner[row])
            offset = int(offsets[thread])
            if lines is not None and thread not in numbered:
                numbered[thread] = lines.key_numbers(
                    thread, int(offsets[thread + 1]) - offset, digits_folded=True)
            numbers = numbered.get(thread)
            cache[row] = (int(numbers[row - offset]) if numbers is not None
                          else reply_key(threads[thread][row - offset]))
        return cache[row]

    linked = [position for position in adjacent if key(position) == key(position + 1)]
    out = []
    begin = 0
    for index, position in enumerate(linked):
        if index + 1 < len(linked) and linked[index + 1] == position + 1:
            continue  # the run of equal replies goes on
        start = linked[begin]
        thread = int(owner[actions[start]])
        # positions start..position equal the next: replies start..position + 1
        loop = _judged(ACTIONS, start, position + 1, 1, actions, roles, int(offsets[thread]))
        if loop is not None:
            out.append((thread, loop))
        begin = index + 1
    return out


def _retried_failures(
    threads: Sequence[Sequence[Mapping[str, Any]]], keys: _Keys,
    screens: npt.NDArray[np.uint64],
    roles: npt.NDArray[np.int8], may_fail: npt.NDArray[np.bool_],
    owner: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64],
) -> list[tuple[int, Loop]]:
    """Failing calls retried (module docstring): tool responses the core says may have
    failed (``may_fail``, a superset of :func:`failed`) whose screen is seen three or more
    times in one thread are found by one sort; only those are read in Python."""
    responses = np.flatnonzero(may_fail)
    if responses.size < _ONE_ACTION_COPIES:
        return []
    order = np.lexsort((responses, screens[responses], owner[responses]))
    rows = responses[order]
    group = np.ones(rows.size, np.bool_)
    group[1:] = (screens[rows[1:]] != screens[rows[:-1]]) | (owner[rows[1:]] != owner[rows[:-1]])
    starts = np.flatnonzero(group)
    sizes = np.diff(np.append(starts, rows.size))
    position: npt.NDArray[np.int64] | None = None  # each row's place among the actions
    out = []
    for first, size in zip(starts[sizes >= _ONE_ACTION_COPIES].tolist(),
                           sizes[sizes >= _ONE_ACTION_COPIES].tolist(), strict=True):
        thread = int(owner[rows[first]])
        offset = int(offsets[thread])
        messages = threads[thread]
        copies_of: dict[int, list[int]] = {}  # by key number
        # Whether a result failed is cheaper to ask than an exact key.
        for row in rows[first : first + size].tolist():
            if failed(messages[row - offset]):
                copies_of.setdefault(keys.key(thread, row), []).append(row)
        for copies in copies_of.values():
            if len(copies) < _ONE_ACTION_COPIES:
                continue
            if position is None:
                position = np.cumsum(_is_action(roles)) - 1
            failure = call_result(messages[copies[0] - offset])
            chain = [copies[0]]
            for row in [*copies[1:], -1]:
                linked = row >= 0 and _retry_linked(
                    messages, offset, roles, position, failure, chain[-1], row)
                if linked:
                    chain.append(row)
                    continue
                if len(chain) >= _ONE_ACTION_COPIES:
                    out.append((thread, _retry_loop(chain, offset, messages, roles)))
                chain = [row]
    return out


def _retry_linked(messages: Sequence[Mapping[str, Any]], offset: int,
                  roles: npt.NDArray[np.int8], position: npt.NDArray[np.int64],
                  failure: tuple[Key, Key], before: int, after: int) -> bool:
    """Whether the copy at row ``after`` retries the one at ``before``: close enough, and
    no response of the same tool with another result between them."""
    if int(position[after] - position[before]) > MAX_PERIOD:
        return False
    name, result = failure
    for row in range(before + 1, after):
        if roles[row] == _RESPONSE:
            other, outcome = call_result(messages[row - offset])
            if other == name and outcome != result:
                return False
    return True


def _retry_loop(chain: list[int], offset: int, messages: Sequence[Mapping[str, Any]],
                roles: npt.NDArray[np.int8]) -> Loop:
    """The loop of a chain of failing responses (rows; ``offset``: the thread's first row,
    ``roles`` the batch's): from the call of its first failure, the first copy's action
    (the loop started at the error, one message late, its call's tokens not counted; a
    tester's case), to its last failure; its period the copies' mean spacing."""
    first = _call_before(chain[0], offset, messages, roles)
    spacing = (chain[-1] - chain[0]) / (len(chain) - 1)  # (a block's period, when regular)
    return Loop(first - offset, chain[-1] + 1 - offset, max(1, round(spacing)), len(chain),
                ACTIONS, block=1, shown_from=chain[0] - first)


def _call_before(response: int, offset: int, messages: Sequence[Mapping[str, Any]],
                 roles: npt.NDArray[np.int8]) -> int:
    """The row of the call a tool response answers: the nearest call before it, within
    :data:`MAX_PERIOD` messages, of the same tool with the same arguments (when the
    response carries its arguments: parallel calls of one tool are told apart, where the
    other call's arguments were shown with this one's error), and after any other response
    to such a call (whose call it would be); the response's own row when there is none (a
    result recorded without its call)."""
    name, arguments = _call_of(messages[response - offset])
    for row in range(response - 1, max(offset, response - MAX_PERIOD) - 1, -1):
        if roles[row] != _REQUEST and roles[row] != _RESPONSE:
            continue
        other, other_arguments = _call_of(messages[row - offset])
        if other == name and (arguments is None or other_arguments == arguments):
            return row if roles[row] == _REQUEST else response
    return response


def _call_of(message: Mapping[str, Any]) -> tuple[Key, Key | None]:
    """A tool call's or response's (tool name, arguments), each as its exact key; the
    arguments None when the message carries none."""
    function = _function_of(message)
    if function is None:
        return _core.canonical([None]), None
    arguments = field(function, "arguments")
    return (_core.canonical([function.get("name")]),
            None if arguments is ABSENT_FIELD else _core.canonical([arguments]))


def _may_hold_a_loop(kind: int, run: npt.NDArray[np.int64], period: int,
                     roles: npt.NDArray[np.int8]) -> bool:
    """Whether a run of positions equal by screen to the one ``period`` later may hold a
    loop :func:`_judged` keeps, told from roles alone, before any exact key is made. A run
    of exact equality lies within it, so it holds at most as many copies; and when the
    roles themselves repeat with the period (always, unless screens collide), every block
    of it has the same roles as its first, so a run with no action in its blocks, or too
    few copies for the actions it has, holds no loop. A run whose roles do not repeat is
    kept for the exact pass: a screen collision may cost time, never an answer."""
    if not np.array_equal(roles[run[:-period]], roles[run[period:]]):
        return True
    block = roles[run[:period]]
    requests = int(np.count_nonzero(block == _REQUEST))
    if kind == BLOCK:
        actions = requests + int(np.count_nonzero(block == _AGENT))
    elif requests:
        actions = requests
    elif np.all(block == _USER):
        actions = 1  # replies, when an agent message lies between copies (judged later)
    else:
        actions = 0
    needed = _ONE_ACTION_COPIES if actions == 1 else _SEVERAL_ACTIONS_COPIES
    return actions > 0 and run.size // period >= needed


def _judged(kind: int, begin: int, stop: int, period: int, run: npt.NDArray[np.int64],
            roles: npt.NDArray[np.int8], offset: int) -> Loop | None:
    """The loop a run of equal positions ``[begin, stop)`` (``period`` apart) of the
    sequence ``run`` (batch rows) makes, or None when it is no loop of the agent's."""
    copies = (stop - begin + period) // period
    block = roles[run[begin : begin + period]]
    requests = int(np.count_nonzero(block == _REQUEST))
    if kind == BLOCK:
        actions = requests + int(np.count_nonzero(block == _AGENT))
    elif requests:
        actions = requests
    elif np.all(block == _USER):
        kind, actions = REPLIES, 1
        repetitions = _turns_answered([
            bool(np.any(roles[int(run[position]) + 1 : int(run[position + 1])] == _AGENT))
            for position in range(begin, begin + copies * period - 1)], period)
    else:
        actions = 0
    if actions == 0:
        return None
    if kind != REPLIES:
        repetitions = copies
    if repetitions < (_ONE_ACTION_COPIES if actions == 1 else _SEVERAL_ACTIONS_COPIES):
        return None
    return _loop_of_copies(run, begin, copies, period, kind, offset, repetitions)


def _loop_of_copies(run: npt.NDArray[np.int64], begin: int, copies: int, period: int,
                    kind: int, offset: int, repetitions: int) -> Loop:
    """The loop of ``copies`` blocks of ``period`` positions of ``run`` from ``begin``,
    counted as ``repetitions`` (a reply run's turns answered): from the first copy's first
    message to the last copy's last, its period the messages a repetition spans on
    average, and (for actions and replies, whose copies the agent's own messages lie
    between) the first copy's messages up to the second's its block."""
    first = int(run[begin])
    last = int(run[begin + copies * period - 1])
    span = last + 1 - first
    block = 0 if kind == BLOCK else int(run[begin + period]) - first
    return Loop(first - offset, last + 1 - offset, max(1, round(span / repetitions)),
                repetitions, kind, block=block)


def _turns_answered(answered: Sequence[bool], period: int) -> int:
    """The agent turns a run of replies answers, given for each reply but the last whether
    an agent message lies between it and the next (``answered``): with one reply repeated,
    one turn more than the gaps answered (the same reply twice to one turn counts once,
    wherever in the run: only the first gap was asked, so four replies to one turn were a
    loop); with a block of several, its copies only when every reply answers a turn of its
    own, else none (a block [X, X] is one reply said twice)."""
    if period == 1:
        return 1 + sum(answered)
    return (len(answered) + 1) // period if all(answered) else 0


def prose(text: Any) -> Any:
    r"""``text`` without its fenced code blocks (a string; anything else as it is): code
    written out repeats lines by nature (a heredoc, a test suite), which is no runaway of
    the agent's words. gemini-cli's content check skips code blocks for the same reason.

    >>> prose("Fix it:\n```bash\nls\nls\n```\nDone.")
    'Fix it:\n\nDone.'
    """
    if not is_string(text) or "```" not in text:
        return text
    return _FENCED.sub("", text)


def _text_copies(text: str) -> int:
    """How often the runaway text's most repeated sentence occurs (in the part read)."""
    counts = Counter(text_units(prose(text)))
    return max(counts.values()) if counts else 1


def _preference(loop: Loop) -> tuple[int, int, int, int]:
    """The order loops are kept in: longest first, then shortest period, earliest, kind."""
    return (loop.start - loop.end, loop.period, loop.start, loop.kind)


def _kept(loops: list[Loop]) -> list[Loop]:
    """Loops that overlap none kept before them (in :func:`_preference` order), in message
    order. The messages kept loops cover are marked in a byte per message, so a loop is
    checked in its own length (a thread's candidates cover each message a bounded number
    of times: maximal runs, one set per period and kind), not against every loop kept: a
    long run of small loops was quadratic. :func:`_kept_plainly` is the obvious twin."""
    if not loops:
        return []
    covered = bytearray(max(loop.end for loop in loops))
    kept: list[Loop] = []
    for loop in sorted(loops, key=_preference):
        if covered.find(1, loop.start, loop.end) < 0:
            covered[loop.start : loop.end] = b"\x01" * (loop.end - loop.start)
            kept.append(loop)
    return sorted(kept)


# ------------------------------------------------------------------------ the slow twin


def find_loops_reference(threads: Sequence[Sequence[Mapping[str, Any]]]) -> list[list[Loop]]:
    """:func:`find_loops` written plainly: exact keys of every message, every start and
    every period compared block by block, no screens. O(n³) per thread."""
    return [_thread_loops(list(thread)) for thread in threads]


def _kept_plainly(loops: list[Loop]) -> list[Loop]:
    """:func:`_kept` written plainly: each loop checked against every loop kept before it."""
    kept: list[Loop] = []
    for loop in sorted(loops, key=_preference):
        if all(loop.end <= other.start or other.end <= loop.start for other in kept):
            kept.append(loop)
    return sorted(kept)


def _role(message: Mapping[str, Any]) -> int:
    """A message's role, its type and its tool call's fields compared as JavaScript compares
    strings (by their characters: a ``str`` subclass's own ``__eq__`` is not asked, as the
    core's screens do not ask it)."""
    kind = message.get("type")
    if is_text(kind, "activity"):
        meta = message.get("meta")
        activity = meta.get("activity") if isinstance(meta, Mapping) else None
        function = activity.get("function") if isinstance(activity, Mapping) else None
        if (isinstance(function, Mapping) and is_string(function.get("name"))
                and isinstance(activity, Mapping) and is_string(activity.get("type"))):
            if is_text(function["name"], _THINK):
                return _OTHER
            side = activity.get("type")
            if is_text(side, "request"):
                return _REQUEST
            if is_text(side, "response"):
                return _RESPONSE
        return _OTHER
    if is_text(kind, "user"):
        return _USER
    if any(is_text(kind, other) for other in ("system", "reasoning", "tool")):
        return _OTHER
    return _AGENT


def _thread_loops(messages: list[Mapping[str, Any]]) -> list[Loop]:
    keys = [message_key(m) for m in messages]
    roles = np.array([_role(m) for m in messages], np.int8)
    every = np.arange(len(messages), dtype=np.int64)
    actions = every[_is_action(roles)]
    found = []
    for kind, rows in ((BLOCK, every), (ACTIONS, actions)):
        sequence = [keys[r] for r in rows.tolist()]
        for period in range(1, MAX_PERIOD + 1):
            for begin in range(len(sequence) - period):
                if begin and sequence[begin - 1] == sequence[begin - 1 + period]:
                    continue  # not where its run of equal positions starts
                stop = begin
                while stop + period < len(sequence) and sequence[stop] == sequence[stop + period]:
                    stop += 1
                if stop - begin >= period:
                    loop = _judged(kind, begin, stop, period, rows, roles, 0)
                    if loop is not None:
                        found.append(loop)
        found += _long_block_runs(kind, sequence, rows, roles)
    replies = [reply_key(messages[r]) if roles[r] == _USER else None for r in actions.tolist()]
    for begin in range(len(replies) - 1):
        if replies[begin] is None or (begin and replies[begin - 1] == replies[begin]):
            continue
        stop = begin
        while stop + 1 < len(replies) and replies[stop] == replies[stop + 1]:
            stop += 1
        if stop > begin:
            loop = _judged(ACTIONS, begin, stop, 1, actions, roles, 0)
            if loop is not None:
                found.append(loop)
    found += _retries_reference(messages, keys, roles)
    options = text_run_options(max_unique_ratio=RUNAWAY_UNIQUE_RATIO)
    for index, message in enumerate(messages):
        text = message.get("text")
        if roles[index] == _AGENT and is_string(text) and runaway(prose(text), options):
            found.append(Loop(index, index + 1, 1, _text_copies(text), TEXT))
    return _kept_plainly(found)


def _long_block_runs(kind: int, sequence: list[Key], rows: npt.NDArray[np.int64],
                     roles: npt.NDArray[np.int8]) -> list[Loop]:
    """The loops of a sequence's blocks longer than MAX_PERIOD repeated back to back (the
    runs :func:`plain_runs` finds), judged as any run is."""
    loops = []
    for period, begin, stop in plain_runs(sequence, MAX_PERIOD + 1):
        loop = _judged(kind, begin, stop, period, rows, roles, 0)
        if loop is not None:
            loops.append(loop)
    return loops


def plain_runs(sequence: Sequence[Any], shortest: int) -> list[tuple[int, int, int]]:
    """``(period, begin, stop)`` of every run of ``sequence`` with a block of ``shortest``
    or more that repeats no shorter block (a block that does covers the same positions as
    the shorter one's run): the maximal ``[begin, stop)`` of positions equal to the one a
    block later, at least a block of them. Every period and start tried, the plain twin of
    ``vthread._core.long_runs`` (whose runs span ``[begin, stop + period)``)."""
    size = len(sequence)
    found = []
    for period in range(max(shortest, 1), size // 2 + 1):
        begin = 0
        while begin + period < size:
            stop = begin
            while stop + period < size and sequence[stop] == sequence[stop + period]:
                stop += 1
            block = sequence[begin : begin + period]
            if stop - begin >= period and not any(
                    period % shorter == 0 and block[shorter:] == block[:-shorter]
                    for shorter in range(1, period)):
                found.append((period, begin, stop))
            begin = stop + 1
    return found


def _retries_reference(messages: list[Mapping[str, Any]], keys: list[Key],
                       roles: npt.NDArray[np.int8]) -> list[Loop]:
    """Failing calls retried, by walking from every failing response to the next copy of
    it, and on while each copy retries the one before."""
    actions_before = np.cumsum(_is_action(roles)) - 1
    responses = [i for i in range(len(messages)) if roles[i] == _RESPONSE]
    found = []

    def retries(before: int, after: int, failure: tuple[Key, Key]) -> bool:
        if actions_before[after] - actions_before[before] > MAX_PERIOD:
            return False
        return not any(
            call_result(messages[k])[0] == failure[0] and call_result(messages[k]) != failure
            for k in responses if before < k < after)

    for index, start in enumerate(responses):
        if not failed(messages[start]):
            continue
        failure = call_result(messages[start])
        copies = [r for r in responses[index + 1 :] if keys[r] == keys[start]]
        earlier = [r for r in responses[:index] if keys[r] == keys[start]]
        if earlier and retries(earlier[-1], start, failure):
            continue  # not where its chain of retries starts
        chain = [start]
        for row in copies:
            if not retries(chain[-1], row, failure):
                break
            chain.append(row)
        if len(chain) >= _ONE_ACTION_COPIES:
            found.append(_retry_loop(chain, 0, messages, roles))
    return found


# ------------------------------------------------------------------------------ records


def loops_in_source(loops: list[Loop], sources: list[int]) -> list[Loop]:
    """``loops`` restated in the source file's messages, given the source message of each
    translated one: a loop spans the source messages holding its first to last message."""
    out = []
    for loop in loops:
        start, end = sources[loop.start], sources[loop.end - 1] + 1
        # The period scaled as the span is: a block's span is its copies times its period,
        # a retry chain's is not (its last copy ends at its error, its period the spacing).
        period = loop.period * (end - start) / (loop.end - loop.start)
        out.append(Loop(start, end, max(1, round(period)), loop.repetitions, loop.kind))
    return out


def counted_spans(spans: Sequence[tuple[int, int]], sources: Sequence[int]
                  ) -> list[tuple[int, int]]:
    """For each of a thread's loops (``[start, end)`` in translated messages; they do not
    overlap), the translated messages whose usage it counts once restated in source
    messages: those of the source messages it spans (:func:`translated_span`), less any
    another of the loops holds. A source message two loops share (a turn whose text ends
    one and whose tool call begins the next) counts its usage in the loop holding its
    first translated message, where the usage rides, so that a thread's loops never count
    a token twice."""
    order = sorted(range(len(spans)), key=lambda at: spans[at])
    counted = [(0, 0)] * len(spans)
    reached = 0  # the end of what the loops before this one count
    for position, at in enumerate(order):
        start, end = spans[at]
        first, last = translated_span(sources, start, end)
        following = spans[order[position + 1]][0] if position + 1 < len(order) else last
        counted[at] = (max(first, min(reached, start)), max(end, min(last, following)))
        reached = max(reached, counted[at][1])
    return counted


def recounted_loops(records: Sequence[Mapping[str, Any]], sources: Sequence[int]
                    ) -> list[tuple[int, int] | None]:
    """For each loop record in translated messages (:func:`loop_records`), the translated
    messages whose usage it counts restated in source messages (:func:`counted_spans`),
    or None where those are the messages it already counts."""
    spans = [(r["loop_start"], r["loop_start"] + r["loop_messages"]) for r in records]
    return [None if counted == span else counted
            for span, counted in zip(spans, counted_spans(spans, sources), strict=True)]


def records_in_source(records: list[dict[str, Any]], sources: list[int],
                      tokens_of: Callable[[int, int], float]) -> None:
    """Loop records (:func:`loop_records`) restated in place in the source file's messages,
    given the source message of each translated one, costliest first again. A loop's
    tokens are those of its source messages (:func:`counted_spans`): ``tokens_of(first,
    end)`` sums the usage of translated messages ``first`` to ``end - 1`` (NaN when none
    carries one)."""
    for record, counted in zip(records, recounted_loops(records, sources), strict=True):
        if counted is not None:
            total = tokens_of(*counted)
            record["loop_tokens"] = None if total != total else total  # NaN: none
        first = record["loop_start"]
        end = first + record["loop_messages"]
        record["loop_start"] = start = sources[first]
        record["loop_messages"] = sources[end - 1] + 1 - start
        # Scaled as the span is, as loops_in_source restates it (a retry chain's period is
        # its copies' spacing, not its span over its copies).
        record["period"] = max(1, round(record["period"] * record["loop_messages"]
                                        / (end - first)))
    records.sort(key=_cost, reverse=True)


def loop_records(
    messages: Sequence[Mapping[str, Any]],
    loops: list[Loop],
    encode: Callable[[Any], str],
    in_source: list[int] | None = None,
) -> list[dict[str, Any]]:
    """Each loop as a record with :meth:`vthread.ScanResult.record`'s field names, costliest
    first (known tokens, then messages); spans in source messages when ``in_source`` maps
    them."""
    spans = [(loop.start, loop.end) for loop in loops]
    shown = loops if in_source is None else loops_in_source(loops, in_source)
    counted = spans if in_source is None else counted_spans(spans, in_source)
    records = [_loop_record(messages, loop, place, encode, span)
               for loop, place, span in zip(loops, shown, counted, strict=True)]
    records.sort(key=_cost, reverse=True)
    return records


def _loop_record(messages: Sequence[Mapping[str, Any]], loop: Loop, place: Loop,
                 encode: Callable[[Any], str], counted: tuple[int, int]) -> dict[str, Any]:
    """One loop's record, made in Python (``place``: the loop where the record says it is,
    its tokens those of messages ``counted``)."""
    figures = [f for f in map(usage_tokens, messages[slice(*counted)]) if f is not None]
    shown = loop.start + loop.shown_from
    block = messages[shown : shown + loop.shown]
    return _record(loop, place, token_total(figures) if figures else None,
                   _signature(block, loop.kind), _excerpt(block, loop.kind, encode))


def _record(loop: Loop, place: Loop, tokens: float | None, signature: int,
            excerpt: str) -> dict[str, Any]:
    return {
        "verdict": LOOP_KINDS[loop.kind - 1],
        "loop_start": place.start,
        "period": place.period,
        "repetitions": loop.repetitions,
        "loop_messages": place.end - place.start,
        "loop_tokens": tokens,
        "signature": f"{signature:016x}",
        "excerpt": excerpt,
    }


def loop_records_of(threads: Sequence[Sequence[Mapping[str, Any]]], found: list[list[Loop]],
                    encode: Callable[[Any], str], lines: LineSource | None = None
                    ) -> list[list[dict[str, Any]]]:
    """:func:`loop_records` of every thread's loops (``found[i]`` in ``threads[i]``, which is read
    only when it has some), their signatures, excerpts and token totals made by the compiled
    core in one call, step for step as :func:`loop_records` makes them; a loop the core
    leaves (a runaway text, a value Python reads otherwise than by its content, a failing
    call retried, shown from its first error) is made in Python. Spans as found (not
    restated in source messages). ``lines``: the threads' native JSON lines, which the core
    makes the records from instead (a thread is then read as Python objects only for a loop
    the core leaves)."""
    rows = [row for row, loops in enumerate(found) if loops]
    flat = [(position, loop) for position, row in enumerate(rows) for loop in found[row]]
    out: list[list[dict[str, Any]]] = [[] for _ in found]
    if not flat:
        return out
    spans = ([position for position, _ in flat], [loop.start for _, loop in flat],
             [loop.end for _, loop in flat], [loop.shown for _, loop in flat],
             [loop.kind for _, loop in flat])
    made = (_core.anywhere_loop_parts([threads[row] for row in rows], *spans)
            if lines is None else
            _core.anywhere_loop_parts_of_lines([lines.line_of(row) for row in rows], *spans,
                                               lines.messages_key, lines.id_key))
    # (the core shows a loop's copy from its start: one shown from past it is Python's)
    declined = set(made["declined"].tolist()) | {
        index for index, (_, loop) in enumerate(flat) if loop.shown_from}
    signatures = made["signature"].tolist()
    tokens = made["loop_tokens"].tolist()
    excerpts = made["excerpts"]
    for index, (position, loop) in enumerate(flat):
        row = rows[position]
        if index in declined:
            record = _loop_record(threads[row], loop, loop, encode, (loop.start, loop.end))
        else:
            total = tokens[index]
            record = _record(loop, loop, None if total != total else total,  # NaN: none
                             signatures[index], excerpts[index])
        out[row].append(record)
    for records in out:
        records.sort(key=_cost, reverse=True)
    return out


def _cost(record: Mapping[str, Any]) -> tuple[float, int]:
    tokens = record["loop_tokens"]
    return (-1.0 if tokens is None else tokens, record["loop_messages"])


def _signature(block: Sequence[Mapping[str, Any]], kind: int) -> int:
    """A fingerprint of the repeating block whatever its phase (its least rotation)."""
    from vthread.scan import least_rotation

    if kind == TEXT:
        text = prose(block[0].get("text"))  # (what was judged: code beside it changes)
        parts: Any = sorted(set(text_units(text))) if is_string(text) else []
    else:
        prints = [
            # (a reply's blind to its numbers, as replies are compared: one rejection,
            # "found 2 actions" or "found 3 actions", is one loop across runs)
            xxhash.xxh3_64_intdigest(_NUMBER_BYTES.sub(b"0", message_key(m)))
            if kind == REPLIES else message_print(m)
            for m in _compared(block, kind)]
        first = least_rotation(prints) if prints else 0
        parts = prints[first:] + prints[:first]
    return xxhash.xxh3_64_intdigest(repr(parts).encode("utf-8", "surrogatepass"), seed=kind)


def _excerpt(block: Sequence[Mapping[str, Any]], kind: int, encode: Callable[[Any], str]) -> str:
    if kind == TEXT:
        text = prose(block[0].get("text"))
        unit = repeated_text_start(text) if is_string(text) else None
        # paired: a surrogate pair is one character, as the bytes' reading has it
        parts = [" ".join(paired(unit if unit is not None else str(text)).split())[:100]]
    else:
        parts = rendered(_compared(block, kind) or list(block), encode)
    return joined(parts)


def _compared(block: Sequence[Mapping[str, Any]], kind: int) -> list[Mapping[str, Any]]:
    """The messages of a loop's block its kind compares, which its signature and excerpt
    show: all of a block's; an action loop's or reply run's actions alone (tool calls,
    their results, user replies), as they were compared: the agent's words, reasoning,
    ``think`` calls and system messages between them changed a loop's signature."""
    if kind == BLOCK:
        return list(block)
    return [m for m in block if _role(m) in (_REQUEST, _RESPONSE, _USER)]
