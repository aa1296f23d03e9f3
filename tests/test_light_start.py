"""What starts without NumPy (the guard, the command's front, the core's module), and the
package's names, imported when first used, staying the functions and classes they were."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vthread

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run_python(code: str, stdin: bytes = b"", env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[bytes]:
    """``code`` in a fresh interpreter (so that nothing this test process imported counts),
    with ``env`` (default: this one's, the checkout importable)."""
    return subprocess.run([sys.executable, "-c", code], input=stdin,
                          env=ENV if env is None else env, capture_output=True, check=False,
                          timeout=120)


def passing_python(code: str, env: dict[str, str] | None = None
                   ) -> subprocess.CompletedProcess[bytes]:
    """:func:`run_python`, which must exit 0 (the end of its standard error shown if not)."""
    done = run_python(code, env=env)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return done


def test_the_guard_imports_no_numpy() -> None:
    passing_python("import sys; from vthread import Guard, GuardReason; "
                   "guard = Guard(ngram=3, window=12, max_repeats=3); "
                   "assert any(guard.push(c) for c in ['I will ', 'try again. '] * 5); "
                   "assert guard.reason is not None and guard.reason.phrase == 'i will try'; "
                   "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'); "
                   "assert not loaded, loaded")


def test_vthread_guard_and_version_start_without_numpy_or_the_scan() -> None:
    """The command's front reads the arguments; ``guard`` and ``--version`` load only what
    they need (``scan`` alone brings NumPy and :mod:`vthread.cli`)."""
    check = ("heavy = {'numpy', 'vthread.cli', 'vthread.scan'} & set(sys.modules); "
             "assert not heavy, heavy")
    guard = run_python("import sys; from vthread._cli_main import main; "
                       f"code = main(['guard', '--window', '24']); {check}; sys.exit(code)",
                       stdin=b"spam " * 200)
    assert guard.returncode == 3, guard.stderr.decode()  # the guard tripped, as it should
    version = run_python("import sys; from vthread._cli_main import main; "
                         f"code = main(['--version']); {check}; sys.exit(code)")
    assert version.returncode == 0 and version.stdout.startswith(b"vthread "), version
    passing_python("import sys; from vthread._cli_main import main; "
                   "code = main(['scan', '--sample', '-q', '-o', '/dev/null']); "
                   "assert {'numpy', 'vthread.cli'} <= set(sys.modules); sys.exit(code)")


def test_a_scan_of_a_file_leaves_the_report_and_the_anywhere_modules_unloaded(
        tmp_path: Path) -> None:
    """``vthread scan FILE`` of a run file pays for what it does: the report's module (and
    hashlib) and the anywhere search are imported only by the runs that use them (both were
    imported at every start, about 15 ms together), and the thread pool of ``--jobs N``
    (with the logging it loads, 5-7 ms) only by a scan on more than one thread."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text('[{"type": "user", "text": "hi"}]\n')
    unused = ("{'vthread._cli_report', 'vthread.report', 'hashlib', 'vthread.anywhere', "
              "'concurrent.futures', 'logging'}")
    passing_python("import sys; from vthread._cli_main import main; "
                   f"code = main(['scan', {str(runs)!r}, '-q', '-o', '/dev/null']); "
                   f"loaded = {unused} & set(sys.modules); assert not loaded, loaded; "
                   "assert 'vthread.cli' in sys.modules; sys.exit(code)")


def test_the_core_makes_arrays_when_numpy_was_not_imported() -> None:
    """The core's module imports no NumPy; its first array imports it (then, not at the
    module's import) and is an ordinary array."""
    passing_python(
        "import sys; from vthread import _core; assert 'numpy' not in sys.modules; "
        "found = _core.has_repeated_text_runs(['Again. ' * 9, 'One. Two.'], 8, 64, 0.5); "
        "import numpy; assert isinstance(found, numpy.ndarray), type(found); "
        "assert found.tolist() == [True, False], found")


@pytest.mark.parametrize("first", ["import vthread.scan", "from vthread.scan import ScanResult",
                                   "import vthread.fingerprint",
                                   "from vthread.fingerprint import message_fingerprint",
                                   "vthread.scan", "pass"])
def test_scan_and_fingerprint_stay_functions_whatever_is_imported_first(first: str) -> None:
    """``vthread.scan`` and ``vthread.fingerprint`` name modules as well as functions; the
    package attribute is the function however the module came to be imported."""
    passing_python(
        "import types, vthread\n"
        f"{first}\n"
        "import vthread.scan, vthread.fingerprint\n"
        "assert not isinstance(vthread.scan, types.ModuleType), vthread.scan\n"
        "assert vthread.scan([[{'type': 'user', 'text': 'hi'}]]).names == [None]\n"
        "assert vthread.fingerprint('x') == vthread.fingerprint('x')\n"
        "assert not isinstance(vthread.fingerprint, types.ModuleType)\n")


@pytest.mark.parametrize("name", vthread.__all__)
def test_every_public_name_is_its_home_modules_object(name: str) -> None:
    home = importlib.import_module(vthread._HOMES[name])
    assert getattr(vthread, name) is getattr(home, name)
    assert name in dir(vthread)


def test_the_public_names_and_their_homes_are_one_list() -> None:
    assert sorted(vthread.__all__) == sorted(vthread._HOMES)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="module 'vthread' has no attribute 'scna'"):
        vthread.scna  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(vthread, "describe")


@pytest.mark.parametrize("numpy_first", [True, False])
def test_a_signal_during_the_cores_first_array_is_an_ordinary_exception(
        numpy_first: bool) -> None:
    """A Ctrl-C arriving while the core works with the GIL released, before its first array,
    raises KeyboardInterrupt (exit 130 in vthread scan), not a panic of the numpy crate's
    loading of NumPy's C API (which the core does then, no longer at its import)."""
    code = ("import json, os, signal, sys, threading, time\n"
            f"{'import numpy' if numpy_first else 'pass'}\n"
            "from vthread import _core\n"
            "messages = [{'type': 'bot', 'text': f'step {i}', 'meta': {'k': i}}\n"
            "            for i in range(200)]\n"
            "line = json.dumps({'id': 'x', 'messages': messages}).encode()\n"
            "def interrupt():\n"
            "    time.sleep(0.05)\n"
            "    os.kill(os.getpid(), signal.SIGINT)\n"
            "threading.Thread(target=interrupt).start()\n"
            "try:\n"  # about 2 s of reading with the GIL released (the same line 20,000 times)
            "    _core.scan_lines([line] * 20_000, (2, 2, None, 3), True, 1, format='native')\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(0)\n"
            "sys.exit('the call ended before the signal came: no signal was tested')\n")
    passing_python(code)


@pytest.mark.parametrize("anywhere", [False, True])
def test_an_interrupt_from_another_thread_during_the_first_scan_is_a_keyboardinterrupt(
        anywhere: bool) -> None:
    """``_thread.interrupt_main`` from a timer thread (a harness's watchdog; what a test of
    Ctrl-C does) during the first ``vthread.scan`` of a process: the batch is read with the
    GIL held, so the timer ran only when the core let go of it, which was in the numpy
    crate's loading of NumPy's C API: a panic (PanicException, caught by neither ``except
    KeyboardInterrupt`` nor ``except Exception``; a new user's find). The core now pauses
    between threads, letting the timer run, and the interrupt ends the batch there."""
    code = ("import _thread, sys, threading, vthread\n"
            "call = {'type': 'activity', 'text': '', 'meta': {'activity': {'type': 'response',"
            " 'function': {'name': 'get', 'arguments': {'id': 1}, 'result': {'s': 'p'}}}}}\n"
            # About a second's reading: the timer is due well before its end.
            "batch = [[dict(call, text=f'{i} {j}') for j in range(440)] for i in range(2000)]\n"
            "threading.Timer(0.3, _thread.interrupt_main).start()\n"
            "try:\n"
            f"    vthread.scan(batch, anywhere={anywhere})\n"
            "except KeyboardInterrupt:\n"
            "    sys.exit(0)\n"
            "sys.exit('the scan ended before the interrupt came: nothing was tested')\n")
    passing_python(code)


def test_submodules_are_attributes_of_the_package_as_when_it_imported_them() -> None:
    """``import vthread`` then ``vthread.adapters.to_native`` (as docs/api.md writes it)
    works, each submodule imported when first named; a name that is none is an
    AttributeError, and a dunder probe (``inspect.unwrap``'s ``__wrapped__``) imports
    nothing."""
    passing_python(
        "import sys, vthread\n"
        "assert vthread.adapters.to_native is sys.modules['vthread.adapters'].to_native\n"
        "assert vthread.arrow.RESULT_FIELDS and vthread.documents.runs_of([]) == []\n"
        "before = set(sys.modules)\n"
        "assert not hasattr(vthread, '__wrapped__') and not hasattr(vthread, 'nosuch')\n"
        "assert set(sys.modules) == before, set(sys.modules) - before\n"
        "assert {'adapters', 'documents', 'scan', 'Guard'} <= set(dir(vthread))\n"
        "assert not [name for name in dir(vthread) if name.startswith('_')]\n")


def test_the_type_checkers_imports_are_the_public_names_from_their_homes() -> None:
    """The names ``if TYPE_CHECKING`` imports (what mypy and editors see) are the public
    names, each from the module it is imported from at run time."""
    import ast

    tree = ast.parse(Path(vthread.__file__).read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If)
                   and ast.unparse(node.test).endswith("TYPE_CHECKING"))
    imported = {alias.name: node.module for node in guarded.body
                if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert imported == vthread._HOMES


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4"), ("", "")])
def test_the_command_keeps_openblas_to_one_thread_unless_told(
        given: str | None, expected: str) -> None:
    """The command's own process (no argv given) sets OPENBLAS_NUM_THREADS=1 before NumPy
    loads, keeping a value the user set; a caller passing argv in its own process keeps its
    environment as it was."""
    env = {key: value for key, value in ENV.items() if key != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    code = ("import os\n"
            "from vthread._cli_main import main\n"
            "assert main(['scan', '--sample', '-q', '-o', os.devnull]) == 0\n"
            "print(repr(os.environ.get('OPENBLAS_NUM_THREADS')))\n")
    done = passing_python(code, env=env)
    assert done.stdout.decode().strip() == repr(given)  # argv given: the caller's environment
    probe = ("import os, sys\n"
             "sys.argv = ['vthread', '--version']\n"
             "from vthread._cli_main import main\n"
             "main()\n"
             "print(repr(os.environ.get('OPENBLAS_NUM_THREADS')))\n")
    shown = passing_python(probe, env=env)
    assert shown.stdout.decode().splitlines()[-1] == repr(expected)


def test_the_version_is_an_attribute_read_only_when_asked_for() -> None:
    """``vthread.__version__`` (missing before; found by a tester) is the installed version
    and the command's; ``import vthread`` does not read the package metadata for it."""
    done = passing_python(
        "import sys, importlib.metadata as metadata; del sys.modules['importlib.metadata']; "
        "import vthread; assert 'importlib.metadata' not in sys.modules; "
        "assert vthread.__version__ == metadata.version('vthread'), vthread.__version__; "
        "from vthread._cli_main import main; sys.exit(main(['--version']))")
    assert done.stdout.decode().split() == ["vthread", importlib.metadata.version("vthread")]
