"""The core's loop attribution from a line's bytes (``scan.attribute_lines``) against its
twin, :func:`vthread.scan.attribute` over the messages Python parses from the same line.

The threads are drawn to loop in each of the four ways, with what the core must restate
exactly: tool names that ``repr`` escapes (quotes, control and non-printable characters),
payloads ``json.dumps`` writes (floats of every shape, escapes, nesting, a number beyond the
doubles), texts whose tail cuts a surrogate pair, and token figures ``math.fsum`` rounds.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.cli_chunks import chunk_task
from tests.strategies import (
    HOSTILE_LEAVES,
    HOSTILE_VALUES,
    StrSub,
    long_text_runs,
    text_run_texts,
)
from tests.test_attribution import (
    MEDIA_RESULTS,
    UNSHOWN_THREADS,
    attributed_by,
    every_message,
    media_loop,
)
from vthread import _core, cli
from vthread._heuristics import columns_of
from vthread._options import cycle_options
from vthread.scan import (
    ScanResult,
    _found_loops,
    attribute,
    attribute_lines,
    attribute_threads,
    verdicts,
)

#: A string the line writer turns into the literal ``1E400``: a number JSON holds and a
#: double does not (``json.dumps`` refuses it, so the excerpt shows its canonical text).
_BEYOND_DOUBLES = "\x00beyond"

NAMES = st.one_of(
    st.sampled_from(["ls", "it's", 'say "hi"', "a'b\"c", "back\\slash", "tab\tnew\nline",
                     "\x00\x7f", "é", "\u00a0", "\u200b", "\U0001f389", "\U000e0001", "_hidden",
                     "", "\u0378", "\ud7ff", "\u2028x"]),
    st.text(max_size=4),
)
STRINGS = st.one_of(
    st.sampled_from(["", "x", "  two   words\t\n", "é\u3000🎉", "q\"'\\", "\x01\x1f\x7f",
                     "word " * 30, "\u2028\u2029\x1c", "a" * 120, "\x0c\x08\x85", "-",
                     _BEYOND_DOUBLES]),
    st.text(max_size=8),
)
LEAVES = st.one_of(
    STRINGS,
    st.sampled_from([None, True, False, 0, -0, 1, 2**53 + 1, -(10**17), 10**17]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e16, 1e21, 1e-7, 1e-5, 5e-324, 123456789.5, -0.0, 0.1, 1e22, 1.5]),
)
#: Keys a line writes without an escape (the core leaves an escaped key to Python).
_PLAIN_KEYS = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E,
                                    exclude_characters='"\\'), max_size=3)
PAYLOADS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.one_of(st.sampled_from(["a", "b", "é", "k y"]),
                                                      _PLAIN_KEYS), inner, max_size=3)),
    max_leaves=10,
)
#: Base64 texts and data URLs as media parts hold them, some no base64 at all.
_MEDIA_DATA = st.sampled_from(["", "AA==", "QUJD\nREVG", "-_8=", "a b", "é🎉", "data:", "==="])
_DATA_URLS = st.one_of(
    st.builds(lambda header, data: f"data:{header},{data}",
              st.sampled_from(["image/png;base64", ";base64", "base64", "image/png",
                               "a;b;base64", "image/png;base64;x", " é\n;base64", "x,y;base64",
                               "image/png;BASE64", "a]b;Base64", "é;base64", ";base6"]),
              _MEDIA_DATA),
    st.sampled_from(["https://a.example/b.png", "data:image/png;base64", "DATA:;base64,AA",
                     "Data:x/y;bAsE64,AA", "dat:;base64,AA", "/tmp/a.wav", "data"]),
)
_NAMES = st.sampled_from([None, "", 3, "a.pdf", "r" * 39, "r" * 40, "é" * 41, "a]\n[b"])
#: Content parts in the media shapes the excerpt recognises, some broken, beside text parts.
MEDIA_PARTS = st.one_of(
    st.builds(lambda url: {"type": "image_url", "image_url": {"url": url}}, _DATA_URLS),
    st.builds(lambda kind, field, url: {"type": kind, field: url},
              st.sampled_from(["input_image", "input_file", "image"]),
              st.sampled_from(["image_url", "file_data"]), _DATA_URLS),
    st.builds(lambda url, name: {"type": "file", "file": {"filename": name, "file_data": url}},
              _DATA_URLS, _NAMES),
    st.builds(lambda url, name: {"type": "input_file", "filename": name, "file_data": url},
              _DATA_URLS, _NAMES),
    st.builds(lambda url: {"type": "image_url", "image_url": url}, _DATA_URLS),
    # Inspect's parts (the data URL in a field named by the type) and MCP's (raw base64)
    st.builds(lambda kind, url, form, named, name: {"type": kind, kind: url, "format": form,
                                                    "mime_type": named, "filename": name},
              st.sampled_from(["image", "audio", "video", "document"]), _DATA_URLS,
              st.sampled_from(["wav", "", None]), st.sampled_from(["application/pdf", "", None]),
              _NAMES),
    st.builds(lambda kind, data, named: {"type": kind, "data": data, "mimeType": named},
              st.sampled_from(["image", "audio", "video"]), st.one_of(_MEDIA_DATA, st.none()),
              st.sampled_from(["image/png", "", None, "a]b"])),
    st.builds(lambda data, form: {"type": "input_audio", "input_audio": {"data": data,
                                                                         "format": form}},
              _MEDIA_DATA, st.sampled_from(["wav", "", None, 3])),
    st.builds(lambda kind, source, media_type, data: {"type": kind, "source": {
        "type": source, "media_type": media_type, "data": data}},
              st.sampled_from(["image", "document", "image_url"]),
              st.sampled_from(["base64", "url", None]),
              st.sampled_from(["image/png", "", None, "a b\n"]), _MEDIA_DATA),
    st.builds(lambda kind, text: {"type": kind, "text": text},
              st.sampled_from(["text", "output_text", "refusal", None]), STRINGS),
    st.builds(lambda text: {"text": text}, STRINGS),
    st.sampled_from([{"type": "image_url", "image_url": "data:;base64,AA"}, {"type": ["image"]},
                     {"type": "input_audio", "input_audio": ["AA"]}, {"source": {}}]),
    STRINGS,
)
#: Tool results: any payload, a content part alone, or a list of content parts that may
#: hold media.
RESULTS = st.one_of(PAYLOADS, MEDIA_PARTS,
                    st.lists(st.one_of(MEDIA_PARTS, PAYLOADS), min_size=1, max_size=4))
TOKENS = st.sampled_from([0, 1, 3, 2.5, 0.1, -1, "3", None, True, 1e308, 1.7e308, 2**53 + 1,
                          -0.0, 1e-300, 7, 1e16, 1.0, 1e-16])


def _usage(draw: st.DrawFn, message: dict[str, Any]) -> dict[str, Any]:
    if draw(st.booleans()):
        message["usage"] = {"tokens": draw(TOKENS)}
    return message


@st.composite
def plain(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {"type": draw(st.one_of(st.sampled_from(["user", "bot"]), NAMES,
                                                      st.sampled_from([None, 1])))}
    if draw(st.integers(0, 5)):
        message["text"] = draw(st.one_of(STRINGS, st.sampled_from([None, 2])))
    if draw(st.integers(0, 3)) == 0:
        message["meta"] = draw(PAYLOADS)
    return _usage(draw, message)


@st.composite
def activity(draw: st.DrawFn, kind: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": draw(NAMES)}
    if draw(st.integers(0, 3)):
        function["arguments"] = draw(PAYLOADS)
    kind = kind or draw(st.sampled_from(["request", "response"]))
    if kind == "response" and draw(st.integers(0, 4)):
        function["result"] = draw(RESULTS)
    message = {"type": "activity", "text": draw(st.sampled_from(["", "x"])),
               "meta": {"activity": {"type": kind, "function": function}}}
    return _usage(draw, message)


@st.composite
def looping_threads(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A thread that loops one of the four ways (or, now and then, does not)."""
    messages = st.one_of(plain(), activity())
    thread = draw(st.lists(messages, max_size=6))
    shape = draw(st.integers(0, 4))
    if shape == 0:  # a repeated block, sometimes with a further, older partial copy
        block = draw(st.lists(messages, min_size=1, max_size=4))
        thread += block[draw(st.integers(0, len(block) - 1)):]
        thread += block * draw(st.integers(2, 4))
    elif shape == 4:  # two calls answered in an order no suffix repeats
        calls = []
        for _ in range(2):
            request = draw(activity("request"))
            answer = json.loads(json.dumps(request))
            answer["meta"]["activity"]["type"] = "response"
            answer["meta"]["activity"]["function"]["result"] = draw(RESULTS)
            calls.append([request, answer])
        for pick in (0, 1, 1, 0, 0, 1, 0):
            thread += calls[pick]
    elif shape == 1:  # an activity tail from a small pool of calls
        pool = draw(st.lists(activity(), min_size=1, max_size=3))
        thread += draw(st.lists(st.sampled_from(pool), min_size=8, max_size=14))
    elif shape == 2:  # the same settled result, again and again
        request = draw(activity("request"))
        answer = draw(activity("response"))
        answer["meta"]["activity"]["function"].setdefault("result", draw(RESULTS))
        for _ in range(draw(st.integers(3, 5))):
            thread += [request, answer] if draw(st.booleans()) else [answer]
    elif shape == 3:  # a runaway text
        text = draw(st.one_of(text_run_texts(), long_text_runs()))
        thread.append(_usage(draw, {"type": "bot", "text": text}))
    return thread


def _line(thread: list[dict[str, Any]], ensure_ascii: bool) -> bytes:
    text = json.dumps(thread, ensure_ascii=ensure_ascii)
    return text.replace(json.dumps(_BEYOND_DOUBLES, ensure_ascii=ensure_ascii),
                        "1E400").encode("utf-8", "surrogatepass")


def _copy(result: ScanResult) -> ScanResult:
    return replace(result, loop_start=result.loop_start.copy(), period=result.period.copy(),
                   repetitions=result.repetitions.copy(),
                   loop_messages=result.loop_messages.copy(),
                   loop_tokens=result.loop_tokens.copy(), signature=result.signature.copy(),
                   excerpt=list(result.excerpt))


def _unassigned(line: bytes) -> bool:
    """Whether the line holds a code point unassigned in this interpreter's Unicode (the
    core leaves a tool name or kind with one to Python's ``repr``, which a later Unicode
    may print)."""
    return any(unicodedata.category(c) == "Cn" for c in json.dumps(json.loads(line),
                                                                 ensure_ascii=False))


def _both_ways(lines: list[bytes], drawn: bool = False
               ) -> tuple[ScanResult, ScanResult, list[int]]:
    """The chunk's verdicts attributed by the core from the bytes and by Python from
    ``json.loads`` of the same lines (``drawn`` lines the core declines are drawn again)."""
    raw = cli._read_in_core(chunk_task(lines))
    if drawn:
        assume(raw is not None and not len(raw["declined"]))
    assert raw is not None and not len(raw["declined"])
    columns = columns_of(raw)
    result = verdicts(columns, cycle_options())
    looping = np.flatnonzero(result.codes).tolist()
    by_python = _copy(result)
    attribute(by_python, columns, looping, [json.loads(lines[row]) for row in looping])
    by_core = _copy(result)
    chosen = [lines[row] for row in looping]

    if looping:
        found = _core.attribute_lines(chosen, *_found_loops(result, np.asarray(looping)))
        for index in found["declined"].tolist():
            assert _unassigned(chosen[index]), f"the core left line {index} to Python"
    attribute_lines(by_core, columns, looping, chosen)
    return by_core, by_python, looping


def _assert_same(by_core: ScanResult, by_python: ScanResult) -> None:
    for name in ("loop_start", "period", "repetitions", "loop_messages", "signature"):
        assert getattr(by_core, name).tolist() == getattr(by_python, name).tolist(), name
    np.testing.assert_array_equal(by_core.loop_tokens, by_python.loop_tokens)
    assert by_core.excerpt == by_python.excerpt


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(looping_threads(), min_size=1, max_size=4), st.booleans())
def test_the_core_attributes_loops_as_python_does(threads: list[list[dict[str, Any]]],
                                                  ensure_ascii: bool) -> None:
    lines = [_line(thread, ensure_ascii) for thread in threads]
    by_core, by_python, _ = _both_ways(lines, drawn=True)
    _assert_same(by_core, by_python)


def test_every_heuristic_is_attributed_by_the_core() -> None:
    """One thread per heuristic, so none of the four is left untested by chance."""
    def tool(kind: str, name: str, arguments: Any, result: Any = None) -> dict[str, Any]:
        function = {"name": name, "arguments": arguments}
        if result is not None:
            function["result"] = result
        return {"type": "activity", "text": "",
                "meta": {"activity": {"type": kind, "function": function}}}

    call, done = tool("request", "ls 'x'", {"p": 1.5}), tool("response", "ls 'x'", {"p": 1.5},
                                                             "a\tb")
    other, answer = tool("request", "cat", [1e16]), tool("response", "cat", [1e16], "c")
    threads = [
        [{"type": "user", "text": "go"}] + [{"type": "bot", "text": "again", "usage": {
            "tokens": 0.1}}] * 5,
        [call, done, other, answer, other, answer, call, done, call, done, other, answer,
         call, done],
        [{"type": "user", "text": "go"}, call, done, {"type": "bot", "text": "x"}, done,
         {"type": "bot", "text": "y"}, done],
        [{"type": "bot", "text": "Intro. " + "Checking now. " * 12}],
    ]
    by_core, by_python, looping = _both_ways([_line(t, False) for t in threads])
    assert sorted(by_core.codes[looping].tolist()) == [1, 2, 3, 4]
    _assert_same(by_core, by_python)
    assert by_core.excerpt[0] == "bot: again"
    assert by_core.loop_tokens[0] == pytest.approx(0.5)


def test_a_payload_of_a_hyphen_is_shown_as_itself() -> None:
    """``"-"`` is how a missing payload is marked among canonical texts; a payload that is the
    string ``"-"`` (which ``json.loads`` hands out as the interpreter's one cached ``"-"``)
    is shown as itself by both readings, not as a missing one."""
    request = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": "ls", "arguments": "-"}}}}
    response = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": "ls", "arguments": "-", "result": "-"}}}}
    line = _line([{"type": "user", "text": "go"}] + [request, response] * 4, False)
    by_core, by_python, looping = _both_ways([line])
    assert looping == [0]
    _assert_same(by_core, by_python)
    assert by_core.excerpt[0] == "ls(-) -> -"  # the call shown once, by its response


@pytest.mark.parametrize(("result", "shown"), MEDIA_RESULTS)
def test_media_read_from_a_line_are_shown_as_python_shows_them(result: Any,
                                                               shown: str) -> None:
    """A result holding media inline, read from the line's bytes, reads as Python's twin
    reads it (its media type and decoded size), for a suffix and for a result run."""
    lines = [_line(media_loop(result), ensure_ascii) for ensure_ascii in (False, True)]
    thinking = [{"type": "reasoning", "text": f"try {i}"} for i in range(3)]
    answer = media_loop(result)[2]
    lines.append(_line([thinking[0], answer, thinking[1], answer, thinking[2], answer], False))
    by_core, by_python, looping = _both_ways(lines)
    assert looping == [0, 1, 2] and by_core.codes[2] == 3  # repeated_result_run
    _assert_same(by_core, by_python)
    assert by_core.excerpt == [f"shot({{}}) -> {shown}"] * 3


@pytest.mark.parametrize(("thread", "shown"), UNSHOWN_THREADS)
def test_excerpts_read_from_a_line_show_no_controls_as_python(thread: list[dict[str, Any]],
                                                              shown: str) -> None:
    """Names, types and texts holding line breaks, controls and bidirectional controls,
    read from the line's bytes (escaped or not), make Python's excerpt."""
    by_core, by_python, looping = _both_ways([_line(thread, False), _line(thread, True)])
    assert looping == [0, 1]
    _assert_same(by_core, by_python)
    assert by_core.excerpt == [shown] * 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ls", "grep", "x" * 30]),
                          st.text("ab\u00e9\U0001f389 ", max_size=60),
                          st.booleans(), st.booleans()), min_size=1, max_size=12),
       st.integers(2, 3))
def test_a_call_followed_by_its_response_is_shown_once_both_ways(
        steps: list[tuple[str, str, bool, bool]], copies: int) -> None:
    """A loop of tool calls each followed by its response (or by a response to other
    arguments, or by none), and of texts one repeats before an arrow: the core, which
    renders only until the excerpt is sure to be cut, folds a call into its response as
    Python does over the whole block, wherever the cut falls."""
    block: list[dict[str, Any]] = []
    for name, argument, answered, same in steps:
        if name == "ls" and not answered:
            # Texts where one repeats another before an arrow: no call, nothing folds.
            block += [{"type": "bot", "text": argument},
                      {"type": "bot", "text": f"{argument} -> {argument}"}]
            continue
        block.append({"type": "activity", "text": "", "meta": {"activity": {
            "type": "request", "function": {"name": name, "arguments": {"q": argument}}}}})
        if answered:
            block.append({"type": "activity", "text": "", "meta": {"activity": {
                "type": "response", "function": {
                    "name": name, "arguments": {"q": argument if same else argument + "!"},
                    "result": argument[::-1]}}}})
    line = _line([{"type": "user", "text": "go"}] + block * copies, False)
    by_core, by_python, looping = _both_ways([line])
    assume(looping == [0])
    _assert_same(by_core, by_python)


def test_a_loop_the_core_cannot_restate_is_left_to_python() -> None:
    """A heuristic code it does not know, a span outside the thread, or a tool name holding
    a code point unassigned in the tables' Unicode (a newer interpreter's ``repr`` may print
    it) is declined (its fields placeholders), never guessed."""
    line = json.dumps([{"type": "bot", "text": "a"}] * 4).encode()
    out = _core.attribute_lines([line, line, line], [9, 1, 1], [0, 0, 0], [1, 0, 3],
                                [4, 4, 2])
    assert out["declined"].tolist() == [0, 1, 2]
    assert out["excerpts"] == [None, None, None]
    answer = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": "ping\U0001fa75", "result": "ok"}}}}
    line = json.dumps([{"type": "bot", "text": "x"}, answer] * 3, ensure_ascii=False).encode()
    out = _core.attribute_lines([line], [3], [1], [2], [3])
    assert out["declined"].tolist() == [0]
    with pytest.raises(ValueError, match="one entry per line"):
        _core.attribute_lines([line], [1, 1], [0], [1], [4])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1e308), st.sampled_from([1e-16, 1.0, 1e16, 1e308, 0.1]),
                          st.integers(0, 2**53)), min_size=5, max_size=14))
def test_a_loops_tokens_are_summed_as_math_fsum_sums_them(figures: list[float]) -> None:
    """The core's own ``math.fsum`` (CPython's partials and its half-even correction), and
    ``token_total``'s infinity where ``fsum`` overflows."""
    thread = [{"type": "bot", "text": "again", "usage": {"tokens": figure}}
              for figure in figures]
    by_core, by_python, looping = _both_ways([_line(thread, True)])
    assert looping == [0]
    _assert_same(by_core, by_python)


def _records_of(threads: list[Any], core: bool) -> Any:
    """Every row's record, the looping rows attributed through the core's reading of the
    Python objects or by the plain twin that reads every message; or the exception raised."""
    try:
        return attributed_by(threads, attribute_threads if core else every_message)
    except Exception as error:  # both ways must raise alike
        return type(error)


@st.composite
def python_threads(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A looping thread as Python objects, some of its values what no JSON parser makes:
    ``str`` subclasses, lone surrogates, tuples, NumPy scalars, ``Decimal``, cycles."""
    thread = json.loads(json.dumps(draw(looping_threads())).replace(
        json.dumps(_BEYOND_DOUBLES), "1E400"))
    for message in thread:
        spot = draw(st.integers(0, 9))
        if spot == 0:
            message["type"] = StrSub(message.get("type") or "bot")
        elif spot == 1 and isinstance(message.get("text"), str):
            message["text"] = draw(st.sampled_from([StrSub(message["text"]), "\ud800 x",
                                                    message["text"] + "\udc00"]))
        elif spot == 2:
            function = message.get("meta", {})
            function = function.get("activity", {}) if isinstance(function, dict) else {}
            function = function.get("function") if isinstance(function, dict) else None
            if isinstance(function, dict):
                function[draw(st.sampled_from(["arguments", "result", "name"]))] = draw(
                    HOSTILE_VALUES)
        elif spot == 3:
            message["meta"] = draw(HOSTILE_VALUES)
        elif spot == 4:
            message["usage"] = {"tokens": draw(HOSTILE_LEAVES)}
    return thread


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(looping_threads(), python_threads()), min_size=1, max_size=4))
def test_the_core_attributes_python_threads_as_the_plain_twin_does(threads: list[Any]) -> None:
    """``vthread.scan``'s attribution, read by the core from the objects (a row with values
    Python reads otherwise than by their content is left to Python), against the twin that
    parses every message again."""
    assert _records_of(threads, core=True) == _records_of(threads, core=False)
