//! Nested structs and unions laid out as gcc lays them out on x86-64.
//!
//! The expected offsets and sizes were printed by gcc 12 (x86-64, LP64)
//! with `offsetof`/`sizeof`/`_Alignof` over the same declarations (kernel
//! types written as their x86-64 shapes: `atomic_long_t` a struct of one
//! long, `struct work_struct` 32 bytes, `struct rcu_work` 56, as in a
//! kernel without debug options). `struct page_counter` is 112 bytes and
//! `mem_cgroup` has `css.parent` at 0xc0 and `memory` at 0xd0, as the SCTP
//! memcg thread in ../shared/cases states.

use models::layout::{flatten, layout_structs, FieldSpec, FieldType, LaidOutStruct, StructSpec};
use sim_core::memory::StructDef;

fn field(name: &str, ty: &str) -> FieldSpec {
    FieldSpec::named(name, ty)
}

fn array(name: &str, ty: &str, count: u32) -> FieldSpec {
    FieldSpec {
        count,
        ..field(name, ty)
    }
}

fn strukt(name: &str, fields: Vec<FieldSpec>) -> StructSpec {
    StructSpec {
        name: name.into(),
        align: None,
        is_union: false,
        fields,
    }
}

fn union(name: &str, fields: Vec<FieldSpec>) -> StructSpec {
    StructSpec {
        is_union: true,
        ..strukt(name, fields)
    }
}

fn opaque(name: &str, bytes: u32) -> FieldSpec {
    FieldSpec {
        ty: FieldType::Bytes(bytes),
        ..field(name, "")
    }
}

/// The kernel structs of the memcg charge path (v6.0 era, no debug options).
fn memcg_specs() -> Vec<StructSpec> {
    let page_counter = strukt(
        "page_counter",
        [
            ("usage", "atomic_long_t"),
            ("min", "unsigned long"),
            ("low", "unsigned long"),
            ("high", "unsigned long"),
            ("max", "unsigned long"),
            ("emin", "unsigned long"),
            ("min_usage", "atomic_long_t"),
            ("children_min_usage", "atomic_long_t"),
            ("elow", "unsigned long"),
            ("low_usage", "atomic_long_t"),
            ("children_low_usage", "atomic_long_t"),
            ("watermark", "unsigned long"),
            ("failcnt", "unsigned long"),
            ("parent", "struct page_counter *"),
        ]
        .iter()
        .map(|(n, t)| field(n, t))
        .collect(),
    );
    let work_struct = strukt(
        "work_struct",
        vec![
            field("data", "atomic_long_t"),
            field("entry", "struct list_head"),
            field("func", "pointer"),
        ],
    );
    let rcu_work = strukt(
        "rcu_work",
        vec![
            field("work", "struct work_struct"),
            field("rcu", "struct rcu_head"),
            field("wq", "pointer"),
        ],
    );
    let css = strukt(
        "cgroup_subsys_state",
        vec![
            field("cgroup", "struct cgroup *"),
            field("ss", "struct cgroup_subsys *"),
            opaque("refcnt", 16),
            field("sibling", "struct list_head"),
            field("children", "struct list_head"),
            field("rstat_css_node", "struct list_head"),
            field("id", "int"),
            field("flags", "unsigned int"),
            field("serial_nr", "u64"),
            field("online_cnt", "atomic_t"),
            field("destroy_work", "struct work_struct"),
            field("destroy_rwork", "struct rcu_work"),
            field("parent", "struct cgroup_subsys_state *"),
        ],
    );
    let id = strukt(
        "mem_cgroup_id",
        vec![field("id", "int"), field("ref", "refcount_t")],
    );
    let swap_or_memsw = union(
        "swap_or_memsw",
        vec![
            field("swap", "struct page_counter"),
            field("memsw", "struct page_counter"),
        ],
    );
    let mut anonymous = field("u", "union swap_or_memsw");
    anonymous.anonymous = true;
    let mem_cgroup = strukt(
        "mem_cgroup",
        vec![
            field("css", "struct cgroup_subsys_state"),
            field("id", "struct mem_cgroup_id"),
            field("memory", "struct page_counter"),
            anonymous,
            field("kmem", "struct page_counter"),
            field("tcpmem", "struct page_counter"),
        ],
    );
    // Declared after their users on purpose: order does not matter.
    vec![
        mem_cgroup,
        page_counter,
        css,
        rcu_work,
        work_struct,
        id,
        swap_or_memsw,
    ]
}

fn laid(specs: &[StructSpec], name: &str) -> LaidOutStruct {
    layout_structs(specs)
        .expect("valid layout")
        .into_iter()
        .find(|s| s.name == name)
        .expect("struct")
}

fn flat(specs: &[StructSpec], name: &str) -> StructDef {
    flatten(&laid(specs, name)).expect("flattens")
}

fn offset_of(def: &StructDef, path: &str) -> u32 {
    let f = &def.fields[def
        .field_index(path)
        .unwrap_or_else(|| panic!("no field {path}"))];
    f.offset_bytes
}

#[test]
fn kernel_memcg_structs_match_gcc() {
    let specs = memcg_specs();
    let css = laid(&specs, "cgroup_subsys_state");
    assert_eq!((css.size_bytes, css.align_bytes), (200, 8));
    let at = |name: &str| {
        css.fields
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .offset_bytes
    };
    assert_eq!(at("online_cnt"), 96);
    assert_eq!(at("destroy_work"), 104);
    assert_eq!(at("destroy_rwork"), 136);
    assert_eq!(at("parent"), 192);

    let pc = laid(&specs, "page_counter");
    assert_eq!((pc.size_bytes, pc.align_bytes), (112, 8));

    let memcg = flat(&specs, "mem_cgroup");
    assert_eq!((memcg.size_bytes, memcg.align_bytes), (656, 8));
    assert_eq!(offset_of(&memcg, "css.parent"), 0xc0);
    assert_eq!(offset_of(&memcg, "id.id"), 200);
    assert_eq!(offset_of(&memcg, "memory.usage"), 0xd0);
    assert_eq!(offset_of(&memcg, "memory.parent"), 312);
    // The anonymous union's members are named as the parent's own.
    assert_eq!(offset_of(&memcg, "swap.usage"), 320);
    assert_eq!(offset_of(&memcg, "memsw.usage"), 320);
    assert_eq!(offset_of(&memcg, "kmem.usage"), 432);
    assert_eq!(offset_of(&memcg, "tcpmem.usage"), 544);
    assert_eq!(
        offset_of(&memcg, "css.destroy_rwork.work.entry"),
        136 + 8,
        "three levels deep"
    );
    assert!(memcg.field_index("u.swap.usage").is_none());
}

#[test]
fn unions_take_the_largest_member_and_its_alignment() {
    // struct outer { char a; union mix { char c; int i; short s[3]; } m;
    //                struct pair { char tag; long value; } items[3]; char z; }
    let specs = vec![
        strukt(
            "outer",
            vec![
                field("a", "char"),
                field("m", "union mix"),
                array("items", "struct pair", 3),
                field("z", "char"),
            ],
        ),
        union(
            "mix",
            vec![
                field("c", "char"),
                field("i", "int"),
                array("s", "short", 3),
            ],
        ),
        strukt("pair", vec![field("tag", "char"), field("value", "long")]),
        // struct holder { short h; union wide { char c[13]; int x; } w; char t; }
        strukt(
            "holder",
            vec![
                field("h", "short"),
                field("w", "union wide"),
                field("t", "char"),
            ],
        ),
        union("wide", vec![array("c", "char", 13), field("x", "int")]),
    ];
    let mix = laid(&specs, "mix");
    assert_eq!((mix.size_bytes, mix.align_bytes), (8, 4));
    assert!(mix.fields.iter().all(|f| f.offset_bytes == 0));
    let outer = flat(&specs, "outer");
    assert_eq!((outer.size_bytes, outer.align_bytes), (72, 8));
    assert_eq!(offset_of(&outer, "m.i"), 4);
    assert_eq!(offset_of(&outer, "items.tag"), 16);
    let value = &outer.fields[outer.field_index("items.value").unwrap()];
    // items[1].value at 40: element 0 at 24, a 16-byte stride.
    assert_eq!(
        (value.offset_bytes, value.stride_bytes, value.count),
        (24, 16, 3)
    );
    assert_eq!(value.offset_bytes + value.stride_bytes, 40);
    assert_eq!(value.written("i"), "items[i].value");
    assert_eq!(offset_of(&outer, "z"), 64);
    let s = &outer.fields[outer.field_index("m.s").unwrap()];
    assert_eq!((s.offset_bytes, s.count, s.stride_bytes), (4, 3, 2));
    assert_eq!(s.written("j"), "m.s[j]");

    let holder = laid(&specs, "holder");
    assert_eq!((holder.size_bytes, holder.align_bytes), (24, 4));
    assert_eq!(holder.fields[1].offset_bytes, 4);
    assert_eq!(holder.fields[1].size_bytes, 16);
    assert_eq!(holder.fields[2].offset_bytes, 20);
}

#[test]
fn aligned_nested_member_pads_the_outer_struct() {
    // page_counter with `usage` and `min` ____cacheline_aligned_in_smp, as
    // the thread's patch does: 3 lines, and mem_cgroup grows to match.
    let mut specs = memcg_specs();
    let pc = specs.iter_mut().find(|s| s.name == "page_counter").unwrap();
    pc.fields[0].align = Some(64);
    pc.fields[1].align = Some(64);
    let pc = laid(&specs, "page_counter");
    assert_eq!((pc.size_bytes, pc.align_bytes), (192, 64));
    let memcg = flat(&specs, "mem_cgroup");
    assert_eq!((memcg.size_bytes, memcg.align_bytes), (1024, 64));
    // css (200) and id (8) end at 208; memory starts on the next line.
    assert_eq!(offset_of(&memcg, "memory.usage"), 256);
    assert_eq!(offset_of(&memcg, "memory.min"), 320);
}

#[test]
fn nesting_errors_name_the_field() {
    let cycle = vec![
        strukt("a", vec![field("b", "struct b")]),
        strukt("b", vec![field("a", "struct a")]),
    ];
    let e = layout_structs(&cycle).unwrap_err();
    assert_eq!(
        (e.owner.as_str(), e.field.as_deref(), e.key),
        ("b", Some("a"), "type")
    );
    assert_eq!(
        e.message,
        "`a` contains itself (a -> b -> a); a struct can hold a pointer to itself \
         (`struct a *`), not itself"
    );

    let mismatch = vec![
        strukt("s", vec![field("u", "union t")]),
        strukt("t", vec![field("x", "int")]),
    ];
    let e = layout_structs(&mismatch).unwrap_err();
    assert_eq!(e.message, "`t` is declared as a struct, not a union");

    let mut scalar_anon = field("x", "int");
    scalar_anon.anonymous = true;
    let e = layout_structs(&[strukt("s", vec![scalar_anon])]).unwrap_err();
    assert_eq!(e.key, "anonymous");

    let mut offset_in_union = field("x", "int");
    offset_in_union.offset = Some(4);
    let e = layout_structs(&[union("u", vec![field("c", "char"), offset_in_union])]).unwrap_err();
    assert_eq!(
        e.message,
        "offset 4 in a union, whose members all start at 0"
    );

    // An array inside an array of structs would need two indices.
    let specs = vec![
        strukt("outer", vec![array("rows", "struct row", 4)]),
        strukt("row", vec![array("cells", "long", 8)]),
    ];
    let e = flatten(&laid(&specs, "outer")).unwrap_err();
    assert_eq!((e.field.as_deref(), e.key), (Some("rows"), "count"));
    assert!(
        e.message.starts_with("`rows.cells` would need two indices"),
        "{e}"
    );

    // An anonymous member whose field collides with a sibling.
    let mut anon = field("u", "union v");
    anon.anonymous = true;
    let specs = vec![
        strukt("s", vec![field("x", "int"), anon]),
        union("v", vec![field("x", "long")]),
    ];
    let e = flatten(&laid(&specs, "s")).unwrap_err();
    assert_eq!(e.key, "name");
}
