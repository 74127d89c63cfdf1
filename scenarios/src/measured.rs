//! Figures measured on real machines set beside the simulated ones.
//!
//! A scenario's `[[measured]]` entries (see [`crate::schema::MeasuredDef`])
//! each name a measured figure, where it comes from, the variant whose run
//! stands for the measured configuration and the metric to compute from that
//! run. After a run, [`compare`] computes every metric and the difference,
//! [`table`] prints them as the "measured vs simulated" table of
//! `bounce run`, and `results.json` carries the same rows
//! ([`Comparison`]).
//!
//! The list is read from the base document: a variant's patches do not
//! change what is compared. A scenario with a `[sweep]` cannot have one
//! (a measured figure belongs to one configuration, not to every case).

#![allow(clippy::result_large_err)]

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::build::BuiltVariant;
use crate::document::LoadedScenario;
use crate::error::InputError;
use crate::results::{VariantFailure, VariantResult};
use crate::schema::{MeasuredDef, MeasuredMetric};

/// One row of the table: a measured figure and what the simulation gives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    pub label: String,
    pub variant: String,
    /// The metric's name as the scenario writes it (`throughput-change`, ...).
    pub metric: String,
    /// For `throughput-change`: the variant the change is against.
    pub relative_to: Option<String>,
    /// For `cycles-per-iteration`: the thread group whose iterations count.
    pub threads: Option<String>,
    /// For `field-cycles-share`: the fields whose accesses count.
    pub fields: Vec<String>,
    pub unit: String,
    pub measured: f64,
    /// None when a run it needs has no result.
    pub simulated: Option<f64>,
    /// `simulated - measured`, in the unit.
    pub difference: Option<f64>,
    pub tolerance: Option<f64>,
    /// Whether `|difference| <= tolerance`; None without a tolerance or a result.
    pub within_tolerance: Option<bool>,
    pub source: String,
}

/// Checks the base document's `[[measured]]` entries against the loaded
/// variants, thread groups and instances.
pub fn validate(loaded: &LoadedScenario) -> Result<(), InputError> {
    let doc = &loaded.base.doc;
    if doc.measured.is_empty() {
        return Ok(());
    }
    let variants: Vec<&str> = loaded.all().map(|v| v.name.as_str()).collect();
    let groups: Vec<&str> = doc.threads.iter().map(|t| t.name()).collect();
    let mut field_names: Vec<String> = Vec::new();
    for (inst_name, inst) in &doc.instances {
        if let Some(s) = doc.structs.get(inst.struct_name.get_ref()) {
            for f in &s.fields {
                field_names.push(format!("{inst_name}.{}", f.name.get_ref()));
            }
        }
    }
    let field_refs: Vec<&str> = field_names.iter().map(String::as_str).collect();
    if loaded.sweep.is_some() {
        return Err(loaded
            .error_at(
                doc.measured[0].label.span(),
                "measured.0.label",
                "`[[measured]]` cannot be used with `[sweep]`: a measured figure belongs to one configuration, not to every case",
            )
            .with_valid("a scenario without `[sweep]`, with one variant per measured configuration"));
    }
    for (i, m) in doc.measured.iter().enumerate() {
        let key = |k: &str| format!("measured.{i}.{k}");
        let name_in = |v: &crate::schema::Spanned<String>, k: &str| -> Result<(), InputError> {
            if variants.contains(&v.get_ref().as_str()) {
                Ok(())
            } else {
                Err(loaded
                    .error_at(
                        v.span(),
                        &key(k),
                        format!("`{}` is `{}`, which is not a variant", key(k), v.get_ref()),
                    )
                    .with_choices(v.get_ref(), &variants))
            }
        };
        name_in(&m.variant, "variant")?;
        let metric = *m.metric.get_ref();
        let only_for = |present: bool, k: &str, for_metric: MeasuredMetric| {
            if present && metric != for_metric {
                Err(loaded
                    .error_at(
                        m.metric.span(),
                        &key(k),
                        format!(
                            "`{}` is only used with metric `{}`, and this entry's metric is `{}`",
                            key(k),
                            for_metric.name(),
                            metric.name()
                        ),
                    )
                    .with_valid(format!(
                        "remove `{k}`, or use metric `{}`",
                        for_metric.name()
                    )))
            } else {
                Ok(())
            }
        };
        if m.relative_to.is_some() && metric == MeasuredMetric::FieldCyclesShare {
            return Err(loaded
                .error_at(
                    m.metric.span(),
                    &key("relative_to"),
                    format!(
                        "`{}` is not used with metric `field-cycles-share`",
                        key("relative_to")
                    ),
                )
                .with_valid("remove `relative_to`, or use metric `throughput-change` or `cycles-per-iteration`"));
        }
        only_for(
            m.threads.is_some(),
            "threads",
            MeasuredMetric::CyclesPerIteration,
        )?;
        only_for(
            !m.fields.is_empty(),
            "fields",
            MeasuredMetric::FieldCyclesShare,
        )?;
        if let Some(r) = &m.relative_to {
            name_in(r, "relative_to")?;
        }
        if let Some(t) = &m.threads {
            if !groups.contains(&t.get_ref().as_str()) {
                return Err(loaded
                    .error_at(
                        t.span(),
                        &key("threads"),
                        format!(
                            "`{}` is `{}`, which is not a thread group",
                            key("threads"),
                            t.get_ref()
                        ),
                    )
                    .with_choices(t.get_ref(), &groups));
            }
        }
        if metric == MeasuredMetric::FieldCyclesShare && m.fields.is_empty() {
            return Err(loaded
                .error_at(
                    m.metric.span(),
                    &key("fields"),
                    format!(
                        "metric `field-cycles-share` needs `{}`: the fields whose accesses count",
                        key("fields")
                    ),
                )
                .with_valid("a list of `instance.field` names, such as [\"memcg.usage\"]"));
        }
        for (j, f) in m.fields.iter().enumerate() {
            if !field_refs.contains(&f.get_ref().as_str()) {
                let k = format!("{}.{j}", key("fields"));
                return Err(loaded
                    .error_at(
                        f.span(),
                        &k,
                        format!(
                            "`{k}` is `{}`, which is not a field of an instance",
                            f.get_ref()
                        ),
                    )
                    .with_choices(f.get_ref(), &field_refs));
            }
        }
        for (value, k) in [
            (Some(&m.value), "value"),
            (m.tolerance.as_ref(), "tolerance"),
        ] {
            if let Some(v) = value {
                let bad = !v.get_ref().is_finite() || (k == "tolerance" && *v.get_ref() < 0.0);
                if bad {
                    return Err(loaded
                        .error_at(
                            v.span(),
                            &key(k),
                            format!(
                                "`{}` is {}, which is not a usable figure",
                                key(k),
                                v.get_ref()
                            ),
                        )
                        .with_valid(if k == "tolerance" {
                            "a finite number, 0 or more"
                        } else {
                            "a finite number"
                        }));
                }
            }
        }
    }
    Ok(())
}

/// The simulated figure of one entry, or None when a run it needs failed.
fn simulate(
    m: &MeasuredDef,
    base_name: &str,
    built: &[BuiltVariant],
    results: &[Result<VariantResult, VariantFailure>],
) -> Option<f64> {
    let find = |name: &str| {
        built
            .iter()
            .zip(results)
            .find(|(b, _)| b.name == name)
            .and_then(|(b, r)| r.as_ref().ok().map(|r| (b, r)))
    };
    let (b, r) = find(m.variant.get_ref())?;
    match *m.metric.get_ref() {
        MeasuredMetric::ThroughputChange => {
            let against = m
                .relative_to
                .as_ref()
                .map_or(base_name, |r| r.get_ref().as_str());
            let (_, base) = find(against)?;
            let base_tput = base.throughput_total();
            (base_tput > 0.0).then(|| (r.throughput_total() / base_tput - 1.0) * 100.0)
        }
        MeasuredMetric::CyclesPerIteration => {
            let cycles = |b: &BuiltVariant, r: &VariantResult| match &m.threads {
                None => Some(r.iteration_cycles.mean()),
                Some(group) => {
                    let cpus = &b.groups.iter().find(|(g, _)| g == group.get_ref())?.1;
                    let (cycles, iterations) = r
                        .per_cpu
                        .iter()
                        .filter(|c| cpus.contains(&c.cpu))
                        .fold((0u64, 0u64), |(c, n), s| {
                            (c + s.iteration_cycles_total, n + s.iterations)
                        });
                    (iterations > 0).then(|| cycles as f64 / iterations as f64)
                }
            };
            let own = cycles(b, r)?;
            match &m.relative_to {
                None => Some(own),
                Some(against) => {
                    let (b0, r0) = find(against.get_ref())?;
                    Some(own - cycles(b0, r0)?)
                }
            }
        }
        MeasuredMetric::FieldCyclesShare => {
            let latency = &b.config.topology.spec.latency;
            let in_fields: u64 = r
                .fields
                .iter()
                .filter(|f| m.fields.iter().any(|w| w.get_ref() == &f.name))
                .map(|f| {
                    // What the CPU waited for: the L1 hit of each load and
                    // atomic, the wait for the line beyond it, the locked
                    // operation; a store costs the CPU only when the store
                    // buffer makes it wait, which is in the stall cycles.
                    f.traffic.stall_cycles
                        + (f.traffic.loads + f.traffic.atomics) * latency.l1_hit_cycles
                        + f.traffic.atomics * latency.locked_op_cycles
                })
                .sum();
            let total: u64 = r.per_cpu.iter().map(|c| c.iteration_cycles_total).sum();
            (total > 0).then(|| in_fields as f64 / total as f64 * 100.0)
        }
    }
}

/// Every `[[measured]]` entry of the scenario beside its simulated figure,
/// in file order. `built` and `results` are one case's, in the same order.
pub fn compare(
    loaded: &LoadedScenario,
    built: &[BuiltVariant],
    results: &[Result<VariantResult, VariantFailure>],
) -> Vec<Comparison> {
    loaded
        .base
        .doc
        .measured
        .iter()
        .map(|m| {
            let metric = *m.metric.get_ref();
            let measured = *m.value.get_ref();
            let simulated = simulate(m, &loaded.base.name, built, results);
            let difference = simulated.map(|s| s - measured);
            let tolerance = m.tolerance.as_ref().map(|t| *t.get_ref());
            Comparison {
                label: m.label.get_ref().clone(),
                variant: m.variant.get_ref().clone(),
                metric: metric.name().to_string(),
                relative_to: match metric {
                    MeasuredMetric::ThroughputChange => Some(
                        m.relative_to
                            .as_ref()
                            .map_or(loaded.base.name.clone(), |r| r.get_ref().clone()),
                    ),
                    _ => m.relative_to.as_ref().map(|r| r.get_ref().clone()),
                },
                threads: m.threads.as_ref().map(|t| t.get_ref().clone()),
                fields: m.fields.iter().map(|f| f.get_ref().clone()).collect(),
                unit: metric.unit().to_string(),
                measured,
                simulated,
                difference,
                tolerance,
                within_tolerance: tolerance.zip(difference).map(|(t, d)| d.abs() <= t),
                source: m.source.get_ref().clone(),
            }
        })
        .collect()
}

/// The comparisons of a whole run (the single case of a scenario without a
/// sweep; none with a sweep, which cannot have `[[measured]]`), as
/// `bounce run` prints them and `results.json` holds them.
pub fn compare_cases(
    loaded: &LoadedScenario,
    cases: &[crate::cases::BuiltCase],
    results: &[crate::cases::CaseResult],
) -> Vec<Comparison> {
    match (&loaded.sweep, cases.first(), results.first()) {
        (None, Some(built), Some(case)) => compare(loaded, &built.variants, &case.results),
        _ => Vec::new(),
    }
}

/// A figure with as many decimals as its size deserves.
fn figure(value: f64) -> String {
    let a = value.abs();
    if a >= 1000.0 {
        format!("{value:.0}")
    } else if a >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// The "measured vs simulated" table, one row per comparison, then the
/// sources. Empty when there is nothing to compare.
pub fn table(comparisons: &[Comparison]) -> String {
    if comparisons.is_empty() {
        return String::new();
    }
    let what = |c: &Comparison| match c.metric.as_str() {
        "throughput-change" => format!(
            "throughput vs {}",
            c.relative_to.as_deref().unwrap_or("base")
        ),
        "cycles-per-iteration" => {
            let of = match &c.threads {
                Some(t) => format!("cycles/iteration of {t}"),
                None => "cycles/iteration".to_string(),
            };
            match &c.relative_to {
                Some(r) => format!("{of} minus {r}'s"),
                None => of,
            }
        }
        _ => match c.fields.as_slice() {
            [one] => format!("share of cycles in {one}"),
            [first, rest @ ..] => {
                format!("share of cycles in {first} +{} field(s)", rest.len())
            }
            [] => "share of cycles".to_string(),
        },
    };
    let rows: Vec<[String; 7]> = comparisons
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let unit = if c.unit == "cycles" { "" } else { "%" };
            let with_unit = |v: f64| format!("{}{unit}", figure(v));
            [
                format!("[{}] {}", i + 1, c.label),
                c.variant.clone(),
                what(c),
                with_unit(c.measured),
                c.simulated.map_or("n/a".into(), with_unit),
                c.difference.map_or("n/a".into(), |d| {
                    let sign = if d >= 0.0 { "+" } else { "" };
                    format!(
                        "{sign}{}{}",
                        figure(d),
                        if unit.is_empty() { "" } else { " pt" }
                    )
                }),
                match (c.within_tolerance, c.tolerance) {
                    (Some(true), Some(t)) => format!("ok (±{})", figure(t)),
                    (Some(false), Some(t)) => format!("MISS (±{})", figure(t)),
                    _ => String::new(),
                },
            ]
        })
        .collect();
    let header = [
        "measured figure",
        "variant",
        "metric",
        "measured",
        "simulated",
        "sim - meas",
        "target",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::from("measured vs simulated\n\n");
    let line = |out: &mut String, cells: &[&str]| {
        let mut text = String::new();
        for (k, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - cell.chars().count();
            if (3..=5).contains(&k) {
                // Numbers right-aligned.
                let _ = write!(text, "{}{cell}  ", " ".repeat(pad));
            } else {
                let _ = write!(text, "{cell}{}  ", " ".repeat(pad));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut out, &header);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(
        &mut out,
        &rule.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    for row in &rows {
        line(
            &mut out,
            &row.iter().map(String::as_str).collect::<Vec<_>>(),
        );
    }
    out.push_str("\nsources:\n");
    for (i, c) in comparisons.iter().enumerate() {
        let _ = writeln!(out, "  [{}] {}", i + 1, c.source);
    }
    let missed = comparisons
        .iter()
        .filter(|c| c.within_tolerance == Some(false))
        .count();
    let targets = comparisons
        .iter()
        .filter(|c| c.within_tolerance.is_some())
        .count();
    if targets > 0 {
        let _ = writeln!(
            out,
            "\n{} of {targets} target(s) met{}",
            targets - missed,
            if missed > 0 {
                format!(", {missed} missed")
            } else {
                String::new()
            }
        );
    }
    out
}
