"""Recorded runs: where each harness keeps a run's messages and its id.

A JSONL line or a whole JSON document holds runs in one of three shapes: a list of messages
(one run), an object holding one run, or a list of such objects. Harnesses name the parts
differently, and these functions find them:

===============================  =====================  ====================================
harness                          messages               id
===============================  =====================  ====================================
vthread, most JSONL exports      ``messages``           ``id``
tau-bench (``.json``)            ``traj``               ``task_id`` and ``trial``, written
                                                        ``"<task_id>/<trial>"``
SWE-agent (``.traj``)            ``history``            none in the file (the file's name)
mini-swe-agent (``.traj.json``)  ``messages``           ``instance_id``
===============================  =====================  ====================================

:func:`run_format` reads the format a run declares (mini-swe-agent's ``trajectory_format``).

The first key of :data:`MESSAGES_KEYS` an object holds is its messages; ``messages_key``
names another (and then only that one is looked at), for formats not listed. The id is
``id_key``'s value when given, else the first of ``id``, ``instance_id``, ``task_id`` (with
``trial`` when present) the object holds, else None.

>>> run = {"task_id": 3, "trial": 1, "traj": [{"role": "user", "content": "hi"}]}
>>> run_messages(run), run_id(run)
([{'role': 'user', 'content': 'hi'}], '3/1')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["DOCUMENT_SUFFIXES", "MESSAGES_KEYS", "run_format", "run_id", "run_messages",
           "runs_of"]

MESSAGES_KEYS: Final = ("messages", "traj", "history")
"""Where known formats keep a run's messages, in the order they are looked for."""
DOCUMENT_SUFFIXES: Final = (".json", ".traj")
"""File name endings (before an optional ``.gz``) of files holding one JSON document."""
_ID_KEYS: Final = ("id", "instance_id")
_ABSENT: Final = object()


def run_messages(run: Mapping[str, Any], messages_key: str | None = None) -> Any:
    """The value holding ``run``'s messages, or :data:`None` when it holds none of the keys.

    >>> run_messages({"history": []}), run_messages({"history": []}, "steps")
    ([], None)
    """
    keys = (messages_key,) if messages_key is not None else MESSAGES_KEYS
    for key in keys:
        value = run.get(key, _ABSENT)
        if value is not _ABSENT:
            return value
    return None


def run_id(run: Mapping[str, Any], id_key: str | None = None) -> Any:
    """``run``'s id: ``id_key``'s value, else the first known id key's, else None.

    >>> run_id({"instance_id": "astropy-12907"}), run_id({"id": 7}, "name")
    ('astropy-12907', None)
    """
    if id_key is not None:
        return run.get(id_key)
    for key in _ID_KEYS:
        if key in run:
            return run[key]
    if "task_id" in run:
        task = run["task_id"]
        return f"{task}/{run['trial']}" if "trial" in run else task
    return None


def run_format(run: Mapping[str, Any]) -> str | None:
    """The message format a run declares, or None: mini-swe-agent writes
    ``"trajectory_format": "mini-swe-agent-1"``, whose tool calls are text that the messages
    alone do not tell from a chat.

    >>> run_format({"trajectory_format": "mini-swe-agent-1"}), run_format({"messages": []})
    ('mini-swe-agent', None)
    """
    declared = run.get("trajectory_format")
    if isinstance(declared, str) and declared.startswith("mini-swe-agent"):
        return "mini-swe-agent"
    return None


def runs_of(document: Any, messages_key: str | None = None) -> list[Any]:
    """The runs a JSON document holds, each an object or a list of messages.

    A list is a list of runs when its first item is an object holding messages (under one of
    :data:`MESSAGES_KEYS`, or ``messages_key``), else the messages of one run; any other
    value is one run. O(1) besides the list copy.

    >>> runs_of([{"traj": []}, {"traj": []}]), runs_of([{"role": "user"}])
    ([{'traj': []}, {'traj': []}], [[{'role': 'user'}]])
    """
    if isinstance(document, list):
        first = document[0] if document else None
        if not document or (isinstance(first, Mapping)
                            and run_messages(first, messages_key) is not None):
            return list(document)
    return [document]
