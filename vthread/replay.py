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

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from vthread import _core
from vthread._messages import data_frame_library
from vthread._options import guard_options, text_run_options
from vthread.guard import GuardReason
from vthread.textrun import BYTES, TAIL_UNITS, said_as_no_text

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
    library = data_frame_library(texts)
    if library:
        raise TypeError(f"{function}() takes an iterable of texts, got a {library} DataFrame "
                        "(iterating it gives its column names): pass its text column")
    if not isinstance(texts, Iterable):
        raise TypeError(
            f"{function}() takes an iterable of texts, got {type(texts).__name__}"
        )
    items = texts if isinstance(texts, list) else list(texts)
    # A value that is no str is no text (as production reads it: it never trips), but is
    # most likely bytes read in binary mode, or a record or number passed for its text:
    # said, as Guard.push says it, not answered "no loop" in silence. A missing value (None,
    # or a data frame's NaN or NA in a column of texts) goes unsaid.
    # Every such value is named (the first few, the rest counted), not the first alone: a
    # bulk caller learnt of one bad index a call.
    odd = [index for index, item in enumerate(items) if said_as_no_text(item)]
    if odd:
        import warnings

        from vthread.adapters import positions_named

        first = odd[0]
        more = (f"; {len(odd) - 1} more: text{'s' if len(odd) > 2 else ''} "
                f"{positions_named(odd[1:])}" if len(odd) > 1 else "")
        kind = type(items[first]).__name__
        encoded = [isinstance(items[index], BYTES) for index in odd]
        # (the advice fits every value named, not the first's kind alone)
        advice = ("decode them" if all(encoded) else "pass the text it holds" if len(odd) == 1
                  else "pass the text each holds" if not any(encoded)
                  else "decode the bytes, and pass the text each other value holds")
        if encoded[0]:
            said = f"reads bytes as no text, as it reads any value that is not a str (text " \
                   f"{first} is {kind}{more}): {advice}"
        else:
            said = f"reads a value of type {kind} as no text, as it reads any value that " \
                   f"is not a str (text {first}{more}): {advice}"
        warnings.warn(f"{function}() {said}", UserWarning, stacklevel=3)
    return items



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


def has_repeated_text_runs(
    texts: Iterable[object],
    *,
    min_units: float | None = None,
    window: float | None = None,
    max_unique_ratio: float | None = None,
) -> npt.NDArray[np.bool_]:
    """:func:`vthread.textrun.has_repeated_text_run` for many texts: a boolean array.

    ``texts`` is any iterable; a single ``str`` (or ``bytes``) is a ``TypeError``, as for
    :func:`scan_texts`. The compiled core reads each text's storage in place, with the GIL released
    and on every core (``src/textrun.rs``); each text costs O(min(len(text), 4000)): only its
    last 4000 UTF-16 units are read.

    >>> has_repeated_text_runs(["Again. " * 9, "One. Two. Three.", None]).tolist()
    [True, False, False]
    """
    options = text_run_options(min_units, window, max_unique_ratio)
    # A tail of TAIL_UNITS UTF-16 units holds fewer than TAIL_UNITS units, so larger counts
    # answer as TAIL_UNITS does; clamped, they fit the core's machine words.
    return _core.has_repeated_text_runs(
        _text_list(texts, "has_repeated_text_runs"),
        min(options.min_units, TAIL_UNITS),
        min(options.window, TAIL_UNITS),
        options.max_unique_ratio,
    )
