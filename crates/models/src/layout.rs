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

use sim_core::memory::{FieldDef, InstanceDef, InstanceKind, MemoryLayout, StructDef};
use sim_core::topology::Topology;
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
        "char" | "signed char" | "unsigned char" | "u8" | "s8" | "i8" | "bool" | "_Bool" => (1, 1),
        "short" | "unsigned short" | "u16" | "s16" | "i16" => (2, 2),
        "int" | "unsigned int" | "unsigned" | "u32" | "s32" | "i32" | "atomic_t" | "spinlock_t"
        | "raw_spinlock_t" | "arch_spinlock_t" | "refcount_t" | "gfp_t" => (4, 4),
        "long" | "unsigned long" | "long long" | "unsigned long long" | "u64" | "s64" | "i64"
        | "size_t" | "ssize_t" | "atomic_long_t" | "atomic64_t" | "pointer" | "ptr"
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
    /// A C type name, resolved by [`c_type`].
    Named(String),
    /// Raw bytes (padding, or a type the table does not know).
    Bytes(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    pub name: String,
    pub ty: FieldType,
    pub count: u32,
    pub align: Option<u32>,
    pub offset: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructSpec {
    pub name: String,
    pub align: Option<u32>,
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
pub const MAX_STRUCT_BYTES: u64 = 1 << 20;
pub const MAX_MEMORY_BYTES: u64 = 256 << 20;
pub const MAX_INSTANCE_COUNT: u32 = 1 << 16;

fn round_up(value: u64, align: u64) -> u64 {
    value.div_ceil(align) * align
}

/// Lays out one struct by C rules.
pub fn layout_struct(spec: &StructSpec) -> Result<StructDef, LayoutError> {
    let err = |field: Option<&str>, key: &'static str, message: String| LayoutError {
        owner: spec.name.clone(),
        field: field.map(str::to_string),
        key,
        message,
    };
    let mut offset: u64 = 0;
    let mut struct_align: u64 = 1;
    let mut fields = Vec::new();
    for f in &spec.fields {
        let (size, natural_align) = match &f.ty {
            FieldType::Named(name) => match c_type(name) {
                Some(t) => t,
                None => {
                    return Err(err(
                        Some(&f.name),
                        "type",
                        format!(
                            "unknown C type `{name}`; give `size` (and `align`) in bytes instead"
                        ),
                    ))
                }
            },
            FieldType::Bytes(size) => {
                // Raw bytes align like the largest power of two that divides
                // them, up to 8, as a member of that size would.
                let natural = (*size).max(1);
                (*size, (1u32 << natural.trailing_zeros()).min(8))
            }
        };
        let align = f.align.unwrap_or(natural_align) as u64;
        if !align.is_power_of_two() {
            return Err(err(
                Some(&f.name),
                "align",
                format!("{align} is not a power of two"),
            ));
        }
        if f.count == 0 || f.count > MAX_INSTANCE_COUNT {
            return Err(err(
                Some(&f.name),
                "count",
                format!("{} is out of range 1..={MAX_INSTANCE_COUNT}", f.count),
            ));
        }
        let start = match f.offset {
            Some(explicit) => {
                let explicit = explicit as u64;
                if explicit < offset {
                    return Err(err(
                        Some(&f.name),
                        "offset",
                        format!(
                            "offset {explicit} overlaps the previous field, which ends at {offset}; \
                             offsets must increase in field order"
                        ),
                    ));
                }
                explicit
            }
            None => round_up(offset, align),
        };
        let bytes = size as u64 * f.count as u64;
        offset = start + bytes;
        if offset > MAX_STRUCT_BYTES {
            return Err(err(
                Some(&f.name),
                "size",
                format!("the struct would exceed {MAX_STRUCT_BYTES} bytes"),
            ));
        }
        struct_align = struct_align.max(align);
        fields.push(FieldDef {
            name: f.name.clone(),
            offset_bytes: start as u32,
            size_bytes: size,
            count: f.count,
        });
    }
    if let Some(a) = spec.align {
        if !a.is_power_of_two() {
            return Err(err(None, "align", format!("{a} is not a power of two")));
        }
        struct_align = struct_align.max(a as u64);
    }
    let size = round_up(offset.max(1), struct_align);
    Ok(StructDef {
        name: spec.name.clone(),
        size_bytes: size as u32,
        align_bytes: struct_align as u32,
        fields,
    })
}

/// Lays out every struct and places every instance for a machine.
pub fn build_memory(
    topology: &Topology,
    structs: &[StructSpec],
    instances: &[InstanceSpec],
) -> Result<MemoryLayout, LayoutError> {
    let defs = structs
        .iter()
        .map(layout_struct)
        .collect::<Result<Vec<_>, _>>()?;
    let unit = topology.coherence_unit_bytes() as u64;
    let line = topology.line_size_bytes() as u64;
    let mut placed: Vec<InstanceDef> = Vec::new();
    let mut next: u64 = 0;
    let mut homes_by_range: Vec<(u64, u64, u32)> = Vec::new();
    let struct_index = |inst: &InstanceSpec| -> Result<usize, LayoutError> {
        defs.iter()
            .position(|d| d.name == inst.struct_name)
            .ok_or_else(|| LayoutError {
                owner: inst.name.clone(),
                field: None,
                key: "struct",
                message: format!("unknown struct `{}`", inst.struct_name),
            })
    };
    let check_size = |owner: &str, end: u64| -> Result<(), LayoutError> {
        if end > MAX_MEMORY_BYTES {
            return Err(LayoutError {
                owner: owner.to_string(),
                field: None,
                key: "count",
                message: format!(
                    "the scenario's memory would exceed {} MiB",
                    MAX_MEMORY_BYTES >> 20
                ),
            });
        }
        Ok(())
    };

    // Globals and per-node objects: each allocation starts a fresh unit.
    for inst in instances {
        let s = struct_index(inst)?;
        let def = &defs[s];
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
                let base = round_up(next, unit.max(def.align_bytes as u64));
                let addresses: Vec<u64> = (0..inst.count as u64)
                    .map(|e| base + e * def.size_bytes as u64)
                    .collect();
                next = base + inst.count as u64 * def.size_bytes as u64;
                check_size(&inst.name, next)?;
                homes_by_range.push((base, next, inst.node));
                placed.push(InstanceDef {
                    name: inst.name.clone(),
                    struct_index: s,
                    kind: inst.kind,
                    element_addresses: addresses,
                    element_homes: vec![inst.node; inst.count as usize],
                });
            }
            InstanceKind::PerNode => {
                let mut addresses = Vec::new();
                let mut homes = Vec::new();
                for node in 0..topology.node_count() {
                    let base = round_up(next, unit.max(def.align_bytes as u64));
                    next = base + def.size_bytes as u64;
                    check_size(&inst.name, next)?;
                    homes_by_range.push((base, next, node));
                    addresses.push(base);
                    homes.push(node);
                }
                placed.push(InstanceDef {
                    name: inst.name.clone(),
                    struct_index: s,
                    kind: inst.kind,
                    element_addresses: addresses,
                    element_homes: homes,
                });
            }
            InstanceKind::PerCpu => placed.push(InstanceDef {
                name: inst.name.clone(),
                struct_index: s,
                kind: inst.kind,
                element_addresses: Vec::new(),
                element_homes: Vec::new(),
            }),
        }
    }

    // Per-CPU areas: one per CPU, in CPU order, each starting on a fresh
    // unit; shared-aligned instances first, each on whole lines, then the
    // others packed in declaration order.
    let per_cpu: Vec<usize> = instances
        .iter()
        .enumerate()
        .filter(|(_, i)| i.kind == InstanceKind::PerCpu)
        .map(|(n, _)| n)
        .collect();
    if !per_cpu.is_empty() {
        let mut offsets = vec![0u64; instances.len()];
        let mut area: u64 = 0;
        for &n in per_cpu.iter().filter(|&&n| instances[n].shared_aligned) {
            let def = &defs[struct_index(&instances[n])?];
            let align = line.max(def.align_bytes as u64);
            area = round_up(area, align);
            offsets[n] = area;
            area = round_up(area + def.size_bytes as u64, line);
        }
        for &n in per_cpu.iter().filter(|&&n| !instances[n].shared_aligned) {
            let def = &defs[struct_index(&instances[n])?];
            area = round_up(area, def.align_bytes as u64);
            offsets[n] = area;
            area += def.size_bytes as u64;
        }
        let area_bytes = round_up(area.max(1), unit);
        let first = round_up(next, unit);
        for cpu in 0..topology.cpu_count() as u64 {
            let base = first + cpu * area_bytes;
            let node = topology.node_of(cpu as u32);
            homes_by_range.push((base, base + area_bytes, node));
            for &n in &per_cpu {
                placed[n].element_addresses.push(base + offsets[n]);
                placed[n].element_homes.push(node);
            }
        }
        next = first + topology.cpu_count() as u64 * area_bytes;
        check_size("per-cpu areas", next)?;
    }

    let total = round_up(next.max(unit), unit);
    let mut unit_homes = vec![0u32; (total / unit) as usize];
    for &(start, end, node) in &homes_by_range {
        if end > start {
            // A unit shared by two allocations keeps the first one's home.
            for u in (start / unit)..=((end - 1) / unit) {
                if u * unit >= start {
                    unit_homes[u as usize] = node;
                }
            }
        }
    }
    Ok(MemoryLayout {
        structs: defs,
        instances: placed,
        total_bytes: total,
        unit_bytes: unit as u32,
        line_size_bytes: line as u32,
        unit_homes,
    })
}

/// A pahole-style listing of a laid-out struct, with holes and line breaks.
pub fn describe_struct(def: &StructDef, line_size_bytes: u32) -> String {
    let mut out = format!("struct {} {{\n", def.name);
    let mut end = 0u32;
    for f in &def.fields {
        if f.offset_bytes > end {
            out.push_str(&format!(
                "\t/* XXX {} bytes hole */\n",
                f.offset_bytes - end
            ));
        }
        if f.offset_bytes / line_size_bytes != end.saturating_sub(1) / line_size_bytes
            && f.offset_bytes > 0
            && f.offset_bytes % line_size_bytes == 0
        {
            out.push_str(&format!(
                "\t/* --- cacheline {} boundary ({} bytes) --- */\n",
                f.offset_bytes / line_size_bytes,
                f.offset_bytes
            ));
        }
        let array = if f.count > 1 {
            format!("[{}]", f.count)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "\t{}{};\t/* {:5} {:5} */\n",
            f.name,
            array,
            f.offset_bytes,
            f.total_bytes()
        ));
        end = f.offset_bytes + f.total_bytes();
    }
    if def.size_bytes > end {
        out.push_str(&format!("\t/* padding: {} */\n", def.size_bytes - end));
    }
    out.push_str(&format!(
        "\t/* size: {}, cachelines: {}, align: {} */\n}};\n",
        def.size_bytes,
        def.size_bytes.div_ceil(line_size_bytes),
        def.align_bytes
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, ty: &str) -> FieldSpec {
        FieldSpec {
            name: name.into(),
            ty: FieldType::Named(ty.into()),
            count: 1,
            align: None,
            offset: None,
        }
    }

    #[test]
    fn c_rules_make_holes_and_tail_padding() {
        let def = layout_struct(&StructSpec {
            name: "s".into(),
            align: None,
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
            fields: vec![field("a", "struct foo")],
        })
        .unwrap_err();
        assert!(e.message.contains("give `size`"), "{e}");
    }
}
