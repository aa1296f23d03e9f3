//! Per-message screens and roles of a batch, for finding loops anywhere in a thread.
//!
//! `vthread/anywhere.py` searches every thread for blocks that repeat back to back. It
//! compares messages by *screens* first: equal messages always have equal screens (a
//! screen hashes the type, the text and the whole meta as JavaScript sees them), so a
//! repeat the screens reject is no repeat. Every repeat the screens accept is confirmed by
//! exact canonical keys in Python, so no collision of any hash can change an answer.

use pyo3::prelude::*;

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
    pub roles: Vec<i8>,
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
            let mixed = kind_screen
                .rotate_left(21)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ text_screen
                    .rotate_left(42)
                    .wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
                ^ meta_screen;
            self.screens.push(masked(mixed));
            let role = match &kind {
                Some(value) if value.is_text("activity") => match parse_activity(message)? {
                    // A "think" tool is a scratchpad (tau-bench's, Anthropic's): reasoning.
                    Some(activity) if activity.name.is_text(THINK) => OTHER,
                    Some(activity) if activity.kind.is_text("request") => REQUEST,
                    Some(activity) if activity.kind.is_text("response") => RESPONSE,
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
            if role == AGENT {
                if let Some(text) = text.filter(Node::is_nonempty_text) {
                    self.text_rows.push(self.screens.len() as i64 - 1);
                    self.texts.push(text.text_value());
                }
            }
            self.roles.push(role);
        }
        self.offsets.push(self.screens.len() as i64);
        Ok(())
    }
}
