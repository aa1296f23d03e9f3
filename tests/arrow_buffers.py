"""Arrow arrays built from their buffers, holding what pyarrow's constructors refuse (text
that is no UTF-8, offsets out of order) but its readers and writers pass through."""

from __future__ import annotations

import array
from typing import Any


def raw_strings(values: list[bytes]) -> Any:
    """A string array holding ``values`` as they are, UTF-8 or not."""
    import pyarrow as pa

    offsets = [0]
    for value in values:
        offsets.append(offsets[-1] + len(value))
    return pa.Array.from_buffers(pa.string(), len(values), [
        None, pa.py_buffer(array.array("i", offsets).tobytes()), pa.py_buffer(b"".join(values))])


def message_lists(texts: list[bytes], per_row: int) -> Any:
    """A ``list<struct<type, text>>`` array of ``len(texts) // per_row`` rows, the messages'
    types alternating ``a``, ``b`` and their texts ``texts`` as they are (UTF-8 or not)."""
    import pyarrow as pa

    types = raw_strings([b"a" if at % 2 == 0 else b"b" for at in range(len(texts))])
    structs = pa.StructArray.from_arrays([types, raw_strings(texts)], names=["type", "text"])
    offsets = pa.array(range(0, len(texts) + 1, per_row), pa.int32())
    return pa.ListArray.from_arrays(offsets, structs)
