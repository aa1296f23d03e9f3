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

/// Prefix hashes of one group, to compare any two stretches of it in O(1), and where each
/// value's block of equal values begins and ends, to step over such a block at once.
struct Hashes {
    prefix: Vec<u64>,
    powers: Vec<u64>,
    /// `block_start[i]..block_end[i]`: the maximal stretch of values equal to `values[i]`
    /// around `i`.
    block_start: Vec<usize>,
    block_end: Vec<usize>,
}

impl Hashes {
    fn new() -> Self {
        Self {
            prefix: Vec::new(),
            powers: Vec::new(),
            block_start: Vec::new(),
            block_end: Vec::new(),
        }
    }

    fn fill(&mut self, values: &[u64], base: u64) {
        self.prefix.clear();
        self.powers.clear();
        self.prefix.push(0);
        self.powers.push(1);
        let (mut hash, mut power) = (0u64, 1u64);
        for &value in values {
            hash = reduce(u128::from(multiply(hash, base)) + u128::from(value % MODULUS) + 1);
            power = multiply(power, base);
            self.prefix.push(hash);
            self.powers.push(power);
        }
        self.block_start.clear();
        self.block_end.clear();
        self.block_end.resize(values.len(), 0);
        for index in 0..values.len() {
            let start = if index > 0 && values[index - 1] == values[index] {
                self.block_start[index - 1]
            } else {
                index
            };
            self.block_start.push(start);
        }
        for index in (0..values.len()).rev() {
            self.block_end[index] =
                if index + 1 < values.len() && values[index + 1] == values[index] {
                    self.block_end[index + 1]
                } else {
                    index + 1
                };
        }
    }

    /// The hash of values `[start, start + length)`.
    fn of(&self, start: usize, length: usize) -> u64 {
        let whole = self.prefix[start + length];
        let before = multiply(self.prefix[start], self.powers[length]);
        if whole >= before {
            whole - before
        } else {
            whole + MODULUS - before
        }
    }
}

/// How many steps a reach is measured over directly (a value compared, or a block of equal
/// values stepped over), before hashes measure it: most reaches are short, and comparing
/// neighbouring values is cheaper than hashing (whose tables, for a long thread, are read
/// at random).
const DIRECT: usize = 32;

/// How many values a reach compares side by side before it reads the blocks of equal
/// values (those reads are at random in a long thread, the side-by-side ones are not).
const NEAR: usize = 8;

/// Which way a reach is measured from its two starting places.
#[derive(Clone, Copy)]
enum Direction {
    /// The values from `first` and `second` on.
    Forwards,
    /// The values just before `first` and `second`.
    Backwards,
}

/// How many values from `first` on equal those from `second` on (`first < second`), or
/// just before them going back, at least the true count: the first `NEAR` values side by
/// side, then up to `DIRECT` steps over blocks of equal values (two equal values whose
/// blocks end at different distances reach exactly the nearer end: there one block changes
/// value and the other does not, so a sample among a value repeated many times costs one
/// step), then hashes, a stretch taken as equal when its hashes are.
fn reach(
    values: &[u64],
    hashes: &Hashes,
    first: usize,
    second: usize,
    direction: Direction,
) -> usize {
    let most = match direction {
        Direction::Forwards => values.len() - second,
        Direction::Backwards => first,
    };
    // The place `offset` values away from `origin`, and how many values its block of equal
    // values holds from there on, the way the reach goes.
    let place = |origin: usize, offset: usize| match direction {
        Direction::Forwards => origin + offset,
        Direction::Backwards => origin - offset - 1,
    };
    let block = |index: usize| match direction {
        Direction::Forwards => hashes.block_end[index] - index,
        Direction::Backwards => index + 1 - hashes.block_start[index],
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
    while reach < most.min(NEAR) && values[place(first, reach)] == values[place(second, reach)] {
        reach += 1;
    }
    if reach < NEAR {
        return reach;
    }
    for _ in 0..DIRECT {
        if reach >= most {
            return most;
        }
        let (left, right) = (place(first, reach), place(second, reach));
        if values[left] != values[right] {
            return reach;
        }
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
fn equal_around(values: &[u64], sample: usize, period: usize) -> (usize, usize) {
    let mut begin = sample;
    while begin > 0 && values[begin - 1] == values[begin - 1 + period] {
        begin -= 1;
    }
    let mut end = sample;
    while end + period < values.len() && values[end] == values[end + period] {
        end += 1;
    }
    (begin, end)
}

/// Whether every position of `[begin, end)` equals the one `period` later, the end is where
/// equality stops and the begin where it starts.
fn is_maximal(values: &[u64], begin: usize, end: usize, period: usize) -> bool {
    (begin..end).all(|position| values[position] == values[position + period])
        && (begin == 0 || values[begin - 1] != values[begin - 1 + period])
        && (end + period == values.len() || values[end] != values[end + period])
}

/// The runs of one group's `values` with a primitive block of `shortest` or more values,
/// appended to `found` ordered by period, then start. `hashes` and `spans` are buffers.
fn group_runs(
    group: usize,
    values: &[u64],
    shortest: usize,
    base: u64,
    hashes: &mut Hashes,
    spans: &mut HashMap<(usize, usize), usize>,
    found: &mut Vec<Run>,
) {
    let length = values.len();
    if length < 2 * shortest.max(1) {
        return;
    }
    hashes.fill(values, base);
    spans.clear();
    // Every period from 1, so that a run of a block repeating a shorter one is known by the
    // shorter one's stretch and passed over; only those of `shortest` or more are kept.
    for period in 1..=length / 2 {
        let mut sample = 0;
        while sample + period < length {
            if values[sample] != values[sample + period] {
                sample += period;
                continue;
            }
            let forwards = reach(values, hashes, sample, sample + period, Direction::Forwards);
            let backwards = reach(
                values,
                hashes,
                sample,
                sample + period,
                Direction::Backwards,
            );
            if backwards + forwards < period {
                sample += period;
                continue;
            }
            let (mut begin, mut end) = (sample - backwards, sample + forwards);
            // A stretch the hashes give that is a known run of a period dividing this one is
            // that run (within it every value equals the one `period` later, and the hashes
            // never shorten a reach), so it is passed over unchecked: checking it would cost
            // its length once per multiple of its period.
            let repeats_shorter = |begin: usize, end: usize| {
                spans
                    .get(&(begin, end + period))
                    .is_some_and(|&known| period % known == 0)
            };
            if repeats_shorter(begin, end) {
                sample = (end / period + 1) * period;
                continue;
            }
            if !is_maximal(values, begin, end, period) {
                (begin, end) = equal_around(values, sample, period); // the hashes collided
                if end - begin < period || repeats_shorter(begin, end) {
                    sample = (end / period + 1) * period;
                    continue;
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
            sample = (end / period + 1) * period;
        }
    }
}

/// Every run (see the module's documentation) of each group `values[bounds[g]..bounds[g +
/// 1]]` with a primitive block of at least `shortest` values; `start` and `stop` index
/// `values`. Ordered by group, then period, then start.
pub fn long_runs(values: &[u64], bounds: &[usize], shortest: usize) -> Vec<Run> {
    let base = random_base();
    let mut hashes = Hashes::new();
    let mut spans = HashMap::new();
    let mut found = Vec::new();
    for (group, window) in bounds.windows(2).enumerate() {
        let first = found.len();
        let group_values = &values[window[0]..window[1]];
        group_runs(
            group,
            group_values,
            shortest,
            base,
            &mut hashes,
            &mut spans,
            &mut found,
        );
        for run in &mut found[first..] {
            run.start += window[0];
            run.stop += window[0];
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{group_runs, long_runs, Hashes, Run};
    use std::collections::HashMap;

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
                        assert_eq!(
                            long_runs(&values, &bounds, shortest),
                            long_runs_plainly(&values, &bounds, shortest),
                            "{values:?} {bounds:?} {shortest}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn colliding_hashes_neither_add_nor_lose_a_run() {
        // A base of 0 hashes every stretch to its last value plus one: most stretches
        // collide, and the runs must still be the plain ones.
        let mut hashes = Hashes::new();
        let mut spans = HashMap::new();
        for values in sequences(2, 12).chain(sequences(3, 8)) {
            let mut found = Vec::new();
            group_runs(0, &values, 1, 0, &mut hashes, &mut spans, &mut found);
            found.sort_by_key(|run| (run.period, run.start));
            assert_eq!(
                found,
                long_runs_plainly(&values, &[0, values.len()], 1),
                "{values:?}"
            );
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
