//! The text-run check (`vthread.textrun.has_repeated_text_run`) over the code
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
use xxhash_rust::xxh3::xxh3_64;

/// Only the last 4000 UTF-16 code units of a text are read (the reference's `slice(-4000)`).
pub const TAIL_UNITS: usize = 4000;

/// The last `count` characters of `text` (all of it when it has fewer): a text's last
/// `TAIL_UNITS` characters hold at least the `TAIL_UNITS` UTF-16 units the check reads.
pub fn last_characters(text: &str, count: usize) -> &str {
    if text.len() <= count {
        return text; // no more bytes than `count`, so no more characters
    }
    match count.checked_sub(1) {
        Some(back) => text
            .char_indices()
            .rev()
            .nth(back)
            .map_or(text, |(at, _)| &text[at..]),
        None => "",
    }
}

/// Texts per rayon task: enough to amortise a task, small enough to balance two cores.
const TEXTS_PER_TASK: usize = 32;

/// Below this many code points in all (tails only) the batch runs on the calling thread.
/// Starting a pool costs about 130 us on the 2-core benchmark machine, what one thread reads
/// of 65,000-130,000 code points; two threads pay for it from about twice that.
const PARALLEL_FROM_POINTS: usize = 1 << 18;

/// The non-ASCII code points whose full lower-case form (Python's `str.lower`, JavaScript's
/// `toLowerCase`) holds an ASCII letter or digit, with that form. Found by lower-casing every
/// code point; `tests/test_text_runs.py` (with Python's `str.lower`) and the unit test below
/// (with Rust's tables) regenerate the list. U+0130's form is `i` followed by U+0307
/// COMBINING DOT ABOVE, which is a break.
pub const ASCII_LOWERINGS: [(u32, &str); 2] = [
    (0x0130, "i\u{307}"), // LATIN CAPITAL LETTER I WITH DOT ABOVE
    (0x212A, "k"),        // KELVIN SIGN
];

/// Resolved options, as `vthread._options.text_run_options` makes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextRunOptions {
    pub min_units: usize,
    pub window: usize,
    pub max_unique_ratio: f64,
}

impl TextRunOptions {
    /// Whether these are options `text_run_options` can make: `min_units >= 2`,
    /// `window >= min_units`, `0 < max_unique_ratio <= 1`. The check relies on it.
    pub fn is_resolved(&self) -> bool {
        self.min_units >= 2
            && self.window >= self.min_units
            && self.max_unique_ratio > 0.0
            && self.max_unique_ratio <= 1.0
    }
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
    /// How many code points.
    pub fn len(self) -> usize {
        match self {
            CodePoints::Latin1(points) => points.len(),
            CodePoints::Ucs2(points) => points.len(),
            CodePoints::Ucs4(points) => points.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Every code point, widened.
    pub fn to_vec(self) -> Vec<u32> {
        match self {
            CodePoints::Latin1(points) => points.iter().map(|&c| u32::from(c)).collect(),
            CodePoints::Ucs2(points) => points.iter().map(|&c| u32::from(c)).collect(),
            CodePoints::Ucs4(points) => points.to_vec(),
        }
    }

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

/// A code point's class (see the module comment): below [`WORD`] a separator, a break or a
/// lowering (look it up in [`ASCII_LOWERINGS`]); from [`WORD`] on, the `[a-z0-9]` byte it
/// lower-cases to.
const SEPARATOR: u8 = 0;
const BREAK: u8 = 1;
const LOWERING: u8 = 2;
const WORD: u8 = b'0';

const fn latin1_classes() -> [u8; 256] {
    let mut classes = [BREAK; 256];
    let mut c = 0;
    while c < 256 {
        let byte = c as u8;
        classes[c] = match byte {
            b'.' | b'!' | b'?' | b'\n' => SEPARATOR,
            b'a'..=b'z' | b'0'..=b'9' => byte,
            b'A'..=b'Z' => byte + 32,
            _ => BREAK, // no other Latin-1 code point lower-cases to an ASCII letter
        };
        c += 1;
    }
    classes
}

/// The class of every Latin-1 code point.
static LATIN1_CLASSES: [u8; 256] = latin1_classes();

#[inline]
fn class_of(c: u32) -> u8 {
    if c < 256 {
        LATIN1_CLASSES[c as usize]
    } else if ASCII_LOWERINGS.iter().any(|&(point, _)| point == c) {
        LOWERING
    } else {
        BREAK
    }
}

/// Whether `c` separates units (`.`, `!`, `?`, `\n`).
pub(crate) fn is_separator(c: u32) -> bool {
    class_of(c) == SEPARATOR
}

/// One code point of a text's storage: Latin-1, UCS-2 or UCS-4.
pub(crate) trait Point: Copy + Into<u32> {
    #[inline]
    fn class(self) -> u8 {
        class_of(self.into())
    }

    /// The index of the last separator in `points`, if any.
    fn rfind_separator(points: &[Self]) -> Option<usize> {
        points.iter().rposition(|&c| c.class() == SEPARATOR)
    }
}

impl Point for u8 {
    #[inline]
    fn class(self) -> u8 {
        LATIN1_CLASSES[self as usize]
    }

    /// Two SIMD searches, the second over what follows the first's hit only.
    fn rfind_separator(points: &[u8]) -> Option<usize> {
        let stop = memchr::memrchr3(b'.', b'!', b'?', points);
        let after = stop.map_or(0, |index| index + 1);
        memchr::memrchr(b'\n', &points[after..])
            .map(|index| index + after)
            .or(stop)
    }
}

impl Point for u16 {}

impl Point for u32 {}

/// Append the normal form of `raw` (one unit as written, no separator inside) to `out`: its
/// `[a-z0-9]` runs after lower-casing, joined by single spaces. Whether it wrote anything.
///
/// Branch-free per code point (prose alternates words and breaks too irregularly for a branch
/// predictor): a space and the word byte are written unconditionally and kept or overwritten
/// by advancing the length or not. A code point adds at most two bytes (U+0130 after a word:
/// a space and `i`), so `2 * raw.len()` bytes of room, and one for the last scratch write,
/// suffice.
pub(crate) fn push_unit<C: Point>(raw: &[C], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    out.resize(start + 2 * raw.len() + 1, 0);
    let room = &mut out[start..];
    let mut len = 0;
    // A break counts only between two words of the unit: a leading one is trimmed, and a
    // trailing one (no word after it) never writes its space.
    let mut after_break = false;
    // One output class: a word byte (after one space when a break came between words) or
    // a break, which writes nothing that is kept.
    let mut emit = |class: u8, len: &mut usize, after_break: &mut bool| {
        let word = class >= WORD;
        room[*len] = b' ';
        *len += usize::from(word & *after_break & (*len > 0));
        room[*len] = class;
        *len += usize::from(word);
        *after_break = !word;
    };
    for &c in raw {
        let class = c.class();
        if class == LOWERING {
            let point: u32 = c.into();
            for &(_, lowered) in ASCII_LOWERINGS.iter().filter(|&&(p, _)| p == point) {
                for lower in lowered.chars() {
                    emit(class_of(u32::from(lower)), &mut len, &mut after_break);
                }
            }
            continue;
        }
        emit(class, &mut len, &mut after_break);
    }
    out.truncate(start + len);
    len > 0
}

/// How many of `points` (one UTF-16 unit each, those beyond U+FFFF two) lie wholly within the
/// last `units` UTF-16 units: a pair cut by the boundary is left out. JavaScript keeps its low
/// surrogate, but a lone surrogate is a break, and a break before the first unit changes
/// nothing.
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

/// Whether `tail` holds at least `needed` separators (n units need n - 1), searched from the
/// end and stopping there: most texts that cannot hold enough units are rejected by this.
fn has_separators<C: Point>(tail: &[C], needed: usize) -> bool {
    let mut rest = tail;
    for _ in 0..needed {
        match C::rfind_separator(rest) {
            Some(index) => rest = &rest[..index],
            None => return false,
        }
    }
    true
}

/// The units of a tail as written (empty ones included), newest first.
struct RawUnits<'a, C> {
    rest: Option<&'a [C]>,
}

impl<'a, C: Point> RawUnits<'a, C> {
    fn new(tail: &'a [C]) -> Self {
        RawUnits { rest: Some(tail) }
    }
}

impl<'a, C: Point> Iterator for RawUnits<'a, C> {
    type Item = &'a [C];

    fn next(&mut self) -> Option<&'a [C]> {
        let rest = self.rest?;
        Some(match C::rfind_separator(rest) {
            Some(index) => {
                self.rest = Some(&rest[..index]);
                &rest[index + 1..]
            }
            None => {
                self.rest = None;
                rest
            }
        })
    }
}

/// No unit in this slot of [`Scratch::slots`].
const EMPTY: u32 = u32::MAX;

/// Buffers one thread reuses from text to text: the normalised units of the text at hand,
/// newest first, end to end in `bytes`, and an open-addressing set of the distinct ones.
pub struct Scratch {
    /// Places units in `slots` (XXH3-64; tests make every unit collide).
    hash: fn(&[u8]) -> u64,
    bytes: Vec<u8>,
    /// `(start, end)` in `bytes` of each unit.
    spans: Vec<(usize, usize)>,
    hashes: Vec<u64>,
    /// Indices of distinct units, at their hash's slot or the next free one (linear probing);
    /// a unit counts as seen only when its bytes equal a slot's, so hashes only place units
    /// and a collision can never merge two.
    slots: Vec<u32>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            hash: xxh3_64,
            bytes: Vec::new(),
            spans: Vec::new(),
            hashes: Vec::new(),
            slots: Vec::new(),
        }
    }
}

impl Scratch {
    /// The heap memory the buffers hold (kept from one text to the next).
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.spans.capacity() * size_of::<(usize, usize)>()
            + self.hashes.capacity() * size_of::<u64>()
            + self.slots.capacity() * size_of::<u32>()
    }

    fn clear(&mut self, most: usize) {
        self.bytes.clear();
        self.spans.clear();
        self.hashes.clear();
        self.slots.clear();
        // At most `most` units: a table at most half full.
        self.slots.resize((2 * most).next_power_of_two(), EMPTY);
    }

    fn unit(&self, index: usize) -> &[u8] {
        let (start, end) = self.spans[index];
        &self.bytes[start..end]
    }

    /// Normalise `raw` as the next unit; whether it is non-empty and new (never seen before).
    fn push<C: Point>(&mut self, raw: &[C]) -> (bool, bool) {
        let start = self.bytes.len();
        if !push_unit(raw, &mut self.bytes) {
            return (false, false);
        }
        let index = self.spans.len();
        self.spans.push((start, self.bytes.len()));
        let hash = (self.hash)(&self.bytes[start..]);
        self.hashes.push(hash);
        let mask = self.slots.len() - 1;
        let mut slot = hash as usize & mask;
        loop {
            match self.slots[slot] {
                EMPTY => {
                    self.slots[slot] = index as u32;
                    return (true, true);
                }
                seen => {
                    let seen = seen as usize;
                    if self.hashes[seen] == hash && self.unit(seen) == self.unit(index) {
                        return (true, false);
                    }
                }
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// The decision on the tail's code points.
fn runaway<C: Point>(tail: &[C], options: &TextRunOptions, scratch: &mut Scratch) -> bool {
    debug_assert!(options.is_resolved(), "{options:?}");
    if !has_separators(tail, options.min_units - 1) {
        return false;
    }
    // `window >= min_units`, so the newest `window` units answer both questions. A tail of n
    // code points holds at most (n + 1) / 2 units.
    let most = options.window.min(tail.len().div_ceil(2));
    scratch.clear(most);
    // Python compares `len(set(recent)) <= len(recent) * max_unique_ratio`: an int with a
    // float; both counts are small, exact as doubles. Distinct units only grow as older ones
    // are read and `len(recent) <= window`, so more than `window * ratio` of them settles it.
    let ratio = options.max_unique_ratio;
    let most_distinct = options.window as f64 * ratio;
    let mut distinct = 0usize;
    for raw in RawUnits::new(tail) {
        let (kept, new) = scratch.push(raw);
        if new {
            distinct += 1;
            if distinct as f64 > most_distinct {
                return false;
            }
        }
        if kept && scratch.spans.len() == options.window {
            break;
        }
    }
    let recent = scratch.spans.len();
    recent >= options.min_units && distinct as f64 <= recent as f64 * ratio
}

/// `vthread.textrun.has_repeated_text_run` of one text (with resolved options): only its last
/// [`TAIL_UNITS`] UTF-16 units are read. O(4000). `scratch` is any, reused between calls.
pub fn has_repeated_text_run(
    text: CodePoints<'_>,
    options: &TextRunOptions,
    scratch: &mut Scratch,
) -> bool {
    match text.last(TAIL_UNITS) {
        CodePoints::Latin1(points) => runaway(points, options, scratch),
        CodePoints::Ucs2(points) => runaway(points, options, scratch),
        CodePoints::Ucs4(points) => {
            let tail = &points[points.len() - tail_points(points, TAIL_UNITS)..];
            runaway(tail, options, scratch)
        }
    }
}

/// [`has_repeated_text_run`] of every text (None: not a string, never a runaway), in order,
/// on a rayon pool of one thread per CPU (`RAYON_NUM_THREADS` overrides) when there are
/// enough of them.
///
/// The pool is the process's own (`pool.rs`), never rayon's process-wide one nor one
/// inherited across a fork: `vthread.scan(jobs=N)` forks workers.
pub fn has_repeated_text_runs(
    texts: &[Option<CodePoints<'_>>],
    options: &TextRunOptions,
) -> Vec<bool> {
    let one = |scratch: &mut Scratch, text: &Option<CodePoints<'_>>| {
        text.is_some_and(|text| has_repeated_text_run(text, options, scratch))
    };
    let serial = || {
        let mut scratch = Scratch::default();
        texts.iter().map(|text| one(&mut scratch, text)).collect()
    };
    let points: usize = texts.iter().flatten().map(|text| text.len()).sum();
    if points < PARALLEL_FROM_POINTS || texts.len() < 2 * TEXTS_PER_TASK {
        return serial();
    }
    match crate::pool::pool() {
        Some(pool) => pool.install(|| {
            texts
                .par_iter()
                .with_min_len(TEXTS_PER_TASK)
                .map_init(Scratch::default, one)
                .collect()
        }),
        None => serial(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULTS: TextRunOptions = TextRunOptions {
        min_units: 8,
        window: 64,
        max_unique_ratio: 0.5,
    };

    /// The text's units, oldest first.
    fn units(text: &str) -> Vec<String> {
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        let mut units: Vec<String> = RawUnits::new(&points[..])
            .filter_map(|raw| {
                let mut bytes = Vec::new();
                push_unit(raw, &mut bytes).then(|| String::from_utf8(bytes).unwrap())
            })
            .collect();
        units.reverse();
        units
    }

    fn text_of(points: &[u32]) -> String {
        points.iter().filter_map(|&c| char::from_u32(c)).collect()
    }

    fn check(text: &str, options: &TextRunOptions) -> bool {
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        has_repeated_text_run(CodePoints::Ucs4(&points), options, &mut Scratch::default())
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
        assert_eq!(units("\u{130}\u{130}\u{130}"), ["i i i"]);
        assert_eq!(units("\u{212a}\u{212a}\u{130}x"), ["kki x"]);
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
    fn colliding_hashes_never_merge_units() {
        let options = TextRunOptions {
            min_units: 2,
            window: 8,
            max_unique_ratio: 0.5,
        };
        let mut colliding = Scratch {
            hash: |_| 7,
            ..Scratch::default()
        };
        for (text, expected) in [
            ("a. b. c. d. a. b. c. d.", true),
            ("a. b. c. d. e. a. b. c.", false),
            ("a. a. a. b.", true),
            ("a b. ab. a-b. AB.", true),
            ("x. y. z.", false),
        ] {
            let points: Vec<u32> = text.chars().map(u32::from).collect();
            let text = CodePoints::Ucs4(&points);
            assert_eq!(
                has_repeated_text_run(text, &options, &mut colliding),
                expected
            );
            assert_eq!(check(&text_of(&points), &options), expected);
        }
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
        // Enough code points for the pool (PARALLEL_FROM_POINTS).
        let texts: Vec<Vec<u32>> = (0..200)
            .map(|i| {
                let unit = format!("u{}. ", i % 7);
                let fresh: String = (0..i % 300).map(|j| format!("fresh word {j}. ")).collect();
                (fresh + &unit.repeat(i % 13))
                    .chars()
                    .map(u32::from)
                    .collect()
            })
            .collect();
        assert!(texts.iter().map(Vec::len).sum::<usize>() > PARALLEL_FROM_POINTS);
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
            .map(|v| v.is_some_and(|t| has_repeated_text_run(t, &options, &mut Scratch::default())))
            .collect();
        assert_eq!(bulk, each);
        assert!(bulk.iter().any(|&b| b) && !bulk.iter().all(|&b| b));
    }
}
