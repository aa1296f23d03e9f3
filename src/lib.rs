//! The compiled core of vthread. This file only registers the Python module; every concept
//! lives in a module of its own.

use pyo3::prelude::*;

/// `vthread._core`: the compiled half of the package.
#[pymodule]
fn _core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
