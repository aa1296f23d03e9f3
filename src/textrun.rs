//! The text-run check (SPEC.md §5, `vthread.textrun.has_repeated_text_run`) over the code
//! points of many texts at once: pure Rust, no Python object touched, so the binding runs it
//! with the GIL released and on every core.
//!
//! A text is read as its PEP 393 storage holds it (one, two or four bytes per code point, lone
//! surrogates included), and only its last [`TAIL_UNITS`] UTF-16 units are read: a text of any
//! length costs O(4000).
//!
//! Normalisation, restated. The reference lower-cases a unit, turns every run of characters
//! outside `[a-z0-9]` and JavaScript whitespace into one space, collapses runs of whitespace
//! into one space and trims. After the first step only `[a-z0-9]`, whitespace and the spaces it
//! wrote remain, so the next two leave exactly the maximal runs of `[a-z0-9]` joined by single
//! spaces: whitespace and every other character play the same part, a *break* between words.
//! So a code point is either a separator (`.`, `!`, `?`, `\n`), or ASCII that lower-cases to
//! `[a-z0-9]`, or one of the few non-ASCII code points whose lower-case form holds ASCII
//! letters ([`ASCII_LOWERINGS`]), or a break.

use rayon::prelude::*;

/// Only the last 4000 UTF-16 code units of a text are read (the reference's `slice(-4000)`).
pub const TAIL_UNITS: usize = 4000;

/// Texts per rayon task: enough to amortise a task, small enough to balance two cores.
const TEXTS_PER_TASK: usize = 32;

/// Below this many texts the batch runs on the calling thread (a pool round trip costs more).
const PARALLEL_FROM: usize = 2 * TEXTS_PER_TASK;

/// The non-ASCII code points whose full lower-case form (Python's `str.lower`, JavaScript's
/// `toLowerCase`) holds an ASCII letter or digit, with that form. Found by lower-casing every
/// code point; `tests/test_text_runs.py` (with Python's `str.lower`) and the unit test below
/// (with Rust's tables) regenerate the list. U+0130's form is `i` followed by U+0307
/// COMBINING DOT ABOVE, which is a break.
pub const ASCII_LOWERINGS: [(u32, &str); 2] = [
    (0x0130, "i\u{307}"), // LATIN CAPITAL LETTER I WITH DOT ABOVE
    (0x212A, "k"),        // KELVIN SIGN
];

/// Resolved options, as `vthread._options.text_run_options` makes them (`window >= min_units`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextRunOptions {
    pub min_units: usize,
    pub window: usize,
    pub max_unique_ratio: f64,
}

/// The code points of one text as Python stores them: Latin-1, UCS-2 (lone surrogates are
/// single code points) or UCS-4.
#[derive(Clone, Copy, Debug)]
pub enum CodePoints<'a> {
    Latin1(&'a [u8]),
    Ucs2(&'a [u16]),
    Ucs4(&'a [u32]),
}

impl<'a> CodePoints<'a> {
    /// The last `count` code points (all of them when there are fewer).
    pub fn last(self, count: usize) -> Self {
        fn tail<T>(slice: &[T], count: usize) -> &[T] {
            &slice[slice.len().saturating_sub(count)..]
        }
        match self {
            CodePoints::Latin1(points) => CodePoints::Latin1(tail(points, count)),
            CodePoints::Ucs2(points) => CodePoints::Ucs2(tail(points, count)),
            CodePoints::Ucs4(points) => CodePoints::Ucs4(tail(points, count)),
        }
    }
}

/// What the text-run check makes of one code point (see the module comment).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Class {
    Separator,
    Word(u8),
    Lowering(&'static str),
    Break,
}

#[inline]
fn classify(c: u32) -> Class {
    match c {
        0x2E | 0x21 | 0x3F | 0x0A => Class::Separator,
        0x61..=0x7A | 0x30..=0x39 => Class::Word(c as u8),
        0x41..=0x5A => Class::Word(c as u8 + 32),
        0..=0x7F => Class::Break,
        _ => match ASCII_LOWERINGS.iter().find(|&&(point, _)| point == c) {
            Some(&(_, lowered)) => Class::Lowering(lowered),
            None => Class::Break,
        },
    }
}

/// The normalised units of a text, written end to end into one buffer.
struct Units {
    bytes: Vec<u8>,
    /// `(start, end)` of each non-empty unit in `bytes`.
    spans: Vec<(u32, u32)>,
    /// Where the open unit starts in `bytes`.
    start: usize,
    /// A break was read since the open unit's last word character.
    pending_break: bool,
}

impl Units {
    fn new() -> Self {
        Units {
            bytes: Vec::with_capacity(TAIL_UNITS),
            spans: Vec::new(),
            start: 0,
            pending_break: false,
        }
    }

    #[inline]
    fn word(&mut self, byte: u8) {
        // A break counts only between two words of a unit: a leading one is trimmed, and a
        // trailing one (no word after it) never writes its space.
        if self.pending_break && self.bytes.len() > self.start {
            self.bytes.push(b' ');
        }
        self.pending_break = false;
        self.bytes.push(byte);
    }

    #[inline]
    fn close(&mut self) {
        if self.bytes.len() > self.start {
            self.spans
                .push((self.start as u32, self.bytes.len() as u32));
            self.start = self.bytes.len();
        }
        self.pending_break = false;
    }

    #[inline]
    fn read(&mut self, c: u32) {
        match classify(c) {
            Class::Word(byte) => self.word(byte),
            Class::Separator => self.close(),
            Class::Break => self.pending_break = true,
            Class::Lowering(lowered) => {
                for c in lowered.chars() {
                    match classify(u32::from(c)) {
                        Class::Word(byte) => self.word(byte),
                        _ => self.pending_break = true,
                    }
                }
            }
        }
    }

    fn of<C: Copy + Into<u32>>(points: &[C]) -> Self {
        let mut units = Units::new();
        for &c in points {
            units.read(c.into());
        }
        units.close();
        units
    }

    fn unit(&self, index: usize) -> &[u8] {
        let (start, end) = self.spans[index];
        &self.bytes[start as usize..end as usize]
    }
}

/// How many of `points` (one UTF-16 unit each, `wide` ones two) end within the last `units`
/// UTF-16 units: a pair cut by the boundary is left out. JavaScript keeps its low surrogate,
/// but a lone surrogate is a break, and a break before the first unit changes nothing.
fn tail_points(points: &[u32], units: usize) -> usize {
    let mut taken = 0;
    let mut used = 0;
    for &c in points.iter().rev() {
        used += if c > 0xFFFF { 2 } else { 1 };
        if used > units {
            break;
        }
        taken += 1;
    }
    taken
}

/// The units of the last [`TAIL_UNITS`] UTF-16 units of `text`.
fn units_of(text: CodePoints<'_>) -> Units {
    match text.last(TAIL_UNITS) {
        CodePoints::Latin1(points) => Units::of(points),
        CodePoints::Ucs2(points) => Units::of(points),
        CodePoints::Ucs4(points) => {
            Units::of(&points[points.len() - tail_points(points, TAIL_UNITS)..])
        }
    }
}

/// Whether a text's tail has enough separators to hold `min_units` units (n units need at
/// least n - 1 separators): most texts are rejected by this count alone.
fn may_hold_units(text: CodePoints<'_>, min_units: usize) -> bool {
    fn separators<C: Copy + Into<u32>>(points: &[C]) -> usize {
        points
            .iter()
            .filter(|&&c| matches!(c.into(), 0x2E | 0x21 | 0x3F | 0x0A))
            .count()
    }
    let count = match text.last(TAIL_UNITS) {
        CodePoints::Latin1(points) => separators(points),
        CodePoints::Ucs2(points) => separators(points),
        CodePoints::Ucs4(points) => separators(points),
    };
    count + 1 >= min_units
}

/// The runaway decision on a text's units: at least `min_units` of them, and among the last
/// `window` at most `len * max_unique_ratio` distinct (compared as Python compares an int with
/// a float: both small integers are exact doubles). Units compare by their bytes.
fn runaway(units: &Units, options: &TextRunOptions) -> bool {
    let count = units.spans.len();
    if count < options.min_units {
        return false;
    }
    let first = count.saturating_sub(options.window);
    let mut recent: Vec<&[u8]> = (first..count).map(|index| units.unit(index)).collect();
    recent.sort_unstable();
    recent.dedup();
    recent.len() as f64 <= (count - first) as f64 * options.max_unique_ratio
}

/// `vthread.textrun.has_repeated_text_run` of one text (with resolved options). O(4000).
pub fn has_repeated_text_run(text: CodePoints<'_>, options: &TextRunOptions) -> bool {
    may_hold_units(text, options.min_units) && runaway(&units_of(text), options)
}

/// [`has_repeated_text_run`] of every text (None: not a string, never a runaway), in order,
/// on rayon's pool when there are enough of them.
pub fn has_repeated_text_runs(
    texts: &[Option<CodePoints<'_>>],
    options: &TextRunOptions,
) -> Vec<bool> {
    let one =
        |text: &Option<CodePoints<'_>>| text.is_some_and(|t| has_repeated_text_run(t, options));
    if texts.len() < PARALLEL_FROM {
        return texts.iter().map(one).collect();
    }
    texts
        .par_iter()
        .with_min_len(TEXTS_PER_TASK)
        .map(one)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: TextRunOptions = TextRunOptions {
        min_units: 8,
        window: 64,
        max_unique_ratio: 0.5,
    };

    fn units(text: &str) -> Vec<String> {
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        let units = units_of(CodePoints::Ucs4(&points));
        (0..units.spans.len())
            .map(|index| String::from_utf8(units.unit(index).to_vec()).unwrap())
            .collect()
    }

    fn check(text: &str, options: &TextRunOptions) -> bool {
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        has_repeated_text_run(CodePoints::Ucs4(&points), options)
    }

    #[test]
    fn ascii_lowerings_are_every_non_ascii_code_point_lowering_to_ascii_words() {
        // Rust's case tables (its own Unicode version) must agree with the table.
        let found: Vec<(u32, String)> = (0x80..=0x10_FFFF)
            .filter_map(char::from_u32)
            .filter_map(|c| {
                let lowered: String = c.to_lowercase().collect();
                lowered
                    .bytes()
                    .any(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                    .then(|| (u32::from(c), lowered))
            })
            .collect();
        let table: Vec<(u32, String)> = ASCII_LOWERINGS
            .iter()
            .map(|&(c, lowered)| (c, lowered.to_owned()))
            .collect();
        assert_eq!(found, table);
    }

    #[test]
    fn units_split_lower_and_collapse() {
        assert_eq!(
            units("  Let me CHECK,  again!!\u{2028}x\n\n\u{130}stanbul \u{212a}elvin? --."),
            ["let me check again", "x", "i stanbul kelvin"]
        );
        assert_eq!(units("...\n!?"), Vec::<String>::new());
        assert_eq!(units("a\rb\u{a0}c\u{1F389}d"), ["a b c d"]);
    }

    #[test]
    fn runaway_needs_min_units_and_few_distinct() {
        assert!(check(&"Let me check. ".repeat(8), &DEFAULTS));
        assert!(!check(&"Let me check. ".repeat(7), &DEFAULTS));
        assert!(!check(
            "One. Two. Three. Four. Five. Six. Seven. Eight.",
            &DEFAULTS
        ));
        // 4 distinct of 8 is exactly half: a runaway.
        assert!(check("a. b. c. d. a. b. c. d.", &DEFAULTS));
        assert!(!check("a. b. c. d. e. a. b. c.", &DEFAULTS));
    }

    #[test]
    fn only_the_last_4000_utf16_units_are_read() {
        let loop_text = "Again. ".repeat(40);
        let fresh: String = (0..1000).map(|i| format!("w{i}. ")).collect();
        assert!(!check(&(loop_text.clone() + &fresh), &DEFAULTS));
        assert!(check(&(fresh.clone() + &loop_text), &DEFAULTS));
        // Astral characters count two units each: 4000 of them push the first unit out.
        let astral = "\u{1F389}".repeat(2000);
        assert!(!check(
            &format!("a. {astral}a. a. a. a. a. a. a."),
            &DEFAULTS
        ));
        let narrow = "\u{e9}".repeat(3976);
        assert!(check(
            &format!("a. {narrow}a. a. a. a. a. a. a."),
            &DEFAULTS
        ));
    }

    #[test]
    fn a_pair_cut_at_the_boundary_is_left_out() {
        let points = [0x1F389, 0x61, 0x61];
        assert_eq!(tail_points(&points, 3), 2);
        assert_eq!(tail_points(&points, 4), 3);
        assert_eq!(tail_points(&points, 1), 1);
    }

    #[test]
    fn bulk_equals_the_loop() {
        let texts: Vec<Vec<u32>> = (0..200)
            .map(|i| {
                let unit = format!("u{}. ", i % 7);
                unit.repeat(i % 13).chars().map(u32::from).collect()
            })
            .collect();
        let views: Vec<Option<CodePoints<'_>>> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i % 5 != 0).then_some(CodePoints::Ucs4(t)))
            .collect();
        let options = TextRunOptions {
            min_units: 3,
            window: 5,
            max_unique_ratio: 0.5,
        };
        let bulk = has_repeated_text_runs(&views, &options);
        let each: Vec<bool> = views
            .iter()
            .map(|v| v.is_some_and(|t| has_repeated_text_run(t, &options)))
            .collect();
        assert_eq!(bulk, each);
        assert!(bulk.iter().any(|&b| b) && !bulk.iter().all(|&b| b));
    }
}
