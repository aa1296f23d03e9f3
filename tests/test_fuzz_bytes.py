"""Byte-level fuzzing: the core's JSON readers and ``vthread scan`` over hostile bytes.

Two harnesses (see docs/fuzzing.md, "Bytes and the CLI"):

* the core's readers (``_core.canonical_json``, ``fingerprint_json``, ``tape_canonical``,
  ``scan_lines``) on longer and stranger byte strings than tests/test_json_reader.py draws
  (whose short-binary, damaged-text and tape properties this extends, not repeats): they
  never crash or hang and accept exactly what ``json.loads`` accepts, with its meaning;
* ``vthread scan`` on fuzzed JSONL files (valid threads, mutated bytes, invalid UTF-8, CRLF,
  byte-order marks, huge numbers, deep nesting): the exit status is a documented one, every
  output line is strict JSON, one record per input line, and never a traceback.

The budget is short by default; ``VTHREAD_FUZZ_EXAMPLES=N`` sets the examples per property
(the CLI run in a subprocess gets a tenth of them).
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import xxhash
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from test_json_reader import assert_reads_as_json_loads, assert_tape_reads_as_the_reader

from vthread import _core, cli

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
#: Examples per property; the default keeps the suite quick, a fuzzing run raises it.
EXAMPLES = int(os.environ.get("VTHREAD_FUZZ_EXAMPLES", "60"))
#: The exit statuses ``vthread scan`` documents (``vthread scan --help``) that bytes can
#: cause: not 70 (an internal error), 71 (out of memory) or 143 (a SIGTERM).
SCAN_STATUSES = {0, 1, 2, 74, 130, 141}
#: A generous bound per example: the machine is shared, but a hang is minutes, not seconds.
_DEADLINE_MS = 10_000
_FUZZ = settings(max_examples=EXAMPLES, deadline=_DEADLINE_MS,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# The byte strategies live here rather than in strategies.py: they make bytes, not values.

_TOKENS = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"d800", b"\\ud83c",
           b"\\udf89", b"0", b"-", b"1", b"e", b"E+", b".", b"1e400", b"-1e400", b"NaN",
           b"Infinity", b"-Infinity", b"true", b"null", b"nul", b"12345678901234567890",
           b"9" * 30, b"0.1", b"-0", b"00", b" ", b"\t", b"\r", b"\n", b"\r\n",
           b"\xef\xbb\xbf", b"\xff", b"\xc3", b"\xc3\xa9", b"\xed\xa0\x80", b"\xf0\x9f\x8e\x89",
           b"\x80", b"\x00", b"\x1f", b'"messages"', b'"id"', b'"type"', b'"text"', b'"a"',
           b'"usage"', b'"tokens"', b'"meta"', b'"activity"']
TOKEN_SOUP = st.lists(st.sampled_from(_TOKENS), max_size=60).map(b"".join)
"""Byte strings made of JSON's pieces and of bytes that break it: mostly near-JSON."""
RAW_BYTES = st.binary(min_size=13, max_size=400)
"""Arbitrary bytes, longer than test_json_reader's twelve."""


@st.composite
def nested_texts(draw: st.DrawFn) -> bytes:
    """Arrays and objects nested to a depth json.loads answers the same anywhere in the
    test's stack (well under or well over its recursion limit), sometimes unbalanced."""
    depth = draw(st.one_of(st.integers(1, 300), st.integers(1_100, 3_000)))
    opens = draw(st.lists(st.sampled_from([b"[", b'{"a":']), min_size=depth, max_size=depth))
    closes = [b"]" if part == b"[" else b"}" for part in reversed(opens)]
    middle = draw(st.sampled_from([b"0", b"[]", b"{}", b'"x"', b"NaN", b""]))
    text = b"".join(opens) + middle + b"".join(closes)
    cut = draw(st.integers(0, 3))
    return text[: len(text) - cut] if cut else text


_MESSAGES = [
    {"type": "user", "text": "fix the bug"},
    {"type": "bot", "text": "Let me check."},
    {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": "read", "arguments": {"path": "a.py"}}}}},
    {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": "read", "result": "x = 1"}}}},
    {"type": "bot", "text": "again and again and again", "usage": {"tokens": 12}},
]


@st.composite
def thread_lines(draw: st.DrawFn) -> bytes:
    """A valid native thread line: an array of messages or a run object, looping or not."""
    picks = draw(st.lists(st.integers(0, len(_MESSAGES) - 1), max_size=6))
    messages = [_MESSAGES[i] for i in picks] * draw(st.integers(1, 4))
    if draw(st.booleans()):
        return json.dumps(messages).encode()
    ident = draw(st.one_of(st.text(max_size=5), st.integers(), st.none(), st.floats(),
                           st.lists(st.integers(), max_size=3)))
    return json.dumps({"id": ident, "messages": messages}).encode("utf-8", "surrogatepass")


_NOISE = st.sampled_from(_TOKENS)


@st.composite
def mutated(draw: st.DrawFn, lines: st.SearchStrategy[bytes]) -> bytes:
    """A line with bytes inserted, replaced, deleted, or cut short."""
    line = draw(lines)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(line)))
        how = draw(st.sampled_from(["insert", "replace", "delete", "cut"]))
        if how == "insert":
            line = line[:at] + draw(_NOISE) + line[at:]
        elif how == "replace":
            line = line[:at] + draw(_NOISE) + line[at + 1 :]
        elif how == "delete":
            line = line[:at] + line[at + 1 :]
        else:
            line = line[:at]
    return line


_HOSTILE_LINES = [
    b"", b"   ", b"\r", b"\xef\xbb\xbf[]", b"\xff\xfe[]", b"[1e400]", b'{"id":1e400,"messages":[]}',
    b'{"id":NaN,"messages":[]}', b'{"id":-Infinity,"messages":[]}',
    b'{"id":' + b"9" * 5000 + b',"messages":[]}', b'{"id":' + b"9" * 4000 + b',"messages":[]}',
    b'[{"type":"bot","text":"a","usage":{"tokens":1e308}}]',
    b'[{"type":"bot","text":"a","usage":{"tokens":123456789012345678901234567890}}]',
    b'{"id":' + b"[" * 1000 + b"]" * 1000 + b',"messages":[]}',
    b'{"id":' + b"[" * 1023 + b"]" * 1023 + b',"messages":[]}',
    b"[" * 5000, b'{"messages":' + b"[" * 1030 + b"]" * 1030 + b"}",
    b'{"id":"\\ud800","messages":[{"type":"bot","text":"\\udc00"}]}',
    b'{"id":"\xed\xa0\x80","messages":[]}', b'{"id":"a","id":"b","messages":[],"messages":[]}',
    b'{"messages":{"type":"bot"}}', b'"just a string"', b"42", b"null",
]

LINES = st.one_of(
    thread_lines(), thread_lines(), mutated(thread_lines()), st.sampled_from(_HOSTILE_LINES),
    TOKEN_SOUP.filter(lambda data: b"\n" not in data),
    st.binary(max_size=40).filter(lambda data: b"\n" not in data),
)


@st.composite
def jsonl_files(draw: st.DrawFn) -> bytes:
    """A JSONL file's bytes: fuzzed lines, LF or CRLF ends, a byte-order mark, a last line
    with or without its newline."""
    lines = draw(st.lists(LINES, min_size=0, max_size=12))
    end = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = end.join(lines)
    if lines and draw(st.booleans()):
        data += end
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    # Bytes that begin with a whole gzip header (magic and method) are read as gzip, whatever
    # the file's name: such a "JSONL file" is a broken gzip stream, one error record.
    assume(not data.startswith(b"\x1f\x8b\x08"))
    # Nor those opening as Parquet data (its mark, then binary bytes in its first line): a
    # usage error, no records.
    assume(not cli._opens_as_parquet(data))
    # Nor those opening with the magic of a compression not read (compress's is two bytes,
    # b"\x1f\x9d", which a draw reached): refused with the command that decompresses them.
    assume(cli._unread_compression(data[:10]) is None)
    return data


def lines_in(data: bytes) -> int | None:
    """How many lines vthread scan reads in ``data`` (a last line needs no newline), or None
    when it reads a file of these bytes as a JSON document, a record per run."""
    if not data:
        return 0
    if opens_as_a_document(data) is not False:
        return None
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def opens_as_a_document(data: bytes) -> bool | None:
    """Whether a file of ``data`` named as JSONL opens as a JSON document of runs
    (docs/formats.md): its first line with text, a byte-order mark aside, is only ``[`` or
    ``{`` (no JSONL line can be), or an array whose first element is an object holding
    ``messages``, ``traj`` or ``history`` (a run, which no message is), or is an array (a
    run's bare messages), unless that first line is an array of threads whole and more
    lines follow it, the next of them no array of arrays (JSONL). None when this cannot
    tell (a first line nested past what json reads here)."""
    text = data.removeprefix(b"\xef\xbb\xbf").lstrip()
    first, _, rest = text.partition(b"\n")
    first = first.strip()
    if first in (b"[", b"{"):
        return True
    if not first.startswith(b"["):
        return False
    try:
        decoded = text.decode("utf-8")
        start = len(decoded) - len(decoded[1:].lstrip())
        element, _ = json.JSONDecoder().raw_decode(decoded, start)
    except RecursionError:
        return None
    except ValueError:
        return False
    if isinstance(element, list):
        if not rest.strip():
            return True
        try:
            json.loads(first.decode("utf-8"))
        except RecursionError:
            return None
        except ValueError:
            return True  # no whole value: a document written a run a line
        # A whole list of threads, then another list of threads: one document of lists.
        return re.match(rb"\[[ \t\r\n]*\[", rest.lstrip(b" \t\r\n").removeprefix(
            b"\xef\xbb\xbf")) is not None
    return isinstance(element, dict) and any(k in element for k in ("messages", "traj",
                                                                     "history"))


# ------------------------------------------------------------ (a) the core's readers

#: The core's nesting limit (``json_reader::MAX_NESTING``); json.loads' depends on the stack.
_MAX_NESTING = 1_000


def _nesting(data: bytes) -> int:
    """The deepest run of open brackets, strings ignored (roughly: a bound, not a parse)."""
    depth = deepest = 0
    for byte in data:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth = max(0, depth - 1)
    return deepest


@contextmanager
def _json_loads_as_at_top_level() -> Iterator[None]:
    """json.loads with about the 1,000 levels it has at the top of a fresh interpreter.

    Hypothesis raises the recursion limit while a test runs, and the test's own frames
    lower what is left of it: either way json.loads would read deeper or shallower texts
    than the command does, where the core's limit is fixed.
    """
    frames = sum(1 for _ in itertools.takewhile(bool, _frames()))
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(frames + _MAX_NESTING)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _frames() -> Iterator[object]:
    frame = sys._getframe()
    while frame is not None:
        yield frame
        frame = frame.f_back  # type: ignore[assignment]


def assert_refused_alike_for_depth(data: bytes) -> None:
    """A text nested past the limit: the core and json.loads refuse it, for the depth or,
    when a fault comes first, for the same fault."""
    try:
        json.loads(data)
    except RecursionError:
        expected = "maximum recursion depth exceeded while decoding a JSON "
    except ValueError as error:
        expected = str(error)
    else:
        raise AssertionError(f"json.loads read {len(data)} bytes nested past the limit")
    with pytest.raises(ValueError) as raised:
        _core.canonical_json(data)
    assert str(raised.value).startswith(expected), (raised.value, expected)


@_FUZZ
@given(data=st.one_of(TOKEN_SOUP, RAW_BYTES, nested_texts(),
                      mutated(thread_lines()), st.sampled_from(_HOSTILE_LINES)))
@example(data=b"\xef\xbb\xbf" + b"[" * 1500)
@example(data=b'{"a":' * 300 + b"1" + b"}" * 300 + b"\xff")
def test_core_readers_agree_with_json_loads(data: bytes) -> None:
    """Any bytes: accepted with json.loads' meaning (and fingerprint) or rejected with its
    message; the CLI's tape takes nothing json.loads would not read alike; the chunk reader
    answers (columns or "Python, please") and never raises. Texts nested within a few
    levels of the limit are left out: there json.loads' answer depends on its stack; past
    it, both refuse for the depth, but which container (array, object) trips json.loads
    depends on its stack too."""
    deepest = _nesting(data)
    assume(not _MAX_NESTING - 100 < deepest < _MAX_NESTING + 100)
    with _json_loads_as_at_top_level():
        if deepest < _MAX_NESTING:
            assert_reads_as_json_loads(data)
        else:
            assert_refused_alike_for_depth(data)
        assert_tape_reads_as_the_reader(data)
    try:
        encoding = _core.canonical_json(data)
    except ValueError:
        encoding = None
    if encoding is not None:
        assert _core.fingerprint_json(data) == xxhash.xxh3_64_intdigest(encoding)
    raw = _core.scan_lines([data, b"[]"], (2, 2, None, 3), True, 2)
    assert len(raw["message_counts"]) == 2
    assert raw["declined"].tolist() in ([], [0])


@_FUZZ
@given(data=st.one_of(TOKEN_SOUP, RAW_BYTES, nested_texts(),
                      mutated(thread_lines()), st.sampled_from(_HOSTILE_LINES)))
@example(data=b"[" * 2_000 + b"]" * 1_999 + b"}")
@example(data=b'{"a":' * 2_000 + b'"\\u00e9"' + b"}" * 2_000)
def test_the_syntax_walk_reads_what_json_loads_reads_at_any_depth(data: bytes) -> None:
    """``_core.python_reads_json`` (which a document's run too deep for json is judged by)
    accepts exactly the texts json.loads reads, given the stack to read them: checked with
    the recursion limit raised past the text's depth."""
    from vthread._exact_json import loads_without_digit_limit

    try:
        text = data.decode("utf-8", "surrogatepass")  # as a document's run is read
    except UnicodeDecodeError:
        assume(False)
        return
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(previous + 2 * _nesting(data) + 100)
    try:
        loads_without_digit_limit(text)
        # The top-level object's members in order, repeated ones too.
        members: list[Any] = []
        json.loads(text, object_pairs_hook=lambda pairs: members.append(pairs) or pairs,
                   parse_int=float)  # (no digit limit)
        top = members[-1] if members and text.lstrip(" \t\r\n").startswith("{") else []
        found = _core.json_top_members(data)
        # Each value's text read alone as json read it within the document, compared under
        # the raised limit (deep values); None when the core found no JSON.
        same = found is not None and repr(top) == repr([
            (json.loads(key.decode("utf-8", "surrogatepass")),
             json.loads(value.decode("utf-8", "surrogatepass"), parse_int=float,
                        object_pairs_hook=lambda pairs: pairs))
            for key, value in found])
    except ValueError:
        reads = False
    else:
        reads = True
    finally:
        sys.setrecursionlimit(previous)
    assert _core.python_reads_json(data) == reads, data
    if not reads:
        assert _core.json_top_members(data) is None, data
        return
    assert same, data


# ------------------------------------------------------------------- (b) vthread scan


def _strict(name: str) -> Any:
    raise ValueError(f"not strict JSON: {name}")


def _scan(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes, str]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = cli.main(argv)
    out.flush()
    assert isinstance(out.buffer, io.BytesIO)
    return code, out.buffer.getvalue(), err.getvalue()


def assert_scan_invariants(code: int, out: bytes, err: str, lines: int | None) -> list[Any]:
    """A documented status, strict JSON on every line, no traceback; with status 0, one
    record per input line, numbered 1.. in order (``lines`` None: not checked)."""
    assert code in SCAN_STATUSES, (code, err)
    assert "Traceback" not in err, err
    records = [json.loads(line, parse_constant=_strict) for line in out.splitlines()]
    assert all(isinstance(record, dict) for record in records)
    if code == 0 and lines is not None:
        assert [r["line"] for r in records] == list(range(1, lines + 1)), err
    return records


@_FUZZ
@given(data=jsonl_files(), jobs=st.sampled_from(["1", "2"]))
@example(data=b"\n".join(_HOSTILE_LINES), jobs="2")
@example(data=b"\x1f\x8b\n[]", jobs="1")
@example(data=b"\x1f", jobs="1")
@example(data=b"\xef\xbb\xbf[]", jobs="1")  # a JSONL line of an empty thread, not a document
@example(data=b'[{"messages": []}]\n', jobs="2")  # a document of runs on one line
@example(data=b"PAR1\n\x00", jobs="1")  # a first line PAR1: lines, no Parquet (refused)
@example(data=b"\n\x00", jobs="1")  # a NUL on line 2: UTF-8 lines, not UTF-16 "\n" (1 record)
def test_scan_survives_fuzzed_jsonl(data: bytes, jobs: str, tmp_path_factory: Any) -> None:
    """vthread scan --format native on fuzzed bytes, plain and gzipped, --jobs 1 and 2: the
    invariants hold and the gzipped file's records are the plain file's."""
    folder = tmp_path_factory.mktemp("fuzz")
    plain = folder / "runs.jsonl"
    plain.write_bytes(data)
    packed = folder / "runs.jsonl.gz"
    packed.write_bytes(gzip.compress(data))
    with pytest.MonkeyPatch.context() as monkeypatch:
        code, out, err = _scan(["scan", "-j", jobs, "--format", "native", str(plain)],
                               monkeypatch)
        records = assert_scan_invariants(code, out, err, lines_in(data))
        assert code == 0, err
        zipped = _scan(["scan", "-q", "-j", jobs, "--format", "native", str(packed)],
                       monkeypatch)
        assert_scan_invariants(*zipped, lines_in(data))
        assert [{**r, "file": None} for r in records] == [
            {**r, "file": None} for r in assert_scan_invariants(*zipped, None)]


@_FUZZ
@given(data=jsonl_files())
# A one-line array of arrays: a document of runs (bare messages), not a JSONL line.
@example(data=b"\xef\xbb\xbf[[]")
@example(data=b"[[]]\n[]\n")  # an array of threads whole with lines after it: JSONL
@example(data=b"[[]]\n\xef\xbb\xbf[[]]\n")  # lists of threads a line each: one document
def test_scan_detecting_the_format_survives_fuzzed_jsonl(data: bytes,
                                                        tmp_path_factory: Any) -> None:
    """Without --format the first thread decides the format, and a line in no known format
    is a usage error (2) with no records: the other invariants still hold."""
    path = tmp_path_factory.mktemp("fuzz") / "runs.jsonl"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as monkeypatch:
        code, out, err = _scan(["scan", "-q", str(path)], monkeypatch)
    assert_scan_invariants(code, out, err, lines_in(data))
    assert code in (0, 2), err


@_FUZZ
@given(data=jsonl_files())
def test_scan_of_a_fuzzed_json_document_survives(data: bytes, tmp_path_factory: Any) -> None:
    """The same bytes named .json: read as one document (or as JSONL when it is none)."""
    path = tmp_path_factory.mktemp("fuzz") / "runs.json"
    path.write_bytes(data)
    with pytest.MonkeyPatch.context() as monkeypatch:
        code, out, err = _scan(["scan", "-q", "--format", "native", str(path)], monkeypatch)
    assert_scan_invariants(code, out, err, None)
    assert code == 0, err


@settings(max_examples=max(3, EXAMPLES // 10), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=jsonl_files())
@example(data=b"\n".join(_HOSTILE_LINES))
def test_the_installed_command_survives_fuzzed_jsonl(data: bytes,
                                                     tmp_path_factory: Any) -> None:
    """The real command in its own process, the records in a file: the same invariants,
    and nothing on stderr but the summary."""
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "runs.jsonl"
    path.write_bytes(data)
    target = folder / "records.jsonl"
    done = subprocess.run([sys.executable, "-m", "vthread", "scan", "--format", "native",
                           "-o", str(target), str(path)],
                          capture_output=True, env=ENV, timeout=120, check=False)
    err = done.stderr.decode("utf-8", "replace")
    assert_scan_invariants(done.returncode, target.read_bytes(), err, lines_in(data))
    assert done.returncode == 0, err
    assert err.startswith("vthread scan: "), err
