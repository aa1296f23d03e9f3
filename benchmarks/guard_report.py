"""Committed figures for the guard: throughput against the scalar reference, and memory.

Run from the repository root on a quiet machine::

    python -m benchmarks.guard_report            # -> benchmarks/results/guard.json
                                                 #    and docs/img/guard_throughput.png
    python -m benchmarks.guard_report --quick    # smoke run: small inputs, temp outputs

Throughput (each variant ``--repeats`` times, the reference ``--reference-repeats`` times,
round-robin so that a drifting load spreads over all of them; wall and CPU time, min and
median), every ratio against :class:`vthread._reference.ReferenceGuard` in the same run:

* ``stream``: :class:`vthread.Guard` on a 2 MB healthy stream
  (:func:`benchmarks.streams.realistic_stream`: 5,000-word vocabulary, sentences,
  paragraphs, lists) pushed in 4-character chunks, against the reference on the same
  pushes; also nanoseconds per push (target: 17x);
* ``whole``: the same stream pushed at once, both ways;
* ``scan_1mb``: ``vthread.scan_texts`` on one 1 MB text against the reference pushing that
  text whole (target: 100x);
* ``replay``: ``scan_texts`` on 10,000 recorded-like outputs (200-6,000 characters, about
  one in six ending in a loop) against a reference guard fed each text whole.

Pipe: ``vthread guard`` copying a 100 MB healthy stream from one pipe to another, against
``cat`` on the same pipes (MB/s, best of ``--pipe-repeats``).

Memory, each in a fresh process (peak resident set, ``VmHWM``, against the same process
before the input): one 50 MB word pushed in 64 KiB pieces; 10,000,000 one-character
pushes; 1 GB of ``/dev/zero`` and 200 MB of healthy text through ``vthread guard``; and
``scan_texts`` on one 100 MB text (bytes of peak growth per input character, the text's own
storage excluded).

Answers are checked before anything is reported: no trip on the healthy streams, and the
same trips and phrases as the reference on the outputs. matplotlib is imported only here.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from benchmarks.streams import (
    chunks,
    endless_stream,
    realistic_stream,
    recorded_outputs,
    reference_trips,
)
from vthread import _reference as ref
from vthread.guard import Guard
from vthread.replay import scan_texts

ROOT: Final = Path(__file__).resolve().parent.parent
RESULTS: Final = ROOT / "benchmarks" / "results" / "guard.json"
PLOT: Final = ROOT / "docs" / "img" / "guard_throughput.png"
TARGETS: Final = {"stream": 17.0, "scan_1mb": 100.0}


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT, check=False).stdout.strip()
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True,
                           check=False).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": metadata.version("numpy"),
        "rustc": rustc or "unknown",
        "git_commit": commit,
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "load_average_start": list(os.getloadavg()),
    }


def timed(run: Callable[[], object]) -> tuple[float, float, object]:
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    answer = run()
    return time.perf_counter() - wall, time.process_time() - cpu, answer


def summary(times: list[float]) -> dict[str, float]:
    return {"min": min(times), "median": statistics.median(times), "runs": len(times)}


def push_all(guard: Guard | ref.ReferenceGuard, pieces: list[str]) -> bool:
    push = guard.push
    tripped = False
    for piece in pieces:
        tripped = push(piece)
    return tripped


def throughput(repeats: int, reference_repeats: int, stream_chars: int,
               outputs: int) -> dict[str, Any]:
    stream = realistic_stream(stream_chars)
    pieces = chunks(stream)
    one_mb = realistic_stream(1_000_000, seed=7)
    texts = recorded_outputs(outputs)
    workloads: dict[str, dict[str, Callable[[], object]]] = {
        "stream": {
            "engine": lambda: push_all(Guard(), pieces),
            "reference": lambda: push_all(ref.guard(), pieces),
        },
        "whole": {
            "engine": lambda: Guard().push(stream),
            "reference": lambda: ref.guard().push(stream),
        },
        "scan_1mb": {
            "engine": lambda: scan_texts([one_mb]),
            "reference": lambda: ref.guard().push(one_mb),
        },
        "replay": {
            "engine": lambda: scan_texts(texts),
            "reference": lambda: reference_trips(texts),
        },
    }
    gc.collect()
    gc.freeze()
    wall: dict[str, dict[str, list[float]]] = {w: {"engine": [], "reference": []}
                                               for w in workloads}
    cpu: dict[str, dict[str, list[float]]] = {w: {"engine": [], "reference": []}
                                              for w in workloads}
    answers: dict[str, dict[str, object]] = {w: {} for w in workloads}
    loads = []
    for round_ in range(repeats):
        for name, sides in workloads.items():
            for side, run in sides.items():
                if side == "reference" and round_ >= reference_repeats:
                    continue
                w, c, answer = timed(run)
                wall[name][side].append(w)
                cpu[name][side].append(c)
                answers[name][side] = answer
        loads.append(list(os.getloadavg()))
        print(f"round {round_ + 1}/{repeats}: load {loads[-1][0]:.2f}", file=sys.stderr)
    for name in ("stream", "whole"):
        assert answers[name]["engine"] is False and answers[name]["reference"] is False
    assert answers["scan_1mb"]["engine"] == [None] and answers["scan_1mb"]["reference"] is False
    trips = answers["replay"]["engine"]
    expected = answers["replay"]["reference"]
    assert isinstance(trips, list) and isinstance(expected, list)
    assert [(t.reason.phrase, t.reason.count) if t else None for t in trips] == [
        (r.phrase, r.count) if r else None for r in expected
    ], "scan_texts disagrees with the reference"
    sizes = {"stream": len(stream), "whole": len(stream), "scan_1mb": len(one_mb),
             "replay": sum(map(len, texts))}
    result: dict[str, Any] = {"load_average_per_round": loads}
    for name in workloads:
        engine, reference = wall[name]["engine"], wall[name]["reference"]
        result[name] = {
            "chars": sizes[name],
            "wall_seconds": {"engine": summary(engine), "reference": summary(reference)},
            "cpu_seconds": {"engine": summary(cpu[name]["engine"]),
                            "reference": summary(cpu[name]["reference"])},
            "engine_mb_per_s": sizes[name] / min(engine) / 1e6,
            "reference_mb_per_s": sizes[name] / min(reference) / 1e6,
            "ratio_min_wall": min(reference) / min(engine),
            "ratio_median_wall": statistics.median(reference) / statistics.median(engine),
            "ratio_min_cpu": min(cpu[name]["reference"]) / min(cpu[name]["engine"]),
        }
    result["stream"]["engine_ns_per_push"] = min(wall["stream"]["engine"]) / len(pieces) * 1e9
    result["stream"]["reference_ns_per_push"] = (
        min(wall["stream"]["reference"]) / len(pieces) * 1e9)
    result["workload"] = {
        "stream": f"{len(stream):,} ASCII chars of healthy prose, 5,000-word vocabulary, "
                  f"{len(pieces):,} pushes of 4 chars",
        "scan_1mb": f"one text of {len(one_mb):,} chars of the same kind of prose",
        "replay": f"{len(texts):,} outputs, {sizes['replay']:,} chars, "
                  f"{sum(t is not None for t in trips)} trip",
    }
    gc.unfreeze()
    return result


def pipe(megabytes: int, repeats: int) -> dict[str, Any]:
    """``vthread guard`` and ``cat`` between two pipes on the same healthy file."""
    folder = Path(tempfile.mkdtemp(prefix="vthread-guard-pipe-"))
    source = folder / "stream.txt"
    blocks = endless_stream(seed=11)
    with source.open("w", encoding="utf-8") as out:
        written = 0
        while written < megabytes * 1_000_000:
            block = next(blocks)
            out.write(block)
            written += len(block)
    size = source.stat().st_size
    commands = {
        "vthread_guard": [sys.executable, "-m", "vthread", "guard"],
        "cat": ["cat"],
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, command in commands.items():
            start = time.perf_counter()
            feeder = subprocess.Popen(["cat", str(source)], stdout=subprocess.PIPE)
            middle = subprocess.Popen(command, stdin=feeder.stdout, stdout=subprocess.PIPE,
                                      env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert feeder.stdout is not None and middle.stdout is not None
            feeder.stdout.close()
            received = 0
            while chunk := middle.stdout.read(1 << 20):
                received += len(chunk)
            status = middle.wait()
            feeder.wait()
            seconds[name].append(time.perf_counter() - start)
            assert status == 0 and received == size, (name, status, received, size)
    shutil.rmtree(folder)
    best = {name: min(times) for name, times in seconds.items()}
    return {
        "bytes": size,
        "seconds": {name: summary(times) for name, times in seconds.items()},
        "mb_per_s": {name: size / best[name] / 1e6 for name in best},
        "guard_over_cat_time": best["vthread_guard"] / best["cat"],
        "workload": f"{size:,} bytes of healthy prose, cat FILE | COMMAND | (read here)",
    }


# ------------------------------------------------------------------------------ memory

MEMORY_SCRIPTS: Final = {
    "one_50mb_word": """
guard = Guard()
piece = "x" * (1 << 16)
for _ in range(50_000_000 // len(piece)):
    assert not guard.push(piece)
assert not guard.push(" ")
fed = 50_000_000
""",
    "ten_million_one_char_pushes": """
guard = Guard()
letters = "abcdefghij klmnopqrs tuvwxyz\\n"
push = guard.push
for i in range(10_000_000):
    push(letters[i % len(letters)])
fed = 10_000_000
""",
    "scan_texts_100mb_text": """
blocks = endless_stream(seed=5)
parts, size = [], 0
while size < 100_000_000:
    parts.append(next(blocks)); size += len(parts[-1])
text = "".join(parts); del parts
# Reset the high-water mark to the current resident set (Linux: clear_refs 5), so that the
# peak below is the scan's, not the text's construction's.
Path("/proc/self/clear_refs").write_text("5")
baseline = peak()
assert scan_texts([text]) == [None]
fed = len(text)
""",
}

#: The child's peak resident set in KiB (``VmHWM``), shared by every memory script.
PEAK_SOURCE: Final = """
import sys
from pathlib import Path
def peak():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
"""

MEMORY_PRELUDE: Final = PEAK_SOURCE + """
from vthread.guard import Guard
from vthread.replay import scan_texts
from benchmarks.streams import endless_stream
baseline = peak()
"""

MEMORY_EPILOGUE: Final = """
import json
print(json.dumps({"baseline_kib": baseline, "peak_kib": peak(), "fed_chars": fed}))
"""


def memory_in_process(name: str) -> dict[str, Any]:
    script = MEMORY_PRELUDE + MEMORY_SCRIPTS[name] + MEMORY_EPILOGUE
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    figures: dict[str, Any] = json.loads(child.stdout)
    figures["growth_kib"] = figures["peak_kib"] - figures["baseline_kib"]
    figures["growth_bytes_per_char"] = figures["growth_kib"] * 1024 / figures["fed_chars"]
    figures["seconds"] = time.perf_counter() - start
    return figures


PIPE_CHILD: Final = PEAK_SOURCE + """
from vthread._cli_guard import run_guard
baseline = peak()
status = run_guard([], sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
print(baseline, peak(), status, file=sys.stderr)
"""


def memory_through_pipe(name: str, feeder: list[str]) -> dict[str, Any]:
    """Peak RSS of ``vthread guard`` fed by ``feeder`` (its output discarded)."""
    start = time.perf_counter()
    source = subprocess.Popen(feeder, stdout=subprocess.PIPE)
    child = subprocess.run([sys.executable, "-c", PIPE_CHILD], stdin=source.stdout,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    source.wait()
    baseline, peak, status = (int(x) for x in child.stderr.split()[-3:])
    return {"command": " ".join(feeder) + " | vthread guard > /dev/null", "exit": status,
            "baseline_kib": baseline, "peak_kib": peak, "growth_kib": peak - baseline,
            "seconds": time.perf_counter() - start}


def memory(quick: bool) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name in MEMORY_SCRIPTS:
        if quick and name == "scan_texts_100mb_text":
            continue
        result[name] = memory_in_process(name)
        print(f"memory {name}: {result[name]}", file=sys.stderr)
    gigabyte = "100000000" if quick else "1000000000"
    result["dev_zero_1gb_pipe"] = memory_through_pipe(
        "dev_zero", ["head", "-c", gigabyte, "/dev/zero"])
    stream_file = Path(tempfile.mkdtemp(prefix="vthread-guard-mem-")) / "stream.txt"
    blocks = endless_stream(seed=13)
    with stream_file.open("w", encoding="utf-8") as out:
        written = 0
        while written < (20 if quick else 200) * 1_000_000:
            block = next(blocks)
            out.write(block)
            written += len(block)
    result["healthy_200mb_pipe"] = memory_through_pipe("healthy", ["cat", str(stream_file)])
    shutil.rmtree(stream_file.parent)
    return result


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["stream", "whole", "scan_1mb", "replay"]
    labels = ["Guard.push\n(4-char pushes)", "one push\n(whole 2 MB)",
              "scan_texts\n(one 1 MB text)", "scan_texts\n(10,000 outputs)"]
    engine = [result["throughput"][n]["engine_mb_per_s"] for n in names]
    reference = [result["throughput"][n]["reference_mb_per_s"] for n in names]
    figure, axes = plt.subplots(figsize=(8, 4.4))
    x = range(len(names))
    axes.bar([i - 0.2 for i in x], reference, width=0.4, label="scalar reference guard",
             color="#bbbbbb")
    axes.bar([i + 0.2 for i in x], engine, width=0.4, label="vthread (Rust core)",
             color="#3b6ea8")
    for i, name in enumerate(names):
        ratio = result["throughput"][name]["ratio_min_wall"]
        axes.annotate(f"{ratio:.0f}x", (i + 0.2, engine[i]), ha="center", va="bottom")
    axes.set_xticks(list(x), labels)
    axes.set_yscale("log")
    axes.set_ylabel("MB/s (best of runs, wall clock, log scale)")
    info = result["machine"]
    axes.set_title(
        f"Guard throughput, {info['cpu_model']} x{info['nproc']}, "
        f"Python {info['python']}, {info['rustc']}", fontsize=9)
    axes.legend(loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--reference-repeats", type=int, default=2)
    parser.add_argument("--pipe-repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    stream_chars, outputs, pipe_mb = (200_000, 200, 10) if args.quick else (
        2_000_000, 10_000, 100)
    result: dict[str, Any] = {
        "title": "vthread Guard, scan_texts and vthread guard against the scalar reference",
        "machine": machine(),
        "command": "python -m benchmarks.guard_report" + (" --quick" if args.quick else ""),
    }
    # Memory first, in children, while this process is small.
    result["memory"] = memory(args.quick)
    result["throughput"] = throughput(
        2 if args.quick else args.repeats, 1 if args.quick else args.reference_repeats,
        stream_chars, outputs)
    result["pipe"] = pipe(pipe_mb, 1 if args.quick else args.pipe_repeats)
    result["targets"] = {
        name: {"ratio": target, "met": result["throughput"][name]["ratio_min_wall"] >= target}
        for name, target in TARGETS.items()
    }
    result["machine"]["load_average_end"] = list(os.getloadavg())
    out, image = (RESULTS, PLOT)
    if args.quick:
        folder = Path(tempfile.mkdtemp(prefix="guard-report-"))
        out, image = folder / "guard.json", folder / "guard_throughput.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    plot(result, image)
    brief = {name: {key: value for key, value in figures.items()
                    if key in ("ratio_min_wall", "engine_mb_per_s", "engine_ns_per_push")}
             for name, figures in result["throughput"].items() if isinstance(figures, dict)
             and "ratio_min_wall" in figures}
    print(json.dumps({"throughput": brief, "pipe": result["pipe"]["mb_per_s"],
                      "targets": result["targets"]}, indent=2))
    print(f"wrote {out} and {image}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
