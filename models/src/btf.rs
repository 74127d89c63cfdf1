//! Reading the kernel's BTF (BPF Type Format: `/sys/kernel/btf/vmlinux`,
//! or the `.BTF` section of a `vmlinux`) into struct specs.
//!
//! The format, as the kernel documents it (Documentation/bpf/btf.rst): a
//! 24-byte header (magic 0xeb9f, version 1, flags, the header's length, then
//! the offset and length of the type section and of the string section,
//! counted from the end of the header); the type section, a sequence of
//! 12-byte records (name offset, an info word holding the member count in
//! bits 0-15, the kind in bits 24-28 and a flag in bit 31, then a size or a
//! type id) each followed by its kind's data (an integer's encoding, an
//! array's element type and length, a struct's 12-byte members, an enum's
//! values, ...), numbered from 1 in order (0 is `void`); and the string
//! section, NUL-terminated names starting with the empty one. A struct
//! member gives its offset in bits, and with the kind flag set its
//! bitfield width in the top 8 bits. Both byte orders are read (the magic
//! tells which).
//!
//! BTF records sizes and offsets but no alignment, so the alignment of
//! every type is inferred as pahole infers it: a type's natural alignment
//! by the x86-64 rules (scalars their size, arrays their element's, structs
//! their largest member's), raised where a member sits past where that
//! would put it (`__aligned__(N)`: the cache line's 64 where that puts it
//! there, as `____cacheline_aligned` usually does, else the least that
//! does), lowered where a member sits before it (`__packed`), and the
//! struct's own raised when its size needs it. The struct spec then lays
//! out by [`crate::layout`] to exactly the offsets and sizes BTF gives,
//! which [`import`] checks.
//!
//! What the spec holds: members of a type [`c_type`] knows (by the name
//! the source wrote, typedef first: `atomic_long_t`, `spinlock_t`, `struct
//! list_head`) as that type; other scalars and function pointers as opaque
//! bytes labelled with their C type; every other struct or union, named or
//! anonymous, written out in place (as `pahole -E` expands it), except an
//! array of structs that would hold an array (a place takes one index),
//! which stays opaque; bitfields in their storage unit (the member's type,
//! at the multiple of its size that holds the bits, as pahole lists them);
//! members of no size (flexible and zero-length arrays, empty structs) are
//! left out, their alignment kept by the member after them or the struct.
//!
//! The reader is bounded: the data's size, the number of types, how deep
//! types nest and how many members an import writes out. Malformed BTF is a
//! [`BtfError`] naming the byte offset (from the start of the BTF data) of
//! the record or field at fault; no input panics.

use crate::layout::{
    c_type, drop_redundant_offsets, layout_structs, BitField, FieldSpec, FieldType, StructSpec,
    MAX_INSTANCE_COUNT, MAX_NESTING_DEPTH, MAX_STRUCT_BYTES,
};
use std::fmt;
use std::rc::Rc;

/// Largest BTF read (a whole kernel's is about 6 MB).
pub const MAX_BTF_BYTES: u64 = 64 << 20;
/// Most types one BTF may hold (a whole kernel has about 150 000).
pub const MAX_TYPES: usize = 1 << 20;
/// Deepest nesting of structs in structs (and of arrays and qualifiers in
/// one member's type).
pub const MAX_DEPTH: usize = MAX_NESTING_DEPTH;
/// Most members one import writes out, nested ones included.
pub const MAX_MEMBERS: usize = 1 << 16;

const HEADER_BYTES: usize = 24;
const RECORD_BYTES: usize = 12;
/// Qualifiers and typedefs followed from one type before giving up.
const MAX_CHAIN: usize = 64;

/// A problem in BTF data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtfError {
    /// Byte offset from the start of the BTF data of the record or field at
    /// fault; `None` for a problem of the request (no such struct).
    pub offset: Option<usize>,
    pub message: String,
}

impl fmt::Display for BtfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(at) => write!(f, "at byte {at}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for BtfError {}

fn fail<T>(offset: usize, message: impl Into<String>) -> Result<T, BtfError> {
    Err(BtfError {
        offset: Some(offset),
        message: message.into(),
    })
}

/// The kinds of BTF type, numbered as the format numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    Ptr,
    Array,
    Struct,
    Union,
    Enum,
    Fwd,
    Typedef,
    Volatile,
    Const,
    Restrict,
    Func,
    FuncProto,
    Var,
    Datasec,
    Float,
    DeclTag,
    TypeTag,
    Enum64,
}

impl Kind {
    fn from_number(n: u32) -> Option<Kind> {
        Some(match n {
            1 => Kind::Int,
            2 => Kind::Ptr,
            3 => Kind::Array,
            4 => Kind::Struct,
            5 => Kind::Union,
            6 => Kind::Enum,
            7 => Kind::Fwd,
            8 => Kind::Typedef,
            9 => Kind::Volatile,
            10 => Kind::Const,
            11 => Kind::Restrict,
            12 => Kind::Func,
            13 => Kind::FuncProto,
            14 => Kind::Var,
            15 => Kind::Datasec,
            16 => Kind::Float,
            17 => Kind::DeclTag,
            18 => Kind::TypeTag,
            19 => Kind::Enum64,
            _ => return None,
        })
    }

    /// Bytes of kind-specific data after the record, for `vlen` entries.
    fn data_bytes(self, vlen: usize) -> usize {
        match self {
            Kind::Int | Kind::Var | Kind::DeclTag => 4,
            Kind::Array => 12,
            Kind::Struct | Kind::Union | Kind::Datasec | Kind::Enum64 => 12 * vlen,
            Kind::Enum | Kind::FuncProto => 8 * vlen,
            _ => 0,
        }
    }

    /// Qualifiers and typedefs: a type that is another one's layout.
    fn is_modifier(self) -> bool {
        matches!(
            self,
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag
        )
    }
}

/// One type record.
#[derive(Clone, Copy, Debug)]
struct Record {
    /// Byte offset of the record in the data.
    at: usize,
    kind: Kind,
    name_off: u32,
    vlen: usize,
    kind_flag: bool,
    size_or_type: u32,
}

/// BTF data checked for its framing: the header, every record inside the
/// type section, every name inside the string section.
pub struct Btf<'a> {
    data: &'a [u8],
    big_endian: bool,
    /// Type id `i + 1` is `records[i]`.
    records: Vec<Record>,
    strings_at: usize,
    strings_len: usize,
}

/// Reads the framing of BTF data: its header, its type records and string
/// section. Types are checked further when a struct is imported.
pub fn parse(data: &[u8]) -> Result<Btf<'_>, BtfError> {
    let big_endian = byte_order(data)?;
    let mut btf = Btf {
        data,
        big_endian,
        records: Vec::new(),
        strings_at: 0,
        strings_len: 0,
    };
    if data[2] != 1 {
        return fail(
            2,
            format!("BTF version {}; only version 1 is defined", data[2]),
        );
    }
    let header_len = btf.u32_at(4) as usize;
    if header_len < HEADER_BYTES || header_len > data.len() {
        return fail(
            4,
            format!(
                "the header length is {header_len}; it must be at least {HEADER_BYTES} and \
                 within the data's {} bytes",
                data.len()
            ),
        );
    }
    let section = |field: usize, what: &str| -> Result<(usize, usize), BtfError> {
        let off = btf.u32_at(field) as usize;
        let len = btf.u32_at(field + 4) as usize;
        let start = header_len + off;
        match start.checked_add(len) {
            Some(end) if end <= data.len() => Ok((start, len)),
            _ => fail(
                field,
                format!(
                    "the {what} section (bytes {start} to {}) runs past the end of the data \
                     ({} bytes)",
                    start as u64 + len as u64,
                    data.len()
                ),
            ),
        }
    };
    let (types_at, types_len) = section(8, "type")?;
    let (strings_at, strings_len) = section(16, "string")?;
    if types_len % 4 != 0 || !(types_at - header_len).is_multiple_of(4) {
        return fail(
            8,
            format!(
                "the type section (offset {}, {types_len} bytes) is not 4-byte aligned",
                types_at - header_len
            ),
        );
    }
    if types_at < strings_at + strings_len && strings_at < types_at + types_len {
        return fail(16, "the string section overlaps the type section");
    }
    if strings_len == 0 || data[strings_at] != 0 {
        return fail(
            strings_at,
            "the string section must start with the empty name (a NUL byte)",
        );
    }
    if data[strings_at + strings_len - 1] != 0 {
        return fail(
            strings_at + strings_len - 1,
            "the string section does not end with a NUL byte",
        );
    }
    btf.strings_at = strings_at;
    btf.strings_len = strings_len;
    btf.read_records(types_at, types_at + types_len)?;
    Ok(btf)
}

/// Whether the data is big-endian, by its magic, once its size is within
/// bounds and holds a header.
fn byte_order(data: &[u8]) -> Result<bool, BtfError> {
    if data.len() as u64 > MAX_BTF_BYTES {
        return fail(
            0,
            format!(
                "the BTF is {} bytes, more than the {} MiB read",
                data.len(),
                MAX_BTF_BYTES >> 20
            ),
        );
    }
    if data.len() < HEADER_BYTES {
        return fail(
            0,
            format!(
                "the data is {} bytes, shorter than the {HEADER_BYTES}-byte BTF header",
                data.len()
            ),
        );
    }
    match (data[0], data[1]) {
        (0x9f, 0xeb) => Ok(false),
        (0xeb, 0x9f) => Ok(true),
        (a, b) => fail(
            0,
            format!(
                "expected the BTF magic 0xeb9f, found bytes {a:#04x} {b:#04x}: this is no \
                     BTF (/sys/kernel/btf/vmlinux is, and so is the `.BTF` section of a vmlinux)"
            ),
        ),
    }
}

impl Btf<'_> {
    /// Reads the type records in `types_at..end`, each checked to fit the
    /// type section and to name a string inside the string section.
    fn read_records(&mut self, types_at: usize, end: usize) -> Result<(), BtfError> {
        let strings_len = self.strings_len;
        let mut at = types_at;
        while at < end {
            let id = self.records.len() + 1;
            if id > MAX_TYPES {
                return fail(at, format!("more than {MAX_TYPES} types"));
            }
            if end - at < RECORD_BYTES {
                return fail(
                    at,
                    format!(
                        "type {id}: its record is cut off ({RECORD_BYTES} bytes needed, {} left in \
                         the type section)",
                        end - at
                    ),
                );
            }
            let name_off = self.u32_at(at);
            let info = self.u32_at(at + 4);
            let kind_number = (info >> 24) & 0x1f;
            let Some(kind) = Kind::from_number(kind_number) else {
                return fail(
                    at + 4,
                    format!("type {id}: unknown kind {kind_number} (the format defines 1 to 19)"),
                );
            };
            let vlen = (info & 0xffff) as usize;
            let record_end = at + RECORD_BYTES + kind.data_bytes(vlen);
            if record_end > end {
                return fail(
                    at,
                    format!(
                        "type {id}: its {} bytes of {kind:?} data run past the end of the type \
                         section (byte {end})",
                        record_end - at - RECORD_BYTES
                    ),
                );
            }
            if name_off as usize >= strings_len {
                return fail(
                    at,
                    format!(
                        "type {id}: its name starts at {name_off}, past the string section's \
                         {strings_len} bytes"
                    ),
                );
            }
            self.records.push(Record {
                at,
                kind,
                name_off,
                vlen,
                kind_flag: info >> 31 == 1,
                size_or_type: self.u32_at(at + 8),
            });
            at = record_end;
        }
        Ok(())
    }
}

impl<'a> Btf<'a> {
    /// The 4 bytes at `at`, in the data's byte order. Callers stay inside
    /// ranges `parse` checked.
    fn u32_at(&self, at: usize) -> u32 {
        let b = [
            self.data[at],
            self.data[at + 1],
            self.data[at + 2],
            self.data[at + 3],
        ];
        if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    }

    /// How many types the BTF has (ids 1 to this).
    pub fn type_count(&self) -> usize {
        self.records.len()
    }

    /// The name at `name_off` of the string section; `at` is where the
    /// offset was read, for errors.
    fn name(&self, name_off: u32, at: usize) -> Result<&'a str, BtfError> {
        let off = name_off as usize;
        if off >= self.strings_len {
            return fail(
                at,
                format!(
                    "a name at {off}, past the string section's {} bytes",
                    self.strings_len
                ),
            );
        }
        let start = self.strings_at + off;
        let tail = &self.data[start..self.strings_at + self.strings_len];
        // The section ends with a NUL (checked by `parse`).
        let len = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        std::str::from_utf8(&tail[..len]).map_err(|_| BtfError {
            offset: Some(start),
            message: "a name that is not UTF-8".into(),
        })
    }

    /// The record of type `id`; `at` is where the id was read.
    fn record(&self, id: u32, at: usize) -> Result<Record, BtfError> {
        match (id as usize)
            .checked_sub(1)
            .and_then(|i| self.records.get(i))
        {
            Some(r) => Ok(*r),
            None if id == 0 => fail(at, "a member of type void"),
            None => fail(
                at,
                format!(
                    "type id {id} does not exist (the BTF has {} types; a kernel module's BTF \
                     refers to the kernel's and cannot be read alone)",
                    self.records.len()
                ),
            ),
        }
    }

    /// Every struct and union with a name and at least one member, with
    /// its type id, in id order.
    pub fn structs(&self) -> Vec<(u32, String)> {
        self.records
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r.kind, Kind::Struct | Kind::Union) && r.vlen > 0)
            .filter_map(|(i, r)| {
                let name = self.name(r.name_off, r.at).ok()?;
                (!name.is_empty()).then(|| (i as u32 + 1, name.to_string()))
            })
            .collect()
    }

    /// The first struct (or, failing that, union) named `name`.
    pub fn find_struct(&self, name: &str) -> Option<u32> {
        let named = |kind: Kind| {
            self.records.iter().position(|r| {
                r.kind == kind && self.name(r.name_off, r.at).is_ok_and(|n| n == name)
            })
        };
        named(Kind::Struct)
            .or_else(|| named(Kind::Union))
            .map(|i| i as u32 + 1)
    }

    /// `type` with a member's type, as C writes it, for labels and
    /// messages; a broken reference shows as `?`.
    fn type_name(&self, id: u32, depth: usize) -> String {
        if id == 0 {
            return "void".into();
        }
        let Ok(r) = self.record(id, 0) else {
            return "?".into();
        };
        if depth > MAX_CHAIN {
            return "?".into();
        }
        let name = self.name(r.name_off, r.at).unwrap_or("?");
        let tagged = |tag: &str| {
            if name.is_empty() {
                tag.to_string()
            } else {
                format!("{tag} {name}")
            }
        };
        match r.kind {
            Kind::Int | Kind::Float | Kind::Typedef => name.to_string(),
            Kind::Struct => tagged("struct"),
            Kind::Union => tagged("union"),
            Kind::Enum | Kind::Enum64 => tagged("enum"),
            Kind::Fwd => tagged(if r.kind_flag { "union" } else { "struct" }),
            Kind::Const => format!("const {}", self.type_name(r.size_or_type, depth + 1)),
            Kind::Volatile => format!("volatile {}", self.type_name(r.size_or_type, depth + 1)),
            Kind::Restrict | Kind::TypeTag => self.type_name(r.size_or_type, depth + 1),
            Kind::Ptr => {
                let target = self.record(r.size_or_type, 0).ok();
                if let Some(t) = target.filter(|t| t.kind == Kind::FuncProto) {
                    self.function_name(&t, "(*)", depth + 1)
                } else {
                    let inner = self.type_name(r.size_or_type, depth + 1);
                    if inner.ends_with('*') {
                        format!("{inner}*")
                    } else {
                        format!("{inner} *")
                    }
                }
            }
            Kind::Array => {
                let elem = self.u32_at(r.at + RECORD_BYTES);
                let n = self.u32_at(r.at + RECORD_BYTES + 8);
                format!("{}[{n}]", self.type_name(elem, depth + 1))
            }
            Kind::FuncProto => self.function_name(&r, "", depth + 1),
            Kind::Func | Kind::Var | Kind::Datasec | Kind::DeclTag => name.to_string(),
        }
    }

    /// `RET (*)(ARGS)` for a function prototype.
    fn function_name(&self, proto: &Record, declarator: &str, depth: usize) -> String {
        let ret = self.type_name(proto.size_or_type, depth + 1);
        let args: Vec<String> = (0..proto.vlen.min(16))
            .map(|i| {
                let t = self.u32_at(proto.at + RECORD_BYTES + 8 * i + 4);
                if t == 0 {
                    "...".to_string()
                } else {
                    self.type_name(t, depth + 1)
                }
            })
            .collect();
        let more = if proto.vlen > 16 { ", ..." } else { "" };
        format!("{ret} {declarator}({}{more})", args.join(", "))
    }
}

/// A member of a struct as BTF lays it out.
#[derive(Clone, Debug)]
struct Member {
    name: String,
    /// Byte offset of its record, for errors.
    at: usize,
    /// The element type after arrays (qualifiers and typedefs kept).
    element: u32,
    /// Typedef names met from the member's type down to its layout, then
    /// the layout type's own name: the names the source may use for it.
    names: Vec<String>,
    /// Kind of the element's layout type.
    kind: Kind,
    /// The element's layout type.
    layout_type: u32,
    /// Elements (all array dimensions multiplied); 1 for no array.
    count: u64,
    element_bytes: u64,
    /// Byte offset; a bitfield's storage unit's.
    offset: u64,
    bit_field: Option<BitField>,
    /// The element's alignment as its type gives it.
    natural_align: u32,
    /// The alignment the member must have to sit where it does.
    align: u32,
}

impl Member {
    fn bytes(&self) -> u64 {
        self.element_bytes * self.count
    }

    /// The first byte after its bits (for a bitfield) or its bytes.
    fn used_end(&self) -> u64 {
        match self.bit_field {
            Some(b) => self.offset + (u64::from(b.bit_offset) + u64::from(b.bits)).div_ceil(8),
            None => self.offset + self.bytes(),
        }
    }
}

/// How errors name member `i`: by its name, or as anonymous.
fn member_label(i: usize, name: &str) -> String {
    if name.is_empty() {
        format!("member {i} (anonymous)")
    } else {
        format!("member `{name}`")
    }
}

/// Places bitfield `member` (`bits` wide from bit `bit_offset` of a
/// struct of `size` bytes) in its storage unit; an error says why it
/// fits none, naming the member as `who`.
fn place_bit_field(
    member: &mut Member,
    bit_offset: u64,
    bits: u32,
    size: u64,
    who: &str,
) -> Result<(), String> {
    let element_bytes = member.element_bytes;
    let unit_bits = element_bytes * 8;
    if u64::from(bits) > unit_bits {
        return Err(format!(
            "{who} is {bits} bits wide, wider than its {element_bytes}-byte type"
        ));
    }
    // The storage unit: the multiple of the type's size holding
    // the bits (as pahole lists it), else the byte they start
    // in (a packed struct).
    let mut unit = bit_offset / unit_bits * element_bytes;
    let mut in_unit = bit_offset - unit * 8;
    if in_unit + u64::from(bits) > unit_bits {
        unit = bit_offset / 8;
        in_unit = bit_offset % 8;
        if in_unit + u64::from(bits) > unit_bits {
            return Err(format!(
                "{who} (bits {bit_offset} to {}) fits in no {element_bytes}-byte storage unit",
                bit_offset + u64::from(bits)
            ));
        }
    }
    if unit + element_bytes > size {
        // A packed struct's last bits: pahole lists the type's
        // whole unit, past the struct's end; a simulated unit
        // must stay inside (a store writes all of it back), so
        // it is the smallest integer that holds the bits, from
        // where pahole starts the unit or else from their byte.
        let fits = |unit: u64, in_unit: u64| {
            [1u64, 2, 4, 8]
                .into_iter()
                .find(|&b| in_unit + u64::from(bits) <= b * 8 && unit + b <= size)
        };
        let mut found = fits(unit, in_unit);
        if found.is_none() {
            unit = bit_offset / 8;
            in_unit = bit_offset % 8;
            found = fits(unit, in_unit);
        }
        let Some(bytes) = found else {
            return Err(format!(
                "the bits of {who} (bits {bit_offset} to {}) end past the struct's {size} bytes",
                bit_offset + u64::from(bits)
            ));
        };
        member.element_bytes = bytes;
        member.natural_align = member.natural_align.min(bytes as u32);
    }
    member.offset = unit;
    member.bit_field = Some(BitField {
        bit_offset: in_unit as u32,
        bits,
    });
    Ok(())
}

/// A struct or union as BTF lays it out, with its inferred alignment.
#[derive(Debug)]
struct StructInfo {
    name: String,
    at: usize,
    is_union: bool,
    size: u64,
    /// The struct's alignment (what a member of its type aligns to).
    align: u32,
    members: Vec<Member>,
}

/// Turns the structs of one BTF into specs, remembering what it inferred
/// of each type, so importing many structs reads each type once.
pub struct Importer<'b, 'a> {
    btf: &'b Btf<'a>,
    infos: Vec<Option<Rc<StructInfo>>>,
    in_progress: Vec<bool>,
}

/// Where a member's type leads: its layout type and the names met on the way.
struct Resolved {
    id: u32,
    record: Record,
    names: Vec<String>,
}

fn round_up(value: u64, align: u64) -> u64 {
    value.div_ceil(align) * align
}

/// The largest power of two dividing `value` (any power for 0: `cap`).
fn largest_power_dividing(value: u64, cap: u32) -> u32 {
    if value == 0 {
        return cap;
    }
    (1u64 << value.trailing_zeros().min(31)).min(u64::from(cap)) as u32
}

impl<'b, 'a> Importer<'b, 'a> {
    pub fn new(btf: &'b Btf<'a>) -> Self {
        Importer {
            btf,
            infos: vec![None; btf.records.len() + 1],
            in_progress: vec![false; btf.records.len() + 1],
        }
    }

    /// Follows typedefs and qualifiers from `id` (read at `at`) to the
    /// type that gives the layout.
    fn resolve(&self, id: u32, at: usize) -> Result<Resolved, BtfError> {
        let mut names = Vec::new();
        let mut id = id;
        let mut from = at;
        for _ in 0..MAX_CHAIN {
            let r = self.btf.record(id, from)?;
            if r.kind == Kind::Typedef {
                names.push(self.btf.name(r.name_off, r.at)?.to_string());
            }
            if !r.kind.is_modifier() {
                return Ok(Resolved {
                    id,
                    record: r,
                    names,
                });
            }
            from = r.at + 8;
            id = r.size_or_type;
        }
        fail(
            at,
            format!("type {id}: more than {MAX_CHAIN} typedefs and qualifiers in a row (a loop?)"),
        )
    }

    /// Size and alignment of type `id` (read at `at`).
    fn size_align(&mut self, id: u32, at: usize, depth: usize) -> Result<(u64, u32), BtfError> {
        if depth > MAX_DEPTH {
            return fail(at, format!("types nest more than {MAX_DEPTH} deep"));
        }
        let t = self.resolve(id, at)?;
        let r = t.record;
        let name = || self.btf.type_name(t.id, 0);
        let sized = |what: &str, size: u32, allowed: &[u32]| -> Result<(u64, u32), BtfError> {
            if allowed.contains(&size) {
                // x86-64: a scalar aligns to its size.
                Ok((u64::from(size), size))
            } else {
                fail(
                    r.at + 8,
                    format!(
                        "type {}: {what} `{}` of {size} bytes; {what}s have {}",
                        t.id,
                        name(),
                        allowed
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            }
        };
        match r.kind {
            Kind::Int => {
                let encoding = self.btf.u32_at(r.at + RECORD_BYTES);
                let bits = encoding & 0xff;
                let bit_offset = (encoding >> 16) & 0xff;
                if bits + bit_offset > r.size_or_type.saturating_mul(8) {
                    return fail(
                        r.at + RECORD_BYTES,
                        format!(
                            "type {}: integer `{}` of {} bytes claims bits {bit_offset} to {}",
                            t.id,
                            name(),
                            r.size_or_type,
                            bit_offset + bits
                        ),
                    );
                }
                sized("integer", r.size_or_type, &[1, 2, 4, 8, 16])
            }
            Kind::Enum | Kind::Enum64 => sized("enum", r.size_or_type, &[1, 2, 4, 8]),
            Kind::Float => sized("float", r.size_or_type, &[2, 4, 8, 16]),
            // x86-64: pointers are 8 bytes.
            Kind::Ptr => Ok((8, 8)),
            Kind::Array => {
                let element = self.btf.u32_at(r.at + RECORD_BYTES);
                let count = self.btf.u32_at(r.at + RECORD_BYTES + 8);
                let (size, align) = self.size_align(element, r.at + RECORD_BYTES, depth + 1)?;
                let total = size.saturating_mul(u64::from(count));
                if total > MAX_STRUCT_BYTES {
                    return fail(
                        r.at + RECORD_BYTES + 8,
                        format!(
                            "type {}: an array of {count} elements of {size} bytes, larger than \
                             {MAX_STRUCT_BYTES} bytes",
                            t.id
                        ),
                    );
                }
                Ok((total, align))
            }
            Kind::Struct | Kind::Union => {
                let info = self.struct_info(t.id, depth + 1)?;
                Ok((info.size, info.align))
            }
            Kind::Fwd => fail(
                at,
                format!(
                    "type {}: `{}` is only declared here (a forward declaration); its layout is \
                     not in this BTF",
                    t.id,
                    name()
                ),
            ),
            Kind::FuncProto | Kind::Func | Kind::Var | Kind::Datasec | Kind::DeclTag => fail(
                at,
                format!(
                    "type {}: a {:?} is no data type a member can have",
                    t.id, r.kind
                ),
            ),
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag => {
                unreachable!("resolve follows modifiers")
            }
        }
    }

    /// The layout of struct or union `id`, checked and with its alignment
    /// inferred.
    fn struct_info(&mut self, id: u32, depth: usize) -> Result<Rc<StructInfo>, BtfError> {
        let index = id as usize;
        if let Some(Some(info)) = self.infos.get(index) {
            return Ok(info.clone());
        }
        let r = self.btf.record(id, 0)?;
        let name = self.btf.name(r.name_off, r.at)?.to_string();
        let shown = self.btf.type_name(id, 0);
        if depth > MAX_DEPTH {
            return fail(
                r.at,
                format!("type {id}: `{shown}` nests more than {MAX_DEPTH} structs deep"),
            );
        }
        if self.in_progress[index] {
            return fail(r.at, format!("type {id}: `{shown}` contains itself"));
        }
        self.in_progress[index] = true;
        let info = self.read_struct(id, r, name, &shown, depth);
        self.in_progress[index] = false;
        let info = Rc::new(info?);
        self.infos[index] = Some(info.clone());
        Ok(info)
    }

    fn read_struct(
        &mut self,
        id: u32,
        r: Record,
        name: String,
        shown: &str,
        depth: usize,
    ) -> Result<StructInfo, BtfError> {
        let is_union = r.kind == Kind::Union;
        let size = u64::from(r.size_or_type);
        if size > MAX_STRUCT_BYTES {
            return fail(
                r.at + 8,
                format!(
                    "type {id}: `{shown}` is {size} bytes; a simulated struct has at most \
                     {MAX_STRUCT_BYTES}"
                ),
            );
        }
        let mut members: Vec<Member> = Vec::with_capacity(r.vlen);
        let mut previous_end_bits = 0u64;
        for i in 0..r.vlen {
            let member = self.read_member(id, r, i, shown, depth)?;
            let at = member.at;
            let shown_member = member_label(i, &member.name);
            if member.used_end() > size {
                return fail(
                    at + 8,
                    format!(
                        "type {id}: {shown_member} of `{shown}` ends at byte {}, past the \
                         struct's {size} bytes",
                        member.used_end()
                    ),
                );
            }
            let first_bit =
                member.offset * 8 + member.bit_field.map_or(0, |b| u64::from(b.bit_offset));
            if is_union {
                if member.offset != 0 {
                    return fail(
                        at + 8,
                        format!(
                            "type {id}: {shown_member} of `{shown}` is at byte {}; the members \
                             of a union start at 0",
                            member.offset
                        ),
                    );
                }
            } else if first_bit < previous_end_bits && member.bytes() > 0 {
                return fail(
                    at + 8,
                    format!(
                        "type {id}: {shown_member} of `{shown}` starts at bit {first_bit}, \
                         inside the member before it (which ends at bit {previous_end_bits}); \
                         struct members do not overlap and come in order"
                    ),
                );
            }
            if !is_union && member.bytes() > 0 {
                previous_end_bits = match member.bit_field {
                    Some(b) => member.offset * 8 + u64::from(b.bit_offset) + u64::from(b.bits),
                    None => member.used_end() * 8,
                };
            }
            if member.name.is_empty() && !matches!(member.kind, Kind::Struct | Kind::Union) {
                return fail(
                    at,
                    format!(
                        "type {id}: {shown_member} of `{shown}` has no name and is no struct or \
                         union"
                    ),
                );
            }
            members.push(member);
        }
        let align = infer_alignment(&mut members, size, is_union).ok_or_else(|| BtfError {
            offset: Some(r.at + 8),
            message: format!(
                "type {id}: `{shown}` is {size} bytes, which no alignment of its members makes \
                 by C rules"
            ),
        })?;
        Ok(StructInfo {
            name,
            at: r.at,
            is_union,
            size,
            align,
            members,
        })
    }

    /// Member `i` of struct or union `id` (record `r`, `shown` in
    /// errors): its type down through arrays to the element, and its
    /// place, a bitfield's storage unit found.
    fn read_member(
        &mut self,
        id: u32,
        r: Record,
        i: usize,
        shown: &str,
        depth: usize,
    ) -> Result<Member, BtfError> {
        let at = r.at + RECORD_BYTES + RECORD_BYTES * i;
        let member_name = self.btf.name(self.btf.u32_at(at), at)?.to_string();
        let shown_member = member_label(i, &member_name);
        let type_id = self.btf.u32_at(at + 4);
        let raw_offset = self.btf.u32_at(at + 8);
        let (mut bit_offset, mut bits) = if r.kind_flag {
            (u64::from(raw_offset & 0x00ff_ffff), raw_offset >> 24)
        } else {
            (u64::from(raw_offset), 0)
        };
        // Arrays down to the element.
        let mut element = type_id;
        let mut count: u64 = 1;
        let mut from = at + 4;
        let mut resolved = self.resolve(element, from)?;
        let mut hops = 0;
        while resolved.record.kind == Kind::Array {
            hops += 1;
            if hops > MAX_CHAIN {
                return fail(from, format!("{shown_member}: arrays nest too deep"));
            }
            let a = resolved.record;
            count = count.saturating_mul(u64::from(self.btf.u32_at(a.at + RECORD_BYTES + 8)));
            element = self.btf.u32_at(a.at + RECORD_BYTES);
            from = a.at + RECORD_BYTES;
            resolved = self.resolve(element, from)?;
        }
        let (element_bytes, natural_align) = self.size_align(element, from, depth)?;
        let kind = resolved.record.kind;
        // Old-style bitfields: the width and shift in the integer type.
        if !r.kind_flag && kind == Kind::Int && count == 1 {
            let encoding = self.btf.u32_at(resolved.record.at + RECORD_BYTES);
            let int_bits = encoding & 0xff;
            let int_shift = (encoding >> 16) & 0xff;
            if u64::from(int_bits) != element_bytes * 8 || int_shift != 0 {
                bits = int_bits;
                bit_offset += u64::from(int_shift);
            }
        }
        let mut names = resolved.names.clone();
        let own = self.btf.type_name(resolved.id, 0);
        if !own.is_empty() {
            names.push(own);
        }
        let mut member = Member {
            name: member_name,
            at,
            element,
            names,
            kind,
            layout_type: resolved.id,
            count,
            element_bytes,
            offset: bit_offset / 8,
            bit_field: None,
            natural_align,
            align: natural_align,
        };
        if bits > 0 {
            if !matches!(kind, Kind::Int | Kind::Enum | Kind::Enum64) || count != 1 {
                return fail(
                    at + 8,
                    format!(
                        "type {id}: {shown_member} of `{shown}` is a bitfield of `{}`, \
                         which is no integer or enum",
                        self.btf.type_name(type_id, 0)
                    ),
                );
            }
            let size = u64::from(r.size_or_type);
            let who = format!("{shown_member} of `{shown}`");
            place_bit_field(&mut member, bit_offset, bits, size, &who).map_err(|message| {
                BtfError {
                    offset: Some(at + 8),
                    message: format!("type {id}: {message}"),
                }
            })?;
        } else if bit_offset % 8 != 0 {
            return fail(
                at + 8,
                format!(
                    "type {id}: {shown_member} of `{shown}` starts at bit {bit_offset}, not \
                     on a byte, and is no bitfield"
                ),
            );
        }
        Ok(member)
    }

    /// The spec of struct or union `id`, named as BTF names it.
    pub fn struct_spec(&mut self, id: u32) -> Result<StructSpec, BtfError> {
        let r = self.btf.record(id, 0)?;
        if !matches!(r.kind, Kind::Struct | Kind::Union) {
            return fail(
                r.at,
                format!("type {id} is a {:?}, not a struct or union", r.kind),
            );
        }
        let mut written = 0usize;
        let spec = self.spec_of(id, 0, &mut written)?;
        // The rules must give exactly what BTF says.
        let info = self.struct_info(id, 0)?;
        let laid = layout_structs(std::slice::from_ref(&spec)).map_err(|e| BtfError {
            offset: Some(info.at),
            message: format!(
                "type {id}: the C layout rules cannot lay out `{}`: {e}",
                info.name
            ),
        })?;
        let laid = &laid[0];
        if u64::from(laid.size_bytes) != info.size || laid.align_bytes != info.align {
            return fail(
                info.at,
                format!(
                    "type {id}: `{}` lays out to {} bytes aligned to {}, but BTF gives {} bytes \
                     (aligned to {}); this is a bug in the importer",
                    info.name, laid.size_bytes, laid.align_bytes, info.size, info.align
                ),
            );
        }
        drop_redundant_offsets(&spec).map_err(|e| BtfError {
            offset: Some(info.at),
            message: format!("type {id}: `{}`: {e}", info.name),
        })
    }

    /// Member `m` as a field's type: a C type where one of its names is
    /// one of that size (a bitfield's unit always), a nested struct
    /// written out, a pointer, or opaque bytes (with the type's name as
    /// their label); an array too long to index becomes one opaque block.
    /// Also its element count.
    fn member_type(
        &mut self,
        m: &Member,
        depth: usize,
        written: &mut usize,
    ) -> Result<(FieldType, Option<String>, u64), BtfError> {
        let label = self.btf.type_name(m.element, 0);
        let known = |size: u64| {
            m.names
                .iter()
                .find(|n| c_type(n).is_some_and(|(s, _)| u64::from(s) == size))
                .cloned()
        };
        let mut count = m.count;
        let ty = if m.bit_field.is_some() {
            // A bitfield's storage unit is a C integer of its size.
            FieldType::Named(known(m.element_bytes).unwrap_or_else(|| {
                match m.element_bytes {
                    1 => "unsigned char",
                    2 => "unsigned short",
                    4 => "unsigned int",
                    _ => "unsigned long",
                }
                .to_string()
            }))
        } else if let Some(name) = known(m.element_bytes) {
            FieldType::Named(name)
        } else if matches!(m.kind, Kind::Struct | Kind::Union) {
            let inner = self.spec_of(m.layout_type, depth + 1, written)?;
            if count > 1 && holds_array(&inner) {
                // A place takes one index: the array stays opaque.
                FieldType::Bytes(m.element_bytes as u32)
            } else {
                FieldType::Inline(Box::new(inner))
            }
        } else if m.kind == Kind::Ptr && label.ends_with('*') {
            FieldType::Named(label.clone())
        } else {
            FieldType::Bytes(m.element_bytes as u32)
        };
        let mut ty = ty;
        let mut type_label = matches!(ty, FieldType::Bytes(_)).then(|| label.clone());
        if count > u64::from(MAX_INSTANCE_COUNT) {
            // Too many elements to index: one opaque block.
            ty = FieldType::Bytes(m.bytes() as u32);
            type_label = Some(format!("{label}[{count}]"));
            count = 1;
        }
        Ok((ty, type_label, count))
    }

    fn spec_of(
        &mut self,
        id: u32,
        depth: usize,
        written: &mut usize,
    ) -> Result<StructSpec, BtfError> {
        let info = self.struct_info(id, depth)?;
        let mut fields = Vec::new();
        let mut widest = 1u32;
        for m in &info.members {
            if m.bytes() == 0 {
                // Flexible and zero-length arrays, empty structs: no room
                // (their alignment is the next member's, or the struct's).
                continue;
            }
            *written += 1;
            if *written > MAX_MEMBERS {
                return fail(
                    m.at,
                    format!(
                        "more than {MAX_MEMBERS} members written out (nested ones included) at \
                         `{}`",
                        m.name
                    ),
                );
            }
            let (ty, type_label, count) = self.member_type(m, depth, written)?;
            let model_align = match &ty {
                FieldType::Named(n) => c_type(n).map_or(8, |(_, a)| a),
                FieldType::Bytes(size) => (1u32 << (*size).max(1).trailing_zeros()).min(8),
                FieldType::Inline(_) => m.natural_align,
            };
            widest = widest.max(m.align);
            fields.push(FieldSpec {
                name: m.name.clone(),
                ty,
                count: count as u32,
                align: (m.align != model_align).then_some(m.align),
                offset: (!info.is_union).then_some(m.offset as u32),
                anonymous: m.name.is_empty(),
                bit_field: m.bit_field,
                type_label,
            });
        }
        if fields.is_empty() {
            return fail(
                info.at,
                format!(
                    "type {id}: `{}` has no member that takes room (a struct of no size \
                     cannot be simulated)",
                    self.btf.type_name(id, 0)
                ),
            );
        }
        Ok(StructSpec {
            name: info.name.clone(),
            align: (info.align > widest).then_some(info.align),
            is_union: info.is_union,
            fields,
        })
    }
}

/// Whether a written-out struct holds an array anywhere.
fn holds_array(spec: &StructSpec) -> bool {
    spec.fields.iter().any(|f| {
        f.count > 1
            || match &f.ty {
                FieldType::Inline(inner) => holds_array(inner),
                _ => false,
            }
    })
}

/// Chooses each member's alignment so the C rules put it where BTF does,
/// and returns the struct's alignment; `None` when no choice makes its size.
///
/// First with each member's natural alignment, raised for a member that
/// sits past where that would put it (to an alignment that puts it there:
/// the cache line's if it does, else the least) and lowered for one that
/// sits before (packed); the struct is then aligned to the largest, raised
/// further if its size needs it. If that makes no struct of its size, the
/// same choosing the least alignments; then packed: every natural
/// alignment 1.
fn infer_alignment(members: &mut [Member], size: u64, is_union: bool) -> Option<u32> {
    // x86-64's cache line (the kernel's SMP_CACHE_BYTES, L1_CACHE_SHIFT 6):
    // where an alignment is forced, `____cacheline_aligned` is the usual
    // one, so it is preferred where it fits, as pahole prefers it.
    const LINE_BYTES: u64 = 64;
    // Where several alignments fit: the line's if it is one, else the least.
    let pick = |fits: &dyn Fn(u64) -> bool, above: u64, prefer_line: bool| -> Option<u32> {
        if prefer_line && LINE_BYTES > above && fits(LINE_BYTES) {
            return Some(LINE_BYTES as u32);
        }
        let mut a = above * 2;
        while a <= MAX_STRUCT_BYTES {
            if fits(a) {
                return Some(a as u32);
            }
            a *= 2;
        }
        None
    };
    'passes: for (packed, prefer_line) in [(false, true), (false, false), (true, false)] {
        let mut previous_end = 0u64;
        let mut end = 0u64;
        let mut align = 1u32;
        for m in members.iter_mut() {
            let natural = if packed { 1 } else { m.natural_align };
            let chosen = if m.bytes() == 0 || is_union {
                // Left out of the spec (no size): only its alignment counts.
                natural
            } else if m.bit_field.is_some() {
                if m.offset % u64::from(natural) == 0 {
                    natural
                } else if !packed {
                    continue 'passes;
                } else {
                    largest_power_dividing(m.offset, natural)
                }
            } else {
                let by_natural = round_up(previous_end, u64::from(natural));
                if by_natural == m.offset {
                    natural
                } else if m.offset > by_natural {
                    // `__aligned__(N)` on the member (if no N puts it
                    // here, the spec keeps its offset).
                    let fits = |a: u64| m.offset % a == 0 && round_up(previous_end, a) == m.offset;
                    pick(&fits, u64::from(natural), prefer_line).unwrap_or(natural)
                } else if !packed {
                    // A member before its natural place: a packed struct.
                    continue 'passes;
                } else {
                    largest_power_dividing(m.offset, natural)
                }
            };
            m.align = chosen;
            align = align.max(chosen);
            if m.bytes() > 0 {
                previous_end = previous_end.max(m.used_end());
                end = end.max(m.offset + m.bytes());
            }
        }
        if size == 0 && end == 0 {
            // Nothing but members of no size: BTF cannot show an alignment.
            return Some(align);
        }
        let rounded = round_up(end.max(1), u64::from(align));
        if rounded == size {
            return Some(align);
        }
        if rounded < size {
            // `__aligned__(N)` on the struct.
            let fits = |b: u64| round_up(end.max(1), b) == size;
            if let Some(b) = pick(&fits, u64::from(align), prefer_line) {
                return Some(b);
            }
        }
    }
    None
}

/// Imports struct (or union) `name` of BTF `data` as a spec named
/// `spec_name`, every offset as BTF gives it and checked against the C
/// rules, the ones they give anyway dropped.
pub fn import(data: &[u8], name: &str, spec_name: &str) -> Result<StructSpec, BtfError> {
    let btf = parse(data)?;
    let Some(id) = btf.find_struct(name) else {
        return Err(BtfError {
            offset: None,
            message: format!("no struct or union `{name}` in the BTF"),
        });
    };
    let mut spec = Importer::new(&btf).struct_spec(id)?;
    spec.name = spec_name.to_string();
    Ok(spec)
}

/// The names of the structs and unions with members in BTF `data`, for
/// messages (none when it does not parse).
pub fn struct_names(data: &[u8]) -> Vec<String> {
    parse(data)
        .map(|b| b.structs().into_iter().map(|(_, n)| n).collect())
        .unwrap_or_default()
}
