//! Physical sanity of the simulator, through whole scenarios: false sharing,
//! a contended atomic, core-to-core ping-pong against the preset's sourced
//! latencies, and the home-node effect of a directory (AMD-like) machine
//! against a snoop-filter (Intel) machine.

use scenarios::build::{build_all, BuildOptions, BuiltVariant};
use scenarios::run::results::{run_all, VariantResult};
use scenarios::{load_file, load_str};
use sim_core::cpu::LinuxCpu;
use std::path::PathBuf;

fn shipped(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/shipped")).join(name)
}

/// Loads, builds and runs every variant; any error fails the test.
fn run_built(built: &[BuiltVariant]) -> Vec<VariantResult> {
    run_all(built)
        .into_iter()
        .map(|r| r.unwrap_or_else(|f| panic!("variant `{}` failed: {}", f.name, f.error)))
        .collect()
}

fn build_file(name: &str) -> Vec<BuiltVariant> {
    let loaded = load_file(&shipped(name)).unwrap_or_else(|e| panic!("{e}"));
    build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn build_text(text: &str) -> Vec<BuiltVariant> {
    let loaded = load_str("inline.toml", text).unwrap_or_else(|e| panic!("{e}"));
    build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn run_file(name: &str) -> Vec<VariantResult> {
    run_built(&build_file(name))
}

fn by_name<'a>(results: &'a [VariantResult], name: &str) -> &'a VariantResult {
    results
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no variant `{name}`"))
}

fn icelake() -> &'static models::presets::Preset {
    models::presets::find("icelake-sp-2s").expect("preset icelake-sp-2s")
}

// ---------------------------------------------------------------------------
// False sharing

#[test]
fn padded_beats_packed_under_false_sharing() {
    let results = run_file("false-sharing.toml");
    let packed = by_name(&results, "packed");
    let padded = by_name(&results, "padded");

    // Every CPU ran its 2000 measured iterations in both layouts.
    assert_eq!(packed.measured_iterations(), 8 * 2000);
    assert_eq!(padded.measured_iterations(), 8 * 2000);

    let speedup = padded.throughput_total() / packed.throughput_total();
    assert!(
        speedup > 5.0,
        "padded is only {speedup:.2}x packed ({} vs {} iterations/s)",
        padded.throughput_total(),
        packed.throughput_total()
    );

    // Packed: the eight counters share one line, and that line carries HITM
    // traffic (each write finds the line Modified in another core).
    assert_eq!(packed.lines.len(), 1, "packed lines: {:?}", packed.lines);
    let line = &packed.lines[0];
    assert_eq!(
        line.fields.len(),
        8,
        "fields on the line: {:?}",
        line.fields
    );
    assert!(
        line.traffic.hitm > 0,
        "no HITM on the shared line: {line:?}"
    );
    assert_eq!(packed.total.hitm, line.traffic.hitm);
    assert!(packed.total.invalidations > 0);

    // Padded: one line per counter, each hit by its own CPU. Ice Lake's
    // adjacent-line prefetcher still reads a neighbour's line once when the
    // owner's buddy line misses, so a line may miss once or twice after the
    // warmup while the pairs settle (each core then holds its buddy's copy,
    // and an upgrade does not prefetch a buddy already held), never more.
    assert_eq!(padded.lines.len(), 8, "padded lines: {:?}", padded.lines);
    for l in &padded.lines {
        assert_eq!(l.fields.len(), 1, "line {} holds {:?}", l.unit, l.fields);
        assert_eq!(l.traffic.hitm, 0, "HITM on padded line {}", l.unit);
        assert!(
            l.traffic.misses <= 2,
            "misses on padded line {}: {:?}",
            l.unit,
            l.traffic
        );
    }
    assert_eq!(padded.total.hitm, 0);
    assert!(padded.total.invalidations <= 16, "{:?}", padded.total);
}

// ---------------------------------------------------------------------------
// Contended counter

/// Sockets spanned by a variant's CPUs.
fn sockets_of(b: &BuiltVariant) -> Vec<u32> {
    let mut s: Vec<u32> = b
        .config
        .threads
        .iter()
        .map(|t| b.config.topology.socket_of(t.cpu))
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

#[test]
fn contended_counter_collapses_with_cpus_and_jumps_across_sockets() {
    let built = build_file("contended-counter.toml");
    let results = run_built(&built);
    let names: Vec<&str> = results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "1cpu",
            "2cpus",
            "4cpus",
            "8cpus",
            "16cpus",
            "40cpus-1socket",
            "40cpus-2sockets",
            "80cpus",
            "160cpus"
        ]
    );

    // Per-CPU throughput strictly falls as CPUs are added, in file order.
    for pair in results.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            b.throughput_per_cpu() < a.throughput_per_cpu(),
            "per-CPU throughput rose from `{}` ({}) to `{}` ({})",
            a.name,
            a.throughput_per_cpu(),
            b.name,
            b.throughput_per_cpu()
        );
    }

    // The same 40 CPUs cost more per increment once they span both
    // sockets, but not much more: each socket's caching agent sends one
    // request for the line at a time, so the line stays on the socket that
    // holds it for most handovers (1.04x at this seed; 1.3x and more when
    // every waiter competed; tests/folly_contended_atomics.rs holds the
    // crossing share against a measured machine).
    let one = by_name(&results, "40cpus-1socket").iteration_cycles.mean();
    let two = by_name(&results, "40cpus-2sockets").iteration_cycles.mean();
    assert!(
        two > one && two < 1.3 * one,
        "40 CPUs on 2 sockets: {two:.1} cycles/iteration, on 1 socket: {one:.1} ({:.2}x)",
        two / one
    );

    // Cross-socket traffic exactly when the CPUs span two sockets.
    for (b, r) in built.iter().zip(&results) {
        let sockets = sockets_of(b);
        if sockets.len() > 1 {
            assert!(
                r.total.cross_socket > 0,
                "`{}` spans sockets {sockets:?} without cross-socket traffic",
                r.name
            );
        } else {
            assert_eq!(
                r.total.cross_socket, 0,
                "`{}` stays on socket {sockets:?} yet crosses sockets",
                r.name
            );
        }
    }
    let two_socket: Vec<&str> = built
        .iter()
        .filter(|b| sockets_of(b).len() > 1)
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(two_socket, ["40cpus-2sockets", "80cpus", "160cpus"]);
}

#[test]
fn contended_counter_cost_is_bounded_by_the_queue() {
    // At worst a CPU waits for every other CPU's hand-off (the transfer plus
    // the locked op) before its own: one round of the queue.
    let spec = (icelake().build)();
    let l = &spec.latency;
    // The worst transfer inside one socket is resolved by the shared L3; across
    // sockets the snoop filter of the requester's node is asked (one leg in
    // the node) and forwards over UPI to the owner, which answers over UPI.
    let same_socket_transfer = l.l3_transfer_cycles;
    let cross_socket_transfer = l.hop_in_node_cycles + 2 * l.hop_between_sockets_cycles;
    assert!(cross_socket_transfer > same_socket_transfer);

    let built = build_file("contended-counter.toml");
    let results = run_built(&built);
    for (b, r) in built.iter().zip(&results) {
        let transfer = if sockets_of(b).len() > 1 {
            cross_socket_transfer
        } else {
            same_socket_transfer
        };
        let cpus = r.cpus.len() as f64;
        let bound = (transfer + l.locked_op_cycles) as f64 * cpus * 1.2;
        let mean = r.iteration_cycles.mean();
        assert!(
            mean < bound,
            "`{}`: {mean:.1} cycles per increment, above the queue bound {bound:.1} \
             (({transfer} + {}) x {cpus} x 1.2)",
            r.name,
            l.locked_op_cycles
        );
    }
}

// ---------------------------------------------------------------------------
// Ping-pong against the sourced core-to-core latencies

/// One-way latency in ns: half the round trip of one iteration.
fn one_way_ns(r: &VariantResult) -> f64 {
    r.cycles_to_ns(r.iteration_cycles.mean() / 2.0)
}

#[test]
fn ping_pong_matches_the_sourced_core_to_core_latencies() {
    let results = run_file("ping-pong.toml");
    let preset = icelake();
    let measured = |key: &str| -> f64 {
        preset
            .target(key)
            .unwrap_or_else(|| panic!("preset has no measured `{key}`"))
            .measured_ns
    };
    assert_eq!(measured("smt"), 8.0);
    assert_eq!(measured("same-socket"), 51.3);
    assert_eq!(measured("cross-socket"), 107.8);

    let mut report = String::new();
    let mut failures = Vec::new();
    for (variant, key) in [
        ("smt-siblings", "smt"),
        ("same-socket", "same-socket"),
        ("cross-socket", "cross-socket"),
    ] {
        let r = by_name(&results, variant);
        assert_eq!(r.clock_mhz, 3400);
        let simulated = one_way_ns(r);
        let expected = measured(key);
        let error = (simulated - expected) / expected;
        report.push_str(&format!(
            "{variant}: {simulated:.2} ns simulated vs {expected} ns measured ({:+.1} %)\n",
            error * 100.0
        ));
        if error.abs() > 0.05 {
            failures.push(variant);
        }
    }
    assert!(failures.is_empty(), "off by more than 5 %:\n{report}");
}

#[test]
fn cross_socket_transfers_cost_more_than_same_socket_ones() {
    let results = run_file("ping-pong.toml");
    let smt = by_name(&results, "smt-siblings");
    let same = by_name(&results, "same-socket");
    let cross = by_name(&results, "cross-socket");
    assert!(
        cross.iteration_cycles.mean() > same.iteration_cycles.mean(),
        "cross-socket {} cycles/iteration, same socket {}",
        cross.iteration_cycles.mean(),
        same.iteration_cycles.mean()
    );
    assert!(same.iteration_cycles.mean() > smt.iteration_cycles.mean());
    // Only the cross-socket pair moves the line across sockets, and every
    // hand-off of it does.
    assert_eq!(smt.total.cross_socket, 0);
    assert_eq!(same.total.cross_socket, 0);
    assert!(cross.total.cross_socket > 0);
    assert_eq!(cross.total.cross_socket, cross.total.misses);
    // SMT siblings share the core's cache: no miss at all.
    assert_eq!(smt.total.misses, 0);
}

// ---------------------------------------------------------------------------
// The home-node effect

/// An AMD-like 2-socket machine: a directory at each line's home (`lookup =
/// "home"`), MOESI, eight 8-core L3 domains (CCXs) per socket.
const AMD_LIKE_MACHINE: &str = r#"[machine]
name = "amd-like-2s"
lookup = "home"
protocol = "moesi"
sockets = 2
nodes_per_socket = 1
l3_per_node = 8
cores_per_l3 = 8
threads_per_core = 2
clock_mhz = 3000
line_size_bytes = 64
store_buffer_entries = 48

[machine.latency]
l1_hit_cycles = 4
locked_op_cycles = 18
smt_transfer_cycles = 6
l3_transfer_cycles = 60
hop_in_node_cycles = 90
hop_between_nodes_cycles = 90
hop_between_sockets_cycles = 200
dram_cycles = 250
"#;

/// A compare-and-swap ping-pong of `cpus` on `machine` (a TOML line or
/// table), with the flag homed on `node`.
fn ping_pong(machine: &str, cpus: &str, node: u32) -> String {
    format!(
        r#"schema = 1
name = "home-effect"
seed = 1

[run]
iterations = 500
warmup_iterations = 20

[structs.flag]
fields = [{{ name = "turn", type = "unsigned long" }}]

[instances.flag]
struct = "flag"
kind = "global"
node = {node}

[scripts]
bounce = """
let me = tid()
while cmpxchg(flag.turn, me, 1 - me) != me {{
}}
"""

[[threads]]
name = "pair"
cpus = "{cpus}"
script = "bounce"

{machine}"#
    )
}

/// Mean cycles per round trip of the ping-pong, checking the flag's home.
fn round_trip(machine: &str, cpus: &str, node: u32) -> f64 {
    let built = build_text(&ping_pong(machine, cpus, node));
    let results = run_built(&built);
    assert_eq!(results.len(), 1);
    let r = &results[0];
    assert_eq!(r.measured_iterations(), 2 * 500);
    assert_eq!(r.lines.len(), 1, "{:?}", r.lines);
    assert_eq!(
        r.lines[0].home_node, node,
        "the flag is not homed where asked"
    );
    r.iteration_cycles.mean()
}

#[test]
fn directory_machine_pays_for_a_remote_home() {
    // Cores 64 and 72 (CPUs 64 and 72) are in different CCXs of socket 1
    // (node 1); the line's directory is at its home node.
    let built = build_text(&ping_pong(AMD_LIKE_MACHINE, "64,72", 1));
    let topology = &built[0].config.topology;
    assert_eq!(topology.cpu_count(), 256);
    assert_eq!(
        (
            topology.socket_of(LinuxCpu::new(64)),
            topology.socket_of(LinuxCpu::new(72))
        ),
        (1, 1)
    );
    assert_eq!(
        (
            topology.node_of(LinuxCpu::new(64)),
            topology.node_of(LinuxCpu::new(72))
        ),
        (1, 1)
    );
    assert_ne!(
        topology.l3_of(LinuxCpu::new(64)),
        topology.l3_of(LinuxCpu::new(72))
    );

    let home = round_trip(AMD_LIKE_MACHINE, "64,72", 1);
    let remote = round_trip(AMD_LIKE_MACHINE, "64,72", 0);
    let ratio = remote / home;
    assert!(
        (1.6..=2.4).contains(&ratio),
        "homed on node 0: {remote:.1} cycles/iteration, on node 1: {home:.1} ({ratio:.2}x)"
    );
}

#[test]
fn snoop_filter_machine_ignores_the_home() {
    // Two cores of socket 1 of the Intel preset: the requester's own snoop
    // filter resolves the transfer, wherever the line's home is.
    let machine = r#"machine = "icelake-sp-2s""#;
    // A top-level key must come before any table: put it first.
    let text = |node| {
        let t = ping_pong("", "40,41", node);
        t.replacen("schema = 1\n", &format!("schema = 1\n{machine}\n"), 1)
    };
    let run = |node| {
        let results = run_built(&build_text(&text(node)));
        assert_eq!(results[0].lines[0].home_node, node);
        results[0].iteration_cycles.mean()
    };
    let built = build_text(&text(1));
    let topology = &built[0].config.topology;
    assert_eq!(
        (
            topology.socket_of(LinuxCpu::new(40)),
            topology.socket_of(LinuxCpu::new(41))
        ),
        (1, 1)
    );
    let home = run(1);
    let remote = run(0);
    assert!(
        (remote - home).abs() <= 0.01 * home,
        "homed on node 0: {remote:.1} cycles/iteration, on node 1: {home:.1}"
    );
}

#[test]
fn a_machine_of_ones_own_runs_end_to_end() {
    // The AMD-like machine, no preset: false sharing between two CCXs of
    // socket 0, packed and padded.
    let text = format!(
        r#"schema = 1
name = "own-machine"
base_name = "packed"

[run]
iterations = 300
warmup_iterations = 10

[structs.counter]
fields = [{{ name = "value", type = "unsigned long" }}]

[instances.counters]
struct = "counter"
kind = "global"
count = 4

[scripts]
increment = """
counters[tid()].value = counters[tid()].value + 1
work 20
"""

[[threads]]
name = "writers"
cpus = "0,8,16,24"
script = "increment"

[[variants]]
name = "padded"
set = {{ "structs.counter.fields.value.align" = 64 }}

{AMD_LIKE_MACHINE}"#
    );
    let built = build_text(&text);
    assert_eq!(built.len(), 2);
    let spec = &built[0].config.topology.spec;
    assert_eq!(spec.name, "amd-like-2s");
    assert_eq!(spec.clock_mhz, 3000);
    assert_eq!(spec.latency.hop_between_sockets_cycles, 200);
    assert_eq!(built[0].config.topology.cpu_count(), 256);

    let results = run_built(&built);
    let report = scenarios::report::text::full_report("own-machine", &run_all(&built));
    assert!(
        report.starts_with("bounce: own-machine on amd-like-2s (3000 MHz), 2 variant(s)"),
        "{report}"
    );
    let packed = by_name(&results, "packed");
    let padded = by_name(&results, "padded");
    for r in [packed, padded] {
        assert_eq!(r.machine, "amd-like-2s");
        assert_eq!(r.measured_iterations(), 4 * 300);
        assert!(r.outcome.elapsed_cycles > 0);
    }
    assert!(packed.total.hitm > 0);
    assert_eq!(padded.total.hitm, 0);
    assert!(padded.throughput_total() > packed.throughput_total());
}

// ---------------------------------------------------------------------------
// Distances between sockets

/// The shipped 8-socket machine: a line bounced between sockets two UPI
/// links apart pays both links on every leg that crosses them, and the pair
/// joined by the twist (0 and 4) is as near as neighbours on the ring.
#[test]
fn a_two_link_socket_pair_pays_both_links() {
    let built = build_file("eight-sockets.toml");
    let t = &built[0].config.topology;
    assert_eq!(t.spec.sockets, 8);
    assert_eq!(
        (
            t.socket_of(LinuxCpu::new(28)),
            t.socket_of(LinuxCpu::new(56)),
            t.socket_of(LinuxCpu::new(112))
        ),
        (1, 2, 4)
    );
    assert_eq!(
        (
            t.socket_hops(0, 1),
            t.socket_hops(0, 2),
            t.socket_hops(0, 4)
        ),
        (1, 2, 1)
    );
    let results = run_built(&built);
    let l = &t.spec.latency;
    // One way: the atomic, the leg to the requester's own snoop filter
    // (lookup = local), and the legs to the owner and back, each crossing
    // the links between the two sockets.
    let one_way = |links: u64| {
        (l.locked_op_cycles + l.hop_in_node_cycles + 2 * links * l.hop_between_sockets_cycles)
            as f64
    };
    let round_trip = |name: &str| by_name(&results, name).iteration_cycles.mean();
    for (name, links) in [("one-link", 1), ("two-links", 2), ("opposite", 1)] {
        let measured = round_trip(name) / 2.0;
        let expected = one_way(links);
        assert!(
            (measured - expected).abs() / expected < 0.01,
            "{name}: one way {measured} cycles, the path gives {expected}"
        );
    }
}

/// `node_distances` (numactl's SLIT table) sets the legs between nodes: the
/// shipped example bounces a line between two nodes of one socket and
/// across sockets, and each round trip's two transfers cost two legs more
/// than the preset's by four times the difference of the legs.
#[test]
fn node_distances_set_what_a_pair_of_nodes_costs() {
    let built = build_file("node-distances.toml");
    let results = run_built(&built);
    let cycles = |name: &str| by_name(&results, name).iteration_cycles.mean();
    let topology = |name: &str| {
        &built
            .iter()
            .find(|b| b.name == name)
            .expect("the variant")
            .config
            .topology
    };
    let (tree, slit) = (topology("cross-node"), topology("cross-node-slit"));
    assert!(tree.spec.node_distances.slit.is_empty());
    assert_eq!(slit.spec.node_distances.slit[0][1], 11);
    let l = &slit.spec.latency;
    // One distance unit: the local memory latency over 10.
    let unit = (2 * l.hop_in_node_cycles + l.dram_cycles) / 10;
    assert_eq!(slit.distance_unit_cycles(), unit);
    for (pair, other_node, distance) in [("cross-node", 1, 11), ("cross-socket", 2, 20)] {
        let slit_leg = l.hop_in_node_cycles + (distance - 10) * unit / 2;
        assert_eq!(slit.node_leg_cycles(0, other_node), slit_leg);
        let tree_leg = tree.node_leg_cycles(0, other_node);
        let difference = cycles(&format!("{pair}-slit")) - cycles(pair);
        assert_eq!(
            difference,
            4.0 * (slit_leg as f64 - tree_leg as f64),
            "{pair}"
        );
    }
    assert!(cycles("cross-socket-slit") > cycles("cross-node-slit"));
}
