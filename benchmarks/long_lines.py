"""Peak memory of ``vthread scan`` on one very long line, and what a memory limit makes of it.

A line is read whole (a thread is one JSON value), so its peak memory grows with the line;
the claim under test is that it grows by a small factor, and that a line larger than the
memory the process may use ends the scan with status 71 and a message (or is read), never
with the allocator aborting the process. Each shape is written to a temporary file and
scanned in its own child process (``python -m vthread scan FILE -q -o /dev/null``), whose
peak RSS is that child's alone (:mod:`benchmarks.child_peak`); then again under ``RLIMIT_AS`` of
``--limit`` times the line's size, reporting the exit status and the first line of stderr.

Usage: ``python -m benchmarks.long_lines [--megabytes 200] [--limit 2.5]``. Writes
``benchmarks/results/long_lines.json``. Needs about twice ``--megabytes`` of free disk.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from benchmarks.child_peak import run_child

ROOT: Final = Path(__file__).resolve().parent.parent
RESULT: Final = ROOT / "benchmarks" / "results" / "long_lines.json"
SHORT_LINE: Final = b'[{"type": "user", "text": "hi"}]\n'


def _one_text(size: int) -> bytes:
    """One thread of one text of ``size`` characters (the file's first line)."""
    return b'[{"type": "user", "text": "' + b"x" * size + b'"}]\n'


def _escaped_text(size: int) -> bytes:
    """A short line, then a thread whose text is ``size`` characters, half of them
    newlines written as escapes (so the text is unescaped to be read)."""
    return SHORT_LINE + b'[{"type": "user", "text": "' + b"x\\n" * (size // 2) + b'"}]\n'


def _runaway(size: int) -> bytes:
    """A short request, then an agent text that repeats one sentence (a runaway text, whose
    record's excerpt is made from it)."""
    sentence = b"word. "
    return (b'[{"type": "user", "text": "go"}, {"type": "bot", "text": "'
            + sentence * (size // len(sentence)) + b'"}]\n')


def _many_messages(size: int) -> bytes:
    """One thread of short messages, ``size`` bytes in all."""
    message = b'{"type": "bot", "text": "hello there, a message of some length"}'
    return b"[" + b",".join([message] * (size // (len(message) + 1))) + b"]\n"


SHAPES: Final[dict[str, Callable[[int], bytes]]] = {
    "one text, first line": _one_text,
    "one escaped text, second line": _escaped_text,
    "a runaway text": _runaway,
    "many short messages": _many_messages,
}


def measure(path: Path, limit: int | None = None) -> dict[str, Any]:
    """Scan ``path`` in a child (under an address-space limit of ``limit`` bytes, when
    given): its exit status, peak RSS (MB), wall time and first line of stderr."""
    command = [sys.executable, "-m", "vthread", "scan", str(path), "-q", "-o", os.devnull]

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = run_child(command, env={**os.environ, "PYTHONPATH": str(ROOT)},
                     preexec_fn=limited, keep_stderr=True)
    return {
        "exit_status": done.exit_status,
        "peak_rss_mb": round(done.peak_kib / 1024, 1),
        "wall_s": round(done.wall_s, 2),
        "stderr": done.stderr.splitlines()[0][:200] if done.stderr else "",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.long_lines",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=200,
                        help="the long line's size in MB (default 200)")
    parser.add_argument("--limit", type=float, default=2.5,
                        help="the address-space limit of the limited runs, in line sizes "
                        "(default 2.5)")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the files go")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)

    size = args.megabytes * 1_000_000
    folder = Path(tempfile.mkdtemp(prefix="vthread-long-lines-", dir=args.dir))
    runs = []
    try:
        for name, make in SHAPES.items():
            path = folder / "line.jsonl"
            data = make(size)
            path.write_bytes(data)
            del data
            line_mb = path.stat().st_size / 1e6
            free = measure(path)
            limited = measure(path, int(args.limit * path.stat().st_size) + (400 << 20))
            runs.append({"shape": name, "file_mb": round(line_mb, 1), "free": free,
                         "limited": limited,
                         "peak_per_line_byte": round(free["peak_rss_mb"] / line_mb, 2)})
            print(f"long_lines: {name}: {line_mb:.0f} MB, peak {free['peak_rss_mb']:.0f} MB; "
                  f"limited: status {limited['exit_status']}", file=sys.stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    import numpy

    result = {
        "what": "peak RSS of `vthread scan FILE -q -o /dev/null` on one long line, and its "
                "exit status under RLIMIT_AS (limit x the file's size, plus 400 MB for the "
                "interpreter, NumPy and the core)",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine()},
        "versions": {"python": platform.python_version(), "numpy": numpy.__version__},
        "megabytes": args.megabytes, "limit_factor": args.limit,
        "runs": runs,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"long_lines: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
