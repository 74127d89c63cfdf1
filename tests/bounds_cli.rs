//! Every bound real (issue 19): each reproducer of the adversarial pass,
//! as a user meets it through the binary, with its exact message and exit
//! code. Inputs that only the loader or the builder see are tested in the
//! crates (`scenarios/tests/bounds.rs`).

mod common;
use common::{assert_exit, bounce, stderr, stdout, TempDir};

/// A scenario of one struct `s` (`fields`), one global instance `g`, and
/// one CPU running `script`, with `run` as its `[run]` table.
fn scenario(fields: &str, script: &str, run: &str) -> String {
    format!(
        "schema = 1\nname = \"t\"\nmachine = \"icelake-sp-2s\"\nseed = 1\n\n[run]\n{run}\n\n\
         [structs.s]\nfields = {fields}\n\n[instances.g]\nstruct = \"s\"\nkind = \"global\"\n\n\
         [scripts]\nmain = \"\"\"\n{script}\n\"\"\"\n\n[[threads]]\ncpus = \"0\"\nscript = \"main\"\n"
    )
}

const ONE_FIELD: &str = r#"[{ name = "a", type = "unsigned long" }]"#;

/// Defect 1: a scenario path that names an endless device is read no
/// further than the limit.
#[test]
#[cfg(unix)]
fn an_endless_scenario_file_is_refused_at_the_limit() {
    for (command, path) in [("run", "/dev/zero"), ("check", "/dev/urandom")] {
        let o = bounce(&[command, path]);
        assert_exit(&o, 2);
        assert_eq!(
            stderr(&o),
            format!(
                "error: `{path}` is larger than the limit of 1048576 bytes for a scenario file\n\
                 --> {path}\n = valid: a smaller file, or raise the limit with \
                 `--set-limit scenario_bytes=2097152`\n"
            )
        );
    }
}

/// Defect 1: a shard whose files are links to an endless device, and a
/// matrix directory of such links, are refused, not read to the end.
#[test]
#[cfg(unix)]
fn merge_and_validate_read_no_endless_file() {
    let dir = TempDir::new("endless");
    let shard = dir.0.join("shard");
    std::fs::create_dir_all(&shard).unwrap();
    std::os::unix::fs::symlink("/dev/zero", shard.join("shard.json")).unwrap();
    let out = dir.join("out");
    let shard_arg = dir.join("shard");
    let o = bounce(&[
        "merge",
        &out,
        &shard_arg,
        "--set-limit",
        "data_file_bytes=100000",
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        format!(
            "error: cannot read `{shard_arg}/shard.json`: it is larger than the limit of 100000 \
             bytes (raise it with `--set-limit data_file_bytes=N`)\nerror: none of the 1 \
             director(ies) given holds a shard: run every shard again\nerror: nothing written \
             to `{out}`\n"
        )
    );
    assert!(!dir.0.join("out").exists());

    let data = dir.0.join("data");
    std::fs::create_dir_all(&data).unwrap();
    for name in ["icelake-sp-8375c-2s.csv", "icelake-sp-8360y-2s.csv"] {
        std::os::unix::fs::symlink("/dev/zero", data.join(name)).unwrap();
    }
    let data_arg = dir.join("data");
    let o = bounce(&[
        "validate",
        "--machine",
        "icelake-sp-2s",
        "--data",
        &data_arg,
        "--set-limit",
        "data_file_bytes=100000",
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        format!(
            "error: cannot read the matrix `{data_arg}/icelake-sp-8375c-2s.csv`: it is larger than \
             the limit of 100000 bytes; raise the limit with `--set-limit data_file_bytes=N`\n"
        )
    );
}

/// Defect 2: the budget a scenario may set is bounded, so the run's end
/// stays below the top of the saturating clock; at the highest budget the
/// limit allows, the same script is truncated instead of spinning forever.
#[test]
fn a_cycle_budget_at_the_top_of_the_clock_is_refused_and_the_highest_allowed_one_ends() {
    let dir = TempDir::new("max-cycles");
    let path = dir.join("t.toml");
    std::fs::write(
        &path,
        scenario(
            ONE_FIELD,
            "work 9223372036854775807",
            "iterations = 3\nmax_cycles = 18446744073709551615",
        ),
    )
    .unwrap();
    let o = bounce(&["check", &path]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        format!(
            "error: `run.max_cycles` is 18446744073709551615, more than the limit of \
             1000000000000\n --> {path}:8:14\n  |\n8 | max_cycles = 18446744073709551615\n  \
             |              ^^^^^^^^^^^^^^^^^^^^\n  |\n  = valid: at most 1000000000000 cycles; the \
             limit can be raised to 4611686018427387904 at most\n"
        )
    );
    let o = bounce(&[
        "check",
        &path,
        "--set-limit",
        "max_cycles=18446744073709551615",
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: --set-limit max_cycles=18446744073709551615: the value of limit `max_cycles` \
         must be at most 4611686018427387904, found 18446744073709551615\n"
    );
    std::fs::write(
        &path,
        scenario(
            ONE_FIELD,
            "work 9223372036854775807",
            "iterations = 3\nmax_cycles = 4611686018427387904",
        ),
    )
    .unwrap();
    let o = bounce(&[
        "run",
        &path,
        "--set-limit",
        "max_cycles=4611686018427387904",
    ]);
    assert_exit(&o, 1);
    // Truncated past 2^63 (the work, after the CPU's seeded start).
    let err = stderr(&o);
    let cycle: u64 = err
        .strip_prefix("error: variant `base` has no result: run truncated at cycle ")
        .and_then(|e| e.split(':').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(cycle > 9_223_372_036_854_775_807, "{err}");
    assert!(
        err.contains(": it hit the cycle budget (run.max_cycles = 4611686018427387904)"),
        "{err}"
    );
}

/// Imports resolve inside the scenario's directory tree: an absolute path,
/// `..` and a link out of it are refused unless the user says otherwise,
/// and a file that is no listing is quoted no further than its first token.
#[test]
#[cfg(unix)]
fn imports_stay_inside_the_scenario_directory() {
    let dir = TempDir::new("imports");
    let sub = dir.0.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(
        dir.0.join("flagged.pahole"),
        std::fs::read_to_string(common::root().join("tests/fixtures/pahole/flagged.pahole"))
            .unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.0.join("secret.txt"),
        "root:x:0:0:root:/root:/bin/bash\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("../flagged.pahole", sub.join("link.pahole")).unwrap();
    let with_import = |file: &str| {
        format!(
            "{}\n[structs.flagged]\npahole = {{ file = \"{file}\" }}\n",
            scenario(ONE_FIELD, "g.a = 1", "iterations = 3")
        )
    };
    let secret = dir.join("secret.txt");
    for (name, file, how) in [
        (
            "up.toml",
            "../flagged.pahole".to_string(),
            "through `..` or a symbolic link",
        ),
        (
            "link.toml",
            "link.pahole".to_string(),
            "through `..` or a symbolic link",
        ),
        ("abs.toml", secret.clone(), "an absolute path"),
    ] {
        let path = sub.join(name);
        std::fs::write(&path, with_import(&file)).unwrap();
        let path = path.to_str().unwrap().to_string();
        let o = bounce(&["check", &path]);
        assert_exit(&o, 2);
        let shown = if file.starts_with('/') {
            file.clone()
        } else {
            format!("{}/{file}", sub.display())
        };
        let pad = " ".repeat(file.len() + 2);
        assert_eq!(
            stderr(&o),
            format!(
                "error: the pahole listing `{shown}` is outside the scenario's directory `{}` \
                 ({how}); a scenario's imports stay inside its own directory tree (in \
                 `structs.flagged.pahole.file`)\n  --> {path}:26:19\n   |\n26 | pahole = {{ file \
                 = \"{file}\" }}\n   |                   {}\n   |\n   = valid: a path relative to the \
                 scenario file that stays below its directory; or `--allow-imports-outside` to \
                 read it from there, if you trust the scenario\n",
                sub.display(),
                "^".repeat(pad.len())
            )
        );
        assert!(!stderr(&o).contains("root:x"));
    }
    let link = sub.join("link.toml").to_str().unwrap().to_string();
    let o = bounce(&["check", &link, "--allow-imports-outside"]);
    assert_exit(&o, 0);
    let abs = sub.join("abs.toml").to_str().unwrap().to_string();
    let o = bounce(&["check", &abs, "--allow-imports-outside"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        format!(
            "error: expected `struct NAME {{` or `union NAME {{` (a pahole listing), found \
             `root:x:0:0:root:/root...` (in `structs.flagged.pahole`)\n--> {secret}:1:1\n"
        )
    );
    assert_eq!(stdout(&o), "");
}

/// Defect 5: `check` builds every case of a sweep as `run` does, so it
/// refuses what `run` refuses, with the same message.
#[test]
fn check_refuses_the_sweeps_run_refuses() {
    let dir = TempDir::new("sweep-check");
    let base = scenario(ONE_FIELD, "g.a = g.a + 1", "iterations = 3");
    for (name, sweep, message) in [
        (
            "machine.toml",
            "machine = [\"icelake-sp-2s\", \"no-such-machine\"]",
            "error: in sweep case `machine=no-such-machine`, variant `base`: unknown machine \
             preset `no-such-machine` (in `machine`)\n  --> PATH:26:29\n   |\n26 | machine = \
             [\"icelake-sp-2s\", \"no-such-machine\"]\n   |                             \
             ^^^^^^^^^^^^^^^^^\n   |\n   = valid: icelake-sp-2s, cascadelake-sp-2s, cascadelake-sp-4s, \
             cascadelake-ap-2s, epyc-naples-2s, epyc-milan-2s, epyc-genoa-1s, epyc-genoa-2s, \
             bergamo-1s, bergamo-2s\n",
        ),
        (
            "script.toml",
            "\"scripts.main\" = [\"g.a = 1\", \"g.a = = 2\"]",
            "error: in sweep case `scripts.main=\"g.a = = 2\"`, variant `base`: expected an \
             expression after `=`, found `=` (in `scripts.main`)\n  --> PATH:26:37\n   |\n26 | \
             \"scripts.main\" = [\"g.a = 1\", \"g.a = = 2\"]\n   |                                     \
             ^\n",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, format!("{base}\n[sweep]\n{sweep}\n")).unwrap();
        let expected = message.replace("PATH", &path);
        let checked = bounce(&["check", &path]);
        assert_exit(&checked, 2);
        assert_eq!(stderr(&checked), expected);
        let ran = bounce(&["run", &path]);
        assert_exit(&ran, 2);
        assert_eq!(stderr(&ran), expected);
    }
}

/// Lowering `steps_without_time` is the user's choice, not a bug in the
/// simulator: the message says which bound acted and how to raise it.
#[test]
fn a_lowered_steps_without_time_is_not_called_a_bug() {
    let o = bounce(&[
        "run",
        "scenarios/shipped/false-sharing.toml",
        "--set-limit",
        "steps_without_time=1",
        "--quiet",
    ]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: variant `packed` has no result: no progress at cycle "),
        "{err}"
    );
    assert!(
        err.contains(
            ": the run processed 1 events without simulated time advancing, the bound \
             `steps_without_time` as lowered from its default 1000000; no result is reported. \
             CPUs that meet at one cycle take several events there: raise the bound with \
             `--set-limit steps_without_time=N`.\n"
        ),
        "{err}"
    );
    assert!(!err.contains("bug"), "{err}");
}

/// `--jobs` is bounded: `--jobs 100000` spawned over 14 000 threads.
#[test]
fn jobs_are_bounded() {
    let o = bounce(&[
        "--jobs",
        "100000",
        "check",
        "scenarios/shipped/false-sharing.toml",
    ]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: --jobs must be from 1 to 256 (runs are independent, one thread each; more \
         threads than cores only add memory), found 100000\n"
    );
    let o = bounce(&[
        "--jobs",
        "256",
        "check",
        "scenarios/shipped/false-sharing.toml",
    ]);
    assert_exit(&o, 0);
}

/// A variant name too long for a file name (names allow any length) left
/// the results without their charts; the chart's file name is cut and
/// made distinct by a hash, and the name stays whole in the results.
#[test]
fn a_variant_name_that_cannot_be_a_file_name_still_gets_its_chart() {
    let dir = TempDir::new("long-name");
    let long = "v".repeat(300);
    let path = dir.join("t.toml");
    std::fs::write(
        &path,
        format!(
            "{}\n[[variants]]\nname = \"{long}\"\nset = {{ \"run.iterations\" = 4 }}\n",
            scenario(ONE_FIELD, "g.a = g.a + 1", "iterations = 3")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = bounce(&["run", &path, "--out", &out, "--quiet"]);
    assert_exit(&o, 0);
    let mut charts: Vec<String> = std::fs::read_dir(dir.0.join("out/charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    charts.sort();
    let cut = bounce::charts::file_safe(&long);
    assert_eq!(cut.len(), 80);
    assert_eq!(
        charts,
        vec![
            "attribution.svg".to_string(),
            "comparison.svg".to_string(),
            "lines-s-base.svg".to_string(),
            format!("lines-s-{cut}.svg"),
        ]
    );
    let results = std::fs::read_to_string(dir.0.join("out/results.json")).unwrap();
    assert!(results.contains(&format!("\"{long}\"")));
}

/// `--svg`, `--write-variant`, `--write-scenario` and `--csv` refuse to
/// overwrite a file without `--force`, before doing any work.
#[test]
fn files_are_not_overwritten_without_force() {
    let dir = TempDir::new("force");
    let svg = dir.join("t.svg");
    std::fs::write(&svg, "mine").unwrap();
    let refused =
        format!("error: `{svg}` exists; pass --force to overwrite it, or name another file\n");
    let o = bounce(&[
        "trace",
        "scenarios/shipped/false-sharing.toml",
        "--svg",
        &svg,
    ]);
    assert_exit(&o, 2);
    assert_eq!(stderr(&o), refused);
    assert_eq!(stdout(&o), "");
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), "mine");
    let o = bounce(&[
        "trace",
        "scenarios/shipped/false-sharing.toml",
        "--svg",
        &svg,
        "--force",
    ]);
    assert_exit(&o, 0);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    for args in [
        vec![
            "optimize",
            "scenarios/shipped/false-sharing.toml",
            "--struct",
            "counter",
            "--write-variant",
        ],
        vec!["check-protocol", "--write-scenario"],
        vec!["validate", "--csv"],
    ] {
        let mut args = args.clone();
        args.push(&svg);
        let o = bounce(&args);
        assert_exit(&o, 2);
        assert_eq!(stderr(&o), refused, "{args:?}");
    }
}

/// `merge` verifies what it joins: each record carries a content hash (of
/// the scenario, its case, its seed and its results) that merge recomputes,
/// so an edited value, seed or case id in a shard is refused, not merged.
#[test]
fn merge_refuses_an_edited_shard() {
    let dir = TempDir::new("merge-hash");
    let path = dir.join("t.toml");
    std::fs::write(
        &path,
        format!(
            "{}\n[sweep]\n\"run.iterations\" = [2, 3, 4]\n",
            scenario(ONE_FIELD, "g.a = g.a + 1", "iterations = 3")
        ),
    )
    .unwrap();
    let (s0, s1) = (dir.join("s0"), dir.join("s1"));
    assert_exit(
        &bounce(&["run", &path, "--shard", "0/2", "--out", &s0, "-q"]),
        0,
    );
    assert_exit(
        &bounce(&["run", &path, "--shard", "1/2", "--out", &s1, "-q"]),
        0,
    );
    let merged = dir.join("merged");
    assert_exit(&bounce(&["merge", &merged, &s0, &s1]), 0);
    let results = std::fs::read_to_string(dir.0.join("s1/results.json")).unwrap();
    type Edit = Box<dyn Fn(&str) -> String>;
    let edits: [(&str, Edit); 3] = [
        (
            "a value",
            Box::new(|t: &str| t.replacen("\"memory_ops\": ", "\"memory_ops\": 1", 1)),
        ),
        (
            "the seed",
            Box::new(|t: &str| {
                let at = t.find("\"records\"").unwrap();
                let (head, tail) = t.split_at(at);
                format!("{head}{}", tail.replacen("\"seed\": ", "\"seed\": 9", 1))
            }),
        ),
        (
            "the case id",
            Box::new(|t: &str| {
                let at = t.find("\"records\"").unwrap();
                let (head, tail) = t.split_at(at);
                format!(
                    "{head}{}",
                    tail.replacen("\"case_id\": \"run.iterations=3\"", "\"case_id\": \"x\"", 1)
                )
            }),
        ),
    ];
    for (what, edit) in edits {
        let edited = edit(&results);
        assert_ne!(edited, results, "{what}: the edit changed nothing");
        std::fs::write(dir.0.join("s1/results.json"), &edited).unwrap();
        let out = dir.join(&format!("out-{}", what.replace(' ', "-")));
        let o = bounce(&["merge", &out, &s0, &s1]);
        assert_exit(&o, 2);
        let case_id = if what == "the case id" {
            "x"
        } else {
            "run.iterations=3"
        };
        assert_eq!(
            stderr(&o),
            format!(
                "error: `{s1}/results.json`: the record of case `{case_id}`, variant `base` does \
                 not match its content hash: it was changed after bounce wrote it (a value, the \
                 seed, the case or the scenario), or the file is damaged; run the shard again\n\
                 error: nothing written to `{out}`\n"
            ),
            "{what}"
        );
        assert!(!std::path::Path::new(&out).exists(), "{what}");
    }
}

/// A mode given twice is an error, not silently one mode.
#[test]
fn a_preset_mode_given_twice_is_refused() {
    let o = bounce(&["presets", "show", "icelake-sp-2s:snc2,snc2"]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o),
        "error: mode `snc2` of preset `icelake-sp-2s` is given twice; give each mode once\n"
    );
    assert_eq!(stdout(&o), "");
}

/// A `btf` import obeys the same rule as a listing: the running kernel's
/// BTF by its absolute path needs `--allow-imports-outside`.
#[test]
fn a_btf_import_stays_inside_the_scenario_directory() {
    let dir = TempDir::new("btf-import");
    let btf = common::root().join("tests/fixtures/btf/structs.btf");
    let btf = btf.to_str().unwrap();
    let path = dir.join("t.toml");
    std::fs::write(
        &path,
        format!(
            "{}\n[structs.pc]\nbtf = {{ file = \"{btf}\", struct = \"page_counter\" }}\n",
            scenario(ONE_FIELD, "g.a = 1", "iterations = 3")
        ),
    )
    .unwrap();
    let o = bounce(&["check", &path]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).starts_with(&format!(
            "error: the BTF `{btf}` is outside the scenario's directory `{}` (an absolute \
             path); a scenario's imports stay inside its own directory tree",
            dir.0.display()
        )),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("copy the running kernel's `/sys/kernel/btf/vmlinux` beside it"));
    let o = bounce(&["check", &path, "--allow-imports-outside"]);
    assert_exit(&o, 0);
}

/// A large import under a tight memory bound is refused cleanly, with the
/// estimate of what its documents would hold: a 4.6 KB scenario importing
/// a nested listing into many variants took 287 s and 6.3 GB in `check`.
#[test]
fn a_large_import_under_a_tight_memory_bound_is_refused() {
    let dir = TempDir::new("big-import");
    let mut listing = String::from("struct inner {\n");
    for m in 0..64 {
        listing.push_str(&format!(
            "\tlong unsigned int          f{m:02};                  /* {:5}     8 */\n",
            m * 8
        ));
    }
    listing.push_str("\n\t/* size: 512, cachelines: 8, members: 64 */\n};\n\nstruct big {\n");
    for m in 0..50 {
        listing.push_str(&format!(
            "\tstruct inner               m{m:03};                 /* {:6}   512 */\n",
            m * 512
        ));
    }
    listing.push_str("\n\t/* size: 25600, cachelines: 400, members: 50 */\n};\n");
    std::fs::write(dir.0.join("big.pahole"), listing).unwrap();
    let mut text = format!(
        "{}\n[structs.big]\npahole = {{ file = \"big.pahole\" }}\n",
        scenario(ONE_FIELD, "g.a = 1", "iterations = 3")
    );
    for v in 0..20 {
        text.push_str(&format!(
            "\n[[variants]]\nname = \"v{v}\"\nset = {{ \"structs.big.fields.m{v:03}.align\" = 64 }}\n"
        ));
    }
    let path = dir.join("t.toml");
    std::fs::write(&path, &text).unwrap();
    let o = bounce(&["check", &path, "--set-limit", "host_memory_bytes=20000000"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!(
            "error: the base and 20 variant(s): 21 runs of a {}-byte file (and ",
            text.len()
        )),
        "{err}"
    );
    assert!(
        err.contains(" bytes of fields imported from pahole listings) would take about "),
        "{err}"
    );
    assert!(
        err.contains(" MiB to hold, more than the limit of 19 MiB (in `variants`)"),
        "{err}"
    );
    assert_eq!(stdout(&o), "");
    // With room, the same scenario is checked whole.
    let o = bounce(&["check", &path]);
    assert_exit(&o, 0);
}

/// Register arithmetic takes no simulated time, so a loop whose body is a
/// long run of it simulates few cycles for much host work: no budget of
/// cycles or events bounds it, the operation budget does.
#[test]
fn a_body_of_zero_time_arithmetic_is_stopped_by_the_operation_budget() {
    let dir = TempDir::new("operations");
    let path = dir.join("t.toml");
    let body = "let x = 1\n".to_string() + &"x = x * 3 + 1\n".repeat(200);
    std::fs::write(
        &path,
        scenario(
            ONE_FIELD,
            &format!("while 1 {{\n{body}}}"),
            "cycles = 1000000000",
        ),
    )
    .unwrap();
    let o = bounce(&["run", &path, "--set-limit", "operations=1000000", "--quiet"]);
    assert_exit(&o, 1);
    let err = stderr(&o);
    assert!(
        err.starts_with("error: variant `base` has no result: run truncated at cycle "),
        "{err}"
    );
    assert!(
        err.contains(
            ": it hit the operation budget (1000000 script operations on one CPU; CPU 0 ran \
             past it; `--set-limit operations=N` raises it) before every CPU finished; no result is \
             reported."
        ),
        "{err}"
    );
    // About 1000 loop turns of 1000 operations each: far fewer cycles than
    // the run asked for.
    let cycle: u64 = err
        .strip_prefix("error: variant `base` has no result: run truncated at cycle ")
        .and_then(|e| e.split(':').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(cycle < 10_000, "{err}");
    // Where the CPU was: the loop in the file, quoted.
    assert!(
        err.ends_with(&format!(
            " or look for a CPU that spins forever.\n  --> {path}:18:1\n   |\n18 | while 1 {{\n   \
             | ^^^^^ CPU 0: 0 iteration(s) done\n   |\n   = note: 1 CPU(s) unfinished\n"
        )),
        "{err}"
    );
    let o = bounce(&["limits"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("operations"), "{}", stdout(&o));
}
