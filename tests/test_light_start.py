"""What starts without NumPy (the guard, the command's front, the core's module), and the
package's names, imported when first used, staying the functions and classes they were."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vthread

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run_python(code: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``code`` in a fresh interpreter (so that nothing this test process imported counts)."""
    return subprocess.run([sys.executable, "-c", code], input=stdin, env=ENV,
                          capture_output=True, check=False, timeout=120)


def test_the_guard_imports_no_numpy() -> None:
    done = run_python("import sys; from vthread import Guard, GuardReason; "
                      "guard = Guard(ngram=3, window=12, max_repeats=3); "
                      "assert any(guard.push(c) for c in ['I will ', 'try again. '] * 5); "
                      "assert guard.reason is not None and guard.reason.phrase == 'i will try'; "
                      "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'); "
                      "assert not loaded, loaded")
    assert done.returncode == 0, done.stderr.decode()


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
    scan = run_python("import sys; from vthread._cli_main import main; "
                      "code = main(['scan', '--sample', '-q', '-o', '/dev/null']); "
                      "assert {'numpy', 'vthread.cli'} <= set(sys.modules); sys.exit(code)")
    assert scan.returncode == 0, scan.stderr.decode()


def test_the_core_makes_arrays_when_numpy_was_not_imported() -> None:
    """The core's module imports no NumPy; its first array imports it (then, not at the
    module's import) and is an ordinary array."""
    done = run_python(
        "import sys; from vthread import _core; assert 'numpy' not in sys.modules; "
        "found = _core.has_repeated_text_runs(['Again. ' * 9, 'One. Two.'], 8, 64, 0.5); "
        "import numpy; assert isinstance(found, numpy.ndarray), type(found); "
        "assert found.tolist() == [True, False], found")
    assert done.returncode == 0, done.stderr.decode()


@pytest.mark.parametrize("first", ["import vthread.scan", "from vthread.scan import ScanResult",
                                   "import vthread.fingerprint",
                                   "from vthread.fingerprint import message_fingerprint",
                                   "vthread.scan", "pass"])
def test_scan_and_fingerprint_stay_functions_whatever_is_imported_first(first: str) -> None:
    """``vthread.scan`` and ``vthread.fingerprint`` name modules as well as functions; the
    package attribute is the function however the module came to be imported."""
    done = run_python(
        "import types, vthread\n"
        f"{first}\n"
        "import vthread.scan, vthread.fingerprint\n"
        "assert not isinstance(vthread.scan, types.ModuleType), vthread.scan\n"
        "assert vthread.scan([[{'type': 'user', 'text': 'hi'}]]).names == [None]\n"
        "assert vthread.fingerprint('x') == vthread.fingerprint('x')\n"
        "assert not isinstance(vthread.fingerprint, types.ModuleType)\n")
    assert done.returncode == 0, done.stderr.decode()


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
