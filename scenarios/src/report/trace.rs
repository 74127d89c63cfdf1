//! The step trace: every memory access of a run, its state changes and its
//! cost, in words a student can follow.
//!
//! A CPU runs its private accesses ahead of the event queue, so entries
//! arrive slightly out of cycle order; the probe keeps the `limit` earliest
//! by (cycle, arrival) and prints them in that order.

use sim_core::coherence::{AccessReport, Route};
use sim_core::cpu::LinuxCpu;
use sim_core::memory::MemoryLayout;
use sim_core::probe::{AccessEvent, AccessKind, BranchSite, Probe};
use sim_core::topology::{Lookup, PairClass, Topology};
use sim_core::Cycle;
use std::collections::BinaryHeap;

/// Collects up to `limit` trace entries (then only counts).
pub struct TraceProbe<'a> {
    topology: &'a Topology,
    memory: &'a MemoryLayout,
    limit: usize,
    kept: BinaryHeap<(u64, u64, String)>,
    arrivals: u64,
    pub omitted: u64,
    /// Per CPU, the last load it went on past: (address, the cycle after
    /// its issue). A wait for it from that cycle is a load waited for at
    /// once, as a blocking load was, and is not shown on its own line.
    went_on: std::collections::BTreeMap<LinuxCpu, (u64, u64)>,
    /// The last mispredicted branch's CPU and cycle: its wait for the
    /// value, reported next, is in its own line already.
    mispredicted: Option<(LinuxCpu, u64)>,
}

impl<'a> TraceProbe<'a> {
    pub fn new(topology: &'a Topology, memory: &'a MemoryLayout, limit: usize) -> Self {
        TraceProbe {
            topology,
            memory,
            limit,
            kept: BinaryHeap::new(),
            arrivals: 0,
            omitted: 0,
            went_on: Default::default(),
            mispredicted: None,
        }
    }

    /// Whether an entry at `cycle` can still be among the earliest `limit`.
    fn full(&mut self, cycle: u64) -> bool {
        if self.limit == 0 {
            self.omitted += 1;
            return true;
        }
        if self.kept.len() < self.limit {
            return false;
        }
        match self.kept.peek() {
            Some(latest) if latest.0 > cycle => false,
            _ => {
                self.omitted += 1;
                true
            }
        }
    }

    fn keep(&mut self, cycle: u64, text: String) {
        self.arrivals += 1;
        self.kept.push((cycle, self.arrivals, text));
        if self.kept.len() > self.limit {
            self.kept.pop();
            self.omitted += 1;
        }
    }

    /// The kept entries, earliest first.
    pub fn lines(&self) -> Vec<String> {
        self.kept
            .clone()
            .into_sorted_vec()
            .into_iter()
            .map(|(_, _, text)| text)
            .collect()
    }

    fn where_(&self, address: u64) -> String {
        let unit = self.memory.unit_of(address);
        format!(
            "{} (line {}, home node {})",
            self.memory.describe_address(address),
            unit,
            self.memory.unit_homes.get(unit).copied().unwrap_or(0)
        )
    }
}

impl TraceProbe<'_> {
    /// A miss in words: its states, the way the request went, who
    /// supplied the data, whether it crossed sockets or waited, and its
    /// cycles in all.
    fn miss_words(&self, r: &AccessReport, cpu: LinuxCpu) -> String {
        let path = match r.route {
            Route::SameL3 => "resolved inside its L3 domain".to_string(),
            Route::L3 { l3 } => {
                format!("served by its L3 (domain {l3}), which keeps the shared line")
            }
            Route::Directory { node } => match self.topology.spec.lookup {
                Lookup::Local => format!("looked up in the snoop filter of node {node}"),
                Lookup::Home => format!("looked up in the home directory at node {node}"),
            },
            Route::HomeAgent { snoop_filter, home } => format!(
                "missed in the snoop filter of node {snoop_filter}; went on to the home \
                 agent at node {home}, which snooped the other socket"
            ),
            Route::Memory { node } => {
                let t = self.topology;
                let remote_socket = t.socket_of_node(node) != t.socket_of(cpu);
                if t.spec.lookup == Lookup::Local && remote_socket {
                    format!(
                        "missed in the snoop filter of node {}; went on to the home \
                         agent at node {node}; data from its memory (remote)",
                        t.node_of(cpu)
                    )
                } else {
                    format!(
                        "data from memory at node {node} ({})",
                        if t.node_of(cpu) == node {
                            "local"
                        } else {
                            "remote"
                        }
                    )
                }
            }
            _ => String::new(),
        };
        let mut s = format!(
            "miss {}->{}; {}",
            r.requester_before, r.requester_after, path
        );
        if let Some((core, state, class)) = r.supplier {
            s.push_str(&format!(
                "; data from core {core} in {state} ({})",
                class_words(class)
            ));
        }
        if r.cross_socket {
            s.push_str("; crosses sockets");
        }
        let queued = (r.started - r.issued).get();
        if queued > 0 {
            s.push_str(&format!("; waited {queued} cycles behind earlier requests"));
        }
        s.push_str(&format!("; {} cycles in all", r.done - r.issued));
        s
    }
}

fn class_words(class: PairClass) -> &'static str {
    match class {
        PairClass::SameCpu => "same CPU",
        PairClass::SmtSibling => "SMT sibling",
        PairClass::SameL3 => "same L3",
        PairClass::SameNode => "cross-L3, same node",
        PairClass::SameSocket => "cross-node, same socket",
        PairClass::CrossSocket => "cross-socket",
    }
}

impl Probe for TraceProbe<'_> {
    fn on_access(&mut self, e: &AccessEvent<'_>) {
        let cycle = e.issued.get();
        if self.full(cycle) {
            return;
        }
        let what = match (e.kind, e.new_value) {
            (AccessKind::Atomic(_), Some(new)) => format!("{} -> {}", e.value, new),
            (AccessKind::Atomic(_), None) => format!("{} (unchanged)", e.value),
            (AccessKind::Load | AccessKind::LoadForwarded, _) => format!("reads {}", e.value),
            (AccessKind::Prefetch, _) => "the buddy line of its miss, not waited for".to_string(),
            (AccessKind::RunAhead, _) => {
                "requested ahead of an operation that waits, not waited for".to_string()
            }
            (AccessKind::StoreRfoAhead, _) => {
                "requested for ownership ahead of its store's drain, not waited for".to_string()
            }
            _ => format!("writes {}", e.value),
        };
        let Some(r) = e.report else {
            let how = if e.kind == AccessKind::Load {
                // A load that shared the request of an earlier load of the
                // line, queued at its home (the CPU went on past both).
                "sharing the queued request of its earlier load of the line"
            } else {
                "answered by its own store buffer"
            };
            let text = format!(
                "[cycle {:>8}] CPU {:<3} {} {}: {}, {how}, {} cycles",
                cycle,
                e.cpu,
                e.kind.describe(),
                self.where_(e.address),
                what,
                e.latency_cycles
            );
            self.keep(cycle, text);
            return;
        };
        let head = format!(
            "[cycle {:>8}] CPU {:<3} {} {}: {}",
            cycle,
            e.cpu,
            e.kind.describe(),
            self.where_(e.address),
            what
        );
        let mut detail = match r.route {
            Route::Hit => format!(
                "hit in its own cache ({}{}), {} cycles",
                r.requester_before,
                if r.requester_before != r.requester_after {
                    format!("->{}", r.requester_after)
                } else {
                    String::new()
                },
                r.done - r.issued
            ),
            Route::SmtSibling => format!(
                "hit in its core's cache, last written by its SMT sibling ({}->{}), {} cycles",
                r.requester_before,
                r.requester_after,
                r.done - r.issued
            ),
            _ => self.miss_words(r, e.cpu),
        };
        if r.hit_while_requests_wait {
            // Otherwise it reads like any hit, next to requests the trace
            // shows queued for the same line.
            detail.push_str(
                "; taken while requests wait for the line, before the home serves the next one \
                 and its snoop reaches this core",
            );
        }
        if e.misses_in_flight > 0 {
            self.went_on.insert(e.cpu, (e.address, e.issued.get() + 1));
        }
        if e.misses_in_flight > 1 {
            // Overlapping misses: the CPU went on past the earlier ones.
            detail.push_str(&format!(
                "; {} of its misses in flight at once",
                e.misses_in_flight
            ));
        }
        if !r.others.is_empty() {
            let changes: Vec<String> = r
                .others
                .iter()
                .take(8)
                .map(|c| format!("core {} {}->{}", c.core, c.before, c.after))
                .collect();
            detail.push_str(&format!(
                "\n{:>23} other caches: {}{}",
                "",
                changes.join(", "),
                if r.others.len() > 8 {
                    format!(" and {} more", r.others.len() - 8)
                } else {
                    String::new()
                }
            ));
        }
        self.keep(cycle, format!("{head}\n{:>23} {detail}", ""));
    }

    fn on_load_wait(
        &mut self,
        cpu: LinuxCpu,
        from: Cycle,
        until: Cycle,
        address: u64,
        field: Option<u32>,
    ) {
        if self.mispredicted.take() == Some((cpu, from.get()))
            || self.went_on.get(&cpu) == Some(&(address, from.get()))
            || self.full(from.get())
        {
            return;
        }
        let what = if field.is_none() {
            "for its misses in flight".to_string()
        } else {
            format!("for the load of {} to arrive", self.where_(address))
        };
        let text = format!(
            "[cycle {:>8}] CPU {:<3} waits {} cycles {what}",
            from.get(),
            cpu,
            until - from
        );
        self.keep(from.get(), text);
    }

    fn on_mispredict(
        &mut self,
        cpu: LinuxCpu,
        at: Cycle,
        resolved: Cycle,
        penalty_cycles: u64,
        site: &BranchSite<'_>,
    ) {
        self.mispredicted = Some((cpu, at.get()));
        if self.full(at.get()) {
            return;
        }
        let text = format!(
            "[cycle {:>8}] CPU {:<3} branch mispredicted at {} line {}, column {}: waits {} cycles for its value, then {} cycles of misprediction penalty",
            at.get(),
            cpu,
            site.origin,
            site.line,
            site.column,
            resolved - at,
            penalty_cycles
        );
        self.keep(at.get(), text);
    }

    fn on_store_posted(
        &mut self,
        cpu: LinuxCpu,
        cycle: Cycle,
        address: u64,
        _field: u32,
        value: i64,
    ) {
        if self.full(cycle.get()) {
            return;
        }
        let text = format!(
            "[cycle {:>8}] CPU {:<3} store {}: writes {}, posted to the store buffer (the line is not writable here yet)",
            cycle.get(),
            cpu,
            self.where_(address),
            value
        );
        self.keep(cycle.get(), text);
    }

    fn on_iteration(
        &mut self,
        cpu: LinuxCpu,
        index: u64,
        start: Cycle,
        end: Cycle,
        _measured: bool,
    ) {
        if self.full(end.get()) {
            return;
        }
        let text = format!(
            "[cycle {:>8}] CPU {:<3} iteration {} done in {} cycles",
            end.get(),
            cpu,
            index,
            end - start
        );
        self.keep(end.get(), text);
    }
}
