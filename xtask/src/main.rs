//! `cargo run -p xtask -- book`: regenerates every chart, table, report and
//! trace of the book into `book/src/generated/` (see the library's
//! documentation). Exit codes as `bounce`'s: 0 done, 1 a run or a write
//! failed, 2 usage.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: cargo run -p xtask -- book\n  book   regenerate book/src/generated/ from the scenarios";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["book"] => book(),
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("error: unknown arguments {args:?}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn book() -> ExitCode {
    // The repository root: xtask/ sits in it.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    let files = match xtask::generate(&root) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let dir = root.join(xtask::GENERATED_DIR);
    if let Err(e) = xtask::write(&dir, &files) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    eprintln!(
        "xtask: wrote {} files to {}",
        files.len(),
        xtask::GENERATED_DIR
    );
    ExitCode::SUCCESS
}
