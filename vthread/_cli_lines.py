"""How ``vthread scan`` cuts a JSONL stream into chunks of lines, and how many workers it runs.

Kept apart from :mod:`vthread.cli` because it needs no NumPy: the command's front
(:mod:`vthread._head_start`) cuts a file's first chunks exactly as the scan will, while the
scan's own modules are still being imported.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Final

__all__ = ["CHUNK_BYTES", "CHUNK_LINES", "READ_BYTES", "PausedBatch", "chunked_lines",
           "usable_cpus", "worker_count"]

CHUNK_LINES: Final = 4096
"""Most lines parsed and scanned together (one :func:`vthread.scan` call per chunk)."""
CHUNK_BYTES: Final = 4 << 20
"""About the most input bytes per chunk; a chunk the core declines takes several times this
in memory as Python objects.

Measured on the 90 MB benchmark set with the core reading (5 alternating runs each, wall
seconds, median): 1, 2, 4 and 8 MiB chunks took 0.727, 0.715, 0.695 and 0.729 s with
``--jobs 1`` and 0.490, 0.477, 0.468 and 0.507 s with ``--jobs 2``. With two jobs the core
reads a chunk while Python finishes the one before, so the first chunk's reading and the
last one's finishing do not overlap: smaller chunks shorten both, smaller still pay each
call's fixed cost. (Before the core, through Python objects, 8 MiB had beaten 1 MiB.) The
peak memory depends on the chunk size only.
"""
READ_BYTES: Final = 1 << 20
"""Size of each binary read."""


class PausedBatch(list[bytes]):
    """A chunk's lines cut where the stream's writer paused (a pipe that went quiet)."""


def chunked_lines(read: Callable[[], bytes], chunk_lines: int, chunk_bytes: int,
                  idle: Callable[[], bool] | None = None,
                  last_line_kept: Callable[[int], bool] | None = None
                  ) -> Iterator[list[bytes]]:
    """The complete lines (without ``\\n``) of the blocks ``read`` returns until it returns
    ``b""``, in chunks of at most ``chunk_lines`` lines and about ``chunk_bytes`` bytes.

    A line longer than a read is assembled from its parts once (never re-joined per read).
    When ``idle`` says the stream's writer has paused, the lines read so far are a
    :class:`PausedBatch`. A last line without a final newline is a line unless
    ``last_line_kept`` (given its size) says otherwise; the empty string after a final
    newline is not.
    """
    pending: list[bytes] = []  # the parts of a line that has not ended yet
    batch: list[bytes] = []
    size = 0
    while block := read():
        lines = block.split(b"\n")
        if len(lines) == 1:
            pending.append(block)
            continue
        if pending:
            pending.append(lines[0])
            lines[0] = b"".join(pending)
            pending = []
        tail = lines.pop()
        if tail:
            pending.append(tail)
        batch.extend(lines)
        size += len(block)
        if len(batch) >= chunk_lines:  # short lines: a read holds several chunks
            start = 0
            while len(batch) - start >= chunk_lines:
                yield batch[start : start + chunk_lines]
                start += chunk_lines
            batch = batch[start:]
            size = sum(map(len, batch))
        if size >= chunk_bytes:
            yield batch
            batch, size = [], 0
        elif batch and idle is not None and idle():
            yield PausedBatch(batch)
            batch, size = [], 0
    if pending and (last_line_kept is None or last_line_kept(sum(map(len, pending)))):
        batch.append(b"".join(pending))
    if batch:
        yield batch


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def worker_count(requested: int, work: int | None = None) -> int:
    """The workers worth starting for ``--jobs requested`` (0: one per CPU): no more than
    the usable CPUs, nor than the pieces of ``work`` when known; at least 1.

    More workers than CPUs only take turns, and more than pieces of work sit idle (a
    ``--jobs 1000`` on an 11-line file once forked a thousand processes).
    """
    cpus = usable_cpus()
    count = min(requested, cpus) if requested > 0 else cpus
    if work is not None:
        count = min(count, work)
    return max(1, count)
