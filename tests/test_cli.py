"""``vthread scan``: records match the reference, records out = lines in, streams, exit codes."""

from __future__ import annotations

import gzip
import importlib
import io
import itertools
import json
import math
import os
import re
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.workload import generate_threads, to_anthropic, to_openai
from vthread import _exact_json, _reference, cli
from vthread._options import cycle_options
from vthread.adapters import to_native_with_sources
from vthread.scan import HEURISTIC_NAMES, scan

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "vthread" / "samples"
KEYS = ["id", "file", "line", "verdict", "loop_start", "period", "repetitions", "loop_messages",
        "loop_tokens", "messages"]
"""The keys the reference pins; ScanResult.record may add more (a loop signature)."""
EARLIER_RECORD = (b'{"id": "from an earlier scan", "file": "runs.jsonl", "line": 1, '
                  b'"verdict": null, "messages": 3}\n')
"""A records line an earlier run left at an output path (which a scan writes over: what
vthread did not write there, it refuses to)."""
EARLIER_SUMMARY = json.dumps({"exit_status": 0, "completed": True, "scanned": ["runs.jsonl"],
                              "lines": 7, "unit": "line", "threads": 7, "loops": 0,
                              "stale": True})
"""A ``--summary`` file an earlier run left (one that must not stand for a later run)."""


# ----------------------------------------------------------------------------------- helpers


def run(argv: list[str], monkeypatch: pytest.MonkeyPatch, stdin: bytes = b"",
        tty: bool = False) -> tuple[int, bytes, str]:
    """main(argv) in this process: (exit status, stdout bytes, stderr text)."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")

    class Err(io.StringIO):
        def isatty(self) -> bool:
            return tty

    err = Err()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(stdin))))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = cli.main(argv)
    out.flush()
    assert isinstance(out.buffer, io.BytesIO)
    return code, out.buffer.getvalue(), err.getvalue()


def nothing_scanned(count: int, unit: str = "line") -> str:
    """The warning closing a scan none of whose ``count`` records is a thread."""
    what = (f"its one {unit} is an error record" if count == 1
            else f"its {count} {unit}s are error records")
    return (f"vthread scan: warning: no thread was scanned: {what} (--fail-on-error makes "
            "that exit status 65)\n")


def run_process(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``python -m vthread ARGS`` in a subprocess, stdout and stderr piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "vthread", *args], input=stdin,
                          capture_output=True, env=env, check=False, timeout=120)


def records(output: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.decode("ascii").splitlines()]


def core(record: dict[str, Any]) -> dict[str, Any]:
    """A record without the fields the reference does not compute."""
    return {k: v for k, v in record.items() if k in KEYS or k == "error"}


def expected(thread: list[dict[str, Any]], ident: Any, file: str, line: int,
             **options: Any) -> dict[str, Any]:
    """The record the reference makes for one thread."""
    resolved = cycle_options(**options)
    found = _reference.attribute(thread, resolved)
    name = HEURISTIC_NAMES[found.code - 1] if found.code else None
    assert name == _reference.describe_thread_cycle(thread, resolved)
    return {"id": ident, "file": file, "line": line, "verdict": name,
            "loop_start": found.loop_start, "period": found.period,
            "repetitions": found.repetitions, "loop_messages": found.loop_messages,
            "loop_tokens": None if math.isnan(found.loop_tokens) else found.loop_tokens,
            "messages": len(thread)}


def write_jsonl(path: Path, rows: list[Any], *, newline: bytes = b"\n") -> Path:
    path.write_bytes(b"".join(json.dumps(row).encode() + newline for row in rows))
    return path


def looping(kind: str, n: int = 6) -> list[dict[str, Any]]:
    """Small hand-made threads that end in a loop, with usages."""
    call = {"type": "activity", "text": "", "usage": {"tokens": 9},
            "meta": {"activity": {"type": "request",
                                  "function": {"name": "ls", "arguments": {"p": "."}}}}}
    answer = {"type": "activity", "text": "", "usage": {"tokens": 30},
              "meta": {"activity": {"type": "response",
                                    "function": {"name": "ls", "arguments": {"p": "."},
                                                 "result": ["a"]}}}}
    head: list[dict[str, Any]] = [{"type": "user", "text": f"task {kind}"}]
    if kind == "suffix":
        return head + [call, answer] * n
    return [*head, {"type": "bot", "text": "Step. " * 3, "usage": {"tokens": 2}}]


@pytest.fixture(scope="module")
def threads() -> list[list[dict[str, Any]]]:
    return [*generate_threads(40, seed=3), looping("suffix"), looping("none")]


@pytest.fixture
def thread_file(tmp_path: Path, threads: list[list[dict[str, Any]]]) -> Path:
    rows: list[Any] = [{"id": f"t{i}", "messages": t, "extra": "ignored"}
                       for i, t in enumerate(threads)]
    rows[1] = threads[1]  # a bare array: id null
    return write_jsonl(tmp_path / "threads.jsonl", rows)


def expected_for(path: Path, threads: list[list[dict[str, Any]]],
                 **options: Any) -> list[dict[str, Any]]:
    return [expected(t, None if i == 1 else f"t{i}", str(path), i + 1, **options)
            for i, t in enumerate(threads)]


# ---------------------------------------------------------------------------- the records


def test_records_match_reference(thread_file: Path, threads: list[list[dict[str, Any]]],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each record is the reference's verdict and attribution for its line, keys in order."""
    code, out, _ = run(["scan", str(thread_file), "--quiet"], monkeypatch)
    assert code == 0
    got = records(out)
    assert [core(r) for r in got] == expected_for(thread_file, threads)
    library = list(scan([[]]).record(0))
    assert library[0] == "id" and library[-1] == "messages"
    assert all(list(r) == ["id", "file", "line", *library[1:]] for r in got)
    assert any(record["verdict"] for record in got)


def test_cycle_options_are_passed(thread_file: Path, threads: list[list[dict[str, Any]]],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The cycle options reach the engine as the library would resolve them."""
    options = {"min_repetitions": 3, "min_pattern_length": 1, "max_pattern_length": 4.5,
               "min_result_repetitions": 4}
    argv = ["scan", str(thread_file), "-q", "--min-repetitions", "3",
            "--min-pattern-length", "1", "--max-pattern-length", "4.5",
            "--min-result-repetitions", "4"]
    code, out, _ = run(argv, monkeypatch)
    assert code == 0
    assert [core(r) for r in records(out)] == expected_for(thread_file, threads, **options)


@pytest.mark.parametrize("spelling", ["joined", "apart", "abbreviated"])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-Infinity"])
def test_non_finite_max_pattern_length_is_no_cap(value: str, spelling: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``--max-pattern-length inf`` is no cap: a loop of 3-message blocks is still found.
    The value given as a word of its own too: ``-inf`` was refused ("expected one
    argument"), argparse taking it for an option."""
    block = [{"type": "user", "text": "status?"}, {"type": "bot", "text": "checking"},
             {"type": "tool", "text": "running"}]
    path = write_jsonl(tmp_path / "loop.jsonl", [[{"type": "user", "text": "go"}, *block * 2]])
    option = {"joined": [f"--max-pattern-length={value}"],
              "apart": ["--max-pattern-length", value], "abbreviated": ["--max-pat", value]}[
        spelling]
    code, out, _ = run(["scan", str(path), "-q", *option], monkeypatch)
    assert code == 0
    [record] = records(out)
    assert (record["verdict"], record["period"]) == ("repeated_suffix", 3)


def test_bad_lines_become_error_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records out = lines in, in order, each bad line with its number and reason, and the
    id of the run object it holds when it names one."""
    good = looping("suffix")
    lines = [
        json.dumps({"id": "ok", "messages": good}),
        '{"id": 1, "messages": [',
        "42",
        '{"id": "x", "msgs": []}',
        '{"id": "y", "messages": {"type": "user"}}',
        json.dumps([{"type": "user", "text": "hi"}, "oops"]),
        "[]",
        "",
        "   ",
        json.dumps({"id": 7, "messages": []}),
        json.dumps(good),  # the last line has no newline
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines))
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0
    got = records(out)
    assert [r["line"] for r in got] == list(range(1, len(lines) + 1))
    assert [r["id"] for r in got] == ["ok", None, None, "x", "y", None, None, None, None, 7,
                                      None]
    errors = {r["line"]: r["error"] for r in got if "error" in r}
    assert errors[2].startswith("not valid JSON: Expecting")
    assert errors[3] == "not a thread: a number, not an array of messages or an object with " \
                        '"messages"'
    assert errors[4] == 'not a thread: an object without "messages", "traj" or "history"'
    assert errors[5] == 'not a thread: "messages" is an object, not an array'
    assert errors[6] == "message 1 is not an object (a string)"
    assert errors[8] == errors[9] == "blank line"
    assert sorted(errors) == [2, 3, 4, 5, 6, 8, 9]
    assert got[6]["verdict"] is None and got[6]["messages"] == 0
    assert got[0]["verdict"] == got[10]["verdict"] == "repeated_suffix"
    assert "errors" in err and _row(err, "errors") == 7
    assert _row(err, "threads") == 4


def _row(summary: str, label: str) -> int:
    """The count in the summary row ``label``."""
    return int(_line(summary, label).strip()[len(label):].split()[0].replace(",", ""))


def test_strict_stops_at_first_bad_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--strict: exit 2 naming file:line; the lines before it are still written."""
    good = json.dumps(looping("none"))
    path = tmp_path / "strict.jsonl"
    path.write_text("\n".join([good, good, "{nope", good]) + "\n")
    code, out, err = run(["scan", str(path), "--strict"], monkeypatch)
    assert code == 2
    assert f"{path}:3: not valid JSON" in err
    assert [r["line"] for r in records(out)] == [1, 2]
    assert "threads" not in err  # no summary for an aborted run


def test_strict_with_small_chunks_and_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--strict gives the same prefix whatever the chunking and the number of workers."""
    good = json.dumps(looping("suffix"))
    path = tmp_path / "strict.jsonl"
    path.write_text("\n".join([good] * 9 + ['"text"'] + [good] * 9) + "\n")
    monkeypatch.setattr(cli, "CHUNK_LINES", 4)
    for jobs in ("1", "2"):
        code, out, err = run(["scan", str(path), "--strict", "--jobs", jobs], monkeypatch)
        assert code == 2
        assert f"{path}:10: not a thread: a string" in err
        assert [r["line"] for r in records(out)] == list(range(1, 10))


def test_fail_on_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--fail-on-loop exits 1 when any thread loops and 0 when none does."""
    loops = write_jsonl(tmp_path / "loops.jsonl", [looping("none"), looping("suffix")])
    fine = write_jsonl(tmp_path / "fine.jsonl", [looping("none"), "not a thread"])
    assert run(["scan", str(loops), "-q", "--fail-on-loop"], monkeypatch)[0] == 1
    assert run(["scan", str(loops), "-q"], monkeypatch)[0] == 0
    assert run(["scan", str(fine), "-q", "--fail-on-loop"], monkeypatch)[0] == 0


@pytest.mark.parametrize(("share", "status"), [
    ("0.25", 0), ("25%", 0), ("1", 0), ("100%", 0), ("0.2499", 1), ("24.99%", 1), ("0", 1),
    ("0%", 1), (" 1e-1 ", 1)])
def test_fail_on_loop_share(share: str, status: int, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--fail-on-loop-share exits 1 when more than its share of the threads scanned loop
    (a fraction or a percentage, held exactly: 1 of 4 is not more than 25%), error records
    counting as none of them, says so on stderr, and writes the share in the summary's
    options; --fail-on-error's 65 comes first. A gate at a share is what an evaluation team
    needs where some run of thousands nearly always loops."""
    runs = write_jsonl(tmp_path / "runs.jsonl", [looping("suffix"), looping("none"),
                                                 looping("none"), looping("none"),
                                                 "not a thread"])
    summary = tmp_path / "summary.json"
    code, _, err = run(["scan", str(runs), "-q", "--fail-on-loop-share", share, "--summary",
                        str(summary)], monkeypatch)
    assert code == status, err
    said = json.loads(summary.read_text())
    assert said["exit_status"] == status
    assert said["options"]["fail_on_loop_share"] == float(
        Fraction(share.strip().removesuffix("%")) / (100 if share.endswith("%") else 1))
    if status:
        assert err.endswith(": 1 of the 4 threads scanned loop (25%)\n")
    else:
        assert err == ""
    assert run(["scan", str(runs), "-q", "--fail-on-loop-share", share, "--fail-on-error"],
               monkeypatch)[0] == 65


@pytest.mark.parametrize(("share", "found", "shown"), [
    (Fraction(5, 100), Fraction(53, 300), ("5%", "17.67%")),
    (Fraction(1, 100000), Fraction(1, 30001), ("0.001%", "0.003%")),
    (Fraction(5, 100), Fraction(10001, 200000), ("5%", "5.0005%")),
    (Fraction(0), Fraction(1, 3), ("0%", "33.33%")),
    (Fraction("0.3333333333333333333333"), Fraction(1, 3),
     ("33.33333333333333333333%", "33.333333333333333333333%")),
    (Fraction(1, 10**999), Fraction(1, 10**998), ("0%", "0." + "0" * 995 + "1%"))])
def test_a_failed_share_is_shown_apart_from_its_gate(share: Fraction, found: Fraction,
                                                      shown: tuple[str, str]) -> None:
    """The share found is shown to as many decimals as tell it from the gate's (1 loop of
    30,001 at a 0.001% gate read "0%: ... (0%)", a failure that looked like none: a
    tester's case)."""
    from vthread.cli import _shares_shown

    assert _shares_shown(share, found) == shown


@pytest.mark.parametrize("share", ["-0.1", "1.01", "101%", "nan", "inf", "5 %%", "", "x",
                                   "0x1", "\u0661", "1e-99999999", "1" * 101])
def test_fail_on_loop_share_refuses_what_is_no_share(
        share: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A share that is negative, past all of them, not a number, or not in ASCII digits is
    a usage error naming it; so is --fail-on-loop-share beside --fail-on-loop, which fails
    on any loop already."""
    runs = write_jsonl(tmp_path / "runs.jsonl", [looping("suffix")])
    code, out, err = run(["scan", str(runs), "-q", f"--fail-on-loop-share={share}"],
                         monkeypatch)
    assert (code, out) == (2, b"")
    assert "argument --fail-on-loop-share: expected a share" in err
    code, out, err = run(["scan", str(runs), "-q", "--fail-on-loop", "--fail-on-loop-share",
                          "5%"], monkeypatch)
    assert (code, out) == (2, b"")
    assert err == ("vthread scan: --fail-on-loop fails on any loop, which "
                   "--fail-on-loop-share 0 does too: give one of the two\n")


# ----------------------------------------------------------------------------------- inputs


def test_gzip_stdin_and_output(thread_file: Path, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A .gz file, stdin (plain or gzip) and --output all give the same records."""
    plain = run(["scan", str(thread_file), "-q"], monkeypatch)[1]
    zipped = tmp_path / "threads.jsonl.gz"
    zipped.write_bytes(gzip.compress(thread_file.read_bytes()))
    from_gz = run(["scan", str(zipped), "-q"], monkeypatch)[1]
    assert from_gz == plain.replace(str(thread_file).encode(), str(zipped).encode())
    stdin = run(["scan", "-", "-q"], monkeypatch, stdin=thread_file.read_bytes())[1]
    assert stdin == plain.replace(str(thread_file).encode(), b"<stdin>")
    gz_stdin = run(["scan", "-", "-q"], monkeypatch, stdin=zipped.read_bytes())[1]
    assert gz_stdin == stdin
    target = tmp_path / "out.jsonl"
    code, out, _ = run(["scan", str(thread_file), "-q", "--output", str(target)], monkeypatch)
    assert (code, out) == (0, b"")
    assert target.read_bytes() == plain


def test_several_files_in_order(thread_file: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Several FILEs: records file after file, line numbers restarting at 1."""
    other = write_jsonl(tmp_path / "other.jsonl", [looping("suffix")])
    code, out, err = run(["scan", str(thread_file), str(other)], monkeypatch)
    got = records(out)
    assert code == 0
    assert core(got[-1]) == expected(looping("suffix"), None, str(other), 1)
    assert len(got) == 43
    assert "from 2 files" in err


def test_crlf_and_chunk_boundaries(thread_file: Path, tmp_path: Path,
                                   threads: list[list[dict[str, Any]]],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines split across reads and chunks, or ending in CRLF, read the same."""
    plain = run(["scan", str(thread_file), "-q"], monkeypatch)[1]
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(thread_file.read_bytes().replace(b"\n", b"\r\n"))
    assert run(["scan", str(crlf), "-q"], monkeypatch)[1] == plain.replace(
        str(thread_file).encode(), str(crlf).encode())
    monkeypatch.setattr(cli, "READ_BYTES", 7)
    monkeypatch.setattr(cli, "CHUNK_LINES", 3)
    monkeypatch.setattr(cli, "CHUNK_BYTES", 100)
    assert run(["scan", str(thread_file), "-q"], monkeypatch)[1] == plain


def test_jobs_give_identical_output(thread_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--jobs 2 and 3 write byte for byte what one process writes, summary included."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 5)
    one = run(["scan", str(thread_file)], monkeypatch)
    for jobs in ("2", "3"):
        many = run(["scan", str(thread_file), "--jobs", jobs], monkeypatch)
        assert many[:2] == one[:2]
        assert many[2].splitlines()[1:] == one[2].splitlines()[1:]  # timing line aside


def test_a_file_the_core_declines_goes_to_worker_processes(
        tmp_path: Path, threads: list[list[dict[str, Any]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With --jobs 2, a native file whose first chunk the core declines (its lines hold NaN,
    which only Python's json reads) is scanned by worker processes, not chunk after chunk in
    this one, and writes what one process writes."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 5)
    rows = [[*t, {"type": "bot", "text": "x", "meta": {"score": math.nan}}] for t in threads]
    path = write_jsonl(tmp_path / "nan.jsonl", rows)
    one = run(["scan", str(path), "-q"], monkeypatch)
    pooled: list[int] = []
    real = cli._run

    def spy(tasks: Any, jobs: int) -> Any:
        pooled.append(jobs)
        return real(tasks, jobs)

    monkeypatch.setattr(cli, "_run", spy)
    many = run(["scan", str(path), "-q", "--jobs", "2"], monkeypatch)
    assert pooled == [2]
    assert many[:2] == one[:2]


@pytest.mark.parametrize("option", ["--mask-volatile", "--anywhere"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_options_are_read_by_the_core(thread_file: Path, monkeypatch: pytest.MonkeyPatch,
                                      option: str, jobs: str) -> None:
    """--mask-volatile and --anywhere are read by the core (no worker process, no chunk read
    by Python) and write what Python's reading of every chunk writes."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 5)
    arguments = ["scan", str(thread_file), "-q", option, "--jobs", jobs]
    monkeypatch.setattr(cli, "_read_chunk_in_python",
                        lambda *args: pytest.fail("a chunk was read by Python"))
    monkeypatch.setattr(cli, "_run", lambda *args: pytest.fail("not read by the core"))
    by_core = run(arguments, monkeypatch)
    monkeypatch.undo()
    monkeypatch.setattr(cli, "CHUNK_LINES", 5)
    monkeypatch.setattr(cli, "_core_may_read", lambda task: False)
    assert by_core[:2] == run(arguments, monkeypatch)[:2]


def test_jobs_in_a_subprocess(thread_file: Path) -> None:
    """The worker pool works from the installed entry point too."""
    one = run_process(["scan", str(thread_file), "-q"])
    two = run_process(["scan", str(thread_file), "-q", "-j", "2"])
    assert one.returncode == two.returncode == 0
    assert one.stdout == two.stdout and one.stdout


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_provider_formats(format_: str, tmp_path: Path, threads: list[list[dict[str, Any]]],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """--format openai/anthropic: the converted threads get the native threads' verdicts."""
    encode = to_openai if format_ == "openai" else to_anthropic
    rows: list[Any] = [{"id": i, "messages": encode(t)} for i, t in enumerate(threads)]
    rows.append({"id": "bad", "messages": [{"content": "no role"}]})
    path = write_jsonl(tmp_path / f"{format_}.jsonl", rows)
    code, out, _ = run(["scan", str(path), "--format", format_, "-q"], monkeypatch)
    assert code == 0
    got = records(out)
    for i, thread in enumerate(threads):
        bare = [{k: v for k, v in m.items() if k != "usage"} for m in thread]
        native, sources = to_native_with_sources(encode(bare), format_)  # type: ignore[arg-type]
        assert core(got[i]) == in_source_messages(
            expected(native, i, str(path), i + 1), sources)
        assert got[i]["verdict"] == expected(bare, i, str(path), i + 1)["verdict"]
    assert got[-1]["error"] == f"{format_} format: message 0 has no role"


@pytest.mark.parametrize(("first", "later", "said"), [
    ("openai", "anthropic", "openai format: message 1 holds a tool_use block"),
    ("anthropic", "openai", "anthropic format: message 1 has a 'tool_calls' key"),
])
def test_a_later_run_in_another_format_is_an_error_record_not_misread(
        first: str, later: str, said: str, tmp_path: Path, threads: list[list[dict[str, Any]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose first runs settle one chat format, then holds runs in another: each such
    run is an error record naming what it holds, and the runs around it are scanned as
    ever, records out = lines in (read in the settled format, an Anthropic run's tool blocks
    were media and its loop missed, an OpenAI run's calls were lost and progress made a
    loop). With the core and with Python reading the lines."""
    encode = {"openai": to_openai, "anthropic": to_anthropic}
    tooled = [t for t in threads
              if any(m["type"] == "activity" for m in t)][:3]  # runs that show their format
    assert len(tooled) == 3
    rows: list[Any] = [{"id": f"a{i}", "messages": encode[first](tooled[i % 3])}
                       for i in range(70)]
    rows += [{"id": "odd", "messages": encode[later](tooled[0])},
             {"id": "after", "messages": encode[first](tooled[1])}]
    path = write_jsonl(tmp_path / "mixed.jsonl", rows)
    arguments = ["scan", str(path), "-q"]
    code, out, _ = run(arguments, monkeypatch)
    got = records(out)
    assert code == 0 and [record["id"] for record in got] == [row["id"] for row in rows]
    assert got[70]["error"].startswith(said) and "is the thread in format" in got[70]["error"]
    assert "error" not in got[71] and got[71]["verdict"] == got[1]["verdict"]
    monkeypatch.setattr(cli, "_core_may_read", lambda task: False)
    assert run(arguments, monkeypatch)[:2] == (code, out)
    with pytest.raises(ValueError, match=rf"thread 70 \(id 'odd'\): {said}"):
        scan(rows, format="auto")


def test_files_named_like_trajectories_but_not_read_are_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory's files that vthread does not read by their names, but that are named
    like trajectory files (``runs.jsonlines``, ``.jsonl.gzip``, ``traj_17``), are counted
    by ending on stderr with how to read one (an evaluation user's runs went unread in
    silence); logs and notes beside the runs are passed over in silence, as before."""
    run_line = json.dumps([{"type": "user", "text": "a"}]) + "\n"
    (tmp_path / "sub").mkdir()
    for name in ("a.jsonl", "sub/b.jsonlines", "sub/c.JSONLINES", "d.jsonl.gzip", "traj_17"):
        (tmp_path / name).write_text(run_line)
    for name in ("notes.txt", "scan.log", "README", "trajectory_viewer.py", "json_utils.py",
                 "conf.geojson", "runs.jsonl.swp", "runs.json~", "runs.json.lock"):
        (tmp_path / name).write_text("x\n")
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 1
    assert (f"vthread scan: {tmp_path}: passed over 4 files named like trajectory files "
            "(.jsonlines 2, .gzip 1, no ending 1): a directory stands for the files ending "
            ".jsonl, .ndjson, .json, .traj, .eval, .parquet, .pq") in err
    assert "name a file to read it whatever its name" in err
    assert "notes.txt" not in err and ".log" not in err and "README" not in err
    assert ".py" not in err
    # --summary counts them too, by directory and ending (a dashboard saw none of them),
    # and --fail-on-error does not fail on a name's guess.
    summary_file = tmp_path / "out" / "summary.json"
    summary_file.parent.mkdir()
    more = tmp_path.parent / f"{tmp_path.name}_more"
    more.mkdir()
    (more / "e.jsonl").write_text(run_line)
    (more / "f.json5").write_text(run_line)
    code, _, _ = run(["scan", str(tmp_path), str(more), "-q", "--fail-on-error",
                      "--summary", str(summary_file)], monkeypatch)
    summary = json.loads(summary_file.read_text())
    assert code == 0 and summary["left_out"] == []
    assert summary["passed_over_by_name"] == [
        {"directory": str(tmp_path), "files": 4,
         "endings": {".jsonlines": 2, ".gzip": 1, "no ending": 1}},
        {"directory": str(more), "files": 1, "endings": {".json5": 1}}]
    code, out, _ = run(["scan", str(tmp_path / "sub" / "b.jsonlines"), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 1
    # A directory holding only such files: its fatal error says so.
    code, _, err = run(["scan", str(tmp_path / "sub"), "-q"], monkeypatch)
    assert code == 2 and "is a directory with no trajectory file under it" in err
    assert "passed over 2 files named like trajectory files (.jsonlines 2)" in err


def in_source_messages(record: dict[str, Any], sources: list[int]) -> dict[str, Any]:
    """A native record restated in source messages, ``sources[i]`` being the source message
    of translated message ``i``: the start is the source of the loop's first message, message
    counts are source counts, a block or spacing the source messages of one repetition."""
    count = sources[-1] + 1 if sources else 0
    out = {**record, "messages": count}
    if record["verdict"] is None:
        return out
    start = sources[record["loop_start"]]
    out["loop_start"], out["loop_messages"] = start, count - start
    if record["verdict"] == "repeated_suffix":
        out["period"] = len(set(sources[len(sources) - record["period"]:]))
    elif record["verdict"] == "repeated_result_run":
        out["period"] = max(1, round((count - start) / record["repetitions"]))
    return out


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_bundled_format_samples_agree_with_native(format_: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled provider samples give the verdicts, repetitions, signatures and excerpts
    of the same native threads, and count the file's own messages."""
    native = {r["id"]: r for r in records(run(["scan", "--sample", "-q"], monkeypatch)[1])}
    sample = SAMPLES / f"{format_}.jsonl"
    got = records(run(["scan", str(sample), "--format", format_, "-q"], monkeypatch)[1])
    assert len(got) == 30
    fields = ["verdict", "repetitions"]
    fields += [f for f in scan([[]]).record(0) if f not in {*KEYS, "messages"}]
    sizes = [len(json.loads(line)["messages"]) for line in sample.read_bytes().splitlines()]
    for record, size in zip(got, sizes, strict=True):
        assert [record[f] for f in fields] == [native[record["id"]][f] for f in fields]
        assert record["messages"] == size


def test_bundled_sample_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """vthread scan --sample reads the sample shipped in the package, and the summary says so."""
    code, out, err = run(["scan", "--sample"], monkeypatch)
    got = records(out)
    assert code == 0
    assert len(got) == len((SAMPLES / "threads.jsonl").read_bytes().splitlines()) == 300
    assert got[0]["file"] == str(SAMPLES / "threads.jsonl")
    assert _row(err, "threads") == 300
    assert "from the bundled sample" in err


def test_json_edge_cases_parse_as_the_standard_module(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson or not, every line means what json.loads makes of it (ids echo exactly)."""
    message = '{"type":"bot","text":"x"}'
    lines = [
        '{"id": "\\ud800", "messages": [{"type":"bot","text":"\\udc00 lone"}]}',
        '{"id": NaN, "messages": [{"type":"bot","text":"a","usage":{"tokens":Infinity}}]}',
        f'{{"id": {2**70}, "messages": [{message}]}}',
        f'{{"id": {-(2**63) - 1}, "messages": [{message}]}}',
        f'{{"id": 18446744073709551615, "messages": [{message}]}}',
        f'{{"id": 1e400, "messages": [{message}]}}',
        f'\ufeff{{"id": "bom", "messages": [{message}]}}',
        f'{{"id": "digits 12345678901234567890 in a string", "messages": [{message}]}}',
        f'{{"id": 1.5e300, "messages": [{message}]}}',
        '{"id": "tokens", "messages": [{"type":"bot","text":"a","usage":{"tokens":'
        f'{2**53 + 1}}}}}]}}',
        '"\xff"',
    ]
    path = tmp_path / "edge.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass").replace(
        "\xff".encode(), b"\xff"))
    fast = run(["scan", str(path), "-q"], monkeypatch)[1]
    monkeypatch.setattr(_exact_json, "fast_loads", None)
    slow = run(["scan", str(path), "-q"], monkeypatch)[1]
    assert fast == slow
    got = records(fast)
    ids = [r["id"] for r in got]
    assert ids[0] == "\ud800"
    assert ids[1] == "NaN"  # strict JSON: a non-finite id is written as its JSON text
    assert ids[2:6] == [2**70, -(2**63) - 1, 18446744073709551615, "Infinity"]
    assert ids[6:10] == ["bom", "digits 12345678901234567890 in a string", 1.5e300, "tokens"]
    assert got[-1]["error"].startswith("not valid JSON: 'utf-8' codec can't decode")
    assert all("error" not in r for r in got[:-1])


@pytest.mark.parametrize("offset", range(9))
def test_long_digit_runs_found_at_any_alignment(offset: int) -> None:
    """A 19-digit run is found wherever it sits; an 18-digit run is not flagged."""
    lines = [b"x" * offset + b"1" * 19 + b"y", b"z" * offset + b"2" * 18, b"[1,2]",
             b"a" * 40 + b"9" * 25]
    assert _exact_json.long_digit_lines(lines) == {0, 3}
    assert _exact_json.long_digit_lines(lines[1:3]) == frozenset()
    assert _exact_json.long_digit_lines([b""]) == frozenset()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from([b"1" * 7, b"23", b"x", b"4" * 12, b"\n5"]),
                         max_size=12).map(b"".join), max_size=6),
       st.sampled_from([8, 16, 1 << 20]))
def test_long_digit_lines_equal_a_plain_search(lines: list[bytes], slice_bytes: int) -> None:
    """The word search equals a regular expression's, for lines searched joined and lines
    searched a slice at a time (slices cut small here, so runs straddle them)."""
    plain = frozenset(index for index, line in enumerate(lines)
                      if re.search(rb"[0-9]{19}", line))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_exact_json, "_SLICE", slice_bytes)
        assert _exact_json.long_digit_lines(lines) == plain


@pytest.fixture
def engine_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine raising RuntimeError("boom") on the thread of ``thread_file``'s line 41
    (the suffix loop): the core's path meets it in the looping thread's attribution and
    hands the chunk to the Python path, which meets it in the scan of that thread."""
    real = cli.scan_validated  # type: ignore[attr-defined]
    scan_module = importlib.import_module("vthread.scan")
    real_attribute = scan_module.attribute_lines

    def failing(threads: list[Any]) -> bool:
        return any(len(t) == len(looping("suffix")) and t[0]["text"] == "task suffix"
                   for t in threads)

    def flaky(threads: list[Any], **options: Any) -> Any:
        if failing(threads):
            raise RuntimeError("boom")
        return real(threads, **options)

    def flaky_attribute(result: Any, columns: Any, rows: Any, lines: list[bytes],
                        *rest: Any) -> None:
        threads = [json.loads(line) for line in lines]
        if failing([t["messages"] if isinstance(t, dict) else t for t in threads]):
            raise RuntimeError("boom")
        real_attribute(result, columns, rows, lines, *rest)

    monkeypatch.setattr(cli, "scan_validated", flaky)
    monkeypatch.setattr(scan_module, "attribute_lines", flaky_attribute)


@pytest.mark.usefixtures("engine_failing")
def test_engine_failure_becomes_one_error_record(thread_file: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the engine raise on a thread, that line is an error record; the rest scan.
    Being a bug, it is said once with its place and traceback, and the scan ends with 70
    once every record is written (it was 0: a CI gate passed over a bug)."""
    summary = thread_file.with_name("summary.json")
    code, out, err = run(["scan", str(thread_file), "--summary", str(summary)], monkeypatch)
    got = records(out)
    assert code == 70
    assert len(got) == 42
    assert got[40] == {"id": "t40", "file": str(thread_file), "line": 41,
                       "error": "internal error: RuntimeError: boom"}
    assert got[41]["verdict"] is None
    assert _row(err, "errors") == 1
    said = err.decode() if isinstance(err, bytes) else err
    assert said.count("internal error (a bug") == 1
    assert f"{thread_file}:41: internal error (a bug; please report it" in said
    assert "Traceback (most recent call last)" in said and "RuntimeError: boom" in said
    written = json.loads(summary.read_text())
    assert written["completed"] and written["errors"] == 1 and written["lines"] == 42
    # --jobs 2 says it and ends alike.
    code, out, err = run(["scan", str(thread_file), "--jobs", "2"], monkeypatch)
    assert code == 70 and len(records(out)) == 42


@pytest.mark.usefixtures("engine_failing")
def test_engine_failure_in_a_report_is_its_page_and_70(thread_file: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``vthread report`` over a scan that met a bug on one run: the page is written, that
    run counted among the error records, the traceback said, and the report ends with 70
    (a scan that did not complete gives no page, as before)."""
    page = thread_file.with_name("report.html")
    code, _, err = run(["report", str(thread_file), "-o", str(page)], monkeypatch)
    said = err.decode() if isinstance(err, bytes) else err
    assert code == 70 and page.read_text().startswith("<!DOCTYPE html>")
    assert "RuntimeError: boom" in said and "1 not read (error records)" in said


# ----------------------------------------------------------------------------------- stderr


def test_summary_counts(thread_file: Path, threads: list[list[dict[str, Any]]],
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary counts threads, loops by kind, and wasted messages and tokens."""
    _, out, err = run(["scan", str(thread_file)], monkeypatch)
    got = records(out)
    loops = [r for r in got if r["verdict"]]
    assert _row(err, "threads") == len(threads)
    assert _row(err, "loops") == len(loops)
    for name in HEURISTIC_NAMES:
        assert _row(err, name) == sum(r["verdict"] == name for r in got)
    wasted = sum(r["loop_messages"] for r in loops)
    total = sum(r["messages"] for r in got)
    assert f"{wasted:,}" in _line(err, "wasted messages")
    assert f"of {total:,}" in _line(err, "wasted messages")
    tokens = sum(r["loop_tokens"] or 0 for r in loops)
    all_tokens = sum(m["usage"]["tokens"] for t in threads for m in t if "usage" in m)
    assert f"{tokens:,.0f}" in _line(err, "wasted tokens")
    assert f"of {all_tokens:,.0f}" in _line(err, "wasted tokens")
    assert f"{tokens / all_tokens:.1%}" in _line(err, "wasted tokens")


def test_the_summary_lists_the_first_error_records(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``first_errors`` lists the scan's first ten error records (file, line, id, error), in
    the order of the input, whatever the jobs and --only-loops (which writes none of them):
    a CI job's reader learns where to look from the summary (it held their count alone)."""
    good = json.dumps([{"type": "user", "text": "hi"}])
    lines = [good if i % 3 else ("not json" if i % 2 else f'{{"id": "r{i}"}}')
             for i in range(60)]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    written = []
    for options in ([], ["--jobs", "2"], ["--only-loops"]):
        summary = tmp_path / "summary.json"
        code, _, _ = run(["scan", str(path), "-q", "--summary", str(summary), *options],
                         monkeypatch)
        assert code == 0
        written.append(json.loads(summary.read_text()))
    first = written[0]["first_errors"]
    assert all(summary["first_errors"] == first for summary in written)
    errors = [r for r in records(run(["scan", str(path), "-q"], monkeypatch)[1])
              if "error" in r]
    assert written[0]["errors"] == len(errors) == 20
    assert first == [{key: r[key] for key in ("file", "line", "id", "error")}
                     for r in errors[:10]]
    assert first[0] == {"file": str(path), "line": 1, "id": "r0",
                        "error": 'not a thread: an object without "messages", "traj" or '
                                 '"history"'}
    assert first[1]["line"] == 4 and first[1]["error"].startswith("not valid JSON")
    path.write_text(good + "\n")
    run(["scan", str(path), "-q", "--summary", str(summary)], monkeypatch)
    assert json.loads(summary.read_text())["first_errors"] == []


@pytest.mark.parametrize("odd", [5, "12", [3], True, {"tokens": "7"}, {"count": 4}])
def test_summary_total_counts_only_usage_objects(tmp_path: Path, odd: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Only ``usage`` objects with a countable ``tokens`` add to the total, whatever odd
    usages sit beside them in the same chunk (absent and null ones included)."""
    thread = [{"type": "user", "text": "a", "usage": {"tokens": 10}},
              {"type": "bot", "text": "b", "usage": odd},
              {"type": "bot", "text": "c", "usage": None},
              {"type": "bot", "text": "d"},
              {"type": "bot", "text": "e", "usage": {"tokens": 32}}]
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps({"id": "odd", "messages": thread}) + "\n")
    _, _, err = run(["scan", str(path)], monkeypatch)
    assert "of 42" in _line(err, "wasted tokens")


def test_summary_of_tokens_past_the_largest_double(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Token totals past the largest double: said as "over 1.8e308" (it printed "inf"),
    with no share of them (it printed "nan%"), also for the loops found anywhere; the
    --summary file writes null, strict JSON."""
    thread = [{"type": "bot", "text": "again", "usage": {"tokens": 1.7e308}}] * 4
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(thread) + "\n")
    target = tmp_path / "summary.json"
    code, _, err = run(["scan", str(path), "--anywhere", "--summary", str(target)],
                       monkeypatch)
    line = _line(err, "wasted tokens")
    assert code == 0 and "inf" not in line and "nan" not in line and "%" not in line
    assert line.split() == ["wasted", "tokens", "over", "1.8e308", "-", "of", "over",
                            "1.8e308"]
    assert "messages, over 1.8e308 tokens" in _line(err, "loops found anywhere")
    summary = json.loads(target.read_text())
    assert (summary["tokens"], summary["wasted_tokens"]) == (None, None)
    # Loops of several lines summing past it: no NumPy warning on stderr (one was, under -q
    # too); a total no agent spends (a broken logger's figures) in powers of ten, not 300
    # digits.
    lines = [json.dumps([{"type": "bot", "text": "again", "usage": {"tokens": figure}}] * 4)
             for figure in (4e307, 4e307)]
    path.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and err == "" and len(records(out)) == 2
    path.write_text(json.dumps([{"type": "bot", "text": "again", "usage": {"tokens": 4e20}}] * 4)
                    + "\n")
    code, _, err = run(["scan", str(path)], monkeypatch)
    assert _line(err, "wasted tokens").split()[:3] == ["wasted", "tokens", "1.600e+21"]


@pytest.mark.parametrize("anywhere", [[], ["--anywhere"]])
def test_loops_none_of_which_carries_tokens_cost_unknown_tokens(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anywhere: list[str]) -> None:
    """A loop whose messages carry no usage.tokens costs an unknown number of tokens: with
    every loop so, --summary's wasted tokens (and loops_anywhere's tokens) are null, as the
    table and the report say, though other runs carry tokens (it wrote 0.0: "no waste")."""
    loop = [{"type": "user", "text": "hi"}] + [{"type": "bot", "text": "again"}] * 4
    progress = [{"type": "user", "text": "hi", "usage": {"tokens": 5}},
                {"type": "bot", "text": "done", "usage": {"tokens": 3}}]
    path = tmp_path / "mix.jsonl"
    path.write_text(json.dumps(loop) + "\n" + json.dumps(progress) + "\n")
    target = tmp_path / "summary.json"
    code, _, err = run(["scan", str(path), "-o", os.devnull, "--summary", str(target),
                        *anywhere], monkeypatch)
    summary = json.loads(target.read_text())
    assert code == 0 and summary["tokens"] == 8 and summary["loops_without_tokens"] == 1
    assert summary["wasted_tokens"] is None
    assert "n/a" in _line(err, "wasted tokens")
    if anywhere:
        assert summary["loops_anywhere"]["tokens"] is None
        assert "tokens" not in _line(err, "loops found anywhere")
        # No loop at all: nothing wasted, a known 0 (a reviewer's find).
        path.write_text(json.dumps(progress) + "\n")
        code, _, err = run(["scan", str(path), "-o", os.devnull, "--summary", str(target),
                            *anywhere], monkeypatch)
        summary = json.loads(target.read_text())
        assert (summary["wasted_tokens"], summary["loops_anywhere"]["tokens"]) == (0, 0)
        assert "0 tokens" in _line(err, "loops found anywhere")
        path.write_text(json.dumps(loop) + "\n" + json.dumps(progress) + "\n")
    report = tmp_path / "report.html"
    assert run(["report", str(path), "-o", str(report)], monkeypatch)[0] == 0
    assert 'data-figure="wasted_tokens" data-value="null"' in report.read_text()
    # One loop priced: the figure is the priced loops' sum, the unpriced one said apart.
    path.write_text(json.dumps(loop) + "\n" + json.dumps(
        [{**message, "usage": {"tokens": 2}} for message in loop]) + "\n")
    assert run(["scan", str(path), "-o", os.devnull, "--summary", str(target), *anywhere],
               monkeypatch)[0] == 0
    summary = json.loads(target.read_text())
    assert summary["wasted_tokens"] == 8 and summary["loops_without_tokens"] == 1


def _line(summary: str, label: str) -> str:
    return next(line for line in summary.splitlines() if line.strip().startswith(label))


def test_no_progress_when_piped(thread_file: Path) -> None:
    """Piped stderr gets the summary only: no carriage returns, no escape codes."""
    done = run_process(["scan", str(thread_file), "-o", os.devnull])
    assert done.returncode == 0
    assert b"\r" not in done.stderr and b"\x1b" not in done.stderr
    assert b"threads" in done.stderr


def test_progress_on_a_terminal(thread_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal a progress line is drawn and cleared; --quiet silences everything."""
    monkeypatch.setattr(cli, "PROGRESS_INTERVAL", 0.0)
    monkeypatch.setattr(cli, "CHUNK_LINES", 10)
    _, _, err = run(["scan", str(thread_file)], monkeypatch, tty=True)
    assert "lines/s" in err and "\r" in err and "%" in err
    assert err.rstrip("\n").splitlines()[-1].startswith("  wasted tokens")
    assert run(["scan", str(thread_file), "-q"], monkeypatch, tty=True)[2] == ""


# -------------------------------------------------------------------------- usage and exit


def test_missing_file_and_directory(tmp_path: Path, thread_file: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing FILE, or a lone directory with nothing to read, is exit 2 with a clear
    message, before any output. A directory with nothing to read among several inputs (a
    nightly run's folder left empty, in a glob of every night's) is its error record, as a
    file among several that cannot be read is: the others are still scanned, and
    --fail-on-error fails on it."""
    code, out, err = run(["scan", str(thread_file), str(tmp_path / "nope.jsonl")], monkeypatch)
    assert (code, out) == (2, b"")
    assert f"{tmp_path / 'nope.jsonl'}: no such file" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run(["scan", str(empty)], monkeypatch)
    assert (code, out) == (2, b"")
    assert "empty: is a directory with no trajectory file" in err
    alone = records(run(["scan", str(thread_file)], monkeypatch)[1])
    only_records = tmp_path / "records"
    only_records.mkdir()
    (only_records / "out.jsonl").write_bytes(run(["scan", str(thread_file)], monkeypatch)[1])
    code, out, err = run(["scan", str(empty), str(thread_file), str(only_records)], monkeypatch)
    got = records(out)
    assert code == 0 and got[1:-1] == alone and len(got) == len(alone) + 2
    assert got[0] == {"id": None, "file": str(empty), "line": 1, "error": (
        "is a directory with no trajectory file under it (files ending .jsonl, .ndjson, "
        ".json, .traj, .eval, .parquet, .pq, the text ones optionally .gz)")}
    assert got[-1] == {"id": None, "file": str(only_records), "line": 1, "error":
                       "is a directory holding only vthread scan's records, no trajectory file"}
    assert f"vthread scan: {empty}: is a directory with no trajectory file under it" in err
    assert f"lines from {thread_file} and 2 directories holding none in " in err
    assert run(["scan", str(empty), str(thread_file), "--fail-on-error"], monkeypatch)[0] == 65
    code, out, err = run(["scan", str(empty), str(thread_file), "--strict"], monkeypatch)
    assert (code, out) == (2, b"") and f"{empty}: is a directory with no trajectory" in err
    done = run_process(["scan", str(tmp_path / "nope.jsonl")])
    assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_truncated_gzip_is_one_error_record(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip stream cut short: its complete lines, then one error record naming the file;
    exit 0, and exit 2 under --strict."""
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(b"[]\n" * 1000)[:-8])  # the trailer (CRC, size) cut off
    code, out, err = run(["scan", str(path)], monkeypatch)
    got = records(out)
    assert code == 0
    assert len(got) == 1001 and all("error" not in r for r in got[:1000])
    assert got[-1]["file"] == str(path) and got[-1]["line"] == 1001
    assert "gzip stream broken" in got[-1]["error"]
    code, _, err = run(["scan", str(path), "--strict"], monkeypatch)
    assert code == 2
    assert f"{path}:1001: gzip stream broken" in err


@pytest.mark.parametrize("argv", [
    ["scan", "--jobs", "-1"], ["scan", "--format", "xml"], ["scan", "--min-repetitions", "x"],
    [], ["frobnicate"],
])
def test_usage_errors(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Usage errors exit 2."""
    assert run(argv, monkeypatch)[0] == 2


def test_version_and_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """--version and --help exit 0."""
    code, out, _ = run(["--version"], monkeypatch)
    assert code == 0
    assert out.startswith(b"vthread ")
    code, out, _ = run(["scan", "--help"], monkeypatch)
    assert code == 0
    assert b"--fail-on-loop" in out
    done = run_process(["--version"])
    assert done.returncode == 0 and done.stdout.startswith(b"vthread ")


def test_guard_dispatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """vthread guard goes to vthread._cli_guard; without it, a clear message and exit 2."""
    import importlib.util

    if importlib.util.find_spec("vthread._cli_guard") is None:
        code, _, err = run(["guard", "--help"], monkeypatch)
        assert code == 2 and "not available" in err
    else:
        assert run_process(["guard", "--help"]).returncode == 0


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    """A reader that stops early (| head) ends the run quietly, exit 141 (as vthread guard)."""
    path = write_jsonl(tmp_path / "many.jsonl", [[]] * 20_000)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen([sys.executable, "-m", "vthread", "scan", str(path), "-q"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.readline()
        process.stdout.close()
        err = process.stderr.read()
        assert process.wait(timeout=60) == 141  # as vthread guard
    assert b"Traceback" not in err and err == b""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_summary_after_a_broken_pipe_counts_every_record_the_reader_got(
        jobs: str, tmp_path: Path) -> None:
    """``--summary`` of a scan whose reader stopped early counted only the chunks written
    whole, fewer lines than the reader had read (1,799 for 3,000; found by a tester)."""
    path = write_jsonl(tmp_path / "many.jsonl", [[{"type": "bot", "text": "x"}]] * 40_000)
    summary = tmp_path / "summary.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen([sys.executable, "-m", "vthread", "scan", str(path), "-q",
                           "--jobs", jobs, "--summary", str(summary)],
                          stdout=subprocess.PIPE, env=env) as process:
        assert process.stdout is not None
        got = sum(1 for _ in itertools.islice(process.stdout, 6_000))
        process.stdout.close()
        assert process.wait(timeout=60) == 141
    written = json.loads(summary.read_text())
    assert written["completed"] is False and "broken pipe" in written["failure"]
    assert written["lines"] >= got == 6_000
    assert written["exit_status"] == 141


def test_the_summary_says_the_exit_status_version_start_and_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--summary`` holds what a dashboard needs to tell one nightly scan from another:
    the exit status the run ends with (the gate's answer: a summary with no error and only
    a file left out said nothing of the 65), the vthread version, when it started (UTC),
    and the options as the scan applied them (nan is the default, a fraction rounds down;
    with --anywhere, whose rules are its own, no thresholds)."""
    import datetime

    import vthread

    looping = write_jsonl(tmp_path / "loop.jsonl",
                          [[{"type": "bot", "text": "x"}] * 4, [{"type": "user", "text": "a"}]])
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(looping.read_bytes() + b"{\n")
    summary = tmp_path / "out" / "summary.json"
    summary.parent.mkdir()
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    for argv, status in (([str(looping)], 0), ([str(looping), "--fail-on-loop"], 1),
                         ([str(bad), "--fail-on-loop", "--fail-on-error"], 65),
                         ([str(bad), "--strict"], 2), ([str(tmp_path / "nope.jsonl")], 2)):
        code = run(["scan", *argv, "-q", "--summary", str(summary)], monkeypatch)[0]
        said = json.loads(summary.read_text())
        assert code == said["exit_status"] == status, argv
        assert said["version"] == vthread.__version__
        started = datetime.datetime.fromisoformat(said["started"])
        assert before <= started <= datetime.datetime.now(datetime.UTC)
        assert said["options"]["fail_on_loop"] is ("--fail-on-loop" in argv)
    run(["scan", str(looping), "-q", "--summary", str(summary), "--format", "native",
         "--min-repetitions", "nan", "--min-pattern-length", "2.7", "--max-pattern-length",
         "inf", "--min-result-repetitions", "5", "--mask-volatile"], monkeypatch)
    assert json.loads(summary.read_text())["options"] == {
        "format": "native", "messages_key": None, "id_key": None, "min_repetitions": 2,
        "min_pattern_length": 2, "max_pattern_length": None, "min_result_repetitions": 5,
        "mask_volatile": True, "anywhere": False, "only_loops": False, "strict": False,
        "fail_on_loop": False, "fail_on_loop_share": None, "fail_on_error": False}
    run(["scan", str(looping), "-q", "--summary", str(summary), "--anywhere", "--id-key",
         "run"], monkeypatch)
    options = json.loads(summary.read_text())["options"]
    assert options["anywhere"] is True and options["id_key"] == "run"
    assert "min_repetitions" not in options and options["format"] == "auto"


def test_import_vthread_stays_light() -> None:
    """import vthread loads neither the CLI nor any optional library (orjson, tqdm, pyarrow,
    ray, inspect_ai), even with scan_arrow exported."""
    code = ("import sys, vthread; vthread.scan_arrow; "
            "heavy = {'vthread.cli', 'orjson', 'tqdm', 'pyarrow', 'ray', 'inspect_ai'}; "
            "assert not heavy & set(sys.modules), heavy & set(sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 0


def test_no_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
                           ) -> None:
    """`-` with no standard input at all (a closed descriptor) is a clear exit 2."""
    monkeypatch.setattr(sys, "stdin", None)
    assert cli.main(["scan", "-"]) == 2
    assert "no standard input" in capsys.readouterr().err


def test_files_need_no_standard_input(thread_file: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """Scanning files works where there is no standard input at all (as under CI)."""
    monkeypatch.setattr(sys, "stdin", None)
    assert cli.main(["scan", str(thread_file), "-q"]) == 0
    assert len(capsysbinary.readouterr().out.splitlines()) == 42


def test_short_lines_many_chunks_per_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read holding several chunks' worth of short lines keeps every line, in order."""
    path = write_jsonl(tmp_path / "short.jsonl", [{"id": i, "messages": []} for i in range(50)])
    monkeypatch.setattr(cli, "CHUNK_LINES", 4)
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0
    assert [r["id"] for r in records(out)] == list(range(50))


def test_quiet_writes_the_same_records(thread_file: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """--quiet skips the summary (and the token total read only for it), not a record."""
    code, loud, err = run(["scan", str(thread_file)], monkeypatch)
    quiet_code, quiet, quiet_err = run(["scan", str(thread_file), "-q"], monkeypatch)
    assert (code, loud) == (quiet_code, quiet)
    assert "wasted tokens" in err and quiet_err == ""


def test_a_directory_stands_for_the_trajectory_files_under_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory FILE is read as its trajectory files at any depth, in sorted path order;
    other files, hidden ones and hidden directories are left out."""
    thread = [{"type": "user", "text": "hi"}]
    (tmp_path / "sub").mkdir()
    (tmp_path / ".cache").mkdir()
    (tmp_path / "b.jsonl").write_text(json.dumps({"id": "b", "messages": thread}) + "\n")
    (tmp_path / "sub" / "a.traj").write_text(json.dumps({"history": [
        {"role": "user", "content": "hi"}]}))
    with gzip.open(tmp_path / "sub" / "c.jsonl.gz", "wt") as compressed:
        compressed.write(json.dumps(thread) + "\n" + json.dumps(thread) + "\n")
    for ignored in ("notes.txt", ".d.jsonl", ".cache/e.jsonl", "sub/patch.diff"):
        (tmp_path / ignored).write_text(json.dumps(thread) + "\n")
    code, out, _ = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0
    files = [json.loads(line)["file"] for line in out.splitlines()]
    assert files == [str(tmp_path / "b.jsonl"), str(tmp_path / "sub" / "a.traj"),
                     *[str(tmp_path / "sub" / "c.jsonl.gz")] * 2]


def test_a_directory_without_trajectory_files_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing to read under a directory is a usage error naming it, not an empty scan."""
    (tmp_path / "notes.txt").write_text("[]\n")
    code, out, err = run(["scan", str(tmp_path)], monkeypatch)
    assert (code, out) == (2, b"")
    assert f"{tmp_path}: is a directory with no trajectory file" in err


def test_a_directory_scan_goes_past_a_bad_file(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """In a directory, a file whose threads are in several formats gets one error record
    and the other files are still read; the file is said on stderr (none of it read) and in
    the summary as not read to its end (its lines have no records of their own); a
    dangling link, a FIFO and the records of an earlier run into that directory are
    left out, the first two said. --strict keeps the error fatal."""
    native = json.dumps([{"type": "user", "text": "hi"}])
    chat = json.dumps([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}])
    (tmp_path / "a.jsonl").write_text(native + "\n")
    (tmp_path / "b.jsonl").write_text(native + "\n" + chat + "\n")
    (tmp_path / "c.jsonl").write_text(native + "\n")
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    os.mkfifo(tmp_path / "waiting.jsonl")  # read, it would wait for a writer forever
    records = tmp_path / "records.jsonl"
    summary = tmp_path / "summary.out"
    for _ in range(2):  # the second run finds the first one's records in the directory
        code, out, err = run(["scan", str(tmp_path), "-q", "-o", str(records), "--summary",
                              str(summary)], monkeypatch)
        assert (code, out) == (0, b"")
        # What is left out is said (it was left out silently; found by a tester).
        assert err.splitlines() == [
            f"vthread scan: {tmp_path / 'gone.jsonl'}: left out: cannot be read: No such file "
            "or directory (a dangling link?)",
            f"vthread scan: {tmp_path / 'waiting.jsonl'}: left out: not a regular file (a "
            "FIFO, a socket, a device)",
            f"vthread scan: {tmp_path / 'b.jsonl'}: its threads are in different formats "
            "(native at line 1; openai at line 2); give --format to read them all in one; none "
            "of it is read"]
        said = json.loads(summary.read_text())
        assert [(Path(c["file"]).name, "different formats" in c["why"])
                for c in said["cut_short"]] == [("b.jsonl", True)]
        written = [json.loads(line) for line in records.read_text().splitlines()]
        assert [(Path(r["file"]).name, r["line"]) for r in written] == [
            ("a.jsonl", 1), ("b.jsonl", 1), ("c.jsonl", 1)]
        assert "in different formats" in written[1]["error"]
        assert "b.jsonl" not in written[1]["error"]  # the record names the file already
    code, _, err = run(["scan", str(tmp_path), "-q", "--strict"], monkeypatch)
    assert code == 2 and "b.jsonl" in err and "different formats" in err


def test_an_earlier_runs_records_in_a_directory_are_passed_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records an earlier scan left in the directory (under another name, plain or gzip) are
    not read as trajectories (each line would be an error record): passed over and said;
    named on the command line, a records file is still scanned as asked."""
    (tmp_path / "runs.jsonl").write_text(json.dumps([{"type": "user", "text": "hi"}]) + "\n")
    first = tmp_path / "first.jsonl.gz"
    assert run(["scan", str(tmp_path), "-q", "-o", str(first)], monkeypatch)[0] == 0
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and [Path(r["file"]).name for r in records(out)] == ["runs.jsonl"]
    assert err == f"vthread scan: {first}: passed over: it holds vthread scan's records\n"
    (tmp_path / "runs.jsonl").unlink()
    code, _, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 2 and "holding only vthread scan's records" in err
    assert "(vthread report reads a records file named as such: vthread report FILE" in err
    code, _, err = run(["report", str(tmp_path), "-o", str(tmp_path / "r.html")], monkeypatch)
    assert code == 2 and "(vthread report reads a records file named as such" in err
    code, out, _ = run(["scan", str(first), "-q"], monkeypatch)
    assert code == 0 and "error" in records(out)[0]


def test_runs_behind_one_record_line_in_a_directory_are_scanned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose first line is a record but whose next lines are runs (a record pasted
    above a trajectory) is not an earlier run's output: passing it over would drop its runs
    unread, and writing records over it would destroy them. It is scanned, a record for each
    line, and refused as an output."""
    thread = json.dumps([{"type": "user", "text": "hi"}])
    (tmp_path / "elsewhere").mkdir()
    earlier = tmp_path / "elsewhere" / "runs.jsonl"
    earlier.write_text(thread + "\n")
    code, earlier_records, _ = run(["scan", str(earlier), "-q"], monkeypatch)
    assert code == 0 and len(records(earlier_records)) == 1
    earlier.unlink()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(earlier_records + (thread + "\n" + thread + "\n").encode())
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and "passed over" not in err
    read = records(out)
    assert [(Path(r["file"]).name, r["line"]) for r in read] == [("mixed.jsonl", 1),
                                                                 ("mixed.jsonl", 2),
                                                                 ("mixed.jsonl", 3)]
    assert "error" in read[0]
    assert [(r["verdict"], r["messages"]) for r in read[1:]] == [(None, 1), (None, 1)]
    (tmp_path / "other.jsonl").write_text(thread + "\n")
    before = mixed.read_bytes()
    code, _, err = run(["scan", str(tmp_path), "-q", "-o", str(mixed)], monkeypatch)
    assert code == 2 and "holds neither records nor a summary" in err
    assert "(it is not a scan's records, summary or a report's page" in err  # (why)
    assert mixed.read_bytes() == before


@pytest.mark.parametrize("packing", ["plain", "gzip"])
def test_runs_after_many_records_in_a_directory_are_scanned(
        packing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs appended to an earlier scan's records, past the head a records file is first
    told by (a few hundred kilobytes), make the file runs: scanned in a directory, every
    line a record, and refused as an output (a tester's find: only the head was looked at,
    so the runs were passed over unread and ``-o`` wrote over them, exit 0)."""
    thread = json.dumps([{"type": "user", "text": "hi"}])
    (tmp_path / "elsewhere").mkdir()
    earlier = tmp_path / "elsewhere" / "runs.jsonl"
    earlier.write_text((thread + "\n") * 3000)
    code, written, _ = run(["scan", str(earlier), "-q"], monkeypatch)
    assert code == 0 and len(written) > 2 * (256 << 10)  # far past the head
    earlier.unlink()
    data = written + (thread + "\n").encode() * 2
    log = tmp_path / ("log.jsonl.gz" if packing == "gzip" else "log.jsonl")
    log.write_bytes(gzip.compress(data) if packing == "gzip" else data)
    (tmp_path / "other.jsonl").write_text(thread + "\n")
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and "passed over" not in err
    read = [r for r in records(out) if Path(r["file"]).name == log.name]
    assert len(read) == 3002
    assert [r["messages"] for r in read[-2:]] == [1, 1] and "error" in read[0]
    before = log.read_bytes()
    code, _, err = run(["scan", str(tmp_path), "-q", "-o", str(log)], monkeypatch)
    assert code == 2 and "holds neither records nor a summary" in err
    assert log.read_bytes() == before
    # The records alone, whole or cut short in their last line, are still passed over.
    for records_only in (written, written[:-20]):
        log.write_bytes(gzip.compress(records_only) if packing == "gzip" else records_only)
        code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
        assert code == 0 and f"{log}: passed over" in err
        assert [Path(r["file"]).name for r in records(out)] == ["other.jsonl"]


def test_runs_that_carry_file_line_and_error_fields_are_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent's runs whose lines carry ``file``, ``line`` and ``error`` fields of their
    own (a run fixing a TypeError at src/app.py line 42) hold their messages as an array: they
    are runs, scanned in a directory (they were passed over as records, their loops never
    reported) and never written over by ``-o`` (they were)."""
    chat = [{"role": "user", "content": "fix"}] + [
        {"role": "assistant", "content": "same"}, {"role": "user", "content": "again"}] * 4
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps({"id": f"r{i}", "file": "src/app.py", "line": 42,
                                        "error": "TypeError", "messages": chat}) + "\n"
                            for i in range(3)))
    (tmp_path / "other.jsonl").write_text(json.dumps(chat) + "\n")
    before = runs.read_bytes()
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and "passed over" not in err
    looped = [r for r in records(out) if Path(r["file"]).name == "runs.jsonl"]
    assert [r["verdict"] for r in looped] == ["repeated_suffix"] * 3
    code, _, err = run(["scan", str(tmp_path), "-q", "-o", str(runs)], monkeypatch)
    assert code == 2 and "holds neither records nor a summary" in err
    assert runs.read_bytes() == before


def test_runs_that_carry_a_verdict_of_their_own_are_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Graded runs whose lines carry ``file``, ``line`` and a ``verdict`` that names no
    heuristic ("pass"), their messages under another key, are runs: scanned in a directory
    (they were passed over as records, and the directory said to hold only records), and
    never written over by ``-o`` (they were). So are those that carry an ``error`` of their
    own too, a text or null (an error beside a verdict made any line a record)."""
    chat = [{"role": "user", "content": "fix"}] + [
        {"role": "assistant", "content": "same"}, {"role": "user", "content": "again"}] * 4
    errors = ["TypeError: x", None, "TypeError: y"]
    (tmp_path / "graded.jsonl").write_text("".join(
        json.dumps({"id": f"r{i}", "file": "tasks/a.json", "line": 3, "verdict": "pass",
                    "error": errors[i], "trajectory": chat}) + "\n" for i in range(3)))
    code, out, err = run(["scan", str(tmp_path), "-q", "--messages-key", "trajectory"],
                         monkeypatch)
    assert code == 0 and "passed over" not in err
    assert [r["verdict"] for r in records(out)] == ["repeated_suffix"] * 3
    (tmp_path / "other.jsonl").write_text(json.dumps({"id": "o", "trajectory": chat}) + "\n")
    graded = tmp_path / "graded.jsonl"
    before = graded.read_bytes()
    code, _, err = run(["scan", str(tmp_path), "-q", "--messages-key", "trajectory", "-o",
                        str(graded)], monkeypatch)
    assert code == 2 and "holds neither records nor a summary" in err
    assert graded.read_bytes() == before


@pytest.mark.parametrize(("line", "is_one"), [
    ({"file": "a", "line": 1, "verdict": None, "messages": 3}, True),
    ({"id": [1], "file": "a", "line": 2, "error": "not valid JSON"}, True),
    ({"file": "a", "line": 1, "error": "TypeError", "messages": [{"role": "user"}]}, False),
    ({"file": "a", "line": "7", "verdict": None}, False),
    ({"file": 3, "line": 1, "verdict": None}, False),
    ({"file": "a", "line": True, "error": "x"}, False),
    ({"file": "a", "line": 1, "verdict": None, "messages": {"a": 1}}, False),
    ({"file": "a", "line": 1, "verdict": "repeated_result_run", "messages": 9}, True),
    ({"file": "a", "line": 1, "verdict": "pass", "messages": 9}, False),
    ({"file": "a", "line": 1, "verdict": "", "messages": 9}, False),
    ({"file": "a", "line": 1, "verdict": ["repeated_suffix"]}, False),
    ({"file": "a", "line": 1, "verdict": "pass", "error": "not valid JSON"}, False),
    ({"file": "a", "line": 1, "verdict": None, "error": "not valid JSON"}, False),
    ({"file": "a", "line": 1, "error": None}, False),
    ({"file": "a", "line": 1, "error": "TypeError", "trajectory": [{"role": "user"}]}, False),
    ({"file": "a", "line": 1, "error": "TypeError", "grading": {"score": 0}}, False),
    ({"id": {"task": 1}, "file": "a", "line": 1, "error": "not a thread"}, True),
    ({"file": "a", "line": 1, "verdict": None, "trajectory": [{"role": "user"}]}, False),
    ({"file": "a", "line": 1, "verdict": "repeated_suffix", "grading": {"score": 0}}, False),
    ({"id": [1, 2], "file": "a", "line": 1, "verdict": None, "loops": [], "messages": 3},
     True),
    ({"file": "a", "line": 1, "verdict": None, "loops": {"a": 1}}, False),
    ({"file": "a", "line": 2**63, "verdict": None}, False),
    ({"file": "a", "line": 1, "error": 5}, False),
    ({"file": "a", "line": 1, "verdict": "repeated_suffix", "period": "x"}, False),
    ({"file": "a", "line": 1, "verdict": "repeated_suffix", "excerpt": 5}, False),
    ({"file": "a", "line": 1, "verdict": "repeated_suffix", "loop_tokens": "many"}, False),
    ({"file": "a", "line": 1, "verdict": "repeated_suffix", "loop_tokens": None,
      "excerpt": None, "period": 3}, True),
])
def test_what_counts_as_a_record(line: dict[str, Any], is_one: bool) -> None:
    """A record names a file (a string) and a line (an integer), an error or a verdict (null
    or a heuristic's name), and counts its messages (an integer) when it says how many. An
    error record is the error's text beside the id, file and line: a verdict, a null error
    or an array or object beside it (a graded run's trajectory) makes the line a run."""
    from vthread._cli_report import is_record
    from vthread.report import RecordError, ReportData

    assert is_record(line) is is_one
    # The report reads records by the same rule (it counted as error records lines the
    # scan would read as runs, and refused lines the scan passed over: a reviewer's find).
    data = ReportData()
    if is_one:
        data.add(line)
        assert data.lines == 1
    else:
        with pytest.raises(RecordError):
            data.add(line)
        assert data.lines == 0


def test_records_cut_short_in_a_directory_are_still_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An earlier run's records whose last line was cut (the scan killed while writing, a
    full disk, a scan still writing) are still passed over, and may be written over: the
    test that every line is a record leaves out a last line without its newline (a
    reviewer's find in this check's first version)."""
    thread = json.dumps([{"type": "user", "text": "hi"}])
    (tmp_path / "runs.jsonl").write_text((thread + "\n") * 3)
    code, written, _ = run(["scan", str(tmp_path / "runs.jsonl"), "-q"], monkeypatch)
    assert code == 0 and len(records(written)) == 3
    cut = tmp_path / "records.jsonl"
    cut.write_bytes(written[:-20])
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and [Path(r["file"]).name for r in records(out)] == ["runs.jsonl"] * 3
    assert err == f"vthread scan: {cut}: passed over: it holds vthread scan's records\n"
    assert run(["scan", str(tmp_path), "-q", "-o", str(cut)], monkeypatch)[0] == 0
    assert cut.read_bytes() == written
    # A whole last line that is a run, its newline missing, is no cut: the file is runs
    # behind a record, scanned and not written over (the second reviewer's find).
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(written.split(b"\n")[0] + b"\n" + thread.encode())
    cut.unlink()
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and "passed over" not in err
    assert [Path(r["file"]).name for r in records(out)].count("mixed.jsonl") == 2
    code, _, err = run(["scan", str(tmp_path), "-q", "-o", str(mixed)], monkeypatch)
    assert code == 2 and "holds neither records nor a summary" in err


@pytest.mark.parametrize("flag", ["-o", "--summary"])
def test_an_output_under_an_input_directory_that_is_a_trajectory_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str) -> None:
    """Records or a summary written over a trajectory found under the input directory would
    destroy it unread (it was left out of the scan and written over, exit 0): refused
    before anything is written, the file as it was. An empty file there, or an earlier
    run's records, is written over as before."""
    runs = [tmp_path / "a.jsonl", tmp_path / "b.traj"]
    runs[0].write_text(json.dumps([{"type": "user", "text": "hi"}]) + "\n")
    runs[1].write_text(json.dumps({"history": [{"role": "user", "content": "hi"}]}))
    for target in runs:
        before = target.read_bytes()
        code, out, err = run(["scan", str(tmp_path), "-q", flag, str(target)], monkeypatch)
        assert (code, out) == (2, b"")
        what = "the output" if flag == "-o" else "the --summary file"
        assert (f"{what} {target} is a file under the input {tmp_path} that holds "
                "neither records nor a summary of vthread scan") in err
        assert target.read_bytes() == before
    # Named as given, and where the directory holds it only by another name (a link), by
    # that too; a link the user never named was given as the file (a tester's).
    (tmp_path / "link.jsonl").symlink_to(runs[0])
    code, _, err = run(["scan", str(tmp_path), "-q", flag, str(runs[0])], monkeypatch)
    assert code == 2 and f"{what} {runs[0]} is a file under the input" in err, err
    outside = tmp_path.parent / f"{tmp_path.name}-given.jsonl"
    outside.symlink_to(runs[0])
    code, _, err = run(["scan", str(tmp_path), "-q", flag, str(outside)], monkeypatch)
    assert code == 2 and f"{what} {outside} (there as {runs[0]}) is a file under" in err, err
    (tmp_path / "link.jsonl").unlink()
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert run(["scan", str(tmp_path), "-q", flag, str(empty)], monkeypatch)[0] == 0
    assert empty.stat().st_size > 0


def test_a_summary_left_in_the_directory_is_passed_over_and_written_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--summary runs/summary.json`` run again writes over the earlier summary (it was
    taken for a trajectory the output would destroy); scanned without --summary, the
    directory passes the summary over, said, as it does an earlier run's records."""
    (tmp_path / "a.jsonl").write_text(json.dumps([{"type": "user", "text": "hi"}]) + "\n")
    summary = tmp_path / "summary.json"
    for _ in range(2):
        code, out, err = run(["scan", str(tmp_path), "-q", "--summary", str(summary)],
                             monkeypatch)
        assert (code, err) == (0, "") and len(records(out)) == 1
        assert json.loads(summary.read_text())["threads"] == 1
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0 and [Path(r["file"]).name for r in records(out)] == ["a.jsonl"]
    assert err == f"vthread scan: {summary}: passed over: it holds vthread scan's summary\n"


def test_several_named_files_go_past_a_bad_one(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Files named one by one (a shell glob) are read as a directory's are: a file in
    several formats is one error record, said (none of its lines read, not "not read past
    there", as of a file cut short) and in cut_short, and the files after it are still
    read; one such file named alone still ends the scan (status 2)."""
    native = json.dumps([{"type": "user", "text": "hi"}])
    chat = json.dumps([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}])
    bad, good = tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    bad.write_text(native + "\n" + chat + "\n")
    good.write_text(native + "\n")
    code, out, err = run(["scan", str(bad), str(good), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and [(Path(r["file"]).name, r["line"]) for r in got] == [
        ("b.jsonl", 1), ("c.jsonl", 1)]
    assert "in different formats" in got[0]["error"]
    assert err.endswith("give --format to read them all in one; none of it is read\n"), err
    code, _, err = run(["scan", str(bad), "-q"], monkeypatch)
    assert code == 2 and "different formats" in err


@pytest.mark.parametrize("separator", ["", " "])
def test_two_runs_joined_on_one_line_are_said_to_be(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, separator: str) -> None:
    """``cat a.jsonl b.jsonl`` where a.jsonl's last line has no newline joins two runs on one
    line: its error record says a second value begins there and why (it was "Extra data"
    alone), and the lines around it are read."""
    run_a = json.dumps({"id": "a", "messages": [{"type": "user", "text": "hi"}]})
    run_b = json.dumps({"id": "b", "messages": [{"type": "user", "text": "yo"}]})
    path = tmp_path / "ab.jsonl"
    path.write_text(f"{run_a}\n{run_a}{separator}{run_b}\n{run_b}\n")
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    first, joined, last = records(out)
    assert code == 0 and (first["id"], last["id"]) == ("a", "b")
    assert joined["error"].startswith("not valid JSON: Extra data: ")
    assert joined["error"].endswith("(a second value begins there: two lines joined, as cat "
                                    "joins a file whose last line has no newline to the "
                                    "next? JSONL holds one value a line)")
    # A run after a prefix (a log's timestamp, `cat -n`'s number, a quoted name) is no join.
    for prefix in ("1714979290 ", "     2\t", '"id" '):
        path.write_text(f"{prefix}{run_b}\n")
        (prefixed,) = records(run(["scan", str(path), "-q"], monkeypatch)[1])
        assert prefixed["error"].startswith("not valid JSON: Extra data: ")
        assert "joined" not in prefixed["error"], prefixed["error"]


@pytest.mark.parametrize("count", [3, 40_000])
def test_lines_ended_by_a_carriage_return_alone_are_said_to_be(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """A file whose lines end in a carriage return alone is one JSONL line holding them all,
    one error record: its record and the file's warning say why (it was "Extra data" and
    "is it a trajectory file?"), however long that line is (over 4 MiB, the warning was
    not said)."""
    runs = [json.dumps({"id": i, "messages": [{"type": "user", "text": "hi" * 50}]})
            for i in range(count)]
    path = tmp_path / "mac.jsonl"
    path.write_bytes("\r".join(runs).encode() + b"\r")
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    (record,) = records(out)
    assert code == 0 and record["error"].startswith("not valid JSON: Extra data: ")
    assert record["error"].endswith("(a carriage return alone ends a value before it: do "
                                    "the file's lines end in \\r alone? JSONL lines end in "
                                    "\\n)")
    assert err.startswith(f"vthread scan: {path}: warning: its lines seem to end in a "
                          "carriage return alone (\\r)")
    path.write_bytes("\n".join(runs).encode() + b"\n")
    assert [r["id"] for r in records(run(["scan", str(path), "-q"], monkeypatch)[1])] == list(
        range(count))
    # A file of lines whose first holds a stray carriage return is no file of such lines.
    path.write_bytes(b'{"id": 0, "messages": []}\r{"oops"\n' + "\n".join(runs).encode())
    assert "carriage return" not in run(["scan", str(path), "-q"], monkeypatch)[2]


def test_a_file_that_is_not_json_is_said_to_be_none(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A file none of whose first lines is JSON (a README passed by mistake) gets its error
    records, one per line, and one warning that it is no trajectory file; a file of JSON
    lines that are not threads gets its error records and no such warning."""
    prose = tmp_path / "notes.jsonl"
    prose.write_text("# Notes\n\nSome text.\n")
    code, out, err = run(["scan", str(prose), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 3
    assert err == (f"vthread scan: {prose}: warning: none of its first 3 lines is JSON; each "
                   "line is an error record (is it a trajectory file?)\n" + nothing_scanned(3))
    values = tmp_path / "values.jsonl"
    values.write_text('{"x": 1}\n7\n')
    code, out, err = run(["scan", str(values), "-q"], monkeypatch)
    assert (code, len(records(out)), err) == (0, 2, nothing_scanned(2))


@pytest.mark.parametrize("name", ["out.json", "OUT.JSON.gz", "out.jsonl"])
def test_records_written_to_a_json_path_are_said_to_be_json_lines(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o out.json`` writes JSON Lines, as every other ending but Parquet's, and says so
    with how to read them (``json.load`` of the file failed with "Extra data" and no word
    of why); a .jsonl path gets no note."""
    path = tmp_path / name
    code, _, err = run(["scan", "--sample", "-q", "-o", str(path)], monkeypatch)
    data = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    assert code == 0 and len(records(data)) == 300
    note = (f"vthread scan: note: {path} holds JSON Lines, a record a line, as a .jsonl file "
            "does: read it with pandas.read_json(path, lines=True), jq or vthread report, "
            "not json.load\n")
    assert err == ("" if name == "out.jsonl" else note)


def test_inputs_that_hold_no_run_are_said_and_listed(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An input read to its end that holds no run (an empty file, an agent having crashed
    before it wrote its trajectory; a document of no run) has no record to stand for it:
    among several, it is noted on stderr, and the summary lists it in ``held_no_run``."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl", "c.jsonl.gz", "d.jsonl"):
        (folder / name).write_bytes(gzip.compress(b"") if name.endswith(".gz") else b"")
    (folder / "e.json").write_text("[]")
    good = write_jsonl(folder / "f.jsonl", [[{"type": "user", "text": "a"}]] * 2)
    summary = tmp_path / "summary.json"
    for jobs in ("1", "2"):
        code, out, err = run(["scan", str(folder), "-q", "-j", jobs, "--summary",
                              str(summary)], monkeypatch)
        empty = [str(folder / name) for name in ("a.jsonl", "b.jsonl", "c.jsonl.gz",
                                                 "d.jsonl", "e.json")]
        assert code == 0 and len(records(out)) == 2
        assert err == (f"vthread scan: note: 5 inputs hold no run: {', '.join(empty[:3])}, "
                       "and 2 more\n")
        assert json.loads(summary.read_text())["held_no_run"] == empty
    # Alone, the input's warning that no thread was scanned says it.
    code, out, err = run(["scan", str(folder / "a.jsonl"), str(good), "-q"], monkeypatch)
    assert err == f"vthread scan: note: 1 input holds no run: {folder / 'a.jsonl'}\n"
    code, out, err = run(["scan", str(folder / "a.jsonl"), "-q"], monkeypatch)
    assert "note:" not in err and "no thread was scanned: the input held none" in err
    # A Parquet file of no row is one too (it was listed nowhere).
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"id": pa.array([], pa.string()),
                             "messages": pa.array([], pa.string())}), table)
    code, out, err = run(["scan", str(table), str(good), "-q", "--summary", str(summary)],
                         monkeypatch)
    assert code == 0 and len(records(out)) == 2
    assert err == f"vthread scan: note: 1 input holds no run: {table}\n"
    assert json.loads(summary.read_text())["held_no_run"] == [str(table)]


def test_a_pretty_printed_run_appended_to_jsonl_is_said_to_be_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run pretty-printed after JSONL lines (``cat run.json >> runs.jsonl``): its first
    line, a lone ``{`` (or ``[``), is said to open a value written over several lines, and
    how JSONL holds one, where it was said to be cut short; every line keeps its record."""
    run_ = {"id": "a", "messages": [{"type": "user", "text": "hi"}]}
    for opening, value in (("{", run_), ("[", run_["messages"])):
        path = tmp_path / "runs.jsonl"
        path.write_text(json.dumps(run_) + "\n" + json.dumps(value, indent=2) + "\n")
        code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
        got = records(out)
        assert code == 0 and len(got) == len(path.read_text().splitlines())
        assert got[1]["error"].endswith(
            f"(a lone '{opening}' on its line: a value pretty-printed over several lines? "
            "JSONL holds each value on one line, as jq -c writes it)"), got[1]
        assert "cut short" not in got[1]["error"]


def test_a_line_cut_short_is_said_to_be_cut_short(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's line that ends inside its JSON value (a file copied while still being
    written, or truncated) is said to be cut short, in its record and, when it is all the
    file holds, in the file's warning: it was "not JSON ... (is it a trajectory file?)".
    JSON written wrong says no such thing."""
    whole = json.dumps({"id": "a", "messages": [{"type": "user", "text": "hello caf\u00e9",
                                                 "meta": {"ok": True, "n": -1.5e+30}}]})
    literal, number = whole.index("true"), whole.index("-1.5e+30")
    for cut in (len(whole) - 3, whole.index("hello") + 2, whole.index("[") + 1,
                literal + 1, literal + 3, number + 1, number + 3, number + 5, number + 6,
                whole.index("\\u00e9") + 2, whole.index("\\u00e9") + 5):
        path = tmp_path / "cut.jsonl"
        path.write_text(whole[:cut])
        code, out, err = run(["scan", str(path), "-q"], monkeypatch)
        got = records(out)
        with pytest.raises(json.JSONDecodeError) as expected:
            json.loads(whole[:cut])
        assert code == 0 and got == [{"id": None, "file": str(path), "line": 1, "error": (
            f"not valid JSON: {expected.value} (it ends inside its value: cut short?)")}]
        assert err == (f"vthread scan: {path}: warning: its first line ends inside its JSON "
                       "value; each such line is an error record (is the file cut short, or "
                       "still being written?)\n" + nothing_scanned(1))
    path.write_text(whole + "\n" + whole[:40] + "\n")  # the last line alone cut short
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert records(out)[1]["error"].endswith("(it ends inside its value: cut short?)")
    assert err == (f"vthread scan: {path}: note: line 2 ends inside its value: cut short, or "
                   "still being written\n")  # (and listed in the summary's cut_short)
    path.write_text('{"id": "a", "messages": [}\n')  # written wrong, not cut short
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert records(out)[0]["error"] == ("not valid JSON: Expecting value: line 1 column 26 "
                                        "(char 25)")
    assert "is it a trajectory file?" in err


def test_a_pretty_printed_document_piped_in_is_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cat runs.json | vthread scan -`: a document whose first line is only "[" is read as
    the .json file is (a record per run), not a line at a time; JSONL, and a stream that only
    begins like a document, are still read line by line."""
    runs = [{"task_id": i, "traj": [{"role": "user", "content": "book it"},
                                    {"role": "assistant", "content": "done"}]} for i in range(3)]
    document = json.dumps(runs, indent=2).encode()
    path = tmp_path / "runs.json"
    path.write_bytes(document)
    code, by_name, _ = run(["scan", str(path), "-q"], monkeypatch)
    code_piped, piped, _ = run(["scan", "-", "-q"], monkeypatch, stdin=document)
    assert code == code_piped == 0
    assert piped == by_name.replace(json.dumps(str(path)).encode(), b'"<stdin>"')
    assert len(piped.splitlines()) == 3
    lines = b"".join(json.dumps(run_).encode() + b"\n" for run_ in runs)
    assert len(run(["scan", "-", "-q"], monkeypatch, stdin=lines)[1].splitlines()) == 3
    broken = b"[\n" + lines
    records = [json.loads(line) for line in run(["scan", "-", "-q"], monkeypatch,
                                                 stdin=broken)[1].splitlines()]
    assert len(records) == 4 and "not valid JSON" in records[0]["error"]


def test_a_compact_document_of_runs_piped_in_is_read_run_by_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`cat runs.json | vthread scan -` with the array of runs on one line (as json.dump
    writes it, across more than one read): a record per run, as from the file; a one-line
    thread, and a line followed by others, are still JSONL."""
    monkeypatch.setattr(cli, "READ_BYTES", 64)
    runs = [{"task_id": i, "traj": [{"role": "user", "content": "book it"},
                                    {"role": "assistant", "content": "done"}] * (i + 2)}
            for i in range(3)]
    document = json.dumps(runs).encode()
    path = tmp_path / "runs.json"
    path.write_bytes(document)
    code, by_name, _ = run(["scan", str(path), "-q"], monkeypatch)
    for piped_in in (document, document + b"\n", b"  " + document + b"\n\n"):
        code_piped, piped, _ = run(["scan", "-", "-q"], monkeypatch, stdin=piped_in)
        assert code == code_piped == 0
        assert piped == by_name.replace(json.dumps(str(path)).encode(), b'"<stdin>"')
    thread = json.dumps(runs[0]["traj"]).encode()
    assert len(records(run(["scan", "-", "-q"], monkeypatch, stdin=thread)[1])) == 1
    # Runs under a given messages key; the document split into its runs once.
    splits: list[str | None] = []
    real = cli._core.DocumentSplitter
    monkeypatch.setattr(cli._core, "DocumentSplitter",
                        lambda key=None: splits.append(key) or real(key))
    keyed = json.dumps([{"task_id": i, "steps": run_["traj"]} for i, run_ in enumerate(runs)])
    code_keyed, out, _ = run(["scan", "-", "-q", "--messages-key", "steps"], monkeypatch,
                             stdin=keyed.encode())
    assert code_keyed == 0 and [r["id"] for r in records(out)] == [0, 1, 2]
    assert splits == ["steps"]
    monkeypatch.setattr(cli._core, "DocumentSplitter", real)
    # A line of runs is a document, whatever follows: what follows it is where it breaks.
    *read, broken = records(run(["scan", "-", "-q"], monkeypatch,
                                stdin=document + b"\n" + thread)[1])
    assert [r["id"] for r in read] == [0, 1, 2]
    assert "line 2 column 1 of the document, after its closing bracket" in broken["error"]


def test_one_misread_line_is_warned_of_once(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """--format native on 70 looping chat runs: the file's warning names the first 64 it looked
    at, and the chunks' warning of chat loops read as native names only the 6 after them;
    both named lines 1 to 64 (a new user's two warnings for one misread)."""
    chat = [{"role": "user", "content": "again"}, {"role": "assistant", "content": "sure"}] * 4
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(chat) + "\n" for _ in range(70)))
    code, out, err = run(["scan", str(path), "-q", "--format", "native"], monkeypatch)
    given, looping = err.splitlines()
    assert code == 0 and len(records(out)) == 70
    assert "--format native was given, but lines 1, 2, 3, 4, 5 and 59 more of the first 64" in (
        given)
    assert "warning: lines 65, 66, 67, 68, 69 and 1 more look like openai but are read" in (
        looping)


def test_a_given_format_that_does_not_fit_is_warned_of(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--format native on chat runs (every one would read as typeless, equal messages): the
    records are made as asked, and a warning names the runs that look like another format;
    the right format, or a plain chat under any chat format, draws none."""
    chat = [{"role": "user", "content": "book it"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "function": {"name": "book", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "messages": chat}) + "\n" for i in range(3)))
    code, out, err = run(["scan", str(path), "-q", "--format", "native"], monkeypatch)
    assert code == 0 and len(out.splitlines()) == 3
    assert (f"{path}: warning: --format native was given, but lines 1, 2, 3 of the first 3 "
            "look like openai") in err
    assert run(["scan", str(path), "-q", "--format", "openai"], monkeypatch)[2] == ""
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps([{"role": "user", "content": "hi"}]) + "\n")
    assert run(["scan", str(plain), "-q", "--format", "anthropic"], monkeypatch)[2] == ""
    # Lines too long to be worth a warning's Python parse are not looked at: the others are.
    short = len(json.dumps({"id": "0", "messages": chat}))
    monkeypatch.setattr(cli, "WARN_LINE_BYTES", short)
    path.write_text("".join(json.dumps({"id": str(i) + " " * i, "messages": chat}) + "\n"
                            for i in range(3)))  # ids padded: lines 2 and 3 are longer
    _, _, err = run(["scan", str(path), "-q", "--format", "native"], monkeypatch)
    assert "but line 1 of the first 1 looks like openai" in err
    # Lines with no thread (blank ones, an empty run) count among the first: "line 4 of the
    # first 1" was said when only line 4 held messages.
    path.write_text("\n\n" + json.dumps({"messages": []}) + "\n"
                    + json.dumps({"id": "0", "messages": chat}) + "\n")
    _, _, err = run(["scan", str(path), "-q", "--format", "native"], monkeypatch)
    assert "but line 4 of the first 4 looks like openai" in err, err


def test_the_version_is_looked_up_only_when_asked_for() -> None:
    """Reading the package metadata costs a scan about 30 ms: the parser is built without it,
    and --version still names the installed version."""
    script = ("import sys; from vthread import _cli_main; _cli_main._parser(); "
              "print('importlib.metadata' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True)
    assert done.stdout.strip() == b"False"
    from importlib.metadata import version

    assert run_process(["--version"]).stdout.strip() == f"vthread {version('vthread')}".encode()


def test_format_auto_is_the_default_detection(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """--format auto (the Python API's word for detection) reads as no --format does, for
    scan and report (it was an invalid choice)."""
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"},
                                {"role": "assistant", "content": "hello"}]) + "\n")
    detected = run(["scan", str(chat), "-q"], monkeypatch)
    assert detected[0] == 0 and run(["scan", str(chat), "-q", "--format", "auto"],
                                    monkeypatch) == detected
    assert run(["report", str(chat), "--format", "auto", "-o", str(tmp_path / "r.html")],
               monkeypatch)[0] == 0


@pytest.mark.parametrize(("argv", "usage", "said"), [
    (["scan", "--anywre", "x.jsonl"], "usage: vthread scan ",
     "vthread scan: error: unrecognized arguments: --anywre"),
    (["report", "x.jsonl", "-o", "r.html", "--format", "bogus"], "usage: vthread report ",
     "vthread report: error: argument --format: invalid choice: 'bogus'"),
])
def test_a_usage_error_shows_its_commands_usage(argv: list[str], usage: str, said: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A mistyped option shows the usage of the command it was given to (scan's showed the
    top-level usage, report's showed scan's), then says what was wrong."""
    code, out, err = run(argv, monkeypatch)
    assert (code, out) == (2, b"")
    assert err.startswith(usage) and said in err


def test_a_scans_records_given_back_are_said_to_be_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan's own output named as input: each line is still an error record (as asked),
    and stderr says why and how to read them back, not only that "messages" is a number."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"id": "r", "messages": [{"type": "user", "text": "hi"}]})
                    + "\n")
    own = tmp_path / "records.jsonl"
    assert run(["scan", str(runs), "-q", "-o", str(own)], monkeypatch)[0] == 0
    code, out, err = run(["scan", str(own), "-q"], monkeypatch)
    assert code == 0 and "error" in records(out)[0]
    assert err == (f"vthread scan: {own}: warning: it holds vthread scan's records, not runs; "
                   f"each line is an error record (vthread report {own} reads them back)\n"
                   + nothing_scanned(1))
    assert run(["scan", str(runs), "-q"], monkeypatch)[2] == ""


def test_a_scans_records_in_utf_16_are_not_said_to_be_read_back_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records a shell rewrote in UTF-16 (PowerShell's ``>``) named as input: scan reads
    them and says they are records, but not that vthread report reads them back as they
    are (it reads records in UTF-8): convert them first."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"id": "r", "messages": [{"type": "user", "text": "hi"}]})
                    + "\n")
    own = tmp_path / "records.jsonl"
    assert run(["scan", str(runs), "-q", "-o", str(own)], monkeypatch)[0] == 0
    wide = tmp_path / "wide.jsonl"
    wide.write_bytes(own.read_text().encode("utf-16"))
    code, out, err = run(["scan", str(wide), "-q"], monkeypatch)
    assert code == 0 and "error" in records(out)[0]
    assert err.startswith(f"vthread scan: {wide}: warning: it holds vthread scan's records, "
                          "not runs; each line is an error record (vthread report reads "
                          "records written in UTF-8: convert the file (iconv) to read them "
                          "back)\n")
    code, out, err = run(["scan", "-", "-q"], monkeypatch, stdin=wide.read_bytes())
    assert code == 0 and "error" in records(out)[0]  # (piped, they are no file)
    assert err.startswith("vthread scan: <stdin>: warning: it holds vthread scan's records, "
                          "not runs; each line is an error record (vthread report reads "
                          "records written in UTF-8: convert them (iconv) to read them "
                          "back)\n")


def test_a_scans_summary_given_as_input_is_said_to_be_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan's --summary named as input to scan or report: its one run is still an error
    record, and stderr says what the file is and what report reads (it said only that
    "messages" is a number); a run holding the summary's keys beside its messages is a run."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"id": "r", "messages": [{"type": "user", "text": "hi"}]})
                    + "\n")
    summary = tmp_path / "summary.json"
    assert run(["scan", str(runs), "-q", "--summary", str(summary)], monkeypatch)[0] == 0
    said = (f"{summary}: warning: it is vthread scan's --summary, not runs; its run is an "
            "error record (vthread report reads the records a scan writes with -o)\n")
    code, out, err = run(["scan", str(summary), "-q"], monkeypatch)
    assert code == 0 and "error" in records(out)[0]
    assert err == f"vthread scan: {said}" + nothing_scanned(1, unit="run")
    code, _, err = run(["report", str(summary), "-o", str(tmp_path / "r.html")], monkeypatch)
    assert code == 0 and err.startswith(f"vthread report: {said}")
    keyed = json.loads(summary.read_text()) | {"messages": [{"type": "user", "text": "hi"}]}
    summary.write_text(json.dumps(keyed))
    code, out, err = run(["scan", str(summary), "-q"], monkeypatch)
    assert (code, err) == (0, "") and "error" not in records(out)[0]
