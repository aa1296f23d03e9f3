"""What pickling a fed ``vthread.Guard`` costs: bytes, and microseconds to dump and load.

Each case feeds a guard, then pickles it ``--repeats`` times (``pickle.dumps`` and
``pickle.loads`` timed apart, the least and the median), and checks that the loaded guard
answers the rest of a stream as the original does before anything is reported:

* ``fresh``: a guard fed nothing (its options alone);
* ``default_window``: the default options, fed 200,000 characters of healthy text
  (:func:`benchmarks.streams.realistic_stream`);
* ``window_100k``: ``window=100_000``, fed 2,000,000 characters (the window full);
* ``long_word``: inside a word of 300,000 characters (its digest under way).

    python -m benchmarks.guard_pickle --out benchmarks/results/guard-pickle.json
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from typing import Any

import vthread
from benchmarks.scan_report import write_results
from benchmarks.streams import realistic_stream


def _case(guard: vthread.Guard, rest: str, repeats: int) -> dict[str, Any]:
    dumps, loads = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        state = pickle.dumps(guard)
        dumps.append(time.perf_counter() - started)
        started = time.perf_counter()
        loaded = pickle.loads(state)
        loads.append(time.perf_counter() - started)
    answers = [(loaded.push(chunk), guard.push(chunk)) for chunk in rest.split(" ")]
    if any(a != b for a, b in answers) or loaded.reason != guard.reason:
        raise SystemExit("a loaded guard answered otherwise than the original")
    return {"bytes": len(state),
            "dumps_us_min": min(dumps) * 1e6, "dumps_us_median": statistics.median(dumps) * 1e6,
            "loads_us_min": min(loads) * 1e6, "loads_us_median": statistics.median(loads) * 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--out", required=True)
    options = parser.parse_args(argv)
    text = realistic_stream(2_000_000)
    rest = realistic_stream(20_000, seed=5)
    cases: dict[str, Any] = {}
    cases["fresh"] = _case(vthread.Guard(), rest, options.repeats)
    default = vthread.Guard()
    default.push(text[:200_000])
    cases["default_window"] = _case(default, rest, options.repeats)
    wide = vthread.Guard(window=100_000)
    wide.push(text)
    cases["window_100k"] = _case(wide, rest, options.repeats)
    inside = vthread.Guard()
    inside.push("start " + "a\u00e9" * 150_000)
    cases["long_word"] = _case(inside, rest, options.repeats)
    write_results(options.out, __doc__, {"repeats": options.repeats, "cases": cases}, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
