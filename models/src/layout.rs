//! Struct layout by C rules, and the placement of instances in memory.
//!
//! Fields are laid out in order, each at the next offset that is a multiple
//! of its alignment, so holes appear where pahole shows them; the struct's
//! alignment is the largest of its fields' (or an explicit `align`, as
//! `____cacheline_aligned_in_smp` gives), and its size is rounded up to it,
//! which is the tail padding. A field may also name its `offset` outright,
//! to reproduce a layout exactly.
//!
//! Placement follows the kernel's allocators closely enough for coherence:
//! every global or per-node object starts on a fresh cache line (a separate
//! allocation), arrays of objects are packed at the struct size, and each
//! CPU's per-CPU area packs that CPU's per-CPU instances next to each other
//! in declaration order, except `shared_aligned` ones
//! (DEFINE_PER_CPU_SHARED_ALIGNED), which sit in their own section, each on
//! whole lines of its own.

use sim_core::cpu::LinuxCpu;
use sim_core::memory::{BitRange, FieldDef, InstanceDef, InstanceKind, MemoryLayout, StructDef};
use sim_core::topology::Topology;
use std::collections::BTreeMap;
use std::fmt;

/// Size and alignment of a C type as x86-64 Linux lays it out (LP64),
/// without debug options (spinlock_t is the 4-byte qspinlock; local_lock_t
/// is empty without lockdep).
pub fn c_type(name: &str) -> Option<(u32, u32)> {
    let name = name.trim();
    if name.ends_with('*') {
        return Some((8, 8));
    }
    Some(match name {
        "char" | "signed char" | "unsigned char" | "u8" | "s8" | "i8" | "__u8" | "__s8"
        | "bool" | "_Bool" => (1, 1),
        // pahole writes the integer types as DWARF names them.
        "short" | "unsigned short" | "short int" | "short unsigned int" | "u16" | "s16" | "i16"
        | "__u16" | "__s16" => (2, 2),
        "int" | "unsigned int" | "unsigned" | "u32" | "s32" | "i32" | "__u32" | "__s32"
        | "atomic_t" | "spinlock_t" | "raw_spinlock_t" | "arch_spinlock_t" | "refcount_t"
        | "gfp_t" => (4, 4),
        "long"
        | "unsigned long"
        | "long int"
        | "long unsigned int"
        | "long long"
        | "unsigned long long"
        | "long long int"
        | "long long unsigned int"
        | "u64"
        | "s64"
        | "i64"
        | "__u64"
        | "__s64"
        | "size_t"
        | "ssize_t"
        | "atomic_long_t"
        | "atomic64_t"
        | "pointer"
        | "ptr"
        | "uintptr_t" => (8, 8),
        "local_lock_t" => (0, 1),
        "struct list_head" | "struct rcu_head" | "struct callback_head" => (16, 8),
        _ => return None,
    })
}

/// Every type name `c_type` knows, for error messages.
pub const C_TYPE_NAMES: &[&str] = &[
    "char",
    "unsigned char",
    "u8",
    "s8",
    "i8",
    "bool",
    "short",
    "unsigned short",
    "u16",
    "s16",
    "i16",
    "int",
    "unsigned int",
    "u32",
    "s32",
    "i32",
    "atomic_t",
    "spinlock_t",
    "raw_spinlock_t",
    "refcount_t",
    "long",
    "unsigned long",
    "long long",
    "u64",
    "s64",
    "i64",
    "size_t",
    "ssize_t",
    "atomic_long_t",
    "atomic64_t",
    "pointer",
    "T *",
    "local_lock_t",
    "struct list_head",
    "struct rcu_head",
];

/// How a field's size is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// A C type name, resolved by [`c_type`], or a struct or union of the
    /// same set (`struct page_counter`, `union u`, or the bare name when it
    /// is no C type).
    Named(String),
    /// Raw bytes (padding, or a type the table does not know).
    Bytes(u32),
    /// A struct or union written out in place (as pahole expands one).
    Inline(Box<StructSpec>),
}

/// A bitfield's place inside its storage unit (pahole's `/* off: bit size */`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitField {
    /// Bits from the start of the storage unit.
    pub bit_offset: u32,
    pub bits: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    pub name: String,
    pub ty: FieldType,
    pub count: u32,
    pub align: Option<u32>,
    pub offset: Option<u32>,
    /// A struct or union member without a name of its own (C11 anonymous
    /// members): its members are named as if they were the parent's.
    pub anonymous: bool,
    /// A bitfield: the field is its storage unit (`ty`), shared with the
    /// bitfields next to it, so it may overlap them.
    pub bit_field: Option<BitField>,
    /// What a view calls the type of an opaque (`Bytes`) field, such as
    /// the type a pahole listing gives (`struct percpu_ref`).
    pub type_label: Option<String>,
}

impl FieldSpec {
    /// A field of a named type, laid out by the C rules.
    pub fn named(name: &str, ty: &str) -> FieldSpec {
        FieldSpec {
            name: name.to_string(),
            ty: FieldType::Named(ty.to_string()),
            count: 1,
            align: None,
            offset: None,
            anonymous: false,
            bit_field: None,
            type_label: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructSpec {
    pub name: String,
    pub align: Option<u32>,
    /// A union: every member at offset 0, the size that of the largest.
    pub is_union: bool,
    pub fields: Vec<FieldSpec>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceSpec {
    pub name: String,
    pub struct_name: String,
    pub kind: InstanceKind,
    /// Global only: home node and number of elements.
    pub node: u32,
    pub count: u32,
    /// Per-CPU only.
    pub shared_aligned: bool,
}

/// What went wrong, naming the struct, the field and the key at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError {
    /// The struct or instance name.
    pub owner: String,
    /// The field, when the fault is in one.
    pub field: Option<String>,
    /// The key at fault (`type`, `align`, `offset`, `node`, ...).
    pub key: &'static str,
    pub message: String,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(
                f,
                "{}.{}: `{}`: {}",
                self.owner, field, self.key, self.message
            ),
            None => write!(f, "{}: `{}`: {}", self.owner, self.key, self.message),
        }
    }
}

impl std::error::Error for LayoutError {}

/// Largest struct and largest memory a scenario may ask for.
pub const MAX_STRUCT_BYTES: u64 = sim_core::limits::STRUCT_BYTES;
pub const MAX_MEMORY_BYTES: u64 = sim_core::limits::SIMULATED_MEMORY_BYTES;
pub const MAX_INSTANCE_COUNT: u32 = sim_core::limits::INSTANCE_ELEMENTS;
/// Deepest nesting of structs in structs.
pub const MAX_NESTING_DEPTH: usize = 32;

fn round_up(value: u64, align: u64) -> u64 {
    value.div_ceil(align) * align
}

/// One member of a laid-out struct, as pahole lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaidOutField {
    pub name: String,
    /// The type as written (`unsigned long`, `struct page_counter`), or
    /// `N bytes` for an opaque field.
    pub type_name: String,
    pub offset_bytes: u32,
    /// Size of one element.
    pub size_bytes: u32,
    pub count: u32,
    pub align_bytes: u32,
    pub anonymous: bool,
    pub bit_field: Option<BitField>,
    /// The struct or union this member is, laid out.
    pub nested: Option<Box<LaidOutStruct>>,
}

impl LaidOutField {
    pub fn total_bytes(&self) -> u32 {
        self.size_bytes * self.count
    }
}

/// A struct or union laid out by C rules, nesting kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaidOutStruct {
    pub name: String,
    pub is_union: bool,
    pub size_bytes: u32,
    pub align_bytes: u32,
    pub fields: Vec<LaidOutField>,
}

/// How a named field type resolves.
enum Resolved {
    Scalar(u32, u32),
    Struct(usize),
}

/// Finds a field type: a pointer, a struct or union of the set when it is
/// written `struct NAME`/`union NAME` (or is a bare name that is no C type),
/// or a C type.
fn resolve_type(name: &str, specs: &[StructSpec]) -> Result<Resolved, String> {
    let name = name.trim();
    if name.ends_with('*') {
        return Ok(Resolved::Scalar(8, 8));
    }
    let (tag, bare) = if let Some(rest) = name.strip_prefix("struct ") {
        (Some(false), rest.trim())
    } else if let Some(rest) = name.strip_prefix("union ") {
        (Some(true), rest.trim())
    } else {
        (None, name)
    };
    let declared = specs.iter().position(|s| s.name == bare);
    if tag.is_none() {
        if let Some((size, align)) = c_type(name) {
            return Ok(Resolved::Scalar(size, align));
        }
    }
    match (declared, tag) {
        (Some(i), Some(is_union)) if specs[i].is_union != is_union => Err(format!(
            "`{bare}` is declared as a {}, not a {}",
            if specs[i].is_union { "union" } else { "struct" },
            if is_union { "union" } else { "struct" }
        )),
        (Some(i), _) => Ok(Resolved::Struct(i)),
        (None, _) => match c_type(name) {
            Some((size, align)) => Ok(Resolved::Scalar(size, align)),
            // `char[56]`, as C declares it: the field's `count` says it.
            None if name.ends_with(']') => {
                let (element, rest) = name.split_once('[').unwrap_or((name, ""));
                let count = rest.trim_end_matches(']').trim();
                Err(format!(
                    "unknown C type `{name}`; an array is its element type and a count: \
                     `type = \"{}\", count = {}`",
                    element.trim(),
                    if count.is_empty() { "N" } else { count }
                ))
            }
            None => Err(format!(
                "unknown C type `{name}`; give `size` (and `align`) in bytes instead, \
                 or declare the struct in `[structs]`"
            )),
        },
    }
}

/// Lays out a set of structs and unions, which may contain each other, by C
/// rules; the result is in the order of `specs`.
pub fn layout_structs(specs: &[StructSpec]) -> Result<Vec<LaidOutStruct>, LayoutError> {
    let mut done: Vec<Option<LaidOutStruct>> = vec![None; specs.len()];
    let mut stack = Vec::new();
    for i in 0..specs.len() {
        lay_out(i, specs, &mut done, &mut stack)?;
    }
    Ok(done.into_iter().flatten().collect())
}

fn lay_out(
    index: usize,
    specs: &[StructSpec],
    done: &mut Vec<Option<LaidOutStruct>>,
    stack: &mut Vec<usize>,
) -> Result<(), LayoutError> {
    if done[index].is_some() {
        return Ok(());
    }
    stack.push(index);
    let laid = lay_out_spec(&specs[index], specs, done, stack);
    stack.pop();
    done[index] = Some(laid?);
    Ok(())
}

/// Lays out one struct; the named structs it contains are laid out first
/// (into `done`), `stack` holding the ones being laid out, to find cycles.
fn lay_out_spec(
    spec: &StructSpec,
    specs: &[StructSpec],
    done: &mut Vec<Option<LaidOutStruct>>,
    stack: &mut Vec<usize>,
) -> Result<LaidOutStruct, LayoutError> {
    lay_out_spec_noting(spec, specs, done, stack, &mut Vec::new())
}

/// [`lay_out_spec`], noting in `redundant` for each field whether its
/// explicit `offset` (if any) is where the C rules put it anyway.
fn lay_out_spec_noting(
    spec: &StructSpec,
    specs: &[StructSpec],
    done: &mut Vec<Option<LaidOutStruct>>,
    stack: &mut Vec<usize>,
    redundant: &mut Vec<bool>,
) -> Result<LaidOutStruct, LayoutError> {
    redundant.clear();
    let mut cursor = Cursor {
        offset: 0,
        size: 0,
        solid_end: 0,
        bit_unit: None,
        struct_align: 1,
    };
    let mut fields = Vec::new();
    for f in &spec.fields {
        let ty = member_type(spec, f, specs, done, stack)?;
        let align = check_member(spec, f, &ty)?;
        let (start, offset_redundant) = cursor.place(spec, f, ty.elem_size, align)?;
        redundant.push(offset_redundant);
        fields.push(LaidOutField {
            name: f.name.clone(),
            type_name: ty.type_name,
            offset_bytes: start as u32,
            size_bytes: ty.elem_size,
            count: f.count,
            align_bytes: align as u32,
            anonymous: f.anonymous,
            bit_field: f.bit_field,
            nested: ty.nested,
        });
    }
    let mut struct_align = cursor.struct_align;
    if let Some(a) = spec.align {
        if !a.is_power_of_two() {
            return Err(layout_err(
                spec,
                None,
                "align",
                format!("{a} is not a power of two"),
            ));
        }
        struct_align = struct_align.max(a as u64);
    }
    let total = round_up(cursor.size.max(1), struct_align);
    if total > MAX_STRUCT_BYTES {
        return Err(layout_err(
            spec,
            None,
            "align",
            format!("the struct would exceed {MAX_STRUCT_BYTES} bytes"),
        ));
    }
    Ok(LaidOutStruct {
        name: spec.name.clone(),
        is_union: spec.is_union,
        size_bytes: total as u32,
        align_bytes: struct_align as u32,
        fields,
    })
}

/// An error in struct `spec`, in `field` when the fault is in one.
fn layout_err(
    spec: &StructSpec,
    field: Option<&str>,
    key: &'static str,
    message: String,
) -> LayoutError {
    LayoutError {
        owner: spec.name.clone(),
        field: field.map(str::to_string),
        key,
        message,
    }
}

/// A member's type, resolved: one element's size and natural alignment,
/// the type as a view names it, and the struct or union it is, laid out.
struct MemberType {
    elem_size: u32,
    natural_align: u32,
    type_name: String,
    nested: Option<Box<LaidOutStruct>>,
}

/// Resolves member `f`'s type, laying out the struct it names first (a
/// struct that contains itself, or nesting too deep, is an error).
fn member_type(
    spec: &StructSpec,
    f: &FieldSpec,
    specs: &[StructSpec],
    done: &mut Vec<Option<LaidOutStruct>>,
    stack: &mut Vec<usize>,
) -> Result<MemberType, LayoutError> {
    let fail = |key: &'static str, message: String| layout_err(spec, Some(&f.name), key, message);
    let laid_out = |def: LaidOutStruct, type_name: String| MemberType {
        elem_size: def.size_bytes,
        natural_align: def.align_bytes,
        type_name,
        nested: Some(Box::new(def)),
    };
    match &f.ty {
        FieldType::Named(name) => match resolve_type(name, specs) {
            Ok(Resolved::Scalar(size, align)) => Ok(MemberType {
                elem_size: size,
                natural_align: align,
                type_name: name.trim().to_string(),
                nested: None,
            }),
            Ok(Resolved::Struct(inner)) => {
                if let Some(at) = stack.iter().position(|&s| s == inner) {
                    let mut cycle: Vec<&str> = stack[at..]
                        .iter()
                        .map(|&s| specs[s].name.as_str())
                        .collect();
                    cycle.push(&specs[inner].name);
                    return Err(fail(
                        "type",
                        format!(
                            "`{}` contains itself ({}); a struct can hold a pointer to \
                             itself (`struct {} *`), not itself",
                            specs[inner].name,
                            cycle.join(" -> "),
                            specs[inner].name
                        ),
                    ));
                }
                if stack.len() >= MAX_NESTING_DEPTH {
                    return Err(fail(
                        "type",
                        format!("structs nest more than {MAX_NESTING_DEPTH} deep"),
                    ));
                }
                lay_out(inner, specs, done, stack)?;
                let def = done[inner].clone().expect("laid out above");
                let type_name = format!(
                    "{} {}",
                    if def.is_union { "union" } else { "struct" },
                    def.name
                );
                Ok(laid_out(def, type_name))
            }
            Err(message) => Err(fail("type", message)),
        },
        FieldType::Inline(inner) => {
            let def = lay_out_spec(inner, specs, done, stack)?;
            let type_name = format!(
                "{}{}",
                if def.is_union { "union" } else { "struct" },
                if def.name.is_empty() {
                    String::new()
                } else {
                    format!(" {}", def.name)
                }
            );
            Ok(laid_out(def, type_name))
        }
        FieldType::Bytes(size) => {
            // Raw bytes align like the largest power of two that divides
            // them, up to 8, as a member of that size would.
            let natural = (*size).max(1);
            Ok(MemberType {
                elem_size: *size,
                natural_align: (1u32 << natural.trailing_zeros()).min(8),
                type_name: f
                    .type_label
                    .clone()
                    .unwrap_or_else(|| format!("{size} bytes")),
                nested: None,
            })
        }
    }
}

/// Checks what member `f` asks for besides its place (anonymity, its
/// bits, its alignment, its count) and returns its alignment.
fn check_member(spec: &StructSpec, f: &FieldSpec, ty: &MemberType) -> Result<u64, LayoutError> {
    let fail = |key: &'static str, message: String| layout_err(spec, Some(&f.name), key, message);
    if f.anonymous && ty.nested.is_none() {
        return Err(fail(
            "anonymous",
            "only a struct or union member can be anonymous".into(),
        ));
    }
    if f.anonymous && f.count != 1 {
        return Err(fail(
            "count",
            "an anonymous member cannot be an array".into(),
        ));
    }
    if let Some(b) = f.bit_field {
        // The bits lie inside their storage unit, whatever its size:
        // C refuses a bitfield wider than its type.
        let end = b.bit_offset as u64 + b.bits as u64;
        let unit_bits = ty.elem_size as u64 * 8;
        if end > unit_bits {
            return Err(fail(
                "bits",
                format!(
                    "the bitfield's bits {}..{end} do not fit its storage unit `{}` of {unit_bits} bits",
                    b.bit_offset, ty.type_name
                ),
            ));
        }
    }
    let align = f.align.unwrap_or(ty.natural_align) as u64;
    if !align.is_power_of_two() {
        return Err(fail("align", format!("{align} is not a power of two")));
    }
    if f.count == 0 || f.count > MAX_INSTANCE_COUNT {
        return Err(fail(
            "count",
            format!("{} is out of range 1..={MAX_INSTANCE_COUNT}", f.count),
        ));
    }
    Ok(align)
}

/// Where the next member of a struct goes, as C lays them out one after
/// the other.
struct Cursor {
    /// Where the members so far end (bitfields: after the bits they use).
    offset: u64,
    /// The end of the furthest member's bytes.
    size: u64,
    /// Where the last ordinary (non-bitfield) member ends: bitfields may
    /// share a storage unit, nothing else may overlap.
    solid_end: u64,
    /// The storage unit of the bitfield just placed: start, size and the
    /// first bit after it. A bitfield without an offset that fits after it
    /// in a unit of the same size shares it, as C packs them.
    bit_unit: Option<(u64, u32, u32)>,
    struct_align: u64,
}

impl Cursor {
    /// Places member `f` (elements of `elem_size` bytes aligned to
    /// `align`): its start, and whether its explicit offset (if any) is
    /// where the C rules put it anyway.
    fn place(
        &mut self,
        spec: &StructSpec,
        f: &FieldSpec,
        elem_size: u32,
        align: u64,
    ) -> Result<(u64, bool), LayoutError> {
        let fail =
            |key: &'static str, message: String| layout_err(spec, Some(&f.name), key, message);
        let offset = self.offset;
        // Where the C rules put the field after the ones before it.
        let by_rule = match (f.bit_field, self.bit_unit) {
            (Some(b), Some((unit_start, unit_size, free_bit)))
                if unit_size == elem_size && b.bit_offset >= free_bit =>
            {
                unit_start
            }
            _ => round_up(offset, align),
        };
        let start = if spec.is_union {
            match f.offset {
                Some(0) | None => 0,
                Some(other) => {
                    return Err(fail(
                        "offset",
                        format!("offset {other} in a union, whose members all start at 0"),
                    ));
                }
            }
        } else {
            match f.offset {
                Some(explicit) => {
                    let explicit = explicit as u64;
                    // A bitfield's storage unit may overlap the members
                    // before it (C packs its bits after theirs); its bits
                    // may not.
                    let overlaps = match f.bit_field {
                        Some(b) => explicit * 8 + u64::from(b.bit_offset) < self.solid_end * 8,
                        None => explicit < offset,
                    };
                    if overlaps {
                        let floor = if f.bit_field.is_some() {
                            self.solid_end
                        } else {
                            offset
                        };
                        return Err(fail(
                            "offset",
                            format!(
                                "offset {explicit} overlaps the previous field, which ends at {floor}; \
                                 offsets must increase in field order"
                            ),
                        ));
                    }
                    explicit
                }
                None => by_rule,
            }
        };
        let redundant = f.offset.is_none() || start == by_rule;
        self.bit_unit = f
            .bit_field
            .map(|b| (start, elem_size, b.bit_offset + b.bits));
        let bytes = elem_size as u64 * f.count as u64;
        let end = start + bytes;
        // A member after a bitfield starts after the bits it uses, not
        // after its whole storage unit (`unsigned int a:3; char b;` puts
        // `b` at byte 1), as C lays them out.
        let used_end = match f.bit_field {
            Some(b) => start + (b.bit_offset as u64 + b.bits as u64).div_ceil(8),
            None => end,
        };
        if end > MAX_STRUCT_BYTES {
            // Blame what the user wrote that put the end there: an explicit
            // offset, else the count of an array, else the size.
            let key = if f.offset.is_some() {
                "offset"
            } else if f.count > 1 {
                "count"
            } else {
                "size"
            };
            return Err(fail(
                key,
                format!(
                    "the field would end at byte {end} ({bytes} bytes from offset {start}), \
                     past the largest struct, {MAX_STRUCT_BYTES} bytes"
                ),
            ));
        }
        if !spec.is_union {
            self.offset = offset.max(used_end);
            if f.bit_field.is_none() {
                self.solid_end = self.offset;
            }
        }
        self.size = self.size.max(end);
        self.struct_align = self.struct_align.max(align);
        Ok((start, redundant))
    }
}

/// `spec` without the explicit `offset`s the C rules give anyway, in it
/// and in every struct written out in it: the same layout, which a patch of
/// an `align` or of the order then moves as a compiler would. An import
/// (pahole, BTF) gives every member its offset; this keeps only the ones a
/// compiler could not derive (a member placed where no alignment puts it).
/// Named struct types are not looked up: `spec` may use C types and
/// written-out structs only, as imports make them.
pub fn drop_redundant_offsets(spec: &StructSpec) -> Result<StructSpec, LayoutError> {
    drop_redundant_offsets_at(spec, 0)
}

fn drop_redundant_offsets_at(spec: &StructSpec, depth: usize) -> Result<StructSpec, LayoutError> {
    if depth > MAX_NESTING_DEPTH {
        return Err(LayoutError {
            owner: spec.name.clone(),
            field: None,
            key: "fields",
            message: format!("structs nest more than {MAX_NESTING_DEPTH} deep"),
        });
    }
    let mut out = spec.clone();
    // A written-out struct lays out on its own, so each is decided first.
    for f in &mut out.fields {
        if let FieldType::Inline(inner) = &f.ty {
            f.ty = FieldType::Inline(Box::new(drop_redundant_offsets_at(inner, depth + 1)?));
        }
    }
    let mut redundant = Vec::new();
    lay_out_spec_noting(&out, &[], &mut Vec::new(), &mut Vec::new(), &mut redundant)?;
    // Clearing an offset the rules give leaves every later placement as
    // it was, so each is decided on the layout with all of them.
    for (f, &r) in out.fields.iter_mut().zip(&redundant) {
        if r {
            f.offset = None;
        }
    }
    Ok(out)
}

/// The fields a simulation sees: every member of every nested struct or
/// union as a field of its own, named by its dotted path.
pub fn flatten(def: &LaidOutStruct) -> Result<StructDef, LayoutError> {
    let mut fields = Vec::new();
    let mut names = BTreeMap::new();
    flatten_into(def, &def.name, &[], 0, None, &mut fields, &mut names)?;
    Ok(StructDef {
        name: def.name.clone(),
        size_bytes: def.size_bytes,
        align_bytes: def.align_bytes,
        fields,
    })
}

/// One array on a member's path: element count, stride and how many path
/// segments come before its index.
type OuterArray = (u32, u32, u32);

fn flatten_into(
    def: &LaidOutStruct,
    owner: &str,
    prefix: &[&str],
    base_offset: u32,
    outer: Option<OuterArray>,
    out: &mut Vec<FieldDef>,
    // Each name in `out` with its index: a lookup per member, not a scan,
    // so a struct of many members flattens in n log n.
    names: &mut BTreeMap<String, usize>,
) -> Result<(), LayoutError> {
    for f in &def.fields {
        let mut path: Vec<&str> = prefix.to_vec();
        if !f.anonymous {
            path.push(&f.name);
        }
        let name = path.join(".");
        let offset = base_offset + f.offset_bytes;
        let two_indices = || LayoutError {
            owner: owner.to_string(),
            field: Some(prefix.first().copied().unwrap_or(&f.name).to_string()),
            key: "count",
            message: format!(
                "`{name}` would need two indices (an array inside an array of structs); \
                 a place takes one, so split one of the arrays into separate fields"
            ),
        };
        let array = if f.count > 1 {
            if outer.is_some() {
                return Err(two_indices());
            }
            let stride = f.size_bytes;
            Some((f.count, stride, path.len() as u32))
        } else {
            outer
        };
        match &f.nested {
            Some(inner) => flatten_into(inner, owner, &path, offset, array, out, names)?,
            None => {
                if let Some(&first) = names.get(&name) {
                    return Err(LayoutError {
                        owner: owner.to_string(),
                        field: Some(f.name.clone()),
                        key: "name",
                        message: format!(
                            "two members are both reached as `{}` (an anonymous member's \
                             field has the name of another)",
                            out[first].name
                        ),
                    });
                }
                names.insert(name.clone(), out.len());
                let (count, stride, index_after) = array.unwrap_or((1, f.size_bytes, 0));
                out.push(FieldDef {
                    bits: f.bit_field.map(|b| BitRange {
                        shift: b.bit_offset,
                        width: b.bits,
                    }),
                    name,
                    offset_bytes: offset,
                    size_bytes: f.size_bytes,
                    count,
                    stride_bytes: stride,
                    index_after_segments: index_after,
                });
            }
        }
    }
    Ok(())
}

/// Lays out one struct by C rules (one that nests no other struct).
pub fn layout_struct(spec: &StructSpec) -> Result<StructDef, LayoutError> {
    let laid = layout_structs(std::slice::from_ref(spec))?;
    flatten(&laid[0])
}

/// Lays out every struct and places every instance for a machine.
pub fn build_memory(
    topology: &Topology,
    structs: &[StructSpec],
    instances: &[InstanceSpec],
) -> Result<MemoryLayout, LayoutError> {
    let defs = layout_structs(structs)?
        .iter()
        .map(flatten)
        .collect::<Result<Vec<_>, _>>()?;
    // Allocations start on a fresh granule (a line, or a line pair with the
    // adjacent-line prefetcher); the protocol tracks lines.
    let mut memory = Allocator {
        granule: topology.allocation_granule_bytes() as u64,
        line: topology.line_size_bytes() as u64,
        next: 0,
        homes_by_range: Vec::new(),
    };
    // Globals and per-node objects: each allocation starts a fresh granule.
    let mut placed: Vec<InstanceDef> = Vec::new();
    for inst in instances {
        let s = struct_index(&defs, inst)?;
        placed.push(memory.place(topology, inst, s, &defs[s])?);
    }
    memory.place_per_cpu_areas(topology, instances, &defs, &mut placed)?;

    let (granule, line) = (memory.granule, memory.line);
    let total = round_up(memory.next.max(granule), granule);
    let mut unit_homes = vec![0u32; (total / line) as usize];
    for &(start, end, node) in &memory.homes_by_range {
        if end > start {
            // A line shared by two allocations keeps the first one's home.
            for u in (start / line)..=((end - 1) / line) {
                if u * line >= start {
                    unit_homes[u as usize] = node;
                }
            }
        }
    }
    Ok(MemoryLayout {
        structs: defs,
        instances: placed,
        total_bytes: total,
        unit_bytes: line as u32,
        line_size_bytes: line as u32,
        unit_homes,
    })
}

/// The index of `inst`'s struct among the laid-out `defs`.
fn struct_index(defs: &[StructDef], inst: &InstanceSpec) -> Result<usize, LayoutError> {
    defs.iter()
        .position(|d| d.name == inst.struct_name)
        .ok_or_else(|| LayoutError {
            owner: inst.name.clone(),
            field: None,
            key: "struct",
            message: format!("unknown struct `{}`", inst.struct_name),
        })
}

/// Refuses an allocation by `owner` (at `key`) that would end past the
/// simulated memory.
fn check_memory_end(owner: &str, key: &'static str, end: u64) -> Result<(), LayoutError> {
    if end > MAX_MEMORY_BYTES {
        return Err(LayoutError {
            owner: owner.to_string(),
            field: None,
            key,
            message: format!(
                "the scenario's memory would reach {end} bytes with it, more than the {} \
                 MiB of simulated memory",
                MAX_MEMORY_BYTES >> 20
            ),
        });
    }
    Ok(())
}

/// The simulated memory as it is handed out: where the next allocation
/// may start, and the home node of each range handed out.
struct Allocator {
    granule: u64,
    line: u64,
    next: u64,
    /// Start, end and home node of each allocation.
    homes_by_range: Vec<(u64, u64, u32)>,
}

impl Allocator {
    /// Places a global instance (its elements one after the other, on its
    /// node) or a per-node one (a copy per node, each on a fresh granule);
    /// a per-CPU instance gets its addresses with the per-CPU areas.
    fn place(
        &mut self,
        topology: &Topology,
        inst: &InstanceSpec,
        s: usize,
        def: &StructDef,
    ) -> Result<InstanceDef, LayoutError> {
        let granule = self.granule;
        match inst.kind {
            InstanceKind::Global => {
                if inst.node >= topology.node_count() {
                    return Err(LayoutError {
                        owner: inst.name.clone(),
                        field: None,
                        key: "node",
                        message: format!(
                            "node {} does not exist; the machine has nodes 0-{}",
                            inst.node,
                            topology.node_count() - 1
                        ),
                    });
                }
                if inst.count == 0 || inst.count > MAX_INSTANCE_COUNT {
                    return Err(LayoutError {
                        owner: inst.name.clone(),
                        field: None,
                        key: "count",
                        message: format!("{} is out of range 1..={MAX_INSTANCE_COUNT}", inst.count),
                    });
                }
                let base = round_up(self.next, granule.max(def.align_bytes as u64));
                let addresses: Vec<u64> = (0..inst.count as u64)
                    .map(|e| base + e * def.size_bytes as u64)
                    .collect();
                self.next = base + inst.count as u64 * def.size_bytes as u64;
                check_memory_end(&inst.name, "count", self.next)?;
                self.homes_by_range.push((base, self.next, inst.node));
                Ok(InstanceDef {
                    name: inst.name.clone(),
                    struct_index: s,
                    kind: inst.kind,
                    element_addresses: addresses,
                    element_homes: vec![inst.node; inst.count as usize],
                })
            }
            InstanceKind::PerNode => {
                let mut addresses = Vec::new();
                let mut homes = Vec::new();
                for node in 0..topology.node_count() {
                    let base = round_up(self.next, granule.max(def.align_bytes as u64));
                    self.next = base + def.size_bytes as u64;
                    check_memory_end(&inst.name, "kind", self.next)?;
                    self.homes_by_range.push((base, self.next, node));
                    addresses.push(base);
                    homes.push(node);
                }
                Ok(InstanceDef {
                    name: inst.name.clone(),
                    struct_index: s,
                    kind: inst.kind,
                    element_addresses: addresses,
                    element_homes: homes,
                })
            }
            InstanceKind::PerCpu => Ok(InstanceDef {
                name: inst.name.clone(),
                struct_index: s,
                kind: inst.kind,
                element_addresses: Vec::new(),
                element_homes: Vec::new(),
            }),
        }
    }

    /// Per-CPU areas: one per CPU, in CPU order, each starting on a fresh
    /// granule; shared-aligned instances first, each on whole lines, then
    /// the others packed in declaration order. Each per-CPU instance of
    /// `placed` gets an element per CPU.
    fn place_per_cpu_areas(
        &mut self,
        topology: &Topology,
        instances: &[InstanceSpec],
        defs: &[StructDef],
        placed: &mut [InstanceDef],
    ) -> Result<(), LayoutError> {
        let (granule, line) = (self.granule, self.line);
        let per_cpu: Vec<usize> = instances
            .iter()
            .enumerate()
            .filter(|(_, i)| i.kind == InstanceKind::PerCpu)
            .map(|(n, _)| n)
            .collect();
        if per_cpu.is_empty() {
            return Ok(());
        }
        let mut offsets = vec![0u64; instances.len()];
        let mut area: u64 = 0;
        for &n in per_cpu.iter().filter(|&&n| instances[n].shared_aligned) {
            let def = &defs[struct_index(defs, &instances[n])?];
            let align = line.max(def.align_bytes as u64);
            area = round_up(area, align);
            offsets[n] = area;
            area = round_up(area + def.size_bytes as u64, line);
        }
        for &n in per_cpu.iter().filter(|&&n| !instances[n].shared_aligned) {
            let def = &defs[struct_index(defs, &instances[n])?];
            area = round_up(area, def.align_bytes as u64);
            offsets[n] = area;
            area += def.size_bytes as u64;
        }
        let area_bytes = round_up(area.max(1), granule);
        let first = round_up(self.next, granule);
        for cpu in 0..topology.cpu_count() as u64 {
            let base = first + cpu * area_bytes;
            let node = topology.node_of(LinuxCpu::new(cpu as u32));
            self.homes_by_range.push((base, base + area_bytes, node));
            for &n in &per_cpu {
                placed[n].element_addresses.push(base + offsets[n]);
                placed[n].element_homes.push(node);
            }
        }
        self.next = first + topology.cpu_count() as u64 * area_bytes;
        // Blamed on the last per-CPU instance, whose `kind` makes a copy
        // per CPU: every one of them takes a part of each CPU's area.
        if self.next > MAX_MEMORY_BYTES {
            let last = &instances[*per_cpu.last().expect("per-CPU instances")];
            return Err(LayoutError {
                owner: last.name.clone(),
                field: None,
                key: "kind",
                message: format!(
                    "the per-CPU areas ({area_bytes} bytes per CPU, for {} per-CPU instance(s), \
                     x {} CPUs) would take the scenario's memory to {} bytes, more than the \
                     {} MiB of simulated memory",
                    per_cpu.len(),
                    topology.cpu_count(),
                    self.next,
                    MAX_MEMORY_BYTES >> 20
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, ty: &str) -> FieldSpec {
        FieldSpec::named(name, ty)
    }

    #[test]
    fn c_rules_make_holes_and_tail_padding() {
        let def = layout_struct(&StructSpec {
            name: "s".into(),
            align: None,
            is_union: false,
            fields: vec![field("a", "char"), field("b", "long"), field("c", "int")],
        })
        .unwrap();
        let offsets: Vec<u32> = def.fields.iter().map(|f| f.offset_bytes).collect();
        assert_eq!(offsets, vec![0, 8, 16]);
        assert_eq!(def.size_bytes, 24);
        assert_eq!(def.align_bytes, 8);
    }

    #[test]
    fn cacheline_aligned_field_starts_a_new_line_and_pads_the_struct() {
        // page_counter-like: the hot counter alone on its line.
        let mut usage = field("usage", "atomic_long_t");
        usage.align = Some(64);
        let mut min = field("min", "unsigned long");
        min.align = Some(64);
        let def = layout_struct(&StructSpec {
            name: "pc".into(),
            align: None,
            is_union: false,
            fields: vec![usage, min, field("max", "unsigned long")],
        })
        .unwrap();
        assert_eq!(def.fields[1].offset_bytes, 64);
        assert_eq!(def.size_bytes, 128);
    }

    #[test]
    fn explicit_offsets_must_not_overlap() {
        let mut b = field("b", "long");
        b.offset = Some(4);
        let e = layout_struct(&StructSpec {
            name: "s".into(),
            align: None,
            is_union: false,
            fields: vec![field("a", "long"), b],
        })
        .unwrap_err();
        assert_eq!(e.key, "offset");
        assert_eq!(e.field.as_deref(), Some("b"));
    }

    #[test]
    fn unknown_types_name_the_way_out() {
        let e = layout_struct(&StructSpec {
            name: "s".into(),
            align: None,
            is_union: false,
            fields: vec![field("a", "struct foo")],
        })
        .unwrap_err();
        assert!(e.message.contains("give `size`"), "{e}");
    }
}
