//! The BTF importer on the fixture made by gcc and `pahole -J` from
//! tests/fixtures/btf/structs.c, and on broken copies of it.

use models::btf::{import, parse, struct_names};
use models::layout::{layout_structs, FieldType, LaidOutStruct, StructSpec};

const FIXTURE: &[u8] = include_bytes!("../../tests/fixtures/btf/structs.btf");

fn laid(spec: &StructSpec) -> LaidOutStruct {
    layout_structs(std::slice::from_ref(spec))
        .expect("lays out")
        .remove(0)
}

/// (name, offset, bytes) of each member.
fn members(l: &LaidOutStruct) -> Vec<(&str, u32, u32)> {
    l.fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset_bytes, f.total_bytes()))
        .collect()
}

#[test]
fn page_counter_as_linux_6_18_lays_it_out() {
    let spec = import(FIXTURE, "page_counter", "pc").unwrap();
    assert_eq!(spec.name, "pc");
    let l = laid(&spec);
    assert_eq!((l.size_bytes, l.align_bytes), (192, 64));
    let m = members(&l);
    // The two CACHELINE_PADDINGs take no room: `emin` carries their
    // alignment, so the C rules put it on the second line.
    assert_eq!(m[1], ("failcnt", 8, 8));
    assert_eq!(m[2], ("emin", 64, 8));
    assert_eq!(spec.fields[2].align, Some(64));
    assert_eq!(m[9], ("local_watermark", 120, 8));
    assert_eq!(m[10], ("protection_support", 128, 1));
    assert_eq!(m[16], ("parent", 168, 8));
    assert_eq!(m.len(), 17);
    // Every offset is the C rules' own: none is kept.
    assert!(spec.fields.iter().all(|f| f.offset.is_none()));
    assert_eq!(spec.fields[0].ty, FieldType::Named("atomic_long_t".into()));
    assert_eq!(
        spec.fields[16].ty,
        FieldType::Named("struct page_counter *".into())
    );
}

#[test]
fn bitfields_keep_their_units_and_bits() {
    let l = laid(&import(FIXTURE, "flags", "flags").unwrap());
    type Bits<'a> = (&'a str, u32, u32, Option<(u32, u32)>);
    let bits: Vec<Bits> = l
        .fields
        .iter()
        .map(|f| {
            (
                f.name.as_str(),
                f.offset_bytes,
                f.size_bytes,
                f.bit_field.map(|b| (b.bit_offset, b.bits)),
            )
        })
        .collect();
    assert_eq!(
        bits,
        [
            ("a", 0, 4, Some((0, 3))),
            ("b", 0, 4, Some((3, 5))),
            ("after_bits", 1, 1, None),
            ("c", 2, 1, Some((0, 2))),
            ("mode", 0, 4, Some((18, 1))),
            ("wide", 0, 8, Some((19, 40))),
        ]
    );
    assert_eq!((l.size_bytes, l.align_bytes), (8, 8));
}

#[test]
fn unions_arrays_and_aligned_members() {
    let spec = import(FIXTURE, "shapes", "shapes").unwrap();
    let l = laid(&spec);
    assert_eq!((l.size_bytes, l.align_bytes), (192, 64));
    assert_eq!(
        members(&l),
        [
            ("corners", 0, 32),
            ("grid", 32, 12),
            ("", 48, 8),
            ("tagged", 56, 8),
            ("callback", 64, 8),
            ("next", 72, 8),
            ("hot", 128, 8),
            ("count", 136, 4),
        ]
    );
    // `short grid[2][3]` is six shorts; `data[]` takes no room.
    assert_eq!(l.fields[1].count, 6);
    assert!(l.fields[2].anonymous);
    let union = l.fields[2].nested.as_ref().unwrap();
    assert!(union.is_union);
    assert_eq!(members(union), [("as_long", 0, 8), ("as_ints", 0, 8)]);
    assert_eq!(
        spec.fields[4].type_label.as_deref(),
        Some("void (*)(struct shapes *, int)")
    );
}

#[test]
fn packed_structs_and_wide_integers() {
    let l = laid(&import(FIXTURE, "holder", "holder").unwrap());
    assert_eq!(
        members(&l),
        [("tag", 0, 1), ("frame", 1, 13), ("big", 16, 16)]
    );
    assert_eq!((l.size_bytes, l.align_bytes), (32, 16));
    let wire = l.fields[1].nested.as_ref().unwrap();
    assert_eq!(wire.align_bytes, 1);
    assert_eq!(
        members(wire),
        [("kind", 0, 1), ("length", 1, 4), ("cookie", 5, 8)]
    );
}

#[test]
fn names_and_missing_structs() {
    assert_eq!(
        struct_names(FIXTURE),
        [
            "cacheline_padding",
            "page_counter",
            "flags",
            "point",
            "shapes",
            "wire",
            "holder"
        ]
    );
    let e = import(FIXTURE, "page_countr", "x").unwrap_err();
    assert_eq!(e.to_string(), "no struct or union `page_countr` in the BTF");
    let e = import(FIXTURE, "cacheline_padding", "x").unwrap_err();
    assert_eq!(
        e.to_string(),
        "at byte 184: type 12: `struct cacheline_padding` has no member that takes room (a \
         struct of no size cannot be simulated)"
    );
}

#[test]
fn broken_btf_is_an_error_at_its_byte() {
    let error = |data: &[u8]| parse(data).err().expect("refused").to_string();
    assert_eq!(
        error(&FIXTURE[..10]),
        "at byte 0: the data is 10 bytes, shorter than the 24-byte BTF header"
    );
    let mut bad = FIXTURE.to_vec();
    bad[0] = b'x';
    assert_eq!(
        error(&bad),
        "at byte 0: expected the BTF magic 0xeb9f, found bytes 0x78 0xeb: this is no BTF \
         (/sys/kernel/btf/vmlinux is, and so is the `.BTF` section of a vmlinux)"
    );
    let mut bad = FIXTURE.to_vec();
    bad[2] = 2;
    assert_eq!(
        error(&bad),
        "at byte 2: BTF version 2; only version 1 is defined"
    );
    let cut = &FIXTURE[..600];
    assert!(
        error(cut).starts_with("at byte 8: the type section (bytes 24 to "),
        "{}",
        error(cut)
    );
    // A type record of an unknown kind: the first record's info word.
    let mut bad = FIXTURE.to_vec();
    bad[24 + 7] = 30;
    assert_eq!(
        error(&bad),
        "at byte 28: type 1: unknown kind 30 (the format defines 1 to 19)"
    );
    // The string section without its closing NUL.
    let mut bad = FIXTURE.to_vec();
    let last = bad.len() - 1;
    bad[last] = b'x';
    assert_eq!(
        error(&bad),
        format!("at byte {last}: the string section does not end with a NUL byte")
    );
}
