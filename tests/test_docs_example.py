"""The example thread in README.md and docs/api.md gets the verdict the docs say it gets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import vthread

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = re.compile(r"<!-- example-thread: (\w+) -->\n```json\n(.*?)```", re.S)


@pytest.mark.parametrize("name", ["README.md", "docs/api.md"])
def test_documented_example_thread_gets_its_documented_verdict(name: str) -> None:
    """Every marked example thread parses and scans to the verdict named in its marker."""
    examples = EXAMPLE.findall((ROOT / name).read_text(encoding="utf-8"))
    assert examples, f"{name} has no marked example thread"
    for verdict, block in examples:
        thread = json.loads(block)
        assert vthread.describe_thread_cycle(thread) == verdict
        assert vthread.scan([thread]).names == [verdict]
