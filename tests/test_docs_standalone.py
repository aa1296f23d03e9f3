"""The documentation stands alone: nothing in it sends a reader to files outside the
repository (the specification, benchmark anchors or seed notes this project started from)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTSIDE = ("SPEC.md", "SPEC §", "ANCHORS", "../shared", "shared/seeds", "shared/realdata")


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: path.name)
def test_documents_cite_nothing_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [(number, word) for number, line in enumerate(text.splitlines(), 1)
             for word in OUTSIDE if word in line]
    assert not found, f"{path.name} refers outside the repository at {found}"
