//! The JSON reader's Python functions, `_core.canonical_json` and `_core.fingerprint_json`:
//! canonical encodings and fingerprints of JSON bytes without building Python objects.

use std::cell::RefCell;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::fingerprint;
use crate::json_reader::{JsonError, Reader};

/// Output capacity above which a thread's buffers are released after the call instead of
/// kept (one huge text must not pin its memory for the thread's lifetime).
const RETAINED_BYTES: usize = 1 << 20;

thread_local! {
    /// Each thread's reader and output buffer, kept between calls: a call per JSONL line
    /// then allocates nothing once the buffers have grown to the longest line (a sixth faster
    /// on the benchmark workload).
    static READER: RefCell<(Reader, Vec<u8>)> = RefCell::new((Reader::new(), Vec::new()));
}

/// `f` of `data`'s canonical bytes, or the reader's error.
fn with_canonical<T>(data: &[u8], f: impl FnOnce(&[u8]) -> T) -> Result<T, JsonError> {
    READER.with_borrow_mut(|(reader, out)| {
        out.clear();
        let answer = reader.push_canonical(out, data).map(|()| f(out));
        if out.capacity() > RETAINED_BYTES {
            // The member stacks scale with the output: a text this large grew them too.
            (*reader, *out) = (Reader::new(), Vec::new());
        }
        answer
    })
}

/// `canonical(json.loads(data))` read straight from the bytes; `ValueError` with
/// `json.loads`' own message where it rejects them. The GIL is released while reading.
#[pyfunction(name = "canonical_json")]
fn canonical_json_of<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py
        .detach(|| with_canonical(data, <[u8]>::to_vec))
        .map_err(|error| value_error(py, error))?;
    crate::new_bytes(py, &bytes)
}

/// The unsigned 64-bit XXH3 fingerprint of `canonical_json(data)`.
#[pyfunction(name = "fingerprint_json")]
fn fingerprint_json_of(py: Python<'_>, data: &[u8]) -> PyResult<u64> {
    py.detach(|| with_canonical(data, fingerprint::of_canonical))
        .map_err(|error| value_error(py, error))
}

/// `ValueError` with `json.loads`' message and an `offset` attribute: the byte offset of
/// the fault in the input as given, so a caller can point at it.
fn value_error(py: Python<'_>, error: JsonError) -> PyErr {
    let raised = PyValueError::new_err(error.to_string());
    // Setting an attribute on a fresh ValueError cannot fail; if it ever did, the message
    // alone is still the right error.
    let _ = raised.value(py).setattr("offset", error.offset);
    raised
}

/// Add the reader's functions to `vthread._core`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(canonical_json_of, module)?)?;
    module.add_function(wrap_pyfunction!(fingerprint_json_of, module)?)?;
    Ok(())
}
