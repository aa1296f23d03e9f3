"""What reading LangChain's messages costs ``vthread scan``: the same runs as OpenAI chat
(which the compiled core translates) and as LangChain messages (which Python translates),
whole processes of one build, alternated round by round.

    python -m benchmarks.langchain_cost --rounds 5

The workload's threads (:mod:`benchmarks.workload`, 10,000, seed 0) are written once in each
format (:func:`~benchmarks.workload.to_openai`, :func:`~benchmarks.workload.to_langchain`);
each round scans each file once with ``python -m vthread scan FILE --quiet --output OUT``
from the repository root (interpreter start and imports included), the order of the two
alternating by round, and takes the child's CPU seconds. Before the rounds, the two files'
records are compared without their ``file`` field: the same runs must get the same verdicts
and loops in their own messages. Results go to
``benchmarks/results/langchain-cost.json`` (``--out`` to write elsewhere). Nothing here is
imported by ``vthread``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

from benchmarks.formats_report import run
from benchmarks.scan_report import machine
from benchmarks.workload import generate_thread, to_langchain, to_openai, write_jsonl

ROOT: Final = Path(__file__).resolve().parent.parent
RESULTS: Final = ROOT / "benchmarks" / "results" / "langchain-cost.json"
FORMATS: Final = {"openai": to_openai, "langchain": to_langchain}


def _records(path: Path) -> list[dict[str, Any]]:
    """The records of a scan's output, each without the file it names."""
    return [{key: value for key, value in json.loads(line).items() if key != "file"}
            for line in path.read_text().splitlines()]


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    options = parser.parse_args(arguments)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        files: dict[str, Path] = {}
        for name, convert in FORMATS.items():
            files[name] = folder / f"{name}.jsonl"
            write_jsonl(files[name], (convert(generate_thread(index).messages)
                                      for index in range(options.threads)))
        outputs = {name: folder / f"{name}.records.jsonl" for name in FORMATS}
        for name, path in files.items():
            run(ROOT, path, outputs[name], 1)
        if _records(outputs["openai"]) != _records(outputs["langchain"]):
            print("the two files' records differ", file=sys.stderr)
            return 1
        seconds: dict[str, list[float]] = {name: [] for name in FORMATS}
        for round_ in range(options.rounds):
            order = list(FORMATS) if round_ % 2 == 0 else list(reversed(FORMATS))
            for name in order:
                seconds[name].append(run(ROOT, files[name], outputs[name], 1)[1])
        sizes = {name: path.stat().st_size for name, path in files.items()}
    ratios = [lc / oa for lc, oa in zip(seconds["langchain"], seconds["openai"], strict=True)]
    report = {
        "machine": machine(),
        "threads": options.threads,
        "bytes": sizes,
        "cpu_seconds": seconds,
        "median_cpu_seconds": {name: statistics.median(v) for name, v in seconds.items()},
        "langchain_over_openai": {"median": statistics.median(ratios), "rounds": ratios},
        "records_equal": True,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({key: report[key] for key in ("median_cpu_seconds",
                                                   "langchain_over_openai")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
