"""The core's split of a JSON document into its runs (``_core.DocumentSplitter``): the runs
it calls plain JSON (the tape reads them) are not read by Python to find a break, so every
one of them must be JSON Python reads."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vthread import _core

FIRST = b'{"messages": []}'

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text("ab_\u00e9", max_size=5), children, max_size=4),
    max_leaves=20,
)


def _marked(element: bytes) -> bool:
    """Whether the splitter calls ``element``, the second of an array of runs, plain JSON."""
    found = _core.DocumentSplitter().feed(b"[" + FIRST + b", " + element + b", 1]")
    assert found is not None
    texts, plain, _ = found
    assert texts[1] == element.strip(b" \t\r\n")
    return bool(plain[1])


def _python_reads(element: bytes) -> bool:
    try:
        json.loads(element.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(json_values, st.booleans(), st.data())
def test_what_the_core_calls_json_python_reads(value: Any, ascii_only: bool,
                                               data: st.DataObject) -> None:
    """An element the core calls plain JSON is one Python's json reads, whole or damaged by a
    byte deleted, replaced or inserted; a drawn value without NaN, an infinity, a long integer
    or an escaped key (what the tape leaves to Python) is called plain."""
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert not _marked(text) or _python_reads(text)
    if not ascii_only and not re.search(rb"NaN|Infinity|[0-9]{19}", text):
        assert _marked(text), text
    at = data.draw(st.integers(0, max(0, len(text) - 1)))
    byte = data.draw(st.integers(0, 255)).to_bytes(1, "big")
    for damaged in (text[:at] + text[at + 1:], text[:at] + byte + text[at + 1:],
                    text[:at] + byte + text[at:]):
        if not damaged.strip() or _splits_elsewhere(damaged):
            continue
        assert not _marked(damaged) or _python_reads(damaged), damaged


def _splits_elsewhere(element: bytes) -> bool:
    """Whether ``element`` would not stay one element of the array (a comma or bracket at
    its top level, an unclosed string): such damage is the split's to find, not this test's."""
    found = _core.DocumentSplitter().feed(b"[" + FIRST + b", " + element + b", 1]")
    return found is None or found[0][1:] != [element.strip(b" \t\r\n"), b"1"]


@given(st.binary(max_size=40))
def test_bytes_the_core_calls_json_python_reads(element: bytes) -> None:
    """Any bytes the core calls plain JSON, Python's json reads."""
    if element.strip() and not _splits_elsewhere(element):
        assert not _marked(element) or _python_reads(element)


def test_a_million_arrays_one_after_another_are_split_in_one_pass() -> None:
    """Arrays one after another, each a later array's first element told as it is split:
    a block of a million tiny arrays splits in one pass (each element's opening was looked
    for among all the block's, and 1 MB of them took 30 s; a reviewer's). Run apart, so
    that a regression ends at the timeout instead of holding the suite."""
    import subprocess
    import sys
    from pathlib import Path

    program = ("from vthread import _core; found = _core.DocumentSplitter(None).feed("
               "b'[[]]' * 1_000_000); print(len(found[0]))")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=root, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "1000000\n"), done.stderr
