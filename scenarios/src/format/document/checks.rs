//! The checks of one document that serde cannot express: versions, names,
//! references, ranges, overlaps, limits ([`check_document`]).

use std::ops::Range;

use toml::de::DeTable;
use toml::Spanned;

use super::tree::{join_path, lookup};
use super::{check_name, NameRule};
use crate::format::error::{InputError, SourceFile};
use crate::format::schema::{
    FieldDef, InlineMachine, InstanceKind, MachineRef, RunSection, ScenarioDoc, StructDef,
    ThreadGroup, SCHEMA_VERSION,
};
use sim_core::limits::{Limits, INSTANCE_ELEMENTS, STRUCT_BYTES};

type Result<T = ()> = std::result::Result<T, InputError>;

struct Checker<'a, 'i> {
    source: &'a SourceFile,
    tree: &'a DeTable<'i>,
    limits: &'a Limits,
}

const POWER_OF_TWO: &str = "a power of two such as 1, 2, 4, 8, 16, 32 or 64";
/// What a field is made of, for the errors about its shape.
const SHAPES: &str =
    "exactly one of `type` (a C type name), `size` (bytes) and `fields` (members written out)";

pub(crate) fn check_document(
    source: &SourceFile,
    tree: &DeTable<'_>,
    doc: &ScenarioDoc,
    limits: &Limits,
) -> Result {
    let c = Checker {
        source,
        tree,
        limits,
    };
    c.schema(doc)?;
    if !doc.base_name.span().is_empty() {
        check_name(
            source,
            &doc.base_name,
            "base_name",
            "base name",
            NameRule::Name,
        )?;
    }
    if let MachineRef::Inline(m) = &doc.machine {
        c.machine(m)?;
    }
    c.run(&doc.run)?;
    c.params(doc)?;
    // Script texts are measured before anything parses them.
    c.script_sizes(doc)?;
    for (name, s) in &doc.structs {
        c.struct_def(name, s)?;
    }
    c.instances(doc)?;
    c.procedures(doc)?;
    for name in doc.scripts.keys() {
        c.map_key_name(&["scripts", name], "script name", NameRule::Name)?;
    }
    c.threads(doc)
}

impl Checker<'_, '_> {
    /// At most the limit of `params`, each named as an identifier.
    fn params(&self, doc: &ScenarioDoc) -> Result {
        if doc.params.len() as u64 > self.limits.params {
            return Err(self
                .err(
                    self.key_span(&["params"]),
                    "params",
                    format!(
                        "`params` has {} entries, more than the limit of {}",
                        doc.params.len(),
                        self.limits.params
                    ),
                )
                .with_valid(format!(
                    "at most {} parameters; raise the limit with `--set-limit params={}`",
                    self.limits.params,
                    doc.params.len()
                )));
        }
        for name in doc.params.keys() {
            self.map_key_name(&["params", name], "parameter name", NameRule::Identifier)?;
        }
        Ok(())
    }

    /// Each script's and procedure body's text within `script_bytes`.
    fn script_sizes(&self, doc: &ScenarioDoc) -> Result {
        let texts = doc
            .scripts
            .iter()
            .map(|(name, text)| (join_path(&["scripts", name]), text))
            .chain(
                doc.procedures
                    .iter()
                    .map(|(name, p)| (join_path(&["procedures", name, "body"]), &p.body)),
            );
        for (key, text) in texts {
            self.within_limit(
                text.span(),
                &key,
                text.get_ref().len() as u64,
                "script_bytes",
                self.limits.script_bytes,
            )?;
        }
        Ok(())
    }

    /// Each procedure named as an identifier, its parameters too, none
    /// twice.
    fn procedures(&self, doc: &ScenarioDoc) -> Result {
        for (name, p) in &doc.procedures {
            self.map_key_name(
                &["procedures", name],
                "procedure name",
                NameRule::Identifier,
            )?;
            if let Some(why) = sim_core::script::compile::reserved_procedure_name(name) {
                return Err(self
                    .err(
                        self.key_span(&["procedures", name]),
                        &join_path(&["procedures", name]),
                        format!("procedure name `{name}` is {why}"),
                    )
                    .with_valid(format!(
                        "a name other than the keywords ({}) and the builtins ({})",
                        sim_core::script::parse::KEYWORDS.join(", "),
                        sim_core::script::compile::builtin_call_names().join(", ")
                    )));
            }
            for (i, param) in p.params.iter().enumerate() {
                let key = join_path(&["procedures", name, "params", param.get_ref()]);
                check_name(
                    self.source,
                    param,
                    &key,
                    "procedure parameter",
                    NameRule::Identifier,
                )?;
                if let Some(first) = p.params[..i]
                    .iter()
                    .find(|q| q.get_ref() == param.get_ref())
                {
                    return Err(self.err(
                        param.span(),
                        &key,
                        format!(
                            "duplicate parameter `{}` in `{}` (first listed {})",
                            param.get_ref(),
                            join_path(&["procedures", name, "params"]),
                            self.where_(first.span())
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Checker<'_, '_> {
    fn err(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> InputError {
        InputError::at(self.source, span, key, message)
    }

    /// "on line N" for a span.
    fn where_(&self, span: Range<usize>) -> String {
        let (line, _) = self.source.line_col(span.start);
        format!("on line {line}")
    }

    /// Span of the key at `path` (the element span for array elements), or of the root.
    fn key_span(&self, path: &[&str]) -> Range<usize> {
        lookup(self.tree, path).map_or(0..0, |(k, _)| k)
    }

    /// Span of the value at `path`, or of its key's parents, or of the root.
    fn value_span(&self, path: &[&str]) -> Range<usize> {
        lookup(self.tree, path).map_or(0..0, |(_, v)| v.span())
    }

    fn map_key_name(&self, path: &[&str], what: &str, rule: NameRule) -> Result {
        let name = Spanned::new(
            self.key_span(path),
            path.last().copied().unwrap_or("").to_string(),
        );
        let parent = join_path(&path[..path.len().saturating_sub(1)]);
        check_name(self.source, &name, &join_path(path), what, rule).map_err(|mut e| {
            e.message = if name.get_ref().is_empty() {
                format!("empty {what} in `{parent}`")
            } else {
                format!("invalid {what} `{}` in `{parent}`", name.get_ref())
            };
            e
        })
    }

    fn schema(&self, doc: &ScenarioDoc) -> Result {
        let version = *doc.schema.get_ref();
        if version != SCHEMA_VERSION {
            return Err(self
                .err(
                    doc.schema.span(),
                    "schema",
                    format!("unsupported `schema` version {version}"),
                )
                .with_valid(SCHEMA_VERSION.to_string()));
        }
        Ok(())
    }

    fn at_least_one<T: Copy + Into<u64>>(&self, value: &Option<Spanned<T>>, key: &str) -> Result {
        if let Some(v) = value {
            if (*v.get_ref()).into() == 0 {
                return Err(self
                    .err(
                        v.span(),
                        key,
                        format!("`{key}` must be at least 1, found 0"),
                    )
                    .with_valid("an integer of at least 1"));
            }
        }
        Ok(())
    }

    /// `value` (of `key`) is at most the limit called `limit_name`.
    fn within_limit(
        &self,
        span: Range<usize>,
        key: &str,
        value: u64,
        limit_name: &str,
        limit: u64,
    ) -> Result {
        if value > limit {
            let info = sim_core::limits::LIMITS
                .iter()
                .find(|l| l.name == limit_name);
            let unit = info.map_or("", |l| l.unit);
            let ceiling = info.map_or(u64::MAX, |l| l.ceiling);
            let what = if unit == "bytes" {
                format!("`{key}` is {value} bytes long")
            } else {
                format!("`{key}` is {value}")
            };
            let raise = if value <= ceiling {
                format!("raise the limit with `--set-limit {limit_name}={value}`")
            } else {
                format!("the limit can be raised to {ceiling} at most")
            };
            return Err(self
                .err(span, key, format!("{what}, more than the limit of {limit}"))
                .with_valid(format!("at most {limit} {unit}; {raise}")));
        }
        Ok(())
    }

    fn power_of_two<T: Copy + Into<u64>>(&self, value: &Option<Spanned<T>>, key: &str) -> Result {
        if let Some(v) = value {
            let n: u64 = (*v.get_ref()).into();
            if !n.is_power_of_two() {
                return Err(self
                    .err(
                        v.span(),
                        key,
                        format!("`{key}` must be a power of two, found {n}"),
                    )
                    .with_valid(POWER_OF_TWO));
            }
        }
        Ok(())
    }

    /// `value` (of `key`) is at most the fixed bound `max`, checked on the
    /// value as written, before anything narrows it; `bound` names the bound
    /// as `bounce limits` lists it.
    fn at_most_fixed(
        &self,
        value: &Option<Spanned<u64>>,
        key: &str,
        max: u64,
        unit: &str,
        bound: &str,
    ) -> Result {
        if let Some(v) = value {
            let n = *v.get_ref();
            if n > max {
                return Err(self
                    .err(
                        v.span(),
                        key,
                        format!(
                            "`{key}` is {n}, more than {max} {unit}, the fixed bound `{bound}`"
                        ),
                    )
                    .with_valid(format!(
                        "at most {max} (`bounce limits` lists the fixed bounds)"
                    )));
            }
        }
        Ok(())
    }

    /// A struct's or a field's byte quantities, before any narrowing: sizes,
    /// offsets and alignments are at most a struct's largest size.
    fn struct_bytes(&self, value: &Option<Spanned<u64>>, key: &str) -> Result {
        self.at_most_fixed(value, key, STRUCT_BYTES, "bytes", "struct size")
    }

    /// Every numeric key the machine table gives, within the range the
    /// machine's own check gives it (`sim_core::topology::scalar_key_range`,
    /// one table for every key), and the line a power of two: an error at
    /// the value, naming the range.
    fn machine(&self, m: &InlineMachine) -> Result {
        for (key, given) in machine_numbers(m) {
            let (Some((value, span)), Some(range)) =
                (given, sim_core::topology::scalar_key_range(key))
            else {
                continue;
            };
            if !range.contains(&value) {
                let key = format!("machine.{key}");
                return Err(self
                    .err(
                        span,
                        &key,
                        format!(
                            "{value} is out of range {}..={}",
                            range.start(),
                            range.end()
                        ),
                    )
                    .with_valid(format!(
                        "an integer from {} to {}",
                        range.start(),
                        range.end()
                    )));
            }
        }
        if let Some(line) = &m.line_size_bytes {
            let n = *line.get_ref();
            if !n.is_power_of_two() {
                return Err(self
                    .err(
                        line.span(),
                        "machine.line_size_bytes",
                        format!("`machine.line_size_bytes` must be a power of two, found {n}"),
                    )
                    .with_valid("a power of two from 16 to 4096 (64 on every x86 part)"));
            }
        }
        Ok(())
    }

    fn run(&self, run: &RunSection) -> Result {
        match (&run.iterations, &run.cycles) {
            (Some(i), Some(c)) => {
                let (span, key) = if c.span().start > i.span().start {
                    (self.key_span(&["run", "cycles"]), "run.cycles")
                } else {
                    (self.key_span(&["run", "iterations"]), "run.iterations")
                };
                return Err(self
                    .err(
                        span,
                        key,
                        "`run` sets both `iterations` and `cycles`; set exactly one of them",
                    )
                    .with_valid("iterations (per CPU) or cycles (simulated), not both"));
            }
            (None, None) => {
                return Err(self
                    .err(
                        self.value_span(&["run"]),
                        "run",
                        "`run` sets neither `iterations` nor `cycles`; set exactly one of them",
                    )
                    .with_valid("iterations (per CPU) or cycles (simulated)"));
            }
            _ => {}
        }
        self.at_least_one(&run.iterations, "run.iterations")?;
        self.at_least_one(&run.cycles, "run.cycles")?;
        self.at_least_one(&Some(run.max_cycles.clone()), "run.max_cycles")?;
        // Bounded so that warm-up plus measured iterations never overflow,
        // and so that a typo of many digits is caught before a run that
        // would never end.
        if let Some(i) = &run.iterations {
            self.within_limit(
                i.span(),
                "run.iterations",
                *i.get_ref(),
                "iterations",
                self.limits.iterations,
            )?;
        }
        self.within_limit(
            self.value_span(&["run", "warmup_iterations"]),
            "run.warmup_iterations",
            run.warmup_iterations,
            "warmup_iterations",
            self.limits.warmup_iterations,
        )?;
        // Bounded so that the run's end stays far below the top of the
        // 64-bit clock (where it saturates and could never pass the budget).
        let max_cycles_span = if run.max_cycles.span().is_empty() {
            self.value_span(&["run"])
        } else {
            run.max_cycles.span()
        };
        self.within_limit(
            max_cycles_span,
            "run.max_cycles",
            *run.max_cycles.get_ref(),
            "max_cycles",
            self.limits.max_cycles,
        )?;
        if let Some(c) = &run.cycles {
            let max = *run.max_cycles.get_ref();
            if *c.get_ref() > max {
                return Err(self
                    .err(
                        c.span(),
                        "run.cycles",
                        format!(
                            "`run.cycles` ({}) exceeds `run.max_cycles` ({max})",
                            c.get_ref()
                        ),
                    )
                    .with_valid(format!("at most {max}, or raise `run.max_cycles`")));
            }
        }
        let max = *run.max_cycles.get_ref();
        if run.start_spread_cycles > max {
            return Err(self
                .err(
                    self.value_span(&["run", "start_spread_cycles"]),
                    "run.start_spread_cycles",
                    format!(
                        "`run.start_spread_cycles` ({}) exceeds `run.max_cycles` ({max})",
                        run.start_spread_cycles
                    ),
                )
                .with_valid(format!("0 (every CPU starts at cycle 0) to {max}")));
        }
        Ok(())
    }

    fn struct_def(&self, name: &str, s: &StructDef) -> Result {
        self.map_key_name(&["structs", name], "struct name", NameRule::Identifier)?;
        let align_key = join_path(&["structs", name, "align"]);
        self.power_of_two(&s.align, &align_key)?;
        self.struct_bytes(&s.align, &align_key)?;
        let imported = s
            .pahole
            .as_ref()
            .map(|p| ("pahole", &p.file))
            .or_else(|| s.btf.as_ref().map(|b| ("btf", &b.file)));
        if let Some((source_key, file)) = imported {
            // The loader replaces every `pahole` and `btf` of the file by the
            // fields it reads; one still here came from a variant or a sweep.
            let key = join_path(&["structs", name, source_key]);
            if s.fields.is_empty() && !s.union {
                return Err(self
                    .err(
                        file.span(),
                        &key,
                        format!("`{key}` is read when the file loads, before any variant or sweep applies; it cannot be set by one"),
                    )
                    .with_valid(format!("the `{source_key}` import in the file itself, and patches of the fields it gives (`structs.NAME.fields.MEMBER.align`)")));
            }
            if !s.fields.is_empty() || s.union {
                let what = if s.union { "union" } else { "fields" };
                return Err(self
                    .err(
                        file.span(),
                        &key,
                        format!(
                            "`structs.{name}` has both `{source_key}` and `{what}`; the {} gives the layout",
                            if source_key == "btf" { "BTF" } else { "listing" }
                        ),
                    )
                    .with_valid(format!("either `{source_key} = {{ file = \"...\", struct = \"...\" }}` or `fields = [...]`")));
            }
            if file.get_ref().trim().is_empty() {
                return Err(self.err(
                    file.span(),
                    &format!("{key}.file"),
                    format!("empty file name for `{source_key}.file`"),
                ));
            }
            return Ok(());
        }
        self.fields(&["structs", name], &s.fields)
    }

    /// The fields of the struct (or written-out member) at `owner`
    /// (`["structs", NAME]`, then `"fields", MEMBER` for each level down).
    fn fields(&self, owner: &[&str], fields: &[FieldDef]) -> Result {
        let mut fields_path: Vec<&str> = owner.to_vec();
        fields_path.push("fields");
        let fields_key = join_path(&fields_path);
        if fields.is_empty() {
            return Err(self
                .err(
                    self.value_span(&fields_path),
                    &fields_key,
                    format!("`{fields_key}` is empty; a struct needs at least one field"),
                )
                .with_valid(
                    "an array of field tables such as { name = \"value\", type = \"u64\" }",
                ));
        }
        // Names seen so far, each with its first field: a lookup per field,
        // not a scan, so a struct of many fields is checked in n log n.
        let mut seen: std::collections::BTreeMap<&str, &FieldDef> = Default::default();
        for (i, f) in fields.iter().enumerate() {
            let fname = f.name.get_ref();
            let mut path = fields_path.clone();
            path.push(fname);
            let key = join_path(&path);
            check_name(
                self.source,
                &f.name,
                &format!("{key}.name"),
                "field name",
                NameRule::Identifier,
            )?;
            if let Some(first) = seen.insert(fname, f) {
                return Err(self.err(
                    f.name.span(),
                    &format!("{key}.name"),
                    format!(
                        "duplicate field `{fname}` in `{fields_key}` (first defined {})",
                        self.where_(first.name.span())
                    ),
                ));
            }
            if let Some(inner) = &f.fields {
                self.written_out_member(&key, &path, f, inner)?;
                continue;
            }
            self.leaf_field(&key, &fields_path, i, f)?;
        }
        Ok(())
    }

    /// A member written out (`fields = [...]`): no `type`, `size` or
    /// `bits` beside it, a usable count, alignment and offset, then its
    /// own fields.
    fn written_out_member(
        &self,
        key: &str,
        path: &[&str],
        f: &FieldDef,
        inner: &[FieldDef],
    ) -> Result {
        let clash =
            f.ty.as_ref()
                .map(|t| ("type", t.span()))
                .or_else(|| f.size.as_ref().map(|s| ("size", s.span())))
                .or_else(|| f.bits.as_ref().map(|b| ("bits", b.span())));
        if let Some((what, span)) = clash {
            return Err(self
                .err(
                    span,
                    &format!("{key}.{what}"),
                    format!("field `{key}` has both `fields` and `{what}`"),
                )
                .with_valid(SHAPES));
        }
        self.at_least_one(&f.count, &format!("{key}.count"))?;
        self.array_length(&f.count, &format!("{key}.count"))?;
        self.power_of_two(&f.align, &format!("{key}.align"))?;
        self.struct_bytes(&f.align, &format!("{key}.align"))?;
        self.struct_bytes(&f.offset, &format!("{key}.offset"))?;
        self.fields(path, inner)
    }

    /// A field with a `type` or a `size`: exactly one of them, a type
    /// name that is not empty, bits only on a typed field and inside 64,
    /// a usable size, count, alignment and offset. `i` is its index in
    /// the list at `fields_path`.
    fn leaf_field(&self, key: &str, fields_path: &[&str], i: usize, f: &FieldDef) -> Result {
        if let Some(u) = &f.union {
            return Err(self
                .err(
                    u.span(),
                    &format!("{key}.union"),
                    format!(
                        "`{key}.union` needs `fields`: only a member written out can be a union"
                    ),
                )
                .with_valid("`union = true` beside `fields = [...]`"));
        }
        match (&f.ty, &f.size) {
            (Some(_), Some(size)) => {
                return Err(self
                    .err(
                        size.span(),
                        &format!("{key}.size"),
                        format!("field `{key}` has both `type` and `size`"),
                    )
                    .with_valid(SHAPES));
            }
            (None, None) => {
                let span = element_span(self, fields_path, i);
                return Err(self
                    .err(
                        span,
                        key,
                        format!("field `{key}` has neither `type` nor `size`"),
                    )
                    .with_valid(SHAPES));
            }
            (Some(ty), None) if ty.get_ref().trim().is_empty() => {
                return Err(self
                    .err(
                        ty.span(),
                        &format!("{key}.type"),
                        format!("empty type name for `{key}.type`"),
                    )
                    .with_valid("a C type name such as u64, atomic_long_t or spinlock_t"));
            }
            _ => {}
        }
        match (&f.bits, &f.bit_offset, &f.ty) {
            (None, Some(o), _) => {
                return Err(self
                    .err(
                        o.span(),
                        &format!("{key}.bit_offset"),
                        format!(
                            "`{key}.bit_offset` needs `bits`: only a bitfield has a bit offset"
                        ),
                    )
                    .with_valid("`bits = N` (and `bit_offset`) beside `type`"));
            }
            (Some(b), _, None) => {
                return Err(self
                    .err(
                        b.span(),
                        &format!("{key}.bits"),
                        format!("bitfield `{key}` needs `type`, its storage unit"),
                    )
                    .with_valid(
                        "`type = \"unsigned int\"` (or another integer type) beside `bits`",
                    ));
            }
            (Some(b), o, Some(_)) => {
                self.at_least_one(&f.bits, &format!("{key}.bits"))?;
                let end = b
                    .get_ref()
                    .saturating_add(o.as_ref().map_or(0, |o| *o.get_ref()));
                if end > 64 || f.count() != 1 {
                    return Err(self
                    .err(
                        b.span(),
                        &format!("{key}.bits"),
                        format!("bitfield `{key}` ends at bit {end}, past any storage unit, or is an array"),
                    )
                    .with_valid("bit_offset + bits at most 64, and no `count`"));
                }
            }
            _ => {}
        }
        self.at_least_one(&f.size, &format!("{key}.size"))?;
        self.struct_bytes(&f.size, &format!("{key}.size"))?;
        self.at_least_one(&f.count, &format!("{key}.count"))?;
        self.array_length(&f.count, &format!("{key}.count"))?;
        self.power_of_two(&f.align, &format!("{key}.align"))?;
        self.struct_bytes(&f.align, &format!("{key}.align"))?;
        self.struct_bytes(&f.offset, &format!("{key}.offset"))?;
        Ok(())
    }

    /// An array's length (`count` of a field or an instance), before any
    /// narrowing.
    fn array_length(&self, value: &Option<Spanned<u64>>, key: &str) -> Result {
        self.at_most_fixed(
            value,
            key,
            INSTANCE_ELEMENTS as u64,
            "elements",
            "instance elements",
        )
    }

    fn instances(&self, doc: &ScenarioDoc) -> Result {
        let struct_names: Vec<&str> = doc.structs.keys().map(String::as_str).collect();
        for (name, inst) in &doc.instances {
            self.map_key_name(&["instances", name], "instance name", NameRule::Identifier)?;
            let key = |k: &str| join_path(&["instances", name, k]);
            let wanted = inst.struct_name.get_ref();
            if !doc.structs.contains_key(wanted) {
                let none = if struct_names.is_empty() {
                    " (no structs are defined)"
                } else {
                    ""
                };
                return Err(self
                    .err(
                        inst.struct_name.span(),
                        &key("struct"),
                        format!("unknown struct `{wanted}` in `{}`{none}", key("struct")),
                    )
                    .with_choices(wanted, &struct_names));
            }
            let kind = *inst.kind.get_ref();
            let kind_name = match kind {
                InstanceKind::Global => "global",
                InstanceKind::PerCpu => "per-cpu",
                InstanceKind::PerNode => "per-node",
            };
            let only = |present: bool, field: &str, allowed: &str| -> Result {
                if present {
                    let k = key(field);
                    return Err(self.err(
                        self.key_span(&["instances", name, field]),
                        &k,
                        format!("`{k}` is only allowed for {allowed} instances, and this one is {kind_name}"),
                    ));
                }
                Ok(())
            };
            only(
                kind != InstanceKind::Global && inst.node.is_some(),
                "node",
                "global",
            )?;
            only(
                kind != InstanceKind::Global && inst.count.is_some(),
                "count",
                "global",
            )?;
            only(
                kind != InstanceKind::PerCpu && inst.shared_aligned.is_some(),
                "shared_aligned",
                "per-cpu",
            )?;
            self.at_least_one(&inst.count, &key("count"))?;
            self.array_length(&inst.count, &key("count"))?;
        }
        Ok(())
    }

    fn threads(&self, doc: &ScenarioDoc) -> Result {
        if doc.threads.is_empty() {
            return Err(self
                .err(
                    self.value_span(&["threads"]),
                    "threads",
                    "`threads` is empty; at least one thread group is needed",
                )
                .with_valid("[[threads]] tables with `cpus` and `script`"));
        }
        let script_names: Vec<&str> = doc.scripts.keys().map(String::as_str).collect();
        for (i, t) in doc.threads.iter().enumerate() {
            let name = t.name();
            let key = |k: &str| join_path(&["threads", name, k]);
            if let Some(n) = &t.name {
                check_name(
                    self.source,
                    n,
                    &key("name"),
                    "thread group name",
                    NameRule::Name,
                )?;
            }
            let script = t.script.get_ref();
            if !doc.scripts.contains_key(script) {
                let none = if script_names.is_empty() {
                    " (no scripts are defined)"
                } else {
                    ""
                };
                return Err(self
                    .err(
                        t.script.span(),
                        &key("script"),
                        format!("unknown script `{script}` in `{}`{none}", key("script")),
                    )
                    .with_choices(script, &script_names));
            }
            let earlier = &doc.threads[..i];
            if let Some(first) = earlier.iter().find(|e| e.name() == name) {
                let group = join_path(&["threads", name]);
                let first_at = self.where_(group_span(first));
                let err = match &t.name {
                    Some(n) => self.err(
                        n.span(),
                        &group,
                        format!("duplicate thread group name: `{group}` is already defined {first_at}"),
                    ),
                    None => self.err(
                        t.script.span(),
                        &group,
                        format!(
                            "duplicate thread group name: `{group}` is already defined {first_at}; this group is named after its script, so give it a distinct `name`"
                        ),
                    ),
                };
                return Err(err.with_valid("a thread group name not used by another group"));
            }
        }
        Ok(())
    }
}

/// Where a thread group's name comes from.
fn group_span(t: &ThreadGroup) -> Range<usize> {
    match &t.name {
        Some(n) => n.span(),
        None => t.script.span(),
    }
}

/// Span of element `index` of the array at `path`.
fn element_span(c: &Checker<'_, '_>, path: &[&str], index: usize) -> Range<usize> {
    lookup(c.tree, path)
        .and_then(|(_, v)| {
            v.get_ref()
                .as_array()
                .and_then(|a| a.get(index))
                .map(|e| e.span())
        })
        .unwrap_or(0..0)
}

/// A value the file gives and the span of it.
type Given = Option<(u64, Range<usize>)>;

/// Every integer key of a machine table, by its name there (`latency.` for
/// `[machine.latency]`), with the value and span the file gives.
fn machine_numbers(m: &InlineMachine) -> Vec<(&'static str, Given)> {
    let n32 = |v: &Option<Spanned<u32>>| v.as_ref().map(|s| (u64::from(*s.get_ref()), s.span()));
    let n64 = |v: &Option<Spanned<u64>>| v.as_ref().map(|s| (*s.get_ref(), s.span()));
    let l = &m.latency;
    vec![
        ("clock_mhz", n64(&m.clock_mhz)),
        ("sockets", n32(&m.sockets)),
        ("nodes_per_socket", n32(&m.nodes_per_socket)),
        ("l3_per_node", n32(&m.l3_per_node)),
        ("cores_per_l3", n32(&m.cores_per_l3)),
        ("threads_per_core", n32(&m.threads_per_core)),
        ("line_size_bytes", n32(&m.line_size_bytes)),
        ("store_buffer_entries", n32(&m.store_buffer_entries)),
        ("distance_unit_cycles", n64(&m.distance_unit_cycles)),
        ("smt_share_percent", n32(&m.smt_share_percent)),
        (
            "arbitration_near_owner_percent",
            n32(&m.arbitration_near_owner_percent),
        ),
        ("outstanding_misses", n32(&m.outstanding_misses)),
        ("reorder_window_entries", n32(&m.reorder_window_entries)),
        ("dispatch_width", n32(&m.dispatch_width)),
        (
            "mispredict_penalty_cycles",
            n32(&m.mispredict_penalty_cycles),
        ),
        (
            "deep_idle_writeback_cycles",
            n64(&m.deep_idle_writeback_cycles),
        ),
        ("l1d_kib", n32(&m.l1d_kib)),
        ("l1d_ways", n32(&m.l1d_ways)),
        ("l2_kib", n32(&m.l2_kib)),
        ("l2_ways", n32(&m.l2_ways)),
        ("l2_hit_cycles", n64(&m.l2_hit_cycles)),
        ("latency.l1_hit_cycles", n64(&l.l1_hit_cycles)),
        ("latency.locked_op_cycles", n64(&l.locked_op_cycles)),
        ("latency.smt_transfer_cycles", n64(&l.smt_transfer_cycles)),
        ("latency.l3_transfer_cycles", n64(&l.l3_transfer_cycles)),
        ("latency.hop_in_node_cycles", n64(&l.hop_in_node_cycles)),
        (
            "latency.hop_between_nodes_cycles",
            n64(&l.hop_between_nodes_cycles),
        ),
        (
            "latency.hop_between_sockets_cycles",
            n64(&l.hop_between_sockets_cycles),
        ),
        (
            "latency.hop_extra_socket_link_cycles",
            n64(&l.hop_extra_socket_link_cycles),
        ),
        (
            "latency.clean_snoop_saving_cycles",
            n64(&l.clean_snoop_saving_cycles),
        ),
        ("latency.dram_cycles", n64(&l.dram_cycles)),
        ("latency.l3_hit_cycles", n64(&l.l3_hit_cycles)),
        (
            "latency.home_occupancy_cycles",
            n64(&l.home_occupancy_cycles),
        ),
    ]
}
