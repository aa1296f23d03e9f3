"""Shared fixtures of the benchmark suite: one generated workload per session.

The threads come from :mod:`benchmarks.workload` (seed 0), ``VTHREAD_BENCH_THREADS`` of them
(default :data:`DEFAULT_THREADS`, small enough that ``pytest benchmarks/`` stays within about
two minutes on a 2-core machine). The full 10,000-thread figures are the job of
``benchmarks/scan_report.py``, not of this suite.

Each benchmark asserts that the engine's answers equal the reference's on the same data, so a
benchmark fails for a wrong answer and never for a slow one. Answers are computed once per
session, outside the timed calls, by :class:`Answers`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Final

import pytest

from benchmarks.workload import generate_threads

Message = dict[str, Any]
Thread = list[Message]

DEFAULT_THREADS: Final = 300
"""Threads per session when ``VTHREAD_BENCH_THREADS`` is unset (≈20k messages)."""
SEED: Final = 0
TEXT_SAMPLES: Final = 200
"""Long texts for ``has_repeated_text_run``: at most this many, one per thread."""
_TEXT_KINDS: Final = frozenset({"user", "bot", "reasoning"})


def bench_thread_count() -> int:
    """``VTHREAD_BENCH_THREADS`` as a positive integer, else :data:`DEFAULT_THREADS`."""
    raw = os.environ.get("VTHREAD_BENCH_THREADS", "").strip()
    if not raw:
        return DEFAULT_THREADS
    count = int(raw)
    if count < 1:
        raise ValueError(f"VTHREAD_BENCH_THREADS must be a positive integer, got {raw!r}")
    return count


def estimate_tokens(message: Mapping[str, Any]) -> float:
    """A cheap estimator for messages without ``usage``: four characters per token."""
    text = message.get("text")
    return len(text) / 4 if isinstance(text, str) else 1.0


def long_texts(threads: Sequence[Thread], count: int = TEXT_SAMPLES) -> list[str]:
    """Long model-like outputs: every text of a thread joined, plus pathological inputs.

    A looping thread's texts end in its loop, so some of these are runaways and most are not;
    the last three are the cases where a naive splitter is slow (no separator in a megabyte,
    a megabyte of one repeated sentence, a megabyte of separators).
    """
    texts = [
        "\n".join(m["text"] for m in thread if m.get("type") in _TEXT_KINDS
                  and isinstance(m.get("text"), str))
        for thread in threads[:count]
    ]
    texts += ["x" * 1_000_000, "Let me check the config again. " * 32_000, ". " * 500_000]
    return texts


@pytest.fixture(scope="session")
def bench_threads() -> list[Thread]:
    """The session's workload: generated native threads, thread *i* fixed by seed and *i*."""
    return generate_threads(bench_thread_count(), seed=SEED)


@pytest.fixture(scope="session")
def bench_texts(bench_threads: list[Thread]) -> list[str]:
    """Long texts for the text-run benchmarks (see :func:`long_texts`)."""
    return long_texts(bench_threads)


class Answers:
    """Answers computed once per session and key, outside any timed call."""

    def __init__(self) -> None:
        self._cache: dict[Hashable, Any] = {}

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The cached answer for ``key``, computing it with ``compute()`` the first time."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


@pytest.fixture(scope="session")
def answers() -> Answers:
    """The session's answer cache."""
    return Answers()
