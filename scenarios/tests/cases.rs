//! The case studies of `scenarios/shipped/cases/`: each sets figures measured in a
//! kernel thread beside the simulated ones (`[[measured]]`).
//!
//! The fast tests run each shipped scenario shortened (fewer iterations,
//! some variants) and check the measured-vs-simulated table's structure and
//! the orderings that hold already in a short run. The accuracy targets
//! run the shipped scenarios at their full lengths (about 7 s in all in a
//! debug build, sim-core being optimised in test profiles), so a change
//! that moves a prediction out of its target fails CI.

use std::path::Path;

use scenarios::build::{build_all, BuildOptions, BuiltVariant};
use scenarios::report::measured::table;
use scenarios::run::measured::{compare, Comparison};
use scenarios::run::results::run_all;
use scenarios::{load_file, load_str, LoadedScenario};

fn scenario_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("shipped/cases")
        .join(name)
        .display()
        .to_string()
}

fn shipped(name: &str) -> LoadedScenario {
    load_file(Path::new(&scenario_path(name))).unwrap_or_else(|e| panic!("{e}"))
}

/// The shipped scenario with its run lengths replaced.
fn shortened(name: &str, iterations: u64, warmup: u64) -> LoadedScenario {
    let path = scenario_path(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("iterations = ") {
            out.push_str(&format!("iterations = {iterations}\n"));
        } else if line.starts_with("warmup_iterations = ") {
            out.push_str(&format!("warmup_iterations = {warmup}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    load_str(&path, &out).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the variants named in `only` (all when empty) and compares.
fn run(loaded: &LoadedScenario, only: &[&str]) -> Vec<Comparison> {
    let built: Vec<BuiltVariant> = build_all(loaded, BuildOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .filter(|b| only.is_empty() || only.contains(&b.name.as_str()))
        .collect();
    let results = run_all(&built);
    compare(loaded, &built, &results)
}

fn row<'a>(rows: &'a [Comparison], variant: &str) -> &'a Comparison {
    rows.iter()
        .find(|c| c.variant == variant)
        .unwrap_or_else(|| panic!("no row for {variant}"))
}

fn simulated(rows: &[Comparison], variant: &str) -> f64 {
    row(rows, variant)
        .simulated
        .unwrap_or_else(|| panic!("{variant} has no simulated figure"))
}

/// The scenario's header, its leading comment, with each line's `#` and
/// indentation taken off and the lines joined by single spaces, so that a
/// phrase reads the same wherever the header breaks its lines.
fn header(name: &str) -> String {
    let text = std::fs::read_to_string(scenario_path(name)).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" ")
}

/// Asserts that the header of `name` says `phrase`: a header quotes what the
/// case gives today, so a change that moves a figure it quotes fails here
/// until the header says the new one.
fn assert_header_says(name: &str, phrase: &str, rows: &[Comparison]) {
    assert!(
        header(name).contains(phrase),
        "the header of {name} no longer says `{phrase}`: update it to what the run gives\n{}",
        table(rows)
    );
}

/// `value` rounded to the nearest hundred, its thousands set apart by a
/// space, as the headers write large cycle counts ("116 900").
fn about_hundreds(value: f64) -> String {
    let rounded = ((value / 100.0).round() * 100.0) as i64;
    let digits = rounded.unsigned_abs().to_string();
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(' ');
        }
        grouped.push(digit);
    }
    if rounded < 0 {
        grouped.insert(0, '-');
    }
    grouped
}

/// Every row with a tolerance is within it.
fn assert_targets_met(rows: &[Comparison]) {
    for c in rows {
        if let (Some(ok), Some(t)) = (c.within_tolerance, c.tolerance) {
            assert!(
                ok,
                "{} ({}): simulated {:?} vs measured {} beyond ±{t}\n{}",
                c.label,
                c.variant,
                c.simulated,
                c.measured,
                table(rows)
            );
        }
    }
}

#[test]
fn sctp_memcg_table_lists_every_measured_configuration() {
    let loaded = shortened("sctp-memcg.toml", 30, 10);
    let rows = run(&loaded, &["before", "after", "layout"]);
    let variants: Vec<&str> = rows.iter().map(|c| c.variant.as_str()).collect();
    assert_eq!(
        variants,
        [
            "after",
            "layout",
            "usage-own-line",
            "batch-64",
            "batch-128",
            "after-72",
            "after-icx"
        ]
    );
    let measured: Vec<f64> = rows.iter().map(|c| c.measured).collect();
    assert_eq!(measured, [-69.5, -40.8, -27.9, -14.0, -12.4, -73.7, -53.0]);
    for c in &rows {
        assert_eq!(c.metric, "throughput-change");
        assert_eq!(c.unit, "%");
        assert_eq!(c.tolerance, Some(15.0));
        assert!(c.source.starts_with("Feng Tang, "), "{}", c.source);
    }
    assert_eq!(
        row(&rows, "after-72").relative_to.as_deref(),
        Some("before-72")
    );
    // Runs left out have no figure and no verdict.
    assert_eq!(row(&rows, "batch-64").simulated, None);
    assert_eq!(row(&rows, "batch-64").within_tolerance, None);
    // Even a short run shows the regression and the layout change's gain.
    let after = simulated(&rows, "after");
    let layout = simulated(&rows, "layout");
    assert!(after < layout && layout < 0.0, "{after} {layout}");
    let text = table(&rows);
    assert!(text.starts_with("measured vs simulated\n\n"), "{text}");
    let first: Vec<&str> = text
        .lines()
        .find(|l| l.starts_with("[1] "))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        first[..11],
        [
            "[1]",
            "after",
            "4890b686f4",
            "after",
            "throughput",
            "vs",
            "before",
            "-69.5%",
            first[8],
            first[9],
            "pt"
        ],
        "{text}"
    );
    assert!(text
        .contains("\nsources:\n  [1] Feng Tang, 3 July 2022: 15722 -> 4792 Mbps; fitted here\n"));
    assert!(text.contains("-69.5%"), "{text}");
}

#[test]
fn sctp_memcg_meets_its_targets() {
    let rows = run(&shipped("sctp-memcg.toml"), &[]);
    // The six configurations in the measured order ...
    let order = ["after", "layout", "usage-own-line", "batch-64", "batch-128"];
    let figures: Vec<f64> = order.iter().map(|v| simulated(&rows, v)).collect();
    assert!(
        figures.windows(2).all(|w| w[0] < w[1]) && figures[4] < 0.0,
        "{figures:?}\n{}",
        table(&rows)
    );
    // ... each within 15 points, and the 72-client and Ice Lake runs too,
    // except the ones the model misses (see the scenario's header; layout
    // and usage-own-line missed until the home's choice among waiting
    // requests came to follow the socket agents, and met at the refitted
    // work). Each miss is held to its side of the target, so that a change
    // that closes the gap, or widens it the other way, has to update this
    // list and the header.
    let known_misses: [&str; 0] = [];
    for variant in known_misses {
        let c = row(&rows, variant);
        assert_eq!(
            c.within_tolerance,
            Some(false),
            "{variant} now meets its target: take it off the list\n{}",
            table(&rows)
        );
        assert!(
            simulated(&rows, variant) > c.measured,
            "{variant} now overshoots\n{}",
            table(&rows)
        );
    }
    let others: Vec<Comparison> = rows
        .iter()
        .filter(|c| !known_misses.contains(&c.variant.as_str()))
        .cloned()
        .collect();
    assert_targets_met(&others);
    // What the header says the run gives.
    let name = "sctp-memcg.toml";
    let about = |variant: &str| format!("{:.0} %", simulated(&rows, variant));
    for phrase in [
        format!("layout: about {}", about("layout")),
        format!("usage-own-line: about {}", about("usage-own-line")),
        format!(
            "batch 64 and 128: about {} and {}",
            about("batch-64"),
            about("batch-128")
        ),
        format!("72 clients: about {}", about("after-72")),
    ] {
        assert_header_says(name, &phrase, &rows);
    }
}

/// The stock-lock orderings the thread measured: the spinlock costs more
/// per call than the local_lock, and draining more stocks takes longer.
fn assert_stock_lock_orderings(rows: &[Comparison]) {
    let cycles = |label: &str| {
        rows.iter()
            .find(|c| c.label == label)
            .and_then(|c| c.simulated)
            .unwrap_or_else(|| panic!("no figure for {label}\n{}", table(rows)))
    };
    assert!(
        cycles("consume_stock, spinlock") > cycles("consume_stock, local_lock"),
        "{}",
        table(rows)
    );
    assert!(cycles("consume_stock, spinlock - local_lock") > 0.0);
    assert!(cycles("refill_stock, spinlock") > cycles("refill_stock, local_lock"));
    assert!(cycles("drain_all_stock, 8 CPUs") > cycles("drain_all_stock, 1 CPU"));
    assert!(cycles("drain_all_stock, 128 CPUs") > cycles("drain_all_stock, 8 CPUs"));
    assert!(
        cycles("drain_all_stock, 128 - 1 CPUs") > 10.0 * cycles("drain_all_stock, 8 - 1 CPUs"),
        "{}",
        table(rows)
    );
}

#[test]
fn memcg_stock_lock_table_sets_cycles_per_call_beside_the_thread() {
    let rows = run(&shortened("memcg-stock-lock.toml", 40, 1), &[]);
    assert_eq!(rows.len(), 11);
    let measured: Vec<f64> = rows.iter().map(|c| c.measured).collect();
    assert_eq!(
        measured,
        [53.51, 63.76, 10.25, 65.47, 67.46, 1.99, 38978.0, 39027.0, 58054.0, 49.0, 19076.0]
    );
    for c in &rows {
        assert_eq!(c.metric, "cycles-per-iteration");
        assert_eq!(c.unit, "cycles");
        assert_eq!(c.threads.as_deref(), Some("caller"));
        // The issue's targets: 25 % of the measured figure, 35 % for the
        // 128-vs-1-CPU drain difference.
        let share = if c.label == "drain_all_stock, 128 - 1 CPUs" {
            0.35
        } else {
            0.25
        };
        let tolerance = c.tolerance.expect("every row has a target");
        assert!(
            (tolerance - share * c.measured).abs() <= 0.01 * c.measured,
            "{}: {tolerance}",
            c.label
        );
        assert!(c.source.starts_with("[PATCH v2 0/5] cover letter, 2.2.2: "));
        let sim = c.simulated.unwrap();
        assert_eq!(c.difference, Some(sim - c.measured));
    }
    assert_eq!(rows[2].relative_to.as_deref(), Some("consume-local_lock"));
    assert_stock_lock_orderings(&rows);
    let text = table(&rows);
    assert!(
        text.contains("cycles/iteration of caller minus consume-local_lock's"),
        "{text}"
    );
    // Every row has a target, so the table counts them.
    assert!(text.contains(" of 11 target(s) met"), "{text}");
}

#[test]
fn memcg_stock_lock_keeps_its_orderings_at_full_length() {
    let rows = run(&shipped("memcg-stock-lock.toml"), &[]);
    assert_stock_lock_orderings(&rows);
    // consume_stock and refill_stock per call, each with the thread's
    // rdtsc_ordered() bracket (`measure/tsc`), meet their 25 % targets.
    // The spinlock-minus-local_lock differences do not: spin_lock_irqsave
    // adds the locked instruction on a line CPU 8 holds (8 cycles), the
    // unlocking store's posting cycle and the preemption count's increment
    // and decrement, which the model charges L1 access by L1 access (13
    // cycles), 22.9 in all against 10.2 and 2.0 (the scenario's header).
    // Both are held to their side, so that a change closing the gap (a
    // core that overlaps independent hits) updates this test and the
    // header.
    let verdict = |label: &str| {
        let c = rows
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no row {label}\n{}", table(&rows)));
        (c.within_tolerance, c.simulated.unwrap() - c.measured)
    };
    for label in [
        "consume_stock, local_lock",
        "consume_stock, spinlock",
        "refill_stock, local_lock",
        "refill_stock, spinlock",
    ] {
        assert_eq!(verdict(label).0, Some(true), "{label}\n{}", table(&rows));
    }
    for label in [
        "consume_stock, spinlock - local_lock",
        "refill_stock, spinlock - local_lock",
    ] {
        let (met, over) = verdict(label);
        assert_eq!(
            met,
            Some(false),
            "{label} now meets its target\n{}",
            table(&rows)
        );
        assert!(over > 0.0, "{label} now falls short\n{}", table(&rows));
    }
    // What the header says the run gives.
    let name = "memcg-stock-lock.toml";
    let figure = |label: &str| {
        rows.iter()
            .find(|c| c.label == label)
            .and_then(|c| c.simulated)
            .unwrap_or_else(|| panic!("no figure for {label}\n{}", table(&rows)))
    };
    assert_header_says(
        name,
        &format!(
            "({:.1}, {:.1}, {:.1} and {:.1} cycles)",
            figure("consume_stock, local_lock"),
            figure("consume_stock, spinlock"),
            figure("refill_stock, local_lock"),
            figure("refill_stock, spinlock")
        ),
        &rows,
    );
    for label in [
        "consume_stock, spinlock - local_lock",
        "refill_stock, spinlock - local_lock",
    ] {
        assert_header_says(
            name,
            &format!(
                "spinlock minus local_lock is +{:.1} cycles in both paths",
                figure(label)
            ),
            &rows,
        );
    }
    for label in [
        "drain_all_stock, 1 CPU",
        "drain_all_stock, 8 CPUs",
        "drain_all_stock, 128 CPUs",
        "drain_all_stock, 8 - 1 CPUs",
        "drain_all_stock, 128 - 1 CPUs",
    ] {
        assert_header_says(
            name,
            &format!("about {}", about_hundreds(figure(label))),
            &rows,
        );
    }
}

#[test]
fn tcp_memory_allocated_table_compares_shares_of_cycles() {
    let rows = run(
        &shortened("tcp-memory-allocated.toml", 40, 10),
        &["atomic", "percpu_counter"],
    );
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].metric, "field-cycles-share");
    assert_eq!(rows[0].fields, ["tcp_memory_allocated.counter"]);
    assert_eq!(rows[1].fields.len(), 5);
    assert_eq!((rows[0].measured, rows[1].measured), (0.7, 0.36));
    let atomic = simulated(&rows, "atomic");
    let percpu = simulated(&rows, "percpu_counter");
    // The global line costs several times what the per-CPU deltas do.
    assert!(atomic > 0.3 && atomic < 1.5, "{atomic}");
    assert!(percpu < atomic / 5.0, "{percpu} vs {atomic}");
    let text = table(&rows);
    assert!(
        text.contains("share of cycles in tcp_allocated.lock +4 field(s)"),
        "{text}"
    );
}

#[test]
fn tcp_memory_allocated_fit_holds() {
    // The one parameter was fitted so that the atomic's share is 0.7 %.
    let rows = run(
        &shipped("tcp-memory-allocated.toml"),
        &["atomic", "percpu_counter"],
    );
    let atomic = simulated(&rows, "atomic");
    assert!((atomic - 0.7).abs() < 0.05, "{}", table(&rows));
    assert!(simulated(&rows, "percpu_counter") < atomic / 5.0);
    // What the header says the run gives.
    assert_header_says(
        "tcp-memory-allocated.toml",
        &format!(
            "{atomic:.2} % for the atomic (fitted) and {:.2} % for the percpu_counter",
            simulated(&rows, "percpu_counter")
        ),
        &rows,
    );
}

#[test]
fn tcp_memory_allocated_sum_on_every_raise_exceeds_both_measured_shares() {
    // The header's bound: a percpu_counter_sum after every raise costs more
    // than the 0.36 % measured with the patch, and more than the atomic's
    // 0.7 % the patch was said to halve, so the patch did not sum on every
    // charge. The variant has no measured row; one is added here to read
    // its share.
    let path = scenario_path("tcp-memory-allocated.toml");
    let mut text = String::new();
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        if line.starts_with("iterations = ") {
            text.push_str("iterations = 60\n");
        } else if line.starts_with("warmup_iterations = ") {
            text.push_str("warmup_iterations = 10\n");
        } else {
            text.push_str(line);
            text.push('\n');
        }
    }
    text.push_str(
        r#"
[[measured]]
label = "sum on every raise"
variant = "sum_on_raise"
metric = "field-cycles-share"
fields = ["tcp_allocated.lock", "tcp_allocated.count", "tcp_allocated.counters", "tcp_allocated_pcpu.count", "preempt_count.count"]
value = 0.36
source = "tests/cases.rs"
"#,
    );
    let loaded = load_str(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let rows = run(&loaded, &["atomic", "sum_on_raise"]);
    let sum = simulated(&rows, "sum_on_raise");
    assert!(sum > 0.7, "{}", table(&rows));
    assert!(sum > simulated(&rows, "atomic"), "{}", table(&rows));
}

#[test]
fn tcp_memory_allocated_folds_make_every_cpu_miss_on_the_counters_pointer() {
    // The header's reason for the miss: with raises and reduces cancelling
    // on each CPU nothing folds, and the read of `fbc->counters` on every
    // add is an L1 hit; when every CPU's updates go one way
    // (`one_way_cpus`), the folds take the shared line and the other CPUs'
    // next reads of the pointer miss, a large part of the share. The
    // variants have no measured row for the pointer alone; rows are added
    // here to read it.
    let path = scenario_path("tcp-memory-allocated.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (label, variant, fields) in [
        ("one way", "one_way_cpus", "\"tcp_allocated.lock\", \"tcp_allocated.count\", \"tcp_allocated.counters\", \"tcp_allocated_pcpu.count\", \"preempt_count.count\""),
        ("one way, pointer", "one_way_cpus", "\"tcp_allocated.counters\""),
        ("cancelling, pointer", "percpu_counter", "\"tcp_allocated.counters\""),
    ] {
        text.push_str(&format!(
            "\n[[measured]]\nlabel = \"{label}\"\nvariant = \"{variant}\"\nmetric = \"field-cycles-share\"\nfields = [{fields}]\nvalue = 0.36\nsource = \"tests/cases.rs\"\n"
        ));
    }
    let loaded = load_str(&path, &text).unwrap_or_else(|e| panic!("{e}"));
    let rows = run(&loaded, &["percpu_counter", "one_way_cpus"]);
    let share = |label: &str| {
        rows.iter()
            .find(|c| c.label == label)
            .and_then(|c| c.simulated)
            .unwrap_or_else(|| panic!("no {label}\n{}", table(&rows)))
    };
    let cancelling = share("percpu_counter");
    let one_way = share("one way");
    let one_way_pointer = share("one way, pointer");
    // The cancelling run's pointer reads are L1 hits: 4 cycles of 77k.
    assert!(share("cancelling, pointer") < 0.01, "{}", table(&rows));
    assert!(one_way > cancelling * 1.5, "{}", table(&rows));
    assert!(one_way_pointer > 0.4 * one_way, "{}", table(&rows));
    // Still short of the measured 0.36 %: the header's miss.
    assert!(one_way < 0.2, "{}", table(&rows));
}

#[test]
fn results_json_carries_the_comparisons_and_reads_them_back() {
    use scenarios::report::output::{header, records, results_json, ResultsFile};
    let loaded = shortened("tcp-memory-allocated.toml", 5, 1);
    let cases = scenarios::run::cases::build_cases(&loaded, BuildOptions::default()).unwrap();
    let results = scenarios::run::cases::run_cases(&cases, u64::MAX, &|| {});
    let mut file = header(&loaded, "test");
    file.records = records(&file, &cases, &results);
    let without = results_json(&file);
    assert!(!without.contains("\"measured\": ["), "{without}");
    file.measured = scenarios::run::measured::compare_cases(&loaded, &cases, &results);
    assert_eq!(file.measured.len(), 2);
    let text = results_json(&file);
    assert!(text.contains("\"measured\": ["), "{text}");
    assert!(
        text.contains("\"metric\": \"field-cycles-share\""),
        "{text}"
    );
    let back: ResultsFile = serde_json::from_str(&text).unwrap();
    assert_eq!(back, file);
}

fn error_of(text: &str) -> String {
    load_str("case.toml", text).unwrap_err().to_string()
}

const SMALL: &str = r#"schema = 1
machine = "icelake-sp-2s"
[run]
iterations = 5
[structs.c]
fields = [{ name = "v", type = "long" }]
[instances.c]
struct = "c"
kind = "global"
[scripts]
s = "c.v = c.v + 1"
[[threads]]
name = "writers"
cpus = "0-1"
script = "s"
[[variants]]
name = "padded"
set = { "structs.c.fields.v.align" = 64 }
"#;

#[test]
fn a_measured_figure_must_name_a_variant() {
    let text = format!(
        "{SMALL}[[measured]]\nlabel = \"x\"\nvariant = \"paded\"\nmetric = \"throughput-change\"\nvalue = 1.0\nsource = \"here\"\n"
    );
    assert_eq!(
        error_of(&text),
        "error: `measured.0.variant` is `paded`, which is not a variant\n  \
         --> case.toml:21:11\n   |\n21 | variant = \"paded\"\n   |           ^^^^^^^\n   |\n   \
         = valid: base, padded\n   = help: did you mean `padded`?"
    );
}

#[test]
fn a_measured_figure_checks_its_metric_and_fields() {
    let entry = |rest: &str| {
        format!(
            "{SMALL}[[measured]]\nlabel = \"x\"\nvariant = \"base\"\nvalue = 1.0\nsource = \"here\"\n{rest}"
        )
    };
    let e = error_of(&entry("metric = \"cycles\"\n"));
    assert!(e.contains("cycles-per-iteration"), "{e}");
    let e = error_of(&entry("metric = \"field-cycles-share\"\n"));
    assert!(
        e.starts_with("error: metric `field-cycles-share` needs `measured.0.fields`"),
        "{e}"
    );
    let e = error_of(&entry(
        "metric = \"field-cycles-share\"\nfields = [\"c.w\"]\n",
    ));
    assert!(
        e.starts_with("error: `measured.0.fields.0` is `c.w`, which is not a field of an instance"),
        "{e}"
    );
    assert!(e.contains("did you mean `c.v`?"), "{e}");
    let e = error_of(&entry(
        "metric = \"throughput-change\"\nthreads = \"writers\"\n",
    ));
    assert!(
        e.starts_with(
            "error: `measured.0.threads` is only used with metric `cycles-per-iteration`"
        ),
        "{e}"
    );
    let e = error_of(&entry(
        "metric = \"cycles-per-iteration\"\nthreads = \"writer\"\n",
    ));
    assert!(e.contains("did you mean `writers`?"), "{e}");
    let e = error_of(&entry(
        "metric = \"cycles-per-iteration\"\ntolerance = -1.0\n",
    ));
    assert!(e.contains("`measured.0.tolerance` is -1"), "{e}");
}

#[test]
fn a_latency_figure_needs_fields_of_an_instance() {
    let entry = |rest: &str| {
        format!(
            "{SMALL}[[measured]]\nlabel = \"x\"\nvariant = \"base\"\nvalue = 1.0\nsource = \"here\"\n{rest}"
        )
    };
    assert_eq!(
        error_of(&entry("metric = \"field-latency-per-iteration\"\n")),
        "error: metric `field-latency-per-iteration` needs `measured.0.fields`: the fields \
         whose accesses count\n  --> case.toml:24:10\n   |\n24 | metric = \
         \"field-latency-per-iteration\"\n   |          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n   |\n   \
         = valid: a list of `instance.field` names, such as [\"memcg.usage\"]"
    );
    let e = error_of(&entry(
        "metric = \"field-latency-per-iteration\"\nthreads = \"writers\"\nfields = [\"c.w\"]\n",
    ));
    assert!(
        e.starts_with("error: `measured.0.fields.0` is `c.w`, which is not a field of an instance\n  --> case.toml:26:"),
        "{e}"
    );
    assert!(e.contains("did you mean `c.v`?"), "{e}");
    let e = error_of(&entry(
        "metric = \"cycles-per-iteration\"\nfields = [\"c.v\"]\n",
    ));
    assert!(
        e.starts_with(
            "error: `measured.0.fields` is only used with metric `field-cycles-share` or \
             `field-latency-per-iteration`, and this entry's metric is `cycles-per-iteration`"
        ),
        "{e}"
    );
    assert!(
        e.contains("valid: remove `fields`, or use metric `field-cycles-share` or `field-latency-per-iteration`"),
        "{e}"
    );
    let e = error_of(&entry("metric = \"field-share\"\n"));
    assert!(e.contains("field-latency-per-iteration"), "{e}");
}

#[test]
fn measured_figures_of_a_small_scenario_are_computed_from_its_runs() {
    let text = format!(
        "{SMALL}\
[[measured]]\nlabel = \"padding\"\nvariant = \"padded\"\nmetric = \"throughput-change\"\nvalue = 50.0\nsource = \"s1\"\ntolerance = 1000.0\n\
[[measured]]\nlabel = \"packed cost\"\nvariant = \"base\"\nmetric = \"cycles-per-iteration\"\nthreads = \"writers\"\nvalue = 10.0\nsource = \"s2\"\n\
[[measured]]\nlabel = \"share\"\nvariant = \"base\"\nmetric = \"field-cycles-share\"\nfields = [\"c.v\"]\nvalue = 1.0\nsource = \"s3\"\ntolerance = 0.5\n"
    );
    let loaded = load_str("case.toml", &text).unwrap();
    let rows = run(&loaded, &[]);
    assert_eq!(rows.len(), 3);
    // One line written by both CPUs: padding it does not help two CPUs
    // writing the same field, so the change is small either way.
    let change = rows[0].simulated.unwrap();
    assert!(change.abs() < 50.0, "{change}");
    assert_eq!(rows[0].within_tolerance, Some(true));
    // Cycles per iteration: the iterations of the group (here every CPU).
    let cycles = rows[1].simulated.unwrap();
    assert!(cycles > 10.0, "{cycles}");
    assert_eq!(rows[1].within_tolerance, None);
    assert_eq!(rows[1].difference, Some(cycles - 10.0));
    // A script that does nothing but touch the field spends most of its
    // cycles there.
    let share = rows[2].simulated.unwrap();
    assert!(share > 50.0 && share <= 100.0, "{share}");
    assert_eq!(rows[2].within_tolerance, Some(false));
    let text = table(&rows);
    assert!(text.contains("MISS (±0.50)"), "{text}");
    assert!(text.ends_with("1 of 2 target(s) met, 1 missed\n"), "{text}");
}
