//! One view of a JSON-like value, whether it is a Python object (read through the CPython
//! API) or a parsed line of a file (`document.rs`): what the column pass needs to ask of a
//! message, its meta and its tool-call payloads. The heuristics are written once, over this
//! trait, so both inputs get the same answers by construction.

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::PyTypeInfo;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::canonical::MAX_DEPTH;
use crate::objects;
use crate::textrun::CodePoints;

/// `object()`, made once: the default a mapping's `get` is asked with, which no message holds.
static ABSENT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The fields the heuristics read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Type,
    Text,
    Meta,
    Activity,
    Function,
    Name,
    Arguments,
    Result,
    Usage,
    Tokens,
    IsError,
}

impl Key {
    pub fn as_str(self) -> &'static str {
        match self {
            Key::Type => "type",
            Key::Text => "text",
            Key::Meta => "meta",
            Key::Activity => "activity",
            Key::Function => "function",
            Key::Name => "name",
            Key::Arguments => "arguments",
            Key::Result => "result",
            Key::Usage => "usage",
            Key::Tokens => "tokens",
            Key::IsError => "is_error",
        }
    }
}

pub const SEED_LATIN1: u64 = 1;
pub const SEED_UTF16: u64 = 2;
pub const SEED_OTHER: u64 = 3;
pub const SEED_UTF8: u64 = 4;

/// A text for Python: the object itself, or one decoded from a file (made into a `str` once
/// the GIL is held again).
pub enum Text {
    Python(Py<PyAny>),
    Owned(String),
}

impl Text {
    pub fn into_python(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match self {
            Text::Python(object) => object,
            Text::Owned(text) => crate::new_string(py, &text)?.into_any().unbind(),
        })
    }
}

/// A value the column pass can read.
pub trait Node: Sized {
    /// `value.get(key)` of a mapping (None when absent or when the value is no mapping).
    fn field(&self, key: Key) -> PyResult<Option<Self>>;
    /// A message's `type`, `text` and `meta` as `field` reads them, read at once where the
    /// reader can do that cheaper than asking three times and without running any code of the
    /// message's own (so no read happens that asking field by field would not have made);
    /// None otherwise (see `message_fields`).
    fn fields_at_once(&self) -> PyResult<Option<[Option<Self>; 3]>> {
        Ok(None)
    }
    /// Whether the value is a mapping (a message or a `meta` must be one).
    fn is_mapping(&self) -> PyResult<bool>;
    /// Whether the value is a string whose content is exactly `expected`.
    fn is_text(&self, expected: &str) -> bool;
    /// Whether the value is a string, and a non-empty one.
    fn is_nonempty_text(&self) -> bool;
    /// Whether the value is a string.
    fn is_string(&self) -> bool;
    /// Whether the value is a string starting with "_".
    fn starts_with_underscore(&self) -> bool;
    /// Whether the value is a string holding an ASCII digit. The answer must depend on the
    /// value alone (never on how it is written), so a reader that cannot tell cheaply says
    /// yes for every string.
    fn has_ascii_digit(&self) -> bool {
        self.is_string()
    }
    /// Whether the value is a string that may begin a tool error as `vthread.anywhere` reads
    /// one: after Python's whitespace, an `e`, a `t` (either case) or `<returncode>` with a
    /// code other than `0`. Never false for a string that begins one; a reader that cannot
    /// tell cheaply says yes for every string.
    fn may_begin_an_error(&self) -> bool {
        self.is_string()
    }
    /// Append the canonical encoding (`vthread._jsvalue.canonical`).
    fn push_canonical(&self, out: &mut Vec<u8>) -> PyResult<()>;
    /// A hash equal for values JavaScript calls equal, made without encoding them (strings
    /// hashed from their storage, containers combined from their members' screens down to
    /// `SCREEN_DEPTH`); unequal values may share one.
    fn screen(&self, scratch: &mut Vec<u8>) -> PyResult<u64>;
    /// A text handed back to Python (the few the text-run check reads): the whole string, or
    /// at least its last `textrun::TAIL_UNITS` code points, all the check reads.
    fn text_value(&self) -> Text;
    /// `read` of the string's code points, None when the value is no string: a Python
    /// `str`'s storage as it is, a tape's string decoded (its bytes as they are when ASCII).
    fn with_code_points<R>(&self, read: impl FnOnce(CodePoints<'_>) -> R) -> Option<R>;
    /// Whether the value equals `other` as JavaScript compares values (their canonical
    /// encodings equal), where the reader tells it without encoding either; None leaves it
    /// to the encodings (a reader that cannot tell cheaply always says None).
    fn plainly_equal(&self, _other: &Self) -> Option<bool> {
        None
    }
    /// Whether the value is a mapping whose fields are read without running any code of its
    /// own (an exact dict, a tape's object), so that reading them again to walk them runs no
    /// caller's code twice: where it is not, the comparisons read each message once, by its
    /// encoding.
    fn reads_plainly(&self) -> bool {
        false
    }
}

fn python_key<'py>(py: Python<'py>, key: Key) -> &'py Bound<'py, PyString> {
    match key {
        Key::Type => intern!(py, "type"),
        Key::Text => intern!(py, "text"),
        Key::Meta => intern!(py, "meta"),
        Key::Activity => intern!(py, "activity"),
        Key::Function => intern!(py, "function"),
        Key::Name => intern!(py, "name"),
        Key::Arguments => intern!(py, "arguments"),
        Key::Result => intern!(py, "result"),
        Key::Usage => intern!(py, "usage"),
        Key::Tokens => intern!(py, "tokens"),
        Key::IsError => intern!(py, "is_error"),
    }
}

/// Make a `str` "ready", as CPython's own readers do before they read one: a `str` made
/// by Python 3.11's deprecated `PyUnicode_FromUnicode(NULL, n)` (reachable from `ctypes` or
/// an old extension) has no canonical storage until then, and making it fails for one
/// holding a code point past U+10FFFF. Every value the core reads a `str` from passes here
/// first (a message's fields in `Node::field`, a value's strings and keys as they are
/// encoded, screened or masked, a guard's pushes), so that failure is the caller's
/// ValueError, never a text read otherwise than it is. A no-op on 3.12, where every str is
/// ready.
pub fn ready(text: &Bound<'_, PyString>) -> PyResult<()> {
    // SAFETY: `text` is a live str and the GIL is held.
    if unsafe { ffi::PyUnicode_READY(text.as_ptr()) } != 0 {
        return Err(PyErr::fetch(text.py()));
    }
    Ok(())
}

/// `value` as a `str` made ready (`ready`), None when it is no `str`: how every reader of
/// a value's strings takes one.
pub fn text_of<'a, 'py>(
    value: &'a Bound<'py, PyAny>,
) -> PyResult<Option<&'a Bound<'py, PyString>>> {
    let Ok(text) = value.cast::<PyString>() else {
        return Ok(None);
    };
    ready(text)?;
    Ok(Some(text))
}

/// The storage of a `str`: (kind, data pointer, length in code points). Every read of a
/// string's storage in the core goes through here, after `ready`.
pub fn storage(text: &Bound<'_, PyString>) -> (u32, *const u8, usize) {
    let pointer = text.as_ptr();
    // SAFETY: `pointer` is a live str (the caller cast it) and the GIL is held. Once ready,
    // KIND, DATA and GET_LENGTH describe its immutable storage, valid while `text` is
    // borrowed. A str no reader made ready (none is left: see `ready`) is made ready here;
    // were that to fail, it reads as empty with Python's error left set, which the call's
    // return then raises (SystemError naming it).
    unsafe {
        if ffi::PyUnicode_READY(pointer) != 0 {
            return (
                ffi::PyUnicode_1BYTE_KIND,
                std::ptr::NonNull::<u8>::dangling().as_ptr(),
                0,
            );
        }
        (
            ffi::PyUnicode_KIND(pointer),
            ffi::PyUnicode_DATA(pointer) as *const u8,
            ffi::PyUnicode_GET_LENGTH(pointer) as usize,
        )
    }
}

/// A field's value with a `str` made ready (`ready`), as every reader of it expects.
fn readied<'py>(value: Option<Bound<'py, PyAny>>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Some(value) = &value {
        text_of(value)?;
    }
    Ok(value)
}

/// Ask for the cache line at `address`: a hint, which can neither fault nor change a value.
#[inline(always)]
fn prefetch_line(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Messages at a thread's end whose fields `prefetch_fields` asks for: more than the column
/// pass reads of most threads, few enough to stay in the caches until it does.
const PREFETCHED_MESSAGES: usize = 256;

/// Entries of a message walked by `prefetch_fields`: a message's few fields.
const PREFETCHED_ENTRIES: ffi::Py_ssize_t = 8;

/// Cache lines of a dict's key table asked for: its header, index and first entries, which
/// hold a message's few fields (a key and value pointer each).
const KEY_TABLE_LINES: usize = 4;

/// Ask memory for the fields of the last `PREFETCHED_MESSAGES` messages (each exact dict's
/// first `PREFETCHED_ENTRIES` values, two cache lines of each: a string's header and the
/// start of its text) before the column pass reads them one after another. A bulk pass over
/// threads parsed long before spends about half its time waiting for the first touch of
/// each field; asked for together, those waits overlap. Nothing is read or run: dicts are
/// walked by `PyDict_Next`, which calls no key's `__hash__` or `__eq__`, and a prefetch is a
/// hint, so no answer can depend on it. On the benchmark's 10,000 parsed threads the column
/// pass took 1.15-1.22x less time (docs/performance.md, session 25). Not done for a single
/// thread (`describe_thread`): a harness's thread checked every turn is mostly in the caches
/// already, where the walk cost a fifth of the call; nor for looking anywhere's pass, which
/// it did not speed up.
///
/// Asked for in three rounds, each for what the round before brought in: every dict's header,
/// then every dict's key table (which its header points to), then the values (which the table
/// points to). A cold message is three dependent trips to memory; asked for message by
/// message, each trip waits for the one before it, while in rounds the trips of all the
/// messages overlap: the column pass took 1.09x less time again (docs/performance.md,
/// session 30; a fourth round, for the key tables of the values that are dicts, gained
/// nothing and is not made).
pub fn prefetch_fields(messages: &[Bound<'_, PyAny>]) {
    let recent = &messages[messages.len().saturating_sub(PREFETCHED_MESSAGES)..];
    for message in recent.iter().rev() {
        prefetch_line(message.as_ptr().cast());
    }
    for message in recent.iter().rev() {
        let dict = message.as_ptr();
        // SAFETY: `dict` is live (the caller holds it) and the GIL is held; an exact dict is
        // a `PyDictObject`, whose `ma_keys` (never null in CPython) is only used as an
        // address to prefetch from.
        unsafe {
            if ffi::PyDict_CheckExact(dict) == 0 {
                continue;
            }
            let table = (*dict.cast::<ffi::PyDictObject>()).ma_keys.cast::<u8>();
            for line in 0..KEY_TABLE_LINES {
                prefetch_line(table.wrapping_add(64 * line));
            }
        }
    }
    for message in recent.iter().rev() {
        let dict = message.as_ptr();
        // SAFETY: `dict` is live (the caller holds it) and the GIL is held.
        if unsafe { ffi::PyDict_CheckExact(dict) } == 0 {
            continue;
        }
        let mut position: ffi::Py_ssize_t = 0;
        let mut key: *mut ffi::PyObject = std::ptr::null_mut();
        let mut value: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: an exact dict and the GIL held; PyDict_Next hands out borrowed pointers,
        // used here only as addresses.
        while position < PREFETCHED_ENTRIES
            && unsafe { ffi::PyDict_Next(dict, &mut position, &mut key, &mut value) } != 0
        {
            prefetch_line(value.cast());
            prefetch_line(value.cast::<u8>().wrapping_add(64));
        }
    }
}

/// Entries of an exact dict `message_fields` walks at most: a message's few fields (a larger
/// dict is asked three times: walking eight entries cost more than three lookups, 0.84x on
/// threads of eight-key messages, while two to four keys gained 1.06-1.10x).
const WALKED_ENTRIES: ffi::Py_ssize_t = 5;

/// Slots of a dict's entry table the walk passes at most: a dict that had many keys deleted
/// keeps their slots, which `PyDict_Next` passes one by one (two live keys after 200 deleted
/// made a call 2.5 times slower than asking for the three fields).
const WALKED_SLOTS: ffi::Py_ssize_t = 2 * WALKED_ENTRIES;

/// Which of `type`, `text` and `meta` the exact `str` at `key` is (0, 1, 2), told by its
/// content; `wanted` are the interned three, met first by address.
///
/// # Safety
/// `key` is a live exact `str` and the GIL is held.
unsafe fn message_key_slot(
    key: *mut ffi::PyObject,
    wanted: &[*mut ffi::PyObject; 3],
) -> Option<usize> {
    if let Some(slot) = wanted.iter().position(|&name| name == key) {
        return Some(slot);
    }
    // (a dict's str key was hashed as it was stored, so it is ready; were it not, and could
    // it not be made so, it is read as no key of these, its error cleared)
    if ffi::PyUnicode_READY(key) != 0 {
        ffi::PyErr_Clear();
        return None;
    }
    if ffi::PyUnicode_GET_LENGTH(key) != 4 || ffi::PyUnicode_KIND(key) != ffi::PyUnicode_1BYTE_KIND
    {
        return None;
    }
    let text = std::slice::from_raw_parts(ffi::PyUnicode_DATA(key) as *const u8, 4);
    match text {
        b"type" => Some(0),
        b"text" => Some(1),
        b"meta" => Some(2),
        _ => None,
    }
}

/// The `type`, `text` and `meta` of an exact dict of at most `WALKED_ENTRIES` entries whose
/// keys are all exact `str`, read in one walk of its entries (`PyDict_Next`, which runs no
/// code): for such a dict, `get` finds a key by its content alone, as the walk does. None for
/// any other dict (a key of another type, or a `str` subclass, may have a `__hash__` or
/// `__eq__` of its own that `get` would run).
fn walked_message_fields<'py>(dict: &Bound<'py, PyDict>) -> Option<[Option<Bound<'py, PyAny>>; 3]> {
    let py = dict.py();
    let pointer = dict.as_ptr();
    // SAFETY: an exact dict and the GIL held.
    if unsafe { ffi::PyDict_Size(pointer) } > WALKED_ENTRIES {
        return None;
    }
    let wanted = [
        intern!(py, "type").as_ptr(),
        intern!(py, "text").as_ptr(),
        intern!(py, "meta").as_ptr(),
    ];
    let mut found: [*mut ffi::PyObject; 3] = [std::ptr::null_mut(); 3];
    let mut position: ffi::Py_ssize_t = 0;
    let mut key: *mut ffi::PyObject = std::ptr::null_mut();
    let mut value: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: an exact dict and the GIL held; PyDict_Next hands out borrowed pointers, and
    // nothing in the walk runs Python code that could change the dict.
    unsafe {
        while ffi::PyDict_Next(pointer, &mut position, &mut key, &mut value) != 0 {
            if ffi::PyUnicode_CheckExact(key) == 0 || position > WALKED_SLOTS {
                return None;
            }
            if let Some(slot) = message_key_slot(key, &wanted) {
                found[slot] = value;
            }
        }
        Some(found.map(|value| (!value.is_null()).then(|| Bound::from_borrowed_ptr(py, value))))
    }
}

/// Whether two values that may be absent are equal where `Node::plainly_equal` tells it: two
/// absent ones are; an absent one against a present one is apart when an absent value is
/// one of its own (`absent_apart`: a meta, a tool call's payload), else left to the
/// encodings (None: an absent type or text is `null`, which a present one may be).
pub fn plainly_equal_if_present<N: Node>(
    left: Option<&N>,
    right: Option<&N>,
    absent_apart: bool,
) -> Option<bool> {
    match (left, right) {
        (None, None) => Some(true),
        (Some(left), Some(right)) => left.plainly_equal(right),
        _ => absent_apart.then_some(false),
    }
}

/// A message's `type`, `text` and `meta` (`Node::field` of each, in that order), read at once
/// where the reader can (`Node::fields_at_once`).
pub fn message_fields<N: Node>(message: &N) -> PyResult<[Option<N>; 3]> {
    if let Some(fields) = message.fields_at_once()? {
        return Ok(fields);
    }
    Ok([
        message.field(Key::Type)?,
        message.field(Key::Text)?,
        message.field(Key::Meta)?,
    ])
}

impl Node for Bound<'_, PyAny> {
    fn fields_at_once(&self) -> PyResult<Option<[Option<Self>; 3]>> {
        let Ok(dict) = self.cast_exact::<PyDict>() else {
            return Ok(None);
        };
        let Some([kind, text, meta]) = walked_message_fields(dict) else {
            return Ok(None);
        };
        Ok(Some([readied(kind)?, readied(text)?, readied(meta)?]))
    }

    fn field(&self, key: Key) -> PyResult<Option<Self>> {
        let name = python_key(self.py(), key);
        if let Ok(dict) = self.cast_exact::<PyDict>() {
            return readied(dict.get_item(name)?);
        }
        if !objects::is_mapping(self)? {
            return Ok(None);
        }
        // The mapping's own `get`, as the Python twin reads a message: a dict subclass's is
        // dict.get, which never calls `__missing__` (a defaultdict asked with `[]` gained
        // the key, the caller's message changed by being read) nor an overridden
        // `__getitem__`; another mapping's is Mapping.get. A default no message can hold
        // tells an absent key from one holding None.
        let absent = ABSENT.get_or_try_init(self.py(), || {
            PyAny::type_object(self.py()).call0().map(Bound::unbind)
        })?;
        let py = self.py();
        match self.call_method1(intern!(py, "get"), (name, absent.bind(py))) {
            Ok(value) => readied((!value.is(absent)).then_some(value)),
            // A `get` of its own that takes no default: `[]`, a KeyError for absent.
            Err(error) if error.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                match self.get_item(name) {
                    Ok(value) => readied(Some(value)),
                    Err(error) if error.is_instance_of::<pyo3::exceptions::PyKeyError>(py) => {
                        Ok(None)
                    }
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    fn is_mapping(&self) -> PyResult<bool> {
        objects::is_mapping(self)
    }

    fn is_text(&self, expected: &str) -> bool {
        let Ok(text) = self.cast::<PyString>() else {
            return false;
        };
        let (kind, data, length) = storage(text);
        // `expected` is ASCII: only 1-byte storage of the same length can hold it.
        kind == ffi::PyUnicode_1BYTE_KIND
            && length == expected.len()
            // SAFETY: 1-byte storage of `length` bytes, alive while `text` is borrowed.
            && unsafe { std::slice::from_raw_parts(data, length) } == expected.as_bytes()
    }

    fn is_nonempty_text(&self) -> bool {
        self.cast::<PyString>()
            .is_ok_and(|text| storage(text).2 > 0)
    }

    fn is_string(&self) -> bool {
        self.is_instance_of::<PyString>()
    }

    fn starts_with_underscore(&self) -> bool {
        let Ok(text) = self.cast::<PyString>() else {
            return false;
        };
        let (kind, data, length) = storage(text);
        if length == 0 {
            return false;
        }
        // SAFETY: storage of at least one code point of the given width.
        let first = unsafe {
            match kind {
                ffi::PyUnicode_1BYTE_KIND => u32::from(*data),
                ffi::PyUnicode_2BYTE_KIND => u32::from(*(data as *const u16)),
                _ => *(data as *const u32),
            }
        };
        first == u32::from(b'_')
    }

    fn has_ascii_digit(&self) -> bool {
        let Ok(text) = self.cast::<PyString>() else {
            return false;
        };
        let (kind, data, length) = storage(text);
        // SAFETY: `data` holds `length` code points of the storage's width, alive while
        // `text` is borrowed; a digit is one code point below 128 in every width.
        unsafe {
            match kind {
                ffi::PyUnicode_1BYTE_KIND => std::slice::from_raw_parts(data, length)
                    .iter()
                    .any(u8::is_ascii_digit),
                ffi::PyUnicode_2BYTE_KIND => std::slice::from_raw_parts(data as *const u16, length)
                    .iter()
                    .any(|&unit| (0x30..=0x39).contains(&unit)),
                _ => std::slice::from_raw_parts(data as *const u32, length)
                    .iter()
                    .any(|&point| (0x30..=0x39).contains(&point)),
            }
        }
    }

    fn may_begin_an_error(&self) -> bool {
        let Ok(text) = self.cast::<PyString>() else {
            return false;
        };
        let (kind, data, length) = storage(text);
        // SAFETY: `data` holds `length` code points of the storage's width, alive while
        // `text` is borrowed.
        let points: Box<dyn Iterator<Item = u32>> = unsafe {
            match kind {
                ffi::PyUnicode_1BYTE_KIND => Box::new(
                    std::slice::from_raw_parts(data, length)
                        .iter()
                        .map(|&byte| u32::from(byte)),
                ),
                ffi::PyUnicode_2BYTE_KIND => Box::new(
                    std::slice::from_raw_parts(data as *const u16, length)
                        .iter()
                        .map(|&unit| u32::from(unit)),
                ),
                _ => Box::new(
                    std::slice::from_raw_parts(data as *const u32, length)
                        .iter()
                        .copied(),
                ),
            }
        };
        begins_an_error(points)
    }

    fn push_canonical(&self, out: &mut Vec<u8>) -> PyResult<()> {
        objects::push_canonical(out, self)
    }

    fn screen(&self, scratch: &mut Vec<u8>) -> PyResult<u64> {
        let mut walk = PythonScreen {
            open: Vec::new(),
            unencodable: false,
        };
        let screen = walk.of(self, 0, scratch)?;
        // A value holding a cycle, or nesting too deep, encodes whole as the marker.
        Ok(if walk.unencodable {
            screens::unserializable()
        } else {
            screen
        })
    }

    fn text_value(&self) -> Text {
        Text::Python(self.clone().unbind())
    }

    fn with_code_points<R>(&self, read: impl FnOnce(CodePoints<'_>) -> R) -> Option<R> {
        let text = self.cast::<PyString>().ok()?;
        Some(read(objects::code_points(text)))
    }

    fn plainly_equal(&self, other: &Self) -> Option<bool> {
        objects::plainly_equal(self, other)
    }

    fn reads_plainly(&self) -> bool {
        self.is_exact_instance_of::<PyDict>()
    }
}

/// Whether Python's `\s` (a `str` pattern) matches the code point: exactly these.
fn python_whitespace(point: u32) -> bool {
    matches!(
        point,
        0x09..=0x0D
            | 0x1C..=0x20
            | 0x85
            | 0xA0
            | 0x1680
            | 0x2000..=0x200A
            | 0x2028
            | 0x2029
            | 0x202F
            | 0x205F
            | 0x3000
    )
}

/// See [`Node::may_begin_an_error`], over a string's code points.
pub fn begins_an_error(mut points: impl Iterator<Item = u32>) -> bool {
    let Some(first) = points.find(|&point| !python_whitespace(point)) else {
        return false;
    };
    // No code point outside ASCII folds to e or t under Python's IGNORECASE, nor to a
    // letter of "returncode".
    match char::from_u32(first) {
        Some('e' | 'E' | 't' | 'T') => true,
        Some('<') => {
            let tag: Vec<u32> = points.by_ref().take(11).collect();
            let tagged = tag.len() == 11
                && tag.iter().zip(b"returncode>").all(|(&point, &byte)| {
                    u8::try_from(point).is_ok_and(|p| p.eq_ignore_ascii_case(&byte))
                });
            // `(?!0<)`: the code is not one written `0`.
            tagged && points.take(2).collect::<Vec<u32>>() != [0x30, 0x3C]
        }
        _ => false,
    }
}

/// The hash of an absent value (as `null`), for screens.
pub fn absent_screen() -> u64 {
    xxh3_64_with_seed(b"null", SEED_OTHER)
}

const SEED_NUMBER: u64 = 5;
const SEED_LIST: u64 = 6;
const SEED_OBJECT: u64 = 7;
/// Containers deeper than this screen as one constant: equal values are equal to any depth,
/// so cutting both at the same depth keeps them equal, and the cost stays bounded.
pub const SCREEN_DEPTH: usize = 8;

fn mix(value: u64) -> u64 {
    // The 64-bit finaliser of MurmurHash3: every input bit reaches every output bit.
    let mut x = value;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Screens of the values JSON has, shared by every `Node`: a value's screen depends only on
/// what JavaScript sees (numbers as doubles, `-0` as `0`, NaN and the infinities as `null`;
/// object members in any order, since an order-free sum cannot tell JavaScript's key order
/// from insertion order; arrays in order).
pub mod screens {
    use super::*;

    pub fn null() -> u64 {
        absent_screen()
    }

    pub fn boolean(flag: bool) -> u64 {
        xxh3_64_with_seed(if flag { b"true" } else { b"false" }, SEED_OTHER)
    }

    pub fn unserializable() -> u64 {
        xxh3_64_with_seed(crate::canonical::UNSERIALIZABLE, SEED_OTHER)
    }

    pub fn deep() -> u64 {
        xxh3_64_with_seed(b"deep", SEED_OTHER)
    }

    pub fn number(value: f64) -> u64 {
        if !value.is_finite() {
            return null();
        }
        let value = if value == 0.0 { 0.0 } else { value };
        xxh3_64_with_seed(&value.to_bits().to_le_bytes(), SEED_NUMBER)
    }

    /// An ASCII property name (a coerced non-string key), hashed as a Latin-1 `str` holding it.
    pub fn ascii_name(name: &[u8]) -> u64 {
        xxh3_64_with_seed(name, SEED_LATIN1)
    }

    pub fn list(children: impl Iterator<Item = u64>) -> u64 {
        children.fold(SEED_LIST, list_step)
    }

    /// A list's screen so far (`SEED_LIST` for none) with one more element's.
    pub fn list_step(screen: u64, child: u64) -> u64 {
        mix(screen.rotate_left(5) ^ child)
    }

    pub fn object(members: impl Iterator<Item = (u64, u64)>) -> u64 {
        let mut object = Object::default();
        for (key, value) in members {
            object.add(key, value);
        }
        object.screen()
    }

    /// An object's screen made one member at a time, in any order (an order-free sum).
    #[derive(Default)]
    pub struct Object {
        sum: u64,
        count: u64,
    }

    impl Object {
        pub fn add(&mut self, key: u64, value: u64) {
            self.sum = self.sum.wrapping_add(mix(key ^ value.rotate_left(17)));
            self.count += 1;
        }

        pub fn screen(&self) -> u64 {
            mix(self.sum ^ self.count.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ SEED_OBJECT)
        }
    }
}

/// The structural screen of a Python value, with the open containers. A value that holds a
/// reference back into a cycle, or nests deeper than `MAX_DEPTH`, screens as the marker
/// whole, as it encodes (`unencodable` is then set, and what the walk returns is not used).
struct PythonScreen {
    open: Vec<usize>,
    unencodable: bool,
}

impl PythonScreen {
    fn of(
        &mut self,
        value: &Bound<'_, PyAny>,
        depth: usize,
        scratch: &mut Vec<u8>,
    ) -> PyResult<u64> {
        if self.unencodable {
            return Ok(0);
        }
        if let Some(text) = text_of(value)? {
            return Ok(string_screen(text, scratch));
        }
        if value.is_none() {
            return Ok(screens::null());
        }
        if let Ok(flag) = value.cast_exact::<PyBool>() {
            return Ok(screens::boolean(flag.is_true()));
        }
        if value.is_instance_of::<PyInt>() {
            return Ok(match value.extract::<i64>() {
                Ok(small) => screens::number(small as f64), // rounds as float(int) does
                Err(_) => match objects::int_as_double(value)? {
                    Some(double) => screens::number(double),
                    None => screens::null(), // overflow: Infinity, written as null
                },
            });
        }
        if let Ok(double) = value.cast::<PyFloat>() {
            return Ok(screens::number(double.value()));
        }
        let is_list = value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>();
        let is_mapping = !is_list && objects::is_mapping(value)?;
        if !is_list && !is_mapping {
            // Screened as it is encoded: as its stand-in, or (no JSON form) the whole value
            // as the marker.
            return match objects::stand_in(value)? {
                objects::StandIn::NoJsonForm => {
                    self.unencodable = true;
                    Ok(0)
                }
                objects::StandIn::Json(stand) => self.of(&stand, depth, scratch),
            };
        }
        let identity = value.as_ptr() as usize;
        if self.open.contains(&identity) {
            self.unencodable = true;
            return Ok(0);
        }
        if depth >= SCREEN_DEPTH {
            // Not hashed below here, but a cycle or too deep a nesting anywhere below makes
            // the whole value the marker.
            if holds_unencodable(value, &mut self.open)? {
                self.unencodable = true;
            }
            return Ok(screens::deep());
        }
        self.open.push(identity);
        // The members' screens are folded as they come, with no buffer of them (a message's
        // meta is screened on every call); the members themselves are read as the encoder
        // reads them, copied first.
        let screen = if is_list {
            let mut screen = SEED_LIST;
            for child in value.try_iter()? {
                screen = screens::list_step(screen, self.of(&child?, depth + 1, scratch)?);
            }
            screen
        } else {
            let mut object = screens::Object::default();
            // A copy, as the encoder reads one (a member's own code may change the dict).
            let members = match value.cast_exact::<PyDict>() {
                Ok(dict) => objects::dict_members(dict),
                Err(_) => objects::mapping_items(value)?,
            };
            if members.iter().any(|(key, _)| key_may_repeat(key)) {
                // Keys that are one property name are one member, the last value (as the
                // encoder writes them: `objects::one_per_name`).
                for (_, text, key, child) in objects::one_per_name(&members)? {
                    if objects::unnamed(&text) {
                        self.unencodable = true; // (the whole value is the marker)
                        break;
                    }
                    let key_screen = key_screen(&key, scratch)?;
                    object.add(key_screen, self.of(&child, depth + 1, scratch)?);
                }
            } else {
                for (key, child) in members {
                    let key_screen = key_screen(&key, scratch)?;
                    object.add(key_screen, self.of(&child, depth + 1, scratch)?);
                }
            }
            object.screen()
        };
        self.open.pop();
        Ok(screen)
    }
}

/// Whether `value` holds a reference back into a container open on its path (`open`, as the
/// encoder keeps it) or nests deeper than `MAX_DEPTH`: what makes its encoding the marker.
/// A value of no JSON type is walked as its stand-in, as the encoder walks it (a NumPy
/// array's nested list counts toward the depth).
fn holds_unencodable(value: &Bound<'_, PyAny>, open: &mut Vec<usize>) -> PyResult<bool> {
    if value.is_instance_of::<PyString>()
        || value.is_none()
        || value.is_instance_of::<PyBool>()
        || value.is_instance_of::<PyInt>()
        || value.is_instance_of::<PyFloat>()
    {
        return Ok(false);
    }
    let is_list = value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>();
    if !is_list && !objects::is_mapping(value)? {
        return match objects::stand_in(value)? {
            objects::StandIn::Json(stand) => holds_unencodable(&stand, open),
            objects::StandIn::NoJsonForm => Ok(true),
        };
    }
    let identity = value.as_ptr() as usize;
    if open.len() >= MAX_DEPTH || open.contains(&identity) {
        return Ok(true);
    }
    open.push(identity);
    // Up to MAX_DEPTH frames deep, as the encoder: grow the stack as it does.
    let found = stacker::maybe_grow(64 * 1024, 1024 * 1024, || -> PyResult<bool> {
        let children: Vec<Bound<'_, PyAny>> = if is_list {
            value.try_iter()?.collect::<PyResult<_>>()?
        } else {
            // items(), as the encoder reads a mapping (a values() of its own is not asked);
            // a key no JSON object can have makes the whole value the marker.
            let members = match value.cast_exact::<PyDict>() {
                Ok(dict) => objects::dict_members(dict),
                Err(_) => objects::mapping_items(value)?,
            };
            if members.iter().any(|(key, _)| key_may_repeat(key)) {
                // One member per property name, the last value, as the encoder writes them
                // (a value shadowed by a later key naming its property is not encoded).
                let mut children = Vec::with_capacity(members.len());
                for (_, text, _, child) in objects::one_per_name(&members)? {
                    if objects::unnamed(&text) {
                        return Ok(true);
                    }
                    children.push(child);
                }
                children
            } else {
                members.into_iter().map(|(_, child)| child).collect()
            }
        };
        for child in children {
            if holds_unencodable(&child, open)? {
                return Ok(true);
            }
        }
        Ok(false)
    });
    open.pop();
    found
}

/// Whether a key may name the property another key of its mapping names (a key that is no
/// `str`, or one `objects::key_may_repeat` says may).
fn key_may_repeat(key: &Bound<'_, PyAny>) -> bool {
    match key.cast::<PyString>() {
        Ok(text) => objects::key_may_repeat(text),
        Err(_) => true,
    }
}

/// A key's screen: a `str` by its content, other keys by the name JSON gives them.
fn key_screen(key: &Bound<'_, PyAny>, scratch: &mut Vec<u8>) -> PyResult<u64> {
    if let Some(text) = text_of(key)? {
        return Ok(string_screen(text, scratch));
    }
    Ok(match objects::key_name(key)? {
        Some(name) => screens::ascii_name(name.as_bytes()),
        // (a key no JSON object can have makes its whole mapping the marker: the walk
        // stops at it before asking its screen)
        None => screens::unserializable(),
    })
}

/// A `str`'s screen from its storage: Latin-1 bytes as they are, wider storage over its
/// UTF-16 code units (so a surrogate pair written as two code points hashes as its astral
/// character).
fn string_screen(text: &Bound<'_, PyString>, scratch: &mut Vec<u8>) -> u64 {
    let (kind, data, length) = storage(text);
    // SAFETY: the storage described by `storage`, alive while `text` is borrowed.
    unsafe {
        match kind {
            ffi::PyUnicode_1BYTE_KIND => {
                xxh3_64_with_seed(std::slice::from_raw_parts(data, length), SEED_LATIN1)
            }
            ffi::PyUnicode_2BYTE_KIND => {
                xxh3_64_with_seed(std::slice::from_raw_parts(data, 2 * length), SEED_UTF16)
            }
            _ => {
                let points = std::slice::from_raw_parts(data as *const u32, length);
                scratch.clear();
                for &point in points {
                    if point >= 0x1_0000 {
                        let offset = point - 0x1_0000;
                        let high = (0xD800 | (offset >> 10)) as u16;
                        let low = (0xDC00 | (offset & 0x3FF)) as u16;
                        scratch.extend_from_slice(&high.to_ne_bytes());
                        scratch.extend_from_slice(&low.to_ne_bytes());
                    } else {
                        scratch.extend_from_slice(&(point as u16).to_ne_bytes());
                    }
                }
                xxh3_64_with_seed(scratch, SEED_UTF16)
            }
        }
    }
}
