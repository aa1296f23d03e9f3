"""Page weight and load time of ``vthread report`` at 100,000 runs: results JSON.

Run from the repository root (needs Debian's ``chromium`` and ``pip install playwright``)::

    python -m benchmarks.report_weight            # 100,000 runs -> benchmarks/results/report.json
    python -m benchmarks.report_weight --quick    # smoke run, 2,000 runs, results in a temp dir

Two pages, each written by ``vthread report`` in a subprocess (timed, interpreter start
included) and then opened ``--repeats`` times in headless Chromium (a fresh page each time):

* ``generated``: 100,000 threads from :mod:`benchmarks.workload` (seed 0, its default 15 %
  looping) written as JSONL and scanned by the report (the trajectory input path);
* ``all_loop``: 100,000 synthetic records that all loop, each with its own id and one of
  5,000 excerpts, read back as a scan's JSONL output (the records input path): the worst
  case for the page, every run a row of the table.

Load time is from navigation start to the script's last line (the table's first page drawn,
``body[data-render-ms]``), and to the ``load`` event; also the time to re-sort the whole
table by another column and to filter it on a keystroke, measured in the page. Minimum and
median of the repeats; the machine's load average is recorded beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.workload import generate_thread

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"


def _write_generated(path: Path, count: int) -> None:
    with path.open("w") as out:
        # Thread by thread (the workload's threads are what generate_threads(count) makes):
        # 100,000 of them parsed at once would not fit in memory.
        for index in range(count):
            thread = generate_thread(index, seed=0).messages
            out.write(json.dumps({"id": f"run-{index:06d}", "messages": thread}) + "\n")


def _write_records(path: Path, count: int) -> None:
    kinds = ("repeated_suffix", "repeated_activity_tail", "repeated_result_run",
             "repeated_message_text_run")
    with path.open("w") as out:
        for index in range(count):
            messages = 20 + index % 180
            start = messages // 2 + index % 7
            shape = index % 5000
            out.write(json.dumps({
                "id": f"task-{index:06d}/trial-{index % 4}", "file": "runs.jsonl",
                "line": index + 1, "verdict": kinds[index % 4], "loop_start": start,
                "period": 2, "repetitions": (messages - start) // 2,
                "loop_messages": messages - start, "loop_tokens": float(37 * index % 90_000),
                "signature": f"{shape:016x}",
                "excerpt": f'read_file({{"path":"src/module_{shape}.py"}}) -> def f(): '
                           f"pass | read_file(...) -> ... (shape {shape})",
                "messages": messages}) + "\n")


def _report(inputs: Path, page: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vthread", "report", str(inputs), "-o", str(page)],
                   check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _load(browser: Any, page_file: Path) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1360, "height": 1000})
    page.route("**/*", lambda route: route.continue_() if route.request.url ==
               page_file.as_uri() else route.abort())
    page.goto(page_file.as_uri(), wait_until="load")
    page.wait_for_selector("body[data-ready]")
    render = float(page.get_attribute("body", "data-render-ms") or "nan")
    loaded = float(page.evaluate(
        "performance.getEntriesByType('navigation')[0].loadEventEnd"))
    sort = float(page.evaluate("""() => { const t = performance.now();
        document.querySelector('#runs th[data-key="id"] button').click();
        return performance.now() - t; }"""))
    filter_ = float(page.evaluate("""() => { const t = performance.now();
        const box = document.getElementById('filter'); box.value = '7';
        box.dispatchEvent(new Event('input')); return performance.now() - t; }"""))
    page.close()
    return {"render_ms": render, "load_event_ms": loaded, "sort_ms": sort,
            "filter_ms": filter_}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    if options.quick:
        options.runs, options.repeats = 2_000, 2
    from playwright.sync_api import sync_playwright

    results: dict[str, Any] = {
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "processor": platform.processor()},
        "runs": options.runs, "repeats": options.repeats, "pages": {}}
    with tempfile.TemporaryDirectory(prefix="report-weight-") as folder, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        results["machine"]["chromium"] = browser.version
        for name, write in (("generated", _write_generated), ("all_loop", _write_records)):
            inputs, page = Path(folder, f"{name}.jsonl"), Path(folder, f"{name}.html")
            write(inputs, options.runs)
            seconds = _report(inputs, page)
            loads = [_load(browser, page) for _ in range(options.repeats)]
            text = page.read_text(encoding="utf-8")
            loops = int(text.split('data-figure="loops" data-value="', 1)[1].split('"', 1)[0])
            figures: dict[str, Any] = {
                "looping_runs": loops,
                "input_bytes": inputs.stat().st_size, "page_bytes": page.stat().st_size,
                "report_seconds": round(seconds, 2),
                "load_average": os.getloadavg()[0],
            }
            for key in loads[0]:
                values = [load[key] for load in loads]
                figures[key] = {"min": round(min(values), 1),
                                "median": round(statistics.median(values), 1)}
            results["pages"][name] = figures
            print(name, json.dumps(figures), file=sys.stderr)
        browser.close()
    target = (Path(tempfile.gettempdir()) / "report-weight.json" if options.quick
              else ROOT / "benchmarks" / "results" / "report.json")
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
