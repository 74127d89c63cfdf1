//! The README and the sources file as a reader of a clone meets them: every
//! relative link resolves inside the repository, the README's scenario
//! example means what it says, and every source the presets cite is listed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

mod common;
use common::{assert_exit, bounce, root, stdout};

/// The targets of the inline links `[text](target)` of a Markdown text,
/// outside code blocks and code spans.
fn link_targets(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
            continue;
        }
        if in_code_block {
            continue;
        }
        // Code spans hold examples, not links.
        let text: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to `-`.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors a Markdown file defines: its headings' and its `<a id>`s.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    let mut in_code_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code_block = !in_code_block;
        } else if !in_code_block && line.starts_with('#') {
            set.insert(heading_anchor(line.trim_start_matches('#')));
        }
        let mut rest = line;
        while let Some(i) = rest.find("<a id=\"") {
            let after = &rest[i + 7..];
            let end = after.find('"').unwrap_or(after.len());
            set.insert(after[..end].to_string());
            rest = &after[end..];
        }
    }
    set
}

/// Every relative link of `file` (a Markdown file of the repository) names
/// a file or directory inside the clone, and an anchor that exists.
fn check_links(file: &Path) -> Vec<String> {
    let repo = root().canonicalize().unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let dir = file.parent().unwrap();
    let mut broken = Vec::new();
    for target in link_targets(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let resolved: PathBuf = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        let Ok(canonical) = resolved.canonicalize() else {
            broken.push(format!("{target}: no such file"));
            continue;
        };
        if !canonical.starts_with(&repo) {
            broken.push(format!("{target}: outside the repository"));
            continue;
        }
        if !anchor.is_empty() {
            let defined = std::fs::read_to_string(&canonical)
                .map(|t| anchors(&t))
                .unwrap_or_default();
            if !defined.contains(anchor) {
                broken.push(format!("{target}: no anchor `{anchor}`"));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_readme_and_the_docs_resolves_inside_a_clone() {
    let mut broken = Vec::new();
    for file in [
        "README.md",
        "docs/sources.md",
        "docs/results-format.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
    ] {
        for b in check_links(&root().join(file)) {
            broken.push(format!("{file}: {b}"));
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_check_finds_a_broken_link() {
    let links = link_targets("see [a](docs/none.md), `[b](x.md)` and [c](#x)\n```\n[d](y)\n```\n");
    assert_eq!(links, ["docs/none.md", "#x"]);
    assert_eq!(
        heading_anchor(" Running a sweep on a cluster"),
        "running-a-sweep-on-a-cluster"
    );
    assert_eq!(
        heading_anchor("The `bounce` CLI: what's in it?"),
        "the-bounce-cli-whats-in-it"
    );
}

#[test]
fn the_readme_example_variant_changes_the_layout() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let example = readme
        .split("## Writing a scenario")
        .nth(1)
        .and_then(|s| s.split("```toml\n").nth(1))
        .and_then(|s| s.split("```").next())
        .expect("the example of `Writing a scenario`");
    let dir = common::TempDir::new("readme-example");
    let file = dir.0.join("example.toml");
    std::fs::write(&file, example).unwrap();
    let file = file.to_str().unwrap();
    let layout = |variant: &str| {
        let o = bounce(&["layout", file, "--struct", "counter", "--variant", variant]);
        assert_exit(&o, 0);
        stdout(&o)
    };
    let base = layout("base");
    let aligned = layout("aligned");
    assert!(
        base.contains("/* size: 24, cachelines: 1, members: 3 */"),
        "{base}"
    );
    assert!(
        aligned.contains("/* size: 64, cachelines: 1, members: 3 */"),
        "{aligned}"
    );
}

/// The README shows what its first command prints: the comparison table of
/// `bounce run scenarios/shipped/false-sharing.toml`, as the build prints
/// it now (a model change that moves it updates the README with
/// `BOUNCE_BLESS=1 cargo test --test readme`).
#[test]
fn the_readme_shows_what_its_first_command_prints() {
    let path = root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let o = bounce(&["run", "scenarios/shipped/false-sharing.toml"]);
    assert_exit(&o, 0);
    let printed = stdout(&o);
    // The header and the comparison table: up to the second blank line.
    let table: String = printed
        .split_inclusive('\n')
        .scan(0, |blank, line| {
            if line == "\n" {
                *blank += 1;
            }
            (*blank < 2).then_some(line)
        })
        .collect();
    let start = readme
        .find("```\nbounce: false-sharing")
        .expect("the README's example output")
        + "```\n".len();
    let end = start + readme[start..].find("```").expect("the example's end");
    if std::env::var_os("BOUNCE_BLESS").is_some() {
        let updated = format!("{}{}{}", &readme[..start], table, &readme[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        readme[start..end],
        table,
        "README.md's example output is not what `bounce run \
         scenarios/shipped/false-sharing.toml` prints; update it with \
         `BOUNCE_BLESS=1 cargo test --test readme`"
    );
}

/// The tags `[Sn]` and the sections `calibration.md §N` a text cites.
fn citations(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut tags = BTreeSet::new();
    let mut sections = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("[S") {
        let after = &rest[i + 2..];
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && after[digits.len()..].starts_with(']') {
            tags.insert(digits);
        }
        rest = after;
    }
    let mut rest = text;
    while let Some(i) = rest.find("calibration.md §") {
        let after = &rest[i + "calibration.md §".len()..];
        let number: String = after.chars().take_while(char::is_ascii_digit).collect();
        // `calibration.md §N` in the text that points here names no section.
        if !number.is_empty() {
            sections.insert(number);
        }
        rest = after;
    }
    (tags, sections)
}

#[test]
fn every_source_the_presets_cite_is_listed_in_the_sources_file() {
    let sources = std::fs::read_to_string(root().join("docs/sources.md")).unwrap();
    let defined = anchors(&sources);
    let table_sections: BTreeSet<String> = sources
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .map(|l| {
            l.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect();
    let list = bounce(&["presets", "--format", "csv"]);
    assert_exit(&list, 0);
    let names: Vec<String> = stdout(&list)
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let mut missing = Vec::new();
    for name in &names {
        let o = bounce(&["presets", "show", name]);
        assert_exit(&o, 0);
        let shown = stdout(&o);
        assert!(shown.contains("docs/sources.md"), "{shown}");
        let (tags, sections) = citations(&shown);
        assert!(!tags.is_empty(), "{name} cites no tag");
        for tag in tags {
            if !defined.contains(&format!("s{tag}")) {
                missing.push(format!("{name}: [S{tag}]"));
            }
        }
        for section in sections {
            if !table_sections.contains(&section) {
                missing.push(format!("{name}: calibration.md §{section}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in docs/sources.md:\n{}",
        missing.join("\n")
    );
}

/// The README's other samples of output are what their commands print
/// now: each line of a `$ bounce ...` sample is a line of the output (a
/// `...` line stands for lines left out), and the tutorial's sweep table is
/// printed whole. Without this they went stale when the model moved (the
/// optimize sample said -97.1 % for a long while after it printed -97.3 %).
#[test]
fn the_readmes_other_samples_are_what_their_commands_print() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for command in [
        "bounce optimize scenarios/shipped/false-sharing.toml --struct counter",
        "bounce check scenarios/shipped/contended-counter-sweep.toml",
    ] {
        let start = readme
            .find(&format!("```\n$ {command}\n"))
            .unwrap_or_else(|| panic!("no sample of `{command}` in the README"))
            + format!("```\n$ {command}\n").len();
        let sample = &readme[start..start + readme[start..].find("```").unwrap()];
        let args: Vec<&str> = command.split(' ').skip(1).collect();
        let o = bounce(&args);
        assert_exit(&o, 0);
        let printed = stdout(&o);
        let lines: BTreeSet<&str> = printed.lines().collect();
        for line in sample.lines().filter(|l| *l != "...") {
            assert!(
                lines.contains(line),
                "the README's sample of `{command}` shows\n{line}\nwhich it does not print:\n{printed}"
            );
        }
    }
    let intro = "`bounce run book/scenarios/tutorial.toml --compact`:\n\n```\n";
    let start = readme.find(intro).expect("the tutorial's sweep sample") + intro.len();
    let sample = &readme[start..start + readme[start..].find("```").unwrap()];
    let o = bounce(&[
        "run",
        "book/scenarios/tutorial.toml",
        "--compact",
        "--quiet",
    ]);
    assert_exit(&o, 0);
    assert_eq!(sample, stdout(&o));
}
