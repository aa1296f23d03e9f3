"""``vthread scan`` bugs found trying it as a new user would: one regression test (or more) each."""

from __future__ import annotations

import codecs
import gzip
import io
import json
import math
import os
import re
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.deadline import ends_within
from tests.test_cli import EARLIER_RECORD
from vthread import cli, scan

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "vthread" / "samples" / "threads.jsonl"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
_BARE_CR = re.compile(rb"\r(?!\n)")  # a carriage return that redraws a line (a pty adds \r\n)


def run(argv: list[str], monkeypatch: pytest.MonkeyPatch, stdin: bytes = b"", *,
        tty_err: bool = False, tty_in: bool = False) -> tuple[int, bytes, str]:
    """main(argv) in this process: (exit status, stdout bytes, stderr text)."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")

    class Err(io.StringIO):
        def isatty(self) -> bool:
            return tty_err

    class In(io.TextIOWrapper):
        def isatty(self) -> bool:
            return tty_in

    err = Err()
    monkeypatch.setattr(sys, "stdin", In(io.BufferedReader(io.BytesIO(stdin))))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = cli.main(argv)
    out.flush()
    assert isinstance(out.buffer, io.BytesIO)
    return code, out.buffer.getvalue(), err.getvalue()


def records(output: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.decode("ascii").splitlines()]


def lines_file(path: Path, count: int) -> Path:
    """``count`` small native threads, one per line."""
    message = '{"type":"bot","text":"hello"}'
    path.write_bytes(b"".join(f'{{"id":{i},"messages":[{message}]}}\n'.encode()
                              for i in range(count)))
    return path


def in_a_pty(args: list[str], *, stdout_too: bool) -> tuple[int, bytes, bytes]:
    """``python -m vthread ARGS`` with stderr (and stdout, if ``stdout_too``) on a pseudo
    terminal: (exit status, what the terminal showed, stdout when piped)."""
    import fcntl
    import pty
    import struct
    import termios
    import threading

    leader, follower = pty.openpty()
    # A terminal 100 columns wide (a fresh pty has none, and a bar then has no room).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    shown: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO once the follower side is closed everywhere
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "vthread", *args], stdin=subprocess.DEVNULL,
            stdout=follower if stdout_too else subprocess.PIPE, stderr=follower, env=ENV)
        os.close(follower)
        out, _ = process.communicate(timeout=120)
        reader.join(timeout=10)
    finally:
        os.close(leader)
    return process.returncode, b"".join(shown), out or b""


# ------------------------------------------------------ 1. progress with --jobs on a terminal


def test_progress_with_jobs_outlives_closed_files(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """-j 2 -o OUT with stderr a terminal: every record written, no crash once a file is
    closed while its last chunk is still being finished (was ValueError from raw.tell())."""
    monkeypatch.setattr(cli, "PROGRESS_INTERVAL", 0.0)  # redraw on every chunk
    monkeypatch.setattr(cli, "CHUNK_LINES", 100)
    inputs = [lines_file(tmp_path / f"in{i}.jsonl", 1000) for i in range(2)]
    target = tmp_path / "out.jsonl"
    code, out, err = run(["scan", *map(str, inputs), "-j", "2", "-o", str(target)],
                         monkeypatch, tty_err=True)
    assert (code, out) == (0, b"")
    assert len(records(target.read_bytes())) == 2000
    assert "2,000 lines" in err


def test_progress_with_jobs_in_a_real_terminal(tmp_path: Path) -> None:
    """The same on a real pseudo terminal: 20,000 records out, a bar drawn, no traceback."""
    source = lines_file(tmp_path / "in.jsonl", 20_000)
    target = tmp_path / "out.jsonl"
    code, shown, _ = in_a_pty(["scan", str(source), "-j", "2", "-o", str(target)],
                              stdout_too=False)
    assert code == 0, shown
    assert b"Traceback" not in shown
    assert len(target.read_bytes().splitlines()) == 20_000
    assert _BARE_CR.search(shown)  # the bar was drawn (and cleared)
    assert b"20,000 lines from" in shown


# -------------------------------------------------------------- 2. output that is an input


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_output_that_is_an_input_is_refused(link: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """-o naming an input (itself, or through a symbolic or hard link): exit 2, the file named,
    the input untouched."""
    source = lines_file(tmp_path / "runs.jsonl", 50)
    before = source.read_bytes()
    target = tmp_path / "runs-out.jsonl"
    if link == "same":
        target = source
    elif link == "symlink":
        target.symlink_to(source)
    else:
        os.link(source, target)
    other = lines_file(tmp_path / "other.jsonl", 3)
    code, out, err = run(["scan", str(other), str(source), "-o", str(target)], monkeypatch)
    assert (code, out) == (2, b"")
    assert f"the output {target} is the input {source}" in err
    assert source.read_bytes() == before
    # --summary is named as itself (it was called "the output": a tester's)
    code, out, err = run(["scan", str(other), str(source), "--summary", str(target),
                          "-o", str(tmp_path / "records.jsonl")], monkeypatch)
    assert code == 2 and f"the --summary file {target} is the input {source}" in err, err
    assert source.read_bytes() == before


def test_output_that_is_standard_input_is_refused(tmp_path: Path) -> None:
    """`vthread scan -o runs.jsonl < runs.jsonl` is refused too, the input untouched."""
    source = lines_file(tmp_path / "runs.jsonl", 50)
    before = source.read_bytes()
    with source.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "vthread", "scan", "-o", str(source)],
                              stdin=stdin, capture_output=True, env=ENV, check=False,
                              timeout=120)
    assert done.returncode == 2
    assert f"the output {source} is the input standard input".encode() in done.stderr
    assert source.read_bytes() == before


@pytest.mark.parametrize("link", ["same", "spelled-otherwise", "symlink", "hardlink"])
def test_a_summary_file_that_is_the_output_file_is_refused(
        link: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o X --summary X`` wrote the summary over every record, exit 0 (found by a tester):
    now exit 2 before anything is written, an existing file untouched."""
    source = lines_file(tmp_path / "runs.jsonl", 5)
    output = tmp_path / "out.jsonl"
    output.write_bytes(EARLIER_RECORD)
    summary = {"same": output, "spelled-otherwise": tmp_path / "." / "out.jsonl",
               "symlink": tmp_path / "summary.json", "hardlink": tmp_path / "summary.json"}[link]
    if link == "symlink":
        summary.symlink_to(output)
    elif link == "hardlink":
        os.link(output, summary)
    code, out, err = run(["scan", str(source), "-q", "-o", str(output), "--summary",
                          str(summary)], monkeypatch)
    assert (code, out) == (2, b"")
    assert f"the --summary file {summary} is the --output file {output}" in err
    assert output.read_bytes() == EARLIER_RECORD
    # Apart, or both /dev/null, they are fine.
    assert run(["scan", str(source), "-q", "-o", str(output), "--summary",
                str(tmp_path / "summary-apart.json")], monkeypatch)[0] == 0
    assert run(["scan", str(source), "-q", "-o", os.devnull, "--summary", os.devnull],
               monkeypatch)[0] == 0


@pytest.mark.parametrize("summary", ["same", "/dev/stdout"])
def test_a_summary_file_that_standard_output_goes_to_is_refused(summary: str,
                                                                 tmp_path: Path) -> None:
    """``--summary out.txt > out.txt`` (no -o) wrote the summary over the records, exit 0
    (found by a reviewer): refused, status 2. Standard output to a pipe stays fine."""
    source = lines_file(tmp_path / "runs.jsonl", 5)
    out = tmp_path / "out.txt"
    named = str(out) if summary == "same" else summary
    with out.open("wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "vthread", "scan", str(source), "-q",
                               "--summary", named], stdout=stdout, stderr=subprocess.PIPE,
                              env=ENV, check=False, timeout=120)
    assert done.returncode == 2, done.stderr
    assert (f"the --summary file {named} is the file standard output goes to".encode()
            in done.stderr)
    piped = subprocess.run([sys.executable, "-m", "vthread", "scan", str(source), "-q",
                            "--summary", str(tmp_path / "apart.json")],
                           capture_output=True, env=ENV, check=False, timeout=120)
    assert piped.returncode == 0 and len(piped.stdout.splitlines()) == 5


def test_output_to_a_device_is_no_input(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """-o /dev/null is fine, whatever the input."""
    source = lines_file(tmp_path / "runs.jsonl", 5)
    assert run(["scan", str(source), "-o", os.devnull, "-q"], monkeypatch)[0] == 0


# --------------------------------------------------------------------- 3. no FILE: a pipe


def test_no_file_reads_a_pipe(tmp_path: Path) -> None:
    """`cat runs.jsonl | vthread scan` scans the pipe, and the summary says standard input."""
    source = lines_file(tmp_path / "runs.jsonl", 7)
    done = subprocess.run([sys.executable, "-m", "vthread", "scan"],
                          input=source.read_bytes(), capture_output=True, env=ENV,
                          check=False, timeout=120)
    assert done.returncode == 0
    got = records(done.stdout)
    assert [r["id"] for r in got] == list(range(7))
    assert {r["file"] for r in got} == {"<stdin>"}
    assert b"7 lines from standard input" in done.stderr


def test_no_file_and_a_terminal_scans_the_sample_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing piped in, the bundled sample, named in a note and in the summary."""
    code, out, err = run(["scan"], monkeypatch, tty_in=True)
    assert code == 0
    assert len(records(out)) == 300
    assert "standard input is a terminal: scanning the bundled sample" in err
    assert f"300 lines from the bundled sample ({SAMPLE})" in err


def test_sample_takes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--sample with a FILE is a usage error."""
    source = lines_file(tmp_path / "runs.jsonl", 1)
    code, out, err = run(["scan", "--sample", str(source)], monkeypatch)
    assert (code, out) == (2, b"")
    assert "--sample takes no FILE" in err


def test_standard_input_given_twice_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """`vthread scan - -`: standard input is read once, so the second - stood for nothing,
    silently (a new user's finding); it is a usage error naming it."""
    code, out, err = run(["scan", "-", "-"], monkeypatch)
    assert (code, out) == (2, b"")
    assert "- (standard input) is given more than once" in err


def test_summary_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary's first line names what was scanned."""
    source = lines_file(tmp_path / "runs.jsonl", 4)
    assert f"4 lines from {source} in" in run(["scan", str(source)], monkeypatch)[2]
    both = run(["scan", str(source), str(source)], monkeypatch)[2]
    assert "8 lines from 2 files in" in both


# ------------------------------------------------- 4. progress never among the records


def test_no_progress_when_records_share_the_terminal(tmp_path: Path) -> None:
    """stdout and stderr one terminal: the records and the summary only, no bar redrawn."""
    source = lines_file(tmp_path / "in.jsonl", 20_000)
    code, shown, _ = in_a_pty(["scan", str(source), "-j", "2"], stdout_too=True)
    assert code == 0
    assert _BARE_CR.search(shown) is None
    assert b"\x1b[" not in shown
    assert shown.count(b'"verdict"') == 20_000


def test_progress_when_stdout_is_a_pipe(tmp_path: Path) -> None:
    """stderr a terminal and the records piped: a bar on the terminal, the records clean."""
    source = lines_file(tmp_path / "in.jsonl", 2_000)
    code, shown, out = in_a_pty(["scan", str(source)], stdout_too=False)
    assert code == 0
    assert _BARE_CR.search(shown)
    assert len(records(out)) == 2_000 and b"\r" not in out


def test_tqdm_is_not_loaded_by_import_vthread() -> None:
    """import vthread loads neither the CLI nor tqdm."""
    code = "import sys, vthread; assert not {'vthread.cli', 'tqdm'} & set(sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], env=ENV, check=False).returncode == 0


# ------------------------------------------------------------- 5. broken gzip streams


def test_gzip_with_trailing_junk_keeps_every_record(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """100,000 good lines then junk: 100,000 records, then one error record saying where."""
    source = lines_file(tmp_path / "good.jsonl", 100_000)
    compressed = gzip.compress(source.read_bytes())
    path = tmp_path / "junk.jsonl.gz"
    path.write_bytes(compressed + b"this is not gzip\n" * 3)
    code, out, err = run(["scan", str(path)], monkeypatch)
    got = records(out)
    assert code == 0
    assert len(got) == 100_001
    assert [r["id"] for r in got[:100_000]] == list(range(100_000))
    assert all("error" not in r for r in got[:100_000])
    last = got[-1]
    assert last["file"] == str(path) and last["line"] == 100_001 and last["id"] is None
    assert last["error"] == (f"gzip stream broken at byte {len(compressed):,} of the file: "
                             f"junk after the last gzip member")
    assert "100,001 lines from" in err


def test_gzip_cut_in_the_middle_keeps_every_complete_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .gz cut mid-stream: a record for every complete line that decompresses (what zcat
    recovers), then one error record for the incomplete rest; -j 2 the same."""
    source = lines_file(tmp_path / "good.jsonl", 50_000)
    compressed = gzip.compress(source.read_bytes())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(compressed[: len(compressed) // 2])
    recoverable = zlib.decompressobj(31).decompress(path.read_bytes())
    complete = recoverable.count(b"\n")
    assert 0 < complete < 50_000
    for jobs in ("1", "2"):
        code, out, _ = run(["scan", str(path), "-q", "-j", jobs], monkeypatch)
        got = records(out)
        assert code == 0
        assert [r["id"] for r in got[:-1]] == list(range(complete))
        assert got[-1]["line"] == complete + 1
        assert "cut short" in got[-1]["error"]
        assert f"line {complete + 1} is incomplete" in got[-1]["error"]


def _decoded_before_fault(compressed: bytes) -> tuple[bytes, int]:
    """What zlib decodes of a gzip member fed one byte at a time, and the offset of the
    byte it fails at: the obvious twin of the CLI's stepped recovery."""
    decoder = zlib.decompressobj(31)
    decoded = []
    for offset in range(len(compressed)):
        try:
            decoded.append(decoder.decompress(compressed[offset : offset + 1]))
        except zlib.error:
            return b"".join(decoded), offset
    raise AssertionError("the stream decodes without a fault")


@pytest.mark.parametrize("lines", [2_000, 100_000])
@pytest.mark.parametrize("damage", ["checksum", "middle"])
def test_corrupt_gzip_keeps_every_line_decoded_before_the_fault(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: int, damage: str) -> None:
    """A member whose checksum is wrong decodes every line before its trailer, and one with a
    byte damaged midway every line before that: each gets its record (zlib drops what it
    decoded in a call that fails, so a megabyte of lines, or a small file's every line, went
    with it), then one error record at the byte zlib fails at; -j 2 the same."""
    source = lines_file(tmp_path / "good.jsonl", lines)
    compressed = bytearray(gzip.compress(source.read_bytes()))
    compressed[-5 if damage == "checksum" else len(compressed) // 2] ^= 0xFF
    path = tmp_path / "corrupt.jsonl.gz"
    path.write_bytes(bytes(compressed))
    decoded, fault = _decoded_before_fault(bytes(compressed))
    complete = decoded.count(b"\n")
    assert complete == lines if damage == "checksum" else 0 < complete < lines
    # What the complete lines decoded say, read as a plain file (a damaged byte may decode
    # into a few wrong bytes before zlib notices: those lines are read as they came out).
    plain = tmp_path / "decoded.jsonl"
    plain.write_bytes(decoded[: decoded.rindex(b"\n") + 1])
    expected = [{**r, "file": str(path)} for r in records(run(["scan", str(plain), "-q"],
                                                                monkeypatch)[1])]
    assert len(expected) == complete
    if damage == "checksum":
        assert [r["id"] for r in expected] == list(range(lines))
    for argv in (["scan", str(path), "-q"], ["scan", str(path), "-q", "-j", "2"]):
        code, out, _ = run(argv, monkeypatch)
        got = records(out)
        assert code == 0
        assert got[:complete] == expected
        errors = got[complete:]
        assert errors and all("error" in r for r in errors)
        assert errors[-1]["error"].startswith(f"gzip stream broken at byte {fault:,} of the "
                                              "file: corrupt gzip data")


def test_a_fault_right_after_a_full_read_keeps_the_match_zlib_held() -> None:
    """A read stops at READ_BYTES of output, often inside a match whose rest zlib holds; when
    the next compressed byte is the faulty one, that rest (109 bytes here, the end of two
    lines) is handed out before the break, as zlib fed a byte at a time hands it out.
    (Found by a review: two complete lines were lost and a third reported incomplete.)"""
    text = b"".join(b'{"messages": [{"type": "user", "text": "same %d"}]}\n' % (i % 50)
                    for i in range(200_000))
    damaged = bytearray(gzip.compress(text, 9, mtime=0))
    damaged[3457] ^= 8
    decoded, fault = _decoded_before_fault(bytes(damaged))
    assert len(decoded) > cli.READ_BYTES * 4  # the fault comes after whole reads
    stream = cli.GzipStream(io.BytesIO(bytes(damaged)))
    read = b"".join(iter(lambda: stream.read(cli.READ_BYTES), b""))
    assert read == decoded
    assert stream.broken is not None and stream.broken.startswith(
        f"gzip stream broken at byte {fault:,} of the file: corrupt gzip data")


REAL_GZ = (ROOT.parent / "shared" / "realdata"
           / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz")


@pytest.mark.skipif(not REAL_GZ.exists(), reason=f"real agent runs not present ({REAL_GZ})")
def test_real_gzip_cut_in_the_middle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The published mini-swe-agent runs (500 documents, one per line) cut at half their
    compressed size: every complete line that decompresses gets its record, then one error."""
    data = REAL_GZ.read_bytes()
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    complete = zlib.decompressobj(31).decompress(path.read_bytes()).count(b"\n")
    assert 0 < complete < 500
    code, out, _ = run(["scan", str(path), "-q", "-j", "2"], monkeypatch)
    got = records(out)
    assert code == 0
    assert [r["line"] for r in got] == list(range(1, complete + 2))
    assert all("error" not in r for r in got[:-1])
    assert got[-1]["error"].startswith("gzip stream broken at byte ")


@pytest.mark.parametrize("read_bytes", [1, 2, 7, 4096])
def test_gzip_stream_decompresses_every_prefix_as_zlib_does(
        read_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """GzipStream, cut anywhere and read in reads of any size, hands out exactly what zlib
    decompresses of the prefix, and reports a break exactly when the stream is incomplete."""
    monkeypatch.setattr(cli, "READ_BYTES", read_bytes)
    text = b"".join(b'{"id":%d,"messages":[]}\n' % i for i in range(300))
    first_member = gzip.compress(text[:2000])
    whole = first_member + gzip.compress(text[2000:])
    ends = {len(first_member), len(whole)}  # a cut there leaves a complete gzip file
    for cut in [*range(0, 60), *range(60, len(whole) + 1, 7), len(whole)]:
        prefix = whole[:cut]
        if not prefix:
            continue
        stream = cli.GzipStream(io.BufferedReader(io.BytesIO(prefix)))
        got = b"".join(iter(lambda s=stream: s.read(read_bytes), b""))  # type: ignore[misc]
        assert text.startswith(got), cut
        assert (stream.broken is None) == (cut in ends), (cut, stream.broken)
        first = zlib.decompressobj(31)
        expected = first.decompress(prefix)
        if first.eof and first.unused_data[:2] == b"\x1f\x8b":
            expected += zlib.decompressobj(31).decompress(first.unused_data)
        assert got == expected, cut


def test_broken_gzip_under_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--strict: the good records, then exit 2 naming the file and line, as for a bad line."""
    source = lines_file(tmp_path / "good.jsonl", 1_000)
    path = tmp_path / "junk.jsonl.gz"
    path.write_bytes(gzip.compress(source.read_bytes()) + b"junk")
    code, out, err = run(["scan", str(path), "--strict"], monkeypatch)
    assert code == 2
    assert len(records(out)) == 1_000
    assert f"{path}:1001: gzip stream broken" in err


def test_gzip_members_and_zero_padding_are_not_junk(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Concatenated members and trailing zero bytes read as gzip and zcat read them."""
    path = tmp_path / "members.jsonl.gz"
    first, second = lines_file(tmp_path / "a", 10), lines_file(tmp_path / "b", 5)
    path.write_bytes(gzip.compress(first.read_bytes()) + gzip.compress(second.read_bytes())
                     + b"\0" * 1000)
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0
    assert [r["id"] for r in got] == [*range(10), *range(5)]


# ----------------------------------------------------- 6. closed pipes and usage messages


def test_jobs_that_is_no_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """-j abc names the option, what it expects and what it got."""
    code, _, err = run(["scan", "-j", "abc"], monkeypatch)
    assert code == 2
    assert "--jobs: expected a whole number >= 1" in err and "got 'abc'" in err
    assert "invalid jobs_argument value" not in err


@pytest.mark.parametrize("value", ["1_0", "\u0662", "\u0661\u0660", "ten", "0x10"])
@pytest.mark.parametrize("option", ["--min-repetitions", "--min-pattern-length",
                                    "--max-pattern-length", "--min-result-repetitions",
                                    "--jobs"])
def test_numbers_are_written_in_ascii_digits(option: str, value: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A count written with an underscore or another script's digits, which Python's int()
    and float() take, is refused with the option and the text named (1_0 was read as 10),
    as vthread guard refuses it."""
    source = lines_file(tmp_path / "runs.jsonl", 3)
    code, out, err = run(["scan", str(source), option, value, "-q"], monkeypatch)
    assert (code, out) == (2, b"")
    assert f"{option}: expected a" in err and repr(value) in err


@pytest.mark.parametrize("option", ["--min-repetitions", "--jobs"])
def test_a_whole_number_past_what_python_reads_is_a_usage_error(
        option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole number of more digits than int() reads (4,300) is refused in the option's
    terms with the text cut short, not with a message naming a function of vthread."""
    source = lines_file(tmp_path / "runs.jsonl", 3)
    code, out, err = run(["scan", str(source), option, "9" * 5000, "-q"], monkeypatch)
    assert (code, out) == (2, b"")
    assert f"{option}: expected a whole number of at most 4300 digits" in err \
        or f"{option}: expected a number of at most 4300 digits" in err
    assert "(5,000 characters)" in err and "_argument" not in err and len(err) < 1000


@pytest.mark.parametrize("value", [" 4 ", "4.9", "-3", "1e400", "nan", "-inf",
                                   str(2**53 + 1), str(10**400)])
def test_numbers_in_ascii_are_read(value: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every number the library's options take is taken on the command line (a fraction, a
    negative, a non-finite one meaning the default, a whole number past a double's
    precision), with the library's answer."""
    pair = [{"type": "user", "text": "a"}, {"type": "bot", "text": "b"}]
    threads = [pair * copies for copies in (1, 2, 3, 4, 5)]
    source = tmp_path / "runs.jsonl"
    source.write_text("".join(json.dumps(thread) + "\n" for thread in threads))
    code, out, _ = run(["scan", str(source), "--min-repetitions", value, "-q"], monkeypatch)
    number = int(value) if value.strip().lstrip("-").isdigit() else float(value)
    want = scan(threads, min_repetitions=number).names
    assert code == 0 and [r["verdict"] for r in records(out)] == want


def test_option_before_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """vthread --formt x: an error naming the option and the likely intended one."""
    code, out, err = run(["--formt", "x"], monkeypatch)
    assert (code, out) == (2, b"")
    assert "unknown option '--formt'" in err
    assert "did you mean 'vthread scan --format'" in err


def test_no_command_says_which_there_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """vthread alone: the usage line and what to do, naming each command (the usage alone
    left a new user to guess)."""
    code, out, err = run([], monkeypatch)
    assert (code, out) == (2, b"")
    assert err.startswith("usage: vthread")
    assert all(command in err for command in ("scan", "guard", "report", "--help"))


def test_every_exit_status_is_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    """vthread scan --help and the README list each exit status."""
    code, out, _ = run(["scan", "--help"], monkeypatch)
    assert code == 0
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for status in ("0", "1", "2", "130", "141"):
        assert re.search(rf"^  {status} +\S", out.decode(), re.MULTILINE), status
        assert re.search(rf"`{status}`", readme), status


# ------------------------------------------------------- 7. files removed while being read


@pytest.mark.parametrize("tty_err", [False, True], ids=["quiet", "progress"])
@pytest.mark.parametrize("shape", ["one file", "listed files", "a directory"])
def test_a_file_removed_once_opened_is_read_to_its_end(shape: str, tty_err: bool,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A file removed (log rotation, a harness's clean-up) after the scan opened it is read
    to its end from the open file, and the scan goes on to the next: every line has its
    record and the exit status is 0 (the scan asked the removed path its size for the
    progress bar afterwards, and ended with a traceback, exit 70, the next file unread)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    inputs = [lines_file(folder / f"in{i}.jsonl", 300 + i) for i in range(1 if shape == "one file"
                                                                          else 3)]
    opened = cli.open_input

    def opened_then_removed(name: str, regular_only: bool = False) -> Any:
        stream = opened(name, regular_only)
        os.remove(name)
        return stream

    monkeypatch.setattr(cli, "open_input", opened_then_removed)
    target = tmp_path / "out.jsonl"
    named = [str(folder)] if shape == "a directory" else [str(path) for path in inputs]
    code, out, err = run(["scan", *named, "-o", str(target)], monkeypatch, tty_err=tty_err)
    assert (code, out) == (0, b""), err
    assert "Traceback" not in err
    assert len(records(target.read_bytes())) == sum(300 + i for i in range(len(inputs)))
    assert not any(path.exists() for path in inputs)  # each was removed, once opened


def test_progress_size_asks_no_file_for_standard_input(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress bar's size of a FILE argument: ``-`` is standard input even beside a
    file named ``-``; a path that cannot be looked at counts 0 rather than raising."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_bytes(b"x" * 1000)
    regular = lines_file(tmp_path / "in.jsonl", 5)
    assert cli._progress_size("-") is None
    assert cli._progress_size(str(regular)) == regular.stat().st_size
    assert cli._progress_size(str(regular) + "/") == 0
    assert cli._progress_size(str(tmp_path / "gone.jsonl")) == 0


# ------------------------------------------------- 8. a line longer than one line may take


@pytest.mark.parametrize("packing", ["plain", "gzip"])
@pytest.mark.parametrize("lines_before", [1, 3, 5000])
@pytest.mark.parametrize("newline_after", [True, False])
def test_a_files_line_longer_than_the_limit_is_an_error_record_and_the_rest_is_read(
        packing: str, lines_before: int, newline_after: bool, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's line longer than the most one line may take (by default a quarter of the
    memory) is read to its end and dropped: its record an error naming its length and the
    limit, said on stderr, and the lines after it scanned (it ended the whole scan with 71,
    every file after it unread: a tester's 600 MB file of NULs in a directory). Whether it
    comes in the first chunk (read a line at a time) or after it (read in blocks), last,
    without a final newline, or gzipped; a long line within the limit is read."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    thread = json.dumps([{"type": "user", "text": "hi"}]).encode()
    within = json.dumps([{"type": "user", "text": "w" * (2 << 20)}]).encode()
    # (a line is held to the limit as it is assembled, a read at a time: one ending in the
    # read that passes the limit, at most CHUNK_BYTES later, is read)
    beyond = json.dumps([{"type": "user", "text": "b" * (8 << 20)}]).encode()
    lines = [within] + [thread] * (lines_before - 1) + [beyond] + [thread] * newline_after
    data = b"\n".join(lines) + b"\n" * newline_after
    source = tmp_path / ("runs.jsonl.gz" if packing == "gzip" else "runs.jsonl")
    source.write_bytes(gzip.compress(data) if packing == "gzip" else data)
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(source), "-q", "--summary", str(summary)], monkeypatch)
    assert code == 0, err
    written = records(out)
    assert [r["line"] for r in written] == list(range(1, len(lines) + 1))
    dropped = lines_before + 1
    assert [r["line"] for r in written if "error" in r] == [dropped]
    assert written[dropped - 1]["error"] == (
        f"the line is {len(beyond):,} bytes, longer than 3,145,728, the most one line may "
        "take (a quarter of the memory this process may have): it was not read")
    assert f"warning: {source}:{dropped}: the line is {len(beyond):,} bytes" in err
    said = json.loads(summary.read_text())
    assert (said["completed"], said["lines"], said["errors"]) == (True, len(lines), 1)
    code, out, err = run(["scan", str(source), "-q", "--fail-on-error"], monkeypatch)
    assert code == 65, err
    code, out, err = run(["scan", str(source), "-q", "--strict"], monkeypatch)
    assert code == 2 and len(records(out)) == lines_before, err
    assert err == (f"vthread scan: {source}:{dropped}: the line is {len(beyond):,} bytes, "
                   "longer than 3,145,728, the most one line may take (a quarter of the "
                   "memory this process may have): it was not read\n")
    monkeypatch.setattr(cli, "LONGEST_LINE", 9 << 20)
    code, out, err = run(["scan", str(source), "-q"], monkeypatch)
    assert code == 0 and not any("error" in r for r in records(out)), err


@pytest.mark.parametrize("first", ["messages", "garbage", "runs"])
def test_a_files_first_line_opening_an_array_longer_than_the_limit_is_dropped(
        first: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file's first line opening an array (a bare list of messages, or junk) and longer
    than the most one line may take is dropped, an error record, and the lines and files
    after it read, as a later line is: the test of whether the file opens as a document
    read its first element to the limit and ended the whole scan with 71 (a tester's case:
    the directory's later files unread). One opening an array of arrays is a document's
    runs, whose first too long ends the scan, as a later one does (a reviewer's case: the
    one line was dropped, its runs unsaid). On standard input each still ends the scan."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    thread = json.dumps([{"type": "user", "text": "hi"}]).encode()
    opening = {"messages": json.dumps([{"type": "user", "text": "b" * (8 << 20)}]).encode(),
               "garbage": b"[" + b"x" * (8 << 20),
               "runs": json.dumps([[{"type": "user", "text": "b" * (8 << 20)}]]).encode()}
    folder = tmp_path / "runs"
    folder.mkdir()
    data = opening[first] + b"\n" + thread + b"\n"
    (folder / "a.jsonl").write_bytes(data)
    (folder / "b.jsonl").write_bytes(thread + b"\n")
    code, out, err = run(["scan", str(folder), "-q"], monkeypatch)
    if first == "runs":
        assert (code, out) == (71, b""), err
        assert f"out of memory at {folder / 'a.jsonl'}:1: it is longer than" in err
        return
    assert code == 0, err
    written = records(out)
    assert [(Path(r["file"]).name, r["line"], "error" in r) for r in written] == [
        ("a.jsonl", 1, True), ("a.jsonl", 2, False), ("b.jsonl", 1, False)]
    assert written[0]["error"].startswith(f"the line is {len(opening[first]):,} bytes")
    code, out, err = run(["scan", "-", "-q"], monkeypatch, stdin=data)
    assert (code, out) == (71, b""), err


def test_a_dropped_last_line_is_not_told_cut_short_for_the_line_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line cut inside its value, then a last line longer than the most one line may take,
    dropped: the file is not cut short, and no line is said to be (the line before the
    dropped one was told "ends inside its value: cut short", the file listed in
    ``cut_short``: a reviewer's case)."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    thread = json.dumps([{"type": "user", "text": "hi"}]).encode()
    beyond = json.dumps([{"type": "user", "text": "b" * (8 << 20)}]).encode()
    source = tmp_path / "runs.jsonl"
    source.write_bytes(thread + b"\n" + b'[{"type": "user", "text": "cu' + b"\n" + beyond)
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(source), "-q", "--summary", str(summary)], monkeypatch)
    assert code == 0, err
    assert [(r["line"], "error" in r) for r in records(out)] == [
        (1, False), (2, True), (3, True)]
    assert "cut short" not in err
    assert json.loads(summary.read_text())["cut_short"] == []


def test_jsonl_named_json_drops_a_line_longer_than_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSONL in a file named ``.json`` (read whole, then as lines) drops a line longer than
    the most one line may take as a ``.jsonl`` file does (it ended the scan with 71)."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    thread = json.dumps({"id": "t", "messages": [{"type": "user", "text": "hi"}]}).encode()
    beyond = json.dumps({"id": "b", "messages": [{"type": "user", "text": "b" * (8 << 20)}]})
    source = tmp_path / "lines.json"
    source.write_bytes(b"\n".join([thread, beyond.encode(), thread]) + b"\n")
    code, out, err = run(["scan", str(source), "-q"], monkeypatch)
    assert code == 0, err
    assert [(r["line"], "error" in r) for r in records(out)] == [
        (1, False), (2, True), (3, False)]


def test_a_gzip_stream_broken_inside_a_line_longer_than_the_limit_is_one_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip stream that breaks off inside a line longer than the most one line may take:
    one error record, the stream's, for that incomplete line, as for a shorter one (the
    line was also dropped as if whole, its length what had come: two records for one)."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    thread = json.dumps([{"type": "user", "text": "hi"}]).encode()
    beyond = json.dumps([{"type": "user", "text": os.urandom(6 << 20).hex()}]).encode()
    packed = gzip.compress(b"\n".join([thread, thread, beyond, thread]) + b"\n")
    source = tmp_path / "cut.jsonl.gz"
    source.write_bytes(packed[:int(len(packed) * 0.6)])
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(source), "-q", "--summary", str(summary)], monkeypatch)
    assert code == 0, err
    written = records(out)
    assert [(r["line"], "error" in r) for r in written] == [(1, False), (2, False), (3, True)]
    assert "gzip stream" in written[2]["error"] and "line 3 is incomplete" in written[2]["error"]
    assert json.loads(summary.read_text())["lines"] == 3


def test_a_streams_line_longer_than_the_limit_ends_the_scan_after_the_lines_before_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On standard input, which may never end, a line longer than the most one line may take
    ends the scan as a line the memory ran out on does: the records of the lines before it
    written, exit 71, the message naming where and the limit."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    thread = json.dumps([{"type": "user", "text": "hi"}]).encode()
    beyond = json.dumps([{"type": "user", "text": "b" * (4 << 20)}]).encode()
    code, out, err = run(["scan", "-", "-q"], monkeypatch,
                         stdin=b"\n".join([thread, thread, thread, beyond, thread]) + b"\n")
    assert code == 71, err
    assert [r["line"] for r in records(out)] == [1, 2, 3]
    assert "out of memory at <stdin>:4: it is longer than 3,145,728 bytes" in err


def _memory_capped() -> None:
    """(in a child process) An address space of 2 GiB: a regression that held a line without
    end fails its test with a MemoryError, not by taking the machine's memory."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize(("source", "named"), [
    ("/dev/zero", "/dev/zero:1"),
    ("document", "z.json: run 1"),
    ("document on standard input", "<stdin>:1"),
    ("first run without end", "<stdin>:1"),
])
def test_a_line_that_never_ends_is_not_held_without_end(source: str, named: str,
                                                        tmp_path: Path) -> None:
    """``vthread scan /dev/zero`` (a line with no end), a document named ``.json`` that is
    /dev/zero, and documents on standard input whose first run never ends, stop at the most
    one line may take, exit 71, rather than growing until the kernel kills them."""
    where = "/dev/zero"
    stdin: Any = subprocess.DEVNULL
    feeder = None
    if source == "document":
        where = str(tmp_path / "z.json")
        os.symlink("/dev/zero", where)
    elif source != "/dev/zero":
        where = "-"
        opening = (b'[[{"type": "user", "text": "' if source == "document on standard input"
                   else b"[\n")
        filler = b"a" if source == "document on standard input" else b"\n"
        feeder = subprocess.Popen(
            [sys.executable, "-c", f"import sys; sys.stdout.buffer.write({opening!r})\n"
             f"while True: sys.stdout.buffer.write({filler!r} * 65536)"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        stdin = feeder.stdout
    code = ("import sys, vthread.cli as cli; cli.LONGEST_LINE = 32 << 20; "
            f"sys.exit(cli.main(['scan', {where!r}, '-q']))")
    try:
        result = subprocess.run([sys.executable, "-c", code], stdin=stdin, capture_output=True,
                                env=ENV, timeout=120, preexec_fn=_memory_capped)
    finally:
        if feeder is not None:
            feeder.kill()
            feeder.wait()
    assert result.returncode == 71, result.stderr
    assert f"{named}: it is longer than 33,554,432 bytes".encode() in result.stderr


@pytest.mark.parametrize("packing", ["plain", "gzip"])
def test_a_documents_run_longer_than_the_limit_ends_the_scan_after_the_runs_before_it(
        packing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A document's run longer than the most one line may take ends the scan as such a JSONL
    line does: the records of the runs before it, exit 71, the message naming the run; a
    document read whole (one run, not an array of runs) longer than it too when read from
    a stream, while a file read whole is as large as it is."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    small = [{"type": "user", "text": "hi"}]
    large = [{"type": "user", "text": "b" * (4 << 20)}]
    data = json.dumps([small, small, large, small]).encode()
    source = tmp_path / ("runs.json.gz" if packing == "gzip" else "runs.json")
    source.write_bytes(gzip.compress(data) if packing == "gzip" else data)
    code, out, err = run(["scan", str(source), "-q"], monkeypatch)
    assert code == 71, err
    assert [r["line"] for r in records(out)] == [1, 2]
    assert f"out of memory at {source}: run 3: it is longer than 3,145,728 bytes" in err
    whole = tmp_path / "one.json"
    whole.write_text(json.dumps({"id": "r", "messages": large}))
    code, out, err = run(["scan", str(whole), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 1, err
    code, out, err = run(["scan", "-", "-q"], monkeypatch, stdin=whole.read_bytes())
    assert (code, out) == (71, b""), err
    assert "out of memory at <stdin>:1: it is longer than 3,145,728 bytes" in err
    monkeypatch.setattr(cli, "LONGEST_LINE", 5 << 20)
    code, out, err = run(["scan", str(source), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 4, err


def test_the_memory_limit_is_the_machines_or_lower() -> None:
    """The memory a line's limit is a quarter of: positive, and at most the machine's."""
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0 < cli.memory_limit() <= machine
    assert cli.line_limit() == cli.memory_limit() // 4


@pytest.mark.parametrize("limit", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_the_memory_limit_is_the_processs_own_when_lower(limit: str) -> None:
    """Under ``ulimit -v`` (or ``-d``) the memory a line's limit is a quarter of is the
    process's own limit (a tester's 2 GB line of spaces under a 4 GB ``ulimit -v`` ended the
    scan out of memory: the line limit was a quarter of the machine's 24 GB)."""
    import resource

    cap = min(1 << 30, cli.memory_limit() - 1)  # (lower than the machine's and container's)

    def limited() -> None:
        which = getattr(resource, limit)
        resource.setrlimit(which, (cap, resource.getrlimit(which)[1]))

    code = "import vthread.cli as cli; print(cli.memory_limit(), cli.line_limit())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, preexec_fn=limited, timeout=60, check=True)
    assert [int(part) for part in done.stdout.split()] == [cap, cap // 4]


def test_a_line_too_long_to_parse_again_is_not_parsed_to_say_what_it_lacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first line in no format is parsed again to say what its messages lack, unless it
    is longer than the bytes format detection reads (a 30 MB line of ten million ``{}`` took
    13 s more, and under ``ulimit -v`` ran out of memory there, a SystemError); nor does a
    MemoryError there end the scan otherwise than the error it explains."""
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps([{"role": "user", "content": "x"},
                                 {"type": "user", "text": "y"}]) + "\n")
    told = "line 1: cannot tell the message format (messages[0] has a \"role\""
    code, _, err = run(["scan", str(mixed), "-q"], monkeypatch)
    assert code == 2 and told in err, err
    monkeypatch.setattr(cli, "DETECT_BYTES", 8)
    code, _, err = run(["scan", str(mixed), "-q"], monkeypatch)
    assert code == 2 and "line 1: cannot tell the message format; expected" in err, err
    monkeypatch.undo()

    def short_of_memory(line: bytes, suspect: bool = True) -> Any:
        raise MemoryError

    monkeypatch.setattr(cli, "_parse", short_of_memory)
    code, _, err = run(["scan", str(mixed), "-q"], monkeypatch)
    assert code == 2 and "line 1: cannot tell the message format; expected" in err, err


# ------------------------------------------------------- 9. what a mistyped argument says


@pytest.mark.parametrize(("args", "said"), [
    (["scan", ""], "an empty FILE argument names no file"),
    (["scan", "IN", "-o", ""], "-o: an empty path names no file (- is standard output)"),
    (["scan", "IN", "--summary", ""], "--summary: an empty path names no file"),
    (["report", ""], "an empty FILE argument names no file"),
    (["report", "IN", "-o", ""], "-o: an empty path names no file (- is standard output)"),
])
def test_an_empty_path_is_a_usage_error(args: list[str], said: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty path (an unset variable in a script: ``-o "$OUT"``) names no file: a usage
    error saying so, nothing written (``-o ''`` wrote the records to standard output and
    ``--summary ''`` no summary, exit 0; ``scan ''`` said the working directory held no
    trajectory file)."""
    source = lines_file(tmp_path / "in.jsonl", 3)
    argv = [str(source) if arg == "IN" else arg for arg in args]
    if args[0] == "report" and "-o" not in args:
        argv += ["-o", str(tmp_path / "r.html")]
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv, monkeypatch)
    assert (code, out) == (2, b""), err
    assert said in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_link_cycle_is_named_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FILE that is a cycle of symbolic links is said to be one, not a missing file."""
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    for command in (["scan"], ["report", "-o", str(tmp_path / "r.html")]):
        code, _, err = run([*command, str(tmp_path / "a.jsonl")], monkeypatch)
        assert code == 2
        assert "a.jsonl: too many levels of symbolic links" in err, err
    code, _, err = run(["scan", str(tmp_path / "gone.jsonl")], monkeypatch)
    assert code == 2 and "gone.jsonl: no such file" in err


def test_an_output_that_is_a_directorys_only_trajectory_is_refused_as_such(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o`` naming the only trajectory under the input directory is refused for what it
    is (writing it would destroy it), not said to leave the directory with no trajectory
    file; the file is as it was."""
    only = lines_file(tmp_path / "a.jsonl", 3)
    before = only.read_bytes()
    code, _, err = run(["scan", str(tmp_path), "-o", str(only)], monkeypatch)
    assert code == 2
    assert "holds neither records nor a summary" in err and "would destroy it" in err
    assert only.read_bytes() == before


def test_an_eval_log_missing_a_member_says_which(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A zip archive named .eval that holds no Inspect log is said to miss the member the
    log needs (the message was inspect_ai's bare KeyError: the member's name alone)."""
    import zipfile

    pytest.importorskip("inspect_ai")
    log = tmp_path / "run.eval"
    with zipfile.ZipFile(log, "w") as archive:
        archive.writestr("notes.txt", "hi")
    code, _, err = run(["scan", str(log)], monkeypatch)
    assert code == 2
    assert "cannot read the Inspect AI log: it has no member '" in err, err
    assert "which an .eval log holds" in err


def test_control_characters_of_a_name_reach_stderr_as_escapes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file name holding a terminal's escape sequence or a carriage return is said on
    stderr with those characters escaped (they reached the terminal as commands: recolouring
    it, rewriting the line said), while its records name the file exactly."""
    name = "x\x1b[31mred\rback\x07.jsonl"
    (tmp_path / name).write_bytes(b"{bad\n")
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert code == 0
    assert [Path(r["file"]).name for r in records(out)] == [name]
    assert not any(c in err for c in "\x1b\r\x07")
    assert "x\\x1b[31mred\\x0dback\\x07.jsonl: warning:" in err


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_line_of_a_byte_order_mark_alone_is_blank(jobs: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A line holding only a byte-order mark (and whitespace) is a blank line, as the same
    line without the mark is: the mark is passed over where it opens a line, as it is before
    a run (it was "not valid JSON: Expecting value")."""
    thread = json.dumps({"id": 1, "messages": []}).encode()
    mark = codecs.BOM_UTF8
    source = tmp_path / "runs.jsonl"
    source.write_bytes(b"\n".join([mark, mark + thread, mark + b" \t", thread, b""]))
    code, out, _ = run(["scan", str(source), "-q", "-j", jobs], monkeypatch)
    assert code == 0
    assert [r.get("error", r.get("messages")) for r in records(out)] == [
        "blank line", 0, "blank line", 0]
    alone = tmp_path / "mark.jsonl"
    alone.write_bytes(mark)
    code, out, _ = run(["scan", str(alone), "-q"], monkeypatch)
    assert records(out) == [{"id": None, "file": str(alone), "line": 1, "error": "blank line"}]


def test_report_and_guard_write_control_characters_of_a_name_as_escapes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``vthread report``'s own messages and ``vthread guard``'s escape a name's control
    characters as ``vthread scan``'s do (they wrote them raw)."""
    name = "x\x1b[31mred\r.jsonl"
    records_file = tmp_path / name
    records_file.write_bytes(b'{"id":"z","file":"a","line":1,"verdict":null}\n{"id":')
    code, _, err = run(["report", str(records_file), "-o", str(tmp_path / "r.html")],
                       monkeypatch)
    assert code == 0
    assert "x\\x1b[31mred\\x0d.jsonl:2: the last line is cut short" in err
    assert not any(c in err for c in "\x1b\r")
    code, _, err = run(["guard", str(tmp_path / ("gone" + name))], monkeypatch)
    assert code == 2
    assert "gonex\\x1b[31mred\\x0d.jsonl" in err
    assert not any(c in err for c in "\x1b\r")


def test_a_newline_in_a_name_is_escaped_so_each_message_stays_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file or directory named with a newline is said as ``\\x0a`` in every message of
    scan (its warnings, its summary's first line and format row), report (its own messages
    and the scan's it passes on) and guard: the newline split one message into two lines,
    the second not starting with the command's name. Its records name it exactly."""
    folder = tmp_path / "runs\ndir"
    folder.mkdir()
    name = "first\nsec\u202eond.jsonl"  # and a right-to-left override, which reorders
    (folder / name).write_bytes(b"{bad\n")
    (folder / "chat.jsonl").write_text(json.dumps([{"role": "user", "content": "hi"}]) + "\n")
    escaped = str(folder / name).replace("\n", "\\x0a").replace("\u202e", "\\u202e")

    def one_line_each(err: str) -> list[str]:
        said = err.splitlines()
        assert said and all(line.startswith(("vthread ", "  ")) for line in said), err
        return said

    code, out, err = run(["scan", str(folder / name), str(folder)], monkeypatch)
    assert code == 0 and [r["file"] for r in records(out)][:1] == [str(folder / name)]
    said = one_line_each(err)
    assert f"vthread scan: {escaped}: warning:" in err
    assert any("runs\\x0adir/chat.jsonl" in line and "format" in line for line in said), err
    code, out, err = run(["scan", str(folder / name)], monkeypatch)
    assert any(line.startswith(f"vthread scan: 1 line from {escaped} in ")
               for line in one_line_each(err)), err
    code, _, err = run(["report", str(folder / name), "-o", str(tmp_path / "r.html")],
                       monkeypatch)
    assert code == 0 and f"vthread report: {escaped}: warning:" in one_line_each(err)[0]
    code, _, err = run(["guard", str(folder)], monkeypatch)
    folder_escaped = str(folder).replace("\n", "\\x0a")
    assert code == 2
    assert one_line_each(err) == [f"vthread guard: error: {folder_escaped} is a directory"]


def test_a_document_file_read_whole_is_not_held_to_the_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A document file read whole holds many runs (JSONL named .json, runs one after
    another as jq writes them): its size is its own, so it is scanned whatever the limit
    of one line (a reviewer's find: such files were refused once larger than the limit,
    the message naming a "run 1" of 220 bytes). A stream's is held to it."""
    monkeypatch.setattr(cli, "LONGEST_LINE", 2 << 20)
    run_ = {"id": "r", "messages": [{"type": "user", "text": "hi"},
                                    {"type": "bot", "text": "x"}] * 3}
    runs = [{**run_, "id": f"r{i}"} for i in range(12_000)]
    jsonl = tmp_path / "jsonl.json"
    jsonl.write_text("".join(json.dumps(run) + "\n" for run in runs))
    pretty = tmp_path / "pretty.json"
    pretty.write_text("\n".join(json.dumps(run, indent=1) for run in runs))
    assert jsonl.stat().st_size > 2 << 20 and pretty.stat().st_size > 2 << 20
    for source in (jsonl, pretty):
        code, out, err = run(["scan", str(source), "-q"], monkeypatch)
        assert code == 0, err
        assert len(records(out)) == 12_000
    code, out, err = run(["scan", "-", "-q"], monkeypatch, stdin=pretty.read_bytes())
    assert code == 71 and "<stdin>:1: it is longer than 2,097,152 bytes" in err


def test_a_small_document_is_read_under_a_small_address_space(tmp_path: Path) -> None:
    """A document read whole asks for no more memory than it holds (asking to read up to the
    limit made CPython reserve a quarter of the memory first: a MemoryError, exit 71, for a
    document of 200 bytes under ``ulimit -v``)."""
    source = tmp_path / "one.json"
    source.write_text(json.dumps({"id": "r", "messages": [{"type": "user", "text": "hi"},
                                                          {"type": "bot", "text": "x"}] * 3}))
    code = f"import sys, vthread.cli as cli; sys.exit(cli.main(['scan', {str(source)!r}, '-q']))"

    def capped() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, env=ENV,
                            timeout=120, preexec_fn=capped)
    assert result.returncode == 0, result.stderr
    assert [r["verdict"] for r in records(result.stdout)] == ["repeated_suffix"]


def test_an_early_summary_never_overwrites_standard_input_or_the_sample(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--summary`` naming the file standard input is redirected from (``< x.jsonl``, or
    ``/dev/stdin``), or the sample ``--sample`` scans, is refused and the input left as it
    was: the refusal's early summary was written over it (the runs were lost). ``vthread
    report - -o x.jsonl < x.jsonl`` is refused too (it wrote its page over the runs)."""
    source = ROOT / "vthread" / "samples" / "threads.jsonl"
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(b"".join(source.read_bytes().splitlines(keepends=True)[:3]))
    given = runs.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for target in (str(runs), "/dev/stdin"):
        with runs.open("rb") as stdin:
            done = subprocess.run([sys.executable, "-m", "vthread", "scan", "--summary", target],
                                  stdin=stdin, capture_output=True, env=env, timeout=120,
                                  check=False)
        assert done.returncode == 2 and b"is the input standard input" in done.stderr
        assert runs.read_bytes() == given
    with runs.open("rb") as stdin:  # the report's output the file its "-" comes from
        done = subprocess.run([sys.executable, "-m", "vthread", "report", "-", "-o", str(runs)],
                              stdin=stdin, capture_output=True, env=env, timeout=120,
                              check=False)
    assert done.returncode == 2 and b"is the input standard input" in done.stderr
    assert runs.read_bytes() == given
    sample = tmp_path / "sample.jsonl"
    sample.write_bytes(given)
    monkeypatch.setattr(cli, "SAMPLE", sample)
    code, _, err = run(["scan", "--sample", "--summary", str(sample)], monkeypatch)
    assert code == 2 and "destroy the input" in err and sample.read_bytes() == given


def test_no_file_and_no_standard_input_is_an_error_not_the_sample(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``vthread scan`` with no FILE and standard input closed (a cron job, a daemon) is a
    usage error: it scanned the bundled sample and passed its records (and, with
    ``--fail-on-loop``, its loops' exit status) off as the job's."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["sh", "-c", f"exec {sys.executable} -m vthread scan "
                           "--fail-on-loop <&-"], capture_output=True, env=env, timeout=120,
                          check=False)
    assert (done.returncode, done.stdout) == (2, b"")
    assert b"no FILE and there is no standard input (it is closed)" in done.stderr


def test_a_directory_that_cannot_be_listed_is_an_error_and_links_are_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A subdirectory the scan cannot list is left out, said, and fails --fail-on-error, as
    a file under it that cannot be read would (its files were passed over in silence, exit
    status 0; then it stopped the whole scan with 2, its siblings' runs unread: a
    root-owned lost+found at a mount's root); the directory named itself, unlisted, is an
    error. A link to a directory, which is not followed, is said on stderr and listed in
    --summary's "left_out", as a FIFO is."""
    top = tmp_path / "runs"
    (top / "sub").mkdir(parents=True)
    lines_file(top / "a.jsonl", 2)
    lines_file(top / "sub" / "b.jsonl", 2)
    real_walk = os.walk

    def walk_denied(name: Any, onerror: Any = None, **keywords: Any) -> Any:
        for root, directories, files in real_walk(name, **keywords):
            if root.endswith("sub"):  # (as root, which may list anything, a refusal is made)
                assert onerror is not None, "a directory that cannot be listed is ignored"
                onerror(PermissionError(13, "Permission denied", root))
                return
            yield root, directories, files

    monkeypatch.setattr(os, "walk", walk_denied)
    code, out, err = run(["scan", str(top), "-q"], monkeypatch)
    assert code == 0 and [r["file"] for r in records(out)] == [str(top / "a.jsonl")] * 2
    assert err == (f"vthread scan: {top / 'sub'}: left out: a directory that cannot be "
                   "listed: Permission denied; the files under it are not read\n")
    code, out, err = run(["scan", str(top), "-q", "--fail-on-error"], monkeypatch)
    assert code == 65 and len(records(out)) == 2
    assert "--fail-on-error: 1 path was left out unread (said above)" in err
    code, out, err = run(["scan", str(top / "sub")], monkeypatch)
    assert (code, out) == (2, b"")
    assert err == f"vthread scan: {top / 'sub'}: cannot be listed: Permission denied\n"

    def walk_removed(name: Any, onerror: Any = None, **keywords: Any) -> Any:
        for root, directories, files in real_walk(name, **keywords):
            if root.endswith("sub"):  # removed by a harness's clean-up while listed
                onerror(FileNotFoundError(2, "No such file or directory", root))
                continue
            yield root, directories, files

    monkeypatch.setattr(os, "walk", walk_removed)
    code, out, err = run(["scan", str(top), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 2
    assert err == f"vthread scan: {top / 'sub'}: left out: removed while the directory was listed\n"
    monkeypatch.undo()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lines_file(elsewhere / "c.jsonl", 1)
    (top / "linked").symlink_to(elsewhere, target_is_directory=True)
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(top), "-q", "--summary", str(summary)], monkeypatch)
    why = "a link to a directory, not followed (name the directory itself to scan it)"
    assert code == 0 and len(records(out)) == 4
    assert f"vthread scan: {top / 'linked'}: left out: {why}" in err
    assert json.loads(summary.read_text())["left_out"] == [
        {"file": str(top / "linked"), "why": why}]


def test_a_fifo_output_without_a_reader_is_an_error_not_a_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o FIFO`` or ``--summary FIFO`` that no process reads is refused at once (status
    74, saying so), where the scan waited in ``open`` for ever, deaf to SIGTERM and Ctrl-C;
    with a reader waiting, the records and the summary reach it, plain or gzip."""
    import threading

    source = lines_file(tmp_path / "runs.jsonl", 3)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)

    with ends_within(30, "a FIFO's reader"):  # (a regression would hang the run)
        code, out, err = run(["scan", str(source), "-q", "-o", str(fifo)], monkeypatch)
        assert (code, out) == (74, b"")
        assert err == f"vthread scan: cannot write {fifo}: it is a FIFO no process reads\n"
        code, out, err = run(["scan", str(source), "-q", "--summary", str(fifo)], monkeypatch)
        assert code == 74 and len(records(out)) == 3
        assert err == f"vthread scan: cannot write {fifo}: it is a FIFO no process reads\n"
    gzipped = tmp_path / "out.jsonl.gz"
    gzipped.symlink_to(fifo)
    for flag, target in (("-o", fifo), ("--summary", fifo), ("-o", gzipped)):
        received: list[bytes] = []
        reader = threading.Thread(
            target=lambda into=received: into.append(fifo.read_bytes()), daemon=True)
        reader.start()
        time.sleep(0.3)  # the reader waiting in its open
        code, out, _ = run(["scan", str(source), "-q", flag, str(target)], monkeypatch)
        reader.join(30)
        assert code == 0 and received
        if target == gzipped:
            assert len(records(gzip.decompress(received[0]))) == 3
        elif flag == "-o":
            assert len(records(received[0])) == 3
        else:
            assert json.loads(received[0])["threads"] == 3 and len(records(out)) == 3


def test_workers_that_cannot_start_leave_the_scan_to_this_process(tmp_path: Path) -> None:
    """``--jobs 2`` where the worker processes cannot start (no file descriptors left under
    ``ulimit -n``) scans in its own process, saying so, with the records of ``--jobs 1``:
    it was an internal error (exit 70), then a wait at exit for the worker that had
    started, for ever. Lines only Python reads (NaN) take the worker processes' path."""
    import resource

    source = tmp_path / "nan.jsonl"
    line = b'[{"type":"bot","text":"x","meta":{"v":NaN}},{"type":"user","text":"y"}]\n'
    source.write_bytes(line * 20_000)
    one = subprocess.run([sys.executable, "-m", "vthread", "scan", str(source), "-q", "-j1"],
                         capture_output=True, env=ENV, timeout=120, check=True)

    warned = 0
    for limit in (10, 12, 14):  # the pool's queues, then its first or second worker, fail
        done = subprocess.run(
            [sys.executable, "-m", "vthread", "scan", str(source), "-q", "-j2"],
            capture_output=True, env=ENV, timeout=120, check=False,
            preexec_fn=lambda limit=limit: resource.setrlimit(resource.RLIMIT_NOFILE,
                                                               (limit, limit)))
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout == one.stdout
        said = done.stderr.decode()
        assert said in ("", "vthread scan: warning: worker processes could not start (Too "
                        "many open files); scanning in this process\n")
        warned += bool(said)
    assert warned  # (one limit at least is below what the pool needs)


@pytest.mark.parametrize("dies_at", [2, 5])
def test_a_worker_that_dies_leaves_its_chunks_to_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dies_at: int) -> None:
    """``--jobs 2`` where a worker process dies (the kernel's OOM killer, a ``kill -9``):
    its chunks, every chunk the pool had not answered, and the rest are scanned in this
    process, with a warning, the records those of ``--jobs 1`` and the summary complete (a
    tester's kill was an internal error, exit 70, a traceback, the records cut short and no
    summary). Lines only Python reads (NaN) take the worker processes' path."""
    source = tmp_path / "nan.jsonl"
    source.write_bytes(b"".join(
        b'[{"type":"bot","text":"x%d","meta":{"v":NaN}},{"type":"user","text":"y"}]\n' % i
        for i in range(60)))
    monkeypatch.setattr(cli, "CHUNK_LINES", 6)
    code, one, _ = run(["scan", str(source), "-q", "-j1"], monkeypatch)
    assert code == 0 and len(records(one)) == 60
    parent = os.getpid()
    real = cli._scan_chunk

    def dying(task: Any) -> Any:
        if os.getpid() != parent and task.first_line == 1 + 6 * (dies_at - 1):
            os._exit(9)  # (as a kill: no answer, no clean-up)
        return real(task)

    # (handed to the forked workers by name, as the pool pickles the function it runs)
    dying.__module__, dying.__qualname__ = real.__module__, real.__qualname__
    monkeypatch.setattr(cli, "_scan_chunk", dying)
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(source), "-q", "-j2", "--summary", str(summary)],
                         monkeypatch)
    assert (code, out) == (0, one)
    assert err == ("vthread scan: warning: a worker process ended without answering (killed "
                   "for memory or by a signal); its chunks and the rest are scanned in this "
                   "process\n")
    written = json.loads(summary.read_text())
    assert written["completed"] is True and written["lines"] == 60

@pytest.mark.parametrize("replaced_after", ["_files_under", "_without_records"])
@pytest.mark.parametrize("becomes", ["a FIFO", "nothing"])
@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".eval"])
def test_a_directory_file_replaced_after_listing_is_an_error_record_not_a_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replaced_after: str, becomes: str,
        suffix: str) -> None:
    """A file of a scanned directory that becomes a FIFO, or is removed, after the directory
    was listed (after the walk, or after the screen for earlier records) is an error record
    naming it, and the other files are read: the scan waited in ``open`` for a writer for
    ever (in pyarrow or inspect_ai for a .parquet or .eval file, deaf to SIGTERM), and a
    file removed ended the whole scan, no record written (found by testers)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("a", "c"):
        lines_file(folder / f"{name}.jsonl", 2)
    replaced = folder / f"b{suffix}"
    lines_file(replaced, 2)  # (listed by its name; what it holds is never read)
    real = getattr(cli, replaced_after)

    def then_replaced(*args: Any, **keywords: Any) -> Any:
        found = real(*args, **keywords)
        replaced.unlink()
        if becomes == "a FIFO":
            os.mkfifo(replaced)
        return found

    monkeypatch.setattr(cli, replaced_after, then_replaced)

    with ends_within(30, "a FIFO's writer"):  # (a regression would hang the run)
        code, out, err = run(["scan", str(folder), "-q"], monkeypatch)
    assert code == 0, err
    written = records(out)
    assert [(Path(r["file"]).name, r["line"]) for r in written] == [
        ("a.jsonl", 1), ("a.jsonl", 2), (replaced.name, 1), ("c.jsonl", 1), ("c.jsonl", 2)]
    why = "not a regular file" if becomes == "a FIFO" else "No such file or directory"
    assert why in written[2]["error"]
    assert f"{replaced}: " in err and why in err


@pytest.mark.parametrize("suffix", [".parquet", ".eval"])
def test_a_fifo_named_as_a_parquet_file_or_an_eval_log_is_refused_not_waited_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """A FIFO named ``X.parquet`` or ``X.eval`` (read from their end, by libraries that open
    them by name) is refused at once, saying why (status 2; beside other inputs, its error
    record): the scan waited in pyarrow's or inspect_ai's open for ever, deaf to SIGTERM."""
    fifo = tmp_path / f"runs{suffix}"
    os.mkfifo(fifo)
    other = lines_file(tmp_path / "other.jsonl", 2)

    with ends_within(30, "a FIFO's writer"):  # (a regression would hang the run)
        code, out, err = run(["scan", str(fifo), "-q"], monkeypatch)
        assert (code, out) == (2, b"")
        assert err.startswith(f"vthread scan: {fifo}: cannot read: not a regular file: ")
        assert "must be a regular file, not a FIFO" in err
        code, out, err = run(["scan", str(fifo), str(other), "-q"], monkeypatch)
    assert code == 0
    written = records(out)
    assert [r["line"] for r in written] == [1, 1, 2]
    assert written[0]["error"].startswith("cannot read: not a regular file")


def test_a_token_figure_counts_as_the_double_javascript_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An integer ``usage.tokens`` past 2**53 counts as the double ``JSON.parse`` makes of it
    (``10**30`` as ``1e30``, ``2**53 + 1`` as ``2**53``), in ``loop_tokens`` from objects, from
    the file and looking anywhere, as ``build_thread`` counts it (both were left out: no
    double holds them exactly); one past the largest double is JavaScript's Infinity and
    counts nowhere. The summary of such a file is said (a 400-digit figure ended the scan
    with OverflowError)."""
    from vthread import build_thread

    figures = [10**30, 1e30, 2**53 + 1, 2**53, 10**400, 7]
    lines = []
    for figure in figures:
        thread = [{"type": "a", "text": "x", "usage": {"tokens": figure}},
                  {"type": "b", "text": "y"}] * 3
        lines.append(json.dumps(thread))
    source = tmp_path / "tokens.jsonl"
    source.write_text("\n".join(lines) + "\n")
    counted = [math.fsum([1e30] * 3)] * 2 + [3 * 2.0**53] * 2 + [None, 21.0]
    threads = [json.loads(line) for line in lines]
    for result in (scan(threads), scan(threads, anywhere=True)):
        assert [None if f != f else f for f in result.loop_tokens.tolist()] == counted
    code, out, err = run(["scan", str(source)], monkeypatch)
    assert code == 0 and [r["loop_tokens"] for r in records(out)] == counted
    assert re.search(r"wasted tokens +6.000e\+30 .*\(1 loop with no countable", err), err
    code, out, _ = run(["scan", str(source), "--anywhere", "-q"], monkeypatch)
    assert code == 0 and [r["loop_tokens"] for r in records(out)] == counted
    built = [build_thread(thread[:1], max_tokens=math.inf, estimate=lambda m: 0.0).tokens
             for thread in threads]
    assert built == [1e30, 1e30, 2.0**53, 2.0**53, 0.0, 7.0]


def test_fail_on_error_fails_a_gate_that_checked_nothing_or_met_a_bad_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--fail-on-error exits 65 when any record is an error or no thread was scanned, after
    writing every record; a loop with --fail-on-loop is still 1. Without it such a run exits
    0, as before, and a run that scanned no thread says so on stderr, -q or not: a CI gate
    reading the exit status alone passed having checked nothing."""
    good = lines_file(tmp_path / "good.jsonl", 3)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(good.read_bytes() + b'{"id": 9, "messages": [\n')
    runs_elsewhere = tmp_path / "elsewhere.jsonl"
    runs_elsewhere.write_text('{"id": 1, "turns": [{"type": "bot", "text": "x"}]}\n' * 2)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    looping = tmp_path / "loop.jsonl"
    looping.write_text(json.dumps({"id": 1, "messages": [{"type": "bot", "text": "x"}] * 4})
                       + "\n{\n")
    for path, plain, failing, written, nothing in (
            (good, 0, 0, 3, False), (bad, 0, 65, 4, False), (runs_elsewhere, 0, 65, 2, True),
            (empty, 0, 65, 0, True)):
        for quiet in ([], ["-q"]):
            code, out, err = run(["scan", str(path), *quiet], monkeypatch)
            assert code == plain and len(records(out)) == written, path
            assert ("no thread was scanned" in err) is nothing, (path, err)
            code, out, err = run(["scan", str(path), "--fail-on-error", *quiet], monkeypatch)
            assert code == failing and len(records(out)) == written, path
    # A loop found does not hide a record that is an error: 65 comes before 1.
    assert run(["scan", str(looping), "--fail-on-error", "--fail-on-loop"], monkeypatch)[0] == 65
    assert run(["scan", str(looping), "--fail-on-loop"], monkeypatch)[0] == 1
    assert run(["scan", str(looping), "--fail-on-error"], monkeypatch)[0] == 65
    looping_only = tmp_path / "loop_only.jsonl"
    looping_only.write_text(looping.read_text().splitlines()[0] + "\n")
    assert run(["scan", str(looping_only), "--fail-on-error", "--fail-on-loop"],
               monkeypatch)[0] == 1
    code, _, err = run(["scan", "--fail-on-error"], monkeypatch, stdin=b"")
    assert code == 65 and "no thread was scanned: the input held none" in err


def test_a_key_option_swallowing_the_file_is_caught(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no FILE, a key option whose value names a file (``--id-key runs.json``, the key
    forgotten) is a usage error at a terminal, where the bundled sample was scanned in its
    place, and a warning when standard input is read (a CI job's /dev/null)."""
    runs = lines_file(tmp_path / "runs.jsonl", 2)
    monkeypatch.chdir(tmp_path)
    for flag in ("--id-key", "--messages-key"):
        code, out, err = run(["scan", flag, runs.name], monkeypatch, tty_in=True)
        assert code == 2 and out == b""
        assert f"no FILE given, and {flag} {runs.name} names a file" in err
        code, out, err = run(["scan", flag, runs.name], monkeypatch, stdin=b"")
        assert code == 0 and f"names a file: give the key first, then the FILE ({flag} KEY " \
            f"{runs.name}); reading standard input" in err
    code, out, _ = run(["scan", "--id-key", "id", runs.name], monkeypatch)
    assert code == 0 and [r["id"] for r in records(out)] == [0, 1]
    # A directory, or a file not named as inputs are, may share a key's name.
    (tmp_path / "messages").mkdir()
    (tmp_path / "id").write_text("")
    for flag, key in (("--messages-key", "messages"), ("--id-key", "id")):
        code, _, err = run(["scan", flag, key], monkeypatch, stdin=runs.read_bytes())
        assert code == 0 and "names a file" not in err


def test_an_unreadable_file_among_several_named_is_its_own_error_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Of several inputs named (a shell glob), one there but not readable is an error record
    and the others are read, as for the files of a directory: the scan was refused whole
    (status 2, no record). Named alone it still ends the scan, and so does one not there (a
    typo) among several, before any output."""
    first, second = lines_file(tmp_path / "a.jsonl", 2), lines_file(tmp_path / "c.jsonl", 1)
    locked = lines_file(tmp_path / "b.jsonl", 1)
    real_open, real_access = cli.open_input, os.access

    def refused(name: str, *rest: Any, **keywords: Any) -> Any:
        if name == str(locked):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, *rest, **keywords)

    monkeypatch.setattr(cli, "open_input", refused)
    monkeypatch.setattr(os, "access", lambda path, mode, *rest, **keywords: (
        str(path) != str(locked) and real_access(path, mode, *rest, **keywords)))
    code, out, err = run(["scan", str(first), str(locked), str(second), "-q"], monkeypatch)
    assert code == 0 and [r.get("error") for r in records(out)] == [
        None, None, "cannot read: Permission denied", None]
    assert f"{locked}: cannot read: Permission denied" in err
    assert run(["scan", str(first), str(locked), str(second), "--fail-on-error"],
               monkeypatch)[0] == 65
    code, out, err = run(["scan", str(locked)], monkeypatch)
    assert (code, out) == (2, b"") and f"{locked}: permission denied" in err
    code, out, err = run(["scan", str(first), str(tmp_path / "typo.jsonl")], monkeypatch)
    assert (code, out) == (2, b"") and "typo.jsonl: no such file" in err
    dangling = tmp_path / "gone.jsonl"
    dangling.symlink_to(tmp_path / "removed.jsonl")  # a link to no file is not there either
    code, out, err = run(["scan", str(first), str(dangling)], monkeypatch)
    assert (code, out) == (2, b"") and "gone.jsonl: no such file" in err


def test_gzip_of_compressed_data_is_named_with_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip file whose data is compressed again (gzipped twice, or gzip of an xz file) is
    said to be so, with the commands that decompress it: alone, status 2; among several, its
    error record; on standard input, status 2 (read as text, its inner stream was split at
    every newline byte, each piece an error record saying it was not UTF-8). Gzip once is
    read as before."""
    import lzma

    source = lines_file(tmp_path / "runs.jsonl", 2).read_bytes()
    for name, compressor, inner, data in (
            ("twice.jsonl.gz", "gzip", "gzip -dc", gzip.compress(gzip.compress(source))),
            ("inner.jsonl.gz", "xz", "xzcat", gzip.compress(lzma.compress(source)))):
        path = tmp_path / name
        path.write_bytes(data)
        said = (f"gzip of data compressed again with {compressor}, which vthread does not "
                f"read (a gzip stream is read once): decompress it first (gzip -dc {path} | "
                f"{inner} | vthread scan -)")
        code, out, err = run(["scan", str(path)], monkeypatch)
        assert (code, out, err) == (2, b"", f"vthread scan: {path}: {said}\n")
        code, out, _ = run(["scan", str(tmp_path / "runs.jsonl"), str(path), "-q"],
                           monkeypatch)
        got = records(out)
        assert code == 0 and len(got) == 3 and got[2]["error"] == said
        code, out, err = run(["scan", "-"], monkeypatch, stdin=data)
        assert (code, out) == (2, b"") and "<stdin>: gzip of data compressed again" in err
    once = tmp_path / "once.jsonl.gz"
    once.write_bytes(gzip.compress(source))
    code, out, _ = run(["scan", str(once), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 2


def test_a_compression_not_read_is_named_with_what_to_do(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file compressed with bzip2, xz or zstd (gzip alone is read) is said to be so, with
    the command that decompresses it: named alone, status 2; among several, its error
    record; on standard input, status 2; under a directory, listed as left out (it was
    passed over in silence, and named, each line was "not UTF-8"). Text that merely begins
    like one (``BZh``) is read as text."""
    import bz2
    import lzma

    source = lines_file(tmp_path / "runs.jsonl", 2).read_bytes()
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(source)
    made = {"b.jsonl.bz2": ("bzip2", "bzcat", bz2.compress(source)),
            "c.jsonl.xz": ("xz", "xzcat", lzma.compress(source)),
            "d.json.zst": ("zstd", "zstdcat", b"\x28\xb5\x2f\xfd" + bytes(range(40))),
            "e.jsonl.gz.zst": ("zstd", "zstdcat", b"\x28\xb5\x2f\xfd" + bytes(range(40)))}
    for name, (compressor, command, data) in made.items():
        path = folder / name
        path.write_bytes(data)
        code, out, err = run(["scan", str(path)], monkeypatch)
        assert (code, out) == (2, b"")
        assert err == (f"vthread scan: {path}: compressed with {compressor}, which vthread does "
                       f"not read (gzip alone is): decompress it first ({command} {path} | "
                       "vthread scan -)\n")
        code, out, err = run(["scan", str(folder / "a.jsonl"), str(path), "-q"], monkeypatch)
        got = records(out)
        assert code == 0 and len(got) == 3 and got[2]["error"].startswith(
            f"compressed with {compressor}, which vthread does not read")
        code, out, err = run(["scan", "-"], monkeypatch, stdin=data)
        assert (code, out) == (2, b"") and f"<stdin>: compressed with {compressor}" in err
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(folder), "-q", "--summary", str(summary)], monkeypatch)
    assert code == 0 and len(records(out)) == 2
    assert json.loads(summary.read_text())["left_out"] == [
        {"file": str(folder / name), "why": f"compressed with {compressor}, which vthread "
         f"does not read: decompress it first ({command})"}
        for name, (compressor, command, _) in sorted(made.items())]
    text = tmp_path / "text.jsonl"
    text.write_bytes(b"BZh9 not bzip2\n" + source)
    code, out, _ = run(["scan", str(text), "-q"], monkeypatch)
    assert code == 0 and [r.get("error") is None for r in records(out)] == [False, True, True]


def test_fail_on_error_fails_a_gate_that_left_a_trajectory_file_unread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a directory, a trajectory file left out unread (compressed as vthread does not
    read it, a dangling link, a FIFO) fails --fail-on-error (65, saying how many), as a file
    that cannot be read is an error record that fails it: the gate passed (0) with the
    file unchecked. A link to a directory, not followed, and files that are no trajectory
    do not fail it; without the option each run is 0 as before."""
    import bz2

    folder = tmp_path / "runs"
    folder.mkdir()
    source = lines_file(folder / "a.jsonl", 2).read_bytes()
    (folder / "notes.txt").write_text("not a trajectory")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lines_file(elsewhere / "c.jsonl", 1)
    (folder / "linked").symlink_to(elsewhere, target_is_directory=True)
    assert run(["scan", str(folder), "-q", "--fail-on-error"], monkeypatch)[0] == 0
    real_walk = os.walk

    def listed_then_removed(top: Any, *rest: Any, **keywords: Any) -> Any:
        for root, directories, files in real_walk(top, *rest, **keywords):
            yield root, directories, [*files, "gone-since.jsonl"]  # removed after listing

    monkeypatch.setattr(os, "walk", listed_then_removed)
    code, out, err = run(["scan", str(folder), "-q", "--fail-on-error"], monkeypatch)
    assert code == 0 and len(records(out)) == 2
    assert "gone-since.jsonl: left out: removed while the directory was listed" in err
    monkeypatch.setattr(os, "walk", real_walk)
    unread = [("b.jsonl.bz2", lambda path: path.write_bytes(bz2.compress(source))),
              ("gone.jsonl", lambda path: path.symlink_to(tmp_path / "removed.jsonl")),
              ("pipe.jsonl", lambda path: os.mkfifo(path))]
    for count, (name, make) in enumerate(unread, 1):
        make(folder / name)
        code, out, err = run(["scan", str(folder), "-q"], monkeypatch)
        assert code == 0 and len(records(out)) == 2
        code, out, err = run(["scan", str(folder), "-q", "--fail-on-error"], monkeypatch)
        assert code == 65 and len(records(out)) == 2, name
        files = "file was" if count == 1 else "files were"
        assert err.endswith(f"vthread scan: --fail-on-error: {count} trajectory {files} left "
                            "out unread (said above)\n"), err
        assert f"{folder / name}: left out:" in err


def test_more_compressions_are_left_out_by_name_and_counted_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trajectory files compressed as .zstd, .lzma, .Z, .zip or .br, and whole-file formats
    compressed (.eval.xz, .parquet.zst), are left out by name and fail --fail-on-error
    (they were passed over in silence); a directory given twice reads and counts each file
    once; a directory holding only such a file says which, where it said it held no
    trajectory."""
    folder = tmp_path / "runs"
    folder.mkdir()
    lines_file(folder / "a.jsonl", 1)
    names = ["b.jsonl.zstd", "c.jsonl.lzma", "d.jsonl.Z", "e.jsonl.zip", "f.jsonl.br",
             "g.eval.xz", "h.parquet.zst", "i.eval.gz", "j.parquet.gz"]
    for name in names:
        (folder / name).write_bytes(b"x")
    code, out, err = run(["scan", str(folder), str(folder), "-q", "--fail-on-error"],
                         monkeypatch)
    assert code == 65 and len(records(out)) == 1
    assert (f"{folder / 'a.jsonl'}: left out: found again, its directory given twice or "
            "within another given: read once") in err
    for name in names:
        assert f"{folder / name}: left out: compressed with " in err
    assert err.endswith(f"--fail-on-error: {len(names)} trajectory files were left out "
                        "unread (said above)\n")
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "runs.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd0000")
    code, out, err = run(["scan", str(alone), "-q"], monkeypatch)
    assert (code, out) == (2, b"")
    assert (f"{alone}: is a directory with no trajectory file vthread can read under it: "
            f"{alone / 'runs.jsonl.zst'} is left out: compressed with zstd") in err
    # Zip on standard input: unzip reads no pipe, funzip does; an Inspect log is a zip.
    code, out, err = run(["scan", "-"], monkeypatch, stdin=b"PK\x03\x04rest")
    assert (code, out) == (2, b"") and "(... | funzip | vthread scan -)" in err
    assert "an Inspect log, .eval, is a zip" in err
    # Every file left out is named; a directory named twice counts its files once.
    (alone / "b.jsonl.xz").write_bytes(b"x")
    code, out, err = run(["scan", str(alone), "-q"], monkeypatch)
    assert code == 2 and "b.jsonl.xz is left out: compressed with xz" in err
    lines_file(alone / "c.jsonl", 1)
    code, out, err = run(["scan", str(alone), f"{alone}/.", "-q", "--fail-on-error"],
                         monkeypatch)
    assert code == 65 and "2 trajectory files were left out" in err
    # Brotli has no magic: a file named as one is refused by its name.
    named = tmp_path / "runs.jsonl.br"
    named.write_bytes(b"\x8b\x02\x80")
    code, out, err = run(["scan", str(named)], monkeypatch)
    assert (code, out) == (2, b"") and "compressed with brotli" in err
    # Three bytes of lzma's magic at a damaged line's start are no lzma header.
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"]\x00\x00 junk\n" + lines_file(tmp_path / "one.jsonl", 2).read_bytes())
    code, out, err = run(["scan", str(damaged), "-q"], monkeypatch)
    assert code == 0 and [r.get("error") is None for r in records(out)] == [False, True, True]


def test_a_file_found_again_under_the_directories_given_is_read_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file reached again under the directories given (a link to it, from the same folder
    or another one given, or it hard-linked) is read once, by the path that is no link: its
    runs were written and counted once for each path, with a warning each, 29 lines for a
    results tree linking 29 runs. The others are left out, each in the summary's
    ``left_out``, the first three said on stderr and the rest counted."""
    folder, other = tmp_path / "runs", tmp_path / "latest"
    folder.mkdir()
    other.mkdir()
    real = [lines_file(folder / f"r{index}.jsonl", 2) for index in range(5)]
    (folder / "a_link.jsonl").symlink_to(real[0])
    for index, path in enumerate(real):
        (other / f"copy{index}.jsonl").symlink_to(path)
    os.link(real[1], folder / "hard.jsonl")
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", "-q", str(folder), str(other), "--summary", str(summary)],
                         monkeypatch)
    got = records(out)
    assert code == 0 and len(got) == 5 * 2
    assert sorted({record["file"] for record in got}) == sorted(
        {str(real[0]), str(real[2]), str(real[3]), str(real[4]),
         min(str(real[1]), str(folder / "hard.jsonl"))})
    left = json.loads(summary.read_text())["left_out"]
    assert len(left) == 7 and all("read once" in item["why"] for item in left)
    assert str(folder / "a_link.jsonl") in {item["file"] for item in left}
    assert err.count(": left out: the same file as ") == 3
    assert "and 4 more files found again under the directories given (links, or" in err
    assert "again: its records are written" not in err
    # A link to the directory, given first, is a path through a link too: the file is read
    # by its own path (the first path given won, where the docs said otherwise: a tester's
    # case).
    linked = tmp_path / "runs-latest"
    linked.symlink_to(folder, target_is_directory=True)
    code, out, err = run(["scan", "-q", str(linked), str(folder)], monkeypatch)
    got = records(out)
    assert code == 0 and len(got) == 5 * 2
    assert {record["file"] for record in got} <= {str(path) for path in real} | {
        str(folder / "hard.jsonl")}


def test_directories_given_twice_or_nested_count_what_they_pass_over_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory given twice, or within another given, is walked for each, but what the
    walks leave out or pass over for its name is said and counted once (the summary's
    passed_over_by_name counted a file 3 times); a directory of several inputs that is an
    error record still has what it holds in the summary's left_out and
    passed_over_by_name, which were empty."""
    folder = tmp_path / "d"
    (folder / "sub").mkdir(parents=True)
    lines_file(folder / "a.jsonl", 1)
    lines_file(folder / "sub" / "b.jsonl", 1)
    for name in ("runs.jsonlines", "sub/traj_17"):
        lines_file(folder / name, 1)
    (folder / "sub" / "c.jsonl.zst").write_bytes(b"x")
    only_zst, only_names = tmp_path / "only_zst", tmp_path / "only_names"
    only_zst.mkdir()
    only_names.mkdir()
    (only_zst / "a.jsonl.zst").write_bytes(b"x")
    (only_names / "runs.jsonlines").write_bytes(b"x")
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(folder), str(folder), str(folder / "sub"), str(only_zst),
                          str(only_names), "-q", "--summary", str(summary)], monkeypatch)
    said = json.loads(summary.read_text())
    assert code == 0 and len(records(out)) == 2 + 2  # a.jsonl, sub/b.jsonl, two directories
    assert said["passed_over_by_name"] == [
        {"directory": str(folder), "files": 2, "endings": {".jsonlines": 1, "no ending": 1}},
        {"directory": str(only_names), "files": 1, "endings": {".jsonlines": 1}}]
    compressed = [item["file"] for item in said["left_out"] if "zstd" in item["why"]]
    assert compressed == [str(folder / "sub" / "c.jsonl.zst"), str(only_zst / "a.jsonl.zst")]
    assert err.count("c.jsonl.zst: left out") == 1 and err.count("passed over 2 files") == 1
    again = [item for item in said["left_out"] if "found again" in item["why"]]
    assert sorted(item["file"] for item in again) == [str(folder / "a.jsonl"),
                                                     str(folder / "sub" / "b.jsonl")]
    assert all(item["why"] == "found again, its directory given twice or within another "
               "given: read once" for item in again)


def test_two_links_to_one_device_are_each_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two names in a directory for one device (two links to /dev/null) are each left out
    and said, and each counts for --fail-on-error, once however often the directory is
    given (the second went unsaid, from stderr and the summary's left_out alike: a
    tester's case)."""
    folder = tmp_path / "d"
    folder.mkdir()
    lines_file(folder / "a.jsonl", 1)
    for name in ("n1.jsonl", "n2.jsonl"):
        (folder / name).symlink_to("/dev/null")
    summary = tmp_path / "summary.json"
    code, _, err = run(["scan", str(folder), str(folder), "-q", "--fail-on-error",
                        "--summary", str(summary)], monkeypatch)
    devices = [item["file"] for item in json.loads(summary.read_text())["left_out"]
               if "not a regular file" in item["why"]]
    assert code == 65 and devices == [str(folder / "n1.jsonl"), str(folder / "n2.jsonl")]
    assert err.count("n1.jsonl: left out") == err.count("n2.jsonl: left out") == 1
    assert "2 trajectory files were left out unread" in err


def test_a_file_given_twice_is_warned_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    """A file read twice (named twice, by name and through its directory, or by two paths)
    is said once per repetition; its records are still written each time, as asked."""
    folder = tmp_path / "runs"
    folder.mkdir()
    runs = lines_file(folder / "a.jsonl", 2)
    other = lines_file(folder / "b.jsonl", 1)
    code, out, err = run(["scan", "-q", str(folder), str(runs), str(folder / ".." / "runs" /
                                                                     "a.jsonl"), str(runs)],
                         monkeypatch)
    assert code == 0 and len(records(out)) == 3 + 2 * 3
    assert err.splitlines() == [
        f"vthread scan: warning: {runs} is given again: its records are written and counted "
        "once for each time it is given",
        f"vthread scan: warning: {folder / '..' / 'runs' / 'a.jsonl'} is {runs} again: its "
        "records are written and counted once for each time it is given",
        f"vthread scan: warning: {runs} is given again: its records are written and counted "
        "once for each time it is given"]
    assert run(["scan", "-q", str(runs), str(other)], monkeypatch)[2] == ""
