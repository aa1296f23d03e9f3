"""Option resolution shared by the engine and the scalar reference.

Every count follows the production rule ``Math.max(minimum, Math.floor(value))`` where a
value that is not finite (``None``, NaN, an infinity) means "use the default"; zero is a real
value that clamps. The recorded production answers pin the infinity case: an infinite
``min_repetitions`` behaves exactly as the default of 2. The rule holds for every option,
``max_pattern_length`` included: its default is no cap, so a non-finite one is no cap. A
value that is not a number at all (a string, a boolean, any other object) is unset too, as
production's ``Number.isFinite`` reads it (the recorded answers to
``minRepetitions: true`` and ``maxUniqueRatio: "0.7"``), with a ``UserWarning`` naming the
option, since a harness that passed ``"3"`` meant a number.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from vthread._jsvalue import js_double, real_number

if TYPE_CHECKING:
    from types import FrameType

DEFAULT_MIN_REPETITIONS: Final = 2
DEFAULT_MIN_PATTERN_LENGTH: Final = 2
DEFAULT_MIN_RESULT_REPETITIONS: Final = 3
DEFAULT_MIN_UNITS: Final = 8
DEFAULT_TEXT_WINDOW: Final = 64
DEFAULT_TEXT_MAX_UNIQUE_RATIO: Final = 0.5
DEFAULT_NGRAM: Final = 4
DEFAULT_GUARD_WINDOW: Final = 48
DEFAULT_MAX_REPEATS: Final = 4
DEFAULT_GUARD_MAX_UNIQUE_RATIO: Final = 0.4
DEFAULT_MIN_CHARS: Final = 0
#: Largest guard window (and n-gram) in words taken as given; a larger one (any finite
#: number is legal, as in production) is taken as this many. No stream holds so many
#: words, so the guard answers as it would with the larger value: a window that never
#: fills, an n-gram never formed. Nothing is allocated by the window's size: the guard's
#: memory follows the words it holds (about 100 bytes a word plus the words).
GUARD_WORDS_CAP: Final = 2**62



def option_number(name: str, value: object, warn: bool = True) -> float | None:
    """A production option's value as a float, ``None`` when unset: ``None``, or anything
    but a real number (a string, a boolean: production's ``Number.isFinite`` is false for
    them, and it uses the default), which is warned of, naming the option (unless not
    ``warn``: resolved again for a call that warned already)."""
    if value is None:
        return None
    exact = real_number(value)  # a NumPy scalar or Decimal is as good as an int or float
    if exact is None:
        if not warn:
            return None
        say_warning(f"option {name}={shown(value)} is not a number: it counts as unset (the "
                    "default), as in production; pass a number", UserWarning,
                    user_stacklevel())
        return None
    return js_double(exact)


_HELD: ContextVar[list[tuple[str, type[Warning]]] | None] = ContextVar(
    "vthread_warnings_held", default=None)
"""Within :func:`warnings_held`, in this thread or task alone: the warnings held so far."""


def say_warning(text: str, category: type[Warning], stacklevel: int) -> None:
    """``warnings.warn(text, category)`` from ``stacklevel`` frames above this function's
    caller; within :func:`warnings_held`, held instead."""
    held = _HELD.get()
    if held is not None:
        held.append((text, category))
        return
    import warnings

    warnings.warn(text, category, stacklevel=stacklevel + 1)


@contextmanager
def warnings_held() -> Iterator[list[tuple[str, type[Warning]]]]:
    """Within it, in this thread (or task) alone, :func:`say_warning` holds each warning
    (its text and category) in the list it gives, for its caller to say or drop: a call
    that scans its batch more than once says the warnings of the scan that answers alone
    (``vthread.scan(..., errors="record")``). (The standard ``catch_warnings`` is no such
    block: it changes every thread's warnings while it lasts.)"""
    held: list[tuple[str, type[Warning]]] = []
    token = _HELD.set(held)
    try:
        yield held
    finally:
        _HELD.reset(token)


def user_stacklevel() -> int:
    """The ``stacklevel`` of a warning warned by this module's caller that points at the
    first frame outside vthread (the user's call, however deep its options are resolved)."""
    import sys

    package = os.path.dirname(__file__) + os.sep
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(package):
        level, frame = level + 1, frame.f_back
    return level


def real(name: str, value: object) -> float | None:
    """``value`` as a float, ``None`` when unset; ``TypeError`` for anything but a real number
    (the rule of vthread's own options, where no production answer stands)."""
    if value is None:
        return None
    exact = real_number(value)  # a NumPy scalar or Decimal is as good as an int or float
    if exact is None:
        raise TypeError(f"option {name} must be a real number or None, got {shown(value)}")
    return js_double(exact)


def shown(value: object) -> str:
    """``repr(value)`` for an error message, or its type where its ``repr`` raises (the
    error the caller needs is ours, not the value's)."""
    try:
        return repr(value)
    except Exception:
        return f"a {type(value).__name__}"


def type_name(value: object) -> str:
    """The type of ``value`` for an error message, with its module unless a builtin: NumPy 2
    names its boolean "bool", which the module tells from Python's."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def is_numpy_bool(value: object) -> bool:
    """Whether ``value`` is NumPy's boolean (as plain a yes or no as a bool, from a mask or a
    config read with NumPy), told without importing NumPy."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


def flag(name: str, value: object) -> bool:
    """A yes-or-no option as given: a bool, or NumPy's boolean; anything else (a string such
    as ``"no"`` would read as true) is a TypeError naming it and the type given."""
    if isinstance(value, bool):
        return value
    if is_numpy_bool(value):
        return bool(value)
    raise TypeError(f"{name} must be a bool, got {type_name(value)}")


def jobs_count(value: object) -> int:
    """``jobs``: a positive integer (see :func:`integer_option`)."""
    return integer_option("jobs", value, 1)


def integer_option(name: str, value: object, minimum: int) -> int:
    """An integer option (a NumPy integer too) of at least ``minimum`` (0 or 1): another type
    is a TypeError, a smaller number a ValueError, each naming the option."""
    kind = "a positive integer" if minimum == 1 else "a non-negative integer"
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be {kind}, got {type(value).__name__}")
    count = operator.index(value)  # type: ignore[arg-type]
    if count < minimum:
        raise ValueError(f"{name} must be {kind}, got {count}")
    return count


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def floor_count(name: str, value: object, default: int, minimum: int, warn: bool = True
                ) -> int:
    """``Math.max(minimum, Math.floor(value))``, the default standing in for a non-finite value
    (and for a value that is no number, warned of unless not ``warn``)."""
    number = option_number(name, value, warn)
    count = default if number is None or not math.isfinite(number) else math.floor(number)
    return max(minimum, count)


@dataclass(frozen=True, slots=True)
class CycleOptions:
    """Resolved options of the thread-level heuristics (``max_pattern_length`` may be None)."""

    min_repetitions: int
    min_pattern_length: int
    max_pattern_length: int | None
    min_result_repetitions: int

    def pattern_range(self, length: int) -> tuple[int, int]:
        """The pattern lengths ``[low, high]`` worth trying on a thread of ``length`` messages.

        Lengths whose repetitions would not fit in the thread can never match, so ``high`` is
        capped there; an empty range comes back as ``low > high``.
        """
        fit = length // self.min_repetitions
        high = fit if self.max_pattern_length is None else min(self.max_pattern_length, fit)
        return self.min_pattern_length, high


def cycle_options(
    min_repetitions: object = None,
    min_pattern_length: object = None,
    max_pattern_length: object = None,
    min_result_repetitions: object = None,
) -> CycleOptions:
    """Resolve the cycle keywords as the production implementation does."""
    if (min_repetitions is None and min_pattern_length is None and max_pattern_length is None
            and min_result_repetitions is None):
        return DEFAULT_CYCLE  # the every-turn call: resolved once
    min_pattern = floor_count("min_pattern_length", min_pattern_length,
                              DEFAULT_MIN_PATTERN_LENGTH, 1)
    # Unset (None, NaN, an infinity) is no cap at all, not a cap at the minimum, as in production.
    cap = option_number("max_pattern_length", max_pattern_length)
    max_pattern: int | None = None
    if cap is not None and math.isfinite(cap):
        max_pattern = max(min_pattern, math.floor(cap))
    return CycleOptions(
        min_repetitions=floor_count("min_repetitions", min_repetitions,
                                    DEFAULT_MIN_REPETITIONS, 1),
        min_pattern_length=min_pattern,
        max_pattern_length=max_pattern,
        min_result_repetitions=floor_count("min_result_repetitions", min_result_repetitions,
                                           DEFAULT_MIN_RESULT_REPETITIONS, 2),
    )


def set_with_anywhere(anywhere: bool, **options: object) -> str | None:
    """The name of the first cycle option set (a finite number: None, NaN and the infinities
    are the defaults) with ``anywhere``, or None: looking anywhere judges loops by rules of
    its own (:mod:`vthread.anywhere`), so such an option would change nothing."""
    if not anywhere:
        return None
    # (the options were resolved, and any that is no number warned of, by cycle_options)
    return next((name for name, value in options.items()
                 if (number := option_number(name, value, warn=False)) is not None
                 and math.isfinite(number)), None)


def numbers_only(**options: object) -> dict[str, object]:
    """``options`` with each value that is no number as None (unset, as it resolves), for
    a call that resolves them again (a table's slices, Ray's workers) once warned of."""
    return {name: None if value is not None and real_number(value) is None else value
            for name, value in options.items()}


def not_with_anywhere(anywhere: bool, **options: object) -> None:
    """A ValueError naming the option :func:`set_with_anywhere` finds: refused rather than
    ignored without a word."""
    name = set_with_anywhere(anywhere, **options)
    if name is not None:
        raise ValueError(f"{name} does not apply with anywhere=True: looking anywhere judges "
                         "loops by rules of its own (vthread.anywhere); leave it unset")


DEFAULT_CYCLE: Final = CycleOptions(
    min_repetitions=DEFAULT_MIN_REPETITIONS,
    min_pattern_length=DEFAULT_MIN_PATTERN_LENGTH,
    max_pattern_length=None,
    min_result_repetitions=DEFAULT_MIN_RESULT_REPETITIONS,
)


@dataclass(frozen=True, slots=True)
class TextRunOptions:
    """Resolved options of :func:`vthread.has_repeated_text_run`."""

    min_units: int
    window: int
    max_unique_ratio: float


def text_run_options(
    min_units: object = None, window: object = None, max_unique_ratio: object = None
) -> TextRunOptions:
    """Resolve the text-run keywords; a ratio outside (0, 1] falls back to the default."""
    if min_units is None and window is None and max_unique_ratio is None:
        return _DEFAULT_TEXT_RUN
    units = floor_count("min_units", min_units, DEFAULT_MIN_UNITS, 2)
    ratio = option_number("max_unique_ratio", max_unique_ratio)
    if ratio is None or not 0 < ratio <= 1:
        ratio = DEFAULT_TEXT_MAX_UNIQUE_RATIO
    return TextRunOptions(
        min_units=units,
        window=floor_count("window", window, max(units, DEFAULT_TEXT_WINDOW), units),
        max_unique_ratio=ratio,
    )


_DEFAULT_TEXT_RUN: Final = TextRunOptions(
    min_units=DEFAULT_MIN_UNITS,
    window=max(DEFAULT_MIN_UNITS, DEFAULT_TEXT_WINDOW),
    max_unique_ratio=DEFAULT_TEXT_MAX_UNIQUE_RATIO,
)


@dataclass(frozen=True, slots=True)
class GuardOptions:
    """Resolved options of :class:`vthread.Guard`."""

    ngram: int
    window: int
    max_repeats: int
    max_unique_ratio: float
    min_chars: int


def guard_options(
    ngram: object = None,
    window: object = None,
    max_repeats: object = None,
    max_unique_ratio: object = None,
    min_chars: object = None,
    warn: bool = True,
) -> GuardOptions:
    """Resolve the guard keywords; the ratio is clamped to [0, 1]; ``warn``: whether an
    option that is no number is warned of.

    An ``ngram`` or ``window`` past :data:`GUARD_WORDS_CAP` is taken as that many words
    (no stream holds more: the answers are those of the value given).
    """
    size = min(floor_count("ngram", ngram, DEFAULT_NGRAM, 2, warn), GUARD_WORDS_CAP)
    ratio = option_number("max_unique_ratio", max_unique_ratio, warn)
    if ratio is None or not math.isfinite(ratio):
        ratio = DEFAULT_GUARD_MAX_UNIQUE_RATIO
    ratio = min(1.0, max(0.0, ratio))
    words = min(floor_count("window", window, max(size, DEFAULT_GUARD_WINDOW), size, warn),
                GUARD_WORDS_CAP)
    return GuardOptions(
        ngram=size,
        window=words,
        max_repeats=floor_count("max_repeats", max_repeats, DEFAULT_MAX_REPEATS, 2, warn),
        max_unique_ratio=ratio,
        min_chars=floor_count("min_chars", min_chars, DEFAULT_MIN_CHARS, 0, warn),
    )
