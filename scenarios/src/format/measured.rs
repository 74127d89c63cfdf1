//! Load-time checks of a scenario's `[[measured]]` entries (see
//! [`MeasuredDef`]): each names a variant,
//! thread group and fields the scenario has, with usable figures.
//!
//! The list is read from the base document: a variant's patches do not
//! change what is compared. In a scenario with a `[sweep]`, each entry
//! names its case (a measured figure belongs to one configuration).
//! Computing the simulated figures is [`crate::run::measured`]'s, printing
//! them [`crate::report::measured`]'s.

#![allow(clippy::result_large_err)]

use crate::format::error::InputError;
use crate::format::schema::{MeasuredDef, MeasuredMetric, Spanned};
use crate::format::LoadedScenario;

/// Checks the base document's `[[measured]]` entries against the loaded
/// variants, thread groups and instances.
pub fn check_measured_entries(loaded: &LoadedScenario) -> Result<(), InputError> {
    let doc = &loaded.base.doc;
    if doc.measured.is_empty() {
        return Ok(());
    }
    let mut field_names: Vec<String> = Vec::new();
    for (inst_name, inst) in &doc.instances {
        if let Some(s) = doc.structs.get(inst.struct_name.get_ref()) {
            for f in &s.fields {
                field_names.push(format!("{inst_name}.{}", f.name.get_ref()));
            }
        }
    }
    let known = Known {
        variants: loaded.all().map(|v| v.name.as_str()).collect(),
        groups: doc.threads.iter().map(|t| t.name()).collect(),
        fields: field_names.iter().map(String::as_str).collect(),
        case_ids: loaded.cases.iter().map(|c| c.id.as_str()).collect(),
    };
    for (i, m) in doc.measured.iter().enumerate() {
        check_case(loaded, &known, i, m)?;
        check_variant_name(loaded, &known, i, &m.variant, "variant")?;
        check_metric_keys(loaded, i, m)?;
        check_names(loaded, &known, i, m)?;
        check_figures(loaded, i, m)?;
    }
    Ok(())
}

/// What the entries may name: variants, thread groups, `instance.field`s
/// and the sweep's case ids.
struct Known<'a> {
    variants: Vec<&'a str>,
    groups: Vec<&'a str>,
    fields: Vec<&'a str>,
    case_ids: Vec<&'a str>,
}

/// Key `k` of entry `i`, as errors name it.
fn key(i: usize, k: &str) -> String {
    format!("measured.{i}.{k}")
}

/// A figure belongs to one configuration: in a sweep, one case, named by
/// `case`; without a sweep, no `case`.
fn check_case(
    loaded: &LoadedScenario,
    known: &Known,
    i: usize,
    m: &MeasuredDef,
) -> Result<(), InputError> {
    let case_ids = &known.case_ids;
    match (&m.case, loaded.sweep.is_some()) {
        (None, true) => Err(loaded
            .error_at(
                m.label.span(),
                &key(i, "case"),
                format!(
                    "`{}` is missing: in a scenario with `[sweep]`, each measured figure \
                     names the case it was measured as",
                    key(i, "case")
                ),
            )
            .with_valid(format!(
                "case = \"ID\", one of the sweep's case ids, such as `{}`",
                case_ids.first().copied().unwrap_or_default()
            ))),
        (Some(case), false) => Err(loaded
            .error_at(
                case.span(),
                &key(i, "case"),
                format!(
                    "`{}` names a case, and the scenario has no `[sweep]`",
                    key(i, "case")
                ),
            )
            .with_valid("remove `case`, or add a `[sweep]`")),
        (Some(case), true) if !case_ids.contains(&case.get_ref().as_str()) => {
            let shown: Vec<&str> = case_ids.iter().take(12).copied().collect();
            let mut error = loaded
                .error_at(
                    case.span(),
                    &key(i, "case"),
                    format!(
                        "`{}` is `{}`, which is not a case of the sweep",
                        key(i, "case"),
                        case.get_ref()
                    ),
                )
                .with_choices(case.get_ref(), case_ids);
            if case_ids.len() > shown.len() {
                error.valid = Some(format!(
                    "{}, ... ({} cases; `bounce check FILE --format csv` lists them)",
                    shown.join(", "),
                    case_ids.len()
                ));
            }
            Err(error)
        }
        _ => Ok(()),
    }
}

/// Key `k` of entry `i` names a variant.
fn check_variant_name(
    loaded: &LoadedScenario,
    known: &Known,
    i: usize,
    v: &Spanned<String>,
    k: &str,
) -> Result<(), InputError> {
    if known.variants.contains(&v.get_ref().as_str()) {
        Ok(())
    } else {
        Err(loaded
            .error_at(
                v.span(),
                &key(i, k),
                format!(
                    "`{}` is `{}`, which is not a variant",
                    key(i, k),
                    v.get_ref()
                ),
            )
            .with_choices(v.get_ref(), &known.variants))
    }
}

/// The keys that only some metrics use (`relative_to`, `threads`,
/// `fields`) are given only with those.
fn check_metric_keys(loaded: &LoadedScenario, i: usize, m: &MeasuredDef) -> Result<(), InputError> {
    let metric = *m.metric.get_ref();
    let metrics_using = |uses: fn(MeasuredMetric) -> bool| -> Vec<&'static str> {
        MeasuredMetric::ALL
            .iter()
            .filter(|&&other| uses(other))
            .map(|other| other.name())
            .collect()
    };
    for (present, k, uses) in [
        (
            m.relative_to.is_some(),
            "relative_to",
            MeasuredMetric::uses_relative_to as fn(MeasuredMetric) -> bool,
        ),
        (m.threads.is_some(), "threads", MeasuredMetric::uses_threads),
        (!m.fields.is_empty(), "fields", MeasuredMetric::uses_fields),
    ] {
        if present && !uses(metric) {
            let names = metrics_using(uses);
            let listed = one_of(&names);
            return Err(loaded
                .error_at(
                    m.metric.span(),
                    &key(i, k),
                    format!(
                        "`{}` is only used with metric {listed}, and this entry's metric is `{}`",
                        key(i, k),
                        metric.name()
                    ),
                )
                .with_valid(format!("remove `{k}`, or use metric {listed}")));
        }
    }
    Ok(())
}

/// `a`, `` `a` or `b` ``, `` `a`, `b` or `c` ``.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// `relative_to`, `threads` and `fields` name a variant, a thread group
/// and fields the scenario has (`field-cycles-share` and
/// `field-latency-per-iteration` need fields).
fn check_names(
    loaded: &LoadedScenario,
    known: &Known,
    i: usize,
    m: &MeasuredDef,
) -> Result<(), InputError> {
    if let Some(r) = &m.relative_to {
        check_variant_name(loaded, known, i, r, "relative_to")?;
    }
    if let Some(t) = &m.threads {
        if !known.groups.contains(&t.get_ref().as_str()) {
            return Err(loaded
                .error_at(
                    t.span(),
                    &key(i, "threads"),
                    format!(
                        "`{}` is `{}`, which is not a thread group",
                        key(i, "threads"),
                        t.get_ref()
                    ),
                )
                .with_choices(t.get_ref(), &known.groups));
        }
    }
    let metric = *m.metric.get_ref();
    if metric.uses_fields() && m.fields.is_empty() {
        return Err(loaded
            .error_at(
                m.metric.span(),
                &key(i, "fields"),
                format!(
                    "metric `{}` needs `{}`: the fields whose accesses count",
                    metric.name(),
                    key(i, "fields")
                ),
            )
            .with_valid("a list of `instance.field` names, such as [\"memcg.usage\"]"));
    }
    for (j, f) in m.fields.iter().enumerate() {
        if !known.fields.contains(&f.get_ref().as_str()) {
            let k = format!("{}.{j}", key(i, "fields"));
            return Err(loaded
                .error_at(
                    f.span(),
                    &k,
                    format!(
                        "`{k}` is `{}`, which is not a field of an instance",
                        f.get_ref()
                    ),
                )
                .with_choices(f.get_ref(), &known.fields));
        }
    }
    Ok(())
}

/// `value` is a finite number, `tolerance` a finite number, 0 or more.
fn check_figures(loaded: &LoadedScenario, i: usize, m: &MeasuredDef) -> Result<(), InputError> {
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
                        &key(i, k),
                        format!(
                            "`{}` is {}, which is not a usable figure",
                            key(i, k),
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
    Ok(())
}
