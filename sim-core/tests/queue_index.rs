//! A contended line's queue keeps an index by L3 domain and core, so that
//! the socket agents' draw (`lookup = local`, several L3 domains) needs no
//! pass over the waiters. With `check_invariants` every draw is made from
//! the index and compared with a rescan of the queue (same question to
//! `pick`, same waiter chosen), and the index with one rebuilt from the
//! queue: a difference is a protocol violation. Here random traffic keeps
//! long queues at a line while the directory's sharers and owner move.

use sim_core::coherence::{Coherence, Need, RequestKind, RequestTag, Requested};
use sim_core::cpu::{CpuIndex, LinuxCpu};
use sim_core::memory::MemoryLayout;
use sim_core::topology::{Lookup, MachineSpec, Protocol, Topology};
use sim_core::{Cycle, Cycles};
use testkit::small_machine;

/// Serves random requests of every CPU (reads, writes, prefetches) on two
/// lines of a machine of 8 L3 domains; returns how many lines got an
/// index and the L3 domains of the waiters served while one had it.
fn random_traffic(spec: MachineSpec, seed: u64) -> (usize, Vec<u32>) {
    let topology = Topology::new(spec).unwrap();
    let memory = MemoryLayout {
        structs: Vec::new(),
        instances: Vec::new(),
        total_bytes: 128,
        unit_bytes: 64,
        line_size_bytes: 64,
        unit_homes: vec![0, 3],
    };
    let mut coherence = Coherence::new(&topology, &memory);
    coherence.check_invariants = true;
    let mut state = seed;
    let mut next = move |below: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % below
    };
    let cpus = topology.cpu_count() as u64;
    let mut served_domains = Vec::new();
    let mut now = Cycle::ZERO;
    for step in 0..6000u64 {
        now += Cycles::new(next(40));
        let unit = next(2) as usize;
        // Requests come faster than the line is served in the first part
        // (queues grow past the index's threshold), slower after.
        let arrivals = if step % 2000 < 1200 { 3 } else { 1 };
        for _ in 0..next(arrivals + 1) {
            let cpu = next(cpus);
            let tag = RequestTag::new(CpuIndex::new(cpu as usize), RequestKind::Demand);
            let need = if next(3) == 0 {
                Need::Read
            } else {
                Need::Write
            };
            let requested = if next(8) == 0 {
                let tag = RequestTag::new(CpuIndex::new(cpu as usize), RequestKind::Prefetch);
                coherence
                    .prefetch_for(&topology, now, LinuxCpu::new(cpu as u32), unit, need, tag)
                    .expect("no protocol violation")
            } else {
                let cycles = Cycles::new(next(30));
                Some(
                    coherence
                        .request(
                            &topology,
                            now,
                            LinuxCpu::new(cpu as u32),
                            unit,
                            need,
                            cycles,
                            tag,
                        )
                        .expect("no protocol violation"),
                )
            };
            if let Some(Requested::Done(report)) = requested {
                coherence.recycle(report);
            }
        }
        for unit in 0..2 {
            if coherence.busy_until(unit) > now || coherence.waiting_count(unit) == 0 {
                continue;
            }
            let indexed = coherence.indexed_queues() > 0;
            let mut pick = |n: usize| next(n as u64) as usize;
            let served = coherence
                .serve_next(&topology, now, unit, &mut pick)
                .expect("the index's draw is the rescan's");
            if let Some((waiter, report)) = served {
                if indexed {
                    served_domains.push(topology.l3_of_core(waiter.core));
                }
                coherence.recycle(report);
            }
        }
    }
    (coherence.indexed_queues(), served_domains)
}

#[test]
fn a_long_queue_draws_from_its_index_as_from_a_rescan() {
    for protocol in [Protocol::Mesif, Protocol::Mesi] {
        for seed in [1, 2, 3] {
            let (indexed, domains) = random_traffic(small_machine(protocol, Lookup::Local), seed);
            assert!(indexed >= 1, "a queue reached the threshold");
            // Draws were made from the index, for waiters of many domains.
            assert!(domains.len() > 500, "{}", domains.len());
            let mut distinct = domains.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), 8, "{distinct:?}");
        }
    }
}

#[test]
fn a_home_that_looks_every_transfer_up_keeps_no_index() {
    // `lookup = home`: every waiter competes, and the draw is over the
    // whole queue: no index is built.
    let (indexed, _) = random_traffic(small_machine(Protocol::Mesi, Lookup::Home), 1);
    assert_eq!(indexed, 0);
}
