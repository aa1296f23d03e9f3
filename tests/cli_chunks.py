"""One CLI chunk as a task, and the check that two ways of reading it wrote the same."""

from __future__ import annotations

import math
from typing import Any

from vthread import cli

DEFAULT_OPTIONS: dict[str, float | None] = {
    "min_repetitions": None, "min_pattern_length": None, "max_pattern_length": None,
    "min_result_repetitions": None,
}


def chunk_task(lines: list[bytes], format_: str = "native",
               options: dict[str, Any] | None = None, count_tokens: bool = True,
               threads: int = 1, mask_volatile: bool = False, anywhere: bool = False) -> Any:
    """The task the CLI makes of ``lines``, the first line numbered 1."""
    return cli._Task(label="chunk.jsonl", first_line=1, lines=lines, format=format_,
                     options=options or DEFAULT_OPTIONS, strict=False,
                     count_tokens=count_tokens, threads=threads, mask_volatile=mask_volatile,
                     anywhere=anywhere)


def assert_same_done(done_core: Any, done_python: Any) -> None:
    """The same records, byte for byte, and the same summary counts."""
    assert done_core.output == done_python.output
    core, python = done_core.stats, done_python.stats
    for name in ("lines", "errors", "verdicts", "messages", "loop_messages", "tokens_known",
                 "loops_without_tokens", "read_as_own"):
        assert getattr(core, name) == getattr(python, name), name
    assert math.isclose(core.tokens, python.tokens, rel_tol=1e-12, abs_tol=1e-9)
    assert math.isclose(core.loop_tokens, python.loop_tokens, rel_tol=1e-12, abs_tol=1e-9)


def read_wholly_by_the_core(task: Any) -> Any:
    """The task's records as the core reads them, checked to decline no line and to equal,
    records and counts, what Python's reading writes."""
    raw = cli._read_in_core(task)
    assert raw is not None and not len(raw["declined"])
    done = cli._scan_chunk_in_core(task, raw)
    assert done is not None
    assert_same_done(done, cli._scan_chunk_in_python(task))
    return done
