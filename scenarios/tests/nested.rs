//! Nested structs and unions in scenario files: scripts reach members by
//! their dotted path, per-field attribution names them so, variants patch
//! the nested struct's own fields, and mistakes are input errors.

use scenarios::build::{build_all, BuildOptions};
use scenarios::load_str;
use scenarios::run::results::run_variant;

const NESTED: &str = r#"schema = 1
machine = "icelake-sp-2s"

[run]
iterations = 200

[structs.page_counter]
fields = [
  { name = "usage", type = "atomic_long_t" },
  { name = "min", type = "unsigned long" },
  { name = "max", type = "unsigned long" },
  { name = "parent", type = "struct page_counter *" },
]

[structs.css]
fields = [
  { name = "refcnt", size = 16 },
  { name = "parent", type = "pointer" },
]

[structs.stat]
union = true
fields = [
  { name = "pages", type = "long" },
  { name = "bytes", type = "int" },
]

[structs.slot]
fields = [
  { name = "tag", type = "char" },
  { name = "value", type = "long" },
]

[structs.memcg]
fields = [
  { name = "css", type = "struct css" },
  { name = "memory", type = "struct page_counter" },
  { name = "u", type = "union stat", anonymous = true },
  { name = "slots", type = "slot", count = 4 },
]

[instances.m]
struct = "memcg"
kind = "global"

[scripts]
charge = """
let p = m.css.parent
fetch_add(m.memory.usage, 1)
let x = m.memory.max
m.slots[tid()].value = m.slots[tid()].value + 1
m.pages = m.pages + 0
work 20
"""

[[threads]]
cpus = "0-3"
script = "charge"

[[variants]]
name = "usage-alone"
set = { "structs.page_counter.fields.usage.align" = 64, "structs.page_counter.fields.min.align" = 64 }
"#;

#[test]
fn scripts_reach_nested_members_and_attribution_names_their_paths() {
    let loaded = load_str("nested.toml", NESTED).expect("loads");
    let built = build_all(&loaded, BuildOptions::default()).expect("builds");
    let memory = &built[0].config.memory;
    let def = &memory.structs[memory.instances[0].struct_index];
    let names: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "css.refcnt",
            "css.parent",
            "memory.usage",
            "memory.min",
            "memory.max",
            "memory.parent",
            "pages",
            "bytes",
            "slots.tag",
            "slots.value",
        ]
    );
    let result = run_variant(&built[0]).expect("runs");
    let field = |name: &str| {
        result
            .fields
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no field {name}"))
    };
    // 4 CPUs x 200 iterations each: one atomic on usage, one read of
    // css.parent and of max per iteration.
    assert_eq!(field("m.memory.usage").traffic.atomics, 800);
    assert_eq!(field("m.css.parent").traffic.loads, 800);
    assert_eq!(field("m.memory.max").traffic.loads, 800);
    assert_eq!(field("m.slots.value").traffic.stores, 800);
    assert_eq!(field("m.pages").traffic.stores, 800);
    assert_eq!(field("m.bytes").traffic.accesses(), 0);
    // css (24) then page_counter (32): usage at 24 shares line 0 with css.parent.
    assert_eq!(field("m.memory.usage").units, field("m.css.parent").units);
    // The slots array: four elements 16 bytes apart from offset 64.
    let slots = &def.fields[def.field_index("slots.value").unwrap()];
    assert_eq!(
        (slots.offset_bytes, slots.stride_bytes, slots.count),
        (72, 16, 4)
    );

    // The variant patches page_counter itself; the memcg embedding it moves.
    let memory = &built[1].config.memory;
    let def = &memory.structs[memory.instances[0].struct_index];
    let at = |name: &str| def.fields[def.field_index(name).unwrap()].offset_bytes;
    assert_eq!(at("memory.usage"), 64);
    assert_eq!(at("memory.min"), 128);
    let result = run_variant(&built[1]).expect("runs");
    let usage = result
        .fields
        .iter()
        .find(|f| f.name == "m.memory.usage")
        .unwrap();
    let parent = result
        .fields
        .iter()
        .find(|f| f.name == "m.css.parent")
        .unwrap();
    assert_ne!(usage.units, parent.units);
}

fn error_of(text: &str) -> String {
    let loaded = match load_str("nested.toml", text) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    match build_all(&loaded, BuildOptions::default()) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn nested_mistakes_are_input_errors() {
    let e = error_of(&NESTED.replace("let p = m.css.parent", "let p = m.css.parnet"));
    assert!(
        e.contains("struct `memcg` (of instance `m`) has no field `css.parnet`")
            && e.contains("did you mean `css.parent`?"),
        "{e}"
    );
    let e = error_of(&NESTED.replace(
        "m.slots[tid()].value = m.slots[tid()].value + 1",
        "m.slots.value[tid()] = 1",
    ));
    assert!(
        e.contains("`slots.value` is indexed where its array is: write `m.slots[i].value`"),
        "{e}"
    );
    let e = error_of(&NESTED.replace("type = \"struct css\"", "type = \"struct cs\""));
    assert!(
        e.contains("unknown C type `struct cs`") && e.contains("did you mean `struct css`?"),
        "{e}"
    );
    let e = error_of(&NESTED.replace(
        "{ name = \"parent\", type = \"pointer\" },",
        "{ name = \"parent\", type = \"pointer\" },\n  { name = \"me\", type = \"memcg\" },",
    ));
    assert!(
        e.contains("`css` contains itself (css -> memcg -> css)"),
        "{e}"
    );
}
