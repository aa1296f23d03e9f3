//! The compiled core of vthread. This file only registers the Python module; every concept
//! lives in a module of its own: `adapters` (OpenAI, Anthropic and Responses runs as native
//! lines), `canonical` (the JavaScript-equal encoding), `objects` (reading Python values),
//! `fingerprint` (XXH3-64 of encodings), `columns` (a batch of threads as flat arrays),
//! `suffix` (the repeated-suffix pass over them), `arena` (the exact ids both intern),
//! `textrun` (the text-run check over many texts) and `unicode` (JavaScript's whitespace and
//! the guard's word normal form, from the tables that `tools/unicode_tables.py` generates
//! into `unicode_tables`).

use std::collections::HashMap;

use pyo3::prelude::*;

pub mod adapters;
pub mod anywhere;
pub mod arena;
pub mod array_split;
pub mod arrow_rows;
pub mod attribution;
pub mod canonical;
mod chunk_rows;
pub mod columns;
pub mod costs;
pub mod document;
pub mod fingerprint;
pub mod guard;
mod guard_py;
mod json_py;
pub mod json_reader;
pub mod json_syntax;
pub mod kept_tape;
pub mod masking;
pub mod node;
pub mod objects;
pub mod pool;
pub mod runs;
pub mod suffix;
pub mod textrun;
pub mod threads;
pub mod unicode;
mod unicode_tables;
pub mod volatile;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::ffi;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};

/// `values` as a NumPy array, NumPy and its C API loaded first when they are not yet.
///
/// The core's module does not import NumPy, so that what needs no array (`vthread guard`,
/// `vthread.fingerprint`) starts without it. The numpy crate loads NumPy's C API on its
/// first array and panics if that raises (a `PanicException`, which neither `except
/// KeyboardInterrupt` nor `except Exception` catches). Its loading runs Python code (NumPy's
/// version read by `numpy.lib.NumpyVersion`), at which a signal is handled: one pending from
/// the work before (Ctrl-C, SIGTERM), or one a thread waiting for the GIL sends as soon as
/// that code lets it run (`_thread.interrupt_main`). So that Python code is run first through
/// the crate's fallible `get_array_module`, where an exception is an ordinary error, the
/// pending signals are run, and what is left of the loading (an import already done and an
/// attribute read) runs no Python code. Every array the core hands Python is made here
/// (clippy's `disallowed-methods` holds the crate to it).
pub(crate) fn numpy_array<'py, T: numpy::Element>(
    py: Python<'py>,
    values: Vec<T>,
) -> PyResult<Bound<'py, PyArray1<T>>> {
    static LOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !LOADED.load(std::sync::atomic::Ordering::Acquire) {
        py.import("numpy")?;
        numpy::get_array_module(py)?;
        py.check_signals()?;
        #[allow(clippy::disallowed_methods)] // the crate's loading, here and nowhere else
        drop(numpy::IntoPyArray::into_pyarray(Vec::<u8>::new(), py));
        LOADED.store(true, std::sync::atomic::Ordering::Release);
    }
    #[allow(clippy::disallowed_methods)] // the one place arrays are made
    Ok(numpy::IntoPyArray::into_pyarray(values, py))
}

/// `value`'s canonical encoding (`vthread._jsvalue.canonical`'s text, as ASCII bytes).
#[pyfunction(name = "canonical")]
fn canonical_of<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = objects::canonical_bytes(value)?;
    new_bytes(value.py(), &bytes)
}

/// The unsigned 64-bit XXH3 fingerprint of `value`'s canonical encoding.
#[pyfunction(name = "fingerprint")]
fn fingerprint_of(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(fingerprint::of_canonical(&objects::canonical_bytes(value)?))
}

/// The cycle options as `vthread._heuristics.core_options` hands them over, one tuple:
/// (min_repetitions, min_pattern_length, max_pattern_length or None, min_result_repetitions).
#[derive(FromPyObject)]
struct CoreOptions(usize, usize, Option<usize>, usize);

impl From<CoreOptions> for columns::ScanOptions {
    fn from(options: CoreOptions) -> Self {
        let CoreOptions(min_repetitions, min_pattern_length, max_pattern_length, needed) = options;
        columns::ScanOptions {
            suffix: suffix::SuffixOptions {
                min_repetitions,
                min_pattern_length,
                max_pattern_length,
            },
            needed_results: needed,
        }
    }
}

/// The core's texts (read from Python strings or JSON) as a list of Python strings.
fn text_list(py: Python<'_>, texts: Vec<node::Text>) -> PyResult<Bound<'_, PyList>> {
    let texts = texts
        .into_iter()
        .map(|text| text.into_python(py))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, texts)
}

fn columns_dict<'py>(py: Python<'py>, read: columns::Columns) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("lengths", numpy_array(py, read.lengths)?)?;
    out.set_item("suffix_period", numpy_array(py, read.suffix_period)?)?;
    out.set_item("suffix_copies", numpy_array(py, read.suffix_copies)?)?;
    out.set_item("tail_length", numpy_array(py, read.tail_length)?)?;
    out.set_item("tail_offsets", numpy_array(py, read.tail_offsets)?)?;
    out.set_item("tail_kind", numpy_array(py, read.tail_kind)?)?;
    out.set_item("tail_kind_id", numpy_array(py, read.tail_kind_id)?)?;
    out.set_item("tail_name", numpy_array(py, read.tail_name)?)?;
    out.set_item("tail_arguments", numpy_array(py, read.tail_arguments)?)?;
    out.set_item("tail_result", numpy_array(py, read.tail_result)?)?;
    out.set_item("result_run", numpy_array(py, read.result_run)?)?;
    out.set_item("result_start", numpy_array(py, read.result_start)?)?;
    out.set_item("result_period", numpy_array(py, read.result_period)?)?;
    out.set_item("result_copies", numpy_array(py, read.result_copies)?)?;
    out.set_item("text_thread", numpy_array(py, read.text_thread)?)?;
    out.set_item("text_index", numpy_array(py, read.text_index)?)?;
    out.set_item("texts", text_list(py, read.texts)?)?;
    Ok(out)
}

/// Per-message screens and roles of a batch, and the agent messages whose prose runs away
/// under the given resolved text-run options (see `anywhere.rs`): a dict of NumPy arrays,
/// and with `keep_read`, `threads`: the messages read (`threads::ReadThreads`). Errors name
/// the thread and message index.
#[pyfunction]
#[pyo3(signature = (threads, text_run, keep_read=false))]
fn message_screens<'py>(
    threads: &Bound<'py, PyList>,
    text_run: (usize, usize, f64),
    keep_read: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let (read, messages) =
        threads::message_columns_of_objects(threads, looking_anywhere(text_run)?, keep_read)?;
    let out = screens_dict(threads.py(), read)?;
    if let Some(messages) = messages {
        out.set_item("threads", messages)?;
    }
    Ok(out)
}

/// A batch's message screens for Python (`vthread.anywhere.find_loops_in`).
fn screens_dict(py: Python<'_>, read: anywhere::MessageColumns) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("offsets", numpy_array(py, read.offsets)?)?;
    out.set_item("screens", numpy_array(py, read.screens)?)?;
    out.set_item("reply_screens", numpy_array(py, read.reply_screens)?)?;
    out.set_item("roles", numpy_array(py, read.roles)?)?;
    out.set_item("may_fail", numpy_array(py, read.may_fail)?)?;
    out.set_item("text_rows", numpy_array(py, read.text_rows)?)?;
    Ok(out)
}

/// Read a batch of threads into the columns the NumPy heuristics run over (see
/// `columns.rs`): a dict of NumPy arrays, and with `keep_read`, `threads`: the messages read
/// (`threads::ReadThreads`). Errors name the thread and message index; with `one` (a single
/// call's thread, the batch's only one), the message index alone.
#[pyfunction]
#[pyo3(signature = (threads, options, keep_read=false, one=false))]
fn scan_columns<'py>(
    threads: &Bound<'py, PyList>,
    options: CoreOptions,
    keep_read: bool,
    one: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let options = columns::ScanOptions::from(options);
    let (read, messages) = threads::columns_of_objects(threads, &options, keep_read, one)?;
    let out = columns_dict(threads.py(), read)?;
    if let Some(messages) = messages {
        out.set_item("threads", messages)?;
    }
    Ok(out)
}

/// One thread decided in the core: 1, 2, 3 or 4 for a repeated suffix, activity tail,
/// result run or runaway text (the text-run check of the last five spoken messages' texts,
/// with the given resolved text-run options), else 0. Errors name the message index.
#[pyfunction]
fn describe_thread(
    messages: &Bound<'_, PyAny>,
    options: CoreOptions,
    min_units: usize,
    window: usize,
    max_unique_ratio: f64,
) -> PyResult<u8> {
    let py = messages.py();
    let text_options = text_run_options(min_units, window, max_unique_ratio)?;
    let options = columns::ScanOptions::from(options);
    threads::with_columns_of_thread(messages, &options, |read, scratch| {
        let code = read.single_verdict(options.needed_results);
        if code != 0 {
            return Ok(code);
        }
        for text in read.texts.drain(..) {
            let text = text.into_python(py)?.into_bound(py);
            if let Some(text) = node::text_of(&text)? {
                let points = objects::code_points(text);
                if textrun::has_repeated_text_run(points, &text_options, scratch) {
                    return Ok(TEXT_RUN);
                }
            }
        }
        Ok(0)
    })
}

/// The bytes of buffers `describe_thread` keeps on this OS thread for its next call (None
/// when it keeps none): for the tests of what it keeps (`threads::with_columns_of_thread`).
#[pyfunction]
fn kept_buffer_bytes() -> Option<usize> {
    threads::kept_bytes()
}

/// The most `describe_thread` keeps (`threads::SPARE_BYTES`).
#[pyfunction]
fn most_kept_buffer_bytes() -> usize {
    threads::SPARE_BYTES
}

/// Whether `bytes` of memory can be had now (asked for and given back at once, address space
/// only): `vthread._exact_json` asks it before orjson reads a long text, since orjson ends
/// the process where an allocation fails.
#[pyfunction]
fn room_for(bytes: usize) -> bool {
    threads::can_have(bytes)
}

/// The commas and opening brackets of a JSON text outside its strings (`json_syntax::
/// separators`), counted with the GIL released.
#[pyfunction]
fn json_separators(py: Python<'_>, text: &[u8]) -> usize {
    py.detach(|| json_syntax::separators(text))
}

/// `vthread.volatile.mask_text`: the text with its volatile values masked (`volatile.rs`);
/// an exact `str` in which nothing is masked is returned as it is.
#[pyfunction]
fn mask_text<'py>(text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    objects::masked_text(text)
}

/// The `vthread.scan` code of a runaway text (the fourth heuristic).
const TEXT_RUN: u8 = 4;

/// Text-run options as `vthread._options.text_run_options` resolves them; a ValueError
/// otherwise (the check relies on them).
fn text_run_options(
    min_units: usize,
    window: usize,
    max_unique_ratio: f64,
) -> PyResult<textrun::TextRunOptions> {
    let options = textrun::TextRunOptions {
        min_units,
        window,
        max_unique_ratio,
    };
    if !options.is_resolved() {
        return Err(PyValueError::new_err(format!(
            "text-run options must be resolved (min_units >= 2, window >= min_units, \
             0 < max_unique_ratio <= 1), got {min_units}, {window}, {max_unique_ratio}"
        )));
    }
    Ok(options)
}

/// The text-run options looking anywhere checks agent messages with, as Python passes them
/// (`vthread.anywhere.core_text_run`: min_units, window, max_unique_ratio), resolved.
fn looking_anywhere(text_run: (usize, usize, f64)) -> PyResult<textrun::TextRunOptions> {
    let (min_units, window, max_unique_ratio) = text_run;
    text_run_options(min_units, window, max_unique_ratio)
}

/// The format a chunk's lines are written in: None for native, else the one translated.
fn line_format(name: &str) -> PyResult<Option<adapters::Format>> {
    match (name, adapters::Format::named(name)) {
        ("native", _) => Ok(None),
        (_, Some(format)) => Ok(Some(format)),
        _ => Err(PyValueError::new_err(format!(
            "unknown format {name:?}; expected native, openai, anthropic, responses, \
             mini-swe-agent or swe-agent"
        ))),
    }
}

/// Read a chunk of JSONL lines (each without its newline) into columns, with per line the
/// record's id text and message count, and the usage figures; a line that needs Python's
/// `json` or its adapters is listed in `declined` (an empty thread in its row). Lines in the
/// `openai`, `anthropic` or `responses` format are translated to native lines first
/// (`adapters.rs`); those are returned too (`native`, `native_ends`), with the source message of every native
/// message (`sources`). The lines are read on `threads` worker threads with the GIL released.
/// A run object's messages and id are found under `messages_key` and `id_key` when given
/// (`--messages-key`, `--id-key`), as `documents.read_run` finds them. With `mask_volatile`
/// each thread read is its masked copy (`masking.rs`), returned as a native line as a
/// translated one is (a native line's messages are their own sources). With `anywhere`
/// (the text-run options of `message_screens`), each thread's message screens are read
/// instead of its cycle columns (`anywhere`: the dict `message_screens` makes, a thread a
/// line; the cycle columns hold empty threads).
///
/// With `block` (a `bytes` read of a file and the starts and ends of its lines in it), the
/// chunk's rows are `lines` and then those slices, read in place: `vthread scan` hands the
/// core each read whole rather than a `bytes` per line. With `declared_wins` (the file's
/// chat format was detected, not given), each run is translated in the format it declares
/// or shows (`adapters::run_reading_format`: a run object declaring itself a mini-swe-agent
/// run as one, a run showing SWE-agent's actions as SWE-agent's).
#[pyfunction]
#[pyo3(signature = (lines, options, count_tokens, threads, format="native",
                    messages_key=None, id_key=None, mask_volatile=false, anywhere=None,
                    block=None, detected=None, declared_wins=false))]
#[allow(clippy::too_many_arguments)]
fn scan_lines<'py>(
    lines: &Bound<'py, PyList>,
    options: CoreOptions,
    count_tokens: bool,
    threads: usize,
    format: &str,
    messages_key: Option<&str>,
    id_key: Option<&str>,
    mask_volatile: bool,
    anywhere: Option<(usize, usize, f64)>,
    block: Option<chunk_rows::BlockArgument<'py>>,
    detected: Option<Vec<Bound<'py, KeptTapes>>>,
    declared_wins: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let anywhere = anywhere.map(looking_anywhere).transpose()?;
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: id_key,
    };
    let py = lines.py();
    let format = line_format(format)?;
    let options = columns::ScanOptions::from(options);
    let rows = chunk_rows::ChunkRows::new(lines, block)?;
    let views = rows.views();
    // Detection's tapes of the chunk's lines, taken (a holder another thread is reading at
    // this moment is passed over: its lines are parsed afresh), and the references they
    // held, let go of once the reading is over, with the GIL held.
    let mut owners = Vec::new();
    let mut tapes = HashMap::new();
    for holder in detected.iter().flatten() {
        if let Ok(mut holder) = holder.try_borrow_mut() {
            let (taken, held) = holder.take();
            tapes.extend(taken);
            owners.extend(held);
        }
    }
    let detected = (!tapes.is_empty()).then(|| threads::DetectedTapes::new(tapes));
    let reading = threads::LineReading {
        options: &options,
        count_tokens,
        keys,
        mask_volatile,
        anywhere,
        keep_tapes: true,
        detected: detected.as_ref(),
        declared_wins,
    };
    let mut chunk = threads::columns_of_lines(py, &views, reading, threads, format)?;
    let from_detected = detected.as_ref().map_or(0, threads::DetectedTapes::taken);
    drop(detected);
    drop(owners);
    let kept = std::mem::take(&mut chunk.kept);
    let out = chunk_dict(py, chunk)?;
    if from_detected > 0 {
        out.set_item("from_detected", from_detected)?;
    }
    if !kept.is_empty() {
        let tapes = kept
            .into_iter()
            .map(|(offset, items)| items.owned_by(rows.owner(offset)))
            .collect();
        let kept = KeptTapes {
            tapes,
            ..KeptTapes::default()
        };
        out.set_item("kept", Bound::new(py, kept)?)?;
    }
    Ok(out)
}

/// The tapes `scan_lines` kept of the lines whose threads may loop, for `attribute_lines`
/// of the looping ones, which then parses none of them again. Each holds a reference to the
/// `bytes` its line lies in (the line's own, or the read it is a slice of): while it is
/// kept, that buffer lives unchanged (`bytes` is immutable), so a line found at its address
/// with its length is the text the tape was parsed from. Read and
/// taken only with the GIL held, so PyO3's borrow of the object is all the locking it needs.
///
/// Made empty from Python, it holds the tapes format detection makes of a chunk's first
/// lines (`line_format_evidence(keep_into=)`), for `scan_lines(detected=)` of that chunk to
/// take: at most `DETECTED_LINE_BYTES` of lines, each shorter than the long line
/// `kept_tape` keeps. A copy (pickled for a worker process) holds none.
#[pyclass(module = "vthread._core", weakref)]
#[derive(Default)]
struct KeptTapes {
    tapes: Vec<document::KeptItems>,
    /// The bytes of the lines detection kept tapes of.
    line_bytes: usize,
}

/// The most bytes of lines whose detection tapes one `KeptTapes` holds: more than a chunk
/// of small lines (`CHUNK_BYTES` in `cli.py`) holds.
const DETECTED_LINE_BYTES: usize = 8 << 20;
/// The most bytes a held tape takes for a byte of its line: a line of text makes a tape of
/// about its size (an item of 16 bytes for about every 16 of text), so that the memory held
/// for a chunk's scan stays within twice the chunk's own (whose lines are held anyway) and
/// `SMALL_TAPE_BYTES` a line.
const TAPE_BYTES_PER_LINE_BYTE: usize = 2;
/// Bytes any held tape may take beyond that (a short line's few items).
const SMALL_TAPE_BYTES: usize = 1 << 10;

#[pymethods]
impl KeptTapes {
    #[new]
    fn new() -> Self {
        KeptTapes::default()
    }

    /// The tapes still kept (`attribute_lines` takes them all).
    fn __len__(&self) -> usize {
        self.tapes.len()
    }

    /// An empty holder: a tape is of this process's memory.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, ()) {
        (slf.get_type(), ())
    }
}

impl KeptTapes {
    /// Every tape, taken, by the address of its line, and the references they held (to be
    /// dropped with the GIL held).
    fn take(&mut self) -> (HashMap<usize, document::KeptItems>, Vec<Py<PyBytes>>) {
        let mut by_place = HashMap::new();
        let mut owners = Vec::new();
        self.line_bytes = 0;
        for items in self.tapes.drain(..) {
            let (items, owner) = items.without_owner();
            owners.extend(owner);
            by_place.insert(items.place(), items);
        }
        (by_place, owners)
    }
}

/// The positions of the first `most` newlines of `data` from byte `start` on (an int64
/// array): where `vthread scan` cuts a read of a file into its lines, found at SIMD speed
/// with no Python object per line.
#[pyfunction]
fn line_ends<'py>(
    data: &Bound<'py, PyBytes>,
    start: usize,
    most: usize,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    numpy_array(
        data.py(),
        chunk_rows::newline_positions(data.as_bytes(), start, most),
    )
}

/// `scan_lines` over rows that are slices `data[starts[i]..ends[i]]` of one read-only buffer
/// (an Arrow string column's data buffer, say): no Python object per row. A slice outside
/// the buffer, or ends before starts, is a ValueError naming the row. With `mask_volatile`,
/// each row's masked copy is read and returned as a native line, as `scan_lines` does; with
/// `anywhere`, each row's message screens, as `scan_lines` reads them.
#[pyfunction]
#[pyo3(signature = (data, starts, ends, options, count_tokens, threads,
                    mask_volatile=false, anywhere=None))]
#[allow(clippy::too_many_arguments)]
fn scan_slices<'py>(
    data: &Bound<'py, PyAny>,
    starts: PyReadonlyArray1<'py, i64>,
    ends: PyReadonlyArray1<'py, i64>,
    options: CoreOptions,
    count_tokens: bool,
    threads: usize,
    mask_volatile: bool,
    anywhere: Option<(usize, usize, f64)>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = data.py();
    let anywhere = anywhere.map(looking_anywhere).transpose()?;
    let options = columns::ScanOptions::from(options);
    // A `bytes` is read from its own storage, a view of one in place; any other buffer
    // (Arrow exports its buffers writable; a read-only view of a `bytearray` can be written
    // through the `bytearray`) is copied, once, whole: another Python thread could write to
    // it while the rows are read with the GIL released.
    let buffer: PyBuffer<u8>;
    let copied: Vec<u8>;
    let bytes: &[u8] = match data.cast::<PyBytes>() {
        Ok(data) => data.as_bytes(),
        Err(_) => {
            buffer = PyBuffer::<u8>::get(data)?;
            if !buffer.is_c_contiguous() {
                return Err(PyValueError::new_err(
                    "data must be a contiguous buffer (bytes, an Arrow buffer)",
                ));
            }
            match chunk_rows::is_view_of_bytes(data)
                .then(|| chunk_rows::readonly_bytes(&buffer))
                .flatten()
            {
                Some(bytes) => bytes,
                None => {
                    copied = buffer.to_vec(py)?;
                    &copied
                }
            }
        }
    };
    let views = chunk_rows::slices_of(bytes, starts.as_slice()?, ends.as_slice()?)?;
    let reading = threads::LineReading {
        options: &options,
        count_tokens,
        keys: adapters::RunKeys::default(),
        mask_volatile,
        anywhere,
        keep_tapes: false,
        detected: None,
        declared_wins: false,
    };
    let chunk = threads::columns_of_lines(py, &views, reading, threads, None)?;
    chunk_dict(py, chunk)
}

/// What the run a line holds says of its file's format (`documents.run_format_evidence` of
/// the parsed line; `adapters::format_evidence`), read with the GIL released: `(True, None)`
/// when it has no messages to judge by, `(True, (format or None, decisive))`, or
/// `(False, None)` for a line the core leaves to Python (one the tape does not read as
/// `json.loads` does). With `keep_tape`, the tape of a long line is kept for the next parse
/// of the same line (`kept_tape`: the scan that follows the detection), until `release_kept_tape`.
/// With `keep_into` (a `KeptTapes`), the tape of a shorter line is held there instead, for
/// `scan_lines(detected=)` of the chunk the line is in, while it holds less than
/// `DETECTED_LINE_BYTES` of lines. With `undeclared`, a run declaring itself a mini-swe-agent
/// run, or showing SWE-agent's actions, says nothing (`(True, None)`:
/// `adapters::undeclared_format_evidence`).
#[pyfunction]
#[pyo3(signature = (line, messages_key=None, keep_tape=false, keep_into=None, undeclared=false))]
fn line_format_evidence(
    line: &Bound<'_, PyBytes>,
    messages_key: Option<&str>,
    keep_tape: bool,
    keep_into: Option<&Bound<'_, KeptTapes>>,
    undeclared: bool,
) -> (bool, Option<adapters::Evidence>) {
    let evidence = if undeclared {
        adapters::undeclared_format_evidence
    } else {
        adapters::format_evidence
    };
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: None,
    };
    let size = line.as_bytes().len();
    if !threads::memory_for(size, false) {
        return (false, None); // Python's reading raises the MemoryError the CLI reports
    }
    let holder = keep_into
        .filter(|_| size < kept_tape::KEEP_FROM_BYTES)
        .and_then(|holder| holder.try_borrow_mut().ok())
        .filter(|holder| holder.line_bytes + size <= DETECTED_LINE_BYTES);
    let found = match holder {
        Some(mut holder) => {
            kept_tape::judged_and_handed(line, true, |tape| evidence(tape, keys)).map(
                |(found, items)| {
                    // (a line of many small values, numbers most often, makes a tape of several
                    // times its size: parsed again by the scan, not held that large)
                    let limit = TAPE_BYTES_PER_LINE_BYTE * size + SMALL_TAPE_BYTES;
                    if let Some(items) = items.filter(|items| items.allocated() <= limit) {
                        holder.line_bytes += size;
                        holder.tapes.push(items);
                    }
                    found
                },
            )
        }
        None => kept_tape::judged_and_kept(line, keep_tape, |tape| evidence(tape, keys)),
    };
    match found {
        Ok(Ok(found)) => (true, found),
        Ok(Err(document::Declined)) | Err(document::Declined) => (false, None),
    }
}

/// Whether a line may be one of `vthread scan`'s records (`_cli_report._may_be_record`, the
/// rule and why it is safe): it holds a `\u` escape, or both keys `"file"` and `"line"` as
/// written. memchr's searches: a directory scan screens every file's first line, and
/// Python's search for `\u` stopped at every backslash of a line's JSON escapes (about
/// 12 µs a 10 kB line, against about 1 here). The GIL is kept.
#[pyfunction]
fn may_be_record(line: &[u8]) -> bool {
    use memchr::memmem::find;
    find(line, b"\\u").is_some()
        || (find(line, b"\"file\"").is_some() && find(line, b"\"line\"").is_some())
}

/// Whether the run a line holds may be decisively in a chat format (`adapters::may_settle`):
/// False only when `line_format_evidence` surely does not settle one. The GIL is kept: the
/// check takes about a microsecond, less than releasing it costs.
#[pyfunction]
fn may_settle(line: &[u8]) -> bool {
    adapters::may_settle(line)
}

/// `adapters::line_marks` of each of `lines`, a byte each: whether it may settle a chat
/// format (`MAY_SETTLE`), may be a plain chat that reads otherwise in some chat format than
/// as OpenAI's (`MAY_READ_OTHERWISE`), may be a native thread (`MAY_BE_NATIVE`), the runs'
/// messages under `messages_key` (None: the keys a run's messages are looked for under).
/// One call for a chunk of lines, with the GIL kept: each takes about a microsecond. With
/// `block`, the rows are `lines` and then the lines of a read, as `scan_lines` takes them.
#[pyfunction]
#[pyo3(signature = (lines, messages_key=None, block=None))]
fn line_marks<'py>(
    lines: &Bound<'py, PyList>,
    messages_key: Option<&str>,
    block: Option<chunk_rows::BlockArgument<'py>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let rows = chunk_rows::ChunkRows::new(lines, block)?;
    let marks: Vec<u8> = rows
        .views()
        .into_iter()
        .map(|line| adapters::line_marks(line, messages_key))
        .collect();
    new_bytes(lines.py(), &marks)
}

/// `adapters::plain_reads_otherwise` of a plain chat's line: bits 1 (Anthropic), 2
/// (Responses), 4 (mini-swe-agent) for the chat formats it reads otherwise in than as
/// OpenAI's; None for a line the core leaves to Python.
#[pyfunction]
#[pyo3(signature = (line, messages_key=None))]
fn plain_reads_otherwise(line: &[u8], messages_key: Option<&str>) -> Option<u8> {
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: None,
    };
    adapters::plain_reads_otherwise(line, keys).ok()
}

/// The rows of an Arrow array (anything with `__arrow_c_array__`) as JSON texts in one buffer:
/// `(text, starts, ends, rows)`, row `rows[i]` being `text[starts[i]:ends[i]]`, null rows
/// left out, written on `threads` worker threads; None when some value has no JSON text (see
/// `arrow_rows`), and the caller reads the array through Python objects. A malformed export is a ValueError saying what is wrong;
/// a text whose memory cannot be had, a MemoryError.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn arrow_row_texts<'py>(
    array: &Bound<'py, PyAny>,
    threads: usize,
) -> PyResult<
    Option<(
        Bound<'py, PyBytes>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i64>>,
    )>,
> {
    use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
    use pyo3::types::{PyCapsule, PyCapsuleMethods};

    let py = array.py();
    let (schema, exported): (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>) =
        array.call_method0("__arrow_c_array__")?.extract()?;
    let schema = schema
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    let exported = exported
        .pointer_checked(Some(c"arrow_array"))?
        .cast::<FFI_ArrowArray>();
    // SAFETY: the capsules' names were checked, so they hold an exported schema and array;
    // the array is moved out of its capsule when imported (the capsule's destructor then sees
    // it released; a schema too deep to import leaves it there) and the schema only borrowed
    // while its capsule is alive.
    let imported = match unsafe { arrow_rows::import(exported.as_ptr(), schema.as_ref()) } {
        Ok(imported) => imported,
        // Left in its capsule, whose destructor releases it; Python reads it instead.
        Err(error) if error == arrow_rows::NESTED_TOO_DEEP => return Ok(None),
        Err(error) => {
            return Err(PyValueError::new_err(format!(
                "not a valid Arrow array: {error}"
            )))
        }
    };
    let rows = match py.detach(|| arrow_rows::row_texts(&imported, threads)) {
        Ok(rows) => rows,
        Err(arrow_rows::Unwritten::Declined) => return Ok(None),
        Err(arrow_rows::Unwritten::OutOfMemory) => {
            return Err(PyMemoryError::new_err(
                "not enough memory to write the array's rows as JSON text",
            ))
        }
    };
    Ok(Some((
        new_bytes(py, &rows.text)?,
        numpy_array(py, rows.starts)?,
        numpy_array(py, rows.ends)?,
        numpy_array(py, rows.rows)?,
    )))
}

/// A chunk's columns, per-line id texts and message counts, and usage figures, for Python
/// (and its message screens, read `anywhere`).
fn chunk_dict<'py>(py: Python<'py>, chunk: threads::ChunkColumns) -> PyResult<Bound<'py, PyDict>> {
    let out = columns_dict(py, chunk.columns)?;
    if let Some(anywhere) = chunk.anywhere {
        out.set_item("anywhere", screens_dict(py, anywhere)?)?;
    }
    // (each a line's id as JSON text, of any length: made as every text the core hands
    // Python is, a MemoryError where pyo3's conversion of a `String` would panic)
    let ids = chunk
        .lines
        .iter()
        .map(|line| new_string(py, &line.id_text))
        .collect::<PyResult<Vec<_>>>()?;
    let counts: Vec<i64> = chunk
        .lines
        .iter()
        .map(|line| line.messages as i64)
        .collect();
    let chat_first: Vec<bool> = chunk.lines.iter().map(|line| line.chat_first).collect();
    out.set_item("id_texts", PyList::new(py, ids)?)?;
    out.set_item("message_counts", numpy_array(py, counts)?)?;
    out.set_item("chat_first", numpy_array(py, chat_first)?)?;
    out.set_item("figures", numpy_array(py, chunk.figures)?)?;
    out.set_item("figures_odd", chunk.figures_odd)?;
    out.set_item("declined", numpy_array(py, chunk.declined)?)?;
    // (each format named as the CLI names it, as Python's reading of a line names it)
    let read_as_own: Vec<(i64, &str)> = chunk
        .read_as_own
        .iter()
        .map(|&(offset, format)| (offset, format.name()))
        .collect();
    out.set_item("read_as_own", PyList::new(py, read_as_own)?)?;
    if !chunk.native_ends.is_empty() {
        out.set_item("native", new_bytes(py, &chunk.native)?)?;
        out.set_item("native_ends", numpy_array(py, chunk.native_ends)?)?;
        let sources: Vec<i64> = chunk.sources.into_iter().map(i64::from).collect();
        out.set_item("sources", numpy_array(py, sources)?)?;
    }
    Ok(out)
}

/// One line's run in `format` (`openai`, `anthropic` or `responses`) as the core translates
/// it (its messages and id under the given keys): the native line `{"id": ..., "messages":
/// [...]}` and the source message of each native message, or None where the core leaves the
/// line to Python. For the tests that hold the translation to `vthread.adapters`.
#[pyfunction]
#[pyo3(signature = (line, format, messages_key=None, id_key=None))]
fn translate_line<'py>(
    line: &Bound<'py, PyBytes>,
    format: &str,
    messages_key: Option<&str>,
    id_key: Option<&str>,
) -> PyResult<Option<(Bound<'py, PyBytes>, Vec<u32>)>> {
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: id_key,
    };
    let Some(format) = line_format(format)? else {
        return Err(PyValueError::new_err(
            "translate_line takes openai, anthropic, responses, mini-swe-agent or swe-agent",
        ));
    };
    let (mut out, mut sources) = (Vec::new(), Vec::new());
    if adapters::translate_line(line.as_bytes(), format, keys, &mut out, &mut sources).is_err() {
        return Ok(None);
    }
    Ok(Some((new_bytes(line.py(), &out)?, sources)))
}

/// One native line's thread as the core reads it under `--mask-volatile` (its messages and
/// id under the given keys): the native line of its masked copy, or None where the core
/// leaves the line to Python. For the tests that hold it to `vthread.masked_thread`.
#[pyfunction]
#[pyo3(signature = (line, messages_key=None, id_key=None))]
fn mask_line<'py>(
    line: &Bound<'py, PyBytes>,
    messages_key: Option<&str>,
    id_key: Option<&str>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: id_key,
    };
    let mut out = Vec::new();
    if masking::masked_native_line(line.as_bytes(), keys, &mut out).is_none() {
        return Ok(None);
    }
    new_bytes(line.py(), &out).map(Some)
}

/// `vthread.replay.has_repeated_text_runs` with resolved options (a ValueError otherwise): one
/// bool per text of the iterable `texts` (a non-`str` or empty item is False). The texts' storage is borrowed under
/// the GIL, then read with it released, on every core (`textrun.rs`).
#[pyfunction]
fn has_repeated_text_runs<'py>(
    texts: &Bound<'py, PyAny>,
    min_units: usize,
    window: usize,
    max_unique_ratio: f64,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let py = texts.py();
    if texts.is_instance_of::<PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "has_repeated_text_runs() takes an iterable of texts, got a single str; wrap it in \
             a list",
        ));
    }
    let items: Vec<Bound<'py, PyAny>> = match texts.cast_exact::<PyList>() {
        Ok(list) => list.iter().collect(),
        Err(_) => texts.try_iter()?.collect::<PyResult<_>>()?,
    };
    // Only the tail is ever read; cutting it here keeps the views O(1) per text.
    let views: Vec<Option<textrun::CodePoints<'_>>> = items
        .iter()
        .map(|item| {
            Ok(node::text_of(item)?
                .map(|text| objects::code_points(text).last(textrun::TAIL_UNITS)))
        })
        .collect::<PyResult<_>>()?;
    let options = text_run_options(min_units, window, max_unique_ratio)?;
    // `items` holds a reference to every text, so the borrowed storage outlives the call.
    let answers = py.detach(|| textrun::has_repeated_text_runs(&views, &options));
    numpy_array(py, answers)
}

/// The screen of a value (see `node.rs`): equal for values JavaScript calls equal. For the
/// tests that hold it to that.
#[pyfunction]
fn screen(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    use node::Node;
    value.screen(&mut Vec::new())
}

/// `scan._loop_tokens`: the `math.fsum` of the `usage.tokens` figures that count of
/// `messages[begin:]` (`attribution.rs`, as a looping thread's record sums them), NaN when
/// none does; None when a figure is an integer beyond 64 bits or a value of a type other
/// than JSON's (a NumPy scalar, a `Decimal`), or a message raises when read: Python reads
/// those (`_messages.usage_tokens`).
#[pyfunction]
fn loop_tokens(messages: &Bound<'_, PyAny>, begin: usize) -> PyResult<Option<f64>> {
    let tail = messages
        .try_iter()?
        .skip(begin)
        .collect::<PyResult<Vec<_>>>()?;
    Ok(attribution::loop_tokens(&tail).ok())
}

/// The loop attribution of looping threads (`vthread.scan.attribute`, `attribution.rs`):
/// `lines[i]` a native line the core read, whose thread's loop the heuristics found with
/// `codes[i]`, `begins[i]`, `periods[i]` and `repetitions[i]`. Returns the record fields per
/// line (`loop_start`, `period`, `repetitions`, `signature`, `loop_tokens`, `excerpts`) and
/// the lines it leaves to Python (`declined`, whose fields are placeholders), computed with
/// the GIL released. Runs are found under `messages_key` and their lines read as
/// `documents.read_run` reads them (`id_key` as the lines were read). A line is a `bytes`,
/// or a read-only view of one (a `memoryview` of a slice of the read `scan_lines` read it
/// in, where its kept tape is found).
#[pyfunction]
#[pyo3(signature = (lines, codes, begins, periods, repetitions, messages_key=None, id_key=None, kept=None))]
#[allow(clippy::too_many_arguments)]
fn attribute_lines<'py>(
    lines: &Bound<'py, PyList>,
    codes: Vec<u8>,
    begins: Vec<usize>,
    periods: Vec<usize>,
    repetitions: Vec<usize>,
    messages_key: Option<&str>,
    id_key: Option<&str>,
    kept: Option<&Bound<'py, KeptTapes>>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = lines.py();
    let found = found_loops(
        lines.len(),
        ("lines", "line"),
        codes,
        begins,
        periods,
        repetitions,
    )?;
    let owned = chunk_rows::line_buffers(lines)?;
    let views: Vec<&[u8]> = owned.iter().map(|line| line.as_bytes()).collect();
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: id_key,
    };
    // Taken only here, once per chunk; were it borrowed, each line is parsed afresh.
    let (mut kept, owners) = kept
        .and_then(|kept| kept.try_borrow_mut().ok())
        .map(|mut kept| kept.take())
        .unwrap_or_default();
    let mut from_kept = 0;
    let attributed: Vec<Option<attribution::Attributed>> = py.detach(|| {
        views
            .iter()
            .enumerate()
            .map(|(row, line)| {
                let text = simdutf8::basic::from_utf8(line).ok()?;
                // The tape scan_lines made of this very line, or a parse afresh (no tape kept,
                // or the line at that address is another: another length).
                let kept = kept.remove(&(line.as_ptr() as usize));
                let tape = match kept.map(|items| document::Tape::from_kept(text, items)) {
                    Some(Ok(tape)) => {
                        from_kept += 1;
                        tape
                    }
                    _ => document::Tape::parse_str(text).ok()?,
                };
                let (_, messages) = threads::native_thread(tape.root(), keys)?;
                attribution::attribute(&messages, found[row]).ok()
            })
            .collect()
    });
    drop(owners); // the GIL held
    let out = attributions_dict(py, &attributed)?;
    out.set_item("from_kept", from_kept)?;
    Ok(out)
}

/// `attribute_lines` over Python threads (lists or sequences of message mappings), the
/// rows' loops found by the heuristics over `scan_columns`. A row whose values Python reads
/// otherwise than by their content (a `str` subclass, a lone surrogate, a payload of a type
/// JSON has no word for, a mapping that raises) is declined to Python's `attribute`.
#[pyfunction]
fn attribute_threads<'py>(
    threads: &Bound<'py, PyList>,
    codes: Vec<u8>,
    begins: Vec<usize>,
    periods: Vec<usize>,
    repetitions: Vec<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let found = found_loops(
        threads.len(),
        ("threads", "thread"),
        codes,
        begins,
        periods,
        repetitions,
    )?;
    let attributed: Vec<Option<attribution::Attributed>> = threads
        .iter()
        .enumerate()
        .map(|(row, thread)| {
            let messages = threads::python_messages(&thread, Some(row)).ok()?;
            attribution::attribute(&messages, found[row]).ok()
        })
        .collect();
    attributions_dict(threads.py(), &attributed)
}

/// `long_runs`' columns: groups, periods, starts, stops.
type Runs<'py> = (
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
);

/// `runs::long_runs` of `values` in groups `bounds[g]..bounds[g + 1]` (`bounds` ascending,
/// within `values`; a ValueError naming the first bad bound otherwise): arrays `groups`,
/// `periods`, `starts` and `stops`, one row per run. The GIL is released while it runs.
#[pyfunction]
fn long_runs<'py>(
    values: PyReadonlyArray1<'py, u64>,
    bounds: PyReadonlyArray1<'py, i64>,
    shortest: usize,
) -> PyResult<Runs<'py>> {
    let py = values.py();
    let values = values.as_slice()?;
    let mut checked = Vec::with_capacity(bounds.len()?);
    for (index, &bound) in bounds.as_slice()?.iter().enumerate() {
        match usize::try_from(bound) {
            Ok(bound)
                if bound <= values.len() && checked.last().is_none_or(|&last| last <= bound) =>
            {
                if let Some(&last) = checked.last() {
                    if bound - last > runs::LONGEST_GROUP {
                        return Err(PyValueError::new_err(format!(
                            "group {} holds {} values, more than the {} a group may hold",
                            index - 1,
                            bound - last,
                            runs::LONGEST_GROUP
                        )));
                    }
                }
                checked.push(bound)
            }
            _ => {
                return Err(PyValueError::new_err(format!(
                    "bounds[{index}] = {bound} is not an ascending position within {} values",
                    values.len()
                )))
            }
        }
    }
    let found = py.detach(|| runs::long_runs(values, &checked, shortest));
    let column = |pick: fn(&runs::Run) -> usize| {
        numpy_array(py, found.iter().map(|run| pick(run) as i64).collect())
    };
    Ok((
        column(|run| run.group)?,
        column(|run| run.period)?,
        column(|run| run.start)?,
        column(|run| run.stop)?,
    ))
}

/// The record fields `vthread.anywhere.loop_records` writes of loops found anywhere
/// (`attribution::anywhere_parts`): loop `i` lies in `threads[owners[i]]` (a list or
/// sequence of message mappings), messages `starts[i]..ends[i]`, repeating every
/// `periods[i]`, of kind `kinds[i]`. Returns `signature` and `loop_tokens` arrays (NaN: no
/// figure), `excerpts` (None for a loop declined) and `declined`: the loops left to Python
/// (a runaway text; a value Python reads otherwise than by its content).
#[pyfunction]
fn anywhere_loop_parts<'py>(
    threads: &Bound<'py, PyList>,
    owners: Vec<usize>,
    starts: Vec<usize>,
    ends: Vec<usize>,
    periods: Vec<usize>,
    kinds: Vec<u8>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = threads.py();
    let found = loops_found_anywhere(
        &owners,
        [starts, ends, periods],
        kinds,
        (threads.len(), "threads"),
    )?;
    let mut read: Option<(usize, Option<Vec<Bound<'py, PyAny>>>)> = None;
    let mut parts = Vec::with_capacity(found.len());
    for (&owner, &found) in owners.iter().zip(&found) {
        if read.as_ref().is_none_or(|(row, _)| *row != owner) {
            let thread = threads.get_item(owner)?;
            read = Some((owner, threads::python_messages(&thread, Some(owner)).ok()));
        }
        let messages = read.as_ref().and_then(|(_, messages)| messages.as_deref());
        parts.push(messages.and_then(|messages| attribution::anywhere_parts(messages, found).ok()));
    }
    anywhere_parts_dict(py, &parts)
}

/// The fields of loops found anywhere as `anywhere_loop_parts` returns them (None: declined).
fn anywhere_parts_dict<'py>(
    py: Python<'py>,
    parts: &[Option<attribution::AnywhereParts>],
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    set_loop_fields(py, &out, parts, |p| {
        (p.signature, &p.excerpt, p.loop_tokens)
    })?;
    Ok(out)
}

/// `anywhere_loop_parts` of threads given as their native JSON lines (`lines[owner]`, read
/// under `messages_key` and `id_key` as `scan_lines` read them), so that a looping line's
/// records are made without its messages becoming Python objects. A loop whose line the
/// core does not read is declined (Python's), as one it declines of a thread is.
#[pyfunction]
#[pyo3(signature = (lines, owners, starts, ends, periods, kinds, messages_key=None, id_key=None))]
#[allow(clippy::too_many_arguments)]
fn anywhere_loop_parts_of_lines<'py>(
    lines: &Bound<'py, PyList>,
    owners: Vec<usize>,
    starts: Vec<usize>,
    ends: Vec<usize>,
    periods: Vec<usize>,
    kinds: Vec<u8>,
    messages_key: Option<&str>,
    id_key: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let py = lines.py();
    let found = loops_found_anywhere(
        &owners,
        [starts, ends, periods],
        kinds,
        (lines.len(), "lines"),
    )?;
    let owned = chunk_rows::line_buffers(lines)?;
    let views: Vec<&[u8]> = owned.iter().map(|line| line.as_bytes()).collect();
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: id_key,
    };
    let parts = py.detach(|| {
        spans_of_lines(
            &views,
            &owners,
            keys,
            (|_: &[u8]| false, None),
            |messages, at| attribution::anywhere_parts(messages, found[at]).ok(),
        )
    });
    anywhere_parts_dict(py, &parts)
}

/// The exact keys of the messages of a native JSON line (`lines[0]`, read under
/// `messages_key` and `id_key` as `scan_lines` read it), each as
/// `vthread.fingerprint.message_key` encodes it (`suffix::push_exact_key`), numbered in
/// order of first appearance: equal numbers exactly for equal keys, the keys themselves
/// compared (never a hash), so that `vthread.anywhere` confirms a looping line's runs
/// without its messages becoming Python objects. With `digits_folded`, the keys are
/// `vthread.anywhere.reply_key`'s: a string text's every run of ASCII digits read as one
/// `0`. None when the core does not read the line.
#[pyfunction]
#[pyo3(signature = (lines, messages_key=None, id_key=None, digits_folded=false))]
fn line_key_numbers<'py>(
    lines: &Bound<'py, PyList>,
    messages_key: Option<&str>,
    id_key: Option<&str>,
    digits_folded: bool,
) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
    of_one_line(lines, messages_key, id_key, |_, messages| {
        number_keys(messages, digits_folded)
    })
}

/// `scan._loop_tokens` of spans of native JSON lines (messages `starts[i]` to `ends[i]` of
/// `lines[owners[i]]`, owners in order; each line read once, as `scan_lines` reads a line
/// it wrote, the GIL released): the `math.fsum` of the `usage.tokens` figures that count,
/// NaN when none does; None where the core does not read the line, the span lies past its
/// messages, or a figure is one Python reads. A translated loop restated in its file's
/// messages counts the usage of the source message it begins in
/// (`documents.in_source_messages`), which may lie before its first message. With
/// `written` (lines this core wrote: a translation writes a message's usage as
/// `"usage":{"tokens":`, a masked copy its keys unescaped), a line holding no `"usage"`
/// is not parsed: NaN for each of its spans.
#[pyfunction]
#[pyo3(signature = (lines, owners, starts, ends, written=false))]
fn span_tokens_of_lines(
    lines: &Bound<'_, PyList>,
    owners: Vec<usize>,
    starts: Vec<usize>,
    ends: Vec<usize>,
    written: bool,
) -> PyResult<Vec<Option<f64>>> {
    if [starts.len(), ends.len()] != [owners.len(); 2] {
        return Err(PyValueError::new_err(
            "owners, starts and ends must have one entry per span",
        ));
    }
    owners_within(&owners, (lines.len(), "lines"))?;
    let owned = chunk_rows::line_buffers(lines)?;
    let views: Vec<&[u8]> = owned.iter().map(|line| line.as_bytes()).collect();
    let keys = adapters::RunKeys {
        messages: None,
        id: None,
    };
    // A written line without usage sums no figure: NaN for each of its spans, unparsed.
    let without_usage = |line: &[u8]| written && memchr::memmem::find(line, b"\"usage\"").is_none();
    Ok(lines.py().detach(|| {
        spans_of_lines(
            &views,
            &owners,
            keys,
            (without_usage, Some(f64::NAN)),
            |messages, at| {
                let span = messages.get(starts[at]..ends[at])?;
                attribution::loop_tokens(span).ok()
            },
        )
    }))
}

/// `read` of each entry's span of its line's native messages (entry `i` of line
/// `views[owners[i]]`, read under `keys` as `scan_lines` reads it): the entries of one line
/// (owners come in order) made from one tape, parsed once for them; None for every entry
/// of a line the core does not read. A line `passed_over` is not parsed: its entries are
/// `passed_over`'s second.
fn spans_of_lines<T: Clone>(
    views: &[&[u8]],
    owners: &[usize],
    keys: adapters::RunKeys<'_>,
    passed_over: (impl Fn(&[u8]) -> bool, Option<T>),
    read: impl Fn(&[document::Value<'_>], usize) -> Option<T>,
) -> Vec<Option<T>> {
    let (is_passed_over, passed_over_as) = passed_over;
    let mut made = Vec::with_capacity(owners.len());
    let mut index = 0;
    while index < owners.len() {
        let owner = owners[index];
        let last = index + owners[index..].partition_point(|&o| o == owner);
        let line = views[owner];
        let entries = index..last;
        if is_passed_over(line) {
            made.extend(entries.map(|_| passed_over_as.clone()));
        } else {
            let read_line = with_line_messages(line, keys, |messages| {
                Some(
                    entries
                        .clone()
                        .map(|at| read(messages, at))
                        .collect::<Vec<_>>(),
                )
            });
            made.extend(read_line.unwrap_or_else(|| entries.map(|_| None).collect()));
        }
        index = last;
    }
    made
}

/// A ValueError unless every owner is one of a batch of `size` items (`holding`: what they
/// are), in order.
fn owners_within(owners: &[usize], (size, holding): (usize, &str)) -> PyResult<()> {
    if let Some(owner) = owners.iter().find(|&&owner| owner >= size) {
        return Err(PyValueError::new_err(format!(
            "owner {owner} of a batch of {size} {holding}"
        )));
    }
    if owners.windows(2).any(|pair| pair[0] > pair[1]) {
        return Err(PyValueError::new_err("owners must come in order"));
    }
    Ok(())
}

/// `read` of the one native JSON line of `lines` (read under `messages_key` and `id_key` as
/// `scan_lines` read it) and of its messages, the GIL released, as a NumPy array; None when
/// the core does not read the line.
fn of_one_line<'py>(
    lines: &Bound<'py, PyList>,
    messages_key: Option<&str>,
    id_key: Option<&str>,
    read: impl FnOnce(&[u8], &[document::Value<'_>]) -> Option<Vec<i64>> + Send,
) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
    let py = lines.py();
    let owned = chunk_rows::line_buffers(lines)?;
    let [line] = owned.as_slice() else {
        return Err(PyValueError::new_err("expected a list of one line"));
    };
    let line = line.as_bytes();
    let keys = adapters::RunKeys {
        messages: messages_key,
        id: id_key,
    };
    let values = py.detach(|| with_line_messages(line, keys, |messages| read(line, messages)));
    values.map(|values| numpy_array(py, values)).transpose()
}

/// `read` of the native messages of a JSON line, read as `scan_lines` reads it; None when
/// the core does not read the line.
fn with_line_messages<T>(
    line: &[u8],
    keys: adapters::RunKeys<'_>,
    read: impl FnOnce(&[document::Value<'_>]) -> Option<T>,
) -> Option<T> {
    let text = simdutf8::basic::from_utf8(line).ok()?;
    let tape = document::Tape::parse_str(text).ok()?;
    let (_, messages) = threads::native_thread(tape.root(), keys)?;
    read(&messages)
}

/// The messages' exact keys (reply keys, with `digits_folded`) numbered in order of first
/// appearance: equal numbers exactly for equal key bytes.
fn number_keys(messages: &[document::Value<'_>], digits_folded: bool) -> Option<Vec<i64>> {
    let mut known: HashMap<Vec<u8>, i64> = HashMap::new();
    let mut key = Vec::new();
    let mut numbers = Vec::with_capacity(messages.len());
    for message in messages {
        key.clear();
        if digits_folded {
            push_reply_key(message, &mut key);
        } else {
            suffix::push_exact_key(message, &mut key).ok()?;
        }
        let next = known.len() as i64;
        let number = match known.get(key.as_slice()) {
            Some(&number) => number,
            None => {
                known.insert(key.clone(), next);
                next
            }
        };
        numbers.push(number);
    }
    Some(numbers)
}

/// Where each message of a native JSON line (`lines[0]`, read under `messages_key` and
/// `id_key` as `scan_lines` read it) lies in it: its JSON text's `[start, end)` byte
/// offsets, one pair per message (flat: start, end, start, end, ...), so that
/// `vthread.anywhere` makes a Python object of a message only when it reads it. None when
/// the core does not read the line.
#[pyfunction]
#[pyo3(signature = (lines, messages_key=None, id_key=None))]
fn line_message_spans<'py>(
    lines: &Bound<'py, PyList>,
    messages_key: Option<&str>,
    id_key: Option<&str>,
) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
    of_one_line(lines, messages_key, id_key, |line, messages| {
        let base = line.as_ptr() as usize;
        let mut spans = Vec::with_capacity(2 * messages.len());
        for message in messages {
            let json = message.json_text();
            let start = (json.as_ptr() as usize - base) as i64;
            spans.extend([start, start + json.len() as i64]);
        }
        Some(spans)
    })
}

/// `suffix::push_exact_key` of a tape message with its text, when a string, read with every
/// run of ASCII digits as one `0` (`vthread.anywhere.reply_key`: `[0-9]+` replaced by `0`).
fn push_reply_key(message: &document::Value<'_>, out: &mut Vec<u8>) {
    use node::Node;
    match message.field(node::Key::Type).ok().flatten() {
        Some(value) => value.push_canonical(out),
        None => out.extend_from_slice(b"null"),
    }
    out.push(fingerprint::PART_SEPARATOR);
    match message.field(node::Key::Text).ok().flatten() {
        Some(value) => match value.text() {
            Some(text) => {
                let mut folded = String::with_capacity(text.len());
                for character in text.chars() {
                    if !(character.is_ascii_digit()
                        && folded.ends_with(|c: char| c.is_ascii_digit()))
                    {
                        folded.push(if character.is_ascii_digit() {
                            '0'
                        } else {
                            character
                        });
                    }
                }
                canonical::push_str(out, &folded);
            }
            None => value.push_canonical(out),
        },
        None => out.extend_from_slice(b"null"),
    }
    out.push(fingerprint::PART_SEPARATOR);
    match message.field(node::Key::Meta).ok().flatten() {
        Some(value) => value.push_canonical(out),
        None => out.extend_from_slice(fingerprint::ABSENT_META),
    }
}

/// The loops `anywhere_loop_parts` and `anywhere_loop_parts_of_lines` are given, one per
/// entry of `owners` (`spans`: their starts, ends and periods), each checked to have all
/// its fields and an owner among the `batch` (its size, and what it holds), owners in order.
fn loops_found_anywhere(
    owners: &[usize],
    spans: [Vec<usize>; 3],
    kinds: Vec<u8>,
    batch: (usize, &str),
) -> PyResult<Vec<attribution::FoundAnywhere>> {
    let [starts, ends, periods] = spans;
    let count = owners.len();
    if [starts.len(), ends.len(), periods.len(), kinds.len()] != [count; 4] {
        return Err(PyValueError::new_err(
            "owners, starts, ends, periods and kinds must have one entry per loop",
        ));
    }
    owners_within(owners, batch)?;
    Ok((0..count)
        .map(|at| attribution::FoundAnywhere {
            start: starts[at],
            end: ends[at],
            period: periods[at],
            kind: kinds[at],
        })
        .collect())
}

/// Set `signature`, `loop_tokens` and `excerpts` in `out`, one entry per row (`fields` of
/// it: signature, excerpt, token total; placeholders for a row that is None: declined), and
/// `declined`, those rows' positions.
fn set_loop_fields<T>(
    py: Python<'_>,
    out: &Bound<'_, PyDict>,
    rows: &[Option<T>],
    fields: fn(&T) -> (u64, &String, f64),
) -> PyResult<()> {
    let rows: Vec<Option<(u64, &String, f64)>> =
        rows.iter().map(|row| row.as_ref().map(fields)).collect();
    let signatures: Vec<u64> = rows.iter().map(|r| r.map_or(0, |r| r.0)).collect();
    out.set_item("signature", numpy_array(py, signatures)?)?;
    let tokens: Vec<f64> = rows.iter().map(|r| r.map_or(f64::NAN, |r| r.2)).collect();
    out.set_item("loop_tokens", numpy_array(py, tokens)?)?;
    let excerpts: Vec<Option<&str>> = rows.iter().map(|r| r.map(|r| r.1.as_str())).collect();
    out.set_item("excerpts", PyList::new(py, excerpts)?)?;
    let declined: Vec<i64> = (0..rows.len())
        .filter(|&row| rows[row].is_none())
        .map(|row| row as i64)
        .collect();
    out.set_item("declined", numpy_array(py, declined)?)?;
    Ok(())
}

/// The loops of `count` rows from the heuristics' columns (one entry per row in each, else
/// a ValueError naming the `rows`).
fn found_loops(
    count: usize,
    (rows, row): (&str, &str),
    codes: Vec<u8>,
    begins: Vec<usize>,
    periods: Vec<usize>,
    repetitions: Vec<usize>,
) -> PyResult<Vec<attribution::Loop>> {
    if [codes.len(), begins.len(), periods.len(), repetitions.len()] != [count; 4] {
        return Err(PyValueError::new_err(format!(
            "{rows}, codes, begins, periods and repetitions must have one entry per {row}"
        )));
    }
    Ok((0..count)
        .map(|index| attribution::Loop {
            code: codes[index],
            begin: begins[index],
            period: periods[index],
            repetitions: repetitions[index],
        })
        .collect())
}

/// The record fields of attributed rows as arrays (placeholders where a row was declined)
/// and the declined rows' positions.
fn attributions_dict<'py>(
    py: Python<'py>,
    attributed: &[Option<attribution::Attributed>],
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let field = |pick: fn(&attribution::Attributed) -> i64| -> Vec<i64> {
        attributed
            .iter()
            .map(|a| a.as_ref().map_or(-1, pick))
            .collect()
    };
    out.set_item(
        "loop_start",
        numpy_array(py, field(|a| a.loop_start as i64))?,
    )?;
    out.set_item("period", numpy_array(py, field(|a| a.period as i64))?)?;
    out.set_item(
        "repetitions",
        numpy_array(py, field(|a| a.repetitions as i64))?,
    )?;
    set_loop_fields(py, &out, attributed, |a| {
        (a.signature, &a.excerpt, a.loop_tokens)
    })?;
    Ok(out)
}

/// A JSON document split into its elements as its bytes arrive
/// (`array_split::ArraySplitter`), so that `vthread scan` reads a document of runs a chunk at
/// a time, in memory flat in its size.
#[pyclass(module = "vthread._core")]
struct DocumentSplitter {
    splitter: array_split::ArraySplitter,
    messages_key: Option<String>,
    /// Whether an element has been found (the first decides whether the document is runs).
    started: bool,
    /// The document is no array of runs: Python reads it whole.
    declined: bool,
}

/// A place as Python's `(offset, line, column)`.
fn place_tuple(place: array_split::Place) -> (usize, usize, usize) {
    (place.offset, place.line, place.column)
}

#[pymethods]
impl DocumentSplitter {
    #[new]
    #[pyo3(signature = (messages_key=None))]
    fn new(messages_key: Option<String>) -> Self {
        Self {
            splitter: array_split::ArraySplitter::new(),
            messages_key,
            started: false,
            declined: false,
        }
    }

    /// Feed the next block of the document: the elements it completed, as (their texts,
    /// whether each is plain JSON the tape reads exactly as `json` does, their places: offset,
    /// line, column per element); None once the document is known to be no array of runs
    /// (it opens no array, or its first element is plain and opens no runs, as
    /// `documents.opens_runs` tells), which Python then reads whole. The GIL is released
    /// while the block is split and its elements parsed.
    #[allow(clippy::type_complexity)]
    fn feed<'py>(
        &mut self,
        block: &Bound<'py, PyBytes>,
    ) -> PyResult<
        Option<(
            Bound<'py, PyList>,
            Bound<'py, PyArray1<bool>>,
            Bound<'py, PyArray1<i64>>,
        )>,
    > {
        let py = block.py();
        if self.declined {
            return Ok(None);
        }
        let bytes = block.as_bytes();
        let splitter = &mut self.splitter;
        let keys = adapters::RunKeys {
            messages: self.messages_key.as_deref(),
            id: None,
        };
        let started = self.started;
        let (found, plain, declined) = py
            .detach(|| {
                let Ok(found) = splitter.feed(bytes) else {
                    return None;
                };
                let mut found = found;
                let text = splitter.text();
                let mut plain = Vec::with_capacity(found.len());
                let mut refused = None;
                // (the openings in index order, walked beside the elements: one look each)
                let mut openings = splitter.later_openings().iter().peekable();
                for (index, &(start, end, _)) in found.iter().enumerate() {
                    let tape = document::Tape::parse(&text[start..end]);
                    if index == 0 && !started {
                        if let Ok(tape) = &tape {
                            if !opens_runs(tape.root(), &keys) {
                                return Some((found, plain, true));
                            }
                        }
                    }
                    // An array after the first, or an object after an array, is more runs
                    // unless its first element (the object itself) plainly opens none (a
                    // document of runs followed by a thread of messages, or a message, is
                    // data after its closing bracket); one the tape does not read (NaN in
                    // it) is Python's to read, as a run, as any such element is.
                    if let Some(&(_, bracket)) = openings.next_if(|&&(at, _)| at == index) {
                        if tape
                            .as_ref()
                            .is_ok_and(|tape| !opens_runs(tape.root(), &keys))
                        {
                            refused = Some((index, bracket));
                            break;
                        }
                    }
                    plain.push(tape.is_ok());
                }
                if let Some((index, bracket)) = refused {
                    splitter.refuse_later_array(bracket);
                    found.truncate(index);
                }
                let declined = splitter.not_an_array();
                Some((found, plain, declined))
            })
            .ok_or_else(|| {
                PyMemoryError::new_err(format!(
                    "out of memory holding a run of the document ({} bytes and more)",
                    self.splitter.text().len() + bytes.len()
                ))
            })?;
        py.check_signals()?; // a Ctrl-C during the split ends the scan here
        if declined {
            self.declined = true;
            return Ok(None);
        }
        self.started |= !found.is_empty();
        let text = self.splitter.text();
        let texts = found
            .iter()
            .map(|&(start, end, _)| new_bytes(py, &text[start..end]))
            .collect::<PyResult<Vec<_>>>()?;
        let texts = PyList::new(py, texts)?;
        let places: Vec<i64> = found
            .iter()
            .flat_map(|&(_, _, p)| [p.offset as i64, p.line as i64, p.column as i64])
            .collect();
        Ok(Some((
            texts,
            numpy_array(py, plain)?,
            numpy_array(py, places)?,
        )))
    }

    /// Whether the split is over before the document's end (no array, or it stopped): the
    /// rest of the document need not be read.
    #[getter]
    fn done(&self) -> bool {
        self.declined || self.splitter.is_done()
    }

    /// The document has ended: (why the split stopped short of a whole document —
    /// ``"cut"``, ``"empty"`` or ``"after"`` — and where, as (offset, line, column); None
    /// for neither when it did not), whether the closing bracket was reached, and the element
    /// the document ended in as (its text, its place), None when there is none.
    #[allow(clippy::type_complexity)]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(
        Option<(&'static str, (usize, usize, usize))>,
        bool,
        Option<(Bound<'py, PyBytes>, (usize, usize, usize))>,
    )> {
        let opening = self.splitter.pending_opening();
        let (mut stop, mut closed, mut tail) = self.splitter.finish();
        if let (Some(bracket), Some((start, end, _))) = (opening, tail) {
            // The document ends in a later array's first element: one that plainly opens no
            // runs makes the later array data after the closing bracket of the one before,
            // as `feed` treats one; any other is the tail, Python's to read or place the
            // break in (cut inside it, json says where).
            let keys = adapters::RunKeys {
                messages: self.messages_key.as_deref(),
                id: None,
            };
            let text = &self.splitter.text()[start..end];
            let no_runs =
                document::Tape::parse(text).is_ok_and(|tape| !opens_runs(tape.root(), &keys));
            if no_runs {
                stop = Some((array_split::Stop::After, bracket));
                closed = true;
                tail = None;
            }
        }
        let stop = stop.map(|(why, place)| {
            let why = match why {
                array_split::Stop::Cut => "cut",
                array_split::Stop::Empty => "empty",
                array_split::Stop::After => "after",
            };
            (why, place_tuple(place))
        });
        let text = self.splitter.text();
        let tail = match tail {
            Some((start, end, place)) => {
                Some((new_bytes(py, &text[start..end])?, place_tuple(place)))
            }
            None => None,
        };
        Ok((stop, closed, tail))
    }
}

/// Whether `text` is one JSON value Python's `json` reads, or would read but for its
/// recursion limit (`json_syntax`): a document's run too deeply nested for `json` is then an
/// error record of its own, and the document is split on past it. The GIL is released.
#[pyfunction]
fn python_reads_json(py: Python<'_>, text: &Bound<'_, PyBytes>) -> bool {
    let bytes = text.as_bytes();
    py.detach(|| json_syntax::python_reads(bytes))
}

/// When `text` is JSON (as `python_reads_json` tells), the texts of its top-level object's
/// members, each (its key, quotes included; its value), in order (none when it is no
/// object); else None. The GIL is released.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn json_top_members<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyBytes>,
) -> PyResult<Option<Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>>> {
    let bytes = text.as_bytes();
    let Some(spans) = py.detach(|| json_syntax::top_members(bytes)) else {
        return Ok(None);
    };
    spans
        .into_iter()
        .map(|((start, end), (from, to))| {
            Ok((
                new_bytes(py, &bytes[start..end])?,
                new_bytes(py, &bytes[from..to])?,
            ))
        })
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

/// Whether an array whose first element is `first` is a list of runs, as
/// `documents.opens_runs` tells: an array (a run's bare messages), a string, number, boolean
/// or null (no message of any format), or an object holding the given messages key or a
/// known one (whatever its value), or an object that is no message (none of `role`, `type`,
/// `text`, `content`).
fn opens_runs(first: document::Value<'_>, keys: &adapters::RunKeys<'_>) -> bool {
    const MESSAGE_KEYS: [&str; 4] = ["role", "type", "text", "content"];
    !first.is_object()
        || keys.messages_of(first).is_some()
        || MESSAGE_KEYS.iter().all(|key| first.get(key).is_none())
}

/// Keep only the low `bits` bits of the suffix screens (64 restores them): a test hook that
/// makes screens collide everywhere, to show collisions change no answer.
#[pyfunction]
fn _set_screen_bits(bits: u32) {
    suffix::set_screen_bits(bits);
}

/// Whether two values are equal as JavaScript compares them, told by walking them where they
/// are plain (`objects::plainly_equal`), None where their encodings must tell: a test hook,
/// for the property tests holding it to its twin, the comparison of canonical bytes.
#[pyfunction]
fn _plainly_equal(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> Option<bool> {
    objects::plainly_equal(a, b)
}

/// Whether two JSON texts' values are equal as JavaScript compares them, told by walking
/// their tapes (`Value::equal_to`), None where the tape declines either text: a test hook,
/// for the property tests holding it to its twin, the comparison of canonical bytes.
#[pyfunction]
fn _tape_equal(a: &[u8], b: &[u8]) -> Option<bool> {
    let (a, b) = (
        document::Tape::parse(a).ok()?,
        document::Tape::parse(b).ok()?,
    );
    Some(a.root().equal_to(&b.root()))
}

/// The floor of any exact scan over Python objects, for benchmarks: look up one field
/// (`type`) of every message of every thread, and nothing else. Returns how many messages
/// have one.
#[pyfunction]
fn one_field_floor(threads: &Bound<'_, PyList>) -> PyResult<usize> {
    let key = pyo3::intern!(threads.py(), "type");
    let mut found = 0;
    for thread in threads.iter() {
        for message in thread.try_iter()? {
            let message = message?;
            if message
                .cast::<PyDict>()
                .is_ok_and(|dict| dict.contains(key).unwrap_or(false))
            {
                found += 1;
            }
        }
    }
    Ok(found)
}

/// Drop the tape `line_format_evidence(..., keep_tape=True)` kept, if the scan did not take
/// it: at the end of a file, so that no tape outlives the reading it was kept for.
#[pyfunction]
fn release_kept_tape(py: Python<'_>) {
    kept_tape::release(py);
}

/// Whether a tape kept by `line_format_evidence` is still waiting for its line (for tests).
#[pyfunction]
fn tape_is_kept() -> bool {
    kept_tape::is_kept()
}

/// The parse floor of the CLI, for benchmarks: parse every line into a tape (one thread) and
/// nothing else. Returns how many lines the tape took.
#[pyfunction]
fn tape_parse_floor(lines: &Bound<'_, PyList>) -> PyResult<usize> {
    let mut taken = 0;
    for line in lines.iter() {
        let line = line.cast_into::<PyBytes>().map_err(PyErr::from)?;
        if document::Tape::parse(line.as_bytes()).is_ok() {
            taken += 1;
        }
    }
    Ok(taken)
}

/// `bytes(data)`, or a MemoryError where Python cannot allocate it: `PyBytes::new` panics
/// then, and under a memory limit the panic's own report could not be written (a document
/// scanned under `ulimit -v` hung instead of ending with status 71). Every `bytes` the core
/// makes is made here (clippy's `disallowed-methods` holds the crate to it).
pub(crate) fn new_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let length = ffi::Py_ssize_t::try_from(data.len())
        .map_err(|_| PyMemoryError::new_err("a text longer than Python's bytes can hold"))?;
    // SAFETY: the pointer and length describe `data`, which CPython copies before returning;
    // a null result (with MemoryError set) becomes that error.
    unsafe {
        let object = ffi::PyBytes_FromStringAndSize(data.as_ptr().cast(), length);
        Ok(Bound::from_owned_ptr_or_err(py, object)?.cast_into_unchecked())
    }
}

/// `str` of `text`, or a MemoryError where Python cannot allocate it (`PyString::new`
/// panics then, as `PyBytes::new` does: see `new_bytes`).
pub(crate) fn new_string<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyString>> {
    let length = ffi::Py_ssize_t::try_from(text.len())
        .map_err(|_| PyMemoryError::new_err("a text longer than Python's str can hold"))?;
    // SAFETY: the pointer and length describe `text`, valid UTF-8, which CPython decodes
    // into a new object before returning; a null result (with the error set) becomes it.
    unsafe {
        let object = ffi::PyUnicode_FromStringAndSize(text.as_ptr().cast(), length);
        Ok(Bound::from_owned_ptr_or_err(py, object)?.cast_into_unchecked())
    }
}

/// The canonical encoding of one line as the CLI's tape reads it, or None where the tape
/// declines the line (Python's `json` reads those). For the tests that hold the tape to
/// the JSON reader and to Python.
#[pyfunction]
fn tape_canonical<'py>(data: &Bound<'py, PyBytes>) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let Ok(tape) = document::Tape::parse(data.as_bytes()) else {
        return Ok(None);
    };
    let mut out = Vec::new();
    tape.root().push_canonical(&mut out);
    new_bytes(data.py(), &out).map(Some)
}

/// Whether the tape reads each of `lines` (the GIL released): True only for text that is one
/// JSON value `json.loads` reads (the tape takes nothing else), False for the rest (not
/// JSON, or JSON that only Python's `json` reads exactly: the caller asks it).
#[pyfunction]
fn tape_reads(lines: &Bound<'_, PyList>) -> PyResult<Vec<bool>> {
    let owned = chunk_rows::byte_lines(lines)?;
    let views: Vec<&[u8]> = owned.iter().map(|line| line.as_bytes()).collect();
    Ok(lines.py().detach(|| {
        views
            .iter()
            .map(|line| document::Tape::parse(line).is_ok())
            .collect()
    }))
}

/// The guard's normal form of one word (`vthread.guard.normalize`), for the tests that hold
/// the core's Unicode tables to Python: the str's code points read from its storage (lone
/// surrogates included), surrogate pairs joined, then `unicode::push_word_normal`.
#[pyfunction]
fn _normalize_word(text: &Bound<'_, PyString>) -> PyResult<String> {
    node::ready(text)?;
    let units: Vec<u32> = match objects::code_points(text) {
        textrun::CodePoints::Latin1(points) => points.iter().map(|&c| u32::from(c)).collect(),
        textrun::CodePoints::Ucs2(points) => points.iter().map(|&c| u32::from(c)).collect(),
        textrun::CodePoints::Ucs4(points) => points.to_vec(),
    };
    let mut out = Vec::with_capacity(units.len());
    unicode::push_word_normal(&unicode::join_pairs(&units), &mut out);
    String::from_utf8(out)
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string()))
}

/// `vthread._core`: the compiled half of the package.
#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // No NumPy here: it is imported with the first array (see `numpy_array`).
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(canonical_of, module)?)?;
    module.add_function(wrap_pyfunction!(fingerprint_of, module)?)?;
    module.add_function(wrap_pyfunction!(scan_columns, module)?)?;
    module.add_function(wrap_pyfunction!(message_screens, module)?)?;
    module.add_function(wrap_pyfunction!(scan_lines, module)?)?;
    module.add_function(wrap_pyfunction!(scan_slices, module)?)?;
    module.add_function(wrap_pyfunction!(line_ends, module)?)?;
    module.add_function(wrap_pyfunction!(translate_line, module)?)?;
    module.add_function(wrap_pyfunction!(mask_line, module)?)?;
    module.add_function(wrap_pyfunction!(arrow_row_texts, module)?)?;
    module.add_function(wrap_pyfunction!(line_format_evidence, module)?)?;
    module.add_function(wrap_pyfunction!(may_settle, module)?)?;
    module.add_function(wrap_pyfunction!(may_be_record, module)?)?;
    module.add_function(wrap_pyfunction!(line_marks, module)?)?;
    module.add("MAY_SETTLE", adapters::MAY_SETTLE)?;
    module.add("MAY_READ_OTHERWISE", adapters::MAY_READ_OTHERWISE)?;
    module.add("MAY_BE_NATIVE", adapters::MAY_BE_NATIVE)?;
    module.add("DECLARES_MINI_SWE_AGENT", adapters::DECLARES_MINI_SWE_AGENT)?;
    module.add_function(wrap_pyfunction!(plain_reads_otherwise, module)?)?;
    module.add_function(wrap_pyfunction!(costs::own_token_costs, module)?)?;
    module.add_function(wrap_pyfunction!(costs::newest_fitting, module)?)?;
    module.add_function(wrap_pyfunction!(describe_thread, module)?)?;
    module.add_function(wrap_pyfunction!(kept_buffer_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(most_kept_buffer_bytes, module)?)?;
    module.add_function(wrap_pyfunction!(mask_text, module)?)?;
    module.add_function(wrap_pyfunction!(room_for, module)?)?;
    module.add_function(wrap_pyfunction!(json_separators, module)?)?;
    module.add_function(wrap_pyfunction!(masking::masked_thread, module)?)?;
    module.add_function(wrap_pyfunction!(_set_screen_bits, module)?)?;
    module.add_function(wrap_pyfunction!(_plainly_equal, module)?)?;
    module.add_function(wrap_pyfunction!(_tape_equal, module)?)?;
    module.add_function(wrap_pyfunction!(screen, module)?)?;
    module.add_function(wrap_pyfunction!(loop_tokens, module)?)?;
    module.add_function(wrap_pyfunction!(span_tokens_of_lines, module)?)?;
    module.add_function(wrap_pyfunction!(attribute_lines, module)?)?;
    module.add_function(wrap_pyfunction!(attribute_threads, module)?)?;
    module.add_function(wrap_pyfunction!(anywhere_loop_parts, module)?)?;
    module.add_function(wrap_pyfunction!(long_runs, module)?)?;
    module.add_function(wrap_pyfunction!(python_reads_json, module)?)?;
    module.add_function(wrap_pyfunction!(json_top_members, module)?)?;
    module.add_class::<DocumentSplitter>()?;
    module.add_class::<KeptTapes>()?;
    module.add_function(wrap_pyfunction!(has_repeated_text_runs, module)?)?;
    module.add_function(wrap_pyfunction!(one_field_floor, module)?)?;
    module.add_function(wrap_pyfunction!(tape_parse_floor, module)?)?;
    module.add_function(wrap_pyfunction!(release_kept_tape, module)?)?;
    module.add_function(wrap_pyfunction!(anywhere_loop_parts_of_lines, module)?)?;
    module.add_function(wrap_pyfunction!(line_key_numbers, module)?)?;
    module.add_function(wrap_pyfunction!(line_message_spans, module)?)?;
    module.add_function(wrap_pyfunction!(tape_is_kept, module)?)?;
    module.add_function(wrap_pyfunction!(tape_canonical, module)?)?;
    module.add_function(wrap_pyfunction!(tape_reads, module)?)?;
    module.add_class::<guard_py::GuardCore>()?;
    module.add_function(wrap_pyfunction!(guard_py::scan_texts, module)?)?;
    module.add_function(wrap_pyfunction!(_normalize_word, module)?)?;
    json_py::register(module)?;
    Ok(())
}
