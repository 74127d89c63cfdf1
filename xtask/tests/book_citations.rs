//! Every calibration source tag the book prints (`[S1]`, `[S52]`, ... in the
//! chapters and in the generated pages, which copy `bounce presets show` and
//! `bounce validate`) has an entry in the bibliography a reader can open.
//! A preset that starts citing a new source fails here until the
//! bibliography lists it.

use std::path::{Path, PathBuf};

fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the repository root")
        .join("book/src")
}

/// The tags `[S<digits>]` in a text, as `S<digits>`.
fn source_tags(text: &str) -> Vec<String> {
    let mut tags = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("[S") {
        rest = &rest[at + 2..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if !digits.is_empty() && rest[digits.len()..].starts_with(']') {
            tags.push(format!("S{digits}"));
        }
    }
    tags
}

#[test]
fn every_source_tag_the_book_prints_is_in_the_bibliography() {
    let src = book_src();
    let bibliography =
        std::fs::read_to_string(src.join("bibliography.md")).expect("bibliography.md");
    let mut missing = Vec::new();
    for file in xtask::list_files(&src).expect("book sources") {
        let is_text = matches!(
            file.extension().and_then(|e| e.to_str()),
            Some("md" | "txt")
        );
        if !is_text || file.ends_with("bibliography.md") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("book file");
        for tag in source_tags(&text) {
            let anchor = format!("<span id=\"{}\"></span>**[{tag}]**", tag.to_lowercase());
            if !bibliography.contains(&anchor) && !missing.contains(&tag) {
                missing.push(tag);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "book/src/bibliography.md has no entry for {missing:?}"
    );
}

#[test]
fn source_tags_are_found_where_they_are_written() {
    assert_eq!(
        source_tags("[S1] a; [S52], [Sx] [S] [S3 ] [S10]"),
        ["S1", "S52", "S10"]
    );
}
