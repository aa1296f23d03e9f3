"""The CLI's chunk read by the compiled core against the same chunk read by Python's json:
the records are byte for byte the same, and so are the summary's counts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli_chunks import assert_same_done as _same
from cli_chunks import chunk_task, read_wholly_by_the_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import JSON_VALUES, threads

from benchmarks.workload import generate_threads
from vthread import cli

SAMPLES = Path(__file__).resolve().parent.parent / "vthread" / "samples"
OPTIONS: dict[str, float | None] = {
    "min_repetitions": None, "min_pattern_length": None, "max_pattern_length": None,
    "min_result_repetitions": None,
}


def _task(lines: list[bytes], options: dict[str, Any] | None = None,
          count_tokens: bool = True, threads: int = 1) -> Any:
    return chunk_task(lines, "native", options, count_tokens, threads)


ID_KEYS = st.sampled_from([("id",), ("instance_id",), ("task_id",), ("task_id", "trial"),
                           ("instance_id", "id"), ("task_id", "id")])


def _line(thread: Any, ident: Any, wrapped: bool, keys: tuple[str, ...] = ("id",)) -> bytes:
    """The thread as a line: bare, or in a run object whose id is under ``keys`` (each key
    holding ``ident``), before its messages."""
    value = {**dict.fromkeys(keys, ident), "messages": thread} if wrapped else thread
    return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")


IDS = st.one_of(st.none(), st.booleans(), st.integers(-(2**60), 2**60), st.text(max_size=4),
                st.floats(allow_nan=False), st.lists(st.integers(), max_size=2))
USAGES = st.one_of(st.none(), st.integers(-5, 2**60), st.floats(), st.just("7"),
                   st.just({}), st.just(True))


@st.composite
def chunks(draw: st.DrawFn) -> list[bytes]:
    """Lines of generated threads, some wrapped with an id, some with odd usages."""
    lines = []
    for thread in draw(st.lists(threads(max_size=16), min_size=1, max_size=6)):
        for message in thread:
            if draw(st.integers(0, 5)) == 0:
                message["usage"] = {"tokens": draw(USAGES)}
        lines.append(_line(thread, draw(IDS), draw(st.booleans()), draw(ID_KEYS)))
    return lines


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks(), st.booleans())
def test_core_chunk_equals_python_chunk(lines: list[bytes], count_tokens: bool) -> None:
    """Whenever the core takes a chunk, it writes what Python's reading writes."""
    task = _task(lines, count_tokens=count_tokens)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(JSON_VALUES, min_size=1, max_size=4))
def test_odd_lines_are_left_to_python(values: list[Any]) -> None:
    """Lines that are no thread (or any JSON at all) either go to Python or agree with it."""
    lines = [json.dumps(v, allow_nan=True).encode("utf-8", "surrogatepass") for v in values]
    task = _task(lines)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


@pytest.mark.parametrize(
    "line",
    [
        b'[{"type":"user","text":"\\ud800"}]',  # a lone surrogate: json reads it, serde does not
        b'[{"type":"user","text":NaN}]',
        b'[{"type":"user","text":1e400}]',
        b'{"id":1.0,"messages":[]}',  # an id Python writes as 1.0
        b'{"id":{"b":1,"1":2},"messages":[]}',
        b'[{"usage":{"tokens":12345678901234567890}}]',
        b'[{"a":1,"a":2}]',
        b'\xef\xbb\xbf[]',
        b'[1]',
        b'',
    ],
)
def test_lines_the_core_declines_or_reads_alike(line: bytes) -> None:
    """Each odd line either sends the chunk to Python or is read as Python reads it."""
    lines = [b'[{"type":"user","text":"hi"}]', line]
    task = _task(lines)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_core_takes_the_common_chunk(threads: int) -> None:
    """The benchmark's threads and the bundled sample go through the core, not around it,
    on one worker thread or several (a chunk of 700 lines is read in three parts)."""
    lines = [_line(t, f"t{i}", True) for i, t in enumerate(generate_threads(700, seed=3))]
    task = _task(lines, threads=threads)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    _same(done, cli._scan_chunk_in_python(task))
    sample = (SAMPLES / "threads.jsonl").read_bytes().splitlines()
    task = _task(sample, threads=threads)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    _same(done, cli._scan_chunk_in_python(task))


@pytest.mark.parametrize("keys", [("instance_id",), ("task_id",), ("task_id", "trial")])
def test_runs_under_other_id_keys_are_read_by_the_core(keys: tuple[str, ...]) -> None:
    """Native runs whose id is an ``instance_id`` or a ``task_id`` (with its ``trial``) are
    read by the core, no line declined, ids written as ``documents.run_id`` gives them."""
    lines = [_line(t, i, True, keys) for i, t in enumerate(generate_threads(300, seed=7))]
    done = read_wholly_by_the_core(_task(lines))
    expected = b'"5/5"' if keys == ("task_id", "trial") else b"5"
    assert done.output.split(b"\n")[5].startswith(b'{"id":' + expected + b",")


_NUMBER_TEXTS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["-0", "0.0", "-0.0", "1e16", "1E-7", "1e21", "1e-6", "1e400", "-1e400",
                     "9007199254740993", "12345678901234567890123", "1" * 4301, "2.50e+3",
                     "900719925474099.25", "-2.5e-5"]))


@settings(max_examples=150, deadline=None)
@given(task=_NUMBER_TEXTS, trial=_NUMBER_TEXTS)
def test_numbered_ids_are_joined_as_python_joins_them(task: str, trial: str) -> None:
    """A run's ``task_id`` and ``trial`` written as any JSON number are joined by the core as
    ``documents.run_id`` joins the values ``json.loads`` makes of them: an integer's digits
    all kept (``9007199254740993``, which a double rounds), a number with a fraction or an
    exponent as JavaScript writes it (a tester found ``9007199254740992.0/0`` and
    ``1e-07/0``, neither the file's nor JavaScript's)."""
    from vthread._exact_json import loads_without_digit_limit
    from vthread.documents import run_id

    line = f'{{"task_id":{task},"trial":{trial},"messages":[{{"type":"user","text":"a"}}]}}'
    # (a line with a run of 19 digits is the standard module's to read: declined, the
    # chunk read the Python way)
    task_of_line = _task([line.encode()])
    done = cli._scan_chunk_in_core(task_of_line) or cli._scan_chunk_in_python(task_of_line)
    record = json.loads(done.output.split(b"\n")[0])
    assert record["id"] == run_id(loads_without_digit_limit(line))


def test_numbered_ids_are_written_as_the_file_and_javascript_write_them() -> None:
    """The joined ids of numbers, as ``String()`` of JavaScript writes a number with a
    fraction or an exponent (checked with Node), and an integer's every digit."""
    from vthread.documents import run_id

    given = {"9007199254740993": "9007199254740993", "1e16": "10000000000000000",
             "1E-7": "1e-7", "1e-6": "0.000001", "1e21": "1e+21", "-0": "0", "1.0": "1",
             "-1.5e300": "-1.5e+300", "123.25e-9": "1.2325e-7", "1e400": "null",
             "900719925474099.25": "900719925474099.2"}  # (a tie: the even candidate)
    for written, expected in given.items():
        line = f'{{"task_id":{written},"trial":0,"messages":[]}}'
        done = read_wholly_by_the_core(_task([line.encode()]))
        assert json.loads(done.output.split(b"\n")[0])["id"] == f"{expected}/0", written
        assert run_id(json.loads(line)) == f"{expected}/0", written


def test_long_fractions_are_read_in_the_core() -> None:
    """A float written with 19 or more fraction digits (as recorded costs are) is read by
    the core, and a looping thread holding one is attributed from json's reading."""
    step = [{"type": "activity", "text": "", "meta": {"activity": {"type": "request",
             "function": {"name": "ls", "arguments": {"cost": "COST"}}}}},
            {"type": "bot", "text": "again", "usage": {"tokens": "COST"}}]
    text = json.dumps({"id": "t", "messages": step * 4}).replace(
        '"COST"', "0.0035475000000000003")
    lines = [text.encode(), text.replace("0035", "0036").encode()]
    task = _task(lines)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    assert done.stats.verdicts[0] == 0
    _same(done, cli._scan_chunk_in_python(task))


def _read_on_one_thread() -> int:
    from vthread import _core

    lines = [json.dumps(t).encode() for t in generate_threads(600, seed=23)]
    raw = _core.scan_lines(lines, (2, 2, None, 3), False, 1)
    assert raw is not None
    return int(raw["message_counts"].sum())


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(),
                    reason="no fork")
def test_one_thread_reading_works_in_a_forked_child() -> None:
    """Reading on one thread uses no thread pool at all: a child forked after the parent
    read (as ``scan(jobs=N)`` and the CLI's worker processes fork) reads too. A parallel
    iterator run outside a pool would start rayon's process-wide pool, whose threads a
    forked child does not have, and the child would wait on them for ever."""
    import multiprocessing

    expected = _read_on_one_thread()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_read_on_one_thread).get(timeout=60) == expected


RUN_KEYS = st.sampled_from(["conversation", "messages", "traj", "é", "id"])
PLAIN_IDS = st.one_of(st.text(max_size=4), st.integers(-5, 5), st.none())  # ids the core writes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads(max_size=12), min_size=1, max_size=5), st.data(),
       st.one_of(st.none(), RUN_KEYS), st.one_of(st.none(), RUN_KEYS, st.just("uuid")))
def test_core_reads_the_given_run_keys_as_python_does(
        drawn: list[Any], data: st.DataObject, messages_key: str | None,
        id_key: str | None) -> None:
    """--messages-key and --id-key in the core: runs under the given keys (and under others,
    which the given keys miss) are read as Python reads them."""
    lines = []
    for thread in drawn:
        run: dict[str, Any] = {}
        for key in data.draw(st.lists(st.sampled_from(["id", "uuid", "instance_id", "task_id"]),
                                      max_size=2, unique=True)):
            run[key] = data.draw(PLAIN_IDS)
        under = data.draw(st.sampled_from([messages_key or "messages", "messages", "history"]))
        run[under] = thread
        lines.append(json.dumps(run, allow_nan=True).encode("utf-8", "surrogatepass")
                     if data.draw(st.integers(0, 5)) else _line(thread, None, False))
    task = replace(_task(lines), messages_key=messages_key, id_key=id_key)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


def test_core_takes_chunks_under_given_keys() -> None:
    """The benchmark's threads under other keys go through the core, not around it."""
    lines = [json.dumps({"uuid": f"t{i}", "conversation": t}).encode()
             for i, t in enumerate(generate_threads(300, seed=5))]
    task = replace(_task(lines), messages_key="conversation", id_key="uuid")
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    assert sum(done.stats.verdicts[1:]) > 20
    assert done.output.startswith(b'{"id":"t0",')
    _same(done, cli._scan_chunk_in_python(task))
    assert cli._scan_chunk_in_core(replace(task, messages_key="\udcff")) is None


ODD_LINES = [
    b'[{"type":"user","text":NaN}]',  # json reads it, the tape does not
    b'[{"type":"user","text":"\\ud800"}]',  # a lone surrogate
    b'{"id":1.0,"messages":[]}',  # an id Python writes as 1.0
    b'[{"usage":{"tokens":12345678901234567890}}]',  # beyond 64 bits
    b'not json',  # an error record
    b'',  # a blank line: an error record too
]


@pytest.mark.parametrize("threads", [1, 2])
def test_declined_lines_alone_go_the_python_way(threads: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk with a few lines only Python reads: the core reads the others, Python those
    lines alone (consecutive ones together), and the records are byte for byte Python's."""
    lines = [_line(t, f"t{i}", True) for i, t in enumerate(generate_threads(600, seed=8))]
    for at, odd in zip([0, 5, 6, 300, 301, 302, 599], [*ODD_LINES, ODD_LINES[0]], strict=True):
        lines[at] = odd
    task = _task(lines, threads=threads)
    read_by_python: list[tuple[int, int]] = []
    real = cli._read_chunk_in_python

    def spy(part: Any) -> Any:
        read_by_python.append((part.first_line, len(part.lines)))
        return real(part)

    monkeypatch.setattr(cli, "_read_chunk_in_python", spy)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    assert read_by_python == [(1, 1), (6, 2), (301, 3), (600, 1)]
    monkeypatch.setattr(cli, "_read_chunk_in_python", real)
    _same(done, cli._scan_chunk_in_python(task))


def test_a_chunk_mostly_declined_goes_the_python_way_whole() -> None:
    """More than half the lines only Python reads: the chunk is Python's (and so, at the
    head of a file, the file goes to worker processes with --jobs)."""
    lines = [b"not json"] * 6 + [_line(t, None, False) for t in generate_threads(5, seed=2)]
    assert cli._read_in_core(_task(lines)) is None
    assert cli._read_in_core(_task(lines[1:])) is not None
    assert cli._scan_chunk_in_core(replace(_task(lines[1:]), strict=True)) is None
