"""The core reads a message's ``type``, ``text`` and ``meta`` as ``dict.get`` finds them,
however it reads them: an exact dict of a few keys, all exact ``str``, is walked once for the
three, and every other mapping is asked for each. So a thread scans and is described as its
twin does, the thread of plain dicts holding just what ``get`` finds, whatever kind of keys
the messages were written with (a ``str`` subclass hashing otherwise than its content is a
key ``get`` never finds; one hashing as its content is found) and however many."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import vthread
from vthread import _reference as ref


class _OwnHash(str):
    """A key whose hash is not its content's: ``get("type")`` never finds ``_OwnHash("type")``."""

    def __hash__(self) -> int:
        return hash(str(self)[::-1] + "!")

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


class _ContentHash(str):
    """A key of a ``str`` subclass hashing and comparing as its content: ``get`` finds it."""


_KEY_KINDS = (str, _OwnHash, _ContentHash)
_READ = ("type", "text", "meta", "usage")

_ASK = {"activity": {"type": "request", "function": {"name": "f", "arguments": {"q": 1}}}}
_ANSWER = {"activity": {"type": "response",
                        "function": {"name": "f", "arguments": {"q": 1}, "result": "ok"}}}


@st.composite
def _messages(draw: st.DrawFn) -> dict[Any, Any]:
    """A message of the read fields, each under a key of a drawn kind (or absent), among up to
    ten other keys (the walk reads five at most), in a drawn order."""
    values = {"type": st.sampled_from(["user", "bot", "activity"]),
              "text": st.sampled_from(["", "a", "b"]),
              "meta": st.sampled_from([{}, _ASK, _ANSWER, {"k": 1}]),
              "usage": st.sampled_from([{"tokens": 3}, {"tokens": 5}])}
    entries: list[tuple[Any, Any]] = []
    for name in _READ:
        for kind in draw(st.lists(st.sampled_from(_KEY_KINDS), max_size=2, unique=True)):
            entries.append((kind(name), draw(values[name])))
    entries += [(f"other{index}", index) for index in range(draw(st.integers(0, 10)))]
    if draw(st.booleans()):
        entries.append((7, "an int key"))
    order = draw(st.permutations(range(len(entries))))
    return {entries[at][0]: entries[at][1] for at in order}


def _as_get_finds(message: dict[Any, Any]) -> dict[str, Any]:
    """The message with just the read fields ``get`` finds, under exact keys."""
    absent = object()
    found = {name: message.get(name, absent) for name in _READ}
    return {name: value for name, value in found.items() if value is not absent}


@given(block=st.lists(_messages(), min_size=1, max_size=3), copies=st.integers(1, 4),
       before=st.lists(_messages(), max_size=3))
def test_fields_read_as_get_finds_them(block: list[dict[Any, Any]], copies: int,
                                       before: list[dict[Any, Any]]) -> None:
    thread = before + block * copies
    twin = [_as_get_finds(message) for message in thread]
    scanned, twin_scanned = vthread.scan([thread]), vthread.scan([twin])
    assert scanned.record(0) == twin_scanned.record(0)
    assert vthread.describe_thread_cycle(thread) == vthread.describe_thread_cycle(twin)
    assert (vthread.describe_thread_cycle(thread)
            == ref.describe_thread_cycle(thread, ref.cycle()))
