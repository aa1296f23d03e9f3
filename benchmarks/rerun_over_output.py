"""What ``vthread scan FILE -o OUT`` costs when OUT holds an earlier run's records.

Writing over an existing output, the scan first tells what the file holds from its head
(vthread writes over no file it did not write), which imports the report's module. Whole
processes (``python -m vthread scan FILE -q -o OUT``), CPU time of the child, rounds with
the order alternating: OUT removed before the run (fresh), and OUT left from the run
before (over). Medians of the rounds; the records must be the same.

    python -m benchmarks.rerun_over_output --file vthread/samples/threads.jsonl \\
        --rounds 9 --out results.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def _child_cpu(file: Path, out: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "vthread", "scan", str(file), "-q", "-o", str(out)],
                   check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rerun_over_output",
                                     description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--file", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args(argv)
    spent: dict[str, list[float]] = {"fresh": [], "over": []}
    digests: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "records.jsonl"
        _child_cpu(options.file, out)  # (bytecode compiled, the file in the page cache)
        for round_ in range(options.rounds):
            for way in (("fresh", "over") if round_ % 2 == 0 else ("over", "fresh")):
                if way == "fresh":
                    out.unlink(missing_ok=True)
                elif not out.exists():
                    _child_cpu(options.file, out)
                spent[way].append(_child_cpu(options.file, out))
                digests.add(hashlib.sha256(out.read_bytes()).hexdigest()[:16])
    fresh, over = (statistics.median(spent[way]) for way in ("fresh", "over"))
    result = {
        "method": "whole processes, CPU time of the child, medians of the rounds, order "
                  "alternating",
        "file": options.file.name, "bytes": os.path.getsize(options.file),
        "rounds": options.rounds,
        "machine": {"processor": platform.processor() or platform.machine(),
                    "python": platform.python_version()},
        "cpu_s_median": {"fresh": round(fresh, 4), "over": round(over, 4)},
        "over_minus_fresh_ms": round((over - fresh) * 1000, 1),
        "same_records": len(digests) == 1,
    }
    text = json.dumps(result, indent=1)
    print(text)
    if options.out is not None:
        options.out.write_text(text + "\n")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
