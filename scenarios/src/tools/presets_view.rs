//! `bounce presets`: the presets as a user reads them, and as an inline
//! machine a user can save and edit.

use crate::format::error::closest;
use crate::machine::LegGiven;
use models::presets::{self, Param, ParamValue, Preset, ResolveError, Resolved, PRESETS};
use sim_core::cpu::LinuxCpu;
use sim_core::topology::Topology;
use std::fmt::Write;

/// The columns of `bounce presets --format csv` (and keys of `--format json`).
pub const LIST_COLUMNS: [&str; 9] = [
    "preset",
    "cpus",
    "sockets",
    "nodes",
    "l3_domains",
    "cores",
    "threads_per_core",
    "modes",
    "summary",
];

/// One row per preset, in [`LIST_COLUMNS`] order: modes as a list
/// (`nps1 (default), nps2`), sizes as numbers.
fn list_rows() -> Vec<Vec<serde_json::Value>> {
    use serde_json::Value;
    PRESETS
        .iter()
        .map(|p| {
            let t = Topology::new((p.build)()).ok();
            let size = |f: fn(&Topology) -> u32| t.as_ref().map_or(Value::Null, |t| f(t).into());
            vec![
                p.name.into(),
                size(|t| t.cpu_count()),
                size(|t| t.spec.sockets),
                size(|t| t.node_count()),
                size(|t| t.l3_count()),
                size(|t| t.core_count()),
                size(|t| t.spec.threads_per_core),
                modes_line(p).into(),
                p.summary.into(),
            ]
        })
        .collect()
}

/// A JSON value as a CSV cell: strings bare, null empty.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Rows of JSON values as a JSON array of objects keyed by `columns`.
fn json_objects(columns: &[&str], rows: &[Vec<serde_json::Value>]) -> serde_json::Value {
    rows.iter()
        .map(|row| {
            columns
                .iter()
                .zip(row)
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<serde_json::Map<_, _>>()
        })
        .map(serde_json::Value::Object)
        .collect()
}

/// The preset list as CSV: a row per preset, [`LIST_COLUMNS`].
pub fn list_csv() -> String {
    let rows: Vec<Vec<String>> = list_rows()
        .iter()
        .map(|r| r.iter().map(cell).collect())
        .collect();
    crate::report::output::csv_table(&LIST_COLUMNS, &rows)
}

/// The preset list as JSON: `{"presets": [{"preset": ..., ...}]}`.
pub fn list_json() -> String {
    let doc = serde_json::json!({ "presets": json_objects(&LIST_COLUMNS, &list_rows()) });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

/// One line per preset: name, summary, CPUs, modes.
pub fn list() -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:>5}  {:<36} summary",
        "preset", "CPUs", "modes"
    );
    for p in PRESETS {
        let cpus = Topology::new((p.build)())
            .map(|t| t.cpu_count().to_string())
            .unwrap_or_else(|_| "?".into());
        let _ = writeln!(
            out,
            "{:<18} {:>5}  {:<36} {}",
            p.name,
            cpus,
            modes_line(p),
            p.summary
        );
    }
    out.push_str(
        "\n`bounce presets show NAME[:MODE,...]` prints a preset's topology and every parameter \
         with its source; `--toml` prints it as a [machine] table.\n",
    );
    out
}

fn modes_line(p: &Preset) -> String {
    p.modes
        .iter()
        .map(|m| {
            if m.default {
                format!("{} (default)", m.name)
            } else {
                m.name.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The topology and every parameter with its source, or (`toml`) the
/// preset written as an inline `[machine]` table. Accepts `NAME:MODES`. An
/// unknown name or mode is an error message naming the valid ones, with a
/// did-you-mean.
pub fn show(name: &str, toml: bool) -> Result<String, String> {
    let resolved = presets::resolve_preset(name).map_err(|e| match e {
        ResolveError::UnknownPreset { name: given } => {
            let names = presets::names();
            let mut message = format!("unknown preset `{given}`; presets: {}", names.join(", "));
            if let Some(s) = closest(&given, &names) {
                let _ = write!(message, "\n  = help: did you mean `{s}`?");
            }
            message
        }
        ResolveError::UnknownMode {
            preset,
            mode,
            modes,
        } => {
            let mut message = format!(
                "preset `{preset}` has no mode `{mode}`; its modes: {}",
                modes.join(", ")
            );
            if let Some(s) = closest(&mode, &modes) {
                let _ = write!(message, "\n  = help: did you mean `{s}`?");
            }
            message
        }
        other => other.to_string(),
    })?;
    let topology = Topology::new(resolved.spec.clone())
        .map_err(|e| format!("preset `{}` does not build: {e}", resolved.reference()))?;
    Ok(if toml {
        to_toml(&resolved, &topology)
    } else {
        describe(&resolved, &topology)
    })
}

/// The columns of `bounce presets show NAME --format csv`, one row per
/// parameter (and keys of each entry of `parameters` in `--format json`).
pub const PARAM_COLUMNS: [&str; 7] = [
    "key",
    "value",
    "unit",
    "provenance",
    "used_by_model",
    "source",
    "note",
];

fn param_value(v: &ParamValue) -> serde_json::Value {
    match v {
        ParamValue::Int(n) => (*n).into(),
        ParamValue::Num(x) => serde_json::Number::from_f64(*x)
            .map_or(serde_json::Value::Null, serde_json::Value::Number),
        ParamValue::Bool(b) => (*b).into(),
        ParamValue::Text(s) => s.clone().into(),
        ParamValue::Matrix(rows) => rows
            .iter()
            .map(|row| row.iter().map(|&h| serde_json::Value::from(h)).collect())
            .collect::<Vec<serde_json::Value>>()
            .into(),
        ParamValue::NotSet => serde_json::Value::Null,
    }
}

fn param_rows(r: &Resolved) -> Vec<Vec<serde_json::Value>> {
    r.params
        .iter()
        .map(|p| {
            vec![
                p.key.into(),
                param_value(&p.value),
                p.unit.into(),
                p.kind.name().into(),
                (!p.is_informational()).into(),
                p.source.into(),
                p.note.into(),
            ]
        })
        .collect()
}

/// What `bounce presets show` prints, in a machine-readable form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShowFormat {
    Text,
    /// The preset as an inline `[machine]` table (`--toml`).
    Toml,
    /// A row per parameter ([`PARAM_COLUMNS`]).
    Csv,
    /// The preset, its topology and its parameters.
    Json,
}

/// The preset `name` in `format`; errors as [`show`]'s.
pub fn show_as(name: &str, format: ShowFormat) -> Result<String, String> {
    match format {
        ShowFormat::Text => show(name, false),
        ShowFormat::Toml => show(name, true),
        ShowFormat::Csv | ShowFormat::Json => {
            // The same resolution (and errors) as the text.
            show(name, false)?;
            let resolved = presets::resolve_preset(name).map_err(|e| e.to_string())?;
            let t = Topology::new(resolved.spec.clone())
                .map_err(|e| format!("preset `{}` does not build: {e}", resolved.reference()))?;
            let rows = param_rows(&resolved);
            if format == ShowFormat::Csv {
                let cells: Vec<Vec<String>> =
                    rows.iter().map(|r| r.iter().map(cell).collect()).collect();
                return Ok(crate::report::output::csv_table(&PARAM_COLUMNS, &cells));
            }
            let spec = &t.spec;
            let doc = serde_json::json!({
                "preset": resolved.reference(),
                "summary": resolved.preset.summary,
                "modes_applied": resolved.modes.iter().map(|m| m.name).collect::<Vec<_>>(),
                "modes": resolved.preset.modes.iter().map(|m| m.name).collect::<Vec<_>>(),
                "topology": {
                    "sockets": spec.sockets,
                    "nodes": t.node_count(),
                    "l3_domains": t.l3_count(),
                    "cores": t.core_count(),
                    "cpus": t.cpu_count(),
                    "threads_per_core": spec.threads_per_core,
                    "line_size_bytes": spec.line_size_bytes,
                    "protocol": spec.protocol.name(),
                    "lookup": spec.lookup.name(),
                },
                "parameters": json_objects(&PARAM_COLUMNS, &rows),
            });
            let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            text.push('\n');
            Ok(text)
        }
    }
}

/// A sorted list of CPU numbers as a Linux cpulist: `0-7,128-135`.
pub fn cpulist(cpus: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if end == start {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

fn cpus_where(t: &Topology, keep: impl Fn(LinuxCpu) -> bool) -> String {
    let cpus: Vec<u32> = t.cpus().filter(|&c| keep(c)).map(LinuxCpu::get).collect();
    cpulist(&cpus)
}

fn plural(n: u32, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn describe(r: &Resolved, t: &Topology) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", r.reference(), r.preset.summary);
    if !r.modes.is_empty() {
        let modes: Vec<String> = r
            .modes
            .iter()
            .map(|m| format!("{} ({})", m.name, m.summary))
            .collect();
        let _ = writeln!(out, "modes applied: {}", modes.join("; "));
    }
    let _ = writeln!(out, "modes: {}", modes_line(r.preset));
    let _ = writeln!(out);
    topology(&mut out, t);
    let _ = writeln!(
        out,
        "parameters (value, unit, provenance, source; then the note):"
    );
    let _ = writeln!(
        out,
        "  (sources: each tag [Sn] and each `calibration.md §N` is listed in docs/sources.md)"
    );
    // Each column as wide as its widest cell, so that a long unit
    // (`entries per cycle`) does not push its row's provenance out of line.
    let widest = |cell: &dyn Fn(&Param) -> usize| r.params.iter().map(cell).max().unwrap_or(0);
    let width = widest(&|p| p.key.len());
    let value_width = widest(&|p| p.value.to_string().chars().count());
    let unit_width = widest(&|p| p.unit.chars().count());
    let kind_width = widest(&|p| p.kind.name().len());
    let model: Vec<&Param> = r.params.iter().filter(|p| !p.is_informational()).collect();
    let info: Vec<&Param> = r.params.iter().filter(|p| p.is_informational()).collect();
    for group in [model, info] {
        for p in group {
            // A key not set has no figure, so no unit either.
            let unit = if p.value == ParamValue::NotSet {
                ""
            } else {
                p.unit
            };
            let _ = writeln!(
                out,
                "  {:<width$}  {:>value_width$} {:<unit_width$} {:<kind_width$} {}",
                p.key,
                p.value.to_string(),
                unit,
                p.kind.name(),
                p.source,
            );
            if !p.note.is_empty() {
                let _ = writeln!(out, "  {:<width$}    {}", "", p.note);
            }
        }
        let _ = writeln!(out);
    }
    out.push_str(
        "info.* parameters are not used by the model yet. Sources: shared/calibration/calibration.md §13 \
         and c2c_summary_table.md.\n",
    );
    out
}

/// Which CPUs are on which socket, node and L3 domain, the links between
/// sockets and the node legs: what a preset or a machine file builds.
fn topology(out: &mut String, t: &Topology) {
    let spec = &t.spec;
    let _ = writeln!(
        out,
        "topology: {}, {}, {}, {}, {} ({} per core), {}-byte lines, {}, lookup {}",
        plural(spec.sockets, "socket"),
        plural(t.node_count(), "node"),
        plural(t.l3_count(), "L3 domain"),
        plural(t.core_count(), "core"),
        plural(t.cpu_count(), "CPU"),
        plural(spec.threads_per_core, "thread"),
        spec.line_size_bytes,
        spec.protocol.name().to_uppercase(),
        spec.lookup.name(),
    );
    let _ = writeln!(
        out,
        "  (Linux numbering: CPU c is thread 0 of core c, CPU c + {} its SMT sibling)",
        t.core_count()
    );
    for socket in 0..spec.sockets {
        let _ = writeln!(
            out,
            "  socket {socket}: CPUs {}",
            cpus_where(t, |c| t.socket_of(c) == socket)
        );
        for node in 0..t.node_count() {
            if t.socket_of_node(node) != socket {
                continue;
            }
            let _ = writeln!(
                out,
                "    node {node}: CPUs {}",
                cpus_where(t, |c| t.node_of(c) == node)
            );
            for l3 in 0..t.l3_count() {
                if t.node_of_core(l3 * spec.cores_per_l3) != node {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "      L3 {l3}: CPUs {}",
                    cpus_where(t, |c| t.l3_of(c) == l3)
                );
            }
        }
    }
    let _ = writeln!(out);
    socket_distances(out, t);
    let _ = writeln!(out);
    node_distances(out, t);
    let _ = writeln!(out);
}

/// `bounce presets show FILE.toml`: what a machine file (a `[machine]`
/// table) builds: its topology, as a preset's is shown, each latency leg in
/// cycles and in nanoseconds at its clock with how the file gives it (in
/// cycles, in nanoseconds, or the preset's cycles), the note a clock
/// other than its preset's brings, and the one-way compare-and-swap
/// ping-pong latency the model gives for a pair of each relation (what
/// `bounce validate --matrix` compares with a measured matrix). The file's
/// own comments hold its sources.
pub fn describe_machine_file(shown: &str, view: &crate::machine::MachineFileView) -> String {
    let t = &view.topology;
    let spec = &t.spec;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: the machine file `{shown}` ({} MHz; its sources are the file's comments)",
        spec.name, spec.clock_mhz
    );
    let _ = writeln!(out);
    topology(&mut out, t);
    if let Some(keys) = &view.keys {
        machine_file_keys(&mut out, keys);
    }
    let _ = writeln!(
        out,
        "latencies (core cycles at {} MHz, the nanoseconds they are at that clock, and how the \
         file gives each: a leg in ns is converted to the nearest cycle):",
        spec.clock_mhz
    );
    let rows: Vec<(String, u64, String)> = match &view.legs {
        Some(legs) => legs
            .iter()
            // The further socket link is optional: listed where the
            // machine has one, otherwise it is the one-link leg again.
            .filter(|o| {
                (o.leg != "hop_extra_socket_link"
                    || spec.latency.hop_extra_socket_link_cycles.is_some())
                    // Optional too: listed only where the file gives it.
                    && (o.leg != "clean_snoop_saving"
                        || spec.latency.clean_snoop_saving_cycles.is_some())
            })
            .map(|o| {
                let given = match &o.given {
                    LegGiven::Cycles => format!("given: {}_cycles", o.leg),
                    LegGiven::Nanoseconds(ns) => format!("given: {}_ns = {ns}", o.leg),
                    LegGiven::Preset { preset, clock_mhz } if *clock_mhz == spec.clock_mhz => {
                        format!("preset {preset}'s cycles, at its clock")
                    }
                    LegGiven::Preset { preset, clock_mhz } => format!(
                        "preset {preset}'s cycles, {:.1} ns at its {clock_mhz} MHz",
                        crate::machine::cycles_to_ns(o.cycles, *clock_mhz)
                    ),
                    LegGiven::Default => match o.leg {
                        "l3_hit" => "not given: 0, the L3 answers no reads (l3_shared_lines)",
                        "hop_between_nodes" => "not given: 0, one node per socket",
                        "hop_between_sockets" => "not given: 0, one socket",
                        "home_occupancy" => "not given: l3_transfer_cycles / 3, as the presets'",
                        _ => "not given: the default",
                    }
                    .to_string(),
                };
                (format!("{}_cycles", o.leg), o.cycles, given)
            })
            .collect(),
        None => {
            let l = &spec.latency;
            [
                ("l1_hit_cycles", l.l1_hit_cycles),
                ("locked_op_cycles", l.locked_op_cycles),
                ("smt_transfer_cycles", l.smt_transfer_cycles),
                ("l3_transfer_cycles", l.l3_transfer_cycles),
                ("l3_hit_cycles", l.l3_hit_cycles),
                ("hop_in_node_cycles", l.hop_in_node_cycles),
                ("hop_between_nodes_cycles", l.hop_between_nodes_cycles),
                ("hop_between_sockets_cycles", l.hop_between_sockets_cycles),
                ("dram_cycles", l.dram_cycles),
                ("home_occupancy_cycles", l.home_occupancy_cycles),
            ]
            .into_iter()
            .map(|(key, cycles)| (key.to_string(), cycles, "the preset's".to_string()))
            .collect()
        }
    };
    let width = rows.iter().map(|(k, _, _)| k.len()).max().unwrap_or(0);
    for (key, cycles, given) in rows {
        let _ = writeln!(
            out,
            "  {key:<width$}  {cycles:>6}  {:>7.1} ns  {given}",
            t.cycles_to_ns(cycles as f64)
        );
    }
    let l = &spec.latency;
    let unset: Vec<&str> = [
        (
            l.hop_extra_socket_link_cycles.is_none(),
            "hop_extra_socket_link_cycles (a leg across h socket links costs h one-link legs)",
        ),
        (
            l.clean_snoop_saving_cycles.is_none(),
            "clean_snoop_saving_cycles (a clean copy answers at a dirty one's cost)",
        ),
    ]
    .into_iter()
    .filter_map(|(unset, text)| unset.then_some(text))
    .collect();
    if !unset.is_empty() {
        let _ = writeln!(out, "  not set: {}", unset.join("; "));
    }
    clean_answers(&mut out, spec);
    if let Some(note) = &view.clock_note {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "one-way CAS ping-pong latency the model gives (line homed on node 0), per pair relation:"
    );
    for (relation, a, b) in relation_pairs(t) {
        let _ = writeln!(
            out,
            "  {relation:<30} CPUs {a:>4} and {b:<4}  {:>7.1} ns",
            presets::one_way_ns(t, LinuxCpu::new(a), LinuxCpu::new(b), 0)
        );
    }
    out
}

/// Every key of a machine file's machine but its latency legs: the value,
/// and where it comes from (the file's line, the preset's table, or the
/// default of a machine given whole, with what that default means).
fn machine_file_keys(out: &mut String, keys: &[crate::machine::KeyOrigin]) {
    use crate::machine::KeyGiven;
    let _ = writeln!(
        out,
        "parameters (value, and where it comes from: the file, the preset it starts from, or \
         the default of a machine given whole; `bounce presets show PRESET` has each key's \
         meaning and a preset's source):"
    );
    // A matrix (socket hops, node distances) is printed whole above; the
    // table names its shape, so one long row does not widen every other.
    let shown = |value: &ParamValue| match value {
        ParamValue::Matrix(rows) => format!("{0} x {0}, above", rows.len()),
        other => other.to_string(),
    };
    let width = keys.iter().map(|k| k.key.len()).max().unwrap_or(0);
    let value_width = keys
        .iter()
        .map(|k| shown(&k.value).chars().count())
        .max()
        .unwrap_or(0);
    let unit_width = keys.iter().map(|k| k.unit.len()).max().unwrap_or(0);
    for k in keys {
        let unit = if k.value == ParamValue::NotSet {
            ""
        } else {
            k.unit
        };
        let given = match &k.given {
            KeyGiven::File { line: 0 } => "given in the file".to_string(),
            KeyGiven::File { line } => format!("given in the file, line {line}"),
            KeyGiven::Preset { preset, provenance } if provenance.is_empty() => {
                format!("preset {preset}'s")
            }
            KeyGiven::Preset { preset, provenance } => {
                format!("preset {preset}'s ({provenance})")
            }
            KeyGiven::Default { rule: "" } => "the default".to_string(),
            KeyGiven::Default { rule } => format!("the default: {rule}"),
        };
        let _ = writeln!(
            out,
            "  {:<width$}  {:>value_width$} {:<unit_width$}  {given}",
            k.key,
            shown(&k.value),
            unit,
        );
    }
    let _ = writeln!(out);
}

/// The rules for clean copies a machine file sets (nothing when it sets
/// neither key: a clean copy then answers as a dirty one, and a line only
/// Shared copies hold comes from memory).
fn clean_answers(out: &mut String, spec: &sim_core::topology::MachineSpec) {
    use sim_core::topology::CleanSharedLineAnswer;
    let l = &spec.latency;
    let rule = match spec.clean_shared_line_answer {
        CleanSharedLineAnswer::MemoryOrForwarder => None,
        CleanSharedLineAnswer::HoldingL3 => Some(format!(
            "its L3 answers, without snooping a core: the transfer costs \
             l3_transfer_cycles - l3_hit_cycles = {} cycles less than a dirty copy's",
            l.l3_transfer_cycles.saturating_sub(l.l3_hit_cycles)
        )),
        CleanSharedLineAnswer::HoldingDie => Some(
            "when every copy is in that one domain, a core of it answers (the Forward copy, \
             else a Shared one) at a transfer's cost, not memory"
                .to_string(),
        ),
    };
    if let Some(rule) = rule {
        let _ = writeln!(
            out,
            "clean_shared_line_answer = \"{}\" (given; its source is the file's comment): \
             a read of a line held only Shared or Forward in another L3 domain: {rule}",
            spec.clean_shared_line_answer.name()
        );
    }
    if let Some(saving) = l.clean_snoop_saving_cycles {
        let _ = writeln!(
            out,
            "clean_snoop_saving_cycles = {saving} (given; its source is the file's comment): \
             a read a core answers from a clean copy (E, F, S) costs {saving} cycles less \
             than from a dirty one (M, O)"
        );
    }
}

/// Whether two CPUs of a machine stand in one relation.
type Relation = fn(&Topology, LinuxCpu, LinuxCpu) -> bool;

/// A pair of CPUs for each relation the machine has, nearest first: CPU 0
/// and the lowest CPU in that relation to it.
fn relation_pairs(t: &Topology) -> Vec<(&'static str, u32, u32)> {
    let relations: [(&'static str, Relation); 5] = [
        ("SMT siblings", |t, a, b| t.core_of(a) == t.core_of(b)),
        ("two cores of one L3", |t, a, b| {
            t.core_of(a) != t.core_of(b) && t.l3_of(a) == t.l3_of(b)
        }),
        ("two L3 domains of one node", |t, a, b| {
            t.l3_of(a) != t.l3_of(b) && t.node_of(a) == t.node_of(b)
        }),
        ("two nodes of one socket", |t, a, b| {
            t.node_of(a) != t.node_of(b) && t.socket_of(a) == t.socket_of(b)
        }),
        ("two sockets", |t, a, b| t.socket_of(a) != t.socket_of(b)),
    ];
    let first = LinuxCpu::new(0);
    relations
        .into_iter()
        .filter_map(|(relation, holds)| {
            t.cpus()
                .find(|&b| b != first && holds(t, first, b))
                .map(|b| (relation, 0, b.get()))
        })
        .collect()
}

/// The links between sockets as `numactl --hardware` lays out its node
/// distances (a row per socket), with the cycles of one leg each way.
fn socket_distances(out: &mut String, t: &Topology) {
    let sockets = t.spec.sockets;
    if sockets == 1 {
        let _ = writeln!(out, "socket distances: one socket, no links");
        return;
    }
    let l = &t.spec.latency;
    let _ = match l.hop_extra_socket_link_cycles {
        None => writeln!(
            out,
            "socket distances (links; a leg costs links x hop_between_sockets_cycles = {} cycles):",
            l.hop_between_sockets_cycles
        ),
        Some(further) => writeln!(
            out,
            "socket distances (links; a leg costs hop_between_sockets_cycles = {} cycles for the \
             first link and hop_extra_socket_link_cycles = {further} for each further one):",
            l.hop_between_sockets_cycles
        ),
    };
    let mut header = String::from("  socket");
    for b in 0..sockets {
        let _ = write!(header, " {b:>3}");
    }
    let _ = writeln!(out, "{header}");
    for a in 0..sockets {
        let mut row = format!("  {a:>5}:");
        for b in 0..sockets {
            let _ = write!(row, " {:>3}", t.socket_hops(a, b));
        }
        let _ = writeln!(out, "{row}");
    }
}

/// Machines with more nodes than this print no node matrices (too wide).
const MAX_NODES_SHOWN: u32 = 32;

/// The legs between NUMA nodes (inside a socket and across sockets) as the
/// model charges them, and the same as `numactl --hardware` would print
/// them by the SLIT rule of `sim_core::topology::NodeDistances` (memory
/// latency relative to the local one, x 10), so a user can set the two
/// side by side.
fn node_distances(out: &mut String, t: &Topology) {
    let nodes = t.node_count();
    if nodes > MAX_NODES_SHOWN {
        let _ = writeln!(
            out,
            "node distances: {nodes} nodes, more than the {MAX_NODES_SHOWN} shown"
        );
        return;
    }
    let l = &t.spec.latency;
    let leg = |a: u32, b: u32| {
        if a == b {
            l.hop_in_node_cycles
        } else {
            t.node_leg_cycles(a, b)
        }
    };
    let given = !t.spec.node_distances.slit.is_empty();
    let _ = writeln!(
        out,
        "node legs (cycles of one leg from a core to a node's agent; {}):",
        if given {
            format!(
                "from the machine's node_distances at {} round-trip cycles per distance unit",
                t.distance_unit_cycles()
            )
        } else {
            "hop_in_node_cycles on the diagonal, hop_between_nodes_cycles inside a socket, \
             the socket legs across"
                .to_string()
        }
    );
    let matrix = |out: &mut String, width: usize, cell: &dyn Fn(u32, u32) -> u64| {
        let mut header = String::from("    node");
        for b in 0..nodes {
            let _ = write!(header, " {b:>width$}");
        }
        let _ = writeln!(out, "{header}");
        for a in 0..nodes {
            let mut row = format!("  {a:>6}:");
            for b in 0..nodes {
                let _ = write!(row, " {:>width$}", cell(a, b));
            }
            let _ = writeln!(out, "{row}");
        }
    };
    matrix(out, 5, &leg);
    let local = 2 * l.hop_in_node_cycles + l.dram_cycles;
    if given {
        let _ = writeln!(out, "node distances (as given, numactl's form):");
        let slit = &t.spec.node_distances.slit;
        matrix(out, 5, &|a, b| slit[a as usize][b as usize] as u64);
    } else if local > 0 {
        let _ = writeln!(
            out,
            "node distances as numactl would show them by the SLIT rule (10 x memory latency \
             over the local {local} cycles; a measured SLIT may differ):"
        );
        matrix(out, 5, &|a, b| {
            let memory = 2 * leg(a, b) + l.dram_cycles;
            (10 * memory + local / 2) / local
        });
    }
}

/// The hop matrix as a TOML array of arrays.
fn hop_matrix_toml(t: &Topology) -> String {
    let sockets = t.spec.sockets;
    let rows: Vec<Vec<u32>> = (0..sockets)
        .map(|a| (0..sockets).map(|b| t.socket_hops(a, b)).collect())
        .collect();
    ParamValue::Matrix(rows).to_string()
}

/// Comment lines (`# ...`) wrapped at about 96 columns.
fn comment(out: &mut String, text: &str) {
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() + word.len() + 1 > 96 && line.len() > 1 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#  ");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

fn toml_value(v: &ParamValue) -> String {
    match v {
        ParamValue::Text(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn param_comment(out: &mut String, p: &Param) {
    let mut text = format!("{}: {}", p.kind.name(), p.source);
    if !p.note.is_empty() {
        text.push_str(". ");
        text.push_str(p.note);
    }
    comment(out, &text);
}

/// The preset as a machine file: the header comments, `[machine]` and
/// `[machine.latency]` with each key's provenance and source, then as
/// comments the scheduler's figures and the informational ones.
fn to_toml(r: &Resolved, t: &Topology) -> String {
    let mut out = String::new();
    toml_header(&mut out, r, t);
    out.push_str("[machine]\n");
    comment(
        &mut out,
        &format!(
            "preset = \"{}\"  (not needed: every key is below; with it, the keys below override the preset)",
            r.reference()
        ),
    );
    let (latency, machine): (Vec<&Param>, Vec<&Param>) = r
        .params
        .iter()
        .filter(|p| !p.is_informational() && !p.key.starts_with(presets::SCHED_PREFIX))
        .partition(|p| p.key.starts_with("latency."));
    for p in machine {
        param_comment(&mut out, p);
        if p.value == ParamValue::NotSet {
            // Left out, as the preset leaves it: a comment names the key.
            let _ = writeln!(out, "# {} (not set)", p.key);
            continue;
        }
        let value = if p.key == "socket_hops" {
            hop_matrix_toml(t)
        } else {
            toml_value(&p.value)
        };
        let _ = writeln!(out, "{} = {}", p.key, value);
    }
    out.push_str("\n[machine.latency]\n");
    comment(&mut out, "core cycles at clock_mhz");
    for p in latency {
        param_comment(&mut out, p);
        let key = p.key.trim_start_matches("latency.");
        if p.value == ParamValue::NotSet {
            let _ = writeln!(out, "# {key} (not set)");
            continue;
        }
        let _ = writeln!(out, "{key} = {}", toml_value(&p.value));
    }
    commented_sections(&mut out, r);
    out
}

/// The comments atop `to_toml`'s machine file: what it is, the modes
/// applied, the shape of the machine and how to use the file.
fn toml_header(out: &mut String, r: &Resolved, t: &Topology) {
    comment(
        out,
        &format!(
            "{} as an inline machine, printed by `bounce presets show {} --toml`. Preset: {}.",
            r.reference(),
            r.reference(),
            r.preset.summary,
        ),
    );
    if !r.modes.is_empty() {
        let modes: Vec<String> = r
            .modes
            .iter()
            .map(|m| format!("{} ({})", m.name, m.summary))
            .collect();
        comment(out, &format!("Modes applied: {}.", modes.join("; ")));
    }
    comment(
        out,
        &format!(
            "{} x {} x {} x {} x {} = {} CPUs. Every key of \
             the schema is given, each with its provenance and source; edit what differs and use it \
             as a scenario's [machine], or save it as a file that scenarios name with \
             `machine = {{ file = \"NAME.toml\" }}`.",
            plural(t.spec.sockets, "socket"),
            plural(t.spec.nodes_per_socket, "node"),
            plural(t.spec.l3_per_node, "L3 domain"),
            plural(t.spec.cores_per_l3, "core"),
            plural(t.spec.threads_per_core, "thread"),
            t.cpu_count()
        ),
    );
}

/// The end of `to_toml`'s machine file, all comments: the scheduler's
/// figures (for a scenario's own `[scheduler]`) and the informational
/// parameters with their sources.
fn commented_sections(out: &mut String, r: &Resolved) {
    // The run queues' figures belong to a scenario's `[scheduler]` table,
    // not to `[machine]`: written as comments, so that this output stays a
    // machine file (`machine = { file = ... }` takes `[machine]` alone).
    out.push('\n');
    comment(
        out,
        "The run queues' parameters (nanoseconds). A [machine] table or machine file \
         runs with the scheduler's defaults; to use this preset's figures, copy these \
         lines, uncommented, into the scenario's own [scheduler] table:",
    );
    out.push_str("# [scheduler]\n");
    for p in r
        .params
        .iter()
        .filter(|p| p.key.starts_with(presets::SCHED_PREFIX))
    {
        param_comment(out, p);
        let key = p.key.trim_start_matches(presets::SCHED_PREFIX);
        let _ = writeln!(out, "# {key} = {}", toml_value(&p.value));
    }
    out.push('\n');
    comment(
        out,
        "Not used by the model (informational), with their sources:",
    );
    for p in r.params.iter().filter(|p| p.is_informational()) {
        let mut text = format!(
            "{} = {} {} ({}: {}",
            p.key,
            p.value,
            p.unit,
            p.kind.name(),
            p.source
        );
        if !p.note.is_empty() {
            text.push_str(". ");
            text.push_str(p.note);
        }
        text.push(')');
        comment(out, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_are_compact() {
        assert_eq!(cpulist(&[]), "");
        assert_eq!(cpulist(&[3]), "3");
        assert_eq!(cpulist(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    }

    #[test]
    fn list_names_every_preset_with_cpus_and_modes() {
        let text = list();
        for p in PRESETS {
            assert!(text.contains(p.name), "{text}");
        }
        assert!(
            text.contains("nps1 (default), nps2, nps4, smt-off"),
            "{text}"
        );
        let milan = text
            .lines()
            .find(|l| l.starts_with("epyc-milan-2s"))
            .unwrap();
        assert!(milan.contains(" 256 "), "{milan}");
    }

    #[test]
    fn show_prints_the_topology_and_the_sources() {
        let text = show("epyc-milan-2s:nps4", false).unwrap();
        assert!(text.starts_with("epyc-milan-2s:nps4: "), "{text}");
        assert!(
            text.contains("topology: 2 sockets, 8 nodes, 16 L3 domains, 128 cores"),
            "{text}"
        );
        assert!(text.contains("    node 1: CPUs 16-31,144-159\n"), "{text}");
        assert!(text.contains("      L3 2: CPUs 16-23,144-151\n"), "{text}");
        assert!(
            text.contains("latency.hop_between_sockets_cycles"),
            "{text}"
        );
        assert!(text.contains("[S1] nviennot"), "{text}");
        // The node legs: 8 nodes, 4 per socket.
        assert!(
            text.contains("node legs (cycles of one leg from a core to a node's agent;"),
            "{text}"
        );
        assert!(text.contains("    node     0     1     2     3     4     5     6     7\n"));
    }

    /// Each parameter row's provenance starts in the same column, whatever
    /// its unit (`entries per cycle` pushed it out of line) or value.
    #[test]
    fn the_parameter_columns_line_up_in_every_preset() {
        for preset in PRESETS {
            let text = show(preset.name, false).unwrap();
            let resolved = presets::resolve_preset(preset.name).unwrap();
            let mut columns = std::collections::BTreeSet::new();
            for p in &resolved.params {
                let line = text
                    .lines()
                    .find(|l| {
                        l.strip_prefix("  ")
                            .and_then(|l| l.strip_prefix(p.key))
                            .is_some_and(|rest| rest.starts_with(' '))
                    })
                    .unwrap_or_else(|| panic!("{}: no row for {}", preset.name, p.key));
                let kind = format!(" {} ", p.kind.name());
                columns.insert(line.find(&kind).unwrap_or_else(|| panic!("{line}")));
            }
            assert_eq!(
                columns.len(),
                1,
                "{}: provenance at columns {columns:?}\n{text}",
                preset.name
            );
        }
    }

    #[test]
    fn show_prints_the_node_legs_and_their_numactl_form() {
        let text = show("icelake-sp-2s", false).unwrap();
        // 51 cycles to the own node's agent, 148 per socket leg; local
        // memory 2 x 51 + DRAM, remote 2 x 148 + DRAM.
        let t = Topology::new(presets::resolve_preset("icelake-sp-2s").unwrap().spec).unwrap();
        let dram = t.spec.latency.dram_cycles;
        let remote = (10 * (2 * 148 + dram) + (102 + dram) / 2) / (102 + dram);
        let expected = format!(
            "    node     0     1\n       0:    51   148\n       1:   148    51\n\
             node distances as numactl would show them by the SLIT rule (10 x memory latency \
             over the local {} cycles; a measured SLIT may differ):\n    node     0     1\n\
             \x20      0:    10 {remote:>5}\n       1: {remote:>5}    10\n",
            102 + dram
        );
        assert!(text.contains(&expected), "{expected}\n{text}");
    }

    #[test]
    fn unknown_names_and_modes_suggest_the_nearest() {
        let e = show("epyc-milan-2", false).unwrap_err();
        assert!(
            e.starts_with("unknown preset `epyc-milan-2`; presets: icelake-sp-2s,"),
            "{e}"
        );
        assert!(e.ends_with("did you mean `epyc-milan-2s`?"), "{e}");
        let e = show("epyc-milan-2s:nps3", false).unwrap_err();
        assert!(
            e.starts_with(
                "preset `epyc-milan-2s` has no mode `nps3`; its modes: nps1, nps2, nps4, smt-off"
            ),
            "{e}"
        );
    }
}
