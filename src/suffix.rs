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
//! messages exactly: the first time two messages meet, by walking them at once where their
//! values are plain JSON forms (`Node::plainly_equal`, no encoding; each message is walked once
//! at most); otherwise by their canonical bytes (type, text and meta), each message's read once
//! and kept with its 64-bit fingerprint, two messages equal when both their fingerprints and
//! their bytes are. So its answer is the reference's, and no hash collision can change it; and
//! no table of distinct messages is built (on a million distinct messages such a table
//! outgrew the cache and made the pass grow faster than the thread: `docs/growth.md`).

use pyo3::prelude::*;

use crate::arena::key_at;
use crate::fingerprint;
use crate::node::{absent_screen, message_fields, plainly_equal_if_present, Key, Node};

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

/// A screen with the test mask applied.
pub fn masked(screen: u64) -> u64 {
    screen & SCREEN_MASK.load(std::sync::atomic::Ordering::Relaxed)
}

/// The screen of a message: the screens of its type, text and meta (or meta's absence).
fn screen<N: Node>(message: &N, scratch: &mut Vec<u8>) -> PyResult<u64> {
    let [kind, text, meta] = message_fields(message)?;
    let kind = match kind {
        Some(kind) => kind.screen(scratch)?,
        None => absent_screen(), // an absent type is null, as the reference reads it
    };
    let text = match text {
        Some(text) => text.screen(scratch)?,
        None => absent_screen(),
    };
    let has_meta = meta.is_some();
    let mixed =
        kind.rotate_left(21).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ text ^ u64::from(has_meta);
    Ok(masked(mixed))
}

/// Append the canonical bytes of the message's (type, text, meta-or-absent) to `out`, as
/// `vthread.message_fingerprint` joins and hashes them: each part's canonical encoding
/// (`null` for an absent type or text, `fingerprint::ABSENT_META` for an absent meta), the
/// parts separated by `fingerprint::PART_SEPARATOR`.
pub fn push_exact_key<N: Node>(message: &N, out: &mut Vec<u8>) -> PyResult<()> {
    let [kind, text, meta] = message_fields(message)?;
    match kind {
        Some(value) => value.push_canonical(out)?,
        None => out.extend_from_slice(b"null"),
    }
    out.push(fingerprint::PART_SEPARATOR);
    match text {
        Some(value) => value.push_canonical(out)?,
        None => out.extend_from_slice(b"null"),
    }
    out.push(fingerprint::PART_SEPARATOR);
    match meta {
        Some(value) => value.push_canonical(out)?,
        None => out.extend_from_slice(fingerprint::ABSENT_META),
    }
    Ok(())
}

/// Whether two messages' exact keys (`push_exact_key`) are equal, told without encoding them
/// where both messages and their values are plain (`Node::plainly_equal`): each part is
/// encoded on its own, so the keys are equal when every part is, and apart when one part is
/// (an absent meta is a value of its own; an absent type or text is `null`, which a present
/// one may be, left to the encodings). None leaves it to the encodings.
fn plainly_same_message<N: Node>(a: &N, b: &N) -> PyResult<Option<bool>> {
    if !a.reads_plainly() || !b.reads_plainly() {
        return Ok(None);
    }
    let (a, b) = (message_fields(a)?, message_fields(b)?);
    for ((left, right), key) in a.iter().zip(&b).zip([Key::Type, Key::Text, Key::Meta]) {
        let same = plainly_equal_if_present(left.as_ref(), right.as_ref(), key == Key::Meta);
        if same != Some(true) {
            return Ok(same);
        }
    }
    Ok(Some(true))
}

/// Not read yet (a `slot`).
const UNREAD: usize = usize::MAX;

/// The exact keys of the messages the second pass reads, each read once: its canonical bytes
/// (appended to one buffer, key `k` ending at `ends[k]`) and their fingerprint. A key found
/// equal to an earlier one as soon as it is read is let go of (its message takes the earlier
/// number). Memory: the keys kept plus 16 bytes each and 8 a message; no per-key allocation,
/// no hash table.
#[derive(Default)]
struct ExactKeys {
    /// Per position (counted from the thread's end): the key's number, or `UNREAD`.
    slot: Vec<usize>,
    /// Per position: whether the message has been compared by walking it once already (a
    /// second comparison reads its key, so that no message is walked again and again: the
    /// newest is compared with every candidate period's).
    walked: Vec<bool>,
    prints: Vec<u64>,
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl ExactKeys {
    fn heap_bytes(&self) -> usize {
        (self.slot.capacity() + self.ends.capacity()) * size_of::<usize>()
            + self.walked.capacity()
            + self.prints.capacity() * size_of::<u64>()
            + self.bytes.capacity()
    }

    fn clear(&mut self, length: usize) {
        self.slot.clear();
        self.slot.resize(length, UNREAD);
        self.walked.clear();
        self.walked.resize(length, false);
        self.prints.clear();
        self.bytes.clear();
        self.ends.clear();
    }

    /// The key number of the message `back` places from the end of `items`.
    fn read<N: Node>(&mut self, items: &[N], back: usize) -> PyResult<usize> {
        let known = self.slot[back];
        if known != UNREAD {
            return Ok(known);
        }
        let start = self.bytes.len();
        if let Err(error) = push_exact_key(&items[items.len() - 1 - back], &mut self.bytes) {
            self.bytes.truncate(start); // no part of a key left for the next one to absorb
            return Err(error);
        }
        // Masked as screens are: tests narrowing the mask make every fingerprint collide,
        // and the bytes alone then decide.
        self.prints
            .push(masked(fingerprint::of_canonical(&self.bytes[start..])));
        self.ends.push(self.bytes.len());
        let key = self.ends.len() - 1;
        self.slot[back] = key;
        Ok(key)
    }

    fn key(&self, key: usize) -> &[u8] {
        key_at(&self.bytes, &self.ends, key)
    }

    /// Whether the messages `a` and `b` places from the end are equal: told by walking them
    /// when neither has been read or walked before and their values are plain, else their
    /// fingerprints match and so do their bytes (a fingerprint collision costs one
    /// comparison).
    fn equal<N: Node>(&mut self, items: &[N], a: usize, b: usize) -> PyResult<bool> {
        let last = items.len() - 1;
        if !self.walked[a] && !self.walked[b] && self.slot[a] == UNREAD && self.slot[b] == UNREAD {
            // Neither read nor walked yet: told by walking the two messages where that is
            // plain, with no encoding (unequal ones stop at their first difference). Each
            // message is walked once at most, so the walks cost the messages' size once.
            self.walked[a] = true;
            self.walked[b] = true;
            if let Some(same) = plainly_same_message(&items[last - a], &items[last - b])? {
                return Ok(same);
            }
        }
        let (key_a, key_b) = (self.read(items, a)?, self.read(items, b)?);
        if key_a == key_b {
            return Ok(true);
        }
        if self.prints[key_a] != self.prints[key_b] || self.key(key_a) != self.key(key_b) {
            return Ok(false);
        }
        // Equal: the later key, when it is the one just read, is let go of and its message
        // takes the earlier's number, so that a thread repeating itself keeps one copy of each
        // distinct message it reads (a loop of 50 KB messages read whole kept every copy).
        let (earlier, later, later_back) = if key_a < key_b {
            (key_a, key_b, b)
        } else {
            (key_b, key_a, a)
        };
        if later + 1 == self.ends.len() {
            self.bytes
                .truncate(self.bytes.len() - self.key(later).len());
            self.ends.pop();
            self.prints.pop();
            self.slot[later_back] = earlier;
        }
        Ok(true)
    }
}

/// Reads message keys for the suffix check, with buffers reused across threads.
#[derive(Default)]
pub struct KeyReader {
    screens: Vec<Option<u64>>,
    exact: ExactKeys,
    scratch: Vec<u8>,
    z: Vec<usize>,
}

impl KeyReader {
    /// The heap memory the reader's buffers hold (kept from one thread to the next).
    pub fn heap_bytes(&self) -> usize {
        self.screens.capacity() * size_of::<Option<u64>>()
            + self.exact.heap_bytes()
            + self.scratch.capacity()
            + self.z.capacity() * size_of::<usize>()
    }

    /// `(period, copies)` of the shortest repeating suffix, `(0, 0)` when none.
    pub fn repeated_suffix<N: Node>(
        &mut self,
        items: &[N],
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
        exact.clear(length);
        let mut same = |a: usize, b: usize| exact.equal(items, a, b);
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
                if !same(matched, matched + p)? {
                    continue 'periods;
                }
                matched += 1;
            }
            // Period p holds; count every copy the thread has, as far as they reach.
            while matched + p < length && same(matched, matched + p)? {
                matched += 1;
            }
            return Ok((p, 1 + matched / p));
        }
        if budget > 0 {
            return Ok((0, 0));
        }
        z_function_by(z, length, high, &mut same)?;
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
    z_function_by(z, length, last, |a, b| Ok(at(a)? == at(b)?))
}

/// [`z_function`] with items compared through `same(a, b)`, whether items `a` and `b` are
/// equal.
pub fn z_function_by<E>(
    z: &mut Vec<usize>,
    length: usize,
    last: usize,
    mut same: impl FnMut(usize, usize) -> Result<bool, E>,
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
        while i + matched < length && same(matched, i + matched)? {
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
