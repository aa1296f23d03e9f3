"""The streaming guard: recorded production sessions, the reference, chunking, invariants."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
import threading
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import recorded
from tests.peak_memory import PEAK_KIB, needs_proc
from tests.strategies import (
    CODE_POINT_WORDS,
    chunkings,
    code_point_chunkings,
    guard_option_values,
    harsh_texts,
    texts,
)
from vthread import _reference as ref
from vthread import guard as engine
from vthread._options import guard_options
from vthread.guard import Guard, GuardReason, normalize
from vthread.replay import scan_texts

GUARD_RECORDS = [
    (name, record)
    for name in ("corpus.json", "adversarial.json")
    for record in recorded.load_records(name)
    if record["fn"] == "createRepetitionGuard"
]


@pytest.mark.parametrize(
    "record",
    [record for _, record in GUARD_RECORDS],
    ids=[f"{name.split('.')[0]}-{record['id']}" for name, record in GUARD_RECORDS],
)
def test_recorded_session(record: dict[str, Any]) -> None:
    """Each recorded production session trips (or not) at the same push, for the same reason."""
    recorded.replay(record, engine)


def test_recorded_sessions_are_all_there() -> None:
    """Both testdata files contribute their guard sessions (67 + 199)."""
    assert len(GUARD_RECORDS) >= 266


def same_reason(got: GuardReason | None, want: ref.ReferenceReason | None) -> None:
    if want is None:
        assert got is None
        return
    assert got is not None
    assert (got.phrase, got.count, got.text) == (want.phrase, want.count, want.text)
    assert got.unique_ratio == want.unique_ratio
    assert got.hapax_ratio == want.hapax_ratio


def reference_guard(options: dict[str, Any]) -> ref.ReferenceGuard:
    return ref.guard(**options)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), options=guard_option_values())
def test_engine_equals_reference(data: st.DataObject, options: dict[str, Any]) -> None:
    """Push by push, the engine answers as the reference guard."""
    text = data.draw(st.one_of(texts(), harsh_texts()))
    split = code_point_chunkings if data.draw(st.booleans()) else chunkings
    pushes: list[object] = list(data.draw(split(text)))
    if data.draw(st.booleans()):
        pushes.insert(data.draw(st.integers(0, len(pushes))), None)
    guard, reference = Guard(**options), reference_guard(options)
    for chunk in pushes:
        assert guard.push(chunk) == reference.push(chunk)
        same_reason(guard.reason, reference.reason)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), options=guard_option_values(), bits=st.integers(0, 6))
def test_hash_collisions_never_change_an_answer(
    data: st.DataObject, options: dict[str, Any], bits: int
) -> None:
    """With word hashes and n-gram keys cut to a few bits (0 bits: every word collides),
    trips are still confirmed on the real words: the answers are the reference's."""
    text = data.draw(st.one_of(texts(vocabulary=6, max_words=200), harsh_texts()))
    guard, reference = Guard(**options), reference_guard(options)
    guard._set_hash_bits(bits)
    for chunk in data.draw(chunkings(text)):
        assert guard.push(chunk) == reference.push(chunk)
        same_reason(guard.reason, reference.reason)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), options=guard_option_values())
def test_answer_does_not_depend_on_chunking(data: st.DataObject, options: dict[str, Any]) -> None:
    """With min_chars=0 the reason is the same however the stream is cut into pushes."""
    options["min_chars"] = 0
    text = data.draw(st.one_of(texts(vocabulary=4, max_words=200), harsh_texts()))
    whole = Guard(**options)
    whole.push(text)
    pieces = Guard(**options)
    tripped = [pieces.push(chunk) for chunk in data.draw(chunkings(text))]
    assert (whole.reason is not None) == any(tripped)
    if tripped:
        assert tripped == sorted(tripped)  # once tripped, always tripped
    same_reason(pieces.reason, None if whole.reason is None else ref.ReferenceReason(
        **dataclasses.asdict(whole.reason)))


@settings(max_examples=100, deadline=None)
@given(text=st.one_of(texts(max_words=300), harsh_texts(max_words=300)),
       options=guard_option_values())
def test_chunked_by_code_point_equals_reference(text: str, options: dict[str, Any]) -> None:
    """One code point per push (every deferral boundary) still matches the reference."""
    guard, reference = Guard(**options), reference_guard(options)
    answers = [guard.push(c) for c in text]
    assert answers == [reference.push(c) for c in text]
    same_reason(guard.reason, reference.reason)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), options=guard_option_values())
def test_any_code_points_equal_reference(data: st.DataObject, options: dict[str, Any]) -> None:
    """Words of arbitrary code points (capital sigma in every context, case-ignorable marks,
    pairs written as two halves, lone surrogates, whitespace of every kind) repeated into
    loops: the core's normal forms and trips are the reference's."""
    vocabulary = data.draw(st.lists(CODE_POINT_WORDS.filter(bool), min_size=1, max_size=5))
    spaces = st.sampled_from([" ", "\n", "\u3000", "\t ", "\u2028", " \n\n"])
    words = data.draw(st.lists(st.sampled_from(vocabulary), max_size=120))
    text = "".join(word + data.draw(spaces) for word in words)
    guard, reference = Guard(**options), reference_guard(options)
    for chunk in data.draw(chunkings(text)):
        assert guard.push(chunk) == reference.push(chunk)
        same_reason(guard.reason, reference.reason)


def test_trip_offset_points_past_the_tripping_word() -> None:
    """The trip offset (used by the CLI) is the index just past the tripping word."""
    guard = Guard(ngram=2, window=8, max_repeats=3)
    assert guard.trip_offset is None
    text = "go on go on go on and on"
    assert guard.push(text)
    assert text[: guard.trip_offset] == "go on go on go on"


def test_tripped_guard_stays_tripped() -> None:
    """After a trip every push (text, None, empty) answers True and the reason is kept."""
    guard = Guard(ngram=2, window=8, max_repeats=2, max_unique_ratio=1)
    assert guard.push("a b a b ")
    reason = guard.reason
    assert guard.push("completely fresh words now ") and guard.push(None) and guard.push("")
    assert guard.reason is reason


def test_non_strings_are_ignored() -> None:
    """Chunks that are no str are ignored, as production ignores them. None and empty lists
    (a tool call's stream delta holds no text) and empty strings go unsaid; bytes (most
    likely a stream's chunk not decoded, whose runaway would never trip) are warned of with
    push_bytes, and any other value (a stream event or its delta pushed whole, whose text
    would never be seen) is warned of by its type."""
    guard = Guard()
    for chunk in (None, "", [], ()):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert guard.push(chunk) is False
    for chunk in (b"loop loop ", bytearray(b"loop loop "), memoryview(b"loop loop ")):
        with pytest.warns(UserWarning, match="Guard.push ignores bytes.*push_bytes"):
            assert guard.push(chunk) is False
    for chunk, name in ((3, "int"), (["a"], "list"), ({"delta": {"content": "a"}}, "dict")):
        with pytest.warns(UserWarning,
                          match=f"Guard.push ignores a chunk of type {name}, .*delta"):
            assert guard.push(chunk) is False
    assert guard.reason is None


def test_a_warning_hook_may_call_the_guard_it_warns_of(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Code the guard's warning runs (a warnings or logging hook) may use the guard: it was
    still borrowed, and such a call was refused as if another thread fed it."""
    guard = Guard()
    seen: list[Any] = []

    def show(message: Any, *args: Any, **kwargs: Any) -> None:
        seen.append(guard.push("Checking now. " * 10))
        seen.append(copy.copy(guard).reason is not None)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", show)
        # (ignored, and warned of; the hook tripped the guard: True ever after)
        assert guard.push(b"x") is True
    assert seen == [True, True]
    assert guard.push("") is True


def test_options_resolve_as_the_reference() -> None:
    """Options go through the shared resolver: floor, clamp, defaults (a value that is no
    number among them, warned of once); a positional argument is a TypeError."""
    assert Guard(ngram=2.9, window=1, max_unique_ratio=7).options == guard_options(
        ngram=2.9, window=1, max_unique_ratio=7
    )
    with pytest.warns(UserWarning, match="option ngram='4' is not a number") as said:
        assert Guard(ngram="4").options == guard_options()  # type: ignore[arg-type]
    assert len(said) == 1

    class Pinned(Guard):
        def __init__(self) -> None:
            super().__init__(ngram="5")  # type: ignore[arg-type]

    with pytest.warns(UserWarning, match="option ngram='5' is not a number") as said:
        assert Pinned().options == guard_options()  # (a subclass's own, warned of too)
    assert len(said) == 1
    with pytest.raises(TypeError):
        Guard(4)  # type: ignore[call-arg]


@pytest.mark.parametrize("options", [{"ngram": 10**9}, {"ngram": 2**63}, {"window": 1e308},
                                     {"window": 1_000_001}, {"window": 10**30, "ngram": 3}])
def test_options_of_any_finite_size_are_taken(options: dict[str, Any]) -> None:
    """An n-gram or window of any finite size is legal, as in production (they were a
    ValueError past a million words): a window larger than the stream never fills, an
    n-gram longer than it never forms, each answered as the reference answers, with
    nothing allocated by the size; huge counts that are only compared are fine too."""
    import random

    rng = random.Random(7)
    words = ["a", "b", "c", "step", "again", "x\ny", "1."]
    stream = ["a b c " * 30] + [" ".join(rng.choices(words, k=12)) + " " for _ in range(40)]
    guard, reference = Guard(**options), ref.guard(**options)
    assert guard.options.window <= 2**62 and guard.options.ngram <= 2**62
    for chunk in stream:
        assert guard.push(chunk) == reference.push(chunk)
    fields = ("phrase", "count", "text", "unique_ratio", "hapax_ratio")
    assert [getattr(guard.reason, name, None) for name in fields] == [
        getattr(reference.reason, name, None) for name in fields]
    if options.get("ngram", 4) > 1000:
        assert guard.reason is None  # an n-gram longer than the stream never forms
    else:
        assert guard.reason is not None and guard.reason.phrase.startswith(("a b c", "b c a",
                                                                            "c a b"))
    big = Guard(max_repeats=2**70, min_chars=1e300, ngram=2)
    assert not big.push("a a a a a a a a a a ")


def test_reason_is_frozen_and_serialisable() -> None:
    """GuardReason is an immutable, slotted record with a JSON-ready dict."""
    guard = Guard(ngram=2, window=4, max_repeats=2, max_unique_ratio=1)
    assert guard.push("Hi there! hi there ")
    reason = guard.reason
    assert reason is not None
    assert reason.to_dict() == {
        "phrase": "hi there",
        "count": 2,
        "text": "hi there",
        "unique_ratio": 0.5,
        "hapax_ratio": 0.0,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        reason.count = 3  # type: ignore[misc]
    assert not hasattr(reason, "__dict__")


def test_surrogate_halves_join_across_pushes() -> None:
    """A pair split over two pushes is one letter, as in a JavaScript string."""
    options: dict[str, Any] = {"ngram": 2, "max_repeats": 2, "max_unique_ratio": 1}
    guard, reference = Guard(**options), ref.guard(**options)
    pushes = ["\ud835", "\udc00 x \ud835", "\udc00 x "]
    for chunk in pushes:
        assert guard.push(chunk) == reference.push(chunk)
    assert guard.reason is not None
    same_reason(guard.reason, reference.reason)
    assert guard.reason.phrase == "\U0001d400 x"


def test_normalize_equals_reference() -> None:
    """The cached normaliser matches the reference, surrogates joined first."""
    for word in ("Don't", "ÉTÉ", "\ud835\udc00", "İstanbul", "a\x1cb", "ΣΑΣ", "\u2160x", "_"):
        assert normalize(word) == ref.normalize_word(ref.join_surrogates(word))


# ------------------------------------------------------------------------- pathological


def test_a_million_characters_without_whitespace() -> None:
    """'x' * 1_000_000 in 4-character pushes: one partial word, no trip; two such words are
    equal words."""
    guard, reference = Guard(ngram=2, window=8, max_repeats=2, max_unique_ratio=1), ref.guard(
        ngram=2, window=8, max_repeats=2, max_unique_ratio=1)
    text = "x" * 1_000_000
    for i in range(0, len(text), 4):
        assert not guard.push(text[i : i + 4])
    tail = " y " + text + " y "
    assert guard.push(tail)
    reference.push(text)
    assert reference.push(tail)
    assert guard.trip_offset == len(tail) - 1
    assert guard.reason is not None and reference.reason is not None
    assert guard.reason.count == reference.reason.count == 2
    assert guard.reason.unique_ratio == reference.reason.unique_ratio


def elided(word: str) -> str:
    """A long word's spelling as a reason shows it: its first and last 1,024 characters."""
    return word[:1024] + "\u2026" + word[-1024:]


@pytest.mark.parametrize("length", [70_000, 300_000])
def test_long_words_trip_where_the_reference_does(length: int) -> None:
    """Words past 65,536 code points are folded into a bounded summary: the trip is the
    reference's, the reason's text shows such a word by its two ends, and the phrase too
    once the normal form is over 256 KiB (then compared by length and a 128-bit hash)."""
    long_word = "Ab" * (length // 2)
    text = f"{long_word} stop {long_word} stop {long_word} stop "
    options: dict[str, Any] = {"ngram": 2, "window": 8, "max_repeats": 2, "max_unique_ratio": 1}
    guard, reference = Guard(**options), ref.guard(**options)
    assert guard.push(text) and reference.push(text)
    assert guard.reason is not None and reference.reason is not None
    assert guard.trip_offset == 2 * len(long_word) + len(" stop ") + len(" stop")
    assert guard.reason.count == reference.reason.count
    assert guard.reason.unique_ratio == reference.reason.unique_ratio
    assert guard.reason.text == elided(long_word) + " stop"
    normal = long_word.lower()
    shown = normal if len(normal) <= 1 << 18 else elided(normal)
    assert guard.reason.phrase == shown + " stop"
    assert reference.reason.phrase == normal + " stop"


def test_long_words_that_differ_only_in_the_middle_are_different() -> None:
    """Two 300,000-character words with the same ends are not the same word."""
    first = "a" * 150_000 + "b" + "a" * 150_000
    second = "a" * 150_000 + "c" + "a" * 150_000
    options: dict[str, Any] = {"ngram": 2, "window": 8, "max_repeats": 2, "max_unique_ratio": 1}
    guard = Guard(**options)
    assert not guard.push(f"{first} z {second} z ")
    assert guard.push(f"{first} z ")


PIECE = 1 << 16


def pushed(options: dict[str, Any], pushes: list[str]) -> tuple[int, GuardReason] | None:
    """(offset in the whole stream just past the tripping word, reason), or None."""
    guard, done = Guard(**options), 0
    for chunk in pushes:
        if guard.push(chunk):
            assert guard.trip_offset is not None and guard.reason is not None
            return done + guard.trip_offset, guard.reason
        done += len(chunk)
    return None


def test_a_long_word_finished_in_a_later_push_is_folded_as_in_one() -> None:
    """A word over 65,536 code points begun in one push and finished in another is cut into
    the same pieces as in one push, and a capital sigma at the end of its second piece is
    lower-cased as in the whole word whatever the pushes (the same text tripped two words
    later when the rest came in a later push)."""
    word = "a" * (2 * PIECE - 2) + "a\u03a3" + "b" * 40_000
    options: dict[str, Any] = {"ngram": 2, "max_repeats": 2, "window": 4}
    text = (word + " ") * 5
    whole = pushed(options, [text])
    reference = ref.guard(**options)
    assert reference.push(text) and whole is not None
    assert whole[0] == 3 * len(word) + 2  # the end of the third word, as the reference
    cut = [word + " ", word[:70_000], word[70_000:] + " " + (word + " ") * 3]
    assert pushed(options, cut) == whole
    assert pushed(options, [text[:70_000], text[70_000:]]) == whole


LONG_WORD_UNITS = st.sampled_from(["\u03a3", "\u03a3", "a", "B", "\ud83c", "\udf89", "\u0301"])


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_long_words_do_not_depend_on_the_pushes(data: st.DataObject) -> None:
    """Words of 1 to 3 pieces and more, with capital sigmas, marks and surrogate halves
    around the piece boundaries, cut into pushes anywhere: the trip and its reason are
    those of one push."""
    length = data.draw(st.integers(1, 3)) * PIECE + data.draw(st.integers(-3, 3000))
    units = ["a"] * length
    for boundary in range(PIECE, length, PIECE):
        for at in range(boundary - 3, min(boundary + 3, length)):
            units[at] = data.draw(LONG_WORD_UNITS)
        # Most often a sigma (or a high half) just before the boundary, something cased
        # (or a low half, or a mark) just after it.
        units[boundary - 1] = data.draw(st.sampled_from(["\u03a3", "\u03a3", "\ud83c", "a"]))
        if boundary < length:
            units[boundary] = data.draw(st.sampled_from(["b", "\udf89", "\u0301", "\u03a3"]))
    word = "".join(units)
    other = data.draw(st.sampled_from(["z", word[:-1] + "\u03a3", word + "\u03a3"]))
    text = f"{word} {other} {word} {other} {word} {other} {word} "
    # One cut inside a word (past its first piece, most often), others anywhere.
    inside = data.draw(st.integers(0, 3)) * (len(word) + len(other) + 2) + data.draw(
        st.one_of(st.integers(min(PIECE, len(word)), len(word)), st.integers(0, len(word))))
    cuts = sorted([inside, *data.draw(st.lists(st.integers(0, len(text)), max_size=3))])
    pushes = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    options: dict[str, Any] = {"ngram": 2, "max_repeats": 2, "window": 4, "max_unique_ratio": 1}
    assert pushed(options, pushes) == pushed(options, [text])


def test_a_sigma_at_a_piece_end_is_lower_cased_as_in_the_whole_word() -> None:
    """A capital sigma that ends a word's first 65,536 code points, a letter after it, is
    the small sigma, not the final one: this word and its twin spelled with a final sigma
    are different words (they were the same, and the guard tripped where the reference
    does not)."""
    first, twin = "a" * 65_535 + "\u03a3b", "a" * 65_535 + "\u03c2b"
    text = f"{first} {twin} " * 2
    options: dict[str, Any] = {"ngram": 2, "max_repeats": 3, "max_unique_ratio": 1.0}
    assert not ref.guard(**options).push(text)
    assert not Guard(**options).push(text)


# Case-ignorable characters: a mark, a soft hyphen, an apostrophe, a colon; a modifier
# letter is case-ignorable too, and kept in the normal form.
CASE_IGNORABLE = "\u0301\u00ad':\u02b0"


def sigma_words(data: st.DataObject) -> tuple[str, str, str]:
    """A word of more than one piece with a capital sigma near a piece boundary, after a
    case-ignorable run that may straddle it and before one (of a few characters, or of
    about a piece) that may straddle the next; then something cased, uncased or the word's
    end. With its twins spelled with the small and the final sigma. (Drawn as small
    values, so that Hypothesis shows a failing example briefly.)"""
    pieces = data.draw(st.integers(1, 2))
    before = data.draw(st.text(CASE_IGNORABLE, max_size=4))
    run = data.draw(st.one_of(st.integers(0, 6), st.integers(PIECE - 4, PIECE + 4)))
    start = data.draw(st.integers(0, len(CASE_IGNORABLE) - 1))
    after = (CASE_IGNORABLE * (run // len(CASE_IGNORABLE) + 2))[start : start + run]
    sigma_at = pieces * PIECE + data.draw(st.integers(-4, 3))
    # A cased letter (or an uncased digit) before the run, an astral letter now and then.
    head = data.draw(st.sampled_from(["a", "1", "\U00010400"]))
    prefix = "a" * (sigma_at - len(before) - 1) + head + before
    suffix = after + data.draw(st.sampled_from(["b", "B", "1", "-", "\u03a3", ""]))
    return (prefix + "\u03a3" + suffix, prefix + "\u03c3" + suffix, prefix + "\u03c2" + suffix)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_long_words_lower_case_as_the_reference(data: st.DataObject) -> None:
    """Long words with a capital sigma around a piece boundary, beside case-ignorable runs
    of any length, and their twins spelled with either small sigma, cut into pushes
    anywhere: ``push``, ``push_bytes`` and ``scan_texts`` trip where the reference does,
    for the same phrase; the twin the whole word's lower case spells is the same word."""
    words = [*sigma_words(data), "z"]
    chosen = data.draw(st.lists(st.integers(0, 3), min_size=4, max_size=6))
    text = "".join(words[k] + " " for k in chosen)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    pushes = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    options: dict[str, Any] = {"ngram": 2, "max_repeats": 2, "window": 4, "max_unique_ratio": 1}
    reference, done, want = ref.guard(**options), 0, None
    for chunk in pushes:
        if reference.push(chunk):
            assert reference.reason is not None
            want = (done + len(chunk), reference.reason.phrase, reference.reason.count)
            break
        done += len(chunk)
    got = pushed(options, pushes)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        # The reference says only which push tripped; the offset is past the word in it.
        assert got[0] <= want[0] and text[got[0]] == " "
        assert (got[1].phrase, got[1].count) == want[1:]
    (trip,) = scan_texts([text], **options)
    assert (trip is None) == (got is None)
    if trip is not None and got is not None:
        assert (trip.offset, trip.reason) == got
    stream = text.encode("utf-8", "surrogatepass")
    byte_cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=4)))
    raw, tripped = Guard(**options), False
    for a, b in zip([0, *byte_cuts], [*byte_cuts, len(stream)], strict=True):
        if raw.push_bytes(stream[a:b]) is not None:
            tripped = True
            break
    assert tripped == (got is not None)
    assert raw.reason == (None if got is None else got[1])


@needs_proc
def test_a_long_word_finished_by_a_huge_push_stays_in_bounded_memory() -> None:
    """70,000 characters of a word, then 50,000,000 more and a space in one push: peak RSS
    grows by a few MB, as when the whole word comes in one push (it grew by 334 MB when the
    rest was normalised as one piece)."""
    script = f"""
from vthread.guard import Guard
def peak(): return {PEAK_KIB}
guard = Guard()
guard.push("x" * 70_000)
rest = "x" * 50_000_000 + " "
before = peak()
guard.push(rest)
print(peak() - before)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=True)
    assert int(result.stdout) < 32 * 1024, f"grew {result.stdout} KiB"


@needs_proc
@pytest.mark.parametrize("letter", ["\u0431", "\u00c9", "x"])
def test_long_words_that_left_the_window_give_their_memory_back(letter: str) -> None:
    """A 65,000-character word, then enough short words to push it out of a window of 200,
    600 times over: peak RSS grows by a few MB (what the window holds), not by a long word
    per slot (26 MB and more: reused slots kept their buffers, and then shrank them in place,
    which under glibc left holes too small for the next long word). A lower-case word (its
    spelling its normal form), an upper-case one (two buffers), an ASCII one."""
    script = f"""
from vthread.guard import Guard
def peak(): return {PEAK_KIB}
guard = Guard(window=200, max_repeats=10**9)
long_word = {letter!r} * 65_000 + " "
short_words = " ".join(f"w{{k}}" for k in range(199)) + " "
guard.push(long_word)
guard.push(short_words)
before = peak()
for _ in range(600):
    guard.push(long_word)
    guard.push(short_words)
print(peak() - before)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, check=True)
    assert int(result.stdout) < 8 * 1024, f"grew {result.stdout} KiB"


def test_a_hundred_thousand_newlines() -> None:
    """Newlines alone never make a word; they count toward the next one."""
    guard, reference = Guard(), ref.guard()
    assert not guard.push("\n" * 100_000)
    assert not reference.push("\n" * 100_000)
    assert guard.push("word ") == reference.push("word ")
    lines = "\n".join(["- item one two"] * 2_000) + "\n"
    assert guard.push(lines) == reference.push(lines)
    same_reason(guard.reason, reference.reason)


def test_astral_plane_words() -> None:
    """Mathematical letters and emoji count as in JavaScript (letters kept, emoji dropped)."""
    text = " ".join(["\U0001d400\U0001d401 🎉 \U0001d7ce"] * 30) + " "
    guard, reference = Guard(), ref.guard()
    assert guard.push(text) == reference.push(text)
    same_reason(guard.reason, reference.reason)
    assert guard.reason is not None and guard.reason.phrase.startswith("\U0001d400")


@needs_proc
def test_memory_stays_flat_on_an_endless_word() -> None:
    """200 MB without whitespace (as `cat /dev/zero` or one enormous word) and ten
    million one-character pushes: peak RSS grows by a few MB, not by the input."""
    script = f"""
import sys
from vthread.guard import Guard
def peak(): return {PEAK_KIB}
guard = Guard()
chunk = chr(int(sys.argv[1])) * (1 << 20)
before = peak()
for _ in range(200):
    guard.push(chunk)
for _ in range(10_000_000 // 4):
    guard.push("y"); guard.push("e"); guard.push("s"); guard.push(" ")
print(peak() - before)
"""
    for letter in ("\x00", "x"):
        result = subprocess.run([sys.executable, "-c", script, str(ord(letter))],
                                capture_output=True, text=True, timeout=300, check=True)
        assert int(result.stdout) < 32 * 1024, f"grew {result.stdout} KiB on {letter!r}"


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.one_of(texts(max_words=200), harsh_texts(max_words=200)), min_size=2,
                      max_size=6), options=guard_option_values())
def test_large_pushes_equal_reference(parts: list[str], options: dict[str, Any]) -> None:
    """Pushes of hundreds of words match the reference."""
    guard, reference = Guard(**options), reference_guard(options)
    for text in ["\n".join(parts), "".join(parts) + " tail"]:
        assert guard.push(text) == reference.push(text)
        same_reason(guard.reason, reference.reason)


# ---------------------------------------------------------------------- raw bytes (pipes)

raw_pieces = st.lists(
    st.one_of(
        st.sampled_from(["again ", "and ", "é ", "Σ ", "🎉 ", "x\n", "\u3000", "Ab "]),
        st.binary(min_size=1, max_size=3),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), options=guard_option_values())
def test_push_bytes_equals_decoding_in_python(data: st.DataObject, options: dict[str, Any]) -> None:
    """Raw bytes cut anywhere (inside characters, invalid bytes included) fed to
    ``push_bytes`` (as bytes, a bytearray or a memoryview) answer as Python's incremental
    ``surrogateescape`` decoder feeding ``push`` with each read's text: same trip, same
    reason, and the returned byte and character offsets point just past the tripping
    word (past the space after it when bytes of that space came in an earlier read)."""
    import codecs

    parts = data.draw(raw_pieces)
    stream = b"".join(p.encode() if isinstance(p, str) else p for p in parts)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=12)))
    reads = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    raw, decoded = Guard(**options), Guard(**options)
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    fed = 0
    for read in reads:
        held = len(decoder.getstate()[0])
        text = decoder.decode(read)
        expected = None
        if text and decoded.push(text):
            offset = decoded.trip_offset
            assert offset is not None
            through = len(text[:offset].encode("utf-8", "surrogateescape"))
            if through < held:  # the held bytes, already passed on, began the space after it
                through = len(text[:1].encode("utf-8", "surrogateescape"))
            expected = (through - held, fed + offset)
        fed += len(text)
        holder = data.draw(st.sampled_from([bytes, bytearray, memoryview]))
        assert raw.push_bytes(holder(read)) == expected
        same_reason(raw.reason, None if decoded.reason is None else ref.ReferenceReason(
            **dataclasses.asdict(decoded.reason)))
        if expected is not None:
            break


@settings(max_examples=300, deadline=None)
@given(data=st.data(), options=guard_option_values(),
       min_chars=st.sampled_from([0, 1, 7, 20, 60, 200]))
def test_push_bytes_per_character_trips_where_scan_texts_does_whatever_the_reads(
        data: st.DataObject, options: dict[str, Any], min_chars: int) -> None:
    """With ``min_chars_per_character``, ``min_chars`` counts the characters up to the word
    judged, as ``scan_texts`` (one character a push) counts them: the guard trips at the
    same character whatever the sizes of the reads (the command line's pipe), where per
    push a read larger than ``min_chars`` let an early word trip."""
    import codecs

    options = {**options, "min_chars": min_chars}
    parts = data.draw(raw_pieces)
    stream = b"".join(p.encode() if isinstance(p, str) else p for p in parts)
    text = codecs.decode(stream, "utf-8", "surrogateescape")
    found = scan_texts([text], **options)[0]
    cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)), max_size=12)))
    guard = Guard(**options)
    tripped = None
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        tripped = guard.push_bytes(stream[a:b], min_chars_per_character=True)
        if tripped is not None:
            break
    if found is None:
        assert tripped is None
        return
    assert tripped is not None and tripped[1] == found.offset
    same_reason(guard.reason, found.reason)


def test_push_bytes_per_character_is_a_bool_named_when_it_is_not() -> None:
    """``min_chars_per_character`` takes a bool (NumPy's too, as the other yes-or-no options
    do); anything else is a TypeError naming it (it said only "'str' object is not an
    instance of 'bool'"), and the guard is left as it was."""
    import numpy as np

    stream = b"Checking now. " * 40
    for value in (True, np.True_):
        per_character = Guard(min_chars=60)
        assert (per_character.push_bytes(stream, min_chars_per_character=value)
                == Guard(min_chars=60).push_bytes(stream, min_chars_per_character=True))
    guard = Guard()
    for value in ("yes", 1, np.array([True])):
        with pytest.raises(TypeError, match=r"^min_chars_per_character must be a bool, got "):
            guard.push_bytes(b"Checking now. ", min_chars_per_character=value)
    assert guard.push_bytes(stream) == Guard().push_bytes(stream)


def test_a_character_left_unfinished_by_push_bytes_is_flushed_by_push() -> None:
    """A ``push`` after ``push_bytes`` left a character unfinished takes the held bytes as
    text of their own first (lone surrogates, as a decoder flushed there gives them), as the
    reference pushed that text answers: they were kept and spliced into the next
    ``push_bytes``, after the ``push``'s text (a reordered stream)."""
    options = {"ngram": 2, "max_repeats": 2, "max_unique_ratio": 1}
    guard, reference = Guard(**options), ref.guard(**options)
    for piece in (b"caf\xc3", " bar ", b"\xa9 ", "caf\u00e9 bar ", "caf\u00e9 bar "):
        if isinstance(piece, bytes):
            guard.push_bytes(piece)
        else:
            guard.push(piece)
    for text in ("caf", "\udcc3", " bar ", "\udca9 ", "caf\u00e9 bar ", "caf\u00e9 bar "):
        reference.push(text)
    assert guard.reason is not None and reference.reason is not None
    same_reason(guard.reason, reference.reason)
    assert guard.reason.phrase == "bar caf\u00e9"


def test_push_bytes_takes_what_holds_bytes_and_names_what_does_not() -> None:
    """A bytearray filled by readinto, or a memoryview of part of one, is read as the bytes
    it holds at the call, any other buffer as its raw bytes; a str, a list or a number is a
    TypeError naming its type."""
    import array

    stream = b"Let me check the logs again. " * 20
    expected = Guard().push_bytes(stream)
    assert expected is not None
    assert Guard().push_bytes(bytearray(stream)) == expected
    held, plain = Guard(), Guard()
    buffer = bytearray(stream)
    assert held.push_bytes(memoryview(buffer)[:7]) == plain.push_bytes(stream[:7]) is None
    buffer[:7] = b"x" * 7  # changed after the call: the guard kept nothing of it
    assert held.push_bytes(memoryview(buffer)[7:]) == plain.push_bytes(stream[7:]) is not None
    # Any buffer's raw bytes, whatever its item format, as a binary file's write takes them.
    signed = array.array("b", stream)
    assert Guard().push_bytes(signed) == expected  # type: ignore[arg-type]
    assert Guard().push_bytes(memoryview(stream).cast("b")) == expected
    assert Guard().push_bytes(memoryview(stream)[::2]) == Guard().push_bytes(stream[::2])
    for wrong, name in (("spam", "str"), ([1, 2], "list"), (5, "int")):
        with pytest.raises(TypeError, match=f"push_bytes takes bytes or an object holding "
                           f"bytes .*, got {name}"):
            Guard().push_bytes(wrong)  # type: ignore[arg-type]


def test_a_long_push_lets_other_threads_run() -> None:
    """A push of a whole document releases the GIL while the core reads it: another Python
    thread keeps running meanwhile (it could not while the push held the GIL)."""
    import threading

    text = "healthy words " + " ".join(f"w{i}" for i in range(5_000_000))
    counter = [0]
    running = threading.Event()
    done = threading.Event()

    def count() -> None:
        running.set()
        while not done.is_set():
            counter[0] += 1

    other = threading.Thread(target=count)
    other.start()
    running.wait()
    before = counter[0]
    assert not Guard().push(text)
    during = counter[0] - before
    done.set()
    other.join()
    # Held, the GIL would let the other thread run one switch interval (5 ms) at most.
    assert during > 400_000, during


def test_a_guard_fed_by_another_thread_says_so() -> None:
    """A guard is one stream's. Called while another thread's long push (which lets other
    threads run) is reading, its push, push_bytes, reason, trip_offset and options raise a
    RuntimeError saying so (PyO3 said "Already borrowed"; a new user's find)."""
    import threading

    guard = Guard()
    text = "healthy words " + " ".join(f"w{i}" for i in range(2_000_000))
    done = threading.Event()
    refused: list[str] = []

    def call_meanwhile() -> None:
        # A harmless read, again and again, until one meets the push (it cannot end first:
        # the push lets this thread run for as long as it reads).
        while not done.is_set():
            try:
                _ = guard.trip_offset
            except RuntimeError as error:
                refused.append(str(error))
                break
        for call in (lambda: guard.push("a b "), lambda: guard.push_bytes(b"a b "),
                     lambda: guard.reason, lambda: guard.options):
            try:
                call()
            except RuntimeError as error:
                refused.append(str(error))

    other = threading.Thread(target=call_meanwhile)
    other.start()
    assert not guard.push(text)
    done.set()
    other.join()
    assert refused, "no call met the push: nothing was tested"
    assert set(refused) == {
        "this Guard is being fed by another thread (a push of 65,536 characters or more lets "
        "other threads run meanwhile): a guard watches one stream; give each stream, or each "
        "thread, a Guard of its own"}
    assert guard.reason is None and guard.options.ngram == 4


def test_the_core_refuses_unresolved_options() -> None:
    """Options that guard_options could not have produced are a ValueError in the core,
    never an out-of-range read."""
    import types

    from vthread import _core

    for ngram, window in ((1, 48), (5, 2), (4, 2**62 + 1)):
        raw = types.SimpleNamespace(ngram=ngram, window=window, max_repeats=4,
                                    max_unique_ratio=0.4, min_chars=0)
        with pytest.raises(ValueError, match="unresolved guard options"):
            _core.GuardCore(raw)
        with pytest.raises(ValueError, match="unresolved guard options"):
            _core.scan_texts(["a b a b a b"], raw)


def test_a_guard_takes_weak_references() -> None:
    """A harness keeping its streams' guards in a WeakValueDictionary: a Guard (a subclass
    of the core's type) takes weak references, which die with it."""
    import gc
    import weakref

    guard = Guard()
    held = weakref.ref(guard)
    assert held() is guard
    del guard
    gc.collect()
    assert held() is None


@settings(max_examples=150, deadline=None)
@given(data=st.data(), options=guard_option_values())
def test_a_reset_guard_answers_as_a_new_one(data: st.DataObject, options: dict[str, Any]
                                            ) -> None:
    """``reset()`` (a harness's next turn) forgets the stream: the words, a trip and its
    reason, the bytes of a character ``push_bytes`` held. Fed another stream, the guard
    answers as a guard just made with its options (the obviously correct twin): it stayed
    tripped, and a new Guard was the only way to start again."""
    earlier = b"".join(p.encode() if isinstance(p, str) else p
                       for p in data.draw(raw_pieces))
    later = data.draw(raw_pieces)
    reused, fresh = Guard(**options), Guard(**options)
    reused.push_bytes(earlier)
    reused.push_bytes(b"\xe2\x82")  # a character cut short, held for the next call
    assert reused.reset() is None
    assert (reused.reason, reused.trip_offset, reused.options) == (None, None, fresh.options)
    for piece in later:
        if isinstance(piece, str):
            assert reused.push(piece) == fresh.push(piece)
        else:
            assert reused.push_bytes(piece) == fresh.push_bytes(piece)
        assert reused.reason == fresh.reason and reused.trip_offset == fresh.trip_offset


def test_reset_starts_a_tripped_guard_again() -> None:
    """A guard that tripped on one turn watches the next after ``reset()``, trips again on
    a loop, and names that loop."""
    guard = Guard()
    assert guard.push("go on " * 20)
    guard.reset()
    assert guard.reason is None and not guard.push("Here is the answer you asked for. ")
    assert guard.push("no " * 30)
    assert guard.reason is not None and guard.reason.phrase == "no no no no"


@settings(max_examples=150, deadline=None)
@given(data=st.data(), options=guard_option_values())
def test_a_copied_guard_is_a_fork_of_the_stream(data: st.DataObject, options: dict[str, Any]
                                                ) -> None:
    """copy.copy and copy.deepcopy of a guard mid-stream (bytes of a character held too)
    give a guard of its own in the same state: fed the rest, it answers as one guard fed
    the whole stream, and feeding it leaves the original as it was (candidate continuations
    sampled from one prefix, each guarded on its own). A guard could not be copied."""
    import copy

    parts = data.draw(raw_pieces)
    stream = b"".join(p.encode() if isinstance(p, str) else p for p in parts)
    cut = data.draw(st.integers(0, len(stream)))
    whole, forked = Guard(**options), Guard(**options)
    expected = whole.push_bytes(stream)
    first = forked.push_bytes(stream[:cut])
    copies = [copy.copy(forked), copy.deepcopy(forked)]
    before = (forked.reason, forked.trip_offset)
    for branch in copies:
        assert type(branch) is Guard and branch is not forked
        if first is None:
            got = branch.push_bytes(stream[cut:])
            assert (got is None) == (expected is None)
            if got is not None and expected is not None:
                assert got[1] == expected[1]  # characters decoded before the tripping word
        same_reason(branch.reason, None if whole.reason is None else ref.ReferenceReason(
            **dataclasses.asdict(whole.reason)))
    assert (forked.reason, forked.trip_offset) == before


def test_a_copied_subclass_keeps_its_own_attributes() -> None:
    """A subclass's own attributes (its __dict__, its slots) are copied with the core's
    state, shallowly by copy.copy and deeply by copy.deepcopy (they were dropped)."""
    import copy

    class Labelled(Guard):
        def __init__(self, label: str, **options: Any) -> None:
            super().__init__(**options)
            self.label, self.seen = label, [label]

    class Slotted(Guard):
        __slots__ = ("note",)

    labelled = Labelled("run 7", ngram=3)
    shallow, deep = copy.copy(labelled), copy.deepcopy(labelled)
    assert (shallow.label, shallow.seen, deep.seen) == ("run 7", ["run 7"], ["run 7"])
    assert shallow.seen is labelled.seen and deep.seen is not labelled.seen
    assert deep.options == labelled.options and type(deep) is Labelled
    slotted = Slotted()
    slotted.note = ["a"]
    assert copy.copy(slotted).note is slotted.note
    assert copy.deepcopy(slotted).note == ["a"] and copy.deepcopy(slotted).note is not slotted.note


def test_a_subclass_adds_constructor_arguments_with_its_init_alone() -> None:
    """A subclass whose __init__ takes arguments of its own (positional or keyword) needs no
    __new__ of its own: the options reach the guard, its own arguments its __init__, which
    may pass the options on to super().__init__ (its arguments were refused by Guard's
    __new__). Guard itself, and a subclass with no __init__ of its own, still refuse an
    argument they do not take, naming it."""

    class Labelled(Guard):
        def __init__(self, label: str, *, turn: int = 0, **options: Any) -> None:
            super().__init__(**options)
            self.label, self.turn = label, turn

    labelled = Labelled("run 7", turn=3, ngram=3, max_repeats=2)
    assert (labelled.label, labelled.turn) == ("run 7", 3)
    assert (labelled.options.ngram, labelled.options.max_repeats) == (3, 2)
    assert labelled.push("go on and on " * 6) and labelled.reason is not None
    with pytest.raises(TypeError, match="unexpected keyword argument 'nrgam'"):
        Labelled("run 8", nrgam=3)

    class Scaled(Guard):  # options computed in __init__ (they were ignored: the defaults)
        def __init__(self, scale: int) -> None:
            super().__init__(window=scale * 4, max_repeats=scale)

    scaled = Scaled(3)
    assert (scaled.options.window, scaled.options.max_repeats) == (12, 3)
    assert scaled.options == Guard(window=12, max_repeats=3).options
    made = Guard(window=12, max_repeats=3)
    text = "go on and on " * 6
    assert (scaled.push(text), scaled.trip_offset, scaled.reason) == (
        made.push(text), made.trip_offset, made.reason)
    assert scaled.reason is not None

    class Plain(Guard):
        pass

    for made in (Guard, Plain):
        with pytest.raises(TypeError, match=f"{made.__name__}\\(\\) got an unexpected keyword "
                                            "argument 'label'"):
            made(label="x")
        with pytest.raises(TypeError, match="keyword arguments only, got 1 positional"):
            made(4)
    assert Plain(ngram=5).options.ngram == 5


class LabelledGuard(Guard):
    """A subclass with an attribute of its own (at module level: pickle finds it by name)."""

    def __init__(self, label: str, **options: Any) -> None:
        super().__init__(**options)
        self.label = label


class SlottedGuard(Guard):
    __slots__ = ("note",)


class StatefulGuard(Guard):
    """A subclass writing its own pickled state (leaving out what does not pickle)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.count, self.lock = 1, threading.Lock()

    def __getstate__(self) -> tuple[int]:
        return (self.count,)

    def __setstate__(self, state: tuple[int]) -> None:
        (self.count,) = state
        self.lock = threading.Lock()


class PrivateGuard(Guard):
    """A subclass whose slot is private (its name mangled as the class holds it)."""

    __slots__ = ("__secret",)

    def __init__(self, secret: str = "", **options: Any) -> None:
        super().__init__(**options)
        self.__secret = secret

    def secret(self) -> str:
        return self.__secret


def test_a_guard_pickles_with_its_class_options_and_attributes() -> None:
    """A guard pickles, its class, options and own attributes kept, and loads as one made
    with them: fed the same chunks as a copy of the original, it trips at the same chunk for
    the same reason (a harness hands configured guards to worker processes; pickling was a
    TypeError). A guard fed nothing since made or reset pickles as its options alone."""
    import copy
    import pickle

    slotted = SlottedGuard(max_repeats=2)
    slotted.note = ["a"]
    for guard in (Guard(), Guard(ngram=3, window=12, max_repeats=3),
                  LabelledGuard("run 7", ngram=3, max_repeats=3), slotted):
        loaded = pickle.loads(pickle.dumps(guard))
        assert type(loaded) is type(guard) and loaded.options == guard.options
        assert loaded.reason is None and loaded.trip_offset is None
        twin = copy.copy(guard)
        chunks = ["I will ", "try again. "] * 8
        assert [loaded.push(c) for c in chunks] == [twin.push(c) for c in chunks]
        assert loaded.reason == twin.reason is not None
    assert pickle.loads(pickle.dumps(LabelledGuard("run 8"))).label == "run 8"
    assert pickle.loads(pickle.dumps(slotted)).note == ["a"]
    stateful = pickle.loads(pickle.dumps(StatefulGuard(ngram=3)))  # (its __getstate__ used)
    assert (stateful.count, stateful.options.ngram) == (1, 3)
    private = PrivateGuard("k", ngram=3)
    for made in (pickle.loads(pickle.dumps(private)), copy.copy(private),
                 copy.deepcopy(private)):
        assert made.secret() == "k" and made.options.ngram == 3
    fed = LabelledGuard("run 9", ngram=3, max_repeats=3)
    fed.push("All good so far. ")
    fed_size = len(pickle.dumps(fed))
    fed.reset()
    assert len(pickle.dumps(fed)) < fed_size - 100  # (options and attributes alone)
    assert pickle.loads(pickle.dumps(fed)).label == "run 9"
    empty = Guard()
    empty.push("")  # (changes nothing)
    assert pickle.loads(pickle.dumps(empty)).options == empty.options


@settings(max_examples=200, deadline=None)
@given(data=st.data(), options=guard_option_values(), bits=st.sampled_from([64, 64, 3, 0]))
def test_a_fed_guard_pickled_answers_every_later_push_as_the_original(
    data: st.DataObject, options: dict[str, Any], bits: int
) -> None:
    """A guard pickled mid-stream (a word under way, bytes of a character held, tripped or
    not, hashes cut to a few bits) loads as a guard that answers every later push as the
    original does, push by push, bytes and text alike: its window of words, its counts
    and its trip travel with it (a fed guard was a TypeError)."""
    import pickle

    if data.draw(st.booleans()):
        text = data.draw(st.one_of(texts(vocabulary=5, max_words=200), harsh_texts()))
        pushes: list[str | bytes] = list(data.draw(chunkings(text)))
    else:
        pushes = [p.encode("utf-8", "surrogatepass") if isinstance(p, str) else p
                  for p in data.draw(raw_pieces)]
    cut = data.draw(st.integers(0, len(pushes)))
    original = Guard(**options)
    original._set_hash_bits(bits)

    def push(guard: Guard, chunk: str | bytes) -> object:
        return guard.push_bytes(chunk) if isinstance(chunk, bytes) else guard.push(chunk)

    for chunk in pushes[:cut]:
        push(original, chunk)
    loaded = pickle.loads(pickle.dumps(original))
    assert (loaded.reason, loaded.trip_offset) == (original.reason, original.trip_offset)
    for chunk in pushes[cut:]:
        assert push(loaded, chunk) == push(original, chunk)
        assert (loaded.reason, loaded.trip_offset) == (original.reason, original.trip_offset)


def test_a_guard_pickled_inside_a_long_word_reads_it_on() -> None:
    """Pickled inside a word past what the guard keeps of one (its digest under way),
    and loaded in another process, a guard trips on that word repeated as the original."""
    import pickle

    word = "\u03a3a\u00e9" * 120_000  # (360,000 characters, a capital sigma in each three)
    chunks = [word[:200_001], word[200_001:] + " b ", *([word + " b "] * 4)]
    original = Guard(ngram=2, max_repeats=3)
    original.push(chunks[0])
    program = ("import pickle, sys; guard, chunks = pickle.load(sys.stdin.buffer); "
               "answers = [guard.push(c) for c in chunks]; "
               "pickle.dump((answers, guard.reason, guard.trip_offset), sys.stdout.buffer)")
    ran = subprocess.run([sys.executable, "-c", program],
                         input=pickle.dumps((original, chunks[1:])), capture_output=True,
                         check=True)
    answers = [original.push(c) for c in chunks[1:]]
    assert answers[-1] and pickle.loads(ran.stdout) == (answers, original.reason,
                                                        original.trip_offset)


def test_a_guard_state_that_cannot_be_read_is_refused_saying_why() -> None:
    """The state a pickled guard loads from is checked whole before it is taken: damaged,
    cut short, written with other options or no state at all, or made to pass its checksum
    with a trip but no reason or held bytes that start no character, a ValueError says
    which, and the guard is left as it was. A guard whose hashes a test cut pickles with
    them."""
    import pickle

    import xxhash

    def tail(tripped: bool, held: bytes, decoded: int) -> bytes:
        """The fields a state ends with after the guard's own: the trip's flag and offset,
        the bytes ``push_bytes`` holds, the characters it decoded."""
        return b"".join([bytes([tripped]), (7).to_bytes(8, "little"),
                         len(held).to_bytes(8, "little"), held, decoded.to_bytes(8, "little")])

    written = Guard(ngram=3)
    assert written.push_bytes(b"one two three four five \xe2\x82") is None
    state = written._state()
    assert state.endswith(tail(False, b"\xe2\x82", 24)[9:] + state[-8:])  # (the layout read)
    held_tail = tail(False, b"\xe2\x82", 24)[9:]
    own = state[:-8 - len(held_tail)]  # (up to the trip's flag and offset)
    untripped_tail = own[-9:]

    def with_tail(made: bytes) -> bytes:
        body = own[:-9] + made
        return body + xxhash.xxh3_64_intdigest(body).to_bytes(8, "little")

    damaged = bytearray(state)
    damaged[len(state) // 2] ^= 1
    cases = {bytes(damaged): "checksum does not hold", state[:-1]: "checksum does not hold",
             b"": "too short", b"not a guard state at all": "does not start as one does",
             with_tail(tail(True, b"", 24)): "a trip without a reason",
             with_tail(tail(False, b"ab", 24)): "not the start of a character",
             with_tail(tail(False, b"\xe2\x82\xac", 24)): "not the start of a character"}
    assert with_tail(untripped_tail + held_tail) == state
    for bad, why in cases.items():
        guard = Guard(ngram=3)
        guard.push("six ")
        before = guard._state()
        with pytest.raises(ValueError, match=f"cannot restore a guard from this state: .*{why}"):
            guard._restore(bad)
        assert guard._state() == before
    with pytest.raises(ValueError, match="written by a guard with other options"):
        Guard(ngram=4)._restore(state)
    restored = Guard(ngram=3)
    restored._restore(state)
    assert restored._state() == state
    colliding = Guard(ngram=3)
    colliding._set_hash_bits(2)  # (unfed, its hashes cut: pickled with its state, not fresh)
    assert pickle.loads(pickle.dumps(colliding))._state() == colliding._state()
