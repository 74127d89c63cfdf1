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

/// CPU 0 walks eight lines whose `count` CPUs 64-71 keep incrementing
/// (a line each), branching on each line's `seen` (always 0): the first
/// branch is mispredicted, and the loads overlap, queued behind the
/// writers' transactions or not.
const BUSY_WALK: &str = r#"
schema = 1
name = "walk"
description = "CPU 0 walks eight lines that other CPUs keep writing"
machine = "epyc-milan-2s"
seed = 1

[run]
iterations = 3
warmup_iterations = 0

[structs.slot]
fields = [
  { name = "seen", type = "unsigned long", align = 64 },
  { name = "count", type = "unsigned long" },
]

[instances.slots]
struct = "slot"
kind = "global"
count = 8
node = 1

[scripts]
walker = """
work 2000
let k = 0
let n = 0
while k < 8 {
  if slots[k].seen == 7 { n = n + 1 }
  k = k + 1
}
"""
writer = """
repeat 40 {
  fetch_add(slots[tid()].count, 1)
}
"""

[[threads]]
name = "walker"
cpus = "0"
script = "walker"

[[threads]]
name = "writers"
cpus = "64-71"
script = "writer"
"#;

#[test]
fn the_trace_names_a_mispredicted_branch_and_overlapping_queued_misses() {
    let loaded = scenarios::load_str("walk.toml", BUSY_WALK).unwrap_or_else(|e| panic!("{e}"));
    let built = build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let config = &built[0].config;
    let mut probe =
        scenarios::report::trace::TraceProbe::new(&config.topology, &config.memory, 3000);
    sim_core::engine::run(config, &mut probe).expect("the run");
    let lines = probe.lines();
    let cpu0: Vec<&String> = lines.iter().filter(|l| l.contains("] CPU 0 ")).collect();
    // The first branch on a load still arriving: guessed not taken (never
    // run), taken: one line names it, with its wait and Zen 3's penalty,
    // and no separate line repeats the wait.
    let mispredicted: Vec<&&String> = cpu0.iter().filter(|l| l.contains("mispredicted")).collect();
    assert_eq!(mispredicted.len(), 1, "{cpu0:#?}");
    assert!(
        mispredicted[0].contains("branch mispredicted at scripts.walker line 5, column 20: waits")
            && mispredicted[0]
                .ends_with("cycles for its value, then 13 cycles of misprediction penalty"),
        "{}",
        mispredicted[0]
    );
    assert!(
        !cpu0
            .iter()
            .any(|l| l.contains("for the load of slots[0].seen")),
        "{cpu0:#?}"
    );
    // Loads that waited at their busy home behind the writers, and went on:
    // several of the walk's misses in flight at once.
    assert!(
        cpu0.iter().any(|l| l.contains("waited")
            && l.contains("behind earlier requests")
            && l.contains("of its misses in flight at once")),
        "{cpu0:#?}"
    );
    // (Seven: the run ahead past the seventh line's value, queued behind
    // its writer, waits for its turn, so the eighth line's writer takes its
    // locked add, queued at that same cycle, first, and the run, finding
    // the line busy, does not request it. Run out of turn, it took that
    // line from the writer a cycle ahead of the add, and the walk's eighth
    // load shared that request instead of missing in flight.)
    assert!(
        cpu0.iter()
            .any(|l| l.contains("7 of its misses in flight at once")),
        "{cpu0:#?}"
    );
    // The timeline's captions count them too, and mark the loads.
    let mut timeline = TimelineProbe::new(&config.topology, &config.memory, 40);
    sim_core::engine::run(config, &mut timeline).expect("the run");
    let loads: Vec<Transaction> = timeline
        .transactions()
        .into_iter()
        .filter(|t| t.cpu == sim_core::cpu::LinuxCpu::new(0))
        .collect();
    assert!(loads.iter().all(|t| t.load));
    assert!(
        loads
            .iter()
            .any(|t| t.caption.ends_with("; 7 of its misses in flight")),
        "{loads:#?}"
    );
}

/// CPUs 0-3 (one L3 on Milan) each increment one shared counter and read
/// it back right after: while the others' requests wait for the line, the
/// holder's read hits on it. `{cpus}` is filled in per test.
const SHARED_COUNTER: &str = r#"
schema = 1
name = "counter"
description = "CPUs add to one counter and read it back"
machine = "epyc-milan-2s"
seed = 1

[run]
iterations = 1
warmup_iterations = 0

[structs.counter]
fields = [{ name = "value", type = "unsigned long", align = 64 }]

[instances.hot]
struct = "counter"
kind = "global"

[scripts]
adder = """
let seen = 0
repeat 30 {
  fetch_add(hot.value, 1)
  seen = hot.value
}
"""

[[threads]]
name = "adders"
cpus = "{cpus}"
script = "adder"
"#;

fn counter_trace(cpus: &str) -> Vec<String> {
    let text = SHARED_COUNTER.replace("{cpus}", cpus);
    let loaded = scenarios::load_str("counter.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let built = build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let config = &built[0].config;
    let mut probe =
        scenarios::report::trace::TraceProbe::new(&config.topology, &config.memory, 3000);
    sim_core::engine::run(config, &mut probe).expect("the run");
    probe.lines()
}

const WINDOW_WORDS: &str = "taken while requests wait for the line";

#[test]
fn the_trace_names_a_hit_taken_while_requests_wait_for_the_line() {
    let lines = counter_trace("0-3");
    // The line is contended: some accesses waited at its home.
    assert!(
        lines.iter().any(|l| l.contains("behind earlier requests")),
        "{lines:#?}"
    );
    // A holder's hit while those requests waited says so, on a hit line.
    let window_hits: Vec<&String> = lines.iter().filter(|l| l.contains(WINDOW_WORDS)).collect();
    assert!(!window_hits.is_empty(), "{lines:#?}");
    assert!(
        window_hits.iter().all(|l| l.contains("hit in its")),
        "{window_hits:#?}"
    );
    // Not every hit was taken in that window.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("hit in its own cache") && !l.contains(WINDOW_WORDS)),
        "{lines:#?}"
    );
}

#[test]
fn an_uncontended_hit_is_not_named_as_taken_while_requests_wait() {
    let lines = counter_trace("0");
    assert!(
        lines.iter().any(|l| l.contains("hit in its own cache")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains(WINDOW_WORDS)),
        "{lines:#?}"
    );
}
