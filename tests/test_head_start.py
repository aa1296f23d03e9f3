"""The head start (:mod:`vthread._head_start`): the core's readings of a file's first chunks,
made while ``vthread scan --jobs N`` imports its modules, are handed over only when they are
what the scan would have read, so that the records never depend on it."""

from __future__ import annotations

import argparse
import functools
import io
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import openai_messages, runs, threads

from vthread import _cli_lines, _cli_main, _core, _head_start, cli
from vthread._core_call import CoreCall
from vthread._head_start import HeadStart, guessed_call

SAMPLE = cli.SAMPLE
ROOT = Path(__file__).resolve().parent.parent


def _options(*argv: str) -> argparse.Namespace:
    return _cli_main._parser().parse_args(["scan", *argv])


def _small_chunks(monkeypatch: pytest.MonkeyPatch, lines: int) -> None:
    """Chunks of ``lines`` lines, cut so by the scan and by the head start alike."""
    monkeypatch.setattr(cli, "CHUNK_LINES", lines)
    monkeypatch.setattr(_head_start, "CHUNK_LINES", lines)


def _records(options: argparse.Namespace, out: Path, head_start: HeadStart | None,
             code: int = 0) -> bytes:
    options.output = str(out)
    try:
        assert cli.scan_command(options, head_start) == code
    finally:
        if head_start is not None:
            head_start.close()
    return out.read_bytes()


def _read_ahead(path: Path, call: CoreCall, most_bytes: int = 1 << 30) -> HeadStart:
    """A head start that has read ``path`` as far as it may before the scan begins."""
    head_start = HeadStart(str(path), call, most_bytes)
    assert head_start.wait(60)
    return head_start


@pytest.mark.parametrize("argv", [
    [], ["--format", "native"], ["-q"], ["--mask-volatile"], ["--strict"],
    ["--min-repetitions", "3", "--max-pattern-length", "inf"], ["--fail-on-loop"],
])
def test_the_scan_takes_the_readings_made_ahead_and_writes_the_same_records(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_chunks(monkeypatch, 16)  # the sample's 300 lines: 19 chunks
    options = _options(str(SAMPLE), "--jobs", "2", *argv)
    call = guessed_call(options)
    assert call is not None
    code = 1 if "--fail-on-loop" in argv else 0
    without = _records(options, tmp_path / "without.jsonl", None, code)
    head_start = _read_ahead(SAMPLE, call)
    assert _records(options, tmp_path / "with.jsonl", head_start, code) == without
    assert head_start.taken == 19  # every chunk, read once, by the head start
    one_job = _options(str(SAMPLE), "--jobs", "1", *argv)
    assert _records(one_job, tmp_path / "one.jsonl", None, code) == without


def test_a_reading_made_with_other_arguments_or_lines_is_not_taken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _small_chunks(monkeypatch, 16)
    options = _options(str(SAMPLE), "--jobs", "2")
    without = _records(options, tmp_path / "without.jsonl", None)
    call = guessed_call(options)
    assert call is not None
    for other in ((*call[:3], "openai", *call[4:]),  # another format guessed
                  ((3, 2, None, 3), *call[1:]),  # other cycle options
                  (call[0], not call[1], *call[2:])):  # tokens counted or not
        head_start = _read_ahead(SAMPLE, other)
        assert _records(options, tmp_path / "with.jsonl", head_start) == without
        assert head_start.taken == 0
    # Chunks cut elsewhere than the scan cuts them: no chunk's lines are the scan's.
    monkeypatch.setattr(_head_start, "CHUNK_LINES", 15)
    head_start = _read_ahead(SAMPLE, call)
    assert _records(options, tmp_path / "with.jsonl", head_start) == without
    assert head_start.taken == 0


def test_the_head_start_stops_when_the_scan_takes_a_reading(tmp_path: Path) -> None:
    lines = SAMPLE.read_bytes().split(b"\n")[:-1]
    call = guessed_call(_options(str(SAMPLE), "--jobs", "2"))
    assert call is not None
    head_start = HeadStart(str(SAMPLE), call)
    first = head_start.take(1, lines[: _cli_lines.CHUNK_LINES], call)
    assert head_start.wait(60)  # told to stop: it ends without being closed
    expected = _core.scan_lines(lines, *call)
    if first is not None:  # (the thread may not have begun before the take)
        assert first["id_texts"] == expected["id_texts"]
        assert first["message_counts"].tolist() == expected["message_counts"].tolist()
    assert head_start.take(1, lines, call) is None  # a reading is handed over once
    head_start.close()


def test_the_head_start_holds_at_most_its_allowance(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    line = json.dumps([{"type": "user", "text": "x" * 1000}] * 3).encode()
    path.write_bytes(b"\n".join([line] * 3000) + b"\n")  # 9 MB: 3 chunks of 4 MiB or less
    call = guessed_call(_options(str(path), "--jobs", "2"))
    assert call is not None
    lines = path.read_bytes().split(b"\n")[:-1]
    read = functools.partial(io.BytesIO(path.read_bytes()).read, _cli_lines.READ_BYTES)
    chunks = list(_cli_lines.chunked_lines(read, _cli_lines.CHUNK_LINES,
                                           _cli_lines.CHUNK_BYTES))
    assert len(chunks) == 3 and list(itertools.chain(*chunks)) == lines
    head_start = _read_ahead(path, call, most_bytes=_cli_lines.CHUNK_BYTES)
    firsts = itertools.accumulate([1] + [len(chunk) for chunk in chunks[:-1]])
    taken = [head_start.take(first, chunk, call) is not None
             for first, chunk in zip(firsts, chunks, strict=True)]
    assert taken == [True, False, False]  # the second chunk would have passed the allowance
    # A line longer than the allowance is never held whole: nothing is read ahead.
    long_line = tmp_path / "long.jsonl"
    long_line.write_bytes(line * 5000 + b"\n")
    head_start = _read_ahead(long_line, call, most_bytes=_cli_lines.CHUNK_BYTES)
    assert head_start.take(1, [line * 5000], call) is None


def test_a_file_the_head_start_cannot_read_is_left_to_the_scan(tmp_path: Path) -> None:
    call = guessed_call(_options(str(SAMPLE), "--jobs", "2"))
    assert call is not None
    head_start = _read_ahead(tmp_path / "gone.jsonl", call)
    assert head_start.take(1, [b"[]"], call) is None
    head_start.close()


@pytest.mark.parametrize(("argv", "file_format"), [
    ([], "native"), (["-q"], "native"), (["-q", "--summary", "SUMMARY"], "native"),
    (["--format", "auto"], "native"), (["--mask-volatile", "-q"], "native"),
    (["--min-result-repetitions", "5", "--min-pattern-length", "0"], "native"),
    (["--max-pattern-length", "nan"], "native"),
    (["--format", "openai"], "openai"), (["--format", "openai", "--id-key", "name"], "openai"),
    (["--format", "openai", "--messages-key", "history"], "openai"),
])
def test_the_guess_is_the_call_the_scan_makes(argv: list[str], file_format: str,
                                              tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """What the head start guesses for a file of the format it assumes is exactly what the
    scan passes the core, so that its readings are taken; a change to either that makes
    them differ fails here rather than silently costing the head start."""
    if file_format == "native":
        path = SAMPLE
    else:
        path = tmp_path / "chat.jsonl"
        key = "history" if "history" in argv else "messages"
        chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "no"}]
        path.write_text("\n".join(json.dumps({"name": f"r{i}", key: chat}) for i in range(5)))
    argv = [a.replace("SUMMARY", str(tmp_path / "summary.json")) for a in argv]
    options = _options(str(path), "--jobs", "2", *argv)
    calls: list[tuple[Any, ...]] = []
    scan_lines = _core.scan_lines

    def recorded(lines: list[bytes], *arguments: Any, **keywords: Any) -> Any:
        calls.append(arguments)
        return scan_lines(lines, *arguments, **keywords)

    monkeypatch.setattr(_core, "scan_lines", recorded)
    _records(options, tmp_path / "out.jsonl", None)
    assert calls and all(call == guessed_call(options) for call in calls)


@pytest.mark.parametrize("argv", [
    ["-"], ["a.json"], ["a.jsonl.gz"], ["a.parquet"], ["a.jsonl", "b.jsonl"], ["--sample"],
    ["a.jsonl", "--anywhere"], ["a.jsonl", "--format", "swe-agent"],
])
def test_no_guess_where_the_scan_reads_no_lines_of_one_file(argv: list[str]) -> None:
    options = _options(*argv)
    expected = None
    if argv == ["a.jsonl", "--format", "swe-agent"]:
        expected = guessed_call(options)  # (the core reads SWE-agent runs: a guess is made)
        assert expected is not None and expected[3] == "swe-agent"
    assert guessed_call(options) == expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(threads_=st.lists(st.one_of(threads(), runs(openai_messages())), min_size=1,
                         max_size=30),
       bad=st.lists(st.sampled_from([b"", b"{", b"[1]", b"\xff", b"[]"]), max_size=3),
       chunk_lines=st.integers(1, 8), head_chunk_lines=st.integers(1, 8),
       guess=st.sampled_from(["native", "openai"]))
def test_records_never_depend_on_the_head_start(
        threads_: list[Any], bad: list[bytes], chunk_lines: int, head_chunk_lines: int,
        guess: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any file, any chunks cut by either side, any guess: the records are the scan's."""
    path = tmp_path / "threads.jsonl"
    path.write_bytes(b"\n".join([json.dumps(t).encode() for t in threads_] + bad))
    monkeypatch.setattr(cli, "CHUNK_LINES", chunk_lines)
    monkeypatch.setattr(_head_start, "CHUNK_LINES", head_chunk_lines)
    options = _options(str(path), "--jobs", "2", "--format", guess)
    call = guessed_call(options)
    assert call is not None
    detected = _options(str(path), "--jobs", "2")  # the format detected, if the file has one
    try:
        without = _records(detected, tmp_path / "without.jsonl", None)
    except AssertionError:
        return  # threads in both formats: a fatal error, with or without a head start
    head_start = _read_ahead(path, call)
    assert _records(detected, tmp_path / "with.jsonl", head_start) == without


@pytest.mark.skipif(_cli_lines.usable_cpus() < 2, reason="the head start needs two CPUs")
def test_a_fresh_vthread_scan_with_two_jobs_reads_ahead_and_writes_what_one_job_does(
        tmp_path: Path) -> None:
    """The command's own process (NumPy not yet imported): the head start is made and its
    readings taken, and the records are those of ``--jobs 1``."""
    code = ("import sys\n"
            "from vthread import _head_start\n"
            "close = _head_start.HeadStart.close\n"
            "def close_and_say(self):\n"
            "    close(self)\n"
            "    print('taken', self.taken, file=sys.stderr)\n"
            "_head_start.HeadStart.close = close_and_say\n"
            "from vthread._cli_main import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}.jsonl"
        done = subprocess.run([sys.executable, "-c", code, "scan", str(SAMPLE), "-q",
                               "--jobs", jobs, "-o", str(out)],
                              env=env, capture_output=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        outputs.append(out.read_bytes())
        said = done.stderr.decode()
        assert (said == "taken 1\n") if jobs == "2" else (said == ""), said
    assert outputs[0] == outputs[1]
