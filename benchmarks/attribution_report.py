"""Loop attribution in the core, and whole chunks on ``--jobs N`` threads, timed against the
session-9 ways in today's code, same run.

Until session 10 a looping thread's record (its span as a person counts it, signature,
excerpt, tokens) was computed in Python: ``vthread scan`` parsed every looping line again with
orjson, and ``vthread.scan`` read the looping threads' messages through Python. And
``--jobs 2`` had one thread read the next chunk in the core while Python finished the one
before. This script times, round-robin on the benchmark workload (seed 0):

- ``vthread scan FILE -q -o OUT`` in a subprocess: ``--jobs 1`` with attribution in Python
  (the core's ``attribute_lines`` made to decline every row, so ``scan.attribute`` does them
  all, as before) and in the core; ``--jobs 2`` the session-9 way (one thread reading ahead,
  attribution in Python: the session-9 ``_run_in_core``, restated here), one thread reading
  ahead with attribution in the core, and today's (whole chunks on two threads);
- ``vthread.scan(threads)`` in this process, with ``attribute_threads`` or ``attribute``.

Every way's records are checked to be byte for byte the same (``vthread.scan``'s too).

Usage: ``python -m benchmarks.attribution_report [--runs 5] [--json PATH]``; writes medians,
minima and the machine to ``PATH`` (default ``benchmarks/results/attribution.json``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "attribution.json"
CLI_WAYS = {
    "jobs1_python_attribution": ("1", "python", "chunks"),
    "jobs1_core_attribution": ("1", "core", "chunks"),
    "jobs2_reader_ahead_python_attribution": ("2", "python", "reader"),
    "jobs2_reader_ahead_core_attribution": ("2", "core", "reader"),
    "jobs2_chunk_threads_core_attribution": ("2", "core", "chunks"),
}
"""name: (--jobs, who attributes, how --jobs 2 splits the work)."""


def _python_attribution() -> None:
    """The core's ``attribute_lines`` declines every row: ``scan.attribute`` does them all,
    from the lines parsed by Python, as before session 10."""
    import numpy as np

    from vthread import _core

    real = _core.attribute_lines

    def declining(lines: list[bytes], *args: Any, **keywords: Any) -> dict[str, Any]:
        out = real(lines, *args, **keywords)
        out["declined"] = np.arange(len(lines), dtype=np.int64)
        return out

    _core.attribute_lines = declining


def _reader_ahead() -> None:
    """Session 9's ``_run_in_core`` for ``--jobs N``: one thread reads the next chunk in the
    core (on N - 1 threads) while Python finishes the one before."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from vthread import cli
    from vthread.scan import collector_paused

    def finish(task: Any, ahead: Future[Any]) -> Any:
        with collector_paused():
            raw = ahead.result()
            done = cli._scan_chunk_in_core(task, raw) if raw is not None else None
            return done if done is not None else cli._scan_chunk_in_python(task)

    def run_in_core(tasks: Iterable[Any], jobs: int) -> Iterator[Any]:
        if jobs <= 1:
            yield from map(cli._scan_chunk, tasks)
            return
        with ThreadPoolExecutor(1) as reader:
            pending = None
            for task in tasks:
                task = replace(task, threads=max(1, jobs - 1))
                ahead = reader.submit(cli._read_in_core, task)
                if pending is not None:
                    yield finish(*pending)
                pending = (task, ahead)
            if pending is not None:
                yield finish(*pending)

    cli._run_in_core = run_in_core


def run_way(way: str, argv: list[str]) -> int:
    """``vthread scan`` run the given way (in the subprocess)."""
    from vthread import cli

    _, who, split = CLI_WAYS[way]
    if who == "python":
        _python_attribution()
    if split == "reader":
        _reader_ahead()
    return cli.main(argv)


def _cli(way: str, path: Path, output: Path) -> float:
    from benchmarks.scan_report import subprocess_env

    jobs = CLI_WAYS[way][0]
    argv = [sys.executable, "-m", "benchmarks.attribution_report", "--way", way, "scan",
            str(path), "-q", "-o", str(output), "--jobs", jobs]
    started = time.perf_counter()
    subprocess.run(argv, check=True, env=subprocess_env(), cwd=Path(__file__).parents[1])
    return time.perf_counter() - started


def _scan_ways(threads: list[Any], runs: int) -> dict[str, list[float]]:
    """``vthread.scan`` with the looping threads attributed by the core or by Python,
    alternated; the records checked equal."""
    import vthread
    import vthread.scan

    module = sys.modules["vthread.scan"]
    core = module.attribute_threads

    def python(result: Any, columns: Any, rows: Any, chosen: Any) -> None:
        module.attribute(result, columns, rows, chosen)

    times: dict[str, list[float]] = {"scan_python_attribution": [], "scan_core_attribution": []}
    records: dict[str, Any] = {}
    gc.collect()
    gc.freeze()
    for _ in range(runs):
        for name, attribute in (("scan_python_attribution", python),
                                ("scan_core_attribution", core)):
            module.attribute_threads = attribute  # type: ignore[attr-defined]
            started = time.perf_counter()
            result = vthread.scan(threads)
            times[name].append(time.perf_counter() - started)
            records.setdefault(name, [result.record(row) for row in range(len(result))])
    module.attribute_threads = core  # type: ignore[attr-defined]
    gc.unfreeze()
    if records["scan_python_attribution"] != records["scan_core_attribution"]:
        raise AssertionError("vthread.scan: the core's attribution differs from Python's")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.attribution_report")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument("--way", choices=sorted(CLI_WAYS), help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args(argv)
    if args.way:
        return run_way(args.way, rest)
    # Imported here: the CLI subprocesses import this module and must start as light as
    # `python -m vthread` does.
    from benchmarks.scan_report import machine
    from benchmarks.workload import generate_threads, write_jsonl

    scratch = Path(tempfile.mkdtemp(prefix="vthread-attribution-"))
    threads = generate_threads(10_000, seed=0)
    path = scratch / "threads.jsonl"
    write_jsonl(path, threads)
    times: dict[str, list[float]] = {way: [] for way in CLI_WAYS}
    loads = []
    outputs: dict[str, bytes] = {}
    for round_ in range(args.runs):
        loads.append(round(os.getloadavg()[0], 2))
        for way in CLI_WAYS:
            output = scratch / f"{way}.jsonl"
            times[way].append(_cli(way, path, output))
            outputs.setdefault(way, output.read_bytes())
            print(f"  round {round_ + 1}: {way}: {times[way][-1]:.3f} s", file=sys.stderr)
    if len(set(outputs.values())) != 1:
        raise AssertionError("the ways wrote different records")
    times.update(_scan_ways(threads, args.runs + 2))
    summary: dict[str, dict[str, Any]] = {name: {"median_s": round(statistics.median(values), 4),
                      "min_s": round(min(values), 4), "runs": [round(v, 4) for v in values]}
               for name, values in times.items()}

    def ratio(before: str, after: str) -> float:
        return round(float(summary[before]["median_s"]) / float(summary[after]["median_s"]), 2)

    ratios = {
        "jobs1: core / python attribution": ratio("jobs1_python_attribution",
                                                  "jobs1_core_attribution"),
        "scan: core / python attribution": ratio("scan_python_attribution",
                                                 "scan_core_attribution"),
        "jobs2 session 9 way / today's": ratio("jobs2_reader_ahead_python_attribution",
                                               "jobs2_chunk_threads_core_attribution"),
        "jobs2 reader ahead / chunk threads (both core attribution)": ratio(
            "jobs2_reader_ahead_core_attribution", "jobs2_chunk_threads_core_attribution"),
        "today: jobs1 / jobs2": ratio("jobs1_core_attribution",
                                      "jobs2_chunk_threads_core_attribution"),
        "session 9 way: jobs1 / jobs2": ratio("jobs1_python_attribution",
                                              "jobs2_reader_ahead_python_attribution"),
    }
    report = {"machine": machine(), "workload": {"threads": len(threads),
                                                 "bytes": path.stat().st_size},
              "load_1min_per_round": loads, "times": summary, "ratios": ratios}
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name, row in summary.items():
        print(f"{name:45} median {row['median_s']:.3f} s  min {row['min_s']:.3f} s")
    for name, value in ratios.items():
        print(f"{name:60} {value:.2f}x")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
