//! Reading a measured core-to-core latency matrix: a lower-triangular CSV
//! whose row `i`, column `j` (`j < i`) is the one-way latency in
//! nanoseconds between Linux CPUs `i` and `j`. Empty cells are pairs that
//! were not measured; the diagonal and the upper triangle are empty. One
//! row per CPU, so the matrix is as wide as it is tall.

use std::fmt;
use std::path::Path;

use crate::format::read::{read_bounded_text, ReadError};

/// A malformed matrix, at a line and column of its file (both from 1; the
/// column counts characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatrixError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for MatrixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

impl std::error::Error for MatrixError {}

/// The measured one-way latencies, lower triangle only.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    cpus: u32,
    /// Row `i`, column `j < i` at `i * (i - 1) / 2 + j`; NaN where unmeasured.
    cells: Vec<f64>,
}

fn index(i: u32, j: u32) -> usize {
    let (i, j) = (i as usize, j as usize);
    i * (i - 1) / 2 + j
}

impl Matrix {
    /// CPUs (rows) of the matrix.
    pub fn cpus(&self) -> u32 {
        self.cpus
    }

    /// The latency between two distinct CPUs, in either order, if measured.
    pub fn get(&self, a: u32, b: u32) -> Option<f64> {
        let (i, j) = if a > b { (a, b) } else { (b, a) };
        if i == j || i >= self.cpus {
            return None;
        }
        let v = self.cells[index(i, j)];
        (!v.is_nan()).then_some(v)
    }

    /// The same measurements with CPU `i` renamed `rename(i)`, in a matrix of
    /// `cpus` CPUs: how a matrix measured under another CPU numbering is
    /// put in the model's. `rename` must be one-to-one and below `cpus`.
    pub fn renumbered(&self, cpus: u32, rename: impl Fn(u32) -> u32) -> Matrix {
        let mut cells = vec![f64::NAN; cpus as usize * (cpus as usize).saturating_sub(1) / 2];
        for (a, b, ns) in self.pairs() {
            let (a, b) = (rename(a), rename(b));
            let (i, j) = if a > b { (a, b) } else { (b, a) };
            cells[index(i, j)] = ns;
        }
        Matrix { cpus, cells }
    }

    /// Every measured pair as (lower CPU, higher CPU, ns), row by row:
    /// row `i` ascending, then column `j < i` ascending.
    pub fn pairs(&self) -> Vec<(u32, u32, f64)> {
        let mut out = Vec::new();
        for i in 1..self.cpus {
            for j in 0..i {
                let v = self.cells[index(i, j)];
                if !v.is_nan() {
                    out.push((j, i, v));
                }
            }
        }
        out
    }
}

/// Parses a matrix; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Matrix, MatrixError> {
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    let err = |line: usize, column: usize, message: String| MatrixError {
        file: file.to_string(),
        line,
        column,
        message,
    };
    if lines.is_empty() {
        return Err(err(
            1,
            1,
            "the file holds no rows; expected a lower-triangular CSV matrix, one row per CPU"
                .into(),
        ));
    }
    if lines.len() > u32::MAX as usize / 2 {
        return Err(err(1, 1, format!("{} rows are too many", lines.len())));
    }
    let n = lines.len() as u32;
    let mut cells = vec![f64::NAN; n as usize * (n as usize - 1) / 2];
    for (row, line) in lines.iter().enumerate() {
        let row = row as u32;
        let mut column_chars = 1;
        for (col, cell) in line.split(',').enumerate() {
            let at = column_chars;
            column_chars += cell.chars().count() + 1;
            let value = cell.trim();
            if col as u32 >= n {
                return Err(err(
                    row as usize + 1,
                    at,
                    format!(
                        "row {row} has more than {n} cells, but the matrix has {n} rows (one per CPU, so as many columns)"
                    ),
                ));
            }
            if value.is_empty() {
                continue;
            }
            let col = col as u32;
            if col >= row {
                return Err(err(
                    row as usize + 1,
                    at,
                    format!(
                        "`{value}` is on or above the diagonal (row {row}, column {col}); \
                         the matrix is lower-triangular: row i holds CPUs j < i, the rest is empty"
                    ),
                ));
            }
            let ns: f64 = value.parse().map_err(|_| {
                err(
                    row as usize + 1,
                    at,
                    format!(
                        "`{value}` is not a latency (row {row}, column {col}); \
                         expected a number of nanoseconds, or an empty cell for a pair not measured"
                    ),
                )
            })?;
            if !ns.is_finite() || ns <= 0.0 {
                return Err(err(
                    row as usize + 1,
                    at,
                    format!(
                        "`{value}` is not a latency (row {row}, column {col}); \
                         it must be a positive number of nanoseconds"
                    ),
                ));
            }
            cells[index(row, col)] = ns;
        }
    }
    Ok(Matrix { cpus: n, cells })
}

/// Reads (at most `limit_bytes`, whatever the path names) and parses a
/// matrix file.
pub fn read(path: &Path, limit_bytes: u64) -> Result<Matrix, String> {
    let text = read_data_text(path, limit_bytes, "matrix")?;
    parse(&path.display().to_string(), &text).map_err(|e| e.to_string())
}

/// The text of a measured-data file `validate` reads (a matrix, a CPU map:
/// `what`), at most `limit_bytes` of it, or an error naming the file, what
/// it was to be and the limit to raise.
pub(crate) fn read_data_text(path: &Path, limit_bytes: u64, what: &str) -> Result<String, String> {
    let cannot = |why: String| format!("cannot read the {what} `{}`: {why}", path.display());
    match read_bounded_text(path, limit_bytes) {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(_)) => Err(cannot("it is not UTF-8 text".into())),
        Err(e @ ReadError::TooLarge { .. }) => Err(format!(
            "{}; raise the limit with `--set-limit data_file_bytes=N`",
            cannot(e.to_string())
        )),
        Err(e) => Err(cannot(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_lower_triangle_with_gaps() {
        let m = parse("m.csv", ",,\n10.5,,\n,20,\n").unwrap();
        assert_eq!(m.cpus(), 3);
        assert_eq!(m.get(1, 0), Some(10.5));
        assert_eq!(m.get(0, 1), Some(10.5));
        assert_eq!(m.get(2, 0), None);
        assert_eq!(m.get(2, 1), Some(20.0));
        assert_eq!(m.get(2, 2), None);
        assert_eq!(m.pairs(), vec![(0, 1, 10.5), (1, 2, 20.0)]);
    }

    #[test]
    fn crlf_line_ends_and_spaces_around_numbers_are_accepted() {
        let m = parse("m.csv", ",\r\n 7.5 ,\r\n\r\n").unwrap();
        assert_eq!(m.cpus(), 2);
        assert_eq!(m.pairs(), vec![(0, 1, 7.5)]);
    }

    #[test]
    fn renumbering_moves_each_measurement_to_its_new_pair() {
        // CPUs 0, 1, 2 renamed 0, 2, 1 in a 4-CPU matrix.
        let m = parse("m.csv", ",,\n10,,\n20,30,\n").unwrap();
        let r = m.renumbered(4, |cpu| [0, 2, 1][cpu as usize]);
        assert_eq!(r.cpus(), 4);
        assert_eq!(r.get(0, 2), Some(10.0));
        assert_eq!(r.get(0, 1), Some(20.0));
        assert_eq!(r.get(2, 1), Some(30.0));
        assert_eq!(r.get(3, 0), None);
        assert_eq!(r.pairs().len(), 3);
    }

    #[test]
    fn an_empty_file_is_an_error() {
        let e = parse("m.csv", "\n\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
    }
}
