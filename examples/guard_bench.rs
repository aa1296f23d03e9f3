//! The guard's state machine alone on a text file, for profiling without Python:
//! `cargo run --release --example guard_bench -- FILE [ROUNDS]`.

use std::time::Instant;

use _core::guard::{Feed, Guard, Options};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: guard_bench FILE [ROUNDS]");
    let rounds: usize = args.next().map_or(20, |r| r.parse().expect("a number"));
    let text = std::fs::read(path).expect("readable file");
    let options = Options {
        ngram: 4,
        window: 48,
        max_repeats: 4,
        max_unique_ratio: 0.4,
        min_chars: 0,
    };
    let mut best = f64::MAX;
    let mut guard = Guard::new(options);
    for _ in 0..rounds {
        guard.reset();
        let start = Instant::now();
        let trip = guard.push(text.as_slice(), Feed::Characters);
        best = best.min(start.elapsed().as_secs_f64());
        assert!(trip.is_none());
    }
    println!(
        "{} bytes: best {:.2} ms, {:.0} MB/s",
        text.len(),
        best * 1e3,
        text.len() as f64 / best / 1e6
    );
}
