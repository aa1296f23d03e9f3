"""Write ``src/unicode_tables.rs``: the tables behind the core's word normal form.

The guard's normal form of a word is ``vthread.guard.normalize``: the word lower-cased by
``str.lower``, then only the characters whose general category is a letter or a number
kept. The core must give that string for every input, so its tables are read from the
interpreter the package runs on, not from another Unicode library:

- ``LETTER_OR_NUMBER``: the code points whose ``unicodedata.category`` is ``L*`` or ``N*``.
- ``LOWER`` and ``LOWER_EXPANDED``: ``chr(c).lower()`` for every code point it changes (one
  code point, or several).
- ``DECIMAL``: the code points Python's ``re`` takes for ``\\d`` in a ``str`` pattern
  (``str.isdecimal``), for ``vthread.volatile``'s masking pattern, which the core runs too.
  Its ``\\w`` (``str.isalnum``, and ``_``) is ``LETTER_OR_NUMBER``: checked, not tabled twice.
- ``NOT_PRINTABLE``: the non-ASCII code points ``str.isprintable`` refuses, which ``repr``
  of a ``str`` escapes (a loop's signature hashes the ``repr`` of what repeats), and
  ``UNASSIGNED`` (category ``Cn``): a later Unicode may assign and print them, so the core
  leaves a name holding one to the running interpreter's ``repr``.
- ``CASED`` and ``CASE_IGNORABLE``: the two properties of CPython's Final_Sigma rule
  (``handle_capital_sigma`` in ``Objects/unicodeobject.c``), which lower-cases U+03A3 to
  U+03C2 after a cased character (case-ignorable ones skipped) unless a cased character
  follows (case-ignorable ones skipped). ``unicodedata`` does not expose either property,
  so they are read off ``str.lower`` itself and the reading is checked by further probes.

Run from the repository root; ``--check`` compares instead of writing (exit status 1 on a
difference), which is what the test suite does, so a Python with newer Unicode data fails
the tests until the tables are regenerated.

    python tools/unicode_tables.py [--check]
"""

from __future__ import annotations

import argparse
import random
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Final

#: The generated file, relative to the repository root.
OUTPUT: Final = Path("src/unicode_tables.rs")
#: The command written into the generated file's header.
COMMAND: Final = "python tools/unicode_tables.py"
#: One past the last code point.
CODE_POINTS: Final = 0x11_0000

_SIGMA: Final = "\u03a3"
_FINAL: Final = "\u03c2"
_MEDIAL: Final = "\u03c3"
#: ``str.isspace``'s code points, as ``src/adapters.rs`` (``is_python_space``) lists them.
PYTHON_SPACES: Final = [*range(0x09, 0x0E), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680,
                        *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
#: Longest line of a table in the generated file.
_WIDTH: Final = 100

Ranges = list[tuple[int, int]]
#: (first, last, step, delta): every ``step``-th code point from ``first`` to ``last``
#: lower-cases to itself plus ``delta``.
Lowering = tuple[int, int, int, int]


def ranges_where(test: Callable[[int], bool]) -> Ranges:
    """The code points for which ``test`` holds, as sorted, disjoint, non-adjacent ranges."""
    out: Ranges = []
    for c in range(CODE_POINTS):
        if test(c):
            if out and out[-1][1] == c - 1:
                out[-1] = (out[-1][0], c)
            else:
                out.append((c, c))
    return out


def is_letter_or_number(c: int) -> bool:
    """Whether the general category of ``c`` is a letter or a number (``L*``, ``N*``)."""
    return unicodedata.category(chr(c))[0] in "LN"


def is_word(c: int) -> bool:
    """Whether ``re``'s ``\\w`` matches ``c`` (besides ``_``): ``str.isalnum``, which is what
    ``_sre``'s ``SRE_UNI_IS_ALNUM`` asks."""
    return chr(c).isalnum()


def is_decimal(c: int) -> bool:
    """Whether ``re``'s ``\\d`` matches ``c``: ``str.isdecimal`` (``Py_UNICODE_ISDECIMAL``)."""
    return chr(c).isdecimal()


def is_not_printable(c: int) -> bool:
    """Whether ``repr`` escapes non-ASCII ``c``: ``str.isprintable`` (``Py_UNICODE_ISPRINTABLE``)
    is false for it. ASCII is left out: ``repr`` treats it by its own rules."""
    return c >= 0x80 and not chr(c).isprintable()


def is_unassigned(c: int) -> bool:
    """Whether ``c`` is unassigned (general category ``Cn``) in this interpreter's Unicode."""
    return unicodedata.category(chr(c)) == "Cn"


def is_cased(c: int) -> bool:
    """Cased and not case-ignorable: after it (nothing else before), Σ is final."""
    return (chr(c) + _SIGMA).lower()[-1] == _FINAL


def is_case_ignorable(c: int) -> bool:
    """Case-ignorable: skipped on the way back from Σ to a cased character.

    Between a cased character and Σ, a character leaves Σ final exactly when it is skipped
    or is itself cased and not skipped; the latter is :func:`is_cased`.
    """
    return ("A" + chr(c) + _SIGMA).lower()[-1] == _FINAL and not is_cased(c)


def lowerings() -> tuple[list[Lowering], list[tuple[int, str]]]:
    """``chr(c).lower()`` wherever it differs from ``chr(c)``: single code points as ranges
    of a common step and delta, expansions to several code points one by one."""
    single: list[Lowering] = []
    expanded: list[tuple[int, str]] = []
    for c in range(CODE_POINTS):
        lower = chr(c).lower()
        if lower == chr(c):
            continue
        if len(lower) > 1:
            expanded.append((c, lower))
            continue
        delta = ord(lower) - c
        if single:
            first, last, step, previous = single[-1]
            gap = c - last
            if previous == delta and (gap == step or (first == last and gap in (1, 2))):
                single[-1] = (first, c, gap, delta)
                continue
        single.append((c, c, 1, delta))
    return single, expanded


def _chunks(text: str, size: int) -> Iterable[str]:
    return (text[i : i + size] for i in range(0, len(text), size))


def verify(cased: Ranges, ignorable: Ranges, single: list[Lowering],
           expanded: list[tuple[int, str]]) -> None:
    """Check the tables against ``str.lower`` beyond the probes that made them.

    Raises :class:`TableError` where the model of CPython's lower-casing they encode (per
    code point, except Σ by its two properties) predicts another string than ``str.lower``.
    """
    cased_set = {c for first, last in cased for c in range(first, last + 1)}
    ignorable_set = {c for first, last in ignorable for c in range(first, last + 1)}
    _require(not cased_set & ignorable_set, "a code point is both cased and case-ignorable")
    _require(ord(_SIGMA) in cased_set and 0x0345 in ignorable_set, "Σ or U+0345 misread")
    lower_map = {c: chr(c + delta) for first, last, step, delta in single
                 for c in range(first, last + 1, step)}
    lower_map.update(expanded)
    for c in range(CODE_POINTS):
        _require(lower_map.get(c, chr(c)) == chr(c).lower(), hex(c))

    def model(text: str) -> str:
        out = []
        for i, ch in enumerate(text):
            if ch != _SIGMA:
                out.append(lower_map.get(ord(ch), ch))
                continue
            before = next((d for d in reversed(text[:i]) if ord(d) not in ignorable_set), None)
            after = next((d for d in text[i + 1 :] if ord(d) not in ignorable_set), None)
            final = (before is not None and ord(before) in cased_set
                     and (after is None or ord(after) not in cased_set))
            out.append(_FINAL if final else _MEDIAL)
        return "".join(out)

    every = [chr(c) for c in range(CODE_POINTS)]
    # The forward half of the rule, which the reading above never exercised, classifies every
    # code point again: after Σ, a cased one makes Σ medial, and so does a case-ignorable one
    # when a cased one follows it. Two in a row before Σ read both properties once more.
    for ch in every:
        cased_here = ord(ch) in cased_set
        either = cased_here or ord(ch) in ignorable_set
        after = _MEDIAL if cased_here else _FINAL
        _require(("A" + _SIGMA + ch).lower()[1] == after, hex(ord(ch)))
        _require(("A" + _SIGMA + "\u0345" + ch).lower()[1] == after, hex(ord(ch)))
        _require(("A" + _SIGMA + ch + "b").lower()[1] == (_MEDIAL if either else _FINAL),
                 hex(ord(ch)))
        _require(("A" + ch + ch + _SIGMA).lower()[-1] == (_FINAL if either else _MEDIAL),
                 hex(ord(ch)))
    # Chains of case-ignorable characters, both ways, and random mixtures.
    chain = "".join(chr(c) for c in sorted(ignorable_set))
    probes = [text for piece in _chunks(chain, 7)
              for text in ("A" + piece + _SIGMA, "A" + _SIGMA + piece, "A" + _SIGMA + piece + "b",
                           piece + _SIGMA + piece, "A" + piece + _SIGMA + piece + "B")]
    rng = random.Random(20240607)
    pool = ([chr(c) for c in sorted(cased_set)] + [chr(c) for c in sorted(ignorable_set)]
            + [_SIGMA] * 200 + [" ", "1", "\ud800", "\udc00", "\u0130"] * 20)
    probes += ["".join(rng.choices(pool, k=rng.randint(1, 12))) for _ in range(20_000)]
    probes += ["".join(rng.choices(every, k=rng.randint(1, 40))) for _ in range(2_000)]
    for text in probes:
        _require(text.lower() == model(text), ascii(text))


class TableError(Exception):
    """The tables do not model ``str.lower`` (this interpreter's casing works otherwise)."""


def _require(holds: bool, where: str) -> None:
    # Not `assert`: the checks must also run under `python -O`.
    if not holds:
        raise TableError(where)


def _rows(items: Iterable[str]) -> str:
    lines = ["   "]
    for item in items:
        if len(lines[-1]) + 1 + len(item) > _WIDTH:
            lines.append("   ")
        lines[-1] += " " + item
    return "\n".join(lines)


def _range_table(name: str, doc: str, ranges: Ranges) -> str:
    items = [f"(0x{first:04X}, 0x{last:04X})," for first, last in ranges]
    return (f"{doc}\n#[rustfmt::skip]\npub static {name}: [(u32, u32); {len(ranges)}] = [\n"
            f"{_rows(items)}\n];\n")


def _rust_str(text: str) -> str:
    return '"' + "".join(ch if ch.isascii() and ch.isalnum() else f"\\u{{{ord(ch):X}}}"
                         for ch in text) + '"'


def render() -> str:
    """The text of ``src/unicode_tables.rs`` for this interpreter."""
    letters = ranges_where(is_letter_or_number)
    # re's \w (besides "_") is LETTER_OR_NUMBER on every Python so far; the core relies on it.
    # The core's test of a time-naming key (src/volatile.rs) relies on the only non-ASCII
    # code points whose lower case holds an ASCII character being U+0130 and U+212A.
    _require([c for c in range(0x80, CODE_POINTS) if any(ord(x) < 0x80 for x in chr(c).lower())]
             == [0x130, 0x212A], "another code point lower-cases to ASCII")
    # src/adapters.rs's is_python_space lists str.isspace (re's \s) for mini-swe-agent's fence.
    _require([c for c in range(CODE_POINTS) if chr(c).isspace()] == PYTHON_SPACES,
             "str.isspace is not the list in src/adapters.rs (is_python_space)")
    _require(ranges_where(is_word) == letters, "str.isalnum is not the L* and N* categories")
    decimal = ranges_where(is_decimal)
    cased = ranges_where(is_cased)
    ignorable = ranges_where(is_case_ignorable)
    single, expanded = lowerings()
    verify(cased, ignorable, single, expanded)
    version = sys.version_info
    lower_items = [f"(0x{first:04X}, 0x{last:04X}, {step}, {delta})," for first, last, step, delta
                   in single]
    expanded_items = [f"    (0x{c:04X}, {_rust_str(text)})," for c, text in expanded]
    return "\n".join([
        f"//! Generated by `{COMMAND}` from Python {version.major}.{version.minor}."
        f"{version.micro}'s",
        f"//! `unicodedata` (Unicode {unicodedata.unidata_version}), `str.lower` and"
        " `str.isdecimal`. Do not edit:",
        "//! regenerate, and `tests/test_core_unicode.py` checks that this file is what the",
        "//! generator writes for the interpreter the tests run on.",
        "//!",
        "//! Every range is inclusive; each table is sorted, its ranges disjoint.",
        "",
        _range_table(
            "LETTER_OR_NUMBER",
            "/// Code points whose general category is a letter or a number (`L*`, `N*`).",
            letters),
        _range_table(
            "DECIMAL",
            "/// Code points `chr(c).isdecimal()` holds for: `re`'s `\\d` in a `str` pattern.",
            decimal),
        _range_table(
            "NOT_PRINTABLE",
            "/// Non-ASCII code points `chr(c).isprintable()` is false for: `repr` escapes them.",
            ranges_where(is_not_printable)),
        _range_table(
            "UNASSIGNED",
            "/// Code points unassigned (`Cn`) in this Unicode: a later one may print them.",
            ranges_where(is_unassigned)),
        "/// `chr(c).lower()` where it is one other code point: `(first, last, step, delta)`,",
        "/// every `step`-th code point from `first` to `last` lower-cases to itself plus `delta`.",
        "#[rustfmt::skip]",
        f"pub static LOWER: [(u32, u32, u32, i32); {len(single)}] = [",
        _rows(lower_items),
        "];",
        "",
        "/// `chr(c).lower()` where it is several code points.",
        "#[rustfmt::skip]",
        f"pub static LOWER_EXPANDED: [(u32, &str); {len(expanded)}] = [",
        *expanded_items,
        "];",
        "",
        _range_table(
            "CASED",
            "/// Final_Sigma's cased characters, less the case-ignorable ones (CPython skips\n"
            "/// those before it asks whether a character is cased).",
            cased),
        _range_table(
            "CASE_IGNORABLE",
            "/// Final_Sigma's case-ignorable characters: skipped when looking for a cased one.",
            ignorable),
    ]).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` compare) ``src/unicode_tables.rs``; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed file instead of writing it")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    options = parser.parse_args(argv)
    text = render()
    if options.check:
        committed = options.output.read_text(encoding="utf-8")
        if committed != text:
            print(f"{options.output} differs from what {COMMAND} writes for Python "
                  f"{sys.version.split()[0]} (Unicode {unicodedata.unidata_version}); "
                  "regenerate it", file=sys.stderr)
            return 1
        return 0
    options.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
