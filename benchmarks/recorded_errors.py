"""What ``vthread.scan(threads, errors="record")`` costs against ``errors="raise"``.

The workload's threads parsed (``--file``, a JSONL file of ``benchmarks.workload``), then a
copy with a share of them (``--bad``, seeded) replaced by a thread the scan cannot read
(``[5]``: a message that is no mapping). Four ways, each round in alternating order, CPU
time of this process: the clean batch with ``errors="raise"`` (the baseline) and with
``errors="record"``; the batch with bad threads with ``errors="record"``; and its good
threads alone with ``errors="raise"`` (what a caller dropping the bad ones by hand would
scan). Medians of the rounds; the answers are checked: every good row equal to the
good threads' own scan, every bad row an error.

    python -m benchmarks.recorded_errors --file w10k.jsonl --bad 0.01 --rounds 7 \\
        --out results.json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import vthread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recorded_errors",
                                     description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--bad", type=float, default=0.01, help="share of threads made bad")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args(argv)
    with options.file.open("rb") as lines:
        threads: list[Any] = [json.loads(line) for line in lines]
    rows = sorted(random.Random(options.seed).sample(range(len(threads)),
                                                     round(len(threads) * options.bad)))
    bad = list(threads)
    for row in rows:
        bad[row] = [5]
    chosen = set(rows)
    good = [thread for row, thread in enumerate(bad) if row not in chosen]
    ways: dict[str, Callable[[], vthread.ScanResult]] = {
        "raise, clean batch": lambda: vthread.scan(threads),
        "record, clean batch": lambda: vthread.scan(threads, errors="record"),
        "record, batch with bad threads": lambda: vthread.scan(bad, errors="record"),
        "raise, its good threads alone": lambda: vthread.scan(good),
    }
    recorded, alone = ways["record, batch with bad threads"](), ways[
        "raise, its good threads alone"]()
    kept = np.flatnonzero(~recorded.unread)
    assert np.flatnonzero(recorded.unread).tolist() == rows
    assert [recorded.record(int(row)) for row in kept] == list(alone)
    times: dict[str, list[float]] = {name: [] for name in ways}
    for round_ in range(options.rounds):
        for name in (list(ways) if round_ % 2 == 0 else list(reversed(ways))):
            started = time.process_time()
            ways[name]()
            times[name].append(time.process_time() - started)
    baseline = statistics.median(times["raise, clean batch"])
    summary = {name: {"cpu_s_median": round(statistics.median(spent), 4),
                      "vs_raise_clean": round(statistics.median(spent) / baseline, 3)}
               for name, spent in times.items()}
    result = {
        "method": "CPU time of this process, medians of the rounds, order alternating",
        "file": options.file.name, "threads": len(threads), "bad_threads": len(rows),
        "rounds": options.rounds,
        "machine": {"processor": platform.processor() or platform.machine(),
                    "python": platform.python_version()},
        "summary": summary,
    }
    text = json.dumps(result, indent=1)
    print(text)
    if options.out is not None:
        options.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
