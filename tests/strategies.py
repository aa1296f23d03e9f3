"""Hypothesis strategies shared by the property tests.

Threads are drawn from small alphabets on purpose: repeats, look-alikes that JavaScript
calls equal (``1`` and ``1.0``, reordered index keys) and near-misses are then common, which is
where a fast path and the reference can part ways.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import json
from itertools import pairwise
from typing import Any, Final

import numpy as np
from hypothesis import strategies as st

KINDS = st.sampled_from(["user", "bot", "reasoning", "activity", "system"])
TEXTS = st.sampled_from(["", "a", "b", "A", "hi there", "é", "🎉", "\ud83c\udf89", "\ud800",
                         "Let me check. " * 10, "Done.\nDone.\nDone.\nDone.\nDone.\nDone."
                         "\nDone.\nDone.\n"])
ODD_VALUES = st.sampled_from([None, 1, 1.0, -0.0, 0, True, float("nan"), 2**53 + 1, 2**53])
JSON_LEAVES = st.one_of(
    st.sampled_from([None, True, False, 0, 1, 1.0, -0.0, 1.5, 2**53, 2**53 + 1, "", "x", "1"]),
    st.text(max_size=3),
    # Floats of every shape: exponents both ways, integral ones beyond 2**53, subnormals.
    st.floats(),
    st.sampled_from([1e16, 1e21, 1e-7, 1e-5, 5e-324, 123456789.5, 1e15, -1e300]),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "0", "1", "10", "01", "x.y"]), inner,
                        max_size=3),
    ),
    max_leaves=8,
)
NAMES = st.sampled_from(["read", "search", "_notice", "ls"])
ARGUMENTS = st.sampled_from([{"a": 1}, {"a": 1.0}, {"a": 2}, None, "q", {"0": 0, "b": 1},
                             {"b": 1, "0": 0}, {"b": 1, "a": 0}, {"a": 0, "b": 1}])
RESULTS = st.sampled_from(["", "x", "y", None, {}, {"n": 1}, {"n": 1.0}, [1, 2]])

_ABSENT: Any = object()


@st.composite
def activities(draw: st.DrawFn) -> dict[str, Any]:
    """A tool call or result, sometimes malformed, with optional arguments and result."""
    function: dict[str, Any] = {"name": draw(NAMES)}
    if draw(st.booleans()):
        function["arguments"] = draw(ARGUMENTS)
    kind = draw(st.sampled_from(["request", "response", "response", "notice"]))
    if kind == "response" and draw(st.integers(0, 4)):
        function["result"] = draw(RESULTS)
    activity: Any = {"type": kind, "function": function}
    if draw(st.integers(0, 20)) == 0:
        activity = draw(st.sampled_from([None, {"type": 1, "function": function},
                                         {"type": kind, "function": {"name": 3}}]))
    return {"type": "activity", "text": "", "meta": {"activity": activity}}


@st.composite
def plain_messages(draw: st.DrawFn) -> dict[str, Any]:
    """A non-activity message whose fields are sometimes absent, null or odd values."""
    message: dict[str, Any] = {}
    if draw(st.integers(0, 10)):
        message["type"] = draw(KINDS)
    else:
        message["type"] = draw(ODD_VALUES)
    if draw(st.integers(0, 10)):
        message["text"] = draw(TEXTS)
    elif draw(st.booleans()):
        message["text"] = draw(ODD_VALUES)
    meta_choice = draw(st.integers(0, 5))
    if meta_choice == 1:
        message["meta"] = None
    elif meta_choice == 2:
        message["meta"] = draw(JSON_VALUES)
    if draw(st.integers(0, 3)) == 0:
        message["usage"] = {"tokens": draw(st.sampled_from([0, 1, 2.5, -1, "3", None]))}
    return message


MESSAGES = st.one_of(plain_messages(), activities())


@st.composite
def threads(draw: st.DrawFn, max_size: int = 30) -> list[dict[str, Any]]:
    """A thread that often ends in a repeated block, an activity run or a result run."""
    pool = draw(st.lists(MESSAGES, min_size=1, max_size=6))
    pick = st.sampled_from(pool)
    thread = draw(st.lists(st.one_of(pick, MESSAGES), max_size=max_size))
    shape = draw(st.integers(0, 3))
    if shape == 1:
        block = draw(st.lists(pick, min_size=1, max_size=5))
        thread += block * draw(st.integers(1, 4))
    elif shape == 2:
        thread += draw(st.lists(st.one_of(pick, activities()), min_size=6, max_size=14))
    elif shape == 3:
        answer = draw(activities())
        for _ in range(draw(st.integers(2, 4))):
            thread += [draw(plain_messages()), answer]
    # Copies share objects; half the time make them distinct objects with equal content.
    if draw(st.booleans()):
        thread = [_copy(m) for m in thread]
    return thread


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


OPTION_VALUES = st.one_of(st.none(), st.integers(-1, 6), st.sampled_from(
    [1.5, 2.9, 1e9, float("inf"), -float("inf"), float("nan")]))


@st.composite
def cycle_keywords(draw: st.DrawFn) -> dict[str, Any]:
    """Cycle options as a caller passes them, each unset half the time."""
    names = ["min_repetitions", "min_pattern_length", "max_pattern_length",
             "min_result_repetitions"]
    return {n: draw(OPTION_VALUES) for n in names if draw(st.booleans())}


# ------------------------------------------------------------------- streams for the guard

_WORDS = ["go", "on", "Let", "me", "check", "the", "file", "é", "Straße", "İstanbul", "ΣΑΣ",
          "\U0001d400bc", "🎉", "x1", "lint()", "...", "-", "Ok,", "done."]
_SPACES = [" ", " ", " ", "\n", "\n\n", "\t", "\u00a0", "\u2028", "\u3000", "\x1c", "\u0085",
           "\ufeff", " \n "]


@st.composite
def texts(draw: st.DrawFn, vocabulary: int = 12, max_words: int = 120) -> str:
    """A stream from a small vocabulary (so phrases recur), with JS and non-JS whitespace."""
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=vocabulary,
                          unique=True))
    count = draw(st.integers(0, max_words))
    picks = draw(st.lists(st.sampled_from(words), min_size=count, max_size=count))
    gaps = draw(st.lists(st.sampled_from(_SPACES), min_size=count, max_size=count))
    return "".join(w + g for w, g in zip(picks, gaps, strict=True))


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut into pushes at random UTF-16 positions, splitting surrogate pairs too."""
    units = text.encode("utf-16-le", "surrogatepass")
    size = len(units) // 2
    cuts = sorted(set(draw(st.lists(st.integers(0, size), max_size=max(1, size // 3)))))
    bounds = [0, *cuts, size]
    return [
        units[2 * a : 2 * b].decode("utf-16-le", "surrogatepass")
        for a, b in pairwise(bounds)
        if b > a
    ]


@st.composite
def guard_option_values(draw: st.DrawFn) -> dict[str, Any]:
    """Guard keywords, each unset half the time, including values that clamp."""
    choices = {
        "ngram": st.sampled_from([None, 0, 2, 3, 4, 2.7]),
        "window": st.sampled_from([None, 0, 4, 8, 12, 48, 7.9, float("inf")]),
        "max_repeats": st.sampled_from([None, 0, 2, 3, 4]),
        "max_unique_ratio": st.sampled_from([None, 0.0, 0.3, 0.4, 0.45, 0.5, 0.9, 1.0, 1.5]),
        "min_chars": st.sampled_from([None, 0, 10, 40, 10.7]),
    }
    return {name: draw(values) for name, values in choices.items() if draw(st.booleans())}


# ------------------------------------------------- harsher streams (guard engine, replay)

#: Words that normalise to themselves, to each other ("Loop", "loop!") or to nothing ("--"),
#: surrogate halves that only make a letter when they meet, and non-JS "whitespace" inside.
_HARSH_WORDS = ["loop", "Loop", "loop!", "LOOP.", "again", "again,", "I", "i", "will",
                "don't", "dont", "--", "42", "4-2", "É", "été", "\U0001d400", "🎉",
                "x\U0001f600y", "ß", "İ", "Σ", "日本", "١٢", "\u2160", "\ud835", "\udc00",
                "a\ud835", "\udc00b", "\x00", "a\x1db", "a\x1fb", "\u200b"]
_HARSH_SPACES = [" ", " ", " ", "  ", "\n", "\n\n", " \n", "\t", "\r", "\r\n", "\v", "\f",
                 "\xa0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f",
                 "\u205f", "\u3000", "\ufeff", "\x1c", "\x1e", "\x85", ""]


@st.composite
def harsh_texts(draw: st.DrawFn, vocabulary: int = 6, max_words: int = 150) -> str:
    """Like :func:`texts`, with lone surrogates, control characters and glued words."""
    words = draw(st.lists(st.sampled_from(_HARSH_WORDS), min_size=1, max_size=vocabulary))
    count = draw(st.integers(0, max_words))
    picks = draw(st.lists(st.sampled_from(words), min_size=count, max_size=count))
    gaps = draw(st.lists(st.sampled_from(_HARSH_SPACES), min_size=count, max_size=count))
    lead = draw(st.sampled_from(["", "", " ", "\n"]))
    return lead + "".join(w + g for w, g in zip(picks, gaps, strict=True))


@st.composite
def code_point_chunkings(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at random code-point positions, empty pushes included."""
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=max(1, len(text) // 2)))
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


# ------------------------------------------------------------- words for the Unicode tables

#: Where lower-casing is delicate: Σ (final or not by its neighbours), cased characters,
#: case-ignorable ones (U+02B0 and U+0345 are cased too), then U+0130 (two code points
#: lower), titlecase, Kelvin, capital sharp s, numbers, whitespace and lone surrogates.
_CASED_PICKS = ["A", "a", "\u0391", "\u03a3", "\u1f88", "\U00010400"]
_IGNORABLE_PICKS = ["'", ".", ":", "\u00ad", "\u02b0", "\u0345", "\u0301", "\U0001f3fb"]
_OTHER_PICKS = ["1", "-", "\u0130", "\u212a", "\u1e9e", "\u00b2", "\u2167", " ", "\u00a0",
                "\ud800", "\udc00", "\udbff", "\udfff"]


def _as_pair(c: int) -> str:
    """An astral code point written as its two surrogates, as in a JavaScript string."""
    return chr(0xD800 + ((c - 0x10000) >> 10)) + chr(0xDC00 + ((c - 0x10000) & 0x3FF))


#: Strings over the whole code point range (surrogates included), with astral characters
#: also written as surrogate pairs, and the delicate characters above often.
CODE_POINT_WORDS = st.lists(
    st.one_of(
        st.just("\u03a3"),
        st.sampled_from(_CASED_PICKS),
        st.sampled_from(_IGNORABLE_PICKS),
        st.sampled_from(_OTHER_PICKS),
        st.integers(0, 0x10FFFF).map(chr),
        st.integers(0x10000, 0x10FFFF).map(_as_pair),
        st.integers(0xD800, 0xDFFF).map(chr),
    ),
    max_size=24,
).map("".join)


# ------------------------------------------------------------------------------ text runs

#: Unit words: cases, digits, non-ASCII letters (some lower-casing to ASCII: İ, the Kelvin
#: sign), astral characters (one with an astral lower-case), lone surrogates, combining marks,
#: and near-misses that a wrong break or case rule would merge ("a b" / "ab", "İstanbul" /
#: "i stanbul" / "istanbul").
_RUN_WORDS = ["Done", "done", "DONE", "Do ne", "again", "Let me check", "ok", "x", "42", "a b",
              "ab", "é", "İ", "İstanbul", "istanbul", "i stanbul", "\u212aelvin", "kelvin", "K",
              "Σ", "ΣΑΣ", "Straße", "\ufb01le", "🎉", "\U0001d400", "\U00010400", "\ud83c",
              "\udf89", "\ud800", "a\u0301", "it's", "it s", "co-op", "coop", "\x00", ""]
#: Between words: JavaScript whitespace, Python-only whitespace, punctuation, nothing.
_RUN_GAPS = [" ", "  ", "\t", "\u00a0", "\u1680", "\u2000", "\u200a", "\u202f", "\u205f",
             "\u3000", "\ufeff", "\v", "\f", "\r", "\x1c", "\u0085", "\u180e", "\u200b", ",",
             " - ", "", "\u2028", "\u2029"]
#: After a unit: runs of the four separators, mixed with what only looks like one.
_RUN_SEPARATORS = [".", "!", "?", "\n", "...", "?!", ". ", "! ", ".\n", "\n\n", " . ", "\r\n",
                   ".)", "!\u3000", "\u2028", ";", "\r"]


@st.composite
def text_run_units(draw: st.DrawFn) -> str:
    """One unit as written: a few words with gaps, sometimes padded by a gap."""
    words = draw(st.lists(st.sampled_from(_RUN_WORDS), min_size=1, max_size=3))
    gaps = draw(st.lists(st.sampled_from(_RUN_GAPS), min_size=len(words) + 1,
                         max_size=len(words) + 1))
    if draw(st.booleans()):
        gaps[0] = gaps[-1] = ""
    return gaps[0] + "".join(w + g for w, g in zip(words, gaps[1:], strict=True))


@st.composite
def text_run_texts(draw: st.DrawFn, max_units: int = 60) -> str:
    """Units from a small pool (so they repeat) each followed by a separator; sometimes a
    unit of arbitrary characters."""
    pool = draw(st.lists(st.one_of(text_run_units(), st.text(max_size=6)), min_size=1,
                         max_size=6))
    count = draw(st.integers(0, max_units))
    units = draw(st.lists(st.sampled_from(pool), min_size=count, max_size=count))
    separators = draw(st.lists(st.sampled_from(_RUN_SEPARATORS), min_size=count,
                               max_size=count))
    return "".join(u + s for u, s in zip(units, separators, strict=True))


def utf16_units(text: str) -> int:
    """``text``'s length in UTF-16 code units (lone surrogates one each)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@st.composite
def long_text_runs(draw: st.DrawFn, tail: int = 4000) -> str:
    """A unit text longer than the ``tail`` UTF-16 units read, its boundary drawn through or
    beside a junction (an astral character, whose pair it may cut, or word characters): a
    fixed start and a drawn prefix, the junction, ``k``s, then a unit text."""
    body = draw(text_run_texts())
    junction = draw(st.sampled_from(["\U0001f389", "k\U0001f389", "\U0001f389k", "kk", ". ",
                                     "é", "\U0001d400\U0001d400", "\ud83c\udf89"]))
    shift = draw(st.integers(-2, 4))
    middle = "k" * max(0, tail - utf16_units(body) - shift)
    prefix = draw(text_run_texts(max_units=10)) + draw(st.sampled_from(["", "k", "Done. "]))
    return "Start. " + prefix * draw(st.integers(1, 40)) + junction + middle + body


def text_run_option_values() -> st.SearchStrategy[dict[str, Any]]:
    """Text-run keywords, unset, ordinary, at the floors, fractional, huge or out of range."""
    return st.fixed_dictionaries(
        {},
        optional={
            "min_units": st.sampled_from([None, 0, 2, 3, 5, 8, 2.5, 1e9, 10**30, 2000, 2001]),
            "window": st.sampled_from([None, 0, 3, 5, 7.9, 64, float("inf"), 10**30, 2000]),
            "max_unique_ratio": st.sampled_from([None, 0.0, 0.1, 1 / 3, 0.3, 0.5, 0.58, 0.7,
                                                 0.75, 1.0, 1.5, -1, float("nan")]),
        },
    )


FUNCTION_CALL_PIECES = st.sampled_from([
    "<function=", "</function>", "<parameter=", "</parameter>", ">", "<", "\n", " ", "bash",
    "command", "path", "ls -a", "x", "=", "```", "<function=bash>\n", "</parameter>\n"])


@st.composite
def function_call_texts(draw: st.DrawFn) -> str:
    """Assistant text made of ``<function=...>`` calls, whole or cut anywhere, and the pieces
    of such calls between them: well-formed, unterminated and garbled calls alike."""
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(["bash", "str_replace_editor", "", " x "]))
            parameters = draw(st.lists(st.tuples(
                st.sampled_from(["command", "path", "", "command"]),
                st.sampled_from(["ls -a", "", "\n  x = 1\n", "a < b", "```"])), max_size=3))
            block = f"<function={name}>\n" + "".join(
                f"<parameter={key}>{value}</parameter>\n" for key, value in parameters)
            block += "</function>"
            whole = draw(st.booleans())
            parts.append(block if whole else block[: draw(st.integers(0, len(block)))])
        else:
            parts.append(draw(FUNCTION_CALL_PIECES))
    return "".join(parts)
# ------------------------------------------------------- hostile Python values (issue #12)


class Token:
    """A custom object: compared by its type and repr."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Token({self.name!r})"


class BadRepr:
    """An object whose ``repr`` raises."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class StrSub(str):
    """A ``str`` subclass with a lying ``__str__``: compared by content."""

    def __str__(self) -> str:
        return "lie"


class DictSub(dict[str, Any]):
    """A ``dict`` subclass."""


class ListSub(list[Any]):
    """A ``list`` subclass."""


def _self_referencing() -> dict[str, Any]:
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    return loop


_NUMPY_SCALARS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.integers(0, 2**64 - 1).map(np.uint64),
    st.integers(-128, 127).map(np.int8),
    st.floats(width=32).map(np.float32),
    st.floats().map(np.float64),
    st.floats(width=16).map(np.float16),
    st.booleans().map(np.bool_),
)
_DECIMALS = st.one_of(
    st.decimals(allow_nan=True, allow_infinity=True, places=None),
    st.sampled_from([decimal.Decimal("sNaN"), decimal.Decimal("1E+400"), decimal.Decimal("-0"),
                     decimal.Decimal("1.0"), decimal.Decimal(2**60 + 1)]),
)
_DATES = st.one_of(
    st.datetimes(timezones=st.none() | st.timezones()),
    st.dates(),
    st.datetimes(min_value=datetime.datetime(1, 1, 1), max_value=datetime.datetime(1, 1, 2))
    .map(lambda d: d.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=23)))),
    st.datetimes(min_value=datetime.datetime(9999, 12, 31))
    .map(lambda d: d.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=-23)))),
)
HOSTILE_LEAVES = st.one_of(
    JSON_LEAVES,
    _NUMPY_SCALARS,
    _DECIMALS,
    _DATES,
    st.fractions(max_denominator=10),
    st.binary(max_size=3),
    st.binary(max_size=3).map(bytearray),
    st.sets(st.sampled_from([1, 1.0, "a", None, (1, 2), b"x"]), max_size=3),
    st.frozensets(st.integers(0, 3), max_size=3),
    st.complex_numbers(max_magnitude=3),
    st.builds(BadRepr),  # built, not sampled: Hypothesis reprs the values it samples from
    st.sampled_from([Token("a"), Token("b"), object, int, len, ...,
                     np.array([1, 2]), np.array([[1.5], [2.0]]), np.array(["x"]),
                     np.array([None], dtype=object), np.array([1 + 2j]), range(3),
                     2**1100, -(2**1100), float("inf"), float("nan")]),
    st.text(max_size=3).map(StrSub),
)
HOSTILE_VALUES = st.recursive(
    HOSTILE_LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.lists(inner, max_size=3).map(ListSub),
        st.dictionaries(st.sampled_from(["a", "0", "1", "10"]), inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=3).map(DictSub),
        st.dictionaries(st.sampled_from([1, 2.5, None, True, (1, 2), np.int64(3), b"k",
                                         10**5000, -(2**70), "1" * 5000]),
                        inner, max_size=2),
        st.builds(_self_referencing),
    ),
    max_leaves=8,
)
"""Values no JSON parser makes: NumPy scalars and arrays, ``Decimal``, dates, bytes, sets,
custom objects, huge integers, subclasses of the JSON types, cycles."""


@st.composite
def anywhere_threads(draw: st.DrawFn, max_size: int = 40) -> list[dict[str, Any]]:
    """A thread with repeated blocks anywhere in it, not only at its end: random messages
    around one or two blocks repeated 1-4 times, some a "think" call or a user reply."""
    think = {"type": "activity", "text": "", "meta": {"activity": {
        "type": "request", "function": {"name": "think", "arguments": {"t": draw(TEXTS)}}}}}
    reply = {"type": "user", "text": draw(st.sampled_from(["Format error.", "again"]))}
    # Replies equal but for a number, a call failing the same way or moving on, and a
    # call of the same tool with other arguments: the stuff of the number-blind reply
    # rule and of the failing-retry rule.
    numbered = st.builds(lambda n: {"type": "user", "text": f"found {n} actions"},
                         st.integers(0, 12))
    tool = {"type": "activity", "text": "", "meta": {"activity": {"type": "response",
            "function": {"name": "book", "arguments": {"seat": 1}, "result": "Error: full"}}}}
    outcomes = st.builds(
        lambda seat, result: {"type": "activity", "text": "", "meta": {"activity": {
            "type": "response", "function": {"name": "book", "arguments": {"seat": seat},
                                             "result": result}}}},
        st.sampled_from([1, 2]), st.sampled_from(["Error: full", "booked", "error"]))
    pool = draw(st.lists(st.one_of(MESSAGES, st.just(think), st.just(reply), numbered,
                                   st.just(tool), outcomes), min_size=1, max_size=6))
    pick = st.sampled_from(pool)
    thread: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        thread += draw(st.lists(st.one_of(pick, MESSAGES), max_size=8))
        block = draw(st.lists(pick, min_size=1, max_size=5))
        thread += block * draw(st.integers(1, 4))
    thread = thread[:max_size]
    if draw(st.booleans()):
        thread = [_copy(m) for m in thread]
    return thread


@st.composite
def long_block_threads(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A thread holding a block longer than ``vthread.anywhere.MAX_PERIOD`` repeated: a few
    random messages, then a block of 25-34 messages drawn from a small pool (so the block
    repeats within itself too) repeated 1-3 times, then maybe part of a copy, a message of
    its own, a few more messages (the block left in the middle) or a second such block,
    each message an equal copy or the same object."""
    pool = draw(st.lists(MESSAGES, min_size=1, max_size=8))
    pick = st.sampled_from(pool)
    thread = draw(st.lists(st.one_of(pick, MESSAGES), max_size=6))
    for _ in range(draw(st.integers(1, 2))):
        block = draw(st.lists(st.one_of(pick, pick, MESSAGES), min_size=25, max_size=34))
        thread += block * draw(st.integers(1, 3))
        ending = draw(st.sampled_from(["whole", "part", "other", "more"]))
        if ending == "part":
            thread += block[: draw(st.integers(1, len(block) - 1))]
        elif ending == "other":
            thread.append(draw(MESSAGES))
        elif ending == "more":
            thread += draw(st.lists(st.one_of(pick, MESSAGES), min_size=1, max_size=6))
    if draw(st.booleans()):
        thread = [_copy(m) for m in thread]
    return thread


# ------------------------------------------------------------- OpenAI and Anthropic runs

# Tool-result and argument texts: JSON text of every kind json.loads reads (and some only it
# reads: NaN, a lone surrogate, a long integer, a repeated or escaped key, deep nesting),
# text that only looks like JSON, and plain text.
TOOL_TEXTS = st.one_of(
    TEXTS,
    st.sampled_from([
        "[]", "{}", "[1, 2]", '{"a": 1}', '{"a":1.0}', " 7 ", '"x"', "null", "true", "-0",
        '{"b":1,"0":2}', "NaN", "1e400", "[1,]", "\ufeff[]", "\ufeff1", "", " ", "1 2",
        '{"a":1,"a":2}', '{"\\u0061":1}', "12345678901234567890", '["\\ud800"]', '"\\u00e9"',
        "[" * 200 + "]" * 200, "[" * 1100 + "]" * 1100, "[" * 20 + "]" * 20, "\x00[]",
        '{"a":\n[1,\t2]}', "1" * 5000, "Error: file not found", '{"a": "\\u0000"}',
    ]),
    JSON_VALUES.map(lambda v: json.dumps(v, allow_nan=True)),
)
CALL_IDS = st.sampled_from(["c1", "c2", "c\u00e9", None, _ABSENT, _ABSENT, 1, 1.0, True,
                            [1], {"a": 1}])
ROLE_NAMES = st.sampled_from(["system", "developer", "user", "assistant", "assistant",
                              "tool", "tool", "function", "critic", "\u00e9", ""])
TOOL_NAMES = st.sampled_from(["ls", "read", "ls", "\u00e9", "", 1, None])
# An image, audio, a file and a refusal as OpenAI chat writes them: no text, each a distinct
# value the core reads as json.loads does.
MEDIA_EXAMPLES: list[dict[str, Any]] = [
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    {"type": "image_url", "image_url": {"url": "https://a.example/b.png", "detail": "low"}},
    {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
    {"type": "file", "file": {"file_id": "file-1", "filename": "\u00e9.pdf"}},
    {"type": "refusal", "refusal": "no"},
]
# Parts that are no text (images, audio, files, documents, refusals, a type the adapters have
# no name for), which the adapters carry as given: their values of every kind and key order.
MEDIA_PARTS = st.one_of(
    st.sampled_from([
        *MEDIA_EXAMPLES,
        {"type": "input_image", "image_url": "https://a.example/c.png"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "AAAA"}},
        {"type": "document", "source": {"type": "text", "data": "\ud83c\udf89"}},
        {"type": "\u00e9"}, {"type": ""},
    ]),
    st.builds(lambda kind, value: {"type": kind, "image_url": value},
              st.sampled_from(["image_url", "image"]), JSON_VALUES),
    st.builds(lambda value, kind: {"data": value, "type": kind}, JSON_VALUES,
              st.sampled_from(["file", "input_file"])),
)
PARTS = st.one_of(
    TEXTS, TOOL_TEXTS,
    st.builds(lambda t: {"type": "text", "text": t}, TEXTS),
    st.builds(lambda t: {"text": t}, TOOL_TEXTS),
    st.sampled_from([{"type": "image_url", "image_url": {"url": "x"}}, {"type": None},
                     {"type": "input_text", "text": "in"}, {"type": "output_text", "text": "o"},
                     {"type": "text", "text": 3}, {"type": ["text"]}, {"type": {}}, 7, None,
                     [1]]),
    MEDIA_PARTS, MEDIA_PARTS,
)
CONTENTS = st.one_of(
    st.just(_ABSENT), st.none(), TEXTS, TOOL_TEXTS, st.lists(PARTS, max_size=3),
    st.sampled_from([{"type": "text", "text": "one"}, 3, True, 1.5]),
    MEDIA_PARTS,  # a content object that is a part of its own
)
USAGE_FIGURES = st.sampled_from([0, 7, 2.5, -1, "3", None, True, 2**60])


def _put(message: dict[str, Any], key: str, value: Any) -> None:
    if value is not _ABSENT:
        message[key] = value


@st.composite
def usages(draw: st.DrawFn) -> dict[str, Any]:
    """Where a recorded message may keep its usage: its own, its response's or extra's."""
    usage = {key: draw(USAGE_FIGURES) for key in draw(st.lists(st.sampled_from(
        ["tokens", "completion_tokens", "output_tokens", "prompt_tokens", "input_tokens"]),
        max_size=3, unique=True))}
    holder = draw(st.sampled_from(["usage", "usage", "response", "extra", "extra.response",
                                   "null"]))
    if holder == "usage":
        return {"usage": usage}
    if holder == "null":
        return {"usage": None, "response": {"usage": usage}}
    if holder == "extra.response":
        return {"extra": {"response": {"usage": usage}}}
    return {holder: {"usage": usage}}


@st.composite
def openai_messages(draw: st.DrawFn) -> Any:
    """An OpenAI chat message, often with tool calls or a tool result, sometimes odd."""
    if draw(st.integers(0, 40)) == 0:
        return draw(st.sampled_from([7, None, "x", [], {"content": "no role"}, {"role": 1}]))
    role = draw(ROLE_NAMES)
    message: dict[str, Any] = {"role": role}
    _put(message, "content", draw(CONTENTS))
    if role == "assistant":
        for key in ("reasoning_content", "reasoning", "refusal"):
            if draw(st.integers(0, 3)) == 0:
                message[key] = draw(st.one_of(TEXTS, st.sampled_from([None, 3])))
        if draw(st.integers(0, 2)):
            calls = []
            for _ in range(draw(st.integers(0, 3))):
                function: dict[str, Any] = {"name": draw(TOOL_NAMES)}
                _put(function, "arguments", draw(st.one_of(
                    st.just(_ABSENT), TOOL_TEXTS, ARGUMENTS)))
                call: dict[str, Any] = {"type": "function", "function": function}
                if draw(st.integers(0, 5)) == 0:
                    # A custom (free-form) tool's call: its input, any value, as is.
                    custom: dict[str, Any] = {"name": draw(st.one_of(TOOL_NAMES, st.just(3)))}
                    _put(custom, "input", draw(st.one_of(st.just(_ABSENT), TOOL_TEXTS,
                                                         ARGUMENTS)))
                    call = {"type": "custom", "custom": custom}
                _put(call, "id", draw(CALL_IDS))
                calls.append(call if draw(st.integers(0, 30)) else draw(st.sampled_from(
                    [3, {"id": "c1"}, {"function": None}, {"custom": {"input": "x"}},
                     {"function": None, "custom": {"name": "f"}}])))
            message["tool_calls"] = calls if draw(st.integers(0, 30)) else draw(
                st.sampled_from([None, {}, "x"]))
        if draw(st.integers(0, 5)) == 0:
            function = {"name": draw(TOOL_NAMES)}
            _put(function, "arguments", draw(st.one_of(st.just(_ABSENT), TOOL_TEXTS)))
            message["function_call"] = function
    elif role in ("tool", "function"):
        _put(message, "tool_call_id", draw(CALL_IDS))
        if draw(st.integers(0, 3)) == 0:
            message["tool_call_ids"] = draw(st.one_of(st.lists(CALL_IDS.filter(
                lambda i: i is not _ABSENT), max_size=3), st.just("c1")))
        if draw(st.booleans()):
            message["name"] = draw(TOOL_NAMES)
    if draw(st.integers(0, 3)) == 0:
        message.update(draw(usages()))
    return message


LANGCHAIN_KINDS = st.sampled_from(["human", "ai", "ai", "tool", "tool", "system", "function",
                                   "AIMessageChunk", "ToolMessageChunk", "chat", "remove",
                                   "critic", 3])
LANGCHAIN_BLOCKS = st.one_of(PARTS, st.sampled_from([
    {"type": "reasoning", "reasoning": "think"}, {"type": "thinking", "thinking": "hm"},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}]},
    {"type": "redacted_thinking", "data": "x"}, {"type": "reasoning", "reasoning": 3},
    {"type": "tool_use", "id": "c1", "name": "ls", "input": {}},
    {"type": "tool_call", "id": "c1", "name": "ls", "args": {}}]))


@st.composite
def langchain_messages(draw: st.DrawFn, forms: bool = True) -> Any:
    """A LangChain message in one of its dict forms (its fields; ``{"type", "data"}``;
    ``dumpd``'s ``constructor``; only the first without ``forms``), often with tool calls or
    a tool result, sometimes odd."""
    if draw(st.integers(0, 40)) == 0:
        return draw(st.sampled_from([7, None, "x", [], {"content": "no type"}, {"type": 1}]))
    kind = draw(LANGCHAIN_KINDS)
    message: dict[str, Any] = {"type": kind}
    _put(message, "content", draw(st.one_of(CONTENTS, st.lists(LANGCHAIN_BLOCKS, max_size=3))))
    if kind == "chat":
        message["role"] = draw(ROLE_NAMES)
    if kind in ("ai", "AIMessageChunk"):
        for key in ("tool_calls", "invalid_tool_calls"):
            if draw(st.integers(0, 2)):
                calls = []
                for _ in range(draw(st.integers(0, 3))):
                    call: dict[str, Any] = {"name": draw(TOOL_NAMES), "type": "tool_call"}
                    _put(call, "args", draw(st.one_of(st.just(_ABSENT), TOOL_TEXTS,
                                                      ARGUMENTS)))
                    _put(call, "id", draw(CALL_IDS))
                    calls.append(call if draw(st.integers(0, 30)) else draw(st.sampled_from(
                        [3, {"id": "c1"}, {"name": None}])))
                message[key] = calls if draw(st.integers(0, 30)) else draw(
                    st.sampled_from([None, {}, "x"]))
        if draw(st.integers(0, 4)) == 0:
            message["additional_kwargs"] = draw(st.sampled_from([
                {"reasoning_content": "why"}, {"reasoning_content": 3}, {},
                {"function_call": {"name": "ls", "arguments": '{"a": 1}'}},
                {"tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "ls", "arguments": '{"a": 1}'}}]}]))
        if draw(st.integers(0, 2)) == 0:
            message[draw(st.sampled_from(["usage_metadata", "response_metadata"]))] = draw(
                st.sampled_from([{"output_tokens": 7, "input_tokens": 90},
                                 {"token_usage": {"completion_tokens": 4}},
                                 {"usage": {"output_tokens": 2}}, {"output_tokens": "3"},
                                 None]))
    elif kind in ("tool", "function"):
        _put(message, "tool_call_id", draw(CALL_IDS))
        if draw(st.booleans()):
            message["name"] = draw(TOOL_NAMES)
        if draw(st.integers(0, 2)) == 0:
            message["status"] = draw(st.sampled_from(["error", "success", None]))
    form = draw(st.integers(0, 5)) if forms else 5
    if form == 0 and isinstance(kind, str):
        return {"type": kind, "data": message}
    if form == 1:
        name = {"human": "HumanMessage", "ai": "AIMessage", "tool": "ToolMessage"}.get(
            kind if isinstance(kind, str) else "", "SystemMessage")
        if draw(st.booleans()):
            del message["type"]
        return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",
                                                       name], "kwargs": message}
    return message


# Assistant texts around mini-swe-agent's fenced bash blocks: one block, none, two, a fence
# opened by Python's other whitespace (re's \\s), unterminated, or closed only by the last
# fence; and the environment's outputs.
BASH_TEXTS = st.lists(st.sampled_from([
    "Look first.\n", "```bash\nls -la\n```", "```bash \n\ncat a.py\n```", "```bash\n```",
    "```bash\u00a0\u2003\ncd src && pytest -q\n```", "```bash\x1c\n\n```", "```bashls\n```",
    "```bash\nunterminated", "\n```", "```python\nprint(1)\n```", "THOUGHT: fix it.\n",
    "\n", "```bash\n\n\n```", "\u00e9\u2028", "```bash\r\n echo hi\n```\n",
]), max_size=5).map("".join)


@st.composite
def mini_swe_agent_messages(draw: st.DrawFn) -> Any:
    """A mini-swe-agent message: an assistant turn with its command in a fenced block, the
    environment's output as a user turn, or any OpenAI chat message."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        message: dict[str, Any] = {"role": "assistant", "content": draw(BASH_TEXTS)}
        if draw(st.integers(0, 3)) == 0:
            message["extra"] = draw(st.sampled_from([
                {"response": {"usage": {"completion_tokens": 5}}}, {"usage": {"tokens": 2}},
                {"usage": None}, "x"]))
        return message
    if kind == 1:
        return {"role": "user", "content": draw(st.one_of(
            BASH_TEXTS, TEXTS, st.just([{"type": "text", "text": "out"}]),
            st.lists(st.one_of(st.just({"type": "text", "text": "out"}), MEDIA_PARTS),
                     max_size=3),
            st.builds("<returncode>{}</returncode>\n<output>{}</output>".format,
                      st.integers(0, 2), TEXTS),
            st.builds("{}<returncode>".format, TEXTS)))}
    return draw(openai_messages())


@st.composite
def swe_agent_messages(draw: st.DrawFn) -> Any:
    """A SWE-agent ``history`` message: an assistant turn whose text holds ``<function=...>``
    calls (whole, cut or garbled) and maybe an ``action``, the environment's output as a user
    turn, or any OpenAI chat message."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        message: dict[str, Any] = {"role": "assistant", "content": draw(st.one_of(
            function_call_texts(), st.just([{"type": "text", "text": "<function=bash>\n"
                                              "<parameter=command>ls</parameter>\n"
                                              "</function>"}])))}
        if draw(st.booleans()):
            message["action"] = draw(st.sampled_from(["ls -a\n", "  ", "", None, 3,
                                                      "submit", "\u2003"]))
        if draw(st.integers(0, 3)) == 0:
            message["message_type"] = "action"
        return message
    if kind == 1:
        return {"role": "user", "content": draw(st.one_of(TEXTS, BASH_TEXTS)),
                "message_type": "observation"}
    return draw(openai_messages())


REASONING_PARTS = st.one_of(
    st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("summary_text"), "text": TEXTS}),
                       st.sampled_from([{"text": 3}, "plain", None, {"type": "x"}])),
             max_size=3),
    st.sampled_from([None, "text", {}]))


@st.composite
def responses_items(draw: st.DrawFn) -> Any:
    """An OpenAI Responses API item: a message, reasoning, a call or its output, an unknown
    item, sometimes odd (no type, a null or numeric type, no name, a numeric call id)."""
    kind = draw(st.sampled_from(["message", "message", "role_only", "reasoning",
                                 "function_call", "function_call", "custom_tool_call",
                                 "function_call_output", "function_call_output",
                                 "custom_tool_call_output", "web_search_call", "built_in",
                                 "built_in", "odd"]))
    if kind == "odd":
        return draw(st.sampled_from([7, None, "x", [], {}, {"type": None}, {"type": 3},
                                     {"type": None, "role": "user", "content": "hi"},
                                     {"type": "function_call"}, {"role": 1}]))
    if kind == "built_in":
        return draw(built_in_tool_items())
    item: dict[str, Any] = {} if kind == "role_only" else {"type": kind}
    if kind in ("message", "role_only"):
        item["role"] = draw(ROLE_NAMES)
        _put(item, "content", draw(CONTENTS))
    elif kind == "reasoning":
        for key in ("summary", "content"):
            if draw(st.booleans()):
                item[key] = draw(REASONING_PARTS)
    elif kind in ("function_call", "custom_tool_call"):
        item["name"] = draw(TOOL_NAMES)
        _put(item, "arguments", draw(st.one_of(st.just(_ABSENT), TOOL_TEXTS, ARGUMENTS)))
        if kind == "custom_tool_call":
            _put(item, "input", draw(st.one_of(st.just(_ABSENT), TOOL_TEXTS, ARGUMENTS)))
        _put(item, "call_id", draw(CALL_IDS))
    elif kind.endswith("_output"):
        _put(item, "call_id", draw(CALL_IDS))
        _put(item, "output", draw(st.one_of(CONTENTS, TOOL_TEXTS)))
        if draw(st.booleans()):
            item["name"] = draw(TOOL_NAMES)
    if draw(st.integers(0, 3)) == 0:
        item.update(draw(usages()))
    return item


BUILT_IN_TOOL_ITEMS: Final = (
    "computer_call", "computer_call_output", "local_shell_call", "local_shell_call_output",
    "shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output",
    "tool_search_call", "tool_search_output", "mcp_call", "web_search_call",
    "file_search_call", "code_interpreter_call", "image_generation_call")


@st.composite
def built_in_tool_items(draw: st.DrawFn) -> Any:
    """A Responses item of a built-in tool: a call (a computer's action, a shell's command)
    or its output (a screenshot, a command's output), with the ids, status and safety checks
    that differ on every item, an output finding its call by ``call_id`` or (a local
    shell's) by ``id``, sometimes by neither."""
    kind = draw(st.sampled_from(BUILT_IN_TOOL_ITEMS))
    item: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        _put(item, "id", draw(st.one_of(CALL_IDS, st.sampled_from(["cu_1", "ls_2"]))))
    _put(item, "call_id", draw(st.one_of(st.just(_ABSENT), CALL_IDS)))
    if draw(st.booleans()):
        item["status"] = draw(st.sampled_from(["completed", "in_progress", None]))
    fields = ["action", "output", "arguments", "query", "results", "approval_request_id",
              "pending_safety_checks", "acknowledged_safety_checks", "server_label"]
    for key in draw(st.lists(st.sampled_from(fields), unique=True, max_size=4)):
        _put(item, key, draw(st.one_of(ARGUMENTS, CONTENTS, TOOL_TEXTS)))
    return item


@st.composite
def anthropic_blocks(draw: st.DrawFn) -> Any:
    """An Anthropic content block of any kind, sometimes odd."""
    kind = draw(st.sampled_from(["text", "text", "thinking", "redacted_thinking", "tool_use",
                                 "tool_use", "tool_result", "tool_result", "image", "document",
                                 "server_tool", "server_result", "odd"]))
    if kind == "odd":
        return draw(st.sampled_from(["plain", 3, None, [1], {"text": "no type"},
                                     {"type": None}, {"type": ["text"]}, {"type": 3}]))
    if kind == "server_tool":  # a server tool's call, or an MCP server's: as tool_use
        kind = draw(st.sampled_from(["server_tool_use", "mcp_tool_use"]))
    elif kind == "server_result":
        kind = draw(st.sampled_from(["web_search_tool_result", "mcp_tool_result",
                                     "code_execution_tool_result", "web_fetch_tool_result"]))
    block: dict[str, Any] = {"type": kind}
    if kind == "text":
        _put(block, "text", draw(st.one_of(TEXTS, st.sampled_from([_ABSENT, None, 3]))))
    elif kind == "thinking":
        _put(block, "thinking", draw(st.one_of(TEXTS, st.sampled_from([_ABSENT, None]))))
        block["signature"] = "sig"
    elif kind == "redacted_thinking":
        block["data"] = "opaque"
    elif kind.endswith("tool_use"):
        _put(block, "id", draw(CALL_IDS))
        _put(block, "name", draw(TOOL_NAMES))
        _put(block, "input", draw(st.one_of(st.just(_ABSENT), ARGUMENTS, JSON_VALUES)))
    elif kind.endswith("tool_result"):
        _put(block, "tool_use_id", draw(CALL_IDS))
        _put(block, "content", draw(st.one_of(CONTENTS, st.lists(st.one_of(
            st.builds(lambda t: {"type": "text", "text": t}, TEXTS), MEDIA_PARTS,
            st.builds(lambda url: {"type": "web_search_result", "url": url}, TEXTS)),
            min_size=1, max_size=3))))
        _put(block, "is_error", draw(st.sampled_from([_ABSENT, True, False, 1, None])))
        if draw(st.integers(0, 4)) == 0:
            block["name"] = draw(TOOL_NAMES)
    else:
        block["source"] = draw(st.one_of(
            st.sampled_from([{"type": "base64", "media_type": "image/png", "data": "AAAA"},
                             {"type": "base64", "data": "BBBB"}, {"type": "url", "url": "x"}]),
            JSON_VALUES))
        if draw(st.booleans()):
            block["cache_control"] = {"type": "ephemeral"}
    return block


@st.composite
def anthropic_messages(draw: st.DrawFn) -> Any:
    """An Anthropic message: a string, null or a list of blocks, sometimes odd."""
    if draw(st.integers(0, 40)) == 0:
        return draw(st.sampled_from([7, None, [], {"content": "no role"}, {"role": None}]))
    message: dict[str, Any] = {"role": draw(st.sampled_from(
        ["user", "assistant", "assistant", "system", "critic"]))}
    _put(message, "content", draw(st.one_of(
        st.lists(anthropic_blocks(), max_size=4), st.lists(anthropic_blocks(), max_size=4),
        st.just(_ABSENT), st.none(), TEXTS, st.sampled_from([{}, 3, {"type": "text"}]))))
    if draw(st.integers(0, 3)) == 0:
        message.update(draw(usages()))
    if draw(st.integers(0, 5)) == 0:
        # As the SDK's Message.model_dump() writes an assistant turn (a Responses item's
        # "type" too).
        message.update({"id": "msg_1", "type": "message", "model": "claude"})
    return message


RUN_IDS = st.one_of(st.sampled_from([_ABSENT, None, "r1", "r\u00e9", 3, True, 1.5, [1],
                                     2**60]), st.text(max_size=3))


@st.composite
def runs(draw: st.DrawFn, messages: st.SearchStrategy[Any]) -> Any:
    """A run as a JSONL line holds it: a list of messages, or an object keeping them (and
    maybe its id) under one of the keys harnesses use."""
    listed = draw(st.lists(messages, max_size=10))
    if draw(st.integers(0, 12)) == 0:
        # Copies of a few messages: the repeated runs the scan is after.
        listed = listed[:3] * draw(st.integers(2, 5))
    shape = draw(st.sampled_from(["list", "messages", "messages", "traj", "history",
                                  "other"]))
    if shape == "list":
        return listed
    run: dict[str, Any] = {}
    id_shape = draw(st.sampled_from(["id", "instance_id", "task", "task+trial", "none"]))
    if id_shape in ("id", "instance_id"):
        _put(run, id_shape, draw(RUN_IDS))
    elif id_shape.startswith("task"):
        _put(run, "task_id", draw(RUN_IDS))
        if id_shape == "task+trial":
            _put(run, "trial", draw(RUN_IDS))
    if shape == "other":
        run["steps"] = listed
    else:
        run[shape] = listed if draw(st.integers(0, 20)) else draw(st.sampled_from(
            [{}, "x", None]))
    return run


# ------------------------------------------------------------ runs holding media, well formed

# Media the core reads as json.loads does (no NaN, no lone surrogate): each a distinct value.
PLAIN_MEDIA = st.one_of(
    st.sampled_from(MEDIA_EXAMPLES),
    st.builds(lambda data, scale: {"type": "image_url",
                                   "image_url": {"url": f"data:{data}", "b": 1, "0": scale}},
              st.sampled_from(["A", "B", "\U0001f389"]), st.sampled_from([1, 1.0, 2.5, -0.0])),
)
PLAIN_TEXTS = st.sampled_from(["", "a", "Look.", "\u00e9", "\U0001f389", '{"a": 1}', "[1, 2]",
                               "Done.\nDone."])
ANTHROPIC_MEDIA = st.builds(
    lambda kind, data: {"type": kind, "source": {"type": "base64", "data": data}},
    st.sampled_from(["image", "document"]), st.sampled_from(["AAAA", "BBBB", "\u00e9"]))


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _beside(draw: st.DrawFn, media: st.SearchStrategy[Any], text: st.SearchStrategy[Any]) -> Any:
    """Content of texts and media in any order, sometimes a media object alone."""
    if draw(st.integers(0, 5)) == 0:
        return draw(media)
    return draw(st.lists(st.one_of(text, media, media), max_size=4))


@st.composite
def media_chats(draw: st.DrawFn, format_: str) -> list[dict[str, Any]]:
    """A run in ``format_`` (OpenAI chat, Anthropic, Responses, mini-swe-agent) whose messages
    hold images, audio, files and documents beside their texts, calls and results, every
    value one the core reads as Python does: the core must take it."""
    texts = st.builds(_text_part, PLAIN_TEXTS)
    out: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(1, 6))):
        call = f"c{turn % 2}"
        usage = {"usage": {"completion_tokens": turn}} if draw(st.booleans()) else {}
        if format_ == "anthropic":
            out.append({"role": "assistant", "content": [
                *draw(st.lists(st.one_of(texts, ANTHROPIC_MEDIA), max_size=2)),
                {"type": "tool_use", "id": call, "name": "screenshot", "input": {"n": turn}}],
                **usage})
            result = draw(st.one_of(PLAIN_TEXTS, st.lists(st.one_of(texts, ANTHROPIC_MEDIA),
                                                          max_size=3)))
            out.append({"role": "user", "content": draw(st.permutations([
                {"type": "tool_result", "tool_use_id": call, "content": result,
                 **({"is_error": True} if draw(st.booleans()) else {})},
                *draw(st.lists(st.one_of(texts, ANTHROPIC_MEDIA), max_size=2))]))})
        elif format_ == "responses":
            out.append({"type": "message", "role": draw(st.sampled_from(["user", "assistant"])),
                        "content": _beside(draw, PLAIN_MEDIA, st.builds(
                            lambda t: {"type": "input_text", "text": t}, PLAIN_TEXTS)), **usage})
            out.append({"type": "function_call", "call_id": call, "name": "look",
                        "arguments": '{"n": 1}'})
            out.append({"type": "function_call_output", "call_id": call,
                        "output": _beside(draw, PLAIN_MEDIA, texts)})
        elif format_ == "mini-swe-agent":
            out.append({"role": "assistant", "content": draw(st.sampled_from(
                ["Look.\n```bash\nls\n```", "Thinking."])), **usage})
            out.append({"role": "user", "content": _beside(draw, PLAIN_MEDIA, texts)})
        else:
            out.append({"role": draw(st.sampled_from(["user", "system", "critic"])),
                        "content": _beside(draw, PLAIN_MEDIA, texts)})
            calls = [{"id": f"{call}{i}", "type": "function",
                      "function": {"name": "look", "arguments": '{"n": 1}'}}
                     for i in range(draw(st.integers(0, 2)))]
            out.append({"role": "assistant", "content": draw(st.one_of(
                st.none(), PLAIN_TEXTS, st.just(_beside(draw, PLAIN_MEDIA, texts)))),
                **({"tool_calls": calls} if calls else {}), **usage})
            for made in calls:
                out.append({"role": "tool", "tool_call_id": made["id"], "content": draw(
                    st.one_of(PLAIN_TEXTS, st.just(_beside(draw, PLAIN_MEDIA, texts))))})
    return out
