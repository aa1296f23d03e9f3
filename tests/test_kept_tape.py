"""Format detection's parse of a long line handed to the scan that follows
(``_core.line_format_evidence(..., keep_tape=True)``, ``src/kept_tape.rs``): the scan reads
the same columns as from a parse of its own, takes the tape only for the very ``bytes`` it
was parsed from, takes it once, and no tape outlives a ``vthread scan`` run."""

from __future__ import annotations

import json
import os
import pickle
import sys
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st
from strategies import anthropic_messages, openai_messages, responses_items, runs, threads

import vthread
from tests.test_attribution_tapes import _values_equal
from vthread import _core, cli, documents
from vthread.anywhere import core_text_run

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
        else:
            assert _values_equal(a[key], b[key]), key


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
    tasks = list(cli._tasks([str(path)], cli._Reading(None, {}, strict=False,
                                                      count_tokens=False)))
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


# -------------------------------------- short lines: detection's tapes held for their chunk

_ODD_LINES = st.sampled_from([
    b'[{"type": "user", "text": NaN}]', b"\xef\xbb\xbf[]", b"not json", b"", b"[]",
    b'{"id": 123456789012345678901, "messages": []}', b'[{"type": "user", "text": "\\ud800"}]',
    b'{"messages": [{"role": "user", "content": "hi"}]}'])
_LINES = st.one_of(threads(max_size=12).map(lambda t: json.dumps(t).encode()),
                   *(runs(messages).map(lambda r: json.dumps(r).encode()) for messages in
                     (openai_messages(), anthropic_messages(), responses_items())),
                   _ODD_LINES)


@hypothesis.settings(max_examples=300, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(st.lists(_LINES, min_size=1, max_size=12), st.data(),
                  st.sampled_from(["native", "openai", "anthropic", "responses"]),
                  st.sampled_from([1, 2]), st.booleans(), st.booleans(),
                  st.sampled_from([None, "steps"]))
def test_a_chunk_reads_detection_s_tapes_as_its_own_parse(
        lines: list[bytes], data: st.DataObject, format_: Any, workers: int,
        mask_volatile: bool, anywhere: bool, messages_key: str | None) -> None:
    """``scan_lines`` of a chunk handed the tapes detection made of some of its lines
    (``keep_into``) makes the very columns a parse of its own makes (the twin: the same text
    in other buffers, no tape to take), on native, chat and bad lines, in each format the
    core translates, one or two workers, masked or not, looking anywhere or not, with a
    messages key or not; every line detection made a tape of is read from it, and the lines
    they held are let go of."""
    lines = [bytes(bytearray(x)) for x in lines]  # (each held here only, but b"" and 1 byte)
    options: dict[str, Any] = {
        "format": format_, "mask_volatile": mask_volatile, "messages_key": messages_key,
        "anywhere": core_text_run() if anywhere else None}
    fresh = _core.scan_lines([bytes(bytearray(x)) for x in lines], OPTIONS, True, workers,
                             **options)
    holders = [_core.KeptTapes(), _core.KeptTapes()]
    # (an empty or one-byte bytes is the interpreter's shared object, whose references come
    # and go with anything else holding it: its count says nothing of the scan's)
    own = [line for line in lines if len(line) > 1]
    held = [sys.getrefcount(line) for line in own]
    judged = data.draw(st.lists(st.integers(0, len(lines) - 1), unique=True))
    places = data.draw(st.lists(st.sampled_from(holders), min_size=len(judged),
                                max_size=len(judged)))
    for index, holder in zip(judged, places, strict=True):
        _core.line_format_evidence(lines[index], messages_key, False, holder)
    kept = sum(map(len, holders))
    handed = _core.scan_lines(lines, OPTIONS, True, workers, **options, detected=holders)
    assert [len(holder) for holder in holders] == [0, 0]
    assert handed.pop("from_detected", 0) == kept  # every line read from its tape
    _columns_equal(handed, fresh)
    del handed  # (with the tapes it kept for attribution, which hold their lines too)
    assert [sys.getrefcount(line) for line in own] == held


def test_detection_holds_short_lines_tapes_up_to_its_bound_and_no_long_line() -> None:
    line = json.dumps(_long_thread(True, 40)).encode()  # about 10 KB
    holder = _core.KeptTapes()
    for _ in range(2000):  # about 20 MB of lines: held up to 8 MiB of them
        copy = bytes(bytearray(line))
        assert _core.line_format_evidence(copy, None, False, holder) == (True, ("native", True))
    assert 700 < len(holder) <= (8 << 20) // len(line)
    long = _line(_long_thread(True, 6000))  # the long line's own slot keeps it, when asked
    few = _core.KeptTapes()
    _core.line_format_evidence(long, None, True, few)
    assert len(few) == 0 and _core.tape_is_kept()
    declined = b'[{"type": "user", "text": NaN}]'  # no tape: Python reads it
    assert _core.line_format_evidence(declined, None, False, few) == (False, None)
    # A line of many small numbers makes a tape several times its size: not held (the
    # scan parses it again), where a line of text about its size is.
    dense = json.dumps({"id": 1, "messages": [], "x": [0] * 50_000}).encode()
    assert _core.line_format_evidence(dense, None, False, few) == (True, None)
    assert len(few) == 0


def test_a_copy_of_a_holder_holds_no_tape() -> None:
    holder = _core.KeptTapes()
    _core.line_format_evidence(json.dumps(_long_thread(True, 4)).encode(), None, False, holder)
    assert len(holder) == 1
    copy = pickle.loads(pickle.dumps(holder))
    assert type(copy) is _core.KeptTapes and len(copy) == 0 and len(holder) == 1
    task = cli._Task("runs.jsonl", 1, [b"[]"], "native", {}, False, detected=holder)
    assert len(pickle.loads(pickle.dumps(task)).detected) == 0  # (a worker process's)


@pytest.mark.parametrize("extra", [[], ["--jobs", "2"], ["--anywhere"], ["--mask-volatile"]])
def test_vthread_scan_of_small_files_hands_each_file_s_tapes_to_its_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> None:
    """A directory of small files, native and chat: every file's first lines are judged
    for its format, and the chunks read together read each line from its tape (translated,
    masked or as written); the records are those of a scan that parses every line afresh."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for number in range(30):  # native runs, some looping, and chats, file by file
        native = [_long_thread(i % 3 == 0, 3 + number % 5) for i in range(4)]
        chat = [[{"role": "user", "content": f"hi {number}"}]] * 4
        lines = [json.dumps({"id": f"{number}-{i}", "messages": messages}) for i, messages
                 in enumerate(chat if number % 4 == 3 else native)]
        lines += ["{bad"] if number % 7 == 0 else []
        (folder / f"{number:02}.jsonl").write_text("\n".join(lines) + "\n")
    scan_lines = _core.scan_lines
    handed: list[int] = []
    read: list[int] = []

    def counting(lines: list[bytes], *args: Any, **kwargs: Any) -> Any:
        holders = kwargs.get("detected") or []
        handed.append(sum(map(len, holders)))
        found = scan_lines(lines, *args, **kwargs)
        assert sum(map(len, holders)) == 0  # every tape taken
        read.append(found.pop("from_detected", 0))
        return found

    def afresh(lines: list[bytes], *args: Any, **kwargs: Any) -> Any:
        return scan_lines(lines, *args, **{**kwargs, "detected": None})

    outputs = []
    for spy in (counting, afresh):
        monkeypatch.setattr(_core, "scan_lines", spy)
        out = tmp_path / f"{spy.__name__}.jsonl"
        assert cli.main(["scan", str(folder), "--quiet", "--fail-on-loop", "-o", str(out),
                         *extra]) == 1
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    # Every well-formed line read from its tape; with more jobs, none is held (each line's
    # scan parses it on a worker, beside the detection), unless one CPU makes them one.
    one_job = "--jobs" not in extra or cli._worker_count(2) == 1
    assert sum(handed) == sum(read) == (30 * 4 if one_job else 0)
