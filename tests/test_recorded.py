"""Every recorded production call, replayed against the public API and the scalar reference."""

from __future__ import annotations

from typing import Any

import pytest
import reference_api
from recorded import load_records, replay

import vthread

CORPUS = load_records("corpus.json")
ADVERSARIAL = load_records("adversarial.json")


def _ids(records: list[dict[str, Any]]) -> list[str]:
    return [f"{r['fn']}-{r['id']}" for r in records]


@pytest.mark.parametrize("record", CORPUS, ids=_ids(CORPUS))
def test_corpus_record_public_api(record: dict[str, Any]) -> None:
    """The public API answers each production-suite call as production did."""
    replay(record, vthread)


@pytest.mark.parametrize("record", ADVERSARIAL, ids=_ids(ADVERSARIAL))
def test_adversarial_record_public_api(record: dict[str, Any]) -> None:
    """The public API answers each generated fidelity probe as production did."""
    replay(record, vthread)


@pytest.mark.parametrize("record", CORPUS + ADVERSARIAL, ids=_ids(CORPUS + ADVERSARIAL))
def test_record_scalar_reference(record: dict[str, Any]) -> None:
    """The scalar reference, the oracle of the property tests, answers as production did."""
    replay(record, reference_api)


def test_every_record_is_replayed() -> None:
    """No record is skipped: the counts are the ones the data README states."""
    assert len(CORPUS) == 237
    assert len(ADVERSARIAL) == 1557
