//! BTF from a file, for `btf = { file, struct }` and `bounce import btf`:
//! raw BTF (`/sys/kernel/btf/vmlinux`) or the `.BTF` section of an ELF file
//! (a `vmlinux`, or an object `pahole -J` gave one), read up to
//! [`MAX_BTF_BYTES`]. An ELF file is read where its headers point, never
//! whole (a `vmlinux` with debug information is hundreds of megabytes).

use std::io::Read;
use std::path::Path;

use models::btf::{BtfError, MAX_BTF_BYTES};

/// BTF read from a file.
pub struct BtfFile {
    pub bytes: Vec<u8>,
    /// Where the BTF starts in the file, when it is an ELF file's `.BTF`
    /// section.
    pub section_offset: Option<u64>,
}

const ELF_MAGIC: &[u8; 4] = b"\x7fELF";

/// Reads the BTF of the file at `path`; the message says why not (without
/// the path, which the caller shows).
pub fn read(path: &Path) -> Result<BtfFile, String> {
    let metadata = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !metadata.is_file() {
        return Err("not a regular file".into());
    }
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut magic = [0u8; 4];
    let read = file.read(&mut magic).map_err(|e| e.to_string())?;
    if read == 4 && &magic == ELF_MAGIC {
        let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
        return elf_section(file);
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BTF_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_BTF_BYTES {
        return Err(format!(
            "larger than {} MiB, more BTF than a kernel has",
            MAX_BTF_BYTES >> 20
        ));
    }
    Ok(BtfFile {
        bytes,
        section_offset: None,
    })
}

/// The `.BTF` section of an ELF file.
fn elf_section(file: std::fs::File) -> Result<BtfFile, String> {
    use object::{Object, ObjectSection};
    let cache = object::ReadCache::new(file);
    let elf = object::File::parse(&cache).map_err(|e| format!("not a readable ELF file: {e}"))?;
    let Some(section) = elf.section_by_name(".BTF") else {
        return Err(
            "an ELF file without a `.BTF` section (a kernel built with CONFIG_DEBUG_INFO_BTF \
             has one; `pahole -J FILE` adds one)"
                .into(),
        );
    };
    if section.size() > MAX_BTF_BYTES {
        return Err(format!(
            "its `.BTF` section is {} bytes, larger than {} MiB",
            section.size(),
            MAX_BTF_BYTES >> 20
        ));
    }
    let bytes = section
        .data()
        .map_err(|e| format!("its `.BTF` section cannot be read: {e}"))?
        .to_vec();
    Ok(BtfFile {
        bytes,
        section_offset: section.file_range().map(|(offset, _)| offset),
    })
}

impl BtfFile {
    /// A BTF error with where it is in the file.
    pub fn describe(&self, e: &BtfError) -> String {
        match (e.offset, self.section_offset) {
            (Some(at), Some(section)) => format!(
                "at byte {at} of the `.BTF` section (byte {} of the file): {}",
                section + at as u64,
                e.message
            ),
            (Some(at), None) => format!("at byte {at}: {}", e.message),
            (None, _) => e.message.clone(),
        }
    }
}
