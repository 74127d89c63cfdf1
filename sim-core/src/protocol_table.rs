//! The stable-state transition table of a protocol, computed by running the
//! coherence code itself ([`Coherence::request`]) on a tiny machine, not
//! typed in: the book prints it (`xtask`), so the table a reader sees is the
//! one the simulator follows.
//!
//! The machine is the exhaustive checker's ([`CheckConfig::machine`]) with
//! two caches, the local one (cache 0) and a remote one (cache 1), and one
//! line. Starting from the line uncached, every configuration the two
//! caches can reach when no transaction is in flight (a stable one) is
//! found breadth first by applying the four events to each: a local load, a
//! local store (a read for ownership, or an upgrade of a copy already
//! held), a remote read and a remote write. Each transition records the
//! next states and what the transaction did: the request, where the data
//! came from, the copies invalidated and whether Modified data went back to
//! memory. The model's caches have no capacity, so no line is ever evicted:
//! there is no eviction event (see the book's "What bounce does not model").

use crate::checker::CheckConfig;
use crate::coherence::{
    AccessReport, Coherence, LineState, Need, RequestKind, RequestTag, Requested, Route,
};
use crate::cpu::{CpuIndex, LinuxCpu};
use crate::memory::MemoryLayout;
use crate::time::{Cycle, Cycles};
use crate::topology::{Protocol, Topology};
use std::fmt;

/// Every event is taken at this cycle, on a free line.
const NOW: Cycle = Cycle::ZERO;

/// What happens to the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Event {
    /// The local cache's CPU loads.
    LocalLoad,
    /// The local cache's CPU stores (the store drains from the buffer).
    LocalStore,
    /// The remote cache reads the line (its CPU loads).
    RemoteRead,
    /// The remote cache writes the line (its CPU stores): the local copy is
    /// invalidated.
    RemoteWrite,
}

impl Event {
    pub const ALL: [Event; 4] = [
        Event::LocalLoad,
        Event::LocalStore,
        Event::RemoteRead,
        Event::RemoteWrite,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Event::LocalLoad => "local load",
            Event::LocalStore => "local store",
            Event::RemoteRead => "remote read",
            Event::RemoteWrite => "remote write",
        }
    }

    /// The cache that acts (0 local, 1 remote) and what it needs.
    fn access(self) -> (u32, Need) {
        match self {
            Event::LocalLoad => (0, Need::Read),
            Event::LocalStore => (0, Need::Write),
            Event::RemoteRead => (1, Need::Read),
            Event::RemoteWrite => (1, Need::Write),
        }
    }
}

/// A stable configuration: the local cache's state and the remote one's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pair {
    pub local: LineState,
    pub remote: LineState,
}

impl fmt::Display for Pair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.local, self.remote)
    }
}

/// The request the acting cache sends to the line's home.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    /// None: the cache answers the access itself.
    Hit,
    /// A read miss: a readable copy.
    GetShared,
    /// A write miss: the data and every other copy invalidated (an RFO).
    GetModified,
    /// A write to a copy already held: permission, every other copy
    /// invalidated, no data.
    Upgrade,
}

impl Request {
    pub fn name(self) -> &'static str {
        match self {
            Request::Hit => "hit",
            Request::GetShared => "GetS",
            Request::GetModified => "GetM",
            Request::Upgrade => "Upgrade",
        }
    }
}

/// Where the acting cache's data came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataFrom {
    /// No data moved (a hit, or an upgrade).
    Nowhere,
    /// The other cache, in this state.
    OtherCache(LineState),
    /// Memory at the line's home.
    Memory,
    /// The requester's L3 (not on this machine, whose L3 keeps no lines).
    L3,
}

/// One row of the table: a configuration, an event, and what came of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Transition {
    pub before: Pair,
    pub event: Event,
    pub after: Pair,
    pub request: Request,
    pub data_from: DataFrom,
    /// Copies invalidated in the other cache (0 or 1 here).
    pub invalidations: u32,
    /// The other cache's Modified data went back to memory: a read
    /// downgraded it to Shared (MESI, MESIF; MOESI keeps it in an Owned copy).
    pub writeback: bool,
    /// The data came from a Modified or Owned copy (what perf c2c calls a HITM).
    pub hitm: bool,
}

impl Transition {
    /// The messages, in words: the request, the data's source, the
    /// invalidations and the writeback.
    pub fn messages(&self) -> String {
        if self.request == Request::Hit {
            return if self.before != self.after {
                "hit, no message (silent upgrade)".to_string()
            } else {
                "hit, no message".to_string()
            };
        }
        let mut parts = vec![format!("{} to the home", self.request.name())];
        match self.data_from {
            DataFrom::Nowhere => {}
            DataFrom::Memory => parts.push("data from memory".to_string()),
            DataFrom::L3 => parts.push("data from the L3".to_string()),
            DataFrom::OtherCache(state) => parts.push(format!(
                "data from the other cache ({state}{})",
                if self.hitm { ", HITM" } else { "" }
            )),
        }
        if self.invalidations > 0 {
            parts.push(format!(
                "invalidates the other copy ({})",
                self.invalidations
            ));
        }
        if self.writeback {
            parts.push("M data written back to memory".to_string());
        }
        parts.join("; ")
    }
}

/// The transition table of `protocol`: every stable configuration of two
/// caches reachable from the line uncached, in (local, remote) state order,
/// times the four events, in [`Event::ALL`] order.
pub fn transition_table(protocol: Protocol) -> Result<Vec<Transition>, String> {
    let config = CheckConfig {
        caches: 2,
        lines: 1,
        ..CheckConfig::new(protocol)
    };
    let topology = Topology::new(config.machine()).map_err(|e| e.to_string())?;
    let memory = MemoryLayout {
        structs: Vec::new(),
        instances: Vec::new(),
        total_bytes: 64,
        unit_bytes: 64,
        line_size_bytes: 64,
        unit_homes: vec![0],
    };
    let mut initial = Coherence::new(&topology, &memory);
    initial.check_invariants = true;
    // Breadth first over configurations; each is reached once.
    let mut found: Vec<(Pair, Coherence)> = vec![(pair_of(&initial), initial)];
    let mut next = 0;
    let mut transitions = Vec::new();
    while next < found.len() {
        let (before, state) = found[next].clone();
        next += 1;
        for event in Event::ALL {
            let (cache, need) = event.access();
            let mut after = state.clone();
            let report = match after
                .request(
                    &topology,
                    NOW,
                    LinuxCpu::new(cache),
                    0,
                    need,
                    Cycles::ZERO,
                    RequestTag::new(CpuIndex::new(cache as usize), RequestKind::Demand),
                )
                .map_err(|e| format!("{} {before}, {}: {e}", protocol.name(), event.name()))?
            {
                Requested::Done(report) => report,
                Requested::Queued { .. } => {
                    return Err(format!(
                        "{} {before}, {}: the request waited on a free line",
                        protocol.name(),
                        event.name()
                    ))
                }
            };
            after.end_busy(0, NOW);
            after.abstract_time(NOW, true);
            let pair = pair_of(&after);
            transitions.push(describe(before, event, pair, &report));
            if !found.iter().any(|(p, _)| *p == pair) {
                found.push((pair, after));
            }
        }
    }
    transitions.sort_by_key(|t| (t.before, t.event));
    Ok(transitions)
}

fn pair_of(coherence: &Coherence) -> Pair {
    Pair {
        local: coherence.state(0, 0),
        remote: coherence.state(1, 0),
    }
}

fn describe(before: Pair, event: Event, after: Pair, report: &AccessReport) -> Transition {
    let request = if report.is_hit() {
        Request::Hit
    } else if report.need == Need::Read {
        Request::GetShared
    } else if report.requester_before == LineState::Invalid {
        Request::GetModified
    } else {
        Request::Upgrade
    };
    let data_from = match (request, report.supplier, report.route) {
        (Request::Hit | Request::Upgrade, _, _) => DataFrom::Nowhere,
        (_, Some((_, state, _)), _) => DataFrom::OtherCache(state),
        (_, None, Route::L3 { .. }) => DataFrom::L3,
        _ => DataFrom::Memory,
    };
    let writeback = report
        .others
        .iter()
        .any(|c| c.before == LineState::Modified && c.after == LineState::Shared);
    Transition {
        before,
        event,
        after,
        request,
        data_from,
        invalidations: report.invalidations,
        writeback,
        hitm: report.hitm,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LineState::*;

    fn find(table: &[Transition], local: LineState, remote: LineState, event: Event) -> Transition {
        *table
            .iter()
            .find(|t| t.before == Pair { local, remote } && t.event == event)
            .unwrap_or_else(|| panic!("no {local}/{remote} {event:?}"))
    }

    #[test]
    fn each_protocol_reaches_its_stable_configurations() {
        let configurations = |p| {
            let table = transition_table(p).unwrap();
            let mut pairs: Vec<String> = table.iter().map(|t| t.before.to_string()).collect();
            pairs.dedup();
            assert_eq!(table.len(), pairs.len() * 4);
            pairs.join(" ")
        };
        assert_eq!(configurations(Protocol::Mesi), "I/I I/E I/M S/S E/I M/I");
        assert_eq!(
            configurations(Protocol::Mesif),
            "I/I I/E I/M S/F E/I M/I F/S"
        );
        assert_eq!(
            configurations(Protocol::Moesi),
            "I/I I/E I/M S/S S/O E/I M/I O/S"
        );
    }

    #[test]
    fn the_textbook_transitions_are_the_code_s() {
        let mesi = transition_table(Protocol::Mesi).unwrap();
        // A read of a line nobody holds: Exclusive, from memory.
        let t = find(&mesi, Invalid, Invalid, Event::LocalLoad);
        assert_eq!((t.after.local, t.data_from), (Exclusive, DataFrom::Memory));
        // E to M on a store: silent.
        let t = find(&mesi, Exclusive, Invalid, Event::LocalStore);
        assert_eq!((t.request, t.after.local), (Request::Hit, Modified));
        // A remote read of M: both Shared, the data written back, a HITM.
        let t = find(&mesi, Modified, Invalid, Event::RemoteRead);
        assert_eq!(
            t.after,
            Pair {
                local: Shared,
                remote: Shared
            }
        );
        assert!(t.writeback && t.hitm);
        // MOESI keeps the dirty data in an Owned copy instead.
        let moesi = transition_table(Protocol::Moesi).unwrap();
        let t = find(&moesi, Modified, Invalid, Event::RemoteRead);
        assert_eq!(
            t.after,
            Pair {
                local: Owned,
                remote: Shared
            }
        );
        assert!(!t.writeback && t.hitm);
        // MESIF: the newest reader is the forwarder.
        let mesif = transition_table(Protocol::Mesif).unwrap();
        let t = find(&mesif, Exclusive, Invalid, Event::RemoteRead);
        assert_eq!(
            t.after,
            Pair {
                local: Shared,
                remote: Forward
            }
        );
        // An upgrade sends no data, only the invalidation.
        let t = find(&mesi, Shared, Shared, Event::LocalStore);
        assert_eq!(
            (t.request, t.data_from, t.invalidations),
            (Request::Upgrade, DataFrom::Nowhere, 1)
        );
    }
}
