//! The worker threads of the core's parallel calls: one rayon pool per process, never
//! rayon's global one, and never one inherited across `fork`.
//!
//! `vthread.scan(jobs=N)` forks worker processes. A forked child has only the thread that
//! forked, so a pool made before the fork has no threads in the child and any call that
//! waited on it would hang. The pool is therefore remembered with the id of the process that
//! built it; a child sees a different id, leaves the parent's pool alone (its threads are
//! not there to be joined) and builds its own. Starting a pool costs a few hundred
//! microseconds, which a call on a megabyte of text would otherwise pay every time.

use std::sync::{Arc, Mutex};

use rayon::ThreadPool;

static POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);

/// Threads a call may use: `RAYON_NUM_THREADS` when set, else the machine's cores. (Not
/// `rayon::current_num_threads()`: outside a pool it would start rayon's global pool.)
pub fn worker_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|value| value.parse::<usize>().ok())
        .filter(|&threads| threads > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// This process's pool, built on first use; None when none can be built (the caller then
/// runs on its own thread).
pub fn pool() -> Option<Arc<ThreadPool>> {
    let pid = std::process::id();
    let threads = worker_threads();
    // A lock held at fork time by another thread stays held in the child: fall back to a
    // pool of the call's own instead of waiting.
    let Ok(mut cached) = POOL.try_lock() else {
        return build(threads);
    };
    if let Some((owner, pool)) = cached.as_ref() {
        if *owner == pid && pool.current_num_threads() == threads {
            return Some(Arc::clone(pool));
        }
    }
    if let Some((owner, inherited)) = cached.take() {
        if owner != pid {
            // The parent's pool: its threads do not exist here, so it must not be dropped
            // (dropping would signal them); it is left as it is.
            std::mem::forget(inherited);
        }
    }
    let pool = build(threads)?;
    *cached = Some((pid, Arc::clone(&pool)));
    Some(pool)
}

fn build(threads: usize) -> Option<Arc<ThreadPool>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .ok()
        .map(Arc::new)
}

/// `work` run on `threads` worker threads: on this thread alone for 1 (no pool started per
/// call); on the process's pool when it asks for all of them (callers such as `scan_arrow`
/// ask call after call); otherwise on a pool of exactly that many (the CLI's `--jobs N` asks
/// for N - 1 readers). Rayon's parallel iterators inside `work` use that pool.
pub fn run_on<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> T {
    if threads <= 1 {
        return work();
    }
    let shared = (threads == worker_threads()).then(pool).flatten();
    if let Some(pool) = shared {
        return pool.install(work);
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}
