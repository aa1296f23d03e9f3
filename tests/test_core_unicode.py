"""The core's word normal form (``src/unicode.rs``) against ``vthread.guard.normalize``, and
both against production's: JavaScript's ``toLowerCase`` and ``[\\p{L}\\p{N}]`` under Node 20."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from tests.strategies import CODE_POINT_WORDS
from vthread import _core, _js_unicode_tables
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
    """Each code point alone, surrogates included, normalises as in the Python twin."""
    words = [chr(c) for c in range(start, min(start + _BLOCK, _CODE_POINTS))]
    core = [_core._normalize_word(word) for word in words]
    python = [normalize(word) for word in words]
    assert core == python, _first_difference(words)


_CONTEXTS = ["A\u03a3{c}", "{c}\u03a3", "A{c}\u03a3", "\u03a3{c}", "A{c}\u03a3{c}",
             "A\u03a3{c}b"]


@pytest.mark.parametrize("context", _CONTEXTS)
def test_capital_sigma_beside_every_code_point(context: str) -> None:
    """Σ before, after and around every code point lower-cases as in the Python twin.

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
    # Letters and numbers newer than Python 3.11's Unicode 14, which Node 20's has: CJK
    # Extension H (15.0), a Kawi digit (15.0), CJK Extension I (15.1), and capitals whose
    # lower case came with Unicode 16 (U+A7CB) and 17 (U+A7CE).
    ("\U00031350\U0002EBF0", "\U00031350\U0002EBF0"),
    ("\U00011F50", "\U00011F50"),
    ("\uA7CB\uA7CE", "\u0264\uA7CF"),
])
def test_known_words(word: str, expected: str) -> None:
    """Words where Rust's own case tables or ``is_alphanumeric``, or Python's ``str.lower``
    and ``unicodedata``, would differ from JavaScript's."""
    assert normalize(word) == expected
    assert _core._normalize_word(word) == expected


@settings(max_examples=2000)
@given(word=CODE_POINT_WORDS)
def test_any_string(word: str) -> None:
    """Any string, surrogate pairs written as two code points included, as in the twin."""
    assert _core._normalize_word(word) == normalize(word)


def test_tables_are_current() -> None:
    """The committed ``src/unicode_tables.rs`` is what the generator writes for this Python
    and the committed JavaScript data (``vthread/_js_unicode_tables.py``).

    Fails after an upgrade to a Python with other Unicode data: regenerate the tables.
    """
    done = subprocess.run([sys.executable, "tools/unicode_tables.py", "--check"], cwd=_ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


_NODE_NORMALIZE = r"""
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const words = JSON.parse(input);
  const out = words.map((w) => w.toLowerCase().replace(/[^\p{L}\p{N}]/gu, ""));
  process.stdout.write(JSON.stringify(out));
});
"""


def _node_of_the_tables() -> str:
    """The path of a ``node`` whose Unicode is the committed tables'; skips the test when
    there is none (the tables were read from such a Node: ``--from-node``)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to compare with")
    done = subprocess.run([node, "-p", "process.versions.unicode"], capture_output=True,
                          text=True, check=False)
    version = done.stdout.strip()
    if version != _js_unicode_tables.UNICODE_VERSION:
        pytest.skip(f"node has Unicode {version or '?'}, the tables "
                    f"{_js_unicode_tables.UNICODE_VERSION}")
    return node


def _node_normal_forms(node: str, words: list[str]) -> list[str]:
    done = subprocess.run([node, "-e", _NODE_NORMALIZE], input=json.dumps(words),
                          capture_output=True, text=True, check=True, timeout=300)
    forms: list[str] = json.loads(done.stdout)
    return forms


def test_the_normal_form_is_javascripts() -> None:
    """``normalize`` (and so the core, held to it above) gives what Node gives for
    ``w.toLowerCase().replace(/[^\\p{L}\\p{N}]/gu, "")``: every code point alone, Σ beside
    every code point, and random words of delicate characters and new letters. Python's
    ``str.lower`` and ``unicodedata`` differ from it on the letters of Unicode 15 and later."""
    node = _node_of_the_tables()
    alone = [chr(c) for c in range(_CODE_POINTS)]
    contexts = [" ".join(context.format(c=chr(c)) for c in range(_CODE_POINTS))
                for context in _CONTEXTS]
    rng = random.Random(20261205)
    newer = ["\U00031350", "\U0002EBF0", "\U00011F50", "\uA7CB", "\uA7CE", "\U00016EA0"]
    pool = ["\u03a3", "A", "a", "\u0391", "\u1f88", "\U00010400", "'", "\u00ad", "\u02b0",
            "\u0345", "\u0301", "\U0001f3fb", "1", "-", "\u0130", "\u212a", "\u1e9e", " ",
            *newer]
    mixed = ["".join(rng.choices(pool, k=rng.randint(1, 16))) for _ in range(20_000)]
    words = alone + contexts + mixed
    forms = _node_normal_forms(node, words)
    differing = [ascii(w) for w, form in zip(words, forms, strict=True) if normalize(w) != form]
    assert not differing, differing[:5]
