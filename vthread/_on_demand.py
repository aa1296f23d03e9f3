"""A sequence whose items are made only when first read, each once."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, overload

__all__ = ["OnDemand"]

T = TypeVar("T")


class OnDemand(Sequence[T]):
    """``length`` items, item ``i`` made by ``make(i)`` when it is first read and kept: for
    work a reader may need for only a few positions (a message's exact key, a line's parsed
    thread), so that the rest is never done. O(1) to build."""

    def __init__(self, length: int, make: Callable[[int], T]) -> None:
        self.length = length
        self.make = make
        self.made: dict[int, T] = {}

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.length))]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(f"item {index} of {self.length}")
        if index not in self.made:
            self.made[index] = self.make(index)
        return self.made[index]
