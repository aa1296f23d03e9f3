"""Write ``docs/cli.md``: every ``vthread`` command's options, from the command itself.

The page is each command's ``--help`` (at 100 columns) under a short guide, so it says
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

GUIDE: Final = """\
# The `vthread` command

`vthread scan` reads trajectory files (JSONL, JSON documents, Inspect logs, Parquet; OpenAI,
Anthropic, Responses, SWE-agent, mini-swe-agent or native messages, detected per file, see
[formats.md](formats.md)) and writes one JSON record per run, with a summary on stderr.
`vthread guard` passes a token stream through and stops it at a runaway repetition
([guard.md](guard.md)). `vthread report` writes an HTML page of a scan ([report.md](report.md)).

```sh
vthread scan --sample                         # the bundled sample of 300 runs
vthread scan runs/ -o records.jsonl           # every trajectory file under a directory
vthread scan --anywhere runs.jsonl.gz         # every loop of each run, wherever it lies
vthread scan --fail-on-loop --strict runs.jsonl   # a CI gate: 1 on a loop, 2 on a bad line
some-llm-stream | vthread guard               # exit 3 and a reason when the stream runs away
vthread report runs/ -o report.html
```

Each record names its input (`"file"`, and `"line"`: the line of a JSONL file, the run of a
JSON document, the row of a Parquet file), and a line that cannot be read is a record with
an `"error"` saying what was wrong, so records out equal lines in (a file refused whole,
its format not told, is one error record among several inputs). The exit statuses are
listed under each command below.

## Records and the summary

A record of `vthread scan` (one JSON object a line; `-o X.parquet` writes the same as columns):

- `id`: the run's id (`id`, `instance_id`, `task_id`/`trial`, `--id-key`), null for none;
- `file`, `line`: the input, and the line of JSONL, run of a JSON document, row of Parquet
  or sample of an Inspect log;
- `verdict`: the loop's kind (`repeated_suffix`, `repeated_activity_tail`,
  `repeated_result_run`, `repeated_message_text_run`), null for none;
- `loop_start`, `period`, `repetitions`: where the loop starts (a message index in the run's
  own messages, -1 for none), its smallest repeating block, its copies (for a runaway text:
  how many of the last five messages run away);
- `loop_messages`, `loop_tokens`: the messages from `loop_start` to the run's end (the first
  copy included) and their `usage.tokens`, null when none carries one;
- `signature`, `excerpt`: 16 hex digits naming what repeats, equal across runs with the same
  loop; one readable line of it;
- `messages`: the run's length in its own messages;
- `loops`, with `--anywhere`: every loop of the run, costliest first, each with the fields
  `verdict` to `excerpt`;
- `error`, in place of the verdict's fields: why the line is no run (the record keeps
  `id`, `file` and `line`).

`--summary FILE` writes one JSON object: `scanned` (the inputs), `completed` and `failure`
(null, or why the scan stopped), `seconds`, `lines` and `unit` (what a line is: line, run,
row, sample), `threads`, `errors`, `progressing`, `loops`, `loops_by_heuristic`,
`messages`, `wasted_messages`, `tokens`, `wasted_tokens` (null when no looping run's messages
carry `usage.tokens`), `loops_without_tokens`, `formats_detected` (`file` and `format` of
each input), `cut_short` (`file` and `why` of each input not read to its end) and, with
`--anywhere`, `loops_anywhere` (`loops`, `messages`, `tokens` of every loop found).

The rest of this page is each command's `--help`, written by `python -m tools.cli_reference`.
"""


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


def page() -> str:
    """The whole page."""
    parts = [GUIDE]
    for command in COMMANDS:
        title = f"vthread {command}".strip()
        parts.append(f"\n## `{title}`\n\n```text\n{help_text(command)}```\n")
    return "".join(parts)


def main() -> int:
    PAGE.write_text(page())
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
