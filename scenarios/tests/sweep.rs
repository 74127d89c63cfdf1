//! `[sweep]`: cases as the cross product of the axes, in a fixed order with
//! stable ids; CPU placement; seeds from the case id; results files that do
//! not depend on the host threads; errors that point at the sweep's line.

use scenarios::build::BuildOptions;
use scenarios::report::output::{
    fields_csv, header, records, results_csv, results_json, ResultsFile,
};
use scenarios::run::cases::{build_cases, run_cases, BuiltCase};
use scenarios::{load_str, LoadedScenario};
use sim_core::cpu::LinuxCpu;

const SWEEP: &str = r#"schema = 1
name = "sweep-test"
machine = "icelake-sp-2s"
seed = 7

[run]
iterations = 20
warmup_iterations = 2

[params]
batch = 1

[structs.counter]
fields = [
  { name = "value", type = "unsigned long" },
  { name = "other", type = "unsigned long" },
]

[instances.ctr]
struct = "counter"
kind = "global"

[scripts]
inc = """
fetch_add(ctr.value, batch)
ctr.other = ctr.other + 1
"""

[[threads]]
name = "workers"
cpus = "0"
script = "inc"

[[variants]]
name = "padded"
set = { "structs.counter.fields.other.align" = 64 }

[sweep]
cpus = [1, 2, 41]
params.batch = [1, 3]
"#;

fn load(text: &str) -> LoadedScenario {
    load_str("scenarios/sweep-test.toml", text).unwrap_or_else(|e| panic!("{e}"))
}

/// `SWEEP` with its `[sweep]` table replaced by `sweep`.
fn with_sweep(sweep: &str) -> String {
    let at = SWEEP.find("[sweep]").unwrap();
    format!("{}{sweep}", &SWEEP[..at])
}

fn cpus_of(loaded: &LoadedScenario, case: usize, variant: usize) -> String {
    loaded.cases[case].variants[variant].doc.threads[0]
        .cpus
        .get_ref()
        .to_string()
}

#[test]
fn cases_are_the_cross_product_first_axis_slowest() {
    let loaded = load(SWEEP);
    let ids: Vec<&str> = loaded.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "cpus=1,params.batch=1",
            "cpus=1,params.batch=3",
            "cpus=2,params.batch=1",
            "cpus=2,params.batch=3",
            "cpus=41,params.batch=1",
            "cpus=41,params.batch=3",
        ]
    );
    for (i, case) in loaded.cases.iter().enumerate() {
        assert_eq!(case.index, i);
        let names: Vec<&str> = case.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["base", "padded"]);
    }
    // Compact: the lowest CPU numbers, so 41 CPUs are socket 0 and CPU 40.
    assert_eq!(cpus_of(&loaded, 0, 0), "0");
    assert_eq!(cpus_of(&loaded, 2, 1), "0-1");
    assert_eq!(cpus_of(&loaded, 5, 0), "0-40");
    let batch = |case: usize| *loaded.cases[case].variants[1].doc.params["batch"].get_ref();
    assert_eq!((batch(0), batch(1)), (1, 3));
    // The variant's own patch is still applied under the case's.
    let padded = &loaded.cases[3].variants[1].doc.structs["counter"].fields[1];
    assert_eq!(padded.align.as_ref().map(|a| *a.get_ref()), Some(64));
    let sweep = loaded.sweep.as_ref().unwrap();
    assert_eq!(sweep.variants, ["base", "padded"]);
    assert_eq!(sweep.placement.as_deref(), Some("compact"));
    let axes: Vec<&str> = sweep.axes.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(axes, ["cpus", "params.batch"]);
    assert_eq!(sweep.axes[0].thread_group.as_deref(), Some("workers"));
}

#[test]
fn placements_ranges_lists_and_variant_selection() {
    let loaded = load(&with_sweep(
        "[sweep]\nvariants = [\"padded\"]\nplacement = [\"compact\", \"spread\", \"0,80,1,81,2,82\"]\ncpus = { from = 1, to = 6, step = \"double\" }\n",
    ));
    let ids: Vec<&str> = loaded.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 12);
    assert_eq!(ids[0], "placement=compact,cpus=1");
    assert_eq!(ids[3], "placement=compact,cpus=6");
    assert_eq!(ids[8], "placement=\"0,80,1,81,2,82\",cpus=1");
    // One variant, the one named.
    assert!(loaded.cases.iter().all(|c| c.variants.len() == 1));
    assert_eq!(loaded.cases[0].variants[0].name, "padded");
    // Doubling from 1 to 6 ends at 6.
    let counts: Vec<String> = loaded.cases[..4]
        .iter()
        .map(|c| c.values[1].to_string())
        .collect();
    assert_eq!(counts, ["1", "2", "4", "6"]);
    // Spread alternates sockets (40 cores each): 0, 40, 1, 41, 2, 42.
    assert_eq!(cpus_of(&loaded, 6, 0), "0-1,40-41");
    assert_eq!(cpus_of(&loaded, 7, 0), "0-2,40-42");
    // An explicit order: SMT siblings first.
    assert_eq!(cpus_of(&loaded, 9, 0), "0,80");
    assert_eq!(cpus_of(&loaded, 10, 0), "0-1,80-81");

    // Cpulists are used as written; placement changes nothing for them.
    let loaded = load(&with_sweep("[sweep]\ncpus = [\"0,40\", \"all\"]\n"));
    assert_eq!(cpus_of(&loaded, 0, 0), "0,40");
    assert_eq!(cpus_of(&loaded, 1, 0), "all");
    assert_eq!(loaded.cases[0].id, "cpus=\"0,40\"");
}

#[test]
fn other_thread_groups_keep_their_cpus() {
    let text = SWEEP.replace(
        "[[variants]]",
        "[[threads]]\nname = \"reader\"\ncpus = \"0\"\nscript = \"inc\"\n\n[[variants]]",
    );
    let text = text.replace(
        "cpus = \"0\"\nscript = \"inc\"\n\n[[threads]]",
        "cpus = \"1\"\nscript = \"inc\"\n\n[[threads]]",
    );
    let at = text.find("[sweep]").unwrap();
    let text = format!("{}[sweep]\ngroup = \"workers\"\ncpus = [3]\n", &text[..at]);
    let loaded = load(&text);
    // CPU 0 is the reader's, so compact takes 1-3.
    assert_eq!(cpus_of(&loaded, 0, 0), "1-3");
}

#[test]
fn any_patch_path_is_an_axis_including_the_machine() {
    let loaded = load(&with_sweep(
        "[sweep]\nmachine = [\"icelake-sp-2s\", { preset = \"icelake-sp-2s\", sockets = 1 }]\n\"structs.counter.fields.value.align\" = [8, 64]\ncpus = [60]\n",
    ));
    let ids: Vec<&str> = loaded.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "machine=icelake-sp-2s,structs.counter.fields.value.align=8,cpus=60",
            "machine=icelake-sp-2s,structs.counter.fields.value.align=64,cpus=60",
            "machine=icelake-sp-2s+sockets:1,structs.counter.fields.value.align=8,cpus=60",
            "machine=icelake-sp-2s+sockets:1,structs.counter.fields.value.align=64,cpus=60",
        ]
    );
    // Two sockets of 40 cores: 60 compact CPUs are cores; one socket: SMT
    // siblings (CPU 40 onwards is the second thread of core 0).
    assert_eq!(cpus_of(&loaded, 0, 0), "0-59");
    assert_eq!(cpus_of(&loaded, 2, 0), "0-59");
    let built = build_cases(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built[2].variants[0].config.topology.cpu_count(), 80);
    assert_eq!(
        built[2].variants[0]
            .config
            .topology
            .thread_of(LinuxCpu::new(59)),
        1
    );
}

#[test]
fn without_a_sweep_there_is_one_case_with_the_file_seed() {
    let text = with_sweep("");
    let loaded = load(&text);
    assert!(loaded.sweep.is_none());
    assert_eq!(loaded.cases.len(), 1);
    let case = &loaded.cases[0];
    assert_eq!((case.index, case.id.as_str(), case.seed), (0, "", 7));
    let all: Vec<_> = loaded.all().cloned().collect();
    assert_eq!(case.variants, all);
}

fn run(loaded: &LoadedScenario, cases: &[BuiltCase]) -> ResultsFile {
    let results = run_cases(cases, u64::MAX, &|| {});
    let mut file = header(loaded, "test");
    file.records = records(&file, cases, &results);
    file
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn files(file: &ResultsFile) -> [String; 3] {
    [results_csv(file), results_json(file), fields_csv(file)]
}

#[test]
fn results_files_do_not_depend_on_the_host_threads() {
    let loaded = load(SWEEP);
    let cases = build_cases(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let one = in_pool(1, || files(&run(&loaded, &cases)));
    let two = in_pool(2, || files(&run(&loaded, &cases)));
    for (a, b) in one.iter().zip(&two) {
        assert!(
            a == b,
            "files differ with 1 and 2 host threads:\n{a}\n---\n{b}"
        );
    }
    let file = run(&loaded, &cases);
    assert_eq!(file.records.len(), 12);
    // Records in case order, then variant order.
    let order: Vec<(usize, &str)> = file
        .records
        .iter()
        .map(|r| (r.case_index, r.variant.as_str()))
        .collect();
    assert_eq!(order[..3], [(0, "base"), (0, "padded"), (1, "base")]);
    // The CSV has one line per record and the axis columns after the variant.
    let csv = results_csv(&file);
    assert_eq!(csv.lines().count(), 13);
    assert!(csv
        .starts_with("case_index,case_id,variant,axis.cpus,axis.params.batch,machine,clock_mhz,"));
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("0,\"cpus=1,params.batch=1\",base,1,1,icelake-sp-2s,3400,"));
    // Read back, the JSON is the same file.
    let json = results_json(&file);
    let back: ResultsFile = serde_json::from_str(&json).unwrap();
    assert_eq!(results_json(&back), json);
    assert_eq!(fields_csv(&back), fields_csv(&file));
    // 41 compact CPUs span both sockets.
    let wide = file
        .records
        .iter()
        .find(|r| r.case_id.starts_with("cpus=41"))
        .unwrap();
    assert_eq!(
        (wide.cpus, wide.sockets_used, wide.cpu_list.as_str()),
        (41, 2, "0-40")
    );
}

#[test]
fn a_case_keeps_its_seed_and_result_in_a_smaller_sweep() {
    let big = load(SWEEP);
    let small = load(&with_sweep("[sweep]\nparams.batch = [3]\ncpus = [2]\n"));
    // The id names the axes in the order written, so write them in the same order.
    let small2 = load(&with_sweep("[sweep]\ncpus = [2]\nparams.batch = [3]\n"));
    assert_eq!(small.cases[0].id, "params.batch=3,cpus=2");
    let small = small2;
    let id = "cpus=2,params.batch=3";
    let in_big = big.cases.iter().find(|c| c.id == id).unwrap();
    assert_eq!(small.cases.len(), 1);
    assert_eq!(small.cases[0].id, id);
    assert_eq!(small.cases[0].seed, in_big.seed);
    assert_eq!(in_big.seed, scenarios::format::sweep::case_seed(7, id));
    assert_ne!(in_big.seed, 7);
    // Every case has its own seed.
    let mut seeds: Vec<u64> = big.cases.iter().map(|c| c.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), big.cases.len());

    let big_cases = build_cases(&big, BuildOptions::default()).unwrap();
    let small_cases = build_cases(&small, BuildOptions::default()).unwrap();
    let big_file = run(&big, &big_cases);
    let small_file = run(&small, &small_cases);
    let mut from_big: Vec<_> = big_file
        .records
        .iter()
        .filter(|r| r.case_id == id)
        .cloned()
        .collect();
    // The content hash covers the case's place and the scenario's hash,
    // which differ by design; everything it hashes besides is compared.
    let mut small_records = small_file.records.clone();
    for r in from_big.iter_mut().chain(&mut small_records) {
        r.content_sha256.clear();
    }
    for r in &mut from_big {
        r.case_index = 0;
        r.scenario_sha256 = small_file.scenario.sha256.clone();
    }
    assert_eq!(from_big, small_records);
}

/// Loads `input` and compares the rendered error with `expected`.
#[track_caller]
fn check_error(input: &str, expected: &str) {
    let actual = match load_str("scenarios/sweep-test.toml", input) {
        Ok(loaded) => match build_cases(&loaded, BuildOptions::default()) {
            Ok(_) => "(no error)".to_string(),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    };
    let expected = expected.trim_start_matches('\n').trim_end_matches('\n');
    if actual != expected {
        panic!("\n--- expected:\n{expected}\n--- actual:\n{actual}\n---\n");
    }
}

/// With no parameter at all there is no name to suggest: the error says
/// how to make the axis valid instead.
#[test]
fn an_axis_over_parameters_of_a_file_without_any_says_to_declare_one() {
    let input = with_sweep("[sweep]\nparams.batch = [1, 2]\n")
        .replace("[params]\nbatch = 1\n", "")
        .replace("fetch_add(ctr.value, batch)", "fetch_add(ctr.value, 1)");
    check_error(
        &input,
        r#"
error: the sweep sets `params.batch`, but the scenario has no parameter `batch` (an axis changes an existing parameter; it cannot add one) (in `sweep.params.batch`)
  --> scenarios/sweep-test.toml:37:8
   |
37 | params.batch = [1, 2]
   |        ^^^^^
   |
   = valid: none: the scenario declares no parameters; declare `batch` under `[params]` first, then the axis can vary it
"#,
    );
}

#[test]
fn an_unknown_parameter_is_an_error_at_its_line() {
    check_error(
        &with_sweep("[sweep]\ncpus = [1]\nparams.bacth = [1, 2]\n"),
        r#"
error: the sweep sets `params.bacth`, but the scenario has no parameter `bacth` (an axis changes an existing parameter; it cannot add one) (in `sweep.params.bacth`)
  --> scenarios/sweep-test.toml:40:8
   |
40 | params.bacth = [1, 2]
   |        ^^^^^
   |
   = valid: batch
   = help: did you mean `batch`?
"#,
    );
}

#[test]
fn an_unknown_path_is_an_error_at_its_line() {
    check_error(
        &with_sweep("[sweep]\n\"structs.countr.fields.value.align\" = [8, 64]\n"),
        r#"
error: in sweep case `structs.countr.fields.value.align=8`, variant `base`: cannot set `structs.countr.fields.value.align`: `structs` has no key `countr`
  --> scenarios/sweep-test.toml:39:10
   |
39 | "structs.countr.fields.value.align" = [8, 64]
   |          ^^^^^^
   |
   = valid: counter
   = help: did you mean `counter`?
"#,
    );
}

#[test]
fn an_empty_list_is_an_error_at_its_line() {
    check_error(
        &with_sweep("[sweep]\ncpus = []\n"),
        r#"
error: `sweep.cpus` is an empty list: a sweep axis needs at least one value
  --> scenarios/sweep-test.toml:39:8
   |
39 | cpus = []
   |        ^^
   |
   = valid: a list such as [1, 2, 4], or an integer range such as { from = 1, to = 160, step = "double" } (step: a positive integer, or "double")
"#,
    );
}

#[test]
fn more_cpus_than_the_machine_has_is_an_error_at_the_count() {
    check_error(
        &with_sweep("[sweep]\ncpus = [1, 2, 161]\n"),
        r#"
error: in sweep case `cpus=161`, variant `base`: 161 CPUs for thread group `workers` do not fit: icelake-sp-2s has only 160 CPUs (in `sweep.cpus`)
  --> scenarios/sweep-test.toml:39:15
   |
39 | cpus = [1, 2, 161]
   |               ^^^
   |
   = valid: a count from 1 to 160
"#,
    );
    check_error(
        &with_sweep("[sweep]\ncpus = { from = 100, to = 200, step = 50 }\n"),
        r#"
error: in sweep case `cpus=200`, variant `base`: 200 CPUs for thread group `workers` do not fit: icelake-sp-2s has only 160 CPUs (in `sweep.cpus`)
  --> scenarios/sweep-test.toml:39:8
   |
39 | cpus = { from = 100, to = 200, step = 50 }
   |        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
   |
   = valid: a count from 1 to 160
"#,
    );
}

#[test]
fn other_sweep_errors() {
    check_error(
        &with_sweep("[sweep]\nvariants = [\"padde\"]\n"),
        r#"
error: the scenario has no variant `padde` (in `sweep.variants`)
  --> scenarios/sweep-test.toml:39:13
   |
39 | variants = ["padde"]
   |             ^^^^^^^
   |
   = valid: base, padded
   = help: did you mean `padded`?
"#,
    );
    check_error(
        &with_sweep("[sweep]\ncpus = [1]\ngroup = \"writers\"\n"),
        r#"
error: the scenario has no thread group `writers` (in `sweep.group`)
  --> scenarios/sweep-test.toml:40:9
   |
40 | group = "writers"
   |         ^^^^^^^^^
   |
   = valid: workers
"#,
    );
    check_error(
        &with_sweep("[sweep]\nplacement = \"spread\"\n"),
        r#"
error: `sweep.placement` says how the `cpus` axis chooses CPUs, but the sweep has no `cpus` axis
  --> scenarios/sweep-test.toml:39:13
   |
39 | placement = "spread"
   |             ^^^^^^^^
   |
   = valid: add `cpus = [...]` to `[sweep]`, or remove this key
"#,
    );
    check_error(
        &with_sweep("[sweep]\ncpus = [1, 2, 1]\n"),
        r#"
error: `sweep.cpus` lists 1 more than once
  --> scenarios/sweep-test.toml:39:15
   |
39 | cpus = [1, 2, 1]
   |               ^
"#,
    );
    check_error(
        &with_sweep("[sweep]\nparams.batch = 4\n"),
        r#"
error: expected a list of values or a range for the sweep axis `sweep.params.batch`, found an integer
  --> scenarios/sweep-test.toml:39:16
   |
39 | params.batch = 4
   |                ^
   |
   = valid: a list such as [1, 2, 4], or an integer range such as { from = 1, to = 160, step = "double" } (step: a positive integer, or "double")
"#,
    );
    check_error(
        &with_sweep("[sweep]\ncpus = [1]\nplacement = \"sprad\"\n"),
        r#"
error: invalid placement "sprad": it is neither `compact` nor `spread`, nor a list of CPUs (in `sweep.placement`)
  --> scenarios/sweep-test.toml:40:13
   |
40 | placement = "sprad"
   |             ^^^^^^^
   |
   = valid: "compact" (lowest CPU numbers first: the cores of socket 0, then of socket 1, SMT siblings last), "spread" (alternate sockets), or the CPUs in the order to take them, such as "0,40,1,41"
   = help: did you mean `spread`?
"#,
    );
    // A value of the wrong type for the patched key: the document's own check,
    // at the sweep's value.
    check_error(
        &with_sweep("[sweep]\nparams.batch = [1, \"two\"]\n"),
        r#"
error: in sweep case `params.batch=two`, variant `base`: expected an integer for `params.batch`, found a string
  --> scenarios/sweep-test.toml:39:20
   |
39 | params.batch = [1, "two"]
   |                    ^^^^^
"#,
    );
}

#[test]
fn the_shipped_sweep_crosses_sockets_where_the_cpus_span_both() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/shipped/contended-counter-sweep.toml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("\niterations = 200\n"));
    // Fewer iterations keep the test quick.
    let text = text.replace("\niterations = 200\n", "\niterations = 20\n");
    let loaded = load_str("contended-counter-sweep.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.cases[0].id, "machine=icelake-sp-2s,cpus=1");
    let cases = build_cases(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let file = run(&loaded, &cases);
    let icelake: Vec<_> = file
        .records
        .iter()
        .filter(|r| r.machine == "icelake-sp-2s")
        .collect();
    assert_eq!(icelake.len(), 13);
    for r in &icelake {
        // Compact: one socket up to its 40 cores, both beyond.
        let spans_both = r.cpus > 40;
        assert_eq!(
            r.sockets_used,
            if spans_both { 2 } else { 1 },
            "{}",
            r.case_id
        );
        assert_eq!(
            r.cross_socket_misses_per_iteration > 0.0,
            spans_both,
            "{}",
            r.case_id
        );
    }
    let cost = |cpus: u32| {
        icelake
            .iter()
            .find(|r| r.cpus == cpus)
            .map(|r| r.cycles_per_iteration_mean)
            .unwrap()
    };
    // More waiters cost more per increment. Past one socket the cost per
    // waiter stays about level rather than jumping: each socket's caching
    // agent sends one request for the line at a time, so most handovers
    // stay on the owner's socket (book limits.md, the arbitration entry).
    assert!(cost(1) < cost(2) && cost(2) < cost(16) && cost(16) < cost(40));
    assert!(cost(40) < cost(64), "{} {}", cost(40), cost(64));
    assert!(
        cost(64) / 64.0 > cost(40) / 40.0 * 0.8,
        "{} {}",
        cost(40),
        cost(64)
    );
    // `all` is every CPU of each machine.
    for r in &file.records {
        if r.case_id.ends_with("cpus=all") {
            assert_eq!(r.cpus, r.machine_cpus, "{}", r.case_id);
        }
    }
}

#[test]
fn a_case_reruns_alone_from_its_values_and_seed() {
    let big = load(SWEEP);
    let cases = build_cases(&big, BuildOptions::default()).unwrap();
    let file = run(&big, &cases);
    let id = "cpus=2,params.batch=3";
    let seed = big.cases.iter().find(|c| c.id == id).unwrap().seed;
    let alone = with_sweep("")
        .replace("seed = 7", &format!("seed = {seed}"))
        .replace("batch = 1", "batch = 3")
        .replace("cpus = \"0\"", "cpus = \"0-1\"");
    let alone = load(&alone);
    let alone_cases = build_cases(&alone, BuildOptions::default()).unwrap();
    let alone_file = run(&alone, &alone_cases);
    let strip = |r: &scenarios::report::output::Record| {
        let mut r = r.clone();
        r.case_index = 0;
        r.case_id.clear();
        r.axes.clear();
        r.scenario_sha256.clear();
        r.content_sha256.clear();
        r
    };
    let from_sweep: Vec<_> = file
        .records
        .iter()
        .filter(|r| r.case_id == id)
        .map(strip)
        .collect();
    let from_alone: Vec<_> = alone_file.records.iter().map(strip).collect();
    assert_eq!(from_sweep, from_alone);
}

#[test]
fn cases_start_from_the_same_tree_as_the_base_library_modules_included() {
    let text = SWEEP.replace("seed = 7\n", "seed = 7\nuse = [\"locks/tas\"]\n");
    let loaded = load(&text);
    let base: Vec<&String> = loaded.base.doc.procedures.keys().collect();
    assert!(!base.is_empty());
    for case in &loaded.cases {
        for v in &case.variants {
            let procedures: Vec<&String> = v.doc.procedures.keys().collect();
            assert_eq!(procedures, base, "{} {}", case.id, v.name);
        }
    }
    build_cases(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
}
