"""loads_exactly: orjson's speed where it reads as json.loads does, json.loads elsewhere."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vthread._exact_json import loads_exactly

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**80), 2**80) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=4),
    max_leaves=12)


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types throughout (1 and 1.0 differ here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_equals_json_loads_value_and_type(value: Any) -> None:
    """Integers beyond 64 bits stay integers (orjson would round them to floats)."""
    text = json.dumps(value).encode()
    assert _same(loads_exactly(text), json.loads(text))


@pytest.mark.parametrize("text", [b'"\\ud800"', b"[1e400]", b'{"a":1,"a":2}', b"1" * 30])
def test_what_only_json_reads_is_read_by_json(text: bytes) -> None:
    assert _same(loads_exactly(text), json.loads(text))
    assert math.isnan(loads_exactly(b"NaN"))


def test_errors_are_json_errors() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_exactly(b"{not json")


def test_orjson_short_of_memory_is_read_again_by_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson out of memory returns a value with a MemoryError set, which Python reports as
    a SystemError (a 30 MB line under ``ulimit -v``, an internal error of ``vthread scan``):
    the standard module reads the text again, and raises MemoryError if memory is still
    short."""
    from vthread import _exact_json

    def short_of_memory(text: bytes) -> Any:
        raise SystemError("<built-in function loads> returned a result with an exception "
                          "set") from MemoryError()

    monkeypatch.setattr(_exact_json, "fast_loads", short_of_memory)
    assert loads_exactly(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}

    def broken(text: bytes) -> Any:
        raise SystemError("error return without exception set")

    monkeypatch.setattr(_exact_json, "fast_loads", broken)
    with pytest.raises(SystemError, match="without exception set"):
        loads_exactly(b'{"a": 1}')


def test_orjson_reads_a_long_text_only_where_its_memory_can_be_had(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson ends the process where an allocation fails, so a text of a megabyte or more is
    given to it only when the memory its objects may take can be had now; else ``json``
    reads it (and raises MemoryError where memory is short)."""
    from vthread import _core, _exact_json

    asked: list[int] = []

    def refused(size: int) -> bool:
        asked.append(size)
        return False

    read_by_orjson: list[bytes] = []

    def orjson_loads(text: bytes) -> Any:
        read_by_orjson.append(text)
        return json.loads(text)

    long_text = b"[" + b"{}," * 400_000 + b"{}]"
    monkeypatch.setattr(_core, "room_for", refused)
    monkeypatch.setattr(_exact_json, "fast_loads", orjson_loads)
    assert loads_exactly(long_text) == [{}] * 400_001
    assert asked == [len(long_text) * _exact_json.OBJECT_BYTES_PER_BYTE]
    assert read_by_orjson == []
    assert loads_exactly(b"[1]") == [1]  # short: not asked, read by orjson
    assert asked == [len(long_text) * _exact_json.OBJECT_BYTES_PER_BYTE]
    assert read_by_orjson == [b"[1]"]
    monkeypatch.undo()
    assert _core.room_for(1 << 20)
    assert not _core.room_for(1 << 62)  # more than an address space holds
