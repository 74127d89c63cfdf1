//! The machine of a document: a preset by name (`NAME` or
//! `NAME:MODE,MODE`), or an inline `[machine]` table, complete or on top of a
//! preset, resolved into a [`Topology`]. Every failure is an [`InputError`]
//! at the key in the file that caused it.

use std::ops::Range;

use models::presets::{self, Param, ResolveError, Resolved};
use sim_core::topology::{
    CleanSharedLineAnswer, DirectoryPrecision, L3SharedLines, LatencySpec, Lookup, MachineSpec,
    NodeDistances, PrivateCacheSpec, Protocol, SpecError, Topology,
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
    let clock_mhz = keys.required(&m.clock_mhz, "clock_mhz", |b| b.clock_mhz, 1);
    // The levels the machine has, for the legs only they use.
    let levels = MachineLevels {
        sockets: m
            .sockets
            .as_ref()
            .map(|v| *v.get_ref())
            .or(base.map(|b| b.sockets)),
        nodes_per_socket: m
            .nodes_per_socket
            .as_ref()
            .map(|v| *v.get_ref())
            .or(base.map(|b| b.nodes_per_socket)),
    };
    let spec = MachineSpec {
        name: m
            .name
            .clone()
            .or_else(|| base.map(|b| format!("{} (modified)", b.name)))
            .unwrap_or_else(|| "custom".to_string()),
        clock_mhz,
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
        // Optional: the forwarding copy, else memory, as before the key
        // existed.
        clean_shared_line_answer: match (&m.clean_shared_line_answer, base) {
            (Some(v), _) => match v.get_ref() {
                schema::CleanSharedLineAnswer::MemoryOrForwarder => {
                    CleanSharedLineAnswer::MemoryOrForwarder
                }
                schema::CleanSharedLineAnswer::HoldingL3 => CleanSharedLineAnswer::HoldingL3,
                schema::CleanSharedLineAnswer::HoldingDie => CleanSharedLineAnswer::HoldingDie,
            },
            (None, Some(b)) => b.clean_shared_line_answer,
            (None, None) => CleanSharedLineAnswer::MemoryOrForwarder,
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
        // Optional: no RFO prefetch (a store's line is requested at the
        // buffer's head), as before the key existed.
        store_rfo_ahead_entries: keys.optional(
            &m.store_rfo_ahead_entries,
            |b| b.store_rfo_ahead_entries,
            0,
        ),
        deep_idle_writeback_cycles: keys.optional(
            &m.deep_idle_writeback_cycles,
            |b| b.deep_idle_writeback_cycles,
            0,
        ),
        // Optional: the preset's sourced sizes; a machine given whole
        // without them has unbounded private caches, as before the keys.
        private_caches: {
            let unbounded = PrivateCacheSpec::UNBOUNDED;
            let cache = |b: &MachineSpec| b.private_caches;
            PrivateCacheSpec {
                l1d_kib: keys.optional(&m.l1d_kib, |b| cache(b).l1d_kib, unbounded.l1d_kib),
                l1d_ways: keys.optional(&m.l1d_ways, |b| cache(b).l1d_ways, unbounded.l1d_ways),
                l2_kib: keys.optional(&m.l2_kib, |b| cache(b).l2_kib, unbounded.l2_kib),
                l2_ways: keys.optional(&m.l2_ways, |b| cache(b).l2_ways, unbounded.l2_ways),
                l2_hit_cycles: keys.optional(
                    &m.l2_hit_cycles,
                    |b| cache(b).l2_hit_cycles,
                    unbounded.l2_hit_cycles,
                ),
            }
        },
        // Last, so that a missing latency is listed after the other keys.
        latency: inline_latency(
            source,
            &mut keys,
            &m.latency,
            (l3_shared_lines, levels),
            clock_mhz,
        )?,
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
            "give every key (`bounce presets show NAME --toml` prints a preset's table with \
             each key's source, to start from), or start from a preset with \
             `preset = \"NAME\"` and give what differs (presets: {})",
            presets::names().join(", ")
        )));
    }
    Ok(spec)
}

// The most cycles a latency leg may have: the range `MachineSpec`'s
// check gives every `latency.*_cycles` key, so that a leg in nanoseconds
// has the same bound.
use sim_core::topology::LATENCY_LIMIT_CYCLES;

/// The clocks `MachineSpec`'s check accepts (`clock_mhz`'s range there):
/// outside them no leg in nanoseconds is converted (the clock's own error
/// is the one to show).
const CLOCK_RANGE_MHZ: std::ops::RangeInclusive<u64> = 1..=100_000;

/// Nanoseconds as core cycles at `clock_mhz`, rounded to the nearest
/// cycle (halves away from zero): the model counts whole cycles, and the
/// nearest one is off by at most half a cycle either way, where cutting
/// the fraction off would make every leg given in ns faster than its
/// source. The same rounding the shipped files' hand conversions use
/// (10.1 ns x 5.6 GHz = 56.6 -> 57). `ns` is finite and at least 0.
pub fn ns_to_cycles(ns: f64, clock_mhz: u64) -> u64 {
    cycles_at(ns, clock_mhz).round() as u64
}

/// Nanoseconds as (fractional) core cycles at `clock_mhz`.
fn cycles_at(ns: f64, clock_mhz: u64) -> f64 {
    ns * clock_mhz as f64 / 1000.0
}

/// Core cycles at `clock_mhz` as nanoseconds (what a leg given in cycles
/// is at a clock: the preset's, or the file's own).
pub fn cycles_to_ns(cycles: u64, clock_mhz: u64) -> f64 {
    cycles as f64 * 1000.0 / clock_mhz as f64
}

/// One latency leg of a `[machine.latency]` table in cycles: the file's
/// `<leg>_cycles`, else its `<leg>_ns` converted at `clock_mhz`, else
/// `None`. Both given, or nanoseconds that are not a time the machine can
/// have, is an error at the `_ns` key.
fn leg_cycles(
    source: &SourceFile,
    leg: &str,
    cycles: &Option<Spanned<u64>>,
    ns: &Option<Spanned<f64>>,
    clock_mhz: u64,
) -> Result<Option<u64>, InputError> {
    let Some(ns) = ns else {
        return Ok(cycles.as_ref().map(|c| *c.get_ref()));
    };
    let ns_key = format!("machine.latency.{leg}_ns");
    let one_unit = format!(
        "either `{leg}_cycles` (whole core cycles at clock_mhz) or `{leg}_ns` (nanoseconds, \
         converted to cycles at clock_mhz and rounded to the nearest cycle), not both"
    );
    if cycles.is_some() {
        return Err(InputError::at(
            source,
            ns.span(),
            &ns_key,
            format!(
                "`latency.{leg}_cycles` and `latency.{leg}_ns` both give the leg `{leg}`; \
                 give it once"
            ),
        )
        .with_valid(one_unit));
    }
    if !CLOCK_RANGE_MHZ.contains(&clock_mhz) {
        return Ok(Some(0));
    }
    let value = *ns.get_ref();
    let max_ns = cycles_to_ns(LATENCY_LIMIT_CYCLES, clock_mhz);
    let in_range = value.is_finite()
        && value >= 0.0
        && cycles_at(value, clock_mhz).round() <= LATENCY_LIMIT_CYCLES as f64;
    if !in_range {
        return Err(InputError::at(
            source,
            ns.span(),
            &ns_key,
            if value.is_finite() {
                format!(
                    "{value} is out of range 0..={max_ns:.1} ns ({LATENCY_LIMIT_CYCLES} cycles \
                     at clock_mhz {clock_mhz})"
                )
            } else {
                format!("{value} is not a number of nanoseconds")
            },
        )
        .with_valid(format!(
            "a number of nanoseconds from 0 to {max_ns:.1}; {one_unit}"
        )));
    }
    Ok(Some(ns_to_cycles(value, clock_mhz)))
}

/// How many sockets and nodes per socket a machine has (`None`: not given,
/// which is an error of its own).
#[derive(Clone, Copy)]
struct MachineLevels {
    sockets: Option<u32>,
    nodes_per_socket: Option<u32>,
}

/// `[machine.latency]` of an inline machine, each key from the file (in
/// cycles, or in nanoseconds converted at `clock_mhz`), else from the
/// preset; the L3 hit is required only when the L3 answers reads, the leg
/// between sockets only on a machine of several, and the leg between the
/// nodes of a socket only where a socket has several (a leg no pair of
/// CPUs takes is 0 when not given).
fn inline_latency(
    source: &SourceFile,
    keys: &mut InlineKeys,
    l: &schema::LatencyOverrides,
    (l3_shared_lines, levels): (L3SharedLines, MachineLevels),
    clock_mhz: u64,
) -> Result<LatencySpec, InputError> {
    let base = keys.base;
    // Each leg as the file gives it, in cycles.
    let mut given = [None; 12];
    for (slot, (leg, cycles, ns)) in given.iter_mut().zip(l.legs()) {
        *slot = leg_cycles(source, leg, cycles, ns, clock_mhz)?;
    }
    let [l1_hit, locked_op, smt_transfer, l3_transfer, l3_hit, hop_in_node, hop_between_nodes, hop_between_sockets, hop_extra_socket_link, clean_snoop_saving, dram, home_occupancy] =
        given;
    let mut required = |given: Option<u64>,
                        key: &'static str,
                        from_base: fn(&MachineSpec) -> u64,
                        placeholder: u64| {
        match (given, base) {
            (Some(v), _) => v,
            (None, Some(b)) => from_base(b),
            (None, None) => {
                keys.missing.push(key);
                placeholder
            }
        }
    };
    let latency = LatencySpec {
        l1_hit_cycles: required(
            l1_hit,
            "latency.l1_hit_cycles",
            |b| b.latency.l1_hit_cycles,
            1,
        ),
        locked_op_cycles: required(
            locked_op,
            "latency.locked_op_cycles",
            |b| b.latency.locked_op_cycles,
            0,
        ),
        smt_transfer_cycles: required(
            smt_transfer,
            "latency.smt_transfer_cycles",
            |b| b.latency.smt_transfer_cycles,
            0,
        ),
        l3_transfer_cycles: required(
            l3_transfer,
            "latency.l3_transfer_cycles",
            |b| b.latency.l3_transfer_cycles,
            0,
        ),
        hop_in_node_cycles: required(
            hop_in_node,
            "latency.hop_in_node_cycles",
            |b| b.latency.hop_in_node_cycles,
            0,
        ),
        hop_between_nodes_cycles: match (hop_between_nodes, base, levels.nodes_per_socket) {
            (None, None, Some(1)) => 0,
            _ => required(
                hop_between_nodes,
                "latency.hop_between_nodes_cycles",
                |b| b.latency.hop_between_nodes_cycles,
                0,
            ),
        },
        hop_between_sockets_cycles: match (hop_between_sockets, base, levels.sockets) {
            (None, None, Some(1)) => 0,
            _ => required(
                hop_between_sockets,
                "latency.hop_between_sockets_cycles",
                |b| b.latency.hop_between_sockets_cycles,
                0,
            ),
        },
        // Optional: without it a further link costs the one-link leg again.
        hop_extra_socket_link_cycles: match (hop_extra_socket_link, base) {
            (Some(v), _) => Some(v),
            (None, Some(b)) => b.latency.hop_extra_socket_link_cycles,
            (None, None) => None,
        },
        // Optional: without it a clean copy answers as a dirty one does.
        clean_snoop_saving_cycles: match (clean_snoop_saving, base) {
            (Some(v), _) => Some(v),
            (None, Some(b)) => b.latency.clean_snoop_saving_cycles,
            (None, None) => None,
        },
        dram_cycles: required(dram, "latency.dram_cycles", |b| b.latency.dram_cycles, 0),
        l3_hit_cycles: match (l3_hit, base) {
            (Some(v), _) => v,
            (None, Some(b)) => b.latency.l3_hit_cycles,
            // Needed only when the L3 answers reads.
            (None, None) if l3_shared_lines.supplies() => {
                keys.missing.push("latency.l3_hit_cycles");
                0
            }
            (None, None) => 0,
        },
        home_occupancy_cycles: match (home_occupancy, base) {
            (Some(v), _) => v,
            (None, Some(b)) => b.latency.home_occupancy_cycles,
            // The presets' rule: one leg of an L3 transfer.
            (None, None) => l3_transfer.unwrap_or(0) / 3,
        },
    };
    Ok(latency)
}

fn spec_error(source: &SourceFile, doc: &ScenarioDoc, e: SpecError) -> InputError {
    let (span, key) = match &doc.machine {
        MachineRef::Preset(name) => (name.span(), "machine".to_string()),
        MachineRef::Inline(m) => {
            let spans = machine_key_spans(m);
            let span_of = |key: &str| {
                spans
                    .iter()
                    .find(|(k, _)| *k == key)
                    .and_then(|(_, span)| span.clone())
            };
            // A cache's ways and size make its sets together: an error
            // about the ways points at the size where only it is given.
            let size_key = match e.key {
                "l1d_ways" => Some("l1d_kib"),
                "l2_ways" => Some("l2_kib"),
                _ => None,
            };
            let (key, span) = match (span_of(e.key), size_key) {
                (None, Some(size)) if span_of(size).is_some() => (size, span_of(size)),
                (span, _) => (e.key, span),
            };
            (
                span.unwrap_or_else(|| machine_table_span(source)),
                format!("machine.{key}"),
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
    // A leg's span: its `_cycles` value, else its `_ns` value.
    let leg = |cycles: &Option<Spanned<u64>>, ns: &Option<Spanned<f64>>| {
        span64(cycles).or(ns.as_ref().map(|s| s.span()))
    };
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
        (
            "store_rfo_ahead_entries",
            span32(&m.store_rfo_ahead_entries),
        ),
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
        ("l1d_kib", span32(&m.l1d_kib)),
        ("l1d_ways", span32(&m.l1d_ways)),
        ("l2_kib", span32(&m.l2_kib)),
        ("l2_ways", span32(&m.l2_ways)),
        ("l2_hit_cycles", span64(&m.l2_hit_cycles)),
        ("latency.l1_hit_cycles", leg(&l.l1_hit_cycles, &l.l1_hit_ns)),
        (
            "latency.locked_op_cycles",
            leg(&l.locked_op_cycles, &l.locked_op_ns),
        ),
        (
            "latency.smt_transfer_cycles",
            leg(&l.smt_transfer_cycles, &l.smt_transfer_ns),
        ),
        (
            "latency.l3_transfer_cycles",
            leg(&l.l3_transfer_cycles, &l.l3_transfer_ns),
        ),
        (
            "latency.hop_in_node_cycles",
            leg(&l.hop_in_node_cycles, &l.hop_in_node_ns),
        ),
        (
            "latency.hop_between_nodes_cycles",
            leg(&l.hop_between_nodes_cycles, &l.hop_between_nodes_ns),
        ),
        (
            "latency.hop_between_sockets_cycles",
            leg(&l.hop_between_sockets_cycles, &l.hop_between_sockets_ns),
        ),
        (
            "latency.hop_extra_socket_link_cycles",
            leg(&l.hop_extra_socket_link_cycles, &l.hop_extra_socket_link_ns),
        ),
        (
            "latency.clean_snoop_saving_cycles",
            leg(&l.clean_snoop_saving_cycles, &l.clean_snoop_saving_ns),
        ),
        (
            "clean_shared_line_answer",
            m.clean_shared_line_answer.as_ref().map(|s| s.span()),
        ),
        ("latency.dram_cycles", leg(&l.dram_cycles, &l.dram_ns)),
        ("latency.l3_hit_cycles", leg(&l.l3_hit_cycles, &l.l3_hit_ns)),
        (
            "latency.home_occupancy_cycles",
            leg(&l.home_occupancy_cycles, &l.home_occupancy_ns),
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

/// How one latency leg of an inline machine was given.
#[derive(Debug, Clone, PartialEq)]
pub enum LegGiven {
    /// `<leg>_cycles` in the machine's table.
    Cycles,
    /// `<leg>_ns` in the machine's table: the nanoseconds given.
    Nanoseconds(f64),
    /// Neither: the cycles of the preset the table starts from, at the
    /// preset's clock.
    Preset { preset: String, clock_mhz: u64 },
    /// Neither, and no preset: the key's default (a home's occupancy, a
    /// third of the L3 transfer; no L3 hit where the L3 answers no reads).
    Default,
}

/// One latency leg of a machine: its name without the unit
/// (`hop_in_node`), its cycles in the built machine, and how it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct LegOrigin {
    pub leg: &'static str,
    pub cycles: u64,
    pub given: LegGiven,
}

/// The latency legs of the document's machine (built as `spec`) and how
/// each was given, in the order `bounce presets show` lists them; `None`
/// for a machine that is a preset by name (every leg the preset's, at
/// its own clock).
pub fn leg_origins(doc: &ScenarioDoc, spec: &MachineSpec) -> Option<Vec<LegOrigin>> {
    let MachineRef::Inline(m) = &doc.machine else {
        return None;
    };
    let preset = m.preset.as_ref().and_then(|name| {
        presets::resolve_preset(name.get_ref())
            .ok()
            .map(|r| (name.get_ref().clone(), r.spec.clock_mhz))
    });
    let l = &spec.latency;
    let cycles_of = |leg: &str| match leg {
        "l1_hit" => l.l1_hit_cycles,
        "locked_op" => l.locked_op_cycles,
        "smt_transfer" => l.smt_transfer_cycles,
        "l3_transfer" => l.l3_transfer_cycles,
        "l3_hit" => l.l3_hit_cycles,
        "hop_in_node" => l.hop_in_node_cycles,
        "hop_between_nodes" => l.hop_between_nodes_cycles,
        "hop_between_sockets" => l.hop_between_sockets_cycles,
        "hop_extra_socket_link" => l
            .hop_extra_socket_link_cycles
            .unwrap_or(l.hop_between_sockets_cycles),
        "clean_snoop_saving" => l.clean_snoop_saving_cycles.unwrap_or(0),
        "dram" => l.dram_cycles,
        "home_occupancy" => l.home_occupancy_cycles,
        other => unreachable!("LatencyOverrides::legs has no leg `{other}`"),
    };
    Some(
        m.latency
            .legs()
            .into_iter()
            .map(|(leg, cycles, ns)| LegOrigin {
                leg,
                cycles: cycles_of(leg),
                given: match (cycles, ns, &preset) {
                    (Some(_), _, _) => LegGiven::Cycles,
                    (None, Some(ns), _) => LegGiven::Nanoseconds(*ns.get_ref()),
                    (None, None, Some((name, clock_mhz))) => LegGiven::Preset {
                        preset: name.clone(),
                        clock_mhz: *clock_mhz,
                    },
                    (None, None, None) => LegGiven::Default,
                },
            })
            .collect(),
    )
}

/// A note that a machine's `clock_mhz` is not the clock of the preset it
/// starts from while some legs are the preset's cycles: where the clock
/// is set (`file`, `line`) and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockNote {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ClockNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// [`ClockNote`] for the document's machine (built as `spec`), when it
/// starts from a preset, sets another `clock_mhz`, and inherits legs: a
/// leg inherited keeps the preset's cycles (as a machine always has), so
/// its time moves with the clock, right for what runs at the core's clock
/// (L1, an L3 at core clock) and wrong for what does not (a mesh, an I/O
/// die, memory). The note names each such leg with its nanoseconds at
/// both clocks, so a user sees it and gives the leg in `_ns` or
/// `_cycles`. `None` otherwise.
pub fn clock_note(source: &SourceFile, doc: &ScenarioDoc, spec: &MachineSpec) -> Option<ClockNote> {
    let MachineRef::Inline(m) = &doc.machine else {
        return None;
    };
    let clock = m.clock_mhz.as_ref()?;
    let origins = leg_origins(doc, spec)?;
    // A leg of no cycles has no time to move, and a leg the topology never
    // takes (between sockets on one socket, a further socket link where no
    // two sockets are more than one apart, between the nodes of a socket on
    // one node a socket) moves nothing: naming them would ask a user to
    // give legs the machine does not have.
    let unused = |leg: &str| match leg {
        "hop_between_sockets" => spec.sockets == 1,
        "hop_extra_socket_link" => spec.socket_hops.iter().flatten().all(|&hops| hops <= 1),
        "hop_between_nodes" => spec.nodes_per_socket == 1,
        _ => false,
    };
    let mut preset_of = None;
    let inherited: Vec<String> = origins
        .iter()
        .filter(|o| o.cycles != 0 && !unused(o.leg))
        .filter_map(|o| match &o.given {
            LegGiven::Preset { preset, clock_mhz } if *clock_mhz != spec.clock_mhz => {
                preset_of = Some((preset.clone(), *clock_mhz));
                Some(format!(
                    "{}_cycles {} ({:.1} ns at {clock_mhz} MHz, {:.1} ns at {} MHz)",
                    o.leg,
                    o.cycles,
                    cycles_to_ns(o.cycles, *clock_mhz),
                    cycles_to_ns(o.cycles, spec.clock_mhz),
                    spec.clock_mhz
                ))
            }
            _ => None,
        })
        .collect();
    let (preset, preset_clock_mhz) = preset_of?;
    let place = crate::format::error::Place::at(source, clock.span());
    Some(ClockNote {
        file: place.file,
        line: place.line,
        message: format!(
            "`clock_mhz = {}` is not the {preset_clock_mhz} MHz of preset `{preset}`, and {} \
             latency leg(s) are the preset's cycles, kept as cycles, so their time moves with \
             the clock: {}. A leg that does not run at the core's clock (a mesh, an I/O die, \
             memory) keeps its time when given as `<leg>_ns`; give `<leg>_cycles` to keep \
             cycles and silence this",
            spec.clock_mhz,
            inherited.len(),
            inherited.join(", ")
        ),
    })
}

/// A machine file's machine, with how each key and latency leg was given
/// and the note a clock other than its preset's brings ([`clock_note`]).
pub struct MachineFileView {
    pub topology: Topology,
    /// `None` when the file's table is a preset by name.
    pub keys: Option<Vec<KeyOrigin>>,
    /// `None` when the file's table is a preset by name.
    pub legs: Option<Vec<LegOrigin>>,
    pub clock_note: Option<ClockNote>,
}

/// Where a machine file's key gets its value.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyGiven {
    /// The file gives it, at this line of the file.
    File { line: usize },
    /// The preset the file starts from gives it, with this provenance.
    Preset { preset: String, provenance: String },
    /// Neither: the default of a machine given whole, and why.
    Default { rule: &'static str },
}

/// One key of a machine file's machine (not a latency leg: those are
/// [`LegOrigin`]s), its value in the machine built, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyOrigin {
    pub key: &'static str,
    pub value: presets::ParamValue,
    pub unit: &'static str,
    pub given: KeyGiven,
}

/// What a machine given whole (no `preset`) has for a key it leaves out,
/// with why: the rule `inline_machine` applies. Required keys have none.
fn whole_machine_default(key: &str) -> &'static str {
    match key {
        "adjacent_line_prefetch" => "no buddy-line prefetch",
        "socket_hops" => "every pair of sockets one link apart",
        "node_distances" => "the node legs are hop_between_nodes_cycles and the socket legs",
        "distance_unit_cycles" => "with node_distances, the local memory latency over 10",
        "l3_shared_lines" => "the L3 answers for no other core's line",
        "directory" => "the directory names every sharer",
        "clean_shared_line_answer" => "the Forward copy, else memory",
        "smt_share_percent" => {
            "SMT siblings share only the caches: each runs at a full core's speed beside a busy \
             sibling (a preset's is 60-70 %)"
        }
        "arbitration_near_owner_percent" => "the home picks among waiting requests uniformly",
        "outstanding_misses" => {
            "one miss in flight at a time: no two misses overlap (a preset's is 10-24)"
        }
        "reorder_window_entries" => {
            "no reorder window: the CPU waits for each value before going on (a preset's is \
             192-512)"
        }
        "dispatch_width" => "one window entry a cycle (used only with a reorder window)",
        "mispredict_penalty_cycles" => "no mispredict penalty (used only with a reorder window)",
        "lock_rfo_ahead" => "a locked instruction's line is not requested ahead of its turn",
        "store_rfo_ahead_entries" => "a buffered store requests its line only when it drains",
        "deep_idle_writeback_cycles" => "never: a sleeping core keeps its caches",
        "l1d_kib" | "l1d_ways" | "l2_kib" | "l2_ways" | "l2_hit_cycles" => {
            "unbounded private caches: no line is ever evicted for capacity"
        }
        _ => "",
    }
}

/// The unit a machine key's value is in, as `bounce presets show` prints it.
fn key_unit(key: &str) -> &'static str {
    match key {
        "clock_mhz" => "MHz",
        "line_size_bytes" => "bytes",
        "store_buffer_entries" | "reorder_window_entries" => "entries",
        "dispatch_width" => "entries per cycle",
        "smt_share_percent" | "arbitration_near_owner_percent" => "percent",
        "outstanding_misses" => "misses",
        "l1d_kib" | "l2_kib" => "KiB",
        "l1d_ways" | "l2_ways" => "ways",
        k if k.ends_with("_cycles") => "cycles",
        _ => "",
    }
}

/// The span of each key an inline machine gives (`Some(0..0)` for the
/// flags, which keep no span), by its name in `SPEC_KEYS`; latency legs
/// are left out ([`leg_origins`] has them).
fn given_key_spans(m: &schema::InlineMachine) -> Vec<(&'static str, Option<Range<usize>>)> {
    let flag = |v: &Option<bool>| v.map(|_| 0..0);
    let mut spans: Vec<(&'static str, Option<Range<usize>>)> = machine_key_spans(m)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("latency."))
        .collect();
    spans.extend([
        ("name", m.name.as_ref().map(|_| 0..0)),
        ("protocol", m.protocol.as_ref().map(|s| s.span())),
        ("lookup", m.lookup.as_ref().map(|s| s.span())),
        ("adjacent_line_prefetch", flag(&m.adjacent_line_prefetch)),
        (
            "l3_shared_lines",
            m.l3_shared_lines.as_ref().map(|s| s.span()),
        ),
        ("directory", m.directory.as_ref().map(|s| s.span())),
        ("lock_rfo_ahead", flag(&m.lock_rfo_ahead)),
    ]);
    spans
}

/// Every key of a machine file's machine but the latency legs, in
/// `SPEC_KEYS` order, with its value and where it comes from: the file
/// (its line, `line_of` turning a span into the file's line), the preset
/// it starts from, or a machine given whole's default. `None` for a
/// machine that is a preset by name.
pub fn key_origins(
    doc: &ScenarioDoc,
    spec: &MachineSpec,
    line_of: &dyn Fn(Range<usize>) -> usize,
) -> Option<Vec<KeyOrigin>> {
    let MachineRef::Inline(m) = &doc.machine else {
        return None;
    };
    let preset = m
        .preset
        .as_ref()
        .and_then(|name| presets::resolve_preset(name.get_ref()).ok());
    let spans = given_key_spans(m);
    Some(
        presets::spec_values(spec)
            .into_iter()
            .filter(|(key, _)| !key.starts_with("latency."))
            .map(|(key, value)| {
                let span = spans
                    .iter()
                    .find(|(k, _)| *k == key)
                    .and_then(|(_, s)| s.clone());
                let given = match (span, &preset) {
                    (Some(span), _) => KeyGiven::File {
                        line: if span.is_empty() { 0 } else { line_of(span) },
                    },
                    (None, Some(r)) => KeyGiven::Preset {
                        preset: r.reference(),
                        provenance: r
                            .params
                            .iter()
                            .find(|p| p.key == key)
                            .map_or(String::new(), |p| p.kind.name().to_string()),
                    },
                    (None, None) => KeyGiven::Default {
                        rule: whole_machine_default(key),
                    },
                };
                KeyOrigin {
                    key,
                    value,
                    unit: key_unit(key),
                    given,
                }
            })
            .collect(),
    )
}
