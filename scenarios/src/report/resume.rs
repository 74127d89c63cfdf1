//! Resuming a run with `--out DIR`: the cases it finished before it was
//! stopped, kept so that `bounce run FILE --out DIR --resume` runs only the
//! others and writes the same bytes as a run that was never stopped.
//!
//! The results files appear only once every run has succeeded, so a run cut
//! short (killed, out of time in a batch job, a case that hit a limit) would
//! otherwise leave nothing. Instead each case, once all its variants have a
//! result, is written to `DIR/.bounce-resume/case-INDEX.json`: its records
//! as `results.json` holds them, and the scenario's hash, the tool version
//! and the case's id and seed they belong to. A resumed run takes the cases
//! whose checkpoint matches the scenario as loaded now (and those of a
//! complete `results.json` already in `DIR`), runs the rest, and writes the
//! results files from all of them; records read back from JSON render the
//! same bytes (as a merge of shards does). The folder is removed once the
//! results files are written, and a run without `--resume` starts by
//! removing it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::output::{
    record_hash, records, write_atomically, CaseInfo, Record, ResultsFile, RESULTS_JSON,
    RESULTS_SCHEMA_VERSION,
};
use crate::format::read::read_bounded_text;
use crate::run::cases::{BuiltCase, CaseResult};
use crate::run::measured::Comparison;

/// The folder inside `--out DIR` holding the finished cases.
pub const RESUME_DIR: &str = ".bounce-resume";

/// One finished case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseCheckpoint {
    pub schema_version: u32,
    pub scenario_sha256: String,
    pub tool_version: String,
    pub variants: Vec<String>,
    pub case: CaseInfo,
    /// One per variant, in the variants' order.
    pub records: Vec<Record>,
    /// The measured figures beside the simulated ones (a scenario without a
    /// sweep, whose one case this is), else empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measured: Vec<Comparison>,
}

/// What a resumed run takes over instead of running.
#[derive(Clone, Debug, Default)]
pub struct Resumed {
    /// Finished cases by index.
    pub cases: BTreeMap<usize, CaseCheckpoint>,
    /// Checkpoints found that belong to another scenario file, tool
    /// version or case (they are run again).
    pub stale: usize,
}

fn resume_dir(dir: &Path) -> PathBuf {
    dir.join(RESUME_DIR)
}

/// Removes the checkpoints of an earlier run (a run without `--resume`, or
/// one whose results files are written).
pub fn clear(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(resume_dir(dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Writes the checkpoint of one finished case, and says whether it did: a
/// case with a failed run is not written, and runs again when resumed.
pub fn save(
    dir: &Path,
    header: &ResultsFile,
    built: &BuiltCase,
    result: &CaseResult,
    measured: Vec<Comparison>,
) -> std::io::Result<bool> {
    if result.failures().next().is_some() {
        return Ok(false);
    }
    let Some(case) = header.cases.get(built.index) else {
        return Ok(false);
    };
    let checkpoint = CaseCheckpoint {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario_sha256: header.scenario.sha256.clone(),
        tool_version: header.tool_version.clone(),
        variants: header.variants.clone(),
        case: case.clone(),
        records: records(
            header,
            std::slice::from_ref(built),
            std::slice::from_ref(result),
        ),
        measured,
    };
    let json = serde_json::to_string(&checkpoint).expect("checkpoint serializes");
    write_atomically(
        &resume_dir(dir),
        &[(&format!("case-{}.json", built.index), json)],
    )?;
    Ok(true)
}

/// Whether `records` are exactly the runs of `case` that `header` expects,
/// each matching its content hash (a record changed since it was written is
/// run again, not kept).
fn complete(header: &ResultsFile, case: &CaseInfo, records: &[Record]) -> bool {
    records.len() == header.variants.len()
        && records.iter().zip(&header.variants).all(|(r, v)| {
            r.case_index == case.index
                && r.case_id == case.id
                && &r.variant == v
                && !r.content_sha256.is_empty()
                && record_hash(&header.scenario.sha256, case, r) == r.content_sha256
        })
}

/// The finished cases in `dir` that belong to the scenario whose results
/// `header` describes: its checkpoints, and the records of a `results.json`
/// of the same scenario already there. Unreadable or foreign checkpoints
/// are counted as stale and run again; an error is only a folder that
/// cannot be listed. Each file is read at most `limit_bytes` (a larger
/// one, or a link to an endless one, is stale).
pub fn load(dir: &Path, header: &ResultsFile, limit_bytes: u64) -> Result<Resumed, String> {
    let read = |path: &Path| {
        read_bounded_text(path, limit_bytes)
            .ok()
            .and_then(Result::ok)
    };
    let mut resumed = Resumed::default();
    let same_header = |f: &ResultsFile| {
        f.schema_version == header.schema_version
            && f.tool_version == header.tool_version
            && f.scenario == header.scenario
            && f.axes == header.axes
            && f.variants == header.variants
            && f.placement == header.placement
            && f.cases == header.cases
    };
    // A complete run's (or shard's) results: every case it holds.
    if let Some(text) = read(&dir.join(RESULTS_JSON)) {
        if let Ok(file) = serde_json::from_str::<ResultsFile>(&text) {
            if same_header(&file) {
                let mut by_case: BTreeMap<usize, Vec<Record>> = BTreeMap::new();
                for r in file.records {
                    by_case.entry(r.case_index).or_default().push(r);
                }
                for (index, records) in by_case {
                    let Some(case) = header.cases.get(index) else {
                        continue;
                    };
                    if case.index == index && complete(header, case, &records) {
                        resumed.cases.insert(
                            index,
                            CaseCheckpoint {
                                schema_version: RESULTS_SCHEMA_VERSION,
                                scenario_sha256: header.scenario.sha256.clone(),
                                tool_version: header.tool_version.clone(),
                                variants: header.variants.clone(),
                                case: case.clone(),
                                records,
                                measured: file.measured.clone(),
                            },
                        );
                    }
                }
            }
        }
    }
    let folder = resume_dir(dir);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(resumed),
        Err(e) => return Err(format!("cannot read `{}`: {e}", folder.display())),
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("case-") && n.ends_with(".json"))
        })
        .collect();
    paths.sort();
    for path in paths {
        let checkpoint =
            read(&path).and_then(|text| serde_json::from_str::<CaseCheckpoint>(&text).ok());
        let usable = checkpoint.filter(|c| {
            c.schema_version == RESULTS_SCHEMA_VERSION
                && c.scenario_sha256 == header.scenario.sha256
                && c.tool_version == header.tool_version
                && c.variants == header.variants
                && header.cases.get(c.case.index) == Some(&c.case)
                && complete(header, &c.case, &c.records)
        });
        match usable {
            Some(c) => {
                resumed.cases.insert(c.case.index, c);
            }
            None => resumed.stale += 1,
        }
    }
    Ok(resumed)
}

/// The records of the cases run now and of those resumed, in case order (a
/// case's records are in variant order already), and the measured figures:
/// those of the run, or of the resumed case when a scenario without a sweep
/// ran nothing now.
pub fn combine(
    now: Vec<Record>,
    measured_now: Vec<Comparison>,
    resumed: Resumed,
) -> (Vec<Record>, Vec<Comparison>) {
    let mut by_case: BTreeMap<usize, Vec<Record>> = BTreeMap::new();
    for r in now {
        by_case.entry(r.case_index).or_default().push(r);
    }
    let mut measured = measured_now;
    for (index, done) in resumed.cases {
        by_case.insert(index, done.records);
        if measured.is_empty() {
            measured = done.measured;
        }
    }
    (by_case.into_values().flatten().collect(), measured)
}
