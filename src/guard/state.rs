//! A guard's state written out as bytes and read back (Python pickles a fed guard with
//! it: a harness hands a stream's guard to another process, or keeps it with a paused
//! session), so that the guard read back answers every later push as the one written would.
//!
//! What is written is what the guard has read: each word of the window (normal form,
//! spelling, long-word key, newlines before it), whether n-grams are being counted, the
//! partial and long word under way, the UTF-16 units and the newlines counted so far, the
//! trip's reason and the hash mask (a test hook). The rest is made again on reading by
//! adding the window's words to a fresh window, as the stream added them, hashed with the
//! new guard's own seed (the seed is not written: a state read cannot tell anyone which
//! collisions to aim at the guard): each word's hash, the word counts, the hapax, newline
//! and line-leading totals, the rolled n-gram key and the n-gram counts, which are
//! functions of the words in the window (the keys of n-grams that began with a word gone
//! from the window differ, and are never read). So no bytes can make those counts disagree
//! with the words. A tripped guard answers nothing more until reset: its window is not
//! written.
//!
//! The bytes end with their XXH3-64, so that damage is told, not read; they start with a
//! mark, the layout and the vthread version that wrote them, and a state of another layout
//! or version is refused, not misread (the normal form or a long word's digest may differ
//! between versions). What a checksum cannot catch, bytes made to pass it, is checked value
//! by value: text is UTF-8 (a spelling: generalised UTF-8), counts stay far from overflow,
//! the window and the word under way no longer than the guard holds them.

use xxhash_rust::xxh3::xxh3_64;

use super::{
    slot_hash, ChainedDigest, Ends, Guard, LongWord, NormalSoFar, Options, Reason, Slot,
    DIGEST_BLOCK, NORMAL_KEPT, PIECE,
};

/// The first bytes of a guard's state.
const MARK: &[u8] = b"vthread guard state\n";
/// The layout written here; a state of any other is refused.
const LAYOUT: u8 = 1;
/// The vthread version that writes the state (the crate's is the package's).
const WRITTEN_BY: &str = env!("CARGO_PKG_VERSION");
/// The most a count read may be: past any stream (2**62 units), far from overflow.
const MOST: u64 = 1 << 62;

/// Bytes written in the order they are read back: integers little-endian, a byte string
/// or a list with its length first.
#[derive(Default)]
pub struct StateWriter(Vec<u8>);

impl StateWriter {
    /// A writer that has written the mark, the layout and the version.
    pub fn new() -> Self {
        let mut writer = StateWriter(MARK.to_vec());
        writer.0.push(LAYOUT);
        writer.bytes(WRITTEN_BY.as_bytes());
        writer
    }

    /// The bytes written, sealed with their checksum.
    pub fn sealed(mut self) -> Vec<u8> {
        let sum = xxh3_64(&self.0);
        self.0.extend_from_slice(&sum.to_le_bytes());
        self.0
    }

    pub fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    pub fn flag(&mut self, value: bool) {
        self.0.push(u8::from(value));
    }

    pub fn bytes(&mut self, value: &[u8]) {
        self.u64(value.len() as u64);
        self.0.extend_from_slice(value);
    }

    fn u128(&mut self, value: u128) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    fn f64(&mut self, value: f64) {
        self.u64(value.to_bits());
    }

    fn codes(&mut self, value: &[u32]) {
        self.u64(value.len() as u64);
        for code in value {
            self.0.extend_from_slice(&code.to_le_bytes());
        }
    }
}

/// Reads what a `StateWriter` wrote; every read checks that the bytes hold it.
pub struct StateReader<'a>(&'a [u8]);

impl<'a> StateReader<'a> {
    /// A reader of `state` past its mark, layout and version, once its checksum holds.
    pub fn open(state: &'a [u8]) -> Result<Self, String> {
        let Some(body) = state.len().checked_sub(8).map(|end| &state[..end]) else {
            return Err("it is too short to be one".to_owned());
        };
        if !state.starts_with(MARK) {
            return Err("it does not start as one does".to_owned());
        }
        let sum = u64::from_le_bytes(state[body.len()..].try_into().expect("8 bytes"));
        if body.len() <= MARK.len() || xxh3_64(body) != sum {
            return Err("its checksum does not hold: it is damaged or cut short".to_owned());
        }
        if body[MARK.len()] != LAYOUT {
            return Err(format!(
                "it was written in layout {}, and this vthread reads layout {LAYOUT} \
                 (written by another version of vthread)",
                body[MARK.len()]
            ));
        }
        let mut reader = StateReader(&body[MARK.len() + 1..]);
        let written_by = reader.bytes()?;
        if written_by != WRITTEN_BY.as_bytes() {
            return Err(format!(
                "it was written by vthread {}, and this is vthread {WRITTEN_BY}: a guard's \
                 state is read back by the version that wrote it",
                String::from_utf8_lossy(&written_by)
            ));
        }
        Ok(reader)
    }

    /// Fails unless every byte was read.
    pub fn finish(self) -> Result<(), String> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(format!("{} bytes follow its end", self.0.len()))
        }
    }

    fn take(&mut self, count: usize) -> Result<&'a [u8], String> {
        if count > self.0.len() {
            return Err("it ends inside a value".to_owned());
        }
        let (taken, rest) = self.0.split_at(count);
        self.0 = rest;
        Ok(taken)
    }

    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// A count (`what`): at most `MOST`.
    pub fn count(&mut self, what: &str) -> Result<u64, String> {
        match self.u64()? {
            count if count <= MOST => Ok(count),
            count => Err(format!("{what} is {count}, past any stream")),
        }
    }

    pub fn flag(&mut self) -> Result<bool, String> {
        match self.take(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(format!("a flag is {other}, neither 0 nor 1")),
        }
    }

    pub fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let length = self.length(1)?;
        Ok(self.take(length)?.to_vec())
    }

    fn u128(&mut self) -> Result<u128, String> {
        Ok(u128::from_le_bytes(
            self.take(16)?.try_into().expect("16 bytes"),
        ))
    }

    fn f64(&mut self) -> Result<f64, String> {
        Ok(f64::from_bits(self.u64()?))
    }

    fn codes(&mut self) -> Result<Vec<u32>, String> {
        let length = self.length(4)?;
        Ok(self
            .take(4 * length)?
            .chunks_exact(4)
            .map(|code| u32::from_le_bytes(code.try_into().expect("4 bytes")))
            .collect())
    }

    /// A length of items of `width` bytes each that the rest of the bytes can hold (so
    /// that no length read allocates more than the state's own size).
    fn length(&mut self, width: usize) -> Result<usize, String> {
        let length = self.u64()?;
        match usize::try_from(length) {
            Ok(length) if length <= self.0.len() / width => Ok(length),
            _ => Err(format!("a length of {length} runs past its end")),
        }
    }
}

fn write_options(out: &mut StateWriter, options: Options) {
    out.u64(options.ngram as u64);
    out.u64(options.window as u64);
    out.u64(options.max_repeats);
    out.f64(options.max_unique_ratio);
    out.u64(options.min_chars);
}

/// `bytes` when they are UTF-8 (`surrogates`: generalised UTF-8, a lone surrogate as its
/// three bytes, as the guard keeps a spelling); else why not, naming `what`.
fn checked_text(bytes: Vec<u8>, surrogates: bool, what: &str) -> Result<Vec<u8>, String> {
    let mut rest = bytes.as_slice();
    loop {
        match std::str::from_utf8(rest) {
            Ok(_) => return Ok(bytes),
            Err(error) => {
                let at = error.valid_up_to();
                match rest[at..] {
                    [0xED, 0xA0..=0xBF, 0x80..=0xBF, ..] if surrogates => rest = &rest[at + 3..],
                    _ => return Err(format!("{what} is not UTF-8")),
                }
            }
        }
    }
}

/// Bytes `push_bytes` holds: the start of a character its next bytes may finish.
pub fn unfinished_character(bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    match std::str::from_utf8(&bytes) {
        Ok("") => Ok(bytes),
        Err(error) if error.valid_up_to() == 0 && error.error_len().is_none() => Ok(bytes),
        _ => Err("the bytes it holds are not the start of a character".to_owned()),
    }
}

fn write_ends(out: &mut StateWriter, ends: &Ends) {
    out.bytes(&ends.head);
    out.flag(ends.head_full);
    out.bytes(&ends.tail);
    out.flag(ends.elided);
}

/// Ends of a long word's normal form (`surrogates` false) or of its spelling.
fn read_ends(from: &mut StateReader<'_>, surrogates: bool) -> Result<Ends, String> {
    let what = "a long word's end";
    Ok(Ends {
        head: checked_text(from.bytes()?, surrogates, what)?,
        head_full: from.flag()?,
        tail: checked_text(from.bytes()?, surrogates, what)?,
        elided: from.flag()?,
    })
}

fn write_normal(out: &mut StateWriter, normal: &NormalSoFar) {
    out.bytes(&normal.kept);
    out.u64(normal.bytes);
    out.flag(normal.hash.is_some());
    if let Some(digest) = &normal.hash {
        out.u128(digest.chained);
        out.bytes(&digest.block);
    }
    write_ends(out, &normal.ends);
}

fn read_normal(from: &mut StateReader<'_>) -> Result<NormalSoFar, String> {
    let kept = checked_text(from.bytes()?, false, "a long word's normal form")?;
    let bytes = from.count("a long word's length")?;
    let hash = if from.flag()? {
        let chained = from.u128()?;
        let block = from.bytes()?;
        if block.len() >= DIGEST_BLOCK || !kept.is_empty() {
            return Err("a long word's digest is not one the guard keeps".to_owned());
        }
        Some(ChainedDigest { chained, block })
    } else {
        None
    };
    if kept.len() > NORMAL_KEPT {
        return Err("a long word keeps more of its normal form than the guard does".to_owned());
    }
    Ok(NormalSoFar {
        kept,
        bytes,
        hash,
        ends: read_ends(from, false)?,
    })
}

fn write_long_word(out: &mut StateWriter, long: &LongWord) {
    write_normal(out, &long.normal);
    out.flag(long.final_sigma.is_some());
    if let Some(final_form) = &long.final_sigma {
        write_normal(out, final_form);
    }
    out.flag(long.cased_before);
    write_ends(out, &long.spelling);
}

fn read_long_word(from: &mut StateReader<'_>) -> Result<LongWord, String> {
    let normal = read_normal(from)?;
    let final_sigma = if from.flag()? {
        Some(Box::new(read_normal(from)?))
    } else {
        None
    };
    Ok(LongWord {
        normal,
        final_sigma,
        cased_before: from.flag()?,
        spelling: read_ends(from, true)?,
    })
}

fn write_reason(out: &mut StateWriter, reason: &Reason) {
    out.bytes(&reason.phrase);
    out.u64(reason.count);
    out.bytes(&reason.text);
    out.f64(reason.unique_ratio);
    out.f64(reason.hapax_ratio);
}

fn read_reason(from: &mut StateReader<'_>) -> Result<Reason, String> {
    Ok(Reason {
        phrase: checked_text(from.bytes()?, false, "the reason's phrase")?,
        count: from.count("the reason's count")?,
        text: checked_text(from.bytes()?, true, "the reason's text")?,
        unique_ratio: from.f64()?,
        hapax_ratio: from.f64()?,
    })
}

fn write_slot(out: &mut StateWriter, slot: &Slot) {
    out.bytes(&slot.normal);
    out.flag(slot.spelling_is_normal);
    out.bytes(if slot.spelling_is_normal {
        &[]
    } else {
        &slot.spelling
    });
    out.flag(slot.long.is_some());
    if let Some((bytes, digest)) = slot.long {
        out.u64(bytes);
        out.u128(digest);
    }
    out.u64(slot.newlines);
}

/// A word of the window read back into `slot` (the ring's next), its hash made again.
fn read_slot(
    from: &mut StateReader<'_>,
    slot: &mut Slot,
    seed: u64,
    mask: u64,
) -> Result<(), String> {
    let normal = checked_text(from.bytes()?, false, "a word of its window")?;
    if normal.is_empty() {
        return Err("a word of its window is empty".to_owned());
    }
    slot.spelling_is_normal = from.flag()?;
    slot.spelling = checked_text(from.bytes()?, true, "a word's spelling")?;
    slot.long = if from.flag()? {
        Some((from.count("a long word's length")?, from.u128()?))
    } else {
        None
    };
    slot.hash = slot_hash(&normal, slot.long, seed) & mask;
    slot.normal = normal;
    slot.newlines = from.count("the newlines before a word")?;
    Ok(())
}

impl Guard {
    /// Write the guard's state (see the module's documentation).
    pub fn write_state(&self, out: &mut StateWriter) {
        let window = &self.window;
        write_options(out, window.options);
        out.u64(window.mask);
        out.u64(self.total);
        out.u64(self.pending_newlines);
        out.codes(&self.partial);
        out.flag(self.long.is_some());
        if let Some(long) = &self.long {
            write_long_word(out, long);
        }
        out.flag(self.reason.is_some());
        if let Some(reason) = &self.reason {
            write_reason(out, reason);
        }
        out.flag(window.counting);
        let words = if self.reason.is_some() {
            0
        } else {
            window.ring.len
        };
        out.u64(words as u64);
        for position in 0..words {
            write_slot(out, window.ring.get(position));
        }
    }

    /// The guard whose state `from` holds, which must have been written by a guard with
    /// `options`; why not, when it cannot be read.
    pub fn read_state(options: Options, from: &mut StateReader<'_>) -> Result<Guard, String> {
        let mut guard = Guard::new(options);
        let mut told = StateWriter(Vec::new());
        write_options(&mut told, options);
        if from.take(told.0.len())? != told.0.as_slice() {
            return Err("it was written by a guard with other options".to_owned());
        }
        let mask = from.u64()?;
        if mask.wrapping_add(1) & mask != 0 {
            return Err(format!("its hash mask {mask:#x} is not one the guard sets"));
        }
        guard.window.mask = mask;
        guard.total = from.count("its count of characters")?;
        guard.pending_newlines = from.count("its count of newlines")?;
        guard.partial = from.codes()?;
        if guard.partial.len() > PIECE + 1 {
            return Err("its word under way is longer than the guard holds one".to_owned());
        }
        if guard.partial.iter().any(|&code| code > 0x10FFFF) {
            return Err("its word under way holds a value past Unicode".to_owned());
        }
        if from.flag()? {
            guard.long = Some(Box::new(read_long_word(from)?));
        }
        if from.flag()? {
            guard.reason = Some(read_reason(from)?);
        }
        let window = &mut guard.window;
        let counting = from.flag()?;
        let words = usize::try_from(from.u64()?).unwrap_or(usize::MAX);
        if words > options.window {
            return Err(format!(
                "its window holds {words} words, more than the guard's {}",
                options.window
            ));
        }
        for _ in 0..words {
            read_slot(from, window.ring.push(), guard.seed, mask)?;
            window.add(false); // (never trips: no word is judged)
                               // (each word's newlines are at most MOST, so the total checked here cannot
                               // have overflowed)
            if window.newlines > MOST {
                return Err("its window's newlines are past any stream".to_owned());
            }
        }
        // Counting or not as the stream left it (a margin of distinct words decides when
        // counting starts and stops, by the stream's history): the n-grams that begin in
        // the window counted, or none.
        if counting {
            window.start_counting(window.ring.len);
        } else {
            window.counting = false;
            window.phrases.clear();
        }
        Ok(guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Feed;

    fn options() -> Options {
        Options {
            ngram: 3,
            window: 24,
            max_repeats: 3,
            max_unique_ratio: 0.5,
            min_chars: 0,
        }
    }

    fn written(guard: &Guard) -> Vec<u8> {
        let mut out = StateWriter::new();
        guard.write_state(&mut out);
        out.sealed()
    }

    fn read(options: Options, state: &[u8]) -> Result<Guard, String> {
        let mut from = StateReader::open(state)?;
        let guard = Guard::read_state(options, &mut from)?;
        from.finish()?;
        Ok(guard)
    }

    /// A small pseudo-random text: a few words, newlines, a long word now and then.
    fn text(seed: u64, length: usize) -> Vec<u8> {
        let words: [&[u8]; 8] = [
            b"alpha",
            b"beta",
            b"gamma",
            b"\xc3\x89t\xc3\xa9",
            b"\n",
            b"  ",
            b"delta",
            b"x",
        ];
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut out = Vec::new();
        while out.len() < length {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.extend_from_slice(words[(state % 8) as usize]);
            out.push(b' ');
        }
        out
    }

    /// What the window derives from its words, independent of the seed: the totals, each
    /// word's count and line-leading count, and the count of the n-gram ending at each word
    /// whose n-gram began in the window.
    type Derived = (usize, usize, u64, usize, Vec<(u32, u32)>, Vec<u32>, bool);

    fn derived(guard: &Guard) -> Derived {
        let window = &guard.window;
        let ring = &window.ring;
        let words = (0..ring.len)
            .map(|i| {
                let entry = window.entries[ring.get(i).entry as usize];
                (entry.count, entry.leading)
            })
            .collect();
        let phrases = (window.options.ngram - 1..ring.len)
            .map(|i| window.phrases.get(&ring.get(i).key).copied().unwrap_or(0))
            .collect();
        let distinct = window.words.len();
        let totals = (window.hapax, window.leading, window.newlines);
        (
            totals.0,
            totals.1,
            totals.2,
            distinct,
            words,
            phrases,
            window.counting,
        )
    }

    #[test]
    fn a_guard_read_back_answers_every_later_push_as_the_one_written() {
        let mut tripped = 0;
        for seed in 0..200u64 {
            let stream = text(seed, 600);
            let cut = (seed as usize * 37) % stream.len();
            for bits in [64, 2] {
                let mut original = Guard::new(options());
                original.set_hash_bits(bits);
                original.push(&stream[..cut], Feed::Pushes);
                let mut copy = read(options(), &written(&original)).expect("read back");
                if !original.tripped() && bits == 64 {
                    // (a tripped guard's window is not written: it answers nothing more; the
                    // copy hashes with a seed of its own, so with a few bits its collisions,
                    // and so its hashed counts, are its own)
                    assert_eq!(
                        derived(&original),
                        derived(&copy),
                        "seed {seed}, bits {bits}"
                    );
                }
                for chunk in stream[cut..].chunks(7) {
                    assert_eq!(
                        original.push(chunk, Feed::Pushes),
                        copy.push(chunk, Feed::Pushes),
                        "seed {seed}, bits {bits}"
                    );
                }
                assert_eq!(original.reason(), copy.reason(), "seed {seed}, bits {bits}");
                assert_eq!(
                    written(&original),
                    written(&copy),
                    "seed {seed}, bits {bits}"
                );
                tripped += usize::from(original.tripped());
            }
        }
        // (the texts trip the guard after the cut, and before it, as often as not)
        assert!((100..300).contains(&tripped), "{tripped} of 400 tripped");
    }

    #[test]
    fn a_long_word_under_way_is_read_back() {
        // Past NORMAL_KEPT, with a block of its digest part filled (3 bytes per 2 letters).
        let word: Vec<u8> = "a\u{e9}".repeat(NORMAL_KEPT / 2 + 2 * PIECE).into_bytes();
        let cut = "a\u{e9}".len() * (NORMAL_KEPT / 3 + 3 * PIECE / 2) + 1;
        let mut original = Guard::new(options());
        original.push(&word[..cut], Feed::Pushes);
        let digest = original
            .long
            .as_ref()
            .and_then(|long| long.normal.hash.as_ref());
        assert!(digest.is_some_and(|digest| !digest.block.is_empty()));
        let mut copy = read(options(), &written(&original)).expect("read back");
        let mut rest = word[cut..].to_vec();
        for _ in 0..4 {
            rest.extend_from_slice(b" b ");
            rest.extend_from_slice(&word);
        }
        rest.push(b' ');
        assert_eq!(
            original.push(&rest, Feed::Pushes),
            copy.push(&rest, Feed::Pushes)
        );
        assert!(original.tripped());
        assert_eq!(original.reason(), copy.reason());
    }

    /// A state written field by field (a guard with `options()`, untripped, not counting):
    /// `mask`, `total`, the partial word and the window's words (normal form, spelling).
    fn crafted(
        version: &str,
        mask: u64,
        total: u64,
        partial: &[u32],
        words: &[(&[u8], &[u8])],
    ) -> Vec<u8> {
        let mut out = StateWriter(MARK.to_vec());
        out.0.push(LAYOUT);
        out.bytes(version.as_bytes());
        write_options(&mut out, options());
        out.u64(mask);
        out.u64(total);
        out.u64(0);
        out.codes(partial);
        out.flag(false);
        out.flag(false);
        out.flag(false);
        out.u64(words.len() as u64);
        for (normal, spelling) in words {
            out.bytes(normal);
            out.flag(spelling.is_empty());
            out.bytes(spelling);
            out.flag(false);
            out.u64(0);
        }
        out.sealed()
    }

    #[test]
    fn states_made_to_pass_the_checksum_are_checked_value_by_value() {
        let word: (&[u8], &[u8]) = (b"a", b"");
        let ok = |state: &[u8]| read(options(), state).map(|_| ());
        assert_eq!(
            ok(&crafted(WRITTEN_BY, u64::MAX, 3, &[0x62], &[word])),
            Ok(())
        );
        // A spelling may hold a lone surrogate (generalised UTF-8), as the guard keeps one.
        let surrogate: (&[u8], &[u8]) = (b"a", b"a\xed\xa0\x80");
        assert_eq!(
            ok(&crafted(WRITTEN_BY, 7, 3, &[0xD800], &[surrogate])),
            Ok(())
        );
        let refused = [
            (
                crafted("0.0.9", u64::MAX, 0, &[], &[]),
                "written by vthread 0.0.9",
            ),
            (crafted(WRITTEN_BY, 5, 0, &[], &[]), "hash mask 0x5"),
            (
                crafted(WRITTEN_BY, u64::MAX, MOST + 1, &[], &[]),
                "past any stream",
            ),
            (
                crafted(WRITTEN_BY, u64::MAX, 0, &[0x110000], &[]),
                "past Unicode",
            ),
            (
                crafted(WRITTEN_BY, u64::MAX, 0, &[], &[(b"\xff", b"")]),
                "not UTF-8",
            ),
            (
                crafted(WRITTEN_BY, u64::MAX, 0, &[], &[(b"a", b"\xed\xa0")]),
                "not UTF-8",
            ),
            (
                crafted(WRITTEN_BY, u64::MAX, 0, &[], &[(b"", b"")]),
                "is empty",
            ),
            (
                crafted(WRITTEN_BY, u64::MAX, 0, &[], &[word; 25]),
                "more than the guard's 24",
            ),
        ];
        for (state, why) in refused {
            let error = ok(&state).expect_err(why);
            assert!(error.contains(why), "{error:?} for {why:?}");
        }
        assert_eq!(
            unfinished_character(b"\xe2\x82".to_vec()),
            Ok(b"\xe2\x82".to_vec())
        );
        for bytes in [&b"ab"[..], b"\xff", b"\xe2\x82\xac", b"\x80"] {
            assert!(unfinished_character(bytes.to_vec()).is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn damaged_or_foreign_state_is_refused_not_read() {
        let mut guard = Guard::new(options());
        guard.push(&text(7, 400), Feed::Pushes);
        let state = written(&guard);
        assert!(read(options(), &state).is_ok());
        for at in [
            0,
            MARK.len(),
            MARK.len() + 9,
            state.len() / 2,
            state.len() - 1,
        ] {
            let mut damaged = state.clone();
            damaged[at] ^= 0x10;
            assert!(read(options(), &damaged).is_err(), "byte {at} changed");
        }
        for length in [0, 8, MARK.len() + 9, state.len() - 1] {
            assert!(
                read(options(), &state[..length]).is_err(),
                "cut at {length}"
            );
        }
        let other = Options {
            window: 25,
            ..options()
        };
        let refused = read(other, &state).err().expect("other options");
        assert!(refused.contains("other options"), "{refused}");
    }
}
