"""What tells a LangChain message, where vthread meets one: its types and its objects.

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
    try:
        if not callable(getattr(type(value), "model_dump", None)):
            return ""
        kind = getattr(value, "type", None)
    except Exception:  # (the value's own attribute code: the error it is in says the rest)
        return ""
    # (the type's own text, by content: a str subclass's __eq__ and __hash__ are not run)
    found = isinstance(kind, str) and str.__str__(kind) in LANGCHAIN_MESSAGE_TYPES
    return LANGCHAIN_OBJECT_HINT if found else ""
