"""``--mask-volatile`` read by the compiled core: each thread's masked copy written as a
native line (``src/masking.rs``) is what :func:`vthread.masked_thread` makes, and a chunk read
that way writes, byte for byte, what Python's reading of it writes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from cli_chunks import assert_same_done as _same
from cli_chunks import chunk_task
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import anthropic_messages, openai_messages, responses_items, runs, threads

from benchmarks.workload import generate_threads, to_anthropic, to_openai
from vthread import _core, cli, masked_thread

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# Values a poll's answer carries, with near misses, and keys that name (or almost name) a time.
VOLATILE_TEXTS = st.sampled_from([
    "running since 2026-12-01T02:50:38Z", "took 12.5s", "id 0f8e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b",
    "at 12:00:01", "sha 9f86d081884c7d659a2feaa0c55ad015", "decade accede", "t=1764556800",
    "\x1b[38;21m[+] 3 files\x1b[0m", "caf\u00e9 \u0663\u0664:\u0665\u0666:\u0667\u0668",
    "line \\u0031\\u0032", "", "2m30s ago", "page 3 of 10",
])
TIME_KEYS = st.sampled_from(["time", "date", "Created_At", "elapsed_ms", "duration", "count",
                             "name",
                             "\u212aey_time", "x_seconds", "ended", "id"])
LEAVES = (st.none() | st.booleans() | st.integers(-10**6, 10**12) | VOLATILE_TEXTS
          | st.floats(allow_nan=False, allow_infinity=False))
METAS = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(TIME_KEYS, inner, max_size=3), max_leaves=8)


@st.composite
def volatile_threads(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Drawn threads with volatile texts and metas mixed in, and polls that loop only once
    their clocks are masked."""
    thread = draw(threads(max_size=12))
    for message in thread:
        if draw(st.integers(0, 2)) == 0:
            message["text"] = draw(VOLATILE_TEXTS)
        if draw(st.integers(0, 2)) == 0:
            message["meta"] = draw(METAS)
    polls = draw(st.integers(0, 4))
    for i in range(polls):
        thread.append({"type": "bot", "text": f"still running at 12:00:{i:02d}",
                       "meta": {"checked_at": 1764556800 + i}})
    return thread


def _line(thread: Any, ident: Any, wrapped: bool, ascii_only: bool = True) -> bytes:
    value = {"id": ident, "messages": thread} if wrapped else thread
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


def _tape_declines(line: bytes) -> bool:
    """Whether the line holds what the core's tape leaves to Python's json: a surrogate no
    pair joins, an object key written with an escape, NaN or Infinity, a number of 19 digits
    or more."""
    if re.search(rb"NaN|Infinity|\d{19}", line):
        return True
    value = json.loads(line)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(value, ensure_ascii=False)):
        return True
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if any(f'"{key}"'.encode() not in line for key in item):
                return True  # the key is written otherwise: escaped
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


@SETTINGS
@given(volatile_threads(), st.booleans(), st.booleans())
def test_the_masked_line_is_the_masked_thread(thread: list[dict[str, Any]], wrapped: bool,
                                              ascii_only: bool) -> None:
    """The core's masked native line reads back as ``masked_thread`` of the line's thread:
    the same Python values, types and key order."""
    line = _line(thread, "run-1", wrapped, ascii_only)
    masked_line = _core.mask_line(line)
    if masked_line is None:
        assert _tape_declines(line), line
        return
    read = json.loads(masked_line)
    assert read["id"] == ("run-1" if wrapped else None)
    messages = json.loads(line)["messages"] if wrapped else json.loads(line)
    assert json.dumps(read["messages"]) == json.dumps(masked_thread(messages))


@SETTINGS
@given(st.lists(volatile_threads(), min_size=1, max_size=5), st.booleans())
def test_core_chunk_equals_python_chunk(drawn: list[list[dict[str, Any]]],
                                        count_tokens: bool) -> None:
    """A masked chunk of native lines: the core takes it, and writes what Python writes."""
    lines = [_line(t, f"r{i}", i % 2 == 0) for i, t in enumerate(drawn)]
    task = chunk_task(lines, count_tokens=count_tokens, mask_volatile=True)
    done = cli._scan_chunk_in_core(task)
    assert done is not None or any(map(_tape_declines, lines))
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


MESSAGES = {"openai": openai_messages(), "anthropic": anthropic_messages(),
            "responses": responses_items()}


@SETTINGS
@given(st.sampled_from(sorted(MESSAGES)), st.data())
def test_translated_chunks_mask_alike(format_: str, data: st.DataObject) -> None:
    """Runs in the other formats, translated then masked in the core: whenever the core takes
    the chunk, it writes what Python's reading writes."""
    lines = [json.dumps(run).encode() for run in data.draw(
        st.lists(runs(MESSAGES[format_]), min_size=1, max_size=4))]
    task = chunk_task(lines, format_, mask_volatile=True)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


@pytest.mark.parametrize("format_", ["native", "openai", "anthropic"])
def test_core_masks_generated_chunks(format_: str) -> None:
    """The benchmark's threads in each format, masked: read by the core, as Python reads
    them; masking finds loops the plain reading does not."""
    convert = {"native": lambda t: t, "openai": to_openai, "anthropic": to_anthropic}[format_]
    lines = [json.dumps({"id": f"t{i}", "messages": convert(t)}).encode()
             for i, t in enumerate(generate_threads(400, seed=5))]
    polls = [{"type": "bot", "text": f"build running, {i}.5s elapsed"} for i in range(9)]
    lines.append(json.dumps({"id": "poll", "messages": convert(polls)}).encode())
    task = chunk_task(lines, format_, mask_volatile=True)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    _same(done, cli._scan_chunk_in_python(task))
    plain = cli._scan_chunk_in_core(chunk_task(lines, format_))
    assert plain is not None
    assert b'"id":"poll"' in done.output
    poll_masked = done.output.split(b"\n")[-2]
    poll_plain = plain.output.split(b"\n")[-2]
    assert b'"verdict":null' in poll_plain and b'"verdict":null' not in poll_masked


def test_a_line_the_core_declines_is_masked_by_python() -> None:
    """A lone surrogate sends its line to Python; the chunk's other lines stay the core's,
    and every record is what Python alone writes."""
    lines = [_line([{"type": "bot", "text": "at 12:00:01"}] * 4, "a", True),
             b'{"id": "b", "messages": [{"type": "bot", "text": "\\ud800 at 12:00:01"}]}',
             _line([{"type": "bot", "text": f"t {i}s"} for i in range(6)], "c", True)]
    task = chunk_task(lines, mask_volatile=True)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    _same(done, cli._scan_chunk_in_python(task))
    assert _core.mask_line(lines[1]) is None
