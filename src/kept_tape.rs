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
//! (taken), and at most one tape is kept, so memory holds at most one tape more than before.

use std::sync::{Mutex, MutexGuard, TryLockError};

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::document::{Declined, KeptItems, Tape};

/// Lines shorter than this are not kept: their parse costs less than the keeping.
pub const KEEP_FROM_BYTES: usize = 1 << 20;

/// The line a tape was parsed from, and the tape's items until a parse of the line takes
/// them. The reference is dropped only with the GIL held (`keep`, `release`).
struct Kept {
    // Held, never read: it keeps the buffer the items' line lies in alive and unchanged.
    #[allow(dead_code)]
    line: Py<PyBytes>,
    items: Option<KeptItems>,
}

static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

/// The kept tape's slot, or None while another thread holds it: nothing waits for it (a
/// parse that finds it busy parses afresh), so no thread can hang on it, not even in a
/// process forked while another thread held it.
fn kept() -> Option<MutexGuard<'static, Option<Kept>>> {
    match KEPT.try_lock() {
        Ok(guard) => Some(guard),
        // A panic while the lock was held leaves nothing half-done worth refusing.
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Parse `line` (the text of `owner`) and run `judge` on its tape with the GIL released;
/// the tape is then kept for the next parse of the same line when `keep` is set and the
/// line is long, replacing any kept before.
pub fn judged_and_kept<T: Send>(
    owner: &Bound<'_, PyBytes>,
    keep: bool,
    judge: impl FnOnce(&Tape<'_>) -> T + Send,
) -> Result<T, Declined> {
    let line = owner.as_bytes();
    let keep = keep && line.len() >= KEEP_FROM_BYTES;
    let (found, items) = owner.py().detach(|| {
        let tape = Tape::parse(line)?;
        let found = judge(&tape);
        Ok::<_, Declined>((found, keep.then(|| tape.into_kept())))
    })?;
    if let (Some(items), Some(mut slot)) = (items, kept()) {
        let before = slot.replace(Kept {
            line: owner.clone().unbind(),
            items: Some(items),
        });
        drop(slot);
        drop(before); // outside the lock: its reference is released with the GIL held
    }
    Ok(found)
}

/// The kept tape of `line`, taken, when it is the kept line's text; any thread, GIL or not.
pub fn take(line: &[u8]) -> Option<Tape<'_>> {
    if line.len() < KEEP_FROM_BYTES {
        return None;
    }
    let mut guard = kept()?;
    let entry = guard.as_mut()?;
    let items = entry.items.take()?;
    match Tape::from_kept(line, items) {
        Ok(tape) => Some(tape),
        Err(items) => {
            entry.items = Some(items); // another line's: left for it
            None
        }
    }
}

/// Drop the kept tape, if any (the GIL held): at the end of a file, or when a caller knows
/// the line will not be read again.
pub fn release(_py: Python<'_>) {
    let before = kept().and_then(|mut slot| slot.take());
    drop(before);
}

/// Drop the kept line's reference once a parse has taken its tape (the GIL held), so that
/// the line's `bytes` goes when its caller lets it go, not at the next keeping.
pub fn release_taken(_py: Python<'_>) {
    let before = kept().and_then(|mut slot| {
        if slot.as_ref().is_some_and(|entry| entry.items.is_none()) {
            slot.take()
        } else {
            None
        }
    });
    drop(before);
}

/// Whether a tape is kept (for the tests).
pub fn is_kept() -> bool {
    kept().is_some_and(|slot| slot.as_ref().is_some_and(|entry| entry.items.is_some()))
}
