//! Throughput of JSON parsers on the benchmark workload, one JSONL line at a time:
//! serde_json (to `Value` with `preserve_order`, and validation only), sonic-rs (to its
//! `Value`), each crate's `Value` then encoded canonically and fingerprinted (the work the
//! reader does in one pass), vthread's canonical reader (with and without the fingerprint),
//! and two floors that only touch the bytes (UTF-8 validation, a memchr scan).
//!
//! The checksum of the three fingerprinting variants must agree (printed): on this workload
//! the crates' DOMs and the reader give the same canonical bytes.
//!
//! ```text
//! python -m benchmarks.workload --count 10000 --seed 0 --out /tmp/threads.jsonl
//! cargo run --release --example json_reader_bench -- /tmp/threads.jsonl [RUNS [FILTER]]
//! ```
//!
//! Every variant reads the same lines (split beforehand, untimed) in each of RUNS rounds,
//! the variants taking turns within a round so that drift on a shared machine spreads over
//! all of them; the table gives the median and the best round. MB/s counts the lines' bytes
//! (newlines excluded) in decimal megabytes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use _core::canonical::{self, Member};
use _core::fingerprint;
use _core::json_reader::Reader;
use sonic_rs::{JsonContainerTrait, JsonValueTrait};

type Variant = (&'static str, fn(&[&[u8]]) -> (u64, usize));

/// (checksum, lines rejected)
fn serde_value(lines: &[&[u8]]) -> (u64, usize) {
    let mut sum = 0u64;
    let mut rejected = 0;
    for line in lines {
        match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(value) => sum += u64::from(value.is_object()) + 1,
            Err(_) => rejected += 1,
        }
    }
    (sum, rejected)
}

fn serde_validate(lines: &[&[u8]]) -> (u64, usize) {
    let mut rejected = 0;
    for line in lines {
        if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err() {
            rejected += 1;
        }
    }
    (lines.len() as u64, rejected)
}

fn sonic_value(lines: &[&[u8]]) -> (u64, usize) {
    let mut sum = 0u64;
    let mut rejected = 0;
    for line in lines {
        match sonic_rs::from_slice::<sonic_rs::Value>(line) {
            Ok(value) => sum += u64::from(value.is_object()) + 1,
            Err(_) => rejected += 1,
        }
    }
    (sum, rejected)
}

/// A parsed number as canonical text: integers exact inside ±2**53, doubles as JavaScript.
fn push_number(out: &mut Vec<u8>, int: Option<i64>, uint: Option<u64>, double: Option<f64>) {
    match (int, uint, double) {
        (Some(int), _, _) => canonical::push_i64(out, int),
        // `as` rounds to nearest, ties to even, as Python's float(int).
        (None, Some(uint), _) => canonical::push_double(out, uint as f64),
        (None, None, Some(double)) => canonical::push_double(out, double),
        (None, None, None) => out.extend_from_slice(b"null"),
    }
}

/// The canonical encoding of a serde_json DOM, walked as `objects.rs` walks Python values.
fn push_serde(out: &mut Vec<u8>, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(flag) => out.extend_from_slice(if *flag { b"true" } else { b"false" }),
        Value::Number(number) => {
            push_number(out, number.as_i64(), number.as_u64(), number.as_f64())
        }
        Value::String(text) => canonical::push_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                push_serde(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let members = map
                .iter()
                .map(|(key, item)| {
                    let mut encoded_key = Vec::new();
                    canonical::push_str(&mut encoded_key, key);
                    let mut encoded = Vec::new();
                    push_serde(&mut encoded, item);
                    let member = Member {
                        key: encoded_key,
                        value: encoded,
                    };
                    (canonical::array_index(key.as_bytes()), member)
                })
                .collect();
            canonical::push_object(out, members);
        }
    }
}

/// The same over a sonic-rs DOM.
fn push_sonic(out: &mut Vec<u8>, value: &sonic_rs::Value) {
    if let Some(text) = value.as_str() {
        canonical::push_str(out, text);
    } else if let Some(items) = value.as_array() {
        out.push(b'[');
        for (position, item) in items.iter().enumerate() {
            if position > 0 {
                out.push(b',');
            }
            push_sonic(out, item);
        }
        out.push(b']');
    } else if let Some(map) = value.as_object() {
        let members = map
            .iter()
            .map(|(key, item)| {
                let mut encoded_key = Vec::new();
                canonical::push_str(&mut encoded_key, key);
                let mut encoded = Vec::new();
                push_sonic(&mut encoded, item);
                let member = Member {
                    key: encoded_key,
                    value: encoded,
                };
                (canonical::array_index(key.as_bytes()), member)
            })
            .collect();
        canonical::push_object(out, members);
    } else if let Some(flag) = value.as_bool() {
        out.extend_from_slice(if flag { b"true" } else { b"false" });
    } else if value.is_number() {
        push_number(out, value.as_i64(), value.as_u64(), value.as_f64());
    } else {
        out.extend_from_slice(b"null");
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The reader's own eight-byte scan (json_reader::plain_run_end), for a fair comparison.
fn plain_run_end(bytes: &[u8], mut at: usize) -> usize {
    let zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let stops = zero(word ^ (ONES * u64::from(b'"')))
            | zero(word ^ (ONES * u64::from(b'\\')))
            | zero(word ^ (ONES * 0x7F))
            | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS)
            | (word & HIGHS);
        if stops != 0 {
            return at + (stops.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < bytes.len()
        && (0x20..0x7F).contains(&bytes[at])
        && !matches!(bytes[at], b'"' | b'\\')
    {
        at += 1;
    }
    at
}

/// A string as canonical text, runs of printable ASCII copied whole.
fn push_text(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.push(b'"');
    let mut at = 0;
    while at < bytes.len() {
        let run = plain_run_end(bytes, at);
        out.extend_from_slice(&bytes[at..run]);
        at = run;
        if let Some(character) = text[at..].chars().next() {
            canonical::push_code_point(out, u32::from(character));
            at += character.len_utf8();
        }
    }
    out.push(b'"');
}

/// Member spans of the object being written: (array index, start, key end, end).
type Span = (Option<u64>, usize, usize, usize);

/// The sonic-rs DOM encoded the way the reader encodes: written in place, members reordered
/// (through `scratch`) only when JavaScript's order differs, the same repeated-key check.
fn push_sonic_in_place(
    out: &mut Vec<u8>,
    value: &sonic_rs::Value,
    spans: &mut Vec<Span>,
    scratch: &mut Vec<u8>,
) {
    if let Some(text) = value.as_str() {
        push_text(out, text);
    } else if let Some(items) = value.as_array() {
        out.push(b'[');
        for (position, item) in items.iter().enumerate() {
            if position > 0 {
                out.push(b',');
            }
            push_sonic_in_place(out, item, spans, scratch);
        }
        out.push(b']');
    } else if let Some(map) = value.as_object() {
        let body = out.len() + 1;
        out.push(b'{');
        let first = spans.len();
        for (position, (key, item)) in map.iter().enumerate() {
            if position > 0 {
                out.push(b',');
            }
            let start = out.len();
            push_text(out, key);
            let key_end = out.len();
            out.push(b':');
            push_sonic_in_place(out, item, spans, scratch);
            spans.push((
                canonical::array_index(key.as_bytes()),
                start,
                key_end,
                out.len(),
            ));
        }
        let members = &spans[first..];
        let repeated = (1..members.len()).any(|later| {
            members[..later]
                .iter()
                .any(|earlier| out[earlier.1..earlier.2] == out[members[later].1..members[later].2])
        });
        assert!(!repeated, "the workload has no repeated keys");
        let ordered = members.windows(2).all(|pair| match (pair[0].0, pair[1].0) {
            (Some(a), Some(b)) => a < b,
            (None, Some(_)) => false,
            _ => true,
        });
        if !ordered {
            let mut order: Vec<&Span> = members.iter().collect();
            order.sort_by_key(|span| span.0.map_or((1, 0), |index| (0, index)));
            scratch.clear();
            scratch.extend_from_slice(&out[body..]);
            out.truncate(body);
            for (count, span) in order.iter().enumerate() {
                if count > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&scratch[span.1 - body..span.3 - body]);
            }
        }
        spans.truncate(first);
        out.push(b'}');
    } else if let Some(flag) = value.as_bool() {
        out.extend_from_slice(if flag { b"true" } else { b"false" });
    } else if value.is_number() {
        push_number(out, value.as_i64(), value.as_u64(), value.as_f64());
    } else {
        out.extend_from_slice(b"null");
    }
}

fn sonic_in_place(lines: &[&[u8]]) -> (u64, usize) {
    let (mut out, mut spans, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
    let mut sum = 0u64;
    let mut rejected = 0;
    for line in lines {
        out.clear();
        match sonic_rs::from_slice::<sonic_rs::Value>(line) {
            Ok(value) => {
                push_sonic_in_place(&mut out, &value, &mut spans, &mut scratch);
                sum ^= fingerprint::of_canonical(&out);
            }
            Err(_) => rejected += 1,
        }
    }
    (sum, rejected)
}

fn serde_canonical(lines: &[&[u8]]) -> (u64, usize) {
    let mut out = Vec::new();
    let mut sum = 0u64;
    let mut rejected = 0;
    for line in lines {
        out.clear();
        match serde_json::from_slice::<serde_json::Value>(line) {
            Ok(value) => {
                push_serde(&mut out, &value);
                sum ^= fingerprint::of_canonical(&out);
            }
            Err(_) => rejected += 1,
        }
    }
    (sum, rejected)
}

fn sonic_canonical(lines: &[&[u8]]) -> (u64, usize) {
    let mut out = Vec::new();
    let mut sum = 0u64;
    let mut rejected = 0;
    for line in lines {
        out.clear();
        match sonic_rs::from_slice::<sonic_rs::Value>(line) {
            Ok(value) => {
                push_sonic(&mut out, &value);
                sum ^= fingerprint::of_canonical(&out);
            }
            Err(_) => rejected += 1,
        }
    }
    (sum, rejected)
}

fn canonical(lines: &[&[u8]]) -> (u64, usize) {
    let mut reader = Reader::new();
    let mut out = Vec::new();
    let mut sum = 0u64;
    let mut rejected = 0;
    for line in lines {
        out.clear();
        match reader.push_canonical(&mut out, line) {
            Ok(()) => sum += out.len() as u64,
            Err(_) => rejected += 1,
        }
    }
    (sum, rejected)
}

fn canonical_fingerprint(lines: &[&[u8]]) -> (u64, usize) {
    let mut reader = Reader::new();
    let mut out = Vec::new();
    let mut sum = 0u64;
    let mut rejected = 0;
    for line in lines {
        out.clear();
        match reader.push_canonical(&mut out, line) {
            Ok(()) => sum ^= fingerprint::of_canonical(&out),
            Err(_) => rejected += 1,
        }
    }
    (sum, rejected)
}

fn utf8_validation(lines: &[&[u8]]) -> (u64, usize) {
    let rejected = lines
        .iter()
        .filter(|line| std::str::from_utf8(line).is_err())
        .count();
    (lines.len() as u64, rejected)
}

fn memchr_scan(lines: &[&[u8]]) -> (u64, usize) {
    let quotes = lines
        .iter()
        .map(|line| memchr::memchr_iter(b'"', line).count() as u64)
        .sum();
    (quotes, 0)
}

const VARIANTS: [Variant; 10] = [
    ("serde_json -> Value (preserve_order)", serde_value),
    ("serde_json, validate only (IgnoredAny)", serde_validate),
    ("sonic-rs -> Value", sonic_value),
    ("serde_json -> Value -> canonical + xxh3", serde_canonical),
    ("sonic-rs -> Value -> canonical + xxh3", sonic_canonical),
    ("sonic-rs -> Value -> in place + xxh3", sonic_in_place),
    ("vthread json_reader -> canonical bytes", canonical),
    (
        "vthread json_reader -> canonical + xxh3",
        canonical_fingerprint,
    ),
    ("floor: std::str::from_utf8", utf8_validation),
    ("floor: memchr scan for '\"'", memchr_scan),
];

/// Texts `json.loads` accepts with a quirk; each crate's verdict beside the reader's bytes.
const EDGE_CASES: [(&str, &[u8]); 10] = [
    ("lone surrogate escape", br#"["\ud800"]"#),
    ("UTF-8-encoded surrogate", b"[\"\xed\xa0\x80\"]"),
    ("NaN / Infinity", b"[NaN, -Infinity]"),
    ("1e400 (inf)", b"[1e400]"),
    ("integer 2**64 + 1", b"[18446744073709551617]"),
    ("integer of 30 digits", b"[123456789012345678901234567890]"),
    ("repeated key", br#"{"a":1,"b":2,"a":3}"#),
    ("index-like keys", br#"{"b":1,"10":2,"2":3}"#),
    ("UTF-8 byte-order mark", b"\xef\xbb\xbf[1]"),
    ("float tie 900719925474099.25", b"[900719925474099.25]"),
];

fn fidelity() {
    println!("| json.loads accepts | reader | serde_json | sonic-rs |");
    println!("|---|---|---|---|");
    for (name, text) in EDGE_CASES {
        let reader = _core::json_reader::canonical_json(text).expect("json.loads accepts it");
        let verdict = |encoded: Result<Vec<u8>, String>| match encoded {
            Ok(bytes) if bytes == reader => "same bytes".to_owned(),
            Ok(bytes) => format!("differs: `{}`", String::from_utf8_lossy(&bytes)),
            Err(error) => format!("rejects ({})", error.split(" at ").next().unwrap_or("")),
        };
        let serde = serde_json::from_slice::<serde_json::Value>(text)
            .map(|value| {
                let mut out = Vec::new();
                push_serde(&mut out, &value);
                out
            })
            .map_err(|error| error.to_string());
        let sonic = sonic_rs::from_slice::<sonic_rs::Value>(text)
            .map(|value| {
                let mut out = Vec::new();
                push_sonic(&mut out, &value);
                out
            })
            .map_err(|error| error.to_string());
        println!(
            "| {name} | `{}` | {} | {} |",
            String::from_utf8_lossy(&reader),
            verdict(serde),
            verdict(sonic)
        );
    }
}

fn main() {
    let mut arguments = std::env::args().skip(1);
    let path = arguments
        .next()
        .expect("usage: json_reader_bench FILE.jsonl [RUNS [FILTER]]");
    let runs: usize = arguments
        .next()
        .map_or(5, |runs| runs.parse().expect("RUNS"));
    // Only the variants whose name holds FILTER (for profiling one of them).
    let filter = arguments.next().unwrap_or_default();
    let chosen: Vec<usize> = (0..VARIANTS.len())
        .filter(|&index| VARIANTS[index].0.contains(filter.as_str()))
        .collect();
    fidelity();
    let data = std::fs::read(&path).expect("readable workload");
    let lines: Vec<&[u8]> = data
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .collect();
    let bytes: usize = lines.iter().map(|line| line.len()).sum();
    println!(
        "{path}: {} lines, {bytes} bytes; {runs} rounds per variant",
        lines.len()
    );
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); VARIANTS.len()];
    let mut outcomes = vec![(0u64, 0usize); VARIANTS.len()];
    for _ in 0..runs {
        for &index in &chosen {
            let run = VARIANTS[index].1;
            let started = Instant::now();
            outcomes[index] = black_box(run(black_box(&lines)));
            times[index].push(started.elapsed());
        }
    }
    let fingerprints: Vec<String> = chosen
        .iter()
        .filter(|&&index| VARIANTS[index].0.ends_with("xxh3"))
        .map(|&index| format!("{:016x}", outcomes[index].0))
        .collect();
    println!("xor of fingerprints, per fingerprinting variant: {fingerprints:?}");
    println!(
        "| {:<42} | {:>9} | {:>9} | {:>8} | {:>8} |",
        "variant", "median ms", "MB/s", "best MB/s", "rejected"
    );
    println!("|{}|---:|---:|---:|---:|", "-".repeat(44));
    for &index in &chosen {
        let name = VARIANTS[index].0;
        let mut sorted = times[index].clone();
        sorted.sort();
        let median = sorted[sorted.len() / 2];
        let rate = |time: Duration| bytes as f64 / 1e6 / time.as_secs_f64();
        println!(
            "| {:<42} | {:>9.1} | {:>9.0} | {:>8.0} | {:>8} |",
            name,
            median.as_secs_f64() * 1e3,
            rate(median),
            rate(sorted[0]),
            outcomes[index].1
        );
    }
}
