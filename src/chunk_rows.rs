//! The rows of a chunk of JSONL as Python hands them over: `bytes` objects, slices of one
//! read of the file (`vthread scan` splits a read into its lines without copying them out),
//! or read-only views of such a read. The core reads every row in place, with the GIL
//! released; what it keeps of a row (a parsed tape) holds the Python object the row lies in.

use numpy::PyReadonlyArray1;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyMemoryView};

/// Whether `object` is a `memoryview` of an exact `bytes`: memory no one can write to while
/// the core reads it with the GIL released. A buffer that merely says it is read-only may
/// not be (`memoryview(bytearray).toreadonly()` is written through its `bytearray`), nor
/// may a `bytes` subclass's (from Python 3.12 its `__buffer__` can hand out any buffer): a
/// `bytes`, subclass or not, is read from its own storage (`PyBytes::as_bytes`) instead.
pub fn is_view_of_bytes(object: &Bound<'_, PyAny>) -> bool {
    object.cast::<PyMemoryView>().is_ok()
        && object
            .getattr("obj")
            .is_ok_and(|exporter| exporter.is_exact_instance_of::<PyBytes>())
}

/// The bytes of a read-only, C-contiguous buffer; None for a buffer its exporter says may be
/// written to (or that is laid out in strides). Read with the GIL released only when it is
/// a view of a `bytes` (`is_view_of_bytes`).
pub fn readonly_bytes(buffer: &PyBuffer<u8>) -> Option<&[u8]> {
    if !buffer.readonly() || !buffer.is_c_contiguous() {
        return None;
    }
    if buffer.len_bytes() == 0 {
        return Some(&[]); // an empty exporter may hand over no memory at all (a null pointer)
    }
    // SAFETY: the buffer is read-only, C-contiguous and not empty (checked above), and
    // `buffer` keeps its exporter alive and the memory pinned for as long as the slice
    // borrows it; the callers read it with the GIL released only when it is a view of a
    // `bytes` (`is_view_of_bytes`), which nothing can write to meanwhile.
    Some(unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const u8, buffer.len_bytes()) })
}

/// The items of `lines`, each a `bytes` (a TypeError otherwise), held while their bytes are
/// read with the GIL released.
pub fn byte_lines<'py>(lines: &Bound<'py, PyList>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    lines
        .iter()
        .map(|line| line.cast_into::<PyBytes>().map_err(PyErr::from))
        .collect()
}

/// The slices `data[starts[i]..ends[i]]`; a ValueError naming the first row whose bounds are
/// negative, reversed, or outside `data`.
pub fn slices_of<'a>(data: &'a [u8], starts: &[i64], ends: &[i64]) -> PyResult<Vec<&'a [u8]>> {
    let bounds = bounds_in(data.len(), starts, ends).map_err(PyValueError::new_err)?;
    Ok(bounds
        .into_iter()
        .map(|(start, end)| &data[start..end])
        .collect())
}

/// The rows' bounds `(starts[i], ends[i])` in a buffer of `length` bytes, or what is wrong
/// with them (the first row whose bounds are negative, reversed, or outside it).
fn bounds_in(length: usize, starts: &[i64], ends: &[i64]) -> Result<Vec<(usize, usize)>, String> {
    if starts.len() != ends.len() {
        return Err("starts and ends differ in length".to_owned());
    }
    starts
        .iter()
        .zip(ends)
        .enumerate()
        .map(|(row, (&start, &end))| {
            let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
                return Err(format!("row {row}: a negative offset"));
            };
            if start <= end && end <= length {
                Ok((start, end))
            } else {
                Err(format!(
                    "row {row}: slice {start}..{end} outside the buffer of {length} bytes"
                ))
            }
        })
        .collect()
}

/// A read of a file as Python hands it over: the `bytes`, and the starts and ends of its
/// lines in it.
pub type BlockArgument<'py> = (
    Bound<'py, PyBytes>,
    PyReadonlyArray1<'py, i64>,
    PyReadonlyArray1<'py, i64>,
);

/// A read of a file and where its rows lie in it (start, end).
type Block<'py> = (Bound<'py, PyBytes>, Vec<(usize, usize)>);

/// A chunk's rows: each of `lines` (a `bytes`), then the slices of `block` its bounds name.
pub struct ChunkRows<'py> {
    lines: Vec<Bound<'py, PyBytes>>,
    block: Option<Block<'py>>,
}

impl<'py> ChunkRows<'py> {
    /// The rows of `lines` (each must be a `bytes`: a TypeError otherwise) followed by those
    /// of `block`, a `bytes` and the starts and ends of its rows in it.
    pub fn new(lines: &Bound<'py, PyList>, block: Option<BlockArgument<'py>>) -> PyResult<Self> {
        let lines = byte_lines(lines)?;
        let block = match block {
            None => None,
            Some((data, starts, ends)) => {
                let bounds = bounds_in(data.as_bytes().len(), starts.as_slice()?, ends.as_slice()?)
                    .map_err(PyValueError::new_err)?;
                Some((data, bounds))
            }
        };
        Ok(ChunkRows { lines, block })
    }

    /// Every row's bytes, in order.
    pub fn views(&self) -> Vec<&[u8]> {
        let mut views: Vec<&[u8]> = self.lines.iter().map(|line| line.as_bytes()).collect();
        if let Some((data, bounds)) = &self.block {
            let bytes = data.as_bytes();
            views.extend(bounds.iter().map(|&(start, end)| &bytes[start..end]));
        }
        views
    }

    /// The `bytes` row `row` lies in (held by what is kept of it).
    pub fn owner(&self, row: usize) -> Py<PyBytes> {
        match (self.lines.get(row), &self.block) {
            (Some(line), _) => line.clone().unbind(),
            (None, Some((data, _))) => data.clone().unbind(),
            (None, None) => unreachable!("row {row} past the chunk's rows"),
        }
    }
}

/// A line handed to the core as a `bytes`, or as a `memoryview` of one (of a slice of a
/// read: the same memory the core read it in when it scanned the chunk).
pub enum LineBuffer<'py> {
    Bytes(Bound<'py, PyBytes>),
    View(PyBuffer<u8>),
}

impl LineBuffer<'_> {
    /// The line's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            LineBuffer::Bytes(bytes) => bytes.as_bytes(),
            LineBuffer::View(buffer) => readonly_bytes(buffer).unwrap_or_default(),
        }
    }
}

/// Each of `lines` as a `LineBuffer`: a `bytes`, or a contiguous `memoryview` of a `bytes`
/// (immutable, so nothing writes to it while the core reads it with the GIL released); a
/// TypeError naming the first item that is neither (a view of a `bytearray`, even one made
/// read-only, could be written to meanwhile).
pub fn line_buffers<'py>(lines: &Bound<'py, PyList>) -> PyResult<Vec<LineBuffer<'py>>> {
    lines
        .iter()
        .enumerate()
        .map(|(index, line)| {
            if let Ok(bytes) = line.cast::<PyBytes>() {
                return Ok(LineBuffer::Bytes(bytes.clone()));
            }
            let not_bytes = || {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "line {index}: expected bytes or a memoryview of bytes, got {}",
                    line.get_type()
                        .name()
                        .map_or_else(|_| "?".to_owned(), |name| name.to_string())
                ))
            };
            if !is_view_of_bytes(&line) {
                return Err(not_bytes());
            }
            let buffer = PyBuffer::<u8>::get(&line).map_err(|_| not_bytes())?;
            match readonly_bytes(&buffer) {
                Some(_) => Ok(LineBuffer::View(buffer)),
                None => Err(not_bytes()),
            }
        })
        .collect()
}

/// Where each of the first `most` newlines (byte 0x0A) of `data[start..]` lies in `data`.
pub fn newline_positions(data: &[u8], start: usize, most: usize) -> Vec<i64> {
    let Some(rest) = data.get(start..) else {
        return Vec::new();
    };
    memchr::memchr_iter(b'\n', rest)
        .take(most)
        .map(|at| (start + at) as i64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newline_positions_are_those_of_a_plain_search() {
        let data = b"a\nbb\n\nccc\nd";
        let every: Vec<i64> = (0..data.len())
            .filter(|&at| data[at] == b'\n')
            .map(|at| at as i64)
            .collect();
        assert_eq!(newline_positions(data, 0, usize::MAX), every);
        assert_eq!(newline_positions(data, 0, 2), every[..2]);
        assert_eq!(newline_positions(data, 5, usize::MAX), vec![5, 9]);
        assert_eq!(newline_positions(data, data.len(), 9), Vec::<i64>::new());
        assert_eq!(
            newline_positions(data, data.len() + 1, 9),
            Vec::<i64>::new()
        );
    }

    #[test]
    fn slices_name_the_row_whose_bounds_are_wrong() {
        let data = b"0123456789";
        let rows = bounds_in(data.len(), &[0, 3], &[2, 10]).unwrap();
        assert_eq!(rows, vec![(0, 2), (3, 10)]);
        let wrong = [
            (vec![0, -1], vec![1, 2]),
            (vec![0, 5], vec![1, 11]),
            (vec![0, 5], vec![1, 4]),
        ];
        for (starts, ends) in wrong {
            let why = bounds_in(data.len(), &starts, &ends).unwrap_err();
            assert!(why.starts_with("row 1:"), "{why}");
        }
        assert!(bounds_in(data.len(), &[0], &[]).is_err());
    }
}
