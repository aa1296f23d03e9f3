"""Type stubs of the compiled core, ``vthread._core`` (built from ``src/`` by maturin)."""

__version__: str
