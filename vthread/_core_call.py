"""The arguments the compiled core takes, made without NumPy.

The scan (:mod:`vthread.cli`) and the command's front (:mod:`vthread._head_start`, which has
the core read a file's first chunks while the scan's modules are imported) make the core's
call for a chunk with this one function, so that the front's reading is handed over only
when it was made with the arguments the scan would give.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final, Literal

from vthread._options import CycleOptions, cycle_options

if TYPE_CHECKING:
    from vthread._core import CoreOptions

__all__ = ["CORE_FORMATS", "CoreCall", "CoreFormat", "core_call", "core_options"]

# The core counts in machine words; larger option values change nothing (no thread is that
# long), so they are clamped on the way in.
_LARGEST: Final = sys.maxsize // 4

CoreFormat = Literal["native", "openai", "anthropic", "responses", "mini-swe-agent",
                     "swe-agent"]
CORE_FORMATS: Final[tuple[CoreFormat, ...]] = (  # the formats the core reads: every one
    "native", "openai", "anthropic", "responses", "mini-swe-agent", "swe-agent")

CoreCall = tuple["CoreOptions", bool, int, CoreFormat, "str | None", "str | None", bool,
                 "tuple[int, int, float] | None"]
"""``_core.scan_lines``'s arguments after the lines: options, count_tokens, threads, format,
messages_key, id_key, mask_volatile, anywhere."""


def core_options(options: CycleOptions) -> CoreOptions:
    """The cycle options as the core takes them, clamped to what a machine word holds."""
    cap = options.max_pattern_length
    return (
        min(options.min_repetitions, _LARGEST),
        min(options.min_pattern_length, _LARGEST),
        None if cap is None else min(cap, _LARGEST),
        min(options.min_result_repetitions, _LARGEST),
    )


def core_call(cycle: dict[str, float | None], count_tokens: bool, threads: int,
              format_: CoreFormat,
              messages_key: str | None, id_key: str | None, mask_volatile: bool,
              anywhere: tuple[int, int, float] | None) -> CoreCall:
    """``_core.scan_lines``'s arguments for a chunk of lines: ``cycle`` the scan's cycle
    options as given (resolved here), ``anywhere`` the text-run options when every loop of
    a thread is looked for."""
    return (core_options(cycle_options(**cycle)), count_tokens, threads, format_,
            messages_key, id_key, mask_volatile, anywhere)
