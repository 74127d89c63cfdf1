//! Rendered messages of errors found when building a loaded scenario
//! (machine, layout, scripts, CPUs), compared as whole strings.

use scenarios::build::{build_all, BuildOptions};
use scenarios::load_str;

mod common;

/// Loads and builds `input` as `scenarios/test.toml` and compares the
/// rendered error with `expected` (leading and trailing newlines of
/// `expected` are ignored). Loading must succeed: these are build errors.
/// `SCENARIOS_DUMP` as [`common::assert_rendered`] says.
#[track_caller]
fn check(input: &str, expected: &str) {
    let loaded = match load_str("scenarios/test.toml", input) {
        Ok(l) => l,
        Err(e) => panic!("\nthe input does not load, so this is no build error:\n{e}\n"),
    };
    let actual = match build_all(&loaded, BuildOptions::default()) {
        Ok(_) => "(built without error)".to_string(),
        Err(e) => e.to_string(),
    };
    common::assert_rendered(&actual, expected);
}

/// A valid file to vary. Line 2 is the machine, lines 7-9 the instance,
/// lines 11-15 the script, lines 17-18 the thread group.
const BASE: &str = r#"schema = 1
machine = "icelake-sp-2s"
[run]
iterations = 10
[structs.counter]
fields = [{ name = "value", type = "unsigned long" }]
[instances.ctr]
struct = "counter"
kind = "global"
[scripts]
inc = """
# bump the counter
let v = ctr.value
ctr.value = v + 1
"""
[[threads]]
cpus = "0-3"
script = "inc"
"#;

#[test]
fn base_builds() {
    check(BASE, "(built without error)");
}

#[test]
fn unknown_preset_with_did_you_mean() {
    check(
        &BASE.replace("\"icelake-sp-2s\"", "\"icelake-sp2s\""),
        r#"
error: unknown machine preset `icelake-sp2s` (in `machine`)
 --> scenarios/test.toml:2:11
  |
2 | machine = "icelake-sp2s"
  |           ^^^^^^^^^^^^^^
  |
  = valid: icelake-sp-2s, cascadelake-sp-2s, cascadelake-sp-4s, cascadelake-ap-2s, epyc-naples-2s, epyc-milan-2s, epyc-genoa-1s, epyc-genoa-2s, bergamo-1s, bergamo-2s
  = help: did you mean `icelake-sp-2s`?
"#,
    );
}

#[test]
fn script_syntax_error_in_multi_line_string() {
    // Line 3 of the script (line 1 is the comment) is line 14 of the file.
    check(
        &BASE.replace("ctr.value = v + 1", "ctr.value = v + / 1"),
        r#"
error: expected an expression after `+`, found `/` (in `scripts.inc`)
  --> scenarios/test.toml:14:17
   |
14 | ctr.value = v + / 1
   |                 ^
"#,
    );
}

#[test]
fn script_syntax_error_in_literal_multi_line_string() {
    // The error is at the closing `'''` (file line 16). "line 4, column 9"
    // is the opening `{` counted inside the script: see
    // `unclosed_block_names_the_file_line_of_its_opening`.
    check(
        &BASE
            .replace("inc = \"\"\"", "inc = '''")
            .replace("v + 1\n\"\"\"", "v + 1\nwhile 1 {\n'''"),
        r#"
error: expected `}` to close the block opened at line 15, column 9, found end of script (in `scripts.inc`)
  --> scenarios/test.toml:16:1
   |
16 | '''
   | ^
"#,
    );
}

/// The message of an unclosed block names the opening `{` by its line in
/// the script (4) while the error header points into the file (line 16), so
/// a reader looks at the wrong line: the `{` is on line 15 of the file, and
/// the message should say so.
#[test]
fn unclosed_block_names_the_file_line_of_its_opening() {
    let input = BASE.replace("v + 1\n\"\"\"", "v + 1\nwhile 1 {\n\"\"\"");
    let loaded = load_str("scenarios/test.toml", &input).unwrap_or_else(|e| panic!("{e}"));
    let err = build_all(&loaded, BuildOptions::default()).unwrap_err();
    assert_eq!((err.line, err.column), (16, 1));
    assert!(
        err.message.contains("line 15") && !err.message.contains("line 4"),
        "{err}"
    );
}

#[test]
fn script_syntax_error_in_one_line_string() {
    check(
        &BASE.replace(
            "inc = \"\"\"\n# bump the counter\nlet v = ctr.value\nctr.value = v + 1\n\"\"\"",
            "inc = \"ctr.value += 1\"",
        ),
        r#"
error: `+=` is not supported; write `name = name + value` or `inst.field = inst.field + value` (in `scripts.inc`)
  --> scenarios/test.toml:11:18
   |
11 | inc = "ctr.value += 1"
   |                  ^
"#,
    );
}

#[test]
fn unknown_field_in_script() {
    check(
        &BASE.replace("let v = ctr.value", "let v = ctr.valeu"),
        r#"
error: struct `counter` (of instance `ctr`) has no field `valeu` (in `scripts.inc`)
  --> scenarios/test.toml:13:13
   |
13 | let v = ctr.valeu
   |             ^^^^^
   |
   = valid: value
   = help: did you mean `value`?
"#,
    );
}

/// A name that is neither a local nor a parameter, with nothing close to
/// suggest, lists the names a script may read there.
#[test]
fn unknown_name_in_script_lists_the_locals_and_parameters() {
    check(
        &BASE
            .replace("ctr.value = v + 1", "ctr.value = zzz + 1")
            .replace("[run]", "[params]\nbatch = 32\n[run]"),
        r#"
error: unknown name `zzz`: not a local, a procedure parameter or a scenario parameter (in `scripts.inc`)
  --> scenarios/test.toml:16:13
   |
16 | ctr.value = zzz + 1
   |             ^^^
   |
   = valid: a local in scope here: v; a scenario parameter: batch
"#,
    );
}

#[test]
fn unknown_instance_in_script() {
    check(
        &BASE.replace("ctr.value = v + 1", "cnt.value = v + 1"),
        r#"
error: unknown instance `cnt` (in `scripts.inc`)
  --> scenarios/test.toml:14:1
   |
14 | cnt.value = v + 1
   | ^^^
   |
   = valid: ctr
   = help: did you mean `ctr`?
"#,
    );
}

#[test]
fn error_in_procedure_body() {
    let input = BASE.replace(
        "[scripts]\n",
        "[procedures.bump]\nparams = [\"n\"]\nbody = \"\"\"\nctr.value = ctr.value + n\nreturn ctr.vlaue\n\"\"\"\n[scripts]\n",
    );
    check(
        &input,
        r#"
error: struct `counter` (of instance `ctr`) has no field `vlaue` (in `procedures.bump.body`)
  --> scenarios/test.toml:14:12
   |
14 | return ctr.vlaue
   |            ^^^^^
   |
   = valid: value
   = help: did you mean `value`?
"#,
    );
}

/// A C array declarator is not a type name: the message says how an
/// array is written.
#[test]
fn c_array_type_names_its_count() {
    check(
        &BASE.replace("\"unsigned long\"", "\"char[56]\""),
        r#"
error: unknown C type `char[56]`; an array is its element type and a count: `type = "char", count = 56` (in `structs.counter.fields.value.type`)
 --> scenarios/test.toml:6:36
  |
6 | fields = [{ name = "value", type = "char[56]" }]
  |                                    ^^^^^^^^^^
  |
  = valid: char, unsigned char, u8, s8, i8, bool, short, unsigned short, u16, s16, i16, int, unsigned int, u32, s32, i32, atomic_t, spinlock_t, raw_spinlock_t, refcount_t, long, unsigned long, long long, u64, s64, i64, size_t, ssize_t, atomic_long_t, atomic64_t, pointer, T *, local_lock_t, struct list_head, struct rcu_head, struct counter
"#,
    );
}

#[test]
fn unknown_c_type() {
    check(
        &BASE.replace("\"unsigned long\"", "\"unsigned lnog\""),
        r#"
error: unknown C type `unsigned lnog`; give `size` (and `align`) in bytes instead, or declare the struct in `[structs]` (in `structs.counter.fields.value.type`)
 --> scenarios/test.toml:6:36
  |
6 | fields = [{ name = "value", type = "unsigned lnog" }]
  |                                    ^^^^^^^^^^^^^^^
  |
  = valid: char, unsigned char, u8, s8, i8, bool, short, unsigned short, u16, s16, i16, int, unsigned int, u32, s32, i32, atomic_t, spinlock_t, raw_spinlock_t, refcount_t, long, unsigned long, long long, u64, s64, i64, size_t, ssize_t, atomic_long_t, atomic64_t, pointer, T *, local_lock_t, struct list_head, struct rcu_head, struct counter
  = help: did you mean `unsigned long`?
"#,
    );
}

#[test]
fn cpu_not_on_machine() {
    check(
        &BASE.replace("cpus = \"0-3\"", "cpus = \"0-200\""),
        r#"
error: CPU 160 does not exist on icelake-sp-2s (in `threads.inc.cpus`)
  --> scenarios/test.toml:17:8
   |
17 | cpus = "0-200"
   |        ^^^^^^^
   |
   = valid: CPUs 0-159
"#,
    );
}

#[test]
fn cpu_not_on_machine_in_variant() {
    let input = format!(
        "{BASE}[[variants]]\nname = \"wide\"\nset = {{ \"threads.inc.cpus\" = \"0-159,160\" }}\n"
    );
    check(
        &input,
        r#"
error: in variant `wide`: CPU 160 does not exist on icelake-sp-2s (in `threads.inc.cpus`)
  --> scenarios/test.toml:21:30
   |
21 | set = { "threads.inc.cpus" = "0-159,160" }
   |                              ^^^^^^^^^^^
   |
   = valid: CPUs 0-159
"#,
    );
}

/// `BASE` with `[machine]` (the given keys) instead of the preset.
fn with_machine(table: &str) -> String {
    BASE.replace("machine = \"icelake-sp-2s\"\n", "")
        .replace("[[threads]]", &format!("{table}[[threads]]"))
}

#[test]
fn inline_machine_missing_keys() {
    check(
        &with_machine(
            "[machine]\nsockets = 1\nnodes_per_socket = 1\nl3_per_node = 1\ncores_per_l3 = 4\n\
             threads_per_core = 1\nclock_mhz = 3000\n[machine.latency]\nl1_hit_cycles = 4\n",
        ),
        r#"
error: the machine is incomplete: missing `line_size_bytes`, `protocol`, `lookup`, `store_buffer_entries`, `latency.locked_op_cycles`, `latency.smt_transfer_cycles`, `latency.l3_transfer_cycles`, `latency.hop_in_node_cycles`, `latency.dram_cycles` (in `machine`)
  --> scenarios/test.toml:15:1
   |
15 | [machine]
   | ^^^^^^^^^
   |
   = valid: give every key (`bounce presets show NAME --toml` prints a preset's table with each key's source, to start from), or start from a preset with `preset = "NAME"` and give what differs (presets: icelake-sp-2s, cascadelake-sp-2s, cascadelake-sp-4s, cascadelake-ap-2s, epyc-naples-2s, epyc-milan-2s, epyc-genoa-1s, epyc-genoa-2s, bergamo-1s, bergamo-2s)
"#,
    );
}

#[test]
fn inline_machine_from_preset_needs_nothing_else() {
    check(
        &with_machine("[machine]\npreset = \"icelake-sp-2s\"\nsockets = 1\n"),
        "(built without error)",
    );
}

#[test]
fn inline_machine_too_large() {
    check(
        &with_machine("[machine]\npreset = \"icelake-sp-2s\"\nsockets = 64\ncores_per_l3 = 64\n"),
        r#"
error: the machine would have 8192 CPUs; the limit is 4096 (sockets x nodes_per_socket x l3_per_node x cores_per_l3 x threads_per_core) (in `machine.sockets`)
  --> scenarios/test.toml:17:11
   |
17 | sockets = 64
   |           ^^
"#,
    );
}

#[test]
fn overlapping_field_offset() {
    check(
        &BASE.replace(
            "fields = [{ name = \"value\", type = \"unsigned long\" }]",
            "fields = [\n    { name = \"value\", type = \"unsigned long\" },\n    { name = \"flags\", type = \"int\", offset = 4 },\n]",
        ),
        r#"
error: offset 4 overlaps the previous field, which ends at 8; offsets must increase in field order (in `structs.counter.fields.flags.offset`)
 --> scenarios/test.toml:8:46
  |
8 |     { name = "flags", type = "int", offset = 4 },
  |                                              ^
"#,
    );
}

#[test]
fn instance_on_missing_node() {
    check(
        &BASE.replace("kind = \"global\"", "kind = \"global\"\nnode = 2"),
        r#"
error: node 2 does not exist; the machine has nodes 0-1 (in `instances.ctr.node`)
  --> scenarios/test.toml:10:8
   |
10 | node = 2
   |        ^
"#,
    );
}

#[test]
fn an_asymmetric_socket_hop_matrix_names_the_cells() {
    check(
        &BASE.replace(
            "machine = \"icelake-sp-2s\"",
            "[machine]\npreset = \"icelake-sp-2s\"\nsocket_hops = [[0, 1], [2, 0]]",
        ),
        r#"
error: row 0, column 1 is 1 but row 1, column 0 is 2; links are the same both ways (in `machine.socket_hops`)
 --> scenarios/test.toml:4:15
  |
4 | socket_hops = [[0, 1], [2, 0]]
  |               ^^^^^^^^^^^^^^^^
"#,
    );
}

/// `node_distances` as `numactl --hardware` prints them: a malformed matrix
/// is an error at the key, naming the cell, the file and line, and what
/// would be valid.
#[test]
fn a_malformed_node_distance_matrix_names_the_cells() {
    let machine = |distances: &str| {
        BASE.replace(
            "machine = \"icelake-sp-2s\"",
            &format!("[machine]\npreset = \"icelake-sp-2s\"\nnode_distances = {distances}"),
        )
    };
    check(
        &machine("[[10, 21], [20, 10]]"),
        r#"
error: row 0, column 1 is 21 but row 1, column 0 is 20; the model needs the same distance both ways (in `machine.node_distances`)
 --> scenarios/test.toml:4:18
  |
4 | node_distances = [[10, 21], [20, 10]]
  |                  ^^^^^^^^^^^^^^^^^^^^
"#,
    );
    check(
        &machine("[[0, 21], [21, 0]]"),
        r#"
error: row 0, column 0: a node's distance to itself is 10 (as numactl shows it), not 0 (in `machine.node_distances`)
 --> scenarios/test.toml:4:18
  |
4 | node_distances = [[0, 21], [21, 0]]
  |                  ^^^^^^^^^^^^^^^^^^
"#,
    );
    check(
        &machine("[[10, 21, 21], [21, 10, 21], [21, 21, 10]]"),
        r#"
error: has 3 rows; the machine has 2 NUMA nodes (sockets x nodes_per_socket), so it needs 2 rows of 2 distances (in `machine.node_distances`)
 --> scenarios/test.toml:4:18
  |
4 | node_distances = [[10, 21, 21], [21, 10, 21], [21, 21, 10]]
  |                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
"#,
    );
    check(
        &machine("[[10, 21], [21]]"),
        r#"
error: row 1 has 1 entries; the machine has 2 NUMA nodes (sockets x nodes_per_socket), so it needs 2 rows of 2 distances (in `machine.node_distances`)
 --> scenarios/test.toml:4:18
  |
4 | node_distances = [[10, 21], [21]]
  |                  ^^^^^^^^^^^^^^^^
"#,
    );
}

/// A loop nothing leaves, in a run of `run.iterations`, is refused at its
/// line before anything runs: it could only end at a budget, after minutes
/// or hours of host time, without a result.
#[test]
fn a_loop_nothing_leaves_in_an_iterations_run() {
    check(
        &BASE.replace(
            "ctr.value = v + 1\n",
            "ctr.value = v + 1\nwhile 1 { work 10 }\n",
        ),
        r#"
error: this loop never ends: its condition is a constant that is not 0 and nothing in it leaves it (no `break` of its own, no `return`), so a CPU that enters it never finishes an iteration and a run of `run.iterations` could only stop at its budgets, without a result (in `scripts.inc`)
  --> scenarios/test.toml:15:1
   |
15 | while 1 { work 10 }
   | ^^^^^
   |
   = valid: a `break` or `return` inside the loop, a condition that can become 0, or a run by time (`run.cycles = N`), which ends whatever the CPUs are doing
"#,
    );
    // The same loop in a procedure is found there.
    let in_procedure = BASE.replace(
        "[scripts]\n",
        "[procedures.forever]\nparams = []\nbody = \"\"\"\nwhile 1 {\n  while 1 { break }\n}\n\"\"\"\n[scripts]\n",
    );
    let e = match build_all(
        &load_str("scenarios/test.toml", &in_procedure).unwrap(),
        BuildOptions::default(),
    ) {
        Ok(_) => panic!("built"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("(in `procedures.forever.body`)") && e.contains("\n13 | while 1 {\n"),
        "{e}"
    );
    // A run by time ends whatever its CPUs do: there the loop is legitimate.
    check(
        &BASE.replace("iterations = 10", "cycles = 10000").replace(
            "ctr.value = v + 1\n",
            "ctr.value = v + 1\nwhile 1 { work 10 }\n",
        ),
        "(built without error)",
    );
}

/// Every numeric key of a machine table, given a value below and above the
/// range `sim_core::topology::scalar_key_range` gives it (a negative one
/// too): one mechanism, so each error names the file, the line, the key
/// and that range, whether the reader refuses the value's type (a
/// negative count) or its range.
#[test]
fn every_numeric_machine_key_out_of_range_names_its_range() {
    let keys = [
        "clock_mhz",
        "sockets",
        "nodes_per_socket",
        "l3_per_node",
        "cores_per_l3",
        "threads_per_core",
        "line_size_bytes",
        "store_buffer_entries",
        "smt_share_percent",
        "arbitration_near_owner_percent",
        "outstanding_misses",
        "reorder_window_entries",
        "dispatch_width",
        "mispredict_penalty_cycles",
        "l1d_ways",
        "l2_kib",
        "l2_hit_cycles",
        "latency.l1_hit_cycles",
        "latency.locked_op_cycles",
        "latency.dram_cycles",
        "latency.hop_extra_socket_link_cycles",
        "latency.home_occupancy_cycles",
    ];
    for key in keys {
        let range = sim_core::topology::scalar_key_range(key).expect(key);
        let mut values = vec![-1i128, i128::from(*range.end() as u32) + 1];
        if *range.start() > 0 {
            values.push(i128::from(*range.start() as u32) - 1);
        }
        for value in values {
            let input = BASE.replace(
                "machine = \"icelake-sp-2s\"\n",
                &format!("[machine]\npreset = \"icelake-sp-2s\"\n{key} = {value}\n"),
            );
            let message = match load_str("scenarios/test.toml", &input) {
                Err(e) => e.to_string(),
                Ok(loaded) => match build_all(&loaded, BuildOptions::default()) {
                    Err(e) => e.to_string(),
                    Ok(_) => panic!("{key} = {value} was accepted"),
                },
            };
            let bounds = format!("from {} to {}", range.start(), range.end());
            assert!(
                message.contains(&format!("`machine.{key}`"))
                    && message.contains("scenarios/test.toml:4:")
                    && message.contains(&bounds),
                "{key} = {value}:\n{message}"
            );
        }
    }
}
