"""The core's translation of OpenAI and Anthropic runs against vthread.adapters: whenever the
core takes a line, its native line is the run ``read_run`` makes (the project's JavaScript
value equality, and the very JSON text), with the same source message per native message;
and the CLI writes the same bytes whichever path read a chunk."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli_chunks import assert_same_done as _same
from cli_chunks import chunk_task, read_wholly_by_the_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    BASH_TEXTS,
    anthropic_messages,
    built_in_tool_items,
    function_call_texts,
    media_chats,
    mini_swe_agent_messages,
    openai_messages,
    responses_items,
    runs,
    swe_agent_messages,
)

from benchmarks.workload import (
    generate_threads,
    to_anthropic,
    to_computer_use,
    to_openai,
    to_responses,
)
from vthread import _core, cli
from vthread._jsvalue import canonical
from vthread.documents import read_run, run_format_evidence, run_id

SAMPLES = Path(__file__).resolve().parent.parent / "vthread" / "samples"
OPTIONS: dict[str, float | None] = {
    "min_repetitions": None, "min_pattern_length": None, "max_pattern_length": None,
    "min_result_repetitions": None,
}
MESSAGES = {"openai": openai_messages(), "anthropic": anthropic_messages(),
            "responses": responses_items(), "mini-swe-agent": mini_swe_agent_messages(),
            "swe-agent": swe_agent_messages()}
TRANSLATED = st.sampled_from(["openai", "anthropic", "responses", "mini-swe-agent",
                              "swe-agent"])
REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _encode(value: Any, ascii_only: bool) -> bytes:
    return json.dumps(value, allow_nan=True, ensure_ascii=ascii_only).encode(
        "utf-8", "surrogatepass")


def _check_line(line: bytes, format_: str, messages_key: str | None = None) -> bool:
    """The core's translation of ``line`` equals Python's; whether the core took it."""
    core = _core.translate_line(line, format_, messages_key)
    if core is None:
        return False
    native_line, sources = core
    found = read_run(json.loads(line), format_, messages_key)
    assert not isinstance(found, str), f"the core translated a line Python refuses: {found}"
    ident, native, origins = found
    expected = {"id": ident, "messages": native}
    translated = json.loads(native_line)
    assert canonical(translated) == canonical(expected)
    # Stronger than JavaScript equality: the same Python values, types and key order.
    assert json.dumps(translated) == json.dumps(expected)
    assert sources == origins
    return True


@SETTINGS
@given(TRANSLATED, st.data(), st.booleans())
def test_core_translation_equals_the_adapters(format_: str, data: st.DataObject,
                                              ascii_only: bool) -> None:
    """Drawn runs (odd fields, tool results that are and are not JSON, lone surrogates,
    unknown roles, several calls, ids) translate alike, or the core declines them."""
    _check_line(_encode(data.draw(runs(MESSAGES[format_])), ascii_only), format_)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["openai", "anthropic"]), st.lists(st.sampled_from(
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"},
     {"role": "system", "content": None}]), max_size=6))
def test_plain_chats_are_taken(format_: str, messages: list[dict[str, Any]]) -> None:
    """Plain chats are translated by the core, not declined."""
    assert _check_line(_encode({"id": "r", "messages": messages}, False), format_)


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_generated_runs_are_taken(format_: str) -> None:
    """The benchmark's threads in either format are all translated by the core, alike."""
    convert = to_openai if format_ == "openai" else to_anthropic
    for index, thread in enumerate(generate_threads(150, seed=5)):
        line = _encode({"id": f"t{index}", "messages": convert(thread)}, index % 2 == 0)
        assert _check_line(line, format_)


def test_custom_tool_calls_are_read_by_python_and_taken_by_the_core(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI's custom (free-form) tool call in a chat, ``{"type": "custom", "custom":
    {"name", "input"}}``, is a request of its name with its input as is, in Python and
    taken by the core, and its replies answer it: a run of different patches is no loop,
    one of the same patch is (the whole run was refused: "function must be an object")."""
    from tests.test_cli import records
    from tests.test_cli import run as run_cli

    def turn(index: int, patch: str) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{index}", "type": "custom",
                     "custom": {"name": "apply_patch", "input": patch}}]},
                {"role": "tool", "tool_call_id": f"call_{index}", "content": "applied"}]

    task = [{"role": "user", "content": "Patch it."}]
    differing = task + [m for i in range(4) for m in turn(i, f"*** Patch {i}")]
    alike = task + [m for i in range(4) for m in turn(i, "*** Patch")]
    for messages in (differing, alike):
        assert _check_line(_encode({"id": "r", "messages": messages}, False), "openai")
    request = read_run(alike, "openai")
    assert not isinstance(request, str)
    assert request[1][1]["meta"]["activity"]["function"] == {"name": "apply_patch",
                                                             "arguments": "*** Patch"}
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"id": name, "messages": messages}) + "\n"
                            for name, messages in (("d", differing), ("a", alike))))
    code, out, _ = run_cli(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == [None, "repeated_suffix"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["assistant", "user", "system"]), BASH_TEXTS),
                max_size=8), st.booleans())
def test_mini_swe_agent_commands_are_read_alike(turns: list[tuple[str, str]],
                                                ascii_only: bool) -> None:
    """mini-swe-agent turns (fenced bash blocks of every shape, their outputs) are translated
    by the core, never declined, as ``from_mini_swe_agent`` translates them."""
    messages = [{"role": role, "content": text} for role, text in turns]
    line = _encode({"instance_id": "astropy-1", "trajectory_format": "mini-swe-agent-1",
                    "messages": messages}, ascii_only)
    assert _check_line(line, "mini-swe-agent")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["assistant", "user"]), function_call_texts(),
                          st.sampled_from([None, "ls\n", " "])), max_size=8),
       st.booleans())
def test_swe_agent_calls_are_read_alike(turns: list[tuple[str, str, str | None]],
                                        ascii_only: bool) -> None:
    """SWE-agent turns (``<function=...>`` blocks whole, cut or garbled; an ``action``) are
    translated by the core, never declined, as ``from_swe_agent`` translates them."""
    messages = [{"role": role, "content": text, **({} if action is None else {"action": action})}
                for role, text, action in turns]
    assert _check_line(_encode({"history": messages}, ascii_only), "swe-agent")


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs are not "
                    "beside the repository")
def test_published_swe_agent_runs_are_read_by_the_core() -> None:
    """The 15 published SWE-agent runs, as the CLI hands a document's runs to the core: all
    taken, their records what Python's reading writes."""
    lines = [cli._run_line(json.loads(path.read_bytes()))
             for path in sorted((REALDATA / "swe-agent").glob("*.traj"))]
    assert len(lines) == 15
    read_wholly_by_the_core(_task(lines, "swe-agent"))


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs are not "
                    "beside the repository")
def test_published_mini_swe_agent_runs_are_read_by_the_core() -> None:
    """All 500 published mini-swe-agent runs (Gemini 3 Pro on SWE-bench Verified) are read by
    the core, none declined, and their records are what Python's reading writes."""
    with gzip.open(REALDATA / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz") as f:
        lines = f.read().splitlines()
    read_wholly_by_the_core(_task(lines, "mini-swe-agent"))


@pytest.mark.parametrize(("line", "format_"), [
    (b'[{"role":"tool","tool_call_id":"c","content":"NaN"}]', "openai"),
    (b'[{"role":"tool","content":"[\\"\\\\ud800\\"]"}]', "openai"),
    # json.loads reads it or not depending on the recursion limit.
    (json.dumps([{"role": "tool", "content": "[" * 1100 + "]" * 1100}]).encode(), "openai"),
    (b'[{"role":"assistant","tool_calls":[{"id":1,"function":{"name":"a"}}]}]', "openai"),
    (b'[{"role":"user","content":3}]', "openai"),
    (b'[{"role":"user","content":{}}]', "anthropic"),
    (b'[{"role":"user","content":"\\ud800"}]', "anthropic"),
])
def test_unusual_lines_are_declined(line: bytes, format_: str) -> None:
    """What Python alone reads exactly (or refuses) is left to it."""
    assert _core.translate_line(line, format_) is None


@pytest.mark.parametrize(("run", "expected"), [
    ('{"task_id":3,"trial":1}', "3/1"),
    ('{"task_id":1.5,"trial":0}', "1.5/0"),
    ('{"task_id":"t","trial":1.0}', "t/1"),
    ('{"task_id":true,"trial":null}', True),
    ('{"task_id":null,"trial":false}', "null/false"),
    ('{"task_id":"a","trial":[1,2.50,{"b":1e21}]}', 'a/[1,2.5,{"b":1e+21}]'),
    ('{"task_id":"t\\u00e9","trial":"x"}', "t\u00e9/x"),
])
def test_a_task_and_trial_are_joined_as_the_file_writes_them(run: str, expected: Any) -> None:
    """tau-bench's ``task_id`` and ``trial`` joined by the core and by Python alike, each part
    as JSON writes it (Python's ``str()`` wrote ``1.0``, ``True``, ``None``: ids the file
    does not hold), and a null trial left out (``"t/None"`` was written)."""
    line = run[:-1] + ',"traj":[]}'
    assert run_id(json.loads(line)) == expected
    translated = _core.translate_line(line.encode(), "openai")
    assert translated is not None
    assert json.loads(translated[0])["id"] == expected


@pytest.mark.parametrize("convert", [to_responses, to_computer_use])
def test_generated_responses_runs_are_taken_and_read_alike(convert: Any) -> None:
    """The benchmark's threads as Responses items, and as a computer-use agent's (its actions
    and screenshots as a built-in tool's items, with ids and statuses on each: all left to
    Python before, 5.4x the time), are translated by the core, as Python translates them,
    and a chunk of them writes Python's records byte for byte."""
    lines = [_encode({"id": f"t{index}", "input": convert(thread)}, index % 2 == 0)
             for index, thread in enumerate(generate_threads(300, seed=12))]
    for line in lines[:100]:
        assert _check_line(line, "responses", messages_key="input")
    task = replace(_task(lines, "responses"), messages_key="input")
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    assert sum(done.stats.verdicts[1:]) > 20
    _same(done, cli._scan_chunk_in_python(task))


def test_every_built_in_tool_python_reads_the_core_reads_alike() -> None:
    """Each built-in tool's item of ``adapters.RESPONSES_MARKS`` (the Python table), alone
    and after a call of its tool, is taken by the core and read as Python reads it: a tool
    added to one table and not the other fails here (its runs would be left to Python, or
    read otherwise)."""
    from vthread.adapters import _RESPONSES_TOOL_ITEMS, RESPONSES_MARKS, built_in_tool

    kinds = sorted(RESPONSES_MARKS - _RESPONSES_TOOL_ITEMS)
    assert len(kinds) == 15
    for kind in kinds:
        found = built_in_tool(kind)
        assert found is not None
        tool, answers = found
        item = {"type": kind, "id": "i1", "call_id": "c1", "status": "completed",
                "action": {"tool": tool}}
        run_ = [{"type": f"{tool}_call", "call_id": "c1", "query": "q"}, item] if answers \
            else [item]
        assert _check_line(_encode({"id": kind, "input": run_}, False), "responses",
                           messages_key="input"), kind


@SETTINGS
@given(st.lists(built_in_tool_items(), max_size=8), st.booleans())
def test_built_in_tools_items_are_translated_alike(items: list[Any], ascii_only: bool) -> None:
    """Built-in tools' items (calls and outputs of every tool, found by ``call_id`` or a local
    shell's ``id``, with bookkeeping fields and ``*_id`` fields dropped) translate alike;
    the core declines them only for a number or boolean as a call's id, a surrogate (lone,
    or paired in a line of no UTF-8) or a number JSON has not (NaN, Infinity), all of which
    it leaves to Python's reading."""
    line = _encode({"id": "r", "input": items}, ascii_only)
    taken = _check_line(line, "responses", messages_key="input")
    numbered = any(type(item.get(key)) in (int, float, bool)
                   for item in items for key in ("call_id", "id"))
    surrogate = re.search("[\ud800-\udfff]", json.dumps(items, ensure_ascii=False))
    assert taken or numbered or surrogate or re.search(rb"NaN|Infinity", line)


@pytest.mark.parametrize("line", [
    b'[{"type":"function_call","name":"a","call_id":1}]',  # a numeric call id
    b'[{"type":3}]',
    b'[{"type":null}]',
    b'[{"type":"message","role":1}]',
    b'[{"type":"function_call_output","output":3}]',
    b'[{"type":"function_call_output","output":"NaN"}]',
])
def test_unusual_responses_items_are_declined(line: bytes) -> None:
    """What Python alone reads exactly (or refuses) is left to it."""
    assert _core.translate_line(line, "responses") is None


@pytest.mark.parametrize("format_", ["openai", "responses", "anthropic"])
def test_a_part_typed_by_a_list_or_object_is_no_text(format_: str) -> None:
    """A content part or block whose type is a list or an object names no text part and no
    medium (Python's ``in`` of a set raised TypeError on it, which ended the run); the core
    reads it alike, beside an image that is carried."""
    image = {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
    for kind in (["text"], {"a": 1}, ["image"]):
        content = [{"type": kind, "text": "a"}, {"type": "text", "text": "b"}, image]
        message = ({"type": "message", "role": "user", "content": content}
                   if format_ == "responses" else {"role": "user", "content": content})
        assert _check_line(_encode([message], False), format_)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["openai", "anthropic", "responses", "mini-swe-agent", "swe-agent"]),
       st.data(), st.booleans())
def test_media_is_translated_by_the_core(format_: str, data: st.DataObject,
                                         ascii_only: bool) -> None:
    """Images, audio, files and documents beside texts, calls and results, in a tool result
    (its content's parts as given) or a message (in its first native message's
    ``meta.media``): the core takes the run, and writes what the adapters make."""
    messages = data.draw(media_chats(format_))
    line = _encode({"id": "r", "messages": messages}, ascii_only)
    assert _check_line(line, format_)


def _with_screenshots(messages: list[dict[str, Any]], format_: str) -> list[dict[str, Any]]:
    """The run with an image beside its first user text and every tool result an image of
    that result (the same image for the same result, so loops stay loops)."""
    def shot(text: Any) -> dict[str, Any]:
        data = hashlib.sha256(json.dumps(text).encode()).hexdigest()[:16]
        if format_ == "anthropic":
            return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                "data": data}}
        return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}

    out = []
    shown = False
    for message in messages:
        message = dict(message)
        content = message.get("content")
        if message["role"] == "tool":
            message["content"] = [shot(content)]
        elif message["role"] == "user" and isinstance(content, list):
            message["content"] = [{**block, "content": [shot(block["content"])]}
                                  if block.get("type") == "tool_result" else block
                                  for block in content]
        if message["role"] == "user" and isinstance(content, str) and not shown:
            message["content"] = [{"type": "text", "text": content}, shot("task")]
            shown = True
        out.append(message)
    return out


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_runs_with_screenshots_are_read_wholly_by_the_core(format_: str) -> None:
    """The benchmark's threads with an image beside the task and an image as every tool
    result: no line left to Python, the records what Python's reading writes."""
    convert = to_openai if format_ == "openai" else to_anthropic
    lines = [_encode({"id": f"t{i}", "messages": _with_screenshots(convert(t), format_)},
                     i % 2 == 0) for i, t in enumerate(generate_threads(300, seed=8))]
    assert b"image" in lines[0]
    done = read_wholly_by_the_core(_task(lines, format_))
    assert sum(done.stats.verdicts[1:]) > 20


def test_tool_text_that_is_not_json_stays_text() -> None:
    """Texts json.loads refuses are results as text, not a reason to decline."""
    for text in ["[1,]", "\ufeff[]", "", " 1 2", "[" * 50 + "]" * 49]:
        line = _encode([{"role": "tool", "content": text}], False)
        assert _check_line(line, "openai"), text


# ------------------------------------------------------------------------------- CLI chunks


def _task(lines: list[bytes], format_: str, threads: int = 1,
          count_tokens: bool = True) -> Any:
    return chunk_task(lines, format_, OPTIONS, count_tokens, threads)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TRANSLATED, st.data(), st.booleans())
def test_core_chunk_equals_python_chunk(format_: str, data: st.DataObject,
                                        count_tokens: bool) -> None:
    """Whenever the core takes a chunk of drawn runs, it writes what Python's reading
    writes: records byte for byte (loops in the file's own message numbers) and counts."""
    lines = [_encode(run, False) for run in data.draw(
        st.lists(runs(MESSAGES[format_]), min_size=1, max_size=5))]
    task = _task(lines, format_, count_tokens=count_tokens)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
@pytest.mark.parametrize("threads", [1, 3])
def test_core_takes_generated_chunks(format_: str, threads: int) -> None:
    """The benchmark's threads (a sixth of them looping) and the bundled format samples go
    through the core, on one worker thread or several, and read as Python reads them."""
    convert = to_openai if format_ == "openai" else to_anthropic
    lines = [_encode({"id": f"t{i}", "messages": convert(t)}, False)
             for i, t in enumerate(generate_threads(600, seed=4))]
    task = _task(lines, format_, threads=threads)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    assert sum(done.stats.verdicts[1:]) > 50
    _same(done, cli._scan_chunk_in_python(task))
    sample = (SAMPLES / f"{format_}.jsonl").read_bytes().splitlines()
    task = _task(sample, format_, threads=threads)
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    _same(done, cli._scan_chunk_in_python(task))


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_cli_output_is_the_same_either_way(format_: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``vthread scan`` on a file in either format writes the same records and summary
    through the core as through Python alone (the core's reading turned off)."""
    convert = to_openai if format_ == "openai" else to_anthropic
    source = tmp_path / f"{format_}.jsonl"
    lines = [_encode({"id": f"t{i}", "messages": convert(t)}, i % 3 == 0)
             for i, t in enumerate(generate_threads(400, seed=9))]
    lines.insert(7, b'{"id": "odd", "messages": [{"role": "user", "content": "\\ud800"}]}')
    source.write_bytes(b"\n".join(lines[:200]) + b"\nnot json\n" + b"\n".join(lines[200:]))
    monkeypatch.setattr(cli, "CHUNK_LINES", 64)

    def scan(name: str) -> tuple[bytes, str]:
        out, summary = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json"
        assert cli.main(["scan", str(source), "-o", str(out), "--summary", str(summary),
                         "--quiet"]) == 0
        report = json.loads(summary.read_text())
        report.pop("seconds", None), report.pop("started", None)  # (the clock's)
        return out.read_bytes(), json.dumps(report)

    declined = []
    original = cli._read_in_core

    def counted(task: Any) -> Any:
        raw = original(task)
        declined.append(None if raw is None else len(raw["declined"]))
        return raw

    monkeypatch.setattr(cli, "_read_in_core", counted)
    core = scan("core")
    # Every chunk is the core's; the odd lines alone went to Python.
    assert None not in declined and sum(declined) == 2
    monkeypatch.setattr(cli, "_read_in_core", lambda task: None)
    assert core == scan("python")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TRANSLATED, st.data(),
       st.sampled_from(["conversation", "history", "messages"]),
       st.sampled_from(["uuid", "id", "instance_id"]))
def test_translation_under_given_keys_equals_the_adapters(
        format_: str, data: st.DataObject, messages_key: str, id_key: str) -> None:
    """--messages-key and --id-key: the core finds a run's messages and id where
    ``read_run`` does (the id null where the run lacks the key), or declines."""
    messages = data.draw(st.lists(MESSAGES[format_], max_size=6))
    run: dict[str, Any] = {messages_key: messages}
    for key in data.draw(st.lists(st.sampled_from(["uuid", "id", "task_id"]), unique=True)):
        run[key] = data.draw(st.one_of(st.text(max_size=3), st.integers(0, 9)))
    line = _encode(run, False)
    core = _core.translate_line(line, format_, messages_key, id_key)
    if core is None:
        return
    found = read_run(json.loads(line), format_, messages_key, id_key)
    assert not isinstance(found, str), f"the core translated a line Python refuses: {found}"
    ident, native, origins = found
    assert json.loads(core[0]) == {"id": ident, "messages": native}
    assert core[1] == origins


@pytest.mark.parametrize("format_", ["openai", "anthropic"])
def test_core_takes_translated_chunks_under_given_keys(format_: str) -> None:
    """Generated runs under other keys are translated in the core, read as Python reads them."""
    convert = to_openai if format_ == "openai" else to_anthropic
    lines = [_encode({"uuid": f"t{i}", "steps": convert(t)}, False)
             for i, t in enumerate(generate_threads(300, seed=6))]
    task = replace(_task(lines, format_), messages_key="steps", id_key="uuid")
    done = cli._scan_chunk_in_core(task)
    assert done is not None
    assert done.output.startswith(b'{"id":"t0",')
    _same(done, cli._scan_chunk_in_python(task))


# Runs mixing each chat format's messages with SWE-agent's (some holding an ``action``), the
# declaration of a mini-swe-agent run now and then: what a detected format yields to.
MIXED_WITH_SWE_AGENT = st.builds(
    lambda run_, declared: {**run_, "trajectory_format": "mini-swe-agent-1"}
    if declared and isinstance(run_, dict) else run_,
    st.one_of(*(runs(st.one_of(MESSAGES[format_], swe_agent_messages()))
                for format_ in ("openai", "anthropic", "responses"))),
    st.integers(0, 6).map(lambda drawn: drawn == 0))


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(TRANSLATED, st.lists(MIXED_WITH_SWE_AGENT, min_size=1, max_size=5))
def test_core_reads_a_detected_format_s_runs_as_python_does(format_: str,
                                                            drawn: list[Any]) -> None:
    """In a file whose format was detected, each run is read in the format it shows or
    declares (``adapters::run_reading_format``, ``documents.run_reading_format``): SWE-agent's
    for a run whose assistant turns hold SWE-agent's ``action``, mini-swe-agent's for a run
    declaring itself one. The core's chunk writes what Python's reading writes, and the
    core's evidence past the first threads (``undeclared``) is Python's."""
    lines = [_encode(run_, False) for run_ in drawn]
    task = replace(_task(lines, format_), declared_wins=True)
    done = cli._scan_chunk_in_core(task)
    if done is not None:
        _same(done, cli._scan_chunk_in_python(task))
    for line, run_ in zip(lines, drawn, strict=True):
        read, found = _core.line_format_evidence(line, undeclared=True)
        if read:
            assert found == run_format_evidence(run_, undeclared=True), line


def test_a_swe_agent_history_in_a_detected_format_is_read_as_swe_agent_s() -> None:
    """The rule itself, either way: a history whose assistant turns hold an ``action`` is
    read as SWE-agent's (its actions calls) in a file detected as any other chat format,
    and as the format given when one is; a history without one, or whose other messages
    show another format (an Anthropic block), is read in the file's."""
    history = [{"role": "user", "content": "task"},
               {"role": "assistant", "content": "Thought: look.", "action": "ls"},
               {"role": "user", "content": "a.py"}]
    # The same command and output five times, each with another thought: a loop only when
    # the actions are read.
    line = _encode({"history": [history[0], *(
        message for attempt in range(5) for message in (
            {**history[1], "content": f"Thought {attempt}"}, history[2]))]}, False)
    for format_ in ("openai", "anthropic", "mini-swe-agent"):
        task = chunk_task([line], format_, OPTIONS)
        detected = read_wholly_by_the_core(replace(task, declared_wins=True))
        given = read_wholly_by_the_core(task)
        assert detected.output != given.output, format_
        assert detected.output == read_wholly_by_the_core(chunk_task(
            [line], "swe-agent", OPTIONS)).output, format_
    assert read_run({"history": history}, "openai", declared_wins=True)[1][1] == {
        "type": "bot", "text": "Thought: look."}
    assert read_run({"history": history}, "openai", declared_wins=True)[1][2]["type"] == (
        "activity")
    for other in ([{**history[1], "action": None}], [*history, {"role": "assistant",
                   "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}]):
        run_ = {"history": [history[0], *other]}
        assert read_run(run_, "openai", declared_wins=True) == read_run(run_, "openai")
