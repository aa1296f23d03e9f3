"""Formats as users have them: detection, run documents, SWE-agent replies, Responses items,
usage where each format keeps it; real published runs read by path."""

from __future__ import annotations

import gzip
import itertools
import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.workload import generate_threads, to_anthropic, to_openai
from tests.strategies import function_call_texts
from tests.test_attribution import PNG
from tests.test_cli import ROOT, SAMPLES, nothing_scanned, records, run, write_jsonl
from vthread import cli, describe_thread_cycle, scan
from vthread.adapters import (
    FormatConflictError,
    common_format,
    detect_format,
    from_anthropic,
    from_mini_swe_agent,
    from_openai,
    from_responses,
    from_swe_agent,
    to_native,
)
from vthread.documents import run_id, runs_of
from vthread.inspect_log import is_inspect_log, thread_of

REALDATA = ROOT.parent / "shared" / "realdata"
TAU = REALDATA / "tau-bench_gpt-4o-airline.json"
SWE = REALDATA / "swe-agent"
MINI = REALDATA / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz"
needs_realdata = pytest.mark.skipif(
    not REALDATA.is_dir(), reason=f"the real runs folder {REALDATA} is absent (outside CI)")


def openai_loop(n: int = 4) -> list[dict[str, Any]]:
    """An OpenAI chat thread that polls the same tool with the same answer ``n`` times."""
    thread: list[dict[str, Any]] = [{"role": "user", "content": "deploy it"}]
    for i in range(n):
        thread.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "status", "arguments": '{"job": 7}'}}]})
        thread.append({"role": "tool", "tool_call_id": f"c{i}", "content": "pending"})
    return thread


def openai_healthy() -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello."}]


def swe_run(commands: list[tuple[str, str]], *, xml: bool = False) -> list[dict[str, Any]]:
    """A SWE-agent text-action history: each (command, output) an action turn and its
    observation, the command in a fenced block (or a ``<function=bash>`` call)."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "SETTING: ...", "agent": "primary",
         "message_type": "system_prompt"},
        {"role": "user", "content": "ISSUE: ...", "agent": "primary",
         "message_type": "observation"}]
    for command, output in commands:
        written = (f"<function=bash>\n<parameter=command>{command}</parameter>\n</function>"
                   if xml else f"```\n{command}\n```")
        history.append({"role": "assistant", "content": f"Run it.\n{written}",
                        "thought": "Run it.\n", "action": f"{command}\n", "agent": "primary",
                        "message_type": "action"})
        history.append({"role": "user", "content": f"{output}\n(Open file: n/a)\nbash-$",
                        "agent": "primary", "message_type": "observation"})
    return history


# ------------------------------------------------------------------------------- detection


@pytest.mark.parametrize(("messages", "expected"), [
    ([{"type": "user", "text": "hi"}, {"type": "bot", "text": "yo"}], "native"),
    ([{"role": "user", "content": "hi"}], "openai"),
    (openai_loop(), "openai"),
    ([{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ls",
                                         "input": {}}]}], "anthropic"),
    ([{"type": "message", "role": "user", "content": "hi"},
      {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"}], "responses"),
    ([{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "c",
                                          "output": "x"}], "responses"),
    ([{"type": "user", "text": "hi"}, {"role": "user", "content": "hi"}], None),
    ([{"text": "hi"}], None),
    ([{"role": "tool", "tool_call_id": "c", "content": "x"},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}], None),
    ([], None),
    (["hi"], None),
    (swe_run([("ls", "a.py")]), "swe-agent"),
    (swe_run([("ls", "a.py")], xml=True), "swe-agent"),
    ([{"role": "user", "content": "x"}, {"role": "assistant",
      "content": "<function=ls>\n</function>"}], "swe-agent"),
    ([{"role": "assistant", "content": "<function=ls>\n</function>"},
      {"role": "tool", "tool_call_id": "c", "content": "x"}], "openai"),
    ([{"role": "assistant", "content": "<function=ls>\n<parameter=x>"}], "openai"),
])
def test_detect_format(messages: list[Any], expected: str | None) -> None:
    """Each format is recognised from its messages; mixed or unknown shapes are not."""
    assert detect_format(messages) == expected


def test_openai_file_is_read_as_openai_without_flags(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenAI file with no --format gets --format openai's records, not 'all loops'."""
    rows = [{"id": i, "messages": openai_healthy()} for i in range(5)]
    rows.append({"id": "stuck", "messages": openai_loop()})
    path = write_jsonl(tmp_path / "openai.jsonl", rows)
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0
    assert "openai (detected" in err
    _, flagged, _ = run(["scan", str(path), "--format", "openai", "-q"], monkeypatch)
    assert out == flagged
    got = records(out)
    assert [r["verdict"] is not None for r in got] == [False] * 5 + [True]
    # --format native still forces the old reading (every message lacks "type": all alike).
    _, native, _ = run(["scan", str(path), "--format", "native", "-q"], monkeypatch)
    assert native != flagged


def test_file_in_no_format_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread whose messages fit no format stops the run and says what was expected."""
    path = write_jsonl(tmp_path / "odd.jsonl", [{"messages": [{"speaker": "a", "says": "b"}]}])
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 2 and out == b""
    assert "line 1: cannot tell the message format" in err
    assert '"role"' in err and "--format" in err


def test_detection_skips_lines_without_messages(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad and empty lines before the first real thread do not decide the format."""
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"not json\n[]\n" + json.dumps(openai_loop()).encode() + b"\n")
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and "openai (detected" in err
    got = records(out)
    assert "error" in got[0] and got[1]["verdict"] is None and got[2]["verdict"] is not None


def anthropic_loop(n: int = 4) -> list[dict[str, Any]]:
    """An Anthropic thread polling the same tool with the same answer ``n`` times."""
    thread: list[dict[str, Any]] = [{"role": "user", "content": "deploy it"}]
    for i in range(n):
        thread.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "status", "input": {"job": 7}}]})
        thread.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "pending"}]})
    return thread


def test_later_threads_decide_the_format(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty first thread and a plain chat fit any format: the Anthropic thread after
    them decides, and its tool calls are read as such (not as an OpenAI chat's text)."""
    path = write_jsonl(tmp_path / "claude.jsonl", [
        {"id": "empty", "messages": []}, {"id": "plain", "messages": openai_healthy()},
        {"id": "stuck", "messages": anthropic_loop()}])
    code, out, err = run(["scan", str(path)], monkeypatch)
    got = records(out)
    assert code == 0 and "anthropic (detected" in err
    assert [r["verdict"] is not None for r in got] == [False, False, True]
    assert got[2]["verdict"] == scan([from_anthropic(anthropic_loop())]).record(0)["verdict"]


def test_threads_in_different_formats_are_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A file mixing formats stops with the lines of each, rather than misreading some;
    --format reads them all in the one given."""
    native = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "yo"}]
    path = write_jsonl(tmp_path / "mixed.jsonl", [
        native, openai_loop(), [], anthropic_loop(), openai_healthy()])
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 2 and out == b""
    assert (f"{path}: its threads are in different formats (native at line 1; openai at "
            "lines 2, 5; anthropic at line 4); give --format") in err
    code, out, _ = run(["scan", str(path), "-q", "--format", "openai"], monkeypatch)
    assert code == 0 and len(records(out)) == 5
    # Named by --format, one line of another format is told of in the singular.
    code, out, err = run(["scan", str(path), "-q", "--format", "anthropic"], monkeypatch)
    assert ("line 1 of the first 5 looks like native, line 2 like openai; they are read as "
            "anthropic, and each is an error") in err
    one = write_jsonl(tmp_path / "one.jsonl", [native, openai_loop()])
    code, out, err = run(["scan", str(one), "-q", "--format", "native"], monkeypatch)
    assert ("--format native was given, but line 2 of the first 2 looks like openai; it is "
            "read as native, and is an error where it holds") in err
    # Many runs agreeing and one not: the few that disagree are named, the many counted.
    many = write_jsonl(tmp_path / "many.jsonl", [openai_healthy()] * 40 + [native])
    code, out, err = run(["scan", str(many)], monkeypatch)
    assert code == 2 and out == b""
    assert (f"{many}: its threads are in different formats (native at line 41; openai at "
            "lines 1, 2, 3, 4, 5 and 35 more); give --format") in err
    document = tmp_path / "mixed.json"
    document.write_text(json.dumps([{"id": 1, "messages": openai_loop()},
                                    {"id": 2, "messages": anthropic_loop()}]))
    code, _, err = run(["scan", str(document)], monkeypatch)
    assert code == 2 and "(openai at run 1; anthropic at run 2)" in err
    named = write_jsonl(tmp_path / "lines.json", [openai_loop(), anthropic_loop()])
    code, _, err = run(["scan", str(named)], monkeypatch)  # JSONL named .json: lines
    assert code == 2 and "(openai at line 1; anthropic at line 2)" in err


def test_common_format() -> None:
    """Decisive threads must agree; plain chats fit every format but native."""
    assert common_format([]) == "native"
    assert common_format([(1, "openai", False)]) == "openai"
    assert common_format([(1, "openai", False), (3, "swe-agent", True)]) == "swe-agent"
    assert common_format([(2, "native", True), (5, "native", True)]) == "native"
    with pytest.raises(FormatConflictError) as conflict:
        common_format([(1, "openai", False), (2, "native", True), (3, "openai", False)])
    assert conflict.value.formats == {"native": [2], "openai": [1, 3]}
    with pytest.raises(FormatConflictError, match="anthropic at 1; swe-agent at 2"):
        common_format([(1, "anthropic", True), (2, "swe-agent", True)])
    # Plain chats fit both chat formats: a conflict between two names neither.
    with pytest.raises(FormatConflictError) as conflict:
        common_format([(1, "openai", True), (2, "openai", False), (3, "anthropic", True),
                       (4, "openai", False)])
    assert conflict.value.formats == {"openai": [1], "anthropic": [3]}


# ------------------------------------------------------------------------------- documents


def test_json_document_of_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tau-bench-shaped .json: one record per run, id task_id/trial, 'line' its position."""
    runs = [{"task_id": t, "reward": 1.0, "trial": k, "traj": openai_loop() if t == 1
             else openai_healthy()} for t in range(3) for k in range(2)]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs, indent=2))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0
    assert [r["id"] for r in got] == [f"{t}/{k}" for t in range(3) for k in range(2)]
    assert [r["line"] for r in got] == list(range(1, 7))
    assert [r["verdict"] is not None for r in got] == [False, False, True, True, False, False]


def test_gzipped_document_larger_than_one_read(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json.gz document of several MB is read whole (the gzip reader hands out one block
    per read), not cut at the first block and misread as JSONL."""
    import gzip

    runs = [{"task_id": t, "trial": 0, "traj": openai_loop() if t % 7 == 0
             else openai_healthy()} for t in range(3_000)]
    data = json.dumps(runs, indent=2).encode()
    assert len(data) > 1 << 20  # more than one read of the gzip reader
    path = tmp_path / "runs.json.gz"
    path.write_bytes(gzip.compress(data))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and len(got) == 3_000
    assert not any("error" in r for r in got)
    assert [r["verdict"] is not None for r in got] == [t % 7 == 0 for t in range(3_000)]


def test_json_document_of_one_run_and_of_messages(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json holding one run object, or just its messages, is one thread."""
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"instance_id": "x-1", "messages": openai_loop()}, indent=1))
    bare = tmp_path / "bare.traj"
    bare.write_text(json.dumps(openai_loop(), indent=1))
    _, out, _ = run(["scan", str(one), str(bare), "-q"], monkeypatch)
    got = records(out)
    assert [r["id"] for r in got] == ["x-1", None]
    assert got[0]["verdict"] == got[1]["verdict"] is not None


def test_a_trajectory_is_named_by_its_file_unless_an_id_key_is_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SWE-agent trajectory with no id is named by its file; with --id-key only that key is
    read: absent, the id is null and the warning lists the keys the file holds (the file's
    name stood in, and the warning listed an "id" the file does not hold)."""
    path = tmp_path / "myinst.traj"
    path.write_text(json.dumps({"environment": "e", "history": openai_loop(), "info": {}}))
    _, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    assert [r["id"] for r in records(out)] == ["myinst"]
    code, out, err = run(["scan", str(path), "--id-key", "nope"], monkeypatch)
    assert code == 0 and [r["id"] for r in records(out)] == [None]
    assert '"environment", "history", "info"' in err and '"id"' not in err, err
    path.write_text(json.dumps({"run": "r7", "history": openai_loop()}))
    _, out, _ = run(["scan", str(path), "-q", "--id-key", "run"], monkeypatch)
    assert [r["id"] for r in records(out)] == ["r7"]


def test_invalid_document_is_one_error_record(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json that is not JSON gives one error record, and the next file is still read."""
    bad = tmp_path / "bad.json"
    bad.write_text('[{"traj": [}\n')
    good = write_jsonl(tmp_path / "good.jsonl", [openai_healthy()])
    code, out, _ = run(["scan", str(bad), str(good), "-q", "--format", "openai"], monkeypatch)
    got = records(out)
    assert code == 0 and len(got) == 2
    assert got[0]["error"].startswith("not valid JSON") and got[1]["verdict"] is None


@pytest.mark.parametrize(("defect", "whole_runs"),
                         [("missing comma", 0), ("cut short", 2), ("trailing data", 5)])
def test_a_broken_pretty_printed_document_is_one_error_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, defect: str, whole_runs: int) -> None:
    """A pretty-printed document with one defect is a record for each whole run before it,
    then one error record saying where the document breaks (it was an error record for each
    of its hundreds of lines); --strict names the same place. (A bracket line before JSONL
    lines is still JSONL: see test_a_pretty_printed_document_piped_in_is_read_whole.)"""
    runs = [{"id": f"r{i}", "messages": openai_healthy()} for i in range(5)]
    text = json.dumps(runs, indent=2)
    if defect == "missing comma":
        text = text.replace("},\n  {", "}\n  {", 1)
    elif defect == "cut short":
        text = text[: len(text) // 2]
    else:
        text += "\nx"
    path = tmp_path / "broken.json"
    path.write_text(text)
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    *read, broken = records(out)
    assert code == 0 and [r["id"] for r in read] == [f"r{i}" for i in range(whole_runs)]
    assert broken["line"] == whole_runs + 1 and broken["error"].startswith("not valid JSON: ")
    assert re.search(r"line \d+ column \d+", broken["error"])
    code, _, err = run(["scan", str(path), "-q", "--strict"], monkeypatch)
    assert code == 2 and broken["error"] in err


def test_a_broken_pretty_printed_run_with_empty_containers_is_one_error_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pretty-printed run (a .traj, one object) cut short whose lines include an empty
    ``{}`` or ``[]`` alone (valid JSON, but no thread) is one error record, said on stderr as
    a document not read to its end, not an error record for each of its lines."""
    run_ = {"id": "t", "messages": [{"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": [{}, []]}}]}]}
    text = json.dumps(run_, indent=2)
    assert "\n              {},\n" in text
    path = tmp_path / "cut.traj"
    path.write_text(text[:-10])
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    (broken,) = records(out)
    assert code == 0 and broken["error"].startswith("not valid JSON: ")
    assert broken["error"].endswith("; the document is not read past there")
    assert err == f"vthread scan: {path}: {broken['error']}\n" + nothing_scanned(1, "run")


@pytest.mark.parametrize("name", ["sequence.traj", "sequence.json", "-"])
def test_pretty_printed_runs_each_after_a_byte_order_mark_are_each_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``cat a.traj b.traj`` of files an editor saved with a byte-order mark: a mark before
    each run is passed over as one before the first is (the second run was an error record,
    "Expecting value", and the first took the file's name as its id)."""
    runs = [{"id": f"r{i}", "messages": openai_loop() if i % 2 else openai_healthy()}
            for i in range(3)]
    marked = b"".join(b"\xef\xbb\xbf" + json.dumps(r, indent=2).encode() + b"\n" for r in runs)
    plain = b"".join(json.dumps(r, indent=2).encode() + b"\n" for r in runs)
    results = []
    for text in (marked, plain):
        if name == "-":
            results.append(run(["scan", "-", "-q"], monkeypatch, stdin=text))
        else:
            path = tmp_path / name
            path.write_bytes(text)
            results.append(run(["scan", str(path), "-q"], monkeypatch))
    (code, out, err), (_, expected, _) = results
    assert code == 0 and err == ""
    assert records(out) == records(expected)
    assert [r["id"] for r in records(out)] == ["r0", "r1", "r2"]


def test_pretty_printed_runs_one_after_another_are_each_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretty-printed runs written one after another (as `jq '.[]'` writes an array's, or
    `cat` several .traj files) get the records of the same runs as one array; a run followed
    by junk gets its record, then one error record saying where the junk is, as json says."""
    runs = [{"id": f"r{i}", "messages": openai_loop() if i % 2 else openai_healthy()}
            for i in range(4)]
    array, sequence = tmp_path / "array.json", tmp_path / "sequence.json"
    array.write_text(json.dumps(runs, indent=2))
    sequence.write_text("".join(json.dumps(r, indent=2) + "\n" for r in runs))
    code, expected, _ = run(["scan", str(array), "-q"], monkeypatch)
    code_sequence, got, err = run(["scan", str(sequence), "-q"], monkeypatch)
    assert code == code_sequence == 0 and err == ""
    assert [dict(r, file=None) for r in records(got)] == [
        dict(r, file=None) for r in records(expected)]
    junk = tmp_path / "junk.traj"
    text = json.dumps(runs[1], indent=2) + "\n  garbage\n"
    junk.write_text(text)
    with pytest.raises(json.JSONDecodeError) as raised:
        json.JSONDecoder().raw_decode(text, text.index("garbage"))
    *read, broken = records(run(["scan", str(junk), "-q"], monkeypatch)[1])
    assert [r["id"] for r in read] == ["r1"] and read[0]["verdict"] is not None
    assert broken["error"] == (
        f"not valid JSON: {raised.value.msg}: line {raised.value.lineno} column "
        f"{raised.value.colno} of the document, after run 1; the document is not read past "
        "there")
    # Bytes that are no UTF-8 after whole values, and a cut inside a character of the first.
    junk.write_bytes(sequence.read_bytes() + b"\xff\n")
    code, out, _ = run(["scan", str(junk), "-q"], monkeypatch)
    *read, broken = records(out)
    assert code == 0 and [r["id"] for r in read] == ["r0", "r1", "r2", "r3"]
    assert broken["error"].startswith("not valid JSON: not UTF-8 (invalid start byte): line ")
    pretty = json.dumps({"id": "é", "messages": openai_healthy()}, indent=1,
                        ensure_ascii=False).encode()
    junk.write_bytes(pretty[: pretty.index("é".encode()) + 1])
    code, out, _ = run(["scan", str(junk), "-q"], monkeypatch)
    (broken,) = records(out)
    assert code == 0 and broken["error"].startswith("not valid JSON: ")


def test_a_pretty_printed_run_then_compact_ones_are_each_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pretty-printed run followed by runs written a line each (`jq -c` output appended to
    a `.traj`) gets the records of the same runs as one array, named .traj or .jsonl or read
    from standard input: the compact lines do not make the file JSONL, whose pretty-printed
    lines would each be an error record and whose looping run would be lost."""
    runs = [{"id": f"r{i}", "messages": openai_loop() if i % 2 == 0 else openai_healthy()}
            for i in range(3)]
    array = tmp_path / "array.json"
    array.write_text(json.dumps(runs, indent=2))
    expected = [dict(r, file=None) for r in records(run(["scan", str(array), "-q"],
                                                        monkeypatch)[1])]
    assert [r["id"] for r in expected] == ["r0", "r1", "r2"] and expected[0]["verdict"]
    text = json.dumps(runs[0], indent=2) + "\n" + "".join(json.dumps(r) + "\n" for r in runs[1:])
    for name in ("mixed.traj", "mixed.jsonl", "-"):
        path = tmp_path / name
        path.write_text(text)
        argv = ["scan", str(path) if name != "-" else "-", "-q"]
        code, out, _ = run(argv, monkeypatch, stdin=text.encode())
        assert code == 0 and [dict(r, file=None) for r in records(out)] == expected, name
    # Cut short in its last line (still being written): the whole values, then where it
    # breaks; a bad line before the last is no cut, and the lines are read as JSONL.
    cut = text + json.dumps(runs[1])[:40]
    path = tmp_path / "cut.jsonl"
    path.write_text(cut)
    *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert [dict(r, file=None) for r in read] == expected
    assert broken["error"].startswith("not valid JSON: ") and "after run 3" in broken["error"]
    middle = json.dumps(runs[0], indent=2) + "\nnot json\n" + json.dumps(runs[1]) + "\n"
    path.write_text(middle)
    got = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert len(got) == middle.count("\n") and got[-1]["id"] == "r1" and "error" not in got[-1]


def test_jsonl_named_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONL file named .json is read line by line, as before documents were read."""
    rows = [{"id": 1, "messages": openai_loop()}, {"id": 2, "messages": openai_healthy()}]
    named = write_jsonl(tmp_path / "runs.json", rows)
    plain = write_jsonl(tmp_path / "runs.jsonl", rows)
    _, out, _ = run(["scan", str(named), "-q"], monkeypatch)
    _, expected, _ = run(["scan", str(plain), "-q"], monkeypatch)
    assert out == expected.replace(b"runs.jsonl", b"runs.json")
    assert [r["id"] for r in records(out)] == [1, 2]


def test_messages_key_and_id_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--messages-key / --id-key read a format vthread does not know."""
    rows = [{"name": "a", "turns": openai_loop()}, {"name": "b", "turns": openai_healthy()}]
    path = write_jsonl(tmp_path / "custom.jsonl", rows)
    code, out, _ = run(["scan", str(path), "-q", "--messages-key", "turns",
                        "--id-key", "name"], monkeypatch)
    got = records(out)
    assert code == 0 and [r["id"] for r in got] == ["a", "b"]
    assert got[0]["verdict"] is not None and got[1]["verdict"] is None
    _, out, _ = run(["scan", str(path), "-q", "--format", "openai"], monkeypatch)
    assert records(out)[0]["error"] == ('not a thread: an object without "messages", "traj" '
                                        'or "history"; it holds an array "turns" of 9 '
                                        "objects: if they are its messages, give "
                                        "--messages-key turns")


def test_runs_keyed_by_id_are_named_with_the_jq_that_lists_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A document of threads (or of runs) keyed by their ids is an error record naming them
    so, with the jq program that writes them a run a line; what that program writes (made
    here as jq makes it) is scanned a run a line, every run checked. The hint was to give
    one member's key as --messages-key, which read one run of them all, the rest dropped
    with no word."""
    threads = {"t1": openai_loop(), "t2": openai_healthy(), "t3": openai_loop()}
    runs = {key: {"messages": thread} for key, thread in threads.items()}
    # A run's own members, and a trace's two, are no runs keyed by id.
    tools = [{"type": "function", "function": {"name": "f"}}]
    for single, hint in (({"tools": tools, "conversation": openai_loop(), "notes": tools},
                          'it holds an array "tools" of 1 object: if they are its messages'),
                         ({"inputs": {"messages": openai_loop()},
                           "outputs": {"messages": openai_loop()}}, "")):
        path = tmp_path / "single.json"
        path.write_text(json.dumps(single))
        error = records(run(["scan", str(path), "-q"], monkeypatch)[1])[0]["error"]
        assert "keyed by its id" not in error and hint in error, error
    for keyed, program, listed in (
            (threads, "to_entries[] | {id: .key, messages: .value}",
             [{"id": key, "messages": value} for key, value in threads.items()]),
            (runs, "to_entries[] | {id: .key} + .value",
             [{"id": key} | value for key, value in runs.items()])):
        path = tmp_path / "keyed.json"
        path.write_text(json.dumps(keyed))
        code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
        error = records(out)[0]["error"]
        assert 'its 3 members ("t1", "t2", ...) are each ' in error, error
        assert f"keyed by its id: `jq -c '{program}'` writes them a run a line" in error
        lines = write_jsonl(tmp_path / "listed.jsonl", listed)
        code, out, _ = run(["scan", str(lines), "-q"], monkeypatch)
        assert code == 0 and [(r["id"], r["verdict"] is not None) for r in records(out)] == [
            ("t1", True), ("t2", False), ("t3", True)]


def test_a_wrong_messages_key_errs_per_run_in_a_document_as_in_jsonl(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs that lack the --messages-key given are an error record each, the same in a JSON
    document as in JSONL (the document was read as one run of run-object "messages", a fatal
    "cannot tell the message format")."""
    rows = [{"id": f"r{i}", "messages": openai_healthy()} for i in range(3)]
    jsonl = write_jsonl(tmp_path / "runs.jsonl", rows)
    document = tmp_path / "runs.json"
    document.write_text(json.dumps(rows, indent=2))
    outputs = []
    for path in (jsonl, document):
        code, out, _ = run(["scan", str(path), "-q", "--messages-key", "steps"], monkeypatch)
        assert code == 0
        outputs.append([dict(r, file=None) for r in records(out)])
    assert outputs[0] == outputs[1]
    assert [r["error"] for r in outputs[1]] == [
        'not a thread: an object without "steps"; it holds an array "messages" of 3 objects: if '
        "they are its messages, give --messages-key messages"] * 3
    # Said once, with the keys the runs do have; and an --id-key none of them has.
    _, _, said = run(["scan", str(document), "-q", "--messages-key", "steps", "--id-key",
                      "name"], monkeypatch)
    assert said.splitlines() == [
        f'vthread scan: {document}: none of its first 3 runs has "{key}" ({flag}): '
        f'{outcome}; the first has "id", "messages"'
        for key, flag, outcome in (("steps", "--messages-key", "each is an error record"),
                                   ("name", "--id-key", "their ids are null"))] + [
        nothing_scanned(3, "run").rstrip("\n")]
    assert run(["scan", str(document), "-q", "--id-key", "id"], monkeypatch)[2] == ""
    # A document that is one run's messages stays one run under a key it does not use.
    document.write_text(json.dumps(openai_healthy()))
    code, out, _ = run(["scan", str(document), "-q", "--messages-key", "steps"], monkeypatch)
    assert code == 0 and len(records(out)) == 1 and "verdict" in records(out)[0]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_native_line_id_from_instance_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         jobs: str) -> None:
    """A native line with instance_id gets it as its id whichever path reads it."""
    thread = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "yo"}]
    path = write_jsonl(tmp_path / "n.jsonl", [{"instance_id": "i-9", "messages": thread},
                                              {"id": 3, "messages": thread}])
    _, out, err = run(["scan", str(path), "-j", jobs], monkeypatch)
    assert [r["id"] for r in records(out)] == ["i-9", 3]
    assert "native (detected" in err


def test_runs_of_and_run_id() -> None:
    """A document's runs and ids, shape by shape."""
    assert runs_of([]) == []
    assert runs_of({"history": []}) == [{"history": []}]
    assert runs_of([{"turns": []}], "turns") == [{"turns": []}]
    assert runs_of([{"turns": []}]) == [{"turns": []}]  # no message: a run without messages
    assert runs_of([{"role": "user"}]) == [[{"role": "user"}]]
    assert runs_of([[], [{"type": "user"}]]) == [[], [{"type": "user"}]]  # bare threads
    assert run_id({"task_id": 4}) == 4
    assert run_id({"id": 1, "instance_id": "b"}) == 1
    assert run_id({}) is None


# ------------------------------------------------------------------------ SWE-agent replies


def swe_agent_history() -> list[dict[str, Any]]:
    """A SWE-agent function-calling history: three different edits, each 'ran successfully'."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "SETTING: ...", "agent": "main",
         "message_type": "system_prompt"}]
    for i, line in enumerate([3, 17, 40]):
        arguments = json.dumps({"path": "a.py", "line": line, "text": f"fix {i}"})
        history.append({"role": "assistant", "content": f"Edit line {line}.", "agent": "main",
                        "message_type": "action", "action": f"edit {line}", "thought": "",
                        "tool_calls": [{"id": f"call_{i}", "type": "function",
                                        "function": {"name": "edit", "arguments": arguments}}]})
        history.append({"role": "tool", "content": "The command ran successfully.",
                         "agent": "main", "message_type": "observation",
                         "tool_call_ids": [f"call_{i}"]})
    return history


def test_tool_call_ids_link_replies_to_their_calls() -> None:
    """Each reply names its own call and arguments; unlinked, they would all look alike."""
    native = from_openai(swe_agent_history())
    responses = [m["meta"]["activity"]["function"] for m in native
                 if m.get("meta", {}).get("activity", {}).get("type") == "response"]
    assert [(f["name"], f["arguments"]["line"]) for f in responses] == [
        ("edit", 3), ("edit", 17), ("edit", 40)]
    assert scan([native]).record(0)["verdict"] is None
    unlinked = [{k: v for k, v in m.items() if k != "tool_call_ids"}
                for m in swe_agent_history()]
    assert scan([from_openai(unlinked)]).record(0)["verdict"] is not None


def test_tool_call_ids_with_two_calls() -> None:
    """A reply to two calls answers each of them."""
    messages = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "function": {"name": "ls", "arguments": "{}"}},
        {"id": "b", "function": {"name": "pwd", "arguments": "{}"}}]},
        {"role": "tool", "content": "ok", "tool_call_ids": ["a", "b"]}]
    native = from_openai(messages)
    assert [m["meta"]["activity"]["function"]["name"] for m in native[2:]] == ["ls", "pwd"]
    assert native[2]["meta"]["activity"]["function"]["result"] == "ok"


# ------------------------------------------------------------------------- Responses items


def responses_loop(n: int = 4) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": "deploy it"}]}]
    for i in range(n):
        items.append({"type": "reasoning", "id": f"rs_{i}", "summary": [
            {"type": "summary_text", "text": "Check the job."}]})
        items.append({"type": "function_call", "id": f"fc_{i}", "call_id": f"c{i}",
                      "name": "status", "arguments": '{"job": 7}', "status": "completed"})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "pending"})
    return items


def test_responses_items_map_like_chat() -> None:
    """Responses items give the native messages their chat-completions twin gives."""
    native = from_responses(responses_loop())
    chat = from_openai(openai_loop())
    without_reasoning = [m for m in native if m["type"] != "reasoning"]
    assert without_reasoning == chat
    assert native[1] == {"type": "reasoning", "text": "Check the job."}
    assert to_native(responses_loop(), "responses") == native


def test_responses_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONL of Responses runs is detected and judged on its calls."""
    path = write_jsonl(tmp_path / "responses.jsonl", [
        {"id": "r", "messages": responses_loop()},
        {"id": "h", "messages": [{"type": "message", "role": "user", "content": "hi"},
                                 {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": "Hello."}]}]}])
    code, out, err = run(["scan", str(path)], monkeypatch)
    got = records(out)
    assert code == 0 and "responses (detected" in err
    expected = scan([from_responses(responses_loop())]).record(0)
    assert got[0]["verdict"] == expected["verdict"] is not None
    assert got[0]["loop_start"] == expected["loop_start"]
    assert got[1]["verdict"] is None


def test_responses_errors() -> None:
    """An item without a type, or a call without a name, is refused with its index."""
    with pytest.raises(ValueError, match="item 0 has no type"):
        from_responses([{"content": "x"}])
    with pytest.raises(ValueError, match="item 1: function name must be a string"):
        from_responses([{"type": "message", "role": "user", "content": ""},
                        {"type": "function_call", "call_id": "c"}])


# ---------------------------------------------------------------------------------- usage


def test_usage_nested_in_the_recorded_response() -> None:
    """mini-swe-agent's extra.response.usage counts; a message's own usage wins."""
    messages = [
        {"role": "assistant", "content": "a", "extra": {"response": {"usage": {
            "prompt_tokens": 1662, "completion_tokens": 106}}}},
        {"role": "assistant", "content": "b", "usage": {"completion_tokens": 5},
         "extra": {"response": {"usage": {"completion_tokens": 99}}}},
        {"role": "assistant", "content": "c", "response": {"usage": {"output_tokens": 7}}},
        {"role": "assistant", "content": "d", "extra": {"usage": {"completion_tokens": 8}}},
        {"role": "user", "content": "e", "extra": {"response": "not an object"}},
    ]
    assert [m.get("usage") for m in from_openai(messages)] == [
        {"tokens": 106}, {"tokens": 5}, {"tokens": 7}, {"tokens": 8}, None]


# ------------------------------------------------------------------------------- real runs


@needs_realdata
def test_real_tau_bench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tau-bench's .json: 200 runs, ids task_id/trial, the verdicts of its traj lists."""
    runs = json.loads(TAU.read_text())
    code, out, err = run(["scan", str(TAU)], monkeypatch)
    got = records(out)
    assert code == 0 and "openai (detected" in err
    assert len(got) == len(runs) == 200 and not any("error" in r for r in got)
    assert [r["id"] for r in got] == [f"{r['task_id']}/{r['trial']}" for r in runs]
    assert [r["messages"] for r in got] == [len(r["traj"]) for r in runs]  # the file's own
    jsonl = write_jsonl(tmp_path / "tau.jsonl", [r["traj"] for r in runs])
    _, flat, _ = run(["scan", str(jsonl), "-q", "--format", "openai"], monkeypatch)
    assert [r["verdict"] for r in records(flat)] == [r["verdict"] for r in got]


@needs_realdata
def test_real_swe_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """SWE-agent's .traj files: one record each, every function-calling reply linked, every
    text action a request answered by the observation after it."""
    files = sorted(SWE.glob("*.traj"))
    assert len(files) == 15
    code, out, err = run(["scan", *map(str, files)], monkeypatch)
    got = records(out)
    assert code == 0 and len(got) == 15 and not any("error" in r for r in got)
    assert "swe-agent (detected; 15 files" in err
    # No id in the file: SWE-agent names a trajectory by its instance, and so does its record.
    assert [r["id"] for r in got] == [path.name.removesuffix(".traj") for path in files]
    linked = text_actions = 0
    for path, record in zip(files, got, strict=True):
        history = json.loads(path.read_text())["history"]
        native = from_swe_agent(history)
        assert record["messages"] == len(history)  # the file's own messages
        for message in native:
            function = message.get("meta", {}).get("activity", {}).get("function")
            if function is not None and "result" in function:
                assert function["name"] and "arguments" in function
                linked += 1
        requests = iter(m for m in native if m["type"] == "activity")
        for turn, reply in itertools.pairwise(history):
            if turn["role"] == "assistant" and "tool_calls" not in turn:
                request, response = next(requests), next(requests)
                command = {"name": "bash", "arguments": {"command": turn["action"]}}
                assert request["meta"]["activity"] == {"type": "request", "function": command}
                assert response["meta"]["activity"] == {
                    "type": "response", "function": {**command, "result": reply["content"]}}
                text_actions += 1
    assert linked > text_actions == 124  # 137 commands, 13 of them last (submit) unanswered
    # Repetition inside observations (decompiler dumps, file views, test logs) flags no run;
    # eps.traj submits the same wrong flag four times and is told "Wrong flag!" each time.
    flagged = {Path(r["file"]).name: r for r in got if r["verdict"] is not None}
    assert list(flagged) == ["eps.traj"]
    assert flagged["eps.traj"]["verdict"] == "repeated_result_run"
    _, chat, _ = run(["scan", *map(str, files), "-q", "--format", "openai"], monkeypatch)
    assert not any(r["verdict"] for r in records(chat))  # as a chat, the loop went unseen


@needs_realdata
def test_real_mini_swe_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """mini-swe-agent's .jsonl.gz: 500 runs by instance_id, their completion tokens counted."""
    with gzip.open(MINI, "rt") as lines:
        runs = [json.loads(line) for line in lines]
    completion = sum(m["extra"]["response"]["usage"]["completion_tokens"]
                     for r in runs for m in r["messages"]
                     if "usage" in m.get("extra", {}).get("response", {}))
    code, out, err = run(["scan", str(MINI)], monkeypatch)
    got = records(out)
    assert code == 0 and "mini-swe-agent (detected" in err
    assert [r["id"] for r in got] == [r["instance_id"] for r in runs]
    assert [r["messages"] for r in got] == [len(r["messages"]) for r in runs]  # the file's
    assert all(0 <= r["loop_start"] < r["messages"] for r in got if r["verdict"])
    assert completion > 0 and f"of {completion:,}" in err
    # Read as a chat, repetition inside the environment's output (test logs, tree dumps)
    # looks like a text run; read as commands and their results, it is not.
    assert not any(r["verdict"] == "repeated_message_text_run" for r in got)
    _, chat, _ = run(["scan", str(MINI), "--format", "openai", "-q"], monkeypatch)
    assert any(r["verdict"] == "repeated_message_text_run" for r in records(chat))


def mini_run(commands: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """A mini-swe-agent run: each (command, output) one assistant turn and its reply."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>Fix it.</pr_description>"}]
    for command, output in commands:
        messages.append({"role": "assistant",
                         "content": f"THOUGHT: run it.\n\n```bash\n{command}\n```",
                         "extra": {"response": {"usage": {"completion_tokens": 12}}}})
        messages.append({"role": "user",
                         "content": f"<returncode>0</returncode>\n<output>\n{output}</output>"})
    return messages


def test_mini_swe_agent_commands_are_tool_calls() -> None:
    """One bash block is a request, the next user message its response; else plain text."""
    messages = mini_run([("ls", "a.py")])
    messages.append({"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"})
    messages.append({"role": "user", "content": "Please always provide EXACTLY ONE action."})
    native = from_mini_swe_agent(messages)
    assert [m["type"] for m in native] == [
        "system", "user", "bot", "activity", "activity", "bot", "user"]
    assert native[2]["usage"] == {"tokens": 12}
    assert native[3]["meta"]["activity"] == {
        "type": "request", "function": {"name": "bash", "arguments": {"command": "ls"}}}
    assert native[4]["meta"]["activity"]["function"]["result"].endswith("a.py</output>")
    assert native[6]["text"] == "Please always provide EXACTLY ONE action."


def test_mini_swe_agent_loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated test output after different commands is progress; the same command answered
    alike again and again is a loop."""
    log = "FAILED test_a\n" * 50
    healthy = mini_run([(f"sed -i 's/x/{i}/' a.py && pytest", log) for i in range(6)])
    stuck = mini_run([("pytest", log)] * 6)
    path = write_jsonl(tmp_path / "mini.jsonl", [
        {"instance_id": "ok", "trajectory_format": "mini-swe-agent-1", "messages": healthy},
        {"instance_id": "stuck", "trajectory_format": "mini-swe-agent-1", "messages": stuck}])
    code, out, err = run(["scan", str(path)], monkeypatch)
    got = records(out)
    assert code == 0 and "mini-swe-agent (detected" in err
    assert got[0]["verdict"] is None and got[1]["verdict"] is not None


@pytest.mark.parametrize("core", [True, False])
@pytest.mark.parametrize("where", [70, 3, 0])
def test_a_run_declaring_mini_swe_agent_is_read_so_in_a_file_found_in_another_format(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, core: bool, where: int) -> None:
    """A mini-swe-agent run declares itself (``trajectory_format``): past the lines a file's
    format is detected from, in a file of OpenAI runs, it was read as an OpenAI chat, its
    bash blocks text, and its stuck command went unseen; among those lines, the file was
    refused as of two formats. A detected format yields to the run's declaration wherever
    it lies (in the core and the Python way alike, as ``scan(format="auto")``); a format
    given is read as given."""
    messages = mini_run([])
    for attempt in range(6):  # a new thought each time, the same command and answer
        messages += [{"role": "assistant",
                      "content": f"THOUGHT: try {attempt}\n\n```bash\npytest\n```"},
                     {"role": "user", "content": "<returncode>1</returncode>\n<output>\n"
                                                 "FAILED test_a\n</output>"}]
    stuck = {"instance_id": "stuck", "trajectory_format": "mini-swe-agent-1",
             "messages": messages}
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    runs: list[dict[str, Any]] = [
        {"id": f"o{index}", "messages": [
            {"role": "user", "content": f"task {index}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py"}]}
        for index in range(70)]
    runs.insert(where, stuck)
    path = write_jsonl(tmp_path / "mixed.jsonl", runs)
    alone = records(run(["scan", str(write_jsonl(tmp_path / "alone.jsonl", [stuck]))],
                        monkeypatch)[1])[0]
    assert alone["verdict"] == "repeated_result_run"
    if not core:
        monkeypatch.setattr(cli, "_core_may_read", lambda task: False)
    code, out, err = run(["scan", str(path)], monkeypatch)
    got = records(out)
    assert code == 0 and "openai (detected" in err and len(got) == 71
    assert {**got[where], "file": alone["file"], "line": 1} == alone
    assert all(record["verdict"] is None for record in got[:where] + got[where + 1:])
    code, out, _ = run(["scan", str(path), "--format", "openai"], monkeypatch)
    assert code == 0 and records(out)[where]["verdict"] is None  # read as given
    # The Python API alike: a detected format yields, a given one does not.
    assert scan(runs, format="auto").names[where] == "repeated_result_run"
    assert scan(runs, format="openai").names[where] is None
    # Beside native runs, which are read as they are, it still disagrees.
    native = [{"id": "n", "messages": [{"type": "user", "text": "a"}]}, stuck]
    with pytest.raises(ValueError, match="the threads are in different formats"):
        scan(native, format="auto")
    # Past first runs that are all plain chats, it neither settles the file's format nor
    # is warned of as misread in the format an OpenAI run settles (the warning said "read
    # as openai" of a run read as mini-swe-agent).
    plain = [{"id": f"p{index}", "messages": [{"role": "user", "content": "hi"},
                                              {"role": "assistant", "content": "hello"}]}
             for index in range(70)]
    for order in ([*plain, runs[-1 if where == 0 else 0], stuck],
                  [*plain, stuck, runs[-1 if where == 0 else 0]]):
        path = write_jsonl(tmp_path / "plain_first.jsonl", order)
        code, out, err = run(["scan", str(path)], monkeypatch)
        got = records(out)
        at = order.index(stuck)
        assert code == 0 and "openai (detected" in err and "looks like" not in err
        assert {**got[at], "file": alone["file"], "line": 1} == alone
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert scan(order, format="auto").names[at] == "repeated_result_run"


def test_swe_agent_actions_are_tool_calls() -> None:
    """An action turn is its text and a request; the observation after it the response."""
    native = from_swe_agent(swe_run([("ls", "a.py")]))
    assert [m["type"] for m in native] == ["system", "user", "bot", "activity", "activity"]
    assert native[2]["text"] == "Run it.\n```\nls\n```"
    assert native[3]["meta"]["activity"] == {
        "type": "request", "function": {"name": "bash", "arguments": {"command": "ls\n"}}}
    assert native[4]["meta"]["activity"]["function"] == {
        "name": "bash", "arguments": {"command": "ls\n"},
        "result": "a.py\n(Open file: n/a)\nbash-$"}
    # A <function=...> call wins over the action string: its name and parameters are the call.
    xml = from_swe_agent(swe_run([("ls -a", "a.py")], xml=True))
    assert xml[4]["meta"]["activity"]["function"] == {
        "name": "bash", "arguments": {"command": "ls -a"},
        "result": "a.py\n(Open file: n/a)\nbash-$"}
    # A function-calling turn keeps its tool_calls (the action is not a second call).
    assert from_swe_agent(swe_agent_history()) == from_openai(swe_agent_history())


@pytest.mark.parametrize(("text", "calls"), [
    ("<function=bash>\n<parameter=command>ls</parameter>\n</function>",
     [("bash", {"command": "ls"})]),
    ("Edit it.\n<function=str_replace_editor>\n<parameter=command>str_replace</parameter>\n"
     "<parameter=path>/a.py</parameter>\n<parameter=old_str>\n  x = 1\n</parameter>\n"
     "<parameter=new_str>  x = 2</parameter>\n</function>\nDone.",
     [("str_replace_editor", {"command": "str_replace", "path": "/a.py", "old_str": "x = 1",
                              "new_str": "x = 2"})]),
    ("<function=finish>\n</function>", [("finish", {})]),
    ("<function=a>\n<parameter=x>1</parameter>\n</function>\n"
     "<function=b>\n<parameter=y>2</parameter>\n</function>", [("a", {"x": "1"}),
                                                                ("b", {"y": "2"})]),
    # malformed: each is text, never an exception
    ("<function=bash>\n<parameter=command>ls</parameter>\n", []),
    ("<function=bash>\n<parameter=command>ls\n</function>", []),
    ("<function=bash>\nplease <parameter=command>ls</parameter>\n</function>", []),
    ("<function=bash>\n<parameter=x>1</parameter><parameter=x>2</parameter></function>", []),
    ("<function=>\n<parameter=x>1</parameter>\n</function>", []),
    ("<function=a>\n<parameter=x>1</parameter>\n<function=b>\n<parameter=y>2</parameter>\n"
     "</function>", [("b", {"y": "2"})]),
    ("<function=bash" * 1000, []),
    ("</function><parameter=x>1</parameter>", []),
])
def test_function_blocks(text: str, calls: list[tuple[str, Any]]) -> None:
    """<function=NAME> calls with their <parameter=KEY> arguments; malformed ones are text."""
    messages = [{"role": "assistant", "content": text}, {"role": "user", "content": "out"}]
    native = from_swe_agent(messages)
    requests = [m["meta"]["activity"]["function"] for m in native
                if m.get("meta", {}).get("activity", {}).get("type") == "request"]
    responses = [m["meta"]["activity"]["function"] for m in native
                 if m.get("meta", {}).get("activity", {}).get("type") == "response"]
    assert [(f["name"], f["arguments"]) for f in requests] == calls
    assert responses == [{**f, "result": "out"} for f in requests]
    assert native[0] == {"type": "bot", "text": text}
    if not calls:
        assert native[1] == {"type": "user", "text": "out"}


@settings(max_examples=300, deadline=None)
@given(function_call_texts())
def test_function_blocks_never_raise_and_round_trip(text: str) -> None:
    """Any text reads without an error; each call read, written back as a well-formed block,
    reads as itself."""
    native = from_swe_agent([{"role": "assistant", "content": text}])
    for message in native[1:]:
        function = message["meta"]["activity"]["function"]
        name, arguments = function["name"], function["arguments"]
        written = "".join(f"<parameter={key}>{value}</parameter>\n"
                          for key, value in arguments.items())
        again = from_swe_agent([{"role": "assistant",
                                 "content": f"<function={name}>\n{written}</function>"}])
        assert again[1]["meta"]["activity"]["function"] == function


def test_swe_agent_loops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .traj whose observations repeat a long test log after different edits is progress;
    the same command answered alike again and again is a loop, in both call styles."""
    log = "FAILED tests/test_a.py::test_x - AssertionError\n" * 60
    for xml in (False, True):
        healthy = swe_run([(f"edit {i}:{i}\nx = {i}\nend_of_edit && pytest", log)
                           for i in range(6)], xml=xml)
        stuck = swe_run([("pytest", log)] * 6, xml=xml)
        for name, history, loops in (("ok", healthy, False), ("stuck", stuck, True)):
            path = tmp_path / f"{name}-{xml}.traj"
            path.write_text(json.dumps({"environment": "swe_main", "trajectory": [],
                                        "history": history, "info": {}}, indent=2))
            code, out, err = run(["scan", str(path)], monkeypatch)
            assert code == 0 and "swe-agent (detected" in err
            assert (records(out)[0]["verdict"] is not None) is loops, (name, xml)
            if not loops:  # read as a chat, the repeated log looks like a stuck agent
                _, chat, _ = run(["scan", str(path), "-q", "--format", "openai"], monkeypatch)
                assert records(chat)[0]["verdict"] is not None


# ------------------------------------------------------------------ detection, generated


@pytest.mark.parametrize("format_", ["native", "openai", "anthropic"])
def test_detected_format_maps_as_the_true_one(format_: str) -> None:
    """On 300 generated threads, the detected format's mapping is the true format's mapping
    (a plain-text Anthropic thread may be called OpenAI: both map it alike)."""
    encode = {"native": list, "openai": to_openai, "anthropic": to_anthropic}[format_]
    for thread in generate_threads(300, seed=11):
        source = encode(thread)
        if not source:
            continue
        found = detect_format(source)
        assert found is not None
        assert to_native(source, found) == to_native(source, format_)  # type: ignore[arg-type]


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_bundled_samples_detected(format_: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled provider samples scan the same with and without --format."""
    sample = str(SAMPLES / f"{format_}.jsonl")
    _, detected, err = run(["scan", sample], monkeypatch)
    _, given, _ = run(["scan", sample, "--format", format_, "-q"], monkeypatch)
    assert detected == given
    assert f"{format_} (detected" in err


def test_formats_doc_examples() -> None:
    """docs/formats.md's examples are detected and map as the page says."""
    text = (ROOT / "docs" / "formats.md").read_text()
    blocks = [json.loads(body) for _, body
              in re.findall(r"(?ms)^(`{3,4})json\n(.*?)^\1\n", text)]
    native, tau, mini, swe, functions, anthropic, responses, langchain, inspect = blocks
    assert [detect_format(m) for m in (native, tau["traj"], mini["messages"], swe["history"],
                                       functions, anthropic, responses, langchain)] == [
        "native", "openai", "mini-swe-agent", "swe-agent", "swe-agent", "anthropic", "responses",
        "langchain"]
    unpriced = [{k: v for k, v in m.items() if k != "usage"} for m in native]
    assert from_openai(tau["traj"]) == unpriced
    assert run_id(tau) == "7/0" and run_id(mini) == "astropy__astropy-12907"
    assert from_responses(responses) == [
        unpriced[0], {"type": "reasoning", "text": "Look it up."}, *unpriced[1:]]
    mapped = to_native(anthropic, "anthropic")
    assert mapped[1] == {"type": "reasoning", "text": "Look it up.", "usage": {"tokens": 31}}
    assert mapped[2:] == unpriced[1:]
    assert from_openai(mini["messages"])[2]["usage"] == {"tokens": 106}
    command = {"name": "bash", "arguments": {"command": "open tests/missing_colon.py\n"}}
    assert [m.get("meta", {}).get("activity") for m in from_swe_agent(swe["history"])] == [
        None, None, None, {"type": "request", "function": command},
        {"type": "response", "function": {**command, "result": swe["history"][3]["content"]}}]
    call = {"name": "str_replace_editor",
            "arguments": {"command": "view", "path": "/repo/tests/test_a.py"}}
    assert [m.get("meta", {}).get("activity") for m in from_swe_agent(functions)] == [
        None, None, {"type": "request", "function": call},
        {"type": "response", "function": {**call, "result": functions[2]["content"]}}]
    status = {"name": "status", "arguments": {"job": 7}}
    assert to_native(langchain, "langchain") == [
        {"type": "user", "text": "Is job 7 done?"},
        {"type": "reasoning", "text": "Ask the job system.", "usage": {"tokens": 12}},
        {"type": "bot", "text": "Checking."},
        {"type": "activity", "text": "", "meta": {"activity": {"type": "request",
                                                               "function": status}}},
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {**status, "result": "pending"}}}}]
    assert is_inspect_log(inspect)
    ident, thread = thread_of(inspect["samples"][0])
    assert ident == "stuck/1" and thread == [
        {"type": "user", "text": "Is job 7 done?"},
        {"type": "reasoning", "text": "Ask the job system.", "usage": {"tokens": 10}},
        {"type": "bot", "text": "Checking."},
        {"type": "activity", "text": "", "meta": {"activity": {"type": "request",
                                                               "function": status}}},
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {**status, "result": "pending"}}}}]


def test_loop_is_reported_in_the_files_own_messages(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenAI run where each assistant turn (text + call) and its tool reply repeat: the
    adapter makes three messages of each pair, the record counts the file's two."""
    turn = {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}
    reply = {"role": "tool", "tool_call_id": "c", "content": "a.py"}
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Fix it."}] + [turn, reply] * 4
    path = write_jsonl(tmp_path / "run.jsonl", [{"id": "r", "messages": messages}])
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    (record,) = records(out)
    assert code == 0 and record["verdict"] == "repeated_suffix"
    assert (record["loop_start"], record["period"], record["repetitions"],
            record["loop_messages"], record["messages"]) == (2, 2, 4, 8, 10)
    assert record["excerpt"] == "bot: Checking. | ls({}) -> a.py"  # the call shown once


def test_a_screenshot_loop_reads_as_its_media_type_and_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI and Anthropic runs whose tool answers a screenshot each time: the record shows
    the image as ``[image/png, 70 bytes]``, not its base64, --anywhere too."""
    url = f"data:image/png;base64,{PNG}"
    openai: list[dict[str, Any]] = [{"role": "user", "content": "Look."}]
    anthropic: list[dict[str, Any]] = [{"role": "user", "content": "Look."}]
    for i in range(3):
        openai += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "shot", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}",
             "content": [{"type": "image_url", "image_url": {"url": url}}]}]
        anthropic += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "shot",
                                               "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                          "content": [{"type": "image", "source": {
                                              "type": "base64", "media_type": "image/png",
                                              "data": PNG}}]}]}]
    for format_, messages in (("openai", openai), ("anthropic", anthropic)):
        path = write_jsonl(tmp_path / f"{format_}.jsonl", [{"messages": messages}])
        code, out, _ = run(["scan", str(path), "--format", format_, "--anywhere", "-q"],
                           monkeypatch)
        (record,) = records(out)
        assert code == 0 and record["verdict"] == "repeated_suffix"
        assert record["excerpt"] == record["loops"][0]["excerpt"] == (
            "shot({}) -> [image/png, 70 bytes]")


def _document_both_ways(path: Path, monkeypatch: pytest.MonkeyPatch, *options: str,
                        read_bytes: int | None = None) -> tuple[Any, Any]:
    """``vthread scan`` of a JSON document, runs read from their bytes where the core finds
    the document an array of runs (the file read ``read_bytes`` at a time when given), and
    Python's reading of the whole document; with whether the core found it one."""
    from vthread import cli

    if read_bytes is not None:
        monkeypatch.setattr(cli, "READ_BYTES", read_bytes)
    seen: list[bool] = []
    real = cli._DocumentRuns.start

    def spy(document: Any) -> bool:
        found = real(document)
        seen.append(found)
        return found

    monkeypatch.setattr(cli._DocumentRuns, "start", spy)
    by_spans = run(["scan", str(path), *options], monkeypatch)
    monkeypatch.setattr(cli._DocumentRuns, "start", lambda document: False)
    whole = run(["scan", str(path), *options], monkeypatch)
    monkeypatch.setattr(cli._DocumentRuns, "start", real)
    return (by_spans, seen), whole


_DOCUMENT_RUNS = [
    {"task_id": 1, "trial": 0, "traj": [{"role": "user", "content": "héllo 🎉"}] * 4},
    {"id": "r\u2028", "messages": [{"type": "bot", "text": "again"}] * 5},
    {"instance_id": "x", "history": [{"type": "bot", "text": 1.0e2}] * 3},
    {"id": 7, "messages": "not a list"},
    {"id": None, "messages": [{"type": "bot", "text": "\\u00e9", "usage": {"tokens": 3}}] * 6},
    {"id": "nan", "messages": [{"type": "bot", "text": float("nan")}] * 2},  # only json reads
]
_NO_RUNS = [["not", "a", "run"], {"id": "null", "messages": None}, {"id": "no key"},
            {"type": "bot", "text": "a message"}, 7, None, "a run's name", True]
_TIMING = re.compile(r" in [0-9.]+ s \([0-9,]+ [a-z]+s/s\)")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*_DOCUMENT_RUNS, *_NO_RUNS]), min_size=1, max_size=8),
       st.sampled_from([None, 1, 2]), st.booleans(),
       st.sampled_from(["", "NaN", "1E400", '"\\ud800"', '{"a": 1, "a": 2}']),
       st.sampled_from([[], ["--messages-key", "messages"]]), st.integers(1, 400))
def test_runs_read_from_their_bytes_equal_the_whole_document(
        runs: list[Any], indent: int | None, ascii_only: bool, oddity: str,
        options: list[str], read_bytes: int) -> None:
    """An array of runs (pretty-printed or not, non-ASCII kept or escaped, a run that is no
    run, values only Python's json reads, under a given key or not) writes, byte for byte,
    what Python's reading of the whole document writes; the core splits it exactly when its
    first element opens runs."""
    import tempfile

    from vthread.documents import opens_runs

    text = json.dumps(runs, indent=indent, ensure_ascii=ascii_only)
    if oddity:
        text = text[:-1] + f", {{\"id\": \"odd\", \"messages\": [{{\"text\": {oddity}}}]}}]"
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        path = Path(scratch) / "runs.json"
        path.write_text(text, encoding="utf-8")
        (by_spans, seen), whole = _document_both_ways(path, patch, "--format", "native",
                                                      *options, read_bytes=read_bytes)
    assert by_spans[:2] == whole[:2]
    assert _TIMING.sub("", by_spans[2]) == _TIMING.sub("", whole[2])
    assert seen == [opens_runs(runs[0], options[1] if options else None)]


def _element_ends(text: str) -> list[int]:
    """Where each element of the JSON array ``text`` ends, in bytes (Python's decoder)."""
    decoder = json.JSONDecoder()
    ends, at = [], text.index("[") + 1
    while True:
        at = len(text) - len(text[at:].lstrip(" \n,"))
        if text[at] == "]":
            return ends
        _, at = decoder.raw_decode(text, at)
        ends.append(len(text[:at].encode()))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(_DOCUMENT_RUNS), min_size=1, max_size=6),
       st.sampled_from([None, 1]), st.booleans(), st.floats(0, 1, exclude_max=True),
       st.integers(1, 400))
def test_a_document_cut_short_keeps_its_whole_runs(
        runs: list[Any], indent: int | None, ascii_only: bool, where: float,
        read_bytes: int) -> None:
    """A document of runs cut anywhere (a download or a writer that stopped): a record for
    each run whose text is whole, the same as those runs' own document writes, then one error
    record saying where the document breaks; a document cut in its first run is one error."""
    import tempfile

    data = json.dumps(runs, indent=indent, ensure_ascii=ascii_only).encode()
    cut = data[:max(1, int(where * (len(data) - 1)))]  # always short of the closing bracket
    whole_runs = sum(end <= len(cut) for end in _element_ends(data.decode()))
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        path, kept = Path(scratch) / "runs.json", Path(scratch) / "kept.json"
        path.write_bytes(cut)
        kept.write_bytes(json.dumps(runs[:whole_runs], indent=indent,
                                    ensure_ascii=ascii_only).encode())
        # One format for all (the runs drawn are in two): records, not a fatal error.
        from vthread import cli

        patch.setattr(cli, "READ_BYTES", read_bytes)  # the document split a block at a time
        code, out, _ = run(["scan", str(path), "-q", "--format", "openai"], patch)
        _, expected, _ = run(["scan", str(kept), "-q", "--format", "openai"], patch)
    *read, broken = records(out)
    assert code == 0
    assert [dict(r, file=None) for r in read] == [dict(r, file=None) for r in records(expected)]
    assert broken["line"] == whole_runs + 1 and broken["id"] is None
    assert broken["error"].startswith("not valid JSON: ")
    if whole_runs:
        where = (f"after run {whole_runs}" if "ends before its closing bracket" in
                 broken["error"] else f"in run {whole_runs + 1}")
        # (cut inside a run's value, it says so; inside a literal, json stops before)
        assert re.search(f"of the document, {where}{CUT_SHORT}; ", broken["error"])


@pytest.mark.parametrize(("shape", "where"), [("array", 0), ("array", 1), ("object", 0),
                                            ("object", 1)])
def test_a_run_nested_too_deeply_for_json_is_one_error_record(
        shape: str, where: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of a document nested past what Python's json reads, first (a bare array of
    messages, or an object told a run by its keys alone) or in the middle: its own error
    record, as the same runs as JSONL lines give, and the runs after it are judged (the
    document was not read past it). The same run in the middle with a bracket that does not
    match is no JSON: the document breaks there, keeping the runs before."""
    good = {"id": "a", "messages": [{"type": "bot", "text": "again"}] * 4}
    levels = 50_000
    deep = ("[" * levels + "]" * levels if shape == "array"
            else '{"id": "deep", "messages": ' + "[" * levels + "]" * levels + "}")
    texts = [json.dumps(good), json.dumps(good)]
    texts.insert(where, deep)
    document = tmp_path / "runs.json"
    document.write_text("[" + ",\n".join(texts) + "]")
    lines = tmp_path / "runs.jsonl"
    lines.write_text("".join(text + "\n" for text in texts))
    by_document = records(run(["scan", str(document), "-q"], monkeypatch)[1])
    by_lines = records(run(["scan", str(lines), "-q"], monkeypatch)[1])
    assert [{**r, "file": None} for r in by_document] == [{**r, "file": None} for r in by_lines]
    assert len(by_document) == 3 and by_document[where]["error"].startswith(
        "nested too deeply to read")
    # On one line, piped or in a file not named .json: a document all the same.
    one_line = ("[" + ",".join(texts) + "]\n").encode()
    (tmp_path / "one.txt").write_bytes(one_line)
    for got in (run(["scan", "-", "-q"], monkeypatch, stdin=one_line),
                run(["scan", str(tmp_path / "one.txt"), "-q"], monkeypatch)):
        assert [{**r, "file": None} for r in records(got[1])] == [
            {**r, "file": None} for r in by_lines]
        assert "is not JSON" not in got[2]
    if where == 0:
        return  # a first element that is no JSON: the document is read whole, and breaks
    texts[where] = deep[:-1] + "}" if shape == "array" else deep[:-2] + "}}"
    document.write_text("[" + ",\n".join(texts) + "]")
    got = records(run(["scan", str(document), "-q"], monkeypatch)[1])
    assert [r["id"] for r in got[:-1]] == ["a"]
    assert got[-1]["error"].startswith("not valid JSON: nested too deeply to read, and not JSON")
    assert got[-1]["error"].endswith("in run 2; the document is not read past there")


def test_a_document_that_breaks_says_where(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a document of runs breaks, by its line and column, after the runs before; data
    after the closing bracket; a run that is no JSON in a document otherwise whole."""
    good = {"id": "a", "messages": [{"type": "bot", "text": "é"}] * 2}
    cases = {
        b'[\n' + json.dumps(good).encode() + b',\n {"id": "b", "messages": [1,]}\n]':
            "in run 2",
        json.dumps([good]).encode() + b"\n junk": "after its closing bracket",
        b'[' + json.dumps(good).encode() + b', {"id": "\xff"}]': "in run 2",
    }
    for data, where in cases.items():
        try:
            json.loads(data)
        except json.JSONDecodeError as error:  # where Python's reading of it whole breaks
            why = f"{error.msg}: line {error.lineno} column {error.colno} of the document"
        except UnicodeDecodeError:
            column = len(data[:data.index(b"\xff")].decode()) + 1
            why = f"not UTF-8 (invalid start byte): line 1 column {column} of the document"
        path = tmp_path / "runs.json"
        path.write_bytes(data)
        code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
        *read, broken = records(out)
        assert code == 0 and [r["id"] for r in read] == ["a"] and read, data
        assert where in broken["error"] and why in broken["error"], broken
        assert broken["error"].endswith("; the document is not read past there")
        assert broken["line"] == 2
    # An empty array holds no runs; one with data after it is one error record.
    for empty, count in ((b"[ ]\n", 0), (b"[] x", 1)):
        path.write_bytes(empty)
        assert len(records(run(["scan", str(path), "-q"], monkeypatch)[1])) == count
    # Cut short only of its closing bracket: every run is whole.
    path.write_bytes(json.dumps([good, good]).encode()[:-1])
    *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert [r["id"] for r in read] == ["a", "a"] and broken["line"] == 3
    assert "the document ends before its closing bracket: line 1 column" in broken["error"]
    assert broken["error"].endswith(", after run 2; the document is not read past there")


CUT_SHORT = "(, which the document ends inside: cut short\\?)?"
"""The words a document's error adds when its last run's value is cut short (a pattern)."""


def test_a_document_cut_inside_a_run_says_it_is_cut_short(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .traj or .json document cut off inside a run (copied while still being written)
    says so in its error record, as a JSONL line cut short does; one broken in its middle
    does not."""
    runs = [{"id": f"r{i}", "messages": openai_healthy()} for i in range(5)]
    text = json.dumps(runs).encode()
    path = tmp_path / "runs.json"
    for cut in (text.index(b'"r3"') + 40, text.index(b'"r3"') + 2):  # in a list, a string
        path.write_bytes(text[:cut])
        *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
        assert [r["id"] for r in read] == ["r0", "r1", "r2"] and broken["line"] == 4
        assert broken["error"].endswith(", in run 4, which the document ends inside: cut "
                                        "short?; the document is not read past there")
    path.write_bytes(text.replace(b'"r3"', b'"r3" "x"'))
    *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert broken["error"].endswith(", in run 4; the document is not read past there")


def test_a_compressed_document_cut_short_keeps_its_whole_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json.gz document whose download stopped: a record for each run that decompressed
    whole, then where the document breaks, then where the gzip stream breaks; the same
    document piped in (compact, on one line) gets the same records."""
    runs = [{"id": f"r{i}", "messages": openai_healthy()} for i in range(400)]
    compressed = gzip.compress(json.dumps(runs, indent=1).encode(), mtime=0)
    path = tmp_path / "runs.json.gz"
    path.write_bytes(compressed[: len(compressed) // 2])
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    *read, broken = records(out)
    assert code == 0 and 0 < len(read) < 400
    assert [r["id"] for r in read] == [f"r{i}" for i in range(len(read))]
    assert all(r["verdict"] is None for r in read)
    # One defect, one record: where the gzip stream breaks off, and where the document does.
    assert broken["line"] == len(read) + 1
    assert broken["error"].startswith("gzip stream broken at byte ")
    assert "; not valid JSON: " in broken["error"]
    assert re.search(f"of the document, in run {len(read) + 1}{CUT_SHORT}; ", broken["error"])
    compact = json.dumps(runs).encode()
    cut = compact[: compact.index(b'{"id": "r7"') + 30]
    (tmp_path / "cut.json").write_bytes(cut)
    _, by_name, _ = run(["scan", str(tmp_path / "cut.json"), "-q"], monkeypatch)
    _, piped, _ = run(["scan", "-", "-q"], monkeypatch, stdin=cut)
    assert [r["id"] for r in records(piped)] == [f"r{i}" for i in range(7)] + [None]
    assert piped == by_name.replace(json.dumps(str(tmp_path / "cut.json")).encode(),
                                    b'"<stdin>"')


def test_a_trajectory_with_no_id_is_named_by_its_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A .traj run with no id of its own (SWE-agent writes none) gets its file's name without
    .traj (the instance it ran on), gzipped or not, and so does a mini-swe-agent run in its
    .traj.json (mini-swe-agent names it by the instance too; it had none); its own id
    wins; the same run piped, or in a .json file otherwise named, has none."""
    import gzip

    run_ = {"environment": "swe_main", "history": [{"role": "user", "content": "fix it"}]}
    plain = tmp_path / "astropy__astropy-12907.traj"
    plain.write_text(json.dumps(run_))
    packed = tmp_path / "django__django-1.traj.gz"
    packed.write_bytes(gzip.compress(json.dumps(run_).encode()))
    own = tmp_path / "named.traj"
    own.write_text(json.dumps({**run_, "instance_id": "mine"}))
    other = tmp_path / "run.json"
    other.write_text(json.dumps(run_))
    mini = {"info": {"exit_status": "Submitted"}, "trajectory_format": "mini-swe-agent-1",
            "messages": [{"role": "user", "content": "fix it"}]}
    mini_plain = tmp_path / "sympy__sympy-2.traj.json"
    mini_plain.write_text(json.dumps(mini, indent=2))
    mini_packed = tmp_path / "sympy__sympy-3.Traj.JSON.gz"
    mini_packed.write_bytes(gzip.compress(json.dumps(mini).encode()))
    code, out, _ = run(["scan", "-q", str(plain), str(packed), str(own), str(other),
                        str(mini_plain), str(mini_packed)], monkeypatch)
    assert code == 0
    assert [r["id"] for r in records(out)] == ["astropy__astropy-12907", "django__django-1",
                                               "mine", None, "sympy__sympy-2",
                                               "sympy__sympy-3"]
    _, piped, _ = run(["scan", "-", "-q"], monkeypatch, stdin=plain.read_bytes())
    assert [r["id"] for r in records(piped)] == [None]


def test_documents_that_are_not_what_they_seem(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON document named .jsonl (or with no suffix) is read as the document it opens as,
    a record per run, and said to be; an empty or blank .json is one error record (a
    download that never started passed as a scan of nothing, even under --strict); a run
    holding a NUL byte or a byte-order mark, which json.loads of its bytes alone would read
    as UTF-16 or skip, is where the document breaks, as in the whole document; a run nested
    past what Python's json reads ends the document there (where its structure ends cannot
    be told)."""
    runs = [{"id": f"r{i}", "messages": openai_healthy()} for i in range(3)]
    named_jsonl = tmp_path / "runs.jsonl"
    named_jsonl.write_text(json.dumps(runs, indent=2))
    document = tmp_path / "runs.json"
    document.write_text(json.dumps(runs, indent=2))
    _, as_json, _ = run(["scan", str(document), "-q"], monkeypatch)
    assert [r["id"] for r in records(as_json)] == ["r0", "r1", "r2"]
    unnamed = tmp_path / "runs"
    one_line = tmp_path / "one-line.jsonl"
    unnamed.write_text(json.dumps(runs, indent=2))
    one_line.write_text(json.dumps(runs) + "\n")
    for path in (named_jsonl, unnamed, one_line):
        code, out, said = run(["scan", str(path), "-q"], monkeypatch)
        assert code == 0 and said == (f"vthread scan: {path}: read as a JSON document, a "
                                      "record per run (it opens as one, not as JSONL)\n")
        assert out == as_json.replace(json.dumps(str(document)).encode(),
                                      json.dumps(str(path)).encode())
    untyped = tmp_path / "untyped.jsonl"  # with --messages-key: threads of untyped messages
    untyped.write_text('[{"text": "hi"}, {"text": "hi"}]\n[{"text": "yo"}]\n')
    code, out, said = run(["scan", str(untyped), "-q", "--format", "native",
                           "--messages-key", "steps"], monkeypatch)
    assert code == 0 and "document" not in said
    assert [(r["line"], "error" in r) for r in records(out)] == [(1, False), (2, False)]
    members = tmp_path / "members.jsonl.gz"  # a first read ending with a gzip member
    import gzip
    members.write_bytes(gzip.compress(b"[") + gzip.compress(
        b'{"type": "user", "text": "a"}]\n[{"type": "user", "text": "b"}]\n'))
    code, out, said = run(["scan", str(members), "-q"], monkeypatch)
    assert code == 0 and "document" not in said and len(records(out)) == 2
    threads = tmp_path / "threads.jsonl"  # JSONL whose lines are arrays of messages
    threads.write_text("".join(json.dumps(r["messages"]) + "\n" for r in runs))
    code, out, said = run(["scan", str(threads), "-q"], monkeypatch)
    assert code == 0 and said == "" and [r["line"] for r in records(out)] == [1, 2, 3]
    for blank in (b"", b" \n\n"):
        document.write_bytes(blank)
        code, out, err = run(["scan", str(document), "-q"], monkeypatch)
        (record,) = records(out)
        assert code == 0 and record["error"].startswith("not valid JSON: the document is empty")
        assert record["error"] in err
        assert run(["scan", str(document), "-q", "--strict"], monkeypatch)[0] == 2
        # Read to its end: listed neither as cut short nor as holding no run (it was listed
        # as cut short, "not read to its end").
        summary = tmp_path / "summary.json"
        run(["scan", str(document), str(threads), "-q", "--summary", str(summary)],
            monkeypatch)
        written = json.loads(summary.read_text())
        assert (written["cut_short"], written["held_no_run"], written["errors"]) == ([], [], 1)
    good = json.dumps(runs[0]).encode()
    for odd in (b"1\x00", b"\xef\xbb\xbf" + good, b"[" * 3000 + b"]" * 2999 + b"}"):
        document.write_bytes(b"[" + good + b", " + odd + b", " + good + b"]")
        code, out, _ = run(["scan", str(document), "-q"], monkeypatch)
        *read, broken = records(out)
        assert code == 0 and [r["id"] for r in read] == ["r0"], odd[:8]
        assert broken["line"] == 2 and "of the document, in run 2; " in broken["error"]


def test_a_byte_order_mark_changes_nothing(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A document opening with a UTF-8 byte-order mark (as Windows tools write it; json.loads
    of bytes skips it) gets the records of the same document without it: from a file, piped
    in (pretty-printed or compact), cut short (the break where json places it, which counts
    no column for the mark), in blocks of any size; JSONL opening with one too."""
    from vthread import cli

    runs = [{"id": f"r{i}", "messages": openai_healthy()} for i in range(5)]
    monkeypatch.setattr(cli, "READ_BYTES", 7)
    for indent in (None, 2):
        plain = json.dumps(runs, indent=indent).encode()
        for data in (plain, plain[: len(plain) * 2 // 3]):
            expected = None
            for mark in (b"", b"\xef\xbb\xbf"):
                path = tmp_path / "runs.json"
                path.write_bytes(mark + data)
                code, by_name, _ = run(["scan", str(path), "-q"], monkeypatch)
                _, piped, _ = run(["scan", "-", "-q"], monkeypatch, stdin=mark + data)
                assert code == 0
                assert piped == by_name.replace(json.dumps(str(path)).encode(), b'"<stdin>"')
                if expected is None:
                    expected = by_name
                assert by_name == expected, (indent, len(data), mark)
            got = records(expected)
            assert len(got) == (5 if data == plain else len(got)) and got[0]["id"] == "r0"
    lines = b"".join(json.dumps(r).encode() + b"\n" for r in runs)
    _, with_mark, _ = run(["scan", "-", "-q"], monkeypatch, stdin=b"\xef\xbb\xbf" + lines)
    _, without, _ = run(["scan", "-", "-q"], monkeypatch, stdin=lines)
    assert with_mark == without and len(records(without)) == 5


def test_jsonl_piped_in_after_an_empty_array_is_read_line_by_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`[]` and then JSONL lines on standard input: the lines are JSONL (a record each, the
    `[]` an empty thread), known from the first read, so that a stream that never ends is
    never held whole waiting for its end."""
    from vthread import cli

    first = b'[]\n[{"type": "user", "text": "a"}]\n'

    class EndlessPipe:
        def __init__(self) -> None:
            self.reads = 0

        def read(self, size: int = -1) -> bytes:
            self.reads += 1
            assert self.reads == 1, "read past the first block to tell what the stream is"
            return first

    sniffed = cli._sniffed_document(EndlessPipe(), None)  # type: ignore[arg-type]
    assert isinstance(sniffed, cli._Replayed)
    code, out, _ = run(["scan", "-", "-q"], monkeypatch, stdin=first + first)
    assert code == 0 and [r["line"] for r in records(out)] == [1, 2, 3, 4]


@pytest.mark.parametrize("cut", ['"\n', '"a \t', '"a ', '{"k": "v \r\n'])
def test_a_document_cut_inside_a_string_breaks_where_json_says(
        cut: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A document cut inside a string whose last bytes are whitespace: that whitespace is the
    string's text, and the break is placed where json places it (a raw control character,
    or the string's opening quote), not at the string's end with it left out."""
    data = ('[{"messages": []}, ' + cut).encode()
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(data)
    path = tmp_path / "runs.json"
    path.write_bytes(data)
    *_, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert f"{raised.value.msg}: line {raised.value.lineno} column {raised.value.colno} " \
           "of the document, in run 2" in broken["error"], broken["error"]


def test_a_break_after_encoded_surrogates_is_placed_as_json_places_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Surrogates written as raw UTF-8 bytes (json reads them with surrogatepass) count one
    character each in the break's column, as in json's own error."""
    data = b'[{"messages": []},\n{"messages": [], "a": "\xed\xa0\x80\xed\xa0\x80" x}]'
    with pytest.raises(json.JSONDecodeError) as raised:
        json.loads(data.decode("utf-8", "surrogatepass"))
    path = tmp_path / "runs.json"
    path.write_bytes(data)
    *_, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert (f"line {raised.value.lineno} column {raised.value.colno} of the document, in run 2"
            in broken["error"])


def test_a_large_document_is_read_run_by_run(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A document of 2,000 workload runs: records equal to the whole document's reading,
    the core taking the runs from their bytes."""
    threads = generate_threads(2_000)
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([{"id": f"r{i}", "messages": t}
                                for i, t in enumerate(threads)]))
    (by_spans, seen), whole = _document_both_ways(path, monkeypatch, "--summary",
                                                  str(tmp_path / "summary.json"))
    assert seen == [True]
    assert by_spans[:2] == whole[:2] and len(records(by_spans[1])) == 2_000


@pytest.mark.parametrize("runs", [
    [{"messages": None}, {"messages": [{"type": "user", "text": "hi"}]}],
    [{"id": "r1"}, {"id": "r2", "messages": [{"type": "user", "text": "hi"}]}],
    [[{"type": "user", "text": "hi"}], [{"type": "bot", "text": "hi"}]],
    [[]], [[], []], [{"messages": None}],
    [5, [{"type": "user", "text": "hi"}], [{"type": "user", "text": "hi"}]],
    [None, {"messages": [{"type": "user", "text": "hi"}]}], ["a name", True, 1.5],
])
@pytest.mark.parametrize("indent", [None, 2])
def test_a_document_is_read_run_by_run_whatever_its_first_run(
        runs: list[Any], indent: int | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A list of runs whose first run holds no messages (null, no key, or a string, number,
    boolean or null in place of a run) or is a bare array of messages is still a list of
    runs: a record per run, as for the same runs as JSONL lines (it was read as one thread
    whose messages were the runs, or refused whole)."""
    document = tmp_path / "runs.json"
    document.write_text(json.dumps(runs, indent=indent))
    lines = tmp_path / "runs.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in runs))
    by_document = run(["scan", str(document), "-q", "--format", "native"], monkeypatch)
    by_lines = run(["scan", str(lines), "-q", "--format", "native"], monkeypatch)
    assert by_document[0] == by_lines[0] == 0
    assert [{**r, "file": None} for r in records(by_document[1])] == [
        {**r, "file": None} for r in records(by_lines[1])]
    assert len(records(by_document[1])) == len(runs)


def _scan_named(name: str, text: bytes, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes, str]:
    """``vthread scan -q`` of ``text`` from standard input (``name`` "-") or as a file of
    that name."""
    if name == "-":
        return run(["scan", "-", "-q"], monkeypatch, stdin=text)
    (tmp_path / name).write_bytes(text)
    return run(["scan", str(tmp_path / name), "-q"], monkeypatch)


@pytest.mark.parametrize("empty_first", [False, True])
@pytest.mark.parametrize("name", ["-", "threads.txt", "threads.jsonl"])
def test_a_one_line_array_of_bare_threads_is_a_document(
        name: str, empty_first: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``json.dumps(list_of_threads)`` on one line, piped or in a file not named .json: a
    record per thread, as the same file named .json gets (it was refused whole, "cannot
    tell the message format", since its one "thread" held arrays for messages)."""
    threads = [[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}] * 2,
               [{"role": "user", "content": "hello"}]]
    if empty_first:
        threads.insert(0, [])
    text = json.dumps(threads).encode() + b"\n"
    document = tmp_path / "threads.json"
    document.write_bytes(text)
    expected = records(run(["scan", str(document), "-q"], monkeypatch)[1])
    code, out, _ = _scan_named(name, text, tmp_path, monkeypatch)
    assert code == 0 and len(expected) == 2 + empty_first
    assert not any("error" in r for r in expected)
    assert [{**r, "file": None} for r in records(out)] == [
        {**r, "file": None} for r in expected]


@pytest.mark.parametrize("name", ["-", "threads.jsonl"])
def test_a_line_of_bare_threads_followed_by_jsonl_threads_stays_jsonl(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONL file whose first line is an array of threads and whose other lines are
    threads (the reviewer's mixed file): a record per line, the first an error, the others
    judged; read as a one-line document, the lines after it were one error record, "data
    after its closing bracket"."""
    thread = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "yo"}] * 2
    text = (json.dumps([thread, thread]) + "\n" + json.dumps(thread) + "\n"
            + json.dumps(thread) + "\n").encode()
    code, out, _ = _scan_named(name, text, tmp_path, monkeypatch)
    got = records(out)
    assert code == 0 and [r["line"] for r in got] == [1, 2, 3]
    assert "error" in got[0] and got[1]["verdict"] == got[2]["verdict"] == "repeated_suffix"


@pytest.mark.parametrize("name", ["-", "threads.jsonl"])
def test_lines_that_are_each_a_list_of_threads_are_one_document(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines that are each a list of threads' bare messages (``cat`` of such documents, one
    written with a byte-order mark) are read as a ``.json`` file of them is: a record per
    thread. As JSONL (a first line of threads whole, then more lines) no line was read: the
    format could not be told, exit 2."""
    thread = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "yo"}] * 2
    text = (json.dumps([thread, thread]) + "\n\ufeff" + json.dumps([thread[:3]]) + "\n"
            + json.dumps([thread]) + "\n").encode()
    document = tmp_path / "threads.json"
    document.write_bytes(text)
    expected = records(run(["scan", str(document), "-q"], monkeypatch)[1])
    code, out, _ = _scan_named(name, text, tmp_path, monkeypatch)
    assert code == 0 and len(expected) == 4 and not any("error" in r for r in expected)
    assert [r["verdict"] for r in expected] == ["repeated_suffix", "repeated_suffix", None,
                                                "repeated_suffix"]
    assert [{**r, "file": None} for r in records(out)] == [
        {**r, "file": None} for r in expected]


@pytest.mark.parametrize("name", ["-", "threads.jsonl"])
@pytest.mark.parametrize("cut", [-3, -2, -1, 0, 1, 2])
def test_a_list_of_threads_after_the_first_is_seen_wherever_a_read_ends(
        name: str, cut: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a list of threads follows the first line does not depend on where the first
    read of the input ends (one ending just after the next line's "[" read it as JSONL:
    exit 2, no records), and a pretty-printed next list is one (a reviewer's findings)."""
    from vthread import cli

    thread = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "yo"}] * 2
    first = json.dumps([thread, thread]).encode()
    monkeypatch.setattr(cli, "READ_BYTES", len(first) + 1 + 1 + cut)  # ends near "[" of line 2
    for later in (json.dumps([thread]), json.dumps([thread], indent=1)):
        text = first + b"\n" + later.encode() + b"\n"
        code, out, err = _scan_named(name, text, tmp_path, monkeypatch)
        got = records(out)
        assert code == 0 and len(got) == 3 and not any("error" in r for r in got), err


def test_an_object_holding_runs_or_messages_elsewhere_says_how_to_read_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An object with no messages under a known key that holds an array of runs (``{"runs":
    [...]}``) or of messages under another key: its error record says so and how to read
    them, and following the advice reads them."""
    runs = [{"id": f"r{i}", "messages": [{"type": "bot", "text": "again"}] * 4}
            for i in range(3)]
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"runs": runs}))
    (record,) = records(run(["scan", str(wrapped), "-q"], monkeypatch)[1])
    assert record["error"].endswith('; it holds an array "runs" of 3 objects that may be '
                                    "runs: `jq -c '.runs[]'` writes them a line each")
    # Runs that carry a type of their own are runs still; a key with a quote is quoted.
    typed = tmp_path / "typed.json"
    typed.write_text(json.dumps({"it's": [{"type": "run", **runs[0]}]}))
    (record,) = records(run(["scan", str(typed), "-q"], monkeypatch)[1])
    assert record["error"].endswith('; it holds an array "it\'s" of 1 object that may be a '
                                    "run: `jq -c '.[\"it'\"'\"'s\"][]'` writes them a line each")
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps({"id": "s", "the steps": runs[0]["messages"]}))
    (record,) = records(run(["scan", str(steps), "-q"], monkeypatch)[1])
    assert record["error"].endswith('; it holds an array "the steps" of 4 objects: if they '
                                    "are its messages, give --messages-key 'the steps'")
    (record,) = records(run(["scan", str(steps), "-q", "--messages-key", "the steps"],
                            monkeypatch)[1])
    assert record["verdict"] == "repeated_suffix"
    # Runs under the --messages-key given are runs, whatever else they hold.
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"data": [{"type": "run", "steps": runs[0]["messages"]}]}))
    (record,) = records(run(["scan", str(keyed), "-q", "--messages-key", "steps"],
                            monkeypatch)[1])
    assert record["error"].endswith("that may be a run: `jq -c '.data[]'` writes them a line "
                                    "each")


def test_a_thread_whose_first_message_has_no_type_stays_a_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A native message may lack its type; one with text (or content, or a role) is a message,
    not a run without messages: such a .json document is one thread, and such JSONL lines on
    standard input are threads, not a document of runs."""
    document = tmp_path / "thread.json"
    document.write_text('[{"text": "hello"}, {"type": "agent", "text": "c"}]')
    _, out, _ = run(["scan", str(document), "-q", "--format", "native"], monkeypatch)
    assert [(r["line"], r["messages"]) for r in records(out)] == [(1, 2)]
    lines = b'[{"text": "a"}]\n[{"type": "user", "text": "b"}]\n[{"type": "user", "text": "b"}]\n'
    code, out, said = run(["scan", "-", "-q", "--format", "native"], monkeypatch, stdin=lines)
    assert code == 0 and "document" not in said
    assert [(r["line"], "error" in r) for r in records(out)] == [(1, False), (2, False),
                                                                (3, False)]

@pytest.mark.parametrize("name", ["runs.jsonl", "runs.json"])
def test_an_integer_past_pythons_digit_limit_is_read_as_javascript_reads_it(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON.parse reads an integer of any length (one past the doubles compares as null does);
    json.loads refuses more than 4,300 digits, which made the line an error record. The
    line is now a thread, judged as describe_thread_cycle judges it, its id (an infinity to
    JavaScript) written as the other infinities are."""
    import decimal

    huge = "1" + "0" * 5000
    messages = [f'{{"type": "tool", "text": "", "meta": {meta}}}' for meta in (huge, "null")]
    thread = "[" + ", ".join(messages * 2) + "]"
    text = f'{{"id": {"7" * 4400}, "messages": {thread}}}'
    path = tmp_path / name
    path.write_text(text + "\n" if name.endswith("l") else "[" + text + "]")
    code, out, _ = run(["scan", str(path), "-q", "--format", "native"], monkeypatch)
    (record,) = records(out)
    assert code == 0 and "error" not in record
    expected = describe_thread_cycle(json.loads(thread, parse_int=decimal.Decimal))
    assert record["verdict"] == expected == "repeated_suffix"
    assert record["id"] == "Infinity"  # what JSON.parse reads it as, written as 1e400 is


def test_a_minified_document_cut_inside_its_first_run_is_a_document_cut_short(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-line ``.json`` document cut inside its first run (a download stopped early) is
    one error record saying where it breaks, said on stderr as not read to its end and
    listed in the summary's ``cut_short``, as a document cut after some runs is: it was read
    as JSONL, warned of as "its first line is not JSON", and not listed."""
    good = {"id": "a", "messages": [{"type": "bot", "text": "x" * 40}] * 2}
    whole = json.dumps([good, good], separators=(",", ":"))
    path, summary = tmp_path / "runs.json", tmp_path / "summary.out"
    # (the last: "[" and the first run but its closing brace)
    for cut in (20, 50, len(json.dumps(good, separators=(",", ":")))):
        path.write_text(whole[:cut])
        code, out, err = run(["scan", str(path), "-q", "--summary", str(summary)],
                             monkeypatch)
        (broken,) = records(out)
        try:
            json.loads(whole[:cut])
        except json.JSONDecodeError as error:
            why = f"{error.msg}: line 1 column {error.colno}"
        assert code == 0 and broken["line"] == 1 and broken["id"] is None
        assert broken["error"].startswith(f"not valid JSON: {why}")
        assert broken["error"].endswith("; the document is not read past there")
        assert err == (f"vthread scan: {path}: {broken['error']}\n"
                       + nothing_scanned(1, "run"))
        said = json.loads(summary.read_text())
        assert said["cut_short"] == [{"file": str(path), "why": broken["error"]}]
        assert (said["unit"], said["lines"]) == ("run", 1)  # (it said "line")
    # A one-line file that opens no JSON value is still read as lines, as before.
    path.write_text("hello")
    assert "its first line is not JSON" in run(["scan", str(path), "-q"], monkeypatch)[2]


@pytest.mark.parametrize("read_bytes", [64, 1 << 20])
def test_arrays_of_runs_one_after_another_are_read_as_one_document(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_bytes: int) -> None:
    """``cat a.json b.json`` (pretty-printed or compact), or ``jq -c`` writing an array of runs
    a line: a record for every run of every array, in order, from a file, from standard input
    and gzipped, in blocks of any size (the runs of the second array were one error record,
    "Extra data after its closing bracket"). An array after the first that holds no runs (a
    thread of messages) is still where the document breaks."""
    from vthread import cli

    monkeypatch.setattr(cli, "READ_BYTES", read_bytes)
    looping = [{"type": "user", "text": "go"}] + [{"type": "bot", "text": "same"}] * 4
    first = [{"id": "a", "messages": looping}, {"id": "b", "messages": looping[:2]}]
    second = [{"id": "c", "messages": looping[:3]}]
    alone = [json.dumps(runs, indent=2) + "\n" for runs in (first, [], second)]
    joined = {"pretty.json": "".join(alone),
              "compact.json": json.dumps(first) + json.dumps(second),
              "lines.jsonl": json.dumps(first) + "\n" + json.dumps(second) + "\n"}
    expected = []
    for runs in (first, second):
        path = tmp_path / "alone.json"
        path.write_text(json.dumps(runs))
        expected += [{**r, "file": None, "line": None}
                     for r in records(run(["scan", str(path), "-q"], monkeypatch)[1])]
    assert [r["id"] for r in expected] == ["a", "b", "c"] and expected[0]["verdict"]
    for name, text in joined.items():
        path = tmp_path / name
        path.write_text(text)
        gzipped = tmp_path / (name + ".gz")
        gzipped.write_bytes(gzip.compress(text.encode()))
        for got in (run(["scan", str(path), "-q"], monkeypatch),
                    run(["scan", "-", "-q"], monkeypatch, stdin=text.encode()),
                    run(["scan", str(gzipped), "-q"], monkeypatch)):
            code, out, _ = got
            written = records(out)
            assert code == 0 and [r["line"] for r in written] == [1, 2, 3], (name, out)
            assert [{**r, "file": None, "line": None} for r in written] == expected, name
    # An array of runs, then a thread of messages (whole, or cut short after its first
    # message): the runs, then where it breaks (the thread's messages were each an error
    # record, or a run, for a reviewer).
    for then in (json.dumps(looping), json.dumps(looping)[:-1].rsplit(",", 4)[0]):
        path = tmp_path / "then_a_thread.json"
        path.write_text(json.dumps(first) + "\n" + then)
        *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
        assert [r["id"] for r in read] == ["a", "b"], then
        assert broken["error"].endswith("line 2 column 1 of the document, after its closing "
                                        "bracket; the document is not read past there"), then
    # A later array whose first run holds a value only Python reads (NaN), or opened by a
    # byte-order mark (a file written with one): its runs are read (each was a break for a
    # tester); one cut inside its first run breaks where json says it does.
    nan_first = json.dumps(second).replace('"c"', '"c", "v": NaN', 1)
    for then, ids in ((nan_first, ["a", "b", "c"]), ("\ufeff" + json.dumps(second),
                                                   ["a", "b", "c"])):
        path = tmp_path / "then_more.json"
        path.write_text(json.dumps(first) + "\n" + then, encoding="utf-8")
        assert [r["id"] for r in records(run(["scan", str(path), "-q"], monkeypatch)[1])] == ids
    path.write_text(json.dumps(first) + "\n" + json.dumps(second)[:30])
    *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert [r["id"] for r in read] == ["a", "b"] and "in run 3" in broken["error"]


@pytest.mark.parametrize("read_bytes", [64, 1 << 20])
def test_runs_after_an_array_of_runs_are_read_as_its_runs_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_bytes: int) -> None:
    """A batch written as an array of runs, then runs appended a line at a time (or
    pretty-printed one after another): a record for every run, in order, from a file named
    either way, in UTF-8 or UTF-16, from standard input and gzipped, in blocks of any size,
    the records of the same runs a line each (the runs after the array were one error
    record, "Extra data after its closing bracket"). A message after the array is still
    where the document breaks, a run cut short breaks where json says, and ``[]`` then JSONL
    lines is JSONL."""
    from vthread import cli

    monkeypatch.setattr(cli, "READ_BYTES", read_bytes)
    looping = [{"type": "user", "text": "go"}] + [{"type": "bot", "text": "same"}] * 4
    batch = [{"id": "a", "messages": looping}, {"id": "b", "messages": looping[:2]}]
    appended = [{"id": "c", "messages": looping[:3]}, {"id": "d", "messages": looping}]
    compact = json.dumps(batch) + "\n" + "".join(json.dumps(r) + "\n" for r in appended)
    pretty = "".join(json.dumps(v, indent=2) + "\n" for v in (batch, *appended))
    # The same runs a line each: JSONL, read line by line (no document split).
    lines = tmp_path / "lines_each.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in [*batch, *appended]))
    expected = records(run(["scan", str(lines), "-q"], monkeypatch)[1])
    assert [(r["id"], r["line"], bool(r["verdict"])) for r in expected] == [
        ("a", 1, True), ("b", 2, False), ("c", 3, False), ("d", 4, True)]
    for name, text in (("lines.jsonl", compact), ("batch.json", compact),
                       ("pretty.json", pretty), ("utf16.json", compact)):
        path = tmp_path / name
        data = text.encode("utf-16" if name.startswith("utf16") else "utf-8")
        path.write_bytes(data)
        gzipped = tmp_path / (name + ".gz")
        gzipped.write_bytes(gzip.compress(data))
        for code, out, _ in (run(["scan", str(path), "-q"], monkeypatch),
                             run(["scan", "-", "-q"], monkeypatch, stdin=data),
                             run(["scan", str(gzipped), "-q"], monkeypatch)):
            assert code == 0, (name, out)
            assert [{**r, "file": None} for r in records(out)] == [
                {**r, "file": None} for r in expected], name
    # A message after the batch (a thread's, not a run): the runs, then where it breaks.
    path = tmp_path / "then_a_message.json"
    path.write_text(json.dumps(batch) + "\n" + json.dumps(appended[0]) + "\n"
                    + json.dumps(looping[0]) + "\n")
    *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert [r["id"] for r in read] == ["a", "b", "c"]
    assert broken["error"].endswith("line 3 column 1 of the document, after its closing "
                                    "bracket; the document is not read past there")
    # A run appended cut short: the runs before it, then where json finds it breaks.
    path.write_text(json.dumps(batch) + "\n" + json.dumps(appended[0])[:30])
    *read, broken = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    assert [r["id"] for r in read] == ["a", "b"] and "in run 3" in broken["error"], broken
    # An empty array, then runs a line: JSONL, whose first line is a thread of no messages.
    text = "[]\n" + "".join(json.dumps(r) + "\n" for r in appended)
    got = records(run(["scan", "-", "-q"], monkeypatch, stdin=text.encode())[1])
    assert [(r["id"], r["line"]) for r in got] == [(None, 1), ("c", 2), ("d", 3)]


def test_a_trajectory_file_that_breaks_keeps_its_name_as_its_id(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A trajectory file named by its instance that is empty (the agent crashed before it
    wrote) or cut short (still being written) is one error record with the file's name as
    its id, as the run read whole would have had (its id was null, so the run could not be
    joined to its instance); any other file's break, a run read whole before the break, and
    --id-key keep a null id."""
    import gzip

    run_ = json.dumps({"environment": "swe_main",
                       "history": [{"role": "user", "content": "fix it"}]}, indent=2)
    (tmp_path / "astropy__astropy-1.traj").write_text("")
    (tmp_path / "django__django-2.traj.json").write_text(run_[:40])
    (tmp_path / "sympy__sympy-3.traj.gz").write_bytes(gzip.compress(run_.encode())[:-12])
    (tmp_path / "runs.json").write_text(run_[:40])
    (tmp_path / "whole-then-junk.traj").write_text(run_ + "\n]")
    code, out, _ = run(["scan", "-q", str(tmp_path)], monkeypatch)
    got = {(Path(r["file"]).name, r["line"]): r["id"] for r in records(out)}
    assert code == 0 and got == {
        ("astropy__astropy-1.traj", 1): "astropy__astropy-1",
        ("django__django-2.traj.json", 1): "django__django-2",
        ("sympy__sympy-3.traj.gz", 1): "sympy__sympy-3",
        ("runs.json", 1): None,
        ("whole-then-junk.traj", 1): "whole-then-junk", ("whole-then-junk.traj", 2): None}
    assert all("error" in r for r in records(out) if r["line"] == 1 and r["id"] != (
        "whole-then-junk"))
    _, out, _ = run(["scan", "-q", "--id-key", "name", str(tmp_path / "astropy__astropy-1.traj")],
                    monkeypatch)
    assert [r["id"] for r in records(out)] == [None]


def test_swe_bench_predictions_beside_the_runs_are_passed_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory of runs with the predictions their harness writes beside them
    (mini-swe-agent's preds.json, an object of instance id -> prediction; SWE-agent's
    all_preds.jsonl, a prediction a line) is scanned without them, each said as passed
    over: every prediction was an error record (--fail-on-error failed every night), one
    with a run's id beside that run's record. Named as an input, such a file is read as
    asked; a file holding runs as well is no predictions file."""
    prediction = {"model_name_or_path": "m", "instance_id": "eps", "model_patch": "diff"}
    (tmp_path / "preds.json").write_text(json.dumps({"eps": prediction}))
    (tmp_path / "all_preds.jsonl").write_text(json.dumps(prediction) + "\n")
    (tmp_path / "eps.traj").write_text(json.dumps(
        {"history": [{"role": "user", "content": "fix it"}]}))
    mixed = [prediction, {"instance_id": "x", "model_patch": "", "messages": []}]
    (tmp_path / "mixed.jsonl").write_text("".join(json.dumps(v) + "\n" for v in mixed))
    code, out, err = run(["scan", "-q", "--fail-on-error", str(tmp_path)], monkeypatch)
    assert [(Path(r["file"]).name, r["id"]) for r in records(out)] == [
        ("eps.traj", "eps"), ("mixed.jsonl", "eps"), ("mixed.jsonl", "x")]
    for name in ("all_preds.jsonl", "preds.json"):
        assert (f"vthread scan: {tmp_path / name}: passed over: it holds SWE-bench "
                "predictions (instance_id and model_patch), not runs") in err
    assert code == 65  # (the mixed file's prediction line is an error record)
    code, out, _ = run(["scan", "-q", str(tmp_path / "preds.json")], monkeypatch)
    assert code == 0 and len(records(out)) == 1 and "error" in records(out)[0]
