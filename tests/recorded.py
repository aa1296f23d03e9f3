"""Replaying recorded production calls (testdata/*.json) against a Python implementation.

A record names a production export, its arguments and what it returned; this module decodes
the JavaScript-only values, turns the recorded callbacks back into Python callables and
checks an implementation's answer. The same replay runs against the public API and against
the scalar reference, so both are held to the production behaviour.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vthread._jsvalue import canonical

TESTDATA = Path(__file__).resolve().parent.parent / "testdata"

OPTION_NAMES = {
    "minRepetitions": "min_repetitions",
    "minPatternLength": "min_pattern_length",
    "maxPatternLength": "max_pattern_length",
    "minResultRepetitions": "min_result_repetitions",
    "minUnits": "min_units",
    "window": "window",
    "maxUniqueRatio": "max_unique_ratio",
    "ngram": "ngram",
    "maxRepeats": "max_repeats",
    "minChars": "min_chars",
}
CYCLE_FUNCTIONS = {
    "hasRepeatedSuffix": "has_repeated_suffix",
    "hasRepeatedActivityTail": "has_repeated_activity_tail",
    "hasRepeatedResultRun": "has_repeated_result_run",
    "isThreadCyclic": "is_thread_cyclic",
    "describeThreadCycle": "describe_thread_cycle",
}


def load_records(name: str) -> list[dict[str, Any]]:
    with open(TESTDATA / name, encoding="utf-8") as handle:
        records: list[dict[str, Any]] = json.load(handle)["records"]
    return records


# --------------------------------------------------------------------------- JS markers

_ABSENT = object()
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}


@dataclass
class _Circular:
    path: list[Any]


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        marker = value.get("$js")
        if isinstance(marker, str) and len(value) <= 2:
            if marker == "undefined":
                return _ABSENT
            if marker in _SPECIAL:
                return _SPECIAL[marker]
            if marker == "circular":
                return _Circular(list(value["path"]))
        decoded = {}
        for key, item in value.items():
            item = _decode(item)
            if item is not _ABSENT:
                decoded[key] = item
        return decoded
    if isinstance(value, list):
        return [None if (item := _decode(v)) is _ABSENT else item for v in value]
    return value


def _resolve(value: Any, root: Any) -> Any:
    if isinstance(value, _Circular):
        target = root
        for step in value.path:
            target = target[step]
        return target
    if isinstance(value, dict):
        for key, item in value.items():
            value[key] = _resolve(item, root)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            value[index] = _resolve(item, root)
    return value


def decode_args(record: Mapping[str, Any]) -> list[Any]:
    """The record's arguments as Python values: markers decoded, cycles made real."""
    args = [_decode(a) for a in record["args"]]
    return [_resolve(a, args) for a in args]


def decode_value(value: Any) -> Any:
    decoded = _decode(value)
    return None if decoded is _ABSENT else _resolve(decoded, decoded)


# -------------------------------------------------------------------------------- equality


def js_same(a: Any, b: Any) -> bool:
    """Structural equality as the recorded JSON sees it: numbers by value (NaN equals NaN),
    booleans apart from numbers, object keys as sets (JavaScript reorders them)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        fa, fb = float(a), float(b)
        return fa == fb or (fa != fa and fb != fb)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(js_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(js_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------------------ callbacks


class ReplayError(Exception):
    """A recorded callback that threw in production throws this, with the same message."""


def _recorded(record: Mapping[str, Any], kind: str, args: list[Any]) -> Any:
    wanted = canonical(args)
    for call in record.get("callbacks", []):
        if call["kind"] == kind and canonical(decode_value(call["args"])) == wanted:
            if "error" in call:
                raise ReplayError(call["error"])
            return decode_value(call["result"])
    raise AssertionError(f"no recorded {kind} call for arguments {args!r}")


def make_estimate(record: Mapping[str, Any], spec: Any) -> Callable[[Any], Any] | None:
    if spec is None:
        return None
    if spec == "@callback":

        def replay(message: Any) -> Any:
            result = _recorded(record, "tokenEstimation", [message])
            return result.get("tokens") if isinstance(result, Mapping) else None

        return replay
    if isinstance(spec, str) and spec.startswith("@field:"):
        field = spec.removeprefix("@field:")
        return lambda message: message.get(field)
    raise AssertionError(f"unknown estimator stand-in {spec!r}")


def make_inclusive(record: Mapping[str, Any], spec: Any) -> Any:
    if spec is None or isinstance(spec, bool):
        return spec
    if spec == "@callback":

        def replay(message: Any, room: float) -> Any:
            result = _recorded(record, "inclusive", [message, room])
            return None if result is False else result

        return replay
    if spec == "@trimHalf":
        return lambda message, room: {**message, "usage": {"tokens": room / 2}}
    if spec == "@identity":
        return lambda message, room: message
    if spec == "@false":
        return lambda message, room: None
    raise AssertionError(f"unknown inclusive stand-in {spec!r}")


# --------------------------------------------------------------------------------- replay


class Implementation(Protocol):
    """What a replay needs: the public API's eight names."""

    def __getattr__(self, name: str) -> Any: ...


def options_of(raw: Any) -> dict[str, Any]:
    """Snake-case keywords, as production was given them (a value that is no number, a
    string or a boolean, is unset there and here: answered, with a warning)."""
    if not isinstance(raw, Mapping):
        return {}
    return {OPTION_NAMES[k]: v for k, v in raw.items() if k in OPTION_NAMES}


def replay(record: Mapping[str, Any], api: Any) -> None:
    """Call ``api`` as the record says and assert it answers as production did."""
    fn = record["fn"]
    args = decode_args(record)
    if fn == "buildThread":
        _replay_build(record, args[0], api)
    elif fn == "createRepetitionGuard":
        _replay_guard(record, args, api)
    elif fn == "hasRepeatedTextRun":
        options = options_of(args[1] if len(args) > 1 else None)
        _check(record, lambda: api.has_repeated_text_run(args[0] if args else None,
                                                         **options))
    else:
        options = options_of(args[1] if len(args) > 1 else None)
        function = getattr(api, CYCLE_FUNCTIONS[fn])
        _check(record, lambda: function(args[0], **options))


def _check(record: Mapping[str, Any], call: Callable[[], Any]) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "option .* is not a number", UserWarning)
        answer = call()
    assert js_same(answer, decode_value(record["expected"])), (answer, record["expected"])


def _replay_build(record: Mapping[str, Any], arg: Mapping[str, Any], api: Any) -> None:
    snapshot = canonical(arg["messages"])
    call = lambda: api.build_thread(  # noqa: E731
        arg["messages"],
        max_tokens=arg["maxTokens"],
        estimate=make_estimate(record, arg.get("tokenEstimationFunction")),
        min_messages=arg.get("minMessages"),
        inclusive=make_inclusive(record, arg.get("inclusive")),
    )
    if "error" in record:
        try:
            call()
        except ReplayError as error:
            assert str(error) == record["error"]
            return
        raise AssertionError("production raised " + record["error"])
    result = call()
    got = {"messages": result.messages, "usage": {"tokens": result.tokens}}
    assert js_same(got, decode_value(record["expected"])), (got, record["expected"])
    assert canonical(arg["messages"]) == snapshot, "build_thread mutated its input"


def _replay_guard(record: Mapping[str, Any], args: list[Any], api: Any) -> None:
    options = options_of(args[0] if args else None)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "option .* is not a number", UserWarning)
        guard = api.Guard(**options)
    tripped_at = None
    for index, chunk in enumerate(args_pushes(record)):
        with warnings.catch_warnings():
            # (production's suite pushes chunks that are no str on purpose: they are ignored)
            warnings.filterwarnings("ignore", "Guard.push ignores", UserWarning)
            pushed = guard.push(chunk)
        if pushed and tripped_at is None:
            tripped_at = index
    assert tripped_at == record["trippedAt"], (tripped_at, record["trippedAt"])
    expected = decode_value(record["expected"])
    reason = guard.reason
    if expected is None:
        assert reason is None, reason
        return
    assert reason is not None
    assert reason.phrase == expected["phrase"], (reason.phrase, expected["phrase"])
    assert reason.count == expected["count"]
    assert reason.text == expected["text"], (reason.text, expected["text"])
    assert math.isclose(reason.unique_ratio, expected["uniqueRatio"], abs_tol=1e-9)
    assert math.isclose(reason.hapax_ratio, expected["hapaxRatio"], abs_tol=1e-9)


def args_pushes(record: Mapping[str, Any]) -> list[Any]:
    return [decode_value(p) for p in record["pushes"]]
