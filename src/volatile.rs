//! `vthread.volatile.mask_text` in the core: a text's timestamps, UUIDs, Unix times, long hex
//! ids and durations replaced by their placeholders, exactly as Python's `re.sub` with the
//! module's pattern replaces them.
//!
//! The pattern is small and fixed, so instead of a regular-expression crate (whose `\b`,
//! `\w` and `\d` follow other Unicode properties, and which has no look-behind) it is
//! written here as a tree of the same parts, evaluated the way `re` evaluates a pattern:
//! alternatives tried in order, repeats greedy and given back one at a time, the first
//! success wins. Character classes are Python's own (`\w`: `str.isalnum` or `_`; `\d`:
//! `str.isdecimal`; tables generated from the interpreter, `unicode_tables.rs`), and a
//! property test holds every output to `re.sub`'s (`tests/test_volatile.py`).
//!
//! Cost: as the pattern is linear (no repeat can match the same characters two ways), each
//! start position is tried in time bounded by the run of characters a repeat can take from
//! there, as in `re`; a start needs a word boundary before an ASCII hex digit, so a run is
//! tried from its first character only.

use crate::unicode::{is_decimal, is_letter_or_number};

/// A code unit of a text: a Latin-1 byte, a UCS-2 unit or a code point (Python's three
/// storages; a UTF-8 text is read as code points or, when ASCII, as its bytes).
pub trait Unit: Copy + Into<u32> {}
impl Unit for u8 {}
impl Unit for u16 {}
impl Unit for u32 {}

/// One part of the pattern.
enum Part {
    /// One character of a class.
    Class(fn(u32) -> bool),
    /// A literal text (code points).
    Literal(&'static str),
    /// `\b`: a word character on one side and not on the other.
    Boundary,
    /// `(?!\w)`: no word character next.
    NoWordAhead,
    /// The parts one after another.
    Sequence(Vec<Part>),
    /// The first alternative that lets the rest match.
    Either(Vec<Part>),
    /// The part between `min` and `max` times, as many as possible first.
    Repeat(Box<Part>, usize, usize),
}

/// What a match of the whole pattern is replaced by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Uuid,
    Time,
    Epoch,
    Elapsed,
    Hex,
}

impl Kind {
    fn placeholder(self) -> &'static str {
        match self {
            Kind::Uuid => "<uuid>",
            Kind::Time => "<time>",
            Kind::Epoch => "<epoch>",
            Kind::Elapsed => "<elapsed>",
            Kind::Hex => "<hex>",
        }
    }
}

/// `re`'s `\w` in a `str` pattern.
fn is_word(c: u32) -> bool {
    match u8::try_from(c) {
        Ok(byte) if byte.is_ascii() => byte == b'_' || byte.is_ascii_alphanumeric(),
        _ => is_letter_or_number(c),
    }
}

/// `re`'s `\d` in a `str` pattern (any decimal digit, not only ASCII).
fn is_digit(c: u32) -> bool {
    if c < 0x80 {
        return is_ascii_digit(c);
    }
    is_decimal(c)
}

/// `[0-9a-fA-F]`.
fn is_hex(c: u32) -> bool {
    char::from_u32(c).is_some_and(|c| c.is_ascii_hexdigit())
}

fn is_time_separator(c: u32) -> bool {
    c == u32::from(b'T') || c == u32::from(b' ')
}

fn is_sign(c: u32) -> bool {
    c == u32::from(b'+') || c == u32::from(b'-')
}

fn is_fraction_mark(c: u32) -> bool {
    c == u32::from(b'.') || c == u32::from(b',')
}

fn class(test: fn(u32) -> bool) -> Part {
    Part::Class(test)
}

fn digits(count: usize) -> Part {
    Part::Repeat(Box::new(class(is_digit)), count, count)
}

fn some(part: Part, min: usize) -> Part {
    Part::Repeat(Box::new(part), min, usize::MAX)
}

fn optional(part: Part) -> Part {
    Part::Repeat(Box::new(part), 0, 1)
}

fn text(literal: &'static str) -> Part {
    Part::Literal(literal)
}

fn sequence(parts: Vec<Part>) -> Part {
    Part::Sequence(parts)
}

fn either(parts: Vec<Part>) -> Part {
    Part::Either(parts)
}

/// `\d+(?:\.\d+)?`
fn number() -> Part {
    sequence(vec![
        some(class(is_digit), 1),
        optional(sequence(vec![text("."), some(class(is_digit), 1)])),
    ])
}

/// The pattern's alternatives after `\b(?=[0-9a-fA-F])`, in order, each with its kind and
/// whether it refuses to start after `[` or `;` (the elapsed one's look-behind).
fn alternatives() -> Vec<(Kind, bool, Part)> {
    let hex = |count: usize| Part::Repeat(Box::new(class(is_hex)), count, count);
    let uuid = sequence(vec![
        hex(8),
        text("-"),
        hex(4),
        text("-"),
        hex(4),
        text("-"),
        hex(4),
        text("-"),
        hex(12),
        Part::Boundary,
    ]);
    let fraction = optional(sequence(vec![
        class(is_fraction_mark),
        some(class(is_digit), 1),
    ]));
    let date_time = sequence(vec![
        digits(4),
        text("-"),
        digits(2),
        text("-"),
        digits(2),
        class(is_time_separator),
        digits(2),
        text(":"),
        digits(2),
        optional(sequence(vec![text(":"), digits(2), fraction])),
        optional(either(vec![
            text("Z"),
            sequence(vec![
                class(is_sign),
                digits(2),
                optional(text(":")),
                digits(2),
            ]),
        ])),
        Part::NoWordAhead,
    ]);
    let time_of_day = sequence(vec![
        Part::Repeat(Box::new(class(is_digit)), 1, 2),
        text(":"),
        digits(2),
        text(":"),
        digits(2),
        optional(sequence(vec![
            class(is_fraction_mark),
            some(class(is_digit), 1),
        ])),
        Part::Boundary,
    ]);
    let epoch = sequence(vec![
        text("1"),
        digits(9),
        Part::Repeat(Box::new(digits(3)), 0, 3),
        optional(sequence(vec![text("."), some(class(is_digit), 1)])),
        Part::Boundary,
    ]);
    let short_unit = || either(vec![text("h"), text("m"), text("s"), text("ms")]);
    let compound = sequence(vec![
        number(),
        short_unit(),
        Part::Repeat(Box::new(sequence(vec![number(), short_unit()])), 1, 3),
        Part::Boundary,
    ]);
    // `(?:ns|us|µs|ms|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)` as plain
    // texts in the order `re` tries them: `secs?` is "secs", then "sec" (the optional letter
    // is taken first).
    let ordered = [
        "ns", "us", "\u{b5}s", "ms", "s", "secs", "sec", "seconds", "second", "m", "mins", "min",
        "minutes", "minute", "h", "hrs", "hr", "hours", "hour", "d", "days", "day",
    ];
    let with_unit = sequence(vec![
        number(),
        optional(text(" ")),
        either(ordered.iter().map(|&unit| text(unit)).collect()),
        Part::Boundary,
    ]);
    let long_hex = sequence(vec![some(class(is_hex), 12), Part::Boundary]);
    vec![
        (Kind::Uuid, false, uuid),
        (Kind::Time, false, either(vec![date_time, time_of_day])),
        (Kind::Epoch, false, epoch),
        (Kind::Elapsed, true, either(vec![compound, with_unit])),
        (Kind::Hex, false, long_hex),
    ]
}

/// Whether there is a word boundary before `text[at]`.
fn boundary<T: Unit>(text: &[T], at: usize) -> bool {
    let before = at > 0 && is_word(text[at - 1].into());
    let after = at < text.len() && is_word(text[at].into());
    before != after
}

impl Part {
    /// Match this part at `at`, then ask `rest` to match from where it ends; true as soon
    /// as some way succeeds, trying the ways in `re`'s order.
    fn matches<T: Unit>(&self, text: &[T], at: usize, rest: &mut dyn FnMut(usize) -> bool) -> bool {
        match self {
            Part::Class(test) => at < text.len() && test(text[at].into()) && rest(at + 1),
            Part::Literal(literal) => {
                let mut end = at;
                for c in literal.chars() {
                    if end >= text.len() || text[end].into() != u32::from(c) {
                        return false;
                    }
                    end += 1;
                }
                rest(end)
            }
            Part::Boundary => boundary(text, at) && rest(at),
            Part::NoWordAhead => !(at < text.len() && is_word(text[at].into())) && rest(at),
            Part::Sequence(parts) => sequence_matches(parts, text, at, rest),
            Part::Either(parts) => parts.iter().any(|part| part.matches(text, at, rest)),
            Part::Repeat(part, min, max) => {
                if let Part::Class(test) = **part {
                    // One character at a time: count the run, then give back from its end
                    // (no recursion as deep as the run).
                    let limit = text.len().min(at.saturating_add(*max));
                    let run = text[at..limit]
                        .iter()
                        .take_while(|&&c| test(c.into()))
                        .count();
                    return run >= *min && (*min..=run).rev().any(|count| rest(at + count));
                }
                repeat_matches(part, *min, *max, 0, text, at, rest)
            }
        }
    }
}

fn sequence_matches<T: Unit>(
    parts: &[Part],
    text: &[T],
    at: usize,
    rest: &mut dyn FnMut(usize) -> bool,
) -> bool {
    match parts.split_first() {
        None => rest(at),
        Some((first, others)) => first.matches(text, at, &mut |end| {
            sequence_matches(others, text, end, rest)
        }),
    }
}

/// A repeat of a part that is more than one character (the pattern bounds these to 3).
#[allow(clippy::too_many_arguments)]
fn repeat_matches<T: Unit>(
    part: &Part,
    min: usize,
    max: usize,
    done: usize,
    text: &[T],
    at: usize,
    rest: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if done < max
        && part.matches(text, at, &mut |end| {
            end > at && repeat_matches(part, min, max, done + 1, text, end, rest)
        })
    {
        return true;
    }
    done >= min && rest(at)
}

/// The pattern, built once.
fn pattern() -> &'static [(Kind, bool, Part)] {
    static PATTERN: std::sync::OnceLock<Vec<(Kind, bool, Part)>> = std::sync::OnceLock::new();
    PATTERN.get_or_init(alternatives)
}

/// The match starting at `at`, if any: its kind and end.
fn match_at<T: Unit>(text: &[T], at: usize) -> Option<(Kind, usize)> {
    if !(is_hex(text[at].into()) && boundary(text, at)) {
        return None;
    }
    if !is_ascii_digit(text[at].into()) && !text[at..].iter().take(8).all(|&c| is_hex(c.into())) {
        // Every alternative but the UUID and the hex run starts with `\d`, and those two
        // begin with eight hex digits: most words that start with a–f end here.
        return None;
    }
    let before: u32 = if at > 0 { text[at - 1].into() } else { 0 };
    let after_bracket = before == u32::from(b'[') || before == u32::from(b';');
    for (kind, not_after_bracket, part) in pattern() {
        if *not_after_bracket && after_bracket {
            continue;
        }
        let mut end = None;
        if part.matches(text, at, &mut |found| {
            end = Some(found);
            true
        }) {
            return end.map(|end| (*kind, end));
        }
    }
    None
}

/// Object keys whose value is volatile, once lower-cased.
const VOLATILE_KEYS: [&str; 11] = [
    "time",
    "timestamp",
    "datetime",
    "elapsed",
    "duration",
    "uptime",
    "created",
    "updated",
    "started",
    "finished",
    "ended",
];

/// Lower-cased endings that make a key volatile.
const VOLATILE_SUFFIXES: [&str; 7] = ["_at", "_time", "_ms", "_ns", "_us", "_sec", "_seconds"];

/// Whether `vthread.volatile._volatile_key` holds for a `str` key of these code points: its
/// `str.lower()` is one of the names or ends with one of the endings. All of those are ASCII,
/// and besides `A`–`Z` only U+212A (KELVIN SIGN, to `k`) and U+0130 (to `i` and a combining
/// dot) lower-case to anything ASCII (`tools/unicode_tables.py` checks it), so every other
/// character stands for itself, a character no name holds.
pub fn is_volatile_key(key: impl IntoIterator<Item = u32>) -> bool {
    let mut lowered: Vec<u8> = Vec::new();
    for c in key {
        match c {
            0..=0x7F => lowered.push((c as u8).to_ascii_lowercase()),
            0x212A => lowered.push(b'k'),
            0x130 => lowered.extend_from_slice(b"i\xff"),
            _ => lowered.push(0xFF),
        }
    }
    VOLATILE_KEYS.iter().any(|name| lowered == name.as_bytes())
        || VOLATILE_SUFFIXES
            .iter()
            .any(|ending| lowered.ends_with(ending.as_bytes()))
}

/// Whether some part of the pattern could match in `text`: every alternative but the hex one
/// needs a decimal digit starting it (a hex digit that is `\d`, so ASCII), and a UUID a
/// hyphen; a hex run without a digit is kept as it is. Most prose has neither.
fn may_hold_a_volatile_value<T: Unit>(text: &[T]) -> bool {
    text.iter().any(|&c| {
        let c = c.into();
        is_ascii_digit(c) || c == u32::from(b'-')
    })
}

/// `mask_text(text)` as code points, or None when nothing in it is masked (the text stays as
/// it is). A hex run without a decimal digit is a word made of a–f letters, not an id: it is
/// kept, and the search goes on after it, as `re.sub` with the module's replacement does.
pub fn mask_text<T: Unit>(text: &[T]) -> Option<Vec<u32>> {
    if !may_hold_a_volatile_value(text) {
        return None;
    }
    let mut out: Option<Vec<u32>> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        let Some((kind, end)) = match_at(text, at) else {
            at += 1;
            continue;
        };
        let keep = kind == Kind::Hex && !text[at..end].iter().any(|&c| is_ascii_digit(c.into()));
        if !keep {
            let out = out.get_or_insert_with(|| Vec::with_capacity(text.len()));
            out.extend(text[copied..at].iter().map(|&c| c.into()));
            out.extend(kind.placeholder().chars().map(u32::from));
            copied = end;
        }
        at = end;
    }
    out.map(|mut out| {
        out.extend(text[copied..].iter().map(|&c| c.into()));
        out
    })
}

fn is_ascii_digit(c: u32) -> bool {
    (u32::from(b'0')..=u32::from(b'9')).contains(&c)
}

#[cfg(test)]
mod tests {
    use super::mask_text;

    fn masked(text: &str) -> String {
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        match mask_text(&points) {
            Some(out) => out.into_iter().filter_map(char::from_u32).collect(),
            None => text.to_owned(),
        }
    }

    #[test]
    fn masks_the_modules_example() {
        assert_eq!(
            masked("job 3f2a9c1e7b6d40aa running since 2026-12-01T02:50:38Z (12.5s)"),
            "job <hex> running since <time> (<elapsed>)"
        );
    }

    #[test]
    fn each_kind() {
        assert_eq!(
            masked("id 0f8e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b."),
            "id <uuid>."
        );
        assert_eq!(masked("at 12:04:59.3 now"), "at <time> now");
        assert_eq!(masked("t=1764556800"), "t=<epoch>");
        assert_eq!(
            masked("took 2m30s, 12 seconds"),
            "took <elapsed>, <elapsed>"
        );
        assert_eq!(masked("sha 9f86d081884c"), "sha <hex>");
    }

    #[test]
    fn keeps_what_is_no_volatile_value() {
        // A hex run without a digit is a word; terminal colours are no minutes; counts stay.
        assert_eq!(masked("acceded deadbeefcafe"), "acceded deadbeefcafe");
        assert_eq!(masked("\u{1b}[0m\u{1b}[38;21m"), "\u{1b}[0m\u{1b}[38;21m");
        assert_eq!(masked("3 files, line 42"), "3 files, line 42");
    }

    #[test]
    fn gives_back_to_find_a_boundary() {
        // The zone is given back when a word character follows it; the fraction when its
        // digits run into a word.
        assert_eq!(masked("2024-01-01T10:00:00+05:30x"), "<time>+05:30x");
        assert_eq!(masked("1234567890.5x"), "<epoch>.5x");
        // "secs" is not followed by a boundary here, so "sec" is no unit either; "s" neither.
        assert_eq!(masked("5 secsx"), "5 secsx");
        assert_eq!(masked("1ms2s"), "<elapsed>");
    }
}
