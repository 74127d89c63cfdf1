//! The messages of a run's first coherence transactions, for the timeline
//! chart of `bounce trace --svg`.
//!
//! The simulator charges a transaction as legs between the requester, the
//! directory and the caches it involves (see `sim_core::coherence`): the
//! request travels to the directory (the line's home, or the requester's
//! own node's snoop filter), the directory forwards to the cache holding
//! the line and sends invalidations to the other copies, and data and
//! acknowledgements travel back to the requester. This module spells each
//! transaction out as those messages, timed by the same hop latencies,
//! starting when the home ordered the request; the last message arrives
//! when the simulator says the access completed. Hits send no message and
//! are not collected.

use sim_core::coherence::AccessReport;
use sim_core::coherence::{Need, Route};
use sim_core::cpu::LinuxCpu;
use sim_core::memory::MemoryLayout;
use sim_core::probe::{AccessEvent, AccessKind, Probe};
use sim_core::topology::{Lookup, Topology};

/// Where a message starts or ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Endpoint {
    /// A core's private cache.
    Core(u32),
    /// An L3 domain's cache, answering for a line it keeps.
    L3(u32),
    /// The directory of a node: the home directory (AMD) or the snoop
    /// filter of the requester's node (Intel).
    Node(u32),
    /// Intel: the home agent of a line's home node, which a request its
    /// socket's snoop filter cannot resolve reaches over UPI.
    HomeAgent(u32),
    /// The memory (DRAM behind the memory controller) of a node.
    Memory(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    Request,
    Forward,
    Invalidate,
    Ack,
    Data,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub from: Endpoint,
    pub to: Endpoint,
    pub send_cycle: u64,
    pub arrive_cycle: u64,
    pub kind: MessageKind,
    pub label: String,
}

/// One access that needed other caches or memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transaction {
    pub cpu: LinuxCpu,
    pub issued_cycle: u64,
    /// When the line arrived (the access completed).
    pub done_cycle: u64,
    /// A load of the CPU's (not a store's drain, an atomic or a prefetch):
    /// loads may be in flight at once.
    pub load: bool,
    /// e.g. `CPU 3 store counters[1].value (line 0): I->M, 312 cycles`.
    pub caption: String,
    pub messages: Vec<Message>,
}

/// Collects the first `limit` transactions in the order their homes
/// served them (then only counts).
pub struct TimelineProbe<'a> {
    topology: &'a Topology,
    memory: &'a MemoryLayout,
    limit: usize,
    arrivals: u64,
    kept: Vec<(u64, u64, Transaction)>,
    /// The latest ordering cycle kept.
    latest_order: u64,
    /// Transactions seen, kept or not (adjacent-line prefetches only when
    /// they are drawn).
    pub seen: u64,
    /// Whether adjacent-line prefetch reads are drawn.
    prefetches: bool,
    /// Prefetch transactions left out ([`TimelineProbe::without_prefetches`]).
    pub prefetches_left_out: u64,
}

impl<'a> TimelineProbe<'a> {
    pub fn new(topology: &'a Topology, memory: &'a MemoryLayout, limit: usize) -> Self {
        TimelineProbe {
            topology,
            memory,
            limit,
            arrivals: 0,
            kept: Vec::new(),
            latest_order: 0,
            seen: 0,
            prefetches: true,
            prefetches_left_out: 0,
        }
    }

    /// Leaves the adjacent-line prefetcher's reads out of the timeline
    /// (they are counted in [`TimelineProbe::prefetches_left_out`]): on a
    /// machine with the prefetcher on, every demand miss brings one, which
    /// doubles the rows without changing what the demand accesses wait for.
    pub fn without_prefetches(mut self) -> Self {
        self.prefetches = false;
        self
    }

    /// The kept transactions, in the order their homes served them.
    pub fn transactions(&self) -> Vec<Transaction> {
        let mut kept = self.kept.clone();
        kept.sort_by_key(|k| (k.0, k.1));
        kept.into_iter().map(|k| k.2).collect()
    }

    /// The name of the directory at `node`, as the machine looks lines up.
    pub fn directory_name(&self) -> &'static str {
        match self.topology.spec.lookup {
            Lookup::Home => "home directory",
            Lookup::Local => "snoop filter",
        }
    }

    /// The messages of a transaction through a directory (or a home agent)
    /// or served by memory. The legs are the ones the model charges (see
    /// `sim_core::coherence`): leg(requester, directory), then per target
    /// leg(directory, target) + leg(target, requester); memory: a leg, the
    /// DRAM and a leg. On Intel (`Lookup::Local`) a request for a copy on another
    /// socket, or for memory of another socket, misses in the requester's
    /// snoop filter and goes on over UPI to the home agent of the line's
    /// home node: the same total, split as the model documents (the socket
    /// leg to the agent less the leg inside its node, which the agent's
    /// snoop of a core of its own socket then takes).
    fn directory_messages(&self, r: &AccessReport, miss: Miss, messages: &mut Vec<Message>) {
        let t = self.topology;
        let (core, start, done) = (miss.core, miss.start, miss.done);
        let requester = Endpoint::Core(core);
        let requester_socket = t.socket_of_core(core);
        let local = t.spec.lookup == Lookup::Local;
        let (first_node, home) = match r.route {
            Route::Directory { node } => (node, None),
            Route::HomeAgent { snoop_filter, home } => (snoop_filter, Some(home)),
            Route::Memory { node } => {
                let remote = t.socket_of_node(node) != requester_socket;
                if local && remote {
                    (t.node_of_core(core), Some(node))
                } else {
                    (node, Some(node))
                }
            }
            _ => return,
        };
        let dir = Endpoint::Node(first_node);
        let at_dir = start + t.hop_core_to_node(core, first_node);
        messages.push(Message {
            from: requester,
            to: dir,
            send_cycle: start,
            arrive_cycle: at_dir.min(done),
            kind: MessageKind::Request,
            label: miss.request_label.clone(),
        });
        // Intel, across sockets: on from the snoop filter to the home agent.
        let through_agent = |home: &u32| match r.route {
            Route::HomeAgent { .. } => true,
            Route::Memory { .. } => local && *home != first_node,
            _ => false,
        };
        let directory = Directory {
            node: first_node,
            at: at_dir,
            agent: home
                .filter(through_agent)
                .map(|home| self.on_to_the_agent(&miss, first_node, at_dir, home, messages)),
        };
        self.snoops(&miss, &directory, messages);
        // Who answers at the end: the home agent, when the request went on
        // to it, else the directory.
        let (answerer, at_answerer) = match directory.agent {
            Some((endpoint, at_agent, _)) => (endpoint, at_agent),
            None => (dir, at_dir),
        };
        self.answer(r, &miss, answerer, at_answerer, messages);
    }

    /// The request's way on from the requester's snoop filter (at node
    /// `filter_node`, reached at `at_filter`) to the home agent of node
    /// `home` (Intel, a line homed on another socket): the socket leg less
    /// the leg inside the node. Answers the agent, the cycle the request
    /// gets there and that leg.
    fn on_to_the_agent(
        &self,
        miss: &Miss,
        filter_node: u32,
        at_filter: u64,
        home: u32,
        messages: &mut Vec<Message>,
    ) -> (Endpoint, u64, u64) {
        let t = self.topology;
        let requester_socket = t.socket_of_core(miss.core);
        let leg = if t.socket_of_node(home) == requester_socket {
            0
        } else {
            t.socket_leg_cycles(requester_socket, t.socket_of_node(home))
                .saturating_sub(t.spec.latency.hop_in_node_cycles)
        };
        let at_agent = at_filter + leg;
        messages.push(Message {
            from: Endpoint::Node(filter_node),
            to: Endpoint::HomeAgent(home),
            send_cycle: at_filter.min(miss.done),
            arrive_cycle: at_agent.min(miss.done),
            kind: MessageKind::Request,
            label: format!("{} (snoop filter miss)", miss.request),
        });
        (Endpoint::HomeAgent(home), at_agent, leg)
    }

    /// The end of a transaction through a directory: memory's read and
    /// data for a line served by memory, the grant of an upgrade (no
    /// supplier), nothing more when a snooped core supplied the data
    /// (`snoops` drew it). `answerer` (the directory, or the home agent
    /// the request went on to) has the request at `at_answerer`.
    fn answer(
        &self,
        r: &AccessReport,
        miss: &Miss,
        answerer: Endpoint,
        at_answerer: u64,
        messages: &mut Vec<Message>,
    ) {
        let t = self.topology;
        let requester = Endpoint::Core(miss.core);
        let done = miss.done;
        if let Route::Memory { node } = r.route {
            // The home reads the line from its memory, which sends the data.
            let read = at_answerer + t.spec.latency.dram_cycles;
            messages.push(Message {
                from: answerer,
                to: Endpoint::Memory(node),
                send_cycle: at_answerer.min(done),
                arrive_cycle: read.min(done),
                kind: MessageKind::Request,
                label: "Read (DRAM)".into(),
            });
            messages.push(Message {
                from: Endpoint::Memory(node),
                to: requester,
                send_cycle: read.min(done),
                arrive_cycle: done,
                kind: MessageKind::Data,
                label: "Data (DRAM)".into(),
            });
        } else if miss.supplier.is_none() {
            // Permission only (an upgrade): the directory (the home agent,
            // when the request went on to it) grants it.
            messages.push(Message {
                from: answerer,
                to: requester,
                send_cycle: at_answerer.min(done),
                arrive_cycle: done,
                kind: MessageKind::Ack,
                label: "Grant".into(),
            });
        }
    }

    /// The directory's snoop of each target (the home agent's, for a
    /// target on another socket when the request went on to it) and the
    /// target's reply: the total is leg(directory, target) either way.
    fn snoops(&self, miss: &Miss, directory: &Directory, messages: &mut Vec<Message>) {
        let t = self.topology;
        let (core, done) = (miss.core, miss.done);
        let requester_socket = t.socket_of_core(core);
        let dir = Endpoint::Node(directory.node);
        let at_dir = directory.at;
        for &(c, before, after) in &miss.targets {
            // Who snoops the target, when it sends, and when the snoop
            // arrives: the total is leg(directory, target) either way.
            let total = t.hop_core_to_node(c, directory.node);
            let (from, sent, arrives) = match directory.agent {
                Some((endpoint, at_agent, leg)) if t.socket_of_core(c) != requester_socket => {
                    (endpoint, at_agent, at_agent + total.saturating_sub(leg))
                }
                _ => (dir, at_dir, at_dir + total),
            };
            let back = arrives + t.hop_core_to_core(c, core);
            let supplies = Some(c) == miss.supplier;
            messages.push(Message {
                from,
                to: Endpoint::Core(c),
                send_cycle: sent.min(done),
                arrive_cycle: arrives.min(done),
                kind: if supplies {
                    MessageKind::Forward
                } else {
                    MessageKind::Invalidate
                },
                label: format!(
                    "{} {before}->{after}",
                    if supplies {
                        format!("Fwd-{}", miss.request)
                    } else {
                        "Inv".to_string()
                    }
                ),
            });
            messages.push(snoop_reply(
                c,
                Endpoint::Core(core),
                arrives.min(done),
                back.min(done),
                supplies,
                before,
            ));
        }
    }

    /// The messages of a transaction its requester's L3 domain resolves:
    /// the L3 answering from its copy, or (same L3, a hit on a sibling)
    /// the L3's tags snooping the copies, drawn as direct snoops.
    fn l3_messages(&self, route: Route, miss: &Miss, messages: &mut Vec<Message>) {
        let requester = Endpoint::Core(miss.core);
        let (start, done) = (miss.start, miss.done);
        let half = start + (done - start) / 2;
        match route {
            Route::L3 { l3 } => {
                // The requester's L3 answers: a request and the data back.
                let cache = Endpoint::L3(l3);
                messages.push(Message {
                    from: requester,
                    to: cache,
                    send_cycle: start,
                    arrive_cycle: half,
                    kind: MessageKind::Request,
                    label: miss.request_label.clone(),
                });
                messages.push(Message {
                    from: cache,
                    to: requester,
                    send_cycle: half,
                    arrive_cycle: done,
                    kind: MessageKind::Data,
                    label: "Data (L3 hit)".into(),
                });
                for &(c, before, after) in &miss.targets {
                    if before != after {
                        // A forwarding copy hands the role to the reader.
                        messages.push(Message {
                            from: cache,
                            to: Endpoint::Core(c),
                            send_cycle: half,
                            arrive_cycle: done,
                            kind: MessageKind::Ack,
                            label: format!("{before}->{after}"),
                        });
                    }
                }
            }
            _ => {
                // Inside one L3 domain: its tags find the copies, at the
                // L3 transfer cost; drawn as direct snoops.
                for &(c, before, after) in &miss.targets {
                    let supplies = Some(c) == miss.supplier;
                    messages.push(Message {
                        from: requester,
                        to: Endpoint::Core(c),
                        send_cycle: start,
                        arrive_cycle: half,
                        kind: if supplies {
                            MessageKind::Forward
                        } else {
                            MessageKind::Invalidate
                        },
                        label: format!(
                            "{} (L3) {before}->{after}",
                            if supplies { miss.request } else { "Inv" }
                        ),
                    });
                    messages.push(snoop_reply(c, requester, half, done, supplies, before));
                }
            }
        }
    }
}

/// A transaction as the timeline draws it: the requesting core, when the
/// home ordered it and when it completed, the request's name (and label,
/// with the cycles it waited), and the caches it involves (core, state
/// before, state after), the supplier among them.
struct Miss {
    core: u32,
    start: u64,
    done: u64,
    request: &'static str,
    request_label: String,
    targets: Vec<(u32, char, char)>,
    supplier: Option<u32>,
}

impl Miss {
    fn of(r: &AccessReport, core: u32, issued: u64) -> Miss {
        let start = r.started.get();
        let have_data = r.requester_before.letter() != 'I';
        let request = need_label(r.need, have_data);
        let queued = start - issued;
        let request_label = if queued > 0 {
            format!("{request} (waited {queued})")
        } else {
            request.to_string()
        };
        let supplier = r.supplier.map(|s| s.0);
        // The caches the transaction involves: the supplier, then the
        // others whose state changed, in core order.
        let mut targets: Vec<(u32, char, char)> = Vec::new();
        if let Some((c, state, _)) = r.supplier {
            let after = r
                .others
                .iter()
                .find(|o| o.core == c)
                .map_or(state.letter(), |o| o.after.letter());
            targets.push((c, state.letter(), after));
        }
        for o in &r.others {
            if Some(o.core) != supplier {
                targets.push((o.core, o.before.letter(), o.after.letter()));
            }
        }
        Miss {
            core,
            start,
            done: r.done.get(),
            request,
            request_label,
            targets,
            supplier,
        }
    }
}

/// Where a request reached a directory: its node and cycle, and, when it
/// went on to a home agent, the agent, its cycle and the leg to it.
struct Directory {
    node: u32,
    at: u64,
    agent: Option<(Endpoint, u64, u64)>,
}

/// A snooped core's answer to the requester: the line's data if it
/// supplies it (labelled with the state it had), else the acknowledgement
/// of its invalidation.
fn snoop_reply(
    core: u32,
    requester: Endpoint,
    send_cycle: u64,
    arrive_cycle: u64,
    supplies: bool,
    before: impl std::fmt::Display,
) -> Message {
    Message {
        from: Endpoint::Core(core),
        to: requester,
        send_cycle,
        arrive_cycle,
        kind: if supplies {
            MessageKind::Data
        } else {
            MessageKind::Ack
        },
        label: if supplies {
            format!("Data ({before})")
        } else {
            "Inv-Ack".to_string()
        },
    }
}

fn need_label(need: Need, have_data: bool) -> &'static str {
    match (need, have_data) {
        (Need::Read, _) => "GetS",
        (Need::Write, true) => "Upgrade",
        (Need::Write, false) => "GetM",
    }
}

impl Probe for TimelineProbe<'_> {
    fn on_access(&mut self, e: &AccessEvent<'_>) {
        let Some(r) = e.report else {
            return;
        };
        if r.is_hit() {
            return;
        }
        if !self.prefetches && e.kind == AccessKind::Prefetch {
            self.prefetches_left_out += 1;
            return;
        }
        self.seen += 1;
        let issued = e.issued.get();
        // Keep the earliest `limit` by (the cycle the home ordered it,
        // arrival): the order the home served them in.
        let order = r.started.get();
        self.arrivals += 1;
        if self.kept.len() >= self.limit {
            // Most accesses come after every kept one: one comparison.
            if self.limit == 0 || order >= self.latest_order {
                return;
            }
            let at = (0..self.kept.len())
                .max_by_key(|&i| (self.kept[i].0, self.kept[i].1))
                .expect("the list is full");
            self.kept.swap_remove(at);
        }
        let core = self.topology.core_of(e.cpu);
        let miss = Miss::of(r, core, issued);
        let done = miss.done;
        let mut messages = Vec::new();
        match r.route {
            Route::Directory { .. } | Route::HomeAgent { .. } | Route::Memory { .. } => {
                self.directory_messages(r, miss, &mut messages);
            }
            Route::L3 { .. } | Route::SameL3 | Route::Hit | Route::SmtSibling => {
                self.l3_messages(r.route, &miss, &mut messages);
            }
        }
        // The last message arrives when the access completed.
        if let Some(last) = messages.iter_mut().max_by_key(|m| m.arrive_cycle) {
            last.arrive_cycle = done;
        }
        messages.sort_by_key(|m| (m.send_cycle, m.arrive_cycle));
        let caption = format!(
            "CPU {} {} {} (line {}): {}->{}, cycles {issued}-{done} ({} in all{})",
            e.cpu,
            e.kind.describe(),
            self.memory.describe_address(e.address),
            self.memory.unit_of(e.address),
            r.requester_before,
            r.requester_after,
            done - issued,
            if r.cross_socket {
                ", crosses sockets"
            } else {
                ""
            }
        );
        let caption = if e.misses_in_flight > 1 {
            format!("{caption}; {} of its misses in flight", e.misses_in_flight)
        } else {
            caption
        };
        self.latest_order = self
            .kept
            .iter()
            .map(|k| k.0)
            .chain([order])
            .max()
            .unwrap_or(order);
        self.kept.push((
            order,
            self.arrivals,
            Transaction {
                cpu: e.cpu,
                issued_cycle: issued,
                done_cycle: done,
                load: e.kind == AccessKind::Load,
                caption,
                messages,
            },
        ));
    }
}
