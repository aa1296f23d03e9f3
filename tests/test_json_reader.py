"""The JSON reader, ``_core.canonical_json``: ``canonical(json.loads(data))`` without Python
objects, held to ``json.loads`` on every text, accepted or rejected."""

from __future__ import annotations

import json
import math
import string
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import xxhash
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import JSON_VALUES

import vthread
from vthread import _core, _jsvalue

_ROOT = Path(__file__).resolve().parent.parent
_CORPORA = [_ROOT / "testdata" / "corpus.json", _ROOT / "testdata" / "adversarial.json"]
_SAMPLES = sorted((_ROOT / "vthread" / "samples").glob("*.jsonl"))

#: The reader's nesting limit (``json_reader::MAX_NESTING``).
_MAX_NESTING = 1_000
#: Error messages are CPython 3.11's word for word; later versions reword some of them.
_SAME_MESSAGES = sys.version_info[:2] == (3, 11)


def _json_loads_verdict(data: bytes) -> tuple[bool, bytes | str]:
    """(True, canonical bytes) when json.loads accepts ``data``, else (False, its message)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as error:
        return False, str(error)
    return True, _jsvalue.canonical(value).encode("ascii")


def _json_loads_offset(data: bytes) -> int | None:
    """The byte offset (byte-order mark included) where json.loads finds a JSON syntax
    error, from its character position; None when it accepts the text or fails otherwise."""
    try:
        json.loads(data)
    except json.JSONDecodeError as error:
        mark = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        return mark + len(error.doc[: error.pos].encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return None
    return None


def _core_verdict(data: bytes) -> tuple[bool, bytes | str]:
    try:
        return True, _core.canonical_json(data)
    except ValueError as error:
        return False, str(error)


def assert_reads_as_json_loads(data: bytes) -> None:
    """The core accepts what json.loads accepts, with its canonical bytes, and rejects the
    rest with json.loads' message; UTF-16/32 texts it declines by name."""
    if json.detect_encoding(data) not in ("utf-8", "utf-8-sig"):
        with pytest.raises(ValueError, match=r"^not a UTF-8 text: json.loads would decode it"):
            _core.canonical_json(data)
        return
    expected = _json_loads_verdict(data)
    got = _core_verdict(data)
    where = _json_loads_offset(data)
    if where is not None:
        with pytest.raises(ValueError) as raised:
            _core.canonical_json(data)
        assert getattr(raised.value, "offset", None) == where, data
    if expected[0] or _SAME_MESSAGES:
        assert got == expected, data
    else:
        assert not got[0], data


def assert_fingerprints_agree(data: bytes) -> None:
    """Three ways to one fingerprint: from Python objects, from bytes, from the Python twin."""
    value = json.loads(data)
    twin = xxhash.xxh3_64_intdigest(_jsvalue.canonical(value).encode("ascii"))
    assert vthread.fingerprint(value) == _core.fingerprint_json(data) == twin


# ------------------------------------------------------------------ texts drawn from values

_DUMPS_STYLES: list[dict[str, Any]] = [
    {},
    {"ensure_ascii": False, "separators": (",", ":")},
    {"ensure_ascii": False, "indent": 2},
    {"indent": "\t", "separators": (" ,\r\n", " : ")},
]


@given(value=JSON_VALUES, style=st.sampled_from(_DUMPS_STYLES))
@example(value={"b": 1, "1": 2.0, "0": [-0.0, 2**53 + 1, float("nan")]}, style={})
@example(value=["\ud83c\udf89", "🎉", "\ud800", "\x7f\x00\u2028"], style=_DUMPS_STYLES[1])
def test_values_read_back_to_their_encoding(value: Any, style: dict[str, Any]) -> None:
    """Whatever json.dumps writes for a value, the core reads to that value's encoding."""
    data = json.dumps(value, **style).encode("utf-8", "surrogatepass")
    assert _core.canonical_json(data) == _jsvalue.canonical(value).encode("ascii")
    assert_fingerprints_agree(data)


_SHORT_DOUBLES = st.builds(
    lambda odd, shift, negative: (-1.0 if negative else 1.0) * math.ldexp(odd | 1, shift),
    st.integers(1, 2**53 - 1),
    st.integers(-80, 20),
    st.booleans(),
)


@given(value=st.one_of(_SHORT_DOUBLES, st.floats(allow_nan=False, allow_infinity=False)))
@example(value=900719925474099.25)
@example(value=0.11738967895507812)
def test_doubles_print_as_python_repr_both_ways(value: float) -> None:
    """Doubles with few exact digits often lie halfway between two shortest candidates;
    repr (and JavaScript) take the even one, from objects and from bytes alike."""
    expected = _jsvalue.canonical(value).encode("ascii")
    assert _core.canonical(value) == expected
    assert _core.canonical_json(repr(value).encode()) == expected


# ------------------------------------------------------------------------- raw JSON texts

_SPACE = st.sampled_from([b"", b"", b" ", b"\t", b"\n", b"\r\n", b" \t\r \n"])
_UNITS = st.one_of(
    st.sampled_from([0x0000, 0x001F, 0x0022, 0x002F, 0x005C, 0x0041, 0x0031, 0x007F, 0x00E9,
                     0x2028, 0xFEFF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xD83C, 0xDF89]),
    st.integers(0, 0xFFFF),
)
_STRING_PIECES = st.one_of(
    st.sampled_from([b"a", b"b", b"1", b" ", b"/", b"'", b"\x7f", "é".encode(), "🎉".encode(),
                     "\u2028".encode(), "\ufeff".encode()]),
    st.sampled_from([b'\\"', b"\\\\", b"\\/", b"\\b", b"\\f", b"\\n", b"\\r", b"\\t",
                     b"\\ud83c\\udf89", b"\\uD83C\\uDF89"]),
    # UTF-8-encoded surrogates: lone, and a pair that is not the astral character.
    st.sampled_from([b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\xa0\xbc\xed\xbe\x89"]),
    st.builds(lambda unit, upper: (f"\\u{unit:04X}" if upper else f"\\u{unit:04x}").encode(),
              _UNITS, st.booleans()),
    # Long plain runs, so that what stops a scan falls anywhere in an eight-byte word.
    st.text(alphabet=string.ascii_letters + " /'~", min_size=7, max_size=30).map(str.encode),
)
_STRINGS = st.builds(lambda pieces: b'"' + b"".join(pieces) + b'"',
                     st.lists(_STRING_PIECES, max_size=5))
_KEYS = st.one_of(
    st.sampled_from([b'"a"', b'"b"', b'"\\u0061"', b'"0"', b'"1"', b'"\\u0031"', b'"10"',
                     b'"01"', b'"-1"', b'"4294967294"', b'"4294967295"', b'""',
                     '"🎉"'.encode(), b'"\\ud83c\\udf89"', b'"\xed\xa0\xbc\xed\xbe\x89"',
                     b'"\\ud83c\xed\xbe\x89"', b'"a/b"', b'"a\\/b"']),
    _STRINGS,
)
_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=25)
_INTEGERS = st.one_of(
    st.integers(-(10**30), 10**30).map(lambda n: str(n).encode()),
    st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, 2**53 + 3, -(2**53) - 1, 2**63, 2**64 + 1,
                     10**308, 10**309]).map(lambda n: str(n).encode()),
    st.sampled_from([b"-0", b"0", b"9" * 400, b"-" + b"1" * 4300, b"9" * 4300, b"1" * 4301]),
)
_FLOATS = st.one_of(
    st.builds(
        lambda sign, whole, fraction, mark, exponent_sign, exponent: (
            sign + whole + (b"." + fraction if fraction else b"")
            + (mark + exponent_sign + exponent if mark else b"")
        ),
        st.sampled_from([b"", b"-"]),
        st.sampled_from([b"0", b"1", b"12", b"9007199254740993", b"123456789012345678901"]),
        st.one_of(st.none(), _DIGITS.map(str.encode)),
        st.sampled_from([b"", b"e", b"E"]),
        st.sampled_from([b"", b"+", b"-"]),
        st.sampled_from([b"0", b"1", b"5", b"07", b"16", b"21", b"308", b"309", b"324", b"400"]),
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: repr(x).encode()),
)
_LEAVES = st.one_of(
    st.sampled_from([b"null", b"true", b"false", b"NaN", b"Infinity", b"-Infinity"]),
    _INTEGERS,
    _FLOATS,
    _STRINGS,
)


def _array(parts: list[tuple[bytes, bytes, bytes]]) -> bytes:
    inner = b",".join(before + value + after for before, value, after in parts)
    return b"[" + inner + b"]" if parts else b"[" + b"]"


def _object(parts: list[tuple[bytes, bytes, bytes, bytes]]) -> bytes:
    inner = b",".join(a + key + b + b":" + c + value for a, key, b, c, value in parts)
    return b"{" + inner + b"}"


_TEXTS = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(st.tuples(_SPACE, inner, _SPACE), max_size=4).map(_array),
        st.lists(st.tuples(_SPACE, _KEYS, _SPACE, _SPACE, inner), max_size=5).map(_object),
    ),
    max_leaves=12,
)
_DOCUMENTS = st.builds(lambda bom, before, text, after: bom + before + text + after,
                       st.sampled_from([b"", b"", b"", b"\xef\xbb\xbf"]), _SPACE, _TEXTS, _SPACE)


@settings(max_examples=500)
@given(data=_DOCUMENTS)
@example(data=b'{"a":1,"\\u0061":2,"b":3,"a":4}')
@example(data=b'{"\xed\xa0\xbc\xed\xbe\x89":1,"\\ud83c\\udf89":2,"\xf0\x9f\x8e\x89":3}')
@example(data=b'{"a":[],"\xf0\x9f\x8e\x89":null,"\xed\xa0\xbc\xed\xbe\x89":{},"\xf0\x9f\x8e\x89":[]}')
@example(data=b'{"b":0,"\\u0031":1,"01":2,"1":3}')
@example(data=b"\xef\xbb\xbf [1E400, -0.0, 12345678901234567890, NaN]")
def test_texts_read_as_json_loads_reads_them(data: bytes) -> None:
    """Odd whitespace, escapes, surrogates, big numbers, repeated and index-like keys."""
    assert_reads_as_json_loads(data)
    if _json_loads_verdict(data)[0]:
        assert_fingerprints_agree(data)


# ---------------------------------------------------------------------- malformed texts

_NOISE = st.sampled_from([b"\x00", b"\x01", b"\x1f", b'"', b"\\", b",", b":", b"[", b"]", b"{",
                          b"}", b"x", b"-", b".", b"e", b"0", b"u", b"\xff", b"\xc3", b"\xed",
                          b"\xed\xa0", b"\x80", b"\xf0\x9f", b"\xef\xbb\xbf", b"\\u12", b"\\x",
                          b" ", b"\n", b"NaN", b"nul"])


@st.composite
def _damaged(draw: st.DrawFn) -> bytes:
    """A drawn text cut short, with a byte or fragment inserted, replaced or removed, or with
    something after it."""
    data = draw(_DOCUMENTS)
    at = draw(st.integers(0, len(data)))
    how = draw(st.sampled_from(["cut", "insert", "replace", "delete", "trail"]))
    if how == "cut":
        return data[:at]
    if how == "insert":
        return data[:at] + draw(_NOISE) + data[at:]
    if how == "replace":
        return data[:at] + draw(_NOISE) + data[at + 1 :]
    if how == "delete":
        return data[:at] + data[at + 1 :]
    return data + draw(_SPACE) + draw(_NOISE)


@settings(max_examples=500)
@given(data=_damaged())
@example(data=b"[1,] \xff")
@example(data=b'"\\ud800\\uzzzz"')
@example(data=b'{"a":1,}')
@example(data=b"5\x00")
@example(data=b"\xef\xbb\xbf\xef\xbb\xbf1")
def test_damaged_texts_read_as_json_loads_reads_them(data: bytes) -> None:
    """Rejected where json.loads rejects, with its message; accepted where it still accepts."""
    assert_reads_as_json_loads(data)


@settings(max_examples=500)
@given(data=st.binary(max_size=12))
def test_any_bytes_read_as_json_loads_reads_them(data: bytes) -> None:
    """Short arbitrary bytes: mostly invalid UTF-8 and stray structure."""
    assert_reads_as_json_loads(data)


@pytest.mark.parametrize(
    "data",
    [b"5\x00", b"\x005", b"\xff\xfe5\x00", b"\xfe\xff\x005", b"5\x00\x00\x00",
     "[1]".encode("utf-16"), "[1]".encode("utf-32")],
)
def test_utf16_and_utf32_texts_are_declined(data: bytes) -> None:
    """Texts json.loads decodes as UTF-16/32 (which it may accept) are refused by name."""
    assert json.detect_encoding(data) not in ("utf-8", "utf-8-sig")
    with pytest.raises(ValueError, match=r"^not a UTF-8 text: json.loads would decode it as"):
        _core.canonical_json(data)


# ------------------------------------------------------------------------------ limits


def test_nesting_is_bounded_at_a_thousand_levels() -> None:
    """1,000 levels read (json.loads needs a raised recursion limit for them); one more is
    an error, as json.loads' RecursionError, and no depth crashes."""
    for open_, close, kind in [(b"[", b"]", "array"), (b'{"a":', b"}", "object")]:
        deepest = open_ * _MAX_NESTING + b"0" + close * _MAX_NESTING
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(limit + 2 * _MAX_NESTING)
        try:
            expected = _jsvalue.canonical(json.loads(deepest)).encode("ascii")
        finally:
            sys.setrecursionlimit(limit)
        assert _core.canonical_json(deepest) == expected
        too_deep = open_ * (_MAX_NESTING + 1) + b"0" + close * (_MAX_NESTING + 1)
        with pytest.raises(RecursionError, match=f"decoding a JSON {kind}"):
            json.loads(too_deep)
        message = f"^maximum recursion depth exceeded while decoding a JSON {kind} from a "
        with pytest.raises(ValueError, match=message):
            _core.canonical_json(too_deep)
        with pytest.raises(ValueError, match=message):
            _core.canonical_json(open_ * 1_000_000)


@pytest.mark.skipif(sys.get_int_max_str_digits() != 4300, reason="a non-default digit limit")
@pytest.mark.parametrize("digits", [4299, 4300, 4301, 5000])
def test_integer_digit_limit_is_pythons(digits: int) -> None:
    """Integers up to Python's default 4,300 digits read (as null: beyond the double range);
    longer ones are refused with int()'s message; floats have no limit."""
    for data in [b"7" * digits, b"[-" + b"7" * digits + b"]", b"7" * digits + b".5"]:
        assert_reads_as_json_loads(data)


# ---------------------------------------------------------------------------- corpora


@pytest.mark.parametrize("path", _CORPORA, ids=lambda path: path.name)
def test_corpora_read_as_json_loads_reads_them(path: Path) -> None:
    """Each corpus file whole, and each of its records written out again two ways."""
    data = path.read_bytes()
    assert_reads_as_json_loads(data)
    for value in json.loads(data)["records"]:
        for style in _DUMPS_STYLES[:2]:
            text = json.dumps(value, **style).encode("utf-8", "surrogatepass")
            assert _core.canonical_json(text) == _jsvalue.canonical(value).encode("ascii")


@pytest.mark.parametrize("path", _SAMPLES, ids=lambda path: path.name)
def test_sample_lines_read_as_json_loads_reads_them(path: Path) -> None:
    """Every line of the packaged JSONL samples."""
    lines = path.read_bytes().splitlines()
    assert lines
    for line in lines:
        assert_reads_as_json_loads(line)
        assert_fingerprints_agree(line)


def test_calls_do_not_leak_into_each_other() -> None:
    """Buffers kept between calls (and released after a huge text) never show through."""
    small = b'{"b":[1.0],"0":"x"}'
    huge = b"[" + b",".join([b'{"k":"' + b"v" * 100 + b'"}'] * 30_000) + b"]"
    for data in [small, huge, small, b"[1,", small]:
        assert _core_verdict(data) == _json_loads_verdict(data)


def test_threads_read_at_once() -> None:
    """The GIL is released while reading: threads at once get each their own answers."""
    lines = [line for path in _SAMPLES for line in path.read_bytes().splitlines()]
    expected = [_core.fingerprint_json(line) for line in lines]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            assert list(pool.map(_core.fingerprint_json, lines)) == expected


def test_only_bytes_are_read() -> None:
    """A str is not JSON bytes: the binding refuses it instead of guessing an encoding."""
    with pytest.raises(TypeError):
        _core.canonical_json("[1]")  # type: ignore[arg-type]


# ----------------------------------------------------------- the CLI's tape, held to this

def assert_tape_reads_as_the_reader(data: bytes) -> None:
    """Where the CLI's tape takes a line, it encodes it as the reader (and json.loads) do;
    what json.loads rejects, the tape never takes."""
    taken = _core.tape_canonical(data)
    if taken is None:
        return
    accepted, expected = _core_verdict(data)
    assert accepted, data
    assert taken == expected, data


@settings(max_examples=500)
@given(data=st.one_of(_DOCUMENTS, _damaged()))
@example(data=b'{"a":1,"a":2}')
@example(data=b'["\\ud83c\\udf89", "\\ud800"]')
@example(data=b"[1E400, -0.0, 123456789012345678, 0.1]")
def test_the_tape_reads_as_the_reader(data: bytes) -> None:
    """The CLI's fast tape agrees with the exact reader on every line it does not decline."""
    assert_tape_reads_as_the_reader(data)


def test_the_tape_takes_the_common_lines() -> None:
    """The tape declines nothing in the bundled sample: it is the fast path, not a detour."""
    sample = Path(vthread.__file__).parent / "samples" / "threads.jsonl"
    for line in sample.read_bytes().splitlines():
        assert _core.tape_canonical(line) == _core.canonical_json(line)
