"""Format detection's parse of a long line handed to the scan that follows
(``_core.line_format_evidence(..., keep_tape=True)``, ``src/kept_tape.rs``): the scan reads
the same columns as from a parse of its own, takes the tape only for the very ``bytes`` it
was parsed from, takes it once, and no tape outlives a ``vthread scan`` run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vthread
from vthread import _core, cli, documents

OPTIONS = (2, 2, None, 3)
KEEP_FROM_BYTES = 1 << 20


def _long_thread(loop: bool, filler: int) -> list[dict[str, Any]]:
    """A native thread of more than 1 MiB of JSON: plain turns, then a tool called over and
    over with one result (a loop) or not at all (none)."""
    text = "x" * 200
    messages: list[dict[str, Any]] = [
        {"type": "user" if i % 2 else "bot", "text": f"{text} {i}"} for i in range(filler)]
    for _ in range(6 if loop else 0):
        messages.append({"type": "activity", "kind": "call", "name": "grep",
                         "arguments": {"q": "same"}, "result": {"out": "same"}})
    return messages


def _line(thread: list[dict[str, Any]]) -> bytes:
    line = json.dumps(thread, separators=(",", ":")).encode()
    assert len(line) >= KEEP_FROM_BYTES
    return line


def _columns_equal(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if key == "kept":  # the tapes kept for the attribution, each read alike
            assert len(a[key]) == len(b[key])
        elif isinstance(a[key], np.ndarray):
            assert np.array_equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


@pytest.fixture(autouse=True)
def _nothing_kept() -> Any:
    _core.release_kept_tape()
    yield
    _core.release_kept_tape()


@pytest.mark.parametrize("loop", [True, False])
def test_the_scan_reads_the_kept_tape_as_its_own_parse(loop: bool) -> None:
    line = _line(_long_thread(loop, 6000))
    fresh = _core.scan_lines([bytes(bytearray(line))], OPTIONS, True, 1)
    assert _core.line_format_evidence(line, None, True) == (True, ("native", True))
    assert _core.tape_is_kept()
    held = sys.getrefcount(line)
    handed = _core.scan_lines([b"[]", line], OPTIONS, True, 1)
    assert not _core.tape_is_kept()  # taken, once
    # The line no longer held for it (but by the tape kept for a looping line's attribution,
    # which goes with the scan's result).
    assert len(handed.get("kept", ())) == int(loop)
    assert sys.getrefcount(line) == held - 1 + int(loop)
    again = _core.scan_lines([b"[]", line], OPTIONS, True, 1)
    _columns_equal(handed, again)
    alone = _core.scan_lines([line], OPTIONS, True, 1)
    _columns_equal(alone, fresh)


def test_only_the_very_bytes_take_it_and_short_lines_are_not_kept() -> None:
    line = _line(_long_thread(True, 6000))
    twin = bytes(bytearray(line))  # the same text in another buffer
    assert twin == line and twin is not line
    _core.line_format_evidence(line, None, True)
    _core.scan_lines([twin], OPTIONS, True, 1)
    assert _core.tape_is_kept()  # not the kept line's buffer: parsed afresh, the tape left
    _core.release_kept_tape()
    assert not _core.tape_is_kept()
    _core.line_format_evidence(line, None)  # not asked to keep
    assert not _core.tape_is_kept()
    short = json.dumps(_long_thread(True, 10)).encode()
    _core.line_format_evidence(short, None, True)
    assert not _core.tape_is_kept()
    # A line the tape declines keeps nothing (and replaces nothing kept).
    _core.line_format_evidence(line, None, True)
    declined = line[:-1] + b", NaN]"
    assert _core.line_format_evidence(declined, None, True) == (False, None)
    assert _core.tape_is_kept()


def test_a_kept_tape_goes_to_whichever_worker_reads_the_line() -> None:
    lines = [json.dumps(_long_thread(False, 3)).encode()] * 300
    line = _line(_long_thread(True, 6000))
    lines[280] = line  # in the second part of 256 lines (`LINES_PER_PART`), not the first
    fresh = _core.scan_lines([bytes(bytearray(x)) for x in lines], OPTIONS, True, 2)
    _core.line_format_evidence(line, None, True)
    handed = _core.scan_lines(lines, OPTIONS, True, 2)
    assert not _core.tape_is_kept()
    _columns_equal(handed, fresh)


def _long_file(tmp_path: Path, loop: bool = True) -> tuple[Path, bytes]:
    line = _line(_long_thread(loop, 6000))
    path = tmp_path / "one-long-line.jsonl"
    path.write_bytes(line + b"\n" + json.dumps(_long_thread(False, 2)).encode() + b"\n")
    return path, line


@pytest.mark.parametrize("extra", [[], ["--jobs", "2"]])
def test_vthread_scan_hands_the_detection_s_parse_to_the_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> None:
    path, line = _long_file(tmp_path)
    scan_lines = _core.scan_lines
    kept_before: list[bool] = []

    def spied(lines: list[bytes], *args: Any, **kwargs: Any) -> Any:
        if line in lines:
            kept_before.append(_core.tape_is_kept())
        found = scan_lines(lines, *args, **kwargs)
        if line in lines:
            assert not _core.tape_is_kept()  # taken by this scan
        return found

    monkeypatch.setattr(_core, "scan_lines", spied)
    assert cli.main(["scan", str(path), "--quiet", "--output", os.devnull, *extra]) == 0
    assert kept_before == [True]


def test_a_tape_no_scan_took_goes_with_the_run(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # (not looping: no record's attribution parses the line again, taking the tape)
    path, line = _long_file(tmp_path, loop=False)
    scan_lines = _core.scan_lines
    kept_during: list[bool] = []

    def elsewhere(lines: list[bytes], *args: Any, **kwargs: Any) -> Any:
        # The same text in other buffers: the kept tape is not taken.
        found = scan_lines([bytes(bytearray(x)) for x in lines], *args, **kwargs)
        if line in lines:
            kept_during.append(_core.tape_is_kept())
        return found

    monkeypatch.setattr(_core, "scan_lines", elsewhere)
    assert cli.main(["scan", str(path), "--quiet", "--output", os.devnull]) == 0
    assert kept_during == [True]
    assert not _core.tape_is_kept()


def test_only_vthread_scan_keeps_tapes(tmp_path: Path) -> None:
    # `vthread report` reads a file's runs through the scan's own chunking without scanning
    # them: nothing may be kept for a scan that never comes.
    path, _ = _long_file(tmp_path)
    tasks = list(cli._tasks([str(path)], None, {}, False, None, False))
    assert tasks and not _core.tape_is_kept()
    assert documents.line_format_evidence(_line(_long_thread(True, 6000))) == ("native", True)
    assert not _core.tape_is_kept()


def test_vthread_scan_of_long_lines_answers_as_the_api_and_keeps_nothing(
        tmp_path: Path) -> None:
    threads = [_long_thread(True, 6000), _long_thread(False, 5000),
               _long_thread(True, 2), _long_thread(False, 2)]
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(_line(t) + b"\n" if len(json.dumps(t)) >= KEEP_FROM_BYTES
                              else json.dumps(t).encode() + b"\n" for t in threads))
    expected = list(vthread.scan(threads).names)
    assert expected[0] is not None and expected[1] is None
    for extra in ([], ["--format", "native"], ["--jobs", "2"]):
        out = tmp_path / "out.jsonl"
        assert cli.main(["scan", str(path), "--quiet", "--output", str(out), *extra]) == 0
        records = [json.loads(x) for x in out.read_text().splitlines()]
        assert [r["verdict"] for r in records] == expected, extra
        assert not _core.tape_is_kept()
