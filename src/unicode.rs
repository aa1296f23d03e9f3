//! Character classes the guard and the text-run check need, as the reference reads them:
//! JavaScript's whitespace set and the guard's word normal form (lower-cased, only Unicode
//! letters and numbers kept).

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
/// with surrogate pairs already joined (lone surrogates may remain; they are never kept).
///
/// Interim: Rust's own case tables and `is_alphanumeric`; exact tables follow.
pub fn push_word_normal(word: &[u32], out: &mut Vec<u8>) {
    let text: String = word.iter().filter_map(|&c| char::from_u32(c)).collect();
    for c in text.to_lowercase().chars() {
        if c.is_alphanumeric() {
            let mut buffer = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buffer).as_bytes());
        }
    }
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
}
