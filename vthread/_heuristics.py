"""The four cycle heuristics as array comparisons over the core's columns.

Data flows one way: threads (Python objects) go once through the compiled core
(:func:`vthread._core.scan_columns`), which returns flat NumPy columns: the repeated-suffix
period of every thread (a linear Z-function pass over screened, then exact, message keys), the
trailing tool calls with their payloads as exact ids, the newest settled tool results, and
where the texts worth checking are. The decisions below are NumPy operations across every
thread of the batch at once; the messages themselves are read again only for the few texts
the text-run check needs.

Ids are exact (interned per thread by canonical bytes in the core), so every comparison here
is a comparison of values, never of hashes.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, overload

import numpy as np
import numpy.typing as npt

from vthread import _core
from vthread._options import DEFAULT_CYCLE, CycleOptions, text_run_options
from vthread.replay import has_repeated_text_runs

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

Verdict = Literal["repeated_suffix", "repeated_activity_tail", "repeated_result_run",
                  "repeated_message_text_run"]
"""A verdict's name: how a thread is stuck (``describe_thread_cycle``'s answer)."""

HEURISTIC_NAMES: Final[tuple[Verdict, ...]] = (
    "repeated_suffix",
    "repeated_activity_tail",
    "repeated_result_run",
    "repeated_message_text_run",
)
"""Verdict names in the order the heuristics are tried; codes index this from 1."""

SUFFIX: Final = 1
ACTIVITY_TAIL: Final = 2
RESULT_RUN: Final = 3
TEXT_RUN: Final = 4

_REQUEST: Final = 1  # tail_kind codes, as src/columns.rs writes them
_RESPONSE: Final = 2
_TAIL_MIN_WITH_PAYLOAD: Final = 4
_PROGRESS_MIN_ANSWERS: Final = 3

# The core counts in machine words; larger option values change nothing (no thread is that
# long), so they are clamped on the way in.
_LARGEST: Final = sys.maxsize // 4


@dataclass(frozen=True, slots=True)
class Columns:
    """What the core read of a batch (see src/columns.rs for each column's meaning)."""

    lengths: IntArray
    suffix_period: IntArray
    suffix_copies: IntArray
    tail_length: IntArray
    tail_offsets: IntArray
    tail_kind: npt.NDArray[np.int8]
    tail_kind_id: IntArray
    tail_name: IntArray
    tail_arguments: IntArray
    tail_result: IntArray
    result_run: IntArray
    result_start: IntArray
    result_period: IntArray
    result_copies: IntArray
    text_thread: IntArray
    text_index: IntArray
    texts: list[Any]

    def __len__(self) -> int:
        return len(self.lengths)


def core_options(options: CycleOptions) -> _core.CoreOptions:
    """The cycle options as the core takes them, clamped to what a machine word holds."""
    if options is DEFAULT_CYCLE:
        return _DEFAULT_CORE_OPTIONS  # the every-turn call: a tenth of its Python time
    return _clamped(options)


def _clamped(options: CycleOptions) -> _core.CoreOptions:
    cap = options.max_pattern_length
    return (
        min(options.min_repetitions, _LARGEST),
        min(options.min_pattern_length, _LARGEST),
        None if cap is None else min(cap, _LARGEST),
        min(options.min_result_repetitions, _LARGEST),
    )


_DEFAULT_CORE_OPTIONS: Final = _clamped(DEFAULT_CYCLE)


def read_columns(threads: list[Any], options: CycleOptions, one: bool = False) -> Columns:
    """The core's columns of a batch whose threads are known to be sequences (each message is
    checked by the core: a ``TypeError`` names the thread and message index; with ``one``, a
    single call's thread, the message index alone)."""
    return columns_of(_core.scan_columns(threads, core_options(options), one=one))


def columns_of(raw: dict[str, Any]) -> Columns:
    """:class:`Columns` from the core's dict (extra entries, such as a chunk's ids, ignored)."""
    return Columns(**{name: raw[name] for name in Columns.__slots__})


@overload
def written_lines(raw: dict[str, Any], rows: Sequence[int],
                  views: Literal[False] = False) -> list[bytes] | None: ...
@overload
def written_lines(raw: dict[str, Any], rows: Sequence[int],
                  views: Literal[True]) -> list[memoryview] | None: ...
def written_lines(raw: dict[str, Any], rows: Sequence[int], views: bool = False
                  ) -> list[bytes] | list[memoryview] | None:
    """The native lines the core wrote for ``rows`` of its reading ``raw`` (a translated or
    masked line is read as such a line), or None when it read every line as it is. With
    ``views``, views of the one ``bytes`` the core wrote them in, not copies."""
    native: bytes | None = raw.get("native")
    if native is None:
        return None
    # (only the rows' own ends are made Python numbers: a chunk's looping rows are few)
    picked = np.asarray(rows, np.int64)
    ends = raw["native_ends"]
    stops = ends[picked].tolist()
    begins = np.where(picked > 0, ends[np.maximum(picked - 1, 0)], 0).tolist()
    if views:
        whole = memoryview(native)
        return [whole[begin:stop] for begin, stop in zip(begins, stops, strict=True)]
    return [native[begin:stop] for begin, stop in zip(begins, stops, strict=True)]


def _distinct_per_group(size: int, group: IntArray, *columns: IntArray) -> IntArray:
    """How many distinct rows of ``columns`` each group holds (groups are 0..size-1)."""
    if group.size == 0:
        return np.zeros(size, np.int64)
    order = np.lexsort((*reversed(columns), group))  # the last key sorts first: group
    keys = [group[order], *(column[order] for column in columns)]
    fresh = np.ones(order.size, np.bool_)
    changed = np.zeros(order.size - 1, np.bool_)
    for key in keys:
        changed |= key[1:] != key[:-1]
    fresh[1:] = changed
    return np.bincount(keys[0][fresh], minlength=size).astype(np.int64)


@dataclass(frozen=True, slots=True)
class TailVerdict:
    """Per thread: whether its trailing tool calls collapsed, and how many distinct
    (kind, name, arguments, result) signatures the tail holds (the loop's period)."""

    collapsed: BoolArray
    signatures: IntArray


def activity_tail(columns: Columns) -> TailVerdict:
    """The repeated_activity_tail heuristic for every thread at once."""
    size = len(columns)
    rows = np.diff(columns.tail_offsets)
    owner = np.repeat(np.arange(size, dtype=np.int64), rows)
    kind, name = columns.tail_kind, columns.tail_name
    arguments, result = columns.tail_arguments, columns.tail_result
    requests = (kind == _REQUEST) & (arguments >= 0)
    responses = (kind == _RESPONSE) & (result >= 0)
    request_count = np.bincount(owner[requests], minlength=size)
    response_count = np.bincount(owner[responses], minlength=size)
    signatures = _distinct_per_group(size, owner, columns.tail_kind_id, name, arguments, result)
    collapsed = (
        (rows > 0)
        & (request_count >= _TAIL_MIN_WITH_PAYLOAD)
        & (response_count >= _TAIL_MIN_WITH_PAYLOAD)
        & (signatures * 2 <= rows)
        & (_distinct_per_group(size, owner, name) < rows)
        & (_distinct_per_group(size, owner[requests], arguments[requests]) < request_count)
        & (_distinct_per_group(size, owner[responses], result[responses]) < response_count)
    )
    collapsed &= ~_progressing(size, owner, kind, name, arguments, result)
    return TailVerdict(collapsed, signatures)


def _progressing(
    size: int,
    owner: IntArray,
    kind: npt.NDArray[np.int8],
    name: IntArray,
    arguments: IntArray,
    result: IntArray,
) -> BoolArray:
    """Threads with a request (name, arguments) answered by the next response of the same
    name at least three times, every answer different: polling that makes progress."""
    progressing = np.zeros(size, np.bool_)
    if owner.size < 2:
        return progressing
    pairs = np.flatnonzero(
        (owner[:-1] == owner[1:])
        & (kind[:-1] == _REQUEST)
        & (kind[1:] == _RESPONSE)
        & (name[:-1] == name[1:])
    )
    if pairs.size == 0:
        return progressing
    # Group the answers by (thread, name, arguments); number the groups densely, in the
    # order of the keys (as np.unique(axis=0) did). A lexsort of three int64 columns: unique
    # sorts the rows as opaque bytes, 30-66x slower on long tails, most of activity_tail.
    keys = (owner[pairs], name[pairs], arguments[pairs])
    order = np.lexsort(keys[::-1])  # the last key sorts first: owner
    fresh = np.ones(pairs.size, np.bool_)
    changed = np.zeros(pairs.size - 1, np.bool_)
    for key in keys:
        ordered = key[order]
        changed |= ordered[1:] != ordered[:-1]
    fresh[1:] = changed
    group = np.empty(pairs.size, np.int64)
    group[order] = np.cumsum(fresh) - 1
    groups = int(group[order[-1]]) + 1
    answers = np.bincount(group, minlength=groups)
    distinct = _distinct_per_group(groups, group, result[pairs + 1])
    first_owner = np.zeros(groups, np.int64)
    first_owner[group] = owner[pairs]
    hit = (answers >= _PROGRESS_MIN_ANSWERS) & (distinct == answers)
    progressing[first_owner[hit]] = True
    return progressing


def result_run(columns: Columns, needed: int) -> BoolArray:
    """The repeated_result_run heuristic for every thread: the newest ``needed`` settled results
    agree (the core measured the run of identical (name, arguments, result) ids)."""
    return columns.result_run >= needed


def text_runs(columns: Columns, rows: IntArray) -> tuple[IntArray, IntArray]:
    """Per thread of ``rows``: the first of its last five spoken messages with a runaway text
    (-1: none) and how many of them have one."""
    size = len(columns)
    first = np.full(size, -1, np.int64)
    count = np.zeros(size, np.int64)
    if not columns.texts:
        return first, count
    wanted = np.zeros(size, np.bool_)
    wanted[rows] = True
    options = text_run_options()
    # Every text goes to the core as it is, unwanted ones too: it reads each in place in
    # O(4000), on every core, for less than picking the wanted ones out in Python would cost.
    fired = has_repeated_text_runs(
        columns.texts,
        min_units=options.min_units,
        window=options.window,
        max_unique_ratio=options.max_unique_ratio,
    )
    hits = np.flatnonzero(fired & wanted[columns.text_thread])
    threads = columns.text_thread[hits]
    count += np.bincount(threads, minlength=size)
    # A thread's texts are listed in message order, so its first hit is its earliest.
    hit_threads, earliest = np.unique(threads, return_index=True)
    first[hit_threads] = columns.text_index[hits][earliest]
    return first, count
