"""The documentation and code stand alone: nothing in them sends a reader to files outside
the repository (the specification, benchmark anchors or seed notes this project started
from). Code may read the published agent runs by path, as tests and benchmarks do."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = [*sorted((ROOT / "vthread").glob("*.py")), *sorted((ROOT / "benchmarks").rglob("*.py")),
        *sorted((ROOT / "benchmarks" / "results").glob("*.json")),
        *sorted((ROOT / "src").glob("*.rs"))]
CITATIONS = ("SPEC.md", "SPEC §", "ANCHORS", "shared/seeds")
OUTSIDE = (*CITATIONS, "../shared", "shared/realdata")


def _cited(path: Path, words: tuple[str, ...]) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    return [(number, word) for number, line in enumerate(text.splitlines(), 1)
            for word in words if word in line]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: path.name)
def test_documents_cite_nothing_outside_the_repository(path: Path) -> None:
    """No document names a file a reader of the repository cannot open."""
    found = _cited(path, OUTSIDE)
    assert not found, f"{path.name} refers outside the repository at {found}"


@pytest.mark.parametrize("path", CODE, ids=lambda path: str(path.relative_to(ROOT)))
def test_code_cites_no_outside_document(path: Path) -> None:
    """No comment or docstring explains itself by the specification or anchor notes."""
    found = _cited(path, CITATIONS)
    assert not found, f"{path.relative_to(ROOT)} cites an outside document at {found}"
