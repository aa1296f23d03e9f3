"""Parquet files for ``vthread scan``: runs read row group by row group, records written so.

Reading: each row of a Parquet file becomes one line of the scan's usual pipeline, so every
format, error record and option works as for JSONL, and ``line`` in a record is the row's
number (from 1). The messages are the column named by ``--messages-key`` (default the first
of ``messages``, ``traj``, ``history`` the file has), as JSON text (an array of messages or
a run object) or as a list of structs (a null struct field read as absent); the id is the
``--id-key`` column, else ``id`` or ``instance_id``, else ``task_id`` with ``trial``.
Rows are read in batches of at most ``rows`` rows, so memory does not grow with the file.
A row group pyarrow cannot read (a corrupt page) is an error record per row of it, naming the
group, its rows and pyarrow's reason, and the row groups after it are still read; a file
whose footer cannot be read is one error, as before.

Writing (``-o VERDICTS.parquet``): the records, one row each, in input order, with the
columns of :data:`RECORD_COLUMNS`; a row group is written every :data:`ROWS_PER_GROUP`
records. An id that is not a string is written as its JSON text.

pyarrow is imported only when a Parquet file is read or written
(``pip install 'vthread[arrow]'``).
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

from vthread._cli_main import is_utf8, require_regular
from vthread._jsvalue import unicode_text
from vthread._records import record_id
from vthread.documents import DECLARED_COLUMN, messages_column, one_column, run_id

__all__ = ["NEEDS_PYARROW", "RECORD_COLUMNS", "ROWS_PER_GROUP", "ParquetRecords", "UnreadableRows",
           "is_parquet", "parquet_available", "parquet_lines", "read_errors"]

PARQUET_SUFFIXES: Final = (".parquet", ".pq")
ROWS_PER_GROUP: Final = 16_384
"""Records per row group written: large enough for Parquet's column compression to work."""
_ID_COLUMNS: Final = ("id", "instance_id")
NEEDS_PYARROW: Final = "Parquet files need pyarrow: pip install 'vthread[arrow]'"


def is_parquet(name: str) -> bool:
    """Whether ``name`` names a Parquet file (by its ending)."""
    return name.lower().endswith(PARQUET_SUFFIXES)


def parquet_source(path: str) -> Any:
    """What pyarrow opens for ``path``: the path itself, or, for a name that is no UTF-8 (its
    undecodable bytes held as Python holds them, which pyarrow cannot take), the file opened
    by its bytes. OSError for anything but a regular file (:func:`require_regular`)."""
    require_regular(path, "a Parquet file is read from its end (its footer)")
    return path if is_utf8(path) else _pyarrow().OSFile(os.fsencode(path))


def parquet_available() -> bool:
    """Whether pyarrow (and its Parquet module) can be imported."""
    try:
        _pyarrow()
    except OSError:
        return False
    return True


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet
    except ImportError as error:
        raise OSError(NEEDS_PYARROW) from error
    return pa


def _columns(names: list[str], messages_key: str | None,
             id_key: str | None) -> tuple[str, list[str]]:
    """(messages column, the id columns to read) of a file with columns ``names``."""
    messages = messages_column(names, messages_key, "the file", "--messages-key")
    if id_key is not None:
        if id_key not in names:
            raise ValueError(f"no column {id_key!r}; the file has {', '.join(names)}")
        ids = [id_key]
    else:
        ids = next(([key] for key in _ID_COLUMNS if key in names), [])
        if not ids and "task_id" in names:
            ids = ["task_id"] + (["trial"] if "trial" in names else [])
    return messages, [one_column(names, name, "the file") for name in ids]


def _id_values(column: Any) -> list[Any]:
    """An id column's values; one Python cannot hold (a date past ``datetime``'s range) as
    the text of its type and stored number, ``date32[day]:2147483647``, so that its record
    still names its row's id (pyarrow raises for the whole column)."""
    import pyarrow as pa

    from vthread.arrow import BadRow, cell_bytes, is_string_array, python_rows

    values = python_rows(column)
    for row, value in enumerate(values):
        if isinstance(value, BadRow):
            cell = column.slice(row, 1)
            if is_string_array(cell):
                # Text that is no UTF-8 (pyarrow writes what it is given): its bytes, each
                # that is no UTF-8 as \xNN, so that two such ids stay two (it ended the
                # file: "Non-fixed width type").
                values[row] = cell_bytes(cell).decode("utf-8", "backslashreplace")
                continue
            stored = cell.view(pa.int64() if cell.type.bit_width == 64 else pa.int32())
            values[row] = f"{cell.type}:{stored[0].as_py()}"
    return values


def _id_text(values: list[Any]) -> bytes:
    """The JSON text of a row's id from its id columns' values. A binary value is its bytes
    read as text, each byte that is no UTF-8 as \\xNN, as a string cell's that is no UTF-8
    (its Python repr, ``"b'ab'"``, would name no id the file holds)."""
    values = [bytes(value).decode("utf-8", "backslashreplace")
              if isinstance(value, (bytes, bytearray, memoryview)) else value
              for value in values]
    if len(values) == 2:  # task_id and trial, joined as a JSONL line's are
        # (a value JSON has not, a date or a Decimal, as its text, as a lone id's is)
        task, trial = (value if value is None or isinstance(value, (bool, int, float, str))
                       else str(value) for value in values)
        ident: Any = run_id({"task_id": task, "trial": trial})
    else:
        ident = values[0] if values else None
    try:
        return json.dumps(ident, allow_nan=False).encode()
    except ValueError:
        # NaN or an infinity, for which JSON has no number: named as a JSONL line's such id
        # is ("NaN", "Infinity"; Python's own str said "nan", "inf").
        return record_id(ident).encode()
    except TypeError:
        return json.dumps(str(ident)).encode()


@dataclass(frozen=True, slots=True)
class UnreadableRows:
    """Rows that cannot be read as runs, in the place of their lines: ``rows`` rows, and
    ``reason``, which names the row group, its rows and pyarrow's message for a row group
    pyarrow cannot read, or says why of one row that is no run however it is read (a map
    keyed by structs); ``ids``, the JSON text of each row's id where the id columns could
    be read alone (a group whose messages cannot be read may have readable ids), else empty."""

    rows: int
    reason: str
    ids: tuple[bytes, ...] = ()


Lines: TypeAlias = tuple[list[bytes] | UnreadableRows, float, dict[int, bytes]]
"""What :func:`parquet_lines` hands on at a time: a batch's lines (or rows that cannot be
read), the share of the file read so far, and the ids of its lines that are cells alone."""


def parquet_lines(path: str, messages_key: str | None, id_key: str | None, rows: int
                  ) -> Iterator[Lines]:
    """The file's rows as JSONL lines, ``rows`` at a time, each batch with the share of the
    file read so far (for progress) and the ids of its rows whose line is their cell alone.
    ``{"id": ..., "messages": ...}`` per row, or the row's own run object when the messages
    column holds one (with the id column's id last, when an id column is read, as
    ``vthread.scan_arrow`` takes it), or, for a cell that is no JSON (cut off, empty), the
    cell alone, so that its error says where in the cell the JSON breaks: its id (JSON
    text, by the row's place in the batch) then goes beside the lines, for its record. The
    rows of a row group that cannot be read are an :class:`UnreadableRows` in their place,
    and the row groups after it are still read."""
    pa = _pyarrow()
    # Read a column chunk a buffer at a time rather than whole: memory then follows the
    # batch, not the row group (measured: 554 MB down to 456 MB reading 40,000 runs).
    parquet = pa.parquet.ParquetFile(parquet_source(path), buffer_size=1 << 20,
                                     pre_buffer=False)
    names = parquet.schema_arrow.names
    messages, id_columns = _columns(names, messages_key, id_key)
    # A run's declared format (mini-swe-agent's), read into its line as a JSONL run holds
    # it: the scan reads the run as it declares where the file's format was detected.
    declared = ([DECLARED_COLUMN] if DECLARED_COLUMN in names
                and DECLARED_COLUMN not in (messages, *id_columns) else [])
    total = max(1, parquet.metadata.num_rows)
    done = 0
    for batch in _readable_batches(parquet, [messages, *id_columns, *declared], rows,
                                   id_columns):
        if isinstance(batch, UnreadableRows):
            done += batch.rows
            yield batch, done / total, dict(enumerate(batch.ids))
            continue
        parts: list[Lines] | None = None
        try:
            parts = _batch_lines(batch, messages, id_columns, bool(declared), done, total)
        except MemoryError:
            if len(batch) == 1:
                raise
        if parts is None:
            # The batch's rows one at a time (out of the handler, whose traceback would hold
            # the memory of the failed attempt): the records of the rows before one whose
            # memory cannot be had are written, then its MemoryError ends the scan.
            for row in range(len(batch)):
                yield from _batch_lines(batch.slice(row, 1), messages, id_columns,
                                        bool(declared), done + row, total)
        else:
            yield from parts
        done += len(batch)


def _batch_lines(batch: Any, messages: str, id_columns: list[str], declared: bool,
                 done: int, total: int
                 ) -> list[Lines]:
    """What :func:`parquet_lines` hands on for one record batch (``messages``: the
    messages column's name; ``declared``: whether the batch holds
    :data:`DECLARED_COLUMN`), its first row the file's ``done``-th of ``total``."""
    from vthread import _core
    from vthread.arrow import decoded, is_text_array

    parts: list[Lines] = []
    column = decoded(batch.column(messages))
    text = is_text_array(column)
    ids = [_id_values(batch.column(name)) for name in id_columns]
    declarations = (_declarations(batch.column(DECLARED_COLUMN)) if declared
                    else [b""] * len(column))
    lines: list[bytes] = []
    cell_ids: dict[int, bytes] = {}
    bodies = _bodies(column, text, done)
    # The tape's verdict is enough for the cells it reads (all but odd ones); json's
    # decides the rest, with its message.
    taken = (_core.tape_reads(cast("list[bytes]", bodies)) if text
             else [True] * len(bodies))
    for row, body in enumerate(bodies):
        ident = _id_text([column_values[row] for column_values in ids])
        if isinstance(body, UnreadableRows):
            # A row that is no run whatever its reading (a map keyed by structs): its
            # error record in its place, the rows before it handed on first.
            if lines:
                parts.append((lines, (done + row) / total, cell_ids))
                lines, cell_ids = [], {}
            parts.append((body, (done + row + 1) / total, {0: ident} if id_columns else {}))
            continue
        if not taken[row]:
            if not _one_json_value(body):
                # The cell alone is the line, so that its record says where in the cell
                # it stops being JSON (wrapped, the place was the wrapping's, and a cell
                # such as `[],"id":"x"` would have made a valid run of its wrapping).
                if id_columns:
                    cell_ids[len(lines)] = ident
                lines.append(body)
                continue
            body = _as_utf8(body)
        opening = body.lstrip()[:1]
        if opening == b"{":  # a run object: its messages, and its own id
            lines.append(_with_id(body, ident) if id_columns else body)
        else:  # (only an array has messages to declare a format of: with_declaration)
            # The declaration last, as mini-swe-agent writes it: the core tells it from
            # the line's end, and looks past it unparsed (line_marks).
            declaration = declarations[row] if opening == b"[" else b""
            lines.append(b'{"id":' + ident + b',"messages":' + body + declaration + b"}")
    if lines:
        parts.append((lines, (done + len(column)) / total, cell_ids))
    return parts


def _declarations(column: Any) -> list[bytes]:
    """Each row's declared format as its line's member (``,"trajectory_format":"..."``), or
    nothing where the cell holds no string (null, or a column of another type)."""
    from vthread.arrow import declaration_member

    try:
        values = column.to_pylist()
    except read_errors():
        return [b""] * len(column)
    return [declaration_member(value) if isinstance(value, str) else b"" for value in values]


def _with_id(run: bytes, ident: bytes) -> bytes:
    """A run object (one JSON object) with ``"id": ident`` last, so that the id column's id is
    the run's record id (of a key given twice, a JSON object's last counts, in vthread's
    reading as in JavaScript's and Python's). ``vthread.scan_arrow`` keeps an id column as
    a column of its own (``id=``) and ``run_ids=True`` the run object's own id."""
    inside = run.rstrip()[:-1].rstrip()  # without its closing brace
    return inside + (b'"id":' if inside.endswith(b"{") else b',"id":') + ident + b"}"


def read_errors() -> tuple[type[BaseException], ...]:
    """What pyarrow raises for data it cannot read (its MemoryError aside: no row's fault)."""
    pa = _pyarrow()
    return OSError, ValueError, pa.ArrowException


def _readable_batches(parquet: Any, columns: list[str], rows: int,
                      id_columns: list[str]) -> Iterator[Any | UnreadableRows]:
    """The file's record batches of at most ``rows`` rows, read across row groups as one
    reader reads them (a good file's batches are those of ``iter_batches``). When a read
    fails, the row group it failed in is found by reading the groups from there one by one:
    an :class:`UnreadableRows` stands for the rows of a group that cannot be read, and the
    reading goes on with the next group."""
    metadata = parquet.metadata
    starts = [0]  # the first row of each row group, and the end of the last
    for group in range(metadata.num_row_groups):
        starts.append(starts[-1] + metadata.row_group(group).num_rows)
    groups = len(starts) - 1
    done = 0  # rows handed on, read or not
    group = 0  # the first row group not handed on
    while group < groups:
        ran_out = False
        try:
            for batch in _batches_until_failure(parquet, columns, rows,
                                                list(range(group, groups)), []):
                yield batch
                done += len(batch)
        except MemoryError:
            if rows == 1 or done >= starts[-1]:
                raise
            ran_out = True
        if ran_out:
            # The rest of the row group the batch that did not fit is in, read again a row
            # at a time (out of the handler, whose traceback would hold the memory of the
            # failed read; pyarrow reads a group only from its start, so the rest of it,
            # not the batch alone): the rows before one whose memory cannot be had are
            # handed on (their records written), and its MemoryError ends the scan.
            group = bisect_right(starts, done) - 1
            yield from _one_group(parquet, columns, 1, group, starts, done, id_columns)
            done = starts[group + 1]
            group += 1
            continue
        if done >= starts[-1]:
            return
        # A read failed, or the rows ended before the metadata's count: the groups from the
        # one holding row `done` on, read one at a time until one fails (or all are read).
        group = bisect_right(starts, done) - 1
        yield from _one_group(parquet, columns, rows, group, starts, done, id_columns)
        done = starts[group + 1]
        group += 1


def _batches_until_failure(parquet: Any, columns: list[str], rows: int,
                           row_groups: list[int], failed: list[str]) -> Iterator[Any]:
    """The record batches of ``row_groups``, read until one cannot be: pyarrow's reason (its
    message on one line) is then added to ``failed`` and the batches end. A MemoryError is
    raised (no row's fault)."""
    batches = None
    try:
        batches = parquet.iter_batches(batch_size=rows, columns=columns, row_groups=row_groups)
        yield from batches
    except MemoryError:
        raise
    except read_errors() as error:
        # (pyarrow's message may run over lines: "...thrift: invalid TType\nDeserializing...")
        failed.append("; ".join(filter(None, map(str.strip, str(error).splitlines())))
                      or type(error).__name__)
    finally:
        close = getattr(batches, "close", None)
        if close is not None:
            close()


def _one_group(parquet: Any, columns: list[str], rows: int, group: int, starts: list[int],
               first: int, id_columns: list[str]) -> Iterator[Any | UnreadableRows]:
    """Row group ``group``'s batches from row ``first`` (counted from 0 in the file) on; an
    :class:`UnreadableRows` for its rows from where it cannot be read to its end, with
    their ids when ``id_columns`` can be read alone."""
    start, end = starts[group], starts[group + 1]
    at = start  # the file's row of the next batch's first
    failed: list[str] = []
    for batch in _batches_until_failure(parquet, columns, rows, [group], failed):
        if at + len(batch) > first:
            yield batch.slice(max(0, first - at)) if at < first else batch
        at += len(batch)
    reason = failed[0] if failed else None
    at = max(at, first)
    if at < end:
        where = f"row group {group} (rows {start + 1:,}-{end:,})"
        if at > start:
            where += f" from row {at + 1:,} on"
        if reason is None:
            reason = f"it ends after {at - start:,} of the {end - start:,} rows the file's " \
                     "metadata counts"
        yield UnreadableRows(end - at, f"cannot read {where}: {reason}",
                             _group_ids(parquet, group, id_columns, at - start))


def _group_ids(parquet: Any, group: int, id_columns: list[str], skip: int) -> tuple[bytes, ...]:
    """The JSON text of the ids of row group ``group``'s rows from its ``skip``-th on, read
    from the id columns alone; empty when there are none, or they cannot be read either."""
    if not id_columns:
        return ()
    try:
        table = parquet.read_row_group(group, columns=id_columns)
    except MemoryError:
        raise
    except read_errors():
        return ()
    values = [_id_values(table.column(name).combine_chunks()) for name in id_columns]
    return tuple(_id_text([column[row] for column in values])
                 for row in range(skip, table.num_rows))


def _one_json_value(body: bytes) -> bool:
    """Whether a text cell is one JSON value, as ``json.loads`` reads text."""
    from vthread._exact_json import loads_exactly

    try:
        loads_exactly(body, long_digits=False)  # (orjson's rounding of long integers: moot)
    except (ValueError, RecursionError):
        return False
    return True


def _as_utf8(body: bytes) -> bytes:
    """A cell that is one JSON value (:func:`_one_json_value`) as UTF-8 text with no
    byte-order mark, of the same value: ``json.loads`` of the cell's bytes skips a leading
    mark and reads UTF-16 and UTF-32 text, as it reads a JSONL line's, but inside the line
    the cell is wrapped in, either broke the line (an error naming the wrapping's place,
    with no id). O(1) for a UTF-8 cell with no mark, else O(its size)."""
    encoding = json.detect_encoding(body)
    if encoding == "utf-8":
        return body
    # The decoded text opens with no U+FEFF (json.loads would have refused it), so its
    # UTF-8 bytes read as the same value; a lone surrogate passes through, as in the cell.
    return body.decode(encoding, "surrogatepass").encode("utf-8", "surrogatepass")


def _bodies(column: Any, text: bool, rows_before: int) -> list[bytes | UnreadableRows]:
    """Each row's messages as JSON text (``null`` for a null row), or, for a row that is no
    run however it is read (a map keyed by structs), an :class:`UnreadableRows` of one row
    saying why, as ``vthread.scan_arrow`` says it. Nested values (lists of message structs)
    are written by the core from the Arrow buffers when every value has a JSON text, with
    no Python object per row; otherwise, and for text columns, from ``to_pylist``, a value
    with no JSON text as the JSON value scan_arrow reads it as (:func:`json_ready`).
    ``rows_before`` numbers the rows in an error."""
    if not text:
        from vthread.arrow import nested_row_texts

        written = nested_row_texts(column)
        if written is not None:
            data, starts, ends, rows = written
            bodies: list[bytes | UnreadableRows] = [b"null"] * len(column)
            for row, start, end in zip(rows.tolist(), starts.tolist(), ends.tolist(),
                                       strict=True):
                bodies[row] = data[start:end]
            return bodies
    from vthread.arrow import BadRow, as_utf8_json, json_ready, structs_as_python, text_values

    bodies = []
    for row, value in enumerate(text_values(column) if text else structs_as_python(column)):
        if value is None:
            bodies.append(b"null")
        elif isinstance(value, BadRow):
            bodies.append(UnreadableRows(1, value.reason))
        elif text:
            bodies.append(as_utf8_json(value.encode("utf-8", "surrogatepass"))
                          if isinstance(value, str) else value)
        else:
            # NaN and the infinities written as json writes them (NaN, Infinity), which the
            # pipeline reads as json.loads does: a JSONL line holding them is read alike.
            try:
                bodies.append(json.dumps(json_ready(value)).encode())
            except RecursionError:
                raise ValueError(f"row {rows_before + row + 1}: messages nested too deep to "
                                 "read") from None
    return bodies


class ParquetRecords:
    """A binary sink for the scan's JSONL records that writes them to a Parquet file; with
    ``anywhere``, a last column ``loops`` holds each record's loops (a list of structs with
    the record's own loop fields).

    The file is opened here as a JSONL output is (written in place, through a link, keeping
    its mode and links; a name that is no UTF-8, which pyarrow cannot take, is opened by
    Python). Parquet's strings are UTF-8, so a string that is not Unicode text (a lone
    surrogate in an id, a file name's undecodable bytes) is written with U+FFFD in place of
    each such code point (it crashed the writer when it closed); the JSONL records keep it
    as an escape."""

    def __init__(self, path: str, *, anywhere: bool = False) -> None:
        pa = _pyarrow()
        self._pa = pa
        self._schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in RECORD_COLUMNS])
        if anywhere:
            from vthread.arrow import LOOP_FIELDS

            loop = pa.struct([field for field in self._schema
                              if field.name in LOOP_FIELDS])
            self._schema = self._schema.append(pa.field("loops", pa.list_(loop)))
        self._file = open(path, "wb")  # noqa: SIM115 (closed by close)
        try:
            self._writer = pa.parquet.ParquetWriter(self._file, self._schema)
        except BaseException:
            self._file.close()
            raise
        self._pending: list[dict[str, Any]] = []
        self._tail = b""
        # A write of a row group failed (a full disk): pyarrow's writer then refuses every
        # operation ("Operation on closed file", a ValueError that made the scan's 74 an
        # internal error), so close() writes nothing more.
        self._failed = False

    def write(self, data: bytes) -> int:
        """Take complete or partial JSONL records; rows are written a group at a time."""
        lines = (self._tail + data).split(b"\n")
        self._tail = lines.pop()
        for line in lines:
            if line:
                record = json.loads(line)
                ident = record.get("id")
                if ident is not None and not isinstance(ident, str):
                    record["id"] = json.dumps(ident)
                # The records are ASCII JSON: a surrogate is there as an escape.
                self._pending.append(_replaced(record) if b"\\ud" in line else record)
        if len(self._pending) >= ROWS_PER_GROUP:
            self._write_group()
        return len(data)

    def _write_group(self) -> None:
        if self._pending:
            try:
                self._writer.write_table(self._pa.Table.from_pylist(self._pending,
                                                                    self._schema))
            except BaseException:
                self._failed = True
                raise
            self._pending = []

    def flush(self) -> None:
        """Nothing to do: rows reach the file a group at a time, and at :meth:`close`."""

    def close(self) -> None:
        """Write what is pending and the file's footer; after a failed write, nothing."""
        try:
            if not self._failed:
                if self._tail:
                    self.write(b"\n")
                self._write_group()
                self._writer.close()
        finally:
            if self._failed:
                # (its own __del__ would close it again, writing its footer to the closed
                # file: "Exception ignored in ParquetWriter.__del__" on standard error)
                self._writer.is_open = False
            self._file.close()


def _replaced(value: Any) -> Any:
    """``value`` with every string in it Unicode text: a surrogate pair its character, a
    lone surrogate U+FFFD."""
    if isinstance(value, str):
        return unicode_text(value)
    if isinstance(value, dict):
        return {key: _replaced(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_replaced(item) for item in value]
    return value



RECORD_COLUMNS: Final = (
    ("id", "string"), ("file", "string"), ("line", "int64"), ("verdict", "string"),
    ("loop_start", "int64"), ("period", "int64"), ("repetitions", "int64"),
    ("loop_messages", "int64"), ("loop_tokens", "float64"), ("signature", "string"),
    ("excerpt", "string"), ("messages", "int64"), ("error", "string"))
"""The columns of a Parquet file of records, in order, each with its Arrow type's name;
null where a record has no such field (an error record has no verdict, a good one no
error)."""
