//! Arrow rows of nested values (a column of lists of message structs, say) written as JSON
//! text, so that the core reads them the way it reads a JSON text column: no Python object
//! per row or per message.
//!
//! The text of a row is what `json.dumps` would write for the Python value `pyarrow` gives
//! for it with the null fields of its objects dropped (an Arrow struct cannot tell a null
//! field from an absent one): parsing it back gives an equal value, numbers of the same
//! Python type (an integer column stays integers, a float column floats). A value with no
//! such text (NaN, an infinity, a float16, bytes, a timestamp, a map, a dictionary-encoded
//! column, a struct with two fields of one name, ...) declines the whole array, and the
//! caller reads it through Python objects instead; the answer never depends on which way.

use std::fmt::Write as _;

use arrow_array::cast::AsArray;
use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{make_array, Array, ArrayRef};
use arrow_schema::DataType;

/// Why an array's rows have no JSON text here.
#[derive(Debug, PartialEq, Eq)]
pub enum Unwritten {
    /// Some value has none (the caller falls back to Python objects).
    Declined,
    /// The memory the text takes cannot be had: the caller raises MemoryError. Grown as
    /// `Vec` grows by itself, the text's buffer ended the process with the allocator's
    /// abort (a row of 150 MB under `ulimit -v 1500000`), no record written.
    OutOfMemory,
}
use Unwritten::{Declined, OutOfMemory};

/// Rows as JSON texts in one buffer: row `i` is `text[starts[i]..ends[i]]` of the non-null
/// row `rows[i]` (null rows have no text; the caller reports them).
#[derive(Debug, Default)]
pub struct RowTexts {
    pub text: Vec<u8>,
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    pub rows: Vec<i64>,
}

/// Takes ownership of an array exported through the Arrow C data interface and checks it
/// whole (offsets within their buffers, strings valid UTF-8), so that nothing an exporter
/// hands over can make a read go out of bounds.
///
/// # Safety
/// `array` and `schema` point to a valid exported array and its schema (as the capsules of
/// `__arrow_c_array__` hold); the array is moved out (its release callback left to us).
pub unsafe fn import(
    array: *mut FFI_ArrowArray,
    schema: &FFI_ArrowSchema,
) -> Result<ArrayRef, String> {
    if !shallow(schema) {
        return Err(NESTED_TOO_DEEP.to_owned());
    }
    // SAFETY: the caller's promise; `from_raw` moves the struct out and marks the source
    // released, as the C data interface asks of a consumer.
    let data = unsafe { from_ffi(FFI_ArrowArray::from_raw(array), schema) }
        .map_err(|error| error.to_string())?;
    data.validate_full().map_err(|error| error.to_string())?;
    Ok(make_array(data))
}

/// What [`import`] says of a schema nested deeper than [`MAX_DEPTH`] (or with more than
/// [`MAX_SCHEMA_NODES`] types in it): such an array is left to Python, never imported.
pub const NESTED_TOO_DEEP: &str = "nested deeper than the core reads";

/// Types in one schema beyond which it is not walked: message structs have a few dozen.
const MAX_SCHEMA_NODES: usize = 100_000;

/// Whether `schema` is nested at most [`MAX_DEPTH`] deep, checked with an explicit stack:
/// arrow-rs's importer recurses once per level, so a type nested thousands deep (which an
/// exporter can build) would exhaust the thread's stack inside it.
fn shallow(schema: &FFI_ArrowSchema) -> bool {
    let mut pending = vec![(schema, 0usize)];
    let mut seen = 0usize;
    while let Some((node, depth)) = pending.pop() {
        seen += 1;
        if depth > MAX_DEPTH || seen > MAX_SCHEMA_NODES {
            return false;
        }
        pending.extend(node.children().map(|child| (child, depth + 1)));
        if let Some(dictionary) = node.dictionary() {
            pending.push((dictionary, depth + 1));
        }
    }
    true
}

/// The JSON text of every non-null row of `array`, or [`Declined`] when some value has none;
/// parts of [`ROWS_PER_PART`] rows written on `threads` worker threads, stitched in order.
pub fn row_texts(array: &ArrayRef, threads: usize) -> Result<RowTexts, Unwritten> {
    supported(array.data_type())?;
    let bounds: Vec<usize> = (0..array.len()).step_by(ROWS_PER_PART).collect();
    let parts = crate::pool::map_parts(&bounds, 1, threads, |begin| {
        let begin = begin[0];
        part_texts(array, begin..array.len().min(begin + ROWS_PER_PART))
    });
    let mut parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    if parts.len() == 1 {
        return Ok(parts.pop().unwrap_or_default()); // (one part is the whole, not copied)
    }
    // Asked for at once, exactly: grown part by part, the buffer could ask twice the text
    // while every part is still held.
    let bytes = parts.iter().map(|part| part.text.len()).sum();
    let rows = parts.iter().map(|part| part.rows.len()).sum();
    let mut whole = RowTexts::default();
    let exactly = |_: std::collections::TryReserveError| OutOfMemory;
    whole.text.try_reserve_exact(bytes).map_err(exactly)?;
    whole.starts.try_reserve_exact(rows).map_err(exactly)?;
    whole.ends.try_reserve_exact(rows).map_err(exactly)?;
    whole.rows.try_reserve_exact(rows).map_err(exactly)?;
    for part in parts {
        let shift = whole.text.len() as i64;
        whole.text.extend_from_slice(&part.text);
        whole
            .starts
            .extend(part.starts.iter().map(|start| start + shift));
        whole.ends.extend(part.ends.iter().map(|end| end + shift));
        whole.rows.extend(part.rows);
    }
    Ok(whole)
}

/// Rows per part handed to a worker thread.
const ROWS_PER_PART: usize = 256;

fn part_texts(array: &ArrayRef, rows: std::ops::Range<usize>) -> Result<RowTexts, Unwritten> {
    let mut out = RowTexts::default();
    room(&mut out.starts, rows.len())?;
    room(&mut out.ends, rows.len())?;
    room(&mut out.rows, rows.len())?;
    for row in rows {
        if is_null(array.as_ref(), row) {
            continue;
        }
        out.starts.push(out.text.len() as i64);
        write_value(&mut out.text, array.as_ref(), row)?;
        out.ends.push(out.text.len() as i64);
        out.rows.push(row as i64);
    }
    Ok(out)
}

/// Nesting deeper than this declines: the writer recurses once per level, and an exporter
/// can build a type nested deep enough to exhaust a thread's stack. Message structs need a
/// handful of levels.
const MAX_DEPTH: usize = 64;

/// Checks the type once, up front, so that no row is written of an array that would decline.
fn supported(kind: &DataType) -> Result<(), Unwritten> {
    supported_at(kind, 0)
}

fn supported_at(kind: &DataType, depth: usize) -> Result<(), Unwritten> {
    if depth > MAX_DEPTH {
        return Err(Declined);
    }
    match kind {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View => Ok(()),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            supported_at(item.data_type(), depth + 1)
        }
        DataType::Struct(fields) => {
            for (index, field) in fields.iter().enumerate() {
                // Python keeps the last of two fields of one name; not worth copying.
                if fields[..index].iter().any(|f| f.name() == field.name()) {
                    return Err(Declined);
                }
                supported_at(field.data_type(), depth + 1)?;
            }
            Ok(())
        }
        _ => Err(Declined),
    }
}

/// Writes the value at `row` of `array` (not null) as JSON text.
fn write_value(out: &mut Vec<u8>, array: &dyn Array, row: usize) -> Result<(), Unwritten> {
    // The recursion is as deep as the type, which `supported` has bounded at MAX_DEPTH.
    match array.data_type() {
        DataType::Null => put(out, b"null")?,
        DataType::Boolean => {
            let value = array.as_boolean().value(row);
            put(out, if value { b"true" } else { b"false" })?;
        }
        DataType::Int8 => write_integer(out, array.as_primitive::<Int8Type>().value(row))?,
        DataType::Int16 => write_integer(out, array.as_primitive::<Int16Type>().value(row))?,
        DataType::Int32 => write_integer(out, array.as_primitive::<Int32Type>().value(row))?,
        DataType::Int64 => write_integer(out, array.as_primitive::<Int64Type>().value(row))?,
        DataType::UInt8 => write_integer(out, array.as_primitive::<UInt8Type>().value(row))?,
        DataType::UInt16 => write_integer(out, array.as_primitive::<UInt16Type>().value(row))?,
        DataType::UInt32 => write_integer(out, array.as_primitive::<UInt32Type>().value(row))?,
        DataType::UInt64 => write_integer(out, array.as_primitive::<UInt64Type>().value(row))?,
        DataType::Float32 => write_float(
            out,
            f64::from(array.as_primitive::<Float32Type>().value(row)),
        )?,
        DataType::Float64 => write_float(out, array.as_primitive::<Float64Type>().value(row))?,
        DataType::Utf8 => write_string(out, array.as_string::<i32>().value(row))?,
        DataType::LargeUtf8 => write_string(out, array.as_string::<i64>().value(row))?,
        DataType::Utf8View => write_string(out, array.as_string_view().value(row))?,
        DataType::List(_) => write_items(out, &array.as_list::<i32>().value(row))?,
        DataType::LargeList(_) => write_items(out, &array.as_list::<i64>().value(row))?,
        DataType::FixedSizeList(_, _) => write_items(out, &array.as_fixed_size_list().value(row))?,
        DataType::Struct(fields) => {
            let array = array.as_struct();
            put(out, b"{")?;
            let mut first = true;
            for (field, column) in fields.iter().zip(array.columns()) {
                if is_null(column.as_ref(), row) {
                    continue; // a null field reads as absent
                }
                if !first {
                    put(out, b",")?;
                }
                first = false;
                write_string(out, field.name())?;
                put(out, b":")?;
                write_value(out, column.as_ref(), row)?;
            }
            put(out, b"}")?;
        }
        _ => return Err(Declined),
    }
    Ok(())
}

/// Whether the value at `row` is null. An array of the null type has no validity buffer, so
/// `Array::is_null` (which reads that buffer) calls its values valid; they are all null.
fn is_null(array: &dyn Array, row: usize) -> bool {
    *array.data_type() == DataType::Null || array.is_null(row)
}

fn write_items(out: &mut Vec<u8>, items: &ArrayRef) -> Result<(), Unwritten> {
    put(out, b"[")?;
    for index in 0..items.len() {
        if index > 0 {
            put(out, b",")?;
        }
        if is_null(items.as_ref(), index) {
            put(out, b"null")?; // a list keeps its nulls
        } else {
            write_value(out, items.as_ref(), index)?;
        }
    }
    put(out, b"]")
}

/// Room for `more` items in `out`, asked for without the allocator's abort on failure:
/// every write here asks first, so that no write can grow the buffer itself.
fn room<T>(out: &mut Vec<T>, more: usize) -> Result<(), Unwritten> {
    out.try_reserve(more).map_err(|_| OutOfMemory)
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), Unwritten> {
    room(out, bytes.len())?;
    out.extend_from_slice(bytes);
    Ok(())
}

/// The longest text `write!` makes of a number here (an `i64`'s or a `u64`'s digits, an
/// `f64`'s shortest round-tripping form, such as `-2.2250738585072014e-308`, or a `\uXXXX`
/// escape), asked for before it is written.
const NUMBER_TEXT_BYTES: usize = 32;

fn write_integer(out: &mut Vec<u8>, value: impl std::fmt::Display) -> Result<(), Unwritten> {
    room(out, NUMBER_TEXT_BYTES)?;
    let _ = write!(Bytes(out), "{value}");
    Ok(())
}

/// A float as text that parses back to the same float *as a float*: Rust's `{:?}` is the
/// shortest text that round-trips and always has a `.` or an exponent (`1.0`, `-0.0`,
/// `1e300`), so `json.loads` makes a float of it, as `pyarrow` would.
fn write_float(out: &mut Vec<u8>, value: f64) -> Result<(), Unwritten> {
    if !value.is_finite() {
        return Err(Declined); // NaN and the infinities have no JSON text
    }
    room(out, NUMBER_TEXT_BYTES)?;
    let _ = write!(Bytes(out), "{value:?}");
    Ok(())
}

/// A JSON string: `"` and `\` escaped, control characters as `\u00XX`, the rest as UTF-8.
fn write_string(out: &mut Vec<u8>, text: &str) -> Result<(), Unwritten> {
    let bytes = text.as_bytes();
    room(out, bytes.len() + 2)?; // (all of it, when nothing is escaped)
    out.push(b'"');
    let mut plain = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        put(out, &bytes[plain..index])?;
        room(out, NUMBER_TEXT_BYTES)?;
        if escape.is_empty() {
            let _ = write!(Bytes(out), "\\u{byte:04x}");
        } else {
            out.extend_from_slice(escape);
        }
        plain = index + 1;
    }
    put(out, &bytes[plain..])?;
    put(out, b"\"")
}

/// `write!` into a byte vector, with no `String` in between.
struct Bytes<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Bytes<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0.extend_from_slice(text.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::{Int64Builder, ListBuilder, StringBuilder, StructBuilder};
    use arrow_array::{Float64Array, StringArray};
    use arrow_schema::{Field, Fields};
    use std::sync::Arc;

    fn texts(array: ArrayRef) -> Vec<String> {
        let got = row_texts(&array, 1).expect("supported");
        got.starts
            .iter()
            .zip(&got.ends)
            .map(|(&s, &e)| String::from_utf8(got.text[s as usize..e as usize].to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn strings_are_escaped_as_json() {
        let array: ArrayRef = Arc::new(StringArray::from(vec!["a\"b\\c\n\u{1}é"]));
        assert_eq!(texts(array), vec!["\"a\\\"b\\\\c\\n\\u0001é\""]);
    }

    #[test]
    fn floats_stay_floats_and_non_finite_declines() {
        let array: ArrayRef = Arc::new(Float64Array::from(vec![1.0, -0.0, 1e300, 0.1]));
        assert_eq!(texts(array), vec!["1.0", "-0.0", "1e300", "0.1"]);
        let nan: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN]));
        assert_eq!(row_texts(&nan, 1).unwrap_err(), Declined);
    }

    #[test]
    fn struct_null_fields_are_absent_and_list_nulls_kept() {
        let fields = Fields::from(vec![
            Field::new("type", DataType::Utf8, true),
            Field::new("tokens", DataType::Int64, true),
        ]);
        let values = StructBuilder::new(
            fields.clone(),
            vec![
                Box::new(StringBuilder::new()),
                Box::new(Int64Builder::new()),
            ],
        );
        let mut list = ListBuilder::new(values);
        {
            let items = list.values();
            items
                .field_builder::<StringBuilder>(0)
                .unwrap()
                .append_value("user");
            items
                .field_builder::<Int64Builder>(1)
                .unwrap()
                .append_null();
            items.append(true);
            items
                .field_builder::<StringBuilder>(0)
                .unwrap()
                .append_null();
            items
                .field_builder::<Int64Builder>(1)
                .unwrap()
                .append_null();
            items.append(false);
        }
        list.append(true);
        list.append(false);
        let array: ArrayRef = Arc::new(list.finish());
        let got = row_texts(&array, 2).unwrap();
        assert_eq!(got.rows, vec![0]);
        assert_eq!(
            String::from_utf8(got.text).unwrap(),
            "[{\"type\":\"user\"},null]"
        );
    }

    #[test]
    fn parts_on_two_threads_stitch_to_the_one_thread_texts() {
        let values: Vec<Option<String>> = (0..1000)
            .map(|i| (i % 7 != 3).then(|| format!("row {i}")))
            .collect();
        let array: ArrayRef = Arc::new(StringArray::from(values));
        let (one, two) = (row_texts(&array, 1).unwrap(), row_texts(&array, 2).unwrap());
        assert_eq!(
            (&one.text, &one.starts, &one.ends),
            (&two.text, &two.starts, &two.ends)
        );
        assert_eq!(one.rows, two.rows);
        assert_eq!(one.rows.len(), 1000 - 143);
        let last = one.rows.len() - 1;
        let text = &one.text[one.starts[last] as usize..one.ends[last] as usize];
        assert_eq!(text, b"\"row 999\"");
    }

    #[test]
    fn memory_that_cannot_be_had_is_out_of_memory_not_an_abort() {
        let mut out = b"[".to_vec();
        assert_eq!(room(&mut out, usize::MAX / 2), Err(OutOfMemory));
        assert_eq!(put(&mut out, b"]"), Ok(()));
        assert_eq!(out, b"[]");
    }

    #[test]
    fn unsupported_types_decline_before_any_row() {
        let array: ArrayRef = Arc::new(arrow_array::BinaryArray::from(vec![b"x".as_ref()]));
        assert_eq!(row_texts(&array, 1).unwrap_err(), Declined);
    }
}
