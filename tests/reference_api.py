"""The scalar reference behind the public API's signatures, for replays and property tests."""

from __future__ import annotations

from typing import Any

from vthread import _reference as ref
from vthread._options import cycle_options, text_run_options


def build_thread(messages: Any, **kwargs: Any) -> ref.ReferenceBuild:
    return ref.build_thread(messages, **kwargs)


def has_repeated_suffix(messages: Any, **options: Any) -> bool:
    return ref.has_repeated_suffix(messages, cycle_options(**options))


def has_repeated_activity_tail(messages: Any, **options: Any) -> bool:
    return ref.has_repeated_activity_tail(messages, cycle_options(**options))


def has_repeated_result_run(messages: Any, **options: Any) -> bool:
    return ref.has_repeated_result_run(messages, cycle_options(**options))


def is_thread_cyclic(messages: Any, **options: Any) -> bool:
    return ref.is_thread_cyclic(messages, cycle_options(**options))


def describe_thread_cycle(messages: Any, **options: Any) -> str | None:
    return ref.describe_thread_cycle(messages, cycle_options(**options))


def has_repeated_text_run(text: Any, **options: Any) -> bool:
    return ref.has_repeated_text_run(text, text_run_options(**options))


def Guard(**options: Any) -> ref.ReferenceGuard:  # noqa: N802 - mirrors the class name
    return ref.guard(**options)
