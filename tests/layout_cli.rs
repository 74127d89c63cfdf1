//! `bounce layout`: the pahole-style view of a scenario's structs, with a
//! run's per-member traffic, and its errors.

mod common;
use common::{assert_exit, bounce, stderr, stdout};

const NESTED: &str = "tests/fixtures/nested-layout.toml";

#[test]
fn nested_struct_listing_as_pahole_shows_it() {
    let o = bounce(&["layout", NESTED]);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "layout of `nested-layout` variant `base` on icelake-sp-2s (64-byte lines, adjacent-line prefetch: a miss also reads the other line of its 128-byte pair)

/* instances: m (global) */
struct memcg {
    struct css {
        16 bytes              refcnt;  /*     0    16 */
        pointer               parent;  /*    16     8 */
    } css;                             /*     0    24 */
    struct page_counter {
        atomic_long_t         usage;   /*    24     8 */
        unsigned long         min;     /*    32     8 */
        unsigned long         max;     /*    40     8 */
        struct page_counter * parent;  /*    48     8 */
    } memory;                          /*    24    32 */
    union {
        long                  pages;   /*    56     8 */
        int                   bytes;   /*    56     4 */
    };                                 /*    56     8 */
    /* --- cacheline 1 boundary (64 bytes) --- */
    struct slot {
        char                  tag;     /*    64     1 */
        /* XXX 7 bytes hole, try to pack */
        long                  value;   /*    72     8 */
    } slots[4];                        /*    64    64 */

    /* size: 128, cachelines: 2, members: 4 */
};
"
    );
}

#[test]
fn a_variant_moves_the_nested_counter_and_the_run_shows_who_touched_what() {
    let o = bounce(&["layout", NESTED, "--variant", "usage-alone", "--run"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let line = |needle: &str| -> &str {
        out.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in\n{out}"))
    };
    assert!(out.starts_with(
        "layout of `nested-layout` variant `usage-alone` on icelake-sp-2s (64-byte lines, adjacent-line prefetch: a miss also reads the other line of its 128-byte pair), \
         after 800 iterations on 4 CPUs in "
    ));
    assert!(line("loads").ends_with("loads    stores   atomics      HITM"));
    // `usage` alone on line 1 (64..128), `min` on the next: holes and
    // boundaries as a compiler leaves them.
    assert!(
        line(" usage __attribute__((__aligned__(64)));").contains("/*    64     8 */"),
        "{out}"
    );
    assert!(
        line(" min __attribute__((__aligned__(64)));").contains("/*   128     8 */"),
        "{out}"
    );
    assert!(out.contains("        /* XXX 56 bytes hole, try to pack */\n        /* --- cacheline 2 boundary (128 bytes) --- */\n"));
    assert!(out.contains("        /* XXX 40 bytes tail padding */\n"));
    assert!(out.contains("    /* size: 320, cachelines: 5, members: 4 */\n    /* sum members: 224, holes: 1, sum holes: 40 */\n    /* padding: 56 */\n"));
    // Every CPU's atomic on usage, 4 x 200, and the transfers they caused;
    // `min` untouched shows no traffic.
    let usage: Vec<u64> = line(" usage __attribute__((__aligned__(64)));")
        .split("*/")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(&usage[..3], &[0, 0, 800]);
    assert!(usage[3] > 0 && usage[3] <= 800, "{usage:?}");
    assert!(line(" min __attribute__((__aligned__(64)));").ends_with("*/"));
    let parent: Vec<&str> = line("pointer")
        .split("*/")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(&parent[..3], &["800", "0", "0"]);
    // The nested struct's line sums its members.
    let memory: Vec<&str> = line("} memory;")
        .split("*/")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(&memory[..3], &["800", "0", "800"]);
}

#[test]
fn one_struct_on_request() {
    let o = bounce(&[
        "layout",
        "scenarios/shipped/false-sharing.toml",
        "--struct",
        "counter",
        "--variant",
        "padded",
    ]);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "layout of `false-sharing` variant `padded` on icelake-sp-2s (64-byte lines, adjacent-line prefetch: a miss also reads the other line of its 128-byte pair)

/* instances: counters[8] (global) */
struct counter {
    unsigned long value __attribute__((__aligned__(64)));  /*     0     8 */

    /* size: 64, cachelines: 1, members: 1 */
    /* padding: 56 */
};
"
    );
}

#[test]
fn unknown_struct_or_variant_is_a_usage_error_with_a_suggestion() {
    let o = bounce(&["layout", NESTED, "--struct", "memcgg"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: `tests/fixtures/nested-layout.toml` has no struct `memcgg` (did you mean `memcg`?); \
         structs: page_counter, css, stat, slot, memcg\n"
    );
    assert!(stdout(&o).is_empty());
    let o = bounce(&["layout", NESTED, "--variant", "usage-alne", "--run"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: `tests/fixtures/nested-layout.toml` has no variant `usage-alne` (did you mean \
         `usage-alone`?); variants: base, usage-alone\n"
    );
    let o = bounce(&["layout", "tests/fixtures/no-such-file.toml"]);
    assert_exit(&o, 2);
}

/// Two structs placed, one named by the script: the other's instance is a
/// library's that this variant never calls.
const ONE_NAMED: &str = r#"schema = 1
name = "one-named"
machine = "icelake-sp-2s"
seed = 1

[run]
iterations = 5

[structs.counter]
fields = [{ name = "value", type = "u64" }]

[structs.spare]
fields = [{ name = "word", type = "u64" }]

[instances.c]
struct = "counter"
kind = "global"

[instances.unused]
struct = "spare"
kind = "global"

[scripts]
inc = "fetch_add(c.value, 1)"

[[threads]]
name = "t"
cpus = "0"
script = "inc"
"#;

#[test]
fn without_a_struct_named_it_shows_the_structs_running_code_names() {
    let tmp = common::TempDir::new("layout-one-named");
    let file = tmp.join("one-named.toml");
    std::fs::write(&file, ONE_NAMED).unwrap();
    let o = bounce(&["layout", &file]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("struct counter {"), "{out}");
    assert!(!out.contains("struct spare {"), "{out}");
    assert!(
        out.trim_end().ends_with(
            "not shown: `spare` (placed in memory, but no script or procedure this variant \
             runs names its instances; --struct NAME shows one)"
        ),
        "{out}"
    );
    // Asked for, it is shown.
    let o = bounce(&["layout", &file, "--struct", "spare"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("struct spare {"), "{}", stdout(&o));
}
