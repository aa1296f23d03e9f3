"""The core's word normal form (``src/unicode.rs``) against ``vthread.guard.normalize``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from tests.strategies import CODE_POINT_WORDS
from vthread import _core
from vthread.guard import normalize

_ROOT = Path(__file__).resolve().parent.parent
_CODE_POINTS = 0x11_0000
_BLOCK = 1 << 14
_SIGMA = "\u03a3"


def _first_difference(words: list[str]) -> str | None:
    """The first word whose normal forms differ, as ASCII, or None."""
    for word in words:
        if _core._normalize_word(word) != normalize(word):
            return ascii(word)
    return None


@pytest.mark.parametrize("start", range(0, _CODE_POINTS, _BLOCK))
def test_every_code_point_alone(start: int) -> None:
    """Each code point alone, surrogates included, normalises as in Python."""
    words = [chr(c) for c in range(start, min(start + _BLOCK, _CODE_POINTS))]
    core = [_core._normalize_word(word) for word in words]
    python = [normalize(word) for word in words]
    assert core == python, _first_difference(words)


_CONTEXTS = ["A\u03a3{c}", "{c}\u03a3", "A{c}\u03a3", "\u03a3{c}", "A{c}\u03a3{c}",
             "A\u03a3{c}b"]


@pytest.mark.parametrize("context", _CONTEXTS)
def test_capital_sigma_beside_every_code_point(context: str) -> None:
    """Σ before, after and around every code point lower-cases as in Python.

    The words of a block are joined by spaces, which are neither cased nor case-ignorable,
    so each word is its own Final_Sigma context; a difference is then looked for word by word.
    """
    for start in range(0, _CODE_POINTS, _BLOCK):
        words = [context.format(c=chr(c)) for c in range(start, min(start + _BLOCK, _CODE_POINTS))]
        joined = " ".join(words)
        assert _core._normalize_word(joined) == normalize(joined), _first_difference(words)


@pytest.mark.parametrize(("word", "expected"), [
    ("\u039f\u0394\u039f\u03a3", "\u03bf\u03b4\u03bf\u03c2"),
    ("\u03a3\u0391\u03a3", "\u03c3\u03b1\u03c2"),
    ("\u03a3", "\u03c3"),
    ("A\u0345\u03a3", "a\u03c2"),
    ("\u0345\u03a3", "\u03c3"),
    ("\u0391\u03a3\u0345\u0392", "\u03b1\u03c3\u03b2"),
    ("\u0391'\u03a3", "\u03b1\u03c2"),
    ("\u0391-\u03a3", "\u03b1\u03c3"),
    ("\u0130stanbul", "istanbul"),
    ("\u0345\u0bc6", ""),
    ("\u2167\u00b2", "\u2177\u00b2"),
    ("\ud801\udc00\ud800", "\U00010428"),
    ("\udc00\ud801", ""),
    ("Don't!", "dont"),
])
def test_known_words(word: str, expected: str) -> None:
    """Words where Rust's own case tables or ``is_alphanumeric`` would differ from Python."""
    assert normalize(word) == expected
    assert _core._normalize_word(word) == expected


@settings(max_examples=2000)
@given(word=CODE_POINT_WORDS)
def test_any_string(word: str) -> None:
    """Any string, surrogate pairs written as two code points included, as in Python."""
    assert _core._normalize_word(word) == normalize(word)


def test_tables_are_current() -> None:
    """The committed ``src/unicode_tables.rs`` is what the generator writes for this Python.

    Fails after an upgrade to a Python with other Unicode data: regenerate the tables.
    """
    done = subprocess.run([sys.executable, "tools/unicode_tables.py", "--check"], cwd=_ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
