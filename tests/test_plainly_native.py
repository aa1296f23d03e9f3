"""The core's quick answer for format detection: a line it calls plainly native is one the
detection's Python reading calls ("native", True); it never answers for anything else."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import JSON_VALUES, threads

from benchmarks.workload import generate_threads, to_anthropic, to_openai
from vthread import _core
from vthread.documents import run_format_evidence

KINDS = st.sampled_from(["user", "bot", "activity", "message", "reasoning", "function_call",
                         "function_call_output", "custom_tool_call", "x"])
ITEMS = st.one_of(
    st.fixed_dictionaries({"type": KINDS}, optional={"role": st.just("user"),
                                                       "text": st.text(max_size=3)}),
    st.fixed_dictionaries({"type": st.one_of(st.integers(), st.none())}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.text(max_size=3)}),
    JSON_VALUES,
)
RUNS = st.one_of(
    st.lists(ITEMS, max_size=5),
    st.builds(lambda key, items, extra: {key: items, **extra},
              st.sampled_from(["messages", "traj", "history", "steps"]),
              st.lists(ITEMS, max_size=5),
              st.fixed_dictionaries({}, optional={"trajectory_format": st.sampled_from(
                  ["mini-swe-agent-1", "other"]), "messages": st.just(None)})),
    threads(max_size=8),
    JSON_VALUES,
)


def _agrees(value: Any) -> None:
    line = json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")
    if _core.plainly_native_line(line):
        assert run_format_evidence(json.loads(line)) == ("native", True)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RUNS)
def test_plainly_native_only_where_python_says_native(value: Any) -> None:
    _agrees(value)


def test_native_lines_are_answered_and_chat_formats_are_not() -> None:
    """The quick answer is given for the workload's native lines (else it saves nothing),
    never for the same runs as OpenAI chat or Anthropic messages."""
    runs = generate_threads(50, seed=29)
    assert all(_core.plainly_native_line(json.dumps(run).encode()) for run in runs)
    assert all(_core.plainly_native_line(json.dumps({"id": 1, "messages": run}).encode())
               for run in runs)
    for convert in (to_openai, to_anthropic):
        assert not any(_core.plainly_native_line(json.dumps(convert(run)).encode())
                       for run in runs)
    assert not _core.plainly_native_line(b"[]")
    assert not _core.plainly_native_line(b'{"trajectory_format": "mini-swe-agent-1", '
                                         b'"messages": [{"type": "user"}]}')
    assert not _core.plainly_native_line(
        b'[{"type": "function_call"}, {"type": "message"}]')  # a Responses run
