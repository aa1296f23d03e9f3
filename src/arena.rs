//! Exact ids of byte strings without a heap allocation per key: the per-thread tables of the
//! column pass (tool-call payloads, `columns.rs`). (The suffix pass, which only asks whether
//! two messages are equal, compares their bytes and needs no ids: `suffix.rs`.)
//!
//! Every key's bytes are appended to one arena (`bytes`; key `id` ends at `ends[id]`). A table
//! maps a key's keyed 64-bit hash to the first id with that hash, and later ids with the same
//! hash are chained (`same_hash`). A hash match is always confirmed on the arena's bytes, so
//! equal ids mean equal bytes: a collision costs a comparison, never an answer. Growing the
//! table rehashes the stored `u64`s and never reads a key again, and clearing or dropping the
//! interner frees four vectors, not one allocation per key. (The `HashMap<Vec<u8>, _>` tables
//! this replaces re-read every key through its pointer on each rehash and freed a million
//! keys at the end of a million-message thread, past the L3 cache: `docs/growth.md`, H3.)
//!
//! The hash is aHash keyed at random per interner, as the tables it replaces were, so input
//! crafted to collide cannot grow one chain into quadratic time. (An interner `describe_thread`
//! keeps from one call to the next keeps its key: one per OS thread and process.)
//!
//! Cost: O(key length) expected per `intern`; memory, the keys' bytes plus 40–60 bytes a key
//! (the table's buckets, an end and a chain link).

use crate::guard::PassThrough;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault};

/// End of a `same_hash` chain.
const NO_NEXT: usize = usize::MAX;

/// Exact ids of byte strings, numbered 0, 1, 2, … in order of first appearance: two keys get
/// the same id exactly when their bytes are equal. `S` hashes keys (tests pass one that makes
/// every hash equal).
pub struct ArenaInterner<S = ahash::RandomState> {
    keyed: S,
    first: HashMap<u64, usize, BuildHasherDefault<PassThrough>>,
    bytes: Vec<u8>,
    ends: Vec<usize>,
    same_hash: Vec<usize>,
}

impl<S: Default> Default for ArenaInterner<S> {
    fn default() -> Self {
        ArenaInterner {
            keyed: S::default(),
            first: HashMap::default(),
            bytes: Vec::new(),
            ends: Vec::new(),
            same_hash: Vec::new(),
        }
    }
}

/// The bytes of key `id` of keys laid end to end in `bytes` (key `id` ending at `ends[id]`).
pub fn key_at<'a>(bytes: &'a [u8], ends: &[usize], id: usize) -> &'a [u8] {
    let start = if id == 0 { 0 } else { ends[id - 1] };
    &bytes[start..ends[id]]
}

impl<S: BuildHasher> ArenaInterner<S> {
    /// Forget every key (ids start again from 0); the memory is kept for the next thread.
    pub fn clear(&mut self) {
        self.first.clear();
        self.bytes.clear();
        self.ends.clear();
        self.same_hash.clear();
    }

    /// The heap memory the interner holds (what `clear` keeps for the next thread).
    pub fn heap_bytes(&self) -> usize {
        // The table holds at most 7/8 of its buckets (a power of two), each a u64 hash and a
        // usize id, with a control byte.
        let buckets = (self.first.capacity() * 8 / 7).next_power_of_two();
        buckets * 17
            + self.bytes.capacity()
            + (self.ends.capacity() + self.same_hash.capacity()) * size_of::<usize>()
    }

    /// How many distinct keys have ids.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no key has an id.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The bytes of key `id` (an id `intern` returned since the last `clear`).
    pub fn key(&self, id: usize) -> &[u8] {
        key_at(&self.bytes, &self.ends, id)
    }

    /// The id of `key`: the id it was given before, or the next one.
    pub fn intern(&mut self, key: &[u8]) -> usize {
        let fresh = self.ends.len();
        match self.first.entry(self.keyed.hash_one(key)) {
            Entry::Vacant(slot) => {
                slot.insert(fresh);
            }
            Entry::Occupied(slot) => {
                let mut id = *slot.get();
                loop {
                    if key_at(&self.bytes, &self.ends, id) == key {
                        return id;
                    }
                    match self.same_hash[id] {
                        NO_NEXT => break,
                        next => id = next,
                    }
                }
                self.same_hash[id] = fresh;
            }
        }
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
        self.same_hash.push(NO_NEXT);
        fresh
    }

    /// Assert the invariants: arena ends in order, every id reached from its hash's first id
    /// by a chain of later ids of that hash, no two ids with equal bytes.
    #[cfg(test)]
    fn check(&self) {
        assert_eq!(self.ends.len(), self.same_hash.len());
        assert!(self.ends.windows(2).all(|pair| pair[0] <= pair[1]));
        assert_eq!(self.ends.last().copied().unwrap_or(0), self.bytes.len());
        let mut reached = 0;
        for (&hash, &head) in &self.first {
            let mut chain = vec![head];
            let mut id = head;
            while self.same_hash[id] != NO_NEXT {
                assert!(self.same_hash[id] > id, "chains run to later ids");
                id = self.same_hash[id];
                chain.push(id);
            }
            for (at, &id) in chain.iter().enumerate() {
                assert_eq!(self.keyed.hash_one(self.key(id)), hash);
                for &other in &chain[at + 1..] {
                    assert_ne!(self.key(id), self.key(other), "ids {id} and {other}");
                }
            }
            reached += chain.len();
        }
        assert_eq!(reached, self.len(), "every id is on exactly one chain");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hasher;

    /// Every key hashes to the same value: every id shares one chain.
    #[derive(Default)]
    struct Constant;

    impl Hasher for Constant {
        fn finish(&self) -> u64 {
            42
        }

        fn write(&mut self, _: &[u8]) {}
    }

    /// Keys of a small alphabet, many repeated, some empty, some prefixes of others.
    fn keys() -> Vec<Vec<u8>> {
        let mut state = 7u64;
        (0..2_000)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let length = (state >> 60) as usize % 5;
                (0..length)
                    .map(|at| b"ab"[(state >> at) as usize & 1])
                    .collect()
            })
            .collect()
    }

    /// Ids as a plain map of owned keys gives them: first appearance order.
    fn expected(keys: &[Vec<u8>]) -> Vec<usize> {
        let mut ids: std::collections::HashMap<&[u8], usize> = Default::default();
        keys.iter()
            .map(|key| {
                let next = ids.len();
                *ids.entry(key.as_slice()).or_insert(next)
            })
            .collect()
    }

    fn ids_of<S: BuildHasher>(interner: &mut ArenaInterner<S>, keys: &[Vec<u8>]) -> Vec<usize> {
        keys.iter().map(|key| interner.intern(key)).collect()
    }

    #[test]
    fn ids_number_distinct_keys_in_order() {
        let mut interner = ArenaInterner::<ahash::RandomState>::default();
        assert_eq!(interner.intern(b"x"), 0);
        assert_eq!(interner.intern(b""), 1);
        assert_eq!(interner.intern(b"xy"), 2);
        assert_eq!(interner.intern(b"x"), 0);
        assert_eq!(interner.intern(b""), 1);
        assert_eq!(interner.key(2), b"xy");
        assert_eq!(interner.len(), 3);
        interner.check();
    }

    #[test]
    fn ids_equal_a_map_of_owned_keys() {
        let keys = keys();
        let mut interner = ArenaInterner::<ahash::RandomState>::default();
        assert_eq!(ids_of(&mut interner, &keys), expected(&keys));
        interner.check();
    }

    #[test]
    fn colliding_hashes_keep_ids_exact() {
        let keys = keys();
        let mut interner = ArenaInterner::<BuildHasherDefault<Constant>>::default();
        assert_eq!(ids_of(&mut interner, &keys), expected(&keys));
        assert_eq!(interner.first.len(), 1, "one hash: one chain of every id");
        interner.check();
        for key in [b"".as_slice(), b"a", b"ab", b"ba", b"bbbb"] {
            let id = interner.intern(key);
            assert_eq!(interner.key(id), key);
        }
        interner.check();
    }

    #[test]
    fn clear_starts_the_ids_again() {
        let keys = keys();
        let mut interner = ArenaInterner::<BuildHasherDefault<Constant>>::default();
        ids_of(&mut interner, &keys);
        interner.clear();
        assert!(interner.is_empty());
        let reversed: Vec<Vec<u8>> = keys.iter().rev().cloned().collect();
        assert_eq!(ids_of(&mut interner, &reversed), expected(&reversed));
        interner.check();
    }
}
