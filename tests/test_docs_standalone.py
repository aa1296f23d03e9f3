"""The documentation and code stand alone: nothing in them sends a reader to files outside
the repository (the specification, benchmark anchors or seed notes this project started
from), nor to documents a reader of the repository cannot open (issues, notes, journals).
Code may read the published agent runs by path, as tests and benchmarks do."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE = [*sorted((ROOT / "vthread").glob("*.py")), *sorted((ROOT / "benchmarks").rglob("*.py")),
        *sorted((ROOT / "benchmarks" / "results").glob("*.json")),
        *sorted((ROOT / "src").glob("*.rs"))]
CITATIONS = ("SPEC.md", "SPEC §", "ANCHORS", "shared/seeds")
OUTSIDE = (*CITATIONS, "../shared", "shared/realdata")
# Documents a reader cannot open, cited in prose. The project has no public tracker, so an
# issue number, in the changelog too, sends the reader nowhere; "an issue" or "the following
# issue" (a quoted SWE-bench prompt) in the general sense stays allowed.
UNREADABLE = tuple(re.compile(pattern, re.IGNORECASE) for pattern in (
    r"\bissues? #?\d+",               # issue 5, issue #10, Issues 3 and 4
    r"\bissue\s*[\"\u201c]",          # issue "A compiled core"
    r"^\|\s*issues?\s*\|",            # a table's "| Issue | 5 |" row
    r"\bthe issue\b",                 # the issue, the target
    r"\(issue\)|\bissue targets?\b",  # (issue), (issue target)
    r"\bresearch note",
    r"\bthe note(?:'s)?\b",           # an outside note; this page calls itself "this note"
    r"\bjournal\b",
    r"\bthe brief\b",
    r"\bthe owner\b",
    r"\btickets? #?\d+",
    r"\btester'?s figures?\b|\(tester\)",
))
SOURCES = [*sorted((ROOT / "vthread").glob("*.py")), *sorted((ROOT / "benchmarks").rglob("*.py")),
           *sorted((ROOT / "src").glob("*.rs"))]


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


def _python_prose(text: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a Python file (any string standing as a statement)."""
    prose = [(token.start[0], token.string) for token in
             tokenize.generate_tokens(io.StringIO(text).readline)
             if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(text)):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            prose += [(node.lineno + offset, line)
                      for offset, line in enumerate(node.value.value.splitlines())]
    return prose


def _rust_prose(text: str) -> list[tuple[int, str]]:
    """The comments of a Rust file (``//``, ``///``, ``//!`` to the end of the line)."""
    return [(number, line[line.index("//"):]) for number, line in enumerate(text.splitlines(), 1)
            if "//" in line]


def _unreadable(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(number, found.group(0)) for number, line in lines for pattern in UNREADABLE
            if (found := pattern.search(line))]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: path.name)
def test_documents_cite_no_unreadable_document(path: Path) -> None:
    """No document cites an issue, note or journal the reader cannot open: it says the thing."""
    text = path.read_text(encoding="utf-8")
    found = _unreadable(list(enumerate(text.splitlines(), 1)))
    assert not found, f"{path.name} cites a document the reader cannot open at {found}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_code_prose_cites_no_unreadable_document(path: Path) -> None:
    """No comment or docstring explains itself by an issue, note or journal."""
    text = path.read_text(encoding="utf-8")
    prose = _python_prose(text) if path.suffix == ".py" else _rust_prose(text)
    found = _unreadable(prose)
    assert not found, f"{path.relative_to(ROOT)} cites a document the reader cannot open at {found}"


@pytest.mark.parametrize("line", [
    "| Issue | 5 |", "H5-H8 from issue #10, before the work", "the issue's 6x",
    "From the research note (a harness)", "the harness journal this project started from",
    "The decision (issue \"A compiled core\")", "| `--jobs 2` >= 1.6x (issue) |",
    "(issue target)", "a harness tester's figures", "319 s (tester)", "the note's 1,200",
])
def test_unreadable_patterns_catch_citations(line: str) -> None:
    """Each pattern catches the kind of citation it was written for ..."""
    assert _unreadable([(1, line)])


@pytest.mark.parametrize("line", [
    "We're currently solving the following issue ...", "a known issue with gzip",
    "This note explains how the guard keeps", "the session's start", "other sessions' work",
    "iteration changes its owner", "a filler note", "journald",
])
def test_unreadable_patterns_spare_ordinary_prose(line: str) -> None:
    """... and spares the ordinary words the documents use."""
    assert not _unreadable([(1, line)])
