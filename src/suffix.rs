//! The repeated-suffix check in linear time, reading only what it must.
//!
//! A thread of `n` messages ends in `r` copies of its last `p` messages exactly when, read
//! backwards as a sequence `s`, it has period `p` over its first `r·p` items: when the
//! Z-function value `z[p]` (the longest common prefix of `s` and `s[p..]`) is at least
//! `(r − 1)·p`. The Z-function of a prefix is computed in O(items read), so every period of
//! the allowed range is decided in one linear pass, whatever the thread's shape. The same
//! `z[p]` also counts the copies: `1 + z[p] / p`.
//!
//! Two passes. The first compares cheap *screens* (type, text and whether meta is present,
//! hashed from the strings' storage): equal messages always have equal screens, so a period
//! the screens reject is rejected. Only when some period survives does the second pass compare
//! exact ids (canonical bytes of type, text and meta, interned per thread): equal ids mean
//! equal messages, so its answer is the reference's, and no hash collision can change it.

use ahash::AHashMap as HashMap;

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyString;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::columns::field;
use crate::fingerprint;
use crate::objects;

/// The resolved suffix options (see `vthread._options.CycleOptions`).
pub struct SuffixOptions {
    pub min_repetitions: usize,
    pub min_pattern_length: usize,
    /// `None`: no cap but the thread's own length.
    pub max_pattern_length: Option<usize>,
}

impl SuffixOptions {
    /// Periods worth trying on `length` messages: `[low, high]`, empty when `low > high`.
    pub fn pattern_range(&self, length: usize) -> (usize, usize) {
        let fit = length / self.min_repetitions;
        let high = self.max_pattern_length.map_or(fit, |cap| cap.min(fit));
        (self.min_pattern_length, high)
    }
}

/// Mask applied to screens; tests narrow it (through `_core._set_screen_bits`) to force
/// screen collisions everywhere and show they change no answer.
static SCREEN_MASK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// Keep only the low `bits` bits of every screen (64: the normal state).
pub fn set_screen_bits(bits: u32) {
    let mask = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    SCREEN_MASK.store(mask, std::sync::atomic::Ordering::Relaxed);
}

const SEED_LATIN1: u64 = 1;
const SEED_UTF16: u64 = 2;
const SEED_OTHER: u64 = 3;

/// A hash of a string's content that is equal for strings JavaScript calls equal: Latin-1
/// storage is hashed as it is, wider storage over its UTF-16 code units (so a surrogate pair
/// written as two code points hashes as its astral character). Other values hash their
/// canonical encoding.
fn screen_of(value: Option<&Bound<'_, PyAny>>, scratch: &mut Vec<u8>) -> PyResult<u64> {
    let Some(value) = value else {
        return Ok(xxh3_64_with_seed(b"null", SEED_OTHER));
    };
    let Ok(text) = value.cast::<PyString>() else {
        scratch.clear();
        objects::push_canonical(scratch, value)?;
        return Ok(xxh3_64_with_seed(scratch, SEED_OTHER));
    };
    let pointer = text.as_ptr();
    // SAFETY: `pointer` is a live str (checked by the cast) and the GIL is held; KIND, DATA
    // and GET_LENGTH describe its immutable storage of GET_LENGTH code points.
    unsafe {
        let length = ffi::PyUnicode_GET_LENGTH(pointer) as usize;
        let data = ffi::PyUnicode_DATA(pointer);
        match ffi::PyUnicode_KIND(pointer) {
            ffi::PyUnicode_1BYTE_KIND => Ok(xxh3_64_with_seed(
                std::slice::from_raw_parts(data as *const u8, length),
                SEED_LATIN1,
            )),
            ffi::PyUnicode_2BYTE_KIND => Ok(xxh3_64_with_seed(
                std::slice::from_raw_parts(data as *const u8, 2 * length),
                SEED_UTF16,
            )),
            _ => {
                // Astral code points as their two UTF-16 units, in the same (native) byte
                // order as 2-byte storage, so both hash alike.
                let points = std::slice::from_raw_parts(data as *const u32, length);
                scratch.clear();
                for &point in points {
                    if point >= 0x1_0000 {
                        let offset = point - 0x1_0000;
                        scratch
                            .extend_from_slice(&((0xD800 | (offset >> 10)) as u16).to_ne_bytes());
                        scratch
                            .extend_from_slice(&((0xDC00 | (offset & 0x3FF)) as u16).to_ne_bytes());
                    } else {
                        scratch.extend_from_slice(&(point as u16).to_ne_bytes());
                    }
                }
                Ok(xxh3_64_with_seed(scratch, SEED_UTF16))
            }
        }
    }
}

/// The screen of a message: its type and text hashed from storage, and whether it has meta.
fn screen(message: &Bound<'_, PyAny>, scratch: &mut Vec<u8>) -> PyResult<u64> {
    let py = message.py();
    let kind = screen_of(field(message, intern!(py, "type"))?.as_ref(), scratch)?;
    let text = screen_of(field(message, intern!(py, "text"))?.as_ref(), scratch)?;
    // Presence, not value: `field` is Some for a meta that is None.
    let has_meta = field(message, intern!(py, "meta"))?.is_some();
    let mixed =
        kind.rotate_left(21).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ text ^ u64::from(has_meta);
    Ok(mixed & SCREEN_MASK.load(std::sync::atomic::Ordering::Relaxed))
}

/// The canonical bytes of the message's (type, text, meta-or-absent), as
/// `vthread.message_fingerprint` hashes them.
fn exact_key(message: &Bound<'_, PyAny>, key: &mut Vec<u8>) -> PyResult<()> {
    let py = message.py();
    let none = || py.None().into_bound(py);
    let mut kind = Vec::new();
    objects::push_canonical(
        &mut kind,
        &field(message, intern!(py, "type"))?.unwrap_or_else(none),
    )?;
    let mut text = Vec::new();
    objects::push_canonical(
        &mut text,
        &field(message, intern!(py, "text"))?.unwrap_or_else(none),
    )?;
    let meta = match field(message, intern!(py, "meta"))? {
        Some(value) => {
            let mut meta = Vec::new();
            objects::push_canonical(&mut meta, &value)?;
            Some(meta)
        }
        None => None,
    };
    key.clear();
    fingerprint::message_key(key, &kind, &text, meta.as_deref());
    Ok(())
}

/// Reads message keys for the suffix check, with buffers reused across threads.
#[derive(Default)]
pub struct KeyReader {
    screens: Vec<Option<u64>>,
    exact: Vec<Option<u64>>,
    ids: HashMap<Vec<u8>, u64>,
    scratch: Vec<u8>,
    z: Vec<usize>,
}

impl KeyReader {
    /// `(period, copies)` of the shortest repeating suffix, `(0, 0)` when none.
    pub fn repeated_suffix(
        &mut self,
        items: &[Bound<'_, PyAny>],
        options: &SuffixOptions,
    ) -> PyResult<(usize, usize)> {
        let length = items.len();
        let reps = options.min_repetitions;
        if length < options.min_pattern_length.saturating_mul(reps) {
            return Ok((0, 0));
        }
        let (low, high) = options.pattern_range(length);
        if low > high {
            return Ok((0, 0));
        }
        let Self {
            screens,
            exact,
            ids,
            scratch,
            z,
        } = self;
        screens.clear();
        screens.resize(length, None);
        z_function(z, length, high, |back| -> PyResult<u64> {
            if let Some(known) = screens[back] {
                return Ok(known);
            }
            let value = screen(&items[length - 1 - back], scratch)?;
            screens[back] = Some(value);
            Ok(value)
        })?;
        let survivors: Vec<usize> = (low..=high).filter(|&p| z[p] >= (reps - 1) * p).collect();
        if survivors.is_empty() {
            return Ok((0, 0));
        }
        exact.clear();
        exact.resize(length, None);
        ids.clear();
        let mut exact_at = |back: usize| -> PyResult<u64> {
            if let Some(known) = exact[back] {
                return Ok(known);
            }
            exact_key(&items[length - 1 - back], scratch)?;
            let next = ids.len() as u64;
            let id = *ids.entry(scratch.clone()).or_insert(next);
            exact[back] = Some(id);
            Ok(id)
        };
        // The surviving periods are checked one by one from the end, where a false one
        // usually fails at once; past a linear budget of comparisons, one exact Z pass
        // decides them all instead, so the worst case stays linear.
        let mut budget = 2 * length;
        'periods: for &p in &survivors {
            let needed = (reps - 1) * p;
            let mut matched = 0;
            while matched < needed {
                if budget == 0 {
                    break 'periods;
                }
                budget -= 1;
                if exact_at(matched)? != exact_at(matched + p)? {
                    continue 'periods;
                }
                matched += 1;
            }
            // Period p holds; count every copy the thread has, as far as they reach.
            while matched + p < length && exact_at(matched)? == exact_at(matched + p)? {
                matched += 1;
            }
            return Ok((p, 1 + matched / p));
        }
        if budget > 0 {
            return Ok((0, 0));
        }
        z_function(z, length, high, &mut exact_at)?;
        Ok((low..=high)
            .find(|&p| z[p] >= (reps - 1) * p)
            .map_or((0, 0), |p| (p, 1 + z[p] / p)))
    }
}

/// Fill `z[i]` for `i` in `1..=last`: the longest common prefix of a sequence of `length`
/// items and its suffix from `i`, items read through `at`. Reads O(length) items at most,
/// and only as far as the matches reach.
pub fn z_function<E>(
    z: &mut Vec<usize>,
    length: usize,
    last: usize,
    mut at: impl FnMut(usize) -> Result<u64, E>,
) -> Result<(), E> {
    z.clear();
    z.resize(last + 1, 0);
    let (mut left, mut right) = (0usize, 0usize);
    for i in 1..=last {
        let mut matched = if i < right {
            (right - i).min(z[i - left])
        } else {
            0
        };
        while i + matched < length && at(matched)? == at(i + matched)? {
            matched += 1;
        }
        z[i] = matched;
        if i + matched > right {
            left = i;
            right = i + matched;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::z_function;

    fn z_of(sequence: &[u64]) -> Vec<usize> {
        let mut z = Vec::new();
        z_function::<()>(&mut z, sequence.len(), sequence.len() - 1, |i| {
            Ok(sequence[i])
        })
        .unwrap();
        z
    }

    #[test]
    fn z_function_measures_periods() {
        assert_eq!(z_of(&[1, 2, 1, 2, 1, 2, 3]), vec![0, 0, 4, 0, 2, 0, 0]);
        assert_eq!(z_of(&[7, 7, 7, 7]), vec![0, 3, 2, 1]);
    }

    #[test]
    fn z_function_matches_the_quadratic_definition() {
        let mut state = 12345u64;
        for _ in 0..200 {
            let length = 1 + (state % 40) as usize;
            let sequence: Vec<u64> = (0..length)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (state >> 62) % 3
                })
                .collect();
            let z = z_of(&sequence);
            for (i, &value) in z.iter().enumerate().skip(1) {
                let naive = (0..length - i)
                    .take_while(|&k| sequence[k] == sequence[i + k])
                    .count();
                assert_eq!(value, naive, "z[{i}] of {sequence:?}");
            }
        }
    }

    #[test]
    fn z_function_reads_only_as_far_as_matches_reach() {
        let sequence = [1u64, 2, 3, 4, 5, 6, 7, 8, 9, 10];
        let mut furthest = 0;
        let mut z = Vec::new();
        z_function::<()>(&mut z, sequence.len(), 4, |i| {
            furthest = furthest.max(i);
            Ok(sequence[i])
        })
        .unwrap();
        assert_eq!(furthest, 4);
    }
}
