"""Two source trees of vthread side by side on ``vthread scan FILE``, run in process.

Each build is a directory put first on ``PYTHONPATH`` (a clone with its compiled core
beside its ``vthread/``: ``cp target/release/lib_core.so vthread/_core.cpython-...so``). A
round runs one fresh interpreter per build, the order alternating by round; the interpreter
scans a small file once (imports, first calls), then each ``--file`` once (or
``--repeats`` times, the scan of least CPU time kept: the first scan of a large file in a
process also pays for the memory the process grows into) with
``vthread.cli.main(["scan", FILE, "--quiet", "--output", OUT, *OPTIONS])`` (``OPTIONS``:
each ``--scan-option``, such as ``--anywhere``), and reports the CPU time (user and
kernel, all threads) and the minor page faults of each scan, a digest of its records, and
the interpreter's peak resident memory (of all its scans: give one ``--file`` to read it
as one file's). The children read compiled bytecode from a scratch directory, written by
a first run of each build, as an installed package's modules are read. The builds must
write the same records, or they do not answer alike. Each
round's ratio is taken within the round (before / after), so drift of the machine moves
both sides alike; the summary gives the median of those ratios and how many rounds were
faster.

    python -m benchmarks.cli_in_process_ab before=/tmp/old after=. \\
        --file /tmp/healthy-1000000.jsonl --rounds 7 --out results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_CHILD = r"""
import gc, hashlib, json, os, resource, sys, tempfile
from vthread import cli
repeats, warm, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
options = json.loads(os.environ["VTHREAD_AB_OPTIONS"])
out = os.path.join(tempfile.mkdtemp(), "records.jsonl")
cli.main(["scan", warm, "--quiet", "--output", os.devnull])
found = {}
for path in files:
    for _ in range(repeats):
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF)
        status = cli.main(["scan", path, "--quiet", "--output", out, *options])
        after = resource.getrusage(resource.RUSAGE_SELF)
        digest = hashlib.sha256(open(out, "rb").read()).hexdigest()[:16]
        run = [after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
               after.ru_minflt - before.ru_minflt, status, digest]
        if path not in found or run[0] + run[1] < found[path][0] + found[path][1]:
            found[path] = run
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({path: [*run, peak] for path, run in found.items()}))
"""


def build_argument(text: str) -> tuple[str, Path]:
    name, _, path = text.partition("=")
    if not path:
        raise argparse.ArgumentTypeError(f"expected NAME=DIRECTORY, got {text!r}")
    return name, Path(path).resolve()


def main(argv: list[str] | None = None) -> int:
    """Run the rounds, print (and write to ``--out``) the summary; 1 when records differ."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli_in_process_ab",
                                     description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("builds", nargs=2, type=build_argument, metavar="NAME=DIRECTORY")
    parser.add_argument("--file", action="append", required=True, type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=1,
                        help="scans of each file per interpreter; the least CPU time kept")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--scan-option", action="append", default=[],
                        help="an option given to every scan (repeat for more)")
    args = parser.parse_args(argv)
    files = [str(path.resolve()) for path in args.file]
    warm = Path(os.environ.get("TMPDIR", "/tmp")) / "vthread-ab-warm.jsonl"
    warm.write_text('[{"type":"user","text":"hi"}]\n')
    builds: list[tuple[str, Path]] = args.builds
    runs: dict[str, dict[str, list[list[Any]]]] = {
        name: {path: [] for path in files} for name, _ in builds}
    # The children read compiled bytecode, as an installed package's do, written to a
    # scratch directory by a first run of each build: under PYTHONDONTWRITEBYTECODE (this
    # machine sets it) each compiled anew the modules a scan imports lazily (a chat format's
    # readers), inside the scan measured, and a build whose modules had grown looked 5 %
    # slower on OpenAI chat for that alone.
    scratch = tempfile.mkdtemp(prefix="vthread-ab-bytecode-")
    for round_ in range(-1, args.rounds):
        for name, directory in builds if round_ % 2 == 0 else builds[::-1]:
            env = {**os.environ, "PYTHONPATH": str(directory), "PYTHONPYCACHEPREFIX": scratch,
                   "VTHREAD_AB_OPTIONS": json.dumps(args.scan_option)}
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            done = subprocess.run([sys.executable, "-c", _CHILD, str(args.repeats), str(warm),
                                   *files], env=env,
                                  cwd=warm.parent, capture_output=True, text=True, check=True)
            if round_ < 0:
                continue  # (the run that writes the bytecode)
            for path, run in json.loads(done.stdout).items():
                runs[name][path].append(run)
    (first, _), (second, _) = builds
    summary: dict[str, Any] = {}
    same = True
    for path in files:
        row: dict[str, Any] = {}
        cpu: dict[str, list[float]] = {}
        for name, _ in builds:
            taken = runs[name][path]
            cpu[name] = [user + kernel for user, kernel, *_ in taken]
            row[name] = {
                "cpu_s_median": round(statistics.median(cpu[name]), 4),
                "cpu_s_min": round(min(cpu[name]), 4),
                "user_s_min": round(min(run[0] for run in taken), 4),
                "faults_median": statistics.median(run[2] for run in taken),
                "peak_rss_kb_median": statistics.median(run[5] for run in taken),
                "records": sorted({run[4] for run in taken}),
                "status": sorted({run[3] for run in taken}),
            }
        ratios = [a / b for a, b in zip(cpu[first], cpu[second], strict=True)]
        row[f"{first}/{second}_median_of_rounds"] = round(statistics.median(ratios), 3)
        row[f"rounds_{second}_faster"] = sum(ratio > 1 for ratio in ratios)
        row["same_records"] = row[first]["records"] == row[second]["records"]
        same = same and row["same_records"]
        summary[Path(path).name] = row
    report = {
        "method": "vthread.cli.main in process, one fresh interpreter per build and round, "
                  "order alternating; CPU = user + kernel time of the process; of "
                  f"{args.repeats} scan(s) of a file per interpreter, the least CPU time",
        "builds": {name: str(directory) for name, directory in builds},
        "rounds": args.rounds,
        "scan_options": args.scan_option,
        "machine": {"processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "python": platform.python_version()},
        "files": {Path(path).name: Path(path).stat().st_size for path in files},
        "summary": summary,
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
