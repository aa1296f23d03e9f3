"""Inspect AI logs: a real evaluation with Inspect's mock model, scanned as .eval and .json;
the mapping of a sample's messages; the error when inspect_ai is missing."""

from __future__ import annotations

import html
import importlib.util
import io
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import records, run
from vthread import scan
from vthread.adapters import from_openai
from vthread.inspect_log import chat_of, is_inspect_log, read_inspect_log, thread_of

needs_inspect = pytest.mark.skipif(
    importlib.util.find_spec("inspect_ai") is None,
    reason="inspect_ai is not installed (pip install 'vthread[inspect]')")

TASK = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def status():
    async def execute(job: int) -> str:
        """Report a job's status.

        Args:
            job: the job number.
        """
        return "pending"
    return execute


def priced(output, tokens):
    # Usage given, so the mock model does not count tokens (with a tokenizer it downloads).
    output.usage = ModelUsage(input_tokens=100, output_tokens=tokens, total_tokens=100 + tokens)
    return output


def outputs():
    calls = [priced(ModelOutput.for_tool_call("mockllm/model", "status", {"job": 7},
                                              tool_call_id=f"c{i}"), 10 + i) for i in range(5)]
    return [*calls, priced(ModelOutput.from_content("mockllm/model", "Still pending."), 4),
            priced(ModelOutput.from_content("mockllm/model", "Hello!"), 2)]


@task
def polling():
    # One model for both samples, run one after the other: "stuck" polls five times, then
    # "ok" answers at once.
    return Task(dataset=[Sample(id="stuck", input="Is job 7 done?"),
                         Sample(id="ok", input="Hello")],
                solver=[use_tools(status()), generate()],
                model=get_model("mockllm/model", custom_outputs=outputs()))
'''

EVALUATE = '''
import sys
from inspect_ai import eval
for log_format in ("eval", "json"):
    [log] = eval("task.py", log_dir=sys.argv[1], log_format=log_format, display="none",
                 max_samples=1)
    assert log.status == "success", log.error
'''


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A real Inspect evaluation of a two-sample task with the mock model, logged in both
    formats (one process: Inspect's import is most of the few seconds it takes)."""
    folder = tmp_path_factory.mktemp("inspect")
    (folder / "task.py").write_text(TASK)
    logs = folder / "logs"
    subprocess.run([sys.executable, "-c", textwrap.dedent(EVALUATE), str(logs)], cwd=folder,
                   check=True, timeout=120, capture_output=True)
    return {path.suffix: path for path in logs.iterdir()}


@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_inspect_log_scanned(inspect_logs: dict[str, Path], suffix: str,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Each sample is a thread "<id>/<epoch>"; calls and results are linked; the sample that
    polls the same tool five times loops, with the tokens of its model calls."""
    path = inspect_logs[suffix]
    code, out, err = run(["scan", str(path)], monkeypatch)
    got = {r["id"]: r for r in records(out)}
    assert code == 0 and "inspect (detected" in err
    assert sorted(got) == ["ok/1", "stuck/1"]
    assert got["ok/1"]["verdict"] is None and got["ok/1"]["messages"] == 2
    stuck = got["stuck/1"]
    assert stuck["verdict"] == "repeated_result_run" and stuck["repetitions"] == 5
    assert "of 66" in err  # 10 + 11 + 12 + 13 + 14 + 4 + 2 output tokens, call by call

    from vthread.inspect_log import read_inspect_log

    threads = dict(read_inspect_log(path))
    from vthread.inspect_log import read_inspect_chats

    chats = dict(read_inspect_chats(path))  # one chat message per message of the log
    assert [got[i]["messages"] for i in sorted(got)] == [len(chats[i]) for i in sorted(got)]
    assert len(chats["stuck/1"]) < len(threads["stuck/1"])  # text and a call split in two
    activities = [m["meta"]["activity"] for m in threads["stuck/1"] if "meta" in m]
    assert activities == [
        {"type": kind, "function": {"name": "status", "arguments": {"job": 7},
                                    **({"result": "pending"} if kind == "response" else {})}}
        for _ in range(5) for kind in ("request", "response")]
    assert [m.get("usage") for m in threads["stuck/1"] if m["type"] == "bot"] == [
        {"tokens": t} for t in (10, 11, 12, 13, 14, 4)]
    # The in-process route api.md gives for the CLI's records: the same, id by id.
    import vthread

    found = vthread.scan([{"id": i, "messages": chat} for i, chat in chats.items()],
                         format="openai")
    assert {record["id"]: record for record in found} == {
        ident: {k: v for k, v in record.items() if k not in ("file", "line")}
        for ident, record in got.items()}


SCREENSHOTS = '''
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ContentImage, tool

PNG = "{png}"


@tool
def shot():
    async def execute() -> list[ContentImage]:
        """Take a screenshot."""
        return [ContentImage(image=f"data:image/png;base64,{{PNG}}")]
    return execute


def outputs():
    outputs = [ModelOutput.for_tool_call("mockllm/model", "shot", {{}}, tool_call_id=f"c{{i}}")
               for i in range(3)] + [ModelOutput.from_content("mockllm/model", "Done.")]
    for output in outputs:  # usage given, so the mock model counts no tokens
        output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return outputs


@task
def screenshots():
    return Task(dataset=[Sample(id="shots", input="Look.")],
                solver=[use_tools(shot()), generate()],
                model=get_model("mockllm/model", custom_outputs=outputs()))
'''


@needs_inspect
def test_inspect_screenshots_read_as_their_media_type_and_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A computer-use-like tool that answers with Inspect's ContentImage (a data URL in its
    ``image`` field) each time: the record shows ``[image/png, 70 bytes]``, not its base64."""
    from tests.test_attribution import PNG

    (tmp_path / "task.py").write_text(SCREENSHOTS.format(png=PNG))
    logs = tmp_path / "logs"
    subprocess.run([sys.executable, "-c", textwrap.dedent(EVALUATE).replace(
        'for log_format in ("eval", "json")', 'for log_format in ("eval",)'), str(logs)],
                   cwd=tmp_path, check=True, timeout=120, capture_output=True)
    (path,) = logs.iterdir()
    code, out, _ = run(["scan", str(path), "--anywhere"], monkeypatch)
    (record,) = records(out)
    assert code == 0 and record["verdict"] is not None
    # (the mock model says a text of its own beside each call, which the excerpt shows first)
    assert record["excerpt"] == record["loops"][0]["excerpt"]
    assert record["excerpt"].endswith(" | shot({}) -> [image/png, 70 bytes]")


def test_inspect_log_without_inspect_ai(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without inspect_ai an Inspect log is refused with what to install, before any record."""
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    log = tmp_path / "run.json"
    log.write_text('{"version": 2, "status": "success", "eval": {"task": "t", "model": "m"},'
                   ' "samples": []}')
    eval_log = tmp_path / "run.eval"
    eval_log.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip archive
    for path in (log, eval_log):
        code, out, err = run(["scan", str(path)], monkeypatch)
        assert code == 2 and out == b""
        assert f"{path}: reading an Inspect AI log needs inspect_ai: " in err
        assert "pip install 'vthread[inspect]'" in err


@needs_inspect
def test_unreadable_eval_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .eval that is not an Inspect log stops the scan with inspect_ai's reason, and one
    that is no whole zip archive (empty, cut short, another kind of file) says so in a
    person's words, not only in the zip reader's ("EOCD not found")."""
    path = tmp_path / "broken.eval"
    for data in (b"not a zip archive", b"", b"PK\x03\x04cut short"):
        path.write_bytes(data)
        code, out, err = run(["scan", str(path)], monkeypatch)
        assert code == 2 and out == b""
        assert f"{path}: cannot read the Inspect AI log: it is not a whole zip archive, " \
               "which an .eval log is" in err


def sample(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": "s1", "epoch": 2, "messages": messages, **extra}


def test_inspect_messages_read_as_openai_name_how_to_read_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample's messages dumped from an Inspect log show OpenAI's ``tool_calls``, so they
    are detected as OpenAI chat, whose reader cannot take a call whose function is a string:
    the error names Inspect's call and how to read its logs, in the API and the command."""
    messages = [
        {"role": "user", "content": "Deploy."},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "function": "status", "arguments": {"job": 7},
                         "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "function": "status", "content": "ok"}]
    told = (r"message 1: tool_calls\[0\]: function must be an object, not a string: .* is "
            r"Inspect AI's .*read_inspect_chats or chat_of")
    with pytest.raises(ValueError, match=told):
        scan([messages], format="auto")
    path = tmp_path / "dumped.jsonl"
    path.write_text(json.dumps({"id": "s1", "messages": messages}) + "\n")
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and re.search(told, records(out)[0]["error"])
    # A call of OpenAI's whose function is a string, with no arguments beside it, is told
    # as before.
    messages[1]["tool_calls"][0].pop("arguments")
    with pytest.raises(ValueError, match=r"tool_calls\[0\]: function must be an object$"):
        scan([messages], format="openai")


def test_sample_messages_map_as_openai_chat() -> None:
    """Inspect's reasoning parts, tool calls (function a string, arguments an object) and tool
    messages map as their OpenAI chat twins do; a failed call's error is its result."""
    messages = [
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "Deploy."}]},
        {"id": "a", "role": "assistant", "content": [
            {"type": "reasoning", "reasoning": "Check first."},
            {"type": "reasoning", "reasoning": "x", "summary": "Hidden.", "redacted": True},
            {"type": "text", "text": "Checking."}],
         "tool_calls": [{"id": "c1", "function": "status", "arguments": {"job": 7}}]},
        {"id": "t", "role": "tool", "tool_call_id": "c1", "function": "status", "content": "",
         "error": {"type": "timeout", "message": "timed out"}},
        {"id": "t2", "role": "tool", "tool_call_id": "c9", "function": "ls",
         "content": '{"files": []}'}]
    ident, native = thread_of(sample(messages), {"a": 9})
    assert ident == "s1/2"
    assert native == from_openai([
        {"role": "user", "content": "Deploy."},
        {"role": "assistant", "content": "Checking.", "usage": {"completion_tokens": 9},
         "reasoning_content": "Check first.\nHidden.",
         "tool_calls": [{"id": "c1", "function": {"name": "status",
                                                  "arguments": '{"job": 7}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "timed out"},
        {"role": "tool", "tool_call_id": "c9", "name": "ls", "content": '{"files": []}'}])


def test_sample_usage_spread_without_model_events() -> None:
    """With no per-call figures, the output tokens of the model that wrote the sample's
    messages are shared by its assistant turns, whole tokens each (the first ones one more
    where they do not divide evenly): the evaluation's model, else the one model listed,
    else those the messages name; a grader's listed beside them are never counted (they
    were: 40 tokens where the agent spent 30), the cost unknown where no model is told."""
    messages = [{"id": "u", "role": "user", "content": "hi"},
                {"id": "a1", "role": "assistant", "content": "one"},
                {"id": "a2", "role": "assistant", "content": "two"}]
    usage = {"openai/m": {"input_tokens": 50, "output_tokens": 31},
             "openai/grader": {"output_tokens": 10}}

    def figures(fields: dict[str, Any], model: str | None = None) -> list[Any]:
        return [m.get("usage") for m in thread_of(fields, model=model)[1]]

    assert figures(sample(messages, model_usage=usage), "openai/m") == [
        None, {"tokens": 16}, {"tokens": 15}]
    assert figures(sample(messages, model_usage=usage)) == [None, None, None]
    named = [messages[0], *({**m, "model": "m"} for m in messages[1:])]  # provider left off
    assert figures(sample(named, model_usage=usage)) == [None, {"tokens": 16}, {"tokens": 15}]
    alone = {"openai/grader": {"output_tokens": 7}}
    assert figures(sample(messages, model_usage=alone)) == [None, {"tokens": 4}, {"tokens": 3}]
    assert figures(sample(messages, model_usage={"m": {"output_tokens": 3.5}})) == [
        None, {"tokens": 1.75}, {"tokens": 1.75}]
    for total in (-5, -0.5, float("nan"), float("inf"), 0):  # (-5 gave 0, -1: 0 counted)
        assert figures(sample(messages, model_usage={"m": {"output_tokens": total}})) == [
            None, None, None], total
    _, native = thread_of(sample(messages, model_usage=usage), model="openai/m")
    assert scan([native]).record(0)["verdict"] is None
    _, bare = thread_of(sample(messages))
    assert not any("usage" in m for m in bare)


def test_import_stays_light() -> None:
    """Neither vthread nor its Inspect module loads inspect_ai until a log is read."""
    code = ("import sys, vthread, vthread.inspect_log; "
            "assert 'inspect_ai' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_is_inspect_log() -> None:
    """Only an object with a version and an eval header naming task and model is a log."""
    assert is_inspect_log({"version": 2, "eval": {"task": "t", "model": "m"}})
    assert not is_inspect_log({"eval": {"task": "t", "model": "m"}})
    assert not is_inspect_log({"version": 2, "eval": "t"})
    assert not is_inspect_log([{"version": 2}])


def written_log(folder: Path, name: str, *, status: str = "success",
                sample_ids: tuple[str | int, ...] = ("a", "b", "c"),
                stopped: tuple[str | int, ...] = (), left_out: tuple[str | int, ...] = (),
                errored: tuple[str, ...] = ()) -> Path:
    """An Inspect log written by inspect_ai's own writer (``.eval`` or ``.json`` by the
    name's suffix): one sample per id (but those ``stopped`` early and those ``left_out``,
    as an unfinished evaluation leaves out those it never ran), the first polling a tool
    five times, the others answering at once (but those ``errored``, which hold their input
    alone and the error their model's call raised); model calls without events, so tokens
    come from model_usage."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import (
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageTool,
        ChatMessageUser,
        ModelUsage,
    )
    from inspect_ai.tool import ToolCall

    def written_sample(ident: str | int, polls: int) -> EvalSample:
        messages: list[ChatMessage] = [ChatMessageUser(content="Is job 7 done?", id=f"u{ident}")]
        for i in range(polls):
            messages += [
                ChatMessageAssistant(content="", id=f"{ident}{i}", tool_calls=[
                    ToolCall(id=f"c{i}", function="status", arguments={"job": 7})]),
                ChatMessageTool(content="pending", tool_call_id=f"c{i}", function="status",
                                id=f"t{ident}{i}")]
        messages.append(ChatMessageAssistant(content="Done.", id=f"z{ident}"))
        usage = ModelUsage(input_tokens=10, output_tokens=6 * (polls + 1), total_tokens=10)
        if ident in errored:
            from inspect_ai.log import EvalError

            return EvalSample(id=ident, epoch=1, input="x", target="", messages=messages[:1],
                              error=EvalError(message=f"ConnectionError: no route to the "
                                              f"model ({ident})\nTraceback ...",
                                              traceback="", traceback_ansi=""))
        return EvalSample(id=ident, epoch=1, input="x", target="", messages=messages,
                          model_usage={"mockllm/model": usage})

    from inspect_ai.log import EvalResults
    from inspect_ai.util import EarlyStop, EarlyStoppingSummary

    # Samples an early-stopping manager stopped: listed by the header, not in the log.
    results = EvalResults(early_stopping=EarlyStoppingSummary(
        manager="m", early_stops=[EarlyStop(id=ident, epoch=1) for ident in stopped],
        metadata={})) if stopped else None
    log = EvalLog(status=status, eval=EvalSpec(
        created="2026-01-01T00:00:00+00:00", task="polling", model="mockllm/model",
        dataset=EvalDataset(samples=len(sample_ids), sample_ids=list(sample_ids)),
        config=EvalConfig(epochs=1)), results=results,
        samples=[written_sample(ident, 5 if i == 0 else 0)
                 for i, ident in enumerate(sample_ids)
                 if ident not in stopped and ident not in left_out])
    path = folder / name
    write_eval_log(log, str(path))
    return path


def with_member(path: Path, member: str, data: bytes | None) -> None:
    """The ``.eval`` log at ``path`` with one zip member's bytes replaced (None: left out);
    the others copied as inspect_ai wrote them (read through its zstd support)."""
    import zipfile

    import inspect_ai.log  # noqa: F401  (lets zipfile read the zstd members Inspect writes)

    with zipfile.ZipFile(path) as source:
        members = {name: source.read(name) for name in source.namelist()}
    assert member in members
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            if name != member:
                archive.writestr(name, content)
            elif data is not None:
                archive.writestr(name, data)


@needs_inspect
def test_corrupt_eval_sample_is_its_error_record(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A .eval whose second sample's member is no JSON: the samples before and after it
    keep their records and it gets an error record naming it; --strict stops there."""
    path = written_log(tmp_path, "run.eval")
    with_member(path, "samples/b_epoch_1.json", b'{"id": "b", "epoch": 1, "messages": [')
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and [r["id"] for r in got] == ["a/1", "b/1", "c/1"]
    assert [r["line"] for r in got] == [1, 2, 3]
    assert got[0]["verdict"] == "repeated_result_run" and got[2]["messages"] == 2
    assert got[1] == {"id": "b/1", "file": str(path), "line": 2, "error": (
        "sample 'b' epoch 1 cannot be read: JSONDecodeError: Expecting value: line 1 "
        "column 38 (char 37)")}
    code, out, err = run(["scan", str(path), "--strict"], monkeypatch)
    assert code == 2 and [r["id"] for r in records(out)] == ["a/1"]
    # (a log's records stand for its samples, and its messages say so: they said "run 2")
    assert f"{path}: sample 2: sample 'b' epoch 1 cannot be read: JSONDecodeError" in err

    from vthread.inspect_log import read_inspect_chats

    chats = read_inspect_chats(path)
    assert next(chats)[0] == "a/1"
    with pytest.raises(ValueError, match=r"^sample 'b' epoch 1 cannot be read: "):
        next(chats)


@needs_inspect
def test_sample_missing_from_a_finished_eval_log(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample the header of a finished evaluation lists but the .eval lacks is an error
    record; an interrupted evaluation's log (status "started") lacks it with no record of
    its own, the log said to be cut short after its samples' records
    (test_an_unfinished_evaluation_s_log_is_one_cut_short)."""
    path = written_log(tmp_path, "run.eval")
    with_member(path, "samples/b_epoch_1.json", None)
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and [r["id"] for r in got] == ["a/1", "b/1", "c/1"]
    assert got[1]["error"] == ("sample 'b' epoch 1 is missing from the log, whose header "
                               "says the evaluation succeeded")
    started = written_log(tmp_path, "started.eval", status="started")
    with_member(started, "samples/b_epoch_1.json", None)
    code, out, err = run(["scan", str(started), "-q"], monkeypatch)
    assert code == 0 and "holds 2 of the 3 samples its header lists" in err
    assert [(r["id"], "error" in r) for r in records(out)] == [
        ("a/1", False), ("c/1", False), (None, True)]
    # A sample an early-stopping manager stopped is not missing (a reviewer's finding: it
    # was an error record, and read_inspect_log raised on a valid log).
    early = written_log(tmp_path, "early.eval", stopped=("b",))
    code, out, err = run(["scan", str(early), "-q", "--strict"], monkeypatch)
    assert code == 0 and err == ""
    assert [(r["id"], "error" in r) for r in records(out)] == [("a/1", False), ("c/1", False)]
    assert [ident for ident, _ in read_inspect_log(early)] == ["a/1", "c/1"]


@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_an_error_of_the_file_or_installation_is_the_logs_not_each_samples(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """An OSError or ImportError while samples are read is the log's fatal error (status 2,
    said once), not an error record for every sample after it with status 0 (a reviewer's
    finding: a log deleted while read made 1,883 error records, then a traceback)."""
    import inspect_ai.log

    path = written_log(tmp_path, f"run{suffix}")
    document = json.loads(path.read_text()) if suffix == ".json" else None
    if document is not None:  # (a log inspect_ai refuses whole, read sample by sample)
        document["samples"][1]["messages"][0]["role"] = "robot"
        path.write_text(json.dumps(document))

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("header_only") or not kwargs.get("resolve_attachments"):
            return reader(*args, **kwargs)  # a header: read (the samples' reads raise)
        raise ModuleNotFoundError("No module named 'zipfile_deflate64'")

    reader = inspect_ai.log.read_eval_log
    for name in ("read_eval_log_samples_by_id", "read_eval_log_sample", "read_eval_log"):
        monkeypatch.setattr(inspect_ai.log, name, unavailable)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 2 and not out
    assert err.count("\n") == 1 and "zipfile_deflate64" in err and "Traceback" not in err


@needs_inspect
def test_invalid_json_log_sample_is_its_error_record(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json log with one sample inspect_ai does not validate (a message's role unknown):
    the valid samples are read (inspect_ai reading the log whole read none), and that one
    is an error record naming it, the place and the problem."""
    path = written_log(tmp_path, "run.json")
    document = json.loads(path.read_text())
    document["samples"][1]["messages"][0]["role"] = "robot"
    path.write_text(json.dumps(document))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and [r["id"] for r in got] == ["a/1", "b/1", "c/1"]
    assert got[0]["verdict"] == "repeated_result_run" and "error" not in got[2]
    assert got[1]["error"] == (
        "sample 'b' epoch 1 is not a valid Inspect sample: messages.0.role: Input should "
        "be 'system' or 'user' or 'assistant' or 'tool' (it is 'robot')")
    # A sample that is no object at all is named as the sample, not as the place inside
    # the one-sample log it is read in ("samples.0", a reviewer's finding).
    document["samples"][1] = "oops"
    path.write_text(json.dumps(document))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    error = records(out)[1]["error"]
    assert error.startswith("sample 2 of the log is not a valid Inspect sample: the sample: ")
    assert "samples.0" not in error
    assert len(records(out)) == 3  # (and not said missing too: a second record for it)


@needs_inspect
@pytest.mark.parametrize("edit", [{"epoch": "one"}, {"id": None}, {"epoch": 2}])
def test_a_sample_refused_for_its_own_id_or_epoch_is_one_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: dict[str, Any]) -> None:
    """A .json log's sample refused for its id or epoch (text, null, an epoch the header
    does not run) is one error record, standing for the sample of the header it was: it
    was also said missing from the log, two records for one sample, lines and errors
    over-counted (found by a tester)."""
    path = written_log(tmp_path, "run.json")
    document = json.loads(path.read_text())
    document["samples"][1]["messages"][0]["role"] = "robot"  # (so that it is refused)
    document["samples"][1].update(edit)
    path.write_text(json.dumps(document))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and len(got) == 3, got
    assert "not a valid Inspect sample" in got[1]["error"]
    assert not any("missing from the log" in r.get("error", "") for r in got)


@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_samples_read_alone_as_inspect_reads_the_log(
        tmp_path: Path, inspect_logs: dict[str, Path], suffix: str) -> None:
    """Each sample read alone gives the chat inspect_ai's reading of the whole log gives
    (the reference: read_eval_log_samples for a .eval, read_eval_log for a .json), sample
    for sample, in the same order, for a real evaluation's log and a written one."""
    from inspect_ai.log import read_eval_log, read_eval_log_samples

    from vthread.inspect_log import _json_samples_alone, _Notes, read_inspect_chats

    for path in (inspect_logs[suffix], written_log(tmp_path, f"run{suffix}")):
        whole = (read_eval_log_samples(path, all_samples_required=False,
                                       resolve_attachments=True) if suffix == ".eval"
                 else read_eval_log(path, resolve_attachments=True).samples or [])
        expected = []
        for sample in whole:
            fields = sample.model_dump(mode="json", exclude_none=True)
            expected.append(chat_of(fields))
        assert list(read_inspect_chats(path)) == expected
        if suffix == ".json":  # (the CLI's way: the document's bytes)
            assert list(read_inspect_chats(io.BytesIO(path.read_bytes()))) == expected
            # A log inspect_ai reads whole is read so; the sample-by-sample reading, kept
            # for a log it cannot, must give the same on one it can.
            unfinished: list[str] = []
            assert list(_json_samples_alone(path.read_bytes(),
                                            _Notes(unfinished.append))) == expected
            assert unfinished == []


@pytest.mark.parametrize(("fields", "problem"), [
    ({"messages": ["hi"]}, "message 0 is not an object, but a str"),
    ({"messages": "hi"}, "its messages are not a list, but a str"),
    # (a role inspect_ai does not write passed through here, where its file route refused
    # the sample: a tester's case)
    ({"messages": [{"role": "user", "content": "x"}, {"role": "robot", "content": "x"}]},
     "message 1: its role is 'robot', not one Inspect writes (system, user, assistant, "
     "tool)"),
    ({"messages": [{"content": "x"}]},
     "message 0: its role is missing, not one Inspect writes (system, user, assistant, "
     "tool)"),
    ({"messages": [{"role": None, "content": "x"}]},
     "message 0: its role is null, not one Inspect writes (system, user, assistant, tool)"),
    ({"messages": [{"role": 7, "content": "x"}]},
     "message 0: its role is an int, not one Inspect writes (system, user, assistant, "
     "tool)"),
    ({"messages": [{"role": "assistant", "content": "", "tool_calls": ["ls"]}]},
     "message 0: tool call 0 is not an object, but a str"),
    ({"messages": [{"role": "assistant", "content": "", "tool_calls": "ls"}]},
     "message 0: its tool_calls are not a list, but a str"),
    ({"messages": [{"role": "assistant", "id": ["a"], "content": "x"}]},
     "message 0: its id is not text, but a list"),
    ({"messages": [{"role": "assistant", "id": "a", "content": "x"}],
      "model_usage": {"m": {"output_tokens": "5"}}},
     "model_usage 'm': output_tokens is not a number, but a str ('5')"),
    ({"messages": [{"role": "assistant", "id": "a", "content": "x"}],
      "events": [{"event": "model", "output": {"choices": [{"message": {"id": "a"}}],
                                               "usage": {"output_tokens": "5"}}}]},
     "event 0: output_tokens is not a number, but a str ('5')"),
    ({"messages": [{"role": "assistant", "id": "a", "content": "x"}], "events": 5},
     "events are not a list, but an int"),
    ({"messages": [{"role": "assistant", "id": "a", "content": "x"}],
      "events": [{"event": "model", "output": {"choices": {"a": 1},
                                               "usage": {"output_tokens": 5}}}]},
     "event 0: the output's choices are not a list, but a dict"),
])
def test_raw_sample_inspect_would_reject(fields: dict[str, Any], problem: str) -> None:
    """A sample as a dict that inspect_ai would not have written is a ValueError naming the
    sample and where in it, never an AttributeError or TypeError from inside."""
    for read in (thread_of, chat_of):
        with pytest.raises(ValueError) as raised:
            read({**sample([]), **fields})
        assert str(raised.value) == f"sample 's1' epoch 2: {problem}"


def test_raw_sample_the_translation_rejects_is_named() -> None:
    """What from_openai refuses in a sample's chat (content that is a number) is named with
    the sample, as chat_of's own refusals are."""
    with pytest.raises(ValueError, match=r"^sample 's1' epoch 2: message 0: content must be"):
        thread_of(sample([{"role": "assistant", "content": 5}]))


@needs_inspect
def test_eval_samples_are_read_in_batches_bounded_in_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Samples are read together up to a byte bound by the archive's listed sizes (64 big
    samples at once held 3.6 times the memory of one at a time, a reviewer's finding), a
    larger one alone, one a batch when the archive cannot be listed; the samples read are
    the same whatever the batches."""
    import vthread.inspect_log as inspect_log

    path = written_log(tmp_path, "run.eval", sample_ids=("a", "b", "c", "d"))
    wanted = [(ident, 1) for ident in "abcd"]
    expected = list(read_inspect_log(path))
    assert list(inspect_log._batches(path, wanted)) == [wanted]
    monkeypatch.setattr(inspect_log, "_EVAL_BATCH_BYTES", 1_000)  # a: ~1.5 KB, others ~0.4
    assert list(inspect_log._batches(path, wanted)) == [wanted[:1], wanted[1:3], wanted[3:]]
    assert list(read_inspect_log(path)) == expected
    unlisted = tmp_path / "not-a-zip.eval"
    unlisted.write_bytes(b"no zip")
    assert list(inspect_log._batches(unlisted, wanted)) == [[pair] for pair in wanted]


@needs_inspect
def test_a_sample_too_large_for_the_memory_costs_only_its_own_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sample of a ``.eval`` log that does not fit the memory (a MemoryError as it is
    read, alone or in its batch): the samples before it are read and their records written,
    and the scan ends at that sample, named by its place (a tester's log whose third sample
    held 1.2 GB: "sample 1", and no record of the two before it)."""
    import inspect_ai.log

    from vthread.inspect_log import read_inspect_samples

    path = written_log(tmp_path, "run.eval", sample_ids=("a", "b", "c", "d"))
    together = inspect_ai.log.read_eval_log_samples_by_id
    alone = inspect_ai.log.read_eval_log_sample

    def batch_too_large(log: Any, ids: Any, **kwargs: Any) -> Any:
        if ("c", 1) in [tuple(pair) for pair in ids]:
            raise MemoryError
        return together(log, ids, **kwargs)

    def sample_too_large(log: Any, id: Any = None, epoch: int = 1, **kwargs: Any) -> Any:
        if id == "c":
            raise MemoryError
        return alone(log, id=id, epoch=epoch, **kwargs)

    monkeypatch.setattr(inspect_ai.log, "read_eval_log_samples_by_id", batch_too_large)
    monkeypatch.setattr(inspect_ai.log, "read_eval_log_sample", sample_too_large)
    read: list[Any] = []
    with pytest.raises(MemoryError):
        read.extend(read_inspect_samples(path))
    assert [sample[0] for sample in read] == ["a/1", "b/1"]
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(path), "-q", "--summary", str(summary)], monkeypatch)
    assert code == 71
    assert [r["id"] for r in records(out)] == ["a/1", "b/1"]
    assert f"out of memory at {path}: sample 3:" in err
    assert "the records of the 2 samples before it are written" in err
    assert json.loads(summary.read_text())["lines"] == 2

@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
@pytest.mark.parametrize(("status", "why"), [
    ("started", "still running, or stopped before it finished"),
    ("error", "it ended in an error"), ("cancelled", "it was cancelled")])
def test_an_unfinished_evaluation_s_log_is_one_cut_short(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, status: str,
        why: str) -> None:
    """A log whose evaluation did not finish and lacks samples its header lists (still
    running, killed, errored, cancelled): its samples' records, then one error record
    saying what it lacks; said on stderr, listed in the summary's cut_short, failing
    --fail-on-error (it passed the gate, "completed", every run said checked). The Python
    reader warns; a finished log, or an unfinished one holding every sample, says
    nothing."""
    from vthread.inspect_log import read_inspect_samples

    path = written_log(tmp_path, f"run{suffix}", status=status,
                       sample_ids=("a", "b", "c", "d", "e"), left_out=("c", "d"),
                       stopped=("e",))  # (one stopped early is not lacking)
    said = (f"holds 2 of the 4 samples its header lists: its evaluation did not finish "
            f"({why}); the others are not in it, and go unchecked")
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(path), "-q", "--fail-on-error", "--summary",
                          str(summary)], monkeypatch)
    got = records(out)
    assert code == 65 and f"{path}: {said}" in err
    assert [r["id"] for r in got] == ["a/1", "b/1", None]
    assert got[-1] == {"id": None, "file": str(path), "line": 3, "error": said}
    written = json.loads(summary.read_text())
    assert written["cut_short"] == [{"file": str(path), "why": said}]
    # (its record stands for no sample: "3 samples", "errors 1" of 2 samples read whole)
    assert (written["lines"], written["threads"], written["errors"]) == (2, 2, 0)
    assert "vthread scan: 2 samples from" in run(["scan", str(path)], monkeypatch)[2]
    page = tmp_path / "report.html"  # (the report of the log counts as its summary does)
    code, _, err = run(["report", str(path), "-o", str(page)], monkeypatch)
    assert code == 0 and "report: 2 runs, 1 with a loop: wrote" in err
    assert all(f'data-figure="{key}" data-value="{written[key]}"' in page.read_text()
               for key in ("threads", "errors"))
    with pytest.warns(UserWarning, match=re.escape(f"the Inspect AI log {said}")):
        assert [ident for ident, _ in read_inspect_log(path)] == ["a/1", "b/1"]
    heard: list[str] = []
    assert len(list(read_inspect_samples(path, lacking=heard.append))) == 2
    assert heard == [said]
    whole = written_log(tmp_path, f"whole{suffix}", status=status)
    code, out, err = run(["scan", str(whole), "-q", "--fail-on-error"], monkeypatch)
    assert code == 0 and err == "" and len(records(out)) == 3


@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_log_of_samples_that_ended_in_an_error_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """A log holding samples that ended in an error (a model that could not be reached: each
    holds its input alone) is said to, as one lacking samples is: its samples' records,
    then a record saying how many errored and the first's error, on stderr, in the
    summary's cut_short and failing --fail-on-error (every such sample counted as a run
    checked and progressing, status 0); the Python reader warns. Both notes together
    are one record."""
    from vthread.inspect_log import is_lacking_note, read_inspect_samples

    path = written_log(tmp_path, f"run{suffix}", status="error", errored=("b", "c"))
    said = ("holds 2 samples that ended in an error (the first, sample 'b' epoch 1: "
            "ConnectionError: no route to the model (b)): their runs stop where the error "
            "stopped them, and are checked as far as they went")
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(path), "-q", "--fail-on-error", "--summary",
                          str(summary)], monkeypatch)
    got = records(out)
    assert code == 65 and f"{path}: {said}" in err
    assert [(r["id"], r.get("messages")) for r in got] == [
        ("a/1", 12), ("b/1", 1), ("c/1", 1), (None, None)]
    assert got[-1] == {"id": None, "file": str(path), "line": 4, "error": said}
    assert is_lacking_note(got[-1])
    written = json.loads(summary.read_text())
    assert written["cut_short"] == [{"file": str(path), "why": said}]
    assert (written["lines"], written["threads"], written["errors"]) == (3, 3, 0)
    with pytest.warns(UserWarning, match=re.escape(f"the Inspect AI log {said}")):
        assert [ident for ident, _ in read_inspect_log(path)] == ["a/1", "b/1", "c/1"]
    one = written_log(tmp_path, f"one{suffix}", status="error", errored=("c",))
    heard: list[str] = []
    assert len(list(read_inspect_samples(one, lacking=heard.append))) == 3
    assert heard == ["holds 1 sample that ended in an error (it, sample 'c' epoch 1: "
                     "ConnectionError: no route to the model (c)): their runs stop where "
                     "the error stopped them, and are checked as far as they went"]
    # Lacking samples too: both said, in one record.
    both = written_log(tmp_path, f"both{suffix}", status="error", errored=("b",),
                       left_out=("c",))
    code, out, _ = run(["scan", str(both), "-q"], monkeypatch)
    last = records(out)[-1]
    assert last["error"].startswith("holds 2 of the 3 samples its header lists: ")
    assert "; holds 1 sample that ended in an error (it, sample 'b'" in last["error"]
    assert is_lacking_note(last)


@pytest.mark.parametrize("status", ["success", "started", "error", "cancelled", "odd"])
@pytest.mark.parametrize(("held", "listed"), [(0, 4), (1, 2), (1_234, 12_345)])
@pytest.mark.parametrize("log_samples", [True, False])
def test_every_note_of_what_a_log_lacks_is_told_from_a_sample_s_error(
        status: str, held: int, listed: int, log_samples: bool) -> None:
    """What the reader says a log lacks (each wording) is what a reader of the records
    tells from an error of a sample: the same words with an id, or beside a verdict's
    fields, are no note."""
    from vthread import inspect_log

    why = inspect_log._unfinished(status, held, listed, log_samples)
    assert why is not None
    note = {"id": None, "file": "run.eval", "line": held + 1, "error": why}
    assert inspect_log.is_lacking_note(note)
    assert inspect_log.is_lacking_note({**note, "verdict": None, "loops": None})
    assert not inspect_log.is_lacking_note({**note, "id": "a/1"})
    assert not inspect_log.is_lacking_note({**note, "messages": 3})
    assert not inspect_log.is_lacking_note({**note, "error": f"sample 'a' epoch 1: {why}"})


@needs_inspect
@pytest.mark.parametrize("records_suffix", [".jsonl", ".parquet"])
def test_records_of_a_lacking_log_read_back_count_as_its_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records_suffix: str) -> None:
    """``vthread report`` of the records of an unfinished evaluation's log counts the record
    that ends it (what the log lacks) as the scan's summary does, as no run and no error,
    and says it, as a warning on the page too (read back, it was counted among the error
    records: "errors 1" of a scan that had none); a sample's own error still counts."""
    path = written_log(tmp_path, "run.eval", status="started",
                       sample_ids=("a", "b", "c", "d"), left_out=("c", "d"))
    saved, summary = tmp_path / f"records{records_suffix}", tmp_path / "summary.json"
    code, _, _ = run(["scan", str(path), "-q", "-o", str(saved), "--summary", str(summary)],
                     monkeypatch)
    written = json.loads(summary.read_text())
    assert code == 0 and (written["threads"], written["errors"]) == (2, 0)
    page = tmp_path / "report.html"
    code, _, err = run(["report", str(saved), "-o", str(page)], monkeypatch)
    said = written["cut_short"][0]["why"]
    assert code == 0 and f"vthread report: {path}: warning: {said}" in err
    text = page.read_text()
    assert all(f'data-figure="{key}" data-value="{written[key]}"' in text
               for key in ("threads", "errors"))
    assert html.escape(said) in text  # (among the page's warnings)
    if records_suffix == ".jsonl":  # a sample's error is counted, whatever its words
        lines = saved.read_text().splitlines()
        sample_error = {"id": "c/1", "file": str(path), "line": 3, "error": said}
        saved.write_text("\n".join([*lines, json.dumps(sample_error)]) + "\n")
        run(["report", str(saved), "-o", str(page)], monkeypatch)
        assert 'data-figure="errors" data-value="1"' in page.read_text()


@needs_inspect
def test_an_eval_set_s_bookkeeping_files_are_passed_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inspect's eval_set writes logs.json (its logs' headers) and eval-set.json (its
    tasks) beside the logs: a scan of the directory passes over both, saying so (each was
    an error record, failing --fail-on-error on every eval set); named alone, or holding
    something else under those names, a file is read as ever."""
    log = written_log(tmp_path, "run.eval")
    header = json.loads(json.dumps({"version": 2, "status": "success", "eval": {
        "task": "polling", "model": "mockllm/model", "created": "2026-01-01T00:00:00+00:00"}}))
    (tmp_path / "logs.json").write_text(json.dumps({log.name: header}))
    (tmp_path / "eval-set.json").write_text(json.dumps(
        {"eval_set_id": "x", "tasks": [{"name": "polling", "model": "mockllm/model"}]}))
    code, out, err = run(["scan", str(tmp_path), "-q", "--fail-on-error"], monkeypatch)
    assert code == 0 and [r["id"] for r in records(out)] == ["a/1", "b/1", "c/1"]
    assert "logs.json: passed over: it is Inspect AI's manifest of an eval set's logs" in err
    assert "eval-set.json: passed over: it is Inspect AI's eval-set file" in err
    code, out, _ = run(["scan", str(tmp_path / "logs.json"), "-q"], monkeypatch)
    assert "error" in records(out)[0]
    (tmp_path / "logs.json").write_text(json.dumps({"messages": [
        {"type": "user", "text": "hi"}]}))
    code, out, err = run(["scan", str(tmp_path), "-q"], monkeypatch)
    assert "logs.json: passed over" not in err and len(records(out)) == 4


@needs_inspect
def test_samples_in_memory_are_read_as_the_log_reads_them(tmp_path: Path) -> None:
    """chat_of and thread_of take inspect_ai's own EvalSample (what eval() returns), as
    the log's reader reads it: the same id, messages and usage (it was an AttributeError);
    a value of another type is a TypeError."""
    from inspect_ai.log import read_eval_log

    from vthread.inspect_log import read_inspect_chats

    path = written_log(tmp_path, "run.eval")
    log = read_eval_log(str(path))
    assert log.samples is not None
    in_memory = [chat_of(s, model=log.eval.model) for s in log.samples]
    assert in_memory == list(read_inspect_chats(path))
    assert [thread_of(s, model=log.eval.model) for s in log.samples] == list(
        read_inspect_log(path))
    with pytest.raises(TypeError, match=r"a sample is a mapping .* or an inspect_ai "
                                        r"EvalSample, got list"):
        chat_of([])  # type: ignore[arg-type]


@needs_inspect
def test_an_eval_log_whose_header_lists_no_sample_ids_is_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .eval log an inspect_ai before sample ids wrote (its header's sample_ids null):
    read whole, as inspect_ai reads it, the same records as with the ids (it was refused
    whole, exit status 2)."""
    path = written_log(tmp_path, "run.eval")
    listed = records(run(["scan", str(path), "-q"], monkeypatch)[1])
    _without_sample_ids(path)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and err == "" and records(out) == listed


def _with_header(path: Path, **changes: Any) -> None:
    """The .eval log at ``path`` with its header's (and journal's) ``eval`` fields changed:
    ``dataset_<field>`` and ``config_<field>`` set in those objects."""
    import zipfile

    import inspect_ai.log  # noqa: F401  (lets zipfile read the zstd members Inspect writes)

    for member in ("header.json", "_journal/start.json"):
        with zipfile.ZipFile(path) as archive:
            if member not in archive.namelist():
                continue
            header = json.loads(archive.read(member))
        for name, value in changes.items():
            part, _, field = name.partition("_")
            header["eval"][part][field] = value
        with_member(path, member, json.dumps(header).encode())


def _without_sample_ids(path: Path) -> None:
    """The .eval log at ``path`` as an inspect_ai before sample ids wrote it: its header's
    (and journal's) sample_ids null."""
    _with_header(path, dataset_sample_ids=None)


@needs_inspect
def test_an_eval_log_without_sample_ids_keeps_the_samples_around_a_bad_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .eval log whose header lists no sample ids, read whole, loses every sample to
    one inspect_ai cannot read: its sample members are then read one at a time, each bad
    one an error record naming it in its place and the others scanned, as for a log that
    lists its ids (the whole log was refused, exit status 2, its message naming no
    sample)."""
    expected = []
    for name, damaged in (("bad.eval", b'{"id": "b", "epoch": 1, "messages": ['),
                          ("invalid.eval", None)):
        path = written_log(tmp_path, name)
        member = member_bytes(path, "samples/b_epoch_1.json")
        broken = damaged if damaged is not None else json.dumps(
            {**json.loads(member), "messages": [{"role": "wizard", "content": "hi"}]}).encode()
        with_member(path, "samples/b_epoch_1.json", broken)
        listed = records(run(["scan", str(path), "-q"], monkeypatch)[1])
        _without_sample_ids(path)
        code, out, err = run(["scan", str(path), "-q"], monkeypatch)
        got = records(out)
        assert code == 0 and err == "" and got == listed, name
        assert [r["id"] for r in got] == ["a/1", "b/1", "c/1"]
        assert got[1]["error"].startswith("sample 'b' epoch 1 cannot be read: ")
        expected.append(got[1]["error"])
    assert "role" in expected[1]


def member_bytes(path: Path, member: str) -> bytes:
    """The bytes of one member of the .eval log at ``path``."""
    import zipfile

    import inspect_ai.log  # noqa: F401  (lets zipfile read the zstd members Inspect writes)

    with zipfile.ZipFile(path) as archive:
        return archive.read(member)


@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_finished_log_lacking_samples_says_each_in_either_format(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """A log whose header says the evaluation succeeded but that lacks samples it lists
    (cut after it was written): an error record for each, in either format (a .json log's
    went unchecked, unsaid); a sample stopped early is not missing."""
    path = written_log(tmp_path, f"run{suffix}", sample_ids=("a", "b", "c", "d", "e"),
                       left_out=("b", "d"), stopped=("e",))
    code, out, err = run(["scan", str(path), "-q", "--fail-on-error"], monkeypatch)
    got = {r["id"]: r.get("error") for r in records(out)}
    missing = "epoch 1 is missing from the log, whose header says the evaluation succeeded"
    assert code == 65 and err == ""
    # (in its place in a .eval log; after the samples a .json log holds, in its order)
    assert list(got) == (["a/1", "b/1", "c/1", "d/1"] if suffix == ".eval"
                         else ["a/1", "c/1", "b/1", "d/1"])
    assert got == {"a/1": None, "b/1": f"sample 'b' {missing}", "c/1": None,
                   "d/1": f"sample 'd' {missing}"}


@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_log_of_an_evaluation_that_logged_no_samples_says_so_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """A log of an evaluation run with log_samples=False holds no sample: one error record
    says why, it is listed as cut short and fails --fail-on-error (a .eval log had an error
    record per sample, each saying it was missing from a finished evaluation's log; a .json
    one had none, and passed)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    path = written_log(tmp_path, f"run{suffix}")
    log = read_eval_log(str(path))
    log.samples = None
    log.eval.config.log_samples = False
    write_eval_log(log, str(path))
    said = ("holds none of the 3 samples its header lists: its evaluation ran with "
            "log_samples=False, which writes none to the log; they go unchecked")
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(path), "-q", "--fail-on-error", "--summary",
                          str(summary)], monkeypatch)
    assert code == 65 and f"{path}: {said}" in err
    assert records(out) == [{"id": None, "file": str(path), "line": 1, "error": said}]
    assert json.loads(summary.read_text())["cut_short"] == [{"file": str(path), "why": said}]


@needs_inspect
def test_an_eval_set_s_bookkeeping_named_as_an_input_says_what_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eval-set.json and logs.json named among the inputs (a glob of an eval set's
    directory) are error records saying what they are (eval-set.json's said its tasks may
    be a run, to be written out by jq; logs.json's, only that it held no messages)."""
    log = written_log(tmp_path, "run.eval")
    header = {"version": 2, "status": "success", "eval": {
        "task": "polling", "model": "mockllm/model", "created": "2026-01-01T00:00:00+00:00"}}
    (tmp_path / "logs.json").write_text(json.dumps({log.name: header}))
    (tmp_path / "eval-set.json").write_text(json.dumps(
        {"eval_set_id": "x", "tasks": [{"name": "polling", "model": "mockllm/model"}]}))
    code, out, _ = run(["scan", str(log), str(tmp_path / "logs.json"),
                        str(tmp_path / "eval-set.json"), "-q"], monkeypatch)
    got = records(out)
    assert code == 0
    assert [r["id"] for r in got] == ["a/1", "b/1", "c/1", None, None]
    assert got[3]["error"] == (
        "not a thread: it is Inspect AI's manifest of an eval set's logs (their headers, no "
        "samples), not runs (a scan of their directory passes it over)")
    assert got[4]["error"] == (
        "not a thread: it is Inspect AI's eval-set file (the set's id and tasks), not runs "
        "(a scan of their directory passes it over)")


@needs_inspect
def test_a_log_without_sample_ids_is_judged_by_its_header_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .eval log whose header lists no sample ids: what it lacks is told from its header
    as written (inspect_ai reading it whole lists the ids it found, so a missing sample
    passed unsaid), its dataset's count less the run's limit (a run of limit=3 over 5
    samples was said to lack 2 once one sample sent it down the member-by-member read)."""
    full = written_log(tmp_path, "full.eval", sample_ids=("a", "b", "c", "d"))
    _without_sample_ids(full)
    with_member(full, "samples/d_epoch_1.json", None)
    code, out, err = run(["scan", str(full), "-q", "--fail-on-error"], monkeypatch)
    said = ("holds 3 of the 4 samples its header lists: its header says the evaluation "
            "succeeded, which writes them all; the others are not in it, and go unchecked")
    assert code == 65 and f"{full}: {said}" in err
    assert [r.get("error") for r in records(out)] == [None, None, None, said]
    for limit, name in ((3, "limited.eval"), ([1, 4], "ranged.eval")):
        limited = written_log(tmp_path, name)
        _without_sample_ids(limited)
        _with_header(limited, dataset_samples=5, config_limit=limit)
        code, out, err = run(["scan", str(limited), "-q", "--fail-on-error"], monkeypatch)
        assert code == 0 and err == "" and len(records(out)) == 3, name
        invalid = {**json.loads(member_bytes(limited, "samples/b_epoch_1.json")),
                   "messages": [{"role": "wizard", "content": "x"}]}
        with_member(limited, "samples/b_epoch_1.json", json.dumps(invalid).encode())
        code, out, err = run(["scan", str(limited), "-q"], monkeypatch)
        assert code == 0 and err == "" and len(records(out)) == 3, name
        assert "cannot be read" in records(out)[1]["error"]


@needs_inspect
def test_a_sample_the_header_does_not_list_is_read_after_those_it_lists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .eval member of a sample its header does not list (added after the header was
    written) is read after the listed ones, as inspect_ai reading the log whole reads it
    (it was left unread, unsaid)."""
    path = written_log(tmp_path, "run.eval")
    member = member_bytes(path, "samples/c_epoch_1.json")
    extra = {**json.loads(member), "id": "x"}
    with_member(path, "samples/c_epoch_1.json", member)  # (rewritten: an archive we append to)
    import zipfile

    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("samples/x_epoch_1.json", json.dumps(extra))
    code, out, _ = run(["scan", str(path), "-q", "--fail-on-error"], monkeypatch)
    assert code == 0 and [r["id"] for r in records(out)] == ["a/1", "b/1", "c/1", "x/1"]


@needs_inspect
def test_a_lacking_log_s_warning_points_at_the_caller(tmp_path: Path) -> None:
    """The Python reader's warning that a log lacks samples names the line that read it,
    for either format (it named a line of vthread's own)."""
    from vthread.inspect_log import read_inspect_samples

    for suffix in (".eval", ".json"):
        path = written_log(tmp_path, f"run{suffix}", status="started", left_out=("b",))
        with pytest.warns(UserWarning, match="holds 2 of the 3") as caught:
            list(read_inspect_samples(path))
        assert [Path(w.filename).name for w in caught] == [Path(__file__).name], suffix


def test_a_sample_held_twice_counts_once_toward_what_a_log_holds() -> None:
    """A sample a log holds twice (requeued and written again) is one of those it holds:
    a cancelled evaluation's log of sample a three times lacks two of three (it was said to
    hold them all)."""
    from vthread import inspect_log

    heard: list[str] = []
    header = {"status": "cancelled",
              "eval": {"dataset": {"sample_ids": ["a", "b", "c"]}, "config": {"epochs": 1}}}
    assert list(inspect_log._lacking(header, [("a", 1)] * 3, heard.append)) == []
    assert heard == ["holds 1 of the 3 samples its header lists: its evaluation did not "
                     "finish (it was cancelled); the others are not in it, and go unchecked"]


def test_what_a_header_lists_is_counted_as_inspect_ai_chose_the_samples() -> None:
    """Without sample ids, the samples a header lists are its dataset's count sliced by the
    run's limit as Python slices (a negative start counts from the end), and unknown when
    it chose samples by id (patterns it matched against ids it does not list): no claim
    then (a range of [-2, 5] over 5 samples was said to list 5, and sample_id=["s1", "s3",
    "nope"] 3). With ids, a sample it does not list is no part of what it lists (a
    cancelled .json log holding other epochs of one sample was said to hold them all)."""
    from vthread import inspect_log

    def listed(samples: int, **config: Any) -> int | None:
        return inspect_log._listed(None, samples, 1, set(), config)

    assert [listed(5), listed(5, limit=3), listed(5, limit=9), listed(5, limit=[1, 4]),
            listed(5, limit=[-2, 5]), listed(5, limit=-1)] == [5, 3, 5, 3, 2, 4]
    assert listed(5, sample_id=["s1", "s3", "nope"]) is None
    assert listed(5, sample_id="s*") is None and listed(5, limit="x") is None
    heard: list[str] = []
    header = {"status": "cancelled",
              "eval": {"dataset": {"sample_ids": ["s0", "s1", "s2", "s3", "s4"]},
                       "config": {"epochs": 1}}}
    held = [("s0", 1), ("s1", 1), ("s0", 2), ("s0", 3), ("s0", 4)]
    assert list(inspect_log._lacking(header, held, heard.append)) == []
    assert heard == ["holds 2 of the 5 samples its header lists: its evaluation did not "
                     "finish (it was cancelled); the others are not in it, and go unchecked"]


@needs_inspect
def test_a_json_log_without_sample_ids_is_judged_by_its_header_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json log whose header lists no sample ids (null, or no key), read whole by
    inspect_ai (which lists the ids it found): a finished one missing a sample is said to
    lack it, by count (it passed unsaid), whichever way the document is spaced."""
    path = written_log(tmp_path, "run.json", sample_ids=("a", "b", "c", "d"))
    document = json.loads(path.read_text())
    document["samples"] = document["samples"][:3]
    said = ("holds 3 of the 4 samples its header lists: its header says the evaluation "
            "succeeded, which writes them all; the others are not in it, and go unchecked")
    for written in ("null", "absent"):
        if written == "null":
            document["eval"]["dataset"]["sample_ids"] = None
        else:
            document["eval"]["dataset"].pop("sample_ids", None)
        for indent in (None, 2):
            path.write_text(json.dumps(document, indent=indent))
            code, out, err = run(["scan", str(path), "-q", "--fail-on-error"], monkeypatch)
            assert code == 65 and f"{path}: {said}" in err, (written, indent)
            assert [r.get("error") for r in records(out)] == [None, None, None, said]
    document["eval"]["dataset"]["sample_ids"] = ["a", "b", "c", "d"]  # (listed: named)
    path.write_text(json.dumps(document, indent=1))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    assert records(out)[-1]["error"] == ("sample 'd' epoch 1 is missing from the log, whose "
                                         "header says the evaluation succeeded")


@needs_inspect
def test_a_lone_surrogate_in_one_sample_of_a_json_log_costs_that_sample_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json log one of whose samples holds a lone surrogate's escape (valid JSON, which
    inspect_ai's parser refuses): that sample is an error record saying so, the others are
    read (the log was refused whole, status 2, no record)."""
    path = written_log(tmp_path, "run.json")
    document = json.loads(path.read_text())
    document["samples"][1]["messages"][0]["content"] = "x\udcffy"
    path.write_text(json.dumps(document))  # (written as the escape \\udcff)
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and [r["id"] for r in got] == ["a/1", "b/1", "c/1"]
    assert "error" not in got[0] and "error" not in got[2]
    assert "not a valid Inspect sample" in got[1]["error"]
    assert "surrogate" in got[1]["error"]


@needs_inspect
def test_a_refused_sample_stands_only_for_the_sample_it_can_be(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused sample of a .json log whose header lists no ids is counted as held (a
    header without ids said the log lacked it, a second record); one whose id the header
    does not list stands for no other sample, so a sample really missing is still said
    missing (found by a reviewer)."""
    path = written_log(tmp_path, "run.json")
    document = json.loads(path.read_text())
    document["samples"][1]["messages"][0]["role"] = "robot"
    document["eval"]["dataset"]["sample_ids"] = None
    path.write_text(json.dumps(document))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 3, records(out)
    document = json.loads(written_log(tmp_path, "again.json").read_text())
    document["samples"][2]["messages"][0]["role"] = "robot"
    document["samples"][2]["id"] = "zzz"  # (c refused under another id: c is missing)
    path.write_text(json.dumps(document))
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert [r["id"] for r in got] == ["a/1", "b/1", "zzz/1", "c/1"]
    assert "not a valid Inspect sample" in got[2]["error"]
    assert got[3]["error"].startswith("sample 'c' epoch 1 is missing from the log")


@needs_inspect
@pytest.mark.parametrize("status", ["success", "cancelled"])
def test_an_integer_id_and_a_text_id_of_its_digits_are_two_samples(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str) -> None:
    """Samples 1 and "1" (two to Inspect) of a .json log are two records, and the log holds
    both (their ids' text made them one: the log was said to hold 1 of its 2 samples, found
    by a tester). Their records share the id "1/1", as written, and are told apart by
    their lines."""
    path = written_log(tmp_path, "run.json", status=status, sample_ids=(1, "1"))
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and err == "", err
    assert [(r["id"], r["line"], r["verdict"]) for r in got] == [
        ("1/1", 1, "repeated_result_run"), ("1/1", 2, None)]
    assert [ident for ident, _ in read_inspect_log(path)] == ["1/1", "1/1"]


@needs_inspect
def test_an_eval_log_s_member_shared_by_ids_1_and_1_as_text_is_one_sample(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .eval log names a sample's member by its id's text, so samples 1 and "1" share
    samples/1_epoch_1.json, Inspect writing the later over the earlier: the sample it holds
    is one record, and the other is missing (it was read twice, two records of one sample,
    and the log said to hold 1 of 2, found by a tester); one the header does not list, read
    from a listed sample's member, is read after the listed ones (it was taken for that
    one)."""
    path = written_log(tmp_path, "run.eval", sample_ids=(1, "1"))
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    got = records(out)
    assert code == 0 and err == "", err
    assert [(r["id"], r.get("error"), r.get("verdict")) for r in got] == [
        ("1/1", "sample 1 epoch 1 is missing from the log, whose header says the evaluation "
                "succeeded", None),
        ("1/1", None, None)]
    relabelled = written_log(tmp_path, "relabelled.eval", sample_ids=("1", "b"))
    _with_header(relabelled, dataset_sample_ids=[1, "b"])
    got = records(run(["scan", str(relabelled), "-q"], monkeypatch)[1])
    assert [(r["id"], "error" in r) for r in got] == [
        ("1/1", True), ("b/1", False), ("1/1", False)]


@needs_inspect
@pytest.mark.parametrize("suffix", [".eval", ".json"])
def test_a_sample_stopped_early_does_not_stand_for_the_text_id_of_its_digits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """Sample 1 stopped early is not sample "1": a finished log lacking "1" says it missing
    (it passed unsaid, and the log was said to list 1 sample, not 2 less the one stopped)."""
    path = written_log(tmp_path, f"run{suffix}", sample_ids=(1, "1", "b"), stopped=(1,),
                       left_out=("1",))
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and err == "", err
    missing = ("1/1", "sample '1' epoch 1 is missing from the log, whose header says the "
                        "evaluation succeeded")
    # (in its place in a .eval log; after the samples a .json log holds)
    assert [(r["id"], r.get("error")) for r in records(out)] == (
        [missing, ("b/1", None)] if suffix == ".eval" else [("b/1", None), missing])


@pytest.mark.parametrize(("name", "data", "said"), [
    ("runs.json", b'{"a": 1}\n{"b": 2}\n',
     "it is not one JSON document, which a .json log is: Extra data: line 2 column 1"),
    ("table.json", b"PAR1\x80\x81\x00",
     "it is not UTF-8 text, which a .json log is: 'utf-8' codec can't decode byte 0x80"),
    ("run.json", b'{"history": [], "info": {}}',
     "its header is not an Inspect log's: eval: Field required (it is {'history': [], "),
    ("log.eval", b'{"a": 1}', "it is not a whole zip archive, which an .eval log is"),
])
def test_a_file_that_is_no_inspect_log_is_said_to_be_none_in_one_line(
        name: str, data: bytes, said: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that is no Inspect log given to the Python readers: an UnreadableLogError (a
    ValueError) saying what it is in one line, inspect_ai's or the parser's error its
    cause. pydantic's text over five lines came through on a SWE-agent trajectory, a
    UnicodeDecodeError on a Parquet file, "Extra data" on JSONL (a tester's cases); the
    command line says the same."""
    from vthread.inspect_log import UnreadableLogError

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UnreadableLogError) as raised:
        list(read_inspect_log(path))
    assert isinstance(raised.value, ValueError) and raised.value.__cause__ is not None
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value)
    if name.endswith(".eval"):
        code, _, stderr = run(["scan", "-q", str(path)], monkeypatch)
        assert code == 2 and f"cannot read the Inspect AI log: {said}" in stderr


@needs_inspect
@pytest.mark.parametrize(("samples", "kind"), [({"0": {}}, "a dict"), ("abc", "a str"),
                                                 (7, "an int")])
def test_a_json_log_whose_samples_are_no_list_is_said_so_in_one_line(
        samples: object, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json log whose header inspect_ai reads but whose samples are no list: an
    UnreadableLogError naming what they are, from the Python reader and the command line
    alike (not a sample's error record, nor pydantic's text)."""
    from vthread.inspect_log import UnreadableLogError

    path = written_log(tmp_path, "run.json")
    document = json.loads(path.read_text())
    document["samples"] = samples
    path.write_text(json.dumps(document))
    said = f"the log's samples are not a list, but {kind}"
    with pytest.raises(UnreadableLogError, match=f"^{said}$"):
        list(read_inspect_log(path))
    code, out, stderr = run(["scan", "-q", str(path)], monkeypatch)
    assert (code, out) == (2, b"") and f"cannot read the Inspect AI log: {said}" in stderr
