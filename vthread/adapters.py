"""Adapters: recorded OpenAI and Anthropic conversations as vthread's native messages.

The cycle heuristics read native messages: ``{"type", "text", "meta"?, "usage"?}``,
where a tool call is an *activity request* and its result an *activity response* that repeats
the call's name and arguments. Evaluation harnesses record trajectories in the providers'
formats instead; these functions translate them, one source message into one or more native
messages, in order.

OpenAI chat completions (:func:`from_openai`):

==========================================  ==================================================
source                                      native messages, in this order
==========================================  ==================================================
``system`` / ``developer``                  ``{"type": "system", "text": <content>}``
``user``                                    ``{"type": "user", "text": <content>}``
``assistant`` ``reasoning_content`` or      ``{"type": "reasoning", "text": ...}`` when it is a
``reasoning`` (a string)                    non-empty string
``assistant`` ``content`` / ``refusal``     ``{"type": "bot", "text": ...}`` when non-empty
``assistant`` ``tool_calls[i]``             one activity request each: ``name``, ``arguments``
                                            parsed from their JSON string (kept as the raw
                                            string when it is not valid JSON); a custom
                                            tool's call (``custom {name, input}``): its
                                            ``input`` as is
``assistant`` ``function_call`` (legacy)    one activity request, as above
``tool`` with ``tool_call_id``              activity response: the call's name and arguments,
                                            ``result`` = the content parsed as JSON when it is
                                            valid JSON text, else the text
``tool`` with ``tool_call_ids`` (a list,    one activity response per id, each with its call's
as SWE-agent writes)                        name and arguments and the same ``result``
``function`` (legacy) with ``name``         activity response, arguments of the latest
                                            ``function_call`` of that name
any other role                              ``{"type": <role>, "text": <content>}``
==========================================  ==================================================

Anthropic messages (:func:`from_anthropic`), ``content`` a string or a list of blocks:

==========================================  ==================================================
block                                       native message
==========================================  ==================================================
``text``                                    ``{"type": "user" | "bot", "text": ...}`` by role,
                                            one per block (a block is Anthropic's unit of
                                            content: adjacent blocks stay apart)
``thinking``                                ``{"type": "reasoning", "text": <thinking>}``
``redacted_thinking``                       ``{"type": "reasoning", "text": ""}`` (the payload
                                            is opaque ciphertext)
``tool_use {id, name, input}``              activity request, ``arguments`` = ``input``
``tool_result {tool_use_id, content,        activity response with the call's name and
is_error}``                                 arguments; ``result`` = the content (a string, or
                                            its text blocks joined by ``\\n``) parsed as JSON
                                            when it is valid JSON text, else the text;
                                            ``is_error: true`` is kept in ``meta.activity``
``server_tool_use``, ``mcp_tool_use``       activity request, as ``tool_use`` (a server tool
                                            Anthropic runs: web search, code execution; an
                                            MCP server's tool)
``*_tool_result`` (``web_search_tool_       activity response, as ``tool_result``
result``, ``mcp_tool_result``, ...)
``image``, ``document``                     kept whole in ``meta.media`` of the message's
                                            first native message
other blocks (citations, uploads)           ignored
==========================================  ==================================================

OpenAI Responses API items (:func:`from_responses`), as a ``input`` list or a stored run:

==========================================  ==================================================
item                                        native message
==========================================  ==================================================
``message`` (or no ``type`` and a ``role``)  ``{"type": <role as in OpenAI chat>, "text": ...}``,
                                            the ``input_text`` / ``output_text`` parts joined
``reasoning``                               ``{"type": "reasoning", "text": ...}``, the
                                            ``summary`` texts joined (``content`` texts when
                                            there is no summary; ``""`` when encrypted only)
``function_call {call_id, name,             activity request, ``arguments`` parsed as in
arguments}`` / ``custom_tool_call``         OpenAI chat (a custom call's ``input`` as is)
``function_call_output {call_id, output}``  activity response with the call's name and
/ ``custom_tool_call_output``               arguments, ``result`` as in OpenAI chat
a built-in tool's ``<tool>_call``           activity request named ``<tool>``
(``computer_call``, ``shell_call``,         (``computer``, ``web_search``), ``arguments`` =
``web_search_call``, ``mcp_call``, ...)     the item's fields but ``type``, ``id``,
                                            ``status``, the ``*_id`` ones (``call_id``) and
                                            the safety checks (each with an id)
``<tool>_call_output``, ``tool_search_      activity response with its call's arguments
output``                                    (found by ``call_id``, or the output's ``id``),
                                            ``result`` = its fields as above
another item of the API (``mcp_list_tools``  ``{"type": <item type>, "text": "", "meta":
``mcp_approval_request``, ``compaction``)   {"item": <its fields as above>}}``
an item of no type the API has              ``{"type": <item type>, "text": ""}``
==========================================  ==================================================

LangChain messages (:func:`from_langchain`), each its fields (``model_dump()``), ``{"type",
"data"}`` (``messages_to_dict``) or ``{"lc", "type": "constructor", "id", "kwargs"}``
(``dumpd``), mapped as OpenAI chat with LangChain's own places:

==========================================  ==================================================
message                                     native messages, in this order
==========================================  ==================================================
``human`` / ``system``                      ``{"type": "user" | "system", "text": ...}``
``ai`` (``AIMessageChunk``)                 a ``reasoning`` message per ``reasoning`` /
                                            ``thinking`` content block (else its
                                            ``additional_kwargs.reasoning_content``), its
                                            ``bot`` text, one activity request per
                                            ``tool_calls[i]`` (``name``, ``args``) and then
                                            per ``invalid_tool_calls[i]`` (its raw ``args``
                                            text; name ``""`` when none)
``tool`` with ``tool_call_id``              activity response as OpenAI's ``tool``; ``status:
                                            "error"`` kept as ``is_error`` in
                                            ``meta.activity``
``function`` / ``chat`` / ``remove``        as OpenAI's ``function`` / as its ``role`` / a
                                            message of its type
==========================================  ==================================================

An ``ai`` message's usage is its ``usage_metadata``, else ``response_metadata``'s
``token_usage`` or ``usage``; its legacy ``additional_kwargs.function_call`` is a request
only where it has no ``tool_calls`` (Gemini writes its call in both); its content's media
are the blocks of :data:`_LANGCHAIN_MEDIA`, its other blocks (a provider's record of a call
or a server tool's use) are not read. A type that is no LangChain message's is a
``ValueError`` naming the message.

Text actions. mini-swe-agent runs (:func:`from_mini_swe_agent`) and SWE-agent runs
(:func:`from_swe_agent`) are OpenAI chat messages whose tool calls may be written as text. An
``assistant`` message without ``tool_calls`` that holds a command is its ``bot`` text
followed by one activity request per call, and the next ``user`` message, the environment's
output, is the response to each of them (``result`` = the text, never parsed: it is what a
terminal showed). Every other message maps as in OpenAI chat (so an assistant message with
no command is only text, and the environment's complaint about it a ``user`` message). The
commands:

==========================================  ==================================================
format                                      the calls of an assistant message
==========================================  ==================================================
mini-swe-agent                              exactly one fenced ``bash`` block (the rule
                                            mini-swe-agent enforces): ``{"name": "bash",
                                            "arguments": {"command": <the block>}}``
SWE-agent                                   its complete ``<function=NAME>`` blocks, each
                                            ``{"name": NAME, "arguments": {KEY: value}}`` from
                                            its ``<parameter=KEY>value</parameter>`` blocks
                                            (value stripped of surrounding whitespace); else
                                            its ``action`` string (the command SWE-agent parsed
                                            from the text and ran), ``{"name": "bash",
                                            "arguments": {"command": <action>}}``
==========================================  ==================================================

A ``<function=...>`` block that is not complete (unterminated, text between its parameters,
a key given twice) is only text.

Rules common to all of them:

- OpenAI content given as a list of parts (and a tool result's content blocks, in both
  formats) keeps the text parts (``{"type": "text", "text": ...}``, or plain strings) joined
  by ``\\n``. A newline, not the empty string, so that two parts never fuse into one sentence
  for the text-run heuristic.
- Parts that are no text (an object whose ``type`` is a string other than ``text``,
  ``input_text``, ``output_text``: images, audio, files, documents) are kept as given, so
  that two different screenshots never compare equal: a tool result holding one is the list
  of its content's parts (not its text), and any other source message's first native
  message carries them in ``meta.media`` (an image beside a text or a result makes no
  native message of its own, where a loop could begin).
- Every source message yields at least one native message: one whose parts produce nothing
  (``content: null`` and no tool calls, an image-only message) becomes an empty text message
  of its role, so message counts and usages are never lost.
- A source message's usage becomes ``{"tokens": n}`` on the first native message it
  yields, ``n`` being ``usage.tokens`` if present, else ``completion_tokens`` (OpenAI) or
  ``output_tokens`` (Anthropic, Responses): the tokens that message added to the
  conversation, which is what native usages count, not the prompt re-sent with it. The usage
  is the message's own ``usage``, else the one of the response recorded with it:
  ``response.usage``, ``extra.usage`` or ``extra.response.usage`` (mini-swe-agent).
- A result whose call is unknown (no earlier call with that id) is still a response: it takes
  the source message's own ``name`` when it has one, else ``""``, and carries no arguments.
- Identifiers (``tool_call_id``, ``tool_use_id``, ``call_id``) are not copied into the native
  messages: they differ on every call, and the suffix heuristic compares whole messages.
- The input is never mutated; parsed arguments and results are fresh objects, other values
  are shared with the input.

A message that is not an object raises :class:`MessageTypeError` (a ``TypeError``, as a
native message's does, and a ``ValueError``), one with no string ``role`` a ``ValueError``,
each naming its index. Each function is a single pass: O(total size of the messages).

>>> from_openai([{"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
...     "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": "[]"}])[1]["meta"]
{'activity': {'type': 'response', 'function': {'name': 'ls', 'arguments': {'path': '.'}, \
'result': []}}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import pairwise
from typing import Any, Final, Literal

from vthread._jsvalue import canonical, is_string, js_string, real_number, text_in
from vthread._langchain import LANGCHAIN_MESSAGE_TYPES, langchain_object_hint, object_hint

__all__ = [
    "FORMATS",
    "LANGCHAIN_ROLES",
    "LANGCHAIN_TYPES",
    "Format",
    "FormatConflictError",
    "FormatUnknownError",
    "MessageTypeError",
    "chat_role",
    "common_format",
    "detect_format",
    "format_evidence",
    "from_anthropic",
    "from_langchain",
    "from_mini_swe_agent",
    "from_openai",
    "from_responses",
    "from_swe_agent",
    "to_native",
    "to_native_with_sources",
]

Format = Literal["native", "openai", "anthropic", "responses", "mini-swe-agent", "swe-agent",
                 "langchain"]
"""The message formats :func:`to_native` understands."""

FORMATS: Final[tuple[Format, ...]] = ("native", "openai", "anthropic", "responses",
                                      "mini-swe-agent", "swe-agent", "langchain")
EXPECTED: Final = (
    "native messages (each an object with a string \"type\" and no \"role\"), OpenAI chat "
    "or Anthropic messages (each with a string \"role\"), OpenAI Responses items "
    "(\"message\", \"function_call\", \"function_call_output\", \"reasoning\"), or "
    "LangChain messages (\"human\", \"ai\", \"tool\", each with a \"content\")"
)
"""What :func:`detect_format` recognises, for error messages."""

_PART_SEPARATOR: Final = "\n"
_ABSENT: Final = object()
TEXT_PARTS: Final = frozenset({"text", "input_text", "output_text"})
_ANTHROPIC_MEDIA: Final = frozenset({"image", "document"})
_TOKEN_FIELDS: Final = ("tokens", "completion_tokens", "output_tokens")
_OPENAI_ROLE_TYPES: Final = {"system": "system", "developer": "system", "user": "user",
                             "assistant": "bot"}
_ANTHROPIC_ROLE_TYPES: Final = {"system": "system", "user": "user", "assistant": "bot"}


def to_native(messages: Sequence[Mapping[str, Any]], format: str) -> list[dict[str, Any]]:
    """``messages`` in ``format`` (one of :data:`FORMATS`, a :data:`Format`; a ``str``, as
    every function taking ``format=`` takes it, another a ``ValueError``) as native messages
    (``"native"`` is checked and copied).

    >>> to_native([{"role": "user", "content": "hi"}], "openai")
    [{'type': 'user', 'text': 'hi'}]
    """
    if format == "openai":
        return from_openai(messages)
    if format == "anthropic":
        return from_anthropic(messages)
    if format == "responses":
        return from_responses(messages)
    if format == "mini-swe-agent":
        return from_mini_swe_agent(messages)
    if format == "swe-agent":
        return from_swe_agent(messages)
    if format == "langchain":
        return from_langchain(messages)
    if format == "native":
        return [m if isinstance(m, dict) else dict(m) for m in _checked(messages)]
    raise ValueError(f"unknown format {format!r}; expected one of {', '.join(FORMATS)}")


# Where each source message's translation ends in the output (len(out) after it), recorded
# by _finish while to_native_with_sources runs: _finish is the one step every adapter takes
# exactly once per source message, so no adapter has to carry the bookkeeping itself.
_SOURCE_ENDS: ContextVar[list[int] | None] = ContextVar("_SOURCE_ENDS", default=None)
_CALL_IDS: ContextVar[dict[int, Any] | None] = ContextVar("_CALL_IDS", default=None)


@contextmanager
def recording_call_ids(call_ids: dict[int, Any]) -> Iterator[None]:
    """While the block runs, :func:`to_native_with_sources` records in ``call_ids`` the call
    id of each tool request and response it translates: native message index -> the id as
    the adapters key it (two ids one exactly when their JSON texts are equal). The
    translation itself carries no id (the heuristics compare its messages, and a call's id
    differs from every other call's), so pairing calls with their replies
    (``build_thread(pair_safe=True)``) reads them here: a reply whose id matches no call
    before it paired with another call by its name, and the call's own reply was then cut
    off from it."""
    token = _CALL_IDS.set(call_ids)
    try:
        yield
    finally:
        _CALL_IDS.reset(token)


def _noted(out: list[dict[str, Any]], call_id: Any) -> None:
    """Record ``call_id`` (when it is one) as the id of ``out``'s last message, when
    :func:`recording_call_ids` asks for them."""
    call_ids = _CALL_IDS.get()
    if call_ids is not None and call_id is not None and _hashable(call_id):
        call_ids[len(out) - 1] = _id_key(call_id)


def to_native_with_sources(
    messages: Sequence[Mapping[str, Any]], format: Format
) -> tuple[list[dict[str, Any]], list[int]]:
    """:func:`to_native` and, per native message, the index of the source message it came
    from (non-decreasing; every source message yields at least one native message), so a
    loop found in the translation can be reported in the file's own message numbers.

    >>> to_native_with_sources([{"role": "assistant", "content": "Look.", "tool_calls": [
    ...     {"id": "1", "function": {"name": "ls", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "1", "content": "a.py"}], "openai")[1]
    [0, 0, 1]
    """
    if format == "native":
        native = to_native(messages, format)
        return native, list(range(len(native)))
    call_ids = _CALL_IDS.get()
    if call_ids is not None:
        call_ids.clear()  # (this translation's alone: an earlier one's indexes are others)
    ends: list[int] = []
    token = _SOURCE_ENDS.set(ends)
    try:
        native = to_native(messages, format)
    finally:
        _SOURCE_ENDS.reset(token)
    sources: list[int] = []
    for index, end in enumerate(ends):
        sources.extend([index] * (end - len(sources)))
    if len(sources) != len(native):
        raise AssertionError("an adapter did not finish every source message")
    return native, sources


# ------------------------------------------------------------------------------------ OpenAI


def from_openai(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat-completions messages as native messages (mapping in the module docstring).

    >>> from_openai([{"role": "system", "content": "Be brief."},
    ...              {"role": "user", "content": [{"type": "text", "text": "Hi"}]}])
    [{'type': 'system', 'text': 'Be brief.'}, {'type': 'user', 'text': 'Hi'}]
    """
    out: list[dict[str, Any]] = []
    calls: dict[Any, tuple[str, Any]] = {}  # tool_call_id -> (name, arguments or _ABSENT)
    legacy: dict[str, Any] = {}  # function name -> arguments of its latest function_call
    for index, message in enumerate(_checked(messages)):
        role = _role(message, index)
        first = len(out)
        _openai_message(message, index, role, out, calls, legacy)
        _finish(message, role, first, out, _OPENAI_ROLE_TYPES, _chat_media(message, role, index))
    return out


def _openai_message(
    message: Mapping[str, Any],
    index: int,
    role: str,
    out: list[dict[str, Any]],
    calls: dict[Any, tuple[str, Any]],
    legacy: dict[str, Any],
) -> None:
    """Append the native messages of one OpenAI chat message (its usage aside)."""
    if role == "assistant":
        _openai_assistant(message, index, out, calls, legacy)
    elif role == "tool":
        result = _result(message.get("content"), f"message {index}")
        ids = message.get("tool_call_ids")
        if "tool_call_id" in message or not isinstance(ids, list) or not ids:
            ids = [message.get("tool_call_id")]
        for position, call_id in enumerate(ids):
            name, arguments = _call(calls, call_id, message)
            # A fresh result per response: the output never shares a parsed object twice.
            out.append(_response(name, arguments, result if position == 0
                                 else _result(message.get("content"), f"message {index}")))
            _noted(out, call_id)
    elif role == "function":
        _legacy_result(out, legacy, message, f"message {index}")
    else:
        out.append({"type": _OPENAI_ROLE_TYPES.get(role, role), "text": _text(message, index)})


def _openai_assistant(
    message: Mapping[str, Any],
    index: int,
    out: list[dict[str, Any]],
    calls: dict[Any, tuple[str, Any]],
    legacy: dict[str, Any],
) -> None:
    for key in ("reasoning_content", "reasoning"):  # the first that is a non-empty string
        reasoning = message.get(key)
        if reasoning is not None and is_string(reasoning) and (reasoning := _plain(reasoning)):
            out.append({"type": "reasoning", "text": reasoning})
            break
    text = _text(message, index)
    refusal = _plain(message.get("refusal")) if not text else None
    if type(refusal) is str:  # (a string made exact by _plain)
        text = refusal
    if text:
        out.append({"type": "bot", "text": text})
    tool_calls = message.get("tool_calls")
    if tool_calls is not None:
        if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls, Sequence):
            raise ValueError(f"message {index}: tool_calls must be a list")
        for position, call in enumerate(tool_calls):
            where = f"message {index}: tool_calls[{position}]"
            if not isinstance(call, Mapping):
                raise ValueError(_not_an_object(where, call))
            function, custom = call.get("function"), call.get("custom")
            if function is None and isinstance(custom, Mapping):
                # A custom (free-form) tool's call, {"type": "custom", "custom": {"name",
                # "input"}}: its input as is, as a Responses custom_tool_call's.
                name = _plain(custom.get("name"))
                if type(name) is not str:  # (a string made exact by _plain)
                    raise ValueError(f"{where}: custom name must be a string")
                arguments = custom.get("input", _ABSENT)
            elif is_string(function) and "arguments" in call:
                raise ValueError(_INSPECT_CALL.format(where=where))
            else:
                name, arguments = _function(function, where)
            _called(out, calls, name, arguments, call.get("id"))
    function_call = message.get("function_call")
    if function_call is not None:
        _legacy_call(out, legacy, function_call, f"message {index}: function_call")


_INSPECT_CALL: Final = (
    "{where}: function must be an object, not a string: a tool call whose function is its "
    "name, beside its arguments, is Inspect AI's (a ChatMessage dumped from an Inspect log); "
    "read Inspect logs with `vthread scan LOG`, or their samples with "
    "vthread.inspect_log.read_inspect_chats or chat_of")
"""The error of an OpenAI tool call shaped as Inspect AI's ``ToolCall``, which detection
reads as OpenAI's (its ``tool_calls``) and the OpenAI reader cannot."""


def _called(out: list[dict[str, Any]], calls: dict[Any, tuple[str, Any]], name: str,
            arguments: Any, call_id: Any) -> None:
    """Append the request of a tool call, its id noted and its call kept for its result."""
    out.append(_request(name, arguments))
    _noted(out, call_id)
    if _hashable(call_id):
        calls[_id_key(call_id)] = (name, arguments)


def _legacy_call(out: list[dict[str, Any]], legacy: dict[str, Any], function_call: Any,
                 where: str) -> None:
    """Append the request of OpenAI's legacy ``function_call``, kept for its ``function``
    result by its name."""
    name, arguments = _function(function_call, where)
    out.append(_request(name, arguments))
    legacy[js_string(name)] = arguments


def _legacy_result(out: list[dict[str, Any]], legacy: Mapping[str, Any],
                   message: Mapping[str, Any], where: str) -> None:
    """Append the response of a legacy ``function`` message: its own name, the arguments of
    the latest ``function_call`` of that name, its content as the result."""
    name = _own_name(message)
    out.append(_response(name, legacy.get(js_string(name), _ABSENT),
                         _result(message.get("content"), where)))


def _function(function: Any, where: str) -> tuple[str, Any]:
    """(name, arguments or _ABSENT) of an OpenAI ``function`` object."""
    if not isinstance(function, Mapping):
        raise ValueError(f"{where}: function must be an object")
    name = _plain(function.get("name"))
    if type(name) is not str:  # (a string made exact by _plain)
        raise ValueError(f"{where}: function name must be a string")
    if "arguments" not in function:
        return name, _ABSENT
    arguments = _plain(function["arguments"])
    return name, _json_or_text(arguments) if is_string(arguments) else arguments


# --------------------------------------------------------------------------------- Anthropic


def from_anthropic(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Anthropic Messages API messages as native messages (mapping in the module docstring).

    >>> from_anthropic([{"role": "assistant", "content": [
    ...     {"type": "thinking", "thinking": "Look first.", "signature": "x"},
    ...     {"type": "text", "text": "Checking."}]}])
    [{'type': 'reasoning', 'text': 'Look first.'}, {'type': 'bot', 'text': 'Checking.'}]
    """
    out: list[dict[str, Any]] = []
    calls: dict[Any, tuple[str, Any]] = {}  # tool_use id -> (name, input or _ABSENT)
    for index, message in enumerate(_checked(messages)):
        role = _role(message, index)
        _not_openai(message, index, role, OPENAI_ONLY_ROLES)
        first = len(out)
        kind = _ANTHROPIC_ROLE_TYPES.get(role, role)
        content = _plain(message.get("content"))
        media: list[Any] = []
        if is_string(content) or content is None:
            out.append({"type": kind, "text": content or ""})
        elif isinstance(content, Sequence) and not isinstance(content, (bytes, Mapping)):
            media = _anthropic_blocks(content, index, kind, out, calls)
        else:
            raise ValueError(f"message {index}: content must be a string or a list of blocks, "
                             f"not {json_type(content)}")
        _finish(message, role, first, out, _ANTHROPIC_ROLE_TYPES, media)
    return out


def _anthropic_blocks(
    blocks: Sequence[Any],
    index: int,
    kind: str,
    out: list[dict[str, Any]],
    calls: dict[Any, tuple[str, Any]],
) -> list[Any]:
    """Append the native messages of one message's blocks; its image and document blocks,
    which the message's first native message carries."""
    media = []
    for position, block in enumerate(blocks):
        where = f"message {index}: content[{position}]"
        if is_string(block):
            out.append({"type": kind, "text": _plain(block)})
            continue
        if not isinstance(block, Mapping):
            raise ValueError(_not_an_object(where, block))
        block_type = _plain(block.get("type"))
        if block_type == "text":
            text = _plain(block.get("text"))
            if is_string(text):
                out.append({"type": kind, "text": text})
        elif block_type == "thinking":
            thinking = _plain(block.get("thinking"))
            out.append({"type": "reasoning", "text": thinking if is_string(thinking)
                        else ""})
        elif block_type == "redacted_thinking":
            out.append({"type": "reasoning", "text": ""})
        elif text_in(block_type, _ANTHROPIC_CALLS):
            name = _plain(block.get("name"))
            if not is_string(name):
                raise ValueError(f"{where}: {block_type} name must be a string")
            arguments = block.get("input", _ABSENT)
            out.append(_request(name, arguments))
            _noted(out, block.get("id"))
            if _hashable(block.get("id")):
                calls[_id_key(block.get("id"))] = (name, arguments)
        elif block_type == "tool_result" or (is_string(block_type)
                                             and block_type.endswith("_tool_result")):
            # (a server tool's result, web_search_tool_result and the like, or an MCP one)
            name, arguments = _call(calls, block.get("tool_use_id"), block)
            response = _response(name, arguments, _result(block.get("content"), where))
            if block.get("is_error") is True:
                response["meta"]["activity"]["is_error"] = True
            out.append(response)
            _noted(out, block.get("tool_use_id"))
        elif text_in(block_type, _ANTHROPIC_MEDIA):  # a list or object type names no block
            media.append(block)
        # anything else (a citation, a container upload): nothing the heuristics read
    return media


_ANTHROPIC_CALLS: Final = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
"""Anthropic blocks that call a tool: the client's, a server tool Anthropic runs (web search,
code execution, web fetch), an MCP server's; each a request, answered by a ``tool_result``
or ``*_tool_result`` block."""


# --------------------------------------------------------------------------- Responses API

_RESPONSES_CALLS: Final = frozenset({"function_call", "custom_tool_call"})
_RESPONSES_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
_RESPONSES_TOOL_ITEMS: Final = _RESPONSES_CALLS | _RESPONSES_OUTPUTS
RESPONSES_MARKS: Final = _RESPONSES_TOOL_ITEMS | frozenset({
    "file_search_call", "web_search_call", "computer_call", "computer_call_output",
    "image_generation_call", "code_interpreter_call", "local_shell_call",
    "local_shell_call_output", "shell_call", "shell_call_output", "apply_patch_call",
    "apply_patch_call_output", "mcp_call", "tool_search_call", "tool_search_output"})
"""The items that show a run is Responses items: a tool's call or output, a function's or a
built-in tool's (a computer-use run of its actions alone, or after a message with a role
and no type, was read as native or could not be told)."""
_RESPONSES_ITEMS: Final = RESPONSES_MARKS | frozenset({
    "message", "reasoning", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response",
    "item_reference", "compaction"})
"""Every item type a Responses run may hold (the API's input and output items): a run
holding a built-in tool's items (a web search, a computer call) is still a Responses run
(it was told no format)."""
_ITEM_BOOKKEEPING: Final = frozenset({"type", "id", "status", "pending_safety_checks",
                                      "acknowledged_safety_checks"})
"""Fields of a built-in tool's Responses item that are no part of what it does: its type
(its tool's name), and what differs on every item (its id and status, and the safety checks
a computer call raises and its output acknowledges, each with an id of its own); so is any
field named ``*_id`` (``call_id``, an MCP call's ``approval_request_id``)."""


def _item_fields(item: Mapping[str, Any]) -> dict[str, Any]:
    """A built-in tool's Responses item as the translation compares it: its own fields but
    its :data:`_ITEM_BOOKKEEPING` ones and its ids (a computer call's action, a shell's
    command, a screenshot returned, a search's query and results)."""
    kept = {}
    for key, value in item.items():
        name = str.__str__(key) if is_string(key) else None
        if name is None or not (name in _ITEM_BOOKKEEPING or name.endswith("_id")):
            kept[key] = value
    return kept




def built_in_tool(kind: str) -> tuple[str, bool] | None:
    """The built-in tool a Responses item of type ``kind`` (an exact ``str``) calls or
    answers, and whether it answers: ``("computer", False)`` for ``computer_call``,
    ``("computer", True)`` for ``computer_call_output``, ``("tool_search", True)`` for
    ``tool_search_output``; None for any other item (a function's, a message)."""
    if kind not in RESPONSES_MARKS or kind in _RESPONSES_TOOL_ITEMS:
        return None
    if kind.endswith("_call"):
        return kind.removesuffix("_call"), False
    return kind.removesuffix("_output").removesuffix("_call"), True  # (tool_search_output)


def built_in_call_id(item: Mapping[str, Any], answers: bool) -> Any:
    """The call id a built-in tool's item carries: its ``call_id``; for an output without
    one, its ``id`` (a ``local_shell_call_output``'s ``id`` is its call's id)."""
    if answers and "call_id" not in item:
        return item.get("id")
    return item.get("call_id")


def from_responses(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI Responses API items as native messages (mapping in the module docstring).

    >>> from_responses([{"type": "function_call", "call_id": "c1", "name": "ls",
    ...                  "arguments": "{}"},
    ...                 {"type": "function_call_output", "call_id": "c1", "output": "a b"}])[1]
    {'type': 'activity', 'text': '', 'meta': {'activity': {'type': 'response', \
'function': {'name': 'ls', 'arguments': {}, 'result': 'a b'}}}}
    """
    out: list[dict[str, Any]] = []
    calls: dict[Any, tuple[str, Any]] = {}  # call_id -> (name, arguments or _ABSENT)
    tools: dict[Any, dict[str, Any]] = {}  # (built-in tool, call_id) -> its call's fields
    for index, item in enumerate(_checked(items)):
        kind = _plain(item.get("type"))
        if kind is None and "role" in item:
            kind = "message"
        if not is_string(kind):
            raise ValueError(f"item {index} has no type" if kind is None
                             else f"item {index}: type must be a string")
        first = len(out)
        role = kind
        if kind == "message":
            role = _role(item, index)
            _not_openai(item, index, role, _OPENAI_RESULT_ROLES, "item")
            out.append({"type": _OPENAI_ROLE_TYPES.get(role, role), "text": _text(item, index)})
        elif kind == "reasoning":
            text = _reasoning_text(item.get("summary"))
            if not text:
                text = _reasoning_text(item.get("content"))
            out.append({"type": "reasoning", "text": text})
        elif kind in _RESPONSES_CALLS:
            name, arguments = _function(item, f"item {index}")
            if kind == "custom_tool_call":
                arguments = item.get("input", _ABSENT)
            out.append(_request(name, arguments))
            _noted(out, item.get("call_id"))
            if _hashable(item.get("call_id")):
                calls[_id_key(item.get("call_id"))] = (name, arguments)
        elif kind in _RESPONSES_OUTPUTS:
            name, arguments = _call(calls, item.get("call_id"), item)
            output = _result(item.get("output"), f"item {index}: output")
            out.append(_response(name, arguments, output))
            _noted(out, item.get("call_id"))
        elif (built_in := built_in_tool(kind)) is not None:
            # A built-in tool's call (computer, shell, web search, ...): a request of the
            # tool, its fields the arguments, so that two different actions differ (each was
            # an empty message of its type: a computer-use agent looped at its second step);
            # its output (a screenshot, a command's output) the response, its fields the
            # result, with its call's arguments.
            tool, answers = built_in
            call_id = built_in_call_id(item, answers)
            key = (tool, _id_key(call_id)) if _hashable(call_id) else None
            fields = _item_fields(item)
            if not answers:
                out.append(_request(tool, fields))
                if key is not None:
                    tools[key] = fields
            else:
                arguments = tools.get(key, _ABSENT) if key is not None else _ABSENT
                out.append(_response(tool, arguments, fields))
        elif kind in _RESPONSES_ITEMS:
            # Another item of the API (an MCP tool list, an approval, a reference, a
            # compaction): a message of its type holding its fields in its meta.
            fields = _item_fields(item)
            out.append({"type": kind, "text": "", **({"meta": {"item": fields}} if fields
                                                     else {})})
        else:
            out.append({"type": kind, "text": ""})  # (no item of the API: its type alone)
        _finish(item, role, first, out, _OPENAI_ROLE_TYPES,
                _media(item.get("content")) if kind == "message" else [])
    return out


def _reasoning_text(parts: Any) -> str:
    """The texts of a reasoning item's ``summary`` or ``content`` parts, joined."""
    if not isinstance(parts, list):
        return ""
    texts = (_plain(part.get("text")) for part in parts if isinstance(part, Mapping))
    return _PART_SEPARATOR.join(text for text in texts if is_string(text))


# ----------------------------------------------------------------------------------- LangChain

LANGCHAIN_ROLES: Final = {"human": "user", "ai": "assistant", "system": "system",
                          "tool": "tool", "function": "function"}
"""A LangChain message type's role in OpenAI chat (a ``chat`` message carries its own)."""
_LANGCHAIN_CHUNKS: Final = {"HumanMessageChunk": "human", "AIMessageChunk": "ai",
                            "SystemMessageChunk": "system", "ToolMessageChunk": "tool",
                            "FunctionMessageChunk": "function", "ChatMessageChunk": "chat"}
"""A streamed chunk's type, and the type of the message it is a piece of."""
_LANGCHAIN_CLASSES: Final = {"HumanMessage": "human", "AIMessage": "ai",
                             "SystemMessage": "system", "ToolMessage": "tool",
                             "FunctionMessage": "function", "ChatMessage": "chat",
                             "RemoveMessage": "remove", **_LANGCHAIN_CHUNKS}
"""A serialised message's class (the last of its ``id``), and its message type."""
_LANGCHAIN_KINDS: Final = frozenset({*LANGCHAIN_ROLES, "chat", "remove"})
"""The message types (a chunk's being its message's): a ``chat`` message carries its own
role; ``remove`` is LangGraph's instruction to drop a message, read as a message of its
type."""
_LANGCHAIN_ROLE_TYPES: Final = frozenset({"chat", "ChatMessageChunk"})
"""The types of LangChain's messages that carry a ``role`` of their own (``ChatMessage``)."""
LANGCHAIN_TYPES: Final = LANGCHAIN_MESSAGE_TYPES | {"constructor"}
"""The ``type`` of every LangChain message as its three dict forms write it (a serialised
one's is ``constructor``): what tells a thread is LangChain's."""
_LANGCHAIN_MEDIA: Final = frozenset({"image", "audio", "video", "file", "text-plain",
                                     "document", "image_url", "input_audio", "input_image",
                                     "input_file"})
"""The content blocks of a LangChain message that are media (LangChain's own, and the
providers' it passes through), kept as the other formats keep them. Its other blocks that
are no text nor reasoning are the provider's record of a call or a server tool's use
(``tool_use``, ``function_call``, ``server_tool_use``, ``web_search_tool_result``, ...),
which the message's ``tool_calls`` hold, or which carry ids that differ on every call: kept,
they would tell every repeated turn apart."""
_LANGCHAIN_WRAPPERS: Final = ("content", "data", "kwargs")
"""The keys one of a LangChain thread's messages holds (its content, or the fields its
``data`` or ``kwargs`` wraps) and none of a native thread's does without a ``text``."""
_LANGCHAIN_REASONING: Final = frozenset({"reasoning", "thinking", "redacted_thinking",
                                         "reasoning_content"})
"""The content blocks that are reasoning: LangChain's own, Anthropic's, and Bedrock
Converse's ``reasoning_content`` (its text under ``reasoning_content.text``)."""


def from_langchain(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """LangChain messages as native messages (mapping in the module docstring), each in any
    of LangChain's dict forms: a message's fields (``message.model_dump()``), the
    ``{"type", "data"}`` of ``messages_to_dict``, or the ``{"lc": 1, "type": "constructor",
    "id", "kwargs"}`` of ``dumpd``; or the message objects themselves (a LangGraph
    harness's ``state["messages"]``), read as their ``model_dump()``.

    >>> from_langchain([{"type": "ai", "content": "Look.", "tool_calls": [
    ...     {"name": "ls", "args": {"path": "."}, "id": "c1", "type": "tool_call"}],
    ...     "usage_metadata": {"input_tokens": 90, "output_tokens": 12}},
    ...     {"type": "tool", "content": "[]", "tool_call_id": "c1"}])[2]["meta"]
    {'activity': {'type': 'response', 'function': {'name': 'ls', 'arguments': {'path': '.'}, \
'result': []}}}
    """
    out: list[dict[str, Any]] = []
    calls: dict[Any, tuple[str, Any]] = {}  # tool_call_id -> (name, arguments or _ABSENT)
    legacy: dict[str, Any] = {}  # function name -> arguments of its latest function_call
    for index, message in enumerate(_checked(_as_dicts(messages))):
        fields, kind = _langchain_fields(message, index)
        if kind not in _LANGCHAIN_KINDS:
            raise ValueError(f"message {index}: type {kind!r} is no LangChain message's (is "
                             "the thread in another format?)")
        role = LANGCHAIN_ROLES.get(kind, kind)
        if kind == "chat":
            role = _role(fields, index)
        first = len(out)
        content = fields.get("content")
        where = f"message {index}"
        media: list[Any] = []
        if role == "assistant":
            media = _langchain_ai(fields, index, out, calls, legacy)
        elif role == "tool":
            call_id = fields.get("tool_call_id")
            name, arguments = _call(calls, call_id, fields)
            response = _response(name, arguments, _result(content, where))
            if _plain(fields.get("status")) == "error":
                response["meta"]["activity"]["is_error"] = True
            out.append(response)
            _noted(out, call_id)
        elif role == "function":
            _legacy_result(out, legacy, fields, where)
        else:
            out.append({"type": _OPENAI_ROLE_TYPES.get(role, role),
                        "text": _joined_text(content, where)})
            media = _langchain_media(content)
        _finish(fields, role, first, out, _OPENAI_ROLE_TYPES, media,
                usage=_langchain_usage(fields))
    return out


def chat_role(message: Mapping[str, Any], format: str) -> Any:
    """The role a message of a chat ``format`` (one the translation read) plays, as
    ``build_thread``'s ``start_on`` names roles: its own ``role``; a LangChain message's
    from its type (``"ai"`` is ``"assistant"``, a ``chat`` message's its own); a Responses
    item without one, ``"tool"`` for a tool's output and ``"assistant"`` for any other (a
    call, reasoning), as chat keeps them in a tool message and an assistant's.

    >>> chat_role({"type": "ai", "content": "hi"}, "langchain")
    'assistant'
    >>> chat_role({"type": "function_call_output", "output": "4"}, "responses")
    'tool'
    """
    if format == "langchain":
        fields, kind = _langchain_fields(message, 0)
        return _plain(fields.get("role")) if kind == "chat" else LANGCHAIN_ROLES.get(kind,
                                                                                     kind)
    role = _plain(message.get("role"))
    if format != "responses" or role is not None:
        return role
    kind = _plain(message.get("type"))
    return "tool" if is_string(kind) and kind.endswith("_output") else "assistant"


def _as_dicts(messages: Any) -> Any:
    """``messages`` with each LangChain message object (a harness's ``AIMessage``, a
    pydantic model with a string ``type``) as its ``model_dump()``, the fields form; the
    sequence itself when it holds none (any other value is left for the check that names
    it)."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        return messages
    if all(isinstance(message, Mapping) for message in messages):
        return messages
    return [message.model_dump() if _langchain_object(message) else message
            for message in messages]


def _langchain_object(message: Any) -> bool:
    """Whether ``message`` is a LangChain message object: no mapping, a ``model_dump``
    method and a string ``type`` (``"ai"``, ``"human"``, ...)."""
    return (not isinstance(message, Mapping)
            and bool(langchain_object_hint(message)))


def _langchain_fields(message: Mapping[str, Any], index: int) -> tuple[Mapping[str, Any], str]:
    """A LangChain message's fields, whichever dict form holds them, and its type (a
    chunk's that of the message it is a piece of)."""
    kind = _plain(message.get("type"))
    fields = message
    if kind == "constructor":
        # dumpd's form: the fields under "kwargs", the class the last of "id" (LangChain
        # serialises any object so: a Document, a prompt)
        path = message.get("id")
        name = _plain(path[-1]) if isinstance(path, list) and path else None
        kwargs = message.get("kwargs")
        own = _plain(kwargs.get("type")) if isinstance(kwargs, Mapping) else None
        kind = own if is_string(own) else _LANGCHAIN_CLASSES.get(name) if is_string(
            name) else None
        if not isinstance(kwargs, Mapping) or kind is None:
            what = ("an object" if not is_string(name) or not name
                    else f"an {name}" if name[0] in "AEIOUaeiou" else f"a {name}")
            raise ValueError(f"message {index}: {what} serialised by LangChain (\"type\": "
                             "\"constructor\"), not a message")
        fields = kwargs
    elif "content" not in message and isinstance(message.get("data"), Mapping):
        fields = message["data"]
    if not is_string(kind):
        raise ValueError(f"message {index} has no type" if kind is None
                         else f"message {index}: type must be a string")
    return fields, _LANGCHAIN_CHUNKS.get(kind, kind)


def _langchain_ai(
    fields: Mapping[str, Any],
    index: int,
    out: list[dict[str, Any]],
    calls: dict[Any, tuple[str, Any]],
    legacy: dict[str, Any],
) -> list[Any]:
    """Append the native messages of one ``ai`` message: its reasoning, its text, its
    calls; return its media (content blocks that are neither text, reasoning nor a call)."""
    where = f"message {index}"
    content = _plain(fields.get("content"))
    blocks = content if isinstance(content, list) else []
    reasonings = [_langchain_reasoning(block) for block in blocks
                  if isinstance(block, Mapping) and text_in(block.get("type"),
                                                            _LANGCHAIN_REASONING)]
    extra = fields.get("additional_kwargs")
    extra = extra if isinstance(extra, Mapping) else {}
    if not reasonings:
        # (a provider's own place: DeepSeek's reasoning_content, OpenAI's reasoning item)
        reasoning = _plain(extra.get("reasoning_content"))
        if not is_string(reasoning) and isinstance(extra.get("reasoning"), Mapping):
            reasoning = _reasoning_text(extra["reasoning"].get("summary"))
        if is_string(reasoning) and reasoning:
            reasonings.append(reasoning)
    out.extend({"type": "reasoning", "text": text} for text in reasonings)
    text = _joined_text(content, where)
    if text:
        out.append({"type": "bot", "text": text})
    for key in ("tool_calls", "invalid_tool_calls"):
        tool_calls = fields.get(key)
        if tool_calls is None:
            continue
        if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls,
                                                                           Sequence):
            raise ValueError(f"{where}: {key} must be a list")
        for position, call in enumerate(tool_calls):
            if not isinstance(call, Mapping):
                raise ValueError(_not_an_object(f"{where}: {key}[{position}]", call))
            name = _plain(call.get("name"))
            if not is_string(name):
                if key == "tool_calls":
                    raise ValueError(f"{where}: tool_calls[{position}] name must be a string")
                name = ""  # (a call the model wrote unreadably may lack its name)
            arguments = _plain(call.get("args", _ABSENT))
            if is_string(arguments):
                arguments = _json_or_text(arguments)
            _called(out, calls, name, arguments, call.get("id"))
    held = _holds(fields.get("tool_calls")) or _holds(fields.get("invalid_tool_calls"))
    if not held:
        # A message written before LangChain had tool_calls keeps the provider's (OpenAI's)
        # in additional_kwargs, which LangChain reads when it loads one: read them so too
        # (its calls were lost, and turns calling different tools alike).
        held = _langchain_raw_calls(out, calls, extra.get("tool_calls"))
    # OpenAI's legacy function call, which Gemini's models also write beside their
    # tool_calls ("for backward compatibility"): read where no tool call, readable or not,
    # holds it.
    function_call = extra.get("function_call")
    if function_call is not None and not held:
        _legacy_call(out, legacy, function_call, f"{where}: function_call")
    return _langchain_media(content)


def _langchain_raw_calls(out: list[dict[str, Any]], calls: dict[Any, tuple[str, Any]],
                         raw: Any) -> bool:
    """Append the requests of an ``ai`` message's ``additional_kwargs["tool_calls"]`` (the
    provider's, OpenAI's shape), as LangChain's own loader parses them: each with a
    ``function`` object, the others passed over as it passes them over; whether any was
    read."""
    if not isinstance(raw, list):
        return False
    read = False
    for call in raw:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not is_string(_plain(function.get("name"))):
            continue
        arguments = _plain(function.get("arguments", _ABSENT))
        if is_string(arguments):
            arguments = _json_or_text(arguments)
        _called(out, calls, _plain(function["name"]), arguments, call.get("id"))
        read = True
    return read


def _langchain_media(content: Any) -> list[Any]:
    """The media of a LangChain message's content: its blocks of :data:`_LANGCHAIN_MEDIA`."""
    return [block for block in _media(content) if text_in(block.get("type"), _LANGCHAIN_MEDIA)]


def _langchain_reasoning(block: Mapping[str, Any]) -> str:
    """A reasoning block's text: its ``reasoning`` (LangChain's own block) or ``thinking``
    (Anthropic's) string, else its ``reasoning_content``'s ``text`` (Bedrock Converse's),
    else its ``summary`` parts' texts (OpenAI's), else ""."""
    for key in ("reasoning", "thinking"):
        text = _plain(block.get(key))
        if is_string(text):
            return text
    bedrock = block.get("reasoning_content")
    if isinstance(bedrock, Mapping) and is_string(text := _plain(bedrock.get("text"))):
        return text
    return _reasoning_text(block.get("summary"))


def _langchain_usage(fields: Mapping[str, Any]) -> Any:
    """A LangChain message's usage: its ``usage_metadata``, else the provider's usage in its
    ``response_metadata`` (``token_usage``, OpenAI's; ``usage``, Anthropic's), else its own
    ``usage``."""
    usage = fields.get("usage_metadata")
    if isinstance(usage, Mapping):
        return usage
    metadata = fields.get("response_metadata")
    if isinstance(metadata, Mapping):
        for key in ("token_usage", "usage"):
            if isinstance(metadata.get(key), Mapping):
                return metadata[key]
    return _usage(fields)


# ------------------------------------------------------------------------------ text actions

# mini-swe-agent's own action pattern (its default ``action_regex``), read by _bash_blocks.
_BASH_BLOCK: Final = r"```bash\s*\n(.*?)\n```"
_BASH_OPEN: Final = "```bash"
_BASH_CLOSE: Final = "\n```"


def _find_by_first(text: str, word: str, position: int = 0) -> int:
    """``text.find(word, position)``, each candidate found by ``word``'s first character
    alone. ``str.find`` of a longer word changes algorithm on texts of 30,000 characters or
    more, and on a text of characters the word shares ("a1a1...", "Checking now. ...") took
    10-20x longer for 4x the text there (8,000 to 32,000 characters); a one-character search
    is a ``memchr``, linear throughout, and ``word`` opens with a rare one (a backquote,
    ``<``)."""
    while (start := text.find(word[0], position)) != -1:
        if text.startswith(word, start):
            return start
        position = start + 1
    return -1


def _bash_blocks(text: str) -> list[str]:
    """``re.findall(_BASH_BLOCK, text, re.DOTALL)``, in O(len(text)).

    The pattern itself is quadratic on hostile text: after "```bash" and a long run of
    newlines it tries every newline of the run as the opening one, each time searching the
    rest of the text for the closing fence (20 KB took 2 s). The backtracking settles on
    the run's last newline; only when the sole closing fence left begins at that very newline
    does it back off to the newline before it (the block is then whitespace).

    >>> _bash_blocks("```bash\\nls\\n```\\n```bash \\n\\n```")
    ['ls', '']
    """
    blocks: list[str] = []
    last_close = text.rfind(_BASH_CLOSE)
    position = 0
    while (start := _find_by_first(text, _BASH_OPEN, position)) != -1:
        run_start = run_end = start + len(_BASH_OPEN)
        while run_end < len(text) and text[run_end].isspace():  # re's \s is str.isspace
            run_end += 1
        newline = text.rfind("\n", run_start, run_end)
        position = start + 1
        if newline == -1:
            continue
        if newline + 1 <= last_close:
            close = text.find(_BASH_CLOSE, newline + 1)
            blocks.append(text[newline + 1 : close])
            position = close + len(_BASH_CLOSE)
        elif newline == last_close:
            earlier = text.rfind("\n", run_start, newline)
            if earlier != -1:
                blocks.append(text[earlier + 1 : newline])
                position = newline + len(_BASH_CLOSE)
    return blocks


# A ``<function=NAME>`` call as SWE-agent's and OpenHands' XML function-calling prompts ask for
# it, and one of its parameters. A call must be complete: its body only parameter blocks and
# whitespace (checked in _function_blocks), so an unterminated or garbled one stays text.
_FUNCTION_BLOCK: Final = re.compile(r"<function=([^<>\n]+)>((?:(?!<function=).)*?)</function>",
                                    re.DOTALL)
_PARAMETER_BLOCK: Final = re.compile(r"\s*<parameter=([^<>\n]+)>(.*?)</parameter>\s*",
                                     re.DOTALL)

_Call = tuple[str, Any]  # a tool call read from text: (name, arguments)


def from_mini_swe_agent(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """mini-swe-agent messages as native messages: each command a tool call, the
    environment's next message its result (mapping in the module docstring).

    >>> from_mini_swe_agent([{"role": "assistant", "content": "Look.\\n```bash\\nls\\n```"},
    ...     {"role": "user", "content": "a.py"}])[1:]  # doctest: +NORMALIZE_WHITESPACE
    [{'type': 'activity', 'text': '', 'meta': {'activity': {'type': 'request',
      'function': {'name': 'bash', 'arguments': {'command': 'ls'}}}}},
     {'type': 'activity', 'text': '', 'meta': {'activity': {'type': 'response',
      'function': {'name': 'bash', 'arguments': {'command': 'ls'}, 'result': 'a.py'}}}}]
    """
    return _with_text_actions(messages, _bash_block)


def from_swe_agent(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """SWE-agent ``history`` messages as native messages: an assistant turn's command (its
    ``<function=...>`` blocks, else its ``action``) a tool call, the environment's next
    message its result; function-calling turns as in OpenAI chat (mapping in the module
    docstring).

    >>> from_swe_agent([{"role": "assistant", "content": "Look.\\n```\\nls\\n```",
    ...                  "action": "ls\\n", "message_type": "action"},
    ...                 {"role": "user", "content": "a.py", "message_type": "observation"}]
    ...                )[2]["meta"]["activity"]["function"]
    {'name': 'bash', 'arguments': {'command': 'ls\\n'}, 'result': 'a.py'}
    """
    return _with_text_actions(messages, _swe_agent_action)


def _with_text_actions(
    messages: Sequence[Mapping[str, Any]],
    actions: Callable[[Mapping[str, Any], str], list[_Call]],
) -> list[dict[str, Any]]:
    """Chat messages whose tool calls are written as text: ``actions`` reads the calls of an
    assistant turn that has no ``tool_calls``, and the next ``user`` message answers them all.
    Every other message maps as in OpenAI chat."""
    out: list[dict[str, Any]] = []
    calls: dict[Any, tuple[str, Any]] = {}
    legacy: dict[str, Any] = {}
    pending: list[_Call] = []  # the calls awaiting the environment's output
    for index, message in enumerate(_checked(messages)):
        role = _role(message, index)
        first = len(out)
        if role == "user" and pending:
            text = _text(message, index)
            out.extend(_response(name, arguments, text) for name, arguments in pending)
            pending = []
        else:
            _openai_message(message, index, role, out, calls, legacy)
            pending = []
            if role == "assistant" and message.get("tool_calls") is None and (
                    message.get("function_call") is None):
                pending = actions(message, _text(message, index))
                out.extend(_request(name, arguments) for name, arguments in pending)
        _finish(message, role, first, out, _OPENAI_ROLE_TYPES, _chat_media(message, role, index))
    return out


def _bash_block(message: Mapping[str, Any], text: str) -> list[_Call]:
    """mini-swe-agent's call: the turn's fenced ``bash`` block when it has exactly one."""
    commands = _bash_blocks(text)
    return [("bash", {"command": commands[0]})] if len(commands) == 1 else []


def _swe_agent_action(message: Mapping[str, Any], text: str) -> list[_Call]:
    """SWE-agent's calls: the turn's ``<function=...>`` blocks, else its ``action`` (the
    command it parsed from the text, as the shell ran it)."""
    found = _function_blocks(text)
    if found:
        return found
    action = _plain(message.get("action"))
    return [("bash", {"command": action})] if is_string(action) and action.strip() else []


def _function_blocks(text: str) -> list[_Call]:
    """The complete ``<function=NAME>`` calls written in ``text``: (NAME, {KEY: value}) for
    each, a value being its ``<parameter=KEY>`` block's text without surrounding whitespace.

    A block is a call only when it is well formed: a name, then nothing but parameter blocks
    (each key once) and whitespace up to ``</function>``. Anything else (unterminated, text
    between the parameters, a repeated key) is left as text; this never raises. O(len(text)).

    >>> _function_blocks("Look.\\n<function=bash>\\n<parameter=command>ls -a</parameter>\\n"
    ...                 "</function>")
    [('bash', {'command': 'ls -a'})]
    >>> _function_blocks("<function=bash>\\n<parameter=command>ls")
    []
    """
    if _find_by_first(text, "<function=") == -1:
        return []
    found: list[_Call] = []
    for block in _FUNCTION_BLOCK.finditer(text):
        name, body = block.group(1).strip(), block.group(2)
        arguments: dict[str, str] = {}
        at = 0
        while (parameter := _PARAMETER_BLOCK.match(body, at)) is not None:
            key = parameter.group(1).strip()
            if not key or key in arguments:
                break
            arguments[key] = parameter.group(2).strip()
            at = parameter.end()
        if name and not body[at:].strip():
            found.append((name, arguments))
    return found


# ------------------------------------------------------------------------------- detection

_ANTHROPIC_BLOCKS: Final = frozenset({"tool_use", "tool_result", "thinking",
                                      "redacted_thinking", "server_tool_use", "mcp_tool_use"})
"""The blocks that show a chat is Anthropic's (a server tool's or an MCP server's call
too: a run using only Anthropic's web search was read as OpenAI's)."""
_ANTHROPIC_TOOL_BLOCKS: Final = frozenset({"tool_use", "tool_result", "server_tool_use",
                                           "mcp_tool_use"})
"""The blocks a chat read as OpenAI's is refused for: its calls and results would be lost.
(A ``thinking`` block is no sign of another format there: Mistral's reasoning models put
one in OpenAI-shaped content, its ``thinking`` a list of parts.)"""
OPENAI_ONLY_ROLES: Final = frozenset({"tool", "function", "developer"})
OPENAI_KEYS: Final = ("tool_calls", "function_call", "tool_call_id", "tool_call_ids")


def detect_format(messages: Sequence[Any]) -> Format | None:
    """The format ``messages`` are written in, or None when it is not exactly one of them.

    Every message must fit the answer: native messages all have a string ``type`` and no
    ``role``; Responses items all have a Responses item type (or are role-only ``message``
    items) and at least one of them is a tool's call or output (a ``function_call``, a
    ``computer_call``: :data:`RESPONSES_MARKS`) or a ``message`` with a ``role``, and no
    content holds a block that shows Anthropic's (below); chat
    messages all have a string ``role``, and they are Anthropic's when some content holds a
    ``tool_use``, ``tool_result``, server or MCP tool call or thinking block, SWE-agent's when
    some assistant message has a string ``action`` (or, with no OpenAI tool key anywhere,
    text holding a complete ``<function=...>`` call), OpenAI's otherwise (plain text messages
    map the same way in all of them); LangChain's when every message has one of its types
    (:data:`LANGCHAIN_TYPES`) and no ``role`` (but a ``chat`` message, which carries its
    own), none a ``text``, some a ``content``, ``data`` or ``kwargs``. Mixed signals, a
    message that is not an object and an empty list give None. O(total size of the
    messages' top levels and texts).

    >>> detect_format([{"role": "user", "content": "hi"}]), detect_format([{"text": "hi"}])
    ('openai', None)
    """
    return format_evidence(messages)[0]


def format_evidence(messages: Sequence[Any]) -> tuple[Format | None, bool]:
    """:func:`detect_format`'s answer, and whether something specific to that format decided
    it: False for a plain chat (roles and text only), which every format but native reads
    alike and which therefore cannot contradict another thread's format.

    >>> format_evidence([{"role": "user", "content": "hi"}])
    ('openai', False)
    """
    if not messages or not all(isinstance(m, Mapping) for m in messages):
        return None, True
    types = _plain_all([m.get("type", _ABSENT) for m in messages])
    typed = all(is_string(kind) for kind in types)
    if typed and any("role" in m for m in messages) and _roles_of_chat_messages(
            messages, types) and _langchain_s(messages, types):
        # LangChain's ChatMessage, as its fields, carries its own role beside its type.
        return "langchain", True
    if typed and not any("role" in m for m in messages):
        if any(kind in RESPONSES_MARKS for kind in types) and all(
                kind in _RESPONSES_ITEMS for kind in types):
            return "responses", True
        if _langchain_s(messages, types):
            return "langchain", True
        if _content_without_text(messages):
            return None, True  # (another library's messages: see _content_without_text)
        return "native", True
    # (Anthropic's messages as its SDK dumps them are ``"type": "message"`` items with a role
    # too: their tool_use, tool_result and thinking blocks, which no Responses item holds,
    # tell them; read as Responses, their calls were media and a loop of them went unseen.)
    anthropic = any(_first_block(m.get("content"), _ANTHROPIC_BLOCKS) is not None
                    for m in messages)
    if not anthropic and all(text_in("message" if kind is _ABSENT else kind, _RESPONSES_ITEMS)
                             for kind in types) and any(
        text_in(kind, RESPONSES_MARKS) or (kind == "message" and "role" in m)
        for m, kind in zip(messages, types, strict=True)
    ):
        return "responses", True
    roles = _plain_all([m.get("role") for m in messages])
    if not all(is_string(role) for role in roles):
        return None, True
    openai = any(role in OPENAI_ONLY_ROLES or any(k in m for k in OPENAI_KEYS)
                 for m, role in zip(messages, roles, strict=True))
    if anthropic:
        return (None if openai else "anthropic"), True
    assistants = [m for m, role in zip(messages, roles, strict=True) if role == "assistant"]
    if any(is_string(m.get("action")) for m in assistants) or (not openai and any(
            _function_blocks(_joined_text(m.get("content"), "")) for m in assistants
            if isinstance(m.get("content"), (str, list)))):
        return "swe-agent", True
    if not openai and _answered_commands(messages):
        return "mini-swe-agent", True
    return "openai", openai


def shows_swe_agent_actions(messages: Sequence[Any]) -> bool:
    """Whether ``messages`` are SWE-agent's as :func:`format_evidence` tells them and some
    assistant turn of them holds a string ``action``, the command SWE-agent parsed from it:
    what a batch whose chat format was detected reads as SWE-agent's wherever the run lies
    (:func:`vthread.documents.run_reading_format`). The ``action`` is looked for first: a
    run without one is not judged further. The twin of the core's
    ``adapters::shows_swe_agent_actions``.

    >>> shows_swe_agent_actions([{"role": "assistant", "content": "ls", "action": "ls"}])
    True
    """
    if not any(isinstance(m, Mapping) and is_string(m.get("action")) for m in messages):
        return False
    return format_evidence(messages)[0] == "swe-agent" and assistant_acts(messages)


def assistant_acts(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether some assistant message of ``messages`` (mappings with a string role, as
    :func:`format_evidence` finds SWE-agent's) holds a string ``action``: SWE-agent records
    the command it parsed from the turn there."""
    roles = _plain_all([m.get("role") for m in messages])
    return any(role == "assistant" and is_string(m.get("action"))
               for m, role in zip(messages, roles, strict=True))


def _content_without_text(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether typed messages without a role hold a ``content`` and none a ``text``: the
    messages of a library vthread does not read (``{"type": "question", "content": ...}``;
    LangChain's, whose types are known, are read: :func:`_langchain_s`), not native ones,
    which read as native would all be alike and every thread a loop."""
    return not any("text" in m for m in messages) and any("content" in m for m in messages)


def _langchain_s(messages: Sequence[Mapping[str, Any]], types: list[Any]) -> bool:
    """Whether typed messages without a role (of ``types``, plain strings) are LangChain's:
    none holds a ``text``, one a ``content`` or the fields another of LangChain's dict forms
    wraps (``data``, ``kwargs``), and every type is one of :data:`LANGCHAIN_TYPES`."""
    return (not any("text" in m for m in messages)
            and any(key in m for m in messages for key in _LANGCHAIN_WRAPPERS)
            and all(kind in LANGCHAIN_TYPES for kind in types))


def langchain_s(messages: Sequence[Any]) -> bool:
    """Whether ``messages`` are LangChain's (:func:`_langchain_s`), which read as native
    are all alike. O(messages).

    >>> langchain_s([{"type": "human", "content": "hi"}, {"type": "ai", "content": ""}])
    True
    """
    if not all(isinstance(m, Mapping) for m in messages):
        return False
    types = _plain_all([m.get("type") for m in messages])
    return (all(is_string(kind) for kind in types) and _roles_of_chat_messages(messages, types)
            and _langchain_s(messages, types))


def _roles_of_chat_messages(messages: Sequence[Mapping[str, Any]], types: list[Any]) -> bool:
    """Whether only LangChain's ``chat`` messages (of ``types``) among ``messages`` have a
    ``role``, as its ``ChatMessage`` carries one beside its type."""
    return all("role" not in m or kind in _LANGCHAIN_ROLE_TYPES
               for m, kind in zip(messages, types, strict=True))


def another_library_s(messages: Sequence[Any]) -> bool:
    """Whether ``messages`` are typed messages of a library vthread does not read: each a
    mapping with a string ``type`` and no ``role``, one holding a ``content`` and none a
    ``text`` (``{"type": "question", "content": ...}``), and not LangChain's, in no format.
    O(messages).

    >>> another_library_s([{"type": "question", "content": "hi"}, {"type": "answer"}])
    True
    """
    return all(isinstance(m, Mapping) and is_string(m.get("type")) and "role" not in m
               for m in messages) and _content_without_text(messages) and not langchain_s(
                   messages)


_OBSERVATION_OPEN: Final = "<returncode>"
"""How mini-swe-agent's observation of a command opens (its default template)."""


def _answered_commands(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an assistant message holding mini-swe-agent's command (exactly one fenced
    ``bash`` block, in string content) is answered by a user message whose string content
    opens with ``<returncode>``: what mini-swe-agent's messages show of their format without
    the run object that declares it (a chat that only shows a bash block is not one). O(the
    text of the assistant messages so answered)."""
    for turn, reply in pairwise(messages):
        if _plain(turn.get("role")) != "assistant" or _plain(reply.get("role")) != "user":
            continue
        command, observation = _plain(turn.get("content")), _plain(reply.get("content"))
        if (is_string(command) and is_string(observation)
                and observation.startswith(_OBSERVATION_OPEN)
                and len(_bash_blocks(command)) == 1):
            return True
    return False


class FormatConflictError(ValueError):
    """The threads examined are in different formats: ``formats`` maps each format to the
    positions of the threads that showed it."""

    def __init__(self, formats: Mapping[Format, list[int]]) -> None:
        self.formats: dict[Format, list[int]] = dict(formats)
        super().__init__(self.where())

    def where(self, unit: str | None = None) -> str:
        """Each format and the positions that showed it, each position ``unit`` (line, run,
        row) when given: ``native at line 1; openai at lines 2, 3``, each format's
        :func:`positions_named` (a file of many runs names the few that disagree, not every
        one that agrees)."""
        said = []
        for name, at in self.formats.items():
            prefix = "" if not unit else f"{unit} " if len(at) == 1 else f"{unit}s "
            said.append(f"{name} at {prefix}{positions_named(at)}")
        return "; ".join(said)


POSITIONS_SHOWN: Final = 5
"""How many positions (lines, rows, runs) of one format a message names by number."""


def positions_named(positions: Sequence[int], total: int | None = None) -> str:
    """``positions`` as a message names them: the first :data:`POSITIONS_SHOWN`, the rest
    counted (of ``total``, when only the first few are at hand): "71, 90, 91, 92, 95 and 3
    more"."""
    total = len(positions) if total is None else total
    shown = ", ".join(map(str, positions[:POSITIONS_SHOWN]))
    return f"{shown} and {total - POSITIONS_SHOWN} more" if total > POSITIONS_SHOWN else shown


class FormatUnknownError(ValueError):
    """No thread examined is in a known format, though the thread at ``position`` (the first
    such) has messages."""

    def __init__(self, position: int) -> None:
        self.position = position
        super().__init__(f"{position}: in no known format")


_NO_CHAT_FITS: Final = frozenset({"native", "langchain"})
"""The formats a plain chat (roles and text) does not fit: their messages are typed."""


def common_format(evidence: Sequence[tuple[int, Format, bool]],
                  unknown: int | None = None) -> Format:
    """The one format that every thread of ``evidence`` (position, format, decisive) fits,
    or :class:`FormatConflictError` naming the disagreeing positions; with no evidence,
    :class:`FormatUnknownError` when ``unknown`` is the position of a thread with messages in
    no known format.

    Decisive threads must all show the same format. A plain chat (not decisive) fits any
    format but native and LangChain's, and alone is read as OpenAI's (the callers then look
    on for a thread that shows a format: :func:`vthread.documents.first_settling`). No
    evidence at all reads as native (every thread is then empty or an error record).
    O(len(evidence)).

    >>> common_format([(1, "openai", False), (2, "anthropic", True)])
    'anthropic'
    >>> common_format([(1, "native", True), (2, "openai", True)])
    Traceback (most recent call last):
    ...
    vthread.adapters.FormatConflictError: native at 1; openai at 2
    """
    if not evidence and unknown is not None:
        raise FormatUnknownError(unknown)
    shown: dict[Format, list[int]] = {}
    for position, format_, decisive in evidence:
        if decisive:
            shown.setdefault(format_, []).append(position)
    plain = [position for position, _, decisive in evidence if not decisive]
    unfit = plain and any(format_ in _NO_CHAT_FITS for format_ in shown)
    if len(shown) > 1 or unfit:
        if unfit:
            # Plain chats are what disagrees with native threads and LangChain's (they are
            # chat, read as OpenAI's); between two chat formats they fit either, so they are
            # not named.
            shown.setdefault("openai", []).extend(plain)
            shown["openai"].sort()
        raise FormatConflictError(shown)
    if shown:
        return next(iter(shown))
    return "openai" if plain else "native"


def agreed_format(evidence: Sequence[tuple[int, Format, bool]], unknown: int | None,
                  unit: str, subject: str, override: str, detail: str = "") -> Format:
    """:func:`common_format`, its failures as a ``ValueError`` a person reads: the ``unit``
    (thread, row, line) with messages in no format (``detail``: which of its messages differ,
    :func:`shapes_apart`), or where ``subject`` ("the threads") showed each format;
    ``override`` says how to name the format instead ("pass format=")."""
    try:
        return common_format(evidence, unknown)
    except FormatUnknownError as missing:
        raise ValueError(f"{unit} {missing.position}: cannot tell the message format{detail}; "
                         f"expected {EXPECTED} (or {override})") from None
    except FormatConflictError as conflict:
        raise ValueError(f"{subject} are in different formats ({conflict.where(unit)}); "
                         f"{override} to read them all in one") from None


def shapes_apart(messages: Sequence[Any]) -> str:
    """Where messages in no one format part ways, for its error: the first message whose
    shape (native: a string ``type`` and no ``role``; chat: a string ``role``) is not the
    first message's, as `` (messages[0] has ..., messages[2] has ...)``, or that typed
    messages hold a ``content`` and no ``text`` (another library's); "" when neither.

    >>> shapes_apart([{"type": "user", "text": "x"}, {"role": "user", "content": "y"}])[:48]
    ' (messages[0] has a "type" and no "role", as nat'
    """
    def shape(message: Any) -> str:
        if not isinstance(message, Mapping):
            return "is no mapping"
        if is_string(message.get("role")):
            return 'has a "role", as chat messages do'
        if is_string(message.get("type")) and "role" not in message:
            return 'has a "type" and no "role", as native messages do'
        return 'has neither a string "type" nor a string "role"'

    if not messages:
        return ""
    first = shape(messages[0])
    for index in range(1, len(messages)):
        other = shape(messages[index])
        if other != first:
            return f" (messages[0] {first}; messages[{index}] {other})"
    if another_library_s(messages):
        return (' (its messages have a "type" and a "content" but no "text" and no "role": '
                "neither native nor chat messages)")
    return _chats_apart(messages) if first.startswith('has a "role"') else ""


def _chats_apart(messages: Sequence[Mapping[str, Any]]) -> str:
    """Where chat messages part ways between Anthropic's and OpenAI's: the first holding a
    block only Anthropic's hold, the first with a role or key only OpenAI's have, and what
    reads them; "" when not both."""
    block = next(((index, kind) for index, m in enumerate(messages)
                  if (kind := _first_block(m.get("content"), _ANTHROPIC_BLOCKS)) is not None),
                 None)
    openai = next(((index, what) for index, m in enumerate(messages)
                   if (what := _openai_only(m)) is not None), None)
    if block is None or openai is None:
        return ""
    (at, kind), (where, what) = block, openai
    advice = ("format openai reads them, the block kept as its turn's media (as LangChain's "
              "convert_to_openai_messages writes a Claude turn)" if kind in (
                  "thinking", "redacted_thinking")
              else "the calls of one format are lost read as the other's: split them")
    return (f" (messages[{at}] holds a {kind} block, as Anthropic's messages do; "
            f"messages[{where}] has {what}, as OpenAI's do: {advice})")


def _openai_only(message: Mapping[str, Any]) -> str | None:
    """What of ``message`` only OpenAI's messages have, said for an error (its role, or its
    first OpenAI tool key); None when nothing."""
    role = _plain(message.get("role"))
    if text_in(role, OPENAI_ONLY_ROLES):
        return f'the role "{role}"'
    key = next((key for key in OPENAI_KEYS if key in message), None)
    return None if key is None else f'"{key}"'


_OPENAI_RESULT_ROLES: Final = frozenset({"tool", "function"})
"""The roles of OpenAI chat's tool results, which no Responses message has."""


def _not_anthropic(message: Mapping[str, Any], index: int) -> None:
    """A ValueError for a chat message read as OpenAI's that holds Anthropic's tool blocks
    (a run of another format in the batch): read on, its tool calls and results would be
    media, and its loops lost or made up."""
    kind = _first_block(message.get("content"), _ANTHROPIC_TOOL_BLOCKS)
    if kind is not None:
        raise ValueError(f"message {index} holds a {kind} block, which only Anthropic's "
                         "messages hold (is the thread in format 'anthropic'?)")


def _holds(value: Any) -> bool:
    """Whether a key's value holds something: a logger that writes every field writes
    ``"tool_calls": null`` (or an empty list) on messages that have none."""
    return value is not None and not (isinstance(value, (list, tuple)) and not value)


def _not_openai(message: Mapping[str, Any], index: int, role: str, roles: frozenset[str],
                unit: str = "message") -> None:
    """A ValueError for a message read as Anthropic's or as a Responses message that has a
    role or key only OpenAI's chat has (``tool_calls``, a ``tool`` result): read on, its
    tool calls would be lost and its results read as text."""
    key = next((key for key in OPENAI_KEYS if _holds(message.get(key))), None)
    if key is None and not text_in(role, roles):
        return
    what = f"a {key!r} key" if key is not None else f"role {role!r}"
    raise ValueError(f"{unit} {index} has {what}, which only OpenAI's chat messages have (is "
                     "the thread in format 'openai'?)")


def _first_block(content: Any, kinds: frozenset[str]) -> str | None:
    """The type of the first block (an object) of a content list whose type is one of
    ``kinds``, else None (and for content that is no list)."""
    if not isinstance(content, list):
        return None
    return next((_plain(block.get("type")) for block in content
                 if isinstance(block, Mapping) and text_in(block.get("type"), kinds)), None)


def _plain(value: Any) -> Any:
    """``value``, a string as an exact ``str`` of its content, anything else as it is.

    The adapters compare, hash and search the strings they read (roles, types, names, texts);
    a ``str`` subclass's own ``__eq__``, ``__hash__``, ``find`` or ``__len__`` must not decide
    what a message is, nor raise from inside a translation: the project compares strings by
    content, as the compiled core reads them. ``str.__str__`` copies a subclass's content
    without running any of its code.

    >>> class Loud(str):
    ...     def __eq__(self, other): raise RuntimeError
    >>> type(_plain(Loud("user"))).__name__, _plain(3)
    ('str', 3)
    """
    if type(value) is str or not is_string(value):
        return value
    return str.__str__(value)


_EXACT: Final = frozenset({str, type(None), object})


def _plain_all(values: list[Any]) -> list[Any]:
    """:func:`_plain` of each of ``values``: the list itself when they are all exact strings,
    None or :data:`_ABSENT`, the usual case, told at C speed."""
    if set(map(type, values)) <= _EXACT:
        return values
    return [_plain(value) for value in values]


# ------------------------------------------------------------------------------ shared parts


class MessageTypeError(TypeError, ValueError):
    """Messages of a chat format that are no sequence of objects (a message that is a
    model object, a tuple, None), naming the first bad one: a ``TypeError``, as the same
    mistake in native messages is, so that a harness catches it whatever the format, and a
    ``ValueError``, as every other message a format cannot read is."""


def _checked(messages: Any) -> Sequence[Mapping[str, Any]]:
    """``messages`` as a sequence of mappings, or a :class:`MessageTypeError` naming the
    first bad index."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise MessageTypeError(f"messages must be a list of messages, not "
                               f"{json_type(messages)}")
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise MessageTypeError(_not_an_object(f"message {index}", message))
    return messages


def _not_an_object(where: str, value: Any) -> str:
    """Why ``value`` at ``where`` is read no further: it is no object, named as JSON names
    it; a pydantic model (an SDK's message or content block, as ``response.content`` holds
    them) named with what to pass instead."""
    return f"{where} is not an object ({json_type(value)}){object_hint(value)}"


_JSON_TYPES: Final = {dict: "object", list: "array", str: "string", int: "number",
                      float: "number", bool: "boolean", type(None): "null"}


def json_type(value: Any) -> str:
    """What ``value`` is, named as JSON names it (``"an array"``, ``"a number"``; another
    Python type by its own name), for messages about a file's values.

    >>> json_type([1]), json_type(2.5), json_type(None), json_type((1,))
    ('an array', 'a number', 'a null', 'a tuple')
    """
    kind = type(value)
    # A subclass of a JSON type (an OrderedDict, a str subclass) is named as its JSON type.
    name = next((_JSON_TYPES[base] for base in kind.__mro__ if base in _JSON_TYPES),
                kind.__name__)
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def _role(message: Mapping[str, Any], index: int) -> str:
    role = message.get("role")
    if type(role) is str:
        return role
    role = _plain(role)
    if not is_string(role):
        raise ValueError(f"message {index} has no role" if role is None
                         else f"message {index}: role must be a string")
    return role


def _finish(
    message: Mapping[str, Any],
    role: str,
    first: int,
    out: list[dict[str, Any]],
    role_types: Mapping[str, str],
    media: list[Any],
    usage: Any = _ABSENT,
) -> None:
    """Keep the message visible (an empty text message if it yielded none), attach its usage,
    and its ``media`` to its first native message's meta: the suffix heuristic compares meta,
    so two messages with different images differ, and the message's other native messages
    stay as they are (an image beside a text, or a result, does not make a message of its
    own, which a loop could begin at). ``usage``: the message's usage where its format
    keeps it elsewhere than :func:`_usage` looks."""
    if len(out) == first:
        out.append({"type": role_types.get(role, role), "text": ""})
    if media:
        out[first].setdefault("meta", {})["media"] = media
    ends = _SOURCE_ENDS.get()
    if ends is not None:
        ends.append(len(out))
    tokens = _usage_tokens(_usage(message) if usage is _ABSENT else usage)
    if tokens is not None:
        out[first]["usage"] = {"tokens": tokens}


def _usage(message: Mapping[str, Any]) -> Any:
    """The message's own usage, else that of the response recorded with it."""
    if "usage" in message:
        return message["usage"]
    for holder in (message.get("response"), message.get("extra")):
        if isinstance(holder, Mapping):
            if isinstance(holder.get("usage"), Mapping):
                return holder["usage"]
            response = holder.get("response")
            if isinstance(response, Mapping) and isinstance(response.get("usage"), Mapping):
                return response["usage"]
    return None


def _usage_tokens(usage: Any) -> Any:
    """The first number among the usage's token fields: a real number of any type (NumPy's
    integers and ``Decimal`` too, as a native ``usage.tokens`` may be), not a boolean."""
    if not isinstance(usage, Mapping):
        return None
    for field in _TOKEN_FIELDS:
        value = usage.get(field)
        if real_number(value) is not None:
            return value
    return None


def _text(message: Mapping[str, Any], index: int) -> str:
    return _joined_text(message.get("content"), f"message {index}")


def _joined_text(content: Any, where: str) -> str:
    """A content value's text: a string as is, a list's text parts joined, null as ""."""
    if content is None:
        return ""
    if type(content) is str:
        return content
    if is_string(content):
        return _plain(content)  # type: ignore[no-any-return]
    if isinstance(content, Mapping):
        content = [content]
    elif isinstance(content, bytes) or not isinstance(content, Sequence):
        raise ValueError(f"{where}: content must be a string, a list of parts or null, not "
                         f"{json_type(content)}")
    texts = []
    for part in content:
        if is_string(part):
            texts.append(_plain(part))
        elif isinstance(part, Mapping) and text_in(part.get("type", "text"), TEXT_PARTS):
            text = _plain(part.get("text"))
            if is_string(text):
                texts.append(text)
    return _PART_SEPARATOR.join(texts)


def _media(content: Any) -> list[Any]:
    """The parts of a content list that are no text (images, audio, files, documents,
    refusals: objects whose type is a string naming no text part), as given."""
    if content is None or type(content) is str:
        return []  # the usual cases, by exact class (an ABC check costs more)
    if isinstance(content, Mapping):
        content = [content]
    elif isinstance(content, (str, bytes)) or not isinstance(content, Sequence):
        return []
    return [part for part in content if isinstance(part, Mapping)
            and is_string(part.get("type", "text")) and not text_in(part.get("type", "text"),
                                                                           TEXT_PARTS)]


def _chat_media(message: Mapping[str, Any], role: str, index: int) -> list[Any]:
    """The media an OpenAI chat message's first native message carries: none for a tool's
    result, which holds its media itself (:func:`_result`). A content list holding a block
    only Anthropic's messages hold is a ValueError (:func:`_not_anthropic`), checked here,
    where the content is read anyway: the usual string content costs one test."""
    content = message.get("content")
    if content is None or type(content) is str:
        return []
    _not_anthropic(message, index)
    return [] if role in ("tool", "function") else _media(content)


def _result(content: Any, where: str) -> Any:
    """A tool's result: its content's text parsed as JSON when it is valid JSON text, else the
    text; or, when the content holds parts that are no text (a screenshot), a fresh list of
    its parts as given, so that two different images are two results."""
    if _media(content):
        return [content] if isinstance(content, Mapping) else list(content)
    return _json_or_text(_joined_text(content, where))


def _json_or_text(text: str) -> Any:
    """``text`` parsed as JSON when it is valid JSON text (stdlib rules), else ``text``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def _call(
    calls: Mapping[Any, tuple[str, Any]], call_id: Any, result: Mapping[str, Any]
) -> tuple[str, Any]:
    """(name, arguments) of the call ``call_id``; for an unknown one, the result's own name."""
    if _hashable(call_id):
        found = calls.get(_id_key(call_id))
        if found is not None:
            return found
    return _own_name(result), _ABSENT


def _id_key(call_id: Any) -> Any:
    """A call id as the ``calls`` tables key it: two ids are one exactly when their
    ``JSON.stringify`` texts are equal, the project's value equality. A string is its
    JavaScript string (a surrogate pair and its astral character are one id, as in the
    thread's JSON line); a number or boolean its JSON text in a tuple, apart from any string,
    since Python's dict would make ``1``, ``1.0`` and ``True`` one key where JavaScript has
    ``true`` apart from ``1`` (and ``1.0`` is ``1``). NaN and the infinities, which
    ``JSON.stringify`` writes as ``null``, are no null id: JavaScript keys them ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"``, so a result with such an id answers no call with a null
    or absent one (nor does the compiled core find one for it)."""
    if type(call_id) is str:
        return js_string(call_id)
    if is_string(call_id):
        return js_string(str.__str__(call_id))
    if call_id is None:
        return None
    text = canonical(call_id)
    if text == "null":
        number = real_number(call_id)
        if number is not None:
            return ("NaN" if number != number else "Infinity" if number > 0 else "-Infinity",)
    return (text,)


def _own_name(message: Mapping[str, Any]) -> str:
    name = _plain(message.get("name"))
    return name if is_string(name) else ""


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _request(name: str, arguments: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if arguments is not _ABSENT:
        function["arguments"] = arguments
    return {"type": "activity", "text": "",
            "meta": {"activity": {"type": "request", "function": function}}}


def _response(name: str, arguments: Any, result: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if arguments is not _ABSENT:
        function["arguments"] = arguments
    function["result"] = result
    return {"type": "activity", "text": "",
            "meta": {"activity": {"type": "response", "function": function}}}
