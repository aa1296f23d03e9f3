"""The published agent runs under ``../shared/realdata`` (see its README), read as vthread reads
them: per run its file, id, source messages, native messages and the source index of each.

Used by path, never copied into the repository; :data:`REALDATA` is None when absent.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from vthread.adapters import detect_format, to_native_with_sources
from vthread.documents import run_format, run_id, run_messages, runs_of

_ROOT: Final = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"
REALDATA: Final = _ROOT if _ROOT.is_dir() else None
"""The realdata directory, or None where this checkout has none beside it."""

FILES: Final = (
    "tau-bench_gpt-4o-airline.json",
    "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz",
    "swe-agent",
)


@dataclass(frozen=True, slots=True)
class Run:
    """One published run: ``file`` relative to the realdata directory."""

    file: str
    run_id: str
    source: list[Any]
    native: list[dict[str, Any]]
    sources: list[int]


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    if path.is_dir():
        for traj in sorted(path.glob("*.traj")):
            yield f"{path.name}/{traj.name}", json.loads(traj.read_text())
    elif path.name.endswith(".jsonl.gz"):
        with gzip.open(path, "rt") as lines:
            for line in lines:
                yield path.name, json.loads(line)
    else:
        yield path.name, json.loads(path.read_text())


def runs() -> Iterator[Run]:
    """Every run of every file, in file order (nothing when the data is absent)."""
    if REALDATA is None:
        return
    for name in FILES:
        for file, document in _documents(REALDATA / name):
            for index, run in enumerate(runs_of(document)):
                messages = run_messages(run) if isinstance(run, dict) else run
                ident = run_id(run) if isinstance(run, dict) else None
                if ident is None:
                    ident = file.rsplit("/", 1)[-1] if file.endswith(".traj") else str(index)
                declared = run_format(run) if isinstance(run, dict) else None
                format_ = declared or detect_format(messages) or "native"
                native, sources = to_native_with_sources(messages, format_)
                yield Run(file, str(ident), messages, native, sources)
