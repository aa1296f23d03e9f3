"""Write ``docs/cli.md``: every ``vthread`` command's options, from the command itself.

The page is each command's ``--help`` (at 100 columns) under a guide kept as the committed
page has it (everything up to :data:`MARKER`, written by hand), so it says
exactly what the installed command says; ``tests/test_cli_reference.py`` fails when an
option is missing from the committed page, so rerun this after changing one:

    python -m tools.cli_reference
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
PAGE: Final = ROOT / "docs" / "cli.md"
COMMANDS: Final = ("", "scan", "guard", "report")
"""The commands documented, ``""`` for ``vthread`` itself."""

MARKER: Final = ("The rest of this page is each command's `--help`, written by "
                 "`python -m tools.cli_reference`.\n")
"""Where the page's guide, written by hand, ends and the generated part begins."""


def help_text(command: str) -> str:
    """``vthread COMMAND --help`` as the installed package prints it, at 100 columns."""
    arguments = [sys.executable, "-m", "vthread", *([command] if command else []), "--help"]
    environment = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(arguments, capture_output=True, text=True, env=environment,
                          check=False)
    if done.returncode != 0:
        # The sources are imported, not an installed copy: they need their compiled core
        # beside them, which only an editable install puts there.
        said = (done.stderr.strip().splitlines() or ["nothing on stderr"])[-1]
        raise SystemExit(f"`vthread {command} --help` from {ROOT} exited {done.returncode} "
                         f"({said}); this needs the sources' "
                         "own compiled core: pip install -e '.[dev]' (or maturin develop)")
    return done.stdout.rstrip() + "\n"


def page(guide: str) -> str:
    """The whole page: ``guide`` (the committed page's, up to :data:`MARKER`), then each
    command's help."""
    parts = [guide]
    for command in COMMANDS:
        title = f"vthread {command}".strip()
        parts.append(f"\n## `{title}`\n\n```text\n{help_text(command)}```\n")
    return "".join(parts)


def main() -> int:
    committed = PAGE.read_text()
    if MARKER not in committed:
        raise SystemExit(f"{PAGE} has lost its line {MARKER.strip()!r}: put it back at the "
                         "end of the guide")
    PAGE.write_text(page(committed[: committed.index(MARKER) + len(MARKER)]))
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
