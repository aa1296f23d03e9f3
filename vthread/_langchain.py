"""What tells a LangChain message, where vthread meets one: its types and its objects (and
what tells any SDK's pydantic object given for a dict).

Here, apart from the adapters and the thread checks that both use it, so that neither
brings the other (nor NumPy) to the commands that need neither (``vthread guard``).
"""

from __future__ import annotations

from typing import Final

LANGCHAIN_OBJECT_HINT: Final = (" (a LangChain message object: pass each one's "
                                "model_dump(); describe_thread_cycle and scan read the "
                                "objects with format=\"langchain\")")
"""Said of a LangChain message object given where a message goes (the core says the
same)."""


LANGCHAIN_MESSAGE_TYPES: Final = frozenset({
    "human", "ai", "system", "tool", "function", "chat", "remove", "HumanMessageChunk",
    "AIMessageChunk", "SystemMessageChunk", "ToolMessageChunk", "FunctionMessageChunk",
    "ChatMessageChunk"})
"""The ``type`` of each LangChain message class (a streamed chunk's its own), as its
objects and their ``model_dump()`` carry it (``vthread.adapters`` reads them)."""


def langchain_object_hint(value: object) -> str:
    """:data:`LANGCHAIN_OBJECT_HINT` for a LangChain message object (no mapping, a
    ``model_dump`` method and a ``type`` of :data:`LANGCHAIN_MESSAGE_TYPES`), else
    nothing."""
    if not _dumps(value):
        return ""
    try:
        kind = getattr(value, "type", None)
    except Exception:  # (the value's own attribute code: the error it is in says the rest)
        return ""
    # (the type's own text, by content: a str subclass's __eq__ and __hash__ are not run)
    found = isinstance(kind, str) and str.__str__(kind) in LANGCHAIN_MESSAGE_TYPES
    return LANGCHAIN_OBJECT_HINT if found else ""


MODEL_OBJECT_HINT: Final = " (a pydantic model, an SDK's object: pass its model_dump())"
"""Said of another pydantic object (an OpenAI or Anthropic SDK's message or content block)
given where a dict goes (the core says the same)."""


def object_hint(value: object) -> str:
    """What to do with ``value``, given where a dict goes: :func:`langchain_object_hint` for a
    LangChain message object, :data:`MODEL_OBJECT_HINT` for any other object whose type has
    a ``model_dump`` method, else nothing."""
    if not _dumps(value):
        return ""
    return langchain_object_hint(value) or MODEL_OBJECT_HINT


def _dumps(value: object) -> bool:
    """Whether ``value``'s type has a ``model_dump`` method (a pydantic model)."""
    try:
        return callable(getattr(type(value), "model_dump", None))
    except Exception:  # (the type's own attribute code: the error it is in says the rest)
        return False
