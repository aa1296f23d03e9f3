//! A looping thread's attribution read from a file's bytes: `vthread.scan.attribute` restated
//! over a parsed line, so that `vthread scan` writes a loop's record (where it starts as a
//! person counts it, its signature, its excerpt, its tokens) without Python parsing the line
//! again.
//!
//! The verdict itself is not decided here: NumPy decides it over the columns, and this module
//! is handed each looping thread's heuristic, start, period and repetitions. What it computes
//! is defined by the Python twin, step for step: the signature hashes Python's `repr` of the
//! loop's parts (so `repr` of a `str` is restated, with `str.isprintable` tabled from the
//! interpreter), a payload in an excerpt is what `json.dumps` writes of it (floats as `repr`
//! writes them; media a result holds inline as `_attribution._media_placeholder` shows
//! them), and the loop's tokens are `math.fsum`'s total (CPython's algorithm). A line
//! always parses here (the core read it before); a row this module cannot restate would be
//! declined to Python, never guessed.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::adapters::{is_python_space, TEXT_PARTS};
use crate::canonical;
use crate::columns::parse_activity;
use crate::document::Value;
use crate::node::{Key, Node};
use crate::objects;
use crate::textrun::{self, TAIL_UNITS};
use crate::unicode;

/// The heuristics' codes (`vthread._heuristics`).
pub const SUFFIX: u8 = 1;
pub const ACTIVITY_TAIL: u8 = 2;
pub const RESULT_RUN: u8 = 3;
pub const TEXT_RUN: u8 = 4;

/// An excerpt's length limit in code points, its ellipsis included (`EXCERPT_CHARS`).
const EXCERPT_CHARS: usize = 240;
/// `_attribution._NAME_CHARS`: a name in an excerpt (a tool's, a message's type, a media type,
/// a file name) is cut to this many code points, its ellipsis included.
const NAME_CHARS: usize = 40;
/// Each rendered message or payload is cut to this many code points first (`_PART_CHARS`).
const PART_CHARS: usize = 100;
const PART_SEPARATOR: &str = " | ";
/// `_attribution._ARROW`: between a tool call and its result.
const ARROW: &str = " -> ";
const ELLIPSIS: char = '\u{2026}';
/// `_attribution._PART_BREAK`: between a result's parts, as the adapters join their texts.
const PART_BREAK: &str = "\n";
/// `_messages.ABSENT`: an absent payload in an activity's parts.
const ABSENT: &str = "-";

/// A loop as the heuristics found it.
#[derive(Clone, Copy, Debug)]
pub struct Loop {
    pub code: u8,
    pub begin: usize,
    pub period: usize,
    pub repetitions: usize,
}

/// A loop's record fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Attributed {
    pub loop_start: usize,
    pub period: usize,
    pub repetitions: usize,
    pub signature: u64,
    pub excerpt: String,
    /// NaN when no message of the loop carries a usage figure.
    pub loop_tokens: f64,
}

/// A loop this module cannot attribute as Python would (a span outside the thread, a
/// heuristic that cannot have fired on it): Python's reading decides.
#[derive(Debug, PartialEq, Eq)]
pub struct Declined;

impl From<PyErr> for Declined {
    fn from(_: PyErr) -> Self {
        Declined // a value Python's reading raises on: Python says how
    }
}

/// What attribution reads of a value beyond the heuristics' `Node` view: its text, its
/// JSON, its token figure. A value Python would read otherwise than by its content (a `str`
/// subclass, a lone surrogate, a type JSON has no word for) declines the row.
pub trait Readable: Node + Clone {
    /// The string's content; None for a value that is no string.
    fn string(&self) -> Result<Option<String>, Declined>;
    /// Append what `json.dumps(value, ensure_ascii=False, separators=(",", ":"),
    /// allow_nan=False)` writes; false where it raises `ValueError` (a non-finite number).
    fn push_json(&self, out: &mut String, depth: usize) -> Result<bool, Declined>;
    /// `usage.tokens` as a figure that counts (`_messages.usage_tokens`), None when it
    /// does not count.
    fn figure(&self) -> Result<Option<f64>, Declined>;
    /// The items of a list (a Python `list` or `tuple`), None for a value that is none.
    fn items(&self) -> Result<Option<Vec<Self>>, Declined>;
    /// `value.get(name)` of a `dict`, None for a value that is no mapping.
    fn member(&self, name: &str) -> Result<Option<Self>, Declined>;
}

/// Nesting beyond which a Python payload is left to Python (`json.dumps` raises
/// `RecursionError` somewhere deeper, and a cycle never ends).
const JSON_DEPTH: usize = 200;

/// A non-negative integer token figure, counted as the double JavaScript reads it as (the
/// nearest, ties to even: `as` rounds so, as Python's `float()` and `JSON.parse` do).
pub fn integer_figure(integer: i64) -> Option<f64> {
    (integer >= 0).then_some(integer as f64)
}

/// A float token figure, counted when finite and not negative.
pub fn float_figure(double: f64) -> Option<f64> {
    (double.is_finite() && double >= 0.0).then_some(double)
}

impl Readable for Value<'_> {
    fn string(&self) -> Result<Option<String>, Declined> {
        Ok(self.text().map(std::borrow::Cow::into_owned))
    }

    // The tape's nesting is bounded (`MAX_TAPE_DEPTH`): no depth to count.
    fn push_json(&self, out: &mut String, _depth: usize) -> Result<bool, Declined> {
        if self.is_null() {
            out.push_str("null");
        } else if let Some(flag) = self.as_bool() {
            out.push_str(if flag { "true" } else { "false" });
        } else if self.is_number() {
            match (self.is_integer(), self.as_i64()) {
                (true, Some(integer)) => out.push_str(&integer.to_string()),
                _ => return Ok(push_float(self.as_f64().unwrap_or(f64::NAN), out)),
            }
        } else if let Some(text) = self.text() {
            push_json_string(&text, out);
        } else if self.is_array() {
            out.push('[');
            for (position, child) in self.children().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                if !child.push_json(out, 0)? {
                    return Ok(false);
                }
            }
            out.push(']');
        } else {
            out.push('{');
            for (position, (key, child)) in self.members().enumerate() {
                if position > 0 {
                    out.push(',');
                }
                push_json_string(&String::from_utf8_lossy(key), out);
                out.push(':');
                if !child.push_json(out, 0)? {
                    return Ok(false);
                }
            }
            out.push('}');
        }
        Ok(true)
    }

    fn figure(&self) -> Result<Option<f64>, Declined> {
        if !self.is_number() {
            return Ok(None); // null, booleans, strings and containers are no figure
        }
        Ok(match (self.is_integer(), self.as_i64()) {
            (true, Some(integer)) => integer_figure(integer),
            _ => float_figure(self.as_f64().unwrap_or(f64::NAN)),
        })
    }

    fn items(&self) -> Result<Option<Vec<Self>>, Declined> {
        Ok(self.is_array().then(|| self.children().collect()))
    }

    fn member(&self, name: &str) -> Result<Option<Self>, Declined> {
        Ok(self.get(name))
    }
}

impl Readable for Bound<'_, PyAny> {
    fn string(&self) -> Result<Option<String>, Declined> {
        if let Ok(text) = self.cast_exact::<PyString>() {
            return Ok(Some(text.to_str()?.to_owned())); // a lone surrogate raises
        }
        if self.is_instance_of::<PyString>() {
            return Err(Declined); // a subclass: str() and formatting may say otherwise
        }
        Ok(None)
    }

    fn push_json(&self, out: &mut String, depth: usize) -> Result<bool, Declined> {
        if depth > JSON_DEPTH {
            return Err(Declined);
        }
        if self.is_none() {
            out.push_str("null");
        } else if let Ok(flag) = self.cast_exact::<PyBool>() {
            out.push_str(if flag.is_true() { "true" } else { "false" });
        } else if self.is_exact_instance_of::<PyInt>() {
            out.push_str(self.str()?.to_str()?);
        } else if let Ok(double) = self.cast_exact::<PyFloat>() {
            return Ok(push_float(double.value(), out));
        } else if let Some(text) = self.string()? {
            push_json_string(&text, out);
        } else if self.is_exact_instance_of::<PyList>() || self.is_exact_instance_of::<PyTuple>() {
            out.push('[');
            for (position, child) in self.try_iter()?.enumerate() {
                if position > 0 {
                    out.push(',');
                }
                if !child?.push_json(out, depth + 1)? {
                    return Ok(false);
                }
            }
            out.push(']');
        } else if let Ok(dict) = self.cast_exact::<PyDict>() {
            out.push('{');
            let mut first = true;
            let mut complete = true;
            let mut refused = false;
            objects::for_each_member(dict, |key, value| {
                let Ok(Some(key)) = key.string() else {
                    refused = true; // json.dumps writes other keys its own way
                    return Ok(false);
                };
                if !first {
                    out.push(',');
                }
                first = false;
                push_json_string(&key, out);
                out.push(':');
                match value.push_json(out, depth + 1) {
                    Ok(true) => Ok(true),
                    Ok(false) => {
                        complete = false;
                        Ok(false)
                    }
                    Err(Declined) => {
                        refused = true;
                        Ok(false)
                    }
                }
            })?;
            if refused {
                return Err(Declined);
            }
            if !complete {
                return Ok(false);
            }
            out.push('}');
        } else {
            return Err(Declined); // json.dumps raises TypeError: Python's fallback decides
        }
        Ok(true)
    }

    fn figure(&self) -> Result<Option<f64>, Declined> {
        if self.is_instance_of::<PyBool>() {
            return Ok(None);
        }
        if let Ok(double) = self.cast::<PyFloat>() {
            return Ok(float_figure(double.value()));
        }
        if self.is_instance_of::<PyInt>() {
            // An integer beyond 64 bits is Python's to read (as `loop_tokens` leaves it).
            return Ok(integer_figure(self.extract::<i64>()?));
        }
        if self.is_none()
            || self.is_instance_of::<PyString>()
            || self.is_instance_of::<PyList>()
            || self.is_instance_of::<PyTuple>()
            || objects::is_mapping(self)?
        {
            return Ok(None);
        }
        Err(Declined)
    }

    fn items(&self) -> Result<Option<Vec<Self>>, Declined> {
        if self.is_exact_instance_of::<PyList>() || self.is_exact_instance_of::<PyTuple>() {
            return Ok(Some(self.try_iter()?.collect::<PyResult<_>>()?));
        }
        if self.is_instance_of::<PyList>() || self.is_instance_of::<PyTuple>() {
            return Err(Declined); // a subclass may iterate otherwise than json.dumps reads it
        }
        Ok(None)
    }

    fn member(&self, name: &str) -> Result<Option<Self>, Declined> {
        if let Ok(dict) = self.cast_exact::<PyDict>() {
            return Ok(dict.get_item(name)?);
        }
        if objects::is_mapping(self)? {
            return Err(Declined); // a subclass's or another mapping's `get` is its own
        }
        Ok(None)
    }
}

/// A float as `json.dumps` writes it (`float.__repr__`); false for a non-finite one, which
/// it refuses.
fn push_float(double: f64, out: &mut String) -> bool {
    if !double.is_finite() {
        return false;
    }
    let mut written = Vec::new();
    canonical::push_python_repr(&mut written, double);
    out.push_str(std::str::from_utf8(&written).expect("a float's repr is ASCII"));
    true
}

/// `attribute` for one thread: `messages` its native messages, `found` its loop.
pub fn attribute<N: Readable>(messages: &[N], found: Loop) -> Result<Attributed, Declined> {
    let length = messages.len();
    let mut keys = Keys {
        messages,
        spans: Vec::new(),
        bytes: Vec::new(),
        scratch: Vec::new(),
    };
    let (begin, period, repetitions) = if found.code == SUFFIX {
        let covered = found
            .period
            .checked_mul(found.repetitions)
            .ok_or(Declined)?;
        if found.period == 0 || covered > length {
            return Err(Declined);
        }
        person_span(&mut keys, found.period, found.repetitions)?
    } else {
        (found.begin, found.period, found.repetitions)
    };
    if begin >= length {
        return Err(Declined);
    }
    let (parts, excerpt) = match found.code {
        SUFFIX => (
            suffix_parts(&mut keys, length - period)?,
            rendered_excerpt(&messages[begin..(begin + period).min(length)])?,
        ),
        ACTIVITY_TAIL => tail_parts_and_excerpt(&messages[begin..])?,
        RESULT_RUN => result_parts_and_excerpt(messages)?,
        TEXT_RUN => {
            let text = messages[begin].field(Key::Text)?.ok_or(Declined)?;
            text_parts_and_excerpt(&text.string()?.ok_or(Declined)?)
        }
        _ => return Err(Declined),
    };
    Ok(Attributed {
        loop_start: begin,
        period,
        repetitions,
        signature: xxh3_64_with_seed(parts.as_bytes(), u64::from(found.code)),
        excerpt,
        loop_tokens: loop_tokens(&messages[begin..])?,
    })
}

// ------------------------------------------------------------------------- a person's span

/// A value's canonical encoding.
fn encoded<N: Node>(value: &N) -> Result<Vec<u8>, Declined> {
    let mut out = Vec::new();
    value.push_canonical(&mut out)?;
    Ok(out)
}

/// Write the canonical (type, text, meta-or-absent) of a message into `out` (cleared first),
/// as the suffix pass encodes it (`suffix::push_exact_key`): `scan._message_key`'s equality,
/// and the bytes its fingerprint hashes.
fn push_message_key<N: Node>(message: &N, out: &mut Vec<u8>) -> Result<(), Declined> {
    out.clear();
    crate::suffix::push_exact_key(message, out)?;
    Ok(())
}

/// No key read yet for a message in `Keys::spans`.
const UNREAD: (usize, usize) = (usize::MAX, 0);

/// `length` spans, none read; Declined when the memory cannot be had (see `Keys::key`).
fn unread_spans(length: usize) -> Result<Vec<(usize, usize)>, Declined> {
    let mut spans = Vec::new();
    spans.try_reserve_exact(length).map_err(|_| Declined)?;
    spans.resize(length, UNREAD);
    Ok(spans)
}

/// The exact keys of a thread's messages, each encoded when first read (`_KeysOnDemand`)
/// into one buffer: comparing two is comparing their bytes, with no table to probe (a long
/// period reads half a million distinct keys).
struct Keys<'m, N> {
    messages: &'m [N],
    spans: Vec<(usize, usize)>,
    bytes: Vec<u8>,
    scratch: Vec<u8>,
}

impl<N: Node> Keys<'_, N> {
    fn key(&mut self, index: usize) -> Result<&[u8], Declined> {
        if self.spans[index] == UNREAD {
            push_message_key(&self.messages[index], &mut self.scratch)?;
            let start = self.bytes.len();
            // The keys of a thread of millions of messages fill hundreds of megabytes: when
            // that cannot be had, Python attributes the line (and says it is out of memory).
            self.bytes
                .try_reserve(self.scratch.len())
                .map_err(|_| Declined)?;
            self.bytes.extend_from_slice(&self.scratch);
            self.spans[index] = (start, self.bytes.len());
        }
        let (start, end) = self.spans[index];
        Ok(&self.bytes[start..end])
    }

    fn equal(&mut self, first: usize, second: usize) -> Result<bool, Declined> {
        self.key(first)?;
        self.key(second)?;
        let ((a, b), (c, d)) = (self.spans[first], self.spans[second]);
        Ok(self.bytes[a..b] == self.bytes[c..d])
    }

    /// The message's fingerprint (`vthread.message_fingerprint`).
    fn fingerprint(&mut self, index: usize) -> Result<u64, Declined> {
        Ok(xxh3_64(self.key(index)?))
    }
}

/// `_attribution.person_span`: (start, smallest block, whole blocks) of a repeated suffix.
fn person_span<N: Node>(
    keys: &mut Keys<'_, N>,
    period: usize,
    repetitions: usize,
) -> Result<(usize, usize, usize), Declined> {
    let length = keys.messages.len();
    keys.spans = unread_spans(length)?;
    let mut begin = length - period * repetitions;
    let block = smallest_period(keys, begin)?;
    while begin > 0 && keys.equal(begin - 1, begin - 1 + block)? {
        begin -= 1;
    }
    Ok((begin, block, (length - begin) / block))
}

/// `_attribution.smallest_period` of the keys from `from` to the end (Knuth-Morris-Pratt).
fn smallest_period<N: Node>(keys: &mut Keys<'_, N>, from: usize) -> Result<usize, Declined> {
    let count = keys.spans.len() - from;
    if count == 0 {
        return Ok(0);
    }
    let mut border = vec![0usize; count];
    let mut matched = 0;
    for i in 1..count {
        while matched > 0 && !keys.equal(from + i, from + matched)? {
            matched = border[matched - 1];
        }
        if keys.equal(from + i, from + matched)? {
            matched += 1;
        }
        border[i] = matched;
    }
    Ok(count - border[count - 1])
}

/// `scan._signature_parts` of a suffix: the fingerprints of the messages from `from` to
/// the end (the block, its keys already read by the span) at their least rotation, as `repr`
/// writes the list.
fn suffix_parts<N: Node>(keys: &mut Keys<'_, N>, from: usize) -> Result<String, Declined> {
    let prints: Vec<u64> = (from..keys.messages.len())
        .map(|index| keys.fingerprint(index))
        .collect::<Result<_, Declined>>()?;
    let first = least_rotation(&prints);
    let rotated = prints[first..].iter().chain(&prints[..first]);
    let items: Vec<String> = rotated.map(u64::to_string).collect();
    Ok(format!("[{}]", items.join(", ")))
}

/// `scan.least_rotation` (Booth's algorithm), step for step.
pub fn least_rotation(items: &[u64]) -> usize {
    let doubled: Vec<u64> = items.iter().chain(items).copied().collect();
    let mut failure = vec![-1isize; doubled.len()];
    let mut least = 0usize;
    for j in 1..doubled.len() {
        let value = doubled[j];
        let mut i = failure[j - least - 1];
        while i != -1 && value != doubled[least + i as usize + 1] {
            if value < doubled[least + i as usize + 1] {
                least = j - i as usize - 1;
            }
            i = failure[i as usize];
        }
        if value != doubled[(least as isize + i + 1) as usize] {
            if value < doubled[least] {
                least = j;
            }
            failure[j - least] = -1;
        } else {
            failure[j - least] = i + 1;
        }
    }
    least
}

// ------------------------------------------------------------------------ tool activities

/// A well-formed activity as `_messages.Activity` holds it: kind, name, and the payloads'
/// canonical texts (or `ABSENT`).
type ActivityParts = [String; 4];

fn activity_parts<N: Readable>(message: &N) -> Result<Option<ActivityParts>, Declined> {
    let Some(activity) = parse_activity(message)? else {
        return Ok(None);
    };
    let canonical_text = |payload: Option<N>| -> Result<String, Declined> {
        Ok(match payload {
            Some(value) => String::from_utf8(encoded(&value)?).expect("canonical text is ASCII"),
            None => ABSENT.to_owned(),
        })
    };
    Ok(Some([
        activity.kind.string()?.ok_or(Declined)?,
        activity.name.string()?.ok_or(Declined)?,
        canonical_text(activity.arguments)?,
        canonical_text(activity.result)?,
    ]))
}

/// An activity tail's signature parts (its distinct activities, sorted, as `repr` writes
/// the list) and excerpt (each distinct request, else each distinct activity, in order of
/// first appearance).
fn tail_parts_and_excerpt<N: Readable>(tail: &[N]) -> Result<(String, String), Declined> {
    let mut seen: HashMap<ActivityParts, ()> = HashMap::new();
    let mut firsts: Vec<(bool, &N)> = Vec::new();
    for message in tail {
        let parts = activity_parts(message)?.ok_or(Declined)?;
        let is_request = parts[0] == "request";
        if seen.insert(parts, ()).is_none() {
            firsts.push((is_request, message));
        }
    }
    let mut distinct: Vec<ActivityParts> = seen.into_keys().collect();
    distinct.sort();
    let items: Vec<String> = distinct
        .iter()
        .map(|parts| tuple_repr(parts))
        .collect::<Result<_, _>>()?;
    let mut shown: Vec<&N> = firsts
        .iter()
        .filter(|(is_request, _)| *is_request)
        .map(|(_, message)| *message)
        .collect();
    if shown.is_empty() {
        shown = firsts.iter().map(|(_, message)| *message).collect();
    }
    Ok((format!("[{}]", items.join(", ")), rendered_excerpt(shown)?))
}

/// A result run's signature parts (the newest settled response's name and payloads, as
/// `repr` writes the tuple) and excerpt (that message).
fn result_parts_and_excerpt<N: Readable>(messages: &[N]) -> Result<(String, String), Declined> {
    for message in messages.iter().rev() {
        let Some(parts) = activity_parts(message)? else {
            continue;
        };
        if parts[0] == "response" && !parts[1].starts_with('_') && parts[3] != ABSENT {
            let [_, name, arguments, result] = parts;
            let signature = tuple_repr(&[name, arguments, result])?;
            return Ok((signature, joined(vec![render_message(message)?])));
        }
    }
    Err(Declined)
}

// ------------------------------------------------------------------------------ text runs

/// A text run's signature parts (the sorted distinct units of the text's tail, as `repr`
/// writes the list) and excerpt (the tail from its first repeated unit, else the text).
fn text_parts_and_excerpt(text: &str) -> (String, String) {
    // Only the last TAIL_UNITS characters are decoded (a runaway text of hundreds of
    // megabytes took four bytes a character here): they hold the tail the check reads.
    let points: Vec<u32> = textrun::last_characters(text, TAIL_UNITS)
        .chars()
        .map(u32::from)
        .collect();
    let tail = utf16_tail(&points, TAIL_UNITS);
    let mut units: Vec<Vec<u8>> = Vec::new();
    let mut starts: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut repeated_from = tail.len() + 1;
    let mut position = 0;
    loop {
        let end = tail[position..]
            .iter()
            .position(|&c| textrun::is_separator(c))
            .map_or(tail.len(), |offset| position + offset);
        let mut unit = Vec::new();
        if textrun::push_unit(&tail[position..end], &mut unit) {
            let start = *starts.entry(unit.clone()).or_insert(position);
            if start != position {
                repeated_from = repeated_from.min(start);
            }
            units.push(unit);
        }
        if end == tail.len() {
            break;
        }
        position = end;
        while position < tail.len() && textrun::is_separator(tail[position]) {
            position += 1;
        }
    }
    units.sort();
    units.dedup();
    let items: Vec<String> = units
        .iter()
        .map(|unit| str_repr(std::str::from_utf8(unit).expect("a unit is ASCII")))
        .collect::<Result<_, _>>()
        .expect("ASCII is assigned");
    let shown = if repeated_from <= tail.len() {
        readable(&tail[repeated_from..])
    } else {
        text.to_owned()
    };
    (
        format!("[{}]", items.join(", ")),
        joined(vec![one_line(&shown, PART_CHARS)]),
    )
}

/// `_jsvalue.utf16_tail`: the last `units` UTF-16 units of a text's code points; a pair cut
/// by the boundary leaves its low surrogate first.
fn utf16_tail(points: &[u32], units: usize) -> Vec<u32> {
    let mut used = 0;
    let mut taken = 0;
    for &c in points.iter().rev() {
        let width = if c > 0xFFFF { 2 } else { 1 };
        if used + width > units {
            break;
        }
        used += width;
        taken += 1;
    }
    let start = points.len() - taken;
    let mut tail = Vec::with_capacity(taken + 1);
    if start > 0 && used < units {
        // Only an astral code point can fail to fit in the one unit left: its low half.
        tail.push(0xDC00 + ((points[start - 1] - 0x10000) & 0x3FF));
    }
    tail.extend_from_slice(&points[start..]);
    tail
}

/// Code points as a readable string: a lone surrogate becomes U+FFFD, as an excerpt's does.
fn readable(points: &[u32]) -> String {
    points
        .iter()
        .map(|&c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

// ---------------------------------------------------------------------------- the excerpt

/// `_attribution._one_line`: whitespace runs (`str.isspace`) made one space, the ends
/// trimmed, cut to `limit` code points (an ellipsis last). Stops reading once past the limit.
fn one_line(text: &str, limit: usize) -> String {
    let mut flat: Vec<char> = Vec::new();
    let mut space_pending = false;
    for c in text.chars() {
        if is_python_space(c) {
            space_pending = !flat.is_empty();
            continue;
        }
        if space_pending {
            flat.push(' ');
            space_pending = false;
        }
        flat.push(c);
        if flat.len() > limit {
            break;
        }
    }
    if flat.len() <= limit {
        return flat.into_iter().collect();
    }
    let mut cut: String = flat[..limit.saturating_sub(1)].iter().collect();
    cut.push(ELLIPSIS);
    cut
}

/// `_joined` of `_attribution.rendered` (each message rendered, a tool request followed by
/// its own response shown once, as the response), rendering only until the joined text is
/// sure to be cut: a block of 500,000 messages shows its first few. (A request folded away
/// is replaced by a longer part that begins with it, so a text past the cut stays past it,
/// with the same first characters.)
fn rendered_excerpt<'m, N: Readable + 'm>(
    messages: impl IntoIterator<Item = &'m N>,
) -> Result<String, Declined> {
    let mut parts: Vec<String> = Vec::new();
    let mut chars = 0;
    let mut after_request = false; // whether the last part is a tool request's
    for message in messages {
        let (part, kind) = render_part(message)?;
        let folds = after_request && kind == Part::Response;
        after_request = kind == Part::Request;
        if let Some(last) = parts.last().filter(|_| folds) {
            if part.starts_with(last.as_str()) && part[last.len()..].starts_with(ARROW) {
                chars -= last.chars().count()
                    + if parts.len() > 1 {
                        PART_SEPARATOR.len()
                    } else {
                        0
                    };
                parts.pop();
            }
        }
        chars += part.chars().count()
            + if parts.is_empty() {
                0
            } else {
                PART_SEPARATOR.len()
            };
        parts.push(part);
        if chars > EXCERPT_CHARS {
            break; // the rest lies past the cut
        }
    }
    Ok(joined(parts))
}

/// `_attribution.joined`: the parts joined, cut to `EXCERPT_CHARS` code points, what is never
/// shown (`is_unshown`) as `_`.
fn joined(parts: Vec<String>) -> String {
    let text = parts.join(PART_SEPARATOR);
    let shown = text.chars().map(|c| if is_unshown(c) { '_' } else { c });
    if text.chars().count() <= EXCERPT_CHARS {
        return shown.collect();
    }
    let mut cut: String = shown.take(EXCERPT_CHARS - 1).collect();
    cut.push(ELLIPSIS);
    cut
}

/// `_attribution.render_message`: `name(arguments)` for a tool request, `name(...) -> result`
/// for its response, `type: text` otherwise.
fn render_message<N: Readable>(message: &N) -> Result<String, Declined> {
    Ok(render_part(message)?.0)
}

/// What a rendered message is: a tool request's, a response's, or another message's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Request,
    Response,
    Other,
}

/// `render_message`, and what the message is.
fn render_part<N: Readable>(message: &N) -> Result<(String, Part), Declined> {
    if let Some(activity) = parse_activity(message)? {
        let part = if activity.kind.is_text("request") {
            Part::Request
        } else if activity.kind.is_text("response") {
            Part::Response
        } else {
            Part::Other
        };
        // The name in one line, as its arguments are (`_attribution._call`).
        let mut out = one_line(&activity.name.string()?.ok_or(Declined)?, NAME_CHARS);
        out.push('(');
        if let Some(arguments) = &activity.arguments {
            out.push_str(&one_line(&payload(arguments)?, PART_CHARS));
        }
        out.push(')');
        if part == Part::Response {
            if let Some(result) = &activity.result {
                out.push_str(ARROW);
                out.push_str(&one_line(&result_text(result)?, PART_CHARS));
            }
        }
        return Ok((out, part));
    }
    let label = match message.field(Key::Type)? {
        Some(kind) => kind.string()?,
        None => None,
    };
    let label = label.map_or_else(|| "message".to_owned(), |kind| one_line(&kind, NAME_CHARS));
    let text = match message.field(Key::Text)? {
        Some(text) => text.string()?,
        None => None,
    };
    let out = match text {
        Some(text) => format!("{label}: {}", one_line(&text, PART_CHARS)),
        None => label,
    };
    Ok((out, Part::Other))
}

/// `_attribution._payload`: a string as itself, anything else as `json.dumps(value,
/// ensure_ascii=False, separators=(",", ":"), allow_nan=False)` writes it, or its canonical
/// text where JSON cannot write it (a number beyond the doubles).
fn payload<N: Readable>(value: &N) -> Result<String, Declined> {
    if let Some(text) = value.string()? {
        return Ok(text);
    }
    let mut out = String::new();
    if value.push_json(&mut out, 0)? {
        return Ok(out);
    }
    Ok(String::from_utf8(encoded(value)?).expect("canonical text is ASCII"))
}

/// `_attribution._result_text`: a tool result as `payload` writes it, except content parts
/// holding media inline (a screenshot), as a list or one part alone: each part in turn, a
/// text as itself, such media as `media_placeholder` shows it, any other part as `payload`
/// writes it.
fn result_text<N: Readable>(result: &N) -> Result<String, Declined> {
    if let Some(parts) = result.items()? {
        if let Some(shown) = parts_text(&parts)? {
            return Ok(shown);
        }
    } else if let Some(placeholder) = media_placeholder(result)? {
        return Ok(placeholder);
    } else if result.member("type")?.is_none() {
        // MCP's CallToolResult as a harness keeps it (`result.model_dump()`)
        if let Some(parts) = result.member("content")?.map(|content| content.items()) {
            if let Some(shown) = parts_text(&parts?.unwrap_or_default())? {
                return Ok(shown);
            }
        }
    }
    payload(result)
}

/// `_attribution._parts_text`: content parts one after another when one holds media inline,
/// None when none does.
fn parts_text<N: Readable>(parts: &[N]) -> Result<Option<String>, Declined> {
    let shown: Vec<Option<String>> = parts
        .iter()
        .map(media_placeholder)
        .collect::<Result<_, _>>()?;
    if shown.iter().all(Option::is_none) {
        return Ok(None);
    }
    let texts: Vec<String> = parts
        .iter()
        .zip(shown)
        .map(|(part, placeholder)| match placeholder {
            Some(placeholder) => Ok(placeholder),
            None => part_text(part),
        })
        .collect::<Result<_, _>>()?;
    Ok(Some(texts.join(PART_BREAK)))
}

/// `_attribution._part_text`: a text part's text, else the part as `payload` writes it.
fn part_text<N: Readable>(part: &N) -> Result<String, Declined> {
    if part.is_mapping()? {
        let kind = match part.member("type")? {
            Some(kind) => kind.string()?,
            None => Some("text".to_owned()), // `part.get("type", "text")`
        };
        let text = match part.member("text")? {
            Some(text) => text.string()?,
            None => None,
        };
        if let (Some(kind), Some(text)) = (kind, text) {
            if TEXT_PARTS.contains(&kind.as_str()) {
                return Ok(text);
            }
        }
    }
    payload(part)
}

/// `_attribution._media_placeholder`: `[label, N bytes]` for a content part carrying a
/// file's bytes inline in one of the OpenAI, Anthropic, MCP or Inspect shapes listed there,
/// N the decoded size; None for anything else (a linked image, a file path, any other part,
/// a value that is no part). The shapes are tried in the twin's order.
fn media_placeholder<N: Readable>(part: &N) -> Result<Option<String>, Declined> {
    let Some(kind) = string_member(part, "type")? else {
        return Ok(None);
    };
    if matches!(kind.as_str(), "image" | "document") {
        // Anthropic's blocks
        if let Some(source) = part.member("source")? {
            if string_member(&source, "type")?.as_deref() == Some("base64") {
                if let Some(data) = string_member(&source, "data")? {
                    let named = string_member(&source, "media_type")?;
                    return Ok(Some(placeholder(&kind, &data, &[named], None)));
                }
            }
        }
    }
    if let Some(data) = inline_base64(part, &kind)? {
        // MCP's content, LangChain's blocks
        let named = [
            string_member(part, "mimeType")?,
            string_member(part, "mime_type")?,
        ];
        return Ok(Some(inline_placeholder(&kind, &data, named)));
    }
    let mut named = None; // the media type the part names beside its URL's
    let mut filename = None;
    let url = match kind.as_str() {
        "input_audio" => {
            let Some(audio) = part.member("input_audio")? else {
                return Ok(None);
            };
            let Some(data) = string_member(&audio, "data")? else {
                return Ok(None);
            };
            let named = typed("audio/", &audio)?;
            return Ok(Some(placeholder(&kind, &data, &[named], None)));
        }
        "image_url" => match part.member("image_url")? {
            // OpenAI chat's parts hold their URL one object down, LangChain's in the field
            Some(holder) => match holder.string()? {
                Some(url) => Some(url),
                None => string_member(&holder, "url")?,
            },
            None => None,
        },
        "file" => match part.member("file")? {
            Some(holder) => {
                let url = string_member(&holder, "file_data")?;
                filename = string_member(&holder, "filename")?;
                url
            }
            None => None,
        },
        "input_image" => string_member(part, "image_url")?,
        "input_file" => {
            let url = string_member(part, "file_data")?;
            filename = string_member(part, "filename")?;
            url
        }
        // Inspect's, in a field named by its type
        "image" => string_member(part, "image")?,
        "audio" | "video" => {
            let url = string_member(part, &kind)?;
            named = typed(&format!("{kind}/"), part)?;
            url
        }
        "document" => {
            let url = string_member(part, "document")?;
            named = string_member(part, "mime_type")?;
            filename = string_member(part, "filename")?;
            url
        }
        _ => None,
    };
    Ok(url
        .as_deref()
        .and_then(base64_data_url)
        .map(|(media_type, data)| {
            placeholder(
                &kind,
                data,
                &[Some(media_type.to_owned()), named],
                filename.as_deref(),
            )
        }))
}

/// The member `name` of a mapping when it is a string.
fn string_member<N: Readable>(value: &N, name: &str) -> Result<Option<String>, Declined> {
    match value.member(name)? {
        Some(member) => member.string(),
        None => Ok(None),
    }
}

/// `_attribution._typed`: `prefix` + the part's `format` (`audio/wav`), None without one.
fn typed<N: Readable>(prefix: &str, part: &N) -> Result<Option<String>, Declined> {
    Ok(string_member(part, "format")?
        .filter(|format| !format.is_empty())
        .map(|format| format!("{prefix}{format}")))
}

/// `_attribution._base64_data_url`: (media type, base64 text) of a base64 `data:` URL (RFC 2397: the scheme and `;base64`
/// in any case of their ASCII letters); None for any other URL, a URL-encoded data URL among
/// them (its text is readable).
fn base64_data_url(url: &str) -> Option<(&str, &str)> {
    const SCHEME: &str = "data:";
    const BASE64: &str = ";base64";
    let scheme = url.get(..SCHEME.len())?;
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let (header, data) = url[SCHEME.len()..].split_once(',')?;
    let cut = header.len().checked_sub(BASE64.len())?;
    if !header.get(cut..)?.eq_ignore_ascii_case(BASE64) {
        return None;
    }
    let media_type = &header[..cut];
    Some((media_type.split(';').next().unwrap_or(media_type), data))
}

/// `_attribution._inline_base64`: the base64 a part of type `kind` holds in a field of its
/// own: LangChain 1.0's `base64`, MCP's `data` (an image or audio), LangChain 0.3's `data`
/// beside `"source_type": "base64"`.
fn inline_base64<N: Readable>(part: &N, kind: &str) -> Result<Option<String>, Declined> {
    if !matches!(kind, "image" | "audio" | "video" | "file") {
        return Ok(None);
    }
    if let Some(data) = string_member(part, "base64")? {
        return Ok(Some(data));
    }
    let tagged =
        || Ok::<_, Declined>(string_member(part, "source_type")?.as_deref() == Some("base64"));
    if matches!(kind, "image" | "audio") || (kind == "file" && tagged()?) {
        return string_member(part, "data");
    }
    Ok(None)
}

/// `_attribution._inline_placeholder`: base64 held inline, which may be written as a base64
/// `data:` URL, whose header is then no data and whose media type comes first.
fn inline_placeholder(kind: &str, data: &str, named: [Option<String>; 2]) -> String {
    match base64_data_url(data) {
        Some((media_type, data)) => {
            let [first, second] = named;
            placeholder(
                kind,
                data,
                &[Some(media_type.to_owned()), first, second],
                None,
            )
        }
        None => placeholder(kind, data, &named, None),
    }
}

/// `_attribution._label_part`: `text` cut to `NAME_CHARS` code points.
fn push_label_part(label: &mut String, text: &str) {
    if text.chars().count() > NAME_CHARS {
        label.extend(text.chars().take(NAME_CHARS - 1));
        label.push(ELLIPSIS);
    } else {
        label.push_str(text);
    }
}

/// `_attribution._NOT_SHOWN`: what an excerpt never shows. `is_control` is Unicode's Cc (C0,
/// DEL, C1), which would split the line or hide what follows (a terminal's escapes); then
/// Unicode's Bidi_Control, the marks, embeddings, overrides and isolates that would show
/// the rest reversed.
fn is_unshown(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `_attribution._placeholder`: `[label, N bytes]`, the label the first of `media_types`
/// that is not empty, else the part's `type`, then its file name, each cut; a bracket or a
/// control character in the label becomes `_` (`_NOT_IN_LABEL`). N three bytes per four base64
/// symbols (standard or URL-safe), what is no symbol (padding, line breaks) not counted.
fn placeholder(
    kind: &str,
    data: &str,
    media_types: &[Option<String>],
    filename: Option<&str>,
) -> String {
    let mut label = String::new();
    let media_type = media_types
        .iter()
        .flatten()
        .find(|named| !named.is_empty())
        .map_or(kind, String::as_str);
    push_label_part(&mut label, media_type);
    if let Some(filename) = filename.filter(|name| !name.is_empty()) {
        label.push(' ');
        push_label_part(&mut label, filename);
    }
    let label: String = label
        .chars()
        .map(|c| {
            // `_NOT_IN_LABEL`: a bracket, or what no excerpt shows.
            if c == '[' || c == ']' || is_unshown(c) {
                '_'
            } else {
                c
            }
        })
        .collect();
    let symbols = data
        .bytes()
        .filter(|&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'-' | b'_'))
        .count();
    let size = symbols * 3 / 4;
    format!("[{label}, {size} byte{}]", if size == 1 { "" } else { "s" })
}

/// A JSON string as `json.dumps(..., ensure_ascii=False)` writes it.
fn push_json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

// ------------------------------------------------------------------------ Python's repr

/// `repr` of a `str`: single quotes unless the text holds one and no double quote; quotes
/// and backslashes escaped, `\t` `\n` `\r` named, other control characters and the
/// non-printable `\x`, `\u` or `\U` escaped. Declined for a code point unassigned in the
/// tables' Unicode: the running interpreter's may be newer and print it.
pub fn str_repr(text: &str) -> Result<String, Declined> {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        let point = u32::from(c);
        if c == quote || c == '\\' {
            out.push('\\');
            out.push(c);
        } else if c == '\t' {
            out.push_str("\\t");
        } else if c == '\n' {
            out.push_str("\\n");
        } else if c == '\r' {
            out.push_str("\\r");
        } else if point < 0x20 || point == 0x7F {
            out.push_str(&format!("\\x{point:02x}"));
        } else if point < 0x7F {
            out.push(c);
        } else if unicode::is_unassigned(point) {
            return Err(Declined);
        } else if unicode::is_printable_non_ascii(point) {
            out.push(c);
        } else if point <= 0xFF {
            out.push_str(&format!("\\x{point:02x}"));
        } else if point <= 0xFFFF {
            out.push_str(&format!("\\u{point:04x}"));
        } else {
            out.push_str(&format!("\\U{point:08x}"));
        }
    }
    out.push(quote);
    Ok(out)
}

/// `repr` of a tuple of `str`s (of at least two).
fn tuple_repr(items: &[String]) -> Result<String, Declined> {
    let items: Vec<String> = items
        .iter()
        .map(|item| str_repr(item))
        .collect::<Result<_, _>>()?;
    Ok(format!("({})", items.join(", ")))
}

// ------------------------------------------------------------------ loops found anywhere

/// `vthread.anywhere`'s kind of a loop that is a repeating block of every message (its other
/// kinds leave the agent's own messages out of the signature and excerpt).
const BLOCK: u8 = 1;
/// `vthread.anywhere`'s kind of the same reply to agent turns in a row, its numbers aside:
/// its signature is blind to numbers too, so that one rejection ("found 2 actions", "found
/// 3 actions") is one loop across runs.
const REPLIES: u8 = 3;
/// `vthread.anywhere`'s kind of a runaway text, whose record Python makes.
const TEXT: u8 = 4;

/// A loop found anywhere in a thread (`vthread.anywhere.Loop`): messages `start..end`,
/// repeating every `period` messages, of kind `kind`.
#[derive(Clone, Copy, Debug)]
pub struct FoundAnywhere {
    pub start: usize,
    pub end: usize,
    pub period: usize,
    pub kind: u8,
}

/// What `vthread.anywhere.loop_records` writes of a loop besides its span.
#[derive(Clone, Debug, PartialEq)]
pub struct AnywhereParts {
    pub signature: u64,
    pub excerpt: String,
    /// NaN when no message of the loop carries a usage figure.
    pub loop_tokens: f64,
}

/// `vthread.anywhere.loop_records` of one loop, step for step: the signature hashes the
/// fingerprints of its first block's messages (its actions alone unless the loop is a
/// block of every message; for replies, each key's runs of digits folded) at their least
/// rotation, the excerpt renders those messages
/// (the whole block when none is left), the tokens are the whole span's. A runaway text,
/// and a loop outside the thread, are declined (Python's).
pub fn anywhere_parts<N: Readable>(
    messages: &[N],
    found: FoundAnywhere,
) -> Result<AnywhereParts, Declined> {
    let FoundAnywhere {
        start,
        end,
        period,
        kind,
    } = found;
    let block_end = start.checked_add(period).ok_or(Declined)?;
    if !(1..TEXT).contains(&kind) || period == 0 || end > messages.len() || block_end > end {
        return Err(Declined);
    }
    let block = &messages[start..block_end];
    let mut shown: Vec<&N> = Vec::new();
    let mut prints: Vec<u64> = Vec::new();
    let mut key = Vec::new();
    for message in block {
        if kind != BLOCK {
            let role =
                crate::anywhere::role_and_activity(message, message.field(Key::Type)?.as_ref())?.0;
            // An action loop's or reply run's actions alone, as they were compared: the
            // agent's words, reasoning, `think` calls and system messages are left out.
            if !matches!(
                role,
                crate::anywhere::REQUEST | crate::anywhere::RESPONSE | crate::anywhere::USER
            ) {
                continue;
            }
        }
        push_message_key(message, &mut key)?;
        prints.push(if kind == REPLIES {
            xxh3_64(&crate::anywhere::fold_digits(&key))
        } else {
            xxh3_64(&key)
        });
        shown.push(message);
    }
    let first = if prints.is_empty() {
        0
    } else {
        least_rotation(&prints)
    };
    let rotated: Vec<String> = prints[first..]
        .iter()
        .chain(&prints[..first])
        .map(u64::to_string)
        .collect();
    let parts = format!("[{}]", rotated.join(", "));
    let excerpt = if shown.is_empty() {
        rendered_excerpt(block)?
    } else {
        rendered_excerpt(shown)?
    };
    Ok(AnywhereParts {
        signature: xxh3_64_with_seed(parts.as_bytes(), u64::from(kind)),
        excerpt,
        loop_tokens: loop_tokens(&messages[start..end])?,
    })
}

// --------------------------------------------------------------------------------- tokens

/// `scan._loop_tokens`: the `math.fsum` of the messages' `usage.tokens` figures that count
/// (`_messages.usage_tokens`), NaN when none does.
pub fn loop_tokens<N: Readable>(messages: &[N]) -> Result<f64, Declined> {
    let mut figures = Vec::new();
    for message in messages {
        let Some(usage) = message.field(Key::Usage)? else {
            continue;
        };
        let Some(tokens) = usage.field(Key::Tokens)? else {
            continue;
        };
        if let Some(figure) = tokens.figure()? {
            figures.push(figure);
        }
    }
    Ok(if figures.is_empty() {
        f64::NAN
    } else {
        fsum(&figures)
    })
}

/// `math.fsum` as CPython computes it (Shewchuk's partials, then a half-even correction
/// across them), with `token_total`'s infinity where it would raise `OverflowError`. The
/// figures are finite.
pub fn fsum(values: &[f64]) -> f64 {
    let mut partials: Vec<f64> = Vec::new();
    for &value in values {
        let mut x = value;
        let mut kept = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let high = x + y;
            let low = y - (high - x);
            if low != 0.0 {
                partials[kept] = low;
                kept += 1;
            }
            x = high;
        }
        partials.truncate(kept);
        if x != 0.0 {
            if !x.is_finite() {
                return f64::INFINITY; // intermediate overflow: fsum raises, token_total says inf
            }
            partials.push(x);
        }
    }
    let mut n = partials.len();
    let mut high = 0.0;
    if n > 0 {
        n -= 1;
        high = partials[n];
        let mut low = 0.0;
        while n > 0 {
            let x = high;
            n -= 1;
            let y = partials[n];
            high = x + y;
            let y_rounded = high - x;
            low = y - y_rounded;
            if low != 0.0 {
                break;
            }
        }
        if n > 0 && ((low < 0.0 && partials[n - 1] < 0.0) || (low > 0.0 && partials[n - 1] > 0.0)) {
            let y = low * 2.0;
            let x = high + y;
            if y == x - high {
                high = x;
            }
        }
    }
    high
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Tape;

    #[test]
    fn least_rotation_matches_the_doctest() {
        assert_eq!(least_rotation(&[3, 1, 2, 1, 1]), 3);
        assert_eq!(least_rotation(&[]), 0);
        assert_eq!(least_rotation(&[5]), 0);
    }

    #[test]
    fn str_repr_follows_python() {
        let repr = |text: &str| str_repr(text).expect("assigned code points");
        assert_eq!(repr("ab"), "'ab'");
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("'\""), "'\\'\"'");
        assert_eq!(repr("a\\b\n\t\r\u{1}\u{7f}"), "'a\\\\b\\n\\t\\r\\x01\\x7f'");
        assert_eq!(
            repr("é\u{a0}\u{200b}\u{e000}🎉"),
            "'é\\xa0\\u200b\\ue000🎉'"
        );
        // Unassigned in the tables' Unicode (a later one may print it): Python decides.
        assert_eq!(str_repr("\u{1fa75}"), Err(Declined));
        assert_eq!(str_repr("\u{10ffff}"), Err(Declined));
    }

    #[test]
    fn fsum_rounds_as_cpython() {
        assert_eq!(fsum(&[1e-16, 1.0, 1e16]), 10000000000000002.0);
        assert_eq!(fsum(&[0.1; 10]), 1.0);
        assert_eq!(fsum(&[1.7e308, 1.7e308]), f64::INFINITY);
        assert_eq!(fsum(&[]), 0.0);
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("  a \n\t b  ", 100), "a b");
        assert_eq!(one_line("abcdef", 4), "abc\u{2026}");
        assert_eq!(one_line("abcd", 4), "abcd");
        assert_eq!(one_line("abc    ", 3), "abc");
    }

    #[test]
    fn utf16_tail_leaves_a_cut_pairs_low_half() {
        let points: Vec<u32> = "a🎉b".chars().map(u32::from).collect();
        assert_eq!(utf16_tail(&points, 2), vec![0xDF89, u32::from('b')]);
        assert_eq!(utf16_tail(&points, 3), vec![0x1F389, u32::from('b')]);
        assert_eq!(utf16_tail(&points, 9), points);
    }

    #[test]
    fn a_suffix_is_restated_as_a_person_counts_it() {
        let line =
            br#"[{"type":"x"},{"type":"a"},{"type":"a"},{"type":"a"},{"type":"a"},{"type":"a"}]"#;
        let tape = Tape::parse(line).expect("plain JSON");
        let messages: Vec<Value<'_>> = tape.root().children().collect();
        let found = Loop {
            code: SUFFIX,
            begin: 2,
            period: 2,
            repetitions: 2,
        };
        let attributed = attribute(&messages, found).expect("a suffix");
        assert_eq!(
            (
                attributed.loop_start,
                attributed.period,
                attributed.repetitions
            ),
            (1, 1, 5)
        );
        assert_eq!(attributed.excerpt, "a");
        assert!(attributed.loop_tokens.is_nan());
    }

    #[test]
    fn a_loop_found_anywhere_leaves_the_agents_words_out_unless_it_is_a_block() {
        let line = br#"[{"type":"user","text":"go"},{"type":"bot","text":"again"},
            {"type":"user","text":"no"},{"type":"bot","text":"again"},{"type":"user","text":"no"}]"#;
        let tape = Tape::parse(line).expect("plain JSON");
        let messages: Vec<Value<'_>> = tape.root().children().collect();
        let found = |kind| FoundAnywhere {
            start: 1,
            end: 5,
            period: 2,
            kind,
        };
        let block = anywhere_parts(&messages, found(BLOCK)).expect("a block");
        let replies = anywhere_parts(&messages, found(3)).expect("replies");
        assert_eq!(block.excerpt, "bot: again | user: no");
        assert_eq!(replies.excerpt, "user: no");
        assert_ne!(block.signature, replies.signature);
        assert!(block.loop_tokens.is_nan());
        // A block of the agent's words alone shows them all, and signs nothing.
        let agent = FoundAnywhere {
            start: 1,
            end: 2,
            period: 1,
            kind: 2,
        };
        let parts = anywhere_parts(&messages, agent).expect("an action block");
        assert_eq!(parts.excerpt, "bot: again");
        assert_eq!(parts.signature, xxh3_64_with_seed(b"[]", 2));
        // Python's: a runaway text, and spans outside the thread or shorter than a block.
        for (start, end, period, kind) in
            [(1, 2, 1, TEXT), (1, 9, 2, 1), (1, 2, 2, 1), (1, 3, 0, 1)]
        {
            let found = FoundAnywhere {
                start,
                end,
                period,
                kind,
            };
            assert_eq!(anywhere_parts(&messages, found), Err(Declined));
        }
    }

    #[test]
    fn media_inline_read_as_their_type_and_decoded_size() {
        assert_eq!(
            base64_data_url("data:image/png;x=1;base64,AA=="),
            Some(("image/png", "AA=="))
        );
        assert_eq!(base64_data_url("data:;base64,"), Some(("", "")));
        assert_eq!(base64_data_url("data:text/plain,SGk="), None);
        assert_eq!(base64_data_url("https://a.example/b.png"), None);
        assert_eq!(
            base64_data_url("DATA:image/png;BASE64,AA"),
            Some(("image/png", "AA"))
        );
        assert_eq!(base64_data_url("data:image/png;base64;x,AA"), None);
        assert_eq!(base64_data_url("data:é;base64"), None);
        let png = Some("image/png".to_owned());
        assert_eq!(
            placeholder("image", "AAAA", std::slice::from_ref(&png), None),
            "[image/png, 3 bytes]"
        );
        assert_eq!(
            placeholder("image", "A-_=\n", &[Some(String::new()), png], None),
            "[image/png, 2 bytes]"
        );
        assert_eq!(placeholder("file", "AA==", &[None], None), "[file, 1 byte]");
        assert_eq!(
            placeholder(
                "file",
                "",
                &[Some("a]\nb".to_owned())],
                Some(&"é".repeat(41))
            ),
            format!("[a__b {}\u{2026}, 0 bytes]", "é".repeat(39))
        );
        let line = br#"[{"type":"text","text":"Saved"},
            {"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lGOD"}},
            {"type":"image_url","image_url":{"url":"https://a.example/b.png"}}, "SGk="]"#;
        let tape = Tape::parse(line).expect("plain JSON");
        assert_eq!(
            result_text(&tape.root()).expect("plain JSON"),
            "Saved\n[image/gif, 4 bytes]\n\
             {\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.example/b.png\"}}\nSGk="
        );
        // No media among the parts: the result as JSON, its base64-looking text untouched.
        let tape = Tape::parse(br#"[{"type":"text","text":"SGk="}]"#).expect("plain JSON");
        assert_eq!(
            result_text(&tape.root()).expect("plain JSON"),
            r#"[{"type":"text","text":"SGk="}]"#
        );
    }

    #[test]
    fn payloads_are_written_as_json_dumps_writes_them() {
        let tape = Tape::parse(br#"{"a":[1,1.0,-0.0,1e16,1E400,"\u00e9\n",null,true]}"#)
            .expect("plain JSON");
        let mut out = String::new();
        assert_eq!(tape.root().push_json(&mut out, 0), Ok(false)); // 1E400 is infinite
        let tape = Tape::parse(br#"{"a":[1,1.0,-0.0,1e16,"\u00e9\n\u0001",null,true]}"#)
            .expect("plain JSON");
        assert_eq!(
            payload(&tape.root()).expect("plain JSON"),
            "{\"a\":[1,1.0,-0.0,1e+16,\"\u{e9}\\n\\u0001\",null,true]}"
        );
    }
}
