//! Walking the spanned TOML tree: dotted key paths, locating spans.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The name by which an element of an array of tables is addressed: its
/// `name` string, or else its `script` string (thread groups default their
/// name to their script).
pub(crate) fn element_name<'a>(value: &'a DeValue<'_>) -> Option<&'a str> {
    let table = value.as_table()?;
    for key in ["name", "script"] {
        if let Some(v) = table.get(key) {
            return v.get_ref().as_str();
        }
    }
    None
}

/// The path segment for element `index` of `array`: its name, or the index.
pub(crate) fn element_segment(array: &[Spanned<DeValue<'_>>], index: usize) -> String {
    array
        .get(index)
        .and_then(|e| element_name(e.get_ref()))
        .map_or_else(|| index.to_string(), str::to_string)
}

/// Index of the element of `array` addressed by `segment`: the first element
/// whose name equals it, or else the element at that numeric index.
pub(crate) fn find_element(array: &[Spanned<DeValue<'_>>], segment: &str) -> Option<usize> {
    array
        .iter()
        .position(|e| element_name(e.get_ref()) == Some(segment))
        .or_else(|| segment.parse::<usize>().ok().filter(|i| *i < array.len()))
}

/// Whether a segment can be written bare in a dotted path.
fn is_bare(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Joins path segments with `.`, quoting segments that are not bare keys.
pub(crate) fn join_path<S: AsRef<str>>(segments: &[S]) -> String {
    let mut out = String::new();
    for (i, s) in segments.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        let s = s.as_ref();
        if is_bare(s) {
            out.push_str(s);
        } else {
            out.push_str(&format!("{s:?}"));
        }
    }
    out
}

/// `(what, with article)` for a TOML value's type, e.g. `"an integer"`.
pub(crate) fn type_phrase(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The node of the tree an error span belongs to.
pub(crate) struct Located<'a, 'i> {
    /// Path segments of the node (empty: the root table).
    pub path: Vec<String>,
    /// The node's value (`None` for the root).
    pub value: Option<&'a DeValue<'i>>,
    /// Whether the span lies on the node's key rather than its value.
    pub on_key: bool,
}

/// Finds the deepest key or value whose span contains `span` (ties: the
/// smallest span). The root table's own span (`root_span`) and spans
/// matching nothing locate the root.
pub(crate) fn locate<'a, 'i>(
    root: &'a DeTable<'i>,
    root_span: &Range<usize>,
    span: &Range<usize>,
) -> Located<'a, 'i> {
    let mut best: Option<Candidate<'a, 'i>> = None;
    let mut path = Vec::new();
    if span != root_span {
        walk_table(root, span, &mut path, &mut best);
    }
    match best {
        Some(c) => Located {
            path: c.path,
            value: Some(c.value),
            on_key: c.on_key,
        },
        None => Located {
            path: Vec::new(),
            value: None,
            on_key: false,
        },
    }
}

struct Candidate<'a, 'i> {
    depth: usize,
    len: usize,
    path: Vec<String>,
    value: &'a DeValue<'i>,
    on_key: bool,
}

fn contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

fn offer<'a, 'i>(
    best: &mut Option<Candidate<'a, 'i>>,
    path: &[String],
    node_span: Range<usize>,
    span: &Range<usize>,
    value: &'a DeValue<'i>,
    on_key: bool,
) {
    if !contains(&node_span, span) {
        return;
    }
    let depth = path.len();
    let len = node_span.len();
    let better = match best {
        None => true,
        Some(b) => depth > b.depth || (depth == b.depth && len < b.len),
    };
    if better {
        *best = Some(Candidate {
            depth,
            len,
            path: path.to_vec(),
            value,
            on_key,
        });
    }
}

fn walk_table<'a, 'i>(
    table: &'a DeTable<'i>,
    span: &Range<usize>,
    path: &mut Vec<String>,
    best: &mut Option<Candidate<'a, 'i>>,
) {
    for (key, value) in table.iter() {
        path.push(key.get_ref().to_string());
        offer(best, path, key.span(), span, value.get_ref(), true);
        walk_value(value, span, path, best);
        path.pop();
    }
}

fn walk_value<'a, 'i>(
    value: &'a Spanned<DeValue<'i>>,
    span: &Range<usize>,
    path: &mut Vec<String>,
    best: &mut Option<Candidate<'a, 'i>>,
) {
    offer(best, path, value.span(), span, value.get_ref(), false);
    match value.get_ref() {
        DeValue::Table(t) => walk_table(t, span, path, best),
        DeValue::Array(a) => {
            for i in 0..a.len() {
                path.push(element_segment(a, i));
                walk_value(&a[i], span, path, best);
                path.pop();
            }
        }
        _ => {}
    }
}

/// Looks up a node by path: `(key span, value)`. For array elements the key
/// span is the element's span.
pub(crate) fn lookup<'a, 'i>(
    root: &'a DeTable<'i>,
    path: &[&str],
) -> Option<(Range<usize>, &'a Spanned<DeValue<'i>>)> {
    let (first, rest) = path.split_first()?;
    let (key, mut value) = root.get_key_value(*first)?;
    let mut key_span = key.span();
    for segment in rest {
        match value.get_ref() {
            DeValue::Table(t) => {
                let (k, v) = t.get_key_value(*segment)?;
                key_span = k.span();
                value = v;
            }
            DeValue::Array(a) => {
                value = &a[find_element(a, segment)?];
                key_span = value.span();
            }
            _ => return None,
        }
    }
    Some((key_span, value))
}
