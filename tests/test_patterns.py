"""The package's text patterns: linear by construction, and equal to the patterns they replace.

Issue #12, finding 1: ``_NAMED_PAGE_LIST``, ``_DECIMAL_LITERAL`` and mini-swe-agent's bash
block were quadratic on hostile text. Their growth is checked in
``benchmarks/test_bench_patterns.py``; here, that every compiled pattern has no repeat inside
an unbounded repeat and no two adjacent unbounded repeats of overlapping characters (the two
shapes a backtracking engine explores in quadratic time), and that each rewrite gives the old
answers.
"""

from __future__ import annotations

import math
import re
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vthread import _attribution, _jsvalue, adapters, continuation, guard, textrun, volatile

_MODULES = (_attribution, _jsvalue, adapters, continuation, guard, textrun, volatile)
_PATTERNS = sorted(
    (f"{module.__name__}.{name}", value)
    for module in _MODULES
    for name, value in vars(module).items()
    if isinstance(value, re.Pattern)
)
_UNBOUNDED = sre_constants.MAXREPEAT
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)
# Characters probed to decide whether two repeated classes overlap.
_PROBES = [chr(code) for code in range(128)] + ["\u00a0", "\u2028", "\u3000", "é", "\u0660"]


def _children(item: tuple[Any, Any]) -> list[Any]:
    op, argument = item
    if op in _REPEATS:
        return [argument[2]]
    if op == sre_constants.SUBPATTERN:
        return [argument[3]]
    if op == sre_constants.BRANCH:
        return list(argument[1])
    if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
        return [argument[1]]
    if op == sre_constants.ATOMIC_GROUP:
        return [argument]
    return []


def _has_unbounded(sequence: Any) -> bool:
    for item in sequence:
        if item[0] in _REPEATS and item[1][1] == _UNBOUNDED:
            return True
        if any(_has_unbounded(child) for child in _children(item)):
            return True
    return False


def _single_class(item: tuple[Any, Any]) -> re.Pattern[str] | None:
    """The repeated character class of an unbounded repeat of one character, else None."""
    op, argument = item
    if op not in _REPEATS or argument[1] != _UNBOUNDED or len(argument[2]) != 1:
        return None
    (inner,) = list(argument[2])
    if inner[0] not in (sre_constants.IN, sre_constants.LITERAL, sre_constants.CATEGORY,
                        sre_constants.ANY, sre_constants.NOT_LITERAL):
        return None
    single = _parser.SubPattern(argument[2].state, [inner])
    return re.compile(_unparse_class(single))


def _unparse_class(single: Any) -> str:
    # The probes are matched through a one-item pattern made from the parsed item itself.
    code = single.data[0]
    op, argument = code
    if op == sre_constants.LITERAL:
        return re.escape(chr(argument))
    if op == sre_constants.NOT_LITERAL:
        return "[^" + re.escape(chr(argument)) + "]"
    if op == sre_constants.ANY:
        return "(?s:.)"
    if op == sre_constants.CATEGORY:
        return _CATEGORIES[argument]
    parts = []
    for part_op, part in argument:
        if part_op == sre_constants.NEGATE:
            parts.append("^")
        elif part_op == sre_constants.LITERAL:
            parts.append(re.escape(chr(part)))
        elif part_op == sre_constants.RANGE:
            parts.append(re.escape(chr(part[0])) + "-" + re.escape(chr(part[1])))
        else:
            parts.append(_CATEGORIES[part])
    return "[" + "".join(parts) + "]"


_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: r"\d",
    sre_constants.CATEGORY_NOT_DIGIT: r"\D",
    sre_constants.CATEGORY_SPACE: r"\s",
    sre_constants.CATEGORY_NOT_SPACE: r"\S",
    sre_constants.CATEGORY_WORD: r"\w",
    sre_constants.CATEGORY_NOT_WORD: r"\W",
}


def _may_be_empty(item: tuple[Any, Any]) -> bool:
    op, argument = item
    return op in _REPEATS and argument[0] == 0 and argument[1] == 1 and len(argument[2]) == 1


def _problems(sequence: Any, inside_unbounded: bool = False) -> list[str]:
    problems = []
    items = list(sequence)
    for position, item in enumerate(items):
        op, argument = item
        unbounded = op in _REPEATS and argument[1] == _UNBOUNDED
        if unbounded and inside_unbounded:
            problems.append("an unbounded repeat inside an unbounded repeat")
        if unbounded and _has_unbounded(argument[2]):
            problems.append("an unbounded repeat of a subpattern that has one")
        first = _single_class(item)
        if first is not None:
            for later in items[position + 1 :]:
                second = _single_class(later)
                if second is not None and any(
                    first.fullmatch(c) and second.fullmatch(c) for c in _PROBES
                ):
                    problems.append("adjacent unbounded repeats of overlapping classes")
                if not _may_be_empty(later):
                    break
        for child in _children(item):
            problems += _problems(child, inside_unbounded or unbounded)
    return problems


def test_the_patterns_are_found() -> None:
    """The scan below sees the patterns this issue is about."""
    names = {name for name, _ in _PATTERNS}
    assert "vthread.continuation._NAMED_PAGE_LIST" in names
    assert "vthread._jsvalue._DECIMAL_LITERAL" in names


@pytest.mark.parametrize(("name", "pattern"), _PATTERNS, ids=[n for n, _ in _PATTERNS])
def test_no_pattern_can_backtrack_quadratically(name: str, pattern: re.Pattern[str]) -> None:
    """No nested unbounded repeats, no adjacent overlapping ones (the quadratic shapes)."""
    assert _problems(_parser.parse(pattern.pattern, pattern.flags)) == []


@pytest.mark.parametrize(
    "source",
    [r"\b(?:a|b)(?:\s*,\s*(?:a|b)\b)+\s+x", r"[0-9]+\.?[0-9]*", r"(?:x+)*y", r"\s+\s*"],
)
def test_the_check_finds_the_quadratic_shapes(source: str) -> None:
    """The old patterns' shapes are caught by the check above."""
    assert _problems(_parser.parse(source, 0))


# The patterns as they were, for the equal-answer properties.
_OLD_NAMED_PAGE_LIST = re.compile(
    rf"\b{continuation._PAGE_NAME}(?:\s*(?:,|/|&|\band\b|,\s*and\b)\s*"
    rf"{continuation._PAGE_NAME}\b)+\s+pages\b",
    re.IGNORECASE,
)
_OLD_DECIMAL_LITERAL = re.compile(
    r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
)

_PAGE_WORDS = st.lists(
    st.sampled_from(["home", "About", "about us", "contact", "sign-up", "product", "products",
                     "blog", "x", ",", "/", "&", "and", "pages", "page", " ", "  ", "\n",
                     ", and", "homes", "us"]),
    max_size=12,
).map("".join)


@given(_PAGE_WORDS)
def test_named_page_list_answers_as_before(text: str) -> None:
    """One separator between two names finds exactly the lists the repeated form found."""
    assert bool(continuation._NAMED_PAGE_LIST.search(text)) == bool(
        _OLD_NAMED_PAGE_LIST.search(text)
    )


@given(st.lists(st.sampled_from(["1", "0", ".", "e", "E", "+", "-", "Infinity", "x"]),
                max_size=8).map("".join))
def test_decimal_literal_answers_as_before(text: str) -> None:
    """The rewritten decimal literal accepts exactly the strings the old one accepted."""
    assert bool(_jsvalue._DECIMAL_LITERAL.fullmatch(text)) == bool(
        _OLD_DECIMAL_LITERAL.fullmatch(text)
    )


@given(st.lists(st.sampled_from(["```bash", "```", "\n", " ", "\t", "x", "`", "\u2028",
                                 "\n```"]), max_size=12).map("".join))
def test_bash_blocks_are_the_patterns_findall(text: str) -> None:
    """The hand scan finds the blocks ``re.findall`` finds with mini-swe-agent's pattern."""
    assert adapters._bash_blocks(text) == re.findall(adapters._BASH_BLOCK, text, re.DOTALL)


@given(st.lists(st.sampled_from(["```bash", "```", "`", "<function=", "<function", "<", "a",
                                 "ba"]), max_size=12).map("".join),
       st.sampled_from(["```bash", "<function="]), st.integers(0, 40))
def test_finding_a_word_by_its_first_character_is_str_find(text: str, word: str,
                                                           position: int) -> None:
    """The search the block scanners use is ``str.find``."""
    assert adapters._find_by_first(text, word, position) == text.find(word, position)


def test_hostile_texts_get_the_old_answers() -> None:
    """The inputs that were quadratic still get the answers they got (small sizes)."""
    assert continuation.is_multi_page_request("home, " * 300) is False
    assert continuation.is_multi_page_request("home, " * 300 + "about pages") is True
    assert math.isnan(_jsvalue.js_string_to_number("1" * 300 + "x"))
    assert _jsvalue.js_string_to_number("1" * 300 + ".5e1") == float("1" * 300 + "5")
    assert adapters._bash_blocks("```bash" + "\n" * 300) == []
