//! `bounce optimize`: a search over one struct's field order, per-field
//! cache-line alignment and whole-struct line alignment, minimising the
//! scenario's cost over its sweep.
//!
//! The cost of a layout is the geometric mean, over the sweep's cases, of
//! its mean cycles per iteration divided by the base layout's in the same
//! case (1.0 is the base; 0.5 halves the time per iteration). Padding is
//! expressed as alignment: a field that starts a cache line gets
//! `align = LINE` (the bytes before it become a hole), and a line-aligned
//! struct gets `align = LINE` (its tail padding fills its last line), which
//! is how `____cacheline_aligned_in_smp` pads in the kernel.
//!
//! The search, in three phases, every candidate of a phase run in parallel
//! (rayon) and collected in candidate order, so the outcome does not depend
//! on the number of host threads:
//! 1. the base layout and the file's own variants, run as written; the
//!    base's per-field attribution puts each field of the struct in a
//!    traffic class: written by atomics, written by plain stores, read
//!    only, untouched;
//! 2. placements of the classes: every order of the classes that have
//!    fields, every choice of which neighbouring classes share a line,
//!    whether each written class's fields get a line each, whether the
//!    prefix ends its line, whether the struct is line-aligned;
//! 3. local search from the best layouts of phase 2: swap neighbouring
//!    fields, toggle a field's line start, toggle the struct's line
//!    alignment; take the best improving neighbour until none improves or
//!    the evaluation budget is spent.
//!
//! Layouts that lay out to the same offsets and size are simulated once.
//! Ties are broken by size, then by the layout's text, so the ranking is a
//! total order.

#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rayon::prelude::*;

use super::layout_view::{laid_out_structs, render_struct};
use crate::build::{build_config, BuildOptions, BuiltVariant};
use crate::format::error::closest;
use crate::format::schema::{FieldDef, FieldShape, ScenarioDoc, StructDef};
use crate::format::LoadedScenario;
use crate::run::budget::MemoryBudget;
use crate::run::cases::{build_cases, run_budget_bytes, run_cases_observed, BuiltCase, CaseResult};
use crate::run::results::run_variant;

/// What to optimise and within which limits.
#[derive(Clone, Debug)]
pub struct OptimizeOptions {
    /// The struct (a key of `[structs]`).
    pub struct_name: String,
    /// Largest acceptable `sizeof`, in bytes.
    pub budget_bytes: Option<u32>,
    /// The struct's first fields, which keep their order and offsets.
    pub fixed: Vec<String>,
    /// How many of the best layouts to report.
    pub top: usize,
    /// Most distinct layouts to simulate (the base and the file's variants
    /// not counted).
    pub max_evaluations: usize,
    /// Start from this variant of the file instead of the base (its layout
    /// is then the one changes are measured against).
    pub variant: Option<String>,
}

impl Default for OptimizeOptions {
    fn default() -> Self {
        OptimizeOptions {
            struct_name: String::new(),
            budget_bytes: None,
            fixed: Vec::new(),
            top: 5,
            max_evaluations: 400,
            variant: None,
        }
    }
}

/// How a field was used in the base run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TrafficClass {
    /// Written by atomics (a lock, a counter bumped with `fetch_add`).
    AtomicWritten,
    /// Written by plain stores.
    Written,
    /// Loaded, never written.
    ReadMostly,
    /// Not accessed.
    Untouched,
}

impl TrafficClass {
    pub fn describe(self) -> &'static str {
        match self {
            TrafficClass::AtomicWritten => "atomic-written",
            TrafficClass::Written => "written",
            TrafficClass::ReadMostly => "read-mostly",
            TrafficClass::Untouched => "untouched",
        }
    }
}

/// One field of the struct, as the base run used it.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldUse {
    pub name: String,
    pub class: TrafficClass,
    /// Stores, atomics and misses per measured iteration, over every
    /// instance of the struct, summed over the cases.
    pub traffic_per_iteration: f64,
}

/// A candidate layout: the fields (indices into the struct's fields as the
/// file declares them) in order, which of them start a cache line, and
/// whether the struct is line-aligned.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Layout {
    pub order: Vec<usize>,
    /// Per declared field: starts a cache line.
    pub line_start: Vec<bool>,
    pub struct_line_aligned: bool,
}

/// A simulated layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    pub layout: Layout,
    /// The layout in words (`a, b | c` with `|` at line starts).
    pub text: String,
    pub size_bytes: u32,
    /// Geometric mean over the cases of cycles per iteration against the
    /// base's; `f64::INFINITY` when a run had no result.
    pub cost: f64,
    /// Mean cycles per iteration, per case.
    pub cycles_per_iteration: Vec<f64>,
}

impl Evaluated {
    /// Predicted change of cycles per iteration against the base, in percent.
    pub fn change_pct(&self) -> f64 {
        (self.cost - 1.0) * 100.0
    }
}

/// A variant of the file, for comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct HandMade {
    pub name: String,
    /// Cost as for [`Evaluated::cost`].
    pub cost: f64,
    /// The struct's size in the variant.
    pub size_bytes: u32,
}

/// What the search did and found.
#[derive(Clone, Debug)]
pub struct OptimizeReport {
    pub scenario: String,
    pub struct_name: String,
    pub line_bytes: u32,
    pub cases: usize,
    pub fields: Vec<FieldUse>,
    pub fixed: usize,
    pub budget_bytes: Option<u32>,
    /// The variant searched from (None: the base).
    pub variant: Option<String>,
    /// Movable fields whose explicit offsets the search dropped.
    pub dropped_offsets: Vec<String>,
    pub base: Evaluated,
    pub hand_made: Vec<HandMade>,
    /// The best layouts, best first (at most `top`).
    pub best: Vec<Evaluated>,
    /// Candidates generated (phase 2 and 3), before removing duplicates.
    pub candidates: usize,
    /// Distinct layouts simulated.
    pub evaluated: usize,
    /// Candidates over the size budget (not simulated).
    pub over_budget: usize,
    /// Candidates whose runs had no result.
    pub failed: usize,
    /// Layouts in the whole space: orders of the movable fields x line
    /// starts x struct alignment.
    pub space_size: f64,
    /// Rounds of local search.
    pub rounds: usize,
    /// Whether the evaluation budget stopped the search.
    pub budget_exhausted: bool,
    /// The winner's layout, pahole style.
    pub winner_view: String,
    /// The winner as a `[[variants]]` entry.
    pub winner_variant: String,
}

/// The struct's fields in a doc, by index, and the layout applied to them.
fn apply(doc: &mut ScenarioDoc, struct_name: &str, layout: &Layout, line: u64, fixed: usize) {
    let Some(s) = doc.structs.get_mut(struct_name) else {
        return;
    };
    let declared = s.fields.clone();
    s.fields = layout
        .order
        .iter()
        .map(|&i| {
            let mut f = declared[i].clone();
            let span = f.name.span();
            if i >= fixed {
                f.offset = None;
            }
            if layout.line_start[i] {
                f.align = Some(toml::Spanned::new(span, line));
            } else if f.align.as_ref().is_some_and(|a| *a.get_ref() >= line) {
                // The base's own line alignment, taken away: the field's
                // natural alignment when it can be known here.
                if let Some(natural) = natural_align(&f) {
                    f.align = Some(toml::Spanned::new(span, natural));
                }
            }
            f
        })
        .collect();
    let span = s.fields.first().map(|f| f.name.span()).unwrap_or(0..0);
    if layout.struct_line_aligned {
        s.align = Some(toml::Spanned::new(span, line));
    } else if s.align.as_ref().is_some_and(|a| *a.get_ref() >= line) {
        // 1 leaves the struct its fields' alignment.
        s.align = Some(toml::Spanned::new(span, 1));
    }
}

/// A field's alignment without an `align` key, when it is a C scalar type
/// or opaque bytes (nested structs: unknown here).
fn natural_align(f: &FieldDef) -> Option<u64> {
    match f.shape()? {
        FieldShape::Type(t) => models::layout::c_type(t.get_ref()).map(|(_, a)| a as u64),
        FieldShape::Size(s) => {
            let n = (*s.get_ref()).max(1);
            Some((1u64 << n.trailing_zeros()).min(8))
        }
    }
}

/// The layout's text, `a, b | c` with `|` where a line starts.
fn layout_text(layout: &Layout, names: &[String]) -> String {
    let mut out = String::new();
    for (k, &i) in layout.order.iter().enumerate() {
        if k > 0 {
            out.push_str(if layout.line_start[i] { " | " } else { ", " });
        } else if layout.line_start[i] {
            out.push_str("| ");
        }
        out.push_str(&names[i]);
    }
    if layout.struct_line_aligned {
        out.push_str("  (struct line-aligned)");
    }
    out
}

/// Offsets and size a layout gives, to simulate each distinct one once.
type Signature = (Vec<(String, u32)>, u32, u32);

struct Search<'a> {
    loaded: &'a LoadedScenario,
    /// Index of the starting document among each case's variants.
    start: usize,
    options: &'a OptimizeOptions,
    line: u64,
    names: Vec<String>,
    base_cycles: Vec<f64>,
    /// Every layout simulated, by signature.
    done: BTreeMap<Signature, Evaluated>,
    candidates: usize,
    over_budget: usize,
    /// The smallest sizeof of the candidates over the size budget.
    smallest_over_budget_bytes: Option<u32>,
    failed: usize,
    /// Called as each simulation of a candidate finishes (from any thread).
    run_done: &'a (dyn Fn() + Sync),
}

impl Search<'_> {
    /// The case documents with `layout` applied.
    fn docs(&self, layout: &Layout) -> Vec<ScenarioDoc> {
        self.loaded
            .cases
            .iter()
            .map(|c| {
                let mut doc = c.variants[self.start].doc.clone();
                apply(
                    &mut doc,
                    &self.options.struct_name,
                    layout,
                    self.line,
                    self.options.fixed.len(),
                );
                doc
            })
            .collect()
    }

    /// Simulates the new layouts among `layouts` (in parallel), within the
    /// evaluation budget; returns how many were new.
    fn evaluate(&mut self, layouts: Vec<Layout>) -> usize {
        self.candidates += layouts.len();
        // Build each (cheap, serial) to find its size and signature.
        let mut fresh: Vec<(Signature, Layout, Vec<BuiltVariant>)> = Vec::new();
        for layout in layouts {
            let built: Result<Vec<_>, _> = self
                .docs(&layout)
                .iter()
                .map(|d| build_config(self.loaded, d, BuildOptions::default()))
                .collect();
            let Ok(built) = built else {
                self.failed += 1;
                continue;
            };
            let memory = &built[0].config.memory;
            let Some(def) = memory
                .structs
                .iter()
                .find(|s| s.name == self.options.struct_name)
            else {
                self.failed += 1;
                continue;
            };
            if self
                .options
                .budget_bytes
                .is_some_and(|b| def.size_bytes > b)
            {
                self.over_budget += 1;
                self.smallest_over_budget_bytes = Some(
                    self.smallest_over_budget_bytes
                        .map_or(def.size_bytes, |s| s.min(def.size_bytes)),
                );
                continue;
            }
            let signature: Signature = (
                def.fields
                    .iter()
                    .map(|f| (f.name.clone(), f.offset_bytes))
                    .collect(),
                def.size_bytes,
                def.align_bytes,
            );
            if self.done.contains_key(&signature) || fresh.iter().any(|f| f.0 == signature) {
                continue;
            }
            if self.done.len() + fresh.len() > self.options.max_evaluations {
                break;
            }
            fresh.push((signature, layout, built));
        }
        let runs: Vec<(usize, &BuiltVariant)> = fresh
            .iter()
            .enumerate()
            .flat_map(|(i, f)| f.2.iter().map(move |b| (i, b)))
            .collect();
        // Candidates run in parallel while their memory fits together.
        let budget = MemoryBudget::new(self.loaded.run_budget_bytes());
        let cycles: Vec<Option<f64>> = runs
            .par_iter()
            .map(|(_, b)| {
                let _memory = budget.admit(b.run_bytes);
                let cycles = run_variant(b)
                    .ok()
                    .map(|r| r.iteration_cycles.mean())
                    .filter(|c| *c > 0.0);
                (self.run_done)();
                cycles
            })
            .collect();
        let mut at = 0;
        let new = fresh.len();
        for (signature, layout, built) in fresh {
            let per_case: Vec<Option<f64>> = cycles[at..at + built.len()].to_vec();
            at += built.len();
            let size_bytes = signature.1;
            let (cost, cycles_per_iteration) = if per_case.iter().all(Option::is_some) {
                let c: Vec<f64> = per_case.into_iter().flatten().collect();
                (geomean_ratio(&c, &self.base_cycles), c)
            } else {
                self.failed += 1;
                (f64::INFINITY, Vec::new())
            };
            let text = layout_text(&layout, &self.names);
            self.done.insert(
                signature,
                Evaluated {
                    layout,
                    text,
                    size_bytes,
                    cost,
                    cycles_per_iteration,
                },
            );
        }
        new
    }

    fn exhausted(&self) -> bool {
        self.done.len() > self.options.max_evaluations
    }

    /// Every simulated layout, best first.
    fn ranked(&self) -> Vec<&Evaluated> {
        let mut all: Vec<&Evaluated> = self.done.values().collect();
        all.sort_by(|a, b| rank(a, b));
        all
    }
}

/// Costs closer than this (0.1 % of the base's time per iteration) are
/// ties: a simulation's small wobbles do not buy bytes.
const NOISE: f64 = 1e-3;

/// Best first: lower cost in steps of [`NOISE`], then smaller, then lower
/// cost, then by text (a total order).
fn rank(a: &Evaluated, b: &Evaluated) -> std::cmp::Ordering {
    let step = |c: f64| {
        if c.is_finite() {
            (c / NOISE).round()
        } else {
            f64::INFINITY
        }
    };
    step(a.cost)
        .total_cmp(&step(b.cost))
        .then(a.size_bytes.cmp(&b.size_bytes))
        .then(a.cost.total_cmp(&b.cost))
        .then_with(|| a.text.cmp(&b.text))
}

/// Whether `new` is better than `old` by more than [`NOISE`], or as good
/// and smaller.
fn improves(new: &Evaluated, old: &Evaluated) -> bool {
    new.cost < old.cost - NOISE || (new.cost <= old.cost + NOISE && new.size_bytes < old.size_bytes)
}

fn geomean_ratio(cycles: &[f64], base: &[f64]) -> f64 {
    let n = cycles.len().max(1) as f64;
    let log_sum: f64 = cycles.iter().zip(base).map(|(c, b)| (c / b).ln()).sum();
    (log_sum / n).exp()
}

/// Every permutation of `items`, in lexicographic order of positions.
fn permutations<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first.clone());
            out.push(p);
        }
    }
    out
}

fn factorial(n: usize) -> f64 {
    (1..=n).map(|k| k as f64).product()
}

/// Runs the search. An error is bad input (an unknown struct or field, a
/// fixed list that is not a prefix, a base that does not run) and says what
/// would be valid.
pub fn optimize(
    loaded: &LoadedScenario,
    options: &OptimizeOptions,
) -> Result<OptimizeReport, String> {
    optimize_observed(loaded, options, &|| {})
}

/// [`optimize`], calling `run_done` (from any thread) as each simulation
/// finishes, the base's and the candidates': what a progress display counts.
/// It reads as the module's three phases in order, each step a function;
/// its length is mostly the report's fields.
pub fn optimize_observed(
    loaded: &LoadedScenario,
    options: &OptimizeOptions,
    run_done: &(dyn Fn() + Sync),
) -> Result<OptimizeReport, String> {
    let path = &loaded.source.path;
    let start = start_variant(loaded, options)?;
    let doc = &loaded.cases[0].variants[start].doc;
    let def = searched_struct(doc, options, path)?;
    let names = checked_field_names(def, options)?;
    // Explicit offsets of the fields that move are dropped: the search lays
    // them out by C rules after the prefix.
    let dropped_offsets: Vec<String> = def.fields[options.fixed.len()..]
        .iter()
        .filter(|f| f.offset.is_some())
        .map(|f| f.name.get_ref().clone())
        .collect();
    if options.top == 0 {
        return Err("--top must be at least 1".into());
    }

    // Phase 1: the base and the file's variants, as written.
    let cases = build_cases(loaded, BuildOptions::default()).map_err(|e| e.to_string())?;
    let line = cases
        .first()
        .and_then(|c| c.variants.first())
        .map_or(64, |b| b.config.memory.line_size_bytes);
    let results = run_cases_observed(
        &cases,
        run_budget_bytes(loaded, &cases),
        run_done,
        &|_, _| {},
    );
    let (fields, base_cycles) = base_field_use(&cases, &results, start, &names, options)?;
    // No layout can change the cost of a struct nothing touches: say so
    // rather than simulate hundreds of layouts that all tie with the base.
    if fields.iter().all(|f| f.class == TrafficClass::Untouched) {
        return Err(untouched_error(options, path));
    }
    let hand_made = hand_made_variants(&cases, &results, start, &base_cycles, options);

    let n = names.len();
    let fixed = options.fixed.len();
    let base_layout = declared_layout(def, line as u64);
    let mut search = Search {
        loaded,
        start,
        options,
        line: line as u64,
        names: names.clone(),
        base_cycles: base_cycles.clone(),
        done: BTreeMap::new(),
        candidates: 0,
        over_budget: 0,
        smallest_over_budget_bytes: None,
        failed: 0,
        run_done,
    };
    let base = Evaluated {
        text: layout_text(&base_layout, &names),
        layout: base_layout.clone(),
        size_bytes: struct_size_in(&cases[0].variants[start], &options.struct_name),
        cost: 1.0,
        cycles_per_iteration: base_cycles.clone(),
    };
    // The base is a candidate like the others (when within the budget).
    search.evaluate(vec![base_layout.clone()]);

    // Phase 2: placements of the traffic classes.
    search.evaluate(class_placements(&fields, fixed, &base_layout));

    // Phase 3: local search from the two best layouts so far.
    let rounds = local_search(&mut search, fixed, n);

    let ranked = search.ranked();
    let best: Vec<Evaluated> = ranked
        .iter()
        .filter(|e| e.cost.is_finite())
        .take(options.top)
        .map(|e| (*e).clone())
        .collect();
    let Some(winner) = best.first() else {
        // Every candidate over the size budget: the budget is the input at
        // fault, and the smallest layout tried says what would do.
        if let (Some(budget), Some(smallest), 0) = (
            options.budget_bytes,
            search.smallest_over_budget_bytes,
            search.done.len(),
        ) {
            return Err(format!(
                "--budget-bytes {budget}: every layout of struct `{}` tried is larger ({} \
                 candidate(s), the smallest {smallest} bytes); valid: a budget of at least \
                 {smallest} bytes",
                options.struct_name, search.over_budget
            ));
        }
        return Err(format!(
            "no layout of struct `{}` within the budget ran to a result",
            options.struct_name
        ));
    };
    let (winner_view, winner_variant) =
        render_winner(&search, def, winner, line, &dropped_offsets)?;
    let movable_count = n - fixed;
    Ok(OptimizeReport {
        scenario: doc.name.clone(),
        struct_name: options.struct_name.clone(),
        line_bytes: line,
        cases: cases.len(),
        fields,
        fixed,
        budget_bytes: options.budget_bytes,
        base,
        hand_made,
        best: best.clone(),
        candidates: search.candidates,
        evaluated: search.done.len(),
        over_budget: search.over_budget,
        failed: search.failed,
        space_size: factorial(movable_count) * 2f64.powi(movable_count as i32) * 2.0,
        rounds,
        budget_exhausted: search.exhausted(),
        variant: options.variant.clone(),
        dropped_offsets: dropped_offsets.clone(),
        winner_view,
        winner_variant,
    })
}

/// Why a struct nothing touches is not searched.
fn untouched_error(options: &OptimizeOptions, path: &str) -> String {
    let variant = match &options.variant {
        Some(v) => format!("variant `{v}`"),
        None => "the base".to_string(),
    };
    format!(
        "struct `{}` has no traffic in {variant} of `{path}`: no thread loads, stores or \
         updates any of its fields in any case, so every layout costs the same; nothing \
         to optimize (choose a struct the scripts use: `bounce layout {path} --run` shows \
         each member's traffic)",
        options.struct_name
    )
}

/// Index of the variant the search starts from (`--variant`, else the
/// base), or an error listing the variants.
fn start_variant(loaded: &LoadedScenario, options: &OptimizeOptions) -> Result<usize, String> {
    let Some(name) = &options.variant else {
        return Ok(0);
    };
    let path = &loaded.source.path;
    let names: Vec<&str> = loaded.cases[0]
        .variants
        .iter()
        .map(|v| v.name.as_str())
        .collect();
    names.iter().position(|n| n == name).ok_or_else(|| {
        let hint = closest(name, &names)
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        format!(
            "`{path}` has no variant `{name}`{hint}; variants: {}",
            names.join(", ")
        )
    })
}

/// The struct the search lays out, or an error listing the structs.
fn searched_struct<'d>(
    doc: &'d ScenarioDoc,
    options: &OptimizeOptions,
    path: &str,
) -> Result<&'d StructDef, String> {
    doc.structs.get(&options.struct_name).ok_or_else(|| {
        let names: Vec<&str> = doc.structs.keys().map(String::as_str).collect();
        let hint = closest(&options.struct_name, &names)
            .map(|c| format!(" (did you mean `{c}`?)"))
            .unwrap_or_default();
        format!(
            "`{path}` has no struct `{}`{hint}; structs: {}",
            options.struct_name,
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )
    })
}

/// The struct's field names as declared, once `--fixed` is checked to name
/// existing fields that are a prefix of them.
fn checked_field_names(def: &StructDef, options: &OptimizeOptions) -> Result<Vec<String>, String> {
    let names: Vec<String> = def
        .fields
        .iter()
        .map(|f| f.name.get_ref().clone())
        .collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for (k, wanted) in options.fixed.iter().enumerate() {
        if !names.contains(wanted) {
            let hint = closest(wanted, &name_refs)
                .map(|c| format!(" (did you mean `{c}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "--fixed: struct `{}` has no field `{wanted}`{hint}; fields: {}",
                options.struct_name,
                names.join(", ")
            ));
        }
        if names[k] != *wanted {
            return Err(format!(
                "--fixed must name the struct's first fields in order (a prefix that keeps \
                 its offsets): struct `{}` starts with {}",
                options.struct_name,
                names[..options.fixed.len().min(names.len())]
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(names)
}

/// Phase 1's reading of the starting layout's runs: each field's traffic
/// class and traffic per iteration over the cases, and the mean cycles per
/// iteration of each case (what candidates' costs are divided by). An
/// error is the starting layout's failure to run, as its report says it.
fn base_field_use(
    cases: &[BuiltCase],
    results: &[CaseResult],
    start: usize,
    names: &[String],
    options: &OptimizeOptions,
) -> Result<(Vec<FieldUse>, Vec<f64>), String> {
    let mut traffic = vec![0.0; names.len()];
    let mut access = vec![(0u64, 0u64, 0u64); names.len()];
    let mut base_cycles = Vec::new();
    for (case, result) in cases.iter().zip(results) {
        let base = match &result.results[start] {
            Ok(r) => r,
            Err(f) => {
                // The report without its leading `error: `, which the
                // caller prints before the message.
                let run = if case.id.is_empty() {
                    "the base layout".to_string()
                } else {
                    format!("the base layout in case `{}`", case.id)
                };
                let report = f.report(&run).to_string();
                return Err(report
                    .strip_prefix("error: ")
                    .unwrap_or(&report)
                    .to_string());
            }
        };
        base_cycles.push(base.iteration_cycles.mean().max(f64::MIN_POSITIVE));
        let memory = &case.variants[start].config.memory;
        for f in &base.fields {
            let Some((inst, path)) = f.name.split_once('.') else {
                continue;
            };
            let of_struct = memory.instances.iter().any(|i| {
                i.name == inst && memory.structs[i.struct_index].name == options.struct_name
            });
            if !of_struct {
                continue;
            }
            let top = path.split(['.', '[']).next().unwrap_or(path);
            if let Some(k) = names.iter().position(|n| n == top) {
                let t = &f.traffic;
                traffic[k] += base.per_iteration(t.stores + t.atomics + t.misses);
                access[k].0 += t.atomics;
                access[k].1 += t.stores;
                access[k].2 += t.loads;
            }
        }
    }
    let fields = names
        .iter()
        .enumerate()
        .map(|(k, n)| FieldUse {
            name: n.clone(),
            class: match access[k] {
                (a, _, _) if a > 0 => TrafficClass::AtomicWritten,
                (_, s, _) if s > 0 => TrafficClass::Written,
                (_, _, l) if l > 0 => TrafficClass::ReadMostly,
                _ => TrafficClass::Untouched,
            },
            traffic_per_iteration: traffic[k],
        })
        .collect();
    Ok((fields, base_cycles))
}

/// `sizeof` of the searched struct in a built variant (0 when absent).
fn struct_size_in(variant: &BuiltVariant, struct_name: &str) -> u32 {
    variant
        .config
        .memory
        .structs
        .iter()
        .find(|s| s.name == struct_name)
        .map_or(0, |s| s.size_bytes)
}

/// The file's other variants, costed against the starting layout.
fn hand_made_variants(
    cases: &[BuiltCase],
    results: &[CaseResult],
    start: usize,
    base_cycles: &[f64],
    options: &OptimizeOptions,
) -> Vec<HandMade> {
    (0..cases[0].variants.len())
        .filter(|&v| v != start)
        .map(|v| {
            let cycles: Option<Vec<f64>> = results
                .iter()
                .map(|r| {
                    r.results[v]
                        .as_ref()
                        .ok()
                        .map(|x| x.iteration_cycles.mean())
                })
                .collect();
            HandMade {
                name: cases[0].variants[v].name.clone(),
                cost: cycles.map_or(f64::INFINITY, |c| geomean_ratio(&c, base_cycles)),
                size_bytes: struct_size_in(&cases[0].variants[v], &options.struct_name),
            }
        })
        .collect()
}

/// The struct as declared, as a [`Layout`]: fields in order, a line start
/// where a field's `align` is at least a line.
fn declared_layout(def: &StructDef, line: u64) -> Layout {
    Layout {
        order: (0..def.fields.len()).collect(),
        line_start: def
            .fields
            .iter()
            .map(|f| f.align.as_ref().is_some_and(|a| *a.get_ref() >= line))
            .collect(),
        struct_line_aligned: def.align.as_ref().is_some_and(|a| *a.get_ref() >= line),
    }
}

/// Phase 2's candidates: every placement of the traffic classes (see the
/// module's comment), the fixed prefix first and untouched fields last,
/// sorted and without duplicates.
fn class_placements(fields: &[FieldUse], fixed: usize, base_layout: &Layout) -> Vec<Layout> {
    let mut groups: BTreeMap<TrafficClass, Vec<usize>> = BTreeMap::new();
    for (i, field) in fields.iter().enumerate().skip(fixed) {
        groups.entry(field.class).or_default().push(i);
    }
    for members in groups.values_mut() {
        // Hottest first, then as declared.
        members.sort_by(|&a, &b| {
            fields[b]
                .traffic_per_iteration
                .total_cmp(&fields[a].traffic_per_iteration)
                .then(a.cmp(&b))
        });
    }
    let untouched = groups.remove(&TrafficClass::Untouched).unwrap_or_default();
    let classes: Vec<TrafficClass> = groups.keys().copied().collect();
    let mut phase2 = Vec::new();
    for class_order in permutations(&classes) {
        let g = class_order.len();
        for breaks in 0..(1u32 << g.saturating_sub(1)) {
            for isolate in 0..4u32 {
                for prefix_break in [false, true] {
                    if fixed == 0 && prefix_break {
                        continue;
                    }
                    for struct_line_aligned in [false, true] {
                        let mut order: Vec<usize> = (0..fixed).collect();
                        let mut line_start = base_layout.line_start.clone();
                        for s in line_start.iter_mut().skip(fixed) {
                            *s = false;
                        }
                        for (k, class) in class_order.iter().enumerate() {
                            let members = &groups[class];
                            let isolated = match class {
                                TrafficClass::AtomicWritten => isolate & 1 != 0,
                                TrafficClass::Written => isolate & 2 != 0,
                                _ => false,
                            };
                            for (m, &i) in members.iter().enumerate() {
                                let first_of_group = m == 0;
                                line_start[i] = if first_of_group {
                                    (k == 0 && prefix_break)
                                        || (k > 0 && breaks & (1 << (k - 1)) != 0)
                                } else {
                                    isolated
                                };
                                order.push(i);
                            }
                        }
                        order.extend(&untouched);
                        phase2.push(Layout {
                            order,
                            line_start,
                            struct_line_aligned,
                        });
                    }
                }
            }
        }
    }
    phase2.sort();
    phase2.dedup();
    phase2
}

/// Phase 3: from each of the two best layouts so far, move to the best
/// improving neighbour until none improves or the budget is spent.
/// Returns the rounds run.
fn local_search(search: &mut Search, fixed: usize, n: usize) -> usize {
    let mut rounds = 0;
    let seeds: Vec<Evaluated> = search
        .ranked()
        .into_iter()
        .filter(|e| e.cost.is_finite())
        .take(2)
        .cloned()
        .collect();
    for seed in seeds {
        let mut current = seed;
        while !search.exhausted() {
            rounds += 1;
            let neighbours = neighbours(&current.layout, fixed, n);
            search.evaluate(neighbours.clone());
            let best = neighbours
                .iter()
                .filter_map(|n| search.done.values().find(|e| e.layout == *n))
                .filter(|e| improves(e, &current))
                .min_by(|a, b| rank(a, b))
                .cloned();
            match best {
                Some(b) => current = b,
                None => break,
            }
        }
    }
    rounds
}

/// A layout's neighbours: each pair of neighbouring movable fields
/// swapped, each movable field's line start toggled, the struct's line
/// alignment toggled.
fn neighbours(l: &Layout, fixed: usize, n: usize) -> Vec<Layout> {
    let mut neighbours = Vec::new();
    for k in fixed..n.saturating_sub(1) {
        let mut order = l.order.clone();
        order.swap(k, k + 1);
        neighbours.push(Layout { order, ..l.clone() });
    }
    for i in fixed..n {
        let mut line_start = l.line_start.clone();
        line_start[i] = !line_start[i];
        neighbours.push(Layout {
            line_start,
            ..l.clone()
        });
    }
    neighbours.push(Layout {
        struct_line_aligned: !l.struct_line_aligned,
        ..l.clone()
    });
    neighbours
}

/// The winner as `bounce layout` lists it and as a `[[variants]]` entry.
fn render_winner(
    search: &Search,
    def: &StructDef,
    winner: &Evaluated,
    line: u32,
    dropped_offsets: &[String],
) -> Result<(String, String), String> {
    let (loaded, options) = (search.loaded, search.options);
    let docs = search.docs(&winner.layout);
    let built =
        build_config(loaded, &docs[0], BuildOptions::default()).map_err(|e| e.to_string())?;
    let winner_def = built
        .config
        .memory
        .structs
        .iter()
        .find(|s| s.name == options.struct_name)
        .cloned()
        .ok_or("the winner has no struct")?;
    // The same pahole-style listing `bounce layout` prints (the traffic
    // classes are listed at the top of the report).
    let winner_struct = laid_out_structs(loaded, &docs[0])
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|s| s.name == options.struct_name)
        .ok_or("the winner has no struct")?;
    let winner_view = render_struct(&winner_struct, line, None);
    let winner_offsets: Vec<(String, u32)> = winner_def
        .fields
        .iter()
        .filter(|f| dropped_offsets.contains(&f.name))
        .map(|f| (f.name.clone(), f.offset_bytes))
        .collect();
    let winner_variant = variant_text(
        def,
        &winner.layout,
        &search.names,
        line as u64,
        winner,
        options,
        &winner_offsets,
    );
    Ok((winner_view, winner_variant))
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The winner as a `[[variants]]` entry of `set` patches on the base.
fn variant_text(
    def: &StructDef,
    layout: &Layout,
    names: &[String],
    line: u64,
    winner: &Evaluated,
    options: &OptimizeOptions,
    offsets: &[(String, u32)],
) -> String {
    let s = &options.struct_name;
    let mut patches: Vec<String> = Vec::new();
    let declared: Vec<usize> = (0..names.len()).collect();
    if layout.order != declared {
        patches.push(format!(
            "{} = [{}]",
            toml_string(&format!("structs.{s}.fields")),
            layout
                .order
                .iter()
                .map(|&i| toml_string(&names[i]))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for (i, f) in def.fields.iter().enumerate() {
        let own = f.align.as_ref().map(|a| *a.get_ref());
        let wanted = if layout.line_start[i] {
            Some(line)
        } else if own.is_some_and(|a| a >= line) {
            natural_align(f)
        } else {
            own
        };
        if wanted != own {
            if let Some(a) = wanted {
                patches.push(format!(
                    "{} = {a}",
                    toml_string(&format!("structs.{s}.fields.{}.align", names[i]))
                ));
            }
        }
    }
    for (name, offset) in offsets {
        patches.push(format!(
            "{} = {offset}",
            toml_string(&format!("structs.{s}.fields.{name}.offset"))
        ));
    }
    let own = def.align.as_ref().map(|a| *a.get_ref());
    let wanted = if layout.struct_line_aligned {
        Some(line)
    } else if own.is_some_and(|a| a >= line) {
        Some(1)
    } else {
        own
    };
    if wanted != own {
        if let Some(a) = wanted {
            patches.push(format!(
                "{} = {a}",
                toml_string(&format!("structs.{s}.align"))
            ));
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Found by `bounce optimize --struct {s}`: {:+.1} % cycles per iteration against the base\n\
         # (geometric mean over the sweep's cases), sizeof {} bytes. Layout: {}",
        winner.change_pct(),
        winner.size_bytes,
        winner.text
    );
    if let Some(v) = &options.variant {
        let _ = writeln!(
            out,
            "# These patches apply to variant `{v}`: add its own `set` entries to them."
        );
    }
    let _ = writeln!(out, "[[variants]]");
    let _ = writeln!(out, "name = {}", toml_string(&format!("optimized-{s}")));
    let _ = writeln!(
        out,
        "description = {}",
        toml_string(&format!(
            "struct {s} as bounce optimize laid it out ({:+.1} % cycles per iteration)",
            winner.change_pct()
        ))
    );
    if patches.is_empty() {
        let _ = writeln!(out, "set = {{}}");
    } else {
        let _ = writeln!(out, "set = {{ {} }}", patches.join(", "));
    }
    out
}

impl OptimizeReport {
    /// What was searched, within which limits, from which layout.
    fn heading(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "bounce optimize: struct {} of `{}`, cost = cycles per iteration (mean), \
             geometric mean over {} case(s), against the base",
            self.struct_name, self.scenario, self.cases
        );
        let _ = writeln!(
            out,
            "limits: {}; {}",
            match self.budget_bytes {
                Some(b) => format!("sizeof at most {b} bytes"),
                None => "no size budget".into(),
            },
            if self.fixed == 0 {
                "no fixed prefix".to_string()
            } else {
                format!(
                    "fixed prefix {}",
                    self.fields[..self.fixed]
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
        if let Some(v) = &self.variant {
            let _ = writeln!(
                out,
                "starting layout: variant `{v}` (\"base\" below is its layout)"
            );
        }
        if !self.dropped_offsets.is_empty() {
            let _ = writeln!(
                out,
                "explicit offsets dropped (the search lays these out by C rules after the \
                 prefix): {}",
                self.dropped_offsets.join(", ")
            );
        }
        out
    }

    /// The report as printed.
    pub fn render(&self) -> String {
        let mut out = self.heading();
        out.push_str("\nfields by their traffic in the base run:\n");
        for f in &self.fields {
            let _ = writeln!(
                out,
                "  {:<28} {:<15} {:>10} stores+atomics+misses per iteration",
                f.name,
                f.class.describe(),
                format!("{:.3}", f.traffic_per_iteration)
            );
        }
        let _ = writeln!(
            out,
            "\nsearched: {} distinct layout(s) simulated of {} candidate(s) generated \
             ({} over the size budget, {} without a result), {} round(s) of local search{}; \
             the space holds {} layouts ({}! orders x 2^{} line starts x 2 struct alignments)",
            self.evaluated,
            self.candidates,
            self.over_budget,
            self.failed,
            self.rounds,
            if self.budget_exhausted {
                ", stopped by --max-evaluations"
            } else {
                ", stopped at a local optimum"
            },
            format_count(self.space_size),
            self.fields.len() - self.fixed,
            self.fields.len() - self.fixed,
        );
        let _ = writeln!(
            out,
            "\n  {:>4}  {:>9}  {:>7}  layout (`|`: starts a cache line)",
            "rank", "change", "sizeof"
        );
        let _ = writeln!(
            out,
            "  {:>4}  {:>9}  {:>7}  {}",
            "base", "0.0 %", self.base.size_bytes, self.base.text
        );
        for h in &self.hand_made {
            let _ = writeln!(
                out,
                "  {:>4}  {:>9}  {:>7}  file's variant `{}`",
                "file",
                pct(h.cost),
                h.size_bytes,
                h.name
            );
        }
        for (k, e) in self.best.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {:>4}  {:>9}  {:>7}  {}",
                k + 1,
                pct(e.cost),
                e.size_bytes,
                e.text
            );
        }
        let _ = writeln!(out, "\nthe winner:\n{}", self.winner_view);
        let _ = writeln!(out, "as a variant:\n{}", self.winner_variant);
        out
    }
}

fn pct(cost: f64) -> String {
    if cost.is_finite() {
        format!("{:+.1} %", (cost - 1.0) * 100.0)
    } else {
        "no result".into()
    }
}

/// A count for a sentence: exact up to a million, then in powers of ten.
fn format_count(v: f64) -> String {
    if v < 1e6 {
        format!("{v:.0}")
    } else {
        format!("{v:.2e}")
    }
}
