//! The coherence protocol driven directly: state transitions of MESI, MESIF
//! and MOESI, and the cost of each route computed from the machine's
//! latencies.

use sim_core::coherence::{
    AccessReport, Coherence, LineState, Need, RequestKind, RequestTag, Requested, Route,
    StateChange,
};
use sim_core::cpu::{CpuIndex, LinuxCpu};
use sim_core::memory::MemoryLayout;
use sim_core::topology::{
    CleanSharedLineAnswer, DirectoryPrecision, L3SharedLines, Lookup, PairClass, Protocol, Topology,
};
use sim_core::{Cycle, Cycles};
use testkit::small_machine;

use LineState::{
    Exclusive as E, Forward as F, Invalid as I, Modified as M, Owned as O, Shared as S,
};

/// The tag of the requests these tests do not tell apart.
const TAG: RequestTag = RequestTag::new(CpuIndex::new(0), RequestKind::Demand);

/// A coherence model on the small machine, with line `u` homed on node `homes[u]`.
struct Bench {
    topology: Topology,
    coherence: Coherence,
    now: Cycle,
}

impl Bench {
    fn new(protocol: Protocol, lookup: Lookup, homes: &[u32]) -> Bench {
        Bench::on(small_machine(protocol, lookup), homes)
    }

    fn on(spec: sim_core::topology::MachineSpec, homes: &[u32]) -> Bench {
        let topology = Topology::new(spec).unwrap();
        let memory = MemoryLayout {
            structs: Vec::new(),
            instances: Vec::new(),
            total_bytes: 64 * homes.len() as u64,
            unit_bytes: 64,
            line_size_bytes: 64,
            unit_homes: homes.to_vec(),
        };
        let mut coherence = Coherence::new(&topology, &memory);
        coherence.check_invariants = true;
        Bench {
            topology,
            coherence,
            now: Cycle::ZERO,
        }
    }

    /// One access, made once the line is free and the previous access is done.
    fn access(&mut self, cpu: u32, unit: usize, need: Need) -> AccessReport {
        let at = self.now.max(self.coherence.busy_until(unit));
        let report = match self
            .coherence
            .request(
                &self.topology,
                at,
                LinuxCpu::new(cpu),
                unit,
                need,
                Cycles::ZERO,
                TAG,
            )
            .expect("no protocol violation")
        {
            Requested::Done(r) => r,
            Requested::Queued { .. } => panic!("the line was free at {at:?}"),
        };
        assert_eq!(report.issued, at);
        assert_eq!(report.started, at, "a free line is ordered at once");
        // hitm is set exactly when another core's M or O copy supplied the data.
        let from_dirty = matches!(report.supplier, Some((_, M | O, _)));
        assert_eq!(report.hitm, from_dirty, "{report:?}");
        self.now = report.done;
        report
    }

    fn read(&mut self, cpu: u32, unit: usize) -> AccessReport {
        self.access(cpu, unit, Need::Read)
    }

    fn write(&mut self, cpu: u32, unit: usize) -> AccessReport {
        self.access(cpu, unit, Need::Write)
    }

    /// Every core holding the line, with its state.
    fn holders(&self, unit: usize) -> Vec<(u32, LineState)> {
        (0..self.topology.core_count())
            .map(|core| (core, self.coherence.state(core, unit)))
            .filter(|&(_, s)| s != I)
            .collect()
    }

    fn latency(&self) -> &sim_core::topology::LatencySpec {
        &self.topology.spec.latency
    }
}

fn change(core: u32, before: LineState, after: LineState) -> StateChange {
    StateChange {
        core,
        before,
        after,
    }
}

const ALL: [Protocol; 3] = [Protocol::Mesi, Protocol::Mesif, Protocol::Moesi];

#[test]
fn read_miss_on_an_uncached_line_gives_exclusive_from_memory() {
    for protocol in ALL {
        let mut b = Bench::new(protocol, Lookup::Home, &[0]);
        let r = b.read(0, 0);
        assert_eq!(r.route, Route::Memory { node: 0 }, "{protocol:?}");
        assert_eq!((r.requester_before, r.requester_after), (I, E));
        assert_eq!(r.supplier, None);
        assert!(r.others.is_empty());
        assert_eq!(r.invalidations, 0);
        assert!(!r.hitm);
        assert_eq!(b.holders(0), vec![(0, E)]);
        // E becomes M silently: a hit, no transaction, nobody else touched.
        let w = b.write(0, 0);
        assert_eq!(w.route, Route::Hit);
        assert_eq!((w.requester_before, w.requester_after), (E, M));
        assert_eq!(w.latency_cycles(), b.latency().l1_hit_cycles);
        assert!(w.others.is_empty());
        assert_eq!(b.holders(0), vec![(0, M)]);
    }
}

#[test]
fn a_second_reader_demotes_the_exclusive_holder() {
    // (protocol, state the second reader gets)
    for (protocol, reader_gets) in [
        (Protocol::Mesi, S),
        (Protocol::Mesif, F),
        (Protocol::Moesi, S),
    ] {
        let mut b = Bench::new(protocol, Lookup::Home, &[0]);
        b.read(0, 0);
        let r = b.read(4, 0);
        assert_eq!(r.route, Route::Directory { node: 0 }, "{protocol:?}");
        assert_eq!(r.supplier, Some((0, E, PairClass::SameSocket)));
        assert_eq!((r.requester_before, r.requester_after), (I, reader_gets));
        assert_eq!(r.others, vec![change(0, E, S)]);
        assert_eq!(r.invalidations, 0);
        assert!(!r.hitm);
        assert_eq!(b.holders(0), vec![(0, S), (4, reader_gets)]);
    }
}

#[test]
fn mesif_forward_moves_to_the_newest_sharer() {
    let mut b = Bench::new(Protocol::Mesif, Lookup::Home, &[0]);
    b.read(0, 0);
    b.read(4, 0);
    let r = b.read(8, 0);
    // The forwarder answers, and hands the F state on.
    assert_eq!(r.route, Route::Directory { node: 0 });
    assert_eq!(r.supplier, Some((4, F, PairClass::CrossSocket)));
    assert_eq!(r.requester_after, F);
    assert_eq!(r.others, vec![change(4, F, S)]);
    assert!(!r.hitm);
    assert_eq!(b.holders(0), vec![(0, S), (4, S), (8, F)]);
}

#[test]
fn mesi_third_reader_gets_the_data_from_memory() {
    // No MESI state answers for a shared clean line.
    let mut b = Bench::new(Protocol::Mesi, Lookup::Home, &[0]);
    b.read(0, 0);
    b.read(4, 0);
    let r = b.read(8, 0);
    assert_eq!(r.route, Route::Memory { node: 0 });
    assert_eq!(r.supplier, None);
    assert_eq!(r.requester_after, S);
    assert!(r.others.is_empty());
    let l = b.latency().clone();
    assert_eq!(
        r.latency_cycles(),
        2 * l.hop_between_sockets_cycles + l.dram_cycles
    );
    assert_eq!(b.holders(0), vec![(0, S), (4, S), (8, S)]);
}

#[test]
fn reading_a_modified_line_writes_it_back_except_in_moesi() {
    for (protocol, writer_becomes, reader_gets) in [
        (Protocol::Mesi, S, S),
        (Protocol::Mesif, S, F),
        (Protocol::Moesi, O, S),
    ] {
        let mut b = Bench::new(protocol, Lookup::Home, &[0]);
        let w = b.write(0, 0);
        assert_eq!(w.route, Route::Memory { node: 0 });
        assert_eq!((w.requester_before, w.requester_after), (I, M));
        let r = b.read(4, 0);
        assert_eq!(
            r.supplier,
            Some((0, M, PairClass::SameSocket)),
            "{protocol:?}"
        );
        assert!(r.hitm, "{protocol:?}: data from a Modified copy is a HITM");
        assert_eq!(r.others, vec![change(0, M, writer_becomes)]);
        assert_eq!(r.requester_after, reader_gets);
        assert_eq!(b.holders(0), vec![(0, writer_becomes), (4, reader_gets)]);
    }
}

#[test]
fn moesi_owner_keeps_answering_dirty_data() {
    let mut b = Bench::new(Protocol::Moesi, Lookup::Home, &[0]);
    b.write(0, 0);
    b.read(4, 0);
    let r = b.read(8, 0);
    assert_eq!(r.route, Route::Directory { node: 0 });
    assert_eq!(r.supplier, Some((0, O, PairClass::CrossSocket)));
    assert!(r.hitm, "data from an Owned copy is a HITM");
    assert!(r.others.is_empty(), "O stays O: {:?}", r.others);
    assert_eq!(r.requester_after, S);
    assert_eq!(b.holders(0), vec![(0, O), (4, S), (8, S)]);
    // A write takes the dirty data from the owner and invalidates everyone.
    let w = b.write(12, 0);
    assert_eq!(w.supplier, Some((0, O, PairClass::CrossSocket)));
    assert!(w.hitm);
    assert_eq!(w.invalidations, 3);
    assert_eq!(
        w.others,
        vec![change(0, O, I), change(4, S, I), change(8, S, I)]
    );
    assert_eq!(w.requester_after, M);
    assert_eq!(b.holders(0), vec![(12, M)]);
}

#[test]
fn a_write_to_a_shared_line_invalidates_every_other_copy() {
    // States of cores 0, 4, 8 after three reads, per protocol.
    for (protocol, sharers) in [
        (Protocol::Mesi, [S, S, S]),
        (Protocol::Mesif, [S, S, F]),
        (Protocol::Moesi, [S, S, S]),
    ] {
        let mut b = Bench::new(protocol, Lookup::Home, &[0]);
        for core in [0, 4, 8] {
            b.read(core, 0);
        }
        assert_eq!(
            b.holders(0),
            vec![(0, sharers[0]), (4, sharers[1]), (8, sharers[2])]
        );
        let w = b.write(12, 0);
        assert_eq!(w.invalidations, 3, "{protocol:?}");
        assert_eq!(
            w.others,
            vec![
                change(0, sharers[0], I),
                change(4, sharers[1], I),
                change(8, sharers[2], I)
            ]
        );
        assert_eq!((w.requester_before, w.requester_after), (I, M));
        assert!(!w.hitm, "{protocol:?}: clean data is not a HITM");
        assert_eq!(b.holders(0), vec![(12, M)]);

        // An upgrade: a sharer writes, invalidating the others, without data.
        let mut b = Bench::new(protocol, Lookup::Home, &[0]);
        for core in [0, 4, 8] {
            b.read(core, 0);
        }
        let u = b.write(0, 0);
        assert_eq!(u.route, Route::Directory { node: 0 });
        assert_eq!((u.requester_before, u.requester_after), (S, M));
        assert_eq!(u.supplier, None);
        assert!(!u.hitm);
        assert_eq!(u.invalidations, 2);
        assert_eq!(
            u.others,
            vec![change(4, sharers[1], I), change(8, sharers[2], I)]
        );
        // leg(0, home 0) + the slowest of [home -> 4 -> 0] and [home -> 8 -> 0].
        let l = b.latency().clone();
        let via_4 = l.hop_between_nodes_cycles + l.hop_in_node_cycles;
        let via_8 = 2 * l.hop_between_sockets_cycles;
        assert_eq!(u.latency_cycles(), l.hop_in_node_cycles + via_4.max(via_8));
        assert_eq!(b.holders(0), vec![(0, M)]);
    }
}

#[test]
fn an_smt_sibling_reads_its_core_cache() {
    let mut b = Bench::new(Protocol::Mesif, Lookup::Local, &[0]);
    b.write(3, 0);
    // CPU 19 is thread 1 of core 3.
    let r = b.read(19, 0);
    assert_eq!(r.route, Route::SmtSibling);
    let l = b.latency().clone();
    assert_eq!(r.latency_cycles(), l.l1_hit_cycles + l.smt_transfer_cycles);
    assert_eq!(b.holders(0), vec![(3, M)]);
    // Once read, the sibling hits like the writer.
    let again = b.read(19, 0);
    assert_eq!(again.route, Route::Hit);
    assert_eq!(again.latency_cycles(), l.l1_hit_cycles);
}

// ---------------------------------------------------------------------------
// Latency: the three parties
// ---------------------------------------------------------------------------

/// Cost of moving a line from `from` (which read it first) to `to`.
fn transfer(protocol: Protocol, lookup: Lookup, home: u32, from: u32, to: u32) -> AccessReport {
    let mut b = Bench::new(protocol, lookup, &[home]);
    b.read(from, 0);
    let r = b.read(to, 0);
    assert_eq!(
        r.supplier.map(|s| s.0),
        Some(from),
        "{protocol:?} {lookup:?} home {home}: {from} supplies {to}"
    );
    r
}

#[test]
fn home_lookup_sends_a_transfer_through_a_remote_home() {
    let l = small_machine(Protocol::Moesi, Lookup::Home).latency;
    for protocol in ALL {
        // Cores 8 and 10: socket 1, node 2, different L3 domains.
        // Home on socket 0: requester -> home, home -> owner cross the link.
        let r = transfer(protocol, Lookup::Home, 0, 8, 10);
        assert_eq!(r.route, Route::Directory { node: 0 });
        assert_eq!(
            r.latency_cycles(),
            2 * l.hop_between_sockets_cycles + l.hop_in_node_cycles
        );
        assert!(r.cross_socket);
        // Home on their own node: three legs on the node.
        let r = transfer(protocol, Lookup::Home, 2, 8, 10);
        assert_eq!(r.route, Route::Directory { node: 2 });
        assert_eq!(r.latency_cycles(), 3 * l.hop_in_node_cycles);
        assert!(!r.cross_socket);
        // Cores 0 and 2 on the home node 0.
        let r = transfer(protocol, Lookup::Home, 0, 0, 2);
        assert_eq!(r.latency_cycles(), 3 * l.hop_in_node_cycles);
        // Requester on the home node, owner across the link:
        // leg to the home + home -> owner + owner -> requester.
        let r = transfer(protocol, Lookup::Home, 0, 8, 0);
        assert_eq!(
            r.latency_cycles(),
            l.hop_in_node_cycles + 2 * l.hop_between_sockets_cycles
        );
        assert_eq!(r.supplier, Some((8, E, PairClass::CrossSocket)));
        // Owner on another node of the requester's socket, home elsewhere
        // on that socket: requester -> node 1 -> owner (node 0) -> requester.
        let r = transfer(protocol, Lookup::Home, 1, 0, 2);
        assert_eq!(
            r.latency_cycles(),
            2 * l.hop_between_nodes_cycles + l.hop_in_node_cycles
        );
    }
}

#[test]
fn local_lookup_cost_does_not_depend_on_the_home() {
    let l = small_machine(Protocol::Mesif, Lookup::Local).latency;
    for protocol in ALL {
        for home in 0..4 {
            let r = transfer(protocol, Lookup::Local, home, 8, 10);
            assert_eq!(r.route, Route::Directory { node: 2 }, "home {home}");
            assert_eq!(r.latency_cycles(), 3 * l.hop_in_node_cycles, "home {home}");
            assert!(!r.cross_socket);
            // Cross-socket pair: the own node's filter misses, the request
            // goes on to the line's home agent; the cost is the leg to the
            // own node's filter, then across twice, whatever the home.
            let r = transfer(protocol, Lookup::Local, home, 8, 0);
            assert_eq!(
                r.route,
                Route::HomeAgent {
                    snoop_filter: 0,
                    home
                }
            );
            assert_eq!(
                r.latency_cycles(),
                l.hop_in_node_cycles + 2 * l.hop_between_sockets_cycles,
                "home {home}"
            );
        }
    }
}

#[test]
fn same_l3_transfers_cost_the_l3_transfer_whatever_the_home_and_lookup() {
    let l = small_machine(Protocol::Mesi, Lookup::Home).latency;
    for protocol in ALL {
        for lookup in [Lookup::Home, Lookup::Local] {
            for home in 0..4 {
                // Cores 8 and 9 share L3 domain 4.
                let r = transfer(protocol, lookup, home, 8, 9);
                assert_eq!(r.route, Route::SameL3);
                assert_eq!(r.latency_cycles(), l.l3_transfer_cycles);
                assert_eq!(r.supplier.map(|s| s.2), Some(PairClass::SameL3));
            }
        }
    }
}

#[test]
fn dram_fetch_costs_two_legs_to_the_home_plus_dram() {
    let l = small_machine(Protocol::Mesi, Lookup::Home).latency;
    for lookup in [Lookup::Home, Lookup::Local] {
        for (home, leg) in [
            (0, l.hop_in_node_cycles),
            (1, l.hop_between_nodes_cycles),
            (2, l.hop_between_sockets_cycles),
            (3, l.hop_between_sockets_cycles),
        ] {
            let mut b = Bench::new(Protocol::Mesi, lookup, &[home]);
            let r = b.read(0, 0);
            assert_eq!(r.route, Route::Memory { node: home });
            assert_eq!(r.latency_cycles(), 2 * leg + l.dram_cycles, "home {home}");
            assert_eq!(r.cross_socket, home >= 2);
        }
    }
}

#[test]
fn a_busy_line_queues_the_next_request() {
    let mut b = Bench::new(Protocol::Mesi, Lookup::Home, &[0]);
    let first = b.read(0, 0);
    let drain_of_3 = RequestTag::new(CpuIndex::new(3), RequestKind::Drain);
    // Before the first transaction ends, another core's request waits.
    let queued = b
        .coherence
        .request(
            &b.topology,
            Cycle::new(1),
            LinuxCpu::new(4),
            0,
            Need::Write,
            Cycles::ZERO,
            drain_of_3,
        )
        .unwrap();
    assert_eq!(
        queued,
        Requested::Queued {
            free_at: first.done,
            first_waiter: true
        }
    );
    assert_eq!(b.coherence.waiting_count(0), 1);
    // Nothing is served before the line is free.
    let mut pick = |_n: usize| 0;
    let early = b
        .coherence
        .serve_next(&b.topology, Cycle::new(2), 0, &mut pick)
        .unwrap();
    assert!(early.is_none());
    let (waiter, r) = b
        .coherence
        .serve_next(&b.topology, first.done, 0, &mut pick)
        .unwrap()
        .expect("served once free");
    assert_eq!(
        (waiter.cpu, waiter.tag, waiter.issued),
        (LinuxCpu::new(4), drain_of_3, Cycle::new(1))
    );
    assert_eq!(r.issued, Cycle::new(1));
    assert_eq!(r.started, first.done);
    assert_eq!(r.others, vec![change(0, E, I)]);
    assert_eq!(b.coherence.waiting_count(0), 0);
}

#[test]
fn reads_of_a_resolved_line_are_pipelined_and_the_rest_hold_the_home() {
    // Ice Lake-SP, MESIF, lookup local: cores 0-39 share socket 0's L3,
    // cores 40-79 socket 1's. The line is homed on node 0.
    let topology = Topology::new(testkit::icelake()).unwrap();
    let l3_transfer_cycles = topology.spec.latency.l3_transfer_cycles;
    let memory = MemoryLayout {
        structs: Vec::new(),
        instances: Vec::new(),
        total_bytes: 64,
        unit_bytes: 64,
        line_size_bytes: 64,
        unit_homes: vec![0],
    };
    let mut c = Coherence::new(&topology, &memory);
    c.check_invariants = true;
    let served = |c: &mut Coherence, at: u64, cpu: u32, need: Need| -> AccessReport {
        match c
            .request(
                &topology,
                Cycle::new(at),
                LinuxCpu::new(cpu),
                0,
                need,
                Cycles::ZERO,
                TAG,
            )
            .expect("no protocol violation")
        {
            Requested::Done(r) => r,
            Requested::Queued { .. } => panic!("CPU {cpu} queued at {at}"),
        }
    };
    let at = |r: &AccessReport| r.started.get();
    // A write, and a read of the Modified copy: transfers of ownership, the
    // home busy until each one's data arrives.
    let w = served(&mut c, 0, 0, Need::Write);
    assert_eq!(c.busy_until(0), w.done);
    let hitm = served(&mut c, w.done.get(), 1, Need::Read);
    assert!(hitm.hitm && hitm.route == Route::SameL3, "{hitm:?}");
    assert_eq!(c.busy_until(0), hitm.done);
    // The line is clean now (S in core 0, F in core 1): each further read in
    // the same L3 holds the tags for one leg of three, while its data takes
    // the whole transfer, so the next reader is ordered before it lands.
    let mut t = hitm.done.get();
    for cpu in 2..6 {
        let r = served(&mut c, t, cpu, Need::Read);
        assert_eq!(r.route, Route::SameL3, "{r:?}");
        assert_eq!(r.done.get(), at(&r) + l3_transfer_cycles);
        assert_eq!(c.busy_until(0).get(), at(&r) + l3_transfer_cycles / 3);
        assert!(c.busy_until(0) < r.done);
        t = c.busy_until(0).get();
    }
    // The same clean line read from the other socket goes through the
    // home agent to the forwarding copy: a resolved line, so the home takes
    // the next request one occupancy later, while the data crosses sockets.
    let occupancy = topology.spec.latency.home_occupancy_cycles;
    let remote = served(&mut c, t, 40, Need::Read);
    assert!(
        matches!(remote.route, Route::HomeAgent { .. }),
        "{remote:?}"
    );
    assert_eq!(c.busy_until(0).get(), at(&remote) + occupancy);
    assert!(c.busy_until(0) < remote.done);
    // And a write that invalidates the readers holds it until the acks.
    let upgrade = served(&mut c, remote.done.get(), 2, Need::Write);
    assert_eq!(c.busy_until(0), upgrade.done);
    assert_eq!(upgrade.invalidations, 6, "{upgrade:?}");
}

// ---------------------------------------------------------------------------
// The L3 as a supplier of clean lines

fn keeping_l3(protocol: Protocol, l3: L3SharedLines) -> Bench {
    let mut spec = small_machine(protocol, Lookup::Home);
    spec.l3_shared_lines = l3;
    Bench::on(spec, &[0])
}

/// MOESI: a line held only Shared has no cache to supply it; the L3 of the
/// requester's CCX that keeps it answers at its hit latency, where a
/// machine whose L3 does not keep it reads memory.
#[test]
fn a_shared_only_line_in_the_requesters_l3_comes_from_that_l3() {
    for (l3, expect_l3) in [
        (L3SharedLines::VictimWithSharing, true),
        (L3SharedLines::Inclusive, true),
        (L3SharedLines::NotKept, false),
    ] {
        let mut b = keeping_l3(Protocol::Moesi, l3);
        b.read(0, 0); // E in core 0 (L3 domain 0)
        b.read(2, 0); // both Shared (core 2: L3 domain 1)
        assert_eq!(b.holders(0), vec![(0, S), (2, S)]);
        // Core 3 shares L3 domain 1 with core 2.
        let r = b.read(3, 0);
        assert_eq!(r.requester_after, S);
        assert!(r.others.is_empty(), "{r:?}");
        if expect_l3 {
            assert_eq!(r.route, Route::L3 { l3: 1 }, "{l3:?}");
            assert_eq!(r.latency_cycles(), b.latency().l3_hit_cycles);
            assert_eq!(r.supplier, None);
            assert!(!r.cross_socket);
        } else {
            assert_eq!(r.route, Route::Memory { node: 0 }, "{l3:?}");
        }
    }
}

/// A write (an atomic's read for ownership) of a line held only Shared: no
/// cache answers for it, but the requester's L3 keeps it when the machine's
/// L3 keeps the shared lines its cores read, so the data comes from there,
/// as a read's would, not from memory. With every copy in the requester's
/// domain the L3 invalidates them and answers: request, invalidation and
/// answer, the legs of a transfer inside the domain. Copies beyond the
/// domain are invalidated through the directory meanwhile. (Found by
/// timing a CAS on a line three cores of one CCX had read, as Schweizer,
/// Besta and Hoefler's benchmark places it: 457 cycles from DRAM on
/// epyc-milan-2s, where the read before it took 46 from the L3.)
#[test]
fn a_write_of_a_shared_only_line_takes_the_data_from_the_requesters_l3() {
    for (l3, expect_l3) in [
        (L3SharedLines::VictimWithSharing, true),
        (L3SharedLines::Inclusive, true),
        (L3SharedLines::NotKept, false),
    ] {
        for protocol in [Protocol::Mesi, Protocol::Moesi] {
            // Four cores per L3 domain: cores 0-3 share domain 0.
            let mut spec = small_machine(protocol, Lookup::Home);
            spec.l3_shared_lines = l3;
            spec.cores_per_l3 = 4;
            let mut b = Bench::on(spec, &[0]);
            b.read(0, 0); // E in core 0
            b.read(1, 0); // both Shared, in domain 0
            assert_eq!(b.holders(0), vec![(0, S), (1, S)]);
            let r = b.write(2, 0);
            assert_eq!(r.requester_after, M);
            assert_eq!(r.invalidations, 2);
            assert_eq!(b.holders(0), vec![(2, M)]);
            if expect_l3 {
                assert_eq!(r.route, Route::L3 { l3: 0 }, "{l3:?} {protocol:?}");
                let l = b.latency();
                assert_eq!(
                    r.latency_cycles(),
                    l.l3_transfer_cycles.max(l.l3_hit_cycles)
                );
                assert_eq!(r.supplier, None);
                assert!(!r.cross_socket);
            } else {
                assert_eq!(r.route, Route::Memory { node: 0 }, "{l3:?} {protocol:?}");
            }
        }
    }
    // A copy beyond the requester's domain (core 2 is in domain 1): the L3
    // still answers, and the write is done when the directory has
    // invalidated the far copy.
    let mut b = keeping_l3(Protocol::Moesi, L3SharedLines::VictimWithSharing);
    b.read(0, 0); // E in core 0 (domain 0)
    b.read(2, 0); // both Shared
    let r = b.write(1, 0); // core 1 shares domain 0 with core 0
    assert_eq!(r.route, Route::L3 { l3: 0 });
    assert_eq!(r.invalidations, 2);
    let (hop, hit, dram) = {
        let l = b.latency();
        (l.hop_in_node_cycles, l.l3_hit_cycles, l.dram_cycles)
    };
    // leg(requester, home 0) + leg(home, core 2) + leg(core 2, requester):
    // three legs inside node 0 (domains 0 and 1 are both on node 0).
    assert_eq!(r.latency_cycles(), hit.max(3 * hop));
    let from_memory = 2 * hop + dram;
    assert!(r.latency_cycles() < from_memory, "{r:?}");
}

/// An Owned copy elsewhere does not stop the requester's L3 answering for
/// the Shared copy it keeps; a Modified or Exclusive copy in the domain
/// does (the core that may have written it must answer).
#[test]
fn the_l3_answers_only_for_clean_lines() {
    let mut b = keeping_l3(Protocol::Moesi, L3SharedLines::VictimWithSharing);
    b.write(0, 0); // M in core 0
    b.read(2, 0); // core 0 O, core 2 S
    let r = b.read(3, 0);
    assert_eq!(r.route, Route::L3 { l3: 1 });
    assert_eq!(b.holders(0), vec![(0, O), (2, S), (3, S)]);
    // Core 1 shares L3 domain 0 with the Owned copy: the owner supplies it
    // inside the domain (a dirty line is not the L3's to answer for).
    let mut b = keeping_l3(Protocol::Moesi, L3SharedLines::VictimWithSharing);
    b.write(0, 0);
    let r = b.read(1, 0);
    assert_eq!(r.route, Route::SameL3);
    assert_eq!(r.supplier.map(|s| s.1), Some(M));
}

/// MESIF with an L3 that keeps lines: the newest reader still becomes the
/// forwarder, but its data comes from its own L3, not from the forwarder.
#[test]
fn mesif_with_a_keeping_l3_moves_the_forwarder_without_a_transfer() {
    let mut b = keeping_l3(Protocol::Mesif, L3SharedLines::Inclusive);
    b.read(0, 0); // E
    b.read(2, 0); // core 0 S, core 2 F
    let r = b.read(1, 0); // core 1 shares L3 domain 0 with core 0
    assert_eq!(r.route, Route::L3 { l3: 0 });
    assert_eq!(r.latency_cycles(), b.latency().l3_hit_cycles);
    assert_eq!(r.requester_after, F);
    assert_eq!(r.others, vec![change(2, F, S)]);
    // Without it the forwarder in the other domain supplies the data.
    let mut b = keeping_l3(Protocol::Mesif, L3SharedLines::NotKept);
    b.read(0, 0);
    b.read(2, 0);
    let r = b.read(1, 0);
    assert_eq!(r.route, Route::Directory { node: 0 });
    assert_eq!(r.supplier.map(|s| (s.0, s.1)), Some((2, F)));
}

/// Reads queued at the home on a line an Owned copy answers for are served
/// one home occupancy apart, each taking its own transfer; writes queued
/// behind them are served one whole transaction apart.
#[test]
fn queued_reads_of_a_resolved_line_are_served_one_occupancy_apart() {
    let mut b = Bench::new(Protocol::Moesi, Lookup::Home, &[0]);
    b.write(0, 0); // M in core 0
    b.read(2, 0); // core 0 Owned: the line is resolved to it
    let occupancy = b.latency().home_occupancy_cycles;
    let t0 = b.now.max(b.coherence.busy_until(0));
    // Four readers on the other socket's cores, all at once: the first is
    // ordered at once, the rest queue.
    let mut started = Vec::new();
    for cpu in [8, 10, 12, 14] {
        match b
            .coherence
            .request(
                &b.topology,
                t0,
                LinuxCpu::new(cpu),
                0,
                Need::Read,
                Cycles::ZERO,
                TAG,
            )
            .unwrap()
        {
            Requested::Done(r) => started.push((r.started, r.done)),
            Requested::Queued { .. } => {}
        }
    }
    assert_eq!(b.coherence.waiting_count(0), 3);
    let serve_all = |b: &mut Bench, out: &mut Vec<(Cycle, Cycle)>| {
        while b.coherence.waiting_count(0) > 0 {
            let at = b.coherence.busy_until(0);
            let (_, r) = b
                .coherence
                .serve_next(&b.topology, at, 0, &mut |_| 0)
                .unwrap()
                .expect("a waiter is served when the line frees");
            out.push((r.started, r.done));
        }
    };
    serve_all(&mut b, &mut started);
    for pair in started.windows(2) {
        assert_eq!((pair[1].0 - pair[0].0).get(), occupancy, "{started:?}");
        // Each read still takes its own transfer, longer than the occupancy.
        assert!((pair[0].1 - pair[0].0).get() > occupancy);
    }
    // Two writes at once: the second waits for the whole first transaction.
    let t1 = started.iter().map(|s| s.1).max().unwrap();
    let mut writes = Vec::new();
    for cpu in [4, 6] {
        if let Requested::Done(r) = b
            .coherence
            .request(
                &b.topology,
                t1,
                LinuxCpu::new(cpu),
                0,
                Need::Write,
                Cycles::ZERO,
                TAG,
            )
            .unwrap()
        {
            writes.push((r.started, r.done));
        }
    }
    serve_all(&mut b, &mut writes);
    assert_eq!(writes.len(), 2);
    assert_eq!(writes[1].0, writes[0].1, "{writes:?}");
}

// ---------------------------------------------------------------------------
// Directory precision

/// A directory that knows a shared line only as shared (an older probe
/// filter) broadcasts a write's invalidation to every L3 domain and waits
/// for the farthest; an exact one asks only the copies. A line with a
/// single Modified or Exclusive copy is tracked exactly by both.
#[test]
fn a_broadcast_directory_makes_a_write_to_a_shared_line_ask_every_l3() {
    let run = |directory: DirectoryPrecision| {
        let mut spec = small_machine(Protocol::Moesi, Lookup::Home);
        spec.directory = directory;
        let mut b = Bench::on(spec, &[0]);
        b.read(0, 0); // E in core 0
        b.read(2, 0); // both Shared, both on socket 0
        let upgrade = b.write(0, 0);
        // An exclusive line afterwards: a write by another core takes it.
        let take = b.write(1, 0);
        (b, upgrade, take)
    };
    let (b, exact, exact_take) = run(DirectoryPrecision::Exact);
    let (_, broadcast, broadcast_take) = run(DirectoryPrecision::BroadcastShared);
    let l = b.latency();
    // Exact: the home (node 0) asks core 2 (node 0, other L3 domain).
    assert_eq!(exact.latency_cycles(), 3 * l.hop_in_node_cycles);
    assert!(!exact.cross_socket);
    // Broadcast: the farthest L3 domain is on the other socket.
    assert_eq!(
        broadcast.latency_cycles(),
        l.hop_in_node_cycles + 2 * l.hop_between_sockets_cycles
    );
    assert!(broadcast.cross_socket);
    // The same copies are invalidated either way.
    assert_eq!(broadcast.invalidations, 1);
    assert_eq!(broadcast.others, exact.others);
    // The Modified line that follows is tracked exactly by both.
    assert_eq!(broadcast_take.latency_cycles(), exact_take.latency_cycles());
}

/// The small machine (cores 0-1 share L3 domain 0, 2-3 domain 1, both on
/// node 0; cores 8-15 on socket 1) with `adjust` applied, line 0 homed on
/// node 0.
fn bench_with(
    protocol: Protocol,
    adjust: impl FnOnce(&mut sim_core::topology::MachineSpec),
) -> Bench {
    let mut spec = small_machine(protocol, Lookup::Home);
    adjust(&mut spec);
    Bench::on(spec, &[0])
}

/// The cost of core `reader`'s read after `prepare` ran on a fresh bench.
fn read_cost(
    protocol: Protocol,
    adjust: impl FnOnce(&mut sim_core::topology::MachineSpec),
    prepare: impl FnOnce(&mut Bench),
    reader: u32,
) -> AccessReport {
    let mut b = bench_with(protocol, adjust);
    prepare(&mut b);
    b.read(reader, 0)
}

/// `clean_snoop_saving_cycles`: a read a core answers from a clean copy
/// (E here) costs that much less than from a dirty one, in the domain and
/// across sockets; a read from a Modified copy and a write of an Exclusive
/// one cost what they did without the key.
#[test]
fn a_clean_copy_answers_a_read_sooner_by_the_clean_snoop_saving() {
    let saving = 10;
    let with = |spec: &mut sim_core::topology::MachineSpec| {
        spec.latency.clean_snoop_saving_cycles = Some(saving)
    };
    for protocol in ALL {
        for reader in [1, 8] {
            let exclusive = |b: &mut Bench| {
                b.read(0, 0);
            };
            let modified = |b: &mut Bench| {
                b.write(0, 0);
            };
            let before = read_cost(protocol, |_| {}, exclusive, reader);
            let after = read_cost(protocol, with, exclusive, reader);
            assert_eq!(after.supplier.map(|s| s.1), Some(E), "{protocol:?}");
            assert_eq!(after.route, before.route);
            assert_eq!(
                after.latency_cycles() + saving,
                before.latency_cycles(),
                "{protocol:?} reader {reader}"
            );
            let dirty_before = read_cost(protocol, |_| {}, modified, reader);
            let dirty_after = read_cost(protocol, with, modified, reader);
            assert_eq!(dirty_after.latency_cycles(), dirty_before.latency_cycles());
            assert_eq!(dirty_before.latency_cycles(), before.latency_cycles());
            // A write takes the clean copy as before.
            let mut plain = bench_with(protocol, |_| {});
            plain.read(0, 0);
            let mut keyed = bench_with(protocol, with);
            keyed.read(0, 0);
            assert_eq!(
                keyed.write(reader, 0).latency_cycles(),
                plain.write(reader, 0).latency_cycles()
            );
        }
    }
}

/// `holding-l3`: a line held clean and shared (S and F) in another domain
/// is answered by that domain's L3 without snooping a core: the transfer
/// costs `l3_transfer - l3_hit` less. Under MESI (no Forward copy) the
/// line then comes from that L3, not from memory.
#[test]
fn a_clean_shared_line_in_another_domain_is_answered_by_its_l3() {
    let inclusive = |answer: CleanSharedLineAnswer| {
        move |spec: &mut sim_core::topology::MachineSpec| {
            spec.l3_shared_lines = L3SharedLines::Inclusive;
            spec.clean_shared_line_answer = answer;
        }
    };
    let shared_in_domain_0 = |b: &mut Bench| {
        b.read(0, 0);
        b.read(1, 0);
    };
    for reader in [2, 8] {
        // MESIF: core 1 holds the Forward copy.
        let before = read_cost(
            Protocol::Mesif,
            inclusive(CleanSharedLineAnswer::MemoryOrForwarder),
            shared_in_domain_0,
            reader,
        );
        let after = read_cost(
            Protocol::Mesif,
            inclusive(CleanSharedLineAnswer::HoldingL3),
            shared_in_domain_0,
            reader,
        );
        assert_eq!(before.supplier.map(|s| (s.0, s.1)), Some((1, F)));
        assert_eq!(after.supplier.map(|s| (s.0, s.1)), Some((1, F)));
        assert_eq!(after.route, before.route);
        let l = small_machine(Protocol::Mesif, Lookup::Home).latency;
        let saving = l.l3_transfer_cycles - l.l3_hit_cycles;
        assert!(saving > 0);
        assert_eq!(
            after.latency_cycles() + saving,
            before.latency_cycles(),
            "reader {reader}"
        );
        // MESI: both copies Shared; memory without the key, the L3 with it.
        let before = read_cost(
            Protocol::Mesi,
            inclusive(CleanSharedLineAnswer::MemoryOrForwarder),
            shared_in_domain_0,
            reader,
        );
        let after = read_cost(
            Protocol::Mesi,
            inclusive(CleanSharedLineAnswer::HoldingL3),
            shared_in_domain_0,
            reader,
        );
        assert_eq!(before.route, Route::Memory { node: 0 });
        assert_eq!(before.supplier, None);
        assert_eq!(after.supplier.map(|s| s.1), Some(S));
        assert!(!matches!(after.route, Route::Memory { .. }), "{after:?}");
        assert!(
            after.latency_cycles() < before.latency_cycles(),
            "{after:?}"
        );
        assert!(!after.hitm);
    }
}

/// `holding-die`: a line whose copies are all Shared in one domain is
/// answered by a core of that domain at what a Modified copy there costs;
/// with copies in two domains it still comes from memory.
#[test]
fn a_shared_line_held_in_one_die_is_answered_by_that_die() {
    let die = |spec: &mut sim_core::topology::MachineSpec| {
        spec.clean_shared_line_answer = CleanSharedLineAnswer::HoldingDie;
    };
    for reader in [2, 8] {
        let shared_in_domain_0 = |b: &mut Bench| {
            b.read(0, 0);
            b.read(1, 0);
        };
        let before = read_cost(Protocol::Moesi, |_| {}, shared_in_domain_0, reader);
        let after = read_cost(Protocol::Moesi, die, shared_in_domain_0, reader);
        assert_eq!(before.route, Route::Memory { node: 0 });
        assert_eq!(after.supplier.map(|s| s.1), Some(S), "{after:?}");
        let from_modified = read_cost(
            Protocol::Moesi,
            |_| {},
            |b: &mut Bench| {
                b.write(0, 0);
            },
            reader,
        );
        assert_eq!(after.route, from_modified.route);
        assert_eq!(after.latency_cycles(), from_modified.latency_cycles());
        assert_ne!(after.latency_cycles(), before.latency_cycles());
    }
    let mut b = bench_with(Protocol::Mesi, die);
    b.read(0, 0);
    b.read(2, 0); // a copy in domain 1 too
    assert_eq!(b.holders(0), vec![(0, S), (2, S)]);
    let r = b.read(8, 0);
    assert_eq!(r.route, Route::Memory { node: 0 });
    assert_eq!(r.supplier, None);
}

/// Bad values of the two keys are refused with the key's name.
#[test]
fn the_clean_answer_keys_refuse_what_cannot_hold() {
    let mut spec = small_machine(Protocol::Mesif, Lookup::Home);
    spec.clean_shared_line_answer = CleanSharedLineAnswer::HoldingL3;
    spec.l3_shared_lines = L3SharedLines::NotKept;
    let e = Topology::new(spec).unwrap_err();
    assert_eq!(e.key, "clean_shared_line_answer");
    assert!(e.message.contains("l3_shared_lines"), "{e}");
    let mut spec = small_machine(Protocol::Mesif, Lookup::Home);
    spec.latency.clean_snoop_saving_cycles = Some(spec.latency.l3_transfer_cycles + 1);
    let e = Topology::new(spec).unwrap_err();
    assert_eq!(e.key, "latency.clean_snoop_saving_cycles");
}
