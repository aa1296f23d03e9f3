//! A batch of threads read once through the CPython API into flat columns for the NumPy
//! heuristics: per thread, the repeated-suffix period (the Z pass in `suffix.rs`), the trailing
//! run of tool calls with their payloads as exact ids, the newest settled tool results, and
//! the texts the text-run check reads.
//!
//! Reads are lazy: a message's meta and a tool call's payloads are encoded only where a
//! cheaper column cannot already decide (a suffix candidate, the trailing activities, the
//! newest results). Ids are exact, never hashes: payloads are interned per thread by their
//! canonical bytes, so two ids are equal exactly when the values are equal in JavaScript, and
//! no collision of any hash can change an answer.

use ahash::AHashMap as HashMap;

use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use crate::objects;
use crate::suffix::{self, SuffixOptions};

/// Rows of the trailing activity run: a call needs at least this many to count as a loop.
pub const ACTIVITY_TAIL_MIN_LENGTH: usize = 8;
/// Messages at the end of a thread the text-run check looks at.
pub const THREAD_TEXT_RUN_MESSAGES: usize = 5;

/// `kind` codes of a tail row.
pub const REQUEST: i8 = 1;
pub const RESPONSE: i8 = 2;
pub const OTHER_KIND: i8 = 3;

/// An id for a payload that is absent (distinct from every value, `null` included).
pub const ABSENT: i64 = -1;

static SEQUENCE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Exact ids of canonical encodings within one thread: equal ids, equal values.
#[derive(Default)]
pub struct Interner {
    ids: HashMap<Vec<u8>, i64>,
    scratch: Vec<u8>,
}

impl Interner {
    fn clear(&mut self) {
        self.ids.clear();
    }

    /// The id of the bytes in `scratch` (a tag byte first keeps namespaces apart).
    fn intern_scratch(&mut self) -> i64 {
        let next = self.ids.len() as i64;
        if let Some(&id) = self.ids.get(self.scratch.as_slice()) {
            return id;
        }
        self.ids.insert(self.scratch.clone(), next);
        next
    }

    /// The id of a value's canonical encoding under `tag`.
    pub fn value(&mut self, tag: u8, value: &Bound<'_, PyAny>) -> PyResult<i64> {
        self.scratch.clear();
        self.scratch.push(tag);
        objects::push_canonical(&mut self.scratch, value)?;
        Ok(self.intern_scratch())
    }

    /// The id of a tuple of ids under `tag`.
    pub fn ids(&mut self, tag: u8, parts: &[i64]) -> i64 {
        self.scratch.clear();
        self.scratch.push(tag);
        for part in parts {
            self.scratch.extend_from_slice(&part.to_le_bytes());
        }
        self.intern_scratch()
    }
}

/// A message's field as `message.get(key)` gives it (None when absent).
pub fn field<'py>(
    message: &Bound<'py, PyAny>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Ok(dict) = message.cast_exact::<PyDict>() {
        return dict.get_item(key);
    }
    match message.get_item(key) {
        Ok(value) => Ok(Some(value)),
        Err(error) if error.is_instance_of::<pyo3::exceptions::PyKeyError>(message.py()) => {
            Ok(None)
        }
        Err(error) => Err(error),
    }
}

/// Whether `value` is a `str` whose content is exactly `expected` (ASCII).
pub fn is_text(value: Option<&Bound<'_, PyAny>>, expected: &str) -> bool {
    match value.and_then(|v| v.cast::<PyString>().ok()) {
        Some(text) => text.to_str().is_ok_and(|content| content == expected),
        None => false,
    }
}

/// A well-formed activity's parts (SPEC §2), payloads not yet read.
pub struct Activity<'py> {
    pub kind: Bound<'py, PyString>,
    pub name: Bound<'py, PyString>,
    pub function: Bound<'py, PyAny>,
}

/// The message's activity when it is well formed: `type` "activity", a mapping `meta` whose
/// `activity` is a mapping with a string `type` and a mapping `function` with a string `name`.
pub fn parse_activity<'py>(message: &Bound<'py, PyAny>) -> PyResult<Option<Activity<'py>>> {
    let py = message.py();
    if !is_text(field(message, intern!(py, "type"))?.as_ref(), "activity") {
        return Ok(None);
    }
    let Some(meta) = field(message, intern!(py, "meta"))? else {
        return Ok(None);
    };
    if !objects::is_mapping(&meta)? {
        return Ok(None);
    }
    let Some(activity) = field(&meta, intern!(py, "activity"))? else {
        return Ok(None);
    };
    if !objects::is_mapping(&activity)? {
        return Ok(None);
    }
    let Some(kind) = field(&activity, intern!(py, "type"))? else {
        return Ok(None);
    };
    let Ok(kind) = kind.cast_into::<PyString>() else {
        return Ok(None);
    };
    let Some(function) = field(&activity, intern!(py, "function"))? else {
        return Ok(None);
    };
    if !objects::is_mapping(&function)? {
        return Ok(None);
    }
    let Some(name) = field(&function, intern!(py, "name"))? else {
        return Ok(None);
    };
    let Ok(name) = name.cast_into::<PyString>() else {
        return Ok(None);
    };
    Ok(Some(Activity {
        kind,
        name,
        function,
    }))
}

/// Whether a mapping holds `key` (`key in mapping`).
fn has_key(mapping: &Bound<'_, PyAny>, key: &Bound<'_, PyString>) -> PyResult<bool> {
    if let Ok(dict) = mapping.cast_exact::<PyDict>() {
        return dict.contains(key);
    }
    mapping.contains(key)
}

/// Payload ids of one activity: (kind code, kind id, name id, arguments id, result id).
fn activity_ids(
    interner: &mut Interner,
    activity: &Activity<'_>,
) -> PyResult<(i8, i64, i64, i64, i64)> {
    let py = activity.kind.py();
    let kind_code = match activity.kind.to_str() {
        Ok("request") => REQUEST,
        Ok("response") => RESPONSE,
        _ => OTHER_KIND,
    };
    let kind = interner.value(b'k', activity.kind.as_any())?;
    let name = interner.value(b'n', activity.name.as_any())?;
    let arguments = payload(interner, b'a', &activity.function, intern!(py, "arguments"))?;
    let result = payload(interner, b'r', &activity.function, intern!(py, "result"))?;
    Ok((kind_code, kind, name, arguments, result))
}

fn payload(
    interner: &mut Interner,
    tag: u8,
    function: &Bound<'_, PyAny>,
    key: &Bound<'_, PyString>,
) -> PyResult<i64> {
    if !has_key(function, key)? {
        return Ok(ABSENT);
    }
    match field(function, key)? {
        Some(value) => interner.value(tag, &value),
        None => interner.value(tag, &function.py().None().into_bound(function.py())),
    }
}

/// Whether the name starts with "_" (such tool results are not counted as settled).
fn is_private(name: &Bound<'_, PyString>) -> bool {
    // Lossy is exact here: a lone surrogate becomes U+FFFD, which is not "_" either.
    name.to_string_lossy().starts_with('_')
}

/// Everything the NumPy heuristics read, for a whole batch.
#[derive(Default)]
pub struct Columns {
    pub lengths: Vec<i64>,
    pub suffix_period: Vec<i64>,
    pub suffix_copies: Vec<i64>,
    pub tail_length: Vec<i64>,
    pub tail_offsets: Vec<i64>,
    pub tail_kind: Vec<i8>,
    pub tail_kind_id: Vec<i64>,
    pub tail_name: Vec<i64>,
    pub tail_arguments: Vec<i64>,
    pub tail_result: Vec<i64>,
    pub result_run: Vec<i64>,
    pub result_start: Vec<i64>,
    pub result_period: Vec<i64>,
    pub result_copies: Vec<i64>,
    pub text_thread: Vec<i64>,
    pub text_index: Vec<i64>,
}

/// The options the column pass needs.
pub struct ScanOptions {
    pub suffix: SuffixOptions,
    pub needed_results: usize,
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// The thread's messages, each checked to be a mapping; errors name thread and message.
fn messages<'py>(thread: &Bound<'py, PyAny>, index: usize) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let py = thread.py();
    let items: Vec<Bound<'py, PyAny>> = if let Ok(list) = thread.cast_exact::<PyList>() {
        list.iter().collect()
    } else if let Ok(tuple) = thread.cast_exact::<PyTuple>() {
        tuple.iter().collect()
    } else {
        let is_sequence =
            thread.is_instance(SEQUENCE.import(py, "collections.abc", "Sequence")?)?;
        if !is_sequence
            || thread.is_instance_of::<PyString>()
            || thread.is_instance_of::<pyo3::types::PyBytes>()
            || objects::is_mapping(thread)?
        {
            return Err(PyTypeError::new_err(format!(
                "thread {index}: messages must be a sequence of mappings, got {}",
                type_name(thread)
            )));
        }
        thread.try_iter()?.collect::<PyResult<_>>()?
    };
    for (position, message) in items.iter().enumerate() {
        if !message.is_exact_instance_of::<PyDict>() && !objects::is_mapping(message)? {
            return Err(PyTypeError::new_err(format!(
                "thread {index}: messages[{position}] must be a mapping, got {}",
                type_name(message)
            )));
        }
    }
    Ok(items)
}

impl Columns {
    /// Read every thread of the batch. Errors name the thread and message index.
    pub fn read(threads: &[Bound<'_, PyAny>], options: &ScanOptions) -> PyResult<Columns> {
        let mut columns = Columns::default();
        columns.tail_offsets.push(0);
        let mut interner = Interner::default();
        let mut keys = suffix::KeyReader::default();
        for (index, thread) in threads.iter().enumerate() {
            let items = messages(thread, index)?;
            interner.clear();
            columns.thread(index, &items, options, &mut interner, &mut keys)?;
        }
        Ok(columns)
    }

    fn thread(
        &mut self,
        index: usize,
        items: &[Bound<'_, PyAny>],
        options: &ScanOptions,
        interner: &mut Interner,
        keys: &mut suffix::KeyReader,
    ) -> PyResult<()> {
        let length = items.len();
        self.lengths.push(length as i64);
        let (period, copies) = keys.repeated_suffix(items, &options.suffix)?;
        self.suffix_period.push(period as i64);
        self.suffix_copies.push(copies as i64);
        self.activity_tail(items, interner)?;
        self.result_run(items, options.needed_results, interner)?;
        self.text_candidates(index, items)?;
        Ok(())
    }

    /// The trailing contiguous run of well-formed activities; payload ids only when it is
    /// long enough to be judged.
    fn activity_tail(
        &mut self,
        items: &[Bound<'_, PyAny>],
        interner: &mut Interner,
    ) -> PyResult<()> {
        let mut tail = Vec::new();
        for message in items.iter().rev() {
            match parse_activity(message)? {
                Some(activity) => tail.push(activity),
                None => break,
            }
        }
        self.tail_length.push(tail.len() as i64);
        if tail.len() >= ACTIVITY_TAIL_MIN_LENGTH {
            for activity in tail.iter().rev() {
                let (kind_code, kind, name, arguments, result) = activity_ids(interner, activity)?;
                self.tail_kind.push(kind_code);
                self.tail_kind_id.push(kind);
                self.tail_name.push(name);
                self.tail_arguments.push(arguments);
                self.tail_result.push(result);
            }
        }
        self.tail_offsets.push(self.tail_kind.len() as i64);
        Ok(())
    }

    /// The run of identical settled tool results (a response, not "_"-named, with a result;
    /// compared as (name, arguments, result) ids) that ends the thread: its length, and where
    /// it is at least `needed` long, its span.
    fn result_run(
        &mut self,
        items: &[Bound<'_, PyAny>],
        needed: usize,
        interner: &mut Interner,
    ) -> PyResult<()> {
        let mut positions: Vec<usize> = Vec::new();
        let mut newest: Option<(i64, i64)> = None; // (signature, name) of the newest result
        let mut in_run = true;
        for position in (0..items.len()).rev() {
            let message = &items[position];
            let Some(activity) = parse_activity(message)? else {
                continue;
            };
            if activity.kind.to_str().ok() != Some("response") || is_private(&activity.name) {
                continue;
            }
            if !has_key(&activity.function, intern!(message.py(), "result"))? {
                continue;
            }
            let (_, _, name, arguments, result) = activity_ids(interner, &activity)?;
            let signature = interner.ids(b's', &[name, arguments, result]);
            match newest {
                None => newest = Some((signature, name)),
                Some((first, _)) if first != signature => in_run = false,
                Some(_) => {}
            }
            if in_run {
                positions.push(position);
            } else {
                break;
            }
        }
        self.result_run.push(positions.len() as i64);
        if positions.len() >= needed {
            let first = *positions.last().expect("a run has a position");
            let mut start = first;
            if first > 0 {
                if let Some(before) = parse_activity(&items[first - 1])? {
                    let name = interner.value(b'n', before.name.as_any())?;
                    let run_name = newest.map(|(_, name)| name);
                    if before.kind.to_str().ok() == Some("request") && Some(name) == run_name {
                        start = first - 1;
                    }
                }
            }
            let spacing = if positions.len() > 1 {
                (positions[0] - first) as f64 / (positions.len() - 1) as f64
            } else {
                0.0
            };
            self.result_start.push(start as i64);
            // Python's round(): halves to even.
            self.result_period
                .push((spacing.round_ties_even() as i64).max(1));
            self.result_copies.push(positions.len() as i64);
        } else {
            self.result_start.push(-1);
            self.result_period.push(0);
            self.result_copies.push(0);
        }
        Ok(())
    }

    /// The last five messages whose type is neither "reasoning" nor "activity" and whose text
    /// is a non-empty string: the only texts the text-run check reads.
    fn text_candidates(&mut self, index: usize, items: &[Bound<'_, PyAny>]) -> PyResult<()> {
        let first = items.len().saturating_sub(THREAD_TEXT_RUN_MESSAGES);
        for (position, message) in items.iter().enumerate().skip(first) {
            let py = message.py();
            let kind = field(message, intern!(py, "type"))?;
            if is_text(kind.as_ref(), "reasoning") || is_text(kind.as_ref(), "activity") {
                continue;
            }
            let text = field(message, intern!(py, "text"))?;
            if text.is_some_and(|t| t.cast::<PyString>().is_ok_and(|s| s.len().unwrap_or(0) > 0)) {
                self.text_thread.push(index as i64);
                self.text_index.push(position as i64);
            }
        }
        Ok(())
    }
}
