//! Pointers in the script language: `&inst.field` makes a pointer that
//! carries the field's address, size and identity; `*p` is that field as a
//! place, for loads, stores and atomics. Locks written once as procedures
//! take the lock they guard as a pointer.

use sim_core::engine::StopRule;
use sim_core::probe::AccessKind;
use sim_core::SimError;
use testkit::*;

const SPIN_LOCK: &str = "while xchg(*p, 1) != 0 {\n  while *p != 0 { }\n}";
const SPIN_UNLOCK: &str = "*p = 0";

fn lock_setup<'a>(script: &'a str) -> Setup<'a> {
    Setup::new(icelake())
        .structs(vec![strukt(
            "guarded",
            vec![field("lock", "int"), field("count", "long")],
        )])
        .instances(vec![global("g", "guarded", 0)])
        .procedure("spin_lock", vec!["p"], SPIN_LOCK)
        .procedure("spin_unlock", vec!["p"], SPIN_UNLOCK)
        .script("s", script)
        .stop(StopRule::Iterations(50))
}

#[test]
fn a_lock_taken_through_a_pointer_excludes_every_other_cpu() {
    let script = "spin_lock(&g.lock)\ng.count = g.count + 1\nspin_unlock(&g.lock)\nwork 30";
    let (_, log) = lock_setup(script).threads(0..8, "s").run();
    // Each increment stores count + 1; under mutual exclusion the stored
    // counts are exactly 1..=400, each once.
    let count_address = {
        let config = lock_setup(script).threads(0..8, "s").build();
        address(&config, "g", 0, "count")
    };
    let mut stored: Vec<i64> = log
        .log
        .iter()
        .filter_map(|s| match s {
            Seen::StorePosted(_, _, a, v) if *a == count_address => Some(*v),
            Seen::Access(a) if a.address == count_address && a.kind == AccessKind::Store => {
                Some(a.value)
            }
            _ => None,
        })
        .collect();
    stored.sort_unstable();
    assert_eq!(stored, (1..=400).collect::<Vec<i64>>());
}

#[test]
fn accesses_through_a_pointer_are_attributed_to_the_field() {
    let script = "spin_lock(&g.lock)\nspin_unlock(&g.lock)";
    let config = lock_setup(script).threads(0..2, "s").build();
    let lock = address(&config, "g", 0, "lock");
    let (_, log) = run_config(&config);
    let lock_field = log
        .accesses()
        .find(|a| a.address == lock)
        .map(|a| a.field_id)
        .expect("the lock was accessed");
    assert_eq!(
        config.program.field_names[lock_field as usize],
        (0, 0),
        "g.lock is field 0 of instance 0"
    );
    assert!(log
        .accesses()
        .filter(|a| a.address == lock)
        .all(|a| a.size_bytes == 4));
}

/// A number the compiler cannot tell from a pointer (it comes from memory)
/// is checked when `*` takes it. (`*12345` is a compile error:
/// `script_errors.rs`.)
#[test]
fn a_number_that_is_not_a_pointer_is_a_script_error() {
    let setup = lock_setup("g.count = 12345\nfence\nlet p = g.count\n*p = 1").thread(0, "s");
    match setup.run_err() {
        SimError::Script { message, .. } => {
            assert_eq!(
                message,
                "`*` of 12345, which is not a pointer made by `&inst.field`"
            )
        }
        other => panic!("expected a script error, got {other}"),
    }
}

#[test]
fn address_of_needs_a_field() {
    let error = sim_core::script::parse::parse_block("let p = &x").unwrap_err();
    assert!(
        error.message.contains("`&` takes a field"),
        "{}",
        error.message
    );
}

#[test]
fn part_of_a_word_is_a_narrower_pointer_to_the_same_field() {
    // The low byte and the high half of a 4-byte word, as a C union gives
    // them: stores through the parts change only their bytes.
    let script = "g.lock = 0x11223344\nfence\nlet lo = part(&g.lock, 0, 1)\nlet hi = part(&g.lock, 2, 2)\n*lo = 0\n*hi = 0x7777\nfence\nassert g.lock == 0x77773300\nassert *lo == 0\nassert *hi == 0x7777";
    let config = lock_setup(script)
        .thread(0, "s")
        .stop(StopRule::Iterations(1))
        .build();
    let lock = address(&config, "g", 0, "lock");
    let (_, log) = run_config(&config);
    let sizes: Vec<(u64, u32, u32)> = log
        .accesses()
        .filter(|a| matches!(a.kind, AccessKind::Store | AccessKind::StoreDrain))
        .map(|a| (a.address - lock, a.size_bytes, a.field_id))
        .collect();
    assert_eq!(sizes, vec![(0, 4, 0), (0, 1, 0), (2, 2, 0)]);
}

#[test]
fn a_part_outside_the_field_is_a_script_error() {
    for (script, expected) in [
        (
            "let x = part(&g.lock, 2, 4)",
            "part(p, 2, 4): the part must lie inside the 4 bytes `p` points to",
        ),
        (
            "let x = part(&g.lock, -1, 1)",
            "part(p, -1, 1): the part must lie inside the 4 bytes `p` points to",
        ),
        (
            "g.count = 7\nfence\nlet x = part(g.count, 0, 1)",
            "`part` of 7, which is not a pointer made by `&inst.field`",
        ),
    ] {
        match lock_setup(script).thread(0, "s").run_err() {
            SimError::Script { message, .. } => assert_eq!(message, expected),
            other => panic!("expected a script error, got {other}"),
        }
    }
}

/// A pointer's bits can be changed by arithmetic once it has been through
/// memory (the compiler no longer knows it is one): a forgery that names a
/// field the program does not have, or bytes its field does not own, is not
/// a pointer. Only what `&inst.field` and `part()` could have made is.
#[test]
fn a_forged_pointer_is_a_script_error() {
    // Bits 0-39 are the address, 40-43 the size, 44 up the field id.
    let field_shift = 44;
    let cases = [
        // Field id 5: `guarded` has two fields, so ids 0 and 1.
        (format!("5 << {field_shift}"), true),
        // Four bytes past `lock` is padding before `count`.
        ("4".to_string(), true),
        // `count`'s bytes under `lock`'s identity.
        ("8".to_string(), true),
        // A 4-byte part of `count`, under `count`'s identity: a pointer.
        (format!("(1 << {field_shift}) + 8"), false),
    ];
    for (change, forged) in cases {
        let script = format!(
            "g.count = &g.lock\nfence\nlet p = g.count + ({change})\ng.count = p\nfence\nlet q = g.count\n*q = 1"
        );
        let setup = lock_setup(&script)
            .thread(0, "s")
            .stop(StopRule::Iterations(1));
        if !forged {
            setup.run();
            continue;
        }
        match setup.run_err() {
            SimError::Script { message, .. } => {
                assert!(
                    message.starts_with("`*` of ")
                        && message.ends_with(", which is not a pointer made by `&inst.field`"),
                    "{change}: {message}"
                )
            }
            other => panic!("{change}: expected a script error, got {other}"),
        }
    }
}
