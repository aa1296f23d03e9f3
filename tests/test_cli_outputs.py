"""``vthread scan --only-loops`` and ``--summary FILE``."""

from __future__ import annotations

import gzip
import importlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import EARLIER_RECORD, EARLIER_SUMMARY, SAMPLES, records, run

SAMPLE = SAMPLES / "threads.jsonl"


def python_read(data: bytes) -> bytes:
    """Run objects of ``data`` each given a NaN field: lines only Python's json reads, so
    that the CLI scans them in Python (in worker processes with --jobs)."""
    assert data.startswith(b'{"id":')
    return data.replace(b'{"id":', b'{"score":NaN,"id":')


def test_only_loops_keeps_looping_and_error_records(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The records of progressing threads are left out, nothing else: every looping record
    and every error record is written, byte for byte as without the flag."""
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(SAMPLE.read_bytes() + b"not json\n{\"x\": 1}\n[]\n")
    code, everything, _ = run(["scan", str(path), "-q"], monkeypatch)
    code_only, only, _ = run(["scan", str(path), "-q", "--only-loops"], monkeypatch)
    assert code == code_only == 0
    expected = [line for line, record in zip(everything.splitlines(), records(everything),
                                             strict=True)
                if "error" in record or record["verdict"] is not None]
    assert only.splitlines() == expected
    kept = records(only)
    assert sum("error" in r for r in kept) == 2
    assert sum(r.get("verdict") is not None for r in kept) == 53


def test_summary_file_holds_the_summary_figures(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """--summary FILE: the table's figures as JSON, the same as the stderr table's."""
    target = tmp_path / "summary.json"
    code, out, err = run(["scan", str(SAMPLE), "--summary", str(target)], monkeypatch)
    assert code == 0
    summary = json.loads(target.read_text())
    got = records(out)
    loops = [r for r in got if r["verdict"] is not None]
    assert summary["lines"] == summary["threads"] == len(got) == 300
    assert summary["errors"] == 0
    assert summary["loops"] == len(loops) == 53
    assert summary["progressing"] == 300 - 53
    assert sum(summary["loops_by_heuristic"].values()) == 53
    assert summary["wasted_messages"] == sum(r["loop_messages"] for r in loops)
    assert summary["messages"] == sum(r["messages"] for r in got)
    assert summary["formats_detected"] == [{"file": str(SAMPLE), "format": "native"}]
    assert summary["loops_without_tokens"] == sum(r["loop_tokens"] is None for r in loops)
    assert f"{summary['loops']:>14,}" in err


def test_a_file_with_no_thread_to_tell_its_format_by_is_not_listed_as_detected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file none of whose lines is a thread (each an error record) gives no format to
    detect: the summary does not say it was detected as native; the files beside it are."""
    (tmp_path / "runs.jsonl").write_text(json.dumps([{"role": "user", "content": "hi"}]) + "\n")
    (tmp_path / "notes.jsonl").write_text('{"x": 1}\n{"y": 2}\n')
    target = tmp_path / "summary.json"
    code, out, err = run(["scan", str(tmp_path), "-q", "--summary", str(target)], monkeypatch)
    assert code == 0 and len(records(out)) == 3
    summary = json.loads(target.read_text())
    assert summary["formats_detected"] == [{"file": str(tmp_path / "runs.jsonl"),
                                            "format": "openai"}]
    code, _, err = run(["scan", str(tmp_path / "notes.jsonl")], monkeypatch)
    assert code == 0 and "errors                                   2" in err
    assert "format" not in err and "detected" not in err


def test_loops_of_unknown_cost_are_said_not_counted(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop none of whose messages carries usage.tokens has an unknown cost: the summary
    says how many such loops its wasted tokens leave out, instead of reading as 0; when no
    loop's cost is known, the table says n/a and the file null (as the report's card does)."""
    counted = [{"type": "user", "text": "go", "usage": {"tokens": 5}}]
    loop = [{"type": "bot", "text": "again"}, {"type": "user", "text": "no"}] * 4
    priced = [{**m, "usage": {"tokens": 2}} for m in loop]
    path = tmp_path / "runs.jsonl"
    target = tmp_path / "summary.json"
    for runs, table in (([counted, loop], "n/a  (no looping run's messages carry usage.tokens)"),
                        ([counted, loop, priced],
                         "(1 loop with no countable usage.tokens not counted)")):
        path.write_text("".join(json.dumps(r) + "\n" for r in runs))
        for jobs in ("1", "2"):
            code, _, err = run(["scan", str(path), "--summary", str(target), "-j", jobs],
                               monkeypatch)
            summary = json.loads(target.read_text())
            assert (code, summary["loops"] - 1, summary["loops_without_tokens"]) == (
                0, len(runs) - 2, 1)
            # No loop priced: null in the file too, not 0 ("no waste").
            assert summary["wasted_tokens"] == (2 * 8 * (len(runs) - 2) or None)
            assert table in err


def test_summary_file_that_is_an_input_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing the summary over an input would destroy it: refused, the input untouched."""
    path = tmp_path / "runs.jsonl"
    shutil.copy(SAMPLE, path)
    before = path.read_bytes()
    code, out, err = run(["scan", str(path), "--summary", str(path)], monkeypatch)
    assert code == 2 and out == b""
    assert "is the input" in err
    assert path.read_bytes() == before


def test_quiet_summary_file_still_counts_tokens(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """-q drops the stderr table, not the figures the summary file asks for."""
    target = tmp_path / "summary.json"
    code, _, err = run(["scan", str(SAMPLE), "-q", "--summary", str(target)], monkeypatch)
    summary = json.loads(target.read_text())
    assert code == 0 and err == ""
    assert summary["tokens"] is not None and summary["wasted_tokens"] > 0


def test_summary_file_of_a_scan_cut_short_says_so(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """--summary FILE is written however the scan ends, so that a dashboard never reads a
    stale one: --strict's first bad line, and Ctrl-C, give "completed": false, the reason,
    and the figures of what was read; the exit status is the failure's."""
    target = tmp_path / "summary.json"
    target.write_text(EARLIER_SUMMARY)
    path = tmp_path / "runs.jsonl"
    path.write_bytes(SAMPLE.read_bytes() + b"not json\n" + SAMPLE.read_bytes())
    code, out, err = run(["scan", str(path), "--strict", "--summary", str(target)],
                         monkeypatch)
    summary = json.loads(target.read_text())
    assert code == 2 and summary["completed"] is False
    assert summary["failure"].startswith(f"{path}:301: not valid JSON: ")
    assert err == f"vthread scan: {summary['failure']}\n"
    assert summary["lines"] == len(records(out)) == 300 and summary["errors"] == 0
    from vthread import cli

    def interrupted(*args: object, **keywords: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_write", interrupted)
    code, _, err = run(["scan", str(SAMPLE), "--summary", str(target)], monkeypatch)
    summary = json.loads(target.read_text())
    assert code == 130 and "interrupted" in err
    assert (summary["completed"], summary["failure"]) == (False, "interrupted")


@pytest.mark.parametrize("large", [True, False], ids=["large line", "small line"])
def test_a_line_whose_scan_does_not_fit_the_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool) -> None:
    """A line the process holds but cannot scan (MemoryError, as a line of hundreds of
    megabytes under ``ulimit -v`` or strict overcommit raises in its parse), the lines
    read in the same chunk scanned again a line at a time. A large line (from LARGE_LINE)
    is an error record saying so, one warning on stderr naming it, and the lines after it
    are scanned: it ended the scan (71), where a longer line, past the most one line may
    take, was dropped and the scan went on (a tester's case). A small one that does not fit
    says the process is out of memory as a whole (a reviewer's case: every line became
    such a record, exit 0): status 71, one line on stderr naming the line, the records
    before it written, the summary saying the scan did not complete. Never a traceback,
    nor the internal error's 70."""
    from vthread import cli

    filler = "x" * (cli.LARGE_LINE if large else 10)
    huge = tmp_path / "huge.jsonl"
    huge.write_bytes(b'[{"type": "user", "text": "before"}]\n'
                     + json.dumps([{"type": "user", "text": f"memory-test-7f3a{filler}"}])
                     .encode() + b'\n[{"type": "user", "text": "after"}]\n')
    size = len(huge.read_bytes().splitlines()[1])
    target = tmp_path / "summary.json"
    reading = cli._core.scan_lines

    def short_of_memory(lines: list[bytes], *args: Any, **keywords: Any) -> Any:
        if any(b"memory-test-7f3a" in line for line in lines):
            raise MemoryError
        return reading(lines, *args, **keywords)

    monkeypatch.setattr(cli._core, "scan_lines", short_of_memory)
    code, out, err = run(["scan", str(SAMPLE), str(huge), "--summary", str(target)],
                         monkeypatch)
    summary = json.loads(target.read_text())
    written = records(out)
    if not large:
        assert code == 71 and len(written) == 301 and summary["lines"] == 301
        assert err == f"vthread scan: {summary['failure']}\n"
        assert summary["completed"] is False
        assert summary["failure"].startswith(f"out of memory at {huge}:2: ")
        assert "the records of the 301 lines before it are written" in summary["failure"]
        return
    assert code == 0 and len(written) == 303 and summary["lines"] == 303
    assert summary["completed"] is True and summary["errors"] == 1
    assert [(r["file"], r["line"]) for r in written if "error" in r] == [(str(huge), 2)]
    assert written[301]["error"] == (
        f"the line ({size:,} bytes) is too large to scan in the memory the process may use "
        "(ulimit -v, strict overcommit): it was not read")
    assert err.startswith(f"vthread scan: warning: {huge}:2: the line ({size:,} bytes) is "
                          "too large to scan")


@pytest.mark.parametrize("named", ["alone", "after another"])
def test_a_first_line_larger_than_the_memory_is_named_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str) -> None:
    """A JSONL file whose first line opens as a JSON document does ("[" and a run) is split
    as one to tell which it is: a first line too large for the memory there names its
    place (``FILE:1``) as a later line's does (a tester's 45 MB first line under ``ulimit
    -v``: "out of memory after 0 lines", no place), the files before it scanned."""
    from vthread import cli

    huge = tmp_path / "huge.jsonl"
    huge.write_bytes(b'[{"type": "user", "text": "memory-test-7f3a"}]\n'
                     b'[{"type": "user", "text": "after"}]\n')
    target = tmp_path / "summary.json"
    real_splitter = cli._core.DocumentSplitter

    class ShortOfMemory:
        def __init__(self, *args: Any) -> None:
            self.splitter = real_splitter(*args)

        def feed(self, block: bytes) -> Any:
            if b"memory-test-7f3a" in block:
                raise MemoryError
            return self.splitter.feed(block)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.splitter, name)

    monkeypatch.setattr(cli._core, "DocumentSplitter", ShortOfMemory)
    inputs = [str(huge)] if named == "alone" else [str(SAMPLE), str(huge)]
    code, out, _ = run(["scan", *inputs, "--summary", str(target)], monkeypatch)
    summary = json.loads(target.read_text())
    before = 0 if named == "alone" else 300
    assert code == 71 and len(records(out)) == summary["lines"] == before
    assert summary["failure"].startswith(f"out of memory at {huge}:1: ")


def test_running_out_of_memory_past_the_opening_names_no_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A MemoryError past a file's opening, in the reading's own work on a chunk (not a
    line too large), is not told as a line too large: the scan ends with 71, saying how
    many lines were written, as for any MemoryError of no line (the reviewer's: a chunk's
    format check blamed its first line)."""
    from vthread import cli

    source = tmp_path / "mid.jsonl"
    source.write_bytes(b'[{"type": "user", "text": "a"}]\n' * 30)
    monkeypatch.setattr(cli, "CHUNK_LINES", 10)
    real = cli._Settling.look

    def look(self: Any, label: str, lines: Any, line: int, *args: Any, **keywords: Any) -> Any:
        if line == 11:
            raise MemoryError
        return real(self, label, lines, line, *args, **keywords)

    monkeypatch.setattr(cli._Settling, "look", look)
    target = tmp_path / "summary.json"
    code, out, _ = run(["scan", str(source), "--summary", str(target)], monkeypatch)
    failure = json.loads(target.read_text())["failure"]
    assert code == 71 and len(records(out)) == 10
    assert failure.startswith("out of memory after 10 lines: ") and f"{source}:" not in failure


def test_sigterm_ends_a_scan_as_ctrl_c_does(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM (what timeout, Slurm and Kubernetes send) during a scan: the records so far
    are written, the summary says "completed": false and why, the status is 143, and the
    caller's own SIGTERM handler is back once the scan has ended."""
    import os
    import signal

    from vthread import cli

    target = tmp_path / "summary.json"
    written = tmp_path / "records.jsonl"
    real_scan = cli._scan_chunk
    chunks = []

    def scan_then_terminated(task: object) -> object:
        chunks.append(task)
        if len(chunks) == 2:  # the signal comes while the second chunk is being scanned
            os.kill(os.getpid(), signal.SIGTERM)
        return real_scan(task)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "_scan_chunk", scan_then_terminated)
    monkeypatch.setattr(cli, "CHUNK_LINES", 100)
    before = signal.getsignal(signal.SIGTERM)
    code, _, err = run(["scan", str(SAMPLE), "-o", str(written), "--summary", str(target)],
                       monkeypatch)
    assert signal.getsignal(signal.SIGTERM) is before
    summary = json.loads(target.read_text())
    assert code == 143 and err == "vthread scan: terminated (SIGTERM)\n"
    assert (summary["completed"], summary["failure"]) == (False, "terminated (SIGTERM)")
    kept = records(written.read_bytes())
    assert summary["lines"] == len(kept) == 100


@pytest.mark.parametrize(("signum", "code", "said"), [
    ("SIGTERM", 143, "terminated (SIGTERM)"), ("SIGINT", 130, "interrupted")])
def test_a_signal_while_the_inputs_are_listed_ends_as_one_during_the_scan(
        signum: str, code: int, said: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM or Ctrl-C before the scan (a directory of many files being listed and
    sniffed): said in one line, not a traceback, the summary written ("completed": false),
    an existing output left as it was, the status the scan's own, the handlers given back."""
    import os
    import signal

    from vthread import cli

    target = tmp_path / "summary.json"
    written = tmp_path / "records.jsonl"
    written.write_bytes(b"earlier\n")
    real_inputs = cli._inputs

    def listed_then_stopped(options: object, *collectors: object) -> object:
        found = real_inputs(options, *collectors)  # type: ignore[arg-type]
        os.kill(os.getpid(), getattr(signal, signum))
        return found

    monkeypatch.setattr(cli, "_inputs", listed_then_stopped)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    got, out, err = run(["scan", str(SAMPLE), "-o", str(written), "--summary", str(target)],
                        monkeypatch)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    assert (got, out, err) == (code, b"", f"vthread scan: {said}\n")
    summary = json.loads(target.read_text())
    assert (summary["completed"], summary["failure"], summary["lines"]) == (False, said, 0)
    assert written.read_bytes() == b"earlier\n"


def test_sigterm_is_not_taken_for_a_chunks_failure(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM while Python scans a chunk (lines holding NaN) ends the scan: it is not
    caught by the fallback that scans a failing chunk thread by thread (it was, and the scan
    went on to exit 0, "completed": true)."""
    import os
    import signal

    from vthread import cli

    real = cli.scan_validated
    sent: list[int] = []

    def terminated_once(*args: object, **keywords: object) -> object:
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGTERM)
        return real(*args, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "scan_validated", terminated_once)
    target = tmp_path / "summary.json"
    path = tmp_path / "runs.jsonl"
    path.write_bytes(python_read(SAMPLE.read_bytes()))
    code, out, _ = run(["scan", str(path), "--summary", str(target)], monkeypatch)
    summary = json.loads(target.read_text())
    assert code == 143 and (summary["completed"], summary["failure"]) == (
        False, "terminated (SIGTERM)")
    assert summary["lines"] == len(records(out)) == 0


def test_sigterm_as_the_worker_pool_starts_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGTERM just after the first worker process is forked (--jobs 2 on lines Python
    reads): status 143 and the process ends, its workers with it (a worker forked unknown to
    the pool was waited for forever, the scan never ending)."""
    import subprocess
    import sys

    path = tmp_path / "runs.jsonl"
    path.write_bytes(python_read(SAMPLE.read_bytes()) * 15)  # 4,500 lines: two workers
    script = f"""
import os, signal, sys
import concurrent.futures.process as pool
spawn = pool.ProcessPoolExecutor._spawn_process
def spawn_then_terminated(self):
    spawn(self)
    os.kill(os.getpid(), signal.SIGTERM)
pool.ProcessPoolExecutor._spawn_process = spawn_then_terminated
from vthread.cli import main
sys.exit(main(["scan", {str(path)!r}, "--jobs", "2", "-q", "-o", os.devnull]))
"""
    scan = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120,
                          check=False)
    assert scan.returncode == 143, scan.stderr.decode()
    assert scan.stderr.decode().endswith("vthread scan: terminated (SIGTERM)\n")


def _wait_until_full(pipe: Any) -> None:
    """Wait until the unread ``pipe`` holds a pipe's room (64 KiB): its writer has started,
    scanned and is blocked writing (a fixed wait of 3 s could end before a loaded machine's
    interpreter had started); a minute at most."""
    import array
    import fcntl
    import termios
    import time

    held = array.array("i", [0])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        fcntl.ioctl(pipe.fileno(), termios.FIONREAD, held, True)
        if held[0] >= 64 << 10:
            time.sleep(0.2)  # (and is in its write, its handlers set long before)
            return
        time.sleep(0.05)
    raise AssertionError(f"the pipe holds {held[0]} bytes after a minute")


def test_sigterm_while_writing_to_a_full_pipe_leaves_whole_records(tmp_path: Path) -> None:
    """A scan whose reader has not read yet (its pipe full, the write blocked) stopped by
    SIGTERM, with standard output buffered and unbuffered (PYTHONUNBUFFERED, whose raw
    write a signal cuts short: the rest of the records was never written, the output
    ending inside one): once the reader reads, every record is whole."""
    import os
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "runs.jsonl"
    path.write_bytes(SAMPLE.read_bytes() * 10)  # 3,000 lines: one chunk of records > 64 KiB
    for unbuffered in ("1", ""):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        if unbuffered:
            env["PYTHONUNBUFFERED"] = unbuffered
        scan = subprocess.Popen([sys.executable, "-m", "vthread", "scan", str(path), "-q"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        _wait_until_full(scan.stdout)  # scanned its chunk, blocked writing it
        scan.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        out, err = scan.communicate(timeout=120)
        assert scan.returncode in (0, 143), err
        assert out.endswith(b"\n"), unbuffered
        assert all(isinstance(record, dict) for record in records(out))


def test_a_signal_during_a_write_lets_the_records_end_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C or SIGTERM while records are being written takes effect once they are: the
    output never ends in part of a record."""
    import os
    import signal

    from vthread import _cli_signals, cli

    class SignalledMidWrite:
        def __init__(self) -> None:
            self.written = b""

        def write(self, data: bytes) -> int:
            self.written += data[:10]
            os.kill(os.getpid(), signal.SIGTERM)  # held back until the write is done
            self.written += data[10:]
            return len(data)

        def flush(self) -> None:
            pass

    handlers = _cli_signals.StopSignals()
    _cli_signals.STOP_SIGNALS.append(handlers)
    out = SignalledMidWrite()
    try:
        with pytest.raises(_cli_signals.TerminatedError):
            cli._write(out, b'{"a": "whole record"}\n')  # type: ignore[arg-type]
    finally:
        _cli_signals.STOP_SIGNALS.remove(handlers)
        handlers.close()
    assert out.written == b'{"a": "whole record"}\n'


def test_sigterm_to_a_scan_process_writes_its_summary(tmp_path: Path) -> None:
    """The same, for a real process blocked on a pipe that never ends."""
    import signal
    import subprocess
    import sys
    import time

    target = tmp_path / "summary.json"
    written = tmp_path / "records.jsonl"
    scan = subprocess.Popen(
        [sys.executable, "-m", "vthread", "scan", "-", "-o", str(written), "--summary",
         str(target)], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    assert scan.stdin is not None
    scan.stdin.write(SAMPLE.read_bytes())
    scan.stdin.flush()
    deadline = time.monotonic() + 60
    while not written.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the scan is waiting on the pipe, its handler set
    scan.send_signal(signal.SIGTERM)
    _, err = scan.communicate(timeout=60)
    scan.stdin.close()
    summary = json.loads(target.read_text())
    assert scan.returncode == 143, err
    assert (summary["completed"], summary["failure"]) == (False, "terminated (SIGTERM)")
    assert summary["lines"] == len(records(written.read_bytes()))


def test_worker_processes_scan_their_chunks_as_working(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's workers scan each chunk through :func:`cli._scan_chunk_in_worker`, so that
    Ctrl-C stops a chunk being scanned and leaves an idle worker waiting (see the test
    below): each chunk a worker scans finds it marked as working."""
    from dataclasses import replace

    from vthread import cli

    real = cli._scan_chunk

    def telling(task: Any) -> Any:
        done = real(task)
        return replace(done, warnings=(*done.warnings, f"working={cli._WORKING}"))

    monkeypatch.setattr(cli, "_scan_chunk", telling)
    monkeypatch.setattr(cli, "CHUNK_LINES", 50)
    path = tmp_path / "runs.jsonl"
    # (NaN: lines Python reads, in a pool of processes)
    path.write_text("".join(f'{{"id": {index}, "messages": [{{"type": "bot", "text": "m", '
                            '"usage": {"tokens": NaN}}]}\n' for index in range(400)))
    code, out, err = run(["scan", str(path), "-q", "--jobs", "2"], monkeypatch)
    said = err.decode() if isinstance(err, bytes) else err
    assert code == 0 and len(records(out)) == 400
    assert "working=True" in said and "working=False" not in said, said


def test_ctrl_c_in_an_idle_worker_process_is_no_traceback() -> None:
    """A worker process (``--jobs``) given Ctrl-C, as a terminal gives every process of the
    scan: while it scans a chunk, that chunk stops (KeyboardInterrupt); while it waits for
    work, nothing happens, its pool ending it as the scan stops (it raised in its wait, and
    printed a traceback that read as vthread's bug: a tester's case, 3 tries in 6)."""
    import subprocess
    import sys

    code = ("import os, signal\nfrom vthread import cli\ncli._worker_started()\n"
            "os.kill(os.getpid(), signal.SIGINT)\nprint('idle: waits on')\n"
            "try:\n    cli._scan_chunk_in_worker(None)\nexcept Exception:\n"
            "    print('the chunk ran')\n"
            "def scanning(task):\n    os.kill(os.getpid(), signal.SIGINT)\n"
            "    return 'not stopped'\n"
            "cli._scan_chunk = scanning\n"
            "try:\n    print(cli._scan_chunk_in_worker(None))\nexcept KeyboardInterrupt:\n"
            "    print('busy: stopped')\nprint('working after:', cli._WORKING)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                          check=False)
    assert done.stdout.decode().splitlines() == [
        "idle: waits on", "the chunk ran", "busy: stopped", "working after: False"], done
    assert done.returncode == 0 and b"Traceback" not in done.stderr


@pytest.mark.parametrize("arguments", [[], ["--jobs", "2"]])
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_a_stop_ends_a_scan_whose_reader_stopped_reading(
        tmp_path: Path, arguments: list[str], stop: str) -> None:
    """A scan writing to a pipe its reader stopped reading (| sleep, a stalled consumer),
    its write blocked, ends on SIGTERM or Ctrl-C within the time a stop waits for a write
    (it stayed blocked until the reader read again: ``timeout`` never ended it), writing
    its summary; the records it wrote end with whole lines but perhaps the last."""
    import signal
    import subprocess
    import sys
    import time

    from vthread import _cli_signals

    path = tmp_path / "runs.jsonl"
    path.write_bytes(SAMPLE.read_bytes() * 10)  # records of a chunk > 64 KiB, a pipe's room
    target = tmp_path / "summary.json"
    scan = subprocess.Popen([sys.executable, "-m", "vthread", "scan", str(path), "-q",
                             "--summary", str(target), *arguments],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_until_full(scan.stdout)  # blocked writing to the pipe nobody reads
    sent = time.monotonic()
    scan.send_signal(getattr(signal, stop))
    try:
        status = scan.wait(timeout=_cli_signals.STOP_WAITS_FOR_A_WRITE + 10)
    finally:
        scan.kill()
        out, err = scan.communicate()
    assert status == (143 if stop == "SIGTERM" else 130), err
    assert time.monotonic() - sent < _cli_signals.STOP_WAITS_FOR_A_WRITE + 10
    summary = json.loads(target.read_text())
    assert summary["completed"] is False and summary["lines"] > 0
    assert len(out) >= 64 << 10 and out.count(b"\n") >= 1


@pytest.mark.parametrize(("arguments", "only_python_reads"), [
    ([], False), (["--jobs", "2"], False), (["--jobs", "2", "--anywhere"], False),
    (["--jobs", "2"], True)])
def test_a_pipe_is_scanned_as_its_lines_come(tmp_path: Path, arguments: list[str],
                                             only_python_reads: bool) -> None:
    """Lines piped in by a writer that then pauses (tail -f, a harness writing a run at a
    time) get their records while the pipe is still open, not when a chunk fills or the
    stream ends, with --jobs 2 too (chunks in flight on threads; lines holding NaN, which
    Python reads, held for no pool of processes before their records); the rest follow
    when more comes."""
    import select
    import subprocess
    import sys

    data = SAMPLE.read_bytes()
    lines = (python_read(data) if only_python_reads else data).splitlines(keepends=True)
    scan = subprocess.Popen([sys.executable, "-m", "vthread", "scan", "-", "-q", *arguments],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert scan.stdin is not None and scan.stdout is not None
    try:
        scan.stdin.write(b"".join(lines[:3]))
        scan.stdin.flush()
        got = b""
        while got.count(b"\n") < 3:
            ready, _, _ = select.select([scan.stdout], [], [], 60)
            assert ready, f"no record while the pipe stays open (got {got!r})"
            got += scan.stdout.read1(1 << 16)
        assert [r["line"] for r in records(got)] == [1, 2, 3]
        scan.stdin.write(b"".join(lines[3:5]))
        scan.stdin.close()
        rest = scan.stdout.read()
    finally:
        if not scan.stdin.closed:
            scan.stdin.close()  # the scan ends with its input
        scan.wait(timeout=60)
    assert scan.returncode == 0
    assert [r["line"] for r in records(rest)] == [4, 5]


def test_a_summary_is_written_when_the_inputs_cannot_be_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing input ends the scan before it starts: the summary still says so, so that
    an earlier run's summary never stands for this one; a summary path that is an input
    is never written over."""
    target = tmp_path / "summary.json"
    target.write_text(EARLIER_SUMMARY)
    missing = tmp_path / "gone.jsonl"
    code, _, err = run(["scan", str(missing), "--summary", str(target)], monkeypatch)
    summary = json.loads(target.read_text())
    assert code == 2 and err == f"vthread scan: {missing}: no such file\n"
    assert summary["completed"] is False and summary["lines"] == 0
    assert summary["failure"] == f"{missing}: no such file"
    data = tmp_path / "runs.jsonl"
    data.write_bytes(SAMPLE.read_bytes())
    code, _, err = run(["scan", str(data), str(missing), "--summary", str(data)], monkeypatch)
    assert code == 2 and data.read_bytes() == SAMPLE.read_bytes()
    # A summary whose folder does not exist is said before the scan, not after it.
    nowhere = tmp_path / "no-such-folder" / "summary.json"
    records_file = tmp_path / "records.jsonl"
    code, _, err = run(["scan", str(data), "-o", str(records_file), "--summary",
                        str(nowhere)], monkeypatch)
    assert code == 74 and not records_file.exists()
    assert err == (f"vthread scan: cannot write {nowhere}: no such directory "
                   f"{nowhere.parent}\n")
    # Records that cannot be written, before the scan: the summary says so too (an earlier
    # run's was left standing for this one: a tester's case).
    for output in (tmp_path / "no-such-folder" / "records.jsonl", tmp_path):
        target.write_text(EARLIER_SUMMARY)
        code, _, err = run(["scan", str(data), "-o", str(output), "--summary", str(target)],
                           monkeypatch)
        summary = json.loads(target.read_text())
        assert code == summary["exit_status"] == 74 and summary["completed"] is False
        assert summary["failure"] == err.removeprefix("vthread scan: ").rstrip("\n")


def test_records_written_to_a_gz_path_are_gzip_compressed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-o PATH.gz: the records gzip-compressed (the same bytes, decompressed, as -o PATH;
    the same compressed bytes run after run), and a whole gzip file even when the scan is
    cut short."""
    import gzip

    from vthread import cli

    plain, packed = tmp_path / "records.jsonl", tmp_path / "records.jsonl.GZ"
    assert run(["scan", str(SAMPLE), "-q", "-o", str(plain)], monkeypatch)[0] == 0
    assert run(["scan", str(SAMPLE), "-q", "-o", str(packed)], monkeypatch)[0] == 0
    first = packed.read_bytes()
    assert first[:2] == b"\x1f\x8b" and gzip.decompress(first) == plain.read_bytes()
    assert run(["scan", str(SAMPLE), "-q", "-o", str(packed)], monkeypatch)[0] == 0
    assert packed.read_bytes() == first
    real_scan = cli._scan_chunk
    calls = []

    def interrupted_at_the_second(task: object) -> object:
        calls.append(task)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_scan(task)  # type: ignore[arg-type]

    monkeypatch.setattr(cli, "_scan_chunk", interrupted_at_the_second)
    monkeypatch.setattr(cli, "CHUNK_LINES", 100)
    assert run(["scan", str(SAMPLE), "-q", "-o", str(packed)], monkeypatch)[0] == 130
    assert gzip.decompress(packed.read_bytes()) == b"".join(
        plain.read_bytes().splitlines(keepends=True)[:100])


def test_summary_names_what_it_counts(tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary counts lines of JSONL, runs of a JSON document, and records of inputs of
    both kinds, on stderr and in --summary FILE ("unit")."""
    document = tmp_path / "runs.json"
    document.write_text(json.dumps([{"id": "a", "messages": [{"type": "bot", "text": "x"}]}]))
    target = tmp_path / "summary.json"
    for files, unit, count in (([SAMPLE], "line", "300 lines"), ([document], "run", "1 run "),
                               ([SAMPLE, document], "record", "301 records")):
        code, _, err = run(["scan", *map(str, files), "--summary", str(target)], monkeypatch)
        summary = json.loads(target.read_text())
        assert code == 0 and summary["unit"] == unit and summary["completed"] is True
        assert err.startswith(f"vthread scan: {count}") and f" {unit}s/s)" in err


def test_an_input_not_read_to_its_end_is_said(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A document that breaks is said on stderr (even with -q), counted in the summary table
    and listed in --summary's "cut_short", besides its error record; --strict names the run
    ("FILE: run N:"), not a line."""
    runs = [{"id": f"r{i}", "messages": [{"type": "bot", "text": "x"}]} for i in range(4)]
    path = tmp_path / "runs.json"
    text = json.dumps(runs, indent=1)
    path.write_text(text[: text.index('"r2"')])
    target = tmp_path / "summary.json"
    code, out, err = run(["scan", str(path), "--summary", str(target)], monkeypatch)
    *read, broken = records(out)
    assert code == 0 and len(read) == 2
    assert err.startswith(f"vthread scan: {path}: {broken['error']}\n")
    assert "  inputs cut short" in err
    summary = json.loads(target.read_text())
    assert summary["cut_short"] == [{"file": str(path), "why": broken["error"]}]
    assert summary["completed"] is True
    _, _, quiet = run(["scan", str(path), "-q"], monkeypatch)
    assert quiet == f"vthread scan: {path}: {broken['error']}\n"
    code, _, strict = run(["scan", str(path), "-q", "--strict"], monkeypatch)
    assert code == 2 and strict == f"vthread scan: {path}: {broken['error']}\n"


def test_a_scan_that_fails_before_any_record_leaves_the_output_file_as_it_was(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """-o names a file that exists: a scan that stops before its first record (a file whose
    format cannot be told) leaves it as it was; one that finishes replaces it, with nothing
    when it has no record; one cut short after records keeps them."""
    target = tmp_path / "records.jsonl"
    earlier = EARLIER_RECORD
    target.write_bytes(earlier)
    untold = tmp_path / "untold.jsonl"
    untold.write_text('[{"type": 5, "text": null}]\n')
    code, _, err = run(["scan", str(untold), "-o", str(target)], monkeypatch)
    assert code == 2 and "cannot tell the message format" in err
    assert target.read_bytes() == earlier
    for suffix in (".gz", ".parquet"):
        other = target.with_suffix(suffix)
        assert run(["scan", str(untold), "-o", str(other)], monkeypatch)[0] == 2
        assert not other.exists()
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert run(["scan", str(empty), "-o", str(target), "-q"], monkeypatch)[0] == 0
    assert target.read_bytes() == b""
    good = tmp_path / "a.jsonl"
    good.write_text(json.dumps([{"type": "user", "text": "hi"}]) + "\n")
    target.write_bytes(earlier)
    code, _, err = run(["scan", "--strict", str(good), str(untold), "-o", str(target)],
                       monkeypatch)
    assert code == 2 and [r["file"] for r in records(target.read_bytes())] == [str(good)]


def test_an_output_that_cannot_be_written_is_said_before_the_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "a.jsonl"
    good.write_text(json.dumps([{"type": "user", "text": "hi"}]) + "\n")
    code, _, err = run(["scan", str(good), "-o", str(tmp_path)], monkeypatch)
    assert code == 74 and f"cannot write {tmp_path}: it is a directory" in err
    code, _, err = run(["scan", str(good), "-o", str(tmp_path / "no" / "r.jsonl")], monkeypatch)
    assert code == 74 and f"no such directory {tmp_path / 'no'}" in err
    code, _, err = run(["scan", str(good), "-o", str(good / "r.jsonl")], monkeypatch)
    assert code == 74 and f"cannot write {good / 'r.jsonl'}: {good} is not a directory" in err
    code, out, err = run(["scan", str(good), "--summary", str(tmp_path)], monkeypatch)
    assert (code, out) == (74, b"") and f"cannot write {tmp_path}: it is a directory" in err
    code, out, err = run(["scan", str(good), "-q", "-o", "-"], monkeypatch)
    assert code == 0 and len(records(out)) == 1 and not (Path.cwd() / "-").exists()
    # vthread report asks the same, before its scan (a directory was found after it).
    report = importlib.import_module("vthread._cli_report")

    def no_scan(*args: object) -> int:
        raise AssertionError("scanned before the output was checked")

    monkeypatch.setattr(report, "_scan_into", no_scan)
    for output, why in ((tmp_path, "it is a directory"),
                        (tmp_path / "no" / "r.html", f"no such directory {tmp_path / 'no'}"),
                        (good / "r.html", f"{good} is not a directory")):
        code, out, err = run(["report", str(good), "-o", str(output)], monkeypatch)
        assert (code, out) == (74, b"") and f"cannot write {output}: {why}" in err
    code, _, err = run(["scan", str(good), "--summary", "-"], monkeypatch)
    assert code == 2 and "--summary takes a file path" in err and not (Path.cwd() / "-").exists()


def test_a_file_that_shrinks_while_read_is_said_to(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A file cut short after it was opened (log rotation by copytruncate): the lines left
    are scanned, then one error record and a line on stderr say how far it was read of the
    size it had, and the summary lists it as cut short (it said the file was read whole).
    A file that does not shrink says nothing of the kind."""
    from vthread import cli

    path = tmp_path / "runs.jsonl"
    path.write_bytes(SAMPLE.read_bytes())
    measured = cli._regular_size
    opened: list[int] = []

    def shrinking(raw: Any) -> int | None:
        size = measured(raw)
        if not opened:  # cut short once opened, before it is read
            assert size is not None
            opened.append(size)
            os.truncate(path, size // 2)
        return size

    monkeypatch.setattr(cli, "_regular_size", shrinking)
    target = tmp_path / "summary.json"
    code, out, err = run(["scan", str(path), "--summary", str(target), "-q"], monkeypatch)
    *kept, last = records(out)
    size = SAMPLE.stat().st_size
    why = (f"the file shrank while it was read: {size:,} bytes when opened, read to its end "
           f"at byte {size // 2:,}")
    assert code == 0 and last["error"] == why and err == f"vthread scan: {path}: {why}\n"
    assert len(kept) == path.read_bytes().count(b"\n") + 1  # the last line cut in two
    summary = json.loads(target.read_text())
    assert summary["cut_short"] == [{"file": str(path), "why": why}]
    monkeypatch.setattr(cli, "_regular_size", measured)
    code, out, err = run(["scan", str(SAMPLE), "-q"], monkeypatch)
    assert code == 0 and err == "" and len(records(out)) == 300


@pytest.mark.parametrize("shape", ["document", "gzip"])
def test_a_document_or_gzip_that_shrinks_while_read_says_so_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str) -> None:
    """A JSON document or a gzip file cut short once opened breaks off where it now ends; its
    error record says first that the file shrank, then where the document or stream broke
    (it said only "Unterminated string ... in run 151", as if the file were written so). The
    same break in a file that did not shrink says nothing of shrinking."""
    from vthread import cli

    runs = [{"id": i, "messages": [{"type": "user", "text": f"hi {i}"}]} for i in range(300)]
    if shape == "document":
        path, data = tmp_path / "runs.json", json.dumps(runs).encode()
    else:
        lines = "".join(json.dumps(run) + "\n" for run in runs).encode()
        path, data = tmp_path / "runs.jsonl.gz", gzip.compress(lines, mtime=0)
    path.write_bytes(data)
    measured = cli._regular_size
    opened: list[int] = []

    def shrinking(raw: Any) -> int | None:
        size = measured(raw)
        if not opened:  # the size at open; the size at close is measured as it is
            assert size is not None
            opened.append(size)
            os.truncate(path, size // 2)
        return size

    monkeypatch.setattr(cli, "_regular_size", shrinking)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    *kept, last = records(out)
    shrank = (f"the file shrank while it was read: {len(data):,} bytes when opened, read to "
              f"its end at byte {len(data) // 2:,}; ")
    assert code == 0 and 0 < len(kept) < len(runs)
    assert last["error"].startswith(shrank) and len(last["error"]) > len(shrank)
    assert err == f"vthread scan: {path}: {last['error']}\n"
    monkeypatch.setattr(cli, "_regular_size", measured)
    path.write_bytes(data[: len(data) // 2])  # the same break, in a file written so
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert records(out)[-1]["error"] == last["error"].removeprefix(shrank)
    assert "shrank" not in err


_STOPPED_TWICE = """
import os, signal, sys
from concurrent.futures import ThreadPoolExecutor
from vthread import cli
from vthread._cli_main import main

path, written, target, when = sys.argv[1:]
cli.CHUNK_LINES = 100  # chunks in flight when the first Ctrl-C comes
cli._usable_cpus = lambda: 2  # --jobs 2 takes two threads on any machine
real_write, writes = cli._write, []

def write_then_interrupted(out, data, flush=False):
    writes.append(data)
    if when != "finished" and len(writes) == 3:
        os.kill(os.getpid(), signal.SIGINT)  # the first Ctrl-C, chunks in flight
    real_write(out, data, flush)

def interrupted_first(owner, name):
    real = getattr(owner, name)
    def again(*args, **keywords):
        if writes:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **keywords)
    setattr(owner, name, again)

cli._write = write_then_interrupted
if when == "output":  # the second while the output closes
    interrupted_first(cli, "_close_quietly")
elif when == "pool":  # the second while the pool waits for its threads
    interrupted_first(ThreadPoolExecutor, "shutdown")
else:  # both once the scan has finished: its summary being written, the process ending
    interrupted_first(cli, "_write_summary")
sys.argv = ["vthread", "scan", path, "-j", "2", "-o", written, "--summary", target]
code = main()
os.kill(os.getpid(), signal.SIGINT)
sys.exit(code)
"""


@pytest.mark.parametrize("when", ["output", "pool", "finished"])
def test_a_second_ctrl_c_ends_the_scan_as_the_first_does(when: str, tmp_path: Path) -> None:
    """Ctrl-C twice during a --jobs 2 scan, the second while the first is being handled
    (the output closing, the pool waiting for its running chunks): status 130 in one line,
    no traceback (there was one, from the pool shut down in the scan's generator once the
    handlers were given back, and from the interpreter's exit), the records so far written
    and counted by the summary ("completed": false). Ctrl-C once the scan has finished (its
    summary being written, the process ending) changes nothing: status 0, "completed":
    true (it was 130 with "completed": true, or a summary of nothing written over it)."""
    import gzip
    import subprocess
    import sys

    path = tmp_path / "runs.jsonl"
    path.write_bytes(SAMPLE.read_bytes() * 4)  # 1,200 lines: 12 chunks of 100
    written = tmp_path / "records.jsonl.gz"
    target = tmp_path / "summary.json"
    scan = subprocess.run([sys.executable, "-c", _STOPPED_TWICE, str(path), str(written),
                           str(target), when], capture_output=True, timeout=120,
                          check=False)
    err = scan.stderr.decode()
    summary = json.loads(target.read_text())
    kept = records(gzip.decompress(written.read_bytes()))
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if when == "finished":
        assert (scan.returncode, summary["completed"]) == (0, True), err
        assert summary["lines"] == len(kept) == 1200
    else:
        assert (scan.returncode, err) == (130, "vthread scan: interrupted\n")
        assert (summary["completed"], summary["failure"]) == (False, "interrupted")
        assert summary["lines"] == len(kept) < 1200


def test_a_jsonl_file_still_being_written_is_listed_as_cut_short(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONL file whose last line ends inside its value (a run still being appended) is
    read to its end, that line's error record saying "cut short?", and is listed in the
    summary's cut_short with a note on stderr, as a document or a gzip stream cut so is (it
    was listed nowhere: a nightly job reading the summary saw no file in flight). A last
    line written wrong, or whole, is not."""
    whole = json.dumps({"id": "a", "messages": [{"type": "user", "text": "hello there"}]})
    flight = tmp_path / "flight.jsonl"
    flight.write_text(whole + "\n" + whole[:30])
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(whole + "\n" + whole[:-1] + "x}\n")
    done = tmp_path / "done.jsonl"
    done.write_text(whole + "\n" + whole + "\n")
    target = tmp_path / "summary.json"
    code, out, err = run(["scan", str(flight), str(wrong), str(done), "-q", "--summary",
                          str(target)], monkeypatch)
    got = records(out)
    assert code == 0 and len(got) == 6
    assert got[1]["error"].endswith("(it ends inside its value: cut short?)")
    why = "line 2 ends inside its value: cut short, or still being written"
    assert json.loads(target.read_text())["cut_short"] == [{"file": str(flight), "why": why}]
    assert err == f"vthread scan: {flight}: note: {why}\n"
    _, _, err = run(["scan", str(flight)], monkeypatch)
    assert re.search(r"\n  inputs cut short +1  \(said above", err)


# --------------------------------------------- an output path holding what vthread did not write

_REFUSED = "vthread writes over no such file"


@pytest.mark.parametrize("name", ["runs.jsonl", "runs.json", "runs.jsonl.gz", "run.traj",
                                  "runs.txt", "runs", "link.txt", "record-then-runs.jsonl",
                                  "blank-then-runs.jsonl.gz", "notes.md"])
def test_an_output_path_holding_runs_is_refused_and_left_as_it_was(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--summary runs.json a.jsonl`` took the FILE for the summary's path and wrote over a
    published run set (a tester's case): an -o or --summary path that holds runs, under any
    name, through a link, behind a record line or a gzip of blank lines, or any other
    user's file, is refused with 2 before anything is written, an early summary's too, and
    the report's page is never written over them either."""
    runs = tmp_path / name
    sample = (SAMPLES / "threads.jsonl").read_bytes()
    record = json.dumps({"id": "r", "file": "a.jsonl", "line": 1, "verdict": None,
                         "messages": 1}).encode() + b"\n"
    held = {"runs.jsonl.gz": gzip.compress(sample),
            "runs.json": b"[" + b",".join(sample.splitlines()) + b"]",
            "record-then-runs.jsonl": record + sample,
            "blank-then-runs.jsonl.gz": gzip.compress(b"\n" * 100_000 + sample),
            "notes.md": b"# what the runs showed\n"}.get(name, sample)
    if name == "link.txt":
        (tmp_path / "linked.jsonl").write_bytes(held)
        runs.symlink_to(tmp_path / "linked.jsonl")
    else:
        runs.write_bytes(held)
    other = SAMPLES / "openai.jsonl"
    records_file = tmp_path / "records.jsonl"
    for argv in (["scan", "--summary", str(runs), str(other)],
                 ["scan", str(other), "-q", "-o", str(runs)],
                 ["scan", str(other), "-q", "-o", str(records_file), "--summary", str(runs)],
                 ["scan", str(tmp_path / "gone.jsonl"), "--summary", str(runs)]):
        code, out, err = run(argv, monkeypatch)
        assert code == 2 and out == b"", argv
        assert (f"{runs} exists and" in err and _REFUSED in err) or "no such file" in err, (
            argv, err)
        assert runs.read_bytes() == held, argv
        assert not records_file.exists(), argv
    code, _, err = run(["scan", str(other), "-q", "-o", str(records_file)], monkeypatch)
    assert code == 0
    code, _, err = run(["report", str(records_file), "-o", str(runs)], monkeypatch)
    assert code == 2 and f"the output {runs} exists and" in err and _REFUSED in err
    assert runs.read_bytes() == held


def test_an_earlier_output_at_an_output_path_is_written_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What vthread wrote at an output path is written over by the next run: its records
    (plain, gzip, Parquet, a gzip of none: a night without a loop; under any name), its
    summary whatever the name, a report's page, and a file of nothing, empty or blank (the
    second reviewer found the first four refused by a first version, a tester records
    named .traj by the second, a reviewer gzip records cut short by the third)."""
    sample = str(SAMPLES / "threads.jsonl")
    quiet = tmp_path / "quiet.jsonl"
    quiet.write_text(json.dumps([{"type": "user", "text": "hi"}]) + "\n")
    outputs = ["records.jsonl", "records.jsonl.gz", "none.jsonl.gz", "summary.jsonl",
               "page.json", "empty.json", "blank.jsonl", "records.traj", "records",
               "cut.jsonl.gz"]
    if importlib.util.find_spec("pyarrow") is not None:
        outputs.append("records.parquet")
    for name in outputs:
        path = tmp_path / name
        if name == "summary.jsonl":
            first = ["scan", sample, "-q", "-o", os.devnull, "--summary", str(path)]
        elif name == "page.json":
            assert run(["scan", sample, "-q", "-o", str(tmp_path / "r.jsonl")],
                       monkeypatch)[0] == 0
            first = ["report", str(tmp_path / "r.jsonl"), "-o", str(path)]
        elif name == "none.jsonl.gz":
            first = ["scan", str(quiet), "-q", "--only-loops", "-o", str(path)]
        elif name in ("empty.json", "blank.jsonl"):
            path.write_bytes(b"" if name == "empty.json" else b"\n \r\n\t\n")
            first = []
        else:
            first = ["scan", sample, "-q", "-o", str(path)]
        if first:
            assert run(first, monkeypatch)[0] == 0, name
        if name == "cut.jsonl.gz":  # (a scan killed as it wrote them: a reviewer's case)
            path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
        assert path.stat().st_size > 0 or name == "empty.json", name
        assert name != "none.jsonl.gz" or gzip.decompress(path.read_bytes()) == b""
        before = path.read_bytes()
        again = (["report", str(tmp_path / "r.jsonl"), "-o", str(path), "--title", "again"]
                 if name == "page.json" else
                 ["scan", str(quiet), "-q", "-o", os.devnull, "--summary", str(path)]
                 if name == "summary.jsonl" else ["scan", str(quiet), "-q", "-o", str(path)])
        code, _, err = run(again, monkeypatch)
        assert code == 0 and _REFUSED not in err, (name, err)
        assert path.read_bytes() != before, name


def test_a_summary_is_told_by_its_opening_or_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A summary as vthread writes it is told by its first bytes, however large (one naming
    430,000 inputs passes 64 MiB: a tester's case); one written again otherwise (minified)
    is read whole, up to the bound."""
    from vthread import _cli_report

    summary = tmp_path / "summary.json"
    argv = ["scan", str(SAMPLES / "threads.jsonl"), "-q", "-o", os.devnull, "--summary",
            str(summary)]
    assert run(argv, monkeypatch)[0] == 0
    monkeypatch.setattr(_cli_report, "_SUMMARY_BYTES", 10)
    assert run(argv, monkeypatch)[0] == 0
    summary.write_text(json.dumps(json.loads(summary.read_text())))
    code, _, err = run(argv, monkeypatch)
    assert code == 2 and _REFUSED in err
    monkeypatch.undo()
    assert run(argv, monkeypatch)[0] == 0


def test_a_parquet_file_not_told_as_records_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Parquet file at an output path is written over when it holds a scan's records; one
    of runs, one cut short without its footer (a scan killed as it wrote it: a tester's
    case), and any, without pyarrow, are refused, each saying why."""
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (vthread[arrow])")
    import pyarrow as pa
    import pyarrow.parquet as pq

    sample = str(SAMPLES / "threads.jsonl")
    earlier = tmp_path / "records.parquet"
    assert run(["scan", sample, "-q", "-o", str(earlier)], monkeypatch)[0] == 0
    runs = tmp_path / "runs.parquet"
    pq.write_table(pa.table({"messages": [[{"type": "user", "text": "hi"}]]}), runs)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(earlier.read_bytes()[:5000])
    summary = tmp_path / "summary.json"
    for path, said in ((runs, "is a Parquet file without the columns of a scan's records"),
                       (cut, "is a Parquet file cut short, without its footer")):
        before = path.read_bytes()
        code, _, err = run(["scan", sample, "-q", "-o", str(path)], monkeypatch)
        assert code == 2 and said in err and path.read_bytes() == before
    assert run(["scan", sample, "-q", "-o", str(earlier)], monkeypatch)[0] == 0
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # (as without the extra)
    before = earlier.read_bytes()
    code, _, err = run(["scan", sample, "-q", "-o", os.devnull, "--summary", str(earlier)],
                       monkeypatch)
    assert code == 2 and "without pyarrow cannot be told from one of runs" in err
    assert earlier.read_bytes() == before and not summary.exists()
