//! Character classes the guard and the text-run check need, as the reference reads them:
//! JavaScript's whitespace set and the guard's word normal form (lower-cased, only Unicode
//! letters and numbers kept), and the classes of Python's `re` the masking pattern uses.
//!
//! The normal form must be, byte for byte, what production's `toLowerCase` and
//! `[\p{L}\p{N}]` give under Node 20, as the Python layer's `vthread.guard.normalize` gives
//! it too: Rust's `to_lowercase` and `is_alphanumeric` follow the toolchain's Unicode version
//! and other properties (Alphabetic is not `L*`: U+0345 is Alphabetic but `Mn`), so the
//! tables in `unicode_tables.rs` are generated from Node's own reading of every code point
//! (kept in `vthread/_js_unicode_tables.py`) by `tools/unicode_tables.py`, and a test fails
//! when the two files no longer agree. JavaScript's whitespace is a fixed list that no
//! Unicode version changes, so it stays a `match`.

use crate::unicode_tables::{
    CASED, CASE_IGNORABLE, DECIMAL, JS_LETTER_OR_NUMBER, LETTER_OR_NUMBER, LOWER, LOWER_EXPANDED,
    NOT_PRINTABLE, UNASSIGNED,
};

const CAPITAL_SIGMA: u32 = 0x3A3;
const SMALL_FINAL_SIGMA: u32 = 0x3C2;
const SMALL_SIGMA: u32 = 0x3C3;

/// Whether `c` is in JavaScript's `\s` set (ECMAScript WhiteSpace and LineTerminator).
#[inline]
pub fn is_js_whitespace(c: u32) -> bool {
    match c {
        0x09..=0x0D | 0x20 => true,
        0..=0x9F => false,
        0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000 | 0xFEFF => {
            true
        }
        _ => false,
    }
}

/// Append the guard's normal form of `word` as UTF-8: the word lower-cased, then only the
/// characters whose general category is a letter or a number kept. `word` holds code points
/// with surrogate pairs already joined (lone surrogates may remain; they are never kept), and
/// is the whole word: it is the context of the Final_Sigma rule.
///
/// O(len(word)): binary searches of the lower-case and category tables per non-ASCII code
/// point (no table has 1,000 ranges), and for each capital sigma a walk over the
/// case-ignorable characters beside it (each such run is walked at most twice).
pub fn push_word_normal(word: &[u32], out: &mut Vec<u8>) {
    let whole = SigmaContext {
        cased_before: false,
        word_ends: true,
    };
    push_piece_normal(word, whole, out);
}

/// Where a piece of a word sits in the word, for the one lower case that depends on
/// neighbours (capital sigma's final form): what the piece cannot see of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SigmaContext {
    /// Whether the last code point before the piece that is not case-ignorable is cased
    /// (false at the word's start).
    pub cased_before: bool,
    /// Whether the word ends with the piece.
    pub word_ends: bool,
}

/// UTF-8 of the final small sigma, which an open sigma (see `push_piece_normal`) becomes:
/// the same length as the small sigma written for it, so it can be put in its place.
pub const FINAL_SIGMA_UTF8: [u8; 2] = [0xCF, 0x82];

/// `push_word_normal` for a piece of a word, its neighbours given by `context`; a capital
/// sigma is lower-cased as it is in the whole word. Only the last capital sigma of a piece
/// the word goes on after can be open: a cased character before it and nothing but
/// case-ignorable ones after it in the piece, so that its form is decided by what follows.
/// It is written as the small sigma, and its index in `out` is returned (see
/// `FINAL_SIGMA_UTF8`; `first_cased` of the following pieces decides it).
///
/// O(len(piece)), as `push_word_normal`.
pub fn push_piece_normal(piece: &[u32], context: SigmaContext, out: &mut Vec<u8>) -> Option<usize> {
    let mut open = None;
    for (at, &c) in piece.iter().enumerate() {
        if c < 0x80 {
            let byte = c as u8;
            if byte.is_ascii_alphanumeric() {
                out.push(byte.to_ascii_lowercase());
            }
        } else if c == CAPITAL_SIGMA {
            let lower = match final_sigma(piece, at, context) {
                Some(true) => SMALL_FINAL_SIGMA,
                Some(false) => SMALL_SIGMA,
                None => {
                    open = Some(out.len());
                    SMALL_SIGMA
                }
            };
            push_utf8(lower, out);
        } else {
            push_lower_kept(c, out);
        }
    }
    open
}

/// Whether the first code point of `codes` that is not case-ignorable is cased; None when
/// every one is case-ignorable (an open sigma before them is still open). O(the
/// case-ignorable run it walks).
pub fn first_cased(codes: &[u32]) -> Option<bool> {
    codes
        .iter()
        .find(|&&c| !is_case_ignorable(c))
        .map(|&c| in_ranges(&CASED, c))
}

/// The `cased_before` of the piece after `codes`, whose own was `cased_before`. O(the
/// case-ignorable run it walks back).
pub fn cased_after(codes: &[u32], cased_before: bool) -> bool {
    codes
        .iter()
        .rev()
        .find(|&&c| !is_case_ignorable(c))
        .map_or(cased_before, |&c| in_ranges(&CASED, c))
}

fn is_case_ignorable(c: u32) -> bool {
    in_ranges(&CASE_IGNORABLE, c)
}

/// Whether `push_word_normal` writes anything for `c` (a code point of a word whose pairs
/// are joined): its lower case holds a letter or a number. Capital sigma's two lower
/// cases are both letters, so the answer needs no context; nothing is allocated.
pub fn keeps_anything(c: u32) -> bool {
    if c < 0x80 {
        return (c as u8).is_ascii_alphanumeric();
    }
    if c == CAPITAL_SIGMA {
        return true;
    }
    let after = LOWER.partition_point(|&(first, ..)| first <= c);
    if after > 0 {
        let (first, last, step, delta) = LOWER[after - 1];
        if c <= last && (c - first) % step == 0 {
            return is_js_letter_or_number(c.wrapping_add_signed(delta));
        }
    }
    if let Ok(at) = LOWER_EXPANDED.binary_search_by_key(&c, |&(from, _)| from) {
        return LOWER_EXPANDED[at]
            .1
            .chars()
            .any(|lower| is_js_letter_or_number(u32::from(lower)));
    }
    is_js_letter_or_number(c)
}

/// Whether JavaScript's `/[\p{L}\p{N}]/u` matches `c` (under Node 20): what the guard keeps.
pub fn is_js_letter_or_number(c: u32) -> bool {
    in_ranges(&JS_LETTER_OR_NUMBER, c)
}

/// Whether the general category of `c` is a letter or a number (`L*`, `N*`), as Python's
/// `unicodedata.category` gives it: `re`'s `\w` in a `str` pattern, besides `_`.
pub fn is_letter_or_number(c: u32) -> bool {
    in_ranges(&LETTER_OR_NUMBER, c)
}

/// Whether `c` is a decimal digit of any script (`str.isdecimal`, `re`'s `\d` in a `str`
/// pattern), as the interpreter's tables give it.
pub fn is_decimal(c: u32) -> bool {
    in_ranges(&DECIMAL, c)
}

/// Whether `repr` of a `str` writes non-ASCII `c` as it is (`str.isprintable`).
pub fn is_printable_non_ascii(c: u32) -> bool {
    !in_ranges(&NOT_PRINTABLE, c)
}

/// Whether `c` is unassigned in the tables' Unicode (a later one may assign it).
pub fn is_unassigned(c: u32) -> bool {
    in_ranges(&UNASSIGNED, c)
}

/// Whether `c` lies in one of `ranges` (inclusive, sorted, disjoint).
fn in_ranges(ranges: &[(u32, u32)], c: u32) -> bool {
    // The last range starting at or before `c` is the only one that can hold it.
    let after = ranges.partition_point(|&(first, _)| first <= c);
    after > 0 && c <= ranges[after - 1].1
}

/// Append the kept characters of `c` lower-cased alone (`c` not U+03A3, whose lower case
/// depends on its neighbours).
fn push_lower_kept(c: u32, out: &mut Vec<u8>) {
    let after = LOWER.partition_point(|&(first, ..)| first <= c);
    if after > 0 {
        let (first, last, step, delta) = LOWER[after - 1];
        if c <= last && (c - first) % step == 0 {
            push_kept(c.wrapping_add_signed(delta), out);
            return;
        }
    }
    if let Ok(at) = LOWER_EXPANDED.binary_search_by_key(&c, |&(from, _)| from) {
        for lower in LOWER_EXPANDED[at].1.chars() {
            push_kept(u32::from(lower), out);
        }
        return;
    }
    push_kept(c, out);
}

fn push_kept(c: u32, out: &mut Vec<u8>) {
    if is_js_letter_or_number(c) {
        push_utf8(c, out);
    }
}

fn push_utf8(c: u32, out: &mut Vec<u8>) {
    // Only letters and numbers get here, never a surrogate, so `c` is always a `char`.
    if let Some(c) = char::from_u32(c) {
        let mut buffer = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
    }
}

/// Unicode's Final_Sigma rule (ICU's, which JavaScript's `toLowerCase` applies, and
/// CPython's `handle_capital_sigma`), for the capital sigma at `piece[at]`: it lower-cases
/// to the final form when a cased character precedes it and none follows it,
/// case-ignorable characters skipped both ways (the `CASED` table leaves out characters
/// that are also case-ignorable: they are skipped before a character is asked whether it
/// is cased). Beyond the piece's ends, `context` answers; None when the answer lies in
/// pieces still to come.
fn final_sigma(piece: &[u32], at: usize, context: SigmaContext) -> Option<bool> {
    let before = piece[..at].iter().rev().find(|&&c| !is_case_ignorable(c));
    if !before.map_or(context.cased_before, |&c| in_ranges(&CASED, c)) {
        return Some(false);
    }
    match first_cased(&piece[at + 1..]) {
        Some(cased) => Some(!cased),
        None if context.word_ends => Some(true),
        None => None,
    }
}

/// `units` (code points of a Python `str`, lone surrogates included) with each high+low
/// surrogate pair made one code point, as a JavaScript string reads them. O(len(units)).
pub fn join_pairs(units: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(units.len());
    let mut at = 0;
    while at < units.len() {
        let c = units[at];
        match units.get(at + 1) {
            Some(&low) if (0xD800..0xDC00).contains(&c) && (0xDC00..0xE000).contains(&low) => {
                out.push(0x1_0000 + ((c - 0xD800) << 10) + (low - 0xDC00));
                at += 2;
            }
            _ => {
                out.push(c);
                at += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_is_javascripts() {
        let expected: Vec<u32> = "\t\n\u{b}\u{c}\r \u{a0}\u{1680}\u{2000}\u{2001}\u{2002}\u{2003}\u{2004}\u{2005}\u{2006}\u{2007}\u{2008}\u{2009}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}\u{feff}"
            .chars()
            .map(u32::from)
            .collect();
        let found: Vec<u32> = (0..0x11_0000).filter(|&c| is_js_whitespace(c)).collect();
        assert_eq!(found, expected);
    }

    fn normal(word: &str) -> String {
        let units: Vec<u32> = word.chars().map(u32::from).collect();
        normal_of(&units)
    }

    fn normal_of(units: &[u32]) -> String {
        let mut out = Vec::new();
        push_word_normal(units, &mut out);
        String::from_utf8(out).expect("the normal form is UTF-8")
    }

    #[test]
    fn capital_sigma_is_final_only_after_a_cased_character() {
        assert_eq!(normal("ΟΔΟΣ"), "οδος");
        assert_eq!(normal("ΣΑΣ"), "σας");
        assert_eq!(normal("Σ"), "σ");
        assert_eq!(normal("ΣΣ"), "σς");
        // U+0345 is both cased and case-ignorable: skipped, and dropped as a mark (Mn).
        assert_eq!(normal("A\u{345}Σ"), "aς");
        assert_eq!(normal("\u{345}Σ"), "σ");
        assert_eq!(normal("ΑΣ\u{345}Β"), "ασβ");
        assert_eq!(normal("ΑΣ'"), "ας");
        assert_eq!(normal("Α'Σ"), "ας");
        assert_eq!(normal("Α-Σ"), "ασ");
    }

    /// The normal form of `word` cut at `cuts`, each piece told only its context, an open
    /// sigma decided by the pieces after it.
    fn normal_in_pieces(word: &[u32], cuts: &[usize]) -> String {
        let mut out = Vec::new();
        let (mut cased_before, mut open, mut from) = (false, None, 0);
        for (k, &to) in cuts.iter().chain([word.len()].iter()).enumerate() {
            let piece = &word[from..to];
            let word_ends = k == cuts.len();
            if let Some(at) = open {
                match first_cased(piece) {
                    Some(true) => open = None,
                    None if !word_ends => {}
                    _ => {
                        let at: usize = at;
                        out[at..at + 2].copy_from_slice(&FINAL_SIGMA_UTF8);
                        open = None;
                    }
                }
            }
            let context = SigmaContext {
                cased_before,
                word_ends,
            };
            if let Some(at) = push_piece_normal(piece, context, &mut out) {
                assert!(open.is_none(), "one open sigma at a time");
                open = Some(at);
            }
            cased_before = cased_after(piece, cased_before);
            from = to;
        }
        assert!(open.is_none(), "the word's end decides every sigma");
        String::from_utf8(out).expect("the normal form is UTF-8")
    }

    #[test]
    fn a_word_in_pieces_is_lower_cased_as_the_whole_word() {
        let words = [
            "ΑΣ",
            "ΑΣΒ",
            "ΑΣ1",
            "Α\u{301}\u{301}Σ\u{ad}'\u{301}:",
            "Α\u{301}Σ\u{2b0}\u{2b0}Β",
            "Α\u{301}Σ\u{2b0}\u{2b0}-",
            "1Σ\u{301}Β",
            "ΣΣ\u{345}Σ",
            "a'Σ'b'Σ'",
            "\u{10400}Σ\u{301}",
        ];
        for word in words {
            let units: Vec<u32> = word.chars().map(u32::from).collect();
            let whole = normal_of(&units);
            for first in 0..=units.len() {
                assert_eq!(
                    normal_in_pieces(&units, &[first]),
                    whole,
                    "{word:?} at {first}"
                );
                for second in first..=units.len() {
                    assert_eq!(
                        normal_in_pieces(&units, &[first, second]),
                        whole,
                        "{word:?} at {first}, {second}"
                    );
                }
            }
        }
    }

    #[test]
    fn lower_case_expansions_and_marks() {
        // U+0130 lower-cases to "i" + U+0307, a mark (Mn) the normal form drops.
        assert_eq!(normal("İ"), "i");
        assert_eq!(normal("Straße"), "straße");
        assert_eq!(normal("ÉTÉ-2024"), "été2024");
        assert_eq!(normal("Don't!"), "dont");
        // Alphabetic is not a letter: U+0345 and U+0BC6 are marks.
        assert_eq!(normal("\u{345}\u{bc6}"), "");
        // Numbers of every kind are kept: U+00B2, U+2167 (lower-cased to U+2177), U+1F100.
        assert_eq!(normal("\u{b2}\u{2167}\u{1f100}"), "\u{b2}\u{2177}\u{1f100}");
    }

    #[test]
    fn lone_surrogates_are_dropped_and_pairs_join() {
        assert_eq!(normal_of(&[0xD800, 0x61, 0xDFFF]), "a");
        let joined = join_pairs(&[0xD83D, 0xDE00, 0xDC00, 0xD800, 0xD801, 0xDC00, 0xD800]);
        assert_eq!(joined, [0x1F600, 0xDC00, 0xD800, 0x10400, 0xD800]);
        assert_eq!(normal_of(&joined), "\u{10428}");
    }

    #[test]
    fn keeps_anything_is_a_non_empty_normal_form() {
        let mut out = Vec::new();
        for c in 0..0x11_0000u32 {
            out.clear();
            push_word_normal(&[c], &mut out);
            assert_eq!(keeps_anything(c), !out.is_empty(), "U+{c:04X}");
        }
    }

    #[test]
    fn tables_are_sorted_and_disjoint() {
        for ranges in [
            &JS_LETTER_OR_NUMBER[..],
            &LETTER_OR_NUMBER[..],
            &DECIMAL[..],
            &CASED[..],
            &CASE_IGNORABLE[..],
        ] {
            assert!(ranges.iter().all(|&(first, last)| first <= last));
            assert!(ranges.windows(2).all(|pair| pair[0].1 + 1 < pair[1].0));
        }
        assert!(LOWER.iter().all(|&(first, last, step, _)| first <= last
            && step > 0
            && (last - first) % step == 0));
        assert!(LOWER.windows(2).all(|pair| pair[0].1 < pair[1].0));
        assert!(LOWER_EXPANDED.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert!(!CASED
            .iter()
            .any(|&(first, last)| { (first..=last).any(|c| in_ranges(&CASE_IGNORABLE, c)) }));
    }
}
