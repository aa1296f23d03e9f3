//! The compiled core of vthread. This file only registers the Python module; every concept
//! lives in a module of its own: `canonical` (the JavaScript-equal encoding), `objects`
//! (reading Python values), `fingerprint` (XXH3-64 of encodings), `columns` (a batch of
//! threads as flat arrays) and `suffix` (the repeated-suffix pass over them).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

pub mod canonical;
pub mod columns;
pub mod fingerprint;
pub mod objects;
pub mod suffix;

use numpy::IntoPyArray;
use pyo3::types::{PyDict, PyList};

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

/// Read a batch of threads into the columns the NumPy heuristics run over (see
/// `columns.rs`): a dict of NumPy arrays. Errors name the thread and message index.
#[pyfunction]
fn scan_columns<'py>(
    threads: &Bound<'py, PyList>,
    min_repetitions: usize,
    min_pattern_length: usize,
    max_pattern_length: Option<usize>,
    min_result_repetitions: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let py = threads.py();
    let items: Vec<Bound<'py, PyAny>> = threads.iter().collect();
    let options = columns::ScanOptions {
        suffix: suffix::SuffixOptions {
            min_repetitions,
            min_pattern_length,
            max_pattern_length,
        },
        needed_results: min_result_repetitions,
    };
    let read = columns::Columns::read(&items, &options)?;
    let out = PyDict::new(py);
    out.set_item("lengths", read.lengths.into_pyarray(py))?;
    out.set_item("suffix_period", read.suffix_period.into_pyarray(py))?;
    out.set_item("suffix_copies", read.suffix_copies.into_pyarray(py))?;
    out.set_item("tail_length", read.tail_length.into_pyarray(py))?;
    out.set_item("tail_offsets", read.tail_offsets.into_pyarray(py))?;
    out.set_item("tail_kind", read.tail_kind.into_pyarray(py))?;
    out.set_item("tail_kind_id", read.tail_kind_id.into_pyarray(py))?;
    out.set_item("tail_name", read.tail_name.into_pyarray(py))?;
    out.set_item("tail_arguments", read.tail_arguments.into_pyarray(py))?;
    out.set_item("tail_result", read.tail_result.into_pyarray(py))?;
    out.set_item("result_run", read.result_run.into_pyarray(py))?;
    out.set_item("result_start", read.result_start.into_pyarray(py))?;
    out.set_item("result_period", read.result_period.into_pyarray(py))?;
    out.set_item("result_copies", read.result_copies.into_pyarray(py))?;
    out.set_item("text_thread", read.text_thread.into_pyarray(py))?;
    out.set_item("text_index", read.text_index.into_pyarray(py))?;
    Ok(out)
}

/// Keep only the low `bits` bits of the suffix screens (64 restores them): a test hook that
/// makes screens collide everywhere, to show collisions change no answer.
#[pyfunction]
fn _set_screen_bits(bits: u32) {
    suffix::set_screen_bits(bits);
}

/// `vthread._core`: the compiled half of the package.
#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add_function(wrap_pyfunction!(canonical_of, module)?)?;
    module.add_function(wrap_pyfunction!(fingerprint_of, module)?)?;
    module.add_function(wrap_pyfunction!(scan_columns, module)?)?;
    module.add_function(wrap_pyfunction!(_set_screen_bits, module)?)?;
    Ok(())
}
