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

use crate::columns::parse_activity;
use crate::node::{absent_screen, Key, Node, Text};
use crate::suffix::masked;

/// Role codes, as `vthread/anywhere.py` reads them.
pub const AGENT: i8 = 1;
pub const REQUEST: i8 = 2;
pub const RESPONSE: i8 = 3;
pub const USER: i8 = 4;
pub const OTHER: i8 = 0;
/// The name of a tool that only records the agent's thought, read as reasoning.
pub const THINK: &str = "think";

/// Screens, roles and agent texts of a batch, one row per message, threads back to back.
#[derive(Default)]
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
    /// Rows (batch message indices) of agent messages with a non-empty text, and the texts.
    pub text_rows: Vec<i64>,
    pub texts: Vec<Text>,
}

impl MessageColumns {
    pub fn new() -> Self {
        MessageColumns {
            offsets: vec![0],
            ..MessageColumns::default()
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
            let mut may_fail = false;
            let role = match &kind {
                Some(value) if value.is_text("activity") => match parse_activity(message)? {
                    // A "think" tool is a scratchpad (tau-bench's, Anthropic's): reasoning.
                    Some(activity) if activity.name.is_text(THINK) => OTHER,
                    Some(activity) if activity.kind.is_text("request") => REQUEST,
                    Some(activity) if activity.kind.is_text("response") => {
                        may_fail = activity
                            .result
                            .as_ref()
                            .is_some_and(Node::may_begin_an_error)
                            || flagged_error(meta.as_ref())?;
                        RESPONSE
                    }
                    _ => OTHER,
                },
                Some(value) if value.is_text("user") => USER,
                Some(value)
                    if value.is_text("system")
                        || value.is_text("reasoning")
                        || value.is_text("tool") =>
                {
                    OTHER
                }
                _ => AGENT,
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
                if let Some(text) = text.filter(Node::is_nonempty_text) {
                    self.text_rows.push(self.screens.len() as i64 - 1);
                    self.texts.push(text.text_value());
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
        self.texts.extend(other.texts);
    }
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
fn fold_digits(bytes: &[u8]) -> Vec<u8> {
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
    use super::{fold_digits, MessageColumns, AGENT, USER};
    use crate::document::Tape;
    use crate::node::begins_an_error;

    fn read(lines: &[&str]) -> MessageColumns {
        let mut columns = MessageColumns::new();
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
        let lines = [
            r#"[{"type":"user","text":"go 1"},{"type":"bot","text":"ok"}]"#,
            r#"[]"#,
            r#"[{"type":"bot","text":"again"},{"type":"bot","text":"again"}]"#,
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
        assert_eq!(stitched.text_rows, vec![1, 2, 3]);
        assert_eq!(stitched.text_rows, whole.text_rows);
        assert_eq!(stitched.texts.len(), 3);
        assert_eq!(stitched.screens[2], stitched.screens[3]);
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
