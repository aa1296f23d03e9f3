"""Two source trees of vthread side by side on ``vthread report`` of a records file.

Each build is a directory put first on ``PYTHONPATH`` (a clone with its compiled core
beside its ``vthread/``). A round runs ``vthread report FILE -o PAGE`` once per build, as a
whole process, the order alternating by round, and takes the CPU time (user and kernel)
of the child. The children read compiled bytecode from a scratch directory per build,
written by a first run of each before the rounds, as an installed package's modules are
read. Each round's ratio is taken within the round (before / after), so drift of the
machine moves both sides alike; the summary gives the medians, the median of those
ratios and how many rounds the second build was faster. The two pages must be the same
but for the time they were made, or the builds do not answer alike.

    python -m benchmarks.report_ab before=/tmp/old after=. --file records.jsonl \\
        --rounds 7 --out results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.cli_in_process_ab import build_argument


def _page_without_times(page: bytes) -> bytes:
    """A page with what differs from run to run (the time it was made) taken out."""
    return re.sub(rb"\d{4}-\d\d-\d\dT[0-9:.+Z-]+", b"", page)


def _report(directory: Path, records: Path, page: Path, scratch: Path) -> float:
    """The CPU time of one ``vthread report`` of ``records`` by the build at ``directory``."""
    env = {**os.environ, "PYTHONPATH": str(directory),
           "PYTHONPYCACHEPREFIX": str(scratch / directory.name)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "vthread", "report", str(records), "-o", str(page)],
                   env=env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    """Run the rounds, print (and write to ``--out``) the summary; 1 when the pages differ."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report_ab",
                                     description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("builds", nargs=2, type=build_argument, metavar="NAME=DIRECTORY")
    parser.add_argument("--file", required=True, type=Path, help="a records file")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    (first, first_dir), (second, second_dir) = args.builds
    builds = {first: first_dir, second: second_dir}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        pages = {name: scratch / f"{name}.html" for name in builds}
        for name, directory in builds.items():
            _report(directory, args.file, pages[name], scratch)  # (bytecode written)
        same = len({_page_without_times(page.read_bytes()) for page in pages.values()}) == 1
        times: dict[str, list[float]] = {name: [] for name in builds}
        ratios = []
        for round_ in range(args.rounds):
            order = list(builds) if round_ % 2 == 0 else list(builds)[::-1]
            took = {name: _report(builds[name], args.file, pages[name], scratch)
                    for name in order}
            for name, seconds in took.items():
                times[name].append(seconds)
            ratios.append(took[first] / took[second])
    summary: dict[str, Any] = {
        "method": "vthread report FILE -o PAGE as a whole process per build and round, order "
                  "alternating; CPU = user + kernel time of the child",
        "builds": {name: str(directory) for name, directory in builds.items()},
        "file": {str(args.file): args.file.stat().st_size},
        "rounds": args.rounds,
        "machine": {"processor": platform.machine(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "cpu_s": times,
        "cpu_s_median": {name: round(statistics.median(seconds), 4)
                         for name, seconds in times.items()},
        f"{first}/{second}_median_of_rounds": round(statistics.median(ratios), 4),
        f"rounds_{second}_faster": sum(ratio > 1 for ratio in ratios),
        "same_pages": same,
    }
    text = json.dumps(summary, indent=1)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
