//! The machine of a document: a preset by name (`NAME` or
//! `NAME:MODE,MODE`), or an inline `[machine]` table, complete or on top of a
//! preset, resolved into a [`Topology`]. Every failure is an [`InputError`]
//! at the key in the file that caused it.

use std::ops::Range;

use models::presets::{self, Param, ResolveError, Resolved};
use sim_core::topology::{
    DirectoryPrecision, L3SharedLines, LatencySpec, Lookup, MachineSpec, NodeDistances, Protocol,
    SpecError, Topology,
};
use toml::Spanned;

use crate::format::error::{InputError, SourceFile};
use crate::format::schema::{self, MachineRef, ScenarioDoc};

/// Resolves the machine of a document; errors point into `source`, the
/// file the document was read from.
pub fn build_machine(source: &SourceFile, doc: &ScenarioDoc) -> Result<Topology, InputError> {
    build_machine_with_preset(source, doc).map(|(topology, _)| topology)
}

/// [`build_machine`], also handing back the parameters of the preset the
/// machine is or starts from (`None` without one), so that a build takes
/// its instruction costs from them ([`instruction_costs_from`]) rather
/// than resolving the preset again.
///
/// [`instruction_costs_from`]: crate::machine::costs::instruction_costs_from
pub(crate) fn build_machine_with_preset(
    source: &SourceFile,
    doc: &ScenarioDoc,
) -> Result<(Topology, Option<Vec<Param>>), InputError> {
    let err =
        |span: Range<usize>, key: &str, message: String| InputError::at(source, span, key, message);
    let preset_names = presets::names();
    // A preset reference: `NAME` or `NAME:MODE,MODE` (`epyc-milan-2s:nps4`).
    let from_preset = |name: &Spanned<String>, key: &str| -> Result<Resolved, InputError> {
        presets::resolve_preset(name.get_ref()).map_err(|e| match e {
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
            e @ (ResolveError::ConflictingModes { .. } | ResolveError::RepeatedMode { .. }) => {
                err(name.span(), key, e.to_string())
            }
        })
    };
    let mut preset_params = None;
    let spec = match &doc.machine {
        MachineRef::Preset(name) => {
            let resolved = from_preset(name, "machine")?;
            preset_params = Some(resolved.params);
            resolved.spec
        }
        MachineRef::Inline(m) => {
            let base = match &m.preset {
                Some(name) => {
                    let resolved = from_preset(name, "machine.preset")?;
                    preset_params = Some(resolved.params);
                    Some(resolved.spec)
                }
                None => None,
            };
            let machine_span = machine_table_span(source);
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
            let l3_shared_lines = match (&m.l3_shared_lines, &base) {
                (Some(v), _) => match v.get_ref() {
                    schema::L3SharedLines::NotKept => L3SharedLines::NotKept,
                    schema::L3SharedLines::Inclusive => L3SharedLines::Inclusive,
                    schema::L3SharedLines::VictimWithSharing => L3SharedLines::VictimWithSharing,
                },
                (None, Some(b)) => b.l3_shared_lines,
                // Without a preset: the L3 answers for no other core's line.
                (None, None) => L3SharedLines::NotKept,
            };
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
                socket_hops: match (&m.socket_hops, &base) {
                    (Some(v), _) => v.get_ref().clone(),
                    (None, Some(b)) => b.socket_hops.clone(),
                    (None, None) => Vec::new(),
                },
                node_distances: match (&m.node_distances, &m.distance_unit_cycles, &base) {
                    (None, None, Some(b)) => b.node_distances.clone(),
                    (slit, unit, base) => NodeDistances {
                        slit: slit
                            .as_ref()
                            .map(|v| v.get_ref().clone())
                            .unwrap_or_else(|| {
                                base.as_ref()
                                    .map(|b| b.node_distances.slit.clone())
                                    .unwrap_or_default()
                            }),
                        distance_unit_cycles: unit.as_ref().map(|u| *u.get_ref()).or(base
                            .as_ref()
                            .and_then(|b| b.node_distances.distance_unit_cycles)),
                    },
                },
                l3_shared_lines,
                directory: match (&m.directory, &base) {
                    (Some(v), _) => match v.get_ref() {
                        schema::DirectoryPrecision::Exact => DirectoryPrecision::Exact,
                        schema::DirectoryPrecision::BroadcastShared => {
                            DirectoryPrecision::BroadcastShared
                        }
                    },
                    (None, Some(b)) => b.directory,
                    (None, None) => DirectoryPrecision::Exact,
                },
                // Optional: a machine given whole without it lets SMT
                // siblings share the caches only, as before the key existed.
                smt_share_percent: m
                    .smt_share_percent
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .or(base.as_ref().map(|b| b.smt_share_percent))
                    .unwrap_or(100),
                // Optional: uniform arbitration, as before the key existed.
                arbitration_near_owner_percent: m
                    .arbitration_near_owner_percent
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .or(base.as_ref().map(|b| b.arbitration_near_owner_percent))
                    .unwrap_or(0),
                // Optional: one miss at a time, as before the key existed.
                outstanding_misses: m
                    .outstanding_misses
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .or(base.as_ref().map(|b| b.outstanding_misses))
                    .unwrap_or(1),
                // Optional: no reorder window (branches and arithmetic wait
                // for their values), as before the keys existed.
                reorder_window_entries: m
                    .reorder_window_entries
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .or(base.as_ref().map(|b| b.reorder_window_entries))
                    .unwrap_or(0),
                dispatch_width: m
                    .dispatch_width
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .or(base.as_ref().map(|b| b.dispatch_width))
                    .unwrap_or(1),
                mispredict_penalty_cycles: m
                    .mispredict_penalty_cycles
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .or(base.as_ref().map(|b| b.mispredict_penalty_cycles))
                    .unwrap_or(0),
                lock_rfo_ahead: m
                    .lock_rfo_ahead
                    .or(base.as_ref().map(|b| b.lock_rfo_ahead))
                    .unwrap_or(false),
                deep_idle_writeback_cycles: m
                    .deep_idle_writeback_cycles
                    .as_ref()
                    .map(|v| *v.get_ref())
                    .or(base.as_ref().map(|b| b.deep_idle_writeback_cycles))
                    .unwrap_or(0),
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
                    l3_hit_cycles: match (&l.l3_hit_cycles, &base) {
                        (Some(v), _) => *v.get_ref(),
                        (None, Some(b)) => b.latency.l3_hit_cycles,
                        // Needed only when the L3 answers reads.
                        (None, None) if l3_shared_lines.supplies() => {
                            missing.push("latency.l3_hit_cycles");
                            0
                        }
                        (None, None) => 0,
                    },
                    home_occupancy_cycles: match (&l.home_occupancy_cycles, &base) {
                        (Some(v), _) => *v.get_ref(),
                        (None, Some(b)) => b.latency.home_occupancy_cycles,
                        // The presets' rule: one leg of an L3 transfer.
                        (None, None) => {
                            l.l3_transfer_cycles.as_ref().map_or(0, |v| *v.get_ref()) / 3
                        }
                    },
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
    let topology = Topology::new(spec).map_err(|e| spec_error(source, doc, e))?;
    Ok((topology, preset_params))
}

fn spec_error(source: &SourceFile, doc: &ScenarioDoc, e: SpecError) -> InputError {
    let (span, key) = match &doc.machine {
        MachineRef::Preset(name) => (name.span(), "machine".to_string()),
        MachineRef::Inline(m) => {
            let span = machine_key_spans(m)
                .into_iter()
                .find(|(key, _)| *key == e.key)
                .and_then(|(_, span)| span);
            (
                span.unwrap_or_else(|| machine_table_span(source)),
                format!("machine.{}", e.key),
            )
        }
    };
    InputError::at(source, span, &key, e.message)
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
        ("smt_share_percent", span32(&m.smt_share_percent)),
        (
            "arbitration_near_owner_percent",
            span32(&m.arbitration_near_owner_percent),
        ),
        ("outstanding_misses", span32(&m.outstanding_misses)),
        ("reorder_window_entries", span32(&m.reorder_window_entries)),
        ("dispatch_width", span32(&m.dispatch_width)),
        (
            "mispredict_penalty_cycles",
            span32(&m.mispredict_penalty_cycles),
        ),
        (
            "deep_idle_writeback_cycles",
            span64(&m.deep_idle_writeback_cycles),
        ),
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
        ("latency.l3_hit_cycles", span64(&l.l3_hit_cycles)),
        (
            "latency.home_occupancy_cycles",
            span64(&l.home_occupancy_cycles),
        ),
        ("socket_hops", m.socket_hops.as_ref().map(|s| s.span())),
        (
            "node_distances",
            m.node_distances.as_ref().map(|s| s.span()),
        ),
        ("distance_unit_cycles", span64(&m.distance_unit_cycles)),
    ]
}

/// The span of the `[machine]` header, for errors about the table as a whole.
fn machine_table_span(source: &SourceFile) -> Range<usize> {
    let text = &source.text;
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
