"""``vthread.scan(threads, errors="record")``: a bulk run goes on past threads it cannot read,
each a row of its own holding its error, and every other row is what the batch without them
gives. The twin it is held to: each thread scanned alone (its error, if it has one) and the
batch of the readable threads scanned without it."""

from __future__ import annotations

import importlib.util
import pickle
import re
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from tests.strategies import cycle_keywords, openai_messages, threads
from tests.test_api import forked_always
from tests.test_api_formats import documented_examples_fail
from vthread import ScanResult, scan

LOOP = [{"type": "user", "text": "again"}, {"type": "bot", "text": "same"}] * 3
HELLO = [{"type": "user", "text": "hi"}]
UNREADABLE: list[Any] = [[5], "abc", None, [None], {"id": "r7"}, {"id": 9, "messages": 3},
                         [HELLO[0], [HELLO[0]]], b"x", 7]
"""Threads the scan cannot read, each of another kind."""


def alone_error(thread: Any, index: int, **keywords: Any) -> str | None:
    """The error of ``thread`` scanned alone, naming it as thread ``index`` of a batch."""
    try:
        scan([thread], **keywords)
    except (TypeError, ValueError) as error:
        text = str(error)
        assert text.startswith("thread 0")
        return f"thread {index}{text[len('thread 0'):]}"
    return None


def held_to_the_twin(batch: list[Any], **keywords: Any) -> ScanResult:
    """``scan(batch, errors="record", **keywords)``, checked row by row against each thread
    scanned alone for its error and the readable threads scanned as a batch of their own."""
    recorded = scan(batch, errors="record", **keywords)
    errors = [alone_error(thread, index, **keywords) for index, thread in enumerate(batch)]
    assert recorded.errors == errors
    readable = [thread for thread, error in zip(batch, errors, strict=True) if error is None]
    twin = iter(scan(readable, **keywords)) if readable else iter(())
    for index, (thread, error) in enumerate(zip(batch, errors, strict=True)):
        if error is None:
            assert recorded.codes[index] >= 0
            mine = recorded.record(index)
            theirs = next(twin)
            if recorded.ids is not None and theirs["id"] is None:
                theirs["id"] = mine["id"]  # (a twin of bare lists has no ids)
            assert mine == theirs, index
        else:
            assert recorded.codes[index] == -1 and recorded.names[index] is None
            assert recorded.record(index) == {"id": recorded.record(index)["id"],
                                              "error": error}
            if isinstance(thread, Mapping) and "id" in thread:
                assert recorded.ids is not None and recorded.ids[index] == thread["id"]
    assert next(twin, None) is None
    return recorded


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(st.lists(st.one_of(threads(max_size=12), st.sampled_from(UNREADABLE)),
                           max_size=24), cycle_keywords(), st.booleans())
def test_each_row_is_its_thread_s_error_or_the_batch_without_them(
        batch: list[Any], keywords: dict[str, Any], anywhere: bool) -> None:
    if anywhere:
        keywords = {}
    held_to_the_twin(batch, anywhere=anywhere, **keywords)


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(st.lists(st.lists(openai_messages(), max_size=8), max_size=16))
def test_in_a_format_named_each_row_is_held_to_the_twin(batch: list[Any]) -> None:
    """OpenAI chats, some with a message no chat holds (a number, a message without role):
    the translation's errors are recorded as the reading's are."""
    held_to_the_twin(batch, format="openai")


def test_a_batch_of_thousands_with_many_unreadable_threads() -> None:
    """Many bad threads far apart and side by side: each found, once, in its place (the
    search by halves after each one)."""
    batch: list[Any] = [LOOP if index % 3 else HELLO for index in range(3000)]
    bad = sorted({*range(0, 3000, 97), *range(1500, 1540), 2999})
    for index in bad:
        batch[index] = [index]
    result = scan(batch, errors="record")
    assert [index for index, error in enumerate(result.errors or []) if error] == bad
    assert (result.errors or [])[1500] == "thread 1500: messages[0] must be a mapping, got int"
    good = [index for index in range(3000) if index not in set(bad)]
    assert result.codes[good].tolist() == [1 if index % 3 else 0 for index in good]


def test_without_errors_the_result_is_the_plain_scan_s_with_no_error() -> None:
    batch = [LOOP, HELLO, {"id": "a", "messages": LOOP}]
    recorded = scan(batch, errors="record")
    assert recorded.errors == [None, None, None]
    plain = scan(batch)
    assert plain.errors is None and list(recorded) == list(plain)


def test_by_default_the_first_unreadable_thread_still_raises() -> None:
    with pytest.raises(TypeError, match=r"^thread 1: messages\[0\] must be a mapping"):
        scan([HELLO, [5], None])


@pytest.mark.parametrize(("keywords", "said"), [
    ({"errors": "skip"}, "errors must be 'raise' or 'record', got 'skip'"),
    ({"errors": None}, "errors must be 'raise' or 'record', got NoneType"),
    ({"errors": "record", "format": "auto"}, "errors='record' needs the threads' format named"),
    ({"errors": "record", "min_pattern_length": 3, "anywhere": True}, "anywhere=True"),
])
def test_refused_keywords(keywords: dict[str, Any], said: str) -> None:
    with pytest.raises((TypeError, ValueError), match=re.escape(said)):
        scan([[5]], **keywords)


def test_the_warnings_name_the_batch_s_threads_and_the_caller_s_line() -> None:
    """A warning of the scan that answers is said once, from the caller's line, naming the
    thread as the batch numbers it (not as a part searched for bad threads numbers it)."""
    chat = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}] * 2
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        scan([[5], HELLO, [7], chat], errors="record")
    assert len(said) == 1 and said[0].filename == __file__
    assert str(said[0].message).startswith("thread 3's messages have a \"role\"")


def test_an_error_of_the_caller_s_own_objects_propagates() -> None:
    """A mapping whose lookups fail is the caller's bug, not a thread the scan cannot read:
    it propagates, as without errors="record"."""

    class Failing(Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise RuntimeError("the caller's own failure")

        def __iter__(self) -> Iterator[str]:
            return iter(["type", "text"])

        def __len__(self) -> int:
            return 2

    with pytest.raises(RuntimeError, match="the caller's own failure"):
        scan([HELLO, [5], [Failing()]], errors="record")


def test_error_rows_in_records_arrow_concatenation_and_pickles() -> None:
    batch: list[Any] = [LOOP, {"id": "r7"}, {"id": "r8", "messages": HELLO}, [5]]
    result = scan(batch, errors="record")
    assert result.ids == [None, "r7", "r8", None]
    assert result[1] == {"id": "r7", "error": (
        "thread 1 (id 'r7'): messages must be a sequence of mappings (or a run object holding "
        "them under \"messages\", \"traj\" or \"history\"), got a dict without them")}
    assert result[3] == {"id": None, "error": "thread 3: messages[0] must be a mapping, got int"}
    assert pickle.loads(pickle.dumps(result)) == result
    joined = ScanResult.concatenate([scan([LOOP]), result])
    assert joined.errors == [None, *(None if error is None else error.replace(
        f"thread {row}", f"thread {row + 1}", 1) for row, error in enumerate(result.errors or []))]
    assert joined.codes.tolist() == [1, 1, -1, 0, -1]
    assert ScanResult.concatenate([scan([LOOP]), scan([HELLO])]).errors is None
    if importlib.util.find_spec("pyarrow") is None:
        return
    rows = result.to_arrow().to_pylist()
    assert rows[1] == {name: None for name in rows[1]} | {"run_id": "r7",
                                                            "error": result[1]["error"]}
    assert rows[0]["verdict"] == "repeated_suffix" and rows[0]["error"] is None


def test_two_jobs_give_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """With worker processes (every batch large enough for them here), the same rows."""
    batch: list[Any] = [LOOP if index % 2 else [index] for index in range(400)] * 3
    alone = scan(batch, errors="record")
    split = forked_always(monkeypatch)
    assert scan(batch, errors="record", jobs=2) == alone
    # (the first scan, which raised, and the answering one; those searching use one job)
    assert split == [1, 1]


class _Failing(Mapping[str, Any]):
    """A run or message whose every lookup raises ``error``: the caller's own objects."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getitem__(self, key: str) -> Any:
        raise self.error

    def __iter__(self) -> Iterator[str]:
        return iter(["id", "messages"])

    def __len__(self) -> int:
        return 2


@pytest.mark.parametrize("format_", ["native", "openai"])
def test_the_caller_s_exception_names_its_thread_as_the_batch_does(format_: str) -> None:
    """An exception of the caller's objects met while unreadable threads are searched for
    carries the note naming its thread as the batch numbers it (it named it as the part
    searched did: "thread 0" for the batch's thread 3, a tester's case), its cause kept."""
    fine = ([{"role": "user", "content": "hi"}] if format_ == "openai" else HELLO)
    storage = RuntimeError("storage read failed")
    storage.__cause__ = cause = KeyError("shard 7")
    failing: Any = _Failing(storage)
    if format_ == "native":
        failing = [HELLO[0], failing]
    notes = []
    for batch, errors in (([fine, [5], fine, failing], "record"),
                          ([fine, fine, fine, failing], "raise")):
        with pytest.raises(RuntimeError, match="storage read failed") as raised:
            scan(batch, format=format_, errors=errors)
        notes.append(list(raised.value.__notes__))
        assert raised.value.__cause__ is cause  # (as the caller raised it)
        del storage.__notes__  # (each scan notes where it read it)
    assert notes[0] == notes[1] and "thread 3" in notes[0][0]


@pytest.mark.parametrize("named", [0, 2])
def test_a_caller_s_error_reading_like_the_scan_s_propagates(named: int) -> None:
    """A ValueError of the caller's object whose text begins "thread 0" (naming another
    thread, or its own) is the caller's, raised as without errors="record" (it was taken
    for the scan's error about that thread, a good thread marked unread: a tester's
    case)."""
    failing = _Failing(ValueError(f"thread {named} is not in the cache"))
    for errors in ("raise", "record"):
        with pytest.raises(ValueError, match=f"^thread {named} is not in the cache$"):
            scan([HELLO, HELLO, failing], errors=errors)


def test_concatenated_chunks_name_each_thread_as_the_result_numbers_it() -> None:
    """The parts are taken for chunks of one batch: an error names its thread by its row
    in the whole (it kept its chunk's number: a tester's case)."""
    joined = ScanResult.concatenate([scan(batch, errors="record")
                                     for batch in ([HELLO, HELLO, HELLO], [HELLO, [5]], [[7]])])
    assert [(row, error) for row, error in enumerate(joined.errors or []) if error] == [
        (4, "thread 4: messages[0] must be a mapping, got int"),
        (5, "thread 5: messages[0] must be a mapping, got int")]
    assert joined.unread.tolist() == [False, False, False, False, True, True]
    assert not scan([HELLO, LOOP]).unread.any()


def test_a_warning_is_said_once_though_the_batch_is_scanned_again() -> None:
    """The batch with a bad thread is scanned twice, and parts of it more: an option's
    warning is said once, as by a scan of a clean batch."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        scan([[5], HELLO, LOOP, [6]], errors="record", min_repetitions="3")
    assert [str(w.message)[:32] for w in said] == ["option min_repetitions='3' is no"]


def test_another_thread_s_warnings_are_its_own_while_a_scan_records_errors() -> None:
    """A harness scanning in one thread while another warns: every warning of the other
    thread is said from its own line, at once (the whole process's warnings were held for
    the scan and said again from its line: a tester's case)."""
    import threading
    import time

    batch: list[Any] = [[{"type": "user", "text": f"a{i}"}, {"type": "bot", "text": "b"}] * 2
                        for i in range(100_000)] + [[5]]
    seen: list[tuple[str, str]] = []
    stop = threading.Event()

    def other() -> None:
        while not stop.is_set():
            warnings.warn("the other thread's", UserWarning, stacklevel=1)
            time.sleep(0.002)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        shown = warnings.showwarning
        warnings.showwarning = lambda message, *rest, **keywords: seen.append(
            (str(message), threading.current_thread().name))
        try:
            worker = threading.Thread(target=other, name="other")
            worker.start()
            time.sleep(0.05)
            scan(batch, errors="record")
            stop.set()
            worker.join()
        finally:
            warnings.showwarning = shown
    assert seen and all(whose == "other" for _, whose in seen)


def test_the_documented_example_runs_as_written() -> None:
    """docs/api.md's example of errors="record" gives the output it shows, run as written."""
    assert documented_examples_fail("A bulk run past threads it cannot read") == (6, 0)


def test_no_warning_is_said_of_a_thread_recorded_unread() -> None:
    """A bad thread that also looks like chat is an error row, and no warning names it: the
    warnings are those of the batch without it (the scan that raised had warned of it: a
    reviewer's case)."""
    chat = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}] * 2
    looks_like_chat_but_bad = [{"role": "user", "content": "x"}, 5]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = scan([HELLO, looks_like_chat_but_bad, HELLO, chat], errors="record")
    assert result.unread.tolist() == [False, True, False, False]
    assert [str(w.message)[:30] for w in said] == ["thread 3's messages have a \"ro"]
    assert all(w.filename == __file__ for w in said)


def test_an_error_of_the_caller_s_object_raised_in_c_names_its_thread_as_the_batch() -> None:
    """A caller's mapping whose lookups are C functions raises from no frame of its own:
    the error still propagates, its note numbering the thread as the batch does (it named
    the thread as the part searched did: a reviewer's case)."""

    class Lookups(Mapping[str, Any]):
        __getitem__ = int  # type: ignore[assignment]
        get = int  # type: ignore[assignment]
        __contains__ = int  # type: ignore[assignment]

        def __iter__(self) -> Iterator[str]:
            return iter(["type", "text"])

        def __len__(self) -> int:
            return 2

    failing = [HELLO[0], Lookups()]
    notes = []
    for batch, errors in (([HELLO, [5], HELLO, failing], "record"),
                          ([HELLO, HELLO, HELLO, failing], "raise")):
        with pytest.raises(ValueError) as raised:
            scan(batch, errors=errors)
        notes.append(raised.value.__notes__)
    assert notes[0] == notes[1] and "thread 3" in notes[0][0]
