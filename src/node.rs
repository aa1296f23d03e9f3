//! One view of a JSON-like value, whether it is a Python object (read through the CPython
//! API) or a parsed line of a file (`document.rs`): what the column pass needs to ask of a
//! message, its meta and its tool-call payloads. The heuristics are written once, over this
//! trait, so both inputs get the same answers by construction.

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::objects;

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
    pub fn into_python(self, py: Python<'_>) -> Py<PyAny> {
        match self {
            Text::Python(object) => object,
            Text::Owned(text) => PyString::new(py, &text).into_any().unbind(),
        }
    }
}

/// A value the column pass can read.
pub trait Node: Sized {
    /// `value.get(key)` of a mapping (None when absent or when the value is no mapping).
    fn field(&self, key: Key) -> PyResult<Option<Self>>;
    /// Whether the value is a mapping (SPEC §2's "mapping").
    fn is_mapping(&self) -> PyResult<bool>;
    /// Whether the value is a string whose content is exactly `expected`.
    fn is_text(&self, expected: &str) -> bool;
    /// Whether the value is a string, and a non-empty one.
    fn is_nonempty_text(&self) -> bool;
    /// Whether the value is a string.
    fn is_string(&self) -> bool;
    /// Whether the value is a string starting with "_".
    fn starts_with_underscore(&self) -> bool;
    /// Append the canonical encoding (`vthread._jsvalue.canonical`).
    fn push_canonical(&self, out: &mut Vec<u8>) -> PyResult<()>;
    /// A hash equal for values JavaScript calls equal (strings hashed from their storage,
    /// anything else from its canonical encoding); unequal values may share one.
    fn screen(&self, scratch: &mut Vec<u8>) -> PyResult<u64>;
    /// A text handed back to Python (the few the text-run check reads).
    fn text_value(&self) -> Text;
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
    }
}

/// The storage of a `str`: (kind, data pointer, length in code points).
fn storage(text: &Bound<'_, PyString>) -> (u32, *const u8, usize) {
    let pointer = text.as_ptr();
    // SAFETY: `pointer` is a live str (the caller cast it) and the GIL is held; KIND, DATA
    // and GET_LENGTH describe its immutable storage, valid while `text` is borrowed.
    unsafe {
        (
            ffi::PyUnicode_KIND(pointer),
            ffi::PyUnicode_DATA(pointer) as *const u8,
            ffi::PyUnicode_GET_LENGTH(pointer) as usize,
        )
    }
}

impl Node for Bound<'_, PyAny> {
    fn field(&self, key: Key) -> PyResult<Option<Self>> {
        let name = python_key(self.py(), key);
        if let Ok(dict) = self.cast_exact::<PyDict>() {
            return dict.get_item(name);
        }
        if !objects::is_mapping(self)? {
            return Ok(None);
        }
        match self.get_item(name) {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.is_instance_of::<pyo3::exceptions::PyKeyError>(self.py()) => {
                Ok(None)
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

    fn push_canonical(&self, out: &mut Vec<u8>) -> PyResult<()> {
        objects::push_canonical(out, self)
    }

    fn screen(&self, scratch: &mut Vec<u8>) -> PyResult<u64> {
        let Ok(text) = self.cast::<PyString>() else {
            scratch.clear();
            objects::push_canonical(scratch, self)?;
            return Ok(xxh3_64_with_seed(scratch, SEED_OTHER));
        };
        let (kind, data, length) = storage(text);
        // SAFETY: the storage described by `storage`, alive while `text` is borrowed.
        let hash = unsafe {
            match kind {
                ffi::PyUnicode_1BYTE_KIND => {
                    xxh3_64_with_seed(std::slice::from_raw_parts(data, length), SEED_LATIN1)
                }
                ffi::PyUnicode_2BYTE_KIND => {
                    xxh3_64_with_seed(std::slice::from_raw_parts(data, 2 * length), SEED_UTF16)
                }
                _ => {
                    // Astral code points as their two UTF-16 units, in the byte order of
                    // 2-byte storage, so a surrogate pair and its code point hash alike.
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
        };
        Ok(hash)
    }

    fn text_value(&self) -> Text {
        Text::Python(self.clone().unbind())
    }
}

/// The hash of an absent value (as `null`), for screens.
pub fn absent_screen() -> u64 {
    xxh3_64_with_seed(b"null", SEED_OTHER)
}
