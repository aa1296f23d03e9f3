"""``vthread.scan``'s copies made with the cyclic garbage collector paused, and not, in one run.

``scan(mask_volatile=True)`` copies every thread with its volatile values masked, and
``scan(format="openai")`` translates every thread to native messages, before the scan: many
new dicts and lists, none of them in a cycle. Made with the collector on, the collector
walks them again and again as they are made. Both ways are measured in one process on the
same parsed threads, rounds alternating which goes first: "paused" is the scan as it is
(``vthread.scan.collector_paused`` around the copies), "collected" the same scan with that
pause made a no-op, the collector on as the caller left it. CPU seconds
(``time.process_time``), medians of the rounds and the median of each round's ratio;
the answers of both ways must be identical.

    python -m benchmarks.workload --count 10000 --out /tmp/w10k.jsonl
    python -m benchmarks.collector_ab --file /tmp/w10k.jsonl --rounds 7 \\
        --out benchmarks/results/collector-ab.json
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson

import vthread
from benchmarks.scan_report import write_results
from benchmarks.workload import to_openai

_SCAN_MODULE = importlib.import_module("vthread.scan")  # (vthread.scan is the function)


@contextlib.contextmanager
def _not_paused() -> Iterator[None]:
    yield


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    started = time.process_time()
    answer = call()
    return time.process_time() - started, answer


def measure(threads: list[Any], chats: list[Any], rounds: int) -> dict[str, Any]:
    """Each way's CPU seconds per round, for each call, and the ratio collected / paused."""
    calls: dict[str, Callable[[], Any]] = {
        "scan(mask_volatile=True)": lambda: vthread.scan(threads, mask_volatile=True).names,
        'scan(format="openai")': lambda: vthread.scan(chats, format="openai").names,
    }
    paused = _SCAN_MODULE.collector_paused
    out: dict[str, Any] = {}
    for name, call in calls.items():
        times: dict[str, list[float]] = {"paused": [], "collected": []}
        answers: dict[str, Any] = {}
        for index in range(rounds):
            order = ("paused", "collected") if index % 2 == 0 else ("collected", "paused")
            for way in order:
                _SCAN_MODULE.collector_paused = paused if way == "paused" else _not_paused
                try:
                    gc.collect()
                    seconds, answer = _timed(call)
                finally:
                    _SCAN_MODULE.collector_paused = paused
                times[way].append(seconds)
                if answers.setdefault(way, answer) != answer:
                    raise SystemExit(f"{name}: {way} answered otherwise between rounds")
        if answers["paused"] != answers["collected"]:
            raise SystemExit(f"{name}: the two ways' answers differ")
        ratios = [c / p for c, p in zip(times["collected"], times["paused"], strict=True)]
        out[name] = {
            "seconds": times,
            "median_paused": statistics.median(times["paused"]),
            "median_collected": statistics.median(times["collected"]),
            "median_ratio": statistics.median(ratios),
            "rounds_faster": sum(ratio > 1 for ratio in ratios),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", required=True, help="JSONL of threads (benchmarks.workload)")
    parser.add_argument("--count", type=int, default=10_000, help="threads read from it")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", required=True)
    options = parser.parse_args()
    with open(options.file, "rb") as lines:
        threads = [orjson.loads(line)["messages"] for _, line in zip(range(options.count),
                                                                     lines, strict=False)]
    chats = [to_openai(thread) for thread in threads]
    results = measure(threads, chats, options.rounds)
    shown = {name: (f"paused {r['median_paused']:.3f} s, collected "
                    f"{r['median_collected']:.3f} s: {r['median_ratio']:.2f}x "
                    f"({r['rounds_faster']} of {options.rounds} rounds)")
             for name, r in results.items()}
    write_results(options.out, __doc__, {
        "workload": {"file": options.file, "threads": len(threads),
                     "messages": sum(map(len, threads))},
        "rounds": options.rounds, "results": results}, shown)


if __name__ == "__main__":
    main()
