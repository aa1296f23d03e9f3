"""Bulk cycle detection: thousands of threads per call, with loop attribution.

:func:`scan` is the bulk twin of :func:`vthread.describe_thread_cycle`. Besides the verdict it
reports, per thread, where the loop starts, its period and repetitions, and the messages and
tokens spent inside it, as NumPy arrays ready for aggregation.
"""

from __future__ import annotations

import gc
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import accumulate, pairwise
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt
import xxhash

from vthread import _core
from vthread._attribution import (
    excerpt,
    person_span,
    tail_excerpt,
    text_excerpt,
)
from vthread._heuristics import (
    ACTIVITY_TAIL,
    HEURISTIC_NAMES,
    RESULT_RUN,
    SUFFIX,
    TEXT_RUN,
    Columns,
    activity_tail,
    columns_of,
    core_options,
    result_run,
    text_runs,
    written_lines,
)
from vthread._jsvalue import field
from vthread._messages import (
    ABSENT,
    Activity,
    MessagesOrRun,
    as_held_thread,
    as_thread,
    data_frame_hint,
    parse_activity,
    token_total,
    usage_tokens,
)
from vthread._on_demand import OnDemand
from vthread._options import (
    CycleOptions,
    cycle_options,
    flag,
    jobs_count,
    not_with_anywhere,
    type_name,
    usable_cpus,
    user_stacklevel,
    warnings_held,
)
from vthread.fingerprint import message_key, message_print
from vthread.textrun import repeated_text_start, text_units, text_units_and_repeat
from vthread.volatile import volatile_masked

if TYPE_CHECKING:
    import pyarrow as pa

    from vthread.anywhere import LineSource

__all__ = ["HEURISTIC_NAMES", "ScanResult", "scan"]


@dataclass(frozen=True, slots=True, eq=False)
class ScanResult:
    """Verdicts and loop attribution for a batch of threads, one row per thread.

    ``codes[i]`` is 0 for a progressing thread, else ``1 + HEURISTIC_NAMES.index(name)``,
    or -1 for a thread a scan with ``errors="record"`` could not read (:attr:`errors`).
    For a looping thread, ``loop_start[i]`` is the index of the first message of the loop,
    ``period[i]`` the messages per repetition, ``repetitions[i]`` how many repetitions were
    seen, ``loop_messages[i]`` the messages from ``loop_start`` to the end of the thread and
    ``loop_tokens[i]`` the sum of their ``usage.tokens`` (NaN when none carries a usage,
    infinity past the largest double: a record says None of both),
    ``signature[i]`` a stable 64-bit fingerprint of what repeats (the block whatever its
    phase, the set of tool signatures, the repeated result, the repeated sentences), so the
    same loop can be counted across thousands of threads and across runs, and
    ``excerpt[i]`` one readable line of it (tool name and arguments, a result, the start of
    the repeated text; at most 240 characters).
    Progressing threads have -1, 0, 0, 0, NaN, 0 and None. ``messages[i]`` is the thread's
    length in its own messages, and ``ids`` each run object's id (``id``, ``instance_id``,
    ``task_id``/``trial``; None for a thread given as a list of messages) when the batch held
    run objects, else None: row ``i`` is always the batch's thread ``i``.

    A repeated suffix is reported as a person counts it, not in the heuristic's own terms:
    its smallest repeating block, starting at the first message that begins the repetition
    (four identical calls are one message repeated four times from the first of them, where
    the heuristic saw two copies of a two-message block). The verdict is unchanged.
    """

    names: list[str | None]
    codes: npt.NDArray[np.int8]
    loop_start: npt.NDArray[np.int64]
    period: npt.NDArray[np.int64]
    repetitions: npt.NDArray[np.int64]
    loop_messages: npt.NDArray[np.int64]
    loop_tokens: npt.NDArray[np.float64]
    signature: npt.NDArray[np.uint64]
    excerpt: list[str | None]
    messages: npt.NDArray[np.int64]
    loops: list[list[dict[str, Any]]] | None = None
    """With ``anywhere=True``: per thread, every loop as a record (:meth:`record`'s fields),
    costliest first; the row's own fields then describe the first. None otherwise."""
    ids: list[Any] | None = None
    """Each thread's run id (None for a list of messages) when the batch held run objects."""
    errors: list[str | None] | None = None
    """With ``errors="record"``: per thread, why the scan could not read it (its row's code
    -1, its other fields a progressing row's, ``messages`` 0), None for a thread scanned.
    None otherwise."""

    def __len__(self) -> int:
        return len(self.names)

    @property
    def unread(self) -> npt.NDArray[np.bool_]:
        """Per row, whether a scan with ``errors="record"`` could not read its thread (its
        code -1, its error in :attr:`errors`): test loops with ``codes > 0``, progressing
        threads with ``codes == 0``."""
        return self.codes < 0

    def __eq__(self, other: object) -> bool:
        """Equal when every field is: arrays element by element (NaN equal to NaN, so a
        result equals its pickled copy), lists and ids as Python compares them, but an id
        that is a float NaN equal to another (a copy's NaN is another object, which Python
        calls unequal)."""
        if not isinstance(other, ScanResult):
            return NotImplemented
        for name in self.__slots__:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, np.ndarray):
                if not (isinstance(theirs, np.ndarray) and mine.dtype == theirs.dtype
                        and np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f")):
                    return False
            elif name == "ids" and mine is not None and theirs is not None:
                if len(mine) != len(theirs) or not all(
                        a is b or a == b or (_is_nan(a) and _is_nan(b))
                        for a, b in zip(mine, theirs, strict=True)):
                    return False
            elif mine != theirs:
                return False
        return True

    __hash__ = None  # type: ignore[assignment]  # its arrays can change: no hash

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Each row as :meth:`record` makes it, in the batch's order."""
        return map(self.record, range(len(self.names)))

    def __getitem__(self, index: int) -> dict[str, Any]:
        """``result[i]`` is ``result.record(i)``."""
        return self.record(index)

    def record(self, index: int) -> dict[str, Any]:
        """Row ``index`` as a JSON-ready dict, the fields of ``vthread scan``'s record but the
        file and line: strict JSON, ``loop_tokens`` None where unknown or past the largest
        double (``json.dumps(..., allow_nan=False)`` takes it), with its ``loops`` when the
        scan looked anywhere; ``id`` None where the thread had none. A thread the scan could
        not read (``errors="record"``) is ``{"id": ..., "error": why}``, as ``vthread
        scan``'s error record holds them."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"a row is an integer index, got {type(index).__name__}")
        if not -len(self.names) <= index < len(self.names):
            raise IndexError(f"row {index} of a result of {len(self.names)} rows")
        run_id = None if self.ids is None else json_id(self.ids[index])
        if self.errors is not None and self.errors[index] is not None:
            return {"id": run_id, "error": self.errors[index]}
        tokens = float(self.loop_tokens[index])
        record: dict[str, Any] = {
            "id": run_id,
            "verdict": self.names[index],
            "loop_start": int(self.loop_start[index]),
            "period": int(self.period[index]),
            "repetitions": int(self.repetitions[index]),
            "loop_messages": int(self.loop_messages[index]),
            "loop_tokens": tokens if math.isfinite(tokens) else None,
            "signature": f"{int(self.signature[index]):016x}" if self.codes[index] else None,
            "excerpt": self.excerpt[index],
        }
        if self.loops is not None:
            record["loops"] = [loop_as_json(loop) for loop in self.loops[index]]
        record["messages"] = int(self.messages[index])
        return record

    def to_arrow(self) -> pa.Table:
        """The rows as a pyarrow Table: the columns :func:`vthread.arrow.scan_arrow` adds
        with ``run_ids=True``, the same values for the same runs (``run_id`` first: each
        run object's id as a record holds it, text as it is, another value as its JSON
        text, null for a bare list of messages; :data:`vthread.arrow.RESULT_FIELDS`,
        ``error`` null but in the row of a thread not read, ``errors="record"``, which holds
        nothing else; ``loops`` last when the scan looked anywhere), to join back to a table
        of one's own, filter, or write as Parquet. Needs pyarrow (``pip install
        'vthread[arrow]'``)."""
        try:
            from vthread.arrow import result_table

            return result_table(self)
        except ModuleNotFoundError as error:
            if error.name != "pyarrow":
                raise
            raise ModuleNotFoundError("ScanResult.to_arrow needs pyarrow: pip install "
                                      "'vthread[arrow]'", name="pyarrow") from error

    @classmethod
    def concatenate(cls, parts: Iterable[ScanResult]) -> ScanResult:
        """One result from several, rows in order (how chunks and jobs are stitched; the
        thread an error names numbered as the result's row: the parts are taken for
        consecutive chunks of one batch). Parts
        with rows from scans that looked for loops differently (``anywhere=True`` and not)
        are a ValueError: their rows do not mean the same, and one part's loops would be
        lost. The result looked anywhere when its parts with rows did. ``parts`` may be any
        iterable of results (read once); a part that is no ScanResult is a TypeError naming
        it."""
        if isinstance(parts, ScanResult):  # (iterated, it gives its rows' records)
            raise TypeError("parts must be an iterable of ScanResult, got one ScanResult: "
                            "pass [result]")
        parts = list(parts)
        for index, part in enumerate(parts):
            if not isinstance(part, ScanResult):
                raise TypeError(f"part {index} must be a ScanResult, got {type_name(part)}")
        if not parts:
            return _empty()
        anywhere = [part.loops is not None for part in parts]
        with_rows = [looked for part, looked in zip(parts, anywhere, strict=True) if len(part)]
        if any(with_rows) and not all(with_rows):
            first = next(i for i, p in enumerate(parts) if len(p) and anywhere[i])
            other = next(i for i, p in enumerate(parts) if len(p) and not anywhere[i])
            raise ValueError(f"part {first} is of a scan with anywhere=True, part {other} of "
                             "one without: their rows do not mean the same")
        looked_anywhere = all(with_rows) if with_rows else anywhere[0]
        return cls(
            names=[name for part in parts for name in part.names],
            codes=np.concatenate([p.codes for p in parts]),
            loop_start=np.concatenate([p.loop_start for p in parts]),
            period=np.concatenate([p.period for p in parts]),
            repetitions=np.concatenate([p.repetitions for p in parts]),
            loop_messages=np.concatenate([p.loop_messages for p in parts]),
            loop_tokens=np.concatenate([p.loop_tokens for p in parts]),
            signature=np.concatenate([p.signature for p in parts]),
            excerpt=[text for part in parts for text in part.excerpt],
            messages=np.concatenate([p.messages for p in parts]),
            loops=(None if not looked_anywhere
                   else [loops for part in parts for loops in part.loops or []]),
            ids=(None if all(p.ids is None for p in parts)
                 else [i for p in parts for i in (p.ids or [None] * len(p))]),
            errors=(None if all(p.errors is None for p in parts) else [
                None if error is None else _shifted(error, offset)
                for part, offset in zip(parts, _offsets(parts), strict=True)
                for error in (part.errors or [None] * len(part))]),
        )


def _offsets(parts: list[ScanResult]) -> list[int]:
    """Where each part's rows start in their concatenation."""
    return list(accumulate(map(len, parts[:-1]), initial=0))


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def json_id(value: Any) -> Any:
    """A run's id as a record holds it, strict JSON as ``vthread scan`` writes it: a string,
    finite number, boolean or null as it is (a NumPy scalar as the Python number it holds),
    anything else as its JSON text, cut at 256 characters (``NaN``, an array)."""
    import json

    from vthread._records import record_id

    if isinstance(value, np.generic):
        value = value.item()
    return json.loads(record_id(value))


def _empty() -> ScanResult:
    return ScanResult(
        names=[],
        codes=np.zeros(0, np.int8),
        loop_start=np.zeros(0, np.int64),
        period=np.zeros(0, np.int64),
        repetitions=np.zeros(0, np.int64),
        loop_messages=np.zeros(0, np.int64),
        loop_tokens=np.zeros(0, np.float64),
        signature=np.zeros(0, np.uint64),
        excerpt=[],
        messages=np.zeros(0, np.int64),
    )


def verdicts(columns: Columns, options: CycleOptions) -> ScanResult:
    """Verdicts and loop spans of a batch from the core's columns alone: the whole decision.

    ``signature`` is left 0, ``excerpt`` None, ``loop_tokens`` NaN and a repeated suffix's
    span in the heuristic's terms: all are read from the looping threads' messages
    (:func:`_scan_batch` fills them in).
    """
    count = len(columns)
    codes = np.zeros(count, np.int8)
    # Heuristics in the reference's order; a later one only decides undecided threads.
    codes[columns.suffix_period > 0] = SUFFIX
    tail = activity_tail(columns)
    codes[(codes == 0) & tail.collapsed] = ACTIVITY_TAIL
    codes[(codes == 0) & result_run(columns, options.min_result_repetitions)] = RESULT_RUN
    text_first, text_count = text_runs(columns, np.flatnonzero(codes == 0))
    codes[(codes == 0) & (text_first >= 0)] = TEXT_RUN

    lengths = columns.lengths
    loop_start = np.full(count, -1, np.int64)
    period = np.zeros(count, np.int64)
    repetitions = np.zeros(count, np.int64)
    pick = codes == SUFFIX
    period[pick] = columns.suffix_period[pick]
    repetitions[pick] = columns.suffix_copies[pick]
    loop_start[pick] = lengths[pick] - period[pick] * repetitions[pick]
    pick = codes == ACTIVITY_TAIL
    loop_start[pick] = lengths[pick] - columns.tail_length[pick]
    period[pick] = tail.signatures[pick]
    repetitions[pick] = columns.tail_length[pick] // np.maximum(tail.signatures[pick], 1)
    pick = codes == RESULT_RUN
    loop_start[pick] = columns.result_start[pick]
    period[pick] = columns.result_period[pick]
    repetitions[pick] = columns.result_copies[pick]
    pick = codes == TEXT_RUN
    loop_start[pick] = text_first[pick]
    period[pick] = 1
    repetitions[pick] = text_count[pick]
    loop_messages = np.where(codes > 0, lengths - loop_start, 0)
    return ScanResult(
        names=[HEURISTIC_NAMES[c - 1] if c else None for c in codes.tolist()],
        codes=codes,
        loop_start=loop_start,
        period=period,
        repetitions=repetitions,
        loop_messages=loop_messages.astype(np.int64),
        loop_tokens=np.full(count, np.nan),
        signature=np.zeros(count, np.uint64),
        excerpt=[None] * count,
        messages=lengths.astype(np.int64),
    )


def _scan_batch(threads: list[Any], options: CycleOptions, anywhere: bool = False
                ) -> ScanResult:
    """The scan of a batch in this process. The core reads every message and finds the
    loops; a looping thread's messages are read again for its record, and should that
    fail, the batch is scanned again (:func:`_scanned_again`)."""
    raw = _read(threads, options, anywhere)
    try:
        return _answered(raw, options, anywhere)
    except MemoryError:
        raise
    except Exception as error:
        return _scanned_again(threads, options, anywhere, error)


def _read(threads: list[Any], options: CycleOptions, anywhere: bool) -> dict[str, Any]:
    """The core's reading of a batch: its columns, or with ``anywhere`` its screens."""
    if anywhere:
        # Every loop of every thread (vthread.anywhere); each row describes its costliest.
        from vthread.anywhere import core_text_run

        return _core.message_screens(threads, core_text_run(), keep_read=True)
    return _core.scan_columns(threads, core_options(options), keep_read=True)


def _answered(raw: dict[str, Any], options: CycleOptions, anywhere: bool) -> ScanResult:
    """The verdicts of what the core read, each loop attributed from the messages it read."""
    if anywhere:
        return scan_anywhere_in(raw, raw["threads"])
    return _verdicts_attributed(raw, options)


def _scanned_again(threads: list[Any], options: CycleOptions, anywhere: bool,
                   error: Exception) -> ScanResult:
    """The batch scanned once more after a loop's record failed (``error``), as it does when
    messages changed between the core's reading and the record (another Python thread
    editing them, or a value's own code run when read): the answer of the state it then
    finds (a call racing edits may answer for either state). An error that comes again as
    it came is the reading's own (a mapping's method that raises, a fault), raised as it is;
    one that changes each time is a RuntimeError naming the thread that fails when scanned
    alone, its error the cause. MemoryError is never retried."""
    try:
        return _answered(_read(threads, options, anywhere), options, anywhere)
    except MemoryError:
        raise
    except Exception as again:
        if type(again) is type(error) and again.args == error.args:
            raise error from None
    for index, thread in enumerate(threads):
        try:
            _answered(_read([thread], options, anywhere), options, anywhere)
        except MemoryError:
            raise
        except Exception as alone:
            raise RuntimeError(
                f"thread {index}: the record of its loop could not be made from its "
                "messages read again (were they changed during the call?): "
                f"{type(alone).__name__}: {alone}") from alone
    raise RuntimeError(
        "the record of a loop could not be made from its thread's messages read again "
        f"(were they changed during the call?): {type(error).__name__}: {error}"
    ) from error


def _verdicts_attributed(raw: dict[str, Any], options: CycleOptions) -> ScanResult:
    """The verdicts of the columns the core read (``raw``), each loop attributed."""
    columns = columns_of(raw)
    result = verdicts(columns, options)
    looping = np.flatnonzero(result.codes).tolist()
    # The loops are attributed from the messages the core read, not from the caller's
    # lists: one replaced, extended or cut meanwhile (by another Python thread, or by code
    # a message runs when read) would give a record of neither state.
    read: list[tuple[Any, ...]] = raw["threads"]
    attribute_threads(result, columns, looping,
                      [_as_read(read[row], result, row) for row in looping])
    return result


_NOT_KEPT: Final[dict[str, Any]] = {}
"""Stands for a message the core did not keep (:func:`_as_read`); no attribution reads it
(a plain dict, so that the core attributes the row as it does any other)."""


def _as_read(kept: tuple[Any, ...], result: ScanResult, row: int) -> tuple[Any, ...]:
    """Row ``row``'s thread as the core read it. Of a thread whose columns ruled out every
    loop but a runaway text, the core keeps only the last messages, which that check and its
    record read; the messages before them are stood for, so indexes stay the thread's."""
    missing = int(result.messages[row]) - len(kept)
    if missing == 0:
        return kept
    if int(result.codes[row]) != TEXT_RUN:
        raise RuntimeError(f"thread {row}: the core kept {len(kept)} of its "
                           f"{int(result.messages[row])} messages, and its loop needs them all")
    return (_NOT_KEPT,) * missing + kept


def attribute(result: ScanResult, columns: Columns, rows: Sequence[int],
              threads: Sequence[Sequence[Any]]) -> None:
    """Fill in the loop attribution of rows ``rows`` of ``result`` (a person's span, the
    signature, the excerpt, the loop's tokens), ``threads[i]`` being row ``rows[i]``'s messages
    and ``columns`` what the core read of the batch.

    The messages are read only where the answer is: a repeated suffix's keys from where the
    heuristic's copies begin (and back only as far as the repetition goes), one message per
    distinct call of an activity tail (the core's exact ids group the tail), a text's
    sentences once for its signature and excerpt. :func:`attribute_by_messages` is the
    plain twin that reads every message; a property test holds them equal.
    """
    for row, messages in zip(rows, threads, strict=True):
        code = int(result.codes[row])
        if code == SUFFIX:
            span = _suffix_span(messages, int(result.period[row]), int(result.repetitions[row]))
            _set_suffix_span(result, row, len(messages), span)
        begin = int(result.loop_start[row])
        period = int(result.period[row])
        if code == ACTIVITY_TAIL:
            calls = _distinct_calls(columns, row, messages, begin)
            parts: Any = _calls_part(a for a, _ in calls)
            result.excerpt[row] = tail_excerpt(calls, _core_canonical)
        elif code == TEXT_RUN:
            text = field(messages[begin], "text")  # (read as the check read it)
            units, start = text_units_and_repeat(text)
            parts = sorted(set(units))
            result.excerpt[row] = text_excerpt(text, start)
        else:
            parts = _signature_parts(messages, code, begin, period)
            result.excerpt[row] = excerpt(messages, HEURISTIC_NAMES[code - 1], begin, period,
                                          _core_canonical, repeated_text_start)
        result.signature[row] = _signature_of(parts, code)
        result.loop_tokens[row] = _loop_tokens(messages, begin)


def attribute_lines(result: ScanResult, columns: Columns, rows: Sequence[int],
                    lines: Sequence[bytes | memoryview], messages_key: str | None = None,
                    id_key: str | None = None, kept: _core.KeptTapes | None = None) -> None:
    """:func:`attribute` of rows ``rows`` whose threads are the runs of the native JSON
    ``lines`` (``lines[i]`` row ``rows[i]``'s, found as ``documents.read_run`` finds a run
    under ``messages_key`` and ``id_key``), computed by the core from the bytes with the GIL
    released: no message is made into a Python object (and no line parsed again whose tape
    ``kept`` holds, from the core's reading of these very ``bytes``). A row the core leaves
    to Python is attributed from its line as ``json.loads`` reads it. A line may be a
    read-only view of the read the core scanned it in (where its kept tape is found)."""
    if not rows:
        return
    picked = np.asarray(rows, np.int64)
    core = _core.attribute_lines(list(lines), *_found_loops(result, picked),
                                 messages_key=messages_key, id_key=id_key, kept=kept)
    declined = _take_attributions(result, columns, picked, core)
    if declined:
        attribute(result, columns, [rows[i] for i in declined],
                  [_native_messages(bytes(lines[i]), messages_key, id_key) for i in declined])


def _native_messages(line: bytes, messages_key: str | None, id_key: str | None) -> Any:
    """The messages of the native run ``line`` holds, as Python reads the line."""
    from vthread._exact_json import loads_exactly  # orjson, only when a line is read
    from vthread.documents import read_run

    found = read_run(loads_exactly(line), "native", messages_key, id_key)
    assert not isinstance(found, str), "the core read a line Python refuses"
    return found[1]


def attribute_threads(result: ScanResult, columns: Columns, rows: Sequence[int],
                      threads: Sequence[Sequence[Any]]) -> None:
    """:func:`attribute` of rows ``rows`` (``threads[i]`` row ``rows[i]``'s messages), read
    by the core through the CPython API; a row whose values Python reads otherwise than by
    their content (a ``str`` subclass, a lone surrogate, a payload of a type JSON has no
    word for) is left to :func:`attribute`."""
    if not rows:
        return
    picked = np.asarray(rows, np.int64)
    core = _core.attribute_threads(list(threads), *_found_loops(result, picked))
    declined = _take_attributions(result, columns, picked, core)
    if declined:
        attribute(result, columns, [rows[i] for i in declined], [threads[i] for i in declined])


def _found_loops(result: ScanResult, picked: npt.NDArray[np.int64]
                 ) -> tuple[list[int], list[int], list[int], list[int]]:
    """Each picked row's heuristic, start, period and repetitions, as the core takes them."""
    return (result.codes[picked].tolist(), result.loop_start[picked].tolist(),
            result.period[picked].tolist(), result.repetitions[picked].tolist())


def _take_attributions(result: ScanResult, columns: Columns, picked: npt.NDArray[np.int64],
                       core: dict[str, Any]) -> list[int]:
    """Write the core's attributions of rows ``picked`` into ``result``; the positions (in
    ``picked``) of the rows it declined."""
    declined: list[int] = core["declined"].tolist()
    taken = np.ones(len(picked), bool)
    taken[declined] = False
    at = picked[taken]
    result.loop_start[at] = core["loop_start"][taken]
    result.period[at] = core["period"][taken]
    result.repetitions[at] = core["repetitions"][taken]
    result.loop_messages[at] = columns.lengths[at] - result.loop_start[at]
    result.signature[at] = core["signature"][taken]
    result.loop_tokens[at] = core["loop_tokens"][taken]
    for row, excerpt_text in zip(picked.tolist(), core["excerpts"], strict=True):
        if excerpt_text is not None:
            result.excerpt[row] = excerpt_text
    return declined


def attribute_by_messages(result: ScanResult, rows: Sequence[int],
                          threads: Sequence[Sequence[Any]]) -> None:
    """:func:`attribute` read the plain way, every message of each looping thread (and a
    tail's every call) parsed again: the twin the property tests hold the fast one to."""
    for row, messages in zip(rows, threads, strict=True):
        code = int(result.codes[row])
        if code == SUFFIX:
            keys = [message_key(m) for m in messages]
            span = person_span(keys, int(result.period[row]), int(result.repetitions[row]))
            _set_suffix_span(result, row, len(messages), span)
        begin = int(result.loop_start[row])
        period = int(result.period[row])
        result.signature[row] = _signature(messages, code, begin, period)
        result.excerpt[row] = excerpt(messages, HEURISTIC_NAMES[code - 1], begin, period,
                                      _core_canonical, repeated_text_start)
        result.loop_tokens[row] = _loop_tokens(messages, begin)


def _set_suffix_span(result: ScanResult, row: int, length: int,
                     span: tuple[int, int, int]) -> None:
    result.loop_start[row], result.period[row], result.repetitions[row] = span
    result.loop_messages[row] = length - span[0]


def _loop_tokens(messages: Sequence[Any], begin: int) -> float:
    """The summed ``usage.tokens`` of the messages from ``begin``, NaN when none has one."""
    total = _core.loop_tokens(messages, begin)
    if total is not None:
        return total
    # A figure the core leaves to Python (an integer beyond 64 bits, a Decimal).
    figures = [f for f in map(usage_tokens, messages[begin:]) if f is not None]
    return token_total(figures) if figures else math.nan


def tokens_between(messages: Sequence[Any]) -> Callable[[int, int], float]:
    """The summed ``usage.tokens`` of ``messages[first:end]``, as a loop's are summed (NaN
    when none has one): what a translated loop restated in its file's messages counts
    (:func:`vthread.documents.in_source_messages`)."""
    return lambda first, end: _loop_tokens(messages[first:end], 0)


def written_span_tokens(lines: Sequence[bytes | memoryview],
                        spans: Sequence[tuple[int, int, int]],
                        passing_over: bool = True) -> list[float]:
    """:func:`tokens_between` of spans of the native JSON lines the core wrote (``(line,
    first, end)``, in order of line), each line read once by the core; a line whose
    figures the core leaves to Python is read by Python. A line holding no ``"usage"`` is
    passed over: the core writes a message's usage under that key, as those bytes (a
    translation's ``"usage":{"tokens":``, a masked copy's keys unescaped), so no message
    of it carries one (NaN). ``passing_over=False`` is the twin that reads every line."""
    owners, firsts, ends = ([span[at] for span in spans] for at in range(3))
    totals = _core.span_tokens_of_lines(list(lines), owners, firsts, ends,
                                        written=passing_over)
    read: dict[int, Sequence[Any]] = {}
    out = []
    for (line, first, end), total in zip(spans, totals, strict=True):
        if total is None:
            if line not in read:
                read[line] = _native_messages(bytes(lines[line]), None, None)
            total = tokens_between(read[line])(first, end)
        out.append(total)
    return out


def _suffix_span(messages: Sequence[Any], period: int, repetitions: int) -> tuple[int, int, int]:
    """:func:`person_span` of a repeated suffix with the keys of only the messages it reads:
    those of the heuristic's copies, then one more for each message the walk back takes
    (a thread's older history is never encoded)."""
    return person_span(OnDemand(len(messages), lambda index: message_key(messages[index])),
                       period, repetitions)


def _distinct_calls(columns: Columns, row: int, messages: Sequence[Any],
                    begin: int) -> list[tuple[Activity, Any]]:
    """Each distinct activity of row ``row``'s tail (from ``begin``) with the message where
    it first appears, in order: the core's exact ids of the tail (kind, name, arguments,
    result) say which messages repeat an earlier one, so only the first of each is parsed."""
    low, high = (int(x) for x in columns.tail_offsets[row : row + 2])
    keys = zip(columns.tail_kind_id[low:high].tolist(), columns.tail_name[low:high].tolist(),
               columns.tail_arguments[low:high].tolist(), columns.tail_result[low:high].tolist(),
               strict=True)
    first: dict[tuple[int, int, int, int], int] = {}
    for offset, call in enumerate(keys):
        first.setdefault(call, offset)
    calls = []
    for offset in first.values():
        message = messages[begin + offset]
        activity = parse_activity(message, _core_canonical)
        assert activity is not None, "the core's activity tail holds a message that is none"
        calls.append((activity, message))
    return calls


def scan_of_lines(raw: dict[str, Any], options: CycleOptions,
                  line_of: Callable[[int], bytes | memoryview],
                  messages_key: str | None = None, id_key: str | None = None) -> ScanResult:
    """The verdicts of the JSON lines the core read into columns (``raw``, from
    ``_core.scan_lines`` or ``_core.scan_slices``), each looping line's loop attributed from
    its text: the native line the core wrote of a translated or masked line, else
    ``line_of(row)`` (a ``bytes``, or a view of the read the core read it in), its run
    found under ``messages_key`` and ``id_key`` (copied out only for a line that loops). A
    :class:`LineUnreadError` when Python's reading of a looping line the core read fails
    (the caller then reads the lines the Python way, which says why)."""
    columns = columns_of(raw)
    result = verdicts(columns, options)
    looping = np.flatnonzero(result.codes).tolist()
    if looping:
        written = written_lines(raw, looping)
        keys = (None, None) if written is not None else (messages_key, id_key)
        lines: Sequence[bytes | memoryview] = (
            written if written is not None else [line_of(row) for row in looping])
        try:
            # The core's tapes of the lines as read (of no use for lines it wrote).
            attribute_lines(result, columns, looping, lines, *keys,
                            kept=raw.get("kept") if written is None else None)
        except Exception as error:
            raise LineUnreadError from error
    return result


class LineUnreadError(Exception):
    """Python's reading of a line the core read failed (:func:`scan_of_lines`)."""


def scan_anywhere_of_lines(raw: Mapping[str, Any], line_of: Callable[[int], bytes],
                           read: Callable[[bytes, bool], Sequence[Mapping[str, Any]]],
                           messages_key: str | None = None, id_key: str | None = None
                           ) -> ScanResult | None:
    """:func:`scan_anywhere_in` of the threads of the JSON lines the core screened (``raw``),
    ``read(line_of(row), long_digits)`` making row ``row``'s thread only when it may loop
    (:func:`vthread.anywhere.threads_on_demand`). None when Python's reading of such a thread
    fails (raises): the caller then reads the lines the Python way, which says why. A
    looping line's exact keys and loop records are the core's, read from the line itself
    (under ``messages_key`` and ``id_key``, as the core screened it): its thread becomes
    Python objects only where a rule the core leaves to Python reads them (a retried
    failure, a runaway text, a loop record the core declines), and then only the messages
    it reads."""
    from vthread.anywhere import LineSource, threads_on_demand

    try:
        lines = LineSource(line_of, messages_key, id_key)
        return scan_anywhere_in(
            raw, threads_on_demand(len(raw["offsets"]) - 1, line_of, read, lines), lines)
    except Exception:
        return None


def scan_anywhere_in(raw: Mapping[str, Any], threads: Sequence[Sequence[Mapping[str, Any]]],
                     lines: LineSource | None = None) -> ScanResult:
    """:func:`scan` with ``anywhere=True`` given the core's screens of the threads (see
    :func:`vthread.anywhere.find_loops_in`: ``threads[i]`` is read only for a thread that
    may loop)."""
    from vthread.anywhere import LOOP_KINDS, find_loops_in, loop_records_of

    found = find_loops_in(raw, threads, lines)
    count = len(found)
    all_loops: list[list[dict[str, Any]]] = []
    result = ScanResult(
        names=[None] * count,
        codes=np.zeros(count, np.int8),
        loop_start=np.full(count, -1, np.int64),
        period=np.zeros(count, np.int64),
        repetitions=np.zeros(count, np.int64),
        loop_messages=np.zeros(count, np.int64),
        loop_tokens=np.full(count, np.nan),
        signature=np.zeros(count, np.uint64),
        excerpt=[None] * count,
        messages=np.diff(raw["offsets"]),
        loops=all_loops,
    )
    for row, records in enumerate(loop_records_of(threads, found, _core_canonical, lines)):
        all_loops.append(records)
        if records:
            set_row(result, row, records[0], LOOP_KINDS)
    return result


def loop_as_json(loop: dict[str, Any]) -> dict[str, Any]:
    """A loop record (one of :attr:`ScanResult.loops`) as strict JSON holds it: a token
    total past the largest double (infinity here) is None, as a row's ``loop_tokens`` is."""
    tokens = loop["loop_tokens"]
    return loop if tokens is None or math.isfinite(tokens) else {**loop, "loop_tokens": None}


def set_row(result: ScanResult, row: int, record: Mapping[str, Any],
            names: Sequence[str]) -> None:
    """Row ``row``'s fields set from a loop record (its costliest loop)."""
    result.names[row] = record["verdict"]
    result.codes[row] = 1 + list(names).index(record["verdict"])
    result.loop_start[row] = record["loop_start"]
    result.period[row] = record["period"]
    result.repetitions[row] = record["repetitions"]
    result.loop_messages[row] = record["loop_messages"]
    tokens = record["loop_tokens"]
    result.loop_tokens[row] = math.nan if tokens is None else tokens
    result.signature[row] = int(record["signature"], 16)
    result.excerpt[row] = record["excerpt"]


def _signature(messages: Sequence[Any], code: int, begin: int, size: int) -> int:
    """A fingerprint of the repeating content, independent of where the thread entered it."""
    return _signature_of(_signature_parts(messages, code, begin, size), code)


def _signature_parts(messages: Sequence[Any], code: int, begin: int, size: int) -> Any:
    """What a loop's signature is made of: the block at its least rotation (a suffix), the
    sorted distinct calls (an activity tail), the newest settled result (a result run), the
    sorted distinct sentences (a text run)."""
    if code == SUFFIX:
        block = [message_print(m) for m in messages[len(messages) - size :]]
        first = least_rotation(block)
        return block[first:] + block[:first]  # the same block whatever its phase
    if code == ACTIVITY_TAIL:
        tail = [parse_activity(m, _core_canonical) for m in messages[begin:]]
        return _calls_part(a for a in tail if a)
    if code == RESULT_RUN:
        newest = _newest_settled(messages)
        return (newest.name, newest.arguments, newest.result)
    return sorted(set(text_units(field(messages[begin], "text"))))


def _calls_part(calls: Iterable[Activity]) -> list[tuple[str, str, str, str]]:
    """An activity tail's signature part: its distinct calls, sorted, each as JavaScript
    has it (a surrogate pair in a name is its astral character, as the bytes' reading
    makes it, and as :func:`parse_activity` gives it)."""
    return sorted({(a.kind, a.name, a.arguments, a.result) for a in calls})


def _signature_of(parts: Any, code: int) -> int:
    return xxhash.xxh3_64_intdigest(repr(parts).encode("utf-8", "surrogatepass"), seed=code)


def least_rotation(items: Sequence[int]) -> int:
    """Where the lexicographically least rotation of ``items`` starts (Booth's algorithm):
    O(n), where comparing all n rotations would be O(n²) for a long period.

    >>> least_rotation([3, 1, 2, 1, 1])
    3
    """
    doubled = list(items) * 2
    failure = [-1] * len(doubled)
    least = 0
    for j in range(1, len(doubled)):
        value = doubled[j]
        i = failure[j - least - 1]
        while i != -1 and value != doubled[least + i + 1]:
            if value < doubled[least + i + 1]:
                least = j - i - 1
            i = failure[i]
        if value != doubled[least + i + 1]:  # i == -1
            if value < doubled[least]:
                least = j
            failure[j - least] = -1
        else:
            failure[j - least] = i + 1
    return least


def _core_canonical(value: Any) -> str:
    """``canonical(value)``, written by the compiled core (byte for byte the same text)."""
    return _core.canonical(value).decode("ascii")


def _newest_settled(messages: Sequence[Any]) -> Activity:
    """The newest settled tool response (one exists: the result run fired)."""
    for message in reversed(messages):
        activity = parse_activity(message, _core_canonical)
        if (
            activity is not None
            and activity.kind == "response"
            and not activity.name.startswith("_")
            and activity.result != ABSENT
        ):
            return activity
    raise AssertionError("the result run fired without a settled response")


PARALLEL_MIN_MESSAGES: Final = 2_000_000
"""Smallest batch (in messages) that ``jobs > 1`` splits over processes. Each worker reads
the caller's Python objects, so the pages it touches are copied into it, and on this
machine (2 vCPU, session 12) that costs about what the second CPU saves: 10,000 workload
threads (650k messages) took 0.254 s in one process and 0.302 s in two, 30,000 (1.95M)
0.703 s against 0.665 s."""
PARALLEL_MIN_MESSAGES_ANYWHERE: Final = 500_000
"""The same with ``anywhere=True``, whose Python work gains more from a second CPU: 650k
messages 0.631 s against 0.613 s, 1.95M 1.730 s against 1.277 s."""

# Worker processes are forked with the batch already in memory, so only row ranges go out
# and small result arrays come back: pickling the threads would cost more than scanning them.
_FORKED_THREADS: Sequence[Sequence[Any]] = ()


def _scan_rows(task: tuple[int, int, CycleOptions, bool]) -> ScanResult | None:
    """A worker's rows scanned, or None when they raised: the error names a thread by its
    place among these rows, so the caller scans the batch itself to raise it rightly. Any
    exception, a SystemExit or KeyboardInterrupt a caller's object raised too: the worker
    answers, and the caller decides."""
    begin, end, options, anywhere = task
    try:
        return _scan_batch(list(_FORKED_THREADS[begin:end]), options, anywhere)
    except BaseException:
        return None


def _scan_worker(tasks: list[tuple[int, int, int]], results: Any, options: CycleOptions,
                 anywhere: bool) -> None:
    """A forked worker: each of its row ranges ``(position, begin, end)`` scanned and
    ``(position, result)`` sent on ``results``, then a None to say it finished."""
    for position, begin, end in tasks:
        results.send((position, _scan_rows((begin, end, options, anywhere))))
    results.send(None)
    results.close()


class WorkerDiedError(RuntimeError):
    """A worker process of ``scan(jobs=N)`` ended without answering (killed for memory, by a
    signal, or by a caller's object ending the process from inside it)."""


def _scan_parallel(
    threads: list[Sequence[Any]], options: CycleOptions, jobs: int, anywhere: bool = False
) -> ScanResult:
    """``threads`` scanned by ``jobs`` forked workers taking row ranges as they finish.

    Each worker's end is watched (its process sentinel) beside its answers, so a worker
    that dies is an error at once, never a wait for an answer that cannot come (a pool
    waited for ever); an exception in this process ends every worker before it goes on."""
    import multiprocessing
    from multiprocessing.connection import wait

    global _FORKED_THREADS
    context = multiprocessing.get_context("fork")
    bounds = np.linspace(0, len(threads), jobs * 4 + 1).astype(int).tolist()
    # Each worker's ranges handed to it at the fork (every jobs-th, so each has a share of
    # the batch's length): nothing to send, so nothing to wait on before the workers run.
    tasks = [(position, begin, end) for position, (begin, end) in enumerate(pairwise(bounds))]
    workers: dict[Any, Any] = {}  # its answers' end of a pipe -> the worker's process
    parts: dict[int, ScanResult | None] = {}
    _FORKED_THREADS = threads
    try:
        for worker in range(jobs):
            answers, sender = context.Pipe(duplex=False)
            try:
                process = context.Process(target=_scan_worker, daemon=True,
                                          args=(tasks[worker::jobs], sender, options, anywhere))
                process.start()
            except BaseException:
                answers.close()
                raise
            finally:
                sender.close()
            workers[answers] = process
        _FORKED_THREADS = ()
        running = dict(workers)
        while running:
            ready = wait([*running, *(process.sentinel for process in running.values())])
            for answers, process in list(running.items()):
                finished = ended = False
                while not (finished or ended) and answers.poll():  # (true at its end too)
                    try:
                        answer = answers.recv()
                    except (EOFError, OSError):  # its end closed before it finished (or
                        ended = True            # in the middle of an answer): it died
                        break
                    finished = answer is None
                    if not finished:
                        parts[answer[0]] = answer[1]
                if finished:
                    del running[answers]
                elif ended or process.sentinel in ready:
                    process.join()
                    raise WorkerDiedError(
                        f"scan(jobs={jobs}): a worker process ended without answering (exit "
                        f"status {process.exitcode}: killed for memory or by a signal, or "
                        f"ended by an object it read); scan with jobs=1 to see what its "
                        f"threads do")
    finally:
        _FORKED_THREADS = ()
        for answers, process in workers.items():
            if process.is_alive():
                process.kill()
            process.join()
            answers.close()
    done = [parts[position] for position in range(len(bounds) - 1)]
    if any(part is None for part in done):
        # A worker's rows raised: the batch is scanned here, so that the error (or the
        # answer, should none recur) is the one-process scan's, the thread named by its
        # place in the caller's batch. What the caller's objects do when read runs again.
        return _scan_batch(threads, options, anywhere)
    return ScanResult.concatenate([part for part in done if part is not None])


def scan(
    threads: Iterable[MessagesOrRun],
    *,
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    jobs: int = 1,
    anywhere: bool = False,
    format: str = "native",
    errors: str = "raise",
) -> ScanResult:
    """Verdict and loop attribution for every thread: the bulk twin of describe_thread_cycle.

    ``scan(threads).names == [describe_thread_cycle(t) for t in threads]`` for the same
    keywords. Each heuristic reads only the messages it can look at (each thread's second
    half for the repeated suffix, its end for the others), as array operations across all
    threads at once; only candidate loops are confirmed one by one. ``jobs > 1`` splits
    the batch over forked processes, no more than the usable CPUs (where the platform can
    fork, and when the batch holds
    at least ``PARALLEL_MIN_MESSAGES`` messages, ``PARALLEL_MIN_MESSAGES_ANYWHERE`` with
    ``anywhere=True``: below that a pool costs more than it
    saves) and returns the identical result; a worker that dies (killed for memory, by a
    signal) is a :class:`WorkerDiedError`. A thread that is not a sequence of mappings
    is a ``TypeError`` naming the thread and message index. ``mask_volatile=True`` compares
    messages with their volatile values masked (:mod:`vthread.volatile`), as the cycle
    functions do; signatures and excerpts then show the placeholders. O(total messages) at
    worst, plus the candidates' confirmation; typically about half the messages are read.

    ``anywhere=True`` reports every loop of each thread wherever it lies, not only one that
    ends it (:mod:`vthread.anywhere`): ``loops`` holds each thread's loops as records,
    costliest first, and the row's fields describe the costliest (its verdict is the loop's
    kind). O(total messages x ``vthread.anywhere.MAX_PERIOD``) array work and O(n log n)
    per thread in the core for longer blocks, plus the exact confirmation of what repeats.

    ``format`` names the threads' message format: ``"native"`` (the production library's
    ``{type, text, meta}`` messages, the default), one of :data:`vthread.adapters.FORMATS`
    (``"openai"``, ``"anthropic"``, ...), or ``"auto"`` to detect it from the first threads
    as ``vthread scan`` does (:func:`vthread.documents.native_threads`; past first threads
    that are all plain chats, from the first further on to show a chat format); in any format, a
    thread may also be a run object holding its messages (a JSONL line's ``{"messages":
    ...}``; mini-swe-agent's run declares its format there). Translated threads
    are scanned as native ones and their loops reported in their own messages'
    numbers (``loop_start`` an index into the thread as given), as ``vthread scan FILE``
    reports them. Chat messages passed as native ones (a ``role``, which no native message
    has) are alike, so every such thread looks like a loop: that is warned about (once a
    call, naming the first such thread among the first 64, or else the first further on
    that loops).

    ``errors="record"`` keeps a bulk run going past threads it cannot read: each is a row
    of its own, its code -1 and its error's text in :attr:`ScanResult.errors` (``thread 17:
    messages[3] must be a mapping, got int``), and every other row is the one the batch
    without it gives (:func:`_scan_recording_errors`). It needs the format named (not
    ``"auto"``, which settles on one from the threads, bad ones among them). An error the
    caller's own objects raise (a mapping whose lookup fails) still propagates.

    >>> hello = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "hello"}]
    >>> scan([hello, hello * 2]).names
    [None, 'repeated_suffix']
    >>> scan([hello, [hello]], errors="record").errors
    [None, 'thread 1: messages[0] must be a mapping, got list']
    """
    if not isinstance(errors, str):
        raise TypeError(f"errors must be 'raise' or 'record', got {type_name(errors)}")
    if errors not in ("raise", "record"):
        raise ValueError(f"errors must be 'raise' or 'record', got {errors!r}")
    if errors == "record":
        from vthread.documents import checked_format

        if checked_format(format) == "auto":
            raise ValueError("errors='record' needs the threads' format named: 'auto' "
                             "settles on one from the threads, and a thread that cannot be "
                             "read may change which")
        keywords: dict[str, Any] = {
            "min_repetitions": min_repetitions, "min_pattern_length": min_pattern_length,
            "max_pattern_length": max_pattern_length,
            "min_result_repetitions": min_result_repetitions, "mask_volatile": mask_volatile,
            "anywhere": anywhere, "format": format}
        return _scan_recording_errors(
            _thread_list(threads),
            lambda part, quiet: scan(part, **keywords, jobs=1 if quiet else jobs))
    options = cycle_options(
        min_repetitions, min_pattern_length, max_pattern_length, min_result_repetitions
    )
    # More workers than CPUs would only take turns, each holding its own copy of the pages
    # it reads.
    jobs = min(jobs_count(jobs), usable_cpus())
    anywhere = flag("anywhere", anywhere)
    not_with_anywhere(anywhere, min_repetitions=min_repetitions,
                      min_pattern_length=min_pattern_length,
                      max_pattern_length=max_pattern_length,
                      min_result_repetitions=min_result_repetitions)
    batch_threads = _thread_list(threads)
    volatile_masked((), mask_volatile)  # checks the flag even for an empty batch
    sources = None
    from vthread.documents import (
        first_thread_error,
        held,
        holds_run_messages,
        native_threads,
        warn_if_chat,
    )

    holds_runs = False  # a native batch holding a run object
    if format == "native":
        for index, thread in enumerate(batch_threads):
            if not isinstance(thread, Mapping):
                continue
            if not holds_run_messages(thread):
                # No thread: a TypeError as for a lone one, whatever else the batch holds,
                # unless a thread before it is no thread either: the first is named.
                error = first_thread_error(batch_threads[:index + 1])
                assert error is not None  # this thread's, at the least
                raise error
            holds_runs = True
    if format != "native" or holds_runs:
        # A run object holding its messages is read in any format, native too, as the CLI
        # reads a line holding one. Each list as it is now, read once: the translation runs
        # the caller's code (a message that is no exact dict), which may change the caller's
        # lists, and a record's length is that of what was read, as a native thread's is.
        batch_threads = [held(thread) for thread in batch_threads]
        with collector_paused():  # (the translations hold no cycles, as masked copies)
            translated, sources = native_threads(batch_threads, format)
        if sources is not None:  # translated: counted as translated, before it is scanned
            given = _given_runs(batch_threads)
        batch_threads = list(translated)
        if format == "auto" and (sources is None or not any(sources)):
            from vthread.documents import DETECTED_NATIVE

            # Detection found native messages first: a chat thread further on fits no
            # format, and read as native would look like a loop.
            warn_if_chat(batch_threads, stacklevel=user_stacklevel(), advice=DETECTED_NATIVE)
    if format == "native":
        warn_if_chat(batch_threads, stacklevel=user_stacklevel())
    if mask_volatile:
        # The copies hold no cycles; the collector walking them again and again as they are
        # made took half of the masking's time (2,000 of the benchmark's threads: 0.28-0.45 s
        # with it, 0.14 s without), and 40% of a translation's.
        with collector_paused():
            batch_threads = [volatile_masked(thread, True) for thread in batch_threads]
    if (
        jobs > 1
        and len(batch_threads) >= 2 * jobs
        and _messages_in(batch_threads) >= (PARALLEL_MIN_MESSAGES_ANYWHERE if anywhere
                                            else PARALLEL_MIN_MESSAGES)
        and _can_fork()
    ):
        result = _scan_parallel(batch_threads, options, jobs, anywhere)
    else:
        result = _scan_paused(batch_threads, options, anywhere)
    if sources is None or not any(sources):
        from vthread.documents import (
            DETECT_THREADS,
            DETECTED_NATIVE,
            PASS_A_FORMAT,
            warn_if_chat,
        )

        # The threads read as native were looked at for chat messages only as far as the
        # first few: one further on that loops may be chat, its loop false.
        looping = np.flatnonzero(result.codes[DETECT_THREADS:] > 0) + DETECT_THREADS
        warn_if_chat(batch_threads, stacklevel=user_stacklevel(), rows=looping.tolist(),
                     advice=DETECTED_NATIVE if format == "auto" else PASS_A_FORMAT)
    if sources is not None:
        from vthread.documents import in_source_messages

        for row, origins in enumerate(sources):
            if origins is not None:
                in_source_messages(result, row, origins, tokens_between(batch_threads[row]))
        result = _in_given_runs(result, *given)
    return result


def _scan_recording_errors(threads: list[Any],
                           scan_part: Callable[[list[Any], bool], ScanResult]) -> ScanResult:
    """``scan(threads, errors="record")``: the batch scanned whole; where a thread cannot be
    read, those that cannot are found (:func:`_unreadable_threads`) and the batch is
    scanned once more with an empty thread in each one's place, so that every other row,
    the warnings and the threads they name are the batch's own; each such row then says
    its error. The warnings are held while it scans (:func:`vthread._options.warnings_held`)
    and those of the scan that answers said, from the caller's line: a scan that raised
    may have warned of a thread it then could not read. ``scan_part(part, quiet)`` is the
    scan with the caller's keywords, raising (quiet: on one job)."""
    found: dict[int, str] = {}
    with warnings_held() as held:
        try:
            result = scan_part(threads, False)
        except Exception as error:
            if _thread_named(error, len(threads)) is None:
                _say(held)  # (as a scan raising it says them: before it)
                raise
            _unreadable_threads(threads, 0, scan_part, found, error)
            standing = [[] if index in found else thread
                        for index, thread in enumerate(threads)]
            del held[:]
            result = scan_part(standing, False)
    _say(held)
    if not found:
        return replace(result, errors=[None] * len(threads))
    rows = np.fromiter(found, dtype=np.int64, count=len(found))
    result.codes[rows] = -1
    ids = result.ids
    named = [_id_of(threads[row]) for row in found]
    if ids is None and any(name is not None for name in named):
        ids = [None] * len(threads)
    if ids is not None:
        for row, name in zip(found, named, strict=True):
            ids[row] = name
    return replace(result, ids=ids,
                   errors=[found.get(index) for index in range(len(threads))])


def _say(held: list[tuple[str, type[Warning]]]) -> None:
    """Say the warnings held, from the first frame outside vthread (the caller's line)."""
    import warnings

    for text, category in held:
        warnings.warn(text, category, stacklevel=user_stacklevel())


def _unreadable_threads(threads: list[Any], start: int,
                        scan_part: Callable[[list[Any], bool], ScanResult],
                        found: dict[int, str], error: Exception | None = None) -> None:
    """Put in ``found`` each of ``threads`` (the batch's from ``start`` on) that the scan
    cannot read, by its index in the batch, with the error it raises scanned alone naming
    it there: the part scanned whole (unless its scan's ``error`` is given), and where it
    raises, the thread it names is one, and the threads after it are looked at by halves
    (a pass per bad thread over what follows it would be quadratic in them). An error that
    names no thread of the part, or one that does not raise alone, is raised."""
    if error is None:
        error = _part_error(threads, start, scan_part)
        if error is None:
            return
    index = _thread_named(error, len(threads))
    alone = None if index is None else _part_error([threads[index]], start + index,
                                                   scan_part)
    if index is None or alone is None or _thread_named(alone, 1) != 0:
        raise _notes_shifted(error, start)
    found[start + index] = _shifted(str(alone), start + index)
    rest = threads[index + 1:]
    middle = len(rest) // 2
    for part, at in ((rest[:middle], start + index + 1),
                     (rest[middle:], start + index + 1 + middle)):
        if part:
            _unreadable_threads(part, at, scan_part, found)


def _part_error(part: list[Any], start: int,
                scan_part: Callable[[list[Any], bool], ScanResult]) -> Exception | None:
    """The TypeError or ValueError vthread raises scanning ``part`` (the batch's threads from
    ``start`` on), None when it raises none. Any other exception is raised (the caller's
    own objects failing), the thread its notes name (``while reading thread 2,
    messages[1]``) numbered as in the batch."""
    try:
        scan_part(part, True)
    except Exception as error:
        if isinstance(error, (TypeError, ValueError)) and _raised_in_vthread(error):
            return error
        _notes_shifted(error, start)
        raise  # (as raised: its cause and context are the caller's)
    return None


def _notes_shifted(error: Exception, start: int) -> Exception:
    """``error``, raised scanning a part of the batch from thread ``start`` on, its notes
    naming the thread as the batch numbers it (``while reading thread 2, messages[1]``)."""
    if hasattr(error, "__notes__"):
        error.__notes__ = [_shifted(note, start, _NOTE_NAMING) for note in error.__notes__]
    return error


_THREAD_NAMED: Final = re.compile(r"thread (\d+)\b")
"""How the scan's errors about a thread begin (:func:`vthread.documents.thread_label`)."""
_NOTE_NAMING: Final = re.compile(r"while reading thread (\d+)\b")
"""How the core's note (``__notes__``) on an exception of the caller's objects begins,
naming the thread."""
_PACKAGE: Final = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _thread_named(error: Exception, count: int) -> int | None:
    """The index of the thread a scan's error names at its start, when one of ``count`` and
    the error was raised by vthread's own code (a caller's object raising a ValueError
    whose text happens to begin "thread 0" is the caller's, to propagate)."""
    if not isinstance(error, (TypeError, ValueError)):
        return None
    found = _THREAD_NAMED.match(str(error))
    if found is None or int(found[1]) >= count or not _raised_in_vthread(error):
        return None
    return int(found[1])


def _raised_in_vthread(error: BaseException) -> bool:
    """Whether ``error`` was raised in vthread: its innermost Python frame is one of the
    package's (the core's errors are raised in the frame that called it; a caller's object
    raises in its own code)."""
    trace = error.__traceback__
    if trace is None:
        return False
    while trace.tb_next is not None:
        trace = trace.tb_next
    return trace.tb_frame.f_code.co_filename.startswith(_PACKAGE)


def _shifted(text: str, offset: int, naming: re.Pattern[str] = _THREAD_NAMED) -> str:
    """``text`` naming, at its start, the thread ``offset`` further on than it does (as
    ``naming`` finds it); as it is when it names none."""
    found = naming.match(text)
    if found is None or not offset:
        return text
    return f"{text[:found.start(1)]}{int(found[1]) + offset}{text[found.end(1):]}"


def _id_of(thread: Any) -> Any:
    """A thread's run id as a scan's row holds it: a run object's, else None (also where
    the object's own code fails to give it)."""
    if not isinstance(thread, Mapping):
        return None
    from vthread.documents import run_id

    try:
        return run_id(thread)
    except Exception:  # (the caller's mapping: its error is the row's own already)
        return None


def _messages_in(threads: list[Any]) -> int:
    """The messages of a batch, for choosing whether to fork; 0 when a thread has no length
    (no thread: the scan in this process says which, as without workers)."""
    try:
        return sum(map(len, threads))
    except TypeError:
        return 0


def _given_runs(threads: list[Any]) -> tuple[list[int], list[Any] | None]:
    """Each thread's length in its own messages and, when the batch holds run objects, each
    one's run id (None for a list of messages), of ``threads`` as the scan read them (its
    own copies of the caller's lists, which the caller's code cannot change): the scan
    answers for what it read, whatever the caller's lists hold when it is done."""
    from vthread.documents import run_id, run_messages

    lengths = [len(run_messages(t)) if isinstance(t, Mapping) else len(t) for t in threads]
    if not any(isinstance(thread, Mapping) for thread in threads):
        return lengths, None
    return lengths, [run_id(t) if isinstance(t, Mapping) else None for t in threads]


def _in_given_runs(result: ScanResult, lengths: list[int], ids: list[Any] | None
                   ) -> ScanResult:
    """``result`` with each row's length in the thread's own messages and, when the batch
    held run objects, their ids (see :func:`_given_runs`)."""
    result.messages[:] = lengths
    return result if ids is None else replace(result, ids=ids)


def _thread_list(threads: object) -> list[Any]:
    """The batch as a list (a generator of threads is read once, here); each thread and
    message is checked by the core, whose errors name the thread and message index."""
    hint = data_frame_hint(threads)
    if hint or isinstance(threads, (str, bytes, Mapping)) or not isinstance(threads, Iterable):
        raise TypeError(
            f"threads must be a sequence of threads, got {type(threads).__name__}{hint}")
    # Any sequence is a thread, as for describe_thread_cycle; the loop attribution slices it.
    from vthread.documents import DETECT_THREADS

    batch = []
    for thread in threads:
        try:
            batch.append(as_thread(thread))
        except MemoryError as error:
            error.add_note(f"while reading thread {len(batch)}")
            raise
    for index in range(min(len(batch), DETECT_THREADS)):
        # The threads whose first message Python reads (chat and format detection) as they
        # are at the call (as_held_thread); the core copies every thread before reading it.
        batch[index] = as_held_thread(batch[index])
    return batch


def scan_validated(threads: list[list[dict[str, Any]]], **keywords: Any) -> ScanResult:
    """:func:`scan` (one process) of threads whose every message is known to be a dict, as
    a reader that built them from JSON knows: the check of every message is skipped."""
    anywhere = bool(keywords.pop("anywhere", False))
    return _scan_paused(threads, cycle_options(**keywords), anywhere)


def _scan_paused(batch_threads: list[Any], options: CycleOptions,
                 anywhere: bool = False) -> ScanResult:
    # The scan makes many short-lived containers, and a full collection would walk every
    # message of the caller's (acyclic, long-lived) threads: up to a second on the benchmark.
    with collector_paused():
        return _scan_batch(batch_threads, options, anywhere)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block, its state restored after: for work
    that makes or reads many acyclic containers, which it would otherwise walk again and
    again."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()
