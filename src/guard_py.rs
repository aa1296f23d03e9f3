//! Python bindings of the guard: `GuardCore` (the base class of `vthread.Guard`), bytes fed
//! straight from a pipe for `vthread guard`, and `scan_texts` over many texts on every core.

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyList, PyMemoryView, PyString};

use crate::guard::{
    replay_segments, unfinished_character, utf16_len, Feed, Guard, Options, Reason, Segment,
    StateReader, StateWriter, TripAt,
};

/// A `str`'s storage: (kind, data, length in code points). Valid while the str is alive.
#[derive(Clone, Copy)]
struct Storage {
    kind: u32,
    data: *const u8,
    length: usize,
}

// SAFETY: a str's storage is immutable for the str's whole life; the caller keeps every str
// alive (it holds the list) while other threads read it, and only reads.
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

fn storage(text: &Bound<'_, PyString>) -> Storage {
    let (kind, data, length) = crate::node::storage(text);
    Storage { kind, data, length }
}

/// Run `work` over the storage as a slice of its code unit width.
fn with_units<R>(text: Storage, work: impl UnitWork<R>) -> R {
    // SAFETY: `text` describes `length` code points of the given width, alive (see Storage).
    unsafe {
        match text.kind {
            ffi::PyUnicode_1BYTE_KIND => {
                work.run(std::slice::from_raw_parts(text.data, text.length))
            }
            ffi::PyUnicode_2BYTE_KIND => work.run(std::slice::from_raw_parts(
                text.data as *const u16,
                text.length,
            )),
            _ => work.run(std::slice::from_raw_parts(
                text.data as *const u32,
                text.length,
            )),
        }
    }
}

/// A computation generic over the code unit width.
trait UnitWork<R> {
    fn run<T: crate::guard::Unit>(self, text: &[T]) -> R;
}

struct PushInto<'a>(&'a mut Guard, Feed);

impl UnitWork<Option<TripAt>> for PushInto<'_> {
    fn run<T: crate::guard::Unit>(self, text: &[T]) -> Option<TripAt> {
        self.0.push(text, self.1)
    }
}

/// Where one segment of a text fed character by character trips a guard: (index, UTF-16
/// units before it).
struct Replay<'a>(&'a mut Guard, Segment);

impl UnitWork<Option<(usize, u64)>> for Replay<'_> {
    fn run<T: crate::guard::Unit>(self, text: &[T]) -> Option<(usize, u64)> {
        self.0.replay_segment(text, self.1).map(|at| {
            let warm = self.1.warm;
            (
                at.index,
                self.1.warm_units + utf16_len(&text[warm..at.index]),
            )
        })
    }
}

/// A text's segments (one unless it is long).
struct Segments(usize, usize);

impl UnitWork<Vec<Segment>> for Segments {
    fn run<T: crate::guard::Unit>(self, text: &[T]) -> Vec<Segment> {
        let (segment_chars, window) = (self.0, self.1);
        let parts = text.len() / segment_chars.max(1);
        if parts < 2 {
            return vec![Segment {
                warm: 0,
                start: 0,
                end: text.len(),
                warm_units: 0,
            }];
        }
        let parts = parts.min(4 * crate::pool::worker_threads());
        replay_segments(text, parts, window)
    }
}

/// Below this many code points in all, texts are replayed on the calling thread: starting
/// a pool would cost more than it saves.
const PARALLEL_FROM_POINTS: usize = 1 << 16;

/// Texts longer than twice this many code points are replayed in segments on every core.
const SEGMENT_CHARS: usize = 1 << 16;

fn count_attribute(options: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    let value = options.getattr(name)?;
    // Counts past u64 (a max_repeats or min_chars of 10**30) can never be reached.
    Ok(value.extract::<u64>().unwrap_or(u64::MAX))
}

/// Resolved options from a `GuardOptions` (Python has validated and limited them).
fn options_of(options: &Bound<'_, PyAny>) -> PyResult<Options> {
    let size = |name: &str| -> PyResult<usize> {
        let value: u64 = options.getattr(name)?.extract()?;
        usize::try_from(value).map_err(|_| PyTypeError::new_err(format!("{name} too large")))
    };
    let (ngram, window) = (size("ngram")?, size("window")?);
    if ngram < 2 || window < ngram || window > 1 << 62 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unresolved guard options: need 2 <= ngram <= window <= 2**62, got ngram \
             {ngram}, window {window} (resolve them with vthread._options.guard_options)"
        )));
    }
    Ok(Options {
        ngram,
        window,
        max_repeats: count_attribute(options, "max_repeats")?,
        max_unique_ratio: options.getattr("max_unique_ratio")?.extract()?,
        min_chars: count_attribute(options, "min_chars")?,
    })
}

fn surrogate_text<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    crate::new_bytes(py, bytes)?.call_method1("decode", ("utf-8", "surrogatepass"))
}

/// A `vthread.guard.GuardReason` from the core's reason.
fn reason_object<'py>(py: Python<'py>, reason: &Reason) -> PyResult<Bound<'py, PyAny>> {
    let class = py.import("vthread.guard")?.getattr("GuardReason")?;
    let fields = PyDict::new(py);
    fields.set_item("phrase", surrogate_text(py, &reason.phrase)?)?;
    fields.set_item("count", reason.count)?;
    fields.set_item("text", surrogate_text(py, &reason.text)?)?;
    fields.set_item("unique_ratio", reason.unique_ratio)?;
    fields.set_item("hapax_ratio", reason.hapax_ratio)?;
    class.call((), Some(&fields))
}

/// Pushes of at least this many code points release the GIL while they are read.
const RELEASE_GIL_FROM: usize = 1 << 16;

/// What a guard another thread is feeding says when it is called (PyO3 said "Already
/// borrowed"): a guard is one stream's, and the chunks of two streams, interleaved, would be
/// neither stream.
fn in_use() -> PyErr {
    PyRuntimeError::new_err(concat!(
        "this Guard is being fed by another thread (a push of 65,536 characters or more ",
        "lets other threads run meanwhile): a guard watches one stream; give each stream, ",
        "or each thread, a Guard of its own",
    ))
}

/// The guard, for a call that changes it; `in_use` while another thread feeds it.
fn for_change<'py>(guard: &Bound<'py, GuardCore>) -> PyResult<PyRefMut<'py, GuardCore>> {
    guard.try_borrow_mut().map_err(|_| in_use())
}

/// The guard, for a call that reads it; `in_use` while another thread feeds it.
fn for_reading<'py>(guard: &Bound<'py, GuardCore>) -> PyResult<PyRef<'py, GuardCore>> {
    guard.try_borrow().map_err(|_| in_use())
}

/// The guard's state machine for one stream (see src/guard.rs). `vthread.Guard` subclasses
/// it: `push` is this method, one call into the core.
#[pyclass(subclass, weakref, module = "vthread._core")]
pub struct GuardCore {
    guard: Guard,
    options: Py<PyAny>,
    reason: Option<Py<PyAny>>,
    trip_offset: Option<usize>,
    /// Bytes of an unfinished UTF-8 sequence at the end of the last `push_bytes`.
    held: Vec<u8>,
    /// Code points decoded by `push_bytes` so far.
    decoded: u64,
    codes: Vec<u32>,
}

#[pymethods]
impl GuardCore {
    #[new]
    fn new(options: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(GuardCore {
            guard: Guard::new(options_of(options)?),
            options: options.clone().unbind(),
            reason: None,
            trip_offset: None,
            held: Vec::new(),
            decoded: 0,
            codes: Vec::new(),
        })
    }

    /// Feed the next chunk; True once the stream has tripped the guard (and ever after). A
    /// chunk that is not a `str`, or is empty, changes nothing (`bytes`, and any object but
    /// `None` and an empty list or tuple, with a `UserWarning`).
    fn push(slf: &Bound<'_, Self>, text: &Bound<'_, PyAny>) -> PyResult<bool> {
        let mut this = for_change(slf)?;
        if this.guard.tripped() {
            return Ok(true);
        }
        let Some(text) = crate::node::text_of(text)? else {
            // The guard is let go before telling what else the chunk is (its length) and
            // warning of it, which run the caller's code: a warnings hook may call this
            // guard again, which would be refused as if another thread fed it.
            drop(this);
            // Ignored, as production ignores any chunk that is no string, but said: bytes
            // are most likely a stream's undecoded chunk, and anything else a stream event
            // or its delta pushed whole, whose runaway would never trip. (None, or an empty
            // list of content parts, a delta with no text, is what a tool call's chunks
            // hold, and goes unsaid.)
            let advice = if text.is_instance_of::<PyBytes>()
                || text.is_instance_of::<PyByteArray>()
                || text.is_instance_of::<PyMemoryView>()
            {
                Some(
                    c"Guard.push ignores bytes, as it ignores any chunk that is not a str: \
                       decode them, or feed them to push_bytes"
                        .to_owned(),
                )
            } else if !text.is_none() && !is_empty_sequence(text) {
                Some(std::ffi::CString::new(format!(
                    "Guard.push ignores a chunk of type {}, as it ignores any chunk that is \
                     not a str: push the text it holds (a stream event's delta content)",
                    text.get_type().name()?
                ))?)
            } else {
                None
            };
            if let Some(advice) = advice {
                let py = text.py();
                PyErr::warn(
                    py,
                    &py.get_type::<pyo3::exceptions::PyUserWarning>(),
                    &advice,
                    1,
                )?;
                // (a hook the warning ran may have fed the guard to its trip: True ever after)
                return Ok(for_reading(slf)?.guard.tripped());
            }
            return Ok(false);
        };
        let stored = storage(text);
        if stored.length > 0 && !this.held.is_empty() {
            // A character `push_bytes` left unfinished is finished by no later bytes: its
            // bytes are text of their own, before this chunk, as a decoder flushed at this
            // point decodes them (lone surrogates). They hold no space, so complete no
            // word, and cannot trip the guard here.
            let held = std::mem::take(&mut this.held);
            let escaped: Vec<u32> = held.iter().map(|&b| 0xDC00 + u32::from(b)).collect();
            let flushed = this.guard.push(escaped.as_slice(), Feed::Pushes);
            debug_assert!(flushed.is_none(), "no word is completed without a space");
            this.decoded += escaped.len() as u64;
        }
        let guard = &mut this.guard;
        let trip = if stored.length >= RELEASE_GIL_FROM {
            // A long push (a whole document) lets other Python threads run meanwhile; `text`
            // stays borrowed, so its storage stays alive and unchanged.
            text.py()
                .detach(|| with_units(stored, PushInto(guard, Feed::Pushes)))
        } else {
            with_units(stored, PushInto(guard, Feed::Pushes))
        };
        Ok(match trip {
            Some(at) => {
                this.trip_offset = Some(at.index);
                true
            }
            None => false,
        })
    }

    /// Feed raw bytes as UTF-8 (bytes that are not UTF-8 become lone surrogates, as Python's
    /// `surrogateescape` decodes them; a sequence cut at the end waits for the next call):
    /// `bytes`, or any object holding bytes (a `bytearray` filled by `readinto`, a
    /// `memoryview`, an array), its raw bytes read as they are at the call, as a binary
    /// file's `write` takes them. None, or (bytes of `data` up to the end of the tripping
    /// word, code points decoded before that point over all calls). When the space after
    /// that word began in the previous call's bytes, the first count takes the rest of the
    /// space, so that bytes passed on up to it never end inside a character. With
    /// `min_chars_per_character`, `min_chars` counts the characters up to the word being
    /// judged, as a stream fed one character at a time counts them (`scan_texts`), not every
    /// character of the pushes so far: where the guard trips then depends on the bytes alone,
    /// not on how a pipe cut them into reads.
    #[pyo3(signature = (data, *, min_chars_per_character = None))]
    fn push_bytes(
        slf: &Bound<'_, Self>,
        data: &Bound<'_, PyAny>,
        min_chars_per_character: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<(usize, u64)>> {
        let per_character = match min_chars_per_character {
            Some(value) => flag("min_chars_per_character", value)?,
            None => false,
        };
        let mut this = for_change(slf)?;
        let feed = if per_character {
            Feed::Characters
        } else {
            Feed::Pushes
        };
        if let Ok(bytes) = data.cast::<PyBytes>() {
            return Ok(this.push_byte_slice(bytes.as_bytes(), feed));
        }
        let Ok(view) = PyMemoryView::from(data) else {
            return Err(PyTypeError::new_err(format!(
                "push_bytes takes bytes or an object holding bytes (a bytearray, a \
                 memoryview), got {}",
                data.get_type().name()?
            )));
        };
        // A copy of the raw bytes in C order, whatever the buffer's item format or strides.
        let copied = view.call_method0("tobytes")?;
        Ok(this.push_byte_slice(copied.cast::<PyBytes>()?.as_bytes(), feed))
    }

    /// A guard of its own in this one's state, of its class: a stream forked (candidate
    /// continuations sampled from one prefix, each fed to its own copy). The state is the
    /// core's, so `copy.copy` and `copy.deepcopy` are the same.
    fn __copy__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = for_reading(slf)?;
        let copy = py
            .get_type::<GuardCore>()
            .call_method1("__new__", (slf.get_type(), this.options.clone_ref(py)))?;
        {
            let mut state = copy.cast::<GuardCore>()?.try_borrow_mut()?;
            state.guard = this.guard.clone();
            state.reason = this.reason.as_ref().map(|reason| reason.clone_ref(py));
            state.trip_offset = this.trip_offset;
            state.held.clone_from(&this.held);
            state.decoded = this.decoded;
        }
        Ok(copy)
    }

    /// Whether the guard is as one just made with its options: fed nothing since it was
    /// made or reset (no bytes held either), its hashes whole (`_set_hash_bits`, a test
    /// hook, not used): what `vthread.Guard.__reduce__` pickles as its class and options
    /// alone.
    fn _is_fresh(slf: &Bound<'_, Self>) -> PyResult<bool> {
        let this = for_reading(slf)?;
        Ok(this.guard.is_fresh()
            && this.guard.hashes_whole()
            && this.held.is_empty()
            && this.decoded == 0)
    }

    /// The guard's whole state as bytes (src/guard/state.rs), with the trip's place and
    /// the bytes `push_bytes` holds: what `vthread.Guard.__reduce__` pickles of a fed guard.
    fn _state<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyBytes>> {
        let this = for_reading(slf)?;
        let mut out = StateWriter::new();
        this.guard.write_state(&mut out);
        out.flag(this.trip_offset.is_some());
        out.u64(this.trip_offset.unwrap_or(0) as u64);
        out.bytes(&this.held);
        out.u64(this.decoded);
        crate::new_bytes(slf.py(), &out.sealed())
    }

    /// Take the state `_state` wrote (a pickled guard loaded): this guard, made with the
    /// same options, then answers as the one written. A ValueError saying why for bytes
    /// that are no such state, are damaged, or were written with other options or by
    /// another version of vthread.
    fn _restore(slf: &Bound<'_, Self>, state: &[u8]) -> PyResult<()> {
        let mut this = for_change(slf)?;
        let options = this.guard.options();
        let restored = (|| {
            let mut from = StateReader::open(state)?;
            let guard = Guard::read_state(options, &mut from)?;
            let trip_offset = from.flag()?;
            let offset = usize::try_from(from.count("the trip's offset")?)
                .map_err(|_| "the trip's offset is past memory")?;
            if trip_offset != guard.tripped() {
                return Err("it has a trip without a reason, or a reason without one".to_owned());
            }
            let held = unfinished_character(from.bytes()?)?;
            let decoded = from.count("its count of characters decoded")?;
            from.finish()?;
            Ok((guard, trip_offset.then_some(offset), held, decoded))
        })();
        let (guard, trip_offset, held, decoded) = restored.map_err(|why: String| {
            PyValueError::new_err(format!("cannot restore a guard from this state: {why}"))
        })?;
        this.guard = guard;
        this.reason = None;
        this.trip_offset = trip_offset;
        this.held = held;
        this.decoded = decoded;
        Ok(())
    }

    /// Start a new stream with the same options, as a guard just made (a harness's next
    /// turn): the words, the trip and its reason, and bytes `push_bytes` held, forgotten.
    fn reset(slf: &Bound<'_, Self>) -> PyResult<()> {
        let mut this = for_change(slf)?;
        this.guard.reset();
        this.reason = None;
        this.trip_offset = None;
        this.held.clear();
        this.decoded = 0;
        Ok(())
    }

    /// Watch with `options` (`vthread.guard.GuardOptions`) from here on, as a guard made with
    /// them (`vthread.Guard.__init__` given options other than its constructor's: a
    /// subclass computing them there); the stream so far, its trip and held bytes forgotten.
    fn _watch_with(slf: &Bound<'_, Self>, options: &Bound<'_, PyAny>) -> PyResult<()> {
        let guard = Guard::new(options_of(options)?);
        let mut this = for_change(slf)?;
        this.guard = guard;
        this.options = options.clone().unbind();
        this.reason = None;
        this.trip_offset = None;
        this.held.clear();
        this.decoded = 0;
        this.codes.clear();
        Ok(())
    }

    /// `copy.deepcopy`: as `__copy__` (the options and reason it shares are immutable).
    fn __deepcopy__<'py>(
        slf: &Bound<'py, Self>,
        _memo: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Self::__copy__(slf)
    }

    /// The resolved options (`vthread.guard.GuardOptions`).
    #[getter]
    fn options(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        Ok(for_reading(slf)?.options.clone_ref(slf.py()))
    }

    /// None until the guard trips, then why it tripped (the first trip's reason).
    #[getter]
    fn reason(slf: &Bound<'_, Self>) -> PyResult<Option<Py<PyAny>>> {
        let py = slf.py();
        let mut this = for_change(slf)?;
        if let Some(reason) = &this.reason {
            return Ok(Some(reason.clone_ref(py)));
        }
        let Some(reason) = this.guard.reason() else {
            return Ok(None);
        };
        let object = reason_object(py, reason)?.unbind();
        this.reason = Some(object.clone_ref(py));
        Ok(Some(object))
    }

    /// The index in the tripping push just past the word that tripped the guard.
    #[getter]
    fn trip_offset(slf: &Bound<'_, Self>) -> PyResult<Option<usize>> {
        Ok(for_reading(slf)?.trip_offset)
    }

    /// Test hook: keep only `bits` bits of every hash, so that collisions are common.
    fn _set_hash_bits(&mut self, bits: u32) {
        self.guard.set_hash_bits(bits);
    }
}

impl GuardCore {
    /// `push_bytes` of the bytes themselves.
    fn push_byte_slice(&mut self, data: &[u8], feed: Feed) -> Option<(usize, u64)> {
        if self.guard.tripped() || data.is_empty() {
            return None;
        }
        if self.held.is_empty() && data.is_ascii() {
            let trip = self.guard.push(data, feed).map(|at| {
                self.trip_offset = Some(at.index);
                (at.index, self.decoded + at.index as u64)
            });
            self.decoded += data.len() as u64;
            return trip;
        }
        let held = self.held.len();
        let mut bytes = std::mem::take(&mut self.held);
        bytes.extend_from_slice(data);
        let mut codes = std::mem::take(&mut self.codes);
        codes.clear();
        let mut position = 0;
        while position < bytes.len() {
            match std::str::from_utf8(&bytes[position..]) {
                Ok(valid) => {
                    codes.extend(valid.chars().map(u32::from));
                    position = bytes.len();
                }
                Err(error) => {
                    let valid = error.valid_up_to();
                    let text = std::str::from_utf8(&bytes[position..position + valid])
                        .expect("valid up to here");
                    codes.extend(text.chars().map(u32::from));
                    position += valid;
                    match error.error_len() {
                        Some(bad) => {
                            codes.extend(
                                bytes[position..position + bad]
                                    .iter()
                                    .map(|&b| 0xDC00 + u32::from(b)),
                            );
                            position += bad;
                        }
                        None => {
                            self.held = bytes[position..].to_vec();
                            break;
                        }
                    }
                }
            }
        }
        let trip = self.guard.push(codes.as_slice(), feed);
        let result = trip.map(|at| {
            let mut through: usize = codes[..at.index].iter().map(|&c| utf8_width(c)).sum();
            if through < held {
                // The word ended before the space that completed the held bytes, which were
                // passed on with the last read: the rest of that space, so that what is
                // passed on never ends inside a character.
                through = utf8_width(codes[0]);
            }
            self.trip_offset = Some(at.index);
            (through.saturating_sub(held), self.decoded + at.index as u64)
        });
        self.decoded += codes.len() as u64;
        self.codes = codes;
        result
    }
}

/// Bytes of one decoded code point in the input (an escaped byte was one byte).
fn utf8_width(code: u32) -> usize {
    match code {
        0..=0x7F | 0xDC80..=0xDCFF => 1,
        0x80..=0x7FF => 2,
        0x800..=0xFFFF => 3,
        _ => 4,
    }
}

/// For each item of `texts`, where a guard fed it one character at a time would trip: None,
/// or (index just past the tripping word, the same in UTF-16 units, phrase, count, text,
/// unique ratio, hapax ratio). Items that are not `str` never trip. The texts are read on
/// every core with the GIL released; a long text in segments (`segment_chars`, a test hook
/// that can force many short segments).
#[pyfunction]
#[pyo3(signature = (texts, options, hash_bits = 64, segment_chars = SEGMENT_CHARS))]
pub fn scan_texts<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyList>,
    options: &Bound<'py, PyAny>,
    hash_bits: u32,
    segment_chars: usize,
) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    use rayon::prelude::*;
    let options = options_of(options)?;
    let items: Vec<Bound<'py, PyAny>> = texts.iter().collect();
    let stored: Vec<Option<Storage>> = items
        .iter()
        .map(|item| Ok(crate::node::text_of(item)?.map(storage)))
        .collect::<PyResult<_>>()?;
    let trips: Vec<Option<(usize, u64, Reason)>> = py.detach(|| {
        let work: Vec<(usize, Storage, Segment)> = stored
            .iter()
            .enumerate()
            .filter_map(|(item, text)| Some((item, (*text)?)))
            .flat_map(|(item, text)| {
                with_units(text, Segments(segment_chars, options.window))
                    .into_iter()
                    .map(move |segment| (item, text, segment))
            })
            .collect();
        let fresh = || {
            let mut guard = Guard::new(options);
            guard.set_hash_bits(hash_bits);
            guard
        };
        let one = |guard: &mut Guard, &(_, text, segment): &(usize, Storage, Segment)| {
            let (index, units) = with_units(text, Replay(guard, segment))?;
            Some((index, units, guard.reason()?.clone()))
        };
        let serial = || {
            let mut guard = fresh();
            work.iter().map(|item| one(&mut guard, item)).collect()
        };
        let points: usize = work.iter().map(|(_, _, s)| s.end - s.warm).sum();
        // The process's own pool (pool.rs: never rayon's global one, never one inherited
        // across a fork).
        let found: Vec<Option<(usize, u64, Reason)>> =
            if points < PARALLEL_FROM_POINTS || work.len() < 2 {
                serial()
            } else {
                match crate::pool::pool() {
                    Some(pool) => pool.install(|| work.par_iter().map_init(fresh, one).collect()),
                    None => serial(),
                }
            };
        // The first segment of a text that trips gives the text's trip.
        let mut trips: Vec<Option<(usize, u64, Reason)>> = vec![None; stored.len()];
        for (&(item, _, _), trip) in work.iter().zip(found) {
            if trips[item].is_none() {
                trips[item] = trip;
            }
        }
        trips
    });
    drop(items);
    trips
        .into_iter()
        .map(|trip| {
            trip.map(|(index, units, reason)| {
                let fields = (
                    index,
                    units,
                    surrogate_text(py, &reason.phrase)?,
                    reason.count,
                    surrogate_text(py, &reason.text)?,
                    reason.unique_ratio,
                    reason.hapax_ratio,
                );
                Ok(fields.into_pyobject(py)?.into_any())
            })
            .transpose()
        })
        .collect()
}

/// Whether `value` is an empty list or tuple: a delta's content parts, none of them text.
fn is_empty_sequence(value: &Bound<'_, PyAny>) -> bool {
    value
        .cast::<PyList>()
        .map(|list| list.is_empty())
        .or_else(|_| {
            value
                .cast::<pyo3::types::PyTuple>()
                .map(|tuple| tuple.is_empty())
        })
        .unwrap_or(false)
}

/// A yes-or-no option as given: a bool at once; anything else judged by
/// `vthread._options.flag`, as every yes-or-no option is (NumPy's boolean taken, the rest a
/// `TypeError` naming the option).
fn flag(name: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(flag.is_true());
    }
    value
        .py()
        .import("vthread._options")?
        .getattr("flag")?
        .call1((name, value))?
        .extract()
}
