"""A Python dict whose keys are one JavaScript property name (``1`` and ``"1"``, ``True`` and
``"true"``, a surrogate pair held as two code points and its astral character) is encoded as
the JavaScript object it becomes: one member, at the first key's place, with the last key's
value, as ``JSON.parse`` reads the text ``json.dumps`` writes of it. The Python encoder, the
core's object encoder and its screens agree with the JSON text's reading."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vthread import _core, _jsvalue, _reference, describe_thread_cycle, fingerprint, scan
from vthread._jsvalue import canonical

PAIR = "\ud83c\udf89"  # a surrogate pair held as two code points
EMOJI = "\U0001f389"  # the same JavaScript string

KEYS: list[Any] = [
    "a", "b", "1", 1, 1.0, "1.0", 0, "0", -1, "-1", 1.5, "1.5", 2**60, str(2**60),
    True, "true", False, "false", None, "null",
    float("nan"), "NaN", float("inf"), "Infinity", float("-inf"), "-Infinity",
    EMOJI, PAIR, "x" + EMOJI, "x" + PAIR, "\ud800", "\ud800\udc00", "\U00010000", "é",
]


class _Distinct(str):
    """A key equal to no other, so that a dict holds several with one text: json writes each,
    and JavaScript reads them as one property."""

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = str.__hash__


DISTINCT_KEYS = st.builds(_Distinct, st.sampled_from(["a", "1", "", EMOJI, PAIR]))
ANY_KEY = st.one_of(st.sampled_from(KEYS), DISTINCT_KEYS)

SCALARS = st.one_of(st.integers(-3, 3), st.sampled_from(["s", EMOJI, PAIR, "é"]), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(st.tuples(ANY_KEY, inner), max_size=6).map(dict),
    ),
    max_leaves=12,
)
OBJECTS = st.lists(st.tuples(ANY_KEY, VALUES), max_size=8).map(dict)
SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(OBJECTS)
def test_a_dict_encodes_as_the_object_its_json_text_becomes(value: dict[Any, Any]) -> None:
    text = json.dumps(value)
    parsed = json.loads(text)  # JSON.parse: a repeated key's first place, its last value
    assert fingerprint(value) == _core.fingerprint_json(text.encode())
    assert canonical(value) == canonical(parsed)
    assert _core.canonical(value) == canonical(value).encode()
    assert _core.screen(value) == _core.screen(parsed)


def test_repeated_names_keep_the_first_place_and_the_last_value() -> None:
    value = {"b": 0, EMOJI: 1, "a": 2, PAIR: 3, True: 4, "true": 5, 2: 6, "2": 7}
    expected = '{"2":7,"b":0,"\\ud83c\\udf89":3,"a":2,"true":5}'
    assert canonical(value) == expected
    assert _core.canonical(value) == expected.encode()
    assert json.loads(json.dumps(value)) == {"b": 0, EMOJI: 3, "a": 2, "true": 5, "2": 7}


def test_keys_that_are_one_javascript_property_compare_as_one() -> None:
    first = {"type": "bot", "text": "x", "meta": {EMOJI: 1, PAIR: 2}}
    second = {"type": "bot", "text": "x", "meta": {EMOJI: 2}}
    thread = [{"type": "user", "text": "go"}, first, second]
    line = json.loads(json.dumps(thread))
    assert scan([line], min_pattern_length=1).names == ["repeated_suffix"]
    assert scan([thread], min_pattern_length=1).names == ["repeated_suffix"]


class _RepeatingItems(dict[str, int]):
    """A dict whose ``items()`` names one key twice, as json (and the walk) enumerate it."""

    def items(self) -> Any:
        return [("a", 1), ("b", 2), ("a", 3)]


class _NumpyDistinct(np.str_):
    """A key of a C type that exports a buffer (marshal would write it as bytes, as if no
    subclass were there), equal to no other."""

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = str.__hash__


@pytest.mark.parametrize("value", [
    {_NumpyDistinct("a"): 1, _NumpyDistinct("a"): 3, "b": 2},
    {_Distinct("a"): 1, _Distinct("a"): 3, "b": 2},
    {"a": 1, "b": 2, _Distinct("a"): 3},
    _RepeatingItems(a=3, b=2),
])
@pytest.mark.parametrize("types_told", [True, False])
def test_keys_written_alike_are_one_member_on_every_path(
        value: dict[Any, Any], types_told: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys json writes with one text (a str subclass's own ``__eq__`` told them apart, or a
    dict's ``items()`` repeats one) are one member on the fast path, the walk and the core;
    also when the value's types are not asked (``types_told`` False): the text is then read
    for a repeated key."""
    if not types_told:
        monkeypatch.setattr(_jsvalue, "_of_exact_builtins", lambda value: False)
    assert json.dumps(value, separators=(",", ":")).count('"a"') == 2
    expected = '{"a":3,"b":2}'
    assert canonical(value) == _jsvalue._encode(value) == expected
    assert canonical([{"nested": value}]) == '[{"nested":' + expected + "}]"
    assert _core.canonical(value) == expected.encode()
    assert fingerprint(value) == fingerprint({"a": 3, "b": 2})


def test_a_thread_with_keys_written_alike_is_judged_alike_by_engine_and_reference() -> None:
    repeated = {_Distinct("a"): 1, _Distinct("a"): 2}
    thread = [{"type": "user", "text": "go"},
              {"type": "bot", "text": "x", "meta": repeated},
              {"type": "bot", "text": "x", "meta": {"a": 2}}]
    options = _reference.cycle(min_pattern_length=1)
    assert _reference.describe_thread_cycle(thread, options) == "repeated_suffix"
    assert describe_thread_cycle(thread, min_pattern_length=1) == "repeated_suffix"
    assert scan([thread], min_pattern_length=1).names == ["repeated_suffix"]


def test_non_finite_float_keys_are_named_as_json_names_them() -> None:
    value = {float("nan"): 1, float("inf"): 2, float("-inf"): 3}
    assert json.dumps(value) == '{"NaN": 1, "Infinity": 2, "-Infinity": 3}'
    assert canonical(value) == '{"NaN":1,"Infinity":2,"-Infinity":3}'
    assert _core.canonical(value) == canonical(value).encode()


class _OwnInt(int):
    """An int key whose own conversions say another number than its value."""

    def __int__(self) -> int:
        return 7

    def __index__(self) -> int:
        return 7


class _OwnFloat(float):
    """A float key whose own conversion says another number than its value."""

    def __float__(self) -> float:
        return 9.5


@pytest.mark.parametrize(("value", "text"), [
    ({_OwnInt(3): "x", "7": "y"}, '{"3":"x","7":"y"}'),
    ({_OwnInt(2**70): "x", "7": "y"}, '{"7":"y","1180591620717411303424":"x"}'),
    ({_OwnFloat(2.5): "a", "9.5": "b"}, '{"2.5":"a","9.5":"b"}'),
])
def test_number_keys_of_subclasses_are_named_by_their_values(value: Any, text: str) -> None:
    """A key of an int or float subclass is the property json names it, by its value (as
    ``json.dumps`` writes it), never by its own ``__int__``, ``__index__`` or ``__float__``:
    in the Python encoding, the core's, and the name an excerpt merges keys by."""
    assert _jsvalue.canonical(value) == _core.canonical(value).decode("ascii") == text
    assert [_jsvalue.property_name(key) for key in value] == [
        json.loads(json.dumps({key: 0})).popitem()[0] for key in value]
