//! `btf = { file, struct }` in a scenario: the struct read from BTF when the
//! file loads, patched by member path, and errors at the entry.

use std::path::Path;

use scenarios::build::{build_all, BuildOptions};
use scenarios::load_str;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// A scenario in the repository's root, so `file` is relative to it.
fn scenario(btf: &str) -> String {
    format!(
        r#"schema = 1
machine = "icelake-sp-2s"
seed = 1
[run]
iterations = 10
[structs.pc]
btf = {btf}
[instances.pc]
struct = "pc"
kind = "global"
[scripts]
s = "fetch_add(pc.usage, 1)\nwork 10"
[[threads]]
cpus = "0-1"
script = "s"
[[variants]]
name = "min-own-line"
set = {{ "structs.pc.fields.min.align" = 64 }}
"#
    )
}

fn path() -> String {
    Path::new(ROOT).join("scenario.toml").display().to_string()
}

#[test]
fn a_struct_from_btf_builds_and_patches_by_member() {
    for file in ["structs.btf", "structs.o"] {
        let text = scenario(&format!(
            r#"{{ file = "tests/fixtures/btf/{file}", struct = "page_counter" }}"#
        ));
        let loaded = load_str(&path(), &text).expect("loads");
        let built = build_all(&loaded, BuildOptions::default()).expect("builds");
        let base = &built[0].config.memory.structs[0];
        assert_eq!((base.size_bytes, base.align_bytes), (192, 64));
        let offset = |def: &sim_core::memory::StructDef, name: &str| {
            def.fields
                .iter()
                .find(|f| f.name == name)
                .unwrap()
                .offset_bytes
        };
        assert_eq!(offset(base, "emin"), 64);
        assert_eq!(offset(base, "min"), 136);
        let patched = &built[1].config.memory.structs[0];
        assert_eq!(offset(patched, "min"), 192);
        assert_eq!(patched.size_bytes, 256);
    }
}

#[test]
fn btf_errors_name_the_entry_and_the_byte() {
    let text = scenario(r#"{ file = "tests/fixtures/btf/structs.btf", struct = "page_countr" }"#);
    let e = load_str(&path(), &text).unwrap_err();
    let shown = format!("{ROOT}/tests/fixtures/btf/structs.btf");
    assert_eq!(
        e.to_string(),
        format!(
            "error: in `{shown}`: no struct or union `page_countr` in the BTF (in `structs.pc.btf.struct`)
 --> {path}:7:59
  |
7 | btf = {{ file = \"tests/fixtures/btf/structs.btf\", struct = \"page_countr\" }}
  |                                                           ^^^^^^^^^^^^^
  |
  = valid: one of its 7 structs and unions with members: `cacheline_padding`, `flags`, `holder`, `page_counter`, `point`, `shapes`, `wire`
  = help: did you mean `page_counter`?",
            path = path()
        )
    );
    let text = scenario(r#"{ file = "Cargo.toml" }"#);
    let e = load_str(&path(), &text).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "error: in the BTF `{ROOT}/Cargo.toml`, at byte 0: expected the BTF magic 0xeb9f"
        )),
        "{e}"
    );
    let text = scenario(r#"{ file = "tests/fixtures/btf/structs.btf", layout = 1 }"#);
    let e = load_str(&path(), &text).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("error: unknown key `layout` in `structs.pc.btf`"),
        "{e}"
    );
}
