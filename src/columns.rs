//! A batch of threads read once into flat columns for the NumPy heuristics: per thread, the
//! repeated-suffix period (the Z pass in `suffix.rs`), the trailing run of tool calls with
//! their payloads as exact ids, the run of identical settled tool results that ends it, and
//! the texts the text-run check reads. Written once over `Node`, for Python objects and for
//! lines parsed from a file alike.
//!
//! Reads are lazy: a message's meta and a tool call's payloads are encoded only where a
//! cheaper column cannot already decide (a suffix candidate, a long enough trailing run of
//! tool calls, results whose screens agree). Ids are exact, never hashes: payloads are
//! interned per thread by their canonical bytes, so two ids are equal exactly when the values
//! are equal in JavaScript, and no collision of any hash can change an answer.

use pyo3::prelude::*;

use crate::arena::ArenaInterner;
use crate::node::{plainly_equal_if_present, Key, Node, Text};
use crate::suffix::{masked, KeyReader, SuffixOptions};

/// Rows of the trailing activity run: a call needs at least this many to count as a loop.
pub const ACTIVITY_TAIL_MIN_LENGTH: usize = 8;
/// Messages at the end of a thread the text-run check looks at.
pub const THREAD_TEXT_RUN_MESSAGES: usize = 5;

/// `kind` codes of a tail row.
pub const REQUEST: i8 = 1;
pub const RESPONSE: i8 = 2;
pub const OTHER_KIND: i8 = 3;

/// An id for a payload that is absent (distinct from every value, `null` included).
pub const ABSENT: i64 = -1;

/// Exact ids of canonical encodings within one thread: equal ids, equal values.
#[derive(Default)]
pub struct Interner {
    ids: ArenaInterner,
    scratch: Vec<u8>,
}

impl Interner {
    pub fn clear(&mut self) {
        self.ids.clear();
    }

    fn heap_bytes(&self) -> usize {
        self.ids.heap_bytes() + self.scratch.capacity()
    }

    /// The id of the bytes in `scratch` (a tag byte first keeps namespaces apart).
    fn intern_scratch(&mut self) -> i64 {
        self.ids.intern(&self.scratch) as i64
    }

    /// The id of a value's canonical encoding under `tag`.
    pub fn value<N: Node>(&mut self, tag: u8, value: &N) -> PyResult<i64> {
        self.scratch.clear();
        self.scratch.push(tag);
        value.push_canonical(&mut self.scratch)?;
        Ok(self.intern_scratch())
    }

    /// The id of an optional payload: ABSENT when the key is absent.
    fn payload<N: Node>(&mut self, tag: u8, value: Option<&N>) -> PyResult<i64> {
        match value {
            Some(value) => self.value(tag, value),
            None => Ok(ABSENT),
        }
    }
}

/// A value met before: the value, where its canonical bytes are in `LazyInterner::encoded`
/// once needed, and the next value met with the same screen (a chain through the arena;
/// values are their own ids).
struct Interned<N> {
    value: N,
    bytes: Option<std::ops::Range<usize>>,
    same_screen: Option<usize>,
    /// Whether the value has been compared by walking it once already (then by its bytes:
    /// no value is walked again and again along a chain).
    walked: bool,
}

/// Exact ids for the values of one thread's trailing tool calls, encoding only what must be:
/// a value whose screen no earlier value shares gets a new id at once (values with
/// different screens differ); only values that share a screen are compared, by walking the
/// two where both are plain and neither was walked before, else by their encodings.
/// Equal values share a screen and get the first one's id, so a chain grows only with
/// distinct values whose screens collide.
pub struct LazyInterner<N> {
    first_with_screen: ahash::AHashMap<u64, usize>,
    arena: Vec<Interned<N>>,
    /// Every encoded value's canonical bytes, one after another (one buffer, not one heap
    /// allocation per value: a long tail encodes a million of them).
    encoded: Vec<u8>,
    /// The canonical bytes of the value being looked up.
    candidate: Vec<u8>,
    scratch: Vec<u8>,
}

impl<N> Default for LazyInterner<N> {
    fn default() -> Self {
        LazyInterner {
            first_with_screen: ahash::AHashMap::new(),
            arena: Vec::new(),
            encoded: Vec::new(),
            candidate: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

impl<N: Node + Clone> LazyInterner<N> {
    /// The id of `value` under `tag` (ids of different tags never meet in a comparison).
    pub fn id(&mut self, tag: u8, value: &N) -> PyResult<i64> {
        let screen = masked(value.screen(&mut self.scratch)?) ^ u64::from(tag).rotate_left(56);
        let fresh = self.arena.len();
        let Some(&first) = self.first_with_screen.get(&screen) else {
            self.first_with_screen.insert(screen, fresh);
            self.arena.push(Interned {
                value: value.clone(),
                bytes: None,
                same_screen: None,
                walked: false,
            });
            return Ok(fresh as i64);
        };
        // Each value met with the same screen is compared with it by walking the two where
        // both are plain and neither has been walked before (each value is walked once at
        // most), else by their canonical bytes (the candidate's encoded once, when needed).
        let mut candidate_encoded = false;
        let mut candidate_walked = false;
        let mut at = first;
        loop {
            let walk = !candidate_walked && !self.arena[at].walked;
            let told = if walk {
                candidate_walked = true;
                self.arena[at].walked = true;
                value.plainly_equal(&self.arena[at].value)
            } else {
                None
            };
            let same = match told {
                Some(same) => same,
                None => {
                    if !candidate_encoded {
                        self.candidate.clear();
                        value.push_canonical(&mut self.candidate)?;
                        candidate_encoded = true;
                    }
                    let entry = &mut self.arena[at];
                    let bytes = match &entry.bytes {
                        Some(bytes) => bytes.clone(),
                        None => {
                            let begin = self.encoded.len();
                            entry.value.push_canonical(&mut self.encoded)?;
                            entry.bytes = Some(begin..self.encoded.len());
                            begin..self.encoded.len()
                        }
                    };
                    self.encoded[bytes] == self.candidate[..]
                }
            };
            if same {
                return Ok(at as i64);
            }
            match self.arena[at].same_screen {
                Some(next) => at = next,
                None => break,
            }
        }
        let bytes = candidate_encoded.then(|| {
            let begin = self.encoded.len();
            self.encoded.extend_from_slice(&self.candidate);
            begin..self.encoded.len()
        });
        self.arena[at].same_screen = Some(fresh);
        self.arena.push(Interned {
            value: value.clone(),
            bytes,
            same_screen: None,
            walked: candidate_walked,
        });
        Ok(fresh as i64)
    }

    /// The id of an optional payload: ABSENT when the key is absent.
    pub fn payload(&mut self, tag: u8, value: Option<&N>) -> PyResult<i64> {
        match value {
            Some(value) => self.id(tag, value),
            None => Ok(ABSENT),
        }
    }
}

/// One row of a trailing activity run, its parts as exact ids.
#[derive(Clone, Copy, Debug)]
pub struct TailRow {
    pub kind: i8,
    pub kind_id: i64,
    pub name: i64,
    pub arguments: i64,
    pub result: i64,
}

fn distinct<T: std::hash::Hash + Eq>(values: impl Iterator<Item = T>) -> usize {
    values.collect::<ahash::AHashSet<T>>().len()
}

/// The repeated_activity_tail decision on a trailing run of at least 8 activities:
/// the one-thread twin of the NumPy check in `vthread/_heuristics.py` (both are held to the
/// reference by the property tests).
pub fn tail_collapsed(rows: &[TailRow]) -> bool {
    const MIN_WITH_PAYLOAD: usize = 4;
    const PROGRESS_MIN_ANSWERS: usize = 3;
    let requests: Vec<&TailRow> = rows
        .iter()
        .filter(|row| row.kind == REQUEST && row.arguments != ABSENT)
        .collect();
    let responses: Vec<&TailRow> = rows
        .iter()
        .filter(|row| row.kind == RESPONSE && row.result != ABSENT)
        .collect();
    if requests.len() < MIN_WITH_PAYLOAD || responses.len() < MIN_WITH_PAYLOAD {
        return false;
    }
    let signatures = distinct(
        rows.iter()
            .map(|row| (row.kind_id, row.name, row.arguments, row.result)),
    );
    if signatures * 2 > rows.len()
        || distinct(rows.iter().map(|row| row.name)) == rows.len()
        || distinct(requests.iter().map(|row| row.arguments)) == requests.len()
        || distinct(responses.iter().map(|row| row.result)) == responses.len()
    {
        return false;
    }
    let mut answers: ahash::AHashMap<(i64, i64), Vec<i64>> = ahash::AHashMap::new();
    for pair in rows.windows(2) {
        let (asked, answered) = (pair[0], pair[1]);
        if asked.kind == REQUEST && answered.kind == RESPONSE && asked.name == answered.name {
            answers
                .entry((asked.name, asked.arguments))
                .or_default()
                .push(answered.result);
        }
    }
    let progressing = answers.values().any(|results| {
        results.len() >= PROGRESS_MIN_ANSWERS && distinct(results.iter()) == results.len()
    });
    !progressing
}

/// A well-formed activity's parts, payloads not yet read.
pub struct Activity<N> {
    pub kind: N,
    pub name: N,
    pub arguments: Option<N>,
    pub result: Option<N>,
}

impl<N: Node> Activity<N> {
    fn kind_code(&self) -> i8 {
        if self.kind.is_text("request") {
            REQUEST
        } else if self.kind.is_text("response") {
            RESPONSE
        } else {
            OTHER_KIND
        }
    }

    /// A response with a result whose name does not start with "_": a settled tool result.
    fn is_settled(&self) -> bool {
        self.kind.is_text("response")
            && !self.name.starts_with_underscore()
            && self.result.is_some()
    }
}

/// The message's activity when it is well formed: `type` "activity", a mapping `meta` whose
/// `activity` is a mapping with a string `type` and a mapping `function` with a string `name`.
pub fn parse_activity<N: Node>(message: &N) -> PyResult<Option<Activity<N>>> {
    // (field by field, the meta only of an activity: the result run asks this of every
    // message back to its first settled results, most of them no activity, where reading
    // the three fields at once cost more than the one lookup of the type)
    if !message
        .field(Key::Type)?
        .is_some_and(|kind| kind.is_text("activity"))
    {
        return Ok(None);
    }
    let Some(meta) = message.field(Key::Meta)? else {
        return Ok(None);
    };
    let Some(activity) = meta.field(Key::Activity)? else {
        return Ok(None);
    };
    if !activity.is_mapping()? {
        return Ok(None);
    }
    let Some(kind) = activity.field(Key::Type)?.filter(Node::is_string) else {
        return Ok(None);
    };
    let Some(function) = activity.field(Key::Function)? else {
        return Ok(None);
    };
    if !function.is_mapping()? {
        return Ok(None);
    }
    let Some(name) = function.field(Key::Name)?.filter(Node::is_string) else {
        return Ok(None);
    };
    Ok(Some(Activity {
        kind,
        name,
        arguments: function.field(Key::Arguments)?,
        result: function.field(Key::Result)?,
    }))
}

/// Everything the NumPy heuristics read, for a whole batch.
#[derive(Default)]
pub struct Columns {
    pub lengths: Vec<i64>,
    pub suffix_period: Vec<i64>,
    pub suffix_copies: Vec<i64>,
    pub tail_length: Vec<i64>,
    pub tail_offsets: Vec<i64>,
    pub tail_kind: Vec<i8>,
    pub tail_kind_id: Vec<i64>,
    pub tail_name: Vec<i64>,
    pub tail_arguments: Vec<i64>,
    pub tail_result: Vec<i64>,
    pub result_run: Vec<i64>,
    pub result_start: Vec<i64>,
    pub result_period: Vec<i64>,
    pub result_copies: Vec<i64>,
    pub text_thread: Vec<i64>,
    pub text_index: Vec<i64>,
    pub texts: Vec<Text>,
}

/// The options the column pass needs.
pub struct ScanOptions {
    pub suffix: SuffixOptions,
    pub needed_results: usize,
}

/// Reusable state of the column pass.
#[derive(Default)]
pub struct Reader {
    interner: Interner,
    keys: KeyReader,
}

impl Reader {
    /// The heap memory the reader holds (its buffers, kept from one thread to the next).
    pub fn heap_bytes(&self) -> usize {
        self.interner.heap_bytes() + self.keys.heap_bytes()
    }
}

impl Columns {
    pub fn new() -> Self {
        Columns {
            tail_offsets: vec![0],
            ..Columns::default()
        }
    }

    /// The columns of one `i64` a thread or a tail row, each once; `tail_kind` (`i8`) and
    /// `texts` are not among them. (Destructured whole: a column added to `Columns` must be
    /// placed here, or in `clear` and `heap_bytes` by hand, before it compiles.)
    fn figure_columns(&mut self) -> [&mut Vec<i64>; 15] {
        let Columns {
            lengths,
            suffix_period,
            suffix_copies,
            tail_length,
            tail_offsets,
            tail_kind: _,
            tail_kind_id,
            tail_name,
            tail_arguments,
            tail_result,
            result_run,
            result_start,
            result_period,
            result_copies,
            text_thread,
            text_index,
            texts: _,
        } = self;
        [
            lengths,
            suffix_period,
            suffix_copies,
            tail_length,
            tail_offsets,
            tail_kind_id,
            tail_name,
            tail_arguments,
            tail_result,
            result_run,
            result_start,
            result_period,
            result_copies,
            text_thread,
            text_index,
        ]
    }

    /// Empty again, as `new` makes them, the memory kept (the next call's).
    pub fn clear(&mut self) {
        for column in self.figure_columns() {
            column.clear();
        }
        self.tail_kind.clear();
        self.texts.clear();
        self.tail_offsets.push(0);
    }

    /// The heap memory the columns hold.
    pub fn heap_bytes(&mut self) -> usize {
        let figures: usize = self
            .figure_columns()
            .iter()
            .map(|column| column.capacity() * size_of::<i64>())
            .sum();
        figures + self.tail_kind.capacity() + self.texts.capacity() * size_of::<Text>()
    }

    /// Whether the last thread pushed may loop otherwise than by a runaway text in its last
    /// `THREAD_TEXT_RUN_MESSAGES` messages: a repeating suffix, an activity tail long enough
    /// to be judged (the only one whose rows are written), or a result run as long as
    /// `needed_results` asks, or two if that is fewer (the option's floor; a caller passing
    /// less is covered too). A superset of the threads the NumPy heuristics find looping so,
    /// from the same columns.
    pub fn last_may_loop_before_its_texts(&self, needed_results: usize) -> bool {
        self.suffix_period.last().is_some_and(|&period| period > 0)
            || self
                .tail_length
                .last()
                .is_some_and(|&length| length as usize >= ACTIVITY_TAIL_MIN_LENGTH)
            || self
                .result_run
                .last()
                .is_some_and(|&run| run as usize >= needed_results.min(2))
    }

    /// The one thread of a batch of one, decided in the core where it can be: 1, 2 or 3 for
    /// a repeated suffix, activity tail or result run (in the reference's order), else 0 and
    /// the text-run check over `texts` is the caller's (`describe_thread`).
    pub fn single_verdict(&self, needed_results: usize) -> u8 {
        if self.suffix_period[0] > 0 {
            return 1;
        }
        let rows: Vec<TailRow> = (0..self.tail_kind.len())
            .map(|row| TailRow {
                kind: self.tail_kind[row],
                kind_id: self.tail_kind_id[row],
                name: self.tail_name[row],
                arguments: self.tail_arguments[row],
                result: self.tail_result[row],
            })
            .collect();
        if !rows.is_empty() && tail_collapsed(&rows) {
            return 2;
        }
        if self.result_run[0] as usize >= needed_results {
            return 3;
        }
        0
    }

    /// Append another batch's columns after this one's (its threads numbered on).
    pub fn append(&mut self, other: Columns) {
        let threads = self.lengths.len() as i64;
        let rows = self.tail_kind.len() as i64;
        self.lengths.extend(other.lengths);
        self.suffix_period.extend(other.suffix_period);
        self.suffix_copies.extend(other.suffix_copies);
        self.tail_length.extend(other.tail_length);
        self.tail_offsets.extend(
            other
                .tail_offsets
                .into_iter()
                .skip(1)
                .map(|offset| offset + rows),
        );
        self.tail_kind.extend(other.tail_kind);
        self.tail_kind_id.extend(other.tail_kind_id);
        self.tail_name.extend(other.tail_name);
        self.tail_arguments.extend(other.tail_arguments);
        self.tail_result.extend(other.tail_result);
        self.result_run.extend(other.result_run);
        self.result_start.extend(other.result_start);
        self.result_period.extend(other.result_period);
        self.result_copies.extend(other.result_copies);
        self.text_thread
            .extend(other.text_thread.into_iter().map(|thread| thread + threads));
        self.text_index.extend(other.text_index);
        self.texts.extend(other.texts);
    }

    /// Read one thread's messages (already checked to be mappings) into the columns.
    pub fn push_thread<N: Node + Clone>(
        &mut self,
        index: usize,
        items: &[N],
        options: &ScanOptions,
        reader: &mut Reader,
    ) -> PyResult<()> {
        reader.interner.clear();
        let length = items.len();
        self.lengths.push(length as i64);
        let (period, copies) = reader.keys.repeated_suffix(items, &options.suffix)?;
        self.suffix_period.push(period as i64);
        self.suffix_copies.push(copies as i64);
        self.activity_tail(items)?;
        self.result_run(items, options.needed_results, &mut reader.interner)?;
        self.text_candidates(index, items)
    }

    /// The trailing contiguous run of well-formed activities; payload ids only when it is
    /// long enough to be judged.
    fn activity_tail<N: Node + Clone>(&mut self, items: &[N]) -> PyResult<()> {
        let mut tail = Vec::new();
        for message in items.iter().rev() {
            match parse_activity(message)? {
                Some(activity) => tail.push(activity),
                None => break,
            }
        }
        self.tail_length.push(tail.len() as i64);
        if tail.len() >= ACTIVITY_TAIL_MIN_LENGTH {
            let mut interner = LazyInterner::default();
            for activity in tail.iter().rev() {
                self.tail_kind.push(activity.kind_code());
                self.tail_kind_id.push(interner.id(b'k', &activity.kind)?);
                self.tail_name.push(interner.id(b'n', &activity.name)?);
                self.tail_arguments
                    .push(interner.payload(b'a', activity.arguments.as_ref())?);
                self.tail_result
                    .push(interner.payload(b'r', activity.result.as_ref())?);
            }
        }
        self.tail_offsets.push(self.tail_kind.len() as i64);
        Ok(())
    }

    /// The run of identical settled tool results (compared as (name, arguments, result))
    /// that ends the thread: its length, and where it is at least `needed` long, its span.
    /// Each result is compared with the newest by cheap screens first; only results whose
    /// screens agree are compared exactly, by walking the two where their values are plain
    /// (the run ends at the first that differs, so the newest is walked in full once per
    /// result of the run, as each was encoded once), else by their exact ids.
    fn result_run<N: Node>(
        &mut self,
        items: &[N],
        needed: usize,
        interner: &mut Interner,
    ) -> PyResult<()> {
        let mut scratch = Vec::new();
        let mut positions: Vec<usize> = Vec::new();
        let mut newest: Option<NewestResult<N>> = None;
        for position in (0..items.len()).rev() {
            let Some(activity) = parse_activity(&items[position])? else {
                continue;
            };
            if !activity.is_settled() {
                continue;
            }
            let screens = [
                masked(activity.name.screen(&mut scratch)?),
                masked(screen_of(activity.arguments.as_ref(), &mut scratch)?),
                masked(screen_of(activity.result.as_ref(), &mut scratch)?),
            ];
            let Some((first, first_screens, first_ids)) = newest.as_mut() else {
                newest = Some((activity, screens, None));
                positions.push(position);
                continue;
            };
            if screens != *first_screens {
                break;
            }
            let same = match plainly_same_call(first, &activity) {
                Some(same) => same,
                None => {
                    let wanted = match first_ids {
                        Some(ids) => *ids,
                        None => *first_ids.insert(exact_ids(interner, first)?),
                    };
                    exact_ids(interner, &activity)? == wanted
                }
            };
            if !same {
                break;
            }
            positions.push(position);
        }
        self.result_run.push(positions.len() as i64);
        if positions.len() >= needed && !positions.is_empty() {
            let first = *positions.last().expect("a run has a position");
            let mut start = first;
            if first > 0 {
                if let (Some(before), Some((run, _, _))) =
                    (parse_activity(&items[first - 1])?, newest.as_ref())
                {
                    if before.kind.is_text("request")
                        && interner.value(b'n', &before.name)? == interner.value(b'n', &run.name)?
                    {
                        start = first - 1;
                    }
                }
            }
            let spacing = if positions.len() > 1 {
                (positions[0] - first) as f64 / (positions.len() - 1) as f64
            } else {
                0.0
            };
            self.result_start.push(start as i64);
            // Python's round(): halves to even.
            self.result_period
                .push((spacing.round_ties_even() as i64).max(1));
            self.result_copies.push(positions.len() as i64);
        } else {
            self.result_start.push(-1);
            self.result_period.push(0);
            self.result_copies.push(0);
        }
        Ok(())
    }

    /// The last five messages whose type is neither "reasoning" nor "activity" and whose text
    /// is a non-empty string: the only texts the text-run check reads, handed to Python.
    fn text_candidates<N: Node>(&mut self, index: usize, items: &[N]) -> PyResult<()> {
        let first = items.len().saturating_sub(THREAD_TEXT_RUN_MESSAGES);
        for (position, message) in items.iter().enumerate().skip(first) {
            if let Some(kind) = message.field(Key::Type)? {
                if kind.is_text("reasoning") || kind.is_text("activity") {
                    continue;
                }
            }
            if let Some(text) = message.field(Key::Text)?.filter(Node::is_nonempty_text) {
                self.text_thread.push(index as i64);
                self.text_index.push(position as i64);
                self.texts.push(text.text_value());
            }
        }
        Ok(())
    }
}

/// The newest settled result of a run: its activity, its screens, and its exact ids once a
/// later result's screens agree with it.
type NewestResult<N> = (Activity<N>, [u64; 3], Option<[i64; 3]>);

fn screen_of<N: Node>(value: Option<&N>, scratch: &mut Vec<u8>) -> PyResult<u64> {
    match value {
        Some(value) => value.screen(scratch),
        None => Ok(0), // absent: a screen of its own (a present value's can be 0 too: fine)
    }
}

/// Whether two settled results' (name, arguments, result) are equal, told without encoding
/// them where their values are plain (`Node::plainly_equal`; an absent payload is a value of
/// its own); None leaves it to their exact ids.
fn plainly_same_call<N: Node>(a: &Activity<N>, b: &Activity<N>) -> Option<bool> {
    let payload = |left: Option<&N>, right: Option<&N>| plainly_equal_if_present(left, right, true);
    // (in turn: a part apart, or one the encodings must tell, decides without the rest)
    let same = a.name.plainly_equal(&b.name);
    if same != Some(true) {
        return same;
    }
    let same = payload(a.arguments.as_ref(), b.arguments.as_ref());
    if same != Some(true) {
        return same;
    }
    payload(a.result.as_ref(), b.result.as_ref())
}

fn exact_ids<N: Node>(interner: &mut Interner, activity: &Activity<N>) -> PyResult<[i64; 3]> {
    Ok([
        interner.value(b'n', &activity.name)?,
        interner.payload(b'a', activity.arguments.as_ref())?,
        interner.payload(b'r', activity.result.as_ref())?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: i8, name: i64, arguments: i64, result: i64) -> TailRow {
        TailRow {
            kind,
            kind_id: i64::from(kind),
            name,
            arguments,
            result,
        }
    }

    #[test]
    fn the_same_call_and_answer_collapse() {
        let pair = [row(REQUEST, 0, 1, ABSENT), row(RESPONSE, 0, ABSENT, 2)];
        assert!(tail_collapsed(&pair.repeat(4)));
    }

    #[test]
    fn polling_with_new_answers_is_progress() {
        let rows: Vec<TailRow> = (0..4)
            .flat_map(|answer| [row(REQUEST, 0, 1, ABSENT), row(RESPONSE, 0, ABSENT, answer)])
            .chain([row(RESPONSE, 0, ABSENT, 0)])
            .collect();
        assert!(!tail_collapsed(&rows));
    }

    #[test]
    fn too_few_payloads_never_collapse() {
        let pair = [row(REQUEST, 0, ABSENT, ABSENT), row(RESPONSE, 0, ABSENT, 2)];
        assert!(!tail_collapsed(&pair.repeat(6)));
    }
}
