"""docs/cli.md against the commands it documents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import cli_reference

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


@pytest.mark.parametrize("command", cli_reference.COMMANDS)
def test_the_page_holds_every_option_of_every_command(command: str) -> None:
    """Every option each command's --help lists is on the committed page (rerun
    ``python -m tools.cli_reference`` after changing one), and so is every exit status."""
    page = PAGE.read_text()
    shown = cli_reference.help_text(command)
    options = set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", shown))
    assert options, shown
    missing = sorted(option for option in options if option not in page)
    assert not missing, f"vthread {command}: {missing} not in docs/cli.md"
    statuses = re.findall(r"^  (\d+)  ", shown, re.MULTILINE)
    for status in statuses:
        assert re.search(rf"^  {status}  ", page, re.MULTILINE), status
    assert f"## `{f'vthread {command}'.strip()}`" in page
