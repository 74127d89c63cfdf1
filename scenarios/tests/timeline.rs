//! The timeline's messages (`bounce trace --svg`): an Intel cross-socket
//! request goes through the snoop filter of the requester's socket and the
//! home agent of the line's home, DRAM data comes from a memory lane, and
//! the legs drawn add up to the cost the model charged.

use scenarios::build::{build_all, BuildOptions, BuiltVariant};
use scenarios::load_file;
use scenarios::report::timeline::{Endpoint, MessageKind, TimelineProbe, Transaction};
use std::path::PathBuf;

fn book_scenario(name: &str, variant: &str) -> BuiltVariant {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../book/scenarios")).join(name);
    let loaded = load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    build_all(&loaded, BuildOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .find(|b| b.name == variant)
        .expect("the variant")
}

fn transactions(built: &BuiltVariant, prefetches: bool) -> (Vec<Transaction>, u64) {
    let config = &built.config;
    let mut probe = TimelineProbe::new(&config.topology, &config.memory, 50);
    if !prefetches {
        probe = probe.without_prefetches();
    }
    sim_core::engine::run(config, &mut probe).expect("the run");
    (probe.transactions(), probe.prefetches_left_out)
}

/// The cycles from a transaction's first message to its last.
fn span(t: &Transaction) -> (u64, u64) {
    let first = t.messages.iter().map(|m| m.send_cycle).min().unwrap();
    let last = t.messages.iter().map(|m| m.arrive_cycle).max().unwrap();
    (first, last)
}

#[test]
fn an_intel_cross_socket_read_goes_through_the_home_agent_in_the_legs_charged() {
    // icelake-sp-2s: CPU 0 writes the line (homed on node 0), CPU 1 reads
    // it, then CPU 40 (socket 1) reads it from CPU 1's forwarding copy.
    let built = book_scenario("mesi-three-cpus.toml", "mesif");
    let l = built.config.topology.spec.latency.clone();
    let (all, left_out) = transactions(&built, false);
    assert!(left_out > 0, "icelake-sp-2s prefetches the buddy line");
    assert!(all.iter().all(|t| !t.caption.contains("prefetch")));
    let read = all
        .iter()
        .find(|t| t.caption.starts_with("CPU 40 load"))
        .expect("CPU 40's read");
    let steps: Vec<(Endpoint, Endpoint, u64, MessageKind)> = read
        .messages
        .iter()
        .map(|m| (m.from, m.to, m.arrive_cycle - m.send_cycle, m.kind))
        .collect();
    let socket_leg = l.hop_between_sockets_cycles;
    let in_node = l.hop_in_node_cycles;
    assert_eq!(
        steps,
        vec![
            // To the snoop filter of its own node (node 1), which misses.
            (
                Endpoint::Core(40),
                Endpoint::Node(1),
                in_node,
                MessageKind::Request
            ),
            // Over UPI to the home agent of node 0 (the socket leg less the
            // leg inside the node the agent's snoop then takes).
            (
                Endpoint::Node(1),
                Endpoint::HomeAgent(0),
                socket_leg - in_node,
                MessageKind::Request
            ),
            (
                Endpoint::HomeAgent(0),
                Endpoint::Core(1),
                in_node,
                MessageKind::Forward
            ),
            (
                Endpoint::Core(1),
                Endpoint::Core(40),
                socket_leg,
                MessageKind::Data
            ),
        ]
    );
    // Back to back, and the last arrives when the model says the read
    // completed: in_node + 2 socket legs, the preset's measured total.
    for pair in read.messages.windows(2) {
        assert_eq!(pair[0].arrive_cycle, pair[1].send_cycle, "{read:?}");
    }
    let (first, last) = span(read);
    assert_eq!(last - first, in_node + 2 * socket_leg);
    assert!(read
        .caption
        .contains(&format!("{} in all", in_node + 2 * socket_leg)));
}

#[test]
fn dram_data_comes_from_the_memory_lane() {
    // The first write of the line: memory at its home (node 0) supplies it.
    let built = book_scenario("mesi-three-cpus.toml", "mesif");
    let l = built.config.topology.spec.latency.clone();
    let (all, _) = transactions(&built, true);
    let write = &all[0];
    assert!(
        write.caption.starts_with("CPU 0 store"),
        "{}",
        write.caption
    );
    let steps: Vec<(Endpoint, Endpoint, u64, &str)> = write
        .messages
        .iter()
        .map(|m| {
            (
                m.from,
                m.to,
                m.arrive_cycle - m.send_cycle,
                m.label.as_str(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            (
                Endpoint::Core(0),
                Endpoint::Node(0),
                l.hop_in_node_cycles,
                "GetM"
            ),
            (
                Endpoint::Node(0),
                Endpoint::Memory(0),
                l.dram_cycles,
                "Read (DRAM)"
            ),
            (
                Endpoint::Memory(0),
                Endpoint::Core(0),
                l.hop_in_node_cycles,
                "Data (DRAM)"
            ),
        ]
    );
    // With prefetches drawn, the buddy line's read is there too.
    assert!(all.iter().any(|t| t.caption.contains("prefetch")));
}
