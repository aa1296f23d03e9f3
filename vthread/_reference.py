"""The scalar reference: the production algorithms, written plainly, one message at a time.

Nothing here is fast. Each function follows the production algorithm step by step and
compares values by their canonical text (:func:`vthread._jsvalue.canonical`), never by a
hash, so that it can serve as the oracle that property tests hold the engine against, and as
the baseline that benchmarks measure it against.

An oracle is only worth something if it is independent of what it judges: the definitions it
shares with the engine (which objects are messages and activities, what a token figure
counts, the fixed thresholds) come from :mod:`vthread._messages`, and nothing here imports
the engine or the public modules built on it (``tests/test_layering.py`` checks both ways).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

from vthread._jsvalue import (
    ABSENT_FIELD,
    JS_WHITESPACE_CLASS,
    canonical,
    field,
    is_string,
    is_text,
    real_number,
    utf16_len,
)
from vthread._messages import (
    ABSENT,
    ACTIVITY_TAIL_MIN_LENGTH,
    ACTIVITY_TAIL_MIN_WITH_PAYLOAD,
    PROGRESS_MIN_ANSWERS,
    THREAD_TEXT_RUN_MESSAGES,
    Activity,
    Message,
    check_messages,
    estimate_figure,
    is_type,
    own_tokens,
    parse_activity,
    token_figure,
    token_total,
    tool_pairs,
    usage_tokens,
)
from vthread._options import (
    CycleOptions,
    GuardOptions,
    TextRunOptions,
    cycle_options,
    guard_options,
    text_run_options,
)
from vthread.textrun import text_units

Estimate = Callable[[Message], Any]
Trim = Callable[[dict[str, Any], float], Any]

# ---------------------------------------------------------------------------- build_thread


@dataclass(frozen=True, slots=True)
class ReferenceBuild:
    messages: list[dict[str, Any]]
    tokens: float


def build_thread(
    messages: object,
    *,
    max_tokens: float,
    estimate: Estimate | None = None,
    min_messages: float | None = 0,
    inclusive: bool | Trim | None = False,
) -> ReferenceBuild:
    annotated = _costed(check_messages(messages), estimate)
    figures = [message["usage"]["tokens"] for message in annotated]

    # Numbers of any real type, as the engine reads them (a Decimal NaN is NaN).
    floor = abs(_real(min_messages)) if min_messages is not None else 0.0
    limit = _real(max_tokens)
    taken: list[dict[str, Any]] = []
    total = 0.0
    for index in range(len(annotated) - 1, -1, -1):
        message, tokens = annotated[index], figures[index]
        within_floor = len(taken) + 1 <= floor
        if total + tokens > limit and not within_floor:
            if not inclusive:
                break
            if inclusive is True or not callable(inclusive):
                taken.append(message)
                total += tokens
                break
            room = limit - total
            if room > 0:
                trimmed = inclusive(message, room)
                if trimmed is None or trimmed is False:
                    break
                if not isinstance(trimmed, Mapping):
                    kind = type(trimmed)
                    named = (kind.__name__ if kind.__module__ == "builtins"
                             else f"{kind.__module__}.{kind.__name__}")
                    raise TypeError(
                        f"trim function returned {named} {trimmed!r} for "
                        f"messages[{index}], not a message or None"
                    )
                if trimmed.get("usage") is None:
                    raise ValueError(
                        f"trim function returned no usage for messages[{index}]: {trimmed!r}"
                    )
                usage = trimmed["usage"]
                trimmed_tokens = token_figure(
                    usage.get("tokens") if isinstance(usage, Mapping) else None
                )
                if trimmed_tokens > room:
                    trimmed = {**trimmed, "usage": {"tokens": room}}
                    trimmed_tokens = room
                taken.append(dict(trimmed))
                total += trimmed_tokens
            else:
                taken.append(message)
                total += tokens
            break
        taken.append(message)
        total += tokens
        if total >= limit and not within_floor and not inclusive:
            break
    taken.reverse()
    return ReferenceBuild(taken, total)


def _costed(thread: Sequence[Message], estimate: Estimate | None) -> list[dict[str, Any]]:
    """Each message copied with its cost as its usage, oldest first: its own
    ``usage.tokens``, else the estimate's answer."""
    annotated = []
    for index, message in enumerate(thread):
        has_own, raw = own_tokens(message)
        if not has_own:
            if estimate is None:
                raise ValueError(f"messages[{index}] has no usage and no estimate was given")
            tokens = estimate_figure(estimate(message), index)
        else:
            tokens = token_figure(raw)
        copy = dict(message)
        copy["usage"] = {"tokens": tokens}
        annotated.append(copy)
    return annotated


def shaped_build(
    messages: object,
    *,
    max_tokens: float,
    estimate: Estimate | None = None,
    min_messages: float | None = 0,
    inclusive: bool | Trim | None = False,
    keep_system: bool = False,
    pair_safe: bool = False,
    start_on: str | None = None,
    keep_first: int = 0,
) -> ReferenceBuild:
    """build_thread's opt-in shapes, by trying every start: the leading system messages
    (with ``keep_first`` more, reaching on with ``pair_safe`` until no tool pair straddles
    their end) costed first and kept; then, of the starts that split no tool pair, begin
    with no orphan reply and are of type ``start_on``, the earliest whose suffix fits the
    budget left;
    production's own start (:func:`build_thread`) when it kept a straddling message whole
    there (``inclusive=True``); or the last allowed start at or before the one
    ``min_messages`` asks for, when that keeps more. A ``start_on`` a pinned message
    satisfies constrains the rest no more. With a trim function, the straddling message is
    trimmed after the messages it needs (:func:`_trimmed_after_allowed_start`), or dropped."""
    thread = list(check_messages(messages))
    # Every message costed once, oldest first (not production's selection under no limit,
    # which stops where the total reaches infinity).
    costed = _costed(thread, estimate)
    system = 0
    while keep_system and system < len(thread) and is_text(thread[system].get("type"), "system"):
        system += 1
    head = min(system + keep_first, len(thread))
    if pair_safe and keep_first:
        after_system, _ = tool_pairs(thread[system:])
        while any(system + r < head <= system + s for r, s in after_system):
            head = max(system + s + 1 for r, s in after_system if system + r < head <= system + s)
    system_total = 0.0
    for message in costed[:head]:
        system_total += message["usage"]["tokens"]
    limit = _real(max_tokens)
    if head and system_total > limit:
        raise ValueError(f"the messages kept first cost {system_total}, more than {limit}")
    if start_on is not None and head > system and is_text(thread[system].get("type"), start_on):
        start_on = None  # a pinned message of that type opens the kept part
    rest = costed[head:]
    chosen = build_thread(rest, max_tokens=limit - system_total, min_messages=min_messages,
                          inclusive=inclusive)
    trims = callable(inclusive)
    shaped = keep_system or keep_first > 0 or pair_safe or start_on is not None
    if not pair_safe and start_on is None and not (trims and shaped):
        # production's own selection of the rest
        return ReferenceBuild(costed[:head] + chosen.messages, system_total + chosen.tokens)
    n = len(rest)
    first = n - len(chosen.messages)
    pairs, orphans = tool_pairs(rest)

    def allowed(k: int) -> bool:
        if k == n:
            return True
        if pair_safe and (k in orphans or any(r < k <= s for r, s in pairs)):
            return False
        return start_on is None or is_text(rest[k].get("type"), start_on)

    budget = limit - system_total
    floor = abs(_real(min_messages)) if min_messages is not None else 0.0
    if callable(inclusive):
        # The message a trim function is given, kept trimmed after the messages from the
        # last allowed start before it, with the room they leave.
        trimmed = _trimmed_after_allowed_start(rest, budget, floor, inclusive, allowed,
                                               pair_safe)
        if trimmed is not None:
            return ReferenceBuild(costed[:head] + trimmed.messages,
                                  system_total + trimmed.tokens)

    def fits(k: int) -> bool:
        total = 0.0
        for message in reversed(rest[k:]):
            total += message["usage"]["tokens"]
        return not total > budget

    start = min((k for k in range(n) if allowed(k) and fits(k)), default=n)
    # Production's straddling message kept whole (with a trim function production keeps it
    # when no room is left, a shaped build drops it).
    if inclusive and not trims and first < start and allowed(first):
        start = first
    kept = int(min(floor, n)) if floor >= 1 else 0
    if kept > n - start:
        earlier = [k for k in range(0, n - kept + 1) if allowed(k)]
        if earlier:
            start = min(start, max(earlier))
    if start == first:
        taken, total = chosen.messages, chosen.tokens
    else:
        taken, total = rest[start:], 0.0
        for message in reversed(taken):
            total += message["usage"]["tokens"]
    return ReferenceBuild(costed[:head] + taken, system_total + total)


def _trimmed_after_allowed_start(rest: list[dict[str, Any]], budget: float, floor: float,
                                 trim: Trim, allowed: Callable[[int], bool], pair_safe: bool
                                 ) -> ReferenceBuild | None:
    """Production's straddling message (the newest not within the floor that takes the sum
    over ``budget``) trimmed with the room left once the messages from the last allowed
    start at or before it (or an earlier one, past messages that cost nothing) and the
    newer ones are kept whole; with ``pair_safe``, when it is a tool result, the results of
    the calls made with its own (no result between them), but for those within the floor,
    share that room with it (smallest first, each under an equal share of what is left, a
    whole number when the room and their figures are); when it is no result, it is kept
    whole and the results of the calls about it (none between) share the room left; when
    that leaves no room or the trim function drops one of those, it alone is trimmed: those
    messages and the trimmed ones, then the rest, or None (no such message, start or room,
    or the trim function drops it)."""
    n = len(rest)
    total = 0.0
    for index in range(n - 1, -1, -1):
        tokens = rest[index]["usage"]["tokens"]
        within_floor = n - index <= floor
        if total + tokens > budget and not within_floor:
            break
        total += tokens
    else:
        return None
    starts = [k for k in range(index + 1) if allowed(k)]
    if not starts:
        return None
    last = max(starts)
    # The earliest allowed start from which the messages before the last one cost nothing.
    start = min(k for k in starts
                if all(message["usage"]["tokens"] == 0 for message in rest[k:last]))
    sharing: list[int] = []
    whole = False  # rest[index] kept whole, the results sharing the room
    if pair_safe:
        pairs, orphans = tool_pairs(rest)
        results = {reply for _, reply in pairs} | set(orphans)
        own = [call for call, reply in pairs if reply == index]
        whole = index not in results
        if own or whole:
            at = index if whole else own[0]

            def together(call: int) -> bool:  # no result came back between the two
                low, high = sorted((call, at))
                return not any(low < k < high for k in results)

            sharing = [reply for call, reply in pairs
                       if reply != index and together(call) and not n - reply <= floor]
    if sharing:
        shared, fall_back = _shared_trim(rest, start, index, sharing, whole, budget, trim)
        if not fall_back:
            return shared
    # No other result, or they could not share: it alone is trimmed, they kept whole.
    shared, _ = _shared_trim(rest, start, index, [], False, budget, trim)
    return shared


def _shared_trim(rest: list[dict[str, Any]], start: int, index: int, sharing: list[int],
                 whole: bool, budget: float, trim: Trim) -> tuple[ReferenceBuild | None, bool]:
    """``rest[index]`` trimmed (or kept ``whole``) after ``rest[start:]`` kept whole, the
    results ``sharing`` the room with it, or None (no room left, or one of them dropped);
    and whether to try again with it alone (unless it was the one dropped)."""
    end = max([*sharing, index]) + 1
    after = 0.0
    for message in reversed(rest[end:]):
        after += message["usage"]["tokens"]
    room = budget - after
    for k in reversed(range(start, end)):
        if (k != index or whole) and k not in sharing:
            room -= rest[k]["usage"]["tokens"]
    if not room > 0:
        return None, whole
    kept = {k: rest[k] for k in range(start, end)}
    used = {k: rest[k]["usage"]["tokens"] for k in range(start, end)}
    waiting = sorted(sharing if whole else [*sharing, index],
                     key=lambda k: (rest[k]["usage"]["tokens"], k))
    figures_whole = room == math.floor(room) and all(
        used[k] == math.floor(used[k]) for k in waiting)
    for position, k in enumerate(waiting):
        count = len(waiting) - position
        share = room / count
        if count > 1 and share >= 1 and figures_whole:
            share = math.floor(share)
        # Alone under its share: production's walk keeps it whole when it fits, else trims.
        cut = build_thread([rest[k]], max_tokens=share, inclusive=trim)
        if not cut.messages:
            return None, k != index
        kept[k], used[k] = cut.messages[0], cut.tokens  # the figure as production reads it
        room -= cut.tokens
    total = after
    for k in reversed(range(start, end)):
        total += used[k]
    return ReferenceBuild([kept[k] for k in range(start, end)] + rest[end:], total), False


# ------------------------------------------------------------------------ cycle heuristics


def message_key(message: Message) -> str:
    """(type, text, meta-or-absent), each encoded on its own (a meta JSON cannot encode does
    not take the type and text with it) and joined by NUL, which no canonical text holds;
    absent type/text count as null, an absent meta is ``-`` (no JSON text)."""
    meta = field(message, "meta")
    meta = "-" if meta is ABSENT_FIELD else canonical(meta)
    return "\x00".join((canonical(message.get("type")), canonical(message.get("text")), meta))


def has_repeated_suffix(messages: object, options: CycleOptions) -> bool:
    thread = check_messages(messages)
    keys = [message_key(m) for m in thread]
    n = len(keys)
    reps = options.min_repetitions
    if n < options.min_pattern_length * reps:
        return False
    low, high = options.pattern_range(n)
    for length in range(low, high + 1):
        pattern = keys[n - length :]
        if all(
            keys[n - (k + 1) * length : n - k * length] == pattern for k in range(1, reps)
        ):
            return True
    return False


def _repeats(values: list[str]) -> bool:
    return len(set(values)) < len(values)


def tail_collapsed(tail: list[Activity]) -> bool:
    """Whether a trailing run of (at least 8) activities re-treads a small set of calls."""
    requests = [a for a in tail if a.kind == "request" and a.arguments != ABSENT]
    responses = [a for a in tail if a.kind == "response" and a.result != ABSENT]
    if len(requests) < ACTIVITY_TAIL_MIN_WITH_PAYLOAD:
        return False
    if len(responses) < ACTIVITY_TAIL_MIN_WITH_PAYLOAD:
        return False
    signatures = {(a.kind, a.name, a.arguments, a.result) for a in tail}
    if len(signatures) * 2 > len(tail):
        return False
    if not _repeats([a.name for a in tail]):
        return False
    if not _repeats([a.arguments for a in requests]):
        return False
    if not _repeats([a.result for a in responses]):
        return False
    answers: dict[tuple[str, str], list[str]] = {}
    for current, following in pairwise(tail):
        if (
            current.kind == "request"
            and following.kind == "response"
            and following.name == current.name
        ):
            answers.setdefault((current.name, current.arguments), []).append(following.result)
    progressing = any(
        len(results) >= PROGRESS_MIN_ANSWERS and len(set(results)) == len(results)
        for results in answers.values()
    )
    return not progressing


def has_repeated_activity_tail(messages: object, options: CycleOptions) -> bool:
    thread = check_messages(messages)
    tail: list[Activity] = []
    for message in reversed(thread):
        activity = parse_activity(message)
        if activity is None:
            break
        tail.append(activity)
    tail.reverse()
    if len(tail) < ACTIVITY_TAIL_MIN_LENGTH:
        return False
    return tail_collapsed(tail)


def has_repeated_result_run(messages: object, options: CycleOptions) -> bool:
    thread = check_messages(messages)
    needed = options.min_result_repetitions
    seen: list[tuple[str, str, str]] = []
    for message in reversed(thread):
        if len(seen) >= needed:
            break
        activity = parse_activity(message)
        if activity is None or activity.kind != "response":
            continue
        if activity.name.startswith("_") or activity.result == ABSENT:
            continue
        seen.append((activity.name, activity.arguments, activity.result))
    return len(seen) >= needed and len(set(seen)) == 1


def has_message_text_run(messages: object, options: CycleOptions) -> bool:
    thread = check_messages(messages)
    for message in thread[-THREAD_TEXT_RUN_MESSAGES:]:
        if is_type(message, "reasoning", "activity"):
            continue
        text = message.get("text")
        if is_string(text) and has_repeated_text_run(text, text_run_options()):
            return True
    return False


HEURISTICS: Final = (
    ("repeated_suffix", has_repeated_suffix),
    ("repeated_activity_tail", has_repeated_activity_tail),
    ("repeated_result_run", has_repeated_result_run),
    ("repeated_message_text_run", has_message_text_run),
)


def describe_thread_cycle(messages: object, options: CycleOptions) -> str | None:
    thread = check_messages(messages)
    for name, heuristic in HEURISTICS:
        if heuristic(thread, options):
            return name
    return None


def is_thread_cyclic(messages: object, options: CycleOptions) -> bool:
    return describe_thread_cycle(messages, options) is not None


# ------------------------------------------------------------------------------- text run

# The unit normalisation is shared with vthread.textrun rather than written twice; the
# reference's own part is the plain, unfiltered decision below.


def has_repeated_text_run(text: object, options: TextRunOptions) -> bool:
    if not is_string(text) or not str.__len__(text):  # by content, as the engine reads it
        return False
    text = str.__str__(text)
    units = text_units(text)
    if len(units) < options.min_units:
        return False
    recent = units[-options.window :]
    return len(set(recent)) <= len(recent) * options.max_unique_ratio


# ---------------------------------------------------------------------------------- guard


def join_surrogates(text: str) -> str:
    """Turn surrogate pairs that concatenation brought together into one code point.

    JavaScript strings are UTF-16, so the halves of a pair pushed separately simply join;
    Python keeps them as two code points until asked.
    """
    if any("\ud800" <= c <= "\udfff" for c in text):
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


def normalize_word(word: str) -> str:
    """Lower-cased by JavaScript's ``toLowerCase``, keeping only what its ``[\\p{L}\\p{N}]``
    matches, by Node 20's Unicode data (:mod:`vthread._js_unicode_tables`): each code point
    lower-cased alone, but a capital sigma final after a cased character when no cased
    character follows (case-ignorable ones skipped both ways)."""
    tables = _js_tables()
    lowered = []
    for at, char in enumerate(word):
        if char != "\u03a3":
            lowered.append(tables.lower.get(ord(char), char))
            continue
        before = [c for c in word[:at] if c not in tables.ignorable]
        after = [c for c in word[at + 1:] if c not in tables.ignorable]
        final = bool(before) and before[-1] in tables.cased and (
            not after or after[0] not in tables.cased)
        lowered.append("\u03c2" if final else "\u03c3")
    return "".join(c for c in "".join(lowered) if c in tables.letters)


@dataclass(frozen=True)
class _JsTables:
    letters: frozenset[str]
    lower: dict[int, str]
    cased: frozenset[str]
    ignorable: frozenset[str]


@functools.cache
def _js_tables() -> _JsTables:
    """Node's tables as sets of characters (made once, when the guard is first checked)."""
    from vthread import _js_unicode_tables as js

    def characters(ranges: tuple[tuple[int, int], ...]) -> frozenset[str]:
        return frozenset(chr(c) for first, last in ranges for c in range(first, last + 1))

    return _JsTables(characters(js.LETTER_OR_NUMBER), dict(js.LOWER), characters(js.CASED),
                     characters(js.CASE_IGNORABLE))


@dataclass(frozen=True, slots=True)
class ReferenceReason:
    phrase: str
    count: int
    text: str
    unique_ratio: float
    hapax_ratio: float


class ReferenceGuard:
    """The production guard, re-deriving every statistic from the window at every word."""

    def __init__(self, options: GuardOptions | None = None) -> None:
        self.options = options or guard_options()
        self.words: list[tuple[str, str, int]] = []  # (normalised, original, newlines before)
        self.counts: dict[tuple[str, ...], int] = {}
        self.buffer = ""
        self.pending_newlines = 0
        self.total_chars = 0
        self.reason: ReferenceReason | None = None

    def push(self, text: object) -> bool:
        if self.reason is not None:
            return True
        if not is_string(text) or not str.__len__(text):  # by content, as the engine reads
            return False
        text = str.__str__(text)
        self.total_chars += utf16_len(text)
        self.buffer = join_surrogates(self.buffer + text)
        parts = re.split("(" + JS_WHITESPACE_CLASS + "+)", self.buffer)
        # parts alternates word, whitespace, word, ...; the last word may still be growing.
        self.buffer = parts[-1]
        for i in range(0, len(parts) - 1, 2):
            word, space = parts[i], parts[i + 1]
            if word and self._word(word):
                return True
            self.pending_newlines += space.count("\n")
        return False

    def _word(self, original: str) -> bool:
        normal = normalize_word(original)
        if not normal:
            return False
        options = self.options
        self.words.append((normal, original, self.pending_newlines))
        self.pending_newlines = 0
        tripped = False
        ngram = options.ngram
        if len(self.words) >= ngram:
            phrase = tuple(w[0] for w in self.words[-ngram :])
            count = self.counts.get(phrase, 0) + 1
            self.counts[phrase] = count
            if self.total_chars >= options.min_chars and count >= options.max_repeats:
                tripped = self._diverse_enough(phrase, count)
        if tripped:
            return True
        if len(self.words) > options.window:
            oldest = tuple(w[0] for w in self.words[: ngram])
            self.counts[oldest] -= 1
            if self.counts[oldest] == 0:
                del self.counts[oldest]
            del self.words[0]
        return False

    def _diverse_enough(self, phrase: tuple[str, ...], count: int) -> bool:
        """Apply the ratio test and the enumeration exemption; record the reason on a trip."""
        options = self.options
        normals = [w[0] for w in self.words]
        size = len(normals)
        frequency: dict[str, int] = {}
        for w in normals:
            frequency[w] = frequency.get(w, 0) + 1
        unique_ratio = len(frequency) / size
        hapax_ratio = sum(1 for c in frequency.values() if c == 1) / size
        if unique_ratio > options.max_unique_ratio:
            return False
        newlines = sum(w[2] for w in self.words)
        leading = {w[0] for w in self.words if w[2] >= 1}
        if (
            options.max_unique_ratio < 0.5
            and newlines >= 2
            and (hapax_ratio >= 0.1 or len(leading) >= 3)
        ):
            return False
        tail = self.words[-options.ngram :]
        self.reason = ReferenceReason(
            phrase=" ".join(phrase),
            count=count,
            text=" ".join(w[1] for w in tail),
            unique_ratio=unique_ratio,
            hapax_ratio=hapax_ratio,
        )
        return True


def cycle(**kwargs: Any) -> CycleOptions:
    return cycle_options(**kwargs)


def guard(**kwargs: Any) -> ReferenceGuard:
    return ReferenceGuard(guard_options(**kwargs))


# ----------------------------------------------------------------------------- attribution

HEURISTIC_NAMES: Final = tuple(name for name, _ in HEURISTICS)


@dataclass(frozen=True, slots=True)
class ReferenceAttribution:
    """Where a thread's loop is and what it cost; all zero / -1 / NaN for a healthy thread."""

    code: int  # 0 = no loop, else 1 + index into HEURISTIC_NAMES
    loop_start: int
    period: int
    repetitions: int
    loop_messages: int
    loop_tokens: float


def _suffix_span(keys: list[str], options: CycleOptions) -> tuple[int, int]:
    """(period, repetitions) of the shortest repeating suffix; repetitions counted maximally."""
    n = len(keys)
    low, high = options.pattern_range(n)
    for length in range(low, high + 1):
        pattern = keys[n - length :]
        copies = 1
        while (copies + 1) * length <= n and (
            keys[n - (copies + 1) * length : n - copies * length] == pattern
        ):
            copies += 1
        if copies >= options.min_repetitions:
            return length, copies
    raise AssertionError("called on a thread whose suffix does not repeat")


def person_suffix_span(keys: list[str], period: int, repetitions: int) -> tuple[int, int, int]:
    """The suffix span restated as a person counts it: the shortest block whose copies make
    up the whole suffix, and the earliest start from which the thread repeats it to the end,
    each found by trying every candidate."""
    n = len(keys)
    suffix = keys[n - period * repetitions :]
    block = next(q for q in range(1, period + 1)
                 if all(suffix[i] == suffix[i + q] for i in range(len(suffix) - q)))
    start = next(s for s in range(n)
                 if all(keys[i] == keys[i + block] for i in range(s, n - block)))
    return start, block, (n - start) // block


def result_run_span(thread: Sequence[Message]) -> tuple[int, int, int]:
    """(loop_start, period, repetitions) of the newest run of identical tool results."""
    positions: list[int] = []
    signature: tuple[str, str, str] | None = None
    for index in range(len(thread) - 1, -1, -1):
        activity = parse_activity(thread[index])
        if activity is None or activity.kind != "response":
            continue
        if activity.name.startswith("_") or activity.result == ABSENT:
            continue
        current = (activity.name, activity.arguments, activity.result)
        if signature is None:
            signature = current
        elif current != signature:
            break
        positions.append(index)
    first = positions[-1]
    start = first
    before = parse_activity(thread[first - 1]) if first > 0 else None
    if (
        before is not None
        and before.kind == "request"
        and signature is not None
        and before.name == signature[0]
    ):
        start = first - 1
    spacing = (positions[0] - positions[-1]) / (len(positions) - 1)
    return start, max(1, round(spacing)), len(positions)


def attribute(messages: object, options: CycleOptions) -> ReferenceAttribution:
    """The verdict of :func:`describe_thread_cycle` with where the loop starts and its cost."""
    thread = check_messages(messages)
    name = describe_thread_cycle(thread, options)
    n = len(thread)
    if name is None:
        return ReferenceAttribution(0, -1, 0, 0, 0, math.nan)
    if name == "repeated_suffix":
        keys = [message_key(m) for m in thread]
        start, period, repetitions = person_suffix_span(keys, *_suffix_span(keys, options))
    elif name == "repeated_activity_tail":
        start = n
        while start > 0 and parse_activity(thread[start - 1]) is not None:
            start -= 1
        tail = [parse_activity(m) for m in thread[start:]]
        period = len({(a.kind, a.name, a.arguments, a.result) for a in tail if a is not None})
        repetitions = (n - start) // period
    elif name == "repeated_result_run":
        start, period, repetitions = result_run_span(thread)
    else:
        firing = [
            index
            for index in range(max(0, n - THREAD_TEXT_RUN_MESSAGES), n)
            if not is_type(thread[index], "reasoning", "activity")
            and is_string(text := field(thread[index], "text"))
            and has_repeated_text_run(text, text_run_options())
        ]
        start, period, repetitions = firing[0], 1, len(firing)
    figures = [usage_tokens(m) for m in thread[start:]]
    known = [f for f in figures if f is not None]
    tokens = token_total(known) if known else math.nan
    return ReferenceAttribution(
        HEURISTIC_NAMES.index(name) + 1, start, period, repetitions, n - start, tokens
    )


def _real(value: object) -> float:
    number = real_number(value)
    if number is None:
        raise TypeError(f"not a number: {type(value).__name__}")
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf
