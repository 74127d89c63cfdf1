//! Every chart kind, rendered from fixtures the way users and the book get
//! them (`run --out`, `validate --out`, `trace --svg`; the topology figure
//! through `plots` as xtask draws it), each checked to be a well-formed SVG
//! document of nonzero size holding the elements its kind draws. A chart
//! that stops rendering, or renders empty, fails here rather than in the
//! book or a user's `--out`.

use std::path::Path;

mod common;
use common::{assert_exit, bounce, TempDir};

/// A sweep of two variants over CPU counts, with a struct whose lines are
/// drawn: scaling, grouped comparison, attribution and shared lines (c2c)
/// per case, line maps.
const SWEEP: &str = r#"schema = 1
name = "every-chart"
machine = "icelake-sp-2s"
seed = 3

[run]
iterations = 20

[structs.counter]
fields = [
  { name = "value", type = "unsigned long" },
  { name = "other", type = "unsigned long" },
]

[instances.ctr]
struct = "counter"
kind = "global"

[scripts]
inc = """
fetch_add(ctr.value, 1)
ctr.other = ctr.other + 1
"""

[[threads]]
name = "workers"
cpus = "0"
script = "inc"

[[variants]]
name = "padded"
set = { "structs.counter.fields.other.align" = 64 }

[sweep]
cpus = [1, 2, 8]
"#;

/// What one SVG must hold: its element kinds, each at least so many
/// times, and texts.
struct Expect<'a> {
    file: String,
    elements: &'a [(&'a str, usize)],
    texts: &'a [&'a str],
}

/// Parses `svg`: the root is an `svg` element of positive width and height,
/// and it holds `expect`'s elements and texts.
fn check(svg: &str, expect: &Expect) {
    let name = &expect.file;
    assert!(!svg.is_empty(), "{name} is empty");
    let doc = roxmltree::Document::parse(svg)
        .unwrap_or_else(|e| panic!("{name} is not well-formed XML: {e}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg", "{name}: root element");
    for dim in ["width", "height"] {
        let v: f64 = root
            .attribute(dim)
            .unwrap_or_else(|| panic!("{name}: no {dim}"))
            .trim_end_matches("px")
            .parse()
            .unwrap_or_else(|e| panic!("{name}: {dim}: {e}"));
        assert!(v > 0.0, "{name}: {dim} {v}");
    }
    for (element, at_least) in expect.elements {
        let n = doc
            .descendants()
            .filter(|n| n.tag_name().name() == *element)
            .count();
        assert!(
            n >= *at_least,
            "{name}: {n} <{element}> elements, expected at least {at_least}"
        );
    }
    let text: String = doc
        .descendants()
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("\n");
    for t in expect.texts {
        assert!(text.contains(t), "{name} has no text `{t}`");
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One test on purpose: it keeps the list of chart kinds checked and
/// asserts at its end that no kind was left out, so every command that
/// draws charts runs in it.
#[test]
fn every_chart_kind_renders_a_well_formed_svg_with_its_elements() {
    let dir = TempDir::new("every-chart");
    let mut kinds_checked = Vec::new();

    // run --out: scaling, grouped comparison, attribution, line maps, c2c.
    let scenario = dir.join("sweep.toml");
    std::fs::write(&scenario, SWEEP).unwrap();
    let out = dir.join("out");
    assert_exit(
        &bounce(&["run", &scenario, "--out", &out, "-q", "--case-charts"]),
        0,
    );
    let charts = Path::new(&out).join("charts");
    // The sweep's charts, then each case's (`cases/CASE/NAME`), by path.
    let mut names: Vec<String> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    for case in std::fs::read_dir(charts.join("cases")).unwrap() {
        let case = case.unwrap().file_name().to_string_lossy().into_owned();
        for e in std::fs::read_dir(charts.join("cases").join(&case)).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            names.push(format!("cases/{case}/{name}"));
        }
    }
    names.sort();
    let kind_of = |prefix: &str| -> Vec<&String> {
        names
            .iter()
            .filter(|n| n.rsplit('/').next().is_some_and(|f| f.starts_with(prefix)))
            .collect()
    };
    for (prefix, elements, texts) in [
        (
            "scaling-",
            &[("polyline", 2), ("text", 5)][..],
            &["padded", "running CPUs"][..],
        ),
        (
            "comparison",
            &[("rect", 3)][..],
            &["against the same case"][..],
        ),
        ("attribution", &[("rect", 2)][..], &["ctr.value"][..]),
        ("lines-", &[("rect", 2)][..], &["value", "other"][..]),
        (
            "c2c",
            // Per offset a HITM bar and an access bar, and the key.
            &[("rect", 5 + 4)][..],
            &[
                "HITM, local node",
                "HITM per iteration (local + remote)",
                "0x0 ctr.value",
                "0x8 ctr.other",
                "CPUs (0-",
                ") on node 0",
            ][..],
        ),
    ] {
        let files = kind_of(prefix);
        if prefix == "c2c" {
            // One CPU shares nothing: the cases with HITM only.
            assert_eq!(files, ["cases/cpus_2/c2c.svg", "cases/cpus_8/c2c.svg"]);
        }
        assert!(
            !files.is_empty(),
            "run --out drew no {prefix}* chart: {names:?}"
        );
        for f in files {
            check(
                &read(&charts.join(f)),
                &Expect {
                    file: f.clone(),
                    elements,
                    texts,
                },
            );
        }
        kinds_checked.push(prefix);
    }

    // A single case with two variants: the plain comparison.
    let single = dir.join("single.toml");
    std::fs::write(&single, SWEEP.replace("[sweep]\ncpus = [1, 2, 8]\n", "")).unwrap();
    let single_out = dir.join("single-out");
    assert_exit(&bounce(&["run", &single, "--out", &single_out, "-q"]), 0);
    let comparison = Path::new(&single_out).join("charts/comparison.svg");
    check(
        &read(&comparison),
        &Expect {
            file: "comparison.svg (one case)".into(),
            elements: &[("rect", 2)],
            texts: &["padded"],
        },
    );
    kinds_checked.push("comparison (one case)");

    // validate --out: the scatter and the grid of classes.
    let validate_out = dir.join("validate");
    assert_exit(&bounce(&["validate", "--out", &validate_out]), 0);
    check(
        &read(&Path::new(&validate_out).join("validation-scatter.svg")),
        &Expect {
            file: "validation-scatter.svg".into(),
            // Held-out classes are circles (10, and the machines' swatches),
            // the classes a preset was fitted on squares (29).
            elements: &[("circle", 20), ("rect", 29)],
            texts: &[
                "simulated = measured",
                "±10 % band",
                "epyc-milan-7763-2s",
                "prediction (held out from the fit)",
                "calibration (the preset was fitted on it)",
                "-35.2 % (known miss), prediction",
            ],
        },
    );
    check(
        &read(&Path::new(&validate_out).join("validation-classes.svg")),
        &Expect {
            file: "validation-classes.svg".into(),
            // A bar per class of the ten measured machines, at least.
            elements: &[("rect", 40)],
            texts: &[
                "icelake-sp-8375c-2s",
                "cross-socket",
                "outside, a documented known miss",
                "-35.2 %  196.9 / 303.6 ns",
            ],
        },
    );
    kinds_checked.push("validation");

    // trace --svg: the message timeline.
    let timeline = dir.join("timeline.svg");
    assert_exit(
        &bounce(&["trace", &single, "--svg", &timeline, "--svg-steps", "4"]),
        0,
    );
    check(
        &read(Path::new(&timeline)),
        &Expect {
            file: "timeline.svg".into(),
            // Lanes and arrows (lines with heads), a label per message.
            elements: &[("polyline", 2), ("polygon", 2), ("text", 4)],
            texts: &["CPU 0 (core 0)", "coherence messages"],
        },
    );
    kinds_checked.push("timeline");

    // The topology figure of the book, as xtask draws it.
    let svg = plots::topology(&plots::TopologyChart {
        title: "two sockets".into(),
        subtitle: "a fixture".into(),
        sockets: (0..2)
            .map(|s| plots::SocketBox {
                label: format!("socket {s}"),
                nodes: vec![plots::NodeBox {
                    label: format!("node {s}"),
                    l3_domains: vec![plots::L3Box {
                        label: format!("L3 {s}"),
                        detail: "8 cores".into(),
                    }],
                }],
            })
            .collect(),
        notes: vec!["latencies in cycles".into()],
    })
    .unwrap();
    check(
        &svg,
        &Expect {
            file: "topology".into(),
            elements: &[("rect", 6)],
            texts: &["socket 1", "L3 0", "latencies in cycles"],
        },
    );
    kinds_checked.push("topology");
    assert_eq!(kinds_checked.len(), 9, "{kinds_checked:?}");
}

#[test]
fn results_json_carries_the_per_offset_detail_the_c2c_chart_draws() {
    let dir = TempDir::new("c2c-json");
    let scenario = dir.join("sweep.toml");
    std::fs::write(&scenario, SWEEP).unwrap();
    let out = dir.join("out");
    assert_exit(&bounce(&["run", &scenario, "--out", &out, "-q"]), 0);
    let doc: serde_json::Value =
        serde_json::from_str(&read(&Path::new(&out).join("results.json"))).unwrap();
    let base_at_8 = doc["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case_id"] == "cpus=8" && r["variant"] == "base")
        .unwrap();
    // Packed: both fields on line 0, touched by the eight CPUs of node 0.
    let line = &base_at_8["lines"][0];
    assert_eq!(line["cpus"], "0-7");
    assert_eq!(line["nodes"], serde_json::json!([0]));
    let offsets = line["offsets"].as_array().unwrap();
    let at = |k: usize, key: &str| offsets[k][key].as_u64().unwrap();
    assert_eq!(offsets.len(), 2, "{offsets:?}");
    assert_eq!(offsets[0]["offset_bytes"], 0);
    assert_eq!(offsets[0]["field"], "ctr.value");
    assert_eq!(offsets[1]["offset_bytes"], 8);
    assert_eq!(offsets[1]["field"], "ctr.other");
    // `fetch_add` on value, a load and a store of other: per offset they
    // add up to the line's traffic, and so do the HITM.
    assert_eq!((at(0, "loads"), at(0, "stores")), (0, 0));
    assert!(at(0, "atomics") > 0);
    assert_eq!(at(1, "loads"), at(1, "stores"));
    assert_eq!(at(1, "atomics"), 0);
    let sum = |key: &str| at(0, key) + at(1, key);
    for key in ["loads", "stores", "atomics"] {
        assert_eq!(sum(key), line["traffic"][key].as_u64().unwrap(), "{key}");
    }
    assert_eq!(
        sum("hitm_local") + sum("hitm_remote"),
        line["traffic"]["hitm"].as_u64().unwrap()
    );
    assert_eq!(
        sum("hitm_remote"),
        line["traffic"]["hitm_remote"].as_u64().unwrap()
    );
}
