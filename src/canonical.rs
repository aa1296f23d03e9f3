//! The canonical JavaScript encoding, byte for byte the text `vthread._jsvalue.canonical`
//! writes: compact JSON of a value as JavaScript holds it. Numbers are doubles (`1` and `1.0`
//! alike, `-0` as `0`, NaN and the infinities as `null`, other non-integral or large values in
//! Python's shortest `repr`), strings escaped to ASCII over their UTF-16 code units (so a
//! surrogate pair written as two code points equals its astral character and a lone surrogate
//! stays distinct), object keys in JavaScript's order. Two values encode alike exactly when
//! their `JSON.stringify` texts are equal (JavaScript value equality).
//!
//! Nothing here touches Python: the object walker (`objects.rs`) and the JSON reader share it.

/// What stands in for a value `JSON.stringify` would throw on (a cycle, nesting too deep),
/// and for one holding a Python value without a JSON form (a set, bytes, any other
/// object): the whole value, as production compares it ("[unserializable]"); `!` never
/// starts JSON text.
pub const UNSERIALIZABLE: &[u8] = b"!";

/// Nesting deeper than this encodes as [`UNSERIALIZABLE`] (as in `vthread._jsvalue`, which
/// says where the figure comes from: Node 20's `JSON.stringify`).
pub const MAX_DEPTH: usize = 4_160;

/// Largest canonical array index JavaScript orders first among an object's keys.
const ARRAY_INDEX_LIMIT: u64 = 4_294_967_294;

/// 2**53: integers strictly inside ±this are exact doubles and print as integers.
const SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_unit_escape(out: &mut Vec<u8>, unit: u32) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize]);
    }
}

/// One UTF-16 code unit (or a Latin-1 / ASCII character) as Python's `json` writes it with
/// `ensure_ascii=True`.
#[inline]
fn push_unit(out: &mut Vec<u8>, unit: u32) {
    match unit {
        0x22 => out.extend_from_slice(b"\\\""),
        0x5C => out.extend_from_slice(b"\\\\"),
        0x0A => out.extend_from_slice(b"\\n"),
        0x0D => out.extend_from_slice(b"\\r"),
        0x09 => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0C => out.extend_from_slice(b"\\f"),
        0x20..=0x7E => out.push(unit as u8),
        _ => push_unit_escape(out, unit),
    }
}

/// A code point, split into its UTF-16 units first when it is astral.
#[inline]
pub fn push_code_point(out: &mut Vec<u8>, code_point: u32) {
    if code_point >= 0x1_0000 {
        let offset = code_point - 0x1_0000;
        push_unit_escape(out, 0xD800 | (offset >> 10));
        push_unit_escape(out, 0xDC00 | (offset & 0x3FF));
    } else {
        push_unit(out, code_point);
    }
}

/// Whether a Latin-1 character is written as itself: printable ASCII but `"` and `\\`.
#[inline]
fn is_plain(byte: u8) -> bool {
    (0x20..=0x7E).contains(&byte) && byte != b'"' && byte != b'\\'
}

/// Whether some byte of `word` is not plain ([`is_plain`]), eight at a time. Each test is
/// exact for "some byte is" (the bit tricks' false alarms fall only on bytes above one that
/// is): a byte below 0x20 (the subtraction borrows into its high bit), one at 0x7F or above
/// (adding one sets the high bit, or it was set), a `"` or a `\\` (a zero byte after the
/// exclusive or).
#[inline]
fn holds_special(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |value: u64| value.wrapping_sub(ONES) & !value & HIGHS;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    let delete_or_above = (word.wrapping_add(ONES) | word) & HIGHS;
    (below_space
        | delete_or_above
        | zero_byte(word ^ (ONES * 0x22))
        | zero_byte(word ^ (ONES * 0x5C)))
        != 0
}

/// A quoted string from Latin-1 (one byte per code point) storage: runs of plain characters
/// (most of a text) copied whole, found eight bytes at a time; the rest as [`push_unit`]
/// writes each (held equal to writing every character so by a test).
pub fn push_latin1(out: &mut Vec<u8>, text: &[u8]) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut rest = text;
    loop {
        let plain = plain_run(rest);
        out.extend_from_slice(&rest[..plain]);
        match rest.get(plain) {
            Some(&byte) => {
                push_unit(out, u32::from(byte));
                rest = &rest[plain + 1..];
            }
            None => break,
        }
    }
    out.push(b'"');
}

/// A quoted string from UCS-2 storage (its units are UTF-16 units, surrogates included).
pub fn push_ucs2(out: &mut Vec<u8>, text: &[u16]) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    for &unit in text {
        push_unit(out, u32::from(unit));
    }
    out.push(b'"');
}

/// A quoted string from UCS-4 storage (code points, lone surrogates possible).
pub fn push_ucs4(out: &mut Vec<u8>, text: &[u32]) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    for &code_point in text {
        push_code_point(out, code_point);
    }
    out.push(b'"');
}

/// The length of the run of plain characters ([`is_plain`]) `bytes` starts with, found eight
/// bytes at a time.
#[inline]
fn plain_run(bytes: &[u8]) -> usize {
    let mut plain = 0;
    while let Some(word) = bytes.get(plain..plain + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        if holds_special(word) {
            break;
        }
        plain += 8;
    }
    while plain < bytes.len() && is_plain(bytes[plain]) {
        plain += 1;
    }
    plain
}

/// A quoted string from Rust text (no lone surrogates can occur in it): runs of plain ASCII
/// copied whole ([`plain_run`]), every other character as [`push_code_point`] writes it (held
/// equal to writing every character so by a test).
pub fn push_str(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut rest = text;
    loop {
        // A plain run is ASCII, so it ends on a character boundary.
        let plain = plain_run(rest.as_bytes());
        out.extend_from_slice(&rest.as_bytes()[..plain]);
        let mut after = rest[plain..].chars();
        match after.next() {
            Some(character) => {
                push_code_point(out, u32::from(character));
                rest = after.as_str();
            }
            None => break,
        }
    }
    out.push(b'"');
}

/// A double as JavaScript holds it, in the digits `vthread._jsvalue._number` writes.
pub fn push_double(out: &mut Vec<u8>, value: f64) {
    if !value.is_finite() {
        out.extend_from_slice(b"null");
    } else if value.fract() == 0.0 && value.abs() < SAFE_INTEGER {
        // Exact in an i64; -0.0 becomes 0, as JavaScript prints it.
        push_integer(out, value as i64);
    } else {
        push_python_repr(out, value);
    }
}

/// An integer that fits in an i64: exact inside ±2**53, else rounded to a double first.
pub fn push_i64(out: &mut Vec<u8>, value: i64) {
    if value.unsigned_abs() < SAFE_INTEGER as u64 {
        push_integer(out, value);
    } else {
        // `as` rounds to nearest, ties to even: Python's float(int) and JavaScript agree.
        push_double(out, value as f64);
    }
}

fn push_integer(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(value.to_string().as_bytes());
}

/// Python's `repr(float)`: the shortest digits that round-trip, fixed notation while the
/// decimal exponent is in [-4, 16), scientific (`1e+16`, `1.5e-07`) outside it.
pub(crate) fn push_python_repr(out: &mut Vec<u8>, value: f64) {
    let (digits, point) = shortest_digits(value.abs());
    if value.is_sign_negative() {
        out.push(b'-');
    }
    if (-3..=16).contains(&point) {
        if point <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-point) as usize));
            out.extend_from_slice(&digits);
        } else if point as usize >= digits.len() {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat_n(b'0', point as usize - digits.len()));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..point as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[point as usize..]);
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let shown = point - 1;
        out.push(b'e');
        out.push(if shown < 0 { b'-' } else { b'+' });
        let magnitude = shown.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(magnitude.to_string().as_bytes());
    }
}

/// The shortest digits that read back as the finite `magnitude` (not negative), a tie taken
/// to the even candidate as Python's `repr` and JavaScript's `Number::toString` take it
/// (`even_neighbour`), with where the point goes: the digits `d1 d2 ...` stand for
/// `0.d1d2... × 10^point`.
pub(crate) fn shortest_digits(magnitude: f64) -> (Vec<u8>, i32) {
    // Rust's `{:e}` prints the shortest round-trip digits: `1.2345e17`, `5e-324`.
    let scientific = format!("{magnitude:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("LowerExp always writes an exponent");
    let mut exponent: i32 = exponent
        .parse()
        .expect("LowerExp writes a decimal exponent");
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if let Some((even, shifted)) = even_neighbour(magnitude, &digits, exponent) {
        (digits, exponent) = (even, shifted);
    }
    (digits, exponent + 1)
}

/// A finite double as JavaScript's `String(value)` writes it (`documents.js_number_text`):
/// the shortest digits that read back as it, in plain notation from 1e-6 up to 1e21, in
/// exponent notation outside.
pub(crate) fn js_number_text(value: f64) -> String {
    if value == 0.0 {
        return "0".to_owned();
    }
    let sign = if value < 0.0 { "-" } else { "" };
    let (digits, point) = shortest_digits(value.abs());
    let digits = String::from_utf8(digits).expect("ASCII digits");
    let count = digits.len() as i32;
    let text = if count <= point && point <= 21 {
        format!("{digits}{}", "0".repeat((point - count) as usize))
    } else if 0 < point && point <= 21 {
        let (whole, fraction) = digits.split_at(point as usize);
        format!("{whole}.{fraction}")
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_owned()
        } else {
            format!("{first}.{rest}")
        };
        let exponent_sign = if point > 0 { '+' } else { '-' };
        format!("{mantissa}e{exponent_sign}{}", (point - 1).abs())
    };
    format!("{sign}{text}")
}

/// Largest exact decimal significand examined for ties: a double with more significant
/// digits than 18 cannot lie halfway between two candidates of at most 17 digits.
const TIE_DIGITS_LIMIT: u128 = 1_000_000_000_000_000_000;

/// When the exact value of `magnitude` lies halfway between two shortest candidates
/// (900719925474099.25 between `…099.2` and `…099.3`), Rust's `{:e}` may take the odd one;
/// Python's `repr` (dtoa's round-half-even) and JavaScript's `Number::toString` take the
/// even one. That even neighbour of `digits` × 10^`exponent` (scientific) when it differs and
/// round-trips, else None. Only doubles with at most 18 exact significant digits can tie,
/// found with integer arithmetic, so the common case costs a few instructions.
fn even_neighbour(magnitude: f64, digits: &[u8], exponent: i32) -> Option<(Vec<u8>, i32)> {
    if digits.last().is_none_or(|digit| digit % 2 == 0) {
        return None; // ASCII digits: even characters are even digits
    }
    let bits = magnitude.to_bits();
    let biased = (bits >> 52) & 0x7FF;
    let fraction = bits & ((1 << 52) - 1);
    let (mut significand, mut binary_exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased as i32 - 1075)
    };
    let zeros = significand.trailing_zeros();
    significand >>= zeros;
    binary_exponent += zeros as i32;
    // The exact value is `exact` × 10^-`places`.
    let (exact, places) = if binary_exponent >= 0 {
        let shifted = u128::from(significand).checked_shl(binary_exponent as u32)?;
        (shifted, 0)
    } else {
        let places = binary_exponent.unsigned_abs();
        (
            u128::from(significand).checked_mul(5u128.checked_pow(places)?)?,
            places as i32,
        )
    };
    if exact >= TIE_DIGITS_LIMIT {
        return None;
    }
    let text = exact.to_string();
    let leading = text.len() as i32 - 1 - places; // scientific exponent of the exact value
    let significant = text.trim_end_matches('0').as_bytes();
    if significant.len() != digits.len() + 1 || significant.last() != Some(&b'5') {
        return None;
    }
    // The two candidates: the exact digits cut short, and one unit more in the last place.
    let mut candidate = significant[..digits.len()].to_vec();
    let mut candidate_exponent = leading;
    if candidate.last().is_some_and(|digit| digit % 2 == 1) {
        let mut place = candidate.len();
        loop {
            if place == 0 {
                candidate.insert(0, b'1');
                candidate_exponent += 1;
                break;
            }
            place -= 1;
            if candidate[place] == b'9' {
                candidate[place] = b'0';
            } else {
                candidate[place] += 1;
                break;
            }
        }
        while candidate.len() > 1 && candidate.last() == Some(&b'0') {
            candidate.pop();
        }
    }
    if candidate == digits && candidate_exponent == exponent {
        return None;
    }
    let mut written = vec![candidate[0]];
    if candidate.len() > 1 {
        written.push(b'.');
        written.extend_from_slice(&candidate[1..]);
    }
    written.extend_from_slice(format!("e{candidate_exponent}").as_bytes());
    let round_trips = std::str::from_utf8(&written)
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        == Some(magnitude);
    round_trips.then_some((candidate, candidate_exponent))
}

/// The key's value as a canonical array index (`"0"`, `"7"`, not `"07"`, at most
/// 4294967294), which JavaScript enumerates before every other key, in numeric order.
pub fn array_index(key: &[u8]) -> Option<u64> {
    if key.is_empty() || key.len() > 10 || !key.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if key.len() > 1 && key[0] == b'0' {
        return None;
    }
    let value = key
        .iter()
        .fold(0u64, |acc, &digit| acc * 10 + u64::from(digit - b'0'));
    (value <= ARRAY_INDEX_LIMIT).then_some(value)
}

/// One object member already encoded: its key text (quoted) and its value text.
pub struct Member {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// Write `{…}` with members in JavaScript's order: array-index keys ascending first (stable
/// among equal indices), then the others in the order given. `raw_keys[i]` is member `i`'s
/// key as unquoted canonical bytes when it is plain ASCII digits, for the index test.
pub fn push_object(out: &mut Vec<u8>, members: Vec<(Option<u64>, Member)>) {
    let mut members = members;
    if members.iter().any(|(index, _)| index.is_some()) {
        // Stable: indices ascending, the rest after them in insertion order.
        members.sort_by_key(|(index, _)| index.map_or((1, 0), |value| (0, value)));
    }
    out.push(b'{');
    for (position, (_, member)) in members.into_iter().enumerate() {
        if position > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&member.key);
        out.push(b':');
        out.extend_from_slice(&member.value);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(value: f64) -> String {
        let mut out = Vec::new();
        push_double(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn doubles_print_as_python_repr_or_javascript_integers() {
        assert_eq!(double(1.0), "1");
        assert_eq!(double(-0.0), "0");
        assert_eq!(double(f64::NAN), "null");
        assert_eq!(double(f64::NEG_INFINITY), "null");
        assert_eq!(double(1e16), "1e+16");
        assert_eq!(double(1e-5), "1e-05");
        assert_eq!(double(0.0001), "0.0001");
        assert_eq!(double(1.5e300), "1.5e+300");
        assert_eq!(double(9_007_199_254_740_992.0), "9007199254740992.0");
        assert_eq!(double(-1e-7), "-1e-07");
        assert_eq!(double(123_456_789_012_345_680.0), "1.2345678901234568e+17");
        assert_eq!(double(5e-324), "5e-324");
        assert_eq!(double(2.5), "2.5");
        assert_eq!(double(-1234.5678), "-1234.5678");
    }

    #[test]
    fn digit_ties_go_to_the_even_neighbour_as_python_repr() {
        // Exactly halfway between two 16-digit candidates that both round-trip.
        assert_eq!(double(900_719_925_474_099.0 + 0.25), "900719925474099.2");
        assert_eq!(
            double(-(900_719_925_474_099.0 + 0.25)),
            "-900719925474099.2"
        );
        assert_eq!(double(900_719_925_474_099.0 + 0.75), "900719925474099.8");
        assert_eq!(double(1_125_899_906_842_624.5), "1125899906842624.5");
        assert_eq!(double(0.5), "0.5");
        assert_eq!(double(2.5), "2.5");
    }

    #[test]
    fn large_integers_round_to_doubles() {
        let mut out = Vec::new();
        push_i64(&mut out, 1 << 60);
        assert_eq!(out, b"1.152921504606847e+18");
        out.clear();
        push_i64(&mut out, (1 << 53) - 1);
        assert_eq!(out, b"9007199254740991");
    }

    /// The obvious twin of `push_latin1`: every character through `push_unit`.
    fn latin1_by_unit(text: &[u8]) -> Vec<u8> {
        let mut out = vec![b'"'];
        for &byte in text {
            push_unit(&mut out, u32::from(byte));
        }
        out.push(b'"');
        out
    }

    fn latin1(text: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        push_latin1(&mut out, text);
        out
    }

    #[test]
    fn latin1_runs_write_what_each_character_writes() {
        // Every byte value at every place of a plain text, across two words and a tail.
        let plain = b"The quick brown fox jumps ove";
        for at in 0..plain.len() {
            for byte in 0..=255u8 {
                let mut text = plain.to_vec();
                text[at] = byte;
                assert_eq!(
                    latin1(&text),
                    latin1_by_unit(&text),
                    "byte {byte:#x} at {at}"
                );
            }
        }
        // Drawn texts, mostly plain, with specials and high bytes anywhere, of every length.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for length in 0..2_000 {
            let text: Vec<u8> = (0..length % 97)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    match state % 16 {
                        0 => (state >> 8) as u8,
                        1 => b"\"\\\n\x7f\x1f\x80\xff\x20\x7e"[(state >> 8) as usize % 9],
                        _ => b'a' + (state >> 8) as u8 % 26,
                    }
                })
                .collect();
            assert_eq!(latin1(&text), latin1_by_unit(&text), "{text:?}");
        }
    }

    /// The obvious twin of `push_str`: every character through `push_code_point`.
    fn str_by_character(text: &str) -> Vec<u8> {
        let mut out = vec![b'"'];
        for character in text.chars() {
            push_code_point(&mut out, u32::from(character));
        }
        out.push(b'"');
        out
    }

    #[test]
    fn str_runs_write_what_each_character_writes() {
        let specials = [
            '"', '\\', '\n', '\u{7f}', '\u{1f}', 'é', '\u{ff}', '€', '🎉', ' ', '~',
        ];
        let plain = "The quick brown fox jumps ove";
        for at in 0..plain.len() {
            for special in specials {
                let mut text = plain.to_owned();
                text.insert(at, special);
                let mut out = Vec::new();
                push_str(&mut out, &text);
                assert_eq!(out, str_by_character(&text), "{text:?}");
            }
        }
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for length in 0..2_000 {
            let text: String = (0..length % 61)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    match state % 12 {
                        0 => char::from_u32((state >> 8) as u32 % 0x11_0000).unwrap_or('\u{fffd}'),
                        1 => specials[(state >> 8) as usize % specials.len()],
                        _ => char::from(b'a' + (state >> 8) as u8 % 26),
                    }
                })
                .collect();
            let mut out = Vec::new();
            push_str(&mut out, &text);
            assert_eq!(out, str_by_character(&text), "{text:?}");
        }
    }

    #[test]
    fn strings_escape_to_ascii_over_utf16_units() {
        let mut astral = Vec::new();
        push_ucs4(&mut astral, &[0x1F389]);
        let mut pair = Vec::new();
        push_ucs2(&mut pair, &[0xD83C, 0xDF89]);
        assert_eq!(astral, pair);
        assert_eq!(astral, br#""\ud83c\udf89""#);
        let mut control = Vec::new();
        push_latin1(&mut control, b"\x7f\x00\"\\/\n\xe9");
        assert_eq!(control, br#""\u007f\u0000\"\\/\n\u00e9""#);
        let mut rust = Vec::new();
        push_str(&mut rust, "é🎉");
        assert_eq!(rust, br#""\u00e9\ud83c\udf89""#);
    }

    #[test]
    fn array_indices_are_canonical_and_bounded() {
        assert_eq!(array_index(b"0"), Some(0));
        assert_eq!(array_index(b"4294967294"), Some(4_294_967_294));
        assert_eq!(array_index(b"4294967295"), None);
        assert_eq!(array_index(b"07"), None);
        assert_eq!(array_index(b""), None);
        assert_eq!(array_index(b"1a"), None);
    }

    #[test]
    fn objects_order_indices_first() {
        let member = |key: &str, value: &str| Member {
            key: format!("\"{key}\"").into_bytes(),
            value: value.as_bytes().to_vec(),
        };
        let mut out = Vec::new();
        push_object(
            &mut out,
            vec![
                (None, member("b", "1")),
                (Some(10), member("10", "2")),
                (Some(2), member("2", "3")),
                (None, member("a", "4")),
            ],
        );
        assert_eq!(out, br#"{"2":3,"10":2,"b":1,"a":4}"#);
    }
}
