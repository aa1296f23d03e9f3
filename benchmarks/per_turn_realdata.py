"""What a harness checking "is it stuck?" on every turn would have been told on the published
runs (``../shared/realdata``, :mod:`benchmarks.realdata`): each run replayed turn by turn.

A turn's check is made where the harness would make it, just before it asks the model
again: on the run's messages before each assistant message (the first aside), each prefix
read as the whole run is (its declared or detected format; the translation is prefix-stable,
so a prefix of the run's native messages is the prefix's own). Two checks are replayed:

- ``describe_thread_cycle(prefix)``, production's four rules;
- ``scan([prefix], anywhere=True)``, every loop of the prefix wherever it lies
  (docs/detection.md), counted where one reaches the prefix's end (a loop still going on).

Per dataset: the runs and checks, the runs flagged at some turn (by the first verdict's kind),
the flagged checks by kind, the longest streak of consecutive flagged checks per run, and the
whole runs' verdicts. Writes ``benchmarks/results/per-turn-realdata.json``; no timing.

    python -m benchmarks.per_turn_realdata
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Final

import vthread
from benchmarks.realdata import REALDATA, Run, runs

RESULTS: Final = Path(__file__).resolve().parent / "results" / "per-turn-realdata.json"


def _turn_ends(run: Run) -> list[int]:
    """Native message counts of the run's prefixes before each assistant message but the
    first."""
    ends = []
    for index, message in enumerate(run.source):
        if index and isinstance(message, dict) and message.get("role") == "assistant":
            ends.append(sum(1 for source in run.sources if source < index))
    return ends


def replay(selected: list[Run]) -> dict[str, Any]:
    """The figures of one dataset's runs replayed turn by turn."""
    first_kinds: Counter[str] = Counter()
    checks_by_kind: Counter[str] = Counter()
    streaks: Counter[int] = Counter()
    whole: Counter[str] = Counter()
    anywhere_runs = anywhere_at_end = checks = 0
    for run in selected:
        prefixes = [run.native[:end] for end in _turn_ends(run)]
        checks += len(prefixes)
        verdicts = [vthread.describe_thread_cycle(prefix) for prefix in prefixes]
        flagged = [verdict for verdict in verdicts if verdict is not None]
        if flagged:
            first_kinds[flagged[0]] += 1
        checks_by_kind.update(flagged)
        longest = streak = 0
        for verdict in verdicts:
            streak = streak + 1 if verdict is not None else 0
            longest = max(longest, streak)
        streaks[longest] += 1
        whole[str(vthread.describe_thread_cycle(run.native))] += 1
        loops = vthread.scan(prefixes, anywhere=True).loops or [] if prefixes else []
        anywhere_runs += any(loops)
        anywhere_at_end += any(loop["loop_start"] + loop["loop_messages"] >= len(prefix)
                               for prefix, found in zip(prefixes, loops, strict=True)
                               for loop in found)
    return {
        "runs": len(selected),
        "checks": checks,
        "runs_flagged_at_some_turn": sum(first_kinds.values()),
        "first_verdict_kinds": dict(first_kinds),
        "flagged_checks_by_kind": dict(checks_by_kind),
        "runs_by_longest_flagged_streak": {str(k): v for k, v in sorted(streaks.items())},
        "whole_run_verdicts": dict(whole),
        "anywhere_runs_with_a_loop_at_some_turn": anywhere_runs,
        "anywhere_runs_with_a_loop_reaching_the_turn": anywhere_at_end,
    }


def main() -> None:
    if REALDATA is None:
        raise SystemExit("no ../shared/realdata beside this checkout")
    every = list(runs())
    datasets = sorted({run.file.split("/")[0] for run in every})
    results = {name: replay([run for run in every if run.file.split("/")[0] == name])
               for name in datasets}
    RESULTS.write_text(json.dumps({"vthread": vthread.__version__, "datasets": results},
                                  indent=2) + "\n")
    for name, figures in results.items():
        print(name, json.dumps(figures))


if __name__ == "__main__":
    main()
