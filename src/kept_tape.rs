//! The tape of the last long line format detection parsed, kept for the scan that reads the
//! same line next. `vthread scan` judges a file's format by parsing its first threads
//! (`line_format_evidence`) and then parses each again to scan it; on a line of a
//! million messages the second parse, with the fresh memory the C library hands a block of
//! that size, was a third of the whole run. The tape is handed over instead.
//!
//! Why it is safe: the kept tape holds a reference to the `bytes` object it was parsed from,
//! so that object's buffer lives, unchanged (`bytes` is immutable), for as long as the tape is
//! kept; a line whose bytes start at that buffer's address and have its length is therefore
//! that very text, and its tape is the one a fresh parse would make. It is handed over once
//! (taken, the reference with it: the `bytes` is then held only as long as that tape), and at
//! most one tape is kept, so memory holds at most one tape more than before. (The tapes
//! `scan_lines` keeps of the lines that may loop, for their attribution, are held by its
//! result instead: `KeptTapes` in `lib.rs`.)

use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::document::{Declined, KeptItems, Tape};

/// Lines shorter than this are not kept: their parse costs less than the keeping.
pub const KEEP_FROM_BYTES: usize = 1 << 20;

/// Tries at the slot's lock before going without it (see `slot`).
const LOCK_TRIES: usize = 1 << 12;

static KEPT: Mutex<Option<KeptItems>> = Mutex::new(None);

/// The kept tape's slot. It is held only to move a tape in or out (no Python code, no
/// freeing of a large block), so a try rarely fails, and it is tried a bounded number of
/// times rather than waited for: a process forked while another thread held it (that
/// thread gone in the child) goes without the slot (a parse afresh) instead of hanging.
fn slot() -> Option<MutexGuard<'static, Option<KeptItems>>> {
    for _ in 0..LOCK_TRIES {
        match KEPT.try_lock() {
            Ok(guard) => return Some(guard),
            // A panic while the lock was held leaves nothing half-done worth refusing.
            Err(TryLockError::Poisoned(poisoned)) => return Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
    None
}

/// Parse `line` (the text of `owner`) and run `judge` on its tape with the GIL released;
/// the tape is then kept for the next parse of the same line when `keep` is set and the
/// line is long, replacing any kept before.
pub fn judged_and_kept<T: Send>(
    owner: &Bound<'_, PyBytes>,
    keep: bool,
    judge: impl FnOnce(&Tape<'_>) -> T + Send,
) -> Result<T, Declined> {
    let keep = keep && owner.as_bytes().len() >= KEEP_FROM_BYTES;
    let (found, items) = judged_and_handed(owner, keep, judge)?;
    if let Some(items) = items {
        let before = slot().map(|mut slot| slot.replace(items));
        drop(before); // outside the lock, the GIL held: the reference it holds goes now
    }
    Ok(found)
}

/// Parse `line` (the text of `owner`) and run `judge` on its tape with the GIL released;
/// with `hand`, the tape's items, held with `owner`, are handed back for the caller to keep.
pub fn judged_and_handed<T: Send>(
    owner: &Bound<'_, PyBytes>,
    hand: bool,
    judge: impl FnOnce(&Tape<'_>) -> T + Send,
) -> Result<(T, Option<KeptItems>), Declined> {
    let line = owner.as_bytes();
    let (found, items) = owner.py().detach(|| {
        let tape = Tape::parse(line)?;
        let found = judge(&tape);
        Ok::<_, Declined>((found, hand.then(|| tape.into_kept())))
    })?;
    Ok((
        found,
        items.map(|items| items.owned_by(owner.clone().unbind())),
    ))
}

/// The kept tape of `line`, taken, when it is the kept line's text; any thread, GIL or not.
pub fn take(line: &str) -> Option<Tape<'_>> {
    if line.len() < KEEP_FROM_BYTES {
        return None;
    }
    let mut slot = slot()?;
    let items = slot.take()?;
    match Tape::from_kept(line, items) {
        Ok(tape) => Some(tape),
        Err(items) => {
            *slot = Some(items); // another line's: left for it
            None
        }
    }
}

/// Drop the kept tape, if any (the GIL held): at the end of a file, or when a caller knows
/// the line will not be read again.
pub fn release(_py: Python<'_>) {
    let before = slot().and_then(|mut slot| slot.take());
    drop(before);
}

/// Whether a tape is kept (for the tests).
pub fn is_kept() -> bool {
    slot().is_some_and(|slot| slot.is_some())
}
