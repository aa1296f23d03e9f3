"""The compiled core, ``vthread._core``, across the Python boundary."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator, Mapping
from importlib.metadata import version
from typing import Any

import numpy as np
import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st
from strategies import JSON_VALUES, MESSAGES

import vthread
from vthread import _core, _jsvalue


def test_core_is_the_build_of_this_package() -> None:
    """The extension module loaded is the one built with this version of the package."""
    assert _core.__version__ == version("vthread")


@given(value=JSON_VALUES)
def test_core_canonical_is_the_python_encoding(value: Any) -> None:
    """The core writes, byte for byte, the canonical text of the Python twin."""
    assert _core.canonical(value).decode("ascii") == _jsvalue._encode(value)


@given(value=JSON_VALUES)
def test_fingerprint_is_xxh3_of_the_python_encoding(value: Any) -> None:
    """A fingerprint made by the core is the documented XXH3-64 of the canonical text."""
    expected = xxhash.xxh3_64_intdigest(_jsvalue.canonical(value).encode("ascii"))
    assert _core.fingerprint(value) == expected == vthread.fingerprint(value)


@given(MESSAGES)
def test_message_fingerprint_is_xxh3_of_the_python_encodings(message: dict[str, Any]) -> None:
    """A message's fingerprint, its texts written by the core, is the documented XXH3-64 of
    its (type, text, meta) canonical texts, an absent meta written "-"."""
    fields = [_jsvalue.canonical(message.get("type")), _jsvalue.canonical(message.get("text")),
              _jsvalue.canonical(message["meta"]) if "meta" in message else "-"]
    expected = xxhash.xxh3_64_intdigest("\x00".join(fields).encode("ascii"))
    assert vthread.message_fingerprint(message) == expected


class _Shouting(str):
    def __str__(self) -> str:
        return self.upper()

    def __hash__(self) -> int:
        raise RuntimeError("hash must not be asked")


class _Items(Mapping[Any, Any]):
    def __init__(self, data: dict[Any, Any]) -> None:
        self._data = data

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


_cyclic: list[Any] = []
_cyclic.append(_cyclic)
_deep: list[Any] = []
for _ in range(10_050):
    _deep = [_deep]


@pytest.mark.parametrize(
    "value",
    [
        "\ud83c\udf89",  # a surrogate pair written as two code points
        "🎉",
        "\ud800",  # a lone surrogate
        "\x7f\x00\x1f\u2028",
        _Shouting("quiet"),  # content, never __str__ or __hash__
        _Items({"b": 1, "1": 2.0, None: 3, True: 4, 2.5: 5, 10**30: 6}),
        (1, 2.0, -0.0),
        {1, 2},
        b"bytes",
        object(),
        _cyclic,
        {"self": _cyclic, "n": [float("nan"), float("inf"), 10**400, -(2**70), 2**53 + 1]},
        _deep,
        [1e16, 1e21, 1e-7, 1e-5, 5e-324, 123456789.5, 1e15, -1e300, 0.1 + 0.2],
    ],
    ids=lambda value: type(value).__name__,
)
def test_core_canonical_edge_cases(value: Any) -> None:
    """Every JavaScript value-equality edge case encodes as the Python twin encodes it."""
    assert _core.canonical(value).decode("ascii") == _jsvalue._encode(value)


def _pair(code_point: int) -> str:
    """The two surrogate code points UTF-16 writes an astral code point as."""
    offset = code_point - 0x10000
    return chr(0xD800 + (offset >> 10)) + chr(0xDC00 + (offset & 0x3FF))


def _javascript_twin(value: Any, draw: Any) -> Any:
    """A value JavaScript calls equal to ``value`` but Python may not: integral floats for
    integers, index keys reordered, astral characters as surrogate pairs, tuples for lists."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and abs(value) < 2**53:
        return float(value) if draw(st.booleans()) else value
    if isinstance(value, str):
        if not draw(st.booleans()):
            return value
        return "".join(c if ord(c) < 0x10000 else _pair(ord(c)) for c in value)
    if isinstance(value, list):
        items = [_javascript_twin(item, draw) for item in value]
        return tuple(items) if draw(st.booleans()) else items
    if isinstance(value, dict):
        members = [(key, _javascript_twin(item, draw)) for key, item in value.items()]
        indices = [m for m in members if _jsvalue._is_array_index(m[0])]
        others = [m for m in members if not _jsvalue._is_array_index(m[0])]
        return dict(draw(st.permutations(indices)) + others)
    return value


@given(value=JSON_VALUES, data=st.data())
def test_screens_are_equal_for_javascript_equal_values(value: Any, data: Any) -> None:
    """A screen may merge different values but never separates equal ones: a value and a
    JavaScript-equal twin written differently in Python screen alike."""
    twin = _javascript_twin(value, data.draw)
    assert _jsvalue.canonical(twin) == _jsvalue.canonical(value)
    assert _core.screen(twin) == _core.screen(value)


@pytest.mark.parametrize(("left", "right"), [
    (1, 1.0), (-0.0, 0), (float("nan"), None), (float("inf"), None), (2**70, float(2**70)),
    ({"b": 1, "1": 2}, {"1": 2, "b": 1}), ({1: "a"}, {"1": "a"}), ({None: 1}, {"null": 1}),
    ("🎉", "\ud83c\udf89"), ([1, [2]], (1.0, (2,))), (np.int64(1), 1.0),
    (decimal.Decimal("2.50"), 2.5), (np.bool_(True), True), (np.array([[1], [2]]), [[1], [2.0]]),
    (datetime.datetime(2024, 1, 2), "2024-01-02T00:00:00.000Z"), ({1, 2}, {2, 1.0}),
])
def test_screen_edge_cases(left: Any, right: Any) -> None:
    """The JavaScript-equal pairs, and values without a JSON form equal to their stand-ins,
    screen alike."""
    assert _jsvalue.canonical(left) == _jsvalue.canonical(right)
    assert _core.screen(left) == _core.screen(right)


class _Meddler:
    """A value of no JSON type whose ``repr`` (asked for its stand-in) changes the dicts
    around it: it drops their last member and adds one. The encoders copy a dict's members
    before encoding any, so what either writes is the dict as it was when it was reached."""

    def __init__(self) -> None:
        self.around: list[dict[str, Any]] = []

    def __repr__(self) -> str:
        for owner in self.around:
            if owner:
                owner.pop(next(reversed(owner)))
            owner["added"] = len(owner)
        return "meddler"


class _Int(int):
    pass


_NOT_PLAIN = st.sampled_from(["meddler", "int subclass", "large int", "tuple", "set",
                              "index key", "subclass key", "items"])


def _leaf(kind: str) -> Any:
    return {"meddler": None, "int subclass": _Int(3), "large int": 2**80,
            "tuple": (1, "a"), "set": {1, 2}}.get(kind)


class _Key(str):
    """A key of a ``str`` subclass (its own ``__eq__`` may merge it with another key)."""


@st.composite
def _dicts_with_a_value_read_otherwise(draw: st.DrawFn) -> tuple[list[int], str, list[Any]]:
    """Where in nested exact dicts of plain values (at any depth, in any place among its
    siblings) one member goes that is not plain, what it is, and the plain values around it."""
    path = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    plain = draw(st.lists(st.one_of(st.text(max_size=4), st.integers(-5, 5), st.floats(),
                                    st.booleans(), st.none()), min_size=16, max_size=16))
    return path, draw(_NOT_PLAIN), plain


def _build(path: list[int], kind: str, plain: list[Any]) -> Any:
    """The value ``_dicts_with_a_value_read_otherwise`` describes, built anew (an encoder
    may change it)."""
    meddler = _Meddler()
    dicts: list[dict[Any, Any]] = []

    def level(at: int) -> dict[Any, Any]:
        made: dict[Any, Any] = {}
        dicts.append(made)
        for place in range(4):
            if place != path[at]:
                made[f"k{place}"] = plain[(4 * at + place) % len(plain)]
            elif at + 1 < len(path):
                made[f"k{place}"] = level(at + 1)
            elif kind == "meddler":
                made[f"k{place}"] = meddler
            elif kind == "index key":
                made["7"] = "index"
            elif kind == "subclass key":
                made[_Key(f"k{place}")] = "subclass"
            elif kind == "items":
                made[f"k{place}"] = _Items({"b": 1, "a": [2]})
            else:
                made[f"k{place}"] = _leaf(kind)
        return made

    root = level(0)
    meddler.around = dicts
    return root


@given(case=_dicts_with_a_value_read_otherwise())
def test_dicts_read_in_place_encode_as_their_copies(
    case: tuple[list[int], str, list[Any]],
) -> None:
    """Whatever value of no plain JSON type sits wherever among nested dicts, the core's
    bytes are the Python twin's, including when that value changes the dicts around it as it
    is encoded: both encode each dict as it was when it was reached (its members copied
    first), so no reading of a dict straight from its table may skip that copy unnoticed."""
    assert _core.canonical(_build(*case)).decode("ascii") == _jsvalue._encode(_build(*case))


@pytest.mark.parametrize(("stand_in", "named"), [
    ("lambda value: value", "int64"),  # the very object back: stood in for again, for ever
    ("lambda value: type('Text', (str,), {})('x')", "Text"),  # a str subclass is no JSON type
    ("lambda value: (1, 2)", "tuple"),
])
def test_a_stand_in_of_no_json_type_is_a_clear_error_in_the_core(stand_in: str,
                                                                 named: str) -> None:
    """The core reads the stand-in ``vthread._jsvalue.stand_in`` gives a value of no JSON
    type as a JSON value only when it is of an exact JSON type; any other (were the Python
    twin ever to give one) is a TypeError naming both types, in every entry point that
    meets it, never a stack that overflows. Run apart: the core keeps the function it
    imports first."""
    import subprocess
    import sys
    from pathlib import Path

    program = f"""
import numpy as np
import vthread._jsvalue
vthread._jsvalue.stand_in = {stand_in}
import vthread
thread = [{{"type": "user", "text": np.int64(3)}}] * 6
for call in (lambda: vthread.scan([thread]), lambda: vthread.fingerprint(np.int64(3)),
             lambda: vthread.describe_thread_cycle(thread)):
    try:
        call()
    except TypeError as error:
        print(error)
"""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=root, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    said = f"the stand-in of a int64 value is a {named}, not a JSON value"
    assert done.stdout.splitlines() == [said] * 3, done.stdout


def test_a_chat_message_s_fingerprint_is_warned_about() -> None:
    """A chat message has no type, text or meta: its fingerprint is every other chat
    message's, which the caller is warned of (testers compared runs' chat messages and found
    them all equal, silently). A native message, or one with a type of its own (LangChain's,
    a Responses item), is not warned about, nor is a scan, whose signatures fingerprint its
    messages inside the library."""
    import warnings

    for chat in ({"role": "user", "content": "hello"}, {"role": "assistant", "content": "x"}):
        with pytest.warns(UserWarning, match="to_native") as said:
            fingerprint = vthread.message_fingerprint(chat)
        assert len(said) == 1 and said[0].filename == __file__
        assert fingerprint == vthread.message_fingerprint({"type": None, "text": None})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for other in ({"type": "bot", "text": "hi"}, {"type": "activity", "meta": {}},
                      {"type": "human", "content": "hi"},
                      {"type": "function_call", "call_id": "1", "name": "ls"}):
            vthread.message_fingerprint(other)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        vthread.scan([[{"role": "user", "content": "again"}] * 4])
    assert said and not any("fingerprint" in str(warning.message) for warning in said)
