"""Peak memory and time of ``vthread scan`` on JSON documents of runs, read a block at a time.

The claim under test: a ``.json`` document that is an array of runs is split by the core as
its blocks arrive (``_core.DocumentSplitter``), so its peak resident memory stays flat in the
document's size, as a JSONL file's does; before session 11 the document's bytes were read
whole first. The script writes realistic runs (``benchmarks.workload``'s pool of distinct
threads cycled under fresh ids, as ``benchmarks.cli_memory`` does) as one JSON document of
``--small`` runs and one of ``--threads`` runs, and the large one's runs as JSONL, then runs,
each in its own subprocess under ``/usr/bin/time`` and round-robin,

    python -m vthread scan FILE --quiet --output RECORDS

on each document read a block at a time (today's reading), on each document read at once (the
same build with ``cli.READ_BYTES`` past the file's size: the bytes whole in memory, as
before), and on the JSONL file (the baseline), reporting each run's peak RSS (that child
alone) and wall time. Records are checked byte for byte equal between the readings.

Usage: ``python -m benchmarks.document_memory [--threads 100000] [--small 10000] [--runs 3]``.
Writes ``benchmarks/results/document_memory.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from benchmarks.cli_memory import _pool
from benchmarks.scan_report import machine

ROOT: Final = Path(__file__).resolve().parent.parent
RESULT: Final = ROOT / "benchmarks" / "results" / "document_memory.json"


def write_document(path: Path, threads: int, pool: list[bytes], *, jsonl: bool) -> int:
    """``threads`` runs ``{"id": "m0000001", "messages": [...]}`` cycling the pool, as one
    JSON array (``jsonl`` False) or one per line; bytes written."""
    size = 0
    with path.open("wb", buffering=8 << 20) as handle:
        if not jsonl:
            handle.write(b"[\n")
        for index in range(threads):
            run = b'{"id":"m%07d","messages":%s}' % (index + 1, pool[index % len(pool)])
            end = b"\n" if jsonl else (b",\n" if index + 1 < threads else b"\n]\n")
            handle.write(run + end)
            size += len(run) + len(end)
    return size


def at_once(argv: list[str]) -> int:
    """``vthread scan`` with a document read in one block (its bytes whole in memory)."""
    from vthread import cli

    cli.READ_BYTES = Path(argv[1]).stat().st_size + 1  # type: ignore[misc]
    return cli.main(argv)


def measure(command: list[str], output: Path) -> dict[str, float]:
    """Run ``command`` (records to ``output``) under ``/usr/bin/time``: peak RSS (MB) and
    wall time of that child alone (``wait4`` here would count this process's pages, which a
    forked child shares until it executes)."""
    done = subprocess.run(["/usr/bin/time", "-f", "%M %e", *command, "--output", str(output)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          check=True)
    peak_kib, wall = done.stderr.decode().split()[-2:]
    return {"peak_rss_mb": int(peak_kib) / 1024, "wall_s": float(wall)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.document_memory")
    parser.add_argument("--threads", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--pool", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--at-once", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args(argv)
    if args.at_once:
        return at_once(args.at_once)
    scratch = Path(tempfile.mkdtemp(prefix="vthread-documents-"))
    pool = _pool(args.pool)
    files = {"small document": scratch / "small.json", "large document": scratch / "large.json",
             "large JSONL": scratch / "large.jsonl"}
    sizes = {
        "small document": write_document(files["small document"], args.small, pool,
                                         jsonl=False),
        "large document": write_document(files["large document"], args.threads, pool,
                                         jsonl=False),
        "large JSONL": write_document(files["large JSONL"], args.threads, pool, jsonl=True),
    }
    scan = [sys.executable, "-m", "vthread", "scan"]
    whole = [sys.executable, "-m", "benchmarks.document_memory", "--at-once", "scan"]
    commands = {
        "small document, by blocks": [*scan, str(files["small document"]), "-q"],
        "small document, at once": [*whole, str(files["small document"]), "-q"],
        "large document, by blocks": [*scan, str(files["large document"]), "-q"],
        "large document, at once": [*whole, str(files["large document"]), "-q"],
        "large JSONL": [*scan, str(files["large JSONL"]), "-q"],
    }
    env = machine()
    figures: dict[str, list[dict[str, float]]] = {label: [] for label in commands}
    digests: dict[str, set[str]] = {label: set() for label in commands}
    output = scratch / "records.jsonl"
    for _ in range(args.runs):
        for label, command in commands.items():
            figures[label].append(measure(command, output))
            digests[label].add(hashlib.sha256(output.read_bytes().replace(
                b".jsonl", b".json")).hexdigest())
    if len(digests["small document, by blocks"] | digests["small document, at once"]) != 1:
        raise AssertionError("the small document's two readings wrote different records")
    large = (digests["large document, by blocks"] | digests["large document, at once"]
             | digests["large JSONL"])
    if len(large) != 1:
        raise AssertionError("the large document's readings wrote different records")
    result: dict[str, Any] = {
        "machine": env | {"load_average_end": list(os.getloadavg())},
        "workload": f"benchmarks.workload pool of {args.pool} threads (seed 7) cycled under "
                    f"fresh ids: {args.small:,} and {args.threads:,} runs",
        "bytes": sizes,
        "command": "python -m vthread scan FILE -q --output FILE (subprocess, round-robin); "
                   "'at once': cli.READ_BYTES set past the file's size",
        "runs": args.runs,
        "figures": figures,
        "median": {label: {key: round(statistics.median(f[key] for f in runs), 3)
                           for key in ("peak_rss_mb", "wall_s")}
                   for label, runs in figures.items()},
    }
    for label, median in result["median"].items():
        print(f"{label:<28} {median['peak_rss_mb']:8.1f} MB  {median['wall_s']:6.2f} s")
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for path in [*files.values(), output]:
        path.unlink()
    scratch.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
