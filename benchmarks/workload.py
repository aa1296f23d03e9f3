"""Realistic agent threads, generated deterministically, for benchmarks, samples and tests.

Why it exists: the benchmark workload the production figures were measured on (10,000 threads
of 10-120 messages, ≈650k messages, ≈90 MB of JSONL, ~15% ending in a loop) has to be
reproducible on any machine without shipping 90 MB. Each thread is drawn from its own
``random.Random`` seeded with ``(seed, index)``, so thread *i* is the same whatever ``count``
is asked for, and the output is byte-identical from run to run (whatever ``PYTHONHASHSEED``).
Sizes are calibrated against that workload: seed 0 and 10,000 threads give about 650k messages
and 90 MB of compact JSONL, with most messages short and a few tool results of several
kilobytes.

A thread is a user turn followed by agent steps (optional reasoning, optional narration, one
or two tool calls with their results) and a final answer, turn after turn. About
``loop_share`` of threads end in a planted loop, one of the four heuristics' kinds, split
evenly; each is built so that the scalar reference names exactly that kind (a verbatim block
for ``repeated_suffix``; an activity tail whose call sequence never ends in a square for
``repeated_activity_tail``, so that the suffix check, which runs first, stays quiet; varying
reasoning between identical call/results for ``repeated_result_run``; a bot message cycling a
few sentences for ``repeated_message_text_run``). Healthy threads often end in look-alikes
that must *not* fire: polling that makes progress, different calls with the same empty
result, a call repeated once, identical calls to internal ``_``-prefixed tools.

The same threads convert to OpenAI chat-completions messages (:func:`to_openai`) and to
Anthropic messages (:func:`to_anthropic`) for the format adapters' samples.

Cost: O(characters generated); 10,000 threads take about 15 s of one CPU.

>>> threads = generate_threads(3, seed=1)
>>> [10 <= len(t) <= 120 for t in threads]
[True, True, True]
>>> threads == generate_threads(3, seed=1)
True
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import gzip
import hashlib
import io
import itertools
import json
import random
import re
import string
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TextIO, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsLenAndGetItem

_T = TypeVar("_T")

__all__ = [
    "LOOP_KINDS",
    "MAX_MESSAGES",
    "MIN_MESSAGES",
    "LoopKind",
    "PlantedThread",
    "generate_planted",
    "generate_thread",
    "generate_threads",
    "main",
    "thread_id",
    "to_anthropic",
    "to_computer_use",
    "to_openai",
    "to_responses",
    "write_jsonl",
    "write_samples",
]

Message = dict[str, Any]
Thread = list[Message]
LoopKind = Literal[
    "repeated_suffix",
    "repeated_activity_tail",
    "repeated_result_run",
    "repeated_message_text_run",
]
Format = Literal["native", "openai", "anthropic", "responses", "computer-use", "langchain"]

LOOP_KINDS: Final[tuple[LoopKind, ...]] = (
    "repeated_suffix",
    "repeated_activity_tail",
    "repeated_result_run",
    "repeated_message_text_run",
)
MIN_MESSAGES: Final = 10
MAX_MESSAGES: Final = 120
DEFAULT_LOOP_SHARE: Final = 0.15
#: Share of messages that carry ``usage`` (the rest leave it to an estimator).
USAGE_SHARE: Final = 0.85
#: Threads of a chat assistant (tools now and then) rather than of a tool-driven agent.
CHATTY_SHARE: Final = 0.65
CHATTY_TOOL_TURN_SHARE: Final = 0.2
#: User messages, narrations and reasoning that are a short phrase.
SHORT_SHARE: Final = 0.5
#: Healthy threads that end in a look-alike of a loop.
LOOKALIKE_ENDING_SHARE: Final = 0.35
#: The heuristics' thresholds that planted loops must clear.
ACTIVITY_TAIL_MIN_LENGTH: Final = 8
TEXT_RUN_MIN_UNITS: Final = 8

# ----------------------------------------------------------------------------- vocabulary

_NOUNS: Final = (
    "config", "parser", "module", "function", "test", "fixture", "endpoint", "request",
    "response", "cache", "database", "schema", "migration", "query", "index", "table",
    "column", "field", "record", "log", "error", "exception", "stack trace", "dependency",
    "package", "version", "build", "pipeline", "job", "worker", "queue", "thread", "process",
    "container", "image", "service", "client", "server", "handler", "router", "middleware",
    "token", "session", "user", "account", "permission", "role", "file", "directory", "path",
    "branch", "commit", "diff", "patch", "issue", "ticket", "report", "metric", "dashboard",
    "alert", "timeout", "retry policy", "connection", "socket", "port", "variable", "constant",
    "argument", "parameter", "option", "flag", "default", "value", "type hint", "interface",
    "class", "method", "property", "attribute", "loop", "iterator", "buffer", "stream",
    "chunk", "payload", "header", "cookie", "template", "layout", "component", "widget",
    "page", "form", "button", "stylesheet", "script", "command", "output", "input", "result",
    "summary", "draft", "document", "section", "heading", "invoice", "order", "customer",
    "product", "price", "discount", "shipment", "warehouse", "budget", "forecast", "deadline",
    "meeting", "calendar", "reminder", "email", "attachment", "spreadsheet", "chart",
    "webhook", "scheduler", "backup", "snapshot", "lock", "transaction", "rate limit",
    "feature flag", "changelog", "release", "benchmark", "profile", "regression",
)
_VERBS: Final = (
    ("check", "checked", "checks"), ("update", "updated", "updates"),
    ("fix", "fixed", "fixes"), ("read", "read", "reads"), ("parse", "parsed", "parses"),
    ("load", "loaded", "loads"), ("save", "saved", "saves"), ("rename", "renamed", "renames"),
    ("remove", "removed", "removes"), ("add", "added", "adds"),
    ("refactor", "refactored", "refactors"), ("test", "tested", "tests"),
    ("validate", "validated", "validates"), ("cache", "cached", "caches"),
    ("retry", "retried", "retries"), ("log", "logged", "logs"),
    ("deploy", "deployed", "deploys"), ("build", "built", "builds"),
    ("install", "installed", "installs"), ("configure", "configured", "configures"),
    ("migrate", "migrated", "migrates"), ("index", "indexed", "indexes"),
    ("export", "exported", "exports"), ("import", "imported", "imports"),
    ("merge", "merged", "merges"), ("split", "split", "splits"), ("sort", "sorted", "sorts"),
    ("filter", "filtered", "filters"), ("format", "formatted", "formats"),
    ("render", "rendered", "renders"), ("send", "sent", "sends"),
    ("fetch", "fetched", "fetches"), ("query", "queried", "queries"),
    ("compare", "compared", "compares"), ("measure", "measured", "measures"),
    ("profile", "profiled", "profiles"), ("document", "documented", "documents"),
    ("review", "reviewed", "reviews"), ("revert", "reverted", "reverts"),
    ("restart", "restarted", "restarts"), ("schedule", "scheduled", "schedules"),
    ("summarize", "summarized", "summarizes"), ("draft", "drafted", "drafts"),
    ("verify", "verified", "verifies"), ("trace", "traced", "traces"),
    ("handle", "handled", "handles"), ("wrap", "wrapped", "wraps"),
    ("expose", "exposed", "exposes"), ("skip", "skipped", "skips"),
    ("normalize", "normalized", "normalizes"), ("serialize", "serialized", "serializes"),
    ("inline", "inlined", "inlines"), ("batch", "batched", "batches"),
    ("throttle", "throttled", "throttles"), ("upgrade", "upgraded", "upgrades"),
    ("pin", "pinned", "pins"), ("mock", "mocked", "mocks"), ("patch", "patched", "patches"),
    ("clean up", "cleaned up", "cleans up"), ("look into", "looked into", "looks into"),
    ("set up", "set up", "sets up"), ("break", "broke", "breaks"),
    ("drop", "dropped", "drops"), ("reject", "rejected", "rejects"),
    ("accept", "accepted", "accepts"), ("return", "returned", "returns"),
    ("skip over", "skipped over", "skips over"), ("time out", "timed out", "times out"),
)
_ADJECTIVES: Final = (
    "new", "old", "broken", "flaky", "slow", "fast", "missing", "empty", "stale", "nested",
    "optional", "required", "default", "custom", "internal", "public", "private", "async",
    "cached", "invalid", "valid", "duplicate", "unused", "deprecated", "legacy", "current",
    "previous", "next", "final", "partial", "large", "small", "tiny", "huge", "recent",
    "failing", "passing", "pending", "active", "inactive", "local", "remote", "shared",
    "global", "temporary", "permanent", "primary", "secondary", "readable", "strict",
    "lenient", "noisy", "quiet", "expensive", "cheap", "unexpected", "obvious", "subtle",
    "generated", "manual", "weekly", "monthly", "quarterly", "overdue",
)
_ADVERBS: Final = (
    "quickly", "slowly", "correctly", "again", "twice", "silently", "eagerly", "lazily",
    "safely", "randomly", "sometimes", "always", "rarely", "immediately", "eventually",
    "consistently", "intermittently", "in production", "on startup", "under load",
    "in the test suite", "after the upgrade", "on every request", "only on Windows",
    "in CI", "for large inputs", "when the cache is cold", "since yesterday",
)
_DIRS: Final = (
    "src", "src/api", "src/core", "src/utils", "src/models", "tests", "tests/unit",
    "tests/integration", "lib", "app", "app/views", "app/services", "scripts", "config",
    "docs", "web/components", "pkg/server", "internal/store", "migrations", "tools",
)
_STEMS: Final = (
    "main", "app", "config", "settings", "parser", "client", "server", "handlers", "routes",
    "models", "schema", "utils", "helpers", "cache", "db", "auth", "session", "worker",
    "queue", "jobs", "billing", "invoice", "orders", "users", "search", "index", "export",
    "report", "metrics", "logging", "errors", "retry", "scheduler", "webhooks", "storage",
    "test_api", "test_parser", "test_models", "conftest", "README", "CHANGELOG", "Dockerfile",
)
_EXTENSIONS: Final = (".py", ".py", ".py", ".ts", ".tsx", ".go", ".md", ".json", ".yaml",
                      ".toml", ".sql", ".js")
_HOSTS: Final = ("api.example.com", "internal.example.org", "status.example.net",
                 "docs.example.io", "crm.example.com")
_STATUSES: Final = ("open", "closed", "pending", "shipped", "paid", "overdue", "draft",
                    "archived", "active", "failed")
_FIRST_NAMES: Final = ("Ada", "Bram", "Chen", "Dana", "Elif", "Femi", "Gita", "Hugo", "Ines",
                       "José", "Kai", "Lena", "Mateo", "Noor", "Oskar", "Priya", "Rui", "Sofia",
                       "Tomás", "Yuki", "Zoë")
_PYTHON_MODULES: Final = ("os", "json", "re", "typing", "pathlib", "logging", "datetime",
                          "collections", "itertools", "dataclasses", "asyncio", "sqlite3")

# A slot is written {KIND}; templates are parsed once into (text, kind, text, kind, ...).
_USER_TEMPLATES: Final = (
    "Can you {V} the {A} {N} in {P}?",
    "Please {V} the {N} so that it {VS} {ADV}.",
    "Why does the {N} {V} {ADV}?",
    "The {N} is still {A} after the last {N} — any idea why?",
    "I think the {N} {VS} the {N} {ADV}, can you confirm?",
    "We need to {V} the {A} {N} before the {N} goes out.",
    "Could you also {V} the {N} and {V} the {N}?",
    "Look at {P} and tell me what the {N} does.",
    "The {A} {N} broke when we {VD} the {N}.",
    "Let's {V} the {N} first; the {N} can wait.",
    "Is the {N} {A} or just {A}?",
    "Thanks! Now {V} the {N} for the {A} {N}.",
    "Our {N} {VS} {ADV} and customers are noticing.",
    "Can you find where we {V} the {N}?",
    "Please don't touch the {N}, only the {N} in {P}.",
    "How many {NS} are {A} right now?",
    "Summarize what changed in the {N} since the {A} {N}.",
    "{FIRST} says the {N} {VS} {ADV}. Can you check?",
    "Go ahead and {V} the {N}.",
    "What would it take to {V} the {N} without breaking the {N}?",
    "I'm seeing {AN} {N} in {P} 🙁",
)
_BOT_TEMPLATES: Final = (
    "I {VD} the {N} in {P}.",
    "The {A} {N} now {VS} {ADV}.",
    "Next, I'll {V} the {N} and {V} the {N}.",
    "It looks like the {N} {VS} before the {N} is {A}.",
    "I found {NUM} {A} {NS} in {P}.",
    "The {N} was {A} because the {N} {VD} the {N}.",
    "I've {VD} `{ID}` so it {VS} the {N} {ADV}.",
    "All {NUM} tests pass ✓",
    "The {N} in {P} is {A}; I left it as is.",
    "I {VD} the {A} {N} and {VD} the {N}.",
    "There is one {A} {N} left, in `{ID}`.",
    "Let me {V} the {N} to be sure.",
    "The change is small: `{ID}` now {VS} the {N}.",
    "{FIRST} owns the {N}, so I only {VD} the {N}.",
    "I could not {V} the {N} because the {N} is {A}.",
    "Done — the {N} {VS} {ADV} now.",
    "The {N} → {N} mapping is {A}, which explains the {A} {N}.",
    "I'll {V} the {N} next.",
    "This {VS} the {A} {N} without touching the {N}.",
    "The root cause is {AN} {N} in `{ID}`.",
)
_REASONING_TEMPLATES: Final = (
    "The user wants me to {V} the {N}.",
    "I should {V} the {N} first, then {V} the {N}.",
    "Maybe the {N} is {A} because the {N} {VS} {ADV}.",
    "Let me think about whether the {N} needs {AN} {N}.",
    "The {N} in {P} probably {VS} the {N}.",
    "If I {V} the {N}, the {N} might {V} {ADV}.",
    "So far I have {VD} the {N} and the {N}.",
    "That result suggests the {N} is {A}.",
    "Hmm, `{ID}` {VS} the {N} but not the {N}.",
    "I need to {V} the {A} {N} before touching `{ID}`.",
    "The {N} has {NUM} {A} {NS}, which seems like too many.",
    "Another option is to {V} the {N} {ADV}.",
    "I'm not sure the {N} {VS} the {N}; I should check {P}.",
    "The {A} {N} would explain why the {N} {VS} {ADV}.",
    "Wait — the {N} was {VD} {ADV}, so the {N} is {A}.",
    "The simplest fix is to {V} `{ID}`.",
    "The user said the {N} is {A}, so I'll leave it.",
    "I'll {V} the {N} and compare it with the {N}.",
)
#: Short messages, as people and agents often write them.
_SHORT_USER_TEMPLATES: Final = (
    "Yes, {V} it.", "Now the {N}?", "What about the {A} {N}?", "Try the {A} {N}.",
    "Go on with the {N}.", "Looks {A} to me.", "Skip the {N} for now.", "{V} it {ADV}.",
    "And the {N}?", "Why {A}?", "Ship the {N}.", "Use `{ID}` instead.",
)
_SHORT_BOT_TEMPLATES: Final = (
    "Checking the {N}.", "On it — {V} the {N}.", "Reading {P}.", "The {N} is {A}.",
    "Now the {A} {N}.", "Running `{ID}`.", "Found it in {P}.", "Let me {V} the {N}.",
)
_SHORT_REASONING_TEMPLATES: Final = (
    "Check the {N} next.", "The {N} looks {A}.", "Probably the {N}.", "Need the {A} {N}.",
    "So `{ID}` {VS} it.", "Not the {N}, then.", "{V} the {N} first.",
)
#: Sentences a stuck model keeps producing; no ``.``/``?``/``!`` inside, so one unit each.
_STUCK_SENTENCES: Final = (
    "I apologize for the confusion.",
    "Let me try that again.",
    "I will now update the file.",
    "The tests should pass now.",
    "Let me verify the changes.",
    "I have fixed the issue.",
    "Please let me know if you need anything else.",
    "I will run the command again.",
    "Let me check the output once more.",
    "Here is the updated version.",
)
_USER_NUDGES: Final = (
    "You're repeating yourself. Stop and summarize.",
    "That's the same answer as before?",
    "Stop, this isn't working.",
    "Hello? You keep saying the same thing.",
)
_SLOT: Final = re.compile(r"\{([A-Z]+)\}")
_Template = tuple[str | int, ...]


def _slot_kinds() -> dict[str, int]:
    return {name: code for code, name in
            enumerate(("N", "V", "VD", "VS", "A", "ADV", "P", "ID", "NUM", "FIRST", "NS",
                       "AN"))}


_KIND: Final = _slot_kinds()


def _parse(template: str) -> _Template:
    parts = _SLOT.split(template)
    return tuple(_KIND[p] if i % 2 else p for i, p in enumerate(parts) if p or i % 2)


def _is_one_unit(template: str) -> bool:
    """True when a filled template is exactly one text-run unit: it ends in ``.?!`` and has
    no other, nor a path or identifier that could hold a dot."""
    literal = _SLOT.sub("", template)
    has_dotted_slot = "{P}" in template or "{ID}" in template
    ends_unit = template.endswith((".", "!", "?"))
    return ends_unit and not has_dotted_slot and not re.search(r"[.!?\n]", literal[:-1])


_USER: Final = tuple(_parse(t) for t in _USER_TEMPLATES)
_BOT: Final = tuple(_parse(t) for t in _BOT_TEMPLATES)
_REASONING: Final = tuple(_parse(t) for t in _REASONING_TEMPLATES)
_SHORT_USER: Final = tuple(_parse(t) for t in _SHORT_USER_TEMPLATES)
_SHORT_BOT: Final = tuple(_parse(t) for t in _SHORT_BOT_TEMPLATES)
_SHORT_REASONING: Final = tuple(_parse(t) for t in _SHORT_REASONING_TEMPLATES)
_BOT_ONE_UNIT: Final = tuple(_parse(t) for t in _BOT_TEMPLATES if _is_one_unit(t))


# ------------------------------------------------------------------------------ text drawing


class _Random(random.Random):
    """``random.Random`` with ``choice`` and ``randint`` built on one ``random()`` call.

    The stock methods go through ``_randbelow`` (several Python-level calls per draw) and
    dominated generation time; the bias of flooring a double is below 2**-40 here.
    """

    def choice(self, seq: SupportsLenAndGetItem[_T]) -> _T:
        return seq[int(self.random() * len(seq))]

    def randint(self, a: int, b: int) -> int:
        return a + int(self.random() * (b - a + 1))


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _drawer(rng: random.Random, words: tuple[str, ...]) -> Callable[[], str]:
    """A draw of one of ``words``: ``rng.choice`` without its method-call layers (hot path)."""
    uniform, size = rng.random, len(words)
    return lambda: words[int(uniform() * size)]


_VERB_BASE: Final = tuple(v[0] for v in _VERBS)
_VERB_PAST: Final = tuple(v[1] for v in _VERBS)
_VERB_THIRD: Final = tuple(v[2] for v in _VERBS)
_NUMBERS: Final = tuple(str(n) for n in range(2, 41))
_PLURALS: Final = tuple(_plural(n) for n in _NOUNS)
_ARTICLED_ADJECTIVES: Final = tuple(("an " if a[0] in "aeiou" else "a ") + a
                                    for a in _ADJECTIVES)
# One encoder each: json.dumps with keywords builds a new encoder on every call (hot path).
_compact_json: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_sorted_json: Final = json.JSONEncoder(sort_keys=True).encode


class _Words:
    """Draws words, sentences and paragraphs from one ``random.Random``."""

    def __init__(self, rng: _Random) -> None:
        self.rng = rng
        self._draw: tuple[Callable[[], str], ...] = (
            _drawer(rng, _NOUNS),
            _drawer(rng, _VERB_BASE),
            _drawer(rng, _VERB_PAST),
            _drawer(rng, _VERB_THIRD),
            _drawer(rng, _ADJECTIVES),
            _drawer(rng, _ADVERBS),
            self.path,
            self.identifier,
            _drawer(rng, _NUMBERS),
            _drawer(rng, _FIRST_NAMES),
            _drawer(rng, _PLURALS),
            _drawer(rng, _ARTICLED_ADJECTIVES),
        )

    def fill(self, template: _Template) -> str:
        draw = self._draw
        text = "".join([part if isinstance(part, str) else draw[part]() for part in template])
        return text[0].upper() + text[1:]

    def sentences(self, templates: Sequence[_Template], count: int) -> str:
        choice = self.rng.choice
        return " ".join(self.fill(choice(templates)) for _ in range(count))

    def path(self) -> str:
        rng = self.rng
        return f"{rng.choice(_DIRS)}/{rng.choice(_STEMS)}{rng.choice(_EXTENSIONS)}"

    def identifier(self) -> str:
        rng = self.rng
        verb = rng.choice(_VERBS)[0].replace(" ", "_")
        noun = rng.choice(_NOUNS).replace(" ", "_")
        return f"{verb}_{noun}" if rng.random() < 0.7 else f"{noun}.{verb}"

    def skewed(self, low: int, high: int) -> int:
        """A count in [low, high] skewed towards ``low``: most things are small, a few big."""
        return min(high, low + int(self.rng.expovariate(1.0) * (high - low) / 4))

    def code_lines(self, count: int) -> list[str]:
        """``count`` lines of plausible Python: imports, then functions with nested bodies."""
        rng, ident = self.rng, self.identifier
        lines: list[str] = []
        depth = 0
        for _ in range(count):
            name = ident().replace(".", "_")
            arg = rng.choice(_NOUNS).replace(" ", "_")
            pad = "    " * depth
            if depth == 0:
                roll = rng.random()
                if roll < 0.3 and (not lines or lines[-1].startswith("from")):
                    lines.append(f"from {rng.choice(_PYTHON_MODULES)} import {name}")
                    continue
                lines.append(f"def {name}({arg}, *, strict=False):" if roll < 0.85
                             else f"class {arg.title().replace('_', '')}{rng.randint(1, 9)}:")
                depth = 1
                continue
            shape = rng.randrange(7)
            if shape == 0 and depth < 3:
                lines.append(f"{pad}if {arg} is None:")
                depth += 1
            elif shape == 1 and depth < 3:
                lines.append(f"{pad}for item in {_plural(arg)}:")
                depth += 1
            elif shape == 2:
                lines.append(f"{pad}{arg} = {name}({arg}, {rng.randint(0, 500)})")
            elif shape == 3:
                lines.append(f"{pad}# {self.fill(rng.choice(_SHORT_REASONING))}")
            elif shape == 4:
                lines.append(f"{pad}{arg}.{name}()")
            elif shape == 5:
                lines.append(f'{pad}raise ValueError("{rng.choice(_ADJECTIVES)} {arg}")')
                depth -= 1
            else:
                lines.append(f"{pad}return {name}({arg})")
                depth -= 1
        return lines

    def answer(self) -> str:
        """A final answer: a few sentences, sometimes with a list or a code block."""
        rng = self.rng
        head = self.sentences(_BOT, self.skewed(1, 2))
        shape = rng.random()
        if shape < 0.05:
            bullets = "\n".join(
                f"- {self.fill(rng.choice(_BOT))}" for _ in range(rng.randint(2, 6))
            )
            return f"{head}\n\n{bullets}\n\n{self.sentences(_BOT, 1)}"
        if shape < 0.075:
            code = "\n".join(self.code_lines(rng.randint(3, 12)))
            return f"{head}\n\n```python\n{code}\n```\n\n{self.sentences(_BOT, 1)}"
        if shape < 0.11:
            return f"{head}\n\n{self.sentences(_BOT, self.skewed(2, 5))}"
        return head


# ------------------------------------------------------------------------------------ tools


@dataclass(frozen=True, slots=True)
class _Tool:
    name: str
    weight: int
    arguments: Callable[[_Words], dict[str, Any]]
    result: Callable[[_Words, dict[str, Any]], Any]


def _read_file_args(w: _Words) -> dict[str, Any]:
    if w.rng.random() < 0.2:
        start = w.rng.randint(1, 400)
        return {"path": w.path(), "start_line": start, "end_line": start + w.rng.randint(10, 80)}
    return {"path": w.path()}


def _read_file_result(w: _Words, args: dict[str, Any]) -> Any:
    rng = w.rng
    roll = rng.random()
    if roll < 0.05:
        return f"Error: file not found: {args['path']}"
    lines = rng.randint(30, 80) if roll < 0.04 else w.skewed(1, 6)
    return "\n".join(w.code_lines(lines))


def _search_args(w: _Words) -> dict[str, Any]:
    rng = w.rng
    query = f"{rng.choice(_NOUNS)} {rng.choice(_VERBS)[0]}" if rng.random() < 0.5 \
        else w.identifier()
    args: dict[str, Any] = {"query": query}
    if rng.random() < 0.5:
        args["path"] = rng.choice(_DIRS)
    if rng.random() < 0.3:
        args["max_results"] = rng.choice((5, 10, 20, 50))
    return args


def _search_result(w: _Words, args: dict[str, Any]) -> Any:
    rng = w.rng
    if rng.random() < 0.2:
        return []
    return [
        {"path": w.path(), "line": rng.randint(1, 900), "text": w.code_lines(1)[0].strip()}
        for _ in range(w.skewed(1, 3))
    ]


_SHELL_COMMANDS: Final = (
    "pytest -q {P}", "git status --short", "git diff --stat", "ls -la {D}", "npm test",
    "make build", "python -m mypy {D}", "ruff check {D}", "cat {P} | head -n 40",
    "grep -rn {Q} {D}", "docker compose ps", "go test ./...", "wc -l {P}",
)


def _shell_args(w: _Words) -> dict[str, Any]:
    rng = w.rng
    command = rng.choice(_SHELL_COMMANDS)
    command = command.replace("{P}", w.path()).replace("{D}", rng.choice(_DIRS))
    command = command.replace("{Q}", w.identifier())
    args: dict[str, Any] = {"command": command}
    if rng.random() < 0.3:
        args["timeout"] = rng.choice((30, 60, 120, 600))
    return args


def _shell_result(w: _Words, args: dict[str, Any]) -> Any:
    rng, command = w.rng, args["command"]
    failed = rng.random() < 0.25
    stderr = ""
    if command.startswith(("pytest", "npm test", "go test")):
        passed, failures = rng.randint(1, 300), rng.randint(1, 4) if failed else 0
        lines = [f"FAILED {w.path()}::test_{w.identifier().replace('.', '_')} - "
                 f"AssertionError: {w.fill(rng.choice(_SHORT_REASONING))}"
                 for _ in range(failures)]
        seconds = rng.uniform(0.1, 90)
        lines.append(f"{failures} failed, {passed} passed in {seconds:.2f}s" if failures
                     else f"{passed} passed in {seconds:.2f}s")
        stdout = "\n".join(lines)
    elif command.startswith(("python -m mypy", "ruff", "make")):
        stdout = "\n".join(f"{w.path()}:{rng.randint(1, 900)}: error: {rng.choice(_ADJECTIVES)} "
                           f"{rng.choice(_NOUNS)}" for _ in range(rng.randint(1, 4))) \
            if failed else "Success: no issues found"
    elif command.startswith("git status"):
        stdout = "\n".join(f" {rng.choice('MAD?')} {w.path()}" for _ in range(w.skewed(0, 6)))
    elif command.startswith("git diff"):
        stdout = "\n".join(f" {w.path()} | {rng.randint(1, 80)} {'+' * rng.randint(1, 9)}"
                           for _ in range(w.skewed(1, 6)))
    elif command.startswith("cat"):
        big = rng.random() < 0.05
        stdout = "\n".join(w.code_lines(rng.randint(30, 40) if big else w.skewed(1, 10)))
    elif command.startswith("grep"):
        stdout = "\n".join(f"{w.path()}:{rng.randint(1, 900)}:{w.code_lines(1)[0].strip()}"
                           for _ in range(w.skewed(0, 5)))
    elif command.startswith("wc"):
        stdout = f"{rng.randint(1, 3000)} {command.split()[-1]}"
    else:
        stdout = "\n".join(f"{rng.choice(_STEMS)}{rng.choice(_EXTENSIONS)}"
                           for _ in range(w.skewed(0, 8)))
    if failed and not stdout:
        stderr = f"error: {rng.choice(_NOUNS)} {rng.choice(_ADJECTIVES)} (exit status 1)"
    return {"exit_code": 1 if failed else 0, "stdout": stdout, "stderr": stderr}


def _list_items_args(w: _Words) -> dict[str, Any]:
    rng = w.rng
    args: dict[str, Any] = {"collection": rng.choice(("orders", "invoices", "customers",
                                                      "tickets", "products", "shipments")),
                            "page": rng.randint(1, 12)}
    if rng.random() < 0.5:
        args["page_size"] = rng.choice((10, 20, 50))
    if rng.random() < 0.4:
        args["filter"] = {"status": rng.choice(_STATUSES)}
    return args


def _list_items_result(w: _Words, args: dict[str, Any]) -> Any:
    rng = w.rng
    items = [
        {"id": rng.randint(1000, 99999), "name": f"{rng.choice(_ADJECTIVES)} "
         f"{rng.choice(_NOUNS)}", "status": rng.choice(_STATUSES),
         "amount": round(rng.uniform(5, 5000), 2)}
        for _ in range(w.skewed(0, 4))
    ]
    page = args["page"]
    return {"items": items, "page": page, "next_page": page + 1 if items else None}


def _http_get_args(w: _Words) -> dict[str, Any]:
    rng = w.rng
    resource = rng.choice(("users", "orders", "health", "jobs", "reports", "items"))
    args: dict[str, Any] = {"url": f"https://{rng.choice(_HOSTS)}/v{rng.randint(1, 3)}/"
                                   f"{resource}/{rng.randint(1, 99999)}"}
    if rng.random() < 0.3:
        args["headers"] = {"Accept": "application/json"}
    return args


def _http_get_result(w: _Words, args: dict[str, Any]) -> Any:
    rng = w.rng
    roll = rng.random()
    if roll < 0.1:
        return {"status": rng.choice((404, 500, 503)), "body": "Not Found" if roll < 0.06
                else "upstream error"}
    body = {"id": rng.randint(1, 99999), "name": f"{rng.choice(_ADJECTIVES)} "
            f"{rng.choice(_NOUNS)}", "status": rng.choice(_STATUSES),
            "updated_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                          f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
            "tags": [rng.choice(_ADJECTIVES) for _ in range(rng.randint(0, 3))]}
    if rng.random() < 0.1:
        body["description"] = w.sentences(_BOT, w.skewed(1, 5))
    return {"status": 200, "body": body}


def _list_dir_args(w: _Words) -> dict[str, Any]:
    return {"path": w.rng.choice(_DIRS)}


def _list_dir_result(w: _Words, args: dict[str, Any]) -> Any:
    rng = w.rng
    return sorted({f"{rng.choice(_STEMS)}{rng.choice(_EXTENSIONS)}"
                   for _ in range(w.skewed(0, 6))})


def _sql_args(w: _Words) -> dict[str, Any]:
    rng = w.rng
    table = rng.choice(("orders", "users", "events", "invoices", "sessions"))
    return {"sql": f"SELECT id, status, created_at FROM {table} WHERE status = "
                   f"'{rng.choice(_STATUSES)}' ORDER BY created_at DESC LIMIT "
                   f"{rng.choice((5, 10, 20, 50))}"}


def _sql_result(w: _Words, args: dict[str, Any]) -> Any:
    rng = w.rng
    rows = [[rng.randint(1, 99999), rng.choice(_STATUSES),
             f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"]
            for _ in range(w.skewed(0, 5))]
    return {"columns": ["id", "status", "created_at"], "rows": rows}


_TOPICS: Final = ("python", "postgres", "react", "go", "kubernetes", "docker", "rust")


def _web_search_args(w: _Words) -> dict[str, Any]:
    rng = w.rng
    return {"query": f"{rng.choice(_ADJECTIVES)} {rng.choice(_NOUNS)} "
                     f"{rng.choice(_VERBS)[0]} {rng.choice(_TOPICS)}"}


def _web_search_result(w: _Words, args: dict[str, Any]) -> Any:
    rng = w.rng
    return [{"title": w.fill(rng.choice(_BOT)).rstrip("."),
             "url": f"https://{rng.choice(_HOSTS)}/{w.identifier().replace('.', '/')}"}
            for _ in range(w.skewed(1, 4))]


def _write_file_args(w: _Words) -> dict[str, Any]:
    return {"path": w.path(), "content": "\n".join(w.code_lines(w.skewed(1, 6)))}


def _write_file_result(w: _Words, args: dict[str, Any]) -> Any:
    return f"Wrote {len(args['content'])} bytes to {args['path']}"


_TOOLS: Final = (
    _Tool("read_file", 6, _read_file_args, _read_file_result),
    _Tool("search", 4, _search_args, _search_result),
    _Tool("run_shell", 4, _shell_args, _shell_result),
    _Tool("list_items", 2, _list_items_args, _list_items_result),
    _Tool("http_get", 2, _http_get_args, _http_get_result),
    _Tool("list_dir", 2, _list_dir_args, _list_dir_result),
    _Tool("sql_query", 1, _sql_args, _sql_result),
    _Tool("web_search", 1, _web_search_args, _web_search_result),
    _Tool("write_file", 1, _write_file_args, _write_file_result),
)
_TOOL_WEIGHTS: Final = tuple(t.weight for t in _TOOLS)


# ---------------------------------------------------------------------------- thread builder


@dataclass(frozen=True, slots=True)
class PlantedThread:
    """A generated thread and the loop kind planted at its end (``None`` when healthy)."""

    messages: Thread
    planted: LoopKind | None


class _Builder:
    """Builds one thread's messages from one ``random.Random``."""

    def __init__(self, rng: _Random) -> None:
        self.rng = rng
        self.words = _Words(rng)
        self.chatty = rng.random() < CHATTY_SHARE
        self._calls_seen: set[str] = set()

    # -- single messages

    def _usage(self, message: Message, size: int) -> Message:
        if self.rng.random() < USAGE_SHARE:
            message["usage"] = {"tokens": max(1, (size + 3) // 4)}
        return message

    def text(self, kind: str, text: str) -> Message:
        return self._usage({"type": kind, "text": text}, len(text))

    def user(self) -> Message:
        w, rng = self.words, self.rng
        if rng.random() < SHORT_SHARE:
            return self.text("user", w.sentences(_SHORT_USER, 1))
        text = w.sentences(_USER, w.skewed(1, 2))
        if rng.random() < 0.05:
            trace = "\n".join(
                f'  File "{w.path()}", line {rng.randint(1, 900)}, in {w.identifier()}'
                for _ in range(rng.randint(2, 6))
            )
            text = (f"{text}\n\nTraceback (most recent call last):\n{trace}\n"
                    f"{rng.choice(('KeyError', 'TypeError', 'TimeoutError'))}: "
                    f"{rng.choice(_NOUNS)}")
        return self.text("user", text)

    def reasoning(self) -> Message:
        w = self.words
        if self.rng.random() < SHORT_SHARE:
            return self.text("reasoning", w.sentences(_SHORT_REASONING, 1))
        return self.text("reasoning", w.sentences(_REASONING, w.skewed(1, 3)))

    def narration(self) -> Message:
        w = self.words
        if self.rng.random() < SHORT_SHARE:
            return self.text("bot", w.sentences(_SHORT_BOT, 1))
        return self.text("bot", w.sentences(_BOT, w.skewed(1, 2)))

    def answer(self) -> Message:
        return self.text("bot", self.words.answer())

    def _activity(self, kind: str, name: str, arguments: Any, result: Any = None,
                  *, with_result: bool = False) -> Message:
        function: dict[str, Any] = {"name": name, "arguments": arguments}
        if with_result:
            function["result"] = result
        message: Message = {"type": "activity", "text": "",
                            "meta": {"activity": {"type": kind, "function": function}}}
        size = len(_compact_json(function))
        return self._usage(message, size)

    def call(self, name: str, arguments: dict[str, Any], result: Any) -> list[Message]:
        """A tool request and its response."""
        return [
            self._activity("request", name, arguments),
            self._activity("response", name, arguments, result, with_result=True),
        ]

    def fresh_call(self, tool: _Tool | None = None) -> tuple[str, dict[str, Any], Any]:
        """A (name, arguments, result) whose call this thread has not made yet."""
        rng, w = self.rng, self.words
        for _ in range(8):  # a repeat is rare; give up after a few draws rather than loop
            chosen = tool or rng.choices(_TOOLS, _TOOL_WEIGHTS)[0]
            arguments = chosen.arguments(w)
            key = chosen.name + _sorted_json(arguments)
            if key not in self._calls_seen:
                break
        self._calls_seen.add(key)
        return chosen.name, arguments, chosen.result(w, arguments)

    def step_calls(self) -> list[Message]:
        """One or, sometimes, two parallel calls (both requests, then both responses)."""
        first = self.call(*self.fresh_call())
        if self.rng.random() < 0.95:
            return first
        second = self.call(*self.fresh_call())
        return [first[0], second[0], first[1], second[1]]

    # -- healthy material

    def units(self) -> Iterator[list[Message]]:
        """Turn after turn of realistic material, one unit (a message or a call) at a time."""
        rng = self.rng
        while True:
            yield [self.user()]
            if self.chatty:
                steps = 1 if rng.random() < CHATTY_TOOL_TURN_SHARE else 0
            else:
                steps = rng.randint(1, 3)
            for _ in range(steps):
                if rng.random() < 0.6:
                    yield [self.reasoning()]
                if rng.random() < 0.35:
                    yield [self.narration()]
                if rng.random() < 0.05:
                    yield self.lookalike()
                else:
                    yield self.step_calls()
            if rng.random() < 0.5:
                yield [self.reasoning()]
            yield [self.answer()]

    def healthy(self, length: int) -> Thread:
        """Exactly ``length`` messages of healthy material, starting with a user message."""
        messages: Thread = []
        for unit in self.units():
            if len(messages) + len(unit) > length:
                break
            messages.extend(unit)
        while len(messages) < length:
            # Small leftovers: keep the user/assistant alternation of a closing exchange.
            last = messages[-1]["type"] if messages else "bot"
            messages.append(self.user() if last == "bot" else self.answer())
        return messages

    def lookalike(self) -> Thread:
        """Material that resembles a loop but is healthy under every heuristic."""
        rng = self.rng
        shape = rng.randrange(4)
        out: Thread = []
        if shape == 0:  # polling that makes progress: same call, different results
            job = f"job_{rng.randint(10_000, 99_999)}"
            polls = rng.randint(3, 6)
            progress = sorted(rng.sample(range(1, 100), polls - 1))
            for i in range(polls):
                done = i == polls - 1
                result = {"job_id": job, "state": "succeeded" if done else "running",
                          "progress": 1.0 if done else progress[i] / 100}
                if i and rng.random() < 0.4:
                    out.append(self.reasoning())
                out += self.call("get_job_status", {"job_id": job}, result)
        elif shape == 1:  # different calls, the same empty result
            for _ in range(rng.randint(3, 5)):
                name, arguments, _ = self.fresh_call(_TOOLS[1])
                out += self.call(name, arguments, [])
        elif shape == 2:  # one call made twice with the same answer (below every threshold)
            name, arguments, result = self.fresh_call()
            out += self.call(name, arguments, result)
            out.append(self.reasoning())
            out += self.call(name, arguments, result)
        else:  # identical internal calls, which the result-run check skips by name
            beat = {"session": f"s{rng.randint(100, 999)}"}
            for _ in range(rng.randint(3, 4)):
                out += self.call(*self.fresh_call())
                out += self.call("_heartbeat", beat, {"ok": True})
        return out

    # -- planted loops

    def loop(self, kind: LoopKind, budget: int) -> Thread:
        """A loop of ``kind`` in at most ``budget`` messages, to end the thread with."""
        if kind == "repeated_suffix":
            return self._suffix_loop(budget)
        if kind == "repeated_activity_tail":
            return self._activity_tail_loop(budget)
        if kind == "repeated_result_run":
            return self._result_run_loop(budget)
        return self._text_run_loop()

    def _suffix_loop(self, budget: int) -> Thread:
        rng = self.rng
        size, repeats = rng.randint(2, 6), rng.randint(2, 4)
        while size * repeats > budget:
            if repeats > 2:
                repeats -= 1
            else:
                size -= 1
        block: Thread = []
        while len(block) < size:
            roll = rng.random()
            if size - len(block) >= 2 and roll < 0.6:
                block += self.call(*self.fresh_call())
            elif roll < 0.8:
                block.append(self.reasoning())
            else:
                block.append(self.narration())
        return [copy.deepcopy(m) for _ in range(repeats) for m in block]

    def _activity_tail_loop(self, budget: int) -> Thread:
        rng = self.rng
        signatures = 3 if budget >= 13 and rng.random() < 0.5 else 2
        low = max(ACTIVITY_TAIL_MIN_LENGTH // 2, 2 * signatures)  # 2 * distinct <= tail
        pairs = min(rng.randint(low, low + 5), (budget - 1) // 2)
        calls = [self.fresh_call() for _ in range(signatures)]
        while True:
            order = [rng.randrange(signatures) for _ in range(pairs)]
            if len(set(order)) == signatures and not _ends_in_square(order):
                break
        lead = self.reasoning() if rng.random() < 0.5 else self.narration()
        out = [lead]
        for i in order:
            out += copy.deepcopy(self.call(*calls[i]))
        return out

    def _result_run_loop(self, budget: int) -> Thread:
        rng = self.rng
        repeats = min(rng.randint(3, 5), budget // 3)
        name, arguments, result = self.fresh_call()
        out: Thread = []
        for _ in range(repeats):
            out.append(self.reasoning())  # differs each time, so no verbatim suffix
            out += copy.deepcopy(self.call(name, arguments, result))
        if len(out) < budget and rng.random() < 0.25:
            out.append(self.narration())
        return out

    def _text_run_loop(self) -> Thread:
        rng, w = self.rng, self.words
        lead = [w.fill(rng.choice(_BOT_ONE_UNIT)) for _ in range(rng.randint(0, 2))]
        cycle = [w.fill(rng.choice(_BOT_ONE_UNIT)) if rng.random() < 0.3
                 else rng.choice(_STUCK_SENTENCES) for _ in range(rng.randint(2, 4))]
        cycle = list(dict.fromkeys(cycle))  # distinct sentences, so the count below is exact
        repeats = rng.randint(3, 8)
        while (len(lead) + len(cycle) * repeats < TEXT_RUN_MIN_UNITS
               or 2 * (len(lead) + len(cycle)) > len(lead) + len(cycle) * repeats):
            repeats += 1
        text = " ".join(lead + cycle * repeats)
        out = [self.text("bot", text)]
        if rng.random() < 0.3:
            out.append(self.text("user", rng.choice(_USER_NUDGES)))
        return out


def _ends_in_square(sequence: Sequence[int]) -> bool:
    """True when the sequence ends with some block written twice (``... w w``)."""
    n = len(sequence)
    return any(sequence[n - size:] == sequence[n - 2 * size: n - size]
               for size in range(1, n // 2 + 1))


# --------------------------------------------------------------------------------- public


def generate_thread(index: int, *, seed: int = 0,
                    loop_share: float = DEFAULT_LOOP_SHARE) -> PlantedThread:
    """Thread number ``index`` of the workload ``seed``, with the loop kind planted in it.

    The thread depends only on ``(seed, index, loop_share)``. O(its length).

    >>> generate_thread(7, seed=3) == generate_thread(7, seed=3)
    True
    """
    if not 0 <= loop_share <= 1:
        raise ValueError(f"loop_share must be within [0, 1], got {loop_share!r}")
    rng = _Random(f"vthread-workload:{seed}:{index}")
    length = rng.randint(MIN_MESSAGES, MAX_MESSAGES)
    planted: LoopKind | None = rng.choice(LOOP_KINDS) if rng.random() < loop_share else None
    builder = _Builder(rng)
    if planted is not None:
        ending = builder.loop(planted, budget=length - 1)
    elif rng.random() < LOOKALIKE_ENDING_SHARE:
        ending = builder.lookalike()
    else:
        ending = []
    if len(ending) >= length:  # a long look-alike does not fit a short thread
        ending = []
    return PlantedThread(builder.healthy(length - len(ending)) + ending, planted)


def generate_planted(count: int, *, seed: int = 0,
                     loop_share: float = DEFAULT_LOOP_SHARE) -> list[PlantedThread]:
    """``count`` threads with their planted loop kinds; see :func:`generate_thread`."""
    return [generate_thread(i, seed=seed, loop_share=loop_share) for i in range(count)]


def generate_threads(count: int, *, seed: int = 0,
                     loop_share: float = DEFAULT_LOOP_SHARE) -> list[list[dict[str, Any]]]:
    """``count`` realistic threads (native messages); thread *i* depends only on seed and *i*.

    O(total messages). About ``loop_share`` of them end in a loop, evenly over the four kinds.
    """
    return [t.messages for t in generate_planted(count, seed=seed, loop_share=loop_share)]


# --------------------------------------------------------------------------------- formats


def _id_source(thread: Sequence[Message], salt: str) -> random.Random:
    """A deterministic source of call ids: the same thread always gets the same ids."""
    digest = hashlib.sha256(
        json.dumps(thread, sort_keys=True, ensure_ascii=False).encode() + salt.encode()
    ).hexdigest()
    return random.Random(digest)


_ID_ALPHABET: Final = string.ascii_letters + string.digits


def _activity_parts(message: Message) -> tuple[str, str, dict[str, Any]] | None:
    """(kind, name, function) of an activity message, or None for any other message."""
    if message.get("type") != "activity":
        return None
    activity = message["meta"]["activity"]
    return activity["type"], activity["function"]["name"], activity["function"]


class _PendingCalls:
    """Hands out call ids and matches each response to the oldest open request of its name."""

    def __init__(self, rng: random.Random, prefix: str, length: int) -> None:
        self.rng, self.prefix, self.length = rng, prefix, length
        self.open: dict[str, list[str]] = {}

    def request(self, name: str) -> str:
        call_id = self.prefix + "".join(self.rng.choices(_ID_ALPHABET, k=self.length))
        self.open.setdefault(name, []).append(call_id)
        return call_id

    def response(self, name: str) -> str:
        waiting = self.open.get(name)
        if not waiting:
            raise ValueError(f"response to {name!r} without an open request")
        return waiting.pop(0)


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def to_openai(thread: Sequence[Message]) -> list[dict[str, Any]]:
    """The thread as OpenAI chat-completions messages.

    Mapping: user → ``user``; consecutive reasoning → bot → requests of one step become one
    ``assistant`` message (``reasoning_content``, ``content``, ``tool_calls`` with the
    arguments as a JSON string); each response → a ``tool`` message answering its call id
    (a string result as is, anything else as JSON text). Usage is not carried.
    """
    calls = _PendingCalls(_id_source(thread, "openai"), "call_", 24)
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for message in thread:
        parts = _activity_parts(message)
        kind = message.get("type")
        if parts is not None and parts[0] == "request":
            _, name, function = parts
            if current is None:
                current = {"role": "assistant", "content": None}
                out.append(current)
            current.setdefault("tool_calls", []).append({
                "id": calls.request(name), "type": "function",
                "function": {"name": name,
                             "arguments": json.dumps(function.get("arguments", {}),
                                                     ensure_ascii=False)},
            })
            continue
        if parts is not None:
            _, name, function = parts
            current = None
            out.append({"role": "tool", "tool_call_id": calls.response(name),
                        "content": _result_text(function.get("result"))})
        elif kind == "user":
            current = None
            out.append({"role": "user", "content": message["text"]})
        elif kind == "reasoning":
            if current is None or current["content"] is not None or "tool_calls" in current \
                    or "reasoning_content" in current:
                current = {"role": "assistant", "content": None}
                out.append(current)
            current["reasoning_content"] = message["text"]
        else:
            if current is None or current["content"] is not None or "tool_calls" in current:
                current = {"role": "assistant", "content": None}
                out.append(current)
            current["content"] = message["text"]
    return out


def to_responses(thread: Sequence[Message]) -> list[dict[str, Any]]:
    """The thread as OpenAI Responses items, by way of its chat-completions form.

    Mapping: each chat message's reasoning → a ``reasoning`` item (one summary part), its
    text → a ``message`` item (one ``output_text`` part), each tool call → a
    ``function_call`` item, each tool message → a ``function_call_output`` item.
    """
    items: list[dict[str, Any]] = []
    for message in to_openai(thread):
        if message["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"],
                          "output": message["content"]})
            continue
        if message.get("reasoning_content"):
            items.append({"type": "reasoning", "summary": [
                {"type": "summary_text", "text": message["reasoning_content"]}]})
        if message.get("content") is not None:
            items.append({"type": "message", "role": message["role"],
                          "content": [{"type": "output_text", "text": message["content"]}]})
        for call in message.get("tool_calls", []):
            items.append({"type": "function_call", "call_id": call["id"],
                          "name": call["function"]["name"],
                          "arguments": call["function"]["arguments"]})
    return items


def to_computer_use(thread: Sequence[Message]) -> list[dict[str, Any]]:
    """The thread as the Responses items of a computer-use agent, by way of its Responses
    form: each ``function_call`` → a ``computer_call`` whose ``action`` is the call's
    arguments with the tool's name as its ``type`` (with the ``id``, ``status`` and
    ``pending_safety_checks`` the API writes), each ``function_call_output`` → a
    ``computer_call_output`` whose screenshot's ``image_url`` carries the output (the same
    screen twice is the same output). The same runs, loops and progress as the chat forms,
    in the items a computer-use run's file holds.
    """
    items: list[dict[str, Any]] = []
    for number, item in enumerate(to_responses(thread)):
        if item["type"] == "function_call":
            arguments = json.loads(item["arguments"])
            action = {"type": item["name"], **(arguments if isinstance(arguments, dict)
                                               else {"value": arguments})}
            items.append({"type": "computer_call", "id": f"cu_{number:06d}",
                          "call_id": item["call_id"], "action": action,
                          "pending_safety_checks": [], "status": "completed"})
        elif item["type"] == "function_call_output":
            screen = base64.b64encode(str(item["output"]).encode()).decode()
            items.append({"type": "computer_call_output", "call_id": item["call_id"],
                          "output": {"type": "computer_screenshot",
                                     "image_url": f"data:image/png;base64,{screen}"}})
        else:
            items.append(item)
    return items


def to_langchain(thread: Sequence[Message]) -> list[dict[str, Any]]:
    """The thread as LangChain messages (``message.model_dump()``'s fields), by way of its
    chat-completions form: ``user`` → ``human``; ``assistant`` → ``ai`` (its reasoning a
    ``reasoning`` content block before its text, its tool calls ``{"name", "args", "id",
    "type": "tool_call"}`` with the arguments as an object); ``tool`` → ``tool`` answering
    its call id. Usage is not carried.
    """
    out: list[dict[str, Any]] = []
    for message in to_openai(thread):
        role = message["role"]
        if role == "tool":
            out.append({"type": "tool", "content": message["content"],
                        "tool_call_id": message["tool_call_id"], "status": "success"})
        elif role == "user":
            out.append({"type": "human", "content": message["content"]})
        else:
            content: Any = message.get("content") or ""
            if message.get("reasoning_content"):
                content = [{"type": "reasoning", "reasoning": message["reasoning_content"]},
                           *([{"type": "text", "text": content}] if content else [])]
            out.append({"type": "ai", "content": content, "tool_calls": [
                {"name": call["function"]["name"], "args": json.loads(call["function"][
                    "arguments"]), "id": call["id"], "type": "tool_call"}
                for call in message.get("tool_calls", [])]})
    return out


def to_anthropic(thread: Sequence[Message]) -> list[dict[str, Any]]:
    """The thread as Anthropic messages (alternating ``user`` / ``assistant``).

    Mapping: user → ``text`` block, bot → ``text`` block, reasoning → ``thinking`` block
    (with a signature), request → ``tool_use {id, name, input}``, response → a
    ``tool_result {tool_use_id, content}`` block in a user message. Consecutive blocks of one
    role share a message; a user message holding a single text block uses the string form,
    and some tool results use the list-of-text-blocks form.
    """
    rng = _id_source(thread, "anthropic")
    calls = _PendingCalls(rng, "toolu_01", 22)
    out: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})

    for message in thread:
        parts = _activity_parts(message)
        kind = message.get("type")
        if parts is not None and parts[0] == "request":
            _, name, function = parts
            add("assistant", {"type": "tool_use", "id": calls.request(name), "name": name,
                              "input": function.get("arguments", {})})
        elif parts is not None:
            _, name, function = parts
            text = _result_text(function.get("result"))
            content: Any = [{"type": "text", "text": text}] if rng.random() < 0.3 else text
            add("user", {"type": "tool_result", "tool_use_id": calls.response(name),
                         "content": content})
        elif kind == "user":
            add("user", {"type": "text", "text": message["text"]})
        elif kind == "reasoning":
            signature = "".join(rng.choices(_ID_ALPHABET + "+/", k=96)) + "=="
            add("assistant", {"type": "thinking", "thinking": message["text"],
                              "signature": signature})
        else:
            add("assistant", {"type": "text", "text": message["text"]})
    for entry in out:
        blocks = entry["content"]
        if entry["role"] == "user" and len(blocks) == 1 and blocks[0]["type"] == "text":
            entry["content"] = blocks[0]["text"]
    return out


_CONVERTERS: Final[dict[Format, Callable[[Sequence[Message]], list[dict[str, Any]]]]] = {
    "native": lambda thread: list(thread),
    "openai": to_openai,
    "anthropic": to_anthropic,
    "responses": to_responses,
    "computer-use": to_computer_use,
    "langchain": to_langchain,
}


# ------------------------------------------------------------------------------------ files


def thread_id(index: int) -> str:
    """The id of the ``index``-th thread (0-based): ``t000001`` for the first."""
    return f"t{index + 1:06d}"


def _open_text(path: Path, stack: contextlib.ExitStack) -> TextIO:
    if path.suffix != ".gz":
        return stack.enter_context(path.open("w", encoding="utf-8", newline="\n"))
    raw = stack.enter_context(path.open("wb"))
    # mtime=0 keeps the compressed bytes identical from run to run.
    zipped = stack.enter_context(gzip.GzipFile(filename=path.name[:-3], mode="wb", mtime=0,
                                               fileobj=raw))
    return stack.enter_context(io.TextIOWrapper(zipped, encoding="utf-8", newline="\n"))


def write_jsonl(path: str | Path, threads: Iterable[Sequence[dict[str, Any]]], *,
                with_ids: bool = True, ids: Sequence[str] | None = None) -> int:
    """Write one thread per line; returns the number of bytes of JSON text written.

    A line is ``{"id": "t000001", "messages": [...]}`` (``ids`` overrides the numbering), or
    the bare message array when ``with_ids`` is false. Compact separators, UTF-8, as
    ``JSON.stringify`` writes; gzip-compressed when the path ends with ``.gz``. ``threads``
    is consumed lazily, so a generator keeps memory flat however many threads are written.
    """
    with contextlib.ExitStack() as stack:
        return _write_lines(_open_text(Path(path), stack), threads, with_ids, ids)


def _write_lines(handle: TextIO, threads: Iterable[Sequence[dict[str, Any]]], with_ids: bool,
                 ids: Sequence[str] | None) -> int:
    written = 0
    for index, thread in enumerate(threads):
        record: Any = list(thread)
        if with_ids:
            record = {"id": ids[index] if ids is not None else thread_id(index),
                      "messages": record}
        line = _compact_json(record) + "\n"
        handle.write(line)
        written += len(line.encode("utf-8"))
    return written


# ------------------------------------------------------------------------------------ samples

SAMPLE_SEED: Final = 20240601
SAMPLE_THREADS: Final = 300
FORMAT_SAMPLE_HEALTHY: Final = 22
FORMAT_SAMPLE_PER_KIND: Final = 2


def write_samples(directory: str | Path) -> dict[str, int]:
    """Write the package samples: native threads, and a subset in the OpenAI/Anthropic formats.

    The format samples hold the first healthy threads and the first two of each loop kind,
    under the same ids as in ``threads.jsonl``, so an adapter's verdicts can be checked
    against the native ones. Returns bytes written per file.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    planted = generate_planted(SAMPLE_THREADS, seed=SAMPLE_SEED)
    sizes = {"threads.jsonl": write_jsonl(folder / "threads.jsonl",
                                          [t.messages for t in planted])}
    chosen: list[int] = []
    quota: dict[LoopKind | None, int] = {kind: FORMAT_SAMPLE_PER_KIND for kind in LOOP_KINDS}
    quota[None] = FORMAT_SAMPLE_HEALTHY
    for index, thread in enumerate(planted):
        if quota[thread.planted] > 0:
            quota[thread.planted] -= 1
            chosen.append(index)
    ids = [thread_id(i) for i in chosen]
    for name, convert in (("openai.jsonl", to_openai), ("anthropic.jsonl", to_anthropic)):
        sizes[name] = write_jsonl(folder / name, [convert(planted[i].messages) for i in chosen],
                                  ids=ids)
    return sizes


# ---------------------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.workload --count 10000 --out /tmp/threads.jsonl``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.workload",
                                     description="Generate realistic agent threads as JSONL.")
    parser.add_argument("--count", type=int, default=10_000, help="threads (default 10000)")
    parser.add_argument("--out", help="output path; .gz compresses (default: stdout)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loop-share", type=float, default=DEFAULT_LOOP_SHARE)
    parser.add_argument("--format", choices=sorted(_CONVERTERS), default="native")
    parser.add_argument("--no-ids", action="store_true",
                        help="write bare message arrays instead of {id, messages} objects")
    parser.add_argument("--samples", metavar="DIR",
                        help="write the package samples (threads/openai/anthropic.jsonl) to DIR")
    parser.add_argument("--per-file", type=int, metavar="N",
                        help="write a directory (--out) of files of N threads each, as an "
                             "evaluation's runs are often kept: part-00000.jsonl, ...")
    args = parser.parse_args(argv)
    if args.per_file is not None and (args.per_file < 1 or not args.out):
        parser.error("--per-file takes a number of threads above 0, and --out a directory")
    started = time.perf_counter()
    if args.samples:
        for name, size in write_samples(args.samples).items():
            print(f"{Path(args.samples) / name}: {size:,} bytes", file=sys.stderr)
        return 0
    convert = _CONVERTERS[args.format]
    messages = 0
    loops = dict.fromkeys(LOOP_KINDS, 0)

    def threads() -> Iterator[list[dict[str, Any]]]:
        nonlocal messages
        for index in range(args.count):
            thread = generate_thread(index, seed=args.seed, loop_share=args.loop_share)
            messages += len(thread.messages)
            if thread.planted is not None:
                loops[thread.planted] += 1
            yield convert(thread.messages)

    with_ids = not args.no_ids
    if args.per_file is not None:
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        size = 0
        every = threads()
        for number, start in enumerate(range(0, args.count, args.per_file)):
            part = list(itertools.islice(every, args.per_file))
            ids = [thread_id(start + i) for i in range(len(part))]
            size += write_jsonl(folder / f"part-{number:05d}.jsonl", part,
                                with_ids=with_ids, ids=ids)
    elif args.out:
        size = write_jsonl(args.out, threads(), with_ids=with_ids)
    else:
        size = _write_lines(sys.stdout, threads(), with_ids, None)
    elapsed = time.perf_counter() - started
    print(f"{args.count:,} threads, {messages:,} native messages, {size:,} bytes "
          f"({args.format}) in {elapsed:.2f} s", file=sys.stderr)
    print("planted loops: " + ", ".join(f"{k} {v}" for k, v in loops.items())
          + f" ({sum(loops.values()) / max(1, args.count):.1%})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
