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

/// `part_of` applied to `items` in parts of `part` items, the results in order: on this
/// thread alone when `threads` (capped at the parts there are) is 1, with no parallel
/// iterator at all (one outside a pool would start rayon's global pool); on the process's
/// pool when it asks for all the workers (callers such as `scan_arrow` ask call after call);
/// otherwise on a pool of exactly that many (the CLI's `--jobs N` asks for N - 1 readers).
pub fn map_parts<I: Sync, T: Send>(
    items: &[I],
    part: usize,
    threads: usize,
    part_of: impl Fn(&[I]) -> T + Sync + Send,
) -> Vec<T> {
    use rayon::prelude::*;
    let part = part.max(1);
    let threads = threads.min(items.len().div_ceil(part)).max(1);
    if threads <= 1 {
        return items.chunks(part).map(part_of).collect();
    }
    let work = || items.par_chunks(part).map(&part_of).collect();
    let shared = (threads == worker_threads()).then(pool).flatten();
    if let Some(pool) = shared {
        return pool.install(work);
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(work),
        Err(_) => items.chunks(part).map(&part_of).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_runs_here_and_two_run_on_a_pool_in_order() {
        let items: Vec<usize> = (0..1000).collect();
        let here = map_parts(&items, 10, 1, |part| {
            (rayon::current_thread_index(), part.iter().sum::<usize>())
        });
        assert!(here.iter().all(|(worker, _)| worker.is_none()));
        let pooled = map_parts(&items, 10, 2, |part| {
            (rayon::current_thread_index(), part.iter().sum::<usize>())
        });
        assert!(pooled.iter().all(|(worker, _)| worker.is_some()));
        let sums = |found: &[(Option<usize>, usize)]| found.iter().map(|f| f.1).collect::<Vec<_>>();
        assert_eq!(sums(&here), sums(&pooled));
        assert_eq!(sums(&here)[1], (10..20).sum::<usize>());
    }

    #[test]
    fn threads_are_capped_at_the_parts() {
        let items: Vec<usize> = (0..10).collect();
        let one_part = map_parts(&items, 10, 8, |_| rayon::current_thread_index());
        assert_eq!(one_part, vec![None]);
        assert!(map_parts(&[] as &[usize], 10, 8, |_| 0).is_empty());
        let zero = map_parts(&items, 5, 0, |_| rayon::current_thread_index());
        assert_eq!(zero, vec![None, None]);
    }
}
