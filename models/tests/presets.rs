//! The machine presets: every preset and mode builds a valid machine
//! numbered as Linux numbers it, every machine field has a sourced
//! parameter, and the model's one-way core-to-core latency lands within
//! 10 % of the measured class medians each preset is calibrated against,
//! both by the formulas and by simulating the ping-pong.

use models::presets::{
    self, machine_spec, one_way_cycles, one_way_ns, resolve, resolve_preset, Param, ParamValue,
    Preset, Provenance, PRESETS, SPEC_KEYS,
};
use sim_core::cpu::LinuxCpu;
use sim_core::engine::StopRule;
use sim_core::topology::{Lookup, Protocol, Topology};
use testkit::{field, global, strukt, Seen, Setup};

fn topology(reference: &str) -> Topology {
    Topology::new(resolve(reference).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{reference}: {e}"))
}

/// Every reference: each preset alone, with each mode, and with every
/// combination of modes that do not exclude each other.
fn all_references() -> Vec<String> {
    let mut refs = Vec::new();
    for p in PRESETS {
        let n = p.modes.len();
        for mask in 0u32..(1 << n) {
            let chosen: Vec<_> = (0..n)
                .filter(|i| mask & (1 << i) != 0)
                .map(|i| &p.modes[i])
                .collect();
            let conflicting = chosen.iter().enumerate().any(|(i, a)| {
                chosen[i + 1..]
                    .iter()
                    .any(|b| a.group.is_some() && a.group == b.group)
            });
            if conflicting {
                continue;
            }
            if chosen.is_empty() {
                refs.push(p.name.to_string());
            } else {
                let names: Vec<&str> = chosen.iter().map(|m| m.name).collect();
                refs.push(format!("{}:{}", p.name, names.join(",")));
            }
        }
    }
    refs
}

#[test]
fn the_presets_are_the_ones_the_issue_names() {
    assert_eq!(
        presets::names(),
        [
            "icelake-sp-2s",
            "cascadelake-sp-2s",
            "cascadelake-sp-4s",
            "cascadelake-ap-2s",
            "epyc-naples-2s",
            "epyc-milan-2s",
            "epyc-genoa-1s",
            "epyc-genoa-2s",
            "bergamo-1s",
            "bergamo-2s",
        ]
    );
    let modes = |name: &str| presets::find(name).unwrap().mode_names();
    assert_eq!(modes("icelake-sp-2s"), ["snc2", "smt-off"]);
    assert_eq!(modes("epyc-milan-2s"), ["nps1", "nps2", "nps4", "smt-off"]);
    for p in PRESETS {
        assert!(p.mode("smt-off").is_some(), "{} has no smt-off", p.name);
    }
}

#[test]
fn every_preset_and_mode_builds_a_valid_topology() {
    let refs = all_references();
    assert!(refs.len() > 20, "{refs:?}");
    for r in &refs {
        let resolved = resolve_preset(r).unwrap_or_else(|e| panic!("{r}: {e}"));
        let t = Topology::new(resolved.spec.clone()).unwrap_or_else(|e| panic!("{r}: {e}"));
        // SMT on by default, off with smt-off.
        let smt_off = r.contains("smt-off");
        assert_eq!(t.spec.threads_per_core, if smt_off { 1 } else { 2 }, "{r}");
        // The machine's name is the canonical reference.
        assert_eq!(t.spec.name, resolved.reference(), "{r}");
        // Intel: MESIF, local lookup; AMD: MOESI, home lookup.
        let intel = r.starts_with("icelake") || r.starts_with("cascadelake");
        if intel {
            assert_eq!(
                (t.spec.protocol, t.spec.lookup),
                (Protocol::Mesif, Lookup::Local),
                "{r}"
            );
        } else {
            assert_eq!(
                (t.spec.protocol, t.spec.lookup),
                (Protocol::Moesi, Lookup::Home),
                "{r}"
            );
        }
    }
}

#[test]
fn the_build_field_and_resolve_agree() {
    for p in PRESETS {
        assert_eq!((p.build)(), resolve(p.name).unwrap(), "{}", p.name);
        // The table, with the rules no preset has a figure for (as
        // `resolve_preset` adds them).
        let mut params = (p.params)();
        for rule in models::presets::default_unsourced_rules() {
            if !params.iter().any(|q| q.key == rule.key) {
                params.push(rule);
            }
        }
        assert_eq!(machine_spec(&params).unwrap(), (p.build)(), "{}", p.name);
    }
}

/// (reference, cpu, socket, node, l3 domain, core)
const NUMBERING: &[(&str, u32, u32, u32, u32, u32)] = &[
    ("icelake-sp-2s", 39, 0, 0, 0, 39),
    ("icelake-sp-2s", 40, 1, 1, 1, 40),
    ("icelake-sp-2s", 80, 0, 0, 0, 0),
    ("icelake-sp-2s", 159, 1, 1, 1, 79),
    ("icelake-sp-2s:snc2", 20, 0, 1, 1, 20),
    ("icelake-sp-2s:snc2", 40, 1, 2, 2, 40),
    ("icelake-sp-2s:snc2", 100, 0, 1, 1, 20),
    ("icelake-sp-2s:smt-off", 79, 1, 1, 1, 79),
    ("cascadelake-sp-2s", 27, 0, 0, 0, 27),
    ("cascadelake-sp-2s", 28, 1, 1, 1, 28),
    ("cascadelake-sp-2s", 56, 0, 0, 0, 0),
    ("cascadelake-sp-2s", 111, 1, 1, 1, 55),
    ("cascadelake-sp-4s", 84, 3, 3, 3, 84),
    ("cascadelake-sp-4s", 112, 0, 0, 0, 0),
    ("cascadelake-sp-4s", 223, 3, 3, 3, 111),
    ("cascadelake-ap-2s", 28, 0, 1, 1, 28),
    ("cascadelake-ap-2s", 56, 1, 2, 2, 56),
    ("cascadelake-ap-2s", 112, 0, 0, 0, 0),
    ("cascadelake-ap-2s", 140, 0, 1, 1, 28),
    ("epyc-naples-2s", 4, 0, 0, 1, 4),
    ("epyc-naples-2s", 8, 0, 1, 2, 8),
    ("epyc-naples-2s", 32, 1, 4, 8, 32),
    ("epyc-naples-2s", 63, 1, 7, 15, 63),
    ("epyc-naples-2s", 64, 0, 0, 0, 0),
    ("epyc-naples-2s", 127, 1, 7, 15, 63),
    ("epyc-milan-2s", 8, 0, 0, 1, 8),
    ("epyc-milan-2s", 64, 1, 1, 8, 64),
    ("epyc-milan-2s", 128, 0, 0, 0, 0),
    ("epyc-milan-2s:nps2", 32, 0, 1, 4, 32),
    ("epyc-milan-2s:nps4", 16, 0, 1, 2, 16),
    ("epyc-milan-2s:nps4", 64, 1, 4, 8, 64),
    ("epyc-milan-2s:nps4", 255, 1, 7, 15, 127),
    ("epyc-milan-2s:nps4,smt-off", 127, 1, 7, 15, 127),
    ("epyc-genoa-1s", 95, 0, 0, 11, 95),
    ("epyc-genoa-1s", 96, 0, 0, 0, 0),
    ("epyc-genoa-2s", 95, 0, 0, 11, 95),
    ("epyc-genoa-2s", 96, 1, 1, 12, 96),
    ("epyc-genoa-2s", 192, 0, 0, 0, 0),
    ("epyc-genoa-2s:smt-off", 191, 1, 1, 23, 191),
    ("bergamo-1s", 8, 0, 0, 1, 8),
    ("bergamo-1s", 127, 0, 0, 15, 127),
    ("bergamo-1s", 128, 0, 0, 0, 0),
    ("bergamo-2s", 128, 1, 1, 16, 128),
    ("bergamo-2s", 256, 0, 0, 0, 0),
    ("bergamo-2s", 511, 1, 1, 31, 255),
];

#[test]
fn cpus_are_numbered_as_linux_numbers_them() {
    for &(r, cpu, socket, node, l3, core) in NUMBERING {
        let t = topology(r);
        assert_eq!(
            (
                t.socket_of(LinuxCpu::new(cpu)),
                t.node_of(LinuxCpu::new(cpu)),
                t.l3_of(LinuxCpu::new(cpu)),
                t.core_of(LinuxCpu::new(cpu))
            ),
            (socket, node, l3, core),
            "{r}: CPU {cpu} as (socket, node, l3, core)"
        );
    }
    // The SMT sibling of CPU i is i + physical cores, on every preset.
    for p in PRESETS {
        let t = topology(p.name);
        let cores = t.core_count();
        assert_eq!(t.cpu_count(), 2 * cores, "{}", p.name);
        for i in [0, 1, cores / 2, cores - 1] {
            assert_eq!(t.core_of(LinuxCpu::new(i + cores)), i, "{}", p.name);
            assert_eq!(t.thread_of(LinuxCpu::new(i + cores)), 1, "{}", p.name);
        }
    }
    let cpus = |r: &str| topology(r).cpu_count();
    assert_eq!(cpus("icelake-sp-2s"), 160);
    assert_eq!(cpus("cascadelake-sp-2s"), 112);
    assert_eq!(cpus("cascadelake-sp-4s"), 224);
    assert_eq!(cpus("cascadelake-ap-2s"), 224);
    assert_eq!(cpus("epyc-naples-2s"), 128);
    assert_eq!(cpus("epyc-milan-2s"), 256);
    assert_eq!(cpus("epyc-milan-2s:smt-off"), 128);
    assert_eq!(cpus("epyc-genoa-1s"), 192);
    assert_eq!(cpus("epyc-genoa-2s"), 384);
    assert_eq!(cpus("bergamo-1s"), 256);
    assert_eq!(cpus("bergamo-2s"), 512);
}

fn params_of(r: &str) -> Vec<Param> {
    resolve_preset(r).unwrap_or_else(|e| panic!("{e}")).params
}

#[test]
fn every_preset_has_each_scheduler_parameter_once_with_a_source() {
    for r in all_references() {
        let params = params_of(&r);
        for key in models::presets::SCHED_KEYS {
            let found: Vec<&Param> = params.iter().filter(|p| p.key == key).collect();
            assert_eq!(
                found.len(),
                1,
                "{r}: `{key}` must have exactly one parameter"
            );
            assert!(
                !found[0].source.trim().is_empty(),
                "{r}: `{key}` has no source"
            );
            assert_eq!(found[0].unit, "ns", "{r}: `{key}`");
        }
    }
}

#[test]
fn every_machine_field_has_a_sourced_parameter() {
    for r in all_references() {
        let params = params_of(&r);
        for key in SPEC_KEYS {
            let found: Vec<&Param> = params.iter().filter(|p| p.key == *key).collect();
            assert_eq!(
                found.len(),
                1,
                "{r}: `{key}` must have exactly one parameter"
            );
            assert!(
                !found[0].source.trim().is_empty(),
                "{r}: `{key}` has no source"
            );
        }
        for p in &params {
            assert!(
                SPEC_KEYS.contains(&p.key)
                    || p.key.starts_with("info.")
                    || p.key.starts_with("cost.")
                    || models::presets::SCHED_KEYS.contains(&p.key),
                "{r}: `{}` is neither a machine field, an instruction cost, a scheduler parameter nor informational",
                p.key
            );
            assert!(
                !p.source.trim().is_empty(),
                "{r}: `{}` has no source",
                p.key
            );
            // A derived value shows its arithmetic, an assumed one its reason.
            if matches!(p.kind, Provenance::Derived | Provenance::Assumed) {
                assert!(
                    !p.note.trim().is_empty(),
                    "{r}: {} `{}` has no note",
                    p.kind,
                    p.key
                );
            }
            assert_eq!(
                params.iter().filter(|q| q.key == p.key).count(),
                1,
                "{r}: `{}` twice",
                p.key
            );
        }
        // The informational parameters the issue asks for.
        for key in [
            "info.base_clock_mhz",
            "info.boost_clock_mhz",
            "l1d_kib",
            "l2_kib",
            "info.l3_kib",
            "info.dram_local_ns",
            "info.dram_local_cycles",
        ] {
            assert!(params.iter().any(|p| p.key == key), "{r}: no `{key}`");
        }
    }
}

fn int_param(params: &[Param], key: &str) -> u64 {
    match &params.iter().find(|p| p.key == key).unwrap().value {
        ParamValue::Int(v) => *v,
        other => panic!("{key} = {other}"),
    }
}

fn num_param(params: &[Param], key: &str) -> f64 {
    match &params.iter().find(|p| p.key == key).unwrap().value {
        ParamValue::Num(v) => *v,
        ParamValue::Int(v) => *v as f64,
        other => panic!("{key} = {other}"),
    }
}

#[test]
fn the_clock_is_the_documented_boost_and_dram_figures_follow_the_model() {
    for p in PRESETS {
        let params = (p.params)();
        let spec = (p.build)();
        assert_eq!(
            spec.clock_mhz,
            int_param(&params, "info.boost_clock_mhz"),
            "{}",
            p.name
        );
        assert!(
            int_param(&params, "info.base_clock_mhz") < spec.clock_mhz,
            "{}",
            p.name
        );
        let l = &spec.latency;
        let ghz = spec.clock_mhz as f64 / 1000.0;
        // Local DRAM: measured or the model's, the model within 1 %.
        let local = (2 * l.hop_in_node_cycles + l.dram_cycles) as f64 / ghz;
        let measured = num_param(&params, "info.dram_local_ns");
        assert!(
            (local - measured).abs() / measured < 0.01,
            "{}: the model's local DRAM {local:.1} ns vs {measured} ns",
            p.name
        );
        // Figures the model derives (n/r measured) are exactly the model's.
        let remote_cycles = 2 * l.hop_between_sockets_cycles + l.dram_cycles;
        let local_cycles = 2 * l.hop_in_node_cycles + l.dram_cycles;
        for q in params.iter().filter(|q| q.source.contains("bounce model")) {
            let (model, tolerance) = match q.key {
                "info.dram_remote_ns" => (remote_cycles as f64 / ghz, 0.06),
                "info.dram_local_ns" => (local_cycles as f64 / ghz, 0.06),
                "info.dram_remote_cycles" => (remote_cycles as f64, 0.0),
                "info.dram_local_cycles" => (local_cycles as f64, 0.0),
                _ => continue,
            };
            let given = num_param(&params, q.key);
            assert!(
                (model - given).abs() <= tolerance,
                "{}: {} = {given}, the model gives {model:.2}",
                p.name,
                q.key
            );
        }
        if spec.sockets > 1 {
            for key in ["info.dram_remote_ns", "info.dram_remote_cycles"] {
                assert!(
                    params.iter().any(|q| q.key == key),
                    "{}: no `{key}`",
                    p.name
                );
            }
        }
    }
}

/// The model's one-way latency per class, from the formulas, against the
/// measured class medians each preset is calibrated against.
#[test]
fn each_class_is_within_10_percent_of_its_measured_median() {
    let mut report = String::new();
    let mut failures = 0;
    for p in PRESETS {
        let t = topology(p.name);
        assert!(
            !p.targets.is_empty(),
            "{} has no calibration target",
            p.name
        );
        for target in p.targets {
            let (a, b) = target.cpus;
            let model = one_way_ns(&t, LinuxCpu::new(a), LinuxCpu::new(b), target.home_node);
            let error = (model - target.measured_ns) / target.measured_ns;
            report.push_str(&format!(
                "{:<18} {:<32} {:>7.1} ns measured {:>7.1} ns model {:+6.1} %\n",
                p.name,
                target.class,
                target.measured_ns,
                model,
                error * 100.0
            ));
            if error.abs() > 0.10 {
                failures += 1;
            }
            assert!(!target.source.is_empty());
        }
    }
    println!("{report}");
    assert_eq!(failures, 0, "classes off by more than 10 %:\n{report}");
}

/// The expected figures, with their sources, written out: a change of a
/// target is a change of this table too.
#[test]
fn the_targets_are_the_sourced_figures() {
    let target = |preset: &str, class: &str| {
        presets::find(preset)
            .unwrap()
            .target(class)
            .unwrap_or_else(|| panic!("{preset} has no target `{class}`"))
            .measured_ns
    };
    // c2c_summary_table.md / calibration.md, [S1] and [S2].
    assert_eq!(target("icelake-sp-2s", "smt"), 8.0); // [S1] 8375C
    assert_eq!(target("icelake-sp-2s", "same-socket"), 51.3); // [S1] 8375C
    assert_eq!(target("icelake-sp-2s", "cross-socket"), 107.8); // [S1] 8375C
    assert_eq!(target("cascadelake-sp-2s", "smt"), 7.6); // [S1] 8275CL
    assert_eq!(target("cascadelake-sp-2s", "same-socket"), 46.6); // [S1] 8275CL
    assert_eq!(target("cascadelake-sp-2s", "cross-socket"), 134.0); // [S1] 8275CL
    assert_eq!(target("epyc-naples-2s", "smt"), 12.0); // [S2] 7601
    assert_eq!(target("epyc-naples-2s", "same-ccx"), 37.8); // [S2] 7601
    assert_eq!(target("epyc-naples-2s", "cross-ccx-home-die"), 130.6); // [S2] 7601, "131"
    assert_eq!(target("epyc-naples-2s", "home-die-to-other-die"), 210.6); // "210-212"
    assert_eq!(
        target("epyc-naples-2s", "cross-ccx-other-die-home-socket"),
        216.5
    ); // "215-219"
    assert_eq!(
        target("epyc-naples-2s", "two-non-home-dies-home-socket"),
        255.7
    ); // "255-256"
    assert_eq!(target("epyc-milan-2s", "smt"), 10.2); // [S2] 7763
    assert_eq!(target("epyc-milan-2s", "same-ccx"), 25.5); // [S2] 7763
    assert_eq!(target("epyc-milan-2s", "cross-ccd-home-socket"), 112.7); // [S2] 7763
    assert_eq!(target("epyc-milan-2s", "cross-ccd-non-home-socket"), 200.4); // [S1] 7R13
    assert_eq!(target("epyc-milan-2s", "cross-socket"), 197.1); // [S1] 7R13
    assert_eq!(target("epyc-genoa-2s", "same-ccx"), 27.1); // [S2] 9654
    assert_eq!(target("epyc-genoa-2s", "cross-ccd-home-socket"), 99.3); // [S2] 9654
    assert_eq!(target("epyc-genoa-2s", "cross-ccd-non-home-socket"), 200.1); // [S2] 9454
    assert_eq!(target("epyc-genoa-2s", "cross-socket"), 191.6); // [S2] 9654
    assert_eq!(target("bergamo-1s", "same-ccx"), 33.0); // [S2] 1 x 9754
    assert_eq!(target("bergamo-1s", "cross-ccx-same-ccd"), 106.1); // [S2] 1 x 9754
    assert_eq!(target("bergamo-2s", "cross-ccd-home-socket"), 109.8); // [S2] 2 x 9754
    assert_eq!(target("bergamo-2s", "cross-ccd-non-home-socket"), 205.6); // [S2] 2 x 9754
    assert_eq!(target("bergamo-2s", "cross-socket"), 203.6); // [S2] 2 x 9754
}

#[test]
fn the_home_node_effect_comes_from_the_topology() {
    // AMD: the socket that is not the home pays about 2x; Intel: nothing.
    for (preset, home_pair, other_pair) in [
        ("epyc-milan-2s", (0, 8), (64, 72)),
        ("epyc-genoa-2s", (0, 8), (96, 104)),
        ("bergamo-2s", (0, 16), (128, 144)),
        ("icelake-sp-2s", (0, 1), (40, 41)),
        ("cascadelake-sp-2s", (0, 1), (28, 29)),
    ] {
        let t = topology(preset);
        let home = one_way_cycles(
            &t,
            LinuxCpu::new(home_pair.0),
            LinuxCpu::new(home_pair.1),
            0,
        );
        let other = one_way_cycles(
            &t,
            LinuxCpu::new(other_pair.0),
            LinuxCpu::new(other_pair.1),
            0,
        );
        let ratio = other / home;
        if t.spec.lookup == Lookup::Home {
            assert!(
                (1.6..2.2).contains(&ratio),
                "{preset}: non-home / home = {ratio:.2}"
            );
        } else {
            assert_eq!(ratio, 1.0, "{preset}");
        }
    }
    // Moving the home moves the fast pairs: on Naples, homed on node 0
    // instead of 7, die 0's cross-CCX pairs become the 131 ns ones.
    let t = topology("epyc-naples-2s");
    assert_eq!(
        one_way_cycles(&t, LinuxCpu::new(0), LinuxCpu::new(4), 0),
        one_way_cycles(&t, LinuxCpu::new(56), LinuxCpu::new(60), 7)
    );
}

#[test]
fn modes_without_measurements_keep_the_calibrated_paths() {
    // snc2: a transfer between the two clusters of a socket costs the
    // measured SNC-off mesh transfer (within 1 %), and cross-socket is as before.
    let off = topology("icelake-sp-2s");
    let snc = topology("icelake-sp-2s:snc2");
    let same_socket = one_way_cycles(&off, LinuxCpu::new(0), LinuxCpu::new(1), 0);
    let cross_cluster = one_way_cycles(&snc, LinuxCpu::new(0), LinuxCpu::new(20), 0);
    assert!((cross_cluster - same_socket).abs() / same_socket < 0.01);
    assert_eq!(
        one_way_cycles(&snc, LinuxCpu::new(0), LinuxCpu::new(40), 0),
        one_way_cycles(&off, LinuxCpu::new(0), LinuxCpu::new(40), 0)
    );
    // nps2 / nps4: the same IOD legs as nps1, for any home on socket 0.
    let nps1 = topology("epyc-milan-2s");
    for mode in ["nps2", "nps4"] {
        let t = topology(&format!("epyc-milan-2s:{mode}"));
        for (a, b) in [(0, 8), (0, 56), (8, 56), (0, 64), (64, 72)] {
            assert_eq!(
                one_way_cycles(&t, LinuxCpu::new(a), LinuxCpu::new(b), 0),
                one_way_cycles(&nps1, LinuxCpu::new(a), LinuxCpu::new(b), 0),
                "{mode} {a}-{b}"
            );
        }
    }
}

/// The ping-pong of `scenarios/shipped/ping-pong.toml`, simulated: mean cycles of
/// CPU `a`'s iterations (a round trip) after a warm-up, halved.
fn simulated_one_way_cycles(reference: &str, a: u32, b: u32, home_node: u32) -> f64 {
    let setup = Setup::new(resolve(reference).unwrap())
        .structs(vec![strukt("flag", vec![field("turn", "unsigned long")])])
        .instances(vec![global("flag", "flag", home_node)])
        .script(
            "bounce",
            "let me = tid()\nwhile cmpxchg(flag.turn, me, 1 - me) != me {\n}",
        )
        .thread(a, "bounce")
        .thread(b, "bounce")
        .stop(StopRule::Iterations(60));
    let (_, recorder) = setup.run();
    let durations: Vec<u64> = recorder
        .log
        .iter()
        .filter_map(|s| match s {
            Seen::Iteration(cpu, index, start, end) if *cpu == a && *index >= 10 => {
                Some(end - start)
            }
            _ => None,
        })
        .collect();
    assert!(durations.len() >= 40, "{reference} {a}-{b}: {durations:?}");
    durations.iter().sum::<u64>() as f64 / durations.len() as f64 / 2.0
}

#[test]
fn the_simulated_ping_pong_is_the_formula() {
    for p in PRESETS {
        let t = topology(p.name);
        for target in p.targets {
            let (a, b) = target.cpus;
            let formula = one_way_cycles(&t, LinuxCpu::new(a), LinuxCpu::new(b), target.home_node);
            let simulated = simulated_one_way_cycles(p.name, a, b, target.home_node);
            assert!(
                (simulated - formula).abs() / formula < 0.02,
                "{} {}: simulated {simulated:.1} cycles, formula {formula:.1}",
                p.name,
                target.class
            );
        }
    }
}

#[test]
fn unknown_presets_and_modes_are_errors() {
    assert!(resolve("epyc-milan-2s:nps3")
        .unwrap_err()
        .contains("nps1, nps2, nps4, smt-off"));
    assert!(resolve("bergamo-2s:snc2")
        .unwrap_err()
        .contains("its modes: smt-off"));
    assert!(resolve("milan")
        .unwrap_err()
        .starts_with("unknown machine preset `milan`"));
    let p: &Preset = presets::find("icelake-sp-2s").unwrap();
    assert_eq!(p.target("smt").unwrap().cpus, (0, 80));
}
