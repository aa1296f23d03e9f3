"""Bulk replay of recorded outputs: where would a guard have stopped each text?

:func:`scan_texts` answers, for many finished texts at once, what a :class:`~vthread.guard.Guard`
fed each text one character at a time would do: ``None``, or the :class:`GuardTrip` with the
offset just past the word that tripped it and the :class:`~vthread.guard.GuardReason`. It is
the bulk twin of the streaming guard (``Guard.push`` on one stream / ``scan_texts`` on many),
and :func:`has_repeated_text_runs` is the bulk twin of
:func:`vthread.textrun.has_repeated_text_run`.

Both run in the compiled core over all texts at once, with the GIL released and every core
busy: each text is fed to the core's guard state machine (the one behind ``Guard.push``)
straight from the ``str``'s own storage, with ``min_chars`` counted character by character.
Memory is one guard's window per core, whatever the texts' lengths.

>>> trips = scan_texts(["fine text here", "again and " * 6], ngram=2, max_repeats=3)
>>> trips[0] is None, trips[1].offset, trips[1].reason.phrase
(True, 29, 'again and')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from vthread import _core
from vthread._jsvalue import JS_WHITESPACE, utf16_tail
from vthread._options import guard_options, text_run_options
from vthread.guard import GuardReason
from vthread.textrun import TAIL_UNITS

__all__ = ["GuardTrip", "has_repeated_text_runs", "scan_texts"]


@dataclass(frozen=True, slots=True)
class GuardTrip:
    """Where and why a guard fed the text character by character would trip.

    ``offset`` is the index in the text (Python ``str``) just past the word that tripped
    the guard, ``offset_utf16`` the same position in UTF-16 code units (JavaScript's
    index).
    """

    offset: int
    offset_utf16: int
    reason: GuardReason


def _text_list(texts: Iterable[object], function: str) -> list[object]:
    """``texts`` as a list; a bare string is a ``TypeError`` (it would iterate characters)."""
    if isinstance(texts, (str, bytes, bytearray)):
        raise TypeError(
            f"{function}() takes an iterable of texts, got a single {type(texts).__name__}; "
            "wrap it in a list"
        )
    return texts if isinstance(texts, list) else list(texts)


def scan_texts(
    texts: Iterable[object],
    *,
    ngram: float | None = None,
    window: float | None = None,
    max_repeats: float | None = None,
    max_unique_ratio: float | None = None,
    min_chars: float | None = None,
) -> list[GuardTrip | None]:
    """For each text, where a :class:`~vthread.guard.Guard` fed it one character at a time
    would trip, or None. A text that is not a ``str`` never trips; a bare ``str`` instead
    of an iterable of texts is a ``TypeError``.

    The keywords are the guard's. With ``min_chars`` the guard counts the characters it
    has been fed, so a word can only trip once the characters up to and including the
    whitespace that completes it reach ``min_chars``. O(total characters), on every core.
    """
    options = guard_options(ngram, window, max_repeats, max_unique_ratio, min_chars)
    items = _text_list(texts, "scan_texts")
    return [
        None if found is None else GuardTrip(
            offset=found[0],
            offset_utf16=found[1],
            reason=GuardReason(
                phrase=found[2],
                count=found[3],
                text=found[4],
                unique_ratio=found[5],
                hapax_ratio=found[6],
            ),
        )
        for found in _core.scan_texts(items, options)
    ]


# ------------------------------------------------------------------------------ text runs

_SEPARATOR_CHARS: Final = ".!?\n"
_NOT_WORDLIKE: Final = re.compile(
    "[^a-z0-9" + re.escape(JS_WHITESPACE + _SEPARATOR_CHARS) + "]+"
)
_SPACES_NOT_NEWLINE: Final = re.compile(
    "[" + re.escape(JS_WHITESPACE.replace("\n", "")) + "]+"
)
_UNIT: Final = re.compile(r"[^.!?\n ](?:[^.!?\n]*[^.!?\n ])?")


def _units(text: str) -> list[str]:
    """The normalised units of the text's last 4000 UTF-16 units (see ``textrun``).

    The whole tail is lower-cased and cleaned at once instead of unit by unit: the cleaning
    never touches a separator, so splitting before or after it gives the same units.
    """
    tail = utf16_tail(text, TAIL_UNITS)  # reads only the last TAIL_UNITS code points
    cleaned = _SPACES_NOT_NEWLINE.sub(" ", _NOT_WORDLIKE.sub(" ", tail.lower()))
    return _UNIT.findall(cleaned)


def has_repeated_text_runs(
    texts: Iterable[object],
    *,
    min_units: float | None = None,
    window: float | None = None,
    max_unique_ratio: float | None = None,
) -> npt.NDArray[np.bool_]:
    """:func:`vthread.textrun.has_repeated_text_run` for many texts: a boolean array.

    Each text costs O(min(len(text), 4000)): only its last 4000 UTF-16 units are read.

    >>> has_repeated_text_runs(["Again. " * 9, "One. Two. Three.", None]).tolist()
    [True, False, False]
    """
    options = text_run_options(min_units, window, max_unique_ratio)
    items = texts if isinstance(texts, Sequence) else list(texts)
    result = np.zeros(len(items), dtype=np.bool_)
    for index, text in enumerate(items):
        if not isinstance(text, str) or not text:
            continue
        units = _units(text)
        if len(units) < options.min_units:
            continue
        recent = units[-options.window :]
        result[index] = len(set(recent)) <= len(recent) * options.max_unique_ratio
    return result
