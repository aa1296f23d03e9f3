"""Arrow in and out: verdicts for a table of runs, one row per run, in the table's order.

Evaluation data lives in Parquet and moves between Ray Data, Spark, DuckDB, polars and
Hugging Face ``datasets`` as Apache Arrow. :func:`scan_arrow` takes such a table and returns
the verdicts as another, so none of those tools has to loop over rows in Python.

A messages column of JSON text (``string``, ``large_string``, ``binary``) in the native
format is read by the compiled core straight from the column's data buffer: each row is a
slice of it, parsed and judged with the GIL released, the looping rows' records (signature,
excerpt, token cost) read by the core from their bytes too. A column of lists of message
structs is read by the core through the Arrow C data interface and written as the same JSON
text, again with no Python object per row; with ``mask_volatile=True`` the core reads each
row's masked copy, and with ``anywhere=True`` its message screens (only the rows that may
loop then parsed in Python). Another format, a value with no JSON text (NaN, bytes, a
timestamp) or a row the core declines is read through Python objects, with the same
answers. pyarrow is imported only when this module's functions run (``pip install
'vthread[arrow]'``).
"""

from __future__ import annotations

import codecs
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np

from vthread._heuristics import core_options, written_lines
from vthread._jsvalue import unicode_text
from vthread._options import cycle_options, flag, not_with_anywhere, numbers_only
from vthread.adapters import agreed_format
from vthread.documents import (
    BLANK_CELL,
    DECLARED_COLUMN,
    DETECT_THREADS,
    checked_format,
    declared_apart,
    evidence_of,
    in_source_messages,
    judged_until_settled,
    line_format_evidence,
    messages_column,
    misfit_advice,
    misfit_kind,
    misfit_phrase,
    misfits,
    misread_as_native,
    misread_value,
    not_an_array,
    one_column,
    read_cell,
    read_run,
    reads_as_its_own,
    run_format_evidence,
    run_id,
    settled_format,
    unread_reason,
    why_no_format,
    with_declaration,
)
from vthread.scan import (
    HEURISTIC_NAMES,
    LineUnreadError,
    ScanResult,
    collector_paused,
    loop_as_json,
    scan_of_lines,
    scan_validated,
    tokens_between,
)
from vthread.volatile import masked_native

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["LOOP_FIELDS", "RESULT_FIELDS", "scan_arrow"]

RESULT_FIELDS: Final = ("verdict", "loop_start", "period", "repetitions", "loop_messages",
                        "loop_tokens", "signature", "excerpt", "messages", "error")
"""The columns :func:`scan_arrow` adds, after the id column when one is asked for: the
fields of a ``vthread scan`` record, ``messages`` the run's message count and ``error`` why
a row is not a run (null when it is; the other fields are then null)."""

LOOP_FIELDS: Final = RESULT_FIELDS[:8]
"""The fields of each loop in the ``loops`` column ``anywhere=True`` adds last (a list of
structs per row, as ``vthread scan --anywhere -o X.parquet`` writes): a record's own."""

ROWS_PER_SLICE: Final = 4096
"""Rows read per call into the core (or parsed in Python): bounds the memory of one step."""
_DETECT_ROWS: Final = DETECT_THREADS
"""Rows whose messages are looked at to detect the format when ``format="auto"``: as many as
``vthread.scan`` and ``vthread scan`` look at (16 read 16 native rows, then a chat, as a
table of native runs, the chat a false loop, where the others refuse the batch)."""
_NULL_CELL: Final = not_an_array("messages", None)
"""A null messages cell's error: that of the JSON text ``null``, as ``vthread scan`` reads
both."""
_TEXT_TYPES: Final = ("string", "large_string", "binary", "large_binary", "string_view",
                      "binary_view")
_STRING_TYPES: Final = ("string", "large_string", "string_view")


def scan_arrow(
    data: Any,
    *,
    messages: str | None = None,
    id: str | Iterable[str] | None = None,
    format: str = "auto",
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    anywhere: bool = False,
    run_ids: bool = False,
) -> pa.Table:
    """Verdicts for every row of ``data``, a table whose ``messages`` column holds runs
    (by default the first of :data:`vthread.documents.MESSAGES_KEYS` it has: ``messages``,
    ``traj``, ``history``).

    ``data`` is a pyarrow ``Table`` or ``RecordBatch``, or anything exporting the Arrow C
    stream interface (a polars DataFrame, a DuckDB result). Each row's messages are a JSON
    text (an array of messages, or a run object holding them, as a ``vthread scan`` line)
    or a list of message structs (a null struct field reads as absent: Arrow cannot tell
    the two apart). ``format`` is one of ``"auto"`` (detected from the first rows, which
    must agree, or past them when they are all plain chats) and
    :data:`vthread.adapters.FORMATS`. The result has one row per input row,
    in order: the ``id`` column when asked for (or columns: ``id=["task_id", "epoch"]``
    keeps each, as they are, to join the result back by); with ``run_ids=True`` a
    ``run_id`` column,
    the id each row's run object holds (``id``, ``instance_id``, else ``task_id`` and
    ``trial`` joined by ``/``, as ``vthread scan`` reads it from a Parquet file with no id
    column: a string as it is, another value as its JSON text; null for a row of bare
    messages, or one that is no run); then :data:`RESULT_FIELDS`. A row that is
    not a run gets its ``error`` and is never dropped. The answers are
    :func:`vthread.scan`'s, with loops of translated formats counted in the source's
    messages. ``anywhere=True`` reports every loop of a run wherever it lies
    (:mod:`vthread.anywhere`): a last column ``loops`` holds each row's loops, costliest
    first, as structs of :data:`LOOP_FIELDS` (null for a row that is not a run), and the
    row's fields describe the costliest. O(total size).

    >>> import pyarrow as pa
    >>> ask = '{"type":"user","text":"hi"}'
    >>> runs = [f"[{ask}]", "[" + ",".join([ask] * 4) + "]"]
    >>> table = pa.table({"run": ["r1", "r2"], "messages": runs})
    >>> scan_arrow(table, id="run").column("verdict").to_pylist()
    [None, 'repeated_suffix']
    """
    table = _as_table(data)
    column_name = messages_column(table.column_names, messages, "the table", "messages=")
    column = table.column(column_name)
    refuse_unsound(column)
    column = decoded(column)
    run_ids = flag("run_ids", run_ids)
    ids = _id_columns(table, id, anywhere, run_ids)
    keywords = checked_arguments(format, mask_volatile, anywhere,
                                 min_repetitions=min_repetitions,
                                 min_pattern_length=min_pattern_length,
                                 max_pattern_length=max_pattern_length,
                                 min_result_repetitions=min_result_repetitions)
    declared = declarations(table, column_name, ids)
    if format == "auto":
        chosen = detect_column_format(column, declared=declared)
    else:
        chosen = format
        warn_if_misread(column, format, stacklevel=3, declared=declared)
    misread: list[tuple[int, Any]] = []
    result = scan_column(table, column, chosen, keywords, mask_volatile, anywhere, ids,
                         run_ids, declared=declared, detected=format == "auto", misread=misread)
    # (the first rows' warning named those among them)
    _warn_of_misread([(row, what) for row, what in misread if row >= _DETECT_ROWS])
    return result


def _warn_of_misread(misread: list[tuple[int, Any]]) -> None:
    """Warn of the looping rows past the first read as native that plainly are not native
    runs (their loop false), each kind's first few named and the rest counted, as
    ``vthread scan`` warns of such lines; ``warnings.warn`` pointing at scan_arrow's
    caller."""
    if not misread:
        return
    import warnings

    from vthread.documents import misfit_lines, misread_warning, tally_misfits

    shown: list[tuple[int, Any]] = []
    totals: dict[Any, int] = {}
    tally_misfits(misread, shown, totals)
    warnings.warn(misread_warning(misfit_lines(shown, "row", totals=totals), len(misread),
                                  totals, ("pass", "format")), stacklevel=3)


RUN_ID: Final = "run_id"
"""The result column of each row's own run id (``run_ids=True``)."""


def _id_columns(table: pa.Table, id: str | Iterable[str] | None, anywhere: bool,
                run_ids: bool) -> tuple[str, ...]:
    """The id columns ``scan_arrow``'s ``id`` names (none, one, or several), each the
    table's one column of its name: a ValueError for one missing, named twice, or named as
    a result column is (the result's own would take its place, silently); a TypeError for
    an ``id`` that is no column name nor a sequence of them (``[]``, naming none, is a
    ValueError)."""
    if id is None:
        return ()
    try:
        # (a set or a mapping has no order the id columns could keep)
        names = (id,) if isinstance(id, str) else None if isinstance(
            id, bytes | bytearray | Mapping | Set) else tuple(id)
    except TypeError:  # (no iterable)
        names = None
    if names is None or not all(isinstance(name, str) for name in names):
        raise TypeError(f"id must be a column name or a sequence of them (a list, a tuple, "
                        f"a pandas Index), got {id!r}")
    if not names:
        raise ValueError("id=[] names no column: leave id out for no id column")
    if len(set(names)) < len(names):
        raise ValueError(f"id={list(names)!r} names a column twice")
    for name in names:
        one_column(table.column_names, name, "the table")
        _column(table, name)
        if name in _result_types(anywhere) or (run_ids and name == RUN_ID):
            raise ValueError(f"id={name!r} is also the name of a result column; give the id "
                             "column another name")
    return names


def scan_column(table: pa.Table, column: pa.ChunkedArray, chosen: str,
                keywords: dict[str, float | None], mask_volatile: bool, anywhere: bool,
                ids: Sequence[str] = (), run_ids: bool = False,
                declared: Sequence[str | None] | None = None, detected: bool = False,
                misread: list[tuple[int, Any]] | None = None) -> pa.Table:
    """:func:`scan_arrow` once its arguments are checked, the column found sound
    (:func:`refuse_unsound`) and the format chosen (a Ray worker's batch, whose format was
    chosen once for the dataset): ``detected`` when it was detected rather than given, so
    that a row declaring itself a mini-swe-agent run (in its run object or in
    ``declared``, the rows' :func:`declarations`) is read as one, and a row showing
    SWE-agent's actions as SWE-agent's (:func:`vthread.documents.run_reading_format`), as
    ``vthread scan`` reads such a line of a file whose chat format it detected.
    ``misread``, when given, gets (row, what it is) of each looping row read as native that
    is plainly no native run (:func:`vthread.documents.misread_as_native`), by its row in
    ``column``."""
    import pyarrow as pa

    column = decoded(column)
    rows: list[dict[str, list[Any]]] = []
    # Rows parsed into Python objects (a slice Python reads, a row that may loop) hold no
    # cycles; the collector walking them again and again cost more than the parse (measured:
    # 2,765 looping rows of the benchmark parsed in 1.77 s with it, 0.17 s without).
    with collector_paused():
        first = 0
        for piece in _slices(column):
            rows.append(_scan_slice(piece, chosen, keywords, mask_volatile, anywhere,
                                    run_ids, None if declared is None
                                    else declared[first:first + len(piece)], detected))
            found = rows[-1].pop(_MISREAD, [])
            if misread is not None:
                misread += [(first + row, what) for row, what in found]
            first += len(piece)
    fields: dict[str, Any] = {name: _column(table, name) for name in ids}
    if run_ids:
        fields[RUN_ID] = pa.array([v for part in rows for v in part[RUN_ID]], type=pa.string())
    for name, kind in _result_types(anywhere).items():
        fields[name] = pa.array([v for part in rows for v in part[name]], type=kind())
    return pa.table(fields)


def checked_arguments(format: str, mask_volatile: bool, anywhere: bool,
                      **options: float | None) -> dict[str, float | None]:
    """The cycle ``options`` of a scan of Arrow rows, once every argument is checked: a bad
    one is an error before any row is read (with Ray, before any worker starts)."""
    cycle_options(**options)  # (an option that is no number warned of here, once)
    flag("mask_volatile", mask_volatile)
    not_with_anywhere(flag("anywhere", anywhere), **options)
    checked_format(format)
    return cast("dict[str, float | None]", numbers_only(**options))


# ------------------------------------------------------------------------------ the table


def _as_table(data: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, (pa.Array, pa.ChunkedArray)) or (
            hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__")):
        try:
            return pa.table(data)
        except (pa.ArrowException, TypeError, ValueError) as error:
            # A column alone (a pyarrow array, a polars Series) exports Arrow data too, and
            # pyarrow's word for it ("ArrowSchema describes non-struct type") says nothing
            # of what to pass.
            raise TypeError(
                f"data must be a table of runs (a pyarrow Table or RecordBatch, or a table "
                f"exporting the Arrow C stream interface); got {type(data).__name__}, whose "
                f"Arrow data is no table ({error}): put a column of runs in one, "
                "pa.table({'messages': column})") from None
    raise TypeError("data must be a pyarrow Table or RecordBatch, or export the Arrow C "
                    f"stream interface; got {type(data).__name__}")


def decoded(column: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """``column`` (a table's or a record batch's) as the plain values its type wraps: a
    dictionary-encoded type (a Parquet column read with ``read_dictionary`` or written from
    a categorical, a pandas or polars categorical, a DuckDB enum), a run-end encoded one,
    an extension type (Arrow's JSON type, ``arrow.json``, as pyarrow reads a Parquet
    column of JSON: its text) and fixed-size binary, each read as the values it holds: JSON
    text stays text to read, not a string value in a run's place (each row was an error)."""
    import pyarrow as pa

    def each(unwrap: Callable[[Any], Any], kind: pa.DataType) -> Any:
        if isinstance(column, pa.Array):
            return unwrap(column)
        return pa.chunked_array([unwrap(chunk) for chunk in column.chunks], type=kind)

    try:
        while True:
            kind = column.type
            if pa.types.is_dictionary(kind):
                name = _VIEW_DECODED.get(str(kind.value_type))
                plain = None if name is None else getattr(pa, name)()
                column = each(partial(_dictionary_decoded, plain),
                              kind.value_type if plain is None else plain)
            elif isinstance(kind, pa.BaseExtensionType):
                column = each(lambda array: array.storage, kind.storage_type)
            elif getattr(pa.types, "is_run_end_encoded", lambda _: False)(kind):
                column = each(_run_end_decoded, kind.value_type)
            elif pa.types.is_fixed_size_binary(kind):
                column = column.cast(pa.binary())
            else:
                return column
    except pa.ArrowException as error:  # (an index out of its dictionary: ArrowIndexError)
        raise ValueError(f"not a valid Arrow array: {error}") from None


_VIEW_DECODED: Final = {"string_view": "large_string", "binary_view": "large_binary"}
"""The type a dictionary's values of a view type are decoded as: pyarrow has no kernel to
take them by the indices (a valid column was called no valid array)."""


def _dictionary_decoded(plain: Any, array: Any) -> Any:
    """A dictionary array's values, one a row: by pyarrow's own decoding, or, for values of
    a view type, cast to the type ``plain`` first and taken by the indices."""
    if plain is None:
        return array.dictionary_decode()
    return array.dictionary.cast(plain).take(array.indices)


def _run_end_decoded(array: Any) -> Any:
    """A run-end encoded array's values, one a row (pyarrow's own ``run_end_decode`` has no
    kernel for some value types, a dictionary among them): each row's run found by its
    end, the array's offset counted."""
    import pyarrow as pa

    ends = array.run_ends.to_numpy(zero_copy_only=False)
    rows = np.arange(array.offset, array.offset + len(array))
    return array.values.take(pa.array(np.searchsorted(ends, rows, side="right")))


def declarations(table: pa.Table, messages: str, ids: Sequence[str] = ()
                 ) -> list[str | None] | None:
    """Each row's declared format, from the table's :data:`DECLARED_COLUMN` (as
    mini-swe-agent's runs hold it) when it has one that is neither the ``messages`` nor an
    id column, as ``vthread scan X.parquet`` reads it: a row's string where it declares
    a mini-swe-agent run (:func:`vthread.documents.run_format`), else None; None for a
    table with no such column or no such row. O(rows)."""
    import pyarrow as pa

    if DECLARED_COLUMN not in table.column_names or DECLARED_COLUMN in (messages, *ids):
        return None
    try:
        values = table.column(DECLARED_COLUMN).to_pylist()
    except (ValueError, pa.ArrowException):  # (a column of values Python cannot hold)
        return None
    kept = [value if isinstance(value, str) and value.startswith("mini-swe-agent") else None
            for value in values]
    return kept if any(value is not None for value in kept) else None


def _text_with_declaration(text: bytes, declared: str | None) -> bytes:
    """A row's JSON text as :func:`vthread.documents.with_declaration` reads its value."""
    if declared is None or text.lstrip()[:1] != b"[":
        return text
    # (the declaration last, as mini-swe-agent writes it: line_marks tells it from the end)
    return b'{"messages":' + text + declaration_member(declared) + b"}"


def declaration_member(declared: str) -> bytes:
    """A run line's member declaring its format (``,"trajectory_format":"..."``), written
    after its messages by the readers of a table's :data:`DECLARED_COLUMN`."""
    return b',"' + DECLARED_COLUMN.encode() + b'":' + json.dumps(declared).encode()


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    if not isinstance(name, str):
        raise TypeError(f"column names are strings, got {type(name).__name__}")
    if name not in table.column_names:
        raise ValueError(f"no column {name!r}; the table has {', '.join(table.column_names)}")
    return table.column(name)


def _slices(column: pa.ChunkedArray) -> Iterator[pa.Array]:
    for chunk in column.chunks:
        for begin in range(0, len(chunk), ROWS_PER_SLICE):
            yield chunk.slice(begin, ROWS_PER_SLICE)


def is_text_array(array: pa.Array) -> bool:
    return array.type.id in _type_ids(_TEXT_TYPES)


def is_string_array(array: pa.Array) -> bool:
    return array.type.id in _type_ids(_STRING_TYPES)


@cache
def _type_ids(names: tuple[str, ...]) -> frozenset[int]:
    """The ids of the pyarrow types named (those this pyarrow has): a type is told by its id,
    as its name (``str``) of a nested type is as long as the type is large."""
    import pyarrow as pa

    return frozenset(getattr(pa, name)().id for name in names if hasattr(pa, name))


def as_utf8_json(text: bytes) -> bytes:
    """A string cell's UTF-8 bytes as ``json.loads`` (and the core, which reads bytes as it
    does) reads them: as UTF-8, the text the cell holds. Bytes with a NUL among their first
    four, which ``json.loads`` takes for UTF-16 or UTF-32 JSON (a binary cell's, as a JSONL
    line's), get a UTF-8 byte-order mark before them, which the reading skips as it skips a
    cell's own: the NUL is then the character no JSON text holds unescaped, and an error's
    place is the cell's. O(1) for text with no NUL there, else O(its size).

    >>> as_utf8_json(b"[1]"), as_utf8_json(b"[\\x00]\\x00")
    (b'[1]', b'\\xef\\xbb\\xbf[\\x00]\\x00')
    """
    if 0 in text[:4] and not text.startswith(codecs.BOM_UTF8):
        return codecs.BOM_UTF8 + text
    return text


# ---------------------------------------------------------------------------- the formats


def detect_column_format(column: pa.ChunkedArray, stacklevel: int = 3,
                         declared: Sequence[str | None] | None = None,
                         rows: int = _DETECT_ROWS) -> str:
    """The format every one of the first ``rows`` rows with messages fits, as ``vthread scan``
    decides it (:func:`vthread.adapters.common_format`); a ValueError naming the rows when
    they disagree, or when none is in a known format. When they are all plain chats, the
    format of the first row further on to show a chat format
    (:func:`vthread.documents.first_settling`), with a warning (``stacklevel`` as
    ``warnings.warn`` counts from this function's caller) naming the rows after it plainly
    in another and the native rows before it. A column of plain chats is thus looked
    through to its end: a text column's rows by :func:`vthread._core.line_marks` from their
    bytes (about 1.2 us a 3 KB row), a column of structs converted to Python. A row
    declaring itself a mini-swe-agent run (in its run object, or in ``declared``: the rows'
    :func:`declarations`), or showing SWE-agent's actions, is read so whatever the chat
    format detected, so it is left out of the agreement
    (:func:`vthread.documents.declared_apart`) and the settling."""
    # A few rows at a time: parsing the whole slice (4,096 rows) to look at 16 cost more
    # than scanning the table.
    values = (value for piece in _slices(column) for value in _head_values(piece))
    if declared is not None:
        values = (with_declaration(value, declared[row]) for row, value in enumerate(values))
    own: set[int] = set()
    evidence, unknown = evidence_of(_noting_runs_read_as_their_own(values, own), rows)
    evidence = declared_apart(evidence, own.__contains__)
    # (why the first row in no format is in none, as vthread scan says it of a line)
    detail = ("" if evidence or unknown is None
              else why_no_format(_python_values(column.slice(unknown, 1))[0]))
    found = agreed_format(evidence, unknown, "row", "the rows", "pass format=", detail)
    if found == "native" and unknown is not None:
        head = column.slice(0, rows)
        misfit = _misfit_rows(head, evidence, unknown)
        if misfit:
            import warnings

            warnings.warn(f"format='auto' read the rows as native, as the first are, but "
                          f"{misfit_phrase(misfit, len(head), 'row', 'native')}, and "
                          + ("its verdict may be wrong: scan it apart" if len(misfit) == 1
                             else "their verdicts may be wrong: scan them apart")
                          + misfit_advice(what for _, what in misfit),
                          stacklevel=stacklevel)
    return settled_format(found, evidence, partial(_later_evidence, column, declared),
                          rows, "row", "format='auto'", stacklevel)


def holds_messages(column: pa.ChunkedArray) -> bool:
    """Whether some row of ``column`` holds messages in a known format, which detection
    weighs: a column of nulls, empty runs, rows that are no JSON and messages in no format
    (``[null]``) gives :func:`detect_column_format` nothing to go on (on rows in no format alone it
    refuses the column, where a row in a format further on decides). O(rows up to the
    first such)."""
    values = (value for piece in _slices(column) for value in _head_values(piece))
    evidence, _ = evidence_of(values, 1)
    return bool(evidence)


def _noting_runs_read_as_their_own(values: Iterator[Any], own: set[int]) -> Iterator[Any]:
    """``values`` as they are, the place of each run read as its own whatever the detected
    chat format (a run object declaring itself a mini-swe-agent run, a run showing
    SWE-agent's actions: :func:`vthread.documents.reads_as_its_own`) added to ``own`` as it
    is read."""
    for row, value in enumerate(values):
        if type(value) in (dict, list) and reads_as_its_own(value):
            own.add(row)
        yield value


def _later_evidence(column: pa.ChunkedArray, declared: Sequence[str | None] | None,
                    start: int) -> Iterator[tuple[int, tuple[Any, bool] | None]]:
    """:func:`vthread.documents.judged_until_settled` of the rows from ``start`` on, lazily:
    a row's JSON text (a text column's bytes, a nested column's rows as the core writes
    them from the Arrow buffers, as ``vthread scan X.parquet`` reads them) passed over by
    :func:`vthread._core.line_marks` (neither a row that may settle a chat format nor one
    that may be native: a native row before the settling one is warned of, as ``vthread
    scan`` warns of such a line) or judged by the core; a row of a nested piece the core
    cannot write, converted to Python, always judged (converting every row of a column of
    plain chats doubled the cost of scan_arrow). A row declaring itself a mini-swe-agent run
    (``declared``, as :func:`detect_column_format` takes it), or showing SWE-agent's
    actions, is judged by none (:func:`vthread.documents.run_format_evidence`'s
    ``undeclared``)."""
    from vthread._core import line_marks
    from vthread.documents import judged_past_the_first

    rows = _later_rows(column, start)
    if declared is not None:
        rows = ((row, _text_with_declaration(value, declared[row]) if isinstance(value, bytes)
                 else with_declaration(value, declared[row])) for row, value in rows)
    return judged_until_settled(
        rows,
        lambda row: not isinstance(row, bytes) or judged_past_the_first(line_marks([row])[0]),
        lambda row: line_format_evidence(row, undeclared=True) if isinstance(row, bytes)
        else run_format_evidence(row, undeclared=True))


def _later_rows(column: pa.ChunkedArray, start: int) -> Iterator[tuple[int, Any]]:
    """(row, its JSON text as bytes, or its Python value where the core cannot write the
    piece's rows) of the rows from ``start`` on, null text rows left out."""
    first = start
    for piece in _slices(column.slice(start)):
        if is_text_array(piece):
            as_read = as_utf8_json if is_string_array(piece) else bytes
            for row, text in enumerate(_as_binary(piece).to_pylist()):
                if text is not None:
                    yield first + row, as_read(text)
        elif (_type_too_large(piece.type)
              or (written := nested_row_texts(piece, sound=True)) is None):
            for row, value in enumerate(_python_values(piece)):
                yield first + row, value
        else:
            data, begins, ends = written[0], written[1].tolist(), written[2].tolist()
            for at, row in enumerate(written[3].tolist()):
                yield first + row, data[begins[at]:ends[at]]
        first += len(piece)


def _as_binary(array: pa.Array) -> pa.Array:
    """A text column's slice as binary: the same buffers, its rows not decoded."""
    import pyarrow as pa

    kind = str(array.type)
    if kind == "string":
        return array.view(pa.binary())
    if kind == "large_string":
        return array.view(pa.large_binary())
    if kind == "string_view":  # (pyarrow 16 on; binary_view is no name before)
        return array.view(pa.binary_view())
    return array


def warn_if_misread(column: pa.ChunkedArray, given: str, stacklevel: int,
                    declared: Sequence[str | None] | None = None) -> None:
    """Warn, as ``vthread scan --format`` does, when some of the first rows plainly are not in
    the ``given`` format (chat messages read as native are alike, so every such run looks
    like a loop). The rows are still read as asked. ``stacklevel``: the caller's frame, as
    ``warnings.warn`` counts from this function's caller; ``declared``: the rows'
    :func:`declarations`, a row declaring mini-swe-agent judged as such a run."""
    # Only the first rows, whatever they hold (a column of empty runs is not read to its
    # end), and text rows judged by the core from their bytes: a batch of a per-batch map
    # (datasets, Spark) pays for _DETECT_ROWS rows, not for parsing them in Python.
    head = column.slice(0, _DETECT_ROWS)
    if is_text_array(head):
        # A null row keeps its place (judged as no run), so that the rows are named by
        # their index in the table.
        texts = [as_utf8_json(t.encode("utf-8", "surrogatepass")) if isinstance(t, str) else t
                 for t in text_values(head)]
        if declared is not None:
            texts = [None if text is None else _text_with_declaration(text, declared[row])
                     for row, text in enumerate(texts)]
        evidence, unknown = evidence_of(texts, _DETECT_ROWS, _text_format_evidence)
    else:
        values = _python_values(head.combine_chunks())
        if declared is not None:
            values = [with_declaration(value, declared[row]) for row, value in enumerate(values)]
        evidence, unknown = evidence_of(values, _DETECT_ROWS)
    found = misfits(evidence, given)
    if given == "native" and unknown is not None:
        found = sorted([*found, *_misfit_rows(head, evidence, unknown)])
    if found:
        import warnings

        # Of the rows looked at, not of those with messages: "rows 2, 3 of the first 2"
        # said of a column opening with two null rows.
        warnings.warn(f"format={given!r} was given, but "
                      f"{misfit_phrase(found, len(head), 'row', given)}, and "
                      + ("its verdict may be wrong" if len(found) == 1
                         else "their verdicts may be wrong")
                      + misfit_advice(what for _, what in found),
                      stacklevel=stacklevel)


def _misfit_rows(head: pa.ChunkedArray, evidence: list[tuple[int, Any, bool]],
                 unknown: int) -> list[tuple[int, Any]]:
    """(row, :func:`vthread.documents.misfit_kind`) of each row of ``head`` in no format
    (none has evidence, from ``unknown`` on) whose messages are another library's, which read
    as native are alike (the rows are parsed: a row in no format is rare)."""
    told = {row for row, _, _ in evidence}
    return [(row, what) for row, value in enumerate(_python_values(head.combine_chunks()))
            if row >= unknown and row not in told and (what := misfit_kind(value)) is not None]


def _text_format_evidence(text: bytes | None) -> tuple[Any, bool] | None:
    """:func:`vthread.documents.line_format_evidence` of a text row; None (no run) for a null
    one."""
    return None if text is None else line_format_evidence(text)


def _head_values(piece: pa.Array) -> Iterator[Any]:
    """The rows of ``piece`` as Python values, parsed lazily, :data:`_DETECT_ROWS` at a time."""
    for begin in range(0, len(piece), _DETECT_ROWS):
        yield from _python_values(piece.slice(begin, _DETECT_ROWS))


def text_values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """A text column's cells as Python values: a string cell as its ``str``, or, where a
    string cell is no UTF-8 (pyarrow writes what it is given), as its bytes, which are read
    as a binary cell's are (that row's error: such a cell made the whole file, or table, one
    error, every row lost). Row by row only when some cell is no UTF-8."""
    try:
        return cast("list[Any]", column.to_pylist())
    except UnicodeDecodeError:
        values: list[Any] = []
        for cell in (column.slice(row, 1) for row in range(len(column))):
            raw = cell_bytes(cell)
            try:
                values.append(None if raw is None else raw.decode("utf-8"))
            except UnicodeDecodeError:
                values.append(raw)
        return values


def cell_bytes(cell: pa.Array | pa.ChunkedArray) -> Any:
    """The bytes of a one-row text array (None for a null), read without decoding."""
    import pyarrow as pa

    return cell.cast(pa.large_binary())[0].as_py()


def _python_values(array: pa.Array) -> list[Any]:
    """The rows as Python values: parsed JSON text, or lists of dicts from structs (null
    struct fields dropped); a row that cannot be read is a :class:`BadRow`. The array has
    been checked (:func:`refuse_unsound`)."""
    if is_text_array(array):
        return [BadRow(_NULL_CELL) if item is None else _text_value(item)
                for item in text_values(array)]
    if _type_too_large(array.type):
        # Each row, a null one too: telling them apart (is_null) costs as much as the values.
        return [BadRow(TYPE_TOO_LARGE)] * len(array)
    return [BadRow(_NULL_CELL) if item is None
            else item if isinstance(item, BadRow) else json_ready(item)
            for item in structs_as_python(array)]


MOST_NESTED_TYPES: Final = 100_000
"""Most types a messages column's type holds, each counted at every place it is used, as its
values are: message structs hold a few dozen. A type may use one type at several places (a
struct of two fields of the struct below it), so that its values grow with the places while
its buffers do not: 30 such levels put a billion strings in each value. Past this many,
each row is an error (:data:`TYPE_TOO_LARGE`), a null one too, rather than a conversion that
exhausts memory (12 messages of 2^22 strings each ended the process)."""

TYPE_TOO_LARGE: Final = (f"messages of a type too large to read: it holds more than "
                         f"{MOST_NESTED_TYPES:,} nested types (counted at each place one is "
                         "used)")
"""The error of each row of a column whose type is past :data:`MOST_NESTED_TYPES`."""


def _type_too_large(kind: pa.DataType) -> bool:
    """Whether an Arrow type holds more than :data:`MOST_NESTED_TYPES` types, counted at
    each place (walked without recursion, and no further than that many). O(that bound)."""
    pending = [kind]
    seen = 0
    while pending:
        seen += 1
        if seen > MOST_NESTED_TYPES:
            return True
        node = pending.pop()
        fields = node.num_fields
        if fields:
            pending.extend(node.field(i).type for i in range(fields))
        elif (wrapped := _wrapped_type(node)) is not None:  # (an extension or dictionary type)
            pending.append(wrapped)
    return False


def _text_value(item: str | bytes) -> Any:
    """A text cell's value, or a :class:`BadRow` saying why it has none, as ``vthread scan``
    reads the cell's bytes: one leading byte-order mark skipped, a binary cell's UTF-16 and
    UTF-32 text read as such, as ``json.loads`` reads a JSONL line's bytes, a string cell's
    text as the UTF-8 it is (:func:`as_utf8_json`), and an integer past Python's digit limit
    read as the command reads it (an infinity, as ``JSON.parse`` does; ``json.loads``
    refused the cell). (Of a ``str``, ``json.loads`` refuses the mark: a string column and
    a binary one holding the same bytes disagreed.)"""
    from vthread._exact_json import loads_exactly  # orjson: not loaded by `import vthread`

    text = (as_utf8_json(item.encode("utf-8", "surrogatepass")) if isinstance(item, str)
            else item)
    if not text.strip(b" \t\r\n"):
        return BadRow(BLANK_CELL)
    try:
        return loads_exactly(text)
    except (ValueError, RecursionError) as error:
        return BadRow(unread_reason(text, error, "cell"))


def structs_as_python(array: pa.Array) -> list[Any]:
    """The rows of a nested column as Python values, an Arrow ``map`` as a dict (a JSON
    object, as it would be written in JSON text: ``to_pylist`` alone gives a list of
    (key, value) pairs, and a run's signature would depend on how it was stored); of keys
    given twice, the last value is kept, as ``JSON.parse`` keeps it. O(the rows' values):
    the maps are made dicts here, along the paths :func:`_map_plan` finds in the type
    (pyarrow's own conversion of maps costs time growing with the square of their nesting,
    27 s for 12 messages holding maps 1,000 deep, and ends the process on a type nested
    thousands deep, where the plain one raises RecursionError, the row's error)."""
    try:
        plan = _map_plan(array.type)
    except _MapOutOfReachError:
        return _lossy_rows(array)
    plain = python_rows(array)
    if plan is None:
        return plain
    rows: list[Any] = []
    for value in plain:
        try:
            rows.append(value if isinstance(value, BadRow) else _maps_as_dicts(value, plan))
        except _UnkeyableMapError as error:
            rows.append(BadRow(str(error)))
    return rows


def python_rows(array: pa.Array, **conversion: Any) -> list[Any]:
    """``array.to_pylist(**conversion)``, with a row holding a value Python cannot hold (a
    date, time or duration past ``datetime``'s range: pyarrow raises OverflowError or
    ValueError for the whole array) as a :class:`BadRow` saying so, row by row then (such
    values are rare, so the common array is converted at once). Times of day in nanoseconds
    are read as their text (:func:`_exact_times`)."""
    array = _exact_times(array)
    try:
        return list(array.to_pylist(**conversion))
    except (OverflowError, ValueError):
        pass
    rows: list[Any] = []
    for row in range(len(array)):
        try:
            rows.extend(array.slice(row, 1).to_pylist(**conversion))
        except (OverflowError, ValueError) as error:
            rows.append(BadRow(_out_of_range(error)))
    return rows


def _exact_times(array: pa.Array) -> pa.Array:
    """``array`` with its ``time64[ns]`` values (at any depth of lists, structs and maps)
    cast to their text, ``"00:00:00.000000001"``: pyarrow makes ``datetime.time`` of them,
    which holds microseconds, so that times differing by less compared equal (three tool
    results taken for one repeated). ``array`` itself when it holds none, or when its type
    cannot be rewritten so (a union, nesting past Python's recursion)."""
    import pyarrow as pa

    try:
        kind = _without_nanosecond_times(array.type)
    except RecursionError:
        return array
    if kind is None:
        return array
    try:
        return array.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return array


def _without_nanosecond_times(kind: pa.DataType) -> pa.DataType | None:
    """``kind`` with each ``time64[ns]`` in it made ``string``, through lists, structs and
    maps; None when there is none to change (or it lies below another type)."""
    import pyarrow as pa

    if pa.types.is_time64(kind):
        return pa.string() if kind.unit == "ns" else None
    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        changed = [_without_nanosecond_times(field.type) for field in fields]
        if all(new is None for new in changed):
            return None
        return pa.struct([field if new is None else field.with_type(new)
                          for field, new in zip(fields, changed, strict=True)])
    if pa.types.is_map(kind):
        key, item = kind.key_field, kind.item_field
        new_key, new_item = (_without_nanosecond_times(key.type),
                             _without_nanosecond_times(item.type))
        if new_key is None and new_item is None:
            return None
        return pa.map_(key.with_type(new_key or key.type), item.with_type(new_item or item.type))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        field = kind.value_field
        new = _without_nanosecond_times(field.type)
        if new is None:
            return None
        make = pa.list_ if pa.types.is_list(kind) else pa.large_list
        return make(field.with_type(new))
    if pa.types.is_fixed_size_list(kind):
        new = _without_nanosecond_times(kind.value_field.type)
        return None if new is None else pa.list_(kind.value_field.with_type(new), kind.list_size)
    return None


def _out_of_range(error: Exception) -> str:
    """The error of a row holding a value past what Python's ``datetime`` holds, or a struct
    whose fields share a name (pyarrow converts neither, with the same kinds of error)."""
    if "duplicate field names" in str(error):
        return f"not a thread: a struct in it has two fields of one name ({error})"
    if isinstance(error, UnicodeDecodeError):
        return f"not a thread: a string in it is no UTF-8 ({error})"
    return (f"not a thread: it holds a date, time or duration out of the range Python "
            f"reads ({error})")


def _lossy_rows(array: pa.Array) -> list[Any]:
    """The rows as pyarrow's own conversion of maps to dicts makes them (for a map below a
    union); a row holding a map whose keys are no dict keys (structs, lists) is a
    :class:`BadRow`, row by row then (such keys are rare)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyarrow's word on each key given twice
        try:
            converted: list[Any] = python_rows(array, maps_as_pydicts="lossy")
        except TypeError:
            converted = []
            for row in range(len(array)):
                try:
                    converted.extend(python_rows(array.slice(row, 1), maps_as_pydicts="lossy"))
                except TypeError:
                    converted.append(BadRow(_unkeyable("a map in the row", "struct or list")))
    return converted


def _unkeyable(where: str, kind: str) -> str:
    """The error of a row holding a map (at ``where``) whose keys are of ``kind``."""
    return (f"not a thread: {where} has {kind} keys, and a map whose keys are structs, "
            "lists or maps cannot be a JSON object")


class _UnkeyableMapError(Exception):
    """A map whose keys are structs, lists or maps (no dict's keys, no JSON object's
    names); its text is the row's error."""


class _MapOutOfReachError(Exception):
    """A map inside a type whose Python values do not say which of its children they are
    (a union), so that :func:`_maps_as_dicts` cannot follow it."""


def _map_plan(kind: pa.DataType) -> Any:
    """Where the maps lie in a value of Arrow type ``kind``, for :func:`_maps_as_dicts`: None
    where none does, else ``("map", plan of its values, what its keys are)`` (None for keys
    a dict can have, else ``"struct"``, ``"list"`` or ``"map"``), ``("list", plan of its
    items)`` or ``("struct", ((field name, plan), ...))`` (the fields holding maps). A type
    that wraps another (an extension type's storage, a dictionary's values, a run-end
    encoded array's values) is looked through to it, as its Python values are the wrapped
    type's. Built without recursion (a type may be nested thousands deep); O(the type's
    nodes). Raises :class:`_MapOutOfReachError` for a map below any other type with
    children."""
    import pyarrow as pa

    def children(node: pa.DataType) -> list[pa.DataType]:
        if pa.types.is_map(node):
            return [node.item_type]  # (a key holding a map is no dict key: its row's error)
        wrapped = _wrapped_type(node)
        if wrapped is not None:
            return [wrapped]
        if _is_list_type(node):
            return [node.value_type]
        return [node.field(i).type for i in range(node.num_fields)]

    result: Any = None
    stack: list[tuple[pa.DataType, list[pa.DataType], list[Any]]] = [(kind, children(kind), [])]
    while stack:
        node, below, plans = stack[-1]
        if len(plans) < len(below):
            child = below[len(plans)]
            stack.append((child, children(child), []))
            continue
        stack.pop()
        plan: Any = None
        if pa.types.is_map(node):
            plan = ("map", plans[0], _key_kind(node.key_type))
        elif _wrapped_type(node) is not None:
            plan = plans[0]
        elif _is_list_type(node):
            plan = None if plans[0] is None else ("list", plans[0])
        elif pa.types.is_struct(node):
            fields = tuple((node.field(i).name, found) for i, found in enumerate(plans)
                           if found is not None)
            plan = ("struct", fields) if fields else None
        elif any(found is not None for found in plans):
            raise _MapOutOfReachError
        if stack:
            stack[-1][2].append(plan)
        else:
            result = plan
    return result


def _wrapped_type(kind: pa.DataType) -> pa.DataType | None:
    """The type whose values ``kind`` holds when it only wraps one (an extension type's
    storage type, a dictionary's value type, a run-end encoded type's value type), else
    None."""
    import pyarrow as pa

    if isinstance(kind, pa.BaseExtensionType):
        return kind.storage_type
    if pa.types.is_dictionary(kind):
        return kind.value_type
    if getattr(pa.types, "is_run_end_encoded", lambda _: False)(kind):
        return kind.value_type
    return None


def _key_kind(kind: pa.DataType) -> str | None:
    """What a map's keys of Arrow type ``kind`` are when a dict cannot have them as keys
    (``"struct"``, ``"list"`` or ``"map"``), else None."""
    import pyarrow as pa

    while (wrapped := _wrapped_type(kind)) is not None:
        kind = wrapped
    if pa.types.is_struct(kind):
        return "struct"
    if pa.types.is_map(kind):
        return "map"
    if _is_list_type(kind):
        return "list"
    return None


def _is_list_type(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return any(getattr(pa.types, test, lambda _: False)(kind)
               for test in ("is_list", "is_large_list", "is_fixed_size_list", "is_list_view",
                            "is_large_list_view"))


def _maps_as_dicts(value: Any, plan: Any) -> Any:
    """``value`` (a row of ``to_pylist``) with each map's list of (key, value) pairs along
    ``plan`` (:func:`_map_plan`) a dict, the last value of a key given twice kept; in
    place, without recursion, in the row's order (each container's parts pushed last one
    first). Raises :class:`_UnkeyableMapError`, naming the place of the row's first map
    whose keys are structs or lists (or maps) holding any. O(the values along the plan)."""
    holder = [value]
    # (container, key, plan, where the container lies: (where its container lies, key))
    pending: list[tuple[Any, Any, Any, Any]] = [(holder, 0, plan, None)]
    while pending:
        container, key, inner_plan, where = pending.pop()
        shape, inner = inner_plan[0], inner_plan[1]
        item = container[key]
        if item is None:
            continue
        here = (where, key) if container is not holder else None
        if shape == "map":
            if inner_plan[2] is not None and item:
                raise _UnkeyableMapError(_unkeyable(_map_named(here),
                                                    inner_plan[2]))
            try:
                item = container[key] = dict(item)
            except TypeError:  # (keys of a union holding structs or lists)
                raise _UnkeyableMapError(_unkeyable(_map_named(here),
                                                    "struct or list")) from None
            if inner is not None:
                pending.extend((item, name, inner, here) for name in reversed(item))
        elif shape == "list":
            pending.extend((item, index, inner, here) for index in reversed(range(len(item))))
        else:
            pending.extend((item, name, found, here) for name, found in reversed(inner)
                           if name in item)
    return holder[0]


def _map_named(where: Any) -> str:
    """A map at ``where`` (as :func:`_place` takes it) named in a row's error."""
    place = _place(where)
    return f"the map at {place}" if place else "the row's map"


def _place(where: Any) -> str:
    """A place in a row's value (``(where its container lies, key)`` pairs, None the row,
    written as empty text) as written: ``[1].meta.tags``, a list's index (or a map's integer
    key) in brackets, a struct's field (or a map's key) after a dot when it is a name, else
    as its JSON text in brackets."""
    parts: list[str] = []
    while where is not None:
        where, key = where
        parts.append(f"[{key}]" if isinstance(key, int) and not isinstance(key, bool)
                     else f".{key}" if isinstance(key, str) and key.isidentifier()
                     else f"[{json.dumps(key, default=str)}]")
    return "".join(reversed(parts))


class BadRow:
    """Why a row is not a run."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


_JSON_LEAVES: Final = frozenset({str, int, float, bool, type(None)})


def json_ready(value: Any) -> Any:
    """``value`` (a row of :func:`structs_as_python`) as the JSON value it is read as, by
    ``scan_arrow`` and ``vthread scan X.parquet`` alike: the null fields of its objects
    dropped, a tuple a list, and each value or key with no JSON form (bytes, a timestamp,
    date, time, duration or decimal) its stand-in (:func:`_json_stand_in`), at any depth
    (iteratively). The command writes the result as JSON text, so both read one value and
    give one record. O(the value's size)."""
    if type(value) not in (dict, list, tuple):
        return value if type(value) in _JSON_LEAVES else _json_stand_in(value)
    root: Any = {} if isinstance(value, dict) else [None] * len(value)
    pending = [(value, root)]
    while pending:
        source, target = pending.pop()
        entries = source.items() if isinstance(source, dict) else enumerate(source)
        for key, child in entries:
            if child is None and isinstance(source, dict):
                continue
            if type(key) not in _JSON_LEAVES:
                key = _json_stand_in(key)
            if type(child) in (dict, list, tuple):
                copy: Any = {} if isinstance(child, dict) else [None] * len(child)
                pending.append((child, copy))
                child = copy
            elif type(child) not in _JSON_LEAVES:
                child = _json_stand_in(child)
            target[key] = child
    return root


def _json_stand_in(value: Any) -> Any:
    """The JSON value that a value with no JSON form is compared as
    (:func:`vthread._jsvalue.stand_in`: a date or timestamp as JavaScript's ``Date.toJSON``
    text, a decimal as its number), or, where that is no JSON value (bytes, a time, a
    duration), the text of its type and ``repr``, as a string."""
    from vthread._jsvalue import Opaque, stand_in

    found = stand_in(value)
    if isinstance(found, Opaque):
        text: str = json.loads(found.encoded[1:])
        return text
    if type(found) in (dict, list, tuple):
        return json_ready(found)
    return found


# ----------------------------------------------------------------------------- one slice


def _scan_slice(piece: pa.Array, format_: str, keywords: dict[str, Any],
                mask_volatile: bool, anywhere: bool, run_ids: bool = False,
                declared: Sequence[str | None] | None = None, detected: bool = False
                ) -> dict[str, list[Any]]:
    if format_ == "native":
        rows = (_text_buffers(piece) if is_text_array(piece)
                else None if _type_too_large(piece.type)
                else nested_row_texts(piece, sound=True))
        if rows is not None and is_string_array(piece) and _nul_opens_a_row(*rows[:3]):
            rows = None
        fields = (None if rows is None
                  else _scan_in_core(*rows, len(piece), keywords, mask_volatile, anywhere,
                                     run_ids))
        if fields is not None:
            return fields
    values = _python_values(piece)
    if declared is not None and detected:
        values = [with_declaration(value, declared[row]) for row, value in enumerate(values)]
    return _scan_in_python(values, format_, keywords, mask_volatile, anywhere, run_ids,
                           declared_wins=detected)


def _nul_opens_a_row(data: Any, starts: np.ndarray[Any, Any], ends: np.ndarray[Any, Any]
                     ) -> bool:
    """Whether a row of a text array (its :func:`_text_buffers`) holds a NUL among its first
    four bytes: the core reads such a row as ``json.loads`` reads bytes, as UTF-16 or
    UTF-32, which a string cell is not (:func:`as_utf8_json`); the slice is then read
    through Python objects. O(rows)."""
    data = np.frombuffer(data, np.uint8)
    for at in range(4):
        inside = starts + at < ends
        if (data[(starts + at)[inside]] == 0).any():
            return True
    return False


def _text_buffers(piece: pa.Array) -> tuple[Any, np.ndarray[Any, Any], np.ndarray[Any, Any],
                                            np.ndarray[Any, Any]]:
    """(data buffer, row starts, row ends, indexes of the non-null rows) of a text array."""
    import pyarrow as pa

    if str(piece.type) in ("string_view", "binary_view"):
        piece = piece.cast(pa.large_string() if str(piece.type) == "string_view"
                           else pa.large_binary())
    _, offsets_buffer, data_buffer = piece.buffers()
    wide = str(piece.type) in ("large_string", "large_binary")
    offsets = np.frombuffer(offsets_buffer, np.int64 if wide else np.int32)
    offsets = offsets[piece.offset : piece.offset + len(piece) + 1].astype(np.int64)
    valid = np.flatnonzero(~np.asarray(piece.is_null()))
    # Arrow exports its buffers as signed bytes; the core reads unsigned ones (no copy).
    data = memoryview(data_buffer).cast("B") if data_buffer is not None else b""
    # (its offsets lie within its data: the column was found sound, refuse_unsound)
    return data, offsets[:-1][valid], offsets[1:][valid], valid


def nested_row_texts(piece: pa.Array, *, sound: bool = False
                     ) -> tuple[Any, np.ndarray[Any, Any], np.ndarray[Any, Any],
                                np.ndarray[Any, Any]] | None:
    """``_core.arrow_row_texts`` of a nested array, or None where it is to be read through
    Python objects: where the core says some value has no JSON text, and where the array is
    sound but a string in it is no UTF-8 (pyarrow writes such strings as it is given them,
    and reads them back from a Parquet file), so that only the rows holding one are errors;
    the core refused the whole array, which ended the file (found by a tester). ``sound``:
    whatever the core refuses is left to the caller's Python reading, which checks the
    array itself (:func:`_python_values`). Any other array the core refuses is its
    ValueError."""
    from vthread import _core

    try:
        return _core.arrow_row_texts(piece, core_threads())
    except ValueError:
        if sound or _sound_but_for_utf8(piece):
            return None
        raise


def refuse_unsound(column: pa.ChunkedArray | pa.Array) -> None:
    """A ValueError, ``not a valid Arrow array: ...``, when ``column`` is not sound (offsets
    out of order or out of its buffers, string views pointing at buffers it lacks,
    dictionary indexes out of range): such an array, which ``pa.Array.from_buffers`` or
    another exporter can hand over, is never read, as converting any of it to Python, or
    casting it, reads memory it does not own (a tester's ended the process). Called once
    on a column before any of it is read (a slice's check is of its whole chunk: pyarrow
    validates a child array whole).

    Its strings seen as bytes, the same buffers, it is checked without its text (a string
    that is no UTF-8 is its row's error): about 0.25 us a row of message structs. Where
    that view cannot be made, or pyarrow's view of a sound array fails (a null-typed child,
    a run-end encoding inside a struct), the array is checked in full, text too, and must
    pass."""
    import pyarrow as pa

    for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column]):
        if _type_too_large(chunk.type) or _sound_but_for_utf8(chunk):
            # (no value of a type too large is read: each row is an error, told by its type)
            continue
        try:
            chunk.validate(full=True)
        except pa.ArrowException as error:
            raise ValueError(f"not a valid Arrow array: {error}") from None


def _sound_but_for_utf8(piece: pa.Array) -> bool:
    """Whether ``piece`` passes pyarrow's full validation with its strings seen as binary
    (the same buffers: a view), that is, whether all that is wrong in it is text that is no
    UTF-8. False for a type this does not rewrite (an extension type, a run-end encoding)."""
    import pyarrow as pa

    try:
        piece.view(_strings_as_binary(piece.type)).validate(full=True)
    except (pa.ArrowException, ValueError, TypeError, RecursionError):
        return False
    return True


def _strings_as_binary(kind: pa.DataType) -> pa.DataType:
    """``kind`` with each string type in it the binary type of the same layout; TypeError for
    a type holding one this does not rewrite."""
    import pyarrow as pa

    if pa.types.is_string(kind):
        return pa.binary()
    if pa.types.is_large_string(kind):
        return pa.large_binary()
    if str(kind) == "string_view":
        return pa.binary_view()
    if pa.types.is_map(kind):
        return pa.map_(kind.key_field.with_type(_strings_as_binary(kind.key_type)),
                       kind.item_field.with_type(_strings_as_binary(kind.item_type)),
                       kind.keys_sorted)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        field = kind.value_field.with_type(_strings_as_binary(kind.value_type))
        return pa.list_(field) if pa.types.is_list(kind) else pa.large_list(field)
    if pa.types.is_fixed_size_list(kind):
        return pa.list_(kind.value_field.with_type(_strings_as_binary(kind.value_type)),
                        kind.list_size)
    if pa.types.is_struct(kind):
        return pa.struct([field.with_type(_strings_as_binary(field.type)) for field in kind])
    if pa.types.is_dictionary(kind):
        return pa.dictionary(kind.index_type, _strings_as_binary(kind.value_type), kind.ordered)
    if pa.types.is_list_view(kind) or pa.types.is_large_list_view(kind):
        field = kind.value_field.with_type(_strings_as_binary(kind.value_type))
        return pa.list_view(field) if pa.types.is_list_view(kind) else pa.large_list_view(field)
    if pa.types.is_union(kind):
        return pa.union([field.with_type(_strings_as_binary(field.type)) for field in kind],
                        kind.mode, kind.type_codes)
    if kind.num_fields or isinstance(kind, pa.ExtensionType) or pa.types.is_run_end_encoded(
            kind):
        # (pyarrow's view of a run-end encoding inside a struct gives the struct a child of
        # its runs' length: no sound array passes)
        raise TypeError(f"not rewritten: {kind}")
    return kind


def _scan_in_core(data: Any, starts: np.ndarray[Any, Any], ends: np.ndarray[Any, Any],
                  valid: np.ndarray[Any, Any], length: int, keywords: dict[str, Any],
                  mask_volatile: bool = False, anywhere: bool = False, run_ids: bool = False
                  ) -> dict[str, list[Any]] | None:
    """The slice's rows (``data[starts[i]:ends[i]]`` the JSON text of row ``valid[i]``, the
    others null) read by the core (each row's masked copy with ``mask_volatile``, which the
    core writes as a native line; with ``anywhere`` its message screens, only the rows that
    may loop then parsed in Python); None when a row needs Python."""
    from vthread import _core
    from vthread.anywhere import core_text_run

    options = cycle_options(**keywords)
    raw = _core.scan_slices(data, starts, ends, core_options(options), False,
                            core_threads(), mask_volatile=mask_volatile,
                            anywhere=core_text_run() if anywhere else None)
    if raw["declined"].size:
        return None  # a row only Python reads: the slice goes through Python objects
    view = memoryview(data)
    if anywhere:
        found = _anywhere_in_core(data, starts, ends, raw)
        if found is None:
            return None  # the Python objects' way says what is wrong with the row
        result = found
    else:
        try:
            result = scan_of_lines(raw, options,
                                   lambda row: bytes(view[int(starts[row]):int(ends[row])]))
        except LineUnreadError:
            return None  # the Python objects' way says what is wrong with the row
    counts = raw["message_counts"].tolist()
    fields = _fields(result, counts, [None] * len(counts))
    if run_ids:
        fields[RUN_ID] = [_run_id_text(text) for text in raw["id_texts"]]
    # Looping rows whose first message the core's screen marked, read as native: those
    # plainly in another format (their loop false), by their row in the slice.
    fields[_MISREAD] = [
        (int(valid[index]), misfit) for index in np.flatnonzero(
            (result.codes > 0) & raw["chat_first"]).tolist()
        if (misfit := misread_as_native(bytes(view[int(starts[index]):int(ends[index])])))
        is not None]
    if len(valid) == length:
        return fields
    # Null rows: an error each, in place.
    spread: dict[str, list[Any]] = {name: [None] * length for name in fields}
    spread["error"] = [_NULL_CELL] * length
    for name, values in fields.items():
        if name == _MISREAD:
            spread[name] = values  # (rows of the slice already)
            continue
        column = spread[name]
        for index, value in zip(valid.tolist(), values, strict=True):
            column[index] = value
    return spread


_MISREAD: Final = "misread"
"""The key of a slice's fields holding (row, what it is) of each looping row read as native
that is plainly no native run (:func:`vthread.documents.misread_as_native`)."""


def _anywhere_in_core(data: Any, starts: np.ndarray[Any, Any], ends: np.ndarray[Any, Any],
                      raw: dict[str, Any]) -> ScanResult | None:
    """Every loop of each row the core screened; a row is parsed in Python (as the native
    line the core wrote of a masked row) only when its screens repeat. None when a row the
    core read is no run to Python."""
    from vthread._exact_json import loads_exactly  # orjson: not loaded by `import vthread`
    from vthread.scan import scan_anywhere_of_lines

    written = written_lines(raw, range(len(starts)))
    view = memoryview(data)

    def text_of(row: int) -> bytes:
        # Copied out of the column's buffer only for a row that may loop (a quarter of the
        # rows, or none): copying every row up front doubled the column in memory.
        return bytes(view[int(starts[row]):int(ends[row])])

    def read(text: bytes, long_digits: bool) -> list[dict[str, Any]]:
        found = read_run(loads_exactly(text, long_digits), "native")
        if isinstance(found, str):
            raise ValueError(f"a row the core read is no run to Python: {found}")
        return found[1]

    return scan_anywhere_of_lines(
        raw["anywhere"], text_of if written is None else written.__getitem__, read)


def core_threads() -> int:
    """Threads the core reads a slice on: ``RAYON_NUM_THREADS`` when set to a positive
    integer (as for the core's own pool), else the machine's CPUs. A Ray or Spark worker
    given one CPU sets it to 1 so that workers side by side do not each start every core."""
    raw = os.environ.get("RAYON_NUM_THREADS", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return os.cpu_count() or 1


def _scan_in_python(values: Sequence[Any], format_: str, keywords: dict[str, Any],
                    mask_volatile: bool, anywhere: bool = False, run_ids: bool = False,
                    declared_wins: bool = False) -> dict[str, list[Any]]:
    threads: list[list[dict[str, Any]]] = []
    idents: list[Any] = []  # every row's run id, an error row's too (as vthread scan's)
    sources: list[list[int] | None] = []
    counts: list[int] = []
    errors: list[str | None] = []
    for value in values:
        found = (value.reason if isinstance(value, BadRow)
                 else read_cell(value, format_, declared_wins))
        if isinstance(found, str):
            errors.append(found)
            idents.append(run_id(value) if type(value) is dict else None)
            continue
        ident, thread, origins = found
        idents.append(ident)
        errors.append(None)
        threads.append(masked_native(thread) if mask_volatile else thread)
        sources.append(origins)
        counts.append(origins[-1] + 1 if origins else len(thread))
    result = scan_validated(threads, anywhere=anywhere, **keywords)
    for row, origins in enumerate(sources):
        if origins is not None:
            in_source_messages(result, row, origins, tokens_between(threads[row]))
    scanned = _fields(result, counts, [None] * len(counts))
    out: dict[str, list[Any]] = {name: [] for name in scanned}
    row = 0
    for error in errors:
        for name, column in out.items():
            if error is None:
                column.append(scanned[name][row])
            else:
                column.append(error if name == "error" else None)
        row += error is None
    if run_ids:
        from vthread._records import record_id

        out[RUN_ID] = [_run_id_text(record_id(ident)) for ident in idents]
    if format_ == "native":
        # (as the core's way finds them: each looping row plainly no native run)
        out[_MISREAD] = [(row, what) for row, (value, verdict) in enumerate(
            zip(values, out["verdict"], strict=True)) if verdict is not None
            and not isinstance(value, BadRow) and (what := misread_value(value)) is not None]
    return out


def _run_id_text(text: str) -> str | None:
    """A run id's column value from its JSON text as a ``vthread scan`` record holds it
    (:func:`_run_id_value` of its value)."""
    return _run_id_value(json.loads(text))


def _run_id_value(value: Any) -> str | None:
    """A run id's column value from the JSON value a ``vthread scan`` record holds: a
    string as it is, null as null, another value as its JSON text (as ``-o X.parquet``
    writes a record's id, a surrogate pair as its character and a lone surrogate, which no
    Arrow string holds, as U+FFFD)."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)
    return unicode_text(value)


def _fields(result: ScanResult, counts: list[int],
            errors: list[str | None]) -> dict[str, list[Any]]:
    codes = result.codes.tolist()
    loops = [code > 0 for code in codes]
    return {
        "verdict": [HEURISTIC_NAMES[c - 1] if c > 0 else None for c in codes],
        "loop_start": result.loop_start.tolist(),
        "period": result.period.tolist(),
        "repetitions": result.repetitions.tolist(),
        "loop_messages": result.loop_messages.tolist(),
        # None where unknown (NaN) or past the largest double (infinity), as a record's
        "loop_tokens": [t if math.isfinite(t) else None for t in result.loop_tokens.tolist()],
        "signature": [f"{s:016x}" if loop else None
                      for s, loop in zip(result.signature.tolist(), loops, strict=True)],
        "excerpt": list(result.excerpt),
        "messages": counts,
        "error": errors,
    } | ({} if result.loops is None else {"loops": [[loop_as_json(loop) for loop in loops]
                                                   for loops in result.loops]})


def result_table(result: ScanResult) -> pa.Table:
    """:meth:`vthread.scan.ScanResult.to_arrow`: the rows of ``result`` as the columns
    :func:`scan_arrow` gives with ``run_ids=True``, the same values for the same runs."""
    import pyarrow as pa

    from vthread.scan import json_id

    # (always: a batch of bare messages, or none, has the column as scan_arrow's has, null)
    fields: dict[str, Any] = {RUN_ID: pa.array(
        [None] * len(result) if result.ids is None
        else [_run_id_value(json_id(ident)) for ident in result.ids], type=pa.string())}
    columns = _fields(result, result.messages.tolist(), result.errors or [None] * len(result))
    for row, error in enumerate(result.errors or ()):
        if error is not None:  # (a thread not read: its error alone, as scan_arrow's rows)
            for name, column in columns.items():
                column[row] = error if name == "error" else None
    for name, kind in _result_types(result.loops is not None).items():
        fields[name] = pa.array(columns[name], type=kind())
    return pa.table(fields)


def _result_types(anywhere: bool = False) -> dict[str, Any]:
    """Each result column's type (a factory); with ``anywhere``, ``loops`` last."""
    import pyarrow as pa

    types: dict[str, Any] = {
        "verdict": pa.string, "loop_start": pa.int64, "period": pa.int64,
        "repetitions": pa.int64, "loop_messages": pa.int64, "loop_tokens": pa.float64,
        "signature": pa.string, "excerpt": pa.string, "messages": pa.int64,
        "error": pa.string}
    if anywhere:
        loop = pa.struct([(name, types[name]()) for name in LOOP_FIELDS])
        types["loops"] = lambda: pa.list_(loop)
    return types
