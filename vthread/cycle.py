"""Has the agent stopped making progress? The four heuristics, one thread at a time.

Each function is the single-thread view of the batch engine behind :func:`vthread.scan`,
so a harness that checks every turn and one that checks a million recorded threads get the
same answers. Each takes ``format=`` as :func:`vthread.scan` does: ``"native"`` (the
default), a format of :data:`vthread.adapters.FORMATS` to translate the messages (or a run
object) from, or ``"auto"``; chat messages passed as native ones are warned about.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

import numpy as np

from vthread import _core
from vthread._heuristics import (
    HEURISTIC_NAMES,
    Columns,
    Verdict,
    activity_tail,
    core_options,
    read_columns,
    result_run,
    text_runs,
)
from vthread._messages import MessagesOrRun, as_held_thread, as_thread
from vthread._options import CycleOptions, cycle_options, text_run_options
from vthread.documents import (
    first_chat_like,
    holding_no_messages,
    holds_run_messages,
    native_messages,
    warn_if_chat,
)
from vthread.volatile import volatile_masked

__all__ = [
    "Verdict",
    "describe_thread_cycle",
    "has_repeated_activity_tail",
    "has_repeated_result_run",
    "has_repeated_suffix",
    "is_thread_cyclic",
]



def _columns(messages: object, options: CycleOptions) -> Columns:
    # (a single thread's errors name the message index, not a thread)
    return read_columns([as_held_thread(messages)], options, one=True)


def _native(messages: MessagesOrRun, format: str, stacklevel: int) -> Any:
    """``messages`` as native messages: translated from ``format`` (or a run object read, as
    :func:`vthread.scan` reads one), or, as given when native, warned about when they look
    like chat messages (every such thread would loop). ``stacklevel``: where the warning
    points (the caller of the public function)."""
    if format != "native":
        return native_messages(as_held_thread(messages), format)[0]
    if isinstance(messages, Mapping):
        if not holds_run_messages(messages):
            raise TypeError(holding_no_messages(messages))  # (the core said only "got dict")
        messages = native_messages(messages, format)[0]  # a run object, read as scan reads one
    else:
        messages = cast(MessagesOrRun, as_held_thread(messages))  # before it is read
    # Any sequence, a list's or tuple's subclass included, as scan's warning reads threads.
    warn_if_chat([messages], stacklevel=stacklevel, one=True)
    return messages


def _text_run(columns: Columns) -> bool:
    first, _ = text_runs(columns, np.zeros(1, np.int64))
    return bool(first[0] >= 0)


def has_repeated_suffix(
    messages: MessagesOrRun,
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    format: str = "native",
) -> bool:
    """Whether the thread ends in ``min_repetitions`` back-to-back copies of a block.

    Messages compare by (type, text, meta); blocks of ``min_pattern_length`` (default 2) up
    to ``max_pattern_length`` messages (default ``len // min_repetitions``) are tried,
    shortest first. O(n) whatever the thread's shape: one pass over cheap screens, then the
    candidate blocks confirmed on the messages' exact encodings within a linear budget.

    >>> ask = [{"type": "user", "text": "status?"}, {"type": "bot", "text": "running"}]
    >>> has_repeated_suffix(ask * 2)
    True
    """
    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    messages = volatile_masked(_native(messages, format, stacklevel=3), mask_volatile)
    return bool(_columns(messages, options).suffix_period[0] > 0)


def has_repeated_activity_tail(
    messages: MessagesOrRun,
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    format: str = "native",
) -> bool:
    """Whether the thread ends in tool calls re-treading a small set of signatures.

    Reads the trailing run of well-formed activities (at least 8, with 4 requests carrying
    arguments and 4 responses carrying results); polling that keeps getting new answers is
    spared. The options are accepted for symmetry and, as in production, not read. O(tail).

    >>> call = {"type": "activity", "text": "", "meta": {"activity": {"type": "request",
    ...         "function": {"name": "ls", "arguments": {"path": "."}}}}}
    >>> done = {"type": "activity", "text": "", "meta": {"activity": {"type": "response",
    ...         "function": {"name": "ls", "arguments": {"path": "."}, "result": "a b"}}}}
    >>> has_repeated_activity_tail([call, done] * 4)
    True
    """
    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    messages = volatile_masked(_native(messages, format, stacklevel=3), mask_volatile)
    return bool(activity_tail(_columns(messages, options)).collapsed[0])


def has_repeated_result_run(
    messages: MessagesOrRun,
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    format: str = "native",
) -> bool:
    """Whether the newest ``min_result_repetitions`` (default 3) tool results are identical.

    Walks only the tool responses, so reasoning between calls does not hide the loop;
    responses whose name starts with "_" and responses without a result are skipped.
    Compares (name, arguments, result). O(messages walked).

    >>> done = {"type": "activity", "text": "", "meta": {"activity": {"type": "response",
    ...         "function": {"name": "ls", "arguments": {}, "result": ""}}}}
    >>> think = [{"type": "reasoning", "text": f"try {i}"} for i in range(3)]
    >>> has_repeated_result_run([think[0], done, think[1], done, think[2], done])
    True
    """
    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    messages = volatile_masked(_native(messages, format, stacklevel=3), mask_volatile)
    return bool(result_run(_columns(messages, options), options.min_result_repetitions)[0])


def describe_thread_cycle(
    messages: MessagesOrRun,
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    format: str = "native",
) -> Verdict | None:
    """The name of the first heuristic that fires, or None while the thread progresses.

    Tried in order: "repeated_suffix", "repeated_activity_tail", "repeated_result_run",
    "repeated_message_text_run" (a runaway text in one of the last five non-reasoning,
    non-activity messages). ``format`` is the messages' format, as for :func:`vthread.scan`:
    ``"native"`` (the default), a format of :data:`vthread.adapters.FORMATS` to translate
    them from, or ``"auto"``; chat messages passed as native ones are warned about.

    >>> describe_thread_cycle([{"type": "bot", "text": "Checking now. " * 10}])
    'repeated_message_text_run'
    """
    return _described(messages, cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    ), mask_volatile, format, stacklevel=3)


_TEXT_RUN: Final = text_run_options()  # the cycle functions take no text-run keywords
_TEXT_RUN_ARGUMENTS: Final = (_TEXT_RUN.min_units, _TEXT_RUN.window, _TEXT_RUN.max_unique_ratio)


def _described(messages: MessagesOrRun, options: CycleOptions, mask_volatile: bool,
               format: str, stacklevel: int) -> Verdict | None:
    """:func:`describe_thread_cycle` with its options resolved; ``stacklevel``: where a
    warning points (the caller of the public function)."""
    if type(messages) is list and format == "native" and mask_volatile is False:
        # The every-turn call, a list of native messages: _native's and volatile_masked's
        # checks in their cheapest form (they were a quarter of a 60-message call's time).
        if messages:
            if type(messages[0]) is not dict:
                messages = list(messages)  # as it is at the call (as_held_thread says why)
            if first_chat_like(messages):
                warn_if_chat([messages], stacklevel=stacklevel, one=True)
        thread: object = messages
    else:
        thread = as_thread(
            volatile_masked(_native(messages, format, stacklevel + 1), mask_volatile))
    code = _core.describe_thread(thread, core_options(options), *_TEXT_RUN_ARGUMENTS)
    return HEURISTIC_NAMES[code - 1] if code else None


def is_thread_cyclic(
    messages: MessagesOrRun,
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    format: str = "native",
) -> bool:
    """Whether any heuristic considers the thread stuck.

    Every cycle function takes ``mask_volatile=True`` to compare messages with their
    timestamps, UUIDs, long hex ids and durations masked (:mod:`vthread.volatile`), so a
    poll answered with a new clock reading each time is seen to loop. Off by default: the
    answers are then exactly the production ones.
    """
    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    return _described(messages, options, mask_volatile, format, stacklevel=3) is not None
