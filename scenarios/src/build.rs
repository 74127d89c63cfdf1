//! From a validated scenario document to a runnable `SimConfig`: resolving
//! the machine, laying out structs, placing instances, parsing and compiling
//! scripts, and assigning CPUs. Every failure is an `InputError` pointing at
//! the key in the file that caused it.

#![allow(clippy::result_large_err)]

use crate::document::LoadedScenario;
use crate::error::InputError;
use crate::schema::{self, CpuSet, FieldShape, MachineRef, RunLength, ScenarioDoc};
use models::layout::{self, BitField, FieldSpec, FieldType, InstanceSpec, LayoutError, StructSpec};
use models::presets::{self, ResolveError};
use sim_core::engine::{SimConfig, StopRule, ThreadSpec};
use sim_core::memory::InstanceKind;
use sim_core::script::ast::SourcePos;
use sim_core::script::compile::{compile_with_costs, ProcedureSource, ScriptSource};
use sim_core::script::parse::parse_block;
use sim_core::topology::{LatencySpec, Lookup, MachineSpec, Protocol, SpecError, Topology};
use std::ops::Range;
use toml::Spanned;

/// Options that are not part of the scenario.
#[derive(Clone, Copy, Debug)]
pub struct BuildOptions {
    /// Check the protocol invariants after every transaction.
    pub check_invariants: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            check_invariants: cfg!(debug_assertions),
        }
    }
}

/// A variant ready to run.
#[derive(Clone, Debug)]
pub struct BuiltVariant {
    pub name: String,
    pub description: Option<String>,
    pub config: SimConfig,
    /// CPU lists of the thread groups, for reports.
    pub groups: Vec<(String, Vec<u32>)>,
}

/// Builds every variant (base first). The first error stops the build.
pub fn build_all(
    loaded: &LoadedScenario,
    options: BuildOptions,
) -> Result<Vec<BuiltVariant>, InputError> {
    loaded
        .all()
        .map(|v| {
            let mut built =
                build_doc(loaded, &v.doc, options).map_err(|e| in_variant(e, &v.name, loaded))?;
            built.name = v.name.clone();
            built.description = v.description.clone();
            Ok(built)
        })
        .collect()
}

fn in_variant(mut e: InputError, name: &str, loaded: &LoadedScenario) -> InputError {
    if name != loaded.base.name && !e.message.starts_with("in variant") {
        e.message = format!("in variant `{name}`: {}", e.message);
    }
    e
}

/// Resolves the machine of a document.
pub fn build_machine(loaded: &LoadedScenario, doc: &ScenarioDoc) -> Result<Topology, InputError> {
    let err = |span: Range<usize>, key: &str, message: String| loaded.error_at(span, key, message);
    let preset_names = presets::names();
    // A preset reference: `NAME` or `NAME:MODE,MODE` (`epyc-milan-2s:nps4`).
    let from_preset = |name: &Spanned<String>, key: &str| -> Result<MachineSpec, InputError> {
        presets::resolve_preset(name.get_ref())
            .map(|r| r.spec)
            .map_err(|e| match e {
                ResolveError::UnknownPreset { name: given } => err(
                    name.span(),
                    key,
                    format!("unknown machine preset `{given}`"),
                )
                .with_choices(&given, &preset_names),
                ResolveError::UnknownMode {
                    preset,
                    mode,
                    modes,
                } => err(
                    name.span(),
                    key,
                    format!("preset `{preset}` has no mode `{mode}`"),
                )
                .with_choices(&mode, &modes),
                e @ ResolveError::ConflictingModes { .. } => err(name.span(), key, e.to_string()),
            })
    };
    let spec = match &doc.machine {
        MachineRef::Preset(name) => from_preset(name, "machine")?,
        MachineRef::Inline(m) => {
            let base = match &m.preset {
                Some(name) => Some(from_preset(name, "machine.preset")?),
                None => None,
            };
            let machine_span = machine_table_span(loaded);
            let mut missing: Vec<&str> = Vec::new();
            macro_rules! pick {
                ($field:expr, $key:literal, $from_base:expr, $default:expr) => {
                    match (&$field, &base) {
                        (Some(v), _) => v.get_ref().clone(),
                        (None, Some(b)) => $from_base(b),
                        (None, None) => {
                            missing.push($key);
                            $default
                        }
                    }
                };
            }
            let l = &m.latency;
            let spec = MachineSpec {
                name: m
                    .name
                    .clone()
                    .or_else(|| base.as_ref().map(|b| format!("{} (modified)", b.name)))
                    .unwrap_or_else(|| "custom".to_string()),
                clock_mhz: pick!(m.clock_mhz, "clock_mhz", |b: &MachineSpec| b.clock_mhz, 1),
                sockets: pick!(m.sockets, "sockets", |b: &MachineSpec| b.sockets, 1),
                nodes_per_socket: pick!(
                    m.nodes_per_socket,
                    "nodes_per_socket",
                    |b: &MachineSpec| b.nodes_per_socket,
                    1
                ),
                l3_per_node: pick!(
                    m.l3_per_node,
                    "l3_per_node",
                    |b: &MachineSpec| b.l3_per_node,
                    1
                ),
                cores_per_l3: pick!(
                    m.cores_per_l3,
                    "cores_per_l3",
                    |b: &MachineSpec| b.cores_per_l3,
                    1
                ),
                threads_per_core: pick!(
                    m.threads_per_core,
                    "threads_per_core",
                    |b: &MachineSpec| b.threads_per_core,
                    1
                ),
                line_size_bytes: pick!(
                    m.line_size_bytes,
                    "line_size_bytes",
                    |b: &MachineSpec| b.line_size_bytes,
                    64
                ),
                protocol: match (&m.protocol, &base) {
                    (Some(p), _) => match p.get_ref() {
                        schema::Protocol::Mesi => Protocol::Mesi,
                        schema::Protocol::Mesif => Protocol::Mesif,
                        schema::Protocol::Moesi => Protocol::Moesi,
                    },
                    (None, Some(b)) => b.protocol,
                    (None, None) => {
                        missing.push("protocol");
                        Protocol::Mesi
                    }
                },
                lookup: match (&m.lookup, &base) {
                    (Some(p), _) => match p.get_ref() {
                        schema::Lookup::Local => Lookup::Local,
                        schema::Lookup::Home => Lookup::Home,
                    },
                    (None, Some(b)) => b.lookup,
                    (None, None) => {
                        missing.push("lookup");
                        Lookup::Home
                    }
                },
                adjacent_line_prefetch: m
                    .adjacent_line_prefetch
                    .or(base.as_ref().map(|b| b.adjacent_line_prefetch))
                    .unwrap_or(false),
                store_buffer_entries: pick!(
                    m.store_buffer_entries,
                    "store_buffer_entries",
                    |b: &MachineSpec| b.store_buffer_entries,
                    56
                ),
                latency: LatencySpec {
                    l1_hit_cycles: pick!(
                        l.l1_hit_cycles,
                        "latency.l1_hit_cycles",
                        |b: &MachineSpec| b.latency.l1_hit_cycles,
                        1
                    ),
                    locked_op_cycles: pick!(
                        l.locked_op_cycles,
                        "latency.locked_op_cycles",
                        |b: &MachineSpec| b.latency.locked_op_cycles,
                        0
                    ),
                    smt_transfer_cycles: pick!(
                        l.smt_transfer_cycles,
                        "latency.smt_transfer_cycles",
                        |b: &MachineSpec| b.latency.smt_transfer_cycles,
                        0
                    ),
                    l3_transfer_cycles: pick!(
                        l.l3_transfer_cycles,
                        "latency.l3_transfer_cycles",
                        |b: &MachineSpec| b.latency.l3_transfer_cycles,
                        0
                    ),
                    hop_in_node_cycles: pick!(
                        l.hop_in_node_cycles,
                        "latency.hop_in_node_cycles",
                        |b: &MachineSpec| b.latency.hop_in_node_cycles,
                        0
                    ),
                    hop_between_nodes_cycles: pick!(
                        l.hop_between_nodes_cycles,
                        "latency.hop_between_nodes_cycles",
                        |b: &MachineSpec| b.latency.hop_between_nodes_cycles,
                        0
                    ),
                    hop_between_sockets_cycles: pick!(
                        l.hop_between_sockets_cycles,
                        "latency.hop_between_sockets_cycles",
                        |b: &MachineSpec| b.latency.hop_between_sockets_cycles,
                        0
                    ),
                    dram_cycles: pick!(
                        l.dram_cycles,
                        "latency.dram_cycles",
                        |b: &MachineSpec| b.latency.dram_cycles,
                        0
                    ),
                },
            };
            if !missing.is_empty() {
                return Err(err(
                    machine_span,
                    "machine",
                    format!(
                        "the machine is incomplete: missing {}",
                        missing
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
                .with_valid(format!(
                    "give every key, or start from a preset with `preset = \"NAME\"` (presets: {})",
                    preset_names.join(", ")
                )));
            }
            spec
        }
    };
    Topology::new(spec).map_err(|e| spec_error(loaded, doc, e))
}

fn spec_error(loaded: &LoadedScenario, doc: &ScenarioDoc, e: SpecError) -> InputError {
    let (span, key) = match &doc.machine {
        MachineRef::Preset(name) => (name.span(), "machine".to_string()),
        MachineRef::Inline(m) => {
            let span = machine_key_spans(m)
                .into_iter()
                .find(|(key, _)| *key == e.key)
                .and_then(|(_, span)| span);
            (
                span.unwrap_or_else(|| machine_table_span(loaded)),
                format!("machine.{}", e.key),
            )
        }
    };
    loaded.error_at(span, &key, e.message)
}

/// The machine's instruction costs for `cost(NAME)`: the preset's (every
/// preset has the default classes), or the defaults for a machine without
/// one, then `[machine.cost]` on top. A preset name that does not resolve
/// was reported by `build_machine` already; it gives the defaults here.
pub fn instruction_costs(doc: &ScenarioDoc) -> Vec<(String, i64)> {
    let preset = match &doc.machine {
        MachineRef::Preset(name) => Some(name),
        MachineRef::Inline(m) => m.preset.as_ref(),
    };
    let mut costs = match preset.and_then(|name| presets::resolve_preset(name.get_ref()).ok()) {
        Some(resolved) => presets::instruction_costs(&resolved.params),
        None => presets::instruction_costs(&presets::default_instruction_costs()),
    };
    if let MachineRef::Inline(m) = &doc.machine {
        for (class, cycles) in &m.cost {
            let cycles = (*cycles.get_ref()).min(i64::MAX as u64) as i64;
            match costs.iter_mut().find(|(c, _)| c == class) {
                Some(entry) => entry.1 = cycles,
                None => costs.push((class.clone(), cycles)),
            }
        }
    }
    costs
}

/// Every numeric key of an inline machine, as `MachineSpec` errors name it,
/// with the span of its value when the file gives one.
fn machine_key_spans(m: &schema::InlineMachine) -> Vec<(&'static str, Option<Range<usize>>)> {
    let span32 = |v: &Option<Spanned<u32>>| v.as_ref().map(|s| s.span());
    let span64 = |v: &Option<Spanned<u64>>| v.as_ref().map(|s| s.span());
    let l = &m.latency;
    vec![
        ("clock_mhz", span64(&m.clock_mhz)),
        ("sockets", span32(&m.sockets)),
        ("nodes_per_socket", span32(&m.nodes_per_socket)),
        ("l3_per_node", span32(&m.l3_per_node)),
        ("cores_per_l3", span32(&m.cores_per_l3)),
        ("threads_per_core", span32(&m.threads_per_core)),
        ("line_size_bytes", span32(&m.line_size_bytes)),
        ("store_buffer_entries", span32(&m.store_buffer_entries)),
        ("latency.l1_hit_cycles", span64(&l.l1_hit_cycles)),
        ("latency.locked_op_cycles", span64(&l.locked_op_cycles)),
        (
            "latency.smt_transfer_cycles",
            span64(&l.smt_transfer_cycles),
        ),
        ("latency.l3_transfer_cycles", span64(&l.l3_transfer_cycles)),
        ("latency.hop_in_node_cycles", span64(&l.hop_in_node_cycles)),
        (
            "latency.hop_between_nodes_cycles",
            span64(&l.hop_between_nodes_cycles),
        ),
        (
            "latency.hop_between_sockets_cycles",
            span64(&l.hop_between_sockets_cycles),
        ),
        ("latency.dram_cycles", span64(&l.dram_cycles)),
    ]
}

/// The span of the `[machine]` header, for errors about the table as a whole.
fn machine_table_span(loaded: &LoadedScenario) -> Range<usize> {
    let text = &loaded.source.text;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("[machine]") {
            let start = offset + (line.len() - line.trim_start().len());
            return start..start + "[machine]".len();
        }
        offset += line.len();
    }
    0..0
}

/// Maps a position inside a TOML string value to a byte offset in the file.
pub fn position_in_string(text: &str, span: Range<usize>, pos: SourcePos) -> Range<usize> {
    let raw = text.get(span.clone()).unwrap_or("");
    let mut start = span.start;
    if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
        start += 3;
        let rest = &text[start.min(text.len())..];
        if rest.starts_with("\r\n") {
            start += 2;
        } else if rest.starts_with('\n') {
            start += 1;
        }
    } else if raw.starts_with('"') || raw.starts_with('\'') {
        start += 1;
    }
    let mut offset = start;
    let mut line = 1;
    let bytes = text.as_bytes();
    while line < pos.line && offset < span.end {
        if bytes[offset] == b'\n' {
            line += 1;
        }
        offset += 1;
    }
    for (column, ch) in (1..).zip(text[offset.min(text.len())..].chars()) {
        if column >= pos.column || ch == '\n' {
            break;
        }
        offset += ch.len_utf8();
    }
    let end = text[offset.min(text.len())..]
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
        .map(|(i, _)| offset + i)
        .unwrap_or(text.len());
    offset..end.max(offset + 1)
}

/// Rewrites `line L, column C` (positions inside a script) in a message as
/// the file's own line and column, which is what the user can find.
fn file_positions_in_message(
    loaded: &LoadedScenario,
    text: &str,
    span: Range<usize>,
    message: &str,
) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
        let tail = &after[digits.len()..];
        let column_digits: String = tail
            .strip_prefix(", column ")
            .map(|t| t.chars().take_while(|c| c.is_ascii_digit()).collect())
            .unwrap_or_default();
        match (digits.parse::<u32>(), column_digits.parse::<u32>()) {
            (Ok(line), Ok(column)) => {
                let offset =
                    position_in_string(text, span.clone(), SourcePos { line, column }).start;
                let (file_line, file_column) = loaded.source.line_col(offset);
                out.push_str(&format!("line {file_line}, column {file_column}"));
                rest = &tail[", column ".len() + column_digits.len()..];
            }
            _ => {
                out.push_str("line ");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

pub(crate) fn layout_error(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    e: LayoutError,
) -> InputError {
    // A struct field, a struct, or an instance.
    if let Some(s) = doc.structs.get(&e.owner) {
        if let Some(field_name) = &e.field {
            if let Some(f) = s.fields.iter().find(|f| f.name.get_ref() == field_name) {
                let span = match e.key {
                    "type" => f.ty.as_ref().map(|t| t.span()),
                    "align" => f.align.as_ref().map(|t| t.span()),
                    "offset" => f.offset.as_ref().map(|t| t.span()),
                    "count" => f.count.as_ref().map(|t| t.span()),
                    "size" => f.size.as_ref().map(|t| t.span()),
                    "anonymous" => f.anonymous.as_ref().map(|t| t.span()),
                    _ => None,
                }
                .unwrap_or_else(|| f.name.span());
                let mut error = loaded.error_at(
                    span,
                    &format!("structs.{}.fields.{}.{}", e.owner, field_name, e.key),
                    e.message.clone(),
                );
                if e.key == "type" && e.message.starts_with("unknown C type") {
                    let given = f.ty.as_ref().map(|t| t.get_ref().as_str()).unwrap_or("");
                    // C types, and the struct names as a field would write them.
                    let declared: Vec<String> = doc
                        .structs
                        .iter()
                        .map(|(n, s)| format!("{} {n}", if s.union { "union" } else { "struct" }))
                        .collect();
                    let mut choices: Vec<&str> = layout::C_TYPE_NAMES.to_vec();
                    choices.extend(declared.iter().map(String::as_str));
                    error = error.with_choices(given, &choices);
                }
                return error;
            }
        }
        let span = s
            .align
            .as_ref()
            .map(|a| a.span())
            .or_else(|| s.fields.first().map(|f| f.name.span()))
            .unwrap_or(0..0);
        return loaded.error_at(span, &format!("structs.{}.{}", e.owner, e.key), e.message);
    }
    if let Some(inst) = doc.instances.get(&e.owner) {
        let span = match e.key {
            "node" => inst.node.as_ref().map(|n| n.span()),
            "count" => inst.count.as_ref().map(|n| n.span()),
            _ => None,
        }
        .unwrap_or_else(|| inst.struct_name.span());
        return loaded.error_at(span, &format!("instances.{}.{}", e.owner, e.key), e.message);
    }
    InputError::whole_file(&loaded.source.path, e.to_string())
}

/// The structs of a document as the layout rules take them. (A struct the
/// file imports from pahole has its `fields` already: the loader reads the
/// listing before any variant patches them.)
pub fn struct_specs(
    _loaded: &LoadedScenario,
    doc: &ScenarioDoc,
) -> Result<Vec<StructSpec>, InputError> {
    Ok(doc
        .structs
        .iter()
        .map(|(name, s)| StructSpec {
            name: name.clone(),
            align: s.align.as_ref().map(|a| *a.get_ref() as u32),
            is_union: s.union,
            fields: field_specs(&s.fields),
        })
        .collect())
}

/// Fields as the layout rules take them, written-out members included.
fn field_specs(fields: &[schema::FieldDef]) -> Vec<FieldSpec> {
    fields
        .iter()
        .map(|f| FieldSpec {
            name: f.name.get_ref().clone(),
            ty: match (&f.fields, f.shape()) {
                (Some(inner), _) => FieldType::Inline(Box::new(StructSpec {
                    // `struct css_set` names the member's type `css_set`.
                    name: f
                        .label
                        .as_deref()
                        .map(|l| {
                            l.trim()
                                .trim_start_matches("struct")
                                .trim_start_matches("union")
                                .trim()
                                .to_string()
                        })
                        .unwrap_or_default(),
                    align: None,
                    is_union: f.union.as_ref().is_some_and(|u| *u.get_ref()),
                    fields: field_specs(inner),
                })),
                (None, Some(FieldShape::Type(t))) => FieldType::Named(t.get_ref().clone()),
                (None, Some(FieldShape::Size(s))) => FieldType::Bytes(*s.get_ref() as u32),
                (None, None) => FieldType::Bytes(1),
            },
            count: f.count().min(u32::MAX as u64) as u32,
            align: f
                .align
                .as_ref()
                .map(|a| (*a.get_ref()).min(u32::MAX as u64) as u32),
            offset: f
                .offset
                .as_ref()
                .map(|o| (*o.get_ref()).min(u32::MAX as u64) as u32),
            anonymous: f.anonymous.as_ref().is_some_and(|a| *a.get_ref()),
            bit_field: f.bits.as_ref().map(|b| BitField {
                bit_offset: f.bit_offset.as_ref().map_or(0, |o| *o.get_ref() as u32),
                bits: *b.get_ref() as u32,
            }),
            type_label: if f.fields.is_none() {
                f.label.clone()
            } else {
                None
            },
        })
        .collect()
}

/// Builds one document into a runnable configuration.
pub fn build_doc(
    loaded: &LoadedScenario,
    doc: &ScenarioDoc,
    options: BuildOptions,
) -> Result<BuiltVariant, InputError> {
    let topology = build_machine(loaded, doc)?;

    let structs = struct_specs(loaded, doc)?;
    let instances: Vec<InstanceSpec> = doc
        .instances
        .iter()
        .map(|(name, i)| InstanceSpec {
            name: name.clone(),
            struct_name: i.struct_name.get_ref().clone(),
            kind: match i.kind.get_ref() {
                schema::InstanceKind::Global => InstanceKind::Global,
                schema::InstanceKind::PerCpu => InstanceKind::PerCpu,
                schema::InstanceKind::PerNode => InstanceKind::PerNode,
            },
            node: i.node(),
            count: i.count().min(u32::MAX as u64) as u32,
            shared_aligned: i.shared_aligned(),
        })
        .collect();
    let memory = layout::build_memory(&topology, &structs, &instances)
        .map_err(|e| layout_error(loaded, doc, e))?;

    let text = &loaded.source.text;
    let script_error = |span: Range<usize>, key: String, pos: SourcePos, message: String| {
        let message = file_positions_in_message(loaded, text, span.clone(), &message);
        loaded.error_at(position_in_string(text, span, pos), &key, message)
    };
    // A script error inside a library's procedure points at the `use` entry
    // that brought it in and names the module and the position in its body.
    let library_error = |name: &str, pos: SourcePos, message: &str| -> Option<InputError> {
        let module = crate::document::library_of_procedure(doc, name)?;
        let span = doc.procedures[name].body.span();
        let mut text = format!(
            "in procedure `{name}` of library module `{}` (line {}, column {} of its body): {message}",
            module.name, pos.line, pos.column
        );
        if !module.needs.is_empty() {
            text.push_str(&format!("; `{}` needs {}", module.name, module.needs));
        }
        Some(loaded.error_at(span, &format!("procedures.{name}.body"), text))
    };
    let mut procedures = Vec::new();
    for (name, p) in &doc.procedures {
        let body = parse_block(p.body.get_ref()).map_err(|e| {
            library_error(name, e.pos, &e.message).unwrap_or_else(|| {
                script_error(
                    p.body.span(),
                    format!("procedures.{name}.body"),
                    e.pos,
                    e.message,
                )
            })
        })?;
        procedures.push(ProcedureSource {
            name: name.clone(),
            params: p.params.iter().map(|s| s.get_ref().clone()).collect(),
            body,
        });
    }
    // Only scripts that some thread group runs are compiled and run.
    let mut scripts = Vec::new();
    let mut script_names: Vec<&String> = Vec::new();
    for (name, s) in &doc.scripts {
        let body = parse_block(s.get_ref())
            .map_err(|e| script_error(s.span(), format!("scripts.{name}"), e.pos, e.message))?;
        scripts.push(ScriptSource {
            name: name.clone(),
            body,
        });
        script_names.push(name);
    }
    let params: Vec<(String, i64)> = doc
        .params
        .iter()
        .map(|(k, v)| (k.clone(), *v.get_ref()))
        .collect();
    let costs = instruction_costs(doc);
    let program =
        compile_with_costs(&memory, &params, &costs, &procedures, &scripts).map_err(|e| {
            if let Some(mut error) = e
                .origin
                .strip_prefix("procedures.")
                .and_then(|name| library_error(name, e.pos, &e.message))
            {
                error.suggestion = e.suggestion.clone();
                error.valid = e.valid.clone();
                return error;
            }
            let (span, key) = if let Some(name) = e.origin.strip_prefix("procedures.") {
                let p = &doc.procedures[name];
                (p.body.span(), format!("procedures.{name}.body"))
            } else {
                let name = e.origin.strip_prefix("scripts.").unwrap_or(&e.origin);
                (doc.scripts[name].span(), format!("scripts.{name}"))
            };
            let mut error = script_error(span, key, e.pos, e.message);
            error.suggestion = e.suggestion;
            error.valid = e.valid;
            error
        })?;

    let mut threads = Vec::new();
    let mut groups = Vec::new();
    let mut taken = vec![false; topology.cpu_count() as usize];
    for (g, group) in doc.threads.iter().enumerate() {
        let cpus: Vec<u32> = match group.cpus.get_ref() {
            CpuSet::All => (0..topology.cpu_count()).collect(),
            CpuSet::List(list) => list.clone(),
        };
        for &cpu in &cpus {
            if cpu >= topology.cpu_count() {
                return Err(loaded
                    .error_at(
                        group.cpus.span(),
                        &format!("threads.{}.cpus", group.name()),
                        format!("CPU {cpu} does not exist on {}", topology.spec.name),
                    )
                    .with_valid(format!("CPUs 0-{}", topology.cpu_count() - 1)));
            }
            if std::mem::replace(&mut taken[cpu as usize], true) {
                return Err(loaded.error_at(
                    group.cpus.span(),
                    &format!("threads.{}.cpus", group.name()),
                    format!(
                        "CPU {cpu} already runs another thread group (thread group {})",
                        g + 1
                    ),
                ));
            }
        }
        let script = script_names
            .iter()
            .position(|n| *n == group.script.get_ref())
            .ok_or_else(|| {
                loaded.error_at(
                    group.script.span(),
                    &format!("threads.{}.script", group.name()),
                    format!("unknown script `{}`", group.script.get_ref()),
                )
            })?;
        for (tid, &cpu) in cpus.iter().enumerate() {
            threads.push(ThreadSpec {
                cpu,
                script: script as u32,
                tid: tid as u32,
                group_size: cpus.len() as u32,
            });
        }
        groups.push((group.name().to_string(), cpus));
    }
    threads.sort_by_key(|t| t.cpu);

    let stop = match doc.run.length() {
        RunLength::Iterations(n) => StopRule::Iterations(n),
        RunLength::Cycles(c) => StopRule::Cycles(c),
    };
    let config = SimConfig {
        topology,
        memory,
        program,
        threads,
        stop,
        warmup_iterations: doc.run.warmup_iterations,
        max_cycles: *doc.run.max_cycles.get_ref(),
        max_events: loaded.limits.events,
        max_steps_without_time: loaded.limits.steps_without_time,
        seed: doc.seed,
        check_invariants: options.check_invariants,
    };
    // Refused before the run allocates it.
    let estimate = sim_core::engine::estimate_run_bytes(&config);
    if estimate > loaded.limits.host_memory_bytes {
        return Err(InputError::whole_file(
            &loaded.source.path,
            format!(
                "a run would take about {} MiB of host memory ({} bytes of instances in {} \
                 lines, {} running CPUs), more than the limit of {} MiB",
                estimate >> 20,
                config.memory.total_bytes,
                config.memory.unit_count(),
                config.threads.len(),
                loaded.limits.host_memory_bytes >> 20
            ),
        )
        .with_valid(format!(
            "fewer or smaller instances; or raise the limit with \
             `--set-limit host_memory_bytes={estimate}`"
        )));
    }
    Ok(BuiltVariant {
        name: String::new(),
        description: None,
        config,
        groups,
    })
}
