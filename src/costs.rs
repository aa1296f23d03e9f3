//! `build_thread`'s costing pass: each message's own `usage.tokens`, read in one call.
//!
//! Only the common case is decided here: an exact `dict` message whose `usage` is an exact
//! `dict` holding an exact `float` or `int` tokens figure >= 0 (finite, and an int a double
//! holds finitely). Anything else (a usage missing or of another type, a negative or
//! non-number figure, which JavaScript's `tokens >= 0` may still accept) is left to Python,
//! which applies the general rule and calls the estimator in the message's turn.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList};

/// The figures, NaN where Python decides, and the indexes Python decides.
type Costs<'py> = (Bound<'py, PyArray1<f64>>, Vec<usize>);

/// Per message of `messages` (a list), its own token figure, or NaN where Python must
/// decide (then its index is in the second list). None when `messages` is not a list of
/// exact dicts: Python then checks and costs every message itself, naming a bad one.
#[pyfunction]
pub fn own_token_costs<'py>(messages: &Bound<'py, PyAny>) -> PyResult<Option<Costs<'py>>> {
    let py = messages.py();
    let Ok(list) = messages.cast_exact::<PyList>() else {
        return Ok(None);
    };
    let mut costs = Vec::with_capacity(list.len());
    let mut undecided = Vec::new();
    for (index, message) in list.iter().enumerate() {
        let Ok(message) = message.cast_exact::<PyDict>() else {
            return Ok(None);
        };
        match own_figure(message)? {
            Some(figure) => costs.push(figure),
            None => {
                costs.push(f64::NAN);
                undecided.push(index);
            }
        }
    }
    Ok(Some((costs.into_pyarray(py), undecided)))
}

/// The message's `usage.tokens` as a finite double >= 0, when plainly one.
fn own_figure(message: &Bound<'_, PyDict>) -> PyResult<Option<f64>> {
    let Some(usage) = message.get_item("usage")? else {
        return Ok(None);
    };
    let Ok(usage) = usage.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let Some(tokens) = usage.get_item("tokens")? else {
        return Ok(None);
    };
    if let Ok(number) = tokens.cast_exact::<PyFloat>() {
        let value = number.value();
        return Ok((value.is_finite() && value >= 0.0).then_some(value));
    }
    if tokens.cast_exact::<PyInt>().is_ok() {
        // An int beyond 64 bits, or negative, goes to Python (its float may overflow there
        // and count 0, which Python decides).
        return Ok(tokens.extract::<u64>().ok().map(|value| value as f64));
    }
    Ok(None)
}
