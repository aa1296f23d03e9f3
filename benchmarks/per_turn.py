"""What an agent harness pays to ask "is it stuck?" on every turn.

A harness calls ``describe_thread_cycle`` on its thread after each turn: the same list,
one message longer each time, still in the caches from the turn just taken. This measures
that call against the scalar reference (``vthread/_reference.py``) two ways, on the first
``--threads`` workload threads of at least 60 messages (``benchmarks/workload.py``, seed 0):

- **per call**: the thread's first 60 messages, called ``--calls`` times in a row (the
  reference a tenth as often); the minimum over ``--rounds`` rounds, the two alternating;
- **turn by turn**: one list grown by a message at a time from 1 to 60 messages, a call
  after each append, the whole walk timed; the minimum over the rounds.

Each way runs on the threads as the workload builds them (keys are interned literals, as in
a harness that builds its messages in code) and as ``json.loads`` parses them (one key
object per distinct key, as read from a file or an API). Answers are checked equal.
Writes ``benchmarks/results/per_turn.json``.

Hypotheses, written before the first run (session 24): H1, a call on a warm 60-message
thread is at least 50x the reference (median over threads of the per-thread ratio), for
both kinds of keys; H2, the 60 turns of a thread cost at least 50x less than the
reference's (median over threads).

    python -m benchmarks.per_turn
    python -m benchmarks.per_turn --threads 10 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import vthread
from benchmarks.scan_report import machine
from benchmarks.workload import generate_threads
from vthread import _reference

RESULTS: Final = Path(__file__).resolve().parent / "results" / "per_turn.json"
MESSAGES: Final = 60

Thread = list[dict[str, Any]]
Describe = Callable[[Thread], str | None]


def _reference_describe() -> Describe:
    options = _reference.cycle()
    return lambda thread: _reference.describe_thread_cycle(thread, options)


def _per_call(describe: Describe, thread: Thread, calls: int) -> float:
    """Seconds per call, ``calls`` calls in a row on one list."""
    started = time.perf_counter()
    for _ in range(calls):
        describe(thread)
    return (time.perf_counter() - started) / calls


def _turn_by_turn(describe: Describe, thread: Thread) -> tuple[float, list[str | None]]:
    """Seconds for a call after each of the thread's turns, and the answers."""
    grown: Thread = []
    answers = []
    started = time.perf_counter()
    for message in thread:
        grown.append(message)
        answers.append(describe(grown))
    return time.perf_counter() - started, answers


def measure(threads: list[Thread], calls: int, rounds: int) -> dict[str, Any]:
    ways: dict[str, Describe] = {"vthread": vthread.describe_thread_cycle,
                                 "reference": _reference_describe()}
    per_call: dict[str, list[float]] = {way: [] for way in ways}
    turns: dict[str, list[float]] = {way: [] for way in ways}
    for thread in threads:
        best_call = dict.fromkeys(ways, float("inf"))
        best_turns = dict.fromkeys(ways, float("inf"))
        walked: dict[str, list[str | None]] = {}
        for _ in range(rounds):
            for way, describe in ways.items():
                repeat = calls if way == "vthread" else max(calls // 10, 1)
                best_call[way] = min(best_call[way], _per_call(describe, thread, repeat))
                seconds, walked[way] = _turn_by_turn(describe, thread)
                best_turns[way] = min(best_turns[way], seconds)
        if walked["vthread"] != walked["reference"]:
            raise AssertionError("vthread and the reference answered differently")
        for way in ways:
            per_call[way].append(best_call[way])
            turns[way].append(best_turns[way])
    return {
        "per_call_us": {way: round(statistics.median(values) * 1e6, 2)
                        for way, values in per_call.items()},
        "per_call_ratio": round(statistics.median(
            ref / ours for ref, ours in zip(per_call["reference"], per_call["vthread"],
                                            strict=True)), 1),
        "sixty_turns_us": {way: round(statistics.median(values) * 1e6, 1)
                           for way, values in turns.items()},
        "sixty_turns_ratio": round(statistics.median(
            ref / ours for ref, ours in zip(turns["reference"], turns["vthread"],
                                            strict=True)), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=40)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args(argv)
    pool = generate_threads(options.threads * 8, seed=0)
    built = [thread[:MESSAGES] for thread in pool if len(thread) >= MESSAGES][: options.threads]
    parsed = [json.loads(json.dumps(thread)) for thread in built]
    report: dict[str, Any] = {
        "what": __doc__.split("\n\n")[0],
        "machine": machine(),
        "method": {"threads": len(built), "messages": MESSAGES, "calls": options.calls,
                   "reference_calls": max(options.calls // 10, 1), "rounds": options.rounds,
                   "statistic": "per thread, the minimum over rounds; then the median "
                                "over threads (of the times, and of the per-thread ratios)"},
        "keys_interned": measure(built, options.calls, options.rounds),
        "keys_parsed_by_json": measure(parsed, options.calls, options.rounds),
    }
    report["machine"]["load_average_end"] = list(os.getloadavg())
    for name in ("keys_interned", "keys_parsed_by_json"):
        row = report[name]
        report[name]["holds"] = {"H1": row["per_call_ratio"] >= 50,
                                 "H2": row["sixty_turns_ratio"] >= 50}
        print(f"{name:20} per call {row['per_call_us']['vthread']:7.2f} us against "
              f"{row['per_call_us']['reference']:8.1f} us ({row['per_call_ratio']}x); "
              f"60 turns {row['sixty_turns_us']['vthread']:8.1f} us against "
              f"{row['sixty_turns_us']['reference']:9.1f} us ({row['sixty_turns_ratio']}x)")
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
