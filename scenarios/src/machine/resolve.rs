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
    let mut preset_params = None;
    let spec = match &doc.machine {
        MachineRef::Preset(name) => {
            let resolved = preset_ref(source, name, "machine")?;
            preset_params = Some(resolved.params);
            resolved.spec
        }
        MachineRef::Inline(m) => {
            let base = match &m.preset {
                Some(name) => {
                    let resolved = preset_ref(source, name, "machine.preset")?;
                    preset_params = Some(resolved.params);
                    Some(resolved.spec)
                }
                None => None,
            };
            inline_machine(source, m, base.as_ref())?
        }
    };
    let topology = Topology::new(spec).map_err(|e| spec_error(source, doc, e))?;
    Ok((topology, preset_params))
}

/// A preset reference: `NAME` or `NAME:MODE,MODE` (`epyc-milan-2s:nps4`),
/// given at `key`.
fn preset_ref(
    source: &SourceFile,
    name: &Spanned<String>,
    key: &str,
) -> Result<Resolved, InputError> {
    let err = |message: String| InputError::at(source, name.span(), key, message);
    presets::resolve_preset(name.get_ref()).map_err(|e| match e {
        ResolveError::UnknownPreset { name: given } => {
            err(format!("unknown machine preset `{given}`")).with_choices(&given, &presets::names())
        }
        ResolveError::UnknownMode {
            preset,
            mode,
            modes,
        } => err(format!("preset `{preset}` has no mode `{mode}`")).with_choices(&mode, &modes),
        e @ (ResolveError::ConflictingModes { .. } | ResolveError::RepeatedMode { .. }) => {
            err(e.to_string())
        }
    })
}

/// The keys of an inline `[machine]` read so far: the preset it starts
/// from, and the required keys that neither the file nor a preset gave.
struct InlineKeys<'a> {
    base: Option<&'a MachineSpec>,
    missing: Vec<&'static str>,
}

impl InlineKeys<'_> {
    /// A required key: the file's value, else the preset's, else noted
    /// missing (the placeholder returned then is never used: the machine
    /// is refused).
    fn required<T: Clone>(
        &mut self,
        given: &Option<Spanned<T>>,
        key: &'static str,
        from_base: impl Fn(&MachineSpec) -> T,
        placeholder: T,
    ) -> T {
        match (given, self.base) {
            (Some(v), _) => v.get_ref().clone(),
            (None, Some(b)) => from_base(b),
            (None, None) => {
                self.missing.push(key);
                placeholder
            }
        }
    }

    /// An optional key: the file's value, else the preset's, else what a
    /// machine given whole had before the key existed.
    fn optional<T: Copy>(
        &self,
        given: &Option<Spanned<T>>,
        from_base: impl Fn(&MachineSpec) -> T,
        default: T,
    ) -> T {
        given
            .as_ref()
            .map(|v| *v.get_ref())
            .or(self.base.map(from_base))
            .unwrap_or(default)
    }
}

/// An inline `[machine]` table as a spec: each key from the file, else
/// from the preset it starts from (`base`); an error lists every required
/// key that neither gives. Long on purpose: one `MachineSpec` literal with
/// a line or a few per key, so each key's default and source read in one
/// place (the latency keys are [`inline_latency`]'s).
fn inline_machine(
    source: &SourceFile,
    m: &schema::InlineMachine,
    base: Option<&MachineSpec>,
) -> Result<MachineSpec, InputError> {
    let mut keys = InlineKeys {
        base,
        missing: Vec::new(),
    };
    let l3_shared_lines = match (&m.l3_shared_lines, base) {
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
            .or_else(|| base.map(|b| format!("{} (modified)", b.name)))
            .unwrap_or_else(|| "custom".to_string()),
        clock_mhz: keys.required(&m.clock_mhz, "clock_mhz", |b| b.clock_mhz, 1),
        sockets: keys.required(&m.sockets, "sockets", |b| b.sockets, 1),
        nodes_per_socket: keys.required(
            &m.nodes_per_socket,
            "nodes_per_socket",
            |b| b.nodes_per_socket,
            1,
        ),
        l3_per_node: keys.required(&m.l3_per_node, "l3_per_node", |b| b.l3_per_node, 1),
        cores_per_l3: keys.required(&m.cores_per_l3, "cores_per_l3", |b| b.cores_per_l3, 1),
        threads_per_core: keys.required(
            &m.threads_per_core,
            "threads_per_core",
            |b| b.threads_per_core,
            1,
        ),
        line_size_bytes: keys.required(
            &m.line_size_bytes,
            "line_size_bytes",
            |b| b.line_size_bytes,
            64,
        ),
        protocol: match (&m.protocol, base) {
            (Some(p), _) => match p.get_ref() {
                schema::Protocol::Mesi => Protocol::Mesi,
                schema::Protocol::Mesif => Protocol::Mesif,
                schema::Protocol::Moesi => Protocol::Moesi,
            },
            (None, Some(b)) => b.protocol,
            (None, None) => {
                keys.missing.push("protocol");
                Protocol::Mesi
            }
        },
        lookup: match (&m.lookup, base) {
            (Some(p), _) => match p.get_ref() {
                schema::Lookup::Local => Lookup::Local,
                schema::Lookup::Home => Lookup::Home,
            },
            (None, Some(b)) => b.lookup,
            (None, None) => {
                keys.missing.push("lookup");
                Lookup::Home
            }
        },
        adjacent_line_prefetch: m
            .adjacent_line_prefetch
            .or(base.map(|b| b.adjacent_line_prefetch))
            .unwrap_or(false),
        store_buffer_entries: keys.required(
            &m.store_buffer_entries,
            "store_buffer_entries",
            |b| b.store_buffer_entries,
            56,
        ),
        socket_hops: match (&m.socket_hops, base) {
            (Some(v), _) => v.get_ref().clone(),
            (None, Some(b)) => b.socket_hops.clone(),
            (None, None) => Vec::new(),
        },
        node_distances: match (&m.node_distances, &m.distance_unit_cycles, base) {
            (None, None, Some(b)) => b.node_distances.clone(),
            (slit, unit, base) => NodeDistances {
                slit: slit
                    .as_ref()
                    .map(|v| v.get_ref().clone())
                    .unwrap_or_else(|| {
                        base.map(|b| b.node_distances.slit.clone())
                            .unwrap_or_default()
                    }),
                distance_unit_cycles: unit
                    .as_ref()
                    .map(|u| *u.get_ref())
                    .or(base.and_then(|b| b.node_distances.distance_unit_cycles)),
            },
        },
        l3_shared_lines,
        directory: match (&m.directory, base) {
            (Some(v), _) => match v.get_ref() {
                schema::DirectoryPrecision::Exact => DirectoryPrecision::Exact,
                schema::DirectoryPrecision::BroadcastShared => DirectoryPrecision::BroadcastShared,
            },
            (None, Some(b)) => b.directory,
            (None, None) => DirectoryPrecision::Exact,
        },
        // Optional: a machine given whole without it lets SMT
        // siblings share the caches only, as before the key existed.
        smt_share_percent: keys.optional(&m.smt_share_percent, |b| b.smt_share_percent, 100),
        // Optional: uniform arbitration, as before the key existed.
        arbitration_near_owner_percent: keys.optional(
            &m.arbitration_near_owner_percent,
            |b| b.arbitration_near_owner_percent,
            0,
        ),
        // Optional: one miss at a time, as before the key existed.
        outstanding_misses: keys.optional(&m.outstanding_misses, |b| b.outstanding_misses, 1),
        // Optional: no reorder window (branches and arithmetic wait
        // for their values), as before the keys existed.
        reorder_window_entries: keys.optional(
            &m.reorder_window_entries,
            |b| b.reorder_window_entries,
            0,
        ),
        dispatch_width: keys.optional(&m.dispatch_width, |b| b.dispatch_width, 1),
        mispredict_penalty_cycles: keys.optional(
            &m.mispredict_penalty_cycles,
            |b| b.mispredict_penalty_cycles,
            0,
        ),
        lock_rfo_ahead: m
            .lock_rfo_ahead
            .or(base.map(|b| b.lock_rfo_ahead))
            .unwrap_or(false),
        deep_idle_writeback_cycles: keys.optional(
            &m.deep_idle_writeback_cycles,
            |b| b.deep_idle_writeback_cycles,
            0,
        ),
        // Last, so that a missing latency is listed after the other keys.
        latency: inline_latency(&mut keys, &m.latency, l3_shared_lines),
    };
    if !keys.missing.is_empty() {
        return Err(InputError::at(
            source,
            machine_table_span(source),
            "machine",
            format!(
                "the machine is incomplete: missing {}",
                keys.missing
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
        .with_valid(format!(
            "give every key, or start from a preset with `preset = \"NAME\"` (presets: {})",
            presets::names().join(", ")
        )));
    }
    Ok(spec)
}

/// `[machine.latency]` of an inline machine, each key from the file, else
/// from the preset; the L3 hit is required only when the L3 answers reads.
fn inline_latency(
    keys: &mut InlineKeys,
    l: &schema::LatencyOverrides,
    l3_shared_lines: L3SharedLines,
) -> LatencySpec {
    let base = keys.base;
    LatencySpec {
        l1_hit_cycles: keys.required(
            &l.l1_hit_cycles,
            "latency.l1_hit_cycles",
            |b| b.latency.l1_hit_cycles,
            1,
        ),
        locked_op_cycles: keys.required(
            &l.locked_op_cycles,
            "latency.locked_op_cycles",
            |b| b.latency.locked_op_cycles,
            0,
        ),
        smt_transfer_cycles: keys.required(
            &l.smt_transfer_cycles,
            "latency.smt_transfer_cycles",
            |b| b.latency.smt_transfer_cycles,
            0,
        ),
        l3_transfer_cycles: keys.required(
            &l.l3_transfer_cycles,
            "latency.l3_transfer_cycles",
            |b| b.latency.l3_transfer_cycles,
            0,
        ),
        hop_in_node_cycles: keys.required(
            &l.hop_in_node_cycles,
            "latency.hop_in_node_cycles",
            |b| b.latency.hop_in_node_cycles,
            0,
        ),
        hop_between_nodes_cycles: keys.required(
            &l.hop_between_nodes_cycles,
            "latency.hop_between_nodes_cycles",
            |b| b.latency.hop_between_nodes_cycles,
            0,
        ),
        hop_between_sockets_cycles: keys.required(
            &l.hop_between_sockets_cycles,
            "latency.hop_between_sockets_cycles",
            |b| b.latency.hop_between_sockets_cycles,
            0,
        ),
        dram_cycles: keys.required(
            &l.dram_cycles,
            "latency.dram_cycles",
            |b| b.latency.dram_cycles,
            0,
        ),
        l3_hit_cycles: match (&l.l3_hit_cycles, base) {
            (Some(v), _) => *v.get_ref(),
            (None, Some(b)) => b.latency.l3_hit_cycles,
            // Needed only when the L3 answers reads.
            (None, None) if l3_shared_lines.supplies() => {
                keys.missing.push("latency.l3_hit_cycles");
                0
            }
            (None, None) => 0,
        },
        home_occupancy_cycles: match (&l.home_occupancy_cycles, base) {
            (Some(v), _) => *v.get_ref(),
            (None, Some(b)) => b.latency.home_occupancy_cycles,
            // The presets' rule: one leg of an L3 transfer.
            (None, None) => l.l3_transfer_cycles.as_ref().map_or(0, |v| *v.get_ref()) / 3,
        },
    }
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
