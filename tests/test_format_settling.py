"""Format detection past a head of plain chats: the first thread further on to show a chat
format settles it, in ``vthread scan`` (in the first chunk and in later ones), ``scan`` and
``scan_arrow``; a later thread in another format is warned of, never fatal."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import vthread
from tests.test_cli import records, run
from vthread import _core, cli
from vthread.documents import DETECT_THREADS

pa = pytest.importorskip("pyarrow")

PLAIN = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
         {"role": "assistant", "content": "hello", "usage": {"completion_tokens": 3}}]


def anthropic_loop(ask: Any = "Fix the build.") -> list[dict[str, Any]]:
    """An Anthropic run that retries one failing command: a result run when its tool blocks
    are read, no loop when they are lost (each turn's text differs)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": ask}]
    for turn in range(8):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Attempt {turn}: rerun."},
            {"type": "tool_use", "id": f"t{turn}", "name": "bash",
             "input": {"command": "make"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{turn}",
             "content": "error: missing header"}]})
    return messages


OPENAI_CALL = [{"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"}]


def write(path: Path, threads: list[list[dict[str, Any]]]) -> Path:
    path.write_text("".join(json.dumps({"id": f"r{row}", "messages": thread}) + "\n"
                            for row, thread in enumerate(threads)))
    return path


def alone(record: dict[str, Any]) -> dict[str, Any]:
    """A record without where it was read."""
    return {key: value for key, value in record.items() if key not in ("id", "file", "line")}


def test_the_loop_alone_reads_as_anthropic_only() -> None:
    """The fixture: its loop is found in its own format, and refused as OpenAI's (its
    tool blocks were media, the loop lost)."""
    assert vthread.scan([anthropic_loop()], format="auto").names == ["repeated_result_run"]
    with pytest.raises(ValueError, match="thread 0: openai format: message 1 holds a "
                                         "tool_use block"):
        vthread.scan([anthropic_loop()], format="openai")


@pytest.mark.parametrize("chunk_lines", [cli.CHUNK_LINES, 16])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cli_reads_a_thread_past_plain_chats_in_its_format(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_lines: int, jobs: str) -> None:
    """70 plain chats then an Anthropic loop, in the first chunk or a later one: the loop's
    record is the loop alone's, the file is said to be Anthropic's."""
    monkeypatch.setattr(cli, "CHUNK_LINES", chunk_lines)
    path = write(tmp_path / "runs.jsonl", [PLAIN] * 70 + [anthropic_loop()])
    only = write(tmp_path / "loop.jsonl", [anthropic_loop()])
    code, out, err = run(["scan", str(path), "-j", jobs], monkeypatch)
    read = records(out)
    assert code == 0 and len(read) == 71
    assert alone(read[70]) == alone(records(run(["scan", str(only), "-q"], monkeypatch)[1])[0])
    assert read[70]["verdict"] == "repeated_result_run"
    assert "anthropic (detected" in err
    # Lines 1 to 64 may be read as OpenAI's before line 71 shows the format, but as plain
    # chats of text content they read alike as Anthropic's: nothing to warn of.
    assert "warning" not in err


MULTIPART = [{"role": "user", "content": [{"type": "text", "text": "Look:"},
                                          {"type": "text", "text": "the log."}]}]
"""A plain chat that reads otherwise as Anthropic's (a message per block) than as OpenAI's."""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_chunks_read_before_the_format_settles_are_warned_of_when_they_differ(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    """Plain chats read as OpenAI's in a chunk before the one that settles the format are
    said not to be read again only when one of them reads otherwise in the settled format,
    the first such named: one in the first threads, or in a later chunk."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 16)
    for at in (6, 40):
        threads = [PLAIN] * 70 + [anthropic_loop()]
        threads[at] = MULTIPART
        path = write(tmp_path / f"at{at}.jsonl", threads)
        code, out, err = run(["scan", str(path), "-q", "-j", jobs], monkeypatch)
        assert code == 0 and records(out)[70]["verdict"] == "repeated_result_run"
        assert ("no thread of lines 1 to 64 showed a format (plain chats: read as openai), "
                f"and line 71 is anthropic, the format the rest is read in; line {at + 1} is "
                "the first of them that reads differently as anthropic") in err, err
    # In the chunk that settles it, a chat is read in the settled format: nothing to say.
    threads = [PLAIN] * 70 + [MULTIPART, anthropic_loop()]
    code, _, err = run(["scan", str(write(tmp_path / "late.jsonl", threads)), "-q"],
                       monkeypatch)
    assert code == 0 and err == ""


@pytest.mark.parametrize(("chat", "settler", "format_"), [
    ([{"role": "user", "content": "a", "type": "text"}],
     [{"type": "message", "role": "user", "content": "a"}], "responses"),
    ([{"role": "assistant", "content": "Run:\n```bash\nls\n```"}],
     [{"role": "assistant", "content": "```bash\nls\n```"},
      {"role": "user", "content": "<returncode>0</returncode>"}], "mini-swe-agent"),
])
def test_each_chat_format_is_warned_of_by_its_own_shapes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: list[dict[str, Any]],
        settler: list[dict[str, Any]], format_: str) -> None:
    """A chat that reads otherwise only in one chat format is warned of when that format
    settles, and not when Anthropic's does."""
    for then, warned in ((settler, True), (anthropic_loop(), False)):
        _check_warned_of_line_3(tmp_path, monkeypatch, chat, then, format_, warned)


def _check_warned_of_line_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            chat: list[dict[str, Any]], then: list[dict[str, Any]],
                            format_: str, warned: bool) -> None:
    """``chat`` as line 3 among plain chats, ``then`` settling the format at line 71, in
    chunks of 16 lines: whether the scan says line 3 reads differently as ``format_``."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 16)
    threads = [PLAIN] * 2 + [chat] + [PLAIN] * 67 + [then]
    code, _, err = run(["scan", str(write(tmp_path / "runs.jsonl", threads)), "-q"],
                       monkeypatch)
    said = f"line 3 is the first of them that reads differently as {format_}"
    assert code == 0 and (said in err) == warned, err
    assert ("not read again" in err) == warned, err


# A plain chat whose one text part is written with its keys in another order (looked at)
# and a 23-digit number (which the core leaves to Python): it reads alike in every format.
BIG_NUMBER = [{"role": "user", "content": [{"text": "a", "type": "text"}], "n": 10 ** 22}]


@pytest.mark.parametrize(("chat", "settler", "format_", "warned"), [
    (BIG_NUMBER, None, "anthropic", False),
    (BIG_NUMBER + MULTIPART, None, "anthropic", True),
    ([{"role": "user", "content": "", "type": "user"}],
     [{"type": "message", "role": "user", "content": "a"}], "responses", False),
    ([{"role": "", "type": ""}], [{"type": "message", "role": "user", "content": "a"}],
     "responses", False),
    ([{"role": "user", "content": "a", "type": "message"},
      {"role": "user", "content": "", "type": "user"}],
     [{"type": "message", "role": "user", "content": "a"}], "responses", False),
    ([{"role": "user", "content": "a", "type": "user"}],
     [{"type": "message", "role": "user", "content": "a"}], "responses", True),
])
def test_a_chat_is_warned_of_only_when_python_reads_it_otherwise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat: list[dict[str, Any]],
        settler: list[dict[str, Any]] | None, format_: str, warned: bool) -> None:
    """A plain chat the core does not judge (a number too long for it) is judged by
    Python's reading, and one with a ``type`` is said to read otherwise as Responses items
    only when it does (a type that is its role's, with no text, or ``message``, reads alike):
    no warning of chats that read alike."""
    then = anthropic_loop() if settler is None else settler
    _check_warned_of_line_3(tmp_path, monkeypatch, chat, then, format_, warned)


@pytest.mark.parametrize("text", ["hi", "role"])
@pytest.mark.parametrize("chunk_lines", [cli.CHUNK_LINES, 16])
def test_a_native_thread_before_the_settling_one_is_warned_of(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_lines: int, text: str) -> None:
    """A native thread past the first threads (all plain chats) and before the one that
    settles the format, in its chunk, is read in the settled format: warned of, as one
    after it is (one whose text is ``role`` too, which is no message's role)."""
    monkeypatch.setattr(cli, "CHUNK_LINES", chunk_lines)
    native = [{"type": "user", "text": text}, {"type": "bot", "text": "ok"}]
    threads = [PLAIN] * 100 + [native] + [PLAIN] * 6 + [anthropic_loop()]
    code, out, err = run(["scan", str(write(tmp_path / "runs.jsonl", threads)), "-q"],
                         monkeypatch)
    assert code == 0 and records(out)[107]["verdict"] == "repeated_result_run"
    assert ("line 108, the first after plain chats to show a format, is anthropic, the format "
            "the rest is read in, but line 101 looks like native: it is read as anthropic"
            ) in err, err


def test_a_parquet_file_settles_in_a_later_chunk(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The same in a Parquet file, its rows read a chunk at a time."""
    import pyarrow.parquet as pq

    monkeypatch.setattr(cli, "CHUNK_LINES", 16)
    path = tmp_path / "runs.parquet"
    threads = [PLAIN] * 70 + [anthropic_loop()]
    pq.write_table(pa.table({"messages": [json.dumps(thread) for thread in threads]}), path)
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and records(out)[70]["verdict"] == "repeated_result_run"
    assert "anthropic (detected" in err and "warning" not in err
    threads[4] = MULTIPART
    pq.write_table(pa.table({"messages": [json.dumps(thread) for thread in threads]}), path)
    err = run(["scan", str(path)], monkeypatch)[2]
    assert "row 71 is anthropic" in err and "row 5 is the first of them" in err


def test_a_file_of_plain_chats_reads_as_before(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain chats only, in one chunk or many: read as OpenAI's, silently."""
    path = write(tmp_path / "plain.jsonl", [PLAIN] * 100)
    given = run(["scan", str(path), "-q", "--format", "openai"], monkeypatch)[1]
    for chunk_lines in (cli.CHUNK_LINES, 16):
        monkeypatch.setattr(cli, "CHUNK_LINES", chunk_lines)
        code, out, err = run(["scan", str(path)], monkeypatch)
        assert code == 0 and out == given
        assert "openai (detected" in err and "warning" not in err


def test_a_format_among_the_first_threads_is_unchanged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decisive thread among the first ``DETECT_THREADS`` fixes the format as before: a
    thread in another format past them draws no word (it is read in the file's), and two
    formats among them are still fatal."""
    threads = [PLAIN] * 3 + [anthropic_loop()] + [PLAIN] * (DETECT_THREADS + 10) + [OPENAI_CALL]
    path = write(tmp_path / "runs.jsonl", threads)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and err == ""
    assert out == run(["scan", str(path), "-q", "--format", "anthropic"], monkeypatch)[1]
    mixed = write(tmp_path / "mixed.jsonl", [PLAIN, anthropic_loop(), OPENAI_CALL])
    code, _, err = run(["scan", str(mixed), "-q"], monkeypatch)
    assert code == 2 and "in different formats" in err


def test_a_later_thread_in_another_format_is_warned_of(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past plain chats, an Anthropic loop settles the format; an OpenAI call after it is
    named, and refused where read (its tool_calls were lost as Anthropic's): an error
    record of the command, an error row of ``scan_arrow``, the ValueError of ``scan``,
    which reads no thread it cannot read."""
    threads = [PLAIN] * 70 + [anthropic_loop(), PLAIN, OPENAI_CALL]
    path = write(tmp_path / "runs.jsonl", threads)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 73
    assert records(out)[70]["verdict"] == "repeated_result_run"
    refused = "anthropic format: message 0 has a 'tool_calls' key"
    assert records(out)[72]["error"].startswith(refused)
    assert ("line 71, the first after plain chats to show a format, is anthropic, the format "
            "the rest is read in, but line 73 looks like openai: it is read as anthropic: an "
            "error where it holds what only its own format holds, else maybe read "
            "wrongly") in err
    with pytest.warns(UserWarning, match="thread 70, the first after plain chats .* but "
                                         "thread 72 looks like openai") as said, \
            pytest.raises(ValueError, match=f"thread 72: {refused}"):
        vthread.scan(threads, format="auto")
    table = pa.table({"messages": [json.dumps(thread) for thread in threads]})
    with pytest.warns(UserWarning, match="row 70, the first .* but row 72 looks like openai"
                      ) as said_of_rows:
        read = vthread.scan_arrow(table)
    assert read.column("verdict").to_pylist()[70] == "repeated_result_run"
    assert read.column("error").to_pylist()[72].startswith(refused)
    # (each warning points at the caller's line)
    assert said[0].filename == said_of_rows[0].filename == __file__


def test_scan_reads_a_thread_past_plain_chats_in_its_format() -> None:
    """``scan(format="auto")``: the loop's row is the loop alone's, with no warning; plain
    chats only read as OpenAI's."""
    expected = vthread.scan([anthropic_loop()], format="auto").record(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = vthread.scan([PLAIN] * 70 + [anthropic_loop()], format="auto")
        assert found.record(70) == expected
        plain = vthread.scan([PLAIN] * 70, format="auto")
    given = vthread.scan([PLAIN] * 70, format="openai")
    assert [plain.record(row) for row in range(70)] == [given.record(row) for row in range(70)]


@pytest.mark.parametrize("kind", ["text", "structs"])
def test_scan_arrow_reads_a_row_past_plain_chats_in_its_format(kind: str) -> None:
    """``scan_arrow``, a column of JSON text or of message structs: the loop's row is the
    loop alone's; plain chats only read as OpenAI's."""
    plain = [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]

    # (every content a list of blocks: a column of structs holds one type)
    loop = anthropic_loop([{"type": "text", "text": "Fix the build."}])

    def table(threads: list[list[dict[str, Any]]]) -> Any:
        if kind == "text":
            return pa.table({"messages": [json.dumps(thread) for thread in threads]})
        return pa.table({"messages": threads})

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = vthread.scan_arrow(table([plain] * 70 + [loop]))
        only = vthread.scan_arrow(table([loop]))
        plain_only = vthread.scan_arrow(table([plain] * 70))
    assert found.slice(70).to_pylist() == only.to_pylist()
    assert plain_only.equals(vthread.scan_arrow(table([plain] * 70), format="openai"))


def test_the_window_after_a_settling_thread_runs_on_into_the_next_chunk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A settling thread that ends its chunk: the threads after it in the next chunk are
    looked at for another format too, as ``scan`` looks at them (a reviewer's finding: an
    OpenAI thread right after the chunk's edge was read as Anthropic with no word), and a
    warning names each format with its own lines (all were said to look like the first's)."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 100)
    native = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "ok"}]
    threads = [PLAIN] * 99 + [anthropic_loop(), OPENAI_CALL, native, OPENAI_CALL]
    path = write(tmp_path / "edge.jsonl", threads)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == len(threads)
    assert ("line 100, the first after plain chats to show a format, is anthropic, the "
            "format the rest is read in, but lines 101, 103 look like openai, line 102 "
            "like native") in err, err
    with pytest.warns(UserWarning) as said, pytest.raises(ValueError, match="thread 100: "):
        vthread.scan(threads[:101] + threads[102:], format="auto")
    assert any("threads 100, 101 look like openai" in str(w.message) for w in said)


def test_the_python_byte_twin_keeps_a_role_given_as_a_str_subclass() -> None:
    """A role given as a str Enum settles as its text does, so the quick test may not pass
    over it (it asked for an exact str: a reviewer's finding)."""
    from enum import StrEnum

    from vthread.documents import _may_settle, run_format_evidence

    class Role(StrEnum):
        developer = "developer"

    thread = [{"role": Role.developer, "content": "x"}, {"role": "user", "content": "hi"}]
    assert run_format_evidence(thread) == ("openai", True)
    assert _may_settle(thread)


def test_tool_definitions_beside_plain_chats_are_not_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain chats of an OpenAI request log, each with the run's tool definitions (full of
    "function" and "type"), are passed over by the byte test past the first threads, not
    judged one by one; a tool result after them still settles the format."""
    tools = [{"type": "function", "function": {"name": "tool_use", "description": "a tool",
                                               "parameters": {"type": "object"}}}]
    path = tmp_path / "requests.jsonl"
    lines = [{"messages": PLAIN, "tools": tools}] * 100 + [{"messages": OPENAI_CALL,
                                                              "tools": tools}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    judged: list[bytes] = []
    line_evidence = cli._line_evidence
    monkeypatch.setattr(cli, "_line_evidence",
                        lambda line, messages_key, *keep, **keywords: judged.append(line)
                        or line_evidence(line, messages_key, *keep, **keywords))
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and len(records(out)) == 101 and err == ""
    assert len(judged) == 1 and b'"role": "tool"' in judged[0]


@pytest.mark.parametrize("kind", ["text", "structs"])
def test_scan_arrow_and_a_parquet_file_warn_of_a_native_row_before_the_settling_one(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A native row past the first rows (all plain chats) and before the one that settles
    the format is read in the settled format: ``scan_arrow`` and ``vthread scan X.parquet``
    warn of it as ``vthread scan`` does of such a JSONL line (scan_arrow said nothing)."""
    import pyarrow.parquet as pq

    plain = [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]
    native = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "ok"}]
    loop = anthropic_loop([{"type": "text", "text": "Fix the build."}])
    threads = [plain] * 100 + [native] + [plain] * 6 + [loop]
    column = ([json.dumps(thread) for thread in threads] if kind == "text"
              else pa.array(threads))
    table = pa.table({"messages": column})
    with pytest.warns(UserWarning) as said:
        verdicts = vthread.scan_arrow(table).column("verdict").to_pylist()
    assert verdicts[107] == "repeated_result_run"
    assert [str(w.message) for w in said] == [
        "format='auto': row 107, the first after plain chats to show a format, is anthropic, "
        "the format the rest is read in, but row 100 looks like native: it is read as "
        "anthropic: an error where it holds what only its own format holds, else maybe "
        "read wrongly"]
    assert said[0].filename == __file__
    path = tmp_path / "runs.parquet"
    pq.write_table(table, path)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and records(out)[107]["verdict"] == "repeated_result_run"
    assert ("row 108, the first after plain chats to show a format, is anthropic, the format "
            "the rest is read in, but row 101 looks like native: it is read as anthropic"
            ) in err, err


def _declared_mini_run(index: int) -> dict[str, Any]:
    """A healthy mini-swe-agent run declaring itself one."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"},
                                      {"role": "user", "content": f"task {index}"}]
    for step in range(3):
        messages += [{"role": "assistant",
                      "content": f"THOUGHT: step {step}\n\n```bash\ncat f{step}.py\n```"},
                     {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n"
                                                 f"line {step}\n</output>"}]
    # (in mini-swe-agent's order: the declaration after the messages)
    return {"messages": messages, "trajectory_format": "mini-swe-agent-1",
            "instance_id": f"m{index}"}


def _swe_agent_loop() -> list[dict[str, Any]]:
    """A SWE-agent history listing the same files again and again, each time with another
    thought: a loop read as SWE-agent's (its action and observation), none as a chat's."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "sys", "agent": "primary"},
                                     {"role": "user", "content": "task", "agent": "primary"}]
    for attempt in range(5):
        history += [{"role": "assistant", "agent": "primary", "action": "ls",
                     "content": f"Thought {attempt}: the list may have changed; again."},
                    {"role": "user", "content": "a.py", "agent": "primary"}]
    return history


@pytest.mark.parametrize("declared", [20, DETECT_THREADS + 6])
def test_runs_declaring_mini_swe_agent_settle_no_format(
        declared: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch whose first runs all declare themselves mini-swe-agent runs, then another
    harness's (SWE-agent histories, declaring nothing): the declared runs are read as
    mini-swe-agent runs and the others in the format the first of them shows, as when they
    come first, by vthread scan (JSONL and Parquet), vthread.scan and scan_arrow alike. The
    declared runs settled the format: the SWE-agent runs were read as mini-swe-agent runs
    and their loop missed, silently (past the first 16 rows for scan_arrow, 64 threads for
    the command and vthread.scan). The SWE-agent runs (their assistant turns hold
    SWE-agent's ``action``) are read as SWE-agent's either way: among the first threads,
    beside declared runs alone, they name the file's format; past them they settle none,
    and the file is named by its declared runs. A file of declared runs alone is still
    named mini-swe-agent, and each read as before."""
    runs: list[Any] = [_declared_mini_run(index) for index in range(declared)]
    runs += [{"instance_id": "swe", "history": _swe_agent_loop()},
             {"instance_id": "swe2", "history": _swe_agent_loop()[:4]}]
    expected = [None] * declared + ["repeated_result_run", None]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == expected
    named = "swe-agent" if declared < DETECT_THREADS else "mini-swe-agent"
    assert f" {named} (detected; {path})" in err, err
    assert vthread.scan(runs, format="auto").names == expected
    table = pa.table({"instance_id": [item["instance_id"] for item in runs],
                      "trajectory_format": [item.get("trajectory_format") for item in runs],
                      "messages": [json.dumps(item.get("messages") or item.get("history"))
                                   for item in runs]})
    assert vthread.scan_arrow(table).column("verdict").to_pylist() == expected
    import pyarrow.parquet as pq

    parquet = tmp_path / "runs.parquet"
    pq.write_table(table, parquet)
    code, out, err = run(["scan", str(parquet)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == expected
    # Declared runs alone (and an undeclared plain chat among them) are named mini-swe-agent.
    alone = [*runs[:declared], {"messages": [{"role": "user", "content": "hi"}]}]
    path.write_text("".join(json.dumps(item) + "\n" for item in alone))
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and f"mini-swe-agent (detected; {path})" in err
    assert [r["messages"] for r in records(out)] == [8] * declared + [1]
    assert vthread.scan(alone, format="auto").names == [None] * (declared + 1)


def counted_parses(monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], list[bytes]]:
    """The lines ``vthread scan`` parses from here on to judge their format
    (``cli._line_evidence``) and a plain chat's reading (``_core.plain_reads_otherwise``),
    each list filled as the scan calls them through."""
    judged: list[bytes] = []
    read_otherwise: list[bytes] = []
    line_evidence, reads_otherwise = cli._line_evidence, _core.plain_reads_otherwise
    monkeypatch.setattr(cli, "_line_evidence", lambda line, *rest, **keywords: (
        judged.append(line), line_evidence(line, *rest, **keywords))[1])
    monkeypatch.setattr(_core, "plain_reads_otherwise", lambda line, *rest: (
        read_otherwise.append(line), reads_otherwise(line, *rest))[1])
    return judged, read_otherwise


def test_runs_declaring_mini_swe_agent_are_passed_over_unparsed_past_the_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of runs declaring themselves mini-swe-agent runs (mini-swe-agent writes the
    declaration after the messages) is looked through for a run of another harness past its
    first threads, each declared run told by the last bytes of its line: none is parsed for
    its evidence or for a plain chat's reading (each was parsed twice, as much again as
    the scan's own parse), and the records are those of the runs read as declared."""
    runs = [_declared_mini_run(index) for index in range(3 * DETECT_THREADS)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    judged, read_otherwise = counted_parses(monkeypatch)
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and f"mini-swe-agent (detected; {path})" in err
    assert len(records(out)) == len(runs) and len(judged) <= DETECT_THREADS
    assert read_otherwise == []
    # Declared before its messages, a run is parsed to be told (the end tells nothing).
    path.write_text("".join(json.dumps({"trajectory_format": item["trajectory_format"],
                                        "messages": item["messages"]}) + "\n"
                            for item in runs))
    judged.clear()
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and len(judged) > DETECT_THREADS


def _declared_first(run_: dict[str, Any]) -> dict[str, Any]:
    """A declared run written with its declaration before its messages (a harness other than
    mini-swe-agent's own writer): its line's end does not tell it, a parse does."""
    return {"trajectory_format": run_["trajectory_format"], **run_}


@pytest.mark.parametrize("declared_first", [False, True])
def test_declared_runs_are_warned_of_as_no_other_format_across_chunks(
        declared_first: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declared runs, then a run of another format past the first threads, then more
    declared runs in the chunks after it: the declared runs after it are read as they
    declare, and said of in no warning (they were warned of as "look like mini-swe-agent:
    they are read as anthropic" once the window went on past the settling chunk); declared
    runs before a run settling the format are no plain chats read otherwise (they were
    warned of as "the first of them that reads differently as mini-swe-agent")."""
    monkeypatch.setattr(cli, "CHUNK_LINES", 8)
    shaped = _declared_first if declared_first else (lambda run_: run_)
    runs: list[Any] = [shaped(_declared_mini_run(index)) for index in range(70)]
    runs += [{"id": "loop", "messages": anthropic_loop()}]
    runs += [shaped(_declared_mini_run(100 + index)) for index in range(20)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    code, out, err = run(["scan", str(path)], monkeypatch)
    verdicts = [r["verdict"] for r in records(out)]
    assert code == 0 and verdicts == [None] * 70 + [verdicts[70]] + [None] * 20
    assert verdicts[70] is not None and "warning" not in err
    assert f"anthropic (detected; {path})" in err
    # A run settling mini-swe-agent itself (its command answered, no declaration) after
    # declared runs: none of them is a plain chat read otherwise before it.
    undeclared = {"id": "u", "messages": _declared_mini_run(999)["messages"]}
    runs = [*(shaped(_declared_mini_run(index)) for index in range(100)), undeclared]
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and len(records(out)) == 101 and "warning" not in err
    assert f"mini-swe-agent (detected; {path})" in err


def _openai_runs(count: int) -> list[dict[str, Any]]:
    """Healthy OpenAI runs that show their format (a tool call and its answer)."""
    return [{"id": f"o{index}", "messages": [
        {"role": "user", "content": f"task {index}"}, *OPENAI_CALL,
        {"role": "assistant", "content": f"done {index}"}]} for index in range(count)]


@pytest.mark.parametrize(("before", "jobs"), [(DETECT_THREADS + 6, "1"),
                                             (DETECT_THREADS + 6, "2"), (3, "1"), (0, "1")])
def test_a_swe_agent_run_among_openai_runs_is_read_as_swe_agent(
        before: int, jobs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SWE-agent history (assistant turns holding the ``action`` SWE-agent parsed), as a
    run object and as a bare list, behind more OpenAI runs than detection examines, behind
    a few, or first: each is read as SWE-agent's, its loop found, by vthread scan (JSONL, a
    .json document, Parquet), vthread.scan and scan_arrow alike, with no warning, and the
    file is OpenAI's. Past the first threads it was read as OpenAI chat, its commands text,
    and its loop missed silently; among them, it made the file one of two formats,
    refused. A given format is not overruled."""
    runs: list[Any] = [*_openai_runs(before),
                       {"instance_id": "swe", "history": _swe_agent_loop()},
                       _swe_agent_loop(), {"id": "o-last", "messages": OPENAI_CALL}]
    expected = [None] * before + ["repeated_result_run"] * 2 + [None]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    code, out, err = run(["scan", str(path), "--jobs", jobs], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == expected, err
    assert f"openai (detected; {path})" in err and "warning" not in err, err
    document = tmp_path / "runs.json"
    document.write_text(json.dumps(runs))
    code, out, err = run(["scan", str(document)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == expected, err
    assert vthread.scan(runs, format="auto").names == expected
    listed = [item if isinstance(item, list) else item.get("messages") or item["history"]
              for item in runs]
    assert vthread.scan(listed, format="auto").names == expected
    table = pa.table({"messages": [json.dumps(messages) for messages in listed]})
    assert vthread.scan_arrow(table).column("verdict").to_pylist() == expected
    import pyarrow.parquet as pq

    parquet = tmp_path / "runs.parquet"
    pq.write_table(table, parquet)
    code, out, err = run(["scan", str(parquet)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == expected, err
    # Given, the format is the user's: the SWE-agent runs are read as OpenAI chat.
    code, out, err = run(["scan", str(path), "--format", "openai"], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == [None] * len(runs)
    assert vthread.scan(runs, format="openai").names == [None] * len(runs)


def test_a_swe_agent_run_after_plain_chats_settles_no_format(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain chats past the first threads, a SWE-agent history, then an Anthropic run: the
    SWE-agent run, read as SWE-agent's in any detected format, settles none (it settled
    SWE-agent's, and the Anthropic run was warned of and read as SWE-agent's, its loop
    lost); the Anthropic run settles the file's, and no warning names either."""
    runs: list[Any] = [{"id": f"p{index}", "messages": PLAIN}
                       for index in range(DETECT_THREADS + 6)]
    runs += [{"instance_id": "swe", "history": _swe_agent_loop()},
             {"id": "loop", "messages": anthropic_loop()}]
    expected = [None] * (DETECT_THREADS + 6) + ["repeated_result_run"] * 2
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == expected, err
    assert f"anthropic (detected; {path})" in err and "warning" not in err, err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vthread.scan(runs, format="auto").names == expected
    table = pa.table({"messages": [json.dumps(item.get("messages") or item["history"])
                                   for item in runs]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vthread.scan_arrow(table).column("verdict").to_pylist() == expected


def test_a_file_of_swe_agent_runs_is_swe_agent_s(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """SWE-agent histories alone (and a plain chat among them): beside no run of another
    chat format they stand apart from nothing, the file is SWE-agent's, each run read as
    one, and no line past the first threads is judged again (standing apart there too, the
    file was read as OpenAI's, every line past them judged for a format and each again for
    its own as it was read: 16 % more time on the published runs). Beside native threads
    such a run still makes two formats, refused."""
    runs: list[Any] = [{"instance_id": f"s{index}", "history": _swe_agent_loop()}
                       for index in range(3)]
    runs.insert(1, {"id": "plain", "messages": PLAIN})
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == [
        "repeated_result_run", None, "repeated_result_run", "repeated_result_run"]
    assert f" swe-agent (detected; {path})" in err, err
    many = [{"instance_id": f"s{index}", "history": _swe_agent_loop()}
            for index in range(3 * DETECT_THREADS)]
    path.write_text("".join(json.dumps(item) + "\n" for item in many))
    judged, _ = counted_parses(monkeypatch)
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == [
        "repeated_result_run"] * len(many)
    assert f" swe-agent (detected; {path})" in err and len(judged) <= DETECT_THREADS, err
    path.write_text(json.dumps(runs[0]) + "\n" + json.dumps(
        [{"type": "user", "text": "hi"}]) + "\n")
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 2 and "different formats" in err, err


def test_a_str_subclass_role_is_judged_by_its_content_when_looking_on() -> None:
    """Looking past plain chats for a thread that settles the format, a role that is a
    ``str`` subclass is judged by its content, its own ``__hash__`` and ``__eq__`` never run
    (the byte test's Python twin looked it up in a set: the subclass's ``__hash__`` raised
    out of ``vthread.scan``)."""
    class Loud(str):
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("eq")

        def __hash__(self) -> int:
            raise RuntimeError("hash")

    loud = [{key: Loud(value) if key in ("role", "action", "content") else value
             for key, value in message.items()} for message in _swe_agent_loop()]
    batch: list[Any] = [{"id": f"p{index}", "messages": PLAIN}
                        for index in range(DETECT_THREADS + 6)]
    batch += [loud, *_openai_runs(3)]
    assert vthread.scan(batch, format="auto").names[DETECT_THREADS + 6] == (
        "repeated_result_run")


def test_the_summary_counts_the_runs_read_as_their_own(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs read in a format of their own beside their file's (declared mini-swe-agent
    runs, SWE-agent runs showing their actions) are counted by format in the summary's table
    and its JSON, whichever way each line is read (the core, or Python for a line holding a
    NaN), as JSONL, a .json document or Parquet, one file or several, on one worker or two;
    a file with none says nothing of them. The summary named the file's format alone, though
    most of its runs were read in another."""
    import pyarrow.parquet as pq

    runs: list[Any] = [*_openai_runs(4), {"instance_id": "swe", "history": _swe_agent_loop()},
                       _declared_mini_run(0), _swe_agent_loop(), _declared_mini_run(1),
                       _declared_mini_run(2)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    odd = tmp_path / "odd.jsonl"  # (a NaN in each run object: Python reads the line)
    odd.write_text("".join(json.dumps({**item, "x": float("nan")} if isinstance(item, dict)
                                      else item) + "\n" for item in runs))
    document = tmp_path / "runs.json"
    document.write_text(json.dumps(runs))
    table = tmp_path / "runs.parquet"
    pq.write_table(pa.table({
        "messages": [json.dumps(item) if isinstance(item, list) else json.dumps(
            item.get("messages") or item["history"]) for item in runs],
        "trajectory_format": [item.get("trajectory_format") if isinstance(item, dict)
                              else None for item in runs]}), table)
    summary = tmp_path / "summary.json"
    once = {"mini-swe-agent": 3, "swe-agent": 2}
    for inputs, jobs, expected in (
            ([path], "1", once), ([odd], "1", once), ([document], "1", once),
            ([table], "1", once), ([path], "2", once),
            ([path, odd], "2", {"mini-swe-agent": 6, "swe-agent": 4})):
        code, out, err = run(["scan", *map(str, inputs), "--jobs", jobs, "--summary",
                              str(summary)], monkeypatch)
        assert code == 0 and len(records(out)) == len(runs) * len(inputs), err
        assert json.loads(summary.read_text())["read_as_their_own"] == expected, inputs
        total = sum(expected.values())
        assert (f"  read as their own{total:>25,}  (mini-swe-agent {expected['mini-swe-agent']}, "
                f"swe-agent {expected['swe-agent']}: as they declare or show, not as their "
                "file's format)") in err, err
    # A file of declared runs alone is named mini-swe-agent: its runs are in its format. Once
    # a run further on settles another, the declared runs before it are read as their own.
    alone = [_declared_mini_run(index) for index in range(DETECT_THREADS + 6)]
    for tail, named, expected in (([], "mini-swe-agent", {}),
                                  ([{"id": "loop", "messages": anthropic_loop()}], "anthropic",
                                   {"mini-swe-agent": DETECT_THREADS + 6})):
        path.write_text("".join(json.dumps(item) + "\n" for item in [*alone, *tail]))
        code, out, err = run(["scan", str(path), "--summary", str(summary)], monkeypatch)
        assert code == 0 and f" {named} (detected; {path})" in err, err
        assert json.loads(summary.read_text())["read_as_their_own"] == expected
    write(path, [OPENAI_CALL] * 3)
    code, out, err = run(["scan", str(path), "--summary", str(summary)], monkeypatch)
    assert code == 0 and json.loads(summary.read_text())["read_as_their_own"] == {}
    assert "read as their own" not in err


def test_a_swe_agent_run_of_any_mapping_or_sequence_stands_apart_as_a_dict_does() -> None:
    """A SWE-agent run given as any mapping (a UserDict, a MappingProxyType) or holding its
    history as a tuple, among the first threads beside OpenAI runs, stands apart as a dict
    holding a list does, its loop found (the batch was one of two formats: the test of a
    run read as its own took a dict or a list alone, where its evidence took them all)."""
    from collections import UserDict
    from types import MappingProxyType

    history = _swe_agent_loop()
    for run_ in (UserDict({"instance_id": "swe", "history": history}),
                 MappingProxyType({"instance_id": "swe", "history": history}),
                 {"instance_id": "swe", "history": tuple(history)}, tuple(history)):
        batch: list[Any] = [*_openai_runs(3), run_]
        assert vthread.scan(batch, format="auto").names == [None] * 3 + [
            "repeated_result_run"], type(run_).__name__


def test_a_swe_agent_run_beside_langchain_runs_is_read_as_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside a LangChain run, a SWE-agent run among the first threads is left out of the
    agreement, the file LangChain's and the run read as SWE-agent's (it stood as a plain
    chat, which no LangChain run fits: two formats, the error naming it "openai")."""
    runs = [{"id": "l", "messages": [{"type": "human", "content": "hi"},
                                      {"type": "ai", "content": "yo"}]},
            {"id": "s", "history": _swe_agent_loop()}]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in runs))
    code, out, err = run(["scan", str(path)], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == [None, "repeated_result_run"]
    assert f" langchain (detected; {path})" in err, err
    assert vthread.scan(runs, format="auto").names == [None, "repeated_result_run"]
