//! The committed book figures are the ones the scenarios give today: every
//! file is regenerated into a temporary directory and compared byte for byte
//! with `book/src/generated/`. A difference names the file and the command
//! that refreshes it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository root")
        .to_path_buf()
}

#[test]
fn committed_book_figures_are_fresh() {
    let root = root();
    let files = xtask::generate(&root).unwrap_or_else(|e| panic!("generating the book: {e}"));
    let fresh = std::env::temp_dir().join(format!("bounce-book-fresh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    xtask::write(&fresh, &files).unwrap_or_else(|e| panic!("{e}"));
    let committed = root.join(xtask::GENERATED_DIR);
    let relative = |dir: &Path, p: &Path| p.strip_prefix(dir).unwrap().to_path_buf();
    let fresh_files: Vec<PathBuf> = xtask::list_files(&fresh)
        .unwrap()
        .iter()
        .map(|p| relative(&fresh, p))
        .collect();
    let committed_files: Vec<PathBuf> = xtask::list_files(&committed)
        .unwrap()
        .iter()
        .map(|p| relative(&committed, p))
        .collect();
    let mut problems = Vec::new();
    for f in &fresh_files {
        let path = format!("{}/{}", xtask::GENERATED_DIR, f.display());
        match std::fs::read(committed.join(f)) {
            Err(_) => problems.push(format!("{path} is missing")),
            Ok(bytes) if bytes != std::fs::read(fresh.join(f)).unwrap() => {
                problems.push(format!("{path} is stale"))
            }
            Ok(_) => {}
        }
    }
    for f in committed_files.iter().filter(|f| !fresh_files.contains(f)) {
        problems.push(format!(
            "{}/{} is no longer generated",
            xtask::GENERATED_DIR,
            f.display()
        ));
    }
    let _ = std::fs::remove_dir_all(&fresh);
    assert!(
        problems.is_empty(),
        "the book's generated files differ from what the scenarios give now:\n  {}\nrefresh them with `{}` and commit the result",
        problems.join("\n  "),
        xtask::REFRESH_COMMAND
    );
}

#[test]
fn write_removes_files_no_longer_generated() {
    let dir = std::env::temp_dir().join(format!("bounce-book-write-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("old")).unwrap();
    std::fs::write(dir.join("old/gone.svg"), "stale").unwrap();
    let files = vec![xtask::Generated {
        path: "new/kept.md".into(),
        contents: "fresh\n".into(),
    }];
    xtask::write(&dir, &files).unwrap();
    let left: Vec<PathBuf> = xtask::list_files(&dir).unwrap();
    assert_eq!(left, vec![dir.join("new/kept.md")]);
    assert_eq!(
        std::fs::read_to_string(dir.join("new/kept.md")).unwrap(),
        "fresh\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
