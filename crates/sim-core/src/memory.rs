//! Resolved memory: struct types with byte offsets, instances with
//! addresses and home nodes, and the cache lines they cover.
//!
//! The layout rules that produce these numbers (C struct layout, per-CPU
//! area packing) live in the `models` crate; sim-core only uses the result.

/// A field of a struct type, already laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDef {
    pub name: String,
    pub offset_bytes: u32,
    /// Size of one element.
    pub size_bytes: u32,
    /// Number of elements (1 for a scalar field).
    pub count: u32,
}

impl FieldDef {
    pub fn total_bytes(&self) -> u32 {
        self.size_bytes * self.count
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
    /// Size of the unit the protocol tracks (a line, or a line pair).
    pub unit_bytes: u32,
    /// Cache line size, for reports.
    pub line_size_bytes: u32,
    /// Home node of each coherence unit.
    pub unit_homes: Vec<u32>,
}

impl MemoryLayout {
    #[inline]
    pub fn unit_of(&self, address: u64) -> usize {
        // The unit is a power of two (a line or a line pair): a shift, not
        // a division, on the hot path.
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
                    if offset >= field.offset_bytes
                        && offset < field.offset_bytes + field.total_bytes()
                    {
                        let index = if field.count > 1 {
                            format!("[{}]", (offset - field.offset_bytes) / field.size_bytes)
                        } else {
                            String::new()
                        };
                        return format!("{}{}.{}{}", inst.name, element_text, field.name, index);
                    }
                }
                return format!("{}{}+{}", inst.name, element_text, offset);
            }
        }
        format!("{address:#x}")
    }
}
