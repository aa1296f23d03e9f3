"""The examples of docs/scale-out.md run and print what the document says they print.

The Ray example runs in tests/test_ray.py, on that module's cluster; Spark itself is not
installed (it needs Java), so only the function handed to ``mapInArrow`` is run here.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from vthread import arrow

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "docs" / "scale-out.md"
EXAMPLE = re.compile(r"<!-- example: ([\w-]+) -->\n```python\n(.*?)```", re.S)


def example(name: str) -> str:
    """The marked python block ``name`` of docs/scale-out.md."""
    found = dict(EXAMPLE.findall(DOCUMENT.read_text(encoding="utf-8")))
    assert name in found, f"docs/scale-out.md has no example marked {name!r}"
    return found[name]


def run_example(name: str, directory: Path) -> tuple[str, dict[str, Any]]:
    """Run the example in ``directory``; its standard output and its globals."""
    scope: dict[str, Any] = {"__name__": f"scale_out_{name.replace('-', '_')}"}
    out = io.StringIO()
    with contextlib.chdir(directory), contextlib.redirect_stdout(out):
        exec(compile(example(name), f"docs/scale-out.md:{name}", "exec"), scope)
    return out.getvalue(), scope


def printed_as_documented(name: str, printed: str) -> None:
    """The example's output equals its trailing ``# ...`` comments (``...`` ends a prefix)."""
    lines = example(name).rstrip().splitlines()
    documented = []
    while lines and lines[-1].startswith("# "):
        documented.insert(0, lines.pop()[2:])
    got = printed.splitlines()
    assert len(got) == len(documented), (got, documented)
    for line, want in zip(got, documented, strict=True):
        if want.endswith("..."):
            assert line.startswith(want[:-3]), (line, want)
        else:
            assert line == want


def test_datasets_example(tmp_path: Path) -> None:
    """Dataset.map(batched=True) over Arrow batches adds scan_arrow's columns, prefixed."""
    pytest.importorskip("datasets", reason="the example needs Hugging Face datasets")
    pytest.importorskip("pyarrow", reason="scan_arrow needs pyarrow")
    printed, scope = run_example("datasets", tmp_path)
    assert printed.strip() == "[None, 'repeated_suffix']"
    scanned = scope["scanned"]
    assert scanned.column_names == ["run", "messages",
                                    *(f"vthread_{n}" for n in arrow.RESULT_FIELDS)]


def test_spark_function_on_record_batches(tmp_path: Path) -> None:
    """The function the Spark snippet hands mapInArrow: batches in, batches of SCHEMA out
    (Spark itself is not run)."""
    pa = pytest.importorskip("pyarrow", reason="scan_arrow needs pyarrow")
    _, scope = run_example("spark-function", tmp_path)
    ask = '{"type": "user", "text": "hi"}'
    batches = [pa.RecordBatch.from_pydict({"run": ["a", "b"],
                                           "messages": [f"[{ask}]", f"[{ask}, {ask}]"]}),
               pa.RecordBatch.from_pydict({"run": ["c"],
                                           "messages": ["[" + ", ".join([ask] * 4) + "]"]})]
    out = pa.Table.from_batches(list(scope["verdicts"](iter(batches))))
    declared = [field.split()[0] for field in scope["SCHEMA"].split(", ")]
    assert out.column_names == declared == ["run", *arrow.RESULT_FIELDS]
    kinds = {"string": "string", "long": "int64", "double": "double"}
    assert [str(t) for t in out.schema.types] == [
        kinds[field.split()[1]] for field in scope["SCHEMA"].split(", ")]
    assert out.column("run").to_pylist() == ["a", "b", "c"]
    assert out.column("verdict").to_pylist()[2] == "repeated_suffix"
