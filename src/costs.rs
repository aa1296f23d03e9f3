//! `build_thread`'s costing pass: each message's own `usage.tokens`, read in one call.
//!
//! Only the common case is decided here: an exact `dict` message whose `usage` is an exact
//! `dict` holding an exact `float` or `int` tokens figure >= 0 (finite, and an int a double
//! holds finitely). Anything else (a usage missing or of another type, a negative or
//! non-number figure, which JavaScript's `tokens >= 0` may still accept) is left to Python,
//! which applies the general rule and calls the estimator in the message's turn.

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList};

/// The figures, NaN where Python decides, and the indexes Python decides.
type Costs<'py> = (Bound<'py, PyArray1<f64>>, Vec<usize>);

/// Per message of `messages` (a list), its own token figure, or NaN where Python must
/// decide (then its index is in the second list). None when `messages` is not a list of
/// exact dicts: Python then checks and costs every message itself, naming a bad one.
///
/// With `decide` (Python's general rule: a message's own figure as JavaScript compares it,
/// else the estimator's), given only for a list a call without it read to the end, each
/// message the core cannot decide is decided by `decide(message, index)` in its turn,
/// oldest first, and the second list is empty: the messages after it are read after that
/// call, as production's oldest-first map reads them (an estimator may change a later
/// message's own figure), and an error it raises ends the pass there.
#[pyfunction]
#[pyo3(signature = (messages, decide = None))]
pub fn own_token_costs<'py>(
    messages: &Bound<'py, PyAny>,
    decide: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Costs<'py>>> {
    let py = messages.py();
    let Ok(list) = messages.cast_exact::<PyList>() else {
        return Ok(None);
    };
    let mut costs = Vec::with_capacity(list.len());
    let mut undecided = Vec::new();
    for (index, message) in list.iter().enumerate() {
        let Ok(message) = message.cast_exact::<PyDict>() else {
            if decide.is_none() {
                return Ok(None);
            }
            // `decide` is given a list the core read whole without it (see `build_thread`):
            // a message that is no dict now was changed by a call made for an earlier one.
            return Err(PyValueError::new_err(format!(
                "messages[{index}] is no longer a dict"
            )));
        };
        match own_figure(message)? {
            Some(figure) => costs.push(figure),
            None => match decide {
                Some(decide) => costs.push(decide.call1((message, index))?.extract::<f64>()?),
                None => {
                    costs.push(f64::NAN);
                    undecided.push(index);
                }
            },
        }
    }
    Ok(Some((crate::numpy_array(py, costs)?, undecided)))
}

/// The message's `usage.tokens` as a finite double >= 0, when plainly one.
fn own_figure(message: &Bound<'_, PyDict>) -> PyResult<Option<f64>> {
    // Interned keys: a `&str` key would be made into a new Python string (allocated and
    // hashed) for every lookup, which cost more than the rest of the pass.
    let py = message.py();
    let Some(usage) = message.get_item(intern!(py, "usage"))? else {
        return Ok(None);
    };
    let Ok(usage) = usage.cast_exact::<PyDict>() else {
        return Ok(None);
    };
    let Some(tokens) = usage.get_item(intern!(py, "tokens"))? else {
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

/// Production's selection for the common case (no `inclusive`, no trim function): the
/// newest messages of `messages[first..]` whose costs, summed newest first, stay within
/// `limit` (the newest `floor` kept whatever they cost), returned as copies carrying their
/// usage (`{**message, "usage": {"tokens": cost}}`), oldest first, with their total.
/// `messages` must be the list of exact dicts `own_token_costs` read, `costs` one figure per
/// message. The walk is the Python `_newest_fitting`'s, step for step, so the total is the
/// same sequence of double additions.
#[pyfunction]
pub fn newest_fitting<'py>(
    messages: &Bound<'py, PyList>,
    costs: PyReadonlyArray1<'py, f64>,
    first: usize,
    limit: f64,
    floor: f64,
) -> PyResult<(Bound<'py, PyList>, f64)> {
    let py = messages.py();
    let costs = costs.as_slice()?;
    let n = messages.len();
    if costs.len() != n || first > n {
        return Err(PyValueError::new_err(format!(
            "{} costs and first {first} for {n} messages",
            costs.len()
        )));
    }
    let mut start = n;
    let mut total = 0.0;
    for index in (first..n).rev() {
        let tokens = costs[index];
        let within_floor = ((n - index) as f64) <= floor;
        if total + tokens > limit && !within_floor {
            break;
        }
        start = index;
        total += tokens;
        if total >= limit && !within_floor {
            break;
        }
    }
    let usage_key = intern!(py, "usage");
    let tokens_key = intern!(py, "tokens");
    let taken = PyList::empty(py);
    for (index, &tokens) in costs.iter().enumerate().skip(start) {
        let message = messages.get_item(index)?;
        let message = message.cast_exact::<PyDict>().map_err(PyErr::from)?;
        let copy = message.copy()?;
        let usage = PyDict::new(py);
        usage.set_item(tokens_key, PyFloat::new(py, tokens))?;
        copy.set_item(usage_key, usage)?;
        taken.append(copy)?;
    }
    Ok((taken, total))
}
