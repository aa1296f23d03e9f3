"""scan_arrow: a table of runs in, a table of verdicts out, equal to scan and the CLI."""

from __future__ import annotations

import importlib
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from arrow_buffers import message_lists, raw_strings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import anywhere_threads, threads

from benchmarks.workload import generate_threads, to_openai
from vthread import arrow, cli, documents, scan
from vthread.adapters import to_native_with_sources
from vthread.documents import in_source_messages
from vthread.scan import tokens_between

pa = pytest.importorskip("pyarrow", reason="scan_arrow needs pyarrow (pip install vthread[arrow])")
pc = pytest.importorskip("pyarrow.compute")

NULL_CELL = 'not a thread: "messages" is a null, not an array'
"""A null messages cell's error, in the words ``vthread scan X.parquet`` gives it."""
FIELDS = ["verdict", "loop_start", "period", "repetitions", "loop_messages", "loop_tokens",
          "signature", "excerpt", "messages"]


def _json_column(runs: list[Any], kind: Any = None) -> Any:
    return pa.array([None if run is None else json.dumps(run) for run in runs],
                    type=kind or pa.string())


def _expected(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """What scan() says of each run, as the result table's fields."""
    result = scan(runs)
    rows = []
    for index, run in enumerate(runs):
        record = result.record(index)
        rows.append({**{name: record[name] for name in FIELDS[:-1]}, "messages": len(run)})
    return rows


def _rows(table: Any, fields: list[str] = FIELDS) -> list[dict[str, Any]]:
    columns = {name: table.column(name).to_pylist() for name in fields}
    return [{name: columns[name][row] for name in fields} for row in range(table.num_rows)]


def test_json_column_equals_scan_and_the_cli(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """300 workload runs as JSON text: the core's reading equals scan() and the CLI's records."""
    runs = generate_threads(300, seed=3)
    table = pa.table({"run_id": [f"r{i}" for i in range(len(runs))],
                      "messages": _json_column(runs)})
    got = arrow.scan_arrow(table, id="run_id")
    assert got.column_names == ["run_id", *arrow.RESULT_FIELDS]
    assert got.column("run_id").to_pylist() == [f"r{i}" for i in range(len(runs))]
    assert _rows(got) == _expected(runs)
    assert got.column("error").null_count == len(runs)
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(run) + "\n" for run in runs))
    assert cli.main(["scan", str(path), "-q"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert _rows(got) == [{name: record[name] for name in FIELDS} for record in records]
    assert sum(v is not None for v in got.column("verdict").to_pylist()) > 10


@pytest.mark.parametrize("nested", [False, True], ids=["json", "structs"])
@pytest.mark.parametrize("anywhere", [False, True])
def test_a_token_total_past_the_largest_double_is_null_as_in_a_record(
        nested: bool, anywhere: bool) -> None:
    """A loop whose usages sum past the largest double: ``loop_tokens`` null in the table,
    its loops' too, as ``ScanResult.record`` and the CLI write it (the table held inf: the
    same trajectory gave two answers by two routes; a tester's case)."""
    call = {"type": "activity", "text": "", "usage": {"tokens": 1e308},
            "meta": {"activity": {"type": "request",
                                  "function": {"name": "s", "arguments": {"x": 1}}}}}
    run = [{"type": "user", "text": "hi"}, *[call] * 4]
    column = pa.array([run]) if nested else _json_column([run])
    got = arrow.scan_arrow(pa.table({"messages": column}), anywhere=anywhere)
    expected = scan([run], anywhere=anywhere).record(0)
    assert expected["loop_tokens"] is None and expected["verdict"] is not None
    assert _rows(got, FIELDS[:-1]) == [{name: expected[name] for name in FIELDS[:-1]}]
    if anywhere:
        assert got.column("loops").to_pylist() == [expected["loops"]]
        assert expected["loops"][0]["loop_tokens"] is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads(max_size=16), max_size=12))
def test_core_reading_equals_python_reading(runs: list[list[dict[str, Any]]]) -> None:
    """The buffer path and the Python-object path give the same table, row for row."""
    try:
        texts = [json.dumps(run, allow_nan=False) for run in runs]
    except ValueError:
        return  # NaN has no JSON text: such runs cannot be in a JSON column
    table = pa.table({"messages": pa.array(texts, type=pa.string())})
    fast = arrow.scan_arrow(table, format="native")
    slow = pa.table({name: arrow._scan_in_python(
        [json.loads(t) for t in texts], "native", dict.fromkeys(
            ["min_repetitions", "min_pattern_length", "max_pattern_length",
             "min_result_repetitions"]), False)[name] for name in arrow.RESULT_FIELDS})
    assert _rows(fast, list(arrow.RESULT_FIELDS)) == _rows(slow, list(arrow.RESULT_FIELDS))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads(max_size=16), max_size=12))
def test_core_masking_equals_python_masking(runs: list[list[dict[str, Any]]]) -> None:
    """mask_volatile=True: the core's reading of each row's masked copy gives the table the
    Python objects give, row for row."""
    polls = [{"type": "bot", "text": f"still running at 12:00:{i:02d}",
              "meta": {"checked_at": 1764556800 + i}} for i in range(5)]
    runs = [*runs, polls, [*polls[:2], {"type": "user", "text": "took 3.5s"}] * 3]
    texts = [json.dumps(run) for run in runs]
    table = pa.table({"messages": pa.array(texts, type=pa.string())})
    fast = arrow.scan_arrow(table, format="native", mask_volatile=True)
    slow = pa.table({name: arrow._scan_in_python(
        [json.loads(t) for t in texts], "native", dict.fromkeys(
            ["min_repetitions", "min_pattern_length", "max_pattern_length",
             "min_result_repetitions"]), True)[name] for name in arrow.RESULT_FIELDS})
    assert _rows(fast, list(arrow.RESULT_FIELDS)) == _rows(slow, list(arrow.RESULT_FIELDS))
    assert fast.column("verdict").to_pylist()[-2] is not None


def test_masked_workload_is_read_by_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """mask_volatile=True on the workload's rows: no slice goes through Python objects."""
    runs = generate_threads(300, seed=19)
    table = pa.table({"messages": pa.array([json.dumps(run) for run in runs])})
    expected = arrow.scan_arrow(table, format="native", mask_volatile=True)

    def refuse(*args: Any, **keywords: Any) -> Any:
        raise AssertionError("a slice was read through Python objects")

    monkeypatch.setattr(arrow, "_scan_in_python", refuse)
    assert _rows(arrow.scan_arrow(table, format="native", mask_volatile=True)) == _rows(expected)
    monkeypatch.undo()
    monkeypatch.setattr(arrow, "_scan_in_core", lambda *args: None)
    assert _rows(arrow.scan_arrow(table, format="native", mask_volatile=True)) == _rows(expected)


def test_a_looping_row_python_cannot_read_sends_its_slice_the_python_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Should Python's reading of a looping row the core read fail, the slice is read
    through Python objects (whose answers are the same), not raised out of scan_arrow."""
    runs = generate_threads(200, seed=23)
    table = pa.table({"messages": pa.array([json.dumps(run) for run in runs])})
    expected = _rows(arrow.scan_arrow(table, format="native"))
    assert any(row["verdict"] is not None for row in expected)
    scan_module = importlib.import_module("vthread.scan")
    through_python = []
    scan_in_python = arrow._scan_in_python

    def failing(*args: Any) -> None:
        raise RuntimeError("a line Python reads otherwise")

    def counted(*args: Any, **keywords: Any) -> Any:
        through_python.append(1)
        return scan_in_python(*args, **keywords)

    monkeypatch.setattr(scan_module, "attribute_lines", failing)
    monkeypatch.setattr(arrow, "_scan_in_python", counted)
    assert _rows(arrow.scan_arrow(table, format="native")) == expected
    assert through_python


def test_bad_rows_keep_their_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """Null, invalid JSON and non-run rows get an error each, in place; none is dropped,
    in slices small enough that every slice boundary is crossed."""
    monkeypatch.setattr(arrow, "ROWS_PER_SLICE", 3)
    runs = generate_threads(10, seed=5)
    texts: list[str | None] = [json.dumps(run) for run in runs]
    texts[2] = None
    texts[4] = "{not json"
    texts[7] = "42"
    got = arrow.scan_arrow(pa.table({"messages": pa.array(texts)}))
    errors = got.column("error").to_pylist()
    assert errors[2] == NULL_CELL
    assert errors[4].startswith("not valid JSON")
    assert errors[7] == 'not a thread: "messages" is a number, not an array'
    assert [e is None for e in errors] == [t not in (2, 4, 7) for t in range(10)]
    good = [i for i in range(10) if errors[i] is None]
    assert [_rows(got)[i] for i in good] == _expected([runs[i] for i in good])
    assert all(got.column("verdict")[i].as_py() is None for i in (2, 4, 7))


@pytest.mark.parametrize("kind", ["string", "large_string", "binary", "large_binary",
                                  "string_view"])
def test_every_text_type_and_a_sliced_table(kind: str) -> None:
    """Offsets of every width, and a table that starts mid-buffer, read the right rows."""
    runs = generate_threads(40, seed=7)
    column = _json_column(runs, getattr(pa, kind)())
    table = pa.table({"messages": column}).slice(5, 30)
    assert _rows(arrow.scan_arrow(table)) == _expected(runs[5:35])


def test_a_dictionary_encoded_column_is_read_as_its_text() -> None:
    """A dictionary-encoded text column (a Parquet column read with read_dictionary, a
    pandas or polars categorical) answers as the plain column; each row was an error
    calling the JSON text a string."""
    runs = generate_threads(40, seed=11)
    encoded = pa.chunked_array([_json_column(runs[:15]).dictionary_encode(),
                                _json_column(runs[15:]).dictionary_encode()])
    table = pa.table({"messages": encoded})
    assert _rows(arrow.scan_arrow(table)) == _expected(runs)
    assert _rows(arrow.scan_arrow(table, format="native")) == _expected(runs)
    # Values of a view type, which pyarrow's own decoding has no kernel for (a valid column
    # was refused as "not a valid Arrow array").
    for kind in ("string_view", "binary_view"):
        if not hasattr(pa, kind):  # (pyarrow 16 on)
            continue
        views = pa.chunked_array([_json_column(runs[:15], getattr(pa, kind)()),
                                  _json_column(runs[15:], getattr(pa, kind)())])
        encoded = pa.chunked_array([chunk.dictionary_encode() for chunk in views.chunks])
        assert _rows(arrow.scan_arrow(pa.table({"messages": encoded}))) == _expected(runs)


def test_json_run_end_encoded_and_fixed_width_columns_are_read_as_their_text() -> None:
    """Arrow's JSON type (``arrow.json``: how pyarrow reads a Parquet column of JSON), a
    run-end encoded text column and fixed-size binary are read as the text they hold (each
    row was an error calling the JSON text a string); so is a chunked one, and one kind
    wrapped in another."""
    runs = generate_threads(40, seed=13)
    texts = [json.dumps(run) for run in runs]
    json_type = getattr(pa, "json_", None)
    columns = [pc.run_end_encode(_json_column(runs)),
               pa.chunked_array([pc.run_end_encode(_json_column(runs[:9])),
                                 pc.run_end_encode(_json_column(runs[9:]))])]
    if json_type is not None:  # (pyarrow 19 on)
        columns += [pa.array(texts, json_type()),
                    pa.chunked_array([pa.array(texts[:20], json_type()),
                                      pa.array(texts[20:], json_type())])]
    for column in columns:
        assert _rows(arrow.scan_arrow(pa.table({"messages": column}))) == _expected(runs)
    width = max(map(len, texts))
    padded = [text + " " * (width - len(text)) for text in texts]  # (JSON may end in spaces)
    fixed = pa.array([text.encode() for text in padded], pa.binary(width))
    assert _rows(arrow.scan_arrow(pa.table({"messages": fixed}))) == _expected(runs)
    # Runs of a dictionary's values (pyarrow's run_end_decode has no kernel for these),
    # sliced to start inside a run.
    repeated = [run for run in runs for _ in range(3)]
    codes = pa.array([json.dumps(run) for run in repeated]).dictionary_encode()
    ends = pa.array(range(3, len(repeated) + 1, 3), pa.int32())
    nested = pa.RunEndEncodedArray.from_arrays(ends, codes.take(pa.array(
        range(0, len(repeated), 3)))).slice(2, 50)
    assert _rows(arrow.scan_arrow(pa.table({"messages": nested}))) == _expected(repeated[2:52])


def test_a_map_field_is_read_as_an_object() -> None:
    """Tool arguments stored as an Arrow map are the JSON object they stand for: the same
    loop's signature and excerpt as from JSON text (a map was read as a list of pairs);
    of a key given twice, the last value counts, as JSON.parse keeps it."""
    arguments = pa.map_(pa.string(), pa.string())
    function = pa.struct([("name", pa.string()), ("arguments", arguments)])
    message = pa.struct([("type", pa.string()), ("text", pa.string()), ("meta", pa.struct(
        [("activity", pa.struct([("type", pa.string()), ("function", function)]))]))])

    def call(pairs: list[tuple[str, str]]) -> dict[str, Any]:
        return {"type": "activity", "text": None, "meta": {"activity": {
            "type": "request", "function": {"name": "lookup", "arguments": pairs}}}}

    ask = {"type": "user", "text": "find it", "meta": None}
    stored = [[ask, *[call([("q", "1"), ("page", "2")])] * 4],
              [ask, *[call([("q", "0"), ("q", "1"), ("page", "2")])] * 4]]
    table = pa.table({"messages": pa.array(stored, type=pa.list_(message))})
    as_json = [[{"type": "user", "text": "find it"}, *[{"type": "activity", "meta": {
        "activity": {"type": "request", "function": {
            "name": "lookup", "arguments": {"q": "1", "page": "2"}}}}}] * 4]] * 2
    got = _rows(arrow.scan_arrow(table))
    assert got == _expected(as_json)
    assert got[0]["verdict"] is not None and '"q":"1"' in got[0]["excerpt"]


def test_maps_are_the_dicts_pyarrows_own_conversion_makes() -> None:
    """Maps at any place of a type (in structs, lists, list views, unions, other maps; null,
    empty, a key given twice) are read as the dicts pyarrow's own lossy conversion makes."""
    texts = pa.map_(pa.string(), pa.string())
    columns = [
        pa.array([[("k", "v"), ("k", "w")], [], None], type=texts),
        pa.array([[{"a": [("x", "1")], "b": None}], None, [{"a": [], "b": 2}]],
                 type=pa.list_(pa.struct([("a", texts), ("b", pa.int64())]))),
        pa.array([[("o", [("i", [{"z": [("q", "r")]}])])], [("o", None)], [("o", [])]],
                 type=pa.map_(pa.string(), pa.map_(pa.string(),
                                                   pa.list_(pa.struct([("z", texts)]))))),
        pa.array([[("k", [("a", "b"), ("a", "c")])]], type=pa.map_(pa.string(), texts)),
        pa.array([[(1, "x"), (1, "y")]], type=pa.map_(pa.int64(), pa.string())),
        pa.array([[[("k", "v")]]], type=pa.list_(texts, 1)),
        pa.UnionArray.from_sparse(pa.array([0, 1], type=pa.int8()),
                                  [pa.array([[("k", "v")], None], type=texts),
                                   pa.array([1, 2])]),
    ]
    if hasattr(pa, "ListViewArray"):
        columns.append(pa.ListViewArray.from_arrays(
            pa.array([0], type=pa.int32()), pa.array([1], type=pa.int32()),
            pa.array([[("k", "v")]], type=texts)))
    for column in columns:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = column.to_pylist(maps_as_pydicts="lossy")
        assert arrow.structs_as_python(column) == expected, column.type


class _Tags(pa.ExtensionType):  # type: ignore[misc]
    """An extension type over any storage type (as a library registers its own)."""

    def __init__(self, storage: Any) -> None:
        super().__init__(storage, "vthread.test.tags")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: Any, serialized: bytes) -> Any:
        return cls(storage_type)


def test_maps_inside_extension_and_other_wrapping_types_are_dicts() -> None:
    """A map below an extension type (its storage type, which its Python values are), a
    dictionary's values or a list of another kind is a dict, as a plain map is (it stayed
    a list of pairs below an extension type), and the run's record is that of its JSON."""
    texts = pa.map_(pa.string(), pa.string())
    stored = [[("q", "1"), ("page", "2")], None]
    wrapped = [
        pa.ExtensionArray.from_storage(_Tags(texts), pa.array(stored, type=texts)),
        pa.ExtensionArray.from_storage(
            _Tags(pa.struct([("tags", texts)])),
            pa.array([{"tags": pairs} for pairs in stored], type=pa.struct([("tags", texts)]))),
        pa.ExtensionArray.from_storage(_Tags(pa.large_list(texts)),
                                       pa.array([[p] for p in stored], type=pa.large_list(texts))),
        pa.array([[p] for p in stored], type=pa.list_(texts, 1)),
    ]
    for column in wrapped:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = column.storage.to_pylist(maps_as_pydicts="lossy") if isinstance(
                column, pa.ExtensionArray) else column.to_pylist(maps_as_pydicts="lossy")
        assert arrow.structs_as_python(column) == expected, column.type
    meta = pa.struct([("tags", _Tags(texts))])
    message = pa.struct([("type", pa.string()), ("text", pa.string()), ("meta", meta)])
    runs = [[{"type": "user", "text": "go", "meta": {"tags": [("q", "1"), ("page", "2")]}}] * 4]
    storage = pa.array(runs, type=pa.list_(pa.struct(
        [("type", pa.string()), ("text", pa.string()),
         ("meta", pa.struct([("tags", texts)]))])))
    column = storage.cast(pa.list_(message))
    as_json = [[{"type": "user", "text": "go", "meta": {"tags": {"q": "1", "page": "2"}}}] * 4]
    got = _rows(arrow.scan_arrow(pa.table({"messages": column}), format="native"))
    assert got == _expected(as_json) and got[0]["verdict"] == "repeated_suffix"


def test_maps_nested_deep_are_read_in_time_linear_in_their_depth() -> None:
    """Messages holding a map nested 700 deep: the verdicts of the same runs as JSON text,
    in well under a second (pyarrow's conversion of maps, which took time growing with the
    square of the depth, took 10 s for these 12 messages)."""
    import time

    import numpy as np

    depth, count = 700, 12
    values: Any = pa.array(["leaf"] * count)
    nested: Any = "leaf"
    for _ in range(depth):
        values = pa.MapArray.from_arrays(pa.array(np.arange(count + 1, dtype=np.int32)),
                                         pa.array(["k"] * count), values)
        nested = {"k": nested}
    messages = pa.StructArray.from_arrays(
        [pa.array(["user"] * count), pa.array(["hi"] * count), values],
        names=["type", "text", "meta"])
    column = pa.ListArray.from_arrays(pa.array(np.arange(0, count + 1, 4, dtype=np.int32)),
                                      messages)
    # CPU time, which another process's load leaves alone: the depth once cost 27 s of it.
    start = time.process_time()
    got = _rows(arrow.scan_arrow(pa.table({"messages": column})))
    elapsed = time.process_time() - start
    runs = [[{"type": "user", "text": "hi", "meta": nested}] * 4] * 3
    assert got == _rows(arrow.scan_arrow(pa.table({"messages": _json_column(runs)})))
    assert got[0]["verdict"] == "repeated_suffix"
    assert elapsed < 3, elapsed


def test_a_type_using_one_type_at_many_places_is_an_error_per_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A struct of two fields of the struct below it, 18 deep (its buffers a few bytes, each
    value 262,144 strings; 30 deep, a billion): each row, a null one too, is an error saying
    the type is too large, told from the type alone (such a column took gigabytes, and
    ended the process): no way of reading the values is ever asked."""
    import numpy as np

    from vthread import _core

    def never(*_: object) -> None:
        raise AssertionError("a too-large type's values were read")

    for reader in ("structs_as_python", "nested_row_texts"):
        monkeypatch.setattr(arrow, reader, never)
    monkeypatch.setattr(_core, "arrow_row_texts", never)
    inner: Any = pa.array(["leaf"] * 2)
    for _ in range(18):
        inner = pa.StructArray.from_arrays([inner, inner], names=["left", "right"])
    messages = pa.StructArray.from_arrays([pa.array(["user"] * 2), inner],
                                          names=["type", "text"])
    column = pa.ListArray.from_arrays(pa.array(np.array([0, 1, 2, 2], dtype=np.int32)),
                                      messages, mask=pa.array([False, False, True]))
    table = pa.table({"messages": column})
    for format in ("auto", "native"):
        got = arrow.scan_arrow(table, format=format)
        assert got.column("error").to_pylist() == [
            "messages of a type too large to read: it holds more than 100,000 nested types "
            "(counted at each place one is used)"] * 3
        assert got.column("verdict").to_pylist() == [None] * 3


def test_chunked_columns_and_record_batches() -> None:
    """A column of several chunks, a RecordBatch and a C-stream exporter answer alike."""
    runs = generate_threads(30, seed=9)
    chunked = pa.table({"messages": pa.chunked_array(
        [_json_column(runs[:10]), _json_column(runs[10:])])})
    want = _expected(runs)
    assert _rows(arrow.scan_arrow(chunked)) == want
    batch = pa.RecordBatch.from_pydict({"messages": _json_column(runs)})
    assert _rows(arrow.scan_arrow(batch)) == want

    class Exporter:  # what polars and DuckDB hand over
        def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
            return chunked.__arrow_c_stream__(requested_schema)

    assert _rows(arrow.scan_arrow(Exporter())) == want


def test_struct_column_reads_null_fields_as_absent() -> None:
    """A list<struct> column: each run's messages as objects, null fields dropped."""
    runs = [[{"type": "user", "text": "go"}] + [
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "request", "function": {"name": "ls", "arguments": '{"path": "."}'}}}},
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {"name": "ls", "arguments": '{"path": "."}',
                                             "result": "a.py"}}}}] * 3,
            [{"type": "user", "text": "hi"}, {"type": "bot", "text": "hello"}]]
    column = pa.array(runs)  # the second run's structs get a null "meta"
    got = arrow.scan_arrow(pa.table({"messages": column}))
    assert _rows(got) == _expected(runs)
    assert got.column("verdict").to_pylist()[0] == "repeated_suffix"


def test_other_formats_are_detected_and_counted_in_their_own_messages() -> None:
    """OpenAI runs: detected, verdicts as for the native runs, messages counted as written."""
    runs = generate_threads(40, seed=11)
    openai = [to_openai(run) for run in runs]
    got = arrow.scan_arrow(pa.table({"messages": _json_column(openai)}))
    assert got.column("verdict").to_pylist() == scan(runs).names
    assert got.column("messages").to_pylist() == [len(run) for run in openai]


@pytest.mark.parametrize("nested", [False, True])
def test_the_misread_warning_names_rows_by_their_index_past_null_rows(nested: bool) -> None:
    """Rows after null ones are named by their index in the table (the text column's
    warning counted only the rows with text: "rows 0, 1" for rows 2 and 3)."""
    ask = {"type": "user", "text": "hi"}
    runs: list[Any] = [None, None, [ask], [ask, {"type": "assistant", "text": "ok"}]]
    column = pa.array(runs) if nested else _json_column(runs)
    with pytest.warns(UserWarning, match=r"format='openai' was given, but rows 2, 3 of the "
                      r"first 4 look like native"):
        arrow.scan_arrow(pa.table({"messages": column}), format="openai")


def test_a_format_given_that_the_rows_plainly_are_not_in_is_warned_about() -> None:
    """format= given for rows plainly in another (chat read as native: every run alike, so a
    loop) warns once, naming the rows and pointing at the caller, as ``vthread scan
    --format`` does; the rows are still read as asked. Rows in the format given do not."""
    first = arrow._DETECT_ROWS  # (64, as vthread.scan and vthread scan look at)
    runs = generate_threads(first + 4, seed=3)
    chat = pa.table({"messages": _json_column([to_openai(run) for run in runs])})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = arrow.scan_arrow(chat, format="native")
    assert str(caught[0].message).startswith(
        f"format='native' was given, but rows 0, 1, 2, 3, 4 and {first - 5} more of the first "
        f"{first} look like openai")
    # (and the looping rows past those, as vthread scan names its lines past the first)
    assert [w.filename for w in caught] == [__file__] * 2
    assert str(caught[1].message).startswith(
        f"rows {first}, {first + 1}, {first + 2}, {first + 3} look like openai but are read as "
        "native")
    assert got.column("verdict").to_pylist() == ["repeated_suffix"] * (first + 4)
    native = pa.table({"messages": _json_column(runs)})
    with pytest.warns(UserWarning, match=r"format='openai' was given, but rows 0, 1"):
        arrow.scan_arrow(native, format="openai")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arrow.scan_arrow(chat, format="openai")
        arrow.scan_arrow(native, format="native")


def test_a_given_format_is_checked_on_the_first_rows_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check of a format given reads the first rows (64), whatever they hold: a column of
    runs with no messages (which give no evidence) is not read to its end for it."""
    judged: list[bytes] = []
    real = arrow.line_format_evidence

    def counted(line: bytes) -> Any:
        judged.append(line)
        return real(line)

    monkeypatch.setattr(arrow, "line_format_evidence", counted)
    got = arrow.scan_arrow(pa.table({"messages": ["[]"] * 5_000}), format="native")
    assert got.num_rows == 5_000 and len(judged) == arrow._DETECT_ROWS == 64


def test_columns_that_cannot_be_told_apart_are_clear_errors(tmp_path: Path) -> None:
    """Two columns named as the messages or the id column are a ValueError naming them
    (pyarrow's KeyError came out of the reading, and the command's was an internal error,
    exit 70), and an id column named as a result column is one too (the result's column
    took its place in the output, the ids silently lost)."""
    runs = pa.array(['[{"type":"user","text":"x"}]'])
    doubled = pa.Table.from_arrays([runs, runs], names=["messages", "messages"])
    with pytest.raises(ValueError, match="the table has 2 columns named 'messages'"):
        arrow.scan_arrow(doubled)
    ids = pa.Table.from_arrays([runs, pa.array(["i"]), pa.array(["j"])],
                               names=["messages", "id", "id"])
    with pytest.raises(ValueError, match="the table has 2 columns named 'id'"):
        arrow.scan_arrow(ids, id="id")
    for name in ("verdict", "error"):
        clash = pa.table({"messages": ["[]"], name: ["run-A"]})
        with pytest.raises(ValueError, match=f"id='{name}' is also the name of a result"):
            arrow.scan_arrow(clash, id=name)
    parquet = pytest.importorskip("pyarrow.parquet")
    for table, named in ((doubled, "messages"), (ids, "id")):
        path = tmp_path / f"{named}.parquet"
        parquet.write_table(table, path)
        assert cli.main(["scan", str(path), "-q"]) == 2


def test_the_messages_column_is_found_under_each_known_name() -> None:
    """Without ``messages=``, the runs are the first of MESSAGES_KEYS the table has (a
    published SWE-agent dataset keeps them in ``history``); none of them is an error naming
    the columns there are and how to name another."""
    ask = '{"type":"user","text":"hi"}'
    looping = "[" + ",".join([ask] * 4) + "]"
    for key in documents.MESSAGES_KEYS:
        table = pa.table({"instance_id": ["a", "b"], key: [f"[{ask}]", looping],
                          "note": ["x", "y"]})
        assert arrow.scan_arrow(table, id="instance_id").column("verdict").to_pylist() == [
            None, "repeated_suffix"], key
    both = pa.table({"history": [looping], "messages": [f"[{ask}]"]})
    assert arrow.scan_arrow(both).column("verdict").to_pylist() == [None]
    assert arrow.scan_arrow(both, messages="history").column("verdict").to_pylist() == [
        "repeated_suffix"]
    with pytest.raises(ValueError, match=r"no messages column \(messages, traj, history\); "
                       "the table has run, steps; name it with messages="):
        arrow.scan_arrow(pa.table({"run": ["a"], "steps": [looping]}))
    with pytest.raises(TypeError, match="column names are strings, got int"):
        arrow.scan_arrow(both, messages=3)  # type: ignore[arg-type]


def test_disagreeing_formats_and_bad_arguments_are_clear_errors() -> None:
    """Mixed formats name the rows; a missing column names the columns there are."""
    native = json.dumps([{"type": "user", "text": "hi"}])
    openai = json.dumps([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}])
    table = pa.table({"messages": [native, openai]})
    with pytest.raises(ValueError, match=r"native at row 0; openai at row 1"):
        arrow.scan_arrow(table)
    with pytest.warns(UserWarning, match="format='native' was given, but row 1 of the first 2 "
                      "looks like openai; it is read as native, and its verdict may be wrong"):
        assert arrow.scan_arrow(table, format="native").num_rows == 2
    with pytest.raises(ValueError, match="no column 'runs'; the table has messages"):
        arrow.scan_arrow(table, messages="runs")
    with pytest.raises(ValueError, match="format must be"):
        arrow.scan_arrow(table, format="xml")
    with pytest.raises(TypeError, match="pyarrow Table"):
        arrow.scan_arrow([native])
    with pytest.raises(TypeError, match="mask_volatile"):
        arrow.scan_arrow(table, mask_volatile="yes")


def test_mask_volatile_and_options_reach_the_scan() -> None:
    """Options and mask_volatile give scan()'s answers for the same keywords."""
    runs = generate_threads(60, seed=13)
    table = pa.table({"messages": _json_column(runs)})
    got = arrow.scan_arrow(table, min_repetitions=3, mask_volatile=True)
    assert got.column("verdict").to_pylist() == scan(
        runs, min_repetitions=3, mask_volatile=True).names
    tokens = got.column("loop_tokens").to_pylist()
    assert all(t is None or (isinstance(t, float) and not math.isnan(t)) for t in tokens)


def test_anywhere_adds_a_loops_column_equal_to_scan() -> None:
    """anywhere=True: a last ``loops`` column of structs equal to scan(anywhere=True)'s loops
    (mask_volatile too), the row's fields the costliest loop's, null for a null row; OpenAI
    runs' loops in their own messages; no such column without it."""
    runs = generate_threads(120, seed=29)
    table = pa.table({"messages": _json_column([*runs, None])})
    got = arrow.scan_arrow(table, anywhere=True)
    assert got.column_names == [*arrow.RESULT_FIELDS, "loops"]
    assert [f.name for f in got.schema.field("loops").type.value_type] == list(arrow.LOOP_FIELDS)
    expected = scan(runs, anywhere=True)
    assert expected.loops is not None
    assert got.column("loops").to_pylist() == [*expected.loops, None]
    assert got.column("verdict").to_pylist() == [*expected.names, None]
    assert got.column("loop_start").to_pylist()[:-1] == expected.loop_start.tolist()
    assert sum(bool(loops) for loops in expected.loops) >= 5
    masked = arrow.scan_arrow(table, anywhere=True, mask_volatile=True)
    assert masked.column("loops").to_pylist()[:-1] == scan(
        runs, anywhere=True, mask_volatile=True).loops
    assert "loops" not in arrow.scan_arrow(table).column_names
    openai = [to_openai(run) for run in runs[:40]]
    translated = arrow.scan_arrow(pa.table({"messages": _json_column(openai)}), anywhere=True)
    for row, run in enumerate(openai):
        native, sources = to_native_with_sources(run, "openai")
        one = scan([native], anywhere=True)
        in_source_messages(one, 0, sources, tokens_between(native))
        assert one.loops is not None
        assert translated.column("loops")[row].as_py() == one.loops[0]
    with pytest.raises(TypeError, match="anywhere must be a bool"):
        arrow.scan_arrow(table, anywhere=1)


_ALL_LOOP_FIELDS = [*arrow.RESULT_FIELDS, "loops"]
_DEFAULTS = dict.fromkeys(["min_repetitions", "min_pattern_length", "max_pattern_length",
                           "min_result_repetitions"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(anywhere_threads(), max_size=10), st.booleans())
def test_core_anywhere_equals_python_anywhere(runs: list[list[dict[str, Any]]],
                                              masked: bool) -> None:
    """anywhere=True on a JSON column: the core's screens of each row (of its masked copy
    with mask_volatile) give the table the Python objects give, loops column included."""
    texts = [json.dumps(run) for run in runs]
    table = pa.table({"messages": pa.array(texts, type=pa.string())})
    fast = arrow.scan_arrow(table, format="native", anywhere=True, mask_volatile=masked)
    python = arrow._scan_in_python([json.loads(t) for t in texts], "native", _DEFAULTS,
                                   masked, True)
    slow = pa.table({name: python[name] for name in _ALL_LOOP_FIELDS})
    assert _rows(fast, _ALL_LOOP_FIELDS) == _rows(slow, _ALL_LOOP_FIELDS)


@pytest.mark.parametrize("column", ["text", "structs"])
def test_anywhere_on_the_workload_is_read_by_the_core(
        column: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """anywhere=True on 300 workload runs, as JSON text or as message structs: no slice goes
    the Python-object way, and the table is the one Python objects give."""
    runs = [[_with_text_results(m) for m in run] for run in generate_threads(300, seed=23)]
    table = pa.table({"messages": pa.array([json.dumps(run) for run in runs]) if column == "text"
                      else pa.array(runs)})
    monkeypatch.setattr(arrow, "_scan_in_core", lambda *args: None)
    expected = arrow.scan_arrow(table, format="native", anywhere=True)
    monkeypatch.undo()

    def refuse(*args: Any, **keywords: Any) -> Any:
        raise AssertionError("a slice was read through Python objects")

    monkeypatch.setattr(arrow, "_scan_in_python", refuse)
    got = arrow.scan_arrow(table, format="native", anywhere=True)
    assert _rows(got, _ALL_LOOP_FIELDS) == _rows(expected, _ALL_LOOP_FIELDS)
    assert sum(bool(loops) for loops in got.column("loops").to_pylist()) >= 10


def test_core_threads_follow_rayon_num_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """RAYON_NUM_THREADS caps the core's threads (one per Ray worker); unset or junk: CPUs."""
    from vthread import _core

    seen: list[int] = []
    real = _core.scan_slices

    def spy(*args: Any, **keywords: Any) -> Any:
        seen.append(args[-1])
        return real(*args, **keywords)

    monkeypatch.setattr(_core, "scan_slices", spy)
    table = pa.table({"messages": _json_column(generate_threads(5, seed=1))})
    monkeypatch.setenv("RAYON_NUM_THREADS", "1")
    arrow.scan_arrow(table)
    for junk in ("", "0", "two"):
        monkeypatch.setenv("RAYON_NUM_THREADS", junk)
        arrow.scan_arrow(table)
    assert seen == [1] + [os.cpu_count() or 1] * 3


def test_format_detection_parses_only_the_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """format="auto" parses the first rows it needs, not the first slice (4,096 rows): the
    whole slice once took longer than scanning 10,000 runs."""
    column = pa.chunked_array([_json_column(generate_threads(8, seed=2) * 600)])
    parsed: list[int] = []
    loads = json.loads

    def counting(text: Any) -> Any:
        parsed.append(1)
        return loads(text)

    monkeypatch.setattr(json, "loads", counting)
    assert arrow.detect_column_format(column) == "native"
    assert len(parsed) <= 2 * arrow._DETECT_ROWS


def _struct_table(runs: list[Any]) -> Any:
    """The runs as a list<struct> column, or None when Arrow cannot infer one type for them."""
    try:
        return pa.table({"messages": pa.array(runs)})
    except (ValueError, TypeError, pa.ArrowNotImplementedError, OverflowError):
        return None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads(max_size=16), max_size=10))
def test_struct_rows_read_by_the_core_equal_python_objects(
        runs: list[list[dict[str, Any]]]) -> None:
    """A column of message structs: the core's JSON text of each row parses to the Python
    value pyarrow gives (null struct fields dropped), and the verdict table equals the one
    read through Python objects, row for row."""
    from vthread import _core

    table = _struct_table(runs)
    if table is None:
        return
    piece = table.column("messages").combine_chunks()
    read = _core.arrow_row_texts(piece, 2)
    values = arrow._python_values(piece)
    if read is not None:
        text, starts, ends, rows = read
        assert rows.tolist() == [i for i in range(len(piece)) if piece[i].is_valid]
        assert [json.loads(text[s:e]) for s, e in zip(starts, ends, strict=True)] == [
            values[i] for i in rows.tolist()]
    fast = arrow.scan_arrow(table, format="native")
    slow = pa.table({name: arrow._scan_in_python(values, "native", dict.fromkeys(
        ["min_repetitions", "min_pattern_length", "max_pattern_length",
         "min_result_repetitions"]), False)[name] for name in arrow.RESULT_FIELDS})
    assert _rows(fast, list(arrow.RESULT_FIELDS)) == _rows(slow, list(arrow.RESULT_FIELDS))


def _with_text_results(message: dict[str, Any]) -> dict[str, Any]:
    """The message with a tool result that is not text written as JSON text: the workload's
    results are strings or tables, and one Arrow column holds one type."""
    function = message.get("meta", {}).get("activity", {}).get("function", {})
    if "result" not in function or isinstance(function["result"], str):
        return message
    copy = json.loads(json.dumps(message))
    copy["meta"]["activity"]["function"]["result"] = json.dumps(function["result"])
    return copy


def test_struct_column_of_the_workload_is_read_without_python_objects(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """300 workload runs as list<struct>: no slice goes the Python-object way, and the
    answers are scan()'s."""
    runs = [[_with_text_results(m) for m in run] for run in generate_threads(300, seed=17)]
    table = pa.table({"messages": pa.array(runs)})

    def refuse(*args: Any) -> Any:
        raise AssertionError("a struct slice was read through Python objects")

    monkeypatch.setattr(arrow, "_scan_in_python", refuse)
    assert _rows(arrow.scan_arrow(table, format="native")) == _expected(runs)


@pytest.mark.parametrize(("values", "kind"), [
    ([[{"type": "user", "text": "hi", "tokens": float("nan")}]], None),
    ([[{"type": "user", "text": "hi", "blob": b"\x00"}]], None),
    ([[{"type": "user", "text": "hi", "at": 1}]], "timestamp"),
])
def test_values_with_no_json_text_go_the_python_way(values: Any, kind: Any) -> None:
    """NaN, bytes and timestamps have no JSON text: the core declines and Python answers."""
    from vthread import _core

    array = pa.array(values)
    if kind == "timestamp":
        array = pa.array(values, type=pa.list_(pa.struct([
            ("type", pa.string()), ("text", pa.string()), ("at", pa.timestamp("s"))])))
    assert _core.arrow_row_texts(array, 1) is None
    got = arrow.scan_arrow(pa.table({"messages": array}), format="native")
    assert got.column("error").to_pylist() == [None]
    assert got.column("messages").to_pylist() == [1]


def test_struct_rows_keep_null_runs_and_sliced_offsets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Null runs get their error in place; a sliced table reads the right rows, in slices
    small enough that every boundary is crossed."""
    monkeypatch.setattr(arrow, "ROWS_PER_SLICE", 4)
    runs: list[Any] = [[_with_text_results(m) for m in run]
                       for run in generate_threads(20, seed=19)]
    runs[3] = None
    runs[9] = None
    table = pa.table({"messages": pa.array(runs)}).slice(2, 15)
    got = arrow.scan_arrow(table, format="native")
    kept = runs[2:17]
    errors = got.column("error").to_pylist()
    assert [e == NULL_CELL for e in errors] == [r is None for r in kept]
    good = [i for i, r in enumerate(kept) if r is not None]
    assert [_rows(got)[i] for i in good] == _expected([kept[i] for i in good])


def test_a_malformed_export_is_a_clear_error() -> None:
    """Something claiming to export an Arrow array but handing over junk is a ValueError or
    TypeError, never a crash."""
    from vthread import _core

    class Junk:
        def __arrow_c_array__(self, requested_schema: Any = None) -> Any:
            return ("not", "capsules")

    with pytest.raises((TypeError, ValueError)):
        _core.arrow_row_texts(Junk(), 1)


def test_a_type_nested_past_the_limit_is_no_crash() -> None:
    """A list type nested 5,000 deep would exhaust the core's stack if it were walked; the
    core declines it and the answer comes from Python (an error row, never a crash)."""
    from vthread import _core

    kind: Any = pa.int64()
    for _ in range(5000):
        kind = pa.list_(kind)
    value: Any = 1
    for _ in range(5000):
        value = [value]
    try:
        array = pa.array([[value]], type=pa.list_(kind))
    except (RecursionError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pytest.skip("pyarrow cannot build so deep a value here")
    assert _core.arrow_row_texts(array, 1) is None
    got = arrow.scan_arrow(pa.table({"messages": array}), format="native")
    assert got.column("error").to_pylist()[0] is not None


def test_rows_in_no_format_or_in_several_are_named() -> None:
    """scan_arrow's detection names the row in no known format, or where the formats part."""
    from vthread.adapters import EXPECTED

    unknown = pa.table({"messages": [json.dumps([{"foo": 1}]), json.dumps([{"bar": 2}])]})
    with pytest.raises(ValueError) as raised:
        arrow.scan_arrow(unknown)
    assert str(raised.value) == (f"row 0: cannot tell the message format; expected {EXPECTED} "
                                 "(or pass format=)")
    chat = [{"role": "user", "content": "x"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c", "function": {"name": "a", "arguments": "{}"}}]}]
    mixed = pa.table({"messages": [json.dumps([{"type": "bot", "text": "a"}]),
                                   json.dumps(chat)]})
    with pytest.raises(ValueError) as raised:
        arrow.scan_arrow(mixed)
    assert str(raised.value) == ("the rows are in different formats (native at row 0; openai "
                                 "at row 1); pass format= to read them all in one")


def test_a_struct_with_two_fields_of_one_name_is_named_so() -> None:
    """Rows whose messages are structs with two fields of one name (which pyarrow converts
    to no Python value) are each their row's error saying so (they were said to hold a date
    out of range)."""
    messages = pa.StructArray.from_arrays([pa.array(["bot"] * 6), pa.array(["x"] * 6)],
                                          names=["type", "type"])
    column = pa.ListArray.from_arrays(pa.array([0, 4, 6], pa.int32()), messages)
    errors = arrow.scan_arrow(pa.table({"messages": column})).column("error").to_pylist()
    assert len(errors) == 2
    assert all(error.startswith("not a thread: a struct in it has two fields of one name")
               for error in errors)


def _results_table(results: list[int], kind: pa.DataType, wrap: str) -> pa.Table:
    """One thread of three tool responses of ``f`` whose results are ``results`` viewed as
    ``kind``, each alone (``plain``), in a list, or as a map's value."""
    count = len(results)
    values = pa.array(results, pa.int64()).view(kind)
    if wrap == "list":
        values = pa.ListArray.from_arrays(pa.array(range(count + 1), pa.int32()), values)
    elif wrap == "map":
        values = pa.MapArray.from_arrays(pa.array(range(count + 1), pa.int32()),
                                         pa.array(["at"] * count), values)
    function = pa.StructArray.from_arrays([pa.array(["f"] * count), values],
                                          names=["name", "result"])
    activity = pa.StructArray.from_arrays([pa.array(["response"] * count), function],
                                          names=["type", "function"])
    messages = pa.StructArray.from_arrays(
        [pa.array(["activity"] * count), pa.array([""] * count),
         pa.StructArray.from_arrays([activity], names=["activity"])],
        names=["type", "text", "meta"])
    return pa.table({"messages": pa.ListArray.from_arrays(pa.array([0, count], pa.int32()),
                                                          messages)})


@pytest.mark.parametrize("wrap", ["plain", "list", "map"])
def test_times_of_day_in_nanoseconds_keep_their_nanoseconds(wrap: str) -> None:
    """Tool results of Arrow type ``time64[ns]`` that differ by less than a microsecond are
    different results (pyarrow's ``datetime.time`` drops the nanoseconds: three were taken
    for one result repeated, a tester's find); equal ones still repeat, at any depth."""
    def verdict(results: list[int], kind: pa.DataType) -> Any:
        return arrow.scan_arrow(_results_table(results, kind, wrap)).column(
            "verdict").to_pylist()[0]

    assert verdict([1, 2, 3], pa.time64("ns")) is None
    assert verdict([5, 5, 5], pa.time64("ns")) == "repeated_result_run"
    assert verdict([1000, 2000, 3000], pa.time64("ns")) is None
    assert verdict([7, 7, 7], pa.time64("us")) == "repeated_result_run"


def test_a_nested_string_that_is_no_utf8_is_its_rows_error() -> None:
    """A string in a row's message structs that is no UTF-8 (pyarrow holds such strings as it
    is given them) is that row's error; the other rows get the answers of the same rows with
    clean text (the core refused the whole column, a ValueError for the table)."""
    texts = [b"x", b"y", b"x", b"y", b"x", b"\xff", b"x", b"y", b"p", b"q", b"p", b"q"]
    got = arrow.scan_arrow(pa.table({"messages": message_lists(texts, 4)}), format="native")
    clean = [b"?" if text == b"\xff" else text for text in texts]
    want = arrow.scan_arrow(pa.table({"messages": message_lists(clean, 4)}), format="native")
    errors = got.column("error").to_pylist()
    assert errors[0] is None and errors[2] is None
    assert errors[1].startswith("not a thread: a string in it is no UTF-8")
    assert _rows(got)[0::2] == _rows(want)[0::2]
    assert [row["verdict"] for row in _rows(got)[0::2]] == ["repeated_suffix"] * 2


def test_an_array_broken_past_its_text_is_still_refused() -> None:
    """Offsets that run backwards are no text problem: the core's ValueError stands, and no
    Python conversion reads the broken buffers."""
    from vthread.arrow import nested_row_texts

    structs = message_lists([b"x", b"y", b"x", b"y"], 4).values
    backwards = pa.Array.from_buffers(
        pa.list_(structs.type), 2, [None, pa.py_buffer(
            pa.array([0, 4, 1], pa.int32()).buffers()[1])], children=[structs])
    with pytest.raises(ValueError, match="not a valid Arrow array"):
        nested_row_texts(backwards)


def _backwards_offsets() -> list[Any]:
    """Arrays whose offsets point outside their buffers or run backwards, in a text column
    and inside message structs, past the first rows that detection reads in Python."""
    import numpy as np

    good = json.dumps([{"type": "user", "text": "hi"}] * 4).encode()
    texts = [good] * 19 + [good]
    offsets = np.arange(len(texts) + 1, dtype=np.int32) * len(good)
    offsets[19] = -100_000_000  # a row that starts far before the buffer
    text = pa.Array.from_buffers(pa.string(), len(texts), [
        None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(texts))])
    structs = message_lists([b"x", b"y"] * 40, 4)
    strings = structs.values.field("text")
    broken = np.array([0, *range(1, 81)], np.int32)
    broken[60] = -100_000_000
    texts_broken = pa.Array.from_buffers(pa.string(), 80, [
        None, pa.py_buffer(broken.tobytes()), strings.buffers()[2]])
    nested = pa.ListArray.from_arrays(structs.offsets, pa.StructArray.from_arrays(
        [structs.values.field("type"), texts_broken], names=["type", "text"]))
    return [text, nested]


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("format_", ["auto", "native", "openai"])
def test_an_unsound_array_is_refused_before_any_row_is_read(which: int, format_: str) -> None:
    """Offsets out of their buffers, in a text column or in the message structs: a ValueError
    before detection or a misread warning converts a row to Python (which read memory it
    does not own: the process ended, or raised SystemError)."""
    column = _backwards_offsets()[which]
    with pytest.raises(ValueError, match="not a valid Arrow array"):
        arrow.scan_arrow(pa.table({"messages": column}), format=format_)


def test_a_text_cell_that_is_no_utf8_is_its_rows_error() -> None:
    """A string cell holding bytes that are no UTF-8 is that row's error, named as the command
    names it, the other rows answered (the table was one UnicodeDecodeError), with every
    format and past the rows detection reads."""
    good = json.dumps([{"type": "user", "text": "hi"}] * 4).encode()
    cells = [good] * 25
    cells[3] = cells[20] = b'[{"type":"user","text":"h\xffi"}]'
    for format_ in ("auto", "native"):
        got = arrow.scan_arrow(pa.table({"messages": raw_strings(cells)}), format=format_)
        errors = got.column("error").to_pylist()
        assert [at for at, error in enumerate(errors) if error] == [3, 20]
        assert all(errors[at].startswith("not valid JSON: 'utf-8' codec can't decode")
                   for at in (3, 20))
        verdicts = got.column("verdict").to_pylist()
        assert all(verdicts[at] == "repeated_suffix" for at in range(25) if at not in (3, 20))


def _message_structs(kind: str, texts: list[bytes]) -> Any:
    """Message structs of types ``a``, ``b`` alternating and texts ``texts`` as they are,
    plainly or dictionary-encoded."""
    text: Any = raw_strings(texts)
    if kind == "dictionary":
        distinct = sorted(set(texts))
        text = pa.DictionaryArray.from_arrays(
            pa.array([distinct.index(t) for t in texts], pa.int32()), raw_strings(distinct))
    types = raw_strings([b"a", b"b"] * (len(texts) // 2))
    return pa.StructArray.from_arrays([types, text], names=["type", "text"])


@pytest.mark.parametrize("kind", ["plain", "dictionary"])
def test_text_that_is_no_utf8_under_any_encoding_is_its_rows_error(
        kind: str, tmp_path: Path) -> None:
    """A message text that is no UTF-8, dictionary-encoded too, is the error of the rows
    holding it, in scan_arrow and in a Parquet file (the whole table was
    refused, and the file lost to one record: found by a tester)."""
    texts = [b"x", b"y"] * 6
    texts[5] = b"\xff"
    column = pa.ListArray.from_arrays(pa.array([0, 4, 8, 12], pa.int32()),
                                      _message_structs(kind, texts))
    got = arrow.scan_arrow(pa.table({"messages": column}), format="native")
    errors = got.column("error").to_pylist()
    assert errors[0] is None and errors[2] is None
    assert errors[1].startswith("not a thread: a string in it is no UTF-8")
    assert got.column("verdict").to_pylist()[0::2] == ["repeated_suffix"] * 2
    import pyarrow.parquet as pq

    path = tmp_path / "runs.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "messages": column}), path)
    code = cli.main(["scan", str(path), "-q", "-o", str(tmp_path / "out.jsonl")])
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert code == 0 and [r["id"] for r in records] == ["a", "b", "c"]
    assert "error" in records[1] and "error" not in records[0] and "error" not in records[2]


def test_unsound_views_and_dictionary_indexes_are_refused_as_unsound() -> None:
    """A string view pointing at a data buffer it does not have (past the rows detection
    reads), and dictionary indexes past the dictionary: the ValueError of an unsound array
    with every format (the view ended the process in a cast; the indexes were pyarrow's
    ArrowIndexError; a reviewer's findings)."""
    import numpy as np

    good = json.dumps([{"type": "user", "text": "hi, and some more words"}] * 4)
    views = pa.array([good] * 40, pa.string_view())
    validity, headers, *data = views.buffers()
    broken = bytearray(headers.to_pybytes())
    broken[30 * 16 + 8 : 30 * 16 + 12] = (7).to_bytes(4, "little")  # row 30: buffer 7
    views = pa.Array.from_buffers(pa.string_view(), 40, [validity, pa.py_buffer(bytes(broken)),
                                                         *data])
    indexes = np.array([0] * 20 + [10**6] * 20, np.int32)
    dictionary = pa.DictionaryArray.from_buffers(
        pa.dictionary(pa.int32(), pa.string()), 40, [None, pa.py_buffer(indexes.tobytes())],
        pa.array([good]))
    for column in (views, dictionary):
        for format_ in ("auto", "native", "openai"):
            with pytest.raises(ValueError, match="not a valid Arrow array"), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (native rows given as openai: said so)
                arrow.scan_arrow(pa.table({"messages": column}), format=format_)


def test_a_column_is_checked_once_however_many_slices_are_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The soundness check runs once a call, on the whole column: pyarrow checks a slice's
    chunk whole, so a check per slice read (detection looks through a column of plain chats
    16 rows at a time) grew with the square of the column."""
    checked: list[int] = []
    real = arrow.refuse_unsound
    monkeypatch.setattr(arrow, "refuse_unsound",
                        lambda column: checked.append(len(column)) or real(column))
    chats = [json.dumps([{"role": "user", "content": f"hi {i}"}]) for i in range(5000)]
    arrow.scan_arrow(pa.table({"messages": chats}))
    assert checked == [5000]


def test_run_ids_are_the_ids_vthread_scan_reads_from_the_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """run_ids=True: a run_id column holds each row's own run id as ``vthread scan`` of the
    same rows as a Parquet file reads it (a string as it is, another value as its JSON
    text, null where the row holds bare messages or nothing), error rows included, in the
    core's reading and in Python's (a chat format), after the id column; the column was not
    there, and a table of whole run objects lost their ids."""
    import pyarrow.parquet as pq

    ask = {"type": "user", "text": "hi"}
    native = [{"id": "inner", "messages": [ask] * 4}, [ask], {"task_id": 3, "trial": 0,
              "messages": []}, None, {"instance_id": 7, "messages": 5},
              {"id": [1, 2], "messages": [ask]}, {"id": None, "messages": []},
              {"instance_id": "astropy-1", "traj": [ask, ask]}]
    chat = {"role": "user", "content": "hi"}
    openai = [{"id": "c1", "messages": [chat]}, [chat], {"id": 2.5, "messages": [chat] * 4},
              {"id": "bad", "messages": [7]}]
    for runs, format_ in ((native, "native"), (openai, "openai")):
        table = pa.table({"row": list(range(len(runs))), "messages": _json_column(runs)})
        got = arrow.scan_arrow(table, id="row", run_ids=True, format=format_)
        assert got.column_names == ["row", "run_id", *arrow.RESULT_FIELDS]
        path = tmp_path / f"{format_}.parquet"
        pq.write_table(pa.table({"messages": _json_column(runs)}), path)
        assert cli.main(["scan", str(path), "-q", "--format", format_]) == 0
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        expected = [r["id"] if r["id"] is None or isinstance(r["id"], str)
                    else json.dumps(r["id"]) for r in records]
        assert got.column("run_id").to_pylist() == expected
        assert got.column("error").to_pylist() == [r.get("error") for r in records]
        assert arrow.scan_arrow(table, format=format_).column_names == [
            "row", *arrow.RESULT_FIELDS][1:]
    assert arrow.scan_arrow(pa.table({"messages": _json_column(native)}),
                            run_ids=True).column("run_id").to_pylist()[:3] == [
        "inner", None, "3/0"]
    with pytest.raises(ValueError, match="id='run_id' is also the name of a result column"):
        arrow.scan_arrow(pa.table({"run_id": [1], "messages": ["[]"]}), id="run_id",
                         run_ids=True)
    # A lone surrogate, which no Arrow string holds, is U+FFFD, as -o X.parquet writes it
    # (the whole table was a UnicodeEncodeError).
    lone = pa.table({"messages": ['{"id": "a\\ud800b", "messages": []}',
                                  '{"id": {"k": "\\udc00"}, "messages": []}', "[]"]})
    for format_ in ("native", "openai"):
        assert arrow.scan_arrow(lone, run_ids=True, format=format_).column(
            "run_id").to_pylist() == ["a\ufffdb", '{"k":"\ufffd"}', None]
    with pytest.raises(TypeError, match="run_ids must be a bool"):
        arrow.scan_arrow(pa.table({"messages": ["[]"]}), run_ids="yes")  # type: ignore[arg-type]


def test_a_column_alone_is_a_type_error_saying_to_put_it_in_a_table() -> None:
    """A pyarrow array or chunked array (or another column exporting Arrow data) is a
    TypeError saying to put it in a table (pyarrow's "ArrowSchema describes non-struct
    type" was raised as it was); what is no Arrow data at all is a TypeError too."""
    text = '[{"type": "user", "text": "hi"}]'

    class Exported:  # a column exporting the Arrow C stream interface, as a polars Series
        def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
            return pa.chunked_array([[text]]).__arrow_c_stream__(requested_schema)

    for column in (pa.array([text]), pa.chunked_array([[text]]), Exported()):
        with pytest.raises(TypeError, match=r"got \w+, whose Arrow data is no table .*"
                                            r"pa\.table\(\{'messages': column\}\)"):
            arrow.scan_arrow(column)
    with pytest.raises(TypeError, match="got list"):
        arrow.scan_arrow([text])
    assert arrow.scan_arrow(pa.table({"messages": pa.array([text])})).num_rows == 1


def test_a_looping_row_past_the_first_in_another_format_is_warned_about() -> None:
    """Rows read as native (detected so from the first rows, or given), a looping one further
    on plainly in another format (chat messages, LangChain's): its loop is false, and it was
    said of the first rows alone, where ``vthread.scan`` and ``vthread scan`` say it of
    every looping thread. A native row that loops draws no such word; a row holding a list
    of runs is an error row, as ``vthread scan``'s record of it is."""
    rows = [json.dumps(thread) for thread in generate_threads(120, seed=3)]
    chat = [{"role": "user", "content": f"question {i}"} for i in range(5)]
    rows[80] = rows[90] = json.dumps(chat)
    rows[100] = json.dumps([{"type": "human", "content": f"q{i}"} for i in range(5)])
    rows[110] = json.dumps([{"id": i, "messages": [{"type": "user", "text": f"{i}"}]}
                            for i in range(4)])
    table = pa.table({"messages": rows})
    for keywords in ({}, {"format": "native"}):
        with pytest.warns(UserWarning) as caught:
            result = arrow.scan_arrow(table, **keywords)
        said = [str(w.message) for w in caught]
        assert said == ["rows 80, 90 look like openai, row 100 like langchain but are read as "
                        "native: read so, their messages are alike and their loops may be "
                        "false; scan them apart, or pass their format"], said
        verdicts = result.column("verdict").to_pylist()
        assert all(verdicts[row] is not None for row in (80, 90, 100))
        # A row holding a list of runs is an error row, as vthread scan's record of it (it
        # was a false loop with the warning).
        assert result.column("error").to_pylist()[110] == (
            'its messages are runs (objects holding their own list of messages), not messages: '
            "give each run as a row of its own")
    # A slice read through Python objects (a row only Python's json reads): the same word.
    odd = list(rows)
    odd[19] = '[{"type": "user", "text": "q", "meta": {"n": 123456789012345678901234567890}}]'
    with pytest.warns(UserWarning, match=r"^rows 80, 90 look like openai, row 100 like "):
        arrow.scan_arrow(pa.table({"messages": odd}))
    # A list of runs among the first rows: an error row too, and no word of its reading.
    for keywords in ({}, {"format": "native"}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            first = arrow.scan_arrow(pa.table({"messages": [rows[110], *rows[1:20]]}),
                                     **keywords)
        assert first.column("error").to_pylist()[0].startswith("its messages are runs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = pa.table({"messages": [json.dumps(t) for t in generate_threads(120, seed=3)]})
        assert any(arrow.scan_arrow(clean).column("verdict").to_pylist()[arrow._DETECT_ROWS:])
        # A batch of a Ray dataset, scanned alone, says nothing (its row numbers are the
        # batch's, and its first rows were another batch's).
        arrow.scan_column(table, table.column("messages"), "native", {}, False, False)


def test_formats_disagreeing_within_the_first_64_rows_are_refused_as_scan_refuses_them() -> None:
    """20 native rows, then an OpenAI chat: a ValueError naming both, as ``vthread.scan``
    and ``vthread scan`` refuse the same threads (the first 16 rows alone decided, and the
    chat was read as native, a false loop with a warning; a tester's case). Past the first
    64 such a row is read as native and warned of, as the others warn of it."""
    native = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "hello"}]
    chat = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4."}]
    threads = [native] * 20 + [chat]
    with pytest.raises(ValueError, match=r"^the threads are in different formats \(native at "
                       r"threads 0, 1, 2, 3, 4 and 15 more; openai at thread 20\)"):
        scan(threads, format="auto")
    with pytest.raises(ValueError, match=r"^the rows are in different formats \(native at "
                       r"rows 0, 1, 2, 3, 4 and 15 more; openai at row 20\)"):
        arrow.scan_arrow(pa.table({"messages": _json_column(threads)}))


@pytest.mark.parametrize("anywhere", [False, True])
@pytest.mark.parametrize("with_ids", [True, False])
def test_a_results_table_is_scan_arrows(anywhere: bool, with_ids: bool) -> None:
    """``ScanResult.to_arrow()`` gives the columns and values ``scan_arrow(run_ids=True)``
    gives for the same runs (an evaluation team's wish: a result to join back to a table of
    its own, or write as Parquet, without a row-by-row conversion); no ``run_id`` column
    for a batch of bare message lists; ``loops`` last when it looked anywhere."""
    pa = pytest.importorskip("pyarrow")
    runs = [{"id": ident, "messages": thread} for ident, thread in zip(
        ["a", 7, None, {"task": 1}, "é"], generate_threads(5, seed=3), strict=False)]
    runs.append({"id": "loop", "messages": [{"type": "user", "text": "go"}]
                 + [{"type": "bot", "text": "again"}] * 5})
    given: list[Any] = runs if with_ids else [run["messages"] for run in runs]
    table = scan(given, anywhere=anywhere).to_arrow()
    expected = arrow.scan_arrow(pa.table({"messages": [json.dumps(run) for run in given]}),
                                format="native", anywhere=anywhere, run_ids=True)
    assert table.equals(expected), (table.schema, expected.schema)
    assert table.column_names[-1] == ("loops" if anywhere else "error")
    assert table.num_rows == len(runs) and table.column("verdict").null_count < len(runs)
    # Every batch's table has the same columns, an empty one's and bare lists' too (a
    # union of a night's tables failed on its first empty batch: a tester's case).
    empty = scan([], anywhere=anywhere).to_arrow()
    assert empty.num_rows == 0 and empty.schema.equals(table.schema)
    assert pa.concat_tables([table, empty]).num_rows == len(runs)


def test_a_results_table_holds_numpy_ids_as_their_values() -> None:
    """A run's id held as a NumPy scalar (a pandas column's ``.values``) is the value it
    holds in ``to_arrow``'s ``run_id``, as in its record: it was the scalar's repr quoted,
    ``'"np.int64(101)"'``, so a join back to the table found nothing (a tester's case)."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("pyarrow")
    thread = [{"type": "user", "text": "hi"}]
    ids = [np.int64(101), np.bool_(True), np.float64(0.5), np.str_("s"), 7]
    result = scan([{"id": ident, "messages": thread} for ident in ids])
    assert result.to_arrow().column("run_id").to_pylist() == ["101", "true", "0.5", "s", "7"]
    assert [record["id"] for record in result] == [101, True, 0.5, "s", 7]


def test_a_results_table_without_pyarrow_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyarrow, ``to_arrow`` says which extra to install."""
    import sys

    result = scan([[{"type": "user", "text": "hi"}]])
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'vthread\[arrow\]'"):
        result.to_arrow()


def test_several_id_columns_are_kept_as_they_are() -> None:
    """``id=[...]`` keeps each column named, in the order named, as it is (an int column an
    int column, nulls null), to join the result back by a composite key (an evaluation
    team's wish: one id column was all it took); each is checked as one ``id`` is."""
    pa = pytest.importorskip("pyarrow")
    ask = '{"type":"user","text":"hi"}'
    table = pa.table({"task": ["t1", "t1", None], "epoch": [1, 2, 1],
                      "messages": [f"[{ask}]", "[" + ",".join([ask] * 4) + "]", f"[{ask}]"]})
    result = arrow.scan_arrow(table, id=["task", "epoch"])
    assert result.column_names[:3] == ["task", "epoch", "verdict"]
    assert result.column("task").equals(table.column("task"))
    assert result.column("epoch").equals(table.column("epoch"))
    assert result.column("verdict").to_pylist() == [None, "repeated_suffix", None]
    assert arrow.scan_arrow(table, id=("epoch",)).column_names[0] == "epoch"
    assert arrow.scan_arrow(table, id="task").equals(arrow.scan_arrow(table, id=["task"]))
    pandas = pytest.importorskip("pandas")
    for names in (pandas.Index(["task", "epoch"]), iter(["task", "epoch"])):
        assert arrow.scan_arrow(table, id=names).equals(result)
    for bad, kind, said in (
            (["task", "task"], ValueError, "names a column twice"),
            (["task", "nope"], (ValueError, KeyError), "nope"),
            (["task", 3], TypeError, "a column name or a sequence of them"),
            (b"task", TypeError, "a column name or a sequence of them"),
            ({"task", "epoch"}, TypeError, "a column name or a sequence of them"),
            ([], ValueError, "names no column"),
            (5, TypeError, "a column name or a sequence of them"),
            (["epoch", "verdict"], ValueError, "is also the name of a result column")):
        with pytest.raises(kind, match=said):
            arrow.scan_arrow(table.append_column("verdict", table.column("task")),
                             id=bad)  # type: ignore[arg-type]
