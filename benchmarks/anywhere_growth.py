"""Growth of looking anywhere with one thread's length: 4x the messages, at most 6x the time.

``scan([thread], anywhere=True)`` and ``vthread scan FILE --anywhere`` (in process, the
thread as one JSONL line) on each of :data:`benchmarks.shapes.ANYWHERE_SHAPES` at sizes 4x
apart; CPU seconds (user + kernel, ``getrusage``), the minimum of ``--repeats`` runs. Before
timing, the loops found are checked against the plain twin
(:func:`vthread.anywhere.find_loops_reference`, cubic) at a size it finishes in, and the
CLI's record against ``scan``'s row at every size. Writes
``benchmarks/results/anywhere-growth.json``; exits 1 when a 4x step costs over 6x.

    python -m benchmarks.anywhere_growth              # 20k, 80k, 320k messages
    python -m benchmarks.anywhere_growth --sizes 5000,20000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

import numpy as np

import vthread
from benchmarks.shapes import ANYWHERE_SHAPES, Thread
from vthread import cli
from vthread.anywhere import find_loops, find_loops_reference

RESULTS: Final = Path(__file__).resolve().parent / "results" / "anywhere-growth.json"
BOUND: Final = 6.0
"""The most a step of 4x the messages may multiply the time by."""
REFERENCE_SIZE: Final = 1_500
"""Messages at which the loops are checked against the quadratic twin."""


def cpu_seconds(call: Callable[[], object]) -> float:
    before = resource.getrusage(resource.RUSAGE_SELF)
    call()
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def check_against_reference(make: Callable[[int], Thread]) -> int:
    thread = make(REFERENCE_SIZE)
    found = find_loops([thread])
    if found != find_loops_reference([thread]):
        raise SystemExit(f"{make.__name__}: loops differ from the plain twin's")
    return len(found[0])


def cli_record(path: Path, scratch: Path) -> dict[str, Any]:
    out = scratch / "out.jsonl"
    status = cli.main(["scan", str(path), "--anywhere", "--quiet", "--output", str(out)])
    if status != 0:
        raise SystemExit(f"vthread scan {path} --anywhere exited {status}")
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    return record  # type: ignore[no-any-return]


def measure(name: str, size: int, repeats: int, scratch: Path) -> dict[str, Any]:
    thread = ANYWHERE_SHAPES[name](size)
    path = scratch / "thread.jsonl"
    path.write_text(json.dumps(thread) + "\n")
    result = vthread.scan([thread], anywhere=True)
    record = cli_record(path, scratch)
    if record["verdict"] != result.names[0] or len(record.get("loops", [])) != len(
            result.loops[0]):
        raise SystemExit(f"{name} at {size}: the CLI's record is not scan's row")
    runs: dict[str, list[float]] = {"scan": [], "cli": []}
    argv = ["scan", str(path), "--anywhere", "--quiet", "--output", os.devnull]
    for _ in range(repeats):
        runs["scan"].append(cpu_seconds(lambda: vthread.scan([thread], anywhere=True)))
        runs["cli"].append(cpu_seconds(lambda: cli.main(argv)))
    return {"messages": size, "loops": len(result.loops[0]), "verdict": result.names[0],
            "jsonl_bytes": path.stat().st_size,
            "min_cpu_s": {way: round(min(times), 4) for way, times in runs.items()},
            "runs_cpu_s": {way: [round(t, 4) for t in times] for way, times in runs.items()},
            "load_average_1min": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,80000,320000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(ANYWHERE_SHAPES))
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    names = args.shapes.split(",")
    started = time.time()
    report: dict[str, Any] = {
        "what": "CPU seconds of looking anywhere on one thread, by shape and size (min of "
                f"{args.repeats}); 4x the messages must cost at most {BOUND}x",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor()},
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "shapes": {}}
    failed = False
    with tempfile.TemporaryDirectory(prefix="vthread-anywhere-growth-") as folder:
        for name in names:
            loops = check_against_reference(ANYWHERE_SHAPES[name])
            points = [measure(name, size, args.repeats, Path(folder)) for size in sizes]
            steps = []
            for small, large in pairwise(points):
                for way in ("scan", "cli"):
                    ratio = large["min_cpu_s"][way] / max(small["min_cpu_s"][way], 1e-4)
                    over = ratio > BOUND * large["messages"] / small["messages"] / 4
                    failed |= over
                    steps.append({"way": way, "from": small["messages"],
                                  "to": large["messages"], "ratio": round(ratio, 2),
                                  "within_bound": not over})
            report["shapes"][name] = {"reference_loops_checked": loops, "points": points,
                                      "steps": steps}
            for step in steps:
                print(f"{name:20} {step['way']:4} {step['from']:>8,} -> {step['to']:>8,}: "
                      f"{step['ratio']:5.2f}x{'' if step['within_bound'] else '  OVER'}")
    report["seconds"] = round(time.time() - started, 1)
    args.output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.output}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
