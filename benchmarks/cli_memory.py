"""Peak memory of ``vthread scan`` on a JSONL file far larger than one chunk.

The claim under test: the CLI processes its input in chunks, so its peak resident memory
depends on the chunk size, not on the input size. The script writes a large JSONL file of
realistic threads (``benchmarks.workload``; a pool of distinct generated threads repeated
under fresh ids, because generating a million threads one by one would take longer than
scanning them), then runs, each in its own subprocess,

    python -m vthread scan FILE --output /dev/null --quiet

on the first ``--small`` lines and on the whole file, and reports each run's peak RSS (that
child alone, :mod:`benchmarks.child_peak`) and wall time. Flat memory = the two peaks match.

Usage: ``python -m benchmarks.cli_memory [--threads 1000000] [--jobs 1] [--nice 19]``. Writes
``benchmarks/results/cli_memory.json``. Needs free disk for the file (about 9.7 KB a
thread); with less, it scans fewer threads and says so in the result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.child_peak import run_child

ROOT: Final = Path(__file__).resolve().parent.parent
RESULT: Final = ROOT / "benchmarks" / "results" / "cli_memory.json"
POOL_SEED: Final = 7
DISK_MARGIN: Final = 2 << 30  # bytes left free on the temp disk


def _pool(count: int) -> list[bytes]:
    """``count`` distinct realistic threads, each as its JSON message array."""
    from benchmarks.workload import generate_threads

    return [json.dumps(t, ensure_ascii=False, separators=(",", ":")).encode()
            for t in generate_threads(count, seed=POOL_SEED)]


def write_file(path: Path, threads: int, pool: list[bytes]) -> int:
    """``threads`` lines ``{"id": "m0000001", "messages": [...]}`` cycling the pool; bytes."""
    size = 0
    with path.open("wb", buffering=8 << 20) as handle:
        for index in range(threads):
            line = b'{"id":"m%07d","messages":%s}\n' % (index + 1, pool[index % len(pool)])
            handle.write(line)
            size += len(line)
    return size


def measure(path: Path, jobs: int, nice: int) -> dict[str, Any]:
    """Run ``vthread scan`` on ``path`` in a child: its peak RSS (MB), CPU and wall time.

    CPU seconds (user + system, the child and its workers) are the figure to read on a
    shared machine; wall time includes waiting for the CPU.
    """
    command = [sys.executable, "-m", "vthread", "scan", str(path), "--output", os.devnull,
               "--quiet", "--jobs", str(jobs)]

    def lowered() -> None:
        os.nice(nice)

    done = run_child(command, env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=lowered)
    return {
        "command": " ".join(["python", "-m", "vthread", *command[3:]]),
        "exit_status": done.exit_status,
        "peak_rss_mb": round(done.peak_kib / 1024, 1),
        "cpu_s": round(done.cpu_s, 2),
        "wall_s": round(done.wall_s, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cli_memory",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=10_000,
                        help="threads in the comparison run (default 10000)")
    parser.add_argument("--pool", type=int, default=2_000, help="distinct threads (2000)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the file goes")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--nice", type=int, default=0,
                        help="run the scans at this niceness (yield to other work)")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)

    pool = _pool(args.pool)
    line_bytes = sum(map(len, pool)) / len(pool) + 30
    free = shutil.disk_usage(args.dir).free - DISK_MARGIN
    threads = min(args.threads, int(free / line_bytes))
    note = None
    if threads < args.threads:
        note = (f"reduced from {args.threads:,} threads: {free / 2**30:.1f} GiB free in "
                f"{args.dir}")
        print(f"cli_memory: {note}", file=sys.stderr)

    folder = Path(tempfile.mkdtemp(prefix="vthread-cli-memory-", dir=args.dir))
    try:
        started = time.perf_counter()
        small_path, big_path = folder / "small.jsonl", folder / "big.jsonl"
        small_bytes = write_file(small_path, min(args.small, threads), pool)
        big_bytes = write_file(big_path, threads, pool)
        written = time.perf_counter() - started
        print(f"cli_memory: wrote {threads:,} threads, {big_bytes / 2**30:.2f} GiB, "
              f"in {written:.0f} s", file=sys.stderr)
        small = measure(small_path, args.jobs, args.nice)
        big = measure(big_path, args.jobs, args.nice)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    import numpy

    import vthread.cli

    try:
        import orjson

        orjson_version: str | None = orjson.__version__
    except ImportError:
        orjson_version = None
    result = {
        "what": "peak RSS of `vthread scan FILE --output /dev/null --quiet`, small vs large input",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine()},
        "versions": {"python": platform.python_version(), "numpy": numpy.__version__,
                     "orjson": orjson_version},
        "workload": {"generator": "benchmarks.workload.generate_threads", "seed": POOL_SEED,
                     "distinct_threads": args.pool, "mean_line_bytes": round(line_bytes)},
        "chunk": {"lines": vthread.cli.CHUNK_LINES, "bytes": vthread.cli.CHUNK_BYTES},
        "jobs": args.jobs,
        "small": {"threads": min(args.small, threads), "bytes": small_bytes, **small},
        "large": {"threads": threads, "bytes": big_bytes, **big,
                  "threads_per_cpu_s": round(threads / big["cpu_s"]),
                  "mb_per_cpu_s": round(big_bytes / 2**20 / big["cpu_s"], 1)},
        "nice": args.nice,
        "note": note,
        "date": time.strftime("%Y-%m-%d"),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if small["exit_status"] == big["exit_status"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
