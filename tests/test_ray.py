"""scan_dataset on a local Ray cluster: scan_arrow's answers, row for row, other columns kept."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from benchmarks.workload import generate_threads, to_openai
from vthread import arrow, scan

pa = pytest.importorskip("pyarrow", reason="scan_dataset needs pyarrow (pip install vthread[ray])")
pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray", reason="scan_dataset needs Ray Data (pip install vthread[ray])")
pytest.importorskip("ray.data", reason="scan_dataset needs Ray Data (pip install 'ray[data]')")

from vthread.ray import scan_dataset  # noqa: E402  (only once Ray is known to be there)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    """One local two-CPU cluster for the module, blocks returned in input order."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False, ignore_reinit_error=True)
    context = ray.data.DataContext.get_current()
    order, bars = context.execution_options.preserve_order, context.enable_progress_bars
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    yield
    context.execution_options.preserve_order, context.enable_progress_bars = order, bars
    ray.shutdown()


def _texts(runs: list[Any]) -> list[str]:
    return [json.dumps(run) for run in runs]


def _table(result: Any) -> Any:
    """The dataset's rows as one pyarrow Table, in order."""
    return pa.concat_tables(list(result.iter_batches(batch_format="pyarrow",
                                                     batch_size=None)))


def _rows(table: Any, names: list[str]) -> list[dict[str, Any]]:
    columns = {name: table.column(name).to_pylist() for name in names}
    return [{name: columns[name][row] for name in names} for row in range(table.num_rows)]


def test_workload_dataset_equals_scan_arrow_row_for_row() -> None:
    """300 workload runs over 4 blocks, batches of 64: scan_arrow's rows, other columns kept."""
    runs = generate_threads(300, seed=21)
    source = pa.table({"run": [f"r{i}" for i in range(len(runs))],
                       "messages": _texts(runs), "split": ["dev"] * len(runs)})
    ds = ray.data.from_arrow(source).repartition(4)
    got = _table(scan_dataset(ds, batch_size=64))
    assert got.column_names == ["run", "split", *arrow.RESULT_FIELDS]
    assert got.column("run").to_pylist() == source.column("run").to_pylist()
    assert got.column("split").to_pylist() == ["dev"] * len(runs)
    fields = list(arrow.RESULT_FIELDS)
    assert _rows(got, fields) == _rows(arrow.scan_arrow(source), fields)
    assert got.column("verdict").to_pylist() == scan(runs).names
    assert got.column("verdict").null_count < len(runs) - 20


def test_parquet_file_with_bad_rows(tmp_path: Path) -> None:
    """A Parquet file read by Ray: null and invalid rows keep their place and their errors."""
    runs = generate_threads(60, seed=22)
    texts: list[str | None] = list(_texts(runs))
    texts[3], texts[17], texts[40] = None, "{not json", "42"
    source = pa.table({"id": list(range(len(texts))), "messages": texts})
    pq.write_table(source, tmp_path / "runs.parquet", row_group_size=16)
    got = _table(scan_dataset(ray.data.read_parquet(str(tmp_path / "runs.parquet")),
                              format="native"))
    assert got.column("id").to_pylist() == list(range(len(texts)))
    fields = list(arrow.RESULT_FIELDS)
    assert _rows(got, fields) == _rows(arrow.scan_arrow(source), fields)
    errors = got.column("error").to_pylist()
    assert errors[3] == 'not a thread: "messages" is a null, not an array'
    assert errors[17].startswith("not valid JSON")
    assert errors[40].startswith("not a thread")
    assert sum(error is not None for error in errors) == 3


def test_format_detected_once_and_options_reach_the_workers() -> None:
    """OpenAI runs are detected from the head; cycle options and mask_volatile apply."""
    runs = generate_threads(40, seed=23)
    ds = ray.data.from_items([{"messages": json.dumps(to_openai(run))} for run in runs])
    got = _table(scan_dataset(ds, min_repetitions=3, mask_volatile=True))
    assert got.column("verdict").to_pylist() == scan(
        runs, min_repetitions=3, mask_volatile=True).names
    assert got.column("messages").to_pylist() == [len(to_openai(run)) for run in runs]


@pytest.mark.parametrize("where", [3, 70])
def test_a_row_declaring_mini_swe_agent_is_read_as_scan_arrow_reads_it(where: int) -> None:
    """A ``trajectory_format`` column declaring one row a mini-swe-agent run among OpenAI
    runs, in the head the format is detected from and past it, in another block: the row is
    read as one (its loop found), as scan_arrow reads it; the dataset was refused as of two
    formats, or the row read as an OpenAI chat."""
    from tests.test_cli_parquet import declaring_runs, declaring_table

    source = declaring_table(declaring_runs(where), "text")
    ds = ray.data.from_arrow(source).repartition(3)
    got = _table(scan_dataset(ds, messages="messages", batch_size=16))
    fields = list(arrow.RESULT_FIELDS)
    assert _rows(got, fields) == _rows(arrow.scan_arrow(source), fields)
    assert [row for row, verdict in enumerate(got.column("verdict").to_pylist())
            if verdict] == [where]
    assert got.column("trajectory_format").to_pylist() == source.column(
        "trajectory_format").to_pylist()


@pytest.mark.parametrize("chats", [1, 240])
def test_formats_disagreeing_within_the_rows_read_are_refused_at_the_call(chats: int) -> None:
    """16 native rows, then OpenAI chats among the 256 rows read to detect the format: a
    ValueError at the call naming both, as ``vthread scan`` refuses such a file (only the
    first 16 weighed, and every chat was read as native, each a false loop, without a word;
    a tester's case)."""
    native = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "hello"}]
    chat = [{"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "calc",
                                                               "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "4"},
            {"role": "assistant", "content": "4."}]
    rows = _texts([native] * 16 + [chat] * chats + [native] * (240 - chats))
    dataset = ray.data.from_arrow(pa.table({"messages": rows}))
    with pytest.raises(ValueError, match=r"the rows are in different formats \(native at "
                       r"rows 0, 1, .*openai at row"):
        scan_dataset(dataset)
    assert scan_dataset(dataset, format="native").count() == 256  # (given, as it asks)


def test_anywhere_reaches_the_workers() -> None:
    """anywhere=True adds scan_arrow's loops column, row for row; it clashes like the rest."""
    runs = generate_threads(80, seed=31)
    source = pa.table({"run": [f"r{i}" for i in range(len(runs))], "messages": _texts(runs)})
    got = _table(scan_dataset(ray.data.from_arrow(source).repartition(2), anywhere=True,
                              format="native"))
    assert got.column_names == ["run", *arrow.RESULT_FIELDS, "loops"]
    expected = arrow.scan_arrow(source, anywhere=True)
    assert got.column("loops").to_pylist() == expected.column("loops").to_pylist()
    assert got.column("verdict").to_pylist() == expected.column("verdict").to_pylist()
    clash = ray.data.from_items([{"messages": "[]", "loops": 1}])
    scan_dataset(clash, format="native")  # no loops column asked for: no clash
    with pytest.raises(ValueError, match="'loops' is already a column"):
        scan_dataset(clash, format="native", anywhere=True)


def test_column_names_prefix_and_keep_messages() -> None:
    """A clash is a ValueError naming the column; prefix= names the results apart."""
    ask = '{"type":"user","text":"hi"}'
    rows = [{"messages": f"[{ask}]", "verdict": "human: fine"},
            {"messages": "[" + ",".join([ask] * 4) + "]", "verdict": "human: loops"}]
    ds = ray.data.from_items(rows)
    with pytest.raises(ValueError, match="'verdict' is already a column"):
        scan_dataset(ds, format="native")
    with pytest.raises(ValueError, match="'messages' is already a column"):
        scan_dataset(ds.drop_columns(["verdict"]), keep_messages=True, format="native")
    with pytest.raises(ValueError, match="no column 'traj'; the dataset has messages"):
        scan_dataset(ds, messages="traj")
    history = ray.data.from_items([{"history": row["messages"]} for row in rows])
    assert [row["verdict"] for row in scan_dataset(history).take_all()] == [
        None, "repeated_suffix"]
    # A dataset whose columns are known only once it runs: each batch finds its own.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(history), "schema", lambda self, *args, **kwargs: None)
        assert [row["verdict"] for row in scan_dataset(history).take_all()] == [
            None, "repeated_suffix"]
    with pytest.raises(ValueError, match=r"no messages column .* the dataset has verdict"):
        scan_dataset(ds.drop_columns(["messages"]))
    with pytest.raises(ValueError, match="'vt_verdict' is already a column of the dataset; "
                                         "pass another prefix= than 'vt_' to name"):
        scan_dataset(ds.add_column("vt_verdict", lambda b: b["verdict"]), prefix="vt_")
    got = _table(scan_dataset(ds, prefix="vt_", keep_messages=True))
    assert got.column_names == ["messages", "verdict", *(f"vt_{n}" for n in arrow.RESULT_FIELDS)]
    assert got.column("verdict").to_pylist() == ["human: fine", "human: loops"]
    assert got.column("vt_verdict").to_pylist() == [None, "repeated_suffix"]
    assert got.column("messages").to_pylist() == [row["messages"] for row in rows]
    runs = ray.data.from_items([{"messages": '{"id": "r1", "messages": []}'},
                                {"messages": f'{{"instance_id": 7, "messages": [{ask}]}}'}])
    got = _table(scan_dataset(runs, run_ids=True, format="native"))
    assert got.column_names == ["run_id", *arrow.RESULT_FIELDS]
    assert got.column("run_id").to_pylist() == ["r1", "7"]
    # A column added by a map is known only once the dataset runs: found at the call when
    # the format is detected (the call runs the head), by each batch when it is given.
    def added() -> Any:
        return ds.drop_columns(["verdict"]).add_column("run_id", lambda b: b["messages"])

    lazy = scan_dataset(added(), run_ids=True, format="native")
    with pytest.raises(ValueError, match="'run_id' is already a column"):
        scan_dataset(added(), run_ids=True)
    with pytest.raises(Exception, match="'run_id' is already a column"):
        _table(lazy)


def test_bad_arguments_fail_before_any_work() -> None:
    """Options, format and map_batches keywords scan_dataset sets itself are refused at once
    (an option that is no number is unset, as production reads it, and warned of at once)."""
    ds = ray.data.from_items([{"messages": "[]"}])
    with pytest.warns(UserWarning, match="option min_repetitions='2' is not a number"):
        scan_dataset(ds, min_repetitions="2")
    with pytest.raises(ValueError, match="format must be"):
        scan_dataset(ds, format="xml")
    with pytest.raises(TypeError, match="batch_format"):
        scan_dataset(ds, batch_format="pandas")
    with pytest.raises(TypeError, match="keep_messages must be a bool, got str"):
        scan_dataset(ds, keep_messages="no")
    with pytest.raises(TypeError, match="mask_volatile"):
        scan_dataset(ds, mask_volatile=1)


@pytest.mark.parametrize("empty", [None, "[]", "{not json", "[null]"])
def test_the_format_is_detected_past_a_head_of_rows_without_messages(empty: str | None
                                                                      ) -> None:
    """The first 256 rows hold no messages (null, empty or broken runs first, or messages in
    no format): the first batch further on that holds some decides the format, as
    scan_arrow looks past such rows (the chat runs after them were read as native, each a
    false loop; after 256 rows of [null], the call raised "cannot tell the message
    format", where scan_arrow gives each an error row)."""
    runs = generate_threads(30, seed=29)
    cells = [empty] * 300 + [json.dumps(to_openai(run)) for run in runs]
    table = pa.table({"messages": pa.array(cells, pa.string())})
    got = _table(scan_dataset(ray.data.from_arrow(table)))
    expected = arrow.scan_arrow(table)
    assert got.column("verdict").to_pylist() == expected.column("verdict").to_pylist()
    assert got.column("verdict").to_pylist()[300:] == scan(runs).names


def test_looking_past_a_head_without_messages_reads_at_most_look_past_rows(
        tmp_path: Path) -> None:
    """A dataset none of whose rows holds messages is not run whole when scan_dataset is
    called to detect its format: at most LOOK_PAST_ROWS rows past its head (and the blocks
    holding them) are read; it is then read as native, row errors and all."""
    from vthread.ray import LOOK_PAST_ROWS

    counted = tmp_path / "rows"
    counted.mkdir()

    def count(batch: Any) -> Any:
        (counted / f"{os.getpid()}-{id(batch)}-{batch.num_rows}").touch()
        return batch

    rows = 40 * 500
    table = pa.table({"messages": pa.array([None] * rows, pa.string())})
    ds = ray.data.from_arrow(table).repartition(40).map_batches(count, batch_format="pyarrow")
    result = scan_dataset(ds)
    run = sum(int(name.rsplit("-", 1)[1]) for name in os.listdir(counted))
    # (Ray may run a few blocks ahead of what it is asked for: bounded loosely)
    assert 0 < run < LOOK_PAST_ROWS + rows // 4 < rows
    assert _table(result).column("error").to_pylist() == [
        'not a thread: "messages" is a null, not an array'] * rows


def test_a_format_given_keeps_the_call_lazy_where_ray_knows_no_columns(tmp_path: Path
                                                                        ) -> None:
    """With a format given, a dataset whose columns Ray knows only once it runs (after a
    map_batches) is not run by the call: its batches check their own columns (asking
    Ray for the columns ran the pipeline's first block at the call)."""
    ran = tmp_path / "ran"

    def touch(batch: Any) -> Any:
        ran.touch()
        return batch

    runs = generate_threads(8, seed=31)
    ds = ray.data.from_items([{"messages": json.dumps(run)} for run in runs]).map_batches(
        touch, batch_format="pyarrow")
    result = scan_dataset(ds, format="native")
    assert not ran.exists()
    assert _table(result).column("verdict").to_pylist() == scan(runs).names
    assert ran.exists()
    missing = scan_dataset(ds, format="native", messages="history")
    with pytest.raises(Exception, match="history"):
        _table(missing)


def test_empty_dataset() -> None:
    """No rows: no error, no rows, the result's columns."""
    ds = ray.data.from_arrow(pa.table({"messages": pa.array([], pa.string())}))
    assert scan_dataset(ds).count() == 0


def test_importing_vthread_loads_neither_ray_nor_this_module() -> None:
    """vthread.ray is an integration: only `import vthread.ray` loads it, and Ray with it."""
    code = ("import sys, vthread; assert 'vthread.ray' not in sys.modules; "
            "assert 'ray' not in sys.modules; import vthread.ray; "
            "assert 'ray' not in sys.modules, 'Ray is loaded only by scan_dataset'")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 0


#: A line Ray's driver prints of its own processes, coloured or not ("(raylet) WARNING: 8
#: PYTHON worker processes have been started ...", said under load whatever log_to_driver
#: says), from a thread of its own, onto the standard output the example's is caught from.
_RAY_OWN_LINE: Final = re.compile(r"(?:\x1b\[[0-9;]*m)?\((?:raylet|autoscaler|monitor)\b")


def test_documented_local_example(tmp_path: Path) -> None:
    """docs/scale-out.md's local example runs on this cluster and prints what it says (Ray's
    own lines about its processes, printed meanwhile by another thread, are not the
    example's: one made CI fail)."""
    from test_docs_scale_out import printed_as_documented, run_example

    printed, _ = run_example("ray-local", tmp_path)
    printed = "".join(line for line in printed.splitlines(keepends=True)
                      if not _RAY_OWN_LINE.match(line))
    printed_as_documented("ray-local", printed)
    assert list((tmp_path / "verdicts").glob("*.parquet"))
