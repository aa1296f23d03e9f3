"""The core's comparison of two values by walking them (``objects::plainly_equal``) against
its twin, the comparison of their canonical encodings (``vthread._jsvalue.canonical``).

The suffix pass, the activity tail's interning and the result run compare candidates this
way before they encode any (a message whose values are plain JSON forms, the common case,
costs no encoding): wherever the walk answers, the answer must be the encodings'; it may
leave any pair to them (None), and must not for pairs of plain values that hold no
surrogate, or it saves nothing.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import HOSTILE_VALUES, JSON_VALUES

from vthread import _core
from vthread._jsvalue import canonical

_EDGE_PAIRS: list[tuple[Any, Any]] = [
    ({"a": 1}, {"a": 1.0}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # (order is part of an object's encoding)
    ({"a": 1}, {"b": 1}),
    ({"a": 1, "b": 1}, {"b": 1, "a": 1}),
    ({"1": 1, "a": 2}, {"a": 2, "1": 1}),  # (an index key comes first either way)
    ("\ud83d\ude00", "\U0001f600"),  # a surrogate pair is the astral character
    ("\ud800", "\ud800"),
    ("\ud800", "\udc00"),
    (None, float("nan")),
    (None, float("inf")),
    (-0.0, 0),
    (True, 1),
    (2**53 + 1, 2**53),
    (2**53 + 1, float(2**53)),
    (2**63 - 1, 2**63 - 2),
    (2**70, 2**70 + 1),
    ([1, {1}], [2, {1}]),  # both the marker whole: equal, though 1 != 2
    ([1, {1}], [1, {2}]),
    ((1, 2), [1, 2]),
    ({1: "a"}, {"1": "a"}),
    ([], {}),
    ("", None),
    ("a", "a" * 1),
    ([[[[[[[[[[]]]]]]]]]], [[[[[[[[[[]]]]]]]]]]),
]


def _cyclic() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _agrees(a: Any, b: Any) -> bool | None:
    told = _core._plainly_equal(a, b)
    assert told is None or told == (canonical(a) == canonical(b)), (a, b, told)
    return told


def test_the_edge_cases_agree_with_the_encodings() -> None:
    for a, b in _EDGE_PAIRS:
        _agrees(a, b)
        _agrees(b, a)
    for depth in (31, 32, 33, 40, 5000):
        _agrees(_nested(depth, 1), _nested(depth, 1))
        _agrees(_nested(depth, 1), _nested(depth, 2))
    _agrees(_cyclic(), _cyclic())
    _agrees(_cyclic(), [1, [1]])


def test_plain_values_are_told_without_the_encodings() -> None:
    """Equal and unequal plain values are answered by the walk (else it saves nothing)."""
    plain = [None, True, 0, -3, 2.5, 1e21, "é", "🎉", [1, "a"], {"a": [1, {"b": None}]}]
    for a in plain:
        for b in plain:
            assert _core._plainly_equal(a, copy.deepcopy(b)) == (a is b), (a, b)


@st.composite
def _near_pairs(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> tuple[Any, Any]:
    """A value and a copy of it with one part perhaps replaced (pairs that agree far into
    their walk), or two values drawn apart."""
    a = draw(values)
    if draw(st.booleans()):
        return a, draw(values)
    b = copy.deepcopy(a)
    container = b
    while isinstance(container, list | dict) and container and draw(st.booleans()):
        keys = list(range(len(container))) if isinstance(container, list) else list(container)
        key = draw(st.sampled_from(keys))
        if draw(st.booleans()) or not isinstance(container[key], list | dict):
            container[key] = draw(values)
            break
        container = container[key]
    return a, b


@settings(max_examples=600, deadline=None)
@given(pair=_near_pairs(JSON_VALUES))
def test_json_values_agree_with_the_encodings(pair: tuple[Any, Any]) -> None:
    _agrees(*pair)


@settings(max_examples=400, deadline=None)
@given(pair=_near_pairs(HOSTILE_VALUES))
def test_hostile_values_agree_with_the_encodings(pair: tuple[Any, Any]) -> None:
    """Subclasses, tuples, sets, NumPy values, cycles, huge integers: left to the encodings,
    or answered as they would answer."""
    _agrees(*pair)


def _tape_agrees(a: Any, b: Any) -> bool | None:
    """The tape walk of two values' JSON texts against the encodings of what Python's json
    reads from those texts (None: the tape declines one, as it does NaN or a lone
    surrogate, left to Python's reading)."""
    texts = [json.dumps(value, ensure_ascii=ascii_only).encode()
             for value, ascii_only in ((a, True), (b, False))]
    told = _core._tape_equal(*texts)
    if told is not None:
        read = [json.loads(text) for text in texts]
        assert told == (canonical(read[0]) == canonical(read[1])), (texts, told)
    return told


_TAPE_PAIRS: list[tuple[bytes, bytes]] = [
    (b"1", b"1.0"), (b"1e400", b"null"), (b"-0", b"0"), (b"-0.0", b"0"),
    (b"9007199254740993", b"9007199254740992"), (b"100000000000000000", b"1e17"),
    (b'"\\u00e9"', '"\u00e9"'.encode()), (b'"\\ud83d\\ude00"', '"\U0001f600"'.encode()),
    (b'"a\\/b"', b'"a/b"'), (b'{"a":1,"b":2}', b'{"b":2,"a":1}'),
    (b'{"1":1,"a":2}', b'{"a":2,"1":1}'), (b'{"1":1,"a":2}', b'{"a":2,"1":3}'),
    (b"[]", b"{}"), (b'""', b"[]"), (b'"x"', b"{}"), (b"[1,2]", b"[1,2,3]"),
    (b'{"a":[1]}', b'{"a":[1],"b":1}'), (b"true", b"1"), (b"null", b'"null"'),
    (b'{"a":1}', b'{"b":1}'), (b'{"a":1,"b":1}', b'{"b":1,"a":1}'),
]


def test_the_tape_walk_agrees_with_the_encodings_on_edge_cases() -> None:
    for a, b in _TAPE_PAIRS:
        for left, right in ((a, b), (b, a)):
            told = _core._tape_equal(left, right)
            assert told == (canonical(json.loads(left)) == canonical(json.loads(right))), (
                left, right, told)


@settings(max_examples=600, deadline=None)
@given(pair=_near_pairs(JSON_VALUES))
def test_the_tape_walk_agrees_with_the_encodings(pair: tuple[Any, Any]) -> None:
    _tape_agrees(*pair)
