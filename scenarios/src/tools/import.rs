//! `bounce import btf`: a struct of the kernel's BTF as the `[structs.NAME]`
//! table a scenario takes, exactly the `fields` a `btf = { file, struct }`
//! entry gives when the scenario loads (the same reader, the same writer).

use std::path::Path;

use models::layout::layout_structs;

use crate::format::document::btf_file;
use crate::format::document::import::{btf_struct_choices, struct_toml};
use crate::format::error::closest;

/// The table of struct (or union) `struct_name` of the BTF at `path` (raw
/// BTF, or an ELF file with a `.BTF` section), with a comment line saying
/// where it came from; or a message naming the file and what is wrong.
pub fn btf_struct_table(path: &Path, struct_name: &str) -> Result<String, String> {
    let shown = path.display();
    let btf =
        btf_file::read(path).map_err(|why| format!("cannot read the BTF `{shown}`: {why}"))?;
    let spec = models::btf::import(&btf.bytes, struct_name, struct_name).map_err(|e| {
        if e.offset.is_some() {
            return format!("in the BTF `{shown}`, {}", btf.describe(&e));
        }
        let names = models::btf::struct_names(&btf.bytes);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let near = closest(struct_name, &names)
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        format!(
            "in `{shown}`: {}{near}; it has {}",
            e.message,
            btf_struct_choices(struct_name, &names, &shown.to_string())
        )
    })?;
    let laid = layout_structs(std::slice::from_ref(&spec))
        .map_err(|e| format!("in the BTF `{shown}`: {e}"))?;
    let kind = if spec.is_union { "union" } else { "struct" };
    Ok(format!(
        "# {kind} {struct_name} from the BTF {shown}: {} bytes, aligned to {}\n\
         [structs.{struct_name}]\n{}",
        laid[0].size_bytes,
        laid[0].align_bytes,
        struct_toml(&spec)
    ))
}
