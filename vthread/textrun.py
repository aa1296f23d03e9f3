"""Runaway repetition inside one block of text: a model cycling the same few sentences."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from vthread._jsvalue import JS_WHITESPACE, is_string, utf16_tail
from vthread._options import TextRunOptions, text_run_options

__all__ = [
    "TAIL_UNITS",
    "has_repeated_text_run",
    "repeated_text_start",
    "text_units",
    "text_units_and_repeat",
]

TAIL_UNITS: Final = 4000
"""Only the last 4000 UTF-16 code units of a text are read, so the cost is bounded."""

_UNIT_SEPARATORS: Final = re.compile(r"[.!?\n]+")
_NOT_WORDLIKE: Final = re.compile(r"[^a-z0-9" + re.escape(JS_WHITESPACE) + r"]+")
_JS_SPACES: Final = re.compile("[" + re.escape(JS_WHITESPACE) + "]+")


def text_units(text: str) -> list[str]:
    """The normalised sentence-like units of the last 4000 UTF-16 units of ``text``.

    Units split on runs of ``.``, ``!``, ``?`` and ``\\n``; each is lower-cased, every run of
    characters outside ``[a-z0-9]`` and JavaScript whitespace becomes one space, whitespace
    collapses and the ends are trimmed; empty units are dropped.
    """
    units = []
    for raw in _UNIT_SEPARATORS.split(utf16_tail(text, TAIL_UNITS)):
        unit = _normalised(raw)
        if unit:
            units.append(unit)
    return units


def repeated_text_start(text: str) -> str | None:
    """The text read from the first sentence-like unit that occurs again later, as written
    (not normalised), or None when no unit repeats: the start of a runaway, for a person.

    >>> repeated_text_start("Intro. Checking now. Checking now.")
    ' Checking now. Checking now.'
    """
    tail = utf16_tail(text, TAIL_UNITS)
    starts: dict[str, int] = {}
    repeated: set[str] = set()
    position = 0
    for match in [*_UNIT_SEPARATORS.finditer(tail), None]:
        end = match.start() if match is not None else len(tail)
        unit = _normalised(tail[position:end])
        if unit:
            if unit in starts:
                repeated.add(unit)
            else:
                starts[unit] = position
        position = match.end() if match is not None else len(tail)
    if not repeated:
        return None
    return tail[min(starts[unit] for unit in repeated):]


def text_units_and_repeat(text: str) -> tuple[list[str], str | None]:
    """``(text_units(text), repeated_text_start(text))`` in one reading of the text's units
    (a text run's signature takes the one, its excerpt the other)."""
    tail = utf16_tail(text, TAIL_UNITS)
    units: list[str] = []
    starts: dict[str, int] = {}
    repeated_from = len(tail) + 1  # the earliest start of a unit seen twice (none yet)
    position = 0
    for match in [*_UNIT_SEPARATORS.finditer(tail), None]:
        end = match.start() if match is not None else len(tail)
        unit = _normalised(tail[position:end])
        if unit:
            units.append(unit)
            start = starts.setdefault(unit, position)
            if start != position:
                repeated_from = min(repeated_from, start)
        position = match.end() if match is not None else len(tail)
    return units, tail[repeated_from:] if repeated_from <= len(tail) else None


def _normalised(raw: str) -> str:
    # A str's units through a cache: a runaway text is the same few units written over and
    # over, and it is its units that are read (its copies counted, its signature and excerpt
    # made). A str subclass (its own hash and equality) is normalised afresh.
    return _normalised_str(raw) if type(raw) is str else _normalise(raw)


@lru_cache(maxsize=1024)
def _normalised_str(raw: str) -> str:
    # At most 1,024 units (and their normal forms) of at most TAIL_UNITS characters each.
    return _normalise(raw)


def _normalise(raw: str) -> str:
    unit = _NOT_WORDLIKE.sub(" ", raw.lower())
    return _JS_SPACES.sub(" ", unit).strip(JS_WHITESPACE)


def may_hold_units(text: object, min_units: int) -> bool:
    """Whether ``text`` has enough separators to hold ``min_units`` units: n units need at
    least n - 1 separators, so most texts are rejected without splitting. Only the last
    TAIL_UNITS code points are counted: they hold every unit that is read."""
    if not is_string(text) or not str.__len__(text):  # (by content: a subclass may lie)
        return False
    tail = str.__str__(text)[-TAIL_UNITS:]
    count = tail.count(".") + tail.count("!") + tail.count("?") + tail.count("\n")
    return count + 1 >= min_units


def runaway(text: object, options: TextRunOptions) -> bool:
    """:func:`has_repeated_text_run` with resolved options."""
    if not is_string(text) or not may_hold_units(text, options.min_units):
        return False
    return runaway_units(text_units(text), options)


def runaway_units(units: list[str], options: TextRunOptions) -> bool:
    """The runaway decision on a text's units (see :func:`text_units`)."""
    if len(units) < options.min_units:
        return False
    recent = units[-options.window :]
    return len(set(recent)) <= len(recent) * options.max_unique_ratio


def has_repeated_text_run(
    text: object,
    *,
    min_units: float | None = None,
    window: float | None = None,
    max_unique_ratio: float | None = None,
) -> bool:
    """Whether ``text`` ends in a runaway run of repeated sentences.

    Among the last ``window`` units (default ``max(min_units, 64)``), at most
    ``window_len * max_unique_ratio`` (default 0.5) may be distinct; at least ``min_units``
    (default 8) units are needed at all. A non-string or empty text is never a runaway.
    O(min(len(text), 4000)).

    >>> has_repeated_text_run("Let me check. " * 10)
    True
    >>> has_repeated_text_run("One. Two. Three. Four. Five. Six. Seven. Eight.")
    False
    """
    if type(text) is not str and said_as_no_text(text):  # (a str is not asked: every turn's)
        _say_not_text(text)
    return runaway(text, text_run_options(min_units, window, max_unique_ratio))


def _say_not_text(value: object) -> None:
    """A value that is no str is no text (never a runaway, as in production), but most
    likely bytes read in binary mode, or a record or number passed for its text: said, as
    ``scan_texts`` and ``Guard.push`` say it, not answered False in silence."""
    import warnings

    if isinstance(value, BYTES):
        said = "reads bytes as no text, as it reads any value that is not a str: decode them"
    else:
        said = (f"reads a value of type {type(value).__name__} as no text, as it reads any "
                "value that is not a str: pass the text it holds")
    warnings.warn(f"has_repeated_text_run() {said}", UserWarning, stacklevel=3)


def said_as_no_text(value: object) -> bool:
    """Whether ``value``, given for a text, is no text to be said of (:func:`_say_not_text`,
    ``replay``'s batches): no str by its type, nor None, nor a data frame's missing value
    (:func:`_missing_text`), which go unsaid."""
    return (type(value) is not str and value is not None and not is_string(value)
            and not _missing_text(value))


def _missing_text(value: object) -> bool:
    """Whether ``value`` is how a data frame says a text is missing: a float NaN (pandas'
    ``NaN``, NumPy's) or pandas' ``NA``."""
    if isinstance(value, float):
        return value != value
    kind = type(value)
    return kind.__name__ == "NAType" and kind.__module__.startswith("pandas")


BYTES: Final = (bytes, bytearray, memoryview)
"""What is bytes, said of when given for a text."""
