//! `machine = { file = "NAME.toml" }`: a machine in a file of its own (as
//! `bounce presets show NAME --toml` prints it), shared by scenarios and
//! usable on a sweep's `machine` axis.

mod common;
use common::{assert_exit, bounce, stderr, stdout, TempDir};

const SCENARIO: &str = r#"schema = 1
name = "machine-file"
MACHINE
[run]
iterations = 50
[structs.c]
fields = [{ name = "v", type = "u64" }]
[instances.g]
struct = "c"
kind = "global"
[scripts]
s = "fetch_add(g.v, 1)"
[[threads]]
cpus = "0-3"
script = "s"
"#;

/// A directory with `NAME.toml` = `presets show PRESET --toml` for each pair.
fn with_machine_files(tag: &str, machines: &[(&str, &str)]) -> TempDir {
    let dir = TempDir::new(tag);
    for (file, preset) in machines {
        let o = bounce(&["presets", "show", preset, "--toml"]);
        assert_exit(&o, 0);
        std::fs::write(dir.0.join(file), stdout(&o)).unwrap();
    }
    dir
}

fn scenario(dir: &TempDir, name: &str, machine_line: &str) -> String {
    let path = dir.0.join(name);
    std::fs::write(&path, SCENARIO.replace("MACHINE", machine_line)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_machine_file_printed_by_presets_show_runs_as_the_preset_does() {
    let dir = with_machine_files("machine-file", &[("milan.toml", "epyc-milan-2s")]);
    let from_file = scenario(&dir, "file.toml", "machine = { file = \"milan.toml\" }");
    let from_preset = scenario(&dir, "preset.toml", "machine = \"epyc-milan-2s\"");
    let a = bounce(&["run", "--quiet", "--format", "csv", &from_file]);
    assert_exit(&a, 0);
    let b = bounce(&["run", "--quiet", "--format", "csv", &from_preset]);
    assert_exit(&b, 0);
    // Every number the same; only the scenario's hash differs (other text).
    let numbers = |csv: &str| -> Vec<String> {
        let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let skip = header.iter().position(|c| *c == "scenario_sha256").unwrap();
        csv.lines()
            .map(|l| {
                l.split(',')
                    .enumerate()
                    .filter(|(i, _)| *i != skip)
                    .map(|(_, c)| c.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    };
    assert_eq!(numbers(&stdout(&a)), numbers(&stdout(&b)));
    // An edit in the file is what the scenario runs.
    let milan = std::fs::read_to_string(dir.0.join("milan.toml")).unwrap();
    let edited = milan
        .lines()
        .map(|l| {
            if l.starts_with("clock_mhz = ") {
                "clock_mhz = 2450"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.0.join("milan.toml"), edited).unwrap();
    let o = bounce(&["run", "--quiet", &from_file]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("on epyc-milan-2s (2450 MHz)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn machine_files_on_a_sweep_axis() {
    let dir = with_machine_files(
        "machine-file-sweep",
        &[
            ("icelake.toml", "icelake-sp-2s"),
            ("genoa.toml", "epyc-genoa-1s"),
        ],
    );
    let file = scenario(
        &dir,
        "sweep.toml",
        "machine = \"icelake-sp-2s\"\n[sweep]\nmachine = [{ file = \"icelake.toml\" }, { file = \"genoa.toml\" }]",
    );
    let o = bounce(&["check", &file, "--format", "csv"]);
    assert_exit(&o, 0);
    let ids: Vec<String> = stdout(&o)
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(4).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        ids,
        [
            "0,machine=icelake-sp-2s,base,icelake-sp-2s",
            "1,machine=epyc-genoa-1s,base,epyc-genoa-1s"
        ]
    );
}

#[test]
fn an_error_in_a_machine_file_names_its_own_line_and_key() {
    let dir = with_machine_files("machine-file-error", &[("milan.toml", "epyc-milan-2s")]);
    let milan = std::fs::read_to_string(dir.0.join("milan.toml")).unwrap();
    let line = milan
        .lines()
        .position(|l| l.starts_with("clock_mhz = "))
        .unwrap()
        + 1;
    let broken = milan.replacen("\nclock_mhz = 3500\n", "\nclock_mhz = \"fast\"\n", 1);
    assert_ne!(broken, milan, "the preset's clock is 3500 MHz");
    std::fs::write(dir.0.join("milan.toml"), broken).unwrap();
    let file = scenario(&dir, "s.toml", "machine = { file = \"milan.toml\" }");
    let o = bounce(&["check", &file]);
    assert_exit(&o, 2);
    let shown = dir.0.join("milan.toml").display().to_string();
    let pad = " ".repeat(line.to_string().len());
    assert_eq!(
        stderr(&o),
        format!(
            "error: expected an integer for `machine.clock_mhz`, found a string\n\
             {pad}--> {shown}:{line}:13\n\
             {pad} |\n\
             {line} | clock_mhz = \"fast\"\n\
             {pad} |             ^^^^^^\n"
        )
    );
    assert_eq!(stdout(&o), "");
}

#[test]
fn a_machine_file_reference_takes_only_the_file_and_stays_inside_the_directory() {
    let dir = with_machine_files("machine-file-keys", &[("milan.toml", "epyc-milan-2s")]);
    let file = scenario(
        &dir,
        "s.toml",
        "machine = { file = \"milan.toml\", clock_mhz = 2000 }",
    );
    let o = bounce(&["check", &file]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        format!(
            "error: `machine.clock_mhz` cannot stand beside `file`: `machine = {{ file }}` takes \
             the whole machine from the file, so `clock_mhz` belongs in it\n \
             --> {file}:3:34\n  |\n3 | machine = {{ file = \"milan.toml\", clock_mhz = 2000 }}\n  \
             |                                  ^^^^^^^^^\n  |\n  = valid: machine = {{ file = \
             \"NAME.toml\" }} (a file holding one [machine] table, as `bounce presets show NAME \
             --toml` prints it)\n"
        )
    );
    std::fs::create_dir(dir.0.join("sub")).unwrap();
    let file = scenario(
        &dir,
        "sub/up.toml",
        "machine = { file = \"../milan.toml\" }",
    );
    let o = bounce(&["check", &file]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("is outside the scenario's directory"),
        "{}",
        stderr(&o)
    );
    let file = scenario(&dir, "none.toml", "machine = { file = \"nothere.toml\" }");
    let o = bounce(&["check", &file]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("cannot read the machine file"),
        "{}",
        stderr(&o)
    );
}

/// A machine file path that names a directory (an empty `file`, the
/// scenario's own directory) is refused at `machine.file`, saying what
/// the key takes; so is a directory given to `presets show`.
#[test]
fn a_machine_file_that_is_a_directory_names_the_key_and_what_it_takes() {
    let dir = with_machine_files("machine-file-dir", &[]);
    let file = scenario(&dir, "s.toml", "machine = { file = \"\" }");
    let o = bounce(&["check", &file]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: cannot read the machine file"),
        "{err}"
    );
    assert!(err.contains("(in `machine.file`)"), "{err}");
    assert!(err.contains(&format!("--> {file}:3:20")), "{err}");
    assert!(
        err.contains(
            "= valid: machine = { file = \"NAME.toml\" } (a file holding one [machine] table"
        ),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let shown = dir.0.display().to_string();
    let o = bounce(&["presets", "show", &shown]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: cannot read the machine file"),
        "{err}"
    );
    assert!(
        err.contains("= valid: a file holding one [machine] table"),
        "{err}"
    );
}

/// A variant's `set = { machine = { file } }` takes its machine from the
/// file, resolved beside the scenario, as the scenario's own `machine` does.
#[test]
fn a_variant_takes_its_machine_from_a_file() {
    let dir = with_machine_files("machine-file-variant", &[("genoa.toml", "epyc-genoa-1s")]);
    let variant = "machine = \"icelake-sp-2s\"\n[[variants]]\nname = \"genoa\"\nset = { machine = { file = \"genoa.toml\" } }\n[[variants]]\nname = \"genoa-preset\"\nset = { machine = \"epyc-genoa-1s\" }";
    a_variant_takes_its_machine_from(&dir, variant, 28);
    // The dotted key says the same; an error points at its value.
    let dotted = variant.replace(
        "{ machine = { file = \"genoa.toml\" } }",
        "{ \"machine.file\" = \"genoa.toml\" }",
    );
    a_variant_takes_its_machine_from(&dir, &dotted, 26);
}

fn a_variant_takes_its_machine_from(dir: &TempDir, variant: &str, file_column: usize) {
    let file = scenario(dir, "variant.toml", variant);
    let o = bounce(&["check", &file, "--format", "csv"]);
    assert_exit(&o, 0);
    let machines: Vec<String> = stdout(&o)
        .lines()
        .skip(1)
        .map(|l| l.split(',').skip(2).take(3).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        machines,
        [
            "base,icelake-sp-2s,160",
            "genoa,epyc-genoa-1s,192",
            "genoa-preset,epyc-genoa-1s,192"
        ]
    );
    // The file's machine runs as the preset does.
    let o = bounce(&["run", "--quiet", "--format", "csv", &file]);
    assert_exit(&o, 0);
    let csv = stdout(&o);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let cycles = header
        .iter()
        .position(|c| *c == "cycles_per_iteration_mean")
        .unwrap();
    let column: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(cycles).unwrap())
        .collect();
    assert_eq!(column.len(), 3, "{csv}");
    assert_eq!(column[1], column[2], "{csv}");
    assert_ne!(column[0], column[1], "{csv}");
    // A file that is not there is an error at the variant's line.
    let missing_variant = variant.replace("\"genoa.toml\"", "\"nothere.toml\"");
    let missing = scenario(dir, "missing.toml", &missing_variant);
    let o = bounce(&["check", &missing]);
    assert_exit(&o, 2);
    let shown = dir.0.join("nothere.toml").display().to_string();
    let text = std::fs::read_to_string(&missing).unwrap();
    let line = text.lines().nth(5).unwrap();
    let pad = file_column - 1;
    assert_eq!(
        stderr(&o),
        format!(
            "error: cannot read the machine file `{shown}`: No such file or directory (os error 2) \
             (in `variants.genoa.set.machine.file`)\n --> {missing}:6:{file_column}\n  |\n6 | \
             {line}\n  | {:pad$}^^^^^^^^^^^^^^\n  |\n  = valid: an existing file, named \
             relative to the scenario's directory `{}`\n",
            "",
            std::fs::canonicalize(&dir.0).unwrap().display()
        )
    );
}

/// An error about a machine taken from a file that only a variant or a
/// sweep case brings about (the file alone is fine) names the machine
/// file's line, not the table written in on the scenario's line.
#[test]
fn an_error_about_a_machine_from_a_file_names_the_files_line() {
    let dir = with_machine_files("machine-file-later", &[("icelake.toml", "icelake-sp-2s")]);
    let icelake = std::fs::read_to_string(dir.0.join("icelake.toml")).unwrap();
    let line = icelake
        .lines()
        .position(|l| l.starts_with("socket_hops = "))
        .unwrap()
        + 1;
    let shown = dir.0.join("icelake.toml").display().to_string();
    let expected = |what: &str| {
        format!(
            "error: {what}has 2 rows; the machine has 1 sockets, so it needs 1 rows of 1 hop \
             counts (in `machine.socket_hops`)\n  --> {shown}:{line}:15\n   |\n{line} | \
             socket_hops = [[0, 1], [1, 0]]\n   |               ^^^^^^^^^^^^^^^^\n"
        )
    };
    // A sweep case of one socket on the file's two-socket machine.
    let file = scenario(
        &dir,
        "sweep.toml",
        "machine = { file = \"icelake.toml\" }\n[sweep]\n\"machine.sockets\" = [2, 1]",
    );
    let o = bounce(&["check", &file]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        expected("in sweep case `machine.sockets=1`, variant `base`: ")
    );
    // A variant's machine from the file, with one socket.
    let file = scenario(
        &dir,
        "variant.toml",
        "machine = \"icelake-sp-2s\"\n[[variants]]\nname = \"one\"\nset = { machine = { file = \"icelake.toml\" }, \"machine.sockets\" = 1 }",
    );
    let o = bounce(&["check", &file]);
    assert_exit(&o, 2);
    assert_eq!(stderr(&o), expected("in variant `one`: "));
}

/// A workload no case names on a machine no preset covers: a
/// single-producer single-consumer ring of 16 slots on the shipped Ryzen 9
/// 7900X machine file, the consumer on the producer's SMT sibling, on its
/// CCD and on the other CCD, and head and tail packed in one line.
const RING: &str = r#"schema = 1
name = "spsc-ring"
base_name = "same-ccd"
machine = { file = "ryzen9-7900x.toml" }
seed = 1
[params]
slots = 16
[run]
cycles = 1000000
warmup_iterations = 20
[structs.ring]
fields = [
  { name = "head", type = "long", align = 64 },
  { name = "tail", type = "long", align = 64 },
]
[structs.slot]
fields = [{ name = "value", type = "long" }]
[instances.r]
struct = "ring"
kind = "global"
[instances.slot]
struct = "slot"
kind = "global"
count = 16
[scripts]
produce = """
let h = r.head
while h - r.tail >= slots { }
slot[h % slots].value = h
r.head = h + 1
work 50
"""
consume = """
let t = r.tail
while r.head == t { }
let v = slot[t % slots].value
r.tail = t + 1
work 50
"""
[[threads]]
name = "producer"
cpus = "0"
script = "produce"
[[threads]]
name = "consumer"
cpus = "1"
script = "consume"
[[variants]]
name = "smt-sibling"
set = { "threads.consumer.cpus" = "12" }
[[variants]]
name = "other-ccd"
set = { "threads.consumer.cpus" = "6" }
[[variants]]
name = "packed"
set = { "structs.ring.fields.tail.align" = 8 }
"#;

/// Each item costs what the line transfers between the two CPUs cost: least
/// between SMT siblings (one L1), more inside a CCD, most across the two
/// CCDs, where every item waits for at least the head's transfer through
/// the I/O die (the matrix's 78.9 ns one-way, less the locked instruction
/// a plain load does not pay); head and tail in one line cost more than
/// apart. Same bytes on a second run.
#[test]
fn a_ring_on_the_shipped_ryzen_machine_file_costs_what_its_transfers_cost() {
    let dir = TempDir::new("ring-7900x");
    std::fs::copy(
        common::root().join("scenarios/shipped/machines/ryzen9-7900x.toml"),
        dir.0.join("ryzen9-7900x.toml"),
    )
    .unwrap();
    let file = dir.join("ring.toml");
    std::fs::write(&file, RING).unwrap();
    let o = bounce(&["run", "--quiet", "--format", "json", &file]);
    assert_exit(&o, 0);
    let again = bounce(&["run", "--quiet", "--format", "json", &file]);
    assert_eq!(o.stdout, again.stdout);
    let json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let records = json["records"].as_array().unwrap();
    // Nanoseconds per item: each thread's iteration is one item.
    let ns = |variant: &str| -> f64 {
        let r = records
            .iter()
            .find(|r| r["variant"] == variant)
            .unwrap_or_else(|| panic!("no `{variant}` in {json}"));
        r["ns_per_iteration_mean"].as_f64().unwrap()
    };
    let (smt, same, other, packed) = (
        ns("smt-sibling"),
        ns("same-ccd"),
        ns("other-ccd"),
        ns("packed"),
    );
    assert!(smt.is_finite() && smt > 0.0, "{smt}");
    assert!(smt < same && same < other, "{smt} {same} {other}");
    assert!(other > 70.0, "{other}");
    assert!(packed > same, "{packed} {same}");
    assert_eq!(stderr(&o), "");
}

/// The shipped Ryzen file with every leg it gives in nanoseconds written
/// in the cycles it converts to at its 5600 MHz (`presets show` prints
/// them): the same machine in the other unit.
fn ryzen_in_cycles() -> String {
    let ns = std::fs::read_to_string(
        common::root().join("scenarios/shipped/machines/ryzen9-7900x.toml"),
    )
    .unwrap();
    let cycles = [
        ("smt_transfer", 18),
        ("l3_transfer", 76),
        ("hop_in_node", 141),
        ("hop_between_nodes", 141),
        ("hop_between_sockets", 141),
        ("dram", 74),
        ("l3_hit", 57),
    ];
    let mut converted = 0;
    let text: Vec<String> = ns
        .lines()
        .map(|l| {
            for (leg, c) in cycles {
                if l.starts_with(&format!("{leg}_ns = ")) {
                    converted += 1;
                    return format!("{leg}_cycles = {c}");
                }
            }
            l.to_string()
        })
        .collect();
    assert_eq!(converted, cycles.len(), "{ns}");
    text.join("\n") + "\n"
}

/// A leg given as `<leg>_ns` runs exactly as the same leg given in the
/// cycles it rounds to: the ring on the shipped Ryzen file (legs in ns)
/// and on the file rewritten in cycles gives the same records.
#[test]
fn a_leg_in_nanoseconds_runs_as_the_cycles_it_converts_to() {
    let dir = TempDir::new("ns-legs-same-run");
    std::fs::copy(
        common::root().join("scenarios/shipped/machines/ryzen9-7900x.toml"),
        dir.0.join("ryzen9-7900x.toml"),
    )
    .unwrap();
    let in_ns = dir.join("ring.toml");
    std::fs::write(&in_ns, RING).unwrap();
    std::fs::write(dir.0.join("cycles.toml"), ryzen_in_cycles()).unwrap();
    let in_cycles = dir.join("ring-cycles.toml");
    std::fs::write(
        &in_cycles,
        RING.replace("\"ryzen9-7900x.toml\"", "\"cycles.toml\""),
    )
    .unwrap();
    assert_ne!(
        std::fs::read_to_string(&in_ns).unwrap(),
        std::fs::read_to_string(&in_cycles).unwrap(),
        "the ring names the machine file some other way"
    );
    let records = |file: &str| -> serde_json::Value {
        let o = bounce(&["run", "--quiet", "--format", "json", file]);
        assert_exit(&o, 0);
        assert_eq!(stderr(&o), "");
        let mut json: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let mut records = json["records"].take();
        for r in records.as_array_mut().unwrap() {
            // The texts differ (the machine's is inlined): so do their
            // hashes.
            r.as_object_mut()
                .unwrap()
                .retain(|key, _| !key.ends_with("sha256"));
        }
        records
    };
    let (a, b) = (records(&in_ns), records(&in_cycles));
    assert!(a.as_array().unwrap().len() >= 4, "{a}");
    assert_eq!(a, b);
}

/// `presets show FILE` on a machine starting from epyc-genoa-1s (3700
/// MHz) at `clock_mhz`, with one leg in ns and one in cycles.
fn show_at_clock(dir: &TempDir, clock_mhz: u32) -> std::process::Output {
    let file = dir.join(&format!("at-{clock_mhz}.toml"));
    std::fs::write(
        &file,
        format!(
            "[machine]\npreset = \"epyc-genoa-1s\"\nclock_mhz = {clock_mhz}\n\n\
             [machine.latency]\nhop_in_node_ns = 30\nl3_transfer_cycles = 80\n"
        ),
    )
    .unwrap();
    bounce(&["presets", "show", &file])
}

/// The cycles of a leg row of `presets show FILE`.
fn leg_row<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find(|l| l.trim_start().starts_with(&format!("{key} ")))
        .unwrap_or_else(|| panic!("no `{key}` row in:\n{out}"))
}

/// Changing `clock_mhz` moves the cycles of a leg given in ns (30 ns:
/// 90 cycles at 3 GHz, 180 at 6 GHz) and not those of a leg given in
/// cycles (80 at both); the legs inherited from the preset at another
/// clock are named, with their ns at both clocks, on stderr and in the
/// listing, at the file's `clock_mhz` line.
#[test]
fn changing_the_clock_moves_the_cycles_of_legs_in_ns_only() {
    let dir = TempDir::new("ns-legs-clock");
    let (slow, fast) = (show_at_clock(&dir, 3000), show_at_clock(&dir, 6000));
    assert_exit(&slow, 0);
    assert_exit(&fast, 0);
    let (slow_out, fast_out) = (stdout(&slow), stdout(&fast));
    let cells = |row: &str| -> Vec<String> { row.split_whitespace().map(str::to_string).collect() };
    let hop_slow = cells(leg_row(&slow_out, "hop_in_node_cycles"));
    let hop_fast = cells(leg_row(&fast_out, "hop_in_node_cycles"));
    assert_eq!(hop_slow[1..3], ["90", "30.0"], "{slow_out}");
    assert_eq!(hop_fast[1..3], ["180", "30.0"], "{fast_out}");
    assert!(leg_row(&slow_out, "hop_in_node_cycles").ends_with("given: hop_in_node_ns = 30"));
    let l3_slow = cells(leg_row(&slow_out, "l3_transfer_cycles"));
    let l3_fast = cells(leg_row(&fast_out, "l3_transfer_cycles"));
    assert_eq!(l3_slow[1], "80");
    assert_eq!(l3_fast[1], "80");
    assert!(leg_row(&fast_out, "l3_transfer_cycles").ends_with("given: l3_transfer_cycles"));
    // Genoa's dram_cycles, inherited: the same cycles, so another time.
    let dram = leg_row(&fast_out, "dram_cycles");
    assert!(
        dram.ends_with("preset epyc-genoa-1s's cycles, 59.2 ns at its 3700 MHz"),
        "{dram}"
    );
    let warning = stderr(&fast);
    let at = format!(
        "{}:3: `clock_mhz = 6000` is not the 3700 MHz of preset `epyc-genoa-1s`",
        dir.join("at-6000.toml")
    );
    assert!(warning.starts_with(&format!("warning: {at}")), "{warning}");
    assert!(
        warning.contains("dram_cycles 219 (59.2 ns at 3700 MHz, 36.5 ns at 6000 MHz)"),
        "{warning}"
    );
    // Given legs are not inherited; legs the one-socket machine never
    // takes, or of no cycles, are not named.
    assert!(!warning.contains("hop_in_node_cycles"), "{warning}");
    assert!(!warning.contains("hop_between_sockets"), "{warning}");
    assert!(!warning.contains("hop_between_nodes"), "{warning}");
    assert!(!warning.contains("clean_snoop_saving"), "{warning}");
    assert!(!warning.contains("l3_transfer_cycles"), "{warning}");
    assert!(fast_out.contains(&format!("note: {at}")), "{fast_out}");

    // The run's report says it too, under the figures.
    let scenario = scenario(&dir, "run.toml", "machine = { file = \"at-6000.toml\" }");
    let o = bounce(&["run", "--quiet", &scenario]);
    assert_exit(&o, 0);
    assert!(
        stderr(&o).starts_with(&format!("warning: {at}")),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains(&format!("\nnote: {at}")),
        "{}",
        stdout(&o)
    );

    // At the preset's own clock nothing is said.
    let same = show_at_clock(&dir, 3700);
    assert_exit(&same, 0);
    assert_eq!(stderr(&same), "");
    assert!(!stdout(&same).contains("note:"));
}

/// Each bad `_ns` leg is refused at its line and key with what is valid,
/// in a machine file (`presets show`, a scenario naming it) and inline in
/// a scenario, as a bad `_cycles` value is.
#[test]
fn a_bad_leg_in_nanoseconds_names_its_file_line_key_and_what_is_valid() {
    let dir = TempDir::new("ns-legs-errors");
    let cases = [
        (
            "hop_in_node_cycles = 141\nhop_in_node_ns = 25.2",
            "hop_in_node_ns = 25.2",
            "`latency.hop_in_node_cycles` and `latency.hop_in_node_ns` both give the leg `hop_in_node`; give it once",
            "either `hop_in_node_cycles` (whole core cycles at clock_mhz) or `hop_in_node_ns`",
        ),
        (
            "dram_ns = -3",
            "dram_ns = -3",
            "-3 is out of range 0..=270270.3 ns (1000000 cycles at clock_mhz 3700)",
            "a number of nanoseconds from 0 to 270270.3",
        ),
        (
            "l3_hit_ns = nan",
            "l3_hit_ns = nan",
            "NaN is not a number of nanoseconds",
            "a number of nanoseconds from 0 to 270270.3",
        ),
        (
            "smt_transfer_ns = 1e12",
            "smt_transfer_ns = 1e12",
            "1000000000000 is out of range 0..=270270.3 ns",
            "a number of nanoseconds from 0 to 270270.3",
        ),
    ];
    for (k, (legs, line_text, message, valid)) in cases.into_iter().enumerate() {
        let key = line_text.split(' ').next().unwrap();
        let column = key.len() + 4;
        // Line 5 of the machine file: after the header, preset, a blank
        // line and `[machine.latency]`.
        let text = format!("[machine]\npreset = \"epyc-genoa-1s\"\n\n[machine.latency]\n{legs}\n");
        let line = 5 + text.lines().skip(4).position(|l| l == line_text).unwrap();
        let file = dir.join(&format!("bad-{k}.toml"));
        std::fs::write(&file, &text).unwrap();
        let scenario = scenario(
            &dir,
            &format!("s-{k}.toml"),
            &format!("machine = {{ file = \"bad-{k}.toml\" }}"),
        );
        let inline = dir.join(&format!("inline-{k}.toml"));
        std::fs::write(
            &inline,
            SCENARIO
                .replace("MACHINE\n", "")
                .replace("[run]", &format!("{text}[run]")),
        )
        .unwrap();
        for (args, shown, shown_line) in [
            (vec!["presets", "show", &file], file.clone(), line),
            (vec!["check", &scenario], file.clone(), line),
            // The inline table starts after `schema` and `name`.
            (vec!["check", &inline], inline.clone(), line + 2),
        ] {
            let o = bounce(&args);
            assert_exit(&o, 2);
            let err = stderr(&o);
            assert!(
                err.starts_with(&format!("error: {message}")),
                "{args:?}: {err}"
            );
            assert!(
                err.contains(&format!("(in `machine.latency.{key}`)")),
                "{err}"
            );
            assert!(
                err.contains(&format!("--> {shown}:{shown_line}:{column}")),
                "{args:?}: {err}"
            );
            assert!(err.contains(&format!("valid: {valid}")), "{err}");
        }
    }
}

/// `presets show FILE.toml` lists every key a machine gets besides its
/// legs, as `presets show PRESET` does: each with its value and where it
/// comes from. A newcomer's file of the required keys alone sees which
/// defaults it runs with, and a file on a preset which keys are the
/// preset's.
#[test]
fn presets_show_of_a_machine_file_lists_every_key_and_where_it_comes_from() {
    let dir = TempDir::new("machine-file-keys");
    let whole = dir.0.join("whole.toml");
    std::fs::write(
        &whole,
        "[machine]\nname = \"six-cores\"\nclock_mhz = 4200\nsockets = 1\nnodes_per_socket = 1\n\
         l3_per_node = 1\ncores_per_l3 = 6\nthreads_per_core = 2\nline_size_bytes = 64\n\
         protocol = \"mesif\"\nlookup = \"local\"\nstore_buffer_entries = 72\n\
         [machine.latency]\nl1_hit_cycles = 5\nlocked_op_cycles = 20\nsmt_transfer_cycles = 2\n\
         l3_transfer_ns = 45.0\nhop_in_node_ns = 15.0\ndram_ns = 90.0\n",
    )
    .unwrap();
    let o = bounce(&["presets", "show", whole.to_str().unwrap()]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let row = |key: &str| {
        out.lines()
            .find(|l| {
                l.strip_prefix("  ")
                    .and_then(|l| l.strip_prefix(key))
                    .is_some_and(|rest| rest.starts_with(' '))
            })
            .unwrap_or_else(|| panic!("no row for `{key}`:\n{out}"))
            .to_string()
    };
    for key in models::presets::SPEC_KEYS
        .iter()
        .filter(|k| !k.starts_with("latency."))
    {
        row(key);
    }
    assert!(
        row("clock_mhz").contains("given in the file, line 3"),
        "{out}"
    );
    let misses = row("outstanding_misses");
    assert!(
        misses.contains(" 1 ") && misses.contains("the default: one miss in flight"),
        "{misses}"
    );
    assert!(row("node_distances").contains("not set"), "{out}");
    // One socket and one node: the legs between them are not required.
    assert!(
        out.contains("hop_between_sockets_cycles       0      0.0 ns  not given: 0, one socket"),
        "{out}"
    );

    // On a preset: the preset's values, with their provenance.
    let on_preset = dir.0.join("on-preset.toml");
    std::fs::write(
        &on_preset,
        "[machine]\npreset = \"icelake-sp-2s\"\nsmt_share_percent = 50\n",
    )
    .unwrap();
    let o = bounce(&["presets", "show", on_preset.to_str().unwrap()]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let row = |key: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no row for `{key}`:\n{out}"))
            .to_string()
    };
    assert!(
        row("smt_share_percent").contains("given in the file, line 3"),
        "{out}"
    );
    assert!(
        row("outstanding_misses").contains("preset icelake-sp-2s's (documented)"),
        "{out}"
    );
    assert!(
        row("clean_shared_line_answer").contains("preset icelake-sp-2s's (assumed)"),
        "{out}"
    );
}

/// A machine file may turn on the store buffer's RFO prefetch, which every
/// preset leaves off (`store_rfo_ahead_entries`, printed by `presets show
/// NAME --toml`): the trace shows the lines requested ahead, and a value
/// out of range is an error naming the file, the key and what is valid.
#[test]
fn a_machine_file_turns_on_the_store_buffers_rfo_prefetch() {
    let dir = with_machine_files("rfo-ahead", &[("icx.toml", "icelake-sp-2s")]);
    let icx = std::fs::read_to_string(dir.0.join("icx.toml")).unwrap();
    assert!(icx.contains("\nstore_rfo_ahead_entries = 0\n"), "{icx}");
    let with = |entries: &str| {
        icx.replace(
            "\nstore_rfo_ahead_entries = 0\n",
            &format!("\nstore_rfo_ahead_entries = {entries}\n"),
        )
    };
    std::fs::write(dir.0.join("icx.toml"), with("8")).unwrap();
    // CPU 0 stores to four lines of its own, then fences.
    let path = dir.0.join("stores.toml");
    let text = SCENARIO
        .replace("MACHINE", "machine = { file = \"icx.toml\" }")
        .replace(
            "[structs.c]\nfields = [{ name = \"v\", type = \"u64\" }]",
            "[structs.c]\nfields = [{ name = \"v\", type = \"u64\", align = 64 }]",
        )
        .replace("kind = \"global\"", "kind = \"global\"\ncount = 4")
        .replace(
            "s = \"fetch_add(g.v, 1)\"",
            "s = \"g[0].v = 1\\ng[1].v = 2\\ng[2].v = 3\\ng[3].v = 4\\nfence\"",
        )
        .replace("cpus = \"0-3\"", "cpus = \"0\"");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();
    let trace = bounce(&["trace", "--limit", "40", path]);
    assert_exit(&trace, 0);
    assert!(
        stdout(&trace).contains("requested for ownership ahead of its store's drain"),
        "{}",
        stdout(&trace)
    );
    std::fs::write(dir.0.join("icx.toml"), with("2000")).unwrap();
    let bad = bounce(&["run", "--quiet", path]);
    assert_exit(&bad, 2);
    let err = stderr(&bad);
    assert!(
        err.contains("icx.toml") && err.contains("store_rfo_ahead_entries") && err.contains("1024"),
        "{err}"
    );
}
