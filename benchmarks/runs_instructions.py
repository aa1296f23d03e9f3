"""Instructions and page faults of the core's search for long repeated blocks
(``vthread._core.long_runs``), 100k values against 1M: the growth figures of
``benchmarks.runs_growth`` without this VM's scheduling noise.

A call at 100k values takes 1 to 4 ms, about the size of the noise of a shared 2-vCPU VM, so
CPU-time ratios of 1M against 100k spread from 8x to 17x between runs. Instructions
executed do not depend on the load: each (shape, size) runs in a child under Valgrind's
cachegrind (no cache simulation), once making the values and calling ``long_runs`` and
once making them only, and the difference is the call's instructions (each child runs
the same instructions to within a few dozen, :data:`_STEADY`). The call's minor
page faults (fresh memory it touches, which instructions do not count) come from
``getrusage`` around the call in a child run natively.

    python -m benchmarks.runs_instructions                  # 100k and 1M values
    python -m benchmarks.runs_instructions --sizes 10000,100000

Writes ``benchmarks/results/runs-instructions.json``. Needs ``valgrind``; about 10 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any, Final

from benchmarks.runs_growth import SHAPES

ROOT: Final = Path(__file__).resolve().parent.parent
RESULTS: Final = ROOT / "benchmarks" / "results" / "runs-instructions.json"

# The child: make one shape's values and, when asked, call long_runs once (after a call on
# a small sequence, so that the first call's one-off costs are in both runs).
CHILD: Final = """
import resource, sys
import numpy as np
from benchmarks.runs_growth import SHAPES, SHORTEST
from vthread import _core
name, size, call = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "call"
values = SHAPES[name](size)
bounds = np.array([0, values.size], np.int64)
_core.long_runs(SHAPES[name](100), np.array([0, 100], np.int64), SHORTEST)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
if call:
    _core.long_runs(values, bounds, SHORTEST)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


# The same instructions in every run of a child (to within a few dozen): a fixed hash seed,
# and no idle BLAS threads spinning (without these, two runs differed by 15-20 million).
_STEADY: Final = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0",
                  "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def _instructions(name: str, size: int, call: bool) -> int:
    """Instructions the child executed (Valgrind's ``Ir``), calling or not."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "cachegrind.out"
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        f"--cachegrind-out-file={out}", sys.executable, "-c", CHILD, name,
                        str(size), "call" if call else "none"],
                       env=_STEADY, check=True, capture_output=True)
        summary = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
        if summary is None:
            raise SystemExit(f"no instruction count in cachegrind's output for {name}")
        return int(summary.group(1))


def _page_faults(name: str, size: int) -> int:
    """Minor page faults of the call, run natively."""
    done = subprocess.run([sys.executable, "-c", CHILD, name, str(size), "call"],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
                          capture_output=True, text=True)
    return int(done.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    options = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is needed (Debian: apt-get install valgrind)")
    sizes = [int(size) for size in options.sizes.split(",")]
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    report: dict[str, Any] = {
        "what": "instructions (Valgrind Ir) and minor page faults of one "
                "vthread._core.long_runs call (shortest block 25) on one sequence",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "versions": {"python": platform.python_version(), "valgrind": version},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "shapes": {},
    }
    for name in SHAPES:
        points = []
        for size in sizes:
            work = _instructions(name, size, True) - _instructions(name, size, False)
            points.append({"values": size, "instructions": work,
                           "page_faults": _page_faults(name, size)})
        steps = [round(b["instructions"] / max(a["instructions"], 1), 2)
                 for a, b in pairwise(points)]
        report["shapes"][name] = {"points": points, "instruction_steps": steps}
        print(f"{name:24}", "  ".join(
            f"{p['values']:>9,}: {p['instructions'] / 1e6:8.1f} M instr, "
            f"{p['page_faults']:>6} faults" for p in points), " steps", steps, flush=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
