"""``vthread.scan`` called again and again on parsed threads, for a sampling profiler.

The threads are read from a JSONL file first (``benchmarks.workload.write_jsonl``'s), then
frozen out of the collector's reach, as ``benchmarks.scan_report`` does; a profiler started
with a delay past the loading sees only the calls::

    perf record -D 6000 -F 2000 python -m benchmarks.profile_scan W.jsonl --calls 40
    perf report --no-children --sort dso,symbol --stdio
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

import vthread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile_scan")
    parser.add_argument("file", help="a JSONL file of run objects ({id, messages}) or arrays")
    parser.add_argument("--calls", type=int, default=10, help="calls of vthread.scan (10)")
    options = parser.parse_args(argv)
    with open(options.file, "rb") as lines:
        runs = [json.loads(line) for line in lines]
    threads = [run["messages"] if isinstance(run, dict) else run for run in runs]
    gc.collect()
    gc.freeze()
    vthread.scan(threads[:500])  # the first call's imports and set-up, out of the loop
    start = time.perf_counter()
    for _ in range(options.calls):
        vthread.scan(threads)
    elapsed = time.perf_counter() - start
    print(f"{options.calls} calls on {len(threads):,} threads: {elapsed:.2f} s", file=sys.stderr)
    sys.stderr.flush()
    # Out at once: freeing 650,000 message dicts at exit would fill the profile's last
    # seconds with deallocation that is no part of a call.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
