"""Continuation planning: finish a draft that no longer fits the context window.

A small model that stops half-way through a long file cannot be asked to rewrite the whole
file once the draft plus its own rewrite exceed the context window; every "continue" is then
refused. This module plans the alternative: send only the draft's tail, let the model write
the remainder, and join the remainder onto the draft in code.

Messages follow vthread's message shape: a ``dict`` with a ``"type"`` (``"system"`` or
``"user"``) and a ``"text"``, typed here as :class:`Message`; :func:`plan_continuation` given
a chat ``format`` writes its own as chat messages (``"role"`` and ``"content"``), so that the
plan's messages are all in the harness's format.

Every function is pure and uses only the standard library, except that
:func:`plan_continuation` reads its numeric options by vthread's option rule, counts its
estimator's answers by vthread's token-figure rule and fits a conversation ``history`` with
:func:`vthread.build_thread` (all imported when first needed, so importing this module
brings no NumPy).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Final, Literal, TypedDict

__all__ = [
    "DEFAULT_COMPLETION_MARKER",
    "DEFAULT_MIN_TAIL_ROOM",
    "DEFAULT_REPLY_RESERVE",
    "DEFAULT_RESTART_PREFIXES",
    "DEFAULT_TAIL_LIMIT",
    "MAX_REQUEST_CHARS",
    "MIN_OVERLAP",
    "NEWLINE_JOIN_ENDINGS",
    "Budget",
    "Continuation",
    "ContinuationPlan",
    "Message",
    "append_continuation",
    "build_continuation_messages",
    "build_rewrite_messages",
    "continuation_tail",
    "extract_fragment",
    "is_multi_page_request",
    "plan_continuation",
]

DEFAULT_TAIL_LIMIT: Final = 1200
"""Characters of draft shown to the model in tail mode (H2 of docs/continuation.md: 1,200)."""

MIN_OVERLAP: Final = 12
"""Shortest repeated seam removed; shorter matches are too likely to be coincidence."""

MAX_REQUEST_CHARS: Final = 600
"""The original request is clipped to this many characters so the prompt stays bounded."""

DEFAULT_REPLY_RESERVE: Final = 128
"""Tokens added to the draft's size when judging whether a whole rewrite fits."""

DEFAULT_MIN_TAIL_ROOM: Final = 256
"""Reply room below which tail mode is refused: H2's pre-registered refutation bound."""

DEFAULT_COMPLETION_MARKER: Final = "</html>"
"""Text whose presence means the draft is finished; anything after it is dropped."""

DEFAULT_RESTART_PREFIXES: Final = ("<!doctype", "<html")
"""Openings (case-insensitive, after whitespace) that mean the model started over."""

NEWLINE_JOIN_ENDINGS: Final = frozenset(">;{}")
"""Draft endings after which an un-overlapped remainder goes on a new line."""

Mode = Literal["rewrite", "tail", "refuse"]
Rejection = Literal["restart", "empty"]


def _check_text(name: str, value: object) -> None:
    """Refuse a ``value`` that is not a ``str`` with a ``TypeError`` naming the argument and
    what it got (a ``None`` text failed deep inside with an ``AttributeError`` naming
    neither). An exact ``str`` costs one comparison."""
    if type(value) is not str and not isinstance(value, str):
        got = "None" if value is None else type(value).__name__
        raise TypeError(f"{name} must be a str, got {got}")


class Message(TypedDict):
    """One chat message in vthread's shape: ``{"type": "system" | "user", "text": str}``."""

    type: Literal["system", "user"]
    text: str


@dataclass(frozen=True, slots=True)
class Continuation:
    """The draft after joining one model reply onto it.

    ``added`` is exactly ``text[len(draft):]``; it is empty when the reply was rejected, in
    which case ``text`` is the draft unchanged and ``rejected`` says why. ``overlap`` is how
    many leading characters of the fragment repeated the draft's end and were dropped.
    """

    text: str
    complete: bool
    added: str
    overlap: int = 0
    rejected: Rejection | None = None


@dataclass(frozen=True, slots=True)
class Budget:
    """Token arithmetic for one way of continuing: prompt size, reply room and need."""

    prompt_tokens: int
    reply_room: int
    needed: int

    @property
    def fits(self) -> bool:
        """Whether the reply room covers what this mode needs."""
        return self.reply_room >= self.needed


@dataclass(frozen=True, slots=True)
class ContinuationPlan:
    """What to send to finish a draft, or why nothing can be sent.

    ``prompt_tokens``, ``reply_room`` and ``needed`` describe the chosen mode; for a refusal
    they describe tail mode when it was considered, else the rewrite. ``rewrite`` and ``tail``
    keep both measurements (``tail`` is ``None`` when tail mode was not considered).
    ``messages`` is empty for a refusal; ``explanation`` always states the numbers. With a
    ``history``, ``messages`` holds the kept part of it between the planner's system and user
    messages (copies carrying their usage, as :func:`vthread.build_thread` returns them), and
    the chosen mode's ``prompt_tokens`` and ``reply_room`` count it.
    """

    mode: Mode
    prompt_tokens: int
    reply_room: int
    needed: int
    explanation: str
    messages: tuple[Mapping[str, Any], ...]
    rewrite: Budget
    tail: Budget | None


# ---------------------------------------------------------------------------------------
# Multi-page requests
# ---------------------------------------------------------------------------------------

_HYPHEN: Final = r"[-\u2010\u2011\u2012\u2013\s]?"
_ONES: Final = r"two|three|four|five|six|seven|eight|nine"
_TEENS: Final = r"ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_TENS: Final = r"twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
# Digits must say two or more, and must not be the fraction of "1.5 pages".
_COUNT: Final = (
    r"(?:(?<![\d.,])(?:[2-9]|[1-9]\d+)\+?"
    rf"|(?:{_TENS})(?:{_HYPHEN}(?:one|{_ONES}))?|{_TEENS}|{_ONES}"
    r"|(?:half\s+)?a\s+dozen|dozens?(?:\s+of)?|a\s+couple(?:\s+of)?|a\s+few)"
)
# Words allowed between a count and "pages": adjectives only, so "2 sentences on the pages"
# is not a count of pages.
_PAGE_ADJ: Final = (
    r"(?:different|separate|distinct|individual|unique|linked|interlinked|static|html"
    r"|web|content|more|additional|extra|sub|main|simple|basic|responsive|standalone|new)"
)
_SITE_NOUN: Final = (
    r"(?:web[\s-]?sites?|sites?|web[\s-]?apps?|apps?|web\s+applications?"
    r"|web[\s-]?pages?|home[\s-]?pages?)"
)
# "Web context": a site noun, or a word that only makes sense for linked web pages.
_WEB_CONTEXT: Final = re.compile(
    rf"\b(?:{_SITE_NOUN}|html|css|nav(?:bar|igation)?|nav\s+bar|(?:inter)?linked|hyperlinks?)\b",
    re.IGNORECASE,
)
# "10 pages of notes", "different pages of the book": a quantity of writing, not of pages.
_DOC_NOUN: Final = (
    r"(?:notes?|text|writing|essays?|prose|reports?|stor(?:y|ies)|novels?|books?|documents?"
    r"|documentation|papers?|thesis|articles?|diar(?:y|ies)|journals?|manuscripts?"
    r"|transcripts?|pdfs?|slides?|content|copy|poems?|poetry|letters?|forms?|scripts?)"
)
_NOT_WRITING: Final = (
    rf"(?!\s+of\s+(?:(?:my|the|an?|your|our|his|her|their|this|that|these|those|some)\s+)?"
    rf"(?:\w+\s+)?{_DOC_NOUN}\b)"
)
# Cues whose wording alone says "several distinct pages".
_STANDALONE_CUES: Final = re.compile(
    "|".join(
        (
            rf"\bmulti{_HYPHEN}pages?\b(?!\s+{_DOC_NOUN}\b)",
            r"\b(?:separate|different|distinct|individual|multiple|several|various|numerous"
            rf"|many)\s+(?:{_PAGE_ADJ}\s+){{0,2}}(?:web\s*)?pages\b{_NOT_WRITING}",
            r"\b(?:a|one|its\s+own|their\s+own)\s+(?:(?:separate|dedicated|different)\s+)?"
            r"page\s+(?:for|per|about|on)\s+(?:each|every)\b",
            r"\b(?:a|one)\s+page\s+per\b",
            r"\bpages\s+(?:for|per|about|on)\s+(?:each|every)\b",
            r"\b(?:gets?|has|have|with|on|in)\s+(?:its|their)\s+own\s+(?:\w+\s+)?page\b",
        )
    ),
    re.IGNORECASE,
)
# Counts are ambiguous ("write 10 pages about dogs" is an essay): they need web context.
_COUNT_CUES: Final = re.compile(
    rf"\b{_COUNT}\s+(?:{_PAGE_ADJ}\s+){{0,3}}(?:web\s*)?pages\b{_NOT_WRITING}",
    re.IGNORECASE,
)
# "10-page website", "ten page site": the noun must follow, so "a 10-page essay" stays silent.
_SIZED_SITE: Final = re.compile(
    rf"\b{_COUNT}{_HYPHEN}pages?\s+(?:\w+\s+){{0,2}}?{_SITE_NOUN}\b",
    re.IGNORECASE,
)
_PAGE_NAME: Final = (
    r"(?:home|about(?:\s+us)?|contact(?:\s+us)?|blog|gallery|pricing|faq|shop|store|services"
    r"|team|portfolio|login|sign[\s-]?up|products?|careers|events|news|menu)"
)
# "home, about and contact pages". A list of any length ends in its last two names, and a
# search only asks whether one exists, so one separator is the whole test: written with a
# repeated "(separator name)+", every name of a long list that is not followed by "pages"
# re-read the rest of the list (40 KB of "home, " took 8 s).
_NAMED_PAGE_LIST: Final = re.compile(
    rf"\b{_PAGE_NAME}\s*(?:,|/|&|\band\b|,\s*and\b)\s*{_PAGE_NAME}\b\s+pages\b",
    re.IGNORECASE,
)
_NAMED_PAGE: Final = re.compile(rf"\b({_PAGE_NAME})[\s-]?page\b", re.IGNORECASE)


def is_multi_page_request(text: str) -> bool:
    """Answer whether *text* asks for several pages, which one draft cannot deliver.

    A guard in front of generation: a request for ten linked pages sent to a small model
    yields one truncated file, so the caller should split or decline it instead. Three
    families of cue are recognised, case-insensitively:

    * wording that alone means several pages: "multi-page"/"multipage", "separate /
      different / multiple / several pages", "a page for each …", "one page per …", "each
      breed gets its own page", "home, about and contact pages", or two distinct named pages
      ("a home page and an about page");
    * a count of pages ("10 pages", "ten pages", "a dozen pages") when the text also has web
      context (a site noun — site, website, web site, web app, webapp, app, web page — or
      html, css, navigation, linked);
    * a sized site: "10-page website", "ten page site" (the site noun must follow).

    A count or qualifier followed by "of <writing>" ("10 pages of notes", "different pages
    of the book") is a quantity of writing and never fires, nor does a count with no web
    context ("write 10 pages about dogs"): writing ten pages of an essay is one draft. It is
    silent on single pages ("a single page", "one-page site", "landing page") and on page
    references ("page 2 of my notes", "on page 10").

    Complexity: O(n) in the text length: a handful of compiled patterns, each of whose match
    attempts reads a few words and the whitespace between them (a growth check in
    ``benchmarks/test_bench_patterns.py`` holds it).

    >>> is_multi_page_request("use 10 dog breeds, 10 different pages, use css")
    True
    >>> is_multi_page_request("page 2 of my notes")
    False
    """
    _check_text("text", text)
    if _STANDALONE_CUES.search(text) or _SIZED_SITE.search(text):
        return True
    if _NAMED_PAGE_LIST.search(text):
        return True
    named = {" ".join(m.group(1).lower().split()) for m in _NAMED_PAGE.finditer(text)}
    if len(named) >= 2:
        return True
    return bool(_COUNT_CUES.search(text) and _WEB_CONTEXT.search(text))


# ---------------------------------------------------------------------------------------
# Tail and join
# ---------------------------------------------------------------------------------------


def continuation_tail(draft: str, limit: int = DEFAULT_TAIL_LIMIT) -> str:
    """Answer which end of *draft* to show the model: the last ≤ *limit* chars from a line start.

    Tail mode sends only this, so the prompt is bounded however long the draft grows.
    Starting on a line start gives the model whole lines to continue from. A draft no longer
    than *limit* is returned whole. When the window holds no line start (a minified file, or
    one very long last line), the bound wins over alignment: the last *limit* characters are
    returned mid-line, because an empty tail would give the model nothing to continue from.

    Complexity: O(limit).

    >>> continuation_tail("<ul>\\n<li>one</li>\\n<li>tw", limit=20)
    '<li>one</li>\\n<li>tw'
    """
    _check_text("draft", draft)
    # A float (even 1.5 or NaN) would fail as a string index with a message naming nothing.
    if isinstance(limit, bool) or not hasattr(type(limit), "__index__"):
        raise TypeError(f"limit must be an int, got {type(limit).__name__}")
    limit = operator.index(limit)
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if len(draft) <= limit:
        return draft
    start = len(draft) - limit
    if draft[start - 1] == "\n":
        return draft[start:]
    # Only a newline with text after it starts a line; one at the very end would give "".
    newline = draft.find("\n", start, len(draft) - 1)
    if newline == -1:
        return draft[start:]
    return draft[newline + 1 :]


_FENCE_OPEN: Final = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*(?:\n|\Z)", re.MULTILINE)


def extract_fragment(reply: str) -> str:
    """Answer which part of a model *reply* is code: the first fenced block, else the reply.

    Models wrap code in a fence (```` ```html ````, any info string, or ``~~~``) and add prose
    around it; only the body belongs in the draft. The closing fence needs at least as many
    fence characters as the opening one. A reply cut off before its closing fence still
    yields everything after the opening line, since that is exactly what a truncated
    continuation looks like. One newline (``\\n`` or ``\\r\\n``) before the closing fence is the
    fence's, not the code's, and is dropped; a closing fence line may end in ``\\r``, so a CRLF
    reply closes as an LF one does. An unfenced reply is returned unchanged.

    Complexity: O(n) in the reply length.

    >>> extract_fragment("Here you go:\\n```html\\n</p>\\n</body>\\n```\\nDone.")
    '</p>\\n</body>'
    """
    _check_text("reply", reply)
    opening = _FENCE_OPEN.search(reply)
    if opening is None:
        return reply
    fence = opening.group(1)
    # ``$`` stops before "\n" only, so a CRLF reply's "\r" is allowed before it explicitly.
    closing = re.compile(
        rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*\r?$", re.MULTILINE
    ).search(reply, opening.end())
    if closing is None:
        return reply[opening.end() :]
    body = reply[opening.end() : closing.start()]
    return body.removesuffix("\n").removesuffix("\r")


def _prefix_function(pattern: str) -> list[int]:
    """Answer, for each prefix of *pattern*, its longest proper border (KMP failure table)."""
    table = [0] * len(pattern)
    border = 0
    for i in range(1, len(pattern)):
        while border and pattern[i] != pattern[border]:
            border = table[border - 1]
        if pattern[i] == pattern[border]:
            border += 1
        table[i] = border
    return table


def _longest_overlap(draft: str, fragment: str) -> int:
    """Answer the largest k with ``draft.endswith(fragment[:k])``, in O(len) via KMP."""
    size = min(len(draft), len(fragment))
    if size == 0:
        return 0
    pattern = fragment[:size]
    table = _prefix_function(pattern)
    matched = 0
    for char in draft[-size:]:
        if matched == size:
            matched = table[matched - 1]
        while matched and pattern[matched] != char:
            matched = table[matched - 1]
        if pattern[matched] == char:
            matched += 1
    return matched


def _longest_overlap_reference(draft: str, fragment: str) -> int:
    """Slow, obviously correct twin of :func:`_longest_overlap` for the property tests."""
    for size in range(min(len(draft), len(fragment)), 0, -1):
        if draft.endswith(fragment[:size]):
            return size
    return 0


def _check_prefixes(prefixes: Sequence[str]) -> None:
    """Reject a bare string, which would be read as one prefix per character ("<html" as
    "<", "h", …, so every tag would look like a restart), an iterable that is no sequence
    (a generator, consumed by this check, left no prefix to test: no restart was ever
    found), as ``history`` refuses one, and an empty prefix, which every fragment opens
    with."""
    if isinstance(prefixes, (str, bytes, bytearray)):
        raise TypeError(f"restart_prefixes must be a sequence of strings, got a single "
                        f"{type(prefixes).__name__}; wrap it in a tuple")
    if not isinstance(prefixes, Sequence):
        raise TypeError(f"restart_prefixes must be a sequence of strings (a tuple, a list), "
                        f"got {type(prefixes).__name__}")
    for prefix in prefixes:
        if not isinstance(prefix, str):
            raise TypeError(f"restart_prefixes must hold strings, got "
                            f"{type(prefix).__name__}")
        if not prefix:
            raise ValueError("restart_prefixes must not hold an empty string (every fragment "
                             "would be a restart)")


def _check_marker(marker: str) -> None:
    """Reject an empty marker, which every text contains: every draft would be complete (and
    a joined one cut just past its old end)."""
    if not isinstance(marker, str):
        raise TypeError(f"completion_marker must be a str, got {type(marker).__name__}")
    if not marker:
        raise ValueError("completion_marker must not be empty (every draft would be complete)")


def _opens_with(text: str, prefixes: Sequence[str]) -> bool:
    opening = text.lstrip()[: max((len(p) for p in prefixes), default=0)].lower()
    return any(opening.startswith(prefix.lower()) for prefix in prefixes)


def _is_complete(text: str, marker: str) -> bool:
    return re.search(re.escape(marker), text, re.IGNORECASE) is not None


def append_continuation(
    draft: str,
    reply: str,
    *,
    completion_marker: str = DEFAULT_COMPLETION_MARKER,
    restart_prefixes: Sequence[str] = DEFAULT_RESTART_PREFIXES,
    min_overlap: int = MIN_OVERLAP,
) -> Continuation:
    """Answer what the draft becomes once the model's *reply* is joined onto its end.

    Tail mode shows the model only the end of the draft, so the model's answer is a fragment
    to append, not a file to replace. The rules, in order:

    1. The fragment is the first fenced block of the reply, or the raw reply
       (:func:`extract_fragment`).
    2. The longest overlap of at least *min_overlap* characters between the draft's end and
       the fragment's start is removed, since models often repeat the last line they saw.
       *min_overlap* follows the library's option rule: a value that is not finite (None,
       NaN, an infinity) means the default, a fraction rounds down, a negative is a
       ``ValueError`` and a non-number a ``TypeError``, each naming the option.
    3. What remains is rejected, leaving the draft unchanged, when it is a restart (opens,
       after whitespace, with one of *restart_prefixes*, case-insensitively) or empty (only
       whitespace). The restart check runs after the overlap is removed so that a model
       echoing a short draft in full (which then opens with ``<!doctype``) and continuing it
       is accepted; a genuine restart shares no 12-character seam with the draft's end.
       *restart_prefixes* is a sequence of non-empty strings; a bare string, or an
       iterable that is no sequence (a generator), is a ``TypeError``.
    4. With no overlap, and only then, a draft ending on ``>``, ``;``, ``{`` or ``}`` is
       joined with a newline; otherwise the fragment is appended directly, so a draft cut
       mid-token ("<h2>Dach" + "shund</h2>") is mended.
    5. The draft is complete when *completion_marker* (a non-empty string) is present
       (case-insensitively); text after the first marker that reaches past the old draft's
       end is dropped.

    Complexity: O(len(draft) + len(reply)).

    >>> result = append_continuation("<p>A dachshund is a long dog", "is a long dog.</p>")
    >>> result.text, result.added, result.overlap
    ('<p>A dachshund is a long dog.</p>', '.</p>', 13)
    """
    _check_text("draft", draft)
    _check_text("reply", reply)
    _check_prefixes(restart_prefixes)
    _check_marker(completion_marker)
    min_overlap = _count_option("min_overlap", min_overlap, MIN_OVERLAP)
    fragment = extract_fragment(reply)
    overlap = _longest_overlap(draft, fragment)
    if overlap < min_overlap:
        overlap = 0
    addition = fragment[overlap:]
    rejected: Rejection | None = None
    if _opens_with(addition, restart_prefixes):
        rejected = "restart"
    elif not addition.strip():
        rejected = "empty"
    if rejected is not None:
        complete = _is_complete(draft, completion_marker)
        return Continuation(draft, complete, "", overlap, rejected)
    separator = "\n" if overlap == 0 and draft[-1:] in NEWLINE_JOIN_ENDINGS else ""
    text = draft + separator + addition
    # Search from the seam so a marker split across draft and fragment still counts.
    seam = max(0, len(draft) - len(completion_marker) + 1)
    marker = re.compile(re.escape(completion_marker), re.IGNORECASE).search(text, seam)
    if marker is not None:
        text = text[: marker.end()]
    complete = marker is not None or _is_complete(draft, completion_marker)
    return Continuation(text, complete, text[len(draft) :], overlap)


# ---------------------------------------------------------------------------------------
# Prompts and planning
# ---------------------------------------------------------------------------------------

_CONTINUE_SYSTEM: Final = "\n".join(
    (
        "You are continuing a code file that was cut off before it was finished.",
        "You see only the end of the file; its beginning exists and must not be repeated.",
        "Reply with one fenced code block holding only the text that comes next, starting "
        "exactly where the file stops, even mid-word or mid-tag.",
        "Do not restart the file; keep the existing names, classes and indentation.",
        "Finish the file, close every open element, and stop.",
    )
)
_REWRITE_SYSTEM: Final = "\n".join(
    (
        "You are finishing a code file that was cut off before it was finished.",
        "Reply with one fenced code block holding the complete file, first line to last.",
        "Keep everything already written; add what is missing and close every open element.",
    )
)


def _clip_request(request: str) -> str:
    _check_text("request", request)
    request = request.strip()
    if len(request) <= MAX_REQUEST_CHARS:
        return request
    return request[: MAX_REQUEST_CHARS - 1] + "\u2026"


def _fenced(code: str) -> str:
    # A fence longer than any backtick run inside the code cannot be closed by the code.
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code}\n{fence}"


def build_continuation_messages(request: str, tail: str) -> list[Message]:
    """Answer the tail-mode prompt: a short system prompt, the request, and the draft's tail.

    The request is clipped to 600 characters and the tail is at most what
    :func:`continuation_tail` returns, so the prompt is bounded whatever the draft's length:
    this is what keeps reply room from shrinking as the draft grows.

    Complexity: O(len(request) + len(tail)).

    >>> [m["type"] for m in build_continuation_messages("a dog site", "<h2>Dach")]
    ['system', 'user']
    """
    _check_text("tail", tail)
    user = (
        f"Original request:\n{_clip_request(request)}\n\n"
        "The draft so far is too long to show; it ends with:\n"
        f"{_fenced(tail)}\n\n"
        "Continue from exactly where it stops."
    )
    return [{"type": "system", "text": _CONTINUE_SYSTEM}, {"type": "user", "text": user}]


def build_rewrite_messages(request: str, draft: str) -> list[Message]:
    """Answer the whole-rewrite prompt: a short system prompt, the request, the whole draft.

    The twin of :func:`build_continuation_messages`; its size grows with the draft, which is
    why :func:`plan_continuation` measures it before choosing a mode.

    Complexity: O(len(request) + len(draft)).

    >>> build_rewrite_messages("a dog site", "<h2>Dach")[1]["text"].endswith("complete file.")
    True
    """
    _check_text("draft", draft)
    user = (
        f"Original request:\n{_clip_request(request)}\n\n"
        f"The unfinished draft:\n{_fenced(draft)}\n\n"
        "Reply with the complete file."
    )
    return [{"type": "system", "text": _REWRITE_SYSTEM}, {"type": "user", "text": user}]


def _tokens(messages: Sequence[Mapping[str, Any]], estimate: Callable[[Any], float],
            what: str) -> int:
    """The prompt size of ``messages`` (named ``what`` in an error): their estimates counted
    by build_thread's rule, so that one plan reads the estimator one way for its own prompts
    and for the history: a figure that is not a finite number >= 0 (NaN, an infinity, a
    negative, None) counts as 0, an object no JSON estimator can return is a TypeError. The
    figures are summed with ``math.fsum`` and rounded up once (exactly, as an int, when the
    sum passes the largest double, where ``math.ceil`` of a float would overflow)."""
    from vthread._messages import estimate_figure  # brings NumPy: imported on first plan

    figures = []
    for index, message in enumerate(messages):
        answer = estimate(message)
        try:
            figures.append(estimate_figure(answer, index))
        except TypeError as error:
            raise TypeError(f"{error} (messages: {what})") from None
    try:
        return math.ceil(math.fsum(figures))
    except OverflowError:
        return math.ceil(sum(map(Fraction, figures)))


def plan_continuation(
    draft: str,
    request: str,
    *,
    context_tokens: int,
    estimate: Callable[[Any], float],
    reply_reserve: int = DEFAULT_REPLY_RESERVE,
    min_tail_room: int = DEFAULT_MIN_TAIL_ROOM,
    tail_limit: int = DEFAULT_TAIL_LIMIT,
    completion_marker: str = DEFAULT_COMPLETION_MARKER,
    history: Sequence[Mapping[str, Any]] = (),
    keep_system: bool = False,
    pair_safe: bool = False,
    start_on: str | None = None,
    keep_first: int = 0,
    format: str = "native",
) -> ContinuationPlan:
    """Answer how to finish *draft* within *context_tokens*: rewrite, tail, or refuse.

    *estimate* maps one message to its token count; prompt size is the (rounded-up) sum over
    the messages, and reply room is ``context_tokens - prompt_tokens``. Its answers are
    counted as :func:`vthread.build_thread` counts them, for the planner's messages as for
    the history: one that is not a finite number >= 0 (NaN, an infinity, a negative, None)
    counts as 0, and an object no JSON estimator can return is a ``TypeError``.

    * Rewrite: the prompt is :func:`build_rewrite_messages` (system prompt, request clipped
      to 600 characters, whole draft). The reply must hold the whole draft again, so it fits
      when reply room ≥ ``estimate({"type": "user", "text": draft}) + reply_reserve``.
    * Tail, only when the draft lacks *completion_marker* (a finished draft cannot be
      continued, only rewritten): the prompt is :func:`build_continuation_messages` with
      :func:`continuation_tail`. The remainder's length is unknown, so the test is a floor:
      reply room ≥ ``max(min_tail_room, reply_reserve)``. The default floor of 256 tokens is
      the bound pre-registered as too small to be useful (H2 of docs/continuation.md); 128 (the
      reserve alone) would let a reply spend its whole budget on a repeated seam.
    * Refuse: neither fits; ``explanation`` gives both sets of numbers.

    *history*, the conversation so far (any messages), is optional context: the mode is
    chosen without it, so it never turns a plan into a refusal, and it gets only the room the
    chosen mode leaves over (``reply_room - needed``). Its newest part that fits that room is
    placed between the planner's system and user messages, fitted by
    :func:`vthread.build_thread` with *keep_system*, *pair_safe*, *start_on* and *keep_first*
    (see there: the harness's system prompt kept, no tool reply without its call, the kept
    part starting on a given type, the task statement pinned). A ``ValueError`` from
    ``build_thread`` (the messages kept first alone exceed the room) names the room the plan
    had left. All five keywords change nothing when the plan is a refusal or *history* is
    empty, but are checked as ``build_thread`` checks them all the same (a harness's first
    turn has no history: a wrong option failed only on a later turn).

    *format* names the history's message format as for :func:`vthread.build_thread`:
    ``"native"`` (the default), a chat format of :data:`vthread.adapters.FORMATS`
    (``"openai"``, ``"anthropic"``, ...) or ``"auto"`` (detected from the history; a chat's
    when it is empty). In a chat format the history is fitted as ``build_thread`` fits it in
    that format (its system messages, tool pairs and ``start_on`` types read from their
    translation, the kept ones returned as the caller's own messages) and the planner's own
    messages are chat messages too: ``{"role": "system", "content": ...}`` and
    ``{"role": "user", "content": ...}``, which *estimate* is given, as it is the draft as
    ``{"role": "user", "content": draft}``.
    (An Anthropic request takes its system prompts apart, in ``system``.)

    *context_tokens* must be a finite number >= 1 and is rounded down to whole tokens.
    *reply_reserve*, *min_tail_room* and *tail_limit* follow the library's option rule: a
    value that is not finite (None, NaN, an infinity) means the default, a fraction rounds
    down, a negative is a ``ValueError`` and a non-number a ``TypeError``, each naming the
    option. *completion_marker* must be a non-empty string. A *draft* or *request* that is
    not a ``str``, an *estimate* that is not callable and a *history* that is no sequence of
    messages (a generator, a string, one message) are each a ``TypeError`` naming it.

    Complexity: O(len(draft) + len(history)) plus the cost of *estimate* on three messages
    (the rewrite prompt's two and the draft), five when tail mode is considered (the tail
    prompt's two more), and on each history message that carries no usage of its own.

    >>> plan = plan_continuation("<p>" * 3000, "a page", context_tokens=4096,
    ...                          estimate=lambda m: len(m["text"]) / 4)
    >>> plan.mode, plan.rewrite.fits
    ('tail', False)
    """
    _check_text("draft", draft)
    _check_text("request", request)
    if not callable(estimate):
        got = "None" if estimate is None else type(estimate).__name__
        raise TypeError(f"estimate must be a function of one message, got {got}")
    if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Sequence):
        raise TypeError(f"history must be a sequence of messages (a list, a tuple), got "
                        f"{type(history).__name__}")
    from vthread._messages import check_messages

    check_messages(history, "history")  # (named as the caller's argument)
    format = _history_format(history, format)
    _check_history_options(estimate, keep_system, pair_safe, start_on, keep_first, format)
    plan = _plan_without_history(draft, request, context_tokens, estimate, reply_reserve,
                                 min_tail_room, tail_limit, completion_marker,
                                 format not in ("native", "auto"))
    if plan.mode == "refuse" or not history:
        return plan
    return _with_history(plan, history, estimate, keep_system, pair_safe, start_on,
                         keep_first, format)


def _history_format(history: Sequence[Mapping[str, Any]], format: str) -> str:
    """The format the history is read in: ``format`` as given (checked here), or for
    ``"auto"`` the chat format found in it, so that ``build_thread`` translates it once;
    ``"auto"`` stays where it finds native messages (the history read as it is, the
    planner's own messages written as native ones). An empty history with ``"auto"`` is
    read as a chat's (``"openai"``: the planner's messages are ``{"role", "content"}``, as
    every chat API takes them): ``"auto"`` is a chat harness's word, and its first turn,
    or the one after a reset, has no history yet (its messages were native ones, which the
    API refuses and a chat estimator cannot read)."""
    from vthread.documents import checked_format, thread_format

    if checked_format(format) != "auto":
        return format
    if not history:
        return "openai"
    found = thread_format(list(history))
    return "auto" if found == "native" else found


def _as_chat(message: Message) -> dict[str, Any]:
    """A planner's message (a system or a user one) as a chat message."""
    return {"role": message["type"], "content": message["text"]}


def _with_history(plan: ContinuationPlan, history: Sequence[Mapping[str, Any]],
                  estimate: Callable[[Any], float], keep_system: bool, pair_safe: bool,
                  start_on: str | None, keep_first: int, format: str) -> ContinuationPlan:
    """``plan`` with the newest part of ``history`` that fits its spare room inserted."""
    spare = plan.reply_room - plan.needed
    fitted = _fitted(history, spare, estimate, keep_system, pair_safe, start_on, keep_first,
                     format, f" (the {plan.mode} plan leaves {spare:,} tokens of room for it)")
    tokens = math.ceil(fitted.tokens)
    # Messages kept first, whatever their cost: a pin, or a system message keep_system kept.
    pinned = keep_first > 0 or (keep_system and _is_system(history[0], format))
    system, user = plan.messages
    kept = len(fitted.messages)
    return replace(
        plan,
        prompt_tokens=plan.prompt_tokens + tokens,
        reply_room=plan.reply_room - tokens,
        explanation=f"{plan.explanation}; history: "
                    f"{'those kept first and ' if pinned else ''}the newest, "
                    f"{kept:,} of {len(history):,} messages ({tokens:,} tokens), fit the "
                    f"{spare:,} tokens left over",
        messages=(system, *fitted.messages, user),
    )


def _check_history_options(estimate: Callable[[Any], float], keep_system: bool,
                           pair_safe: bool, start_on: str | None, keep_first: int,
                           format: str) -> None:
    """The history's options checked whether or not there is history to fit, as
    ``build_thread`` checks them (the same errors, named as :func:`_fitted` names them): a
    harness's first turn has none, and a wrong option failed only on a later turn."""
    _fitted((), 0, estimate, keep_system, pair_safe, start_on, keep_first, format)


def _fitted(history: Sequence[Mapping[str, Any]], spare: int,
            estimate: Callable[[Any], float], keep_system: bool, pair_safe: bool,
            start_on: str | None, keep_first: int, format: str, room: str = "") -> Any:
    """:func:`vthread.build_thread` of ``history`` in ``spare`` tokens with the history's
    options, its errors named as the caller's ``history=`` (``room``: where the room is
    short, what the plan leaves). Of an empty history, the options' check alone."""
    from vthread.build import build_thread

    try:
        return build_thread(history, max_tokens=spare, estimate=estimate,
                            keep_system=keep_system, pair_safe=pair_safe, start_on=start_on,
                            keep_first=keep_first, format=format)
    except ValueError as error:
        # (named as the caller's argument; the room said where the room is what was short)
        said = room if "than max_tokens" in str(error) else ""
        raise ValueError(f"history: {error}{said}") from None
    except TypeError as error:
        # (an estimator's own error propagates as it is: a note says whose messages[i])
        if "messages[" in str(error):
            error.add_note("while fitting history= (messages[i] is history[i])")
        raise


def _is_system(message: Mapping[str, Any], format: str) -> bool:
    """Whether a history's first message is a system message, as ``build_thread`` reads it
    (in a chat format, by its translation's first message)."""
    from vthread._jsvalue import is_text

    if format != "native":
        from vthread.documents import native_messages

        native, _ = native_messages([message], format)
        return bool(native) and is_text(native[0].get("type"), "system")
    return is_text(message.get("type"), "system")


def _window(context_tokens: object) -> int:
    """``context_tokens`` as a whole number of tokens, rounded down so that a fractional
    window cannot leave room for a fraction of a token a fitted history would overrun. It
    has no default, so a value that is not finite (None, NaN, an infinity) is an error, not
    "unset"; a non-number is a TypeError."""
    from vthread._jsvalue import js_double, real_number

    number = None if context_tokens is None else real_number(context_tokens)
    if number is None and context_tokens is not None:
        raise TypeError(f"context_tokens must be a number, got {type(context_tokens).__name__}")
    if number is None or not math.isfinite(js_double(number)) or math.floor(number) < 1:
        raise ValueError(f"context_tokens must be a finite number >= 1, got {context_tokens!r}")
    return math.floor(number)


def _count_option(name: str, value: object, default: int) -> int:
    """An option with a default read by the library's option rule: a value that is
    not finite (None, NaN, an infinity) is unset, so the default; a fraction rounds down; a
    negative is a ValueError and a non-number a TypeError, each naming the option. (NaN
    passed ``value < 0`` unnoticed and then failed every comparison it met.)"""
    from vthread._options import real

    number = real(name, value)
    if number is None or not math.isfinite(number):
        return default
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return math.floor(number)


def _plan_without_history(draft: str, request: str, context_tokens: int,
                          estimate: Callable[[Any], float], reply_reserve: int,
                          min_tail_room: int, tail_limit: int,
                          completion_marker: str, chat: bool = False) -> ContinuationPlan:
    context_tokens = _window(context_tokens)
    reply_reserve = _count_option("reply_reserve", reply_reserve, DEFAULT_REPLY_RESERVE)
    min_tail_room = _count_option("min_tail_room", min_tail_room, DEFAULT_MIN_TAIL_ROOM)
    tail_limit = _count_option("tail_limit", tail_limit, DEFAULT_TAIL_LIMIT)
    _check_marker(completion_marker)

    shaped: Callable[[Message], Mapping[str, Any]] = _as_chat if chat else dict
    rewrite_messages = tuple(map(shaped, build_rewrite_messages(request, draft)))
    rewrite_prompt = _tokens(rewrite_messages, estimate, "the rewrite prompt")
    draft_tokens = _tokens([shaped({"type": "user", "text": draft})], estimate, "the draft")
    rewrite = Budget(rewrite_prompt, context_tokens - rewrite_prompt, draft_tokens + reply_reserve)
    rewrite_note = (
        f"a whole rewrite needs {rewrite.needed:,} tokens of reply room (draft "
        f"{draft_tokens:,} + reserve {reply_reserve:,}); its {rewrite.prompt_tokens:,}-token "
        f"prompt leaves {rewrite.reply_room:,} of {context_tokens:,}"
    )
    if rewrite.fits:
        return ContinuationPlan(
            "rewrite",
            rewrite.prompt_tokens,
            rewrite.reply_room,
            rewrite.needed,
            f"rewrite: {rewrite_note}",
            rewrite_messages,
            rewrite,
            None,
        )
    if _is_complete(draft, completion_marker):
        return ContinuationPlan(
            "refuse",
            rewrite.prompt_tokens,
            rewrite.reply_room,
            rewrite.needed,
            f"refused: {rewrite_note}; the draft already contains {completion_marker!r}, "
            "so there is nothing to continue",
            (),
            rewrite,
            None,
        )
    tail_messages = tuple(map(shaped, build_continuation_messages(
        request, continuation_tail(draft, tail_limit))))
    tail_prompt = _tokens(tail_messages, estimate, "the tail prompt")
    tail = Budget(tail_prompt, context_tokens - tail_prompt, max(min_tail_room, reply_reserve))
    tail_note = (
        f"tail continuation's {tail.prompt_tokens:,}-token prompt leaves {tail.reply_room:,}, "
        f"{'at least' if tail.fits else 'below'} the {tail.needed:,}-token floor"
    )
    if tail.fits:
        mode: Mode = "tail"
        explanation = f"tail: {rewrite_note}; {tail_note}"
        messages = tail_messages
    else:
        mode, explanation, messages = "refuse", f"refused: {rewrite_note}; {tail_note}", ()
    return ContinuationPlan(
        mode, tail.prompt_tokens, tail.reply_room, tail.needed, explanation, messages, rewrite, tail
    )
