"""Ray Data: verdicts for every run of a dataset, as new columns beside the others.

Evaluation runs too many for one machine live as Parquet in a bucket; Ray Data reads them
as Arrow blocks and spreads work over a cluster. :func:`scan_dataset` is
:func:`vthread.scan_arrow` applied with ``Dataset.map_batches(batch_format="pyarrow")``, so
batches stay Arrow from the reader to the core and no row becomes a Python object on the
fast path. This module is loaded only when imported (``import vthread`` never loads it or
Ray); install with ``pip install 'vthread[ray]'``. Absolute imports (``import ray``) reach
the real Ray, never this module.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Final, cast

from vthread._options import flag
from vthread.arrow import (
    RESULT_FIELDS,
    RUN_ID,
    checked_arguments,
    declarations,
    decoded,
    detect_column_format,
    holds_messages,
    refuse_unsound,
    scan_column,
)
from vthread.documents import DECLARED_COLUMN, messages_column

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

__all__ = ["DETECT_ROWS", "LOOK_PAST_ROWS", "scan_dataset"]

DETECT_ROWS: Final = 256
"""Rows read from the start of the dataset to detect its format when ``format="auto"``."""
LOOK_PAST_ROWS: Final = 16 * DETECT_ROWS
"""Rows read at most to find the first holding messages, when the first ``DETECT_ROWS``
hold none (``format="auto"``)."""
_RESERVED: Final = frozenset({"fn", "batch_format", "fn_args", "fn_kwargs",
                              "fn_constructor_args", "fn_constructor_kwargs"})


def scan_dataset(
    ds: ray.data.Dataset,
    *,
    messages: str | None = None,
    format: str = "auto",
    min_repetitions: float | None = None,
    min_pattern_length: float | None = None,
    max_pattern_length: float | None = None,
    min_result_repetitions: float | None = None,
    mask_volatile: bool = False,
    anywhere: bool = False,
    prefix: str = "",
    keep_messages: bool = False,
    run_ids: bool = False,
    **map_batches_kwargs: Any,
) -> ray.data.Dataset:
    """``ds`` with the verdict of each row's run added as :data:`RESULT_FIELDS` columns.

    Lazy, as every Ray Data transform: nothing is scanned until the result is consumed
    (``write_parquet``, ``iter_batches``, ``take``). Every input column is kept except the
    ``messages`` column itself (by default the first of
    :data:`vthread.documents.MESSAGES_KEYS` the dataset has), whose text is usually most of
    the bytes: it is replaced by the result's ``messages`` (the run's message count);
    ``keep_messages=True`` keeps it.
    ``anywhere=True`` adds a last column ``loops``: every loop of the run, wherever it lies,
    as :func:`vthread.scan_arrow` reports it; ``run_ids=True`` a first one, ``run_id``, the
    id each row's run object holds (as :func:`vthread.scan_arrow` reads it). ``prefix`` is
    put before every result column's name; a result name equal to a kept input column is a
    ``ValueError`` naming it, raised here, before any work.

    ``format="auto"`` is resolved once, here, from the first :data:`DETECT_ROWS` rows (Ray
    executes the start of the pipeline to read them), and every batch is then read in that
    format, so two batches can never be judged in different formats (when none of those
    rows holds messages, the first batch further on that does, within the first
    :data:`LOOK_PAST_ROWS`); pass ``format=`` to keep
    this call fully lazy (the columns of a dataset Ray knows only once it runs are then
    checked by each batch). A bad row gets its ``error`` and is never dropped, as in
    :func:`vthread.scan_arrow`. Rows keep their order within a block; whether blocks come
    back in input order is Ray's ``DataContext.execution_options.preserve_order`` (off by
    default). Other keywords go to ``map_batches`` (``batch_size``, ``compute``,
    ``num_cpus``, ...). The core reads a batch on every CPU of its machine unless
    ``RAYON_NUM_THREADS`` is set; with one worker per CPU, set it to 1 in the workers
    (``ray.init(runtime_env={"env_vars": {"RAYON_NUM_THREADS": "1"}})``). Ray's own cost
    is about 0.3 ms per batch, ``scan_arrow``'s fixed cost a few ms per call, so batches of
    1,000 rows or more (Ray's default, whole blocks, usually is) keep both small.
    O(total size), spread over Ray's workers.

    The example starts a Ray cluster, too slow for a doctest; ``tests/test_ray.py`` runs
    the same on a local one.

    >>> import ray, vthread.ray  # doctest: +SKIP
    >>> ask = '{"type":"user","text":"hi"}'
    >>> ds = ray.data.from_items([{"run": "r1", "messages": f"[{ask}]"},  # doctest: +SKIP
    ...                           {"run": "r2", "messages": "[" + ",".join([ask] * 4) + "]"}])
    >>> [row["verdict"] for row in vthread.ray.scan_dataset(ds).take_all()]  # doctest: +SKIP
    [None, 'repeated_suffix']
    """
    keywords = checked_arguments(format, mask_volatile, anywhere,
                                 min_repetitions=min_repetitions,
                                 min_pattern_length=min_pattern_length,
                                 max_pattern_length=max_pattern_length,
                                 min_result_repetitions=min_result_repetitions)
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
    keep_messages = flag("keep_messages", keep_messages)  # the string "no" is no false
    run_ids = flag("run_ids", run_ids)
    reserved = sorted(_RESERVED & map_batches_kwargs.keys())
    if reserved:
        raise TypeError(f"scan_dataset sets {', '.join(reserved)} itself")
    # The columns as Ray knows them without running the pipeline (a dataset after a
    # map_batches has none until it runs: asking for them ran its first block here).
    schema = (ds.schema(fetch_if_missing=format == "auto")
              if "fetch_if_missing" in inspect.signature(ds.schema).parameters
              else ds.schema())
    if schema is not None:
        messages = messages_column(list(schema.names), messages, "the dataset", "messages=")
        _check_columns(list(schema.names), messages, prefix, keep_messages, anywhere, run_ids)
    # Else the columns are known only once the dataset runs: each batch finds its own.
    # A format given is taken as it is, so that the call stays lazy (checking it against the
    # rows, as scan_arrow does, would run the start of the pipeline here).
    names = None if schema is None else list(schema.names)
    chosen = _detect_format(ds, messages, names) if format == "auto" else format
    apply = functools.partial(_scan_batch, messages=messages, format=chosen,
                              detected=format == "auto",
                              keywords=keywords, mask_volatile=mask_volatile,
                              anywhere=anywhere, prefix=prefix, keep_messages=keep_messages,
                              run_ids=run_ids)
    options = dict(map_batches_kwargs)
    # One output row per input row: newer Ray versions can push a limit past such a map.
    if "udf_modifying_row_count" in inspect.signature(ds.map_batches).parameters:
        options.setdefault("udf_modifying_row_count", False)
    return ds.map_batches(apply, batch_format="pyarrow", **options)


def _result_names(anywhere: bool, run_ids: bool = False) -> tuple[str, ...]:
    names = (*RESULT_FIELDS, "loops") if anywhere else RESULT_FIELDS
    return (RUN_ID, *names) if run_ids else names


def _check_columns(names: list[str], messages: str, prefix: str, keep_messages: bool,
                   anywhere: bool = False, run_ids: bool = False) -> None:
    kept = set(names) if keep_messages else set(names) - {messages}
    clashes = [prefix + name for name in _result_names(anywhere, run_ids)
               if prefix + name in kept]
    if clashes:
        advice = ("pass prefix= (say prefix='vthread_')" if not prefix
                  else f"pass another prefix= than {prefix!r}")
        raise ValueError(f"the result column {clashes[0]!r} is already a column of the "
                         f"dataset; {advice} to name the results apart")


def _detect_format(ds: ray.data.Dataset, messages: str | None, names: list[str] | None
                   ) -> str:
    """The format of the dataset's first rows, detected as :func:`vthread.scan_arrow` does
    (``messages`` None: the dataset's columns, ``names``, were not known before it ran),
    with the rows' declared formats when it has a ``trajectory_format`` column."""
    try:
        declaring = names is not None and DECLARED_COLUMN in names and messages != DECLARED_COLUMN
        picked = (ds if messages is None
                  else ds.select_columns([messages, DECLARED_COLUMN] if declaring else [messages]))
        head: pa.Table = picked.limit(DETECT_ROWS).take_batch(DETECT_ROWS,
                                                              batch_format="pyarrow")
    except ValueError:  # Ray's answer for an empty dataset: nothing to read in any format
        return "native"
    messages = messages_column(head.column_names, messages, "the dataset", "messages=")
    if head.num_rows == DETECT_ROWS and not holds_messages(decoded(head.column(messages))):
        # No row of the head holds messages (failed or empty runs first): the first batch
        # further on that does decides, as scan_arrow looks past such rows (the chat runs
        # after 256 empty rows were read as native, each a false loop); up to LOOK_PAST_ROWS
        # rows, so that a dataset holding none is not all run here.
        batches = picked.limit(LOOK_PAST_ROWS).iter_batches(batch_size=DETECT_ROWS,
                                                            batch_format="pyarrow")
        for batch in batches:
            table = cast("pa.Table", batch)
            if holds_messages(decoded(table.column(messages))):
                head = table
                break
    column = head.column(messages)
    refuse_unsound(column)
    # All of the rows read weigh, as documented (16 of them let 16 native rows have the
    # chats after them read as native, each a false loop, with no word).
    return detect_column_format(decoded(column), declared=declarations(head, messages),
                   rows=DETECT_ROWS)


def _scan_batch(batch: pa.Table, *, messages: str | None, format: str, detected: bool,
                keywords: dict[str, Any], mask_volatile: bool, prefix: str,
                keep_messages: bool, anywhere: bool = False, run_ids: bool = False
                ) -> pa.Table:
    """One batch with its verdict columns: runs in a Ray worker (``detected``: ``format`` was
    detected from the dataset's first rows, not given)."""
    messages = messages_column(batch.column_names, messages, "the batch", "messages=")
    _check_columns(batch.column_names, messages, prefix, keep_messages, anywhere, run_ids)
    column = batch.column(messages)
    refuse_unsound(column)
    found = scan_column(batch, column, format, keywords, mask_volatile, anywhere,
                        run_ids=run_ids, declared=declarations(batch, messages),
                        detected=detected)
    out = batch if keep_messages else batch.drop_columns([messages])
    for name in _result_names(anywhere, run_ids):
        out = out.append_column(prefix + name, found.column(name))
    return out
