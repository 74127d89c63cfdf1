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
    let loaded = match load_str_with("limits.toml", text, limits) {
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
}

fn rows() -> Vec<Row> {
    let with_sweep = format!("{BASE}\n[sweep]\n\"params.c\" = [1, 2, 3]\n");
    let zero_time = BASE.replace("bump(&counters[tid()].value)\nwork b\n", "let x = a\n");
    vec![
        Row {
            limit: "scenario_bytes",
            text: BASE.to_string(),
            needs: BASE.len() as u64,
        },
        Row {
            limit: "script_bytes",
            text: BASE.to_string(),
            needs: "bump(&counters[tid()].value)\nwork b\n".len() as u64,
        },
        Row {
            limit: "params",
            text: BASE.to_string(),
            needs: 3,
        },
        // The base and one variant.
        Row {
            limit: "runs",
            text: BASE.to_string(),
            needs: 2,
        },
        // Three cases of two variants each.
        Row {
            limit: "runs",
            text: with_sweep.clone(),
            needs: 6,
        },
        Row {
            limit: "host_memory_bytes",
            text: with_sweep.clone(),
            needs: 6 * with_sweep.len() as u64 * 16,
        },
        Row {
            limit: "iterations",
            text: BASE.to_string(),
            needs: 20,
        },
        Row {
            limit: "warmup_iterations",
            text: BASE.to_string(),
            needs: 7,
        },
        // Each CPU ends 27 iterations at cycle 0.
        Row {
            limit: "steps_without_time",
            text: zero_time,
            needs: 27,
        },
        Row {
            limit: "events",
            text: BASE.to_string(),
            needs: events_of(BASE),
        },
    ]
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
        let inside = attempt(&row.text, &limits_with(row.limit, row.needs));
        if !matches!(inside, Outcome::Ran) {
            failures.push(format!("{} = {}: {inside:?}", row.limit, row.needs));
        }
        let outside = attempt(&row.text, &limits_with(row.limit, row.needs - 1));
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
    let tested: Vec<&str> = rows().iter().map(|r| r.limit).collect();
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
         --> limits.toml:7:14\n  |\n7 | iterations = 20\n  |              ^^\n  \
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
             file\n --> limits.toml\n  = valid: a smaller file, or raise the limit with \
             `--set-limit scenario_bytes={}`",
            BASE.len(),
            BASE.len()
        )
    );
}
