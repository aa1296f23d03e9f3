"""``vthread scan`` and ``vthread guard`` against hostile input and hostile surroundings
(issue #12): ids of any shape, non-finite numbers, failing outputs, huge options, --jobs."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

import vthread
from tests.test_cli import EARLIER_SUMMARY, run
from vthread import _core, _exact_json, cli
from vthread._records import ID_TEXT_LIMIT, json_text, record_id

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "vthread" / "samples" / "threads.jsonl"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
VTHREAD = [sys.executable, "-m", "vthread"]
#: Every exit status vthread scan and vthread guard document.
EXIT_STATUSES = {0, 1, 2, 3, 70, 74, 130, 141}
LOOPING = [{"type": "user", "text": "a"}, {"type": "bot", "text": "b"}] * 3
OPENAI_LOOPING = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}] * 3


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"not strict JSON: {name}")


def strict_records(output: bytes) -> list[dict[str, Any]]:
    """Every line of ``output`` parsed by a strict parser (no NaN, no Infinity)."""
    return [json.loads(line, parse_constant=_refuse_constant)
            for line in output.decode("ascii").splitlines()]


def shell(command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``command`` in /bin/sh, ``$VTHREAD`` standing for the command (for ``>&-`` and co)."""
    env = {**ENV, "VTHREAD": " ".join(VTHREAD)}
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, capture_output=True,
                          env=env, timeout=120, check=False)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# ---------------------------------------------------------------- finding 5: deep ids


def _deep_id_file(tmp_path: Path, depth: int, messages: list[Any] = LOOPING) -> Path:
    lines = [json.dumps({"id": "first", "messages": messages}),
             f'{{"id": {nested(depth)}, "messages": {json.dumps(messages)}}}',
             json.dumps({"id": "last", "messages": messages})]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("fast", [True, False], ids=["orjson-if-installed", "json"])
def test_deep_id_is_no_crash(jobs: str, fast: bool, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An id nested 1,000 levels deep gives its line a record (a string id, or an error when
    the reader refuses the depth) and every later line its own; status 0."""
    if not fast:
        monkeypatch.setattr(_exact_json, "fast_loads", None)
    path = _deep_id_file(tmp_path, 1000)
    code, out, err = run(["scan", "-q", "-j", jobs, str(path)], monkeypatch)
    assert code == 0, err
    got = strict_records(out)
    assert [r["line"] for r in got] == [1, 2, 3]
    assert [got[0]["id"], got[2]["id"]] == ["first", "last"]
    assert got[0]["verdict"] == got[2]["verdict"] == "repeated_suffix"
    deep = got[1]
    if "error" in deep:
        assert deep["error"].startswith("nested too deeply to read (maximum recursion depth"), deep
    else:
        assert deep["id"] == "[" * ID_TEXT_LIMIT + "..."
        assert deep["verdict"] == "repeated_suffix"


def test_deep_id_in_another_format_and_processes(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through the OpenAI adapter on worker processes (--jobs 2)."""
    path = _deep_id_file(tmp_path, 1000, OPENAI_LOOPING)
    code, out, _ = run(["scan", "-q", "-j", "2", "--format", "openai", str(path)], monkeypatch)
    assert code == 0
    assert [r["line"] for r in strict_records(out)] == [1, 2, 3]


def test_deep_id_in_a_json_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .json document whose first run's id is nested past json.dumps' recursion: both runs
    get their record."""
    path = tmp_path / "runs.json"
    path.write_text(f'[{{"id": {nested(1010)}, "messages": []}}, {{"id": 2, "messages": []}}]')
    code, out, err = run(["scan", "-q", str(path)], monkeypatch)
    assert code == 0, err
    got = strict_records(out)
    assert [r["line"] for r in got] == [1, 2]
    assert got[1]["id"] == 2


def test_the_core_leaves_container_ids_to_python() -> None:
    """The core reader declines a line whose id is an array or object (deep or not), so the
    one rule for such ids is Python's."""
    plain = json.dumps(LOOPING).encode()
    for ident in [nested(3), nested(999), '{"a":[1]}']:
        line = f'{{"id": {ident}, "messages": {json.dumps(LOOPING)}}}'.encode()
        assert _core.scan_lines([plain, line], (2, 2, None, 3), True, 1)["declined"].tolist() == [1]


@pytest.mark.parametrize(
    ("ident", "written"),
    [
        ("t1", "t1"), (7, 7), (-2.5, -2.5), (None, None), (True, True), (2**70, 2**70),
        ([1, "a", None], '[1,"a",null]'), ({"task": 3, "trial": [1]}, '{"task":3,"trial":[1]}'),
        ({"é": "\ud800"}, '{"é":"\ud800"}'),
        (float("nan"), "NaN"), (float("inf"), "Infinity"), (float("-inf"), "-Infinity"),
        ([float("nan")], "[NaN]"), (2**1023 * 2 - 2**970 - 1, 2**1024 - 2**970 - 1),
        (10**400, "Infinity"),  # past the doubles: the infinity JSON.parse reads
        pytest.param(-(10**5000), "-Infinity", id="-10**5000"),
        pytest.param([10**5000], "[Infinity]", id="[10**5000]"),
        (list(range(1000)), json.dumps(list(range(1000)), separators=(",", ":"))[:256] + "..."),
    ],
)
def test_record_id_rule(ident: Any, written: Any) -> None:
    """Strings, finite numbers, booleans and null as they are; anything else as its compact
    JSON text, cut at ID_TEXT_LIMIT characters."""
    assert json.loads(record_id(ident), parse_constant=_refuse_constant) == written


def test_json_text_is_json_dumps_without_recursion() -> None:
    """json_text writes what json.dumps writes, at any depth."""
    value = {"a": [1, 2.5, None, True, "x\u00e9", {"b": []}, {}], "c": float("nan"), "d": -0.0}
    assert json_text(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert json_text(value, ensure_ascii=True) == json.dumps(value, separators=(",", ":"))
    deep: list[Any] = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    assert json_text(deep) == nested(100_001)
    assert json_text(deep, 10) == "[" * 10 + "..."


@pytest.mark.parametrize("head", [b"\x1f", b"\x1f\x8b", b"\x1f\x8bx"])
def test_a_line_that_begins_like_gzip_is_text(head: bytes, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONL file whose first line begins with 0x1f (and 0x8b) but not a whole gzip header
    is text: one record per line (found by tests/test_fuzz_bytes.py)."""
    path = tmp_path / "runs.jsonl"
    path.write_bytes(head + b"\n[]\n")
    code, out, _ = run(["scan", "-q", str(path)], monkeypatch)
    got = strict_records(out)
    assert code == 0 and [r["line"] for r in got] == [1, 2]
    assert got[0]["error"].startswith("not valid JSON") and "error" not in got[1]


# --------------------------------------------------------- finding 6: strict JSON only


def test_non_finite_ids_are_strict_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NaN, Infinity, -Infinity and 1e400 (read as infinity) ids are written as strings."""
    path = tmp_path / "nan.jsonl"
    path.write_text("".join(f'{{"id": {ident}, "messages": []}}\n'
                            for ident in ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]))
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(_exact_json, "fast_loads", None)
        code, out, _ = run(["scan", "-q", str(path)], monkeypatch)
        assert code == 0
        assert [r["id"] for r in strict_records(out)] == [
            "NaN", "Infinity", "-Infinity", "Infinity", "-Infinity"]


def test_overflowing_token_totals_are_strict_json(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Token figures whose sum passes the largest double: the records and the --summary
    file stay strict JSON (the totals that overflowed are null)."""
    usage = {"usage": {"tokens": 1.7e308}}
    thread = [{"type": "user", "text": f"m{i}", **usage} for i in range(4)]
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"id": "big", "messages": thread}) + "\n"
                    + json.dumps({"id": "loop", "messages": [{**m, **usage} for m in LOOPING]})
                    + "\n")
    summary = tmp_path / "summary.json"
    code, out, err = run(["scan", str(path), "--summary", str(summary)], monkeypatch)
    assert code == 0, err
    got = strict_records(out)
    assert len(got) == 2
    assert (got[1]["verdict"], got[1]["loop_tokens"]) == ("repeated_suffix", None), got[1]
    figures = json.loads(summary.read_text(), parse_constant=_refuse_constant)
    assert figures["tokens"] is None


def test_overflowing_loop_tokens_are_infinite_not_an_error() -> None:
    """scan and the reference sum a loop's tokens past the largest double to infinity (it
    was an OverflowError from math.fsum); the record says null."""
    from vthread import _reference
    from vthread._options import cycle_options

    thread = [{**m, "usage": {"tokens": 1.7e308}} for m in LOOPING]
    result = vthread.scan([thread])
    assert result.names == ["repeated_suffix"]
    assert result.loop_tokens[0] == math.inf
    assert _reference.attribute(thread, cycle_options()).loop_tokens == math.inf
    assert json.dumps(result.record(0), allow_nan=False)
    assert result.record(0)["loop_tokens"] is None


# --------------------------------------------------- finding 7: I/O failures exit 74


def _scan_sample(redirect: str) -> subprocess.CompletedProcess[bytes]:
    return shell(f'$VTHREAD scan "{SAMPLE}" {redirect}')


def _one_message(stderr: bytes) -> None:
    text = stderr.decode()
    assert "Traceback" not in text, text
    assert len(text.splitlines()) == 1, text


def test_scan_output_to_a_full_device() -> None:
    """-o /dev/full: 74 and one line saying why, no traceback."""
    done = _scan_sample("-q -o /dev/full")
    assert done.returncode == 74
    _one_message(done.stderr)
    assert b"cannot write /dev/full" in done.stderr


def test_scan_stdout_to_a_full_device() -> None:
    """Records to a standard output on /dev/full: 74 (not 120, nor 1)."""
    done = _scan_sample("-q > /dev/full")
    assert done.returncode == 74
    _one_message(done.stderr)


def test_scan_output_path_that_cannot_be_created(tmp_path: Path) -> None:
    """-o under a regular file (no directory can be made there, root or not): 74."""
    (tmp_path / "file").write_text("")
    done = _scan_sample(f'-q -o "{tmp_path}/file/out.jsonl"')
    assert done.returncode == 74
    _one_message(done.stderr)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_scan_output_in_a_read_only_directory(tmp_path: Path) -> None:
    """-o in a directory without write permission: 74."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        done = _scan_sample(f'-q -o "{locked}/out.jsonl"')
    finally:
        locked.chmod(0o755)
    assert done.returncode == 74
    _one_message(done.stderr)


def test_summary_file_that_cannot_be_written() -> None:
    """--summary /dev/full: 74."""
    done = _scan_sample("-q --summary /dev/full > /dev/null")
    assert done.returncode == 74
    _one_message(done.stderr)


def test_scan_with_standard_output_closed(tmp_path: Path) -> None:
    """>&-: 74 and a message, not an AttributeError; the --summary file says so (an
    earlier run's was left standing for this one)."""
    done = _scan_sample("-q >&-")
    assert done.returncode == 74
    _one_message(done.stderr)
    assert b"standard output is closed" in done.stderr
    summary = tmp_path / "summary.json"
    summary.write_text(EARLIER_SUMMARY)
    assert _scan_sample(f'-q --summary "{summary}" >&-').returncode == 74
    assert json.loads(summary.read_text())["exit_status"] == 74


def test_scan_with_standard_error_closed(tmp_path: Path) -> None:
    """2>&-: the summary is lost, the run is not: 0, and the records are all there. With
    --fail-on-loop, 1 (the sample loops), so 1 still means a loop and only that."""
    done = _scan_sample("2>&-")
    assert done.returncode == 0
    assert len(strict_records(done.stdout)) == 300
    assert _scan_sample("--fail-on-loop 2>&- > /dev/null").returncode == 1
    assert _scan_sample("2>/dev/full > /dev/null").returncode == 0
    assert _scan_sample(f'-o "{tmp_path}/x" --summary /dev/full 2>&-').returncode == 74


def test_summary_and_page_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """The --summary file and the report's page are written beside their path and renamed
    over it: a symbolic link is followed and kept, an existing file keeps its permissions,
    and nothing is left beside them. A write that fails (``ulimit -f``) leaves neither a
    cut-off file nor an earlier run's (it left 1,024 bytes no reader could parse), and
    says so with 74."""
    real = tmp_path / "real.json"
    real.write_text(EARLIER_SUMMARY)
    real.chmod(0o640)
    link = tmp_path / "summary.json"
    link.symlink_to(real)
    done = _scan_sample(f'-q -o /dev/null --summary "{link}"')
    assert done.returncode == 0, done
    assert link.is_symlink() and json.loads(real.read_text())["lines"] == 300
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(path.name for path in tmp_path.iterdir()) == ["real.json", "summary.json"]
    done = _scan_sample(f'-q -o /dev/null --summary "{real}"; ulimit -f 1; '
                        f'$VTHREAD scan "{SAMPLE}" -q -o /dev/null --summary "{real}"')
    assert done.returncode == 74 and b"cannot write" in done.stderr
    assert not real.exists() and [path.name for path in tmp_path.iterdir()] == ["summary.json"]
    page, records = tmp_path / "page.html", tmp_path / "records.jsonl"
    assert _scan_sample(f'-q -o "{records}"').returncode == 0
    assert shell(f'$VTHREAD report "{records}" -o "{page}"').returncode == 0
    assert page.stat().st_size > 8 << 10
    done = shell(f'ulimit -f 8; $VTHREAD report "{records}" -o "{page}"')
    assert done.returncode == 74 and b"cannot write" in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["records.jsonl",
                                                                "summary.json"]


def test_summary_and_page_reach_a_pipe_named_by_a_path(tmp_path: Path) -> None:
    """``--summary /dev/stdout`` and ``-o /dev/stdout`` into a pipe, and ``>(cmd)``, are
    written through (the whole-or-nothing writer resolved /dev/stdout to the pipe's name in
    /proc, no path, and made both 74: the reviewer's case)."""
    done = subprocess.run([*VTHREAD, "scan", str(SAMPLE), "-q", "-o", "/dev/null",
                           "--summary", "/dev/stdout"], capture_output=True, env=ENV,
                          timeout=120, check=False)
    assert done.returncode == 0 and json.loads(done.stdout)["lines"] == 300
    done = subprocess.run([*VTHREAD, "report", str(SAMPLE), "-o", "/dev/stdout"],
                          capture_output=True, env=ENV, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.startswith(b"<!DOCTYPE html>")
    got = tmp_path / "through.html"
    done = subprocess.run(["bash", "-c", f'$VTHREAD report "{SAMPLE}" -o >(cat > "{got}")'],
                          capture_output=True, env={**ENV, "VTHREAD": " ".join(VTHREAD)},
                          timeout=120, check=False)
    assert done.returncode == 0, done
    deadline = time.monotonic() + 30  # (cat ends after the command)
    while time.monotonic() < deadline and not got.read_bytes().endswith(b"</html>\n"):
        time.sleep(0.05)
    assert got.read_bytes().startswith(b"<!DOCTYPE html>")


def test_a_page_or_summary_to_the_process_s_own_streams_keeps_what_else_they_hold(
        tmp_path: Path) -> None:
    """``-o /dev/stdout`` and ``--summary /dev/stderr`` into files the shell opened are
    written through their descriptors: what else goes there stays, before and after, a file
    opened to append included (the whole-or-nothing writer renamed a file over the one the
    shell held, losing all else written to it: the reviewer's case)."""
    records = tmp_path / "records.jsonl"
    assert _scan_sample(f'-q -o "{records}"').returncode == 0
    combined, log = tmp_path / "combined.html", tmp_path / "log.html"
    log.write_text("earlier\n")
    done = shell(f'{{ echo HEADER; $VTHREAD report "{records}" -o /dev/stdout; echo FOOTER; '
                 f'}} > "{combined}"; $VTHREAD report "{records}" -o /dev/stdout >> "{log}"')
    assert done.returncode == 0, done
    text = combined.read_text()
    assert text.startswith("HEADER\n<!DOCTYPE html>") and text.endswith("</html>\nFOOTER\n")
    assert log.read_text().startswith("earlier\n<!DOCTYPE html>")
    said = tmp_path / "said.log"
    done = shell(f'{{ echo EARLIER >&2; $VTHREAD scan "{SAMPLE}" -o /dev/null --summary '
                 f'/dev/stderr; echo LATER >&2; }} 2> "{said}"')
    lines = said.read_text().splitlines()
    assert done.returncode == 0 and lines[0] == "EARLIER" and lines[-1] == "LATER"
    assert '  "completed": true,' in lines


def test_a_summary_through_a_dangling_link_is_refused_before_the_scan(tmp_path: Path) -> None:
    """A --summary path that is a link into a folder that is not there is refused before
    the scan (the link's own folder was asked: the scan ran, ended with 74, and the link
    was removed), and the link is kept."""
    link = tmp_path / "summary.json"
    link.symlink_to(tmp_path / "gone" / "summary.json")
    done = _scan_sample(f'-q -o /dev/null --summary "{link}"')
    assert done.returncode == 74 and link.is_symlink()
    assert done.stderr == (f"vthread scan: cannot write {link}: no such directory "
                           f"{tmp_path / 'gone'}\n").encode()


def test_a_hard_linked_file_whose_write_fails_is_cut_off_under_no_name(tmp_path: Path) -> None:
    """A file with another hard link is written in place; when that write fails (``ulimit
    -f``) it is emptied and its name removed, so that neither name holds a cut-off file
    (the other held 61,440 bytes of one: the reviewer's case)."""
    first, second = tmp_path / "summary.json", tmp_path / "also.json"
    first.write_text("{}")
    os.link(first, second)
    code = ("from vthread._cli_main import write_replacing\n"
            f"write_replacing({str(first)!r}, b'x' * 100_000)\n")
    done = shell(f"ulimit -f 8; {sys.executable} -c \"{code}\"")
    assert done.returncode != 0 and b"File too large" in done.stderr
    assert not first.exists() and second.read_bytes() == b""


def test_whole_or_nothing_writes_keep_what_a_file_is(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with another hard link is written in place (a new file parted the links, the
    other name holding the stale summary); a file that cannot be renamed over (a file
    bind-mounted into a container: EBUSY) is written in place; a file's mode, and its owner
    where this process may set it, are kept (the reviewer's cases). Nothing is left beside
    them."""
    import errno

    from vthread._cli_main import write_replacing

    linked, other = tmp_path / "summary.json", tmp_path / "also.json"
    linked.write_text("{}")
    os.link(linked, other)
    write_replacing(str(linked), b"new")
    assert other.read_bytes() == b"new" and linked.stat().st_nlink == 2
    owned = tmp_path / "owned.json"
    owned.write_text("{}")
    owned.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(owned, 65534, 65534)
    write_replacing(str(owned), b"mine")
    status = owned.stat()
    assert owned.read_bytes() == b"mine" and status.st_mode & 0o777 == 0o640
    if os.geteuid() == 0:
        assert (status.st_uid, status.st_gid) == (65534, 65534)

    def busy(source: str, target: str) -> None:
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(os, "replace", busy)
    write_replacing(str(owned), b"in place")
    assert owned.read_bytes() == b"in place"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["also.json", "owned.json",
                                                               "summary.json"]


def test_report_to_a_fifo_no_process_reads_is_said(tmp_path: Path) -> None:
    """``vthread report -o FIFO`` with no reader: 74, saying so, as ``vthread scan -o FIFO``
    says it (it waited for a reader for good, deaf to SIGTERM and Ctrl-C: a tester's
    case)."""
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    done = shell(f'$VTHREAD report "{SAMPLE}" -o "{fifo}"')
    assert done.returncode == 74
    assert done.stderr.endswith(b"cannot write " + str(fifo).encode()
                                + b": it is a FIFO no process reads\n")


def test_report_with_standard_error_failing(tmp_path: Path) -> None:
    """2>/dev/full and 2>&-: the messages are lost, the page is not (it was 70, an internal
    error, with no page written where a warning came before it); a report that fails
    still says so by its status."""
    chats = SAMPLE.with_name("openai.jsonl")
    for index, redirect in enumerate(("2>/dev/full", "2>&-")):
        page = tmp_path / f"page{index}.html"
        done = shell(f'$VTHREAD report "{SAMPLE}" "{chats}" -o "{page}" {redirect}')
        assert done.returncode == 0, done
        assert page.read_bytes().startswith(b"<!DOCTYPE html>")
    missing = tmp_path / "no such file.jsonl"
    assert shell(f'$VTHREAD report "{missing}" -o "{tmp_path}/x.html" 2>/dev/full'
                 ).returncode == 2


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_output_file_never_takes_a_closed_stderr(tmp_path: Path) -> None:
    """With descriptor 2 closed, -o FILE does not become descriptor 2 (where a message
    written below Python would land among the records): /dev/null holds it."""
    target = tmp_path / "out.jsonl"
    code = ("import os, sys\nfrom vthread import cli\n"
            f"status = cli.main(['scan', '-q', {str(SAMPLE)!r}, '-o', {str(target)!r}])\n"
            "print(status, os.readlink('/proc/self/fd/2'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=ENV,
                          preexec_fn=lambda: os.close(2), timeout=120, check=False)
    assert done.stdout.split() == [b"0", b"/dev/null"]
    assert len(strict_records(target.read_bytes())) == 300


def test_guard_with_standard_output_closed_or_full() -> None:
    """vthread guard >&- and > /dev/full: 74 with a message."""
    for redirect in (">&-", "> /dev/full"):
        done = shell(f"$VTHREAD guard {redirect}", b"hello world\n")
        assert done.returncode == 74, done
        _one_message(done.stderr)


def test_guard_with_standard_error_closed() -> None:
    """vthread guard 2>&-: the stream still flows; a trip still exits 3."""
    done = shell("$VTHREAD guard 2>&-", b"hello world\n")
    assert (done.returncode, done.stdout) == (0, b"hello world\n")
    looping = b"the same words again " * 200
    assert shell("$VTHREAD guard 2>&- > /dev/null", looping).returncode == 3


def test_help_documents_the_exit_statuses() -> None:
    """Every command's --help lists 74; the README's table too."""
    for command in ("scan", "guard", "report"):
        done = subprocess.run([*VTHREAD, command, "--help"], capture_output=True, env=ENV,
                              check=True)
        assert b"74 " in done.stdout and b"141" in done.stdout
    readme = (ROOT / "README.md").read_text()
    assert "`74`" in readme and "`70`" in readme


def test_an_internal_error_is_not_status_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug that escapes exits 70 with its traceback, never 1 (a loop)."""

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "scan_command", broken)
    code, _, err = run(["scan", str(SAMPLE)], monkeypatch)
    assert code == 70
    assert "internal error" in err and "RuntimeError: boom" in err


# ------------------------------------------------- finding 8: huge options, one answer

_HUGE = [2**63, 2**64, 10**400, 1e300, -(2**63), float("inf"), -1e300]
_CLI_FLAGS = {"min_repetitions": "--min-repetitions",
              "min_pattern_length": "--min-pattern-length",
              "max_pattern_length": "--max-pattern-length",
              "min_result_repetitions": "--min-result-repetitions"}


@pytest.mark.parametrize("name", list(_CLI_FLAGS))
@pytest.mark.parametrize("value", _HUGE, ids=str)
def test_huge_options_answer_alike(name: str, value: float, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """scan, describe_thread_cycle, the scalar reference and the CLI give the same verdicts
    for option values no machine word holds (no OverflowError anywhere)."""
    from reference_api import describe_thread_cycle as reference

    lines = SAMPLE.read_bytes().splitlines()[:40]
    threads = [json.loads(line)["messages"] for line in lines]
    options = {name: value}
    scanned = vthread.scan(threads, **options).names
    assert scanned == [vthread.describe_thread_cycle(t, **options) for t in threads]
    assert scanned == [reference(t, **options) for t in threads]
    path = tmp_path / "forty.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    text = str(value) if not isinstance(value, int) or abs(value) < 10**30 else "1e400"
    if isinstance(value, int) and value < 0:
        text = str(float(value))
    code, out, err = run(["scan", "-q", f"{_CLI_FLAGS[name]}={text}", str(path)], monkeypatch)
    assert code == 0, err
    assert [r["verdict"] for r in strict_records(out)] == scanned


# ---------------------------------------------------- finding 9: --jobs is capped


def test_worker_count_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most the usable CPUs and the pieces of work; 0 means every CPU; never below 1."""
    monkeypatch.setattr(cli, "_usable_cpus", lambda: 8)
    assert cli._worker_count(1000) == 8
    assert cli._worker_count(0) == 8
    assert cli._worker_count(3) == 3
    assert cli._worker_count(1000, 2) == 2
    assert cli._worker_count(1000, 0) == 1
    assert cli._worker_count(1) == 1


def test_jobs_1000_starts_no_pool_for_a_short_file(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """--jobs 1000 on an 11-line file Python reads (each run holds a NaN, which only
    Python's json reads): one chunk, so no process pool at all; on a file of several chunks,
    a pool of at most the CPUs there are."""
    import concurrent.futures

    made: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, max_workers: int, **kwargs: Any) -> None:
            made.append(max_workers)
            super().__init__(max_workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Spy)
    monkeypatch.setattr(cli, "_usable_cpus", lambda: 2)
    path = tmp_path / "eleven.jsonl"
    run_with_nan = {"score": math.nan, "messages": OPENAI_LOOPING}
    path.write_text("".join(json.dumps(run_with_nan) + "\n" for _ in range(11)))
    argv = ["scan", "-q", "--jobs", "1000", "--format", "openai", "--anywhere", str(path)]
    code, out, _ = run(argv, monkeypatch)
    assert (code, len(strict_records(out)), made) == (0, 11, [])
    monkeypatch.setattr(cli, "CHUNK_LINES", 4)
    code, out, _ = run(argv, monkeypatch)
    assert (code, len(strict_records(out)), made) == (0, 11, [2])


def test_jobs_1000_native_reads_on_capped_threads(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Native files: at most one chunk thread per CPU, each asking the core for one reading
    thread."""
    import threading

    asked: list[int] = []
    readers: set[int] = set()
    real = cli._read_in_core

    def spy(task: Any) -> Any:
        asked.append(task.threads)
        readers.add(threading.get_ident())
        return real(task)

    monkeypatch.setattr(cli, "_read_in_core", spy)
    monkeypatch.setattr(cli, "_usable_cpus", lambda: 4)
    monkeypatch.setattr(cli, "CHUNK_LINES", 10)  # 30 chunks: every thread gets work
    code, out, _ = run(["scan", "-q", "--jobs", "1000", str(SAMPLE)], monkeypatch)
    assert code == 0 and len(strict_records(out)) == 300
    assert asked and set(asked) == {1}
    assert 1 < len(readers) <= 4


@pytest.mark.parametrize("format_", [None, "openai", "anthropic", "responses"])
def test_a_type_that_is_a_list_or_object_is_no_crash(format_: str | None, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Types that are lists or objects, where a format's names are looked up (a message's,
    a content part's, a block's): every line gets its record, status 0 (a set's ``in``
    raised TypeError on them, an internal error that ended the run)."""
    lines = [
        [{"role": "user", "type": ["x"], "content": "hi"}],
        [{"role": "system", "content": [{"type": ["text"]}]}],
        [{"role": "user", "content": [{"type": {"a": 1}, "text": "b"}]}],
        [{"type": "message", "role": "user", "content": [{"type": ["output_text"]}]}],
        [{"type": ["function_call"], "name": "a"}],
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    chosen = ["--format", format_] if format_ else []
    code, out, err = run(["scan", "-q", *chosen, str(path)], monkeypatch)
    assert code in (0, 1), err
    assert "internal error" not in err
    assert [r["line"] for r in strict_records(out)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_chunk_threads_write_what_one_thread_writes(tmp_path: Path, jobs: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """--jobs N takes whole chunks on N threads, out of order: the records come out in input
    order, byte for byte what --jobs 1 writes, with the same summary, declined and bad lines
    (read by Python in their chunk's thread) included."""
    lines = SAMPLE.read_bytes().splitlines()
    lines[7] = b'[{"type": "bot", "text": NaN}]'  # only Python's json reads it
    lines[50] = b"not json"
    lines[120] = b'[{"type": "bot", "text": "x", "usage": {"tokens": 12345678901234567890}}]'
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines * 3) + b"\n")
    monkeypatch.setattr(cli, "CHUNK_LINES", 7)  # 129 chunks, most in flight out of order
    one = run(["scan", str(path)], monkeypatch)
    many = run(["scan", str(path), "--jobs", jobs], monkeypatch)
    assert many[:2] == one[:2] and len(strict_records(one[1])) == 900
    timing = re.compile(r" in [0-9.]+ s \([0-9,]+ lines/s\)")
    assert timing.sub("", many[2]) == timing.sub("", one[2])


@pytest.mark.parametrize("line", [b'\x00[{"type":"user","text":"hi"}]',
                                  b'\x00[{"type":"user","text":"hi there"}]',
                                  b'[\x00{"type":"user","text":"hi"}]'])
def test_a_nul_among_the_first_bytes_is_named(line: bytes, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """json reads a line with a NUL among its first four bytes as UTF-16 or UTF-32 text, and
    its message then spoke of a codec ("'utf-16-be' codec can't decode byte 0x5d") or of
    garbled text: the error record names the NUL byte and where it is. A UTF-16 line that
    json reads is a thread as before."""
    path = tmp_path / "nul.jsonl"
    utf16 = '[{"type":"user","text":"hi"}]'.encode("utf-16-le")
    path.write_bytes(line + b"\n" + utf16 + b"\n")
    code, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    first, second = strict_records(out)
    assert code == 0
    at = line.index(0) + 1
    assert first["error"].startswith(f"not valid JSON: a NUL byte at byte {at} of the line, "
                                     "which json reads as UTF-16 or UTF-32 text (")
    assert "error" not in second and second["messages"] == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32",
                                      "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_utf16_or_utf32_file_is_read_as_the_text_it_holds(
        encoding: str, newline: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSONL file written in UTF-16 or UTF-32 (with a byte-order mark or without, as JSON
    may be): the same records as its UTF-8 twin, one per line. Split at the byte 0x0A,
    each line after the first was cut one byte off (an error record each) and the trailing
    NUL was a record of its own. Non-ASCII and astral text inside survives."""
    runs = [{"id": f"run é {index}", "messages": [{"type": "user", "text": "hi é 🎉"}]
             + [{"type": "bot", "text": "a"}] * index} for index in range(1, 5)]
    text = "".join(json.dumps(run, ensure_ascii=False) + newline for run in runs)
    utf8, other = tmp_path / "utf8.jsonl", tmp_path / "other.jsonl"
    utf8.write_bytes(text.encode("utf-8"))
    other.write_bytes(text.encode(encoding))
    _, expected, _ = run(["scan", str(utf8), "-q"], monkeypatch)
    code, out, _ = run(["scan", str(other), "-q"], monkeypatch)
    assert code == 0 and len(strict_records(out)) == len(runs)
    assert out.replace(b"other.jsonl", b"utf8.jsonl") == expected
    assert [record["id"] for record in strict_records(out)] == [run["id"] for run in runs]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-16-be"])
def test_a_utf16_input_is_known_from_a_first_read_of_a_byte_or_two(
        encoding: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The encoding is judged on the first 20 bytes, however few the first read gives (a
    pipe's, or a gzip file whose first member is the byte-order mark alone or one byte):
    it was judged on the first read alone, and every line after the first was an error
    record. A JSON document of runs in UTF-16 is read as its UTF-8 twin is, a run at a
    time, its runs before a break kept (it was read whole, and cut short lost every run)."""
    import gzip

    runs = [{"id": f"r{index}", "messages": [{"type": "user", "text": "hi é"}]
             + [{"type": "bot", "text": "a"}] * index} for index in range(1, 5)]
    text = "".join(json.dumps(run, ensure_ascii=False) + "\n" for run in runs)
    _, expected, _ = run(["scan", "-", "-q"], monkeypatch, stdin=text.encode())
    data = text.encode(encoding)
    for cut in (1, 2, 3):
        members = tmp_path / f"cut{cut}.jsonl.gz"
        members.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
        code, out, _ = run(["scan", str(members), "-q"], monkeypatch)
        assert code == 0 and out.replace(str(members).encode(), b"<stdin>") == expected
    document = json.dumps(runs, ensure_ascii=False, indent=1)
    twin, other = tmp_path / "twin.json", tmp_path / "other.json"
    twin.write_bytes(document.encode("utf-8"))
    other.write_bytes(document.encode(encoding))
    _, expected, _ = run(["scan", str(twin), "-q"], monkeypatch)
    code, out, _ = run(["scan", str(other), "-q"], monkeypatch)
    assert code == 0 and out.replace(b"other.json", b"twin.json") == expected
    cut_short = document[:document.index('"r3"')]  # in the third run
    twin.write_bytes(cut_short.encode("utf-8"))
    other.write_bytes(cut_short.encode(encoding))
    _, expected, _ = run(["scan", str(twin), "-q"], monkeypatch)
    code, out, _ = run(["scan", str(other), "-q"], monkeypatch)
    assert code == 0 and out.replace(b"other.json", b"twin.json") == expected
    assert [record.get("id") for record in strict_records(out)] == ["r1", "r2", None]


def test_a_utf16_file_cut_inside_a_character_keeps_its_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """UTF-16 bytes that end inside a character, or UTF-32 bytes that are no code point: the
    lines before are scanned, then one error record (and a line on stderr) names the byte,
    as a gzip stream that breaks off gets."""
    good = '[{"type":"user","text":"hi"}]\n'
    cases = [(good.encode("utf-16") + '[{"ty'.encode("utf-16-le") + b"[", 1,
              "not UTF-16 text: truncated data at byte 72 of the file (it opens as UTF-16 "
              "and is read as such); line 2 is incomplete (5 bytes read)"),
             (good.encode("utf-32-le") * 2 + b"\xff\xff\xff\xff" + good.encode("utf-32-le"), 2,
              "not UTF-32-LE text: code point not in range(0x110000) at byte 240 of the "
              "file (it opens as UTF-32-LE and is read as such)")]
    for data, lines_before, why in cases:
        path = tmp_path / "cut.jsonl"
        path.write_bytes(data)
        code, out, err = run(["scan", str(path), "-q"], monkeypatch)
        *threads, last = strict_records(out)
        assert code == 0 and [thread["messages"] for thread in threads] == [1] * len(threads)
        assert len(threads) == lines_before
        assert last["error"] == why and err == f"vthread scan: {path}: {why}\n"


@pytest.mark.parametrize("line", [b'{"\x00": 1}', b'[1\x00]', b'"\x00"'])
def test_a_nul_json_reads_as_utf8_keeps_jsons_message(line: bytes, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A NUL that json does not take for UTF-16 or UTF-32 (not at byte 1 or 2) is a UTF-8
    parse error, said as json says it."""
    path = tmp_path / "nul.jsonl"
    path.write_bytes(line + b"\n")
    _, out, _ = run(["scan", str(path), "-q"], monkeypatch)
    (record,) = strict_records(out)
    expected = f"not valid JSON: {_json_error(line)}"
    assert record["error"] == expected and "UTF-16" not in expected


def _json_error(line: bytes) -> str:
    try:
        json.loads(line)
    except ValueError as error:
        return str(error)
    raise AssertionError(f"{line!r} is JSON")


def test_parquet_bytes_where_text_is_read_are_named(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Parquet piped to standard input, or in a file not named .parquet, is said to be
    Parquet (status 2; beside other inputs, one error record), not read as JSONL lines of
    garbage; a JSONL line that merely begins with the word PAR1 is a line as ever."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    misnamed = tmp_path / "runs.jsonl"
    pq.write_table(pa.table({"messages": ['[{"type": "user", "text": "x"}]'] * 3}), misnamed)
    said = "cannot read: it holds Parquet data (it opens with PAR1), which is read only from "
    code, out, err = run(["scan", "-", "-q"], monkeypatch, stdin=misnamed.read_bytes())
    assert (code, out) == (2, b"") and err.startswith(f"vthread scan: <stdin>: {said}")
    good = tmp_path / "good.jsonl"
    good.write_bytes(b'PAR1 is a word\n[{"type": "user", "text": "x"}]\n')
    code, out, err = run(["scan", str(misnamed), str(good), "-q"], monkeypatch)
    first, *rest = strict_records(out)
    assert code == 0 and first["error"].startswith(said)
    assert [record.get("error", "")[:14] for record in rest] == ["not valid JSON", ""]
    # A first line PAR1 and a NUL in the next: lines (it was refused as Parquet, exit 2);
    # a NUL on the second line of a file opening with a newline: UTF-8 lines, not the
    # UTF-16 text "\n" (one record for two lines). Found by the fuzz test.
    # (and UTF-16 lines whose first id holds an é are still UTF-16: a reviewer's)
    utf16 = "".join(json.dumps({"id": f"é{i}", "messages": [{"type": "user", "text": "hi"}]},
                               ensure_ascii=False) + "\n" for i in range(3))
    for encoding in ("utf-16", "utf-16-le", "utf-32"):
        odd = tmp_path / "utf16.jsonl"
        odd.write_bytes(utf16.encode(encoding))
        code, out, err = run(["scan", str(odd), "-q"], monkeypatch)
        assert code == 0 and [r["id"] for r in strict_records(out)] == ["é0", "é1", "é2"], err
    for data, first_error in ((b"PAR1\n\x00", "not valid JSON"), (b"\n\x00", "blank line")):
        odd = tmp_path / "odd.jsonl"
        odd.write_bytes(data)
        code, out, err = run(["scan", str(odd), "-q"], monkeypatch)
        written = strict_records(out)
        assert code == 0 and [record["line"] for record in written] == [1, 2], err
        assert written[0]["error"].startswith(first_error)


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("chat", [True, False], ids=["openai", "native"])
@pytest.mark.parametrize("before", [100, 1])
def test_a_line_larger_than_the_memory_keeps_the_records_before_it(
        tmp_path: Path, chat: bool, jobs: str, before: int) -> None:
    """100 small runs, one of 120 MB, one more, under an address-space limit of 220 MB: the
    scan ends with status 71 naming line 101, after writing the 100 records before it (a
    chunk holds them all with the long line: before, the chunk's records were lost, the
    message named the chunk's first line, and an OpenAI line aborted the process in the
    core's allocator). The same file scans whole without the limit. With one small run
    first, the long line is among those the format is told by (the core judges its bytes
    without a copy), and the message counts one line as one. (The most one line may take
    is set past the line: by default a quarter of the 220 MB, it would be dropped as too
    long, an error record, before the memory ran out.)"""
    import resource

    def message(text: str) -> dict[str, str]:
        return ({"role": "assistant", "content": text} if chat
                else {"type": "bot", "text": text})

    small = json.dumps([message("hi"), message("yo")]).encode() + b"\n"
    path = tmp_path / "runs.jsonl"
    with path.open("wb") as file:
        file.write(small * before)
        file.write(json.dumps([message("y" * 120_000_000)]).encode() + b"\n")
        file.write(small)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (220 << 20, 220 << 20))

    command = [sys.executable, "-c", "import sys, vthread.cli as cli; cli.LONGEST_LINE = "
               f"1 << 30; sys.exit(cli.main(['scan', '-q', '-j', {jobs!r}, {str(path)!r}]))"]
    done = subprocess.run(command, capture_output=True, env=ENV, preexec_fn=limited,
                          timeout=300, check=False)
    assert done.returncode == 71, done.stderr.decode()[-2000:]
    assert f"out of memory at {path}:{before + 1}: it does not fit the memory".encode() in (
        done.stderr)
    counted = ("the record of the 1 line before it is" if before == 1
               else f"the records of the {before} lines before it are")
    assert f"{counted} written".encode() in done.stderr
    assert len(done.stdout.splitlines()) == before
    whole = subprocess.run(command, capture_output=True, env=ENV, timeout=300, check=False)
    assert whole.returncode == 0 and len(whole.stdout.splitlines()) == before + 2


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("anywhere", [False, True], ids=["end", "anywhere"])
def test_a_line_of_a_million_messages_larger_than_the_memory_keeps_the_records_before_it(
        tmp_path: Path, jobs: str, anywhere: bool) -> None:
    """50 small OpenAI runs, then one of a million tiny messages (36 MB), one more, under an
    address-space limit of 300 MB (a tester's case): the core's reading of the long line
    (for the format, then for the scan) asked for memory one allocation at a time, and the
    allocator's failure aborted the process (status 134: no record, no summary). Now the
    core asks for the memory of a whole line's reading first and leaves a line it cannot
    have to Python: line 51 is an error record saying so, named on stderr, and the scan
    goes on (it ended with status 71, the line after it unread)."""
    import resource

    small = json.dumps({"id": "ok", "messages": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}).encode()
    tiny = [{"role": "assistant", "content": "s"}, {"role": "user", "content": "t"}]
    path = tmp_path / "runs.jsonl"
    with path.open("wb") as file:
        file.write((small + b"\n") * 50)
        file.write(json.dumps({"id": "many", "messages": tiny * 500_000}).encode() + b"\n")
        file.write(small + b"\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))

    summary = tmp_path / "summary.json"
    command = [*VTHREAD, "scan", "-q", "-j", jobs, "--summary", str(summary), str(path),
               *(["--anywhere"] if anywhere else [])]
    done = subprocess.run(command, capture_output=True, env=ENV, preexec_fn=limited,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    _the_line_too_large_to_scan(done, path, 51, 52)
    assert json.loads(summary.read_text())["completed"] is True


def _the_line_too_large_to_scan(done: subprocess.CompletedProcess[bytes], path: Path,
                                number: int, lines: int) -> None:
    """The records of a scan whose line ``number`` did not fit the memory to be scanned:
    every line's, that one an error record, said on stderr."""
    written = [json.loads(line) for line in done.stdout.splitlines()]
    assert [record["line"] for record in written] == list(range(1, lines + 1))
    assert [record["line"] for record in written if "error" in record] == [number]
    assert "is too large to scan in the memory" in written[number - 1]["error"]
    assert f"warning: {path}:{number}: the line (".encode() in done.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_line_of_millions_of_empty_messages_larger_than_the_memory_keeps_the_records_before_it(
        tmp_path: Path, jobs: str) -> None:
    """20 small native runs, then one of three million empty messages (``{}``: 9 MB), one
    more, under an address-space limit of 300 MB (a tester's case, ten million under
    ``ulimit -v 700000``): the memory the core asks for before reading a line counts its
    bytes, and a line of messages this small makes columns several times larger than that
    count; the column pass's allocation failed and the allocator's abort ended the process
    (signal 6, no record). Now the core also asks for its columns' memory once the line's
    messages are counted: line 21 is an error record saying so, and the scan goes on."""
    import resource

    small = json.dumps([{"type": "user", "text": "a"}, {"type": "bot", "text": "b"}]).encode()
    path = tmp_path / "runs.jsonl"
    with path.open("wb") as file:
        file.write((small + b"\n") * 20)
        file.write(b"[" + b"{}," * 2_999_999 + b"{}]\n")
        file.write(small + b"\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (300 << 20, 300 << 20))

    command = [*VTHREAD, "scan", "-q", "-j", jobs, "--format", "native", str(path)]
    done = subprocess.run(command, capture_output=True, env=ENV, preexec_fn=limited,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    _the_line_too_large_to_scan(done, path, 21, 22)


def _airline_run(turns: int, ident: str) -> str:
    """An OpenAI run of ``turns`` tool-using turns, as a tau-bench agent writes them."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "# Airline agent policy\n" + "Check it first. " * 400}]
    for turn in range(turns):
        booking = f"R{turn:05d}"
        messages += [
            {"role": "user", "content": f"Can you move reservation {booking} to later? " * 3},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{turn}", "type": "function", "function": {
                    "name": "get_reservation_details",
                    "arguments": json.dumps({"reservation_id": booking})}}]},
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": json.dumps({
                "reservation_id": booking, "flights": [{
                    "flight_number": f"HAT{turn % 300:03d}", "date": "2024-05-16",
                    "price": 120 + turn % 50}] * 3})},
            {"role": "assistant", "content": f"{booking} holds three flights: which one?"},
        ]
    return json.dumps({"id": ident, "messages": messages})


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_run_python_cannot_read_in_the_memory_left_ends_the_scan_cleanly(
        tmp_path: Path, jobs: str) -> None:
    """20 small OpenAI runs, one of 180,000 messages (39 MB), 20 more, under an address-space
    limit of 350 MB (a tester's case, a 325 MB run under ``ulimit -v 1500000``): the core
    cannot have its reading's memory and leaves the line to Python, whose reading ran out
    part-way: a ``SystemError`` from the interpreter (status 70, a traceback, no record),
    SIGABRT from the core's allocations after it, or a 16-minute spin. Now Python asks for
    its reading's memory first: line 21 is an error record saying so, the 20 lines after it
    scanned, the summary written, no traceback (``--strict``: the fatal error, status 2)."""
    import resource

    path = tmp_path / "runs.jsonl"
    small = "\n".join(_airline_run(3, f"s{index}") for index in range(20))
    path.write_text(f"{small}\n{_airline_run(45_000, 'long')}\n{small}\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (350 << 20, 350 << 20))

    summary = tmp_path / "summary.json"
    command = [*VTHREAD, "scan", "-q", "-j", jobs, "--summary", str(summary), str(path)]
    done = subprocess.run(command, capture_output=True, env=ENV, preexec_fn=limited,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    _the_line_too_large_to_scan(done, path, 21, 41)
    assert b"Traceback" not in done.stderr
    assert json.loads(summary.read_text())["completed"] is True
    strict = subprocess.run([*command, "--strict"], capture_output=True, env=ENV,
                            preexec_fn=limited, timeout=300, check=False)
    assert strict.returncode == 2, strict.stderr.decode()[-2000:]
    assert f"{path}:21: the line (".encode() in strict.stderr
    assert len(strict.stdout.splitlines()) == 20


@pytest.mark.parametrize("limit_mb", [700, 750])
def test_a_translated_run_the_core_cannot_have_memory_for_is_no_abort(
        tmp_path: Path, limit_mb: int) -> None:
    """20 small Anthropic runs, one of 150,000 tool calls and results (47 MB), 20 more,
    under an address space of 700 or 750 MB (a tester's case): the core's memory asked for
    ahead (8 bytes a byte of the line) let it read the line, and its translation, native
    line and columns took more, so the allocator's abort ended the process (status 134, no
    record, no summary). Now it asks for 12: line 21 is read, or is an error record saying
    it is too large to scan, and the lines after it are read."""
    import resource

    def pair(index: int) -> list[dict[str, Any]]:
        given = {"reservation_id": f"R{index:07d}", "legs": [{"n": index, "d": "2024-05-16"}],
                 "opts": {"a": [1, 2, 3]}}
        return [{"role": "assistant", "content": [
                    {"type": "tool_use", "id": f"t{index}", "name": "get_res", "input": given}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": f"t{index}",
                     "content": json.dumps({"ok": index})}]}]

    def line(ident: str, pairs: int) -> str:
        return json.dumps({"id": ident, "messages": [
            message for index in range(pairs) for message in pair(index)]}) + "\n"

    path = tmp_path / "runs.jsonl"
    with path.open("w") as file:
        file.writelines(line(f"s{index}", 3) for index in range(20))
        file.write(line("huge", 150_000))
        file.writelines(line(f"s{index}", 3) for index in range(20, 40))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))

    summary = tmp_path / "summary.json"
    done = subprocess.run([*VTHREAD, "scan", "-q", "--summary", str(summary), str(path)],
                          capture_output=True, env=ENV, preexec_fn=limited, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    written = [json.loads(line) for line in done.stdout.splitlines()]
    assert [record["line"] for record in written] == list(range(1, 42))
    assert all("error" not in record or "too large to scan" in record["error"]
               for record in written)
    assert json.loads(summary.read_text())["completed"] is True


def test_a_scan_out_of_memory_is_no_internal_error_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A MemoryError from the scan of a chunk Python read ends the scan at the run that
    does not fit (status 71, the records before it written) when the run is small (the
    process is out of memory as a whole), and makes a large run an error record saying so:
    it was caught as the engine's failure, the run became an "internal error: MemoryError"
    record and the scan went on to status 0 (a tester's case: ``--anywhere`` under
    ``ulimit -v``)."""
    runs = [{"id": f"r{index}", "messages": [{"type": "bot", "text": "hi"}] * (9 if index == 3
                                                                              else 2)}
            for index in range(6)]
    runs[4]["messages"] = [{"type": "bot", "text": "y" * cli.LARGE_LINE}] * 6
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(run) + "\n" for run in runs))
    scan = cli.scan_validated

    def short_of_memory(threads: list[Any], **options: Any) -> Any:
        if any(len(thread) > 5 for thread in threads):
            raise MemoryError
        return scan(threads, **options)

    monkeypatch.setattr(cli, "_core_may_read", lambda task: False)  # (Python reads them)
    monkeypatch.setattr(cli, "scan_validated", short_of_memory)
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 71 and f"out of memory at {path}:4:" in err, err
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["r0", "r1", "r2"]
    runs[3]["messages"] = runs[3]["messages"][:2]  # (the large run alone does not fit)
    path.write_text("".join(json.dumps(run) + "\n" for run in runs))
    code, out, err = run(["scan", str(path), "-q"], monkeypatch)
    assert code == 0, err
    written = [json.loads(line) for line in out.splitlines()]
    assert [record["id"] for record in written] == ["r0", "r1", "r2", "r3", None, "r5"]
    assert written[4]["error"].startswith("the line (")
    assert b"internal error" not in out
    assert f"warning: {path}:5: the line (" in err


def test_commas_inside_texts_are_not_counted_as_values(tmp_path: Path) -> None:
    """A run of 100 MB whose texts are CSV (a tool's output), read by Python (an integer past
    the doubles sends it there), under an address space of 3,000 MB: its reading takes about
    0.1 GB, and the memory asked for first counts the values outside its strings; every
    comma counted asked for 9.8 GB and refused it (status 71, a reviewer's case)."""
    import resource

    csv = ",".join(["0"] * 5_000_000)
    messages = [{"type": "bot", "text": csv} for _ in range(10)]
    messages.append({"type": "bot", "text": "done", "usage": {"tokens": 10**20}})
    path = tmp_path / "csv.jsonl"
    path.write_text(json.dumps({"id": "csv", "messages": messages}) + "\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3000 << 20, 3000 << 20))

    done = subprocess.run([*VTHREAD, "scan", "-q", str(path)], capture_output=True, env=ENV,
                          preexec_fn=limited, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    (record,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert record["id"] == "csv" and record["messages"] == 11


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=',{[]}"\\ab\u00e9'),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet=',{["\\a', max_size=3), inner, max_size=4),
    max_leaves=20))
def test_the_core_counts_a_json_texts_separators_outside_its_strings(value: Any) -> None:
    """``_core.json_separators`` of a JSON text is its values' commas and opening brackets,
    as the value's own shape counts them, whatever its strings hold."""

    def counted(node: Any) -> int:
        if isinstance(node, list):
            return 1 + max(len(node) - 1, 0) + sum(map(counted, node))
        if isinstance(node, dict):
            return 1 + max(len(node) - 1, 0) + sum(map(counted, node.values()))
        return 0

    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        assert _core.json_separators(text.encode()) == counted(value)


@pytest.mark.parametrize("call", ["scan", "describe_thread_cycle"])
def test_a_python_thread_whose_columns_do_not_fit_is_a_memory_error(call: str) -> None:
    """Three million empty messages given as Python objects, with an address space of 64 MB
    more than the process holds (the reviewer's case): the column pass's allocations failed
    one at a time and the allocator's abort ended the process (status 134). Now the core
    asks for the thread's column memory first: a MemoryError (``scan``'s naming the
    thread)."""
    code = f"""
import resource, vthread
thread = [{{}} for _ in range(3_000_000)]
vthread.scan([[{{"type": "a"}}]])
size = int(next(line for line in open("/proc/self/status")
                if line.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (64 << 20), size + (64 << 20)))
try:
    vthread.{call}({"[thread]" if call == "scan" else "thread"})
    print("read")
except MemoryError as error:
    print("MemoryError:", error)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=ENV,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    which = "thread 0: " if call == "scan" else ""
    said = f"MemoryError: {which}not enough memory to read its 3000000 messages"
    assert done.stdout.decode().strip() == said


def test_bytes_the_core_cannot_have_from_python_are_a_memory_error_not_a_hang() -> None:
    """The canonical encoding of a 100 MB text, with the core's own buffer in reach and
    Python's copy of it not: a MemoryError. pyo3's constructor panicked there ("PyObject
    pointer is null", a PanicException), and with ``RUST_BACKTRACE=1`` (as CI machines set
    it) the panic's backtrace needed memory it could not have and the process hung."""
    code = """
import resource
from vthread import _core
text = "y" * (100 << 20)
_core.canonical("x")
size = int(next(line for line in open("/proc/self/status")
                if line.startswith("VmSize")).split()[1]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (160 << 20), size + (160 << 20)))
try:
    _core.canonical(text)
    print("made")
except MemoryError:
    print("MemoryError")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          env={**ENV, "RUST_BACKTRACE": "1"}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout.decode().strip() == "MemoryError"
    assert b"panicked" not in done.stderr


def test_a_document_run_larger_than_the_memory_ends_the_scan(tmp_path: Path) -> None:
    """A .json document of 100 small runs, one of 60 MB and one more, under an address-space
    limit of 220 MB (a reviewer's case): the scan ends with status 71 and no more than the
    100 records before the long run. Python's bytes for a run were made by a call that
    panics where memory cannot be had, and the panic's report could not be written either:
    the process hung, and only SIGKILL ended it."""
    import resource

    small = [{"type": "bot", "text": "hi"}, {"type": "bot", "text": "yo"}]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([small] * 100 + [[{"type": "bot", "text": "y" * 60_000_000}]]
                               + [small]))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (220 << 20, 220 << 20))

    done = subprocess.run([*VTHREAD, "scan", "-q", str(path)], capture_output=True, env=ENV,
                          preexec_fn=limited, timeout=120, check=False)
    assert done.returncode == 71, done.stderr.decode()[-2000:]
    assert b"out of memory" in done.stderr and b"panicked" not in done.stderr
    assert len(done.stdout.splitlines()) <= 100


# ------------------------------------------------- a non-blocking standard input


def _fed_without_blocking(argv: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    """The command reading a pipe handed over non-blocking (as a Node.js parent or a terminal
    tool may), the producer slower than the reader: nothing is written until it has looked."""
    import threading
    import time

    readable, writable = os.pipe()
    os.set_blocking(readable, False)

    def produce() -> None:
        time.sleep(0.3)
        try:
            for at in range(0, len(data), 50_000):
                os.write(writable, data[at : at + 50_000])
        except BrokenPipeError:
            pass  # the command stopped reading (the test then fails on what it wrote)
        finally:
            os.close(writable)

    producer = threading.Thread(target=produce)
    producer.start()
    try:
        return subprocess.run([*VTHREAD, *argv], stdin=readable, capture_output=True, env=ENV,
                              timeout=120, check=False)
    finally:
        os.close(readable)  # a writer still writing gets a broken pipe, not a hang
        producer.join()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_non_blocking_standard_input_is_read_to_its_end(jobs: str) -> None:
    """``vthread scan -`` on a non-blocking pipe reads every line (it read none: an empty
    read of such a pipe looked like its end), with the records of a blocking one."""
    data = SAMPLE.read_bytes()
    expected = subprocess.run([*VTHREAD, "scan", "-", "--jobs", jobs], input=data,
                              capture_output=True, env=ENV, timeout=120, check=False)
    fed = _fed_without_blocking(["scan", "-", "--jobs", jobs], data)
    assert (fed.returncode, fed.stdout) == (expected.returncode, expected.stdout)
    assert len(fed.stdout.splitlines()) == len(data.splitlines())


def test_a_non_blocking_standard_input_is_reported(tmp_path: Path) -> None:
    """``vthread report -`` reads a non-blocking pipe of runs, and of records, to its end."""
    data = SAMPLE.read_bytes()
    records = subprocess.run([*VTHREAD, "scan", str(SAMPLE)], capture_output=True, env=ENV,
                             timeout=120, check=False).stdout
    for given, page in ((data, tmp_path / "runs.html"), (records, tmp_path / "records.html")):
        fed = _fed_without_blocking(["report", "-", "-o", str(page)], given)
        assert fed.returncode == 0, fed.stderr
        assert b"300 runs" in fed.stderr


def test_a_line_too_deep_for_json_keeps_its_id_and_says_whether_it_is_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line nested past what Python's json reads is an error record that keeps its run's
    id (read from its top-level members, each alone), in any format and from any process;
    one that is not JSON either says so (both were "nested too deeply to read", id null, so
    the run could not be found in a file of thousands)."""
    deep = "[" * 2000 + "]" * 2000
    lines = [
        '{"id": "ok", "messages": [{"type": "user", "text": "q"}]}',
        '{"id": "broken", "messages": [{"type": "user", "text": "x", "meta": ' + "[" * 2000
        + "}",
        '{"messages": [{"type": "user", "text": "x", "meta": ' + deep + '}], "id": "valid"}',
        '{"task_id": 7, "trial": 1, "traj": [{"role": "user", "content": ' + deep + "}]}",
        '{"id": ' + deep + ', "messages": []}',
        '\ufeff{"id": "marked", "messages": [{"type": "user", "text": "x", "meta": ' + deep
        + "}]}",
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for jobs in ("1", "2"):
        code, out, _ = run(["scan", "-q", "-j", jobs, str(path)], monkeypatch)
        got = strict_records(out)
        assert code == 0 and [r["id"] for r in got] == ["ok", None, "valid", "7/1", None,
                                                        "marked"]
        assert got[1]["error"] == ("not valid JSON, and nested too deeply for json to say "
                                   "where it breaks")
        assert all(r["error"].startswith("nested too deeply to read (maximum recursion")
                   for r in got[2:])
    # Opening the file, a byte-order mark before it: JSON (it was "its first line is not
    # JSON", and no id).
    path.write_text(lines[-1] + "\n")
    code, out, err = run(["scan", "-q", str(path)], monkeypatch)
    assert [r["id"] for r in strict_records(out)] == ["marked"] and "not JSON" not in err
