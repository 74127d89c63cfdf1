//! Reading pahole's text output (`pahole -C NAME vmlinux`, optionally with
//! `-E` to expand nested types) into struct specs, and checking what it
//! lists against the C layout rules of [`crate::layout`].
//!
//! Understood: `struct NAME {` / `union NAME {` listings, members with
//! `/* offset size */` (decimal or `0x` hex), arrays, bitfields (`:N` with
//! `/* offset: bit size */`), function pointers, `__attribute__((__aligned__(N)))`
//! on members and on the closing brace, nested structs and unions expanded
//! inline (named or anonymous), members whose type is another struct of the
//! same text, the `/* XXX N bytes hole */`, `/* --- cacheline N boundary (B
//! bytes) --- */`, `/* size: S, cachelines: C, members: M */`, `/* padding:
//! N */` comments; other comments are ignored. Every listed number is
//! checked: member offsets against where C would put the member, holes,
//! boundaries, padding and the size against the listing itself.
//!
//! Errors carry the 1-based line of the text and say what was expected; no
//! input panics.

use crate::layout::{
    c_type, layout_structs, BitField, FieldSpec, FieldType, LaidOutStruct, StructSpec,
};
use std::fmt;

/// A problem in a pahole listing, at a line of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaholeError {
    /// 1-based; 0 for the text as a whole.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for PaholeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for PaholeError {}

fn fail<T>(line: usize, message: impl Into<String>) -> Result<T, PaholeError> {
    Err(PaholeError {
        line,
        message: message.into(),
    })
}

/// Listings deeper than this are refused (pahole never nests so deep).
pub const MAX_DEPTH: usize = 32;
/// Largest offset or size read from a listing.
const MAX_BYTES: u64 = 1 << 20;

/// One member as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedMember {
    pub line: usize,
    pub name: String,
    pub anonymous: bool,
    /// The type as written, without the declarator.
    pub type_name: String,
    /// As listed (absolute within the outermost struct, or relative to the
    /// nested struct, as older pahole lists them; `base_of` tells which).
    pub offset: u32,
    /// Bytes of the whole member (all elements).
    pub size: u32,
    pub count: u32,
    pub bit_field: Option<BitField>,
    pub align: Option<u32>,
    pub nested: Option<Box<ListedStruct>>,
}

/// One struct or union as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedStruct {
    pub line: usize,
    pub name: String,
    pub is_union: bool,
    pub members: Vec<ListedMember>,
    pub align: Option<u32>,
    /// The footer's size, cache lines and member count, with its line.
    pub footer: Option<(usize, u32, u32, u32)>,
    /// `/* padding: N */`, with its line.
    pub padding: Option<(usize, u32)>,
    /// `/* XXX N bytes hole */` comments: line, bytes, and the index of the
    /// member they come before.
    pub holes: Vec<(usize, u32, usize)>,
    /// Cache-line boundary comments: line, boundary in bytes, and the index
    /// of the member they come before.
    pub boundaries: Vec<(usize, u32, usize)>,
}

/// Every struct listed in `text`, top level only, in order.
pub fn parse(text: &str) -> Result<Vec<ListedStruct>, PaholeError> {
    let mut parser = Parser {
        lines: text.lines().enumerate().map(|(i, l)| (i + 1, l)).collect(),
        at: 0,
    };
    let mut out = Vec::new();
    while let Some((number, line)) = parser.next_line() {
        // A comment over several lines (a note above a listing).
        if line.trim_start().starts_with("/*") && !line.contains("*/") {
            loop {
                match parser.next_line() {
                    Some((_, l)) if l.contains("*/") => break,
                    Some(_) => {}
                    None => return fail(number, "a comment that is never closed with `*/`"),
                }
            }
            continue;
        }
        let t = strip_comment_line(line);
        if t.is_empty() {
            continue;
        }
        match opener(t) {
            Some((is_union, Some(name))) => {
                let s = parser.body(number, name.to_string(), is_union, 1)?;
                out.push(s);
            }
            _ => {
                return fail(
                    number,
                    format!(
                    "expected `struct NAME {{` or `union NAME {{` (a pahole listing), found `{}`",
                    shorten(line.trim())
                ),
                )
            }
        }
    }
    if out.is_empty() {
        return fail(0, "no `struct NAME {` listing in the text");
    }
    Ok(out)
}

/// A comment-only line is empty; anything else is returned trimmed.
fn strip_comment_line(line: &str) -> &str {
    let t = line.trim();
    if t.starts_with("/*") && t.ends_with("*/") {
        return "";
    }
    t
}

/// The token at fault in `s` for a message: its first word, cut to 24
/// characters. A listing is data (a scenario may name any file), so an
/// error quotes no more of it than that.
fn shorten(s: &str) -> String {
    let word = s.split_whitespace().next().unwrap_or("");
    if word.chars().count() > 24 {
        let mut t: String = word.chars().take(21).collect();
        t.push_str("...");
        t
    } else {
        word.to_string()
    }
}

/// The last word of a declaration (the member's name), cut as [`shorten`].
fn last_word(s: &str) -> String {
    shorten(s.split_whitespace().last().unwrap_or(""))
}

/// `struct NAME {`, `union {`, ...: whether a union, and the name if any.
fn opener(t: &str) -> Option<(bool, Option<&str>)> {
    let body = t.strip_suffix('{')?.trim();
    let (is_union, rest) = if let Some(r) = body.strip_prefix("struct") {
        (false, r)
    } else if let Some(r) = body.strip_prefix("union") {
        (true, r)
    } else {
        return None;
    };
    let rest = rest.trim();
    if rest.is_empty() {
        return Some((is_union, None));
    }
    if rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !rest.starts_with(|c: char| c.is_ascii_digit())
        && body.len() > rest.len()
        && body[..body.len() - rest.len()].ends_with(char::is_whitespace)
    {
        return Some((is_union, Some(rest)));
    }
    None
}

struct Parser<'a> {
    lines: Vec<(usize, &'a str)>,
    at: usize,
}

impl<'a> Parser<'a> {
    fn next_line(&mut self) -> Option<(usize, &'a str)> {
        let l = self.lines.get(self.at).copied();
        self.at += 1;
        l
    }

    /// The members up to the closing brace of a struct opened at `open`.
    fn body(
        &mut self,
        open: usize,
        name: String,
        is_union: bool,
        depth: usize,
    ) -> Result<ListedStruct, PaholeError> {
        if depth > MAX_DEPTH {
            return fail(open, format!("structs nest more than {MAX_DEPTH} deep"));
        }
        let mut s = ListedStruct {
            line: open,
            name,
            is_union,
            members: Vec::new(),
            align: None,
            footer: None,
            padding: None,
            holes: Vec::new(),
            boundaries: Vec::new(),
        };
        while let Some((number, line)) = self.next_line() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if t.starts_with("/*") {
                self.comment(&mut s, number, t)?;
                continue;
            }
            if let Some(after_brace) = t.strip_prefix('}') {
                if depth == 1 {
                    let rest = after_brace.trim();
                    let rest = rest.strip_suffix(';').unwrap_or(rest).trim();
                    let (rest, align) = take_aligned(rest, number)?;
                    if !rest.trim().is_empty() {
                        return fail(
                            number,
                            format!(
                                "expected `}};` closing `{} {}` (line {open}), found `{}`",
                                if s.is_union { "union" } else { "struct" },
                                s.name,
                                shorten(t)
                            ),
                        );
                    }
                    s.align = align;
                    return Ok(s);
                }
                // The caller reads the declarator on this line.
                self.at -= 1;
                return Ok(s);
            }
            if let Some((inner_union, inner_name)) = opener(t) {
                let inner = self.body(
                    number,
                    inner_name.unwrap_or("").to_string(),
                    inner_union,
                    depth + 1,
                )?;
                let Some((close, close_line)) = self.next_line() else {
                    return fail(number, "the nested struct is never closed with `} NAME;`");
                };
                let member = member_line(close_line.trim(), close, Some(inner))?;
                s.members.push(member);
                continue;
            }
            if t == "[...]" || t == "..." {
                return fail(
                    number,
                    "the listing elides members (`[...]`); import the complete output of \
                     `pahole -C NAME`",
                );
            }
            s.members.push(member_line(t, number, None)?);
        }
        fail(
            open,
            format!(
                "`{} {}` is never closed with `}};`",
                if is_union { "union" } else { "struct" },
                s.name
            ),
        )
    }

    /// A comment line inside a struct: the ones that carry numbers are
    /// recorded; others are notes and skipped.
    fn comment(&mut self, s: &mut ListedStruct, number: usize, t: &str) -> Result<(), PaholeError> {
        let Some(inner) = t.strip_prefix("/*").and_then(|r| r.strip_suffix("*/")) else {
            return fail(
                number,
                "a comment that does not end on its line; pahole writes `/* ... */` on one line",
            );
        };
        let inner = inner.trim();
        let next = s.members.len();
        if let Some(rest) = inner.strip_prefix("XXX ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if words.len() >= 3 && words[2].trim_end_matches(',') == "hole" {
                let n = number_at(words[0], number, "the hole's size")?;
                match words[1] {
                    "bytes" | "byte" => s.holes.push((number, n, next)),
                    "bits" | "bit" => {}
                    other => {
                        return fail(
                            number,
                            format!(
                                "expected `bytes` or `bits` in a hole comment, found `{other}`"
                            ),
                        )
                    }
                }
            }
            return Ok(());
        }
        if let Some(rest) = inner.strip_prefix("--- cacheline ") {
            // `N boundary (B bytes) ---` or `... was K bytes ago ---`.
            let words: Vec<&str> = rest.split_whitespace().collect();
            if words.len() < 4 || words[1] != "boundary" || !words[2].starts_with('(') {
                return fail(
                    number,
                    "expected `/* --- cacheline N boundary (B bytes) --- */`",
                );
            }
            let line_index = number_at(words[0], number, "the cache line number")?;
            let bytes = number_at(words[2].trim_start_matches('('), number, "the boundary")?;
            if line_index == 0 || bytes % line_index != 0 {
                return fail(
                    number,
                    format!("cacheline {line_index} cannot start at byte {bytes}"),
                );
            }
            s.boundaries.push((number, bytes, next));
            return Ok(());
        }
        if let Some(rest) = inner.strip_prefix("size:") {
            // `S, cachelines: C, members: M` (pahole may add more after).
            let mut size = None;
            let mut lines = None;
            let mut members = None;
            let first = rest.split(',').next().unwrap_or("").trim();
            size = size.or(Some(number_at(first, number, "the size")?));
            for part in rest.split(',').skip(1) {
                let part = part.trim();
                if let Some(v) = part.strip_prefix("cachelines:") {
                    lines = Some(number_at(v.trim(), number, "the cache lines")?);
                } else if let Some(v) = part.strip_prefix("members:") {
                    members = Some(number_at(v.trim(), number, "the member count")?);
                }
            }
            match (size, lines, members) {
                (Some(a), Some(b), Some(c)) => s.footer = Some((number, a, b, c)),
                _ => {
                    return fail(
                        number,
                        "expected `/* size: S, cachelines: C, members: M */`",
                    )
                }
            }
            return Ok(());
        }
        if let Some(rest) = inner.strip_prefix("padding:") {
            s.padding = Some((number, number_at(rest.trim(), number, "the padding")?));
        }
        Ok(())
    }
}

/// A decimal or `0x` hex number, at most [`MAX_BYTES`].
fn number_at(text: &str, line: usize, what: &str) -> Result<u32, PaholeError> {
    let text = text.trim();
    let value = if let Some(hex) = text.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>().ok()
    } else {
        None
    };
    match value {
        Some(v) if v <= MAX_BYTES => Ok(v as u32),
        Some(v) => fail(line, format!("{what} {v} is larger than {MAX_BYTES}")),
        None => fail(
            line,
            format!("expected a number for {what}, found `{}`", shorten(text)),
        ),
    }
}

/// Removes `__attribute__((__aligned__(N)))` from a declaration.
fn take_aligned(text: &str, line: usize) -> Result<(String, Option<u32>), PaholeError> {
    const ATTR: &str = "__attribute__((__aligned__(";
    let Some(at) = text.find(ATTR) else {
        return Ok((text.to_string(), None));
    };
    let after = &text[at + ATTR.len()..];
    let Some(close) = after.find(")))") else {
        return fail(line, "expected `__attribute__((__aligned__(N)))`");
    };
    let n = number_at(&after[..close], line, "the alignment")?;
    if !n.is_power_of_two() {
        return fail(line, format!("alignment {n} is not a power of two"));
    }
    let rest = format!("{}{}", &text[..at], &after[close + 3..]);
    Ok((rest.trim().to_string(), Some(n)))
}

/// `TYPE NAME[N]:B;  /* OFF SIZE */` or, closing a nested struct,
/// `} NAME;  /* OFF SIZE */`. The line's parts are read by functions in
/// the line's order; what is left here is their checks against each
/// other, each a few lines with its own message.
fn member_line(
    t: &str,
    number: usize,
    nested: Option<ListedStruct>,
) -> Result<ListedMember, PaholeError> {
    let expected = if nested.is_some() {
        "`} NAME; /* offset size */` closing the nested struct"
    } else {
        "a member `TYPE NAME; /* offset size */`"
    };
    let unexpected = || {
        fail(
            number,
            format!("expected {expected}, found `{}`", shorten(t)),
        )
    };
    let Some(semicolon) = t.find(';') else {
        return unexpected();
    };
    // A function pointer's parameters may hold `;`-free text with commas;
    // the declaration ends at the first `;` all the same.
    let decl = t[..semicolon].trim();
    let comment = t[semicolon + 1..].trim();
    let Some(position) = comment
        .strip_prefix("/*")
        .and_then(|c| c.split("*/").next())
        .map(str::trim)
    else {
        return fail(
            number,
            format!(
                "expected `/* offset size */` after `{}`, found `{}`",
                last_word(decl),
                shorten(comment)
            ),
        );
    };
    let (decl, align) = take_aligned(decl, number)?;
    let (offset, bit_offset, size) = listed_position(position, number)?;

    let mut decl = decl.as_str();
    if nested.is_some() {
        decl = match decl.strip_prefix('}') {
            Some(d) => d.trim(),
            None => return unexpected(),
        };
    }
    let Some((type_name, declarator)) = type_and_declarator(decl, nested.is_some()) else {
        return unexpected();
    };
    let (name, count, bits) = declarator_parts(&declarator, number)?;
    let anonymous = nested.is_some() && name.is_empty();
    if !anonymous
        && (name.is_empty()
            || name.starts_with(|c: char| c.is_ascii_digit())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    {
        return fail(
            number,
            format!(
                "expected a member name (an identifier), found `{}`",
                shorten(&name)
            ),
        );
    }
    if count == 0 {
        return fail(
            number,
            format!("`{name}` is a flexible or zero-length array, which takes no room and cannot be simulated; leave it out"),
        );
    }
    if type_name.is_empty() && nested.is_none() {
        return fail(number, format!("expected a type before `{name}`"));
    }
    let bit_field = match (bits, bit_offset) {
        (Some(bits), Some(bit_offset)) => Some(BitField { bit_offset, bits }),
        (Some(_), None) => {
            return fail(
                number,
                format!("bitfield `{name}` needs `/* offset: bit size */`"),
            )
        }
        (None, Some(_)) => {
            return fail(
                number,
                format!("`{name}` is no bitfield (no `:N`) but is listed at a bit offset"),
            )
        }
        (None, None) => None,
    };
    if bit_field.is_none() && size % count != 0 {
        return fail(
            number,
            format!("`{name}`: {size} bytes do not divide into {count} elements"),
        );
    }
    let type_name = match &nested {
        Some(n) => format!(
            "{}{}",
            if n.is_union { "union" } else { "struct" },
            if n.name.is_empty() {
                String::new()
            } else {
                format!(" {}", n.name)
            }
        ),
        None => type_name,
    };
    Ok(ListedMember {
        line: number,
        name,
        anonymous,
        type_name,
        offset,
        size,
        count,
        bit_field,
        align,
        nested: nested.map(Box::new),
    })
}

/// A declaration split into its type and its declarator: NAME, NAME[N],
/// NAME:B, or (*NAME)(...) for a function pointer (whose type is then
/// `TYPE *`); closing a nested struct, the declarator alone. `None` when
/// nothing separates a type from a name.
fn type_and_declarator(decl: &str, closes_nested: bool) -> Option<(String, String)> {
    if let Some(open) = decl.find("(*") {
        let after = &decl[open + 2..];
        let end = after.find(')').unwrap_or(after.len());
        Some((
            format!("{} *", decl[..open].trim()),
            after[..end].trim().to_string(),
        ))
    } else if closes_nested {
        Some((String::new(), decl.to_string()))
    } else {
        let split = decl
            .char_indices()
            .rev()
            .find(|&(_, c)| c.is_whitespace() || c == '*')
            .map(|(i, c)| i + c.len_utf8())?;
        Some((
            decl[..split].trim().to_string(),
            decl[split..].trim().to_string(),
        ))
    }
}

/// The comment's `OFF SIZE`, with `:BIT` after the offset for a bitfield
/// (`126: 0  1` or `126:0 1`): offset, bit offset and size.
fn listed_position(position: &str, number: usize) -> Result<(u32, Option<u32>, u32), PaholeError> {
    // Offset (with `:bit` for a bitfield), then size.
    let (offset_text, rest) = match position.split_once(char::is_whitespace) {
        Some((a, b)) => (a, b.trim()),
        None => (position, ""),
    };
    let (offset, bit_offset, size_text) = if let Some(o) = offset_text.strip_suffix(':') {
        // `126: 0  1`
        let (bit, size) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        (o, Some(bit), size.trim())
    } else if let Some((o, bit)) = offset_text.split_once(':') {
        // `126:0 1`
        (o, Some(bit), rest)
    } else {
        (offset_text, None, rest)
    };
    let offset = number_at(offset, number, "the offset")?;
    let size = number_at(size_text, number, "the size")?;
    let bit_offset = bit_offset
        .map(|b| number_at(b, number, "the bit offset"))
        .transpose()?;
    Ok((offset, bit_offset, size))
}

/// A declarator's name, element count (0 for `NAME[]`) and bitfield
/// width: `NAME`, `NAME[N]` or `NAME:B`.
fn declarator_parts(
    declarator: &str,
    number: usize,
) -> Result<(String, u32, Option<u32>), PaholeError> {
    let (declarator, bits) = match declarator.split_once(':') {
        Some((d, b)) => (
            d.trim().to_string(),
            Some(number_at(b, number, "the bitfield width")?),
        ),
        None => (declarator.to_string(), None),
    };
    let (name, count) = match declarator.split_once('[') {
        Some((n, rest)) => {
            let Some(inner) = rest.strip_suffix(']') else {
                return fail(number, format!("expected `NAME[N]`, found `{declarator}`"));
            };
            if inner.contains('[') {
                return fail(
                    number,
                    format!(
                        "`{declarator}`: arrays of arrays are not supported; list it as one array"
                    ),
                );
            }
            let count = if inner.trim().is_empty() {
                0
            } else {
                number_at(inner, number, "the array length")?
            };
            (n.trim().to_string(), count)
        }
        None => (declarator.trim().to_string(), 1),
    };
    Ok((name, count, bits))
}

/// Builds the struct `name` of a listing as a [`StructSpec`] named
/// `spec_name`, with every offset as listed, after checking the listing
/// against itself and against the C layout rules.
pub fn import(text: &str, name: &str, spec_name: &str) -> Result<StructSpec, PaholeError> {
    import_listed(&parse(text)?, name, spec_name)
}

/// [`import`] from a listing already parsed, so that a listing several
/// structs import from is parsed once.
pub fn import_listed(
    listed: &[ListedStruct],
    name: &str,
    spec_name: &str,
) -> Result<StructSpec, PaholeError> {
    let Some(top) = listed.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = listed.iter().map(|s| s.name.as_str()).collect();
        return fail(
            0,
            format!(
                "no `struct {name}` in the listing; it has {}",
                names.join(", ")
            ),
        );
    };
    let mut spec = to_spec(top, listed, 0, 0)?;
    spec.name = spec_name.to_string();
    check(top, &spec, listed)?;
    Ok(spec)
}

/// Names of the structs a listing has, for messages.
pub fn struct_names(text: &str) -> Vec<String> {
    parse(text)
        .map(|l| l.into_iter().map(|s| s.name).collect())
        .unwrap_or_default()
}

/// Whether a nested struct's members were listed relative to it (older
/// pahole) rather than to the outermost struct: its first member is at 0
/// while the struct itself is not.
fn base_of(s: &ListedStruct, own_offset: u32) -> u32 {
    match s.members.first() {
        Some(m) if m.offset == own_offset => own_offset,
        _ => 0,
    }
}

fn to_spec(
    s: &ListedStruct,
    listed: &[ListedStruct],
    listed_base: u32,
    depth: usize,
) -> Result<StructSpec, PaholeError> {
    if depth > MAX_DEPTH {
        return fail(s.line, format!("structs nest more than {MAX_DEPTH} deep"));
    }
    let mut fields = Vec::new();
    for m in &s.members {
        let Some(relative) = m.offset.checked_sub(listed_base) else {
            return fail(
                m.line,
                format!(
                    "`{}` is listed at {} but its struct starts at {listed_base}",
                    m.name, m.offset
                ),
            );
        };
        let element = if m.bit_field.is_some() {
            m.size
        } else {
            m.size / m.count.max(1)
        };
        let ty = if let Some(inner) = &m.nested {
            let base = base_of(inner, m.offset);
            FieldType::Inline(Box::new(to_spec(inner, listed, base, depth + 1)?))
        } else if let Some(other) = listed_type(&m.type_name, listed, s) {
            // Another struct of the listing, listed from its own offset 0.
            FieldType::Inline(Box::new(to_spec(other, listed, 0, depth + 1)?))
        } else {
            match c_type(&m.type_name) {
                Some((size, _)) if size == element => FieldType::Named(m.type_name.clone()),
                _ => FieldType::Bytes(element),
            }
        };
        let ty_is_bytes = matches!(ty, FieldType::Bytes(_));
        // An opaque member's alignment is not known: take the largest the
        // listed offset allows, up to what its size suggests.
        let align = match (&ty, m.align) {
            (_, Some(a)) => Some(a),
            (FieldType::Bytes(size), None) => {
                let natural = (1u32 << size.max(&1).trailing_zeros()).min(8);
                let allowed = if relative == 0 {
                    natural
                } else {
                    1u32 << relative.trailing_zeros().min(31)
                };
                Some(natural.min(allowed))
            }
            _ => None,
        };
        fields.push(FieldSpec {
            name: m.name.clone(),
            ty,
            count: if m.bit_field.is_some() { 1 } else { m.count },
            align,
            offset: if s.is_union { None } else { Some(relative) },
            anonymous: m.anonymous,
            bit_field: m.bit_field,
            type_label: ty_is_bytes.then(|| m.type_name.clone()),
        });
    }
    if fields.is_empty() {
        return fail(s.line, format!("`{}` lists no members", s.name));
    }
    Ok(StructSpec {
        name: s.name.clone(),
        align: s.align,
        is_union: s.is_union,
        fields,
    })
}

/// A member type naming another struct of the listing (not a pointer).
fn listed_type<'a>(
    type_name: &str,
    listed: &'a [ListedStruct],
    within: &ListedStruct,
) -> Option<&'a ListedStruct> {
    let t = type_name.trim();
    let (is_union, bare) = if let Some(b) = t.strip_prefix("struct ") {
        (false, b.trim())
    } else if let Some(b) = t.strip_prefix("union ") {
        (true, b.trim())
    } else {
        return None;
    };
    listed
        .iter()
        .find(|s| s.name == bare && s.is_union == is_union && s.name != within.name)
}

/// Checks the listing: each member where C would put it, the holes,
/// boundaries, padding and footer as listed.
fn check(
    top: &ListedStruct,
    spec: &StructSpec,
    listed: &[ListedStruct],
) -> Result<(), PaholeError> {
    // The members by C rules alone: no explicit offsets.
    let mut free = spec.clone();
    clear_offsets(&mut free);
    let by_c = lay_out(&free, top.line)?;
    compare(top, 0, &by_c, 0, 0, listed, 0)?;
    // The listing's own offsets must lay out too (they do when they agree).
    let as_listed = lay_out(spec, top.line)?;

    let line_size = 64;
    if let Some((line, size, lines, members)) = top.footer {
        if size != as_listed.size_bytes {
            return fail(
                line,
                format!(
                    "the listing says size {size}, but its members and alignment make {}",
                    as_listed.size_bytes
                ),
            );
        }
        if lines != size.div_ceil(line_size) {
            return fail(
                line,
                format!(
                    "{size} bytes take {} cache lines of {line_size} bytes, not {lines}",
                    size.div_ceil(line_size)
                ),
            );
        }
        let anonymous = top.members.iter().any(|m| m.anonymous);
        if !anonymous && members as usize != top.members.len() {
            return fail(
                line,
                format!(
                    "the listing says {members} members but lists {}",
                    top.members.len()
                ),
            );
        }
    }
    Ok(())
}

fn clear_offsets(spec: &mut StructSpec) {
    for f in &mut spec.fields {
        if f.bit_field.is_none() {
            f.offset = None;
        }
        if let FieldType::Inline(inner) = &mut f.ty {
            clear_offsets(inner);
        }
    }
    // Bitfields keep their listed storage unit; the first member of a
    // storage unit after a non-bitfield decides where the unit goes.
    let mut previous_bit_unit: Option<u32> = None;
    for f in &mut spec.fields {
        if f.bit_field.is_some() {
            if previous_bit_unit.is_none() {
                f.offset = None;
            }
            previous_bit_unit = Some(0);
        } else {
            previous_bit_unit = None;
        }
    }
}

fn lay_out(spec: &StructSpec, line: usize) -> Result<LaidOutStruct, PaholeError> {
    match layout_structs(std::slice::from_ref(spec)) {
        Ok(mut l) => Ok(l.remove(0)),
        Err(e) => fail(line, format!("the listing cannot be laid out: {e}")),
    }
}

/// Walks the listing and the C layout side by side; `listed_base` is what
/// the listing's offsets count from, `base` where the struct sits in the
/// outermost one. One walk on purpose: each member's checks (offset,
/// hole, boundary, size, nested struct) read what the members before it
/// left (where they end, the holes and boundaries not yet consumed).
fn compare(
    listed: &ListedStruct,
    listed_base: u32,
    by_c: &LaidOutStruct,
    base: u32,
    boundary_base: u32,
    all: &[ListedStruct],
    depth: usize,
) -> Result<(), PaholeError> {
    if depth > MAX_DEPTH {
        return fail(
            listed.line,
            format!("structs nest more than {MAX_DEPTH} deep"),
        );
    }
    let mut previous_end = 0u32;
    let mut previous_start = 0u32;
    let mut previous_name = String::new();
    // Holes and boundaries are listed in member order: each member takes
    // the run of them that comes before it, so the walk is linear.
    let mut holes = listed.holes.as_slice();
    let mut boundaries = listed.boundaries.as_slice();
    for (i, (m, c)) in listed.members.iter().zip(&by_c.fields).enumerate() {
        let before_hole = holes.iter().take_while(|h| h.2 <= i).count();
        let (holes_here, rest) = holes.split_at(before_hole);
        holes = rest;
        let holes_here: Vec<_> = holes_here.iter().filter(|h| h.2 == i).collect();
        let before_boundary = boundaries.iter().take_while(|b| b.2 <= i).count();
        let (boundaries_here, rest) = boundaries.split_at(before_boundary);
        boundaries = rest;
        let rel = m.offset.saturating_sub(listed_base);
        if m.bit_field.is_none() && rel != c.offset_bytes {
            let after = if previous_name.is_empty() {
                String::new()
            } else {
                format!(" (`{previous_name}` ends at {})", base + previous_end)
            };
            return fail(
                m.line,
                format!(
                    "pahole lists `{}` at offset {}, but the C layout puts it at {}{after}: \
                     the listing does not match its types (a type of another size or \
                     alignment, or an attribute pahole did not print)",
                    m.name,
                    base + rel,
                    base + c.offset_bytes
                ),
            );
        }
        if !listed.is_union && m.bit_field.is_none() {
            let gap = rel.saturating_sub(previous_end);
            let said: u32 = holes_here.iter().map(|h| h.1).sum();
            if said != gap {
                let line = holes_here.first().map_or(m.line, |h| h.0);
                return fail(
                    line,
                    format!(
                        "the listing says a {said}-byte hole before `{}`, but the gap is {gap} bytes",
                        m.name
                    ),
                );
            }
        }
        for &(line, bytes, before) in boundaries_here {
            if before == i {
                // A struct listed on its own marks its own lines; one
                // expanded in place, the outermost struct's.
                let at = boundary_base + rel;
                if bytes > at || (i > 0 && bytes <= boundary_base + previous_start) {
                    return fail(
                        line,
                        format!(
                            "a cache-line boundary at byte {bytes} cannot come before `{}` at {at}",
                            m.name
                        ),
                    );
                }
            }
        }
        if m.bit_field.is_none() && c.total_bytes() != m.size {
            return fail(
                m.line,
                format!(
                    "`{}` is listed as {} bytes, but its type `{}` takes {}",
                    m.name,
                    m.size,
                    m.type_name,
                    c.total_bytes()
                ),
            );
        }
        if let Some(nc) = &c.nested {
            if let Some(inner) = &m.nested {
                let at = base + rel;
                compare(inner, base_of(inner, m.offset), nc, at, at, all, depth + 1)?;
            } else if let Some(other) = listed_type(&m.type_name, all, listed) {
                compare(other, 0, nc, base + rel, 0, all, depth + 1)?;
            }
        }
        previous_end = previous_end.max(rel + m.size);
        previous_start = rel;
        previous_name = m.name.clone();
    }
    if let Some((line, padding)) = listed.padding {
        let actual = by_c.size_bytes.saturating_sub(previous_end);
        if padding != actual {
            return fail(
                line,
                format!("the listing says {padding} bytes of padding, but the tail has {actual}"),
            );
        }
    }
    Ok(())
}
