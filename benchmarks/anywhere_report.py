"""``scan(anywhere=True)`` against the default scan on the 10,000-thread benchmark workload.

``python -m benchmarks.anywhere_report`` times both on the same threads in one process,
alternating (default, anywhere) for ``--rounds`` rounds, and writes
``benchmarks/results/anywhere.json``: per variant the minimum and median of the rounds, and
their ratio (anywhere / default). Both run with the garbage collector paused, as ``scan``
does. The budget is a ratio of at most 2.

The same threads as a JSONL file, scanned ``--anywhere`` by ``vthread scan`` (``"file"`` in
the results, alternating too): in process, each of the CLI's chunks read by the core (its
screens made from the bytes, only the lines that may loop parsed by Python) against the same
chunks read by Python (every line parsed, as the CLI did before the core read them), records
checked equal; and whole processes (``python -m vthread scan FILE -q``, from a snapshot of
the code) with and without ``--anywhere``, ``--jobs`` 1 and 2, the core's reading against
Python's (the CLI with ``_core_may_read`` answering no, which sends every chunk to Python's
reading in worker processes, as ``--anywhere`` was read before).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any, Final

from benchmarks.scan_report import machine, snapshot_code, subprocess_env
from benchmarks.workload import generate_threads, write_jsonl
from vthread import cli
from vthread._options import CycleOptions
from vthread.scan import scan

RESULTS: Final = Path(__file__).resolve().parent / "results" / "anywhere.json"
BUDGET: Final = 2.0


def _timed(threads: list[Any], anywhere: bool) -> float:
    started = time.perf_counter()
    scan(threads, anywhere=anywhere)
    return time.perf_counter() - started


def _chunk_tasks(path: Path) -> list[Any]:
    """The CLI's chunks of the file, as ``vthread scan FILE --anywhere`` makes them."""
    tasks = []
    line = 1
    with path.open("rb") as stream:
        for lines in cli._chunks(stream):
            tasks.append(cli._Task(label=str(path), first_line=line, lines=lines,
                                   format="native",
                                   options=dict.fromkeys(
                                       field.name for field in fields(CycleOptions)),
                                   strict=False, anywhere=True))
            line += len(lines)
    return tasks


def _chunks_read(tasks: list[Any], reader: Callable[[Any], Any]) -> tuple[float, bytes]:
    started = time.perf_counter()
    with cli.collector_paused():
        output = b"".join(reader(task).output for task in tasks)
    return time.perf_counter() - started, output


def _in_core(task: Any) -> Any:
    done = cli._scan_chunk_in_core(task)
    if done is None:
        raise AssertionError(f"the core declined the chunk at line {task.first_line}")
    return done


_PYTHON_READING: Final = (
    "import sys\n"
    "from vthread import cli\n"
    "cli._core_may_read = lambda task: False\n"
    "raise SystemExit(cli.main(sys.argv[1:]))\n")


def _process(code: Path, path: Path, anywhere: bool, jobs: int, core: bool) -> float:
    argv = ["scan", str(path), "-q", "-o", os.devnull, "--jobs", str(jobs)]
    argv += ["--anywhere"] if anywhere else []
    command = ([sys.executable, "-m", "vthread", *argv] if core
               else [sys.executable, "-c", _PYTHON_READING, *argv])
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=code, env=subprocess_env())
    return time.perf_counter() - started


def _file_rounds(threads: list[Any], rounds: int) -> dict[str, Any]:
    """The ``"file"`` part of the report (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="vthread-anywhere-") as scratch:
        path = Path(scratch) / "threads.jsonl"
        size = write_jsonl(path, threads)
        code, digest = snapshot_code(Path(scratch))
        tasks = _chunk_tasks(path)
        _, by_core = _chunks_read(tasks, _in_core)
        _, by_python = _chunks_read(tasks, cli._scan_chunk_in_python)
        if by_core != by_python:
            raise AssertionError("the core's reading wrote other records than Python's")
        variants: dict[str, Callable[[], float]] = {
            "chunks_core": lambda: _chunks_read(tasks, _in_core)[0],
            "chunks_python": lambda: _chunks_read(tasks, cli._scan_chunk_in_python)[0],
        }
        for jobs in (1, 2):
            for anywhere in (False, True):
                for core in (True, False) if anywhere else (True,):
                    name = (f"process_{'anywhere' if anywhere else 'default'}"
                            f"_{'core' if core else 'python'}_jobs{jobs}")
                    variants[name] = (lambda a=anywhere, j=jobs, c=core:
                                      _process(code, path, a, j, c))
        for variant in variants.values():
            variant()  # warm-up
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, variant in variants.items():
                times[name].append(variant())
    summary = {name: {"min_s": min(t), "median_s": statistics.median(t), "rounds_s": t}
               for name, t in times.items()}

    def ratio(slow: str, fast: str) -> float:
        return summary[slow]["median_s"] / summary[fast]["median_s"]

    return {
        "jsonl_bytes": size,
        "chunks": len(tasks),
        "code_digest": digest,
        "results": summary,
        "ratios_of_medians": {
            "chunks_python_over_core": ratio("chunks_python", "chunks_core"),
            **{f"process_python_over_core_jobs{j}": ratio(
                f"process_anywhere_python_jobs{j}", f"process_anywhere_core_jobs{j}")
               for j in (1, 2)},
            **{f"process_anywhere_over_default_jobs{j}": ratio(
                f"process_anywhere_core_jobs{j}", f"process_default_core_jobs{j}")
               for j in (1, 2)},
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--no-file", action="store_true",
                        help="only the in-process scan, not vthread scan FILE --anywhere")
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
    if not options.no_file:
        report["file"] = _file_rounds(threads, options.rounds)
        about["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    options.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"default {summary['default']['min_s']:.3f} s, anywhere "
          f"{summary['anywhere']['min_s']:.3f} s (min of {options.rounds}); ratio "
          f"{report['ratio_min']:.2f} (median {report['ratio_median']:.2f}); "
          f"load {loads[-1]}")
    if "file" in report:
        file = report["file"]
        for name, figures in file["results"].items():
            print(f"  {name:<40} {figures['median_s']:.3f} s median, "
                  f"{figures['min_s']:.3f} s min")
        for name, value in file["ratios_of_medians"].items():
            print(f"  {name:<40} {value:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
