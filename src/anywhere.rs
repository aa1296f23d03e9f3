//! Per-message screens and roles of a batch, for finding loops anywhere in a thread.
//!
//! `vthread/anywhere.py` searches every thread for blocks that repeat back to back. It
//! compares messages by *screens* first: equal messages always have equal screens (a
//! screen hashes the type, the text and the whole meta as JavaScript sees them), so a
//! repeat the screens reject is no repeat. Every repeat the screens accept is confirmed by
//! exact canonical keys in Python, so no collision of any hash can change an answer.
//!
//! A user message also gets a *reply screen*: its text's canonical encoding with every run
//! of ASCII digits read as one `0`, so replies differing only in their numbers ("found 2
//! actions", "found 3 actions") share it. Replacing a run of digits in the text by `0` only
//! shortens runs of digits in its encoding, so replies whose number-blind keys
//! (`vthread.anywhere.reply_key`) are equal always have equal reply screens. A text with no
//! digit (most are) keeps its exact screen: folding keeps whether a text has digits.

use pyo3::prelude::*;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::columns::{parse_activity, Activity};
use crate::node::{absent_screen, Key, Node};
use crate::suffix::masked;
use crate::textrun::{self, CodePoints, TextRunOptions};

/// Role codes, as `vthread/anywhere.py` reads them.
pub const AGENT: i8 = 1;
pub const REQUEST: i8 = 2;
pub const RESPONSE: i8 = 3;
pub const USER: i8 = 4;
pub const OTHER: i8 = 0;
/// The name of a tool that only records the agent's thought, read as reasoning.
pub const THINK: &str = "think";

/// Screens and roles of a batch, one row per message, threads back to back, and the agent
/// messages whose prose runs away.
pub struct MessageColumns {
    pub offsets: Vec<i64>,
    pub screens: Vec<u64>,
    /// A user message's screen with its text's numbers folded (see the module docs); any
    /// other message's screen as it is.
    pub reply_screens: Vec<u64>,
    pub roles: Vec<i8>,
    /// Whether a tool response may have failed (a superset of the ones
    /// `vthread.anywhere.failed` says failed: `is_error` present, or a result that may begin
    /// an error); false for every other message.
    pub may_fail: Vec<bool>,
    /// Rows (batch message indices) of agent messages whose text's prose (`prose`) is a
    /// runaway under `text_run`: `vthread.anywhere`'s text rule, decided here so that no
    /// text need be handed to Python.
    pub text_rows: Vec<i64>,
    text_run: TextRunOptions,
    text_scratch: textrun::Scratch,
}

impl MessageColumns {
    /// Columns whose texts are checked with the text-run options `text_run` (resolved).
    pub fn new(text_run: TextRunOptions) -> Self {
        MessageColumns {
            offsets: vec![0],
            screens: Vec::new(),
            reply_screens: Vec::new(),
            roles: Vec::new(),
            may_fail: Vec::new(),
            text_rows: Vec::new(),
            text_run,
            text_scratch: textrun::Scratch::default(),
        }
    }

    /// Read one thread's messages (already checked to be mappings).
    pub fn push_thread<N: Node>(&mut self, items: &[N], scratch: &mut Vec<u8>) -> PyResult<()> {
        for message in items {
            let kind = message.field(Key::Type)?;
            let text = message.field(Key::Text)?;
            let meta = message.field(Key::Meta)?;
            let kind_screen = match &kind {
                Some(value) => value.screen(scratch)?,
                None => absent_screen(),
            };
            let text_screen = match &text {
                Some(value) => value.screen(scratch)?,
                None => absent_screen(),
            };
            // Absent meta differs from every present one (null included): its own constant.
            let meta_screen = match &meta {
                Some(value) => value.screen(scratch)?.wrapping_add(1),
                None => 0,
            };
            let mix = |text_screen: u64| {
                kind_screen
                    .rotate_left(21)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    ^ text_screen
                        .rotate_left(42)
                        .wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
                    ^ meta_screen
            };
            self.screens.push(masked(mix(text_screen)));
            let (role, activity) = role_and_activity(message, kind.as_ref())?;
            let may_fail = match activity {
                Some(activity) if role == RESPONSE => {
                    activity
                        .result
                        .as_ref()
                        .is_some_and(Node::may_begin_an_error)
                        || flagged_error(meta.as_ref())?
                }
                _ => false,
            };
            // A text without digits is its own number-blind form: its exact screen serves
            // (folding keeps whether a text has digits, so it never equals one that has).
            self.reply_screens.push(match &text {
                Some(value) if role == USER && value.has_ascii_digit() => {
                    masked(mix(number_blind_screen(value, scratch)?))
                }
                _ => masked(mix(text_screen)),
            });
            if role == AGENT {
                let (options, text_scratch) = (&self.text_run, &mut self.text_scratch);
                let runaway = text.as_ref().and_then(|text| {
                    text.with_code_points(|points| prose_runs_away(points, options, text_scratch))
                });
                if runaway == Some(true) {
                    self.text_rows.push(self.screens.len() as i64 - 1);
                }
            }
            self.roles.push(role);
            self.may_fail.push(may_fail);
        }
        self.offsets.push(self.screens.len() as i64);
        Ok(())
    }

    /// Append another batch's rows after this one's (its threads numbered on).
    pub fn append(&mut self, other: MessageColumns) {
        let rows = self.screens.len() as i64;
        self.offsets
            .extend(other.offsets.iter().skip(1).map(|offset| offset + rows));
        self.screens.extend(other.screens);
        self.reply_screens.extend(other.reply_screens);
        self.roles.extend(other.roles);
        self.may_fail.extend(other.may_fail);
        self.text_rows
            .extend(other.text_rows.iter().map(|row| row + rows));
    }
}

/// A message's role (`vthread.anywhere._role`), given its `type` (`kind`), with its tool
/// call or result when it is one.
pub fn role_and_activity<N: Node>(
    message: &N,
    kind: Option<&N>,
) -> PyResult<(i8, Option<Activity<N>>)> {
    Ok(match kind {
        Some(value) if value.is_text("activity") => match parse_activity(message)? {
            // A "think" tool is a scratchpad (tau-bench's, Anthropic's): reasoning.
            Some(activity) if activity.name.is_text(THINK) => (OTHER, None),
            Some(activity) if activity.kind.is_text("request") => (REQUEST, Some(activity)),
            Some(activity) if activity.kind.is_text("response") => (RESPONSE, Some(activity)),
            _ => (OTHER, None),
        },
        Some(value) if value.is_text("user") => (USER, None),
        Some(value)
            if value.is_text("system") || value.is_text("reasoning") || value.is_text("tool") =>
        {
            (OTHER, None)
        }
        _ => (AGENT, None),
    })
}

/// Whether a text's prose runs away (`textrun::has_repeated_text_run` of `prose`).
fn prose_runs_away(
    text: CodePoints<'_>,
    options: &TextRunOptions,
    scratch: &mut textrun::Scratch,
) -> bool {
    let prose = match text {
        // Most texts hold no fence: a SIMD search says so for the common one-byte storage.
        CodePoints::Latin1(points) if memchr::memmem::find(points, b"```").is_none() => None,
        CodePoints::Latin1(points) => prose(points),
        CodePoints::Ucs2(points) => prose(points),
        CodePoints::Ucs4(points) => prose(points),
    };
    match prose {
        Some(points) => textrun::has_repeated_text_run(CodePoints::Ucs4(&points), options, scratch),
        None => textrun::has_repeated_text_run(text, options, scratch),
    }
}

const BACKTICK: u32 = 0x60;

/// `vthread.anywhere.prose`: the text with every fenced block left out, a block running
/// from a "```" to the next "```" (both left out) or to the end of the text, found left to
/// right (the pattern ```` ```.*?(?:```|\Z) ````, DOTALL); None when the text holds no
/// "```" (it is its own prose, as the Python returns it).
fn prose<T: Copy + Into<u32>>(points: &[T]) -> Option<Vec<u32>> {
    let fence_at = |at: usize| {
        points
            .get(at..at + 3)
            .is_some_and(|three| three.iter().all(|&point| point.into() == BACKTICK))
    };
    let first = points
        .iter()
        .enumerate()
        .filter(|&(_, &point)| point.into() == BACKTICK)
        .map(|(at, _)| at)
        .find(|&at| fence_at(at))?;
    let mut out: Vec<u32> = points[..first].iter().map(|&point| point.into()).collect();
    let mut at = first;
    while at < points.len() {
        if fence_at(at) {
            // The block ends after the next fence that begins past this one's end.
            at = (at + 3..points.len())
                .find(|&end| fence_at(end))
                .map_or(points.len(), |end| end + 3);
        } else {
            out.push(points[at].into());
            at += 1;
        }
    }
    Some(out)
}

/// Whether the meta's activity has an `is_error` field (of any value: a superset of `True`).
fn flagged_error<N: Node>(meta: Option<&N>) -> PyResult<bool> {
    let Some(activity) = meta
        .map(|meta| meta.field(Key::Activity))
        .transpose()?
        .flatten()
    else {
        return Ok(false);
    };
    Ok(activity.field(Key::IsError)?.is_some())
}

/// The hash of a text's canonical encoding with every run of ASCII digits folded to one `0`.
fn number_blind_screen<N: Node>(text: &N, scratch: &mut Vec<u8>) -> PyResult<u64> {
    scratch.clear();
    text.push_canonical(scratch)?;
    Ok(xxh3_64_with_seed(&fold_digits(scratch), SEED_REPLY))
}

const SEED_REPLY: u64 = 11;

/// `bytes` with every maximal run of ASCII digits replaced by one `0`.
pub(crate) fn fold_digits(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &byte in bytes {
        if !(byte.is_ascii_digit() && out.last().is_some_and(u8::is_ascii_digit)) {
            out.push(if byte.is_ascii_digit() { b'0' } else { byte });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fold_digits, prose, MessageColumns, AGENT, USER};
    use crate::document::Tape;
    use crate::node::begins_an_error;
    use crate::textrun::TextRunOptions;

    const OPTIONS: TextRunOptions = TextRunOptions {
        min_units: 8,
        window: 64,
        max_unique_ratio: 0.25,
    };

    fn read(lines: &[&str]) -> MessageColumns {
        let mut columns = MessageColumns::new(OPTIONS);
        let mut scratch = Vec::new();
        for line in lines {
            let tape = Tape::parse(line.as_bytes()).expect("plain JSON");
            let messages: Vec<_> = tape.root().children().collect();
            columns.push_thread(&messages, &mut scratch).expect("read");
        }
        columns
    }

    #[test]
    fn batches_appended_are_the_batch_read_whole() {
        // Runaway prose in the third thread; the first's runs away only inside a fence.
        let lines = [
            r#"[{"type":"user","text":"go 1"},{"type":"bot","text":"```\nok. ok. ok. ok. ok. ok. ok. ok. ok.\n```"}]"#,
            r#"[]"#,
            r#"[{"type":"bot","text":"ok. ok. ok. ok. ok. ok. ok. ok. ok."},{"type":"bot","text":"ok. ok. ok. ok. ok. ok. ok. ok. ok."}]"#,
        ];
        let whole = read(&lines);
        let mut stitched = read(&lines[..1]);
        stitched.append(read(&lines[1..]));
        assert_eq!(stitched.offsets, vec![0, 2, 2, 4]);
        assert_eq!(stitched.offsets, whole.offsets);
        assert_eq!(stitched.screens, whole.screens);
        assert_eq!(stitched.reply_screens, whole.reply_screens);
        assert_eq!(stitched.roles, vec![USER, AGENT, AGENT, AGENT]);
        assert_eq!(stitched.roles, whole.roles);
        assert_eq!(stitched.may_fail, whole.may_fail);
        assert_eq!(stitched.text_rows, vec![2, 3]);
        assert_eq!(stitched.text_rows, whole.text_rows);
        assert_eq!(stitched.screens[2], stitched.screens[3]);
    }

    fn prose_of(text: &str) -> String {
        let points: Vec<u32> = text.chars().map(u32::from).collect();
        match prose(&points) {
            Some(kept) => kept.into_iter().filter_map(char::from_u32).collect(),
            None => text.to_owned(),
        }
    }

    #[test]
    fn fenced_blocks_are_left_out_as_the_pattern_leaves_them() {
        for (text, expected) in [
            ("Fix it:\n```bash\nls\nls\n```\nDone.", "Fix it:\n\nDone."),
            ("no fence", "no fence"),
            ("a ``` b", "a "),
            ("a ``` b ``` c ``` d", "a  c "),
            ("``````x", "x"),
            ("```````x", "`x"),
            ("a ````b```` c", "a ` c"),
            ("``", "``"),
            ("é```🎉```ü", "éü"),
        ] {
            assert_eq!(prose_of(text), expected, "{text:?}");
        }
    }

    fn begins(text: &str) -> bool {
        begins_an_error(text.chars().map(u32::from))
    }

    #[test]
    fn errors_are_told_by_their_start_after_python_whitespace() {
        for text in [
            "Error: full",
            "\u{3000}\x1cexception",
            "\tTraceback",
            "tr",
            "<returncode>1</returncode>",
            "<RETURNCODE>",
            "<returncode>0",
        ] {
            assert!(begins(text), "{text:?}");
        }
        for text in [
            "",
            "   ",
            "ok",
            "<returncode>0<",
            "<return",
            "\u{180e}Error",
            "xError",
            "\u{130}rror",
        ] {
            assert!(!begins(text), "{text:?}");
        }
    }

    #[test]
    fn digit_runs_fold_to_one_zero() {
        assert_eq!(fold_digits(b"\"found 12 of 3\""), b"\"found 0 of 0\"");
        assert_eq!(fold_digits(b"a0b"), fold_digits(b"a987b"));
        assert_eq!(fold_digits(b""), b"");
        assert_ne!(fold_digits(b"a1b"), fold_digits(b"a1 b"));
    }
}
