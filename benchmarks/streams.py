"""Deterministic text workloads for the guard benchmarks.

:func:`realistic_stream` stands in for a model's healthy output: sentences drawn from a
5,000-word vocabulary with a Zipf-like frequency, capitals, commas, paragraphs and the odd
bulleted list. It never trips a default :class:`vthread.guard.Guard` (the benchmark asserts
that), so every push runs the full per-word path to the end of the stream.
:func:`recorded_outputs` makes many shorter texts of the same kind, about one in six ending
in a loop, as a bulk replay would see them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import accumulate
from typing import Final

from vthread import _reference as ref

VOCABULARY_SIZE: Final = 5_000
STREAM_BYTES: Final = 2_000_000
CHUNK_CHARS: Final = 4
_SEED: Final = 20_260_913
_ONSETS: Final = ("", "b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v",
                  "w", "br", "ch", "cl", "gr", "pl", "sh", "st", "th", "tr")
_VOWELS: Final = ("a", "e", "i", "o", "u", "ea", "ai", "ou", "io")
_CODAS: Final = ("", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ck", "ng")


def vocabulary(size: int = VOCABULARY_SIZE, seed: int = _SEED) -> list[str]:
    """``size`` distinct pronounceable words, shortest (most frequent) first."""
    rng = random.Random(seed)
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
            for _ in range(syllables)
        )
        words.setdefault(word, None)
    return sorted(words, key=len)


class _Writer:
    """Sentences and paragraphs from a Zipf-weighted vocabulary."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary()
        self.cumulative = list(accumulate(1.0 / (rank + 1) ** 0.9
                                          for rank in range(len(self.words))))

    def sentence(self) -> str:
        rng = self.rng
        chosen = rng.choices(self.words, cum_weights=self.cumulative, k=rng.randint(6, 22))
        for index in range(1, len(chosen) - 1):
            if rng.random() < 0.08:
                chosen[index] += ","
        if rng.random() < 0.05:
            chosen[rng.randrange(len(chosen))] = str(rng.randint(2, 2048))
        chosen[0] = chosen[0].capitalize()
        return " ".join(chosen) + rng.choice(".....?!:")

    def paragraph(self) -> str:
        rng = self.rng
        if rng.random() < 0.1:
            return "\n".join(f"- {self.sentence()}" for _ in range(rng.randint(2, 5)))
        return " ".join(self.sentence() for _ in range(rng.randint(2, 7)))

    def text(self, chars: int) -> str:
        parts: list[str] = []
        size = 0
        while size < chars:
            paragraph = self.paragraph()
            parts.append(paragraph)
            size += len(paragraph) + 2
        return "\n\n".join(parts)[:chars]


def realistic_stream(chars: int = STREAM_BYTES, seed: int = _SEED) -> str:
    """About ``chars`` characters (ASCII, so as many bytes) of healthy, non-repeating prose."""
    return _Writer(seed).text(chars)


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut into token-sized pushes."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def endless_stream(seed: int = _SEED, paragraph_chars: int = 1 << 16) -> Iterator[str]:
    """Healthy prose forever, one block of about ``paragraph_chars`` at a time."""
    writer = _Writer(seed)
    while True:
        yield writer.text(paragraph_chars) + "\n\n"


def recorded_outputs(count: int = 1_000, seed: int = _SEED) -> list[str]:
    """``count`` model outputs of 200-6,000 characters; about one in six ends in a loop."""
    writer = _Writer(seed + 1)
    rng = writer.rng
    texts = []
    for _ in range(count):
        text = writer.text(rng.randint(200, 6_000))
        if rng.random() < 1 / 6:
            loop = writer.sentence()
            text += " " + " ".join([loop] * rng.randint(3, 12))
        texts.append(text)
    return texts


def reference_trips(texts: list[str]) -> list[ref.ReferenceReason | None]:
    """What the scalar reference guard says of each text pushed whole: the replay baseline."""
    reasons = []
    for text in texts:
        guard = ref.guard()
        guard.push(text)
        reasons.append(guard.reason)
    return reasons
