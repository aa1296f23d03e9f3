"""Two or more builds of the compiled core side by side in one process, on the same objects.

A change to the core's pass over Python objects (how it reads fields, what it asks of
memory) moves its time by a few percent, less than this machine's drift between two runs a
minute apart. So the builds are loaded into one interpreter (each ``.so`` under a name of
its own) and called in turn on the same parsed threads, the order alternating by round, and
each round's ratio is taken against the first build: the drift then moves both sides of a
ratio alike. Four measures: ``_core.scan_columns`` over the threads (the column pass alone),
``vthread.scan`` with the build put in place of ``vthread._core`` (the whole call,
Python's verdicts and records included), and ``_core.scan_lines`` over the file's lines on
one thread (the pass ``vthread scan FILE`` makes from bytes: parse, columns, ids and token
figures), ``scan_lines_openai`` the same over the threads written as OpenAI chat and read
as ``vthread scan`` reads a file whose format it detected (translated, each run's own
format looked for: ``declared_wins``), and ``_core.describe_thread`` called on each thread
in turn (the core's part of ``describe_thread_cycle``, a harness's every-turn call), and
``arrow_row_texts`` over the threads as an Arrow column of lists of message structs, on one
thread (the JSON text ``vthread scan X.parquet`` and ``scan_arrow`` read such a column as;
needs pyarrow); records, columns, texts and verdicts must be identical across builds. CPU seconds
(``time.process_time``), garbage collection off. ``--ways`` picks some of them.

A build is ``NAME=PATH``, PATH a built core (``vthread/_core.*.so`` after ``maturin develop
--release``, copied aside before the next build). Writes ``--out`` (JSON).

    python -m benchmarks.workload --count 10000 --out /tmp/w10k.jsonl
    python -m benchmarks.core_ab before=/tmp/a/_core.so after=/tmp/b/_core.so \\
        --file /tmp/w10k.jsonl --rounds 21 --out benchmarks/results/core-ab.json
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import orjson

import vthread
from benchmarks.scan_report import machine
from vthread._heuristics import core_options
from vthread._options import cycle_options, text_run_options

_USING_THE_CORE = ("vthread.scan", "vthread._heuristics", "vthread.cycle")
"""The modules whose ``_core`` a build replaces for ``vthread.scan``."""


def load(name: str, path: str) -> ModuleType:
    """The core built at ``path``, loaded as ``<name>._core`` (its init function's name)."""
    spec = importlib.util.spec_from_file_location(f"{name}._core", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a loadable extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _columns(core: ModuleType, threads: list[Any], options: Any) -> tuple[float, Any]:
    started = time.process_time()
    raw = core.scan_columns(threads, options)
    return time.process_time() - started, {
        key: value.tolist() if hasattr(value, "tolist") else value for key, value in raw.items()}


def _lines(core: ModuleType, lines: list[bytes], options: Any,
           **reading: Any) -> tuple[float, Any]:
    started = time.process_time()
    raw = core.scan_lines(lines, options, True, 1, **reading)
    seconds = time.process_time() - started
    raw.pop("kept", None)  # tapes kept for attribution: builds before session 32 keep none
    raw.pop("read_as_own", None)  # the lines read as their own: builds before session 56 say none
    return seconds, {
        key: value.tolist() if hasattr(value, "tolist") else value for key, value in raw.items()}


def _public(core: ModuleType, threads: list[Any]) -> tuple[float, Any]:
    modules = [importlib.import_module(name) for name in _USING_THE_CORE]
    kept = [module._core for module in modules]
    for module in modules:
        module._core = core  # type: ignore[attr-defined]
    try:
        started = time.process_time()
        result = vthread.scan(threads)
        seconds = time.process_time() - started
    finally:
        for module, original in zip(modules, kept, strict=True):
            module._core = original  # type: ignore[attr-defined]
    return seconds, [result.record(row) for row in range(len(result))]


def _each_thread(core: ModuleType, threads: list[Any], options: Any) -> tuple[float, Any]:
    text_run = text_run_options()
    arguments = (text_run.min_units, text_run.window, text_run.max_unique_ratio)
    describe = core.describe_thread
    started = time.process_time()
    codes = [describe(thread, options, *arguments) for thread in threads]
    return time.process_time() - started, codes


def _row_texts(core: ModuleType, column: Any) -> tuple[float, Any]:
    started = time.process_time()
    written = core.arrow_row_texts(column, 1)
    took = time.process_time() - started
    text, starts, ends, rows = written
    return took, (text, starts.tolist(), ends.tolist(), rows.tolist())


def _struct_column(threads: list[Any]) -> Any:
    """The threads as one Arrow column of lists of message structs, as Parquet holds them
    (the tool results that are no text written as JSON text: one column holds one type)."""
    import pyarrow as pa

    from benchmarks.arrow_report import struct_threads

    return pa.array(struct_threads(threads))


def _openai_lines(threads: list[Any]) -> list[bytes]:
    """The threads as JSONL lines of OpenAI chat, as the workload's OpenAI file holds them."""
    from benchmarks.workload import to_openai

    return [orjson.dumps({"id": f"t{index}", "messages": to_openai(thread)})
            for index, thread in enumerate(threads)]


WAYS: Final = ("scan_columns", "vthread.scan", "scan_lines", "scan_lines_openai",
               "describe_thread", "arrow_row_texts")


def measure(builds: dict[str, ModuleType], threads: list[Any], lines: list[bytes], rounds: int,
            chosen: tuple[str, ...] = WAYS) -> dict[str, Any]:
    options = core_options(cycle_options())
    openai = _openai_lines(threads) if "scan_lines_openai" in chosen else []
    structs = _struct_column(threads) if "arrow_row_texts" in chosen else None
    ways: dict[str, Callable[[ModuleType], tuple[float, Any]]] = {
        "scan_columns": lambda core: _columns(core, threads, options),
        "vthread.scan": lambda core: _public(core, threads),
        "scan_lines": lambda core: _lines(core, lines, options),
        "scan_lines_openai": lambda core: _lines(core, openai, options, format="openai",
                                                 declared_wins=True),
        "describe_thread": lambda core: _each_thread(core, threads, options),
        "arrow_row_texts": lambda core: _row_texts(core, structs)}
    out: dict[str, Any] = {}
    for way in chosen:
        run = ways[way]
        seconds: dict[str, list[float]] = {name: [] for name in builds}
        answers: dict[str, Any] = {}
        for index in range(rounds):
            order = list(builds.items())
            for name, core in order if index % 2 == 0 else reversed(order):
                took, answer = run(core)
                seconds[name].append(took)
                answers.setdefault(name, answer)
        first = next(iter(builds))
        if any(answer != answers[first] for answer in answers.values()):
            raise AssertionError(f"{way}: the builds answered differently")
        out[way] = {
            name: {"median_s": round(statistics.median(values), 4),
                   "min_s": round(min(values), 4),
                   "speedup_over_first": None if name == first else {
                       "median_of_round_ratios": round(statistics.median(
                           base / took for base, took in zip(seconds[first], values,
                                                             strict=True)), 3),
                       "rounds_faster": sum(base > took for base, took in zip(
                           seconds[first], values, strict=True))}}
            for name, values in seconds.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("builds", nargs="+", help="NAME=PATH of a built core; the first is "
                                                  "the baseline")
    parser.add_argument("--file", type=Path, required=True, help="JSONL of threads")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--out", type=Path)
    options = parser.parse_args(argv)
    builds = {}
    for given in options.builds:
        name, equals, path = given.partition("=")
        if not equals or not name.isidentifier():
            raise SystemExit(f"{given!r}: a build is NAME=PATH, NAME an identifier")
        builds[name] = load(name, path)
    lines = options.file.read_bytes().splitlines()
    parsed = [orjson.loads(line) for line in lines]
    threads = [thread["messages"] if isinstance(thread, dict) else thread for thread in parsed]
    gc.disable()
    report = {"what": __doc__.split("\n\n")[0], "machine": machine(),
              "builds": dict(zip(builds, options.builds, strict=True)),
              "workload": {"file": options.file.name, "threads": len(threads),
                           "messages": sum(map(len, threads))},
              "rounds": options.rounds, "results": measure(builds, threads, lines, options.rounds,
                                                      tuple(options.ways))}
    report["machine"]["load_average_end"] = list(os.getloadavg())
    text = json.dumps(report, indent=1) + "\n"
    if options.out:
        options.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
