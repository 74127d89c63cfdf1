//! The pahole importer on the listings of the case threads (copied as data
//! into tests/fixtures/pahole/), and on broken listings.

use models::layout::{flatten, layout_structs, StructSpec};
use models::pahole::{import, parse};
use sim_core::memory::StructDef;

const STOCK: &str = include_str!("../../tests/fixtures/pahole/memcg_stock_pcp.pahole");
const PAGE_COUNTER: &str = include_str!("../../tests/fixtures/pahole/page_counter.pahole");
const ALIGNED: &str = include_str!("../../tests/fixtures/pahole/page_counter_aligned.pahole");
const MEMCG: &str = include_str!("../../tests/fixtures/pahole/mem_cgroup_head.pahole");

fn flat(spec: &StructSpec) -> StructDef {
    let laid = layout_structs(std::slice::from_ref(spec)).expect("lays out");
    flatten(&laid[0]).expect("flattens")
}

fn offsets(def: &StructDef) -> Vec<(&str, u32, u32)> {
    def.fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset_bytes, f.total_bytes()))
        .collect()
}

#[test]
fn memcg_stock_pcp_from_the_thread() {
    let spec = import(STOCK, "memcg_stock_pcp", "stock").expect("imports");
    let def = flat(&spec);
    assert_eq!(def.name, "stock");
    assert_eq!((def.size_bytes, def.align_bytes), (48, 8));
    assert_eq!(
        offsets(&def),
        [
            ("stock_lock", 0, 4),
            ("nr_pages", 4, 4),
            ("cached", 8, 8),
            ("cached_objcg", 16, 8),
            ("cached_pgdat", 24, 8),
            ("nr_bytes", 32, 4),
            ("nr_slab_reclaimable_b", 36, 4),
            ("nr_slab_unreclaimable_b", 40, 4),
        ]
    );
}

#[test]
fn page_counter_plain_and_cacheline_aligned() {
    let def = flat(&import(PAGE_COUNTER, "page_counter", "pc").unwrap());
    assert_eq!(def.size_bytes, 112);
    assert_eq!(def.fields.len(), 14);
    assert_eq!(offsets(&def)[13], ("parent", 104, 8));

    let spec = import(ALIGNED, "page_counter", "pc").unwrap();
    assert_eq!(spec.align, Some(64));
    assert_eq!(spec.fields[0].align, Some(64));
    let def = flat(&spec);
    assert_eq!((def.size_bytes, def.align_bytes), (192, 64));
    assert_eq!(offsets(&def)[1], ("min", 64, 8));
}

#[test]
fn mem_cgroup_nests_the_listed_structs() {
    let def = flat(&import(MEMCG, "mem_cgroup", "memcg").unwrap());
    assert_eq!(def.size_bytes, 656);
    let at = |name: &str| def.fields[def.field_index(name).unwrap()].offset_bytes;
    assert_eq!(at("css.parent"), 0xc0);
    assert_eq!(at("memory.usage"), 0xd0);
    assert_eq!(at("id.ref"), 204);
    assert_eq!(at("swap.usage"), 320);
    assert_eq!(at("memsw.parent"), 320 + 104);
    assert_eq!(at("tcpmem.usage"), 544);
    // Types the listing does not define stay opaque, at their listed place.
    let refcnt = &def.fields[def.field_index("css.refcnt").unwrap()];
    assert_eq!((refcnt.offset_bytes, refcnt.size_bytes), (16, 16));
}

#[test]
fn bitfields_share_their_storage_unit() {
    let text = "struct flags {
	unsigned int               a:1;                  /*     0: 0  4 */
	unsigned int               b:3;                  /*     0: 1  4 */

	/* XXX 28 bits hole, try to pack */
	/* XXX 4 bytes hole, try to pack */

	long int                   c;                    /*     8     8 */

	/* size: 16, cachelines: 1, members: 3 */
};
";
    let def = flat(&import(text, "flags", "flags").unwrap());
    assert_eq!(offsets(&def), [("a", 0, 4), ("b", 0, 4), ("c", 8, 8)]);
    let listed = parse(text).unwrap();
    assert_eq!(listed[0].members[1].bit_field.unwrap().bit_offset, 1);
}

fn error_of(text: &str, name: &str) -> (usize, String) {
    let e = import(text, name, "s").unwrap_err();
    (e.line, e.message)
}

#[test]
fn disagreements_and_damage_are_errors_at_their_line() {
    // An offset the types cannot give: `cached` moved to 12.
    let bad = STOCK.replace("/*     8     8 */", "/*    12     8 */");
    let (line, message) = error_of(&bad, "memcg_stock_pcp");
    assert_eq!(line, 7);
    assert!(
        message.starts_with(
            "pahole lists `cached` at offset 12, but the C layout puts it at 8 (`nr_pages` ends at 8)"
        ),
        "{message}"
    );
    // The wrong footer size.
    let (line, message) = error_of(&STOCK.replace("size: 48", "size: 56"), "memcg_stock_pcp");
    assert_eq!(line, 14);
    assert_eq!(
        message,
        "the listing says size 56, but its members and alignment make 48"
    );
    // A hole that is not there.
    let (line, message) = error_of(
        &STOCK.replace(
            "\tunsigned int               nr_pages;",
            "\t/* XXX 4 bytes hole, try to pack */\n\tunsigned int               nr_pages;",
        ),
        "memcg_stock_pcp",
    );
    assert_eq!(line, 6);
    assert_eq!(
        message,
        "the listing says a 4-byte hole before `nr_pages`, but the gap is 0 bytes"
    );
    // The thread's partial listing, with members elided.
    let partial = "struct memcg_stock_pcp {
        spinlock_t                 stock_lock;           /*     0     4 */
        /* 4 bytes hole */
        struct mem_cgroup *        cached;               /*     8     8 */
	[...]
};
";
    let (line, message) = error_of(partial, "memcg_stock_pcp");
    assert_eq!(line, 5);
    assert!(
        message.starts_with("the listing elides members"),
        "{message}"
    );
    // Damage.
    let (line, message) = error_of("struct s {\n\tint a; /* 0 */\n};\n", "s");
    assert_eq!(
        (line, message.as_str()),
        (2, "expected a number for the size, found ``")
    );
    let (line, message) = error_of("struct s {\n\tint a;\n};\n", "s");
    assert_eq!(line, 2);
    assert_eq!(message, "expected `/* offset size */` after `a`, found ``");
    let (line, message) = error_of("struct s {\n\tint a; /* 0 4 */\n", "s");
    assert_eq!(
        (line, message.as_str()),
        (1, "`struct s` is never closed with `};`")
    );
    let (line, message) = error_of("$ pahole -C s vmlinux\nstruct s {\n};\n", "s");
    assert_eq!(line, 1);
    assert_eq!(
        message,
        "expected `struct NAME {` or `union NAME {` (a pahole listing), found `$`"
    );
    // A file that is no listing is quoted no further than its first token.
    let (line, message) = error_of("root:x:0:0:root:/root:/bin/bash\nbin:x:1:1::/:\n", "s");
    assert_eq!(line, 1);
    assert_eq!(
        message,
        "expected `struct NAME {` or `union NAME {` (a pahole listing), found \
         `root:x:0:0:root:/root...`"
    );
    let (line, message) = error_of(STOCK, "memcg_stock");
    assert_eq!(line, 0);
    assert_eq!(
        message,
        "no `struct memcg_stock` in the listing; it has memcg_stock_pcp"
    );
}

#[test]
fn no_input_panics() {
    // Every prefix and a few mutations of the real listings.
    for text in [STOCK, PAGE_COUNTER, ALIGNED, MEMCG] {
        for cut in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
            let _ = import(&text[..cut], "mem_cgroup", "s");
            let _ = import(&text[..cut], "page_counter", "s");
        }
        for (from, to) in [
            ("*/", ""),
            ("/*", ""),
            ("{", ""),
            (";", ""),
            ("  ", "0x"),
            ("8", "99999999999"),
        ] {
            let _ = import(&text.replace(from, to), "page_counter", "s");
            let _ = import(&text.replacen(from, to, 1), "mem_cgroup", "s");
        }
    }
}
