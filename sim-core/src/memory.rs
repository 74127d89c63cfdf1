//! Resolved memory: struct types with byte offsets, instances with
//! addresses and home nodes, and the cache lines they cover.
//!
//! The layout rules that produce these numbers (C struct layout, per-CPU
//! area packing) live in the `models` crate; sim-core only uses the result.

/// A field of a struct type, already laid out.
///
/// A member of a nested struct or union is a field of its own, named by its
/// dotted path (`css.parent`); an array of structs gives each member one
/// field whose elements are a struct size apart (`stride_bytes`), indexed
/// where the array is written (`items[i].next`). A place takes one index,
/// so a path has at most one array along it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// The dotted path from the struct (`usage`, `css.parent`).
    pub name: String,
    pub offset_bytes: u32,
    /// Size of one element.
    pub size_bytes: u32,
    /// Number of elements (1 for a scalar field).
    pub count: u32,
    /// Distance between elements: `size_bytes` for an array field, the
    /// struct size for a member of an array of structs.
    pub stride_bytes: u32,
    /// For an array (`count > 1`): how many path segments come before the
    /// index, so `items.next` with 1 is written `items[i].next`.
    pub index_after_segments: u32,
    /// A bitfield: its bits inside the storage unit that `offset_bytes` and
    /// `size_bytes` give, which it shares with the bitfields next to it.
    pub bits: Option<BitRange>,
}

/// Where a bitfield sits in its storage unit (little-endian, as x86 lays
/// bitfields out): `width` bits from bit `shift`. A load reads the unit and
/// takes these bits (unsigned); a store changes only them, so two bitfields
/// of one unit never clobber each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BitRange {
    pub shift: u32,
    pub width: u32,
}

impl BitRange {
    /// The bits of the unit that belong to the field.
    pub fn mask(self) -> i64 {
        let ones = if self.width >= 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        };
        ones.checked_shl(self.shift).unwrap_or(0) as i64
    }

    /// The field's value in a unit's value.
    pub fn extract(self, unit: i64) -> i64 {
        (((unit as u64) & self.mask() as u64) >> self.shift.min(63)) as i64
    }

    /// `unit` with the field's bits replaced by `value`'s low bits.
    pub fn insert(self, unit: i64, value: i64) -> i64 {
        let placed = ((value as u64).checked_shl(self.shift).unwrap_or(0)) as i64;
        (unit & !self.mask()) | (placed & self.mask())
    }

    /// `value` cut to the field's width, as the field will hold it.
    pub fn truncate(self, value: i64) -> i64 {
        self.extract(self.insert(0, value))
    }
}

impl FieldDef {
    /// A scalar field, or an array of `count` elements packed one after another.
    pub fn simple(name: &str, offset_bytes: u32, size_bytes: u32, count: u32) -> FieldDef {
        FieldDef {
            name: name.to_string(),
            offset_bytes,
            size_bytes,
            count,
            stride_bytes: size_bytes,
            index_after_segments: name.split('.').count() as u32,
            bits: None,
        }
    }

    /// Bytes from the first element's start to the last element's end.
    pub fn total_bytes(&self) -> u32 {
        if self.count == 0 {
            return 0;
        }
        (self.count - 1) * self.stride_bytes + self.size_bytes
    }

    /// The byte ranges, relative to the struct, that the elements cover.
    pub fn element_ranges(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.count).map(move |k| {
            let start = self.offset_bytes + k * self.stride_bytes;
            (start, start + self.size_bytes)
        })
    }

    /// The field as a script writes it, with `index` where the array's
    /// index goes: `items[i].next`, `vals[i]`, `css.parent`.
    pub fn written(&self, index: &str) -> String {
        if self.count <= 1 {
            return self.name.clone();
        }
        let mut out = String::new();
        for (n, segment) in self.name.split('.').enumerate() {
            if n > 0 {
                out.push('.');
            }
            out.push_str(segment);
            if n as u32 + 1 == self.index_after_segments {
                out.push_str(&format!("[{index}]"));
            }
        }
        out
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructDef {
    pub name: String,
    pub size_bytes: u32,
    pub align_bytes: u32,
    pub fields: Vec<FieldDef>,
}

impl StructDef {
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InstanceKind {
    /// One or more (an array) instances, homed on one node.
    Global,
    /// One per CPU, homed on that CPU's node; element `c` is CPU `c`'s.
    PerCpu,
    /// One per NUMA node, homed on it; element `n` is node `n`'s.
    PerNode,
}

impl InstanceKind {
    pub fn name(self) -> &'static str {
        match self {
            InstanceKind::Global => "global",
            InstanceKind::PerCpu => "per-cpu",
            InstanceKind::PerNode => "per-node",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceDef {
    pub name: String,
    pub struct_index: usize,
    pub kind: InstanceKind,
    /// Base address of each element.
    pub element_addresses: Vec<u64>,
    /// Home node of each element.
    pub element_homes: Vec<u32>,
}

/// All of simulated memory: a compact address space starting at 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLayout {
    pub structs: Vec<StructDef>,
    pub instances: Vec<InstanceDef>,
    /// Bytes of the address space (a multiple of the coherence unit).
    pub total_bytes: u64,
    /// Size of the unit the protocol tracks: a cache line (the adjacent-line
    /// prefetcher fetches a line's buddy as a line of its own).
    pub unit_bytes: u32,
    /// Cache line size, for reports.
    pub line_size_bytes: u32,
    /// Home node of each coherence unit.
    pub unit_homes: Vec<u32>,
}

impl MemoryLayout {
    #[inline]
    pub fn unit_of(&self, address: u64) -> usize {
        // The unit is a power of two (a line): a shift, not a division, on
        // the hot path.
        (address >> self.unit_bytes.trailing_zeros()) as usize
    }
    pub fn unit_count(&self) -> usize {
        self.unit_homes.len()
    }
    pub fn instance_index(&self, name: &str) -> Option<usize> {
        self.instances.iter().position(|i| i.name == name)
    }
    pub fn struct_of(&self, instance: usize) -> &StructDef {
        &self.structs[self.instances[instance].struct_index]
    }

    /// Names the field at an address, for reports: `inst[3].field[1]`.
    pub fn describe_address(&self, address: u64) -> String {
        for inst in &self.instances {
            let def = &self.structs[inst.struct_index];
            for (element, &base) in inst.element_addresses.iter().enumerate() {
                if address < base || address >= base + def.size_bytes as u64 {
                    continue;
                }
                let offset = (address - base) as u32;
                let element_text = if inst.element_addresses.len() > 1 {
                    format!("[{element}]")
                } else {
                    String::new()
                };
                for field in &def.fields {
                    if let Some(k) = field
                        .element_ranges()
                        .position(|(start, end)| offset >= start && offset < end)
                    {
                        return format!(
                            "{}{}.{}",
                            inst.name,
                            element_text,
                            field.written(&k.to_string())
                        );
                    }
                }
                return format!("{}{}+{}", inst.name, element_text, offset);
            }
        }
        format!("{address:#x}")
    }
}
