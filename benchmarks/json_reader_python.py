"""Per-line canonical encodings and fingerprints of a JSONL file, seen from Python: through
Python objects (``json.loads`` or ``orjson.loads``, then the core's object walker, or the
Python twin) against the core's JSON reader straight from the bytes.

``python -m benchmarks.json_reader_python /tmp/threads.jsonl [--runs 5]`` prints a Markdown
table (median and best of the runs, MB/s of line bytes, ratio to ``json.loads`` + core
fingerprint); ``benchmarks/results/json_reader.md`` holds the committed figures. The variants
take turns within each run, and every variant is first checked to give the same fingerprints.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Final

import orjson
import xxhash

from vthread import _core, _jsvalue

Variant = Callable[[list[bytes]], list[int]]

VARIANTS: Final[dict[str, Variant]] = {
    "json.loads + _jsvalue.canonical + xxh3 (pure Python)": lambda lines: [
        xxhash.xxh3_64_intdigest(_jsvalue.canonical(json.loads(line)).encode("ascii"))
        for line in lines
    ],
    "json.loads + _core.fingerprint": lambda lines: [
        _core.fingerprint(json.loads(line)) for line in lines
    ],
    "orjson.loads + _core.fingerprint": lambda lines: [
        _core.fingerprint(orjson.loads(line)) for line in lines
    ],
    "_core.fingerprint_json (JSON reader)": lambda lines: [
        _core.fingerprint_json(line) for line in lines
    ],
}
BASELINE: Final = "json.loads + _core.fingerprint"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.json_reader_python")
    parser.add_argument("path")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with open(args.path, "rb") as handle:
        lines = [line.rstrip(b"\n") for line in handle if line.strip()]
    size = sum(map(len, lines))
    answers = {name: run(lines[:200]) for name, run in VARIANTS.items()}
    assert len({tuple(answer) for answer in answers.values()}) == 1, "variants disagree"
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.runs):
        for name, run in VARIANTS.items():
            gc.collect()
            started = time.perf_counter()
            run(lines)
            times[name].append(time.perf_counter() - started)
    base = statistics.median(times[BASELINE])
    print(f"{args.path}: {len(lines)} lines, {size} bytes; {args.runs} runs")
    print("| variant | median s | MB/s | best MB/s | speed vs baseline |")
    print("|---|---:|---:|---:|---:|")
    for name, spent in times.items():
        median = statistics.median(spent)
        print(f"| {name} | {median:.2f} | {size / 1e6 / median:.0f} | "
              f"{size / 1e6 / min(spent):.0f} | {base / median:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
