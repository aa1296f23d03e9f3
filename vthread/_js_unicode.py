"""JavaScript's lower-casing and letter-or-number test, for the guard's word normal form.

Production normalises a word with ``word.toLowerCase()`` and keeps ``[\\p{L}\\p{N}]``, under
Node 20, whose Unicode is newer than this interpreter's may be (Python 3.11 has Unicode 14;
Node 20 has 15 to 17): ``str.lower`` and ``unicodedata`` would drop the letters of newer
scripts and leave newer capitals as they are. So both are read from Node's own data
(:mod:`vthread._js_unicode_tables`, which the core's tables are generated from too).

Imported only when a word is not ASCII.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Final

from vthread._js_unicode_tables import CASE_IGNORABLE, CASED, LETTER_OR_NUMBER, LOWER

__all__ = ["is_letter_or_number", "lower"]

_SIGMA: Final = "\u03a3"
_LETTER_STARTS: Final = tuple(first for first, _ in LETTER_OR_NUMBER)
_CASED_STARTS: Final = tuple(first for first, _ in CASED)
_IGNORABLE_STARTS: Final = tuple(first for first, _ in CASE_IGNORABLE)
# str.translate's table: each code point alone (Σ by its neighbours, after).
_TRANSLATION: Final = {c: text for c, text in LOWER.items() if c != ord(_SIGMA)}


def _in(ranges: tuple[tuple[int, int], ...], starts: tuple[int, ...], char: str) -> bool:
    at = bisect_right(starts, ord(char)) - 1
    return at >= 0 and ord(char) <= ranges[at][1]


def is_letter_or_number(char: str) -> bool:
    """Whether JavaScript's ``/[\\p{L}\\p{N}]/u`` matches the code point ``char``.

    >>> is_letter_or_number("é"), is_letter_or_number("\\U00031350"), is_letter_or_number("-")
    (True, True, False)
    """
    return _in(LETTER_OR_NUMBER, _LETTER_STARTS, char)


def lower(text: str) -> str:
    """``text.toLowerCase()`` as JavaScript gives it (surrogate pairs joined beforehand).

    A capital sigma lower-cases to the final form when a cased character precedes it and
    none follows it, case-ignorable characters skipped both ways (Unicode's Final_Sigma).
    O(len(text)): each run of case-ignorable characters is walked at most twice.

    >>> lower("ΟΔΟΣ"), lower("İ") == "i\\u0307"
    ('οδος', True)
    """
    if _SIGMA not in text:
        return text.translate(_TRANSLATION)
    pieces = []
    start = 0
    while (at := text.find(_SIGMA, start)) != -1:
        pieces.append(text[start:at].translate(_TRANSLATION))
        pieces.append("\u03c2" if _final_sigma(text, at) else "\u03c3")
        start = at + 1
    pieces.append(text[start:].translate(_TRANSLATION))
    return "".join(pieces)


def _cased(char: str) -> bool:
    return _in(CASED, _CASED_STARTS, char)


def _ignorable(char: str) -> bool:
    return _in(CASE_IGNORABLE, _IGNORABLE_STARTS, char)


def _final_sigma(text: str, at: int) -> bool:
    before = at - 1
    while before >= 0 and _ignorable(text[before]):
        before -= 1
    if before < 0 or not _cased(text[before]):
        return False
    after = at + 1
    while after < len(text) and _ignorable(text[after]):
        after += 1
    return after == len(text) or not _cased(text[after])
