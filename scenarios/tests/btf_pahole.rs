//! The BTF importer against pahole, on data no one here wrote: every struct
//! and union with members in the running kernel's BTF
//! (`/sys/kernel/btf/vmlinux`), or, where the kernel has none, in the BTF
//! fixture shipped in `tests/fixtures/btf/`. pahole (Debian package
//! `dwarves`) is installed when absent.
//!
//! For each struct, pahole's full dump (`pahole -F btf FILE`) gives each
//! member's offset, size, bit offset and bit size, the struct's size, and
//! the alignments it infers (`__attribute__((__aligned__(N)))` on a member
//! or the struct, `__packed__`); bounce's layout is the struct the importer
//! gives, laid out by the C rules as a scenario lays it out. Members of no
//! size are left out by the importer (asserted: pahole lists them at size
//! 0); every other difference fails the test, naming the struct.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use models::btf::{parse, Importer};
use models::layout::{layout_structs, LaidOutField, LaidOutStruct};

const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/btf/structs.btf")
}

/// pahole, installed with apt-get when it is missing (CI runs as root).
fn pahole() -> &'static str {
    let works = || {
        Command::new("pahole")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works() {
        eprintln!("pahole is missing: installing the Debian package `dwarves`");
        let install = || {
            Command::new("apt-get")
                .args(["install", "-y", "-qq", "dwarves"])
                .env("DEBIAN_FRONTEND", "noninteractive")
                .status()
                .is_ok_and(|s| s.success())
        };
        if !install() {
            let _ = Command::new("apt-get").args(["update", "-qq"]).status();
            install();
        }
    }
    assert!(
        works(),
        "pahole is needed for this test and could not be installed: run \
         `apt-get install dwarves` (as root)"
    );
    "pahole"
}

/// A member as pahole lists it.
#[derive(Debug, Clone)]
struct Listed {
    name: String,
    offset: u64,
    size: u64,
    /// Bit offset in the unit at `offset`, and width.
    bits: Option<(u32, u32)>,
    /// `__attribute__((__aligned__(N)))` on the member.
    aligned: Option<u32>,
    nested: Option<Vec<Listed>>,
}

#[derive(Debug)]
struct ListedStruct {
    name: String,
    /// From the footer (`/* size: S, ... */`); pahole prints none for a
    /// union, whose size comes from `pahole -s` instead.
    size: Option<u64>,
    members: Vec<Listed>,
    aligned: Option<u32>,
    packed: bool,
}

fn aligned_attribute(text: &str) -> Option<u32> {
    let at = text.find("__aligned__(")?;
    let rest = &text[at + "__aligned__(".len()..];
    rest[..rest.find(')')?].parse().ok()
}

/// `/* OFF SIZE */` or `/* OFF: BIT SIZE */` at the end of a line.
fn numbers(line: &str) -> Option<(u64, Option<u32>, u64)> {
    let start = line.rfind("/*")?;
    let inner = line[start + 2..].strip_suffix("*/")?.trim();
    if let Some((offset, rest)) = inner.split_once(':') {
        let (bit, size) = rest.trim().split_once(char::is_whitespace)?;
        Some((
            offset.trim().parse().ok()?,
            Some(bit.parse().ok()?),
            size.trim().parse().ok()?,
        ))
    } else {
        let (offset, size) = inner.split_once(char::is_whitespace)?;
        Some((offset.parse().ok()?, None, size.trim().parse().ok()?))
    }
}

/// The member name and bit width of a declaration `TYPE NAME[N]:B`.
fn declarator(decl: &str) -> (String, Option<u32>) {
    // `__attribute__((...))` anywhere in it is no part of the name.
    let mut plain = decl.to_string();
    while let Some(at) = plain.find("__attribute__(") {
        let mut depth = 0;
        let mut end = plain.len();
        for (i, c) in plain[at..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        plain.replace_range(at..end, " ");
    }
    let decl = plain.trim();
    if let Some(at) = decl.find("(*") {
        let rest = &decl[at + 2..];
        return (
            rest[..rest.find(')').unwrap_or(rest.len())].to_string(),
            None,
        );
    }
    let (decl, bits) = match decl.rsplit_once(':') {
        Some((d, b)) if b.trim().chars().all(|c| c.is_ascii_digit()) => {
            if d.ends_with(char::is_whitespace) {
                // `TYPE :N`: no name.
                return (String::new(), b.trim().parse().ok());
            }
            (d.trim(), b.trim().parse().ok())
        }
        _ => (decl, None),
    };
    let decl = decl.split('[').next().unwrap_or(decl).trim_end();
    let name = decl
        .rsplit(|c: char| c.is_whitespace() || c == '*')
        .next()
        .unwrap_or("");
    (name.to_string(), bits)
}

/// The members up to the closing brace (`lines` after the opener), and
/// the closing line.
fn members<'a>(
    lines: &mut impl Iterator<Item = &'a str>,
    size: &mut Option<u64>,
) -> (Vec<Listed>, &'a str) {
    let mut out = Vec::new();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(c) = t.strip_prefix("/*") {
            if let Some(s) = c.trim().strip_prefix("size:") {
                *size = s.split(',').next().and_then(|n| n.trim().parse().ok());
            }
            continue;
        }
        if t.starts_with('}') {
            return (out, line);
        }
        if t.starts_with("enum") && t.ends_with('{') {
            // An enum defined in place: its enumerators, then `} NAME;`.
            let close = lines
                .by_ref()
                .find(|l| l.trim_start().starts_with('}'))
                .expect("the enum is closed");
            let (offset, bit, size) = numbers(close).expect("offset and size after an enum");
            let decl = close.trim().trim_start_matches('}');
            let (name, width) = declarator(&decl[..decl.find(';').unwrap_or(decl.len())]);
            out.push(Listed {
                name,
                offset,
                size,
                bits: bit.zip(width),
                aligned: aligned_attribute(decl),
                nested: None,
            });
            continue;
        }
        if t.ends_with('{') {
            let mut ignored = None;
            let (inner, close) = members(lines, &mut ignored);
            let (offset, _, size) = numbers(close).expect("a closing line with offset and size");
            let decl = close.trim().trim_start_matches('}');
            let decl = decl[..decl.find(';').unwrap_or(decl.len())].trim();
            out.push(Listed {
                name: declarator(decl).0,
                offset,
                size,
                bits: None,
                aligned: aligned_attribute(decl),
                nested: Some(inner),
            });
            continue;
        }
        if numbers(t).is_none() && t.ends_with(';') && declarator(&t[..t.len() - 1]).0.is_empty() {
            // An unnamed bitfield (`u64 :13;`, `unsigned int :0;`) pahole
            // writes for bits no member uses; BTF has no member for it.
            continue;
        }
        let Some((offset, bit, size)) = numbers(t) else {
            panic!("a member line without `/* offset size */`: {t}");
        };
        let decl = &t[..t.find(';').expect("a member ends with `;`")];
        let (name, width) = declarator(decl);
        out.push(Listed {
            name,
            offset,
            size,
            bits: bit.zip(width),
            aligned: aligned_attribute(decl),
            nested: None,
        });
    }
    panic!("a struct that is never closed");
}

/// Every top-level struct and union of pahole's dump.
fn listing(text: &str) -> Vec<ListedStruct> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(head) = line.strip_suffix(" {") else {
            continue;
        };
        let Some(name) = head
            .strip_prefix("struct ")
            .or_else(|| head.strip_prefix("union "))
        else {
            continue;
        };
        let mut size = None;
        let (members, close) = members(&mut lines, &mut size);
        out.push(ListedStruct {
            name: name.to_string(),
            size,
            members,
            aligned: aligned_attribute(close),
            packed: close.contains("__packed__"),
        });
    }
    out
}

/// Differences that are explained, by class, and the rest.
#[derive(Default)]
struct Tally {
    structs: usize,
    members: usize,
    /// Members of no size (flexible and zero-length arrays, empty
    /// structs): pahole lists them at size 0, the importer leaves them out.
    zero_size_left_out: usize,
    /// Structs with no member that takes room: no simulated struct.
    zero_size_structs: Vec<String>,
    /// Structs whose tail padding no alignment explains (unnamed
    /// bitfields, which BTF does not record, fill it): not imported.
    unexplained_tail: Vec<String>,
    /// A packed struct's last bitfield: pahole lists its type's whole
    /// unit, past the struct's end; bounce a smaller unit inside it.
    packed_units_shrunk: Vec<String>,
    /// pahole infers the cache line's `__aligned__(64)` where the members'
    /// own alignment already makes the size; bounce keeps theirs.
    pahole_line_guess: Vec<String>,
    /// pahole infers `__packed__` where no offset and no size needs it.
    packed_unseen: Vec<String>,
    /// A second struct of a name pahole's dump lists once.
    same_name_listed_once: Vec<String>,
    import_errors: Vec<String>,
    differences: Vec<String>,
}

/// Whether any power-of-two alignment rounds `end` up to `size`.
fn some_alignment_makes(end: u64, size: u64) -> bool {
    (0..=20).any(|shift| end.div_ceil(1 << shift) * (1 << shift) == size)
}

/// Compares pahole's members with bounce's, at `base` bytes into the
/// outermost struct of `size` bytes.
fn compare(
    path: &str,
    listed: &[Listed],
    ours: &[LaidOutField],
    base: u64,
    size: u64,
    tally: &mut Tally,
) {
    let mut ours_iter = ours.iter();
    for m in listed {
        if m.size == 0 && m.bits.is_none() {
            tally.zero_size_left_out += 1;
            continue;
        }
        let Some(o) = ours_iter.next() else {
            tally
                .differences
                .push(format!("{path}: `{}` is missing", m.name));
            return;
        };
        let here = format!(
            "{path}.{}",
            if m.name.is_empty() {
                "<anonymous>"
            } else {
                &m.name
            }
        );
        let offset = base + u64::from(o.offset_bytes);
        let bytes = u64::from(o.total_bytes());
        let bits = o.bit_field.map(|b| (b.bit_offset, b.bits));
        if o.name != m.name || offset != m.offset || bits != m.bits {
            tally.differences.push(format!(
                "{here}: pahole has `{}` at {} ({} bytes, bits {:?}), bounce `{}` at {offset} \
                 ({bytes} bytes, bits {bits:?})",
                m.name, m.offset, m.size, m.bits, o.name
            ));
            return;
        }
        if bytes != m.size {
            if bits.is_some() && m.offset + m.size > size && bytes < m.size {
                tally.packed_units_shrunk.push(format!(
                    "{here}: pahole's {}-byte unit at {} ends past the struct's {size} bytes, \
                     bounce's has {bytes}",
                    m.size, m.offset
                ));
            } else {
                tally.differences.push(format!(
                    "{here}: pahole says {} bytes, bounce {bytes}",
                    m.size
                ));
                return;
            }
        }
        if let Some(a) = m.aligned {
            if o.align_bytes != a {
                tally.differences.push(format!(
                    "{here}: pahole infers `__aligned__({a})`, bounce aligns it to {}",
                    o.align_bytes
                ));
            }
        }
        if let (Some(inner), Some(nested)) = (&m.nested, &o.nested) {
            compare(&here, inner, &nested.fields, offset, size, tally);
        }
    }
    if let Some(extra) = ours_iter.next() {
        tally.differences.push(format!(
            "{path}: bounce has `{}`, which pahole does not list",
            extra.name
        ));
    }
}

/// Compares every struct of the BTF at `path` with pahole's dump of it.
/// One function on purpose: it reads pahole's two dumps and walks them
/// beside bounce's import struct by struct, tallying each difference;
/// its steps share the dumps and the tally.
fn compare_with_pahole(path: &Path) -> Tally {
    let data = std::fs::read(path).expect("reads the BTF");
    let pahole = pahole();
    let output = Command::new(pahole)
        .args(["-F", "btf"])
        .arg(path)
        .output()
        .expect("runs pahole");
    assert!(output.status.success(), "pahole failed: {output:?}");
    let text = String::from_utf8(output.stdout).expect("pahole prints UTF-8");
    let listed = listing(&text);
    // `NAME SIZE HOLES` for every struct and union, in the dump's order
    // (the dump has no size footer for a union).
    let output = Command::new(pahole)
        .args(["-F", "btf", "-s"])
        .arg(path)
        .output()
        .expect("runs pahole -s");
    assert!(output.status.success(), "pahole -s failed: {output:?}");
    let mut sizes: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let mut words = line.split('\t');
        if let (Some(name), Some(Ok(size))) = (words.next(), words.next().map(str::parse)) {
            sizes.entry(name.to_string()).or_default().push(size);
        }
    }

    let btf = parse(&data).expect("the BTF parses");
    let mut importer = Importer::new(&btf);
    // The k-th struct of a name in pahole's dump is the k-th in BTF.
    let mut by_name: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    let structs = btf.structs();
    for (id, name) in &structs {
        by_name.entry(name.as_str()).or_default().push(*id);
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut tally = Tally::default();
    let with_members: Vec<&ListedStruct> =
        listed.iter().filter(|s| !s.members.is_empty()).collect();
    // pahole's dump lists a name once where BTF has two structs of it
    // (`struct elf_note_info` of the native and the compat ELF core
    // dumps): the first is compared, the others counted.
    let mut listed_per_name: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &with_members {
        *listed_per_name.entry(s.name.as_str()).or_default() += 1;
    }
    for (name, ids) in &by_name {
        let listed = listed_per_name.get(name).copied().unwrap_or(0);
        if listed == 0 {
            tally
                .differences
                .push(format!("{name}: in the BTF, not in pahole's dump"));
        }
        for _ in listed..ids.len() {
            tally.same_name_listed_once.push(name.to_string());
        }
    }
    for s in with_members {
        let k = seen.entry(s.name.as_str()).or_default();
        let Some(&id) = by_name.get(s.name.as_str()).and_then(|ids| ids.get(*k)) else {
            tally.differences.push(format!(
                "{}: pahole lists it, the BTF reader does not",
                s.name
            ));
            continue;
        };
        *k += 1;
        let size = s
            .size
            .or_else(|| sizes.get(&s.name).and_then(|v| v.get(*k - 1)).copied())
            .expect("pahole gives every struct's size");
        let spec = match importer.struct_spec(id) {
            Ok(spec) => spec,
            Err(e) => {
                let end = s
                    .members
                    .iter()
                    .map(|m| m.offset + m.size)
                    .max()
                    .unwrap_or(0);
                if e.message.contains("has no member that takes room")
                    && s.members.iter().all(|m| m.size == 0)
                {
                    tally.zero_size_structs.push(s.name.clone());
                } else if e.message.contains("no alignment of its members makes")
                    && !some_alignment_makes(end, size)
                {
                    tally
                        .unexplained_tail
                        .push(format!("{}: members end at {end}, {size} bytes", s.name));
                } else {
                    tally.import_errors.push(format!("{}: {e}", s.name));
                }
                continue;
            }
        };
        let laid: LaidOutStruct = layout_structs(std::slice::from_ref(&spec))
            .expect("an imported struct lays out")
            .remove(0);
        tally.structs += 1;
        tally.members += s.members.len();
        if u64::from(laid.size_bytes) != size {
            tally.differences.push(format!(
                "{}: pahole says {size} bytes, bounce lays out {}",
                s.name, laid.size_bytes
            ));
        }
        if let Some(a) = s.aligned {
            if laid.align_bytes != a {
                let end = laid
                    .fields
                    .iter()
                    .map(|f| u64::from(f.offset_bytes + f.total_bytes()))
                    .max()
                    .unwrap_or(0);
                let own = u64::from(laid.align_bytes);
                if a == 64 && laid.align_bytes < a && end.div_ceil(own) * own == size {
                    tally.pahole_line_guess.push(format!(
                        "{}: pahole {a}, bounce {}",
                        s.name, laid.align_bytes
                    ));
                } else {
                    tally.differences.push(format!(
                        "{}: pahole infers `__aligned__({a})`, bounce aligns it to {}",
                        s.name, laid.align_bytes
                    ));
                }
            }
        }
        if s.packed && laid.align_bytes != 1 {
            // BTF does not record `__packed__`: bounce lowers alignments
            // only where an offset or the size needs it, pahole also where
            // a nested struct (itself packed) sits off its members'
            // alignment. The offsets and sizes agree (compared below).
            tally.packed_unseen.push(format!(
                "{}: pahole packed, bounce {}",
                s.name, laid.align_bytes
            ));
        }
        compare(&s.name, &s.members, &laid.fields, 0, size, &mut tally);
    }
    tally
}

#[test]
fn every_struct_of_the_kernel_matches_pahole() {
    let (path, source) = if std::fs::File::open(KERNEL_BTF).is_ok() {
        (PathBuf::from(KERNEL_BTF), "the running kernel")
    } else {
        eprintln!(
            "{KERNEL_BTF} is absent (the kernel has no BTF): comparing the fixture {} instead",
            fixture().display()
        );
        (fixture(), "the fixture")
    };
    let tally = compare_with_pahole(&path);
    eprintln!(
        "{source} ({}): compared {} structs and unions ({} top-level members) with pahole; \
         {} members of no size left out; {} structs of no size and {} with unexplained tail \
         padding not imported; {} packed bitfield units shrunk; {} alignments pahole guesses \
         as the cache line's; {} packed where no offset needs it; {} structs of a name pahole \
         lists once; {} other import errors, \
         {} other differences",
        path.display(),
        tally.structs,
        tally.members,
        tally.zero_size_left_out,
        tally.zero_size_structs.len(),
        tally.unexplained_tail.len(),
        tally.packed_units_shrunk.len(),
        tally.pahole_line_guess.len(),
        tally.packed_unseen.len(),
        tally.same_name_listed_once.len(),
        tally.import_errors.len(),
        tally.differences.len()
    );
    for line in tally
        .zero_size_structs
        .iter()
        .chain(&tally.unexplained_tail)
        .chain(&tally.packed_units_shrunk)
        .chain(&tally.pahole_line_guess)
        .chain(&tally.packed_unseen)
        .chain(&tally.same_name_listed_once)
    {
        eprintln!("explained: {line}");
    }
    assert!(tally.structs > 0, "no struct compared");
    assert_eq!(tally.import_errors, Vec::<String>::new());
    assert_eq!(tally.differences, Vec::<String>::new());
}

/// The shipped fixture (what the test above compares on a kernel without
/// BTF), compared on every machine.
#[test]
fn every_struct_of_the_fixture_matches_pahole() {
    let tally = compare_with_pahole(&fixture());
    assert_eq!(tally.import_errors, Vec::<String>::new());
    assert_eq!(tally.differences, Vec::<String>::new());
    // page_counter, flags, point, shapes (its unions inside it), wire and
    // holder; cacheline_padding has no size.
    assert_eq!(tally.zero_size_structs, ["cacheline_padding"]);
    assert_eq!(tally.structs, 6);
    // `_pad1_`, `_pad2_` and `data[]`.
    assert_eq!(tally.zero_size_left_out, 3);
}
