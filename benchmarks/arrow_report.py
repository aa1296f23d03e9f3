"""Committed figures for ``scan_arrow`` and ``vthread.ray.scan_dataset``: results JSON, a plot.

Run from the repository root::

    python -m benchmarks.arrow_report            # 10,000 threads -> benchmarks/results/arrow.json
                                                 #                  and docs/img/arrow_speed.png
    python -m benchmarks.arrow_report --quick    # smoke run, 600 threads, outputs in a temp dir

What it measures, on threads from :mod:`benchmarks.workload` (seed 0) as a table of a ``run``
id and a ``messages`` column of JSON text (one compact JSON array per row, the JSONL file's
lines), every variant timed ``--repeats`` times, min and median:

* (a) against the baseline ``python -m vthread scan FILE --output /dev/null --quiet`` on the
  same runs as JSONL (a subprocess: interpreter start and imports included, ``--jobs 1``, its
  default): ``scan_arrow`` on the table in memory (the core on every CPU, and on one thread
  with ``RAYON_NUM_THREADS=1``), ``pyarrow.parquet.read_table`` of the same table written as
  Parquet plus ``scan_arrow``, and the CLI with ``--jobs 2``;
* (b) ``scan_dataset`` on a local Ray cluster (``num_cpus=2``, ``RAYON_NUM_THREADS=1`` in the
  workers so that a worker is one core) over the table in the object store as
  :data:`BLOCKS` blocks, whole blocks as batches, at most 1 and 2 tasks at a time
  (``concurrency``): rows per second;
* (c) what Ray costs per batch: a no-op map (drops the text as ``scan_dataset`` does, adds
  nothing) against ``scan_dataset`` at :data:`BATCH_SIZES` rows per batch, 2 tasks at a time.

Variants run round-robin (one run of each per round), so drift in a shared machine's load
spreads over all of them; the load average is recorded at every round. Every Ray variant
runs once untimed first (worker start-up). Answers are checked before anything is reported:
the verdicts of every variant, and the CLI's output, equal ``vthread.scan``'s on the parsed
threads, row for row, or the script fails.

Nothing here is imported by ``vthread``; Ray is imported only for (b) and (c), matplotlib
only to draw the plot.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import vthread
from benchmarks.scan_report import (
    Names,
    Variant,
    cli_available,
    cli_names,
    machine,
    measure,
    output_arguments,
    run_cli,
    save_figure,
    snapshot_code,
)
from benchmarks.workload import generate_threads, write_jsonl

ROOT: Final = Path(__file__).resolve().parent.parent
RESULTS: Final = ROOT / "benchmarks" / "results" / "arrow.json"
PLOT: Final = ROOT / "docs" / "img" / "arrow_speed.png"
FULL_THREADS: Final = 10_000
QUICK_THREADS: Final = 600
SEED: Final = 0
BLOCKS: Final = 8
"""Blocks the Ray dataset is split into: enough for two workers to share, whole ones as batches."""
BATCH_SIZES: Final = (None, 250, 50)
"""Rows per Ray batch for (c); None is a whole block (``FULL_THREADS / BLOCKS`` rows)."""
TIMES: Final = "\u00d7"  # the multiplication sign, escaped for the linter (RUF001)


@contextmanager
def core_threads(threads: int | None) -> Iterator[None]:
    """``RAYON_NUM_THREADS`` set to ``threads`` (unset for None) inside the block."""
    before = os.environ.get("RAYON_NUM_THREADS")
    if threads is None:
        os.environ.pop("RAYON_NUM_THREADS", None)
    else:
        os.environ["RAYON_NUM_THREADS"] = str(threads)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("RAYON_NUM_THREADS", None)
        else:
            os.environ["RAYON_NUM_THREADS"] = before


def verdicts_of(table: Any) -> Names:
    """The verdict column of a result table."""
    names: Names = table.column("verdict").to_pylist()
    return names


def in_memory(table: Any, threads: int | None) -> Names:
    """``scan_arrow`` on the loaded table, the core on ``threads`` (None: every CPU)."""
    with core_threads(threads):
        return verdicts_of(vthread.scan_arrow(table, id="run"))


def from_parquet(path: Path) -> Names:
    """Read the Parquet file, then ``scan_arrow``: the in-process twin of the CLI's work."""
    import pyarrow.parquet as pq

    return verdicts_of(vthread.scan_arrow(pq.read_table(path), id="run"))


def struct_scan(table: Any, truth: Names, *, through_objects: bool) -> None:
    """``scan_arrow`` on the list<struct> table: read by the core (the rows written as JSON
    text from the Arrow buffers), or, with ``through_objects``, the way it went before the
    core read structs (``to_pylist`` and Python objects). Checked against its own truth (the
    struct table's results are text, so its verdicts are not the JSON table's)."""
    from vthread import arrow

    nested = arrow._nested_texts
    if through_objects:
        arrow._nested_texts = lambda piece: None
    try:
        names = verdicts_of(vthread.scan_arrow(table, id="run", format="native"))
    finally:
        arrow._nested_texts = nested
    if names != truth:
        raise AssertionError("scan_arrow on the struct column: answers differ from scan")


def struct_threads(threads: list[Any]) -> list[Any]:
    """The threads with every tool result that is not text written as JSON text: one Arrow
    column holds one type, and the workload's results are strings or tables."""
    out = []
    for thread in threads:
        copied = []
        for message in thread:
            function = message.get("meta", {}).get("activity", {}).get("function", {})
            if "result" in function and not isinstance(function["result"], str):
                message = json.loads(json.dumps(message))
                message["meta"]["activity"]["function"]["result"] = json.dumps(
                    function["result"])
            copied.append(message)
        out.append(copied)
    return out


# ------------------------------------------------------------------------------------- Ray


def start_ray() -> None:
    """A local two-CPU cluster whose workers run the core on one thread each."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False,
             runtime_env={"env_vars": {"RAYON_NUM_THREADS": "1"}})
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True


def ray_dataset(table: Any) -> Any:
    """The table in Ray's object store as :data:`BLOCKS` blocks, materialised untimed."""
    import ray

    size = -(-table.num_rows // BLOCKS)
    parts = [table.slice(start, size) for start in range(0, table.num_rows, size)]
    return ray.data.from_arrow(parts).materialize()


def ray_scan(ds: Any, concurrency: int, batch_size: int | None) -> Names:
    """``scan_dataset`` consumed by the driver, batch by batch: the verdicts in order."""
    from vthread.ray import scan_dataset

    result = scan_dataset(ds, format="native", compute=_tasks(concurrency),
                          batch_size=batch_size)
    names: Names = []
    batch: Any  # pyarrow Tables (Ray's stubs allow every batch format)
    for batch in result.iter_batches(batch_format="pyarrow", batch_size=None):
        names += batch.column("verdict").to_pylist()
    return names


def _tasks(workers: int) -> Any:
    """At most ``workers`` map tasks at a time (``concurrency=`` before Ray 2.51)."""
    import ray.data

    return ray.data.TaskPoolStrategy(size=workers)


def _drop_text(batch: Any) -> Any:
    return batch.drop_columns(["messages"])


def ray_no_op(ds: Any, concurrency: int, batch_size: int | None, rows: int) -> None:
    """The same map with nothing scanned: the text dropped, the ids returned."""
    result = ds.map_batches(_drop_text, batch_format="pyarrow", compute=_tasks(concurrency),
                            batch_size=batch_size)
    seen = sum(batch.num_rows for batch in
               result.iter_batches(batch_format="pyarrow", batch_size=None))
    if seen != rows:
        raise AssertionError(f"the no-op map returned {seen} rows of {rows}")


def _bound(function: Callable[..., Names | None], *args: Any) -> Callable[[], Names | None]:
    """``function`` with its arguments fixed now (a lambda in a loop would see the last)."""
    return lambda: function(*args)


# --------------------------------------------------------------------------------- summary


def _ratio(baseline: float, value: float) -> float:
    return round(baseline / value, 2)


def hypotheses(rows: dict[str, dict[str, Any]], threads: int) -> dict[str, dict[str, Any]]:
    """H1-H5 of docs/performance.md (Arrow and Ray), judged on medians; written down before
    the run (H5 before the run of session 6)."""
    med = {key: row["median_s"] for key, row in rows.items()}
    whole = f"ray_scan_c2_b{threads // BLOCKS}"
    out: dict[str, dict[str, Any]] = {
        "H1": {"claim": "scan_arrow on the table in memory is at least as fast as vthread scan "
                        "FILE -q on the same runs as JSONL (project target)",
               "measured": _ratio(med["cli"], med["scan_arrow"]),
               "holds": med["scan_arrow"] <= med["cli"]},
        "H2": {"claim": "scan_dataset with 2 workers >= 1.6x with 1 worker (2 shared cores: "
                        "at most 2x)",
               "measured": _ratio(med["ray_scan_c1"], med["ray_scan_c2"]),
               "holds": med["ray_scan_c1"] >= 1.6 * med["ray_scan_c2"]},
        "H3": {"claim": "Ray with 1 worker costs at most 25% over scan_arrow in process on "
                        "one core thread (whole blocks as batches)",
               "measured": round(med["ray_scan_c1"] / med["scan_arrow_1"], 2),
               "holds": med["ray_scan_c1"] <= 1.25 * med["scan_arrow_1"]},
    }
    small = f"ray_noop_b{BATCH_SIZES[-1]}"
    batches_small = -(-threads // BATCH_SIZES[-1])
    extra = med[small] - med[f"ray_noop_b{threads // BLOCKS}"]
    per_batch_ms = round(1000 * extra / (batches_small - BLOCKS), 2)
    out["H4"] = {"claim": "Ray costs under 5 ms per extra batch (no-op map, "
                          f"{BATCH_SIZES[-1]}-row batches against whole blocks)",
                 "measured": per_batch_ms, "holds": per_batch_ms < 5.0,
                 "whole_block_scan_median_s": med[whole]}
    out["H5"] = {"claim": "a list<struct> column read by the core is at least 5x the same "
                          "column through Python objects, and at most 1.5x the JSON text "
                          "column (it is written as JSON text first)",
                 "measured": {"vs_objects": _ratio(med["struct_objects"], med["struct_core"]),
                              "vs_json_column": round(med["struct_core"] / med["scan_arrow"],
                                                      2)},
                 "holds": (med["struct_objects"] >= 5 * med["struct_core"]
                           and med["struct_core"] <= 1.5 * med["scan_arrow"])}
    return out


def plot(report: dict[str, Any], path: Path) -> None:
    """Left: in-process and CLI speed against the CLI; right: Ray rows per second."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, env, workload = report["variants"], report["machine"], report["workload"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(14, 5.4),
                                         gridspec_kw={"width_ratios": [1.15, 1]})
    keys = [k for k, row in rows.items() if row["group"] == "local"]
    base = rows["cli"]["median_s"]
    values = [base / rows[k]["median_s"] for k in keys]
    bars = left.bar(range(len(keys)), values,
                    color=["#999999" if rows[k]["baseline"] else "#4c72b0" for k in keys])
    for bar, value in zip(bars, values, strict=True):
        left.annotate(f"{value:.2f}{TIMES}", (bar.get_x() + bar.get_width() / 2, value),
                      ha="center", va="bottom", fontsize=9)
    left.axhline(1.0, color="black", linewidth=0.8, label="target: at least the CLI (1\u00d7)")
    left.set_xticks(range(len(keys)),
                    [f"{rows[k]['short']}\n{rows[k]['median_s']:.2f} s" for k in keys],
                    fontsize=7)
    left.set_ylabel(f"speed against vthread scan FILE -q (median / median, {TIMES})")
    left.set_title("In one process, against the CLI on the same runs as JSONL", fontsize=10)
    left.set_ylim(0, 1.35 * max(values))
    left.legend(fontsize=8, loc="upper right")

    ray_keys = [k for k, row in rows.items() if row["group"] == "ray"]
    rates = [workload["threads"] / rows[k]["median_s"] for k in ray_keys]
    colours = ["#dd8452" if k.startswith("ray_noop") else "#55a868" for k in ray_keys]
    bars = right.bar(range(len(ray_keys)), rates, color=colours)
    for bar, rate in zip(bars, rates, strict=True):
        right.annotate(f"{rate:,.0f}", (bar.get_x() + bar.get_width() / 2, rate),
                       ha="center", va="bottom", fontsize=8)
    one = workload["threads"] / rows["scan_arrow_1"]["median_s"]
    right.axhline(one, color="#4c72b0", linestyle="--",
                  label=f"scan_arrow in process, one core thread: {one:,.0f} rows/s")
    right.set_xticks(range(len(ray_keys)), [rows[k]["short"] for k in ray_keys], fontsize=7)
    right.set_ylabel("rows (runs) per second, median")
    right.set_yscale("log")
    right.set_ylim(min(rates) / 2, 6 * max(rates))
    right.set_title("Ray Data, local cluster of 2 CPUs (green: scan_dataset; orange: no-op "
                    "map)", fontsize=10)
    right.legend(fontsize=8, loc="upper left")
    loads = [env["load_average_start"][0], env["load_average_end"][0],
             *(row[0] for row in env["load_average_per_round"])]
    figure.suptitle(
        f"scan_arrow and scan_dataset: {workload['threads']:,} generated runs, "
        f"{workload['messages']:,} messages, {workload['jsonl_bytes'] / 1e6:.0f} MB of JSON "
        f"text (seed {workload['seed']})", fontsize=11)
    save_figure(
        figure, path,
        f"{env['cpu_model']}, {env['nproc']} CPUs (shared), {env['ram_gib']} GiB; "
        f"Python {env['python']}, pyarrow {env['pyarrow']}, Ray {env['ray']}; commit "
        f"{env['git_commit']}; 1-min load average {min(loads):.1f}-{max(loads):.1f} during "
        "the run; baselines measured in the same run", bottom=0.04)


# ------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    """Measure, verify, write the JSON and the plot; print a summary table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.arrow_report",
                                     description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--threads", type=int, help=f"runs (default {FULL_THREADS:,})")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK_THREADS} runs, 2 repeats, outputs in a temp dir")
    parser.add_argument("--repeats", type=int, help="runs of each variant (default 5)")
    output_arguments(parser, RESULTS, PLOT)
    args = parser.parse_args(argv)
    if args.replot:
        plot(json.loads(args.replot.read_text()), args.plot or PLOT)
        return 0
    import pyarrow as pa
    import pyarrow.parquet as pq
    import ray

    scratch = Path(tempfile.mkdtemp(prefix="ray-arrow-report-"))
    count = args.threads or (QUICK_THREADS if args.quick else FULL_THREADS)
    if count % BLOCKS:
        parser.error(f"--threads must be a multiple of {BLOCKS}")
    repeats = args.repeats or (2 if args.quick else 5)
    json_path = args.json or (scratch / "arrow.json" if args.quick else RESULTS)
    plot_path = args.plot or (scratch / "arrow_speed.png" if args.quick else PLOT)

    env = machine() | {"pyarrow": pa.__version__, "ray": ray.__version__}
    code, env["code_digest"] = snapshot_code(scratch)
    print(f"load average at start: {env['load_average_start']}", file=sys.stderr)
    threads = generate_threads(count, seed=SEED)
    path = scratch / "runs.jsonl"
    size = write_jsonl(path, threads)
    texts = path.read_text(encoding="utf-8").splitlines()
    table = pa.table({"run": [f"t{i}" for i in range(count)], "messages": texts})
    parquet = scratch / "runs.parquet"
    pq.write_table(table, parquet)
    truth: Names = vthread.scan(threads).names
    messages = sum(map(len, threads))
    structured = struct_threads(threads)
    struct_truth: Names = vthread.scan(structured).names
    struct_table = pa.table({"run": table.column("run"), "messages": pa.array(structured)})
    del threads, texts, structured
    gc.collect()
    gc.freeze()

    def expected() -> Names:
        return truth

    if not cli_available(code):
        raise RuntimeError("python -m vthread scan is not available in the code snapshot")
    for jobs in (1, 2):
        if cli_names(path, jobs, scratch, code) != truth:
            raise AssertionError(f"CLI --jobs {jobs}: verdicts differ from vthread.scan")

    start_ray()
    ds = ray_dataset(table)
    block = count // BLOCKS
    local = [
        Variant("cli", "vthread scan FILE -q (CLI, subprocess, --jobs 1)",
                "CLI\n--jobs 1\n(baseline)", "end_to_end", repeats,
                lambda: run_cli(path, 1, code), baseline=True),
        Variant("cli_jobs2", "vthread scan FILE -q --jobs 2 (CLI, subprocess)",
                "CLI\n--jobs 2", "end_to_end", repeats, lambda: run_cli(path, 2, code)),
        Variant("scan_arrow", "scan_arrow, table in memory (core on every CPU)",
                "scan_arrow\nin memory", "end_to_end", repeats,
                lambda: in_memory(table, None)),
        Variant("scan_arrow_1", "scan_arrow, table in memory, RAYON_NUM_THREADS=1",
                "scan_arrow\nin memory\n1 thread", "end_to_end", repeats,
                lambda: in_memory(table, 1)),
        Variant("parquet", "pyarrow.parquet.read_table + scan_arrow",
                "Parquet read\n+ scan_arrow", "end_to_end", repeats,
                lambda: from_parquet(parquet)),
        Variant("struct_core", "scan_arrow, list<struct> column, read by the core",
                "scan_arrow\nlist<struct>\ncore", "end_to_end", repeats,
                lambda: struct_scan(struct_table, struct_truth, through_objects=False)),
        Variant("struct_objects", "scan_arrow, list<struct> column, through Python objects",
                "scan_arrow\nlist<struct>\nobjects", "end_to_end", repeats,
                lambda: struct_scan(struct_table, struct_truth, through_objects=True)),
    ]
    ray_variants = [
        Variant("ray_scan_c1", f"scan_dataset, 1 worker, batches of {block} (whole blocks)",
                f"scan\n1 worker\n{block}/batch", "end_to_end", repeats,
                lambda: ray_scan(ds, 1, None)),
        Variant("ray_scan_c2", f"scan_dataset, 2 workers, batches of {block} (whole blocks)",
                f"scan\n2 workers\n{block}/batch", "end_to_end", repeats,
                lambda: ray_scan(ds, 2, None)),
    ]
    for size_ in BATCH_SIZES:
        rows = size_ or block
        if size_ is not None:
            ray_variants.append(Variant(
                f"ray_scan_c2_b{rows}", f"scan_dataset, 2 workers, batches of {rows}",
                f"scan\n2 workers\n{rows}/batch", "end_to_end", repeats,
                _bound(ray_scan, ds, 2, size_)))
        ray_variants.append(Variant(
            f"ray_noop_b{rows}", f"no-op map, 2 workers, batches of {rows}",
            f"no-op\n2 workers\n{rows}/batch", "end_to_end", repeats,
            _bound(ray_no_op, ds, 2, size_, count)))
    for variant in ray_variants:
        print(f"  warm-up: {variant.label}", file=sys.stderr, flush=True)
        warm = variant.run()
        if warm is not None and warm != truth:
            raise AssertionError(f"{variant.label}: answers differ from vthread.scan")
    variants = local + ray_variants
    local_keys = {v.key for v in local}
    round_loads = measure(variants, expected)
    ray.shutdown()
    rows_out = {v.key: v.summary() | {"group": "local" if v.key in local_keys else "ray"}
                for v in variants}
    rows_out[f"ray_scan_c2_b{block}"] = rows_out["ray_scan_c2"]
    for row in rows_out.values():
        row["rows_per_s"] = round(count / row["median_s"])

    report: dict[str, Any] = {
        "title": "scan_arrow and vthread.ray.scan_dataset against vthread scan FILE",
        "machine": env | {"load_average_end": list(os.getloadavg()),
                          "load_average_per_round": round_loads,
                          "note": "shared machine: other engineers run tests meanwhile"},
        "workload": {
            "generator": "benchmarks.workload.generate_threads",
            "seed": SEED,
            "threads": count,
            "messages": messages,
            "jsonl_bytes": size,
            "parquet_bytes": parquet.stat().st_size,
            "table": "run: string id; messages: string, each row one JSONL line's text",
            "struct_table": "run; messages: list<struct> inferred by pyarrow from the same "
                            "threads with non-text tool results written as JSON text",
            "loops": sum(name is not None for name in truth),
            "ray_blocks": BLOCKS,
        },
        "method": {
            "statistic": "min and median of the runs; ratios are baseline/variant, medians",
            "repeats": repeats,
            "order": "round-robin: one run of each variant per round; Ray variants warmed "
                     "up once, untimed",
            "ray": "ray.init(num_cpus=2), RAYON_NUM_THREADS=1 in the workers, the table "
                   "materialised in the object store before timing, results consumed by "
                   "the driver with iter_batches; concurrency= sets the workers",
            "verified_equal_to_scan": "every scan variant's verdicts and the CLI's output "
                                      "(--jobs 1 and 2), row for row",
        },
        "variants": {k: v for k, v in rows_out.items() if k != f"ray_scan_c2_b{block}"},
        "ratios_vs_cli": {k: _ratio(rows_out["cli"]["median_s"], v["median_s"])
                          for k, v in rows_out.items() if v["group"] == "local"},
    }
    report["hypotheses"] = hypotheses(rows_out, count)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    plot(report, plot_path)
    shutil.rmtree(code)
    for leftover in (path, parquet):
        leftover.unlink()
    if scratch not in (json_path.parent, plot_path.parent):
        shutil.rmtree(scratch)
    _print_summary(report)
    print(f"wrote {json_path} and {plot_path}", file=sys.stderr)
    return 0


def _print_summary(report: dict[str, Any]) -> None:
    for row in report["variants"].values():
        print(f"{row['label']:<60} min {row['min_s']:7.3f} s  median {row['median_s']:7.3f} s"
              f"  {row['rows_per_s']:>8,} rows/s  n={row['runs']}")
    for name, verdict in report["hypotheses"].items():
        print(f"{name}: {'holds' if verdict['holds'] else 'REFUTED'} "
              f"(measured {verdict['measured']}) - {verdict['claim']}")


if __name__ == "__main__":
    raise SystemExit(main())

