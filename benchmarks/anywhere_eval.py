"""Precision and recall of loops anywhere on the labelled published runs.

``python -m benchmarks.anywhere_eval`` reads ``benchmarks/labels/anywhere_dev.jsonl`` (one
run a line: file, run id, labelled loops as ``[start, end)`` source message spans, reason),
runs four detectors on the same runs (``scan(anywhere=True)``, the default production scan,
and the two peers of :mod:`benchmarks.peers`) and prints, per detector, loop-level
precision (reported loops overlapping a labelled one) and recall (labelled loops some
reported loop overlaps), over the whole set and per split (``dev``/``heldout``, from the
label line's ``split``). The runs are read by path from the published data (skipped with a
message when absent).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks import peers
from benchmarks.realdata import REALDATA, Run, runs
from vthread.scan import scan, tokens_between

LABELS: Final = Path(__file__).resolve().parent / "labels" / "anywhere_dev.jsonl"
Span = tuple[int, int]


def in_source(spans: Sequence[Span], sources: Sequence[int]) -> list[Span]:
    """Native ``[start, end)`` spans restated in source messages."""
    return [(sources[start], sources[end - 1] + 1) for start, end in spans]


def anywhere_spans(run: Run, mask_volatile: bool = False) -> list[Span]:
    """``scan(anywhere=True)``'s loops, in source messages (as the CLI reports them)."""
    from vthread.documents import in_source_messages

    result = scan([run.native], anywhere=True, mask_volatile=mask_volatile)
    in_source_messages(result, 0, run.sources, tokens_between(run.native))
    assert result.loops is not None
    return [(r["loop_start"], r["loop_start"] + r["loop_messages"]) for r in result.loops[0]]


def default_spans(run: Run) -> list[Span]:
    """The production scan's one loop (it runs to the end of the thread), in source messages."""
    from vthread.documents import in_source_messages

    result = scan([run.native])
    if not result.codes[0]:
        return []
    in_source_messages(result, 0, run.sources, tokens_between(run.native))
    start = int(result.loop_start[0])
    return [(start, start + int(result.loop_messages[0]))]


DETECTORS: Final[dict[str, Callable[[Run], list[Span]]]] = {
    "anywhere": anywhere_spans,
    "anywhere + mask_volatile": lambda run: anywhere_spans(run, True),
    "default scan": default_spans,
    "OpenHands": lambda run: in_source(peers.openhands(run.native), run.sources),
    "gemini-cli": lambda run: in_source(peers.gemini(run.native), run.sources),
}


def _overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score(pairs: Sequence[tuple[Sequence[Span], Sequence[Span]]]) -> dict[str, Any]:
    """Loop-level counts, precision and recall over (labelled, reported) span lists."""
    reported = hit = labelled = found = 0
    for truth, spans in pairs:
        reported += len(spans)
        hit += sum(any(_overlaps(s, t) for t in truth) for s in spans)
        labelled += len(truth)
        found += sum(any(_overlaps(t, s) for s in spans) for t in truth)
    return {
        "reported": reported, "true_reported": hit, "labelled": labelled, "found": found,
        "precision": hit / reported if reported else float("nan"),
        "recall": found / labelled if labelled else float("nan"),
    }


def read_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def evaluate(labels: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per split ("all", "dev", "heldout") and detector: :func:`score`."""
    wanted = {(label["file"], label["run_id"]): label for label in labels}
    pairs: dict[str, dict[str, list[tuple[list[Span], list[Span]]]]] = {}
    for run in runs():
        label = wanted.get((run.file, run.run_id))
        if label is None:
            continue
        truth = [tuple(span) for span in label["loops"]]
        for name, detect in DETECTORS.items():
            found = detect(run)
            for split in ("all", label.get("split", "dev")):
                pairs.setdefault(split, {}).setdefault(name, []).append(
                    (truth, found))  # type: ignore[arg-type]
    return {split: {name: score(p) for name, p in by.items()} for split, by in pairs.items()}


def main() -> int:
    if REALDATA is None:
        print("the published runs (../shared/realdata) are absent: nothing to evaluate")
        return 0
    table = evaluate(read_labels())
    print(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
