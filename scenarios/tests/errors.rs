//! Rendered error messages, compared as whole strings.

use scenarios::{load_file, load_str};

mod common;

/// Loads `input` as `scenarios/test.toml` and compares the rendered error
/// with `expected` (leading and trailing newlines of `expected` are ignored).
/// `SCENARIOS_DUMP` as [`common::assert_rendered`] says.
#[track_caller]
fn check(input: &str, expected: &str) {
    let actual = match load_str("scenarios/test.toml", input) {
        Ok(_) => "(loaded without error)".to_string(),
        Err(e) => e.to_string(),
    };
    common::assert_rendered(&actual, expected);
}

#[test]
fn unknown_key_with_did_you_mean() {
    check(
        r#"
schema = 1
machine = "icelake-sp-2s"
[run]
iterations = 10
[structs.counter]
fields = [
    { name = "a", type = "u64" },
    { name = "b", type = "u64", alig = 64 },
]
"#,
        r#"
error: unknown key `alig` in `structs.counter.fields.b`
 --> scenarios/test.toml:9:33
  |
9 |     { name = "b", type = "u64", alig = 64 },
  |                                 ^^^^
  |
  = valid: name, type, size, align, offset, count, anonymous, fields, union, bits, bit_offset, label
  = help: did you mean `align`?
"#,
    );
}

/// A valid file to vary: line 1 is `schema = 1`, the thread group is on lines 12-14.
const BASE: &str = r#"schema = 1
machine = "icelake-sp-2s"
[run]
iterations = 10
[structs.counter]
fields = [{ name = "value", type = "u64" }]
[instances.pc]
struct = "counter"
kind = "global"
[scripts]
inc = "x += 1"
[[threads]]
cpus = "0-3"
script = "inc"
"#;

#[test]
fn base_is_valid() {
    check(BASE, "(loaded without error)");
}

#[test]
fn missing_required_key() {
    check(
        &BASE.replace("struct = \"counter\"\n", ""),
        r#"
error: missing key `struct` in `instances.pc`
 --> scenarios/test.toml:7:1
  |
7 | [instances.pc]
  | ^^^^^^^^^^^^^^
"#,
    );
}

#[test]
fn missing_top_level_key() {
    check(
        &BASE.replace("[run]\niterations = 10\n", ""),
        r#"
error: missing top-level key `run`
 --> scenarios/test.toml:1:1
  |
1 | schema = 1
  | ^
"#,
    );
}

#[test]
fn wrong_type() {
    check(
        &BASE.replace("iterations = 10", "iterations = \"10\""),
        r#"
error: expected an integer for `run.iterations`, found a string
 --> scenarios/test.toml:4:14
  |
4 | iterations = "10"
  |              ^^^^
"#,
    );
}

#[test]
fn negative_count() {
    check(
        &BASE.replace("iterations = 10", "iterations = -10"),
        r#"
error: invalid value for `run.iterations`: expected a non-negative integer, found -10
 --> scenarios/test.toml:4:14
  |
4 | iterations = -10
  |              ^^^
"#,
    );
}

#[test]
fn negative_machine_key_names_the_machines_range_not_the_integer_types() {
    check(
        &BASE.replace(
            "machine = \"icelake-sp-2s\"",
            "machine = { preset = \"icelake-sp-2s\", smt_share_percent = -5 }",
        ),
        r#"
error: invalid value for `machine.smt_share_percent`: expected an integer from 1 to 100, found -5
 --> scenarios/test.toml:2:59
  |
2 | machine = { preset = "icelake-sp-2s", smt_share_percent = -5 }
  |                                                           ^^
"#,
    );
}

#[test]
fn unknown_enum_string() {
    check(
        &BASE.replace("kind = \"global\"", "kind = \"per_cpu\""),
        r#"
error: unknown value `per_cpu` for `instances.pc.kind`
 --> scenarios/test.toml:9:8
  |
9 | kind = "per_cpu"
  |        ^^^^^^^^^
  |
  = valid: global, per-cpu, per-node
  = help: did you mean `per-cpu`?
"#,
    );
}

#[test]
fn unknown_enum_string_in_machine_table() {
    check(
        &BASE.replace(
            "machine = \"icelake-sp-2s\"",
            "[machine]\npreset = \"icelake-sp-2s\"\nprotocol = \"mosi\"",
        ),
        r#"
error: unknown value `mosi` for `machine.protocol`
 --> scenarios/test.toml:4:12
  |
4 | protocol = "mosi"
  |            ^^^^^^
  |
  = valid: mesi, mesif, moesi
  = help: did you mean `moesi`?
"#,
    );
}

#[test]
fn unknown_struct_reference() {
    check(
        &BASE.replace("struct = \"counter\"", "struct = \"conter\""),
        r#"
error: unknown struct `conter` in `instances.pc.struct`
 --> scenarios/test.toml:8:10
  |
8 | struct = "conter"
  |          ^^^^^^^^
  |
  = valid: counter
  = help: did you mean `counter`?
"#,
    );
}

#[test]
fn unknown_script_reference() {
    check(
        &BASE.replace("script = \"inc\"", "script = \"incr\""),
        r#"
error: unknown script `incr` in `threads.incr.script`
  --> scenarios/test.toml:14:10
   |
14 | script = "incr"
   |          ^^^^^^
   |
   = valid: inc
   = help: did you mean `inc`?
"#,
    );
}

#[test]
fn bad_cpulist() {
    check(
        &BASE.replace("cpus = \"0-3\"", "cpus = \"0-3,7-5\""),
        r#"
error: invalid cpulist "0-3,7-5" for `threads.inc.cpus`: the range `7-5` ends before it starts
  --> scenarios/test.toml:13:8
   |
13 | cpus = "0-3,7-5"
   |        ^^^^^^^^^
   |
   = valid: a Linux cpulist such as "0-15,40-55" or "3", or "all"
"#,
    );
}

#[test]
fn duplicate_thread_names() {
    let input = format!(
        "{}[[threads]]\nname = \"workers\"\ncpus = \"8\"\nscript = \"inc\"\n",
        BASE.replace("[[threads]]\n", "[[threads]]\nname = \"workers\"\n")
    );
    check(
        &input,
        r#"
error: duplicate thread group name: `threads.workers` is already defined on line 13
  --> scenarios/test.toml:17:8
   |
17 | name = "workers"
   |        ^^^^^^^^^
   |
   = valid: a thread group name not used by another group
"#,
    );
}

#[test]
fn duplicate_default_thread_names() {
    let input = format!("{BASE}[[threads]]\ncpus = \"8\"\nscript = \"inc\"\n");
    check(
        &input,
        r#"
error: duplicate thread group name: `threads.inc` is already defined on line 14; this group is named after its script, so give it a distinct `name`
  --> scenarios/test.toml:17:10
   |
17 | script = "inc"
   |          ^^^^^
   |
   = valid: a thread group name not used by another group
"#,
    );
}

#[test]
fn both_iterations_and_cycles() {
    check(
        &BASE.replace("iterations = 10", "iterations = 10\ncycles = 5000"),
        r#"
error: `run` sets both `iterations` and `cycles`; set exactly one of them
 --> scenarios/test.toml:5:1
  |
5 | cycles = 5000
  | ^^^^^^
  |
  = valid: iterations (per CPU) or cycles (simulated), not both
"#,
    );
}

#[test]
fn neither_iterations_nor_cycles() {
    check(
        &BASE.replace("iterations = 10", "warmup_iterations = 10"),
        r#"
error: `run` sets neither `iterations` nor `cycles`; set exactly one of them
 --> scenarios/test.toml:3:1
  |
3 | [run]
  | ^^^^^
  |
  = valid: iterations (per CPU) or cycles (simulated)
"#,
    );
}

#[test]
fn wrong_schema_version() {
    check(
        &BASE.replace("schema = 1", "schema = 2"),
        r#"
error: unsupported `schema` version 2
 --> scenarios/test.toml:1:10
  |
1 | schema = 2
  |          ^
  |
  = valid: 1
"#,
    );
}

#[test]
fn unknown_top_level_key() {
    check(
        &BASE.replace("schema = 1", "schema = 1\nsede = 3"),
        r#"
error: unknown top-level key `sede`
 --> scenarios/test.toml:2:1
  |
2 | sede = 3
  | ^^^^
  |
  = valid: schema, name, description, base_name, seed, machine, use, run, params, structs, instances, procedures, scripts, threads, scheduler, measured, variants, sweep
  = help: did you mean `seed`?
"#,
    );
}

#[test]
fn field_with_type_and_size() {
    check(
        &BASE.replace("type = \"u64\"", "type = \"u64\", size = 8"),
        r#"
error: field `structs.counter.fields.value` has both `type` and `size`
 --> scenarios/test.toml:6:50
  |
6 | fields = [{ name = "value", type = "u64", size = 8 }]
  |                                                  ^
  |
  = valid: exactly one of `type` (a C type name), `size` (bytes) and `fields` (members written out)
"#,
    );
}

#[test]
fn align_not_power_of_two() {
    check(
        &BASE.replace("type = \"u64\"", "type = \"u64\", align = 24"),
        r#"
error: `structs.counter.fields.value.align` must be a power of two, found 24
 --> scenarios/test.toml:6:51
  |
6 | fields = [{ name = "value", type = "u64", align = 24 }]
  |                                                   ^^
  |
  = valid: a power of two such as 1, 2, 4, 8, 16, 32 or 64
"#,
    );
}

#[test]
fn node_on_per_cpu_instance() {
    check(
        &BASE.replace("kind = \"global\"", "kind = \"per-cpu\"\nnode = 1"),
        r#"
error: `instances.pc.node` is only allowed for global instances, and this one is per-cpu
  --> scenarios/test.toml:10:1
   |
10 | node = 1
   | ^^^^
"#,
    );
}

#[test]
fn toml_syntax_error() {
    check(
        &BASE.replace("[run]", "[run"),
        r#"
error: invalid TOML: unclosed table, expected `]`
 --> scenarios/test.toml:3:5
  |
3 | [run
  |     ^
"#,
    );
}

#[test]
fn toml_syntax_error_in_value() {
    check(
        &BASE.replace("iterations = 10", "iterations = 10 10"),
        r#"
error: invalid TOML: string values must be quoted, expected literal string
 --> scenarios/test.toml:4:14
  |
4 | iterations = 10 10
  |              ^^^^^
"#,
    );
}

#[test]
fn toml_duplicate_key() {
    check(
        &BASE.replace("kind = \"global\"", "kind = \"global\"\nkind = \"per-cpu\""),
        r#"
error: invalid TOML: duplicate key `kind`
  --> scenarios/test.toml:10:1
   |
10 | kind = "per-cpu"
   | ^^^^
"#,
    );
}

const VARIANT: &str = "[[variants]]\nname = \"padded\"\n[variants.set]\n";

#[test]
fn variant_path_into_missing_segment() {
    let input = format!("{BASE}{VARIANT}\"structs.countr.fields.value.align\" = 64\n");
    check(
        &input,
        r#"
error: in variant `padded`: cannot set `structs.countr.fields.value.align`: `structs` has no key `countr`
  --> scenarios/test.toml:18:10
   |
18 | "structs.countr.fields.value.align" = 64
   |          ^^^^^^
   |
   = valid: counter
   = help: did you mean `counter`?
"#,
    );
}

#[test]
fn variant_path_into_missing_array_element() {
    let input = format!("{BASE}{VARIANT}\"structs.counter.fields.valeu.align\" = 64\n");
    check(
        &input,
        r#"
error: in variant `padded`: cannot set `structs.counter.fields.valeu.align`: `structs.counter.fields` has no element named `valeu`
  --> scenarios/test.toml:18:25
   |
18 | "structs.counter.fields.valeu.align" = 64
   |                         ^^^^^
   |
   = valid: value
   = help: did you mean `value`?
"#,
    );
}

#[test]
fn variant_path_through_preset_name() {
    let input = format!("{BASE}{VARIANT}\"machine.latency.dram_cycles\" = 300\n");
    check(
        &input,
        r#"
error: in variant `padded`: cannot set `machine.latency.dram_cycles`: `machine` is a preset name here; write `[machine]` with `preset = ...` to override its keys
  --> scenarios/test.toml:18:10
   |
18 | "machine.latency.dram_cycles" = 300
   |          ^^^^^^^
"#,
    );
}

#[test]
fn bad_reorder() {
    let input = format!(
        "{}{VARIANT}\"structs.counter.fields\" = [\"b\", \"vlaue\"]\n",
        BASE.replace(
            "{ name = \"value\", type = \"u64\" }",
            "{ name = \"value\", type = \"u64\" }, { name = \"b\", size = 8 }"
        )
    );
    check(
        &input,
        r#"
error: in variant `padded`: cannot reorder `structs.counter.fields`: it has no element named `vlaue`
  --> scenarios/test.toml:18:34
   |
18 | "structs.counter.fields" = ["b", "vlaue"]
   |                                  ^^^^^^^
   |
   = valid: value, b
   = help: did you mean `value`?
"#,
    );
}

#[test]
fn reorder_missing_an_element() {
    let input = format!(
        "{}{VARIANT}\"structs.counter.fields\" = [\"b\"]\n",
        BASE.replace(
            "{ name = \"value\", type = \"u64\" }",
            "{ name = \"value\", type = \"u64\" }, { name = \"b\", size = 8 }"
        )
    );
    check(
        &input,
        r#"
error: in variant `padded`: cannot reorder `structs.counter.fields`: the new order leaves out `value`
  --> scenarios/test.toml:18:28
   |
18 | "structs.counter.fields" = ["b"]
   |                            ^^^^^
   |
   = valid: a permutation of value, b
"#,
    );
}

#[test]
fn patched_value_of_wrong_type_points_at_variant() {
    let input = format!("{BASE}{VARIANT}\"structs.counter.fields.value.align\" = \"64\"\n");
    check(
        &input,
        r#"
error: in variant `padded`: expected an integer for `structs.counter.fields.value.align`, found a string
  --> scenarios/test.toml:18:40
   |
18 | "structs.counter.fields.value.align" = "64"
   |                                        ^^^^
"#,
    );
}

#[test]
fn variant_named_like_the_base() {
    let input = format!(
        "{}{}\"seed\" = 2\n",
        BASE.replace("schema = 1", "schema = 1\nbase_name = \"padded\""),
        VARIANT
    );
    check(
        &input,
        r#"
error: `variants.padded.name` is `padded`, which is the base's name (`base_name` on line 2)
  --> scenarios/test.toml:17:8
   |
17 | name = "padded"
   |        ^^^^^^^^
   |
   = valid: a variant name different from `base_name` and from the other variants
"#,
    );
}

#[test]
fn unknown_variant_key() {
    let input = format!("{BASE}[[variants]]\nname = \"padded\"\nsets = {{ seed = 2 }}\n");
    check(
        &input,
        r#"
error: unknown key `sets` in `variants.padded`
  --> scenarios/test.toml:17:1
   |
17 | sets = { seed = 2 }
   | ^^^^
   |
   = valid: name, description, baseline, set
   = help: did you mean `set`?
"#,
    );
}

#[test]
fn a_baseline_that_is_no_variant_names_the_valid_ones() {
    let input = format!(
        "{BASE}[[variants]]\nname = \"drain-1\"\nbaseline = \"drain-1\"\nset = {{ seed = 2 }}\n\
         [[variants]]\nname = \"drain-8\"\nbaseline = \"drain_1\"\nset = {{ seed = 3 }}\n"
    );
    check(
        &input,
        r#"
error: `variants.drain-8.baseline` is `drain_1`, which is neither the base (`base_name`) nor a variant
  --> scenarios/test.toml:21:12
   |
21 | baseline = "drain_1"
   |            ^^^^^^^^^
   |
   = valid: base, drain-1, drain-8
   = help: did you mean `drain-1`?
"#,
    );
}

#[test]
fn a_baseline_must_be_a_string() {
    let input =
        format!("{BASE}[[variants]]\nname = \"padded\"\nbaseline = 1\nset = {{ seed = 2 }}\n");
    check(
        &input,
        r#"
error: expected a string for `variants.padded.baseline` (the name of the variant it is compared with), found an integer
  --> scenarios/test.toml:17:12
   |
17 | baseline = 1
   |            ^
"#,
    );
}

#[test]
fn a_sweep_runs_the_baseline_of_every_variant_it_runs() {
    let input = format!(
        "{BASE}[[variants]]\nname = \"drain-1\"\nbaseline = \"drain-1\"\nset = {{ seed = 2 }}\n\
         [[variants]]\nname = \"drain-8\"\nbaseline = \"drain-1\"\nset = {{ seed = 3 }}\n\
         [sweep]\nvariants = [\"base\", \"drain-8\"]\nseed = [1, 2]\n"
    );
    check(
        &input,
        r#"
error: `sweep.variants` runs `drain-8`, whose `baseline` is `drain-1`, but not `drain-1`
  --> scenarios/test.toml:24:21
   |
24 | variants = ["base", "drain-8"]
   |                     ^^^^^^^^^
   |
   = valid: `drain-1` in `sweep.variants` as well, or `drain-8` left out
"#,
    );
}

#[test]
fn unreadable_file() {
    let err = load_file(std::path::Path::new("no/such/dir/scenario.toml")).unwrap_err();
    assert_eq!(err.line, 0);
    let text = err.to_string();
    assert!(
        text.starts_with("error: cannot read `no/such/dir/scenario.toml`: "),
        "{text}"
    );
    assert!(text.ends_with("\n--> no/such/dir/scenario.toml"), "{text}");
}

#[test]
fn unknown_key_in_machine_table() {
    check(
        &BASE.replace(
            "machine = \"icelake-sp-2s\"",
            "[machine]\npreset = \"icelake-sp-2s\"\n[machine.latency]\ndram = 300",
        ),
        r#"
error: unknown key `dram` in `machine.latency`
 --> scenarios/test.toml:5:1
  |
5 | dram = 300
  | ^^^^
  |
  = valid: l1_hit_cycles, locked_op_cycles, smt_transfer_cycles, l3_transfer_cycles, hop_in_node_cycles, hop_between_nodes_cycles, hop_between_sockets_cycles, hop_extra_socket_link_cycles, clean_snoop_saving_cycles, dram_cycles, l3_hit_cycles, home_occupancy_cycles, l1_hit_ns, locked_op_ns, smt_transfer_ns, l3_transfer_ns, hop_in_node_ns, hop_between_nodes_ns, hop_between_sockets_ns, hop_extra_socket_link_ns, clean_snoop_saving_ns, dram_ns, l3_hit_ns, home_occupancy_ns
  = help: did you mean `dram_cycles` or `dram_ns`?
"#,
    );
}

#[test]
fn machine_of_wrong_type() {
    check(
        &BASE.replace("machine = \"icelake-sp-2s\"", "machine = 2"),
        r#"
error: expected a preset name or a table for `machine`, found an integer
 --> scenarios/test.toml:2:11
  |
2 | machine = 2
  |           ^
"#,
    );
}

#[test]
fn reorder_listing_an_element_twice() {
    let input = format!(
        "{}{VARIANT}\"structs.counter.fields\" = [\"b\", \"b\"]\n",
        BASE.replace(
            "{ name = \"value\", type = \"u64\" }",
            "{ name = \"value\", type = \"u64\" }, { name = \"b\", size = 8 }"
        )
    );
    check(
        &input,
        r#"
error: in variant `padded`: cannot reorder `structs.counter.fields`: `b` is listed more than once
  --> scenarios/test.toml:18:34
   |
18 | "structs.counter.fields" = ["b", "b"]
   |                                  ^^^
   |
   = valid: a permutation of value, b
"#,
    );
}

#[test]
fn variant_set_through_scalar() {
    let input = format!("{BASE}{VARIANT}run.iterations.x = 1\n");
    check(
        &input,
        r#"
error: in variant `padded`: cannot set `run.iterations.x`: `run.iterations` is an integer, not a table
  --> scenarios/test.toml:18:16
   |
18 | run.iterations.x = 1
   |                ^
"#,
    );
}

/// A variant that sets a parameter `[params]` does not declare is refused:
/// any name is a parameter, so a misspelt one would add a parameter no
/// script reads and leave the variant equal to the base.
#[test]
fn a_variant_setting_an_undeclared_parameter_names_the_declared_ones() {
    let input = format!("{BASE}[params]\nbatch = 32\n{VARIANT}\"params.bacth\" = 64\n");
    check(
        &input,
        r#"
error: in variant `padded`: cannot set `params.bacth`: `[params]` has no parameter `bacth` (a variant changes a parameter the scenario declares; declare it in `[params]` with its base value to add one)
  --> scenarios/test.toml:20:9
   |
20 | "params.bacth" = 64
   |         ^^^^^
   |
   = valid: batch
   = help: did you mean `batch`?
"#,
    );
    // Declared, the same patch loads.
    let input = format!("{BASE}[params]\nbatch = 32\n{VARIANT}\"params.batch\" = 64\n");
    check(&input, "(loaded without error)");
}

/// A procedure named like a builtin could never run (a call of the name
/// runs the builtin); one named like a keyword could never be called.
#[test]
fn a_procedure_named_like_a_builtin_or_a_keyword_is_refused() {
    let input = format!("{BASE}[procedures.tid]\nbody = \"return 1\"\n");
    check(
        &input,
        r#"
error: procedure name `tid` is a builtin's name: a call of it runs the builtin, never a procedure (in `procedures.tid`)
  --> scenarios/test.toml:15:13
   |
15 | [procedures.tid]
   |             ^^^
   |
   = valid: a name other than the keywords (let, if, else, while, repeat, break, continue, return, work, fence, assert) and the builtins (cpu, core, node, socket, tid, nthreads, ncpus, nnodes, random, uniform, exp, iteration, now, min, max, abs, part, task, task_running, need_resched, yield, sleep, futex_wait, futex_wake, cost, fetch_add, fetch_sub, fetch_or, fetch_and, xchg, cmpxchg)
"#,
    );
    let input = format!("{BASE}[procedures.work]\nbody = \"return 1\"\n");
    check(
        &input,
        r#"
error: procedure name `work` is a keyword of the script language (in `procedures.work`)
  --> scenarios/test.toml:15:13
   |
15 | [procedures.work]
   |             ^^^^
   |
   = valid: a name other than the keywords (let, if, else, while, repeat, break, continue, return, work, fence, assert) and the builtins (cpu, core, node, socket, tid, nthreads, ncpus, nnodes, random, uniform, exp, iteration, now, min, max, abs, part, task, task_running, need_resched, yield, sleep, futex_wait, futex_wake, cost, fetch_add, fetch_sub, fetch_or, fetch_and, xchg, cmpxchg)
"#,
    );
}

#[test]
fn error_fields() {
    let input = BASE.replace("type = \"u64\"", "type = \"u64\", alig = 64");
    let err = load_str("t.toml", &input).unwrap_err();
    assert_eq!(
        (err.line, err.column, err.key.as_str(), err.span_len),
        (6, 43, "structs.counter.fields.value.alig", 4)
    );
    assert_eq!(
        err.valid.as_deref(),
        Some("name, type, size, align, offset, count, anonymous, fields, union, bits, bit_offset, label")
    );
    assert_eq!(err.suggestions, ["align"]);
    assert_eq!(
        err.source_line.as_deref(),
        Some("fields = [{ name = \"value\", type = \"u64\", alig = 64 }]")
    );
}

#[test]
fn error_at_for_later_stages() {
    let loaded = load_str("scenarios/test.toml", BASE).unwrap_or_else(|e| panic!("{e}"));
    let preset = match &loaded.base.doc.machine {
        scenarios::format::schema::MachineRef::Preset(p) => p.clone(),
        other => panic!("{other:?}"),
    };
    let err = scenarios::InputError::at(
        &loaded.source,
        preset.span(),
        "machine",
        format!("unknown machine preset `{}`", preset.get_ref()),
    )
    .with_choices(
        preset.get_ref(),
        &["icelake-sp-1s", "icelake-sp-4s", "zen4-2s"],
    );
    assert_eq!(
        err.to_string(),
        r#"error: unknown machine preset `icelake-sp-2s` (in `machine`)
 --> scenarios/test.toml:2:11
  |
2 | machine = "icelake-sp-2s"
  |           ^^^^^^^^^^^^^^^
  |
  = valid: icelake-sp-1s, icelake-sp-4s, zen4-2s
  = help: did you mean `icelake-sp-1s`?"#
    );
}

#[test]
fn not_utf8() {
    let dir = std::env::temp_dir().join(format!("scenarios-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, b"schema = 1\nname = \"a\xffb\"\n").unwrap();
    let err = load_file(&path).unwrap_err();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((err.line, err.column), (2, 10));
    assert_eq!(err.message, "the file is not valid UTF-8");
}

#[test]
fn unknown_directory_precision_lists_the_valid_ones() {
    check(
        &BASE.replace(
            "machine = \"icelake-sp-2s\"",
            "[machine]\npreset = \"icelake-sp-2s\"\ndirectory = \"broadcast\"",
        ),
        r#"
error: unknown value `broadcast` for `machine.directory`
 --> scenarios/test.toml:4:13
  |
4 | directory = "broadcast"
  |             ^^^^^^^^^^^
  |
  = valid: exact, broadcast-shared
  = help: did you mean `broadcast-shared`?
"#,
    );
}
