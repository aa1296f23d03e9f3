"""vthread: fit LLM threads to a context window, tell when an agent is stuck, guard streams.

This is the public API. Each name is imported from its module when first used, so that
what needs no NumPy starts without it: ``from vthread import Guard`` and ``vthread guard``
load the compiled core and the guard alone (less than half the time the whole package
took to import), while ``vthread.scan`` brings NumPy with it. Submodules are attributes
too, imported when first used (``vthread.adapters.to_native``).
"""

import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys
import types as _types
import typing as _typing

if _typing.TYPE_CHECKING:
    from vthread.arrow import scan_arrow
    from vthread.build import BuildResult, build_thread
    from vthread.cycle import (
        Verdict,
        describe_thread_cycle,
        has_repeated_activity_tail,
        has_repeated_result_run,
        has_repeated_suffix,
        is_thread_cyclic,
    )
    from vthread.fingerprint import fingerprint, message_fingerprint
    from vthread.guard import Guard, GuardReason
    from vthread.replay import GuardTrip, has_repeated_text_runs, scan_texts
    from vthread.scan import HEURISTIC_NAMES, ScanResult, WorkerDiedError, scan
    from vthread.textrun import has_repeated_text_run
    from vthread.volatile import masked_thread

_HOMES = {
    "HEURISTIC_NAMES": "vthread.scan",
    "BuildResult": "vthread.build",
    "Guard": "vthread.guard",
    "GuardReason": "vthread.guard",
    "GuardTrip": "vthread.replay",
    "ScanResult": "vthread.scan",
    "WorkerDiedError": "vthread.scan",
    "build_thread": "vthread.build",
    "describe_thread_cycle": "vthread.cycle",
    "fingerprint": "vthread.fingerprint",
    "has_repeated_activity_tail": "vthread.cycle",
    "has_repeated_result_run": "vthread.cycle",
    "has_repeated_suffix": "vthread.cycle",
    "has_repeated_text_run": "vthread.textrun",
    "has_repeated_text_runs": "vthread.replay",
    "is_thread_cyclic": "vthread.cycle",
    "masked_thread": "vthread.volatile",
    "message_fingerprint": "vthread.fingerprint",
    "scan": "vthread.scan",
    "scan_arrow": "vthread.arrow",
    "scan_texts": "vthread.replay",
    "Verdict": "vthread.cycle",
}
"""Where each public name is defined."""

__all__ = [
    "HEURISTIC_NAMES",
    "BuildResult",
    "Guard",
    "GuardReason",
    "GuardTrip",
    "ScanResult",
    "Verdict",
    "WorkerDiedError",
    "build_thread",
    "describe_thread_cycle",
    "fingerprint",
    "has_repeated_activity_tail",
    "has_repeated_result_run",
    "has_repeated_suffix",
    "has_repeated_text_run",
    "has_repeated_text_runs",
    "is_thread_cyclic",
    "masked_thread",
    "message_fingerprint",
    "scan",
    "scan_arrow",
    "scan_texts",
]


class _Package(_types.ModuleType):
    """The package, keeping ``vthread.scan`` and ``vthread.fingerprint`` the functions.

    Importing a submodule sets it as an attribute of its package; two submodules share
    their names with the functions they define, and an eager ``__init__`` imported them
    before binding the functions over them. Imported lazily, the submodule would come
    second and replace the function (``vthread.scan(threads)``: "'module' object is not
    callable"), so the function is bound in its place.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, _types.ModuleType) and value.__name__ == _HOMES.get(name) == (
                f"{__name__}.{name}"):
            value = getattr(value, name)
        super().__setattr__(name, value)


__version__: str
"""The installed version (read from the package's metadata when first asked for: about
30 ms, which ``import vthread`` does not pay)."""


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vthread")
    except PackageNotFoundError:
        return "0+unknown"  # run from a checkout that was never installed


if not _typing.TYPE_CHECKING:  # (a module __getattr__ would make every name type as Any)

    def __getattr__(name: str) -> _typing.Any:
        if name == "__version__":
            globals()[name] = version = _installed_version()
            return version
        home = _HOMES.get(name)
        if home is not None:
            value = getattr(_importlib.import_module(home), name)
            globals()[name] = value
            return value
        if not name.startswith("__"):
            # A submodule, an attribute of the package as when the package imported them all
            # (`import vthread; vthread.adapters.to_native(...)`).
            try:
                return _importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{__name__}.{name}":
                    raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    submodules = (module.name for module in _pkgutil.iter_modules(__path__))
    return sorted(name for name in {*_HOMES, *submodules, *globals()}
                  if not name.startswith("_"))


_sys.modules[__name__].__class__ = _Package
