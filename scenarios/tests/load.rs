//! Positive tests: full scenarios load, variants patch the base.

use std::path::Path;

use scenarios::format::schema::{
    CpuSet, FieldShape, InstanceKind, Lookup, MachineRef, Protocol, RunLength, DEFAULT_BASE_NAME,
    DEFAULT_MAX_CYCLES, DEFAULT_SEED,
};
use scenarios::{load_file, load_str, LoadedScenario, ScenarioDoc};

fn fixture_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/false-sharing.toml")
}

fn fixture() -> LoadedScenario {
    load_file(&fixture_path()).unwrap_or_else(|e| panic!("{e}"))
}

fn field_names(doc: &ScenarioDoc, s: &str) -> Vec<String> {
    doc.structs[s]
        .fields
        .iter()
        .map(|f| f.name.get_ref().clone())
        .collect()
}

/// Walks the fixture key by key in the file's order, each value as loaded:
/// long because the file is, one assertion per key.
#[test]
fn full_scenario_loads() {
    let loaded = fixture();
    let base = &loaded.base;
    let doc = &base.doc;
    assert_eq!(base.name, "packed");
    assert_eq!(base.description, None);
    assert_eq!(*doc.schema.get_ref(), 1);
    assert_eq!(doc.name, "false-sharing");
    assert_eq!(
        doc.description.as_deref(),
        Some("Two hot counters in one cache line versus padded apart")
    );
    assert_eq!(doc.seed, 42);

    let MachineRef::Inline(m) = &doc.machine else {
        panic!("expected an inline machine")
    };
    assert_eq!(
        m.preset.as_ref().map(|p| p.get_ref().as_str()),
        Some("icelake-sp-2s")
    );
    assert_eq!(
        doc.machine.preset().map(|p| p.get_ref().as_str()),
        Some("icelake-sp-2s")
    );
    assert_eq!(m.name.as_deref(), Some("my-machine"));
    assert_eq!(m.clock_mhz.as_ref().map(|v| *v.get_ref()), Some(3400));
    assert_eq!(m.sockets.as_ref().map(|v| *v.get_ref()), Some(2));
    assert_eq!(m.cores_per_l3.as_ref().map(|v| *v.get_ref()), Some(40));
    assert_eq!(
        m.protocol.as_ref().map(|v| *v.get_ref()),
        Some(Protocol::Mesif)
    );
    assert_eq!(m.lookup.as_ref().map(|v| *v.get_ref()), Some(Lookup::Local));
    assert_eq!(m.adjacent_line_prefetch, Some(false));
    assert_eq!(
        m.store_buffer_entries.as_ref().map(|v| *v.get_ref()),
        Some(56)
    );
    assert_eq!(
        m.latency.dram_cycles.as_ref().map(|v| *v.get_ref()),
        Some(201)
    );
    assert_eq!(
        m.latency
            .hop_between_sockets_cycles
            .as_ref()
            .map(|v| *v.get_ref()),
        Some(148)
    );

    assert_eq!(doc.run.length(), RunLength::Iterations(2000));
    assert_eq!(doc.run.warmup_iterations, 100);
    assert_eq!(*doc.run.max_cycles.get_ref(), 10_000_000_000);

    assert_eq!(*doc.params["batch"].get_ref(), 32);
    assert_eq!(*doc.params["stride"].get_ref(), -1);

    assert_eq!(
        doc.structs["counter"].align.as_ref().map(|a| *a.get_ref()),
        Some(64)
    );
    assert_eq!(
        field_names(doc, "page_counter"),
        ["usage", "pad", "min", "max", "low"]
    );
    let fields = &doc.structs["page_counter"].fields;
    match fields[0].shape() {
        Some(FieldShape::Type(t)) => assert_eq!(t.get_ref(), "atomic_long_t"),
        other => panic!("{other:?}"),
    }
    match fields[1].shape() {
        Some(FieldShape::Size(s)) => assert_eq!(*s.get_ref(), 40),
        other => panic!("{other:?}"),
    }
    assert_eq!(fields[2].count(), 4);
    assert_eq!(fields[3].offset.as_ref().map(|o| *o.get_ref()), Some(64));
    assert_eq!(fields[4].align.as_ref().map(|o| *o.get_ref()), Some(64));

    let c = &doc.instances["c"];
    assert_eq!(c.struct_name.get_ref(), "counter");
    assert_eq!(*c.kind.get_ref(), InstanceKind::Global);
    assert_eq!((c.node(), c.count()), (1, 2));
    assert_eq!(*doc.instances["pc"].kind.get_ref(), InstanceKind::PerCpu);
    assert!(doc.instances["pc"].shared_aligned());
    assert_eq!(*doc.instances["pn"].kind.get_ref(), InstanceKind::PerNode);
    assert_eq!(
        (doc.instances["pn"].node(), doc.instances["pn"].count()),
        (0, 1)
    );

    let bump = &doc.procedures["bump"];
    let params: Vec<&str> = bump.params.iter().map(|p| p.get_ref().as_str()).collect();
    assert_eq!(params, ["field", "n"]);
    assert_eq!(bump.body.get_ref(), "atomic_add(field, n)\n");
    assert_eq!(
        doc.scripts["inc_b"].get_ref(),
        "repeat batch { bump(c.b, 1) }"
    );

    assert_eq!(doc.threads.len(), 2);
    assert_eq!(doc.threads[0].name(), "left");
    let expected: Vec<u32> = (0..16).chain(40..56).collect();
    assert_eq!(*doc.threads[0].cpus.get_ref(), CpuSet::List(expected));
    assert_eq!(doc.threads[1].name(), "inc_b");
    assert_eq!(doc.threads[1].script.get_ref(), "inc_b");

    // Spans point into the source.
    let span = doc.scripts["inc_b"].span();
    assert_eq!(
        &loaded.source.text[span],
        "\"repeat batch { bump(c.b, 1) }\""
    );
    let preset = doc.machine.preset().map(|p| p.span()).unwrap_or(0..0);
    assert_eq!(loaded.source.line_col(preset.start), (9, 10));

    let names: Vec<&str> = loaded.all().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["packed", "padded", "cycles"]);
}

#[test]
fn variant_patches_apply_and_leave_the_rest_alone() {
    let loaded = fixture();
    let base = &loaded.base.doc;
    let padded = &loaded.variants[0];
    assert_eq!(padded.name, "padded");
    assert_eq!(padded.description.as_deref(), Some("b on its own line"));
    let doc = &padded.doc;

    // align changed, and the new value's span is on the variant's line
    let b = &doc.structs["counter"].fields[1];
    assert_eq!(b.align.as_ref().map(|a| *a.get_ref()), Some(64));
    let span = b.align.as_ref().map(|a| a.span()).unwrap_or(0..0);
    let (line, _) = loaded.source.line_col(span.start);
    assert_eq!(
        loaded.source.line_text(span.start),
        "\"structs.counter.fields.b.align\" = 64",
        "line {line}"
    );
    assert_eq!(base.structs["counter"].fields[1].align, None);

    // fields reordered, each field unchanged
    assert_eq!(
        field_names(doc, "page_counter"),
        ["min", "usage", "max", "pad", "low"]
    );
    for f in &doc.structs["page_counter"].fields {
        let orig = base.structs["page_counter"]
            .fields
            .iter()
            .find(|g| g.name == f.name);
        assert_eq!(Some(f), orig);
    }

    // param changed
    assert_eq!(*doc.params["batch"].get_ref(), 64);
    assert_eq!(*base.params["batch"].get_ref(), 32);
    assert_eq!(doc.params["stride"], base.params["stride"]);

    // everything else is equal to the base
    assert_eq!(
        doc.structs["counter"].fields[0],
        base.structs["counter"].fields[0]
    );
    assert_eq!(doc.structs["counter"].align, base.structs["counter"].align);
    assert_eq!(doc.machine, base.machine);
    assert_eq!(doc.run, base.run);
    assert_eq!(doc.instances, base.instances);
    assert_eq!(doc.procedures, base.procedures);
    assert_eq!(doc.scripts, base.scripts);
    assert_eq!(doc.threads, base.threads);
    assert_eq!(
        (
            &doc.schema,
            &doc.name,
            &doc.description,
            &doc.base_name,
            doc.seed
        ),
        (
            &base.schema,
            &base.name,
            &base.description,
            &base.base_name,
            base.seed
        )
    );

    // Undo the three patches and the whole document equals the base.
    let mut undone = doc.clone();
    undone
        .structs
        .insert("counter".into(), base.structs["counter"].clone());
    undone
        .structs
        .insert("page_counter".into(), base.structs["page_counter"].clone());
    undone.params = base.params.clone();
    assert_eq!(&undone, base);
}

#[test]
fn variant_with_dotted_keys_inline_tables_and_renames() {
    let loaded = fixture();
    let base = &loaded.base.doc;
    let v = &loaded.variants[1];
    assert_eq!(v.name, "cycles");
    assert_eq!(v.description, None);
    let doc = &v.doc;
    // `run = { ... }` replaces the whole table.
    assert_eq!(doc.run.length(), RunLength::Cycles(1_000_000));
    assert_eq!(doc.run.warmup_iterations, 0);
    assert_eq!(*doc.run.max_cycles.get_ref(), DEFAULT_MAX_CYCLES);
    // Dotted keys address thread groups by name (or by script name).
    assert_eq!(*doc.threads[1].cpus.get_ref(), CpuSet::List(vec![2, 3]));
    assert_eq!(*doc.threads[0].cpus.get_ref(), CpuSet::List(vec![1]));
    assert_eq!(doc.threads[0].name(), "renamed");
    let MachineRef::Inline(m) = &doc.machine else {
        panic!("expected an inline machine")
    };
    assert_eq!(
        m.protocol.as_ref().map(|p| *p.get_ref()),
        Some(Protocol::Moesi)
    );
    assert_eq!(doc.structs, base.structs);
    assert_eq!(doc.params, base.params);
}

#[test]
fn defaults_apply() {
    let text = r#"
schema = 1
machine = "icelake-sp-2s"
[run]
cycles = 5000
[scripts]
s = ""
[[threads]]
cpus = "all"
script = "s"
"#;
    let loaded = load_str("dir/my-scenario.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let doc = &loaded.base.doc;
    assert_eq!(doc.name, "my-scenario");
    assert_eq!(loaded.base.name, DEFAULT_BASE_NAME);
    assert_eq!(doc.seed, DEFAULT_SEED);
    assert_eq!(doc.description, None);
    assert!(matches!(&doc.machine, MachineRef::Preset(p) if p.get_ref() == "icelake-sp-2s"));
    assert_eq!(doc.run.length(), RunLength::Cycles(5000));
    assert_eq!(doc.run.warmup_iterations, 0);
    assert_eq!(*doc.run.max_cycles.get_ref(), DEFAULT_MAX_CYCLES);
    assert!(doc.params.is_empty() && doc.structs.is_empty() && doc.instances.is_empty());
    assert_eq!(*doc.threads[0].cpus.get_ref(), CpuSet::All);
    assert_eq!(doc.threads[0].name(), "s");
    assert!(loaded.variants.is_empty());
}

#[test]
fn variant_can_insert_keys_and_index_arrays() {
    let text = r#"
schema = 1
machine = "icelake-sp-2s"
[run]
iterations = 10
[params]
a = 1
[scripts]
s = ""
[[threads]]
cpus = "0"
script = "s"

[[variants]]
name = "more"
set = { "params.a" = 2, "run.warmup_iterations" = 3, "threads.0.cpus" = "5", "seed" = 9 }
"#;
    let loaded = load_str("x.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let doc = &loaded.variants[0].doc;
    // A parameter is changed, never added (errors.rs: an undeclared one is
    // refused); a key the base leaves out is inserted.
    assert_eq!(*doc.params["a"].get_ref(), 2);
    assert_eq!(doc.run.warmup_iterations, 3);
    assert_eq!(loaded.base.doc.run.warmup_iterations, 0);
    assert_eq!(*doc.threads[0].cpus.get_ref(), CpuSet::List(vec![5]));
    assert_eq!(doc.seed, 9);
    assert_eq!(loaded.base.doc.seed, DEFAULT_SEED);
}

#[test]
fn set_entries_apply_in_file_order() {
    // Alphabetically `threads.aaa` sorts before `threads.zed`; in file order
    // the group is renamed first and then addressed by its new name.
    let text = r#"
schema = 1
machine = "icelake-sp-2s"
[run]
iterations = 10
[scripts]
s = ""
[[threads]]
name = "zed"
cpus = "0"
script = "s"

[[variants]]
name = "renamed"
[variants.set]
threads.zed.name = "aaa"
threads.aaa.cpus = "7"
"#;
    let loaded = load_str("x.toml", text).unwrap_or_else(|e| panic!("{e}"));
    let t = &loaded.variants[0].doc.threads[0];
    assert_eq!(t.name(), "aaa");
    assert_eq!(*t.cpus.get_ref(), CpuSet::List(vec![7]));
}
