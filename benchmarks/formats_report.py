"""``vthread scan`` on OpenAI and Anthropic files, before and after the core read them.

Run from the repository root, with two builds of the package to compare (each a directory
holding an installed ``vthread/``, compiled core included, e.g. an unpacked release wheel)::

    maturin build --release -o /tmp/wheels-after && unzip -q /tmp/wheels-after/*.whl -d /tmp/after
    python -m benchmarks.formats_report --before /tmp/before --after /tmp/after

What it measures: ``python -m vthread scan FILE --output OUT --quiet --jobs N`` in a
subprocess (interpreter start and imports included), wall and CPU seconds (the child's user +
system time, its worker processes included), for each build, each ``--jobs`` in ``--jobs``
and each input:

* the benchmark workload (:mod:`benchmarks.workload`, 10,000 threads, seed 0) written as
  native lines, as OpenAI chat messages and as Anthropic messages (the workload's own
  converters, :func:`~benchmarks.workload.to_openai` and :func:`~benchmarks.workload.to_anthropic`);
* the published runs in ``../shared/realdata`` that are OpenAI chat: tau-bench's airline
  runs (one JSON document), format detected as a user would leave it. The other published
  runs (SWE-agent, mini-swe-agent) are scanned once by each build, as detected and with
  ``--format openai``, and only their records compared.

Runs go round-robin (one of each variant per round), the load average recorded every
round. Before anything is timed, each input is scanned once by each build and the records
compared: the report says whether they are byte for byte the same (they must be).

Results go to ``benchmarks/results/formats_from_bytes.json``. Nothing here is imported by
``vthread``.
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks.realdata import REALDATA
from benchmarks.scan_report import machine
from benchmarks.workload import generate_thread, to_anthropic, to_openai, write_jsonl

ROOT: Final = Path(__file__).resolve().parent.parent
RESULTS: Final = ROOT / "benchmarks" / "results" / "formats_from_bytes.json"
THREADS: Final = 10_000
SEED: Final = 0
CONVERTERS: Final[dict[str, Callable[[Any], Any]]] = {
    "native": list, "openai": to_openai, "anthropic": to_anthropic}

HYPOTHESES: Final = {
    "H1": "OpenAI workload, --jobs 1: the core path takes at most a third of the time it "
          "took (median wall), because Python's adapter pass (a dict per native message) and "
          "the scan over those dicts dominated it",
    "H2": "Anthropic workload, --jobs 1: the same, at most a third",
    "H3": "after, an OpenAI or Anthropic file takes at most twice the time the same threads "
          "take as native lines (median wall, --jobs 1): translating adds one write and one "
          "more tape parse of each line",
    "H4": "default --jobs (every CPU, 2 here): still at least twice as fast, though the "
          "Python path then used two processes and the core path one reader thread",
    "H5": "the records are byte for byte the same before and after, on every input",
}
"""Written before the first measured run (this module's first commit)."""


def workload_file(directory: Path, format_: str) -> tuple[Path, int]:
    """The workload in ``format_`` as JSONL in ``directory``; (path, bytes)."""
    path = directory / f"workload-{format_}.jsonl"
    convert = CONVERTERS[format_]

    def threads() -> Iterator[Any]:
        for index in range(THREADS):
            yield convert(generate_thread(index, seed=SEED).messages)

    return path, write_jsonl(path, threads())


def checked_only() -> list[tuple[str, Path, list[str]]]:
    """The other published runs, read as OpenAI chat (which the core now translates) and as
    detected: (name, path, extra arguments), compared, not timed."""
    found: list[tuple[str, Path, list[str]]] = []
    if REALDATA is None:
        return found
    for path in sorted((REALDATA / "swe-agent").glob("*.traj")):
        found.append((f"swe-agent/{path.name} --format openai", path, ["--format", "openai"]))
        found.append((f"swe-agent/{path.name}", path, []))
    mini = REALDATA / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz"
    if mini.exists():
        found.append((f"{mini.name} --format openai", mini, ["--format", "openai"]))
        found.append((mini.name, mini, []))
    return found


def argv(path: Path, output: Path, jobs: int, extra: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "vthread", "scan", str(path), "--output", str(output),
            "--quiet", "--jobs", str(jobs), *extra]


def run(code: Path, path: Path, output: Path, jobs: int,
        extra: Sequence[str] = ()) -> tuple[float, float]:
    """One CLI run of the build in ``code`` (``python -m`` puts the working directory first
    on ``sys.path``): (wall seconds, CPU seconds of the child and its workers)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv(path, output, jobs, extra), cwd=code, capture_output=True,
                          check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{code}: exit {done.returncode}: {done.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {"min": round(min(values), 3), "median": round(statistics.median(values), 3)}


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.formats_report",
                                     description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--before", type=Path, required=True, help="the build before")
    parser.add_argument("--after", type=Path, required=True, help="the build after")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each (default 3)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 0],
                        help="--jobs values to run the CLI with (default 1 0; 0: every CPU)")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"default {RESULTS}")
    parser.add_argument("--label", nargs=2, default=["before", "after"], metavar=("B", "A"),
                        help="what the two builds are (commits), for the report")
    args = parser.parse_args(arguments)
    scratch = Path(tempfile.mkdtemp(prefix="vthread-formats-report-"))
    env = machine()
    print(f"load average at start: {env['load_average_start']}", file=sys.stderr)
    inputs: dict[str, dict[str, Any]] = {}
    for format_ in CONVERTERS:
        path, size = workload_file(scratch, format_)
        inputs[f"workload_{format_}"] = {"path": path, "bytes": size, "format": format_}
    tau = REALDATA / "tau-bench_gpt-4o-airline.json" if REALDATA is not None else None
    if tau is not None and tau.exists():
        inputs["tau_bench_airline"] = {"path": tau, "bytes": tau.stat().st_size,
                                       "format": "openai (detected)"}
    builds = {"before": args.before.resolve(), "after": args.after.resolve()}
    for code in builds.values():
        # This machine sets PYTHONDONTWRITEBYTECODE: without bytecode written once, as pip
        # writes it at install, every run would compile the package first.
        compileall.compile_dir(code / "vthread", quiet=1)

    identical: dict[str, bool] = {}
    for name, path, extra in checked_only():
        outputs = {}
        for build, code in builds.items():
            out = scratch / f"{build}.jsonl"
            run(code, path, out, 1, extra)
            outputs[build] = digest(out)
        identical[name] = outputs["before"] == outputs["after"]
        print(f"{name}: records identical: {identical[name]}", file=sys.stderr)
    for name, entry in inputs.items():
        for jobs in args.jobs:
            outputs = {}
            for build, code in builds.items():
                out = scratch / f"{name}-{build}-{jobs}.jsonl"
                run(code, entry["path"], out, jobs)
                outputs[build] = digest(out)
                out.unlink()
            identical[f"{name} --jobs {jobs}"] = outputs["before"] == outputs["after"]
            print(f"{name} --jobs {jobs}: records identical: "
                  f"{identical[f'{name} --jobs {jobs}']}", file=sys.stderr)

    times: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    loads: list[list[float]] = []
    for round_ in range(args.runs):
        loads.append([round(x, 2) for x in os.getloadavg()])
        print(f"round {round_ + 1}/{args.runs}, load {loads[-1]}", file=sys.stderr)
        for name, entry in inputs.items():
            for jobs in args.jobs:
                for build, code in builds.items():
                    taken = run(code, entry["path"], Path(os.devnull), jobs)
                    times.setdefault((name, build, jobs), []).append(taken)

    rows: dict[str, Any] = {}
    for name in inputs:
        for jobs in args.jobs:
            row: dict[str, Any] = {"input": name, "jobs": jobs}
            for build in builds:
                measured = times[(name, build, jobs)]
                row[build] = {"wall_s": summary([w for w, _ in measured]),
                              "cpu_s": summary([c for _, c in measured]),
                              "runs": [[round(w, 3), round(c, 3)] for w, c in measured]}
            row["speedup"] = {
                measure: {stat: round(row["before"][measure][stat] / row["after"][measure][stat],
                                      2) for stat in ("min", "median")}
                for measure in ("wall_s", "cpu_s")}
            rows[f"{name} --jobs {jobs}"] = row
    report = {
        "title": "vthread scan on OpenAI and Anthropic files: Python's adapters against the "
                 "core's translation",
        "machine": env | {"load_average_end": list(os.getloadavg()),
                          "load_average_per_round": loads,
                          "note": "shared machine (2 cores): other engineers run tests "
                                  "meanwhile"},
        "builds": {"before": args.label[0], "after": args.label[1]},
        "workload": {"generator": "benchmarks.workload.generate_thread", "seed": SEED,
                     "threads": THREADS,
                     "inputs": {name: {"bytes": e["bytes"], "format": e["format"]}
                                for name, e in inputs.items()}},
        "method": {"command": " ".join(argv(Path("FILE"), Path("/dev/null"), 1))
                   .replace(sys.executable, "python"),
                   "statistic": "min and median of the runs; speedup is before/after",
                   "runs": args.runs, "order": "round-robin, one run of each per round",
                   "cpu": "user + system seconds of the CLI process and its workers",
                   "bytecode": "each build's package compiled once before the runs"},
        "hypotheses": HYPOTHESES,
        "records_identical": identical,
        "results": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    for key, row in rows.items():
        print(f"{key:<36} before {row['before']['wall_s']['median']:7.2f} s  after "
              f"{row['after']['wall_s']['median']:7.2f} s  "
              f"{row['speedup']['wall_s']['median']:5.2f}x wall, "
              f"{row['speedup']['cpu_s']['median']:5.2f}x CPU")
    shutil.rmtree(scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
