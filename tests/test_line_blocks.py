"""``vthread scan`` hands the core each read of a file whole (``_core.scan_lines`` with its
``block``), its lines found by the core (``_core.line_ends``) and read where they lie
(:class:`vthread.cli._LineBlock`): the lines are those ``bytes.split`` finds, the core's
columns those of the same lines as ``bytes``, a looping line's kept tape is found at its
place in the read, and the records are those of reading a line at a time."""

from __future__ import annotations

import gzip
import io
import json
import pickle
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import threads
from tests.test_attribution_tapes import _attributions_equal, _line
from vthread import _core, cli
from vthread._heuristics import columns_of, core_options
from vthread._options import cycle_options
from vthread.scan import _found_loops, scan_of_lines, verdicts

OPTIONS = cycle_options()
CORE_OPTIONS = core_options(OPTIONS)


def _split(data: bytes) -> list[bytes]:
    """The lines of ``data`` as ``bytes.split`` makes them: the obviously correct twin."""
    lines = data.split(b"\n")
    return lines[:-1] if lines[-1] == b"" else lines


def _read_chunks(data: bytes, replayed: bool = True) -> list[Any]:
    stream = io.BytesIO(data)
    return list(cli._chunks(cli._Replayed([], stream) if replayed else stream))


line_text = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"x"))


@settings(max_examples=300, deadline=None)
@given(st.lists(line_text, max_size=60), st.booleans(), st.integers(1, 64),
       st.integers(1, 64), st.integers(1, 9), st.booleans())
def test_the_chunks_hold_the_lines_split_finds(lines: list[bytes], final_newline: bool,
                                               read_bytes: int, chunk_bytes: int,
                                               chunk_lines: int, replayed: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli, "READ_BYTES", read_bytes)
        patch.setattr(cli, "CHUNK_BYTES", chunk_bytes)
        patch.setattr(cli, "CHUNK_LINES", chunk_lines)
        chunks = _read_chunks(data, replayed)
        # The first chunk is the one a line-at-a-time reading makes (a file's first lines
        # decide its format and the warnings on it).
        line_at_a_time = list(cli._chunks_read(cli._Replayed([], io.BytesIO(data)), []))
    assert [line for chunk in chunks for line in chunk] == _split(data)
    assert all(0 < len(chunk) <= chunk_lines for chunk in chunks)
    if chunks:
        assert list(chunks[0]) == list(line_at_a_time[0])


def test_a_file_past_its_first_chunk_is_read_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "READ_BYTES", 1000)
    monkeypatch.setattr(cli, "CHUNK_BYTES", 1000)
    rows = [json.dumps([{"type": "user", "text": "x" * (i % 50)}]).encode() for i in range(300)]
    data = b"\n".join(rows) + b"\n"
    chunks = _read_chunks(data)
    assert isinstance(chunks[0], list)
    blocks = [chunk for chunk in chunks if isinstance(chunk, cli._LineBlock)]
    assert len(blocks) >= len(data) // 1000 - 2
    assert [line for chunk in chunks for line in chunk] == rows
    # A pipe read as its data comes keeps a line at a time (its lines are scanned when its
    # writer pauses).
    live = cli._Replayed([], cli._LiveStream(io.BufferedReader(io.BytesIO(data))))
    assert cli._live(live)
    assert not any(isinstance(chunk, cli._LineBlock) for chunk in cli._chunks(live))


@settings(max_examples=200, deadline=None)
@given(st.lists(line_text, max_size=12), st.one_of(st.none(), line_text), st.data())
def test_a_line_block_is_the_list_of_its_lines(lines: list[bytes], head: bytes | None,
                                                data: st.DataObject) -> None:
    read = b"".join(line + b"\n" for line in lines) + b"tail"
    ends = _core.line_ends(read, 0, len(lines))
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    block = cli._LineBlock(head, read, starts[: len(ends)], ends)
    twin = ([] if head is None else [head]) + lines
    assert len(block) == len(twin)
    assert list(block) == twin
    for index in range(-len(twin), len(twin)):
        assert block[index] == twin[index]
        assert bytes(block.view(index)) == twin[index]
    for index in (len(twin), -len(twin) - 1):
        with pytest.raises(IndexError):
            block[index]
    start = data.draw(st.integers(-15, 15))
    stop = data.draw(st.integers(-15, 15))
    step = data.draw(st.sampled_from([1, 2, -1, 3]))
    assert block[start:stop:step] == twin[start:stop:step]
    assert pickle.loads(pickle.dumps(block)) == twin  # sent to a worker as a plain list


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 210), st.integers(0, 30))
def test_line_ends_are_the_newlines_a_search_finds(data: bytes, start: int, most: int) -> None:
    found = [at for at in range(start, len(data)) if data[at] == 0x0A][:most]
    assert _core.line_ends(data, start, most).tolist() == found


def _as_block(lines: list[bytes], with_head: bool) -> tuple[list[bytes], cli._LineBlock]:
    """``lines`` as a read holds them: the first as a head line, when asked, the others
    between newlines of one ``bytes``."""
    head, rest = (lines[0], lines[1:]) if with_head and lines else (None, lines)
    read = b"".join(line + b"\n" for line in rest)
    ends = _core.line_ends(read, 0, len(rest))
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)[: len(ends)]
    block = cli._LineBlock(head, read, starts, ends)
    return block.core_rows()[0], block


def _columns_equal(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Equal columns (NaN equal to NaN), the tapes kept aside."""
    a.pop("kept", None)
    b.pop("kept", None)
    _attributions_equal(a, b)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads(), min_size=1, max_size=10), st.booleans(), st.integers(1, 2))
def test_the_core_reads_a_block_as_it_reads_its_lines(drawn: list[list[dict[str, Any]]],
                                                      with_head: bool, workers: int) -> None:
    lines = [_line(thread) for thread in drawn]
    head, block = _as_block(lines, with_head)
    as_bytes = _core.scan_lines(lines, CORE_OPTIONS, True, workers)
    in_place = _core.scan_lines(head, CORE_OPTIONS, True, workers,
                                block=block.core_rows()[1])
    a = scan_of_lines(as_bytes, OPTIONS, lines.__getitem__)
    b = scan_of_lines(in_place, OPTIONS, block.view)
    assert [a.record(row) for row in range(len(a))] == [b.record(row) for row in range(len(b))]
    _columns_equal(as_bytes, in_place)


def test_a_looping_line_of_a_block_is_attributed_from_its_kept_tape() -> None:
    # Messages of sentences: a tape takes less than its text, so every looping line's is kept.
    ask = "Could you find where the worker's retry limit is set, and whether it is read"
    loop = [{"type": "user", "text": f"{ask} at start-up?"},
            {"type": "bot", "text": f"{ask.lower()}: let me look é."}] * 4
    plain = [{"type": "user", "text": f"{ask}, turn {i}"} for i in range(9)]
    lines = [_line(plain), _line(loop), _line(plain), _line(loop)]
    head, block = _as_block(lines, with_head=True)
    raw = _core.scan_lines(head, CORE_OPTIONS, True, 1, block=block.core_rows()[1])
    result = verdicts(columns_of(raw), OPTIONS)
    rows = np.flatnonzero(result.codes).tolist()
    assert rows == [1, 3]
    found = _found_loops(result, np.asarray(rows, np.int64))
    fresh = _core.attribute_lines([lines[row] for row in rows], *found)
    assert fresh.pop("from_kept") == 0
    # Copied out of the read, a line is another buffer: parsed afresh.
    copies = _core.attribute_lines([block[row] for row in rows], *found, kept=raw["kept"])
    assert copies.pop("from_kept") == 0
    raw = _core.scan_lines(head, CORE_OPTIONS, True, 1, block=block.core_rows()[1])
    where_they_lie = _core.attribute_lines([block.view(row) for row in rows], *found,
                                           kept=raw["kept"])
    assert where_they_lie.pop("from_kept") == 2
    for taken in (copies, where_they_lie):
        _columns_equal(taken, dict(fresh))


def test_a_line_the_core_could_see_written_meanwhile_is_refused() -> None:
    line = _line([{"type": "user", "text": "a"}] * 6)
    codes, begins, periods, repetitions = [1], [0], [1], [6]
    # A view made read-only of a bytearray can still be written through the bytearray while
    # the core reads it with the GIL released: only bytes, and views of bytes, are taken.
    for mutable in (bytearray(line), memoryview(bytearray(line)),
                    memoryview(bytearray(line)).toreadonly(), memoryview(line)[::2]):
        with pytest.raises(TypeError, match="line 0: expected bytes or a memoryview of bytes"):
            _core.attribute_lines([mutable], codes, begins, periods, repetitions)
    taken = _core.attribute_lines([memoryview(line)], codes, begins, periods, repetitions)
    assert taken["period"].tolist() == [1]
    empty = _core.attribute_lines([memoryview(b"")], codes, begins, periods, repetitions)
    assert empty["declined"].tolist() == [0]  # no thread: left to Python, not read


def test_rows_of_any_buffer_read_alike() -> None:
    """``scan_slices`` reads a ``bytes`` (or a view of one) in place and copies any other
    buffer first (a read-only view of a ``bytearray`` can be written meanwhile): the columns
    are the same either way."""
    loop = [{"type": "user", "text": "again"}, {"type": "bot", "text": "ok"}] * 4
    lines = [_line(loop), _line([{"type": "user", "text": "hi"}]), _line(loop[:3])]
    read = b"".join(line + b"\n" for line in lines)
    ends = _core.line_ends(read, 0, 9)
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    expected = _core.scan_slices(read, starts, ends, CORE_OPTIONS, True, 1)
    for buffer in (memoryview(read), bytearray(read), memoryview(bytearray(read)).toreadonly()):
        _columns_equal(_core.scan_slices(buffer, starts, ends, CORE_OPTIONS, True, 1),
                       dict(expected))


def test_bounds_outside_the_read_name_the_row() -> None:
    read = b'[]\n[]\n'
    with pytest.raises(ValueError, match=re.escape("row 1: slice 3..9 outside the buffer of 6")):
        _core.scan_lines([], CORE_OPTIONS, True, 1,
                         block=(read, np.array([0, 3]), np.array([2, 9])))
    with pytest.raises(ValueError, match="row 0: a negative offset"):
        _core.scan_lines([], CORE_OPTIONS, True, 1,
                         block=(read, np.array([-1]), np.array([2])))


def _workload_file(path: Path, count: int, seed: int) -> bytes:
    """``count`` generated threads, a tenth of them looping, some lines bad, as JSONL."""
    chance = random.Random(seed)
    rows: list[bytes] = []
    for i in range(count):
        turns = [{"type": "user", "text": f"step {i} {j}"} for j in range(chance.randint(1, 9))]
        if i % 10 == 3:
            turns += [{"type": "bot", "text": "again"}, {"type": "user", "text": "ok"}] * 4
        rows.append(b"{bad" if i % 37 == 5 else _line(turns))
    data = b"\n".join(rows) + b"\n"
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return data


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("name", ["runs.jsonl", "runs.jsonl.gz"])
def test_records_read_in_blocks_are_those_read_a_line_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str, name: str) -> None:
    path = tmp_path / name
    _workload_file(path, 700, seed=len(name) + int(jobs))
    monkeypatch.setattr(cli, "READ_BYTES", 3000)
    monkeypatch.setattr(cli, "CHUNK_BYTES", 3000)  # about 15 reads
    blocks: list[int] = []
    scan_lines = _core.scan_lines

    def counting(*args: Any, **kwargs: Any) -> Any:
        blocks.append(kwargs.get("block") is not None)
        return scan_lines(*args, **kwargs)

    monkeypatch.setattr(_core, "scan_lines", counting)
    arguments = ["scan", str(path), "--jobs", jobs, "--output"]
    assert cli.main([*arguments, str(tmp_path / "blocks.jsonl")]) == 0
    assert sum(blocks) >= 10
    monkeypatch.setattr(cli, "_live", lambda stream: True)  # a line at a time, as a pipe is
    blocks.clear()
    assert cli.main([*arguments, str(tmp_path / "lines.jsonl")]) == 0
    assert not any(blocks)
    written = (tmp_path / "blocks.jsonl").read_bytes()
    assert written == (tmp_path / "lines.jsonl").read_bytes()
    assert len(written.splitlines()) == 700


def test_a_gzip_stream_that_breaks_off_mid_line_drops_that_line_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _workload_file(tmp_path / "whole.jsonl", 400, seed=3)
    packed = gzip.compress(data)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[: len(packed) * 3 // 4])
    monkeypatch.setattr(cli, "READ_BYTES", 2000)
    monkeypatch.setattr(cli, "CHUNK_BYTES", 2000)
    outputs = []
    for live in (False, True):
        monkeypatch.setattr(cli, "_live", lambda stream, live=live: live)
        out = tmp_path / f"records-{live}.jsonl"
        cli.main(["scan", str(cut), "-q", "--output", str(out)])
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    records = [json.loads(line) for line in outputs[0].splitlines()]
    assert records[-1]["error"].startswith("gzip stream broken")
    assert f"line {len(records)} is incomplete" in records[-1]["error"]
    assert [record["line"] for record in records[:-1]] == list(range(1, len(records)))


def _wordy_file(path: Path, count: int, chat: bool = False) -> None:
    """``count`` threads of sentences (a tape takes less than its text, so every looping
    line's is kept), every third looping; as plain OpenAI chats with ``chat``."""
    ask = "Could you find where the worker's retry limit is set, and whether it is read"
    rows = []
    for i in range(count):
        turns = [{"type": "user", "text": f"{ask} at start-up, run {i}?"},
                 {"type": "bot", "text": f"{ask.lower()}: let me look ({i})."}]
        thread = turns * 4 if i % 3 == 0 else [*turns, {"type": "user", "text": f"done {i}"}]
        if chat:
            thread = [{"role": "user" if m["type"] == "user" else "assistant",
                       "content": m["text"]} for m in thread]
        rows.append(_line(thread))
    path.write_bytes(b"".join(row + b"\n" for row in rows))


def test_the_scan_finds_the_kept_tapes_of_a_reads_looping_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "loops.jsonl"
    _wordy_file(path, 300)
    monkeypatch.setattr(cli, "READ_BYTES", 4000)
    monkeypatch.setattr(cli, "CHUNK_BYTES", 4000)
    attribute_lines = _core.attribute_lines
    from_kept: list[tuple[int, int]] = []

    def counting(lines: list[Any], *args: Any, **kwargs: Any) -> Any:
        out = attribute_lines(lines, *args, **kwargs)
        from_kept.append((out["from_kept"], sum(isinstance(line, memoryview) for line in lines)))
        return out

    monkeypatch.setattr(_core, "attribute_lines", counting)
    assert cli.main(["scan", str(path), "-q", "--output", str(tmp_path / "out.jsonl")]) == 0
    in_views = sum(views for _, views in from_kept)
    assert in_views >= 50  # the looping lines of the reads after the first chunk
    assert all(kept >= views for kept, views in from_kept)  # each found where it lies


def test_plain_chats_are_marked_in_place(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of plain chats is looked through to its end for one that settles its format:
    a read's lines are marked where they lie, not copied out."""
    path = tmp_path / "chats.jsonl"
    _wordy_file(path, 400, chat=True)
    monkeypatch.setattr(cli, "READ_BYTES", 4000)
    monkeypatch.setattr(cli, "CHUNK_BYTES", 4000)
    listed, look = cli._listed, cli._Settling.look
    copied: list[bool] = []
    looked_at: list[bool] = []

    def listing(lines: Any) -> Any:
        copied.append(isinstance(lines, cli._LineBlock))
        return listed(lines)

    def looking(self: Any, label: str, lines: Any, *rest: Any) -> Any:
        looked_at.append(isinstance(lines, cli._LineBlock) and self.start is not None)
        return look(self, label, lines, *rest)

    monkeypatch.setattr(cli, "_listed", listing)
    monkeypatch.setattr(cli._Settling, "look", looking)
    out = tmp_path / "blocks.jsonl"
    assert cli.main(["scan", str(path), "-q", "--output", str(out)]) == 0
    assert not any(copied)
    assert sum(looked_at) > 10  # reads still looked through for a settling line
    monkeypatch.setattr(cli, "_live", lambda stream: True)
    assert cli.main(["scan", str(path), "-q", "--output", str(tmp_path / "lines.jsonl")]) == 0
    assert out.read_bytes() == (tmp_path / "lines.jsonl").read_bytes()


@pytest.mark.parametrize("judged_in", ["settling", "window"])
def test_a_long_line_judged_out_of_a_read_leaves_no_parse_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judged_in: str) -> None:
    """A long line (1 MiB or more) judged for a file's format from a copy, because it lies
    inside a read, keeps no parse (the scan reads the line where it lies in the read, so no
    later parse would take it, and it would be held to the run's end): judged as the line
    that settles the format, or as one of the threads after the settling one that are still
    looked at (the window's rest, in the chunks after it)."""
    path = tmp_path / "chats.jsonl"
    _wordy_file(path, 60, chat=True)
    chats = path.read_bytes()
    call = {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
    tool_turns = [{"role": "assistant", "content": None, "tool_calls": [call]},
                  {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    long_line = _line([{"role": "user", "content": "x" * (1200 << 10)}, *tool_turns]) + b"\n"
    if judged_in == "settling":
        # Plain chats past the first chunk (3 MiB), then the long line settles the format.
        before = chats * ((3300 << 10) // len(chats))
        path.write_bytes(before + long_line + chats)
    else:
        # A short line settles the format near the end of the first chunk (its end falls
        # among the 60 short chats after it); those chats, then the long line, are the
        # window's rest (the 63 threads after the settling one), the long line in the read
        # after the first chunk.
        short = _line([{"role": "user", "content": "hi"}, {"role": "assistant",
                                                          "content": "hello"}]) + b"\n"
        settler = _line([{"role": "user", "content": "hi"}, *tool_turns]) + b"\n"
        before = short * (((3 << 20) - 2000) // len(short))
        path.write_bytes(before + settler + short * 60 + long_line + chats)
        monkeypatch.setattr(cli, "READ_BYTES", 1000)
        monkeypatch.setattr(cli, "CHUNK_LINES", 1 << 20)  # chunks cut by their bytes alone
    monkeypatch.setattr(cli, "CHUNK_BYTES", 3 << 20)
    judged: list[tuple[bool, bool]] = []
    evidence = _core.line_format_evidence

    def judging(line: bytes, messages_key: Any = None, keep_tape: bool = False,
                keep_into: Any = None, undeclared: bool = False) -> Any:
        if len(line) > 1 << 20:
            judged.append((type(line) is bytes, keep_tape))
        return evidence(line, messages_key, keep_tape, keep_into, undeclared)

    chunks: list[tuple[str, bool]] = []
    scan_chunk = cli._scan_chunk

    def scanning(task: Any) -> Any:
        done = scan_chunk(task)
        chunks.append((type(task.lines).__name__, _core.tape_is_kept()))
        return done

    monkeypatch.setattr(_core, "line_format_evidence", judging)
    monkeypatch.setattr(cli, "_scan_chunk", scanning)
    assert cli.main(["scan", str(path), "-q", "--output", str(tmp_path / "out.jsonl")]) == 0
    assert judged == [(True, False)]  # judged once, from a copy, nothing kept
    assert chunks[0][0] == "list" and "_LineBlock" in {kind for kind, _ in chunks[1:]}
    assert not any(kept for _, kept in chunks)
