"""mask_volatile: polling loops that differ only by the clock, and healthy threads kept so."""

from __future__ import annotations

import copy
import datetime
import decimal
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import threads

import vthread
from vthread import cli, fingerprint
from vthread.volatile import mask_text, mask_text_by_pattern, masked_thread_by_python

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
CYCLE_FUNCTIONS = ["has_repeated_suffix", "has_repeated_activity_tail",
                   "has_repeated_result_run", "is_thread_cyclic", "describe_thread_cycle"]


def _poll(index: int) -> list[dict[str, Any]]:
    """One BashOutput poll of a background shell and its "running" answer at a new time."""
    arguments = {"bash_id": "bash_7"}
    result = (f"<status>running</status>\n<timestamp>2026-11-30T14:{index // 60:02d}:"
              f"{index % 60:02d}.{index * 37 % 1000:03d}Z</timestamp>")
    return [
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "request", "function": {"name": "BashOutput", "arguments": arguments}}}},
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {"name": "BashOutput", "arguments": arguments,
                                             "result": result}}}},
    ]


POLLING = [{"type": "user", "text": "Run the full test suite."}] + [
    m for i in range(283) for m in _poll(i * 4)]


def test_polling_that_sees_only_the_clock_is_a_loop_when_masked() -> None:
    """283 identical polls, each answered with a new timestamp: no heuristic fires
    unmasked (every result differs); masked, the thread loops from the first poll."""
    assert vthread.describe_thread_cycle(POLLING) is None
    assert vthread.describe_thread_cycle(POLLING, mask_volatile=True) == "repeated_suffix"
    record = vthread.scan([POLLING], mask_volatile=True).record(0)
    assert (record["loop_start"], record["period"], record["repetitions"]) == (1, 2, 283)
    assert "<time>" in record["excerpt"] and "BashOutput" in record["excerpt"]
    assert vthread.scan([POLLING]).names == [None]


def test_masking_does_not_touch_the_callers_thread() -> None:
    """The masked copy is a copy: the thread given is unchanged."""
    before = copy.deepcopy(POLLING)
    vthread.scan([POLLING], mask_volatile=True)
    vthread.is_thread_cyclic(POLLING, mask_volatile=True)
    assert before == POLLING


def _step(index: int, text: str) -> list[dict[str, Any]]:
    arguments = {"path": f"src/part_{index}.py"}
    return [
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "request", "function": {"name": "edit", "arguments": arguments}}}},
        {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {"name": "edit", "arguments": arguments,
                                             "result": text}}}},
    ]


@pytest.mark.parametrize("result", [
    "wrote {n} lines at 12:00:0{d}",               # counts change, the clock masked
    "{n} passed, {d} failed in 0.{d}s",            # test results really change
    "page {n} of 40, request id 9f86d081884c{d}",  # paging with an id masked
])
def test_healthy_threads_whose_numbers_really_change_stay_healthy(result: str) -> None:
    """Progress with volatile values beside real numbers is still progress when masked."""
    thread = [{"type": "user", "text": "Refactor the package."}]
    for i in range(12):
        thread += _step(i, result.format(n=i * 7 + 3, d=i % 10))
    assert vthread.describe_thread_cycle(thread) is None
    assert vthread.describe_thread_cycle(thread, mask_volatile=True) is None


@pytest.mark.parametrize(("text", "masked"), [
    ("at 2026-12-01T02:50:38.123Z", "at <time>"),
    ("at 2026-12-01 02:50:38+01:00 ok", "at <time> ok"),
    ("Tue Dec  1 02:50:38 UTC 2026", "Tue Dec  1 <time> UTC 2026"),
    ("id 550e8400-e29b-41d4-a716-446655440000", "id <uuid>"),
    ("commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b", "commit <hex>"),
    ("decade accede facade", "decade accede facade"),
    ("epoch 1764556800 and 1764556800123", "epoch <epoch> and <epoch>"),
    ("took 2m30s, then 12 seconds, then 350ms", "took <elapsed>, then <elapsed>, then <elapsed>"),
    ("page 3 of 10, 120 lines, port 8080", "page 3 of 10, 120 lines, port 8080"),
    ("\x1b[38;21m[+] Time elapsed: 0.0062 sec.\x1b[0m",
     "\x1b[38;21m[+] Time elapsed: <elapsed>.\x1b[0m"),
])
def test_what_is_masked(text: str, masked: str) -> None:
    """Each documented pattern, and numbers that are not volatile left alone."""
    assert mask_text(text) == masked


def test_time_named_keys_are_masked_whatever_their_value() -> None:
    """A result object's time fields are masked; its other numbers kept."""
    (message,) = vthread.masked_thread([{"type": "activity", "meta": {"r": {
        "created_at": 1764556800, "elapsed": 12.5, "Timestamp": "now", "count": 3}}}])
    assert message["meta"] == {"r": {"created_at": "<volatile>", "elapsed": "<volatile>",
                                     "Timestamp": "<volatile>", "count": 3}}


def test_a_date_argument_is_progress_not_a_clock() -> None:
    """An agent that searches flights day after day (tau-bench's style, every search empty)
    progresses, masked or not: a key named ``date`` is a parameter, not a time reading; a
    ``searched_at`` beside it is the clock."""
    thread: list[dict[str, Any]] = [{"type": "user", "text": "Find me a flight to JFK."}]
    for day in range(15, 20):
        arguments = {"origin": "SFO", "destination": "JFK", "date": f"2024-05-{day}"}
        thread += [
            {"type": "activity", "text": "", "meta": {"activity": {"type": "request",
             "function": {"name": "search_direct_flight", "arguments": arguments}}}},
            {"type": "activity", "text": "", "meta": {"activity": {"type": "response",
             "function": {"name": "search_direct_flight", "arguments": arguments,
                          "result": {"flights": [], "searched_at": 1764556800 + day}}}}},
        ]
    assert vthread.describe_thread_cycle(thread, mask_volatile=True) is None
    masked = vthread.masked_thread(thread)[-1]["meta"]["activity"]["function"]
    assert masked["arguments"]["date"] == "2024-05-19"
    assert masked["result"]["searched_at"] == "<volatile>"
    assert masked == masked_thread_by_python(thread)[-1]["meta"]["activity"]["function"]


def _status_poll(result: Any) -> dict[str, Any]:
    return {"type": "activity", "text": "", "meta": {"activity": {"type": "response",
            "function": {"name": "job_status", "arguments": {"id": "j1"}, "result": result}}}}


@pytest.mark.parametrize("result", [
    lambda second: ("running", f"2024-05-06T07:08:{second:02d}Z"),
    lambda second: np.array(["running", f"2024-05-06T07:08:{second:02d}Z"]),
    lambda second: {"state": "running", "at": datetime.datetime(2024, 5, 6, 7, 8, second)},
    lambda second: {"state": "running", "timestamp": np.int64(1764556800 + second)},
    lambda second: {"state": "running", "created": decimal.Decimal(1764556800 + second)},
    lambda second: {"state": "running", "started": datetime.date(2024, 5, 1 + second)},
], ids=["tuple", "numpy-array", "datetime", "numpy-int", "decimal", "date-under-time-key"])
def test_values_compared_as_arrays_numbers_or_texts_are_masked_as_those(result: Any) -> None:
    """A tool result given as a tuple or NumPy array (compared as a JSON array), a
    ``datetime`` (compared as its text) or a NumPy or ``Decimal`` number (compared as the
    number) is masked as the array, text or number it is compared as: the poll that sees only
    the clock is a loop, as it is with lists, strings and ints."""
    thread = [{"type": "user", "text": "wait for j1"}] + [
        _status_poll(result(second)) for second in range(4)]
    assert vthread.describe_thread_cycle(thread) is None
    assert vthread.describe_thread_cycle(thread, mask_volatile=True) == "repeated_suffix"
    assert vthread.scan([thread], mask_volatile=True).record(0)["verdict"] == "repeated_suffix"
    masked = vthread.masked_thread(thread)
    assert _typed(masked) == _typed(masked_thread_by_python(thread))
    assert len({fingerprint(message) for message in masked[1:]}) == 1


def test_a_value_compared_as_null_or_an_array_of_numbers_is_kept() -> None:
    """A date compared as null (a ``datetime`` equal to nothing, as pandas' ``NaT``) under
    a time-naming key is kept, as None is there (made ``"<volatile>"`` it differed from a
    None it equals unmasked, and a loop was lost); an array of numbers is kept whole, the
    same object, nothing in it being masked."""

    class NotATime(datetime.datetime):
        def __ne__(self, other: object) -> bool:
            return True

    missing = NotATime(2024, 5, 6)
    embedding = np.arange(4, dtype=np.float32)
    polls = [{"state": "running", "finished_at": value, "embedding": embedding}
             for value in [missing, None, None, missing, None, missing, missing, None]]
    thread = [{"type": "user", "text": "wait"}] + [_status_poll(poll) for poll in polls]
    masked = vthread.masked_thread(thread)
    results = [message["meta"]["activity"]["function"]["result"] for message in masked[1:]]
    assert [result["finished_at"] for result in results] == [poll["finished_at"] for poll in polls]
    assert all(result["embedding"] is embedding for result in results)
    assert _typed(masked) == _typed(masked_thread_by_python(thread))
    assert (vthread.describe_thread_cycle(thread, mask_volatile=True)
            == vthread.describe_thread_cycle(thread))


def test_a_date_is_kept_as_a_date_argument_is() -> None:
    """A ``date`` (no time of day) outside a time-naming key is a day searched or booked,
    kept as it is: its text, written as midnight, would otherwise read as a clock."""
    thread = [{"type": "user", "text": "Find me a flight."}] + [
        _status_poll({"flights": [], "date": datetime.date(2024, 5, day)}) for day in range(1, 5)]
    assert vthread.describe_thread_cycle(thread, mask_volatile=True) is None
    masked = vthread.masked_thread(thread)
    assert masked[1]["meta"]["activity"]["function"]["result"]["date"] == datetime.date(2024, 5, 1)


def test_mask_volatile_must_be_a_bool() -> None:
    """A flag that is not a bool is a TypeError naming it, on every API."""
    for name in CYCLE_FUNCTIONS:
        with pytest.raises(TypeError, match="mask_volatile"):
            getattr(vthread, name)([], mask_volatile="yes")
    with pytest.raises(TypeError, match="mask_volatile"):
        vthread.scan([], mask_volatile=1)


@settings(max_examples=200, deadline=None)
@given(threads())
def test_masked_answers_are_the_answers_on_the_masked_copy(thread: list[Any]) -> None:
    """mask_volatile=True is exactly the plain answer on masked_thread(thread), for every
    cycle function and scan."""
    masked = vthread.masked_thread(thread)
    for name in CYCLE_FUNCTIONS:
        function = getattr(vthread, name)
        assert function(thread, mask_volatile=True) == function(masked), name
    assert (vthread.scan([thread], mask_volatile=True).record(0)
            == vthread.scan([masked]).record(0))


def test_in_a_chat_format_masking_is_of_the_translated_messages() -> None:
    """With format=F, mask_volatile=True answers as the plain call on the masked native
    translation (the identity api.md states); masking the chat messages themselves would
    leave an OpenAI content, which is no native text, as it is."""
    from benchmarks.workload import generate_threads, to_anthropic, to_openai, to_responses
    from vthread.adapters import to_native

    poll = [{"role": "user", "content": "is the job done?"}]
    for second in range(4):
        poll += [{"role": "assistant", "content": None, "tool_calls": [{
                     "id": f"c{second}", "type": "function",
                     "function": {"name": "status", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": f"c{second}",
                  "content": f"pending at 2024-05-01T10:00:0{second}Z"}]
    assert vthread.describe_thread_cycle(poll, format="openai") is None
    chats = [("openai", poll)] + [
        (name, convert(thread)) for thread in generate_threads(12, seed=21)
        for name, convert in (("openai", to_openai), ("anthropic", to_anthropic),
                              ("responses", to_responses))]
    for name, chat in chats:
        masked = vthread.masked_thread(to_native(chat, name))
        for function_name in CYCLE_FUNCTIONS:
            function = getattr(vthread, function_name)
            assert function(chat, format=name, mask_volatile=True) == function(masked), (
                function_name, name)
    assert vthread.describe_thread_cycle(poll, format="openai", mask_volatile=True) == (
        "repeated_suffix")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_masking_is_idempotent(text: str) -> None:
    """Masked text has nothing left to mask."""
    once = mask_text(text)
    assert mask_text(once) == once


# Pieces of the pattern and of its near misses: digits of other scripts (re's \\d), the
# micro and Greek mu signs, a superscript two (a word character, no \\d), a combining mark (no
# word character), a lone surrogate, terminal colour codes, every unit's letters.
_VOLATILE_PIECES = st.sampled_from([
    "0", "1", "7", "9", "a", "f", "A", "F", "e", "x", "g", "T", "Z", "-", ":", ".", ",", " ",
    "+", "[", ";", "_", "\u00b5", "\u03bc", "\u0663", "\uff15", "\u00b2", "\u0301", "\ud800",
    "\x1b", "\n", "s", "m", "h", "d", "n", "u", "ms", "sec", "secs", "seconds", "min", "mins",
    "minutes", "hr", "hrs", "hours", "day", "days", "2026-12-01", "T02:50", ":38", ".125",
    "+05:30", "+0530", "12:04:59", "1764556800", "123", "0f8e2a4c", "-1b3d", "-4e5f",
    "-8a9b-0c1d2e3f4a5b", "9f86d081884c", "deadbeefcafe", "2m30s", "3.2s", "1h2m3s4ms",
])


@settings(max_examples=3000, deadline=None)
@given(st.lists(_VOLATILE_PIECES, max_size=24).map("".join) | st.text())
def test_core_masking_is_res(text: str) -> None:
    """The core's matcher gives exactly what re.sub gives with the module's pattern."""
    assert mask_text(text) == mask_text_by_pattern(text)


@pytest.mark.skipif(not REALDATA.is_dir(), reason="the published runs are not "
                    "beside the repository")
def test_core_masking_of_real_texts() -> None:
    """The same over every text and string value of the published tau-bench runs (the
    product's users' data: tool results full of ids, times and numbers)."""
    path = REALDATA / "tau-bench_gpt-4o-airline.json"
    strings: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                strings.append(key)
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(json.loads(path.read_text(encoding="utf-8")))
    assert len(strings) > 10_000
    differing = [t for t in strings if mask_text(t) != mask_text_by_pattern(t)]
    assert not differing, differing[:3]
    assert sum(mask_text(t) != t for t in strings) > 100  # the data does hold volatile values


def test_core_masking_keeps_a_subclass_out_and_refuses_a_non_text() -> None:
    """A str subclass comes back as an exact str (as re.sub returns one); bytes are refused."""
    class Named(str):
        pass

    masked = mask_text(Named("at 12:00:01"))
    assert type(masked) is str and masked == "at <time>"
    unchanged = mask_text(Named("nothing here"))
    assert type(unchanged) is str and unchanged == "nothing here"
    with pytest.raises(TypeError):
        mask_text(b"12:00:01")  # type: ignore[arg-type]


class _Record(Mapping[str, Any]):
    """A mapping that is no dict: the Python function copies it."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class _Key(str):
    """A str subclass as a key (its lower() is its own to say)."""


class _Items(list[Any]):
    """A list subclass."""


_TIME_KEYS = st.sampled_from(["time", "Date", "Created_At", "elapsed_ms", "DURATION", "started",
                              "\u212aey_time", "\u0130time", "ti\u212ame", "count", "name",
                              "id", "_at", "at", "x_seconds"])
_LEAVES = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
           | st.lists(_VOLATILE_PIECES, max_size=6).map("".join) | st.text(max_size=8)
           | st.tuples(st.just("12:00:01"))
           | st.integers(0, 2**62).map(np.int64) | st.integers().map(decimal.Decimal)
           | st.builds(np.array, st.lists(st.sampled_from(["12:00:01", "x", "3.2s"]), max_size=3))
           | st.datetimes(timezones=st.none() | st.just(datetime.UTC))
           | st.dates())


def _metas(depth: int = 3) -> st.SearchStrategy[Any]:
    if depth == 0:
        return _LEAVES
    inner = _metas(depth - 1)
    return st.one_of(
        _LEAVES,
        st.lists(inner, max_size=4),
        st.dictionaries(_TIME_KEYS | st.text(max_size=4), inner, max_size=4),
        st.dictionaries(_TIME_KEYS, inner, max_size=3).map(_Record),
        st.lists(inner, max_size=3).map(_Items),
        st.dictionaries(_TIME_KEYS.map(_Key), inner, max_size=3),
        st.dictionaries(st.integers(), inner, max_size=2),
    )


_MASKABLE_MESSAGES = st.fixed_dictionaries(
    {"type": st.sampled_from(["bot", "activity"])},
    optional={"text": _LEAVES, "meta": _metas(), "usage": st.just({"tokens": 3})},
) | st.builds(_Record, st.fixed_dictionaries({"text": st.just("at 12:00:01")})) | st.integers()


@settings(max_examples=1500, deadline=None)
@given(st.lists(_MASKABLE_MESSAGES, max_size=6) | threads())
def test_core_masked_thread_is_the_pythons(thread: list[Any]) -> None:
    """The core's copy equals the Python function's, value for value and type for type
    (what the core leaves to Python included), and the thread given is left as it was."""
    before = repr(thread)
    masked = vthread.masked_thread(thread)
    assert _typed(masked) == _typed(masked_thread_by_python(thread))
    assert repr(thread) == before


def _typed(value: Any) -> Any:
    """``value`` with every container's and leaf's type spelled out (so 1 != True != 1.0)."""
    if isinstance(value, Mapping):
        return (type(value).__name__, [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(item) for item in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def test_a_meta_changed_while_it_is_copied_is_pythons_runtime_error() -> None:
    """A key whose hash changes the dict being copied: both copies raise RuntimeError (an
    Exception, not the core's panic), and nothing is returned half made."""
    class Meddling:
        def __init__(self, owner: dict[Any, Any]) -> None:
            self.owner, self.calls = owner, 0

        def __hash__(self) -> int:
            self.calls += 1
            if self.calls == 2:  # the copy's insertion, after the dict's own
                self.owner["late"] = 1
            return 1

        def __eq__(self, other: object) -> bool:
            return self is other

    for copier in (masked_thread_by_python, vthread.masked_thread):
        meta: dict[Any, Any] = {}
        meta[Meddling(meta)] = "at 12:00:01"
        meta["b"] = "c"
        with pytest.raises(RuntimeError, match="changed size during iteration"):
            copier([{"type": "bot", "meta": meta}])


def test_core_masked_thread_copies_a_shared_or_cyclic_container_once() -> None:
    """A list reached twice is one copy in two places; a dict inside itself stays so."""
    shared = ["at 12:00:01"]
    cyclic: dict[str, Any] = {"when": "12:00:01"}
    cyclic["self"] = cyclic
    (message,) = vthread.masked_thread([{"type": "bot", "meta": {
        "a": shared, "b": shared, "c": cyclic}}])
    meta = message["meta"]
    assert meta["a"] == ["at <time>"] and meta["a"] is meta["b"] and meta["a"] is not shared
    assert meta["c"]["self"] is meta["c"] and meta["c"]["when"] == "<time>"
    assert cyclic["when"] == "12:00:01"


def test_cli_mask_volatile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--mask-volatile finds the polling loop the default scan does not."""
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "poll", "messages": POLLING}) + "\n")
    assert cli.main(["scan", str(path), "-q"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert cli.main(["scan", str(path), "-q", "--mask-volatile"]) == 0
    masked = json.loads(capsys.readouterr().out)
    assert plain["verdict"] is None and masked["verdict"] == "repeated_suffix"
    assert masked["messages"] == len(POLLING)
    assert re.fullmatch(r"[0-9a-f]{16}", masked["signature"])


def test_masked_thread_of_chat_messages_warns_that_it_masks_none() -> None:
    """Chat messages hold their text under "content", which masked_thread does not mask:
    it warns, naming the way to mask them (they came back unchanged in silence); native
    messages draw no warning."""
    import warnings

    chat = [{"role": "user", "content": "at 2024-05-06T07:08:09Z"}]
    with pytest.warns(UserWarning, match=r'^the messages have a "role" \(chat messages\): read '
                                         "as native ones, they are returned unmasked"):
        assert vthread.masked_thread(chat) == chat
    # LangChain's, in each dict form (they too came back unchanged in silence).
    fields = {"type": "tool", "content": "running at 2024-05-06T07:08:09Z", "tool_call_id": "c"}
    for langchain in (fields, {"type": "tool", "data": fields}):
        with pytest.warns(UserWarning, match="are returned unmasked .*; translate them first"):
            assert vthread.masked_thread([langchain]) == [langchain]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        masked = vthread.masked_thread([{"type": "user", "text": "at 2024-05-06T07:08:09Z"}])
        # A native thread whose first message holds a "data" (as LangChain's wrap theirs in)
        # is masked, with no word (it was warned of as returned unmasked).
        native = [{"type": "activity", "data": {"pid": 1}, "meta": {"t": "at 12:00:01"}},
                  {"type": "bot", "text": "ok 12:00:01"}]
        assert vthread.masked_thread(native)[1]["text"] == "ok <time>"
    assert masked[0]["text"] != "at 2024-05-06T07:08:09Z"


def test_a_mapping_whose_get_and_storage_disagree_is_masked_as_it_is_read() -> None:
    """A message whose own ``get`` says another text than it stores: masked, its copy holds
    what the checks read (its ``get``), so nothing volatile in it leaves the verdict as it
    was (the copy held the stored text, and a thread looping by its ``get`` did not loop
    with ``mask_volatile=True``; a tester's case). An absent field stays absent."""

    class Said(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            if key == "text":
                return "GET"
            if key == "meta":
                return default
            return dict.get(self, key, default)

    other = {"type": "bot", "text": "y"}
    thread = [Said(type="bot", text="stored", meta={"a": 1}), other,
              {"type": "bot", "text": "GET"}, other]
    assert vthread.masked_thread([thread[0]]) == [{"type": "bot", "text": "GET"}]
    plain = vthread.describe_thread_cycle(thread)
    assert plain == "repeated_suffix"
    assert vthread.describe_thread_cycle(thread, mask_volatile=True) == plain
    for keywords in ({}, {"anywhere": True}):
        assert vthread.scan([thread], mask_volatile=True, **keywords).names == [plain]


_POLLING = [message for second in range(6) for message in (
    {"type": "bot", "text": "checking"}, {"type": "user", "text": f"at 12:00:0{second}"})]
_CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}] * 3


@pytest.mark.parametrize(("module", "copier", "keywords", "thread"), [
    ("vthread.scan", "volatile_masked", {"mask_volatile": True}, _POLLING),
    ("vthread.documents", "native_threads", {"format": "openai"}, _CHAT)])
def test_scan_copies_with_the_collector_paused_and_restores_it(
        module: str, copier: str, keywords: dict[str, Any], thread: list[dict[str, Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``scan(mask_volatile=True)`` makes its masked copies, and ``scan(format=...)`` its
    translations, with the cyclic collector off (walking them as they were made took half
    the masking's time, 40 % of a translation's) and leaves the collector as it found it,
    on or off, even when the copying raises."""
    import gc
    import importlib

    holder = importlib.import_module(module)
    seen: list[bool] = []
    original = getattr(holder, copier)

    def watched(*arguments: Any) -> Any:
        if len(arguments[0]):  # (a copy of threads, not masking's check of its flag)
            seen.append(gc.isenabled())
        return original(*arguments)

    monkeypatch.setattr(holder, copier, watched)
    assert gc.isenabled()
    assert vthread.scan([thread, thread], **keywords).names == ["repeated_suffix"] * 2
    assert seen and not any(seen) and gc.isenabled()
    gc.disable()
    try:
        vthread.scan([thread], **keywords)
        assert not gc.isenabled()
    finally:
        gc.enable()

    def failing(*arguments: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(holder, copier, failing)
    with pytest.raises(MemoryError):
        vthread.scan([thread], **keywords)
    assert gc.isenabled()
