"""The format detection's reading of a line in the core (``_core.line_format_evidence``) is
Python's (:func:`vthread.documents.run_format_evidence` of the parsed line) wherever the core
answers, and it answers for every line that is plain JSON; the byte test that passes over
plain chats (``_core.may_settle``) never passes over a line that settles a format."""

from __future__ import annotations

import json
import random
import re
import resource
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import (
    BASH_TEXTS,
    JSON_VALUES,
    TEXTS,
    anthropic_messages,
    langchain_messages,
    mini_swe_agent_messages,
    openai_messages,
    responses_items,
    swe_agent_messages,
    threads,
)

from benchmarks.workload import generate_threads, to_anthropic, to_openai, to_responses
from tests.test_cli import records
from tests.test_cli import run as run_cli
from vthread import _core, cli, documents, scan
from vthread.documents import declares_mini_swe_agent, run_format_evidence, settles

KINDS = st.sampled_from(["user", "bot", "activity", "message", "reasoning", "function_call",
                         "function_call_output", "custom_tool_call", "web_search_call",
                         "computer_call_output", "x"])
ITEMS = st.one_of(
    st.fixed_dictionaries({"type": KINDS}, optional={"role": st.just("user"),
                                                       "text": st.text(max_size=3)}),
    st.fixed_dictionaries({"type": st.one_of(st.integers(), st.none())}),
    st.fixed_dictionaries({"role": st.sampled_from(["assistant", "tool", "user"])},
                          optional={"content": st.one_of(st.text(max_size=3), JSON_VALUES),
                                    "action": st.one_of(st.text(max_size=3), st.none()),
                                    "tool_call_ids": st.just(["c1"])}),
    JSON_VALUES,
)
# Messages of every format the detection tells apart, mixed within a run so that every
# branch of the evidence (and every way of failing them all) is reached.
MESSAGES = st.one_of(ITEMS, openai_messages(), anthropic_messages(), responses_items(),
                     swe_agent_messages(), mini_swe_agent_messages(), langchain_messages())
# A command and what answers it, as mini-swe-agent's messages alone show their format: the
# observation opening with "<returncode>" or not, the command one fenced block or not.
ANSWERED = st.tuples(
    st.builds(lambda text: {"role": "assistant", "content": text}, BASH_TEXTS),
    st.builds(lambda text: {"role": "user", "content": text},
              st.one_of(st.builds("<returncode>{}".format, TEXTS), TEXTS)))
RUNS = st.one_of(
    st.lists(MESSAGES, max_size=6),
    st.builds(lambda turns, more: [m for turn in turns for m in turn] + more,
              st.lists(ANSWERED, min_size=1, max_size=3), st.lists(MESSAGES, max_size=2)),
    st.lists(st.one_of(openai_messages(), anthropic_messages()), max_size=6),
    st.lists(langchain_messages(), max_size=6),
    st.builds(lambda key, items, extra: {key: items, **extra},
              st.sampled_from(["messages", "traj", "history", "steps"]),
              st.lists(MESSAGES, max_size=5),
              st.fixed_dictionaries({}, optional={"trajectory_format": st.sampled_from(
                  ["mini-swe-agent-1", "other", 3]), "messages": st.just(None)})),
    threads(max_size=8),
    JSON_VALUES,
)
MESSAGES_KEYS = st.sampled_from([None, None, "steps", "messages", "traj"])
REALDATA = Path(__file__).parents[2] / "shared" / "realdata"


def _agrees(value: Any, messages_key: str | None) -> bool:
    """Whether the core answered for the line of ``value`` (asserting it answered as Python)."""
    line = json.dumps(value, allow_nan=True, ensure_ascii=False).encode("utf-8",
                                                                         "surrogatepass")
    read, found = _core.line_format_evidence(line, messages_key)
    if read:
        assert found == run_format_evidence(json.loads(line), messages_key), line[:300]
    return read


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RUNS, MESSAGES_KEYS)
def test_core_evidence_is_pythons(value: Any, messages_key: str | None) -> None:
    _agrees(value, messages_key)


TYPED = st.lists(st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "bot", "activity", "message", "reasoning", "function_call",
                              "function_call_output", "custom_tool_call", "web_search_call",
                              "computer_call", "x"])},
    optional={"role": st.just("assistant"), "text": st.just("t"), "content": st.just("c")}),
    min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(TYPED)
def test_typed_items_are_told_native_or_responses_as_python_tells_them(value: Any) -> None:
    """Runs of typed items, mostly without a role: the one pass over their members that
    tells native runs from Responses ones (every item a Responses type, one a call or an
    output), and from typed messages with a content and no text (in no format), answers as
    Python's three passes."""
    assert _agrees(value, None)


@settings(max_examples=300, deadline=None)
@given(RUNS, MESSAGES_KEYS)
def test_core_answers_every_plain_json_line(value: Any, messages_key: str | None) -> None:
    """A line of plain JSON (what the tape takes: no NaN, lone surrogate, escaped key or run
    of 19 digits) is the core's to judge, else the long lines it exists for would still be
    parsed in Python."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return
    if _plain(value):
        assert _agrees(value, messages_key)


def _escaped(value: Any) -> str:
    """``value`` as JSON text with every character of every string, keys too, written as a
    ``\\u`` escape (a surrogate pair beyond the BMP), as no writer does but JSON allows."""
    if isinstance(value, str):
        units = value.encode("utf-16-le", "surrogatepass")
        return '"' + "".join(f"\\u{int.from_bytes(units[i:i + 2], 'little'):04x}"
                             for i in range(0, len(units), 2)) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{_escaped(k)}:{_escaped(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(_escaped, value)) + "]"
    return json.dumps(value, allow_nan=True)


CONTROLS = "\x1b\x00\x07\x1f\x7f\n\t"
"""Control characters (a terminal's colours, a bell): JSON escapes them in every string."""


def _escapes_drawn(value: Any, draw: random.Random) -> str:
    """``value`` as JSON text whose strings, keys too, have characters written as ``\\u``
    escapes or literally at random, and now and then a control character added (as a
    terminal's coloured output brings), which JSON escapes: the escapes a line holds mixed."""
    if isinstance(value, str):
        text = list(value)
        if draw.random() < 0.3:
            text.insert(draw.randint(0, len(text)), draw.choice(CONTROLS))
        return '"' + "".join(
            "".join(f"\\u{int.from_bytes(unit, 'little'):04x}" for unit in (
                char.encode("utf-16-le", "surrogatepass")[i:i + 2]
                for i in range(0, len(char.encode("utf-16-le", "surrogatepass")), 2)))
            if draw.random() < 0.2 else json.dumps(char)[1:-1] for char in text) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{_escapes_drawn(k, draw)}:{_escapes_drawn(v, draw)}"
                              for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_escapes_drawn(item, draw) for item in value) + "]"
    return json.dumps(value, allow_nan=True)


def _holds_key(value: Any, key: str) -> bool:
    """Whether ``key`` is a key of an object in ``value``, at any depth."""
    if isinstance(value, dict):
        return key in value or any(_holds_key(item, key) for item in value.values())
    if isinstance(value, list):
        return any(_holds_key(item, key) for item in value)
    return False


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RUNS, MESSAGES_KEYS, st.sampled_from(["utf-8", "ascii", "escaped"]))
def test_may_settle_never_passes_over_a_settling_line(value: Any, messages_key: str | None,
                                                       written: str) -> None:
    """A line whose run settles a chat format as Python reads it (the reference the core
    is held to above) is never passed over by ``_core.may_settle``, however it is written:
    as UTF-8, with non-ASCII escaped (``json.dumps``'s default) or with every character
    escaped."""
    if written == "escaped":
        line = _escaped(value).encode("utf-8", "surrogatepass")
    else:
        line = json.dumps(value, allow_nan=True, ensure_ascii=written == "ascii").encode(
            "utf-8", "surrogatepass")
    if settles(run_format_evidence(json.loads(line), messages_key)):
        assert _core.may_settle(line), line[:300]


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RUNS)
def test_python_may_settle_never_passes_over_a_settling_run(value: Any) -> None:
    """The same of the parsed run's twin, for ``scan(format="auto")``'s batches."""
    if settles(run_format_evidence(value)):
        assert documents._may_settle(value), value


SETTLING = [
    [{"role": "tool", "content": "1"}],
    [{"role": "assistant", "content": None, "tool_calls": []}],
    [{"role": "developer", "content": "x"}],
    [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}],
    [{"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]}],
    [{"type": "custom_tool_call", "call_id": "c", "name": "f", "input": ""}],
    [{"type": "message", "role": "user", "content": "hi"}],
    [{"role": "assistant", "content": "x", "action": "ls"}],
    [{"role": "assistant", "content": "<function=bash>\n<parameter=command>ls</parameter>\n"
                                       "</function>"}],
    [{"role": "assistant", "content": "Run:\n```bash\nls\n```"},
     {"role": "user", "content": "<returncode>0</returncode>"}],
    {"trajectory_format": "mini-swe-agent-1", "messages": [{"role": "user", "content": "x"}]},
]
"""A run settling each chat format by each thing that can show it."""


def test_each_way_to_settle_a_format_is_kept() -> None:
    """Every one of :data:`SETTLING` settles a format, and both byte test and twin keep it."""
    for value in SETTLING:
        assert settles(run_format_evidence(value)), value
        assert _core.may_settle(json.dumps(value).encode()), value
        assert _core.may_settle(_escaped(value).encode()), value
        assert documents._may_settle(value), value


def test_may_settle_keeps_settling_runs_and_passes_over_plain_chats() -> None:
    """The workload's runs in every chat format are kept (their evidence settles), the same
    as plain chats (tool calls dropped) are passed over, and so are native runs."""
    for run in generate_threads(40, seed=31):
        for convert in (to_openai, to_anthropic, to_responses):
            line = json.dumps({"messages": convert(run)}).encode()
            if settles(run_format_evidence(json.loads(line))):
                assert _core.may_settle(line)
        plain = [{"role": "user" if m["type"] == "user" else "assistant", "content": m["text"]}
                 for m in run if m["type"] in ("user", "bot")]
        assert not _core.may_settle(json.dumps(plain).encode())
        assert not documents._may_settle(plain)
        assert run_format_evidence(plain) in (None, ("openai", False))
    assert _core.may_settle("[{\"role\": \"tool\"}]".encode("utf-16"))


def _plain(value: Any) -> bool:
    """Whether ``value``'s JSON has no key written with an escape and no integer of 19
    digits or more."""
    if isinstance(value, dict):
        return all(not any(c in '"\\' or c < " " for c in key) and _plain(item)
                   for key, item in value.items())
    if isinstance(value, list):
        return all(map(_plain, value))
    return not (isinstance(value, int) and abs(value) >= 10**18)


def test_generated_runs_in_every_format_are_judged_by_the_core() -> None:
    """The workload's runs, in each format and under each run key, get Python's evidence
    from the core; the native ones are ``("native", True)``, the others not."""
    runs = generate_threads(40, seed=29)
    for convert, named in ((list, "native"), (to_openai, "openai"),
                           (to_anthropic, "anthropic"), (to_responses, "responses")):
        for run in runs:
            converted = convert(run)
            for value in (converted, {"id": 1, "messages": converted},
                          {"history": converted}):
                assert _agrees(value, None)
            read, found = _core.line_format_evidence(json.dumps(converted).encode())
            assert read and found is not None
            if named == "native":
                assert found == ("native", True)
            else:
                assert found[0] in (named, "openai") and found[0] != "native"
    assert _core.line_format_evidence(b"[]") == (True, None)
    assert _core.line_format_evidence(b'{"trajectory_format": "mini-swe-agent-1", '
                                      b'"messages": [{"type": "user"}]}') == (
        True, ("mini-swe-agent", True))
    assert _core.line_format_evidence(b'[{"type": "function_call"}, {"type": "message"}]') == (
        True, ("responses", True))
    assert _core.line_format_evidence(b'[{"role": "user", "content": NaN}]') == (False, None)
    assert _core.line_format_evidence(b"not json") == (False, None)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs are not beside the "
                    "repository")
def test_published_runs_are_judged_as_python_judges_them() -> None:
    import gzip

    published = REALDATA / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz"
    lines = gzip.decompress(published.read_bytes()).splitlines()[:40]
    documents = [json.loads(path.read_bytes()) for path in sorted(
        (REALDATA / "swe-agent").glob("*.traj"))]
    documents += json.loads((REALDATA / "tau-bench_gpt-4o-airline.json").read_bytes())[:40]
    for value in [json.loads(line) for line in lines] + documents:
        assert _agrees(value, None)


def test_escaped_values_are_read_as_their_text() -> None:
    """A role, type or block type written with escapes (\\u0074ool, \\/) is its text, as
    json.loads reads it; escaped keys are left to Python."""
    lines = [
        rb'{"messages": [{"role": "\u0074ool", "content": "x"}]}',
        rb'[{"role": "assistant", "content": [{"type": "tool\u005fuse", "id": "a"}]}]',
        rb'[{"type": "function\u005fcall", "name": "f"}, {"type": "mess\u0061ge"}]',
        rb'[{"role": "assistant", "content": "<function=ls>\n<\/function>"}]',
        rb'[{"type": "us\u0065r", "text": "\ud83c\udf89"}]',
    ]
    for line in lines:
        read, found = _core.line_format_evidence(line)
        assert read and found == run_format_evidence(json.loads(line)), line
    assert _core.line_format_evidence(rb'[{"r\u006fle": "user"}]') == (False, None)


def test_mini_swe_agent_messages_alone_are_told_by_their_answered_commands() -> None:
    """Without the run object that declares it, a run whose command (one fenced bash block)
    is answered by a "<returncode>" observation is mini-swe-agent's, in Python and in the
    core; a chat that only shows a bash block, or answers with other text, is OpenAI's."""
    command = {"role": "assistant", "content": "THOUGHT: look.\n\n```bash\nls\n```"}
    observed = {"role": "user", "content": "<returncode>0</returncode>\n<output>a</output>"}
    plain = {"role": "user", "content": "thanks"}
    for messages, expected in (([command, observed], ("mini-swe-agent", True)),
                               ([observed, command], ("openai", False)),
                               ([command, plain], ("openai", False)),
                               ([{**command, "content": command["content"] * 2}, observed],
                                ("openai", False)),
                               ([command, {**observed, "tool_call_id": "c"}],
                                ("openai", True))):
        assert run_format_evidence(messages) == expected
        assert _core.line_format_evidence(json.dumps(messages).encode()) == (True, expected)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs are not beside the "
                    "repository")
def test_published_mini_swe_agent_messages_alone_are_detected() -> None:
    """The published mini-swe-agent runs reduced to their messages (what an evaluation that
    kept only the messages holds): every one is told as mini-swe-agent's, so format="auto"
    reads their commands as tool calls, not as a chat whose every turn looks alike."""
    import gzip

    import vthread

    path = REALDATA / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz"
    runs = [json.loads(line) for line in gzip.decompress(path.read_bytes()).splitlines()]
    messages = [run["messages"] for run in runs]
    assert {run_format_evidence(m) for m in messages} == {("mini-swe-agent", True)}
    assert (vthread.scan(messages, format="auto").names
            == vthread.scan(runs, format="auto").names)


def _reading(value: Any, format_: str) -> Any:
    """How Python reads a run's messages in ``format_``: its native messages and their
    sources, or the kind of error it raises."""
    try:
        return documents.native_messages(value, format_)
    except (TypeError, ValueError) as error:
        return type(error)


# Plain chats of every shape: roles with text, null, lists of parts or objects, an
# assistant's reasoning, refusal or bash block, a message type (its role's native type too,
# and the empty role and type).
PARTS = st.one_of(TEXTS, st.fixed_dictionaries(
    {}, optional={"type": st.sampled_from(["text", "image", "document", "input_text",
                                           "image_url", 3]),
                  "text": st.one_of(TEXTS, st.none())}))
PRINTABLE_ESCAPE = re.compile(rb"\\u00[2-7]")
"""A ``\\u00XX`` escape of a printable ASCII character, which may spell a word."""
ANSI_TEXTS = st.sampled_from(["\x1b[31merror\x1b[0m", "\x1b[1m\x1b[32m ok \x1b[0m\x07",
                              "\x00\x1f\x7f"])
PLAIN_MESSAGES = st.builds(
    lambda role, content, extra: {"role": role, **content, **extra},
    st.sampled_from(["user", "assistant", "system", "", "bot"]),
    st.fixed_dictionaries({}, optional={"content": st.one_of(
        TEXTS, BASH_TEXTS, ANSI_TEXTS, st.none(), st.lists(PARTS, max_size=3), PARTS)}),
    st.fixed_dictionaries({}, optional={
        "reasoning_content": st.one_of(TEXTS, ANSI_TEXTS, st.none()),
        "reasoning": st.one_of(TEXTS, st.none()),
        "refusal": st.one_of(TEXTS, st.none()),
        "type": st.sampled_from(["text", "reasoning", None, "", "message", "user", "bot",
                                 "system"]),
        "name": TEXTS}))


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PLAIN_MESSAGES, min_size=1, max_size=4), st.booleans())
def test_core_tells_where_a_plain_chat_reads_otherwise(messages: list[Any],
                                                      ascii_only: bool) -> None:
    """``_core.plain_reads_otherwise`` of a plain chat's line, where it answers, and the
    CLI's reading of a line it leaves to Python set a format's bit exactly when Python reads
    the chat otherwise in that format than as OpenAI's, and ``_core.line_marks`` never
    passes over such a line."""
    if run_format_evidence(messages) != ("openai", False):
        return
    line = json.dumps({"messages": messages}, ensure_ascii=ascii_only).encode(
        "utf-8", "surrogatepass")
    as_openai = _reading(messages, "openai")
    expected = sum(bit for format_, bit in (("anthropic", 1), ("responses", 2),
                                            ("mini-swe-agent", 4))
                   if _reading(messages, format_) != as_openai)
    # (the CLI's reading of a line the core leaves to Python)
    assert cli._python_reads_otherwise(line, None) == expected, line
    found = _core.plain_reads_otherwise(line)
    if found is None:
        return
    assert found == expected, line
    if found:
        assert _core.line_marks([line])[0] & _core.MAY_READ_OTHERWISE, line
    # (an escaped printable ASCII character may spell any word: every mark is then set; a
    # control character's escape, as a terminal's colours, spells none)
    assert (PRINTABLE_ESCAPE.search(line)
            or not _core.line_marks([line])[0] & _core.MAY_BE_NATIVE), line


# OpenAI's tool definitions, as a request log keeps them beside its messages, or anything.
TOOL_DEFINITIONS = st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("function"), "function": st.fixed_dictionaries(
        {"name": TEXTS}, optional={"description": st.one_of(TEXTS, BASH_TEXTS),
                                   "parameters": JSON_VALUES})}),
    MESSAGES, JSON_VALUES), max_size=3)


def _with_tools(value: Any, tools: Any, first: bool, in_messages: bool) -> Any:
    """``value`` (a run) with a ``tools`` key beside its messages, before or after them, and
    when ``in_messages`` in each of its messages that is an object too."""
    if in_messages:
        listed = value.get("messages") if isinstance(value, dict) else value
        if isinstance(listed, list):
            listed[:] = [{"tools": tools, **message} if isinstance(message, dict) else message
                         for message in listed]
    run = value if isinstance(value, dict) else {"messages": value}
    return {"tools": tools, **run} if first else {**run, "tools": tools}


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RUNS, TOOL_DEFINITIONS, st.booleans(), st.booleans(),
       st.sampled_from([None, None, "messages", "tools", "steps"]),
       st.sampled_from(["utf-8", "ascii", "escaped", "drawn"]),
       st.randoms(use_true_random=False))
def test_line_marks_never_pass_over_a_settling_line(
        value: Any, tools: Any, first: bool, in_messages: bool, messages_key: str | None,
        written: str, draw: random.Random) -> None:
    """``_core.line_marks`` marks every line whose run settles a chat format (passing over
    the tool definitions beside its messages, unless they are its messages), every plain
    chat that reads otherwise in some chat format, and every native thread with no ``role``
    key (a text or type that is ``"role"`` is no key), however it is written (escapes of
    every character, or of some and of control characters added, drawn in); without tools,
    its ``MAY_SETTLE`` is ``may_settle``'s answer."""
    value = _with_tools(value, tools, first, in_messages) if tools or first else value
    if written == "escaped":
        line = _escaped(value).encode("utf-8", "surrogatepass")
    elif written == "drawn":
        line = _escapes_drawn(value, draw).encode("utf-8", "surrogatepass")
    else:
        line = json.dumps(value, allow_nan=True, ensure_ascii=written == "ascii").encode(
            "utf-8", "surrogatepass")
    marks = _core.line_marks([line], messages_key)[0]
    evidence = run_format_evidence(json.loads(line), messages_key)
    if settles(evidence):
        assert marks & _core.MAY_SETTLE, line[:300]
    if evidence == ("openai", False) and _core.plain_reads_otherwise(line, messages_key):
        assert marks & _core.MAY_READ_OTHERWISE, line[:300]
    if evidence is not None and evidence[0] == "native" and not _holds_key(
            json.loads(line), "role"):
        assert marks & _core.MAY_BE_NATIVE, line[:300]
    if b'"tools"' not in line:
        assert bool(marks & _core.MAY_SETTLE) == _core.may_settle(line), line[:300]
    if marks & _core.DECLARES_MINI_SWE_AGENT:
        assert declares_mini_swe_agent(json.loads(line)), line[:300]


MEMBER_NAMES = st.sampled_from(["trajectory_format", "instance_id", "messages", "info", "n"])
MEMBER_VALUES = st.one_of(st.sampled_from(["mini-swe-agent-1", "mini-swe-agent", "other", ""]),
                          st.text(max_size=6), st.none(), st.integers(), st.just([{"a": "}"}]))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(MEMBER_NAMES, MEMBER_VALUES), max_size=6),
       st.sampled_from(["", " ", "\n", " \t"]), st.booleans(), st.randoms(use_true_random=False))
def test_a_declaration_is_marked_only_where_a_parse_finds_it(
        members: list[tuple[str, Any]], space: str, escape: bool, draw: random.Random) -> None:
    """``DECLARES_MINI_SWE_AGENT`` (told from the object's last members, with no parse) is
    set only for a run object ``json.loads`` finds declaring a mini-swe-agent run (the last
    of a repeated key kept), however its members are ordered, spaced or escaped; and it is
    set for every such object whose members after the declaration are strings, written
    plainly (as mini-swe-agent and the harnesses after it write them)."""
    body = ("," + space).join(f"{json.dumps(name)}{space}:{space}{json.dumps(value)}"
                              for name, value in members)
    line = ("{" + space + body + space + "}" + space).encode()
    if escape:
        line = _escapes_drawn(json.loads(line), draw).encode("utf-8", "surrogatepass")
    marks = _core.line_marks([line])[0]
    declares = declares_mini_swe_agent(json.loads(line))
    if marks & _core.DECLARES_MINI_SWE_AGENT:
        assert declares, line
    last = max((at for at, (name, _) in enumerate(members) if name == "trajectory_format"),
               default=None)
    if declares and not escape and last is not None and all(
            isinstance(value, str) for _, value in members[last:]):
        assert marks & _core.DECLARES_MINI_SWE_AGENT, line


def test_control_character_escapes_add_no_mark() -> None:
    """A plain chat of a terminal's coloured output (``\\u001b`` escapes) is marked as the
    same chat without them is (no mark: passed over without a parse); an escaped letter
    may spell any word, and marks it all."""
    plain = [{"role": "user", "content": "Run the tests."},
             {"role": "assistant", "content": "2 failed, 5 passed"}]
    coloured = [{"role": "user", "content": "Run the tests."},
                {"role": "assistant", "content": "\x1b[31m2 failed\x1b[0m, \x1b[32m5 passed\x07"}]
    lines = [json.dumps({"messages": chat}).encode() for chat in (plain, coloured)]
    assert b"\\u001b" in lines[1]
    assert _core.line_marks(lines) == bytes([0, 0])
    assert [_core.may_settle(line) for line in lines] == [False, False]
    escaped = lines[1].replace(b"failed", b"f\\u0061iled")
    all_marks = _core.MAY_SETTLE | _core.MAY_READ_OTHERWISE | _core.MAY_BE_NATIVE
    assert _core.line_marks([escaped]) == bytes([all_marks])


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def test_line_marks_grow_linearly_with_tools_values_that_do_not_close() -> None:
    """A line of many ``"tools": [`` openings that never close costs ``_core.line_marks`` a
    read of the line, not one to its end a key (16x the time for 4x the openings): 4x the
    openings costs at most 6x the CPU time, the minimum of five runs of 300 such lines each,
    run alternately (the bound of ``benchmarks.growth_report``)."""
    sizes = (1_000, 4_000)
    lines = {size: [b'{"tools": [' * size] * 300 for size in sizes}
    best = dict.fromkeys(sizes, float("inf"))
    for _ in range(5):
        for size in sizes:
            start = _cpu()
            marks = _core.line_marks(lines[size])
            best[size] = min(best[size], _cpu() - start)
            assert set(marks) == {_core.MAY_SETTLE | _core.MAY_BE_NATIVE}
    assert best[4_000] <= 6 * max(best[1_000], 1e-4), best


@pytest.mark.parametrize("message", [
    {"type": "user", "text": "role"},
    {"type": "user", "text": "type"},
    {"type": "role", "text": "x"},
    {"type": "user", "text": "the \"role\": field"},
    {"type": "user", "text": 'role": "user'},
    {"type": "user", "text": "x", "meta": {"kind": "role", "type": "role"}},
    {"type": "user", "text": "x", "meta": ["role", {"role ": 1}]},
])
def test_a_native_thread_naming_role_in_its_values_is_marked_native(
        message: dict[str, Any]) -> None:
    """A native thread whose text, type or meta holds ``role`` (or ``type``) as a value is
    marked as one that may be native, as Python reads it: a ``"role"`` string is a message's
    role only as a key."""
    value = {"messages": [message, {"type": "bot", "text": "ok"}]}
    assert run_format_evidence(value) == ("native", True)
    for line in (json.dumps(value).encode(), _escaped(value).encode()):
        assert _core.line_marks([line])[0] & _core.MAY_BE_NATIVE, line


BUILT_IN_ITEMS = ["file_search_call", "web_search_call", "computer_call", "computer_call_output",
                  "image_generation_call", "code_interpreter_call", "local_shell_call",
                  "local_shell_call_output", "shell_call", "shell_call_output",
                  "apply_patch_call", "apply_patch_call_output", "mcp_list_tools",
                  "mcp_approval_request", "mcp_approval_response", "mcp_call",
                  "item_reference", "compaction", "tool_search_call", "tool_search_output"]


@pytest.mark.parametrize("kind", BUILT_IN_ITEMS)
def test_a_responses_run_holding_a_built_in_tool_s_items_is_told_responses(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Responses run holding an item of a built-in tool (a web search, a computer call,
    an MCP call) is told a Responses run by Python and by the core, and read as one by
    ``vthread scan`` and ``scan(format="auto")``, the item an empty message of its type (no
    format was told: the command exited 2, the API raised)."""
    from vthread.adapters import detect_format

    run = [{"type": "message", "role": "user", "content": "Find the weather."},
           {"type": kind, "id": "x1", "status": "completed"},
           {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
           {"type": "function_call_output", "call_id": "c1", "output": "sunny"}]
    assert detect_format(run) == "responses"
    for value in (run, {"id": "r", "messages": run}, run[1:]):  # (no role: a call decides)
        _agrees(value, None)
        assert run_format_evidence(value) == ("responses", True)
    assert scan([run], format="auto").record(0)["messages"] == 4
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "r", "messages": run}) + "\n")
    code, out, err = run_cli(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and err == "" and [r["messages"] for r in records(out)] == [4]


def test_anthropic_turns_as_the_sdk_dumps_them_are_told_anthropic(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An assistant turn saved as Anthropic's ``Message.model_dump()`` is a ``"type":
    "message"`` item with a role, as a Responses message is: its tool_use blocks, which no
    Responses item holds, tell the run Anthropic's, by Python and by the core, so its loop is
    found by ``scan(format="auto")`` and ``vthread scan`` (it was read as Responses items, its
    calls media, and the loop went unseen)."""
    from vthread.adapters import detect_format

    def turn(index: int) -> list[dict[str, Any]]:
        return [{"id": f"msg_{index}", "type": "message", "role": "assistant",
                 "model": "claude", "stop_reason": "tool_use", "stop_sequence": None,
                 "content": [{"type": "text", "text": "Searching."},
                             {"type": "tool_use", "id": f"toolu_{index}", "name": "search",
                              "input": {"q": "same"}}]},
                {"role": "user", "content": [{"type": "tool_result",
                                              "tool_use_id": f"toolu_{index}",
                                              "content": "no results"}]}]

    run = [{"role": "user", "content": "Find it."}] + [m for i in range(4) for m in turn(i)]
    assert detect_format(run) == "anthropic"
    for value in (run, {"id": "r", "messages": run}):
        _agrees(value, None)
        assert run_format_evidence(value) == ("anthropic", True)
    expected = scan([run], format="anthropic").record(0)
    assert expected["verdict"] == "repeated_suffix"
    assert scan([run], format="auto").record(0) == expected
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "r", "messages": run}) + "\n")
    code, out, _ = run_cli(["scan", str(path), "-q"], monkeypatch)
    assert code == 0 and [r["verdict"] for r in records(out)] == ["repeated_suffix"]
