//! Recorded runs in the OpenAI chat and Anthropic messages formats, read from a parsed line
//! (`document.rs`) and written as the native line `{"id": ..., "messages": [...]}` that
//! `vthread.documents.read_run` makes of them, with the source message of every native one.
//!
//! The rules are `vthread/adapters.py`'s (`from_openai`, `from_anthropic`, the tables in its
//! docstring) and `vthread/documents.py`'s (where a run keeps its messages and its id), ported
//! one for one; the Python tests hold the two equal on drawn runs. As with the tape, Python
//! stays the judge of anything unusual: a line whose translation would raise there (a message
//! that is no object, a role that is no string, content of the wrong type), a call id that is
//! a number (Python's `1 == 1.0 == True` would make them one key), a tool result that
//! `json.loads` reads only past what the tape takes (`NaN`, a lone surrogate, a long integer,
//! deep nesting), an id Python formats from a float: all are declined, and the chunk then goes
//! the Python way whole.
//!
//! Values are copied as the line writes them (a string's escapes, a number's digits), so the
//! native line reads back as the very values Python's adapter makes: images, audio, files and
//! documents too (`adapters._media`), a tool result holding one being its content's parts and
//! another message's riding in its first native message's `meta.media`. O(line length).

use std::borrow::Cow;

use ahash::AHashMap;

use crate::document::{Declined, Tape, Value};
use crate::json_reader::{self, Problem};
use crate::node::Node;

/// The formats translated here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenAi,
    Anthropic,
    Responses,
    /// OpenAI chat whose tool calls are fenced `bash` blocks in the assistant's text.
    MiniSweAgent,
    /// OpenAI chat whose tool calls may be `<function=...>` blocks or a turn's `action`.
    SweAgent,
}

impl Format {
    /// Every format translated here.
    pub const ALL: [Format; 5] = [
        Format::OpenAi,
        Format::Anthropic,
        Format::Responses,
        Format::MiniSweAgent,
        Format::SweAgent,
    ];

    /// The format's name, as the CLI names it.
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Responses => "responses",
            Format::MiniSweAgent => "mini-swe-agent",
            Format::SweAgent => "swe-agent",
        }
    }

    /// The format named as the CLI names it ([`Format::name`]), or None for another.
    pub fn named(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|format| format.name() == name)
    }
}

/// `documents.MESSAGES_KEYS`: the first of these a run object holds is its messages.
pub(crate) const MESSAGES_KEYS: [&str; 3] = ["messages", "traj", "history"];

/// Where a run object keeps its messages and its id when the user says (`--messages-key`,
/// `--id-key`); None keeps the known keys (`documents.MESSAGES_KEYS`, `documents.run_id`'s).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunKeys<'k> {
    pub messages: Option<&'k str>,
    pub id: Option<&'k str>,
}

impl<'k> RunKeys<'k> {
    /// The value holding a run object's messages, as `documents.run_messages` finds it (the
    /// given key, else the first known key the object holds).
    pub fn messages_of<'t>(&self, run: Value<'t>) -> Option<Value<'t>> {
        match self.messages {
            Some(key) => run.get(key),
            None => MESSAGES_KEYS.iter().find_map(|key| run.get(key)),
        }
    }
}
/// `adapters._TOKEN_FIELDS`: where a usage keeps a message's own tokens, in that order.
const TOKEN_FIELDS: [&str; 3] = ["tokens", "completion_tokens", "output_tokens"];
/// `adapters.TEXT_PARTS`: the content parts whose text is read.
pub(crate) const TEXT_PARTS: [&str; 3] = ["text", "input_text", "output_text"];

/// A string of the output.
#[derive(Clone)]
enum Str<'t> {
    /// A string of the line, copied with its escapes.
    Line(Value<'t>),
    /// A constant (ASCII, nothing to escape).
    Fixed(&'static str),
    /// Parts joined (`adapters._joined_text`), written escaped.
    Joined(String),
}

impl<'t> Str<'t> {
    fn decoded(&self) -> Cow<'_, str> {
        match self {
            Str::Line(value) => value.text().unwrap_or_default(),
            Str::Fixed(text) => Cow::Borrowed(text),
            Str::Joined(text) => Cow::Borrowed(text),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Str::Line(value) => !value.is_nonempty_text(),
            Str::Fixed(text) => text.is_empty(),
            Str::Joined(text) => text.is_empty(),
        }
    }

    /// How many bytes `write` writes.
    fn written_len(&self) -> usize {
        match self {
            Str::Line(value) => value.json_text().len(),
            Str::Fixed(text) => text.len() + 2,
            Str::Joined(text) => json_string_len(text),
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Str::Line(value) => out.extend_from_slice(value.json_text()),
            Str::Fixed(text) => {
                out.push(b'"');
                out.extend_from_slice(text.as_bytes());
                out.push(b'"');
            }
            Str::Joined(text) => push_json_string(out, text),
        }
    }
}

/// How many bytes `push_json_string` writes of `text`.
fn json_string_len(text: &str) -> usize {
    2 + text
        .bytes()
        .map(|byte| match byte {
            b'"' | b'\\' | b'\n' => 2,
            0x00..=0x1F => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// A string as JSON text, UTF-8 kept (only what JSON requires escaped).
pub(crate) fn push_json_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(text.len() + 2);
    out.push(b'"');
    for &byte in text.as_bytes() {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x00..=0x1F => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0xF)]);
            }
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}

/// A tool call's arguments or a tool result.
#[derive(Clone)]
enum Payload<'t> {
    /// A value of the line, copied as written.
    Line(Value<'t>),
    /// A string that is JSON text the tape reads (`json.loads` makes the same value of it):
    /// written as it is, so it reads back as the parsed value.
    Parsed(Cow<'t, str>),
    /// A string kept as text.
    Text(Str<'t>),
    /// A value of the line in a list of its own (`[value]`).
    Listed(Value<'t>),
    /// A built-in tool's item (an object of the line) as `adapters._item_fields` keeps it:
    /// its members but its bookkeeping ones, in their order.
    Fields(Value<'t>),
}

impl Payload<'_> {
    /// How many bytes `write` writes.
    fn written_len(&self) -> usize {
        match self {
            Payload::Line(value) => value.json_text().len(),
            Payload::Parsed(text) => text.len(),
            Payload::Text(text) => text.written_len(),
            Payload::Listed(value) => value.json_text().len() + 2,
            Payload::Fields(item) => {
                let members = kept_fields(*item).map(|(key, value)| {
                    key.len() + 3 + value.json_text().len() // "key": and the value
                });
                let (count, length): (usize, usize) =
                    members.fold((0, 0), |(n, sum), len| (n + 1, sum + len));
                2 + length + count.saturating_sub(1) // the braces and the commas
            }
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Payload::Line(value) => out.extend_from_slice(value.json_text()),
            Payload::Parsed(text) => out.extend_from_slice(text.as_bytes()),
            Payload::Text(text) => text.write(out),
            Payload::Listed(value) => {
                out.push(b'[');
                out.extend_from_slice(value.json_text());
                out.push(b']');
            }
            Payload::Fields(item) => {
                out.push(b'{');
                for (number, (key, value)) in kept_fields(*item).enumerate() {
                    if number > 0 {
                        out.push(b',');
                    }
                    out.push(b'"');
                    out.extend_from_slice(key);
                    out.extend_from_slice(b"\":");
                    out.extend_from_slice(value.json_text());
                }
                out.push(b'}');
            }
        }
    }
}

/// `adapters._ITEM_BOOKKEEPING`: fields of a built-in tool's item that are no part of what it
/// does (its type, and what differs on every item); so is any field named `*_id`.
const ITEM_BOOKKEEPING: [&[u8]; 5] = [
    b"type",
    b"id",
    b"status",
    b"pending_safety_checks",
    b"acknowledged_safety_checks",
];

/// `adapters._item_fields`: the members of a built-in tool's item but its bookkeeping ones
/// (keys as the line writes them: a tape's keys are never escaped).
fn kept_fields<'t>(item: Value<'t>) -> impl Iterator<Item = (&'t [u8], Value<'t>)> {
    item.members()
        .filter(|(key, _)| !ITEM_BOOKKEEPING.contains(key) && !key.ends_with(b"_id"))
}

/// Whether `json.loads(text)` (a `str`) returns a value, as the tape would read it; Declined
/// when it returns one the tape does not take, or when the answer depends on the
/// interpreter's settings (its recursion and integer digit limits).
fn is_json_text(text: &str) -> Result<bool, Declined> {
    if text.starts_with('\u{feff}') {
        return Ok(false); // json.loads refuses a str that starts with a byte-order mark
    }
    // Most texts that are not JSON show it at once: json.loads skips " \t\n\r" and then
    // wants a value, which starts with one of these (NaN and Infinity included).
    let first = text
        .bytes()
        .find(|byte| !matches!(byte, b' ' | b'\t' | b'\n' | b'\r'));
    if !first.is_some_and(|byte| b"{[\"-0123456789tfnNI".contains(&byte)) {
        return Ok(false);
    }
    if Tape::parse_str(text).is_ok() {
        return Ok(true);
    }
    match json_reader::canonical_json(text.as_bytes()) {
        Ok(_) => Err(Declined),
        Err(error) => match error.problem {
            // Whether json.loads reads text nested this deep depends on the interpreter's
            // recursion limit, and a long integer on its digit limit: Python's to answer.
            Problem::TooDeep { .. }
            | Problem::IntegerTooLong { .. }
            | Problem::UnsupportedEncoding { .. }
            | Problem::InvalidUtf8 { .. } => Err(Declined),
            _ => Ok(false),
        },
    }
}

/// `adapters._json_or_text`: the text parsed as JSON when it is valid JSON text, else the text.
fn json_or_text(text: Str<'_>) -> Result<Payload<'_>, Declined> {
    let parsed = match &text {
        Str::Line(value) => {
            let decoded = value.text().unwrap_or_default();
            is_json_text(&decoded)?.then_some(decoded)
        }
        Str::Fixed(_) => None, // "" is not JSON text
        Str::Joined(joined) => is_json_text(joined)?.then(|| Cow::Owned(joined.clone())),
    };
    Ok(match parsed {
        Some(decoded) => Payload::Parsed(decoded),
        None => Payload::Text(text),
    })
}

/// `adapters._joined_text`: a content value's text; Declined where Python raises.
fn joined_text<'t>(content: Option<Value<'t>>) -> Result<Str<'t>, Declined> {
    let Some(content) = content.filter(|value| !value.is_null()) else {
        return Ok(Str::Fixed(""));
    };
    if content.is_string() {
        return Ok(Str::Line(content));
    }
    let parts: Vec<Value<'t>> = if content.is_object() {
        vec![content]
    } else if content.is_array() {
        content.children().collect()
    } else {
        return Err(Declined);
    };
    let mut texts = Vec::new();
    for part in parts {
        if part.is_string() {
            texts.push(part);
        } else if part.is_object() {
            // `adapters._named`: a type that is no string names no text part, and a part that
            // is no text (an image: `media_parts`) has none to join.
            let is_text = part
                .get("type")
                .is_none_or(|kind| named(Some(kind), &TEXT_PARTS));
            if let Some(text) = part.get("text").filter(|text| is_text && text.is_string()) {
                texts.push(text);
            }
        }
    }
    Ok(match texts.as_slice() {
        [] => Str::Fixed(""),
        [one] => Str::Line(*one),
        many => {
            let decoded: Vec<Cow<'_, str>> = many
                .iter()
                .map(|text| text.text().unwrap_or_default())
                .collect();
            Str::Joined(decoded.join("\n"))
        }
    })
}

/// `adapters._media`'s test of one part: an object whose type is a string naming no text
/// part (an image, audio, a file, a document, a refusal).
fn is_media(part: Value<'_>) -> bool {
    part.get("type")
        .is_some_and(|kind| kind.is_string() && !named(Some(kind), &TEXT_PARTS))
}

/// `adapters._media`: the parts of a content value that are no text, as given (a content
/// object is a list of one part; a string, null or anything else holds none).
fn media_parts<'t>(content: Option<Value<'t>>) -> impl Iterator<Item = Value<'t>> {
    let (object, array) = match content {
        Some(part) if part.is_object() => (Some(part), None),
        Some(parts) if parts.is_array() => (None, Some(parts.children())),
        _ => (None, None),
    };
    object
        .into_iter()
        .chain(array.into_iter().flatten())
        .filter(|&part| is_media(part))
}

/// `adapters._result`: a tool's result. Content holding parts that are no text is the list of
/// all its parts as given (a content object in a list of its own), so that two different
/// screenshots are two results; other content is its text, parsed when it is JSON text.
fn tool_result(content: Option<Value<'_>>) -> Result<Payload<'_>, Declined> {
    match content {
        Some(parts) if media_parts(content).next().is_some() => Ok(if parts.is_object() {
            Payload::Listed(parts)
        } else {
            Payload::Line(parts)
        }),
        _ => json_or_text(joined_text(content)?),
    }
}

/// A call id as a key of `calls`: a string or null (`None`), or no key at all.
enum CallId<'t> {
    Key(Option<Cow<'t, str>>),
    Unhashable,
}

/// The id of a call (`adapters._hashable`); a number or boolean is Declined where it would
/// be stored: Python keys it by its JSON text (`1` and `1.0` one id, `true` another), which
/// this table of strings does not hold.
fn call_id<'t>(value: Option<Value<'t>>, storing: bool) -> Result<CallId<'t>, Declined> {
    Ok(match value {
        None => CallId::Key(None),
        Some(value) if value.is_null() => CallId::Key(None),
        Some(value) if value.is_string() => CallId::Key(Some(value.text().unwrap_or_default())),
        Some(value) if value.is_number() || value.as_bool().is_some() => {
            if storing {
                return Err(Declined);
            }
            // Never stored, so never found: a number or boolean equals no string or None.
            CallId::Unhashable
        }
        Some(_) => CallId::Unhashable,
    })
}

/// What a response needs of its call: the name and the arguments (None when absent).
type Call<'t> = (Str<'t>, Option<Payload<'t>>);

/// `adapters._call`: (name, arguments) of the call `id`; for an unknown one, the result's
/// own name (its `name` when a string, else "") and no arguments.
fn find_call<'t>(
    calls: &AHashMap<Option<Cow<'t, str>>, Call<'t>>,
    id: Option<Value<'t>>,
    result: Value<'t>,
) -> Result<Call<'t>, Declined> {
    if let CallId::Key(key) = call_id(id, false)? {
        if let Some(found) = calls.get(&key) {
            return Ok(found.clone());
        }
    }
    Ok((own_name(result), None))
}

fn own_name(message: Value<'_>) -> Str<'_> {
    match message.get("name").filter(Value::is_string) {
        Some(name) => Str::Line(name),
        None => Str::Fixed(""),
    }
}

/// Writes native messages into the line, each noting its source message.
struct Writer<'o, 't> {
    out: &'o mut Vec<u8>,
    sources: &'o mut Vec<u32>,
    source: u32,
    /// Native messages written for the current source message.
    written: usize,
    /// Native messages written for the line.
    total: usize,
    /// The current source message's tokens, for its first native message.
    tokens: Option<Value<'t>>,
    /// The current source message's parts that are no text, for its first native message's
    /// `meta.media`.
    media: Vec<Value<'t>>,
    /// Memory for a message could not be had: nothing more is written, and the line is
    /// declined (Python's reading then raises MemoryError, which the CLI reports with the
    /// line's place, rather than the allocator ending the process).
    short_of_memory: bool,
}

impl<'t> Writer<'_, 't> {
    /// Starts the native messages of source message `source`; its first one carries
    /// `media` (`adapters._finish`).
    fn begin(&mut self, source: usize, message: Value<'t>, media: Vec<Value<'t>>) {
        self.source = source as u32;
        self.written = 0;
        self.tokens = usage_tokens(message);
        self.media = media;
    }

    /// Whether `more` bytes (besides the fixed parts of a message) can be written without
    /// an allocation that fails: asked for fallibly, once, before a message is written.
    fn room(&mut self, more: usize) -> bool {
        const FIXED: usize = 128;
        let tokens = self.tokens.map_or(0, |tokens| tokens.json_text().len());
        let media = if self.written == 0 {
            self.media
                .iter()
                .map(|part| part.json_text().len() + 1)
                .sum()
        } else {
            0
        };
        if !self.short_of_memory && self.out.try_reserve(more + tokens + media + FIXED).is_err() {
            self.short_of_memory = true;
        }
        !self.short_of_memory
    }

    fn open(&mut self, kind: &Str<'_>) {
        if self.total > 0 {
            self.out.push(b',');
        }
        self.out.extend_from_slice(b"{\"type\":");
        kind.write(self.out);
        self.out.extend_from_slice(b",\"text\":");
    }

    fn close(&mut self) {
        if self.written == 0 {
            if let Some(tokens) = self.tokens {
                // `_finish`: the source message's usage on the first native message it yields.
                self.out.extend_from_slice(b",\"usage\":{\"tokens\":");
                self.out.extend_from_slice(tokens.json_text());
                self.out.push(b'}');
            }
        }
        self.out.push(b'}');
        self.sources.push(self.source);
        self.written += 1;
        self.total += 1;
    }

    /// Whether the message being written is the one to carry the source message's media.
    fn carries_media(&self) -> bool {
        self.written == 0 && !self.media.is_empty()
    }

    /// The source message's media as a JSON list, each part as the line writes it.
    fn write_media(&mut self) {
        self.out.push(b'[');
        for (index, part) in self.media.iter().enumerate() {
            if index > 0 {
                self.out.push(b',');
            }
            self.out.extend_from_slice(part.json_text());
        }
        self.out.push(b']');
    }

    /// `{"type": kind, "text": text}`, and `"meta": {"media": [...]}` on the source
    /// message's first native message when it has media.
    fn text(&mut self, kind: &Str<'_>, text: &Str<'_>) {
        if !self.room(kind.written_len() + text.written_len()) {
            return;
        }
        self.open(kind);
        text.write(self.out);
        if self.carries_media() {
            self.out.extend_from_slice(b",\"meta\":{\"media\":");
            self.write_media();
            self.out.push(b'}');
        }
        self.close();
    }

    /// `adapters._request` / `_response` (with `result`), `is_error` in `meta.activity`, and
    /// the source message's media after it in `meta` (where `_finish` adds them) on its first
    /// native message.
    fn activity(
        &mut self,
        name: &Str<'_>,
        arguments: Option<&Payload<'_>>,
        result: Option<&Payload<'_>>,
        is_error: bool,
    ) {
        let payloads =
            arguments.map_or(0, Payload::written_len) + result.map_or(0, Payload::written_len);
        if !self.room(name.written_len() + payloads) {
            return;
        }
        self.open(&Str::Fixed("activity"));
        self.out
            .extend_from_slice(b"\"\",\"meta\":{\"activity\":{\"type\":");
        self.out.extend_from_slice(if result.is_some() {
            b"\"response\""
        } else {
            b"\"request\""
        });
        self.out.extend_from_slice(b",\"function\":{\"name\":");
        name.write(self.out);
        if let Some(arguments) = arguments {
            self.out.extend_from_slice(b",\"arguments\":");
            arguments.write(self.out);
        }
        if let Some(result) = result {
            self.out.extend_from_slice(b",\"result\":");
            result.write(self.out);
        }
        self.out.push(b'}');
        if is_error {
            self.out.extend_from_slice(b",\"is_error\":true");
        }
        self.out.push(b'}');
        if self.carries_media() {
            self.out.extend_from_slice(b",\"media\":");
            self.write_media();
        }
        self.out.push(b'}');
        self.close();
    }

    /// `adapters._finish`: a source message that yielded nothing is an empty text message.
    fn finish(&mut self, kind: &Str<'_>) {
        if self.written == 0 {
            self.text(kind, &Str::Fixed(""));
        }
    }
}

/// `adapters._usage`: the message's own usage, else that of the response recorded with it.
fn usage(message: Value<'_>) -> Option<Value<'_>> {
    if let Some(own) = message.get("usage") {
        return Some(own);
    }
    for holder in [message.get("response"), message.get("extra")]
        .into_iter()
        .flatten()
        .filter(Value::is_object)
    {
        if let Some(found) = holder.get("usage").filter(Value::is_object) {
            return Some(found);
        }
        let response = holder.get("response").filter(Value::is_object);
        if let Some(found) = response
            .and_then(|r| r.get("usage"))
            .filter(Value::is_object)
        {
            return Some(found);
        }
    }
    None
}

/// `adapters._usage_tokens`: the first number among the usage's token fields.
fn usage_tokens(message: Value<'_>) -> Option<Value<'_>> {
    let usage = usage(message).filter(Value::is_object)?;
    TOKEN_FIELDS
        .iter()
        .find_map(|field| usage.get(field).filter(Value::is_number))
}

/// The role's native type: `table`'s entry, else the role itself.
fn role_type<'t>(role: Value<'t>, table: &[(&str, &'static str)]) -> Str<'t> {
    table
        .iter()
        .find(|(name, _)| role.is_text(name))
        .map_or(Str::Line(role), |(_, kind)| Str::Fixed(kind))
}

const OPENAI_ROLE_TYPES: [(&str, &str); 4] = [
    ("system", "system"),
    ("developer", "system"),
    ("user", "user"),
    ("assistant", "bot"),
];
const ANTHROPIC_ROLE_TYPES: [(&str, &str); 3] =
    [("system", "system"), ("user", "user"), ("assistant", "bot")];

/// The role of a message, which must be an object with a string `role`.
fn role(message: Value<'_>) -> Result<Value<'_>, Declined> {
    if !message.is_object() {
        return Err(Declined);
    }
    message.get("role").filter(Value::is_string).ok_or(Declined)
}

/// `adapters._function`: (name, arguments) of an OpenAI `function` object.
fn function(value: Option<Value<'_>>) -> Result<Call<'_>, Declined> {
    let function = value.filter(Value::is_object).ok_or(Declined)?;
    let name = function
        .get("name")
        .filter(Value::is_string)
        .ok_or(Declined)?;
    let arguments = match function.get("arguments") {
        None => None,
        Some(text) if text.is_string() => Some(json_or_text(Str::Line(text))?),
        Some(value) => Some(Payload::Line(value)),
    };
    Ok((Str::Line(name), arguments))
}

/// Where a chat's tool calls may be written as text (`adapters._with_text_actions`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextActions {
    /// Plain OpenAI chat.
    None,
    /// mini-swe-agent: one fenced `bash` block (`adapters._bash_block`).
    BashBlock,
    /// SWE-agent: `<function=...>` blocks, else the turn's `action` (`_swe_agent_action`).
    SweAgent,
}

/// A command read from an assistant turn's text: the tool's name and its arguments.
type TextCall<'t> = (Str<'t>, Payload<'t>);

/// `adapters.from_openai`, or with text actions `adapters.from_mini_swe_agent` and
/// `from_swe_agent` (`_with_text_actions`): an assistant turn without `tool_calls` or
/// `function_call` whose text holds commands also requests them, and the next message, when
/// it is a `user` one, is the response to each (the text as it is, never parsed).
fn from_openai<'t>(
    messages: &[Value<'t>],
    writer: &mut Writer<'_, 't>,
    actions: TextActions,
) -> Result<(), Declined> {
    let mut calls: AHashMap<Option<Cow<'t, str>>, Call<'t>> = AHashMap::new();
    let mut legacy: AHashMap<Cow<'t, str>, Option<Payload<'t>>> = AHashMap::new();
    // The commands the previous assistant turn asked for, awaiting the environment's output.
    let mut pending: Vec<TextCall<'t>> = Vec::new();
    for (index, &message) in messages.iter().enumerate() {
        let role = role(message)?;
        if holds_block(message.get("content"), &ANTHROPIC_TOOL_BLOCKS) {
            return Err(Declined); // `adapters._not_anthropic`: Python says which block
        }
        // A tool's result holds its media itself (`tool_result`).
        let media = if role.is_text("tool") || role.is_text("function") {
            Vec::new()
        } else {
            media_parts(message.get("content")).collect()
        };
        writer.begin(index, message, media);
        let asked = std::mem::take(&mut pending);
        if !asked.is_empty() && role.is_text("user") {
            let output = Payload::Text(joined_text(message.get("content"))?);
            for (name, arguments) in &asked {
                writer.activity(name, Some(arguments), Some(&output), false);
            }
        } else if role.is_text("assistant") {
            openai_assistant(message, writer, &mut calls, &mut legacy)?;
            let chat_calls = [message.get("tool_calls"), message.get("function_call")];
            if actions != TextActions::None
                && chat_calls.iter().all(|v| v.is_none_or(|v| v.is_null()))
            {
                let text = joined_text(message.get("content"))?;
                pending = match actions {
                    TextActions::BashBlock => one_bash_block(&text)
                        .map(|command| (Str::Fixed("bash"), command_payload(&command)))
                        .into_iter()
                        .collect(),
                    _ => swe_agent_calls(message, &text),
                };
                for (name, arguments) in &pending {
                    writer.activity(name, Some(arguments), None, false);
                }
            }
        } else if role.is_text("tool") {
            let result = tool_result(message.get("content"))?;
            let listed = message
                .get("tool_call_ids")
                .filter(|ids| ids.is_array() && ids.children().next().is_some());
            match listed.filter(|_| message.get("tool_call_id").is_none()) {
                Some(ids) => {
                    for id in ids.children() {
                        let (name, arguments) = find_call(&calls, Some(id), message)?;
                        writer.activity(&name, arguments.as_ref(), Some(&result), false);
                    }
                }
                None => {
                    let (name, arguments) =
                        find_call(&calls, message.get("tool_call_id"), message)?;
                    writer.activity(&name, arguments.as_ref(), Some(&result), false);
                }
            }
        } else if role.is_text("function") {
            let name = own_name(message);
            let arguments = legacy.get(name.decoded().as_ref()).cloned().flatten();
            let result = tool_result(message.get("content"))?;
            writer.activity(&name, arguments.as_ref(), Some(&result), false);
        } else {
            let text = joined_text(message.get("content"))?;
            writer.text(&role_type(role, &OPENAI_ROLE_TYPES), &text);
        }
        writer.finish(&role_type(role, &OPENAI_ROLE_TYPES));
    }
    Ok(())
}

fn openai_assistant<'t>(
    message: Value<'t>,
    writer: &mut Writer<'_, 't>,
    calls: &mut AHashMap<Option<Cow<'t, str>>, Call<'t>>,
    legacy: &mut AHashMap<Cow<'t, str>, Option<Payload<'t>>>,
) -> Result<(), Declined> {
    let reasoning = message
        .get("reasoning_content")
        .filter(Value::is_nonempty_text)
        .or_else(|| message.get("reasoning").filter(Value::is_nonempty_text));
    if let Some(reasoning) = reasoning {
        writer.text(&Str::Fixed("reasoning"), &Str::Line(reasoning));
    }
    let mut text = joined_text(message.get("content"))?;
    if text.is_empty() {
        if let Some(refusal) = message.get("refusal").filter(Value::is_string) {
            text = Str::Line(refusal);
        }
    }
    if !text.is_empty() {
        writer.text(&Str::Fixed("bot"), &text);
    }
    if let Some(tool_calls) = message.get("tool_calls").filter(|v| !v.is_null()) {
        if !tool_calls.is_array() {
            return Err(Declined);
        }
        for call in tool_calls.children() {
            if !call.is_object() {
                return Err(Declined);
            }
            let function_value = call.get("function").filter(|v| !v.is_null());
            let custom = call.get("custom").filter(Value::is_object);
            let (name, arguments) = match (function_value, custom) {
                // A custom (free-form) tool's call: its input as is, as a Responses
                // custom_tool_call's.
                (None, Some(custom)) => {
                    let name = custom
                        .get("name")
                        .filter(Value::is_string)
                        .ok_or(Declined)?;
                    (Str::Line(name), custom.get("input").map(Payload::Line))
                }
                _ => function(function_value)?,
            };
            writer.activity(&name, arguments.as_ref(), None, false);
            if let CallId::Key(key) = call_id(call.get("id"), true)? {
                calls.insert(key, (name, arguments));
            }
        }
    }
    if let Some(function_call) = message.get("function_call").filter(|v| !v.is_null()) {
        let (name, arguments) = function(Some(function_call))?;
        writer.activity(&name, arguments.as_ref(), None, false);
        if let Str::Line(value) = name {
            legacy.insert(value.text().unwrap_or_default(), arguments);
        }
    }
    Ok(())
}

/// `{"command": <command>}` as a payload.
fn command_payload(command: &str) -> Payload<'static> {
    arguments_payload(&[("command", command)])
}

/// A JSON object of string members, in order, as a payload.
fn arguments_payload(members: &[(&str, &str)]) -> Payload<'static> {
    let mut out = Vec::new();
    out.push(b'{');
    for (index, (key, value)) in members.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        push_json_string(&mut out, key);
        out.push(b':');
        push_json_string(&mut out, value);
    }
    out.push(b'}');
    Payload::Parsed(Cow::Owned(
        String::from_utf8(out).expect("JSON text of a str is UTF-8"),
    ))
}

/// `adapters._swe_agent_action`: the turn's complete `<function=...>` calls, else its
/// `action` string (when it holds more than whitespace) as a `bash` command.
fn swe_agent_calls<'t>(message: Value<'t>, text: &Str<'_>) -> Vec<TextCall<'t>> {
    let text = text.decoded();
    let found = function_blocks(&text);
    if !found.is_empty() {
        return found
            .into_iter()
            .map(|(name, arguments)| {
                let members: Vec<(&str, &str)> = arguments.iter().map(|(k, v)| (*k, *v)).collect();
                (Str::Joined(name.to_owned()), arguments_payload(&members))
            })
            .collect();
    }
    match message.get("action").and_then(|action| action.text()) {
        Some(action) if !action.trim_matches(is_python_space).is_empty() => {
            vec![(Str::Fixed("bash"), command_payload(&action))]
        }
        _ => Vec::new(),
    }
}

/// A `<function=NAME>` call read from text: its name and `(key, value)` parameters.
type FunctionBlock<'a> = (&'a str, Vec<(&'a str, &'a str)>);

/// `adapters._function_blocks`: the complete `<function=NAME>` calls of a text, as
/// `_FUNCTION_BLOCK.finditer` (`<function=([^<>\n]+)>((?:(?!<function=).)*?)</function>`) and
/// `_PARAMETER_BLOCK.match` (`\s*<parameter=([^<>\n]+)>(.*?)</parameter>\s*`) find them: a
/// name, then only parameter blocks (each key once) and whitespace. Byte offsets throughout:
/// every delimiter is ASCII. O(len(text)): a block's scan stops at the next `<function=`.
fn function_blocks(text: &str) -> Vec<FunctionBlock<'_>> {
    const OPEN: &str = "<function=";
    const CLOSE: &str = "</function>";
    let mut found = Vec::new();
    let mut position = 0;
    while let Some(offset) = text[position..].find(OPEN) {
        let start = position + offset;
        position = start + 1; // a failed attempt: the search goes on from the next character
        let Some((name, body_start)) = delimited_name(text, start + OPEN.len()) else {
            continue;
        };
        // The body: up to the first `</function>`, unless a `<function=` comes first. The
        // close is looked for only up to that next call (a close cannot straddle its `<`), so
        // every character is scanned a bounded number of times, however many calls are open.
        let rest = &text[body_start..];
        let reopened = rest.find(OPEN).unwrap_or(rest.len());
        let Some(close) = rest[..reopened].find(CLOSE) else {
            continue;
        };
        let body = &rest[..close];
        position = body_start + close + CLOSE.len();
        let name = name.trim_matches(is_python_space);
        let mut arguments: Vec<(&str, &str)> = Vec::new();
        let mut at = 0;
        while let Some((key, value, end)) = parameter_block(body, at) {
            let key = key.trim_matches(is_python_space);
            if key.is_empty() || arguments.iter().any(|(known, _)| *known == key) {
                break;
            }
            arguments.push((key, value.trim_matches(is_python_space)));
            at = end;
        }
        if !name.is_empty() && body[at..].trim_matches(is_python_space).is_empty() {
            found.push((name, arguments));
        }
    }
    found
}

/// `([^<>\n]+)>` at `at`: the run and the offset after its `>`, or None.
fn delimited_name(text: &str, at: usize) -> Option<(&str, usize)> {
    let run = text[at..]
        .find(['<', '>', '\n'])
        .map_or(text.len(), |end| at + end);
    (run > at && text[run..].starts_with('>')).then(|| (&text[at..run], run + 1))
}

/// `_PARAMETER_BLOCK.match(body, at)`: (key, value, end of the match), or None.
fn parameter_block(body: &str, at: usize) -> Option<(&str, &str, usize)> {
    const OPEN: &str = "<parameter=";
    const CLOSE: &str = "</parameter>";
    let open = at + skip_python_space(&body[at..]);
    if !body[open..].starts_with(OPEN) {
        return None;
    }
    let (key, value_start) = delimited_name(body, open + OPEN.len())?;
    let close = value_start + body[value_start..].find(CLOSE)?;
    let after = close + CLOSE.len();
    let end = after + skip_python_space(&body[after..]);
    Some((key, &body[value_start..close], end))
}

/// The length of the run of Python whitespace (`re`'s `\s`) that begins `text`.
fn skip_python_space(text: &str) -> usize {
    text.find(|c: char| !is_python_space(c))
        .unwrap_or(text.len())
}

/// `adapters._bash_block`: the turn's one fenced `bash` block (None for none or several).
fn one_bash_block(text: &Str<'_>) -> Option<String> {
    let text = text.decoded();
    let mut blocks = bash_blocks(&text).into_iter();
    match (blocks.next(), blocks.next()) {
        (Some(block), None) => Some(block.to_owned()),
        _ => None,
    }
}

/// `adapters._bash_blocks`: `re.findall(r"```bash\s*\n(.*?)\n```", text, re.DOTALL)` in one
/// pass, following the Python function step for step (its comment says why the backtracking
/// settles where it does). Positions are byte offsets: every pattern searched is ASCII, so
/// they fall where the code-point offsets do. At most two blocks are found (one is asked).
fn bash_blocks(text: &str) -> Vec<&str> {
    const OPEN: &str = "```bash";
    const CLOSE: &str = "\n```";
    let mut blocks = Vec::new();
    let last_close = text.rfind(CLOSE);
    let mut position = 0;
    while blocks.len() < 2 {
        let Some(found) = text[position..].find(OPEN) else {
            break;
        };
        let start = position + found;
        let run_start = start + OPEN.len();
        let run_end = run_start + skip_python_space(&text[run_start..]);
        let newline = text[run_start..run_end]
            .rfind('\n')
            .map(|at| run_start + at);
        position = start + 1;
        let Some(newline) = newline else {
            continue;
        };
        match last_close {
            Some(last) if newline < last => {
                // A fence begins at `last` or before it, so this finds one.
                let Some(offset) = text[newline + 1..].find(CLOSE) else {
                    break;
                };
                let close = newline + 1 + offset;
                blocks.push(&text[newline + 1..close]);
                position = close + CLOSE.len();
            }
            Some(last) if newline == last => {
                if let Some(earlier) = text[run_start..newline].rfind('\n') {
                    blocks.push(&text[run_start + earlier + 1..newline]);
                    position = newline + CLOSE.len();
                }
            }
            _ => {}
        }
    }
    blocks
}

/// Python's `str.isspace` (what `re`'s `\s` matches in a `str` pattern): bidirectional types
/// WS, B and S and category Zs. `tools/unicode_tables.py` checks this list against the
/// interpreter.
pub fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `adapters.from_responses`: OpenAI Responses API items.
fn from_responses<'t>(items: &[Value<'t>], writer: &mut Writer<'_, 't>) -> Result<(), Declined> {
    let mut calls: AHashMap<Option<Cow<'t, str>>, Call<'t>> = AHashMap::new();
    // (built-in tool, call id) -> the call's item, whose fields are its output's arguments
    let mut tool_calls: AHashMap<(&'static str, Option<Cow<'t, str>>), Value<'t>> = AHashMap::new();
    for (index, &item) in items.iter().enumerate() {
        if !item.is_object() {
            return Err(Declined);
        }
        // `item.get("type")`: null is no type, and an item with a role is then a message.
        let kind = match item.get("type").filter(|kind| !kind.is_null()) {
            Some(kind) if kind.is_string() => Some(kind),
            Some(_) => return Err(Declined),
            None if item.get("role").is_some() => None,
            None => return Err(Declined),
        };
        // Only a message carries the parts of its content that are no text in its meta; an
        // output holds them in its result (`tool_result`).
        let media = if kind.is_none_or(|kind| kind.is_text("message")) {
            media_parts(item.get("content")).collect()
        } else {
            Vec::new()
        };
        writer.begin(index, item, media);
        // Every item yields exactly one native message, so `_finish` never adds one here.
        let Some(kind) = kind.filter(|kind| !kind.is_text("message")) else {
            let role = role(item)?;
            if has_openai_mark(item, role, &OPENAI_RESULT_ROLES) {
                return Err(Declined); // `adapters._not_openai`: Python says which
            }
            writer.text(
                &role_type(role, &OPENAI_ROLE_TYPES),
                &joined_text(item.get("content"))?,
            );
            continue;
        };
        if let Some((tool, answers)) = built_in_tool(kind) {
            // A built-in tool's call (a computer's action, a shell's command, a web
            // search): a request of the tool, its fields the arguments; its output the
            // response, its fields the result, with its call's fields.
            let id = if answers && item.get("call_id").is_none() {
                item.get("id") // a local shell's output carries its call's id there
            } else {
                item.get("call_id")
            };
            let fields = Payload::Fields(item);
            if answers {
                let arguments = match call_id(id, false)? {
                    CallId::Key(key) => tool_calls.get(&(tool, key)).copied(),
                    CallId::Unhashable => None,
                };
                let arguments = arguments.map(Payload::Fields);
                writer.activity(&Str::Fixed(tool), arguments.as_ref(), Some(&fields), false);
            } else {
                writer.activity(&Str::Fixed(tool), Some(&fields), None, false);
                if let CallId::Key(key) = call_id(id, true)? {
                    tool_calls.insert((tool, key), item);
                }
            }
            continue;
        }
        match kind {
            kind if kind.is_text("reasoning") => {
                let mut text = reasoning_text(item.get("summary"));
                if text.is_empty() {
                    text = reasoning_text(item.get("content"));
                }
                writer.text(&Str::Fixed("reasoning"), &text);
            }
            kind if kind.is_text("function_call") || kind.is_text("custom_tool_call") => {
                let (name, mut arguments) = function(Some(item))?;
                if kind.is_text("custom_tool_call") {
                    arguments = item.get("input").map(Payload::Line);
                }
                writer.activity(&name, arguments.as_ref(), None, false);
                if let CallId::Key(key) = call_id(item.get("call_id"), true)? {
                    calls.insert(key, (name, arguments));
                }
            }
            kind if kind.is_text("function_call_output")
                || kind.is_text("custom_tool_call_output") =>
            {
                let (name, arguments) = find_call(&calls, item.get("call_id"), item)?;
                let result = tool_result(item.get("output"))?;
                writer.activity(&name, arguments.as_ref(), Some(&result), false);
            }
            // Another item of the API (an MCP tool list, an approval, a reference): Python's
            // `from_responses` keeps its fields in its meta (`_item_fields`).
            kind if responses_item(Some(kind)) => {
                return Err(Declined);
            }
            kind => writer.text(&Str::Line(kind), &Str::Fixed("")),
        }
    }
    Ok(())
}

/// `adapters._reasoning_text`: the texts of a reasoning item's parts, joined.
fn reasoning_text(parts: Option<Value<'_>>) -> Str<'_> {
    let Some(parts) = parts.filter(Value::is_array) else {
        return Str::Fixed("");
    };
    let texts: Vec<Value<'_>> = parts
        .children()
        .filter(Value::is_object)
        .filter_map(|part| part.get("text").filter(Value::is_string))
        .collect();
    match texts.as_slice() {
        [] => Str::Fixed(""),
        [one] => Str::Line(*one),
        many => Str::Joined(
            many.iter()
                .map(|text| text.text().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

/// `adapters.from_anthropic`.
fn from_anthropic<'t>(messages: &[Value<'t>], writer: &mut Writer<'_, 't>) -> Result<(), Declined> {
    let mut calls: AHashMap<Option<Cow<'t, str>>, Call<'t>> = AHashMap::new();
    for (index, &message) in messages.iter().enumerate() {
        let role = role(message)?;
        if has_openai_mark(message, role, &OPENAI_ONLY_ROLES) {
            return Err(Declined); // `adapters._not_openai`: Python says which
        }
        let content = message.get("content").filter(|v| !v.is_null());
        writer.begin(index, message, anthropic_media(content));
        let kind = role_type(role, &ANTHROPIC_ROLE_TYPES);
        match content {
            None => writer.text(&kind, &Str::Fixed("")),
            Some(text) if text.is_string() => writer.text(&kind, &Str::Line(text)),
            Some(blocks) if blocks.is_array() => {
                for block in blocks.children() {
                    anthropic_block(block, &kind, writer, &mut calls)?;
                }
            }
            Some(_) => return Err(Declined),
        }
        writer.finish(&kind);
    }
    Ok(())
}

/// `adapters._ANTHROPIC_MEDIA`: the blocks a message's first native message carries whole.
const ANTHROPIC_MEDIA: [&str; 2] = ["image", "document"];

/// The image and document blocks of a message's content list, in order (what
/// `adapters._anthropic_blocks` returns), found before its blocks are written: the first
/// native message carries them, and an image may follow the text that message is made of.
fn anthropic_media(content: Option<Value<'_>>) -> Vec<Value<'_>> {
    match content {
        Some(blocks) if blocks.is_array() => blocks
            .children()
            .filter(|block| named(block.get("type"), &ANTHROPIC_MEDIA))
            .collect(),
        _ => Vec::new(),
    }
}

fn anthropic_block<'t>(
    block: Value<'t>,
    kind: &Str<'t>,
    writer: &mut Writer<'_, 't>,
    calls: &mut AHashMap<Option<Cow<'t, str>>, Call<'t>>,
) -> Result<(), Declined> {
    if block.is_string() {
        writer.text(kind, &Str::Line(block));
        return Ok(());
    }
    if !block.is_object() {
        return Err(Declined);
    }
    let Some(block_type) = block.get("type").filter(Value::is_string) else {
        return Ok(()); // no type, or one that equals no block's name: ignored
    };
    if block_type.is_text("text") {
        if let Some(text) = block.get("text").filter(Value::is_string) {
            writer.text(kind, &Str::Line(text));
        }
    } else if block_type.is_text("thinking") {
        let thinking = block.get("thinking").filter(Value::is_string);
        let text = thinking.map_or(Str::Fixed(""), Str::Line);
        writer.text(&Str::Fixed("reasoning"), &text);
    } else if block_type.is_text("redacted_thinking") {
        writer.text(&Str::Fixed("reasoning"), &Str::Fixed(""));
    } else if named(Some(block_type), &ANTHROPIC_CALLS) {
        // (the client's tool, a server tool Anthropic runs, an MCP server's)
        let name = block.get("name").filter(Value::is_string).ok_or(Declined)?;
        let arguments = block.get("input").map(Payload::Line);
        writer.activity(&Str::Line(name), arguments.as_ref(), None, false);
        if let CallId::Key(key) = call_id(block.get("id"), true)? {
            calls.insert(key, (Str::Line(name), arguments));
        }
    } else if block_type
        .text()
        .is_some_and(|kind| kind.ends_with("_tool_result") || kind == "tool_result")
    {
        // (a server tool's result, `web_search_tool_result` and the like, or an MCP one)
        let (name, arguments) = find_call(calls, block.get("tool_use_id"), block)?;
        let result = tool_result(block.get("content"))?;
        let is_error = block.get("is_error").and_then(|v| v.as_bool()) == Some(true);
        writer.activity(&name, arguments.as_ref(), Some(&result), is_error);
    }
    Ok(())
}

/// A part of a joined id as `documents._id_part` writes it: a string's text, a number as
/// `number_id_part` writes it, else its canonical JSON text (`true`, `null`).
fn id_part(value: Value<'_>) -> Result<String, Declined> {
    if let Some(text) = value.text() {
        return Ok(text.into_owned());
    }
    if value.is_number() {
        if let Some(text) = number_id_part(value.json_text()) {
            return Ok(text);
        }
    }
    let canonical = crate::json_reader::canonical_json(value.json_text()).map_err(|_| Declined)?;
    String::from_utf8(canonical).map_err(|_| Declined)
}

/// A number of a joined id as `documents._id_part` writes the value `json.loads` makes of
/// it: an integer's digits (`-0` is `0`), a number with a fraction or an exponent as
/// JavaScript writes it (`canonical::js_number_text`); None for one that reads as no finite number
/// (its canonical text, `null`).
fn number_id_part(written: &[u8]) -> Option<String> {
    let written = std::str::from_utf8(written).ok()?;
    if !written.contains(['.', 'e', 'E']) {
        let digits = written.trim_start_matches('-');
        // (`json.loads` is made to read a longer one as the infinity `JSON.parse` reads)
        if digits.len() > crate::json_reader::MAX_INT_DIGITS {
            return None;
        }
        if digits.bytes().all(|digit| digit == b'0') {
            return Some("0".to_owned());
        }
        return Some(written.to_owned());
    }
    let value: f64 = written.parse().ok()?;
    value
        .is_finite()
        .then(|| crate::canonical::js_number_text(value))
}

/// A run object's id as `documents.run_id` finds it.
pub(crate) enum RunId<'t> {
    /// A value of the line (None: no id, null).
    Value(Option<Value<'t>>),
    /// `"<task_id>/<trial>"`, each part as `id_part` writes it.
    Joined(String),
}

/// `documents.run_id`: the id key's value when one is given (null when absent), else `id`,
/// else `instance_id`, else `task_id` (with a `trial` that is not null, joined), else null.
pub(crate) fn run_id<'t>(run: Value<'t>, keys: RunKeys<'_>) -> Result<RunId<'t>, Declined> {
    if let Some(key) = keys.id {
        return Ok(RunId::Value(run.get(key)));
    }
    if let Some(id) = run.get("id").or_else(|| run.get("instance_id")) {
        return Ok(RunId::Value(Some(id)));
    }
    let Some(task) = run.get("task_id") else {
        return Ok(RunId::Value(None));
    };
    match run.get("trial") {
        Some(trial) if !trial.is_null() => Ok(RunId::Joined(format!(
            "{}/{}",
            id_part(task)?,
            id_part(trial)?
        ))),
        _ => Ok(RunId::Value(Some(task))),
    }
}

/// `documents.run_id` written to `out` as JSON.
fn write_run_id(run: Value<'_>, keys: RunKeys<'_>, out: &mut Vec<u8>) -> Result<(), Declined> {
    match run_id(run, keys)? {
        RunId::Value(Some(id)) => out.extend_from_slice(id.json_text()),
        RunId::Value(None) => out.extend_from_slice(b"null"),
        RunId::Joined(text) => push_json_string(out, &text),
    }
    Ok(())
}

/// `adapters._RESPONSES_CALLS` and `_RESPONSES_OUTPUTS`: a function's or a custom tool's
/// call and output items.
const RESPONSES_FUNCTION_ITEMS: [&str; 4] = [
    "function_call",
    "custom_tool_call",
    "function_call_output",
    "custom_tool_call_output",
];

/// `adapters.RESPONSES_MARKS`: whether `kind` is a Responses item type that makes a list of
/// typed items a Responses run, not native: a tool's call or output, a function's or a
/// built-in tool's.
pub(crate) fn responses_call_or_output(kind: Option<Value<'_>>) -> bool {
    named(kind, &RESPONSES_FUNCTION_ITEMS) || kind.and_then(built_in_tool).is_some()
}

/// `adapters.built_in_tool`: the built-in tool each of its Responses items calls or answers,
/// and whether it answers.
const BUILT_IN_TOOL_ITEMS: [(&str, &str, bool); 15] = [
    ("file_search_call", "file_search", false),
    ("web_search_call", "web_search", false),
    ("computer_call", "computer", false),
    ("computer_call_output", "computer", true),
    ("image_generation_call", "image_generation", false),
    ("code_interpreter_call", "code_interpreter", false),
    ("local_shell_call", "local_shell", false),
    ("local_shell_call_output", "local_shell", true),
    ("shell_call", "shell", false),
    ("shell_call_output", "shell", true),
    ("apply_patch_call", "apply_patch", false),
    ("apply_patch_call_output", "apply_patch", true),
    ("mcp_call", "mcp", false),
    ("tool_search_call", "tool_search", false),
    ("tool_search_output", "tool_search", true),
];

/// The built-in tool a Responses item of type `kind` calls or answers, and whether it
/// answers; None for any other item (a function's, a message).
fn built_in_tool(kind: Value<'_>) -> Option<(&'static str, bool)> {
    BUILT_IN_TOOL_ITEMS
        .iter()
        .find(|(item, _, _)| kind.is_text(item))
        .map(|&(_, tool, answers)| (tool, answers))
}

/// `adapters._RESPONSES_ITEMS`, with [`responses_call_or_output`]'s: the other item types a
/// Responses run may hold.
const RESPONSES_OTHER_ITEMS: [&str; 7] = [
    "message",
    "reasoning",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "item_reference",
    "compaction",
];

/// Whether `kind` is a type of `adapters._RESPONSES_ITEMS`: every item type a Responses run
/// may hold.
fn responses_item(kind: Option<Value<'_>>) -> bool {
    responses_call_or_output(kind) || named(kind, &RESPONSES_OTHER_ITEMS)
}

/// `adapters._ANTHROPIC_CALLS`: Anthropic blocks that call a tool (the client's, a server
/// tool's, an MCP server's).
const ANTHROPIC_CALLS: [&str; 3] = ["tool_use", "server_tool_use", "mcp_tool_use"];

/// `adapters._ANTHROPIC_BLOCKS`: content blocks only Anthropic's messages hold.
const ANTHROPIC_BLOCKS: [&str; 6] = [
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "mcp_tool_use",
];
/// `adapters._ANTHROPIC_TOOL_BLOCKS`: those a chat read as OpenAI's is refused for.
const ANTHROPIC_TOOL_BLOCKS: [&str; 4] =
    ["tool_use", "tool_result", "server_tool_use", "mcp_tool_use"];
/// `adapters.OPENAI_ONLY_ROLES` and `adapters.OPENAI_KEYS`: what only OpenAI's chat holds.
const OPENAI_ONLY_ROLES: [&str; 3] = ["tool", "function", "developer"];
/// `adapters._LANGCHAIN_ROLE_TYPES`: LangChain's messages that carry a `role` of their own.
const LANGCHAIN_ROLE_TYPES: [&str; 2] = ["chat", "ChatMessageChunk"];
const OPENAI_KEYS: [&str; 4] = [
    "tool_calls",
    "function_call",
    "tool_call_id",
    "tool_call_ids",
];

/// `adapters._OPENAI_RESULT_ROLES`: the roles of OpenAI chat's tool results.
const OPENAI_RESULT_ROLES: [&str; 2] = ["tool", "function"];

/// `adapters._first_block`: whether a content list holds a block (an object) whose `type`
/// is one of `kinds`.
fn holds_block(content: Option<Value<'_>>, kinds: &[&str]) -> bool {
    content.is_some_and(|content| {
        content.is_array()
            && content
                .children()
                .any(|block| block.is_object() && named(block.get("type"), kinds))
    })
}

/// Whether a message has a key only OpenAI's chat has, or one of `roles`
/// (`adapters._not_openai`).
fn has_openai_mark(message: Value<'_>, role: Value<'_>, roles: &[&str]) -> bool {
    // One pass over the members (keys are never escaped in a tape), where a lookup of each
    // key was four: every message of an Anthropic file is asked.
    named(Some(role), roles)
        || message.members().any(|(key, value)| {
            // (all four open with `t` or `f` and are 10 bytes or more: `role`, `content`
            // and `usage` are passed over at the first test)
            key.len() >= 10
                && matches!(key[0], b't' | b'f')
                && OPENAI_KEYS.iter().any(|name| key == name.as_bytes())
                && holds(value)
        })
}

/// `adapters._holds`: a value that is neither null nor an empty array (a logger that writes
/// every field writes `"tool_calls": null` on messages that have none).
fn holds(value: Value<'_>) -> bool {
    let empty_array = value.is_array() && value.children().next().is_none();
    !(value.is_null() || empty_array)
}

/// What a run says of its file's format, as the detection weighs it: the format, and
/// whether something specific to that format decided it (a plain chat fits every chat
/// format); no format for messages in none.
pub type Evidence = (Option<&'static str>, bool);

/// `documents.run_format_evidence` of the run a line holds, read from its tape: None when
/// it has no messages to judge by (no list of them, an empty one, or no run at all).
/// Declined for a run the core does not judge as Python does: Python decides. Lets the
/// detection judge a long run without building Python objects of it.
pub fn format_evidence(tape: &Tape<'_>, keys: RunKeys<'_>) -> Result<Option<Evidence>, Declined> {
    let root = tape.root();
    if declares_mini_swe_agent(root) {
        return Ok(Some((Some("mini-swe-agent"), true)));
    }
    let Some(listed) = listed_messages(root, keys) else {
        return Ok(None);
    };
    let messages: Vec<Value<'_>> = listed.children().collect();
    if messages.is_empty() {
        return Ok(None);
    }
    messages_format(&messages).map(Some)
}

/// [`format_evidence`] of a run that may settle its batch's format: none for a run declaring
/// itself a mini-swe-agent run or showing SWE-agent's actions, which is read so whatever
/// the batch's detected format ([`run_reading_format`]; `documents.run_format_evidence`'s
/// `undeclared`), so that it settles none and misfits none.
pub fn undeclared_format_evidence(
    tape: &Tape<'_>,
    keys: RunKeys<'_>,
) -> Result<Option<Evidence>, Declined> {
    if declares_mini_swe_agent(tape.root()) {
        return Ok(None);
    }
    let found = format_evidence(tape, keys)?;
    if matches!(found, Some((Some("swe-agent"), _)))
        && listed_messages(tape.root(), keys).is_some_and(assistant_acts)
    {
        return Ok(None);
    }
    Ok(found)
}

/// The format a line's run is read in when its batch's chat format `format` was detected
/// rather than given (`documents.run_reading_format`): mini-swe-agent's for a run declaring
/// itself one; SWE-agent's for a run whose own messages show SWE-agent's format by an
/// assistant turn's `action` ([`shows_swe_agent_actions`]), wherever it lies in the batch
/// (read as another chat format, its commands were text and its loop went unseen);
/// `format` otherwise. Declined where the detection of its messages is.
pub fn run_reading_format(
    tape: &Tape<'_>,
    format: Format,
    keys: RunKeys<'_>,
) -> Result<Format, Declined> {
    if declares_mini_swe_agent(tape.root()) {
        return Ok(Format::MiniSweAgent);
    }
    if format != Format::SweAgent && shows_swe_agent_actions(tape, keys)? {
        return Ok(Format::SweAgent);
    }
    Ok(format)
}

/// `adapters.shows_swe_agent_actions`: whether a run's messages are SWE-agent's as
/// detection tells them ([`format_evidence`]) and some assistant turn of them holds a
/// string `action`, the command SWE-agent parsed from it. The `action` is looked for first:
/// a run without one (most of a batch) is not judged further.
fn shows_swe_agent_actions(tape: &Tape<'_>, keys: RunKeys<'_>) -> Result<bool, Declined> {
    Ok(
        listed_messages(tape.root(), keys).is_some_and(assistant_acts)
            && matches!(format_evidence(tape, keys)?, Some((Some("swe-agent"), _))),
    )
}

/// The array of messages a run (`root`: a run object, or its messages) holds, if any.
fn listed_messages<'t>(root: Value<'t>, keys: RunKeys<'_>) -> Option<Value<'t>> {
    let listed = if root.is_object() {
        keys.messages_of(root)?
    } else {
        root
    };
    listed.is_array().then_some(listed)
}

/// `adapters.assistant_acts`: whether some assistant message of `listed` holds a string
/// `action` (SWE-agent records the command it parsed from the turn there).
fn assistant_acts(listed: Value<'_>) -> bool {
    listed.children().any(|message| {
        message.is_object()
            && message
                .get("role")
                .is_some_and(|role| role.is_text("assistant"))
            && message
                .get("action")
                .is_some_and(|action| action.is_string())
    })
}

/// Whether a run object declares itself a mini-swe-agent run (`documents.run_format`:
/// mini-swe-agent writes `"trajectory_format": "mini-swe-agent-1"`, whose tool calls are
/// text that the messages alone do not tell from a chat).
pub fn declares_mini_swe_agent(root: Value<'_>) -> bool {
    root.is_object()
        && root
            .get("trajectory_format")
            .and_then(|value| value.text())
            .is_some_and(|name| name.starts_with("mini-swe-agent"))
}

/// What a JSON string that settles a chat format opens with, after its quote (see
/// [`may_settle`]): OpenAI's `tool`/`function`/`developer` roles and `tool_call*`/
/// `function_call` keys, Anthropic's `tool_use`/`tool_result`/`thinking`/
/// `redacted_thinking`/`server_tool_use`/`mcp_tool_use` blocks, the Responses
/// `function_call*`/`custom_tool_call*`/`message` items and a built-in tool's calls and
/// outputs (`tool_search_*` opens with `tool`), SWE-agent's `action`, an observation
/// opening with mini-swe-agent's `<returncode>`, and the `trajectory_format` a run
/// declares.
const SETTLING_STRINGS: [&[u8]; 21] = [
    b"computer_call",
    b"shell_call",
    b"local_shell_call",
    b"apply_patch_call",
    b"web_search_call",
    b"file_search_call",
    b"code_interpreter_call",
    b"image_generation_call",
    b"mcp_call",
    b"tool",
    b"function",
    b"developer\"",
    b"thinking\"",
    b"redacted_thinking\"",
    b"server_tool_use\"",
    b"mcp_tool_use\"",
    b"custom_tool_call",
    b"message\"",
    b"action\"",
    b"<returncode>",
    b"trajectory_format\"",
];

/// The bytes [`SETTLING_STRINGS`] open with: most quotes in a line are followed by none.
const SETTLING_FIRST: [bool; 256] = {
    let mut first = [false; 256];
    let mut index = 0;
    while index < SETTLING_STRINGS.len() {
        first[SETTLING_STRINGS[index][0] as usize] = true;
        index += 1;
    }
    first
};

/// Whether the bytes after a backslash are a `\u00XX` escape of a printable ASCII character
/// (`\u0020` to `\u007f`), which may spell a letter (or `<`, `=`, `_`, a backquote, a quote)
/// of a word [`may_settle`] and [`line_marks`] look for. An escape of a control character
/// (`\u001b` of a terminal's colours, which JSON must escape, and writers do as `\u00XX`)
/// is in none of them, nor is a short escape (`\n`) or one beyond ASCII.
fn escape_may_spell_a_word(rest: &[u8]) -> bool {
    matches!(rest, [b'u', b'0', b'0', b'2'..=b'7', ..])
}

/// Whether the run a line of JSON text holds may be decisively in a chat format
/// (`documents.first_settling`): false only when [`format_evidence`] surely is not
/// `(Some(chat format), true)`, so that a file of plain chats is looked through without
/// parsing each line. One pass over the line's quotes, backslashes and `<`s: O(len(line)),
/// about a third of the line's parse.
///
/// Why it is safe: the evidence is decisive for a chat format only on one of
/// [`SETTLING_STRINGS`], a key or string value of its own (or a string's opening, for
/// `<returncode>`), so a quote stands right before it; or on SWE-agent's `<function=` call,
/// anywhere in a text. JSON writes each literally or with a `\u00XX` escape for one of its
/// ASCII characters (no other escape makes a letter: [`escape_may_spell_a_word`]), and text
/// in UTF-16 or UTF-32, which `json.loads` also reads, holds NUL bytes. A quote that opens a string follows a `:`, `,`,
/// `[`, `{` or whitespace, never a backslash (there is none outside strings); a quote that
/// closes one is looked at too: only more lines are parsed.
pub fn may_settle(line: &[u8]) -> bool {
    if memchr::memchr(0, line).is_some() {
        return true;
    }
    memchr::memchr3_iter(b'"', b'\\', b'<', line).any(|at| {
        let rest = &line[at + 1..];
        match line[at] {
            // (a quote after a backslash is in a string: none opens there)
            b'"' if at > 0 && line[at - 1] == b'\\' => false,
            b'"' => {
                rest.first()
                    .is_some_and(|&byte| SETTLING_FIRST[byte as usize])
                    && SETTLING_STRINGS
                        .iter()
                        .any(|opening| rest.starts_with(opening))
            }
            b'\\' => escape_may_spell_a_word(rest),
            _ => rest.starts_with(b"function="),
        }
    })
}

/// A mark of [`line_marks`]: the line may settle a chat format ([`may_settle`]).
pub const MAY_SETTLE: u8 = 1;
/// A mark of [`line_marks`]: the line may be a plain chat that reads otherwise in some chat
/// format than as OpenAI's ([`plain_reads_otherwise`] tells).
pub const MAY_READ_OTHERWISE: u8 = 2;
/// A mark of [`line_marks`]: no `role` key is in the line, so it may be a native thread
/// (whose messages have none), which no quick test tells from a plain chat otherwise.
pub const MAY_BE_NATIVE: u8 = 4;
/// A mark of [`line_marks`]: the line's run object surely declares itself a mini-swe-agent
/// run ([`declares_at_its_end`]), which settles no format and is no plain chat: past a
/// batch's first runs it is judged by none, with no parse.
pub const DECLARES_MINI_SWE_AGENT: u8 = 8;

/// Whether `line`, a run object, surely declares itself a mini-swe-agent run
/// ([`declares_mini_swe_agent`] of its parse), told from its end with no parse:
/// mini-swe-agent writes its `"trajectory_format"` after the messages, and a harness's ids
/// after that, so the object's last members, read backwards while each is a string key and
/// a string value, reach it within a few dozen bytes of a run of any size. The first such
/// key found backwards is the last in the object, the one a parse keeps. False when unsure
/// (a member of another kind, or a key holding an escape, is reached first; the value's
/// opening escaped; no object), the line then judged by a parse. For a line that is no JSON
/// the answer may be true: its run is then an error record, judged as none either way.
pub fn declares_at_its_end(line: &[u8]) -> bool {
    let Some(mut end) = before_whitespace(line, line.len()).checked_sub(1) else {
        return false;
    };
    if line[end] != b'}' {
        return false;
    }
    loop {
        // (`end`: where the member's value ends, at the `}` or `,` after it)
        let Some(value) = string_ending_at(line, before_whitespace(line, end)) else {
            return false;
        };
        let colon = before_whitespace(line, value.start);
        if colon == 0 || line[colon - 1] != b':' {
            return false;
        }
        let Some(key) = string_ending_at(line, before_whitespace(line, colon - 1)) else {
            return false;
        };
        let name = &line[key.start + 1..key.end - 1];
        if memchr::memchr(b'\\', name).is_some() {
            return false; // (an escape may spell the key)
        }
        if name == b"trajectory_format" {
            return line[value.start + 1..value.end - 1].starts_with(b"mini-swe-agent");
        }
        let before = before_whitespace(line, key.start);
        if before == 0 || line[before - 1] != b',' {
            return false; // (the object's first member, or no member: no declaration)
        }
        end = before - 1;
    }
}

/// Where the JSON whitespace before `at` in `text` begins.
fn before_whitespace(text: &[u8], at: usize) -> usize {
    at - text[..at]
        .iter()
        .rev()
        .take_while(|&&byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
        .count()
}

/// The JSON string (its quotes included) that ends just before `end` in `text`: from the
/// quote before `end` back to the last quote before it that no odd run of backslashes
/// escapes; None when the byte before `end` is no quote.
fn string_ending_at(text: &[u8], end: usize) -> Option<std::ops::Range<usize>> {
    if end == 0 || text[end - 1] != b'"' {
        return None;
    }
    let mut before = end - 1;
    while let Some(quote) = memchr::memrchr(b'"', &text[..before]) {
        let escapes = text[..quote]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if escapes % 2 == 0 {
            return Some(quote..end);
        }
        before = quote;
    }
    None
}

/// What a JSON string opens with, after its quote, where a plain chat may read otherwise
/// than as OpenAI's: a `reasoning*` or `refusal` key, a message's (or content part's)
/// `type`, and `content` (otherwise only when a list or an object follows: see
/// [`content_not_text`]).
const OTHERWISE_STRINGS: [&[u8]; 4] = [b"reasoning", b"refusal\"", b"type\"", b"content\""];

/// Whether the bytes after a `"content"` string are a key's colon and a list or an object.
fn content_not_text(after: &[u8]) -> bool {
    let mut rest = after.iter().skip_while(|byte| byte.is_ascii_whitespace());
    rest.next() == Some(&b':')
        && rest
            .find(|byte| !byte.is_ascii_whitespace())
            .is_some_and(|&byte| byte == b'[' || byte == b'{')
}

/// The bytes of `text` from `at` on past JSON whitespace.
fn past_whitespace(text: &[u8], at: usize) -> usize {
    at + text[at..]
        .iter()
        .take_while(|&&byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r'))
        .count()
}

/// Where content of one text part (`: [{"type": "text", "text": "..."}]`, as OpenAI's SDK
/// writes it), which reads alike in every chat format, ends in the bytes after a
/// `"content"` string; None for content of any other form.
fn one_text_part_end(after: &[u8]) -> Option<usize> {
    const OPENING: [&[u8]; 10] = [
        b":",
        b"[",
        b"{",
        b"\"type\"",
        b":",
        b"\"text\"",
        b",",
        b"\"text\"",
        b":",
        b"\"",
    ];
    let mut at = 0;
    for expected in OPENING {
        at = past_whitespace(after, at);
        if !after[at..].starts_with(expected) {
            return None;
        }
        at += expected.len();
    }
    // The text, to its closing quote (every other quote in it is escaped).
    loop {
        at += memchr::memchr2(b'"', b'\\', after.get(at..)?)?;
        if after[at] == b'"' {
            break;
        }
        at += 2;
    }
    at += 1;
    for expected in [b'}', b']'] {
        at = past_whitespace(after, at);
        if after.get(at) != Some(&expected) {
            return None;
        }
        at += 1;
    }
    Some(at)
}

/// What follows a `"tools"` key ([`tools_value_end`]).
#[derive(Debug, PartialEq, Eq)]
enum ToolsValue {
    /// No list or object follows the key's colon.
    Other,
    /// A list or object that does not close in the line.
    Unclosed,
    /// A list or object ending (the index after it) there.
    Ends(usize),
}

/// The end of the list or object after a `"tools"` key, whose opening quote's key ends at
/// `line[after_key]`: OpenAI's tool definitions, which a request log keeps beside its
/// messages (`{"type": "function", "function": {...}}` each). Its strings are passed over
/// whole (each ends at the first quote no backslash escapes), so only its brackets are
/// counted: O(its length), to the line's end when it does not close (so a caller looks for
/// no more once one is [`ToolsValue::Unclosed`]: each would be read to the end again).
fn tools_value_end(line: &[u8], after_key: usize) -> ToolsValue {
    let colon = past_whitespace(line, after_key);
    if line.get(colon) != Some(&b':') {
        return ToolsValue::Other;
    }
    let open = past_whitespace(line, colon + 1);
    if !matches!(line.get(open), Some(b'[' | b'{')) {
        return ToolsValue::Other;
    }
    let mut depth = 0usize;
    let mut at = open;
    while at < line.len() {
        match line[at] {
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return ToolsValue::Ends(at + 1);
                }
            }
            b'"' => loop {
                at += 1;
                let Some(found) = line
                    .get(at..)
                    .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
                else {
                    return ToolsValue::Unclosed;
                };
                at += found;
                if line[at] == b'"' {
                    break;
                }
                at += 1; // (the escaped character)
            },
            _ => {}
        }
        at += 1;
    }
    ToolsValue::Unclosed
}

/// A fenced `bash` block's opening, searched for once a line (built once: building the
/// searcher each time cost more than the search itself).
static BASH_FENCE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"```bash"));

/// [`may_settle`], [`MAY_READ_OTHERWISE`] and [`MAY_BE_NATIVE`] of one line in the one pass
/// over its quotes, backslashes and `<`s that `may_settle` makes (and a search for a
/// fenced `bash` block), so that a file of plain chats is looked through for all three at
/// about the cost of one. Each mark is false only when surely so: a `\u00XX` escape of a
/// printable character may spell any word, and sets them all ([`escape_may_spell_a_word`]). The list or object of a `tools` key (OpenAI's tool
/// definitions, full of `"function"` and `"type"`) is passed over unless `tools` is the
/// `messages_key`: the evidence reads the run's messages and its `trajectory_format`, and
/// in a message its role, type, content, `action` and OpenAI's call keys, never a value of
/// a `tools` key.
pub fn line_marks(line: &[u8], messages_key: Option<&str>) -> u8 {
    let declares = if declares_at_its_end(line) {
        DECLARES_MINI_SWE_AGENT
    } else {
        0
    };
    const ALL: u8 = MAY_SETTLE | MAY_READ_OTHERWISE | MAY_BE_NATIVE;
    if memchr::memchr(0, line).is_some() {
        return ALL | declares;
    }
    let mut marks = 0;
    let mut has_role = false;
    let mut alike_until = 0; // (the end of the last content of one text part)
    let mut passed_until = 0; // (the end of the last `tools` value passed over)
    let mut look_for_tools = messages_key != Some("tools");
    for at in memchr::memchr3_iter(b'"', b'\\', b'<', line) {
        if at < passed_until {
            continue;
        }
        let rest = &line[at + 1..];
        match line[at] {
            b'"' if at > 0 && line[at - 1] == b'\\' => {}
            b'"' => {
                // (`r`: a role; `c`, `t`: content, a type; the rest open no word looked for)
                let Some(&first) = rest.first() else {
                    continue;
                };
                if !SETTLING_FIRST[first as usize] && !matches!(first, b'r' | b'c' | b't') {
                    continue;
                }
                // (a tools value that does not close makes the line no JSON text, whose marks
                // need not be few: no later one is passed over, as looking for each would
                // read to the line's end once a key, quadratic in a line of many openings)
                if look_for_tools && rest.starts_with(b"tools\"") {
                    match tools_value_end(line, at + 1 + b"tools\"".len()) {
                        ToolsValue::Ends(end) => {
                            passed_until = end;
                            continue;
                        }
                        ToolsValue::Unclosed => look_for_tools = false,
                        ToolsValue::Other => {}
                    }
                }
                if SETTLING_FIRST[first as usize]
                    && SETTLING_STRINGS
                        .iter()
                        .any(|opening| rest.starts_with(opening))
                {
                    marks |= MAY_SETTLE;
                } else if rest.starts_with(b"role\"") {
                    // (a key: a message's role; a text or type `"role"` is no role)
                    let after = at + 1 + b"role\"".len();
                    has_role |= line.get(past_whitespace(line, after)) == Some(&b':');
                } else if let Some(opening) = OTHERWISE_STRINGS
                    .iter()
                    .find(|opening| rest.starts_with(opening))
                {
                    let after = &rest[opening.len()..];
                    if *opening != b"content\"" {
                        // (the type of a part of content that reads alike says nothing)
                        if at >= alike_until {
                            marks |= MAY_READ_OTHERWISE;
                        }
                    } else if let Some(end) = one_text_part_end(after) {
                        alike_until = at + 1 + opening.len() + end;
                    } else if content_not_text(after) {
                        marks |= MAY_READ_OTHERWISE;
                    }
                }
            }
            b'\\' => {
                if escape_may_spell_a_word(rest) {
                    return ALL | declares;
                }
            }
            _ => {
                if rest.starts_with(b"function=") {
                    marks |= MAY_SETTLE;
                }
            }
        }
        if has_role && marks == MAY_SETTLE | MAY_READ_OTHERWISE {
            return marks | declares;
        }
    }
    if !has_role {
        marks |= MAY_BE_NATIVE;
    }
    if marks & MAY_READ_OTHERWISE == 0 && BASH_FENCE.find(line).is_some() {
        marks |= MAY_READ_OTHERWISE;
    }
    marks | declares
}

/// Whether a content list reads alike as Anthropic's blocks and as OpenAI's parts: OpenAI's
/// reading joins the text of every part that is a string or has a string `text` and a
/// text type or none into one message, and keeps every part with another string type as
/// media; Anthropic's writes a message a string or `text` block, keeps image and document
/// blocks as media, and drops the rest (declining a part that is no object nor string).
/// So they agree when at most one part makes text in OpenAI's reading, one that makes the
/// same in Anthropic's or an empty one, and no other part makes media in one reading only.
fn content_reads_alike(content: Value<'_>) -> bool {
    let (mut texts, mut openai_texts, mut openai_text_shown) = (0, 0, false);
    for part in content.children() {
        let kind = part.get("type");
        let text = part.get("text").filter(|text| text.is_string());
        if part.is_string() || text.is_some() && named(kind, &["text"]) {
            texts += 1;
        } else if !part.is_object() {
            return false;
        } else if kind.is_some_and(|kind| kind.is_string()) {
            if named(kind, &["input_text", "output_text"]) {
                openai_texts += usize::from(text.is_some());
                openai_text_shown |= text.is_some_and(|text| text.is_nonempty_text());
            } else if !named(kind, &ANTHROPIC_ALIKE_PARTS) {
                return false;
            }
        } else if kind.is_none() {
            openai_texts += usize::from(text.is_some());
            openai_text_shown |= text.is_some_and(|text| text.is_nonempty_text());
        }
    }
    texts + openai_texts <= 1 && !openai_text_shown
}

/// A bit of [`plain_reads_otherwise`]: the plain chat reads otherwise as Anthropic's.
pub const OTHERWISE_AS_ANTHROPIC: u8 = 1;
/// A bit of [`plain_reads_otherwise`]: the plain chat reads otherwise as Responses items.
pub const OTHERWISE_AS_RESPONSES: u8 = 2;
/// A bit of [`plain_reads_otherwise`]: the plain chat reads otherwise as mini-swe-agent's.
pub const OTHERWISE_AS_MINI_SWE_AGENT: u8 = 4;

/// The content parts Anthropic's reading keeps as OpenAI's does: one text, image or
/// document block (or one string).
const ANTHROPIC_ALIKE_PARTS: [&str; 3] = ["text", "image", "document"];

/// In which chat formats the plain chat a line holds (one `format_evidence` finds not
/// decisive) reads otherwise than as OpenAI's, its reading by default, as bits
/// (`OTHERWISE_AS_*`; 0 for a line with no messages): as Anthropic's, content that is an
/// object, or a list of several parts or of a part other than a string and a text, image or
/// document block; as Anthropic's and as Responses items, an assistant's non-empty
/// reasoning, or its refusal standing for empty content; as Responses items, a message
/// with a `type` that does not read alike ([`typed_reads_alike_as_responses`]); as
/// mini-swe-agent's, an assistant's text holding one fenced `bash`
/// block (a command). 0 for a line that is no plain chat's (no messages, or one with no
/// role, as a native thread's). Declined where the tape or the reading declines.
/// O(len(line)).
pub fn plain_reads_otherwise(line: &[u8], keys: RunKeys<'_>) -> Result<u8, Declined> {
    if !crate::threads::memory_for(line.len(), false) {
        return Err(Declined);
    }
    let tape = Tape::parse(line)?;
    let root = tape.root();
    if declares_mini_swe_agent(root) || shows_swe_agent_actions(&tape, keys)? {
        // (no plain chat: a declared run, or SWE-agent's, read so in any detected format)
        return Ok(0);
    }
    // (no plain chat: no messages, or messages in no chat format, as native ones are)
    let Some(listed) = listed_messages(root, keys) else {
        return Ok(0);
    };
    let has_role = |message: &Value<'_>| message.get("role").is_some_and(|role| role.is_string());
    if !listed.children().all(|message| has_role(&message)) {
        return Ok(0);
    }
    let mut found = 0;
    for message in listed.children() {
        if let Some(kind) = message.get("type").filter(|kind| !kind.is_null()) {
            if !typed_reads_alike_as_responses(message, kind)? {
                found |= OTHERWISE_AS_RESPONSES;
            }
        }
        let content = message.get("content").filter(|value| !value.is_null());
        let anthropic_alike = match content {
            Some(content) if content.is_object() => false,
            Some(content) if content.is_array() => content_reads_alike(content),
            _ => true,
        };
        if !anthropic_alike {
            found |= OTHERWISE_AS_ANTHROPIC;
        }
        if !message
            .get("role")
            .is_some_and(|role| role.is_text("assistant"))
        {
            continue;
        }
        let text = joined_text(content)?;
        let reasoning = ["reasoning_content", "reasoning"].iter().any(|key| {
            message
                .get(key)
                .is_some_and(|value| value.is_nonempty_text())
        });
        let refusal = text.is_empty()
            && message
                .get("refusal")
                .is_some_and(|value| value.is_nonempty_text());
        if reasoning || refusal {
            found |= OTHERWISE_AS_ANTHROPIC | OTHERWISE_AS_RESPONSES;
        }
        if one_bash_block(&text).is_some() {
            found |= OTHERWISE_AS_MINI_SWE_AGENT;
        }
    }
    Ok(found)
}

/// Whether a plain chat's message with a `type` (`kind`, not null) reads alike as a
/// Responses item and as OpenAI's (`adapters.from_responses` and `from_openai`): a
/// `message` item is read as OpenAI's message is (an assistant's reasoning and refusal
/// aside, which [`plain_reads_otherwise`] tells); an item of any other type is one native
/// message of that type with no text and no media, which OpenAI's reading makes only of a
/// message whose role's native type is that type (`""` of the role `""`, `bot` of an
/// assistant's) with no text, media, reasoning nor refusal; a type that is no string, or a
/// call's or an output's, is read otherwise (an error, a tool's activity). Declined for a
/// `reasoning` item of an assistant with reasoning or of the role `reasoning`, whose texts
/// would be compared as Python joins them.
fn typed_reads_alike_as_responses(message: Value<'_>, kind: Value<'_>) -> Result<bool, Declined> {
    let Some(role) = message.get("role").and_then(|role| role.text()) else {
        return Ok(false);
    };
    if kind.is_text("message") {
        return Ok(true);
    }
    if responses_call_or_output(Some(kind)) {
        return Ok(false);
    }
    let Some(kind) = kind.text() else {
        return Ok(false);
    };
    let assistant = role == "assistant";
    let reasoning = ["reasoning_content", "reasoning"].iter().any(|key| {
        message
            .get(key)
            .is_some_and(|value| value.is_nonempty_text())
    });
    if kind == "reasoning" {
        if role == "reasoning" || assistant && reasoning {
            return Err(Declined);
        }
        return Ok(false);
    }
    let native_type = match role.as_ref() {
        "system" | "developer" => "system",
        "user" => "user",
        "assistant" => "bot",
        other => other,
    };
    let content = message.get("content");
    let Ok(text) = joined_text(content) else {
        return Ok(false); // (OpenAI's reading raises, the item's does not)
    };
    let refusal = assistant
        && message
            .get("refusal")
            .is_some_and(|value| value.is_nonempty_text());
    Ok(kind == native_type
        && text.is_empty()
        && media_parts(content).next().is_none()
        && !(assistant && (reasoning || refusal)))
}

/// `adapters.LANGCHAIN_TYPES`: the `type` of every LangChain message in its dict forms.
pub(crate) const LANGCHAIN_TYPES: [&str; 14] = [
    "human",
    "ai",
    "system",
    "tool",
    "function",
    "chat",
    "HumanMessageChunk",
    "AIMessageChunk",
    "SystemMessageChunk",
    "ToolMessageChunk",
    "FunctionMessageChunk",
    "ChatMessageChunk",
    "remove",
    "constructor",
];

/// Whether `value` is a string among `names` (`adapters._named`).
fn named(value: Option<Value<'_>>, names: &[&str]) -> bool {
    value.is_some_and(|value| names.iter().any(|name| value.is_text(name)))
}

/// `adapters.format_evidence` of a non-empty list of messages.
fn messages_format<'t>(messages: &[Value<'t>]) -> Result<Evidence, Declined> {
    if !messages.iter().all(Value::is_object) {
        return Ok((None, true));
    }
    let kind = |message: &Value<'t>| message.get("type");
    // Every message a string `type` and no `role`: native, or Responses items. One walk of
    // each message's members finds both keys and answers the three questions at once (three
    // lookups a message, each a walk, were a sixth of `vthread scan` on a 1M-message line).
    let mut typed_without_role = true;
    // Every message a string `type`, a `role` only beside LangChain's `chat` types.
    let mut typed_roles_in_chat = true;
    let mut any_role = false;
    let mut any_call_or_output = false;
    let mut all_responses_items = true;
    let mut all_langchain = true;
    let (mut any_text, mut any_content, mut any_wrapper) = (false, false, false);
    for message in messages {
        let (mut found_kind, mut found_role) = (None, None);
        for (key, value) in message.members() {
            match key {
                b"type" => found_kind = Some(value),
                b"role" => found_role = Some(value),
                b"text" => any_text = true,
                b"content" => any_content = true,
                b"data" | b"kwargs" => any_wrapper = true,
                _ => {}
            }
        }
        if !found_kind.is_some_and(|kind| kind.is_string())
            || (found_role.is_some() && !named(found_kind, &LANGCHAIN_ROLE_TYPES))
        {
            typed_without_role = false;
            typed_roles_in_chat = false;
            break;
        }
        if found_role.is_some() {
            typed_without_role = false;
            any_role = true;
        }
        any_call_or_output = any_call_or_output || responses_call_or_output(found_kind);
        all_responses_items = all_responses_items && responses_item(found_kind);
        all_langchain = all_langchain && named(found_kind, &LANGCHAIN_TYPES);
    }
    // `adapters.format_evidence`: LangChain's ChatMessage, as its fields, carries its own
    // role beside its type.
    if typed_roles_in_chat && any_role && !any_text && (any_content || any_wrapper) && all_langchain
    {
        return Ok((Some("langchain"), true));
    }
    if typed_without_role {
        if any_call_or_output && all_responses_items {
            return Ok((Some("responses"), true));
        }
        // `adapters._langchain_s`: LangChain's messages, in any of its dict forms.
        if !any_text && (any_content || any_wrapper) && all_langchain {
            return Ok((Some("langchain"), true));
        }
        // `adapters._content_without_text`: another library's messages, in no format.
        let native = any_text || !any_content;
        return Ok((native.then_some("native"), true));
    }
    // Anthropic's messages as its SDK dumps them are `"type": "message"` items with a role
    // too: their tool_use, tool_result and thinking blocks, which no Responses item holds,
    // tell them.
    let anthropic = messages
        .iter()
        .any(|m| holds_block(m.get("content"), &ANTHROPIC_BLOCKS));
    // `m.get("type", "message")`: an item without a type is a message.
    if !anthropic
        && messages
            .iter()
            .all(|m| kind(m).is_none() || responses_item(kind(m)))
        && messages.iter().any(|m| {
            responses_call_or_output(kind(m))
                || (named(kind(m), &["message"]) && m.get("role").is_some())
        })
    {
        return Ok((Some("responses"), true));
    }
    let roles: Vec<Value<'_>> = messages.iter().filter_map(|m| m.get("role")).collect();
    if roles.len() != messages.len() || !roles.iter().all(Value::is_string) {
        return Ok((None, true));
    }
    let openai = messages.iter().zip(&roles).any(|(m, role)| {
        named(Some(*role), &OPENAI_ONLY_ROLES) || OPENAI_KEYS.iter().any(|key| m.get(key).is_some())
    });
    if anthropic {
        return Ok((if openai { None } else { Some("anthropic") }, true));
    }
    let assistants: Vec<&Value<'_>> = messages
        .iter()
        .zip(&roles)
        .filter(|(_, role)| role.is_text("assistant"))
        .map(|(m, _)| m)
        .collect();
    if assistants
        .iter()
        .any(|m| m.get("action").is_some_and(|action| action.is_string()))
    {
        return Ok((Some("swe-agent"), true));
    }
    if !openai {
        for message in assistants {
            let content = message.get("content");
            if content.is_some_and(|c| c.is_string() || c.is_array())
                && !function_blocks(&joined_text(content)?.decoded()).is_empty()
            {
                return Ok((Some("swe-agent"), true));
            }
        }
        if answered_commands(messages) {
            return Ok((Some("mini-swe-agent"), true));
        }
    }
    Ok((Some("openai"), openai))
}

/// `adapters._answered_commands`: an assistant message holding mini-swe-agent's command
/// (exactly one fenced `bash` block, in string content) answered by a user message whose
/// string content opens with `<returncode>`.
fn answered_commands(messages: &[Value<'_>]) -> bool {
    messages.windows(2).any(|pair| {
        let (turn, reply) = (pair[0], pair[1]);
        if !named(turn.get("role"), &["assistant"]) || !named(reply.get("role"), &["user"]) {
            return false;
        }
        let observation = reply.get("content").and_then(|value| value.text());
        if !observation.is_some_and(|text| text.starts_with("<returncode>")) {
            return false;
        }
        turn.get("content")
            .and_then(|value| value.text())
            .is_some_and(|command| bash_blocks(&command).len() == 1)
    })
}

/// One line's run in `format` as a native line appended to `out` (`{"id": ..., "messages":
/// [...]}`), the source message of each native message appended to `sources`; returns the
/// number of source messages. Declined (`out` and `sources` then hold partial output the
/// caller discards) for anything Python should read.
pub fn translate_line(
    line: &[u8],
    format: Format,
    keys: RunKeys<'_>,
    out: &mut Vec<u8>,
    sources: &mut Vec<u32>,
) -> Result<usize, Declined> {
    translate_tape(&Tape::parse(line)?, format, keys, out, sources)
}

/// `translate_line` of a line's tape.
pub fn translate_tape(
    tape: &Tape<'_>,
    format: Format,
    keys: RunKeys<'_>,
    out: &mut Vec<u8>,
    sources: &mut Vec<u32>,
) -> Result<usize, Declined> {
    let root = tape.root();
    out.extend_from_slice(b"{\"id\":");
    let messages = if root.is_array() {
        out.extend_from_slice(b"null");
        root
    } else if root.is_object() {
        let messages = keys.messages_of(root).ok_or(Declined)?;
        if !messages.is_array() {
            return Err(Declined);
        }
        write_run_id(root, keys, out)?;
        messages
    } else {
        return Err(Declined);
    };
    out.extend_from_slice(b",\"messages\":[");
    let messages: Vec<Value<'_>> = messages.children().collect();
    let mut writer = Writer {
        out,
        sources,
        source: 0,
        written: 0,
        total: 0,
        tokens: None,
        media: Vec::new(),
        short_of_memory: false,
    };
    match format {
        Format::OpenAi => from_openai(&messages, &mut writer, TextActions::None)?,
        Format::MiniSweAgent => from_openai(&messages, &mut writer, TextActions::BashBlock)?,
        Format::SweAgent => from_openai(&messages, &mut writer, TextActions::SweAgent)?,
        Format::Anthropic => from_anthropic(&messages, &mut writer)?,
        Format::Responses => from_responses(&messages, &mut writer)?,
    }
    if writer.short_of_memory {
        return Err(Declined);
    }
    out.extend_from_slice(b"]}");
    Ok(messages.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn may_settle_finds_every_settling_word() {
        for line in [
            r#"[{"role": "tool", "content": "1"}]"#,
            r#"[{"role": "assistant", "tool_calls": []}]"#,
            r#"[{"role": "developer", "content": "x"}]"#,
            r#"[{"role": "user", "content": [{"type": "tool_result"}]}]"#,
            r#"[{"role": "assistant", "content": [{"type": "redacted_thinking"}]}]"#,
            r#"[{"type": "custom_tool_call", "call_id": "c"}]"#,
            r#"[{"type": "message", "role": "user"}]"#,
            r#"[{"role": "assistant", "content": "x", "action": "ls"}]"#,
            r#"[{"role": "assistant", "content": "<function=bash></function>"}]"#,
            r#"[{"role": "user", "content": "<returncode>0</returncode>"}]"#,
            r#"{"trajectory_format": "mini-swe-agent-1", "messages": []}"#,
            r#"[{"r\u006fle": "tool"}]"#,
            r#"[{"role": "user", "content": "\u003creturncode>0"}]"#,
            r#"[{"role": "assistant", "content": "x", "\u0061ction": "ls"}]"#,
            "[\0]",
        ] {
            assert!(may_settle(line.as_bytes()), "{line}");
        }
    }

    #[test]
    fn a_declaration_is_told_from_the_end_of_the_line_only_when_sure() {
        let told = |line: &str| declares_at_its_end(line.as_bytes());
        let parsed =
            |line: &str| declares_mini_swe_agent(Tape::parse(line.as_bytes()).unwrap().root());
        let sure = [
            r#"{"messages": [], "trajectory_format": "mini-swe-agent-1"}"#,
            r#"{"info": {"a": "}"}, "messages": [{"content": "\"x\\"}], "trajectory_format" : "mini-swe-agent-1.1" , "instance_id":"a\"b\\" }"#,
            "{\"trajectory_format\":\"other\",\"trajectory_format\":\"mini-swe-agent\"}\n",
        ];
        for line in sure {
            assert!(told(line), "{line}");
        }
        // (the tape declines a repeated key, which Python's json reads: the last kept)
        assert!(parsed(sure[0]) && parsed(sure[1]));
        let unsure_or_not = [
            r#"{"trajectory_format": "mini-swe-agent-1", "messages": []}"#, // (a parse tells)
            r#"{"messages": [], "trajectory_format": "mini-swe-agent-1", "n": 1}"#,
            r#"{"messages": [], "trajectory_format": "swe-agent"}"#,
            r#"{"trajectory_format": "mini-swe-agent-1", "trajectory_format": "other"}"#,
            r#"{"trajectory_format": "mini-swe-agent-1", "trajectory\u005fformat": "other"}"#,
            r#"{"a": {"trajectory_format": "mini-swe-agent-1"}}"#,
            r#"{"a": ["x", "trajectory_format", "mini-swe-agent-1"]}"#,
            r#"{"a": "trajectory_format\":\"mini-swe-agent-1"}"#,
            r#"{"a": "x\\", "trajectory_format": "\u006dini-swe-agent"}"#,
            r#"[{"trajectory_format": "mini-swe-agent-1"}]"#,
            "",
            "}",
            "\"}",
            ":\"x\"}",
        ];
        for line in unsure_or_not {
            assert!(!told(line), "{line}");
        }
        assert_eq!(
            line_marks(sure[0].as_bytes(), None) & DECLARES_MINI_SWE_AGENT,
            DECLARES_MINI_SWE_AGENT
        );
        assert_eq!(
            line_marks(unsure_or_not[0].as_bytes(), None) & DECLARES_MINI_SWE_AGENT,
            0
        );
    }

    #[test]
    fn a_declared_run_is_no_plain_chat_that_reads_otherwise() {
        let chat = r#"[{"role": "assistant", "content": "THOUGHT: x\n\n```bash\nls\n```"}]"#;
        let plain = format!(r#"{{"messages": {chat}}}"#);
        let declared =
            format!(r#"{{"trajectory_format": "mini-swe-agent-1", "messages": {chat}}}"#);
        assert_eq!(
            plain_reads_otherwise(plain.as_bytes(), RunKeys::default()),
            Ok(OTHERWISE_AS_MINI_SWE_AGENT)
        );
        assert_eq!(
            plain_reads_otherwise(declared.as_bytes(), RunKeys::default()),
            Ok(0)
        );
    }

    #[test]
    fn a_built_in_tool_s_items_tell_a_responses_run() {
        let evidence = |line: &str| {
            let tape = Tape::parse(line.as_bytes()).unwrap();
            format_evidence(&tape, RunKeys::default()).unwrap()
        };
        for line in [
            r#"[{"type": "computer_call", "call_id": "c", "action": {}},
                {"type": "computer_call_output", "call_id": "c", "output": {}}]"#,
            r#"[{"role": "user", "content": "go"}, {"type": "reasoning", "summary": []},
                {"type": "local_shell_call", "call_id": "c", "action": {}}]"#,
            r#"[{"type": "web_search_call", "action": {}}]"#,
            r#"[{"type": "tool_search_output", "call_id": "c", "tools": []}]"#,
        ] {
            assert_eq!(evidence(line), Some((Some("responses"), true)), "{line}");
            assert!(may_settle(line.as_bytes()), "{line}");
        }
        // (an item of the API that is no tool's alone is no sign: read as native)
        let listed = r#"[{"type": "mcp_list_tools", "tools": []}]"#;
        assert_eq!(evidence(listed), Some((Some("native"), true)));
    }

    #[test]
    fn typed_messages_with_a_content_and_no_text_are_langchain_s_or_in_no_format() {
        let evidence = |line: &str| {
            let tape = Tape::parse(line.as_bytes()).unwrap();
            format_evidence(&tape, RunKeys::default()).unwrap()
        };
        // Another library's messages: read as native, every thread would be a loop.
        let foreign =
            r#"[{"type": "question", "content": "q"}, {"type": "answer", "content": "a"}]"#;
        assert_eq!(evidence(foreign), Some((None, true)));
        // LangChain's, in each of its dict forms, are read as LangChain's; one type that is
        // no LangChain message's leaves them in no format.
        for line in [
            r#"[{"type": "human", "content": "q"}, {"type": "ai", "content": "a"}]"#,
            r#"[{"type": "human", "data": {"content": "q"}}, {"type": "AIMessageChunk"}]"#,
            r#"[{"lc": 1, "type": "constructor", "kwargs": {"content": "q"}}]"#,
        ] {
            assert_eq!(evidence(line), Some((Some("langchain"), true)), "{line}");
        }
        let mixed = r#"[{"type": "human", "content": "q"}, {"type": "answer", "content": "a"}]"#;
        assert_eq!(evidence(mixed), Some((None, true)));
        // One text among them, or no content at all, is native.
        for line in [
            r#"[{"type": "human", "content": "q"}, {"type": "bot", "text": "a"}]"#,
            r#"[{"type": "user"}, {"type": "bot"}]"#,
        ] {
            assert_eq!(evidence(line), Some((Some("native"), true)), "{line}");
        }
    }

    #[test]
    fn a_declared_run_is_no_evidence_of_its_batch_format() {
        let evidence = |line: &str| {
            let tape = Tape::parse(line.as_bytes()).unwrap();
            (
                format_evidence(&tape, RunKeys::default()).unwrap(),
                undeclared_format_evidence(&tape, RunKeys::default()).unwrap(),
            )
        };
        let declared = r#"{"trajectory_format": "mini-swe-agent-1", "messages": [{"role": "tool", "content": "x"}]}"#;
        assert_eq!(
            evidence(declared),
            (Some((Some("mini-swe-agent"), true)), None)
        );
        let other =
            r#"{"trajectory_format": "other", "messages": [{"role": "tool", "content": "x"}]}"#;
        assert_eq!(evidence(other).0, evidence(other).1);
        assert_eq!(evidence(other).1, Some((Some("openai"), true)));
        let bare = r#"[{"role": "user", "content": "x"}]"#;
        assert_eq!(
            evidence(bare),
            (Some((Some("openai"), false)), Some((Some("openai"), false)))
        );
    }

    #[test]
    fn a_run_declares_mini_swe_agent_only_by_its_trajectory_format() {
        let declares =
            |line: &str| declares_mini_swe_agent(Tape::parse(line.as_bytes()).unwrap().root());
        assert!(declares(
            r#"{"trajectory_format": "mini-swe-agent-1", "messages": []}"#
        ));
        assert!(declares(
            r#"{"trajectory_format": "mini-swe-agent", "messages": []}"#
        ));
        for line in [
            r#"{"trajectory_format": "swe-agent", "messages": []}"#,
            r#"{"trajectory_format": ["mini-swe-agent-1"], "messages": []}"#,
            r#"{"meta": {"trajectory_format": "mini-swe-agent-1"}, "messages": []}"#,
            r#"[{"trajectory_format": "mini-swe-agent-1"}]"#,
        ] {
            assert!(!declares(line), "{line}");
        }
    }

    #[test]
    fn a_run_is_read_as_swe_agent_s_by_an_assistant_s_action_alone() {
        let reading = |line: &str, format: Format| {
            let tape = Tape::parse(line.as_bytes()).unwrap();
            run_reading_format(&tape, format, RunKeys::default()).unwrap()
        };
        let acting = r#"{"history": [{"role": "user", "content": "go"},
            {"role": "assistant", "content": "look", "action": "ls"}]}"#;
        for format in [Format::OpenAi, Format::Anthropic, Format::MiniSweAgent] {
            assert_eq!(reading(acting, format), Format::SweAgent, "{format:?}");
        }
        let declared = r#"{"trajectory_format": "mini-swe-agent-1", "messages": [
            {"role": "assistant", "content": "look", "action": "ls"}]}"#;
        assert_eq!(reading(declared, Format::OpenAi), Format::MiniSweAgent);
        for line in [
            // (an action on a user turn, a null one, an Anthropic block beside it, none)
            r#"[{"role": "user", "content": "go", "action": "ls"}]"#,
            r#"[{"role": "assistant", "content": "look", "action": null}]"#,
            r#"[{"role": "assistant", "action": "ls", "content": [
                {"type": "tool_use", "id": "t", "name": "x", "input": {}}]}]"#,
            r#"[{"role": "assistant", "content": "<function=ls>\n</function>"}]"#,
        ] {
            assert_eq!(reading(line, Format::OpenAi), Format::OpenAi, "{line}");
        }
        // Past the first threads such a run settles and misfits nothing; a plain chat's
        // reading in other formats is not asked of it.
        let tape = Tape::parse(acting.as_bytes()).unwrap();
        assert_eq!(
            undeclared_format_evidence(&tape, RunKeys::default()).unwrap(),
            None
        );
        assert_eq!(
            format_evidence(&tape, RunKeys::default()).unwrap(),
            Some((Some("swe-agent"), true))
        );
        let bash = r#"{"history": [{"role": "assistant", "action": "ls",
            "content": "THOUGHT\n```bash\nls\n```"}]}"#;
        assert_eq!(
            plain_reads_otherwise(bash.as_bytes(), RunKeys::default()).unwrap(),
            0
        );
    }

    #[test]
    fn a_format_is_named_by_its_name() {
        for format in Format::ALL {
            assert_eq!(Format::named(format.name()), Some(format));
        }
        assert_eq!(Format::named("native"), None);
        assert_eq!(Format::named("OpenAI"), None);
    }

    #[test]
    fn only_a_role_key_is_a_role() {
        for line in [
            r#"[{"type": "user", "text": "role"}]"#,
            r#"[{"type": "role", "text": "x"}]"#,
            r#"[{"type": "user", "text": "x", "meta": ["role" , "a"]}]"#,
            r#"[{"type": "user", "text": "x", "meta": {"k": "role"}}]"#,
        ] {
            assert_eq!(
                line_marks(line.as_bytes(), None) & MAY_BE_NATIVE,
                MAY_BE_NATIVE,
                "{line}"
            );
        }
        let keyed = r#"[{"role" : "user", "content": "role"}]"#;
        assert_eq!(line_marks(keyed.as_bytes(), None), 0);
    }

    #[test]
    fn control_character_escapes_mark_nothing() {
        // A terminal's colours in a plain chat's text, as JSON writes them.
        let ansi = r#"{"messages": [{"role": "user", "content": "\u001b[31mfailed\u001b[0m\u0007"}, {"role": "assistant", "content": "\u0000ok\u001f"}]}"#;
        assert!(!may_settle(ansi.as_bytes()));
        assert_eq!(line_marks(ansi.as_bytes(), None), 0);
        // Escapes of printable characters may spell a word: every mark.
        for escaped in [r#"\u0074"#, r#"\u0020"#, r#"\u007e"#, r#"\u003C"#] {
            let line = ansi.replace(r#"\u0007"#, escaped);
            assert_eq!(line_marks(line.as_bytes(), None), 7, "{line}");
        }
    }

    #[test]
    fn may_settle_passes_over_plain_chats() {
        for line in [
            r#"{"messages": [{"role": "user", "content": "a message\u2019s tools"}]}"#,
            r#"[{"role": "assistant", "content": [{"type": "text", "text": "a <b> \\ x"}]}]"#,
            r#"[{"role": "system", "content": "the function of a tool", "name": "s"}]"#,
        ] {
            assert!(!may_settle(line.as_bytes()), "{line}");
        }
        // An escaped quote opens no string; a closing one is looked at (never missed).
        assert!(!may_settle(
            br#"[{"role": "user", "content": "a \"tool\""}]"#
        ));
        assert!(may_settle(
            br#"[{"role": "user", "content": "a tool", "x": "tool"}]"#
        ));
    }

    #[test]
    fn line_marks_as_may_settle_and_more() {
        for (line, marks) in [
            (r#"[{"role": "user", "content": "hi"}]"#, 0),
            (r#"[{"role": "tool", "content": "1"}]"#, MAY_SETTLE),
            (
                r#"[{"role": "user", "content": [{"type": "text", "text": "a"}]}]"#,
                0,
            ),
            (
                r#"[{"role": "user", "content":[ {"type":"text","text":"a \"b\" \\"} ] }]"#,
                0,
            ),
            (
                r#"[{"role": "user", "content": [{"text": "a", "type": "text"}]}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"role": "user", "content": [{"type": "text", "text": 1}]}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"role": "user", "content": [{"type": "text", "text": "a"}], "type": "x"}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"role": "user", "content" :{"text": "a"}}]"#,
                MAY_READ_OTHERWISE,
            ),
            (r#"[{"role": "user", "content": "content", "x": 1}]"#, 0),
            (
                r#"[{"role": "assistant", "content": null, "refusal": "no"}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"role": "assistant", "content": "x", "reasoning_content": "y"}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"role": "assistant", "content": "```bash\nls\n```"}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"role": "user", "content": "a", "type": "text"}]"#,
                MAY_READ_OTHERWISE,
            ),
            (
                r#"[{"type": "user", "text": "hi"}]"#,
                MAY_READ_OTHERWISE | MAY_BE_NATIVE,
            ),
            (r#"{"messages": []}"#, MAY_BE_NATIVE),
            (
                r#"[{"r\u006fle": "user"}]"#,
                MAY_SETTLE | MAY_READ_OTHERWISE | MAY_BE_NATIVE,
            ),
        ] {
            assert_eq!(line_marks(line.as_bytes(), None), marks, "{line}");
            assert_eq!(
                line_marks(line.as_bytes(), None) & MAY_SETTLE != 0,
                may_settle(line.as_bytes()),
                "{line}"
            );
        }
    }

    #[test]
    fn line_marks_pass_over_tool_definitions() {
        let tools = r#"{"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f", "description": "a \"tool\" [x", "parameters": {"type": "object"}}}], "n": "tool"}"#;
        assert_eq!(line_marks(tools.as_bytes(), None), MAY_SETTLE);
        let before =
            r#"{"tools" : [{"type": "function"}], "messages": [{"role": "tool", "content": "1"}]}"#;
        assert_eq!(line_marks(before.as_bytes(), None) & MAY_SETTLE, MAY_SETTLE);
        let plain =
            r#"{"tools": {"type": "function"}, "messages": [{"role": "user", "content": "x"}]}"#;
        assert_eq!(line_marks(plain.as_bytes(), None), 0);
        // The tools as the messages, or a tools value that does not close: looked through.
        let listed = r#"{"tools": [{"role": "tool", "content": "1"}]}"#;
        assert_eq!(
            line_marks(listed.as_bytes(), Some("tools")) & MAY_SETTLE,
            MAY_SETTLE
        );
        let open =
            r#"{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function""#;
        assert_eq!(line_marks(open.as_bytes(), None) & MAY_SETTLE, MAY_SETTLE);
    }

    #[test]
    fn line_marks_look_for_no_tools_value_after_one_that_does_not_close() {
        let end = |line: &str| tools_value_end(line.as_bytes(), line.find(':').unwrap());
        assert_eq!(end(r#""tools": [1, {"a": "]"}] ,"#), ToolsValue::Ends(24));
        assert_eq!(end(r#""tools": [1, {"a": "]"}"#), ToolsValue::Unclosed);
        assert_eq!(end(r#""tools": ["a\"#), ToolsValue::Unclosed);
        assert_eq!(end(r#""tools": "[]""#), ToolsValue::Other);
        // A tools value that closes inside one that does not is looked through, as the rest
        // of the line is (its `type` may read otherwise), and so is a line of many openings,
        // each no longer read to the line's end.
        let nested = r#"{"tools": [{"tools": [{"type": "x"}]"#;
        assert_eq!(
            line_marks(nested.as_bytes(), None),
            MAY_SETTLE | MAY_READ_OTHERWISE | MAY_BE_NATIVE
        );
        let mut openings = r#"{"tools": ["#.repeat(20_000);
        openings.push_str(r#"{"role": "tool"}"#);
        assert_eq!(line_marks(openings.as_bytes(), None), MAY_SETTLE);
    }

    /// Plain chats of every shape the table of docs/formats.md names, and alike ones.
    const PLAIN_CHATS: [&str; 37] = [
        r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]"#,
        r#"[{"role": "system", "content": "s", "name": "n"}, {"role": "user", "content": null}]"#,
        r#"[{"role": "assistant", "content": ""}, {"role": "critic", "content": "x"}]"#,
        r#"[{"role": "user", "content": [{"type": "text", "text": "a"}]}]"#,
        r#"[{"role": "user", "content": ["a"]}]"#,
        r#"[{"role": "user", "content": []}]"#,
        r#"[{"role": "user", "content": [{"type": "image", "source": {"data": "x"}}]}]"#,
        r#"[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]"#,
        r#"[{"role": "user", "content": ["a", "b"]}]"#,
        r#"[{"role": "user", "content": [{"text": "a"}]}]"#,
        r#"[{"role": "user", "content": [{"type": "input_text", "text": "a"}]}]"#,
        r#"[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]"#,
        r#"[{"role": "user", "content": {"type": "text", "text": "a"}}]"#,
        r#"[{"role": "assistant", "content": "a", "reasoning_content": "r"}]"#,
        r#"[{"role": "assistant", "content": "a", "reasoning": "r"}]"#,
        r#"[{"role": "assistant", "content": "a", "reasoning": ""}]"#,
        r#"[{"role": "assistant", "content": null, "refusal": "no"}]"#,
        r#"[{"role": "assistant", "content": "a", "refusal": "no"}]"#,
        r#"[{"role": "assistant", "content": "a", "refusal": null}]"#,
        r#"[{"role": "user", "content": "a", "type": "text"}]"#,
        r#"[{"role": "", "type": ""}]"#,
        r#"[{"role": "", "content": "a", "type": ""}]"#,
        r#"[{"role": "user", "type": ""}]"#,
        r#"[{"role": "", "type": "user"}]"#,
        r#"[{"role": "user", "content": [], "type": "user"}]"#,
        r#"[{"role": "user", "content": [{"type": "image"}], "type": "user"}]"#,
        r#"[{"role": "system", "content": null, "type": "system"}]"#,
        r#"[{"role": "assistant", "type": "bot"}, {"role": "assistant", "type": "bot", "refusal": ""}]"#,
        r#"[{"role": "assistant", "type": "bot", "refusal": "no"}]"#,
        r#"[{"role": "assistant", "type": "bot", "reasoning": "r"}]"#,
        r#"[{"role": "assistant", "type": "assistant"}]"#,
        r#"[{"role": "user", "content": "a", "type": "message"}, {"role": "user", "type": "user"}]"#,
        r#"[{"role": "assistant", "type": "message", "reasoning": "r"}, {"role": "x", "type": "x"}]"#,
        r#"[{"role": "user", "type": "reasoning"}]"#,
        r#"[{"role": "user", "type": 0}]"#,
        r#"[{"role": "assistant", "content": "run\n```bash\nls\n```"}, {"role": "user", "content": "ok"}]"#,
        r#"[{"role": "assistant", "content": "```bash\nls\n```\n```bash\npwd\n```"}]"#,
    ];

    #[test]
    fn only_a_plain_chat_reads_otherwise() {
        for line in [
            r#"[{"type": "user", "text": "a"}, {"type": "bot", "text": "b"}]"#,
            r#"[{"role": "user", "content": ["a", "b"]}, {"type": "bot"}]"#,
            r#"{"messages": []}"#,
            r#"{"messages": {"role": "user", "content": ["a", "b"]}}"#,
        ] {
            assert_eq!(
                plain_reads_otherwise(line.as_bytes(), RunKeys::default()),
                Ok(0)
            );
        }
    }

    #[test]
    fn plain_reads_otherwise_where_the_readings_differ() {
        for line in PLAIN_CHATS {
            let found = plain_reads_otherwise(line.as_bytes(), RunKeys::default()).unwrap();
            assert_eq!(
                format_evidence(&Tape::parse(line.as_bytes()).unwrap(), RunKeys::default())
                    .unwrap(),
                Some((Some("openai"), false)),
                "{line}"
            );
            let openai = native(line, Format::OpenAi);
            for (format, bit) in [
                (Format::Anthropic, OTHERWISE_AS_ANTHROPIC),
                (Format::Responses, OTHERWISE_AS_RESPONSES),
                (Format::MiniSweAgent, OTHERWISE_AS_MINI_SWE_AGENT),
            ] {
                let differs = native(line, format) != openai;
                assert_eq!(found & bit != 0, differs, "{line} as {format:?}");
            }
            // Each is marked by the byte test whenever it reads otherwise.
            assert!(
                line_marks(line.as_bytes(), None) & MAY_BE_NATIVE == 0,
                "{line}"
            );
            assert!(
                found == 0 || line_marks(line.as_bytes(), None) & MAY_READ_OTHERWISE != 0,
                "{line}"
            );
        }
    }

    fn native(line: &str, format: Format) -> Option<(String, Vec<u32>)> {
        let (mut out, mut sources) = (Vec::new(), Vec::new());
        translate_line(
            line.as_bytes(),
            format,
            RunKeys::default(),
            &mut out,
            &mut sources,
        )
        .ok()?;
        assert!(
            Tape::parse(&out).is_ok(),
            "not a line the tape reads: {out:?}"
        );
        Some((String::from_utf8(out).unwrap(), sources))
    }

    #[test]
    fn bash_blocks_as_the_python_reading() {
        // `adapters._bash_blocks`' docstring, and its backing-off case.
        assert_eq!(bash_blocks("```bash\nls\n```\n```bash \n\n```"), ["ls", ""]);
        assert_eq!(bash_blocks("```bash\n\n\n```"), [""]);
        assert_eq!(
            bash_blocks("```bash\u{a0}\u{2003}\ncd src\n```"),
            ["cd src"]
        );
        assert!(bash_blocks("```bashls\n```").is_empty());
        assert!(bash_blocks("```bash\nunterminated").is_empty());
    }

    #[test]
    fn function_blocks_as_the_python_reading() {
        // `adapters._function_blocks`' docstring examples, and what is left as text.
        let text = "Look.\n<function=bash>\n<parameter=command>ls -a</parameter>\n</function>";
        assert_eq!(
            function_blocks(text),
            [("bash", vec![("command", "ls -a")])]
        );
        assert!(function_blocks("<function=bash>\n<parameter=command>ls").is_empty());
        // Text between parameters, a key given twice, a name that is only whitespace.
        let garbled = "<function=a>x<parameter=k>v</parameter></function>\
                       <function=b><parameter=k>1</parameter><parameter=k>2</parameter></function>\
                       <function= ></function>";
        assert!(function_blocks(garbled).is_empty());
        // A call cut by the next one is no call; the next one is.
        let cut = "<function=a><parameter=k>v<function=b></function>";
        assert_eq!(function_blocks(cut), [("b", vec![])]);
    }

    #[test]
    fn mini_swe_agent_commands_and_outputs() {
        let line = r#"{"instance_id":"a-1","messages":[{"role":"system","content":"Be brief."},
            {"role":"assistant","content":"Look.\n```bash\nls\n```"},
            {"role":"user","content":"a.py"},
            {"role":"assistant","content":"Done."},{"role":"user","content":"ok"}]}"#;
        let (native, sources) = native(line, Format::MiniSweAgent).unwrap();
        assert_eq!(
            native,
            concat!(
                r#"{"id":"a-1","messages":[{"type":"system","text":"Be brief."},"#,
                r#"{"type":"bot","text":"Look.\n```bash\nls\n```"},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"request","#,
                r#""function":{"name":"bash","arguments":{"command":"ls"}}}}},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"response","#,
                r#""function":{"name":"bash","arguments":{"command":"ls"},"result":"a.py"}}}},"#,
                r#"{"type":"bot","text":"Done."},{"type":"user","text":"ok"}]}"#
            )
        );
        assert_eq!(sources, [0, 1, 1, 2, 3, 4]);
    }

    #[test]
    fn openai_calls_and_results() {
        let line = r#"{"id":"r1","messages":[{"role":"system","content":"Be brief."},
            {"role":"assistant","content":"Look.","reasoning_content":"hm","tool_calls":[
              {"id":"c1","function":{"name":"ls","arguments":"{\"path\": \".\"}"}},
              {"id":"c2","function":{"name":"cat","arguments":"not json"}}],
             "usage":{"completion_tokens":7}},
            {"role":"tool","tool_call_id":"c2","content":"[1, 2]"},
            {"role":"tool","tool_call_id":"zz","name":"own","content":"plain"}]}"#;
        let (text, sources) = native(line, Format::OpenAi).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"id":"r1","messages":[{"type":"system","text":"Be brief."},"#,
                r#"{"type":"reasoning","text":"hm","usage":{"tokens":7}},"#,
                r#"{"type":"bot","text":"Look."},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"request","#,
                r#""function":{"name":"ls","arguments":{"path": "."}}}}},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"request","#,
                r#""function":{"name":"cat","arguments":"not json"}}}},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"response","#,
                r#""function":{"name":"cat","arguments":"not json","result":[1, 2]}}}},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"response","#,
                r#""function":{"name":"own","result":"plain"}}}}]}"#
            )
        );
        assert_eq!(sources, [0, 1, 1, 1, 1, 2, 3]);
    }

    #[test]
    fn openai_custom_tool_calls_keep_their_input_as_is() {
        let line = r#"[{"role":"assistant","tool_calls":[
              {"id":"c1","type":"custom","custom":{"name":"patch","input":"{\"a\": 1}"}},
              {"id":"c2","type":"custom","function":null,"custom":{"name":"sh"}}]},
            {"role":"tool","tool_call_id":"c1","content":"ok"}]"#;
        let (text, sources) = native(line, Format::OpenAi).unwrap();
        assert!(text.contains(r#""function":{"name":"patch","arguments":"{\"a\": 1}"}}}}"#));
        assert!(text.contains(r#""function":{"name":"sh"}}}}"#));
        assert!(text.contains(r#""arguments":"{\"a\": 1}","result":"ok"}"#));
        assert_eq!(sources, [0, 0, 1]);
        // A custom call with no name is Python's to refuse, naming it.
        let nameless = r#"[{"role":"assistant","tool_calls":[{"custom":{"input":"x"}}]}]"#;
        assert!(native(nameless, Format::OpenAi).is_none());
    }

    #[test]
    fn openai_lists_legacy_calls_and_empty_messages() {
        let line = r#"[{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"1"}},
            {"role":"function","name":"f","content":[{"type":"text","text":"a"},"b",{"type":null,"text":"c"}]},
            {"role":"assistant","content":null,"tool_calls":[{"id":"x","function":{"name":"g"}}]},
            {"role":"tool","tool_call_ids":["x","x"],"content":"{}"},
            {"role":"critic","content":"meh"},{"role":"user"}]"#;
        let (text, sources) = native(line, Format::OpenAi).unwrap();
        assert!(text.starts_with(r#"{"id":null,"#));
        assert!(text.contains(r#""function":{"name":"f","arguments":1,"result":"a\nb"}"#));
        assert!(text.contains(r#"{"name":"g","result":{}}}}},{"type":"activity""#));
        assert!(text.ends_with(r#"{"type":"critic","text":"meh"},{"type":"user","text":""}]}"#));
        assert_eq!(sources, [0, 1, 2, 3, 3, 4, 5]);
    }

    #[test]
    fn parts_that_are_no_text_ride_in_meta_or_are_the_result() {
        // `adapters._media`: an image, audio, file or document part is kept as given, in
        // the first native message's `meta.media` (after `meta.activity`, before `usage`),
        // or as a tool result's whole content.
        for (line, format, expected, sources) in [
            (
                r#"[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}],"usage":{"tokens":2}}]"#,
                Format::OpenAi,
                r#"[{"type":"user","text":"a","meta":{"media":[{"type":"image_url","image_url":{"url":"x"}}]},"usage":{"tokens":2}}]"#,
                &[0][..],
            ),
            (
                r#"[{"role":"assistant","content":[{"type":"file"}],"tool_calls":[{"id":"c","function":{"name":"f"}}]},
                   {"role":"tool","tool_call_id":"c","content":{"type":"input_audio", "x": [1, 2]}}]"#,
                Format::OpenAi,
                concat!(
                    r#"[{"type":"activity","text":"","meta":{"activity":{"type":"request","#,
                    r#""function":{"name":"f"}},"media":[{"type":"file"}]}},"#,
                    r#"{"type":"activity","text":"","meta":{"activity":{"type":"response","#,
                    r#""function":{"name":"f","result":[{"type":"input_audio", "x": [1, 2]}]}}}}]"#
                ),
                &[0, 1],
            ),
            (
                r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"u","content":["a",{"type":"image"}],"is_error":true},
                   {"type":"image","source":{}},{"type":"document"}]}]"#,
                Format::Anthropic,
                concat!(
                    r#"[{"type":"activity","text":"","meta":{"activity":{"type":"response","#,
                    r#""function":{"name":"","result":["a",{"type":"image"}]},"is_error":true},"#,
                    r#""media":[{"type":"image","source":{}},{"type":"document"}]}}]"#
                ),
                &[0],
            ),
            (
                r#"[{"role":"user","content":[{"type":"document","source":{}}]}]"#,
                Format::Anthropic,
                r#"[{"type":"user","text":"","meta":{"media":[{"type":"document","source":{}}]}}]"#,
                &[0],
            ),
            (
                r#"[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]},
                   {"role":"user","content":[{"type":"input_image"}]}]"#,
                Format::Responses,
                concat!(
                    r#"[{"type":"activity","text":"","meta":{"activity":{"type":"response","#,
                    r#""function":{"name":"","result":[{"type":"input_image"}]}}}},"#,
                    r#"{"type":"user","text":"","meta":{"media":[{"type":"input_image"}]}}]"#
                ),
                &[0, 1],
            ),
        ] {
            let (text, found) = native(line, format).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(text, format!(r#"{{"id":null,"messages":{expected}}}"#));
            assert_eq!(found, sources, "{line}");
        }
    }

    #[test]
    fn another_formats_marks_that_hold_nothing_are_read() {
        // Mistral's reasoning models write a thinking block (its text a list of parts) in
        // OpenAI-shaped content; a logger writes null and empty OpenAI keys on Anthropic
        // messages. Neither is another format's run.
        for (line, format) in [
            (
                r#"[{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"t"}]},{"type":"text","text":"a"}]}]"#,
                Format::OpenAi,
            ),
            (
                r#"[{"role":"user","content":"go","tool_calls":null,"tool_call_ids":[],"function_call":null}]"#,
                Format::Anthropic,
            ),
        ] {
            assert!(native(line, format).is_some(), "{line}");
        }
    }

    #[test]
    fn a_task_and_trial_are_joined_as_the_file_writes_them() {
        for (run, id) in [
            (r#"{"task_id":3,"trial":1}"#, r#""3/1""#),
            (
                r#"{"task_id":9007199254740993,"trial":0}"#,
                r#""9007199254740993/0""#,
            ),
            (r#"{"task_id":1e16,"trial":-0}"#, r#""10000000000000000/0""#),
            (r#"{"task_id":1E-7,"trial":1.0}"#, r#""1e-7/1""#),
            (r#"{"task_id":1e21,"trial":1e-6}"#, r#""1e+21/0.000001""#),
            (
                r#"{"task_id":-1.5e300,"trial":1e400}"#,
                r#""-1.5e+300/null""#,
            ),
            // A tie between two shortest candidates goes to the even one, as in JavaScript.
            (
                r#"{"task_id":900719925474099.25,"trial":0}"#,
                r#""900719925474099.2/0""#,
            ),
            (r#"{"task_id":1.50,"trial":1.0}"#, r#""1.5/1""#),
            (r#"{"task_id":true,"trial":null}"#, "true"),
            (
                r#"{"task_id":null,"trial":[1,{"a":1e21}]}"#,
                r#""null/[1,{\"a\":1e+21}]""#,
            ),
        ] {
            let line = format!(r#"{},"messages":[]}}"#, &run[..run.len() - 1]);
            let (text, _) = native(&line, Format::OpenAi).unwrap();
            assert_eq!(text, format!(r#"{{"id":{id},"messages":[]}}"#), "{run}");
        }
    }

    #[test]
    fn anthropic_blocks() {
        let line = r#"{"task_id":3,"trial":0,"traj":[
            {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},
              {"type":"text","text":"a"},{"type":"text","text":"b"},
              {"type":"tool_use","id":"u1","name":"ls","input":{"p":1}}],
             "usage":{"input_tokens":100,"output_tokens":9}},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"u1",
              "content":[{"type":"text","text":"x"},{"type":"text","text":"y"}],"is_error":true},
              {"type":"citations_delta"}]},
            {"role":"user","content":[{"type":"container_upload"}]}]}"#;
        let (text, sources) = native(line, Format::Anthropic).unwrap();
        assert!(text.starts_with(r#"{"id":"3/0","messages":[{"type":"reasoning","text":"t","usage":{"tokens":9}},{"type":"bot","text":"a"},{"type":"bot","text":"b"},"#));
        assert!(text.contains(
            r#""function":{"name":"ls","arguments":{"p":1},"result":"x\ny"},"is_error":true}"#
        ));
        assert!(text.ends_with(r#"{"type":"user","text":""}]}"#));
        assert_eq!(sources, [0, 0, 0, 0, 1, 2]);
    }

    #[test]
    fn responses_items_become_native_messages() {
        let line = r#"{"id":"r","messages":[{"role":"user","content":"go"},
              {"type":"reasoning","summary":[{"text":"a"},{"text":"b"}]},
              {"type":"function_call","call_id":"c1","name":"ls","arguments":"{\"p\":1}"},
              {"type":"function_call_output","call_id":"c1","output":"x y"},
              {"type":"no_item_of_the_api"}]}"#;
        let (text, sources) = native(line, Format::Responses).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"id":"r","messages":[{"type":"user","text":"go"},"#,
                r#"{"type":"reasoning","text":"a\nb"},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"request","#,
                r#""function":{"name":"ls","arguments":{"p":1}}}}},"#,
                r#"{"type":"activity","text":"","meta":{"activity":{"type":"response","#,
                r#""function":{"name":"ls","arguments":{"p":1},"result":"x y"}}}},"#,
                r#"{"type":"no_item_of_the_api","text":""}]}"#
            )
        );
        assert_eq!(sources, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_built_in_tool_s_items_are_its_calls_and_results() {
        // The fields but the item's type, ids, status and safety checks; an output finds its
        // call by the tool and the call id (a local shell's output by its `id`), and one
        // of another tool, or of no call, has no arguments.
        let line = r#"[{"type":"computer_call","id":"cu_1","call_id":"c1","status":"completed",
              "action":{"type":"click","x":1},"pending_safety_checks":[{"id":"s"}]},
              {"type":"computer_call_output","call_id":"c1","acknowledged_safety_checks":[],
               "output":{"type":"computer_screenshot","image_url":"u"}},
              {"type":"local_shell_call","id":"ls_1","call_id":"c2","action":{"command":["ls"]}},
              {"type":"local_shell_call_output","id":"c2","output":"a b"},
              {"type":"shell_call_output","call_id":"c1","output":[]},
              {"type":"web_search_call","id":"ws","status":"completed"}]"#;
        let (text, sources) = native(line, Format::Responses).unwrap();
        let request = |name: &str, arguments: &str| {
            format!(
                r#"{{"type":"activity","text":"","meta":{{"activity":{{"type":"request","function":{{"name":"{name}","arguments":{arguments}}}}}}}}}"#
            )
        };
        let response = |name: &str, arguments: Option<&str>, result: &str| {
            let arguments = arguments.map_or(String::new(), |a| format!(r#","arguments":{a}"#));
            format!(
                r#"{{"type":"activity","text":"","meta":{{"activity":{{"type":"response","function":{{"name":"{name}"{arguments},"result":{result}}}}}}}}}"#
            )
        };
        let click = r#"{"action":{"type":"click","x":1}}"#;
        let ls = r#"{"action":{"command":["ls"]}}"#;
        let expected = [
            request("computer", click),
            response(
                "computer",
                Some(click),
                r#"{"output":{"type":"computer_screenshot","image_url":"u"}}"#,
            ),
            request("local_shell", ls),
            response("local_shell", Some(ls), r#"{"output":"a b"}"#),
            response("shell", None, r#"{"output":[]}"#),
            request("web_search", "{}"),
        ]
        .join(",");
        assert_eq!(text, format!(r#"{{"id":null,"messages":[{expected}]}}"#));
        assert_eq!(sources, [0, 1, 2, 3, 4, 5]);
        // A number as a call's id is keyed by its JSON text in Python: declined.
        assert!(native(
            r#"[{"type":"computer_call","call_id":1}]"#,
            Format::Responses
        )
        .is_none());
    }

    #[test]
    fn anthropic_server_and_mcp_tools_are_calls_and_results() {
        let line = r#"[{"role":"assistant","content":[
              {"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"q"}},
              {"type":"web_search_tool_result","tool_use_id":"s1",
               "content":[{"type":"web_search_result","url":"u"}]},
              {"type":"mcp_tool_use","id":"m1","name":"echo","server_name":"x","input":{}},
              {"type":"mcp_tool_result","tool_use_id":"m1","is_error":true,"content":"e"}]}]"#;
        let (text, sources) = native(line, Format::Anthropic).unwrap();
        let activity = |kind: &str, function: &str, error: &str| {
            format!(
                r#"{{"type":"activity","text":"","meta":{{"activity":{{"type":"{kind}","function":{{{function}}}{error}}}}}}}"#
            )
        };
        let expected = [
            activity(
                "request",
                r#""name":"web_search","arguments":{"query":"q"}"#,
                "",
            ),
            activity(
                "response",
                concat!(
                    r#""name":"web_search","arguments":{"query":"q"},"#,
                    r#""result":[{"type":"web_search_result","url":"u"}]"#
                ),
                "",
            ),
            activity("request", r#""name":"echo","arguments":{}"#, ""),
            activity(
                "response",
                r#""name":"echo","arguments":{},"result":"e""#,
                r#","is_error":true"#,
            ),
        ]
        .join(",");
        assert_eq!(text, format!(r#"{{"id":null,"messages":[{expected}]}}"#));
        assert_eq!(sources, [0, 0, 0, 0]);
    }

    #[test]
    fn unusual_runs_are_declined() {
        for (line, format) in [
            (r#"[{"role":1}]"#, Format::OpenAi),
            (r#"[7]"#, Format::OpenAi),
            (r#"{"messages":{}}"#, Format::OpenAi),
            (r#"{"steps":[]}"#, Format::OpenAi),
            (r#"[{"role":"user","content":3}]"#, Format::OpenAi),
            (r#"[{"role":"assistant","tool_calls":{}}]"#, Format::OpenAi),
            (
                r#"[{"role":"assistant","tool_calls":[{"id":1,"function":{"name":"a"}}]}]"#,
                Format::OpenAi,
            ),
            (r#"[{"role":"tool","content":"NaN"}]"#, Format::OpenAi),
            (
                &format!(r#"[{{"role":"tool","content":"{}"}}]"#, "[".repeat(1001)),
                Format::OpenAi,
            ),
            (
                r#"[{"role":"tool","content":"[\"\\ud800\"]"}]"#,
                Format::OpenAi,
            ),
            (r#"[{"role":"user","content":{}}]"#, Format::Anthropic),
            (r#"[{"role":"user","content":[3]}]"#, Format::Anthropic),
            // A server or MCP tool's call without a name: Python names it.
            (
                r#"[{"role":"assistant","content":[{"type":"server_tool_use","id":"s"}]}]"#,
                Format::Anthropic,
            ),
            (
                r#"[{"role":"assistant","content":[{"type":"mcp_tool_use","id":"s"}]}]"#,
                Format::Anthropic,
            ),
            // Another item of the API: Python keeps its fields in its meta.
            (
                r#"[{"type":"mcp_list_tools","tools":[]}]"#,
                Format::Responses,
            ),
            // Another chat format's messages: Python names what they hold.
            (
                r#"[{"role":"assistant","content":[{"type":"tool_use","id":"u","name":"a"}]}]"#,
                Format::OpenAi,
            ),
            (
                r#"[{"role":"user","content":[{"type":"tool_result","content":"t"}]}]"#,
                Format::MiniSweAgent,
            ),
            (
                r#"[{"role":"tool","tool_call_id":"c","content":"x"}]"#,
                Format::Anthropic,
            ),
            (r#"[{"role":"developer","content":"x"}]"#, Format::Anthropic),
            (
                r#"[{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]}]"#,
                Format::Responses,
            ),
            (
                r#"[{"role":"user","content":[{"type":"tool_use","name":null}]}]"#,
                Format::Anthropic,
            ),
        ] {
            assert!(native(line, format).is_none(), "{line}");
        }
        // A part typed by a list names no text part (`adapters._named`): skipped, not declined.
        let line =
            r#"[{"role":"user","content":[{"type":[],"text":"a"},{"type":"text","text":"b"}]}]"#;
        let (text, _) = native(line, Format::OpenAi).unwrap();
        assert!(text.contains(r#"{"type":"user","text":"b"}"#), "{text}");
        // Responses items only Python reads exactly (or refuses).
        for line in [
            r#"[{"type":"function_call","name":"a","call_id":1}]"#,
            r#"[{"type":3}]"#,
            r#"[{"type":null}]"#,
            r#"[{"type":"function_call_output","output":3}]"#,
        ] {
            assert!(native(line, Format::Responses).is_none(), "{line}");
        }
        // Not JSON to json.loads: kept as text, not declined.
        for content in [r#""[1,]""#, r#""\ufeff[]""#, r#""""#, r#"" 1 2""#] {
            let line = format!(r#"[{{"role":"tool","content":{content}}}]"#);
            let (text, _) = native(&line, Format::OpenAi).unwrap();
            assert!(text.contains(&format!(r#""result":{content}"#)), "{text}");
        }
    }

    #[test]
    fn json_text_as_json_loads_reads_it() {
        for text in [" \n[1, {\"a\": 2}]\t", "-0", "1e400", "\"x\"", "null"] {
            assert_eq!(is_json_text(text), Ok(true), "{text:?}");
        }
        for text in [
            "",
            " ",
            "abc",
            "tru",
            "[1,]",
            "\u{feff}[]",
            "1 2",
            "{\"a\"}",
            "é",
        ] {
            assert_eq!(is_json_text(text), Ok(false), "{text:?}");
        }
        let deep = "[".repeat(1001) + &"]".repeat(1001);
        for text in [
            "NaN",
            "-Infinity",
            "[\"\\ud800\"]",
            "{\"a\":1,\"a\":2}",
            &deep,
        ] {
            assert_eq!(is_json_text(text), Err(Declined), "{text:?}");
        }
    }

    #[test]
    fn joined_texts_are_escaped() {
        let mut out = Vec::new();
        push_json_string(&mut out, "a\"\\\n\u{1}é");
        assert_eq!(out, "\"a\\\"\\\\\\n\\u0001é\"".as_bytes());
        for text in ["", "plain", "a\"\\\n\u{1}é", "\u{1f}\t\r\u{7f}"] {
            let mut written = Vec::new();
            push_json_string(&mut written, text);
            assert_eq!(json_string_len(text), written.len(), "{text:?}");
        }
    }

    #[test]
    fn a_message_without_room_declines_the_line_and_writes_nothing() {
        let (mut out, mut sources) = (Vec::new(), Vec::new());
        let mut writer = Writer {
            out: &mut out,
            sources: &mut sources,
            source: 0,
            written: 0,
            total: 0,
            tokens: None,
            media: Vec::new(),
            short_of_memory: false,
        };
        assert!(writer.room(16));
        assert!(!writer.room(usize::MAX / 2)); // an allocation that cannot be had
        writer.text(&Str::Fixed("bot"), &Str::Fixed("hello"));
        assert!(writer.short_of_memory);
        assert!(out.is_empty() && sources.is_empty());
    }
}
