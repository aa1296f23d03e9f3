"""Write ``src/unicode_tables.rs``: the tables behind the core's Unicode rules.

Two sources, one per rule's owner:

- **JavaScript's**, for the guard's word normal form (production lower-cases a word with
  ``toLowerCase`` and keeps ``[\\p{L}\\p{N}]``, under Node 20): read from Node itself by
  ``--from-node`` into ``vthread/_js_unicode_tables.py`` (the data Python's twin reads too),
  and from that module into the Rust file:

  - ``JS_LETTER_OR_NUMBER``: the code points ``/[\\p{L}\\p{N}]/u`` matches.
  - ``LOWER`` and ``LOWER_EXPANDED``: ``String.fromCodePoint(c).toLowerCase()`` for every code
    point it changes (one code point, or several).
  - ``CASED`` and ``CASE_IGNORABLE``: the two properties of the Final_Sigma rule, by which
    U+03A3 lower-cases to U+03C2 after a cased character (case-ignorable ones skipped) unless
    a cased character follows (case-ignorable ones skipped), read off ``toLowerCase`` itself.

- **Python's**, for what the core does as Python does it, read from the interpreter:

  - ``LETTER_OR_NUMBER``: the code points whose ``unicodedata.category`` is ``L*`` or ``N*``,
    which is ``re``'s ``\\w`` (``str.isalnum``, and ``_``) for ``vthread.volatile``'s masking
    pattern, which the core runs too (checked, not tabled twice).
  - ``DECIMAL``: the code points ``re`` takes for ``\\d`` in a ``str`` pattern
    (``str.isdecimal``), for the same pattern.
  - ``NOT_PRINTABLE``: the non-ASCII code points ``str.isprintable`` refuses, which ``repr``
    of a ``str`` escapes (a loop's signature hashes the ``repr`` of what repeats), and
    ``UNASSIGNED`` (category ``Cn``): a later Unicode may assign and print them, so the core
    leaves a name holding one to the running interpreter's ``repr``.

Run from the repository root; ``--check`` compares instead of writing (exit status 1 on a
difference), which is what the test suite does, so a Python with newer Unicode data fails
the tests until the tables are regenerated. ``--from-node`` reads JavaScript's data from
``node`` (which must be Node 20, production's runtime) before writing.

    python tools/unicode_tables.py [--check] [--from-node]
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

# Run as a script from the repository root: the package beside it is the one read.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: The generated file, relative to the repository root.
OUTPUT: Final = Path("src/unicode_tables.rs")
#: The command written into the generated file's header.
COMMAND: Final = "python tools/unicode_tables.py"
#: One past the last code point.
CODE_POINTS: Final = 0x11_0000

_SIGMA: Final = "\u03a3"
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
    return ranges_of(c for c in range(CODE_POINTS) if test(c))


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


#: Node's reading of every code point: which are letters or numbers, what each lower-cases
#: to alone, and which are cased or case-ignorable (probed through Final_Sigma).
_NODE_READING: Final = r"""
const letterOrNumber = /^[\p{L}\p{N}]$/u;
const out = {node: process.version, icu: process.versions.icu,
             unicode: process.versions.unicode, letters: [], lower: [], cased: [],
             ignorable: []};
for (let c = 0; c < 0x110000; c++) {
  if (c >= 0xD800 && c <= 0xDFFF) continue;
  const s = String.fromCodePoint(c);
  if (letterOrNumber.test(s)) out.letters.push(c);
  const l = s.toLowerCase();
  if (l !== s) out.lower.push([c, l]);
  if ((s + "\u03a3").toLowerCase().endsWith("\u03c2")) out.cased.push(c);
  else if (("A" + s + "\u03a3").toLowerCase().endsWith("\u03c2")) out.ignorable.push(c);
}
process.stdout.write(JSON.stringify(out));
"""
#: The generated module of JavaScript's data, relative to the repository root.
JS_MODULE: Final = Path("vthread/_js_unicode_tables.py")


def ranges_of(points: Iterable[int]) -> Ranges:
    """Sorted code points as sorted, disjoint, non-adjacent inclusive ranges."""
    out: Ranges = []
    for c in points:
        if out and out[-1][1] == c - 1:
            out[-1] = (out[-1][0], c)
        else:
            out.append((c, c))
    return out


def node_reading(node: str = "node") -> dict[str, Any]:
    """What ``node`` says of every code point (:data:`_NODE_READING`)."""
    done = subprocess.run([node, "-e", _NODE_READING], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{node} failed: {done.stderr.strip()}")
    reading: dict[str, Any] = json.loads(done.stdout)
    if not reading["node"].startswith("v20."):
        raise SystemExit(f"{node} is Node {reading['node']}: production runs under Node 20")
    return reading


def js_module_text(reading: dict[str, Any]) -> str:
    """The text of :data:`JS_MODULE` for Node's ``reading``."""

    def table(name: str, doc: str, ranges: Ranges) -> str:
        items = [f"(0x{first:04X}, 0x{last:04X})," for first, last in ranges]
        return f"{name}: Final = (\n{_rows(items)}\n)\n{doc}\n"

    lower = [f"0x{c:04X}: {_python_str(text)}," for c, text in reading["lower"]]
    return "\n".join([
        '"""JavaScript\'s Unicode data behind the guard\'s word normal form, as Node '
        f'{reading["node"]}',
        f"(ICU {reading['icu']}, Unicode {reading['unicode']}) reads it: production lower-cases a "
        "word with",
        "``toLowerCase`` and keeps ``[\\\\p{L}\\\\p{N}]``.",
        "",
        f"Generated by ``{COMMAND} --from-node``; do not edit.",
        "",
        "Every range is inclusive; each table is sorted, its ranges disjoint.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Final",
        "",
        f'NODE: Final = "{reading["node"]}"',
        f'UNICODE_VERSION: Final = "{reading["unicode"]}"',
        "",
        table("LETTER_OR_NUMBER", '"""The code points ``/[\\\\p{L}\\\\p{N}]/u`` matches."""',
              ranges_of(reading["letters"])),
        "LOWER: Final = {",
        _rows(lower),
        "}",
        '"""``String.fromCodePoint(c).toLowerCase()`` for each code point it changes (alone:',
        'U+03A3 lower-cases by its neighbours, see :data:`CASED`)."""',
        "",
        table("CASED", '"""Final_Sigma\'s cased characters, less the case-ignorable ones (which '
              'are skipped\nbefore a character is asked whether it is cased)."""',
              ranges_of(reading["cased"])),
        table("CASE_IGNORABLE", '"""Final_Sigma\'s case-ignorable characters: skipped when '
              'looking for a cased one."""', ranges_of(reading["ignorable"])),
    ]).rstrip("\n") + "\n"


def lowerings(mapping: dict[int, str]) -> tuple[list[Lowering], list[tuple[int, str]]]:
    """``mapping`` (code point to its lower case, where it changes), single code points as
    ranges of a common step and delta, expansions to several code points one by one."""
    single: list[Lowering] = []
    expanded: list[tuple[int, str]] = []
    for c in sorted(mapping):
        lower = mapping[c]
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
    # The compression must give back the mapping, code point for code point.
    back = {c: chr(c + delta) for first, last, step, delta in single
            for c in range(first, last + 1, step)}
    back.update(expanded)
    _require(back == mapping, "the lower-case table does not give back its mapping")
    return single, expanded


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


def _python_str(text: str) -> str:
    """``text`` as a Python string literal in double quotes, non-ASCII escaped."""
    return '"' + text.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'


def _rust_str(text: str) -> str:
    return '"' + "".join(ch if ch.isascii() and ch.isalnum() else f"\\u{{{ord(ch):X}}}"
                         for ch in text) + '"'


def render() -> str:
    """The text of ``src/unicode_tables.rs`` for this interpreter and the committed
    JavaScript data (:data:`JS_MODULE`)."""
    from vthread import _js_unicode_tables as js

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
    # The guard's rules of Σ (src/unicode.rs) rely on these.
    _require(js.LOWER[ord(_SIGMA)] == _MEDIAL, "U+03A3 does not lower-case to U+03C3 alone")
    cased = {c for first, last in js.CASED for c in range(first, last + 1)}
    ignorable = {c for first, last in js.CASE_IGNORABLE for c in range(first, last + 1)}
    _require(ord(_SIGMA) in cased and 0x0345 in ignorable and not cased & ignorable,
             "JavaScript's cased and case-ignorable characters are misread")
    single, expanded = lowerings(dict(js.LOWER))
    version = sys.version_info
    lower_items = [f"(0x{first:04X}, 0x{last:04X}, {step}, {delta})," for first, last, step, delta
                   in single]
    expanded_items = [f"    (0x{c:04X}, {_rust_str(text)})," for c, text in expanded]
    return "\n".join([
        f"//! Generated by `{COMMAND}`: the guard's tables from JavaScript's data (Node",
        f"//! {js.NODE}, Unicode {js.UNICODE_VERSION}, in `{JS_MODULE}`), the others from Python",
        f"//! {version.major}.{version.minor}.{version.micro}'s `unicodedata` (Unicode "
        f"{unicodedata.unidata_version}), `str.isdecimal` and `str.isprintable`. Do not edit:",
        "//! regenerate, and `tests/test_core_unicode.py` checks that this file is what the",
        "//! generator writes for the interpreter the tests run on.",
        "//!",
        "//! Every range is inclusive; each table is sorted, its ranges disjoint.",
        "",
        _range_table(
            "JS_LETTER_OR_NUMBER",
            "/// Code points JavaScript's `/[\\p{L}\\p{N}]/u` matches: what the guard keeps of a\n"
            "/// word.",
            list(js.LETTER_OR_NUMBER)),
        _range_table(
            "LETTER_OR_NUMBER",
            "/// Code points whose general category in Python is a letter or a number (`L*`,\n"
            "/// `N*`): `re`'s `\\w` in a `str` pattern, besides `_`.",
            letters),
        _range_table(
            "DECIMAL",
            "/// Code points `chr(c).isdecimal()` holds for: `re`'s `\\d` in a `str` pattern.",
            ranges_where(is_decimal)),
        _range_table(
            "NOT_PRINTABLE",
            "/// Non-ASCII code points `chr(c).isprintable()` is false for: `repr` escapes them.",
            ranges_where(is_not_printable)),
        _range_table(
            "UNASSIGNED",
            "/// Code points unassigned (`Cn`) in this Unicode: a later one may print them.",
            ranges_where(is_unassigned)),
        "/// JavaScript's `toLowerCase` of `c` alone where it is one other code point: `(first,",
        "/// last, step, delta)`, every `step`-th code point from `first` to `last` lower-cases to",
        "/// itself plus `delta`.",
        "#[rustfmt::skip]",
        f"pub static LOWER: [(u32, u32, u32, i32); {len(single)}] = [",
        _rows(lower_items),
        "];",
        "",
        "/// JavaScript's `toLowerCase` of `c` alone where it is several code points.",
        "#[rustfmt::skip]",
        f"pub static LOWER_EXPANDED: [(u32, &str); {len(expanded)}] = [",
        *expanded_items,
        "];",
        "",
        _range_table(
            "CASED",
            "/// Final_Sigma's cased characters, less the case-ignorable ones (skipped before a\n"
            "/// character is asked whether it is cased), as JavaScript's `toLowerCase` reads\n"
            "/// them.",
            list(js.CASED)),
        _range_table(
            "CASE_IGNORABLE",
            "/// Final_Sigma's case-ignorable characters: skipped when looking for a cased one.",
            list(js.CASE_IGNORABLE)),
    ]).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with ``--check`` compare) ``src/unicode_tables.rs``; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed file instead of writing it")
    parser.add_argument("--from-node", action="store_true",
                        help=f"first write {JS_MODULE} from what node (Node 20) reads")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    options = parser.parse_args(argv)
    if options.from_node:
        JS_MODULE.write_text(js_module_text(node_reading()), encoding="utf-8")
        importlib.invalidate_caches()
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
