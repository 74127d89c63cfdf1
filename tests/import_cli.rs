//! `bounce import btf`: a struct of BTF as a scenario's `[structs.NAME]`
//! table, printed or written, and its errors.

mod common;
use common::{assert_exit, bounce, stderr, stdout};

const FIXTURE: &str = "tests/fixtures/btf/structs.btf";

#[test]
fn prints_the_table_a_scenario_takes() {
    let o = bounce(&["import", "btf", "--struct", "flags", "--file", FIXTURE]);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        r#"# struct flags from the BTF tests/fixtures/btf/structs.btf: 8 bytes, aligned to 8
[structs.flags]
fields = [
  { name = "a", type = "unsigned int", bits = 3, bit_offset = 0 },
  { name = "b", type = "unsigned int", bits = 5, bit_offset = 3 },
  { name = "after_bits", type = "char" },
  { name = "c", type = "u8", bits = 2, bit_offset = 0 },
  { name = "mode", type = "unsigned int", offset = 0, bits = 1, bit_offset = 18 },
  { name = "wide", type = "u64", offset = 0, bits = 40, bit_offset = 19 },
]
"#
    );
}

#[test]
fn reads_an_elf_files_btf_section_and_writes_whole() {
    let dir = std::env::temp_dir().join(format!("bounce-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("holder.toml");
    let o = bounce(&[
        "import",
        "btf",
        "--struct",
        "holder",
        "--file",
        "tests/fixtures/btf/structs.o",
        "--write",
        out.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "");
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(written.starts_with(
        "# struct holder from the BTF tests/fixtures/btf/structs.o: 32 bytes, aligned to 16\n\
         [structs.holder]\n"
    ));
    assert!(written.contains(r#"{ name = "big", size = 16, label = "__int128", align = 16 }"#));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_name_the_file_and_what_is_wrong() {
    let o = bounce(&[
        "import",
        "btf",
        "--struct",
        "page_countr",
        "--file",
        FIXTURE,
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: in `tests/fixtures/btf/structs.btf`: no struct or union `page_countr` in the BTF \
         (did you mean `page_counter`?); it has 7 structs and unions with members: \
         `cacheline_padding`, `flags`, `holder`, `page_counter`, `point`, `shapes`, `wire`\n"
    );
    // No near name: the candidates are still listed.
    let o = bounce(&["import", "btf", "--struct", "zzzz", "--file", FIXTURE]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: in `tests/fixtures/btf/structs.btf`: no struct or union `zzzz` in the BTF; it has \
         7 structs and unions with members: `cacheline_padding`, `flags`, `holder`, \
         `page_counter`, `point`, `shapes`, `wire`\n"
    );
    let o = bounce(&["import", "btf", "--struct", "x", "--file", "Cargo.toml"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: in the BTF `Cargo.toml`, at byte 0: expected the BTF magic 0xeb9f, found bytes \
         0x5b 0x77: this is no BTF (/sys/kernel/btf/vmlinux is, and so is the `.BTF` section of \
         a vmlinux)\n"
    );
    let o = bounce(&["import", "btf", "--struct", "x", "--file", "no/such.btf"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: cannot read the BTF `no/such.btf`: No such file or directory (os error 2)\n"
    );
}
