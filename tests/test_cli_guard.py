"""``vthread guard``: a live pass-through that stops a looping stream."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vthread._cli_guard import EXIT_TRIPPED, run_guard
from vthread.replay import scan_texts

ROOT = Path(__file__).resolve().parent.parent
COMMAND = [sys.executable, "-m", "vthread._cli_guard"]
HEALTHY = "Plain healthy prose, with été and 🎉 and new lines.\nNothing repeats here at all.\n"
LOOP = "Let me check the file again. " * 12


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def run(data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*COMMAND, *args], input=data, capture_output=True, env=env(),
                          timeout=60, check=False)


def test_healthy_stream_passes_through_unchanged() -> None:
    """Every byte is copied; exit 0; nothing on stderr."""
    data = (HEALTHY + " ".join(f"mot{i}é\n" if i % 9 == 0 else f"w{i}🎉" for i in range(5000))
            ).encode()
    result = run(data)
    assert (result.returncode, result.stdout, result.stderr) == (0, data, b"")


def test_loop_stops_after_the_tripping_word() -> None:
    """Exit 3, output cut just past the tripping word, the reason as one JSON line."""
    text = HEALTHY + LOOP
    result = run(text.encode())
    assert result.returncode == EXIT_TRIPPED
    (trip,) = scan_texts([text])
    assert trip is not None
    assert result.stdout == text[: trip.offset].encode()
    (line,) = result.stderr.decode().splitlines()
    report = json.loads(line)
    assert report == {"tripped": True, **trip.reason.to_dict(), "offset_chars": trip.offset}
    assert report["phrase"] == "again let me check"


def test_bytes_that_are_no_utf8_are_replacement_characters_in_the_reason() -> None:
    """Input that is no UTF-8 trips as the guard reads it (each bad byte a lone surrogate),
    and the reason on stderr shows each as U+FFFD: strict UTF-8 JSON any reader takes (its
    text held escapes of lone surrogates that Python alone decodes, and no UTF-8 writer
    could write)."""
    unit = b"I \xff\xfe will \xe4\xb8\x80\xe4\xb8 try again now \xf0\x9f\x99\x82 "
    data = b"start " + unit * 20
    result = run(data)
    assert result.returncode == EXIT_TRIPPED
    (line,) = result.stderr.decode("utf-8").splitlines()
    assert "\\ud" not in line.lower()
    report = json.loads(line)
    report["text"].encode("utf-8")  # no lone surrogate left
    assert "\ufffd" in report["text"]
    (trip,) = scan_texts([data.decode("utf-8", "surrogateescape")])
    assert trip is not None and report["offset_chars"] == trip.offset
    assert report["count"] == trip.reason.count


def test_options_are_passed_to_the_guard() -> None:
    """--max-repeats and friends change when it trips; --min-chars can postpone it."""
    text = LOOP * 2
    early = run(text.encode(), "--ngram", "2", "--max-repeats", "2")
    late = run(text.encode(), "--max-repeats", "9", "--window", "80")
    never = run(text.encode(), "--min-chars", "100000")
    assert early.returncode == late.returncode == EXIT_TRIPPED
    assert len(early.stdout) < len(late.stdout)
    (trip,) = scan_texts([text], ngram=2, max_repeats=2)
    assert trip is not None and json.loads(early.stderr)["count"] == trip.reason.count
    assert (never.returncode, never.stdout) == (0, text.encode())
    ratio = run(text.encode(), "--max-unique-ratio", "0.05")
    assert ratio.returncode == 0
    # Not a finite number: the default, as the library's option (it refused NaN and took
    # inf), the same trip as with no option.
    default = run(text.encode(), "--ngram", "2", "--max-repeats", "2")
    for unset in ("nan", "inf", "-inf"):
        result = run(text.encode(), "--ngram", "2", "--max-repeats", "2",
                     f"--max-unique-ratio={unset}")
        assert (result.returncode, result.stdout, result.stderr) == (
            default.returncode, default.stdout, default.stderr)


def test_count_options_take_any_number_as_the_library_does() -> None:
    """A fraction rounds down and a value that is no finite number means the default, for
    the counts as for the ratio (they were refused as not whole numbers): each gives the
    library's Guard with the same option."""
    text = HEALTHY + LOOP
    for option, value in (("--ngram", "2.5"), ("--window", "6e1"), ("--ngram", "nan"),
                          ("--max-repeats", "inf"), ("--min-chars", "-inf"),
                          ("--max-repeats", "2.9"), ("--ngram", "-inf"),
                          ("--max-unique-ratio", "-1e3")):
        keyword = option[2:].replace("-", "_")
        (trip,) = scan_texts([text], **{keyword: float(value)})
        # Joined, and as a word of its own (a minus-led one was "expected one argument").
        for words in ([f"{option}={value}"], [option, value]):
            result = run(text.encode(), *words)
            assert result.returncode == (EXIT_TRIPPED if trip else 0), (words, result.stderr)
            if trip is not None:
                assert json.loads(result.stderr)["phrase"] == trip.reason.phrase


def test_bad_options_exit_2_with_a_clear_message() -> None:
    """argparse errors go to stderr with the usage line; nothing is read."""
    numbers = (["--ngram", "four"], ["--max-unique-ratio", "lots"], ["--window", "1_000"],
               ["--ngram", "\u0665"], ["--ngram", "0x10"])
    for args in (*numbers, ["--bogus"], ["a", "b"]):
        result = run(b"", *args)
        assert result.returncode == 2
        assert b"usage: vthread guard" in result.stderr
        assert b"error:" in result.stderr
        assert (b"expected a number" in result.stderr) == (args in numbers)


def test_options_of_any_finite_size_are_taken() -> None:
    """An n-gram or window of any finite size is taken, as in production (past a million
    words they were refused): an n-gram longer than the stream never trips it, a window
    larger than it trips as it fills."""
    result = run(LOOP.encode(), "--ngram", "100000000000")
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    result = run(LOOP.encode(), "--window", "2000000")
    assert result.returncode == 3 and b"Traceback" not in result.stderr


def test_file_argument_reads_the_file(tmp_path: Path) -> None:
    """FILE instead of standard input: same output, same report; '-' is standard input."""
    text = HEALTHY + LOOP
    path = tmp_path / "out.txt"
    path.write_bytes(text.encode())
    from_file = subprocess.run([*COMMAND, str(path)], capture_output=True, env=env(),
                               timeout=60, check=False)
    from_stdin = run(text.encode(), "-")
    assert from_file.returncode == from_stdin.returncode == EXIT_TRIPPED
    assert from_file.stdout == from_stdin.stdout
    assert from_file.stderr == from_stdin.stderr
    assert path.read_bytes() == text.encode()


def test_unreadable_file_exits_2_naming_it(tmp_path: Path) -> None:
    """A missing file or a directory: exit 2, the name and the reason on stderr."""
    missing = run(b"", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2
    assert b"nope.txt" in missing.stderr and b"No such file" in missing.stderr
    folder = run(b"", str(tmp_path))
    assert folder.returncode == 2 and b"is a directory" in folder.stderr


def test_help_goes_to_stdout() -> None:
    """--help prints the usage and options, exit 0."""
    result = run(b"", "--help")
    assert result.returncode == 0
    assert b"--max-unique-ratio" in result.stdout and result.stderr == b""


def test_multibyte_character_split_across_reads() -> None:
    """UTF-8 cut inside a character between two writes decodes as one stream, live."""
    words = "été ünïcødé 🎉\U0001d400 naïve " * 12
    data = words.encode()
    cut = data.index("🎉".encode()) + 2  # inside the four-byte emoji
    process = subprocess.Popen([*COMMAND, "--max-unique-ratio", "0.9"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env())
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(data[:cut])
    process.stdin.flush()
    first = os.read(process.stdout.fileno(), 1 << 16)  # copied before more input arrives
    assert data[:cut].startswith(first) and first
    time.sleep(0.05)
    process.stdin.write(data[cut:])
    process.stdin.close()
    assert process.stderr is not None
    rest, errors = process.stdout.read(), process.stderr.read()
    process.wait(timeout=60)
    assert process.returncode == EXIT_TRIPPED
    (trip,) = scan_texts([words], max_unique_ratio=0.9)
    assert trip is not None
    assert first + rest == words[: trip.offset].encode()
    assert json.loads(errors)["phrase"] == trip.reason.phrase


def test_sigterm_ends_the_guard_as_it_ends_cat() -> None:
    """SIGTERM while the guard waits for input: the process ends by the signal, so a shell
    reports 143, as ``--help`` says (it listed no status for it)."""
    import signal

    process = subprocess.Popen(COMMAND,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env())
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"healthy words ")
    process.stdin.flush()
    assert os.read(process.stdout.fileno(), 1 << 16) == b"healthy words "  # (it runs)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)
    process.stdin.close()
    assert process.returncode == -signal.SIGTERM
    assert "143 terminated (SIGTERM" in run(b"", "--help").stdout.decode()


def test_every_byte_boundary_in_process() -> None:
    """Fed one byte per read, the answer is the same as fed whole."""
    text = "Voilà: çà et là, " + "ça recommence encore ici " * 8

    class OneByte(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def read1(self, size: int = -1) -> bytes:
            piece, self.data = self.data[:1], self.data[1:]
            return piece

    outputs = []
    for stdin in (io.BytesIO(text.encode()), OneByte(text.encode())):
        stdout, stderr = io.BytesIO(), io.StringIO()
        assert run_guard([], stdin, stdout, stderr) == EXIT_TRIPPED  # type: ignore[arg-type]
        outputs.append((stdout.getvalue(), stderr.getvalue()))
    assert outputs[0] == outputs[1]


class _Reads(io.RawIOBase):
    """Standard input that returns the given pieces, one per read."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


def test_min_chars_counts_up_to_the_word_whatever_the_reads() -> None:
    """``--min-chars N`` never trips before N characters, whether the input comes in one
    read (a file) or many (a pipe): per read, a file larger than N let a word trip at once."""
    text = ("again and " * 32 + "x" * 1000 + "\n").encode()
    for min_chars, trips in ((1000, False), (100, True)):
        answers = []
        for stdin in (io.BytesIO(text), _Reads(*(text[i:i + 7] for i in range(0, len(text), 7)))):
            stdout, stderr = io.BytesIO(), io.StringIO()
            status = run_guard(["--min-chars", str(min_chars)], stdin,  # type: ignore[arg-type]
                               stdout, stderr)
            answers.append((status, stdout.getvalue(), stderr.getvalue()))
        assert answers[0] == answers[1]
        assert (answers[0][0] == EXIT_TRIPPED) is trips
        assert (answers[0][1] == text) is not trips


@pytest.mark.parametrize("space", [" ", "\u00a0", "\u3000", "\u2028"])
def test_a_space_cut_across_reads_after_the_tripping_word(space: str) -> None:
    """A multibyte space that completes the tripping word, cut between two reads: the output
    still stops at that word (plus the rest of the space whose first bytes were already
    copied, so it never ends inside a character), never copying what follows."""
    data = ("again and again and again and" + space + "NEVER COPIED").encode()
    stop = data.index(b"and" + space.encode()[:1], 20) + 3
    for cut in range(stop, stop + len(space.encode()) + 1):
        stdout, stderr = io.BytesIO(), io.StringIO()
        stdin = _Reads(data[:cut], data[cut:])
        assert run_guard(["--ngram", "2", "--max-repeats", "3"], stdin,  # type: ignore[arg-type]
                         stdout, stderr) == EXIT_TRIPPED
        written = stdout.getvalue()
        assert written.decode().rstrip(space) == data[:stop].decode(), (cut, written)
        assert b"NEVER" not in written


def test_a_non_blocking_standard_input_is_waited_for() -> None:
    """Standard input handed over non-blocking (as Node.js or a terminal tool may) is
    waited for, not an internal error when the producer is slower than the guard."""
    import threading

    readable, writable = os.pipe()
    os.set_blocking(readable, False)
    data = LOOP.encode()

    def produce() -> None:
        time.sleep(0.2)  # the guard reads an empty pipe first
        os.write(writable, data[:40])
        time.sleep(0.1)
        os.write(writable, data[40:])
        os.close(writable)

    producer = threading.Thread(target=produce)
    producer.start()
    stdout, stderr = io.BytesIO(), io.StringIO()
    with open(readable, "rb", buffering=0) as stdin:
        status = run_guard([], stdin, stdout, stderr)
    producer.join()
    (trip,) = scan_texts([LOOP])
    assert trip is not None
    assert (status, stdout.getvalue()) == (EXIT_TRIPPED, LOOP[: trip.offset].encode())


def test_an_unreadable_standard_input_exits_2_naming_it(tmp_path: Path) -> None:
    """A standard input that cannot be read (here a folder) is named, exit 2."""
    class Folder:
        def __init__(self, descriptor: int) -> None:
            self.descriptor = descriptor

        def fileno(self) -> int:
            return self.descriptor

    descriptor = os.open(tmp_path, os.O_RDONLY)
    stdout, stderr = io.BytesIO(), io.StringIO()
    try:
        status = run_guard([], Folder(descriptor), stdout, stderr)  # type: ignore[arg-type]
    finally:
        os.close(descriptor)
    assert status == 2
    assert stderr.getvalue().startswith("vthread guard: error: cannot read standard input: ")
    assert stdout.getvalue() == b""


def test_invalid_utf8_passes_through() -> None:
    """Bytes that are not UTF-8 are copied unchanged and do not upset the guard."""
    data = b" ".join(b"caf\xe9 %d \xff\xfe" % i for i in range(300))
    result = run(data)
    assert (result.returncode, result.stdout) == (0, data)


def test_in_a_shell_pipeline() -> None:
    """Usable as `producer | vthread guard | consumer`; the exit status is the guard's."""
    script = (
        f"printf '%s' \"$TEXT\" | {sys.executable} -m vthread._cli_guard | wc -c; "
        "exit ${PIPESTATUS[1]}"
    )
    text = HEALTHY + LOOP
    result = subprocess.run(["bash", "-c", script], capture_output=True, timeout=60,
                            env={**env(), "TEXT": text}, check=False)
    assert result.returncode == EXIT_TRIPPED
    (trip,) = scan_texts([text])
    assert trip is not None
    assert int(result.stdout) == len(text[: trip.offset].encode())


def test_closed_stdout_ends_quietly() -> None:
    """`vthread guard | head -c 10` on an endless producer: status 141, no traceback."""
    script = (
        f"yes 'all fine here, nothing repeats' | tr -d '\\n' | "
        f"{sys.executable} -m vthread._cli_guard --max-unique-ratio 0 | head -c 10 >/dev/null; "
        "exit ${PIPESTATUS[2]}"
    )
    result = subprocess.run(["bash", "-c", script], capture_output=True, timeout=60,
                            env=env(), check=False)
    assert result.returncode == 141
    assert b"Traceback" not in result.stderr


@pytest.mark.skipif(not (ROOT / "vthread" / "__main__.py").exists(), reason="no vthread CLI")
def test_dispatched_by_vthread_cli() -> None:
    """`python -m vthread guard ...` reaches the same command."""
    result = subprocess.run([sys.executable, "-m", "vthread", "guard", "--ngram", "2"],
                            input=LOOP.encode(), capture_output=True, env=env(), timeout=60,
                            check=False)
    assert result.returncode == EXIT_TRIPPED
    assert json.loads(result.stderr)["tripped"] is True


@pytest.mark.parametrize("module", ["vthread._cli_guard", "vthread guard"])
def test_closed_stdin_is_a_usage_error(module: str) -> None:
    """`vthread guard <&-`: status 2 saying so, as `vthread scan -` says it (it read as an
    empty stream and exited 0, found by a tester); a file named instead still reads."""
    command = f"{sys.executable} -m {module}"
    result = subprocess.run(["bash", "-c", f"{command} <&-; echo status=$?"],
                            capture_output=True, timeout=60, env=env(), check=False)
    assert result.stdout.endswith(b"status=2\n")
    assert result.stderr == b"vthread guard: error: there is no standard input (it is closed)\n"
    result = subprocess.run(["bash", "-c", f"{command} /dev/null <&-; echo status=$?"],
                            capture_output=True, timeout=60, env=env(), check=False)
    assert result.stdout == b"status=0\n" and not result.stderr


@pytest.mark.parametrize("unbuffered", ["1", ""])
@pytest.mark.parametrize("command", ["guard", "scan"])
def test_a_non_blocking_output_read_late_gets_every_byte(
        command: str, unbuffered: str, tmp_path: Path) -> None:
    """Standard output a non-blocking pipe whose reader starts late (a harness's event
    loop): every byte is written, waiting while the pipe is full, status 0 (the guard wrote
    65,536 bytes of 3 MB and said success under PYTHONUNBUFFERED, or status 74 buffered)."""
    import fcntl

    if command == "guard":
        text = b"".join(b"word%d " % i for i in range(150_000)) + b"\n"
        path = tmp_path / "healthy.txt"
        path.write_bytes(text)
        argv = [sys.executable, "-m", "vthread", "guard", str(path)]
        expected = text
    else:
        run_line = json.dumps({"messages": [{"type": "user", "text": "q"}]})
        path = tmp_path / "runs.jsonl"
        path.write_text(f"{run_line}\n" * 20_000)
        argv = [sys.executable, "-m", "vthread", "scan", "-q", str(path)]
        expected = subprocess.run(argv, capture_output=True, env=env(), check=True).stdout
    assert len(expected) > 1 << 20
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    process = subprocess.Popen(argv, stdout=write_end, stderr=subprocess.PIPE,
                               env={**env(), "PYTHONUNBUFFERED": unbuffered})
    os.close(write_end)
    time.sleep(0.5)  # (the pipe fills before anyone reads it)
    got = bytearray()
    while chunk := os.read(read_end, 1 << 16):
        got += chunk
    os.close(read_end)
    assert process.wait(timeout=60) == 0, process.stderr.read() if process.stderr else ""
    assert bytes(got) == expected


def test_output_appended_to_the_input_is_refused(tmp_path: Path) -> None:
    """``vthread guard FILE >> FILE`` (or ``< FILE >> FILE``) would read its own output back
    without end (a block longer than a third of the window never trips): refused, status 2,
    the file as it was (it grew by 47 MB in two seconds until killed)."""
    path = tmp_path / "self.txt"
    text = " ".join(str(n) for n in range(1, 1001)) + "\n"
    path.write_text(text)
    for stdin, args in ((subprocess.DEVNULL, [str(path)]), (None, [])):
        with path.open("ab") as out:
            source = path.open("rb") if stdin is None else None
            try:
                result = subprocess.run([sys.executable, "-m", "vthread", "guard", *args],
                                        stdin=source or stdin, stdout=out,
                                        stderr=subprocess.PIPE, env=env(), timeout=30,
                                        check=False)
            finally:
                if source is not None:
                    source.close()
        assert result.returncode == 2, result.stderr
        assert b"would read the output back, without end" in result.stderr
        assert path.read_text() == text
