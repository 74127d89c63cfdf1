//! `use = [...]`: library modules merged into a scenario. Every shipped
//! module builds (an error inside a module's text is a bug); the errors a
//! user can cause are compared as whole rendered strings.

use scenarios::build::{build_all, BuildOptions};
use scenarios::load_str;

/// What every module needs from the scenario (see `Module::needs`).
const NEEDS: &str = r#"
[params]
depth = 3
batch = 32

[instances.memcg]
struct = "page_counter"
kind = "global"
count = 3
"#;

/// A scenario using `uses` (with what the memcg modules need when it names
/// one), with `extra` tables and one script run by CPUs 0 and 1.
fn scenario(uses: &str, extra: &str, script: &str) -> String {
    let needs = if uses.contains("memcg/") {
        NEEDS.replace("[params]\n", "[params]\nrcu_grace_cycles = 1000\n")
    } else if uses.contains("locks/percpu_rwsem") {
        // What `locks/percpu_rwsem` needs: the writer's grace period.
        "[params]\nrcu_grace_cycles = 1000\n".to_string()
    } else {
        String::new()
    };
    format!(
        r#"schema = 1
machine = "icelake-sp-2s"
use = {uses}

[run]
iterations = 4
{needs}
{extra}
[structs.guarded]
fields = [
  {{ name = "lock", type = "unsigned long" }},
  {{ name = "count", type = "long" }},
]

[instances.g]
struct = "guarded"
kind = "global"

[scripts]
s = """
{script}
"""

[[threads]]
cpus = "0-1"
script = "s"
"#
    )
}

/// Loads and builds; the rendered error, or `ok`.
fn outcome(text: &str) -> String {
    let loaded = match load_str("scenarios/test.toml", text) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    match build_all(&loaded, BuildOptions::default()) {
        Ok(_) => "ok".to_string(),
        Err(e) => e.to_string(),
    }
}

#[track_caller]
fn check(text: &str, expected: &str) {
    let actual = outcome(text);
    let expected = expected.trim_start_matches('\n').trim_end_matches('\n');
    if actual != expected {
        panic!("\n--- expected:\n{expected}\n--- actual:\n{actual}\n---\n");
    }
}

#[test]
fn every_module_builds_alone() {
    for m in models::library::MODULES {
        let text = scenario(&format!("[\"{}\"]", m.name), "", "work 1");
        assert_eq!(outcome(&text), "ok", "module {}", m.name);
    }
}

#[test]
fn every_module_builds_with_all_the_others() {
    let all: Vec<String> = models::library::names()
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect();
    let text = scenario(&format!("[{}]", all.join(", ")), "", "work 1");
    assert_eq!(outcome(&text), "ok");
}

#[test]
fn every_procedure_of_every_module_is_callable() {
    // Each procedure called once with arguments of the right count, so that a
    // naming mistake anywhere in a module is found at build time. (Calling
    // them all at run time would need meaningful arguments; the lock tests
    // and the memcg tests run them.) Each argument is loaded from memory,
    // so that it may be a pointer or a number, as a parameter may be.
    for m in models::library::MODULES {
        let table: toml::Table = toml::from_str(m.text).expect("module parses");
        let procedures = table
            .get("procedures")
            .and_then(|p| p.as_table())
            .expect("a module has procedures");
        // `g.count` is given a pointer once, so that its value may be one
        // (a parameter used as a pointer refuses a field that never holds
        // one: a missing `&`).
        let mut calls = String::from("if iteration() > 1000 {\n  g.count = &g.count\n");
        for (name, p) in procedures {
            let arity = p
                .get("params")
                .and_then(|a| a.as_array())
                .map_or(0, |a| a.len());
            calls.push_str(&format!(
                "  {name}({})\n",
                vec!["g.count"; arity].join(", ")
            ));
        }
        calls.push('}');
        let text = scenario(&format!("[\"{}\"]", m.name), "", &calls);
        assert_eq!(outcome(&text), "ok", "module {}", m.name);
    }
}

#[test]
fn an_unknown_module_suggests_the_nearest() {
    check(
        &scenario(r#"["locks/tiket"]"#, "", "work 1"),
        r#"
error: unknown library module `locks/tiket` in `use`
 --> scenarios/test.toml:3:8
  |
3 | use = ["locks/tiket"]
  |        ^^^^^^^^^^^^^
  |
  = valid: locks/tas, locks/ttas, locks/cpu_relax, locks/ticket, locks/mcs, locks/qspinlock, locks/local_lock, locks/spinlock, locks/percpu_spinlock, locks/mutex, locks/rwsem, locks/percpu_rwsem, measure/tsc, sched/preempt, counters/atomic, counters/percpu_counter, memcg/page_counter, memcg/stock
  = help: did you mean `locks/ticket`?
"#,
    );
}

#[test]
fn use_must_be_an_array_of_names_each_once() {
    check(
        &scenario(r#""locks/tas""#, "", "work 1"),
        r#"
error: expected an array of library module names for `use`, found a string
 --> scenarios/test.toml:3:7
  |
3 | use = "locks/tas"
  |       ^^^^^^^^^^^
  |
  = valid: an array of library module names, such as ["locks/ticket", "memcg/stock"]
"#,
    );
    check(
        &scenario(r#"["locks/tas", 3]"#, "", "work 1"),
        r#"
error: expected a library module name in `use`, found an integer
 --> scenarios/test.toml:3:21
  |
3 | use = ["locks/tas", 3]
  |                     ^
  |
  = valid: an array of library module names, such as ["locks/ticket", "memcg/stock"]
"#,
    );
    check(
        &scenario(r#"["locks/tas", "locks/tas"]"#, "", "work 1"),
        r#"
error: `use` lists `locks/tas` twice (first on line 3)
 --> scenarios/test.toml:3:21
  |
3 | use = ["locks/tas", "locks/tas"]
  |                     ^^^^^^^^^^^
"#,
    );
}

#[test]
fn the_scenarios_own_entry_wins() {
    // The file's `tas_lock` replaces the library's (here by a lock that
    // never takes the word: the stored counts are then not exact, which is
    // how the test sees whose procedure ran).
    let own = r#"
[procedures.tas_lock]
params = ["p"]
body = "work 1"
"#;
    let text = scenario(
        r#"["locks/tas"]"#,
        own,
        "tas_lock(&g.lock)\ng.count = g.count + 1\ntas_unlock(&g.lock)",
    );
    let loaded = load_str("scenarios/test.toml", &text).expect("loads");
    assert_eq!(
        loaded.base.doc.procedures["tas_lock"].body.get_ref(),
        "work 1"
    );
    assert!(loaded.base.doc.procedures["tas_unlock"]
        .body
        .get_ref()
        .contains("*p = 0"));
    assert_eq!(outcome(&text), "ok");
}

#[test]
fn a_variant_patches_a_library_entry() {
    let variant = r#"
[[variants]]
name = "usage-alone"
set = { "structs.page_counter.fields.usage.align" = 64, "structs.page_counter.fields.min.align" = 64 }
"#;
    let text = scenario(r#"["memcg/page_counter"]"#, "", "work 1") + variant;
    let loaded = load_str("scenarios/test.toml", &text).expect("loads");
    let built = build_all(&loaded, BuildOptions::default()).expect("builds");
    let size = |v: usize| {
        let memory = &built[v].config.memory;
        let i = memory.instance_index("memcg").unwrap();
        memory.struct_of(i).size_bytes
    };
    // 112 bytes as the thread prints it; 192 once `usage` and `min` each
    // start a line (usage alone in 0-63, the rest from 64).
    assert_eq!(size(0), 112);
    assert_eq!(size(1), 192);
}

#[test]
fn a_variant_cannot_change_use() {
    let variant = r#"
[[variants]]
name = "other"
set = { "use" = ["locks/ttas"] }
"#;
    check(
        &(scenario(r#"["locks/tas"]"#, "", "work 1") + variant),
        r#"
error: in variant `other`: `use` cannot be changed by a variant or a sweep: the library modules are merged before any patch applies
  --> scenarios/test.toml:30:10
   |
30 | set = { "use" = ["locks/ttas"] }
   |          ^^^
   |
   = valid: list every module the variants need in the file's `use`, and patch their entries (`procedures.NAME.body`, `structs.NAME.fields...`)
"#,
    );
}

#[test]
fn a_library_procedure_names_what_the_scenario_lacks() {
    // memcg/page_counter walks the global instance `memcg`; without it the
    // error points at the `use` entry and says what the module needs.
    let text = r#"schema = 1
machine = "icelake-sp-2s"
use = ["memcg/page_counter"]
[run]
iterations = 1
[params]
depth = 2
[scripts]
s = "work 1"
[[threads]]
cpus = "0"
script = "s"
"#;
    check(
        text,
        r#"
error: in procedure `memcg_parent` of library module `memcg/page_counter` (line 2, column 14 of its body): unknown instance `memcg`; `memcg/page_counter` needs parameter `depth`; global instance `memcg` with at least `depth` elements, of a struct with the fields of `page_counter` (in `procedures.memcg_parent.body`)
 --> scenarios/test.toml:3:8
  |
3 | use = ["memcg/page_counter"]
  |        ^^^^^^^^^^^^^^^^^^^^
  |
  = valid: none
"#,
    );
}

#[test]
fn requirements_come_along() {
    // percpu_spinlock calls qspinlock_lock and local_irq_save from two other
    // modules, which `use` does not list.
    let text = scenario(
        r#"["locks/percpu_spinlock"]"#,
        "",
        "percpu_spinlock_lock(&g.lock)\npercpu_spinlock_unlock(&g.lock)",
    );
    let loaded = load_str("scenarios/test.toml", &text).expect("loads");
    for p in ["qspinlock_lock", "local_irq_save", "percpu_spinlock_lock"] {
        assert!(loaded.base.doc.procedures.contains_key(p), "{p}");
    }
    assert!(loaded.base.doc.instances.contains_key("qspinlock_qnodes"));
    assert_eq!(outcome(&text), "ok");
}

#[test]
fn a_sweep_may_patch_a_library_entry() {
    let sweep = r#"
[sweep]
"structs.memcg_stock_pcp.fields.nr_pages.align" = [4, 64]
"#;
    let text = scenario(r#"["memcg/stock"]"#, "", "work 1") + sweep;
    let loaded = load_str("scenarios/test.toml", &text).expect("loads");
    assert_eq!(loaded.cases.len(), 2);
}

#[test]
fn the_readme_example_builds_and_runs() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"),
    )
    .expect("README.md");
    let after = readme
        .split("**Libraries.**")
        .nth(1)
        .expect("a Libraries paragraph");
    let example = after
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("its example");
    let text = format!(
        "schema = 1\nmachine = \"icelake-sp-2s\"\n{example}\n[run]\niterations = 64\n\n[[threads]]\ncpus = \"0-3\"\nscript = \"charge\"\n"
    );
    let loaded = load_str("README.md", &text).expect("loads");
    let built = build_all(&loaded, BuildOptions::default()).expect("builds");
    let results = scenarios::run::results::run_all(&built);
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
}

#[test]
fn the_memcg_structs_are_laid_out_as_the_threads_print_them() {
    let text = scenario(r#"["memcg/stock"]"#, "", "work 1");
    let loaded = load_str("scenarios/test.toml", &text).expect("loads");
    let built = build_all(&loaded, BuildOptions::default()).expect("builds");
    let memory = &built[0].config.memory;
    let layout = |instance: &str| {
        let def = memory.struct_of(memory.instance_index(instance).unwrap());
        let fields: Vec<(String, u32, u32)> = def
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.offset_bytes, f.size_bytes))
            .collect();
        (fields, def.size_bytes)
    };
    // pahole in memcg-stock-remote-draining: 48 bytes, 4 of tail padding.
    let (fields, size) = layout("memcg_stock");
    let expected = [
        ("stock_lock", 0, 4),
        ("nr_pages", 4, 4),
        ("cached", 8, 8),
        ("cached_objcg", 16, 8),
        ("cached_pgdat", 24, 8),
        ("nr_bytes", 32, 4),
        ("nr_slab_reclaimable_b", 36, 4),
        ("nr_slab_unreclaimable_b", 40, 4),
    ];
    let expected: Vec<(String, u32, u32)> = expected
        .iter()
        .map(|(n, o, s)| (n.to_string(), *o, *s))
        .collect();
    assert_eq!((fields, size), (expected, 48));
    // struct page_counter: 14 eight-byte fields, 112 bytes, `usage` first and
    // `parent` last (sctp-memcg-charge-regression).
    let (fields, size) = layout("memcg");
    assert_eq!(size, 112);
    assert_eq!(fields.len(), 14);
    assert!(fields.iter().all(|(_, _, s)| *s == 8));
    assert_eq!(fields[0].0, "usage");
    assert_eq!(fields[4], ("max".to_string(), 32, 8));
    assert_eq!(fields[13], ("parent".to_string(), 104, 8));
}

/// Runs `text` (built as [`outcome`] does); the rendered failure, or `ran`.
fn ran(text: &str) -> String {
    let loaded = match load_str("scenarios/test.toml", text) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    let built = match build_all(&loaded, BuildOptions::default()) {
        Ok(b) => b,
        Err(e) => return e.to_string(),
    };
    match scenarios::run::results::run_all(&built)
        .into_iter()
        .find_map(Result::err)
    {
        Some(failure) => format!("{failure:?}"),
        None => "ran".to_string(),
    }
}

/// The local_lock's interrupts off and on take exactly the machine's
/// `irq_save` and `irq_restore` costs, and `[machine.cost]` changes them.
#[test]
fn local_lock_charges_the_machines_instruction_costs() {
    let timed =
        "let t = now()\nlocal_lock_lock(0)\nlocal_lock_unlock(0)\nassert now() - t == expected";
    // `machine` is a preset name or, after the rest, a `[machine]` table.
    let with = |machine: &str, expected: u64| {
        let text = scenario(
            r#"["locks/local_lock"]"#,
            &format!("[params]\nexpected = {expected}\n"),
            timed,
        );
        match machine.strip_prefix('[') {
            Some(_) => text.replace("machine = \"icelake-sp-2s\"\n", "") + machine,
            None => text.replace("icelake-sp-2s", machine),
        }
    };
    // The presets' figures (4 + 4 cycles, assumed; `bounce presets show`).
    assert_eq!(ran(&with("icelake-sp-2s", 8)), "ran");
    assert_eq!(ran(&with("epyc-naples-2s", 8)), "ran");
    let overridden =
        "[machine]\npreset = \"icelake-sp-2s\"\ncost.irq_save = 30\ncost.irq_restore = 12\n";
    assert_eq!(ran(&with(overridden, 42)), "ran");
    // The check can fail: the old figure no longer holds.
    assert_ne!(ran(&with(overridden, 8)), "ran");
}

/// `measure/tsc`'s bracket takes exactly the machine's `rdtsc_ordered`
/// cost, on every preset (assumed 30 cycles, `bounce presets show`), and
/// `[machine.cost]` changes it.
#[test]
fn the_rdtsc_bracket_charges_the_machines_timer_cost() {
    let timed = "let t = now()\nrdtsc_bracket()\nassert now() - t == expected";
    let with = |machine: &str, expected: u64| {
        let text = scenario(
            r#"["measure/tsc"]"#,
            &format!("[params]\nexpected = {expected}\n"),
            timed,
        );
        match machine.strip_prefix('[') {
            Some(_) => text.replace("machine = \"icelake-sp-2s\"\n", "") + machine,
            None => text.replace("icelake-sp-2s", machine),
        }
    };
    assert_eq!(ran(&with("icelake-sp-2s", 30)), "ran");
    assert_eq!(ran(&with("epyc-naples-2s", 30)), "ran");
    let overridden = "[machine]\npreset = \"epyc-naples-2s\"\ncost.rdtsc_ordered = 64\n";
    assert_eq!(ran(&with(overridden, 64)), "ran");
    // The check can fail: the default no longer holds.
    assert_ne!(ran(&with(overridden, 30)), "ran");
}

#[test]
fn an_unknown_instruction_class_suggests_the_nearest() {
    let e = outcome(&scenario(
        r#"["locks/local_lock"]"#,
        "",
        "work cost(irq_sav)",
    ));
    assert!(
        e.contains("the machine gives no cost for the instruction class `irq_sav`"),
        "{e}"
    );
    assert!(e.contains("did you mean `irq_save`?"), "{e}");
    assert!(e.contains("irq_save, irq_restore"), "{e}");
    let e = outcome(&scenario(r#"["locks/local_lock"]"#, "", "work cost(1)"));
    assert!(
        e.contains("`cost` takes the name of an instruction class"),
        "{e}"
    );
}

/// A procedure's `cost_cycles` is charged on every call, before its body,
/// and stretched like `work` on a core whose sibling runs too.
#[test]
fn a_procedure_charges_its_own_cost_on_every_call() {
    let with = |cost: u64, expected: u64, cpus: &str| {
        scenario(
            "[]",
            &format!(
                "[params]\nexpected = {expected}\n\n[procedures.path]\ncost_cycles = {cost}\n\
                 body = \"return 1\"\n"
            ),
            "let t = now()\npath()\npath()\nassert now() - t == expected",
        )
        .replace("cpus = \"0-1\"", &format!("cpus = \"{cpus}\""))
    };
    // Without a cost a call takes no time of its own.
    assert_eq!(ran(&with(0, 0, "0-1")), "ran");
    // Two calls of 25 cycles.
    assert_eq!(ran(&with(25, 50, "0-1")), "ran");
    assert_ne!(ran(&with(25, 0, "0-1")), "ran");
    // CPU 0 and its SMT sibling 80 both running: 25 cycles at 65 % of the
    // core (icelake-sp-2s) take 39.
    assert_eq!(ran(&with(25, 78, "0,80")), "ran");
}

/// A scenario's `[procedures.NAME]` with `cost_cycles` alone costs the
/// library's procedure of that name, its body and parameters taken from the
/// module: a cost from a profile, without the body written again.
#[test]
fn a_library_procedure_takes_a_cost_without_its_body_written_again() {
    let with = |procedure: &str, expected: u64| {
        scenario(
            r#"["locks/local_lock"]"#,
            &format!("[params]\nexpected = {expected}\n\n{procedure}"),
            "let t = now()\nlocal_lock_lock(0)\nlocal_lock_unlock(0)\nassert now() - t == expected",
        )
    };
    // The lock's 20 cycles beside the preset's irq_save and irq_restore (4 + 4).
    let costed = "[procedures.local_lock_lock]\ncost_cycles = 20\n";
    assert_eq!(ran(&with(costed, 28)), "ran");
    assert_ne!(ran(&with(costed, 8)), "ran");
    // The body is still the module's: its errors name the module.
    let loaded = load_str("scenarios/test.toml", &with(costed, 28)).unwrap();
    assert_eq!(
        scenarios::format::document::library_of_procedure(&loaded.base.doc, "local_lock_lock")
            .map(|m| m.name),
        Some("locks/local_lock")
    );
    // A name no module defines still needs its body.
    let e = outcome(&with("[procedures.no_such]\ncost_cycles = 20\n", 8));
    assert!(e.contains("missing key `body`"), "{e}");
    // A scenario's own body, with or without a cost, replaces the module's.
    let own =
        "[procedures.local_lock_lock]\nparams = [\"lock\"]\ncost_cycles = 3\nbody = \"work 1\"\n";
    assert_eq!(ran(&with(own, 8)), "ran");
}

/// Run-time errors inside a module's procedure point at the module's file
/// in the repository (`library_module_path`): each is there, with the text
/// the binary holds.
#[test]
fn every_module_is_at_the_path_errors_name() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for module in models::library::MODULES {
        let path = scenarios::build::library_module_path(module);
        let text =
            std::fs::read_to_string(root.join(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(text, module.text, "{path}");
    }
}
