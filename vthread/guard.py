"""The repetition guard: watch a token stream and stop it when it starts to loop.

:class:`Guard` answers, chunk by chunk, whether a model's output has fallen into a loop: the
same ``ngram``-word phrase ``max_repeats`` times within the last ``window`` words while the
window's vocabulary is poor (distinct words / words <= ``max_unique_ratio``), except when the
window looks like an enumeration or a table (several lines, and many words seen once or
several distinct line-leading words). docs/guard.md states the rules in full.

The state machine runs in the compiled core (``src/guard.rs``): :meth:`Guard.push` is one
call into it, O(len(chunk)) plus O(1) per completed word. Words are 64-bit hashes in a ring
of the window with hashed word and n-gram counts; a word that passes every test on hashes is
confirmed on the window's real words before the guard trips, so a hash collision can never
trip it or name a wrong phrase. :class:`vthread._reference.ReferenceGuard` is the plain
re-derivation the property tests hold it equal to, chunking by chunking.

Limits
    ``ngram`` and ``window`` may be any finite number, as in production (past
    :data:`~vthread._options.GUARD_WORDS_CAP` words, taken as that many: no stream holds
    more). Memory is O(words in the window) plus the current partial word, which is held
    up to 65,536 code points and folded into a bounded summary beyond that: a stream
    without whitespace (``cat /dev/zero``) keeps memory flat. Such a long word's spelling is
    kept as its first and last 1,024 characters around "…" (what ``reason.text`` shows), its
    normal form is computed 65,536 code points at a time, and a normal form over 256 KiB is
    compared by its length and a 128-bit hash; see docs/guard.md.

>>> guard = Guard(ngram=3, window=12, max_repeats=3)
>>> any(guard.push(chunk) for chunk in ["I will ", "try again. "] * 5)
True
>>> guard.reason.phrase, guard.reason.count
('i will try', 3)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Self

from vthread import _core
from vthread._options import GuardOptions, guard_options

__all__ = ["Guard", "GuardReason", "join_pairs", "normalize"]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def join_pairs(text: str) -> str:
    """``text`` with each high+low surrogate pair made one code point, as UTF-16 reads it.

    O(len(text)); returns ``text`` itself when it holds no surrogate.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def normalize(word: str) -> str:
    """The guard's form of a word: lower-cased, only Unicode letters and numbers kept, as
    production's ``toLowerCase`` and ``[\\p{L}\\p{N}]`` give it under Node 20
    (:mod:`vthread._js_unicode`: its Unicode, not this interpreter's).

    >>> normalize("Don't!"), normalize("ÉTÉ-2024")
    ('dont', 'été2024')
    """
    if word.isascii():
        lower = word.lower()
        return lower if lower.isalnum() else "".join(filter(str.isalnum, lower))
    from vthread import _js_unicode

    keep = _js_unicode.is_letter_or_number
    return "".join([c for c in _js_unicode.lower(join_pairs(word)) if keep(c)])


@dataclass(frozen=True, slots=True)
class GuardReason:
    """Why a guard tripped: the repeated phrase, its count, and the window's ratios.

    ``phrase`` is the normalised words joined by one space, ``text`` the same words as they
    were written; ``unique_ratio`` is distinct words / words in the window and
    ``hapax_ratio`` words seen once / words in the window, both at the tripping word.
    """

    phrase: str
    count: int
    text: str
    unique_ratio: float
    hapax_ratio: float

    def to_dict(self) -> dict[str, str | int | float]:
        """The reason as a JSON-ready mapping with snake_case keys."""
        return {
            "phrase": self.phrase,
            "count": self.count,
            "text": self.text,
            "unique_ratio": self.unique_ratio,
            "hapax_ratio": self.hapax_ratio,
        }


class Guard(_core.GuardCore):
    """Watches a stream of text chunks and trips when the output starts to loop.

    Keyword options (``None`` = default; numbers floored and clamped as production does; a
    non-number is unset, with a ``UserWarning``): ``ngram`` (4), ``window`` (max(ngram,
    48)), ``max_repeats`` (4), ``max_unique_ratio`` (0.4), ``min_chars`` (0).

    ``push(text)`` feeds the next chunk and returns True once the stream has tripped the
    guard (and ever after); a chunk that is not a ``str``, or is empty, changes nothing
    (``bytes``, and any object but ``None`` and an empty list or tuple, with a
    ``UserWarning``: decode bytes, or pass them to ``push_bytes``).
    ``reason`` is None until the guard trips, then the first trip's :class:`GuardReason`;
    ``trip_offset`` the index in the tripping chunk just past the word that tripped it (in
    code points of the chunk's text; after ``push_bytes``, of the text that call decoded,
    bytes held from the previous call first: the byte offset is what ``push_bytes``
    returns); ``options`` the resolved :class:`~vthread._options.GuardOptions`.
    ``push_bytes(data)`` feeds raw UTF-8 (a character may be split between calls) and
    returns None, or (bytes of ``data`` up to the end of the tripping word, code points
    decoded before that point over all calls); when the space after the word began in the
    previous call's bytes, the first count takes the rest of that space, so that the bytes
    let through never end inside a character. ``push_bytes(data,
    min_chars_per_character=True)`` counts ``min_chars`` up to the word judged (as
    :func:`vthread.scan_texts` does), so that where it trips does not depend on how reads
    cut the stream. A ``push`` after ``push_bytes`` left a character unfinished takes the
    held bytes first, as lone surrogates. ``reset()`` starts a new stream (a harness's next
    turn) with the same options: a tripped guard otherwise stays tripped.

    >>> guard = Guard()
    >>> guard.push("All good so far. "), guard.reason
    (False, None)
    """

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def options(self) -> GuardOptions: ...

        @property
        def reason(self) -> GuardReason | None: ...

    def __new__(
        cls,
        *arguments: Any,
        ngram: float | None = None,
        window: float | None = None,
        max_repeats: float | None = None,
        max_unique_ratio: float | None = None,
        min_chars: float | None = None,
        **keywords: Any,
    ) -> Self:
        # As object.__new__ does: arguments of a subclass's own are its __init__'s to check,
        # so that a subclass adds constructor arguments by writing __init__ alone.
        if (arguments or keywords) and cls.__init__ is Guard.__init__:
            if arguments:
                raise TypeError(f"{cls.__name__}() takes keyword arguments only, got "
                                f"{len(arguments)} positional")
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument "
                            f"{next(iter(keywords))!r}")
        # (an option that is no number is warned of by __init__, which every construction
        # through Guard's own __init__ runs with the same options: once, not twice)
        options = guard_options(ngram, window, max_repeats, max_unique_ratio, min_chars,
                                warn=cls.__init__ is not Guard.__init__)
        return super().__new__(cls, options)

    def __init__(
        self,
        *,
        ngram: float | None = None,
        window: float | None = None,
        max_repeats: float | None = None,
        max_unique_ratio: float | None = None,
        min_chars: float | None = None,
    ) -> None:
        """Nothing to do when given the constructor's options (``__new__`` took them), so
        that a subclass's ``__init__`` may pass the options it was given on; given others
        (a subclass computing its options here), the guard watches with them from here on,
        as one made with them."""
        given = (ngram, window, max_repeats, max_unique_ratio, min_chars)
        if all(option is None for option in given):
            return
        options = guard_options(*given)
        if options != self.options:
            self._watch_with(options)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickling (a harness handing configured guards to worker processes, or keeping a
        stream's guard with a paused session): a guard pickles as its class, options and
        instance attributes (what a subclass's own ``__getstate__`` gives, when it has
        one) and, once fed, the state of its stream (the words of its window, the word
        under way, the trip and bytes ``push_bytes`` holds), and loads as a guard that
        answers every later push as this one would (a subclass's ``__init__`` not run
        again, as for :func:`copy.copy`). The stream's state is read back by the same
        version of vthread only."""
        stream = () if self._is_fresh() else (self._state(),)
        if type(self).__getstate__ is not object.__getstate__:
            state = self.__getstate__()  # (a subclass's own, for its own __setstate__)
        else:
            # (the state pickle sets: the instance dict, and the slots' values when set)
            own, slots = getattr(self, "__dict__", None) or None, _own_slots(self)
            state = (own, slots) if slots else own
        return (_unpickled, (type(self), self.options, *stream), state)

    def __repr__(self) -> str:
        state = "tripped" if self.reason is not None else "watching"
        return f"<Guard {state} {self.options}>"

    def __copy__(self) -> Self:
        """A guard of its own in this one's state (the core's copy), with a subclass's own
        attributes (its ``__dict__`` and slots) copied as ``copy.copy`` copies them."""
        copied = super().__copy__()
        _copy_own_state(self, copied, None)
        return copied

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """As :meth:`__copy__`, a subclass's own attributes deep-copied with ``memo``."""
        copied = super().__deepcopy__(memo)
        memo[id(self)] = copied
        _copy_own_state(self, copied, memo)
        return copied


def _copy_own_state(guard: Guard, copied: Guard, memo: dict[int, Any] | None) -> None:
    """Copy what a subclass of :class:`Guard` holds beside the core's state: its instance
    ``__dict__`` and its slots, deep-copied when ``memo`` is given (``copy.deepcopy``)."""
    import copy

    def copied_value(value: Any) -> Any:
        return value if memo is None else copy.deepcopy(value, memo)

    for name, value in _own_slots(guard).items():
        setattr(copied, name, copied_value(value))
    own = getattr(guard, "__dict__", None)
    if own:
        copied.__dict__.update(copied_value(own))


def _own_slots(guard: Guard) -> dict[str, Any]:
    """The values of the slots a subclass of :class:`Guard` declares that are set."""
    held = {}
    for cls in type(guard).__mro__:
        if cls is Guard:
            break
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{cls.__name__.lstrip('_')}{name}"  # (mangled, as the class holds it)
            if hasattr(guard, name):
                held[name] = getattr(guard, name)
    return held


def _unpickled(cls: type[Guard], options: GuardOptions, stream: bytes | None = None) -> Guard:
    """A pickled guard loaded: one of its class watching with its options, in the state of
    its ``stream`` (``GuardCore._state``) when it had been fed."""
    guard = _core.GuardCore.__new__(cls, options)
    if stream is not None:
        guard._restore(stream)
    return guard
