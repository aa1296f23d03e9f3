"""Two peers' published loop rules, as baselines for loops anywhere in a finished run.

Both peers watch a live agent and ask after each step whether it is stuck. To compare them
with ``scan(anywhere=True)`` on finished runs, each rule is asked after every step, and
every stretch where it would have fired is reported as a loop: ``[start, end)`` in native
message indices (callers restate them in source messages). Written from the projects'
published descriptions, not their code:

- OpenHands' stuck detector: the last 4 actions and observations identical; the last 3
  actions identical and their observations errors; 3 identical agent messages in a row; or
  actions and observations alternating A/B over the last 6 steps.
- gemini-cli's loop detection: 5 identical consecutive tool calls (name and arguments); or
  a 50-character chunk of the model's text seen 10 times, close together (average distance
  at most 1.5 chunks), outside code blocks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

Span = tuple[int, int]

_ERROR: Final = re.compile(r"error|traceback|exception|<returncode>[1-9]", re.IGNORECASE)
GEMINI_TOOL_CALLS: Final = 5
GEMINI_CHUNK: Final = 50
GEMINI_CHUNK_REPEATS: Final = 10


def _steps(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, int, int]]:
    """(action, observation, first message, last message) per agent step: a tool call with
    its result, or an agent message (observation "")."""
    steps: list[tuple[str, str, int, int]] = []
    pending: dict[str, tuple[str, int]] = {}
    for index, message in enumerate(messages):
        kind = message.get("type")
        if kind == "activity":
            activity = message["meta"]["activity"]
            function = activity["function"]
            action = json.dumps([function.get("name"), function.get("arguments")],
                                sort_keys=True, default=str)
            if activity.get("type") == "request":
                pending[action] = (action, index)
            else:
                start = pending.pop(action, (action, index))[1]
                steps.append((action, json.dumps(function.get("result"), default=str),
                              start, index))
        elif kind not in ("user", "system", "reasoning", "tool"):
            text = message.get("text")
            if isinstance(text, str) and text.strip():
                steps.append(("say:" + text, "", index, index))
    return steps


def _merged(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def openhands(messages: Sequence[Mapping[str, Any]]) -> list[Span]:
    """Where OpenHands' stuck detector would have fired, as merged spans."""
    steps = _steps(messages)
    calls = [s for s in steps if not s[0].startswith("say:")]
    spans: list[Span] = []
    for end in range(len(calls)):
        last4 = calls[max(0, end - 3): end + 1]
        if len(last4) == 4 and len({(a, o) for a, o, _, _ in last4}) == 1:
            spans.append((last4[0][2], last4[-1][3] + 1))
        last3 = calls[max(0, end - 2): end + 1]
        if (len(last3) == 3 and len({a for a, _, _, _ in last3}) == 1
                and all(_ERROR.search(o) for _, o, _, _ in last3)):
            spans.append((last3[0][2], last3[-1][3] + 1))
        last6 = calls[max(0, end - 5): end + 1]
        if (len(last6) == 6 and last6[0][:2] != last6[1][:2]
                and all(last6[i][:2] == last6[i % 2][:2] for i in range(6))):
            spans.append((last6[0][2], last6[-1][3] + 1))
    # three identical agent messages in a row, nothing else between them
    for i in range(len(steps) - 2):
        trio = steps[i: i + 3]
        if all(s[0].startswith("say:") for s in trio) and len({s[0] for s in trio}) == 1:
            spans.append((trio[0][2], trio[-1][3] + 1))
    return _merged(spans)


def gemini(messages: Sequence[Mapping[str, Any]]) -> list[Span]:
    """Where gemini-cli's loop detection would have fired, as merged spans."""
    spans: list[Span] = []
    calls: list[tuple[str, int]] = []
    for index, message in enumerate(messages):
        kind = message.get("type")
        if kind == "activity" and message["meta"]["activity"].get("type") == "request":
            function = message["meta"]["activity"]["function"]
            calls.append((json.dumps([function.get("name"), function.get("arguments")],
                                     sort_keys=True, default=str), index))
        elif kind not in ("user", "system", "tool", "activity"):
            text = message.get("text")
            if isinstance(text, str) and _chunk_loop(text):
                spans.append((index, index + 1))
    for end in range(GEMINI_TOOL_CALLS - 1, len(calls)):
        window = calls[end - GEMINI_TOOL_CALLS + 1: end + 1]
        if len({c for c, _ in window}) == 1:
            spans.append((window[0][1], window[-1][1] + 1))
    return _merged(spans)


def _chunk_loop(text: str) -> bool:
    """A 50-character chunk seen 10 times, average distance at most 1.5 chunks, outside
    fenced code blocks."""
    prose = re.sub(r"```.*?(```|$)", "\n", text, flags=re.DOTALL)
    seen: dict[str, list[int]] = {}
    for position in range(0, max(0, len(prose) - GEMINI_CHUNK + 1)):
        chunk = prose[position: position + GEMINI_CHUNK]
        places = seen.setdefault(chunk, [])
        places.append(position)
        if len(places) >= GEMINI_CHUNK_REPEATS:
            recent = places[-GEMINI_CHUNK_REPEATS:]
            if (recent[-1] - recent[0]) / (GEMINI_CHUNK_REPEATS - 1) <= 1.5 * GEMINI_CHUNK:
                return True
    return False
