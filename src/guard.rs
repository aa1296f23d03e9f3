//! The repetition guard's state machine (docs/guard.md states its rules), with no Python
//! in it.
//!
//! A stream of code points is split into words on JavaScript's whitespace; each word is
//! normalised (`unicode::push_word_normal`, an ASCII fast path here) and, when something is
//! left, enters the window with the newlines seen before it.
//!
//! Hashed counts, exact trips
//!     Each kept word is a 64-bit hash of its normal form; the window is a ring of
//!     `window + 1` slots (hash, normal form, spelling, newlines before it, the key of the
//!     n-gram ending at it). Word counts and n-gram counts live in tables keyed by those
//!     hashes, n-gram keys rolled as a polynomial of the word hashes, and the running
//!     distinct / hapax / line-leading / newline totals make every test O(1) per word.
//!     A collision merges two words or two n-grams: it can only raise an n-gram's count and
//!     lower the distinct, hapax and line-leading counts, and each of those only makes a word
//!     more likely to pass (the enumeration exemption, which removes trips, needs more hapax
//!     or leading words). So every real trip passes on hashes; a word that passes is then
//!     confirmed on the real words of the window (exact count, ratios and exemption,
//!     O(window * ngram), once per trip in practice), and a collision's false pass is
//!     dropped. A collision can never trip the guard nor name a wrong phrase.
//!
//! Memory: O(window) slots, each holding its word (a reused slot lets go of a buffer far
//! larger than its new word, so memory follows the words in the window now, not the
//! largest ones ever seen); the partial word waits for the whitespace
//! that completes it, up to `PIECE` code points; past that it is folded into a bounded
//! `LongWord` (see there), so an endless word costs constant memory.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use xxhash_rust::xxh3::{xxh3_128, xxh3_64_with_seed};

use crate::unicode;

mod state;
pub use state::{unfinished_character, StateReader, StateWriter};

/// The enumeration exemption (docs/guard.md): applies below this ratio, from this many newlines,
/// with this hapax share or this many distinct line-leading words.
const EXEMPT_BELOW_RATIO: f64 = 0.5;
const EXEMPT_NEWLINES: u64 = 2;
const EXEMPT_HAPAX: f64 = 0.1;
const EXEMPT_LEADING: usize = 3;
/// Odd multiplier of the rolling n-gram key.
const NGRAM_MULTIPLIER: u64 = 0xC2B2_AE3D_27D4_EB4F;
/// A partial word longer than this many code points is folded into a `LongWord` piece by
/// piece, so a word without end never holds more than this.
pub const PIECE: usize = 1 << 16;
/// Characters of a long word's spelling (and of a long normal form) kept at each end for the
/// reason's text.
pub const SHOWN: usize = 1024;
/// A normal form longer than this many bytes is compared by its length and a 128-bit hash.
pub const NORMAL_KEPT: usize = 1 << 18;
/// A reused slot's buffer keeps up to this many bytes, or four times its word, whichever
/// is more (see `reuse`).
const RELEASE_ABOVE: usize = 4096;
/// Between the two ends of a long word in a reason.
const ELISION: &str = "\u{2026}";

/// Resolved options (Python's `GuardOptions`).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub ngram: usize,
    pub window: usize,
    pub max_repeats: u64,
    pub max_unique_ratio: f64,
    pub min_chars: u64,
}

/// Why the guard tripped: the reference's reason, as UTF-8 (`phrase`) and generalised UTF-8
/// that may hold lone surrogates (`text`, decoded by Python with `surrogatepass`).
#[derive(Clone, Debug, PartialEq)]
pub struct Reason {
    pub phrase: Vec<u8>,
    pub count: u64,
    pub text: Vec<u8>,
    pub unique_ratio: f64,
    pub hapax_ratio: f64,
}

/// One code unit of a Python `str`'s storage (PEP 393: 1, 2 or 4 bytes per code point).
pub trait Unit: Copy + Send + Sync {
    fn code(self) -> u32;
    fn is_space(self) -> bool;
    /// The slice as bytes when every code point in it is ASCII (only 1-byte storage can
    /// answer without a copy).
    fn ascii(_text: &[Self]) -> Option<&[u8]> {
        None
    }
    /// The index of the first whitespace at or after `from`, or `text.len()`.
    #[inline]
    fn next_space(text: &[Self], from: usize) -> usize {
        text[from..]
            .iter()
            .position(|c| c.is_space())
            .map_or(text.len(), |at| from + at)
    }
}

/// JavaScript whitespace among Latin-1 code points.
const LATIN1_SPACE: [bool; 256] = {
    let mut table = [false; 256];
    let mut c = 9;
    while c <= 13 {
        table[c] = true;
        c += 1;
    }
    table[32] = true;
    table[0xA0] = true;
    table
};

impl Unit for u8 {
    #[inline]
    fn code(self) -> u32 {
        u32::from(self)
    }
    #[inline]
    fn ascii(text: &[u8]) -> Option<&[u8]> {
        text.is_ascii().then_some(text)
    }
    /// Eight bytes at a time: a byte below 33 or equal to 0xA0 is a candidate (the lowest
    /// candidate the bit tricks report is exact), checked against the table.
    #[inline]
    fn next_space(text: &[u8], from: usize) -> usize {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let mut at = from;
        while at + 8 <= text.len() {
            let block = u64::from_le_bytes(text[at..at + 8].try_into().expect("8 bytes"));
            let below_33 = block.wrapping_sub(33 * ONES) & !block & HIGHS;
            let nbsp = block ^ (0xA0 * ONES);
            let is_nbsp = nbsp.wrapping_sub(ONES) & !nbsp & HIGHS;
            let candidates = below_33 | is_nbsp;
            if candidates == 0 {
                at += 8;
                continue;
            }
            let first = at + (candidates.trailing_zeros() / 8) as usize;
            if LATIN1_SPACE[usize::from(text[first])] {
                return first;
            }
            at = first + 1;
        }
        while at < text.len() {
            if LATIN1_SPACE[usize::from(text[at])] {
                return at;
            }
            at += 1;
        }
        text.len()
    }
    #[inline]
    fn is_space(self) -> bool {
        LATIN1_SPACE[usize::from(self)]
    }
}

impl Unit for u16 {
    #[inline]
    fn code(self) -> u32 {
        u32::from(self)
    }
    #[inline]
    fn is_space(self) -> bool {
        unicode::is_js_whitespace(u32::from(self))
    }
}

impl Unit for u32 {
    #[inline]
    fn code(self) -> u32 {
        self
    }
    #[inline]
    fn is_space(self) -> bool {
        unicode::is_js_whitespace(self)
    }
}

/// UTF-16 length of `text` (astral code points count two).
pub fn utf16_len<T: Unit>(text: &[T]) -> u64 {
    let astral = if std::mem::size_of::<T>() == 4 {
        text.iter().filter(|c| c.code() > 0xFFFF).count()
    } else {
        0
    };
    (text.len() + astral) as u64
}

/// Hashes that are already hashes: the tables use them as they are (the guard's, and the
/// arena's hash -> first id table, whose keys are keyed hashes).
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// Exact counts of the window's words: (occurrences, ever after a newline).
type WordFrequency<'a> = HashMap<(&'a [u8], Option<(u64, u128)>), (u32, bool), ahash::RandomState>;

type HashTable<V> = HashMap<u64, V, BuildHasherDefault<PassThrough>>;

/// A word in the window.
#[derive(Clone, Default)]
struct Slot {
    hash: u64,
    /// The normal form (UTF-8); for a `long` one, its two ends around an ellipsis.
    normal: Vec<u8>,
    /// The spelling (generalised UTF-8), shortened the same way for a long word; empty
    /// when it is the normal form itself (most words: no copy).
    spelling: Vec<u8>,
    spelling_is_normal: bool,
    /// Index of the word's entry in `Window::entries`.
    entry: u32,
    /// (bytes, 128-bit hash) of a normal form longer than `NORMAL_KEPT`.
    long: Option<(u64, u128)>,
    newlines: u64,
    /// Key of the n-gram that ends at this word (when one was counted).
    key: u64,
}

/// Empty `buffer` for a new word of about `need` bytes, releasing its memory when it is far
/// larger than that (it held a long word): a reused slot keeps what the window holds now,
/// not the largest word it ever held.
#[inline]
fn reuse(buffer: &mut Vec<u8>, need: usize) {
    if buffer.capacity() > RELEASE_ABOVE && buffer.capacity() / 4 > need {
        // A new buffer, not `shrink_to`: glibc shrinks a block in place, and the hole it
        // leaves is just too small for the next long word, so each long word took fresh
        // memory as before (a review's measure: +127 MB for 1,500 words of "б").
        *buffer = Vec::new();
    } else {
        buffer.clear();
    }
}

impl Slot {
    fn same_word(&self, other: &Slot) -> bool {
        self.normal == other.normal && self.long == other.long
    }
}

/// The last `capacity` words; slots keep their buffers when reused, up to a few times what
/// the new word needs (see `reuse`).
#[derive(Clone)]
struct Ring {
    slots: Vec<Slot>,
    head: usize,
    len: usize,
    capacity: usize,
}

impl Ring {
    fn new(capacity: usize) -> Self {
        Ring {
            slots: Vec::new(),
            head: 0,
            len: 0,
            capacity,
        }
    }

    #[inline]
    fn index(&self, i: usize) -> usize {
        let at = self.head + i;
        if at >= self.capacity {
            at - self.capacity
        } else {
            at
        }
    }

    #[inline]
    fn get(&self, i: usize) -> &Slot {
        &self.slots[self.index(i)]
    }

    /// The slot the next word will take, not yet part of the ring (see `commit`).
    fn vacant(&mut self) -> &mut Slot {
        debug_assert!(self.len < self.capacity);
        let at = self.index(self.len);
        if at == self.slots.len() {
            // Only before the first eviction (head == 0): the ring grows as words come.
            self.slots.push(Slot::default());
        }
        &mut self.slots[at]
    }

    /// The vacant slot, filled, becomes the newest word.
    fn commit(&mut self) {
        self.len += 1;
    }

    /// The slot of a new newest word (the caller fills every field).
    fn push(&mut self) -> &mut Slot {
        self.vacant();
        self.commit();
        let at = self.index(self.len - 1);
        &mut self.slots[at]
    }

    fn pop_front(&mut self) {
        self.head = self.index(1);
        self.len -= 1;
    }
}

#[derive(Clone, Copy, Default)]
struct WordCount {
    hash: u64,
    count: u32,
    leading: u32,
}

/// The window and its counts.
#[derive(Clone)]
struct Window {
    options: Options,
    ring: Ring,
    /// Word hash -> index in `entries`; the window's distinct (hashed) words.
    words: HashTable<u32>,
    /// Counts of the window's words; a slot names its entry, so that the word leaving
    /// needs no lookup.
    entries: Vec<WordCount>,
    free_entries: Vec<u32>,
    phrases: HashTable<u32>,
    hapax: usize,
    leading: usize,
    newlines: u64,
    roll: u64,
    /// Whether n-grams are being counted: only while the distinct words are few enough
    /// that a word could pass the ratio test (see `enter_counting`).
    counting: bool,
    enter_counting: f64,
    leave_counting: f64,
    /// NGRAM_MULTIPLIER ** ngram: the weight of the word leaving the rolled key.
    leaving_weight: u64,
    mask: u64,
}

impl Window {
    fn new(options: Options) -> Self {
        let leaving_weight = wrapping_power(NGRAM_MULTIPLIER, options.ngram);
        // A word can pass the ratio test only with distinct <= ratio * size <= ratio *
        // (window + 1). Counting starts a margin above that (so rounding cannot matter)
        // and stops at twice the margin: one word moves the distinct count by at most one,
        // so each O(window) rebuild of the n-gram counts is paid for by `margin` words.
        let capacity = (options.window + 1) as f64;
        let margin = ((options.window + 1) / 16).max(2) as f64;
        let bound = options.max_unique_ratio * capacity;
        Window {
            counting: false,
            enter_counting: bound + margin,
            leave_counting: bound + 2.0 * margin,
            options,
            ring: Ring::new(options.window + 1),
            words: HashTable::default(),
            entries: Vec::new(),
            free_entries: Vec::new(),
            phrases: HashTable::default(),
            hapax: 0,
            leading: 0,
            newlines: 0,
            roll: 0,
            leaving_weight,
            mask: u64::MAX,
        }
    }

    /// Add a kept word (its slot already filled but for `key`); the reason when it trips.
    fn add(&mut self, enough: bool) -> Option<Reason> {
        let options = self.options;
        let size = self.ring.len;
        let newest = self.ring.get(size - 1);
        let (hash, newlines) = (newest.hash, newest.newlines);
        let entries = &mut self.entries;
        let free_entries = &mut self.free_entries;
        let index = *self.words.entry(hash).or_insert_with(|| {
            let fresh = WordCount {
                hash,
                count: 0,
                leading: 0,
            };
            match free_entries.pop() {
                Some(index) => {
                    entries[index as usize] = fresh;
                    index
                }
                None => {
                    entries.push(fresh);
                    (entries.len() - 1) as u32
                }
            }
        });
        let at = self.ring.index(size - 1);
        self.ring.slots[at].entry = index;
        let entry = &mut self.entries[index as usize];
        match entry.count {
            0 => self.hapax += 1,
            1 => self.hapax -= 1,
            _ => {}
        }
        entry.count += 1;
        if newlines > 0 {
            self.newlines += newlines;
            if entry.leading == 0 {
                self.leading += 1;
            }
            entry.leading += 1;
        }
        let mut roll = self.roll.wrapping_mul(NGRAM_MULTIPLIER).wrapping_add(hash);
        if size > options.ngram {
            let leaving = self.ring.get(size - 1 - options.ngram).hash;
            roll = roll.wrapping_sub(leaving.wrapping_mul(self.leaving_weight));
        }
        self.roll = roll;
        let key = roll & self.mask;
        self.ring.slots[at].key = key;
        let distinct = self.words.len() as f64;
        if !self.counting && distinct <= self.enter_counting {
            self.start_counting(size - 1);
        } else if self.counting && distinct > self.leave_counting {
            self.counting = false;
            self.phrases.clear();
        }
        if self.counting && size >= options.ngram {
            let count = self.phrases.entry(key).or_insert(0);
            *count += 1;
            let count = u64::from(*count);
            if count >= options.max_repeats && enough && self.may_trip(size) {
                if let Some(reason) = self.confirm() {
                    return Some(reason);
                }
            }
        }
        if size > options.window {
            self.evict();
        }
        None
    }

    /// Count the n-grams ending at ring positions `ngram - 1 .. upto`: those whose first
    /// word is still in the window. O(window).
    fn start_counting(&mut self, upto: usize) {
        self.counting = true;
        self.phrases.clear();
        for position in self.options.ngram.saturating_sub(1)..upto {
            *self.phrases.entry(self.ring.get(position).key).or_insert(0) += 1;
        }
    }

    /// The ratio test and the exemption on the hashed counts (a superset of real trips).
    fn may_trip(&self, size: usize) -> bool {
        let ratio = self.options.max_unique_ratio;
        if self.words.len() as f64 / size as f64 > ratio {
            return false;
        }
        !(ratio < EXEMPT_BELOW_RATIO
            && self.newlines >= EXEMPT_NEWLINES
            && (self.hapax as f64 / size as f64 >= EXEMPT_HAPAX || self.leading >= EXEMPT_LEADING))
    }

    /// The oldest word leaves, with the n-gram that starts at it.
    fn evict(&mut self) {
        if self.counting {
            let key = self.ring.get(self.options.ngram - 1).key;
            if let Some(count) = self.phrases.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    self.phrases.remove(&key);
                }
            }
        }
        let oldest = self.ring.get(0);
        let (index, newlines) = (oldest.entry, oldest.newlines);
        let mut gone = false;
        {
            let entry = &mut self.entries[index as usize];
            entry.count -= 1;
            match entry.count {
                0 => {
                    self.hapax -= 1;
                    gone = true;
                }
                1 => self.hapax += 1,
                _ => {}
            }
            if newlines > 0 {
                self.newlines -= newlines;
                entry.leading -= 1;
                if entry.leading == 0 {
                    self.leading -= 1;
                }
            }
        }
        if gone {
            self.words.remove(&self.entries[index as usize].hash);
            self.free_entries.push(index);
        }
        self.ring.pop_front();
    }

    /// Every test again on the real words of the window: the reason, or None when only a
    /// hash collision made the word pass.
    fn confirm(&self) -> Option<Reason> {
        let options = self.options;
        let ring = &self.ring;
        let size = ring.len;
        let ngram = options.ngram;
        let first = size - ngram;
        let key = ring.get(size - 1).key;
        let mut count = 0u64;
        for start in 0..=first {
            if ring.get(start + ngram - 1).key == key
                && (0..ngram).all(|k| ring.get(start + k).same_word(ring.get(first + k)))
            {
                count += 1;
            }
        }
        if count < options.max_repeats {
            return None;
        }
        let mut frequency: WordFrequency<'_> =
            HashMap::with_capacity_and_hasher(size, ahash::RandomState::new());
        let mut newlines = 0u64;
        for i in 0..size {
            let slot = ring.get(i);
            let entry = frequency
                .entry((slot.normal.as_slice(), slot.long))
                .or_insert((0, false));
            entry.0 += 1;
            if slot.newlines > 0 {
                entry.1 = true;
                newlines += slot.newlines;
            }
        }
        let unique_ratio = frequency.len() as f64 / size as f64;
        if unique_ratio > options.max_unique_ratio {
            return None;
        }
        let hapax = frequency.values().filter(|(c, _)| *c == 1).count();
        let hapax_ratio = hapax as f64 / size as f64;
        let leading = frequency.values().filter(|(_, l)| *l).count();
        if options.max_unique_ratio < EXEMPT_BELOW_RATIO
            && newlines >= EXEMPT_NEWLINES
            && (hapax_ratio >= EXEMPT_HAPAX || leading >= EXEMPT_LEADING)
        {
            return None;
        }
        let mut phrase = Vec::new();
        let mut text = Vec::new();
        for k in 0..ngram {
            let slot = ring.get(first + k);
            if k > 0 {
                phrase.push(b' ');
                text.push(b' ');
            }
            phrase.extend_from_slice(&slot.normal);
            text.extend_from_slice(if slot.spelling_is_normal {
                &slot.normal
            } else {
                &slot.spelling
            });
        }
        Some(Reason {
            phrase,
            count,
            text,
            unique_ratio,
            hapax_ratio,
        })
    }
}

/// Code points with each high + low surrogate pair made one, as UTF-16 reads them.
fn join_pairs<T: Unit>(word: &[T], out: &mut Vec<u32>) {
    out.clear();
    let mut i = 0;
    while i < word.len() {
        let c = word[i].code();
        if (0xD800..0xDC00).contains(&c) && i + 1 < word.len() {
            let low = word[i + 1].code();
            if (0xDC00..0xE000).contains(&low) {
                out.push(0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00));
                i += 2;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
}

/// Generalised UTF-8 of code points (a lone surrogate as its three bytes, as Python's
/// `surrogatepass` writes and reads it).
fn push_wtf8(codes: &[u32], out: &mut Vec<u8>) {
    for &c in codes {
        if c < 0x80 {
            out.push(c as u8);
        } else if c < 0x800 {
            out.extend_from_slice(&[0xC0 | (c >> 6) as u8, 0x80 | (c & 0x3F) as u8]);
        } else if c < 0x10000 {
            out.extend_from_slice(&[
                0xE0 | (c >> 12) as u8,
                0x80 | ((c >> 6) & 0x3F) as u8,
                0x80 | (c & 0x3F) as u8,
            ]);
        } else {
            out.extend_from_slice(&[
                0xF0 | (c >> 18) as u8,
                0x80 | ((c >> 12) & 0x3F) as u8,
                0x80 | ((c >> 6) & 0x3F) as u8,
                0x80 | (c & 0x3F) as u8,
            ]);
        }
    }
}

/// Normal form and spelling of one whole word (code points, pairs not yet joined).
fn word_forms<T: Unit>(
    word: &[T],
    joined: &mut Vec<u32>,
    normal: &mut Vec<u8>,
    spelling: &mut Vec<u8>,
) {
    normal.clear();
    spelling.clear();
    if let Some(bytes) = T::ascii(word) {
        spelling.extend_from_slice(bytes);
        normal.extend(
            bytes
                .iter()
                .filter(|b| b.is_ascii_alphanumeric())
                .map(u8::to_ascii_lowercase),
        );
        return;
    }
    if word.iter().all(|c| c.code() < 0x80) {
        for c in word {
            let byte = c.code() as u8;
            spelling.push(byte);
            if byte.is_ascii_alphanumeric() {
                normal.push(byte.to_ascii_lowercase());
            }
        }
        return;
    }
    join_pairs(word, joined);
    push_wtf8(joined, spelling);
    unicode::push_word_normal(joined, normal);
}

/// The first `chars` characters of generalised UTF-8 `bytes` (at a character boundary).
fn head_chars(bytes: &[u8], chars: usize) -> &[u8] {
    let mut seen = 0;
    for (at, &b) in bytes.iter().enumerate() {
        if b & 0xC0 != 0x80 {
            if seen == chars {
                return &bytes[..at];
            }
            seen += 1;
        }
    }
    bytes
}

/// The last `chars` characters of generalised UTF-8 `bytes`.
fn tail_chars(bytes: &[u8], chars: usize) -> &[u8] {
    let mut seen = 0;
    for at in (0..bytes.len()).rev() {
        if bytes[at] & 0xC0 != 0x80 {
            seen += 1;
            if seen == chars {
                return &bytes[at..];
            }
        }
    }
    bytes
}

/// Keep the first and the last `SHOWN` characters of a growing text.
#[derive(Clone, Default)]
struct Ends {
    head: Vec<u8>,
    head_full: bool,
    tail: Vec<u8>,
    elided: bool,
}

impl Ends {
    fn extend(&mut self, bytes: &[u8]) {
        if !self.head_full {
            self.head.extend_from_slice(bytes);
            let kept = head_chars(&self.head, SHOWN).len();
            if kept < self.head.len() {
                let rest = self.head.split_off(kept);
                self.head_full = true;
                self.tail = rest;
            }
        } else {
            self.tail.extend_from_slice(bytes);
        }
        if self.tail.len() > 8 * SHOWN {
            let keep = tail_chars(&self.tail, SHOWN).len();
            self.tail.drain(..self.tail.len() - keep);
            self.elided = true;
        }
    }

    fn finish(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.head);
        let tail = tail_chars(&self.tail, SHOWN);
        if self.elided || tail.len() < self.tail.len() {
            out.extend_from_slice(ELISION.as_bytes());
        }
        out.extend_from_slice(tail);
    }
}

/// Bytes of one block of a `ChainedDigest`.
const DIGEST_BLOCK: usize = 1 << 16;

/// The 128-bit digest of a growing byte string: XXH3-128 of each `DIGEST_BLOCK` bytes,
/// chained through the digest of the blocks before it. It depends on the bytes alone, not
/// on how `update` calls cut them; and its state is plain data (a streaming XXH3 keeps
/// its state private), so that a guard fed half a long word can be written out (`state`).
#[derive(Clone, Default)]
struct ChainedDigest {
    chained: u128,
    block: Vec<u8>,
}

impl ChainedDigest {
    fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let taken = (DIGEST_BLOCK - self.block.len()).min(bytes.len());
            self.block.extend_from_slice(&bytes[..taken]);
            bytes = &bytes[taken..];
            if self.block.len() == DIGEST_BLOCK {
                self.chained = self.digest128();
                self.block.clear();
            }
        }
    }

    /// The digest of the bytes so far.
    fn digest128(&self) -> u128 {
        let mut pair = [0u8; 32];
        pair[..16].copy_from_slice(&self.chained.to_le_bytes());
        pair[16..].copy_from_slice(&xxh3_128(&self.block).to_le_bytes());
        xxh3_128(&pair)
    }
}

/// A long word's normal form so far: kept whole up to `NORMAL_KEPT` bytes, else its
/// length, a 128-bit hash and its two ends.
#[derive(Clone, Default)]
struct NormalSoFar {
    kept: Vec<u8>,
    bytes: u64,
    hash: Option<ChainedDigest>,
    ends: Ends,
}

impl NormalSoFar {
    fn extend(&mut self, normal: &[u8]) {
        self.bytes += normal.len() as u64;
        match &mut self.hash {
            Some(hasher) => hasher.update(normal),
            None if self.kept.len() + normal.len() <= NORMAL_KEPT => {
                self.kept.extend_from_slice(normal);
                return;
            }
            None => {
                let mut hasher = ChainedDigest::default();
                hasher.update(&self.kept);
                hasher.update(normal);
                self.ends.extend(&self.kept);
                self.kept.clear();
                self.hash = Some(hasher);
            }
        }
        self.ends.extend(normal);
    }
}

/// A word longer than `PIECE` code points, folded in piece by piece: its normal form (see
/// `NormalSoFar`), its spelling as its two ends. Each piece is lower-cased in the context
/// of the pieces before it and after it, as the whole word would be: the one case mapping
/// that depends on neighbours, capital sigma's final form, looks back through
/// `cased_before` and forward through `final_sigma`.
#[derive(Clone, Default)]
struct LongWord {
    normal: NormalSoFar,
    /// While a capital sigma is open (a cased character before it, nothing but
    /// case-ignorable ones after it so far, however many pieces they fill): the normal
    /// form with that sigma final, `normal` having it non-final. Both grow until a piece
    /// decides, so memory stays twice the bounded summary, whatever the run's length.
    final_sigma: Option<Box<NormalSoFar>>,
    /// Whether the last code point so far that is not case-ignorable is cased.
    cased_before: bool,
    spelling: Ends,
}

impl LongWord {
    /// Fold in the word's next piece (`last`: the word ends with it).
    fn add_piece(
        &mut self,
        piece: &[u32],
        last: bool,
        joined: &mut Vec<u32>,
        scratch: &mut Vec<u8>,
    ) {
        // Pieces are never cut between the halves of a pair, so each joins on its own.
        let codes: &[u32] = if piece.iter().all(|&c| c < 0x80) {
            piece
        } else {
            join_pairs(piece, joined);
            joined
        };
        scratch.clear();
        push_wtf8(codes, scratch);
        self.spelling.extend(scratch);
        if self.final_sigma.is_some() {
            match unicode::first_cased(codes) {
                Some(true) => self.final_sigma = None,
                None if !last => {}
                _ => self.normal = *self.final_sigma.take().expect("checked"),
            }
        }
        scratch.clear();
        let context = unicode::SigmaContext {
            cased_before: self.cased_before,
            word_ends: last,
        };
        let open = unicode::push_piece_normal(codes, context, scratch);
        self.cased_before = unicode::cased_after(codes, self.cased_before);
        if let Some(at) = open {
            // The sigma is cased and not case-ignorable: it decided any sigma open before.
            debug_assert!(self.final_sigma.is_none());
            let mut final_form = self.normal.clone();
            let small = [scratch[at], scratch[at + 1]];
            scratch[at..at + 2].copy_from_slice(&unicode::FINAL_SIGMA_UTF8);
            final_form.extend(scratch);
            scratch[at..at + 2].copy_from_slice(&small);
            self.final_sigma = Some(Box::new(final_form));
        } else if let Some(final_form) = &mut self.final_sigma {
            final_form.extend(scratch);
        }
        self.normal.extend(scratch);
    }
}

/// How `min_chars` is counted: per push (the characters of every push so far, the current
/// one whole) or per character (a text fed one character at a time: those up to and
/// including the whitespace that completes the word).
#[derive(Clone, Copy, PartialEq)]
pub enum Feed {
    Pushes,
    Characters,
}

/// Where a push tripped the guard: the index in the push just past the tripping word.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TripAt {
    pub index: usize,
}

/// The guard: tokenizer state, the window, and the reason once tripped. A clone is a
/// guard of its own in the same state (a stream forked: each branch fed on its own).
#[derive(Clone)]
pub struct Guard {
    window: Window,
    total: u64,
    pending_newlines: u64,
    partial: Vec<u32>,
    long: Option<Box<LongWord>>,
    seed: u64,
    reason: Option<Reason>,
    // Reused buffers.
    joined: Vec<u32>,
    normal: Vec<u8>,
    spelling: Vec<u8>,
}

impl Guard {
    pub fn new(options: Options) -> Self {
        Guard {
            window: Window::new(options),
            total: 0,
            pending_newlines: 0,
            partial: Vec::new(),
            long: None,
            seed: random_seed(),
            reason: None,
            joined: Vec::new(),
            normal: Vec::new(),
            spelling: Vec::new(),
        }
    }

    /// Back to a fresh guard with the same options, keeping the buffers (bulk replay).
    pub fn reset(&mut self) {
        let window = &mut self.window;
        window.ring.head = 0;
        window.ring.len = 0;
        window.words.clear();
        window.entries.clear();
        window.free_entries.clear();
        window.phrases.clear();
        window.hapax = 0;
        window.leading = 0;
        window.newlines = 0;
        window.roll = 0;
        window.counting = false;
        self.total = 0;
        self.pending_newlines = 0;
        self.partial.clear();
        self.long = None;
        self.reason = None;
    }

    pub fn options(&self) -> Options {
        self.window.options
    }

    /// Whether nothing has been fed since the guard was made or reset: no code unit
    /// counted, no word in the window or under way, no trip.
    pub fn is_fresh(&self) -> bool {
        self.total == 0
            && self.window.ring.len == 0
            && self.partial.is_empty()
            && self.long.is_none()
            && self.pending_newlines == 0
            && self.reason.is_none()
    }

    pub fn reason(&self) -> Option<&Reason> {
        self.reason.as_ref()
    }

    pub fn tripped(&self) -> bool {
        self.reason.is_some()
    }

    /// Whether every bit of the hashes is kept (`set_hash_bits` not used).
    pub fn hashes_whole(&self) -> bool {
        self.window.mask == u64::MAX
    }

    /// Keep only the low `bits` bits of every word hash and n-gram key: a test hook that
    /// makes collisions common (answers must not change).
    pub fn set_hash_bits(&mut self, bits: u32) {
        self.window.mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
    }

    /// Feed one push; where in it the guard tripped, if it did now. Pushing into a tripped
    /// guard changes nothing (the caller answers True).
    pub fn push<T: Unit>(&mut self, text: &[T], feed: Feed) -> Option<TripAt> {
        if self.reason.is_some() || text.is_empty() {
            return None;
        }
        if feed == Feed::Pushes {
            self.total = self.total.saturating_add(utf16_len(text));
        }
        self.feed(text, 0, 0, feed)
    }

    /// Where `text`, fed one character at a time to a fresh guard, trips it; computed on
    /// `text[warm..end]` only, with no trip before `start` (see `replay_segments`): the
    /// window at `start` is the same as after all of `text[..start]` once `warm` leaves
    /// more than `window` kept words before `start`.
    pub fn replay_segment<T: Unit>(&mut self, text: &[T], segment: Segment) -> Option<TripAt> {
        self.reset();
        self.total = segment.warm_units;
        self.feed(
            &text[..segment.end],
            segment.warm,
            segment.start,
            Feed::Characters,
        )
    }

    /// Split `text[begin..]` into words and feed them; words completed before `check_from`
    /// cannot trip (they only fill the window).
    fn feed<T: Unit>(
        &mut self,
        text: &[T],
        begin: usize,
        check_from: usize,
        feed: Feed,
    ) -> Option<TripAt> {
        let mut counted = (begin, self.total); // (index, UTF-16 units before it)
        let length = text.len();
        let mut i = begin;
        while i < length {
            let start = i;
            i = T::next_space(text, i);
            if i == length {
                self.extend_partial(&text[start..]);
                break;
            }
            if start < i || !self.partial.is_empty() || self.long.is_some() {
                let enough = i >= check_from
                    && match feed {
                        Feed::Pushes => self.total >= self.window.options.min_chars,
                        Feed::Characters => {
                            counted = advance_units(text, counted, i + 1);
                            counted.1 >= self.window.options.min_chars
                        }
                    };
                if self.complete_word(&text[start..i], enough) {
                    self.partial.clear();
                    self.long = None;
                    return Some(TripAt { index: i });
                }
            }
            while i < length && text[i].is_space() {
                if text[i].code() == u32::from(b'\n') {
                    self.pending_newlines += 1;
                }
                i += 1;
            }
        }
        if feed == Feed::Characters {
            self.total = advance_units(text, counted, length).1;
        }
        None
    }

    /// Append `text` to the partial word, folding each PIECE code points into the long word
    /// as soon as one more follows. The text is taken a piece at a time, so the partial
    /// word never holds more than PIECE + 1 code points and a cut moves at most two: one
    /// 40-million-character word cost 4 bytes a character, and its cuts, each moving the
    /// rest of the buffer, made it quadratic.
    fn extend_partial<T: Unit>(&mut self, mut text: &[T]) {
        loop {
            let taken = (PIECE + 1)
                .saturating_sub(self.partial.len())
                .min(text.len());
            self.partial.extend(text[..taken].iter().map(|c| c.code()));
            text = &text[taken..];
            if self.partial.len() <= PIECE {
                return; // the text is all taken
            }
            // Never cut between the halves of a pair.
            let cut = if (0xD800..0xDC00).contains(&self.partial[PIECE - 1]) {
                PIECE - 1
            } else {
                PIECE
            };
            let long = self.long.get_or_insert_with(Box::default);
            long.add_piece(
                &self.partial[..cut],
                false,
                &mut self.joined,
                &mut self.spelling,
            );
            self.partial.drain(..cut);
        }
    }

    /// The word made of the partial word and `rest`; true when it trips the guard.
    /// A whole ASCII word, normalised straight into the ring's vacant slot (the common
    /// case: no intermediate buffer, and no copy of a spelling equal to its normal form).
    fn ascii_word(&mut self, bytes: &[u8], enough: bool) -> bool {
        let window = &mut self.window;
        let mask = window.mask;
        let slot = window.ring.vacant();
        reuse(&mut slot.normal, bytes.len());
        let mut same = true;
        for &byte in bytes {
            if byte.is_ascii_alphanumeric() {
                let lower = byte.to_ascii_lowercase();
                same &= lower == byte;
                slot.normal.push(lower);
            } else {
                same = false;
            }
        }
        if slot.normal.is_empty() {
            return false;
        }
        slot.spelling_is_normal = same;
        reuse(&mut slot.spelling, if same { 0 } else { bytes.len() });
        if !same {
            slot.spelling.extend_from_slice(bytes);
        }
        slot.hash = word_hash(&slot.normal, self.seed) & mask;
        slot.long = None;
        slot.newlines = std::mem::take(&mut self.pending_newlines);
        slot.key = 0;
        window.ring.commit();
        match window.add(enough) {
            Some(reason) => {
                self.reason = Some(reason);
                true
            }
            None => false,
        }
    }

    fn complete_word<T: Unit>(&mut self, rest: &[T], enough: bool) -> bool {
        let mut long_key = None;
        if self.long.is_some() || self.partial.len() + rest.len() > PIECE {
            // However the word arrived (in one push, or begun in earlier ones and finished
            // here by a rest of any length), a word this long is always folded the same
            // way: a PIECE at a time from its start, so that the pieces (and a final capital
            // sigma decided within each) do not depend on the pushes, and the partial word
            // never holds more than PIECE + 1 code points. Its last piece is left in
            // `partial`.
            self.extend_partial(rest);
        }
        if self.long.is_some() {
            let mut long = self.long.take().expect("checked");
            let piece = std::mem::take(&mut self.partial);
            long.add_piece(&piece, true, &mut self.joined, &mut self.spelling);
            self.partial = piece;
            self.partial.clear();
            long.spelling.finish(&mut self.spelling);
            let normal = &long.normal;
            match &normal.hash {
                Some(hasher) => {
                    long_key = Some((normal.bytes, hasher.digest128()));
                    normal.ends.finish(&mut self.normal);
                }
                None => {
                    self.normal.clear();
                    self.normal.extend_from_slice(&normal.kept);
                }
            }
        } else if self.partial.is_empty() {
            if let Some(bytes) = T::ascii(rest) {
                return self.ascii_word(bytes, enough);
            }
            word_forms(rest, &mut self.joined, &mut self.normal, &mut self.spelling);
        } else {
            self.partial.extend(rest.iter().map(|c| c.code()));
            word_forms(
                &self.partial,
                &mut self.joined,
                &mut self.normal,
                &mut self.spelling,
            );
            self.partial.clear();
        }
        if self.normal.is_empty() {
            return false;
        }
        let hash = slot_hash(&self.normal, long_key, self.seed);
        let window = &mut self.window;
        let slot = window.ring.push();
        slot.hash = hash & window.mask;
        reuse(&mut slot.normal, self.normal.len());
        slot.normal.extend_from_slice(&self.normal);
        slot.spelling_is_normal = self.spelling == self.normal;
        let spelling = if slot.spelling_is_normal {
            0
        } else {
            self.spelling.len()
        };
        reuse(&mut slot.spelling, spelling);
        if !slot.spelling_is_normal {
            slot.spelling.extend_from_slice(&self.spelling);
        }
        slot.long = long_key;
        slot.newlines = std::mem::take(&mut self.pending_newlines);
        slot.key = 0;
        match window.add(enough) {
            Some(reason) => {
                self.reason = Some(reason);
                true
            }
            None => false,
        }
    }
}

/// A word's hash in the window (before the mask): its normal form's, with a long word's
/// (bytes, digest) folded in.
#[inline]
fn slot_hash(normal: &[u8], long: Option<(u64, u128)>, seed: u64) -> u64 {
    let mut hash = word_hash(normal, seed);
    if let Some((bytes, digest)) = long {
        hash ^= (digest as u64) ^ ((digest >> 64) as u64).rotate_left(17) ^ bytes;
    }
    hash
}

/// The 64-bit hash of a normal form: a multiply-fold of 8 bytes at a time for the short
/// words that are most of a text (faster than a call into XXH3 at these sizes), XXH3 for
/// longer ones. Quality matters only for speed: every trip is confirmed on real words.
#[inline(always)]
fn word_hash(normal: &[u8], seed: u64) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    if normal.len() > 24 {
        return xxh3_64_with_seed(normal, seed);
    }
    let mut hash = seed ^ (normal.len() as u64).wrapping_mul(K);
    let mut chunks = normal.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        hash = (hash ^ word).wrapping_mul(K).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // Byte by byte: a call to memcpy for at most 7 bytes would cost more.
        let last = rest
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &b)| acc | u64::from(b) << (8 * i));
        hash = (hash ^ last).wrapping_mul(K).rotate_left(29);
    }
    // Final avalanche (MurmurHash3's fmix64), so that the table's bucket bits are mixed.
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    hash ^ (hash >> 33)
}

/// A piece of a long text replayed on its own: words completed in `start..end` are
/// judged, after the words of `warm..start` have filled the window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment {
    pub warm: usize,
    pub start: usize,
    pub end: usize,
    /// UTF-16 units of `text[..warm]` (counted once for all segments, not per segment).
    pub warm_units: u64,
}

/// Whether a whole word keeps anything after normalisation: whether one of its code
/// points (pairs joined as `word_forms` joins them) does. Nothing is allocated.
fn is_kept<T: Unit>(word: &[T]) -> bool {
    if let Some(bytes) = T::ascii(word) {
        return bytes.iter().any(u8::is_ascii_alphanumeric);
    }
    let mut i = 0;
    while i < word.len() {
        let mut c = word[i].code();
        i += 1;
        if (0xD800..0xDC00).contains(&c) && i < word.len() {
            let low = word[i].code();
            if (0xDC00..0xE000).contains(&low) {
                c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
                i += 1;
            }
        }
        if unicode::keeps_anything(c) {
            return true;
        }
    }
    false
}

/// Where to start filling the window for a segment beginning at `start` (a whitespace
/// position): the start of the `words`-th kept word before it, when that is after
/// `limit` (the previous cut, a whitespace position or 0); None when fewer than `words`
/// kept words lie between `limit` and `start`. The walk never goes back past `limit`.
fn warm_start<T: Unit>(text: &[T], start: usize, words: usize, limit: usize) -> Option<usize> {
    let mut kept = 0;
    let mut i = start;
    loop {
        while i > limit && text[i - 1].is_space() {
            i -= 1;
        }
        let end = i;
        while i > limit && !text[i - 1].is_space() {
            i -= 1;
        }
        if i == end {
            return None;
        }
        if is_kept(&text[i..end]) {
            kept += 1;
            if kept >= words {
                return Some(i);
            }
        }
    }
}

/// `text` cut at whitespace into at most `parts` segments that replay independently (each
/// warms its window on the `window + 2` kept words before it). The first segment, in
/// order, that trips gives the text's trip: the window at every word is a function of the
/// words before it in the window alone, so a segment sees exactly what the whole replay
/// sees from its start on.
///
/// A part whose warm-up would reach back past the previous cut (few kept words: a text of
/// dashes, of emoji, of punctuation) is not a segment of its own: it joins the segment
/// before it, which replays the same characters anyway. So each segment's warm-up lies
/// within the part before it, the walks back to find it read each character at most once,
/// and the whole replay reads each character at most twice: O(text) whatever the text.
pub fn replay_segments<T: Unit>(text: &[T], parts: usize, window: usize) -> Vec<Segment> {
    let length = text.len();
    let mut starts = vec![0];
    for k in 1..parts.max(1) {
        let target = length / parts * k;
        let at = T::next_space(text, target.max(starts[starts.len() - 1] + 1).min(length));
        if at < length && at > starts[starts.len() - 1] {
            starts.push(at);
        }
    }
    let mut segments: Vec<Segment> = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(length);
        let warm = match k {
            0 => Some(0),
            _ => warm_start(text, start, window + 2, starts[k - 1]),
        };
        match (warm, segments.last_mut()) {
            (None, Some(previous)) => previous.end = end,
            (warm, _) => segments.push(Segment {
                warm: warm.unwrap_or(0),
                start,
                end,
                warm_units: 0,
            }),
        }
    }
    // The warm starts only move forward: their UTF-16 offsets in one pass.
    let mut counted = (0, 0);
    for segment in &mut segments {
        counted = advance_units(text, counted, segment.warm);
        segment.warm_units = counted.1;
    }
    segments
}

/// `(index, units before index)` moved on to `to`: UTF-16 units counted incrementally.
#[inline]
fn advance_units<T: Unit>(text: &[T], from: (usize, u64), to: usize) -> (usize, u64) {
    (to, from.1 + utf16_len(&text[from.0..to]))
}

/// `base ** exponent` in wrapping arithmetic, by squaring: an n-gram may be as long as
/// 2**62 words (never formed; a loop of that many multiplications would never end).
fn wrapping_power(base: u64, exponent: usize) -> u64 {
    let (mut result, mut base, mut exponent) = (1u64, base, exponent);
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exponent >>= 1;
    }
    result
}

/// A per-guard seed, so that crafted input cannot aim collisions at a known hash.
fn random_seed() -> u64 {
    ahash::RandomState::new().hash_one(0x5EED_u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_power_is_repeated_multiplication() {
        let mut expected = 1u64;
        for exponent in 0..300 {
            assert_eq!(wrapping_power(NGRAM_MULTIPLIER, exponent), expected);
            expected = expected.wrapping_mul(NGRAM_MULTIPLIER);
        }
        // (a 2**62-word n-gram's weight comes at once)
        let _ = wrapping_power(NGRAM_MULTIPLIER, 1 << 62);
    }

    fn options(ngram: usize, window: usize, repeats: u64) -> Options {
        Options {
            ngram,
            window,
            max_repeats: repeats,
            max_unique_ratio: 0.4,
            min_chars: 0,
        }
    }

    #[test]
    fn trips_on_a_loop_and_names_it() {
        let mut guard = Guard::new(options(3, 12, 3));
        let text: Vec<u8> = "I will try again. ".repeat(5).into_bytes();
        let at = guard.push(&text, Feed::Pushes).expect("trips");
        let reason = guard.reason().expect("reason");
        assert_eq!(reason.phrase, b"i will try");
        assert_eq!(reason.count, 3);
        assert_eq!(
            &text[..at.index],
            b"I will try again. I will try again. I will try"
        );
    }

    #[test]
    fn a_guard_is_fresh_until_fed_and_again_once_reset() {
        for text in [&b"word"[..], b" ", b"\n", b"a b c d"] {
            let mut guard = Guard::new(options(3, 12, 3));
            assert!(guard.is_fresh());
            guard.push(&[] as &[u8], Feed::Pushes);
            assert!(guard.is_fresh(), "an empty push changes nothing");
            guard.push(text, Feed::Pushes);
            assert!(!guard.is_fresh(), "fed {text:?}");
            guard.reset();
            assert!(guard.is_fresh(), "reset after {text:?}");
        }
    }

    #[test]
    fn next_space_finds_what_a_byte_loop_finds() {
        let mut text: Vec<u8> = (0..=255u8).collect();
        text.extend((0..=255u8).rev());
        text.extend(b"abcdefghijklmnop\xa0qrstuvwxyz012345 6789\x1f\x0b".iter());
        for from in 0..text.len() {
            let expected = text[from..]
                .iter()
                .position(|&b| LATIN1_SPACE[usize::from(b)])
                .map_or(text.len(), |at| from + at);
            assert_eq!(
                <u8 as Unit>::next_space(&text, from),
                expected,
                "from {from}"
            );
        }
        let words = b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        assert_eq!(<u8 as Unit>::next_space(words, 3), words.len());
    }

    #[test]
    fn collisions_do_not_change_the_answer() {
        let text: Vec<u8> = "alpha beta gamma delta epsilon zeta eta theta iota kappa "
            .repeat(40)
            .into_bytes();
        let mut exact = Guard::new(options(2, 48, 3));
        let mut colliding = Guard::new(options(2, 48, 3));
        colliding.set_hash_bits(1);
        assert_eq!(
            exact.push(&text, Feed::Pushes),
            colliding.push(&text, Feed::Pushes)
        );
        assert_eq!(exact.reason(), colliding.reason());
    }

    #[test]
    fn an_endless_word_is_held_in_bounded_memory() {
        let mut guard = Guard::new(options(4, 48, 4));
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..8 {
            guard.push(&chunk, Feed::Pushes);
        }
        assert!(guard.partial.len() <= PIECE);
        // The buffer itself never grew with a chunk: each megabyte was taken a piece at a time.
        assert!(guard.partial.capacity() <= 2 * (PIECE + 1));
        let long = guard.long.as_ref().expect("long word");
        assert!(long.normal.kept.len() <= NORMAL_KEPT);
        assert!(long.spelling.tail.len() <= 8 * SHOWN + PIECE);
    }

    /// Bytes the ring's slots hold in their buffers (capacity, not length).
    fn slot_bytes(guard: &Guard) -> usize {
        let slots = &guard.window.ring.slots;
        slots
            .iter()
            .map(|slot| slot.normal.capacity() + slot.spelling.capacity())
            .sum()
    }

    #[test]
    fn slots_let_go_of_long_words_that_left_the_window() {
        // One 65,000-character word and 19 short ones, over and over, through a window of
        // 20: the long word lands in every slot in turn. The slots must hold about what
        // the window holds now (one long word), not a long word each.
        let window = 20;
        let mut guard = Guard::new(options(2, window, 1_000_000));
        let mut chunk = vec![0xC9u8; 65_000]; // "É": normal and spelling differ
        for k in 0..window - 1 {
            chunk.extend(format!(" w{k}").bytes());
        }
        chunk.push(b' ');
        let one_word = 2 * 2 * 65_000; // its normal form and its spelling, 2 bytes a letter
        for _ in 0..5 * (window + 1) {
            assert!(guard.push(&chunk, Feed::Pushes).is_none());
        }
        // ASCII words of the ascii_word path too.
        let mut ascii = vec![b'X'; 60_000];
        ascii.extend(b" y ");
        for _ in 0..2 * (window + 1) {
            guard.push(&ascii, Feed::Pushes);
            guard.push(&chunk[65_000..], Feed::Pushes);
        }
        let held = slot_bytes(&guard);
        assert!(
            held < 2 * one_word + window * 8 * RELEASE_ABOVE,
            "slots hold {held} bytes"
        );
    }

    #[test]
    fn a_long_word_finished_in_a_later_push_is_cut_into_the_same_pieces() {
        // A capital sigma ends the word's second piece (not final: a letter follows).
        let mut word: Vec<u16> = vec![u16::from(b'a'); 2 * PIECE - 1];
        word.push(0x03A3);
        word.extend(std::iter::repeat_n(u16::from(b'b'), 40_000));
        let mut text = Vec::new();
        for _ in 0..5 {
            text.extend_from_slice(&word);
            text.push(u16::from(b' '));
        }
        let mut whole = Guard::new(options(2, 4, 2));
        let tripped = whole.push(&text, Feed::Pushes).map(|at| at.index);
        assert_eq!(tripped, Some(3 * word.len() + 2));
        let mut cut = Guard::new(options(2, 4, 2));
        let first = word.len() + 1 + 70_000;
        assert_eq!(cut.push(&text[..first], Feed::Pushes), None);
        let rest = cut
            .push(&text[first..], Feed::Pushes)
            .map(|at| first + at.index);
        assert_eq!(rest, tripped);
        assert_eq!(whole.reason(), cut.reason());
    }

    /// The normal form and long key the guard gives `word`, pushed in chunks of `chunk`.
    fn long_word_key(word: &[u32], chunk: usize) -> (Vec<u8>, Option<(u64, u128)>) {
        let mut guard = Guard::new(options(2, 4, 2));
        let mut text = word.to_vec();
        text.push(u32::from(b' '));
        for piece in text.chunks(chunk) {
            guard.push(piece, Feed::Pushes);
        }
        let slot = guard.window.ring.get(guard.window.ring.len - 1);
        (slot.normal.clone(), slot.long)
    }

    #[test]
    fn a_long_word_is_lower_cased_as_a_whole_across_its_pieces() {
        // A capital sigma at either side of a cut, case-ignorable runs (kept modifier letters
        // among them) as long as pieces after it, what follows them cased, uncased or the
        // word's end: the normal form is the whole word's, in one push or in many, and past
        // NORMAL_KEPT the key is the one of the word spelled with the right small sigma.
        let codes = |text: &str| text.chars().map(u32::from).collect::<Vec<u32>>();
        let mixed = codes("\u{301}\u{ad}':\u{2b0}");
        // Modifier letters alone: the open sigma's two forms pass NORMAL_KEPT.
        let letters = codes("\u{2b0}");
        let runs = [
            (&mixed, 0),
            (&mixed, 1),
            (&mixed, 3),
            (&mixed, PIECE + 5),
            (&mixed, 3 * PIECE),
            (&letters, 2 * PIECE),
        ];
        for before in [PIECE - 2, PIECE - 1, PIECE, PIECE + 1] {
            for (ignorable, run) in runs {
                for after in ["b", "-", "", "1b"] {
                    let mut word = vec![u32::from(b'a'); before];
                    word.push(0x3A3);
                    word.extend(ignorable.iter().cycle().take(run));
                    word.extend(codes(after));
                    let mut whole = Vec::new();
                    unicode::push_word_normal(&word, &mut whole);
                    let final_form = !after.starts_with('b');
                    let mut spelled = word.clone();
                    spelled[before] = if final_form { 0x3C2 } else { 0x3C3 };
                    let expected = long_word_key(&spelled, word.len() + 1);
                    for chunk in [word.len() + 1, 70_001, 4_099] {
                        let (normal, long) = long_word_key(&word, chunk);
                        assert_eq!(long, expected.1, "{before} {run} {after:?} by {chunk}");
                        assert_eq!(normal, expected.0, "{before} {run} {after:?} by {chunk}");
                        if long.is_none() {
                            assert_eq!(normal, whole, "{before} {run} {after:?} by {chunk}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn segments_replay_each_character_at_most_twice() {
        // Texts with few or no kept words: a segment's warm-up never reaches back past the
        // cut before it (it joins the previous segment instead), so the replay reads at
        // most twice the text, and the segments still tile it.
        let dashes: Vec<u16> = "\u{2014} ".repeat(200_000).encode_utf16().collect();
        let sparse: Vec<u16> = "\u{2014} \u{2014} ... \u{1F389} word "
            .repeat(20_000)
            .encode_utf16()
            .collect();
        let dense: Vec<u16> = "one two three four five six seven eight "
            .repeat(10_000)
            .encode_utf16()
            .collect();
        for text in [&dashes, &sparse, &dense] {
            for parts in [2, 8, 64] {
                for window in [4, 48, 1_000, 20_000] {
                    let segments = replay_segments(text, parts, window);
                    assert_eq!(segments[0].start, 0);
                    assert_eq!(segments[segments.len() - 1].end, text.len());
                    for pair in segments.windows(2) {
                        assert_eq!(pair[0].end, pair[1].start);
                    }
                    for segment in &segments {
                        assert!(segment.warm <= segment.start && segment.start < segment.end);
                        assert_eq!(segment.warm_units, utf16_len(&text[..segment.warm]));
                    }
                    let replayed: usize = segments.iter().map(|s| s.end - s.warm).sum();
                    assert!(
                        replayed <= 2 * text.len(),
                        "{replayed} for {} ({parts} parts, window {window})",
                        text.len()
                    );
                }
            }
        }
        // Dense text in a small window still splits into parts.
        assert_eq!(replay_segments(&dense, 8, 48).len(), 8);
    }

    #[test]
    fn is_kept_is_a_non_empty_normal_form() {
        let words = [
            "\u{2014}",
            "...",
            "\u{1F389}",
            "a",
            "\u{3A3}",
            "\u{301}",
            "x\u{2014}",
            "\u{2167}",
        ];
        for word in words {
            let units: Vec<u16> = word.encode_utf16().collect();
            let (mut joined, mut normal, mut spelling) = (Vec::new(), Vec::new(), Vec::new());
            word_forms(&units, &mut joined, &mut normal, &mut spelling);
            assert_eq!(is_kept(&units), !normal.is_empty(), "{word:?}");
        }
        // Halves of a pair join (a mathematical letter), lone halves are dropped.
        assert!(is_kept(&[0xD835u16, 0xDC00]));
        assert!(!is_kept(&[0xDC00u16, 0xD835]));
    }

    #[test]
    fn a_long_word_in_one_chunk_is_the_word_in_many() {
        // Pieces cut from one 300,000-unit chunk are those cut from small pushes, pairs of
        // surrogates kept whole across the cuts (UTF-16 units).
        let word = "ab\u{1F389}Cd\u{E9}".encode_utf16().cycle().take(300_001);
        let text: Vec<u16> = word.chain(" tail word".repeat(8).encode_utf16()).collect();
        let mut whole = Guard::new(options(2, 8, 2));
        let mut pieces = Guard::new(options(2, 8, 2));
        let tripped = whole.push(&text, Feed::Pushes).map(|at| at.index);
        let mut tripped_in_pieces = None;
        for (index, chunk) in text.chunks(7_001).enumerate() {
            if let Some(at) = pieces.push(chunk, Feed::Pushes) {
                tripped_in_pieces = Some(index * 7_001 + at.index);
                break;
            }
        }
        assert!(tripped.is_some());
        assert_eq!(tripped, tripped_in_pieces);
        assert_eq!(whole.reason(), pieces.reason());
    }
}
