"""Committed figures for the guard: throughput against the scalar reference, and memory.

Run from the repository root::

    python -m benchmarks.guard_report            # -> benchmarks/results/guard.json
                                                 #    and docs/img/guard_throughput.png
    python -m benchmarks.guard_report --quick    # smoke run: small inputs, temp outputs

What it measures (each variant ``--repeats`` times, the reference ``--reference-repeats``
times, round-robin so that a shared machine's drifting load spreads over all of them; wall
and CPU time, min and median):

* ``stream``: :class:`vthread.guard.Guard` on a 2 MB healthy stream
  (:func:`benchmarks.streams.realistic_stream`: 5,000-word vocabulary, sentences,
  paragraphs, lists) pushed in 4-character chunks, against
  :class:`vthread._reference.ReferenceGuard` on the same pushes;
* ``whole``: the same stream pushed at once, both ways;
* ``replay``: ``vthread.scan_texts`` on 1,000 recorded-like outputs (200-6,000 characters,
  about one in six ending in a loop), against a reference guard fed each text whole;
* ``rss``: in a fresh subprocess, the peak resident memory of one guard fed ``--rss-mb`` MB
  of fresh healthy text in 4-character chunks, read after 1, 10 and all MB, against the
  same process before the guard saw any text (``resource.getrusage`` and ``VmHWM``, see
  :func:`peak_rss_kib`).

Answers are checked before anything is reported: no trip on the healthy stream, and the
same trips and phrases as the reference on the outputs. matplotlib is imported only here.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
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
TARGETS: Final = {"stream": 8.0, "replay": 20.0}


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
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": metadata.version("numpy"),
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


def throughput(repeats: int, reference_repeats: int, stream_chars: int,
               outputs: int) -> dict[str, Any]:
    stream = realistic_stream(stream_chars)
    pieces = chunks(stream)
    texts = recorded_outputs(outputs)
    workloads: dict[str, dict[str, Callable[[], object]]] = {
        "stream": {
            "engine": lambda: any(map(Guard().push, pieces)),
            "reference": lambda: any(map(ref.guard().push, pieces)),
        },
        "whole": {
            "engine": lambda: Guard().push(stream),
            "reference": lambda: ref.guard().push(stream),
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
    assert answers["stream"]["engine"] is False and answers["stream"]["reference"] is False
    assert answers["whole"]["engine"] is False and answers["whole"]["reference"] is False
    trips = answers["replay"]["engine"]
    expected = answers["replay"]["reference"]
    assert isinstance(trips, list) and isinstance(expected, list)
    assert [t.reason.phrase if t else None for t in trips] == [
        r.phrase if r else None for r in expected
    ], "scan_texts disagrees with the reference"
    sizes = {"stream": len(stream), "whole": len(stream), "replay": sum(map(len, texts))}
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
    result["workload"] = {
        "stream": f"{len(stream):,} ASCII chars of healthy prose, 5,000-word vocabulary, "
                  f"{len(pieces):,} pushes of 4 chars",
        "replay": f"{len(texts):,} outputs, {sizes['replay']:,} chars, "
                  f"{sum(t is not None for t in trips)} trip",
    }
    gc.unfreeze()
    return result


def peak_rss_kib() -> dict[str, int]:
    """This process's peak resident memory, two ways (KiB).

    ``getrusage`` keeps the high-water mark across ``fork`` and ``exec`` on Linux, so a
    child started from a big parent reports at least the parent's size; ``VmHWM`` in
    ``/proc/self/status`` belongs to the current memory image only.
    """
    peaks = {"getrusage_maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks["vm_hwm"] = int(line.split()[1])
    except OSError:
        pass
    return peaks


def rss_child(megabytes: int) -> None:
    """Feed one guard ``megabytes`` MB of fresh text; print peak RSS checkpoints (KiB)."""
    blocks = endless_stream()
    guard = Guard()
    block = next(blocks)
    checkpoints = {"before_any_text": peak_rss_kib()}
    fed = 0
    marks = sorted({1, 10, megabytes})
    while fed < megabytes * 1_000_000:
        for piece in chunks(block):
            if guard.push(piece):
                raise AssertionError("the healthy stream tripped the guard")
        fed += len(block)
        while marks and fed >= marks[0] * 1_000_000:
            checkpoints[f"after_{marks.pop(0)}_mb"] = peak_rss_kib()
        block = next(blocks)
    print(json.dumps({"fed_chars": fed, "peak_rss_kib": checkpoints}))


def rss(megabytes: int) -> dict[str, Any]:
    start = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-m", "benchmarks.guard_report", "--rss-child", str(megabytes)],
        capture_output=True, text=True, cwd=ROOT, check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    result: dict[str, Any] = json.loads(child.stdout)
    result["seconds"] = time.perf_counter() - start
    return result


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["stream", "whole", "replay"]
    labels = ["streaming\n(4-char pushes)", "one push\n(whole 2 MB)", "bulk replay\n(1,000 texts)"]
    engine = [result["throughput"][n]["engine_mb_per_s"] for n in names]
    reference = [result["throughput"][n]["reference_mb_per_s"] for n in names]
    figure, axes = plt.subplots(figsize=(7.5, 4.2))
    x = range(len(names))
    axes.bar([i - 0.2 for i in x], reference, width=0.4, label="scalar reference",
             color="#bbbbbb")
    axes.bar([i + 0.2 for i in x], engine, width=0.4, label="vthread engine", color="#3b6ea8")
    for i, name in enumerate(names):
        ratio = result["throughput"][name]["ratio_min_wall"]
        axes.annotate(f"{ratio:.1f}x", (i + 0.2, engine[i]), ha="center", va="bottom")
    axes.set_xticks(list(x), labels)
    axes.set_ylabel("MB/s (best of runs, wall clock)")
    info = result["machine"]
    axes.set_title(
        f"Guard throughput, {info['cpu_model']} x{info['nproc']}, "
        f"Python {info['python']}, NumPy {info['numpy']}", fontsize=9)
    axes.legend(loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--reference-repeats", type=int, default=3)
    parser.add_argument("--rss-mb", type=int, default=100)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rss-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        rss_child(args.rss_child)
        return 0
    stream_chars, outputs = (200_000, 100) if args.quick else (2_000_000, 1_000)
    result: dict[str, Any] = {
        "title": "vthread Guard and scan_texts against the scalar reference guard",
        "machine": machine(),
    }
    # Memory first, while this parent process is still small.
    result["rss"] = rss(2 if args.quick else args.rss_mb)
    result["throughput"] = throughput(
        2 if args.quick else args.repeats, 1 if args.quick else args.reference_repeats,
        stream_chars, outputs)
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
    print(json.dumps({k: result["throughput"][k] for k in ("stream", "whole", "replay")}
                     | {"rss": result["rss"]}, indent=2))
    print(f"wrote {out} and {image}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
