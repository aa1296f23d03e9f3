//! Whether a text is JSON as Python's `json.loads` reads it, at any depth.
//!
//! Python's `json` reads values by recursion and gives up (RecursionError) past about a
//! thousand levels, so it cannot tell whether a deeply nested text is JSON at all. A JSON
//! document's run nested that deep is an error record of its own, like a JSONL line, when
//! its text is JSON: the split found its bounds, and the runs after it are where the split
//! says. When it is not, the document breaks there. This walk keeps one bit of state per
//! level (object or array), so any depth costs memory linear in it and no stack.
//!
//! The grammar is `json`'s (its C scanner, strict): whitespace is space, tab, line feed and
//! carriage return; `NaN`, `Infinity` and `-Infinity` are numbers; a number is
//! `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; a string holds no control character
//! (below U+0020) and only the escapes `\" \\ \/ \b \f \n \r \t \uXXXX`. The text is bytes
//! of UTF-8 Python has already decoded: a byte of a multi-byte character is never a quote,
//! a backslash or a control character, so bytes are read one by one.

/// Whether `text` is one JSON value (whitespace around it allowed) that Python's `json`
/// reads, or would read but for its recursion limit.
pub fn python_reads(text: &[u8]) -> bool {
    top_members(text).is_some()
}

/// The commas and opening brackets of `text` outside its strings: about the number of
/// values a JSON text holds (each after the first of a container follows a comma, each
/// container opens with a bracket), for the memory its reading by Python takes
/// (`vthread.cli._room_to_read_in_python`). Any bytes are counted so, JSON or not: a string
/// never closed runs to the end.
pub fn separators(text: &[u8]) -> usize {
    let mut count = 0;
    let mut at = 0;
    while at < text.len() {
        match text[at] {
            b'"' => {
                // To the closing quote: the first not escaped by a backslash before it.
                at += 1;
                while at < text.len() {
                    match memchr::memchr2(b'"', b'\\', &text[at..]) {
                        Some(found) if text[at + found] == b'\\' => at += found + 2,
                        Some(found) => {
                            at += found;
                            break;
                        }
                        None => at = text.len(),
                    }
                }
            }
            b',' | b'{' | b'[' => count += 1,
            _ => {}
        }
        at += 1;
    }
    count
}

/// A byte range of a text.
pub type Span = (usize, usize);

/// When `text` is JSON as [`python_reads`] tells, the byte ranges of each member of its
/// top-level object, in order: its key (quotes included) and its value (none when it is no
/// object); else None. A document's first element too deep for Python's `json` is a run or
/// a message by its keys, and a line too deep keeps its id by its members.
pub fn top_members(text: &[u8]) -> Option<Vec<(Span, Span)>> {
    let mut walk = Walk {
        text,
        at: 0,
        keys: Vec::new(),
        values: Vec::new(),
    };
    walk.document()?;
    Some(walk.keys.into_iter().zip(walk.values).collect())
}

struct Walk<'a> {
    text: &'a [u8],
    at: usize,
    /// The keys of the top-level object.
    keys: Vec<(usize, usize)>,
    /// Their values: each range's end is set when the value ends.
    values: Vec<(usize, usize)>,
}

impl Walk<'_> {
    fn document(&mut self) -> Option<()> {
        // Open containers, innermost last: true for an object.
        let mut open: Vec<bool> = Vec::new();
        self.space();
        loop {
            // A value is expected here.
            match self.peek() {
                Some(b'{') => {
                    self.at += 1;
                    self.space();
                    if self.eat(b'}') {
                        // An empty object is a whole value.
                    } else {
                        self.key(open.is_empty())?;
                        open.push(true);
                        continue;
                    }
                }
                Some(b'[') => {
                    self.at += 1;
                    self.space();
                    if self.eat(b']') {
                        // An empty array is a whole value.
                    } else {
                        open.push(false);
                        continue;
                    }
                }
                Some(b'"') => self.string()?,
                _ => self.scalar()?,
            }
            // A value ended: close what it ends, until a comma asks for the next value.
            loop {
                if open.len() == 1 && open[0] {
                    // (a member of the top-level object: its value ends here)
                    if let Some(value) = self.values.last_mut() {
                        value.1 = self.at;
                    }
                }
                self.space();
                let Some(&object) = open.last() else {
                    return (self.at == self.text.len()).then_some(());
                };
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        self.space();
                        if object {
                            self.key(open.len() == 1)?;
                        }
                        break;
                    }
                    b'}' if object => {
                        self.at += 1;
                        open.pop();
                    }
                    b']' if !object => {
                        self.at += 1;
                        open.pop();
                    }
                    _ => return None,
                }
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.at += usize::from(found);
        found
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// A member's key (kept when it is one of the top-level object's) and its colon, and the
    /// space before its value.
    fn key(&mut self, top: bool) -> Option<()> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.at;
        self.string()?;
        if top {
            self.keys.push((start, self.at));
        }
        self.space();
        self.eat(b':').then_some(())?;
        self.space();
        if top {
            self.values.push((self.at, self.at));
        }
        Some(())
    }

    fn string(&mut self) -> Option<()> {
        self.at += 1; // the opening quote
        loop {
            let byte = self.peek()?;
            self.at += 1;
            match byte {
                b'"' => return Some(()),
                0..=0x1f => return None,
                b'\\' => match self.peek()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                    b'u' => {
                        let digits = self.text.get(self.at + 1..self.at + 5)?;
                        if !digits.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        self.at += 5;
                    }
                    _ => return None,
                },
                _ => {}
            }
        }
    }

    fn scalar(&mut self) -> Option<()> {
        for word in [
            &b"true"[..],
            b"false",
            b"null",
            b"NaN",
            b"Infinity",
            b"-Infinity",
        ] {
            if self.text[self.at..].starts_with(word) {
                self.at += word.len();
                return Some(());
            }
        }
        self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') && self.text.get(self.at + 1).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(self.text.get(self.at + 1), Some(b'+' | b'-')));
            if self
                .text
                .get(self.at + 1 + sign)
                .is_some_and(u8::is_ascii_digit)
            {
                self.at += 1 + sign;
                self.digits();
            }
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|byte| byte.is_ascii_digit()) {
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{python_reads, top_members};

    #[test]
    fn top_members_are_each_key_and_its_value() {
        let text = br#" {"id" : "r1", "m": [1, {"a": [2]}] ,"n":{},"x":-1.5e3}"#;
        let members: Vec<(&[u8], &[u8])> = top_members(text)
            .unwrap()
            .into_iter()
            .map(|((a, b), (c, d))| (&text[a..b], &text[c..d]))
            .collect();
        assert_eq!(
            members,
            [
                (&br#""id""#[..], &br#""r1""#[..]),
                (br#""m""#, br#"[1, {"a": [2]}]"#),
                (br#""n""#, b"{}"),
                (br#""x""#, b"-1.5e3"),
            ]
        );
        assert_eq!(top_members(b"[{\"a\": 1}]"), Some(vec![]));
        assert_eq!(top_members(b"{\"a\": [}"), None);
    }

    #[test]
    fn reads_what_python_reads() {
        for text in [
            "0",
            " -0.5e+3 ",
            "1E9",
            "NaN",
            "-Infinity",
            "\"a\\u00E9\\ud800\\n\"",
            "[]",
            "{}",
            "[1, [2, {\"a\": [true, false, null]}], {}]",
            "{\"a\" : {\"b\":[]} , \"a\": 1}",
            "\t[\r\n1\n]\n",
            "\"\u{e9}\u{1f389}\"",
        ] {
            assert!(python_reads(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn refuses_what_python_refuses() {
        for text in [
            "",
            " ",
            "01",
            "1.",
            ".5",
            "1e",
            "-",
            "+1",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{1: 2}",
            "{\"a\":1]",
            "[1}",
            "[1",
            "{\"a\":",
            "\"\\x\"",
            "\"\\u12g4\"",
            "\"\\u12\"",
            "\"a\u{1}\"",
            "\"open",
            "[] []",
            "tru",
            "nan",
            "\u{feff}[]",
            "[1]]",
            "-NaN",
        ] {
            assert!(!python_reads(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn the_top_level_objects_keys_and_no_others() {
        let text = br#" {"a": {"b": [{"c": 1}]}, "d\"e" : [], "f":{}} "#;
        let keys: Vec<&[u8]> = super::top_members(text)
            .unwrap()
            .into_iter()
            .map(|((start, end), _)| &text[start..end])
            .collect();
        assert_eq!(keys, [&br#""a""#[..], br#""d\"e""#, br#""f""#]);
        assert_eq!(super::top_members(b"[{\"a\": 1}]"), Some(Vec::new()));
        assert_eq!(super::top_members(b"{\"a\": }"), None);
    }

    #[test]
    fn separators_inside_strings_are_not_counted() {
        use super::separators;
        assert_eq!(separators(br#"{"a": [1, 2, {"b": "x,{["}], "c": 3}"#), 6);
        assert_eq!(separators(br#"["a\\", "b", ["#), 4);
        assert_eq!(separators(br#""quoted \" , [" , 1"#), 1);
        assert_eq!(separators(br#""never closed, [ {"#), 0);
        assert_eq!(separators(b""), 0);
    }

    #[test]
    fn any_depth_is_read_without_a_stack() {
        let depth = 1_000_000;
        let deep = "[".repeat(depth) + &"]".repeat(depth);
        assert!(python_reads(deep.as_bytes()));
        let objects = "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth);
        assert!(python_reads(objects.as_bytes()));
        let unbalanced = "[".repeat(depth) + &"]".repeat(depth - 1) + "}";
        assert!(!python_reads(unbalanced.as_bytes()));
    }
}
