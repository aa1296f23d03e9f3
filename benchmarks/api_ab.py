"""Two source trees of vthread side by side on the in-process API.

Each build is a directory put first on ``PYTHONPATH`` (a clone with its compiled core beside
its ``vthread/``). A round runs one fresh interpreter per build, the order alternating by
round; the interpreter reads the workload file's threads, then times (CPU seconds, the
least of three):

- ``vthread.scan`` over every thread (native messages);
- ``vthread.scan(format="auto")`` over the first 3,000 threads in OpenAI's chat format
  (the Python adapters' path);
- ``describe_thread_cycle`` per call on up to 200 threads of 55-65 messages (the every-turn
  call), in microseconds per call;
- with ``--arrow``, ``vthread.scan_arrow`` over every thread as a column of JSON text, and
  over the first 3,000 as a column of message structs (each tool payload as its JSON text,
  so that pyarrow can give every row one type);
- with ``--guard`` (in place of ``--arrow``), ``Guard.push`` over 1 MB of ASCII words in
  4-character pushes and in one push, and over 1 MB of Greek, Cyrillic, CJK and accented
  words in 4-character pushes, and one word of 20 million characters (accented: 30 MB of
  normal form, past what the guard keeps of a word) in 64 KiB pushes.

The builds must give the same answers (a digest of the scans' verdicts). Each round's ratio
is taken within the round (before / after), so the machine's drift moves both sides alike;
the summary gives the median of those ratios and how many rounds were faster.

    python -m benchmarks.api_ab before=/tmp/old after=. --file /tmp/w10k.jsonl \\
        --rounds 7 --out results.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from benchmarks.scan_report import write_results

_CHILD = r"""
import gc, hashlib, json, sys, time
import vthread
from benchmarks.workload import to_openai
threads = [json.loads(line)["messages"] for line in open(sys.argv[1])]
chats = [to_openai(thread) for thread in threads[:3000]]
sixty = [thread for thread in threads if 55 <= len(thread) <= 65][:200]

def least(call):
    best, answer = float("inf"), None
    for _ in range(3):
        gc.collect()
        started = time.process_time()
        answer = call()
        best = min(best, time.process_time() - started)
    return best, answer

def every_turn():
    for _ in range(10):
        for thread in sixty:
            vthread.describe_thread_cycle(thread)

found = {}
found["scan"], native = least(lambda: vthread.scan(threads))
found["scan_auto_openai"], chat = least(lambda: vthread.scan(chats, format="auto"))
seconds, _ = least(every_turn)
found["describe_us_per_call"] = seconds / (10 * len(sixty)) * 1e6
answers = [native.names, chat.names]
if sys.argv[2:] == ["arrow"]:
    import pyarrow as pa

    def payloads_as_text(message):
        meta = message.get("meta")
        activity = meta.get("activity") if isinstance(meta, dict) else None
        function = activity.get("function") if isinstance(activity, dict) else None
        if isinstance(function, dict):
            for key in ("arguments", "result"):
                if key in function:
                    function[key] = json.dumps(function[key])
        return message

    texts = pa.table({"messages": [json.dumps(thread) for thread in threads]})
    copies = json.loads(json.dumps(threads[:3000]))  # (the payloads rewritten in copies)
    structs = pa.table({"messages": pa.array(
        [[payloads_as_text(message) for message in thread] for thread in copies])})
    found["scan_arrow_text"], of_text = least(lambda: vthread.scan_arrow(texts))
    found["scan_arrow_struct"], of_structs = least(lambda: vthread.scan_arrow(structs))
    answers += [of_text.column("verdict").to_pylist(), of_structs.column("verdict").to_pylist()]
if sys.argv[2:] == ["guard"]:
    import random

    def words_text(alphabet, seed):
        rng = random.Random(seed)
        vocabulary = ["".join(rng.choices(alphabet, k=rng.randint(2, 9))) for _ in range(5000)]
        text, size = [], 0
        while size < 1_000_000:
            word = rng.choice(vocabulary) + rng.choice("  \n")
            text.append(word)
            size += len(word)
        return "".join(text)

    def pushed(text, step):
        guard = vthread.Guard()
        tripped = [at for at in range(0, len(text), step) if guard.push(text[at:at + step])]
        return tripped[:1], guard.reason

    ascii_text = words_text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789'", 1)
    other_text = words_text("αβγδεζηθικλμνΣΟΔΑабвгдежзийклмнЖЗИ日本語文字漢字ÉéÀàÇç", 2)
    found["guard_ascii_4"], a = least(lambda: pushed(ascii_text, 4))
    found["guard_ascii_whole"], b = least(lambda: pushed(ascii_text, len(ascii_text)))
    found["guard_other_4"], c = least(lambda: pushed(other_text, 4))
    long_word = "a\u00e9" * 10_000_000 + " b "
    found["guard_long_word"], d = least(lambda: pushed(long_word, 1 << 16))
    answers += [repr(a), repr(b), repr(c), repr(d)]
found["digest"] = hashlib.sha1(json.dumps(answers).encode()).hexdigest()[:16]
print(json.dumps(found))
"""

_METRICS = ("scan", "scan_auto_openai", "describe_us_per_call")
_ARROW_METRICS = ("scan_arrow_text", "scan_arrow_struct")
_GUARD_METRICS = ("guard_ascii_4", "guard_ascii_whole", "guard_other_4", "guard_long_word")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("builds", nargs=2, metavar="NAME=DIR")
    parser.add_argument("--file", required=True, help="the workload's JSONL file")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", required=True)
    parser.add_argument("--arrow", action="store_true",
                        help="also time scan_arrow on a text and a struct column (pyarrow)")
    parser.add_argument("--guard", action="store_true",
                        help="also time Guard.push over 1 MB of ASCII words in 4-character "
                        "pushes and whole, 1 MB of Greek, Cyrillic, CJK and accented "
                        "words in 4-character pushes, and a 20-million-character word")
    options = parser.parse_args(argv)
    builds = dict(build.split("=", 1) for build in options.builds)
    names = list(builds)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for number in range(options.rounds):
        for name in names if number % 2 == 0 else names[::-1]:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, options.file,
                 *(["arrow"] if options.arrow else ["guard"] if options.guard else [])],
                cwd=builds[name],
                env={"PYTHONPATH": builds[name], "PATH": "/usr/bin:/bin"},
                capture_output=True, text=True, check=True)
            rounds[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    summary: dict[str, Any] = {}
    for metric in _METRICS + (_ARROW_METRICS if options.arrow else _GUARD_METRICS
                               if options.guard else ()):
        ratios = [a[metric] / b[metric]
                  for a, b in zip(rounds[names[0]], rounds[names[1]], strict=True)]
        summary[metric] = {name: statistics.median(r[metric] for r in rounds[name])
                           for name in names}
        summary[metric][f"{names[0]}/{names[1]}_median_of_rounds"] = statistics.median(ratios)
        summary[metric][f"rounds_{names[1]}_faster"] = sum(ratio > 1 for ratio in ratios)
    summary["identical_answers"] = len({r["digest"] for name in names
                                        for r in rounds[name]}) == 1
    # (the machine as scan_report states it: processor, memory, versions, commit, load,
    # where this script wrote the processor alone, empty on a VM that does not name it)
    write_results(options.out, __doc__, {"builds": builds, "file": options.file,
                                         "rounds": rounds, "summary": summary}, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
