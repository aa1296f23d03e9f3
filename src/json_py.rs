//! The JSON reader's Python functions, `_core.canonical_json` and `_core.fingerprint_json`:
//! canonical encodings and fingerprints of JSON bytes without building Python objects.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::fingerprint;
use crate::json_reader::{self, JsonError};

/// `canonical(json.loads(data))` read straight from the bytes; `ValueError` with
/// `json.loads`' own message where it rejects them. The GIL is released while reading.
#[pyfunction(name = "canonical_json")]
fn canonical_json_of<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py
        .detach(|| json_reader::canonical_json(data))
        .map_err(value_error)?;
    Ok(PyBytes::new(py, &bytes))
}

/// The unsigned 64-bit XXH3 fingerprint of `canonical_json(data)`.
#[pyfunction(name = "fingerprint_json")]
fn fingerprint_json_of(py: Python<'_>, data: &[u8]) -> PyResult<u64> {
    py.detach(|| json_reader::canonical_json(data).map(|bytes| fingerprint::of_canonical(&bytes)))
        .map_err(value_error)
}

fn value_error(error: JsonError) -> PyErr {
    PyValueError::new_err(error.to_string())
}

/// Add the reader's functions to `vthread._core`.
pub fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(canonical_json_of, module)?)?;
    module.add_function(wrap_pyfunction!(fingerprint_json_of, module)?)?;
    Ok(())
}
