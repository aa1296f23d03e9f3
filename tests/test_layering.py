"""The scalar reference stays independent of the engine it judges, read from the source.

The property tests hold the engine to :mod:`vthread._reference`; that proves something only
while the reference does not run the engine's code. These tests parse every module of the
package with :mod:`ast` (nothing is imported or executed) and check the layering both ways.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

PACKAGE: Final = Path(__file__).resolve().parent.parent / "vthread"
MODULES: Final = {f"vthread.{path.stem}": path for path in sorted(PACKAGE.glob("*.py"))}
SUBMODULES: Final = {name.rsplit(".", 1)[1] for name in MODULES} | {"_core"}  # _core: Rust

REFERENCE: Final = "vthread._reference"
SHARED: Final = frozenset({
    "vthread._messages",  # what messages, activities and token figures are; the thresholds
    "vthread._langchain",  # what names a LangChain message object in the thread checks' errors
    "vthread._options",  # option resolution, as production resolves them
    "vthread._jsvalue",  # JavaScript value semantics: canonical text, UTF-16 lengths
    "vthread.textrun",  # the sentence units of a text (the text-run heuristic)
    "vthread._js_unicode_tables",  # Node's Unicode data: what toLowerCase and \p{L} read
})
"""What the reference may build on, directly or through each other: definitions, not the
algorithms the property tests compare."""
ENGINE_SIDE: Final = frozenset(
    f"vthread.{name}"
    for name in ("_heuristics", "scan", "cycle", "build", "_core", "guard", "replay", "cli",
                 "_cli_guard", "adapters", "continuation", "fingerprint", "inspect_log")
) | {"vthread"}  # the package root re-exports the engine-side public API


def _module_name(node: ast.ImportFrom, module: str) -> str | None:
    """The absolute name of an ``ImportFrom``'s module, resolving relative imports."""
    if node.level == 0:
        return node.module
    package = module.split(".")[: -node.level]  # modules here are vthread.<name>
    return ".".join([*package, *([node.module] if node.module else [])]) or None


def _resolve(dotted: str, attribute: str | None = None) -> str | None:
    """The package module that ``import dotted`` or ``from dotted import attribute`` loads
    (``vthread`` itself for a name re-exported by the package), or None outside vthread."""
    parts = dotted.split(".")
    if parts[0] != "vthread":
        return None
    if len(parts) > 1:
        return f"vthread.{parts[1]}"
    if attribute in SUBMODULES:
        return f"vthread.{attribute}"
    return "vthread"


def package_imports(source: str, module: str) -> set[str]:
    """Every vthread module that ``source`` (the text of ``module``) imports: import
    statements anywhere (functions and ``TYPE_CHECKING`` blocks included) and
    ``import_module`` / ``__import__`` calls with a literal name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(r for alias in node.names if (r := _resolve(alias.name)))
        elif isinstance(node, ast.ImportFrom):
            base = _module_name(node, module)
            if base is not None:
                found.update(r for alias in node.names if (r := _resolve(base, alias.name)))
        elif isinstance(node, ast.Call) and node.args:
            callee = node.func
            name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            first = node.args[0]
            if name in ("import_module", "__import__") and isinstance(first, ast.Constant) and (
                isinstance(first.value, str)
            ):
                resolved = _resolve(first.value)
                if resolved:
                    found.add(resolved)
    found.discard(module)
    return found


def _imports_of(module: str) -> set[str]:
    return package_imports(MODULES[module].read_text(encoding="utf-8"), module)


def _reachable_from(module: str) -> set[str]:
    """``module``'s package imports, followed through every module it reaches."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for name in _imports_of(todo.pop()):
            if name not in seen and name in MODULES:
                todo.append(name)
            seen.add(name)
    return seen


def test_reference_imports_no_engine_side_module() -> None:
    """The reference reaches none of the engine-side modules, directly or through another."""
    reached = _reachable_from(REFERENCE)
    assert not reached & ENGINE_SIDE, sorted(reached & ENGINE_SIDE)


def test_reference_builds_only_on_shared_modules() -> None:
    """Whatever the reference reaches is one of the shared modules: a new dependency of the
    oracle is a decision to make here, not an accident."""
    reached = _reachable_from(REFERENCE)
    assert reached <= SHARED, sorted(reached - SHARED)


@pytest.mark.parametrize("module", sorted(set(MODULES) - {REFERENCE}))
def test_no_package_module_imports_the_reference(module: str) -> None:
    """Only tests and benchmarks import the reference; the package never runs the oracle."""
    assert REFERENCE not in _imports_of(module)


def test_shared_and_engine_side_lists_name_real_modules() -> None:
    """The lists above name modules that exist, and no module is on both."""
    assert (SHARED | ENGINE_SIDE) - {"vthread", "vthread._core"} <= set(MODULES)
    assert not SHARED & ENGINE_SIDE


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from vthread import _reference as ref", {"vthread._reference"}),
        ("import vthread._heuristics", {"vthread._heuristics"}),
        ("from vthread._heuristics import Columns", {"vthread._heuristics"}),
        ("from . import scan", {"vthread.scan"}),
        ("from .cycle import describe_thread_cycle", {"vthread.cycle"}),
        ("from vthread import describe_thread_cycle", {"vthread"}),
        ("from vthread import _core", {"vthread._core"}),
        ("def f():\n    from vthread import guard", {"vthread.guard"}),
        ("import importlib\nimportlib.import_module('vthread.replay')", {"vthread.replay"}),
        ("import numpy as np\nfrom collections import Counter", set()),
    ],
)
def test_import_reader_sees_every_form(source: str, expected: set[str]) -> None:
    """The source reader resolves each way of importing a package module."""
    assert package_imports(source, "vthread.example") == expected


def test_import_reader_sees_real_imports() -> None:
    """On the real package the reader finds known edges, so the checks are not vacuous."""
    assert "vthread._heuristics" in _imports_of("vthread.cycle")
    assert "vthread._messages" in _imports_of(REFERENCE)
    assert "vthread._jsvalue" in _reachable_from(REFERENCE)


def private_names_used(source: str) -> set[tuple[str, str]]:
    """(module, name) of every private name (one ``_`` first) of another vthread module that
    ``source`` imports or reads from a module it imported: as an attribute (``cli._tasks``,
    ``vthread.cli._tasks``) or by ``getattr`` with the name written out; ``_core``, the
    compiled module, is reached only by its public names too."""
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # a name bound to a vthread module: which
    used: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module.split(".")[0] == "vthread"):
            for alias in node.names:
                if node.module == "vthread" and alias.name in SUBMODULES:
                    modules[alias.asname or alias.name] = f"vthread.{alias.name}"
                elif _private(alias.name):
                    used.add((node.module, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "vthread":
                    continue
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules["vthread"] = "vthread"  # (import vthread.cli binds vthread)

    def module_of(node: ast.expr) -> str | None:
        """The vthread module an expression names: a name bound to one, or a dotted path
        from one (``vthread.cli``)."""
        if isinstance(node, ast.Name):
            return modules.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = module_of(node.value)
            if parent is not None and (f"{parent}.{node.attr}".removeprefix("vthread.")
                                       in SUBMODULES):
                return f"{parent}.{node.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = module_of(node.value)
            if owner is not None and module_of(node) is None:  # (vthread._core: a module)
                used.add((owner, node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value)):
            owner = module_of(node.args[0])
            if owner is not None:
                used.add((owner, node.args[1].value))
    return used


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_uses_another_modules_private_names(module: str) -> None:
    """A module reaches another only through its public names, so that what one keeps to
    itself can change without the other (the report read the scan's private functions,
    and the scan the report's public ones, each through the other)."""
    used = private_names_used(MODULES[module].read_text(encoding="utf-8"))
    assert {(other, name) for other, name in used if other != module} == set()


@pytest.mark.parametrize(("source", "expected"), [
    ("from vthread.cli import _tasks", {("vthread.cli", "_tasks")}),
    ("from vthread import cli\ncli._Reading()", {("vthread.cli", "_Reading")}),
    ("import vthread.arrow as arrow\narrow._detect(1)", {("vthread.arrow", "_detect")}),
    ("from vthread import _core\n_core.canonical([1])", set()),
    ("from vthread.cli import main\nfrom vthread import _core", set()),
    ("def f():\n    from vthread.report import _count\n", {("vthread.report", "_count")}),
    ("import vthread\nvthread.cli._tasks()", {("vthread.cli", "_tasks")}),
    ("import vthread.cli\nvthread.cli._tasks()", {("vthread.cli", "_tasks")}),
    ("import vthread\nvthread._core.canonical([1])", set()),
    ("from vthread import cli\ngetattr(cli, '_Reading')", {("vthread.cli", "_Reading")}),
    ("import vthread\ngetattr(vthread.report, '_count', None)",
     {("vthread.report", "_count")}),
    ("from vthread import cli\ngetattr(cli, name)", set()),
    ("import json\njson._default_decoder", set()),
])
def test_the_private_name_reader_sees_each_form(source: str,
                                                expected: set[tuple[str, str]]) -> None:
    """The reader finds a private name however it is reached, so the check is not vacuous."""
    assert private_names_used(source) == expected
