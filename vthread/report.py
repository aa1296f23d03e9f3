"""A dataset's runs as one self-contained HTML page: what loops, how often, and what it cost.

:class:`ReportData` gathers ``vthread scan`` records (one mapping per run, as the scan
writes them) one at a time, keeping the headline counts and, for the looping runs only, a
column per field; :func:`render_report` turns it into a page that needs nothing but itself:
no network, no external asset, so it opens from an email attachment.

What the page holds: headline figures (runs, runs with a loop, wasted messages and tokens
with their share of the total), two charts drawn here as inline SVG (loops by kind; wasted
tokens per looping run as a histogram on log-spaced bins), the loops repeated most often
across runs (grouped by ``signature``, with an ``excerpt``, the runs each appears in and
the tokens it cost), and a sortable, filterable table of the looping runs, each with a
timeline strip of its messages and the loop's span ``[loop_start, messages)`` marked.

Why it stays usable at 100,000 runs: the looping runs travel as one JSON blob of column
arrays (strings repeated across runs, such as excerpts and file names, stored once and
referred to by index), and a small inline script renders only one page of the table at a
time. Why it is safe on attacker-controlled text (ids and excerpts come from the data):
everything from the data reaches the page either HTML-escaped, inside a JSON blob whose
``<``, ``>`` and ``&`` are written as ``\\u`` escapes, or through the DOM's ``textContent``;
and the page's Content-Security-Policy lets only its own script run (by hash) and forbids
every request. :mod:`vthread._cli_report` is the command around it.

>>> data = ReportData()
>>> data.add({"id": "t1", "file": "a.jsonl", "line": 1, "verdict": "repeated_suffix",
...           "loop_start": 2, "period": 2, "repetitions": 3, "loop_messages": 6,
...           "loop_tokens": 60.0, "signature": "00ff", "excerpt": "ls() -> a", "messages": 8})
>>> data.add({"id": "t2", "file": "a.jsonl", "line": 2, "verdict": None, "loop_start": 0,
...           "period": 0, "repetitions": 0, "loop_messages": 0, "loop_tokens": None,
...           "signature": None, "excerpt": None, "messages": 5})
>>> data.summary()["loops"], data.summary()["wasted_messages"]
(1, 6)
>>> "<!DOCTYPE html>" in render_report(data, title="runs")
True
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from vthread._cli_main import shown as _visible  # (as the command writes it on a terminal)
from vthread._messages import NO_PRICED_LOOP, figure_text, loops_priced, unpriced_loops
from vthread.inspect_log import is_lacking_note
from vthread.scan import HEURISTIC_NAMES

__all__ = ["RecordError", "ReportData", "WrittenNumber", "record_problem", "render_report"]

TOP_LOOPS: Final = 20
"""How many of the most repeated loops (by signature) the page lists."""
PAGE_ROWS: Final = 50
"""Rows of the looping-runs table rendered at a time (the rest are a page away)."""
HISTOGRAM_BINS_PER_DECADE: Final = 2
"""Bins per factor of ten in the wasted-tokens histogram (edges 1, 3.16, 10, 31.6, ...)."""
MOST_BINS: Final = 24
"""The histogram's bars at most (but for the bar of zeros and the last's edge): its bins
widen past it."""
_KIND_LABELS: Final = {
    "repeated_suffix": "repeated block of messages",
    "repeated_activity_tail": "same tool call, same answer",
    "repeated_result_run": "identical tool results in a row",
    "repeated_message_text_run": "a message repeating itself",
}
_KIND_COLOURS: Final = ("#d9480f", "#1971c2", "#2f9e44", "#9c36b5")
"""Each loop kind's colour, in the chart of kinds and (``.k1`` to ``.k4``) the runs table."""
_KIND_STYLE: Final = "".join(f".k{code}{{background:{colour}}}"
                             for code, colour in enumerate(_KIND_COLOURS, 1))


class RecordError(ValueError):
    """A mapping that is not a ``vthread scan`` record (the message says which key)."""


@dataclass(slots=True)
class ReportData:
    """The report's figures, gathered record by record.

    Memory is O(looping runs): a progressing run or an error record only adds to counts.
    ``tokens`` (every message's tokens) is not in the records; the command sets it from the
    scan's summary when it scanned the runs itself, and it stays None for records read back.
    """

    lines: int = 0
    errors: int = 0
    progressing: int = 0
    by_kind: list[int] = field(default_factory=lambda: [0] * len(HEURISTIC_NAMES))
    messages: int = 0
    wasted_messages: int = 0
    wasted_tokens: float = 0.0
    wasted_tokens_seen: bool = False  # some looping record carries loop_tokens
    loops_without_tokens: int = 0  # looping records whose loop_tokens is null: not counted
    tokens: float | None = None
    files: dict[str, int] = field(default_factory=dict)
    excerpts: dict[str, int] = field(default_factory=dict)
    signatures: dict[str, int] = field(default_factory=dict)
    # The looping runs, one entry per run in each column, in input order.
    ids: list[str] = field(default_factory=list)
    file_index: list[int] = field(default_factory=list)
    line: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)  # 1 + HEURISTIC_NAMES.index(verdict)
    loop_start: list[int] = field(default_factory=list)
    period: list[int] = field(default_factory=list)
    repetitions: list[int] = field(default_factory=list)
    loop_messages: list[int] = field(default_factory=list)
    loop_tokens: list[float | None] = field(default_factory=list)
    run_messages: list[int] = field(default_factory=list)
    excerpt_index: list[int] = field(default_factory=list)
    signature_index: list[int] = field(default_factory=list)
    # Per looping run, its messages' kinds (see message_kinds), set where known.
    message_kinds: dict[int, str] = field(default_factory=dict)
    # (file, what) of each record that ends an Inspect log lacking samples: it stands for
    # no run, so it counts as no line and no error, as in the scan's summary.
    notes: list[tuple[str, str]] = field(default_factory=list)
    # (file, line, run, why) of the first BAD_SHOWN error records, for the page to name.
    bad: list[tuple[str, int, str, str]] = field(default_factory=list)

    def add(self, record: Mapping[str, Any]) -> None:
        """Count one record; O(1). Raises :class:`RecordError` for anything that is not one
        (a mapping lacking a key, a field of the wrong kind, or no mapping at all).

        Every field is read and checked before anything is counted, so a rejected record
        changes nothing: a caller that skips it and goes on keeps every column one entry per
        looping run and every count its records' (adding as it read used to leave the columns
        of a bad run different lengths, and the page's table misaligned).
        """
        problem = record_problem(record)
        if problem is not None:
            raise RecordError(problem)
        line = record["line"]
        if "error" in record:
            if is_lacking_note(record):
                self.notes.append((record["file"], record["error"]))
                return
            self.lines += 1
            self.errors += 1
            if len(self.bad) < BAD_SHOWN:
                ident = record.get("id")
                run = "" if ident is None else _run_name(record)
                self.bad.append((record["file"], line, run, record["error"]))
            return
        verdict = record["verdict"]
        messages = record.get("messages", 0)
        if verdict is None:
            self.lines += 1
            self.messages += messages
            self.progressing += 1
            return
        code = HEURISTIC_NAMES.index(verdict) + 1
        # (every field checked by record_problem: from here on nothing raises)
        wasted = record.get("loop_messages", 0)
        tokens = _loop_tokens(record.get("loop_tokens"))
        ident = _run_name(record)
        file = record["file"]
        loop_start = record.get("loop_start", 0)
        period = record.get("period", 0)
        repetitions = record.get("repetitions", 0)
        excerpt = record.get("excerpt") or ""
        signature = record.get("signature") or ""
        self.lines += 1
        self.messages += messages
        self.by_kind[code - 1] += 1
        self.wasted_messages += wasted
        if tokens is None:
            self.loops_without_tokens += 1
        else:
            self.wasted_tokens += tokens
            self.wasted_tokens_seen = True
        self.ids.append(ident)
        self.file_index.append(_index(self.files, file))
        self.line.append(line)
        self.kind.append(code)
        self.loop_start.append(loop_start)
        self.period.append(period)
        self.repetitions.append(repetitions)
        self.loop_messages.append(wasted)
        self.loop_tokens.append(tokens)
        self.run_messages.append(messages)
        self.excerpt_index.append(_index(self.excerpts, excerpt))
        self.signature_index.append(_index(self.signatures, signature))

    @property
    def loops(self) -> int:
        """Runs with a loop."""
        return len(self.kind)

    def summary(self) -> dict[str, Any]:
        """The headline figures, under the keys of ``vthread scan --summary``'s JSON."""
        known = ((self.tokens is not None or self.wasted_tokens_seen)
                 and loops_priced(self.loops, self.loops_without_tokens))
        return {
            "lines": self.lines,
            "threads": self.lines - self.errors,
            "errors": self.errors,
            "progressing": self.progressing,
            "loops": self.loops,
            "loops_by_heuristic": dict(zip(HEURISTIC_NAMES, self.by_kind, strict=True)),
            "messages": self.messages,
            "wasted_messages": self.wasted_messages,
            "tokens": self.tokens,
            "wasted_tokens": self.wasted_tokens if known else None,
            "loops_without_tokens": self.loops_without_tokens,
        }

    def top_loops(self, count: int = TOP_LOOPS) -> list[_Loop]:
        """The ``count`` signatures costing most tokens (then most runs); O(looping runs)."""
        found: dict[int, _Loop] = {}
        for row, signature in enumerate(self.signature_index):
            loop = found.get(signature)
            if loop is None:
                loop = found[signature] = _Loop(self.kind[row], self.excerpt_index[row])
            loop.runs += 1
            loop.messages += self.loop_messages[row]
            tokens = self.loop_tokens[row]
            if tokens is not None:
                loop.tokens = (loop.tokens or 0.0) + tokens
        return sorted(found.values(), key=lambda loop: (-(loop.tokens or 0.0), -loop.runs,
                                                        -loop.messages))[:count]


def message_kinds(messages: Sequence[Mapping[str, Any]], sources: Sequence[int] | None,
                  count: int) -> str:
    """One character per source message, for a timeline's colours: ``u`` user, ``a`` the
    agent's text, ``t`` its thinking, ``c`` a tool call, ``r`` a tool result, ``o`` other.

    ``messages`` are native; ``sources`` (None: the identity) the source message each was
    translated from, as :func:`vthread.documents.read_run` gives them; a source message
    that became a tool call or result is one (an agent turn with its thought and its
    action is a call), else it takes the kind of its first native message. O(messages).

    >>> message_kinds([{"type": "user"}, {"type": "bot"}], None, 2)
    'ua'
    """
    kinds = [""] * count
    for index, message in enumerate(messages):
        source = index if sources is None else sources[index]
        if not 0 <= source < count or kinds[source] in ("c", "r"):
            continue
        kind = message.get("type")
        if kind == "activity":
            meta = message.get("meta")
            activity = meta.get("activity") if isinstance(meta, dict) else None
            step = activity.get("type") if isinstance(activity, dict) else None
            kinds[source] = "c" if step == "request" else "r"
        elif not kinds[source]:
            kinds[source] = _KIND_LETTERS.get(kind, "o") if isinstance(kind, str) else "o"
    return "".join(kind or "o" for kind in kinds)


_KIND_LETTERS: Final = {"user": "u", "bot": "a", "reasoning": "t", "narration": "a"}


@dataclass(slots=True)
class _Loop:
    """One signature's runs and cost (see :meth:`ReportData.top_loops`)."""

    kind: int
    excerpt: int
    runs: int = 0
    messages: int = 0
    tokens: float | None = None


_MOST_COUNTED: Final = 2**63 - 1
"""The largest count a record may hold (a scan's counts are a machine word's; one past the
largest double broke the page's arithmetic, status 70)."""


def record_problem(value: object) -> str | None:
    """Why a JSON value is not one of ``vthread scan``'s records, None when it is one: the
    rule :meth:`ReportData.add` reads records by and ``vthread scan`` tells a records file
    from runs by (one rule: a line the scan passed over as a record was refused by the
    report, and the report counted as an error record a run the scan would read).

    A record names a file (text) and a line (a count), and an error or a verdict (null or
    a heuristic's name, as the report reads it), and its ``messages``, when it has one, is
    the count a record writes. A run that happens to carry ``file``, ``line`` and ``error``
    fields (an agent's run fixing a TypeError in src/app.py line 42) holds its messages as
    an array: it is a run, to be scanned, never passed over or written over; so is one
    whose ``verdict`` is any other value (a grader's "pass"), which no report could read.
    An error record is an error's text beside the id, file and line, never a verdict. No
    record holds an array or an object but its id (any JSON value) and its ``loops`` (a
    list, looking anywhere): a run holds its messages in one, under whatever key."""
    if not isinstance(value, Mapping):
        return f"not a vthread scan record (a {type(value).__name__}, not a mapping)"
    if "file" not in value or "line" not in value or (
            "verdict" not in value and "error" not in value):
        return "not a vthread scan record (it needs file, line and verdict or error)"
    if not isinstance(value["file"], str):
        return f"file is {value['file']!r}, not text"
    problem = _count_problem(value, "line")
    if problem is not None:
        return problem
    nested = field_of_a_run(value)
    if nested is not None:
        return (f"{nested} is {'an array' if isinstance(value[nested], list) else 'an object'}"
                ": a run's field, not a record's")
    if "error" in value:
        if not isinstance(value["error"], str):
            return f"error is {value['error']!r}, not text"
        if "verdict" in value:
            return "a verdict beside an error: no record holds both"
        return None
    verdict = value["verdict"]
    if verdict is not None and not (isinstance(verdict, str) and verdict in _VERDICTS):
        return f"unknown verdict {verdict!r}"
    problem = _count_problem(value, "messages")
    if verdict is None or problem is not None:
        return problem
    # A loop's fields, which the report reads (a records file holding a damaged one was
    # passed over by the scan as records, and refused by the report).
    for key in ("loop_messages", "loop_start", "period", "repetitions"):
        problem = _count_problem(value, key)
        if problem is not None:
            return problem
    for key in ("excerpt", "signature"):
        text = value.get(key)
        if text is not None and not isinstance(text, str):
            return f"{key} is {text!r}, not text"
    tokens = value.get("loop_tokens")
    if tokens is not None and _loop_tokens(tokens) is None:
        return f"loop_tokens is {tokens!r}, not a finite number >= 0"
    return None


_VERDICTS: Final = frozenset(HEURISTIC_NAMES)
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
"""The types of JSON's values that are no array or object, as ``json`` reads them."""


def field_of_a_run(value: Mapping[str, Any]) -> str | None:
    """The first key of a JSON object holding an array or an object, but its ``id`` (any
    JSON value) and its ``loops`` (a list): no record has one, where a run holds its
    messages in one. None when there is none."""
    if _SCALARS.issuperset(map(type, value.values())):
        return None  # (a record's fields, told apart in C: every add asks, 200,000 a page)
    for key, field_ in value.items():
        if key != "id" and isinstance(field_, list | dict) and not (
                key == "loops" and isinstance(field_, list)):
            return key
    return None


def _count_problem(record: Mapping[str, Any], key: str) -> str | None:
    """Why a record's ``key`` (0 when absent) is no count, None when it is one."""
    value = record.get(key, 0)
    if type(value) is int and 0 <= value <= _MOST_COUNTED:
        return None  # (as json reads a count: every add asks several times)
    if (not isinstance(value, int) or isinstance(value, bool) or value < 0
            or value > _MOST_COUNTED):
        shown = repr(value) if not isinstance(value, int) or value < 10**20 else (
            f"a number of {len(str(value)):,} digits")
        return f"{key} is {shown}, not a count"
    return None


def _loop_tokens(value: Any) -> float | None:
    """A record's ``loop_tokens`` as a float when it is a finite number >= 0, else None (null:
    not counted; anything else: no record's, :func:`record_problem`)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        figure = float(value)
    except OverflowError:  # an integer past the doubles, which float() cannot hold
        return None
    # (vthread scan writes a total past the doubles as null: an infinity here was written
    # otherwise, and would break the page's scales)
    return figure if 0 <= figure < math.inf else None


def _run_name(record: Mapping[str, Any]) -> str:
    """The run's id as text (a number or other JSON value as its JSON, a
    :class:`WrittenNumber` as written); none: file:line."""
    ident = record.get("id")
    if ident is None:
        return f"{record['file']}:{record['line']}"
    if isinstance(ident, WrittenNumber):
        return ident.text
    return ident if isinstance(ident, str) else json.dumps(ident)


class WrittenNumber(float):
    """A JSON number read as a float, with its text as the record writes it, for a run's
    id: shown as written (``1e400``, not the ``Infinity`` the float of it is, nor a float's
    rounding of its digits), as an integer id is shown exactly.

    >>> number = WrittenNumber("1e400")
    >>> number, number.text
    (inf, '1e400')
    """

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> WrittenNumber:
        number = super().__new__(cls, text)
        number.text = text
        return number


def _index(table: dict[str, int], text: str) -> int:
    return table.setdefault(text, len(table))


# ---------------------------------------------------------------------------------- page


def render_report(data: ReportData, *, title: str, sources: Sequence[str] = (),
                  warnings: Sequence[str] = ()) -> str:
    """The whole page as text; O(looping runs). ``sources`` name the inputs in the header;
    ``warnings``, what the command warned of while reading them, are shown above the
    figures (a page sent on its own carries why its figures may mislead: records written
    with --only-loops, a line cut short), the first :data:`_WARNINGS_SHOWN` of them."""
    figures = data.summary()
    script_hash = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    policy = (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
              f"script-src 'sha256-{script_hash}'; base-uri 'none'; form-action 'none'")
    shown = ", ".join(sources[:5]) + (f" and {len(sources) - 5} more" if len(sources) > 5 else "")
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_text(title)}</title><style>{_STYLE}{_KIND_STYLE}</style></head><body>",
        f"<header><h1>{_text(title)}</h1>",
        f"<p class=\"sources\">{_text(shown)}</p>" if shown else "",
        "</header><main>",
        _warnings(warnings),
        _headline(figures),
        _bad_lines(data),
        '<section class="charts">',
        _chart_card("Loops by kind", _kind_chart(data)),
        _chart_card(*_cost_histogram(data)),
        "</section>",
        _top_loops(data),
        _runs_table(),
        "</main>",
        '<script type="application/json" id="report-data">',
        _json_for_html(_blob(data)),
        f"</script><script>{_SCRIPT}</script></body></html>\n",
    ]
    return "".join(parts)


_WARNINGS_SHOWN: Final = 20
"""Warnings a page shows (the rest are counted: all of them went to standard error)."""

BAD_SHOWN: Final = 20
"""Error records a page names, each by file, line and run (the rest are counted)."""


def _bad_lines(data: ReportData) -> str:
    """The first :data:`BAD_SHOWN` error records, so that whoever reads the page can find
    the runs that went unchecked (it gave their count alone)."""
    if not data.bad:
        return ""
    items = "".join(
        f"<li>{_text(file)}, line {line:,}{f' ({_text(run)})' if run else ''}: "
        f"{_text(why)}</li>" for file, line, run, why in data.bad)
    more = data.errors - len(data.bad)
    if more > 0:
        items += f"<li>and {more:,} more</li>"
    return f'<section class="bad-lines"><h2>Bad lines</h2><ul>{items}</ul></section>'


def _warnings(warnings: Sequence[str]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li>{_text(warning)}</li>" for warning in warnings[:_WARNINGS_SHOWN])
    more = len(warnings) - _WARNINGS_SHOWN
    if more > 0:
        items += f"<li>and {more:,} more, on standard error</li>"
    return f'<section class="warnings"><h2>Warnings</h2><ul>{items}</ul></section>'


def _text(value: object) -> str:
    """``value`` as HTML text or attribute value: every ``<>&"'`` escaped, and what would
    reorder or hide the text around it (a control character, a bidirectional override: an
    id holding U+202E showed the text after it reversed) written as the escape the command
    writes on a terminal (:func:`vthread._cli_main.shown`)."""
    return html.escape(_visible(str(value)), quote=True)


def _json_for_html(value: object) -> str:
    """JSON that cannot end its ``<script>`` element or open a comment: ``<``, ``>`` and
    ``&`` as ``\\u`` escapes (still the same JSON), and only ASCII (U+2028 included)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _share(part: float, whole: float | None) -> str:
    if not whole or not math.isfinite(whole):
        return ""  # no share of nothing, nor of a total past the largest double
    return f"{part / whole:.1%}"


def _figure_json(value: float | None) -> str:
    """A figure's ``data-value``: JSON, ``null`` where it is not known or is past the
    largest double (as the scan's --summary file writes it), never ``Infinity``."""
    return json.dumps(value if value is None or math.isfinite(value) else None)


def _headline(figures: Mapping[str, Any]) -> str:
    """The headline cards; each carries its exact figure in ``data-value`` (for tests and
    scripts: JSON, ``null`` where it is not known, as the other figures' spans write it)
    next to the rounded text people read."""
    threads = figures["threads"]
    cards = [
        ("threads", "runs", threads, ""),
        ("loops", "runs with a loop", figures["loops"],
         f"{_share(figures['loops'], threads)} of runs"),
        ("wasted_messages", "wasted messages", figures["wasted_messages"],
         f"{_share(figures['wasted_messages'], figures['messages'])} of "
         f"{figure_text(figures['messages'])}"),
    ]
    tokens, wasted = figures["tokens"], figures["wasted_tokens"]
    unpriced = figures.get("loops_without_tokens", 0)
    left_out = f"; {unpriced_loops(unpriced)}" if unpriced else ""
    if wasted is None:
        # No loop's cost is recorded (summary() says so by loops_priced): a total of 0
        # would read as "no waste".
        cards.append(("wasted_tokens", "wasted tokens", None, NO_PRICED_LOOP))
    elif tokens is None:
        cards.append(("wasted_tokens", "wasted tokens", wasted,
                      f"total not known from records{left_out}"))
    else:
        cards.append(("wasted_tokens", "wasted tokens", wasted,
                      f"{_share(wasted, tokens)} of {figure_text(tokens)}{left_out}"))
    out = ['<section class="headline">']
    for key, label, value, note in cards:
        shown = "n/a" if value is None else figure_text(value)
        out.append(f'<div class="card" data-figure="{key}" '
                   f'data-value="{_text(_figure_json(value))}">'
                   f'<div class="value">{shown}</div><div class="label">{label}</div>'
                   f'<div class="note">{_text(note)}</div></div>')
    extras = [("errors", "bad lines", figures["errors"]),
              ("messages", "messages", figures["messages"]),
              ("tokens", "tokens", figures["tokens"])]
    out.append('<p class="extras">')
    out.extend(f'<span data-figure="{key}" data-value="{_text(_figure_json(value))}">'
               f'{label}: {"n/a" if value is None else figure_text(value)}</span> '
               for key, label, value in extras)
    out.append("</p></section>")
    return "".join(out)


def _chart_card(title: str, svg: str) -> str:
    return f'<figure class="chart"><figcaption>{_text(title)}</figcaption>{svg}</figure>'


_LABEL_CHAR_WIDTH: Final = 8
"""The room given a character of a chart's label, in pixels: more than a count's label
takes on average at 12 px (its digits about 7 each, a comma and a space 3, "%" 11)."""


def _kind_chart(data: ReportData) -> str:
    """Horizontal bars, one per kind of loop, with counts and share of looping runs."""
    width, left, row = 460, 200, 30
    top = max(data.by_kind) or 1
    height = row * len(HEURISTIC_NAMES) + 8
    # Room right of the longest bar for the longest label, at most _LABEL_CHAR_WIDTH a
    # character (a fixed 70 px cut "9,013 74.8%" at the chart's edge).
    room = 8 + _LABEL_CHAR_WIDTH * max(len(f"{count:,} {_share(count, data.loops)}")
                                       for count in data.by_kind)
    out = [f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'role="img" aria-label="loops by kind">']
    for index, (name, count) in enumerate(zip(HEURISTIC_NAMES, data.by_kind, strict=True)):
        y = 4 + index * row
        bar = (width - left - room) * count / top
        out.append(f'<text x="{left - 8}" y="{y + 17}" text-anchor="end">'
                   f"{_text(_KIND_LABELS[name])}</text>"
                   f'<rect x="{left}" y="{y + 4}" width="{bar:.1f}" height="{row - 10}" '
                   f'fill="{_KIND_COLOURS[index]}"><title>{_text(name)}: {count:,}</title></rect>'
                   f'<text x="{left + bar + 6:.1f}" y="{y + 17}">{count:,} '
                   f"{_share(count, data.loops)}</text>")
    out.append("</svg>")
    return "".join(out)


def _cost_histogram(data: ReportData) -> tuple[str, str]:
    """(title, SVG) of the wasted tokens per looping run (wasted messages when no record
    carries tokens), counted on log-spaced bins; O(looping runs)."""
    tokens = [value for value in data.loop_tokens if value is not None]
    values, unit = (tokens, "tokens") if tokens else (list(map(float, data.loop_messages)),
                                                       "messages")
    title = f"Wasted {unit} per looping run"
    width, height, bottom, left = 460, 190, 36, 44
    positive = [value for value in values if value > 0]
    zeros = len(values) - len(positive)
    bins: list[tuple[str, int]] = [("0", zeros)] if zeros else []
    if positive:
        # Two bins a factor of ten, fewer where the values span more than MOST_BINS / 2
        # of them (figures from 1 to 1e308 drew 617 bars of negative width).
        span = math.log10(max(positive)) - math.log10(min(positive))
        step = min(HISTOGRAM_BINS_PER_DECADE, MOST_BINS / max(span, 1.0))
        low = math.floor(math.log10(min(positive)) * step)
        high = max(low + 1, math.floor(math.log10(max(positive)) * step) + 1)
        counts = [0] * (high - low)
        for value in positive:
            counts[min(high - low - 1, math.floor(math.log10(value) * step) - low)] += 1
        bins += [(_compact(10 ** ((low + index) / step)), count)
                 for index, count in enumerate(counts)]
    out = [f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
           f'role="img" aria-label="{_text(title)}">']
    if not bins:
        out.append(f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">'
                   "no looping runs</text></svg>")
        return title, "".join(out)
    top = max(count for _, count in bins) or 1
    slot = (width - left - 8) / len(bins)
    plot = height - bottom - 8
    out.append(f'<text x="{left - 6}" y="16" text-anchor="end" class="axis">{top:,}</text>'
               f'<text x="{left - 6}" y="{8 + plot}" text-anchor="end" class="axis">0</text>'
               f'<text x="4" y="{8 + plot / 2:.0f}" class="axis">runs</text>')
    for index, (edge, count) in enumerate(bins):
        bar = plot * count / top
        x = left + index * slot
        runs = "run" if count == 1 else "runs"
        out.append(f'<rect x="{x + 1:.1f}" y="{8 + plot - bar:.1f}" width="{slot - 2:.1f}" '
                   f'height="{bar:.1f}" fill="#495057"><title>{count:,} {runs} from {edge} '
                   f"{unit}</title></rect>"
                   f'<text x="{x + slot / 2:.1f}" y="{height - bottom + 14}" '
                   f'text-anchor="middle" class="axis">{edge}</text>')
    out.append(f'<text x="{left + (width - left) / 2:.1f}" y="{height - 4}" '
               f'text-anchor="middle" class="axis">{unit} (bin lower edge, log scale)</text>')
    out.append("</svg>")
    return title, "".join(out)


def _compact(value: float) -> str:
    """A bin edge as people write it: 3.2, 10, 320, 3.2k, 1M."""
    if value >= 1e12:
        return f"{value:.2g}"  # (1e+15: past the suffixes)
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:.3g}{suffix}"
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"


def _top_loops(data: ReportData) -> str:
    loops = data.top_loops()
    excerpts = list(data.excerpts)
    out = ['<section><h2>Most repeated loops</h2>',
           '<p class="hint">Runs whose loop has the same signature (the same repeating '
           "pattern), most tokens first.</p>"]
    if not loops:
        out.append("<p>No run loops.</p></section>")
        return "".join(out)
    out.append('<table id="top-loops"><thead><tr><th>kind</th><th>what repeats</th>'
               '<th class="n">runs</th><th class="n">wasted messages</th>'
               '<th class="n">wasted tokens</th></tr></thead><tbody>')
    for loop in loops:
        name = HEURISTIC_NAMES[loop.kind - 1]
        tokens = "n/a" if loop.tokens is None else figure_text(loop.tokens)
        out.append(f'<tr><td><span class="kind k{loop.kind}">{_text(name)}</span></td>'
                   f'<td class="excerpt">{_text(excerpts[loop.excerpt])}</td>'
                   f'<td class="n">{loop.runs:,}</td><td class="n">{loop.messages:,}</td>'
                   f'<td class="n">{tokens}</td></tr>')
    out.append("</tbody></table></section>")
    return "".join(out)


def _runs_table() -> str:
    options = "".join(f'<option value="{code}">{_text(name)}</option>'
                      for code, name in enumerate(HEURISTIC_NAMES, 1))
    headers = "".join(
        '<th class="nosort">timeline</th>' if key is None else
        f'<th data-key="{key}" class="{css}"><button type="button">{label}</button></th>'
        for key, label, css in (
            ("id", "run", ""), ("kind", "kind", ""), ("start", "loop start", "n"),
            ("period", "period", "n"), ("reps", "repetitions", "n"),
            ("wasted", "wasted messages", "n"), ("tokens", "wasted tokens", "n"),
            (None, "timeline", ""), ("excerpt", "what repeats", "")))
    return (
        '<section><h2>Looping runs</h2><div class="controls">'
        '<input id="filter" type="search" placeholder="filter by run, file or excerpt" '
        'aria-label="filter">'
        f'<select id="kind-filter" aria-label="kind"><option value="0">every kind</option>'
        f"{options}</select>"
        '<button type="button" id="first">&#8676; first</button>'
        '<button type="button" id="prev">&larr; previous</button>'
        '<span id="status" aria-live="polite"></span>'
        '<button type="button" id="next">next &rarr;</button>'
        '<button type="button" id="last">last &#8677;</button></div>'
        '<p class="hint">Click a column to sort, a row (or Enter on it) for its details. '
        'Timeline: one cell '
        "per message, the loop's messages marked"
        '<span class="swatch l"></span>loop; where the messages were read, their kinds:'
        + "".join(f'<span class="swatch k{letter}"></span>{name}' for letter, name in (
            ("u", "user"), ("a", "agent text"), ("t", "thinking"), ("c", "tool call"),
            ("r", "tool result"), ("o", "other")))
        + "</p>"
        f'<table id="runs"><thead><tr>{headers}</tr></thead><tbody></tbody></table>'
        '<div id="detail" hidden></div></section>'
    )


def _blob(data: ReportData) -> dict[str, Any]:
    """The looping runs as column arrays, for the page's script."""
    return {
        "kinds": list(HEURISTIC_NAMES),
        "pageRows": PAGE_ROWS,
        # (an id or a file name is one line: a newline in it shown as an escape, so that
        # "a\nb" and "a b" read apart)
        "files": [_visible(name, lines=False) for name in data.files],
        "excerpts": [_visible(excerpt) for excerpt in data.excerpts],
        "runs": {
            "id": [_visible(ident, lines=False) for ident in data.ids],
            "file": data.file_index,
            "line": data.line, "kind": data.kind,
            "start": data.loop_start, "period": data.period, "reps": data.repetitions,
            "wasted": data.loop_messages, "messages": data.run_messages,
            "excerpt": data.excerpt_index,
            # Absent for records read back (no messages to look at): 3 bytes a run saved.
            "kinds": [data.message_kinds.get(row, "") for row in range(data.loops)]
            if data.message_kinds else [],
            # Whole numbers written as integers: ".0" on 100,000 figures is 200 kB.
            "tokens": [None if value is None or not math.isfinite(value) else
                       int(value) if value.is_integer() else value
                       for value in data.loop_tokens],
        },
    }


_STYLE: Final = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#212529;
background:#f8f9fa}header{background:#212529;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}.sources{margin:4px 0 0;color:#adb5bd;font-size:12px;
overflow-wrap:anywhere}main{padding:16px 24px;max-width:1280px}
h2{font-size:17px;margin:24px 0 8px}.warnings{background:#fff3cd;border:1px solid #ffe69c;
border-radius:6px;padding:0 16px 8px;margin-bottom:16px;overflow-wrap:anywhere}
.warnings h2{margin-top:8px}.headline{display:flex;flex-wrap:wrap;gap:12px}
.card{background:#fff;border:1px solid #dee2e6;border-radius:6px;padding:10px 16px;
min-width:180px}.card .value{font-size:26px;font-weight:600}.card .label{color:#495057}
.card .note{color:#868e96;font-size:12px}.extras{width:100%;color:#868e96;font-size:12px;
margin:0}.extras span{margin-right:16px}.charts{display:flex;flex-wrap:wrap;gap:16px;
margin-top:16px}.chart{background:#fff;border:1px solid #dee2e6;border-radius:6px;
margin:0;padding:10px}figcaption{font-weight:600;margin-bottom:6px}
svg text{font-size:12px;fill:#343a40}svg text.axis{font-size:10px;fill:#868e96}
table{border-collapse:collapse;background:#fff;width:100%;font-size:13px}
th,td{border-bottom:1px solid #e9ecef;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f5;position:sticky;top:0}th button{all:unset;cursor:pointer;
font-weight:600}th[aria-sort=ascending] button::after{content:" \\25B2"}
th[aria-sort=descending] button::after{content:" \\25BC"}.n{text-align:right;
font-variant-numeric:tabular-nums}.excerpt{font-family:ui-monospace,Menlo,Consolas,monospace;
font-size:12px;overflow-wrap:anywhere;max-width:520px}#runs tbody tr{cursor:pointer}
.rid,.n{overflow-wrap:anywhere}.rid{max-width:320px}#detail h3{overflow-wrap:anywhere}
th button:focus-visible,#runs tbody tr:focus-visible{outline:2px solid #1971c2;
outline-offset:-2px}
#runs tbody tr:hover,#runs tbody tr.selected{background:#fff4e6}
.kind{display:inline-block;padding:0 6px;border-radius:8px;color:#fff;font-size:11px;
white-space:nowrap}.controls{display:flex;gap:8px;align-items:center;margin-bottom:6px;
flex-wrap:wrap}#filter{width:280px;padding:4px}.hint{color:#868e96;font-size:12px;
margin:2px 0 8px}#detail{background:#fff;border:1px solid #dee2e6;border-radius:6px;
padding:10px 16px;margin-top:12px}#detail pre{white-space:pre-wrap;overflow-wrap:anywhere;
font-size:12px;background:#f8f9fa;padding:8px}.strip rect.m{fill:#ced4da}
.strip rect.l{fill:#e8590c}
.strip rect.ku,.swatch.ku{fill:#4dabf7;background:#4dabf7}.strip rect.ka,.swatch.ka{
fill:#868e96;background:#868e96}.strip rect.kt,.swatch.kt{fill:#ced4da;background:#ced4da}
.strip rect.kc,.swatch.kc{fill:#9775fa;background:#9775fa}.strip rect.kr,.swatch.kr{
fill:#69db7c;background:#69db7c}.strip rect.ko,.swatch.ko{fill:#e9ecef;background:#e9ecef}
.swatch{display:inline-block;width:9px;height:9px;margin:0 3px 0 8px}
.swatch.l{background:#e8590c}
"""

# The page's only script: reads the JSON blob, renders one page of the table at a time.
# Data reaches the DOM through textContent and attributes only, never as markup.
_SCRIPT: Final = """
(function () {
"use strict";
var data = JSON.parse(document.getElementById("report-data").textContent);
var runs = data.runs, total = runs.id.length, pageRows = data.pageRows;
var SVG = "http://www.w3.org/2000/svg";
var idLower = runs.id.map(function (s) { return s.toLowerCase(); });
var excerptLower = data.excerpts.map(function (s) { return s.toLowerCase(); });
var fileLower = data.files.map(function (s) { return s.toLowerCase(); });
var messageKinds = runs.kinds;
var hasTokens = runs.tokens.some(function (t) { return t !== null; });
var state = {key: hasTokens ? "tokens" : "wasted", dir: -1, text: "", kind: 0, page: 0};
var rows = [], selected = -1;
var tbody = document.querySelector("#runs tbody");
var status = document.getElementById("status");
var detail = document.getElementById("detail");
var format = new Intl.NumberFormat("en-US", {maximumFractionDigits: 0});
var naturally = new Intl.Collator("en", {numeric: true});

function key(name) {
  if (name === "excerpt") { return function (i) { return data.excerpts[runs.excerpt[i]]; }; }
  var column = runs[name];
  return function (i) { return column[i]; };
}
function select() {
  var text = state.text, kind = state.kind, found = [];
  for (var i = 0; i < total; i++) {
    if (kind && runs.kind[i] !== kind) { continue; }
    if (text && idLower[i].indexOf(text) < 0 && excerptLower[runs.excerpt[i]].indexOf(text) < 0
        && fileLower[runs.file[i]].indexOf(text) < 0) { continue; }
    found.push(i);
  }
  var get = key(state.key), dir = state.dir;
  found.sort(function (a, b) {
    var x = get(a), y = get(b);
    if (x === y) { return a - b; }
    if (x === null) { return 1; }
    if (y === null) { return -1; }
    // Ids and excerpts with numbers in them read as a person counts: run-2 before run-10
    // (text order put every run-1x between run-1 and run-2); texts the collation holds
    // equal ("07" and "7") keep the order of their UTF-16 code units.
    var order = typeof x === "string" ? naturally.compare(x, y) : 0;
    return (order || (x < y ? -1 : 1)) * dir;
  });
  rows = found;
  state.page = 0;
}
function strip(i, width, height) {
  // The loop's own span: to the run's end for the default scan's loop, and for a loop
  // found anywhere (--anywhere's records) its loop_messages alone.
  var messages = runs.messages[i], start = runs.start[i];
  var end = Math.min(start + runs.wasted[i], messages);
  var svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "strip");
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  function rect(x, w, css, h, y) {
    var r = document.createElementNS(SVG, "rect");
    r.setAttribute("x", x); r.setAttribute("y", y || 0);
    r.setAttribute("width", Math.max(w, 0.5)); r.setAttribute("height", h || height);
    r.setAttribute("class", css);
    svg.appendChild(r);
  }
  var cell = width / Math.max(messages, 1), kinds = messageKinds[i] || "";
  if (cell >= 3 && kinds.length === messages) {
    for (var m = 0; m < messages; m++) {
      rect(m * cell, cell - 1, "k" + kinds.charAt(m), height - 4);
    }
    rect(start * cell, (end - start) * cell - 1, "l", 3, height - 3);
  } else if (cell >= 3) {
    for (var n = 0; n < messages; n++) {
      rect(n * cell, cell - 1, n >= start && n < end ? "l" : "m");
    }
  } else {
    rect(0, width, "m");
    rect(start * cell, (end - start) * cell, "l");
  }
  var title = document.createElementNS(SVG, "title");
  title.textContent = messages + " messages; loop from message " + start +
    (end < messages ? " to " + (end - 1) : "");
  svg.appendChild(title);
  return svg;
}
function cell(tr, text, css) {
  var td = document.createElement("td");
  td.textContent = text;
  if (css) { td.className = css; }
  tr.appendChild(td);
  return td;
}
function kindBadge(code) {
  var span = document.createElement("span");
  span.className = "kind k" + code;
  span.textContent = data.kinds[code - 1];
  return span;
}
function render() {
  var first = state.page * pageRows, last = Math.min(rows.length, first + pageRows);
  var fragment = document.createDocumentFragment();
  for (var r = first; r < last; r++) {
    var i = rows[r], tr = document.createElement("tr");
    tr.dataset.row = i;
    tr.tabIndex = 0;  // (its details open from the keyboard too: Enter or Space)
    if (i === selected) { tr.className = "selected"; }
    cell(tr, runs.id[i], "rid");
    cell(tr, "").appendChild(kindBadge(runs.kind[i]));
    cell(tr, format.format(runs.start[i]), "n");
    cell(tr, format.format(runs.period[i]), "n");
    cell(tr, format.format(runs.reps[i]), "n");
    cell(tr, format.format(runs.wasted[i]), "n");
    cell(tr, runs.tokens[i] === null ? "n/a" : format.format(runs.tokens[i]), "n");
    cell(tr, "").appendChild(strip(i, 160, 12));
    cell(tr, data.excerpts[runs.excerpt[i]], "excerpt");
    fragment.appendChild(tr);
  }
  tbody.replaceChildren(fragment);
  status.textContent = rows.length ? "runs " + format.format(first + 1) + "\\u2013" +
    format.format(last) + " of " + format.format(rows.length) +
    (rows.length < total ? " (filtered from " + format.format(total) + ")" : "")
    : (total ? "no looping run matches" : "no run loops");
  document.getElementById("first").disabled = state.page === 0;
  document.getElementById("prev").disabled = state.page === 0;
  document.getElementById("next").disabled = last >= rows.length;
  document.getElementById("last").disabled = last >= rows.length;
  document.querySelectorAll("#runs th[data-key]").forEach(function (th) {
    if (th.dataset.key === state.key) {
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
    } else { th.removeAttribute("aria-sort"); }
  });
}
function show(i) {
  selected = i;
  detail.replaceChildren();
  var h = document.createElement("h3");
  h.textContent = runs.id[i];
  var where = document.createElement("p");
  where.textContent = data.files[runs.file[i]] + ", line " + runs.line[i] + ": " +
    runs.messages[i] + " messages; the loop starts at message " + runs.start[i] +
    " (counted from 0, as the records count)" +
    " and repeats " + runs.reps[i] + " times (period " + runs.period[i] + "), " +
    runs.wasted[i] + " messages" + (runs.tokens[i] === null ? "" :
    ", " + format.format(runs.tokens[i]) + " tokens") + " wasted.";
  var pre = document.createElement("pre");
  pre.textContent = data.excerpts[runs.excerpt[i]];
  detail.append(h, kindBadge(runs.kind[i]), where,
                strip(i, Math.min(1000, Math.max(200, runs.messages[i] * 8)), 20), pre);
  detail.hidden = false;
}
document.querySelectorAll("#runs th[data-key] button").forEach(function (button) {
  button.addEventListener("click", function () {
    var name = button.parentNode.dataset.key;
    if (state.key === name) { state.dir = -state.dir; }
    else { state.key = name; state.dir = (name === "id" || name === "excerpt") ? 1 : -1; }
    select(); render();
  });
});
document.getElementById("filter").addEventListener("input", function (event) {
  state.text = event.target.value.toLowerCase(); select(); render();
});
document.getElementById("kind-filter").addEventListener("change", function (event) {
  state.kind = Number(event.target.value); select(); render();
});
document.getElementById("prev").addEventListener("click", function () {
  state.page -= 1; render();
});
document.getElementById("next").addEventListener("click", function () {
  state.page += 1; render();
});
document.getElementById("first").addEventListener("click", function () {
  state.page = 0; render();
});
document.getElementById("last").addEventListener("click", function () {
  state.page = Math.max(0, Math.ceil(rows.length / pageRows) - 1); render();
});
function open(tr) {
  show(Number(tr.dataset.row)); render();
  var again = tbody.querySelector('tr[data-row="' + tr.dataset.row + '"]');
  if (again) { again.focus(); }  // (the row drawn anew keeps the focus)
}
tbody.addEventListener("click", function (event) {
  var tr = event.target.closest("tr");
  if (tr) { open(tr); }
});
tbody.addEventListener("keydown", function (event) {
  var tr = event.target.closest("tr");
  if (tr && (event.key === "Enter" || event.key === " ")) {
    event.preventDefault(); open(tr);
  }
});
select(); render();
document.body.dataset.renderMs = String(Math.round(performance.now()));
document.body.dataset.ready = "1";
})();
"""
