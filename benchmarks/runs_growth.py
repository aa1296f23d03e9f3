"""Growth of the core's search for long repeated blocks (``vthread._core.long_runs``).

Looking anywhere finds blocks longer than 24 messages by the runs of a thread's screens.
This times that search alone on sequences of screens chosen to stress it: one value
repeated (a run of every period), a block of 29 (or 999) equal values and one other (long
reaches that are no run), random values over 2 and over 1,000 letters, 30 distinct values repeated,
and the Fibonacci word (the most runs a sequence can hold). CPU seconds (the minimum of
``--repeats``), sizes 4x apart; before timing, each shape's runs at a small size are checked
against a plain enumeration. Writes ``benchmarks/results/runs-growth.json``.

    python -m benchmarks.runs_growth                       # 100k, 400k, 1.6M values
    python -m benchmarks.runs_growth --sizes 10000,40000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from vthread import _core
from vthread.anywhere import plain_runs

RESULTS: Final = Path(__file__).resolve().parent / "results" / "runs-growth.json"
SHORTEST: Final = 25
"""The shortest block looked for, as looking anywhere asks (``MAX_PERIOD + 1``)."""

Values = npt.NDArray[np.uint64]


def _fibonacci_word(size: int) -> Values:
    before, word = [0], [0, 1]
    while len(word) < size:
        before, word = word, word + before
    return np.array(word[:size], np.uint64)


def _cycled(block: list[int], size: int) -> Values:
    return np.array(block * (size // len(block) + 1), np.uint64)[:size]


SHAPES: Final[dict[str, Callable[[int], Values]]] = {
    "one value": lambda size: np.zeros(size, np.uint64),
    "29 equal and one other": lambda size: _cycled([0] * 29 + [1], size),
    "999 equal and one other": lambda size: _cycled([0] * 999 + [1], size),
    "random over 2": lambda size: np.random.default_rng(0).integers(0, 2, size).astype(
        np.uint64),
    "30 distinct repeated": lambda size: _cycled(list(range(30)), size),
    "random over 1,000": lambda size: np.random.default_rng(0).integers(0, 1000, size).astype(
        np.uint64),
    "fibonacci word": _fibonacci_word,
}


def runs_of(values: Values) -> tuple[list[tuple[int, int, int]], float]:
    """The core's runs of ``values`` and the CPU seconds they took."""
    bounds = np.array([0, values.size], np.int64)
    started = time.process_time()
    _, periods, starts, stops = _core.long_runs(values, bounds, SHORTEST)
    seconds = time.process_time() - started
    return list(zip(periods.tolist(), starts.tolist(), stops.tolist(), strict=True)), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,400000,1600000")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(argv)
    sizes = [int(size) for size in options.sizes.split(",")]
    report: dict[str, Any] = {
        "what": "CPU seconds of vthread._core.long_runs (shortest block 25) on one sequence",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor()},
        "versions": {"python": platform.python_version(), "numpy": np.__version__},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "shapes": {},
    }
    for name, make in SHAPES.items():
        small = make(400)
        plain = [(period, begin, stop + period)
                 for period, begin, stop in plain_runs(small.tolist(), SHORTEST)]
        if runs_of(small)[0] != plain:
            raise SystemExit(f"{name}: runs differ from the plain enumeration's")
        points = []
        for size in sizes:
            values = make(size)
            found, _ = runs_of(values)
            seconds = min(runs_of(values)[1] for _ in range(options.repeats))
            points.append({"values": size, "runs": len(found), "min_cpu_s": round(seconds, 4)})
        steps = [round(b["min_cpu_s"] / max(a["min_cpu_s"], 1e-9), 2)
                 for a, b in pairwise(points)]
        report["shapes"][name] = {"points": points, "steps": steps}
        print(f"{name:24}", "  ".join(f"{p['values']:>9,} {p['min_cpu_s']:.3f} s"
                                      for p in points), " steps", steps, flush=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
