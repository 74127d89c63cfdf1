//! `bounce presets`: the list, `show` with every parameter's source, the
//! `--toml` machine that loads back as the same machine, preset references
//! with modes in scenarios, and unknown names (exit 2, with a suggestion).

use models::presets::{self, resolve, PRESETS};
use scenarios::load_str;
use scenarios::machine::build_machine;

mod common;
use common::{assert_exit, bounce, stderr, stdout, TempScenario};

/// A small scenario; `machine_key` is a top-level `machine = ...` line (or
/// empty) and `machine_table` a `[machine]` table appended at the end.
fn scenario(machine_key: &str, machine_table: &str) -> String {
    format!(
        r#"schema = 1
{machine_key}
seed = 1

[run]
iterations = 20

[structs.counter]
fields = [{{ name = "value", type = "atomic_long_t" }}]

[instances.shared]
struct = "counter"
kind = "global"

[scripts]
inc = "fetch_add(shared.value, 1)"

[[threads]]
name = "t"
cpus = "0,1"
script = "inc"

{machine_table}"#
    )
}

/// Every preset alone and with each of its modes.
fn references() -> Vec<String> {
    let mut refs = Vec::new();
    for p in PRESETS {
        refs.push(p.name.to_string());
        for m in p.modes {
            refs.push(format!("{}:{}", p.name, m.name));
        }
    }
    refs.push("epyc-milan-2s:nps4,smt-off".into());
    refs.push("icelake-sp-2s:snc2,smt-off".into());
    refs
}

#[test]
fn presets_lists_every_preset() {
    let o = bounce(&["presets"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for p in PRESETS {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{} ", p.name)))
            .unwrap_or_else(|| panic!("no line for {}:\n{out}", p.name));
        assert!(line.contains(p.summary), "{line}");
        assert!(line.contains("smt-off"), "{line}");
    }
    assert!(out.contains("nps1 (default), nps2, nps4, smt-off"), "{out}");
}

#[test]
fn show_prints_each_parameter_with_its_source() {
    let o = bounce(&["presets", "show", "icelake-sp-2s"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("latency.hop_between_sockets_cycles")
        })
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(" 148 cycles"), "{line}");
    assert!(line.contains("derived"), "{line}");
    assert!(
        line.contains("[S1] nviennot/core-to-core-latency"),
        "{line}"
    );
    assert!(out.contains("(346.5 - 51) / 2 = 147.8 -> 148"), "{out}");
    assert!(out.contains("  socket 1: CPUs 40-79,120-159\n"), "{out}");
    // Every machine field, and the informational ones.
    for key in presets::SPEC_KEYS
        .iter()
        .chain(&["info.dram_local_ns", "info.l3_kib"])
    {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{key} "))),
            "no `{key}` in:\n{out}"
        );
    }

    // Modes in the name, and the topology they make.
    let o = bounce(&["presets", "show", "epyc-milan-2s:nps4"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("epyc-milan-2s:nps4: "), "{out}");
    assert!(out.contains("    node 3: CPUs 48-63,176-191\n"), "{out}");
    assert!(out.contains("      L3 7: CPUs 56-63,184-191\n"), "{out}");
}

#[test]
fn the_toml_machine_loads_back_as_the_same_machine() {
    for r in references() {
        let printed =
            scenarios::tools::presets_view::show(&r, true).unwrap_or_else(|e| panic!("{e}"));
        assert!(printed.contains("[machine]\n") && printed.contains("[machine.latency]\n"));
        let text = scenario("", &printed);
        let loaded = load_str("presets.toml", &text).unwrap_or_else(|e| panic!("{r}: {e}"));
        let built =
            build_machine(&loaded.source, &loaded.base.doc).unwrap_or_else(|e| panic!("{r}: {e}"));
        let mut expected = resolve(&r).unwrap();
        let mut got = built.spec.clone();
        // The same machine, except (were it different) the name.
        expected.name.clear();
        got.name.clear();
        assert_eq!(got, expected, "{r}");
        assert_eq!(built.spec.name, resolve(&r).unwrap().name);
    }
}

#[test]
fn the_toml_from_the_cli_checks_and_runs() {
    let o = bounce(&["presets", "show", "bergamo-1s:smt-off", "--toml"]);
    assert_exit(&o, 0);
    let file = TempScenario::new("presets-toml", &scenario("", &stdout(&o)));
    assert_exit(&bounce(&["check", file.path()]), 0);
    let run = bounce(&["run", file.path()]);
    assert_exit(&run, 0);
    assert!(
        stdout(&run).contains("on bergamo-1s:smt-off (3100 MHz)"),
        "{}",
        stdout(&run)
    );
}

#[test]
fn scenarios_name_presets_with_modes() {
    for machine in [
        "machine = \"epyc-milan-2s:nps4,smt-off\"".to_string(),
        String::new(),
    ] {
        let table = if machine.is_empty() {
            "[machine]\npreset = \"epyc-milan-2s:nps4,smt-off\"\n"
        } else {
            ""
        };
        let text = scenario(&machine, table);
        let loaded = load_str("modes.toml", &text).unwrap_or_else(|e| panic!("{e}"));
        let t = build_machine(&loaded.source, &loaded.base.doc).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.spec.nodes_per_socket, 4);
        assert_eq!(t.spec.threads_per_core, 1);
        assert_eq!(t.cpu_count(), 128);
    }
    // A table starting from a preset with modes keeps its overrides.
    let text = scenario(
        "",
        "[machine]\npreset = \"icelake-sp-2s:snc2\"\nsockets = 1\n",
    );
    let loaded = load_str("modes.toml", &text).unwrap();
    let t = build_machine(&loaded.source, &loaded.base.doc).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (t.spec.sockets, t.spec.nodes_per_socket, t.spec.cores_per_l3),
        (1, 2, 20)
    );
    assert_eq!(t.spec.name, "icelake-sp-2s:snc2 (modified)");
}

#[test]
fn unknown_modes_in_scenarios_say_what_is_valid() {
    let text = scenario("machine = \"epyc-milan-2s:nps3\"", "");
    let loaded = load_str("scenarios/test.toml", &text).unwrap();
    let e = build_machine(&loaded.source, &loaded.base.doc).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"error: preset `epyc-milan-2s` has no mode `nps3` (in `machine`)
 --> scenarios/test.toml:2:11
  |
2 | machine = "epyc-milan-2s:nps3"
  |           ^^^^^^^^^^^^^^^^^^^^
  |
  = valid: nps1, nps2, nps4, smt-off
  = help: did you mean `nps1`?"#
    );
    let text = scenario("", "[machine]\npreset = \"epyc-milan-2s:nps2,nps4\"\n");
    let loaded = load_str("scenarios/test.toml", &text).unwrap();
    let e = build_machine(&loaded.source, &loaded.base.doc).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "error: modes `nps2` and `nps4` of preset `epyc-milan-2s` exclude each other; give one (in `machine.preset`)"
        ),
        "{e}"
    );
    let text = scenario("machine = \"epyc-milan\"", "");
    let loaded = load_str("scenarios/test.toml", &text).unwrap();
    let e = build_machine(&loaded.source, &loaded.base.doc).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("= help: did you mean `epyc-milan-2s`?"),
        "{e}"
    );
}

#[test]
fn an_unknown_preset_exits_2_with_a_suggestion() {
    let o = bounce(&["presets", "show", "epyc-genoa2s"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: unknown preset `epyc-genoa2s`; presets: icelake-sp-2s, "),
        "{err}"
    );
    assert!(err.contains("did you mean `epyc-genoa-2s`?"), "{err}");
    assert!(stdout(&o).is_empty());

    let o = bounce(&["presets", "show", "epyc-milan-2s:smtoff"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with(
            "error: preset `epyc-milan-2s` has no mode `smtoff`; its modes: nps1, nps2, nps4, smt-off"
        ),
        "{err}"
    );
    assert!(err.contains("did you mean `smt-off`?"), "{err}");
}

#[test]
fn a_shortened_preset_name_gets_the_one_preset_it_names() {
    // On the command line: the family alone, the list kept.
    let o = bounce(&["presets", "show", "icelake"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: unknown preset `icelake`; presets: icelake-sp-2s, "),
        "{err}"
    );
    assert!(
        err.trim_end()
            .ends_with("= help: did you mean `icelake-sp-2s`?"),
        "{err}"
    );
    // In a scenario: the part between the dashes.
    let file = TempScenario::new("naples", &scenario("machine = \"naples\"", ""));
    let o = bounce(&["check", file.path()]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("= valid: icelake-sp-2s, "), "{err}");
    assert!(
        err.trim_end()
            .ends_with("= help: did you mean `epyc-naples-2s`?"),
        "{err}"
    );
    // Two presets hold `genoa`: no guess between them.
    let o = bounce(&["presets", "show", "genoa"]);
    assert_exit(&o, 2);
    assert!(!stderr(&o).contains("did you mean"), "{}", stderr(&o));
}

/// `presets show FILE.toml`: a machine file's topology (which CPUs share a
/// core, an L3, a node), its legs in cycles and in nanoseconds at its
/// clock, and the model's one-way ping-pong latency per pair relation, to
/// set against a measured matrix; an error in the file names its line and
/// key; a machine file has no `--toml` or `--format` view.
#[test]
fn show_describes_a_machine_file() {
    let o = bounce(&[
        "presets",
        "show",
        "scenarios/shipped/machines/ryzen9-7900x.toml",
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for needle in [
        "ryzen9-7900x: the machine file `scenarios/shipped/machines/ryzen9-7900x.toml` (5600 MHz; its sources are the file's comments)\n",
        "topology: 1 socket, 1 node, 2 L3 domains, 12 cores, 24 CPUs (2 threads per core), 64-byte lines, MOESI, lookup home\n",
        "      L3 0: CPUs 0-5,12-17\n      L3 1: CPUs 6-11,18-23\n",
        "  hop_in_node_cycles             141     25.2 ns  given: hop_in_node_ns = 25.12\n",
        "  l1_hit_cycles                    4      0.7 ns  given: l1_hit_cycles\n",
        "  SMT siblings                   CPUs    0 and 12        7.5 ns\n",
        "  two cores of one L3            CPUs    0 and 1        17.1 ns\n",
        "  two L3 domains of one node     CPUs    0 and 6        79.1 ns\n",
    ] {
        assert!(out.contains(needle), "missing `{needle}` in:\n{out}");
    }
    assert!(!out.contains("two sockets"), "{out}");
    assert_eq!(stderr(&o), "");

    let bad = TempScenario::new(
        "genoa-ccd",
        "[machine]\npreset = \"epyc-genoa-1s\"\ncores_per_ccd = 6\n",
    );
    let o = bounce(&["presets", "show", bad.path()]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: unknown key `cores_per_ccd` in `machine`\n"),
        "{err}"
    );
    assert!(err.contains(&format!("{}:3:1", bad.path())), "{err}");
    assert!(err.contains("did you mean `cores_per_l3`?"), "{err}");

    let o = bounce(&[
        "presets",
        "show",
        "scenarios/shipped/machines/ryzen9-7900x.toml",
        "--toml",
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("is a machine file: it is shown as text"),
        "{}",
        stderr(&o)
    );
}
