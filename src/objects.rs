//! Canonical encodings of Python objects, read through the CPython API: the compiled twin of
//! `vthread._jsvalue.canonical`, byte for byte.
//!
//! Exact `str`, `dict`, `list` are read directly; subclasses and other mappings and
//! sequences take the generic protocol (`collections.abc.Mapping`, iteration), as
//! `vthread._jsvalue` does. Strings are read from CPython's own storage, so what is hashed is
//! the content and never a `__hash__` or `__str__` a subclass may define. A value without a
//! JSON form (a NumPy scalar, a date, `bytes`, a `set`) is encoded as the stand-in
//! `vthread._jsvalue.stand_in` gives it, the one definition both implementations use.

use pyo3::exceptions::{PyOverflowError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString,
    PyTuple, PyType,
};

use crate::canonical::{self, Member, MAX_DEPTH, UNSERIALIZABLE};
use crate::textrun::CodePoints;
use crate::volatile;

static MAPPING: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STAND_IN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static OPAQUE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INT_TEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// What a value without a JSON form (not `str`, `None`, `bool`, `int`, `float`, a list,
/// tuple or mapping) is compared as: a JSON value, or none at all (the whole value holding
/// it then encodes as [`UNSERIALIZABLE`], as production compares it: "[unserializable]").
pub enum StandIn<'py> {
    Json(Bound<'py, PyAny>),
    NoJsonForm,
}

/// `vthread._jsvalue.stand_in(value)`: that function is the one definition of how numbers
/// of other types, dates, arrays and opaque values compare, so the core and the Python twin
/// cannot drift apart on them. Such values never come from JSON, so calling Python for each
/// costs nothing on the paths that matter. A set or bytes is told here, by its type (as
/// `_jsvalue._encode` tells it), without the opaque text `stand_in` would write (a `repr`
/// of every byte, a sort of every element's encoding), which no encoder reads.
pub fn stand_in<'py>(value: &Bound<'py, PyAny>) -> PyResult<StandIn<'py>> {
    if plainly_unencodable(value) {
        return Ok(StandIn::NoJsonForm);
    }
    let py = value.py();
    let stand = STAND_IN
        .import(py, "vthread._jsvalue", "stand_in")?
        .call1((value,))?;
    if stand.is_instance(OPAQUE.import(py, "vthread._jsvalue", "Opaque")?)? {
        Ok(StandIn::NoJsonForm)
    } else if is_exact_json(&stand) {
        Ok(StandIn::Json(stand))
    } else {
        // The stand-in is read as a JSON value, so one that is none (the very object back,
        // were the Python twin ever to give it) would be stood in for again, without end:
        // a clear error instead of a stack that overflows.
        Err(PyTypeError::new_err(format!(
            "the stand-in of a {} value is a {}, not a JSON value",
            value.get_type().name()?,
            stand.get_type().name()?
        )))
    }
}

/// Whether `value` is of an exact JSON type (`None`, `bool`, `int`, `float`, `str`, `list`):
/// what a stand-in may be.
fn is_exact_json(value: &Bound<'_, PyAny>) -> bool {
    value.is_none()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyFloat>()
        || value.is_exact_instance_of::<PyString>()
        || value.is_exact_instance_of::<PyList>()
}

fn mapping_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    MAPPING.import(py, "collections.abc", "Mapping")
}

/// Whether `value` is a mapping as `vthread._jsvalue` sees one (`isinstance(v, Mapping)`).
pub fn is_mapping(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    if value.is_instance_of::<PyDict>() {
        return Ok(true);
    }
    value.is_instance(mapping_type(value.py())?)
}

/// The text of a `str` (or subclass) as UTF-16-escaped canonical JSON, read from storage.
pub fn push_string(out: &mut Vec<u8>, text: &Bound<'_, PyString>) {
    match code_points(text) {
        CodePoints::Latin1(points) => canonical::push_latin1(out, points),
        CodePoints::Ucs2(points) => canonical::push_ucs2(out, points),
        CodePoints::Ucs4(points) => canonical::push_ucs4(out, points),
    }
}

/// The code points of a `str` (or subclass) as its storage holds them, borrowed for as long
/// as `text` is: no copy. Sound to read with the GIL released while a reference is held, as
/// the storage is immutable and owned by the object.
pub fn code_points<'a>(text: &'a Bound<'_, PyString>) -> CodePoints<'a> {
    let (kind, data, length) = crate::node::storage(text);
    // SAFETY: `storage` gives one buffer of `length` code points of the width `kind` names
    // (a dangling, aligned pointer when `length` is 0), alive and unchanged while `text` (a
    // strong reference) is borrowed, which the returned lifetime enforces.
    unsafe {
        match kind {
            ffi::PyUnicode_1BYTE_KIND => {
                CodePoints::Latin1(std::slice::from_raw_parts(data, length))
            }
            ffi::PyUnicode_2BYTE_KIND => {
                CodePoints::Ucs2(std::slice::from_raw_parts(data as *const u16, length))
            }
            _ => CodePoints::Ucs4(std::slice::from_raw_parts(data as *const u32, length)),
        }
    }
}

/// The (key, value) members of an exact dict in order, copied (reading them runs no Python
/// code, so the copy is of one state of the dict).
pub fn dict_members<'py>(dict: &Bound<'py, PyDict>) -> Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    dict.iter().collect()
}

/// A mapping's `items()`, read to the end before any is encoded (as the reference reads
/// them): the pairs it yields, each a 2-sequence.
pub fn mapping_items<'py>(
    mapping: &Bound<'py, PyAny>,
) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    mapping
        .call_method0("items")?
        .try_iter()?
        .map(|item| pair(&item?))
        .collect()
}

/// A member of `items()` unpacked as Python's `for key, value in mapping.items()` unpacks
/// it: a tuple of two, or any other iterable of exactly two (a list `[key, value]`); else
/// Python's own ValueError.
fn pair<'py>(item: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if let Ok(tuple) = item.cast_exact::<PyTuple>() {
        if tuple.len() == 2 {
            return Ok((tuple.get_item(0)?, tuple.get_item(1)?));
        }
    }
    let Ok(mut members) = item.try_iter() else {
        return Err(PyTypeError::new_err(format!(
            "cannot unpack non-iterable {} object",
            item.get_type().name()?
        )));
    };
    let mut next = || members.next().transpose();
    match (next()?, next()?) {
        (Some(key), Some(value)) => match next()? {
            None => Ok((key, value)),
            Some(_) => Err(PyValueError::new_err(
                "too many values to unpack (expected 2)",
            )),
        },
        (first, _) => Err(PyValueError::new_err(format!(
            "not enough values to unpack (expected 2, got {})",
            usize::from(first.is_some())
        ))),
    }
}

/// Call `each` on the (key, value) members of an exact dict in order, as iterating
/// `dict.items()` does, until it returns false. A change of the dict's size meanwhile (the
/// encoding of a value can run Python code) is Python's RuntimeError, where PyO3's own
/// iterator would panic; `PyDict_Next` stays within the table whatever is done to it.
pub fn for_each_member<'py>(
    dict: &Bound<'py, PyDict>,
    mut each: impl FnMut(Bound<'py, PyAny>, Bound<'py, PyAny>) -> PyResult<bool>,
) -> PyResult<()> {
    let py = dict.py();
    let size = dict.len();
    let mut position: ffi::Py_ssize_t = 0;
    loop {
        if dict.len() != size {
            return Err(PyRuntimeError::new_err(
                "dictionary changed size during iteration",
            ));
        }
        let mut key = std::ptr::null_mut();
        let mut value = std::ptr::null_mut();
        // SAFETY: `dict` is a live dict and the GIL is held; PyDict_Next hands out borrowed
        // references, which are made strong before any Python code can run.
        let (key, value) = unsafe {
            if ffi::PyDict_Next(dict.as_ptr(), &mut position, &mut key, &mut value) == 0 {
                return Ok(());
            }
            (
                Bound::from_borrowed_ptr(py, key),
                Bound::from_borrowed_ptr(py, value),
            )
        };
        if !each(key, value)? {
            return Ok(());
        }
    }
}

/// `vthread.volatile.mask_text(text)`: a new exact `str` where something is masked, else
/// `text` itself when it is an exact `str` (a subclass becomes an exact copy, as `re.sub`
/// makes one).
pub fn masked_text<'py>(text: &Bound<'py, PyString>) -> PyResult<Bound<'py, PyString>> {
    let points = code_points(text);
    let masked = match points {
        CodePoints::Latin1(units) => volatile::mask_text(units),
        CodePoints::Ucs2(units) => volatile::mask_text(units),
        CodePoints::Ucs4(units) => volatile::mask_text(units),
    };
    match masked {
        Some(out) => string_of_code_points(text.py(), &out),
        None if text.is_exact_instance_of::<PyString>() => Ok(text.clone()),
        None => string_of_code_points(text.py(), &points.to_vec()),
    }
}

/// A `str` of the given code points (lone surrogates included).
fn string_of_code_points<'py>(py: Python<'py>, points: &[u32]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: `points` is a live buffer of `len` UCS-4 code points, each below 0x110000 (they
    // come from a `str` or from ASCII placeholders); the call copies them into a new object.
    unsafe {
        let object = ffi::PyUnicode_FromKindAndData(
            ffi::PyUnicode_4BYTE_KIND as std::os::raw::c_int,
            points.as_ptr().cast(),
            points.len() as ffi::Py_ssize_t,
        );
        Ok(Bound::from_owned_ptr_or_err(py, object)?.cast_into_unchecked())
    }
}

/// Whether a `str` key may be one JavaScript property name with another key of its dict: a
/// `str` subclass (its own `__eq__` may tell equal contents apart), or a string holding a
/// surrogate code point (a surrogate pair held as two code points names the property its
/// astral character names). A Latin-1 exact `str`, nearly every key, is read in O(1).
pub fn key_may_repeat(text: &Bound<'_, PyString>) -> bool {
    if !text.is_exact_instance_of::<PyString>() {
        return true;
    }
    holds_surrogate(&code_points(text))
}

/// Whether a string's code points hold a surrogate (never in Latin-1 storage).
fn holds_surrogate(points: &CodePoints<'_>) -> bool {
    match points {
        CodePoints::Latin1(_) => false,
        CodePoints::Ucs2(units) => units.iter().any(|&unit| (0xD800..0xE000).contains(&unit)),
        CodePoints::Ucs4(points) => points
            .iter()
            .any(|&point| (0xD800..0xE000).contains(&point)),
    }
}

/// A member of an object as JavaScript has it: its array index, its key text (quoted), the
/// first key that names it and the last value given it.
pub type NamedMember<'py> = (Option<u64>, Vec<u8>, Bound<'py, PyAny>, Bound<'py, PyAny>);

/// The members of a mapping with the keys that name one property made one, as `JSON.parse`
/// reads a repeated key: at the first one's place, with the last one's value. A key no JSON
/// object can have (an opaque key) is a member of its own. The values are not encoded. O(n).
pub fn one_per_name<'py>(
    members: &[(Bound<'py, PyAny>, Bound<'py, PyAny>)],
) -> PyResult<Vec<NamedMember<'py>>> {
    let mut kept: Vec<NamedMember<'py>> = Vec::with_capacity(members.len());
    let mut place: std::collections::HashMap<Vec<u8>, usize> = std::collections::HashMap::new();
    for (key, element) in members {
        match key_member(key)? {
            Some((index, name)) => match place.get(&name) {
                Some(&at) => kept[at].3 = element.clone(),
                None => {
                    place.insert(name.clone(), kept.len());
                    kept.push((index, name, key.clone(), element.clone()));
                }
            },
            // (a key no JSON object can have: marked, for `unnamed`, each a member of its own)
            None => kept.push((None, UNSERIALIZABLE.to_vec(), key.clone(), element.clone())),
        }
    }
    Ok(kept)
}

/// Whether `value` plainly has no JSON form (a set, bytes), told by its type.
fn plainly_unencodable(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<PySet>()
        || value.is_instance_of::<PyFrozenSet>()
        || value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>()
}

/// Whether a member `one_per_name` made has a key no JSON object can have (its text is the
/// marker): the mapping then has no JSON form, and encodes whole as the marker, as
/// `JSON.stringify` gives up on it ("[unserializable]").
pub fn unnamed(key_text: &[u8]) -> bool {
    key_text.starts_with(UNSERIALIZABLE)
}

/// The raw content of a `str` as a key text (unquoted), for the array-index test.
fn ascii_digits(text: &Bound<'_, PyString>) -> Option<u64> {
    match code_points(text) {
        CodePoints::Latin1(bytes) => canonical::array_index(bytes),
        _ => None,
    }
}

fn push_int(out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    match value.extract::<i64>() {
        Ok(small) => canonical::push_i64(out, small),
        // Beyond i64: the nearest double, or Infinity (which JSON.stringify writes as null).
        Err(_) => match int_as_double(value)? {
            Some(double) => canonical::push_double(out, double),
            None => out.extend_from_slice(b"null"),
        },
    }
    Ok(())
}

/// The value an `int` (or subclass) holds as the nearest double, as `float(int)` rounds it;
/// None when it is beyond every double (JavaScript's Infinity). Read from the int's own
/// digits (`PyLong_AsDouble`), never through a subclass's `__int__`, `__index__` or
/// `__float__`, so that a subclass compares as the number it holds.
pub fn int_as_double(value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    let py = value.py();
    // SAFETY: `value` is a live int or subclass (callers test `is_instance_of::<PyInt>`) and
    // the GIL is held; PyLong_AsDouble reads its digits and sets an error on overflow only.
    let double = unsafe { ffi::PyLong_AsDouble(value.as_ptr()) };
    if double == -1.0 {
        if let Some(error) = PyErr::take(py) {
            if error.is_instance_of::<PyOverflowError>(py) {
                return Ok(None);
            }
            return Err(error);
        }
    }
    Ok(Some(double))
}

/// The property name JSON gives a key that is not a `str` (`null`, `true`, `1`, `2.5`), or None
/// for a key no JSON object can have.
pub fn key_name(key: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    Ok(Some(if key.is_none() {
        "null".to_owned()
    } else if let Ok(flag) = key.cast_exact::<PyBool>() {
        if flag.is_true() { "true" } else { "false" }.to_owned()
    } else if key.is_instance_of::<PyInt>() {
        match key.extract::<i64>() {
            Ok(small) => small.to_string(),
            // Beyond i64: `vthread._jsvalue.int_text`, which is not bound by Python's
            // 4,300-digit limit on `str(int)` (a key of 5,000 digits raised ValueError).
            Err(_) => INT_TEXT
                .import(key.py(), "vthread._jsvalue", "int_text")?
                .call1((key,))?
                .extract::<String>()?,
        }
    } else if let Ok(double) = key.cast::<PyFloat>() {
        match double.value() {
            // json's names for the floats repr writes "nan" and "inf"
            value if value.is_nan() => "NaN".to_owned(),
            value if value.is_infinite() => {
                if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
            }
            // The value's repr, as `json` writes a float key (never a subclass's own
            // `__float__` or `__repr__`).
            value => PyFloat::new(key.py(), value).repr()?.to_string(),
        }
    } else {
        return Ok(None);
    }))
}

/// A key as the property name JavaScript (and Python's `json`) would give it, with its array
/// index when it has one; `None` for a key no JSON object can have.
fn key_member(key: &Bound<'_, PyAny>) -> PyResult<Option<(Option<u64>, Vec<u8>)>> {
    let mut text = Vec::new();
    if let Some(string) = crate::node::text_of(key)? {
        push_string(&mut text, string);
        return Ok(Some((ascii_digits(string), text)));
    }
    let Some(name) = key_name(key)? else {
        return Ok(None);
    };
    canonical::push_str(&mut text, &name);
    Ok(Some((canonical::array_index(name.as_bytes()), text)))
}

/// The encoder's walk: the containers open on the current path, for cycles and depth. A
/// path is short in real data, so a vector scanned on entry beats a hash set (and at the
/// 4,160-level limit it costs at most milliseconds). `unencodable` is set on meeting what
/// `JSON.stringify` throws on (a reference back into a cycle, nesting too deep): the whole
/// value then encodes as [`UNSERIALIZABLE`], so the rest of the walk writes nothing.
struct Walk {
    open: Vec<usize>,
    unencodable: bool,
}

impl Walk {
    fn value(&mut self, out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.unencodable {
            return Ok(());
        }
        if let Some(string) = crate::node::text_of(value)? {
            push_string(out, string);
        } else if value.is_none() {
            out.extend_from_slice(b"null");
        } else if let Ok(flag) = value.cast_exact::<PyBool>() {
            out.extend_from_slice(if flag.is_true() { b"true" } else { b"false" });
        } else if value.is_instance_of::<PyInt>() {
            push_int(out, value)?; // bool was taken above: it cannot be subclassed
        } else if let Ok(double) = value.cast::<PyFloat>() {
            canonical::push_double(out, double.value());
        } else if value.is_instance_of::<PyDict>()
            || value.is_instance_of::<PyList>()
            || value.is_instance_of::<PyTuple>()
            || is_mapping(value)?
        {
            self.container(out, value)?;
        } else {
            match stand_in(value)? {
                // No JSON form (a set, bytes, any other object): the whole value encodes as
                // the marker, as a cycle does ("[unserializable]").
                StandIn::NoJsonForm => self.unencodable = true,
                // A JSON value (a number, string, boolean or a list of them): no recursion
                // back into this branch.
                StandIn::Json(stand) => self.value(out, &stand)?,
            }
        }
        Ok(())
    }

    fn container(&mut self, out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let identity = value.as_ptr() as usize;
        if self.open.len() >= MAX_DEPTH || self.open.contains(&identity) {
            self.unencodable = true;
            return Ok(());
        }
        self.open.push(identity);
        // Up to MAX_DEPTH frames deep: keep at least 64 KiB of stack, growing it by 1 MiB.
        let written = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.members(out, value));
        self.open.pop();
        written
    }

    fn members(&mut self, out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(list) = value.cast_exact::<PyList>() {
            out.push(b'[');
            for (position, element) in list.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                self.value(out, &element)?;
            }
            out.push(b']');
        } else if let Ok(dict) = value.cast_exact::<PyDict>() {
            // The members are copied before any is encoded, as the reference
            // (`_jsvalue.js_items`) and `json` copy them: a member's own code (the repr of a
            // value of no JSON type, a mapping's items()) may change the dict meanwhile.
            let copied = dict_members(dict);
            // Written in place; only an object with an array-index key (rare) is rewritten
            // through the ordering path.
            let start = out.len();
            out.push(b'{');
            let mut ordered = true;
            for (position, (key, element)) in copied.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                match crate::node::text_of(key)? {
                    Some(name) if ascii_digits(name).is_none() && !key_may_repeat(name) => {
                        push_string(out, name)
                    }
                    _ => {
                        ordered = false;
                        break;
                    }
                }
                out.push(b':');
                self.value(out, element)?;
            }
            if ordered {
                out.push(b'}');
            } else {
                out.truncate(start);
                self.object(out, &copied)?;
            }
        } else if is_mapping(value)? {
            self.object(out, &mapping_items(value)?)?;
        } else {
            out.push(b'[');
            for (position, element) in value.try_iter()?.enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                self.value(out, &element?)?;
            }
            out.push(b']');
        }
        Ok(())
    }

    /// An object's members in JavaScript's order, one per property name.
    fn object(
        &mut self,
        out: &mut Vec<u8>,
        copied: &[(Bound<'_, PyAny>, Bound<'_, PyAny>)],
    ) -> PyResult<()> {
        let mut members = Vec::with_capacity(copied.len());
        for (index, key, _, element) in one_per_name(copied)? {
            if unnamed(&key) {
                self.unencodable = true;
                return Ok(());
            }
            let mut value = Vec::new();
            self.value(&mut value, &element)?;
            members.push((index, Member { key, value }));
        }
        canonical::push_object(out, members);
        Ok(())
    }
}

/// Append `value`'s canonical encoding to `out`: [`UNSERIALIZABLE`] alone for a value that
/// holds a cycle or nests too deep, as `JSON.stringify` throws on the whole value. Errors
/// only where Python itself raised (a mapping whose `items()` fails, an iterator that
/// raises).
pub fn push_canonical(out: &mut Vec<u8>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let start = out.len();
    let mut walk = Walk {
        open: Vec::new(),
        unencodable: false,
    };
    walk.value(out, value)?;
    if walk.unencodable {
        out.truncate(start);
        out.extend_from_slice(UNSERIALIZABLE);
    }
    Ok(())
}

/// `value`'s canonical encoding as bytes.
pub fn canonical_bytes(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut out = Vec::new();
    push_canonical(&mut out, value)?;
    Ok(out)
}

/// How deep [`plainly_equal`] follows nesting before it leaves the answer to the encodings
/// (a deeper value, or one holding itself, is compared by its canonical bytes).
const PLAIN_DEPTH: usize = 32;

/// A value as [`plainly_equal`] sorts it: one of JSON's plain forms, read without running any
/// of the value's own code, or `Other` (anything whose encoding takes more than its type to
/// tell: a subclass, a tuple, a mapping of another type, a number that is not finite, an
/// int beyond 64 bits, an object standing in for a JSON value).
enum Plain<'a, 'py> {
    Null,
    Boolean(bool),
    Number(f64),
    Text(&'a Bound<'py, PyString>),
    List(&'a Bound<'py, PyList>),
    Object(&'a Bound<'py, PyDict>),
    Other,
}

fn plain<'a, 'py>(value: &'a Bound<'py, PyAny>) -> Plain<'a, 'py> {
    if let Ok(text) = value.cast_exact::<PyString>() {
        return if crate::node::ready(text).is_ok() {
            Plain::Text(text)
        } else {
            Plain::Other
        };
    }
    if value.is_none() {
        return Plain::Null;
    }
    if let Ok(flag) = value.cast_exact::<PyBool>() {
        return Plain::Boolean(flag.is_true());
    }
    if value.is_exact_instance_of::<PyInt>() {
        // As `push_i64` writes it: exactly below 2**53, the nearest double above.
        return value
            .extract::<i64>()
            .map_or(Plain::Other, |small| Plain::Number(small as f64));
    }
    if let Ok(double) = value.cast_exact::<PyFloat>() {
        let double = double.value();
        // (NaN and the infinities are written `null`, as None is: left to the encodings)
        return if double.is_finite() {
            Plain::Number(double)
        } else {
            Plain::Other
        };
    }
    if let Ok(list) = value.cast_exact::<PyList>() {
        return Plain::List(list);
    }
    if let Ok(dict) = value.cast_exact::<PyDict>() {
        return Plain::Object(dict);
    }
    Plain::Other
}

/// Whether `a` and `b` are equal as JavaScript compares values (their canonical encodings
/// equal, `push_canonical`), told by walking both at once where both are built of JSON's
/// plain forms alone (exact `str`, `None`, `bool`, `int` within 64 bits, finite `float`,
/// exact `list`, exact `dict` with `str` keys that are no array index and hold no
/// surrogate): Some(answer), found without encoding either and without running any code of
/// theirs. None wherever the encodings must decide: any other part (which may have no JSON
/// form, making the whole value the marker, equal to any other such value), nesting past
/// `PLAIN_DEPTH`, strings that differ and hold a surrogate (a pair is written as the astral
/// character it makes). Its twin is the comparison of the canonical bytes, which property
/// tests hold it to.
pub fn plainly_equal(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> Option<bool> {
    match walk_equal(a, b, 0) {
        Walked::Same => Some(true),
        // Different, but only if neither is the marker whole: every part of both is plain.
        Walked::Apart => (all_plain(a, 0) && all_plain(b, 0)).then_some(false),
        Walked::Untold => None,
    }
}

/// What walking two values at once found.
enum Walked {
    /// Every part plain and equal.
    Same,
    /// A difference between plain parts (the walk stops there: the rest is unread).
    Apart,
    /// A part that is not plain, before any difference.
    Untold,
}

fn walk_equal(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, depth: usize) -> Walked {
    let told = |same: bool| if same { Walked::Same } else { Walked::Apart };
    match (plain(a), plain(b)) {
        (Plain::Other, _) | (_, Plain::Other) => Walked::Untold,
        (Plain::Null, Plain::Null) => Walked::Same,
        (Plain::Boolean(x), Plain::Boolean(y)) => told(x == y),
        // (-0 and 0 are both written "0", and == calls them equal)
        (Plain::Number(x), Plain::Number(y)) => told(x == y),
        (Plain::Text(x), Plain::Text(y)) => match texts_equal(x, y) {
            Some(same) => told(same),
            None => Walked::Untold,
        },
        (Plain::List(x), Plain::List(y)) => {
            if depth >= PLAIN_DEPTH {
                return Walked::Untold;
            }
            if x.len() != y.len() {
                return Walked::Apart;
            }
            for (left, right) in x.iter().zip(y.iter()) {
                match walk_equal(&left, &right, depth + 1) {
                    Walked::Same => {}
                    other => return other,
                }
            }
            Walked::Same
        }
        (Plain::Object(x), Plain::Object(y)) => {
            if depth >= PLAIN_DEPTH {
                return Walked::Untold;
            }
            if x.len() != y.len() {
                // (plain keys name one property each: a length apart is a member apart)
                return Walked::Apart;
            }
            for ((left_key, left), (right_key, right)) in x.iter().zip(y.iter()) {
                let (Ok(left_key), Ok(right_key)) = (
                    left_key.cast_exact::<PyString>(),
                    right_key.cast_exact::<PyString>(),
                ) else {
                    return Walked::Untold;
                };
                if !plain_key(left_key) || !plain_key(right_key) {
                    return Walked::Untold;
                }
                // (in order: an object's keys that are no array index keep their order)
                match texts_equal(left_key, right_key) {
                    Some(true) => {}
                    Some(false) => return Walked::Apart,
                    None => return Walked::Untold,
                }
                match walk_equal(&left, &right, depth + 1) {
                    Walked::Same => {}
                    other => return other,
                }
            }
            Walked::Same
        }
        // Two plain forms of different kinds: written differently ("null", "true", a
        // number, a quoted string, "[", "{").
        _ => Walked::Apart,
    }
}

/// Whether every part of `value` is plain (see [`plainly_equal`]), down to `PLAIN_DEPTH`.
fn all_plain(value: &Bound<'_, PyAny>, depth: usize) -> bool {
    match plain(value) {
        Plain::Other => false,
        Plain::List(list) => {
            depth < PLAIN_DEPTH && list.iter().all(|item| all_plain(&item, depth + 1))
        }
        Plain::Object(dict) => {
            depth < PLAIN_DEPTH
                && dict.iter().all(|(key, item)| {
                    key.cast_exact::<PyString>().is_ok_and(|key| plain_key(key))
                        && all_plain(&item, depth + 1)
                })
        }
        _ => true,
    }
}

/// A key JSON writes as it is, in the dict's order, one property per key: an exact `str`,
/// ready, that is no array index and holds no surrogate.
fn plain_key(key: &Bound<'_, PyString>) -> bool {
    crate::node::ready(key).is_ok() && ascii_digits(key).is_none() && !key_may_repeat(key)
}

/// Whether two ready strings are written alike: Some(true) for the same code points,
/// Some(false) for different ones holding no surrogate, None otherwise (a surrogate pair
/// is written as the astral character it makes).
fn texts_equal(a: &Bound<'_, PyString>, b: &Bound<'_, PyString>) -> Option<bool> {
    let (left, right) = (code_points(a), code_points(b));
    let same = match (&left, &right) {
        (CodePoints::Latin1(x), CodePoints::Latin1(y)) => return Some(x == y),
        (CodePoints::Ucs2(x), CodePoints::Ucs2(y)) => x == y,
        (CodePoints::Ucs4(x), CodePoints::Ucs4(y)) => x == y,
        _ => false, // (a ready str is stored in the narrowest width its code points allow)
    };
    if same {
        return Some(true);
    }
    if holds_surrogate(&left) || holds_surrogate(&right) {
        None
    } else {
        Some(false)
    }
}
