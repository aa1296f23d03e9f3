"""Loop attribution as a person counts it, and the excerpt of what repeats."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vthread
from tests import strategies
from vthread import _attribution, _jsvalue
from vthread import _reference as ref
from vthread._attribution import EXCERPT_CHARS, person_span, smallest_period
from vthread._heuristics import read_columns
from vthread._jsvalue import property_name
from vthread._options import cycle_options
from vthread.scan import attribute, attribute_by_messages, verdicts
from vthread.textrun import repeated_text_start, text_units, text_units_and_repeat
from vthread.volatile import mask_text, masked_thread


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "",
            "meta": {"activity": {"type": "request",
                                  "function": {"name": name, "arguments": arguments}}}}


def _reply(name: str, result: Any, **arguments: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "",
            "meta": {"activity": {"type": "response", "function": {
                "name": name, "arguments": arguments, "result": result}}}}


def _span(thread: list[dict[str, Any]]) -> tuple[int, int, int, int]:
    result = vthread.scan([thread])
    assert result.names == ["repeated_suffix"]
    return (int(result.loop_start[0]), int(result.period[0]), int(result.repetitions[0]),
            int(result.loop_messages[0]))


def test_four_identical_calls_are_one_call_four_times() -> None:
    """Four identical calls: period 1 x 4 from the first (the heuristic sees 2 x 2)."""
    ask = {"type": "user", "text": "fix it"}
    assert _span([ask] + [_call("ls", path=".")] * 4) == (1, 1, 4, 4)


def test_five_identical_calls_start_at_the_first_copy() -> None:
    """An odd count: the fifth, oldest copy is inside the loop too."""
    ask = {"type": "user", "text": "fix it"}
    assert _span([ask] + [_call("ls", path=".")] * 5) == (1, 1, 5, 5)


def test_a_block_entered_mid_way_starts_where_the_repetition_starts() -> None:
    """B C then (A B C) x 2: the repetition begins at B, with a 3-message block."""
    a, b, c = ({"type": "bot", "text": t} for t in "abc")
    x = {"type": "user", "text": "x"}
    assert _span([x, b, c, a, b, c, a, b, c]) == (1, 3, 2, 8)


def test_the_verdict_is_still_the_production_one() -> None:
    """Only the span is restated: has_repeated_suffix and describe are untouched."""
    thread = [{"type": "user", "text": "go"}] + [_call("ls")] * 4
    assert vthread.describe_thread_cycle(thread) == "repeated_suffix"
    assert vthread.scan([thread]).names == ["repeated_suffix"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from("ab"), max_size=12), st.lists(st.sampled_from("abc"),
       min_size=1, max_size=4), st.integers(2, 5))
def test_person_span_equals_the_brute_force_twin(head: list[str], block: list[str],
                                                 copies: int) -> None:
    """The KMP period and backward walk equal trying every period and every start."""
    keys = head + block * copies
    period = len(block)
    assert person_span(keys, period, copies) == ref.person_suffix_span(keys, period, copies)
    assert smallest_period(keys) == next(q for q in range(1, len(keys) + 1) if all(
        keys[i] == keys[i + q] for i in range(len(keys) - q)))


def test_excerpt_names_the_tool_and_arguments() -> None:
    """A repeated call and its result read as name(arguments) -> result, the call shown once
    (the response names it); a call whose response differs keeps its own part."""
    thread = [{"type": "user", "text": "go"}] + [
        _call("grep", pattern="TODO"), _reply("grep", "no matches", pattern="TODO")] * 3
    record = vthread.scan([thread]).record(0)
    assert record["excerpt"] == 'grep({"pattern":"TODO"}) -> no matches'
    thread = [{"type": "user", "text": "go"}] + [
        _call("grep", pattern="TODO"), _reply("grep", "none", pattern="FIXME")] * 3
    record = vthread.scan([thread]).record(0)
    assert record["excerpt"] == ('grep({"pattern":"TODO"}) | '
                                 'grep({"pattern":"FIXME"}) -> none')
    # Only a tool request folds into its response: a text that another text repeats before
    # an arrow stays; --anywhere's excerpt folds as the record's does.
    thread = [{"type": "user", "text": "go"}] + [
        {"type": "bot", "text": "Done"}, {"type": "bot", "text": "Done -> next step"}] * 3
    assert vthread.scan([thread]).record(0)["excerpt"] == "bot: Done | bot: Done -> next step"
    thread = [{"type": "user", "text": "go"}] + [
        _call("grep", pattern="TODO"), _reply("grep", "no matches", pattern="TODO")] * 3
    (found,) = vthread.scan([thread], anywhere=True).loops[0]
    assert found["excerpt"] == 'grep({"pattern":"TODO"}) -> no matches'


#: A 1x1 PNG (70 bytes) as base64.
PNG: Final = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
              "AAAABJRU5ErkJggg==")
_IMAGE_URL: Final = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
_LINKED: Final = {"type": "image_url", "image_url": {"url": "https://x.io/b.png"}}
#: Tool results holding media inline, in each shape the adapters keep, and how an excerpt
#: shows them: the media as ``[media type, decoded bytes]``, every other part as before
#: (a linked image, a URL-encoded data URL, a text that merely looks like base64).
class _Formatted(str):
    """A str subclass that formats and converts to other text than its content."""

    def __format__(self, spec: str) -> str:
        return "FMT"

    def __str__(self) -> str:
        return "STR"


MEDIA_RESULTS: Final[list[tuple[Any, str]]] = [
    ([_IMAGE_URL], "[image/png, 70 bytes]"),
    ([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}],
     "[image/png, 70 bytes]"),
    ([{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                      "data": "JVBERi0xLjQK"}}], "[application/pdf, 9 bytes]"),
    ([{"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}],
     "[audio/wav, 4 bytes]"),
    ([{"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4A=="}],
     "[image/jpeg, 4 bytes]"),
    ([{"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,"
                                                               "JVBERi0="}],
     "[application/pdf a.pdf, 5 bytes]"),
    ([{"type": "file", "file": {"filename": "a.pdf",
                                "file_data": "data:application/pdf;name=a.pdf;base64,JVBE\nRi0x"}}],
     "[application/pdf a.pdf, 6 bytes]"),
    ([{"type": "image_url", "image_url": {"url": "data:;base64,AA=="}}], "[image_url, 1 byte]"),
    ([{"type": "text", "text": "Saved\n"}, _IMAGE_URL, "and", _LINKED],
     'Saved [image/png, 70 bytes] and {"type":"image_url","image_url":{"url":"https://x.io/b.png"}}'),
    ([{"type": "text", "text": "SGk="}, {"type": "image_url", "image_url": {
        "url": "data:text/plain,hi"}}, _IMAGE_URL],
     'SGk= {"type":"image_url","image_url":{"url":"data:text/plain,hi"}} [image/png, 70 bytes]'),
    ([{"type": "image", "source": {"type": "url", "url": "u"}},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}],
     '{"type":"image","source":{"type":"url","url":"u"}} [image/png, 70 bytes]'),
    # Inspect's content parts (ContentImage, ContentAudio, ContentVideo, ContentDocument):
    # the data URL's media type, else the one the part names; a file path is shown as is.
    ([{"type": "image", "image": f"data:image/png;base64,{PNG}", "detail": "auto"}],
     "[image/png, 70 bytes]"),
    ([{"type": "audio", "audio": "data:;base64,UklGRg==", "format": "wav"}],
     "[audio/wav, 4 bytes]"),
    ([{"type": "video", "video": "data:video/mp4;base64,AAAAIGZ0eXBpc29t", "format": "mov"}],
     "[video/mp4, 12 bytes]"),
    ([{"type": "document", "document": "data:;base64,JVBERi0xLjQK",
       "filename": "quarterly-report.pdf", "mime_type": "application/pdf"}],
     "[application/pdf quarterly-report.pdf, 9 bytes]"),
    ([{"type": "audio", "audio": "/tmp/take.wav", "format": "wav"}, _IMAGE_URL],
     '{"type":"audio","audio":"/tmp/take.wav","format":"wav"} [image/png, 70 bytes]'),
    # MCP's image and audio content: the base64 itself beside its mimeType.
    ([{"type": "image", "data": PNG, "mimeType": "image/png"},
      {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}],
     "[image/png, 70 bytes] [audio/wav, 4 bytes]"),
    # LangChain's blocks: 0.3's base64 "data" tagged by "source_type", 1.0's "base64"; both
    # labelled by "mime_type". A data URL where base64 is expected (as some MCP servers
    # write "data") counts only its data, and its media type labels it.
    ([{"type": "image", "source_type": "base64", "data": PNG, "mime_type": "image/png"},
      {"type": "file", "source_type": "base64", "data": "JVBERi0=",
       "mime_type": "application/pdf"}],
     "[image/png, 70 bytes] [application/pdf, 5 bytes]"),
    ([{"type": "file", "data": "JVBERi0=", "mime_type": "application/pdf"}, _IMAGE_URL],
     '{"type":"file","data":"JVBERi0=","mime_type":"application/pdf"} [image/png, 70 bytes]'),
    ([{"type": "video", "base64": "AAAAIGZ0eXBpc29t", "mime_type": "video/mp4"},
      {"type": "file", "base64": "JVBERi0=", "mime_type": "application/pdf"},
      {"type": "audio", "base64": "UklGRg=="}],
     "[video/mp4, 12 bytes] [application/pdf, 5 bytes] [audio, 4 bytes]"),
    ([{"type": "image", "data": f"data:image/png;base64,{PNG}", "mimeType": "image/x"}],
     "[image/png, 70 bytes]"),
    ([{"type": "image", "data": "data:,AAAA", "mimeType": "image/x"}], "[image/x, 6 bytes]"),
    # An MCP tool result kept whole (CallToolResult: "content" and no "type") shows its
    # content's parts when one holds media; without media it is JSON as any other object.
    ({"content": [{"type": "text", "text": "Saved"},
                  {"type": "image", "data": PNG, "mimeType": "image/png"}], "isError": False},
     "Saved [image/png, 70 bytes]"),
    ({"content": [{"type": "text", "text": "Saved"}], "isError": False},
     '{"content":[{"type":"text","text":"Saved"}],"isError":false}'),
    ({"type": "result", "content": [_IMAGE_URL]},
     json.dumps({"type": "result", "content": [_IMAGE_URL]}, separators=(",", ":"))[:99]
     + "\u2026"),
    # One media part alone is the result, as a native message may hold it.
    ({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
     "[image/png, 70 bytes]"),
    ({"type": "image", "data": PNG, "mimeType": "image/png"}, "[image/png, 70 bytes]"),
    # RFC 2397's scheme and base64 token in any case; image_url given as the URL itself
    # (LangChain).
    ([{"type": "image_url", "image_url": f"DATA:image/png;BASE64,{PNG}"}],
     "[image/png, 70 bytes]"),
    ([{"type": "input_image", "image_url": "data:image/jpeg;Base64,/9j/4A=="}],
     "[image/jpeg, 4 bytes]"),
    # A long file name is cut; a bracket or a line break in a label becomes "_".
    ([{"type": "input_file", "filename": "r" * 60 + ".pdf",
       "file_data": "data:application/pdf;base64,JVBERi0="}],
     f"[application/pdf {'r' * 39}\u2026, 5 bytes]"),
    ([{"type": "image", "source": {"type": "base64", "media_type": "image/png]\n[x",
                                   "data": PNG}}], "[image/png___x, 70 bytes]"),
    ([{"type": "file", "file": {"filename": "a]b\n.pdf", "file_data": "data:;base64,AA=="}}],
     "[file a_b_.pdf, 1 byte]"),
    # A long media type is cut as a name is, so the size still shows; a C1 control (which
    # can hide what follows) becomes "_" as C0's do.
    ([{"type": "image", "data": "AAAA", "mimeType": "m" * 5000}],
     f"[{'m' * 39}\u2026, 3 bytes]"),
    ([{"type": "input_file", "filename": "a\x85b\x9f.pdf",
       "file_data": "data:application/pdf;base64,JVBERi0="}],
     "[application/pdf a_b_.pdf, 5 bytes]"),
    # A bidirectional control (Unicode's Bidi_Control, every one of them) would show what
    # follows it reversed ("x\u202egnp.exe" reads as "xexe.png"): each becomes "_".
    ([{"type": "input_file", "filename": "x\u202egnp.exe\u061c\u200e\u200f\u202a\u202b\u202c"
       "\u202d\u2066\u2067\u2068\u2069\u2065\u206a",
       "file_data": "data:\u200fapplication/pdf;base64,JVBERi0="}],
     "[_application/pdf x_gnp.exe___________\u2065\u206a, 5 bytes]"),
    # A text part without a type is text; base64 not last in the header is no base64 (the
    # URL is shown as written); an empty audio format names no media type.
    ([{"text": "Saved"}, _IMAGE_URL], "Saved [image/png, 70 bytes]"),
    ([{"type": "image_url", "image_url": {"url": "data:image/png;base64;x,AA=="}}, _IMAGE_URL],
     '{"type":"image_url","image_url":{"url":"data:image/png;base64;x,AA=="}} '
     "[image/png, 70 bytes]"),
    ([{"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": ""}}],
     "[input_audio, 4 bytes]"),
]


_LONG_NAME: Final = "t" * 300
UNSHOWN_THREADS: Final[list[tuple[list[dict[str, Any]], str]]] = [
    # A tool's name and a message's type in one line, as their texts are; a long name cut.
    ([{"type": "user", "text": "go"}]
     + [_call("search\nIGNORE"), _reply("search\nIGNORE", "none")] * 3,
     "search IGNORE({}) -> none"),
    ([{"type": "user", "text": "go"}]
     + [{"type": "bot\n\tx", "text": "r"}, {"type": "user", "text": "s"}] * 3,
     "bot x: r | user: s"),
    ([{"type": "user", "text": "go"}]
     + [_call(_LONG_NAME), _reply(_LONG_NAME, "r"), _call("ls"), _reply("ls", "x")] * 3,
     f"{'t' * 39}\u2026({{}}) -> r | ls({{}}) -> x"),
    # A terminal's escape, a NUL, a C1 control and a bidirectional override are shown as _,
    # in texts, names and results alike.
    ([{"type": "user", "text": "go"}]
     + [{"type": "bot", "text": "\x1b[31mred\x1b[0m x\u202egnp"},
        {"type": "user\u2066", "text": "s\x00\x9b"}] * 3,
     "bot: _[31mred_[0m x_gnp | user_: s__"),
    ([{"type": "user", "text": "go"}]
     + [_call("ls\u200f", path="a\u202eb"), _reply("ls\u200f", "\x07done", path="a\u202eb")] * 3,
     'ls_({"path":"a_b"}) -> _done'),
]


class _Sliced(str):
    """A str subclass whose own slicing and length say otherwise than its content."""

    def __getitem__(self, key: Any) -> str:
        return "EVIL"

    def __len__(self) -> int:
        return -1


def test_names_and_texts_given_as_str_subclasses_show_their_content() -> None:
    """A type, a tool name or a text given as a ``str`` subclass is shown by its content,
    not through its own ``__getitem__`` or ``__len__`` (a negative length raised)."""
    thread = [{"type": "user", "text": "go"}] + [
        {"type": _Sliced("bot"), "text": _Sliced("r")}, _call(_Sliced("ls")),
        _reply(_Sliced("ls"), "x")] * 3
    (by_python,) = attributed_by([thread], every_message)
    assert by_python["excerpt"] == vthread.scan([thread]).record(0)["excerpt"]
    assert by_python["excerpt"] == "bot: r | ls({}) -> x"


@pytest.mark.parametrize(("arguments", "result", "shown"), [
    ({1: "a", "1": "b"}, {"x": 1}, 'ls({"1":"b"}) -> {"x":1}'),
    ({"k": 0}, {True: 1, "true": 2, "n": [{None: 3, "null": 4}]},
     'ls({"k":0}) -> {"true":2,"n":[{"null":4}]}'),
    ({"\ud83d\ude00": 1, "\U0001f600": 2, 2.5: 3, "2.5": 4}, "r",
     'ls({"\U0001f600":2,"2.5":4}) -> r'),
    ({"a": 0, "\ud83d\ude00": 1, "\U0001f600": 2}, "r", 'ls({"a":0,"\U0001f600":2}) -> r'),
])
def test_excerpt_shows_keys_that_are_one_property_name_as_one_member(
        arguments: dict[Any, Any], result: Any, shown: str) -> None:
    """Keys of one object that are one property name to JavaScript (``1`` and ``"1"``,
    ``True`` and ``"true"``, a surrogate pair and its character) are one member of the
    excerpt, at the first key's place with the last one's value, as ``JSON.parse`` reads
    the object (json.dumps wrote the name twice); by the Python reading and the core's."""
    call = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": "ls", "arguments": arguments}}}}
    reply = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": "ls", "arguments": arguments,
                                         "result": result}}}}
    thread = [{"type": "user", "text": "go"}, *[call, reply] * 3]
    (by_python,) = attributed_by([thread], every_message)
    assert by_python["excerpt"] == shown
    assert vthread.scan([thread]).record(0)["excerpt"] == shown
    assert vthread.scan([thread], anywhere=True).record(0)["excerpt"] == shown


def _merged_by_recursion(value: Any) -> Any:
    """The obvious twin of ``_attribution._one_member_per_name``: the same merge, recursing."""
    if isinstance(value, dict):
        members: dict[Any, Any] = {}
        changed = False
        for key, item in value.items():
            merged = _merged_by_recursion(item)
            changed = changed or merged is not item
            members[property_name(key)] = merged
        return members if changed or len(members) < len(value) else value
    if isinstance(value, (list, tuple)):
        items = [_merged_by_recursion(item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return value


_COLLIDING_KEYS = st.sampled_from([1, "1", True, "true", None, "null", 2.5, "2.5", "k",
                                   "\ud83d\ude00", "\U0001f600"])
_PAYLOADS = st.recursive(
    st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                            st.dictionaries(_COLLIDING_KEYS, inner, max_size=5)),
    max_leaves=30)


@given(_PAYLOADS)
def test_merging_keys_with_a_stack_is_merging_them_by_recursion(value: Any) -> None:
    """The walk that merges keys naming one property, which keeps a stack of its own, gives
    what the recursive merge gives: the same text, and the value itself when nothing merges."""
    merged, twin = _attribution._one_member_per_name(value), _merged_by_recursion(value)
    assert (merged is value) == (twin is value)
    assert json.dumps(merged, ensure_ascii=False) == json.dumps(twin, ensure_ascii=False)


class _DistinctKey(str):
    """A key equal to no other: a dict holds several of one text, which are one name."""

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = str.__hash__


class _OwnItems(dict[Any, Any]):
    """A dict subclass (json and the walk read it through its items())."""


_ANY_KEYS = st.one_of(_COLLIDING_KEYS, st.builds(_DistinctKey, st.sampled_from(["k", "1", ""])))
_ANY_PAYLOADS = st.recursive(
    st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=3), st.builds(_DistinctKey, st.text(max_size=2))),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner),
        st.lists(st.tuples(_ANY_KEYS, inner), max_size=5).map(dict),
        st.lists(st.tuples(_ANY_KEYS, inner), max_size=5).map(_OwnItems)),
    max_leaves=30)


@given(_ANY_PAYLOADS)
def test_a_payload_is_shown_as_the_walk_merges_it(value: Any) -> None:
    """A payload's text taken as json writes it, when nothing in it can merge (told without
    the walk), is the text of the walk's merge: keys one name to JavaScript (1 and "1", a
    surrogate pair and its character, two str subclass keys of one text) merged."""
    expected = json.dumps(_merged_by_recursion(value), ensure_ascii=False,
                          separators=(",", ":"), allow_nan=False)
    assert _attribution._payload(value, str) == (value if isinstance(value, str) else expected)


@pytest.mark.parametrize("keys", [
    (1, "1"), (True, "true"), (None, "null"), (2.5, "2.5"), ("\ud83d\ude00", "\U0001f600"),
    (_DistinctKey("k"), _DistinctKey("k")), (_DistinctKey(""), _DistinctKey(""))])
@pytest.mark.parametrize("nesting", [0, 1, 2])
@pytest.mark.parametrize("types_told", [True, False])
def test_keys_of_one_name_are_merged_in_a_payload_at_any_depth(
        keys: tuple[Any, Any], nesting: int, types_told: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """(``types_told`` False: the value's types not asked, the text read for a repeat.)"""
    if not types_told:
        monkeypatch.setattr(_jsvalue, "_of_exact_builtins", lambda value: False)
    value: Any = {keys[0]: "first", "other": 0, keys[1]: "last"}
    for _ in range(nesting):
        value = [{"inner": value}]
    text = _attribution._payload(value, str)
    assert text == json.dumps(_merged_by_recursion(value), ensure_ascii=False,
                              separators=(",", ":"))
    assert "first" not in text and text.count("last") == 1


@pytest.mark.parametrize("nesting", ["list", "dict"])
def test_excerpt_of_a_deeply_nested_payload_is_what_json_writes(nesting: str) -> None:
    """A payload nested as deep as json's C encoder goes (deeper than Python's recursion) is
    shown as json writes it, its keys in their order and 1.0 as written (not as the
    canonical text), keys that are one property name merged (the walk that merges them
    keeps a stack of its own), by the Python reading and the core's."""
    deep: Any = {1: "a", "1": "b"}
    for _ in range(900):
        deep = [deep] if nesting == "list" else {"k": deep}
    arguments = {"path": "é.txt", "retry": 1.0, "0": deep}
    call = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": "ls", "arguments": arguments}}}}
    reply = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "response", "function": {"name": "ls", "arguments": arguments,
                                         "result": "r"}}}}
    thread = [{"type": "user", "text": "go"}, *[call, reply] * 3]
    (by_python,) = attributed_by([thread], every_message)
    opening = "[[[" if nesting == "list" else '{"k":{"k":'
    assert by_python["excerpt"].startswith('ls({"path":"é.txt","retry":1.0,"0":' + opening)
    assert _attribution._payload(arguments, str).count('"1"') == 1
    assert vthread.scan([thread]).record(0)["excerpt"] == by_python["excerpt"]
    assert vthread.scan([thread], anywhere=True).record(0)["excerpt"] == by_python["excerpt"]


@pytest.mark.parametrize(("thread", "shown"), UNSHOWN_THREADS)
def test_excerpt_is_one_line_without_controls(thread: list[dict[str, Any]], shown: str) -> None:
    """An excerpt is one readable line whatever the data holds: a name or a type with line
    breaks is flattened and a long one cut, and a control character or a bidirectional one
    (which would split the line, run a terminal's escape, or show the rest reversed) is
    shown as _; by the Python reading and the core's, here and --anywhere."""
    (by_python,) = attributed_by([thread], every_message)
    result = vthread.scan([thread], anywhere=True)
    assert by_python["excerpt"] == result.record(0)["excerpt"] == shown
    assert vthread.scan([thread]).record(0)["excerpt"] == shown
    for found in result.loops[0]:
        assert not re.search(r"[\x00-\x1f\x7f-\x9f\u202e\u2066\u200f]", found["excerpt"])


def media_loop(*results: Any) -> list[dict[str, Any]]:
    """A thread that takes the same screenshots again and again, each answered by ``results``
    in turn."""
    block: list[dict[str, Any]] = []
    for result in results:
        block += [_call("shot"), _reply("shot", result)]
    return [{"type": "user", "text": "go"}] + block * 3


@pytest.mark.parametrize(("result", "shown"), MEDIA_RESULTS)
def test_excerpt_shows_media_as_their_type_and_size(result: Any, shown: str) -> None:
    """A tool result holding an image, audio, a file or a document inline reads as its media
    type and decoded size, by the Python reading and by the core's, here and --anywhere."""
    thread = media_loop(result)
    (by_python,) = attributed_by([thread], every_message)
    result_ = vthread.scan([thread], anywhere=True)
    assert by_python["excerpt"] == result_.record(0)["excerpt"] == f"shot({{}}) -> {shown}"
    assert [found["excerpt"] for found in result_.loops[0]] == [f"shot({{}}) -> {shown}"]


@pytest.mark.parametrize(("result", "shown"), [
    ([{"type": "input_file", "filename": _Formatted("f.pdf"),
       "file_data": "data:a/b;base64,AAAA"}], "[a/b f.pdf, 3 bytes]"),
    ([{"type": "image", "data": "AAAA", "mimeType": _Formatted("image/png")}],
     "[image/png, 3 bytes]"),
])
def test_media_labels_given_as_str_subclasses_show_their_content(result: Any,
                                                                  shown: str) -> None:
    """A file name or a media type given as a ``str`` subclass is shown by its content, not
    by its ``__format__`` or ``__str__`` (the core leaves such values to Python)."""
    thread = media_loop(result)
    (by_python,) = attributed_by([thread], every_message)
    assert by_python["excerpt"] == vthread.scan([thread]).record(0)["excerpt"]
    assert by_python["excerpt"] == f"shot({{}}) -> {shown}"


def test_text_that_looks_like_base64_is_shown_as_itself() -> None:
    """Only media parts are recognised: a result that is base64-looking text, in a string or a
    text part, stays as written beside a screenshot that does not."""
    thread = media_loop("SGVsbG8sIHdvcmxkIQ==", [{"type": "text", "text": PNG[:20]}],
                        [_IMAGE_URL])
    assert vthread.scan([thread]).record(0)["excerpt"] == (
        f"shot({{}}) -> SGVsbG8sIHdvcmxkIQ== | shot({{}}) -> [{{\"type\":\"text\",\"text\":"
        f"\"{PNG[:20]}\"}}] | shot({{}}) -> [image/png, 70 bytes]")


def test_media_placeholders_change_the_excerpt_alone() -> None:
    """Two screenshots of the same size read alike, yet remain two loops: the signature is
    made of the messages' content, never of the excerpt."""
    first = media_loop([{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                     "data": "A" * 400}}])
    second = media_loop([{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": "B" * 400}}])
    records = [vthread.scan([thread]).record(0) for thread in (first, second)]
    assert records[0]["excerpt"] == records[1]["excerpt"] == "shot({}) -> [image/png, 300 bytes]"
    assert records[0]["signature"] != records[1]["signature"]
    assert ({**records[0], "signature": None}) == ({**records[1], "signature": None})


def test_under_masking_the_size_counts_the_masked_data() -> None:
    """With mask_volatile the excerpt is made of the masked messages, as the loop was found
    (docs/api.md): a base64 run that masking replaced counts as its placeholder, whose ``<``
    and ``>`` are no base64 symbols, so the size is the masked data's."""
    data = "iVBO/1234567890abcdef/12s+AAAA"  # a hex run and a duration, to be masked
    thread = media_loop([{"type": "image", "source": {"type": "base64",
                                                      "media_type": "image/png", "data": data}}])
    assert mask_text(data) == "iVBO/<hex>/<elapsed>+AAAA"
    assert vthread.scan([thread]).record(0)["excerpt"] == "shot({}) -> [image/png, 22 bytes]"
    masked = vthread.scan([thread], mask_volatile=True, anywhere=True)
    assert masked.record(0)["excerpt"] == masked.loops[0][0]["excerpt"] == (
        "shot({}) -> [image/png, 15 bytes]")
    assert masked.record(0) == vthread.scan([masked_thread(thread)], anywhere=True).record(0)


def test_excerpt_of_a_text_run_is_the_start_of_the_repeated_text() -> None:
    """A runaway text: the excerpt starts at its first repeated sentence, as written."""
    text = "Here is my plan. " + "I will check the status now. " * 12
    record = vthread.scan([[{"type": "bot", "text": text}]]).record(0)
    assert record["verdict"] == "repeated_message_text_run"
    assert record["excerpt"].startswith("I will check the status now. I will check")
    assert len(record["excerpt"]) <= EXCERPT_CHARS


def test_excerpt_is_one_bounded_line() -> None:
    """Huge, multi-line, non-JSON arguments still give one line of at most 240 characters."""
    big = {"text": "line\n" * 10_000, "nan": float("nan")}
    thread = [{"type": "user", "text": "go"}] + [_call("write", **big)] * 6
    excerpt = vthread.scan([thread]).record(0)["excerpt"]
    assert "\n" not in excerpt and len(excerpt) <= EXCERPT_CHARS
    assert excerpt.startswith("write(")


def test_excerpt_of_a_result_run_is_the_newest_result() -> None:
    """Identical results with thinking between: the newest settled response."""
    think = [{"type": "reasoning", "text": f"try {i}"} for i in range(3)]
    done = _reply("pytest", "1 failed", path="tests")
    thread = [think[0], done, think[1], done, think[2], done]
    record = vthread.scan([thread]).record(0)
    assert record["verdict"] == "repeated_result_run"
    assert record["excerpt"] == 'pytest({"path":"tests"}) -> 1 failed'


def test_healthy_threads_have_no_excerpt() -> None:
    """No loop, no excerpt."""
    assert vthread.scan([[{"type": "user", "text": "hi"}]]).record(0)["excerpt"] is None


def test_excerpt_is_valid_unicode() -> None:
    """A lone surrogate in the loop reads as U+FFFD; a pair as its character."""
    thread = [{"type": "user", "text": "go"}] + [
        {"type": "bot", "text": "\ud800 and \ud83c\udf89"}] * 4
    excerpt = vthread.scan([thread]).record(0)["excerpt"]
    assert excerpt == "bot: \ufffd and \U0001f389"
    excerpt.encode("utf-8")


def as_surrogate_pairs(value: Any) -> Any:
    """``value`` with every astral character of its strings written as its two surrogate
    code points: the same JavaScript value (SPEC §1)."""
    if isinstance(value, str):
        return "".join(chr(unit) for unit in memoryview(value.encode("utf-16-le")).cast("H"))
    if isinstance(value, dict):
        return {as_surrogate_pairs(key): as_surrogate_pairs(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_surrogate_pairs(item) for item in value]
    return value


#: Strings whose astral characters fall on every side of the excerpt's cuts (40 characters
#: for a name or a media label, 100 for a text or a payload, 240 for the whole line).
CUT_TEXTS = st.builds(lambda head, astral, tail: "x" * head + astral + "y" * tail,
                      st.integers(0, 245), st.sampled_from(["\U0001f389", "\U0001f389" * 3,
                                                            "\U000e0001a\U0001f389"]),
                      st.integers(0, 3))


@settings(max_examples=300, deadline=None)
@given(CUT_TEXTS, CUT_TEXTS, st.sampled_from(["type", "text", "tool", "arguments", "result",
                                              "media"]))
def test_excerpt_counts_a_surrogate_pair_as_its_character(first: str, second: str,
                                                          where: str) -> None:
    """A thread whose strings hold astral characters as surrogate pairs (two code points, as
    a Python caller may build them) is the same JavaScript value as the one holding the
    characters, and as the thread JSON bytes hold: its record, signature and excerpt
    included, is the same wherever a cut falls, and with the two forms mixed."""
    if where in ("type", "text"):
        message: dict[str, Any] = {"type": first if where == "type" else "bot",
                                   "text": second}
    elif where == "media":
        message = _reply("shot", [{"type": "image", "source": {
            "type": "base64", "media_type": first, "data": "aGk="}}], q=second)
    else:
        message = _reply(first if where == "tool" else "ls", second if where == "result" else "r",
                         q=second if where == "arguments" else "a")
    thread = [{"type": "user", "text": "go"}] + [message] * 4
    astral = vthread.scan([thread]).record(0)
    assert astral["excerpt"] is not None
    assert vthread.scan([as_surrogate_pairs(thread)]).record(0) == astral
    assert vthread.scan([json.loads(json.dumps(as_surrogate_pairs(thread)))]).record(0) == astral
    mixed = [{"type": "user", "text": "go"}] + [message, as_surrogate_pairs(message)] * 2
    assert vthread.scan([mixed]).record(0) == astral


SPACE_HEAVY = st.text(st.sampled_from(["a", "b", " ", "\n", "\t", "\u3000", "\x1c", "é"]),
                      max_size=3000)


@settings(max_examples=400, deadline=None)
@given(SPACE_HEAVY, st.integers(1, 120))
def test_one_line_of_a_head_equals_one_line_of_the_whole(text: str, limit: int) -> None:
    """Flattening only a growing head of a long output gives the line flattening all of it
    gives (whitespace runs across the head's end, leading runs longer than the head)."""
    import re

    from vthread._attribution import _one_line

    flat = re.sub(r"\s+", " ", text).strip()
    whole = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    assert _one_line(text, limit) == whole
    assert _one_line(" " * 5000 + text, limit) == whole


def attributed_by(threads: Sequence[Any], reading: Callable[..., None]
                  ) -> list[dict[str, Any]]:
    """Every row's record, the looping rows attributed by ``reading(result, columns, rows,
    threads of those rows)``."""
    options = cycle_options()
    columns = read_columns(threads, options)
    result = verdicts(columns, options)
    looping = np.flatnonzero(result.codes).tolist()
    reading(result, columns, looping, [threads[row] for row in looping])
    return [result.record(row) for row in range(len(threads))]


def every_message(result: Any, _columns: Any, rows: Any, threads: Any) -> None:
    """:func:`attribute_by_messages` in :func:`attribute`'s terms (it reads no columns)."""
    attribute_by_messages(result, rows, threads)


def _attributed(threads: list[list[dict[str, Any]]], fast: bool) -> list[dict[str, Any]]:
    """Every row's record, the looping rows attributed by the fast reading or its plain twin."""
    return attributed_by(threads, attribute if fast else every_message)


@settings(max_examples=300, deadline=None)
@given(st.lists(strategies.threads(max_size=40), min_size=1, max_size=6))
def test_fast_attribution_equals_reading_every_message(threads: list[list[dict[str, Any]]]) -> None:
    """Keys read only as far back as the repetition goes, one message per distinct call of a
    tail, a text's sentences read once: the same spans, signatures, excerpts and tokens as
    reading every message."""
    assert _attributed(threads, fast=True) == _attributed(threads, fast=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("abc"), max_size=30), st.lists(st.sampled_from("abc"),
       min_size=1, max_size=5), st.integers(2, 6))
def test_fast_attribution_walks_back_as_far_as_the_repetition(
        head: list[str], block: list[str], copies: int) -> None:
    """Suffixes whose repetition reaches back into the thread's head, by any distance."""
    thread = [{"type": "bot", "text": t} for t in head + block * copies]
    assert _attributed([thread], fast=True) == _attributed([thread], fast=False)


def test_fast_attribution_of_a_tail_with_repeated_and_distinct_calls() -> None:
    """A polling tail: the excerpt lists each distinct request once, in order of first
    appearance, and the signature is the sorted set of distinct calls (a response apart from
    the request with its name and arguments), exactly as the plain reading says."""
    thread = [{"type": "user", "text": "go"}]
    for path in "011001":  # no block of calls repeats at the end: not a repeated suffix
        # The ls responses carry no result: only their kind tells them from the request.
        unanswered = _reply("ls", None, path=path)
        del unanswered["meta"]["activity"]["function"]["result"]
        thread += [_call("status", job=1), _reply("status", "running"),
                   _call("ls", path=path), unanswered]
    fast, plain = _attributed([thread], fast=True), _attributed([thread], fast=False)
    assert fast == plain
    assert fast[0]["verdict"] == "repeated_activity_tail"
    assert fast[0]["excerpt"] == ('status({"job":1}) | ls({"path":"0"}) | ls({"path":"1"})')


@settings(max_examples=300, deadline=None)
@given(st.one_of(strategies.text_run_texts(), strategies.harsh_texts(), strategies.texts(),
                 strategies.long_text_runs()))
def test_units_and_repeat_in_one_reading_equal_the_two_readings(text: str) -> None:
    """A text run's signature and excerpt read the text's units once, as the two did."""
    assert text_units_and_repeat(text) == (text_units(text), repeated_text_start(text))


@settings(max_examples=100, deadline=None)
@given(st.lists(strategies.text_run_texts(), min_size=1, max_size=3))
def test_fast_attribution_of_text_runs(texts: list[str]) -> None:
    """Threads whose texts run away: one reading of each text gives the plain answers."""
    threads = [[{"type": "user", "text": "go"}, {"type": "bot", "text": text}] for text in texts]
    assert _attributed(threads, fast=True) == _attributed(threads, fast=False)


RUNAWAY: Final = {"type": "bot", "text": "Checking the logs now. " * 12, "usage": {"tokens": 7}}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(strategies.threads(max_size=30), st.integers(-1, 4)), min_size=1,
                max_size=6))
def test_scan_records_equal_reading_every_message(
        drawn: list[tuple[list[dict[str, Any]], int]]) -> None:
    """vthread.scan's records, made from the messages the core kept (of a thread that can
    loop only by a runaway text, its last five), equal the plain twin's over the threads
    themselves: threads ending in a runaway text followed by 0-4 messages of their own, or
    not (-1)."""
    threads = [thread if after < 0 else [*thread, RUNAWAY, *thread[:after]]
               for thread, after in drawn]
    result = vthread.scan(threads)
    assert [result.record(row) for row in range(len(threads))] == attributed_by(
        threads, every_message)
