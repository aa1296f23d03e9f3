//! Canonical encodings straight from JSON bytes: `canonical(json.loads(data))` without
//! building a single Python object.
//!
//! The CLI's contract is that a line means what `json.loads(line_bytes)` (CPython 3.11) makes
//! of it, so this reader accepts exactly the texts `json.loads` accepts and writes, byte for
//! byte, the text `vthread._jsvalue.canonical` writes for the value `json.loads` returns. It
//! keeps `json.loads`' quirks on purpose:
//!
//! - the bytes are decoded as `json.loads` decodes bytes: UTF-8 with `surrogatepass` (UTF-8
//!   encoded surrogates such as `ED A0 80` are code points, other invalid UTF-8 is an error),
//!   one leading UTF-8 byte-order mark skipped (`utf-8-sig`). Texts `json.loads` would decode
//!   as UTF-16 or UTF-32 (a NUL among the first two bytes, or a UTF-16/32 byte-order mark) are
//!   declined with [`Problem::UnsupportedEncoding`]; no UTF-8 text `json.loads` accepts
//!   starts that way;
//! - whitespace is space, tab, `\n`, `\r` only; `NaN`, `Infinity` and `-Infinity` are values
//!   (written `null`, as `JSON.stringify` writes them); integers are exact (inside ±2**53 they
//!   print as integers, beyond as the correctly rounded double), an integer of more than
//!   [`MAX_INT_DIGITS`] digits is an error, as Python's `int` refuses it; floats round
//!   correctly (`1e400` is infinite, so `null`; `1.0` is `1`);
//! - strings may hold any escaped UTF-16 unit, lone surrogates included, and no raw control
//!   character; an object's keys come out in JavaScript's order, a repeated key keeps its first
//!   position and its last value (as `dict` and `JSON.parse` both do). Keys are repeated when
//!   Python's strings are equal: a surrogate pair written as two escapes is the astral
//!   character, but written as two UTF-8-encoded surrogates it is a different `str`. Those
//!   two `str`s are then one JavaScript property, made one member as
//!   `vthread._jsvalue.canonical` makes it of the `dict`: at the first one's place, with the
//!   value of the one later in the `dict`.
//!
//! Errors carry the byte offset and the very message `json.loads` raises (a
//! `JSONDecodeError`'s "Expecting value: line 1 column 5 (char 4)", whose `char` counts code
//! points; a `UnicodeDecodeError`'s, whose position counts bytes; the integer-size and
//! recursion errors'), so a caller can report them as the standard module would.
//!
//! Nesting is bounded by [`MAX_NESTING`] open arrays and objects. The reader keeps its own
//! stack (no recursion), so no input can overflow the thread's stack.
//!
//! Cost: O(n) in the input's bytes. An object whose members are out of JavaScript order (an
//! index key after another key) or hold a repeated key is rewritten once when it closes,
//! which copies its members; objects nested inside such objects are copied once per
//! enclosing rewrite, O(n · d) for d nested out-of-order objects (d ≤ [`MAX_NESTING`]).

use std::fmt;

use crate::canonical;

/// Arrays and objects open at once beyond which a text is refused. `json.loads` recurses
/// once per level and raises `RecursionError` a few levels under Python's recursion limit
/// (1,000 by default; 994 levels parse when called from a script's top level, fewer from
/// deeper stacks). Every text `json.loads` accepts under the default limit is at most this
/// deep; texts in the narrow band between its stack-dependent limit and this one are read
/// here and refused there.
pub const MAX_NESTING: usize = 1_000;

/// Longest integer, in decimal digits, Python converts by default
/// (`sys.get_int_max_str_digits()`); `json.loads` raises `ValueError` beyond it.
pub const MAX_INT_DIGITS: usize = 4_300;

/// Integers of at most this many digits are inside ±2**53 (10**15 < 2**53): exact doubles.
const SAFE_DIGITS: usize = 15;

/// Integers of at most this many digits fit an `i64` and are read exactly without `f64`.
const I64_DIGITS: usize = 18;

/// Objects with more members than this find repeated keys by sorting, not pairwise.
const PAIRWISE_MEMBERS: usize = 16;

/// What was wrong with a text, in `json.loads`' words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    ExpectingValue,
    ExtraData,
    ExpectingPropertyName,
    ExpectingColon,
    ExpectingComma,
    UnterminatedString,
    InvalidControlCharacter,
    InvalidEscape,
    InvalidUnicodeEscape,
    /// More than [`MAX_NESTING`] arrays and objects open; `object` tells which one opened.
    TooDeep {
        object: bool,
    },
    /// An integer of more than [`MAX_INT_DIGITS`] digits.
    IntegerTooLong {
        digits: usize,
    },
    /// Bytes that are not UTF-8 (surrogates allowed): `length` bytes at the offset, as
    /// CPython's UTF-8 decoder reports them.
    InvalidUtf8 {
        length: usize,
        reason: Utf8Fault,
    },
    /// A text `json.loads` would decode with this codec (UTF-16 or UTF-32), not read here.
    UnsupportedEncoding {
        codec: &'static str,
    },
}

/// Why CPython's UTF-8 decoder stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Utf8Fault {
    InvalidStartByte,
    InvalidContinuationByte,
    UnexpectedEndOfData,
}

impl Utf8Fault {
    fn as_str(self) -> &'static str {
        match self {
            Self::InvalidStartByte => "invalid start byte",
            Self::InvalidContinuationByte => "invalid continuation byte",
            Self::UnexpectedEndOfData => "unexpected end of data",
        }
    }
}

/// A text `json.loads` rejects: where (a byte offset into the input as given) and why, with
/// the message `json.loads` raises for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset into the input (a byte-order mark included) of the fault.
    pub offset: usize,
    pub problem: Problem,
    message: String,
}

impl JsonError {
    /// The message `json.loads` raises for this text (its `str(error)`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for JsonError {}

/// A fault found while reading, before it is checked against the decoder and given words.
#[derive(Debug, Clone, Copy)]
struct Fault {
    /// Byte offset into the text after any byte-order mark.
    at: usize,
    problem: Problem,
}

type Step<T = ()> = Result<T, Fault>;

/// An open array or object.
#[derive(Debug, Clone, Copy)]
struct Frame {
    object: bool,
    /// Where its `{` or `[` is in the output.
    out_start: usize,
    /// Its first member in [`Reader::members`] (objects only).
    first_member: usize,
}

/// An object member already written: `"key":value` at `start..end` in the output.
#[derive(Debug, Clone, Copy)]
struct Member {
    start: usize,
    /// Just past the key's closing quote; the value starts after the `:` there.
    key_end: usize,
    end: usize,
    /// The key's raw text between its quotes in the input, to tell Python strings apart.
    key_source: (usize, usize),
    index: Option<u64>,
    /// The key holds a surrogate or an astral character: equal canonical keys may then be
    /// different Python strings (a pair of UTF-8-encoded surrogates is not the character).
    wide: bool,
}

/// A reusable reader: its scratch stacks are kept between texts (a scalar call and a bulk
/// loop cost the same per text).
#[derive(Debug, Default)]
pub struct Reader {
    frames: Vec<Frame>,
    members: Vec<Member>,
    scratch: Vec<u8>,
}

/// The canonical encoding of one JSON text, or why `json.loads` rejects it.
///
/// ```
/// use _core::json_reader::canonical_json;
/// assert_eq!(canonical_json(br#"{"b": 1.0, "1": [NaN, -0]}"#).unwrap(), br#"{"1":[null,0],"b":1}"#);
/// ```
pub fn canonical_json(input: &[u8]) -> Result<Vec<u8>, JsonError> {
    let mut out = Vec::with_capacity(input.len());
    Reader::default().push_canonical(&mut out, input)?;
    Ok(out)
}

impl Reader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Append the canonical encoding of the JSON text `input` to `out`; on error `out` is
    /// left as it was.
    pub fn push_canonical(&mut self, out: &mut Vec<u8>, input: &[u8]) -> Result<(), JsonError> {
        let skipped = match detect_encoding(input) {
            Encoding::Utf8 => 0,
            Encoding::Utf8Bom => 3,
            Encoding::Other(codec) => {
                let problem = Problem::UnsupportedEncoding { codec };
                return Err(JsonError {
                    offset: 0,
                    problem,
                    message: format!(
                        "not a UTF-8 text: json.loads would decode it as {codec}, which this \
                         reader does not"
                    ),
                });
            }
        };
        let text = &input[skipped..];
        let mark = out.len();
        self.frames.clear();
        self.members.clear();
        let mut parse = Parse {
            text,
            pos: 0,
            out,
            frames: &mut self.frames,
            members: &mut self.members,
            scratch: &mut self.scratch,
        };
        match parse.document() {
            Ok(()) => Ok(()),
            Err(fault) => {
                out.truncate(mark);
                Err(describe(text, skipped, fault))
            }
        }
    }
}

enum Encoding {
    Utf8,
    Utf8Bom,
    Other(&'static str),
}

/// `json.detect_encoding`: byte-order marks first, then the NUL pattern of the first bytes.
fn detect_encoding(input: &[u8]) -> Encoding {
    if input.starts_with(b"\xff\xfe\x00\x00") || input.starts_with(b"\x00\x00\xfe\xff") {
        return Encoding::Other("utf-32");
    }
    if input.starts_with(b"\xff\xfe") || input.starts_with(b"\xfe\xff") {
        return Encoding::Other("utf-16");
    }
    if input.starts_with(b"\xef\xbb\xbf") {
        return Encoding::Utf8Bom;
    }
    match *input {
        [0, second, _, _, ..] => Encoding::Other(if second != 0 {
            "utf-16-be"
        } else {
            "utf-32-be"
        }),
        [_, 0, third, fourth, ..] => Encoding::Other(if third != 0 || fourth != 0 {
            "utf-16-le"
        } else {
            "utf-32-le"
        }),
        [0, _] => Encoding::Other("utf-16-be"),
        [_, 0] => Encoding::Other("utf-16-le"),
        _ => Encoding::Utf8,
    }
}

/// Bytes copied into a string's encoding as they are: printable ASCII but `"` and `\`.
const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0x20;
    while byte < 0x7F {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = false;
    table[b'\\' as usize] = false;
    table
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `word` that is zero; a byte above a zero byte may be flagged
/// too (the borrow), so only the lowest flag is exact, which is the one used.
#[inline]
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// Where the run of [`PLAIN`] bytes from `at` ends: at a `"`, `\`, control character, DEL
/// or non-ASCII byte, or at the end. Eight bytes per step (SWAR), as strings are most of a
/// thread's bytes.
#[inline]
fn plain_run_end(text: &[u8], mut at: usize) -> usize {
    while let Some(chunk) = text.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let stops = zero_bytes(word ^ (ONES * u64::from(b'"')))
            | zero_bytes(word ^ (ONES * u64::from(b'\\')))
            | zero_bytes(word ^ (ONES * 0x7F))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS) // below 0x20
            | (word & HIGHS); // non-ASCII
        if stops != 0 {
            return at + (stops.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < text.len() && PLAIN[usize::from(text[at])] {
        at += 1;
    }
    at
}

#[inline]
fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

#[inline]
fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// One UTF-8 sequence at the start of `bytes`, surrogates allowed (`surrogatepass`):
/// (code point, length), or None where CPython's decoder stops.
#[inline]
fn decode_utf8(bytes: &[u8]) -> Option<(u32, usize)> {
    let lead = *bytes.first()?;
    let tail = |index: usize| bytes.get(index).copied().filter(|&b| is_continuation(b));
    let low = |byte: u8| u32::from(byte & 0x3F);
    match lead {
        0xC2..=0xDF => {
            let second = tail(1)?;
            Some(((u32::from(lead & 0x1F) << 6) | low(second), 2))
        }
        0xE0..=0xEF => {
            let second = tail(1)?;
            if lead == 0xE0 && second < 0xA0 {
                return None; // overlong
            }
            let third = tail(2)?;
            let point = (u32::from(lead & 0x0F) << 12) | (low(second) << 6) | low(third);
            Some((point, 3))
        }
        0xF0..=0xF4 => {
            let second = tail(1)?;
            if (lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second >= 0x90) {
                return None; // overlong, or beyond U+10FFFF
            }
            let third = tail(2)?;
            let fourth = tail(3)?;
            let point = (u32::from(lead & 0x07) << 18)
                | (low(second) << 12)
                | (low(third) << 6)
                | low(fourth);
            Some((point, 4))
        }
        _ => None,
    }
}

/// The first place `text.decode("utf-8", "surrogatepass")` raises, as CPython reports it:
/// (start, length of the bad sequence, reason). CPython's decoder marks `1..=3` bytes as a
/// bad sequence, or everything to the end of the input when it ends inside one.
fn first_utf8_fault(text: &[u8]) -> Option<(usize, usize, Utf8Fault)> {
    let mut from = 0;
    loop {
        let error = match std::str::from_utf8(&text[from..]) {
            Ok(_) => return None,
            Err(error) => error,
        };
        let start = from + error.valid_up_to();
        let rest = &text[start..];
        // surrogatepass takes exactly the three-byte encodings of U+D800..U+DFFF.
        if let [0xED, 0xA0..=0xBF, third, ..] = *rest {
            if is_continuation(third) {
                from = start + 3;
                continue;
            }
        }
        let (length, fault) = cpython_utf8_fault(rest);
        return Some((start, length, fault));
    }
}

/// CPython's verdict on the invalid sequence starting `rest` (its `utf8_decode` in
/// `Objects/stringlib/codecs.h`): how many bytes it blames and why.
fn cpython_utf8_fault(rest: &[u8]) -> (usize, Utf8Fault) {
    use Utf8Fault::*;
    let lead = rest[0];
    let available = rest.len();
    let continues = |index: usize| rest.get(index).is_some_and(|&b| is_continuation(b));
    let truncated = (available, UnexpectedEndOfData);
    match lead {
        0xC2..=0xDF => {
            if available < 2 {
                truncated
            } else {
                (1, InvalidContinuationByte)
            }
        }
        0xE0..=0xEF => {
            if available < 2 {
                return truncated;
            }
            let second = rest[1];
            let bad_second = !is_continuation(second)
                || (lead == 0xE0 && second < 0xA0)
                || (lead == 0xED && second >= 0xA0);
            if bad_second {
                (1, InvalidContinuationByte)
            } else if available < 3 {
                truncated
            } else {
                (2, InvalidContinuationByte)
            }
        }
        0xF0..=0xF4 => {
            if available < 2 {
                return truncated;
            }
            let second = rest[1];
            let bad_second = !is_continuation(second)
                || (lead == 0xF0 && second < 0x90)
                || (lead == 0xF4 && second >= 0x90);
            if bad_second {
                (1, InvalidContinuationByte)
            } else if available < 3 {
                truncated
            } else if !continues(2) {
                (2, InvalidContinuationByte)
            } else if available < 4 {
                truncated
            } else {
                (3, InvalidContinuationByte)
            }
        }
        _ => (1, InvalidStartByte),
    }
}

/// Give a fault `json.loads`' words. `json.loads` decodes the whole text before it parses,
/// so an undecodable byte anywhere wins over a syntax fault before it.
#[cold]
fn describe(text: &[u8], skipped: usize, fault: Fault) -> JsonError {
    if let Some((start, length, reason)) = first_utf8_fault(text) {
        let message = if length == 1 {
            format!(
                "'utf-8' codec can't decode byte 0x{:02x} in position {start}: {}",
                text[start],
                reason.as_str()
            )
        } else {
            format!(
                "'utf-8' codec can't decode bytes in position {start}-{}: {}",
                start + length - 1,
                reason.as_str()
            )
        };
        return JsonError {
            offset: skipped + start,
            problem: Problem::InvalidUtf8 { length, reason },
            message,
        };
    }
    let words = match fault.problem {
        Problem::ExpectingValue => "Expecting value",
        Problem::ExtraData => "Extra data",
        Problem::ExpectingPropertyName => "Expecting property name enclosed in double quotes",
        Problem::ExpectingColon => "Expecting ':' delimiter",
        Problem::ExpectingComma => "Expecting ',' delimiter",
        Problem::UnterminatedString => "Unterminated string starting at",
        Problem::InvalidControlCharacter => "Invalid control character at",
        Problem::InvalidEscape => "Invalid \\escape",
        Problem::InvalidUnicodeEscape => "Invalid \\uXXXX escape",
        Problem::TooDeep { object } => {
            let kind = if object { "object" } else { "array" };
            return JsonError {
                offset: skipped + fault.at,
                problem: fault.problem,
                message: format!(
                    "maximum recursion depth exceeded while decoding a JSON {kind} from a \
                     unicode string"
                ),
            };
        }
        Problem::IntegerTooLong { digits } => {
            return JsonError {
                offset: skipped + fault.at,
                problem: fault.problem,
                message: format!(
                    "Exceeds the limit ({MAX_INT_DIGITS} digits) for integer string \
                     conversion: value has {digits} digits; use sys.set_int_max_str_digits() \
                     to increase the limit"
                ),
            };
        }
        Problem::InvalidUtf8 { .. } | Problem::UnsupportedEncoding { .. } => {
            unreachable!("decoding faults are found by first_utf8_fault")
        }
    };
    // JSONDecodeError counts code points of the decoded text; the text decodes (checked
    // above), so every byte that is not a continuation byte starts one.
    let before = &text[..fault.at];
    let chars = before.iter().filter(|&&b| !is_continuation(b)).count();
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = match before.iter().rposition(|&b| b == b'\n') {
        Some(newline) => {
            before[newline + 1..]
                .iter()
                .filter(|&&b| !is_continuation(b))
                .count()
                + 1
        }
        None => chars + 1,
    };
    JsonError {
        offset: skipped + fault.at,
        problem: fault.problem,
        message: format!("{words}: line {line} column {column} (char {chars})"),
    }
}

/// One text being read. Mirrors CPython's `_json.c` scanner, iteratively: each value
/// starts at `pos`; the frames say what encloses it.
struct Parse<'a> {
    text: &'a [u8],
    pos: usize,
    out: &'a mut Vec<u8>,
    frames: &'a mut Vec<Frame>,
    members: &'a mut Vec<Member>,
    scratch: &'a mut Vec<u8>,
}

impl Parse<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        while let Some(&byte) = self.text.get(self.pos) {
            if !is_whitespace(byte) {
                break;
            }
            self.pos += 1;
        }
    }

    #[inline]
    fn fault<T>(&self, at: usize, problem: Problem) -> Step<T> {
        Err(Fault { at, problem })
    }

    /// `json.loads`: whitespace, one value, whitespace, the end.
    fn document(&mut self) -> Step {
        self.skip_whitespace();
        self.values()?;
        self.skip_whitespace();
        if self.pos != self.text.len() {
            return self.fault(self.pos, Problem::ExtraData);
        }
        Ok(())
    }

    /// Read one value and everything it opens.
    fn values(&mut self) -> Step {
        loop {
            match self.peek() {
                Some(b'[') => {
                    self.open(false)?;
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        self.out.push(b']');
                        self.frames.pop();
                    } else {
                        continue;
                    }
                }
                Some(b'{') => {
                    self.open(true)?;
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        self.out.push(b'}');
                        self.frames.pop();
                    } else {
                        self.key()?;
                        continue;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                }
                _ => self.scalar()?,
            }
            // A value has ended: close what it ends, or go on to the next element.
            loop {
                let Some(&frame) = self.frames.last() else {
                    return Ok(());
                };
                if frame.object {
                    let end = self.out.len();
                    self.members.last_mut().expect("an open member").end = end;
                }
                self.skip_whitespace();
                match (self.peek(), frame.object) {
                    (Some(b']'), false) => {
                        self.pos += 1;
                        self.out.push(b']');
                        self.frames.pop();
                    }
                    (Some(b'}'), true) => {
                        self.pos += 1;
                        self.frames.pop();
                        self.close_object(frame);
                    }
                    (Some(b','), object) => {
                        self.pos += 1;
                        self.out.push(b',');
                        self.skip_whitespace();
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    _ => return self.fault(self.pos, Problem::ExpectingComma),
                }
            }
        }
    }

    /// Enter `[` or `{` at `pos`, and skip the whitespace after it.
    fn open(&mut self, object: bool) -> Step {
        if self.frames.len() >= MAX_NESTING {
            return self.fault(self.pos, Problem::TooDeep { object });
        }
        self.frames.push(Frame {
            object,
            out_start: self.out.len(),
            first_member: self.members.len(),
        });
        self.out.push(if object { b'{' } else { b'[' });
        self.pos += 1;
        self.skip_whitespace();
        Ok(())
    }

    /// A member's key, its `:` and the whitespace up to its value.
    fn key(&mut self) -> Step {
        if self.peek() != Some(b'"') {
            return self.fault(self.pos, Problem::ExpectingPropertyName);
        }
        let start = self.out.len();
        let source_start = self.pos + 1;
        let wide = self.string()?;
        let key_end = self.out.len();
        let key_source = (source_start, self.pos - 1);
        let index = canonical::array_index(&self.out[start + 1..key_end - 1]);
        self.skip_whitespace();
        if self.peek() != Some(b':') {
            return self.fault(self.pos, Problem::ExpectingColon);
        }
        self.pos += 1;
        self.out.push(b':');
        self.skip_whitespace();
        self.members.push(Member {
            start,
            key_end,
            end: key_end + 1,
            key_source,
            index,
            wide,
        });
        Ok(())
    }

    /// The string at `pos` (its opening quote), written escaped to ASCII over UTF-16 units.
    /// Returns whether it holds a surrogate or an astral character.
    fn string(&mut self) -> Step<bool> {
        let text = self.text;
        let begin = self.pos;
        let mut at = begin + 1;
        let mut wide = false;
        self.out.push(b'"');
        loop {
            let run = at;
            at = plain_run_end(text, at);
            self.out.extend_from_slice(&text[run..at]);
            let Some(&byte) = text.get(at) else {
                return self.fault(begin, Problem::UnterminatedString);
            };
            match byte {
                b'"' => break,
                b'\\' => {
                    let Some(&escape) = text.get(at + 1) else {
                        return self.fault(begin, Problem::UnterminatedString);
                    };
                    let written: &[u8] = match escape {
                        b'"' => b"\\\"",
                        b'\\' => b"\\\\",
                        b'/' => b"/",
                        b'b' => b"\\b",
                        b'f' => b"\\f",
                        b'n' => b"\\n",
                        b'r' => b"\\r",
                        b't' => b"\\t",
                        b'u' => {
                            // CPython wants a character after the four digits (the closing
                            // quote, in a valid text) before it reads them.
                            if at + 6 >= text.len() {
                                return self.fault(at + 1, Problem::InvalidUnicodeEscape);
                            }
                            let Some(unit) = hex4(&text[at + 2..at + 6]) else {
                                return self.fault(at + 1, Problem::InvalidUnicodeEscape);
                            };
                            wide |= (0xD800..0xE000).contains(&unit);
                            canonical::push_code_point(self.out, unit);
                            at += 6;
                            continue;
                        }
                        _ => return self.fault(at, Problem::InvalidEscape),
                    };
                    self.out.extend_from_slice(written);
                    at += 2;
                }
                0x00..=0x1F => return self.fault(at, Problem::InvalidControlCharacter),
                0x7F => {
                    self.out.extend_from_slice(b"\\u007f");
                    at += 1;
                }
                _ => {
                    let Some((point, length)) = decode_utf8(&text[at..]) else {
                        // `describe` finds the decoder's own account of it.
                        return self.fault(at, Problem::ExpectingValue);
                    };
                    wide |= point >= 0x1_0000 || (0xD800..0xE000).contains(&point);
                    canonical::push_code_point(self.out, point);
                    at += length;
                }
            }
        }
        self.out.push(b'"');
        self.pos = at + 1;
        Ok(wide)
    }

    /// A literal or a number at `pos`, as `scan_once_unicode` tries them.
    fn scalar(&mut self) -> Step {
        let rest = &self.text[self.pos..];
        let (written, length): (&[u8], usize) = match rest.first() {
            Some(b'n') if rest.starts_with(b"null") => (b"null", 4),
            Some(b't') if rest.starts_with(b"true") => (b"true", 4),
            Some(b'f') if rest.starts_with(b"false") => (b"false", 5),
            // JSON.stringify writes NaN and the infinities as null.
            Some(b'N') if rest.starts_with(b"NaN") => (b"null", 3),
            Some(b'I') if rest.starts_with(b"Infinity") => (b"null", 8),
            Some(b'-') if rest.starts_with(b"-Infinity") => (b"null", 9),
            _ => return self.number(),
        };
        self.out.extend_from_slice(written);
        self.pos += length;
        Ok(())
    }

    /// `_match_number_unicode`: `-?(0|[1-9][0-9]*)`, then a fraction only when a digit
    /// follows the `.`, an exponent only when a digit follows `e`, `e+` or `e-`.
    fn number(&mut self) -> Step {
        let text = self.text;
        let start = self.pos;
        let digit_at = |index: usize| text.get(index).is_some_and(u8::is_ascii_digit);
        let mut at = start;
        let negative = text.get(at) == Some(&b'-');
        if negative {
            at += 1;
        }
        match text.get(at) {
            Some(b'1'..=b'9') => {
                at += 1;
                while digit_at(at) {
                    at += 1;
                }
            }
            Some(b'0') => at += 1,
            _ => return self.fault(start, Problem::ExpectingValue),
        }
        let integer_end = at;
        let mut is_float = false;
        if text.get(at) == Some(&b'.') && digit_at(at + 1) {
            is_float = true;
            at += 2;
            while digit_at(at) {
                at += 1;
            }
        }
        if matches!(text.get(at), Some(b'e' | b'E')) {
            let mut exponent = at + 1;
            if matches!(text.get(exponent), Some(b'+' | b'-')) {
                exponent += 1;
            }
            if digit_at(exponent) {
                is_float = true;
                at = exponent + 1;
                while digit_at(at) {
                    at += 1;
                }
            }
        }
        self.pos = at;
        let literal = &text[start..at];
        if is_float {
            canonical::push_double(self.out, parse_f64(literal));
            return Ok(());
        }
        let digits = integer_end - start - usize::from(negative);
        if digits <= SAFE_DIGITS {
            // Inside ±2**53 and without leading zeros (the grammar): the literal is Python's
            // str(int) already, but for -0.
            self.out
                .extend_from_slice(if literal == b"-0" { b"0" } else { literal });
        } else if digits <= I64_DIGITS {
            let magnitude = literal[usize::from(negative)..]
                .iter()
                .fold(0i64, |acc, &digit| acc * 10 + i64::from(digit - b'0'));
            canonical::push_i64(self.out, if negative { -magnitude } else { magnitude });
        } else if digits > MAX_INT_DIGITS {
            return self.fault(start, Problem::IntegerTooLong { digits });
        } else {
            // float(int) rounds correctly, as does Rust's decimal parser; beyond the double
            // range both give infinity (JavaScript's Infinity, written null).
            canonical::push_double(self.out, parse_f64(literal));
        }
        Ok(())
    }

    /// Write the object that just closed in JavaScript's member order, a repeated key at its
    /// first position with its last value. Most objects are already in order and are left
    /// as written.
    fn close_object(&mut self, frame: Frame) {
        let members = &self.members[frame.first_member..];
        let sources = Sources {
            out: self.out.as_slice(),
            text: self.text,
        };
        let repeated = repeated_keys(&sources, members);
        // Keys that are two Python strings but one JavaScript string (a surrogate pair as
        // UTF-8-encoded surrogates beside its character) can only be wide ones.
        let wide = members.iter().filter(|member| member.wide).count() > 1;
        if repeated.is_none() && !wide && in_javascript_order(members) {
            self.out.push(b'}');
            self.members.truncate(frame.first_member);
            return;
        }
        // `keeper[j]`: the member whose key member j repeats (itself if first); `value[k]`:
        // the member whose value keeper k ends with.
        let keeper = repeated.unwrap_or_else(|| (0..members.len()).collect());
        let mut value: Vec<usize> = (0..members.len()).collect();
        for (position, &first) in keeper.iter().enumerate() {
            value[first] = position;
        }
        let mut keeper = keeper;
        if wide {
            one_javascript_key(&sources, members, &mut keeper, &mut value);
        }
        let mut order: Vec<usize> = (0..members.len())
            .filter(|&position| keeper[position] == position)
            .collect();
        // Stable: indices ascending, then the other keys in insertion order.
        order.sort_by_key(|&position| match members[position].index {
            Some(index) => (0, index),
            None => (1, 0),
        });
        let body = frame.out_start + 1;
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.out[body..]);
        self.out.truncate(body);
        for (count, &position) in order.iter().enumerate() {
            if count > 0 {
                self.out.push(b',');
            }
            let key = &members[position];
            let holder = &members[value[position]];
            self.out
                .extend_from_slice(&self.scratch[key.start - body..key.key_end - body]);
            self.out.push(b':');
            self.out
                .extend_from_slice(&self.scratch[holder.key_end + 1 - body..holder.end - body]);
        }
        self.out.push(b'}');
        self.members.truncate(frame.first_member);
    }
}

/// The buffers a member's key can be read back from.
struct Sources<'a> {
    out: &'a [u8],
    text: &'a [u8],
}

impl Sources<'_> {
    fn key(&self, member: &Member) -> &[u8] {
        &self.out[member.start..member.key_end]
    }

    /// Whether two members' keys are the same Python string.
    fn same_key(&self, first: &Member, second: &Member) -> bool {
        if self.key(first) != self.key(second) {
            return false;
        }
        // Equal UTF-16 units; the code points can differ only where surrogates are involved.
        !(first.wide || second.wide)
            || python_code_points(self.raw_key(first)) == python_code_points(self.raw_key(second))
    }

    fn raw_key(&self, member: &Member) -> &[u8] {
        &self.text[member.key_source.0..member.key_source.1]
    }
}

/// The members `keeper` keeps (the `dict` `json.loads` makes: one per Python string, at its
/// first place with its last value) made one per JavaScript string, as
/// `vthread._jsvalue.canonical` reads that `dict`: of the kept members whose keys have the
/// same UTF-16 units, the first keeps its place and takes the value of the last; the others
/// are dropped (their `keeper` made the first). Only asked when two keys are wide. O(n log n).
fn one_javascript_key(
    sources: &Sources<'_>,
    members: &[Member],
    keeper: &mut [usize],
    value: &mut [usize],
) {
    let kept: Vec<usize> = (0..members.len())
        .filter(|&position| keeper[position] == position && members[position].wide)
        .collect();
    let mut by_key = kept.clone();
    // Stable, so the kept members of one key stay in position order.
    by_key.sort_by(|&a, &b| sources.key(&members[a]).cmp(sources.key(&members[b])));
    for run in by_key.chunk_by(|&a, &b| sources.key(&members[a]) == sources.key(&members[b])) {
        if let [first, .., last] = *run {
            value[first] = value[last];
            for &position in &run[1..] {
                keeper[position] = first; // no longer written (its repeats' keeper only)
            }
        }
    }
}

/// For each member, the first member with the same key (itself when it is the first), or
/// None when no key repeats (the common case, found without allocating for small objects).
fn repeated_keys(sources: &Sources<'_>, members: &[Member]) -> Option<Vec<usize>> {
    if members.len() <= PAIRWISE_MEMBERS {
        let any = (1..members.len()).any(|later| {
            members[..later]
                .iter()
                .any(|earlier| sources.same_key(earlier, &members[later]))
        });
        if !any {
            return None;
        }
    }
    let mut by_key: Vec<usize> = (0..members.len()).collect();
    // Stable, so members with equal keys stay in position order.
    by_key.sort_by(|&a, &b| sources.key(&members[a]).cmp(sources.key(&members[b])));
    let mut keeper: Vec<usize> = (0..members.len()).collect();
    let mut any = false;
    for run in by_key.chunk_by(|&a, &b| sources.key(&members[a]) == sources.key(&members[b])) {
        if run.len() < 2 {
            continue;
        }
        // Equal UTF-16 units: all of the run hold surrogate units, or none does.
        if !members[run[0]].wide {
            any = true;
            run.iter().for_each(|&position| keeper[position] = run[0]);
            continue;
        }
        let mut strings: Vec<(Vec<u32>, usize)> = run
            .iter()
            .map(|&position| {
                (
                    python_code_points(sources.raw_key(&members[position])),
                    position,
                )
            })
            .collect();
        strings.sort();
        for group in strings.chunk_by(|a, b| a.0 == b.0) {
            any |= group.len() > 1;
            group
                .iter()
                .for_each(|&(_, position)| keeper[position] = group[0].1);
        }
    }
    any.then_some(keeper)
}

/// Index keys ascending and before every other key: what JavaScript enumerates already.
fn in_javascript_order(members: &[Member]) -> bool {
    let mut last_index = None;
    let mut other_seen = false;
    for member in members {
        match member.index {
            Some(index) => {
                if other_seen || last_index.is_some_and(|last| last >= index) {
                    return false;
                }
                last_index = Some(index);
            }
            None => other_seen = true,
        }
    }
    true
}

/// A key's code points as the Python `str` `json.loads` makes (only asked for keys with
/// surrogates or astral characters): `\uD83C\uDF89` escapes join into one code point,
/// UTF-8-encoded surrogates (and an escape next to one) stay two. `raw` is valid.
fn python_code_points(raw: &[u8]) -> Vec<u32> {
    let mut points = Vec::with_capacity(raw.len());
    let mut at = 0;
    while at < raw.len() {
        match raw[at] {
            b'\\' if raw[at + 1] == b'u' => {
                let unit = hex4(&raw[at + 2..at + 6]).expect("a valid escape");
                at += 6;
                if (0xD800..0xDC00).contains(&unit) && raw[at..].starts_with(b"\\u") {
                    let next = hex4(&raw[at + 2..at + 6]).expect("a valid escape");
                    if (0xDC00..0xE000).contains(&next) {
                        points.push(0x1_0000 + ((unit - 0xD800) << 10) + (next - 0xDC00));
                        at += 6;
                        continue;
                    }
                }
                points.push(unit);
            }
            b'\\' => {
                points.push(match raw[at + 1] {
                    b'b' => 0x08,
                    b'f' => 0x0C,
                    b'n' => 0x0A,
                    b'r' => 0x0D,
                    b't' => 0x09,
                    other => u32::from(other), // `"`, `\\`, `/` stand for themselves
                });
                at += 2;
            }
            byte if byte < 0x80 => {
                points.push(u32::from(byte));
                at += 1;
            }
            _ => {
                let (point, length) = decode_utf8(&raw[at..]).expect("a decoded text");
                points.push(point);
                at += length;
            }
        }
    }
    points
}

/// Four hex digits (either case) as a UTF-16 unit.
#[inline]
fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &digit| {
        let value = match digit {
            b'0'..=b'9' => digit - b'0',
            b'a'..=b'f' => digit - b'a' + 10,
            b'A'..=b'F' => digit - b'A' + 10,
            _ => return None,
        };
        Some((acc << 4) | u32::from(value))
    })
}

/// The correctly rounded double of a JSON number literal (ASCII by construction).
fn parse_f64(literal: &[u8]) -> f64 {
    std::str::from_utf8(literal)
        .ok()
        .and_then(|text| text.parse().ok())
        .expect("a JSON number literal is a Rust float literal")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8]) -> String {
        match canonical_json(input) {
            Ok(bytes) => String::from_utf8(bytes).expect("canonical text is ASCII"),
            Err(error) => panic!("{input:?} rejected: {error}"),
        }
    }

    fn reject(input: &[u8]) -> JsonError {
        match canonical_json(input) {
            Ok(bytes) => panic!(
                "{input:?} accepted as {:?}",
                String::from_utf8_lossy(&bytes)
            ),
            Err(error) => error,
        }
    }

    #[test]
    fn numbers_are_doubles_as_javascript_holds_them() {
        assert_eq!(
            read(b"[1, 1.0, -0, -0.0, 0e0, 1E+2, 2.5e-7, 1e16]"),
            "[1,1,0,0,0,100,2.5e-07,1e+16]"
        );
        assert_eq!(
            read(b"[NaN, Infinity, -Infinity, 1e400, -1e400, 1e-400]"),
            "[null,null,null,null,null,0]"
        );
        assert_eq!(read(b"9007199254740991"), "9007199254740991");
        assert_eq!(read(b"9007199254740992"), "9007199254740992.0");
        assert_eq!(read(b"-9007199254740993"), "-9007199254740992.0");
        assert_eq!(read(b"999999999999999999"), "1e+18"); // 18 digits, the i64 path
        assert_eq!(read(b"12345678901234567890"), "1.2345678901234567e+19");
        assert_eq!(
            read(b"123456789012345678901234567890"),
            "1.2345678901234568e+29"
        );
        // Halfway between two doubles: ties to even, as Python's float(int).
        assert_eq!(read(b"9007199254740993"), "9007199254740992.0");
        assert_eq!(read(b"9007199254740995"), "9007199254740996.0");
        let huge = "9".repeat(400);
        assert_eq!(read(huge.as_bytes()), "null");
        assert_eq!(
            read(format!("-{}", "1".repeat(MAX_INT_DIGITS)).as_bytes()),
            "null"
        );
    }

    #[test]
    fn integers_beyond_pythons_digit_limit_are_refused() {
        let long = "1".repeat(MAX_INT_DIGITS + 1);
        let error = reject(format!("[0, -{long}]").as_bytes());
        assert_eq!(error.offset, 4);
        assert_eq!(
            error.problem,
            Problem::IntegerTooLong {
                digits: MAX_INT_DIGITS + 1
            }
        );
        assert!(error
            .message()
            .starts_with("Exceeds the limit (4300 digits)"));
        // A float has no digit limit.
        assert_eq!(read(format!("{long}.0").as_bytes()), "null");
    }

    #[test]
    fn number_grammar_backtracks_as_the_scanner_does() {
        for (text, problem, at) in [
            (&b"01"[..], Problem::ExtraData, 1),
            (b"1.", Problem::ExtraData, 1),
            (b"1.e5", Problem::ExtraData, 1),
            (b"1e", Problem::ExtraData, 1),
            (b"1e+", Problem::ExtraData, 1),
            (b"1.5E", Problem::ExtraData, 3),
            (b"-", Problem::ExpectingValue, 0),
            (b".5", Problem::ExpectingValue, 0),
            (b"+1", Problem::ExpectingValue, 0),
            (b"[--1]", Problem::ExpectingValue, 1),
            (b"-Infinit", Problem::ExpectingValue, 0),
            (b"-NaN", Problem::ExpectingValue, 0),
            (b"nul", Problem::ExpectingValue, 0),
            (b"nulll", Problem::ExtraData, 4),
        ] {
            let error = reject(text);
            assert_eq!((error.problem, error.offset), (problem, at), "{text:?}");
        }
    }

    #[test]
    fn strings_escape_to_ascii_over_utf16_units() {
        assert_eq!(
            read(br#""\" \\ \/ \b \f \n \r \t \u0041\u00E9\u2028""#),
            r#""\" \\ / \b \f \n \r \t A\u00e9\u2028""#
        );
        // A pair written as escapes, as UTF-8, or as UTF-8-encoded surrogates: one encoding.
        let astral = read("\"🎉\"".as_bytes());
        assert_eq!(astral, r#""\ud83c\udf89""#);
        assert_eq!(read(br#""\ud83c\udf89""#), astral);
        assert_eq!(read(b"\"\xed\xa0\xbc\xed\xbe\x89\""), astral);
        // Lone surrogates are legal and distinct.
        assert_eq!(read(br#""\ud800""#), r#""\ud800""#);
        assert_eq!(read(b"\"\xed\xb0\x80x\""), r#""\udc00x""#);
        assert_eq!(read(b"\"\x7f\xc3\xa9\""), r#""\u007f\u00e9""#);
    }

    #[test]
    fn string_faults_name_their_place() {
        for (text, problem, at, message) in [
            (
                &b"\"a\x01\""[..],
                Problem::InvalidControlCharacter,
                2,
                "Invalid control character at: line 1 column 3 (char 2)",
            ),
            (
                b"\"a\nb\"",
                Problem::InvalidControlCharacter,
                2,
                "Invalid control character at: line 1 column 3 (char 2)",
            ),
            (
                b"\"\\x\"",
                Problem::InvalidEscape,
                1,
                "Invalid \\escape: line 1 column 2 (char 1)",
            ),
            (
                b"\"\\u12\"",
                Problem::InvalidUnicodeEscape,
                2,
                "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
            ),
            (
                b"\"ab\\u1234",
                Problem::InvalidUnicodeEscape,
                4,
                "Invalid \\uXXXX escape: line 1 column 5 (char 4)",
            ),
            (
                b"\"\\ud800\\uzzzz\"",
                Problem::InvalidUnicodeEscape,
                8,
                "Invalid \\uXXXX escape: line 1 column 9 (char 8)",
            ),
            (
                b"[\"ab\\",
                Problem::UnterminatedString,
                1,
                "Unterminated string starting at: line 1 column 2 (char 1)",
            ),
            (
                b"\"abc",
                Problem::UnterminatedString,
                0,
                "Unterminated string starting at: line 1 column 1 (char 0)",
            ),
        ] {
            let error = reject(text);
            assert_eq!((error.problem, error.offset), (problem, at), "{text:?}");
            assert_eq!(error.message(), message);
        }
    }

    #[test]
    fn structure_faults_match_json_loads() {
        for (text, message) in [
            (&b""[..], "Expecting value: line 1 column 1 (char 0)"),
            (b"   ", "Expecting value: line 1 column 4 (char 3)"),
            (b"[1,]", "Expecting value: line 1 column 4 (char 3)"),
            (b"[", "Expecting value: line 1 column 2 (char 1)"),
            (
                b"{",
                "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            ),
            (
                b"{\"a\":1,}",
                "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)",
            ),
            (
                b"{1:2}",
                "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            ),
            (
                b"{\"a\" 1}",
                "Expecting ':' delimiter: line 1 column 6 (char 5)",
            ),
            (
                b"{\"a\":1 \"b\"}",
                "Expecting ',' delimiter: line 1 column 8 (char 7)",
            ),
            (
                b"[1 2]",
                "Expecting ',' delimiter: line 1 column 4 (char 3)",
            ),
            (b"[1}", "Expecting ',' delimiter: line 1 column 3 (char 2)"),
            (b"[1] x", "Extra data: line 1 column 5 (char 4)"),
            (b"\x0b1", "Expecting value: line 1 column 1 (char 0)"),
            (
                b"\n\n  [1,\n  x]",
                "Expecting value: line 4 column 3 (char 10)",
            ),
            // Columns and chars count code points, not bytes.
            (
                "[\"é\", é]".as_bytes(),
                "Expecting value: line 1 column 7 (char 6)",
            ),
            (
                "é\né".as_bytes(),
                "Expecting value: line 1 column 1 (char 0)",
            ),
        ] {
            assert_eq!(reject(text).message(), message, "{text:?}");
        }
        assert_eq!(reject("[\"é\", é]".as_bytes()).offset, 7); // the byte offset
    }

    #[test]
    fn undecodable_bytes_win_over_earlier_syntax_faults() {
        for (text, at, message) in [
            (
                &b"\"\xff\""[..],
                1,
                "'utf-8' codec can't decode byte 0xff in position 1: invalid start byte",
            ),
            (
                b"[1,] \xff",
                5,
                "'utf-8' codec can't decode byte 0xff in position 5: invalid start byte",
            ),
            (
                b"\"\x80\"",
                1,
                "'utf-8' codec can't decode byte 0x80 in position 1: invalid start byte",
            ),
            (
                b"\"\xc0\x80\"",
                1,
                "'utf-8' codec can't decode byte 0xc0 in position 1: invalid start byte",
            ),
            (
                b"\"\xe2\x82",
                1,
                "'utf-8' codec can't decode bytes in position 1-2: unexpected end of data",
            ),
            (
                b"\"\xe2\x82\"",
                1,
                "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte",
            ),
            (
                b"\"\xe0\x80\x80\"",
                1,
                "'utf-8' codec can't decode byte 0xe0 in position 1: invalid continuation byte",
            ),
            (
                b"\"\xed\xa0\"",
                1,
                "'utf-8' codec can't decode byte 0xed in position 1: invalid continuation byte",
            ),
            (
                b"\"\xf0\x9f\"",
                1,
                "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte",
            ),
            (
                b"\"\xf0\x9f\x8e",
                1,
                "'utf-8' codec can't decode bytes in position 1-3: unexpected end of data",
            ),
            (
                b"\"\xf4\x90\x80\x80\"",
                1,
                "'utf-8' codec can't decode byte 0xf4 in position 1: invalid continuation byte",
            ),
            // Positions count from after a byte-order mark; the offset counts from the start.
            (
                b"\xef\xbb\xbf\xff",
                3,
                "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
            ),
        ] {
            let error = reject(text);
            assert_eq!(error.message(), message, "{text:?}");
            assert_eq!(error.offset, at, "{text:?}");
        }
    }

    #[test]
    fn a_utf8_byte_order_mark_is_skipped_once() {
        assert_eq!(read(b"\xef\xbb\xbf[1]"), "[1]");
        assert_eq!(read(b"\"\xef\xbb\xbf\""), r#""\ufeff""#);
        let error = reject(b"\xef\xbb\xbf\n\n[x]");
        assert_eq!(error.message(), "Expecting value: line 3 column 2 (char 3)");
        assert_eq!(error.offset, 6);
        assert_eq!(
            reject(b"\xef\xbb\xbf\xef\xbb\xbf1").problem,
            Problem::ExpectingValue
        );
        assert_eq!(reject(b" \xef\xbb\xbf[1]").problem, Problem::ExpectingValue);
    }

    #[test]
    fn utf16_and_utf32_texts_are_declined_by_name() {
        for (text, codec) in [
            (&b"5\x00"[..], "utf-16-le"),
            (b"\x005", "utf-16-be"),
            (b"\xff\xfe5\x00", "utf-16"),
            (b"\xfe\xff\x005", "utf-16"),
            (b"\xff\xfe\x00\x005\x00\x00\x00", "utf-32"),
            (b"\x00\x00\x005", "utf-32-be"),
            (b"5\x00\x00\x00", "utf-32-le"),
            (b"[\x001\x00]\x00", "utf-16-le"),
        ] {
            assert_eq!(
                reject(text).problem,
                Problem::UnsupportedEncoding { codec },
                "{text:?}"
            );
        }
        // Three bytes are never UTF-16 to json.loads: a NUL is then just a bad character.
        assert_eq!(reject(b"\x00ab").problem, Problem::ExpectingValue);
    }

    #[test]
    fn keys_come_in_javascript_order() {
        assert_eq!(read(br#"{"b":1,"a":2}"#), r#"{"b":1,"a":2}"#);
        assert_eq!(
            read(br#"{"b":1,"10":2,"2":3,"01":4,"4294967295":5,"4294967294":6,"-1":7}"#),
            r#"{"2":3,"10":2,"4294967294":6,"b":1,"01":4,"4294967295":5,"-1":7}"#
        );
        // An escaped digit is a digit: "\u0031" is the index 1.
        assert_eq!(read(br#"{"b":0,"\u0031":1}"#), r#"{"1":1,"b":0}"#);
        // Nested reordering, and an ordered object inside a reordered one.
        assert_eq!(
            read(br#"{"x":{"y":1,"0":[{"1":2,"0":3}]},"5":{"0":1,"a":2}}"#),
            r#"{"5":{"0":1,"a":2},"x":{"0":[{"0":3,"1":2}],"y":1}}"#
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_last_value() {
        assert_eq!(read(br#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
        assert_eq!(
            read(br#"{"a":1,"\u0061":2,"b":3,"a":{"c":4}}"#),
            r#"{"a":{"c":4},"b":3}"#
        );
        assert_eq!(read(br#"{"b":1,"1":2,"b":3,"1":4}"#), r#"{"1":4,"b":3}"#);
        assert_eq!(read(br#"{"a/b":1,"a\/b":2}"#), r#"{"a/b":2}"#);
        // The escaped pair is the astral character...
        assert_eq!(
            read("{\"🎉\":1,\"\\ud83c\\udf89\":2}".as_bytes()),
            r#"{"\ud83c\udf89":2}"#
        );
        // ...UTF-8-encoded surrogates (or one escape beside one) are two other code points
        // to json.loads, whose dict then holds one JavaScript property twice: one member, at
        // the first one's place, with the value of the one later in the dict.
        assert_eq!(
            read(
                b"{\"\xed\xa0\xbc\xed\xbe\x89\":1,\"\\ud83c\\udf89\":2,\"\\ud83c\xed\xbe\x89\":3}"
            ),
            r#"{"\ud83c\udf89":2}"#
        );
        assert_eq!(
            read(b"{\"a\":[],\"\xf0\x9f\x8e\x89\":null,\"\xed\xa0\xbc\xed\xbe\x89\":{},\"\xf0\x9f\x8e\x89\":[]}"),
            r#"{"a":[],"\ud83c\udf89":{}}"#
        );
    }

    #[test]
    fn large_objects_find_repeated_keys_by_sorting() {
        let mut text = String::from("{");
        for key in (0..40).rev() {
            text.push_str(&format!("\"k{key}\":{key},"));
        }
        text.push_str("\"k7\":\"last\",\"3\":0}");
        let read = read(text.as_bytes());
        assert!(read.starts_with(r#"{"3":0,"k39":39,"#), "{read}");
        assert!(read.contains(r#""k7":"last""#) && !read.contains(r#""k7":7"#));
        assert_eq!(read.matches("\"k").count(), 40);
        // Past the pairwise limit, with keys that are equal UTF-16 but not equal Python
        // strings: the escaped pair and the character are one Python key, the UTF-8-encoded
        // surrogates another, and the two one JavaScript property.
        let mut raw = b"{".to_vec();
        for key in 0..20 {
            raw.extend_from_slice(format!("\"{key}x\":0,").as_bytes());
        }
        raw.extend_from_slice(b"\"\\ud83c\\udf89\":1,\"\xed\xa0\xbc\xed\xbe\x89\":2,");
        raw.extend_from_slice("\"\u{1F389}\":3,".as_bytes());
        raw.extend_from_slice(b"\"\xed\xa0\xbc\xed\xbe\x89\":4}");
        let read = String::from_utf8(canonical_json(&raw).unwrap()).unwrap();
        assert!(read.ends_with(r#""19x":0,"\ud83c\udf89":4}"#), "{read}");
    }

    #[test]
    fn nesting_is_bounded_without_recursion() {
        let at_limit = format!("{}{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
        assert_eq!(read(at_limit.as_bytes()), at_limit);
        let objects = format!(
            "{}1{}",
            "{\"a\":".repeat(MAX_NESTING),
            "}".repeat(MAX_NESTING)
        );
        assert_eq!(read(objects.as_bytes()), objects);
        let error = reject(
            format!(
                "{}{}",
                "[".repeat(MAX_NESTING + 1),
                "]".repeat(MAX_NESTING + 1)
            )
            .as_bytes(),
        );
        assert_eq!(error.problem, Problem::TooDeep { object: false });
        assert_eq!(error.offset, MAX_NESTING);
        assert_eq!(
            error.message(),
            "maximum recursion depth exceeded while decoding a JSON array from a unicode string"
        );
        let error = reject(format!("{}{{", "[".repeat(MAX_NESTING)).as_bytes());
        assert_eq!(error.problem, Problem::TooDeep { object: true });
        // Far deeper than any stack would take: still an error, never a crash.
        assert_eq!(
            reject("[".repeat(10_000_000).as_bytes()).problem,
            Problem::TooDeep { object: false }
        );
    }

    #[test]
    fn a_reader_appends_and_leaves_its_output_alone_on_error() {
        let mut reader = Reader::new();
        let mut out = b"x".to_vec();
        reader
            .push_canonical(&mut out, br#"{"b":1,"0":2}"#)
            .unwrap();
        assert!(reader
            .push_canonical(&mut out, br#"{"b":1,"0":[2,"#)
            .is_err());
        reader.push_canonical(&mut out, b" [1.0] ").unwrap();
        assert_eq!(out, br#"x{"0":2,"b":1}[1]"#);
    }

    #[test]
    fn the_eight_byte_scan_stops_where_the_byte_scan_stops() {
        for length in [0, 1, 7, 8, 9, 16, 24] {
            for position in 0..length {
                for byte in 0..=255u8 {
                    let mut text = vec![b'a'; length];
                    text[position] = byte;
                    let expected = (0..length)
                        .find(|&at| !PLAIN[usize::from(text[at])])
                        .unwrap_or(length);
                    for start in 0..=position {
                        assert_eq!(plain_run_end(&text, start), expected.max(start));
                    }
                }
            }
        }
    }

    #[test]
    fn python_code_points_join_only_escaped_pairs() {
        assert_eq!(python_code_points(br"\ud83c\udf89"), [0x1F389]);
        assert_eq!(
            python_code_points(b"\xed\xa0\xbc\xed\xbe\x89"),
            [0xD83C, 0xDF89]
        );
        assert_eq!(python_code_points(b"\\ud83c\xed\xbe\x89"), [0xD83C, 0xDF89]);
        assert_eq!(
            python_code_points(br"\ud83c\u0041\n\/"),
            [0xD83C, 0x41, 0x0A, 0x2F]
        );
    }

    #[test]
    fn decoding_faults_are_cpythons() {
        assert_eq!(first_utf8_fault("é🎉".as_bytes()), None);
        assert_eq!(first_utf8_fault(b"a\xed\xa0\x80\xed\xbf\xbfb"), None);
        assert_eq!(
            first_utf8_fault(b"\xed\xa0\x80\xff"),
            Some((3, 1, Utf8Fault::InvalidStartByte))
        );
        assert_eq!(
            first_utf8_fault(b"ab\xe2"),
            Some((2, 1, Utf8Fault::UnexpectedEndOfData))
        );
        assert_eq!(
            first_utf8_fault(b"\xf0\x9f\x8ex"),
            Some((0, 3, Utf8Fault::InvalidContinuationByte))
        );
    }
}
