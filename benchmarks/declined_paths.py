"""Files that used to leave the compiled core, timed both ways in today's code.

Before session 8, ``vthread scan`` read a file under ``--messages-key``/``--id-key`` and a
file of OpenAI Responses items wholly through Python, and sent a whole chunk through Python
when any one of its lines needed Python's ``json``; before session 9 it read every file under
``--mask-volatile`` through Python, masking each thread with :mod:`re` and a Python walk of
its values. This script writes the benchmark workload (seed 0) as such files, a keyed copy, a
messy one (:func:`benchmarks.scan_report.write_keyed`, ``write_messy``), a Responses one
(:func:`benchmarks.workload.to_responses`) and the plain file scanned with
``--mask-volatile`` (``masked``), the workload as one JSON document of runs with a NaN in
one run (``nan-document``: read whole by Python before session 11, which now splits it and
gives Python only that run), one OpenAI run of 800,000 messages on one line scanned with no
``--format`` (``long-openai-run``: its format detected by parsing it in Python before
session 12, from its bytes in the core since), plus the 500 published mini-swe-agent runs of
``../shared/realdata`` (read by Python before session 9) when they are there, and times
``vthread scan FILE -q -o /dev/null`` on each in a subprocess, round-robin, against the
same command forced down the old path (``--old-path``: every chunk, or every chunk with a
declined line, read by Python; for ``masked``, masked by
:func:`vthread.volatile.masked_thread_by_python` too). The records are checked to be byte for
byte the same.

Usage: ``python -m benchmarks.declined_paths [--runs 5] [--json PATH]``; prints medians and
minima, and writes them with the machine to ``PATH`` (default
``benchmarks/results/declined_paths.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.scan_report import KEYED, machine, subprocess_env, write_keyed, write_messy
from benchmarks.workload import generate_threads, to_openai, to_responses, write_jsonl

RESULTS = Path(__file__).resolve().parent / "results" / "declined_paths.json"
MINI_SWE_AGENT = (Path(__file__).resolve().parents[2] / "shared" / "realdata"
                  / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz")
"""The 500 published mini-swe-agent runs (read by path, never copied), when present."""


def old_path(kind: str, argv: list[str]) -> int:
    """``vthread scan`` with the core's reading limited as before session 8."""
    from vthread import cli

    read = cli._read_in_core

    def whole_chunks(task: Any) -> Any:
        raw = read(task)
        return None if raw is None or len(raw["declined"]) else raw

    if kind == "nan-document":  # read whole by Python, as before the split a block at a time
        cli._DocumentRuns.start = lambda document: False  # type: ignore[method-assign]
    if kind == "long-openai-run":  # every line's format evidence read by Python
        from vthread import _core

        _core.line_format_evidence = (  # type: ignore[assignment]
            lambda line, messages_key=None: (False, None))
        return cli.main(argv)
    wholly_python = kind in ("keyed", "responses", "masked", "mini-swe-agent")
    cli._read_in_core = (lambda task: None) if wholly_python else whole_chunks  # type: ignore[attr-defined]
    if kind == "masked":
        from vthread.volatile import masked_thread_by_python

        cli.masked_thread = masked_thread_by_python  # type: ignore[attr-defined]
    return cli.main(argv)


LONG_RUN_MESSAGES = 800_000


def long_openai_run() -> list[dict[str, Any]]:
    """One OpenAI chat run of ``LONG_RUN_MESSAGES`` messages: workload threads (seed 3) in
    OpenAI's format, one after another (those with a message that is no object, which no
    format reads, left out)."""
    messages: list[dict[str, Any]] = []
    for thread in generate_threads(LONG_RUN_MESSAGES // 20, seed=3):
        chat = to_openai(thread)
        if all(isinstance(message, dict) for message in chat):
            messages.extend(chat)
        if len(messages) >= LONG_RUN_MESSAGES:
            break
    return messages[:LONG_RUN_MESSAGES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.declined_paths")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=RESULTS)
    parser.add_argument("--old-path", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.old_path:
        return old_path(args.old_path[0], args.old_path[1:])
    scratch = Path(tempfile.mkdtemp(prefix="vthread-declined-"))
    threads = generate_threads(10_000, seed=0)
    plain = scratch / "threads.jsonl"
    write_jsonl(plain, threads)
    files = {"keyed": scratch / "keyed.jsonl", "messy": scratch / "messy.jsonl",
             "responses": scratch / "responses.jsonl", "masked": plain,
             "nan-document": scratch / "runs.json",
             "long-openai-run": scratch / "long-openai-run.jsonl"}
    if MINI_SWE_AGENT.exists():
        files["mini-swe-agent"] = MINI_SWE_AGENT
    write_keyed(files["keyed"], threads)
    write_messy(files["messy"], plain.read_bytes().splitlines())
    write_jsonl(files["responses"], [to_responses(thread) for thread in threads])
    runs: list[dict[str, Any]] = [{"id": f"r{i}", "messages": thread}
                                  for i, thread in enumerate(threads)]
    runs[0]["score"] = float("nan")  # json writes NaN: one run the core declines
    files["nan-document"].write_text(json.dumps(runs))
    write_jsonl(files["long-openai-run"], [long_openai_run()], ids=["long"])
    keys = {"keyed": ["--messages-key", KEYED[0], "--id-key", KEYED[1]], "messy": [],
            "responses": ["--format", "responses"], "masked": ["--mask-volatile"],
            "mini-swe-agent": [], "nan-document": [], "long-openai-run": []}
    commands: dict[str, list[str]] = {}
    for kind, path in files.items():
        scan = ["scan", str(path), "-q", *keys[kind]]
        commands[f"{kind}: core"] = [sys.executable, "-m", "vthread", *scan]
        commands[f"{kind}: old path"] = [sys.executable, "-m", "benchmarks.declined_paths",
                                         "--old-path", kind, *scan]
    outputs = {label: subprocess.run(argv_, check=True, capture_output=True,
                                     env=subprocess_env()).stdout
               for label, argv_ in commands.items()}
    for kind in files:
        if outputs[f"{kind}: core"] != outputs[f"{kind}: old path"]:
            raise AssertionError(f"{kind}: the two paths wrote different records")
    times: dict[str, list[float]] = {label: [] for label in commands}
    env = machine()
    loads = []
    for _ in range(args.runs):
        loads.append([round(x, 2) for x in os.getloadavg()])
        for label, argv_ in commands.items():
            started = time.perf_counter()
            subprocess.run([*argv_, "-o", "/dev/null"], check=True, env=subprocess_env())
            times[label].append(time.perf_counter() - started)
    for label, runs in times.items():
        print(f"{label:<18} median {statistics.median(runs):.3f} s  min {min(runs):.3f} s")
    results = {
        "machine": env | {"load_average_end": list(os.getloadavg()), "load_per_round": loads},
        "workload": "benchmarks.workload.generate_threads(10000, seed=0), written as each kind",
        "command": "vthread scan FILE -q -o /dev/null (subprocess), round-robin",
        "runs": args.runs,
        "seconds": times,
        "median_seconds": {label: statistics.median(runs) for label, runs in times.items()},
        "speedup_of_core_median": {
            kind: statistics.median(times[f"{kind}: old path"])
            / statistics.median(times[f"{kind}: core"]) for kind in files},
    }
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    for path in {plain, *files.values()} - {MINI_SWE_AGENT}:
        path.unlink()
    scratch.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
