"""Ctrl-C and SIGTERM during a scan or a report: the handlers that end it as an exception,
and the blocks (a record's write, a worker's start, a page's write) a stop waits for."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, Final

from vthread._cli_main import may_wait_for_a_reader

STOP_WAITS_FOR_A_WRITE: Final = 2.0
"""Seconds a stop waits for a chunk's records to be written to a pipe before it takes effect
inside the write (:meth:`StopSignals.held`): a reader that reads finishes a chunk's write
in a fraction of that."""


class TerminatedError(BaseException):
    """SIGTERM during a scan: what ``timeout``, Slurm and Kubernetes send to stop a job. A
    BaseException, as KeyboardInterrupt is, so that no ``except Exception`` that falls back
    to another way of reading a chunk can take it for that chunk's failure."""


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM during a scan, in this process until :meth:`close`: each
    ends the scan as an exception (KeyboardInterrupt, :class:`TerminatedError`), so that a
    scan stopped by a scheduler ends as one interrupted by Ctrl-C does: the records so far
    flushed, the summary written ("completed": false), status 130 or 143. Inside
    :meth:`held` the exception waits until the block is done (a record is never written in
    part, a worker process never forked unknown to its pool), whichever thread the signal
    reached. Only the first stops the scan: once it has (or the scan has ended otherwise,
    :meth:`settle`), a signal is ignored, so that a second Ctrl-C while the first is handled
    (the pool waiting for its running chunks, the output closing, the summary being
    written) is never a traceback or a second, different ending. Outside the main thread
    (a caller running :func:`main` in a thread) the handlers cannot be set and are left as
    they are. A forked worker that inherits them, before its first step
    (:func:`_worker_started`), dies of SIGTERM as it would have."""

    def __init__(self) -> None:
        import signal
        import threading

        self.owner = os.getpid()
        self.main_thread = threading.main_thread().ident
        self.depth = 0  # nested held() blocks open
        self.pending: int | None = None  # a signal that came inside one
        self.settled = False  # the scan's end is decided: a signal now changes nothing
        # The longest a held block that may wait on a reader (a write to a pipe) keeps a
        # stop waiting: past it the stop takes effect inside the block (see held).
        self.at_most: float | None = None
        self.overdue = False  # that time has passed: the stop takes effect now
        self.timer: Any = None  # the threading.Timer that says so
        # The timer's thread signals the main thread only while the timer is armed: once
        # disarmed (the block ended, the handlers given back), never (its signal would meet
        # the default handler: a SIGTERM after the summary killed the process).
        self.arming = threading.RLock()
        self.previous: dict[int, Any] = {}
        try:
            for signum in (signal.SIGINT, signal.SIGTERM):
                self.previous[signum] = signal.signal(signum, self._arrived)
        except ValueError:  # not the main thread
            self.close()

    def _arrived(self, signum: int, frame: object) -> None:
        import signal

        if os.getpid() != self.owner and signum == signal.SIGTERM:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if self.settled:
            return
        if self.depth and not self.overdue:
            if self.pending is None and self.at_most is not None:
                import threading

                self.timer = threading.Timer(self.at_most, self._kick, (signum,))
                self.timer.daemon = True
                self.timer.start()
            self.pending = signum
            return
        self.pending = None
        self._stop(signum)

    def _kick(self, signum: int) -> None:
        """(on the timer's thread) The held block outlasted ``at_most``: the signal again, to
        the main thread, whose write it interrupts, to take effect there."""
        import signal

        with self.arming:
            if self.timer is None or self.main_thread is None:
                return
            self.overdue = True
            # (the latest signal, as the end of the block would have raised it)
            signal.pthread_kill(self.main_thread, self.pending or signum)

    def _stop(self, signum: int) -> None:
        self.settled = True
        self._disarm()
        _raise_for(signum)

    def _disarm(self) -> None:
        with self.arming:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None

    def settle(self) -> None:
        """The scan's end is decided: signals from now on are ignored."""
        self.settled = True
        self.pending = None
        self._disarm()

    def held_for_a_write(self, output: str | None) -> contextlib.AbstractContextManager[None]:
        """:meth:`held` around a write to ``output`` (a path; None or ``-``: standard
        output): a stop waits :data:`STOP_WAITS_FOR_A_WRITE` at most for one that may wait
        on a reader (:func:`vthread._cli_main.may_wait_for_a_reader`)."""
        return self.held(at_most=STOP_WAITS_FOR_A_WRITE if may_wait_for_a_reader(output)
                         else None)

    @contextlib.contextmanager
    def held(self, at_most: float | None = None) -> Iterator[None]:
        """The block runs to its end; a signal meanwhile takes effect after it, or, when it
        came ``at_most`` seconds before the block ends, inside it: a write to a reader that
        stopped reading (``| sleep``, a stalled consumer) would otherwise keep SIGTERM from
        ever ending the scan, where ``timeout 3`` ended the same pipeline's ``cat`` in 3 s
        (the record then being written may be cut: the scan ends cut short)."""
        outer = self.at_most
        self.at_most = at_most if outer is None else outer  # (before a signal can see depth)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.at_most = outer
            if not self.depth and self.pending is not None:
                signum, self.pending = self.pending, None
                self._stop(signum)

    def close(self, ignore: bool = False) -> None:
        """Give back the handlers found; ``ignore``: ignore the signals instead (the process
        is ending: a Ctrl-C as the interpreter exits was a traceback, or the process killed
        by SIGINT after a scan that had completed)."""
        import signal

        self._disarm()

        for signum, handler in self.previous.items():
            signal.signal(signum, signal.SIG_IGN if ignore else handler)
        self.previous = {}


def _raise_for(signum: int) -> None:
    import signal

    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise TerminatedError


STOP_SIGNALS: list[StopSignals] = []
"""The scan's signal handlers while it runs (at most one; empty outside a scan)."""


def signals_held() -> contextlib.AbstractContextManager[None]:
    """:meth:`StopSignals.held` of the running scan (nothing held outside one)."""
    return STOP_SIGNALS[-1].held() if STOP_SIGNALS else contextlib.nullcontext()
