"""``scan(anywhere=True)`` against the default scan on the 10,000-thread benchmark workload.

``python -m benchmarks.anywhere_report`` times both on the same threads in one process,
alternating (default, anywhere) for ``--rounds`` rounds, and writes
``benchmarks/results/anywhere.json``: per variant the minimum and median of the rounds, and
their ratio (anywhere / default). Both run with the garbage collector paused, as ``scan``
does. The budget is a ratio of at most 2.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.scan_report import machine
from benchmarks.workload import generate_threads
from vthread.scan import scan

RESULTS: Final = Path(__file__).resolve().parent / "results" / "anywhere.json"
BUDGET: Final = 2.0


def _timed(threads: list[Any], anywhere: bool) -> float:
    started = time.perf_counter()
    scan(threads, anywhere=anywhere)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", type=Path, default=RESULTS)
    options = parser.parse_args(argv)
    threads = generate_threads(options.threads)
    about = machine()
    _timed(threads, False)  # warm both paths (imports, caches) before measuring
    _timed(threads, True)
    times: dict[str, list[float]] = {"default": [], "anywhere": []}
    loads = []
    for _ in range(options.rounds):
        times["default"].append(_timed(threads, False))
        times["anywhere"].append(_timed(threads, True))
        loads.append([round(x, 2) for x in os.getloadavg()])
    about["load_average_per_round"] = loads
    about["note"] = "shared machine (2 vCPU): other engineers run tests meanwhile"
    summary = {name: {"min_s": min(t), "median_s": statistics.median(t), "rounds_s": t}
               for name, t in times.items()}
    report = {
        "title": "scan(anywhere=True) against the default scan, same threads, same process",
        "machine": about,
        "workload": {"generator": "benchmarks.workload.generate_threads",
                     "threads": options.threads,
                     "messages": sum(map(len, threads))},
        "method": f"{options.rounds} alternating rounds after one warm-up of each; "
                  "min and median seconds per call",
        "results": summary,
        "ratio_min": summary["anywhere"]["min_s"] / summary["default"]["min_s"],
        "ratio_median": summary["anywhere"]["median_s"] / summary["default"]["median_s"],
        "budget_ratio": BUDGET,
    }
    options.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"default {summary['default']['min_s']:.3f} s, anywhere "
          f"{summary['anywhere']['min_s']:.3f} s (min of {options.rounds}); ratio "
          f"{report['ratio_min']:.2f} (median {report['ratio_median']:.2f}); "
          f"load {loads[-1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
