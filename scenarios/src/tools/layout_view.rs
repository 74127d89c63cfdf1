//! The pahole-style view of a struct (`bounce layout`): members with their
//! offsets and sizes, nested structs and unions expanded, holes, cache-line
//! boundaries, tail padding, total size and cache lines; and, after a run,
//! each member's loads, stores and atomics and the transfers (HITM) they
//! caused.
//!
//! [`render_struct`] works on a [`LaidOutStruct`] and plain per-path traffic
//! only, so anything that lays out a struct (the layout optimiser too) can
//! print it; [`laid_out_structs`] and [`struct_traffic`] get both from a
//! scenario and a run.

#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt::Write;

use models::layout::{layout_structs, LaidOutField, LaidOutStruct};
use sim_core::memory::MemoryLayout;
use sim_core::stats::Traffic;

use crate::build::{layout_error, struct_specs};
use crate::format::error::InputError;
use crate::format::schema::ScenarioDoc;
use crate::format::LoadedScenario;
use crate::run::results::VariantResult;

/// Every struct of a document, laid out with nesting kept, in declaration
/// order.
pub fn laid_out_structs(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
) -> Result<Vec<LaidOutStruct>, InputError> {
    let specs = struct_specs(loaded, doc)?;
    layout_structs(&specs).map_err(|e| layout_error(loaded, doc, e))
}

/// The traffic of every field of `struct_name`, by its path in the struct
/// (`css.parent`), summed over every instance of the struct and all their
/// elements.
pub fn struct_traffic(
    result: &VariantResult,
    memory: &MemoryLayout,
    field_names: &[(u32, u32)],
    struct_name: &str,
) -> BTreeMap<String, Traffic> {
    let mut by_path: BTreeMap<String, Traffic> = BTreeMap::new();
    for (field, &(inst, index)) in result.fields.iter().zip(field_names) {
        let instance = &memory.instances[inst as usize];
        let def = &memory.structs[instance.struct_index];
        if def.name != struct_name {
            continue;
        }
        let sum = by_path
            .entry(def.fields[index as usize].name.clone())
            .or_default();
        *sum += &field.traffic;
    }
    by_path
}

/// One line of the listing.
enum Row {
    /// A comment or a brace, printed as is after the indent.
    Text { depth: usize, text: String },
    /// A member: type and name, `/* offset size */`, and its traffic.
    Member {
        depth: usize,
        type_name: String,
        declarator: String,
        position: String,
        traffic: Option<Traffic>,
    },
}

struct Listing<'a> {
    rows: Vec<Row>,
    line_size_bytes: u32,
    traffic: Option<&'a BTreeMap<String, Traffic>>,
    /// The next cache-line boundary (absolute offset) not yet marked.
    next_boundary: u32,
}

impl Listing<'_> {
    fn text(&mut self, depth: usize, text: String) {
        self.rows.push(Row::Text { depth, text });
    }

    /// Marks the cache-line boundary at or before `offset`, once: "was N
    /// bytes ago" when it fell inside the previous member or a hole.
    fn boundaries_up_to(&mut self, depth: usize, offset: u32) {
        if offset < self.next_boundary {
            return;
        }
        let line = self.line_size_bytes;
        let boundary = offset / line * line;
        let text = if boundary == offset {
            format!(
                "/* --- cacheline {} boundary ({boundary} bytes) --- */",
                boundary / line
            )
        } else {
            format!(
                "/* --- cacheline {} boundary ({boundary} bytes) was {} bytes ago --- */",
                boundary / line,
                offset - boundary
            )
        };
        self.text(depth, text);
        self.next_boundary = boundary + line;
    }

    /// The members of `def` placed at `base`, with `prefix` the path of the
    /// struct they are in; returns the summed traffic of its fields.
    fn members(&mut self, def: &LaidOutStruct, base: u32, depth: usize, prefix: &str) -> Traffic {
        let mut sum = Traffic::default();
        let mut end = 0u32;
        for f in &def.fields {
            if !def.is_union && f.offset_bytes > end {
                self.text(
                    depth,
                    format!("/* XXX {} bytes hole, try to pack */", f.offset_bytes - end),
                );
            }
            let absolute = base + f.offset_bytes;
            self.boundaries_up_to(depth, absolute);
            let path = match (f.anonymous, prefix.is_empty()) {
                (true, _) => prefix.to_string(),
                (false, true) => f.name.clone(),
                (false, false) => format!("{prefix}.{}", f.name),
            };
            let traffic = match &f.nested {
                Some(inner) => {
                    let kind = if inner.is_union { "union" } else { "struct" };
                    let opener = if f.anonymous {
                        format!("{kind} {{")
                    } else {
                        format!("{kind} {} {{", inner.name)
                    };
                    self.text(depth, opener);
                    let t = self.members(inner, absolute, depth + 1, &path);
                    let inner_end = inner
                        .fields
                        .iter()
                        .map(|g| g.offset_bytes + g.total_bytes());
                    let used = inner_end.max().unwrap_or(0);
                    if !inner.is_union && inner.size_bytes > used {
                        self.text(
                            depth + 1,
                            format!("/* XXX {} bytes tail padding */", inner.size_bytes - used),
                        );
                    }
                    self.rows.push(Row::Member {
                        depth,
                        type_name: "}".to_string(),
                        declarator: format!("{};", declarator(f)),
                        position: position(f, absolute),
                        traffic: self.traffic.map(|_| t.clone()),
                    });
                    t
                }
                None => {
                    let t = self
                        .traffic
                        .and_then(|m| m.get(&path))
                        .cloned()
                        .unwrap_or_default();
                    self.rows.push(Row::Member {
                        depth,
                        type_name: f.type_name.clone(),
                        declarator: format!("{};", declarator(f)),
                        position: position(f, absolute),
                        traffic: self.traffic.map(|_| t.clone()),
                    });
                    t
                }
            };
            sum += &traffic;
            end = end.max(f.offset_bytes + f.total_bytes());
        }
        sum
    }
}

fn declarator(f: &LaidOutField) -> String {
    let mut d = if f.anonymous {
        String::new()
    } else {
        f.name.clone()
    };
    if f.count > 1 {
        d.push_str(&format!("[{}]", f.count));
    }
    if let Some(b) = f.bit_field {
        d.push_str(&format!(":{}", b.bits));
    }
    // An alignment above the type's own (a field's `align`, as
    // `____cacheline_aligned` gives) is written as pahole writes it, so
    // that the hole or padding it makes has its reason beside it.
    let natural = match &f.nested {
        Some(inner) => Some(inner.align_bytes),
        None => models::layout::c_type(&f.type_name).map(|(_, align)| align),
    };
    if natural.is_some_and(|n| f.align_bytes > n) {
        d.push_str(&format!(" __attribute__((__aligned__({})))", f.align_bytes));
    }
    d
}

fn position(f: &LaidOutField, absolute: u32) -> String {
    match f.bit_field {
        // As wide as the plain form, so the columns line up.
        Some(b) => format!("/* {absolute:5}:{:2} {:2} */", b.bit_offset, f.size_bytes),
        None => format!("/* {absolute:5} {:5} */", f.total_bytes()),
    }
}

const INDENT: &str = "    ";

/// A pahole-style listing of `def` on lines of `line_size_bytes`. With
/// `traffic` (by field path, as [`struct_traffic`] gives it), each member
/// also shows its loads, stores, atomics and HITM transfers (a nested
/// struct's line: the sum of its members).
pub fn render_struct(
    def: &LaidOutStruct,
    line_size_bytes: u32,
    traffic: Option<&BTreeMap<String, Traffic>>,
) -> String {
    let line = line_size_bytes.max(1);
    let mut listing = Listing {
        rows: Vec::new(),
        line_size_bytes: line,
        traffic,
        next_boundary: line,
    };
    listing.members(def, 0, 1, "");
    let used = def
        .fields
        .iter()
        .map(|f| f.offset_bytes + f.total_bytes())
        .max()
        .unwrap_or(0);

    let (type_width, member_width) = column_widths(&listing.rows);

    let mut out = String::new();
    let kind = if def.is_union { "union" } else { "struct" };
    let _ = writeln!(out, "{kind} {} {{", def.name);
    if traffic.is_some() {
        // The traffic columns start after the member and its 17-column
        // `/* offset size */`.
        let title = format!("{INDENT}/* offset size; over the run: */");
        let _ = writeln!(
            out,
            "{title:w$}  {:>9} {:>9} {:>9} {:>9}",
            "loads",
            "stores",
            "atomics",
            "HITM",
            w = member_width + 2 + 17
        );
    }
    for row in &listing.rows {
        match row {
            Row::Text { depth, text } => {
                let _ = writeln!(out, "{}{text}", INDENT.repeat(*depth));
            }
            Row::Member {
                depth,
                type_name,
                declarator,
                position,
                traffic,
            } => {
                let member = member_text(*depth, type_name, declarator, type_width);
                let mut text = format!("{member:member_width$}  {position}");
                if let Some(t) = traffic {
                    if t.accesses() > 0 {
                        let _ = write!(
                            text,
                            "  {:>9} {:>9} {:>9} {:>9}",
                            t.loads, t.stores, t.atomics, t.hitm
                        );
                    }
                }
                let _ = writeln!(out, "{}", text.trim_end());
            }
        }
    }
    out.push_str(&summary_comments(def, line, used));
    out.push_str("};\n");
    out
}

/// The widths of the listing's type column and of its member column
/// (type and declarator), over its member rows.
fn column_widths(rows: &[Row]) -> (usize, usize) {
    let type_width = rows
        .iter()
        .filter_map(|r| match r {
            Row::Member {
                depth, type_name, ..
            } if type_name != "}" => Some(depth * INDENT.len() + type_name.len()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let member_width = rows
        .iter()
        .filter_map(|r| match r {
            Row::Member {
                depth,
                type_name,
                declarator,
                ..
            } => Some(member_text(*depth, type_name, declarator, type_width).len()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    (type_width, member_width)
}

/// The listing's closing comments, as pahole writes them: size,
/// cachelines and members; holes; padding; the last line's bytes. `used`
/// is where the last member ends.
fn summary_comments(def: &LaidOutStruct, line: u32, used: u32) -> String {
    let mut out = String::new();
    let (holes, hole_bytes) = top_level_holes(def);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{INDENT}/* size: {}, cachelines: {}, members: {} */",
        def.size_bytes,
        def.size_bytes.div_ceil(line),
        def.fields.len()
    );
    if holes > 0 {
        let _ = writeln!(
            out,
            "{INDENT}/* sum members: {}, holes: {holes}, sum holes: {hole_bytes} */",
            used - hole_bytes
        );
    }
    if def.size_bytes > used && !def.is_union {
        let _ = writeln!(out, "{INDENT}/* padding: {} */", def.size_bytes - used);
    }
    if !def.size_bytes.is_multiple_of(line) {
        let _ = writeln!(
            out,
            "{INDENT}/* last cacheline: {} bytes */",
            def.size_bytes % line
        );
    }
    out
}

fn member_text(depth: usize, type_name: &str, declarator: &str, type_width: usize) -> String {
    let indent = INDENT.repeat(depth);
    if type_name == "}" {
        if declarator == ";" {
            return format!("{indent}}};");
        }
        return format!("{indent}}} {declarator}");
    }
    let pad = type_width.saturating_sub(indent.len());
    format!("{indent}{type_name:pad$} {declarator}")
}

/// Holes between the top-level members of a struct: how many, and bytes.
fn top_level_holes(def: &LaidOutStruct) -> (u32, u32) {
    if def.is_union {
        return (0, 0);
    }
    let mut end = 0;
    let (mut holes, mut bytes) = (0, 0);
    for f in &def.fields {
        if f.offset_bytes > end {
            holes += 1;
            bytes += f.offset_bytes - end;
        }
        end = end.max(f.offset_bytes + f.total_bytes());
    }
    (holes, bytes)
}
