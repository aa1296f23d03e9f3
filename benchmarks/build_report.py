"""build_thread on 10,000 threads against the scalar reference (results/build.json).

Workload: :func:`benchmarks.workload.generate_threads` (seed 0, 10,000 threads, ~650k
messages). Two paths, each against :func:`vthread._reference.build_thread` (the scalar twin,
the production algorithm line for line) in the same run:

* ``own usage``: every message carries ``usage.tokens`` (the workload's messages without
  one get a figure first), so no estimator is called: the core reads the figures in one
  call per thread and only the kept messages are copied;
* ``estimator``: the workload as generated, about 15% of messages without usage, costed by a
  Python callback in their turn, as production does.

Each at two budgets: 200 tokens (a small window: about a sixth of each thread kept) and
2,000 (most threads kept whole: copying the kept messages dominates both sides). Figures are
the minimum of ``--repeats`` runs (default 5), each over the whole workload; answers are
checked equal before timing. Each row also times two floors any answer pays: copying the kept
messages with their usage, and reading every message's own figure (production costs every
message, kept or not; here the core's one pass, for the estimator path a lower bound since
the estimator's calls are left out), and the speed-ups they allow. Run::

    python -m benchmarks.build_report [--threads N] [--repeats R]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import vthread
from benchmarks.guard_report import machine
from benchmarks.workload import generate_threads
from vthread import _core, _reference

RESULTS: Final = Path(__file__).parent / "results" / "build.json"
BUDGETS: Final = (200, 2_000)


def estimate(message: dict[str, Any]) -> float:
    """A cheap estimator, as harnesses pass one: four characters a token."""
    text = message.get("text")
    return len(text) / 4 if isinstance(text, str) else 1.0


def _best(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(count: int, repeats: int) -> dict[str, Any]:
    """The timings and ratios of both paths at both budgets."""
    generated = generate_threads(count)
    priced = [[m if isinstance(m.get("usage"), dict) else
               {**m, "usage": {"tokens": estimate(m)}} for m in thread] for thread in generated]
    rows = []
    for path, threads in (("own usage", priced), ("estimator", generated)):
        for budget in BUDGETS:
            # Each result is dropped once built, as a harness fitting one thread a turn
            # does: kept alive, 10,000 results are a million dicts that the garbage
            # collector walks again and again, and that cost would swamp both sides.
            def engine(threads: list[Any] = threads, budget: int = budget) -> None:
                for thread in threads:
                    vthread.build_thread(thread, max_tokens=budget, estimate=estimate)

            def reference(threads: list[Any] = threads, budget: int = budget) -> None:
                for thread in threads:
                    _reference.build_thread(thread, max_tokens=budget, estimate=estimate)

            fast = [vthread.build_thread(t, max_tokens=budget, estimate=estimate)
                    for t in threads]
            slow = [_reference.build_thread(t, max_tokens=budget, estimate=estimate)
                    for t in threads]
            if [(r.messages, r.tokens) for r in fast] != [(r.messages, r.tokens)
                                                         for r in slow]:
                raise AssertionError(f"{path}, budget {budget}: the answers differ")
            kept = sum(len(r.messages) for r in fast)
            counts = [len(r.messages) for r in fast]
            del fast, slow

            def copies(threads: list[Any] = threads, counts: list[int] = counts) -> None:
                # What any answer pays that returns copies carrying their usage: the kept
                # messages copied, nothing else (no costing, no walk).
                for thread, count in zip(threads, counts, strict=True):
                    for message in thread[len(thread) - count:]:
                        copy = message.copy()
                        copy["usage"] = {"tokens": 1.0}

            def costing(threads: list[Any] = threads) -> None:
                # What any answer pays before choosing: every message's own figure read
                # (production costs every message, kept or not), in one core call a thread.
                for thread in threads:
                    _core.own_token_costs(thread)

            engine_s, reference_s = _best(engine, repeats), _best(reference, repeats)
            copies_s, costing_s = _best(copies, repeats), _best(costing, repeats)
            rows.append({"path": path, "budget": budget, "kept_messages": kept,
                         "engine_s": round(engine_s, 4), "reference_s": round(reference_s, 4),
                         "speedup": round(reference_s / engine_s, 2),
                         "copy_floor_s": round(copies_s, 4),
                         "speedup_bound_by_copies": round(reference_s / copies_s, 2),
                         "costing_floor_s": round(costing_s, 4),
                         "speedup_bound_by_costing_and_copies": round(
                             reference_s / (costing_s + copies_s), 2)})
    return {"workload": {"threads": count, "messages": sum(map(len, generated)),
                         "seed": 0},
            "repeats": repeats,
            "machine": {**machine(), "load_average": os.getloadavg()}, "results": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    report = measure(arguments.threads, arguments.repeats)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    for row in report["results"]:
        print(f"{row['path']:>10}  budget {row['budget']:>5}: engine {row['engine_s']:.3f} s, "
              f"reference {row['reference_s']:.3f} s, {row['speedup']:.1f}x (copies alone "
              f"{row['copy_floor_s']:.3f} s: at most {row['speedup_bound_by_copies']:.1f}x; "
              f"with the costing pass {row['costing_floor_s']:.3f} s: at most "
              f"{row['speedup_bound_by_costing_and_copies']:.1f}x)")


if __name__ == "__main__":
    main()
