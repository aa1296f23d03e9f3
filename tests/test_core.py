"""The compiled core, ``vthread._core``, across the Python boundary."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib.metadata import version
from typing import Any

import pytest
import xxhash
from hypothesis import given
from strategies import JSON_VALUES

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
    """Every SPEC §1 edge case encodes as the Python twin encodes it."""
    assert _core.canonical(value).decode("ascii") == _jsvalue._encode(value)
