"""The bulk text-run check in the core (``src/textrun.rs``) against its pure-Python twin,
``vthread.textrun.has_repeated_text_run``, text by text."""

from __future__ import annotations

import json
import multiprocessing
import re
import sys
from collections.abc import Iterator
from typing import Any, Final

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.cli_chunks import chunk_task, read_wholly_by_the_core
from tests.strategies import (
    long_text_runs,
    text_run_option_values,
    text_run_texts,
    text_run_units,
    utf16_units,
)
from vthread import _core
from vthread import _reference as ref
from vthread._jsvalue import utf16_tail
from vthread._options import text_run_options
from vthread.replay import has_repeated_text_runs
from vthread.textrun import TAIL_UNITS, has_repeated_text_run, text_units

_WORDLIKE: Final = re.compile("[a-z0-9]")
_SEPARATORS: Final = ".!?\n"


def twin(texts: list[Any], options: dict[str, Any]) -> list[bool]:
    """The pure-Python twin, one text at a time."""
    return [has_repeated_text_run(text, **options) for text in texts]


@settings(max_examples=500, deadline=None)
@given(batch=st.lists(text_run_texts(), max_size=6), options=text_run_option_values())
@example(batch=["a. b. c. d. a. b. c. d."], options={})
@example(batch=["x. " * 50], options={"max_unique_ratio": 0.58})
def test_core_equals_the_twin(batch: list[str], options: dict[str, Any]) -> None:
    """Units with separators, non-ASCII, astral characters, lone surrogates and every kind of
    whitespace: the core answers as the twin, text by text, for any options."""
    got = has_repeated_text_runs(batch, **options)
    assert got.dtype == np.bool_ and got.shape == (len(batch),)
    assert got.tolist() == twin(batch, options)


@settings(max_examples=500, deadline=None)
@given(first=text_run_units(), second=text_run_units(),
       separator=st.sampled_from([".", "!", "?", "\n", ". ", "\n\n"]))
def test_two_units_are_equal_as_the_twin_says(first: str, second: str, separator: str) -> None:
    """Unit equality probed directly: two units are a runaway (window 2, ratio 0.5) exactly
    when the twin normalises them to the same text."""
    text = first + separator + second
    options = {"min_units": 2, "window": 2, "max_unique_ratio": 0.5}
    assert has_repeated_text_runs([text], **options).tolist() == twin([text], options)


@settings(max_examples=200, deadline=None)
@given(text=long_text_runs(), options=text_run_option_values())
def test_core_equals_the_twin_past_the_tail(text: str, options: dict[str, Any]) -> None:
    """Texts longer than the 4000 UTF-16 units read, cut through or beside a surrogate pair."""
    assert utf16_units(text) > TAIL_UNITS
    assert has_repeated_text_runs([text], **options).tolist() == twin([text], options)


_RUN: Final = 30
#: Junctions between the units before the boundary and the first one after it, and whether
#: the junction is a break (U+0130 lower-cases to an ``i``).
_JUNCTIONS: Final = {"\U0001f389": True, "\U0001f389\U0001f389": True, "\ud83c\udf89": True,
                     "é": True, " ": True, "\u0130": False}


def boundary_texts() -> Iterator[tuple[str, str]]:
    """``"k" * 10 + junction + "k" * 30 + "." * f + "k" * 30``, with ``f`` (empty units) such
    that the 4000-unit boundary sweeps across the junction: the first unit read equals the
    last exactly when it is all 30 ``k`` and none before the junction. Yields (text, junction).
    """
    for junction in _JUNCTIONS:
        for shift in range(-3, 4):
            dots = TAIL_UNITS - 2 * _RUN - utf16_units(junction) + shift
            yield "k" * 10 + junction + "k" * _RUN + "." * dots + "k" * _RUN, junction


_BOUNDARY: Final = {"min_units": 2, "window": 2, "max_unique_ratio": 0.5}


@pytest.mark.parametrize(("text", "junction"), list(boundary_texts()))
def test_the_boundary_cuts_where_the_twin_does(text: str, junction: str) -> None:
    """The 4000-unit boundary, swept across astral characters (a pair cut leaves its low
    surrogate), two code points that JavaScript reads as one pair, and BMP characters."""
    expected = twin([text], _BOUNDARY)
    assert has_repeated_text_runs([text], **_BOUNDARY).tolist() == expected
    breaks = junction + "\udf89" if _JUNCTIONS[junction] else ""
    tail = utf16_tail(text, TAIL_UNITS)
    assert expected == [tail.lstrip(breaks).startswith("k" * _RUN + ".")]


def test_the_sweep_has_both_answers() -> None:
    """The boundary sweep is sharp: for every junction, some shifts read only the 30 ``k``
    after it (a runaway) and some read more or fewer."""
    for junction in _JUNCTIONS:
        answers = {twin([t], _BOUNDARY)[0] for t, j in boundary_texts() if j == junction}
        assert answers == {True, False}, junction


def ascii_lowerings() -> list[int]:
    """Regenerated from Python's ``str.lower`` over every code point: the non-ASCII code points
    whose lower-case form holds an ASCII letter or digit (``src/textrun.rs``'s table)."""
    return [c for c in range(0x80, sys.maxunicode + 1) if _WORDLIKE.search(chr(c).lower())]


def test_ascii_lowerings_are_the_known_few() -> None:
    """The regenerated list is the table in ``src/textrun.rs`` (U+0130 and the Kelvin sign on
    Python 3.11's Unicode 14); a new Unicode version that adds one fails here and below."""
    assert ascii_lowerings() == [0x0130, 0x212A]


def test_every_code_point_normalises_as_the_twin() -> None:
    """For every code point c (separators aside), the unit ``a{c}b`` is its normal form as the
    twin writes it, and differs from ``ab``: texts ``a{c}b.{normal}`` are runaways (two equal
    units) and texts ``a{c}b.ab`` are not. Covers the lower-casing table, breaks (whitespace,
    punctuation, lone surrogates, astral planes) and case."""
    special = set(ascii_lowerings())
    options = {"min_units": 2, "window": 2, "max_unique_ratio": 0.5}
    step = 1 << 16
    for start in range(0, sys.maxunicode + 1, step):
        points = [c for c in range(start, start + step) if chr(c) not in _SEPARATORS]
        normals = [
            text_units(f"a{chr(c)}b")[0] if c < 0x80 or c in special else "a b" for c in points
        ]
        same = [f"a{chr(c)}b.{n}" for c, n in zip(points, normals, strict=True)]
        other = [f"a{chr(c)}b.ab" for c in points]
        got = has_repeated_text_runs(same + other, **options)
        expected = np.concatenate(
            [np.ones(len(points), np.bool_), np.asarray(normals) == "ab"])
        wrong = [hex(points[i % len(points)]) for i in np.flatnonzero(got != expected)[:10]]
        assert not wrong, f"normalised differently from the twin: {wrong}"


def test_exact_float_comparison() -> None:
    """29 distinct of 50 at ratio 0.58: 50 * 0.58 is 28.999999999999996, so not a runaway,
    though 29 / 50 == 0.58 (a core dividing instead of multiplying would say yes)."""
    text = "".join(f"u{i % 29}. " for i in range(50))
    options = {"min_units": 2, "window": 50, "max_unique_ratio": 0.58}
    assert twin([text], options) == [False]
    assert has_repeated_text_runs([text], **options).tolist() == [False]
    options["max_unique_ratio"] = 0.6
    assert has_repeated_text_runs([text], **options).tolist() == [True]


@pytest.mark.parametrize(
    "text",
    ["\u0130" * 1_000_000, ("\u0130" * 400 + ".") * 12, ("\u0130\u212a" * 150 + "!") * 12,
     "\u0130. " * 3_000, "\u212a. " * 3_000,
     "x" * 1_000_000, "." * 1_000_000, ". " * 1_000_000, "\n" * 5_000 + "a. " * 9,
     "\U0001f389" * 1_000_000, "\ud83c" * 5_000, "Let me check. " * 100_000,
     "".join(f"unit {i}. " for i in range(100_000)), " " * 1_000_000],
    ids=lambda t: repr(t[:12]),
)
def test_pathological_texts(text: str) -> None:
    """Long runs of lowerings (U+0130 writes two bytes), of one character, of separators, of
    astral characters and lone surrogates: the core answers as the twin."""
    for options in ({}, {"min_units": 2, "window": 3, "max_unique_ratio": 0.34}):
        assert has_repeated_text_runs([text], **options).tolist() == twin([text], options)


def test_a_bare_string_is_a_type_error() -> None:
    """A str is one text, not an iterable of texts: read as characters it would be wrong
    (the core refuses one too, for callers of the binding)."""
    for bare in ("Again. " * 9, b"Again. " * 9):
        with pytest.raises(TypeError, match=r"got a single (str|bytes); wrap it in a list"):
            has_repeated_text_runs(bare)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a single str; wrap it in a list"):
        _core.has_repeated_text_runs("abc", 8, 64, 0.5)


@pytest.mark.parametrize("options", [(1, 64, 0.5), (8, 7, 0.5), (8, 64, 0.0), (8, 64, 1.5),
                                     (8, 64, float("nan"))])
def test_the_core_takes_resolved_options_only(options: tuple[int, int, float]) -> None:
    """The binding's options are ``text_run_options``' output; anything else is refused rather
    than answered by a rule the twin does not have."""
    with pytest.raises(ValueError, match="must be resolved"):
        _core.has_repeated_text_runs(["Again. " * 9], *options)


def test_any_iterable_and_any_item() -> None:
    """A generator, a tuple, a dict's keys; non-str items and empty texts are False; a str
    subclass is read as its content."""

    class Text(str):
        __slots__ = ()

    texts = ["Again. " * 9, "One. Two.", None, 7, b"Again. " * 9, "", Text("Again. " * 9),
             "\U0001f389 Again. " * 9]
    expected = [True, False, False, False, False, False, True, True]
    assert has_repeated_text_runs(t for t in texts).tolist() == expected
    assert has_repeated_text_runs(tuple(texts)).tolist() == expected
    assert has_repeated_text_runs(iter(texts)).tolist() == expected
    assert has_repeated_text_runs(dict.fromkeys(["Again. " * 9, "x"])).tolist() == [True, False]
    empty = has_repeated_text_runs([])
    assert empty.dtype == np.bool_ and empty.shape == (0,)
    with pytest.raises(TypeError):
        has_repeated_text_runs(5)  # type: ignore[arg-type]


def test_bulk_on_the_pool_equals_the_loop() -> None:
    """A batch large enough for rayon's pool answers as the twin, in order."""
    texts = pool_texts()
    assert sum(map(len, texts)) > 1 << 20
    got = has_repeated_text_runs(texts, min_units=3, window=6)
    assert got.tolist() == twin(texts, {"min_units": 3, "window": 6})
    assert got.any() and not got.all()


def pool_texts(count: int = 2_000) -> list[str]:
    """A batch the core splits over a thread pool (about 1.2 million code points: more than
    ``PARALLEL_FROM_POINTS``), some texts runaways and some not."""
    return ["".join(f"fresh words {j}. " for j in range(i % 40)) + "Again. " * (i % 12)
            + "x" * 300 for i in range(count)]


def _pool_batch() -> list[bool]:
    return has_repeated_text_runs(pool_texts()).tolist()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_process_can_use_the_pool() -> None:
    """``scan(jobs=N)`` forks workers after the parent ran the core on threads: the child
    must not wait on threads that exist only in the parent (a process-wide thread pool would
    hang here)."""
    expected = _pool_batch()
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply_async(_pool_batch).get(timeout=60) == expected


def test_reference_agrees() -> None:
    """The scalar reference (``vthread._reference``) is the same decision."""
    options = text_run_options()
    texts = ["Again. " * 9, "One. Two. Three.", "\u0130. i\u0307. " * 5, "\u212a. k! " * 4]
    assert has_repeated_text_runs(texts).tolist() == [
        ref.has_repeated_text_run(t, options) for t in texts
    ]


def file_boundary_texts() -> Iterator[str]:
    """Texts for the CLI's default text-run options (8 units, at most half distinct) whose
    answer turns on where the 4000-unit boundary falls, swept across each junction: the
    last 8 units are the one cut at the boundary, four ``k`` runs and three others, a runaway
    exactly when the one cut is a whole ``k`` run."""
    end = ("." + "k" * _RUN) * 4 + ".a.b.c"
    for junction in _JUNCTIONS:
        for shift in range(-3, 4):
            dots = TAIL_UNITS - _RUN - len(end) - utf16_units(junction) + shift
            yield "k" * 10 + junction + "k" * _RUN + "." * dots + end


@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_file_s_long_texts_cut_where_python_s_do(ascii_only: bool) -> None:
    """A text the core reads from a file's bytes is handed on as its last 4000 code points
    only (not the whole text, which may be hundreds of megabytes): the records equal those
    of Python's reading of the same lines, across the boundary sweep, its texts written as
    JSON escapes and as UTF-8."""
    texts = list(file_boundary_texts())
    lines = [json.dumps([{"type": "user", "text": "go"}, {"type": "bot", "text": text}],
                        ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
             for text in texts]
    plain = [index for index, text in enumerate(texts)
             if not any(0xD800 <= ord(c) < 0xE000 for c in text)]  # no lone surrogate
    done = read_wholly_by_the_core(chunk_task([lines[index] for index in plain]))
    verdicts = [json.loads(record)["verdict"] for record in done.output.splitlines()]
    assert verdicts == ["repeated_message_text_run" if twin([texts[index]], {})[0] else None
                        for index in plain]
    assert set(verdicts) == {"repeated_message_text_run", None}


def test_a_value_that_is_no_text_is_said_of_one_text_as_of_many() -> None:
    """``has_repeated_text_run`` of a value that is no str answers False (never a runaway,
    as in production) and says so, as ``scan_texts`` and ``has_repeated_text_runs`` say it
    of a batch (bytes of a stream read in binary mode were answered "no runaway" in
    silence); None, a NaN and a str subclass go unsaid."""
    import warnings

    from vthread import has_repeated_text_run

    looping = "Let me check. " * 10
    with pytest.warns(UserWarning, match=r"has_repeated_text_run\(\) reads bytes as no text, "
                                         r".*: decode them"):
        assert not has_repeated_text_run(looping.encode())
    with pytest.warns(UserWarning, match=r"reads a value of type dict as no text, .*: pass "
                                         r"the text it holds"):
        assert not has_repeated_text_run({"text": looping})

    class Text(str):
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not has_repeated_text_run(None)
        assert not has_repeated_text_run(float("nan"))
        assert has_repeated_text_run(Text(looping))
