"""Has the agent stopped making progress? The four heuristics, one thread at a time.

Each function is the single-thread view of the batch engine behind :func:`vthread.scan`,
so a harness that checks every turn and one that checks a million recorded threads get the
same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vthread import _messages as ref  # the shared message rules (alias kept for the body)
from vthread._engine import Batch
from vthread._options import cycle_options

__all__ = [
    "describe_thread_cycle",
    "has_repeated_activity_tail",
    "has_repeated_result_run",
    "has_repeated_suffix",
    "is_thread_cyclic",
]



def _batch(messages: object) -> Batch:
    if type(messages) is list and set(map(type, messages)) <= {dict}:
        return Batch([messages], checked=True)  # the common case, checked at C speed
    ref.check_messages(messages)  # errors name the message index, not a thread
    return Batch([messages])


def has_repeated_suffix(
    messages: Sequence[Any],
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
) -> bool:
    """Whether the thread ends in ``min_repetitions`` back-to-back copies of a block.

    Messages compare by (type, text, meta); blocks of ``min_pattern_length`` (default 2) up
    to ``max_pattern_length`` messages (default ``len // min_repetitions``) are tried,
    shortest first. O(n) screens plus the confirmation of candidate blocks; O(n²) at worst.

    >>> ask = [{"type": "user", "text": "status?"}, {"type": "bot", "text": "running"}]
    >>> has_repeated_suffix(ask * 2)
    True
    """
    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    return _batch(messages).suffix_of(0, options) > 0


def has_repeated_activity_tail(
    messages: Sequence[Any],
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
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
    cycle_options(min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions)
    return _batch(messages).activity_tail_of(0)


def has_repeated_result_run(
    messages: Sequence[Any],
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
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
    return _batch(messages).result_run_of(0, options)


def describe_thread_cycle(
    messages: Sequence[Any],
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
) -> str | None:
    """The name of the first heuristic that fires, or None while the thread progresses.

    Tried in order: "repeated_suffix", "repeated_activity_tail", "repeated_result_run",
    "repeated_message_text_run" (a runaway text in one of the last five non-reasoning,
    non-activity messages).

    >>> describe_thread_cycle([{"type": "bot", "text": "Checking now. " * 10}])
    'repeated_message_text_run'
    """
    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    batch = _batch(messages)
    if batch.suffix_of(0, options):
        return "repeated_suffix"
    if batch.activity_tail_of(0):
        return "repeated_activity_tail"
    if batch.result_run_of(0, options):
        return "repeated_result_run"
    if batch.text_run_of(0):
        return "repeated_message_text_run"
    return None


def is_thread_cyclic(
    messages: Sequence[Any],
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
) -> bool:
    """Whether any heuristic considers the thread stuck."""
    return (
        describe_thread_cycle(
            messages,
            min_repetitions=min_repetitions,
            min_pattern_length=min_pattern_length,
            max_pattern_length=max_pattern_length,
            min_result_repetitions=min_result_repetitions,
        )
        is not None
    )
