//! Batches of threads, from Python objects or from the lines of a JSONL file, into columns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::adapters::{self, Format, RunKeys};
use crate::anywhere::MessageColumns;
use crate::document::{Declined, KeptItems, Tape, Value};
use crate::textrun::TextRunOptions;
use pyo3::exceptions::{PyMemoryError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};

use crate::canonical;
use crate::columns::{Columns, Reader, ScanOptions, THREAD_TEXT_RUN_MESSAGES};
use crate::masking;
use crate::node::{Key, Node};
use crate::objects;

static SEQUENCE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// What a LangChain message object given as a message is, and what to do
/// (`_langchain.LANGCHAIN_OBJECT_HINT`).
const LANGCHAIN_OBJECT_HINT: &str = " (a LangChain message object: pass each one's \
    model_dump(); describe_thread_cycle and scan read the objects with format=\"langchain\")";

/// `_langchain.langchain_object_hint`'s test: a `model_dump` method of the object's type and a
/// `type` naming a LangChain message's (asked only of a message that is no mapping, about to
/// be an error).
fn langchain_object(message: &Bound<'_, PyAny>) -> bool {
    model_object(message)
        && message.getattr("type").is_ok_and(|kind| {
            kind.cast::<PyString>().is_ok_and(|kind| {
                kind.to_str().is_ok_and(|kind| {
                    kind != "constructor" && crate::adapters::LANGCHAIN_TYPES.contains(&kind)
                })
            })
        })
}

/// What another pydantic object (an SDK's message) given as a message is, and what to do
/// (`_langchain.MODEL_OBJECT_HINT`).
const MODEL_OBJECT_HINT: &str = " (a pydantic model, an SDK's object: pass its model_dump())";

/// `_langchain._dumps`: a `model_dump` method of the object's type (a pydantic model).
fn model_object(message: &Bound<'_, PyAny>) -> bool {
    message
        .get_type()
        .getattr("model_dump")
        .is_ok_and(|method| method.is_callable())
}

/// What a NumPy array given as a thread is, and what to do (`_messages.NDARRAY_HINT`).
const NDARRAY_HINT: &str = " (pandas reads a Parquet list column as NumPy arrays at every \
     level: pass the table to vthread.scan_arrow, or turn each level into lists)";

/// The thread's messages, each checked to be a mapping; errors name the message, and the
/// thread by its `index` in a batch (None: a single call's thread, not named).
pub(crate) fn python_messages<'py>(
    thread: &Bound<'py, PyAny>,
    index: Option<usize>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let py = thread.py();
    let place = index.map_or_else(String::new, |index| format!("thread {index}: "));
    let items: Vec<Bound<'py, PyAny>> = if let Ok(list) = thread.cast_exact::<PyList>() {
        room_for_messages(list.len(), &place)?;
        list.iter().collect()
    } else if let Ok(tuple) = thread.cast_exact::<PyTuple>() {
        room_for_messages(tuple.len(), &place)?;
        tuple.iter().collect()
    } else {
        let sequence = SEQUENCE.import(py, "collections.abc", "Sequence")?;
        if !thread.is_instance(sequence)?
            || thread.is_instance_of::<PyString>()
            || thread.is_instance_of::<PyBytes>()
            || objects::is_mapping(thread)?
        {
            let name = type_name(thread);
            let hint = if name == "ndarray" { NDARRAY_HINT } else { "" };
            return Err(PyTypeError::new_err(format!(
                "{place}messages must be a sequence of mappings, got {name}{hint}"
            )));
        }
        thread.try_iter()?.collect::<PyResult<_>>()?
    };
    for (position, message) in items.iter().enumerate() {
        if !message.is_exact_instance_of::<PyDict>() && !objects::is_mapping(message)? {
            let hint = if langchain_object(message) {
                LANGCHAIN_OBJECT_HINT
            } else if model_object(message) {
                MODEL_OBJECT_HINT
            } else {
                ""
            };
            return Err(PyTypeError::new_err(format!(
                "{place}messages[{position}] must be a mapping, got {}{hint}",
                type_name(message)
            )));
        }
    }
    Ok(items)
}

/// Messages read between two pauses of a batch (see `pause`): a few milliseconds' work.
const PAUSE_MESSAGES: usize = 1 << 14;

/// A pause between the threads of a batch read with the GIL held: the GIL is let go for a
/// moment, so that the caller's other Python threads run (a harness's heartbeat, a thread
/// calling `_thread.interrupt_main`) rather than wait seconds for a long batch, and a
/// pending signal (Ctrl-C) is then run, its exception ending the batch.
fn pause(py: Python<'_>) -> PyResult<()> {
    py.detach(|| ());
    py.check_signals()
}

/// The messages of each thread of a batch as the core read them, one tuple per thread, when
/// asked for (`Some`): Python reads a looping thread's messages again for its loop's record,
/// and a list the caller's code (another Python thread, or a value's own method run while
/// read) changed meanwhile would give a record of neither state. The core holds every
/// message's reference already, so the copy is one tuple per thread (a tuple given is kept
/// as it is). Holding every reference until Python is done cost 3% of a scan of the
/// benchmark's threads, and 10% of one of short messages (each release then touched a
/// message no longer in cache), so a thread whose columns rule out every loop but a runaway
/// text keeps only the messages that check reads, its last `THREAD_TEXT_RUN_MESSAGES`.
pub type ReadThreads<'py> = Option<Vec<Bound<'py, PyTuple>>>;

/// Keep the messages read of `thread` (`items`) in `read` when it is kept: all of them when
/// `whole`, else the last few.
fn keep_read<'py>(
    read: &mut ReadThreads<'py>,
    thread: &Bound<'py, PyAny>,
    mut items: Vec<Bound<'py, PyAny>>,
    whole: bool,
) -> PyResult<()> {
    let Some(read) = read else {
        return Ok(());
    };
    let first = if whole {
        0
    } else {
        items.len().saturating_sub(THREAD_TEXT_RUN_MESSAGES)
    };
    read.push(match thread.cast_exact::<PyTuple>() {
        Ok(tuple) if first == 0 => tuple.clone(),
        _ => PyTuple::new(thread.py(), items.drain(first..))?,
    });
    Ok(())
}

/// The columns of a batch of Python threads, and the messages read when `keep` says so.
/// With `one` (a single call's thread), errors name no thread, as `describe_thread`'s.
pub fn columns_of_objects<'py>(
    threads: &Bound<'py, PyList>,
    options: &ScanOptions,
    keep: bool,
    one: bool,
) -> PyResult<(Columns, ReadThreads<'py>)> {
    let py = threads.py();
    let mut columns = Columns::new();
    let mut reader = Reader::default();
    let mut read = keep.then(|| Vec::with_capacity(threads.len()));
    let mut since_pause = PAUSE_MESSAGES; // a pause first: a signal already pending ends it
    for (index, thread) in threads.iter().enumerate() {
        if since_pause >= PAUSE_MESSAGES {
            pause(py)?;
            since_pause = 0;
        }
        let named = (!one).then_some(index);
        let items = python_messages(&thread, named)?;
        crate::node::prefetch_fields(&items);
        since_pause += items.len() + 1;
        columns
            .push_thread(index, &items, options, &mut reader)
            .map_err(|error| located(py, error, named, &items))?;
        let whole = columns.last_may_loop_before_its_texts(options.needed_results);
        keep_read(&mut read, &thread, items, whole)?;
    }
    Ok((columns, read))
}

/// The buffers of a single call (`describe_thread`): its columns, the reader's tables and
/// the text-run check's scratch, kept from one call to the next on an OS thread.
struct Spare {
    columns: Columns,
    reader: Reader,
    text_run: crate::textrun::Scratch,
}

impl Default for Spare {
    fn default() -> Self {
        Spare {
            columns: Columns::new(),
            reader: Reader::default(),
            text_run: crate::textrun::Scratch::default(),
        }
    }
}

impl Spare {
    fn heap_bytes(&mut self) -> usize {
        self.columns.heap_bytes() + self.reader.heap_bytes() + self.text_run.heap_bytes()
    }
}

/// The columns of one Python thread, handed to `decide` with the text-run check's scratch;
/// errors name the message index alone. A call's buffers are kept for the next on this OS
/// thread (a harness asks after every turn: making them anew was a tenth of a 60-message
/// call, and more of a shorter one's), up to `SPARE_BYTES`; a call made while another is
/// reading (a message's own code calling `describe_thread_cycle`) finds none kept and makes
/// its own. Every buffer is emptied before it is kept (so no Python object is held past the
/// call), and cleared again as it is next used.
pub fn with_columns_of_thread<R>(
    messages: &Bound<'_, PyAny>,
    options: &ScanOptions,
    decide: impl FnOnce(&mut Columns, &mut crate::textrun::Scratch) -> PyResult<R>,
) -> PyResult<R> {
    let items = python_messages(messages, None)?;
    let mut spare = SPARE
        .try_with(|kept| kept.borrow_mut().take())
        .ok()
        .flatten()
        .unwrap_or_default();
    let outcome = spare
        .columns
        .push_thread(0, &items, options, &mut spare.reader)
        .map_err(|error| located(messages.py(), error, None, &items))
        .and_then(|()| decide(&mut spare.columns, &mut spare.text_run));
    spare.columns.clear(); // (its texts are let go of here, with the GIL held)
    if spare.heap_bytes() <= SPARE_BYTES {
        // (on a thread being torn down there is nowhere to keep them: they are dropped)
        let _ = SPARE.try_with(|kept| *kept.borrow_mut() = Some(spare));
    }
    outcome
}

/// The heap memory of the buffers kept on this OS thread for the next single call, None when
/// none are (for tests of what is kept).
pub fn kept_bytes() -> Option<usize> {
    SPARE
        .try_with(|kept| kept.borrow_mut().as_mut().map(Spare::heap_bytes))
        .ok()
        .flatten()
}

/// The most memory a single call's buffers keep for the next: what a thread of about ten
/// thousand messages needs (a 60-message call's take about 10 KB); a longer thread, or one
/// long message, lets them go.
pub const SPARE_BYTES: usize = 256 << 10;

thread_local! {
    /// A single call's buffers, emptied, for the next call on this OS thread.
    static SPARE: std::cell::RefCell<Option<Spare>> = const { std::cell::RefCell::new(None) };
}

/// `error`, raised while a thread's messages were read (by a message's own mapping methods,
/// or by a value the core cannot encode), with a note saying where, as the core's own
/// errors do: `thread {index}` (None: the thread of a single-thread call) and the first
/// message one of whose fields cannot be read alone, found by reading each message's
/// fields again (on this error path only). An exception that is no `Exception` (Ctrl-C) is
/// left as it is, and no message's code is run again for it; one raised while the fields
/// are read again is raised in the error's place.
fn located<N: Node>(py: Python<'_>, error: PyErr, thread: Option<usize>, items: &[N]) -> PyErr {
    if !error.is_instance_of::<pyo3::exceptions::PyException>(py) {
        return error;
    }
    let mut message = None;
    for (position, item) in items.iter().enumerate() {
        match fields_read(py, item) {
            Ok(true) => {}
            Ok(false) => {
                message = Some(position);
                break;
            }
            Err(stop) => return stop,
        }
    }
    let place = match (thread, message) {
        (Some(thread), Some(message)) => format!("thread {thread}, messages[{message}]"),
        (Some(thread), None) => format!("thread {thread}"),
        (None, Some(message)) => format!("messages[{message}]"),
        (None, None) => return error,
    };
    // (a note that cannot be added leaves the error as raised)
    let _ = error.add_note(py, format!("while reading {place}"));
    error
}

/// Whether every field of `message` the heuristics read (type, text, meta, usage, and its
/// activity) can be read and encoded; an exception that is no `Exception` (Ctrl-C) while
/// they are read is returned.
fn fields_read<N: Node>(py: Python<'_>, message: &N) -> PyResult<bool> {
    let unread = |error: PyErr| {
        if error.is_instance_of::<pyo3::exceptions::PyException>(py) {
            Ok(false)
        } else {
            Err(error)
        }
    };
    let mut scratch = Vec::new();
    for key in [Key::Type, Key::Text, Key::Meta, Key::Usage] {
        match message.field(key) {
            Err(error) => return unread(error),
            Ok(Some(value)) => {
                if let Err(error) = value.push_canonical(&mut scratch) {
                    return unread(error);
                }
            }
            Ok(None) => {}
        }
    }
    match crate::columns::parse_activity(message) {
        Ok(_) => Ok(true),
        Err(error) => unread(error),
    }
}

/// What became of one JSONL line in the core.
pub struct LineOutcome {
    /// The record's `"id"` as compact JSON text (what `json.dumps` writes for it).
    pub id_text: String,
    /// Messages in the thread.
    pub messages: usize,
    /// Whether the thread's first message has a `role` or a `call_id` (as chat messages and
    /// Responses items do, and no native message): Python looks again at such a line read
    /// as native when it loops (its loop may be false).
    pub chat_first: bool,
}

/// The `"id"` as `json.dumps` writes it, where that equals its canonical text (strings,
/// booleans, null, integers inside ±2**53); None for any other id (Python writes those).
fn id_text(id: Option<Value<'_>>) -> Option<String> {
    let Some(id) = id else {
        return Some("null".to_owned());
    };
    if id.is_null() {
        return Some("null".to_owned());
    }
    if let Some(flag) = id.as_bool() {
        return Some(flag.to_string());
    }
    if id.is_integer() {
        let small = id.as_i64()?;
        return (small.unsigned_abs() < 1 << 53).then(|| small.to_string());
    }
    let text = id.text()?;
    let mut out = Vec::new();
    canonical::push_str(&mut out, &text);
    Some(String::from_utf8(out).expect("canonical text is ASCII"))
}

/// A line's thread in the native format: (id text, messages), or None when Python should
/// read the line (anything but a plain thread of objects, found as `documents.read_run`
/// finds it: a list, or an object's first known messages key or the given one; an id Python
/// writes otherwise than the core; anything the tape refuses). The id is `documents.run_id`'s:
/// the given id key's value, else `id`, `instance_id`, or `task_id` (with `trial` when
/// present, written `"<task_id>/<trial>"`).
pub(crate) fn native_thread<'t>(
    value: Value<'t>,
    keys: RunKeys<'_>,
) -> Option<(String, Vec<Value<'t>>)> {
    let (id_text, messages) = native_messages(value, keys)?;
    Some((id_text, listed_messages(messages, keys)?))
}

/// `native_thread`'s id text and the array of messages, not yet listed.
fn native_messages<'t>(value: Value<'t>, keys: RunKeys<'_>) -> Option<(String, Value<'t>)> {
    if value.is_array() {
        Some(("null".to_owned(), value))
    } else if value.is_object() {
        let messages = keys.messages_of(value).filter(Value::is_array)?;
        Some((run_id_text(value, keys)?, messages))
    } else {
        None
    }
}

/// `native_thread`'s messages listed from their array, None when they are not all objects
/// or are runs given for messages.
fn listed_messages<'t>(messages: Value<'t>, keys: RunKeys<'_>) -> Option<Vec<Value<'t>>> {
    let messages: Vec<Value<'t>> = messages.children().collect();
    if !messages.iter().all(Value::is_object) {
        return None;
    }
    if messages
        .first()
        .is_some_and(|first| is_run_object(*first, keys))
    {
        // Runs given for messages (a batch of runs on one line): Python's to name as such.
        return None;
    }
    Some(messages)
}

/// Whether a message is plainly a run (`documents._is_run_object`): no `type`, `role` nor
/// `text`, and an array under a run's messages key.
fn is_run_object(message: Value<'_>, keys: RunKeys<'_>) -> bool {
    let holds_messages = |key: &str| message.get(key).is_some_and(|value| value.is_array());
    ["type", "role", "text"]
        .iter()
        .all(|key| message.get(key).is_none())
        && match keys.messages {
            Some(key) => holds_messages(key),
            None => adapters::MESSAGES_KEYS
                .iter()
                .any(|key| holds_messages(key)),
        }
}

/// The record's id text of a run object's id (`documents.run_id`), where the core writes it
/// as Python does.
fn run_id_text(run: Value<'_>, keys: RunKeys<'_>) -> Option<String> {
    match adapters::run_id(run, keys).ok()? {
        adapters::RunId::Value(id) => id_text(id),
        adapters::RunId::Joined(joined) => {
            let mut out = Vec::new();
            canonical::push_str(&mut out, &joined);
            Some(String::from_utf8(out).expect("canonical text is ASCII"))
        }
    }
}

/// The usage figures of a thread's messages, as the CLI's summary counts them: the number
/// `usage.tokens` of every message whose usage is an object (None where it holds no number).
/// An integer figure is the double JavaScript reads it as (the nearest); one beyond an i64
/// is declined (None): Python reads it.
/// A figure that is no number (absent included) is written as NaN and makes `odd` true:
/// Python then sums the chunk's figures the exact way, as it does when it meets one.
fn usage_figures(messages: &[Value<'_>], figures: &mut Vec<f64>, odd: &mut bool) -> Option<()> {
    for message in messages {
        let Ok(Some(usage)) = message.field(Key::Usage) else {
            continue;
        };
        if !usage.is_object() {
            continue;
        }
        if usage.children().next().is_none() {
            continue; // Python's filter(None, ...) drops an empty usage before reading it
        }
        // Any number of JSON's grammar reads as a double (1e400 as infinity), so the kind
        // says it: the text is parsed once, below, not also here.
        match usage.get("tokens").filter(Value::is_number) {
            Some(number) => {
                if number.is_integer() {
                    figures.push(number.as_i64()? as f64);
                } else {
                    figures.push(number.as_f64()?);
                }
            }
            _ => {
                figures.push(f64::NAN); // not a number: never counted
                *odd = true;
            }
        }
    }
    Some(())
}

/// Everything the CLI needs of a chunk of lines; the lines Python must read (`declined`)
/// hold an empty thread each.
pub struct ChunkColumns {
    pub columns: Columns,
    pub lines: Vec<LineOutcome>,
    pub figures: Vec<f64>,
    pub figures_odd: bool,
    /// A translated chunk's native lines, one after another (empty for a native chunk).
    pub native: Vec<u8>,
    /// Where each native line ends in `native`.
    pub native_ends: Vec<i64>,
    /// The source message of every native message, thread after thread.
    pub sources: Vec<u32>,
    /// The lines (by position in the chunk) that Python must read: each holds an empty
    /// thread here, with id null, no message and no figure.
    pub declined: Vec<i64>,
    /// The lines (by position in the chunk) read in a format of their own rather than the
    /// chunk's detected one (`adapters::run_reading_format`), with that format: the summary
    /// counts those whose format is not the one their file is named by.
    pub read_as_own: Vec<(i64, adapters::Format)>,
    /// With `LineReading::anywhere`, every thread's message screens and roles (one thread per
    /// line, a declined line's empty), the cycle columns then holding an empty thread a line.
    pub anywhere: Option<MessageColumns>,
    /// With `LineReading::keep_tapes`, the tapes of the lines read as written whose thread
    /// may loop (by position in the chunk): the attribution of the lines that do loop then
    /// takes them instead of parsing those lines again (`KeptTapes` in `lib.rs`).
    pub kept: Vec<(usize, KeptItems)>,
    /// The bytes the kept tapes take, and those of the lines read as written so far while
    /// keeping: the former may pass the latter only by the first tape kept (`push_line`).
    kept_memory: usize,
    line_bytes: usize,
    /// Bytes a screen is encoded into.
    scratch: Vec<u8>,
}

impl ChunkColumns {
    fn new(lines: usize, anywhere: Option<TextRunOptions>) -> Self {
        ChunkColumns {
            columns: Columns::new(),
            lines: Vec::with_capacity(lines),
            figures: Vec::new(),
            figures_odd: false,
            native: Vec::new(),
            native_ends: Vec::new(),
            sources: Vec::new(),
            declined: Vec::new(),
            read_as_own: Vec::new(),
            anywhere: anywhere.map(MessageColumns::new),
            kept: Vec::new(),
            kept_memory: 0,
            line_bytes: 0,
            scratch: Vec::new(),
        }
    }

    /// Read one native line's thread into the chunk (numbered `offset` within it); None when
    /// Python should read it. `messages` is the record's message count when the line was
    /// translated (its source messages), else the thread's. `as_written`: the line is the
    /// chunk's own (not a native line made of it), so its tape may be kept.
    fn push_line(
        &mut self,
        line: &[u8],
        offset: usize,
        messages: Option<usize>,
        reading: LineReading<'_>,
        reader: &mut Reader,
        as_written: bool,
    ) -> PyResult<Option<()>> {
        let Ok(tape) = tape_of(reading.detected, line) else {
            return Ok(None);
        };
        let Some((id_text, array)) = native_messages(tape.root(), reading.keys) else {
            return Ok(None);
        };
        // (asked before the messages are listed)
        if !memory_for_messages(array.children().count(), self.anywhere.is_some()) {
            return Ok(None); // Python's, as a line `memory_for` refuses
        }
        let Some(thread) = listed_messages(array, reading.keys) else {
            return Ok(None);
        };
        let (figures, odd) = (self.figures.len(), self.figures_odd);
        if reading.count_tokens
            && usage_figures(&thread, &mut self.figures, &mut self.figures_odd).is_none()
        {
            // Declined part-way: the line leaves nothing behind.
            self.figures.truncate(figures);
            self.figures_odd = odd;
            return Ok(None);
        }
        // Numbered within the part; `Columns::append` numbers the parts on.
        if let Some(anywhere) = &mut self.anywhere {
            anywhere.push_thread(&thread, &mut self.scratch)?;
            let nothing: &[Value<'_>] = &[];
            self.columns
                .push_thread(offset, nothing, reading.options, reader)?;
        } else {
            self.columns
                .push_thread(offset, &thread, reading.options, reader)?;
        }
        // (`documents.chat_like`: a role, a Responses tool's call id, or no text and a
        // content, as another library's messages hold, or the fields LangChain's other dict
        // forms wrap, or a run's messages under the run keys read (a run given for a
        // message), or a Responses tool's item type, as a web search's, which has no call
        // id)
        let chat_first = thread.first().is_some_and(|first| {
            first.get("role").is_some()
                || first.get("call_id").is_some()
                || (first.get("text").is_none()
                    && (["content", "data", "kwargs"]
                        .iter()
                        .any(|key| first.get(key).is_some())
                        || reading.keys.messages_of(*first).is_some()
                        || crate::adapters::responses_call_or_output(first.get("type"))))
        });
        self.lines.push(LineOutcome {
            id_text,
            messages: messages.unwrap_or(thread.len()),
            chat_first,
        });
        // A superset of the threads the heuristics will find looping (but for a runaway
        // text, whose line is parsed again): the others' tapes go now. The tapes kept take
        // no more memory than the lines read (a line of `{}` messages makes 16 bytes of
        // tape of 2 of text), but for the first, which the attribution's own parse of its
        // line would make as large; a line whose tape is not kept is parsed again.
        if as_written && reading.keep_tapes && self.anywhere.is_none() {
            self.line_bytes += line.len();
            if self
                .columns
                .last_may_loop_before_its_texts(reading.options.needed_results)
            {
                drop(thread);
                let mut items = tape.into_kept();
                let memory = items.memory();
                if self.kept.is_empty() || self.kept_memory + memory <= self.line_bytes {
                    items.shrink();
                    self.kept_memory += memory;
                    self.kept.push((offset, items));
                }
            }
        }
        Ok(Some(()))
    }

    /// Line `offset` left to Python: an empty thread in its place, so that every other line
    /// keeps its row.
    fn decline(
        &mut self,
        offset: usize,
        reading: LineReading<'_>,
        reader: &mut Reader,
    ) -> PyResult<()> {
        let nothing: &[Value<'_>] = &[];
        self.columns
            .push_thread(offset, nothing, reading.options, reader)?;
        if let Some(anywhere) = &mut self.anywhere {
            anywhere.push_thread(nothing, &mut self.scratch)?;
        }
        self.lines.push(LineOutcome {
            id_text: "null".to_owned(),
            messages: 0,
            chat_first: false,
        });
        self.declined.push(offset as i64);
        Ok(())
    }

    /// Append a later part's lines.
    fn append(&mut self, part: ChunkColumns) {
        let lines = self.lines.len() as i64;
        self.declined
            .extend(part.declined.iter().map(|offset| offset + lines));
        self.read_as_own.extend(
            part.read_as_own
                .iter()
                .map(|&(offset, format)| (offset + lines, format)),
        );
        self.kept.extend(
            part.kept
                .into_iter()
                .map(|(offset, items)| (offset + lines as usize, items)),
        );
        let base = self.native.len() as i64;
        self.columns.append(part.columns);
        self.lines.extend(part.lines);
        self.figures.extend(part.figures);
        self.figures_odd |= part.figures_odd;
        self.native.extend(part.native);
        self.native_ends
            .extend(part.native_ends.into_iter().map(|end| end + base));
        self.sources.extend(part.sources);
        if let (Some(anywhere), Some(more)) = (&mut self.anywhere, part.anywhere) {
            anywhere.append(more);
        }
    }
}

/// How a chunk's lines are read: the scan's options, whether usage figures are summed, and
/// where a run object keeps its messages and id.
#[derive(Clone, Copy)]
pub struct LineReading<'a> {
    pub options: &'a ScanOptions,
    pub count_tokens: bool,
    pub keys: RunKeys<'a>,
    /// Read each thread's masked copy (`--mask-volatile`, `masking.rs`).
    pub mask_volatile: bool,
    /// Read each thread's message screens for finding loops anywhere in it
    /// (`ChunkColumns::anywhere`, `--anywhere`) instead of its cycle columns, its agent texts
    /// checked with these text-run options.
    pub anywhere: Option<TextRunOptions>,
    /// Keep the tapes of the lines that may loop (`ChunkColumns::kept`).
    pub keep_tapes: bool,
    /// Tapes format detection made of some of the lines, by their address (`DetectedTapes`).
    pub detected: Option<&'a DetectedTapes>,
    /// The chat format was detected, not given: a run declaring itself a mini-swe-agent
    /// run is read as one, a run showing SWE-agent's actions as SWE-agent's
    /// (`adapters::run_reading_format`, `documents.read_run`'s `declared_wins`).
    pub declared_wins: bool,
}

/// The tapes format detection made of a chunk's first lines, by the address of each line's
/// text, for the scan to take instead of parsing those lines again (`KeptTapes` in
/// `lib.rs`): on a directory of small files detection judges nearly every line, and that
/// second parse of each was about a sixth of the run.
///
/// Why it is safe: the `bytes` each tape's line lies in is held (by the chunk's list and by
/// the tape's holder) until the scan is over, unchanged (`bytes` is immutable), so a line
/// of the chunk found at a kept tape's address with its length is that very text.
pub struct DetectedTapes {
    tapes: Mutex<HashMap<usize, KeptItems>>,
    /// How many were taken (`scan_lines` tells it, for the tests).
    taken: AtomicUsize,
}

impl DetectedTapes {
    pub fn new(tapes: HashMap<usize, KeptItems>) -> Self {
        DetectedTapes {
            tapes: Mutex::new(tapes),
            taken: AtomicUsize::new(0),
        }
    }

    /// How many tapes lines took.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }

    /// The tape of `line`, taken, when detection made one of it.
    fn take<'l>(&self, line: &'l [u8]) -> Option<Tape<'l>> {
        let mut tapes = self
            .tapes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let place = line.as_ptr() as usize;
        let items = tapes.remove(&place)?;
        // (a kept tape's line passed this check when it was parsed)
        let Ok(text) = simdutf8::basic::from_utf8(line) else {
            tapes.insert(place, items);
            return None;
        };
        let tape = Tape::from_kept(text, items)
            .map_err(|items| tapes.insert(place, items)) // another line's: left for it
            .ok()?;
        self.taken.fetch_add(1, Ordering::Relaxed);
        Some(tape)
    }
}

/// The tape of `line`: the one format detection made of it, taken, or a parse of its own.
fn tape_of<'l>(detected: Option<&DetectedTapes>, line: &'l [u8]) -> Result<Tape<'l>, Declined> {
    match detected.and_then(|detected| detected.take(line)) {
        Some(tape) => Ok(tape),
        None => Tape::parse(line),
    }
}

/// The most a line's reading takes (its tape, its thread, its native translation, its
/// columns), in bytes per byte of the line, with a margin: a line of a million tiny
/// messages (`{"role":"user","content":"t"}`, 36.5 MB) raised the process's peak RSS by
/// 6.2 times its size (the line itself included), 19 times with `--anywhere`'s screens and
/// runs; one of 150,000 Anthropic tool calls and results (47 MB), about 9 times, and with
/// 8 asked for its reading ran out part-way under `ulimit -v 700000` (the allocator's
/// abort, a tester's case). Asked for ahead by `memory_for`.
const READING_BYTES_PER_BYTE: usize = 12;
const ANYWHERE_BYTES_PER_BYTE: usize = 24;
/// Lines shorter than this are read without asking (a few tens of megabytes at most).
const ASKED_FROM_BYTES: usize = 1 << 20;

/// Whether the memory reading a line of `bytes` bytes may take can be had now: asked for and
/// given back at once (address space only, no page touched). A line that cannot have it is
/// left to Python, whose reading raises the MemoryError the CLI reports with the line's
/// place (exit 71, the records before it written); the core's own allocations would fail
/// part-way with the allocator's abort, which ends the process with no record written.
pub(crate) fn memory_for(bytes: usize, anywhere: bool) -> bool {
    let per_byte = if anywhere {
        ANYWHERE_BYTES_PER_BYTE
    } else {
        READING_BYTES_PER_BYTE
    };
    bytes < ASKED_FROM_BYTES || can_have(bytes.saturating_mul(per_byte))
}

/// The most the column pass takes per message of a thread, in bytes, with a margin: its list
/// of messages, screens, exact keys' slots and Z array (and with `--anywhere`, its message
/// screens). A line of tiny messages holds many more of them than
/// `memory_for` counts on: ten million `{}` (30 MB) took 746 MB, and under `ulimit -v
/// 700000` the column pass's allocation of its screens ended the process (the allocator's
/// abort) where its reading should have been Python's (`memory_for`).
const COLUMN_BYTES_PER_MESSAGE: usize = 64;
const ANYWHERE_BYTES_PER_MESSAGE: usize = 160;

/// Whether the memory the column pass takes for a thread of `messages` messages can be had
/// now (`memory_for`, asked once a line is parsed, before its messages are listed; and of
/// a Python thread, before it is read).
pub(crate) fn memory_for_messages(messages: usize, anywhere: bool) -> bool {
    let per_message = if anywhere {
        ANYWHERE_BYTES_PER_MESSAGE
    } else {
        COLUMN_BYTES_PER_MESSAGE
    };
    let bytes = messages.saturating_mul(per_message);
    bytes < ASKED_FROM_BYTES || can_have(bytes)
}

/// A MemoryError, after `place` (`python_messages`'s naming of the thread), when the column
/// pass's memory for a Python thread of `messages` messages cannot be had
/// (`memory_for_messages`): taken a piece at a time, the allocator's failure would end the
/// process (`scan` of three million messages under a `ulimit -v` a little above the
/// process's size did).
fn room_for_messages(messages: usize, place: &str) -> PyResult<()> {
    if memory_for_messages(messages, false) {
        return Ok(());
    }
    Err(PyMemoryError::new_err(format!(
        "{place}not enough memory to read its {messages} messages"
    )))
}

/// Whether `bytes` of memory can be had now: asked for and given back at once (address space
/// only, no page touched).
pub(crate) fn can_have(bytes: usize) -> bool {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).is_ok()
}

/// One part of a chunk, read on a worker thread without the GIL: native lines as they are,
/// lines in another format translated first (`adapters.rs`).
fn read_part(
    lines: &[&[u8]],
    reading: LineReading<'_>,
    format: Option<Format>,
) -> PyResult<ChunkColumns> {
    let mut part = ChunkColumns::new(lines.len(), reading.anywhere);
    let mut reader = Reader::default();
    let mut scratch = Vec::new();
    let mut masked = Vec::new();
    // A line read as written, or as the native line made of it, is read with the native keys.
    let native = LineReading {
        keys: RunKeys::default(),
        ..reading
    };
    for (offset, line) in lines.iter().enumerate() {
        // A line the memory for whose reading cannot be had is Python's (`memory_for`).
        let fits = memory_for(line.len(), reading.anywhere.is_some());
        if format.is_none() && !reading.mask_volatile {
            if !fits
                || part
                    .push_line(line, offset, None, reading, &mut reader, true)?
                    .is_none()
            {
                part.decline(offset, reading, &mut reader)?;
            }
            continue;
        }
        // Another format is translated to a native line; a masked thread's native line is
        // the masked copy of that (or of the line itself).
        scratch.clear();
        let sources = part.sources.len();
        let mut read_as = format;
        // Some(the record's message count, when it is not the native line's: a translated
        // line counts its source messages), or None when Python must read the line.
        let read: Option<Option<usize>> = match format {
            _ if !fits => None,
            Some(format) => {
                match tape_of(reading.detected, line).and_then(|tape| {
                    let format = if reading.declared_wins {
                        adapters::run_reading_format(&tape, format, reading.keys)?
                    } else {
                        format
                    };
                    read_as = Some(format);
                    adapters::translate_tape(
                        &tape,
                        format,
                        reading.keys,
                        &mut scratch,
                        &mut part.sources,
                    )
                }) {
                    Ok(count) if reading.mask_volatile => {
                        masked.clear();
                        let made =
                            masking::masked_native_line(&scratch, RunKeys::default(), &mut masked);
                        std::mem::swap(&mut scratch, &mut masked);
                        made.map(|_| Some(count))
                    }
                    Ok(count) => Some(Some(count)),
                    Err(_) => None,
                }
            }
            None => tape_of(reading.detected, line)
                .ok()
                .and_then(|tape| masking::masked_native_tape(&tape, reading.keys, &mut scratch))
                .map(|count| {
                    part.sources.extend(0..count as u32); // each message its own source
                    None
                }),
        };
        // The native line is kept with the part's: memory for it is asked for fallibly, and
        // a line it cannot be had for is Python's (whose MemoryError the CLI reports with the
        // line's place) rather than the allocator's abort.
        let read = read.filter(|_| part.native.try_reserve(scratch.len()).is_ok());
        let taken = match read {
            Some(messages) => part
                .push_line(&scratch, offset, messages, native, &mut reader, false)?
                .is_some(),
            None => false,
        };
        if taken {
            part.native.extend_from_slice(&scratch);
            if let Some(own) = read_as.filter(|_| read_as != format) {
                part.read_as_own.push((offset as i64, own));
            }
        } else {
            part.sources.truncate(sources); // what the translation wrote before declining
            part.decline(offset, reading, &mut reader)?;
        }
        part.native_ends.push(part.native.len() as i64);
    }
    Ok(part)
}

/// Lines per part handed to a worker thread: small enough to balance two cores, large
/// enough that stitching parts costs nothing.
const LINES_PER_PART: usize = 256;

/// The chunk's lines (native, or in `format` and translated) read on `threads` worker
/// threads (the GIL released; see `pool::map_parts`: one is this thread), parts stitched in
/// order; a line that needs Python is declined alone (`ChunkColumns::declined`). No more
/// threads are started than there are parts of `LINES_PER_PART` lines: the others would
/// have nothing to read.
pub fn columns_of_lines(
    py: Python<'_>,
    lines: &[&[u8]],
    reading: LineReading<'_>,
    threads: usize,
    format: Option<Format>,
) -> PyResult<ChunkColumns> {
    let parts: Vec<PyResult<ChunkColumns>> = py.detach(|| {
        crate::pool::map_parts(lines, LINES_PER_PART, threads, |chunk| {
            read_part(chunk, reading, format)
        })
    });
    let mut whole = ChunkColumns::new(lines.len(), reading.anywhere);
    for part in parts {
        whole.append(part?);
    }
    Ok(whole)
}

/// Message screens and roles of a batch of Python threads (see `anywhere.rs`).
pub fn message_columns_of_objects<'py>(
    threads: &Bound<'py, PyList>,
    text_run: TextRunOptions,
    keep: bool,
) -> PyResult<(MessageColumns, ReadThreads<'py>)> {
    let py = threads.py();
    let mut columns = MessageColumns::new(text_run);
    let mut scratch = Vec::new();
    let mut read = keep.then(|| Vec::with_capacity(threads.len()));
    let mut since_pause = PAUSE_MESSAGES; // a pause first: a signal already pending ends it
    for (index, thread) in threads.iter().enumerate() {
        if since_pause >= PAUSE_MESSAGES {
            pause(py)?;
            since_pause = 0;
        }
        let items = python_messages(&thread, Some(index))?;
        since_pause += items.len() + 1;
        columns
            .push_thread(&items, &mut scratch)
            .map_err(|error| located(py, error, Some(index), &items))?;
        keep_read(&mut read, &thread, items, true)?; // a loop may lie anywhere
    }
    Ok((columns, read))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str, keys: RunKeys<'_>) -> Option<(String, usize)> {
        let tape = Tape::parse(line.as_bytes()).ok()?;
        native_thread(tape.root(), keys).map(|(id, messages)| (id, messages.len()))
    }

    #[test]
    fn a_detected_tape_is_taken_once_and_only_by_its_own_line() {
        let line = br#"{"id":"a","messages":[{"type":"user","text":"hi"}]}"#.to_vec();
        let twin = line.clone(); // the same text in another buffer
        let items = Tape::parse(&line).unwrap().into_kept();
        let detected = DetectedTapes::new(HashMap::from([(items.place(), items)]));
        assert!(detected.take(&twin).is_none());
        assert!(detected.take(&line[..line.len() - 1]).is_none()); // same place, shorter
        let tape = detected.take(&line).expect("its own line's tape");
        let fresh = Tape::parse(&line).unwrap();
        assert_eq!(
            native_thread(tape.root(), RunKeys::default()).map(|(id, m)| (id, m.len())),
            native_thread(fresh.root(), RunKeys::default()).map(|(id, m)| (id, m.len()))
        );
        assert!(detected.take(&line).is_none()); // taken once
    }

    /// The columns' figures of one thread (its texts by count: they are Python's).
    fn figures(columns: &Columns) -> Vec<Vec<i64>> {
        let mut figures = vec![
            columns.lengths.clone(),
            columns.suffix_period.clone(),
            columns.suffix_copies.clone(),
            columns.tail_length.clone(),
            columns.tail_offsets.clone(),
            columns
                .tail_kind
                .iter()
                .map(|&kind| i64::from(kind))
                .collect(),
            columns.tail_kind_id.clone(),
            columns.tail_name.clone(),
            columns.tail_arguments.clone(),
            columns.tail_result.clone(),
            columns.result_run.clone(),
            columns.result_start.clone(),
            columns.result_period.clone(),
            columns.result_copies.clone(),
            columns.text_thread.clone(),
            columns.text_index.clone(),
        ];
        figures.push(vec![columns.texts.len() as i64]);
        figures
    }

    #[test]
    fn columns_cleared_and_a_reader_used_read_a_thread_as_new_ones() {
        // What a single call keeps for the next (`with_columns_of_thread`) reads each thread
        // as fresh columns and a fresh reader do, whatever it read before.
        let lines = [
            r#"[{"type":"a","text":"x"},{"type":"b","text":"y"},{"type":"a","text":"x"},{"type":"b","text":"y"}]"#,
            r#"[{"type":"activity","text":"","meta":{"activity":{"type":"request","function":{"name":"f","arguments":{"q":1}}}}},{"type":"activity","text":"","meta":{"activity":{"type":"response","function":{"name":"f","arguments":{"q":1},"result":"ok"}}}}]"#,
            r#"[{"type":"user","text":"hi"}]"#,
            r#"[]"#,
            r#"[{"type":"bot","text":"ok ok ok"},{"type":"tool","text":"","meta":{"k":[1,2]}},{"type":"bot","text":"ok ok ok"},{"type":"tool","text":"","meta":{"k":[1,2]}},{"type":"bot","text":"ok ok ok"},{"type":"tool","text":"","meta":{"k":[1,2]}}]"#,
        ];
        let options = ScanOptions {
            suffix: crate::suffix::SuffixOptions {
                min_repetitions: 2,
                min_pattern_length: 1,
                max_pattern_length: None,
            },
            needed_results: 2,
        };
        let tapes: Vec<Tape<'_>> = lines
            .iter()
            .map(|line| Tape::parse(line.as_bytes()).unwrap())
            .collect();
        let mut kept = Columns::new();
        let mut reader = Reader::default();
        for first in &tapes {
            for second in &tapes {
                let (_, before) = native_thread(first.root(), RunKeys::default()).unwrap();
                let (_, messages) = native_thread(second.root(), RunKeys::default()).unwrap();
                kept.push_thread(0, &before, &options, &mut reader).unwrap();
                kept.clear();
                kept.push_thread(0, &messages, &options, &mut reader)
                    .unwrap();
                let mut fresh = Columns::new();
                fresh
                    .push_thread(0, &messages, &options, &mut Reader::default())
                    .unwrap();
                assert_eq!(figures(&kept), figures(&fresh));
                kept.clear();
                assert_eq!(figures(&kept), figures(&Columns::new()));
            }
        }
    }

    #[test]
    fn memory_is_asked_for_long_lines_only_and_refused_past_the_address_space() {
        // Short lines are not asked for; a line whose reading could never be had (more
        // bytes than an address space holds, the product saturating) is refused.
        assert!(memory_for(ASKED_FROM_BYTES - 1, true));
        assert!(memory_for(ASKED_FROM_BYTES, false));
        assert!(!memory_for(usize::MAX / 4, false));
        assert!(!memory_for(usize::MAX / ANYWHERE_BYTES_PER_BYTE + 1, true));
        assert!(memory_for_messages(
            ASKED_FROM_BYTES / COLUMN_BYTES_PER_MESSAGE,
            false
        ));
        assert!(!memory_for_messages(usize::MAX / 8, false));
        assert!(!memory_for_messages(
            usize::MAX / ANYWHERE_BYTES_PER_MESSAGE + 1,
            true
        ));
    }

    #[test]
    fn a_run_s_id_is_documents_run_id() {
        let default = RunKeys::default();
        let read_id = |line: &str| read(line, default).map(|(id, _)| id);
        assert_eq!(
            read_id(r#"{"instance_id":"astropy-1","messages":[]}"#),
            Some("\"astropy-1\"".into())
        );
        assert_eq!(
            read_id(r#"{"id":null,"instance_id":"x","messages":[]}"#),
            Some("null".into())
        );
        assert_eq!(
            read_id(r#"{"task_id":3,"trial":true,"traj":[]}"#),
            Some("\"3/true\"".into())
        );
        assert_eq!(read_id(r#"{"task_id":3,"history":[]}"#), Some("3".into()));
        // Each part of a joined id as JSON writes it; a null trial is left out.
        assert_eq!(
            read_id(r#"{"task_id":1.5,"trial":0,"messages":[]}"#),
            Some("\"1.5/0\"".into())
        );
        assert_eq!(
            read_id(r#"{"task_id":"t","trial":null,"messages":[]}"#),
            Some("\"t\"".into())
        );
        // A messages key holding no array is Python's to read.
        assert_eq!(read_id(r#"{"messages":null,"traj":[]}"#), None);
    }

    #[test]
    fn a_run_is_found_under_the_given_keys() {
        let line = r#"{"uuid":"u1","id":"i1","steps":[{"type":"user"}],"messages":[]}"#;
        assert_eq!(read(line, RunKeys::default()), Some(("\"i1\"".into(), 0)));
        let keys = RunKeys {
            messages: Some("steps"),
            id: Some("uuid"),
        };
        assert_eq!(read(line, keys), Some(("\"u1\"".into(), 1)));
        // An id key the run lacks is a null id, not the known keys' id.
        let keys = RunKeys {
            messages: Some("steps"),
            id: Some("name"),
        };
        assert_eq!(read(line, keys), Some(("null".into(), 1)));
        // A messages key the run lacks, or that holds no array: Python's to report.
        let keys = RunKeys {
            messages: Some("uuid"),
            id: None,
        };
        assert_eq!(read(line, keys), None);
    }
}
