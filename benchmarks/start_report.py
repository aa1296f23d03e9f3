"""How long a process takes to start using vthread: the guard, the command, the scan's imports.

``python -m benchmarks.start_report`` runs each variant below as a fresh interpreter
(``python -c CODE``, from a snapshot of the code with its bytecode compiled, as an installed
copy has it), ``--rounds`` times, the variants alternating within each round, and writes
``benchmarks/results/start.json``: per variant the minimum and median wall time and CPU time
(user + system, of the child), and each light start against the eager one it replaced
(for ``scan_sample``, against OpenBLAS's default threads).

The eager variants import what the package imported before its names were imported when
first used (every public module, NumPy with them) and, for the command, :mod:`vthread.cli`
before the arguments were read, as the ``vthread`` script's entry point did; they run the
same code, so each ratio isolates what the light start saves.

Hypotheses, written before the first run (session 17): H1, ``from vthread import Guard`` is
at least 2x faster (wall, medians) than the eager package's import; H2, ``vthread guard``
on a short stream starts at least 2x faster than through the eager entry point; H3, the
scan's imports alone are at least 1.1x faster than the eager package's plus
:mod:`vthread.cli` (the modules the scan never uses, such as ``vthread.arrow``,
``vthread.build`` and ``vthread.cycle``, are no longer imported). Added before the second
run: H4, ``vthread scan --sample`` (300 threads: mostly the start) as the command runs it,
OpenBLAS kept to one thread, is at least 1.05x faster than with OpenBLAS's default threads
(an empty ``OPENBLAS_NUM_THREADS``, which the command keeps as the user's own setting).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.scan_report import machine, snapshot_code, subprocess_env

RESULTS: Final = Path(__file__).resolve().parent / "results" / "start.json"
EAGER_PACKAGE: Final = ("import numpy, vthread.arrow, vthread.build, vthread.cycle, "
                        "vthread.fingerprint, vthread.guard, vthread.replay, vthread.scan, "
                        "vthread.textrun, vthread.volatile")
"""What ``import vthread`` imported when its ``__init__`` imported every public name."""
GUARDED_TEXT: Final = " ".join(f"w{i * 7919 % 100_003}" for i in range(1500)).encode()
"""A stream the guard reads to its end without tripping (about 10 KB of distinct words)."""
SCAN_SAMPLE: Final = ("import os, sys; from vthread._cli_main import main; "
                      "sys.argv = ['vthread', 'scan', '--sample', '-q', '-o', os.devnull]; "
                      "sys.exit(main())")
"""``vthread scan --sample`` as the script runs it (no argv given to ``main``)."""
VARIANTS: Final[dict[str, tuple[str, bytes, dict[str, str]]]] = {
    "interpreter": ("pass", b"", {}),
    "guard_import": ("from vthread import Guard", b"", {}),
    "guard_import_eager": (f"{EAGER_PACKAGE}; from vthread import Guard", b"", {}),
    "guard_command": ("import sys; from vthread._cli_main import main; "
                      "sys.exit(main(['guard']))", GUARDED_TEXT, {}),
    "guard_command_eager": (f"{EAGER_PACKAGE}; import sys, vthread.cli; "
                            "sys.exit(vthread.cli.main(['guard']))", GUARDED_TEXT, {}),
    "scan_imports": ("import vthread.cli", b"", {}),
    "scan_imports_eager": (f"{EAGER_PACKAGE}; import vthread.cli", b"", {}),
    "scan_sample": (SCAN_SAMPLE, b"", {}),
    "scan_sample_openblas_threads": (SCAN_SAMPLE, b"", {"OPENBLAS_NUM_THREADS": ""}),
}
"""Each variant's code, standard input and environment (over this one's)."""
PAIRS: Final = {"guard_import": "guard_import_eager", "guard_command": "guard_command_eager",
                "scan_imports": "scan_imports_eager",
                "scan_sample": "scan_sample_openblas_threads"}


def _run(code: str, stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``python -c code`` run in ``cwd``."""
    environment = {key: value for key, value in subprocess_env().items()
                   if key != "OPENBLAS_NUM_THREADS"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], input=stdin, cwd=cwd,
                   env={**environment, **env}, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(rounds: int, code_dir: Path) -> dict[str, Any]:
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpus: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for code, stdin, env in VARIANTS.values():  # one unmeasured run each: caches warm
        _run(code, stdin, env, code_dir)
    for _ in range(rounds):
        for name, (code, stdin, env) in VARIANTS.items():
            wall, cpu = _run(code, stdin, env, code_dir)
            walls[name].append(wall)
            cpus[name].append(cpu)
    rows: dict[str, dict[str, Any]] = {
        name: {"code": VARIANTS[name][0],
               "wall_min_s": round(min(walls[name]), 4),
               "wall_median_s": round(statistics.median(walls[name]), 4),
               "cpu_min_s": round(min(cpus[name]), 4),
               "cpu_median_s": round(statistics.median(cpus[name]), 4),
               "wall_s": [round(w, 4) for w in walls[name]]}
        for name in VARIANTS}
    ratios = {light: {"eager_over_light_wall_median": round(
                          rows[eager]["wall_median_s"] / rows[light]["wall_median_s"], 2),
                      "eager_over_light_cpu_median": round(
                          rows[eager]["cpu_median_s"] / rows[light]["cpu_median_s"], 2)}
              for light, eager in PAIRS.items()}
    hypotheses = {
        "H1": {"claim": "from vthread import Guard >= 2x faster than the eager import",
               "measured": ratios["guard_import"]["eager_over_light_wall_median"]},
        "H2": {"claim": "vthread guard starts >= 2x faster than through the eager entry",
               "measured": ratios["guard_command"]["eager_over_light_wall_median"]},
        "H3": {"claim": "the scan's imports >= 1.1x faster than the eager package's + cli",
               "measured": ratios["scan_imports"]["eager_over_light_wall_median"]},
        "H4": {"claim": "vthread scan --sample >= 1.05x faster with OpenBLAS at one thread",
               "measured": ratios["scan_sample"]["eager_over_light_wall_median"]},
    }
    for bound, key in ((2.0, "H1"), (2.0, "H2"), (1.1, "H3"), (1.05, "H4")):
        hypotheses[key]["holds"] = hypotheses[key]["measured"] >= bound
    return {"variants": rows, "ratios": ratios, "hypotheses": hypotheses}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        code_dir, digest = snapshot_code(Path(scratch))
        results = {"machine": machine(), "code_digest": digest, "rounds": args.rounds,
                   **measure(args.rounds, code_dir)}
    results["machine"]["load_average_end"] = list(os.getloadavg())
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for name, row in results["variants"].items():
        print(f"{name:22} wall {row['wall_median_s']:.3f} s (min {row['wall_min_s']:.3f}) "
              f"cpu {row['cpu_median_s']:.3f} s")
    for name, ratio in results["ratios"].items():
        print(f"{name}: eager / light {ratio['eager_over_light_wall_median']}x wall, "
              f"{ratio['eager_over_light_cpu_median']}x CPU")
    for key, hypothesis in results["hypotheses"].items():
        print(f"{key} {'holds' if hypothesis['holds'] else 'FAILS'}: {hypothesis['claim']} "
              f"({hypothesis['measured']}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
