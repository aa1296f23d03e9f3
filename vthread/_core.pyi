"""Type stubs of the compiled core, ``vthread._core`` (built from ``src/`` by maturin)."""

from typing import Any

__version__: str

def canonical(value: Any) -> bytes:
    """``vthread._jsvalue.canonical(value)`` as ASCII bytes, made in Rust."""

def fingerprint(value: Any) -> int:
    """Unsigned 64-bit XXH3 of ``value``'s canonical encoding."""

def canonical_json(data: bytes) -> bytes:
    """``canonical(json.loads(data))`` read straight from the bytes of one JSON text.

    Raises ValueError with ``json.loads``' own message where it rejects ``data``.
    """

def fingerprint_json(data: bytes) -> int:
    """Unsigned 64-bit XXH3 of ``canonical_json(data)``."""
