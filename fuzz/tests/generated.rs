//! Generated scenarios and scripts through the fuzz harness
//! (fuzz/src/lib.rs): structured inputs that mostly parse, many that
//! build and run, with some damaged on purpose, so that the checks behind
//! the parser are reached. Every input must come back without a panic, a
//! protocol violation or more than [`MAX_LIVE_BYTES`] allocated at once
//! (runs are bounded by the harness's budgets; times are reported only).
//!
//! `BOUNCE_FUZZ_CASES=N` sets the number of scenarios (the scripts are
//! twice as many); a failure is shrunk by proptest to a small input.

mod bounds;

use bounds::{measure, MAX_LIVE_BYTES};

use bounce_fuzz as harness;
use harness::{Finding, Outcome};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How far the generated inputs got, and the worst time and memory.
#[derive(Default, Debug)]
struct Tally {
    outcomes: BTreeMap<Outcome, usize>,
    slowest: Duration,
    most_bytes: usize,
}

static TALLY: Mutex<Option<Tally>> = Mutex::new(None);

/// Runs one input through `harness`, checking the bounds.
fn check(harness: fn(&[u8]) -> Result<Outcome, Finding>, input: &str) -> Result<(), TestCaseError> {
    let (result, took, bytes) = measure(|| harness(input.as_bytes()));
    let outcome = result.map_err(|Finding(f)| TestCaseError::fail(f))?;
    prop_assert!(bytes <= MAX_LIVE_BYTES, "{bytes} bytes live at once");
    let mut tally = TALLY.lock().unwrap();
    let tally = tally.get_or_insert_with(Tally::default);
    *tally.outcomes.entry(outcome).or_insert(0) += 1;
    tally.slowest = tally.slowest.max(took);
    tally.most_bytes = tally.most_bytes.max(bytes);
    Ok(())
}

/// Most generated documents are valid throughout, to reach the builder
/// and the simulator; a "wild" one draws every value from a wider set,
/// with values out of range, of the wrong type, or unknown, and may be
/// damaged as text.
type Wild = bool;

/// Picks from `valid`, or (when wild, one time in four) from `invalid`.
fn pick<T: Clone + std::fmt::Debug + 'static>(
    wild: Wild,
    valid: Vec<T>,
    invalid: Vec<T>,
) -> BoxedStrategy<T> {
    if wild && !invalid.is_empty() {
        prop_oneof![3 => select(valid), 1 => select(invalid)].boxed()
    } else {
        select(valid).boxed()
    }
}

/// `Some` with probability `p` (none at all for 0).
fn sometimes<T: Clone + std::fmt::Debug + 'static>(
    p: f64,
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    if p > 0.0 {
        prop::option::weighted(p, s).boxed()
    } else {
        Just(None).boxed()
    }
}

/// A count or size as TOML text.
fn number(wild: Wild) -> BoxedStrategy<String> {
    let valid = prop_oneof![4 => 1u64..6, 1 => 6u64..200].prop_map(|n| n.to_string());
    if wild {
        prop_oneof![
            3 => valid,
            1 => select(vec![
                "0", "64", "4096", "65535", "65536", "4294967295", "4294967296",
                "9223372036854775807", "18446744073709551615", "-1", "-9223372036854775808",
                "1.5", "1e9", "\"3\"", "true", "[]", "0x40",
            ])
            .prop_map(String::from),
        ]
        .boxed()
    } else {
        valid.boxed()
    }
}

const FIELDS: [&str; 5] = ["a", "b", "c", "lock", "arr"];

fn field_name() -> impl Strategy<Value = &'static str> {
    select(FIELDS.to_vec())
}

/// A struct table, `[structs.NAME]`, with some of the fields a, b, c,
/// lock and arr.
fn structs(name: &'static str, wild: Wild) -> impl Strategy<Value = String> {
    let field = (
        prop_oneof![
            6 => pick(
                wild,
                vec![
                    "u8", "u16", "u32", "u64", "unsigned long", "int", "char", "atomic_t",
                    "atomic_long_t", "spinlock_t", "unsigned int", "long long", "bool",
                ],
                vec!["nope", "struct x", "u128"],
            )
            .prop_map(|t| format!("type = \"{t}\"")),
            1 => number(wild).prop_map(|n| format!("size = {n}")),
        ],
        sometimes(if wild { 0.2 } else { 0.0 }, number(wild)),
        prop::option::weighted(
            0.2,
            pick(
                wild,
                vec!["1", "2", "8", "64", "128"],
                vec!["3", "0", "9223372036854775808"],
            ),
        ),
        sometimes(if wild { 0.1 } else { 0.0 }, number(wild)),
    )
        .prop_map(|(ty, count, align, offset)| {
            let mut f = ty;
            for (key, value) in [
                ("count", count),
                ("align", align.map(String::from)),
                ("offset", offset),
            ] {
                if let Some(v) = value {
                    f.push_str(&format!(", {key} = {v}"));
                }
            }
            f
        });
    let all: Vec<usize> = (0..FIELDS.len()).collect();
    let chosen = if wild {
        prop::sample::subsequence(all, 1..=FIELDS.len()).boxed()
    } else {
        Just(all).boxed()
    };
    (
        prop::collection::vec(field, FIELDS.len()),
        chosen,
        prop::option::weighted(0.15, pick(wild, vec!["8", "64", "4096"], vec!["3"])),
    )
        .prop_map(move |(fields, chosen, align)| {
            let mut s = format!("[structs.{name}]\n");
            if let Some(a) = align {
                s.push_str(&format!("align = {a}\n"));
            }
            s.push_str("fields = [\n");
            for i in chosen {
                // `arr` is an array of 4 (valid documents index it).
                let field = if FIELDS[i] == "arr" && !wild {
                    "type = \"u64\", count = 4".to_string()
                } else {
                    fields[i].clone()
                };
                s.push_str(&format!("  {{ name = \"{}\", {field} }},\n", FIELDS[i]));
            }
            s + "]\n\n"
        })
}

/// An instance table of struct `s` (or, wild, of some other).
fn instance(name: &'static str, wild: Wild) -> impl Strategy<Value = String> {
    let kinds = if name == "g" {
        vec!["global"]
    } else {
        vec!["global", "per-cpu", "per-node"]
    };
    (
        pick(wild, vec!["s"], vec!["t", "u"]),
        pick(wild, kinds, vec!["local", "per-cpu"]),
        sometimes(if wild { 0.3 } else { 0.0 }, number(wild)),
        prop::option::weighted(0.2, pick(wild, vec!["0"], vec!["1", "7", "-1"])),
        prop::option::weighted(0.2, select(vec!["true", "false"])),
    )
        .prop_map(move |(strukt, kind, count, node, aligned)| {
            let mut s = format!("[instances.{name}]\nstruct = \"{strukt}\"\nkind = \"{kind}\"\n");
            // Each key where its kind allows it (anywhere, when wild).
            if let Some(c) = count.filter(|_| wild || kind == "global") {
                s.push_str(&format!("count = {c}\n"));
            }
            if let Some(n) = node.filter(|_| wild || kind == "global") {
                s.push_str(&format!("node = {n}\n"));
            }
            if let Some(a) = aligned.filter(|_| wild || kind == "per-cpu") {
                s.push_str(&format!("shared_aligned = {a}\n"));
            }
            s + "\n"
        })
}

/// A place: an instance's field, maybe indexed (element and array).
fn place(instances: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        select(instances.to_vec()),
        prop::option::weighted(
            0.4,
            select(vec!["tid()", "0", "1", "cpu()", "random(4)", "x"]),
        ),
        field_name(),
        select(vec!["0", "3", "x & 3", "random(4)", "4"]),
    )
        .prop_map(|(inst, element, field, index)| {
            let mut p = inst.to_string();
            // `many` is an array of instances: always one of them.
            let element = element.or((inst == "many").then_some("tid()"));
            if let Some(e) = element {
                p.push_str(&format!("[{e}]"));
            }
            p.push('.');
            p.push_str(field);
            if field == "arr" {
                p.push_str(&format!("[{index}]"));
            }
            p
        })
}

fn expr(instances: &'static [&'static str]) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => (0i64..10).prop_map(|n| n.to_string()),
        1 => select(vec![
            "x", "y", "tid()", "cpu()", "iteration()", "now()", "random(8)", "nthreads()",
            "N", "-9223372036854775807", "9223372036854775807",
        ])
        .prop_map(String::from),
        2 => place(instances),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                select(vec![
                    "+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "<", "&&"
                ]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (select(vec!["-", "!", "~"]), inner.clone()).prop_map(|(op, a)| format!("{op}{a}")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("min({a}, {b})")),
        ]
    })
}

/// A script body over `instances` and the locals `x`, `y` and `q` (a pointer).
fn script(instances: &'static [&'static str]) -> impl Strategy<Value = String> {
    let simple = prop_oneof![
        3 => (place(instances), expr(instances)).prop_map(|(p, e)| format!("{p} = {e}\n")),
        3 => place(instances).prop_map(|p| format!("x = {p}\n")),
        2 => (select(vec!["fetch_add", "fetch_sub", "fetch_or", "fetch_and", "xchg"]), place(instances), expr(instances))
            .prop_map(|(op, p, e)| format!("y = {op}({p}, {e})\n")),
        1 => (place(instances), expr(instances), expr(instances))
            .prop_map(|(p, a, b)| format!("y = cmpxchg({p}, {a}, {b})\n")),
        1 => expr(instances).prop_map(|e| format!("work {e} & 63\n")),
        1 => Just("fence\n".to_string()),
        1 => expr(instances).prop_map(|e| format!("x = {e}\n")),
        1 => place(instances).prop_map(|p| format!("q = &{p}\n*q = *q + 1\n")),
    ];
    let statement = simple.prop_recursive(3, 16, 4, move |inner| {
        let block = prop::collection::vec(inner, 0..4).prop_map(|s| s.concat());
        prop_oneof![
            (expr(instances), block.clone(), block.clone())
                .prop_map(|(c, a, b)| format!("if {c} {{\n{a}}} else {{\n{b}}}\n")),
            (0u32..5, block.clone()).prop_map(|(n, b)| format!("repeat {n} {{\n{b}}}\n")),
            (expr(instances), block).prop_map(|(c, b)| format!(
                "while {c} {{\n{b}y = y + 1\nif y > 3 {{ break }}\n}}\n"
            )),
        ]
    });
    prop::collection::vec(statement, 1..6)
        .prop_map(|s| format!("let x = 0\nlet y = 0\nlet q = &g.a\n{}", s.concat()))
}

const SCENARIO_INSTANCES: &[&str] = &["g", "h", "pc"];
const HARNESS_INSTANCES: &[&str] = &["g", "many", "pc", "pn"];

/// A CPU list: small ranges (valid on every preset), or, wild, anything.
fn cpus(wild: Wild) -> BoxedStrategy<String> {
    let valid = prop_oneof![
        4 => (0u32..8, 0u32..4).prop_map(|(a, n)| format!("{a}-{}", a + n)),
        2 => (0u32..16).prop_map(|c| c.to_string()),
        1 => select(vec!["0,40", "0-3,40-43", "1,3"]).prop_map(String::from),
    ];
    if wild {
        prop_oneof![
            3 => valid,
            1 => select(vec!["", "3-1", "0-", "a", "0,,1", "0-4294967295", "all", "200", "65535"])
                .prop_map(String::from),
        ]
        .boxed()
    } else {
        valid.boxed()
    }
}

fn machine(wild: Wild) -> impl Strategy<Value = String> {
    prop_oneof![
        6 => pick(
            wild,
            vec!["icelake-sp-2s", "epyc-milan-2s", "cascadelake-sp-2s", "bergamo-1s", "epyc-genoa-1s"],
            vec!["icelake", ""],
        )
        .prop_map(|m| format!("machine = \"{m}\"\n")),
        2 => (
            select(vec!["icelake-sp-2s", "epyc-milan-2s"]),
            prop::option::weighted(0.5, number(wild)),
            prop::option::weighted(0.5, pick(wild, vec!["1", "2"], vec!["0", "9", "4294967295"])),
            prop::option::weighted(0.3, pick(wild, vec!["mesi", "mesif", "moesi"], vec!["msi"])),
            prop::option::weighted(0.3, number(wild)),
        )
            .prop_map(|(preset, sockets, threads, protocol, dram)| {
                let mut m = format!("[machine]\npreset = \"{preset}\"\n");
                if let Some(s) = sockets {
                    m.push_str(&format!("sockets = {s}\n"));
                }
                if let Some(t) = threads {
                    m.push_str(&format!("threads_per_core = {t}\n"));
                }
                if let Some(p) = protocol {
                    m.push_str(&format!("protocol = \"{p}\"\n"));
                }
                if let Some(d) = dram {
                    m.push_str(&format!("[machine.latency]\ndram_cycles = {d}\n"));
                }
                m
            }),
        1 => (1u32..3, 1u32..3, 1u32..4, 1u32..3, select(vec!["mesi", "mesif", "moesi"]), select(vec!["home", "local"]))
            .prop_map(|(s, n, c, t, p, l)| format!(
                "[machine]\nname = \"tiny\"\nclock_mhz = 2000\nsockets = {s}\nnodes_per_socket = {n}\n\
                 l3_per_node = 1\ncores_per_l3 = {c}\nthreads_per_core = {t}\nline_size_bytes = 64\n\
                 protocol = \"{p}\"\nlookup = \"{l}\"\nadjacent_line_prefetch = false\n\
                 store_buffer_entries = 4\n[machine.latency]\nl1_hit_cycles = 4\nlocked_op_cycles = 20\n\
                 smt_transfer_cycles = 7\nl3_transfer_cycles = 60\nhop_in_node_cycles = 30\n\
                 hop_between_nodes_cycles = 50\nhop_between_sockets_cycles = 110\ndram_cycles = 150\n"
            )),
    ]
}

/// The `[run]` table: iterations or cycles (wild: both, neither, anything).
fn run(wild: Wild) -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        // Not 2^64 - 1 iterations with a warm-up: their sum overflows in
        // the engine (a known crash: fuzz/crashes/scenario/).
        number(wild).prop_map(|n| {
            if n == "18446744073709551615" {
                "9223372036854775807".to_string()
            } else {
                n
            }
        }),
        sometimes(if wild { 0.2 } else { 0.0 }, number(wild)),
        prop::option::weighted(0.3, number(wild)),
        prop::option::weighted(
            0.2,
            pick(wild, vec!["1000000", "100000000"], vec!["1", "0"]),
        ),
    )
        .prop_map(|(by_cycles, length, other, warmup, max)| {
            let (key, other_key) = if by_cycles {
                ("cycles", "iterations")
            } else {
                ("iterations", "cycles")
            };
            let mut r = format!("[run]\n{key} = {length}\n");
            if let Some(o) = other {
                r.push_str(&format!("{other_key} = {o}\n"));
            }
            if let Some(w) = warmup.filter(|_| !by_cycles) {
                r.push_str(&format!("warmup_iterations = {w}\n"));
            }
            if let Some(m) = max {
                r.push_str(&format!("max_cycles = {m}\n"));
            }
            r + "\n"
        })
}

/// A whole scenario document: one strategy per part of the file, joined
/// in the file's order; long because the document has many parts.
fn scenario(wild: Wild) -> impl Strategy<Value = String> {
    let threads = prop_oneof![
        6 => (cpus(wild), select(vec!["one", "two"])).prop_map(|g| vec![g]),
        2 => (0u32..4, select(vec!["one", "two"])).prop_map(|(c, s)| vec![
            (format!("{c}"), s),
            (format!("{}-{}", c + 4, c + 6), "one"),
        ]),
        1 => prop::collection::vec(
            (cpus(wild), pick(wild, vec!["one", "two"], vec!["three"])),
            1..3,
        ),
    ]
    .prop_map(|groups| {
        groups
            .iter()
            .enumerate()
            .map(|(i, (cpus, script))| {
                format!(
                    "[[threads]]\nname = \"t{i}\"\ncpus = \"{cpus}\"\nscript = \"{script}\"\n\n"
                )
            })
            .collect::<String>()
    });
    let variant = (
        pick(wild, vec!["v1", "v2"], vec!["base", "v1"]),
        prop_oneof![
            (
                Just("run.max_cycles"),
                pick(wild, vec!["50000000".to_string()], vec!["0".to_string()])
            ),
            (
                Just("structs.s.fields.a.align"),
                pick(
                    wild,
                    vec!["8".to_string(), "64".to_string()],
                    vec!["3".to_string()]
                )
            ),
            (Just("instances.g.count"), number(wild)),
            (
                Just("threads.t0.cpus"),
                cpus(wild).prop_map(|c| format!("\"{c}\""))
            ),
            (
                Just("machine"),
                pick(
                    wild,
                    vec!["\"epyc-milan-2s\"".to_string()],
                    vec!["\"nope\"".to_string()]
                )
            ),
            (Just("seed"), number(wild)),
            (Just(if wild { "nope.nope" } else { "seed" }), number(wild)),
        ],
    )
        .prop_map(|(name, (path, value))| {
            format!("[[variants]]\nname = \"{name}\"\nset = {{ \"{path}\" = {value} }}\n\n")
        });
    (
        machine(wild),
        number(wild),
        run(wild),
        prop::option::weighted(if wild { 0.5 } else { 0.99 }, number(wild)),
        (
            structs("s", wild),
            prop::option::weighted(0.4, structs("t", wild)),
        ),
        (
            instance("g", wild),
            instance("h", wild),
            instance("pc", wild),
        ),
        (script(SCENARIO_INSTANCES), script(SCENARIO_INSTANCES)),
        threads,
        prop::option::weighted(0.3, variant),
        prop::option::weighted(0.1, (1u32..4, 1u32..4)),
    )
        .prop_map(
            |(
                machine,
                seed,
                run,
                param,
                structs,
                instances,
                (one, two),
                threads,
                variant,
                sweep,
            )| {
                let mut s =
                    format!("schema = 1\nname = \"generated\"\nseed = {seed}\n{machine}\n{run}");
                if let Some(p) = param {
                    s.push_str(&format!("[params]\nN = {p}\n\n"));
                }
                s.push_str(&structs.0);
                s.extend(structs.1);
                s.push_str(&instances.0);
                s.push_str(&instances.1);
                s.push_str(&instances.2);
                // An iteration of local operations alone takes no time; the
                // engine stops such a run (`limits.steps_without_time`).
                s.push_str(&format!(
                    "[scripts]\none = \"\"\"\n{one}\"\"\"\ntwo = \"\"\"\n{two}\"\"\"\n\n"
                ));
                s.push_str(&threads);
                s.extend(variant);
                if let Some((a, b)) = sweep {
                    s.push_str(&format!(
                        "[sweep]\n\"instances.g.count\" = [{}]\n\"seed\" = [{}]\n",
                        (1..=a)
                            .map(|k| k.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        (1..=b)
                            .map(|k| k.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                s
            },
        )
}

/// A text damaged now and then (when wild): a few characters deleted, or
/// one put in.
fn damaged(wild: Wild, text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (
        text,
        0u8..if wild { 3 } else { 1 },
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        select(vec![
            "\"", "[", "]", "{", "}", "=", "\n", "#", "\\", ".", "é", "\u{0}", "0", "-",
        ]),
    )
        .prop_map(|(text, roll, at, len, ch)| {
            let mut chars: Vec<char> = text.chars().collect();
            if chars.is_empty() {
                return text;
            }
            let i = at.index(chars.len());
            match roll {
                1 => {
                    let n = len.index(8).min(chars.len() - i);
                    chars.drain(i..i + n);
                }
                2 => chars.insert(i, ch.chars().next().unwrap()),
                _ => {}
            }
            chars.into_iter().collect()
        })
}

/// A scenario, wild one time in five.
fn any_scenario() -> impl Strategy<Value = String> {
    prop_oneof![4 => Just(false), 1 => Just(true)]
        .prop_flat_map(|wild| damaged(wild, scenario(wild)))
}

/// A script, wild (damaged) one time in five.
fn any_script() -> impl Strategy<Value = String> {
    prop_oneof![4 => Just(false), 1 => Just(true)]
        .prop_flat_map(|wild| damaged(wild, script(HARNESS_INSTANCES)))
}

#[test]
fn generated_scenarios_and_scripts_neither_panic_nor_hang_nor_grow_without_bound() {
    let cases: u32 = std::env::var("BOUNCE_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 300 } else { 3000 });
    // Deterministic: the same inputs every run, unless BOUNCE_FUZZ_SEED
    // asks for others.
    let seed: u64 = std::env::var("BOUNCE_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let new_runner = |cases| {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        TestRunner::new_with_rng(
            Config {
                cases,
                failure_persistence: None,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
        )
    };
    let start = Instant::now();
    let mut runner = new_runner(cases);
    let result = runner.run(&any_scenario(), |text| check(harness::scenario, &text));
    let scenarios = TALLY.lock().unwrap().take().unwrap_or_default();
    println!(
        "scenarios: {cases} generated (seed {seed}), {:?}; slowest {:?}, most memory {} KiB",
        scenarios.outcomes,
        scenarios.slowest,
        scenarios.most_bytes >> 10
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    let mut runner = new_runner(2 * cases);
    let result = runner.run(&any_script(), |text| check(harness::script, &text));
    let scripts = TALLY.lock().unwrap().take().unwrap_or_default();
    println!(
        "scripts: {} generated, {:?}; slowest {:?}, most memory {} KiB; {:?} in all",
        2 * cases,
        scripts.outcomes,
        scripts.slowest,
        scripts.most_bytes >> 10,
        start.elapsed()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
    // The generators keep reaching the simulator.
    let ran = |t: &Tally| t.outcomes.get(&Outcome::Ran).copied().unwrap_or(0);
    assert!(ran(&scenarios) * 10 >= cases as usize, "{scenarios:?}");
    assert!(ran(&scripts) * 6 >= 2 * cases as usize, "{scripts:?}");
}
