"""What a message is, what it costs, and the thresholds the heuristics are built on.

These are definitions, not algorithms: which objects are a thread of messages,
which messages are well-formed tool activities and how their payloads compare, what a
``usage.tokens`` figure counts for (§3), and the fixed thresholds of §4. The NumPy engine,
:func:`vthread.build_thread` and the scalar reference (:mod:`vthread._reference`) must all
read them the same way, so they are written once, here, instead of the engine borrowing
them from the reference. The algorithms that decide a verdict are not here: the engine and
the reference each keep their own, so that the property tests compare two implementations.

Nothing in this module imports the engine, the reference or any public module of vthread.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

import numpy as np

from vthread._jsvalue import (
    ABSENT_FIELD,
    canonical,
    field,
    is_string,
    js_double,
    js_ge_zero,
    js_string,
    real_number,
    text_in,
)
from vthread._langchain import object_hint

__all__ = [
    "ABSENT",
    "ACTIVITY_TAIL_MIN_LENGTH",
    "ACTIVITY_TAIL_MIN_WITH_PAYLOAD",
    "PROGRESS_MIN_ANSWERS",
    "THREAD_TEXT_RUN_MESSAGES",
    "Activity",
    "Message",
    "as_thread",
    "check_messages",
    "counted_figure",
    "estimate_figure",
    "is_type",
    "loops_priced",
    "own_tokens",
    "parse_activity",
    "token_figure",
    "token_total",
    "tool_pairs",
    "usage_tokens",
]

Message = Mapping[str, Any]

THREAD_TEXT_RUN_MESSAGES: Final = 5
"""repeated_message_text_run reads only this many messages at the end of a thread."""
ACTIVITY_TAIL_MIN_LENGTH: Final = 8
"""repeated_activity_tail needs at least this many trailing activities."""
ACTIVITY_TAIL_MIN_WITH_PAYLOAD: Final = 4
"""... of which at least this many requests with arguments and responses with results."""
PROGRESS_MIN_ANSWERS: Final = 3
"""A request answered this often with all answers different is progressing, not looping."""
ABSENT: Final = "-"
"""An absent ``arguments``/``result``; :func:`canonical` never returns "-", so no collision."""


def _is_thread(messages: object) -> bool:
    return isinstance(messages, Sequence) and not isinstance(messages, (str, bytes, Mapping))


def check_messages(messages: object, name: str = "messages") -> list[Message]:
    """The thread as a list of mappings, or a ``TypeError`` naming the bad index (``name``:
    the caller's argument, as the error names it).

    Any ``collections.abc.Sequence`` is a thread (a list, a tuple, a ``deque``, a custom
    sequence), except ``str`` and ``bytes``. The list is a snapshot taken here, so a callback
    that changes the caller's sequence (an estimator appending to it) changes nothing the
    caller is answered about, and the walk ends. O(n).

    >>> check_messages([{"text": "hi"}, "oops"])
    Traceback (most recent call last):
    ...
    TypeError: messages[1] must be a mapping, got str
    """
    if not _is_thread(messages):
        raise TypeError(f"{name} must be a sequence of mappings, got {type(messages).__name__}"
                        f"{ndarray_hint(messages)}{_run_object_hint(messages)}")
    thread = copied(cast("Sequence[Any]", messages))
    for index, message in enumerate(thread):
        if not isinstance(message, Mapping):
            raise TypeError(
                f"{name}[{index}] must be a mapping, got {type(message).__name__}"
                f"{object_hint(message)}"
            )
    return thread


NDARRAY_HINT: Final = (" (pandas reads a Parquet list column as NumPy arrays at every "
                       "level: pass the table to vthread.scan_arrow, or turn each level into "
                       "lists)")
"""Said of a NumPy array given where a thread goes (the core says the same)."""


MESSAGES_KEYS: Final = ("messages", "traj", "history")
"""Where known formats keep a run's messages, in the order they are looked for (here, beside
the thread checks, so that a shared module holds it: ``vthread.documents`` gives it on)."""


def _run_object_hint(value: object) -> str:
    """Where a run object (a JSONL line's ``{"id": ..., "messages": [...]}``) was given for
    its messages: the key to pass them by; else nothing."""
    if not isinstance(value, Mapping):
        return ""
    key = next((key for key in MESSAGES_KEYS if key in value), None)
    return "" if key is None else f" (a run object: pass its messages, run[{key!r}])"


def ndarray_hint(value: object) -> str:
    """:data:`NDARRAY_HINT` for a NumPy array, else nothing."""
    return NDARRAY_HINT if type(value).__name__ == "ndarray" else ""


def data_frame_library(value: object) -> str:
    """``"pandas"`` or ``"polars"`` for a DataFrame of either, else ``""``: a batch given
    as one would be read as its column names (what iterating it gives)."""
    kind = type(value)
    library = kind.__module__.partition(".")[0]
    return library if kind.__name__ == "DataFrame" and library in ("pandas", "polars") else ""


def data_frame_hint(value: object) -> str:
    """What to pass instead of a pandas or polars DataFrame given as a batch of threads,
    else nothing."""
    library = data_frame_library(value)
    if not library:
        return ""
    rows = 'df.to_dict("records")' if library == "pandas" else "df.to_dicts()"
    return (f" (a {library} DataFrame: iterating it gives its column names; pass it to "
            f"vthread.scan_arrow, which reads its messages column a run a row, or pass "
            f"{rows}, a run object a row)")


MessagesOrRun: TypeAlias = Sequence[Any] | Mapping[str, Any]
"""A thread as the public functions take it: its messages, or, with ``format=`` other than
native, a run object holding them (``{"id": ..., "messages": [...]}``, as a JSONL line)."""


def as_thread(messages: object) -> object:
    """``messages`` as the core reads a thread fastest and Python can slice: a list or tuple
    as it is, any other sequence copied into a list once. Anything else is returned as it is,
    for the core's ``TypeError`` to name. O(1) for a list or tuple, else O(n)."""
    if type(messages) is list or type(messages) is tuple or not _is_thread(messages):
        return messages
    return copied(cast("Sequence[Any]", messages))


#: Messages no thread can hold: their pointers alone would take 16 TiB (a ``__len__``
#: claiming as many is taken to be wrong).
_IMPLAUSIBLY_MANY: Final = 1 << 41


def copied(messages: Sequence[Any]) -> list[Any]:
    """``list(messages)`` of a sequence of the caller's own; the MemoryError of one whose
    ``__len__`` claims more messages than any memory holds (``list`` makes room for them
    first: a bare MemoryError, with no word of why) says what it claimed."""
    try:
        return list(messages)
    except MemoryError as error:
        try:
            claimed = len(messages)
        except Exception:
            raise error from None
        if claimed < _IMPLAUSIBLY_MANY:
            raise
        raise MemoryError(f"a {type(messages).__name__} whose len() is {claimed:,}: more "
                          "messages than memory holds") from error


def as_held_thread(messages: object) -> object:
    """:func:`as_thread`, a list or tuple whose first message is no exact dict copied too:
    that message is read in Python before the core takes its own copy of the thread (to tell
    chat messages), and reading it runs the caller's code, which may change the thread; the
    copy is the thread as it was at the call. O(1) but for such a thread."""
    thread = as_thread(messages)
    if (type(thread) is list or type(thread) is tuple) and thread and (
            type(thread[0]) is not dict):
        return list(cast("Sequence[Any]", thread))
    return thread


# ----------------------------------------------------------------------------- activities


@dataclass(frozen=True, slots=True)
class Activity:
    """A well-formed tool activity, its payloads as canonical text (or :data:`ABSENT`), its
    kind and name as JavaScript strings (a surrogate pair as its astral character)."""

    kind: str
    name: str
    arguments: str
    result: str


def is_type(message: Message, *kinds: str) -> bool:
    """Whether the message's ``type`` is a string equal to one of ``kinds`` (compared by
    content: a NumPy array or an object with its own ``__eq__`` is no type)."""
    return text_in(message.get("type"), kinds)


def parse_activity(
    message: Message, encode: Callable[[Any], str] = canonical
) -> Activity | None:
    """The message's activity when it is well formed, else None.

    ``encode`` writes the payloads' canonical text (the engine passes the compiled core's,
    which is byte for byte the same).

    >>> parse_activity({"type": "activity", "meta": {"activity": {"type": "request",
    ...                 "function": {"name": "ls", "arguments": {"a": 1.0}}}}})
    Activity(kind='request', name='ls', arguments='{"a":1}', result='-')
    """
    if not is_type(message, "activity"):
        return None
    meta = message.get("meta")
    if not isinstance(meta, Mapping):
        return None
    activity = meta.get("activity")
    if not isinstance(activity, Mapping) or not is_string(kind := activity.get("type")):
        return None
    function = activity.get("function")
    if not isinstance(function, Mapping) or not is_string(name := function.get("name")):
        return None
    # Every field read once, with get (as the core reads it: a mapping whose get and []
    # disagree is read one way); str.__str__: the string's content, whatever a subclass's
    # own __str__ says (content is what JavaScript compares, and what the core reads);
    # js_string: a surrogate pair as its astral character, so two names JavaScript calls
    # equal compare equal here too.
    arguments = field(function, "arguments")
    result = field(function, "result")
    return Activity(
        kind=js_string(str.__str__(kind)),
        name=js_string(str.__str__(name)),
        arguments=ABSENT if arguments is ABSENT_FIELD else encode(arguments),
        result=ABSENT if result is ABSENT_FIELD else encode(result),
    )


# ----------------------------------------------------------------------------- tool pairs


def activity_call_id(message: Message) -> Any:
    """The call id a tool activity carries (``meta.activity.id`` or ``call_id``), or None: a
    string, or a whole number as JavaScript holds it (a double, keyed by its JSON text apart
    from every string: ``1`` and ``1.0`` one id, ``2**53 + 1`` the id ``2**53``)."""
    meta: Any = message.get("meta")  # (a well-formed activity's, read as it was checked)
    activity = meta.get("activity")
    for key in ("id", "call_id"):
        value = activity.get(key)
        if is_string(value):
            return js_string(str.__str__(value))  # one id however its surrogates are held
        if issubclass(type(value), (int, float)) and not isinstance(value, bool):
            # Its value, never a subclass's own __float__ (as canonical reads it); by its
            # type, not a __class__ it claims.
            double = js_double(int.__index__(value) if issubclass(type(value), int)
                               else float.__float__(value))
            if math.isfinite(double) and double.is_integer():
                return (canonical(double),)
    return None


def tool_pairs(messages: Sequence[Message], call_ids: Mapping[int, Any] | None = None
               ) -> tuple[list[tuple[int, int]], list[int]]:
    """(request index, response index) of every tool call answered in ``messages``, and the
    indexes of the responses that answer no request before them (orphans).

    A response is matched, among the requests before it still unanswered, to the one with
    its call id when both carry one (``meta.activity.id`` or ``call_id``; ``call_ids``, by
    message index, in their place for a chat's translation, which carries none); a response
    whose id no such request carries is matched only among the requests that carry no id:
    the oldest with its function name, else the oldest (parallel calls are answered in the
    order they were made), else it is an orphan. A response with no id is matched so among
    all of them. (A reply whose id matched no call took another call's place, and that
    call's own reply was kept without it: a request a chat API refuses.) O(n) with
    dictionaries of pending requests.

    >>> call = {"type": "activity", "meta": {"activity": {"type": "request",
    ...         "function": {"name": "ls"}}}}
    >>> done = {"type": "activity", "meta": {"activity": {"type": "response",
    ...         "function": {"name": "ls", "result": "a"}}}}
    >>> tool_pairs([done, call, {"type": "bot", "text": "..."}, done])
    ([(1, 3)], [0])
    """
    pending: set[int] = set()  # requests not answered yet
    # every request, and those with no id, oldest first (answered ones dropped lazily)
    in_order: deque[int] = deque()
    unlabelled: deque[int] = deque()
    by_id: dict[Any, deque[int]] = {}
    by_name: dict[str, deque[int]] = {}
    unlabelled_by_name: dict[str, deque[int]] = {}
    pairs: list[tuple[int, int]] = []
    orphans: list[int] = []
    for index, message in enumerate(messages):
        activity = parse_activity(message, no_payload)
        if activity is None:
            continue
        call_id = activity_call_id(message) if call_ids is None else call_ids.get(index)
        if activity.kind == "request":
            pending.add(index)
            in_order.append(index)
            by_name.setdefault(activity.name, deque()).append(index)
            if call_id is not None:
                by_id.setdefault(call_id, deque()).append(index)
            else:
                unlabelled.append(index)
                unlabelled_by_name.setdefault(activity.name, deque()).append(index)
        elif activity.kind == "response":
            request = None
            if call_id is not None:
                if call_id in by_id:
                    request = _first_pending(by_id[call_id], pending)
                named, oldest = unlabelled_by_name, unlabelled
            else:
                named, oldest = by_name, in_order
            if request is None and activity.name in named:
                request = _first_pending(named[activity.name], pending)
            if request is None:
                request = _first_pending(oldest, pending)
            if request is None:
                orphans.append(index)
                continue
            pending.discard(request)
            pairs.append((request, index))
    return pairs, orphans


def _first_pending(candidates: deque[int], pending: set[int]) -> int | None:
    """The oldest of ``candidates`` still pending, dropping answered ones from the front
    (each index is dropped once from each queue, so the walk is O(n) over the thread)."""
    while candidates and candidates[0] not in pending:
        candidates.popleft()
    return candidates[0] if candidates else None


def no_payload(value: Any) -> str:
    """An encoder for :func:`parse_activity` when only names and kinds are read (pairing
    calls with replies, rendering them): payloads need no encoding, which for a tool's
    output is most of the cost."""
    return ""


# --------------------------------------------------------------------------- token figures


def counted_figure(value: Any) -> float | None:
    """A token figure as JavaScript reads it: a real number of any type (NumPy's and
    ``Decimal`` included) as its double, an integer past 2**53 rounded to the nearest, when
    that is finite and >= 0; None for anything else (no number, NaN, an infinity, a
    negative, an integer past the largest double, which is JavaScript's Infinity).

    >>> counted_figure(10**30), counted_figure(-1), counted_figure(10**400), counted_figure("3")
    (1e+30, None, None, None)
    """
    if type(value) is float:  # the usual case, by exact class
        return value if math.isfinite(value) and value >= 0 else None
    number = real_number(value)
    if number is None:
        return None
    try:
        figure = float(number)
    except OverflowError:
        return None
    return figure if math.isfinite(figure) and figure >= 0 else None


def token_figure(value: Any) -> float:
    """A usage's ``tokens`` as counted: :func:`counted_figure`, anything else 0.

    >>> token_figure(12), token_figure(-1), token_figure(float("nan")), token_figure("3")
    (12.0, 0.0, 0.0, 0.0)
    """
    figure = counted_figure(value)
    return 0.0 if figure is None else figure


def estimate_figure(value: Any, index: int) -> float:
    """An estimator's answer for ``messages[index]`` as counted: a real number of any type
    as :func:`token_figure` counts it (NaN, infinities and negatives 0); a JSON value that is
    no number (None, a boolean, a string, a list, a mapping) 0, as production counts it (the
    recorded corpus holds such estimators); any other object, which no JavaScript estimator
    can return, a ``TypeError`` naming the message, where it used to count 0 without a word.

    >>> estimate_figure(None, 0), estimate_figure(-3, 0), estimate_figure("12", 0)
    (0.0, 0.0, 0.0)
    >>> estimate_figure(1j, 4)
    Traceback (most recent call last):
    ...
    TypeError: estimate(messages[4]) returned complex, not a number
    """
    if type(value) is float:  # the usual case, by exact class
        return token_figure(value)
    if real_number(value) is None and not (
        value is None or isinstance(value, (bool, np.bool_, str, list, tuple, Mapping))
    ):
        raise TypeError(
            f"estimate(messages[{index}]) returned {type(value).__name__}, not a number"
        )
    if isinstance(value, Mapping) and "tokens" in value:
        # A usage where its figure was meant (production's estimators return one; a harness
        # ported from them is the likeliest to): it counts 0, as production counts a usage
        # whose tokens is a usage, and a budget of such answers would hold everything.
        import warnings

        # (One text for every message, so that a thread of them is warned of once.)
        warnings.warn("estimate returned a usage mapping ({'tokens': ...}), which counts 0 "
                      "tokens: an estimate is the figure itself (return its 'tokens')",
                      UserWarning, stacklevel=2)
    return token_figure(value)


def own_tokens(message: Message) -> tuple[bool, Any]:
    """``(True, tokens)`` when JavaScript's ``message.usage?.tokens >= 0`` holds."""
    usage = message.get("usage")
    if isinstance(usage, Mapping) and "tokens" in usage and js_ge_zero(usage["tokens"]):
        return True, usage["tokens"]
    return False, None


def usage_tokens(message: Message) -> float | None:
    """The message's own ``usage.tokens`` as :func:`counted_figure` counts it (a figure of
    ``10**30`` as ``1e30``, as :func:`token_figure` counts it for ``build_thread``), else
    None."""
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return None
    return counted_figure(usage.get("tokens"))


def loops_priced(loops: int, unpriced: int) -> bool:
    """Whether the tokens wasted in ``loops`` loops, ``unpriced`` of which carry no
    ``usage.tokens``, are a figure: there is no loop (0 wasted), or some loop's are counted.
    Over loops none of which carries a count, a total of 0 would read as "no waste": the
    summary, its table and the report say the cost is not known."""
    return not loops or unpriced < loops


NO_PRICED_LOOP: Final = "no looping run's messages carry usage.tokens"
"""Why the tokens wasted in loops are no figure (:func:`loops_priced`), as the summary's
table and the report's card say it."""


def unpriced_loops(count: int) -> str:
    """What a figure of wasted tokens leaves out: ``count`` loops carrying no count."""
    return (f"{figure_text(count)} loop{'' if count == 1 else 's'} with no countable "
            "usage.tokens not counted")


def figure_text(value: float) -> str:
    """A count or token total as the summary and the report write it: in full (with
    thousands separators) while a column holds it; past 10**12, which no agent's count
    reaches (figures a broken logger wrote), in powers of ten; a sum past the largest
    double is "over 1.8e308" (it became infinite).

    >>> figure_text(1234567.0), figure_text(1.7e308), figure_text(math.inf)
    ('1,234,567', '1.700e+308', 'over 1.8e308')
    >>> figure_text(999_999_999_999.6), figure_text(-0.0), figure_text(10**400)
    ('1.000e+12', '0', 'over 1.8e308')
    """
    try:
        figure = float(value)
    except OverflowError:  # (an integer past the largest double, as a record may hold)
        return "over 1.8e308"
    if math.isnan(figure):
        return "n/a"
    if not math.isfinite(figure):
        return "over 1.8e308"
    # (rounded first: 999,999,999,999.6 is 10**12, written as such)
    return f"{figure + 0.0:,.0f}" if abs(round(figure)) < 10**12 else f"{figure:.3e}"


def token_total(figures: Sequence[float]) -> float:
    """The exact sum (``math.fsum``) of token figures, each finite and >= 0; ``math.inf``
    when the total passes the largest double, where ``fsum`` raises ``OverflowError``.

    >>> token_total([1.5, 2.0]), token_total([1.7e308, 1.7e308])
    (3.5, inf)
    """
    try:
        return math.fsum(figures)
    except OverflowError:
        return math.inf
