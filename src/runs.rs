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
//! The runs theorem (Bannai, I, Inenaga, Nakashima, Takeda and Tsuruta, 2017) gives each
//! run a place and a partner for it: under one of the two orders on values (the numeric one
//! and its reverse) the run's block, rotated to start where it is smallest (its *Lyndon
//! root*), is the longest Lyndon word starting there, so the partner, the place's next
//! smaller suffix, is one period on. Each place is taken with its next smaller suffix in
//! each order, at most `2n` candidates for a group of `n` values; a candidate whose values
//! agree forwards and backwards for at least its distance is a run of that period (its
//! block, a Lyndon word, repeats no shorter one). The next smaller suffixes come from a
//! stack, right to left, comparing suffixes value by value and skipping what an earlier
//! comparison at the same distance showed (see `Matches`): no suffix array, no hash,
//! nothing but equal and smaller on values, so every run is exact. Ellert and Fischer
//! (runs over general ordered alphabets, ICALP 2021) find such direct comparison fast in
//! practice; their copying of earlier comparisons, which makes it linear in every case, is
//! not done here. Runs shorter in period than asked for are not measured backwards at all.
//!
//! The sampling this replaced (`samples`, kept as the tests' twin) took O(n log n) samples,
//! each at places a period apart: 1M values cost 10-21x what 100k did. This reads a group
//! in order, twice each way, with a stack whose places the caches mostly hold.

/// A run: values `[start, stop)` of a group, each equal to the one `period` later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub group: usize,
    pub period: usize,
    pub start: usize,
    pub stop: usize,
}

/// An order on values: the numeric one, or its reverse (`REVERSED`). Every run has a
/// Lyndon root that is the longest Lyndon word at its start in one of the two.
fn precedes<const REVERSED: bool>(left: u64, right: u64) -> bool {
    if REVERSED {
        left > right
    } else {
        left < right
    }
}

/// For each distance `d`, the last stretch `[begin, end)` measured in which every value
/// equals the one `d` later, maximal at the end the measurements move away from (the value
/// there is unequal to the one `d` later, or the group ends). A measurement at distance `d`
/// that reaches such a stretch stops there, and one that starts within it is read off at
/// once: the measurements at one distance then read each place about once (a repetition of
/// period `d` is measured once, not once per place in it).
///
/// A stretch is kept as `begin + 1` and `end + 1` in one word, 0 for none: a new table is
/// zeroed memory, which the system maps only where a distance is measured.
#[derive(Default)]
struct Matches {
    stretches: Vec<u64>,
}

impl Matches {
    /// Forgets every stretch of distances below `length`.
    fn reset(&mut self, length: usize) {
        if self.stretches.len() < length {
            self.stretches = vec![0; length];
        } else {
            self.stretches[..length].fill(0);
        }
    }

    /// The stretch at `distance`: `(usize::MAX, usize::MAX)` when there is none, which
    /// no place reaches.
    fn get(&self, distance: usize) -> (usize, usize) {
        let stretch = self.stretches[distance];
        let begin = (stretch >> 32) as usize;
        let end = (stretch & u64::from(u32::MAX)) as usize;
        (begin.wrapping_sub(1), end.wrapping_sub(1))
    }

    fn set(&mut self, distance: usize, begin: usize, end: usize) {
        self.stretches[distance] = ((begin as u64 + 1) << 32) | (end as u64 + 1);
    }

    /// How many values from `first` on equal those from `second` on (`first < second`),
    /// given that the first `known` do. Measured right to left: `first` is at or before the
    /// start of every earlier measurement at the same distance.
    fn ahead(&mut self, values: &[u64], first: usize, second: usize, known: usize) -> usize {
        let (distance, mut place) = (second - first, first + known);
        let length = values.len();
        // Most measurements end at once: settle those before reading the table.
        if second + known >= length || values[place] != values[place + distance] {
            return known;
        }
        let (begin, end) = self.get(distance);
        if begin <= place && place <= end {
            self.set(distance, first, end);
            return end - first;
        }
        while place + distance < length && values[place] == values[place + distance] {
            place += 1;
            if place == begin {
                place = end;
                break;
            }
        }
        self.set(distance, first, place);
        place - first
    }

    /// How many values just before `first` equal those just before `first + distance`.
    /// Measured left to right: `first` is at or after the end of every earlier measurement
    /// at the same distance.
    fn behind(&mut self, values: &[u64], first: usize, distance: usize) -> usize {
        if first == 0 || values[first - 1] != values[first - 1 + distance] {
            return 0;
        }
        let (begin, end) = self.get(distance);
        if begin <= first && first <= end {
            self.set(distance, begin, first);
            return first - begin;
        }
        let mut place = first;
        while place > 0 && values[place - 1] == values[place - 1 + distance] {
            place -= 1;
            if place == end {
                place = begin;
                break;
            }
        }
        self.set(distance, place, first);
        first - place
    }
}

/// A place's next smaller suffix and how many values the two share, side by side: the
/// stack below reads both at once, at places far apart.
#[derive(Clone, Copy)]
struct Smaller {
    next: u32,
    shared: u32,
}

/// The next smaller suffix of each place in the order `REVERSED` picks (a suffix that is a
/// prefix of another is the smaller; `values.len()` where none is) and how many values the
/// two suffixes share, into `smaller`. Right to left with a stack threaded through
/// `smaller` itself: a place's candidates are the next place, then that one's next smaller
/// suffix and so on. A candidate passed over is compared with the next one by what is
/// known already, unless the two share exactly as much as the place and the candidate do:
/// then only the values past that are compared.
fn smaller_suffixes<const REVERSED: bool>(
    values: &[u64],
    matches: &mut Matches,
    smaller: &mut Vec<Smaller>,
) {
    let length = values.len();
    let none = Smaller {
        next: length as u32,
        shared: 0,
    };
    smaller.clear();
    smaller.resize(length, none);
    for place in (0..length.saturating_sub(1)).rev() {
        let mut candidate = place + 1;
        let mut common = matches.ahead(values, place, candidate, 0);
        loop {
            // The candidate's suffix is the smaller one if it ends first, or at the first
            // value where the two differ.
            if candidate + common == length
                || precedes::<REVERSED>(values[candidate + common], values[place + common])
            {
                break;
            }
            let Smaller { next, shared } = smaller[candidate];
            let (further, between) = (next as usize, shared as usize);
            candidate = further;
            if further == length {
                common = 0;
                break;
            }
            // The candidate and the further one first differ at `between`, where the further
            // one is the smaller: the place's order against it follows unless it first differs
            // from the candidate at that very value.
            if common > between {
                common = between;
                break;
            }
            if common == between {
                common = matches.ahead(values, place, further, common);
            }
        }
        smaller[place] = Smaller {
            next: candidate as u32,
            shared: common as u32,
        };
    }
}

/// The most values a group may hold: places are kept in 32 bits (a group of 4 billion
/// values takes 32 GB to hand over). `long_runs`' caller refuses a longer one.
pub const LONGEST_GROUP: usize = u32::MAX as usize - 1;

/// The buffers of a search, kept from one group to the next.
#[derive(Default)]
struct Lyndon {
    /// Stretches measured forwards (by `smaller_suffixes`, in both orders: what they hold
    /// is true in any order).
    ahead: Matches,
    /// Stretches measured backwards, one table per order (the two are filled in turn,
    /// each left to right).
    behind: [Matches; 2],
    /// The next smaller suffixes in one order, then in the other: one table, not two, as
    /// a fresh table costs the system a page fault every 512 places.
    smaller: Vec<Smaller>,
}

/// The runs of one group's `values` with a period of `shortest` or more, appended to
/// `found` ordered by period, then start: each place and its next smaller suffix in either
/// order, whose distance is the period of a run through them if the values reach that far
/// around them (the runs theorem). A run is kept from the order in which the value past its
/// end is the smaller (the numeric one if it ends the group), at the first place within its
/// first period that gives it: so each once.
fn group_runs_by_lyndon(
    group: usize,
    values: &[u64],
    shortest: usize,
    lyndon: &mut Lyndon,
    found: &mut Vec<Run>,
) {
    let length = values.len();
    let shortest = shortest.max(1);
    if length < 2 * shortest {
        return;
    }
    assert!(
        length <= LONGEST_GROUP,
        "a group of {length} values is too long"
    );
    let first = found.len();
    lyndon.ahead.reset(length);
    let [behind_up, behind_down] = &mut lyndon.behind;
    behind_up.reset(length);
    behind_down.reset(length);
    smaller_suffixes::<false>(values, &mut lyndon.ahead, &mut lyndon.smaller);
    order_runs::<false>(group, values, shortest, &lyndon.smaller, behind_up, found);
    smaller_suffixes::<true>(values, &mut lyndon.ahead, &mut lyndon.smaller);
    order_runs::<true>(group, values, shortest, &lyndon.smaller, behind_down, found);
    found[first..].sort_unstable_by_key(|run| (run.period, run.start));
}

/// The runs of `shortest` or more that the order `REVERSED` keeps (see
/// `group_runs_by_lyndon`), from the next smaller suffixes in that order, appended to
/// `found` in order of start.
fn order_runs<const REVERSED: bool>(
    group: usize,
    values: &[u64],
    shortest: usize,
    smaller: &[Smaller],
    behind: &mut Matches,
    found: &mut Vec<Run>,
) {
    let length = values.len();
    for (place, candidate) in smaller.iter().enumerate() {
        let (further, ahead) = (candidate.next as usize, candidate.shared as usize);
        let period = further - place;
        if further == length || period < shortest || ahead + place < period {
            continue;
        }
        let behind = behind.behind(values, place, period);
        // A place a period or more into its run is not the first that gives it.
        if ahead + behind < period || behind >= period {
            continue;
        }
        let (start, stop) = (place - behind, further + ahead);
        let kept_here = if stop == length {
            !REVERSED
        } else {
            precedes::<REVERSED>(values[stop], values[stop - period])
        };
        if kept_here {
            found.push(Run {
                group,
                period,
                start,
                stop,
            });
        }
    }
}

/// Every run (see the module's documentation) of each group `values[bounds[g]..bounds[g +
/// 1]]` with a primitive block of at least `shortest` values; `start` and `stop` index
/// `values`. Ordered by group, then period, then start. Every group holds at most
/// `LONGEST_GROUP` values.
pub fn long_runs(values: &[u64], bounds: &[usize], shortest: usize) -> Vec<Run> {
    let mut lyndon = Lyndon::default();
    runs_of_groups(values, bounds, |group, group_values, found| {
        group_runs_by_lyndon(group, group_values, shortest, &mut lyndon, found);
    })
}

/// The runs `group_runs` appends for each group `values[bounds[g]..bounds[g + 1]]` (given
/// the group's number, its values and the runs so far), their places made `values`'.
fn runs_of_groups(
    values: &[u64],
    bounds: &[usize],
    mut group_runs: impl FnMut(usize, &[u64], &mut Vec<Run>),
) -> Vec<Run> {
    let mut found = Vec::new();
    for (group, span) in bounds.windows(2).enumerate() {
        let first = found.len();
        group_runs(group, &values[span[0]..span[1]], &mut found);
        for run in &mut found[first..] {
            run.start += span[0];
            run.stop += span[0];
        }
    }
    found
}

#[cfg(test)]
mod samples {
    //! Every run found by sampling each period at its multiples, the method before the runs
    //! theorem was used: the tests' second opinion on sequences too long for the plain one.
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

    use super::Run;
    use std::collections::HashMap;

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
    pub(super) const WINDOW: usize = 1 << 17;

    type Spans = HashMap<(usize, usize), usize, ahash::RandomState>;

    /// The buffers of a search, kept from one group to the next.
    pub(super) struct Search {
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
        pub(super) fn new(base: u64, window: usize) -> Self {
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
    pub(super) fn group_runs(
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

    /// `long_runs` with periods up to `window` sampled window by window.
    pub(super) fn runs_in_windows(
        values: &[u64],
        bounds: &[usize],
        shortest: usize,
        window: usize,
    ) -> Vec<Run> {
        let mut search = Search::new(random_base(), window);
        super::runs_of_groups(values, bounds, |group, group_values, found| {
            group_runs(group, group_values, shortest, &mut search, found);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::samples::{group_runs, runs_in_windows, Search, WINDOW};
    use super::{long_runs, Run};

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

    /// A sequence of `length` values from a xorshift generator seeded with `seed`, over
    /// `letters` letters.
    fn random(seed: u64, length: usize, letters: u64) -> Vec<u64> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..length)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % letters
            })
            .collect()
    }

    fn fibonacci_word(length: usize) -> Vec<u64> {
        let (mut before, mut word) = (vec![0], vec![0, 1]);
        while word.len() < length {
            (before, word) = (word.clone(), [word, before].concat());
        }
        word.truncate(length);
        word
    }

    /// Rich in runs of many periods: random letters, each stretch then copied once or more
    /// from somewhere earlier, sometimes with a letter changed.
    fn copied_stretches(seed: u64, length: usize) -> Vec<u64> {
        let noise = random(seed, 4 * length, 1 << 20);
        let mut values = random(seed + 1, 8, 3);
        let mut draws = noise.iter().copied();
        let mut draw = |below: u64| draws.next().map_or(0, |drawn| drawn % below.max(1));
        while values.len() < length {
            let stretch = 1 + draw(300) as usize;
            let from = draw(values.len() as u64) as usize;
            let copies = 1 + draw(4);
            let block: Vec<u64> = (from..values.len().min(from + stretch))
                .map(|place| values[place])
                .collect();
            for _ in 0..copies {
                values.extend(&block);
            }
            if draw(3) == 0 {
                values.push(draw(3));
            }
        }
        values.truncate(length);
        values
    }

    /// Sequences a few thousand values long, of every shape the runs of which are hard.
    fn shapes(length: usize) -> Vec<Vec<u64>> {
        let cycled = |block: &[u64]| block.iter().copied().cycle().take(length).collect();
        let mut shapes = vec![
            vec![4; length],
            cycled(&[[0; 29].as_slice(), &[1]].concat()),
            cycled(&(0..30).collect::<Vec<_>>()),
            fibonacci_word(length),
            (0..length as u64)
                .map(|place| (place.count_ones() % 2).into())
                .collect(),
        ];
        for seed in 0..3 {
            shapes.push(random(seed, length, 2));
            shapes.push(random(seed, length, 1000));
            shapes.push(copied_stretches(seed, length));
        }
        shapes
    }

    #[test]
    fn runs_of_long_sequences_are_those_found_plainly() {
        // Not a vacuous comparison: the shapes hold long runs.
        let long = shapes(3_000)
            .iter()
            .map(|values| long_runs(values, &[0, values.len()], 25).len())
            .sum::<usize>();
        assert!(long > 100, "{long}");
        for values in shapes(3_000) {
            let cut = values.len() / 3;
            for bounds in [vec![0, values.len()], vec![0, cut, values.len()]] {
                for shortest in [1, 2, 25, 100] {
                    assert_eq!(
                        long_runs(&values, &bounds, shortest),
                        long_runs_plainly(&values, &bounds, shortest),
                        "{:?}... {bounds:?} {shortest}",
                        &values[..20]
                    );
                }
            }
        }
    }

    #[test]
    fn runs_of_longer_sequences_are_those_found_by_samples() {
        for values in shapes(300_000) {
            for shortest in [1, 25] {
                let bounds = [0, values.len()];
                assert_eq!(
                    long_runs(&values, &bounds, shortest),
                    runs_in_windows(&values, &bounds, shortest, WINDOW),
                    "{:?}... {shortest}",
                    &values[..20]
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
