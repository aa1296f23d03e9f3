//! A JSON document that is one array, split into its elements as its bytes arrive, so that a
//! document of runs is scanned a chunk at a time in memory flat in its size.
//!
//! Elements are found by their depth outside strings; they are not checked here (each is
//! then read alone, by the tape or by Python's `json`). A document whose every element parses
//! alone and whose split stops nowhere is the array of those values; a split that stops
//! (cut short, an empty element, data after the closing bracket) gives the elements before.
//!
//! Arrays one after another (`cat a.json b.json`, or `jq -c` writing one array of runs a
//! line) are split as one: the elements of each in turn. An object after an array that held
//! an element is one more element (a run appended a line at a time after a batch written as
//! an array); anything else after one is data after the closing bracket, where the split
//! stops, and so is a later array or object its reader refuses by its first element
//! (`refuse_later_array`).

use std::collections::TryReserveError;

/// Where a byte stands in the document: its offset, and its line and column (from 1; the
/// column in characters) as Python's `json` counts them in its error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub offset: usize,
    pub line: usize,
    pub column: usize,
}

/// Why the split stopped short of a whole document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The document ended before its closing bracket; the element it ended in, if any, is
    /// the splitter's `tail`.
    Cut,
    /// An element was empty (a comma or the closing bracket where a value belongs).
    Empty,
    /// Something other than whitespace, another array or an object follows the closing
    /// bracket.
    After,
}

/// An element found: its range of the splitter's `text`, and the place it starts.
pub type Element = (usize, usize, Place);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    BeforeArray,
    BeforeElement { first: bool },
    InElement,
    AfterArray,
    NotArray,
    Stopped(Stop),
}

/// The split of one document fed a block at a time. Each `feed` returns the elements its
/// block completed, as ranges of `text`, valid until the next `feed`.
pub struct ArraySplitter {
    buffer: Vec<u8>,
    /// Document offset of `buffer[0]`.
    base: usize,
    /// Bytes of `buffer` scanned.
    scanned: usize,
    /// Bytes of `buffer` whose lines and columns are counted into `counted_place`.
    counted: usize,
    counted_place: Place,
    state: State,
    depth: usize,
    in_string: bool,
    /// A backslash ended the last block inside a string: the next byte is escaped.
    escaped: bool,
    /// Where the element being read starts in `buffer`, and its place.
    element: Option<(usize, Place)>,
    /// Where the split stopped (for `Stop::After` and `Stop::Empty`, the offending byte; for
    /// `Stop::Cut`, the end of the document).
    stop_place: Option<Place>,
    closed: bool,
    /// Whether the array being read follows another, and where its bracket is, until its
    /// first element has been found.
    later_array: Option<Place>,
    /// The element being read is the first of a later array, whose bracket is here.
    opening: Option<Place>,
    /// The elements of the last `feed` that open a later array (their index among its
    /// elements) and where that array's bracket is; or that are an object after an array,
    /// and where it starts.
    later_openings: Vec<(usize, Place)>,
    /// The element being read is an object after an array, ended by its own closing brace.
    loose: bool,
    /// Whether an element has been found: an object may follow only an array that held one
    /// (`[]` and then JSONL lines is no array of runs).
    any_element: bool,
}

impl Default for ArraySplitter {
    fn default() -> Self {
        Self::new()
    }
}

/// The UTF-8 byte-order mark.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// JSON's whitespace, which is also `json`'s.
fn is_json_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Characters in UTF-8 `bytes` (bytes that start one; a stray continuation byte counts none).
fn characters(bytes: &[u8]) -> usize {
    // Counted in byte-wide sums of at most 255 bytes, which the compiler turns into wide
    // vector adds (a plain `filter().count()` widens every byte to a 64-bit lane); a compact
    // document is one line, so every byte of it is counted here.
    bytes
        .chunks(255)
        .map(|chunk| {
            let starts = chunk.iter().fold(0u8, |sum, &byte| {
                sum.wrapping_add(u8::from(byte & 0xC0 != 0x80))
            });
            usize::from(starts)
        })
        .sum()
}

impl ArraySplitter {
    pub fn new() -> Self {
        Self {
            buffer: Vec::new(),
            base: 0,
            scanned: 0,
            counted: 0,
            counted_place: Place {
                offset: 0,
                line: 1,
                column: 1,
            },
            state: State::BeforeArray,
            depth: 0,
            in_string: false,
            escaped: false,
            element: None,
            stop_place: None,
            closed: false,
            later_array: None,
            opening: None,
            later_openings: Vec::new(),
            loose: false,
            any_element: false,
        }
    }

    /// The elements of the last `feed` that are the first of an array following another,
    /// each as its index among that feed's elements and the place of its array's bracket.
    pub fn later_openings(&self) -> &[(usize, Place)] {
        &self.later_openings
    }

    /// Where the bracket of the later array whose first element is being read (the
    /// document's tail, should it end now) is: None when that element opens no later array.
    pub fn pending_opening(&self) -> Option<Place> {
        self.element.and(self.opening)
    }

    /// Stop at a later array (`place`, its bracket, from `later_openings`) whose first element
    /// its reader finds no element of the document (an array of runs followed by a thread
    /// of messages), or at an object after an array that is none (a message): data after the
    /// closing bracket of the array before it, where the split stops. The elements from that
    /// one on are the caller's to drop.
    pub fn refuse_later_array(&mut self, place: Place) {
        self.state = State::Stopped(Stop::After);
        self.stop_place = Some(place);
        self.element = None;
        self.opening = None;
        self.loose = false;
        self.closed = true;
    }

    /// The bytes fed and not yet let go of: element ranges index into them.
    pub fn text(&self) -> &[u8] {
        &self.buffer
    }

    /// Whether the document opens no array (known from its first byte that is not space).
    pub fn not_an_array(&self) -> bool {
        self.state == State::NotArray
    }

    /// Whether the split is over before the document's end (it opens no array, or stopped):
    /// nothing more need be fed.
    pub fn is_done(&self) -> bool {
        matches!(self.state, State::NotArray | State::Stopped(_))
    }

    /// The place of `buffer[index]`, counting lines from the last place counted.
    fn place_of(&mut self, index: usize) -> Place {
        debug_assert!(index >= self.counted);
        let span = &self.buffer[self.counted..index];
        let mut place = self.counted_place;
        match memchr::memrchr(b'\n', span) {
            Some(last) => {
                place.line += memchr::memchr_iter(b'\n', span).count();
                place.column = characters(&span[last + 1..]) + 1;
            }
            None => place.column += characters(span),
        }
        place.offset = self.base + index;
        self.counted = index;
        self.counted_place = place;
        place
    }

    /// Feed the next block of the document; the elements it completed, each as its range of
    /// `text` (whitespace around it left out) and the place it starts. An error when memory
    /// for the block cannot be had (an element of hundreds of megabytes under a memory
    /// limit): the caller raises MemoryError rather than the allocation aborting the process.
    pub fn feed(&mut self, block: &[u8]) -> Result<Vec<Element>, TryReserveError> {
        // Let go of what earlier blocks completed: keep only the element being read.
        let keep_from = self.element.map_or(self.scanned, |(start, _)| start);
        self.place_of(keep_from);
        self.buffer.drain(..keep_from);
        self.base += keep_from;
        self.scanned -= keep_from;
        self.counted -= keep_from;
        if let Some((start, _)) = &mut self.element {
            *start -= keep_from;
        }
        self.buffer.try_reserve(block.len())?;
        self.buffer.extend_from_slice(block);
        self.later_openings.clear();
        let mut found = Vec::new();
        self.scan(&mut found);
        Ok(found)
    }

    fn scan(&mut self, found: &mut Vec<Element>) {
        let end = self.buffer.len();
        let mut at = self.scanned;
        while at < end {
            match self.state {
                State::NotArray | State::Stopped(_) => break,
                State::BeforeArray | State::BeforeElement { .. } | State::AfterArray
                    if is_json_space(self.buffer[at]) =>
                {
                    at += 1;
                }
                State::BeforeArray if self.base + at == 0 && self.buffer[at] == BOM[0] => {
                    // A UTF-8 byte-order mark opening the document: `json.loads` of bytes
                    // skips it (and counts no column for it); it may arrive in pieces.
                    let have = (end - at).min(BOM.len());
                    if self.buffer[at..at + have] != BOM[..have] {
                        self.state = State::NotArray;
                    } else if have < BOM.len() {
                        break;
                    } else {
                        at += BOM.len();
                        self.counted = at;
                    }
                }
                State::BeforeArray => {
                    self.state = if self.buffer[at] == b'[' {
                        State::BeforeElement { first: true }
                    } else {
                        State::NotArray
                    };
                    at += 1;
                }
                State::AfterArray if self.buffer[at] == BOM[0] => {
                    // A byte-order mark opening a later array (`cat` of files written with
                    // one): passed over as the document's own first one is.
                    let have = (end - at).min(BOM.len());
                    if self.buffer[at..at + have] != BOM[..have] {
                        self.stop_place = Some(self.place_of(at));
                        self.state = State::Stopped(Stop::After);
                    } else if have < BOM.len() {
                        break;
                    } else {
                        at += BOM.len();
                    }
                }
                State::AfterArray if self.buffer[at] == b'[' => {
                    // The next of arrays one after another: its elements follow the last's.
                    self.later_array = Some(self.place_of(at));
                    self.closed = false;
                    self.state = State::BeforeElement { first: true };
                    at += 1;
                }
                State::AfterArray if self.buffer[at] == b'{' && self.any_element => {
                    // An object after an array of elements: one more element, told to the
                    // reader as a later array's first is (it may refuse it).
                    let place = self.place_of(at);
                    self.opening = Some(place);
                    self.element = Some((at, place));
                    self.depth = 0;
                    self.loose = true;
                    self.state = State::InElement;
                }
                State::AfterArray => {
                    self.stop_place = Some(self.place_of(at));
                    self.state = State::Stopped(Stop::After);
                }
                State::BeforeElement { first } => match self.buffer[at] {
                    b']' if first => {
                        self.later_array = None;
                        self.closed = true;
                        self.state = State::AfterArray;
                        at += 1;
                    }
                    b']' | b',' => {
                        self.stop_place = Some(self.place_of(at));
                        self.state = State::Stopped(Stop::Empty);
                    }
                    _ => {
                        let place = self.place_of(at);
                        if first {
                            self.opening = self.later_array.take();
                        }
                        self.element = Some((at, place));
                        self.depth = 0;
                        self.state = State::InElement;
                    }
                },
                State::InElement => {
                    let (next, ended) = self.walk_element(at, end);
                    at = next;
                    if let Some(byte) = ended {
                        let (start, place) = self.element.take().expect("in an element");
                        let mut last = at;
                        if self.loose {
                            last += 1; // (an object's closing brace is its own)
                        }
                        while is_json_space(self.buffer[last - 1]) {
                            last -= 1; // the element's first byte is not space
                        }
                        if let Some(bracket) = self.opening.take() {
                            self.later_openings.push((found.len(), bracket));
                        }
                        found.push((start, last, place));
                        self.any_element = true;
                        if std::mem::take(&mut self.loose) {
                            self.state = State::AfterArray;
                        } else if byte == b']' {
                            self.closed = true;
                            self.state = State::AfterArray;
                        } else {
                            self.state = State::BeforeElement { first: false };
                        }
                        at += 1;
                    }
                }
            }
        }
        self.scanned = at;
    }

    /// Walk the element being read from `buffer[at]` toward `end`, by its depth outside
    /// strings: where it ends (the `,` or `]` after it, and that byte; for an object after an
    /// array, its own closing `}`), or `end` and None when it goes on past the bytes fed. The walk keeps its state in locals (this loop is most
    /// of the split's time: every byte of the document passes through it), strings skipped
    /// to their next quote or backslash at once.
    fn walk_element(&mut self, mut at: usize, end: usize) -> (usize, Option<u8>) {
        let buffer = &self.buffer[..end];
        let mut depth = self.depth;
        let mut in_string = self.in_string;
        let loose = self.loose;
        let mut ended = None;
        if self.escaped && at < end {
            self.escaped = false;
            at += 1; // the byte a backslash ending the last block escapes
        }
        while at < end {
            if in_string {
                match memchr::memchr2(b'"', b'\\', &buffer[at..]) {
                    None => at = end,
                    Some(skip) => {
                        at += skip;
                        if buffer[at] == b'"' {
                            in_string = false;
                            at += 1;
                        } else if at + 1 < end {
                            at += 2; // a backslash and the byte it escapes
                        } else {
                            self.escaped = true;
                            at = end;
                        }
                    }
                }
                continue;
            }
            match buffer[at] {
                b'"' => in_string = true,
                b'[' | b'{' => depth += 1,
                byte @ (b']' | b'}') if depth > 0 => {
                    depth -= 1;
                    if loose && depth == 0 {
                        ended = Some(byte);
                        break;
                    }
                }
                byte @ (b']' | b',') if depth == 0 => {
                    ended = Some(byte);
                    break;
                }
                _ => {}
            }
            at += 1;
        }
        self.depth = depth;
        self.in_string = in_string;
        (at, ended)
    }

    /// The document has ended: why the split stopped short of a whole document and where
    /// (None when it did not: arrays whole, only whitespace between and after them),
    /// whether the last array's closing bracket was reached, and the element the document
    /// ended in (its range of `text`, trailing whitespace left out unless the document ends
    /// inside a string, where it is the string's own text and where `json` finds the break;
    /// and its place), if any. Call after the last `feed`.
    pub fn finish(&mut self) -> (Option<(Stop, Place)>, bool, Option<Element>) {
        let in_string = self.in_string;
        let tail = self.element.take().map(|(start, place)| {
            let mut last = self.buffer.len();
            while !in_string && last > start && is_json_space(self.buffer[last - 1]) {
                last -= 1;
            }
            (start, last, place)
        });
        let stop = match self.state {
            State::Stopped(stop) => Some((stop, self.stop_place.expect("a stop has a place"))),
            State::BeforeElement { .. } | State::InElement => {
                let end = self.buffer.len();
                Some((Stop::Cut, self.place_of(end)))
            }
            State::AfterArray | State::BeforeArray | State::NotArray => None,
        };
        (stop, self.closed, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Split = (Vec<Vec<u8>>, Option<(Stop, usize)>, bool, Option<Vec<u8>>);

    /// The document fed in blocks of `size` bytes: the elements, where and why it stopped,
    /// whether it closed, the tail.
    fn split(document: &[u8], size: usize) -> Split {
        let mut splitter = ArraySplitter::new();
        let mut elements = Vec::new();
        for block in document.chunks(size.max(1)) {
            for (start, end, place) in splitter.feed(block).unwrap() {
                assert_eq!(
                    &document[place.offset..][..end - start],
                    &splitter.text()[start..end]
                );
                elements.push(splitter.text()[start..end].to_vec());
            }
        }
        let (stop, closed, tail) = splitter.finish();
        let tail = tail.map(|(start, end, _)| splitter.text()[start..end].to_vec());
        (
            elements,
            stop.map(|(why, place)| (why, place.offset)),
            closed,
            tail,
        )
    }

    #[test]
    fn characters_are_the_bytes_that_start_one() {
        // The chunked count against the obvious one, on lengths around its 255-byte sums,
        // with every byte value (continuation bytes 0x80..=0xBF among them).
        let bytes: Vec<u8> = (0..2_000u32).map(|i| (i * 167 % 256) as u8).collect();
        for length in [0, 1, 254, 255, 256, 510, 511, 1_000, 2_000] {
            for start in [0, 1, 7] {
                let span = &bytes[start.min(length)..length];
                let obvious = span.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
                assert_eq!(characters(span), obvious, "{start}..{length}");
            }
        }
        let all_continuations = vec![0x80u8; 1_000];
        assert_eq!(characters(&all_continuations), 0);
        assert_eq!(characters(&[b'a'; 1_000]), 1_000);
    }

    fn every_way(document: &[u8]) -> Split {
        let whole = split(document, document.len());
        for size in 1..document.len() {
            assert_eq!(
                split(document, size),
                whole,
                "{document:?} in blocks of {size}"
            );
        }
        whole
    }

    #[test]
    fn elements_are_found_by_depth_outside_strings_in_blocks_of_any_size() {
        let document = br#" [ {"a": "],\"[{\\"}, [1, [2]] ,"x" , 3 ] "#;
        let (elements, stop, closed, tail) = every_way(document);
        assert_eq!(
            elements,
            vec![
                br#"{"a": "],\"[{\\"}"#.to_vec(),
                b"[1, [2]]".to_vec(),
                b"\"x\"".to_vec(),
                b"3".to_vec()
            ]
        );
        assert_eq!((stop, closed, tail), (None, true, None));
        for empty in [&b"[]"[..], b" [ \n ] "] {
            assert_eq!(every_way(empty), (vec![], None, true, None));
        }
        for other in [&b"{}"[..], b"1", b" \xef\xbb\xbf[1]", b"\xef\xbb[1]"] {
            let mut splitter = ArraySplitter::new();
            assert!(splitter.feed(other).unwrap().is_empty());
            assert!(splitter.not_an_array() && splitter.is_done(), "{other:?}");
        }
    }

    #[test]
    fn a_broken_array_keeps_the_elements_before_where_it_stops() {
        let cut = Some(Stop::Cut);
        // (document, elements, why and where it stopped, closed, tail)
        type Case = (
            &'static [u8],
            &'static [&'static [u8]],
            Option<Stop>,
            Option<usize>,
            bool,
            Option<&'static [u8]>,
        );
        let cases: [Case; 11] = [
            (b"[1,]", &[b"1"], Some(Stop::Empty), Some(3), false, None),
            (b"[,1]", &[], Some(Stop::Empty), Some(1), false, None),
            (b"[1 2]", &[b"1 2"], None, None, true, None), // refused when read alone
            (b"[1] x", &[b"1"], Some(Stop::After), Some(4), true, None),
            (b"[1", &[], cut, Some(2), false, Some(b"1")),
            (b"[1, 2 \n", &[b"1"], cut, Some(7), false, Some(b"2")),
            (
                b"[1, {\"a\": [",
                &[b"1"],
                cut,
                Some(11),
                false,
                Some(b"{\"a\": ["),
            ),
            (
                b"[1, \"cut\\",
                &[b"1"],
                cut,
                Some(9),
                false,
                Some(b"\"cut\\"),
            ),
            (b"[1,\n", &[b"1"], cut, Some(4), false, None),
            // Cut inside a string: its trailing whitespace is its text, kept.
            (
                b"[1, \"cut \n",
                &[b"1"],
                cut,
                Some(10),
                false,
                Some(b"\"cut \n"),
            ),
            (b"[", &[], cut, Some(1), false, None),
        ];
        for (document, elements, why, offset, closed, tail) in cases {
            let expected: Split = (
                elements.iter().map(|e| e.to_vec()).collect(),
                why.zip(offset),
                closed,
                tail.map(<[u8]>::to_vec),
            );
            assert_eq!(every_way(document), expected, "{document:?}");
        }
    }

    #[test]
    fn arrays_one_after_another_are_split_as_one() {
        type Case = (
            &'static [u8],
            &'static [&'static [u8]],
            Option<(Stop, usize)>,
            bool,
        );
        let cases: [Case; 14] = [
            (b"[1, 2][3]", &[b"1", b"2", b"3"], None, true),
            (b"[1]\n\xef\xbb\xbf[2]", &[b"1", b"2"], None, true), // files written with a mark
            (b"[1]\n\xef\xbb[2]", &[b"1"], Some((Stop::After, 4)), true),
            (
                b"[1]\n[2, {\"a\": [3]}]\n",
                &[b"1", b"2", b"{\"a\": [3]}"],
                None,
                true,
            ),
            (b"[] [1] []", &[b"1"], None, true),
            (b"[1] [2] x", &[b"1", b"2"], Some((Stop::After, 8)), true),
            // An object after an array of elements is one more; after an empty one, data.
            (b"[1] {\"a\": 2}", &[b"1", b"{\"a\": 2}"], None, true),
            (b"[] {\"a\": 2}", &[], Some((Stop::After, 3)), true),
            (
                b"[1]\n{\"a\": \"}]\"}\n{\"b\": {}}\n[2]",
                &[b"1", b"{\"a\": \"}]\"}", b"{\"b\": {}}", b"2"],
                None,
                true,
            ),
            (
                b"[1] {\"a\": 2}{}",
                &[b"1", b"{\"a\": 2}", b"{}"],
                None,
                true,
            ),
            (
                b"[1] {\"a\": 2} x",
                &[b"1", b"{\"a\": 2}"],
                Some((Stop::After, 13)),
                true,
            ),
            (
                b"[1] {\"a\": 2}, {}",
                &[b"1", b"{\"a\": 2}"],
                Some((Stop::After, 12)),
                true,
            ),
            (b"[1] [2, ]", &[b"1", b"2"], Some((Stop::Empty, 8)), false),
            (b"[1] [", &[b"1"], Some((Stop::Cut, 5)), false),
        ];
        for (document, elements, stop, closed) in cases {
            let expected: Split = (
                elements.iter().map(|e| e.to_vec()).collect(),
                stop,
                closed,
                None,
            );
            assert_eq!(every_way(document), expected, "{document:?}");
        }
        let (elements, stop, closed, tail) = every_way(b"[1] [2, 3");
        assert_eq!(elements, vec![b"1".to_vec(), b"2".to_vec()]);
        assert_eq!(
            (stop, closed, tail),
            (Some((Stop::Cut, 9)), false, Some(b"3".to_vec()))
        );
        // Cut inside an object after an array: the object is the tail.
        let (elements, stop, _, tail) = every_way(b"[1] {\"a\": [2");
        assert_eq!(elements, vec![b"1".to_vec()]);
        assert_eq!(
            (stop, tail),
            (Some((Stop::Cut, 12)), Some(b"{\"a\": [2".to_vec()))
        );
    }

    #[test]
    fn a_later_array_is_told_by_its_first_element_and_may_be_refused() {
        let document = b"[1, 2]\n [] [3, 4] [5] {\"6\": {}}";
        let mut splitter = ArraySplitter::new();
        let found = splitter.feed(document).unwrap();
        assert_eq!(found.len(), 6);
        let openings: Vec<(usize, usize)> = splitter
            .later_openings()
            .iter()
            .map(|&(index, place)| (index, place.offset))
            .collect();
        // (the empty array opens none; an object opens itself)
        assert_eq!(openings, vec![(2, 11), (4, 18), (5, 22)]);
        splitter.refuse_later_array(splitter.later_openings()[0].1);
        let (stop, closed, tail) = splitter.finish();
        assert_eq!(
            stop.map(|(why, p)| (why, p.offset, p.line, p.column)),
            Some((Stop::After, 11, 2, 5))
        );
        assert!(closed && tail.is_none());
        // Refused in the middle of its first element's block, the split feeds nothing more.
        let mut splitter = ArraySplitter::new();
        splitter.feed(b"[1] [2, ").unwrap();
        splitter.refuse_later_array(splitter.later_openings()[0].1);
        assert!(splitter.is_done() && splitter.feed(b"3]").unwrap().is_empty());
        // In blocks of any size, the opening is told with the feed that completes the element.
        for size in 1..document.len() {
            let mut splitter = ArraySplitter::new();
            let mut told = Vec::new();
            let mut elements = 0;
            for block in document.chunks(size) {
                let found = splitter.feed(block).unwrap();
                told.extend(splitter.later_openings().iter().map(|&(index, place)| {
                    let (start, end, _) = found[index];
                    (splitter.text()[start..end].to_vec(), place.offset)
                }));
                elements += found.len();
            }
            assert_eq!(elements, 6, "blocks of {size}");
            assert_eq!(
                told,
                vec![
                    (b"3".to_vec(), 11),
                    (b"5".to_vec(), 18),
                    (b"{\"6\": {}}".to_vec(), 22)
                ],
                "blocks of {size}"
            );
        }
    }

    #[test]
    fn a_byte_order_mark_opening_the_document_is_skipped_as_json_skips_it() {
        let document = b"\xef\xbb\xbf [1, \"x\"] x";
        let (elements, stop, closed, tail) = every_way(document);
        assert_eq!(elements, vec![b"1".to_vec(), b"\"x\"".to_vec()]);
        assert_eq!((stop, closed, tail), (Some((Stop::After, 13)), true, None));
        for size in 1..document.len() {
            let mut splitter = ArraySplitter::new();
            let mut places = Vec::new();
            for block in document.chunks(size) {
                places.extend(splitter.feed(block).unwrap().into_iter().map(|(_, _, p)| p));
            }
            // json.loads counts no column for the mark: "[" is column 2 after the space.
            let columns: Vec<usize> = places.iter().map(|p| p.column).collect();
            assert_eq!(columns, vec![3, 6], "blocks of {size}");
        }
        let mut splitter = ArraySplitter::new();
        assert!(splitter.feed(b"\xef\xbb").unwrap().is_empty() && !splitter.is_done());
        assert_eq!(splitter.finish(), (None, false, None));
    }

    #[test]
    fn places_count_lines_and_characters_as_json_does() {
        let document = "[\n  \"é\",\n  {\"a\": 1},  \"🎉\", 7\n] x".as_bytes();
        for size in 1..document.len() {
            let mut splitter = ArraySplitter::new();
            let mut places = Vec::new();
            for block in document.chunks(size) {
                places.extend(splitter.feed(block).unwrap().into_iter().map(|(_, _, p)| p));
            }
            let (stop, _, _) = splitter.finish();
            let lines_columns: Vec<(usize, usize)> =
                places.iter().map(|p| (p.line, p.column)).collect();
            assert_eq!(lines_columns, vec![(2, 3), (3, 3), (3, 14), (3, 19)]);
            let (why, place) = stop.expect("data after the array");
            assert_eq!((why, place.line, place.column), (Stop::After, 4, 3));
        }
    }
}
