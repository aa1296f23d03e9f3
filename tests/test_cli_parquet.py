"""vthread scan with Parquet: runs in, records out, and either with JSONL on the other side."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
from arrow_buffers import message_lists, raw_strings

from benchmarks.workload import generate_threads, to_openai
from tests.test_cli import nothing_scanned
from vthread import cli

pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (pip install vthread[arrow])")
pq = pytest.importorskip("pyarrow.parquet")

RUNS = generate_threads(120, seed=17)


def _scan(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any]]:
    code = cli.main(["scan", *arguments, "-q"])
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines()]


def _without_file(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in record.items() if k != "file"} for record in records]


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", "messages": run}) + "\n"
                            for i, run in enumerate(RUNS)))
    return path


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "runs.parquet"
    table = pa.table({"id": [f"r{i}" for i in range(len(RUNS))],
                      "messages": [json.dumps(run) for run in RUNS],
                      "model": ["m"] * len(RUNS)})
    pq.write_table(table, path, row_group_size=25)
    return path


def test_parquet_in_gives_the_jsonl_records(jsonl: Path, parquet: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Each row's record is the record of the same run as a JSONL line, row = line, read in
    batches smaller than a row group."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 7)
    _, from_jsonl = _scan([str(jsonl)], capsys)
    code, from_parquet = _scan([str(parquet)], capsys)
    assert code == 0 and len(from_parquet) == len(RUNS)
    assert _without_file(from_parquet) == _without_file(from_jsonl)
    assert {r["file"] for r in from_parquet} == {str(parquet)}
    assert sum(r["verdict"] is not None for r in from_parquet) > 5


def declaring_runs(where: int) -> list[dict[str, Any]]:
    """72 OpenAI runs, the one at ``where`` a stuck mini-swe-agent run declaring itself one."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"},
                                      {"role": "user", "content": "task"}]
    for attempt in range(6):
        messages += [{"role": "assistant",
                      "content": f"THOUGHT: try {attempt}\n\n```bash\npytest\n```"},
                     {"role": "user", "content": "<returncode>1</returncode>\n<output>\n"
                                                 "FAILED test_a\n</output>"}]
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    runs: list[dict[str, Any]] = [
        {"id": f"o{index}", "trajectory_format": None, "messages": [
            {"role": "user", "content": f"task {index}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"}]}
        for index in range(72)]
    runs[where] = {"id": "stuck", "trajectory_format": "mini-swe-agent-1",
                   "messages": messages}
    return runs


def declaring_table(runs: list[dict[str, Any]], cells: str) -> Any:
    """``runs`` as a table of ids, a ``trajectory_format`` column and messages: ``"text"``
    cells of JSON arrays, ``"structs"`` (lists of message structs), or ``"run objects"``
    (each cell the run's object as JSON text, declaring its own format; the column null)."""
    if cells == "run objects":
        return pa.table({"id": [run["id"] for run in runs],
                         "trajectory_format": pa.nulls(len(runs), pa.string()),
                         "messages": [json.dumps({key: value for key, value in run.items()
                                                  if value is not None and key != "id"})
                                      for run in runs]})
    return pa.table({"id": [run["id"] for run in runs],
                     "trajectory_format": [run["trajectory_format"] for run in runs],
                     "messages": ([json.dumps(run["messages"]) for run in runs]
                                  if cells == "text" else [run["messages"] for run in runs])})


@pytest.mark.parametrize("cells", ["text", "structs", "run objects"])
@pytest.mark.parametrize("where", [3, 70])
def test_a_row_declaring_mini_swe_agent_is_read_as_its_jsonl_line_is(
        where: int, cells: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A table with a ``trajectory_format`` column (or run object cells declaring their own
    format): a row declaring mini-swe-agent among OpenAI runs is read as its JSONL line is
    (as mini-swe-agent, its stuck command found), among the first rows and past them, by
    ``vthread scan X.parquet`` and by ``vthread.scan_arrow`` alike. The column was not
    read, so the table was refused as of two formats, or the row read as an OpenAI chat and
    its loop missed; scan_arrow refused every such table."""
    from vthread.arrow import RESULT_FIELDS, scan_arrow

    runs = declaring_runs(where)
    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text("".join(json.dumps({key: value for key, value in run.items()
                                         if value is not None}) + "\n" for run in runs))
    table = declaring_table(runs, cells)
    path = tmp_path / "runs.parquet"
    pq.write_table(table, path)
    _, from_jsonl = _scan([str(jsonl)], capsys)
    code, from_parquet = _scan([str(path)], capsys)
    if cells != "run objects":  # (a run object's own id is the record's, as in scan_arrow)
        assert code == 0 and _without_file(from_parquet) == _without_file(from_jsonl)
    assert [r["verdict"] for r in from_parquet if r["verdict"]] == ["repeated_result_run"]
    assert from_parquet[where]["id"] == "stuck"
    scanned = scan_arrow(table, id="id").to_pylist()
    assert [{name: row[name] for name in RESULT_FIELDS} for row in scanned] == [
        {name: record.get(name) for name in RESULT_FIELDS} for record in from_parquet]
    # Given, the format is read as given.
    code, given = _scan([str(path), "--format", "openai"], capsys)
    assert code == 0 and given[where]["verdict"] is None
    with pytest.warns(UserWarning, match="read as openai") if where < 16 else nullcontext():
        assert scan_arrow(table, format="openai").column("verdict")[where].as_py() is None


def test_a_declaration_beside_no_messages_declares_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A row whose messages cell is null (or no array) beside a declared mini-swe-agent
    format gives no evidence of a format: it is the same error record, by the command and
    by scan_arrow, and the native runs around it are read as native. The command read such
    a row as declaring mini-swe-agent, and refused the table as of two formats."""
    from vthread.arrow import scan_arrow

    ask = {"type": "user", "text": "hi"}
    table = pa.table({"id": ["a", "b", "c"],
                      "trajectory_format": ["x", "mini-swe-agent-1", None],
                      "messages": [json.dumps([ask] * 4), None, json.dumps([ask])]})
    path = tmp_path / "runs.parquet"
    pq.write_table(table, path)
    code, records = _scan([str(path)], capsys)
    assert code == 0
    assert [r.get("verdict") for r in records] == ["repeated_suffix", None, None]
    assert records[1]["error"] == 'not a thread: "messages" is a null, not an array'
    assert scan_arrow(table).column("error").to_pylist() == [None, records[1]["error"], None]


def test_parquet_records_given_back_are_said_to_be_records(
        parquet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A scan's Parquet output named as input: every row is still an error record (its
    "messages" column is the message counts), and stderr says why and how to read them
    back, as for JSONL records; runs in Parquet get no such warning."""
    own = tmp_path / "records.parquet"
    assert cli.main(["scan", str(parquet), "-q", "-o", str(own)]) == 0
    assert capsys.readouterr().err == ""
    code = cli.main(["scan", str(own), "-q"])
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(records) == len(RUNS)
    assert all("is a number, not an array" in record["error"] for record in records)
    assert err == (f"vthread scan: {own}: warning: it holds vthread scan's records, not "
                   f"runs; each row is an error record (vthread report {own} reads them "
                   "back)\n" + nothing_scanned(120, "row"))


def test_graded_runs_in_parquet_are_runs(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A table of graded runs with the record's columns (file, line, verdict, error) beside
    its trajectories (a list column) is runs: scanned without the records warning, and never
    written over by -o, as for JSONL."""
    chat = [{"role": "user", "content": "fix"}] + [
        {"role": "assistant", "content": "same"}, {"role": "user", "content": "again"}] * 4
    graded = tmp_path / "graded.parquet"
    pq.write_table(pa.table({"id": ["r0", "r1"], "file": ["src/app.py"] * 2, "line": [42, 7],
                             "verdict": ["fail", "pass"], "error": ["TypeError", None],
                             "trajectory": [chat, chat]}), graded)
    code, got = _scan([str(graded), "--messages-key", "trajectory"], capsys)
    assert code == 0 and [r["verdict"] for r in got] == ["repeated_suffix"] * 2
    assert capsys.readouterr().err == ""
    (tmp_path / "other.jsonl").write_text(json.dumps({"id": "o", "trajectory": chat}) + "\n")
    before = graded.read_bytes()
    code = cli.main(["scan", str(tmp_path), "-q", "--messages-key", "trajectory", "-o",
                     str(graded)])
    assert code == 2 and "holds neither records nor a summary" in capsys.readouterr().err
    assert graded.read_bytes() == before


def test_a_categorical_column_and_map_fields_are_read_as_their_json(
        jsonl: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Parquet file written from a categorical (its runs' text dictionary-encoded) gives
    the records of the same runs as JSONL, and a tool's arguments stored as a map are the
    JSON object they stand for (each row was an error, and a map a list of pairs)."""
    _, from_jsonl = _scan([str(jsonl)], capsys)
    categorical = tmp_path / "categorical.parquet"
    texts = pa.array([json.dumps(run) for run in RUNS]).dictionary_encode()
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(len(RUNS))], "messages": texts}),
                   categorical)
    assert pq.read_schema(categorical).field("messages").type == texts.type
    code, got = _scan([str(categorical)], capsys)
    assert code == 0 and _without_file(got) == _without_file(from_jsonl)

    function = pa.struct([("name", pa.string()),
                          ("arguments", pa.map_(pa.string(), pa.string()))])
    message = pa.struct([("type", pa.string()), ("meta", pa.struct(
        [("activity", pa.struct([("type", pa.string()), ("function", function)]))]))])
    call = {"type": "activity", "meta": {"activity": {"type": "request", "function": {
        "name": "lookup", "arguments": [("q", "1")]}}}}
    mapped = tmp_path / "mapped.parquet"
    pq.write_table(pa.table({"messages": pa.array([[call] * 4], type=pa.list_(message))}),
                   mapped)
    code, got = _scan([str(mapped)], capsys)
    assert code == 0 and got[0]["verdict"] == "repeated_suffix"
    assert got[0]["excerpt"] == 'lookup({"q":"1"})'


@pytest.mark.parametrize("source", ["jsonl", "parquet"])
def test_parquet_out_holds_every_record(source: str, jsonl: Path, parquet: Path,
                                        tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """-o X.parquet: one row per record, the record's fields as columns (null where absent),
    from JSONL or Parquet input alike."""
    _, records = _scan([str(jsonl)], capsys)
    out = tmp_path / "verdicts.parquet"
    path = jsonl if source == "jsonl" else parquet
    code, printed = _scan([str(path), "-o", str(out)], capsys)
    assert code == 0 and printed == []
    rows = pq.read_table(out).to_pylist()
    assert len(rows) == len(records)
    for row, record in zip(rows, records, strict=True):
        assert row["file"] == str(path)
        assert {k: v for k, v in row.items() if k != "file"} == {
            k: record.get(k) for k in row if k != "file"}


def test_struct_columns_and_derived_ids(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Messages as list<struct> (null fields absent) and tau-bench's task_id/trial ids."""
    runs = [[{"type": "user", "text": "go"}] + [{"type": "bot", "text": "again"}] * 4,
            [{"type": "user", "text": "hi"}, {"type": "bot", "text": "hello"}]]
    path = tmp_path / "structs.parquet"
    pq.write_table(pa.table({"task_id": [3, 4], "trial": [0, 1],
                             "traj": pa.array(runs)}), path)
    code, records = _scan([str(path)], capsys)
    assert code == 0
    assert [r["id"] for r in records] == ["3/0", "4/1"]
    assert [r["verdict"] for r in records] == ["repeated_suffix", None]


def test_task_and_trial_columns_are_joined_as_a_jsonl_line_s_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A ``task_id`` and a ``trial`` column make the id a JSONL line of the same run has:
    each part as JSON writes it, a null trial left out (Python's ``str()`` wrote ``7.0``,
    ``None``, ``inf``: ``"7/None"``, ``"None/None"`` for every row of null ids)."""
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}] * 2
    pairs = [(7, 0), (7, None), (None, 0), (None, None), (7.0, 0.5), (2.5, 1.0),
             (math.inf, math.nan)]
    tables = {"ints": pa.table({"task_id": pa.array([p[0] for p in pairs[:4]], pa.int64()),
                                "trial": pa.array([p[1] for p in pairs[:4]], pa.int64()),
                                "messages": [json.dumps(chat)] * 4}),
              "floats": pa.table({"task_id": [p[0] for p in pairs[4:]],
                                  "trial": [p[1] for p in pairs[4:]],
                                  "messages": [json.dumps(chat)] * 3})}
    for name, table in tables.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path)
        lines = tmp_path / f"{name}.jsonl"
        lines.write_text("".join(json.dumps(row) + "\n" for row in table.to_pylist()))
        code, from_parquet = _scan([str(path)], capsys)
        assert code == 0
        code, from_lines = _scan([str(lines)], capsys)
        assert code == 0
        assert [r["id"] for r in from_parquet] == [r["id"] for r in from_lines]
    assert [r["id"] for r in from_parquet] == ["7/0.5", "2.5/1", "null/null"]
    code, records = _scan([str(tmp_path / "ints.parquet")], capsys)
    assert [r["id"] for r in records] == ["7/0", 7, "null/0", None]
    # A value JSON has not (a duration, a date, a decimal) is its text, as a lone id's is
    # (its JSON form was written: the encoder's marker for a value of no JSON type).
    others = tmp_path / "others.parquet"
    pq.write_table(pa.table({"task_id": [decimal.Decimal("1.50"), decimal.Decimal("2")],
                             "trial": [datetime.timedelta(seconds=1), None],
                             "messages": [json.dumps(chat)] * 2}), others)
    code, records = _scan([str(others)], capsys)
    assert [r["id"] for r in records] == ["1.50/0:00:01", "2.00"]  # (the column's scale)


def test_other_formats_and_integer_ids(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """OpenAI messages in a Parquet column are detected; an integer id is written as JSON
    text in a Parquet of records."""
    path = tmp_path / "openai.parquet"
    pq.write_table(pa.table({"id": list(range(20)),
                             "messages": [json.dumps(to_openai(run)) for run in RUNS[:20]]}),
                   path)
    code, records = _scan([str(path)], capsys)
    assert code == 0 and [r["id"] for r in records] == list(range(20))
    assert [r["messages"] for r in records] == [len(to_openai(run)) for run in RUNS[:20]]
    out = tmp_path / "out.parquet"
    assert cli.main(["scan", str(path), "-q", "-o", str(out)]) == 0
    assert pq.read_table(out).column("id").to_pylist() == [str(i) for i in range(20)]


def test_bad_rows_become_error_records(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A null, invalid JSON, empty or non-run row gets its error record, in place, with the
    row's id (a cell that is no JSON, cut off or empty, is read alone, and its record had
    a null id although the id column holds it)."""
    path = tmp_path / "bad.parquet"
    texts = [json.dumps(RUNS[0]), None, "{nope", "7", json.dumps(RUNS[1]), "", '[{"type":']
    pq.write_table(pa.table({"id": list("abcdefg"), "messages": texts}), path)
    for jobs in ("1", "2"):
        code, records = _scan([str(path), "-j", jobs], capsys)
        assert code == 0 and [r["line"] for r in records] == [1, 2, 3, 4, 5, 6, 7]
        assert ["error" in r for r in records] == [False, True, True, True, False, True, True]
        assert records[1]["error"].startswith('not a thread: "messages" is a null')
        assert records[2]["error"].startswith("not valid JSON")
        assert records[5]["error"].startswith("blank cell")
        assert [r["id"] for r in records] == list("abcdefg")
    pq.write_table(pa.table({"messages": texts}), path)  # no id column: no id to give
    code, records = _scan([str(path)], capsys)
    assert [r["id"] for r in records] == [None] * 7


def _with_a_corrupt_row_group(path: Path) -> None:
    """Three row groups of 40 runs at ``path``, the middle one's page header overwritten
    (uncompressed, plain-encoded: pyarrow cannot read the group, and reads the others)."""
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(len(RUNS))],
                             "messages": [json.dumps(run) for run in RUNS]}),
                   path, row_group_size=40, compression="none", use_dictionary=False)
    offset = pq.ParquetFile(path).metadata.row_group(1).column(1).data_page_offset
    data = bytearray(path.read_bytes())
    data[offset + 5:offset + 60] = b"\x07" * 55
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("chunk", [7, 4096])
def test_a_row_group_that_cannot_be_read_is_an_error_record_per_row(
        chunk: int, parquet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A row group pyarrow cannot read: the groups before and after it are scanned, and each
    of its rows gets an error record naming the group, its rows and pyarrow's reason (a
    batch spanning the groups threw away the rows read, and the file was one error; found
    by a tester), with its id read from the id column alone. Records out = rows in, status 0
    as for bad lines, and the other files of the run are read."""
    monkeypatch.setattr(cli, "CHUNK_LINES", chunk)
    bad = tmp_path / "corrupt.parquet"
    _with_a_corrupt_row_group(bad)
    _, good = _scan([str(parquet)], capsys)
    summary = tmp_path / "summary.json"
    code, records = _scan([str(bad), str(parquet), "--summary", str(summary)], capsys)
    assert code == 0 and len(records) == 2 * len(RUNS)
    mine, others = records[:len(RUNS)], records[len(RUNS):]
    assert [r["line"] for r in mine] == list(range(1, len(RUNS) + 1))
    assert _without_file(mine[:40] + mine[80:]) == _without_file(good[:40] + good[80:])
    assert _without_file(others) == _without_file(good)
    for number, record in enumerate(mine[40:80], 40):
        # (its ids read from the id column alone: they were null)
        assert record.keys() == {"id", "file", "line", "error"} and record["id"] == f"r{number}"
        assert record["error"].startswith("cannot read row group 1 (rows 41-80): "
                                          "Couldn't deserialize thrift"), record
        assert "\n" not in record["error"]
    counts = json.loads(summary.read_text())
    assert (counts["lines"], counts["errors"]) == (2 * len(RUNS), 40)
    assert counts["threads"] == 2 * len(RUNS) - 40 and counts["cut_short"] == []


@pytest.mark.parametrize("chunk", [7, 4096])
def test_strict_stops_at_the_first_row_that_cannot_be_read(
        chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """--strict: the first row of a row group that cannot be read is fatal, as a bad line
    is (status 2, its row and the group said), after the records of the rows before it."""
    monkeypatch.setattr(cli, "CHUNK_LINES", chunk)
    bad = tmp_path / "corrupt.parquet"
    _with_a_corrupt_row_group(bad)
    code = cli.main(["scan", str(bad), "-q", "--strict"])
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 2
    assert [r["line"] for r in records] == list(range(1, 41))
    assert all("error" not in r for r in records)
    assert err.startswith(f"vthread scan: {bad}: row 41: cannot read row group 1 "
                          "(rows 41-80): Couldn't deserialize thrift"), err


@pytest.mark.parametrize("with_ids", [False, True])
def test_a_cell_that_is_no_json_is_placed_within_the_cell(
        with_ids: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A text cell that is not one JSON value: its record's error is ``json.loads`` of the
    cell, positions within the cell (they were the wrapping's: column 23 for column 1;
    found by a tester), and a cell that only its wrapping made valid is no run."""
    path = tmp_path / "bad.parquet"
    cells = ["garbage", "[1,", '{"a":tru}', '[],"id":"forged"', json.dumps(RUNS[0])]
    table = {"messages": cells} | ({"id": list("abcde")} if with_ids else {})
    pq.write_table(pa.table(table), path)
    code, records = _scan([str(path)], capsys)
    assert code == 0 and [r["line"] for r in records] == [1, 2, 3, 4, 5]
    for record, cell in zip(records[:4], cells, strict=False):
        with pytest.raises(json.JSONDecodeError) as expected:
            json.loads(cell)
        cut = " (it ends inside its value: cut short?)" if cell == "[1," else ""
        assert record["error"] == f"not valid JSON: {expected.value}{cut}", record
    assert "error" not in records[4]


def test_missing_columns_and_pyarrow_are_clear_errors(
        parquet: Path, jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A file without the messages column names the columns it has; without pyarrow, the
    error says how to install it. Both exit 2 before writing anything."""
    assert cli.main(["scan", str(parquet), "--messages-key", "steps"]) == 2
    assert "no column 'steps'; the file has id, messages, model" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert cli.main(["scan", str(parquet)]) == 2
    assert "pip install 'vthread[arrow]'" in capsys.readouterr().err
    out = tmp_path / "out.parquet"
    assert cli.main(["scan", str(jsonl), "-o", str(out)]) == 2
    assert "pip install 'vthread[arrow]'" in capsys.readouterr().err


def test_struct_rows_are_written_by_the_core_as_python_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines made of a list<struct> column by the core equal, parsed, the lines made
    through Python objects, null rows and null fields included."""
    from vthread import _cli_parquet, _core

    runs: list[Any] = [[{"type": "user", "text": "go", "usage": {"tokens": 1.5}}],
                       None,
                       [{"type": "bot", "text": "é \"q\" \n", "usage": None}, None]]
    path = tmp_path / "structs.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "messages": pa.array(runs)}), path)
    calls: list[int] = []
    real = _core.arrow_row_texts

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(_core, "arrow_row_texts", counted)
    fast = [line for lines, _, _ in _cli_parquet.parquet_lines(str(path), None, None, 2)
            for line in lines]
    assert calls
    monkeypatch.setattr(_core, "arrow_row_texts", lambda *args: None)
    slow = [line for lines, _, _ in _cli_parquet.parquet_lines(str(path), None, None, 2)
            for line in lines]
    assert [json.loads(line) for line in fast] == [json.loads(line) for line in slow]
    assert json.loads(fast[2])["messages"] == [{"type": "bot", "text": "é \"q\" \n"}, None]


def test_struct_rows_holding_nan_are_read_as_jsonl_lines_are(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A NaN token count in a struct column is read as a JSONL line holding NaN is (it
    counts 0), a record for every row; it once made the whole file unreadable."""
    runs = [[{"type": "user", "text": "hi", "usage": {"tokens": float("nan")}}],
            [{"type": "user", "text": "ok"}] * 4]
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "messages": pa.array(runs)}), path)
    code, records = _scan([str(path)], capsys)
    assert code == 0
    assert [r["id"] for r in records] == ["a", "b"]
    assert [r["verdict"] for r in records] == [None, "repeated_suffix"]


def test_an_empty_messages_cell_is_named_a_cell(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A messages cell of empty or blank text is an error record saying so of the cell (it
    said "blank line", of a file that has no lines), and under --strict the fatal error."""
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"messages": ["", " \t", "[]"]}), path)
    code, records = _scan([str(path)], capsys)
    said = "blank cell: the row's messages are empty text"
    assert code == 0 and [r.get("error") for r in records] == [said, said, None]
    assert cli.main(["scan", str(path), "-q", "--strict"]) == 2
    assert capsys.readouterr().err == f"vthread scan: {path}: row 1: {said}\n"


def test_a_run_object_cell_with_an_id_column_is_read_as_scan_arrow_reads_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cell holding a whole run object, beside an id column: its messages, the column's id
    (it was an error, "messages is an object"), as ``vthread.scan_arrow`` answers."""
    import vthread

    chat = [{"type": "user", "text": "a"}] + [
        {"type": "bot", "text": "s"}, {"type": "user", "text": "t"}] * 2
    cells = [json.dumps({"id": "inner", "messages": chat}), "{}",
             ' {"messages": [{"type": "user", "text": "x"}], "id": "own"}  ',
             json.dumps({"instance_id": "i", "messages": []})]
    table = pa.table({"id": ["r1", "r2", "r3", None], "messages": cells})
    path = tmp_path / "runs.parquet"
    pq.write_table(table, path)
    code, records = _scan([str(path)], capsys)
    assert code == 0
    expected = vthread.scan_arrow(table, id="id").to_pylist()
    assert [(r["id"], r.get("verdict"), r.get("error")) for r in records] == [
        (e["id"], e["verdict"], e["error"]) for e in expected]
    assert records[0]["verdict"] == "repeated_suffix"


def test_records_that_are_no_unicode_text_are_written(tmp_path: Path) -> None:
    """Ids holding a lone surrogate (JSON allows the escape) reach the Parquet of records as
    U+FFFD (Parquet's strings are UTF-8: the run crashed when the file closed, after it had
    emptied a file already there)."""
    out = tmp_path / "verdicts.parquet"
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": "ok", "messages": []}) + "\n")
    assert cli.main(["scan", str(good), "-q", "-o", str(out)]) == 0
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"id":"ok","messages":[]}\n{"id":"\\ud800","messages":[]}\n'
                   '{"id":["\\udfff"],"messages":[]}\n{"id":"\\ud83c\\udf89","messages":[]}\n')
    assert cli.main(["scan", str(odd), "-q", "-o", str(out)]) == 0
    assert pq.read_table(out).column("id").to_pylist() == ["ok", "\ufffd", '["\ufffd"]',
                                                           "\U0001f389"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.jsonl", "odd.jsonl",
                                                          "verdicts.parquet"]


@pytest.mark.skipif(sys.platform == "win32", reason="names of bytes that are no UTF-8")
def test_file_names_and_keys_that_are_no_utf8(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A Parquet file named with bytes that are no UTF-8 is read and written (pyarrow takes
    no such name: the run failed); a key option that is no UTF-8 is a usage error, exit 2."""
    import os

    name = os.fsdecode(b"runs\xff.parquet")
    source = tmp_path / name
    with open(source, "wb") as sink:  # pyarrow takes no such name
        pq.write_table(pa.table({"id": ["r1"], "messages": [json.dumps(RUNS[0])]}), sink)
    code, records = _scan([str(source)], capsys)
    assert code == 0 and [r["id"] for r in records] == ["r1"]
    out = tmp_path / os.fsdecode(b"out\xfe.parquet")
    assert cli.main(["scan", str(source), "-q", "-o", str(out)]) == 0
    assert pq.read_table(pa.OSFile(os.fsencode(out))).column("id").to_pylist() == ["r1"]
    for option in ("--messages-key", "--id-key"):
        assert cli.main(["scan", str(source), "-q", option, os.fsdecode(b"\xff")]) == 2
        assert f"argument {option}: expected UTF-8 text" in capsys.readouterr().err


_LOOP = json.dumps([{"type": "user", "text": "a"}] + [{"type": "bot", "text": "s"}] * 5)
_BOM = b"\xef\xbb\xbf"


def _cli_and_arrow(cells: list[Any], kind: Any, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> tuple[list[Any], list[Any]]:
    """(id, verdict, error) of each row of a table of ``cells``, as ``vthread scan X.parquet``
    and as ``vthread.scan_arrow`` answer."""
    import vthread

    table = pa.table({"id": [f"r{i}" for i in range(len(cells))],
                      "messages": pa.array(cells, type=kind)})
    path = tmp_path / f"cells_{kind}.parquet"
    pq.write_table(table, path)
    code, records = _scan([str(path)], capsys)
    assert code == 0
    by_cli = [(r["id"], r.get("verdict"), r.get("error")) for r in records]
    by_arrow = [(r["id"], r["verdict"], r["error"])
                for r in vthread.scan_arrow(table, id="id").to_pylist()]
    return by_cli, by_arrow


@pytest.mark.parametrize("kind", ["binary", "large_binary"])
def test_a_nul_byte_opening_a_binary_cell_is_placed_in_the_cell(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A binary cell with a NUL among its first bytes (read as UTF-16 or UTF-32 text, as
    such a JSONL line is) has that line's error, the NUL's place said to be in the cell (it
    said "of the line", of a table that has none), by the command and scan_arrow alike."""
    by_cli, by_arrow = _cli_and_arrow([b"\x00[]]", _LOOP.encode()], getattr(pa, kind)(),
                                      tmp_path, capsys)
    assert by_cli == by_arrow
    assert by_cli[0][2] == ("not valid JSON: a NUL byte at byte 1 of the cell, which json reads "
                            "as UTF-16 or UTF-32 text (Expecting value: line 1 column 2 (char 1))")
    assert by_cli[1] == ("r1", "repeated_suffix", None)


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view"])
def test_a_string_cell_with_nul_characters_is_text_not_utf16(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A string cell is text: NUL characters near its start are characters no JSON text
    holds unescaped, not the sign of UTF-16 or UTF-32 JSON that they are in a binary cell
    or a JSONL line (a string cell holding a run's UTF-16 bytes as characters was that
    run, and ``"[\\x00]\\x00"`` an empty run), by the command and scan_arrow alike; the
    error is ``json.loads`` of the text."""
    if kind == "string_view" and not hasattr(pa, "string_view"):
        pytest.skip("no string_view in this pyarrow")
    utf16 = _LOOP.encode("utf-16-le").decode("latin-1")
    cells = ["[\x00]\x00", utf16, "\x00[]]", "\ufeff\x00[]", _LOOP]
    by_cli, by_arrow = _cli_and_arrow(cells, getattr(pa, kind)(), tmp_path, capsys)
    assert by_cli == by_arrow
    for (_, verdict, error), cell in zip(by_cli[:4], cells, strict=False):
        with pytest.raises(json.JSONDecodeError) as expected:
            json.loads(cell.removeprefix("\ufeff"))
        assert (verdict, error) == (None, f"not valid JSON: {expected.value}")
    assert by_cli[4] == ("r4", "repeated_suffix", None)


@pytest.mark.parametrize("kind", ["string", "binary", "large_binary"])
def test_a_cell_opening_with_a_byte_order_mark_reads_as_a_jsonl_line_does(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cell whose JSON text opens with a UTF-8 byte-order mark (a binary cell in UTF-16
    too) is the run it holds, as a JSONL line or file opening with one is, by the command
    and by scan_arrow alike; a broken one is the error of that line, with the row's id (the
    command said where its wrapping broke, with a null id; scan_arrow refused the mark in
    a string column only)."""
    broken = _BOM + b'[{"type": "user"'
    cells: list[bytes] = [_BOM + _LOOP.encode(), _LOOP.encode(), broken,
                          _BOM + json.dumps({"id": "own", "messages": []}).encode()]
    if kind != "string":
        cells += [_LOOP.encode("utf-16"), _LOOP.encode("utf-16-le")]
    column = [c.decode() for c in cells] if kind == "string" else cells
    by_cli, by_arrow = _cli_and_arrow(column, getattr(pa, kind)(), tmp_path, capsys)
    assert by_cli == by_arrow
    lines = tmp_path / "bom.jsonl"
    lines.write_bytes(_BOM + _LOOP.encode() + b"\n" + broken + b"\n")
    _, records = _scan([str(lines)], capsys)
    loop, error = records[0]["verdict"], records[1]["error"]
    assert loop == "repeated_suffix" and error.startswith("not valid JSON")
    expected = [("r0", loop, None), ("r1", loop, None), ("r2", None, error),
                ("r3", None, None), ("r4", loop, None), ("r5", loop, None)]
    assert by_cli == expected[:len(cells)]


@pytest.mark.parametrize("kind", ["string", "binary"])
def test_a_cell_with_an_integer_past_the_digit_limit_reads_alike_on_both_paths(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An integer of 5,000 digits in a cell: the command reads it as a JSONL line's (as
    ``JSON.parse`` does, an infinity) and scan_arrow now too (its reader refused the cell,
    "Exceeds the limit (4300 digits)", a reviewer's finding)."""
    loop = json.loads(_LOOP)
    loop[1]["meta"] = {"n": 0}
    text = json.dumps(loop).replace('"n": 0', '"n": ' + "9" * 5000)
    cells = [text.encode(), _BOM + text.encode()]
    column = [c.decode() for c in cells] if kind == "string" else cells
    by_cli, by_arrow = _cli_and_arrow(column, getattr(pa, kind)(), tmp_path, capsys)
    assert by_cli == by_arrow == [("r0", "repeated_suffix", None), ("r1", "repeated_suffix", None)]


@pytest.mark.parametrize("kind", ["string", "large_string", "binary"])
def test_a_cell_that_is_no_run_has_one_error_text_on_both_paths(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A null, empty, blank, non-array or broken messages cell gets the same error from
    ``vthread scan X.parquet`` and from scan_arrow, worded in one place (scan_arrow said
    "messages is null", and "not valid JSON" of an empty cell)."""
    texts = [None, "", " \t", '"text"', "42", "null", "true", "{}", "[1,", _LOOP]
    cells = [t if t is None or kind != "binary" else t.encode() for t in texts]
    by_cli, by_arrow = _cli_and_arrow(cells, getattr(pa, kind)(), tmp_path, capsys)
    assert by_cli == by_arrow
    errors = [error for _, _, error in by_cli]
    blank = "blank cell: the row's messages are empty text"
    assert errors[:7] == [f'not a thread: "messages" is {what}, not an array' if what else blank
                          for what in ("a null", "", "", "a string", "a number", "a null",
                                       "a boolean")]
    assert errors[7] == 'not a thread: an object without "messages", "traj" or "history"'
    assert errors[8] == ("not valid JSON: Expecting value: line 1 column 4 (char 3) (it ends "
                         "inside its value: cut short?)")
    assert errors[9] is None


def test_a_null_nested_cell_has_the_text_columns_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A null row of a column of message structs: the error a null text cell has, on both
    paths."""
    cells = [None, [{"type": "user", "text": "a"}]]
    by_cli, by_arrow = _cli_and_arrow(cells, None, tmp_path, capsys)
    assert by_cli == by_arrow
    assert by_cli[0] == ("r0", None, 'not a thread: "messages" is a null, not an array')


def _records_both_ways(table: Any, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> tuple[list[Any], list[Any]]:
    """Each row's record fields (id, verdict and the loop's, messages, error), as ``vthread
    scan X.parquet`` and as ``vthread.scan_arrow`` give them."""
    import vthread
    from vthread.arrow import RESULT_FIELDS

    path = tmp_path / "values.parquet"
    pq.write_table(table, path)
    code, records = _scan([str(path)], capsys)
    assert code == 0
    by_cli = [{name: record.get(name) for name in ("id", *RESULT_FIELDS)} for record in records]
    # The table as the file holds it (a date64 is stored as days, say), as the command reads it.
    by_arrow = vthread.scan_arrow(pq.read_table(path), id="id").to_pylist()
    return by_cli, by_arrow


_NO_JSON_FORM = {
    "binary": (pa.binary(), [b"\x00a", b"b", b"\xffc", b"d"]),
    "timestamp": (pa.timestamp("ms"), [datetime.datetime(2024, 1, 2, 3, 4, s) for s in range(4)]),
    "timestamp_utc": (pa.timestamp("us", tz="UTC"),
                      [datetime.datetime(2024, 1, 2, s, tzinfo=datetime.UTC)
                       for s in range(4)]),
    "date": (pa.date32(), [datetime.date(2024, 1, d) for d in range(1, 5)]),
    "time": (pa.time64("us"), [datetime.time(3, 4, s) for s in range(4)]),
    "duration": (pa.duration("s"), [datetime.timedelta(seconds=s) for s in range(4)]),
    "decimal": (pa.decimal128(10, 2), [decimal.Decimal(f"1.{d}0") for d in range(4)]),
}


@pytest.mark.parametrize("kind", list(_NO_JSON_FORM))
def test_values_with_no_json_text_get_the_same_records_from_the_command_and_scan_arrow(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A binary, timestamp, date, time, duration or decimal value in a message's meta, as a
    field of its struct, or as a map's key: a record for every row, the command's equal to
    scan_arrow's (the command ended with status 70, "Object of type datetime is not JSON
    serializable"). One value four times is a loop; four different values are not."""
    arrow_type, values = _NO_JSON_FORM[kind]
    same, different = [values[0]] * 4, values

    def run(of: list[Any], shape: Any) -> list[dict[str, Any]]:
        return [{"type": "user", "text": "go", "meta": shape(value)} for value in of]

    message = pa.struct([("type", pa.string()), ("text", pa.string()),
                         ("meta", pa.struct([("v", arrow_type)]))])
    keyed = pa.struct([("type", pa.string()), ("text", pa.string()),
                       ("meta", pa.map_(arrow_type, pa.string()))])
    field = pa.struct([("type", pa.string()), ("text", pa.string()), ("blob", arrow_type)])
    tables = [
        pa.table({"id": ["a", "b", "c"], "messages": pa.array(
            [run(same, lambda v: {"v": v}), run(different, lambda v: {"v": v}),
             run(same, lambda v: None)], type=pa.list_(message))}),
        pa.table({"id": ["a", "b"], "messages": pa.array(
            [run(same, lambda v: [(v, "x")]), run(different, lambda v: [(v, "x")])],
            type=pa.list_(keyed))}),
        pa.table({"id": ["a", "b"], "messages": pa.array(
            [[{"type": "user", "text": "go", "blob": v} for v in of]
             for of in (same, different)], type=pa.list_(field))}),
    ]
    # (a field beside type, text and meta is not compared: both of its runs loop)
    verdicts = [["repeated_suffix", None, "repeated_suffix"], ["repeated_suffix", None],
                ["repeated_suffix", "repeated_suffix"]]
    for table, expected in zip(tables, verdicts, strict=True):
        by_cli, by_arrow = _records_both_ways(table, tmp_path, capsys)
        assert by_cli == by_arrow
        assert [r["verdict"] for r in by_cli] == expected
        assert all(r["error"] is None for r in by_cli)


_OUT_OF_RANGE = {
    "date32": (pa.date32(), 2**31 - 1),
    "date64": (pa.date64(), 2**62),
    "timestamp_utc": (pa.timestamp("ms", tz="UTC"), 2**62),
    "timestamp_before": (pa.timestamp("us"), -(2**62)),
    "duration": (pa.duration("s"), 2**62),
}


@pytest.mark.parametrize("kind", list(_OUT_OF_RANGE))
def test_a_date_past_what_python_holds_is_an_error_of_its_row_on_both_paths(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A date, timestamp or duration past Python's datetime range (pyarrow raises for the
    whole column) in a message's field, as a map's key, or as an id: its row gets an error
    saying so, from the command and scan_arrow alike (both ended with OverflowError, the
    command with status 70), the other rows their verdicts, the id its stored number."""
    arrow_type, stored = _OUT_OF_RANGE[kind]
    loop = [{"type": "user", "text": "go", "v": 0, "m": [(0, "x")]}] * 4
    bad = [{"type": "user", "text": "go", "v": stored, "m": [(0, "x")]},
           {"type": "user", "text": "go", "v": 0, "m": [(stored, "x")]}]
    message = pa.struct([("type", pa.string()), ("text", pa.string()), ("v", arrow_type),
                         ("m", pa.map_(arrow_type, pa.string()))])
    for row in bad:
        # Raw numbers in the buffers: pyarrow cannot take such a datetime from Python.
        storage = pa.int64() if arrow_type.bit_width == 64 else pa.int32()
        rows = [[{**m, "v": m["v"]} for m in loop], [row]]
        flat = pa.array(rows, type=pa.list_(pa.struct([
            ("type", pa.string()), ("text", pa.string()), ("v", storage),
            ("m", pa.map_(storage, pa.string()))])))
        column = flat.cast(pa.list_(message))
        table = pa.table({"id": ["a", "b"], "messages": column})
        by_cli, by_arrow = _records_both_ways(table, tmp_path, capsys)
        assert by_cli == by_arrow
        assert [r["verdict"] for r in by_cli] == ["repeated_suffix", None]
        assert by_cli[0]["error"] is None
        assert by_cli[1]["error"].startswith(
            "not a thread: it holds a date, time or duration out of the range Python reads")
    ids = pa.array([stored, 0], type=pa.int64() if arrow_type.bit_width == 64 else pa.int32())
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"id": ids.cast(arrow_type),
                             "messages": [json.dumps(loop[:1])] * 2}), path)
    code, records = _scan([str(path)], capsys)
    assert code == 0 and len(records) == 2
    held = pq.read_table(path).column("id").combine_chunks()  # (a date64 is held as days)
    number = held.view(pa.int64() if held.type.bit_width == 64 else pa.int32())[0].as_py()
    assert records[0]["id"] == f"{held.type}:{number}"


def test_a_map_keyed_by_structs_or_lists_is_an_error_of_its_row_on_both_paths(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A map whose keys are structs or lists has no JSON object: its row gets an error
    naming the map's place (the first such map of the row: the last was named), from the
    command and scan_arrow alike (both ended with "unhashable type"); the other rows get
    their verdicts."""
    for key_type, key in [(pa.struct([("k", pa.int64())]), {"k": 1}),
                          (pa.list_(pa.string()), ["k"])]:
        message = pa.struct([("type", pa.string()), ("text", pa.string()),
                             ("meta", pa.struct([("tags", pa.map_(key_type, pa.string()))]))])
        loop = [{"type": "user", "text": "go", "meta": {"tags": []}}] * 4
        # (two such maps: the first is named, as a reader goes through the row)
        keyed = [{"type": "user", "text": "go", "meta": None},
                 {"type": "user", "text": "go", "meta": {"tags": [(key, "x")]}},
                 {"type": "user", "text": "go", "meta": {"tags": [(key, "y")]}}]
        table = pa.table({"id": ["a", "b", "c"],
                          "messages": pa.array([loop, keyed, loop], type=pa.list_(message))})
        by_cli, by_arrow = _records_both_ways(table, tmp_path, capsys)
        assert by_cli == by_arrow
        assert [r["verdict"] for r in by_cli] == ["repeated_suffix", None, "repeated_suffix"]
        kind = "struct" if isinstance(key, dict) else "list"
        assert by_cli[1]["error"] == (
            f"not a thread: the map at [1].meta.tags has {kind} keys, and a map whose keys "
            "are structs, lists or maps cannot be a JSON object")
        assert cli.main(["scan", str(tmp_path / "values.parquet"), "-q", "--strict"]) == 2
        assert f"row 2: not a thread: the map at [1].meta.tags has {kind} keys" in (
            capsys.readouterr().err)


def test_non_finite_ids_are_named_as_in_jsonl(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A float id column's NaN and infinities name their records as the same ids in a JSONL
    file do ("NaN", "Infinity", "-Infinity"; a Parquet file said Python's "nan" and "inf")."""
    ids = [math.nan, math.inf, -math.inf, 1.5]
    runs = [json.dumps(run) for run in RUNS[:4]]
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"id": ids, "messages": runs}), path)
    lines = tmp_path / "ids.jsonl"
    lines.write_text("".join(f'{{"id":{json.dumps(i)},"messages":{run}}}\n'
                             for i, run in zip(ids, runs, strict=True)))
    _, from_parquet = _scan([str(path)], capsys)
    _, from_jsonl = _scan([str(lines)], capsys)
    assert [r["id"] for r in from_parquet] == [r["id"] for r in from_jsonl] == [
        "NaN", "Infinity", "-Infinity", 1.5]


def test_a_string_cell_that_is_no_utf8_is_its_rows_error_not_the_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A messages cell (or an id) of a string column holding bytes that are no UTF-8 is that
    row's error record (its id then with \\xNN for each such byte), the other rows scanned
    as ever: the whole file was one error ("'utf-8' codec can't decode", "Non-fixed width
    type"), every row lost (found by a tester)."""
    chat = json.dumps([{"role": "user", "content": "hi"},
                       {"role": "assistant", "content": "yo"}] * 2).encode()
    bad_cell = tmp_path / "bad_cell.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "messages": raw_strings(
        [chat, chat.replace(b"yo", b"y\xff"), chat])}), bad_cell)
    code, got = _scan([str(bad_cell)], capsys)
    assert code == 0 and [record["id"] for record in got] == ["a", "b", "c"]
    assert "not valid JSON" in got[1]["error"] and "0xff" in got[1]["error"]
    assert got[0]["verdict"] == got[2]["verdict"] == "repeated_suffix"
    bad_id = tmp_path / "bad_id.parquet"
    pq.write_table(pa.table({"id": raw_strings([b"a", b"b\xff", b"b\xfe"]),
                             "messages": [chat.decode()] * 3}), bad_id)
    code, got = _scan([str(bad_id)], capsys)
    # (each byte that is no UTF-8 as \xNN: two such ids stay two)
    assert code == 0 and [record["id"] for record in got] == ["a", "b\\xff", "b\\xfe"]
    assert all(record["verdict"] == "repeated_suffix" for record in got)


def test_binary_ids_are_named_by_their_text(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A binary id column names its records by the bytes read as text, each byte that is no
    UTF-8 as \\xNN, as a string column's id is named, alone or as a task id beside a trial
    (Python's repr, ``"b'ab'"``, was written: an id the file does not hold)."""
    chat = json.dumps([{"role": "user", "content": "hi"},
                       {"role": "assistant", "content": "yo"}] * 2)
    path = tmp_path / "binary_ids.parquet"
    pq.write_table(pa.table({"id": pa.array([b"ab", b"c\xff", b""], pa.binary()),
                             "messages": [chat] * 3}), path)
    code, got = _scan([str(path)], capsys)
    assert code == 0 and [record["id"] for record in got] == ["ab", "c\\xff", ""]
    tasks = tmp_path / "binary_tasks.parquet"
    pq.write_table(pa.table({"task_id": pa.array([b"t1", b"t\xfe"], pa.large_binary()),
                             "trial": [1, 2], "messages": [chat] * 2}), tasks)
    code, got = _scan([str(tasks)], capsys)
    assert code == 0 and [record["id"] for record in got] == ["t1/1", "t\\xfe/2"]


def test_a_nested_string_that_is_no_utf8_is_its_rows_error_not_the_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A string inside the message structs that is no UTF-8 makes its row an error record
    saying so, and the rows around it, in its row group and in the groups after it, are
    scanned as ever (the core refused the whole column: exit 2, no record at all)."""
    clean = [b"x", b"y", b"x", b"y"]
    groups = [clean, [b"x", b"\xff", b"x", b"y"], clean]
    path = tmp_path / "nested.parquet"
    first = pa.table({"id": ["r1", "r2"], "messages": message_lists(clean, 2)})
    with pq.ParquetWriter(path, first.schema) as writer:
        for number, texts in enumerate(groups):
            writer.write_table(pa.table({
                "id": [f"r{2 * number + 1}", f"r{2 * number + 2}"],
                "messages": message_lists(texts, 2)}))
    code, got = _scan([str(path)], capsys)
    assert code == 0 and [record["id"] for record in got] == [f"r{n}" for n in range(1, 7)]
    assert got[2]["error"].startswith("not a thread: a string in it is no UTF-8")
    assert "0xff" in got[2]["error"]
    assert all("error" not in record and record["messages"] == 2
               for at, record in enumerate(got) if at != 2)
    assert cli.main(["scan", str(path), "-q", "--strict"]) == 2
    assert "row 3: not a thread: a string in it is no UTF-8" in capsys.readouterr().err


def test_an_empty_parquet_file_is_counted_in_rows(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The summary of an empty Parquet file counts rows, as that of any other does (it said
    "0 lines from", no task having said what its lines are)."""
    path = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"id": pa.array([], pa.string()),
                             "messages": pa.array([], pa.string())}), path)
    assert cli.main(["scan", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"vthread scan: 0 rows from {path}" in err, err


def test_a_table_of_declared_runs_is_looked_through_unparsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A table of mini-swe-agent runs declared by a ``trajectory_format`` column is looked
    through past its first rows (for a run of another harness) with no row parsed: each
    row's line carries the declaration after its messages, where the core tells it (it
    came first, and every row was parsed twice, once for its evidence, once for a plain
    chat's reading). Records as the JSONL file's, and named mini-swe-agent."""
    from tests.test_format_settling import counted_parses

    runs = declaring_runs(3)
    mini = runs[3]
    table = pa.table({"id": [f"m{index}" for index in range(200)],
                      "trajectory_format": ["mini-swe-agent-1"] * 200,
                      "messages": [json.dumps(mini["messages"])] * 200})
    path = tmp_path / "runs.parquet"
    pq.write_table(table, path)
    judged, read_otherwise = counted_parses(monkeypatch)
    code = cli.main(["scan", str(path)])
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["verdict"] for r in records] == ["repeated_result_run"] * 200
    assert f"mini-swe-agent (detected; {path})" in err
    assert judged == [] and read_otherwise == []


# ------------------------------------------------- a row larger than the memory left

def _small_huge_small(path: Path, huge_messages: int) -> None:
    """Rows 1-20 small runs, row 21 a run of ``huge_messages`` 1 KB messages (a list of
    structs, written by the core's Arrow writer), rows 22-41 small again: one row group."""
    small = [[{"type": "user", "text": "hi"}, {"type": "bot", "text": "yo"}]] * 20
    huge = [[{"type": "bot", "text": "y" * 1000 + str(i)} for i in range(huge_messages)]]
    pq.write_table(pa.table({"id": list(range(41)), "messages": small + huge + small}), path)


def _says_row_21_is_out_of_memory(code: int, records: list[Any], said: str) -> None:
    assert code == 71, said
    assert [record["id"] for record in records] == list(range(20))
    assert "out of memory at " in said and ".parquet: row 21:" in said
    assert "the records of the 20 rows before it are written" in said


@pytest.mark.parametrize("failing", ["reading", "writing"])
def test_a_batch_that_does_not_fit_is_read_again_a_row_at_a_time(
        failing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A MemoryError of a batch of rows, in pyarrow's reading of it or in its rows' writing as
    JSON text: the batch's rows are taken again one at a time, so that the records of the 20
    rows before the one that does not fit are written and the summary names that row (the
    whole batch ended the scan with none of them: "out of memory after 0 rows"); the rows
    that fit alone after a batch that did not are all read. What the failed attempt held is
    let go before the rows are taken again (read again inside the exception's handler, its
    traceback held the failed attempt's memory through the retry; a reviewer's case)."""
    import weakref

    from vthread import _cli_parquet

    class Attempt:  # what a failed attempt holds, referenced from its frame alone
        pass

    attempts: list[weakref.ref[Attempt]] = []

    def attempted() -> Attempt:
        attempt = Attempt()
        attempts.append(weakref.ref(attempt))
        return attempt

    def none_held() -> None:
        assert [ref for ref in attempts if ref() is not None] == []

    path = tmp_path / "runs.parquet"
    _small_huge_small(path, 3)
    if failing == "reading":
        read = _cli_parquet._batches_until_failure

        def batches(parquet: Any, columns: list[str], rows: int, *rest: Any) -> Any:
            for batch in read(parquet, columns, rows, *rest):
                if rows > 1 or batch.column("id")[0].as_py() == 20:
                    held = attempted()  # noqa: F841  (in the frame the error leaves)
                    raise MemoryError  # (pyarrow's ArrowMemoryError is one)
                none_held()
                yield batch
        monkeypatch.setattr(_cli_parquet, "_batches_until_failure", batches)
    else:
        bodies = _cli_parquet._bodies

        def written(column: Any, text: bool, rows_before: int) -> Any:
            if rows_before <= 20 < rows_before + len(column):
                held = attempted()  # noqa: F841  (in the frame the error leaves)
                raise MemoryError
            none_held()
            return bodies(column, text, rows_before)
        monkeypatch.setattr(_cli_parquet, "_bodies", written)
    code = cli.main(["scan", str(path), "-q"])
    said = capsys.readouterr()
    _says_row_21_is_out_of_memory(code, [json.loads(line) for line in said.out.splitlines()],
                                  said.err)

    _small_huge_small(path, 3)  # every row fits alone: all 41 records, in order
    if failing == "reading":
        monkeypatch.setattr(_cli_parquet, "_batches_until_failure", lambda parquet, columns,
                            rows, *rest: read(parquet, columns, rows, *rest) if rows == 1
                            else (_ for _ in ()).throw(MemoryError))
    else:
        monkeypatch.setattr(_cli_parquet, "_bodies", lambda column, text, rows_before: (
            bodies(column, text, rows_before) if len(column) == 1 else (_ for _ in ()).throw(
                MemoryError)))
    code, records = _scan([str(path)], capsys)
    assert code == 0 and [record["id"] for record in records] == list(range(41))


def test_a_row_larger_than_the_memory_left_ends_the_scan_after_the_rows_before_it(
        tmp_path: Path) -> None:
    """Under an address-space limit 700 MB above the process's size, a row of 60 MB of
    messages after 20 small ones (a tester's case, with 150 MB under ``ulimit -v`` of 1.2-1.7
    GB): status 71 naming row 21, the 20 records before it written. Before, the scan ended
    with none of them (the batch's reading ran out), or the core's writing of the row as
    JSON text grew its buffer until the allocator aborted the process (status 134)."""
    import subprocess

    path = tmp_path / "runs.parquet"
    _small_huge_small(path, 60_000)
    code = """
import resource, sys
import pyarrow.parquet
from vthread import cli
size = int(next(line for line in open("/proc/self/status")
                if line.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (700 << 20), size + (700 << 20)))
sys.exit(cli.main(["scan", "-q", sys.argv[1]]))
"""
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          timeout=300, check=False)
    records = [json.loads(line) for line in done.stdout.splitlines()]
    _says_row_21_is_out_of_memory(done.returncode, records, done.stderr.decode()[-3000:])


def test_the_cores_arrow_writer_raises_memory_error_where_its_text_cannot_be_had() -> None:
    """The core's writing of a list-of-structs row as JSON text, with 32 MB of address space
    left: a MemoryError (its buffer grew by itself and the allocator aborted the process)."""
    import subprocess

    code = """
import resource
import pyarrow as pa
from vthread import _core
array = pa.array([[{"type": "bot", "text": "y" * 1000 + str(i)} for i in range(60_000)]])
size = int(next(line for line in open("/proc/self/status")
                if line.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (32 << 20), size + (32 << 20)))
try:
    _core.arrow_row_texts(array, 1)
    print("written")
except MemoryError as error:
    print("MemoryError:", error)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode().strip() == (
        "MemoryError: not enough memory to write the array's rows as JSON text")


def test_a_parquet_output_whose_disk_fills_is_74_with_its_summary(
        jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A row group the disk has no room for: 74 naming the file, and the --summary written
    (cut short); the failed writer is not asked to write again as the output closes (its
    "Operation on closed file" made the scan an internal error, 70, with no summary: a
    tester's case on a full tmpfs)."""
    import errno
    import gc

    from vthread import _cli_parquet

    monkeypatch.setattr(_cli_parquet, "ROWS_PER_GROUP", 10)
    monkeypatch.setattr(cli, "CHUNK_LINES", 7)  # (records reach the writer a chunk at a time)
    real = pq.ParquetWriter.write_table
    groups: list[int] = []

    def filling(self: Any, table: Any, *args: Any, **kwargs: Any) -> None:
        groups.append(table.num_rows)
        if len(groups) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        if len(groups) > 2:
            raise pa.ArrowInvalid("Operation on closed file")
        real(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", filling)
    output, summary = tmp_path / "records.parquet", tmp_path / "summary.json"
    code = cli.main(["scan", str(jsonl), "-q", "-o", str(output), "--summary", str(summary)])
    gc.collect()  # (the failed writer's own finalizer said nothing either)
    err = capsys.readouterr().err
    assert code == 74 and len(groups) == 2, err
    assert err == f"vthread scan: cannot write {output}: No space left on device\n"
    written = json.loads(summary.read_text())
    assert (written["completed"], written["exit_status"]) == (False, 74)
