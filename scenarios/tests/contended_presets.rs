//! The shape of a contended atomic on every preset: the cost per increment
//! grows with the CPUs waiting, jumps when the CPUs leave one L3 domain and
//! again when they span sockets, and stays bounded by the slowest transfer
//! times the number of waiting CPUs. Every preset the crate knows is
//! checked, so a new preset is covered as soon as it exists.

use scenarios::build::{build_all, BuildOptions};
use scenarios::load_str;
use scenarios::run::results::{run_all, VariantResult};
use sim_core::topology::Topology;

/// A counter incremented by each CPU list, one variant per list.
fn contended(preset: &str, cpu_lists: &[(&str, Vec<u32>)]) -> Vec<VariantResult> {
    let list = |cpus: &[u32]| {
        cpus.iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut text = format!(
        r#"schema = 1
machine = "{preset}"
[run]
iterations = 60
warmup_iterations = 5
[structs.counter]
fields = [{{ name = "value", type = "atomic_long_t" }}]
[instances.shared]
struct = "counter"
kind = "global"
[scripts]
inc = "fetch_add(shared.value, 1)"
[[threads]]
name = "t"
cpus = "{}"
script = "inc"
"#,
        list(&cpu_lists[0].1)
    );
    for (name, cpus) in &cpu_lists[1..] {
        text.push_str(&format!(
            "[[variants]]\nname = \"{name}\"\nset = {{ \"threads.t.cpus\" = \"{}\" }}\n",
            list(cpus)
        ));
    }
    let loaded = load_str("contended.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let built = build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    run_all(&built)
        .into_iter()
        .map(|r| r.unwrap_or_else(|f| panic!("{preset} {}: {}", f.name, f.error)))
        .collect()
}

/// Cycles between two increments of the line: a CPU's cycles per
/// iteration spread over the CPUs taking turns.
fn cycles_per_increment(r: &VariantResult) -> f64 {
    r.iteration_cycles.mean() / r.cpus.len() as f64
}

/// CPU numbers of the first `n` cores of an L3 domain (thread 0 of each).
fn cores_of_l3(t: &Topology, l3: u32, n: u32) -> Vec<u32> {
    (0..t.core_count())
        .filter(|&c| t.l3_of_core(c) == l3)
        .take(n as usize)
        .collect()
}

#[test]
fn contended_atomics_have_the_same_shape_on_every_preset() {
    for preset in models::presets::PRESETS {
        let spec = models::presets::resolve(preset.name).expect("preset resolves");
        let t = Topology::new(spec.clone()).expect("valid topology");
        let k = spec.cores_per_l3.min(8);
        let half = (k / 2).max(1);
        let mut lists: Vec<(&str, Vec<u32>)> = vec![
            ("1cpu", vec![0]),
            ("2cpus-same-l3", cores_of_l3(&t, 0, 2)),
            ("same-l3", cores_of_l3(&t, 0, k)),
        ];
        let l3_per_socket = spec.nodes_per_socket * spec.l3_per_node;
        if l3_per_socket > 1 {
            let mut two = cores_of_l3(&t, 0, half);
            two.extend(cores_of_l3(&t, 1, half));
            lists.push(("two-l3-one-socket", two));
        }
        if spec.sockets > 1 {
            let mut two = cores_of_l3(&t, 0, half);
            two.extend(cores_of_l3(&t, l3_per_socket, half));
            lists.push(("two-sockets", two));
        }
        let results = contended(preset.name, &lists);
        let get = |name: &str| {
            results
                .iter()
                .find(|r| r.name == name || (name == "1cpu" && r.name == "base"))
                .unwrap_or_else(|| panic!("{}: no variant {name}", preset.name))
        };
        let one = get("1cpu");
        let same_l3 = get("same-l3");
        // Cost per iteration grows with the CPUs waiting.
        assert!(
            get("2cpus-same-l3").iteration_cycles.mean() > one.iteration_cycles.mean(),
            "{}: two CPUs are not slower than one",
            preset.name
        );
        if k > 2 {
            assert!(
                same_l3.iteration_cycles.mean() > get("2cpus-same-l3").iteration_cycles.mean(),
                "{}: {k} CPUs are not slower than two",
                preset.name
            );
        }
        let l = &spec.latency;
        let slowest_transfer = l.l3_transfer_cycles.max(
            l.hop_in_node_cycles.max(l.hop_between_nodes_cycles)
                + 2 * l.hop_between_sockets_cycles.max(l.hop_between_nodes_cycles),
        ) + l.locked_op_cycles;
        let mut previous = cycles_per_increment(same_l3);
        for name in ["two-l3-one-socket", "two-sockets"] {
            let Some(r) = results.iter().find(|r| r.name == name) else {
                continue;
            };
            let per_increment = cycles_per_increment(r);
            // A machine whose dies are all linked alike (Cascade Lake-AP:
            // every die has a UPI link to each other die) has no further
            // jump at the socket boundary, only no drop.
            let flat_across_sockets = name == "two-sockets"
                && spec.nodes_per_socket > 1
                && l.hop_between_sockets_cycles == l.hop_between_nodes_cycles;
            let jump = if flat_across_sockets { 0.95 } else { 1.15 };
            assert!(
                per_increment > previous * jump,
                "{}: {name} costs {per_increment:.0} cycles per increment, not a jump over {previous:.0}",
                preset.name
            );
            previous = per_increment;
        }
        for r in &results {
            let bound = slowest_transfer as f64 * r.cpus.len() as f64 * 1.2;
            assert!(
                r.iteration_cycles.mean() <= bound.max(l.l1_hit_cycles as f64 + 100.0),
                "{} {}: {:.0} cycles per iteration over the bound {bound:.0}",
                preset.name,
                r.name,
                r.iteration_cycles.mean()
            );
        }
    }
}
