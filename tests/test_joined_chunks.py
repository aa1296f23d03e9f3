"""``vthread scan`` reads consecutive small chunks (most often small files' whole) in one call
of the core (``cli._small_chunks_joined``): the records, warnings, summary and exit status
are those of reading each chunk alone (the obviously correct twin, with joining switched
off), whatever the files hold: loops, bad lines, chat read as native, other formats, gzip
streams that break off, documents, files too large to join. (The token figures drawn here
add up exactly: a total of fractional figures may differ in its last bits, its chunks'
sums added in another order.)"""

from __future__ import annotations

import gzip
import io
import json
import math
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_attribution_tapes import _line
from vthread import _core, cli


def _thread(chance: random.Random, i: int, loops: bool) -> list[dict[str, Any]]:
    turns = [{"type": "user", "text": f"step {i} {j}", "usage": {"tokens": j + 0.5}}
             for j in range(chance.randint(1, 6))]
    if loops:
        turns += [{"type": "bot", "text": "again"}, {"type": "user", "text": "ok"}] * 4
    return turns


def _chat(i: int, loops: bool) -> list[dict[str, Any]]:
    turns = [{"role": "user", "content": f"question {i}"}]
    turns += [{"role": "assistant", "content": "checking"},
              {"role": "user", "content": "and?"}] * (4 if loops else 1)
    return turns


def _directory(root: Path, files: int, seed: int) -> Path:
    """A directory of ``files`` small files of every kind a directory of runs holds."""
    chance = random.Random(seed)
    folder = root / f"runs-{seed}"
    folder.mkdir()
    for number in range(files):
        kind = chance.choice(["native", "native", "native", "chat", "bad", "mixed", "gzip",
                              "broken", "document", "long", "empty", "late-chat"])
        count = chance.randint(1, 6)
        rows = [_line(_thread(chance, i, chance.random() < 0.3)) for i in range(count)]
        name = folder / f"{number:03d}-{kind}.jsonl"
        if kind == "chat":
            rows = [_line(_chat(i, chance.random() < 0.4)) for i in range(count)]
        elif kind == "bad":
            rows.insert(chance.randrange(len(rows) + 1), b"{not json")
        elif kind == "mixed":  # a chat line in a native file: read as native, with a warning
            rows.append(_line(_chat(number, True)))
        elif kind == "late-chat":  # past the lines that tell the format: read as native
            rows = [_line(_thread(chance, i, False)) for i in range(80)]
            rows.insert(70 + count, _line(_chat(number, True)))
        elif kind == "long":
            rows = [_line(_thread(chance, i, i % 7 == 0)) for i in range(600)]
        elif kind == "empty":
            rows = []
        data = b"".join(row + b"\n" for row in rows)
        if kind == "gzip":
            name = name.with_suffix(".jsonl.gz")
            data = gzip.compress(data)
        elif kind == "broken":
            name = name.with_suffix(".jsonl.gz")
            data = gzip.compress(data)[:-12]
        elif kind == "document":
            name = name.with_suffix(".json")
            data = json.dumps([{"id": f"run{i}", "messages": json.loads(row)}
                               for i, row in enumerate(rows)]).encode()
        name.write_bytes(data)
    return folder


def _core_calls_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of lines of each call of ``_core.scan_lines`` from now on."""
    calls: list[int] = []
    scan_lines = _core.scan_lines

    def counting(lines: list[bytes], *args: Any, **kwargs: Any) -> Any:
        calls.append(len(lines))
        return scan_lines(lines, *args, **kwargs)

    monkeypatch.setattr(_core, "scan_lines", counting)
    return calls


def _scan(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = cli.main(arguments)
    return status, capsys.readouterr().err


@pytest.mark.parametrize("given", [[], ["--format", "native"], ["--anywhere"],
                                   ["--mask-volatile"]])
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("seed", [1, 2])
def test_small_files_read_together_give_the_records_of_each_read_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        seed: int, jobs: str, given: list[str]) -> None:
    folder = _directory(tmp_path, 60, seed)
    calls = _core_calls_counted(monkeypatch)
    outputs = {}
    for joined in (True, False):
        # Alone: no chunk is small enough to be joined.
        monkeypatch.setattr(cli, "JOIN_BELOW_LINES", 256 if joined else 1)
        calls.clear()
        records, summary = tmp_path / f"records-{joined}", tmp_path / f"summary-{joined}"
        status, said = _scan(["scan", str(folder), "--jobs", jobs, "-q", "-o", str(records),
                              "--summary", str(summary), *given], capsys)
        figures = json.loads(summary.read_text())
        del figures["seconds"], figures["started"]  # (the clock's)
        # The same lines on stderr; a file's warnings said as it is read may come before an
        # earlier file's said as its records are written (read ahead, as --jobs 2 reads).
        outputs[joined] = (status, records.read_bytes(), figures, sorted(said.splitlines()),
                           len(calls))
    assert outputs[True][:4] == outputs[False][:4]
    if "--anywhere" not in given:  # (looking anywhere has no warning of chat read so)
        assert any("read as native, the file's format" in said for said in outputs[True][3])
    assert len(outputs[True][1].splitlines()) == outputs[True][2]["lines"]
    assert outputs[True][4] < outputs[False][4]  # (formats alternate: see below)


def test_a_directory_of_small_files_is_read_in_few_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    chance = random.Random(5)
    for number in range(300):
        rows = [_line(_thread(chance, i, i == 1)) for i in range(3)]
        (folder / f"{number:03d}.jsonl").write_bytes(b"".join(row + b"\n" for row in rows))
    calls = _core_calls_counted(monkeypatch)
    assert cli.main(["scan", str(folder), "-q", "-o", str(tmp_path / "records")]) == 0
    # The first file alone (where it goes decides where the rest go), then the others'
    # 897 lines in one call.
    assert calls == [3, 897]
    records = [json.loads(line) for line in (tmp_path / "records").read_text().splitlines()]
    assert [(record["file"], record["line"]) for record in records] == [
        (str(folder / f"{number:03d}.jsonl"), line)
        for number in range(300) for line in (1, 2, 3)]
    assert {record["verdict"] for record in records[1::3]} == {"repeated_suffix"}


def test_strict_stops_where_reading_each_alone_stops(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    for number in range(20):
        rows = [_line([{"type": "user", "text": f"go {number} {i}"}]) for i in range(3)]
        if number == 11:
            rows.insert(1, b"{not json")
        (folder / f"{number:02d}.jsonl").write_bytes(b"".join(row + b"\n" for row in rows))
    outputs = []
    for below in (256, 1):
        monkeypatch.setattr(cli, "JOIN_BELOW_LINES", below)
        records = tmp_path / f"records-{below}"
        status, said = _scan(["scan", str(folder), "--strict", "-o", str(records)], capsys)
        outputs.append((status, records.read_bytes(), said))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 2 and len(outputs[0][1].splitlines()) == 11 * 3 + 1


def test_a_files_tail_is_read_with_small_files_its_bad_line_numbered_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The last lines of a long file (a chunk that starts past line 4,096) read with the
    small files after it: a bad line among them is read by Python and numbered in its file."""
    folder = tmp_path / "runs"
    folder.mkdir()
    rows = [_line([{"type": "user", "text": f"s{i}"}]) for i in range(4101)]
    rows[4098] = b"{not json"
    (folder / "0.jsonl").write_bytes(b"".join(row + b"\n" for row in rows))
    for number in (1, 2):
        small = [_line([{"type": "user", "text": f"t{i}"}]) for i in range(3)]
        small.insert(number, b"{bad")
        (folder / f"{number}.jsonl").write_bytes(b"".join(row + b"\n" for row in small))
    calls = _core_calls_counted(monkeypatch)
    outputs = []
    for below in (256, 1):
        monkeypatch.setattr(cli, "JOIN_BELOW_LINES", below)
        calls.clear()
        status, _ = _scan(["scan", str(folder), "-q", "-o", str(tmp_path / "out")], capsys)
        outputs.append((status, (tmp_path / "out").read_bytes(), list(calls)))
    assert outputs[0][:2] == outputs[1][:2]
    assert outputs[0][2] == [4096, 5 + 4 + 4]  # the tail and the small files, at once
    errors = [(json.loads(line)["file"][-7:], json.loads(line)["line"])
              for line in outputs[0][1].splitlines() if "error" in json.loads(line)]
    assert errors == [("0.jsonl", 4099), ("1.jsonl", 2), ("2.jsonl", 3)]


def test_standard_input_and_strict_scans_read_each_chunk_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """No chunk is joined when standard input is among the inputs (a pipe's chunk must not
    wait for more to come) or under --strict (which reads no file ahead of where it stops)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for number in range(5):
        (folder / f"{number}.jsonl").write_bytes(_line([{"type": "user", "text": "x"}]) + b"\n")
    calls = _core_calls_counted(monkeypatch)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(
        _line([{"type": "user", "text": "y"}]) + b"\n"))))
    for given in (["-"], ["--strict"], []):
        calls.clear()
        _scan(["scan", str(folder), *given, "-q", "-o", str(tmp_path / "out")], capsys)
        assert calls == ([1, 4] if not given else [1] * (6 if "-" in given else 5))


def test_a_pipes_records_come_as_its_lines_do() -> None:
    """Records of a pipe's lines are written while its writer waits, whatever the chunks'
    sizes: 64 lines of 64 KiB, a chunk of few lines cut where it reaches 4 MiB (not where
    the writer paused), are not held back until more comes."""

    def line(i: int, size: int) -> bytes:
        text = json.dumps([{"type": "user", "text": f"{i:02d} "}]).encode()
        return text.replace(b' "', b' "' + b"x" * (size - len(text) - 1), 1) + b"\n"

    lines = [line(0, 100)] + [line(i, 1 << 16) for i in range(1, 65)]
    assert sum(map(len, lines[1:])) == cli.CHUNK_BYTES
    scan = subprocess.Popen([sys.executable, "-m", "vthread", "scan", "-", "-q"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert scan.stdin is not None and scan.stdout is not None
    seen: list[bytes] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(scan.stdout.readline, b"")))
    reader.start()
    try:
        scan.stdin.write(lines[0])
        scan.stdin.flush()
        time.sleep(0.5)
        scan.stdin.write(b"".join(lines[1:]))
        scan.stdin.flush()
        waited = 0.0
        while len(seen) < 65 and waited < 60:  # (the writer keeps its end open meanwhile)
            time.sleep(0.1)
            waited += 0.1
        assert len(seen) == 65
    finally:
        scan.stdin.close()
        reader.join(timeout=120)
        scan.wait(timeout=120)


def _task(label: str, lines: int, line: bytes = b"[]") -> cli._Task:
    return cli._Task(label, 1, [line] * lines, "native", {}, False)


def test_chunks_join_up_to_the_chunk_limits_and_alike() -> None:
    small = [_task(f"f{i}", 100) for i in range(100)]
    joined = list(cli._small_chunks_joined(iter(small)))
    assert [len(task.parts or [task]) for task in joined] == [40, 40, 20]  # 4,096 lines
    assert [len(task.lines) for task in joined] == [4000, 4000, 2000]
    other = cli._Task("g", 1, [b"[]"], "openai", {}, False)
    large = _task("h", 300)
    kinds = list(cli._small_chunks_joined(iter([small[0], other, small[1], small[2], large,
                                                 small[3]])))
    assert [task.label for task in kinds] == ["f0", "g", "f1", "h", "f3"]
    assert kinds[2].parts == (small[1], small[2])
    assert kinds[0].parts is None and kinds[4].parts is None
    # At most CHUNK_BYTES together, and a chunk over JOIN_BYTES alone.
    wide = [_task(f"w{i}", 4, b"x" * 200_000) for i in range(12)]
    parts = [len(task.parts or [task]) for task in cli._small_chunks_joined(iter(wide))]
    assert parts == [5, 5, 2]
    broad = _task("b", 2, b"x" * (cli.JOIN_BYTES // 2 + 1))
    assert [task.parts for task in cli._small_chunks_joined(iter([broad, broad]))] == [None] * 2
    paused = cli._Task("p", 1, [b"[]"], "native", {}, False, paused=True)
    assert not cli._joinable(paused)


def test_the_chunks_before_a_fatal_error_are_still_scanned() -> None:
    def failing() -> Iterator[cli._Task]:
        yield _task("a", 2)
        yield _task("b", 2)
        raise cli._FatalError("c: cannot read")

    given = cli._small_chunks_joined(failing())
    first = next(given)
    assert [part.label for part in first.parts or ()] == ["a", "b"]
    with pytest.raises(cli._FatalError):
        next(given)


@pytest.mark.parametrize("python_read", [False, True])
def test_the_chunks_read_before_an_error_are_written_whatever_the_jobs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        python_read: bool) -> None:
    """An error reading the next file ends the scan after the records of every chunk read
    before it, with one job or two, in the core's threads or (``python_read``: NaN, which
    only Python reads) in worker processes: with two, the chunks in flight were dropped."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for number in range(12):
        rows = [json.dumps([{"type": "user", "text": f"go {number} {i}",
                             "usage": {"tokens": math.nan if python_read else 1}}]).encode()
                for i in range(3)]
        (folder / f"{number:02d}.jsonl").write_bytes(b"".join(row + b"\n" for row in rows))
    read = cli._tasks

    def failing(*args: Any, **kwargs: Any) -> Iterator[cli._Task]:
        for number, task in enumerate(read(*args, **kwargs)):
            if number == 8:
                raise cli._FatalError(f"{folder / '08.jsonl'}: cannot read: a failing disk")
            yield task

    monkeypatch.setattr(cli, "_tasks", failing)
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"records-{jobs}"
        status, said = _scan(["scan", str(folder), "--jobs", jobs, "-q", "-o", str(out)], capsys)
        outputs.append((status, out.read_bytes()))
        assert "a failing disk" in said
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 2 and len(outputs[0][1].splitlines()) == 8 * 3


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_progress_bar_reaches_the_end_of_a_directory_of_small_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """A result standing for several chunks read together moves the bar past every one of
    them: it ends at the inputs' size with no offset left over (it stayed at the first
    file's)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for number in range(300):
        (folder / f"{number:03d}.jsonl").write_bytes(
            _line([{"type": "user", "text": f"go {number}"}]) + b"\n")
    ends: list[tuple[float, float | None, int]] = []

    class Watched(cli._Progress):
        def clear(self) -> None:
            ends.append((self.bar.n, self.bar.total, len(self.read_to)))
            super().clear()

    monkeypatch.setattr(cli, "_Progress", Watched)
    monkeypatch.setattr(cli, "_is_tty", lambda stream: stream is sys.stderr)
    out = tmp_path / "records"
    assert cli.main(["scan", str(folder), "--jobs", jobs, "-o", str(out)]) == 0
    size = sum(path.stat().st_size for path in folder.iterdir())
    assert ends == [(size, size, 0)]
    assert len(out.read_bytes().splitlines()) == 300
