//! Located, human-readable input errors.
//!
//! Every problem found in a scenario file becomes an [`InputError`] that names
//! the file, the 1-based line and column, the dotted key path of the offending
//! value, what is wrong, what would be valid, and (for near misses) a
//! "did you mean" suggestion. Its [`Display`](fmt::Display) is rustc-like.

use std::fmt;

use annotate_snippets::{AnnotationKind, Element, Level, Origin, Renderer, Snippet};
use std::ops::Range;

/// The text of one scenario file, with the path as the user typed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: String,
    pub text: String,
    /// Other files' text written into this one (a machine file's table in
    /// place of `{ file = ... }`): a place inside one of them is shown in
    /// that file ([`Place::at`]).
    pub inlined: Vec<Inlined>,
}

/// Another file's text written into a [`SourceFile`]'s, as another text
/// (a machine file's `[machine]` table as an inline table), with the
/// pieces of the one that stand for pieces of the other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inlined {
    /// The file it came from.
    pub file: std::sync::Arc<SourceFile>,
    /// Where it is in the text it was written into.
    pub region: Range<usize>,
    /// Where the whole came from in `file` (the `[machine]` header).
    pub whole: Range<usize>,
    /// Each key and value written: its span in the text it was written
    /// into, and the span in `file` it stands for.
    pub pieces: Vec<(Range<usize>, Range<usize>)>,
}

impl Inlined {
    /// The span of `file` that a byte offset of the region stands for: the
    /// narrowest piece holding it, else the whole.
    fn origin_of(&self, offset: usize) -> Range<usize> {
        self.pieces
            .iter()
            .filter(|(at, _)| at.contains(&offset))
            .min_by_key(|(at, _)| at.len())
            .map_or(self.whole.clone(), |(_, from)| from.clone())
    }
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        SourceFile {
            path: path.into(),
            text: text.into(),
            inlined: Vec::new(),
        }
    }

    /// 1-based `(line, column)` of a byte offset; the column counts chars.
    ///
    /// Offsets past the end map to the end of the text; offsets inside a
    /// multi-byte char map to that char.
    pub fn line_col(&self, byte_offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, byte_offset);
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }

    /// The text of the line containing `byte_offset`, without its line ending.
    pub fn line_text(&self, byte_offset: usize) -> &str {
        let offset = floor_char_boundary(&self.text, byte_offset);
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        self.text[start..end].trim_end_matches('\r')
    }
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// An error in a scenario file, located at a line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The path of the file as the user typed it.
    pub file: String,
    /// 1-based line; 0 when the error is about the file as a whole (e.g. unreadable).
    pub line: usize,
    /// 1-based column in chars; 0 when `line` is 0.
    pub column: usize,
    /// Dotted key path of the offending value, e.g. `structs.counter.fields.value.align`;
    /// empty for errors not tied to a key (e.g. some TOML syntax errors).
    pub key: String,
    /// What is wrong.
    pub message: String,
    /// What would be valid (e.g. a list of allowed keys or values).
    pub valid: Option<String>,
    /// The valid choices closest to what was written, if close enough: one
    /// as a rule, several where a shortened name is the start of each
    /// equally (`dram` of `dram_cycles` and `dram_ns`).
    pub suggestions: Vec<String>,
    /// The source line the error points at, without its line ending.
    pub source_line: Option<String>,
    /// Number of chars to underline, starting at `column` (at least 1 when there is a source line).
    pub span_len: usize,
}

impl InputError {
    /// Build an error at a byte span of `source` (for errors found later by
    /// other crates, e.g. an unknown preset name).
    ///
    /// The span is clamped to the text; a span running over several lines is
    /// underlined to the end of its first line.
    pub fn at(
        source: &SourceFile,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> Self {
        let place = Place::at(source, span);
        InputError {
            file: place.file,
            line: place.line,
            column: place.column,
            key: key.to_string(),
            message: message.into(),
            valid: None,
            suggestions: Vec::new(),
            source_line: Some(place.source_line),
            span_len: place.span_len,
        }
    }

    /// An error about the file as a whole (line 0, no source line).
    pub fn whole_file(file: &str, message: impl Into<String>) -> Self {
        InputError {
            file: file.to_string(),
            line: 0,
            column: 0,
            key: String::new(),
            message: message.into(),
            valid: None,
            suggestions: Vec::new(),
            source_line: None,
            span_len: 0,
        }
    }

    pub fn with_valid(mut self, valid: impl Into<String>) -> Self {
        self.valid = Some(valid.into());
        self
    }

    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestions = vec![suggestion.into()];
        self
    }

    /// Sets `suggestions` to the nearest of `candidates` to `given`
    /// ([`nearest`]), and `valid` to the list (comma-separated, in the given order).
    /// An empty `candidates` sets `valid` to `(none)`.
    pub fn with_choices(mut self, given: &str, candidates: &[&str]) -> Self {
        self.valid = Some(if candidates.is_empty() {
            "(none)".to_string()
        } else {
            candidates.join(", ")
        });
        self.suggestions = nearest(given, candidates)
            .into_iter()
            .map(str::to_string)
            .collect();
        self
    }

    /// Whether the message already names the key (or, for an unknown or
    /// missing key, the table it is in), so `Display` need not repeat it.
    fn message_names_key(&self) -> bool {
        if self.key.is_empty() || self.message.contains(&format!("`{}`", self.key)) {
            return true;
        }
        match split_last_segment(&self.key) {
            Some((parent, last)) => {
                self.message.contains(&format!("`{last}`"))
                    && (parent.is_empty() || self.message.contains(&format!("`{parent}`")))
            }
            None => false,
        }
    }
}

/// Splits a dotted path at its last `.` that is not inside a quoted segment.
fn split_last_segment(key: &str) -> Option<(&str, &str)> {
    let mut in_quotes = false;
    let mut split = None;
    for (i, c) in key.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            '.' if !in_quotes => split = Some(i),
            _ => {}
        }
    }
    match split {
        Some(i) => Some((&key[..i], &key[i + 1..])),
        None => Some(("", key)),
    }
}

impl InputError {
    /// The report as text, rustc-like, laid out by `annotate-snippets`:
    /// `styled` adds ANSI colours (for a terminal; the binary decides, from
    /// `NO_COLOR` and whether standard error is a terminal), plain is what
    /// `Display` gives and what tests compare.
    pub fn render(&self, styled: bool) -> String {
        let title = if self.message_names_key() {
            self.message.clone()
        } else {
            format!("{} (in `{}`)", self.message, self.key)
        };
        let mut group = Level::ERROR
            .primary_title(title.as_str())
            .elements(None::<Element>);
        match &self.source_line {
            Some(src) if self.line > 0 => {
                let start = char_to_byte(src, self.column.saturating_sub(1));
                let end = char_to_byte(src, self.column.saturating_sub(1) + self.span_len.max(1));
                group = group.element(
                    Snippet::source(src.as_str())
                        .line_start(self.line)
                        .path(self.file.as_str())
                        .annotation(AnnotationKind::Primary.span(start..end.max(start))),
                );
            }
            _ if self.line > 0 => {
                group = group.element(
                    Origin::path(self.file.as_str())
                        .line(self.line)
                        .char_column(self.column),
                );
            }
            _ => group = group.element(Origin::path(self.file.as_str())),
        }
        if let Some(valid) = &self.valid {
            group = group.element(Level::NOTE.with_name(Some("valid")).message(valid.as_str()));
        }
        let help;
        if !self.suggestions.is_empty() {
            let names: Vec<String> = self.suggestions.iter().map(|s| format!("`{s}`")).collect();
            help = format!("did you mean {}?", names.join(" or "));
            group = group.element(Level::HELP.message(help.as_str()));
        }
        let renderer = if styled {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        renderer.render(&[group])
    }
}

/// A place in a text that a report points at: the file as shown, the
/// 1-based line and column (in chars), how many chars to underline, and the
/// text of the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// At least 1.
    pub span_len: usize,
    pub source_line: String,
}

impl Place {
    /// The place of a byte span of `source`. The span is clamped to the
    /// text; a span running over several lines is underlined to the end of
    /// its first line.
    /// A span inside text written in from another file is shown in that
    /// file, at the piece it stands for.
    pub fn at(source: &SourceFile, span: Range<usize>) -> Place {
        if let Some(inlined) = source
            .inlined
            .iter()
            .find(|i| i.region.contains(&span.start))
        {
            return Place::at(&inlined.file, inlined.origin_of(span.start));
        }
        let start = floor_char_boundary(&source.text, span.start);
        let end = floor_char_boundary(&source.text, span.end.max(start));
        let (line, column) = source.line_col(start);
        let line_end = source.text[start..]
            .find('\n')
            .map_or(source.text.len(), |i| start + i);
        let underlined = &source.text[start..end.min(line_end)];
        Place {
            file: source.path.clone(),
            line,
            column,
            span_len: underlined.trim_end_matches('\r').chars().count().max(1),
            source_line: source.line_text(start).to_string(),
        }
    }

    /// `file:line:column`, as the report's `-->` line shows it.
    pub fn location(&self) -> String {
        format!("{}:{}:{}", self.file, self.line, self.column)
    }

    fn snippet<'a>(
        &'a self,
        kind: AnnotationKind,
        label: Option<&'a str>,
    ) -> Snippet<'a, annotate_snippets::Annotation<'a>> {
        let start = char_to_byte(&self.source_line, self.column.saturating_sub(1));
        let end = char_to_byte(
            &self.source_line,
            self.column.saturating_sub(1) + self.span_len.max(1),
        );
        Snippet::source(self.source_line.as_str())
            .line_start(self.line)
            .path(self.file.as_str())
            .annotation(kind.span(start..end.max(start)).label(label))
    }
}

/// An error that points at several places, laid out as [`InputError`]'s
/// report is: a run-time error of a script, where it happened (the first
/// place, underlined with `^`) and then the calls it was inside or the
/// other CPUs' places (underlined with `-`), each place's line quoted,
/// each with its label, and notes after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub title: String,
    /// The first is the primary place.
    pub places: Vec<(Place, Option<String>)>,
    pub notes: Vec<String>,
}

impl Report {
    /// The report as text, as [`InputError::render`] lays it out; `styled`
    /// adds ANSI colours.
    pub fn render(&self, styled: bool) -> String {
        let mut group = Level::ERROR
            .primary_title(self.title.as_str())
            .elements(None::<Element>);
        for (k, (place, label)) in self.places.iter().enumerate() {
            let kind = if k == 0 {
                AnnotationKind::Primary
            } else {
                AnnotationKind::Context
            };
            group = group.element(place.snippet(kind, label.as_deref()));
        }
        for note in &self.notes {
            group = group.element(Level::NOTE.message(note.as_str()));
        }
        let renderer = if styled {
            Renderer::styled()
        } else {
            Renderer::plain()
        };
        renderer.render(&[group])
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}

/// The byte offset of the `chars`-th char of `text` (its length past the end).
fn char_to_byte(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(false))
    }
}

impl std::error::Error for InputError {}

/// The candidate closest to `given` by Damerau-Levenshtein distance, if it is
/// close enough to be a plausible typo (distance at most a third of the length,
/// at least 1), or equal ignoring ASCII case. Ties go to the higher
/// Jaro-Winkler similarity, then to the earliest candidate. Failing that,
/// the one candidate (if only one) that holds `given` (3 characters or more,
/// ignoring ASCII case) at its start or after a `-`, `_`, `.` or `:`: a
/// shortened name, such as `icelake` or `milan` for a preset.
pub fn closest<'a>(given: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if given.is_empty() {
        return None;
    }
    if let Some(c) = candidates.iter().find(|c| c.eq_ignore_ascii_case(given)) {
        return Some(c);
    }
    let limit = (given.chars().count() / 3).max(1);
    let mut best: Option<(usize, f64, &'a str)> = None;
    for &c in candidates {
        let distance = strsim::damerau_levenshtein(given, c);
        if distance > limit {
            continue;
        }
        let similarity = strsim::jaro_winkler(given, c);
        let better = match best {
            None => true,
            Some((d, s, _)) => distance < d || (distance == d && similarity > s),
        };
        if better {
            best = Some((distance, similarity, c));
        }
    }
    best.map(|(_, _, c)| c)
        .or_else(|| match shortenings(given, candidates)[..] {
            [only] => Some(only),
            _ => None,
        })
}

/// The candidates `given` is a shortening of ([`closest`]): those holding
/// it (3 characters or more, ignoring ASCII case) at their start or after a
/// `-`, `_`, `.` or `:`.
fn shortenings<'a>(given: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    if given.chars().count() < 3 {
        return Vec::new();
    }
    let given = given.to_ascii_lowercase();
    let holds = |c: &str| {
        let c = c.to_ascii_lowercase();
        c.match_indices(&given)
            .any(|(at, _)| at == 0 || c[..at].ends_with(['-', '_', '.', ':']))
    };
    candidates.iter().copied().filter(|c| holds(c)).collect()
}

/// Most shortenings a suggestion lists ([`nearest`]): more would be the
/// `valid` list again.
const MOST_SHORTENINGS_SUGGESTED: usize = 3;

/// What to suggest for `given` among `candidates`: the [`closest`] one, or,
/// where no single one is closest, every candidate it is a shortening of,
/// if there are at most three (`dram`: `dram_cycles`
/// or `dram_ns`).
pub fn nearest<'a>(given: &str, candidates: &[&'a str]) -> Vec<&'a str> {
    if let Some(c) = closest(given, candidates) {
        return vec![c];
    }
    let held = shortenings(given, candidates);
    if held.len() <= MOST_SHORTENINGS_SUGGESTED {
        held
    } else {
        Vec::new()
    }
}

/// Marker that starts a custom serde error message built by [`de_custom`].
const CUSTOM_MARK: char = '\u{1}';
/// Separates the message from the `valid` text in a custom serde error.
const CUSTOM_SEP: char = '\u{1f}';

/// A serde error from one of this crate's own `Deserialize` impls, carrying a
/// message (where `{key}` is replaced by the dotted key path) and a `valid` text.
pub(crate) fn de_custom<E: serde::de::Error>(message: &str, valid: &str) -> E {
    E::custom(format!("{CUSTOM_MARK}{message}{CUSTOM_SEP}{valid}"))
}

/// Undo [`de_custom`]: `(message template, valid)`.
pub(crate) fn parse_custom(message: &str) -> Option<(&str, &str)> {
    message.strip_prefix(CUSTOM_MARK)?.split_once(CUSTOM_SEP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_chars() {
        let src = SourceFile::new("f.toml", "a = 1\nbé = \"x\"\n");
        assert_eq!(src.line_col(0), (1, 1));
        assert_eq!(src.line_col(4), (1, 5));
        assert_eq!(src.line_col(6), (2, 1));
        // `=` after the two-byte `é`
        assert_eq!(src.line_col(10), (2, 4));
        // inside `é`
        assert_eq!(src.line_col(8), (2, 2));
        assert_eq!(src.line_col(1000), (3, 1));
    }

    #[test]
    fn display_matches_rustc_style() {
        let text =
            "[structs.counter]\nfields = [\n    { name = \"b\", type = \"u64\", alig = 64 },\n]\n";
        let src = SourceFile::new("scenarios/shipped/false-sharing.toml", text);
        let start = text.find("alig").unwrap();
        let err = InputError::at(
            &src,
            start..start + 4,
            "structs.counter.fields.b.alig",
            "unknown key `alig` in `structs.counter.fields.b`",
        )
        .with_choices(
            "alig",
            &["name", "type", "size", "align", "offset", "count"],
        );
        assert_eq!(
            err.to_string(),
            "\
error: unknown key `alig` in `structs.counter.fields.b`
 --> scenarios/shipped/false-sharing.toml:3:33
  |
3 |     { name = \"b\", type = \"u64\", alig = 64 },
  |                                 ^^^^
  |
  = valid: name, type, size, align, offset, count
  = help: did you mean `align`?"
        );
    }

    #[test]
    fn display_appends_key_when_message_lacks_it() {
        let src = SourceFile::new("m.toml", "machine = \"icelake\"\n");
        let err = InputError::at(&src, 10..19, "machine", "unknown machine preset `icelake`")
            .with_choices("icelake", &["icelake-sp-2s", "zen4-1s"]);
        assert_eq!(
            err.to_string(),
            "\
error: unknown machine preset `icelake` (in `machine`)
 --> m.toml:1:11
  |
1 | machine = \"icelake\"
  |           ^^^^^^^^^
  |
  = valid: icelake-sp-2s, zen4-1s
  = help: did you mean `icelake-sp-2s`?"
        );
    }

    #[test]
    fn styled_report_is_the_plain_one_with_colours() {
        let src = SourceFile::new("m.toml", "machine = \"icelake\"\n");
        let err = InputError::at(&src, 10..19, "machine", "unknown machine preset `icelake`")
            .with_choices("icelake", &["icelake-sp-2s", "zen4-1s"]);
        let styled = err.render(true);
        let plain = err.render(false);
        assert!(styled.contains("\u{1b}["), "{styled:?}");
        assert!(!plain.contains('\u{1b}'), "{plain:?}");
        // Taking the escape sequences out leaves the plain text.
        let mut stripped = String::new();
        let mut rest = styled.as_str();
        while let Some(i) = rest.find('\u{1b}') {
            stripped.push_str(&rest[..i]);
            let after = &rest[i..];
            let end = after.find('m').expect("an SGR sequence ends in `m`");
            rest = &after[end + 1..];
        }
        stripped.push_str(rest);
        assert_eq!(stripped, plain);
        assert_eq!(err.to_string(), plain);
    }

    #[test]
    fn whole_file_error() {
        let err = InputError::whole_file("x.toml", "cannot read `x.toml`: gone");
        assert_eq!(
            err.to_string(),
            "error: cannot read `x.toml`: gone\n--> x.toml"
        );
    }

    /// A shortening that starts several names equally suggests them all,
    /// up to a few; one closest name is suggested alone.
    #[test]
    fn nearest_lists_the_names_a_shortening_starts_equally() {
        let legs = ["dram_cycles", "l3_hit_cycles", "dram_ns", "l3_hit_ns"];
        assert_eq!(nearest("dram", &legs), ["dram_cycles", "dram_ns"]);
        assert_eq!(closest("dram", &legs), None);
        assert_eq!(nearest("dram_cycle", &legs), ["dram_cycles"]);
        assert!(nearest("zz", &legs).is_empty());
        let many = ["hop_a", "hop_b", "hop_c", "hop_d"];
        assert!(
            nearest("hop", &many).is_empty(),
            "four is the valid list again"
        );
    }

    #[test]
    fn closest_candidates() {
        assert_eq!(closest("alig", &["name", "align"]), Some("align"));
        assert_eq!(closest("mesix", &["mesi", "mesif", "moesi"]), Some("mesi"));
        assert_eq!(closest("mosi", &["mesi", "mesif", "moesi"]), Some("moesi"));
        assert_eq!(closest("zzzz", &["name", "align"]), None);
        assert_eq!(closest("", &["a"]), None);
        assert_eq!(closest("NAME", &["name"]), Some("name"));
        // A shortened name, when only one candidate holds it.
        let presets = [
            "icelake-sp-2s",
            "epyc-milan-2s",
            "epyc-genoa-1s",
            "epyc-genoa-2s",
        ];
        assert_eq!(closest("icelake", &presets), Some("icelake-sp-2s"));
        assert_eq!(closest("Milan", &presets), Some("epyc-milan-2s"));
        assert_eq!(closest("genoa", &presets), None);
        assert_eq!(closest("lake", &presets), None);
        assert_eq!(closest("ic", &presets), None);
    }
}
