"""Two builds of vthread side by side: the same scans, rounds alternating which goes first.

Each build is a virtual environment's interpreter (one of them an older commit's, built in
its own clone). A round runs, for each build, ``vthread scan FILE -q`` and ``vthread scan
FILE -q --anywhere`` as whole processes (the CPU time of the child) and, in one fresh
interpreter, ``vthread.scan`` of the parsed file with and without ``anywhere`` (the minimum
of 3 calls). Medians over the rounds; the records' digest per build must agree, or the
builds do not answer alike. Prints a JSON summary (written to ``--out`` when given).

The processes read compiled bytecode, as an installed package's do: a machine that sets
``PYTHONDONTWRITEBYTECODE`` (this one does) would otherwise compile every module again in
every run, about 0.1 s of CPU no installed copy pays. The bytecode goes to a scratch
directory (``PYTHONPYCACHEPREFIX``), written by a first run of each build before the rounds.

    python -m benchmarks.ab_builds /tmp/old/.venv/bin/python .venv/bin/python \\
        --file /tmp/w10k.jsonl --rounds 5
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

_IN_PROCESS = r"""
import hashlib, json, resource, sys
import vthread
threads = [json.loads(line) for line in open(sys.argv[1], "rb")]
threads = [t["messages"] if isinstance(t, dict) else t for t in threads]
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
found = {}
for anywhere in (False, True):
    times = []
    for _ in range(3):
        start = cpu()
        result = vthread.scan(threads, anywhere=anywhere)
        times.append(cpu() - start)
    records = json.dumps([result.record(i) for i in range(len(threads))], default=str)
    found["anywhere" if anywhere else "default"] = [
        min(times), hashlib.sha256(records.encode()).hexdigest()[:16]]
print(json.dumps(found))
"""


def _with_bytecode(scratch: str) -> dict[str, str]:
    """This environment, the bytecode written to and read from ``scratch``."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": scratch}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


_ENV: dict[str, str] | None = None
"""The children's environment (:func:`_with_bytecode`), set by :func:`main`."""


def _child_cpu(command: list[str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = subprocess.run(command, capture_output=True, check=True, env=_ENV).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return spent, hashlib.sha256(output).hexdigest()[:16]


def _round(python: str, path: Path) -> dict[str, tuple[float, str]]:
    vthread = str(Path(python).with_name("vthread"))
    found = {f"cli {mode}": _child_cpu([vthread, "scan", str(path), "-q", *flags])
             for mode, flags in (("default", []), ("anywhere", ["--anywhere"]))}
    done = subprocess.run([python, "-c", _IN_PROCESS, str(path)], capture_output=True,
                          text=True, check=True, cwd="/", env=_ENV)
    for mode, (spent, digest) in json.loads(done.stdout.splitlines()[-1]).items():
        found[f"in process {mode}"] = (spent, digest)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="the first build's python")
    parser.add_argument("after", help="the second build's python")
    parser.add_argument("--file", required=True, type=Path, help="a JSONL file of threads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    options = parser.parse_args()
    # Absolute, not resolved: a virtual environment's python is a link it must be run by.
    builds = {"before": os.path.abspath(options.before), "after": os.path.abspath(options.after)}
    times: dict[str, dict[str, list[float]]] = {name: {} for name in builds}
    digests: dict[str, set[str]] = {}
    global _ENV
    scratch = tempfile.TemporaryDirectory(prefix="ab-builds-bytecode-")
    _ENV = _with_bytecode(scratch.name)
    for python in builds.values():  # writes each build's bytecode
        _child_cpu([str(Path(python).with_name("vthread")), "--version"])
        _child_cpu([python, "-c", "import vthread.cli, vthread.anywhere"])
    for number in range(options.rounds):
        order = list(builds.items())
        for name, python in order if number % 2 == 0 else reversed(order):
            for what, (spent, digest) in _round(python, options.file).items():
                times[name].setdefault(what, []).append(spent)
                digests.setdefault(what, set()).add(digest)
        print(f"round {number + 1} of {options.rounds} done", flush=True)
    summary: dict[str, Any] = {
        "file": str(options.file), "rounds": options.rounds, "builds": builds,
        "bytecode": "each build's, compiled by a first run before the rounds",
        "median_cpu_s": {name: {what: round(statistics.median(spent), 4)
                                for what, spent in found.items()}
                         for name, found in times.items()},
        "records_identical": {what: len(found) == 1 for what, found in digests.items()},
    }
    scratch.cleanup()
    text = json.dumps(summary, indent=1)
    print(text)
    if options.out is not None:
        options.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
