//! Every file bounce reads goes through [`read_bounded`]: at most the
//! limit plus one byte is ever read, so a path that names something
//! endless (`/dev/zero`, a pipe from `yes`, a link to either) or merely
//! huge is refused with a clear error instead of filling the host's
//! memory. The size a file's metadata claims is not trusted: a character
//! device or a pipe has none, and a file may grow while it is read.

use std::io::Read;
use std::path::Path;

/// Why a bounded read gave no bytes.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// It holds more than the limit: reading stopped one byte past it.
    TooLarge {
        /// The limit, in bytes.
        limit_bytes: u64,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::TooLarge { limit_bytes } => {
                write!(f, "it is larger than the limit of {limit_bytes} bytes")
            }
        }
    }
}

/// The bytes of `path`, or an error when it cannot be read or holds more
/// than `limit_bytes` (found by reading at most `limit_bytes + 1` bytes).
pub fn read_bounded(path: &Path, limit_bytes: u64) -> Result<Vec<u8>, ReadError> {
    let file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let mut bytes = Vec::new();
    file.take(limit_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit_bytes {
        return Err(ReadError::TooLarge { limit_bytes });
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text; `Ok(Err(bytes))` when the bytes are
/// not UTF-8, for the caller to say where.
pub fn read_bounded_text(
    path: &Path,
    limit_bytes: u64,
) -> Result<Result<String, std::string::FromUtf8Error>, ReadError> {
    read_bounded(path, limit_bytes).map(String::from_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn an_endless_file_stops_one_byte_past_the_limit() {
        match read_bounded(Path::new("/dev/zero"), 1000) {
            Err(ReadError::TooLarge { limit_bytes }) => assert_eq!(limit_bytes, 1000),
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }
}
