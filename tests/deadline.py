"""A deadline for a test that would hang, not fail, were its regression back."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def ends_within(seconds: int, waited_for: str) -> Iterator[None]:
    """The block, ended by a TimeoutError after ``seconds`` (saying it waited that long for
    ``waited_for``): a regression fails the test rather than hanging the run. SIGALRM's
    handler and alarm are put back as they were."""

    def waited(signum: int, frame: Any) -> None:
        raise TimeoutError(f"waited {seconds} s for {waited_for}")

    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
