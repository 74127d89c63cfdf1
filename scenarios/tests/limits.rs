//! Every limit of `sim_core::limits::Limits`, just inside and just outside:
//! the same scenario loads, builds and runs with the limit at the value it
//! needs, and is refused (an input error naming the key and the
//! `--set-limit` that raises it, or a run without a result) one below.
//! The limits are lowered to the small scenario's size, so every case is
//! cheap.

use scenarios::build::{build_all, BuildOptions};
use scenarios::{load_str_with, Limits};
use sim_core::engine::run;
use sim_core::probe::NoProbe;
use sim_core::SimError;

const BASE: &str = r#"schema = 1
name = "limits"
machine = "icelake-sp-2s"
seed = 1

[run]
iterations = 20
warmup_iterations = 7

[params]
a = 1
b = 2
c = 3

[structs.counter]
fields = [{ name = "value", type = "unsigned long" }]

[instances.counters]
struct = "counter"
kind = "global"
count = 4

[procedures.bump]
params = ["p"]
body = "fetch_add(*p, a)"

[scripts]
increment = """
bump(&counters[tid()].value)
work b
"""

[[threads]]
cpus = "0-1"
script = "increment"

[[variants]]
name = "other"
set = { "params.b" = 5 }
"#;

/// How far a scenario got under some limits.
#[derive(Debug)]
enum Outcome {
    /// Loaded, built and every variant ran.
    Ran,
    /// Refused at load or build: the rendered error.
    Refused(String),
    /// A run without a result.
    Failed(SimError),
}

fn attempt(text: &str, limits: &Limits) -> Outcome {
    attempt_at("limits.toml", text, limits)
}

/// [`attempt`] as if the file were at `path` (its imports are read from
/// beside it).
fn attempt_at(path: &str, text: &str, limits: &Limits) -> Outcome {
    let loaded = match load_str_with(path, text, limits) {
        Ok(l) => l,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    let built = match build_all(&loaded, BuildOptions::default()) {
        Ok(b) => b,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    for variant in &built {
        if let Err(e) = run(&variant.config, &mut NoProbe) {
            return Outcome::Failed(e);
        }
    }
    Outcome::Ran
}

/// One row: a limit, the scenario that tests it, and the value that
/// scenario needs (it runs at that value, and not at one less).
struct Row {
    limit: &'static str,
    text: String,
    needs: u64,
    /// Where the file is taken to be.
    path: &'static str,
}

/// A table, one row per configurable limit with the scenario that needs
/// it raised: long because the limits are many, not because it does much.
fn rows() -> Vec<Row> {
    // A comment makes the documents' estimate (16 bytes per byte of the
    // file, per run) larger than one run's, so the documents' limit is the
    // one that acts.
    let with_sweep = format!(
        "{BASE}\n[sweep]\n\"params.c\" = [1, 2, 3]\n{}",
        "# padding\n".repeat(100)
    );
    let big_instances = BASE.replace("count = 4", "count = 60000");
    let with_import = BASE.replace(
        "[instances.counters]",
        "[structs.flagged]\npahole = { file = \"flagged.pahole\" }\n\n[instances.counters]",
    );
    let zero_time = BASE.replace("bump(&counters[tid()].value)\nwork b\n", "let x = a\n");
    vec![
        Row {
            limit: "scenario_bytes",
            text: BASE.to_string(),
            needs: BASE.len() as u64,
            path: "limits.toml",
        },
        Row {
            limit: "script_bytes",
            text: BASE.to_string(),
            needs: "bump(&counters[tid()].value)\nwork b\n".len() as u64,
            path: "limits.toml",
        },
        Row {
            limit: "params",
            text: BASE.to_string(),
            needs: 3,
            path: "limits.toml",
        },
        // The base and one variant.
        Row {
            limit: "runs",
            text: BASE.to_string(),
            needs: 2,
            path: "limits.toml",
        },
        // Three cases of two variants each.
        Row {
            limit: "runs",
            text: with_sweep.clone(),
            needs: 6,
            path: "limits.toml",
        },
        // The documents of six runs (at 16 bytes per byte of the file, per
        // run, and the base's and the variant's own), and beside them the
        // configurations built and one run: the limit is the process's.
        Row {
            limit: "host_memory_bytes",
            text: with_sweep.clone(),
            needs: (6 + 2) * with_sweep.len() as u64 * 16 + run_estimate_of(&with_sweep),
            path: "limits.toml",
        },
        // One run's data and state, estimated before it runs, beside the
        // documents and configurations of the base and the variant.
        Row {
            limit: "host_memory_bytes",
            text: big_instances.clone(),
            needs: 2 * big_instances.len() as u64 * 16 + run_estimate_of(&big_instances),
            path: "limits.toml",
        },
        Row {
            limit: "iterations",
            text: BASE.to_string(),
            needs: 20,
            path: "limits.toml",
        },
        Row {
            limit: "warmup_iterations",
            text: BASE.to_string(),
            needs: 7,
            path: "limits.toml",
        },
        // Each CPU ends 27 iterations at cycle 0.
        Row {
            limit: "steps_without_time",
            text: zero_time,
            needs: 27,
            path: "limits.toml",
        },
        Row {
            limit: "events",
            text: BASE.to_string(),
            needs: events_of(BASE),
            path: "limits.toml",
        },
        // Each CPU enters its script and calls `bump` once in each of its
        // 27 iterations: charged their lengths, no loop goes round.
        Row {
            limit: "operations",
            text: BASE.to_string(),
            needs: 27 * code_lengths_of(BASE),
            path: "limits.toml",
        },
        // The default budget, `run.max_cycles = 10^10`.
        Row {
            limit: "max_cycles",
            text: BASE.to_string(),
            needs: 10_000_000_000,
            path: "limits.toml",
        },
        // A struct imported from a listing beside the file.
        Row {
            limit: "pahole_bytes",
            text: with_import.clone(),
            needs: std::fs::metadata(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../tests/fixtures/pahole/flagged.pahole"
            ))
            .unwrap()
            .len(),
            path: "../tests/fixtures/pahole/limits.toml",
        },
    ]
}

/// What the build holds besides the documents: every variant's
/// configuration, and room for the largest of their runs.
fn run_estimate_of(text: &str) -> u64 {
    let loaded = load_str_with("limits.toml", text, &Limits::default()).unwrap();
    let built = build_all(&loaded, BuildOptions::default()).unwrap();
    built.iter().map(|v| v.config_bytes).sum::<u64>()
        + built.iter().map(|v| v.run_bytes).max().unwrap()
}

/// The operations of `text`'s script and procedure, together.
fn code_lengths_of(text: &str) -> u64 {
    let loaded = load_str_with("limits.toml", text, &Limits::default()).unwrap();
    let built = build_all(&loaded, BuildOptions::default()).unwrap();
    let program = &built[0].config.program;
    let (scripts, procedures) = (&program.scripts, &program.procedures);
    assert_eq!((scripts.len(), procedures.len()), (1, 1));
    (scripts[0].ops.len() + procedures[0].ops.len()) as u64
}

/// The most events any variant of `text` processes.
fn events_of(text: &str) -> u64 {
    let loaded = load_str_with("limits.toml", text, &Limits::default()).unwrap();
    build_all(&loaded, BuildOptions::default())
        .unwrap()
        .iter()
        .map(|v| run(&v.config, &mut NoProbe).unwrap().events)
        .max()
        .unwrap()
}

fn limits_with(name: &str, value: u64) -> Limits {
    let mut limits = Limits::default();
    limits.set(&format!("{name}={value}")).unwrap();
    limits
}

#[test]
fn every_limit_holds_just_inside_and_refuses_just_outside() {
    let mut failures = Vec::new();
    for row in rows() {
        let inside = attempt_at(row.path, &row.text, &limits_with(row.limit, row.needs));
        if !matches!(inside, Outcome::Ran) {
            failures.push(format!("{} = {}: {inside:?}", row.limit, row.needs));
        }
        let outside = attempt_at(row.path, &row.text, &limits_with(row.limit, row.needs - 1));
        let raise = format!("--set-limit {}=", row.limit);
        let named = match &outside {
            Outcome::Refused(message) => message.contains(&raise),
            Outcome::Failed(e) => e.to_string().contains(&raise),
            Outcome::Ran => false,
        };
        if !named {
            failures.push(format!(
                "{} = {}: expected a refusal naming `{raise}`, got {outside:?}",
                row.limit,
                row.needs - 1
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_limit_has_a_row() {
    let mut tested: Vec<&str> = rows().iter().map(|r| r.limit).collect();
    // Not a scenario's: `data_file_bytes_bounds_every_data_file`.
    tested.push("data_file_bytes");
    for limit in sim_core::limits::LIMITS {
        assert!(
            tested.contains(&limit.name),
            "no row tests `{}`",
            limit.name
        );
    }
}

#[test]
fn limit_errors_read_whole() {
    let limits = limits_with("iterations", 19);
    let Outcome::Refused(message) = attempt(BASE, &limits) else {
        panic!()
    };
    assert_eq!(
        message,
        "error: `run.iterations` is 20, more than the limit of 19\n \
         --> limits.toml:7:14\n  |\n7 | iterations = 20\n  |              ^^\n  |\n  \
         = valid: at most 19 iterations; raise the limit with `--set-limit iterations=20`"
    );
    let limits = limits_with("scenario_bytes", 100);
    let Outcome::Refused(message) = attempt(BASE, &limits) else {
        panic!()
    };
    assert_eq!(
        message,
        format!(
            "error: `limits.toml` is {} bytes, more than the limit of 100 bytes for a scenario \
             file\n--> limits.toml\n = valid: a smaller file, or raise the limit with \
             `--set-limit scenario_bytes={}`",
            BASE.len(),
            BASE.len()
        )
    );
}

/// The fixed bounds (`sim_core::limits::FIXED`) that input can reach: the
/// scenario at the bound builds, one past it is refused naming the key.
/// (Operations per script are out of reach under `script_bytes`, the
/// operand stack under the nesting and call-depth bounds, and events in
/// flight without a simulator bug.)
/// One test on purpose: a table of the bounds, each with the scenario
/// just inside and just outside it, built from the few scenario builders
/// at its top; split, every part would need the builders again.
#[test]
fn fixed_limits_hold_just_inside_and_refuse_just_outside() {
    use sim_core::limits::*;
    let machine = |sockets: u64, nodes: u64, cores: u64| {
        BASE.replace(
            "machine = \"icelake-sp-2s\"",
            &format!(
                "[machine]\npreset = \"icelake-sp-2s\"\nsockets = {sockets}\n\
                 nodes_per_socket = {nodes}\nl3_per_node = 1\ncores_per_l3 = {cores}\n\
                 threads_per_core = 1\n"
            ),
        )
        // The machine table ends at the next table; keep `seed` above it.
        .replace("seed = 1\n", "")
        .replacen("schema = 1\n", "schema = 1\nseed = 1\n", 1)
    };
    let padded = |pad: u64, count: u64| {
        BASE.replace(
            "fields = [{ name = \"value\", type = \"unsigned long\" }]",
            &format!(
                "fields = [{{ name = \"value\", type = \"unsigned long\" }}, \
                 {{ name = \"pad\", size = {pad} }}]"
            ),
        )
        .replace("count = 4", &format!("count = {count}"))
    };
    let script = |body: String| {
        BASE.replace(
            "increment = \"\"\"\nbump(&counters[tid()].value)\nwork b\n\"\"\"",
            &format!("increment = \"\"\"\n{body}work 1\n\"\"\""),
        )
    };
    let ifs = |n: usize| format!("{}{}", "if 1 {\n".repeat(n), "}\n".repeat(n));
    let lets = |n: usize| {
        (0..n)
            .map(|k| format!("let x{k} = {k}\n"))
            .collect::<String>()
    };
    let calls = |n: usize| {
        BASE.replace(
            "body = \"fetch_add(*p, a)\"",
            "body = \"if p > 0 { bump(p - 1) }\"",
        )
        .replace("bump(&counters[tid()].value)", &format!("bump({n})"))
    };
    // (what, at the bound, one past it, text of the error past it)
    let rows: Vec<(&str, String, String, &str)> = vec![
        (
            "machine CPUs",
            machine(1, 1, MACHINE_CPUS),
            machine(1, 1, MACHINE_CPUS + 1),
            "out of range 1..=4096",
        ),
        (
            "machine sockets",
            machine(MACHINE_SOCKETS as u64, 1, 1),
            machine(MACHINE_SOCKETS as u64 + 1, 1, 1),
            "out of range 1..=64",
        ),
        (
            "machine nodes",
            machine(1, MACHINE_NODES, 1),
            machine(1, MACHINE_NODES + 1, 1),
            "out of range 1..=1024",
        ),
        (
            "struct size",
            padded(STRUCT_BYTES - 8, 4),
            padded(STRUCT_BYTES - 7, 4),
            "past the largest struct, 1048576 bytes",
        ),
        (
            "instance elements",
            BASE.replace("count = 4", &format!("count = {INSTANCE_ELEMENTS}")),
            BASE.replace("count = 4", &format!("count = {}", INSTANCE_ELEMENTS + 1)),
            "more than 65536 elements, the fixed bound `instance elements`",
        ),
        (
            "simulated memory",
            padded(
                STRUCT_BYTES / 4 - 8,
                SIMULATED_MEMORY_BYTES / (STRUCT_BYTES / 4),
            ),
            padded(
                STRUCT_BYTES / 4 - 8,
                SIMULATED_MEMORY_BYTES / (STRUCT_BYTES / 4) + 1,
            ),
            "MiB",
        ),
        (
            "script nesting",
            script(ifs(SCRIPT_NESTING)),
            script(ifs(SCRIPT_NESTING + 1)),
            "nesting is too deep",
        ),
        (
            "script locals",
            script(lets(SCRIPT_LOCALS)),
            script(lets(SCRIPT_LOCALS + 1)),
            "uses more than 256 locals",
        ),
    ];
    let mut failures = Vec::new();
    for (what, inside, outside, error) in rows {
        let build = |text: &str| -> Result<(), String> {
            let loaded = load_str_with("limits.toml", text, &Limits::default())
                .map_err(|e| e.to_string())?;
            build_all(&loaded, BuildOptions::default())
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        if let Err(e) = build(&inside) {
            failures.push(format!("{what} at the bound: {e}"));
        }
        match build(&outside) {
            Ok(()) => failures.push(format!("{what} past the bound: built")),
            Err(e) if !e.contains(error) => {
                failures.push(format!("{what} past the bound: expected `{error}` in {e}"))
            }
            Err(_) => {}
        }
    }
    // Calls nest at most CALL_DEPTH - 1 deep below the script.
    let depth = CALL_DEPTH - 2;
    for (n, fails) in [(depth, false), (depth + 1, true)] {
        let loaded = load_str_with("limits.toml", &calls(n), &Limits::default()).unwrap();
        let built = build_all(&loaded, BuildOptions::default()).unwrap();
        let result = run(&built[0].config, &mut NoProbe);
        match (&result, fails) {
            (Ok(_), false) => {}
            (Err(SimError::Script { message, .. }), true)
                if message.contains("calls nested deeper than 256") => {}
            _ => failures.push(format!("call depth {n}: {result:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `data_file_bytes` bounds what `merge` and `validate --data` read: a
/// matrix of exactly the limit is read, one byte more is refused naming the
/// flag that raises it, and a shard whose files lead to an endless device
/// is refused without reading it to the end.
#[test]
fn data_file_bytes_bounds_every_data_file() {
    use scenarios::tools::validate::matrix;
    let path = std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/c2c/cascadelake-sp-gold6242-2s.csv"
    ));
    let size = std::fs::metadata(path).unwrap().len();
    assert!(matrix::read(path, size).is_ok());
    assert_eq!(
        matrix::read(path, size - 1).unwrap_err(),
        format!(
            "cannot read the matrix `{}`: it is larger than the limit of {} bytes; raise the \
             limit with `--set-limit data_file_bytes=N`",
            path.display(),
            size - 1
        )
    );
    #[cfg(unix)]
    {
        let dir = std::env::temp_dir().join(format!("bounce-limits-shard-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("shard.json")).unwrap();
        let error = scenarios::report::output::read_shard(&dir, 1000).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            error,
            format!(
                "cannot read `{}`: it is larger than the limit of 1000 bytes (raise it with \
                 `--set-limit data_file_bytes=N`)",
                dir.join("shard.json").display()
            )
        );
    }
}
