"""``vthread scan DIR`` over a directory of many small files, against the same threads in one
file, for one or more source trees side by side, as whole processes.

An evaluation often keeps each run (or each few) in a file of its own, so a scan of a
directory pays for every file what a scan of one file pays once: opening it, telling its
format, reading and judging its few lines. This measures that cost per file: the wall
time of ``python -m vthread scan DIR -q -o /dev/null --jobs N`` less that of the same
threads as one file, divided by the number of files. Each build is a directory put first on
``PYTHONPATH`` (a clone with its compiled core beside its ``vthread/``); a round runs every
build on every input once, the builds' order alternating by round, and the records of every
build must be the same.

    python -m benchmarks.many_files before=/tmp/old after=. --per-file 3 --count 6000 \\
        --rounds 9 --out benchmarks/results/many-files.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _build(text: str) -> tuple[str, Path]:
    name, _, path = text.partition("=")
    if not path:
        raise argparse.ArgumentTypeError(f"expected NAME=DIRECTORY, got {text!r}")
    return name, Path(path).resolve()


def _scan(build: Path, target: Path, jobs: int, out: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(build)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vthread", "scan", str(target), "-q", "-o",
                    str(out), "--jobs", str(jobs)], env=env, cwd=build, check=True)
    seconds = time.perf_counter() - started
    return seconds, hashlib.sha256(out.read_bytes()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_files",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("builds", nargs="+", type=_build, metavar="NAME=DIRECTORY")
    parser.add_argument("--count", type=int, default=6000, help="threads in all")
    parser.add_argument("--per-file", type=int, default=3, help="threads per file")
    parser.add_argument("--jobs", type=int, action="append", help="--jobs N (repeatable)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    jobs = args.jobs or [1]
    work = Path(tempfile.mkdtemp(prefix="vthread-many-files-"))
    folder, single = work / "runs", work / "runs.jsonl"
    make = [sys.executable, "-m", "benchmarks.workload", "--count", str(args.count)]
    subprocess.run([*make, "--per-file", str(args.per_file), "--out", str(folder)], check=True)
    subprocess.run([*make, "--out", str(single)], check=True)
    files = len(list(folder.iterdir()))
    inputs = {"directory": folder, "one file": single}
    timings: dict[str, dict[str, list[float]]] = {}
    digests: dict[str, set[str]] = {}
    for round_ in range(args.rounds):
        order = args.builds if round_ % 2 == 0 else args.builds[::-1]
        for name, build in order:
            for what, target in inputs.items():
                for count in jobs:
                    key = f"{what}, --jobs {count}"
                    taken, digest = _scan(build, target, count, work / f"{name}.jsonl")
                    timings.setdefault(name, {}).setdefault(key, []).append(taken)
                    digests.setdefault(what, set()).add(digest)
    same = all(len(found) == 1 for found in digests.values())
    summary: dict[str, Any] = {}
    for name, _ in args.builds:
        medians = {key: statistics.median(values) for key, values in timings[name].items()}
        summary[name] = {
            "median_wall_s": {key: round(value, 4) for key, value in medians.items()},
            "per_file_ms": {
                f"--jobs {count}": round(1000 * (medians[f"directory, --jobs {count}"]
                                                 - medians[f"one file, --jobs {count}"])
                                         / files, 4)
                for count in jobs},
        }
    first = args.builds[0][0]
    for name, _ in args.builds[1:]:
        summary[f"{first}/{name}"] = {
            key: round(statistics.median(
                before / after for before, after in zip(timings[first][key],
                                                        timings[name][key], strict=True)), 3)
            for key in timings[name]}
    result = {
        "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "workload": f"{args.count:,} threads of benchmarks.workload (seed 0), "
                    f"{args.per_file} per file: {files:,} files; and all of them in one file",
        "builds": {name: str(path) for name, path in args.builds},
        "rounds": args.rounds,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                   f"Python {platform.python_version()}, {platform.platform()}",
        "same_records": same,
        "summary": summary,
        "seconds": timings,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(json.dumps({"same_records": same, "summary": summary}, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
