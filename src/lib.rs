//! The compiled core of vthread. This file only registers the Python module; every concept
//! lives in a module of its own: `canonical` (the JavaScript-equal encoding), `objects`
//! (reading Python values), `fingerprint` (XXH3-64 of encodings), `columns` (a batch of
//! threads as flat arrays) and `suffix` (the repeated-suffix pass over them).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

pub mod canonical;
pub mod fingerprint;
mod json_py;
pub mod json_reader;
pub mod objects;

/// `value`'s canonical encoding (`vthread._jsvalue.canonical`'s text, as ASCII bytes).
#[pyfunction(name = "canonical")]
fn canonical_of<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = objects::canonical_bytes(value)?;
    Ok(PyBytes::new(value.py(), &bytes))
}

/// The unsigned 64-bit XXH3 fingerprint of `value`'s canonical encoding.
#[pyfunction(name = "fingerprint")]
fn fingerprint_of(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    Ok(fingerprint::of_canonical(&objects::canonical_bytes(value)?))
}

/// `vthread._core`: the compiled half of the package.
#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(canonical_of, module)?)?;
    module.add_function(wrap_pyfunction!(fingerprint_of, module)?)?;
    json_py::register(module)?;
    Ok(())
}
