"""The compiled core, ``vthread._core``, across the Python boundary."""

from __future__ import annotations

from importlib.metadata import version

from vthread import _core


def test_core_is_the_build_of_this_package() -> None:
    """The extension module loaded is the one built with this version of the package."""
    assert _core.__version__ == version("vthread")
