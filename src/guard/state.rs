//! A guard's state written out as bytes and read back (Python pickles a fed guard with
//! it: a harness hands a stream's guard to another process, or keeps it with a paused
//! session), so that the guard read back answers every later push as the one written would.
//!
//! What is written is what the guard has read: each word of the window (normal form,
//! spelling, long-word key, newlines before it), whether n-grams are being counted, the
//! partial and long word under way, the trip's reason, the seed and the hash mask. The rest
//! is made again on reading by adding the window's words to a fresh window, as the stream
//! added them: each word's hash, the word counts, the hapax, newline and line-leading
//! totals, the rolled n-gram key and the n-gram counts, which are functions of the words in
//! the window (the keys of n-grams that began with a word gone from the window differ, and
//! are never read). So no bytes can make those counts disagree with the words. A tripped
//! guard answers nothing more until reset: its window is not written. The bytes end with
//! their XXH3-64, so that damage is told, not read; they start with a mark and a version,
//! so that the state of another vthread version is refused, not misread.

use xxhash_rust::xxh3::xxh3_64;

use super::{
    slot_hash, ChainedDigest, Ends, Guard, LongWord, NormalSoFar, Options, Reason, Slot,
    DIGEST_BLOCK, NORMAL_KEPT, PIECE,
};

/// The first bytes of a guard's state.
const MARK: &[u8] = b"vthread guard state\n";
/// The layout written here; a state of any other is refused.
const VERSION: u8 = 1;

/// Bytes written in the order they are read back: integers little-endian, a byte string
/// or a list with its length first.
#[derive(Default)]
pub struct StateWriter(Vec<u8>);

impl StateWriter {
    /// A writer that has written the mark and the version.
    pub fn new() -> Self {
        let mut writer = StateWriter(MARK.to_vec());
        writer.0.push(VERSION);
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
    /// A reader of `state` past its mark and version, once its checksum holds.
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
        if body[MARK.len()] != VERSION {
            return Err(format!(
                "it was written in layout {}, and this vthread reads layout {VERSION} \
                 (written by another version of vthread)",
                body[MARK.len()]
            ));
        }
        Ok(StateReader(&body[MARK.len() + 1..]))
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

fn write_ends(out: &mut StateWriter, ends: &Ends) {
    out.bytes(&ends.head);
    out.flag(ends.head_full);
    out.bytes(&ends.tail);
    out.flag(ends.elided);
}

fn read_ends(from: &mut StateReader<'_>) -> Result<Ends, String> {
    Ok(Ends {
        head: from.bytes()?,
        head_full: from.flag()?,
        tail: from.bytes()?,
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
    let kept = from.bytes()?;
    let bytes = from.u64()?;
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
        ends: read_ends(from)?,
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
        spelling: read_ends(from)?,
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
        phrase: from.bytes()?,
        count: from.u64()?,
        text: from.bytes()?,
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
    let normal = from.bytes()?;
    if normal.is_empty() {
        return Err("a word of its window is empty".to_owned());
    }
    slot.spelling_is_normal = from.flag()?;
    slot.spelling = from.bytes()?;
    slot.long = if from.flag()? {
        Some((from.u64()?, from.u128()?))
    } else {
        None
    };
    slot.hash = slot_hash(&normal, slot.long, seed) & mask;
    slot.normal = normal;
    slot.newlines = from.u64()?;
    Ok(())
}

impl Guard {
    /// Write the guard's state (see the module's documentation).
    pub fn write_state(&self, out: &mut StateWriter) {
        let window = &self.window;
        write_options(out, window.options);
        out.u64(self.seed);
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
        guard.seed = from.u64()?;
        let mask = from.u64()?;
        guard.window.mask = mask;
        guard.total = from.u64()?;
        guard.pending_newlines = from.u64()?;
        guard.partial = from.codes()?;
        if guard.partial.len() > PIECE + 1 {
            return Err("its word under way is longer than the guard holds one".to_owned());
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

    /// What the window derives from its words: the totals, each word's (hash, count,
    /// line-leading count) and each n-gram key's count, in order.
    type Derived = (
        usize,
        usize,
        u64,
        Vec<(u64, u32, u32)>,
        Vec<(u64, u32)>,
        bool,
    );

    fn derived(guard: &Guard) -> Derived {
        let window = &guard.window;
        let mut words: Vec<(u64, u32, u32)> = window
            .words
            .values()
            .map(|&index| {
                let entry = window.entries[index as usize];
                (entry.hash, entry.count, entry.leading)
            })
            .collect();
        words.sort_unstable();
        let mut phrases: Vec<(u64, u32)> = window.phrases.iter().map(|(&k, &v)| (k, v)).collect();
        phrases.sort_unstable();
        (
            window.hapax,
            window.leading,
            window.newlines,
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
                if !original.tripped() {
                    // (a tripped guard's window is not written: it answers nothing more)
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
