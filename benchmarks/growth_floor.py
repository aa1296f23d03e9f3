"""One long thread's cost at 100k and at 1M messages against two floors read in the same run.

``python -m benchmarks.growth_floor`` builds one thread of a hostile shape
(:mod:`benchmarks.shapes`, default ``changing_arguments``) at each size and times, alternating
and with the garbage collector off, CPU seconds (min of ``--repeats``):

- ``describe``: ``describe_thread_cycle`` of the thread;
- ``floor_one_field``: the core reading one field (``type``) of every message;
- ``floor_every_value``: the core hashing every value of every message (its screens for
  looking anywhere: type, text and the whole meta, nested dicts and all).

The growth bound is a 1M-message thread at most 12x a 100k one. A thread whose cost is
reading every value it holds cannot grow less than the second floor does on the same machine;
the report writes each ratio 1M/100k and ``describe``'s over the second floor's.
Results go to ``benchmarks/results/growth-floor-<shape>.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from benchmarks.scan_report import machine
from benchmarks.shapes import SHAPES
from vthread import _core, describe_thread_cycle
from vthread.anywhere import core_text_run

RESULTS: Final = Path(__file__).resolve().parent / "results"
SIZES: Final = (100_000, 1_000_000)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _variants(thread: list[Any]) -> dict[str, Callable[[], object]]:
    text_run = core_text_run()
    return {
        "describe": lambda: describe_thread_cycle(thread),
        "floor_one_field": lambda: _core.one_field_floor([thread]),
        "floor_every_value": lambda: _core.message_screens([thread], text_run),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shape", default="changing_arguments",
                        choices=sorted(SHAPES))
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args(argv)
    make = SHAPES[options.shape].make
    about = machine()
    loads = []
    best: dict[int, dict[str, float]] = {}
    gc.disable()
    try:
        for size in SIZES:
            thread = make(size)
            variants = _variants(thread)
            times = {name: float("inf") for name in variants}
            for _ in range(options.repeats):
                for name, run in variants.items():
                    started = _cpu()
                    run()
                    times[name] = min(times[name], _cpu() - started)
            loads.append([round(x, 2) for x in os.getloadavg()])
            best[size] = times
            del thread, variants
    finally:
        gc.enable()
    small, large = SIZES
    ratios = {name: best[large][name] / best[small][name] for name in best[small]}
    about["load_average_per_size"] = loads
    report = {
        "title": f"one {options.shape} thread, 100k and 1M messages, against two floors",
        "machine": about,
        "method": f"CPU seconds, min of {options.repeats}, variants alternating, "
                  "garbage collector off",
        "seconds": {str(size): times for size, times in best.items()},
        "ratios_1m_over_100k": ratios,
        "describe_growth_over_every_value_floor_growth":
            ratios["describe"] / ratios["floor_every_value"],
        "bound": 12.0,
    }
    path = RESULTS / f"growth-floor-{options.shape.replace('_', '-')}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    for name, ratio in ratios.items():
        print(f"{name:<20} {best[small][name]:.4f} s -> {best[large][name]:.4f} s: {ratio:.2f}x")
    print(f"describe's growth over the every-value floor's: "
          f"{report['describe_growth_over_every_value_floor_growth']:.3f}; load {loads}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
