//! Stable 64-bit fingerprints: XXH3-64 (seed 0) of canonical encodings, the same number in
//! every process and on every machine as `xxhash.xxh3_64_intdigest` of the same bytes.

use xxhash_rust::xxh3::xxh3_64;

/// Separates the parts of a message key; never inside a canonical text (which is ASCII
/// without control characters).
pub const PART_SEPARATOR: u8 = 0;
/// Stands for an absent `meta`; never a canonical text, so absent differs from every value.
pub const ABSENT_META: &[u8] = b"-";

/// The fingerprint of one canonical encoding.
#[inline]
pub fn of_canonical(bytes: &[u8]) -> u64 {
    xxh3_64(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh3_matches_the_published_vectors() {
        // XXH3-64 of the empty input, seed 0 (the xxHash reference value).
        assert_eq!(of_canonical(b""), 0x2D06_8005_38D3_94C2);
    }
}
