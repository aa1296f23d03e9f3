"""Type stubs of the compiled core, ``vthread._core`` (built from ``src/`` by maturin)."""

from collections.abc import Callable, Iterable
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer  # read by type checkers only: a stub file

__version__: str

CoreOptions = tuple[int, int, int | None, int]
"""(min_repetitions, min_pattern_length, max_pattern_length or None, min_result_repetitions),
as ``vthread._heuristics.core_options`` makes them."""

def canonical(value: Any) -> bytes:
    """``vthread._jsvalue.canonical(value)`` as ASCII bytes, made in Rust."""

def fingerprint(value: Any) -> int:
    """Unsigned 64-bit XXH3 of ``value``'s canonical encoding."""

def scan_columns(
    threads: list[Any],
    options: CoreOptions,
    keep_read: bool = False,
    one: bool = False,
) -> dict[str, Any]:
    """The columns the NumPy heuristics read (see src/columns.rs); NumPy arrays by name.
    With ``keep_read``, also ``threads``: a tuple per thread of the messages read. Errors
    name the thread and message index; with ``one`` (a single call's thread), the message
    index alone."""

def scan_lines(
    lines: list[bytes],
    options: CoreOptions,
    count_tokens: bool,
    threads: int,
    format: Literal["native", "openai", "anthropic", "responses", "mini-swe-agent",
                    "swe-agent"] = "native",
    messages_key: str | None = None,
    id_key: str | None = None,
    mask_volatile: bool = False,
    anywhere: tuple[int, int, float] | None = None,
    block: tuple[bytes, npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None,
    detected: list[KeptTapes] | None = None,
    declared_wins: bool = False,
) -> dict[str, Any]:
    """Columns of JSONL lines plus ``id_texts``, ``message_counts``, ``figures``,
    ``figures_odd``, ``chat_first`` (per line, whether its thread's first message has a
    ``role`` or ``call_id``), ``declined`` (the lines that need Python's json or its
    adapters, each an empty thread in its row) and ``read_as_own`` (with ``declared_wins``,
    each line read in a format of its own: its place in the chunk and that format's name).
    OpenAI and
    Anthropic lines are translated to native lines first, returned as ``native`` (bytes) and
    ``native_ends``, with ``sources`` (the source message of every native message). A run
    object's messages and id are under ``messages_key`` and ``id_key`` when given; with
    ``declared_wins`` (a chat format detected, not given) a run object declaring itself a
    mini-swe-agent run is translated as one, a run showing SWE-agent's actions as
    SWE-agent's (``documents.run_reading_format``). With
    ``anywhere`` (the text-run options of :func:`message_screens`), ``anywhere`` holds what
    :func:`message_screens` makes of the threads (a thread a line, a declined line's empty)
    and the cycle columns hold empty threads. ``kept`` (when some): the tapes of the native
    lines as written whose threads may loop, for :func:`attribute_lines` of those lines.
    With ``block`` (a read of a file and the starts and ends of its lines in it), the rows
    are ``lines`` and then those slices, read in place. ``detected``: holders of the tapes
    format detection made of some of ``lines`` (:func:`line_format_evidence`'s
    ``keep_into``), taken (all of them) instead of parsing those lines again;
    ``from_detected`` (when some) counts the lines read from them."""

def line_ends(data: bytes, start: int, most: int) -> npt.NDArray[np.int64]:
    """Where the first ``most`` newlines of ``data`` from byte ``start`` on lie."""

def tape_reads(lines: list[bytes]) -> list[bool]:
    """Whether the core's tape reads each line: True only for one JSON value that
    ``json.loads`` reads (and reads alike); False for the rest, which Python judges."""

def mask_line(line: bytes, messages_key: str | None = None,
              id_key: str | None = None) -> bytes | None:
    """A native line's thread as ``--mask-volatile`` reads it in the core: the native line of
    its masked copy, or None where Python reads the line."""

def translate_line(
    line: bytes, format: Literal["openai", "anthropic", "responses"],
    messages_key: str | None = None, id_key: str | None = None,
) -> tuple[bytes, list[int]] | None:
    """One run's native line and the source message of each native message, as the core
    translates it; None where it leaves the line to Python."""

def scan_slices(
    data: Any,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    options: CoreOptions,
    count_tokens: bool,
    threads: int,
    mask_volatile: bool = False,
    anywhere: tuple[int, int, float] | None = None,
) -> dict[str, Any]:
    """``scan_lines`` over the rows ``data[starts[i]:ends[i]]`` of one read-only buffer (an
    Arrow string column's data), no Python object per row; ValueError for a bad slice."""
def line_format_evidence(line: bytes, messages_key: str | None = None, keep_tape: bool = False,
                         keep_into: KeptTapes | None = None, undeclared: bool = False
                         ) -> tuple[bool, tuple[str | None, bool] | None]:
    """What the run ``line`` holds says of its file's format, as
    ``documents.run_format_evidence(json.loads(line), messages_key)`` answers: ``(True,
    None)`` when the run has no messages to judge by, ``(True, (format, decisive))`` with
    ``format`` None for messages in no known format, or ``(False, None)`` when the core
    leaves the line to Python (one its tape does not read as ``json.loads`` does: NaN, a lone
    surrogate, an escaped or repeated key, a 19-digit number, invalid UTF-8). With
    ``keep_tape``, the parse of a line of 1 MiB or more is kept for the next parse of the
    same ``bytes`` (the scan after the detection), until :func:`release_kept_tape`. With
    ``keep_into``, the parse of a shorter line is held there instead, for
    :func:`scan_lines` (``detected``) of the chunk the same ``bytes`` is in, while it holds
    less than 8 MiB of lines. With ``undeclared``, a run declaring itself a mini-swe-agent
    run, or showing SWE-agent's actions, says nothing: ``(True, None)``
    (``documents.run_format_evidence``'s ``undeclared``)."""

def may_be_record(line: bytes) -> bool:
    """Whether ``line`` holds ``\\u``, or both ``"file"`` and ``"line"`` (a line that may be
    one of ``vthread scan``'s records)."""

def release_kept_tape() -> None:
    """Drop the tape :func:`line_format_evidence` kept, if no parse took it."""

def tape_is_kept() -> bool:
    """Whether a tape :func:`line_format_evidence` kept still waits for its line."""

def may_settle(line: bytes) -> bool:
    """Whether the run ``line`` holds may be decisively in a chat format: False only when
    ``line_format_evidence(line)`` surely is no ``(True, (format, True))`` with ``format``
    one of ``documents.CHAT_FORMATS`` (nor is Python's reading of a line the core leaves).
    One pass over the line's quotes, backslashes and ``<``s, not a parse."""

MAY_SETTLE: int
MAY_READ_OTHERWISE: int
MAY_BE_NATIVE: int
DECLARES_MINI_SWE_AGENT: int

def line_marks(lines: list[bytes], messages_key: str | None = None,
               block: tuple[bytes, npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
               ) -> bytes:
    """A byte of marks for each of ``lines``, each mark false only when surely so:
    ``MAY_SETTLE``, it may settle a chat format (``may_settle``); ``MAY_READ_OTHERWISE``, it
    may be a plain chat that reads otherwise in some chat format than as OpenAI's
    (``plain_reads_otherwise`` tells); ``MAY_BE_NATIVE``, no ``role`` key is in it,
    so it may be a native thread; and, true only when surely so,
    ``DECLARES_MINI_SWE_AGENT``: its run object declares itself a mini-swe-agent run, told
    from the last members of the object (``documents.declares_mini_swe_agent`` of a line
    that is JSON). A ``tools`` value (OpenAI's tool definitions beside the
    messages) is passed over unless ``messages_key`` is ``"tools"``. One pass over each
    line's quotes, backslashes and ``<``s, not a parse. With ``block``, the rows are
    ``lines`` and then the lines of a read (as :func:`scan_lines` takes them)."""

def plain_reads_otherwise(line: bytes, messages_key: str | None = None) -> int | None:
    """In which chat formats the plain chat ``line`` holds reads otherwise than as OpenAI's,
    as bits: 1 Anthropic, 2 Responses, 4 mini-swe-agent (0 for none, or no messages); None
    when the core leaves the line to Python."""

def arrow_row_texts(
    array: Any, threads: int,
) -> tuple[bytes, npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The rows of an Arrow array (``__arrow_c_array__``) as JSON texts in one buffer:
    ``(text, starts, ends, rows)``, null rows left out, null struct fields dropped, written on
    ``threads`` worker threads; None when
    some value has no JSON text; ValueError for a malformed export; MemoryError when the
    memory of the text cannot be had."""

def own_token_costs(
    messages: Any,
    decide: Callable[[Any, int], float] | None = None,
) -> tuple[npt.NDArray[np.float64], list[int]] | None:
    """Per message of a list of exact dicts, its plain ``usage.tokens`` figure (a finite
    float or a 64-bit int >= 0), NaN where Python decides (indexes in the list); None when
    ``messages`` is not a list of exact dicts. With ``decide``, each message the core
    cannot cost is costed by ``decide(message, index)`` in its turn, oldest first (the
    list of indexes is then empty)."""

def newest_fitting(
    messages: list[Any],
    costs: npt.NDArray[np.float64],
    first: int,
    limit: float,
    floor: float,
) -> tuple[list[dict[str, Any]], float]:
    """build_thread's selection without ``inclusive``: the newest messages of
    ``messages[first:]`` within ``limit`` (the newest ``floor`` kept whatever they cost), as
    copies carrying their usage, oldest first, and their total."""

def _set_screen_bits(bits: int) -> None:
    """Test hook: keep only the low ``bits`` bits of the suffix screens (64 restores)."""

def _tape_equal(a: bytes, b: bytes) -> bool | None:
    """Test hook: whether two JSON texts' values are equal as JavaScript compares them, told
    by walking their tapes; None where the tape declines either text."""

def _plainly_equal(a: Any, b: Any) -> bool | None:
    """Test hook: whether ``a`` and ``b`` are equal as JavaScript compares them, told by
    walking them where both are plain JSON forms; None where their encodings must tell."""

def one_field_floor(threads: list[Any]) -> int:
    """Benchmark floor: look up ``type`` in every message; how many have it."""

def describe_thread(
    messages: Any,
    options: CoreOptions,
    min_units: int,
    window: int,
    max_unique_ratio: float,
) -> int:
    """1/2/3/4 for suffix, activity tail, result run, runaway text (with these resolved
    text-run options), else 0."""

def kept_buffer_bytes() -> int | None:
    """Bytes of buffers describe_thread keeps on this OS thread for its next call, or None."""

def most_kept_buffer_bytes() -> int:
    """The most describe_thread keeps from one call to the next."""

def room_for(bytes: int) -> bool:
    """Whether that much memory can be had now (asked for and given back at once)."""
def json_separators(text: bytes) -> int:
    """The commas and opening brackets of a JSON text outside its strings."""
def mask_text(text: str) -> str:
    """``vthread.volatile.mask_text``: the text with its volatile values masked."""

def masked_thread(messages: list[Any] | tuple[Any, ...],
                  python_copy: Callable[[Any], Any]) -> list[Any]:
    """``vthread.volatile.masked_thread`` of a list or tuple; ``python_copy`` copies each
    message the core leaves to Python."""

def tape_parse_floor(lines: list[bytes]) -> int:
    """Benchmark floor: parse every line into the core's tape; how many it took."""

def screen(value: Any) -> int:
    """A value's screen: equal for values JavaScript calls equal (a test hook)."""

def loop_tokens(messages: Any, begin: int) -> float | None:
    """``math.fsum`` of the ``usage.tokens`` figures that count of ``messages[begin:]``, NaN
    when none does (None when a figure is one Python reads: an integer beyond 64 bits, a
    value of a type JSON has no word for)."""
def span_tokens_of_lines(lines: list[bytes | memoryview], owners: list[int], starts: list[int],
                         ends: list[int], written: bool = False) -> list[float | None]:
    """:func:`loop_tokens` of messages ``starts[i]`` to ``ends[i]`` of native JSON line
    ``lines[owners[i]]`` (owners in order; each line read once), NaN where none carries a
    figure, None where the core does not read the line or the span, or a figure is one
    Python reads. ``written``: lines the core wrote, one holding no ``"usage"`` not
    parsed (NaN)."""
def attribute_lines(lines: list[bytes | memoryview], codes: list[int], begins: list[int],
                    periods: list[int], repetitions: list[int], messages_key: str | None = None,
                    id_key: str | None = None, kept: KeptTapes | None = None
                    ) -> dict[str, Any]:
    """The loop attribution of looping native lines (``loop_start``, ``period``,
    ``repetitions``, ``signature``, ``loop_tokens`` arrays, ``excerpts``), and the positions
    of the lines left to Python (``declined``). A line is a ``bytes`` or a read-only view of
    one. ``kept``: :func:`scan_lines`' tapes of the same lines (at the same addresses),
    taken (all of them) instead of parsing those lines again; ``from_kept`` counts the
    lines read from them."""
class KeptTapes:
    """Tapes :func:`scan_lines` kept, or format detection (:func:`line_format_evidence`'s
    ``keep_into``), each holding the ``bytes`` its line lies in; made empty, and a copy
    (pickled for a worker process) holds none."""
    def __len__(self) -> int: ...
    def __reduce__(self) -> tuple[type[KeptTapes], tuple[()]]: ...
def anywhere_loop_parts(threads: list[Any], owners: list[int], starts: list[int],
                        ends: list[int], periods: list[int], kinds: list[int]) -> dict[str, Any]:
    """Signature, excerpt and token total of loops found anywhere (loop ``i`` in
    ``threads[owners[i]]``) as ``vthread.anywhere.loop_records`` makes them: ``signature``
    and ``loop_tokens`` arrays (NaN: no figure), ``excerpts`` (None where declined) and the
    loops left to Python (``declined``). Owners come in order (a ValueError otherwise)."""
def anywhere_loop_parts_of_lines(lines: list[bytes | memoryview], owners: list[int],
                                 starts: list[int], ends: list[int], periods: list[int],
                                 kinds: list[int], messages_key: str | None = None,
                                 id_key: str | None = None) -> dict[str, Any]:
    """:func:`anywhere_loop_parts` of threads given as their native JSON lines (read under
    the keys as :func:`scan_lines` read them); a loop of a line the core does not read is
    declined."""
def line_key_numbers(lines: list[bytes | memoryview], messages_key: str | None = None,
                     id_key: str | None = None, digits_folded: bool = False
                     ) -> npt.NDArray[np.int64] | None:
    """The exact keys (``vthread.fingerprint.message_key``; with ``digits_folded``,
    ``vthread.anywhere.reply_key``) of the messages of the one native JSON line in
    ``lines``, numbered in order of first appearance (equal numbers exactly for equal keys);
    None when the core does not read the line."""
def line_message_spans(lines: list[bytes | memoryview], messages_key: str | None = None,
                       id_key: str | None = None) -> npt.NDArray[np.int64] | None:
    """Where each message of the one native JSON line in ``lines`` lies in it: its JSON
    text's start and end byte offsets, flat (start, end, start, end, ...); None when the core
    does not read the line."""
def long_runs(values: npt.NDArray[np.uint64], bounds: npt.NDArray[np.int64], shortest: int
              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64],
                         npt.NDArray[np.int64]]:
    """Every run of each group ``values[bounds[g]:bounds[g + 1]]`` whose block is at least
    ``shortest`` values long and repeats no shorter block: a maximal stretch ``[start,
    stop)`` (indices into ``values``) at least two blocks long, each value equal to the one
    a block (``period``) later. Columns ``groups``, ``periods``, ``starts``, ``stops``,
    ordered by group, then period, then start. ValueError for bounds not ascending within
    ``values``."""
def attribute_threads(threads: list[Any], codes: list[int], begins: list[int],
                      periods: list[int], repetitions: list[int]) -> dict[str, Any]:
    """``attribute_lines`` over Python threads; rows whose values Python reads otherwise
    than by their content are ``declined``."""
class DocumentSplitter:
    """A JSON document split into its elements as its bytes arrive."""

    def __init__(self, messages_key: str | None = None) -> None: ...
    def feed(
        self, block: bytes
    ) -> tuple[list[bytes], npt.NDArray[np.bool_], npt.NDArray[np.int64]] | None:
        """The elements the block completed: their texts, whether each is plain JSON, their
        places (offset, line, column each); None once the document is known to be no array
        of runs."""
    @property
    def done(self) -> bool:
        """Whether the split is over before the document's end."""
    def finish(
        self,
    ) -> tuple[tuple[str, tuple[int, int, int]] | None, bool,
               tuple[bytes, tuple[int, int, int]] | None]:
        """(why and where the split stopped, or None; whether the array closed; the element
        the document ended in and its place, or None)."""

def canonical_json(data: bytes) -> bytes:
    """``canonical(json.loads(data))`` read straight from the bytes of one JSON text.

    Raises ValueError with ``json.loads``' own message where it rejects ``data``.
    """

def fingerprint_json(data: bytes) -> int:
    """Unsigned 64-bit XXH3 of ``canonical_json(data)``."""

def tape_canonical(data: bytes) -> bytes | None:
    """The canonical encoding of one line as the CLI's tape reads it; None where it declines."""

class GuardCore:
    """The guard's state machine (src/guard.rs); ``vthread.Guard`` subclasses it."""

    def __new__(cls, options: Any) -> Self: ...
    def push(self, text: object) -> bool: ...
    def push_bytes(self, data: Buffer, *, min_chars_per_character: bool = False
                   ) -> tuple[int, int] | None: ...
    def reset(self) -> None: ...
    def _is_fresh(self) -> bool: ...
    def _state(self) -> bytes: ...
    def _restore(self, state: bytes) -> None: ...
    def _watch_with(self, options: Any) -> None: ...
    def __copy__(self) -> Self: ...
    def __deepcopy__(self, memo: Any) -> Self: ...
    @property
    def options(self) -> Any: ...
    @property
    def reason(self) -> Any: ...
    @property
    def trip_offset(self) -> int | None: ...
    def _set_hash_bits(self, bits: int) -> None: ...

def scan_texts(
    texts: list[object], options: Any, hash_bits: int = 64
) -> list[tuple[int, int, str, int, str, float, float] | None]: ...

def _normalize_word(text: str) -> str:
    """Test hook: ``vthread.guard.normalize(text)`` made in the core (pairs joined first)."""

def python_reads_json(text: bytes) -> bool:
    """Whether ``text`` is one JSON value Python's ``json`` reads, or would read but for its
    recursion limit (any depth; strict strings, ``NaN`` and ``Infinity`` numbers)."""

def json_top_members(text: bytes) -> list[tuple[bytes, bytes]] | None:
    """When ``text`` is JSON (as :func:`python_reads_json` tells), the texts of its top-level
    object's members, each (its key, quotes included; its value), in order (none when it is
    no object); else None."""

def has_repeated_text_runs(
    texts: Iterable[object], min_units: int, window: int, max_unique_ratio: float
) -> npt.NDArray[np.bool_]:
    """``vthread.textrun.has_repeated_text_run`` of each text with resolved options, read in
    place with the GIL released; TypeError for a bare ``str``."""

def message_screens(threads: list[Any], text_run: tuple[int, int, float],
                    keep_read: bool = False) -> dict[str, Any]:
    """Per-message screens (u64), reply screens (u64: a user message's with the numbers in
    its text folded), roles (i8: 1 agent, 2 request, 3 response, 4 user, 0 other), whether a
    tool response may have failed (bool, a superset of ``vthread.anywhere.failed``), thread
    offsets, and the rows of agent messages whose text's prose (``vthread.anywhere.prose``)
    runs away under the resolved text-run options ``text_run`` (min_units, window,
    max_unique_ratio; a ValueError otherwise); with ``keep_read``, ``threads``: a tuple per
    thread of the messages read."""
    ...
