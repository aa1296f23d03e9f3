"""Bulk cycle detection: thousands of threads per call, with loop attribution.

:func:`scan` is the bulk twin of :func:`vthread.describe_thread_cycle`. Besides the verdict it
reports, per thread, where the loop starts, its period and repetitions, and the messages and
tokens spent inside it, as NumPy arrays ready for aggregation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

HEURISTIC_NAMES: Final[tuple[str, ...]] = (
    "repeated_suffix",
    "repeated_activity_tail",
    "repeated_result_run",
    "repeated_message_text_run",
)
"""Verdict names in the order the heuristics are tried; ``codes`` index this from 1."""

__all__ = ["HEURISTIC_NAMES", "ScanResult", "scan"]


@dataclass(frozen=True, slots=True)
class ScanResult:
    """Verdicts and loop attribution for a batch of threads, one row per thread.

    ``codes[i]`` is 0 for a progressing thread, else ``1 + HEURISTIC_NAMES.index(name)``.
    For a looping thread, ``loop_start[i]`` is the index of the first message of the loop,
    ``period[i]`` the messages per repetition, ``repetitions[i]`` how many repetitions were
    seen, ``loop_messages[i]`` the messages from ``loop_start`` to the end of the thread and
    ``loop_tokens[i]`` the sum of their ``usage.tokens`` (NaN when none carries a usage).
    Progressing threads have -1, 0, 0, 0 and NaN.
    """

    names: list[str | None]
    codes: npt.NDArray[np.int8]
    loop_start: npt.NDArray[np.int64]
    period: npt.NDArray[np.int64]
    repetitions: npt.NDArray[np.int64]
    loop_messages: npt.NDArray[np.int64]
    loop_tokens: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.names)

    def record(self, index: int) -> dict[str, Any]:
        """Row ``index`` as a JSON-ready dict (``loop_tokens`` None where unknown)."""
        tokens = float(self.loop_tokens[index])
        return {
            "verdict": self.names[index],
            "loop_start": int(self.loop_start[index]),
            "period": int(self.period[index]),
            "repetitions": int(self.repetitions[index]),
            "loop_messages": int(self.loop_messages[index]),
            "loop_tokens": None if tokens != tokens else tokens,
        }

    @classmethod
    def concatenate(cls, parts: Sequence[ScanResult]) -> ScanResult:
        """One result from several, rows in order (how chunks and jobs are stitched)."""
        if not parts:
            return _empty()
        return cls(
            names=[name for part in parts for name in part.names],
            codes=np.concatenate([p.codes for p in parts]),
            loop_start=np.concatenate([p.loop_start for p in parts]),
            period=np.concatenate([p.period for p in parts]),
            repetitions=np.concatenate([p.repetitions for p in parts]),
            loop_messages=np.concatenate([p.loop_messages for p in parts]),
            loop_tokens=np.concatenate([p.loop_tokens for p in parts]),
        )


def _empty() -> ScanResult:
    return ScanResult(
        names=[],
        codes=np.zeros(0, np.int8),
        loop_start=np.zeros(0, np.int64),
        period=np.zeros(0, np.int64),
        repetitions=np.zeros(0, np.int64),
        loop_messages=np.zeros(0, np.int64),
        loop_tokens=np.zeros(0, np.float64),
    )


def scan(
    threads: Sequence[Sequence[Any]],
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    jobs: int = 1,
) -> ScanResult:
    """Verdict and loop attribution for every thread.

    ``scan(threads).names == [describe_thread_cycle(t) for t in threads]``.
    """
    from vthread import _reference
    from vthread._options import cycle_options

    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    rows = [_reference.attribute(thread, options) for thread in threads]
    return ScanResult(
        names=[HEURISTIC_NAMES[r.code - 1] if r.code else None for r in rows],
        codes=np.array([r.code for r in rows], np.int8),
        loop_start=np.array([r.loop_start for r in rows], np.int64),
        period=np.array([r.period for r in rows], np.int64),
        repetitions=np.array([r.repetitions for r in rows], np.int64),
        loop_messages=np.array([r.loop_messages for r in rows], np.int64),
        loop_tokens=np.array([r.loop_tokens for r in rows], np.float64),
    )
