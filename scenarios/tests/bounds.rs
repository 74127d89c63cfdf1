//! Every bound real (issue 19): the reproducers the loader, the builder
//! and a run meet, each with its whole rendered message. (What only the
//! binary meets is in `tests/bounds_cli.rs`.)

use scenarios::build::{build_all, BuildOptions};
use scenarios::load_str;
use scenarios::run::results::run_variant;

/// A scenario of one struct `s` (`fields`, `struct_extra` lines above
/// them), one global instance `g`, one CPU running `script` under `run`.
fn scenario(struct_extra: &str, fields: &str, script: &str, run: &str) -> String {
    format!(
        "schema = 1\nname = \"t\"\nmachine = \"icelake-sp-2s\"\nseed = 1\n\n[run]\n{run}\n\n\
         [structs.s]\n{struct_extra}fields = {fields}\n\n[instances.g]\nstruct = \"s\"\n\
         kind = \"global\"\n\n[scripts]\nmain = \"\"\"\n{script}\n\"\"\"\n\n[[threads]]\n\
         cpus = \"0\"\nscript = \"main\"\n"
    )
}

/// The rendered error of loading and building `text` (as `t.toml`).
#[track_caller]
fn error_of(text: &str) -> String {
    let loaded = match load_str("t.toml", text) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    match build_all(&loaded, BuildOptions::default()) {
        Ok(_) => panic!("expected an error, and it built:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// The rendered failure of running the base of `text`.
#[track_caller]
fn failure_of(text: &str) -> String {
    let loaded = load_str("t.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let built = build_all(&loaded, BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    match run_variant(&built[0]) {
        Ok(_) => panic!("expected a failure, and it ran"),
        Err(f) => f.error.to_string(),
    }
}

/// Defect 3: a size past `u32` became a 0- or 1-byte field, an alignment
/// of 2^40 "0, not a power of two". Each is refused with the value written.
#[test]
fn sizes_offsets_and_alignments_are_checked_before_any_narrowing() {
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "huge", size = 1099511627776 }, { name = "a", type = "unsigned long" }]"#,
            "g.a = 1",
            "iterations = 3",
        )),
        r#"error: `structs.s.fields.huge.size` is 1099511627776, more than 1048576 bytes, the fixed bound `struct size`
  --> t.toml:10:35
   |
10 | fields = [{ name = "huge", size = 1099511627776 }, { name = "a", type = "unsigned long" }]
   |                                   ^^^^^^^^^^^^^
   |
   = valid: at most 1048576 (`bounce limits` lists the fixed bounds)"#
    );
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "huge", size = 4294967297 }]"#,
            "g.huge = 1",
            "iterations = 3",
        )),
        r#"error: `structs.s.fields.huge.size` is 4294967297, more than 1048576 bytes, the fixed bound `struct size`
  --> t.toml:10:35
   |
10 | fields = [{ name = "huge", size = 4294967297 }]
   |                                   ^^^^^^^^^^
   |
   = valid: at most 1048576 (`bounce limits` lists the fixed bounds)"#
    );
    assert_eq!(
        error_of(&scenario(
            "align = 1099511627776\n",
            r#"[{ name = "a", type = "unsigned long" }]"#,
            "g.a = 1",
            "iterations = 3",
        )),
        r#"error: `structs.s.align` is 1099511627776, more than 1048576 bytes, the fixed bound `struct size`
  --> t.toml:10:9
   |
10 | align = 1099511627776
   |         ^^^^^^^^^^^^^
   |
   = valid: at most 1048576 (`bounce limits` lists the fixed bounds)"#
    );
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "a", type = "unsigned long", align = 1099511627776 }]"#,
            "g.a = 1",
            "iterations = 3",
        )),
        r#"error: `structs.s.fields.a.align` is 1099511627776, more than 1048576 bytes, the fixed bound `struct size`
  --> t.toml:10:57
   |
10 | fields = [{ name = "a", type = "unsigned long", align = 1099511627776 }]
   |                                                         ^^^^^^^^^^^^^
   |
   = valid: at most 1048576 (`bounce limits` lists the fixed bounds)"#
    );
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "a", type = "unsigned long", count = 4294967297 }]"#,
            "g.a[0] = 1",
            "iterations = 3",
        )),
        r#"error: `structs.s.fields.a.count` is 4294967297, more than 65536 elements, the fixed bound `instance elements`
  --> t.toml:10:57
   |
10 | fields = [{ name = "a", type = "unsigned long", count = 4294967297 }]
   |                                                         ^^^^^^^^^^
   |
   = valid: at most 65536 (`bounce limits` lists the fixed bounds)"#
    );
}

/// A huge offset is blamed on `offset`, not on `size`.
#[test]
fn a_field_past_the_largest_struct_names_the_key_that_put_it_there() {
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "a", type = "unsigned long", offset = 1048572 }]"#,
            "g.a = 1",
            "iterations = 3",
        )),
        r#"error: the field would end at byte 1048580 (8 bytes from offset 1048572), past the largest struct, 1048576 bytes (in `structs.s.fields.a.offset`)
  --> t.toml:10:58
   |
10 | fields = [{ name = "a", type = "unsigned long", offset = 1048572 }]
   |                                                          ^^^^^^^"#
    );
}

/// Defect 4: a bitfield's bits are checked against its storage unit's
/// size, not against 64 bits.
#[test]
fn a_bitfield_wider_than_its_storage_unit_is_refused() {
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "a", type = "unsigned char", bits = 4, bit_offset = 60 }]"#,
            "g.a = 15\nfence\nassert g.a == 15",
            "iterations = 3",
        )),
        r#"error: the bitfield's bits 60..64 do not fit its storage unit `unsigned char` of 8 bits (in `structs.s.fields.a.bits`)
  --> t.toml:10:56
   |
10 | fields = [{ name = "a", type = "unsigned char", bits = 4, bit_offset = 60 }]
   |                                                        ^"#
    );
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "a", type = "unsigned int", bits = 40 }]"#,
            "g.a = 1",
            "iterations = 3",
        )),
        r#"error: the bitfield's bits 0..40 do not fit its storage unit `unsigned int` of 32 bits (in `structs.s.fields.a.bits`)
  --> t.toml:10:55
   |
10 | fields = [{ name = "a", type = "unsigned int", bits = 40 }]
   |                                                       ^^"#
    );
}

/// Defect 6: a run stopped by time before any measured iteration has no
/// figure per iteration; it is a run without a result, not 0.000.
#[test]
fn a_run_that_completes_no_iteration_says_so() {
    assert_eq!(
        failure_of(&scenario(
            "",
            r#"[{ name = "a", type = "unsigned long" }]"#,
            "work 1000",
            "cycles = 500",
        )),
        "no iteration completed: the run ended at cycle 500 (`run.cycles`) before any CPU \
         finished a measured iteration, so every figure per iteration would be 0/0; no result is \
         reported. Raise `run.cycles`."
    );
    assert_eq!(
        failure_of(&scenario(
            "",
            r#"[{ name = "a", type = "unsigned long" }]"#,
            "work 100",
            "cycles = 500\nwarmup_iterations = 10",
        )),
        "no iteration completed: the run ended at cycle 500 (`run.cycles`) before any CPU \
         finished a measured iteration (after 10 of warm-up), so every figure per iteration \
         would be 0/0; no result is reported. Raise `run.cycles` or lower \
         `run.warmup_iterations`."
    );
}

/// Defect 6: one iteration of 4e18 cycles has a mean of 4e18 cycles, not
/// a wrapped hundredth of it.
#[test]
fn the_mean_of_a_huge_iteration_does_not_wrap() {
    let mut limits = scenarios::Limits::default();
    limits.set("max_cycles=4611686018427387904").unwrap();
    let text = scenario(
        "",
        r#"[{ name = "a", type = "unsigned long" }]"#,
        "work 4000000000000000000",
        "iterations = 1\nmax_cycles = 4611686018427387904",
    );
    let loaded = scenarios::load_str_with("t.toml", &text, &limits).unwrap();
    let built = build_all(&loaded, BuildOptions::default()).unwrap();
    let result = run_variant(&built[0]).unwrap();
    assert_eq!(result.iteration_cycles.mean(), 4_000_000_000_000_000_000.0);
}

/// Defect 4, from a pahole import: a listed bitfield wider than its unit.
#[test]
fn a_listed_bitfield_wider_than_its_storage_unit_is_refused() {
    let dir = std::env::temp_dir().join(format!("bounce-bounds-wide-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("wide.pahole"),
        "struct wide {\n\tunsigned int               a:40;                 /*     0: 0  4 */\n\n\
         \t/* size: 8, cachelines: 1, members: 1 */\n};\n",
    )
    .unwrap();
    let text = format!(
        "{}\n[structs.wide]\npahole = {{ file = \"wide.pahole\" }}\n",
        scenario(
            "",
            r#"[{ name = "a", type = "unsigned long" }]"#,
            "g.a = 1",
            "iterations = 3"
        )
    );
    let path = dir.join("t.toml");
    let e = load_str(path.to_str().unwrap(), &text)
        .unwrap_err()
        .to_string();
    let listing = dir.join("wide.pahole");
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        e,
        format!(
            "error: the listing cannot be laid out: wide.a: `bits`: the bitfield's bits 0..40 do \
             not fit its storage unit `unsigned int` of 32 bits (in `structs.wide.pahole`)\n--> \
             {}:1:1",
            listing.display()
        )
    );
}

/// Script arithmetic wraps in two's complement, as documented (the
/// kernel's own arithmetic does, under `-fno-strict-overflow`).
#[test]
fn script_integer_overflow_wraps() {
    let text = scenario(
        "",
        r#"[{ name = "a", type = "long" }]"#,
        "let x = 9223372036854775807\nx = x + 1\nassert x == -9223372036854775807 - 1\n\
         assert x * 2 == 0\nassert -x == x\nwork 1",
        "iterations = 1",
    );
    let loaded = load_str("t.toml", &text).unwrap();
    let built = build_all(&loaded, BuildOptions::default()).unwrap();
    assert!(run_variant(&built[0]).is_ok());
}

/// Defect 8: an access across two lines took only the first. Refused when
/// the scenario is built, naming the access, the field's offset and size;
/// plain loads and stores as well as atomics, and any element or index of
/// an array that crosses a line.
#[test]
fn an_access_across_two_lines_is_refused() {
    let straddling =
        r#"[{ name = "pad", size = 60 }, { name = "a", type = "unsigned long", offset = 60 }]"#;
    assert_eq!(
        error_of(&scenario(
            "",
            straddling,
            "fetch_add(g.a, 1)",
            "iterations = 3"
        )),
        r#"error: `g.a` straddles two cache lines: its 8 bytes at offset 60 of struct `s` cross a 64-byte line boundary, and an access here takes one line (a locked access across two lines is an x86 split lock, which bounce does not model) (in `scripts.main`)
  --> t.toml:18:11
   |
18 | fetch_add(g.a, 1)
   |           ^
   |
   = valid: an `offset` or `align` of `a` in `structs.s` that keeps it inside one line"#
    );
    assert_eq!(
        error_of(&scenario(
            "",
            straddling,
            "let x = 1\ng.a = x",
            "iterations = 3"
        )),
        r#"error: `g.a` straddles two cache lines: its 8 bytes at offset 60 of struct `s` cross a 64-byte line boundary, and an access here takes one line (a locked access across two lines is an x86 split lock, which bounce does not model) (in `scripts.main`)
  --> t.toml:19:1
   |
19 | g.a = x
   | ^
   |
   = valid: an `offset` or `align` of `a` in `structs.s` that keeps it inside one line"#
    );
    // An array of 6-byte raw fields (aligned to 2, as a member of that size
    // would be) from offset 2: index 10 is at bytes 62..68, across the line
    // at 64.
    assert_eq!(
        error_of(&scenario(
            "",
            r#"[{ name = "head", size = 1 }, { name = "v", size = 6, count = 12 }]"#,
            "let i = random(12)\ng.v[i] = 1",
            "iterations = 3"
        )),
        r#"error: `g.v` straddles two cache lines: its 6 bytes at offset 62 of struct `s` (index 10) cross a 64-byte line boundary, and an access here takes one line (a locked access across two lines is an x86 split lock, which bounce does not model) (in `scripts.main`)
  --> t.toml:19:1
   |
19 | g.v[i] = 1
   | ^
   |
   = valid: an `offset` or `align` of `v` in `structs.s` that keeps it inside one line"#
    );
    // Inside one line, the same field is fine.
    let inside = r#"[{ name = "pad", size = 56 }, { name = "a", type = "unsigned long" }]"#;
    let loaded = load_str(
        "t.toml",
        &scenario("", inside, "fetch_add(g.a, 1)", "iterations = 3"),
    )
    .unwrap();
    build_all(&loaded, BuildOptions::default()).unwrap();
}

/// Smaller items of issue 19: errors that named no place, or the wrong one.
#[test]
fn errors_name_the_place_at_fault() {
    // A dotted key 85 parts deep: the parser's recursion limit, at 1:1 and
    // with no key before.
    let deep = format!(
        "schema = 1\nmachine = \"icelake-sp-2s\"\n[run]\niterations = 1\n[{}]\nx = 1\n",
        vec!["a"; 85].join(".")
    );
    let header = format!("[{}]", vec!["a"; 85].join("."));
    assert_eq!(
        error_of(&deep),
        format!(
            "error: invalid TOML: the key `a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a....` has 85 \
             dotted parts, more than the parser takes (79)\n --> t.toml:5:1\n  |\n5 | {header}\n  \
             | {}\n  |\n  = valid: keys of at most 79 parts",
            "^".repeat(header.len())
        )
    );
    // `cores_per_l3 = 10^6` was blamed on `machine.sockets`; out of its
    // own range now, a count within it that makes too many CPUs is still
    // blamed on itself.
    let machine = scenario(
        "",
        r#"[{ name = "a", type = "long" }]"#,
        "g.a = 1",
        "iterations = 1",
    )
    .replace(
        "machine = \"icelake-sp-2s\"\nseed = 1\n",
        "seed = 1\n[machine]\npreset = \"icelake-sp-2s\"\ncores_per_l3 = 2000\n",
    );
    assert_eq!(
        error_of(&machine),
        r#"error: the machine would have 8000 CPUs; the limit is 4096 (sockets x nodes_per_socket x l3_per_node x cores_per_l3 x threads_per_core) (in `machine.cores_per_l3`)
 --> t.toml:6:16
  |
6 | cores_per_l3 = 2000
  |                ^^^^"#
    );
    // Simulated memory exceeded by per-CPU instances: no line or column.
    let per_cpu = scenario(
        "",
        r#"[{ name = "a", type = "long" }, { name = "pad", size = 1000000 }]"#,
        "g.a = 1",
        "iterations = 1",
    )
    .replace("kind = \"global\"", "kind = \"per-cpu\"")
    .replace(
        "[scripts]",
        "[instances.h]\nstruct = \"s\"\nkind = \"per-cpu\"\n\n[scripts]",
    );
    assert_eq!(
        error_of(&per_cpu),
        r#"error: the per-CPU areas (2000128 bytes per CPU, for 2 per-CPU instance(s), x 160 CPUs) would take the scenario's memory to 320020480 bytes, more than the 256 MiB of simulated memory (in `instances.h.kind`)
  --> t.toml:18:8
   |
18 | kind = "per-cpu"
   |        ^^^^^^^^^"#
    );
}

/// A script's columns count an escape (`\t`, `\"`, `\\`) as the one
/// character the script sees: the error points at the name, not 20
/// columns before it.
#[test]
fn script_columns_count_escapes_as_one_character() {
    let text = scenario(
        "",
        r#"[{ name = "a", type = "long" }]"#,
        r"let x = 1\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t + unknown_name",
        "iterations = 1",
    );
    assert_eq!(
        error_of(&text),
        r#"error: unknown name `unknown_name`: not a local, a procedure parameter or a scenario parameter (in `scripts.main`)
  --> t.toml:18:53
   |
18 | let x = 1\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t + unknown_name
   |                                                     ^^^^^^^^^^^^
   |
   = valid: a local declared before this line (`let NAME = ...`) or a scenario parameter (`[params]`); there are none here"#
    );
    // In a one-line basic string, `\"` and `\\` are one character each.
    let one_line = scenario(
        "",
        r#"[{ name = "a", type = "long" }]"#,
        "g.a = 1",
        "iterations = 1",
    )
    .replace(
        "main = \"\"\"\ng.a = 1\n\"\"\"",
        r#"main = "let y = 1 # \"\\\"\nlet z = unknown_name""#,
    );
    assert_eq!(
        error_of(&one_line),
        r#"error: unknown name `unknown_name`: not a local, a procedure parameter or a scenario parameter (in `scripts.main`)
  --> t.toml:17:37
   |
17 | main = "let y = 1 # \"\\\"\nlet z = unknown_name"
   |                                     ^^^^^^^^^^^^
   |
   = valid: a local in scope here: y; a scenario parameter: (none)"#
    );
}
