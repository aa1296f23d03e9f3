"""``vthread.scan(..., format=)`` and ``describe_thread_cycle(..., format=)``: threads in the
chat formats read as ``vthread scan FILE`` reads them, records and all; chat messages passed
as native ones are warned about."""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vthread
from benchmarks.workload import (
    generate_threads,
    to_anthropic,
    to_langchain,
    to_openai,
    to_responses,
)
from tests.test_cli import records, run
from vthread import _core
from vthread.adapters import to_native

CONVERSIONS: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
    "openai": to_openai, "anthropic": to_anthropic, "responses": to_responses}
# (LangChain's messages are read by Python alone: the core's own reading is not asked)
READ_FORMATS: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
    **CONVERSIONS, "langchain": to_langchain}


@pytest.mark.parametrize("name", sorted(READ_FORMATS))
@pytest.mark.parametrize("anywhere", [False, True])
def test_translated_threads_get_the_records_of_the_cli(
        name: str, anywhere: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workload's threads in another format, scanned with format= named or "auto": the
    records vthread scan writes for the same runs as a file, field for field (loops
    counted in the threads' own messages)."""
    threads = [READ_FORMATS[name](thread) for thread in generate_threads(150, seed=41)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(thread) + "\n" for thread in threads))
    flags = ["--anywhere"] if anywhere else []
    code, out, _ = run(["scan", str(path), "-q", *flags], monkeypatch)
    assert code == 0
    expected = [{k: v for k, v in r.items() if k not in ("file", "line")}
                for r in records(out)]
    for format_ in (name, "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning: the format was given
            result = vthread.scan(threads, format=format_, anywhere=anywhere)
        assert [result.record(i) for i in range(len(result))] == expected
    assert sum(r["verdict"] is not None for r in expected) > 10  # loops were compared
    if not anywhere:  # (with it, a verdict names the costliest loop's kind)
        names = [vthread.describe_thread_cycle(t, format=name) for t in threads[:40]]
        assert names == [r["verdict"] for r in expected[:40]]


def _computer_use(actions: list[dict[str, Any]], screens: list[str]) -> list[dict[str, Any]]:
    """A computer-use agent's Responses items: a task, then each action and its screenshot."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Book a flight"}]}]
    for i, (action, screen) in enumerate(zip(actions, screens, strict=True)):
        checks = [{"id": f"cu_sc_{i:040x}", "code": "malicious_instructions",
                   "message": "Check the page."}]  # (an id of its own each time)
        items += [{"type": "computer_call", "id": f"cu_{i}", "call_id": f"call_{i}",
                   "action": action, "pending_safety_checks": checks, "status": "completed"},
                  {"type": "computer_call_output", "call_id": f"call_{i}",
                   "acknowledged_safety_checks": checks, "output": {
                       "type": "computer_screenshot", "image_url": screen}}]
    return items


def _web_searches(queries: list[str]) -> list[dict[str, Any]]:
    """An Anthropic run searching the web by its server tool, told to go on after each."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Research it."}]
    for i, query in enumerate(queries):
        messages += [{"role": "assistant", "content": [
                         {"type": "server_tool_use", "id": f"srvtoolu_{i}", "name": "web_search",
                          "input": {"query": query}},
                         {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{i}",
                          "content": [{"type": "web_search_result", "title": query,
                                       "url": f"https://example.com/{query}",
                                       "encrypted_content": "e"}]}]},
                     {"role": "user", "content": "Go on."}]
    return messages


def _shell_and_search(commands: list[str]) -> list[dict[str, Any]]:
    """Responses items of a local shell's calls (each output naming its call by its ``id``,
    as the API writes it, with nothing printed) and a web search and an MCP call (approved,
    its approval request's id its own) between them."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "user",
                                    "content": "Fix the build."}]
    for i, command in enumerate(commands):
        items += [{"type": "local_shell_call", "id": f"lsh_{i}", "call_id": f"c{i}",
                   "action": {"type": "exec", "command": ["bash", "-lc", command]},
                   "status": "completed"},
                  {"type": "local_shell_call_output", "id": f"c{i}", "output": ""},
                  {"type": "web_search_call", "id": f"ws_{i}", "status": "completed",
                   "action": {"type": "search", "query": command}},
                  {"type": "mcp_call", "id": f"mcp_{i}", "server_label": "gh",
                   "name": "search_issues", "arguments": json.dumps({"q": command}),
                   "output": "[]", "approval_request_id": f"mcpr_{i:040x}"}]
    return items


@pytest.mark.parametrize("shape", ["computer", "server tool", "shell"])
def test_built_in_tools_are_read_by_what_they_do(
        shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A computer-use agent acting on different screens, a run searching the web by an
    Anthropic server tool with different queries, a shell running different commands: no
    loop at any step (each call was an empty message of its type, or no message, so each
    run looked stuck at its second step); the same action on the same screen, the same
    query answered alike, the same command, over and over: a loop, its excerpt naming the
    tool. vthread scan reads the runs as the API does."""
    format_ = "anthropic" if shape == "server tool" else "responses"
    steps = [f"step {i}" for i in range(5)]
    if shape == "computer":
        def run_of(words: list[str]) -> list[dict[str, Any]]:
            return _computer_use([{"type": "type", "text": word} for word in words],
                                 [f"data:image/png;base64,{word}" for word in words])
    elif shape == "server tool":
        run_of = _web_searches
    else:
        run_of = _shell_and_search
    progressing, stuck = run_of(steps), run_of(["again"] * 5)
    for end in range(2, len(progressing) + 1):
        assert vthread.describe_thread_cycle(progressing[:end], format=format_) is None, end
    assert vthread.describe_thread_cycle(stuck, format=format_) is not None
    result = vthread.scan([progressing, stuck], format=format_)
    assert result.names[0] is None and result.names[1] is not None
    tool = {"computer": "computer(", "server tool": "web_search(", "shell": "local_shell("}
    assert (result.excerpt[1] or "").startswith(tool[shape]), result.excerpt[1]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "messages": run}) + "\n"
                            for i, run in enumerate((progressing, stuck))))
    for flags in ([], ["--format", format_]):
        code, out, err = run(["scan", str(path), "-q", *flags], monkeypatch)
        assert code == 0, err
        assert [{k: v for k, v in r.items() if k not in ("file", "line", "id")}
                for r in records(out)] == [{k: v for k, v in result.record(i).items()
                                            if k != "id"} for i in range(2)]


def test_a_run_of_built_in_tools_items_is_told_a_responses_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A computer-use run of its actions alone, or after a user message with a role and no
    type (as OpenAI's examples send it), is told a Responses run by format="auto" and by
    vthread scan alike (it was read as native, every step alike: a loop at its second; or
    its format could not be told). The marks are the function tools' items and every
    built-in tool's, as the translation reads them."""
    from vthread import adapters

    built_in = {kind for kind in adapters._RESPONSES_ITEMS
                if adapters.built_in_tool(kind) is not None}
    assert adapters._RESPONSES_TOOL_ITEMS | built_in == adapters.RESPONSES_MARKS
    screens = [f"data:image/png;base64,{i}" for i in range(4)]
    actions = _computer_use([{"type": "click", "x": i, "y": 1} for i in range(4)], screens)[1:]
    easy = [{"role": "user", "content": "Book a flight"}, *actions]
    for items in (actions, easy):
        assert adapters.detect_format(items) == "responses"
        assert vthread.describe_thread_cycle(items, format="auto") is None
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "messages": items}) + "\n"
                            for i, items in enumerate((actions, easy))))
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == [None, None], err
    result = vthread.scan([actions, easy], format="auto")
    assert [{k: v for k, v in r.items() if k not in ("file", "line", "id")}
            for r in records(out)] == [{k: v for k, v in result.record(i).items()
                                        if k != "id"} for i in range(2)]


def test_chat_messages_read_as_native_are_warned_about() -> None:
    """Chat threads passed as native (the default) are every one a loop, which is warned
    about, once per call; native threads, and chat ones with their format, are not."""
    chat = [to_openai(thread) for thread in generate_threads(20, seed=3)]
    with pytest.warns(UserWarning,
                      match=r'thread 0\'s messages have a "role" \(chat messages\): read as'):
        assert vthread.scan(chat).names == ["repeated_suffix"] * 20
    with pytest.warns(UserWarning, match='pass format="auto"'):
        vthread.describe_thread_cycle(chat[0])
    responses = [to_responses(thread) for thread in generate_threads(20, seed=3)]
    with pytest.warns(UserWarning, match=r"\(chat messages\): read as native ones, they are alike"):
        vthread.scan(responses)
    calls = [{"type": "function_call", "call_id": f"c{i}", "name": "read_file",
              "arguments": f'{{"path": "f{i}.py"}}'} for i in range(4)]
    with pytest.warns(UserWarning, match=r'are OpenAI Responses items \("function_call" with a '
                      r'"call_id"\): read as native ones, they are alike'):
        assert vthread.describe_thread_cycle(calls) == "repeated_suffix"
    assert vthread.describe_thread_cycle(calls, format="auto") is None
    # A built-in tool's items too (a computer-use run read as native loops at once).
    actions = [{"type": "computer_call", "call_id": f"c{i}", "action": {"x": i}}
               for i in range(4)]
    with pytest.warns(UserWarning, match=r'are OpenAI Responses items \("computer_call" '):
        assert vthread.describe_thread_cycle(actions) == "repeated_suffix"
    assert vthread.describe_thread_cycle(actions, format="auto") is None
    searches = [{"type": "web_search_call", "id": f"ws_{i}", "status": "completed",
                 "action": {"type": "search", "query": f"q{i}"}} for i in range(4)]
    with pytest.warns(UserWarning, match=r'are OpenAI Responses items \("web_search_call"\): '):
        assert vthread.describe_thread_cycle(searches) == "repeated_suffix"
    native = generate_threads(20, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vthread.scan(native)
        vthread.describe_thread_cycle(native[0])
        assert vthread.scan(chat, format="openai").names != ["repeated_suffix"] * 20
        assert vthread.is_thread_cyclic(chat[0], format="auto") is False
        vthread.scan(native, format="auto")
        vthread.scan([*chat[:3], {"id": "r", "messages": chat[3]}], format="auto")
    # "auto" finding the batch native by its first threads: a chat thread among them that
    # fits no format (a message without a role) is read as native, which is said, with
    # other advice than the above.
    roleless = [{"role": "user", "content": "look"}, {"content": "x"}] * 2
    mixed = [native[0], roleless, native[2]]
    with pytest.warns(UserWarning, match=r'thread 1\'s messages have a "role" \(chat '
                      r'messages\): read as native ones, .* format="auto" read the batch as '
                      r"native, as its first threads are: scan these apart, or pass"):
        got = vthread.scan(mixed, format="auto")
    with pytest.warns(UserWarning, match='pass format="auto"'):
        assert got.names == vthread.scan(mixed, format="native").names


def test_messages_of_a_library_vthread_does_not_read_are_told_apart_from_native(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Typed messages with a ``content`` and no ``text`` (LangChain's ``{"type": "question",
    "content": ...}``) were detected native and read so, every run a loop with no word:
    ``format="auto"`` and ``vthread scan`` now say their format cannot be told and why, and
    read as native (the default) they are warned about, with advice that fits them."""
    runs = [[{"type": "question", "content": f"question {i}"}, {"type": "answer", "content": "ok"},
             {"type": "question", "content": f"more {i}"}, {"type": "answer", "content": "fine"}]
            for i in range(5)]
    why = (r'\(its messages have a "type" and a "content" but no "text" and no "role": '
           r"neither native nor chat messages\)")
    with pytest.raises(ValueError, match="thread 0: cannot tell the message format " + why):
        vthread.scan(runs, format="auto")
    with pytest.raises(ValueError, match="cannot tell the message format " + why):
        vthread.describe_thread_cycle(runs[0], format="auto")
    advice = (r'have a "content" and no "text" \(no native messages: another library\'s, '
              r".*give them as native")
    with pytest.warns(UserWarning, match="the messages " + advice):
        assert vthread.describe_thread_cycle(runs[0]) == "repeated_suffix"
    with pytest.warns(UserWarning, match="thread 0's messages " + advice):
        vthread.scan(runs)
    path = tmp_path / "library.jsonl"
    path.write_text("".join(json.dumps({"id": i, "messages": r}) + "\n"
                            for i, r in enumerate(runs)))
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 2 and out == b""
    assert re.search("line 1: cannot tell the message format " + why, err), err
    # One text among them, or no content, is native as ever; such a thread among native
    # ones is read as native, and warned about.
    texted = [{**runs[0][0], "text": "q"}, *runs[0][1:]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vthread.scan([texted], format="auto").names == vthread.scan([texted]).names
        assert vthread.describe_thread_cycle([{"type": "user"}], format="auto") is None
    with pytest.warns(UserWarning, match="thread 1's messages " + advice):
        assert vthread.scan([texted, runs[0] * 2], format="auto").names == [
            None, "repeated_suffix"]
    # The first message alone does not make the warning: a native thread whose first
    # message holds a content is none of them (it was warned of).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert vthread.scan([[runs[0][0], {"type": "bot", "text": "a"}]]).names == [None]
    # Messages that are not typed get no such reason (it was given them).
    assert vthread.adapters.shapes_apart(runs[0]).startswith(' (its messages have a "type"')
    for untyped in ([{"content": "x"}], [{"role": None, "content": "x"}],
                    [{"type": 5, "content": "x"}]):
        assert vthread.adapters.shapes_apart(untyped) == ""
    # The command line warns of them read as native, given or detected from other lines,
    # and scan_arrow of them given as native, and says why it cannot tell their format.
    native_first = tmp_path / "mixed.jsonl"
    native_first.write_text("".join(json.dumps(r) + "\n" for r in [texted] * 3 + runs[:1] * 2))
    code, out, err = run(["scan", str(native_first), "-q"], monkeypatch)
    assert [r["verdict"] for r in records(out)][3:] == ["repeated_suffix"] * 2
    assert ("lines 4, 5 look like another library's messages (a \"content\" and no \"text\") "
            "but are read as native") in err
    assert err.rstrip().endswith("no format reads another library's messages: give them as "
                                 'native ({"type", "text"}) or chat ({"role", "content"}) '
                                 "messages")
    # A line too long for the first lines' check is named by the later warning (the first
    # named the lines after it, and so the later one passed over it: it was named by none).
    long_one = [{"type": "question", "content": "x" * (5 << 20)},
                {"type": "answer", "content": "ok"}]
    long_file = tmp_path / "long.jsonl"
    long_file.write_text("".join(json.dumps(r) + "\n" for r in [runs[0], long_one * 3, runs[1]]))
    code, out, err = run(["scan", str(long_file), "-q", "--format", "native"], monkeypatch)
    assert [r["verdict"] for r in records(out)][1] == "repeated_suffix"
    assert re.search(r"warning: lines? 2(, 3)? looks? like another library's messages", err), err
    code, out, err = run(["scan", str(path), "-q", "--format", "native"], monkeypatch)
    assert code == 0 and "--format native was given, but lines 1, 2, 3, 4, 5 of the first 5 " \
        "look like another library's messages (a \"content\" and no \"text\"); they are read " \
        "as native, and" in err
    pa = pytest.importorskip("pyarrow")
    from vthread.arrow import scan_arrow

    table = pa.table({"messages": [json.dumps(run_) for run_ in runs]})
    with pytest.warns(UserWarning, match="format='native' was given, but rows 0, 1, 2, 3, 4 "
                                         "of the first 5 look like another library's messages"):
        scan_arrow(table, format="native")
    with pytest.raises(ValueError, match="row 0: cannot tell the message format " + why):
        scan_arrow(table)
    # Detected native from the first rows, a row of them among those rows is warned of (a
    # text column and one of message structs; it was read as native in silence).
    for column in (pa.array([json.dumps(texted)] * 3 + [json.dumps(runs[0] * 2)]),
                   pa.array([texted] * 3 + [runs[0] * 2])):
        with pytest.warns(UserWarning, match="format='auto' read the rows as native, as the "
                          "first are, but row 3 of the first 4 looks like another library's"):
            scan_arrow(pa.table({"messages": column}))


def test_a_run_of_built_in_tools_items_past_detection_is_warned_about(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a native file, a run further on of a built-in tool's items without call ids (web
    searches), read as native, loops at once: it is warned about as a run of function calls
    is (neither the core nor Python marked its first message, which has no call id)."""
    searches = [{"type": "web_search_call", "id": f"ws_{i}", "status": "completed",
                 "action": {"type": "search", "query": f"q{i}"}} for i in range(4)]
    native = [[{"type": "user", "text": f"hi {i}"}, {"type": "bot", "text": "ok"}]
              for i in range(70)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*native, searches]))
    for jobs in ("1", "2"):
        code, out, err = run(["scan", str(path), "-q", "--jobs", jobs], monkeypatch)
        assert code == 0 and records(out)[-1]["verdict"] == "repeated_suffix"
        assert "warning: line 71 looks like responses but is read as native" in err


HEURISTIC_FUNCTIONS = {"repeated_suffix": vthread.has_repeated_suffix,
                       "repeated_activity_tail": vthread.has_repeated_activity_tail,
                       "repeated_result_run": vthread.has_repeated_result_run}


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_each_heuristic_takes_the_format_as_describe_does(name: str) -> None:
    """has_repeated_* with format= (named, "auto", or a run object) answer for the translated
    messages: each fires on the threads whose verdict is its heuristic, never on one that
    progresses; chat messages passed as native ones are warned about where they were
    passed."""
    threads = [CONVERSIONS[name](thread) for thread in generate_threads(60, seed=17)]
    verdicts = [vthread.describe_thread_cycle(t, format=name) for t in threads]
    assert set(HEURISTIC_FUNCTIONS) <= set(verdicts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for thread, verdict in zip(threads, verdicts, strict=True):
            for heuristic, function in HEURISTIC_FUNCTIONS.items():
                answers = {function(thread, format=name), function(thread, format="auto"),
                           function({"id": "r", "messages": thread}, format=name)}
                assert len(answers) == 1
                if verdict == heuristic:
                    assert answers == {True}
                elif verdict is None:
                    assert answers == {False}
    for function in HEURISTIC_FUNCTIONS.values():
        with pytest.warns(UserWarning, match='pass format="auto"') as caught:
            function(threads[0])
        assert [w.filename for w in caught] == [__file__]


@pytest.mark.parametrize("function", [vthread.describe_thread_cycle, vthread.is_thread_cyclic])
def test_the_chat_warning_of_a_whole_thread_check_points_at_its_caller(
        function: Callable[..., object]) -> None:
    """A list of messages takes a shorter path than other sequences; both warn where the
    function was called, a list's or tuple's subclass as scan warns about one."""
    class Messages(list[dict[str, str]]):
        pass

    class MessageTuple(tuple[dict[str, str], ...]):
        pass

    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}] * 2
    with pytest.warns(UserWarning, match='pass format="auto"'):
        vthread.scan([Messages(chat)])
    for thread in (chat, tuple(chat), Messages(chat), MessageTuple(chat)):
        with pytest.warns(UserWarning, match='pass format="auto"') as caught:
            function(thread)
        assert [w.filename for w in caught] == [__file__]


def test_formats_that_cannot_be_read_are_errors_naming_the_thread() -> None:
    native = [{"type": "user", "text": "hi"}]
    chat = [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]
    with pytest.raises(ValueError, match="format must be 'auto' or one of native, openai"):
        vthread.scan([chat], format="chat")
    with pytest.raises(ValueError, match=r"different formats \(native at thread 0; openai at "
                                         r"thread 1\)"):
        vthread.scan([native, chat], format="auto")
    with pytest.raises(ValueError, match="thread 1: cannot tell the message format"):
        vthread.scan([[], [{"x": 1}]], format="auto")
    # Messages of two shapes: the first that parts ways with the first message is named.
    mixed = [*native, {"type": "bot", "text": "ok"}, {"role": "user", "content": "y"}]
    parted = (r"cannot tell the message format \(messages\[0\] has a \"type\" and no "
              r"\"role\", as native messages do; messages\[2\] has a \"role\", as chat "
              r"messages do\); expected ")
    with pytest.raises(ValueError, match=f"^thread 0: {parted}"):
        vthread.scan([mixed], format="auto")
    with pytest.raises(ValueError, match=f"^{parted}"):
        vthread.build_thread(mixed, max_tokens=10, estimate=lambda m: 1, format="auto")
    with pytest.raises(ValueError, match=r"messages\[0\] has neither a string \"type\" nor a "
                                         r"string \"role\"; messages\[1\] has a \"role\""):
        vthread.describe_thread_cycle([{"x": 1}, chat[0]], format="auto")
    with pytest.raises(ValueError, match=r"^thread 1: openai format: "):
        vthread.scan([chat, [{"role": "user", "content": 7}]], format="openai")
    with pytest.raises(TypeError, match="thread 0: a thread is a sequence of messages"):
        vthread.scan(["not a thread"], format="openai")  # type: ignore[list-item]
    bad = [{"role": "user", "content": 7}]
    for one_thread in (vthread.describe_thread_cycle, vthread.has_repeated_suffix):
        with pytest.raises(ValueError, match=r"^openai format: message 0: content must be"):
            one_thread(bad, format="openai")  # one thread's error names no thread
    # A message that is no mapping is named as with no format given, not taken for a
    # format that cannot be told.
    with pytest.raises(TypeError, match=r"^thread 1: messages\[1\] must be a mapping, got "
                       "NoneType$"):
        vthread.scan([[], [native[0], None]], format="auto")
    with pytest.raises(TypeError, match=r"^thread 0 \(id 'r'\): messages\[1\] must be a mapping, "
                       "got int"):
        vthread.scan([{"id": "r", "messages": [chat[0], 3]}], format="auto")
    with pytest.raises(TypeError, match=r"^messages\[1\] must be a mapping, got NoneType$"):
        vthread.describe_thread_cycle([chat[0], None], format="auto")
    with pytest.raises(TypeError, match=r"^thread 1: a thread is a sequence of messages or a "
                       "run object, got str$"):
        vthread.scan([[], "abc"], format="auto")  # type: ignore[list-item]
    assert vthread.scan([], format="auto").names == []
    assert vthread.scan([[]], format="auto").names == [None]


def documented_examples_fail(heading: str) -> tuple[int, int]:
    """(examples, failed) of the section of docs/api.md under ``heading``, run as doctests
    with nothing imported for them (an example lacked its import)."""
    import doctest

    text = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text("utf-8")
    section = text.split(f"### {heading}", 1)[1].split("\n### ", 1)[0]
    section = section.replace("```python", "").replace("```", "")  # the fences end no output
    test = doctest.DocTestParser().get_doctest(section, {}, "api.md", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test)
    return len(test.examples), runner.summarize(verbose=False).failed


def test_the_documented_example_runs_as_written() -> None:
    """docs/api.md's example of format="auto" gives the output it shows, run as written."""
    assert documented_examples_fail("Threads in other message formats") == (3, 0)


REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"


def test_run_objects_are_read_as_vthread_scan_reads_a_line() -> None:
    """With a format given, a thread may be a run object holding its messages (as a JSONL
    line holds one): mini-swe-agent's declares its format there, so "auto" reads its fenced
    commands as tool calls, where its messages alone read as OpenAI chat."""
    turn = "I will look.\n```bash\nls\n```"
    messages = [{"role": "user", "content": "fix it"}]
    for _ in range(5):
        messages += [{"role": "assistant", "content": turn},
                     {"role": "user", "content": "<returncode>0</returncode>\n" + "x" * 30}]
    run_ = {"instance_id": "i1", "trajectory_format": "mini-swe-agent-1", "messages": messages}
    declared = vthread.scan([run_], format="auto")
    assert declared.record(0) == {
        **vthread.scan([messages], format="mini-swe-agent").record(0), "id": "i1"}
    assert declared.names == ["repeated_suffix"]
    assert vthread.describe_thread_cycle(run_, format="auto") == "repeated_suffix"
    chat = to_openai(generate_threads(1, seed=5)[0])
    as_run = vthread.scan([{"id": "a", "messages": chat}, chat], format="openai")
    assert as_run.ids == ["a", None] and as_run.record(0)["id"] == "a"
    assert as_run.record(0) == {**vthread.scan([chat], format="openai").record(0), "id": "a"}
    assert as_run.record(0)["messages"] == len(chat) == as_run.messages[1]
    assert [record["id"] for record in as_run] == ["a", None]  # rows as records, in order
    assert as_run[-1] == as_run.record(1)
    with pytest.raises(IndexError, match="row 2 of a result of 2 rows"):
        as_run.record(2)
    with pytest.raises(TypeError, match="a row is an integer index, got str"):
        as_run["0"]  # type: ignore[index]
    # The default format reads a run object too (as vthread scan --format native reads a
    # line holding one), and warns of chat messages read as native ones, as for a list.
    with pytest.warns(UserWarning, match=r'thread 0\'s messages have a "role"'):
        as_native = vthread.scan([chat, {"id": "a", "messages": chat}])
    assert as_native.ids == [None, "a"]
    with pytest.warns(UserWarning, match=r'messages have a "role"'):
        vthread.describe_thread_cycle({"messages": chat})  # as for the list (a reviewer)
    for batch in ([{"foo": 1}], [{"id": "a", "messages": chat}, {"foo": 1}]):
        # A mapping holding no messages: the same TypeError alone or beside run objects.
        with pytest.raises(TypeError, match=r"thread \d: messages must be a sequence of "
                                            r"mappings \(or a run object holding them"):
            vthread.scan(batch)
    # A run whose messages are null is a run with no thread, as in every other format.
    with pytest.raises(ValueError, match='thread 1: not a thread: "messages" is a null'):
        vthread.scan([{"id": "a", "messages": chat}, {"messages": None}])
    native = generate_threads(1, seed=5)[0]
    for given in ("native", "auto"):
        held = vthread.scan([{"id": "n", "messages": native}, native], format=given)
        assert held.record(0) == {**held.record(1), "id": "n"}
        assert vthread.describe_thread_cycle({"messages": native}, format=given) == (
            vthread.describe_thread_cycle(native))
    odd = [float("nan"), np.int64(3), [1, {"k": None}]]
    result = vthread.scan([{"id": ident, "messages": chat} for ident in odd], format="openai")
    assert result.ids == odd  # as given; the records hold what vthread scan writes
    assert [json.dumps(r["id"], allow_nan=False) for r in result] == [
        '"NaN"', "3", '"[1,{\\"k\\":null}]"']
    with pytest.raises(ValueError, match=r"^thread 0: not a thread: an object without "):
        vthread.scan([{"steps": chat}], format="openai")


def test_the_first_bad_thread_is_named_and_a_bad_run_object_is_a_type_error() -> None:
    """Of a batch, the first thread that is no thread is named, whether it or a later one
    is a run object (a run object without messages was named first, wherever it was); a run
    object whose messages are no array, or hold a value that is no message, is a TypeError
    as a bare list holding one is (it was a ValueError only, and still is one), with
    pandas' hint for a NumPy array of messages."""
    from vthread.documents import NotAThreadError

    message = {"type": "user", "text": "a"}
    bad_list = [message, 7]
    cases = [
        ([bad_list, {"id": 1}], TypeError, r"^thread 0: messages\[1\] must be a mapping"),
        ([[message], bad_list, {"messages": "x"}], TypeError,
         r"^thread 1: messages\[1\] must be a mapping"),
        ([{"messages": "x"}, {"id": 1}], NotAThreadError,
         r'^thread 0: not a thread: "messages" is a string, not an array$'),
        ([{"messages": [message]}, {"messages": bad_list}, bad_list], NotAThreadError,
         r"^thread 1: message 1 is not an object \(a number\)$"),
        ([[message], {"messages": None}], NotAThreadError, r'^thread 1: not a thread: "messages"'
         r" is a null"),
        ([[message], {"id": 1}, bad_list], TypeError,
         r"^thread 1 \(id 1\): messages must be a sequence"),
        ([7, {"id": 1}], TypeError, r"^thread 0: a thread is a sequence of messages or a run "
                                    r"object, got int$"),
        ([7, {"messages": [message]}], TypeError, r"^thread 0: a thread is a sequence of "
                                                  r"messages or a run object, got int$"),
        ([{"id": "r", "messages": [message]}, bad_list, 7], TypeError,
         r"^thread 1: messages\[1\] must be a mapping"),
        ([{"id": "x"}], NotAThreadError, r"^thread 0 \(id 'x'\): messages must be a sequence"),
        ([{"messages": np.array([message, message])}], NotAThreadError,
         r"ndarray, not an array \(pandas reads a Parquet list column as NumPy arrays"),
    ]
    for batch, kind, said in cases:
        with pytest.raises(kind, match=said) as caught:
            vthread.scan(batch)
        assert isinstance(caught.value, TypeError)
    # With workers asked for, a thread with no length is named as without them (the batch's
    # size was measured first: "object of type 'int' has no len()").
    for batch, said in (([[message]] * 3 + [7], r"^thread 3: messages must be a sequence"),
                        ([[message], bad_list, [message], 7], r"^thread 1: messages\[1\]")):
        with pytest.raises(TypeError, match=said):
            vthread.scan(batch, jobs=2)
    with pytest.raises(NotAThreadError, match=r"^message 1 is not an object") as caught:
        vthread.describe_thread_cycle({"messages": bad_list})
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ValueError, match=r"^thread 1: openai format: message 0 has no role"
                       ) as raised:
        vthread.scan([{"messages": [{"role": "user", "content": "a"}]}, {"messages": [{}]}],
                     format="openai")
    assert not isinstance(raised.value, TypeError)


def test_run_objects_of_any_mapping_and_sequence_type_are_read_as_dicts_and_lists() -> None:
    """A run object that is a UserDict or a read-only mapping, its messages a tuple of
    UserDicts, is detected and read as the same run of dicts and lists is (it was taken for
    native messages, every chat run a loop), and is not changed."""
    from collections import UserDict
    from types import MappingProxyType

    chats = [to_openai(thread) for thread in generate_threads(12, seed=8)]
    runs = [{"id": f"r{i}", "messages": chat} for i, chat in enumerate(chats)]
    expected = vthread.scan(runs, format="auto")
    assert expected.names.count(None) >= 6
    odd = [UserDict(runs[0]), MappingProxyType({"id": "r1", "messages": tuple(
        UserDict(m) for m in chats[1])}), *runs[2:]]
    before = repr(odd)
    for format_ in ("auto", "openai"):
        got = vthread.scan(odd, format=format_)
        assert [got.record(i) for i in range(len(got))] == [
            expected.record(i) for i in range(len(expected))], format_
    assert repr(odd) == before
    for run_ in odd[:2]:
        assert vthread.describe_thread_cycle(run_, format="auto") == (
            vthread.describe_thread_cycle(runs[0 if run_ is odd[0] else 1], format="auto"))


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs are not beside the "
                    "repository")
def test_published_mini_swe_agent_runs_as_objects_get_the_cli_records(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    path = REALDATA / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz"
    runs = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    result = vthread.scan(runs, format="auto")
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    expected = [{k: v for k, v in r.items() if k not in ("file", "line")}
                for r in records(out)]
    assert code == 0 and [result.record(i) for i in range(len(result))] == expected


def _mixed_batch() -> tuple[list[Any], list[int]]:
    """70 native threads, then chat ones (three looping read as native, one not; the last
    holds a lone surrogate, which the core leaves to Python); the rows of those that
    loop."""
    native = generate_threads(70, seed=5)
    chat = to_openai([{"type": "user", "text": "hi"}] + [{"type": "bot", "text": "a"}] * 4)
    calm = [{"role": "user", "content": "hi"}]
    lone = [{"role": "user", "content": "\ud800"}] + [{"role": "assistant", "content": "a"}] * 4
    return [*native, chat, calm, chat, lone], [70, 72, 73]


def test_chat_threads_past_the_first_that_loop_are_warned_about(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chat threads further on in a batch (a file) read as native, past the first threads
    detection weighs: each such thread that loops (its loop false) is named, by the API and
    by the command with every way of reading (the core, Python's masking, one and two
    jobs, looking anywhere); a batch of native threads draws no warning."""
    batch, looping = _mixed_batch()
    for format_ in ("native", "auto"):
        with pytest.warns(UserWarning, match=r"thread 70's messages have a \"role\""):
            vthread.scan(batch, format=format_)
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(thread) + "\n" for thread in batch))
    named = ", ".join(str(row + 1) for row in looping)
    for extra in ([], ["-j", "2"], ["--anywhere"], ["--mask-volatile"], ["--format", "native"]):
        code, out, err = run(["scan", str(path), "-q", *extra], monkeypatch)
        assert code == 0 and len(records(out)) == len(batch)
        assert err.count("warning") == 1
        assert f"warning: lines {named} look like openai but are read as native" in err
    native = tmp_path / "native.jsonl"
    native.write_text("".join(json.dumps(thread) + "\n" for thread in batch[:70] * 2))
    assert run(["scan", str(native), "-q"], monkeypatch)[2] == ""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vthread.scan(batch[:70] * 2)


def _looping_calls(format_: str, ids: tuple[Any, Any, Any, Any]) -> list[dict[str, Any]]:
    """A run that repeats two calls and three results by call id: the first call's, the
    second's and one naming no call, so what each result is the response to shows."""
    first, second, first_again, neither = ids
    messages: list[dict[str, Any]] = []
    for _ in range(4):
        if format_ == "openai":
            messages += [
                {"role": "assistant", "tool_calls": [
                    {"id": first, "function": {"name": "read", "arguments": "{}"}},
                    {"id": second, "function": {"name": "write", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": first_again, "content": "x"},
                {"role": "tool", "tool_call_id": second, "content": "y"},
                {"role": "tool", "tool_call_id": neither, "name": "own", "content": "z"}]
        elif format_ == "anthropic":
            messages += [
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": first, "name": "read", "input": {}},
                    {"type": "tool_use", "id": second, "name": "write", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": first_again, "content": "x"},
                    {"type": "tool_result", "tool_use_id": second, "content": "y"},
                    {"type": "tool_result", "tool_use_id": neither, "content": "z"}]}]
        else:
            messages += [
                {"type": "function_call", "call_id": first, "name": "read", "arguments": "{}"},
                {"type": "function_call", "call_id": second, "name": "write",
                 "arguments": "{}"},
                {"type": "function_call_output", "call_id": first_again, "output": "x"},
                {"type": "function_call_output", "call_id": second, "output": "y"},
                {"type": "function_call_output", "call_id": neither, "output": "z"}]
    return messages


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
def test_call_ids_are_one_exactly_when_their_json_texts_are(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Call ids 1, 1.0, true and "1" are matched as JavaScript values: 1 and 1.0 are one id,
    true and "1" others. vthread.scan of such a run gets the records the core's reading of
    the bytes writes for the same run with string ids standing for them ("n" for 1 and 1.0,
    "t" for true), and vthread scan writes them for the run as it is."""
    numeric = _looping_calls(name, (1, True, 1.0, "1"))
    named = _looping_calls(name, ("n", "t", "n", "1"))
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps({"id": "a", "messages": numeric}), json.dumps({"id": "a",
                                                                       "messages": named})]
    assert _core.translate_line(lines[1].encode(), name) is not None  # read by the core
    path.write_text("".join(line + "\n" for line in lines))
    code, out, _ = run(["scan", str(path), "-q", "--format", name], monkeypatch)
    assert code == 0
    from_bytes = [{k: v for k, v in r.items() if k not in ("file", "line")}
                  for r in records(out)]
    result = vthread.scan([{"id": "a", "messages": numeric}], format=name)
    assert from_bytes == [result.record(0)] * 2
    native = to_native(numeric, name)  # type: ignore[arg-type]
    responses = [m["meta"]["activity"]["function"]["name"] for m in native
                 if m["type"] == "activity" and m["meta"]["activity"]["type"] == "response"]
    assert responses == ["read", "write", "own" if name == "openai" else ""] * 4


@pytest.mark.parametrize("name", sorted(CONVERSIONS))
@pytest.mark.parametrize("written", ["1e400", "-1e400"])
def test_an_infinite_result_id_answers_no_call_without_an_id(
        name: str, written: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A result whose id is an infinity (1e400 is JSON, and JavaScript's Infinity) answers no
    call whose id is null or absent: JSON.stringify writes Infinity as null, but an id keys
    as "Infinity". The core reads such a line itself; vthread.scan gets its records."""
    messages = _looping_calls(name, (None, "w", None, "other"))
    line = json.dumps({"id": "a", "messages": messages}).replace('"other"', written)
    assert _core.translate_line(line.encode(), name) is not None  # read by the core
    path = tmp_path / "runs.jsonl"
    path.write_text(line + "\n")
    code, out, _ = run(["scan", str(path), "-q", "--format", name], monkeypatch)
    assert code == 0
    (from_bytes,) = [{k: v for k, v in r.items() if k not in ("file", "line")}
                     for r in records(out)]
    assert vthread.scan([json.loads(line)], format=name).record(0) == from_bytes
    native = to_native(json.loads(line)["messages"], name)
    responses = [m["meta"]["activity"]["function"]["name"] for m in native
                 if m["type"] == "activity" and m["meta"]["activity"]["type"] == "response"]
    assert responses == ["read", "write", "own" if name == "openai" else ""] * 4


def test_chat_read_as_native_is_warned_about_once_per_file_however_many_chunks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Looping chat lines read as native in many chunks of a file draw one warning as the
    first such chunk is written and one tally after the last record, naming the first lines
    and the count of the rest (it was a warning per chunk: a tester's file said it dozens
    of times); each file has its own, and so has each reading of a file given twice, with
    one and two jobs."""
    from vthread import cli

    batch, looping = _mixed_batch()
    chat = batch[looping[0]]
    lines = [json.dumps(thread) + "\n" for thread in batch[:70]] + [json.dumps(chat) + "\n"] * 30
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text("".join(lines))
    monkeypatch.setattr(cli, "CHUNK_LINES", 8)
    for extra in ([], ["-j", "2"]):
        code, out, err = run(["scan", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"),
                              "-q", *extra], monkeypatch)
        assert code == 0 and len(records(out)) == 2 * len(lines)
        said = err.splitlines()
        # lines 71..100 loop: 71 and 72 share the chunk of lines 65..72, 73.. come later
        for name in ("a.jsonl", "b.jsonl"):
            of_file = [line for line in said if f"{name}: warning" in line]
            assert len(of_file) == 2, err
            assert "lines 71, 72 look like openai but are read as native" in of_file[0]
            assert of_file[1].endswith(
                "warning: also lines 73, 74, 75, 76, 77 and 23 more look like openai but "
                "are read as native (as said above of its earlier lines)")
        assert said[-1].startswith(f"vthread scan: {tmp_path / 'b.jsonl'}: warning: also")
        # The same file given twice is read twice, each reading warned of as its own (the
        # second's lines were tallied with the first's: "lines 71, 72, 73, ... and 55 more").
        code, out, err = run(["scan", str(tmp_path / "a.jsonl"), str(tmp_path / "a.jsonl"),
                              "-q", *extra], monkeypatch)
        assert code == 0 and len(records(out)) == 2 * len(lines)
        of_file = [line for line in err.splitlines() if "a.jsonl: warning" in line]
        assert len(of_file) == 4, err
        assert ["lines 71, 72 look like openai" in line for line in of_file] == [
            True, True, False, False]
        assert all(line.endswith("also lines 73, 74, 75, 76, 77 and 23 more look like "
                                 "openai but are read as native (as said above of its "
                                 "earlier lines)") for line in of_file[2:])


def test_the_tally_of_chat_read_as_native_is_said_when_the_scan_stops_early(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan that stops early (--strict at a bad line) still says the tally of the looping
    chat lines read as native whose records it wrote (the tally was said only at a normal
    end: a tester's 4,903 false loops went unsaid)."""
    from vthread import cli

    batch, looping = _mixed_batch()
    chat = json.dumps(batch[looping[0]]) + "\n"
    lines = [json.dumps(thread) + "\n" for thread in batch[:70]] + [chat] * 30 + ["{bad\n"]
    path = tmp_path / "a.jsonl"
    path.write_text("".join(lines))
    monkeypatch.setattr(cli, "CHUNK_LINES", 8)
    code, out, err = run(["scan", str(path), "-q", "--strict"], monkeypatch)
    assert code == 2 and len(records(out)) == 100
    said = err.splitlines()
    assert any("also lines 73, 74, 75, 76, 77 and 23 more look like openai" in line
               for line in said), err
    assert said[-1].startswith(f"vthread scan: {path}:101: not valid JSON")


@pytest.mark.parametrize("format", ["native", "openai", "anthropic", "responses",
                                    "mini-swe-agent", "swe-agent"])
def test_a_message_that_is_no_mapping_is_a_type_error_in_every_format(format: str) -> None:
    """A harness's message of the wrong type (a model object, None) is a TypeError naming
    its index whatever the format, from every function, as it is for native messages: in a
    chat format it was a ValueError from the cycle functions and scan, and a TypeError from
    build_thread, so that a harness catching one missed the other. It is still a ValueError
    too (what the adapters raised)."""

    class Model:  # a message object the harness forgot to dump
        pass

    first = ({"type": "user", "text": "fix it"} if format == "native"
             else {"role": "user", "content": "fix it"})
    # (each with whether it raised a ValueError: those that did raise one still)
    calls: list[tuple[Callable[[list[Any]], object], bool]] = [
        (lambda thread: vthread.describe_thread_cycle(thread, format=format), True),
        (lambda thread: vthread.scan([thread], format=format), True),
        (lambda thread: vthread.build_thread(thread, max_tokens=100, estimate=lambda m: 1,
                                             format=format), False)]
    if format != "native":
        calls.append((lambda thread: to_native(thread, format), True))
    for bad in (Model(), None):
        for call, was_a_value_error in calls:
            with pytest.raises(TypeError, match=r"message(s\[| )1\b") as raised:
                call([first, bad])
            if format != "native" and was_a_value_error:
                assert isinstance(raised.value, ValueError)


def test_an_error_in_a_run_object_names_its_id_as_well_as_its_position() -> None:
    """An evaluation team knows its runs by id: a bad run object is named by its position
    and its id (the first id key it holds; a long one shortened), a run without an id or
    whose mapping raises when read by its position alone."""
    class Unreadable(dict[str, Any]):
        def __contains__(self, key: object) -> bool:
            if key == "messages":
                return True
            raise KeyError(key)

    good = {"instance_id": "ok", "messages": [{"role": "user", "content": "a"}]}
    bad = [{"role": "user", "content": "a"}, {"content": "no role"}]
    for bad_run, named in (({"instance_id": "django__django-11099", "messages": bad},
                        "thread 1 (id 'django__django-11099')"),
                       ({"task_id": 3, "trial": 1, "messages": bad}, "thread 1 (id '3/1')"),
                       ({"messages": bad}, "thread 1")):
        with pytest.raises(ValueError) as raised:
            vthread.scan([good, bad_run], format="openai")
        assert str(raised.value) == f"{named}: openai format: message 1 has no role"
    with pytest.raises(ValueError) as raised:
        vthread.scan([{"id": "x" * 500, "messages": [{"type": "user", "text": "a"}, 7]}])
    label = str(raised.value).split(":")[0]
    assert label.startswith("thread 0 (id 'xxx") and "..." in label and len(label) < 90
    from vthread.documents import thread_label

    assert thread_label(4, Unreadable(messages=[])) == "thread 4"


def test_a_data_frame_given_as_threads_or_texts_is_refused_saying_what_to_pass() -> None:
    """Iterating a DataFrame gives its column names, which would be read as threads (or
    texts): a pandas or polars DataFrame is a TypeError saying what to pass instead."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": ["a"], "messages": [[{"type": "user", "text": "x"}]]})
    with pytest.raises(TypeError, match=r'got DataFrame \(a pandas DataFrame: .*scan_arrow'
                                        r'.*df\.to_dict\("records"\)'):
        vthread.scan(frame)
    assert vthread.scan(frame.to_dict("records")).names == [None]
    with pytest.raises(TypeError, match=r"got a pandas DataFrame .*pass its text column"):
        vthread.scan_texts(pd.DataFrame({"text": ["a"]}))

    class DataFrame(list[Any]):  # a polars frame as vthread tells it: by type and module
        __module__ = "polars.dataframe.frame"

    with pytest.raises(TypeError, match=r"a polars DataFrame: .*df\.to_dicts\(\)"):
        vthread.scan(DataFrame([[{"type": "user", "text": "x"}]]))
    with pytest.raises(TypeError, match="got a polars DataFrame"):
        vthread.has_repeated_text_runs(DataFrame(["text"]))


def test_a_list_of_runs_read_as_a_thread_is_warned_about_or_an_error_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread that is a list of runs passed to the API: read as native messages its runs
    are alike, a false loop, and they go unread; the API warns, naming it and what to do. A
    JSONL line (or a document's run) holding a list of runs is an error record saying so,
    whatever the format and whether or not its runs read as one would loop (it was a false
    loop with a warning, or with two runs no loop and no word: a looping run in it passed
    --fail-on-loop and --fail-on-error unchecked)."""
    threads = [[{"type": "user", "text": f"task {i}"}, {"type": "bot", "text": f"done {i}"}]
               for i in range(8)]
    runs = [{"id": f"t{i}", "messages": thread} for i, thread in enumerate(threads)]
    batch = [*runs[:3], runs[3:]]
    advice = r"messages are runs \(its first holds its own messages and no \"type\"\): .*" \
             "pass each run as a thread of its own"
    for format_ in ("native", "auto"):
        with pytest.warns(UserWarning, match="thread 3's " + advice):
            assert vthread.scan(batch, format=format_).names == [None] * 3 + [
                "repeated_suffix"]
    with pytest.warns(UserWarning, match="the messages are runs"):
        vthread.describe_thread_cycle(runs[3:])
    said = ('its messages are runs (objects holding their own list of messages), not messages: '
            "give each run as a line of its own (jq -c '.[]')")
    path = tmp_path / "runs.jsonl"
    for held in (runs[3:], runs[3:5], {"id": "batch", "messages": runs[3:5]}):
        path.write_text("".join(json.dumps(line) + "\n" for line in [*runs[:3], held]))
        for flags in ([], ["--format", "native"], ["--jobs", "2"], ["--anywhere"],
                      ["--mask-volatile"]):
            code, out, err = run(["scan", str(path), "-q", "--fail-on-error", *flags],
                                 monkeypatch)
            *read, bad = records(out)
            assert code == 65 and [r["id"] for r in read] == ["t0", "t1", "t2"], flags
            assert "like runs" not in err, err  # (no warning that they are read as native)
            assert bad == {"id": "batch" if isinstance(held, dict) else None,
                           "file": str(path), "line": 4, "error": said}, flags
    # In a chat format too (it was "message 0 has no role"), and in a document of runs.
    chats = tmp_path / "chats.jsonl"
    chat = [{"role": "user", "content": "hi"}]
    chats.write_text(json.dumps({"id": "c", "messages": chat}) + "\n" + json.dumps(runs[:2])
                     + "\n")
    code, out, _ = run(["scan", str(chats), "-q", "--format", "openai"], monkeypatch)
    assert [r.get("error") for r in records(out)] == [None, said]
    document = tmp_path / "runs.json"
    document.write_text(json.dumps([*runs[:2], runs[2:5]]))
    code, out, _ = run(["scan", str(document), "-q"], monkeypatch)
    assert [r.get("error") for r in records(out)] == [None, None, said.replace(
        "a line of its own (jq -c '.[]')", "an element of the document's list")]
    # Runs keeping their messages under another key, read so (--messages-key): the same.
    keyed = tmp_path / "keyed.jsonl"
    keyed.write_text("".join(json.dumps(line).replace('"messages"', '"conv"') + "\n"
                             for line in batch))
    code, out, _ = run(["scan", str(keyed), "-q", "--messages-key", "conv"], monkeypatch)
    assert records(out)[3]["error"] == said
    # The first message's screen asks each of the run keys itself.
    assert all(vthread.documents.chat_like({"type": "x", key: []})
               for key in vthread.documents.MESSAGES_KEYS)
    # A native thread whose first message holds a list under another key is none of them.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vthread.scan([[{"type": "user", "text": "x", "messages": []}] * 3,
                      [{"steps": [], "id": 1}] * 3])
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        json.dumps({"id": "a", "messages": [{"type": "user", "text": "x", "messages": []}] * 3})
        + "\n" + json.dumps({"id": "b", "messages": [{"steps": [], "id": 1}] * 3}) + "\n")
    code, out, _ = run(["scan", str(mixed), "-q"], monkeypatch)
    assert [r.get("error") for r in records(out)] == [None, None]


def test_a_type_that_is_a_str_subclass_is_named_by_its_text() -> None:
    """The warning naming a Responses item read as native writes its type's text: a str
    subclass's own ``__format__`` is not run (it raised out of the warning)."""
    class Loud(str):
        def __format__(self, spec: str) -> str:
            raise ZeroDivisionError

    with pytest.warns(UserWarning, match=r'are OpenAI Responses items \("function_call" with '
                                         r'a "call_id"\)'):
        vthread.describe_thread_cycle([{"type": Loud("function_call"), "call_id": "c"}] * 4)

