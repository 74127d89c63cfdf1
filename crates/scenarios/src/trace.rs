//! The step trace: every memory access of a run, its state changes and its
//! cost, in words a student can follow.

use sim_core::coherence::Route;
use sim_core::memory::MemoryLayout;
use sim_core::probe::{AccessEvent, AccessKind, Probe};
use sim_core::topology::{Lookup, PairClass, Topology};
use sim_core::Cycle;

/// Collects up to `limit` trace entries (then only counts).
pub struct TraceProbe<'a> {
    topology: &'a Topology,
    memory: &'a MemoryLayout,
    limit: usize,
    pub lines: Vec<String>,
    pub omitted: u64,
}

impl<'a> TraceProbe<'a> {
    pub fn new(topology: &'a Topology, memory: &'a MemoryLayout, limit: usize) -> Self {
        TraceProbe {
            topology,
            memory,
            limit,
            lines: Vec::new(),
            omitted: 0,
        }
    }

    fn full(&mut self) -> bool {
        if self.lines.len() >= self.limit {
            self.omitted += 1;
            true
        } else {
            false
        }
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
        if self.full() {
            return;
        }
        let what = match (e.kind, e.new_value) {
            (AccessKind::Atomic(_), Some(new)) => format!("{} -> {}", e.value, new),
            (AccessKind::Atomic(_), None) => format!("{} (unchanged)", e.value),
            (AccessKind::Load | AccessKind::LoadForwarded, _) => format!("reads {}", e.value),
            _ => format!("writes {}", e.value),
        };
        let Some(r) = e.report else {
            self.lines.push(format!(
                "[cycle {:>8}] CPU {:<3} {} {}: {}, answered by its own store buffer",
                "",
                e.cpu,
                e.kind.describe(),
                self.where_(e.address),
                what
            ));
            return;
        };
        let cycle = r.issued.get();
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
            _ => {
                let path = match r.route {
                    Route::SameL3 => "resolved inside its L3 domain".to_string(),
                    Route::Directory { node } => match self.topology.spec.lookup {
                        Lookup::Local => format!("looked up in the snoop filter of node {node}"),
                        Lookup::Home => format!("looked up in the home directory at node {node}"),
                    },
                    Route::Memory { node } => format!(
                        "data from memory at node {node} ({})",
                        if self.topology.node_of(e.cpu) == node {
                            "local"
                        } else {
                            "remote"
                        }
                    ),
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
                let queued = r.started - r.issued;
                if queued > 0 {
                    s.push_str(&format!("; waited {queued} cycles behind earlier requests"));
                }
                s.push_str(&format!("; {} cycles in all", r.done - r.issued));
                s
            }
        };
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
        self.lines.push(format!("{head}\n{:>23} {detail}", ""));
    }

    fn on_store_posted(&mut self, cpu: u32, cycle: Cycle, address: u64, _field: u32, value: i64) {
        if self.full() {
            return;
        }
        self.lines.push(format!(
            "[cycle {:>8}] CPU {:<3} store {}: writes {}, posted to the store buffer (the line is not writable here yet)",
            cycle.get(),
            cpu,
            self.where_(address),
            value
        ));
    }

    fn on_iteration(&mut self, cpu: u32, index: u64, start: Cycle, end: Cycle, _measured: bool) {
        if self.full() {
            return;
        }
        self.lines.push(format!(
            "[cycle {:>8}] CPU {:<3} iteration {} done in {} cycles",
            end.get(),
            cpu,
            index,
            end - start
        ));
    }
}
