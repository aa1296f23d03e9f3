"""The tapes ``_core.scan_lines`` keeps of lines that may loop, taken by
``_core.attribute_lines`` instead of parsing those lines again (``KeptTapes`` in
``src/lib.rs``): a looping line's attribution is the same as from a parse afresh, a tape is
used only for the very ``bytes`` it was parsed from, and each is taken once."""

from __future__ import annotations

import json
import random
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import threads
from vthread import _core
from vthread._heuristics import columns_of, core_options
from vthread._options import cycle_options
from vthread.scan import _found_loops, scan_of_lines, verdicts

OPTIONS = cycle_options()
CORE_OPTIONS = core_options(OPTIONS)


def _line(thread: list[dict[str, Any]]) -> bytes:
    return json.dumps(thread, separators=(",", ":")).encode()


def _attributions_equal(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert _values_equal(a[key], b[key]), key


def _values_equal(a: Any, b: Any) -> bool:
    """Equal values of the core's results: arrays (NaN equal to NaN), and dicts, lists and
    tuples of them."""
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f")))
    if isinstance(a, dict):
        return (isinstance(b, dict) and a.keys() == b.keys()
                and all(_values_equal(a[key], b[key]) for key in a))
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_values_equal(x, y) for x, y in zip(a, b, strict=True)))
    return bool(a == b)


def _looping(lines: list[bytes]) -> tuple[dict[str, Any], list[int], tuple[list[Any], ...]]:
    """The core's reading of ``lines``, the rows the heuristics find looping, and the loops'
    (codes, begins, periods, repetitions) as ``attribute_lines`` takes them."""
    raw = _core.scan_lines(lines, CORE_OPTIONS, True, 1)
    result = verdicts(columns_of(raw), OPTIONS)
    rows = np.flatnonzero(result.codes).tolist()
    return raw, rows, _found_loops(result, np.asarray(rows, np.int64))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads(), min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_attribution_from_kept_tapes_is_attribution_from_a_fresh_parse(
        drawn: list[list[dict[str, Any]]], shuffle: random.Random) -> None:
    lines = [_line(thread) for thread in drawn]
    raw, rows, found = _looping(lines)
    kept = raw.get("kept")
    if not rows:
        return
    # The rows in another order than the chunk's, as another caller may ask: a tape is found
    # by its line's address, never by its place.
    order = list(range(len(rows)))
    shuffle.shuffle(order)
    picked = [lines[rows[i]] for i in order]
    loops = tuple([column[i] for i in order] for column in found)
    fresh = _core.attribute_lines(picked, *loops)
    assert fresh.pop("from_kept") == 0
    held = len(kept or ())
    taken = _core.attribute_lines(picked, *loops, kept=kept)
    assert len(kept or ()) == 0  # taken, all of them, once
    assert taken.pop("from_kept") <= held
    _attributions_equal(taken, fresh)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads(), min_size=1, max_size=8))
def test_the_scan_of_lines_answers_alike_with_and_without_kept_tapes(
        drawn: list[list[dict[str, Any]]]) -> None:
    lines = [_line(thread) for thread in drawn]
    with_kept = _core.scan_lines(lines, CORE_OPTIONS, True, 1)
    without = _core.scan_lines(lines, CORE_OPTIONS, True, 1)
    without.pop("kept", None)
    a = scan_of_lines(with_kept, OPTIONS, lines.__getitem__)
    b = scan_of_lines(without, OPTIONS, lines.__getitem__)
    assert [a.record(row) for row in range(len(a))] == [b.record(row) for row in range(len(b))]


def test_a_kept_tape_serves_only_the_bytes_it_was_parsed_from() -> None:
    loop = [{"type": "user", "text": "status?"}, {"type": "bot", "text": "running é \u2028"}] * 4
    line = _line(loop)
    raw, rows, found = _looping([line])
    assert rows == [0]
    kept = raw["kept"]
    assert len(kept) == 1
    twin = bytes(bytearray(line))  # the same text in another buffer: parsed afresh
    assert twin == line and twin is not line
    fresh = _core.attribute_lines([line], *found)
    from_twin = _core.attribute_lines([twin], *found, kept=kept)
    assert from_twin.pop("from_kept") == 0
    assert len(kept) == 0  # the tape not used is let go of with the others
    assert fresh.pop("from_kept") == 0
    _attributions_equal(from_twin, fresh)
    kept = _core.scan_lines([line], CORE_OPTIONS, True, 1)["kept"]
    taken = _core.attribute_lines([line], *found, kept=kept)
    assert taken.pop("from_kept") == 1  # the very bytes: its tape, not a parse
    _attributions_equal(taken, fresh)


def test_a_chunk_keeps_no_more_tape_than_it_has_text_but_its_first() -> None:
    # Empty messages: 16 bytes of tape for the 3 bytes of "{}," each; every line loops.
    sparse = [_line([{}] * (400 + i)) for i in range(40)]
    kept = _core.scan_lines(sparse, CORE_OPTIONS, True, 1)["kept"]
    assert 1 <= len(kept) <= len(sparse) // 4
    # Messages of sentences (a tape takes about half their text): every looping line's
    # tape is kept.
    ask = "Could you find where the worker's retry limit is set, and whether it is read"
    wordy = [_line([{"type": "user", "text": f"{ask} at start-up or on every job ({i})?"},
                    {"type": "bot", "text": f"{ask.lower()}: let me look at it once more."}]
                   * 6) for i in range(40)]
    assert len(_core.scan_lines(wordy, CORE_OPTIONS, True, 1)["kept"]) == len(wordy)


def test_a_chunk_short_of_memory_lets_its_kept_tapes_go_before_it_is_read_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vthread import cli

    path = tmp_path / "loops.jsonl"
    path.write_bytes(b"".join(
        _line([{"type": "user", "text": f"again {i}"}, {"type": "bot", "text": "ok"}] * 4)
        + b"\n" for i in range(6)))
    read_in_core, line_by_line = cli._read_in_core, cli._line_by_line
    scan_in_core = cli._scan_chunk_in_core
    kept: list[weakref.ref[Any]] = []
    alive_at_retry: list[bool] = []

    def reading(task: Any) -> Any:
        raw = read_in_core(task)
        kept.append(weakref.ref(raw["kept"]))
        return raw

    def short_of_memory(task: Any, raw: Any = None) -> Any:
        if not alive_at_retry and len(task.lines) > 1:  # the whole chunk's verdicts only
            raise MemoryError
        return scan_in_core(task, raw)

    def again(task: Any) -> Any:
        alive_at_retry.extend(ref() is not None for ref in kept)
        assert alive_at_retry
        return line_by_line(task)

    monkeypatch.setattr(cli, "_read_in_core", reading)
    monkeypatch.setattr(cli, "_scan_chunk_in_core", short_of_memory)
    monkeypatch.setattr(cli, "_line_by_line", again)
    out = tmp_path / "records.jsonl"
    assert cli.main(["scan", str(path), "--quiet", "--jobs", "2", "--output", str(out)]) == 0
    assert alive_at_retry == [False]
    assert len(out.read_bytes().splitlines()) == 6  # every line scanned again, one by one


def test_only_lines_as_written_that_may_loop_keep_a_tape() -> None:
    loop = _line([{"type": "user", "text": "again"}, {"type": "bot", "text": "ok"}] * 4)
    plain = _line([{"type": "user", "text": f"turn {i}"} for i in range(12)])
    assert "kept" not in _core.scan_lines([plain, plain], CORE_OPTIONS, True, 1)
    assert len(_core.scan_lines([plain, loop, plain], CORE_OPTIONS, True, 1)["kept"]) == 1
    # Lines the core writes afresh (masked, translated) and lines read for loops anywhere
    # are attributed from other text: nothing kept for them.
    assert "kept" not in _core.scan_lines([loop], CORE_OPTIONS, True, 1, mask_volatile=True)
    chat = _line([{"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"}]
                 * 4)
    assert "kept" not in _core.scan_lines([chat], CORE_OPTIONS, True, 1, format="openai")
    assert "kept" not in _core.scan_lines([loop], CORE_OPTIONS, True, 1,
                                          anywhere=(12, 300, 0.1))
