"""vthread._on_demand.OnDemand against the list it stands for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vthread._on_demand import OnDemand


@given(st.integers(0, 30), st.lists(st.one_of(
    st.integers(-40, 40),
    st.builds(slice, st.none() | st.integers(-40, 40), st.none() | st.integers(-40, 40),
              st.sampled_from([None, 1, 2, -1, -3])))))
def test_reads_as_the_list_and_makes_each_item_once(length: int,
                                                    reads: list[int | slice]) -> None:
    """Every index (negative ones too) and slice reads as the list of ``make(i)`` does, an
    index out of range is an IndexError as the list's, and each item is made at most once."""
    made: list[int] = []

    def make(index: int) -> str:
        made.append(index)
        return f"item {index}"

    lazy, eager = OnDemand(length, make), [f"item {i}" for i in range(length)]
    assert len(lazy) == length
    for read in reads:
        if isinstance(read, int) and not -length <= read < length:
            with pytest.raises(IndexError):
                lazy[read]
            continue
        assert lazy[read] == eager[read]
    assert len(made) == len(set(made)) and all(0 <= index < length for index in made)
    assert list(lazy) == eager
