//! `vthread.volatile.masked_thread` over Python objects: a copy of each message with its
//! `text` and every string in its `meta` masked (`volatile.rs`), and the value of every
//! time-naming key made `"<volatile>"`.
//!
//! The copy is made as the Python function makes it, step for step, for messages that are
//! exact dicts whose `meta` holds only exact dicts and lists as containers (what a JSON
//! parser makes). Anything else (another mapping, a subclass of dict or list, a key that is
//! a subclass of str, whose `lower` may be its own) is the Python function's: the message
//! is handed to it whole, so no answer depends on which side copied it. A container reached
//! twice (or inside itself) is copied once, as in Python, and nesting of any depth is walked
//! with a stack of its own, not recursion.
//!
//! `vthread scan --mask-volatile` reads its lines in the core: `masked_native_line` writes a
//! line's thread as the native line of its masked copy (the way a translated line is
//! written, `adapters.rs`), which the column pass then reads; the values it keeps are copied
//! as the line writes them, so they read back as the values Python's copy holds.

use std::collections::HashMap;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::adapters::{push_json_string, RunKeys};
use crate::document::{Tape, Value};
use crate::objects;
use crate::threads::native_thread;
use crate::volatile;

/// What the value of a time-naming key becomes (`vthread.volatile.VOLATILE`).
const VOLATILE: &str = "<volatile>";

/// `"<volatile>"` as JSON text.
const VOLATILE_JSON: &[u8] = b"\"<volatile>\"";

/// Whether an exact `str` key names a time (`volatile::is_volatile_key`).
fn is_volatile_key(key: &Bound<'_, PyString>) -> bool {
    volatile::is_volatile_key(objects::code_points(key).to_vec())
}

/// `_leaf(value, under_volatile_key)`: a string masked (or made `"<volatile>"` under a
/// time-naming key), a number under such a key made `"<volatile>"`, anything else kept.
fn leaf<'py>(value: &Bound<'py, PyAny>, volatile: bool) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    if let Some(text) = crate::node::text_of(value)? {
        if volatile {
            return Ok(intern!(py, VOLATILE).clone().into_any());
        }
        return Ok(objects::masked_text(text)?.into_any());
    }
    if volatile
        && (value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
        && !value.is_instance_of::<PyBool>()
    {
        return Ok(intern!(py, VOLATILE).clone().into_any());
    }
    Ok(value.clone())
}

/// How a value is copied.
enum Shape {
    /// An exact dict, list or tuple: copied here (a tuple as a list).
    Container,
    /// A leaf (`leaf` decides).
    Leaf,
    /// Any other value (a mapping or list of another type, a value JSON has no form for):
    /// the Python function's.
    Python,
}

fn shape(value: &Bound<'_, PyAny>) -> PyResult<Shape> {
    if value.is_exact_instance_of::<PyDict>()
        || value.is_exact_instance_of::<PyList>()
        || value.is_exact_instance_of::<PyTuple>()
    {
        return Ok(Shape::Container);
    }
    let plain_leaf = value.is_exact_instance_of::<PyString>()
        || value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyFloat>()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_none();
    if plain_leaf {
        return Ok(Shape::Leaf);
    }
    // Anything else is the Python function's: a mapping or list of another type (its own
    // methods say what it holds), and a value JSON has no form for, a NumPy value or a date,
    // which is masked as the array, number or text it is compared as (`_compared_as`), one
    // rule written once.
    Ok(Shape::Python)
}

/// A masked copy of `meta` (`_masked_value`), or None when it holds something only the
/// Python function copies.
fn masked_value<'py>(meta: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match shape(meta)? {
        Shape::Leaf => return leaf(meta, false).map(Some),
        Shape::Python => return Ok(None),
        Shape::Container => {}
    }
    let py = meta.py();
    // Copies by the source's address; each source is held (in `pending` or here) so the
    // address is not reused while the walk lasts.
    let mut copies: HashMap<usize, (Bound<'py, PyAny>, Bound<'py, PyAny>)> = HashMap::new();
    let mut pending: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = Vec::new();
    let mut copy_of = |container: &Bound<'py, PyAny>,
                       pending: &mut Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>|
     -> PyResult<Bound<'py, PyAny>> {
        let address = container.as_ptr() as usize;
        if let Some((_, copy)) = copies.get(&address) {
            return Ok(copy.clone());
        }
        // (an array, a list or a tuple, is copied as a list, as the Python copy makes it)
        let copy = if container.is_exact_instance_of::<PyDict>() {
            PyDict::new(py).into_any()
        } else {
            PyList::new(py, (0..container.len()?).map(|_| py.None()))?.into_any()
        };
        copies.insert(address, (container.clone(), copy.clone()));
        pending.push((container.clone(), copy.clone()));
        Ok(copy)
    };
    let root = copy_of(meta, &mut pending)?;
    while let Some((source, target)) = pending.pop() {
        if !source.is_exact_instance_of::<PyDict>() {
            let target = target.cast::<PyList>()?;
            let items = match source.cast_exact::<PyTuple>() {
                Ok(tuple) => tuple.to_list(),
                Err(_) => source.cast_exact::<PyList>()?.clone(),
            };
            for (index, child) in items.iter().enumerate() {
                let copy = match shape(&child)? {
                    Shape::Container => copy_of(&child, &mut pending)?,
                    Shape::Leaf => leaf(&child, false)?,
                    Shape::Python => return Ok(None),
                };
                target.set_item(index, copy)?;
            }
        } else {
            let source = source.cast::<PyDict>()?;
            let target = target.cast::<PyDict>()?;
            // Hashing a key into the copy, or asking whether a value is a mapping, can run
            // Python code that changes the source: `for_each_member` makes a change of size
            // Python's RuntimeError, as the Python copy's `items()` loop raises it.
            let mut pythons_copy = false;
            objects::for_each_member(source, |key, child| {
                let volatile = match crate::node::text_of(&key)? {
                    Some(text) if text.is_exact_instance_of::<PyString>() => is_volatile_key(text),
                    Some(_) => {
                        pythons_copy = true; // a str subclass: its own lower() may differ
                        return Ok(false);
                    }
                    None => false,
                };
                let copy = match shape(&child)? {
                    Shape::Container => copy_of(&child, &mut pending)?,
                    Shape::Leaf => leaf(&child, volatile)?,
                    Shape::Python => {
                        pythons_copy = true;
                        return Ok(false);
                    }
                };
                target.set_item(key, copy)?;
                Ok(true)
            })?;
            if pythons_copy {
                return Ok(None);
            }
        }
    }
    Ok(Some(root))
}

/// The masked copy of an exact-dict message, or None when it is the Python function's.
fn masked_message<'py>(message: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyDict>>> {
    let py = message.py();
    let copy = message.copy()?;
    if let Some(text) = copy.get_item(intern!(py, "text"))? {
        if let Some(text) = crate::node::text_of(&text)? {
            copy.set_item(intern!(py, "text"), objects::masked_text(text)?)?;
        }
    }
    if let Some(meta) = copy.get_item(intern!(py, "meta"))? {
        match masked_value(&meta)? {
            Some(masked) => copy.set_item(intern!(py, "meta"), masked)?,
            None => return Ok(None),
        }
    }
    Ok(Some(copy))
}

/// `masked_thread(messages)` for a list or tuple of messages; `python_copy(message)` copies
/// each message the core leaves to Python (any but an exact dict, or one holding what only
/// Python copies).
#[pyfunction]
pub fn masked_thread<'py>(
    messages: &Bound<'py, PyAny>,
    python_copy: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let items: Vec<Bound<'py, PyAny>> = if let Ok(list) = messages.cast_exact::<PyList>() {
        list.iter().collect()
    } else {
        messages.cast_exact::<PyTuple>()?.iter().collect()
    };
    let mut out = Vec::with_capacity(items.len());
    for message in items {
        let copied = match message.cast_exact::<PyDict>() {
            Ok(dict) => masked_message(dict)?.map(Bound::into_any),
            Err(_) => None,
        };
        out.push(match copied {
            Some(copy) => copy,
            None => python_copy.call1((message,))?,
        });
    }
    PyList::new(messages.py(), out)
}

/// Write the native line `{"id": ..., "messages": [...]}` of the masked copy of a native
/// line's thread (`keys` say where a run keeps them); its message count, or None when the
/// line is Python's to read (anything `threads::native_thread` declines).
pub fn masked_native_line(line: &[u8], keys: RunKeys<'_>, out: &mut Vec<u8>) -> Option<usize> {
    masked_native_tape(&Tape::parse(line).ok()?, keys, out)
}

/// `masked_native_line` of a line's tape.
pub fn masked_native_tape(tape: &Tape<'_>, keys: RunKeys<'_>, out: &mut Vec<u8>) -> Option<usize> {
    let (id_text, messages) = native_thread(tape.root(), keys)?;
    out.extend_from_slice(b"{\"id\":");
    out.extend_from_slice(id_text.as_bytes());
    out.extend_from_slice(b",\"messages\":[");
    for (index, message) in messages.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        // Every message is an object (native_thread checks), its keys unique (the tape's).
        write_members(*message, out, |key, value, out| match key {
            b"text" => write_leaf(value, false, out),
            b"meta" => write_masked(value, false, out),
            _ => out.extend_from_slice(value.json_text()),
        });
    }
    out.extend_from_slice(b"]}");
    Some(messages.len())
}

/// An object's members, each value written by `write`.
fn write_members<'t>(
    object: Value<'t>,
    out: &mut Vec<u8>,
    mut write: impl FnMut(&[u8], Value<'t>, &mut Vec<u8>),
) {
    out.push(b'{');
    for (index, (key, value)) in object.members().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(key); // never escaped in a tape: written as it was
        out.extend_from_slice(b"\":");
        write(key, value, out);
    }
    out.push(b'}');
}

/// `_masked_value(value)` written as JSON: containers copied member by member (nesting is
/// bounded by the tape's 128 levels), each leaf as `write_leaf` makes it.
fn write_masked(value: Value<'_>, volatile: bool, out: &mut Vec<u8>) {
    if value.is_object() {
        write_members(value, out, |key, child, out| {
            // Keys are UTF-8 (the tape checked the line) and unescaped.
            let named = std::str::from_utf8(key)
                .is_ok_and(|key| volatile::is_volatile_key(key.chars().map(u32::from)));
            write_masked(child, named, out);
        });
    } else if value.is_array() {
        out.push(b'[');
        for (index, child) in value.children().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_masked(child, false, out);
        }
        out.push(b']');
    } else {
        write_leaf(value, volatile, out);
    }
}

/// `_leaf(value, volatile)` written as JSON: a string masked, or `"<volatile>"` under a
/// time-naming key, as is a number there; anything else as the line writes it.
fn write_leaf(value: Value<'_>, volatile: bool, out: &mut Vec<u8>) {
    if value.is_string() {
        if volatile {
            out.extend_from_slice(VOLATILE_JSON);
            return;
        }
        let raw = value.json_text();
        let content = &raw[1..raw.len() - 1];
        let masked = if content.is_ascii() && !content.contains(&b'\\') {
            volatile::mask_text(content) // its bytes are its code points
        } else {
            let text = value.text().unwrap_or_default();
            let points: Vec<u32> = text.chars().map(u32::from).collect();
            volatile::mask_text(&points)
        };
        match masked {
            Some(masked) => {
                let masked: String = masked.into_iter().filter_map(char::from_u32).collect();
                push_json_string(out, &masked);
            }
            None => out.extend_from_slice(raw),
        }
    } else if volatile && value.is_number() {
        out.extend_from_slice(VOLATILE_JSON);
    } else {
        out.extend_from_slice(value.json_text());
    }
}
