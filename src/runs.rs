//! Every run of a sequence: a maximal stretch that repeats a block back to back.
//!
//! `vthread.anywhere` looks for blocks of up to 24 messages repeated anywhere in a thread
//! by comparing its screens with themselves shifted by each period (24 NumPy passes).
//! Longer blocks need another method: one pass per period would be quadratic in a thread's
//! length. This module finds, for every period `p` at least a given one, every *run* whose
//! block is *primitive* (no repeat of a shorter block): a maximal stretch `[start, stop)`
//! at least two blocks long in which each value equals the one `p` later. A run of a block
//! that is itself a repeat of a shorter one covers exactly the stretch of that shorter
//! block's run (a stretch with periods `p` and `q | p` at least `2p` long has period `q`,
//! and a maximal one is maximal for both), so the primitive runs lose no stretch.
//!
//! Each period `p` is sampled at every multiple of `p`: a run holds `p` consecutive equal
//! positions, so one of them is a multiple of `p`. At a sample where the value equals the
//! one `p` later, how far the equality reaches forwards and backwards is measured by
//! comparing polynomial hashes of whole stretches (doubling, then halving the length), in
//! O(log length). A hash only ever makes a reach look longer than it is, never shorter, so
//! a run the hashes propose is checked value by value before it is kept, and measured value
//! by value if the check fails: no collision of the hashes can add or lose a run. The
//! hashes' base is drawn at random per process, so input cannot be made to collide them.
//! O(n log n) samples per sequence of length `n`, each O(1) unless it equals, plus the
//! check of every run kept (their lengths add up to O(n log n)).
//!
//! The samples are O(n log n) in count, but each reads places `p` apart: taken one period
//! at a time over a long group, nearly every one is a cache miss (and a page walk) once the
//! group outgrows the caches, which made 4x the values cost 8-13x the time past 400k. So
//! each value is kept side by side with its block of equal values (one cache line read per
//! place, not three tables), and the places are taken window by window (see `WINDOW`).

use std::collections::HashMap;

/// A run: values `[start, stop)` of a group, each equal to the one `period` later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub group: usize,
    pub period: usize,
    pub start: usize,
    pub stop: usize,
}

/// The Mersenne prime 2^61 - 1: a product of two residues fits in 128 bits and reduces
/// with a shift and an add.
const MODULUS: u64 = (1 << 61) - 1;

fn reduce(value: u128) -> u64 {
    let folded = (value & u128::from(MODULUS)) + (value >> 61);
    let folded = (folded & u128::from(MODULUS)) + (folded >> 61);
    let folded = folded as u64;
    if folded >= MODULUS {
        folded - MODULUS
    } else {
        folded
    }
}

fn multiply(left: u64, right: u64) -> u64 {
    reduce(u128::from(left) * u128::from(right))
}

/// A random base in `[2, MODULUS - 2]`, fresh in every process (aHash's random keys).
fn random_base() -> u64 {
    let drawn = ahash::RandomState::new().hash_one(0x5eed_u64);
    2 + drawn % (MODULUS - 3)
}

/// One value of a group with its block of equal values: how many values from it on, and
/// up to it, equal it (itself included; at most `u32::MAX`, which then means "at least").
/// Kept side by side so that a sample, which compares two values, finds their blocks in the
/// same cache lines: a sample lands at random in a long group, and three separate tables
/// (values, block starts, block ends) cost three cache misses and three pages where one
/// table costs one.
#[derive(Clone, Copy)]
struct Cell {
    value: u64,
    ahead: u32,
    behind: u32,
}

/// A group's values with their blocks of equal values, to step over such a block at once,
/// and prefix hashes, to compare two stretches of a power-of-two length in O(1).
struct Hashes {
    cells: Vec<Cell>,
    prefix: Vec<u64>,
    /// `powers[k]`: the base to the power `2^k` (stretches compared by hashes are a power
    /// of two long, so a table of a power per length is not needed).
    powers: [u64; usize::BITS as usize],
}

impl Hashes {
    fn new() -> Self {
        Self {
            cells: Vec::new(),
            prefix: Vec::new(),
            powers: [0; usize::BITS as usize],
        }
    }

    fn fill(&mut self, values: &[u64], base: u64) {
        self.prefix.clear();
        self.prefix.push(0);
        let mut hash = 0u64;
        for &value in values {
            hash = reduce(u128::from(multiply(hash, base)) + u128::from(value % MODULUS) + 1);
            self.prefix.push(hash);
        }
        let mut power = base;
        for slot in &mut self.powers {
            *slot = power;
            power = multiply(power, power);
        }
        self.cells.clear();
        self.cells.extend(values.iter().map(|&value| Cell {
            value,
            ahead: 1,
            behind: 1,
        }));
        for index in 1..self.cells.len() {
            if self.cells[index - 1].value == self.cells[index].value {
                self.cells[index].behind = self.cells[index - 1].behind.saturating_add(1);
            }
        }
        for index in (1..self.cells.len()).rev() {
            if self.cells[index - 1].value == self.cells[index].value {
                self.cells[index - 1].ahead = self.cells[index].ahead.saturating_add(1);
            }
        }
    }

    /// The hash of values `[start, start + length)`, `length` a power of two.
    fn of(&self, start: usize, length: usize) -> u64 {
        debug_assert!(length.is_power_of_two());
        let whole = self.prefix[start + length];
        let power = self.powers[length.trailing_zeros() as usize];
        let before = multiply(self.prefix[start], power);
        if whole >= before {
            whole - before
        } else {
            whole + MODULUS - before
        }
    }
}

/// How many steps a reach is measured over directly (a block of equal values stepped over,
/// a single value being a block of one), before hashes measure it: most reaches are short,
/// and stepping along neighbouring cells is cheaper than hashing (whose table, for a long
/// thread, is read at random). A power of two, the first length the hashes compare.
const DIRECT: usize = 32;

/// Which way a reach is measured from its two starting places.
#[derive(Clone, Copy)]
enum Direction {
    /// The values from `first` and `second` on.
    Forwards,
    /// The values just before `first` and `second`.
    Backwards,
}

/// How many values from `first` on equal those from `second` on (`first < second`), or
/// just before them going back, at least the true count: up to `DIRECT` steps over blocks
/// of equal values (two equal values whose blocks end at different distances reach exactly
/// the nearer end: there one block changes value and the other does not, so a sample among
/// a value repeated many times costs one step, in the cells the sample read), then hashes,
/// a stretch taken as equal when its hashes are.
fn reach(hashes: &Hashes, first: usize, second: usize, direction: Direction) -> usize {
    let cells = &hashes.cells;
    let most = match direction {
        Direction::Forwards => cells.len() - second,
        Direction::Backwards => first,
    };
    // The place `offset` values away from `origin`, and how many values a cell's block of
    // equal values holds from there on, the way the reach goes.
    let place = |origin: usize, offset: usize| match direction {
        Direction::Forwards => origin + offset,
        Direction::Backwards => origin - offset - 1,
    };
    let block = |cell: Cell| match direction {
        Direction::Forwards => cell.ahead as usize,
        Direction::Backwards => cell.behind as usize,
    };
    let equal = |offset: usize, length: usize| match direction {
        Direction::Forwards => {
            hashes.of(first + offset, length) == hashes.of(second + offset, length)
        }
        Direction::Backwards => {
            hashes.of(first - offset - length, length)
                == hashes.of(second - offset - length, length)
        }
    };
    let mut reach = 0;
    for _ in 0..DIRECT {
        if reach >= most {
            return most;
        }
        let (left, right) = (cells[place(first, reach)], cells[place(second, reach)]);
        if left.value != right.value {
            return reach;
        }
        // Blocks of `u32::MAX` are at least that long: equal for that many values.
        let (left_block, right_block) = (block(left), block(right));
        if left_block != right_block {
            return (reach + left_block.min(right_block)).min(most);
        }
        reach += left_block;
    }
    if reach >= most {
        return most;
    }
    // Doubling while whole stretches agree, then halving back: O(log reach) hashes.
    let mut step = DIRECT;
    while reach + step <= most && equal(reach, step) {
        reach += step;
        step *= 2;
    }
    while step > 1 {
        step /= 2;
        if reach + step <= most && equal(reach, step) {
            reach += step;
        }
    }
    reach
}

/// The equal positions around a sample: the maximal `[begin, end)` holding `sample` in
/// which each value equals the one `period` later, measured value by value.
fn equal_around(cells: &[Cell], sample: usize, period: usize) -> (usize, usize) {
    let mut begin = sample;
    while begin > 0 && cells[begin - 1].value == cells[begin - 1 + period].value {
        begin -= 1;
    }
    let mut end = sample;
    while end + period < cells.len() && cells[end].value == cells[end + period].value {
        end += 1;
    }
    (begin, end)
}

/// Whether every position of `[begin, end)` equals the one `period` later, the end is where
/// equality stops and the begin where it starts.
fn is_maximal(cells: &[Cell], begin: usize, end: usize, period: usize) -> bool {
    let equal = |position: usize| cells[position].value == cells[position + period].value;
    (begin..end).all(equal)
        && (begin == 0 || !equal(begin - 1))
        && (end + period == cells.len() || !equal(end))
}

/// How many values a window holds: periods up to this are sampled window by window (each
/// period's samples in the window, then the next window), so that a sample and the one a
/// period later are both in the window or the next, which the caches hold; one period over
/// a whole long group at a time reads a new cache line (and page) at each sample once the
/// group outgrows the caches. Longer periods are sampled one at a time. 2^17 cells of 16
/// bytes: a window and the next take 4 MiB.
const WINDOW: usize = 1 << 17;

type Spans = HashMap<(usize, usize), usize, ahash::RandomState>;

/// The buffers of a search, kept from one group to the next.
struct Search {
    base: u64,
    /// Periods up to `window` are sampled window by window (see `WINDOW`).
    window: usize,
    hashes: Hashes,
    /// The stretch `[start, stop)` of each run found, with its (primitive) period. aHash
    /// (keyed at random per process) rather than SipHash, which took a sixth of the time on
    /// the Fibonacci word.
    spans: Spans,
    /// `next[period]`: the next place that period is sampled at, between windows.
    next: Vec<usize>,
}

impl Search {
    fn new(base: u64, window: usize) -> Self {
        Self {
            base,
            window: window.max(1),
            hashes: Hashes::new(),
            spans: Spans::default(),
            next: Vec::new(),
        }
    }
}

/// The runs of one group's `values` with a primitive block of `shortest` or more values,
/// appended to `found` ordered by period, then start.
fn group_runs(
    group: usize,
    values: &[u64],
    shortest: usize,
    search: &mut Search,
    found: &mut Vec<Run>,
) {
    let length = values.len();
    if length < 2 * shortest.max(1) {
        return;
    }
    let first = found.len();
    search.hashes.fill(values, search.base);
    search.spans.clear();
    let hashes = &search.hashes;
    let cells = &hashes.cells;
    let spans = &mut search.spans;
    // Samples `sample` for `period`, where the value equals the one `period` later (the
    // loops below pass over the others), and gives the next place to sample. Every period from 1
    // is sampled, so that a run of a block repeating a shorter one is known by the shorter
    // one's stretch and passed over; only those of `shortest` or more are kept. A shorter
    // period dividing this one is sampled first at any place of a stretch they share: its
    // first sample in the stretch is at or before this period's, and in the same window
    // shorter periods go first.
    let mut visit = |period: usize, sample: usize| -> usize {
        let forwards = reach(hashes, sample, sample + period, Direction::Forwards);
        let backwards = reach(hashes, sample, sample + period, Direction::Backwards);
        if backwards + forwards < period {
            return sample + period;
        }
        let (mut begin, mut end) = (sample - backwards, sample + forwards);
        // A stretch the hashes give that is a known run of a period dividing this one is
        // that run (within it every value equals the one `period` later, and the hashes
        // never shorten a reach), so it is passed over unchecked: checking it would cost
        // its length once per multiple of its period.
        let repeats_shorter = |spans: &Spans, begin, end| {
            spans
                .get(&(begin, end + period))
                .is_some_and(|&known| period % known == 0)
        };
        if repeats_shorter(spans, begin, end) {
            return (end / period + 1) * period;
        }
        if !is_maximal(cells, begin, end, period) {
            (begin, end) = equal_around(cells, sample, period); // the hashes collided
            if end - begin < period || repeats_shorter(spans, begin, end) {
                return (end / period + 1) * period;
            }
        }
        spans.insert((begin, end + period), period);
        if period >= shortest {
            found.push(Run {
                group,
                period,
                start: begin,
                stop: end + period,
            });
        }
        // The next run of this period begins after this one's end, which is unequal.
        (end / period + 1) * period
    };
    let (window, half) = (search.window, length / 2);
    let windowed = window.min(half);
    let next = &mut search.next;
    next.clear();
    next.resize(half + 1, 0);
    let mut window_start = 0;
    while window_start < length {
        let window_stop = length.min(window_start.saturating_add(window));
        for period in 1..=windowed {
            let mut sample = next[period];
            while sample < window_stop && sample + period < length {
                if cells[sample].value == cells[sample + period].value {
                    sample = visit(period, sample);
                } else {
                    sample += period;
                }
            }
            next[period] = sample;
        }
        // A longer period has at most one multiple `k * period` in the window. Taken in
        // order of period (each `k`'s periods lie below those of `k - 1`), the samples a
        // period later sweep forwards `k + 1` values apart, which the prefetchers follow.
        let most = (window_stop - 1) / (windowed + 1);
        for multiple in (0..=most).rev() {
            let (low, high) = if multiple == 0 {
                if window_start > 0 {
                    continue;
                }
                (windowed + 1, half)
            } else {
                (
                    window_start.div_ceil(multiple).max(windowed + 1),
                    ((window_stop - 1) / multiple).min(half),
                )
            };
            for period in low..=high {
                let sample = multiple * period;
                if sample < next[period] || sample + period >= length {
                    continue;
                }
                next[period] = if cells[sample].value == cells[sample + period].value {
                    visit(period, sample)
                } else {
                    sample + period
                };
            }
        }
        window_start = window_stop;
    }
    // Found window by window: in order of start within each period, which a stable sort by
    // period keeps.
    found[first..].sort_by_key(|run| run.period);
}

/// Every run (see the module's documentation) of each group `values[bounds[g]..bounds[g +
/// 1]]` with a primitive block of at least `shortest` values; `start` and `stop` index
/// `values`. Ordered by group, then period, then start.
pub fn long_runs(values: &[u64], bounds: &[usize], shortest: usize) -> Vec<Run> {
    runs_in_windows(values, bounds, shortest, WINDOW)
}

/// `long_runs` with periods up to `window` sampled window by window.
fn runs_in_windows(values: &[u64], bounds: &[usize], shortest: usize, window: usize) -> Vec<Run> {
    let mut search = Search::new(random_base(), window);
    let mut found = Vec::new();
    // (`span`: a group's bounds; `window` is the sampling window's size)
    for (group, span) in bounds.windows(2).enumerate() {
        let first = found.len();
        let group_values = &values[span[0]..span[1]];
        group_runs(group, group_values, shortest, &mut search, &mut found);
        for run in &mut found[first..] {
            run.start += span[0];
            run.stop += span[0];
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{group_runs, long_runs, runs_in_windows, Run, Search};

    /// `long_runs` written plainly: every period and every start compared value by value,
    /// each maximal stretch two blocks long kept when its block repeats no shorter block.
    fn long_runs_plainly(values: &[u64], bounds: &[usize], shortest: usize) -> Vec<Run> {
        let mut found = Vec::new();
        for (group, window) in bounds.windows(2).enumerate() {
            let group_values = &values[window[0]..window[1]];
            let length = group_values.len();
            for period in shortest.max(1)..=length / 2 {
                let mut begin = 0;
                while begin + period < length {
                    let mut end = begin;
                    while end + period < length && group_values[end] == group_values[end + period] {
                        end += 1;
                    }
                    if end - begin >= period {
                        let block = &group_values[begin..begin + period];
                        let repeats_shorter = (1..period).any(|shorter| {
                            period % shorter == 0 && block[shorter..] == block[..period - shorter]
                        });
                        if !repeats_shorter {
                            found.push(Run {
                                group,
                                period,
                                start: window[0] + begin,
                                stop: window[0] + end + period,
                            });
                        }
                    }
                    begin = end + 1;
                }
            }
        }
        found
    }

    fn sequences(alphabet: u64, longest: u32) -> impl Iterator<Item = Vec<u64>> {
        (0..=longest).flat_map(move |length| {
            (0..alphabet.pow(length)).map(move |code| {
                (0..length)
                    .scan(code, |rest, _| {
                        let value = *rest % alphabet;
                        *rest /= alphabet;
                        Some(value)
                    })
                    .collect()
            })
        })
    }

    #[test]
    fn runs_are_those_found_plainly() {
        // Every sequence over 2 letters up to 14 long and 3 letters up to 9, cut in groups.
        for (alphabet, longest) in [(2u64, 14u32), (3, 9)] {
            for (index, values) in sequences(alphabet, longest).enumerate() {
                let cut = index % (values.len() + 1);
                for bounds in [vec![0, values.len()], vec![0, cut, values.len()]] {
                    for shortest in [0, 1, 2, 3, 5] {
                        let plainly = long_runs_plainly(&values, &bounds, shortest);
                        assert_eq!(
                            long_runs(&values, &bounds, shortest),
                            plainly,
                            "{values:?} {bounds:?} {shortest}"
                        );
                        // Short windows: the short periods sampled window by window.
                        for window in [1, 2, 3] {
                            assert_eq!(
                                runs_in_windows(&values, &bounds, shortest, window),
                                plainly,
                                "{values:?} {bounds:?} {shortest} {window}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn colliding_hashes_neither_add_nor_lose_a_run() {
        // A base of 0 hashes every stretch to its last value plus one: most stretches
        // collide, and the runs must still be the plain ones.
        for window in [1, 2, 3, usize::MAX] {
            let mut search = Search::new(0, window);
            for values in sequences(2, 12).chain(sequences(3, 8)) {
                let mut found = Vec::new();
                group_runs(0, &values, 1, &mut search, &mut found);
                assert_eq!(
                    found,
                    long_runs_plainly(&values, &[0, values.len()], 1),
                    "{values:?} {window}"
                );
            }
        }
    }

    #[test]
    fn a_long_block_in_the_middle_and_one_value_repeated() {
        let block: Vec<u64> = (0..30).collect();
        let values: Vec<u64> = [vec![7, 7], block.clone(), block, vec![9]].concat();
        assert_eq!(
            long_runs(&values, &[0, values.len()], 25),
            vec![Run {
                group: 0,
                period: 30,
                start: 2,
                stop: 62
            }]
        );
        // One value a hundred times: a run of period 1 only, none of 25 or more.
        assert_eq!(long_runs(&[4; 100], &[0, 100], 25), vec![]);
        assert_eq!(long_runs(&[4; 100], &[0, 100], 1).len(), 1);
    }
}
