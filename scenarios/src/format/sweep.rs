//! `[sweep]`: axes whose cross product is the cases of a scenario.
//!
//! Every key of `[sweep]` other than `variants`, `cpus`, `group` and
//! `placement` is a patch path, as in a variant's `set`, with a list of
//! values (or an integer range `{ from, to, step }`) instead of one value.
//! `cpus` is a list of CPU counts (or cpulists) for one thread group,
//! `placement` how counts become CPUs, `group` which thread group, and
//! `variants` which of the file's variants every case runs.
//!
//! A case is one more set of patches on the document, applied after the
//! variant's own with the same patching as a variant's `set`, so that every
//! error in a case points at the sweep's line in the file. CPU counts are
//! turned into a cpulist once the case's machine is known, and that cpulist
//! is one more patch of `threads.GROUP.cpus`, spanned at the count. Which
//! machine a document describes is the machine layer's to say (it comes
//! after this one): expanding a sweep is given it as a [`MachineOf`], which
//! [`crate::load_str`] makes [`crate::machine::build_machine`].
//!
//! Cases are numbered in the order of the cross product, the first axis
//! varying slowest; a case's id names each axis and its value
//! (`machine=icelake-sp-2s,cpus=16,params.batch=64`), and its seed is
//! [`case_seed`] of the document's seed and that id, so it does not depend on
//! which other cases the sweep has, nor on the order they run in.

use std::fmt;
use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::format::document::patch::{self, SetEntry, VariantSpec};
use crate::format::document::tree::{join_path, type_phrase};
use crate::format::document::{self, default_name, doc_from_tree, Variant};
use crate::format::error::{InputError, SourceFile};
use crate::format::schema::{format_cpulist, CpuSet, ScenarioDoc, CPULIST_HELP, MAX_CPU};
use sim_core::cpu::LinuxCpu;
use sim_core::limits::Limits;
use sim_core::topology::Topology;

/// The machine of a document: how expanding a sweep turns a case's CPU
/// count into CPUs. Errors point into the source file.
/// [`crate::load_str`] gives [`crate::machine::build_machine`].
pub type MachineOf = fn(&SourceFile, &ScenarioDoc) -> Result<Topology, InputError>;

/// The scenario as loaded before its sweep: what expanding the sweep reads.
struct Loading<'a> {
    source: &'a SourceFile,
    limits: &'a Limits,
    base: &'a Variant,
    /// In file order; excludes the base.
    variants: &'a [Variant],
    machine_of: MachineOf,
}

/// Keys of `[sweep]` that are not patch paths.
pub const SWEEP_KEYS: &[&str] = &["variants", "cpus", "group", "placement"];
/// Top-level tables whose keys are names the scenario chose: an axis may
/// change one of their entries but not add one (a misspelt parameter would
/// otherwise be a new parameter nothing reads).
const NAMED_MAPS: &[&str] = &["params", "structs", "instances", "procedures", "scripts"];

const PLACEMENT_HELP: &str = "\"compact\" (lowest CPU numbers first: the cores of socket 0, then of socket 1, SMT siblings last), \"spread\" (alternate sockets), or the CPUs in the order to take them, such as \"0,40,1,41\"";
const RANGE_HELP: &str = "a list such as [1, 2, 4], or an integer range such as { from = 1, to = 160, step = \"double\" } (step: a positive integer, or \"double\")";

/// One value of a sweep axis.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisValue {
    Integer(i64),
    Float(f64),
    Boolean(bool),
    String(String),
    /// An array, a table or a date-time, as written in the file.
    Other(String),
}

impl fmt::Display for AxisValue {
    /// The form used in case ids: numbers and booleans as written, strings
    /// bare when they hold only letters, digits and `-_.:+/`, else quoted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AxisValue::Integer(n) => write!(f, "{n}"),
            AxisValue::Float(x) => write!(f, "{x:?}"),
            AxisValue::Boolean(b) => write!(f, "{b}"),
            AxisValue::String(s) | AxisValue::Other(s) => {
                let bare = !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.:+/".contains(c));
                if bare {
                    f.write_str(s)
                } else {
                    write!(f, "{s:?}")
                }
            }
        }
    }
}

/// One axis of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// `cpus`, `placement`, or the patch path (`machine`, `params.batch`).
    pub name: String,
    pub values: Vec<AxisValue>,
    /// For `cpus` and `placement`: the thread group whose CPUs they choose.
    pub thread_group: Option<String>,
}

/// The `[sweep]` of a scenario, as its results describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// In the order written; the first varies slowest.
    pub axes: Vec<Axis>,
    /// The variants every case runs, in this order.
    pub variants: Vec<String>,
    /// How CPU counts become CPUs when there is no `placement` axis:
    /// `compact`, `spread` or a CPU order (`None` without a `cpus` axis).
    pub placement: Option<String>,
}

/// One point of the sweep: its documents, one per variant it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// Position in the cross product.
    pub index: usize,
    /// `axis=value` for each axis, joined by `,`; empty without a sweep.
    pub id: String,
    /// The seed of the case's runs: [`case_seed`] of the scenario's seed and
    /// the id (the scenario's seed itself when the id is empty). A variant
    /// that sets its own `seed` gets [`case_seed`] of that instead.
    pub seed: u64,
    /// One value per axis, in axis order.
    pub values: Vec<AxisValue>,
    /// The documents, with the case's patches applied and `seed` set.
    pub variants: Vec<Variant>,
}

/// 64-bit FNV-1a.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of the case `id` of a scenario with seed `seed`:
/// `splitmix64(fnv1a64(id) ^ splitmix64(seed))` kept to its low 53 bits (so
/// that it fits a TOML integer and a JSON number exactly, and can be written
/// back as `seed = ...` to rerun the case alone), or `seed` itself for the
/// empty id of a scenario without a sweep.
pub fn case_seed(seed: u64, id: &str) -> u64 {
    if id.is_empty() {
        return seed;
    }
    splitmix64(fnv1a64(id.as_bytes()) ^ splitmix64(seed)) & ((1 << 53) - 1)
}

/// How a CPU count becomes CPUs.
#[derive(Debug, Clone, PartialEq)]
enum Placement {
    Compact,
    Spread,
    Order(Vec<u32>),
}

impl Placement {
    fn parse(text: &str) -> Result<Placement, String> {
        match text.trim() {
            "compact" => return Ok(Placement::Compact),
            "spread" => return Ok(Placement::Spread),
            t if !t.starts_with(|c: char| c.is_ascii_digit()) => {
                return Err("it is neither `compact` nor `spread`, nor a list of CPUs".into())
            }
            _ => {}
        }
        // An ordered cpulist: items in the order written.
        let mut order = Vec::new();
        for item in text.split(',') {
            match CpuSet::parse(item) {
                Ok(CpuSet::List(cpus)) => order.extend(cpus),
                Ok(CpuSet::All) => {
                    return Err(
                        "`all` has no order; list the CPUs in the order to take them".into(),
                    )
                }
                Err(why) => return Err(why),
            }
        }
        let mut sorted = order.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("CPU {} is listed more than once", w[0]));
        }
        Ok(Placement::Order(order))
    }

    /// The CPUs of `topology` not in `taken`, in the order this placement
    /// takes them. An explicit order that names a CPU the machine lacks or
    /// another group runs on is an error.
    fn order(&self, topology: &Topology, taken: &[(u32, String)]) -> Result<Vec<u32>, String> {
        let n = topology.cpu_count();
        let is_taken = |cpu: u32| taken.iter().any(|(c, _)| *c == cpu);
        let mut cpus: Vec<u32> = match self {
            Placement::Compact | Placement::Spread => (0..n).filter(|&c| !is_taken(c)).collect(),
            Placement::Order(order) => {
                for &cpu in order {
                    if cpu >= n {
                        return Err(format!(
                            "the placement lists CPU {cpu}, which {} does not have (CPUs 0-{})",
                            topology.spec.name,
                            n - 1
                        ));
                    }
                    if let Some((_, group)) = taken.iter().find(|(c, _)| *c == cpu) {
                        return Err(format!(
                            "the placement lists CPU {cpu}, which thread group `{group}` runs on"
                        ));
                    }
                }
                order.clone()
            }
        };
        if *self == Placement::Spread {
            let per_socket = topology.cores_per_socket();
            cpus.sort_by_key(|&c| {
                let c = LinuxCpu::new(c);
                let core = topology.core_of(c);
                (
                    topology.thread_of(c),
                    core % per_socket,
                    topology.socket_of(c),
                )
            });
        }
        Ok(cpus)
    }
}

fn placement_error(
    source: &SourceFile,
    span: Range<usize>,
    key: &str,
    text: &str,
    why: &str,
) -> InputError {
    let mut e = at(
        source,
        span,
        key,
        format!("invalid placement {text:?}: {why}"),
    )
    .with_valid(PLACEMENT_HELP);
    e.suggestions = crate::format::error::nearest(text, &["compact", "spread"])
        .into_iter()
        .map(str::to_string)
        .collect();
    e
}

/// Values of an axis as the file gives them: a list, or an integer range.
enum RawValues<'i> {
    List(Vec<Spanned<DeValue<'i>>>),
    Range {
        values: Vec<i64>,
        span: Range<usize>,
    },
}

enum RawKind {
    Cpus,
    Placement,
    Path(Vec<(String, Range<usize>)>),
}

struct RawAxis<'i> {
    name: String,
    key_span: Range<usize>,
    kind: RawKind,
    values: RawValues<'i>,
}

/// `[sweep]` as read, before names are checked against the scenario.
struct RawSweep<'i> {
    variants: Option<Vec<Spanned<String>>>,
    group: Option<Spanned<String>>,
    /// A single `placement` (a list is an axis instead).
    placement: Option<Spanned<String>>,
    axes: Vec<RawAxis<'i>>,
}

fn at(source: &SourceFile, span: Range<usize>, key: &str, message: String) -> InputError {
    InputError::at(source, span, key, message)
}

fn string_of(
    source: &SourceFile,
    key: &str,
    value: &Spanned<DeValue<'_>>,
) -> Result<Spanned<String>, InputError> {
    match value.get_ref() {
        DeValue::String(s) => Ok(Spanned::new(value.span(), s.to_string())),
        other => Err(at(
            source,
            value.span(),
            key,
            format!(
                "expected a string for `{key}`, found {}",
                type_phrase(other)
            ),
        )),
    }
}

fn integer_of(value: &DeValue<'_>) -> Option<i64> {
    let i = value.as_integer()?;
    i64::from_str_radix(i.as_str(), i.radix()).ok()
}

/// Reads the values of the axis `key`: a non-empty list, or a range table.
fn raw_values<'i>(
    source: &SourceFile,
    key: &str,
    value: Spanned<DeValue<'i>>,
    max_values: u64,
) -> Result<RawValues<'i>, InputError> {
    let span = value.span();
    let is_inline_table = source
        .text
        .get(span.start..)
        .is_some_and(|t| t.starts_with('{'));
    match value.into_inner() {
        DeValue::Array(items) => {
            if items.is_empty() {
                return Err(at(
                    source,
                    span,
                    key,
                    format!("`{key}` is an empty list: a sweep axis needs at least one value"),
                )
                .with_valid(RANGE_HELP));
            }
            Ok(RawValues::List(items.to_vec()))
        }
        DeValue::Table(t) if is_inline_table => range(source, key, t, span, max_values),
        other => Err(at(
            source,
            span,
            key,
            format!(
                "expected a list of values or a range for the sweep axis `{key}`, found {}",
                type_phrase(&other)
            ),
        )
        .with_valid(RANGE_HELP)),
    }
}

fn range<'i>(
    source: &SourceFile,
    key: &str,
    table: DeTable<'i>,
    span: Range<usize>,
    max_values: u64,
) -> Result<RawValues<'i>, InputError> {
    let mut from = None;
    let mut to = None;
    let mut step: Option<Spanned<DeValue<'i>>> = None;
    for (k, v) in table {
        let name = k.get_ref().to_string();
        let sub = format!("{key}.{}", join_path(&[&name]));
        match name.as_str() {
            "from" | "to" => {
                let n = integer_of(v.get_ref()).ok_or_else(|| {
                    at(
                        source,
                        v.span(),
                        &sub,
                        format!(
                            "expected an integer for `{sub}`, found {}",
                            type_phrase(v.get_ref())
                        ),
                    )
                })?;
                if name == "from" {
                    from = Some(n);
                } else {
                    to = Some((n, v.span()));
                }
            }
            "step" => step = Some(v),
            _ => {
                return Err(at(
                    source,
                    k.span(),
                    &sub,
                    format!("unknown key `{name}` in the range `{key}`"),
                )
                .with_choices(&name, &["from", "to", "step"]))
            }
        }
    }
    let (Some(from), Some((to, to_span))) = (from, to) else {
        let missing = if from.is_none() { "from" } else { "to" };
        return Err(at(
            source,
            span,
            key,
            format!("missing key `{missing}` in the range `{key}`"),
        )
        .with_valid(RANGE_HELP));
    };
    if to < from {
        return Err(at(
            source,
            to_span,
            &format!("{key}.to"),
            format!("the range `{key}` ends ({to}) before it starts ({from})"),
        ));
    }
    let step = range_step(source, key, step.as_ref(), from)?;
    let values = range_values(source, key, span.clone(), (from, to), step, max_values)?;
    Ok(RawValues::Range { values, span })
}

/// How a range steps: by adding a positive integer, or by doubling.
#[derive(Clone, Copy)]
enum Step {
    Add(i64),
    Double,
}

/// The `step` of the range `key` (1 when absent): a positive integer, or
/// `"double"` from at least 1.
fn range_step(
    source: &SourceFile,
    key: &str,
    step: Option<&Spanned<DeValue<'_>>>,
    from: i64,
) -> Result<Step, InputError> {
    Ok(match step {
        None => Step::Add(1),
        Some(v) => match (v.get_ref(), integer_of(v.get_ref())) {
            (_, Some(n)) if n >= 1 => Step::Add(n),
            (DeValue::String(s), _) if s == "double" => {
                if from < 1 {
                    return Err(at(
                        source,
                        v.span(),
                        &format!("{key}.step"),
                        format!("`step = \"double\"` needs `from` of at least 1, not {from}"),
                    ));
                }
                Step::Double
            }
            _ => {
                return Err(at(
                    source,
                    v.span(),
                    &format!("{key}.step"),
                    format!("invalid step in the range `{key}`"),
                )
                .with_valid("a positive integer, or \"double\""))
            }
        },
    })
}

/// The values of the range `key` (at `span`): every value from `from` up
/// to `to`, and `to` itself even where the steps do not land on it (1 to
/// 160 doubling: 1, 2, 4, ... 128, 160); more than `max_values` is an
/// error.
fn range_values(
    source: &SourceFile,
    key: &str,
    span: Range<usize>,
    (from, to): (i64, i64),
    step: Step,
    max_values: u64,
) -> Result<Vec<i64>, InputError> {
    // Every value from `from` up to `to`, and `to` itself even where the
    // steps do not land on it (1 to 160 doubling: 1, 2, 4, ... 128, 160).
    let mut values = Vec::new();
    let mut v = from;
    loop {
        values.push(v);
        if values.len() as u64 > max_values {
            return Err(at(
                source,
                span,
                key,
                format!("the range `{key}` has more than {max_values} values, one run each"),
            )
            .with_valid(format!(
                "at most {max_values} values; raise the limit with `--set-limit runs=N`"
            )));
        }
        let next = match step {
            Step::Add(n) => v.checked_add(n),
            Step::Double => v.checked_mul(2),
        };
        match next {
            Some(n) if n < to => v = n,
            _ => break,
        }
    }
    if *values.last().unwrap_or(&to) != to {
        values.push(to);
    }
    Ok(values)
}

/// Reads the `[sweep]` table.
fn read<'i>(
    source: &SourceFile,
    value: Spanned<DeValue<'i>>,
    max_values: u64,
) -> Result<RawSweep<'i>, InputError> {
    let span = value.span();
    let table = match value.into_inner() {
        DeValue::Table(t) => t,
        other => {
            return Err(at(
                source,
                span,
                "sweep",
                format!(
                    "expected a table for `sweep` (write `[sweep]`), found {}",
                    type_phrase(&other)
                ),
            ))
        }
    };
    let mut raw = RawSweep {
        variants: None,
        group: None,
        placement: None,
        axes: Vec::new(),
    };
    let mut paths = DeTable::new();
    for (key, value) in table {
        let name = key.get_ref().to_string();
        let full = format!("sweep.{}", join_path(&[&name]));
        match name.as_str() {
            "variants" => {
                let list = match value.get_ref() {
                    DeValue::Array(items) => items
                        .iter()
                        .map(|v| string_of(source, &full, v))
                        .collect::<Result<Vec<_>, _>>()?,
                    other => {
                        return Err(at(
                            source,
                            value.span(),
                            &full,
                            format!(
                                "expected a list of variant names for `{full}`, found {}",
                                type_phrase(other)
                            ),
                        ))
                    }
                };
                if list.is_empty() {
                    return Err(at(
                        source,
                        value.span(),
                        &full,
                        format!("`{full}` is an empty list: name at least one variant to run"),
                    ));
                }
                raw.variants = Some(list);
            }
            "group" => raw.group = Some(string_of(source, &full, &value)?),
            "placement" if !matches!(value.get_ref(), DeValue::Array(_)) => {
                raw.placement = Some(string_of(source, &full, &value)?);
            }
            "cpus" | "placement" => {
                let kind = if name == "cpus" {
                    RawKind::Cpus
                } else {
                    RawKind::Placement
                };
                raw.axes.push(RawAxis {
                    name: name.clone(),
                    key_span: key.span(),
                    kind,
                    values: raw_values(source, &full, value, max_values)?,
                });
            }
            _ => {
                paths.insert(key, value);
            }
        }
    }
    let mut entries: Vec<SetEntry<'i>> = Vec::new();
    patch::flatten_set(source, "sweep", paths, &mut Vec::new(), &mut entries)?;
    for entry in entries {
        let names: Vec<&str> = entry.segments.iter().map(|(s, _)| s.as_str()).collect();
        let name = join_path(&names);
        let full = format!("sweep.{name}");
        let key_span = entry.segments.last().map_or(0..0, |(_, s)| s.clone());
        raw.axes.push(RawAxis {
            name,
            key_span,
            values: raw_values(source, &full, entry.value, max_values)?,
            kind: RawKind::Path(entry.segments),
        });
    }
    raw.axes.sort_by_key(|a| a.key_span.start);
    Ok(raw)
}

enum Kind {
    Cpus,
    Placement(Vec<Placement>),
    Path(Vec<(String, Range<usize>)>),
}

struct AxisSpec<'i> {
    name: String,
    key_span: Range<usize>,
    kind: Kind,
    values: Vec<Spanned<DeValue<'i>>>,
    shown: Vec<AxisValue>,
}

/// A variant a case runs: its name, and its patches (`None` for the base).
struct Selected {
    name: String,
    spec: Option<usize>,
}

/// The value of `value` as a case id shows it.
fn shown(source: &SourceFile, value: &Spanned<DeValue<'_>>) -> AxisValue {
    match value.get_ref() {
        DeValue::Integer(_) => match integer_of(value.get_ref()) {
            Some(n) => AxisValue::Integer(n),
            None => AxisValue::Other(written(source, value.span())),
        },
        DeValue::Float(f) => match f.as_str().parse::<f64>() {
            Ok(x) if x.is_finite() => AxisValue::Float(x),
            _ => AxisValue::Other(written(source, value.span())),
        },
        DeValue::Boolean(b) => AxisValue::Boolean(*b),
        DeValue::String(s) => AxisValue::String(s.to_string()),
        DeValue::Datetime(_) | DeValue::Array(_) | DeValue::Table(_) => {
            AxisValue::Other(written(source, value.span()))
        }
    }
}

/// A readable label for a table value of an axis (an inline machine): its
/// `name`, else its `preset` followed by each key it sets as `+key:value`
/// (`icelake-sp-2s+clock_mhz:2300`); a nested table shows its key alone.
/// `None` for other values, or a table with neither key. Only characters a
/// case id shows bare are used, so the label needs no quotes.
fn table_label(value: &DeValue<'_>) -> Option<String> {
    let DeValue::Table(table) = value else {
        return None;
    };
    let text = |v: &DeValue<'_>| match v {
        DeValue::String(s) => Some(s.to_string()),
        DeValue::Integer(i) => Some(i.as_str().to_string()),
        DeValue::Float(f) => Some(f.as_str().to_string()),
        DeValue::Boolean(b) => Some(b.to_string()),
        _ => None,
    };
    let bare = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.:+/".contains(c))
    };
    let get = |key: &str| {
        table
            .iter()
            .find(|(k, _)| k.get_ref() == key)
            .and_then(|(_, v)| text(v.get_ref()))
    };
    let label = if let Some(name) = get("name") {
        name
    } else {
        let mut label = get("preset")?;
        for (k, v) in table.iter() {
            let key = k.get_ref();
            if key == "preset" {
                continue;
            }
            match text(v.get_ref()) {
                Some(value) => label.push_str(&format!("+{key}:{value}")),
                None => label.push_str(&format!("+{key}")),
            }
        }
        label
    };
    bare(&label).then_some(label)
}

/// The text at `span`, with runs of white space made one space.
fn written(source: &SourceFile, span: Range<usize>) -> String {
    source
        .text
        .get(span)
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Expands the `[sweep]` of the scenario in `source`, whose base and
/// variants are loaded, into its cases; `None` when the scenario has no
/// `[sweep]`.
pub(super) fn expand(
    source: &SourceFile,
    limits: &Limits,
    base: &Variant,
    variants: &[Variant],
    machine_of: MachineOf,
    imports: &[document::import::Import],
) -> Result<Option<(Sweep, Vec<Case>)>, InputError> {
    let loading = &Loading {
        source,
        limits,
        base,
        variants,
        machine_of,
    };
    let document::Prepared {
        root_span,
        root,
        variants: variants_value,
        sweep,
    } = document::prepare(source, imports)?;
    let Some(sweep_value) = sweep else {
        return Ok(None);
    };
    let specs = match variants_value {
        Some(v) => patch::parse_variants(source, v)?,
        None => Vec::new(),
    };
    let raw = read(source, sweep_value, loading.limits.runs)?;
    let pool_text = range_pool_text(&raw.axes);
    let mut axes = axis_specs(source, raw.axes, &pool_text);

    check_axes(source, &root, &specs, &mut axes)?;
    let selected = select_variants(loading, &specs, raw.variants)?;
    let has_cpus = axes.iter().any(|a| matches!(a.kind, Kind::Cpus));
    let group = thread_group(loading, &raw.group, &axes, has_cpus, raw.placement.as_ref())?;
    let fixed_placement = match &raw.placement {
        Some(p) => Placement::parse(p.get_ref()).map_err(|why| {
            placement_error(source, p.span(), "sweep.placement", p.get_ref(), &why)
        })?,
        None => Placement::Compact,
    };
    if let Some(group) = &group {
        check_group_cpus_not_swept(source, group, &axes)?;
    }

    let mut total: usize = 1;
    for a in &axes {
        total = total.saturating_mul(a.values.len());
    }
    // Counted, and the memory of their documents estimated, before any is made.
    document::check_document_budget(
        source,
        imports,
        axes.first().map_or(0..0, |a| a.key_span.clone()),
        "sweep",
        (total as u64).saturating_mul(selected.len() as u64),
        &format!(
            "the sweep has {total} cases of {} variant(s)",
            selected.len()
        ),
        loading.limits,
    )?;

    let template = CaseTemplate {
        root: &root,
        root_span: &root_span,
        stem: default_name(&source.path),
        specs: &specs,
        selected: &selected,
    };
    let mut cases = Vec::with_capacity(total);
    let mut picks = vec![0usize; axes.len()];
    for index in 0..total {
        let mut rest = index;
        for (a, axis) in axes.iter().enumerate().rev() {
            picks[a] = rest % axis.values.len();
            rest /= axis.values.len();
        }
        let case = CaseSpec {
            axes: &axes,
            picks: &picks,
            group: group.as_deref(),
            fixed_placement: &fixed_placement,
        };
        cases.push(make_case(loading, &template, &case, index)?);
    }

    let placement = raw.placement.map(Spanned::into_inner);
    let sweep = sweep_of(&axes, selected, group, placement);
    Ok(Some((sweep, cases)))
}

/// The sweep as the report describes it: its axes (with the thread group
/// a CPU or placement axis places), the variants run, and the placement
/// of a `cpus` axis without a placement axis (`compact` by default).
fn sweep_of(
    axes: &[AxisSpec<'_>],
    selected: Vec<Selected>,
    group: Option<String>,
    placement: Option<String>,
) -> Sweep {
    let has_cpus = axes.iter().any(|a| matches!(a.kind, Kind::Cpus));
    Sweep {
        axes: axes
            .iter()
            .map(|a| Axis {
                name: a.name.clone(),
                values: a.shown.clone(),
                thread_group: match a.kind {
                    Kind::Cpus | Kind::Placement(_) => group.clone(),
                    Kind::Path(_) => None,
                },
            })
            .collect(),
        variants: selected.into_iter().map(|s| s.name).collect(),
        placement: if has_cpus && !axes.iter().any(|a| matches!(a.kind, Kind::Placement(_))) {
            Some(placement.unwrap_or_else(|| "compact".to_string()))
        } else {
            None
        },
    }
}

/// The integers of the axes' ranges as the text of one TOML array, which
/// [`axis_specs`] parses: integer ranges become TOML values parsed from
/// generated text, so that they patch the document like the values
/// written in the file.
fn range_pool_text(raw_axes: &[RawAxis<'_>]) -> String {
    let numbers: Vec<String> = raw_axes
        .iter()
        .filter_map(|a| match &a.values {
            RawValues::Range { values, .. } => Some(values.iter().map(|v| v.to_string())),
            RawValues::List(_) => None,
        })
        .flatten()
        .collect();
    format!("[{}]", numbers.join(","))
}

/// The axes as read, with their values as TOML values (a range's from
/// `pool_text`, its [`range_pool_text`]) and as a case id shows them.
fn axis_specs<'i>(
    source: &SourceFile,
    raw_axes: Vec<RawAxis<'i>>,
    pool_text: &'i str,
) -> Vec<AxisSpec<'i>> {
    let pool = match DeValue::parse(pool_text).map(Spanned::into_inner) {
        Ok(DeValue::Array(a)) => a.to_vec(),
        _ => Vec::new(),
    };
    let mut pool = pool.into_iter();
    let mut axes: Vec<AxisSpec<'_>> = Vec::new();
    for a in raw_axes {
        let (values, shown_values): (Vec<Spanned<DeValue<'_>>>, Vec<AxisValue>) = match a.values {
            RawValues::List(items) => {
                let mut shown_values: Vec<AxisValue> =
                    items.iter().map(|v| shown(source, v)).collect();
                // Tables get a readable label (a machine's name, or its
                // preset and what it changes); where two would read the
                // same, both keep the table as written.
                for (k, item) in items.iter().enumerate() {
                    let Some(label) = table_label(item.get_ref()) else {
                        continue;
                    };
                    let clash = items.iter().enumerate().any(|(j, other)| {
                        j != k && table_label(other.get_ref()).as_deref() == Some(label.as_str())
                    }) || shown_values.iter().any(|v| v.to_string() == label);
                    if !clash {
                        shown_values[k] = AxisValue::Other(label);
                    }
                }
                (items, shown_values)
            }
            RawValues::Range { values, span } => {
                let items = values
                    .iter()
                    .map(|_| {
                        let v = pool.next().map(Spanned::into_inner);
                        Spanned::new(span.clone(), v.unwrap_or(DeValue::Boolean(false)))
                    })
                    .collect();
                (items, values.into_iter().map(AxisValue::Integer).collect())
            }
        };
        let kind = match a.kind {
            RawKind::Cpus => Kind::Cpus,
            RawKind::Placement => Kind::Placement(Vec::new()),
            RawKind::Path(segments) => Kind::Path(segments),
        };
        axes.push(AxisSpec {
            name: a.name,
            key_span: a.key_span,
            kind,
            values,
            shown: shown_values,
        });
    }
    axes
}

/// Refuses an axis over `threads.GROUP.cpus` when a `cpus` axis already
/// sets that group's CPUs.
fn check_group_cpus_not_swept(
    source: &SourceFile,
    group: &str,
    axes: &[AxisSpec<'_>],
) -> Result<(), InputError> {
    if let Some(a) = axes.iter().find(|a| match &a.kind {
        Kind::Path(s) => s.len() == 3 && s[0].0 == "threads" && s[1].0 == group && s[2].0 == "cpus",
        _ => false,
    }) {
        return Err(at(
            source,
            a.key_span.clone(),
            &format!("sweep.{}", a.name),
            format!(
                "the sweep sets the CPUs of thread group `{group}` twice: with `cpus` and with `{}`",
                a.name
            ),
        ));
    }
    Ok(())
}

/// What every case of a sweep starts from: the document as written, the
/// default name, the variants' patches and the variants selected.
struct CaseTemplate<'a, 'i> {
    root: &'a DeTable<'i>,
    root_span: &'a Range<usize>,
    stem: String,
    specs: &'a [VariantSpec<'i>],
    selected: &'a [Selected],
}

/// Case `index`: its id, seed, axis values and each selected variant's
/// document.
fn make_case(
    loading: &Loading<'_>,
    template: &CaseTemplate<'_, '_>,
    case: &CaseSpec<'_, '_>,
    index: usize,
) -> Result<Case, InputError> {
    let values: Vec<AxisValue> = case
        .axes
        .iter()
        .zip(case.picks)
        .map(|(a, &p)| a.shown[p].clone())
        .collect();
    let id = case
        .axes
        .iter()
        .zip(&values)
        .map(|(a, v)| format!("{}={v}", a.name))
        .collect::<Vec<_>>()
        .join(",");
    let mut docs = Vec::with_capacity(template.selected.len());
    for sel in template.selected {
        let in_case = |mut e: InputError| {
            e.message = format!(
                "in sweep case `{id}`, variant `{}`: {}",
                sel.name, e.message
            );
            e
        };
        let mut doc = case_doc(
            loading,
            template.root,
            template.root_span,
            &template.stem,
            template.specs,
            sel,
            case,
        )
        .map_err(in_case)?;
        doc.seed = case_seed(doc.seed, &id);
        let description = sel
            .spec
            .and_then(|i| loading.variants.get(i))
            .and_then(|v| v.description.clone());
        let baseline = sel
            .spec
            .and_then(|i| loading.variants.get(i))
            .and_then(|v| v.baseline.clone());
        docs.push(Variant {
            name: sel.name.clone(),
            description,
            baseline,
            doc,
        });
    }
    let seed = docs
        .first()
        .map_or_else(|| case_seed(loading.base.doc.seed, &id), |v| v.doc.seed);
    Ok(Case {
        index,
        id,
        seed,
        values,
        variants: docs,
    })
}

/// What a case picks from each axis.
struct CaseSpec<'a, 'i> {
    axes: &'a [AxisSpec<'i>],
    picks: &'a [usize],
    group: Option<&'a str>,
    fixed_placement: &'a Placement,
}

/// The root of a patched document, which is a table.
fn root_table<'t, 'i>(
    source: &SourceFile,
    tree: &'t DeValue<'i>,
) -> Result<&'t DeTable<'i>, InputError> {
    match tree {
        DeValue::Table(t) => Ok(t),
        _ => Err(InputError::whole_file(
            &source.path,
            "internal error: root is not a table",
        )),
    }
}

/// The first `count` CPUs in `placement`'s order for thread group
/// `group`, leaving out those of the document's other groups, sorted; too
/// many for the machine is an error at `count_span`.
fn swept_cpus(
    loading: &Loading<'_>,
    doc: &ScenarioDoc,
    group: &str,
    placement: &Placement,
    count: i64,
    count_span: Range<usize>,
) -> Result<Vec<u32>, InputError> {
    let source = loading.source;
    let topology = (loading.machine_of)(source, doc)?;
    let taken: Vec<(u32, String)> = doc
        .threads
        .iter()
        .filter(|g| g.name() != group)
        .flat_map(|g| {
            let cpus: Vec<u32> = match g.cpus.get_ref() {
                CpuSet::All => (0..topology.cpu_count()).collect(),
                CpuSet::List(l) => l.clone(),
            };
            cpus.into_iter().map(|c| (c, g.name().to_string()))
        })
        .collect();
    let order = placement.order(&topology, &taken).map_err(|why| {
        at(source, count_span.clone(), "sweep.placement", why).with_valid(PLACEMENT_HELP)
    })?;
    let count = count as usize;
    if count > order.len() {
        let why = match placement {
            Placement::Order(_) => format!("the placement lists only {} CPUs", order.len()),
            _ if taken.is_empty() => format!(
                "{} has only {} CPUs",
                topology.spec.name,
                topology.cpu_count()
            ),
            _ => format!(
                "{} has {} CPUs, of which {} are free of the other thread groups",
                topology.spec.name,
                topology.cpu_count(),
                order.len()
            ),
        };
        return Err(at(
            source,
            count_span,
            "sweep.cpus",
            format!("{count} CPUs for thread group `{group}` do not fit: {why}"),
        )
        .with_valid(format!("a count from 1 to {}", order.len())));
    }
    let mut cpus = order[..count].to_vec();
    cpus.sort_unstable();
    Ok(cpus)
}

/// The document of one variant in one case.
fn case_doc<'i>(
    loading: &Loading<'_>,
    root: &DeTable<'i>,
    root_span: &Range<usize>,
    stem: &str,
    specs: &[VariantSpec<'i>],
    sel: &Selected,
    case: &CaseSpec<'_, 'i>,
) -> Result<ScenarioDoc, InputError> {
    let source = loading.source;
    let mut tree = DeValue::Table(root.clone());
    if let Some(i) = sel.spec {
        for entry in &specs[i].sets {
            patch::apply(source, &mut tree, entry)?;
        }
    }
    let mut count: Option<(i64, Range<usize>, Range<usize>)> = None;
    let mut placement = case.fixed_placement;
    for (axis, &pick) in case.axes.iter().zip(case.picks) {
        let value = &axis.values[pick];
        match &axis.kind {
            Kind::Path(segments) => patch::apply(
                source,
                &mut tree,
                &SetEntry {
                    segments: segments.clone(),
                    order: 0,
                    value: value.clone(),
                },
            )?,
            Kind::Placement(placements) => placement = &placements[pick],
            Kind::Cpus => match integer_of(value.get_ref()) {
                Some(n) => count = Some((n, value.span(), axis.key_span.clone())),
                None => patch::apply(
                    source,
                    &mut tree,
                    &cpus_entry(case.group.unwrap_or(""), &axis.key_span, value.clone()),
                )?,
            },
        }
    }
    let doc = doc_from_tree(
        source,
        root_table(source, &tree)?,
        root_span,
        stem,
        loading.limits,
    )?;
    let Some((count, count_span, key_span)) = count else {
        return Ok(doc);
    };
    let group = case.group.unwrap_or("");
    let cpus = swept_cpus(loading, &doc, group, placement, count, count_span.clone())?;
    let value = Spanned::new(
        count_span,
        DeValue::String(std::borrow::Cow::Owned(format_cpulist(&cpus))),
    );
    patch::apply(source, &mut tree, &cpus_entry(group, &key_span, value))?;
    doc_from_tree(
        source,
        root_table(source, &tree)?,
        root_span,
        stem,
        loading.limits,
    )
}

/// The patch `threads.GROUP.cpus = value`.
fn cpus_entry<'i>(
    group: &str,
    key_span: &Range<usize>,
    value: Spanned<DeValue<'i>>,
) -> SetEntry<'i> {
    SetEntry {
        segments: vec![
            ("threads".to_string(), key_span.clone()),
            (group.to_string(), key_span.clone()),
            ("cpus".to_string(), key_span.clone()),
        ],
        order: 0,
        value,
    }
}

/// Checks each axis's values and paths against the scenario.
fn check_axes(
    source: &SourceFile,
    root: &DeTable<'_>,
    specs: &[VariantSpec<'_>],
    axes: &mut [AxisSpec<'_>],
) -> Result<(), InputError> {
    for i in 0..axes.len() {
        let axis = &axes[i];
        let full = format!("sweep.{}", axis.name);
        if let Some(first) = axes[..i].iter().find(|a| a.name == axis.name) {
            let (line, _) = source.line_col(first.key_span.start);
            return Err(at(
                source,
                axis.key_span.clone(),
                &full,
                format!(
                    "the sweep sets `{}` twice (first on line {line})",
                    axis.name
                ),
            ));
        }
        for (j, shown_value) in axis.shown.iter().enumerate() {
            if axis.shown[..j].contains(shown_value) {
                return Err(at(
                    source,
                    axis.values[j].span(),
                    &full,
                    format!("`{full}` lists {shown_value} more than once"),
                ));
            }
        }
        match &axis.kind {
            Kind::Cpus => {
                for v in &axis.values {
                    match v.get_ref() {
                        DeValue::Integer(_) => match integer_of(v.get_ref()) {
                            Some(n) if (1..=MAX_CPU as i64 + 1).contains(&n) => {}
                            _ => {
                                return Err(at(
                                    source,
                                    v.span(),
                                    &full,
                                    format!(
                                        "invalid CPU count in `{full}`: {}",
                                        written(source, v.span())
                                    ),
                                )
                                .with_valid("a count of at least 1, or a cpulist string"))
                            }
                        },
                        DeValue::String(s) => {
                            if let Err(why) = CpuSet::parse(s) {
                                return Err(at(
                                    source,
                                    v.span(),
                                    &full,
                                    format!("invalid cpulist {s:?} in `{full}`: {why}"),
                                )
                                .with_valid(CPULIST_HELP));
                            }
                        }
                        other => {
                            return Err(at(
                                source,
                                v.span(),
                                &full,
                                format!(
                                    "expected a CPU count or a cpulist in `{full}`, found {}",
                                    type_phrase(other)
                                ),
                            )
                            .with_valid("a count such as 16, or a cpulist such as \"0-7,40-47\""))
                        }
                    }
                }
            }
            Kind::Placement(_) => {
                let mut parsed = Vec::new();
                for v in &axis.values {
                    let text = string_of(source, &full, v)?;
                    parsed.push(Placement::parse(text.get_ref()).map_err(|why| {
                        placement_error(source, v.span(), &full, text.get_ref(), &why)
                    })?);
                }
                axes[i].kind = Kind::Placement(parsed);
            }
            Kind::Path(segments) => check_path(source, root, specs, segments, &full)?,
        }
    }
    Ok(())
}

/// A path into a named map must name an entry the scenario has (or a
/// variant sets).
fn check_path(
    source: &SourceFile,
    root: &DeTable<'_>,
    specs: &[VariantSpec<'_>],
    segments: &[(String, Range<usize>)],
    full: &str,
) -> Result<(), InputError> {
    let [(map, _), (name, span)] = segments else {
        return Ok(());
    };
    if !NAMED_MAPS.contains(&map.as_str()) {
        return Ok(());
    }
    let existing: Vec<String> = match root.get(map.as_str()).map(|v| v.get_ref()) {
        Some(DeValue::Table(t)) => t.keys().map(|k| k.get_ref().to_string()).collect(),
        _ => Vec::new(),
    };
    let set_by_variant = specs.iter().any(|s| {
        s.sets
            .iter()
            .any(|e| e.segments.len() == 2 && e.segments[0].0 == *map && e.segments[1].0 == *name)
    });
    if existing.iter().any(|k| k == name) || set_by_variant {
        return Ok(());
    }
    let what = match map.as_str() {
        "params" => "parameter",
        "structs" => "struct",
        "instances" => "instance",
        "procedures" => "procedure",
        _ => "script",
    };
    let names: Vec<&str> = existing.iter().map(String::as_str).collect();
    let error = at(
        source,
        span.clone(),
        full,
        format!(
            "the sweep sets `{}`, but the scenario has no {what} `{name}` (an axis changes an existing {what}; it cannot add one)",
            join_path(&[map.as_str(), name.as_str()])
        ),
    );
    // With nothing to choose from, say how to make the axis valid.
    Err(if names.is_empty() {
        error.with_valid(format!(
            "none: the scenario declares no {what}s; declare `{name}` under `[{map}]` first, then \
             the axis can vary it"
        ))
    } else {
        error.with_choices(name, &names)
    })
}

fn select_variants(
    loading: &Loading<'_>,
    specs: &[VariantSpec<'_>],
    wanted: Option<Vec<Spanned<String>>>,
) -> Result<Vec<Selected>, InputError> {
    let mut all = vec![Selected {
        name: loading.base.name.clone(),
        spec: None,
    }];
    all.extend(specs.iter().enumerate().map(|(i, s)| Selected {
        name: s.name.get_ref().clone(),
        spec: Some(i),
    }));
    let Some(wanted) = wanted else {
        return Ok(all);
    };
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    let mut out: Vec<Selected> = Vec::new();
    for w in &wanted {
        let Some(pos) = names.iter().position(|n| n == w.get_ref()) else {
            return Err(at(
                loading.source,
                w.span(),
                "sweep.variants",
                format!("the scenario has no variant `{}`", w.get_ref()),
            )
            .with_choices(w.get_ref(), &names));
        };
        if out.iter().any(|s| s.name == *w.get_ref()) {
            return Err(at(
                loading.source,
                w.span(),
                "sweep.variants",
                format!("`sweep.variants` lists `{}` more than once", w.get_ref()),
            ));
        }
        out.push(Selected {
            name: all[pos].name.clone(),
            spec: all[pos].spec,
        });
    }
    // A variant is compared with its `baseline` in every case, so the
    // sweep runs that one too.
    for (w, s) in wanted.iter().zip(&out) {
        let baseline = s
            .spec
            .and_then(|i| loading.variants.get(i))
            .and_then(|v| v.baseline.as_deref())
            .filter(|b| *b != s.name);
        if let Some(b) = baseline {
            if !out.iter().any(|o| o.name == b) {
                return Err(at(
                    loading.source,
                    w.span(),
                    "sweep.variants",
                    format!(
                        "`sweep.variants` runs `{}`, whose `baseline` is `{b}`, but not `{b}`",
                        s.name
                    ),
                )
                .with_valid(format!(
                    "`{b}` in `sweep.variants` as well, or `{}` left out",
                    s.name
                )));
            }
        }
    }
    Ok(out)
}

/// The thread group of the `cpus` axis: `group`, or the only one.
fn thread_group(
    loading: &Loading<'_>,
    group: &Option<Spanned<String>>,
    axes: &[AxisSpec<'_>],
    has_cpus: bool,
    placement: Option<&Spanned<String>>,
) -> Result<Option<String>, InputError> {
    let source = loading.source;
    let names: Vec<&str> = loading.base.doc.threads.iter().map(|g| g.name()).collect();
    if !has_cpus {
        let stray = group
            .as_ref()
            .map(|g| (g.span(), "sweep.group"))
            .or_else(|| placement.map(|p| (p.span(), "sweep.placement")))
            .or_else(|| {
                axes.iter()
                    .find(|a| matches!(a.kind, Kind::Placement(_)))
                    .map(|a| (a.key_span.clone(), "sweep.placement"))
            });
        if let Some((span, key)) = stray {
            return Err(at(
                source,
                span,
                key,
                format!("`{key}` says how the `cpus` axis chooses CPUs, but the sweep has no `cpus` axis"),
            )
            .with_valid("add `cpus = [...]` to `[sweep]`, or remove this key"));
        }
        return Ok(None);
    }
    match group {
        Some(g) => {
            if names.contains(&g.get_ref().as_str()) {
                Ok(Some(g.get_ref().clone()))
            } else {
                Err(at(
                    source,
                    g.span(),
                    "sweep.group",
                    format!("the scenario has no thread group `{}`", g.get_ref()),
                )
                .with_choices(g.get_ref(), &names))
            }
        }
        None if names.len() == 1 => Ok(Some(names[0].to_string())),
        None => {
            let span = axes
                .iter()
                .find(|a| matches!(a.kind, Kind::Cpus))
                .map_or(0..0, |a| a.key_span.clone());
            Err(at(
                source,
                span,
                "sweep.cpus",
                format!(
                    "the scenario has {} thread groups: say whose CPUs `cpus` counts with `group = \"NAME\"` in `[sweep]`",
                    names.len()
                ),
            )
            .with_choices("", &names))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_depend_on_the_id_and_the_seed_only() {
        assert_eq!(case_seed(7, ""), 7);
        let a = case_seed(1, "cpus=16");
        assert_eq!(a, case_seed(1, "cpus=16"));
        assert_ne!(a, case_seed(2, "cpus=16"));
        assert_ne!(a, case_seed(1, "cpus=8"));
        assert!(a < 1 << 53);
        // FNV-1a test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn ids_quote_what_would_be_ambiguous() {
        assert_eq!(AxisValue::Integer(16).to_string(), "16");
        assert_eq!(
            AxisValue::String("epyc-milan-2s:nps4".into()).to_string(),
            "epyc-milan-2s:nps4"
        );
        assert_eq!(
            AxisValue::String("0-3,40-43".into()).to_string(),
            "\"0-3,40-43\""
        );
        assert_eq!(AxisValue::Float(0.5).to_string(), "0.5");
        assert_eq!(AxisValue::Boolean(true).to_string(), "true");
    }

    #[test]
    fn placements() {
        assert_eq!(Placement::parse("compact"), Ok(Placement::Compact));
        assert_eq!(Placement::parse("spread"), Ok(Placement::Spread));
        assert_eq!(
            Placement::parse("0,40,1-2"),
            Ok(Placement::Order(vec![0, 40, 1, 2]))
        );
        assert!(Placement::parse("0,1,0").is_err());
        assert!(Placement::parse("all").is_err());
        assert!(Placement::parse("compcat").is_err());
    }
}
