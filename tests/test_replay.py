"""Bulk replay: scan_texts against the streaming guard, has_repeated_text_runs against the
reference."""

from __future__ import annotations

import multiprocessing
import time
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import recorded
from tests.strategies import guard_option_values, harsh_texts, texts
from vthread import _core
from vthread import _reference as ref
from vthread._jsvalue import utf16_len
from vthread._options import guard_options, text_run_options
from vthread.guard import Guard
from vthread.replay import GuardTrip, has_repeated_text_runs, scan_texts


def fed_one_by_one(text: str, options: dict[str, Any]) -> tuple[int, Any] | None:
    """(index of the character whose push tripped the guard, reason), or None."""
    guard = Guard(**options)
    for index, char in enumerate(text):
        if guard.push(char):
            return index, guard.reason
    return None


def same_trip(trip: GuardTrip | None, text: str, expected: tuple[int, Any] | None) -> None:
    if expected is None:
        assert trip is None
        return
    assert trip is not None
    index, reason = expected
    assert trip.offset == index  # the whitespace that completed the word is at the offset
    assert trip.offset_utf16 == utf16_len(text[:index])
    assert trip.reason == reason


@settings(max_examples=300, deadline=None)
@given(
    batch=st.lists(st.one_of(texts(max_words=150), harsh_texts(max_words=150)), max_size=4),
    options=guard_option_values(),
)
def test_scan_texts_equals_the_guard_fed_char_by_char(
    batch: list[str], options: dict[str, Any]
) -> None:
    """Every text's trip (offset and reason) is what a guard fed it one character at a time
    reports, min_chars included."""
    trips = scan_texts(batch, **options)
    assert len(trips) == len(batch)
    for text, trip in zip(batch, trips, strict=True):
        same_trip(trip, text, fed_one_by_one(text, options))


@settings(max_examples=150, deadline=None)
@given(
    text=st.one_of(texts(vocabulary=4, max_words=250), harsh_texts(vocabulary=4)),
    options=guard_option_values(),
    min_chars=st.integers(0, 400),
)
def test_scan_texts_min_chars(text: str, options: dict[str, Any], min_chars: int) -> None:
    """min_chars counts the characters fed so far, up to the completing whitespace."""
    options["min_chars"] = min_chars
    (trip,) = scan_texts([text], **options)
    same_trip(trip, text, fed_one_by_one(text, options))


@settings(max_examples=100, deadline=None)
@given(text=texts(vocabulary=3, max_words=200), options=guard_option_values())
def test_scan_texts_equals_the_reference_guard(text: str, options: dict[str, Any]) -> None:
    """The scalar reference, fed character by character, agrees too."""
    reference = ref.guard(**options)
    expected = None
    for index, char in enumerate(text):
        if reference.push(char):
            expected = index, reference.reason
            break
    (trip,) = scan_texts([text], **options)
    if expected is None:
        assert trip is None
        return
    assert trip is not None and trip.offset == expected[0]
    got, want = trip.reason, expected[1]
    assert want is not None
    assert (got.phrase, got.count, got.text) == (want.phrase, want.count, want.text)
    assert (got.unique_ratio, got.hapax_ratio) == (want.unique_ratio, want.hapax_ratio)


GUARD_RECORDS = [
    record
    for name in ("corpus.json", "adversarial.json")
    for record in recorded.load_records(name)
    if record["fn"] == "createRepetitionGuard"
]


def test_recorded_streams_replay_in_bulk() -> None:
    """All recorded guard streams, joined into texts, scanned at once: each equals its guard
    fed character by character."""
    batch, option_sets = [], []
    for record in GUARD_RECORDS:
        options = recorded.options_of((recorded.decode_args(record) or [None])[0])
        text = "".join(p for p in recorded.args_pushes(record) if isinstance(p, str))
        batch.append(text)
        option_sets.append(options)
    assert len(batch) > 200
    for text, options in zip(batch, option_sets, strict=True):
        with warnings.catch_warnings():  # (options that are no number: unset, said)
            warnings.filterwarnings("ignore", "option .* is not a number", UserWarning)
            (trip,) = scan_texts([text], **options)
            same_trip(trip, text, fed_one_by_one(text, options))
    defaults = scan_texts(batch)
    for text, trip in zip(batch, defaults, strict=True):
        same_trip(trip, text, fed_one_by_one(text, {}))


def test_bulk_equals_the_loop() -> None:
    """Scanning texts together answers as scanning each alone."""
    batch = ["go on " * 20, "", "a b c d " * 3, "Loop. loop! LOOP? " * 8, "x" * 50]
    together = scan_texts(batch, ngram=2, max_repeats=3, max_unique_ratio=0.5)
    alone = [scan_texts([t], ngram=2, max_repeats=3, max_unique_ratio=0.5)[0] for t in batch]
    assert together == alone
    assert together[0] is not None and together[1] is None


def test_non_texts_never_trip() -> None:
    """None, numbers and bytes in the batch answer None, like an ignored push; bytes (text
    read in binary mode, most likely) and any other value that is no str (a number, a
    record passed for its text) are said, naming the first and where the others are (the
    first alone was named: a bulk caller learnt of one a call), as Guard.push says them
    (they were answered "no loop" in silence); None goes unsaid."""
    with pytest.warns(UserWarning, match=r"scan_texts\(\) reads bytes as no text, .* "
                                         r"\(text 2 is bytes; 1 more: text 3\): decode the "
                                         r"bytes, and pass the text each other value holds"):
        assert scan_texts([None, "", b"go go go go go go", 3]) == [None] * 4
    with pytest.warns(UserWarning, match=r"\(text 0; 7 more: texts 1, 2, 3, 4, 5 and 2 "
                                         r"more\): pass the text each holds"):
        assert scan_texts([3] * 8 + ["x"]) == [None] * 9
    with pytest.warns(UserWarning, match=r"type float as no text, .* \(text 0; 2 more: texts "
                                         r"1, 2\): decode the bytes, and pass the text each "
                                         r"other value holds"):
        assert scan_texts([1.5, b"x", b"y"]) == [None] * 3
    with pytest.warns(UserWarning, match=r"has_repeated_text_runs\(\) .*text 0 is memoryview"):
        assert not has_repeated_text_runs([memoryview(b"go " * 99)]).any()
    for value, kind in ((3, "int"), ({"text": "go " * 99}, "dict"), (["go"] * 99, "list")):
        with pytest.warns(UserWarning, match=rf"scan_texts\(\) reads a value of type {kind} "
                                             r"as no text, .* \(text 1\): pass the text"):
            assert scan_texts([None, value, ""]) == [None] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scan_texts([None, ""]) == [None] * 2
        # (a data frame's missing texts: NaN, NumPy's and pandas', and pandas' NA)
        import numpy as np

        assert scan_texts([float("nan"), np.float64("nan"), "x"]) == [None] * 3
        pandas = pytest.importorskip("pandas")
        assert scan_texts(pandas.Series(["go on " * 30, None, pandas.NA], dtype=object)
                          )[1:] == [None, None]
    assert scan_texts([]) == []
    assert scan_texts(iter(["go on " * 30]))[0] is not None


def test_whole_push_offset_matches_guard() -> None:
    """With min_chars unset, a guard pushed the whole text trips at the same word."""
    text = "We will try again. " * 3 + "Now: " + "try again, try again. " * 6
    (trip,) = scan_texts([text], max_unique_ratio=0.6)
    guard = Guard(max_unique_ratio=0.6)
    assert guard.push(text)
    assert trip is not None and trip.offset == guard.trip_offset
    assert trip.reason == guard.reason


def test_astral_offsets_in_utf16() -> None:
    """Offsets count astral characters once in Python and twice in UTF-16."""
    text = "🎉 " + "\U0001d400\U0001d401 x " * 10
    (trip,) = scan_texts([text], ngram=2, max_repeats=3, max_unique_ratio=1)
    assert trip is not None
    assert trip.offset_utf16 - trip.offset == text[: trip.offset].count("\U0001d400") * 2 + 1


# ------------------------------------------------------------------------------ text runs

_UNIT_WORDS = ["Done", "done", "Again", "x", "OK", "é", "İ", "Σ", "\u212a", "42", "a b"]
_UNIT_SEPARATORS = [". ", "! ", "?", "\n", "...", ".\n", "\r", "\u2028", " ", ", ", "-\n"]


@st.composite
def unit_texts(draw: st.DrawFn) -> str:
    words = draw(st.lists(st.sampled_from(_UNIT_WORDS), min_size=1, max_size=4))
    count = draw(st.integers(0, 40))
    pieces = [draw(st.sampled_from(words)) + draw(st.sampled_from(_UNIT_SEPARATORS))
              for _ in range(count)]
    return "".join(pieces)


def text_run_option_values() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "min_units": st.sampled_from([None, 0, 2, 3, 8, 2.5]),
            "window": st.sampled_from([None, 0, 3, 5, 64, float("inf")]),
            "max_unique_ratio": st.sampled_from([None, 0.0, 0.3, 0.5, 1.0, 1.5]),
        },
    )


@settings(max_examples=400, deadline=None)
@given(
    batch=st.lists(st.one_of(unit_texts(), st.text(max_size=30), texts()), max_size=5),
    options=text_run_option_values(),
)
def test_text_runs_equal_the_reference(batch: list[str], options: dict[str, Any]) -> None:
    """The bulk twin answers as the reference, text by text."""
    resolved = text_run_options(**options)
    got = has_repeated_text_runs(batch, **options)
    assert got.dtype == np.bool_
    assert got.tolist() == [ref.has_repeated_text_run(t, resolved) for t in batch]


@pytest.mark.parametrize(
    "record",
    [r for name in ("corpus.json", "adversarial.json") for r in recorded.load_records(name)
     if r["fn"] == "hasRepeatedTextRun"],
    ids=lambda r: str(r["id"]),
)
def test_text_runs_recorded(record: dict[str, Any]) -> None:
    """Each recorded production call of hasRepeatedTextRun, through the bulk twin."""
    args = recorded.decode_args(record)
    options = recorded.options_of(args[1] if len(args) > 1 else None)
    with warnings.catch_warnings():  # (options that are no number: unset, said)
        warnings.filterwarnings("ignore", "option .* is not a number", UserWarning)
        (answer,) = has_repeated_text_runs([args[0] if args else None], **options)
    assert bool(answer) is recorded.decode_value(record["expected"])


def test_text_runs_recorded_in_one_batch() -> None:
    """The recorded production calls with default options, all in one bulk call (given as a
    generator), each text also padded to cross the 4000-unit tail: answers as recorded."""
    cases = []
    for name in ("corpus.json", "adversarial.json"):
        for record in recorded.load_records(name):
            args = recorded.decode_args(record) if record["fn"] == "hasRepeatedTextRun" else []
            if args and recorded.options_of(args[1] if len(args) > 1 else None) == {}:
                cases.append((args[0], recorded.decode_value(record["expected"])))
    assert len(cases) >= 10
    texts = [text for text, _ in cases]
    expected = [answer for _, answer in cases]
    assert has_repeated_text_runs(t for t in texts).tolist() == expected
    # Fresh units before a 4000-unit tail change nothing for texts that fit in the tail.
    padded = [
        "".join(f"fresh {i}. " for i in range(600)) + "\U0001f389" * 2000 + text
        if isinstance(text, str) and utf16_len(text) <= 2000 else text
        for text in texts
    ]
    assert has_repeated_text_runs(padded).tolist() == expected


def test_text_runs_read_only_the_tail() -> None:
    """A 20 MB text costs no more than its last 4000 UTF-16 units."""
    loop = "Let me check. " * 400
    huge = "Fresh words everywhere, no loop at all here " * 500_000 + loop
    # CPU time, which another process's load leaves alone (reading all 20 MB costs seconds).
    start = time.process_time()
    assert has_repeated_text_runs([huge, "🎉" * 5_000_000]).tolist() == [True, False]
    assert time.process_time() - start < 2
    assert ref.has_repeated_text_run(huge, text_run_options())


@settings(max_examples=100, deadline=None)
@given(batch=st.lists(st.one_of(texts(max_words=120), harsh_texts(), st.none()), max_size=12),
       options=guard_option_values(), bits=st.integers(0, 4))
def test_scan_texts_collisions_never_change_an_answer(
    batch: list[Any], options: dict[str, Any], bits: int
) -> None:
    """The core's replay with hashes cut to a few bits answers as with full hashes."""
    want = _core.scan_texts(batch, guard_options(**options))
    assert _core.scan_texts(batch, guard_options(**options), bits) == want


@settings(max_examples=200, deadline=None)
@given(batch=st.lists(st.one_of(texts(vocabulary=5, max_words=300), harsh_texts(max_words=300)),
                      min_size=1, max_size=4),
       options=guard_option_values(), segment=st.integers(1, 64))
def test_long_texts_in_segments_answer_as_whole(
    batch: list[str], options: dict[str, Any], segment: int
) -> None:
    """A text replayed in segments (each warming its window on the words before it) trips
    where the whole replay does, for the same reason, min_chars included."""
    resolved = guard_options(**options)
    whole = _core.scan_texts(list(batch), resolved, 64, 1 << 40)
    assert _core.scan_texts(list(batch), resolved, 64, segment) == whole
    for text, found in zip(batch, whole, strict=True):
        expected = fed_one_by_one(text, options)
        assert (found is None) == (expected is None)


#: Words that normalise to nothing, and a few that do not, for texts with few kept words.
_EMPTY_WORDS = ["\u2014", "...", "\U0001f389", "--", "\u0301", "\ud835", "\udc00", "\u2014\u2014"]
_KEPT_WORDS = ["loop", "Loop", "again", "\u03a3", "\U0001d400", "\ud835\udc00", "x\u2014"]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), options=guard_option_values(), segment=st.integers(1, 64))
def test_texts_with_few_kept_words_in_segments_answer_as_whole(
    data: st.DataObject, options: dict[str, Any], segment: int
) -> None:
    """Texts mostly of words that normalise to nothing (dashes, emoji, marks, lone halves),
    whose segments' warm-ups reach back past the cut before them and join the segment
    before: the trip (offset, UTF-16 offset, reason) is the whole replay's and the
    character-by-character guard's."""
    kept_share = data.draw(st.sampled_from([0.0, 0.02, 0.1, 0.3]))
    words = data.draw(st.lists(
        st.one_of(st.sampled_from(_EMPTY_WORDS), st.sampled_from(_KEPT_WORDS))
        if kept_share >= 0.3 else st.sampled_from(_EMPTY_WORDS), max_size=400))
    # Kept words sprinkled at the drawn share, repeating so that some texts trip.
    rng_words = [w if (i * 7919) % 100 >= kept_share * 100 else _KEPT_WORDS[i % 2]
                 for i, w in enumerate(words)]
    spaces = st.sampled_from([" ", " ", "\n", "  ", "\u3000"])
    text = "".join(word + data.draw(spaces) for word in rng_words)
    resolved = guard_options(**options)
    whole = _core.scan_texts([text], resolved, 64, 1 << 40)
    assert _core.scan_texts([text], resolved, 64, segment) == whole
    (trip,) = scan_texts([text], **options)
    same_trip(trip, text, fed_one_by_one(text, options))


def test_scan_texts_takes_any_iterable_but_not_a_bare_string() -> None:
    """A generator works; a str (which would iterate characters) is a TypeError."""
    texts = ["again and " * 6, "fine"]
    assert scan_texts(t for t in texts) == scan_texts(texts)
    with pytest.raises(TypeError, match="iterable of texts"):
        scan_texts("again and again and again and again and")



def _replay_batch() -> list[int | None]:
    """A replay large enough to run on a thread pool (long texts in segments)."""
    texts = ["healthy words number " + " ".join(f"w{i}" for i in range(60_000))] * 2
    texts.append("again and " * 40_000)
    return [None if trip is None else trip.offset for trip in scan_texts(texts)]


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_process_can_replay_on_threads() -> None:
    """``scan(jobs=N)`` forks after the parent may have replayed texts on threads: the
    child must not wait on threads that exist only in the parent."""
    expected = _replay_batch()
    assert expected[:2] == [None, None] and expected[2] is not None
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_replay_batch).get(timeout=60) == expected
