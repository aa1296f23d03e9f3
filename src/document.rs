//! A line of a file parsed in Rust into a flat tape of borrowed items, read through the same
//! `Node` view as Python objects, so `vthread scan FILE` makes no Python object for a message.
//!
//! The tape is the fast path, not the judge: it takes only plain JSON it can read exactly as
//! Python's `json.loads` does (the CLI's contract), and declines the rest — invalid UTF-8 or a
//! byte-order mark, `NaN`/`Infinity`, a raw control character or a lone surrogate in a string,
//! an escaped or repeated object key, nesting over 128 levels, trailing data, a run of 19
//! digits in an integer part or an exponent — which then goes to Python's `json`. A refusal
//! costs time and never changes an answer. Strings and numbers stay slices of the line until
//! something reads them.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::canonical::{self, Member};
use crate::node::{screens, Key, Node, Text, SCREEN_DEPTH, SEED_UTF8};
use crate::textrun::{last_characters, CodePoints, TAIL_UNITS};

/// Deepest nesting the tape takes; deeper lines go to Python.
pub const MAX_TAPE_DEPTH: usize = 128;

/// The least room made for items when a tape grows.
const MIN_ITEMS: usize = 64;

/// The most items a tape reserves before it has read any (64 Ki items, 1 MiB).
const MAX_FIRST_ITEMS: usize = 1 << 16;

/// Digit runs this long in a number go to Python (see `Parser::short_digits`).
pub const LONG_DIGIT_RUN: usize = 19;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Null,
    True,
    False,
    Number,
    String,
    Array,
    Object,
}

/// One value of the line: its text at `start..end` (a string's without its quotes).
/// Containers hold their children right after them; `next` is the index just past the whole
/// subtree. Objects alternate key and value children.
#[derive(Clone, Copy, Debug)]
struct Item {
    kind: Kind,
    start: u32,
    end: u32,
    next: u32,
    escaped: bool,
}

/// A parsed line.
pub struct Tape<'a> {
    /// The line, checked to be UTF-8 once, when it was parsed: a string's text is then a
    /// slice of it, found without a second check.
    line: &'a str,
    items: Vec<Item>,
    /// For a tape handed over by `kept_tape`: the `bytes` its line lies in, held (never read)
    /// so that the buffer outlives the tape; dropped with it (without the GIL, PyO3 defers
    /// the release to the next time it holds it).
    #[allow(dead_code)]
    owner: Option<Py<PyBytes>>,
}

/// A tape's items with the place of the line they were parsed from (`Tape::into_kept`), and
/// the `bytes` that line lies in, which `kept_tape` holds with them.
pub struct KeptItems {
    at: usize,
    len: usize,
    items: Vec<Item>,
    owner: Option<Py<PyBytes>>,
}

impl KeptItems {
    /// These items, held with `owner`, the `bytes` their line lies in.
    pub fn owned_by(mut self, owner: Py<PyBytes>) -> KeptItems {
        self.owner = Some(owner);
        self
    }

    /// These items without the `bytes` they hold, and that reference (to be let go of with
    /// the GIL held, once the items are used or dropped).
    pub fn without_owner(mut self) -> (KeptItems, Option<Py<PyBytes>>) {
        let owner = self.owner.take();
        (self, owner)
    }

    /// The address of the line these items were parsed from.
    pub fn place(&self) -> usize {
        self.at
    }

    /// The bytes the items take when held without spare room (`shrink`).
    pub fn memory(&self) -> usize {
        self.items.len() * std::mem::size_of::<Item>()
    }

    /// The bytes the items take as held now, spare room included.
    pub fn allocated(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<Item>()
    }

    /// Let go of the spare room the parse left in the items (up to as much again).
    pub fn shrink(&mut self) {
        self.items.shrink_to_fit();
    }
}

/// Why the tape declined a line (Python's `json` reads it instead).
#[derive(Debug, PartialEq, Eq)]
pub struct Declined;

struct Parser<'a, 'b> {
    bytes: &'a [u8],
    at: usize,
    items: &'b mut Vec<Item>,
    /// The key items of the objects being read, innermost last: one stack for the line,
    /// not a vector allocated and freed for every object.
    keys: Vec<usize>,
}

impl Parser<'_, '_> {
    fn skip_space(&mut self) {
        while let Some(&byte) = self.bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.at += 1;
        }
    }

    /// Append an item; Declined when memory for more cannot be had (a line of hundreds of
    /// megabytes under a memory limit), so that Python's `json` reads the line or raises
    /// MemoryError, rather than the allocation failure aborting the process.
    fn push(
        &mut self,
        kind: Kind,
        start: usize,
        end: usize,
        escaped: bool,
    ) -> Result<usize, Declined> {
        if self.items.len() == self.items.capacity() {
            let more = self.items.len().max(MIN_ITEMS);
            self.items.try_reserve(more).map_err(|_| Declined)?;
        }
        self.items.push(Item {
            kind,
            start: start as u32,
            end: end as u32,
            next: 0,
            escaped,
        });
        Ok(self.items.len() - 1)
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Result<(), Declined> {
        if !self.bytes[self.at..].starts_with(word) {
            return Err(Declined);
        }
        let at = self.at;
        self.at += word.len();
        let index = self.push(kind, at, self.at, false)?;
        self.items[index].next = self.items.len() as u32;
        Ok(())
    }

    fn digits(&mut self) -> usize {
        let from = self.at;
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - from
    }

    /// Digits, declining a run of `LONG_DIGIT_RUN` or more: an integer that long may be
    /// beyond an i64 (which Python reads exactly) or beyond the 4,300 digits Python refuses.
    fn short_digits(&mut self) -> Result<usize, Declined> {
        let count = self.digits();
        if count >= LONG_DIGIT_RUN {
            return Err(Declined);
        }
        Ok(count)
    }

    /// JSON's number grammar, which is also `json`'s: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
    fn number(&mut self) -> Result<(), Declined> {
        let start = self.at;
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        match self.bytes.get(self.at) {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.short_digits()?;
            }
            _ => return Err(Declined),
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            // A fraction makes the number a float, which any number of digits leaves
            // correctly rounded here as in Python's float() (recorded costs such as
            // 0.0035475000000000003 are common).
            if self.digits() == 0 {
                return Err(Declined);
            }
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.short_digits()? == 0 {
                return Err(Declined);
            }
        }
        let index = self.push(Kind::Number, start, self.at, false)?;
        self.items[index].next = self.items.len() as u32;
        Ok(())
    }

    /// A string's body (between the quotes), checked: escapes well formed, surrogates paired.
    fn string(&mut self) -> Result<usize, Declined> {
        self.at += 1; // the opening quote
        let start = self.at;
        let mut escaped = false;
        loop {
            // Jump to the next quote, backslash or raw control character, in one pass.
            let Some(stop) = string_stop(&self.bytes[self.at..]) else {
                return Err(Declined);
            };
            self.at += stop;
            let byte = self.bytes[self.at];
            match byte {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    match self.bytes.get(self.at + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.at += 2
                        }
                        Some(b'u') => {
                            let unit = hex4(self.bytes.get(self.at + 2..self.at + 6))?;
                            self.at += 6;
                            if (0xDC00..0xE000).contains(&unit) {
                                return Err(Declined); // a lone low surrogate
                            }
                            if (0xD800..0xDC00).contains(&unit) {
                                let low = match self.bytes.get(self.at..self.at + 2) {
                                    Some(b"\\u") => hex4(self.bytes.get(self.at + 2..self.at + 6))?,
                                    _ => return Err(Declined),
                                };
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(Declined);
                                }
                                self.at += 6;
                            }
                        }
                        _ => return Err(Declined),
                    }
                }
                0x00..=0x1F => return Err(Declined), // json's strict mode refuses these
                _ => self.at += 1,
            }
        }
        let index = self.push(Kind::String, start, self.at, escaped)?;
        self.at += 1; // the closing quote
        self.items[index].next = self.items.len() as u32;
        Ok(index)
    }

    fn value(&mut self, depth: usize) -> Result<(), Declined> {
        self.skip_space();
        match self.bytes.get(self.at) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(|_| ()),
            Some(b't') => self.literal(b"true", Kind::True),
            Some(b'f') => self.literal(b"false", Kind::False),
            Some(b'n') => self.literal(b"null", Kind::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(Declined),
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), Declined> {
        if depth > MAX_TAPE_DEPTH {
            return Err(Declined);
        }
        let index = self.push(Kind::Array, self.at, self.at, false)?;
        self.at += 1;
        self.skip_space();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
        } else {
            loop {
                self.value(depth)?;
                self.skip_space();
                match self.bytes.get(self.at) {
                    Some(b',') => self.at += 1,
                    Some(b']') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(Declined),
                }
            }
        }
        self.items[index].end = self.at as u32;
        self.items[index].next = self.items.len() as u32;
        Ok(())
    }

    fn object(&mut self, depth: usize) -> Result<(), Declined> {
        if depth > MAX_TAPE_DEPTH {
            return Err(Declined);
        }
        let index = self.push(Kind::Object, self.at, self.at, false)?;
        self.at += 1;
        self.skip_space();
        let first_key = self.keys.len();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
        } else {
            loop {
                self.skip_space();
                if self.bytes.get(self.at) != Some(&b'"') {
                    return Err(Declined);
                }
                let key = self.string()?;
                if self.items[key].escaped {
                    return Err(Declined); // compared as raw bytes below and in `field`
                }
                self.keys.push(key);
                self.skip_space();
                if self.bytes.get(self.at) != Some(&b':') {
                    return Err(Declined);
                }
                self.at += 1;
                self.value(depth)?;
                self.skip_space();
                match self.bytes.get(self.at) {
                    Some(b',') => self.at += 1,
                    Some(b'}') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(Declined),
                }
            }
        }
        if has_repeated_key(self.bytes, self.items, &self.keys[first_key..]) {
            return Err(Declined); // json keeps the first place and the last value: Python's job
        }
        self.keys.truncate(first_key);
        self.items[index].end = self.at as u32;
        self.items[index].next = self.items.len() as u32;
        Ok(())
    }
}

fn has_repeated_key(bytes: &[u8], items: &[Item], keys: &[usize]) -> bool {
    let text = |key: usize| &bytes[items[key].start as usize..items[key].end as usize];
    if keys.len() <= SMALL_OBJECT {
        return keys
            .iter()
            .enumerate()
            .any(|(i, &a)| keys[..i].iter().any(|&b| same_key(text(a), text(b))));
    }
    let mut seen = ahash::AHashSet::with_capacity(keys.len());
    !keys.iter().all(|&key| seen.insert(text(key)))
}

/// Whether two keys are the same bytes, told by their lengths and end bytes first: an
/// object's keys nearly always differ there ("type" and "text" in the last), and the rest
/// is then compared only when those agree, not with a call to `memcmp` for every pair of
/// keys of one length.
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.first() == b.first() && a.last() == b.last() && a == b
}

/// Objects of at most this many keys are checked for a repeated key pair by pair.
const SMALL_OBJECT: usize = 16;

/// Where the first byte a string's scan must stop at lies: a quote, a backslash, or a raw
/// control character (which json's strict mode refuses). One pass, 16 bytes at a time
/// where SSE2 is (every x86-64); `string_stop_plainly` is its twin.
#[inline]
fn string_stop(bytes: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8,
            _mm_or_si128, _mm_set1_epi8,
        };
        let mut at = 0;
        // SAFETY: SSE2 is in the x86-64 baseline; each unaligned load reads the 16 bytes at
        // `at..at + 16`, inside `bytes` by the loop's condition.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let last_control = _mm_set1_epi8(0x1F);
            while at + 16 <= bytes.len() {
                let chunk = _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
                // A byte is at most 0x1F (unsigned) exactly when max(byte, 0x1F) is 0x1F.
                let control = _mm_cmpeq_epi8(_mm_max_epu8(chunk, last_control), last_control);
                let stops = _mm_or_si128(
                    _mm_or_si128(
                        _mm_cmpeq_epi8(chunk, quote),
                        _mm_cmpeq_epi8(chunk, backslash),
                    ),
                    control,
                );
                let mask = _mm_movemask_epi8(stops);
                if mask != 0 {
                    return Some(at + mask.trailing_zeros() as usize);
                }
                at += 16;
            }
        }
        string_stop_plainly(&bytes[at..]).map(|offset| at + offset)
    }
    #[cfg(not(target_arch = "x86_64"))]
    string_stop_plainly(bytes)
}

/// `string_stop` a byte at a time.
fn string_stop_plainly(bytes: &[u8]) -> Option<usize> {
    bytes
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)
}

fn hex4(digits: Option<&[u8]>) -> Result<u32, Declined> {
    let digits = digits.ok_or(Declined)?;
    let mut value = 0;
    for &digit in digits {
        value = value * 16 + char::from(digit).to_digit(16).ok_or(Declined)?;
    }
    Ok(value)
}

impl<'a> Tape<'a> {
    /// Parse one line (without its newline); `Declined` for anything Python should read.
    pub fn parse(line: &'a [u8]) -> Result<Tape<'a>, Declined> {
        match simdutf8::basic::from_utf8(line) {
            Ok(text) => Tape::parse_str(text),
            Err(_) => Err(Declined),
        }
    }

    /// `parse` of a text already known to be UTF-8 (no check again).
    pub fn parse_str(line: &'a str) -> Result<Tape<'a>, Declined> {
        if let Some(tape) = crate::kept_tape::take(line) {
            return Ok(tape); // format detection's parse of this very line
        }
        Tape::parse_afresh(line)
    }

    /// The tape's items, with where its line lies, for `kept_tape` to hand to the next
    /// parse of the same line.
    pub fn into_kept(self) -> KeptItems {
        KeptItems {
            at: self.line.as_ptr() as usize,
            len: self.line.len(),
            items: self.items,
            owner: self.owner,
        }
    }

    /// The tape of `line` from items kept from its parse; the items back when `line` does
    /// not lie where the parsed line did (another line's). The caller answers for the text
    /// there being unchanged since (`kept_tape` holds the `bytes` it lies in).
    pub fn from_kept(line: &'a str, kept: KeptItems) -> Result<Tape<'a>, KeptItems> {
        if kept.at == line.as_ptr() as usize && kept.len == line.len() {
            Ok(Tape {
                line,
                items: kept.items,
                owner: kept.owner,
            })
        } else {
            Err(kept)
        }
    }

    /// Parse `line`, known to be UTF-8, without looking for a kept tape.
    fn parse_afresh(line: &'a str) -> Result<Tape<'a>, Declined> {
        // About one item per 16 bytes of a typical thread's line, but no more than a small
        // start for a long one: a single long text would otherwise reserve as many bytes as
        // it has, for the handful of items it makes.
        let mut items = Vec::new();
        items
            .try_reserve((line.len() / 16).min(MAX_FIRST_ITEMS))
            .map_err(|_| Declined)?;
        if line.starts_with('\u{feff}') {
            return Err(Declined);
        }
        let mut parser = Parser {
            bytes: line.as_bytes(),
            at: 0,
            items: &mut items,
            keys: Vec::new(),
        };
        let parsed = parser.value(0).and_then(|()| {
            parser.skip_space();
            if parser.at == line.len() {
                Ok(())
            } else {
                Err(Declined)
            }
        });
        parsed.map(|()| Tape {
            line,
            items,
            owner: None,
        })
    }

    /// The root value.
    pub fn root(&self) -> Value<'_> {
        Value {
            tape: self,
            index: 0,
        }
    }
}

/// One value of a tape.
#[derive(Clone, Copy)]
pub struct Value<'t> {
    tape: &'t Tape<'t>,
    index: usize,
}

/// A scalar of a tape as its canonical encoding tells it (see `Value::scalar_form`).
#[derive(PartialEq)]
enum Scalar {
    Null,
    Boolean(bool),
    Number(f64),
}

impl<'t> Value<'t> {
    fn item(&self) -> &Item {
        &self.tape.items[self.index]
    }

    fn raw(&self) -> &'t [u8] {
        let item = self.tape.items[self.index];
        &self.tape.line.as_bytes()[item.start as usize..item.end as usize]
    }

    /// `raw` as text: a slice of the line, which was checked to be UTF-8 when parsed (a
    /// value's text begins and ends beside ASCII, so the slice always lies on characters).
    fn raw_str(&self) -> Option<&'t str> {
        let item = self.tape.items[self.index];
        self.tape.line.get(item.start as usize..item.end as usize)
    }

    /// The children of an array, or the keys and values (alternating) of an object.
    pub fn children(&self) -> Children<'t> {
        let item = self.item();
        let at = if matches!(item.kind, Kind::Array | Kind::Object) {
            self.index + 1
        } else {
            item.next as usize
        };
        Children {
            tape: self.tape,
            at,
            end: item.next as usize,
        }
    }

    pub fn is_array(&self) -> bool {
        self.item().kind == Kind::Array
    }

    pub fn is_object(&self) -> bool {
        self.item().kind == Kind::Object
    }

    pub fn is_number(&self) -> bool {
        self.item().kind == Kind::Number
    }

    pub fn is_string(&self) -> bool {
        self.item().kind == Kind::String
    }

    /// The value's JSON text as the line writes it (a string with its quotes, a container
    /// with its brackets and inner whitespace): the same value when read back.
    pub fn json_text(&self) -> &'t [u8] {
        let item = self.tape.items[self.index];
        let (start, end) = (item.start as usize, item.end as usize);
        if item.kind == Kind::String {
            &self.tape.line.as_bytes()[start - 1..end + 1]
        } else {
            &self.tape.line.as_bytes()[start..end]
        }
    }

    /// `(key, value)` pairs of an object, the key as its string value.
    fn member_values(&self) -> impl Iterator<Item = (Value<'t>, Value<'t>)> {
        let mut children = self.children();
        std::iter::from_fn(move || Some((children.next()?, children.next()?)))
    }

    /// `(key bytes, value)` pairs of an object (keys are never escaped in a tape).
    pub fn members(&self) -> impl Iterator<Item = (&'t [u8], Value<'t>)> {
        self.member_values().map(|(key, value)| (key.raw(), value))
    }

    /// `members` with each key as text (a slice of the line, no UTF-8 check again).
    fn members_as_text(&self) -> impl Iterator<Item = (&'t str, Value<'t>)> {
        self.member_values()
            .map(|(key, value)| (key.raw_str().unwrap_or(""), value))
    }

    /// The member `name` of an object (keys are unique in a tape).
    pub fn get(&self, name: &str) -> Option<Value<'t>> {
        if !self.is_object() {
            return None;
        }
        self.members()
            .find(|(key, _)| same_key(key, name.as_bytes()))
            .map(|(_, value)| value)
    }

    /// The string's content (escapes decoded), or None for other values.
    pub fn text(&self) -> Option<std::borrow::Cow<'t, str>> {
        let item = self.item();
        if item.kind != Kind::String {
            return None;
        }
        let plain = self.raw_str()?;
        if !item.escaped {
            return Some(std::borrow::Cow::Borrowed(plain));
        }
        Some(std::borrow::Cow::Owned(unescape(plain.as_bytes())))
    }

    /// An integer's value when it is one that fits in an i64.
    pub fn as_i64(&self) -> Option<i64> {
        if self.item().kind != Kind::Number {
            return None;
        }
        self.raw_str()?.parse().ok()
    }

    /// A number's value as a double (correctly rounded, as Python's float()).
    pub fn as_f64(&self) -> Option<f64> {
        if self.item().kind != Kind::Number {
            return None;
        }
        self.raw_str()?.parse().ok()
    }

    /// Whether the number is written as an integer (no fraction, no exponent).
    pub fn is_integer(&self) -> bool {
        self.item().kind == Kind::Number
            && !self.raw().iter().any(|b| matches!(b, b'.' | b'e' | b'E'))
    }

    pub fn is_null(&self) -> bool {
        self.item().kind == Kind::Null
    }

    /// `Some(flag)` for `true` and `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match self.item().kind {
            Kind::True => Some(true),
            Kind::False => Some(false),
            _ => None,
        }
    }

    /// The value's screen (see `node::screens`). A tape string has one representation once
    /// decoded (UTF-8, surrogates paired), so its decoded bytes screen it; screens are only
    /// compared within one thread of one input.
    fn structural_screen(&self, depth: usize) -> u64 {
        let item = *self.item();
        match item.kind {
            Kind::Null => screens::null(),
            Kind::True => screens::boolean(true),
            Kind::False => screens::boolean(false),
            Kind::Number => match (self.is_integer(), self.as_i64()) {
                (true, Some(small)) => screens::number(small as f64),
                _ => screens::number(self.as_f64().unwrap_or(f64::NAN)),
            },
            Kind::String => {
                xxh3_64_with_seed(self.text().unwrap_or_default().as_bytes(), SEED_UTF8)
            }
            _ if depth >= SCREEN_DEPTH => screens::deep(),
            Kind::Array => screens::list(
                self.children()
                    .map(|child| child.structural_screen(depth + 1)),
            ),
            Kind::Object => screens::object(self.members().map(|(key, value)| {
                (
                    xxh3_64_with_seed(key, SEED_UTF8),
                    value.structural_screen(depth + 1),
                )
            })),
        }
    }

    /// Whether `self` and `other` are equal as JavaScript compares values (their canonical
    /// encodings equal, [`Value::push_canonical`]), told by walking the two at once and
    /// stopping at the first difference, with no encoding. A tape holds no value that
    /// encodes as the marker (no cycle, no lone surrogate, nesting far below the encoder's
    /// limit), so a difference anywhere is a difference of the whole, and the walk always
    /// decides; only an object with an array-index key, which the encoding reorders, is
    /// compared by its encoding. Its twin is the comparison of the canonical bytes, which
    /// property tests hold it to.
    pub fn equal_to(&self, other: &Value<'_>) -> bool {
        let (left, right) = (self.item().kind, other.item().kind);
        match (left, right) {
            (Kind::String, Kind::String) => {
                if !self.item().escaped && !other.item().escaped {
                    self.raw() == other.raw()
                } else {
                    self.text() == other.text()
                }
            }
            (Kind::Array, Kind::Array) => {
                let (mut these, mut those) = (self.children(), other.children());
                loop {
                    match (these.next(), those.next()) {
                        (None, None) => return true,
                        (Some(this), Some(that)) if this.equal_to(&that) => {}
                        _ => return false,
                    }
                }
            }
            (Kind::Object, Kind::Object) => {
                let indexed = |value: &Value<'_>| {
                    value
                        .members()
                        .any(|(key, _)| canonical::array_index(key).is_some())
                };
                if indexed(self) || indexed(other) {
                    let (mut these, mut those) = (Vec::new(), Vec::new());
                    self.push_canonical(&mut these);
                    other.push_canonical(&mut those);
                    return these == those;
                }
                let (mut these, mut those) = (self.members(), other.members());
                loop {
                    match (these.next(), those.next()) {
                        (None, None) => return true,
                        // (keys are never escaped in a tape: their bytes are their text)
                        (Some((key, this)), Some((other_key, that)))
                            if key == other_key && this.equal_to(&that) => {}
                        _ => return false,
                    }
                }
            }
            // Two scalars (a string or container is apart from every other kind)
            _ => match (self.scalar_form(), other.scalar_form()) {
                (Some(this), Some(that)) => this == that,
                _ => false,
            },
        }
    }

    /// A scalar as its encoding tells it: a number as the double it is written as (an
    /// integer of 64 bits as `push_i64` rounds it; -0 and 0 equal under `==`), `null` for
    /// null and for a number beyond every double (both written `null`), None for a string
    /// or container (told apart from every scalar by its own walk above).
    fn scalar_form(&self) -> Option<Scalar> {
        Some(match self.item().kind {
            Kind::Null => Scalar::Null,
            Kind::True => Scalar::Boolean(true),
            Kind::False => Scalar::Boolean(false),
            Kind::Number => {
                let double = match (self.is_integer(), self.as_i64()) {
                    (true, Some(small)) => small as f64,
                    _ => self.as_f64().unwrap_or(f64::NAN),
                };
                if double.is_finite() {
                    Scalar::Number(double)
                } else {
                    Scalar::Null
                }
            }
            Kind::String | Kind::Array | Kind::Object => return None,
        })
    }

    /// Append the canonical encoding.
    pub fn push_canonical(&self, out: &mut Vec<u8>) {
        let item = *self.item();
        match item.kind {
            Kind::Null => out.extend_from_slice(b"null"),
            Kind::True => out.extend_from_slice(b"true"),
            Kind::False => out.extend_from_slice(b"false"),
            Kind::Number => {
                // Integers of up to 18 digits are exact in an i64 (longer runs never reach
                // the tape); everything else is the correctly rounded double.
                match (self.is_integer(), self.as_i64()) {
                    (true, Some(small)) => canonical::push_i64(out, small),
                    _ => canonical::push_double(out, self.as_f64().unwrap_or(f64::NAN)),
                }
            }
            Kind::String => {
                canonical::push_str(out, &self.text().unwrap_or_default());
            }
            Kind::Array => {
                out.push(b'[');
                for (position, child) in self.children().enumerate() {
                    if position > 0 {
                        out.push(b',');
                    }
                    child.push_canonical(out);
                }
                out.push(b']');
            }
            Kind::Object => {
                if self
                    .members()
                    .any(|(key, _)| canonical::array_index(key).is_some())
                {
                    let members = self
                        .members_as_text()
                        .map(|(key, value)| {
                            let mut text = Vec::new();
                            canonical::push_str(&mut text, key);
                            let mut encoded = Vec::new();
                            value.push_canonical(&mut encoded);
                            (
                                canonical::array_index(key.as_bytes()),
                                Member {
                                    key: text,
                                    value: encoded,
                                },
                            )
                        })
                        .collect();
                    canonical::push_object(out, members);
                } else {
                    out.push(b'{');
                    for (position, (key, value)) in self.members_as_text().enumerate() {
                        if position > 0 {
                            out.push(b',');
                        }
                        canonical::push_str(out, key);
                        out.push(b':');
                        value.push_canonical(out);
                    }
                    out.push(b'}');
                }
            }
        }
    }
}

/// Iterator over a container's children.
pub struct Children<'t> {
    tape: &'t Tape<'t>,
    at: usize,
    end: usize,
}

impl<'t> Iterator for Children<'t> {
    type Item = Value<'t>;

    fn next(&mut self) -> Option<Value<'t>> {
        if self.at >= self.end {
            return None;
        }
        let value = Value {
            tape: self.tape,
            index: self.at,
        };
        self.at = self.tape.items[self.at].next as usize;
        Some(value)
    }
}

/// A checked string body with its escapes decoded (surrogates come in pairs here).
fn unescape(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut at = 0;
    while at < raw.len() {
        let rest = &raw[at..];
        let plain = rest.iter().position(|&b| b == b'\\').unwrap_or(rest.len());
        out.push_str(std::str::from_utf8(&rest[..plain]).unwrap_or(""));
        at += plain;
        if at >= raw.len() {
            break;
        }
        let escape = raw[at + 1];
        at += 2;
        let simple = match escape {
            b'"' => Some('"'),
            b'\\' => Some('\\'),
            b'/' => Some('/'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            _ => None,
        };
        if let Some(character) = simple {
            out.push(character);
            continue;
        }
        let unit = hex4(raw.get(at..at + 4)).unwrap_or(0xFFFD);
        at += 4;
        let point = if (0xD800..0xDC00).contains(&unit) {
            let low = hex4(raw.get(at + 2..at + 6)).unwrap_or(0xDC00);
            at += 6;
            0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
        } else {
            unit
        };
        out.push(char::from_u32(point).unwrap_or('\u{FFFD}'));
    }
    out
}

impl<'t> Node for Value<'t> {
    fn field(&self, key: Key) -> PyResult<Option<Self>> {
        Ok(self.get(key.as_str()))
    }

    /// One pass over the object's members, as `get` finds each (keys are unique in a tape:
    /// the pass ends once the three are found).
    fn fields_at_once(&self) -> PyResult<Option<[Option<Self>; 3]>> {
        let mut found = [None, None, None];
        if self.is_object() {
            let mut missing = found.len();
            for (key, value) in self.members() {
                if let Some(slot) = [b"type", b"text", b"meta"]
                    .iter()
                    .position(|name| same_key(key, *name))
                {
                    found[slot] = Some(value);
                    missing -= 1;
                    if missing == 0 {
                        break;
                    }
                }
            }
        }
        Ok(Some(found))
    }

    fn is_mapping(&self) -> PyResult<bool> {
        Ok(self.is_object())
    }

    fn is_text(&self, expected: &str) -> bool {
        let item = self.item();
        item.kind == Kind::String && !item.escaped && self.raw() == expected.as_bytes()
            || item.escaped && self.text().is_some_and(|text| text == expected)
    }

    fn is_nonempty_text(&self) -> bool {
        let item = self.item();
        item.kind == Kind::String && item.end > item.start
    }

    fn is_string(&self) -> bool {
        self.item().kind == Kind::String
    }

    fn starts_with_underscore(&self) -> bool {
        self.text().is_some_and(|text| text.starts_with('_'))
    }

    fn push_canonical(&self, out: &mut Vec<u8>) -> PyResult<()> {
        Value::push_canonical(self, out);
        Ok(())
    }

    fn screen(&self, _scratch: &mut Vec<u8>) -> PyResult<u64> {
        Ok(self.structural_screen(0))
    }

    fn text_value(&self) -> Text {
        // The text-run check reads no more than a text's last TAIL_UNITS code points (its
        // first step cuts them), so only those are copied: a text of hundreds of megabytes
        // is not held a second time, and a third as Python's str.
        let text = self.text().unwrap_or_default();
        Text::Owned(last_characters(&text, TAIL_UNITS).to_owned())
    }

    fn with_code_points<R>(&self, read: impl FnOnce(CodePoints<'_>) -> R) -> Option<R> {
        let text = self.text()?;
        if text.is_ascii() {
            return Some(read(CodePoints::Latin1(text.as_bytes())));
        }
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        Some(read(CodePoints::Ucs4(&points)))
    }

    fn plainly_equal(&self, other: &Self) -> Option<bool> {
        Some(self.equal_to(other))
    }

    fn reads_plainly(&self) -> bool {
        self.is_object()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_items_make_a_tape_only_of_the_line_they_were_parsed_from() {
        let line = r#"{"a":[1,"two",{"b":null}]}"#.to_string();
        let twin = line.clone();
        let kept = Tape::parse_afresh(&line).expect("plain JSON").into_kept();
        // The same text elsewhere, or a prefix of the same buffer, gets the items back.
        let kept = Tape::from_kept(&twin, kept).err().expect("another buffer");
        let kept = Tape::from_kept(&line[..line.len() - 1], kept)
            .err()
            .expect("another length");
        let tape = Tape::from_kept(&line, kept).ok().expect("its own line");
        let mut from_kept = Vec::new();
        tape.root().push_canonical(&mut from_kept);
        let mut fresh = Vec::new();
        Tape::parse(twin.as_bytes())
            .expect("plain JSON")
            .root()
            .push_canonical(&mut fresh);
        assert_eq!(from_kept, fresh);
    }

    #[test]
    fn a_repeated_key_is_found_as_a_set_of_the_keys_finds_it() {
        // Keys drawn from few bytes and lengths, so that many pairs agree in what the small
        // objects' check compares first (length, first and last byte) and differ inside; the
        // empty key; objects on both sides of SMALL_OBJECT.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |bound: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % bound
        };
        let lengths = [0, 1, 3, 7, 8, 9, 259, 263, 264];
        for _ in 0..4000 {
            let count = next(2 * SMALL_OBJECT + 2);
            let keys: Vec<Vec<u8>> = (0..count)
                .map(|_| {
                    let mut key = vec![b'k'; lengths[next(lengths.len())]];
                    if !key.is_empty() {
                        let place = next(key.len());
                        key[place] = b"ab"[next(2)];
                    }
                    key
                })
                .collect();
            let mut line = Vec::new();
            let mut items = Vec::new();
            for key in &keys {
                let start = line.len() as u32;
                line.extend_from_slice(key);
                items.push(Item {
                    kind: Kind::String,
                    escaped: false,
                    start,
                    end: line.len() as u32,
                    next: 0,
                });
            }
            let indices: Vec<usize> = (0..keys.len()).collect();
            let distinct: std::collections::HashSet<&Vec<u8>> = keys.iter().collect();
            assert_eq!(
                has_repeated_key(&line, &items, &indices),
                distinct.len() < keys.len(),
                "{keys:?}"
            );
        }
    }

    #[test]
    fn a_strings_stop_is_found_as_byte_by_byte() {
        // Every stopping byte and some that are not (0x20, 0x7F, 0x80, 0x9F, 0xFF: signed
        // comparisons would call the high ones controls) at every position of texts of
        // lengths around the 16-byte steps.
        let bytes = [
            b'"', b'\\', 0x00, 0x09, 0x1F, 0x20, b'a', 0x7F, 0x80, 0x9F, 0xFF,
        ];
        for length in 0..50 {
            for position in 0..length {
                for &byte in &bytes {
                    let mut text = vec![b'x'; length];
                    text[position] = byte;
                    assert_eq!(
                        string_stop(&text),
                        string_stop_plainly(&text),
                        "{byte:#x} at {position} of {length}"
                    );
                }
            }
            assert_eq!(string_stop(&vec![0xC3; length]), None);
        }
    }

    fn canonical_of(text: &str) -> Result<String, Declined> {
        let tape = Tape::parse(text.as_bytes())?;
        let mut out = Vec::new();
        tape.root().push_canonical(&mut out);
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn parsed_values_encode_canonically() {
        assert_eq!(
            canonical_of(r#" {"b":1,"1":2.0} "#).unwrap(),
            r#"{"1":2,"b":1}"#
        );
        assert_eq!(
            canonical_of(r#"[1.0,-0.0,1e16,0.1,"é🎉","\ud83c\udf89\n\u00e9",true,null]"#).unwrap(),
            r#"[1,0,1e+16,0.1,"\u00e9\ud83c\udf89","\ud83c\udf89\n\u00e9",true,null]"#
        );
        assert_eq!(
            canonical_of("123456789012345678").unwrap(),
            "1.2345678901234568e+17"
        );
        assert_eq!(canonical_of("1e400").unwrap(), "null");
        assert_eq!(
            canonical_of("[0.0035475000000000003,1.00000000000000000000001]").unwrap(),
            "[0.0035475000000000003,1]"
        );
        assert_eq!(
            canonical_of(r#"{"a":[],"b":{}}"#).unwrap(),
            r#"{"a":[],"b":{}}"#
        );
    }

    #[test]
    fn unusual_lines_are_declined() {
        for text in [
            r#""\ud800""#,
            r#""\udc00""#,
            "NaN",
            "[1,]",
            "01",
            "1.",
            r#"{"a":1,"a":2}"#,
            r#"{"\u0061":1}"#,
            "\"a\u{1}\"",
            "[1] x",
            "1234567890123456789",
            "1.5e0000000000000000001",
            "",
            "\u{feff}[]",
        ] {
            assert_eq!(canonical_of(text), Err(Declined), "{text:?}");
        }
        let deep = "[".repeat(MAX_TAPE_DEPTH + 1) + &"]".repeat(MAX_TAPE_DEPTH + 1);
        assert_eq!(canonical_of(&deep), Err(Declined));
        let fine = "[".repeat(MAX_TAPE_DEPTH) + &"]".repeat(MAX_TAPE_DEPTH);
        assert!(canonical_of(&fine).is_ok());
    }

    #[test]
    fn fields_and_texts_read_through_the_tape() {
        let line = br#"{"id":"t1","messages":[{"type":"activity","text":"a\"b"}]}"#;
        let tape = Tape::parse(line).unwrap();
        let root = tape.root();
        assert_eq!(root.get("id").unwrap().text().unwrap(), "t1");
        let message = root.get("messages").unwrap().children().next().unwrap();
        assert!(message
            .field(Key::Type)
            .unwrap()
            .unwrap()
            .is_text("activity"));
        assert_eq!(message.get("text").unwrap().text().unwrap(), "a\"b");
        assert!(message.get("meta").is_none());
    }

    #[test]
    fn a_texts_value_keeps_the_tail_the_text_run_check_reads() {
        for text in [
            String::new(),
            "short \"quoted\" text".to_owned(),
            "ab".repeat(TAIL_UNITS),
            // Astral characters around the cut, escaped and not: code points, not units.
            "\u{1F600}x".repeat(TAIL_UNITS),
            "y".repeat(10) + &"\u{e9}\n\u{10348}".repeat(TAIL_UNITS),
        ] {
            let line = serde_json::to_string(&text).unwrap();
            let tape = Tape::parse(line.as_bytes()).unwrap();
            let Text::Owned(kept) = tape.root().text_value() else {
                panic!("a tape's text is owned");
            };
            let whole: Vec<char> = text.chars().collect();
            let wanted: String = whole[whole.len().saturating_sub(TAIL_UNITS)..]
                .iter()
                .collect();
            assert_eq!(kept, wanted);
        }
        assert_eq!(last_characters("abc", 0), "");
        assert_eq!(last_characters("abc", 5), "abc");
    }
}
