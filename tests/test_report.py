"""``vthread report``: the page's figures, its safety on hostile text, and the page itself in
headless Chromium (Debian's ``chromium``, driven by Playwright) on the real published runs."""

from __future__ import annotations

import codecs
import copy
import gzip
import html
import io
import json
import math
import os
import re
import shutil
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from tests.deadline import ends_within
from vthread.cli import main
from vthread.report import RecordError, ReportData, render_report

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "vthread" / "samples" / "threads.jsonl"
REALDATA = ROOT.parent / "shared" / "realdata"
REAL_FILES = [REALDATA / "tau-bench_gpt-4o-airline.json",
              *sorted((REALDATA / "swe-agent").glob("*.traj")),
              REALDATA / "mini-swe-agent_gemini-3-pro_swe-bench-verified.jsonl.gz"]
SCREENSHOT = ROOT / "docs" / "img" / "report.png"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HOSTILE = "</script><img src=x onerror=alert(1)>"

needs_realdata = pytest.mark.skipif(
    not all(path.exists() for path in REAL_FILES),
    reason=f"the real runs folder {REALDATA} is absent (outside CI)")


def _loop_record(ident: Any, excerpt: str, **fields: Any) -> dict[str, Any]:
    record = {"id": ident, "file": "runs.jsonl", "line": 1, "verdict": "repeated_suffix",
              "loop_start": 4, "period": 2, "repetitions": 3, "loop_messages": 6,
              "loop_tokens": 60.0, "signature": "00000000000000ff", "excerpt": excerpt,
              "messages": 10}
    record.update(fields)
    return record


def _scan_summary(files: list[Path], tmp_path: Path) -> dict[str, Any]:
    summary = tmp_path / "summary.json"
    status = main(["scan", "-q", "-o", str(tmp_path / "records.jsonl"), "--summary",
                   str(summary), *map(str, files)])
    assert status == 0
    return dict(json.loads(summary.read_text()))


def _headline_keys() -> tuple[str, ...]:
    return ("threads", "errors", "loops", "messages", "wasted_messages", "tokens",
            "wasted_tokens")


# ------------------------------------------------------------------------------ no browser


def test_figures_equal_the_scan_summary(tmp_path: Path) -> None:
    """The records read back give the scan's own --summary figures."""
    expected = _scan_summary([SAMPLE], tmp_path)
    data = ReportData()
    for line in (tmp_path / "records.jsonl").read_text().splitlines():
        data.add(json.loads(line))
    data.tokens = expected["tokens"]
    got = data.summary()
    for key in (*_headline_keys(), "progressing", "loops_by_heuristic"):
        assert got[key] == expected[key], key


def _wasted_tokens_card(page: str) -> str:
    card = page.split('data-figure="wasted_tokens"', 1)[1].split("</div></div>", 1)[0]
    return re.sub(r"<[^>]+>", " ", card)


def test_loops_of_unrecorded_cost_are_not_shown_as_no_waste() -> None:
    """Loops whose messages carry no usage.tokens, in runs whose others do: the card does not
    read 0 wasted tokens when no loop's cost is known (n/a), and says how many loops it
    leaves out when some is."""
    data = ReportData()
    data.add(_loop_record("a", "x", loop_tokens=None))
    data.add(_loop_record("b", "y", loop_tokens=None))
    data.tokens = 5000.0
    assert data.summary()["loops_without_tokens"] == 2
    assert data.summary()["wasted_tokens"] is None  # as the scan's --summary writes it
    card = _wasted_tokens_card(render_report(data, title="t", sources=["s"]))
    assert 'data-value="null"' in card and "n/a" in card and "carry usage.tokens" in card
    data.add(_loop_record("c", "z", loop_tokens=50.0))
    card = _wasted_tokens_card(render_report(data, title="t", sources=["s"]))
    assert 'data-value="50.0"' in card
    assert "2 loops with no countable usage.tokens not counted" in card


@pytest.mark.filterwarnings("error")
def test_token_sums_past_the_largest_double_are_said_not_written_as_infinity() -> None:
    """Loops whose costs sum past the largest double (1.8e308): the card and the table say
    "over 1.8e308", the card's data-value is JSON null (as the scan's --summary file writes
    it), and no ``Infinity``, ``inf`` or NumPy warning appears anywhere."""
    data = ReportData()
    for ident in "abc":
        data.add(_loop_record(ident, "x", loop_tokens=1.5e308))
    data.tokens = math.inf
    page = render_report(data, title="t", sources=["s"])
    card = _wasted_tokens_card(page)
    assert 'data-value="null"' in card and "over 1.8e308" in card
    assert "Infinity" not in page and not re.search(r"\binf\b", page)
    assert 'data-figure="tokens" data-value="null"' in page


def test_a_total_no_agent_spends_is_shown_in_powers_of_ten() -> None:
    """A loop's cost past 10**12 (a broken logger's figures) is shown in powers of ten, as
    the scan's summary writes it, not in hundreds of digits; its data-value stays exact."""
    data = ReportData()
    data.add(_loop_record("a", "x", loop_tokens=1.7e308))
    data.tokens = 1.7e308
    page = render_report(data, title="t", sources=["s"])
    card = _wasted_tokens_card(page)
    assert "1.700e+308" in card and "000,000" not in page
    assert 'data-value="1.7e+308"' in card
    # A count past a machine word is no record's (one past the largest double was status
    # 70, the page's arithmetic broken).
    with pytest.raises(RecordError, match="messages is a number of 401 digits, not a count"):
        data.add(_loop_record("b", "y") | {"messages": 10**400})


BAD_FIELDS = [{"line": "7"}, {"loop_start": -1}, {"period": 1.0}, {"repetitions": None},
              {"loop_messages": True}, {"messages": -3}, {"verdict": "no_such_heuristic"},
              {"verdict": ["repeated_suffix"]}, {"loop_tokens": -1.0},
              {"loop_tokens": math.inf}, {"loop_tokens": math.nan}, {"loop_tokens": "60"},
              {"loop_tokens": 10**400}, {"verdict": None, "messages": "10"},
              {"file": ["a"]}, {"line": True}, {"excerpt": {"a": [1]}}, {"signature": 3},
              {"verdict": None, "line": -2}, {"error": "x", "file": None}]


def _report_state(data: ReportData) -> tuple[ReportData, dict[str, Any], str]:
    """Everything a record can change: every column and counter, the summary, the page."""
    return copy.deepcopy(data), data.summary(), render_report(data, title="t", sources=["s"])


@pytest.mark.parametrize("fields", BAD_FIELDS, ids=repr)
def test_a_rejected_record_changes_nothing(fields: dict[str, Any]) -> None:
    """A record with one bad field raises RecordError before counting anything: the columns
    stay one entry per looping run (they used to come out 5, 4, 3, 2 long for ids, line,
    loop_start and period) and lines, messages and the summary count only good records."""
    data = ReportData()
    data.add(_loop_record("good", "x"))
    data.add(_loop_record("next", "y", verdict=None))
    before = _report_state(data)
    with pytest.raises(RecordError):
        data.add({**_loop_record("bad", "z"), **fields})
    assert _report_state(data) == before


@pytest.mark.parametrize("record", [[], "record", None, 7, [("file", "a")]], ids=repr)
def test_a_record_that_is_no_mapping_is_a_record_error(record: Any) -> None:
    data = ReportData()
    before = _report_state(data)
    with pytest.raises(RecordError, match="not a vthread scan record"):
        data.add(record)
    assert _report_state(data) == before


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**20) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=2), max_leaves=3)


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.lists(st.dictionaries(
    st.sampled_from(["line", "loop_start", "period", "repetitions", "loop_messages",
                     "messages", "verdict", "loop_tokens", "id", "excerpt", "signature"]),
    JSON_VALUES, max_size=3), max_size=6))
def test_every_add_counts_whole_records_or_nothing(changes: list[dict[str, Any]]) -> None:
    """Adding records with random JSON values in their fields: each either raises
    RecordError and leaves the state as it was, or counts; the columns stay one length."""
    data = ReportData()
    for index, fields in enumerate(changes):
        before = _report_state(data)
        try:
            data.add({**_loop_record(f"r{index}", "x"), **fields})
        except RecordError:
            assert _report_state(data) == before
        columns = {len(getattr(data, name)) for name in (
            "ids", "file_index", "line", "kind", "loop_start", "period", "repetitions",
            "loop_messages", "loop_tokens", "run_messages", "excerpt_index", "signature_index")}
        assert columns == {data.loops}


@hypothesis.settings(max_examples=500, deadline=None)
@hypothesis.given(
    st.sampled_from([{"file": "a.jsonl", "line": 1, "verdict": None, "messages": 2},
                     {"id": "r", "file": "a.jsonl", "line": 2, "error": "not valid JSON"},
                     {"file": "a.jsonl", "line": 3, "verdict": "repeated_suffix",
                      "messages": 9, "loops": []}]),
    st.dictionaries(st.sampled_from(["file", "line", "verdict", "error", "messages", "id",
                                     "loops", "trajectory", "loop_messages", "loop_start",
                                     "period", "repetitions", "excerpt", "signature",
                                     "loop_tokens"]),
                    JSON_VALUES | st.sampled_from(["repeated_suffix", "x", 2**63]) | st.just(
                        {"score": 0}), max_size=3),
    st.sets(st.sampled_from(["file", "line", "verdict", "error", "messages"]), max_size=1))
def test_the_report_adds_what_the_scan_calls_a_record(
        record: dict[str, Any], changes: dict[str, Any], removed: set[str]) -> None:
    """One rule tells records: ``ReportData.add`` takes exactly what ``is_record`` (the
    scan's test of a records file) calls one (a run carrying file, line and error fields was
    counted as an error record, a line past the largest count passed over as a record, and
    a loop's damaged field passed over by the scan and refused by the report: reviewers'
    finds)."""
    from vthread._cli_report import is_record

    value = {key: field for key, field in {**record, **changes}.items() if key not in removed}
    try:
        ReportData().add(value)
    except RecordError:
        added = False
    else:
        added = True
    assert added == is_record(value)


def test_an_id_and_a_file_name_are_one_line_on_the_page() -> None:
    """A newline in a run's id or its file's name is shown as an escape, so that ``a\\nb``
    and ``a b`` read apart (both showed as the same two words: a tester's case); an
    excerpt keeps its lines."""
    data = ReportData()
    data.add(_loop_record("a\nb", "one\ntwo", file="x\ny.jsonl"))
    data.add(_loop_record("a b", "x", line=2))
    page = render_report(data, title="t", sources=["s"])
    blob = json.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])
    assert blob["runs"]["id"] == ["a\\x0ab", "a b"]
    assert "x\\x0ay.jsonl" in blob["files"] and "one\ntwo" in blob["excerpts"]


def test_a_histogram_of_figures_far_apart_has_few_bars_all_drawable() -> None:
    """Wasted tokens from 1 to 1e308 make at most MOST_BINS bars (and one more), none of a
    negative width (two bins a factor of ten drew 617 bars of width -1.3, 617 errors in the
    browser's console: a tester's case); figures within a few factors of ten keep two bins a
    factor."""
    from vthread.report import MOST_BINS

    data = ReportData()
    for index, tokens in enumerate((1.0, 1e5, 1e150, 1e308)):
        data.add(_loop_record(f"r{index}", "x", line=index + 1, loop_tokens=tokens))
    page = render_report(data, title="t", sources=["s"])
    widths = [float(width) for width in re.findall(  # (the histogram's bars alone)
        r'<rect x="[^"]*" y="[^"]*" width="([^"]*)" height="[^"]*" fill="#495057">', page)]
    assert 0 < len(widths) <= MOST_BINS + 2 and min(widths) > 0
    near = ReportData()
    for index, tokens in enumerate((10.0, 1000.0)):
        near.add(_loop_record(f"r{index}", "x", line=index + 1, loop_tokens=tokens))
    bars = re.findall(r"<title>\d+ runs? from ([^ ]+) tokens</title>",
                      render_report(near, title="t", sources=["s"]))
    assert bars == ["10", "32", "100", "316", "1k"]


def test_a_histogram_bar_says_run_or_runs() -> None:
    """A bar's tooltip counts its runs in words that agree ("1 run", "2 runs")."""
    data = ReportData()
    for ident, tokens in (("a", 3.0), ("b", 500.0), ("c", 520.0)):
        data.add(_loop_record(ident, "x", loop_tokens=tokens))
    page = render_report(data, title="t", sources=["s"])
    tips = re.findall(r"<title>(\d+) (runs?) from", page)
    assert ("1", "run") in tips and ("2", "runs") in tips
    assert all((count == "1") == (word == "run") for count, word in tips)


def test_hostile_text_is_escaped_everywhere() -> None:
    """An id and excerpt that try to close the script and inject markup stay text."""
    data = ReportData()
    data.add(_loop_record(HOSTILE, HOSTILE + " & 'x' \u2028"))
    page = render_report(data, title=HOSTILE, sources=[HOSTILE])
    assert "<img" not in page
    assert page.count("</script>") == 2  # the data blob's and the script's own
    blob = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(blob)["runs"]["id"] == [HOSTILE]


def test_message_kinds_cover_every_looping_run(tmp_path: Path) -> None:
    """Scanned runs carry one kind per message for every looping run (the sample's threads
    are short enough), and records read back carry none."""
    out = tmp_path / "r.html"
    assert main(["report", str(SAMPLE), "-o", str(out)]) == 0
    text = out.read_text()
    runs = json.loads(text.split('id="report-data">', 1)[1].split("</script>", 1)[0])["runs"]
    assert runs["id"] and [len(k) for k in runs["kinds"]] == runs["messages"]
    assert {"u", "a", "c", "r"} <= set("".join(runs["kinds"]))


def test_a_looping_run_too_large_to_read_again_leaves_its_timeline_plain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The timelines' second reading of a looping run whose memory cannot be had (the
    scan's core read it; Python's reading asks first) leaves that run's timeline plain: the
    page is written (the MemoryError ended ``vthread report`` with a traceback, status
    70)."""
    from vthread import cli

    run = json.dumps({"id": "long", "messages": [{"type": "bot", "text": "y" * 400_000}] * 4})
    path = tmp_path / "runs.jsonl"
    path.write_text(f"{run}\n")
    monkeypatch.setattr(cli, "_room_to_read_in_python", lambda line: False)
    out = tmp_path / "r.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    runs = json.loads(out.read_text().split('id="report-data">', 1)[1].split(
        "</script>", 1)[0])["runs"]
    assert runs["id"] == ["long"] and not any(runs["kinds"])


def test_a_records_line_longer_than_a_line_may_take_is_named_not_held(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A records file's line longer than the most one line may take (a quarter of the
    memory) ends the report with 2 naming it, its start alone read: such a line was read
    whole, and a line of gigabytes ended the report out of memory with a traceback (a
    tester's case). A record's long id within the limit is read."""
    from vthread import cli

    records = tmp_path / "records.jsonl"
    assert main(["scan", str(SAMPLE), "-q", "-o", str(records)]) == 0
    lines = records.read_bytes().splitlines(keepends=True)
    long_id = json.dumps({"id": "i" * (2 << 20), "file": "a", "line": 1, "verdict": None,
                          "messages": 2}).encode() + b"\n"
    records.write_bytes(b"".join(lines[:2]) + long_id + b"".join(lines[2:]))
    out = tmp_path / "r.html"
    assert main(["report", str(records), "-o", str(out)]) == 0
    monkeypatch.setattr(cli, "LONGEST_LINE", 1 << 20)  # (the scan's own, read by both)
    capsys.readouterr()
    assert main(["report", str(records), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"vthread report: {records}:3: the line is longer than 1,048,576 bytes, the most one "
        "line may take (a quarter of the memory this process may have)\n")


def test_a_scan_that_ends_out_of_memory_ends_the_report_with_its_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A report whose scan ends out of memory (a document's run longer than the most one
    line may take) ends with the scan's 71, naming the run, and writes no page: a page of
    the runs before it would look whole."""
    from vthread import cli

    monkeypatch.setattr(cli, "LONGEST_LINE", 3 << 20)
    small = [{"type": "user", "text": "hi"}]
    large = [{"type": "user", "text": "b" * (4 << 20)}]
    source = tmp_path / "runs.json"
    source.write_text(json.dumps([small, large, small]))
    out = tmp_path / "r.html"
    assert main(["report", str(source), "-o", str(out)]) == 71
    assert f"vthread report: out of memory at {source}: run 2:" in capsys.readouterr().err
    assert not out.exists()


def test_keys_starting_with_a_dash_reach_the_scan(tmp_path: Path) -> None:
    """``--messages-key=-x`` and ``--id-key=--name`` are passed on to the report's scan as
    given (each was passed as two words, and the scan read the key as an option: exit 2
    where ``vthread scan`` took them), and the looping run's timeline is coloured."""
    looping = [{"type": "user", "text": "go"}] + [{"type": "bot", "text": "again"}] * 6
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"--name": "r1", "-x": looping}) + "\n")
    out = tmp_path / "r.html"
    assert main(["report", "--messages-key=-x", "--id-key=--name", str(path), "-o",
                 str(out)]) == 0
    runs = json.loads(out.read_text().split('id="report-data">', 1)[1].split(
        "</script>", 1)[0])["runs"]
    assert runs["id"] == ["r1"] and any(runs["kinds"][0])


def test_a_directory_of_runs_keeps_its_message_kinds_and_its_files(tmp_path: Path) -> None:
    """A directory FILE: its looping runs' timelines are coloured as for the files named one
    by one (they were all grey: the directory was read again as if it were a file), and an
    output that is one of its trajectory files is refused, the file as it was."""
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "sample.jsonl")
    pages = []
    for given in (folder, folder / "sample.jsonl"):
        out = tmp_path / f"{len(pages)}.html"
        assert main(["report", str(given), "-o", str(out)]) == 0
        text = out.read_text()
        runs = json.loads(text.split('id="report-data">', 1)[1].split("</script>", 1)[0])
        pages.append(runs["runs"]["kinds"])
    assert pages[0] == pages[1] and any(pages[0])
    before = (folder / "sample.jsonl").read_bytes()
    assert main(["report", str(folder), "-o", str(folder / "sample.jsonl")]) == 2
    assert (folder / "sample.jsonl").read_bytes() == before


def test_records_file_is_read_back(tmp_path: Path) -> None:
    """A scan's JSONL output (here gzipped) makes the same page figures as the scan."""
    expected = _scan_summary([SAMPLE], tmp_path)
    packed = tmp_path / "records.jsonl.gz"
    packed.write_bytes(gzip.compress((tmp_path / "records.jsonl").read_bytes()))
    out = tmp_path / "r.html"
    assert main(["report", str(packed), "-o", str(out)]) == 0
    page = out.read_text()
    for key in ("threads", "loops", "wasted_messages"):
        assert f'data-figure="{key}" data-value="{expected[key]}"' in page
    assert 'data-figure="tokens" data-value="null"' in page  # not in the records
    assert '"kinds":[]' in page


def test_a_report_of_no_thread_says_so_without_advising_a_scan_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The scan a report runs warns that no thread was scanned in the report's words, with
    no word of ``--fail-on-error``, which ``vthread report`` does not take."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert main(["report", str(empty), "-o", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "vthread report: warning: no thread was scanned: the input held none\n" in err
    assert "--fail-on-error" not in err and "vthread scan:" not in err


def test_a_number_id_is_shown_as_its_record_writes_it(tmp_path: Path) -> None:
    """An id that is a number no double holds as written (1e400, NaN) or rounds is shown as
    the record writes it, as an integer id is shown exactly (1e400 was "Infinity")."""
    written = ["1e400", "-1E+400", "NaN", "-Infinity", "1.50", "12345678901234567890123",
               "0.1000000000000000000001"]
    lines = [json.dumps(_loop_record(0, "x")).replace('"id": 0', f'"id": {text}')
             for text in written]
    records = tmp_path / "records.jsonl"
    records.write_text("".join(line + "\n" for line in lines))
    out = tmp_path / "r.html"
    assert main(["report", str(records), "-o", str(out)]) == 0
    page = out.read_text()
    blob = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(blob)["runs"]["id"] == written


def test_records_named_json_and_a_cut_last_line_are_read_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Records in a file named .json are read back (they were taken for a JSON document:
    no runs, every line bad, while stderr advised the same command); a last line cut short
    (a file still being written) is said and counted as a bad line (its run is not read:
    the page said "bad lines 0"), and the report is written."""
    expected = _scan_summary([SAMPLE], tmp_path)
    text = (tmp_path / "records.jsonl").read_text()
    named_json = tmp_path / "records.json"
    named_json.write_text(text)
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(named_json), "-o", str(out)]) == 0
    assert capsys.readouterr().err == (f"vthread report: {expected['threads']:,} runs, "
                                       f"{expected['loops']:,} with a loop: wrote {out}\n")
    cut = tmp_path / "cut.jsonl"
    lines = text.splitlines()
    cut.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40])
    assert main(["report", str(cut), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"vthread report: warning: {cut}:{len(lines)}: the last line is cut "
                          "short (a file still being written?): counted as a bad line\n")
    page = out.read_text()
    assert f'data-figure="threads" data-value="{expected["threads"] - 1}"' in page
    assert f'data-figure="errors" data-value="{expected["errors"] + 1}"' in page
    # Cut inside a character (records another tool rewrote unescaped): the same, where it
    # was fatal ("not UTF-8 text"), and so in a gzip stream broken there.
    last = json.dumps({**json.loads(lines[-1]), "id": "caf\u00e9"}, ensure_ascii=False)
    whole = ("\n".join(lines[:-1]) + "\n" + last).encode()
    cut.write_bytes(whole[:whole.rindex("\u00e9".encode()) + 1])
    zipped = tmp_path / "cut.jsonl.gz"
    for name in (cut, zipped):
        if name == zipped:  # (a member flushed to its last byte, with no end)
            packer = zlib.compressobj(wbits=31)
            name.write_bytes(packer.compress(cut.read_bytes()) + packer.flush(zlib.Z_SYNC_FLUSH))
        assert main(["report", str(name), "-o", str(out)]) == 0
        err = capsys.readouterr().err
        assert f"{name}:{len(lines)}: " in err and "counted as a bad line" in err, err
        assert f'data-figure="errors" data-value="{expected["errors"] + 1}"' in out.read_text()


def test_the_page_shows_what_the_command_warned_of(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Records written with --only-loops: the warning that the figures count only the runs
    they hold is on the page too (a page sent on its own said "100.0% of runs" with nothing
    to say why), escaped; a page read without warnings has no such section; past 20, the
    rest are counted."""
    records_file = tmp_path / "lo<ops>.jsonl"
    assert main(["scan", "-q", "--only-loops", "-o", str(records_file), str(SAMPLE)]) == 0
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(records_file), "-o", str(out)]) == 0
    warning = capsys.readouterr().err.splitlines()[0].removeprefix("vthread report: warning: ")
    assert "holds no progressing run (written with --only-loops, or every run loops)" in (
        warning)
    page = out.read_text()
    assert f"<h2>Warnings</h2><ul><li>{html.escape(warning)}</li></ul>" in page
    assert "lo&lt;ops&gt;.jsonl holds no progressing run" in page
    assert "Warnings" not in render_report(ReportData(), title="t")
    many = render_report(ReportData(), title="t", warnings=[f"w{i}" for i in range(23)])
    assert "<li>w19</li><li>and 3 more, on standard error</li>" in many
    # The scan's warnings of a file are on the page too, and the records given twice are
    # said once; "no thread was scanned" is not, when the records give the page its runs.
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["report", str(bad), str(records_file), str(records_file), "-o",
                 str(out)]) == 0
    err = capsys.readouterr().err
    assert f"vthread report: {bad}: warning: its first line is not JSON" in err
    assert "no thread was scanned" in err
    page = out.read_text()
    shown = page.split("<h2>Warnings</h2>", 1)[1].split("</ul>", 1)[0]
    assert f"<li>{html.escape(str(bad))}: its first line is not JSON" in shown
    assert shown.count("holds no progressing run") == 1
    assert "is given again" in shown and "no thread was scanned" not in shown
    # Given again by another name: the same file, said so.
    assert main(["report", str(records_file), f"{tmp_path}/./{records_file.name}", "-o",
                 str(out)]) == 0
    assert f"{tmp_path}/./{records_file.name} is given again" in capsys.readouterr().err


def test_the_page_names_inputs_left_out_or_not_read_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file left out (a compression not read), a gzip stream cut short, a document that
    breaks and a JSONL file whose last line is cut short are on the page's warnings, as the
    command says them on standard error (the page kept the scan's "warning:" lines alone: a
    page of a partial dataset looked whole while --fail-on-error failed the same inputs)."""
    folder = tmp_path / "runs"
    folder.mkdir()
    text = SAMPLE.read_text()
    data = gzip.compress(text.encode())
    (folder / "cut.jsonl.gz").write_bytes(data[:len(data) // 2])
    (folder / "late.jsonl.zst").write_bytes(b"(\xb5/\xfd")
    (folder / "doc.json").write_text(json.dumps([{"id": "a", "messages": []}] * 2)[:40])
    (folder / "part.jsonl").write_text("".join(text.splitlines(keepends=True)[:3])[:-20])
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(folder), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    shown = out.read_text().split("<h2>Warnings</h2>", 1)[1].split("</ul>", 1)[0]
    for name, said in (("late.jsonl.zst", "left out: compressed with zstd"),
                       ("cut.jsonl.gz", "gzip stream broken"),
                       ("doc.json", "the document is not read past there"),
                       ("part.jsonl", "ends inside its value: cut short")):
        path = str(folder / name)
        assert f"{path}: " in err and said in err, (name, err)
        assert f"<li>{html.escape(path)}: " in shown and html.escape(said) in shown, name


def test_names_and_ids_that_would_reorder_the_page_are_shown_as_escapes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file's name and a run's id holding a right-to-left override (or another control
    character) reach the page as the escapes the command writes on a terminal, in its
    title, heading, sources and runs' data: the raw character reversed the text after it."""
    folder = tmp_path / "evil\u202elnosj"
    folder.mkdir()
    line = SAMPLE.read_text().splitlines()[0]
    record = json.loads(line)
    record["id"] = "run-\u202e1-ko\x1b[31m"
    (folder / "a\u202eb.jsonl").write_text(json.dumps(record) + "\n")
    # A loop's excerpt too: escaped in the table of most repeated loops, it reached the
    # runs' table and detail raw (the reviewer's case).
    looped = tmp_path / "looped.jsonl"
    looped.write_text(json.dumps(_loop_record("x", "ls \u202e gpj.exe")) + "\n")
    out = tmp_path / "r.html"
    assert main(["report", str(folder), str(looped), "-o", str(out)]) == 0
    capsys.readouterr()
    page = out.read_text()
    assert "\u202e" not in page and "\x1b" not in page
    assert "evil\\u202elnosj" in page  # (in the title, heading and sources)
    data = json.loads(page.split('id="report-data">', 1)[1].split("</script>", 1)[0])
    assert data["runs"]["id"] == ["run-\\u202e1-ko\\x1b[31m", "x"]
    assert data["excerpts"][data["runs"]["excerpt"][1]] == "ls \\u202e gpj.exe"
    assert data["files"][0] == str(folder / "a\\u202eb.jsonl").replace("\u202e", "\\u202e")


def test_the_page_names_its_bad_lines(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The page names each error record (its file, line, run when it has an id, and why),
    the first 20 of them, the rest counted, escaped (it gave their count alone: whoever
    received the page could not find the runs that went unchecked)."""
    records_file = tmp_path / "records.jsonl"
    bad = [{"id": None, "file": "a<b>.jsonl", "line": 6, "error": "not valid JSON: x"},
           {"id": "t<7>", "file": "runs.json", "line": 2, "error": "not a thread"}]
    bad += [{"id": f"r{i}", "file": "many.jsonl", "line": i, "error": "e"} for i in range(25)]
    assert main(["scan", "-q", "-o", str(records_file), str(SAMPLE)]) == 0
    with records_file.open("a") as out:
        out.write("".join(json.dumps(record) + "\n" for record in bad))
    page_file = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(records_file), "-o", str(page_file)]) == 0
    page = page_file.read_text()
    shown = page.split("<h2>Bad lines</h2><ul>", 1)[1].split("</ul>", 1)[0]
    assert shown.startswith("<li>a&lt;b&gt;.jsonl, line 6: not valid JSON: x</li>"
                            "<li>runs.json, line 2 (t&lt;7&gt;): not a thread</li>")
    assert shown.count("<li>") == 21 and shown.endswith("<li>and 7 more</li>")
    assert "Bad lines" not in render_report(ReportData(), title="t")


def test_records_given_twice_or_with_options_of_runs_are_said(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Records given twice are counted twice, said as scan says a trajectory file given
    again; options of reading runs given with records alone are said to change nothing
    (both went without a word)."""
    expected = _scan_summary([SAMPLE], tmp_path)
    records_file = tmp_path / "records.jsonl"
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(records_file), str(records_file), "--format", "openai",
                 "--mask-volatile", "-o", str(out)]) == 0
    assert capsys.readouterr().err.splitlines()[:2] == [
        f"vthread report: warning: {records_file} is given again: its records are counted "
        "once for each time it is given",
        "vthread report: warning: --format, --mask-volatile apply to runs scanned, and "
        "every input holds a scan's records: read back as they are"]
    assert f'data-figure="threads" data-value="{2 * expected["threads"]}"' in out.read_text()
    assert main(["report", str(records_file), "-o", str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    # --jobs 0 (one job a CPU) is given too, though 0 (it went without a word).
    assert main(["report", str(records_file), "--jobs", "0", "-o", str(out)]) == 0
    assert "warning: --jobs applies to runs scanned" in capsys.readouterr().err


def test_bad_record_line_names_file_and_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A records file with a line that is no record: status 2, the file and line named."""
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(_loop_record("a", "x")) + "\n{not json\n")
    assert main(["report", str(records), "-o", str(tmp_path / "r.html")]) == 2
    assert f"vthread report: {records}:2: " in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(("first", "said"), [
    ({"verdict": "made_up_kind"}, "unknown verdict 'made_up_kind'"),
    ({"line": "3"}, "line is '3', not a count"),
    ({"line": 1.5}, "line is 1.5, not a count"),
])
def test_records_whose_first_line_is_damaged_are_read_as_records(
        first: dict[str, Any], said: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Records whose first line is shaped as one but is none (a verdict edited, a line
    number as text) and whose next line is one: read as records, the first line's fault
    named, status 2 (read as runs, each line was an error record and a page of no run was
    written, status 0). A first line holding messages is a run's, whatever follows."""
    records = tmp_path / "records.jsonl"
    damaged = _loop_record("a", "x") | first
    records.write_text(json.dumps(damaged) + "\n" + json.dumps(_loop_record("b", "y")) + "\n")
    assert main(["report", str(records), "-o", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err == f"vthread report: {records}:1: {said}\n"
    run = damaged | {"messages": [{"type": "user", "text": "hi"}]}
    records.write_text(json.dumps(run) + "\n" + json.dumps(_loop_record("b", "y")) + "\n")
    assert main(["report", str(records), "-o", str(tmp_path / "r.html")]) == 0


@pytest.mark.parametrize(("bad", "said"), [
    (b"[" * 5000 + b"]" * 5000, "nested too deeply to read"),
    (b'{"file": "a", "line": 2, "verdict": null, "id": ' + b"[" * 5000 + b"]" * 5000 + b"}",
     "nested too deeply to read"),
    (b'{"file": "a\xff", "line": 2, "verdict": null}', "not UTF-8 text: byte 12 of the line"),
    (b'{"file": "a", "line": 2, "verdict": null, "messages": ' + b"1" * 5000 + b"}",
     "a number of more than 4300 digits"),
    (b'{"file": "a", "line": true, "verdict": null}', "line is True, not a count"),
    (b'{"file": ["a"], "line": 2, "verdict": null}', "file is ['a'], not text"),
    (b'{"file": "a", "line": -1, "error": "x"}', "line is -1, not a count"),
])
@pytest.mark.parametrize("where", ["file", "stdin"])
def test_a_bad_records_line_is_named_in_a_persons_terms(
        bad: bytes, said: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A records line nested past what json reads was a RecursionError, exit 70; a byte that
    is no UTF-8 was named 49 lines early, its place counted from a read block's start; a
    number past Python's digit limit told a command-line user to call a Python function;
    a line or file of the wrong kind was counted (found by a tester). Each is status 2
    with its own line named, many lines in."""
    good = b"".join(json.dumps({**_loop_record(f"r{i}", "x"), "line": i}).encode() + b"\n"
                    for i in range(1, 5000))
    data = good + bad + b"\n" + good
    name = str(tmp_path / "records.jsonl")
    if where == "file":
        Path(name).write_bytes(data)
    else:
        name = "-"
        monkeypatch.setattr(sys, "stdin",
                            io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    assert main(["report", name, "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    label = "<stdin>" if name == "-" else name  # (as vthread scan names it)
    assert err.startswith(f"vthread report: {label}:5000: {said}"), err
    assert err.count("\n") == 1 and "Traceback" not in err and "sys." not in err


@pytest.mark.parametrize("tokens", ["1e400", "-1e400", "-5", '"12"', "true"])
def test_a_loop_tokens_figure_no_scan_writes_is_refused(
        tokens: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``"loop_tokens": 1e400`` (read as an infinity) was an OverflowError, exit 70 (found
    by a tester): now status 2 with the file and line named, as for any bad field."""
    records = tmp_path / "records.jsonl"
    line = json.dumps({**_loop_record("a", "x"), "loop_tokens": 0}).replace(
        '"loop_tokens": 0', f'"loop_tokens": {tokens}')
    records.write_text(json.dumps(_loop_record("b", "x")) + "\n" + line + "\n")
    assert main(["report", str(records), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"vthread report: {records}:2: loop_tokens is "), err
    assert "not a finite number >= 0" in err and "Traceback" not in err


def test_a_pipe_named_as_an_input_is_refused(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO (or ``<(cmd)``): the report came out empty or waited forever on a FIFO whose
    writer had gone (found by a tester). Now status 2 at once, no page written, and what
    to do said."""
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)  # never opened: a report that opened it would wait here forever
    out = tmp_path / "r.html"
    assert main(["report", str(fifo), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"vthread report: {fifo} is a pipe, not a file: ")
    assert "save it to a file first" in err and not out.exists()


def test_runs_on_standard_input_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``cat runs.jsonl | vthread report -``: standard input is read once, as runs."""
    runs = [[{"type": "bot", "text": "x"}] * 4, [{"type": "user", "text": "hi"}]]
    data = "".join(json.dumps(run) + "\n" for run in runs).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    out = tmp_path / "r.html"
    assert main(["report", "-", "-o", str(out)]) == 0
    assert "2 runs, 1 with a loop" in capsys.readouterr().err and out.exists()


class _Trickle(io.RawIOBase):
    """A pipe whose writer delivers a few bytes at a time."""

    def __init__(self, data: bytes, piece: int) -> None:
        super().__init__()
        self.data, self.piece = data, piece

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        count = min(len(target), self.piece, len(self.data))
        target[:count] = self.data[:count]
        self.data = self.data[count:]
        return count


@pytest.mark.parametrize("shape", ["plain", "gzipped", "trickled", "gzipped and trickled",
                                   "a record past 8 KiB", "no newline at the end",
                                   "an id past 256 KiB", "gzipped, an id past 256 KiB"])
def test_records_on_standard_input_are_read_back(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str],
                                                 shape: str) -> None:
    """``vthread scan ... | vthread report -``: the records are read back, as from a file,
    however they come (gzipped, a few bytes at a time, a first record longer than a read
    buffer, no newline after the last); they were read as runs, each an error record, and
    the report came out empty with status 0. Runs on standard input stay runs."""
    runs: list[Any] = [{"id": f"run{i}", "messages": [{"type": "bot", "text": "x"}] * 4}
                       if i % 2 else [{"type": "user", "text": "hi"}] for i in range(6)]
    if shape == "a record past 8 KiB":
        # (an error record naming a long key)
        runs[0] = {"k" * 9_000: [{"type": "user", "text": "hi"}]}
    if "an id past 256 KiB" in shape:
        # A record repeats its run's id whole: its first line outgrew what was looked at
        # (64 KiB of standard input, 256 KiB of a file), and the records were read as runs.
        runs[1] = {"id": "r" + "x" * 300_000, "messages": [{"type": "bot", "text": "x"}] * 4}
    source = tmp_path / "runs.jsonl"
    source.write_text("".join(json.dumps(run) + "\n" for run in runs))
    saved = tmp_path / "records.jsonl"
    assert main(["scan", str(source), "-q", "-o", str(saved)]) == 0
    if shape == "no newline at the end":  # one record, cut before its newline
        saved.write_bytes(saved.read_bytes().split(b"\n")[1])
    if "an id past 256 KiB" in shape:  # (the long record first)
        first, second, *rest = saved.read_bytes().split(b"\n")
        saved.write_bytes(b"\n".join([second, first, *rest]))
        if shape.startswith("gzipped"):
            saved = saved.with_suffix(".jsonl.gz")
            saved.write_bytes(gzip.compress(saved.with_suffix("").read_bytes()))
    from_file = tmp_path / "from_file.html"
    assert main(["report", str(saved), "-o", str(from_file)]) == 0
    told = capsys.readouterr().err
    for data, expected in ((saved.read_bytes(), told), (source.read_bytes(), None)):
        if "gzipped" in shape and not data.startswith(b"\x1f\x8b"):
            data = gzip.compress(data)
        raw: io.RawIOBase = (_Trickle(data, 7) if "trickled" in shape
                             else io.BytesIO(data))  # type: ignore[assignment]
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(raw)))
        piped = tmp_path / "piped.html"
        assert main(["report", "-", "-o", str(piped)]) == 0
        said = capsys.readouterr().err
        if expected is None:  # runs: scanned
            assert f", 3 with a loop{', 1 not read' * (shape == 'a record past 8 KiB')}" in said
            continue
        assert said == told.replace(str(saved), "<stdin>").replace(str(from_file), str(piped))
        assert {"no newline at the end": "1 run, 1 with a loop",
                "a record past 8 KiB": "5 runs, 3 with a loop, 1 not read"}.get(
            shape, "6 runs, 3 with a loop") in said
        page, whole = piped.read_bytes(), from_file.read_bytes()
        assert page.count(b"repeated_suffix") == whole.count(b"repeated_suffix") > 0


def test_standard_input_is_named_as_the_scan_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Records piped in are ``<stdin>`` in the page's title and in the warning that they
    hold no progressing run, as in the scan's records and the page's list of files (both
    said ``-``)."""
    records_file = tmp_path / "loops.jsonl"
    assert main(["scan", "-q", "--only-loops", "-o", str(records_file), str(SAMPLE)]) == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(
        records_file.read_bytes()))))
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", "-", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "vthread report: warning: <stdin> holds no progressing run" in err, err
    page = out.read_text()
    assert "<title>vthread report: &lt;stdin&gt;</title>" in page
    assert "- holds no progressing run" not in page


@pytest.mark.parametrize("shape", ["gzip members, the first empty", "a byte-order mark",
                                   "gzip cut short", "UTF-16", "junk after the gzip member"])
@pytest.mark.parametrize("where", ["file", "stdin"])
def test_records_are_told_alike_from_a_file_and_standard_input(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        shape: str, where: str) -> None:
    """Records sharded and joined by cat (an empty gzip member first, as --only-loops writes
    for a shard without loops), with a byte-order mark, or gzipped and cut short (a file
    still being written): read back as records, from a file and from standard input alike,
    the cut one up to its last whole line with a warning. Records in UTF-16, which the
    report reads as UTF-8 only, are runs both ways (a reviewer's findings: each way told
    some of these otherwise, or refused them)."""
    runs = [[{"type": "bot", "text": "x"}] * 4 if i % 2 else [{"type": "user", "text": "hi"}]
            for i in range(40)]
    source = tmp_path / "runs.jsonl"
    source.write_text("".join(json.dumps(run) + "\n" for run in runs))
    saved = tmp_path / "records.jsonl"
    assert main(["scan", str(source), "-q", "-o", str(saved)]) == 0
    text = saved.read_bytes()
    data = {"gzip members, the first empty": gzip.compress(b"") + gzip.compress(text),
            "a byte-order mark": b"\xef\xbb\xbf" + text,
            "gzip cut short": gzip.compress(text)[:-30],
            "UTF-16": text.decode().encode("utf-16"),
            "junk after the gzip member": gzip.compress(text) + b"garbage!"}[shape]
    name = "-"
    if where == "file":
        name = str(tmp_path / ("in.jsonl.gz" if "gzip" in shape else "in.jsonl"))
        Path(name).write_bytes(data)
    else:
        monkeypatch.setattr(sys, "stdin",
                            io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    capsys.readouterr()
    code = main(["report", name, "-o", str(tmp_path / "r.html")])
    said = capsys.readouterr().err
    # The page names its input as the records and messages do (standard input was "-").
    shown = "&lt;stdin&gt;" if where == "stdin" else html.escape(name)
    assert f'<p class="sources">{shown}</p>' in (tmp_path / "r.html").read_text()
    if shape == "UTF-16":
        assert code == 0 and "0 runs" in said and "40 not read" in said
        return
    assert code == 0 and ("40 runs, 20 with a loop" in said or shape == "gzip cut short"), said
    if shape == "junk after the gzip member":  # (read as vthread scan reads it: it was fatal)
        label = "<stdin>" if where == "stdin" else name
        assert (f"warning: {label}: gzip stream broken at byte {len(data) - 8:,} of the file: "
                "junk after the last gzip member: the records of its 40 whole lines") in said
    if shape == "gzip cut short":  # (its line cut there is a bad line, as a scan's is)
        told = zlib.decompressobj(wbits=31).decompress(data)
        whole, cut = told.count(b"\n"), not told.endswith(b"\n")
        label = "<stdin>" if where == "stdin" else name
        assert cut and f"{label}:{whole + 1}: gzip stream broken at byte " in said, said
        assert "the file ends in the middle of a gzip member (cut short)" in said
        assert ", 1 not read (error records)" in said
        rows = [json.loads(line) for line in told.splitlines()[:whole]]
        assert f"{whole} runs, {sum(r['verdict'] is not None for r in rows)} with a loop" in said


def test_standard_input_twice_is_a_usage_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``vthread report - -``: standard input is read once (it ended in an internal error,
    status 70, when it held records)."""
    assert main(["report", "-", "-", "-o", str(tmp_path / "r.html")]) == 2
    assert "- (standard input) is given more than once" in capsys.readouterr().err


def test_a_negative_jobs_value_is_named_as_such(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``-j -1e0`` is a value argparse took for an option ("expected one argument"): it is the
    jobs value, refused for what it is."""
    source = tmp_path / "runs.jsonl"
    source.write_text(json.dumps([{"type": "bot", "text": "x"}]) + "\n")
    assert main(["report", str(source), "-j", "-1e0", "-o", str(tmp_path / "r.html")]) == 2
    said = capsys.readouterr().err
    assert "-1e0" in said and "expected one argument" not in said
    # Checked by the report itself, even when it reads records only (it was passed on to
    # the scan, which a records file never reaches).
    records = tmp_path / "records.jsonl"
    assert main(["scan", str(source), "-q", "-o", str(records)]) == 0
    capsys.readouterr()
    assert main(["report", str(records), "-j", "-5", "-o", str(tmp_path / "r.html")]) == 2
    said = capsys.readouterr().err
    assert said.startswith("usage: vthread report") and "--jobs: expected a whole number" in said


@pytest.mark.parametrize(("case", "status"), [("missing input", 2), ("output is input", 2),
                                              ("no folder", 74), ("output is a folder", 74)])
def test_errors_are_messages_not_tracebacks(tmp_path: Path, case: str, status: int,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Bad input ends with status 2, an unwritable page with 74 (as vthread scan's), each
    with one clear line."""
    args = {"missing input": [str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "r.html")],
            "no folder": [str(SAMPLE), "-o", str(tmp_path / "no" / "r.html")],
            "output is a folder": [str(SAMPLE), "-o", str(tmp_path)],
            "output is input": [str(SAMPLE), "-o", str(SAMPLE)]}[case]
    assert main(["report", *args]) == status
    err = capsys.readouterr().err
    assert err.startswith("vthread report: ") and "Traceback" not in err


# ------------------------------------------------------------------------------- browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, Debian's build, driven by Playwright (no browser download)."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (pip install playwright)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


def _open(browser: Any, page_file: Path) -> tuple[Any, list[str], list[str]]:
    """The page opened with every request intercepted: (page, requests, dialogs)."""
    page = browser.new_page(viewport={"width": 1360, "height": 1000})
    requests: list[str] = []
    dialogs: list[str] = []

    def route(request_route: Any) -> None:
        requests.append(request_route.request.url)
        if request_route.request.url == page_file.as_uri():
            request_route.continue_()
        else:
            request_route.abort()

    page.route("**/*", route)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(page_file.as_uri())
    page.wait_for_selector("body[data-ready]")
    return page, requests, dialogs


def _rows(page: Any) -> list[str]:
    return [str(text) for text in page.locator("#runs tbody tr td:first-child").all_inner_texts()]


@needs_realdata
def test_real_runs_render_in_chromium(browser: Any, tmp_path: Path) -> None:
    """The real runs' page: headline = scan --summary, sort and filter work, no request
    leaves the page; takes the README's screenshot (written over with
    VTHREAD_UPDATE_SCREENSHOT=1)."""
    expected = _scan_summary(REAL_FILES, tmp_path)
    out = tmp_path / "report.html"
    assert main(["report", *map(str, REAL_FILES), "-o", str(out)]) == 0
    page, requests, dialogs = _open(browser, out)
    unpriced = expected["loops_without_tokens"] == expected["loops"]
    for key in _headline_keys():
        shown = page.get_attribute(f'[data-figure="{key}"]', "data-value")
        # No loop of these runs carries usage.tokens: the card shows n/a, not the summary's 0.
        want = None if key == "wasted_tokens" and unpriced else expected[key]
        assert json.loads(shown or "null") == want, key
    assert int(page.inner_text('[data-figure="loops"] .value')) == expected["loops"]

    before = _rows(page)
    assert len(before) == expected["loops"] >= 2
    page.click('#runs th[data-key="id"] button')
    ascending = _rows(page)
    page.click('#runs th[data-key="id"] button')
    assert ascending == sorted(before) and _rows(page) == ascending[::-1]

    page.fill("#filter", ascending[0].lower())
    assert _rows(page) == [ascending[0]]
    page.fill("#filter", "no run is called this")
    assert _rows(page) == []
    assert page.inner_text("#status") == "no looping run matches"
    page.fill("#filter", "")
    page.select_option("#kind-filter", "3")  # repeated_result_run
    assert len(_rows(page)) == expected["loops_by_heuristic"]["repeated_result_run"]
    page.select_option("#kind-filter", "0")

    page.locator("#runs tbody tr").first.click()
    assert page.locator("#detail .strip rect.l").count() > 0
    # The runs were read again for their messages' kinds: calls and results coloured.
    assert page.locator("#detail .strip rect.kc").count() > 0
    assert page.locator("#detail .strip rect.kr").count() > 0
    assert requests == [out.as_uri()] and not dialogs
    # A test run leaves the checkout as it was: the README's screenshot is written over only
    # when asked for (VTHREAD_UPDATE_SCREENSHOT=1), after a change to the page.
    shot = SCREENSHOT if os.environ.get("VTHREAD_UPDATE_SCREENSHOT") else tmp_path / "shot.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 0
    page.close()


def test_a_run_opens_from_the_keyboard_and_a_long_id_wraps(browser: Any,
                                                           tmp_path: Path) -> None:
    """A row takes the focus (Tab) and opens its details with Enter, and focus shows on it
    and on a sort button; an id of 20,000 characters without a break wraps in its cell and
    in the details' heading (the rows were mouse-only, focus showed nowhere, and such an id
    made the table 154,000 px wide: a tester's cases)."""
    long_id = "x" * 20_000
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"id": long_id, "messages": [{"type": "user", "text": "go"}]
                                + [{"type": "bot", "text": "again"}] * 5}) + "\n")
    out = tmp_path / "r.html"
    assert main(["report", str(runs), "-o", str(out)]) == 0
    page, requests, dialogs = _open(browser, out)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    page.focus('#runs th[data-key="id"] button')
    assert page.evaluate("getComputedStyle(document.activeElement, ':focus-visible')"
                         ".outlineStyle") != "none"
    page.focus("#runs tbody tr")
    assert page.evaluate("document.activeElement.tagName") == "TR"  # (it takes the focus)
    page.keyboard.press("Enter")
    assert page.locator("#detail h3").inner_text() == long_id
    assert page.evaluate("document.activeElement.tagName") == "TR"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    assert "(counted from 0" in page.locator("#detail p").inner_text()
    assert requests == [out.as_uri()] and not dialogs
    page.close()


def test_hostile_text_stays_text_in_chromium(browser: Any, tmp_path: Path) -> None:
    """The injection attempt shows as text: no image element, no dialog, no request."""
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in (
        _loop_record(HOSTILE, HOSTILE), _loop_record("plain", "ls()", line=2,
                                                      signature="01"))))
    out = tmp_path / "report.html"
    assert main(["report", str(records), "-o", str(out), "--title", HOSTILE]) == 0
    page, requests, dialogs = _open(browser, out)
    assert page.locator("img").count() == 0
    assert HOSTILE in _rows(page)
    assert HOSTILE in page.inner_text("#top-loops")
    assert requests == [out.as_uri()] and not dialogs
    page.close()


def test_runs_sort_by_their_numbers_as_a_person_counts(browser: Any, tmp_path: Path) -> None:
    """Ids with numbers in them sort as counted (run-2 before run-10), either way round;
    ids the collation holds equal ("run-07", "run-7") keep their text order, and the
    excerpts sort alike."""
    idents = ["run-10", "run-2", "run-1", "run-07", "run-7", "Run-3", "run-11"]
    records = tmp_path / "records.jsonl"
    records.write_text("".join(
        json.dumps(_loop_record(ident, f"call({ident})", line=line, loop_tokens=float(line),
                                signature=f"{line:016x}")) + "\n"
        for line, ident in enumerate(idents, 1)))
    out = tmp_path / "report.html"
    assert main(["report", str(records), "-o", str(out)]) == 0
    page, _, _ = _open(browser, out)
    page.click('#runs th[data-key="id"] button')
    counted = ["run-1", "run-2", "Run-3", "run-07", "run-7", "run-10", "run-11"]
    assert _rows(page) == counted
    page.click('#runs th[data-key="id"] button')
    assert _rows(page) == counted[::-1]
    page.click('#runs th[data-key="excerpt"] button')
    excerpts = page.locator("#runs tbody tr td.excerpt").all_inner_texts()
    assert excerpts == [f"call({ident})" for ident in counted], excerpts
    page.close()


def test_a_loop_found_anywhere_is_drawn_over_its_own_messages(browser: Any,
                                                              tmp_path: Path) -> None:
    """A record of ``--anywhere`` (its costliest loop one message of 88, at message 20) is
    drawn over that message alone, a default scan's loop to its run's end (every loop was
    drawn to the end: 68 messages for one; a tester's case)."""
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps(_loop_record("anywhere", "a", loop_start=20, loop_messages=1,
                                               messages=88, loop_tokens=9.0)) + "\n" +
                       json.dumps(_loop_record("default", "b", line=2, loop_tokens=1.0,
                                               signature="01")) + "\n")
    out = tmp_path / "report.html"
    assert main(["report", str(records), "-o", str(out)]) == 0
    page, _, _ = _open(browser, out)
    drawn = []
    for row in range(2):
        page.locator("#runs tbody tr").nth(row).click()
        drawn.append(page.locator("#detail .strip rect.l").count())
    assert _rows(page) == ["anywhere", "default"] and drawn == [1, 6]
    title = page.locator("#detail .strip title").text_content()
    assert title == "10 messages; loop from message 4"
    page.locator("#runs tbody tr").first.click()
    title = page.locator("#detail .strip title").text_content()
    assert title == "88 messages; loop from message 20 to 20"
    page.close()


def test_many_runs_render_one_page_at_a_time(browser: Any, tmp_path: Path) -> None:
    """20,000 looping runs: 50 rows in the DOM, paging walks on and jumps to the first and
    the last page, a sort reaches every row."""
    records = tmp_path / "records.jsonl"
    with records.open("w") as out:
        for index in range(20_000):
            out.write(json.dumps(_loop_record(f"run-{index:05d}", f"call({index % 300})",
                                              line=index + 1, loop_tokens=float(index),
                                              signature=f"{index % 300:016x}")) + "\n")
    out_page = tmp_path / "report.html"
    assert main(["report", str(records), "-o", str(out_page)]) == 0
    assert out_page.stat().st_size < 2_000_000
    page, requests, _ = _open(browser, out_page)
    assert _rows(page)[:2] == ["run-19999", "run-19998"]  # most tokens first
    assert page.locator("#runs tbody tr").count() == 50
    assert page.is_disabled("#first") and page.is_disabled("#prev")
    page.click("#next")
    assert _rows(page)[0] == "run-19949"
    page.click("#last")
    assert _rows(page)[-1] == "run-00000" and page.locator("#runs tbody tr").count() == 50
    assert page.inner_text("#status") == "runs 19,951\u201320,000 of 20,000"
    assert page.is_disabled("#last") and page.is_disabled("#next")
    page.fill("#filter", "run-0000")  # 10 rows: one page, the last the first
    assert page.inner_text("#status") == "runs 1\u201310 of 10 (filtered from 20,000)"
    assert page.is_disabled("#last") and page.is_disabled("#first")
    page.fill("#filter", "")
    page.click("#last")
    page.click("#first")
    assert _rows(page)[0] == "run-19999"
    page.click('#runs th[data-key="tokens"] button')  # ascending now
    assert _rows(page)[0] == "run-00000"
    assert page.inner_text("#status") == "runs 1\u201350 of 20,000"
    assert requests == [out_page.as_uri()]
    page.close()


def test_parquet_records_are_read_back(tmp_path: Path) -> None:
    """``vthread scan -o X.parquet``'s output makes the same figures as its JSONL."""
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (vthread[arrow])")
    expected = _scan_summary([SAMPLE], tmp_path)
    records = tmp_path / "records.parquet"
    assert main(["scan", "-q", "-o", str(records), str(SAMPLE)]) == 0
    out = tmp_path / "r.html"
    assert main(["report", str(records), "-o", str(out)]) == 0
    page = out.read_text()
    for key in ("threads", "loops", "wasted_messages", "wasted_tokens"):
        assert f'data-figure="{key}" data-value="{json.dumps(expected[key])}"' in page, key


def test_the_scan_s_messages_are_said_as_they_come(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What the scan says reaches standard error as the report's while the scan goes on
    (it was held to the scan's end: lost when a long scan was killed), a message written
    in pieces said once whole."""
    from vthread import cli

    real = cli.main
    heard: list[str] = []

    def scan_saying(argv: list[str]) -> int:
        sys.stderr.write("vthread scan: warning: first ")
        sys.stderr.write("half\nvthread scan: second")
        heard.append(capsys.readouterr().err)  # (while the scan runs)
        return real(argv)

    monkeypatch.setattr(cli, "main", scan_saying)
    assert main(["report", str(SAMPLE), "-o", str(tmp_path / "r.html")]) == 0
    assert heard == ["vthread report: warning: first half\n"]
    said = capsys.readouterr().err
    assert said.startswith("vthread report: second\n") and said.count("second") == 1


def test_parquet_records_pyarrow_cannot_read_are_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A records file pyarrow refuses with an error of its own that is no OSError or
    ValueError (ArrowNotImplementedError, a NotImplementedError) is said, naming the file,
    with 2, as the scan says it of a runs file (it was an internal error, 70)."""
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (vthread[arrow])")
    import pyarrow.parquet as parquet

    records = tmp_path / "records.parquet"
    assert main(["scan", "-q", "-o", str(records), str(SAMPLE)]) == 0

    def refused(*args: object, **kwargs: object) -> Any:
        raise pa.ArrowNotImplementedError("a type not read")

    monkeypatch.setattr(parquet.ParquetFile, "iter_batches", refused)
    capsys.readouterr()
    assert main(["report", str(records), "-o", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err == (
        f"vthread report: {records}: cannot read: a type not read\n")


def test_only_loops_records_draw_a_warning(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Records without a progressing run (``--only-loops``) are reported, with a warning."""
    records = tmp_path / "loops.jsonl"
    assert main(["scan", "-q", "--only-loops", "-o", str(records), str(SAMPLE)]) == 0
    assert main(["report", str(records), "-o", str(tmp_path / "r.html")]) == 0
    assert ("holds no progressing run (written with --only-loops, or every run loops)"
            in capsys.readouterr().err)
    # Records of error lines alone say what the scan of their runs said, not that they were
    # written with --only-loops (they were not: a tester's case).
    runs = tmp_path / "bad.jsonl"
    runs.write_text("not json\n{}\n")
    errors = tmp_path / "errors.jsonl"
    assert main(["scan", "-q", "-o", str(errors), str(runs)]) == 0
    capsys.readouterr()
    assert main(["report", str(errors), "-o", str(tmp_path / "r.html")]) == 0
    assert capsys.readouterr().err.splitlines()[0] == (
        f"vthread report: warning: {errors}: no thread was scanned: its 2 records are errors")


def test_the_report_line_counts_one_run_and_the_runs_not_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """"1 run", not "1 runs"; runs that are error records are counted apart, not dropped
    from the line silently."""
    runs = tmp_path / "runs.json"
    runs.write_text('[{"messages": null}, {"messages": [{"type": "user", "text": "hi"}]}]')
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(runs), "-o", str(out)]) == 0
    assert capsys.readouterr().err == ("vthread report: 1 run, 0 with a loop, 1 not read "
                                       f"(error records): wrote {out}\n")


def test_dash_writes_the_page_to_standard_output(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o -`` writes the page to standard output, as ``vthread scan -o -`` does its
    records (it wrote a file named ``-``), and the same page as ``-o FILE``."""
    from tests.test_cli import run

    monkeypatch.chdir(tmp_path)
    code, out, err = run(["report", str(SAMPLE), "-o", "-", "--title", "t"], monkeypatch)
    assert code == 0 and err.endswith(": wrote standard output\n")
    assert not (tmp_path / "-").exists()
    code, _, _ = run(["report", str(SAMPLE), "-o", "page.html", "--title", "t"], monkeypatch)
    assert code == 0 and out == (tmp_path / "page.html").read_bytes()
    assert out.startswith(b"<!DOCTYPE html>")


@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_reader_of_the_page_that_goes_away_ends_the_report_quietly(
        tmp_path: Path, unbuffered: str) -> None:
    """``-o -`` into a reader that takes a few bytes and goes away, the page larger than a
    pipe holds: status 141 and nothing said, buffered or not (unbuffered, one write call
    took what the pipe held and the report said it wrote the page, status 0)."""
    import subprocess

    looping = [{"type": "user", "text": "x" * 300}] + [{"type": "bot", "text": "a" * 300}] * 4
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps([{"type": "user", "text": f"{index}"}, *looping]) + "\n"
                            for index in range(3000)))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    env["PYTHONUNBUFFERED"] = unbuffered
    report = subprocess.Popen([sys.executable, "-m", "vthread", "report", str(runs), "-o", "-"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert report.stdout is not None and report.stderr is not None
    assert report.stdout.read(10) == b"<!DOCTYPE "
    report.stdout.close()
    said = report.stderr.read()
    assert (report.wait(timeout=120), said) == (141, b"")


def test_a_long_records_line_is_told_with_the_lines_after_it(tmp_path: Path) -> None:
    """Past a first line longer than what was looked at (256 KiB), the lines after it are
    looked at too: a records line followed by runs is no records file, to be passed over
    or written over by a directory scan (a reviewer's finding: the runs after it were
    never looked at); a long records line alone, even with no newline, is records; a
    first line past 8 MiB is taken for a run's (a JSON document's), read no further."""
    from vthread._cli_report import holds_records

    record = json.dumps({**_loop_record("a" * 300_000, "x"), "verdict": None})
    run = json.dumps({"id": "r1", "messages": [{"role": "user", "content": "hi"}]})
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(f"{record}\n{run}\n{run}\n")
    assert holds_records(str(mixed)) and not holds_records(str(mixed), throughout=True)
    alone = tmp_path / "alone.jsonl"
    alone.write_text(record)
    assert holds_records(str(alone)) and holds_records(str(alone), throughout=True)
    document = tmp_path / "document.json"
    document.write_text(json.dumps([json.loads(run)] * 300_000))  # (about 17 MB, one line)
    assert not holds_records(str(document), throughout=True)


def test_a_byte_order_mark_counts_only_where_the_reader_passes_it_over(
        tmp_path: Path) -> None:
    """The records reader passes a byte-order mark over only at the stream's start, so the
    sniff does too: a mark opening a later line makes that line no record (the reader
    stops there), and the file no records file to be passed over or written over."""
    from vthread._cli_report import holds_records

    lines = [json.dumps({**_loop_record(name, "x"), "verdict": None}).encode()
             for name in "abc"]
    opened = tmp_path / "opened.jsonl"
    opened.write_bytes(codecs.BOM_UTF8 + b"\n".join(lines) + b"\n")
    assert holds_records(str(opened), throughout=True)
    inside = tmp_path / "inside.jsonl"
    inside.write_bytes(b"\n".join([lines[0], codecs.BOM_UTF8 + lines[1], lines[2]]) + b"\n")
    assert holds_records(str(inside)) and not holds_records(str(inside), throughout=True)


def test_the_default_title_names_the_inputs(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's default title names its inputs as given, a folder by its name (it was
    "2 files" for a file and a folder of many), and the first with a count of the rest
    when the names would make a long title."""
    runs = tmp_path / "runs.jsonl"
    shutil.copy(SAMPLE, runs)
    folder = tmp_path / "more"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        shutil.copy(SAMPLE, folder / name)
    out = tmp_path / "r.html"

    def title(inputs: list[str]) -> str:
        assert main(["report", *inputs, "-o", str(out)]) == 0
        found = re.search(r"<title>(.*?)</title>", out.read_text())
        assert found is not None
        return found.group(1)

    assert title([str(runs)]) == f"vthread report: {runs}"
    monkeypatch.chdir(tmp_path)
    assert title(["runs.jsonl", "more"]) == "vthread report: runs.jsonl, more"
    many = [str(runs), *(str(folder / f"{n}.jsonl") for n in "abc")]
    assert title(many) == f"vthread report: {runs} and 3 more inputs"


_RECORD_FIELDS = st.fixed_dictionaries(
    {"file": st.text(max_size=4), "line": st.integers(0, 9)},
    optional={"id": st.one_of(st.text(max_size=3), st.integers()), "verdict": st.none(),
              "error": st.text(max_size=3), "messages": st.integers(0, 9)})


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(_RECORD_FIELDS, st.booleans(), st.booleans())
def test_the_screen_for_records_refuses_no_record(value: dict[str, Any], escaped: bool,
                                                  spaced: bool) -> None:
    """A line the screen says cannot be a record is none when parsed, whatever the keys'
    writing: ASCII-escaped (a \\u escape may write a key's letter), spaced or plain."""
    from vthread._cli_report import _line_is_record, _may_be_record

    text = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":"))
    if escaped:  # every key's first letter written as an escape, as a JSON writer may
        for key in value:
            text = text.replace(f'"{key}"', f'"\\u{ord(key[0]):04x}{key[1:]}"', 1)
    line = text.encode()
    assert _may_be_record(line) or _line_is_record(line) is not True
    for key in (b'"file"', b'"line"'):  # either key missing: no record
        assert not _may_be_record(line.replace(key, b'"name"')) or b"\\u" in line


@hypothesis.settings(max_examples=500, deadline=None)
@hypothesis.given(st.lists(st.sampled_from([b"\n", b" ", b"\r", b"\t", b"a", b"{}"]),
                           max_size=12).map(b"".join), st.booleans())
def test_the_first_line_with_text_is_the_split_heads(text: bytes, ended: bool) -> None:
    """The first line with text of a stream's head, found a line at a time, is the one its
    split into lines gives (a last line without its newline only when the stream ended)."""
    from vthread._cli_report import _first_line_with_text

    lines = text.split(b"\n")
    expected = next((line for line in (lines if ended else lines[:-1]) if line.strip()), b"")
    assert _first_line_with_text(text, ended) == expected


_HEAD_LINES = st.sampled_from([
    json.dumps({**_loop_record("r", "x"), "verdict": None}).encode(),  # a record
    json.dumps(_loop_record("r" * 70_000, "x")).encode(),  # one longer than the first read
    json.dumps({"id": "r", "messages": [{"role": "user", "content": "hi"}]}).encode(),  # a run
    json.dumps({"id": "r", "messages": [{"role": "user", "content": "h" * 70_000}]}).encode(),
    b'{"\\u0066ile": "runs.jsonl", "line": 1, "verdict": null}',  # a record, a key escaped
    b'{"file": "runs.jsonl", "line": 1}',  # both keys, no record
    json.dumps({**_loop_record("r", "x"), "verdict": None}).encode() + b"\r",  # CRLF
    json.dumps({**_loop_record("r", "x"), "verdict": None}).encode("utf-16"),
    # runs ending on either side of the first reads' ends (16 and 64 KiB)
    *(b'{"id": "r", "messages": [], "pad": "%s"}' % (b"p" * (end - 37 + shift))
      for end in (16_384, 65_536) for shift in (-2, -1, 0, 1)),
    b"", b"  ", b"\r", b"not json"])


@hypothesis.settings(max_examples=150, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(st.lists(_HEAD_LINES, min_size=0, max_size=5), st.booleans(), st.booleans(),
                  st.sampled_from(["plain", "gzip", "gzip cut", "gzip broken"]),
                  st.floats(0.05, 0.95), st.booleans())
@hypothesis.example([b"", json.dumps({**_loop_record("r", "x"), "verdict": None}).encode()],
                    True, True, "plain", 0.5, False)  # a mark, a blank line, then a record
def test_a_files_first_read_tells_records_as_its_whole_head_does(
        lines: list[bytes], bom: bool, ended_by_newline: bool, packing: str, cut: float,
        throughout: bool) -> None:
    """:func:`holds_records` passes a file over after a small read when its first line,
    whole in it, cannot be a record: the answer is always the one its whole head gives,
    for first lines shorter and longer than that read, a byte-order mark, and gzip files
    whole, cut short or broken part-way."""
    import tempfile

    from vthread._cli_report import _head_holds_records, holds_records

    data = (codecs.BOM_UTF8 if bom else b"") + b"\n".join(lines)
    data += b"\n" if ended_by_newline and lines else b""
    if packing != "plain":
        data = gzip.compress(data) + gzip.compress(data)  # two members, as shards joined
        at = max(1, int(len(data) * cut))
        if packing == "gzip cut":
            data = data[:at]
        elif packing == "gzip broken":
            data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:] if at < len(data) \
                else data
    with tempfile.TemporaryDirectory() as folder:
        name = os.path.join(folder, "runs.jsonl.gz" if packing != "plain" else "runs.jsonl")
        Path(name).write_bytes(data)
        assert holds_records(name, throughout=throughout) == _head_holds_records(
            name, throughout)


def test_a_file_of_runs_is_told_by_its_first_read_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose first line is a run's, whole in its first reads (16 KiB, then 64 KiB),
    is no records file without the whole head being read; one whose first line is a record,
    or longer than those reads, is read whole."""
    from vthread import _cli_report

    read_whole: list[str] = []
    whole = _cli_report._head_holds_records

    def spied(name: str, throughout: bool) -> bool:
        read_whole.append(Path(name).name)
        return whole(name, throughout)

    monkeypatch.setattr(_cli_report, "_head_holds_records", spied)
    run = json.dumps({"id": "r", "messages": [{"role": "user", "content": "hi"}]})
    record = json.dumps({**_loop_record("r", "x"), "verdict": None})
    wide = json.dumps({"messages": [], "x": "y" * 30_000})  # past the first read, not the second
    for name, text in (("runs.jsonl", f"{run}\n" * 3), ("records.jsonl", f"{record}\n"),
                       ("wide.jsonl", f"{wide}\n{run}\n"),
                       ("long.jsonl", json.dumps({"messages": [], "x": "y" * 70_000}))):
        (tmp_path / name).write_text(text)
        gzip_path = tmp_path / f"{name}.gz"
        gzip_path.write_bytes(gzip.compress(text.encode()))
    answers = {name: _cli_report.holds_records(str(tmp_path / name), throughout=True)
               for name in ("runs.jsonl", "runs.jsonl.gz", "records.jsonl", "records.jsonl.gz",
                            "wide.jsonl", "wide.jsonl.gz", "long.jsonl", "long.jsonl.gz")}
    assert answers == {"runs.jsonl": False, "runs.jsonl.gz": False, "records.jsonl": True,
                       "records.jsonl.gz": True, "wide.jsonl": False, "wide.jsonl.gz": False,
                       "long.jsonl": False, "long.jsonl.gz": False}
    assert read_whole == ["records.jsonl", "records.jsonl.gz", "long.jsonl", "long.jsonl.gz"]


@hypothesis.settings(max_examples=500, deadline=None)
@hypothesis.given(st.lists(st.sampled_from([b'"file"', b'"line"', b"\\u", b"\\", b"u", b'"',
                                            b"file", b"line", b"x", b"\\\\u", b"\xe9"]),
                           max_size=12).map(b"".join))
def test_the_cores_search_for_a_record_is_pythons(line: bytes) -> None:
    """The core's screen of a line for a record (memchr's searches) is Python's."""
    from vthread._cli_report import _may_be_record, _may_be_record_plainly

    assert _may_be_record(line) == _may_be_record_plainly(line)


_WHOLE_FILE_LINES = st.one_of(
    st.builds(lambda size: json.dumps({**_loop_record("r" * size, "x"), "verdict": None}),
              st.sampled_from([1, 40_000, 150_000])),
    st.just(json.dumps({"id": "r", "messages": [{"role": "user", "content": "hi"}]})),
    # records orjson reads otherwise than json, or not at all: json decides
    st.sampled_from(['{"id": "\\ud800", "file": "a", "line": 1, "verdict": null}',
                     '{"id": NaN, "file": "a", "line": 1, "verdict": null}',
                     '{"file": "a", "line": 123456789012345678901234, "verdict": null}',
                     '{"file": "a", "line": 1, "error": "x", "messages": 1e400}']),
    st.sampled_from(["", "  ", "not json", '{"file": "a"'])).map(str.encode)


@hypothesis.settings(max_examples=60, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(st.lists(_WHOLE_FILE_LINES, min_size=1, max_size=12), st.booleans(),
                  st.booleans(), st.sampled_from(["plain", "gzip", "gzip members"]))
@hypothesis.example([b"", json.dumps({**_loop_record("r" * 150_000, "x"), "verdict": None})
                     .encode()], True, False, "plain")  # a mark alone on the first line
def test_a_file_passed_over_as_records_holds_them_on_every_line(
        lines: list[bytes], bom: bool, ended_by_newline: bool, packing: str) -> None:
    """:func:`holds_records` ``throughout`` (a directory scan passes such a file over, and
    ``-o`` may write over it) answers as every line of the whole file read at once does,
    for files far longer than the head it first looks at: a run anywhere makes the file
    runs. The twin decompresses the whole file and looks at each of its lines."""
    import tempfile

    from vthread._cli_report import _first_line_is_record, _lines_are_records, holds_records

    data = (codecs.BOM_UTF8 if bom else b"") + b"\n".join(lines)
    data += b"\n" if ended_by_newline else b""
    packed = packing != "plain"
    written = data if not packed else gzip.compress(data) if packing == "gzip" else (
        gzip.compress(data[:len(data) // 2]) + gzip.compress(data[len(data) // 2:]))
    with tempfile.TemporaryDirectory() as folder:
        name = os.path.join(folder, "runs.jsonl.gz" if packed else "runs.jsonl")
        Path(name).write_bytes(written)
        text = data.removeprefix(codecs.BOM_UTF8)
        # (a gzip file's text may have been cut short: its one line is whole by its newline)
        want = _first_line_is_record(text, not packed) and _lines_are_records(data)
        assert holds_records(name, throughout=True) == want


def test_the_reports_second_reading_says_nothing_and_waits_for_no_fifo(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``vthread report`` reads its inputs a second time for the looping runs' timelines:
    that reading says nothing (it said the scan's messages again, as "vthread scan:"), and
    a file replaced by a FIFO since the scan leaves the timelines plain instead of waiting
    for a writer for ever (found by a tester)."""

    from vthread import _cli_report, cli

    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "sample.jsonl")
    runs = json.dumps([{"id": "r", "messages": [{"type": "bot", "text": "x" * 40}] * 4}])
    (folder / "cut.json").write_text(runs[:-30])  # a document cut short: said by the scan
    out = tmp_path / "r.html"
    capsys.readouterr()
    assert main(["report", str(folder), "-o", str(out)]) == 0
    said = capsys.readouterr().err
    assert "vthread scan:" not in said and said.count("not read past there") == 1, said
    assert any(json.loads(out.read_text().split('id="report-data">', 1)[1].split(
        "</script>", 1)[0])["runs"]["kinds"])
    real = cli._tasks

    def after_the_scan(*args: Any, **keywords: Any) -> Any:
        (folder / "sample.jsonl").unlink()
        os.mkfifo(folder / "sample.jsonl")
        return real(*args, **keywords)

    monkeypatch.setattr(_cli_report, "_read_message_kinds", _cli_report._read_message_kinds)
    reading = _cli_report._read_message_kinds

    def replaced_first(*args: Any) -> None:
        monkeypatch.setattr(cli, "_tasks", after_the_scan)
        reading(*args)

    monkeypatch.setattr(_cli_report, "_read_message_kinds", replaced_first)

    with ends_within(30, "a FIFO's writer"):  # (a regression would hang the run)
        assert main(["report", str(folder), "-o", str(out)]) == 0
    assert not any(json.loads(out.read_text().split('id="report-data">', 1)[1].split(
        "</script>", 1)[0])["runs"]["kinds"])


@pytest.mark.parametrize("when", ["reading the records", "writing the page"])
def test_sigterm_after_the_scan_ends_the_report_saying_so_and_leaves_nothing(
        when: str, tmp_path: Path) -> None:
    """SIGTERM once the scan is done (its records being read back from the temporary
    folder, or the page being written): status 143, "terminated" said, the temporary
    folder gone and the page that was there before as it was. SIGTERM killed the process
    there, saying nothing and leaving the folder, a copy of every record, behind (a
    tester's 12 MB each under timeout); while the page is written it waits for the page."""
    import subprocess

    runs = tmp_path / "runs.jsonl"
    loop = [{"type": "user", "text": "hi"}, {"type": "bot", "text": "yo"}] * 3
    runs.write_text("".join(json.dumps({"id": f"r{i}", "messages": loop}) + "\n"
                            for i in range(5)))
    page = tmp_path / "page.html"
    earlier = "<!DOCTYPE html>\n<p>the page before</p>"  # (an earlier run's, written over)
    page.write_text(earlier)
    folder = tmp_path / "tmp"
    folder.mkdir()
    code = f"""
import os, signal, sys
from vthread import _cli_report, report
target, name = ((report.ReportData, "add") if {when!r} == "reading the records"
                else (_cli_report, "_write_page"))
original = getattr(target, name)
def then_terminated(*arguments, **keywords):
    os.kill(os.getpid(), signal.SIGTERM)
    return original(*arguments, **keywords)
setattr(target, name, then_terminated)
from vthread._cli_main import main
sys.exit(main(["report", sys.argv[1], "-o", sys.argv[2]]))
"""
    done = subprocess.run([sys.executable, "-c", code, str(runs), str(page)],
                          capture_output=True, timeout=120, check=False,
                          env={**os.environ, "TMPDIR": str(folder)})
    assert done.returncode == 143, done.stderr.decode()[-2000:]
    assert done.stderr.decode().endswith("vthread report: terminated\n")
    if when == "reading the records":
        assert page.read_text() == earlier
    else:  # (the page is written whole first)
        assert page.read_text().rstrip().endswith("</html>")
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("counts", [[9_013, 2_000, 1, 0], [1_234_567, 5, 999_999, 12]])
def test_the_kind_charts_labels_fit_within_it(counts: list[int]) -> None:
    """Each count's label ends inside the chart at 8 px a character, the most a character
    of its 12 px text takes (with a fixed room, "9,013 74.8%" of a tester's 12,000 loops ran
    past the edge, its "%" cut off)."""

    class Counted(ReportData):  # (the loops' own columns are not what is drawn here)
        @property
        def loops(self) -> int:
            return sum(self.by_kind)

    data = Counted()
    data.by_kind = list(counts)
    page = render_report(data, title="t", sources=["x"])
    assert "%</text>" in page
    chart = page.split('aria-label="loops by kind">', 1)[1].split("</svg>", 1)[0]
    width = int(page.split('aria-label="loops by kind"', 1)[0].rsplit('viewBox="0 0 ', 1)[1]
                .split(" ", 1)[0])
    labels = re.findall(r'<text x="([\d.]+)" y="[\d.]+">([^<]*)</text>', chart)
    assert [label.split(" ")[0] for _, label in labels] == [f"{n:,}" for n in counts]
    for x, label in labels:
        assert float(x) + 8 * len(label) <= width, label


def test_sigterm_ends_a_report_stuck_writing_to_a_stalled_reader(tmp_path: Path) -> None:
    """A page written to standard output whose reader never reads (the pipe full): SIGTERM
    ends the report with 143 at once. Held until the page was written, as a file's page is,
    the write waited on the reader for ever and SIGTERM could not end it (a reviewer's
    case)."""
    import signal
    import subprocess
    import time

    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(_loop_record(f"run-{index}", f"call({index})",
                                                       line=index + 1)) + "\n"
                               for index in range(5_000)))
    process = subprocess.Popen([sys.executable, "-m", "vthread", "report", str(records),
                                "-o", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(3)  # (read, rendered, and stuck on the full pipe: nothing reads it)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)  # (its stdout never read; its stderr is a line or two)
    finally:
        process.kill()
    assert process.stderr is not None
    said = process.stderr.read()
    assert process.returncode == 143, said.decode()[-2000:]
    assert said.decode().endswith("vthread report: terminated\n")
