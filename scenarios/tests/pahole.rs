//! Structs whose layout comes from a pahole listing: imported, run, shown,
//! and errors in the listing reported at its own file and line.

use scenarios::build::{build_all, BuildOptions};
use scenarios::run::results::run_variant;
use scenarios::tools::layout_view::{laid_out_structs, render_struct};
use scenarios::{load_file, load_str};
use std::path::Path;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/pahole");

fn scenario() -> String {
    std::fs::read_to_string(Path::new(DIR).join("memcg.toml")).unwrap()
}

#[test]
fn imported_structs_run_and_show_as_listed() {
    let loaded = load_file(&Path::new(DIR).join("memcg.toml")).expect("loads");
    let built = build_all(&loaded, BuildOptions::default()).expect("builds");
    let memory = &built[0].config.memory;
    let stock = &memory.structs[0];
    assert_eq!((stock.name.as_str(), stock.size_bytes), ("stock", 48));
    let memcg = &memory.structs[1];
    assert_eq!(memcg.size_bytes, 656);
    let at = |name: &str| memcg.fields[memcg.field_index(name).unwrap()].offset_bytes;
    assert_eq!((at("css.parent"), at("memory.usage")), (0xc0, 0xd0));
    let result = run_variant(&built[0]).expect("runs");
    let usage = result
        .fields
        .iter()
        .find(|f| f.name == "memcg.memory.usage")
        .unwrap();
    assert_eq!(usage.traffic.atomics, 400);
    // css.parent and memory.usage share line 3 (192..256): the false
    // sharing the thread describes.
    let parent = result
        .fields
        .iter()
        .find(|f| f.name == "memcg.css.parent")
        .unwrap();
    assert_eq!(usage.units, parent.units);
    assert!(parent.traffic.misses > 0);

    let structs = laid_out_structs(&loaded, &loaded.base.doc).unwrap();
    // An opaque member keeps the type the listing gives it.
    let memcg_text = render_struct(&structs[1], 64, None);
    assert!(
        memcg_text.contains(
            "        struct percpu_ref            refcnt;              /*    16    16 */\n"
        ),
        "{memcg_text}"
    );
    let text = render_struct(&structs[0], 64, None);
    assert_eq!(
        text,
        "struct stock {
    spinlock_t           stock_lock;               /*     0     4 */
    unsigned int         nr_pages;                 /*     4     4 */
    struct mem_cgroup *  cached;                   /*     8     8 */
    struct obj_cgroup *  cached_objcg;             /*    16     8 */
    struct pglist_data * cached_pgdat;             /*    24     8 */
    unsigned int         nr_bytes;                 /*    32     4 */
    int                  nr_slab_reclaimable_b;    /*    36     4 */
    int                  nr_slab_unreclaimable_b;  /*    40     4 */

    /* size: 48, cachelines: 1, members: 8 */
    /* padding: 4 */
    /* last cacheline: 48 bytes */
};
"
    );
}

fn error_of(text: &str) -> String {
    let path = Path::new(DIR).join("memcg.toml");
    let loaded = match load_str(path.to_str().unwrap(), text) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    match build_all(&loaded, BuildOptions::default()) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn listing_errors_name_the_listing_and_the_scenario_key() {
    let e = error_of(&scenario().replace(
        "struct = \"memcg_stock_pcp\"",
        "struct = \"memcg_stock_pc\"",
    ));
    assert!(
        e.contains("no `struct memcg_stock_pc` in the listing; it has memcg_stock_pcp")
            && e.contains("did you mean `memcg_stock_pcp`?")
            && e.contains("structs.stock.pahole.struct"),
        "{e}"
    );
    let e = error_of(&scenario().replace("memcg_stock_pcp.pahole", "no-such.pahole"));
    assert!(e.contains("cannot read the pahole listing"), "{e}");
    assert!(e.contains("no-such.pahole"), "{e}");
    assert!(
        e.contains("= valid: an existing file, named relative to the scenario's directory `"),
        "{e}"
    );
    let e = error_of(&scenario().replace(
        "pahole = { file = \"mem_cgroup_head.pahole\" }",
        "pahole = { file = \"mem_cgroup_head.pahole\" }\nfields = [{ name = \"x\", type = \"int\" }]",
    ));
    assert!(
        e.contains("`structs.mem_cgroup` has both `pahole` and `fields`"),
        "{e}"
    );
}

#[test]
fn an_error_inside_the_listing_names_its_line_and_quotes_no_more_of_it() {
    let dir = std::env::temp_dir().join(format!("bounce-pahole-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let listing = std::fs::read_to_string(Path::new(DIR).join("memcg_stock_pcp.pahole"))
        .unwrap()
        .replace("/*     8     8 */", "/*    12     8 */");
    std::fs::write(dir.join("memcg_stock_pcp.pahole"), listing).unwrap();
    std::fs::write(
        dir.join("mem_cgroup_head.pahole"),
        std::fs::read_to_string(Path::new(DIR).join("mem_cgroup_head.pahole")).unwrap(),
    )
    .unwrap();
    let path = dir.join("memcg.toml");
    // The listing is read when the file loads, before any variant.
    let e = load_str(path.to_str().unwrap(), &scenario())
        .unwrap_err()
        .to_string();
    let listing_path = dir.join("memcg_stock_pcp.pahole");
    assert_eq!(
        e,
        format!(
            "error: pahole lists `cached` at offset 12, but the C layout puts it at 8 (`nr_pages` ends at 8): \
             the listing does not match its types (a type of another size or alignment, or an attribute \
             pahole did not print) (in `structs.stock.pahole`)
--> {}:7:2",
            listing_path.display(),
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scenario on `flagged.pahole` (two 4-bit fields of one unit) whose
/// script `script` CPUs 0 and 1 run twice.
fn flagged_scenario(script: &str) -> String {
    format!(
        r#"schema = 1
machine = "icelake-sp-2s"

[run]
iterations = 2

[structs.flagged]
pahole = {{ file = "flagged.pahole" }}

[instances.g]
struct = "flagged"
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

/// Loads (from the test data directory), builds and runs; the failure, or `ran`.
fn run_flagged(script: &str) -> String {
    let path = Path::new(DIR).join("flagged.toml");
    let loaded = match load_str(path.to_str().unwrap(), &flagged_scenario(script)) {
        Ok(l) => l,
        Err(e) => return e.to_string(),
    };
    let built = match build_all(&loaded, BuildOptions::default()) {
        Ok(b) => b,
        Err(e) => return e.to_string(),
    };
    match run_variant(&built[0]) {
        Ok(_) => "ran".to_string(),
        Err(e) => format!("{e:?}"),
    }
}

#[test]
fn bitfields_of_one_unit_written_from_two_cpus_keep_both_values() {
    // Each CPU writes its own bitfield of the shared unit at the same time,
    // then both wait for the other's and check the two values.
    let both = "if iteration() == 0 {
  if cpu() == 0 { g.a = 5 } else { g.b = 3 }
  fence
  fetch_add(g.count, 1)
} else {
  while g.count != 2 { }
  assert g.a == 5
  assert g.b == 3
}";
    assert_eq!(run_flagged(both), "ran");
    // The checks can fail: a value the other CPU never wrote.
    assert_ne!(run_flagged(&both.replace("g.b == 3", "g.b == 4")), "ran");
    // A bitfield holds the low bits of what is stored, and its own CPU
    // reads it back through the store buffer the same way.
    let narrow = "if cpu() == 0 {
  g.a = 31
  assert g.a == 15
  assert g.b == 0
}";
    assert_eq!(run_flagged(narrow), "ran");
}

#[test]
fn a_bitfield_has_no_address_and_no_atomics() {
    let e = run_flagged("let p = &g.a");
    assert!(
        e.contains("`&` of the bitfield `g.a`: a bitfield shares its storage unit"),
        "{e}"
    );
    let e = run_flagged("fetch_add(g.b, 1)");
    assert!(e.contains("`fetch_add` of the bitfield `g.b`"), "{e}");
}

/// The memcg scenario with `variants` appended, loaded from the data
/// directory so that its listings are found.
fn with_variants(variants: &str) -> Result<scenarios::LoadedScenario, String> {
    let path = Path::new(DIR).join("memcg.toml");
    load_str(
        path.to_str().unwrap(),
        &format!("{}\n{variants}", scenario()),
    )
    .map_err(|e| e.to_string())
}

/// Offsets of a built variant's struct `s`, by dotted path.
fn offsets_of(built: &scenarios::build::BuiltVariant, s: usize, names: &[&str]) -> Vec<u32> {
    let def = &built.config.memory.structs[s];
    names
        .iter()
        .map(|n| def.fields[def.field_index(n).unwrap()].offset_bytes)
        .collect()
}

#[test]
fn variants_patch_imported_fields_by_dotted_path() {
    let loaded = with_variants(
        r#"
[[variants]]
name = "usage-own-line"
description = "memory.usage on a line of its own, as the SCTP thread tried"
[variants.set]
"structs.mem_cgroup.fields.memory.fields.usage.align" = 64

[[variants]]
name = "padded"
[variants.set]
"structs.stock.fields.cached.offset" = 16

[[variants]]
name = "reordered"
[variants.set]
"structs.stock.fields" = ["nr_pages", "stock_lock", "cached", "cached_objcg", "cached_pgdat", "nr_bytes", "nr_slab_reclaimable_b", "nr_slab_unreclaimable_b"]
"#,
    )
    .expect("loads");
    let built = build_all(&loaded, BuildOptions::default()).expect("builds");
    // The base: as listed.
    assert_eq!(
        offsets_of(
            &built[0],
            1,
            &["css.parent", "memory.usage", "memory.parent", "kmem.usage"]
        ),
        [0xc0, 0xd0, 0xd0 + 104, 432]
    );
    // `usage` aligned to 64 makes this written-out page_counter 64-aligned
    // (128 bytes): `memory` and the members after it move as a compiler
    // would move them (the other page_counter members are copies of their
    // own, patched separately: `fields.kmem.fields.usage.align`).
    let moved = offsets_of(
        &built[1],
        1,
        &[
            "css.parent",
            "memory.usage",
            "memory.min",
            "memsw.usage",
            "kmem.usage",
            "tcpmem.usage",
        ],
    );
    assert_eq!(moved, [0xc0, 256, 264, 384, 496, 608]);
    assert_eq!(built[1].config.memory.structs[1].size_bytes, 768);
    // css.parent and memory.usage no longer share a line.
    assert_ne!(moved[0] / 64, moved[1] / 64);
    // An explicit offset leaves a hole and pushes the rest along.
    assert_eq!(
        offsets_of(
            &built[2],
            0,
            &[
                "nr_pages",
                "cached",
                "cached_objcg",
                "nr_slab_unreclaimable_b"
            ]
        ),
        [4, 16, 24, 48]
    );
    assert_eq!(built[2].config.memory.structs[0].size_bytes, 56);
    // A new order lays out again by the C rules.
    assert_eq!(
        offsets_of(&built[3], 0, &["nr_pages", "stock_lock", "cached"]),
        [0, 4, 8]
    );
    let results = scenarios::run::results::run_all(&built);
    assert!(results.iter().all(|r| r.is_ok()));
}

#[test]
fn a_patch_of_an_imported_field_that_does_not_exist_is_an_error() {
    let e = with_variants(
        r#"
[[variants]]
name = "typo"
[variants.set]
"structs.mem_cgroup.fields.memory.fields.usag.align" = 64
"#,
    )
    .unwrap_err();
    assert!(
        e.contains("cannot set `structs.mem_cgroup.fields.memory.fields.usag.align`: `structs.mem_cgroup.fields.memory.fields` has no element named `usag`"),
        "{e}"
    );
    assert!(e.contains("did you mean `usage`?"), "{e}");
    assert!(e.contains("memcg.toml:"), "{e}");
    // A variant cannot import a listing of its own.
    let e = with_variants(
        r#"
[[variants]]
name = "again"
[variants.set]
"structs.stock" = { pahole = { file = "memcg_stock_pcp.pahole" } }
"#,
    )
    .unwrap_err();
    assert!(e.contains("is read when the file loads"), "{e}");
}

#[test]
fn written_out_members_and_bitfields_can_be_declared_by_hand() {
    let text = |fields: &str| {
        format!(
            "schema = 1\nmachine = \"icelake-sp-2s\"\n[run]\niterations = 1\n[structs.s]\nfields = [\n{fields}\n]\n[instances.g]\nstruct = \"s\"\nkind = \"global\"\n[scripts]\nt = \"g.flags.b = 1\"\n[[threads]]\ncpus = \"0\"\nscript = \"t\"\n"
        )
    };
    let ok = text(
        r#"{ name = "head", type = "long" },
{ name = "flags", label = "struct flags", fields = [{ name = "a", type = "unsigned int", bits = 3 }, { name = "b", type = "unsigned int", bits = 5, bit_offset = 3 }] },"#,
    );
    let loaded = load_str("s.toml", &ok).expect("loads");
    let built = build_all(&loaded, BuildOptions::default()).expect("builds");
    let def = &built[0].config.memory.structs[0];
    let field = |n: &str| &def.fields[def.field_index(n).unwrap()];
    // Both bitfields share the unit after `head`.
    assert_eq!(
        (field("flags.a").offset_bytes, field("flags.b").offset_bytes),
        (8, 8)
    );
    assert_eq!(
        field("flags.b").bits.map(|b| (b.shift, b.width)),
        Some((3, 5))
    );
    assert_eq!(def.size_bytes, 16);
    let e = load_str("s.toml", &text(r#"{ name = "head", size = 4, bits = 3 },"#))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bitfield `structs.s.fields.head` needs `type`"),
        "{e}"
    );
    let e = load_str(
        "s.toml",
        &text(r#"{ name = "head", type = "long", union = true },"#),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("`structs.s.fields.head.union` needs `fields`"),
        "{e}"
    );
}
