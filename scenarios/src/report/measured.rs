//! The "measured vs simulated" table of `bounce run`: the
//! [`Comparison`]s that [`crate::run::measured::compare`] computes, one row
//! each, then their sources.

use std::fmt::Write as _;

use crate::run::measured::Comparison;

/// A figure with as many decimals as its size deserves.
pub fn figure(value: f64) -> String {
    let a = value.abs();
    if a >= 1000.0 {
        format!("{value:.0}")
    } else if a >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// What follows a figure in `unit`: nothing for cycles, ` ns`, or `%`.
pub fn unit_suffix(unit: &str) -> &'static str {
    match unit {
        "cycles" => "",
        "ns" => " ns",
        _ => "%",
    }
}

/// The "measured vs simulated" table, one row per comparison, then the
/// sources. Empty when there is nothing to compare.
pub fn table(comparisons: &[Comparison]) -> String {
    if comparisons.is_empty() {
        return String::new();
    }
    let rows: Vec<[String; 7]> = comparisons
        .iter()
        .enumerate()
        .map(|(i, c)| comparison_row(i, c))
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

/// What comparison `c` compares, as the table's metric column says it.
fn metric_words(c: &Comparison) -> String {
    match c.metric.as_str() {
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
        "one-way-latency" => match &c.threads {
            Some(t) => format!("one-way latency of {t} (ns)"),
            None => "one-way latency (ns)".to_string(),
        },
        "field-latency-per-iteration" => {
            let fields = match c.fields.as_slice() {
                [one] => one.clone(),
                [first, rest @ ..] => format!("{first} +{} field(s)", rest.len()),
                [] => String::new(),
            };
            match &c.threads {
                Some(t) => format!("latency of {fields} by {t}"),
                None => format!("latency of {fields}"),
            }
        }
        _ => match c.fields.as_slice() {
            [one] => format!("share of cycles in {one}"),
            [first, rest @ ..] => {
                format!("share of cycles in {first} +{} field(s)", rest.len())
            }
            [] => "share of cycles".to_string(),
        },
    }
}

/// Comparison `i`'s row: label, variant, metric, measured, simulated,
/// difference and target.
fn comparison_row(i: usize, c: &Comparison) -> [String; 7] {
    let unit = unit_suffix(&c.unit);
    let with_unit = |v: f64| format!("{}{unit}", figure(v));
    [
        match &c.case {
            Some(case) => format!("[{}] {} ({case})", i + 1, c.label),
            None => format!("[{}] {}", i + 1, c.label),
        },
        c.variant.clone(),
        metric_words(c),
        with_unit(c.measured),
        c.simulated.map_or("n/a".into(), with_unit),
        c.difference.map_or("n/a".into(), |d| {
            let sign = if d >= 0.0 { "+" } else { "" };
            format!(
                "{sign}{}{}",
                figure(d),
                match unit {
                    "" => "",
                    " ns" => " ns",
                    _ => " pt",
                }
            )
        }),
        match (c.within_tolerance, c.tolerance) {
            (Some(true), Some(t)) => format!("ok (±{})", figure(t)),
            (Some(false), Some(t)) => format!("MISS (±{})", figure(t)),
            _ => String::new(),
        },
    ]
}
